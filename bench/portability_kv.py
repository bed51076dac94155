#!/usr/bin/env python3
"""In-place KV caches on IREE and XLA: decode-step time and memory against the cache capacity,
with the graph as `mlxcel emit` writes it (each cache result aliasing its argument,
`tf.aliasing_output`) and, for comparison, the same text with that attribute removed.

    .venv/bin/python bench/portability_kv.py --mlxcel build/mlxcel --model DIR \\
        --ctx 1024,4096,8192 [--steps 16] [--attn-len W] [--work /tmp/mx-kv]

For each capacity S and consumer it emits @decode (`--main --params`), compiles it, fills the
caches with one zero-initialized call, then times STEPS decode calls that feed each call's
returned caches to the next (median per step), and reports the growth of the process's
resident memory over those calls next to the caches' size. Written for docs/portability.md
("In-place KV caches"); prints one markdown row per (consumer, S, aliasing). With --attn-len W
it also times the windowed @decode (`mlxcel emit --attn-len W`, ADR 0015: attention reads cache
rows 0..W-1 only) at each capacity, the entry the xla backend runs at positions below W.
"""
import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "portability"))
import portability as P  # noqa: E402  (the suite's consumers and readers)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def bench(consumer, mlir, weights, steps):
    fn = consumer.compile(mlir)
    sig = P.entry_signature(mlir)
    dev_w = {k: consumer.put(v) for k, v in weights.items()}
    cache_bytes = sum(int(np.prod(s)) * np.dtype(d).itemsize for n, r, s, d in sig
                      if r in ("k_cache", "v_cache"))

    def call(token, pos, caches):
        args, k = [], 0
        for name, role, shape, dtype in sig:
            if role == "weight":
                args.append(dev_w[name])
            elif role == "tokens":
                args.append(consumer.put(np.full(shape, token, np.int32)))
            elif role == "pos0":
                args.append(consumer.put(np.full(shape, pos, np.int32)))
            else:
                args.append(caches[k] if caches else consumer.put(np.zeros(shape, dtype)))
                k += 1
        return consumer.call(fn, args)

    _, caches = call(1, 0, None)
    _, caches = call(2, 1, caches)  # warm
    rss0 = rss_bytes()
    times, same = [], []
    for s in range(steps):
        before = buffer_address(caches[0])
        t = time.perf_counter()
        logits, caches = call(3 + s, 2 + s, caches)
        times.append(time.perf_counter() - t)
        same.append(before is not None and before == buffer_address(caches[0]))
    reused = "n/a" if buffer_address(caches[0]) is None else ("yes" if all(same) else "no")
    return float(np.median(times)), rss_bytes() - rss0, cache_bytes, reused


def buffer_address(array):
    # PJRT arrays expose their buffer's address; IREE's Python arrays do not (IREE's in-place
    # update shows in its ABI instead: bench/portability_probes.py).
    try:
        return array.unsafe_buffer_pointer()
    except AttributeError:
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlxcel", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--ctx", default="1024,4096,8192")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--consumers", default="iree,xla")
    ap.add_argument("--work", default="/tmp/mx-kv")
    ap.add_argument("--attn-len", type=int, default=0)
    a = ap.parse_args()
    P.WORK = a.work
    print("| consumer | capacity S | attention rows | caches (MiB) | aliasing | "
          "decode step (ms, median) | resident memory growth over the steps (MiB) | "
          "result cache in the argument's buffer |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for ctx in [int(c) for c in a.ctx.split(",")]:
        d = Path(a.work) / f"s{ctx}"
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run([a.mlxcel, "emit", "-m", a.model, "-o", str(d), "--ctx", str(ctx),
                        "--prefill-len", "1", "--main", "--params",
                        str(d / "params.safetensors")], check=True, capture_output=True)
        text = (d / "decode.mlir").read_text()
        (d / "decode_noalias.mlir").write_text(
            re.sub(r", tf\.aliasing_output = \d+ : i32", "", text))
        runs = [("yes", "decode.mlir", ctx), ("removed", "decode_noalias.mlir", ctx)]
        if 0 < a.attn_len < ctx:
            dw = d / f"w{a.attn_len}"
            dw.mkdir(exist_ok=True)
            subprocess.run([a.mlxcel, "emit", "-m", a.model, "-o", str(dw), "--ctx", str(ctx),
                            "--prefill-len", "1", "--attn-len", str(a.attn_len), "--main"],
                           check=True, capture_output=True)
            runs.append(("yes", f"w{a.attn_len}/decode.mlir", a.attn_len))
        weights = P.read_safetensors(d / "params.safetensors")
        for cname in a.consumers.split(","):
            for alias, f, rows in runs:
                consumer = {"iree": P.Iree, "xla": P.Xla}[cname]()
                ms, grow, cb, reused = bench(consumer, str(d / f), weights, a.steps)
                print(f"| {cname} | {ctx} | {rows} | {cb / 2**20:.1f} | {alias} | "
                      f"{ms * 1e3:.2f} | {grow / 2**20:.0f} | {reused} |", flush=True)


if __name__ == "__main__":
    main()
