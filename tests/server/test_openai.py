"""`mlxcel serve` driven by the official `openai` Python client on a loopback port: models list,
completions and chat completions (plain and streaming) against `mlxcel generate` references,
stop strings, sampling parameters, usage counts, error statuses, API keys, metrics, a client
that disconnects mid-stream, a SIGTERM drain and the idle timeout.

Tests that need a request to still be running at some moment (a disconnect, a signal, a queue
wait) size it from the server's measured decode speed (harness.seconds_per_token), so that they
hold on a fast machine as on a slow, loaded one.

Run by tests/server/run.sh (ctest server_openai). The methods of a class run in the order of
their names (test_01_..., test_02_...): the metrics test counts the requests of those before it.
"""

import json
import math
import os
import signal
import socket
import time
import unittest

import openai

from harness import (
    CHAT_TEMPLATE, REFERENCE_GREEDY, SLOW_MODEL, STORIES, Server, background, cli_generate,
    detokenize, make_chat_model,
    metrics, raw, remove_tree, scaled, seconds_per_token, tokens_lasting, wait_metrics,
)

PROMPTS = ["Once upon a time", "One day, a little dog named", "Lily and Tom", "The sun"]


def finish_name(summary):
    """The API's finish_reason for a `mlxcel generate --json` summary."""
    return "length" if summary["finish_reason"] == "length" else "stop"


class ServerTest(unittest.TestCase):
    """A server per class (setUpClass), which must exit 0 on SIGTERM at the end."""

    model_dir = STORIES
    server_args = ()
    srv = None

    @classmethod
    def setUpClass(cls):
        cls.srv = Server(cls.model_dir, cls.server_args)
        cls.client = cls.srv.client()

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        code = cls.srv.stop()
        if code != 0:
            raise AssertionError(f"the server exited {code}:\n{cls.srv.log()}")

    def assert_api_error(self, error, call, status, code=None, param=None, message=None):
        """call() raises `error` (an openai.APIStatusError class) with this HTTP status and,
        when given, this error code, param and a message matching the regex `message`."""
        with self.assertRaises(error) as cm:
            call()
        e = cm.exception
        self.assertEqual(e.status_code, status, e.message)
        if code is not None:
            self.assertEqual(e.code, code, e.message)
        if param is not None:
            self.assertEqual(e.param, param, e.message)
        if message is not None:
            self.assertRegex(e.message, message)
        return e


def read_completion_stream(stream):
    """(text, finish_reason, usage, number of chunks) of a streamed completion."""
    text, finish, usage, chunks = "", None, None, 0
    for c in stream:
        chunks += 1
        if c.usage:
            usage = c.usage
        for ch in c.choices:
            text += ch.text
            if ch.finish_reason:
                finish = ch.finish_reason
    return text, finish, usage, chunks


# ---- stories260K on 4 slots ----

class Stories(ServerTest):
    server_args = ("--parallel", "4", "--ctx", "512", "--max-body", "65536")

    def complete(self, **body):
        return self.client.completions.create(model="stories260K", **body)

    def test_01_models_list(self):
        models = self.client.models.list()
        self.assertEqual([m.id for m in models.data], ["stories260K"])
        self.assertEqual(models.data[0].object, "model")
        self.assertEqual(self.client.models.retrieve("stories260K").id, "stories260K")

    def test_02_greedy_completions_equal_mlxcel_generate_with_usage(self):
        for i, prompt in enumerate(PROMPTS):
            n = 20 + 17 * i
            ref = cli_generate(STORIES, ["-p", prompt, "-n", str(n), "--temp", "0"])
            r = self.complete(prompt=prompt, max_tokens=n, temperature=0)
            self.assertEqual(r.object, "text_completion")
            self.assertEqual(r.choices[0].text, ref.text, f"prompt {prompt}")
            self.assertEqual(r.choices[0].finish_reason, finish_name(ref.summary))
            self.assertEqual(r.usage.prompt_tokens, ref.summary["prompt_tokens"])
            self.assertEqual(r.usage.completion_tokens, ref.summary["generated_tokens"])
            self.assertEqual(r.usage.total_tokens,
                             r.usage.prompt_tokens + r.usage.completion_tokens)

    def test_03_prompt_as_token_ids(self):
        ids = [1, 403, 407, 261, 378]
        ref = cli_generate(STORIES, ["--prompt-ids", ",".join(map(str, ids)), "-n", "12",
                                     "--temp", "0"])
        r = self.complete(prompt=ids, max_tokens=12, temperature=0)
        self.assertEqual(r.choices[0].text, ref.text)
        self.assertEqual(r.usage.prompt_tokens, 5)

    def test_03a_greedy_streams_follow_llama2c_together(self):
        """The greedy runs of upstream llama2.c (../shared reference-greedy.json, 251-256 tokens
        each), streamed at the same time (so decoded in shared batches): each stream's text is
        that of llama2.c's ids, a reference this engine did not write."""
        if not os.path.exists(REFERENCE_GREEDY):
            self.skipTest(f"{REFERENCE_GREEDY} not found (set MX_SHARED)")
        with open(REFERENCE_GREEDY, encoding="utf-8") as f:
            runs = json.load(f)["runs"]
        self.assertGreaterEqual(len(runs), 3)
        want, calls = [], []
        for run in runs:
            prompt, tokens = run["prompt_tokens"], run["tokens"]
            self.assertEqual(tokens[:len(prompt)], prompt)
            full = detokenize(STORIES, tokens)
            head = detokenize(STORIES, prompt)
            self.assertTrue(full.startswith(head))
            want.append(full[len(head):])
            body = {"model": "stories260K", "prompt": prompt, "temperature": 0,
                    "max_tokens": len(tokens) - len(prompt), "stream": True,
                    "extra_body": {"ignore_eos": True}}
            calls.append(background(
                lambda b=body: read_completion_stream(self.client.completions.create(**b))))
        for i, call in enumerate(calls):
            text, finish, _, _ = call.result(timeout=scaled(120))
            self.assertEqual(text, want[i], f"run {i}: the stream differs from llama2.c's ids")
            self.assertEqual(finish, "length")

    def test_04_ignore_eos_generates_past_eos_like_the_cli(self):
        ref = cli_generate(STORIES, ["-p", "The end", "-n", "300", "--temp", "0", "--ignore-eos"])
        r = self.complete(prompt="The end", max_tokens=300, temperature=0,
                          extra_body={"ignore_eos": True})
        self.assertEqual(r.choices[0].text, ref.text)
        self.assertEqual(r.usage.completion_tokens, 300)

    def test_05_streaming_completion_same_text_usage_chunk_and_done(self):
        body = dict(prompt="Once upon a time", max_tokens=30, temperature=0)
        whole = self.complete(**body)
        text, finish, usage, chunks = read_completion_stream(
            self.complete(**body, stream=True, stream_options={"include_usage": True}))
        self.assertEqual(text, whole.choices[0].text)
        self.assertEqual(finish, "length")
        # Text the client has not read yet goes out as one chunk, so the number of text chunks
        # depends on timing; but the finish reason and the usage always come in chunks of
        # their own after the text: at least 3. (Token-by-token delivery is checked on the
        # slower SmolLM2-135M shape below.)
        self.assertGreaterEqual(chunks, 3)
        self.assertEqual(usage, whole.usage)
        # The wire format: SSE data lines, the last one [DONE].
        r = raw(f"{self.srv.url}/v1/completions",
                body=json.dumps({"model": "stories260K", **body, "stream": True}))
        self.assertEqual(r.status, 200)
        self.assertRegex(r.headers["content-type"], r"^text/event-stream")
        events = [e for e in r.text.split("\n\n") if e]
        self.assertTrue(all(e.startswith("data: ") for e in events), events)
        self.assertEqual(events[-1], "data: [DONE]")

    def test_06_stop_strings_cut_the_text_like_the_cli(self):
        prompt = "Once upon a time"
        for stop in ("Lily", ["girl", "park"], "."):
            stops = stop if isinstance(stop, list) else [stop]
            flags = [f for s in stops for f in ("--stop", s)]
            ref = cli_generate(STORIES, ["-p", prompt, "-n", "80", "--temp", "0", *flags])
            r = self.complete(prompt=prompt, max_tokens=80, temperature=0, stop=stop)
            self.assertEqual(r.choices[0].text, ref.text, f"stop {stop!r}")
            self.assertEqual(r.choices[0].finish_reason, "stop")
            self.assertFalse(any(s in r.choices[0].text for s in stops))
            # Streaming holds back partial matches the same way.
            text, _, _, _ = read_completion_stream(
                self.complete(prompt=prompt, max_tokens=80, temperature=0, stop=stop,
                              stream=True))
            self.assertEqual(text, ref.text, f"stop {stop!r}, streamed")

    def test_07_sampling_parameters_follow_the_sampler(self):
        # Same seed, same text as the CLI. top_k, min_p and repetition_penalty are not in
        # OpenAI's schema: the client sends them through extra_body.
        cases = [
            (dict(temperature=0.9, seed=42), ["--temp", "0.9", "--seed", "42"]),
            (dict(temperature=1.0, seed=7, extra_body={"top_k": 5}),
             ["--temp", "1", "--top-k", "5", "--seed", "7"]),
            (dict(temperature=0.8, top_p=0.5, seed=3),
             ["--temp", "0.8", "--top-p", "0.5", "--seed", "3"]),
            (dict(temperature=0.7, seed=9, extra_body={"min_p": 0.2}),
             ["--temp", "0.7", "--min-p", "0.2", "--seed", "9"]),
            (dict(temperature=0, extra_body={"repetition_penalty": 1.3}),
             ["--temp", "0", "--repeat-penalty", "1.3"]),
        ]
        for params, flags in cases:
            ref = cli_generate(STORIES, ["-p", "Once upon a time", "-n", "40", *flags])
            r = self.complete(prompt="Once upon a time", max_tokens=40, **params)
            self.assertEqual(r.choices[0].text, ref.text, params)
        # Presence / frequency penalties change greedy text on a repetitive prompt, reproducibly.
        base = dict(prompt="Once upon a time", max_tokens=60, temperature=0)
        plain = self.complete(**base)
        pen = self.complete(**base, presence_penalty=2, frequency_penalty=2)
        pen2 = self.complete(**base, presence_penalty=2, frequency_penalty=2)
        self.assertNotEqual(pen.choices[0].text, plain.choices[0].text)
        self.assertEqual(pen.choices[0].text, pen2.choices[0].text)

    def test_08_chat_without_a_chat_template_is_a_clear_400(self):
        self.assert_api_error(
            openai.BadRequestError,
            lambda: self.client.chat.completions.create(
                model="stories260K", messages=[{"role": "user", "content": "hi"}]),
            400, code="no_chat_template", message="no chat template")

    def test_09_errors_are_openai_error_json_with_the_right_status(self):
        self.assert_api_error(openai.NotFoundError,
                              lambda: self.client.completions.create(model="gpt-4", prompt="x"),
                              404, code="model_not_found", message="gpt-4")
        long = "Once upon a time, there was a little girl. " * 80
        e = self.assert_api_error(openai.BadRequestError, lambda: self.complete(prompt=long),
                                  400, code="context_length_exceeded",
                                  message="context holds 512")
        self.assertRegex(e.message, r"\d+ tokens")
        self.assert_api_error(openai.BadRequestError,
                              lambda: self.complete(prompt="x", max_tokens=600), 400,
                              message="600")
        self.assert_api_error(openai.BadRequestError,
                              lambda: self.complete(prompt="x", max_tokens="ten"), 400,
                              param="max_tokens", message="integer")
        self.assert_api_error(openai.BadRequestError, lambda: self.complete(prompt="x", n=2),
                              400, param="n")
        self.assert_api_error(openai.BadRequestError,
                              lambda: self.complete(prompt="x", temperature=-1), 400,
                              param="temperature")
        url = self.srv.url
        r = raw(f"{url}/v1/completions", body='{"prompt": "x",')
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["error"]["type"], "invalid_request_error")
        self.assertRegex(r.json["error"]["message"], "not valid JSON")
        r = raw(f"{url}/v1/completions", body=json.dumps({"prompt": "x" * 70000}))
        self.assertEqual(r.status, 413)
        self.assertRegex(r.json["error"]["message"], "65536")
        self.assertEqual(raw(f"{url}/v1/nothing", method="GET").status, 404)
        self.assertEqual(raw(f"{url}/v1/completions", method="GET").status, 405)
        # The server still serves after all of that.
        ok = self.complete(prompt="The", max_tokens=3)
        self.assertEqual(ok.usage.completion_tokens, 3)

    def test_10_health_and_metrics(self):
        h = raw(f"{self.srv.url}/health", method="GET")
        self.assertEqual(h.status, 200)
        self.assertEqual(h.json, {"status": "ok"})
        m = metrics(self.srv.url)
        self.assertGreater(m['mlxcel_requests_total{endpoint="/v1/completions",code="200"}'], 10)
        self.assertGreaterEqual(
            m['mlxcel_requests_total{endpoint="/v1/completions",code="400"}'], 4)
        self.assertGreaterEqual(m["mlxcel_request_errors_total"], 8)
        self.assertGreater(m["mlxcel_completion_tokens_total"], 100)
        self.assertGreater(m["mlxcel_prompt_tokens_total"], 10)
        self.assertGreater(m["mlxcel_decode_tokens_per_second"], 0)
        self.assertGreater(m["mlxcel_prefill_tokens_per_second"], 0)
        self.assertEqual(m["mlxcel_queue_depth"], 0)
        self.assertEqual(m["mlxcel_slots"], 4)


# ---- Chat completions (stories260K with a chat template) ----

class Chat(ServerTest):
    server_args = ("--parallel", "2", "--alias", "tiny-chat")

    @classmethod
    def setUpClass(cls):
        cls.model_dir = make_chat_model()
        try:
            super().setUpClass()
        except BaseException:
            remove_tree(cls.model_dir)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            remove_tree(cls.model_dir)

    def chat(self, **body):
        return self.client.chat.completions.create(model="tiny-chat", **body)

    def test_01_chat_equals_generate_chat_and_streaming_deltas_add_up(self):
        self.assertIn("assistant:", CHAT_TEMPLATE)
        messages = [{"role": "system", "content": "Tell a story."},
                    {"role": "user", "content": "Once upon a time"}]
        ref = cli_generate(self.model_dir, ["--chat", "--system", "Tell a story.", "-p",
                                            "Once upon a time", "-n", "30", "--temp", "0"])
        r = self.chat(messages=messages, max_tokens=30, temperature=0)
        self.assertEqual(r.object, "chat.completion")
        self.assertEqual(r.choices[0].message.role, "assistant")
        self.assertEqual(r.choices[0].message.content, ref.text)
        self.assertEqual(r.usage.prompt_tokens, ref.summary["prompt_tokens"])
        self.assertEqual(r.usage.completion_tokens, ref.summary["generated_tokens"])

        stream = self.chat(messages=messages, max_tokens=30, temperature=0, stream=True,
                           stream_options={"include_usage": True})
        text, role, finish, usage = "", None, None, None
        for c in stream:
            self.assertEqual(c.object, "chat.completion.chunk")
            if c.usage:
                usage = c.usage
            for ch in c.choices:
                if ch.delta.role:
                    role = ch.delta.role
                if ch.delta.content:
                    text += ch.delta.content
                if ch.finish_reason:
                    finish = ch.finish_reason
        self.assertEqual(role, "assistant")
        self.assertEqual(text, ref.text)
        self.assertEqual(finish, r.choices[0].finish_reason)
        self.assertEqual((usage.prompt_tokens, usage.completion_tokens),
                         (r.usage.prompt_tokens, r.usage.completion_tokens))
        # The second run of the same prompt starts on the slot that holds the first: it prefills
        # only the prompt's last token (for its logits).
        self.assertEqual(r.usage.prompt_tokens_details.cached_tokens, 0)
        self.assertEqual(usage.prompt_tokens_details.cached_tokens, r.usage.prompt_tokens - 1)

    def test_02_chat_with_content_parts_and_a_stop_string(self):
        ref = cli_generate(self.model_dir, ["--chat", "-p", "Once upon a time", "-n", "60",
                                            "--temp", "0", "--stop", "girl"])
        parts = [{"type": "text", "text": "Once upon "}, {"type": "text", "text": "a time"}]
        r = self.chat(messages=[{"role": "user", "content": parts}], max_tokens=60,
                      temperature=0, stop=["girl"])
        self.assertEqual(r.choices[0].message.content, ref.text)
        self.assertEqual(r.choices[0].finish_reason, finish_name(ref.summary))

    def test_02a_a_chat_turn_reuses_the_earlier_turns_and_answers_as_without(self):
        # A three-turn chat, each turn the whole conversation so far, on this server (prefix
        # cache on, the default) and on one started with --no-prefix-cache: the same replies,
        # and here each later turn prefills only what follows the earlier turns.
        plain = Server(self.model_dir, ("--alias", "tiny-chat", "--no-prefix-cache"))
        try:
            without = plain.client()
            messages = [{"role": "system", "content": "Tell a story."},
                        {"role": "user", "content": "Lily had a red ball"}]
            for turn, follow_up in enumerate(["And then?", "What did Tom say?", None]):
                body = dict(model="tiny-chat", messages=messages, max_tokens=24, temperature=0)
                r = self.chat(**{k: v for k, v in body.items() if k != "model"})
                ref = without.chat.completions.create(**body)
                self.assertEqual(r.choices[0].message.content, ref.choices[0].message.content)
                self.assertEqual(r.usage.prompt_tokens, ref.usage.prompt_tokens)
                self.assertEqual(ref.usage.prompt_tokens_details.cached_tokens, 0)
                cached = r.usage.prompt_tokens_details.cached_tokens
                if turn > 0:
                    # At least the earlier turns' prompt (the reply re-rendered by the template
                    # may tokenize differently from the ids generated).
                    self.assertGreaterEqual(cached, previous_prompt, r.usage)
                    self.assertLess(cached, r.usage.prompt_tokens)
                previous_prompt = r.usage.prompt_tokens
                if follow_up is None:
                    break
                messages += [{"role": "assistant", "content": r.choices[0].message.content},
                             {"role": "user", "content": follow_up}]
            without.close()
            self.assertGreater(metrics(self.srv.url)["mlxcel_prompt_cached_tokens_total"], 0)
        finally:
            self.assertEqual(plain.stop(), 0, plain.log())

    def test_03_chat_errors(self):
        self.assert_api_error(openai.BadRequestError, lambda: self.chat(messages=[]), 400,
                              param="messages")
        self.assert_api_error(openai.BadRequestError,
                              lambda: self.chat(messages=[{"role": "user", "content": 5}]), 400,
                              message="content")


# ---- API key ----

class ApiKey(ServerTest):
    server_args = ("--api-key", "sekrit")

    def test_401_without_or_with_a_wrong_key_works_with_the_key_health_open(self):
        url = self.srv.url
        with self.srv.client(api_key="wrong") as bad:
            self.assert_api_error(openai.AuthenticationError, bad.models.list, 401,
                                  code="invalid_api_key")
        self.assertEqual(raw(f"{url}/v1/completions", body='{"prompt":"x"}').status, 401)
        self.assertEqual(raw(f"{url}/metrics", method="GET").status, 401)
        self.assertEqual(raw(f"{url}/health", method="GET").status, 200)
        with self.srv.client(api_key="sekrit") as good:
            c = good.completions.create(model="stories260K", prompt="Once", max_tokens=4)
        self.assertEqual(c.usage.completion_tokens, 4)


# ---- One slot on the SmolLM2-135M shape: delivery, disconnects, shutdown, timeouts ----

# A SmolLM2-135M-shape model (random weights, setup.sh writes it): decoding takes milliseconds
# to tens of milliseconds per token, so that a request can hold its slot for seconds. Its
# servers get a context large enough for requests sized to last seconds on a fast machine too.
SLOW_CTX = 4096
SLOW_ROOM = SLOW_CTX - 64  # what the context leaves after the prompt (9 tokens), rounded down


def slow_body(n, **extra):
    return dict(model="smollm2-135m", prompt="Once upon a time", max_tokens=n, temperature=0,
                extra_body={"ignore_eos": True}, **extra)


class OneSlotTest(unittest.TestCase):
    """Each test starts its own one-slot server (metrics counted from zero)."""

    def start(self, *args):
        srv = Server(SLOW_MODEL, ("--parallel", "1", "--ctx", str(SLOW_CTX), *args))
        # Only matters when an assertion failed before the test stopped it.
        self.addCleanup(srv.stop, signal.SIGKILL)
        return srv

    def stop(self, srv):
        self.assertEqual(srv.stop(), 0, srv.log())


class SlowModel(OneSlotTest):
    def test_a_stream_delivers_its_tokens_one_by_one(self):
        srv = self.start()
        with srv.client(api_key="x") as client:
            whole = client.completions.create(**slow_body(16))
            text, pieces = "", 0
            for c in client.completions.create(**slow_body(16, stream=True)):
                t = c.choices[0].text if c.choices else ""
                if t:
                    pieces += 1
                    text += t
        self.assertEqual(text, whole.choices[0].text)
        # The server sends the text of each decode step as soon as the step ends; only text
        # published while its connection thread was still sending the previous chunk shares a
        # chunk. A step of this model takes milliseconds, that thread microseconds: nearly every
        # token arrives as its own chunk (a few may still share one).
        self.assertGreaterEqual(pieces, 12, f"{pieces} text chunks for 16 tokens")
        self.stop(srv)

    def test_a_client_that_disconnects_mid_stream_frees_its_slot_at_once(self):
        srv = self.start()
        per_token = seconds_per_token(srv, slow_body)
        # "At once": within a few decode steps (the server notices when it next writes to the
        # gone client), not after the rest of a generation sized to take 4 times that bound.
        bound = max(2.0, 25 * per_token)
        n = tokens_lasting(4 * bound, per_token, 200, SLOW_ROOM)
        m0 = metrics(srv.url)
        with srv.client(api_key="x") as client:
            seen = 0
            with client.completions.create(**slow_body(n, stream=True)) as stream:
                for c in stream:
                    if c.choices:
                        seen += 1
                    if seen == 3:
                        break
            # Leaving the with block closed the response, and with it the connection.
            t0 = time.monotonic()
            m = wait_metrics(srv.url, lambda m: m["mlxcel_generations_cancelled_total"]
                             > m0["mlxcel_generations_cancelled_total"], 2 * bound)
            freed = time.monotonic() - t0
            self.assertEqual(seen, 3)
            self.assertEqual(m["mlxcel_generations_cancelled_total"], 1,
                             "the generation was cancelled")
            self.assertEqual(m["mlxcel_active_sequences"], 0)
            self.assertEqual(m["mlxcel_completion_tokens_total"],
                             m0["mlxcel_completion_tokens_total"], "nothing ran to the end")
            self.assertLess(freed, bound, f"slot freed after {freed * 1000:.0f} ms "
                            f"({per_token * 1000:.1f} ms a token, {n} tokens asked)")
            # The only slot is free: the next request runs.
            r = client.completions.create(**slow_body(3))
            self.assertEqual(r.usage.completion_tokens, 3)
        self.stop(srv)

    def test_sigterm_drains_the_requests_in_flight_then_exits_0(self):
        srv = self.start()
        per_token = seconds_per_token(srv, slow_body)
        # The stream must still be running when the signal comes, a few milliseconds after it
        # started: sized to take 3 s, and at least 30 tokens.
        n = tokens_lasting(3.0, per_token, 30, SLOW_ROOM)
        client = srv.client(api_key="x")
        self.addCleanup(client.close)
        ref = client.completions.create(**slow_body(n))
        p = ref.usage.prompt_tokens
        m0 = metrics(srv.url)
        stream = client.completions.create(**slow_body(n, stream=True))
        # A second request waits in the queue behind the stream and must finish too.
        queued = background(client.completions.create, **slow_body(5))
        # Both requests are in (their prompts counted) before the signal.
        key = "mlxcel_prompt_tokens_total"
        m = wait_metrics(srv.url, lambda m: m[key] - m0[key] >= 2 * p, scaled(60))
        self.assertEqual(m[key] - m0[key], 2 * p, "both requests were accepted")
        srv.send_signal(signal.SIGTERM)
        text, finish, _, _ = read_completion_stream(stream)
        self.assertEqual(text, ref.choices[0].text)
        self.assertEqual(finish, "length")
        self.assertEqual(queued.result(timeout=scaled(120)).usage.completion_tokens, 5)
        self.assertEqual(srv.wait(), 0, srv.log())
        # The signal came while the stream was running: its log line (written when it ends)
        # follows the signal's; the first line with the same counts is the reference's.
        log = srv.log()
        sig = log.find("SIGTERM: finishing")
        tag = f" {p}+{n} tokens"
        self.assertGreater(sig, 0, log)
        self.assertGreater(log.find(tag, log.find(tag) + 1), sig, log)
        with self.assertRaises(OSError):
            raw(f"{srv.url}/health", method="GET")


class Timeouts(OneSlotTest):
    """--timeout 1: the idle timeout is for clients that stall, not for requests that wait."""

    def test_requests_queued_longer_than_the_idle_timeout_still_complete(self):
        srv = self.start("--timeout", "1")
        per_token = seconds_per_token(srv, slow_body)
        # The requests ahead hold the only slot for about 4.5 s in all, so that the two behind
        # them wait in the queue well past the 1 s idle timeout: one request of at least 40
        # tokens, or several in a row where the context cannot hold 4.5 s of decoding.
        hold = 4.5
        n = tokens_lasting(hold, per_token, 40, SLOW_ROOM)
        holders = math.ceil(hold / (n * per_token))
        client = srv.client(api_key="x")
        self.addCleanup(client.close)

        def streamed_tokens():
            body = slow_body(n, stream=True, stream_options={"include_usage": True})
            return read_completion_stream(client.completions.create(**body))[2].completion_tokens

        ahead = [background(client.completions.create, **slow_body(n)) for _ in range(holders)]
        m = wait_metrics(srv.url, lambda m: m["mlxcel_active_sequences"] == 1
                         and m["mlxcel_queue_depth"] == holders - 1, scaled(60))
        self.assertEqual(m["mlxcel_active_sequences"], 1, "a request holds the slot")
        self.assertEqual(m["mlxcel_queue_depth"], holders - 1, "the others wait")
        b = background(client.completions.create, **slow_body(n))
        c = background(streamed_tokens)
        # The server's own view of the queue, which it serves in order: the last two requests
        # both wait while it holds two or more. The time they waited is at least the time from
        # the first sample that shows them queued to the last one that still does.
        m = wait_metrics(srv.url, lambda m: m["mlxcel_queue_depth"] == holders + 1, scaled(60))
        first = last = time.monotonic()
        self.assertEqual(m["mlxcel_queue_depth"], holders + 1, "two more requests wait")
        while metrics(srv.url)["mlxcel_queue_depth"] >= 2 and time.monotonic() - first < 300:
            last = time.monotonic()
            time.sleep(0.005)
        waited = last - first
        self.assertGreater(waited, 1.5, f"the queue wait exceeded the 1 s idle timeout "
                           f"({waited * 1000:.0f} ms behind {holders} request(s) of {n} tokens)")
        done = [r.result(timeout=scaled(300)) for r in ahead]
        for r in done:
            self.assertEqual(r.usage.completion_tokens, n)
        self.assertEqual(b.result(timeout=scaled(300)).choices[0].text, done[0].choices[0].text)
        self.assertEqual(c.result(timeout=scaled(300)), n)
        self.stop(srv)

    def test_a_client_that_stalls_mid_request_is_disconnected_after_the_idle_timeout(self):
        srv = Server(STORIES, ("--timeout", "1"))
        self.addCleanup(srv.stop, signal.SIGKILL)
        t0 = time.monotonic()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=scaled(10)) as sock:
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
            try:
                while sock.recv(4096):  # b"" once the server has closed the connection
                    pass
            except socket.timeout:
                self.fail(f"not closed within {scaled(10):.0f} s")
            except ConnectionResetError:
                pass  # a reset is a close too
        closed = time.monotonic() - t0
        self.assertTrue(0.9 <= closed < scaled(5.0), f"closed after {closed * 1000:.0f} ms")
        self.assertEqual(raw(f"{srv.url}/health", method="GET").status, 200)
        self.stop(srv)


if __name__ == "__main__":
    unittest.main()
