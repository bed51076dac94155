#!/usr/bin/env python3
"""Speculative decoding's speed (issue 27 item 3, ADR 0020): decode tok/s and tokens per model
call of `mlxcel generate` with and without --speculative, on repetitive and on free text.

Each case is one prompt and sampler setting; each mode (off, ngram with K drafts, a draft model)
runs it through `mlxcel generate --json` (GEN tokens, --ignore-eos) and reports the summary's
decode_tok_s and its speculative counts. Rounds are interleaved (every case and mode once per
round, then the next round) and every number is the median over the rounds, each speed-up the
median of the same-round ratios to "off": the development machine is shared and drifts.

  bench/spec_decode.py --mlxcel build/mlxcel --model DIR [--draft DIR] [--gen 96]
      [--rounds 5] [--threads 2] [--k 3,7]

The models are random-weight checkpoints (`mlxcel mkmodel --preset smollm2-360m`, ...): their
greedy text falls into loops, which prompt lookup drafts as it drafts an edited copy of the
prompt; sampled at temperature 1 their text is close to uniform over the vocabulary, where
nothing recurs and every draft fails (the cost of trying).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CODE = (
    "def add(a, b):\n    return a + b\n\n"
    "def sub(a, b):\n    return a - b\n\n"
    "def mul(a, b):\n    return a * b\n\n"
    "def div(a, b):\n    return a / b\n\n"
    "Rewrite the functions above with type hints:\n"
)
STORY = "Once upon a time, in a small village by the sea, there lived an old fisherman who"

# name, prompt, sampling flags
CASES = [
    ("repetitive (code edit, greedy)", CODE, ["--temp", "0"]),
    ("free text (temperature 1)", STORY, ["--temp", "1", "--seed", "11"]),
]


def run(args, model, prompt, flags, mode):
    cmd = [args.mlxcel, "generate", "-m", model, "-p", prompt, "-n", str(args.gen),
           "--ignore-eos", "--json", "-q", "--ctx", "1024"] + flags + mode
    env = dict(os.environ, MLXCEL_THREADS=str(args.threads))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    summary = json.loads(out.strip().splitlines()[-1])
    ids = [json.loads(line)["id"] for line in out.strip().splitlines()[:-1]]
    return summary, ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlxcel", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--draft", help="draft model directory (same tokenizer)")
    ap.add_argument("--gen", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--k", default="3,7", help="draft lengths of the ngram rows")
    args = ap.parse_args()
    modes = [("off", [])]
    for k in args.k.split(","):
        modes.append((f"ngram k={k}", ["--speculative", "ngram", "--draft-tokens", k]))
    if args.draft:
        for k in args.k.split(","):
            modes.append((f"draft k={k}", ["--draft-model", args.draft, "--draft-tokens", k]))
    res = {}  # (case, mode) -> list of (tok/s, tokens per call, accepted, drafted)
    load = [os.getloadavg()]
    for r in range(args.rounds):
        for case, prompt, flags in CASES:
            ref = None
            for mode, mflags in modes:
                s, ids = run(args, args.model, prompt, flags, mflags)
                if mode == "off":
                    ref = ids
                elif "--temp" in flags and flags[flags.index("--temp") + 1] == "0" and ids != ref:
                    sys.exit(f"{case} {mode}: greedy ids differ from plain decoding")
                steps = s.get("spec_steps", 0)
                per_call = (s["spec_accepted"] + steps) / steps if steps else 1.0
                res.setdefault((case, mode), []).append(
                    (s["decode_tok_s"], per_call, s.get("spec_accepted", 0),
                     s.get("spec_drafted", 0)))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    load.append(os.getloadavg())
    print(f"model {args.model}" + (f", draft {args.draft}" if args.draft else "") +
          f"; {args.gen} tokens, {args.threads} threads, median of {args.rounds} interleaved "
          f"rounds; load average {load[0][0]:.1f} at the start, {load[1][0]:.1f} at the end")
    print()
    print("| text | mode | decode tok/s | speed-up | tokens per model call | drafts accepted |")
    print("|---|---|---:|---:|---:|---:|")
    for case, _, _ in CASES:
        base = res[(case, "off")]
        for mode, _ in modes:
            rows = res[(case, mode)]
            tps = statistics.median(x[0] for x in rows)
            ratio = statistics.median(x[0] / b[0] for x, b in zip(rows, base))
            per_call = statistics.median(x[1] for x in rows)
            acc = sum(x[2] for x in rows)
            dr = sum(x[3] for x in rows)
            accepted = f"{acc} of {dr}" if mode != "off" else "-"
            print(f"| {case} | {mode} | {tps:.1f} | {ratio:.2f}x | {per_call:.2f} | {accepted} |")


if __name__ == "__main__":
    main()
