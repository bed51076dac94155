// `mlxcel serve` driven by the official `openai` npm client on a loopback port: models list,
// completions and chat completions (plain and streaming) against `mlxcel generate` references,
// stop strings, sampling parameters, usage counts, error statuses, API keys, metrics, a client
// that disconnects mid-stream, and a SIGTERM drain.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';

import {
  CHAT_TEMPLATE, STORIES, cliGenerate, makeChatModel, metrics, raw, sleep, startServer,
} from './harness.mjs';

const PROMPTS = ['Once upon a time', 'One day, a little dog named', 'Lily and Tom', 'The sun'];

describe('stories260K on 4 slots', () => {
  let srv;
  let client;
  before(async () => {
    srv = await startServer(STORIES, ['--parallel', '4', '--ctx', '512', '--max-body', '65536']);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    const r = await srv.stop();
    assert.equal(r.code, 0, srv.log());
  });

  test('models list', async () => {
    const list = await client.models.list();
    assert.deepEqual(list.data.map((m) => m.id), ['stories260K']);
    assert.equal(list.data[0].object, 'model');
    const one = await client.models.retrieve('stories260K');
    assert.equal(one.id, 'stories260K');
  });

  test('greedy completions equal mlxcel generate, with usage counts', async () => {
    for (const [i, prompt] of PROMPTS.entries()) {
      const n = 20 + 17 * i;
      const ref = cliGenerate(STORIES, ['-p', prompt, '-n', String(n), '--temp', '0']);
      const r = await client.completions.create({
        model: 'stories260K', prompt, max_tokens: n, temperature: 0,
      });
      assert.equal(r.object, 'text_completion');
      assert.equal(r.choices[0].text, ref.text, `prompt ${prompt}`);
      assert.equal(r.choices[0].finish_reason, ref.summary.finish_reason === 'length' ? 'length' : 'stop');
      assert.equal(r.usage.prompt_tokens, ref.summary.prompt_tokens);
      assert.equal(r.usage.completion_tokens, ref.summary.generated_tokens);
      assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    }
  });

  test('a prompt given as token ids', async () => {
    const ref = cliGenerate(STORIES, ['--prompt-ids', '1,403,407,261,378', '-n', '12', '--temp', '0']);
    const r = await client.completions.create({
      model: 'stories260K', prompt: [1, 403, 407, 261, 378], max_tokens: 12, temperature: 0,
    });
    assert.equal(r.choices[0].text, ref.text);
    assert.equal(r.usage.prompt_tokens, 5);
  });

  test('ignore_eos generates past end-of-sequence like mlxcel generate --ignore-eos', async () => {
    const ref = cliGenerate(STORIES, ['-p', 'The end', '-n', '300', '--temp', '0', '--ignore-eos']);
    const r = await client.completions.create({
      model: 'stories260K', prompt: 'The end', max_tokens: 300, temperature: 0, ignore_eos: true,
    });
    assert.equal(r.choices[0].text, ref.text);
    assert.equal(r.usage.completion_tokens, 300);
  });

  test('streaming completion: same text, usage chunk, [DONE]', async () => {
    const body = { model: 'stories260K', prompt: 'Once upon a time', max_tokens: 30, temperature: 0 };
    const whole = await client.completions.create(body);
    const stream = await client.completions.create({
      ...body, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let finish = null;
    let usage = null;
    let chunks = 0;
    for await (const c of stream) {
      chunks++;
      if (c.usage) usage = c.usage;
      for (const ch of c.choices) {
        text += ch.text;
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    }
    assert.equal(text, whole.choices[0].text);
    assert.equal(finish, 'length');
    // Tokens the client has not read yet go out together, and this model decodes thousands
    // of tokens per second, so the count depends on timing: at least text, finish and usage.
    // (Token-by-token delivery is checked on the slower SmolLM2-135M shape below.)
    assert.ok(chunks >= 3, `${chunks} chunks`);
    assert.deepEqual(usage, whole.usage);
    // The wire format: SSE data lines, the last one [DONE].
    const r = await raw(`${srv.url}/v1/completions`, { body: JSON.stringify({ ...body, stream: true }) });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/event-stream/);
    const events = r.text.split('\n\n').filter((e) => e);
    assert.ok(events.every((e) => e.startsWith('data: ')));
    assert.equal(events.at(-1), 'data: [DONE]');
  });

  test('stop strings (a string and a list) cut the text like mlxcel generate --stop', async () => {
    const prompt = 'Once upon a time';
    for (const stop of ['Lily', ['girl', 'park'], '.']) {
      const list = Array.isArray(stop) ? stop : [stop];
      const ref = cliGenerate(STORIES, ['-p', prompt, '-n', '80', '--temp', '0', ...list.flatMap((s) => ['--stop', s])]);
      const r = await client.completions.create({ prompt, max_tokens: 80, temperature: 0, stop, model: 'stories260K' });
      assert.equal(r.choices[0].text, ref.text, `stop ${JSON.stringify(stop)}`);
      assert.equal(r.choices[0].finish_reason, 'stop');
      assert.ok(!list.some((s) => r.choices[0].text.includes(s)));
      // Streaming holds back partial matches the same way.
      const s = await client.completions.create({ prompt, max_tokens: 80, temperature: 0, stop, stream: true, model: 'stories260K' });
      let t = '';
      for await (const c of s) t += c.choices.map((x) => x.text).join('');
      assert.equal(t, ref.text);
    }
  });

  test('sampling parameters follow the sampler (same seed, same text as the CLI)', async () => {
    const cases = [
      [{ temperature: 0.9, seed: 42 }, ['--temp', '0.9', '--seed', '42']],
      [{ temperature: 1.0, top_k: 5, seed: 7 }, ['--temp', '1', '--top-k', '5', '--seed', '7']],
      [{ temperature: 0.8, top_p: 0.5, seed: 3 }, ['--temp', '0.8', '--top-p', '0.5', '--seed', '3']],
      [{ temperature: 0.7, min_p: 0.2, seed: 9 }, ['--temp', '0.7', '--min-p', '0.2', '--seed', '9']],
      [{ temperature: 0, repetition_penalty: 1.3 }, ['--temp', '0', '--repeat-penalty', '1.3']],
    ];
    for (const [params, flags] of cases) {
      const ref = cliGenerate(STORIES, ['-p', 'Once upon a time', '-n', '40', ...flags]);
      const r = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 40, ...params });
      assert.equal(r.choices[0].text, ref.text, JSON.stringify(params));
    }
    // Presence / frequency penalties change greedy text on a repetitive prompt, reproducibly.
    const base = { model: 'stories260K', prompt: 'Once upon a time', max_tokens: 60, temperature: 0 };
    const plain = await client.completions.create(base);
    const pen = await client.completions.create({ ...base, presence_penalty: 2, frequency_penalty: 2 });
    const pen2 = await client.completions.create({ ...base, presence_penalty: 2, frequency_penalty: 2 });
    assert.notEqual(pen.choices[0].text, plain.choices[0].text);
    assert.equal(pen.choices[0].text, pen2.choices[0].text);
  });

  test('chat on a model without a chat template is a clear 400', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'hi' }] }),
      (e) => e.status === 400 && /no chat template/.test(e.message) && e.code === 'no_chat_template',
    );
  });

  test('errors: OpenAI error JSON with the right status', async () => {
    await assert.rejects(
      client.completions.create({ model: 'gpt-4', prompt: 'x' }),
      (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found' && /gpt-4/.test(e.message),
    );
    const long = 'Once upon a time, there was a little girl. '.repeat(80);
    await assert.rejects(
      client.completions.create({ model: 'stories260K', prompt: long }),
      (e) => e.status === 400 && e.code === 'context_length_exceeded' && /context holds 512/.test(e.message) && /\d+ tokens/.test(e.message),
    );
    await assert.rejects(
      client.completions.create({ model: 'stories260K', prompt: 'x', max_tokens: 600 }),
      (e) => e.status === 400 && /600/.test(e.message),
    );
    await assert.rejects(
      client.completions.create({ model: 'stories260K', prompt: 'x', max_tokens: 'ten' }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'max_tokens' && /integer/.test(e.message),
    );
    await assert.rejects(
      client.completions.create({ model: 'stories260K', prompt: 'x', n: 2 }),
      (e) => e.status === 400 && e.param === 'n',
    );
    await assert.rejects(
      client.completions.create({ model: 'stories260K', prompt: 'x', temperature: -1 }),
      (e) => e.status === 400 && e.param === 'temperature',
    );
    let r = await raw(`${srv.url}/v1/completions`, { body: '{"prompt": "x",' });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.type, 'invalid_request_error');
    assert.match(r.json.error.message, /not valid JSON/);
    r = await raw(`${srv.url}/v1/completions`, { body: JSON.stringify({ prompt: 'x'.repeat(70000) }) });
    assert.equal(r.status, 413);
    assert.match(r.json.error.message, /65536/);
    r = await raw(`${srv.url}/v1/nothing`, { method: 'GET' });
    assert.equal(r.status, 404);
    r = await raw(`${srv.url}/v1/completions`, { method: 'GET' });
    assert.equal(r.status, 405);
    // The server still serves after all of that.
    const ok = await client.completions.create({ model: 'stories260K', prompt: 'The', max_tokens: 3 });
    assert.equal(ok.usage.completion_tokens, 3);
  });

  test('health and metrics', async () => {
    const h = await raw(`${srv.url}/health`, { method: 'GET' });
    assert.equal(h.status, 200);
    assert.deepEqual(h.json, { status: 'ok' });
    const m = await metrics(srv.url);
    assert.ok(m['mlxcel_requests_total{endpoint="/v1/completions",code="200"}'] > 10);
    assert.ok(m['mlxcel_requests_total{endpoint="/v1/completions",code="400"}'] >= 4);
    assert.ok(m.mlxcel_request_errors_total >= 8);
    assert.ok(m.mlxcel_completion_tokens_total > 100);
    assert.ok(m.mlxcel_prompt_tokens_total > 10);
    assert.ok(m.mlxcel_decode_tokens_per_second > 0 && m.mlxcel_prefill_tokens_per_second > 0);
    assert.equal(m.mlxcel_queue_depth, 0);
    assert.equal(m.mlxcel_slots, 4);
  });
});

describe('chat completions (stories260K with a chat template)', () => {
  let srv;
  let client;
  let dir;
  before(async () => {
    dir = makeChatModel();
    srv = await startServer(dir, ['--parallel', '2', '--alias', 'tiny-chat']);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    assert.equal((await srv.stop()).code, 0);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('chat completion equals mlxcel generate --chat; streaming deltas add up', async () => {
    assert.ok(CHAT_TEMPLATE.includes('assistant:'));
    const messages = [
      { role: 'system', content: 'Tell a story.' },
      { role: 'user', content: 'Once upon a time' },
    ];
    const ref = cliGenerate(dir, ['--chat', '--system', 'Tell a story.', '-p', 'Once upon a time', '-n', '30', '--temp', '0']);
    const r = await client.chat.completions.create({ model: 'tiny-chat', messages, max_tokens: 30, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(r.choices[0].message.content, ref.text);
    assert.equal(r.usage.prompt_tokens, ref.summary.prompt_tokens);
    assert.equal(r.usage.completion_tokens, ref.summary.generated_tokens);

    const stream = await client.chat.completions.create({
      model: 'tiny-chat', messages, max_tokens: 30, temperature: 0, stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let role = null;
    let finish = null;
    let usage = null;
    for await (const c of stream) {
      assert.equal(c.object, 'chat.completion.chunk');
      if (c.usage) usage = c.usage;
      for (const ch of c.choices) {
        if (ch.delta.role) role = ch.delta.role;
        if (ch.delta.content) text += ch.delta.content;
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    }
    assert.equal(role, 'assistant');
    assert.equal(text, ref.text);
    assert.equal(finish, r.choices[0].finish_reason);
    assert.deepEqual(usage, r.usage);
  });

  test('chat with content parts and a stop string', async () => {
    const ref = cliGenerate(dir, ['--chat', '-p', 'Once upon a time', '-n', '60', '--temp', '0', '--stop', 'girl']);
    const r = await client.chat.completions.create({
      model: 'tiny-chat',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Once upon ' }, { type: 'text', text: 'a time' }] }],
      max_tokens: 60, temperature: 0, stop: ['girl'],
    });
    assert.equal(r.choices[0].message.content, ref.text);
    assert.equal(r.choices[0].finish_reason, ref.summary.finish_reason === 'length' ? 'length' : 'stop');
  });

  test('chat errors', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'tiny-chat', messages: [] }),
      (e) => e.status === 400 && e.param === 'messages',
    );
    await assert.rejects(
      client.chat.completions.create({ model: 'tiny-chat', messages: [{ role: 'user', content: 5 }] }),
      (e) => e.status === 400 && /content/.test(e.message),
    );
  });
});

describe('API key', () => {
  let srv;
  before(async () => {
    srv = await startServer(STORIES, ['--api-key', 'sekrit']);
  });
  after(async () => assert.equal((await srv.stop()).code, 0));

  test('401 without or with a wrong key; works with the key; /health is open', async () => {
    const bad = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.code === 'invalid_api_key');
    const r = await raw(`${srv.url}/v1/completions`, { body: '{"prompt":"x"}' });
    assert.equal(r.status, 401);
    assert.equal((await raw(`${srv.url}/metrics`, { method: 'GET' })).status, 401);
    assert.equal((await raw(`${srv.url}/health`, { method: 'GET' })).status, 200);
    const good = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'sekrit', maxRetries: 0 });
    const c = await good.completions.create({ model: 'stories260K', prompt: 'Once', max_tokens: 4 });
    assert.equal(c.usage.completion_tokens, 4);
  });
});

// A SmolLM2-135M-shape model (random weights, setup.sh writes it): decoding takes tens of ms per
// token, so requests are reliably still running when a client leaves or a signal comes.
const SLOW = process.env.MX_SLOW_MODEL;
const slowBody = (n, extra = {}) => ({
  model: 'smollm2-135m', prompt: 'Once upon a time', max_tokens: n, temperature: 0, ignore_eos: true, ...extra,
});

describe('disconnects and shutdown (one slot, SmolLM2-135M shape)', () => {
  test('a stream delivers its tokens one by one as they are decoded', async () => {
    const srv = await startServer(SLOW, ['--parallel', '1', '--ctx', '256']);
    try {
      const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const whole = await client.completions.create(slowBody(16));
      const stream = await client.completions.create(slowBody(16, { stream: true }));
      let text = '';
      let pieces = 0;
      for await (const c of stream) {
        const t = c.choices[0]?.text;
        if (t) {
          pieces++;
          text += t;
        }
      }
      assert.equal(text, whole.choices[0].text);
      // Each step of this model takes milliseconds, far longer than a client needs to read a
      // chunk: nearly every token arrives as its own chunk (a few may still share one).
      assert.ok(pieces >= 12, `${pieces} text chunks for 16 tokens`);
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  });
  test('a client that disconnects mid-stream frees its slot at once', async () => {
    const srv = await startServer(SLOW, ['--parallel', '1', '--ctx', '256']);
    try {
      const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const ac = new AbortController();
      const stream = await client.completions.create(slowBody(200, { stream: true }), { signal: ac.signal });
      let n = 0;
      try {
        for await (const c of stream) {
          if (c.choices[0]?.text !== undefined && ++n === 3) ac.abort();
        }
      } catch {
        // the abort ends the iteration
      }
      const t0 = Date.now();
      let m;
      for (let i = 0; i < 300; i++) {
        m = await metrics(srv.url);
        if (m.mlxcel_generations_cancelled_total === 1) break;
        await sleep(10);
      }
      assert.equal(m.mlxcel_generations_cancelled_total, 1, 'the generation was cancelled');
      assert.equal(m.mlxcel_active_sequences, 0);
      assert.equal(m.mlxcel_completion_tokens_total, 0, 'nothing ran to the end');
      assert.ok(Date.now() - t0 < 2000, `slot freed after ${Date.now() - t0} ms`);
      // The only slot is free: the next request runs.
      const r = await client.completions.create(slowBody(3));
      assert.equal(r.usage.completion_tokens, 3);
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  });

  test('SIGTERM drains the requests in flight, then exits 0', async () => {
    const srv = await startServer(SLOW, ['--parallel', '1', '--ctx', '256']);
    after(() => srv.stop('SIGKILL'));  // only matters when an assertion failed
    const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const ref = await client.completions.create(slowBody(30));
    const stream = await client.completions.create(slowBody(30, { stream: true }));
    // A second request waits in the queue behind the stream and must finish too.
    const queued = client.completions.create(slowBody(5));
    // Both requests are in (their prompts counted) before the signal.
    const p = ref.usage.prompt_tokens;
    for (let i = 0; i < 1000 && (await metrics(srv.url)).mlxcel_prompt_tokens_total < 3 * p; i++) await sleep(5);
    srv.proc.kill('SIGTERM');
    let text = '';
    let finish = null;
    for await (const c of stream) {
      text += c.choices[0].text;
      if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
    }
    assert.equal(text, ref.choices[0].text);
    assert.equal(finish, 'length');
    const q = await queued;
    assert.equal(q.usage.completion_tokens, 5);
    const r = await srv.exited;
    assert.equal(r.code, 0, srv.log());
    // The signal came while the stream was running: its log line (written when it ends) follows.
    const log = srv.log();
    const sig = log.indexOf('SIGTERM: finishing');
    const tag = `${p}+30 tokens`;
    assert.ok(sig > 0, log);
    assert.ok(log.indexOf(tag, log.indexOf(tag) + 1) > sig, log);
    await assert.rejects(fetch(`${srv.url}/health`));
  });
});

describe('timeouts (--timeout 1)', () => {
  test('requests waiting in the queue longer than the idle timeout still complete', async () => {
    const srv = await startServer(SLOW, ['--parallel', '1', '--ctx', '256', '--timeout', '1']);
    try {
      const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const t0 = Date.now();
      const [a, b, c] = await Promise.all([
        client.completions.create(slowBody(40)),
        client.completions.create(slowBody(40)),
        (async () => {
          let n = 0;
          for await (const ch of await client.completions.create(slowBody(40, { stream: true, stream_options: { include_usage: true } }))) {
            if (ch.usage) n = ch.usage.completion_tokens;
          }
          return n;
        })(),
      ]);
      assert.ok(Date.now() - t0 > 1500, `the queue wait exceeded the 1 s idle timeout (${Date.now() - t0} ms)`);
      assert.equal(a.usage.completion_tokens, 40);
      assert.equal(b.choices[0].text, a.choices[0].text);
      assert.equal(c, 40);
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  });

  test('a client that stalls mid-request is disconnected after the idle timeout', async () => {
    const srv = await startServer(STORIES, ['--timeout', '1']);
    try {
      const t0 = Date.now();
      const closed = await new Promise((resolve, reject) => {
        const sock = net.connect(srv.port, '127.0.0.1', () => sock.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\n'));
        sock.on('close', () => resolve(Date.now() - t0));
        sock.on('error', () => {});
        setTimeout(() => { sock.destroy(); reject(new Error('not closed within 10 s')); }, 10000);
      });
      assert.ok(closed >= 900 && closed < 5000, `closed after ${closed} ms`);
      const h = await raw(`${srv.url}/health`, { method: 'GET' });
      assert.equal(h.status, 200);
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  });
});
