#!/usr/bin/env python3
"""A tiny random-weight Molmo2 checkpoint and its references, by transformers.

transformers' own Molmo2Config / Molmo2ForConditionalGeneration (a 3-layer ViT of width 32 on
crops of 40 px in patches of 8, its features taken after layers 3 and 1 (vision_feature_layer
[-1, 1]) and concatenated; the adapter's attention pooling of 2 x 2 patch windows, its query the
mean of each window's patches, and its SiLU-gated projector; a 2-layer Qwen3-style text model
(per-head q/k RMSNorm) whose embedding has 9 rows beyond the LM head's vocabulary for the image
tokens, as the released checkpoints' additional vocabulary) and its own Molmo2Processor
(Molmo2ImageProcessor with size 40, patch 8, overlap margins [1, 1], max_crops 4: the committed
photograph tests/data/image/inputs/chelsea.png (451 x 300) becomes a global view of 5 x 5
patches, whose odd grid pads the pooling windows of its last row and column with -1, and 2 x 2
overlapping crops, pooled to 3 x 3 + 4 x 4 image tokens, each run wrapped in its start /
column / end tokens; a byte-level BPE tokenizer with Molmo2's image tokens) build, save and run
the model. Weights are deterministic random values (per-tensor seeds, the Qwen2-VL fixtures' filler); the
reference is the same modeling code run in float64 on the saved float32 weights (eager attention,
no cache, mm_token_type_ids given: causal attention, and every image token attending to every
other): the processor's pixel_values (shape, sha256, a few values), image_token_pooling and
image_grids, the pooled image features, the logits of every prompt position, a 16-token greedy
continuation with its top-2 margins, the logits without the image block (causal only) for the
test to see that it matters, and a text-only prompt's logits and greedy ids; for molmo2, a
prompt with the photograph twice and text between the two images ("two_image_*": its ids, the
logits of every position and a 16-token greedy continuation), where every image token sees the
other image's tokens but not the text between them.

A second checkpoint, molmo2-olmo, has the OLMo-based text model's options (qk_norm_type "olmo":
q/k RMSNorm over the whole projections; norm_after: each block's attention and MLP outputs
normalized instead of their inputs), with the same references.

Output: tests/data/families/molmo2/ and molmo2-olmo/ (config.json, generation_config.json, model.safetensors,
preprocessor_config.json, processor_config.json, tokenizer files, vision_reference.json).

Run once on a developer machine (torch, torchvision, transformers, safetensors, numpy, pillow;
not CI):
    python tools/vlm/make_molmo2_fixture.py   # a Python with those packages (transformers 5.25)
"""
import hashlib
import json
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from PIL import Image
from safetensors.torch import load_file, save_file
from transformers import Molmo2Config, Molmo2ForConditionalGeneration, Molmo2Processor
from transformers.models.molmo2.image_processing_molmo2 import Molmo2ImageProcessor
from transformers.models.molmo2.video_processing_molmo2 import Molmo2VideoProcessor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_qwen2_vl_fixtures import (PHOTO, REPO, byte_tokenizer, f32,  # noqa: E402
                                    fill_weights, rows)

N_GREEDY = 16
ADAPTER_SCALE = 4.0
TEXT_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Molmo2's image tokens: the ids from 259 on, beyond the LM head's vocabulary (as the released
# checkpoints' additional vocabulary), in the order of their config ids.
IMAGE_SPECIALS = ["<im_start>", "<im_end>", "<im_patch>", "<im_col>", "<low_res_im_start>",
                  "<|image|>", "<im_low>", "<frame_start>", "<frame_end>"]
PROMPT = "Look: <|image|> What is in the picture?"
TEXT_PROMPT = "What is in the picture?"
# Two images with text between them (the photograph twice): every image token attends to every
# other one, the second image's too, but not to the text between (molmo2 only, not molmo2-olmo).
TWO_PROMPT = "Image 1: <|image|> and image 2: <|image|> compare"


def greedy(model, ids, types, extra):
    seq, tt, out, margins = list(ids), list(types), [], []
    for _ in range(N_GREEDY):
        kw = dict(extra)
        if kw:
            kw["mm_token_type_ids"] = torch.tensor([tt])
        last = model(input_ids=torch.tensor([seq]), use_cache=False, **kw).logits[0, -1].numpy()
        order = np.argsort(-last, kind="stable")
        out.append(int(order[0]))
        margins.append(float(last[order[0]] - last[order[1]]))
        seq.append(int(order[0]))
        tt.append(0)
    return out, margins


def released_embedding_split(out, vocab):
    """transformers 5.25 writes the embedding back as two halves of equal size (the reverse of
    its load-time Concatenate); the released checkpoints split it at the vocabulary:
    wte.embedding [vocab, H] and wte.new_embedding [additional, H]. Rewritten so; from_pretrained
    reads either (it concatenates them)."""
    path = os.path.join(out, "model.safetensors")
    t = load_file(path)
    key = "model.transformer.wte."
    full = torch.cat([t[key + "embedding"], t[key + "new_embedding"]], dim=0)
    t[key + "embedding"] = full[:vocab].contiguous()
    t[key + "new_embedding"] = full[vocab:].contiguous()
    save_file(t, path, metadata={"format": "pt"})


def build(name, olmo):
    """olmo: the OLMo-based text model's options (Molmo2-O): q/k norms over the whole
    projections and each block's output normalized (norm_after)."""
    out = os.path.join(REPO, "tests", "data", "families", name)
    tokenizer = byte_tokenizer(TEXT_SPECIALS + IMAGE_SPECIALS, bos_token="<|endoftext|>",
                               eos_token="<|im_end|>", pad_token="<|endoftext|>",
                               extra_special_tokens={"image_token": "<|image|>"})
    ids_of = tokenizer.convert_tokens_to_ids
    vocab = 256 + len(TEXT_SPECIALS)
    ip = Molmo2ImageProcessor(size={"height": 40, "width": 40}, patch_size=8,
                              overlap_margins=[1, 1], max_crops=4, pooling_size=[2, 2])
    # The processor class requires a video processor; video input is not implemented (refused).
    vp = Molmo2VideoProcessor(size={"height": 40, "width": 40}, patch_size=8)
    processor = Molmo2Processor(image_processor=ip, video_processor=vp, tokenizer=tokenizer)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=4, head_dim=8,
                  hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6, image_size=[40, 40],
                  patch_size=8)
    adapter = dict(vision_feature_layer=[-1, 1], hidden_size=32, num_attention_heads=4,
                   num_key_value_heads=4, head_dim=8, hidden_act="silu", intermediate_size=48,
                   text_hidden_size=64)
    text = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                vocab_size=vocab, additional_vocab_size=len(IMAGE_SPECIALS),
                qk_norm_type="olmo" if olmo else "qwen3", num_hidden_layers=2,
                intermediate_size=128, max_position_embeddings=256, rms_norm_eps=1e-6,
                norm_after=olmo,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                bos_token_id=ids_of("<|endoftext|>"), eos_token_id=ids_of("<|im_end|>"),
                pad_token_id=ids_of("<|endoftext|>"))
    config = Molmo2Config(
        vision_config=vision, adapter_config=adapter, text_config=text,
        image_start_token_id=ids_of("<im_start>"),
        low_res_image_start_token_id=ids_of("<low_res_im_start>"),
        image_end_token_id=ids_of("<im_end>"), image_patch_id=ids_of("<im_patch>"),
        frame_start_token_id=ids_of("<frame_start>"), frame_end_token_id=ids_of("<frame_end>"),
        tie_word_embeddings=False)
    config._attn_implementation = "eager"
    for sub in (config.vision_config, config.adapter_config, config.text_config):
        sub._attn_implementation = "eager"
    torch.manual_seed(0)
    model = Molmo2ForConditionalGeneration(config).to(torch.float32).eval()
    fill_weights(model)
    # The filler's N(0, 0.05) through the adapter's six matrices leaves features of 1e-4; scaled
    # so that they are of order one and a tolerance of 1e-4 tells right from wrong.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "multi_modal_projector" in name and name.endswith("weight"):
                p.mul_(ADAPTER_SCALE)
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)
    processor.save_pretrained(out)
    ip.save_pretrained(out)  # preprocessor_config.json, what the engine reads
    tokenizer.save_pretrained(out)
    released_embedding_split(out, vocab)

    back = Molmo2ForConditionalGeneration.from_pretrained(out, dtype=torch.float32)
    for c in (back.config, back.config.vision_config, back.config.adapter_config,
              back.config.text_config):
        c._attn_implementation = "eager"
    model = back.to(torch.float64).eval()
    image = Image.open(PHOTO)
    inputs = processor(images=image, text=PROMPT, return_tensors="pt")
    ids = inputs["input_ids"][0].tolist()
    types = inputs["mm_token_type_ids"][0].tolist()
    pv = inputs["pixel_values"].to(torch.float32)
    pooling = inputs["image_token_pooling"]
    grids = inputs["image_grids"]
    pv64 = pv.to(torch.float64)
    kw = dict(pixel_values=pv64, image_token_pooling=pooling, image_grids=grids,
              image_num_crops=inputs["image_num_crops"])
    patch = config.image_patch_id
    n_patch = sum(1 for i in ids if i == patch)
    with torch.no_grad():
        feats = model.model.get_image_features(pv64, pooling, grids, inputs["image_num_crops"])
        feats = torch.cat(list(feats.pooler_output), dim=0).numpy()
        logits = model(input_ids=torch.tensor([ids]), mm_token_type_ids=torch.tensor([types]),
                       use_cache=False, **kw).logits[0].numpy()
        causal = model(input_ids=torch.tensor([ids]), use_cache=False, **kw).logits[0].numpy()
        greedy_ids, margins = greedy(model, ids, types, kw)
        text_ids = processor(text=TEXT_PROMPT, return_tensors="pt")["input_ids"][0].tolist()
        text_logits = model(input_ids=torch.tensor([text_ids]), use_cache=False).logits[0].numpy()
        text_greedy, _ = greedy(model, text_ids, [0] * len(text_ids), {})
        if not olmo:
            two = processor(images=[image, image], text=TWO_PROMPT, return_tensors="pt")
            two_ids = two["input_ids"][0].tolist()
            two_types = two["mm_token_type_ids"][0].tolist()
            two_kw = dict(pixel_values=two["pixel_values"].to(torch.float64),
                          image_token_pooling=two["image_token_pooling"],
                          image_grids=two["image_grids"], image_num_crops=two["image_num_crops"])
            two_logits = model(input_ids=torch.tensor([two_ids]),
                               mm_token_type_ids=torch.tensor([two_types]), use_cache=False,
                               **two_kw).logits[0].numpy()
            two_greedy, two_margins = greedy(model, two_ids, two_types, two_kw)
    assert feats.shape[0] == n_patch, (feats.shape, n_patch)
    pvn = pv.numpy().astype("<f4")
    fields = {
        "format": "mlxcel-vlm-reference/1",
        "model_type": "molmo2",
        "variant": name,
        "generator": "tools/vlm/make_molmo2_fixture.py",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "reference_dtype": "float64 forward of transformers' modeling code on the float32 weights",
        "image": "tests/data/image/inputs/chelsea.png",
        "prompt": PROMPT,
        "image_token_index": patch,
        "n_image_tokens": n_patch,
        "image_grids": grids[0].tolist(),
        "image_num_crops": int(inputs["image_num_crops"][0]),
        "image_token_pooling": pooling.tolist(),
        "pixel_values_shape": list(pvn.shape),
        "pixel_values_sha256": hashlib.sha256(pvn.tobytes()).hexdigest(),
        "pixel_values_first": [float(f32(v)) for v in pvn.reshape(-1)[:8]],
        "prompt_ids": ids,
        "mm_token_type_ids": types,
        "greedy_ids": greedy_ids,
        "greedy_top2_margins": [float(f32(m)) for m in margins],
        "causal_only_max_logit_diff": float(np.abs(causal - logits).max()),
        "text_prompt_ids": text_ids,
        "text_greedy_ids": text_greedy,
    }
    if not olmo:
        fields.update({
            "two_image_prompt": TWO_PROMPT,
            "two_image_prompt_ids": two_ids,
            "two_image_mm_token_type_ids": two_types,
            "two_image_greedy_ids": two_greedy,
            "two_image_greedy_top2_margins": [float(f32(m)) for m in two_margins],
        })
    parts = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in fields.items()]
    parts.append(f'  "image_features": {rows(feats)}')
    parts.append(f'  "logits": {rows(logits)}')
    parts.append(f'  "text_logits": {rows(text_logits)}')
    if not olmo:
        parts.append(f'  "two_image_logits": {rows(two_logits)}')
    with open(os.path.join(out, "vision_reference.json"), "w") as f:
        f.write("{\n" + ",\n".join(parts) + "\n}\n")
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print(f"{name}: {len(ids)} prompt ids ({n_patch} image patch tokens, "
          f"{sum(types)} image tokens), pixel_values {list(pvn.shape)}, greedy {greedy_ids}, "
          f"min margin {min(margins):.4g}, causal-only logits differ by "
          f"{fields['causal_only_max_logit_diff']:.3g}, {size / 1024:.0f} KiB, "
          f"files {sorted(os.listdir(out))}")


def main():
    build("molmo2", False)
    build("molmo2-olmo", True)


if __name__ == "__main__":
    main()
