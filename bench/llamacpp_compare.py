#!/usr/bin/env python3
"""mlxcel and llama.cpp side by side on the same random-weight model, the same machine and the
same threads (issue 27's peer comparison, reproducible from PyPI alone).

1. `mlxcel mkmodel` writes a Llama-family checkpoint of a real shape (default SmolLM2-360M);
2. PyPI's `gguf` package (llama.cpp's own writer and quantizers) writes it as GGUF files of the
   types asked (F32, BF16, Q8_0, Q4_0), laid out as llama.cpp's converter lays out a llama
   (q/k rows permuted, its tensor names, the byte-level BPE vocabulary and merges);
3. llama.cpp runs each file through `llama-cpp-python` (which builds llama.cpp from source at
   install: `--install` makes a virtual environment under WORK with the pinned version, else
   `--llama-python` names a Python that has it), mlxcel runs the same file (`mlxcel bench -m
   FILE.gguf`, which also measures the machine's bandwidth and peak in the same run);
4. the two engines alternate, type by type, for --reps rounds (the order flips each round);
   the medians go to stdout as a table, and with --out into docs/performance.md between the
   markers <!-- llamacpp:begin --> and <!-- llamacpp:end -->.

Both engines get the same prompt ids (a fixed pseudo-random stream), prefill them in one call
(llama.cpp's n_batch = n_ubatch = the prompt) and then decode --gen tokens one at a time at that
depth. llama.cpp's times are wall-clock around llama_decode from Python (the per-call Python
overhead, about 0.1 ms, is inside its decode time).

Usage: python3 bench/llamacpp_compare.py --mlxcel build/mlxcel [--install | --llama-python PY]
         [--preset smollm2-360m] [--types F32,BF16,Q8_0,Q4_0] [--prompt 512] [--gen 64]
         [--threads 2] [--reps 3] [--work DIR] [--out docs/performance.md]
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time

import numpy as np

try:
    import gguf
    from gguf import quants
except ImportError:
    sys.exit("llamacpp_compare: the pinned `gguf` package is missing (tests/requirements.txt; "
             "run with the project's .venv/bin/python)")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "gguf"))
from llama_layout import gguf_name, permute  # noqa: E402

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
T = gguf.GGMLQuantizationType
TYPES = {"F32": T.F32, "BF16": T.BF16, "Q8_0": T.Q8_0, "Q4_0": T.Q4_0}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---- The GGUF file (llama.cpp's converter's layout of a llama) ----

def read_f32_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
    out = {}
    data = np.memmap(path, dtype=np.uint8, mode="r")
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            sys.exit(f"llamacpp_compare: {name} is {info['dtype']}: mkmodel writes f32 here")
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[base + b:base + e], dtype=np.float32).reshape(info["shape"])
    return out


def add_tensor(wr, name, a, qtype):
    # Norms and rows that are no multiple of a block stay F32, as the converter keeps them.
    if a.ndim == 1 or qtype == T.F32 or (qtype != T.BF16 and a.shape[-1] % 32 != 0):
        wr.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))
    elif qtype == T.BF16:
        u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        wr.add_tensor(name, ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16),
                      raw_dtype=T.BF16)
    else:
        wr.add_tensor(name, quants.quantize(np.ascontiguousarray(a, dtype=np.float32), qtype),
                      raw_dtype=qtype)


def write_gguf(model_dir, path, qtype):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    tok = json.load(open(os.path.join(model_dir, "tokenizer.json")))
    if cfg["model_type"] != "llama":
        sys.exit(f"llamacpp_compare: model_type {cfg['model_type']}: only llama presets are laid "
                 "out as llama.cpp's converter does here")
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    wr = gguf.GGUFWriter(path, "llama")
    wr.add_context_length(cfg["max_position_embeddings"])
    wr.add_embedding_length(cfg["hidden_size"])
    wr.add_block_count(cfg["num_hidden_layers"])
    wr.add_feed_forward_length(cfg["intermediate_size"])
    wr.add_rope_dimension_count(cfg.get("head_dim") or cfg["hidden_size"] // heads)
    wr.add_head_count(heads)
    wr.add_head_count_kv(kv)
    wr.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    wr.add_rope_freq_base(cfg.get("rope_theta", 10000.0))
    wr.add_file_type({T.F32: 0, T.BF16: 32, T.Q8_0: 7, T.Q4_0: 2}[qtype])
    vocab = {**tok["model"]["vocab"], **{a["content"]: a["id"] for a in tok["added_tokens"]}}
    tokens = [None] * cfg["vocab_size"]
    for t, i in vocab.items():
        tokens[i] = t
    special = {a["id"] for a in tok["added_tokens"] if a.get("special")}
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre("llama-bpe")
    wr.add_token_list([t if t is not None else f"[PAD{i}]" for i, t in enumerate(tokens)])
    wr.add_token_types([3 if i in special else 1 for i in range(len(tokens))])
    merges = tok["model"].get("merges", [])
    wr.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    wr.add_bos_token_id(cfg["bos_token_id"])
    wr.add_eos_token_id(cfg["eos_token_id"] if isinstance(cfg["eos_token_id"], int)
                        else cfg["eos_token_id"][0])
    w = read_f32_safetensors(os.path.join(model_dir, "model.safetensors"))
    for hf in sorted(w):
        a = w[hf]
        if hf.endswith("q_proj.weight"):
            a = permute(a, heads)
        elif hf.endswith("k_proj.weight"):
            a = permute(a, kv)
        add_tensor(wr, gguf_name(hf), a, qtype)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


# ---- The two engines ----

def prompt_ids(n, vocab):
    x, out = 0x9E3779B9, []
    for _ in range(n):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out.append(3 + x % (vocab - 3))
    return out


# Runs in the llama-cpp-python environment: one warm-up, then the prompt in one llama_decode
# and `gen` single-token calls; prints prefill and decode tok/s.
LLAMA_RUN = r"""
import json, sys, time
from llama_cpp import Llama
path, ids, gen, threads = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
n = len(ids)
llm = Llama(model_path=path, n_ctx=n + gen + 8, n_threads=threads, n_threads_batch=threads,
            n_batch=n, n_ubatch=n, verbose=False)
llm.eval(ids[:8]); llm.reset()
t0 = time.perf_counter(); llm.eval(ids); t1 = time.perf_counter()
for i in range(gen):
    llm.eval([ids[i % n]])
t2 = time.perf_counter()
print(json.dumps({"prefill_tok_s": n / (t1 - t0), "decode_tok_s": gen / (t2 - t1)}))
"""


def run_llama(py, path, ids, gen, threads):
    p = subprocess.run([py, "-c", LLAMA_RUN, path, json.dumps(ids), str(gen), str(threads)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        how = (f"signal {-p.returncode}" if p.returncode < 0 else f"exit {p.returncode}")
        hint = (" (an illegal instruction: llama.cpp was built for instructions this machine "
                "cannot run; reinstall with --install --cmake-args, e.g. '-DGGML_NATIVE=OFF "
                "-DGGML_AVX2=ON -DGGML_AVX512=ON')" if p.returncode == -4 else "")
        sys.exit(f"llamacpp_compare: llama.cpp failed on {os.path.basename(path)} ({how}){hint}:"
                 f"\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_mlxcel(mlxcel, path, prompt, gen, threads):
    out = subprocess.run([mlxcel, "bench", "-m", path, "--prompt", str(prompt), "--gen", str(gen),
                          "--threads", str(threads), "--reps", "1", "--ctx",
                          str(prompt + gen + 8), "--chunk", str(prompt), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def install(work, cmake_args):
    venv = os.path.join(work, "llama-venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        print(f"installing {LLAMA_CPP_PYTHON} (builds llama.cpp: minutes)", file=sys.stderr)
        env = dict(os.environ, CMAKE_ARGS=cmake_args) if cmake_args else None
        subprocess.run([py, "-m", "pip", "install", "-q", "--no-cache-dir", LLAMA_CPP_PYTHON],
                       check=True, env=env)
    return py


def render(rows, a, machine):
    lines = [
        f"Measured by `bench/llamacpp_compare.py --preset {a.preset} --prompt {a.prompt} --gen "
        f"{a.gen} --threads {a.threads} --reps {a.reps}` on {machine} ({LLAMA_CPP_PYTHON}; the "
        "same GGUF file for both engines; medians of interleaved runs; bandwidth measured by "
        "mlxcel bench around its own runs).",
        "",
        "| type | prefill tok/s mlxcel | llama.cpp | ratio | decode tok/s mlxcel | llama.cpp | ratio "
        "| mlxcel decode % of limit |",
        "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['type']} | {r['m_pre']:.1f} | {r['l_pre']:.1f} | {r['m_pre'] / r['l_pre']:.2f}x "
            f"| {r['m_dec']:.2f} | {r['l_dec']:.2f} | {r['m_dec'] / r['l_dec']:.2f}x "
            f"| {r['pct']:.0f}% |")
    return "\n".join(lines) + "\n"


def write_section(path, text):
    begin, end = "<!-- llamacpp:begin -->", "<!-- llamacpp:end -->"
    doc = open(path).read() if os.path.exists(path) else ""
    block = f"{begin}\n{text}{end}"
    if begin in doc and end in doc:
        doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    else:
        doc += f"\n## Side by side with llama.cpp\n\n{block}\n"
    with open(path, "w") as f:
        f.write(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlxcel", required=True)
    ap.add_argument("--install", action="store_true",
                    help=f"install {LLAMA_CPP_PYTHON} into WORK/llama-venv")
    ap.add_argument("--cmake-args", default="",
                    help="CMAKE_ARGS for llama.cpp's build at --install (default: its own, native)")
    ap.add_argument("--llama-python", help="a Python with llama-cpp-python installed")
    ap.add_argument("--preset", default="smollm2-360m", help="an mkmodel llama preset")
    ap.add_argument("--types", default="F32,BF16,Q8_0,Q4_0")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", default="/tmp/mlxcel-llamacpp")
    ap.add_argument("--out", help="write the table into this markdown file")
    a = ap.parse_args()
    types = a.types.split(",")
    for t in types:
        if t not in TYPES:
            ap.error(f"unknown type {t} (known: {', '.join(TYPES)})")
    if not a.install and not a.llama_python:
        ap.error("--install or --llama-python PY is required")
    os.makedirs(a.work, exist_ok=True)
    py = install(a.work, a.cmake_args) if a.install else a.llama_python
    model = os.path.join(a.work, a.preset)
    subprocess.run([a.mlxcel, "mkmodel", "--arch", "llama", "--preset", a.preset, "-o", model,
                    "--force", "-q"], check=True)
    vocab = json.load(open(os.path.join(model, "config.json")))["vocab_size"]
    ids = prompt_ids(a.prompt, vocab)
    files = {}
    for t in types:
        files[t] = os.path.join(a.work, f"{a.preset}-{t}.gguf")
        if not os.path.exists(files[t]):
            print(f"writing {files[t]}", file=sys.stderr)
            write_gguf(model, files[t], TYPES[t])
    res = {t: {"m_pre": [], "m_dec": [], "l_pre": [], "l_dec": [], "pct": []} for t in types}
    machine = ""
    for rep in range(a.reps):
        for t in types:
            order = ("mlxcel", "llama") if (rep % 2 == 0) else ("llama", "mlxcel")
            for eng in order:
                if eng == "mlxcel":
                    m = run_mlxcel(a.mlxcel, files[t], a.prompt, a.gen, a.threads)
                    res[t]["m_pre"].append(m["prefill_tok_s"])
                    res[t]["m_dec"].append(m["decode_tok_s"])
                    res[t]["pct"].append(m["decode_pct_of_limit"])
                    machine = f"{m['threads']} threads, {m['bandwidth_median_gbs']:.1f} GB/s"
                else:
                    r = run_llama(py, files[t], ids, a.gen, a.threads)
                    res[t]["l_pre"].append(r["prefill_tok_s"])
                    res[t]["l_dec"].append(r["decode_tok_s"])
            print(f"rep {rep + 1} {t}: mlxcel {res[t]['m_dec'][-1]:.2f} tok/s decode, llama.cpp "
                  f"{res[t]['l_dec'][-1]:.2f}", file=sys.stderr)
    rows = [{"type": t, **{k: statistics.median(v) for k, v in res[t].items()}} for t in types]
    text = render(rows, a, machine)
    print(text)
    if a.out:
        write_section(a.out, text)


if __name__ == "__main__":
    main()
