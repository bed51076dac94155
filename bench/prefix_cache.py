#!/usr/bin/env python3
"""Time to first token of a multi-turn chat with and without the server's prefix cache.

Starts `mlxcel serve -m MODEL` twice (default flags, and --no-prefix-cache), one request in
flight at a time, and plays R conversations of T turns on both, alternating the two servers
turn by turn (interleaved, so that drift in the machine's speed hits both alike). A
conversation is a system prompt of S pseudo-random token ids; each turn appends U more (the
previous reply and the user's next message, as a re-rendered chat does) and asks for G new
tokens (greedy, ignore_eos) as a streamed completion of token ids. Prints one JSON object: per
turn, the prompt length, the median time to first token of each server (ms) and the prompt
tokens the cache supplied (the replies' equality is tested in tests/server, not here).

Usage: python3 bench/prefix_cache.py --mlxcel build/mlxcel --model DIR [--system S] [--turn U]
         [--turns T] [--rounds R] [--max-tokens G] [--vocab V] [-- SERVE_ARGS...]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_load import Server, one, prompts  # noqa: E402

LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


def start(mlxcel, model, args):
    """`mlxcel serve` on a free loopback port; returns (process, Server) once it listens."""
    p = subprocess.Popen([mlxcel, "serve", "-m", model, "--port", "0", "--quiet", *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = LISTENING.search(line)
        if m:
            threading.Thread(target=lambda: p.stderr.read(), daemon=True).start()
            return p, Server(m.group(1))
    raise RuntimeError(f"mlxcel serve {' '.join(args)} did not start (exit {p.wait()})")


def ttft(server, ids, gen):
    """Time to first token (ms) of one streamed greedy completion of the ids."""
    body = json.dumps({"prompt": ids, "max_tokens": gen, "temperature": 0, "ignore_eos": True,
                       "stream": True})
    return one(server, body)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlxcel", required=True)
    ap.add_argument("--model", required=True, help="model directory")
    ap.add_argument("--system", type=int, default=512, help="system prompt tokens")
    ap.add_argument("--turn", type=int, default=64, help="tokens each turn appends")
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=5, help="conversations (medians over them)")
    ap.add_argument("--max-tokens", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=256, help="prompt ids are in [3, vocab)")
    ap.add_argument("serve_args", nargs="*", help="more `mlxcel serve` options (after --)")
    a = ap.parse_args()
    procs = []
    try:
        for extra in ([], ["--no-prefix-cache"]):
            procs.append(start(a.mlxcel, a.model, [*a.serve_args, *extra]))
        (_, cached), (_, plain) = procs
        # One stream of ids per round: its system prompt, then each turn's addition.
        n_ids = a.system + a.turns * a.turn
        convs = prompts(a.rounds, n_ids, a.vocab)
        times = {"cache": [[] for _ in range(a.turns)], "plain": [[] for _ in range(a.turns)]}
        hits = [[] for _ in range(a.turns)]
        for r, conv in enumerate(convs):
            for t in range(a.turns):
                ids = conv[:a.system + (t + 1) * a.turn]
                # Alternate which server goes first, round by round.
                order = [("cache", cached), ("plain", plain)]
                if r % 2:
                    order.reverse()
                for name, srv in order:
                    before = srv.metrics()["mlxcel_prompt_cached_tokens_total"]
                    times[name][t].append(ttft(srv, ids, a.max_tokens))
                    if name == "cache":
                        hits[t].append(srv.metrics()["mlxcel_prompt_cached_tokens_total"] - before)
        rows = []
        for t in range(a.turns):
            rows.append({"turn": t + 1, "prompt_tokens": a.system + (t + 1) * a.turn,
                         "ttft_ms_cache": round(statistics.median(times["cache"][t]), 1),
                         "ttft_ms_no_cache": round(statistics.median(times["plain"][t]), 1),
                         "cached_tokens": statistics.median(hits[t])})
        print(json.dumps({"rounds": a.rounds, "system": a.system, "turn": a.turn,
                          "max_tokens": a.max_tokens, "serve_args": a.serve_args,
                          "turns": rows}, indent=1))
    finally:
        for p, _ in procs:
            p.terminate()
            p.wait()


if __name__ == "__main__":
    main()
