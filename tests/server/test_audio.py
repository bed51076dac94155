"""Audio in chat completions (issue 24 item 4; ADR 0022) with the official openai client: OpenAI
content parts {"type": "input_audio", "input_audio": {"data": "<base64 WAV>", "format": "wav"}}
through the tiny Gemma 3n with its audio tower that transformers' own classes wrote
(tests/data/families/gemma3n-audio, with the byte-level tokenizer of tests/cli_audio_tokenizer.py
and a plain chat template), answered as `mlxcel generate --audio` answers the same prompt text
(text, prompt and completion token counts: the usage counts the audio tokens), alone and beside
a concurrent request; and the requests the server refuses: another format, bad base64, bytes
that are not a WAV, a recording past --max-audio-samples (413), a model without an audio tower.

Run by tests/server/run.sh (ctest server_audio).
"""

import base64
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import unittest

import openai

from harness import ROOT, Server, cli_generate, remove_tree

FIXTURE = os.path.join(ROOT, "tests", "data", "families", "gemma3n-audio")
WAV = os.path.join(ROOT, "tests", "data", "audio", "pluck-pcm16.wav")
LLAVA = os.path.join(ROOT, "tests", "data", "families", "llava")
TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}model:{% endif %}")
QUESTION = "What is this?"
N = 8


def make_model():
    """The fixture with a tokenizer and TEMPLATE as its chat template, in a temporary directory."""
    d = tempfile.mkdtemp(prefix="mlxcel-audio-")
    for f in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(FIXTURE, f), os.path.join(d, f))
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "cli_audio_tokenizer.py"), d],
                   check=True)
    path = os.path.join(d, "tokenizer_config.json")
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["chat_template"] = TEMPLATE
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return d


def audio_part(data, fmt="wav"):
    return {"type": "input_audio", "input_audio": {"data": data, "format": fmt}}


def wav_b64(path=WAV):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def audio_message(data, fmt="wav"):
    return [{"role": "user",
             "content": [audio_part(data, fmt), {"type": "text", "text": QUESTION}]}]


class AudioTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = make_model()
        cls.srv = Server(cls.model, ["--parallel", "2", "--max-audio-samples", "100000"])
        cls.client = cls.srv.client()
        # The template's text with the audio placeholder where the part was, through generate.
        cls.cli = cli_generate(cls.model, ["-p", f"user: <audio_soft_token>{QUESTION}\nmodel:",
                                           "--audio", WAV, "-n", str(N), "--temp", "0",
                                           "--ignore-eos"])

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        remove_tree(cls.model)

    def ask(self, messages, **kw):
        return self.client.chat.completions.create(model=os.path.basename(self.model),
                                                   messages=messages,
                                                   max_tokens=N, temperature=0,
                                                   extra_body={"ignore_eos": True}, **kw)

    def check_reply(self, r):
        self.assertEqual(r.choices[0].message.content, self.cli.text)
        self.assertEqual(r.usage.prompt_tokens, self.cli.summary["prompt_tokens"])
        self.assertEqual(r.usage.completion_tokens, N)

    def test_01_as_generate(self):
        r = self.ask(audio_message(wav_b64()))
        self.check_reply(r)
        # "user: " + "\n\n<start_of_audio>" + 6 audio tokens + "<end_of_audio>\n\n" + the question
        # + "\nmodel:": the audio tokens are counted.
        text = len(f"user: {QUESTION}\nmodel:".encode())
        self.assertEqual(r.usage.prompt_tokens, text + 4 + 2 + 6)

    def test_02_concurrent(self):
        with concurrent.futures.ThreadPoolExecutor(3) as ex:
            fs = [ex.submit(self.ask, audio_message(wav_b64())) for _ in range(2)]
            ft = ex.submit(self.ask, [{"role": "user", "content": "Hello there"}])
            for f in fs:
                self.check_reply(f.result())
            self.assertEqual(ft.result().usage.completion_tokens, N)

    def refused(self, messages, status, needle):
        with self.assertRaises(openai.APIStatusError) as cm:
            self.ask(messages)
        self.assertEqual(cm.exception.status_code, status)
        self.assertIn(needle, str(cm.exception))

    def test_03_refusals(self):
        self.refused(audio_message(wav_b64(), "mp3"), 400, "the audio format is 'mp3'")
        self.refused(audio_message("@@@@"), 400, "base64 is not valid")
        self.refused(audio_message(base64.b64encode(b"not a wav file at all").decode()), 400,
                     "audio 0: wav")
        self.refused([{"role": "user", "content": [{"type": "input_audio"}]}], 400, "input_audio")
        # 16 kHz mono PCM16 of 200000 samples: past --max-audio-samples 100000.
        n = 200000
        hdr = (b"RIFF" + (36 + 2 * n).to_bytes(4, "little") + b"WAVEfmt " +
               (16).to_bytes(4, "little") + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") +
               (16000).to_bytes(4, "little") + (32000).to_bytes(4, "little") +
               (2).to_bytes(2, "little") + (16).to_bytes(2, "little") + b"data" +
               (2 * n).to_bytes(4, "little"))
        big = base64.b64encode(hdr + bytes(2 * n)).decode()
        self.refused(audio_message(big), 413, "exceed the limit of 100000")

    def test_04_model_without_audio(self):
        srv = Server(LLAVA, [])
        try:
            with self.assertRaises(openai.APIStatusError) as cm:
                srv.client().chat.completions.create(model="llava",
                                                     messages=audio_message(wav_b64()),
                                                     max_tokens=2)
            self.assertEqual(cm.exception.status_code, 400)
            self.assertIn("takes no audio: it has no audio tower", str(cm.exception))
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
