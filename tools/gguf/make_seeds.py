#!/usr/bin/env python3
"""Writes the small GGUF files under tests/data/gguf/seeds with PyPI's `gguf` package (llama.cpp's
own writer): seeds of fuzz_gguf, and models the loader's tests run (tests/gguf_reference.py, case
seeds). Deterministic; run once from the repository root with the project's venv:

    .venv/bin/python tools/gguf/make_seeds.py

- tiny-llama.gguf: arch llama, 1 layer, hidden 32, 2 heads of 16, 1 KV head, FFN 64, every
  tensor type the loader runs (F32 norms, F16, BF16, Q8_0, Q4_0, Q4_1 matrices), the SentencePiece
  vocabulary of tests/data/gguf/stories260K.gguf and a chat template;
- tiny-qwen2.gguf: arch qwen2 (q/k/v biases, untied head), a byte-level BPE vocabulary
  (tokenizer.ggml.model gpt2, pre qwen2) of the 256 byte symbols and a few merges.
"""
import os

import numpy as np
import gguf
from gguf import quants

T = gguf.GGMLQuantizationType
OUT = os.path.join("tests", "data", "gguf", "seeds")
rng = np.random.default_rng(20261206)


def mat(rows, cols, scale=0.08):
    return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)


def add(wr, name, a, qtype):
    if qtype == T.F32:
        wr.add_tensor(name, a.astype(np.float32))
    elif qtype == T.F16:
        wr.add_tensor(name, a.astype(np.float16))
    elif qtype == T.BF16:
        u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        wr.add_tensor(name, ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16), raw_dtype=T.BF16)
    else:
        wr.add_tensor(name, quants.quantize(a, qtype), raw_dtype=qtype)


def header(wr, arch, vocab, hidden=32, heads=2, kv=1, ffn=64, layers=1):
    wr.add_context_length(256)
    wr.add_embedding_length(hidden)
    wr.add_block_count(layers)
    wr.add_feed_forward_length(ffn)
    wr.add_rope_dimension_count(hidden // heads)
    wr.add_head_count(heads)
    wr.add_head_count_kv(kv)
    wr.add_layer_norm_rms_eps(1e-6)
    wr.add_rope_freq_base(10000.0)


def finish(wr):
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def tiny_llama():
    src = gguf.GGUFReader(os.path.join("tests", "data", "gguf", "stories260K.gguf")).fields
    toks = [bytes(src["tokenizer.ggml.tokens"].parts[i]) for i in src["tokenizer.ggml.tokens"].data]
    wr = gguf.GGUFWriter(os.path.join(OUT, "tiny-llama.gguf"), "llama")
    header(wr, "llama", len(toks))
    wr.add_tokenizer_model("llama")
    wr.add_token_list(toks)
    wr.add_token_scores([float(src["tokenizer.ggml.scores"].parts[i][0]) for i in src["tokenizer.ggml.scores"].data])
    wr.add_token_types([int(src["tokenizer.ggml.token_type"].parts[i][0]) for i in src["tokenizer.ggml.token_type"].data])
    wr.add_bos_token_id(1)
    wr.add_eos_token_id(2)
    wr.add_unk_token_id(0)
    wr.add_chat_template("{% for m in messages %}{{ bos_token }}{{ m['content'] }}{% endfor %}")
    v = len(toks)
    add(wr, "token_embd.weight", mat(v, 32), T.Q4_0)
    add(wr, "output_norm.weight", 1 + mat(1, 32, 0.1)[0], T.F32)
    add(wr, "blk.0.attn_norm.weight", 1 + mat(1, 32, 0.1)[0], T.F32)
    add(wr, "blk.0.ffn_norm.weight", 1 + mat(1, 32, 0.1)[0], T.F32)
    add(wr, "blk.0.attn_q.weight", mat(32, 32), T.F16)
    add(wr, "blk.0.attn_k.weight", mat(16, 32), T.BF16)
    add(wr, "blk.0.attn_v.weight", mat(16, 32), T.Q8_0)
    add(wr, "blk.0.attn_output.weight", mat(32, 32), T.Q4_1)
    add(wr, "blk.0.ffn_gate.weight", mat(64, 32), T.Q8_0)
    add(wr, "blk.0.ffn_up.weight", mat(64, 32), T.Q4_0)
    add(wr, "blk.0.ffn_down.weight", mat(32, 64), T.Q4_1)
    finish(wr)


def byte_symbols():
    # GPT-2's byte -> printable character table.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def tiny_qwen2():
    sym = byte_symbols()
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("e", "r"), ("o", "n"),
              ("Ġ", "w"), ("Ġ", "s"), ("r", "e")]
    toks = sym + ["".join(m) for m in merges] + ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    types = [1] * (len(toks) - 3) + [3, 3, 3]
    wr = gguf.GGUFWriter(os.path.join(OUT, "tiny-qwen2.gguf"), "qwen2")
    header(wr, "qwen2", len(toks))
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre("qwen2")
    wr.add_token_list(toks)
    wr.add_token_types(types)
    wr.add_token_merges([f"{a} {b}" for a, b in merges])
    wr.add_eos_token_id(len(toks) - 1)
    wr.add_bos_token_id(len(toks) - 3)
    wr.add_add_bos_token(False)
    wr.add_chat_template("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                         "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>"
                         "assistant\n{% endif %}")
    v = len(toks)
    add(wr, "token_embd.weight", mat(v, 32), T.F16)
    add(wr, "output.weight", mat(v, 32), T.Q8_0)
    add(wr, "output_norm.weight", 1 + mat(1, 32, 0.1)[0], T.F32)
    add(wr, "blk.0.attn_norm.weight", 1 + mat(1, 32, 0.1)[0], T.F32)
    add(wr, "blk.0.ffn_norm.weight", 1 + mat(1, 32, 0.1)[0], T.F32)
    for n, rows in (("q", 32), ("k", 16), ("v", 16)):
        add(wr, f"blk.0.attn_{n}.weight", mat(rows, 32), T.Q8_0)
        add(wr, f"blk.0.attn_{n}.bias", mat(1, rows, 0.03)[0], T.F32)
    add(wr, "blk.0.attn_output.weight", mat(32, 32), T.Q4_0)
    add(wr, "blk.0.ffn_gate.weight", mat(64, 32), T.BF16)
    add(wr, "blk.0.ffn_up.weight", mat(64, 32), T.F32)
    add(wr, "blk.0.ffn_down.weight", mat(32, 64), T.Q4_1)
    finish(wr)


os.makedirs(OUT, exist_ok=True)
tiny_llama()
tiny_qwen2()
for f in sorted(os.listdir(OUT)):
    print(f, os.path.getsize(os.path.join(OUT, f)), "bytes")
