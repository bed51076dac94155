#!/usr/bin/env python3
"""A tiny random-weight Youtu-VL checkpoint and its reference, by llama.cpp.

Youtu-VL's (tencent/Youtu-VL-4B-Instruct) modeling code is Hugging Face remote code and
transformers has no youtu_vl, so the reference is llama.cpp's implementation: its converter
(convert_hf_to_gguf.py: conversion/deepseek.py for the text model, conversion/youtuvl.py for
the mmproj), its vision graph (tools/mtmd/models/youtuvl.cpp), its preprocessing
(mtmd_image_preprocessor_youtuvl) and its decoder, run through llama-cpp-python's ctypes
bindings (llama_cpp, llama_cpp.mtmd_cpp).

What it writes, tests/data/families/youtu_vl/:
- config.json: "YoutuVLForConditionalGeneration", model_type "youtu_vl", the text model's fields
  at top level as tests/data/families/youtu/config.json (Youtu-LLM: MLA) but rms_norm_eps 1e-6
  (llama.cpp's deepseek2 applies rms_norm_eps to the MLA latent norms q_a_layernorm /
  kv_a_layernorm too, where transformers' Youtu fixes them at 1e-6; with 1e-6 for every norm
  the two read the checkpoint identically), the ids of
  <|image_pad|>, <|vision_start|>, <|vision_end|> and a vision_config (hidden 32, MLP 64, 3
  blocks, 2 heads of 16, patch 16, merge 2, window_size 64 = windows of 2 x 2 merged units,
  block 1 full attention, gelu_pytorch_tanh, LayerNorm eps 1e-6).
- model.safetensors (f32): the text tensors are tests/data/families/youtu/model.safetensors'
  own (only the eps differs from that fixture), the vision tower
  siglip2.vision_model.* and the merger merger.* are random (per-tensor seeds, O(1)
  activations). The converter maps every one of them (checked: a tensor it cannot map fails).
- tokenizer.json / tokenizer_config.json: byte-level BPE, ids 0..251 the bytes 0x00..0xFB
  (0xFC..0xFF never occur in UTF-8), 252 the one merge (NUL NUL: llama.cpp refuses a BPE
  vocabulary without merges), 253 <|vision_start|>, 254 <|vision_end|>, 255 <|image_pad|>
  (the text model's vocabulary is 256). The converter does not know this pre-tokenizer's
  hash; the tool names it "youtu" (llama.cpp is given token ids, never text).
- preprocessor_config.json: mean / std 0.5, patch 16, merge 2, max_num_patches 96 (see below).
- vision_reference.json: llama.cpp's resized sizes, grids, image embeddings of three images, a
  prompt's logits at every position, a 16-token greedy continuation with top-2 margins and the
  logits after each of its first 15 ids (decode_logits, a KV-cached decode's), and a text-only
  prompt's logits and greedy ids. Checked three ways, each recorded in it: the text
  path on the youtu fixture (text_path_check), a float64 numpy tower written from the facts
  below (numpy_float64_max_abs_diff per image, < 1e-5 required) and transformers' Youtu text
  model in float64 fed llama.cpp's image embeddings (transformers_check, < 1e-5 required).

Layout facts, read from llama.cpp's source and confirmed by this reference:
- patch embedding: v.patch_embd (siglip2...patch_embedding) is a Linear [32, 768] whose 768
  inputs are the 16 x 16 x 3 patch in (y, x, channel) order, channel fastest
  (k = c + 3 * (px + 16 * py)), pixels (u8 / 255 - 0.5) / 0.5. The patches are in merge-unit
  order: unit (ym, xm) raster, inside a unit (dy, dx) raster.
- rope: 2-D, on the full head (neox halves): frequencies theta^(-2k/8), k < 4, of head_dim / 2 = 8
  dims, the first 4 rotated by the patch row, the next 4 by the patch column (Qwen2-VL's vision
  rope), theta 10000; rotation pairs (i, i + 8).
- window attention (all blocks but fullatt_block_indexes): windows of window_size / patch /
  merge = 2 merged units a side, tiled from the top-left over the merged grid; edge windows are
  smaller (no padding); tokens are gathered window by window (each window's units in raster
  order), attention is masked to the window, and the merger's input is put back in raster
  order. Full-attention blocks attend over everything (in the windowed order, which is
  equivalent).
- norms: LayerNorm (weight and bias, eps layer_norm_eps) before attention and MLP and after
  the last block (post_layernorm); no pre-layernorm. Merger: RMSNorm ln_q (weight only, eps
  1e-6 fixed) on each patch, then 4 patches concatenated (merge unit, (dy, dx) order) ->
  mlp.0 -> GELU -> mlp.2.
- GELU: both the tower's MLP (hidden_act gelu*) and the merger use ggml_gelu, the tanh
  approximation 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
- resize: always to (ceil(w * s / 32) * 32, ceil(h * s / 32) * 32) (at least 32) with Pillow's
  BILINEAR (llama.cpp's resize_pillow); s starts at 1.0f and decreases by 0.02f (float32) while
  the patch count exceeds max_num_patches. An image already of that size is not resampled.
- max patches: llama.cpp's youtuvl reads no limit from the GGUF or the preprocessor config: it
  allows 62500 image tokens (250000 patches) unless the context is given image_max_tokens, and
  then max_num_patches = image_max_tokens * merge^2. This reference runs with image_max_tokens
  24, i.e. preprocessor_config.json's max_num_patches 96.
- decoder positions: 1-D and consecutive over text and image tokens (llama.cpp's deepseek2 rope
  is not M-RoPE: mtmd_decode_use_mrope is false; the image takes one position per token);
  <|vision_start|> and <|vision_end|> wrap the image's embeddings.

Precision: stock ggml-cpu computes GELU and GELU_QUICK through f16 lookup tables
(ggml/src/ggml-cpu/vec.h `#define GGML_GELU_FP16`, `#define GGML_GELU_QUICK_FP16`, ~1e-3
relative error). The reference therefore runs a libggml-cpu.so built from the vendored llama.cpp
with those two defines removed (the exact f32 formulas are then used; nothing else changed,
same options as the installed libs: Release, shared, native, OpenMP) in a copy of the venv
(--llama-python). Flash attention is disabled in the mtmd and the llama context (ggml's CPU
flash attention rounds K and V to f16) and the KV cache is f32 (its default is f16). The text
path is validated first: tests/data/families/youtu (a transformers-made fixture) converted by
the same converter must reproduce its reference.json logits within 1e-4 (5e-5: llama.cpp's
eps on the latent norms, see config.json above).

How to run (not CI; about a minute):
    cmake -S $LLAMA -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON
      (after deleting the two #defines above from a copy of $LLAMA), cmake --build /tmp/b
      --target ggml-cpu, then copy /tmp/b/bin/libggml-cpu.so.0.* over the three
      libggml-cpu.so* of a copy of the llama-cpp-python venv (/tmp/lcpp-exact)
    python3 tools/vlm/make_youtu_vl_fixture.py \
        --llama-cpp /tmp/lsrc/llama_cpp_python-0.3.36/vendor/llama.cpp \
        --torch-python /tmp/tvenv/bin/python --llama-python /tmp/lcpp-exact/bin/python \
        --work /tmp/youturef-work
--torch-python: torch, transformers, safetensors, numpy, pillow, tokenizers (writes the
checkpoint, runs the converter with PYTHONPATH=$LLAMA/gguf-py); --llama-python:
llama-cpp-python 0.3.36 (libllama, libmtmd, the exact libggml-cpu) and numpy. The GGUF files
stay in --work. Phases run alone: `write`, `convert` (torch venv), `reference` (llama venv),
`crosscheck` (torch venv), with the same arguments.
"""
import argparse
import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(REPO, "tests", "data", "families", "youtu_vl")
YOUTU = os.path.join(REPO, "tests", "data", "families", "youtu")
PHOTO = os.path.join(REPO, "tests", "data", "image", "inputs", "chelsea.png")
SEED = 2718
N_GREEDY = 16
VISION_START, VISION_END, IMAGE_PAD = 253, 254, 255
N_BYTES = 252  # ids 0..251: the bytes 0x00..0xFB; 252: NUL NUL; then the three specials
MAX_TOKENS = 24  # llama.cpp's image_max_tokens; max_num_patches = 4x
TEXT_EPS = 1e-6
VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=2,
              patch_size=16, spatial_merge_size=2, window_size=64, fullatt_block_indexes=[1],
              hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6, image_size=560,
              num_channels=3)
# name, crop box of chelsea.png (451 x 300) or None, why.
IMAGES = [
    ("chelsea", None, "downscaled: 600 patches at scale 1 > 96, s = 0.42 gives 192 x 128"),
    ("crop_96x160", (200, 60, 296, 220), "a multiple of 32 under the limit: not resampled; "
     "3 x 5 merged units, so edge windows of 1 unit"),
    ("crop_100x70", (150, 100, 250, 170), "under the limit, rounded up: resized to 128 x 96"),
]
PROMPT_HEAD = "Look: "
PROMPT_TAIL = "What is in the picture?"


def byte_id(b):
    assert 0 < b < N_BYTES, "bytes 0x00 and 0xFC..0xFF are not single tokens"
    return b


def text_ids(s):
    return [byte_id(b) for b in s.encode("utf-8")]


def vision_tensors(text_hidden):
    """name -> (shape, kind) of the tower and merger, in the converter's layout."""
    d, f, p = VISION["hidden_size"], VISION["intermediate_size"], VISION["patch_size"]
    m = d * VISION["spatial_merge_size"] ** 2
    t = {"siglip2.vision_model.embeddings.patch_embedding.weight": ((d, p * p * 3), 0.05),
         "siglip2.vision_model.embeddings.patch_embedding.bias": ((d,), "bias")}
    for i in range(VISION["num_hidden_layers"]):
        b = f"siglip2.vision_model.encoder.layers.{i}."
        for n in ("layer_norm1", "layer_norm2"):
            t[b + n + ".weight"] = ((d,), "norm")
            t[b + n + ".bias"] = ((d,), "bias")
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            t[b + "self_attn." + n + ".weight"] = ((d, d), d ** -0.5)
            t[b + "self_attn." + n + ".bias"] = ((d,), "bias")
        t[b + "mlp.fc1.weight"] = ((f, d), d ** -0.5)
        t[b + "mlp.fc1.bias"] = ((f,), "bias")
        t[b + "mlp.fc2.weight"] = ((d, f), f ** -0.5)
        t[b + "mlp.fc2.bias"] = ((d,), "bias")
    t["siglip2.vision_model.post_layernorm.weight"] = ((d,), "norm")
    t["siglip2.vision_model.post_layernorm.bias"] = ((d,), "bias")
    t["merger.ln_q.weight"] = ((d,), "norm")
    t["merger.mlp.0.weight"] = ((m, m), m ** -0.5)
    t["merger.mlp.0.bias"] = ((m,), "bias")
    # Smaller, so that the image embeddings are of the order of the token embeddings' rows.
    t["merger.mlp.2.weight"] = ((text_hidden, m), 0.3 * m ** -0.5)
    t["merger.mlp.2.bias"] = ((text_hidden,), "bias")
    return t


def load_images():
    """The three images as (name, box, why, RGB u8 array [h, w, 3])."""
    import numpy as np
    from PIL import Image
    photo = Image.open(PHOTO).convert("RGB")
    out = []
    for name, box, why in IMAGES:
        im = photo.crop(box) if box else photo
        out.append((name, box, why, np.asarray(im, dtype=np.uint8).copy()))
    return out


# ---------------------------------------------------------------------------------------------
# write (torch venv): the checkpoint


def byte_tokenizer_json(path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + \
        list(range(0xAE, 0xFF + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, (chr(c) for c in cs)))
    vocab = {table[b]: b for b in range(N_BYTES)}
    # One merge (two NUL bytes, never in a prompt): llama.cpp refuses a BPE vocabulary without
    # merges.
    vocab[table[0] * 2] = N_BYTES
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[(table[0], table[0])]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|vision_start|>", "<|vision_end|>", "<|image_pad|>"])
    assert tok.token_to_id("<|image_pad|>") == IMAGE_PAD
    tok.save(path)


def write_tokenizer(d):
    byte_tokenizer_json(os.path.join(d, "tokenizer.json"))
    cfg = {"backend": "tokenizers", "tokenizer_class": "TokenizersBackend",
           "model_max_length": 128, "image_token": "<|image_pad|>",
           "vision_bos_token": "<|vision_start|>", "vision_eos_token": "<|vision_end|>"}
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")


def cmd_write(args):
    import numpy as np
    from safetensors.numpy import load_file, save_file
    with open(os.path.join(YOUTU, "config.json")) as f:
        text = json.load(f)
    tensors = load_file(os.path.join(YOUTU, "model.safetensors"))
    config = dict(text)
    config["architectures"] = ["YoutuVLForConditionalGeneration"]
    config["model_type"] = "youtu_vl"
    config["image_token_id"] = IMAGE_PAD
    config["vision_start_token_id"] = VISION_START
    config["vision_end_token_id"] = VISION_END
    config["vision_config"] = dict(VISION)
    # llama.cpp's deepseek2 applies rms_norm_eps to the MLA latent norms (q_a_layernorm,
    # kv_a_layernorm) too, where transformers' Youtu fixes them at 1e-6: with 1e-6 for every
    # norm both read the checkpoint the same way (the youtu fixture's 1e-5 costs llama.cpp
    # 5e-5 on its logits, all of it this).
    config["rms_norm_eps"] = TEXT_EPS
    for name, (shape, kind) in vision_tensors(text["hidden_size"]).items():
        g = np.random.default_rng([SEED, zlib.crc32(name.encode())])
        if kind == "norm":
            v = 1.0 + g.normal(0.0, 0.1, shape)
        elif kind == "bias":
            v = g.normal(0.0, 0.05, shape)
        else:
            v = g.normal(0.0, kind, shape)
        tensors[name] = v.astype(np.float32)
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    save_file(dict(sorted(tensors.items())), os.path.join(OUT, "model.safetensors"),
              metadata={"format": "pt"})
    os.chmod(os.path.join(OUT, "model.safetensors"), 0o644)
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    shutil.copy(os.path.join(YOUTU, "generation_config.json"), OUT)
    pre = {"image_processor_type": "YoutuVLImageProcessor", "do_convert_rgb": True,
           "do_normalize": True, "do_rescale": True, "do_resize": True,
           "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "merge_size": 2,
           "patch_size": 16, "max_num_patches": MAX_TOKENS * 4, "resample": 2,
           "rescale_factor": 1 / 255}
    with open(os.path.join(OUT, "preprocessor_config.json"), "w") as f:
        json.dump(pre, f, indent=2, sort_keys=True)
        f.write("\n")
    write_tokenizer(OUT)
    # The text fixture gets the same tokenizer in a scratch copy, for the converter.
    tdir = os.path.join(args.work, "youtu")
    shutil.rmtree(tdir, ignore_errors=True)
    shutil.copytree(YOUTU, tdir)
    write_tokenizer(tdir)
    # Decoded images (u8 RGB) for the llama venv, which has no PIL; plus Pillow's own BILINEAR
    # resize to the size llama.cpp picks, to check that llama.cpp's resize is Pillow's.
    from PIL import Image
    for name, box, why, rgb in load_images():
        np.save(os.path.join(args.work, name + ".npy"), rgb)
        h, w = rgb.shape[:2]
        size = preprocess_size(w, h)
        if size != (w, h):
            pil = Image.fromarray(rgb).resize(size, Image.BILINEAR)
            np.save(os.path.join(args.work, name + "_pil.npy"), np.asarray(pil, np.uint8))
    print(f"wrote {OUT}: {sorted(os.listdir(OUT))}")


def preprocess_size(w, h):
    """llama.cpp's youtuvl target size (float32 scale steps as in its C++)."""
    import numpy as np
    scale, step = np.float32(1.0), np.float32(0.02)
    while scale > 0:
        th = max(32, int(np.ceil(np.float32(h * scale) / np.float32(32))) * 32)
        tw = max(32, int(np.ceil(np.float32(w * scale) / np.float32(32))) * 32)
        if (th // 16) * (tw // 16) > MAX_TOKENS * 4:
            scale = np.float32(scale - step)
        else:
            return tw, th
    raise ValueError("no scale fits")


# ---------------------------------------------------------------------------------------------
# convert (torch venv + llama.cpp's converter)


def cmd_convert_one(args):
    """Runs llama.cpp's converter in this process (argv after --), with the byte tokenizer's
    pre-tokenizer named "youtu" (its hash is not in the converter's table; llama.cpp gets
    token ids, never text)."""
    sys.path.insert(0, args.llama_cpp)
    sys.path.insert(1, os.path.join(args.llama_cpp, "gguf-py"))
    from conversion import base
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "youtu"
    import convert_hf_to_gguf
    sys.argv = ["convert_hf_to_gguf.py"] + args.rest
    convert_hf_to_gguf.main()


def convert(args, src, out, mmproj=False):
    cmd = [sys.executable, os.path.abspath(__file__), "_convert_one", "--llama-cpp",
           args.llama_cpp, "--work", args.work, "--", src, "--outtype", "f32", "--outfile", out]
    if mmproj:
        cmd.append("--mmproj")
    env = dict(os.environ, PYTHONPATH=os.path.join(args.llama_cpp, "gguf-py"))
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    log = r.stdout + r.stderr
    with open(out + ".log", "w") as f:
        f.write(log)
    if r.returncode != 0 or "Cannot map tensor" in log or not os.path.exists(out):
        sys.exit(f"conversion of {src} failed (log {out}.log):\n{log[-3000:]}")
    return log


def cmd_convert(args):
    sys.path.insert(0, os.path.join(args.llama_cpp, "gguf-py"))
    import gguf
    from safetensors import safe_open
    w = args.work
    convert(args, os.path.join(w, "youtu"), os.path.join(w, "youtu-f32.gguf"))
    convert(args, OUT, os.path.join(w, "youtu_vl-f32.gguf"))
    convert(args, OUT, os.path.join(w, "youtu_vl-mmproj-f32.gguf"), mmproj=True)
    with safe_open(os.path.join(OUT, "model.safetensors"), "np") as f:
        names = list(f.keys())
    n_vision = sum(1 for n in names if n.startswith(("siglip2.", "merger.")))
    mm = gguf.GGUFReader(os.path.join(w, "youtu_vl-mmproj-f32.gguf"))
    got = sorted(t.name for t in mm.tensors)
    if len(got) != n_vision or any(t.tensor_type != gguf.GGMLQuantizationType.F32
                                   for t in mm.tensors):
        sys.exit(f"mmproj holds {len(got)} tensors (want {n_vision} f32): {got}")
    txt = gguf.GGUFReader(os.path.join(w, "youtu_vl-f32.gguf"))
    print(f"converted: mmproj {len(got)} tensors {got}; text {len(txt.tensors)} tensors")


# ---------------------------------------------------------------------------------------------
# reference (llama venv with the exact libggml-cpu)

GGML_TYPE_F32 = 0
LOG = []  # llama.cpp's and mtmd's log lines


def quiet_logs():
    """Collects llama.cpp's and mtmd's logs in LOG instead of printing them."""
    import llama_cpp as L
    import llama_cpp.mtmd_cpp as M

    def keep(level, text, user_data):
        LOG.append(text.decode("utf-8", "replace"))

    quiet_logs.cb = L.llama_log_callback(keep)  # kept alive for the process
    L.llama_log_set(quiet_logs.cb, None)
    M.mtmd_log_set(quiet_logs.cb, None)


class Llama:
    """A llama.cpp model and an f32, no-flash-attention context over ctypes."""

    def __init__(self, path, n_ctx=128):
        import llama_cpp as L
        self.L = L
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = 0
        self.model = L.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            sys.exit(f"llama.cpp could not load {path}")
        cp = L.llama_context_default_params()
        cp.n_ctx = cp.n_batch = cp.n_ubatch = n_ctx
        cp.n_threads = cp.n_threads_batch = 2
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cp.type_k = cp.type_v = GGML_TYPE_F32
        self.ctx = L.llama_init_from_model(self.model, cp)
        if not self.ctx:
            sys.exit("llama.cpp could not create a context")
        self.n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model))
        self.n_embd = L.llama_model_n_embd(self.model)
        self.pos = 0

    def reset(self):
        self.L.llama_memory_clear(self.L.llama_get_memory(self.ctx), True)
        self.pos = 0

    def decode(self, ids=None, embd=None):
        """Decodes token ids or embedding rows at the next positions; returns their logits."""
        import numpy as np
        L = self.L
        n = len(ids) if ids is not None else embd.shape[0]
        batch = L.llama_batch_init(n, 0 if ids is not None else self.n_embd, 1)
        try:
            for i in range(n):
                if ids is not None:
                    batch.token[i] = ids[i]
                batch.pos[i] = self.pos + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = 1
            if embd is not None:
                flat = np.ascontiguousarray(embd, dtype=np.float32).reshape(-1)
                ctypes.memmove(batch.embd, flat.ctypes.data, flat.nbytes)
            batch.n_tokens = n
            if L.llama_decode(self.ctx, batch) != 0:
                sys.exit("llama_decode failed")
        finally:
            L.llama_batch_free(batch)
        self.pos += n
        return np.stack([np.ctypeslib.as_array(L.llama_get_logits_ith(self.ctx, i),
                                               shape=(self.n_vocab,)).copy()
                         for i in range(n)])

    def greedy(self, last):
        """N_GREEDY greedy ids from the logits `last`, their top-2 margins and the logits
        after each id but the last (decode_logits[i] follows ids[i])."""
        import numpy as np
        ids, margins, rows = [], [], []
        for _ in range(N_GREEDY):
            order = np.argsort(-last, kind="stable")
            ids.append(int(order[0]))
            margins.append(float(last[order[0]] - last[order[1]]))
            if len(ids) < N_GREEDY:
                last = self.decode(ids=[ids[-1]])[-1]
                rows.append(last)
        return ids, margins, np.stack(rows)


def check_libs(lib_dir):
    """The ggml libraries in this process are the venv's own (the exact libggml-cpu), once."""
    maps = [ln.split()[-1] for ln in open("/proc/self/maps") if "libggml" in ln]
    paths = sorted(set(maps))
    for p in paths:
        if os.path.dirname(os.path.realpath(p)) != os.path.realpath(lib_dir):
            sys.exit(f"a ggml library from elsewhere is loaded: {p}")
    cpu = [p for p in paths if "libggml-cpu" in p]
    if len(cpu) != 1:
        sys.exit(f"want one libggml-cpu, got {cpu}")
    with open(cpu[0], "rb") as f:
        return cpu[0], hashlib.sha256(f.read()).hexdigest()


def validate_text(args):
    """llama.cpp on tests/data/families/youtu against its transformers reference."""
    import numpy as np
    with open(os.path.join(YOUTU, "reference.json")) as f:
        ref = json.load(f)
    llm = Llama(os.path.join(args.work, "youtu-f32.gguf"))
    logits = llm.decode(ids=ref["prompt_ids"])
    err = float(np.abs(logits - np.array(ref["logits"])).max())
    ids, _, _ = llm.greedy(logits[-1])
    want = ref["greedy_ids"][:N_GREEDY]
    # decode_logits[i] follows greedy_ids[i]: replay the reference's continuation.
    llm.reset()
    llm.decode(ids=ref["prompt_ids"])
    derr = 0.0
    for i, row in enumerate(ref["decode_logits"]):
        got = llm.decode(ids=[ref["greedy_ids"][i]])[-1]
        derr = max(derr, float(np.abs(got - np.array(row)).max()))
    scale = float(np.abs(np.array(ref["logits"])).max())
    print(f"text path: youtu fixture, {len(ref['prompt_ids'])} prompt logits max |err| "
          f"{err:.3g}, {len(ref['decode_logits'])} decode steps max |err| {derr:.3g} "
          f"(logits up to {scale:.3g}); greedy {'==' if ids == want else '!='} reference")
    if err > 1e-4 or derr > 1e-4 or ids != want:
        sys.exit("llama.cpp's text path does not match the transformers reference")
    return {"fixture": "tests/data/families/youtu (rms_norm_eps 1e-5)",
            "cause": "llama.cpp applies rms_norm_eps to the MLA latent norms, transformers "
                     "1e-6: all of the error (with 1e-6 for every norm: transformers_check)",
            "prompt_logits_max_abs_err": float(f32s(err)),
            "decode_logits_max_abs_err": float(f32s(derr)), "greedy_ids_match": ids == want}


def f32s(x):
    """Shortest text that reads back as the same float32."""
    import numpy as np
    return np.format_float_positional(np.float32(x), unique=True, trim="-") \
        if 1e-4 <= abs(float(x)) < 1e6 or x == 0 else \
        np.format_float_scientific(np.float32(x), unique=True, trim="-")


def rows(a):
    return "[" + ",\n".join("[" + ",".join(f32s(v) for v in r) + "]" for r in a) + "]"


class Mtmd:
    def __init__(self, path, llm):
        import llama_cpp.mtmd_cpp as M
        self.M = M
        p = M.mtmd_context_params_default()
        p.use_gpu = False
        p.n_threads = 2
        p.print_timings = False
        p.warmup = False
        p.flash_attn_type = llm.L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        p.image_max_tokens = MAX_TOKENS
        self.ctx = M.mtmd_init_from_file(path.encode(), llm.model, p)
        if not self.ctx:
            sys.exit(f"mtmd could not load {path}")
        self.n_embd = llm.n_embd

    def encode(self, rgb):
        """mtmd's chunks for the media marker with this image: the text tokens around the
        image, the image's token grid and its embeddings [n_tokens, n_embd]."""
        import numpy as np
        M = self.M
        h, w = rgb.shape[:2]
        buf = (ctypes.c_uint8 * rgb.size).from_buffer_copy(np.ascontiguousarray(rgb).tobytes())
        bm = M.mtmd_bitmap_init(w, h, buf)
        chunks = M.mtmd_input_chunks_init()
        marker = M.mtmd_default_marker()
        text = M.mtmd_input_text(marker, len(marker), False, True)
        bms = (M.mtmd_bitmap_p_ctypes * 1)(bm)
        if M.mtmd_tokenize(self.ctx, chunks, ctypes.byref(text), bms, 1) != 0:
            sys.exit("mtmd_tokenize failed")
        out = {"before": [], "after": []}
        for i in range(M.mtmd_input_chunks_size(chunks)):
            c = M.mtmd_input_chunks_get(chunks, i)
            if M.mtmd_input_chunk_get_type(c) == M.MTMD_INPUT_CHUNK_TYPE_TEXT:
                n = ctypes.c_size_t()
                t = M.mtmd_input_chunk_get_tokens_text(c, ctypes.byref(n))
                out["after" if "embd" in out else "before"] += [t[j] for j in range(n.value)]
                continue
            it = M.mtmd_input_chunk_get_tokens_image(c)
            out["n_tokens"] = M.mtmd_image_tokens_get_n_tokens(it)
            out["n_pos"] = M.mtmd_input_chunk_get_n_pos(c)
            out["non_causal"] = bool(M.mtmd_decode_use_non_causal(self.ctx, c))
            mark = len(LOG)
            if M.mtmd_encode_chunk(self.ctx, c) != 0:
                sys.exit("mtmd_encode_chunk failed")
            # The preprocessed size is not in mtmd's API (its image tokens' nx / ny are
            # n_tokens x 1 for this preprocessor); clip_encode logs it.
            sizes = [re.search(r"copying image 1/1 to input buffer \(nx=(\d+), ny=(\d+)\)", t)
                     for t in LOG[mark:]]
            sizes = [(int(m.group(1)), int(m.group(2))) for m in sizes if m]
            if len(sizes) != 1:
                sys.exit("clip_encode did not log the preprocessed size:\n" + "".join(LOG[mark:]))
            out["size"] = sizes[0]
            e = M.mtmd_get_output_embd(self.ctx)
            out["embd"] = np.ctypeslib.as_array(
                e, shape=(out["n_tokens"], self.n_embd)).copy()
        M.mtmd_input_chunks_free(chunks)
        M.mtmd_bitmap_free(bm)
        return out


def read_safetensors(path):
    """name -> float64 array of an all-f32 safetensors file (numpy only)."""
    import numpy as np
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", name
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], "<f4").reshape(t["shape"]).astype(np.float64)
    return out


def numpy_tower(w, rgb):
    """The image features of an already resized RGB u8 image, in float64, written from the
    layout facts of the docstring (not from llama.cpp's graph): an independent check of
    them. The windows are a mask over the raster order (attention does not depend on the
    order of its keys)."""
    import numpy as np
    P, d, heads = VISION["patch_size"], VISION["hidden_size"], VISION["num_attention_heads"]
    hd, eps = d // heads, VISION["layer_norm_eps"]
    gw, gh = rgb.shape[1] // P, rgb.shape[0] // P
    mw, mh = gw // 2, gh // 2
    x = (rgb.astype(np.float64) / 255.0 - 0.5) / 0.5
    rows, pos = [], []
    for ym in range(mh):
        for xm in range(mw):
            for dy in range(2):
                for dx in range(2):
                    py, px = 2 * ym + dy, 2 * xm + dx
                    rows.append(x[py * P:(py + 1) * P, px * P:(px + 1) * P, :].reshape(-1))
                    pos.append((py, px))
    pre = "siglip2.vision_model."
    h = np.stack(rows) @ w[pre + "embeddings.patch_embedding.weight"].T + \
        w[pre + "embeddings.patch_embedding.bias"]
    pos = np.array(pos, dtype=np.float64)
    inv = 10000.0 ** (-np.arange(0, hd // 2, 2) / (hd // 2))
    ang = np.concatenate([pos[:, :1] * inv, pos[:, 1:] * inv], axis=1)
    ang = np.concatenate([ang, ang], axis=1)[:, None, :]
    cos, sin = np.cos(ang), np.sin(ang)

    def rope(t):
        return t * cos + np.concatenate([-t[..., hd // 2:], t[..., :hd // 2]], -1) * sin

    def ln(t, name):
        mu = t.mean(-1, keepdims=True)
        var = ((t - mu) ** 2).mean(-1, keepdims=True)
        return (t - mu) / np.sqrt(var + eps) * w[name + ".weight"] + w[name + ".bias"]

    def lin(t, name):
        return t @ w[name + ".weight"].T + w[name + ".bias"]

    def gelu(t):
        return 0.5 * t * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (t + 0.044715 * t ** 3)))

    unit = np.arange(len(rows)) // 4
    win_side = VISION["window_size"] // P // 2
    win = (unit // mw // win_side) * -(-mw // win_side) + (unit % mw) // win_side
    same_window = win[:, None] == win[None, :]
    n = len(rows)
    for i in range(VISION["num_hidden_layers"]):
        b = f"{pre}encoder.layers.{i}."
        t = ln(h, b + "layer_norm1")
        q = rope(lin(t, b + "self_attn.q_proj").reshape(n, heads, hd))
        k = rope(lin(t, b + "self_attn.k_proj").reshape(n, heads, hd))
        v = lin(t, b + "self_attn.v_proj").reshape(n, heads, hd)
        s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd)
        if i not in VISION["fullatt_block_indexes"]:
            s = np.where(same_window[None], s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", s, v).reshape(n, d)
        h = h + lin(o, b + "self_attn.out_proj")
        h = h + lin(gelu(lin(ln(h, b + "layer_norm2"), b + "mlp.fc1")), b + "mlp.fc2")
    h = ln(h, pre + "post_layernorm")
    h = h / np.sqrt((h ** 2).mean(-1, keepdims=True) + 1e-6) * w["merger.ln_q.weight"]
    h = h.reshape(n // 4, 4 * d)
    return lin(gelu(lin(h, "merger.mlp.0")), "merger.mlp.2")


def cmd_reference(args):
    import numpy as np
    import llama_cpp as L
    import llama_cpp.mtmd_cpp as M
    quiet_logs()
    L.llama_backend_init()
    lib_path, lib_sha = check_libs(os.path.join(os.path.dirname(L.__file__), "lib"))
    text_check = validate_text(args)
    llm = Llama(os.path.join(args.work, "youtu_vl-f32.gguf"))
    mm = Mtmd(os.path.join(args.work, "youtu_vl-mmproj-f32.gguf"), llm)
    if M.mtmd_decode_use_mrope(mm.ctx):
        sys.exit("llama.cpp decodes youtu_vl with M-RoPE positions")
    weights = read_safetensors(os.path.join(OUT, "model.safetensors"))
    images, feats = [], []
    for name, box, why in IMAGES:
        rgb = np.load(os.path.join(args.work, name + ".npy"))
        h, w = rgb.shape[:2]
        r = mm.encode(rgb)
        size = r["size"]
        if r["before"] != [VISION_START] or r["after"] != [VISION_END] or \
                r["n_pos"] != r["n_tokens"] or r["n_tokens"] * 1024 != size[0] * size[1] or \
                r["non_causal"]:
            sys.exit(f"{name}: unexpected chunks {r}")
        if size != tuple(preprocess_size(w, h)):
            sys.exit(f"{name}: llama.cpp resized to {size}, the rule says "
                     f"{preprocess_size(w, h)}")
        entry = {"name": name, "crop_box_xyxy": list(box) if box else None, "note": why,
                 "size_wh": [w, h],
                 "rgb_sha256": hashlib.sha256(np.ascontiguousarray(rgb).tobytes()).hexdigest(),
                 "resized_wh": list(size), "resampled": size != (w, h),
                 "patch_grid_hw": [size[1] // 16, size[0] // 16],
                 "merged_grid_hw": [size[1] // 32, size[0] // 32],
                 "n_image_tokens": r["n_tokens"]}
        pil = os.path.join(args.work, name + "_pil.npy")
        mine = numpy_tower(weights, np.load(pil) if os.path.exists(pil) else rgb)
        entry["numpy_float64_max_abs_diff"] = float(f32s(np.abs(mine - r["embd"]).max()))
        if entry["numpy_float64_max_abs_diff"] > 1e-5:
            sys.exit(f"{name}: the float64 tower of the layout facts differs from llama.cpp's "
                     f"by {entry['numpy_float64_max_abs_diff']}")
        if os.path.exists(pil):
            # The same image resized by Pillow first (then not resampled by llama.cpp).
            again = mm.encode(np.load(pil))["embd"]
            entry["pillow_bilinear_prefix_max_abs_diff"] = float(f32s(
                np.abs(again - r["embd"]).max()))
        images.append(entry)
        feats.append((name, r["embd"]))
        print(f"{name}: {w}x{h} -> {size}, {r['n_tokens']} tokens, float64 numpy tower: max "
              f"diff {entry['numpy_float64_max_abs_diff']}"
              + (f", Pillow resize first: max diff "
                 f"{entry['pillow_bilinear_prefix_max_abs_diff']}" if os.path.exists(pil)
                 else ""))

    # The prompt: BOS, text, <|vision_start|>, the first image's embeddings, <|vision_end|>, text.
    bos = 1
    head = [bos] + text_ids(PROMPT_HEAD) + [VISION_START]
    tail = [VISION_END] + text_ids(PROMPT_TAIL)
    emb = feats[0][1]
    prompt_ids = head + [IMAGE_PAD] * emb.shape[0] + tail
    logits = np.concatenate([llm.decode(ids=head), llm.decode(embd=emb), llm.decode(ids=tail)])
    g_ids, margins, d_logits = llm.greedy(logits[-1])
    llm.reset()
    t_ids = [bos] + text_ids(PROMPT_TAIL)
    t_logits = llm.decode(ids=t_ids)
    t_greedy, t_margins, _ = llm.greedy(t_logits[-1])

    fields = {
        "format": "mlxcel-vlm-reference/1",
        "model_type": "youtu_vl",
        "generator": "tools/vlm/make_youtu_vl_fixture.py",
        "reference": "llama.cpp (llama-cpp-python 0.3.36's vendored source): "
                     "convert_hf_to_gguf.py --outtype f32 (text) and --mmproj (vision), "
                     "libllama + libmtmd, flash attention off, f32 KV cache, libggml-cpu "
                     "built without GGML_GELU_FP16 / GGML_GELU_QUICK_FP16",
        "libggml_cpu_sha256": lib_sha,
        "text_path_check": text_check,
        "transformers_check": None,
        "image": "tests/data/image/inputs/chelsea.png",
        "llama_cpp_image_max_tokens": MAX_TOKENS,
        "max_num_patches": MAX_TOKENS * 4,
        "decoder_positions": "1-D, consecutive over text and image tokens (no M-RoPE)",
        "images": images,
        "prompt": PROMPT_HEAD + "<|vision_start|><|image_pad|><|vision_end|>" + PROMPT_TAIL,
        "prompt_image": IMAGES[0][0],
        "image_token_index": IMAGE_PAD,
        "n_image_tokens": int(emb.shape[0]),
        "prompt_ids": prompt_ids,
        "greedy_ids": g_ids,
        "greedy_top2_margins": [float(f32s(m)) for m in margins],
        "text_prompt_ids": t_ids,
        "text_greedy_ids": t_greedy,
        "text_greedy_top2_margins": [float(f32s(m)) for m in t_margins],
    }
    parts = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in fields.items()]
    parts += [f'  "image_features_{name}": {rows(r)}' for name, r in feats]
    parts.append(f'  "logits": {rows(logits)}')
    parts.append(f'  "decode_logits": {rows(d_logits)}')
    parts.append(f'  "text_logits": {rows(t_logits)}')
    with open(os.path.join(OUT, "vision_reference.json"), "w") as f:
        f.write("{\n" + ",\n".join(parts) + "\n}\n")
    size = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"prompt {len(prompt_ids)} ids, greedy {g_ids}, min margin {min(margins):.3g}; "
          f"text greedy {t_greedy}; {lib_path}; folder {size / 1024:.0f} KiB")
    if size >= 1 << 20:
        sys.exit("the fixture folder is over 1 MiB")


def cmd_crosscheck(args):
    """transformers' Youtu text model (float64, eager) on the fixture's text weights, fed the
    reference's token rows and llama.cpp's image embeddings: its logits and greedy ids must be
    llama.cpp's. Fills vision_reference.json's "transformers_check"."""
    import numpy as np
    import torch
    import transformers
    from safetensors.torch import load_file
    path = os.path.join(OUT, "vision_reference.json")
    with open(path) as f:
        text = f.read()
    ref = json.loads(text)
    with open(os.path.join(OUT, "config.json")) as f:
        vl = json.load(f)
    cfg = transformers.AutoConfig.from_pretrained(YOUTU)
    for k, v in cfg.to_dict().items():
        if k in vl and k not in ("architectures", "model_type", "rms_norm_eps") and \
                not k.startswith("_") and vl[k] != v:
            sys.exit(f"config.json's {k} is {vl[k]}, the youtu fixture's {v}")
    cfg.rms_norm_eps = vl["rms_norm_eps"]
    cfg._attn_implementation = "eager"
    # from_config + load_state_dict: transformers 5.25's from_pretrained of this tied
    # checkpoint does not keep model.embed_tokens as stored.
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    sd = {k: v for k, v in load_file(os.path.join(OUT, "model.safetensors")).items()
          if k.startswith("model.")}
    res = model.load_state_dict(sd, strict=False)
    if res.unexpected_keys or set(res.missing_keys) - {"lm_head.weight"}:
        sys.exit(f"text weights do not fit: {res}")
    model.tie_weights()
    model = model.to(torch.float64).eval()
    table = model.get_input_embeddings().weight.detach()

    def run(ids, image):
        rows, k = [], 0
        for i in ids:
            if i == IMAGE_PAD:
                rows.append(torch.tensor(image[k], dtype=torch.float64))
                k += 1
            else:
                rows.append(table[i])
        with torch.no_grad():
            return model(inputs_embeds=torch.stack(rows)[None], use_cache=False) \
                .logits[0].numpy()

    def greedy(ids, image):
        seq, out = list(ids), []
        for _ in range(N_GREEDY):
            out.append(int(np.argmax(run(seq, image)[-1])))
            seq.append(out[-1])
        return out

    image = ref["image_features_" + ref["prompt_image"]]
    err = float(np.abs(run(ref["prompt_ids"], image) - np.array(ref["logits"])).max())
    terr = float(np.abs(run(ref["text_prompt_ids"], None) - np.array(ref["text_logits"])).max())
    g = greedy(ref["prompt_ids"], image)
    full = run(ref["prompt_ids"] + ref["greedy_ids"][:N_GREEDY - 1], image)
    derr = float(np.abs(full[len(ref["prompt_ids"]):] - np.array(ref["decode_logits"])).max())
    tg = greedy(ref["text_prompt_ids"], None)
    check = {"what": "transformers 5.25 YoutuForCausalLM in float64 (eager, every norm eps "
                     f"{cfg.rms_norm_eps}), the prompt's image rows = llama.cpp's embeddings",
             "logits_max_abs_err": float(f32s(err)),
             "decode_logits_max_abs_err": float(f32s(derr)),
             "text_logits_max_abs_err": float(f32s(terr)),
             "greedy_ids_match": g == ref["greedy_ids"],
             "text_greedy_ids_match": tg == ref["text_greedy_ids"]}
    print(f"transformers vs llama.cpp: prompt logits {err:.3g}, decode logits {derr:.3g}, "
          f"text logits {terr:.3g}, greedy "
          f"{'==' if g == ref['greedy_ids'] else '!='}, text greedy "
          f"{'==' if tg == ref['text_greedy_ids'] else '!='}")
    if max(err, derr, terr) > 1e-5 or g != ref["greedy_ids"] or tg != ref["text_greedy_ids"]:
        sys.exit("llama.cpp's decoder does not match transformers'")
    line = '  "transformers_check": null,\n'
    assert text.count(line) == 1
    with open(path, "w") as f:
        f.write(text.replace(line, f'  "transformers_check": {json.dumps(check)},\n'))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("phase", nargs="?", default="all",
                    choices=["all", "write", "convert", "reference", "crosscheck",
                             "_convert_one"])
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp source (converter, gguf-py)")
    ap.add_argument("--torch-python", default=sys.executable)
    ap.add_argument("--llama-python", default=sys.executable)
    ap.add_argument("--work", default="/tmp/youturef-work")
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:len(argv) - len(rest) - (1 if rest else 0)])
    args.rest = rest
    os.makedirs(args.work, exist_ok=True)
    if args.phase == "all":
        common = ["--llama-cpp", args.llama_cpp, "--work", args.work]
        me = os.path.abspath(__file__)
        for phase, py in (("write", args.torch_python), ("convert", args.torch_python),
                          ("reference", args.llama_python),
                          ("crosscheck", args.torch_python)):
            subprocess.run([py, me, phase] + common, check=True)
        return
    {"write": cmd_write, "convert": cmd_convert, "reference": cmd_reference,
     "crosscheck": cmd_crosscheck, "_convert_one": cmd_convert_one}[args.phase](args)


if __name__ == "__main__":
    main()
