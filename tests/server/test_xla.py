"""`mlxcel serve --backend xla` on the PJRT CPU plugin of the test environment: 8 concurrent
streaming clients send 16 greedy requests to stories260K served with 4 slots (so requests also
queue, and prompts longer than the 16-token prefill chunk are prefilled in pieces between
decode steps). Every stream must equal the same request run by the cpu backend alone
(`mlxcel generate --backend cpu`): text and finish reason. Streams that speculate (prompt
lookup, ADR 0024) beside a plain one equal the cpu backend's plain text too.

Run by tests/server/run.sh (ctest server_xla).
"""

import os
import tempfile
import threading
import unittest

import lammps_jax_pjrt_cpu  # the plugin of tests/requirements.txt: missing fails, never skips

from harness import STORIES, Server, cli_generate, remove_tree

CLIENTS = 8
STARTS = ["Once upon a time", "One day, a little dog", "Lily and Tom went to the park",
          "The sun was"]
LONG = ("Once upon a time, there was a little girl named Lily. She loved to play outside in "
        "the park with her friends. ")


def requests():
    out = []
    for i in range(8):
        prompt = (LONG + STARTS[i % 4]) if i % 3 == 2 else STARTS[i % 4]
        out.append(dict(model="stories260K", prompt=prompt, temperature=0,
                        max_tokens=6 + (i * 13) % 40))
    return out


class Xla(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cache = tempfile.mkdtemp(prefix="mx_xla_serve_")
        os.environ["MLXCEL_XLA_CACHE_DIR"] = cls.cache
        cls.srv = Server(STORIES, ("--backend", "xla", "--pjrt-plugin",
                                   lammps_jax_pjrt_cpu.PLUGIN_PATH, "--parallel", "4", "--ctx",
                                   "256", "--prefill-chunk", "16", "--quiet"))
        cls.client = cls.srv.client(api_key="x", timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        code = cls.srv.stop()
        remove_tree(cls.cache)
        if code != 0:
            raise AssertionError(f"the server exited {code}:\n{cls.srv.log()}")

    def streamed(self, body):
        stream = self.client.completions.create(**body, stream=True)
        text, finish = "", None
        for c in stream:
            for ch in c.choices:
                text += ch.text
                if ch.finish_reason:
                    finish = ch.finish_reason
        return text, finish

    def test_concurrent_streams_equal_the_cpu_backend(self):
        reqs = requests()
        want = []
        for r in reqs:
            ref = cli_generate(STORIES, ["-p", r["prompt"], "-n", str(r["max_tokens"]), "--temp",
                                         "0", "--ctx", "256", "--backend", "cpu"])
            want.append((ref.text, ref.summary["finish_reason"]))
        got = [None] * (2 * len(reqs))
        errors = []

        def worker(w):
            for i in range(w, len(got), CLIENTS):
                try:
                    got[i] = self.streamed(reqs[i % len(reqs)])
                except Exception as e:  # every failure is reported below
                    errors.append(repr(e))

        threads = [threading.Thread(target=worker, args=(w,)) for w in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for i, g in enumerate(got):
            self.assertEqual(g, want[i % len(reqs)], f"request {i}")

    def test_speculative_streams_equal_the_cpu_backend(self):
        """Prompt-lookup speculation (ADR 0024) verifies drafts with the xla batch's all-logits
        prefill: greedy streams equal the cpu backend's plain ones, beside a plain stream."""
        rep = LONG + LONG + "Once upon a time, there was a little girl"
        reqs = [dict(model="stories260K", prompt=rep, temperature=0, max_tokens=60,
                     extra_body={"ignore_eos": True, "speculative": "ngram"}),
                dict(model="stories260K", prompt=rep, temperature=0, max_tokens=45,
                     extra_body={"ignore_eos": True, "speculative": {"num_speculative_tokens": 3}}),
                dict(model="stories260K", prompt=STARTS[1], temperature=0, max_tokens=40,
                     extra_body={"ignore_eos": True})]
        want = [cli_generate(STORIES, ["-p", r["prompt"], "-n", str(r["max_tokens"]), "--temp",
                                       "0", "--ctx", "256", "--backend", "cpu", "--ignore-eos"])
                for r in reqs]
        got = [None] * len(reqs)

        def worker(i):
            got[i] = self.streamed(reqs[i])

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(reqs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, g in enumerate(got):
            self.assertEqual(g, (want[i].text, "length"), f"request {i}")
        r = self.client.completions.create(**reqs[0])
        spec = (r.usage.model_extra or {}).get("speculative")
        self.assertGreater(spec["accepted_tokens"], 0, spec)


if __name__ == "__main__":
    unittest.main()
