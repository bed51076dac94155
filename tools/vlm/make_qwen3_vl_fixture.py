#!/usr/bin/env python3
"""A tiny random-weight Qwen3-VL checkpoint and its references, by transformers.

transformers' own Qwen3VLConfig / Qwen3VLForConditionalGeneration (3 vision blocks of width 32,
patch 16, temporal patch 2, merge 2, a 4 x 4 learned position table that the tower resamples
bilinearly to each grid, DeepStack mergers after blocks 0 and 2; a 3-layer Qwen3 text model with
head_dim 32 and interleaved M-RoPE of mrope_section [8, 4, 4], so that the temporal rows also own
the tail of the frequencies) and its own image processor (Qwen2VLImageProcessorPil, which
Qwen3-VL uses, with patch 16, mean and std 0.5 as the released Qwen3-VL preprocessor configs and
max_pixels 128*128, so that tests/data/image/inputs/chelsea.png (451 x 300) becomes 128 x 96: a
6 x 8 patch grid, 12 image tokens, h != w; the byte-level tokenizer of the Qwen2-VL fixtures)
build, save and run the model. Weights are deterministic random values (per-tensor seeds); the
reference is the same modeling code run in float64 on the saved float32 weights (eager attention,
no cache): the processor's pixel_values (shape, sha256, a few values), image_grid_thw, the main
merger's features and every DeepStack merger's, the M-RoPE position ids and rope delta, the
logits of every prompt position, a 16-token greedy continuation with its top-2 margins, and a
text-only prompt's logits and greedy ids.

Output: tests/data/families/qwen3_vl/ (config.json, generation_config.json, model.safetensors,
preprocessor_config.json, tokenizer files, vision_reference.json).

Run once on a developer machine (torch, transformers, safetensors, numpy, pillow; not CI):
    /tmp/famenv/bin/python tools/vlm/make_qwen3_vl_fixture.py
"""
import os
import shutil
import sys

import torch
from transformers import (Qwen2VLImageProcessorPil, Qwen3VLConfig,
                          Qwen3VLForConditionalGeneration)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The Qwen2-VL fixtures' tokenizer, weight filler and reference writer: the same conventions.
from make_qwen2_vl_fixtures import (REPO, SPECIALS, byte_tokenizer,  # noqa: E402
                                    fill_weights, write_reference)


def main():
    out = os.path.join(REPO, "tests", "data", "families", "qwen3_vl")
    tokenizer = byte_tokenizer()
    image_token = tokenizer.convert_tokens_to_ids("<|image_pad|>")
    ip = Qwen2VLImageProcessorPil(min_pixels=32 * 32, max_pixels=128 * 128, patch_size=16,
                                  temporal_patch_size=2, merge_size=2, image_mean=[0.5] * 3,
                                  image_std=[0.5] * 3)
    text = dict(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=False,
                bos_token_id=None, eos_token_id=SPECIALS.index("<|im_end|>") + 256,
                pad_token_id=SPECIALS.index("<|endoftext|>") + 256,
                rope_parameters={"rope_type": "default", "rope_theta": 5000000.0,
                                 "mrope_section": [8, 4, 4], "mrope_interleaved": True})
    vision = dict(depth=3, hidden_size=32, intermediate_size=48, num_heads=4, in_channels=3,
                  patch_size=16, spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=64,
                  num_position_embeddings=16, deepstack_visual_indexes=[0, 2],
                  hidden_act="gelu_pytorch_tanh")
    config = Qwen3VLConfig(
        text_config=text, vision_config=vision, tie_word_embeddings=False,
        image_token_id=image_token,
        video_token_id=tokenizer.convert_tokens_to_ids("<|video_pad|>"),
        vision_start_token_id=tokenizer.convert_tokens_to_ids("<|vision_start|>"),
        vision_end_token_id=tokenizer.convert_tokens_to_ids("<|vision_end|>"))
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = Qwen3VLForConditionalGeneration(config).to(torch.float32).eval()
    fill_weights(model)
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)
    ip.save_pretrained(out)
    tokenizer.save_pretrained(out)

    write_reference(out, "qwen3_vl", "tools/vlm/make_qwen3_vl_fixture.py",
                    Qwen3VLForConditionalGeneration, tokenizer, ip, features,
                    {"n_deepstack": len(vision["deepstack_visual_indexes"])})


def features(model, pv, thw):
    """The main merger's features, then each DeepStack merger's."""
    vo = model.model.get_image_features(pixel_values=pv, image_grid_thw=thw)
    out = [("image_features", torch.cat(list(vo.pooler_output), dim=0).numpy())]
    for i, d in enumerate(vo.deepstack_features):
        out.append((f"deepstack_features_{i}", torch.cat(list(d), dim=0).numpy()))
    return out


if __name__ == "__main__":
    main()
