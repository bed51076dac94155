#!/usr/bin/env python3
"""Load client for `mlxcel serve` (loopback benchmarks): C concurrent clients send N streaming
completions in total, each a prompt of P pseudo-random token ids and exactly T new tokens
(greedy, ignore_eos). Prints one JSON object: wall time, completion tokens per second end to
end, the server's aggregate decode and prefill tok/s over the run (from /metrics),
time-to-first-token and inter-token latency percentiles (ms).

Standard library only (http.client on threads), so that the times are those of the wire: each
SSE event is timed as it arrives, with no client library parsing in between.

Usage: python3 bench/serve_load.py --url http://127.0.0.1:PORT [--clients C] [--requests N]
         [--prompt P] [--max-tokens T] [--vocab V] [--model ID]
"""

import argparse
import http.client
import json
import math
import re
import sys
import threading
import time
import urllib.parse

LOOPBACK = re.compile(r"^http://(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$")
METRIC = re.compile(r"^([a-z_]+) (\S+)$")


def parse_args():
    ap = argparse.ArgumentParser(description="Load client for `mlxcel serve` (loopback only).")
    ap.add_argument("--url", required=True, help="http://127.0.0.1:PORT")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--prompt", type=int, default=32, help="prompt tokens per request")
    ap.add_argument("--max-tokens", type=int, default=64, help="new tokens per request")
    ap.add_argument("--vocab", type=int, default=256, help="prompt ids are in [3, vocab)")
    ap.add_argument("--model", default=None, help="model id to send (none: the server's)")
    args = ap.parse_args()
    if not LOOPBACK.match(args.url):
        ap.error("--url http://127.0.0.1:PORT (loopback only) is required")
    return args


def prompts(n, length, vocab):
    """n prompts of `length` ids from a fixed 32-bit xorshift stream: the same every run, so
    that rows measured on different days compare."""
    x = 0x9E3779B9

    def rand():
        nonlocal x
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        return x / 4294967296

    return [[3 + math.floor(rand() * (vocab - 3)) for _ in range(length)] for _ in range(n)]


class Server:
    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80

    def connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=600)

    def metrics(self):
        conn = self.connect()
        try:
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
        finally:
            conn.close()
        out = {}
        for line in text.splitlines():
            m = METRIC.match(line)
            if m:
                out[m.group(1)] = float(m.group(2))
        return out


def one(server, body):
    """One streamed completion: (time to first token, gaps between token chunks, tokens), the
    times in ms. Raises on an HTTP error or a stream that ends without [DONE]."""
    conn = server.connect()
    try:
        t0 = time.perf_counter()
        conn.request("POST", "/v1/completions", body=body,
                     headers={"content-type": "application/json"})
        res = conn.getresponse()
        if res.status != 200:
            raise RuntimeError(f"HTTP {res.status}: {res.read().decode(errors='replace')}")
        buf = b""
        first = last = None
        gaps = []
        tokens = 0
        done = False
        while True:
            data = res.read1(65536)
            if not data:
                break
            buf += data
            while (k := buf.find(b"\n\n")) >= 0:
                event, buf = buf[:k].decode(), buf[k + 2:]
                if not event.startswith("data: "):
                    continue
                payload = event[6:]
                if payload == "[DONE]":
                    done = True
                    continue
                j = json.loads(payload)
                if j.get("usage"):
                    tokens = j["usage"]["completion_tokens"]
                if j.get("choices") and j["choices"][0].get("finish_reason") is None:
                    now = time.perf_counter()
                    if first is None:
                        first = (now - t0) * 1000
                    else:
                        gaps.append((now - last) * 1000)
                    last = now
        if not done:
            raise RuntimeError("stream ended without [DONE]")
        return first, gaps, tokens
    finally:
        conn.close()


def pct(xs, p):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, math.floor(p / 100 * len(s)))]


def r3(x):
    """x rounded to 3 decimals (an integral value printed as an integer, as JSON numbers)."""
    if x is None:
        return None
    v = math.floor(x * 1000 + 0.5) / 1000
    return int(v) if v == int(v) else v


def main():
    a = parse_args()
    server = Server(a.url)
    bodies = []
    for p in prompts(a.requests, a.prompt, a.vocab):
        body = {"model": a.model, "prompt": p, "max_tokens": a.max_tokens, "temperature": 0,
                "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
        if a.model is None:
            del body["model"]  # the server's own model
        bodies.append(json.dumps(body))

    lock = threading.Lock()
    state = {"next": 0, "failed": 0, "tokens": 0}
    ttfts, gaps = [], []

    def client():
        while True:
            with lock:
                i = state["next"]
                if i >= a.requests:
                    return
                state["next"] += 1
            try:
                ttft, g, tokens = one(server, bodies[i])
                with lock:
                    ttfts.append(ttft)
                    gaps.extend(g)
                    state["tokens"] += tokens
            except Exception as e:  # counted, reported, and the run goes on
                with lock:
                    state["failed"] += 1
                print(f"request {i}: {e}", file=sys.stderr)

    m0 = server.metrics()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    m1 = server.metrics()

    def d(k):
        return m1[k] - m0[k]

    def ratio(num, den):
        return r3(d(num) / d(den)) if d(den) else None

    tokens = state["tokens"]
    print(json.dumps({
        "clients": a.clients, "requests": a.requests, "prompt_tokens": a.prompt,
        "max_tokens": a.max_tokens, "failed": state["failed"],
        "wall_s": r3(wall), "completion_tokens": tokens, "e2e_tok_s": r3(tokens / wall),
        "decode_tok_s": ratio("mlxcel_decode_tokens_total", "mlxcel_decode_seconds_total"),
        "decode_tokens_per_step": ratio("mlxcel_decode_tokens_total",
                                        "mlxcel_decode_steps_total"),
        "prefill_tok_s": ratio("mlxcel_prefill_tokens_total", "mlxcel_prefill_seconds_total"),
        "ttft_ms": {"p50": r3(pct(ttfts, 50)), "p90": r3(pct(ttfts, 90)),
                    "p99": r3(pct(ttfts, 99))},
        "itl_ms": {"p50": r3(pct(gaps, 50)), "p90": r3(pct(gaps, 90)), "p99": r3(pct(gaps, 99))},
        "slots": r3(m1["mlxcel_slots"]),
    }, separators=(",", ":")), flush=True)
    return 1 if state["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
