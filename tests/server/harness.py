"""Test harness for `mlxcel serve`: starts the server on a free loopback port, runs the CLI for
reference outputs, builds a chat-capable copy of stories260K, speaks raw HTTP for what the openai
client hides, and measures the server's decode speed so that tests can size their requests to
last long enough on any machine. Loopback only.

Environment (tests/server/run.sh sets it): MLXCEL (the binary), MX_ROOT (the repository),
MX_SLOW_MODEL (the random-weight SmolLM2-135M-shape model that setup.sh writes).
"""

import concurrent.futures
import http.client
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass

import openai

MLXCEL = os.environ.get("MLXCEL")
ROOT = os.environ.get("MX_ROOT")
SLOW_MODEL = os.environ.get("MX_SLOW_MODEL")
if not MLXCEL or not ROOT:
    raise RuntimeError("set MLXCEL (the binary) and MX_ROOT (the repository)")
STORIES = os.path.join(ROOT, "models", "stories260K")
# Upstream llama2.c's greedy runs of stories260K (ids and text), from the shared data folder.
SHARED = os.environ.get("MX_SHARED") or os.path.join(ROOT, "..", "shared")
REFERENCE_GREEDY = os.path.join(SHARED, "models", "stories260K", "reference-greedy.json")

# Sanitizer builds run several times slower: every bound on a wait is multiplied by the scale
# tests/CMakeLists.txt sets for the build (1 for Release).
TIMEOUT_SCALE = float(os.environ.get("MX_TIMEOUT_SCALE", "1"))


def scaled(seconds):
    """A wait of `seconds` on a Release build, scaled for this build."""
    return seconds * TIMEOUT_SCALE


LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:(\d+))")


# ---- The server process ----

class Server:
    """`mlxcel serve -m DIR --port 0 ARGS...`, started and listening when the constructor returns.

    The server's stderr is read by a thread into log() from the start, so that a test can look
    at the order of its lines (the log is complete once the process has exited).
    """

    def __init__(self, model_dir, args=(), start_timeout=None):
        cmd = [MLXCEL, "serve", "-m", model_dir, "--host", "127.0.0.1", "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors="replace")
        self._lines = []
        self._lock = threading.Lock()
        self._listening = threading.Event()
        self.url = None
        self.port = None
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        start_timeout = start_timeout or scaled(60.0)
        self._listening.wait(start_timeout)
        if self.url is None:
            self.proc.kill()
            self.proc.wait()
            self._reader.join()
            raise RuntimeError(f"server did not start in {start_timeout:.0f} s "
                               f"(exit {self.proc.returncode}):\n{self.log()}")

    def _read_stderr(self):
        for line in self.proc.stderr:
            with self._lock:
                self._lines.append(line)
            m = LISTENING.search(line)
            if m and self.url is None:
                self.url, self.port = m.group(1), int(m.group(2))
                self._listening.set()
        self.proc.stderr.close()
        self._listening.set()  # exited before listening: the constructor reports it

    def log(self):
        with self._lock:
            return "".join(self._lines)

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=None):
        """The exit status once the process has ended (SIGKILL after `timeout` s); negative
        for a signal, as in subprocess."""
        try:
            self.proc.wait(timeout or scaled(60.0))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join()
        return self.proc.returncode

    def stop(self, sig=signal.SIGTERM):
        """Sends `sig` unless the server has already exited; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait()

    def client(self, api_key="unused", **kwargs):
        """The official client on this server; no retries, so that every error surfaces."""
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=api_key, max_retries=0, **kwargs)


# ---- References from the command line ----

@dataclass
class Generated:
    text: str
    summary: dict


def cli_generate(model_dir, args):
    """What `mlxcel generate --json` gives for the same request alone (a plain session)."""
    out = subprocess.run([MLXCEL, "generate", "-m", model_dir, "--json", "--no-echo", *args],
                         check=True, capture_output=True, text=True).stdout
    text, summary = "", None
    for line in out.splitlines():
        if not line.strip():
            continue
        j = json.loads(line)
        if j.get("type") == "summary":
            summary = j
        else:
            text += j["text"]
    return Generated(text, summary)


def detokenize(model_dir, ids):
    """`mlxcel detokenize --skip-special` of ids: the text of token ids nobody here chose."""
    return subprocess.run([MLXCEL, "detokenize", "-m", model_dir, "--skip-special", "--ids",
                           ",".join(map(str, ids))], check=True, capture_output=True,
                          text=True).stdout.removesuffix("\n")


# stories260K has no chat_template; this one makes it a chat model for the tests.
CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n"
                 "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")


def tokenize(model_dir, text):
    """`mlxcel tokenize --no-add-special` of text: ids as the server encodes a rendered chat."""
    out = subprocess.run([MLXCEL, "tokenize", "-m", model_dir, "--no-add-special", "--json",
                          text], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def make_chat_model(template=CHAT_TEMPLATE, base=STORIES):
    """The model in `base` (stories260K) with `template` as the chat_template of
    tokenizer_config.json (CHAT_TEMPLATE unless given), in a temporary directory (its other files
    symlinked); the caller removes it with remove_tree."""
    d = tempfile.mkdtemp(prefix="mlxcel-chat-")
    for f in os.listdir(base):
        if f not in ("tokenizer_config.json", "chat_template.jinja"):
            os.symlink(os.path.join(base, f), os.path.join(d, f))
    with open(os.path.join(base, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["chat_template"] = template
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return d


def remove_tree(d):
    shutil.rmtree(d, ignore_errors=True)


# ---- Raw HTTP (what the client library hides: malformed bodies, headers, SSE lines) ----

@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    text: str
    json: object


def raw(url, method="POST", body=None, headers=None, timeout=None):
    """One request on its own connection; the reply's body as text and, when it parses, JSON."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout or scaled(60.0))
    try:
        if isinstance(body, str):
            body = body.encode()
        conn.request(method, u.path or "/", body=body,
                     headers={"content-type": "application/json", **(headers or {})})
        r = conn.getresponse()
        text = r.read().decode("utf-8", errors="replace")
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        return Reply(r.status, r.headers, text, parsed)
    finally:
        conn.close()


METRIC_LINE = re.compile(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$")


def metrics(url):
    """GET /metrics as {name or name{labels}: value}."""
    out = {}
    for line in raw(f"{url}/metrics", method="GET").text.splitlines():
        m = METRIC_LINE.match(line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def wait_metrics(url, until, timeout):
    """Polls /metrics until `until(m)` holds or `timeout` s have passed; returns the last m."""
    end = time.monotonic() + timeout
    while True:
        m = metrics(url)
        if until(m) or time.monotonic() > end:
            return m
        time.sleep(0.005)


# ---- Speed: requests sized by the server's own decode time, not by guesses about the host ----

def seconds_per_token(srv, body):
    """The server's decode time per token (its /metrics counters) on one warm request.

    body(n) is the request for n new tokens. A first request faults the weights in; the second
    is measured. Tests size requests that must still be running at some point from this, with
    a wide margin, since the machine may be shared and change speed between here and there.
    """
    client = srv.client()
    try:
        client.completions.create(**body(4))
        m0 = metrics(srv.url)
        client.completions.create(**body(16))
        m1 = metrics(srv.url)
    finally:
        client.close()
    tokens = m1["mlxcel_decode_tokens_total"] - m0["mlxcel_decode_tokens_total"]
    seconds = m1["mlxcel_decode_seconds_total"] - m0["mlxcel_decode_seconds_total"]
    return seconds / tokens


def tokens_lasting(seconds, per_token, at_least, at_most):
    """max_tokens for a generation of about `seconds` at `per_token` s a token, within
    [at_least, at_most] (at_most: what the context leaves after the prompt). Says what it chose
    on stderr, for the log of a test that fails on some machine."""
    n = max(at_least, min(at_most, math.ceil(seconds / per_token)))
    print(f"  [{per_token * 1000:.1f} ms a token: {n} tokens for {seconds:g} s]", file=sys.stderr,
          flush=True)
    return n


def background(fn, *args, **kwargs):
    """Runs fn(*args, **kwargs) on a daemon thread (one that never holds up the interpreter's exit
    when a test fails while it waits on the server); returns its concurrent.futures.Future."""
    future = concurrent.futures.Future()

    def run():
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:  # handed to whoever calls future.result()
            future.set_exception(e)

    threading.Thread(target=run, daemon=True).start()
    return future
