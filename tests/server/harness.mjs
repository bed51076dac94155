// Test harness for `mlxcel serve`: starts the server on a free loopback port, runs the CLI for
// reference outputs, and builds a chat-capable copy of stories260K. Loopback only.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const MLXCEL = process.env.MLXCEL;
export const ROOT = process.env.MX_ROOT;
export const STORIES = path.join(ROOT ?? '.', 'models', 'stories260K');

if (!MLXCEL || !ROOT) throw new Error('set MLXCEL (the binary) and MX_ROOT (the repository)');

// Starts `mlxcel serve -m DIR --port 0 ARGS...`; resolves once it listens.
export function startServer(dir, args = [], { env = {} } = {}) {
  const proc = spawn(MLXCEL, ['serve', '-m', dir, '--host', '127.0.0.1', '--port', '0', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`server did not start in 60 s:\n${log}`));
    }, 60000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(log);
      if (m && timer) {
        clearTimeout(timer);
        resolve({
          url: m[1],
          port: Number(m[2]),
          proc,
          exited,
          log: () => log,
          // SIGTERM, then the exit status (SIGKILL after 60 s).
          async stop(signal = 'SIGTERM') {
            if (proc.exitCode !== null || proc.signalCode !== null) return exited;
            proc.kill(signal);
            const t = setTimeout(() => proc.kill('SIGKILL'), 60000);
            const r = await exited;
            clearTimeout(t);
            return r;
          },
        });
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? signal}) before listening:\n${log}`));
    });
  });
}

// What `mlxcel generate --json` gives for the same request alone (a plain session, no server).
export function cliGenerate(dir, args) {
  const out = execFileSync(MLXCEL, ['generate', '-m', dir, '--json', '--no-echo', ...args], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  let text = '';
  let summary = null;
  for (const line of out.split('\n')) {
    if (!line.trim()) continue;
    const j = JSON.parse(line);
    if (j.type === 'summary') summary = j;
    else text += j.text;
  }
  return { text, summary };
}

// stories260K plus a chat_template in tokenizer_config.json (stories260K has none), in a
// temporary directory; the weights are symlinked.
export const CHAT_TEMPLATE =
  "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}" +
  "{% if add_generation_prompt %}assistant:{% endif %}";

export function makeChatModel() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mlxcel-chat-'));
  for (const f of ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json']) {
    fs.symlinkSync(path.join(STORIES, f), path.join(dir, f));
  }
  const cfg = JSON.parse(fs.readFileSync(path.join(STORIES, 'tokenizer_config.json'), 'utf8'));
  cfg.chat_template = CHAT_TEMPLATE;
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(cfg));
  return dir;
}

// Raw HTTP (for what the client library hides: malformed bodies, headers, SSE lines).
export async function raw(url, { method = 'POST', body, headers = {} } = {}) {
  const r = await fetch(url, {
    method,
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: r.status, headers: r.headers, text, json };
}

export async function metrics(url) {
  const r = await fetch(`${url}/metrics`);
  const out = {};
  for (const line of (await r.text()).split('\n')) {
    const m = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
