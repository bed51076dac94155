#!/usr/bin/env python3
"""Tiny random-weight Qwen2-VL and Qwen2.5-VL checkpoints and their references, by transformers.

transformers' own Qwen2VLConfig / Qwen2VLForConditionalGeneration and Qwen2_5_VLConfig /
Qwen2_5_VLForConditionalGeneration (2 vision blocks, patch 14, temporal patch 2, merge 2;
Qwen2.5-VL with window_size 56, i.e. windows of 2 x 2 merged units, and block 1 full attention; a
2-layer text model with mrope_section [2, 3, 3] of head_dim 16) and their own processors
(Qwen2VLImageProcessor with min_pixels 56*56 and max_pixels 112*112, so that
tests/data/image/inputs/chelsea.png (451 x 300) becomes 112 x 84: a 6 x 8 patch grid, 12 image
tokens, h != w; a byte-level BPE tokenizer with Qwen's special tokens) build, save and run the
models. Weights are deterministic random values (per-tensor seeds); the reference is the same
modeling code run in float64 on the saved float32 weights (eager attention, no cache): the
processor's pixel_values (shape, sha256, a few values), image_grid_thw, the merged image
features, the M-RoPE position ids and rope delta, the logits of every prompt position, a 16-token
greedy continuation with its top-2 margins, and a text-only prompt's logits and greedy ids.

Output: tests/data/families/{qwen2_vl,qwen2_5_vl}/ (config.json, generation_config.json,
model.safetensors, preprocessor_config.json, tokenizer files, vision_reference.json).

Run once on a developer machine (torch, transformers, safetensors, numpy, pillow; not CI):
    /tmp/famenv/bin/python tools/vlm/make_qwen2_vl_fixtures.py
"""
import hashlib
import json
import os
import shutil
import zlib

import numpy as np
import torch
import transformers
from PIL import Image
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (PreTrainedTokenizerFast, Qwen2_5_VLConfig,
                          Qwen2_5_VLForConditionalGeneration, Qwen2VLConfig,
                          Qwen2VLForConditionalGeneration, Qwen2VLImageProcessorPil)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
PHOTO = os.path.join(REPO, "tests", "data", "image", "inputs", "chelsea.png")
SEED = 4321
N_GREEDY = 16
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
            "<|image_pad|>", "<|video_pad|>"]
# Text before the image, so the image's M-RoPE positions start after 0.
PROMPT = "Look: <|vision_start|><|image_pad|><|vision_end|>What is in the picture?"
TEXT_PROMPT = "What is in the picture?"


def byte_tokenizer(specials=None, **special_kw):
    """Byte-level BPE without merges (ids 0..255 one per byte), then Qwen's special tokens (or
    `specials`, with `special_kw` naming the tokenizer's roles, for the other fixtures)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + \
        list(range(0xAE, 0xFF + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, (chr(c) for c in cs)))
    vocab = {table[b]: b for b in range(256)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(specials or SPECIALS)
    if specials:
        return PreTrainedTokenizerFast(tokenizer_object=tok, **special_kw)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                              "vision_bos_token": "<|vision_start|>",
                              "vision_eos_token": "<|vision_end|>"})


def fill_weights(model):
    """Norms 1 + N(0, 0.1), biases N(0, 0.03), the patch embedding N(0, 0.1), the rest
    N(0, 0.05); float64 rounded to float32."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            g = np.random.default_rng([SEED, zlib.crc32(name.encode())])
            shape = tuple(p.shape)
            if ("norm" in name or "ln_q" in name) and name.endswith("weight"):
                v = 1.0 + g.normal(0.0, 0.1, shape)
            elif name.endswith("bias"):
                v = g.normal(0.0, 0.03, shape)
            elif "patch_embed" in name:
                v = g.normal(0.0, 0.1, shape)
            elif "embed_tokens" in name:
                v = g.normal(0.0, 0.5, shape)
            else:
                v = g.normal(0.0, 0.05, shape)
            p.copy_(torch.from_numpy(v.astype(np.float32)))


def f32(x):
    return repr(float(np.float32(x)))


def rows(a):
    return "[" + ",\n".join("[" + ",".join(f32(v) for v in r) + "]" for r in a) + "]"


def text_config(vocab):
    return dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=None,
                eos_token_id=SPECIALS.index("<|im_end|>") + 256,
                pad_token_id=SPECIALS.index("<|endoftext|>") + 256,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                 "mrope_section": [2, 3, 3]})


def greedy(model, ids, extra):
    seq, out, margins = list(ids), [], []
    for _ in range(N_GREEDY):
        kw = dict(extra)
        if "pixel_values" in kw:
            tok = kw.pop("_image_token")
            kw["mm_token_type_ids"] = torch.tensor([[1 if i == tok else 0 for i in seq]])
        last = model(input_ids=torch.tensor([seq]), use_cache=False, **kw).logits[0, -1].numpy()
        order = np.argsort(-last, kind="stable")
        out.append(int(order[0]))
        margins.append(float(last[order[0]] - last[order[1]]))
        seq.append(int(order[0]))
    return out, margins


def build(kind):
    out = os.path.join(REPO, "tests", "data", "families", kind)
    tokenizer = byte_tokenizer()
    image_token = tokenizer.convert_tokens_to_ids("<|image_pad|>")
    ip = Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=112 * 112, patch_size=14,
                               temporal_patch_size=2, merge_size=2)
    tc = text_config(len(tokenizer))
    ids_kw = dict(image_token_id=image_token,
                  video_token_id=tokenizer.convert_tokens_to_ids("<|video_pad|>"),
                  vision_start_token_id=tokenizer.convert_tokens_to_ids("<|vision_start|>"),
                  vision_end_token_id=tokenizer.convert_tokens_to_ids("<|vision_end|>"))
    if kind == "qwen2_vl":
        vision = dict(depth=2, embed_dim=32, hidden_size=64, mlp_ratio=2, num_heads=4,
                      patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
                      hidden_act="quick_gelu")
        config = Qwen2VLConfig(text_config=tc, vision_config=vision, tie_word_embeddings=False,
                               **ids_kw)
        cls = Qwen2VLForConditionalGeneration
    else:
        vision = dict(depth=2, hidden_size=32, intermediate_size=48, out_hidden_size=64,
                      num_heads=4, patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
                      window_size=56, fullatt_block_indexes=[1], hidden_act="silu")
        config = Qwen2_5_VLConfig(text_config=tc, vision_config=vision, tie_word_embeddings=False,
                                  **ids_kw)
        cls = Qwen2_5_VLForConditionalGeneration
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = cls(config).to(torch.float32).eval()
    fill_weights(model)
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)
    ip.save_pretrained(out)
    tokenizer.save_pretrained(out)

    write_reference(out, kind, "tools/vlm/make_qwen2_vl_fixtures.py", cls, tokenizer, ip,
                    image_features)


def image_features(model, pv, thw):
    """The merged image features of pixel_values pv: [("image_features", rows)]."""
    feats = model.model.get_image_features(pixel_values=pv, image_grid_thw=thw).pooler_output
    return [("image_features", torch.cat(list(feats), dim=0).numpy())]


def write_reference(out, kind, generator, cls, tokenizer, ip, features, extra=None):
    """Reloads the saved checkpoint in float64 and writes out/vision_reference.json: the
    processor's pixels of the photograph, the rows features(model, pixel_values, grid) names,
    the M-RoPE positions, every prompt position's logits, the greedy continuation and the
    text-only prompt's logits and ids (extra: more scalar fields)."""
    image_token = tokenizer.convert_tokens_to_ids("<|image_pad|>")
    back = cls.from_pretrained(out, dtype=torch.float32)
    back.config._attn_implementation = "eager"
    model = back.to(torch.float64).eval()
    image = Image.open(PHOTO)
    px = ip(images=[image], return_tensors="pt")
    pv, thw = px["pixel_values"].to(torch.float32), px["image_grid_thw"]
    n_img = int(thw.prod()) // 4
    text = PROMPT.replace("<|image_pad|>", "<|image_pad|>" * n_img)
    ids = tokenizer(text)["input_ids"]
    assert sum(1 for i in ids if i == image_token) == n_img
    mm = torch.tensor([[1 if i == image_token else 0 for i in ids]])
    pv64 = pv.to(torch.float64)
    with torch.no_grad():
        feats = features(model, pv64, thw)
        pos, delta = model.model.get_rope_index(torch.tensor([ids]), mm_token_type_ids=mm,
                                                image_grid_thw=thw)
        logits = model(input_ids=torch.tensor([ids]), pixel_values=pv64, image_grid_thw=thw,
                       mm_token_type_ids=mm, use_cache=False).logits[0].numpy()
        g_ids, margins = greedy(model, ids, {"pixel_values": pv64, "image_grid_thw": thw,
                                              "_image_token": image_token})
        t_ids = tokenizer(TEXT_PROMPT)["input_ids"]
        t_logits = model(input_ids=torch.tensor([t_ids]), use_cache=False).logits[0].numpy()
        t_greedy, _ = greedy(model, t_ids, {})
    pvn = pv.numpy().astype("<f4")
    fields = {
        "format": "mlxcel-vlm-reference/1",
        "model_type": kind,
        "generator": generator,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "reference_dtype": "float64 forward of transformers' modeling code on the float32 weights",
        "image": "tests/data/image/inputs/chelsea.png",
        "prompt": PROMPT,
        "image_token_index": image_token,
        "n_image_tokens": n_img,
        "image_grid_thw": thw[0].tolist(),
        "pixel_values_shape": list(pvn.shape),
        "pixel_values_sha256": hashlib.sha256(pvn.tobytes()).hexdigest(),
        "pixel_values_first": [float(f32(v)) for v in pvn.reshape(-1)[:8]],
        "prompt_ids": ids,
        "mrope_position_ids": pos[:, 0].tolist(),
        "rope_delta": int(delta.reshape(-1)[0]),
        "greedy_ids": g_ids,
        "greedy_top2_margins": [float(f32(m)) for m in margins],
        "text_prompt_ids": t_ids,
        "text_greedy_ids": t_greedy,
    }
    fields.update(extra or {})
    parts = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in fields.items()]
    parts += [f'  "{name}": {rows(r)}' for name, r in feats]
    parts.append(f'  "logits": {rows(logits)}')
    parts.append(f'  "text_logits": {rows(t_logits)}')
    with open(os.path.join(out, "vision_reference.json"), "w") as f:
        f.write("{\n" + ",\n".join(parts) + "\n}\n")
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print(f"{kind}: grid {thw[0].tolist()}, {len(ids)} prompt ids ({n_img} image tokens), "
          f"delta {int(delta.reshape(-1)[0])}, greedy {g_ids}, min margin {min(margins):.4g}, "
          f"{size / 1024:.0f} KiB, files {sorted(os.listdir(out))}")


def main():
    for kind in ("qwen2_vl", "qwen2_5_vl"):
        build(kind)


if __name__ == "__main__":
    main()
