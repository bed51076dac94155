#!/usr/bin/env python3
"""GGUF checkpoints against references nobody here wrote (ctest gguf_reference_<case>).

Usage: gguf_reference.py MLXCEL SOURCE_DIR WORK_DIR CASE

Cases:
  llamacpp  tests/data/gguf/stories260K.gguf (written by llama.cpp's own converter, the file its
            CI uses) gives logits bit-identical to models/stories260K (the same weights in
            Hugging Face layout), the same tokens on test strings and the same generated text.
  F32 F16 BF16 Q8_0 Q4_0 Q4_1
            PyPI's `gguf` package (llama.cpp's writer) writes stories260K's weights, with the
            llama converter's Q/K row permutation, the tokenizer copied from llama.cpp's file and
            a chat template. Exact types: logits bit-identical to the safetensors checkpoint at
            the same precision (F16 / BF16: --precision f16 / bf16, whose conversion rounds as
            numpy does). Quantized types: the `gguf` package's own numpy dequantization of the
            same blocks, written as an f32 safetensors checkpoint, is the reference: our
            `--quant none` (our unpacking, then f32) must equal it bit for bit, and the quantized
            run (the packed weights through the fused kernels) must stay within a bound measured
            and printed here, with the same greedy tokens.
  chat      `mlxcel generate --chat` and `mlxcel template` use the file's chat template.
  seeds     each file of tests/data/gguf/seeds (tools/gguf/make_seeds.py: llama with every
            tensor type in one file, qwen2 with biases, an untied head and a byte-level BPE
            vocabulary) against a Hugging Face folder this script writes from gguf's reader and
            dequantizer: config.json from the metadata, the tensors dequantized, renamed and
            (llama) un-permuted; `--quant none` bit-identical, the packed run within a bound,
            generate --chat running on the file's template.
  kquants   a llama of hidden 256 with Q4_K / Q5_K / Q6_K tensors (random blocks) against gguf's
            dequantization, also on the interpreter (the decompositions unpack exactly).
  fixtures  $MX_SHARED/fixtures' qwen2 (q/k/v biases, tied head), qwen3 (q/k norms, head_dim
            apart from hidden / heads) and phi3 (fused qkv and gate_up, partial rotary 0.75, a
            sliding window) written as llama.cpp's converter writes those architectures (no
            Q/K permutation): logits bit-identical to the folders'.
  errors    files the loader must refuse, each with its message: an architecture we do not
            run, a tensor type we do not run (Q4_K), a missing tensor, a truncated file, a
            tensor with no counterpart, Llama 3.1's rope_freqs, a wrong metadata type.
  vocab     tokenizer-only GGUF files written with the `gguf` package from the vocabularies of
            $MX_SHARED/tokenizers (llama2's SentencePiece pieces and scores from llama2.c's
            tokenizer.bin: tokenizer.ggml.model llama; llama3 and qwen3's byte-level BPE with
            their merges: gpt2 with pre llama-bpe / qwen2), each encoding the 46 inputs of
            llama.cpp's vocabulary tests to the ids transformers gives (hf-reference/*.out).
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "gguf"))
from llama_layout import LAYER, TOP as NAMES, gguf_name, permute, unpermute  # noqa: E402

try:
    import gguf
    from gguf import quants
except ImportError:
    print("gguf_reference: the pinned `gguf` package is missing (tests/requirements.txt)")
    sys.exit(1)

MLXCEL, SRC, WORK, CASE = sys.argv[1:5]
MODEL = os.path.join(SRC, "models", "stories260K")
LLAMACPP = os.path.join(SRC, "tests", "data", "gguf", "stories260K.gguf")
IDS = [1, 403, 407, 261, 378, 300, 9, 427, 261, 489, 11, 258, 295, 330, 270, 261]
TEXTS = ["Once upon a time", "  two  spaces", "line\nbreak", "caf\u00e9 \u4f60\u597d", "",
         "<s> inside", "Lily's big, red ball!"]
os.makedirs(WORK, exist_ok=True)


def run(*args):
    p = subprocess.run([MLXCEL, *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"mlxcel {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def logits(model, *opts, greedy=8):
    out = os.path.join(WORK, f"logits_{len(os.listdir(WORK))}.npy")
    run("logits", "-m", model, "--ids", ",".join(map(str, IDS)), "-o", out, "--greedy",
        str(greedy), "--ctx", "64", *opts)
    return np.load(out)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=np.float32).reshape(info["shape"])
    return out


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype=np.float32)
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def write_gguf(path, qtype, chat_template=None):
    """stories260K as llama.cpp's converter lays it out; returns the dequantized HF tensors."""
    cfg = json.load(open(os.path.join(MODEL, "config.json")))
    w = read_safetensors(os.path.join(MODEL, "model.safetensors"))
    src = gguf.GGUFReader(LLAMACPP)
    wr = gguf.GGUFWriter(path, "llama")
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    wr.add_context_length(cfg["max_position_embeddings"])
    wr.add_embedding_length(cfg["hidden_size"])
    wr.add_block_count(cfg["num_hidden_layers"])
    wr.add_feed_forward_length(cfg["intermediate_size"])
    wr.add_rope_dimension_count(cfg["hidden_size"] // heads)
    wr.add_head_count(heads)
    wr.add_head_count_kv(kv)
    wr.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    wr.add_rope_freq_base(cfg.get("rope_theta", 10000.0))
    wr.add_file_type(int(qtype) if qtype != gguf.GGMLQuantizationType.F32 else 0)
    f = src.fields
    wr.add_tokenizer_model("llama")
    wr.add_token_list([bytes(f["tokenizer.ggml.tokens"].parts[i]) for i in f["tokenizer.ggml.tokens"].data])
    wr.add_token_scores([float(f["tokenizer.ggml.scores"].parts[i][0]) for i in f["tokenizer.ggml.scores"].data])
    wr.add_token_types([int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data])
    wr.add_bos_token_id(1)
    wr.add_eos_token_id(2)
    wr.add_unk_token_id(0)
    wr.add_add_bos_token(True)
    wr.add_add_eos_token(False)
    if chat_template:
        wr.add_chat_template(chat_template)
    deq = {}
    for hf in sorted(w):
        a = w[hf]
        if hf.endswith("q_proj.weight"):
            a = permute(a, heads)
        elif hf.endswith("k_proj.weight"):
            a = permute(a, kv)
        # Rows whose length is not a multiple of the block stay F32, as llama.cpp's converter
        # falls back for them (stories260K's down_proj: 172 columns).
        if a.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32 or (
                qtype not in (gguf.GGMLQuantizationType.F16,) and a.shape[-1] % 32 != 0):
            wr.add_tensor(gguf_name(hf), a.astype(np.float32))
            d = a.astype(np.float32)
        elif qtype == gguf.GGMLQuantizationType.F16:
            wr.add_tensor(gguf_name(hf), a.astype(np.float16))
            d = a.astype(np.float16).astype(np.float32)
        else:
            q = quants.quantize(a.astype(np.float32), qtype)
            wr.add_tensor(gguf_name(hf), q, raw_dtype=qtype)
            d = quants.dequantize(q, qtype).astype(np.float32).reshape(a.shape)
        if hf.endswith("q_proj.weight"):
            d = unpermute(d, heads)
        elif hf.endswith("k_proj.weight"):
            d = unpermute(d, kv)
        deq[hf] = d
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return deq


def reference_dir(name, tensors):
    d = os.path.join(WORK, name)
    os.makedirs(d, exist_ok=True)
    for fn in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(MODEL, fn), "rb") as a, open(os.path.join(d, fn), "wb") as b:
            b.write(a.read())
    write_safetensors(os.path.join(d, "model.safetensors"), tensors)
    return d


def same_tokens(a, b):
    for t in TEXTS:
        x, y = run("tokenize", "-m", a, "--json", t), run("tokenize", "-m", b, "--json", t)
        if x != y:
            sys.exit(f"tokens of {t!r} differ: {a}: {x.strip()} vs {b}: {y.strip()}")


def check_equal(name, got, want):
    diff = float(np.max(np.abs(got.astype(np.float64) - want)))
    print(f"{name}: max |logit difference| {diff:.3g} over {got.shape}")
    if not np.array_equal(got, want):
        sys.exit(f"{name}: logits differ (max {diff:.3g}), expected bit-identical")


def against_dequantized(path, bound, interp=False):
    """The file vs a Hugging Face folder written from gguf's reader and dequantizer: config.json
    from the metadata, every tensor dequantized, renamed and (llama) un-permuted. --quant none
    (our unpacking) and, with interp, the interpreter's packed graph must equal it bit for bit;
    the cpu backend's packed run must stay within bound (exact kernels; the default ones within
    a bound relative to the logits)."""
    fn = os.path.basename(path)
    r = gguf.GGUFReader(path)
    f = r.fields
    arch = bytes(f["general.architecture"].parts[-1]).decode()
    val = lambda k, d=None: f[f"{arch}.{k}"].parts[-1][0].item() if f"{arch}.{k}" in f else d
    heads, kv = val("attention.head_count"), val("attention.head_count_kv")
    hf_of = {v.split(".")[0]: k for k, v in NAMES.items()}
    tensors = {}
    for t in r.tensors:
        a = quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
        a = a.reshape(list(reversed([int(x) for x in t.shape])))
        stem, kind = t.name.rsplit(".", 1)
        if stem in hf_of:
            name = hf_of[stem].rsplit(".", 1)[0] + "." + kind
        else:
            _, layer, g = stem.split(".")
            name = f"model.layers.{layer}.{[k for k, v in LAYER.items() if v == g][0]}.{kind}"
        if arch == "llama" and stem.endswith("attn_q"):
            a = unpermute(a, heads)
        if arch == "llama" and stem.endswith("attn_k"):
            a = unpermute(a, kv)
        tensors[name] = a
    vocab = tensors["model.embed_tokens.weight"].shape[0]
    cfg = {"model_type": arch, "vocab_size": vocab, "hidden_size": val("embedding_length"),
           "intermediate_size": val("feed_forward_length"),
           "num_hidden_layers": val("block_count"), "num_attention_heads": heads,
           "num_key_value_heads": kv, "max_position_embeddings": val("context_length"),
           "rms_norm_eps": val("attention.layer_norm_rms_epsilon"),
           "rope_theta": val("rope.freq_base", 10000.0),
           "tie_word_embeddings": "lm_head.weight" not in tensors}
    d = os.path.join(WORK, fn + ".hf")
    os.makedirs(d, exist_ok=True)
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    write_safetensors(os.path.join(d, "model.safetensors"), tensors)
    ids = ",".join(str(i % vocab) for i in IDS)

    def lg(model, *opts):
        out = os.path.join(WORK, f"{fn}_{len(os.listdir(WORK))}.npy")
        run("logits", "-m", model, "--ids", ids, "-o", out, "--ctx", "64", *opts)
        return np.load(out)

    want = lg(d)
    check_equal(f"{fn} --quant none vs gguf's dequantization", lg(path, "--quant", "none"), want)
    if interp:
        check_equal(f"{fn} packed vs gguf's dequantization, both on the interpreter",
                    lg(path, "--backend", "interp"), lg(d, "--backend", "interp"))
    # 'exact' sums the f32 products in another order; the default kernels quantize activations
    # to 16 bits on AVX-512 VNNI machines (decode and prefill), an error that grows with the
    # logits: measured 6.6e-4 of the largest on kquants' random blocks (logits up to 1e3).
    scale = float(np.max(np.abs(want)))
    for kernel, b in (("exact", bound), ("auto", max(bound, 2e-3 * scale))):
        os.environ["MLXCEL_QUANT_KERNEL"] = kernel
        got = lg(path)
        del os.environ["MLXCEL_QUANT_KERNEL"]
        diff = float(np.max(np.abs(got.astype(np.float64) - want)))
        print(f"{fn} packed on the cpu backend ({kernel}) vs gguf's dequantization: max |logit "
              f"difference| {diff:.3g} (bound {b:g}; logits up to {scale:.3g})")
        if diff > b:
            sys.exit(f"{fn}: max difference {diff:.3g} over the bound {b:g} ({kernel} kernels)")


if CASE == "llamacpp":
    check_equal("llama.cpp stories260K.gguf vs models/stories260K", logits(LLAMACPP), logits(MODEL))
    same_tokens(LLAMACPP, MODEL)
    a = run("generate", "-m", LLAMACPP, "-p", "Once upon a time", "-n", "48", "-q")
    b = run("generate", "-m", MODEL, "-p", "Once upon a time", "-n", "48", "-q")
    if a != b or len(a) < 60:
        sys.exit(f"generated text differs:\n{a}\nvs\n{b}")
    print("generate: same text:", a.strip()[:80], "...")
elif CASE in ("F32", "F16", "BF16"):
    qt = getattr(gguf.GGMLQuantizationType, CASE)
    path = os.path.join(WORK, f"stories260K-{CASE}.gguf")
    if CASE == "BF16":
        # gguf's writer stores BF16 from raw uint16 words: round to nearest even as torch does.
        write_gguf(path, gguf.GGMLQuantizationType.F32)
        r = gguf.GGUFReader(path)
        wr = gguf.GGUFWriter(path + ".tmp", "llama")
        for fld in r.fields.values():
            if fld.name.startswith("GGUF.") or fld.name == "general.architecture":
                continue
            vt = fld.types[0]
            if vt == gguf.GGUFValueType.ARRAY:
                et = fld.types[-1]
                vals = [bytes(fld.parts[i]) if et == gguf.GGUFValueType.STRING else fld.parts[i][0].item()
                        for i in fld.data]
                wr.add_array(fld.name, vals)
            elif vt == gguf.GGUFValueType.STRING:
                wr.add_string(fld.name, bytes(fld.parts[fld.data[0]]).decode())
            else:
                wr.add_key_value(fld.name, fld.parts[fld.data[0]][0].item(), vt)
        for t in r.tensors:
            a = np.array(t.data, dtype=np.float32).reshape(list(reversed([int(x) for x in t.shape])))
            if a.ndim == 2:
                u = a.view(np.uint32).astype(np.uint64)
                b16 = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
                wr.add_tensor(t.name, b16, raw_dtype=gguf.GGMLQuantizationType.BF16)
            else:
                wr.add_tensor(t.name, a)
        wr.write_header_to_file()
        wr.write_kv_data_to_file()
        wr.write_tensors_to_file()
        wr.close()
        os.replace(path + ".tmp", path)
    else:
        write_gguf(path, qt)
    prec = {"F32": "f32", "F16": "f16", "BF16": "bf16"}[CASE]
    check_equal(f"{CASE} gguf vs safetensors --precision {prec}", logits(path),
                logits(MODEL, "--precision", prec))
elif CASE in ("Q8_0", "Q4_0", "Q4_1"):
    qt = getattr(gguf.GGMLQuantizationType, CASE)
    path = os.path.join(WORK, f"stories260K-{CASE}.gguf")
    ref = reference_dir(f"deq-{CASE}", write_gguf(path, qt))
    want = logits(ref)
    check_equal(f"{CASE} gguf --quant none vs gguf's dequantization", logits(path, "--quant", "none"),
                want)
    # The mx.linear decompositions (the interpreter runs them) unpack the blocks exactly.
    check_equal(f"{CASE} gguf (packed) vs gguf's dequantization, both on the interpreter",
                logits(path, "--backend", "interp", greedy=2),
                logits(ref, "--backend", "interp", greedy=2))
    # The fused kernels: 'exact' sums in another order; the default may quantize activations.
    n = len(IDS)
    for kernel, bound in (("exact", 1e-4), ("auto", 5e-3)):
        os.environ["MLXCEL_QUANT_KERNEL"] = kernel
        got = logits(path)
        del os.environ["MLXCEL_QUANT_KERNEL"]
        diff = float(np.max(np.abs(got.astype(np.float64) - want)))
        print(f"{CASE} gguf on the cpu backend's fused kernels ({kernel}) vs gguf's dequantization "
              f"in f32: max |logit difference| {diff:.3g} (bound {bound:g}; logits up to "
              f"{float(np.max(np.abs(want))):.3g})")
        if diff > bound:
            sys.exit(f"{CASE}: max difference {diff:.3g} over the bound {bound:g}")
        if not np.array_equal(got[n - 1:].argmax(-1), want[n - 1:].argmax(-1)):
            sys.exit(f"{CASE}: greedy tokens differ ({kernel} kernels)")
elif CASE == "chat":
    tpl = ("{% for m in messages %}{{ bos_token }}[{{ m['role'] }}] {{ m['content'] }}\n"
           "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}")
    path = os.path.join(WORK, "stories260K-chat.gguf")
    write_gguf(path, gguf.GGMLQuantizationType.F32, chat_template=tpl)
    text = run("template", "-m", path, "-p", "Tell me a story", "--add-generation-prompt")
    want = "<s>[user] Tell me a story\n[assistant]"
    if text.rstrip("\n") != want:
        sys.exit(f"template: got {text!r}, want {want!r}")
    out = run("generate", "-m", path, "--chat", "-p", "Tell me a story", "-n", "16", "-q")
    if not out.strip():
        sys.exit("generate --chat printed nothing")
    same_tokens(path, MODEL)
    print("chat: template rendered from the file; reply:", out.strip()[:60])
elif CASE == "seeds":
    seeds = os.path.join(SRC, "tests", "data", "gguf", "seeds")
    for fn in sorted(os.listdir(seeds)):
        path = os.path.join(seeds, fn)
        against_dequantized(path, 5e-3)
        reply = run("generate", "-m", path, "--chat", "-p", "the cat", "-n", "4", "-q")
        print(f"{fn}: generate --chat ran ({len(reply)} bytes)")
elif CASE == "kquants":
    # K-quant blocks need rows of 256: a llama of hidden 256 whose blocks are random bytes with
    # small finite f16 super-block scales (gguf has no K-quant quantizer; its dequantizer is the
    # reference). Every K type on several tensors, the embedding (tied head) included.
    rng = np.random.default_rng(26)
    T = gguf.GGMLQuantizationType
    path = os.path.join(WORK, "kquants.gguf")
    wr = gguf.GGUFWriter(path, "llama")
    for k, v in (("context_length", 64), ("embedding_length", 256), ("block_count", 2),
                 ("feed_forward_length", 512), ("attention.head_count", 4),
                 ("attention.head_count_kv", 2)):
        wr.add_uint32(f"llama.{k}", v)
    wr.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-6)

    def kblocks(rows, cols, qt):
        nb, size = cols // 256, gguf.GGML_QUANT_SIZES[qt][1]
        b = rng.integers(0, 256, size=(rows, nb, size), dtype=np.uint8)
        d = (rng.uniform(0.2, 1.0, size=(rows, nb)) / (64 if qt == T.Q6_K else 512)).astype(np.float16)
        if qt == T.Q6_K:
            b[..., 208:210] = d.view(np.uint8).reshape(rows, nb, 2)
        else:
            b[..., 0:2] = d.view(np.uint8).reshape(rows, nb, 2)
            b[..., 2:4] = (d / 2).astype(np.float16).view(np.uint8).reshape(rows, nb, 2)
        return b.reshape(rows, nb * size)

    shapes = [("token_embd.weight", 512, 256, T.Q6_K)]
    for layer in range(2):
        shapes += [(f"blk.{layer}.attn_q.weight", 256, 256, T.Q4_K),
                   (f"blk.{layer}.attn_k.weight", 128, 256, T.Q5_K),
                   (f"blk.{layer}.attn_v.weight", 128, 256, T.Q6_K),
                   (f"blk.{layer}.attn_output.weight", 256, 256, T.Q5_K),
                   (f"blk.{layer}.ffn_gate.weight", 512, 256, T.Q6_K),
                   (f"blk.{layer}.ffn_up.weight", 512, 256, T.Q4_K),
                   (f"blk.{layer}.ffn_down.weight", 256, 512, T.Q4_K if layer else T.Q5_K)]
    for name, rows, cols, qt in shapes:
        wr.add_tensor(name, kblocks(rows, cols, qt), raw_dtype=qt)
    for name in ("output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight",
                 "blk.1.attn_norm.weight", "blk.1.ffn_norm.weight"):
        wr.add_tensor(name, (1 + 0.1 * rng.standard_normal(256)).astype(np.float32))
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    against_dequantized(path, 5e-3, interp=True)
elif CASE == "fixtures":
    shared = os.environ.get("MX_SHARED", os.path.join(SRC, "..", "shared"))
    fixtures = os.path.join(shared, "fixtures")
    if not os.path.isdir(fixtures):
        print(f"gguf_reference fixtures: SKIPPED: {fixtures} is absent")
        sys.exit(77)
    LAYER_MORE = dict(LAYER, **{"self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
                                "self_attn.qkv_proj": "attn_qkv", "mlp.gate_up_proj": "ffn_up"})
    for arch in ("qwen2", "qwen3", "phi3"):
        d = os.path.join(fixtures, arch)
        cfg = json.load(open(os.path.join(d, "config.json")))
        w = read_safetensors(os.path.join(d, "model.safetensors"))
        path = os.path.join(WORK, f"{arch}.gguf")
        wr = gguf.GGUFWriter(path, arch)
        heads = cfg["num_attention_heads"]
        hd = cfg.get("head_dim") or cfg["hidden_size"] // heads
        wr.add_context_length(cfg["max_position_embeddings"])
        wr.add_embedding_length(cfg["hidden_size"])
        wr.add_block_count(cfg["num_hidden_layers"])
        wr.add_feed_forward_length(cfg["intermediate_size"])
        wr.add_rope_dimension_count(int(hd * cfg.get("partial_rotary_factor", 1.0)))
        if cfg.get("sliding_window"):
            wr.add_uint32(f"{arch}.attention.sliding_window", cfg["sliding_window"])
        wr.add_head_count(heads)
        wr.add_head_count_kv(cfg["num_key_value_heads"])
        wr.add_key_length(hd)
        wr.add_value_length(hd)
        wr.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
        wr.add_rope_freq_base(cfg["rope_theta"])
        for hf in sorted(w):
            if hf in NAMES:
                name = NAMES[hf]
            else:
                parts = hf.split(".")
                name = f"blk.{parts[2]}.{LAYER_MORE['.'.join(parts[3:-1])]}.{parts[-1]}"
            wr.add_tensor(name, w[hf])
        wr.write_header_to_file()
        wr.write_kv_data_to_file()
        wr.write_tensors_to_file()
        wr.close()
        ids = json.load(open(os.path.join(d, "reference.json")))["prompt_ids"]
        outs = []
        for model in (path, d):
            out = os.path.join(WORK, f"{arch}_{len(outs)}.npy")
            run("logits", "-m", model, "--ids", ",".join(map(str, ids)), "-o", out, "--greedy", "8")
            outs.append(np.load(out))
        check_equal(f"{arch} fixture as GGUF vs its folder", outs[0], outs[1])
elif CASE == "errors":
    def tiny(path, arch="llama", tensors=None, extra=None):
        wr = gguf.GGUFWriter(path, arch)
        wr.add_embedding_length(32)
        wr.add_block_count(1)
        wr.add_feed_forward_length(64)
        wr.add_head_count(2)
        wr.add_head_count_kv(1)
        wr.add_context_length(64)
        wr.add_layer_norm_rms_eps(1e-6)
        for k, v in (extra or {}).items():
            wr.add_string(k, v)
        shapes = {"token_embd.weight": (64, 32), "output_norm.weight": (32,),
                  "blk.0.attn_norm.weight": (32,), "blk.0.ffn_norm.weight": (32,),
                  "blk.0.attn_q.weight": (32, 32), "blk.0.attn_k.weight": (16, 32),
                  "blk.0.attn_v.weight": (16, 32), "blk.0.attn_output.weight": (32, 32),
                  "blk.0.ffn_gate.weight": (64, 32), "blk.0.ffn_up.weight": (64, 32),
                  "blk.0.ffn_down.weight": (32, 64)}
        for name, shape in shapes.items():
            t = (tensors or {}).get(name, "F32")
            if t is None:
                continue
            a = np.full(shape, 0.01, dtype=np.float32)
            if t == "F32":
                wr.add_tensor(name, a)
            else:
                # Raw zero blocks, one per row: the loader refuses the type before it reads one.
                qt = getattr(gguf.GGMLQuantizationType, t)
                nbytes = gguf.GGML_QUANT_SIZES[qt][1]
                wr.add_tensor(name, np.zeros((shape[0], nbytes), dtype=np.uint8), raw_dtype=qt)
        for name in (tensors or {}):
            if name not in shapes:
                wr.add_tensor(name, np.ones((8,), dtype=np.float32))
        wr.write_header_to_file()
        wr.write_kv_data_to_file()
        wr.write_tensors_to_file()
        wr.close()
        return path

    def refused(path, want, status=1):
        p = subprocess.run([MLXCEL, "logits", "-m", path, "--ids", "1,2", "-o",
                            os.path.join(WORK, "x.npy")], capture_output=True, text=True)
        print(f"{os.path.basename(path)}: exit {p.returncode}: {p.stderr.strip()}")
        if p.returncode != status or want not in p.stderr:
            sys.exit(f"{path}: expected exit {status} and a message with {want!r}")

    ok = tiny(os.path.join(WORK, "ok.gguf"))
    run("logits", "-m", ok, "--ids", "1,2", "-o", os.path.join(WORK, "ok.npy"))
    refused(tiny(os.path.join(WORK, "arch.gguf"), arch="falcon"),
            "GGUF architecture 'falcon' is not supported")
    refused(tiny(os.path.join(WORK, "q5_0.gguf"), tensors={"blk.0.ffn_up.weight": "Q5_0"}),
            "tensor 'blk.0.ffn_up.weight' has type Q5_0 (supported: F32, F16, BF16, Q8_0, Q4_0, "
            "Q4_1, Q4_K, Q5_K, Q6_K)")
    refused(tiny(os.path.join(WORK, "missing.gguf"), tensors={"blk.0.ffn_up.weight": None}),
            "model.layers.0.mlp.up_proj.weight")
    refused(tiny(os.path.join(WORK, "extra.gguf"), tensors={"blk.0.attn_sinks.weight": "F32"}),
            "tensor 'blk.0.attn_sinks.weight' has no counterpart in the model")
    refused(tiny(os.path.join(WORK, "freqs.gguf"), tensors={"rope_freqs.weight": "F32"}),
            "rope_freqs.weight")
    refused(tiny(os.path.join(WORK, "scaling.gguf"), extra={"llama.rope.scaling.type": "yarn"}),
            "llama.rope.scaling.type 'yarn' is not supported")
    refused(tiny(os.path.join(WORK, "type.gguf"), extra={"llama.attention.head_count_kv": "one"}),
            "type.gguf: GGUF key 'llama.attention.head_count_kv' must be an integer, not string")
    data = open(ok, "rb").read()
    cut = os.path.join(WORK, "cut.gguf")
    open(cut, "wb").write(data[:len(data) - 100])
    refused(cut, "reach past the end of the file")
    bad = os.path.join(WORK, "magic.gguf")
    open(bad, "wb").write(b"GGUX" + data[4:])
    refused(bad, "not a GGUF file")
elif CASE == "vocab":
    shared = os.environ.get("MX_SHARED", os.path.join(SRC, "..", "shared"))
    toks_dir = os.path.join(shared, "tokenizers")
    if not os.path.isdir(os.path.join(toks_dir, "hf-reference")):
        print(f"gguf_reference vocab: SKIPPED: {toks_dir}/hf-reference is absent")
        sys.exit(77)

    def vocab_gguf(name, model, tokens, types, scores=None, merges=None, pre=None):
        path = os.path.join(WORK, f"vocab-{name}.gguf")
        wr = gguf.GGUFWriter(path, "llama")
        wr.add_tokenizer_model(model)
        if model == "llama":
            wr.add_bos_token_id(1)
            wr.add_eos_token_id(2)
            wr.add_unk_token_id(0)
        if pre:
            wr.add_tokenizer_pre(pre)
        wr.add_token_list(tokens)
        wr.add_token_types(types)
        if scores is not None:
            wr.add_token_scores(scores)
        if merges is not None:
            wr.add_token_merges(merges)
        wr.write_header_to_file()
        wr.write_kv_data_to_file()
        wr.write_tensors_to_file()
        wr.close()
        return path

    # llama2.c's tokenizer.bin: i32 max length, then per token f32 score, i32 length, bytes;
    # its exporter wrote "\u2581" as " " and <s> / </s> as "\n<s>\n" / "\n</s>\n".
    data = open(os.path.join(toks_dir, "llama2", "tokenizer.bin"), "rb").read()
    off, pieces, scores = 4, [], []
    while off < len(data):
        sc, n = struct.unpack("<fi", data[off:off + 8])
        pieces.append(data[off + 8:off + 8 + n].decode("utf-8").strip("\n") if n else "")
        scores.append(sc)
        off += 8 + n
    pieces = [p.replace(" ", "\u2581") for p in pieces]
    types = [2 if i == 0 else 3 if i in (1, 2) else
             6 if (p.startswith("<0x") and p.endswith(">") and len(p) == 6) else 1
             for i, p in enumerate(pieces)]
    files = {"llama-spm": vocab_gguf("llama-spm", "llama", pieces, types, scores=scores)}
    for name, folder, pre in (("llama-bpe", "llama3", "llama-bpe"), ("qwen2", "qwen3", "qwen2")):
        tj = json.load(open(os.path.join(toks_dir, folder, "tokenizer.json")))
        vocab = dict(tj["model"]["vocab"])
        special = set()
        for a in tj["added_tokens"]:
            vocab[a["content"]] = a["id"]
            if a["special"]:
                special.add(a["id"])
        toks = [None] * (max(vocab.values()) + 1)
        for t, i in vocab.items():
            toks[i] = t
        toks = [t if t is not None else f"[PAD{i}]" for i, t in enumerate(toks)]
        types = [3 if i in special else 1 for i in range(len(toks))]
        merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
        files[name] = vocab_gguf(name, "gpt2", toks, types, merges=merges, pre=pre)
    helper = os.environ.get("MX_GGUF_VOCAB", os.path.join(os.path.dirname(MLXCEL), "tests", "gguf_vocab"))
    for name, path in files.items():
        ref = os.path.join(toks_dir, "hf-reference", f"ggml-vocab-{name}.gguf")
        p = subprocess.run([helper, path, ref + ".inp", ref + ".out"], capture_output=True, text=True)
        print(p.stdout.strip(), p.stderr.strip())
        if p.returncode != 0 or "46/46" not in p.stdout:
            sys.exit(f"{name}: the GGUF vocabulary does not encode as transformers does")
else:
    sys.exit(f"unknown case {CASE}")
print("ok")
