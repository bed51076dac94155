"""Load test (bounded, loopback only): 16 concurrent streaming clients send 200 greedy requests
in total to stories260K served with 8 slots (so requests also queue, and prompts longer than the
16-token prefill chunk are prefilled in pieces between decode steps). Zero requests may fail,
and every stream must equal the same request's solo reference: its text, finish reason and usage
when it runs alone on the idle server.

Run by tests/server/run.sh (ctest server_load).
"""

import queue
import threading
import time
import unittest
from dataclasses import dataclass, field

from harness import STORIES, Server, cli_generate, metrics, scaled

CLIENTS = 16
TOTAL = 200

STARTS = [
    "Once upon a time", "One day, a little dog", "Lily and Tom went to the park", "The sun was",
    "Tim had a red ball.", "There was a big tree", "Mom said", "The cat and the bird",
    "Sara wanted to", "In the forest, a little bunny",
]
LONG = ("Once upon a time, there was a little girl named Lily. She loved to play outside in "
        "the park with her friends. One day, she saw a big red ball under a tree. ")


def requests():
    """25 distinct requests: short and long prompts (up to ~300 tokens), 1 to 120 new tokens,
    some with stop strings."""
    out = []
    for i in range(25):
        start = STARTS[i % len(STARTS)]
        prompt = LONG * (1 + i % 4) + start if i % 6 == 5 else start
        r = dict(model="stories260K", prompt=prompt, temperature=0,
                 max_tokens=1 if i == 3 else 8 + (i * 37) % 113)
        if i % 4 == 1:
            r["stop"] = "." if i % 8 == 1 else ["Lily", " big"]
        out.append(r)
    return out


@dataclass
class Streamed:
    text: str
    finish: str
    usage: tuple  # prompt, completion and total tokens
    # Prompt tokens the prefix cache supplied: depends on what the free slots held, not part of
    # the result a solo run must equal.
    cached: int = field(default=0, compare=False)


class Load(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(STORIES, ("--parallel", "8", "--ctx", "512", "--prefill-chunk", "16",
                                   "--quiet"))
        cls.client = cls.srv.client(api_key="x", timeout=scaled(120))

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        code = cls.srv.stop()
        if code != 0:
            raise AssertionError(f"the server exited {code}:\n{cls.srv.log()}")

    def streamed(self, body):
        stream = self.client.completions.create(**body, stream=True,
                                                stream_options={"include_usage": True})
        text, finish, usage, cached = "", None, None, 0
        for c in stream:
            if c.usage:
                usage = (c.usage.prompt_tokens, c.usage.completion_tokens, c.usage.total_tokens)
                cached = c.usage.prompt_tokens_details.cached_tokens
            for ch in c.choices:
                text += ch.text
                if ch.finish_reason:
                    finish = ch.finish_reason
        self.assertLess(cached, usage[0])
        return Streamed(text, finish, usage, cached)

    def test_16_streaming_clients_200_requests_each_equal_to_its_solo_run(self):
        reqs = requests()
        # Solo references: one request at a time on the idle server.
        solo = [self.streamed(r) for r in reqs]
        # Two of them against an independent path as well: the CLI on a plain session.
        for i in (0, 5):
            stop = reqs[i].get("stop", [])
            stops = [f for s in ([stop] if isinstance(stop, str) else stop) for f in ("--stop", s)]
            ref = cli_generate(STORIES, ["-p", reqs[i]["prompt"], "-n", str(reqs[i]["max_tokens"]),
                                         "--temp", "0", "--ctx", "512", *stops])
            self.assertEqual(solo[i].text, ref.text)
        self.assertTrue(any(s.usage[0] > 64 for s in solo),
                        "some prompts span several chunks")

        todo = queue.SimpleQueue()
        for i in range(TOTAL):
            todo.put(i)
        lock = threading.Lock()
        mismatches = []
        failed = 0

        def worker():
            nonlocal failed
            while True:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                k = i % len(reqs)
                try:
                    got = self.streamed(reqs[k])
                    if got != solo[k]:
                        with lock:
                            mismatches.append({"i": i, "k": k, "got": got, "want": solo[k]})
                except Exception as e:  # every failure is counted and reported below
                    with lock:
                        failed += 1
                        mismatches.append({"i": i, "k": k, "error": repr(e)})

        peak = 0
        done = threading.Event()

        def watcher():
            nonlocal peak
            while not done.wait(0.05):
                try:
                    m = metrics(self.srv.url)
                except OSError:
                    continue  # the server is busy; the next sample counts
                peak = max(peak, m["mlxcel_active_sequences"] + m["mlxcel_queue_depth"])

        t0 = time.monotonic()
        threads = [threading.Thread(target=worker) for _ in range(CLIENTS)]
        sampler = threading.Thread(target=watcher)
        for t in threads + [sampler]:
            t.start()
        for t in threads:
            t.join()
        done.set()
        sampler.join()
        secs = time.monotonic() - t0
        m = metrics(self.srv.url)
        tokens, steps = m["mlxcel_decode_tokens_total"], m["mlxcel_decode_steps_total"]
        print(f"load: {TOTAL} requests in {secs:.2f} s, decode "
              f"{m['mlxcel_decode_tokens_per_second']:.0f} tok/s ({tokens:.0f} tokens in "
              f"{steps:.0f} steps), peak in flight {peak:.0f}, "
              f"{m['mlxcel_prompt_cached_tokens_total']:.0f} prompt tokens cached", flush=True)
        self.assertEqual(failed, 0, mismatches[:3])
        self.assertEqual(mismatches[:3], [])
        self.assertEqual(m["mlxcel_queue_depth"], 0)
        self.assertEqual(m["mlxcel_active_sequences"], 0)
        self.assertEqual(m["mlxcel_generations_cancelled_total"], 0)
        self.assertEqual(m["mlxcel_generations_failed_total"], 0)
        # Batching happened: decode steps advanced several sequences at once on average.
        self.assertGreater(tokens / steps, 2, f"{tokens:.0f} tokens in {steps:.0f} steps")


if __name__ == "__main__":
    unittest.main()
