"""Speculative decoding in `mlxcel serve` (ADR 0024), driven by the official `openai` client:
prompt-lookup drafts verified per slot while the other slots decode in the batched calls.

Greedy streams with speculation equal those without it (and `mlxcel generate`'s) on stories260K
and on the Qwen2-VL fixture's text model (transformers wrote its weights), each beside a
concurrent request that does not speculate, whose text must not change either; seeded sampled
text equals `mlxcel generate --speculative ngram` with the same seed (the same acceptance rule
and random draws); the drafts and acceptances are counted in usage.speculative and /metrics;
bad option values, constrained output and an M-RoPE image with speculation are refused with a
400 naming "speculative"; the server's --speculative default applies to requests that say
nothing and yields to those that say "off" or cannot speculate. With --draft-model (stories260K's
4-bit MLX copy, written by `mlxcel quantize`: the same tokenizer, other logits) every request
drafts with it: greedy text equal to plain decoding beside a plain request, seeded sampled text
equal to `mlxcel generate --draft-model`, and prompt lookup still there per request.

Run by tests/server/run.sh (ctest server_spec).
"""

import concurrent.futures
import os
import subprocess
import tempfile
import unittest

import openai

from harness import (MLXCEL, ROOT, STORIES, Server, cli_generate, make_chat_model, metrics,
                     remove_tree)
from test_images import PHOTO, QWEN_TEMPLATE, data_url, image_part

QWEN2_VL = os.path.join(ROOT, "tests", "data", "families", "qwen2_vl")

# Text that repeats itself, as code editing or summarizing does: prompt lookup finds drafts.
REPEAT = ("Once upon a time, there was a little girl named Lily. She liked to play with her "
          "ball in the park. One day, Lily saw a big dog. Once upon a time, there was a little "
          "girl named Lily. She liked to play")
OTHER = "The sun was hot and Tom"


def spec_usage(usage):
    """usage.speculative (this server's extension), or None."""
    return (usage.model_extra or {}).get("speculative") if usage else None


def stream_text(client, **body):
    """(text, finish_reason, usage) of a streamed completion with the usage chunk."""
    text, finish, usage = "", None, None
    for c in client.completions.create(stream=True, stream_options={"include_usage": True},
                                       **body):
        if c.usage:
            usage = c.usage
        for ch in c.choices:
            text += ch.text
            finish = ch.finish_reason or finish
    return text, finish, usage


class SpecTest(unittest.TestCase):
    def assert_refused(self, call, message):
        with self.assertRaises(openai.BadRequestError) as cm:
            call()
        e = cm.exception
        self.assertEqual(e.status_code, 400, e.message)
        self.assertEqual(e.param, "speculative", e.message)
        self.assertRegex(e.message, message)


class Stories(SpecTest):
    """stories260K on 3 slots, speculation per request."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server(STORIES, ("--parallel", "3", "--ctx", "512"))
        cls.client = cls.srv.client()

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        code = cls.srv.stop()
        if code != 0:
            raise AssertionError(f"the server exited {code}:\n{cls.srv.log()}")

    def body(self, prompt, n, **extra):
        return dict(model="stories260K", prompt=prompt, max_tokens=n, temperature=0,
                    extra_body={"ignore_eos": True, **extra})

    def test_01_greedy_streams_equal_plain_beside_a_plain_request(self):
        drafted = accepted = 0
        cases = [(REPEAT, 160, "ngram"), (REPEAT, 97, {"num_speculative_tokens": 3}),
                 ("Lily and Tom", 120, {"method": "ngram", "prompt_lookup_max": 1}),
                 (OTHER, 60, True)]
        for prompt, n, spec in cases:
            ref = cli_generate(STORIES, ["-p", prompt, "-n", str(n), "--temp", "0",
                                         "--ignore-eos"])
            plain_other = stream_text(self.client, **self.body(OTHER, 80))
            with concurrent.futures.ThreadPoolExecutor(3) as ex:
                fast = ex.submit(stream_text, self.client, **self.body(prompt, n, speculative=spec))
                slow = ex.submit(stream_text, self.client, **self.body(prompt, n))
                other = ex.submit(stream_text, self.client, **self.body(OTHER, 80))
                fast, slow, other = fast.result(), slow.result(), other.result()
            self.assertEqual(slow[0], ref.text, prompt)
            self.assertEqual(fast[0], ref.text, f"{prompt}: speculation changed the text")
            self.assertEqual(other[0], plain_other[0], "the plain neighbour's text changed")
            self.assertEqual(fast[1], "length")
            self.assertEqual(fast[2].completion_tokens, n)
            self.assertIsNone(spec_usage(slow[2]))
            s = spec_usage(fast[2])
            self.assertIsNotNone(s)
            self.assertGreater(s["steps"], 0)
            self.assertLessEqual(s["accepted_tokens"], s["drafted_tokens"])
            # Every step yields 1 + its accepted drafts (the last step's may pass max_tokens);
            # the first token comes from the prefill.
            self.assertGreaterEqual(s["steps"] + s["accepted_tokens"], n - 1, s)
            self.assertLess(s["steps"] + s["accepted_tokens"], n - 1 + 8, s)
            self.assertAlmostEqual(s["accepted_tokens_per_step"],
                                   s["accepted_tokens"] / s["steps"], places=3)
            drafted += s["drafted_tokens"]
            accepted += s["accepted_tokens"]
        # The repetitive text must have drafted and accepted; some drafts were wrong.
        self.assertGreater(accepted, 20)
        self.assertGreater(drafted, accepted)

    def test_02_non_streaming_and_stop_strings_as_plain(self):
        for stop in (None, [" park"], ["Lily. She"]):
            ref = cli_generate(STORIES, ["-p", REPEAT, "-n", "120", "--temp", "0"] +
                               (["--stop", stop[0]] if stop else []))
            b = self.body(REPEAT, 120, speculative="ngram")
            b["extra_body"].pop("ignore_eos")
            r = self.client.completions.create(stop=stop, **b)
            self.assertEqual(r.choices[0].text, ref.text, stop)
            self.assertEqual(r.usage.completion_tokens, ref.summary["generated_tokens"], stop)
            self.assertEqual(r.choices[0].finish_reason,
                             "length" if ref.summary["finish_reason"] == "length" else "stop")

    def test_03_seeded_sampling_equals_generate_speculative(self):
        for seed, temp, k in ((5, 0.8, 7), (11, 1.0, 3)):
            ref = cli_generate(STORIES, ["-p", REPEAT, "-n", "80", "--temp", str(temp),
                                         "--seed", str(seed), "--ignore-eos", "--speculative",
                                         "ngram", "--draft-tokens", str(k)])
            r = self.client.completions.create(
                model="stories260K", prompt=REPEAT, max_tokens=80, temperature=temp, seed=seed,
                extra_body={"ignore_eos": True, "speculative": {"num_speculative_tokens": k}})
            self.assertEqual(r.choices[0].text, ref.text, (seed, temp, k))
            self.assertEqual(spec_usage(r.usage)["steps"], ref.summary["spec_steps"])

    def test_04_bad_values_are_refused(self):
        bad = [("bogus", "not supported"), ({"method": "draft_model"}, "needs a draft model"),
               ("draft_model", "started without --draft-model"),
               ({"num_speculative_tokens": 0}, "1..32"), ({"num_speculative_tokens": 33}, "1..32"),
               ({"num_speculative_tokens": 2.5}, "1..32"), ({"prompt_lookup_max": 0}, "1..32"),
               ({"num_speculative_tokens": "4"}, "1..32"), ({"draft": 3}, "no field 'draft'"),
               (7, "must be"), ([], "must be")]
        for value, message in bad:
            self.assert_refused(lambda v=value: self.client.completions.create(
                model="stories260K", prompt="x", max_tokens=2,
                extra_body={"speculative": value}), message)
        # "off" and false decode plainly; null means absent.
        for value in ("off", False, {"method": "off"}, None):
            r = self.client.completions.create(model="stories260K", prompt="x", max_tokens=2,
                                               extra_body={"speculative": value})
            self.assertIsNone(spec_usage(r.usage), value)

    def test_05_metrics_count_steps_drafts_and_acceptances(self):
        m = metrics(self.srv.url)
        self.assertGreater(m["mlxcel_spec_steps_total"], 0)
        self.assertGreater(m["mlxcel_spec_accepted_tokens_total"], 20)
        self.assertGreater(m["mlxcel_spec_drafted_tokens_total"],
                           m["mlxcel_spec_accepted_tokens_total"])
        self.assertAlmostEqual(m["mlxcel_spec_accepted_tokens_per_step"],
                               m["mlxcel_spec_accepted_tokens_total"] /
                               m["mlxcel_spec_steps_total"], places=9)


class ServerDefault(SpecTest):
    """--speculative ngram: requests speculate unless they say "off" or cannot (constrained
    output), and asking for it with constrained output is a 400."""

    def test_default_off_and_constrained_output(self):
        d = make_chat_model()
        try:
            srv = Server(d, ("--alias", "c", "--speculative", "ngram", "--draft-tokens", "4"))
            try:
                client = srv.client()
                base = dict(model="c", prompt=REPEAT, max_tokens=90, temperature=0)
                on = client.completions.create(**base)
                off = client.completions.create(**base, extra_body={"speculative": "off"})
                self.assertEqual(on.choices[0].text, off.choices[0].text)
                self.assertIsNone(spec_usage(off.usage))
                s = spec_usage(on.usage)
                self.assertGreater(s["accepted_tokens"], 0)
                self.assertLessEqual(s["drafted_tokens"], 4 * s["steps"])
                msgs = [{"role": "user", "content": "Give me an object"}]
                fmt = {"type": "json_object"}
                r = client.chat.completions.create(model="c", messages=msgs, max_tokens=8,
                                                   temperature=0, response_format=fmt)
                self.assertIsNone(spec_usage(r.usage))
                self.assert_refused(lambda: client.chat.completions.create(
                    model="c", messages=msgs, max_tokens=8, response_format=fmt,
                    extra_body={"speculative": "ngram"}), "constrained output")
            finally:
                srv.stop()
        finally:
            remove_tree(d)


class Qwen2VL(SpecTest):
    """The Qwen2-VL fixture: greedy text with and without speculation beside a plain request; an
    image (M-RoPE positions) with speculation asked for is a 400, without it the server's
    default leaves it off."""

    def test_text_equal_and_images_refused(self):
        d = make_chat_model(QWEN_TEMPLATE, QWEN2_VL)
        try:
            srv = Server(d, ("--alias", "q", "--parallel", "3", "--speculative", "ngram"))
            try:
                client = srv.client()
                rep = "one two three four five six one two three four five six one two three"

                def ask(prompt, spec, n=48):
                    return client.completions.create(
                        model="q", prompt=prompt, max_tokens=n, temperature=0,
                        extra_body={"ignore_eos": True, "speculative": spec})

                lone = ask("Hello there", "off", 40)
                with concurrent.futures.ThreadPoolExecutor(3) as ex:
                    fast = ex.submit(ask, rep, "ngram")
                    slow = ex.submit(ask, rep, "off")
                    other = ex.submit(ask, "Hello there", "off", 40)
                    fast, slow, other = fast.result(), slow.result(), other.result()
                ref = cli_generate(QWEN2_VL, ["-p", rep, "-n", "48", "--temp", "0",
                                              "--ignore-eos"])
                self.assertEqual(slow.choices[0].text, ref.text)
                self.assertEqual(fast.choices[0].text, ref.text)
                self.assertEqual(other.choices[0].text, lone.choices[0].text)
                self.assertGreater(spec_usage(fast.usage)["steps"], 0)
                msgs = [{"role": "user", "content": [
                    {"type": "text", "text": "Look: "}, image_part(data_url(PHOTO)),
                    {"type": "text", "text": "What is in the picture?"}]}]
                self.assert_refused(lambda: client.chat.completions.create(
                    model="q", messages=msgs, max_tokens=4, extra_body={"speculative": "ngram"}),
                    "M-RoPE image")
                r = client.chat.completions.create(model="q", messages=msgs, max_tokens=4,
                                                   temperature=0)
                self.assertEqual(r.usage.completion_tokens, 4)
                self.assertIsNone(spec_usage(r.usage))
            finally:
                srv.stop()
        finally:
            remove_tree(d)


class DraftModel(SpecTest):
    """--draft-model: stories260K drafted for by its 4-bit copy, on 3 slots."""

    @classmethod
    def setUpClass(cls):
        cls.draft = tempfile.mkdtemp(prefix="mlxcel-draft-")
        subprocess.run([MLXCEL, "quantize", "-m", STORIES, "-o", cls.draft, "--bits", "4",
                        "--group-size", "32"], check=True, capture_output=True)
        cls.srv = Server(STORIES, ("--parallel", "3", "--ctx", "512", "--draft-model",
                                   cls.draft, "--draft-tokens", "5"))
        cls.client = cls.srv.client()

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        code = cls.srv.stop()
        remove_tree(cls.draft)
        if code != 0:
            raise AssertionError(f"the server exited {code}:\n{cls.srv.log()}")

    def body(self, prompt, n, **extra):
        return dict(model="stories260K", prompt=prompt, max_tokens=n, temperature=0,
                    extra_body={"ignore_eos": True, **extra})

    def test_01_greedy_equal_plain_beside_a_plain_request(self):
        drafted = accepted = 0
        # Nothing said: the server's default (its draft model); then asked for by name, with
        # another k; then prompt lookup on the same server.
        for prompt, n, extra in ((OTHER, 90, {}), ("Lily and Tom", 70,
                                 {"speculative": {"method": "draft_model",
                                                  "num_speculative_tokens": 2}}),
                                 (REPEAT, 60, {"speculative": "ngram"})):
            ref = cli_generate(STORIES, ["-p", prompt, "-n", str(n), "--temp", "0",
                                         "--ignore-eos"])
            plain_other = stream_text(self.client, **self.body(REPEAT, 50, speculative="off"))
            with concurrent.futures.ThreadPoolExecutor(2) as ex:
                fast = ex.submit(stream_text, self.client, **self.body(prompt, n, **extra))
                other = ex.submit(stream_text, self.client,
                                  **self.body(REPEAT, 50, speculative="off"))
                fast, other = fast.result(), other.result()
            self.assertEqual(fast[0], ref.text, f"{prompt}: the draft model changed the text")
            self.assertEqual(other[0], plain_other[0], "the plain neighbour's text changed")
            self.assertIsNone(spec_usage(other[2]))
            u = spec_usage(fast[2])
            self.assertGreaterEqual(u["steps"] + u["accepted_tokens"], n - 1, u)
            drafted += u["drafted_tokens"]
            accepted += u["accepted_tokens"]
        # The 4-bit copy agrees often and not always.
        self.assertGreater(accepted, 30)
        self.assertGreater(drafted, accepted)

    def test_02_seeded_sampling_equals_generate_with_the_draft_model(self):
        for seed, temp, k in ((3, 0.8, 5), (9, 1.0, 2)):
            ref = cli_generate(STORIES, ["-p", OTHER, "-n", "60", "--temp", str(temp), "--seed",
                                         str(seed), "--ignore-eos", "--draft-model", self.draft,
                                         "--draft-tokens", str(k)])
            r = self.client.completions.create(
                model="stories260K", prompt=OTHER, max_tokens=60, temperature=temp, seed=seed,
                extra_body={"ignore_eos": True, "speculative": {"num_speculative_tokens": k}})
            self.assertEqual(r.choices[0].text, ref.text, (seed, temp, k))
            self.assertEqual(spec_usage(r.usage)["steps"], ref.summary["spec_steps"])
            self.assertEqual(spec_usage(r.usage)["accepted_tokens"],
                             ref.summary["spec_accepted"])


if __name__ == "__main__":
    unittest.main()
