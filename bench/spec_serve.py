#!/usr/bin/env python3
"""Speculative decoding in the server (ADR 0024): decode tok/s of one stream through
`mlxcel serve` with and without "speculative": "ngram" (and "draft_model" with --draft), on a
repetitive prompt.

Starts `mlxcel serve -m MODEL --port 0 --ctx 1024` (cpu, --threads), then runs ROUNDS rounds;
each round sends the same greedy completion (GEN tokens, ignore_eos, streamed with the usage
chunk) once per mode, interleaved (off, ngram k=3, ngram k=7, [draft k=3, draft k=7,] off, ...),
so that a machine whose
load drifts affects every mode alike. A stream's decode speed is (completion tokens - 1) over the
time from its first text to its last (the prefill and the first token are left out). Prints the
median per mode, the median of the same-round ratios to "off", and the accepted drafts per step
from usage.speculative. Standard library only.

  bench/spec_serve.py --mlxcel build/mlxcel --model DIR [--draft DIR] [--gen 128] [--rounds 5]
      [--threads 2]
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

CODE = (
    "def add(a, b):\n    return a + b\n\n"
    "def sub(a, b):\n    return a - b\n\n"
    "def mul(a, b):\n    return a * b\n\n"
    "def div(a, b):\n    return a / b\n\n"
    "Rewrite the functions above with type hints:\n"
)


def start_server(args):
    cmd = [args.mlxcel, "serve", "-m", args.model, "--port", "0", "--ctx", "1024", "-q"]
    if args.draft:  # requests ask for it; the others stay plain
        cmd += ["--draft-model", args.draft, "--speculative", "off"]
    env = dict(os.environ, MLXCEL_THREADS=str(args.threads))
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    port = None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    if port is None:
        proc.wait()
        sys.exit("the server did not start:\n" + "".join(lines))
    # Keep draining stderr so that the server never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, port


def stream(port, body):
    """(decode tok/s, completion tokens, usage.speculative or None, text) of one stream."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/completions", body=json.dumps(body),
                 headers={"content-type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        sys.exit(f"HTTP {r.status}: {r.read()[:300]!r}")
    first = last = None
    usage, text = None, ""
    for raw in r:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            usage = chunk["usage"]
        for c in chunk.get("choices", []):
            if c.get("text"):
                now = time.perf_counter()
                first = first or now
                last = now
                text += c["text"]
    conn.close()
    n = usage["completion_tokens"]
    tps = (n - 1) / (last - first) if last and last > first else float("nan")
    return tps, n, usage.get("speculative"), text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlxcel", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--k", default="3,7", help="draft lengths of the ngram / draft rows")
    ap.add_argument("--draft", help="draft model directory (same tokenizer): adds draft rows")
    args = ap.parse_args()
    methods = ["ngram"] + (["draft_model"] if args.draft else [])
    modes = [("off", "off")] + [(f"{m.split('_')[0]} k={k}",
                                 {"method": m, "num_speculative_tokens": int(k)})
                                for m in methods for k in args.k.split(",")]
    proc, port = start_server(args)
    load = [os.getloadavg()]
    res = {m: [] for m, _ in modes}
    try:
        base = {"prompt": CODE, "max_tokens": args.gen, "temperature": 0, "ignore_eos": True,
                "stream": True, "stream_options": {"include_usage": True}}
        stream(port, {**base, "max_tokens": 8})  # warm-up: graphs, pages
        for _ in range(args.rounds):
            ref = None
            for name, spec in modes:
                tps, n, su, text = stream(port, {**base, "speculative": spec})
                if ref is None:
                    ref = text
                elif text != ref:
                    sys.exit(f"{name}: greedy text differs from plain decoding")
                res[name].append((tps, su))
        load.append(os.getloadavg())
    finally:
        proc.terminate()
        proc.wait()
    off = [t for t, _ in res["off"]]
    print(f"load average {load[0][0]:.1f} at the start, {load[-1][0]:.1f} at the end; "
          f"{args.rounds} rounds, {args.gen} tokens, {args.threads} threads")
    print("| mode | decode tok/s | speed-up | accepted drafts per step | drafts accepted |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in modes:
        tps = [t for t, _ in res[name]]
        ratio = statistics.median(t / o for t, o in zip(tps, off))
        su = res[name][-1][1]
        per = f"{su['accepted_tokens_per_step']:.2f}" if su else "-"
        acc = f"{su['accepted_tokens']} of {su['drafted_tokens']}" if su else "-"
        print(f"| {name} | {statistics.median(tps):.1f} | {ratio:.2f}x | {per} | {acc} |")


if __name__ == "__main__":
    main()
