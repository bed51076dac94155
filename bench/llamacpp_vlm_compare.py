#!/usr/bin/env python3
"""mlxcel and llama.cpp side by side on a vision-language model: one image prompt, the same
random-weight Youtu-VL checkpoint, the same machine and threads (issues 24 / 27: the peer
comparison of docs/performance.md's text table, for an image prompt).

1. The checkpoint is mlxcel's (`mlxcel mkmodel --arch youtu_vl --preset youtu-vl-4b --dtype
   bf16 -o DIR`: Youtu-VL-4B's SigLIP-2 tower over Youtu-LLM-2B's shape). llama.cpp's own
   converter (convert_hf_to_gguf.py of the llama.cpp source given by --llama-cpp, with its
   gguf-py, run by --torch-python: torch, transformers, safetensors) writes it once as the text
   GGUF (--outtype bf16) and the mmproj (--mmproj with the converter's default --outtype auto:
   bf16 matrices for a bf16 checkpoint, the patch embedding f32, norms and biases f32; the
   script prints the tensor types it finds). The converter does not know the hash of mkmodel's
   byte-level BPE pre-tokenizer: it is named "youtu" for it; llama.cpp is given token ids here,
   never text, so the name changes nothing that is timed.
2. mlxcel: `mlxcel bench -m DIR --image IMAGE --gen G --threads T --reps 1 --json` (one untimed
   image prompt, then the timed one; the vision tower's time, the time to first token, the
   prompt's prefill tok/s, the decode tok/s after it, and the machine's bandwidth / peak that
   the bench measures around the rep).
3. llama.cpp, through llama-cpp-python's ctypes bindings (libllama + libmtmd of --llama-python's
   llama-cpp-python, 0.3.36 from PyPI, built natively at install): the image file decoded by
   mtmd_helper_bitmap_init_from_file, mtmd_tokenize (its youtuvl preprocessing, image_max_tokens
   unset) and mtmd_encode_chunk (the vision tower; "image encode" below), then the prompt's
   prefill as mtmd's helper does it (llama_decode of the tokens before the image, of the image's
   embeddings, of the tokens after it), the first token's argmax, and G single-token decodes
   with an argmax each. One untimed run first, then one timed. llama.cpp's KV cache is its
   default f16; it runs twice per round, flash attention at its default (auto: what it resolves
   to is printed) and disabled.
4. The engines alternate for --reps rounds (the order flips each round); the medians go to
   stdout as a table, and with --out into a markdown file between <!-- llamacpp-vlm:begin -->
   and <!-- llamacpp-vlm:end -->.

Same work on both sides, checked before anything is printed: the prompt is mlxcel bench's
("Describe the image." after the image: BOS, <|vision_start|>, the image tokens,
<|vision_end|>, the text), its ids given to llama.cpp as they are; the image token counts, the
resized image (llama.cpp's clip log vs mlxcel's patch grid), the prompt lengths and the tokens
mtmd puts around the image must agree, else the script stops. Any missing tool, model or failed
run exits non-zero with a message; no partial table is printed.

Usage: python3 bench/llamacpp_vlm_compare.py --mlxcel build/mlxcel --model DIR \\
         --llama-cpp LLAMA_SRC --torch-python PY --llama-python PY [--image PNG] [--gen 16] \\
         [--threads 2] [--reps 3] [--work /tmp/mlxcel-vlm-llamacpp] [--out docs/performance.md]
(LLAMA_SRC: e.g. llama-cpp-python 0.3.36's sdist, vendor/llama.cpp; its Python needs only the
standard library and numpy.)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLAMA_CPP_PYTHON = "0.3.36"
# bench --image's words after the image (tools/mlxcel/bench_image.c, kText).
BENCH_TEXT = "Describe the image."


def die(msg):
    sys.exit(f"llamacpp_vlm_compare: {msg}")


# Runs under --torch-python: llama.cpp's converter in this process (argv: llama.cpp source, the
# checkpoint, the output, "mmproj" or "text"), then the output's tensor types as JSON.
CONVERT = r"""
import collections, json, sys
src, model, out, kind = sys.argv[1:5]
sys.path.insert(0, src)
sys.path.insert(1, src + "/gguf-py")
from conversion import base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "youtu"
import convert_hf_to_gguf
sys.argv = ["convert_hf_to_gguf.py", model, "--outfile", out]
sys.argv += ["--mmproj"] if kind == "mmproj" else ["--outtype", "bf16"]
convert_hf_to_gguf.main()
import gguf
r = gguf.GGUFReader(out)
types = collections.Counter(t.tensor_type.name for t in r.tensors)
big = collections.Counter(t.tensor_type.name for t in r.tensors if len(t.shape) >= 2 and
                          min(int(s) for s in t.shape) > 1)
print(json.dumps({"tensors": len(r.tensors), "types": dict(types), "matrix_types": dict(big),
                  "patch_embd": [t.tensor_type.name for t in r.tensors
                                 if t.name.startswith("v.patch_embd")]}))
"""

# Runs under --llama-python: one untimed image prompt, then one timed (argv: a JSON object).
LLAMA_RUN = r"""
import ctypes, json, re, sys, time
import numpy as np
import llama_cpp as L
import llama_cpp.mtmd_cpp as M
a = json.loads(sys.argv[1])
LOG = []
def keep(level, text, user_data):
    LOG.append(text.decode("utf-8", "replace"))
cb = L.llama_log_callback(keep)
L.llama_log_set(cb, None)
M.mtmd_log_set(cb, None)
def fail(msg):
    sys.stderr.write("".join(LOG[-40:]))
    sys.exit(msg)
L.llama_backend_init()
mp = L.llama_model_default_params()
mp.n_gpu_layers = 0
model = L.llama_model_load_from_file(a["text"].encode(), mp)
if not model:
    fail("llama.cpp could not load " + a["text"])
head, tail, n_img, gen = a["head"], a["tail"], a["n_image"], a["gen"]
n_prompt = len(head) + n_img + len(tail)
fa = L.LLAMA_FLASH_ATTN_TYPE_AUTO if a["fa"] == "auto" else L.LLAMA_FLASH_ATTN_TYPE_DISABLED
cp = L.llama_context_default_params()
cp.n_ctx = n_prompt + gen + 8
cp.n_threads = cp.n_threads_batch = a["threads"]
cp.flash_attn_type = fa
ctx = L.llama_init_from_model(model, cp)
if not ctx:
    fail("llama.cpp could not create a context")
n_embd = L.llama_model_n_embd(model)
n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
p = M.mtmd_context_params_default()
p.use_gpu = False
p.n_threads = a["threads"]
p.print_timings = False
p.flash_attn_type = fa
mctx = M.mtmd_init_from_file(a["mmproj"].encode(), model, p)
if not mctx:
    fail("mtmd could not load " + a["mmproj"])
if M.mtmd_decode_use_mrope(mctx):
    fail("mtmd decodes this model with M-RoPE positions (the prompt below gives 1-D ones)")

def batch(n, embd):
    b = L.llama_batch_init(n, n_embd if embd else 0, 1)
    for i in range(n):
        b.n_seq_id[i] = 1
        b.seq_id[i][0] = 0
        b.logits[i] = 0
    b.n_tokens = n
    return b

bh, be = batch(len(head), False), batch(n_img, True)
bt, b1 = batch(len(tail), False), batch(1, False)
for i, t in enumerate(head):
    bh.token[i], bh.pos[i] = t, i
for i in range(n_img):
    be.pos[i] = len(head) + i
for i, t in enumerate(tail):
    bt.token[i], bt.pos[i] = t, len(head) + n_img + i
bt.logits[len(tail) - 1] = 1
b1.logits[0] = 1
mem = L.llama_get_memory(ctx)
marker = M.mtmd_default_marker()

def argmax():
    return int(np.argmax(np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, -1), shape=(n_vocab,))))

def run(steps):
    L.llama_memory_clear(mem, True)
    mark = len(LOG)
    t0 = time.perf_counter()
    bm = M.mtmd_helper_bitmap_init_from_file(mctx, a["image"].encode(), False)
    if not bm:
        fail("mtmd could not read " + a["image"])
    chunks = M.mtmd_input_chunks_init()
    text = M.mtmd_input_text(marker, len(marker), False, True)
    bms = (M.mtmd_bitmap_p_ctypes * 1)(bm)
    if M.mtmd_tokenize(mctx, chunks, ctypes.byref(text), bms, 1) != 0:
        fail("mtmd_tokenize failed")
    t1 = time.perf_counter()
    before, after, img = [], [], None
    for i in range(M.mtmd_input_chunks_size(chunks)):
        c = M.mtmd_input_chunks_get(chunks, i)
        if M.mtmd_input_chunk_get_type(c) == M.MTMD_INPUT_CHUNK_TYPE_TEXT:
            n = ctypes.c_size_t()
            t = M.mtmd_input_chunk_get_tokens_text(c, ctypes.byref(n))
            (after if img else before).extend(t[j] for j in range(n.value))
        else:
            img = c
    if img is None:
        fail("mtmd_tokenize gave no image chunk")
    n_tok = M.mtmd_image_tokens_get_n_tokens(M.mtmd_input_chunk_get_tokens_image(img))
    if n_tok != n_img or M.mtmd_input_chunk_get_n_pos(img) != n_img:
        fail(f"mtmd's image has {n_tok} tokens, mlxcel's {n_img}")
    if M.mtmd_encode_chunk(mctx, img) != 0:
        fail("mtmd_encode_chunk failed")
    t2 = time.perf_counter()
    e = M.mtmd_get_output_embd(mctx)
    ctypes.memmove(be.embd, e, n_img * n_embd * 4)
    for b in (bh, be, bt):
        if L.llama_decode(ctx, b) != 0:
            fail("llama_decode of the prompt failed")
    nxt = argmax()
    t3 = time.perf_counter()
    for g in range(steps):
        b1.token[0], b1.pos[0] = nxt, n_prompt + g
        if L.llama_decode(ctx, b1) != 0:
            fail("llama_decode failed")
        nxt = argmax()
    t4 = time.perf_counter()
    M.mtmd_input_chunks_free(chunks)
    M.mtmd_bitmap_free(bm)
    size = [re.search(r"copying image 1/1 to input buffer \(nx=(\d+), ny=(\d+)\)", s)
            for s in LOG[mark:]]
    size = [[int(m.group(1)), int(m.group(2))] for m in size if m]
    return {"load_preprocess_ms": 1e3 * (t1 - t0), "encode_ms": 1e3 * (t2 - t1),
            "ttft_ms": 1e3 * (t3 - t0), "prefill_tok_s": n_prompt / (t3 - t2),
            "decode_tok_s": steps / (t4 - t3) if steps else 0.0, "prompt_tokens": n_prompt,
            "image_tokens": n_tok, "before": before, "after": after,
            "resized": size[0] if len(size) == 1 else None}

run(1)
r = run(gen)
r["fa_text"] = [s.strip() for s in LOG if re.search(r"resolve_fused_ops: flash attention|"
                                                   r"llama_context: flash_attn ", s, re.I)]
r["fa_vision"] = [s.strip() for s in LOG if re.search(r"warmup: flash attention is", s)]
r["kv_types"] = [int(cp.type_k), int(cp.type_v)]
r["n_ctx"] = int(L.llama_n_ctx(ctx))
print(json.dumps(r))
"""

GGML_TYPES = {0: "f32", 1: "f16", 30: "bf16", 8: "q8_0"}


def check_tools(a):
    """Everything the run needs, before any of it starts."""
    if not (os.path.isfile(a.mlxcel) and os.access(a.mlxcel, os.X_OK)):
        die(f"--mlxcel {a.mlxcel}: no such executable (cmake --build build --target mlxcel)")
    cfg = os.path.join(a.model, "config.json")
    if not (os.path.isfile(cfg) and os.path.isfile(os.path.join(a.model, "model.safetensors"))):
        die(f"--model {a.model}: no config.json + model.safetensors (write it with `mlxcel "
            "mkmodel --arch youtu_vl --preset youtu-vl-4b --dtype bf16 -o DIR`)")
    with open(cfg) as f:
        c = json.load(f)
    if c.get("model_type") != "youtu_vl":
        die(f"--model {a.model}: model_type {c.get('model_type')!r}, not youtu_vl")
    if not os.path.isfile(a.image):
        die(f"--image {a.image}: no such file")
    conv = os.path.join(a.llama_cpp, "convert_hf_to_gguf.py")
    if not (os.path.isfile(conv) and os.path.isdir(os.path.join(a.llama_cpp, "gguf-py", "gguf"))):
        die(f"--llama-cpp {a.llama_cpp}: no convert_hf_to_gguf.py + gguf-py/gguf there (the "
            "llama.cpp source, e.g. llama-cpp-python's sdist's vendor/llama.cpp)")
    p = subprocess.run([a.llama_python, "-c", "import numpy, llama_cpp, llama_cpp.mtmd_cpp; "
                        "print(llama_cpp.__version__)"], capture_output=True, text=True)
    if p.returncode != 0:
        die(f"--llama-python {a.llama_python}: no llama-cpp-python with mtmd and numpy "
            f"(pip install llama-cpp-python=={LLAMA_CPP_PYTHON} numpy):\n{p.stderr[-1500:]}")
    return c, p.stdout.strip()


def convert(a, kind, out):
    """llama.cpp's converter, once: the output is reused when its stamp says it is complete."""
    stamp = out + ".json"
    st = os.stat(os.path.join(a.model, "model.safetensors"))
    key = {"model": os.path.abspath(a.model), "size": st.st_size, "mtime": st.st_mtime_ns}
    if os.path.exists(out) and os.path.exists(stamp):
        with open(stamp) as f:
            s = json.load(f)
        if s.get("key") == key:
            return s["summary"]
    p = subprocess.run([a.torch_python, "-c", "import torch, transformers, safetensors"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        die(f"--torch-python {a.torch_python}: the converter needs torch, transformers and "
            f"safetensors:\n{p.stderr[-1500:]}")
    print(f"converting ({kind}) -> {out}", file=sys.stderr)
    env = dict(os.environ, PYTHONPATH=os.path.join(a.llama_cpp, "gguf-py"))
    p = subprocess.run(["nice", "-n", "19", a.torch_python, "-c", CONVERT, a.llama_cpp, a.model,
                        out, kind], capture_output=True, text=True, env=env)
    log = p.stdout + p.stderr
    with open(out + ".log", "w") as f:
        f.write(log)
    if p.returncode != 0 or "Cannot map tensor" in log or not os.path.exists(out):
        die(f"llama.cpp's converter failed on {a.model} ({kind}; log {out}.log):\n{log[-2500:]}")
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    with open(stamp, "w") as f:
        json.dump({"key": key, "summary": summary}, f)
    return summary


def run_mlxcel(a):
    p = subprocess.run([a.mlxcel, "bench", "-m", a.model, "--image", a.image, "--gen",
                        str(a.gen), "--threads", str(a.threads), "--reps", "1", "--json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        die(f"mlxcel bench failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_llama(a, text, mmproj, head, tail, n_image, fa):
    arg = {"text": text, "mmproj": mmproj, "image": os.path.abspath(a.image), "head": head,
           "tail": tail, "n_image": n_image, "gen": a.gen, "threads": a.threads, "fa": fa}
    p = subprocess.run([a.llama_python, "-c", LLAMA_RUN, json.dumps(arg)], capture_output=True,
                       text=True)
    if p.returncode != 0:
        how = f"signal {-p.returncode}" if p.returncode < 0 else f"exit {p.returncode}"
        die(f"llama.cpp failed (flash attention {fa}, {how}):\n{p.stderr[-2500:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def prompt_ids(a, cfg):
    """mlxcel bench --image's prompt: the tokenizer's ids of BENCH_TEXT (BOS first), the image
    after the BOS, wrapped in <|vision_start|> / <|vision_end|>. Returned as the ids before
    the image's embeddings and after them."""
    p = subprocess.run([a.mlxcel, "tokenize", "-m", a.model, "--json", BENCH_TEXT],
                       capture_output=True, text=True)
    if p.returncode != 0:
        die(f"mlxcel tokenize failed:\n{p.stderr[-1500:]}")
    ids = json.loads(p.stdout)
    at = 1 if ids and ids[0] == cfg["bos_token_id"] else 0
    return (ids[:at] + [cfg["vision_start_token_id"]],
            [cfg["vision_end_token_id"]] + ids[at:])


def render(a, rows, info, res):
    m, fa, nofa = rows["mlxcel"], rows["llama_fa"], rows["llama_nofa"]

    def faster(ours, theirs, time):
        r = theirs / ours if time else ours / theirs
        return f"{r:.2f}x"

    lines = [
        f"`bench/llamacpp_vlm_compare.py --gen {a.gen} --threads {a.threads} --reps {a.reps}` "
        f"on {info['machine']}: {info['prompt']}; {info['image']}. Medians of {a.reps} "
        "interleaved rounds (order flipped each round), one untimed prompt before each timed "
        f"one. llama.cpp: llama-cpp-python {info['lcpp']} (native build), text GGUF "
        f"{info['text_types']}, mmproj {info['mmproj_types']}, KV cache {info['kv']}; "
        f"flash attention auto, as logged: {info['fa_state']}; off: {info['nofa_state']}. "
        "mlxcel: precision "
        f"{info['precision']}, KV {info['m_kv']}. Ratio: mlxcel's speed over llama.cpp's "
        "(above 1: mlxcel faster).",
        "",
        "| engine | tower / image encode ms | TTFT ms | prefill tok/s | decode tok/s |",
        "|---|---:|---:|---:|---:|",
        f"| mlxcel | {m['tower_ms']:.0f} | {m['ttft_ms']:.0f} | {m['prefill_tok_s']:.1f} | "
        f"{m['decode_tok_s']:.2f} |"]
    for name, r in (("llama.cpp, flash attention auto", fa),
                    ("llama.cpp, flash attention off", nofa)):
        lines.append(f"| {name} | {r['encode_ms']:.0f} | {r['ttft_ms']:.0f} | "
                     f"{r['prefill_tok_s']:.1f} | {r['decode_tok_s']:.2f} |")
    for name, r in (("mlxcel / llama.cpp (auto)", fa), ("mlxcel / llama.cpp (off)", nofa)):
        lines.append(f"| {name} | {faster(m['tower_ms'], r['encode_ms'], True)} | "
                     f"{faster(m['ttft_ms'], r['ttft_ms'], True)} | "
                     f"{faster(m['prefill_tok_s'], r['prefill_tok_s'], False)} | "
                     f"{faster(m['decode_tok_s'], r['decode_tok_s'], False)} |")
    lines += ["", f"mlxcel's own limits in the same runs: prefill {m['prefill_pct']:.0f}% of its "
              f"f32-peak limit, decode {m['decode_pct']:.0f}% of its bandwidth limit; "
              f"llama.cpp's image file load + preprocessing {fa['load_preprocess_ms']:.0f} ms "
              "(inside its TTFT, as mlxcel's is inside its own).", "",
              "Per round (tower or image encode ms / TTFT ms / prefill tok/s / decode tok/s):", ""]
    for e, name in (("mlxcel", "mlxcel"), ("llama_fa", "llama.cpp, flash attention auto"),
                    ("llama_nofa", "llama.cpp, flash attention off")):
        lines.append(f"- {name}: " + "; ".join(
            f"{r.get('tower_ms', r.get('encode_ms')):.0f} / {r['ttft_ms']:.0f} / "
            f"{r['prefill_tok_s']:.1f} / {r['decode_tok_s']:.2f}" for r in res[e]))
    return "\n".join(lines) + "\n"


def write_section(path, text):
    begin, end = "<!-- llamacpp-vlm:begin -->", "<!-- llamacpp-vlm:end -->"
    with open(path) as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        die(f"--out {path}: no {begin} ... {end} markers to write between")
    doc = doc[:doc.index(begin)] + f"{begin}\n{text}{end}" + doc[doc.index(end) + len(end):]
    with open(path, "w") as f:
        f.write(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlxcel", required=True)
    ap.add_argument("--model", required=True, help="mkmodel's youtu_vl checkpoint (bf16)")
    ap.add_argument("--llama-cpp", required=True,
                    help="llama.cpp source: convert_hf_to_gguf.py, conversion/, gguf-py/")
    ap.add_argument("--torch-python", required=True, help="a Python with torch + transformers")
    ap.add_argument("--llama-python", required=True,
                    help=f"a Python with llama-cpp-python {LLAMA_CPP_PYTHON} and numpy")
    ap.add_argument("--image", default=os.path.join(ROOT, "tests", "data", "image", "inputs",
                                                    "chelsea.png"))
    ap.add_argument("--gen", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", default="/tmp/mlxcel-vlm-llamacpp")
    ap.add_argument("--out", help="write the table into this markdown file (between markers)")
    a = ap.parse_args()
    if a.gen < 1 or a.reps < 1 or a.threads < 1:
        ap.error("--gen, --reps and --threads must be positive")
    cfg, lcpp = check_tools(a)
    os.makedirs(a.work, exist_ok=True)
    text = os.path.join(a.work, "youtu-vl-text-bf16.gguf")
    mmproj = os.path.join(a.work, "youtu-vl-mmproj-auto.gguf")
    ts = convert(a, "text", text)
    ms = convert(a, "mmproj", mmproj)
    print(f"text GGUF: {ts}\nmmproj: {ms}", file=sys.stderr)
    head, tail = prompt_ids(a, cfg)

    res = {"mlxcel": [], "llama_fa": [], "llama_nofa": []}
    for rep in range(a.reps):
        order = list(res) if rep % 2 == 0 else list(reversed(res))
        for eng in order:
            if eng == "mlxcel":
                r = run_mlxcel(a)
            else:
                # Round 1 starts with mlxcel: its image token count is known here.
                r = run_llama(a, text, mmproj, head, tail, res["mlxcel"][0]["image_tokens"],
                              "auto" if eng == "llama_fa" else "off")
            res[eng].append(r)
        print(f"round {rep + 1}: " + ", ".join(
            f"{e} {res[e][-1].get('tower_ms', res[e][-1].get('encode_ms')):.0f} ms tower, "
            f"{res[e][-1]['prefill_tok_s']:.1f} / {res[e][-1]['decode_tok_s']:.2f} tok/s"
            for e in res), file=sys.stderr)

    # Same work: the counts and sizes both engines report must agree.
    m0 = res["mlxcel"][0]
    n_prompt = len(head) + m0["image_tokens"] + len(tail)
    resized = [16 * m0["image_grid"][1], 16 * m0["image_grid"][0]]
    for e in ("llama_fa", "llama_nofa"):
        for r in res[e]:
            if r["prompt_tokens"] != n_prompt or r["image_tokens"] != m0["image_tokens"]:
                die(f"{e}: prompt {r['prompt_tokens']} / image {r['image_tokens']} tokens, "
                    f"mlxcel {n_prompt} / {m0['image_tokens']}")
            if r["resized"] != resized:
                die(f"{e}: llama.cpp resized the image to {r['resized']}, mlxcel to {resized}")
            if r["before"] != [cfg["vision_start_token_id"]] or \
                    r["after"] != [cfg["vision_end_token_id"]]:
                die(f"{e}: mtmd wraps the image in {r['before']} / {r['after']}, not "
                    "<|vision_start|> / <|vision_end|>")
    for r in res["mlxcel"]:
        if r["prompt_tokens"] != n_prompt:
            die(f"mlxcel bench's prompt has {r['prompt_tokens']} tokens, the ids given to "
                f"llama.cpp {n_prompt}")

    def med(e, k):
        return statistics.median(r[k] for r in res[e])

    rows = {"mlxcel": {k: med("mlxcel", k) for k in ("tower_ms", "ttft_ms", "prefill_tok_s",
                                                      "decode_tok_s")}}
    rows["mlxcel"]["prefill_pct"] = med("mlxcel", "prefill_pct_of_limit")
    rows["mlxcel"]["decode_pct"] = med("mlxcel", "decode_pct_of_limit")
    for e in ("llama_fa", "llama_nofa"):
        rows[e] = {k: med(e, k) for k in ("encode_ms", "load_preprocess_ms", "ttft_ms",
                                          "prefill_tok_s", "decode_tok_s")}
    lf = res["llama_fa"][-1]

    def fa_state(r):
        t = "; ".join(" ".join(x.split(": ", 1)[1].split()) for x in r["fa_text"]) or \
            "not logged"
        v = "; ".join(x.split(": ", 1)[1] for x in r["fa_vision"]) or "not logged"
        return f"text context: {t}; vision: {v}"

    bws = [r["bandwidth_gbs"] for r in res["mlxcel"]]
    pks = [r["peak_gflops"] for r in res["mlxcel"]]
    info = {
        "machine": f"{a.threads} threads, bandwidth {statistics.median(bws):.1f} GB/s "
                   f"({min(bws):.1f}-{max(bws):.1f}) and f32 peak {statistics.median(pks):.0f} "
                   f"GFLOP/s ({min(pks):.0f}-{max(pks):.0f}) as mlxcel bench measured them "
                   "around its reps",
        "prompt": f"prompt tokens mlxcel {m0['prompt_tokens']}, llama.cpp "
                  f"{res['llama_fa'][0]['prompt_tokens']} ({len(head)} + {m0['image_tokens']} "
                  f"image + {len(tail)}), {a.gen} decode steps after the first token",
        "image": f"{os.path.basename(a.image)} {m0['image_width']}x{m0['image_height']} "
                 f"resized to {resized[0]}x{resized[1]} by both, image tokens mlxcel "
                 f"{m0['image_tokens']}, llama.cpp {res['llama_fa'][0]['image_tokens']}",
        "lcpp": lcpp,
        "text_types": "/".join(f"{k} {v}" for k, v in ts["types"].items()),
        "mmproj_types": "/".join(f"{k} {v}" for k, v in ms["types"].items()) +
                        f" (patch embedding {'/'.join(ms['patch_embd'])})",
        "kv": "/".join(GGML_TYPES.get(t, str(t)) for t in lf["kv_types"]),
        "fa_state": fa_state(lf), "nofa_state": fa_state(res["llama_nofa"][-1]),
        "precision": m0["precision"], "m_kv": m0["kv_dtype"],
    }
    out = render(a, rows, info, res)
    print(out)
    if a.out:
        write_section(a.out, out)


if __name__ == "__main__":
    main()
