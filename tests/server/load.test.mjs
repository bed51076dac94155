// Load test (bounded, loopback only): 16 concurrent streaming clients send 200 greedy requests
// in total to stories260K served with 8 slots (so requests also queue, and prompts longer than
// the 16-token prefill chunk are prefilled in pieces between decode steps). Zero requests may
// fail, and every stream must equal the same request's solo reference: its text, finish reason
// and usage when it runs alone on the idle server.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';

import { STORIES, cliGenerate, metrics, startServer } from './harness.mjs';

const CLIENTS = 16;
const TOTAL = 200;

const STARTS = [
  'Once upon a time', 'One day, a little dog', 'Lily and Tom went to the park', 'The sun was',
  'Tim had a red ball.', 'There was a big tree', 'Mom said', 'The cat and the bird',
  'Sara wanted to', 'In the forest, a little bunny',
];
const LONG = 'Once upon a time, there was a little girl named Lily. She loved to play outside in ' +
  'the park with her friends. One day, she saw a big red ball under a tree. ';

// 25 distinct requests: short and long prompts (up to ~300 tokens), 1 to 120 new tokens, some
// with stop strings.
function requests() {
  const out = [];
  for (let i = 0; i < 25; i++) {
    const prompt = i % 6 === 5 ? LONG.repeat(1 + (i % 4)) + STARTS[i % STARTS.length]
      : STARTS[i % STARTS.length];
    const r = { model: 'stories260K', prompt, max_tokens: i === 3 ? 1 : 8 + ((i * 37) % 113), temperature: 0 };
    if (i % 4 === 1) r.stop = i % 8 === 1 ? '.' : ['Lily', ' big'];
    out.push(r);
  }
  return out;
}

let srv;
let client;
before(async () => {
  srv = await startServer(STORIES, ['--parallel', '8', '--ctx', '512', '--prefill-chunk', '16', '--quiet']);
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120000 });
});
after(async () => {
  const r = await srv.stop();
  assert.equal(r.code, 0, srv.log());
});

async function streamed(body) {
  const s = await client.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  for await (const c of s) {
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      text += ch.text;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  return { text, finish, usage };
}

test(`${CLIENTS} streaming clients, ${TOTAL} requests: no failures, every stream equals its solo run`, async () => {
  const reqs = requests();
  // Solo references: one request at a time on the idle server.
  const solo = [];
  for (const r of reqs) solo.push(await streamed(r));
  // Two of them against an independent path as well: the CLI on a plain session.
  for (const i of [0, 5]) {
    const stops = [reqs[i].stop ?? []].flat().flatMap((x) => ['--stop', x]);
    const ref = cliGenerate(STORIES, ['-p', reqs[i].prompt, '-n', String(reqs[i].max_tokens), '--temp', '0', '--ctx', '512', ...stops]);
    assert.equal(solo[i].text, ref.text);
  }
  assert.ok(solo.some((s) => s.usage.prompt_tokens > 64), 'some prompts span several chunks');

  let next = 0;
  let failed = 0;
  const mismatches = [];
  const t0 = Date.now();
  let peak = 0;
  const worker = async () => {
    while (next < TOTAL) {
      const i = next++;
      const k = i % reqs.length;
      try {
        const got = await streamed(reqs[k]);
        if (got.text !== solo[k].text || got.finish !== solo[k].finish ||
            JSON.stringify(got.usage) !== JSON.stringify(solo[k].usage)) {
          mismatches.push({ i, k, got, want: solo[k] });
        }
      } catch (e) {
        failed++;
        mismatches.push({ i, k, error: String(e) });
      }
    }
  };
  const watcher = setInterval(async () => {
    try {
      const m = await metrics(srv.url);
      peak = Math.max(peak, m.mlxcel_active_sequences + m.mlxcel_queue_depth);
    } catch {
      // the server is busy; the next sample counts
    }
  }, 50);
  await Promise.all(Array.from({ length: CLIENTS }, worker));
  clearInterval(watcher);
  const secs = (Date.now() - t0) / 1000;
  const m = await metrics(srv.url);
  console.log(`load: ${TOTAL} requests in ${secs.toFixed(2)} s, decode ${m.mlxcel_decode_tokens_per_second.toFixed(0)} tok/s ` +
    `(${m.mlxcel_decode_tokens_total} tokens in ${m.mlxcel_decode_steps_total} steps), peak in flight ${peak}`);
  assert.equal(failed, 0, JSON.stringify(mismatches.slice(0, 3)));
  assert.deepEqual(mismatches.slice(0, 3), []);
  assert.equal(m.mlxcel_queue_depth, 0);
  assert.equal(m.mlxcel_active_sequences, 0);
  assert.equal(m.mlxcel_generations_cancelled_total, 0);
  assert.equal(m.mlxcel_generations_failed_total, 0);
  // Batching happened: decode steps advanced several sequences at once on average.
  assert.ok(m.mlxcel_decode_tokens_total / m.mlxcel_decode_steps_total > 2,
    `${m.mlxcel_decode_tokens_total} tokens in ${m.mlxcel_decode_steps_total} steps`);
});
