#!/usr/bin/env node
// Load client for `mlxcel serve` (loopback benchmarks): C concurrent clients send N streaming
// completions in total, each a prompt of P pseudo-random token ids and exactly T new tokens
// (greedy, ignore_eos). Prints one JSON object: wall time, completion tokens per second
// end to end, the server's aggregate decode and prefill tok/s over the run (from /metrics),
// time-to-first-token and inter-token latency percentiles (ms). No dependencies: Node's fetch.
//
// Usage: node bench/serve_load.mjs --url http://127.0.0.1:PORT [--clients C] [--requests N]
//          [--prompt P] [--max-tokens T] [--vocab V] [--model ID]
const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
    return acc;
  }, []),
);
const url = args.url;
if (!url || !/^http:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$/.test(url)) {
  console.error('serve_load.mjs: --url http://127.0.0.1:PORT (loopback only) is required');
  process.exit(2);
}
const C = Number(args.clients ?? 8);
const N = Number(args.requests ?? 16);
const P = Number(args.prompt ?? 32);
const T = Number(args['max-tokens'] ?? 64);
const V = Number(args.vocab ?? 256);

// A fixed xorshift stream: the same prompts every run.
let seed = 0x9e3779b9;
const rand = () => {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 4294967296;
};
const prompts = Array.from({ length: N }, () => Array.from({ length: P }, () => 3 + Math.floor(rand() * (V - 3))));

async function metrics() {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = {};
  for (const line of text.split('\n')) {
    const r = /^([a-z_]+) (\S+)$/.exec(line);
    if (r) m[r[1]] = Number(r[2]);
  }
  return m;
}

async function one(prompt) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: args.model, prompt, max_tokens: T, temperature: 0, ignore_eos: true, stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const dec = new TextDecoder();
  let buf = '';
  let first = null;
  let last = null;
  const gaps = [];
  let tokens = 0;
  let done = false;
  for await (const bytes of res.body) {
    buf += dec.decode(bytes, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k);
      buf = buf.slice(k + 2);
      if (!ev.startsWith('data: ')) continue;
      const data = ev.slice(6);
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      const j = JSON.parse(data);
      if (j.usage) tokens = j.usage.completion_tokens;
      if (j.choices?.length && j.choices[0].finish_reason === null) {
        const now = performance.now();
        if (first === null) first = now - t0;
        else gaps.push(now - last);
        last = now;
      }
    }
  }
  if (!done) throw new Error('stream ended without [DONE]');
  return { ttft: first, gaps, tokens };
}

const pct = (xs, p) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

const m0 = await metrics();
const t0 = performance.now();
let next = 0;
let failed = 0;
const ttfts = [];
const gaps = [];
let tokens = 0;
await Promise.all(Array.from({ length: C }, async () => {
  while (next < N) {
    const i = next++;
    try {
      const r = await one(prompts[i]);
      ttfts.push(r.ttft);
      gaps.push(...r.gaps);
      tokens += r.tokens;
    } catch (e) {
      failed++;
      console.error(`request ${i}: ${e.message}`);
    }
  }
}));
const wall = (performance.now() - t0) / 1000;
const m1 = await metrics();
const d = (k) => m1[k] - m0[k];
const r3 = (x) => (x === null ? null : Math.round(x * 1000) / 1000);
console.log(JSON.stringify({
  clients: C, requests: N, prompt_tokens: P, max_tokens: T, failed,
  wall_s: r3(wall), completion_tokens: tokens, e2e_tok_s: r3(tokens / wall),
  decode_tok_s: r3(d('mlxcel_decode_tokens_total') / d('mlxcel_decode_seconds_total')),
  decode_tokens_per_step: r3(d('mlxcel_decode_tokens_total') / d('mlxcel_decode_steps_total')),
  prefill_tok_s: r3(d('mlxcel_prefill_tokens_total') / d('mlxcel_prefill_seconds_total')),
  ttft_ms: { p50: r3(pct(ttfts, 50)), p90: r3(pct(ttfts, 90)), p99: r3(pct(ttfts, 99)) },
  itl_ms: { p50: r3(pct(gaps, 50)), p90: r3(pct(gaps, 90)), p99: r3(pct(gaps, 99)) },
  slots: m1.mlxcel_slots,
}));
process.exit(failed ? 1 : 0);
