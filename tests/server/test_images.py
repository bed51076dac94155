"""Images in chat completions (issue 23 item 5) with the official openai client: OpenAI content
parts {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}} through the tiny
LLaVA that transformers' own classes wrote (tests/data/families/llava, its references from
tools/vlm/make_llava_fixture.py), answered as `mlxcel generate --chat --image` answers the same
prompt (text, prompt and completion token counts), whether the chat template takes text (the
fixture's, "<image>\\n" written where the image was) or iterates content parts (llava-hf's
kind); and the requests the server refuses: URLs it would have to fetch, other data URLs, bad
base64, bad or hostile images, too many or too large images, a model without a vision tower,
--vision-backend (the tower on the interpreter; xla without its plugin refused at start), the
whole model on the xla backend. Gemma 3: its processor's
text-level expansion of <start_of_image>, as generate --chat --image and transformers. Qwen2-VL
and Qwen3-VL: grid-sized runs and M-RoPE positions through the batch, as transformers. Molmo2:
its processor's expansion, pooled tower and image block, as transformers.

Run by tests/server/run.sh (ctest server_images).
"""

import base64
import concurrent.futures
import json
import os
import subprocess
import tempfile
import unittest

import openai

from harness import (MLXCEL, ROOT, Server, cli_generate, detokenize, make_chat_model, raw,
                     remove_tree)

LLAVA = os.path.join(ROOT, "tests", "data", "families", "llava")
IMAGES = os.path.join(ROOT, "tests", "data", "image")
PHOTO = os.path.join(IMAGES, "inputs", "chelsea.png")
JPEG = os.path.join(IMAGES, "inputs", "camera_gray.jpg")
QUESTION = "What is in the picture?"  # the fixture's chat reference (vision_reference.json)

# A template of llava-hf's kind: content is a list of parts it iterates (a string would fail
# it); it writes "<image>\n" for an image part, as the fixture's template gets it written into
# the text.
PARTS_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ message['role'].upper() + ': ' }}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}{{ '<image>\n' }}"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{{ ' ' }}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}")


def data_url(path, mime=None):
    with open(path, "rb") as f:
        b = base64.b64encode(f.read()).decode()
    mime = mime or ("image/jpeg" if path.endswith(".jpg") else "image/png")
    return f"data:{mime};base64,{b}"


def image_part(url):
    return {"type": "image_url", "image_url": {"url": url}}


def image_message(url, text=QUESTION):
    return [{"role": "user", "content": [image_part(url), {"type": "text", "text": text}]}]


def reference():
    with open(os.path.join(LLAVA, "vision_reference.json"), encoding="utf-8") as f:
        return json.load(f)


class ImagesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(LLAVA, ["--parallel", "2", "--max-images", "3"])
        cls.client = cls.srv.client()
        # What generate --chat --image gives alone, and transformers' greedy ids for that prompt.
        cls.cli = cli_generate(LLAVA, ["--chat", "-p", QUESTION, "--image", PHOTO, "-n", "16",
                                       "--temp", "0"])
        cls.ref = reference()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def ask(self, messages, client=None, **kw):
        return (client or self.client).chat.completions.create(
            model="llava", messages=messages, max_tokens=16, temperature=0, **kw)

    def check_reply(self, r):
        self.assertEqual(r.choices[0].message.content, self.cli.text)
        self.assertEqual(r.usage.prompt_tokens, self.cli.summary["prompt_tokens"])
        self.assertEqual(r.usage.prompt_tokens, len(self.ref["chat_prompt_ids"]))
        self.assertEqual(r.usage.completion_tokens, 16)

    def test_01_photo_as_generate(self):
        r = self.ask(image_message(data_url(PHOTO)))
        self.check_reply(r)
        # The same text as transformers' greedy ids for this prompt.
        self.assertEqual(r.choices[0].message.content,
                         detokenize(LLAVA, self.ref["chat_greedy_ids"]))

    def test_02_streamed(self):
        chunks = self.ask(image_message(data_url(PHOTO)), stream=True,
                          stream_options={"include_usage": True})
        text, usage = "", None
        for c in chunks:
            if c.choices and c.choices[0].delta.content:
                text += c.choices[0].delta.content
            if c.usage:
                usage = c.usage
        self.assertEqual(text, self.cli.text)
        self.assertEqual(usage.prompt_tokens, self.cli.summary["prompt_tokens"])

    def test_03_concurrent_slots(self):
        # Two image requests and a text one share the batch: each image reply is a lone one's.
        text_msgs = [{"role": "user", "content": "Hello there"}]
        with concurrent.futures.ThreadPoolExecutor(3) as ex:
            fs = [ex.submit(self.ask, image_message(data_url(PHOTO))) for _ in range(2)]
            ft = ex.submit(self.ask, text_msgs)
            for f in fs:
                self.check_reply(f.result())
            self.assertEqual(ft.result().usage.completion_tokens, 16)

    def test_04_jpeg(self):
        cli = cli_generate(LLAVA, ["--chat", "-p", "Describe it.", "--image", JPEG, "-n", "8",
                                   "--temp", "0"])
        r = self.client.chat.completions.create(
            model="llava", messages=image_message(data_url(JPEG), "Describe it."), max_tokens=8,
            temperature=0)
        self.assertEqual(r.choices[0].message.content, cli.text)
        self.assertEqual(r.usage.prompt_tokens, cli.summary["prompt_tokens"])

    def test_05_two_images(self):
        # Two images in one message, two placeholders: 2 * 16 image tokens in the prompt.
        cli = cli_generate(LLAVA, ["-p", "USER: <image>\n<image>\nTwo? ASSISTANT:", "--image",
                                   PHOTO, "--image", JPEG, "-n", "8", "--temp", "0"])
        msgs = [{"role": "user", "content": [image_part(data_url(PHOTO)),
                                             image_part(data_url(JPEG)),
                                             {"type": "text", "text": "Two?"}]}]
        r = self.client.chat.completions.create(model="llava", messages=msgs, max_tokens=8,
                                                temperature=0)
        self.assertEqual(r.usage.prompt_tokens, cli.summary["prompt_tokens"])
        self.assertEqual(r.choices[0].message.content, cli.text)

    def test_06_special_text_stays_text(self):
        # "<image>" typed by the client is text, not an image token no image backs.
        r = self.ask([{"role": "user", "content": "<image> what?"}])
        self.assertEqual(r.usage.completion_tokens, 16)
        # The fixture's tokenizer is byte-level without merges: the spelling costs one token a
        # byte, as any other 7 bytes, where an image token would have added 16.
        r = self.ask(image_message(data_url(PHOTO), "<image> what?"))
        s = self.ask(image_message(data_url(PHOTO), "<imagX> what?"))
        self.assertEqual(r.usage.prompt_tokens, s.usage.prompt_tokens)

    def refused(self, messages, status, *needles, client=None):
        with self.assertRaises(openai.APIStatusError) as cm:
            self.ask(messages, client=client)
        self.assertEqual(cm.exception.status_code, status, str(cm.exception))
        for n in needles:
            self.assertIn(n, str(cm.exception))

    def test_07_urls_are_never_fetched(self):
        for url in ("http://127.0.0.1:9/cat.png", "https://example.com/cat.png",
                    "file:///etc/passwd", "cat.png"):
            self.refused(image_message(url), 400, "never fetches")

    def test_08_bad_data_urls(self):
        self.refused(image_message("data:text/plain;base64,aGVsbG8="), 400, "text/plain")
        self.refused(image_message("data:image/png,rawbytes"), 400, "image/png;base64")
        self.refused(image_message("data:image/png;base64"), 400, "no ','")
        self.refused(image_message("data:image/png;base64,iVBOR*w0KGgo="), 400, "base64")
        self.refused(image_message("data:image/png;base64,"), 400, "no bytes")
        self.refused([{"role": "user", "content": [{"type": "image_url"}]}], 400, "image_url")

    def test_09_bad_images(self):
        hostile = os.path.join(IMAGES, "hostile")
        for name, needle in (("truncated.png", "image 0"), ("wrong_magic.gif", "image 0"),
                             ("bad_crc.png", "image 0"), ("truncated.jpg", "image 0")):
            self.refused(image_message(data_url(os.path.join(hostile, name), "image/png")), 400,
                         needle)
        # Dimensions over the pixel limit are refused from the header, before any pixel.
        for name in ("huge_dims.png", "huge_dims.jpg", "bomb.png"):
            self.refused(image_message(data_url(os.path.join(hostile, name))), 413, "image 0")

    def test_10_too_many_images(self):
        url = data_url(JPEG)
        msgs = [{"role": "user", "content": [image_part(url)] * 4 + [
            {"type": "text", "text": "Four?"}]}]
        self.refused(msgs, 400, "at most 3 images")

    def test_11_reserved_mark(self):
        self.refused(image_message(data_url(PHOTO), "a \ufdd2 b"), 400, "U+FDD2")

    def test_12_raw_status_codes(self):
        body = {"messages": image_message("https://example.com/x.png"), "max_tokens": 1}
        r = raw(f"{self.srv.url}/v1/chat/completions", body=json.dumps(body))
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["error"]["param"], "messages")


class PartsTemplateTest(unittest.TestCase):
    def test_parts_template_as_generate(self):
        d = make_chat_model(PARTS_TEMPLATE, LLAVA)
        try:
            srv = Server(d, ["--alias", "x"])
            try:
                cli = cli_generate(LLAVA, ["--chat", "-p", QUESTION, "--image", PHOTO, "-n",
                                           "16", "--temp", "0"])
                r = srv.client().chat.completions.create(
                    model="x", messages=image_message(data_url(PHOTO)), max_tokens=16,
                    temperature=0)
                self.assertEqual(r.choices[0].message.content, cli.text)
                self.assertEqual(r.usage.prompt_tokens, cli.summary["prompt_tokens"])
                # The template writes the image token from the parts: the client's "<image>"
                # text next to it stays text.
                r = srv.client().chat.completions.create(
                    model="x", messages=image_message(data_url(PHOTO), "<image>"), max_tokens=2,
                    temperature=0)
                s = srv.client().chat.completions.create(
                    model="x", messages=image_message(data_url(PHOTO), "<imagX>"), max_tokens=2,
                    temperature=0)
                self.assertEqual(r.usage.prompt_tokens, s.usage.prompt_tokens)
            finally:
                srv.stop()
        finally:
            remove_tree(d)


GEMMA3 = os.path.join(ROOT, "tests", "data", "families", "gemma3_vlm")
# A Gemma 3 template that takes content as text: the server writes "<start_of_image>" where the
# image was (no line break), which the processor's expansion then applies to, as to the
# fixture's template that iterates parts.
GEMMA3_TEXT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<start_of_turn>' + ('model' if "
    "message['role'] == 'assistant' else message['role']) + '\n' }}{{ message['content'] | trim "
    "}}{{ '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<start_of_turn>model\n' }}{% endif %}")


class Gemma3Test(unittest.TestCase):
    """Gemma 3 (tests/data/families/gemma3_vlm): its processor expands <start_of_image> in the
    rendered template's text (Gemma3Processor), so the reply is generate --chat --image's and
    transformers' chat reference; a conversation with two images is generate's on the template's
    text with both; a template that takes text gets the same prompt."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server(GEMMA3, ["--parallel", "2"])
        cls.client = cls.srv.client()
        with open(os.path.join(GEMMA3, "vision_reference.json"), encoding="utf-8") as f:
            cls.ref = json.load(f)
        cls.cli = cli_generate(GEMMA3, ["--chat", "-p", QUESTION, "--image", PHOTO, "-n", "16",
                                        "--temp", "0"])

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def ask(self, messages, client=None, max_tokens=16):
        return (client or self.client).chat.completions.create(
            model="gemma3_vlm", messages=messages, max_tokens=max_tokens, temperature=0)

    def test_photo_as_generate_and_transformers(self):
        r = self.ask(image_message(data_url(PHOTO)))
        self.assertEqual(r.usage.prompt_tokens, len(self.ref["chat_prompt_ids"]))
        self.assertEqual(r.usage.prompt_tokens, self.cli.summary["prompt_tokens"])
        self.assertEqual(r.choices[0].message.content, self.cli.text)
        self.assertEqual(r.choices[0].message.content,
                         detokenize(GEMMA3, self.ref["chat_greedy_ids"]))

    def test_two_images_in_a_conversation(self):
        first = self.ask(image_message(data_url(PHOTO)), max_tokens=6).choices[0].message.content
        conv = [{"role": "user", "content": [{"type": "image"},
                                             {"type": "text", "text": QUESTION}]},
                {"role": "assistant", "content": first},
                {"role": "user", "content": [{"type": "image"},
                                             {"type": "text", "text": "And this one?"}]}]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "conversation.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(conv, f)
            text = subprocess.run([MLXCEL, "template", "-m", GEMMA3, "--messages", path,
                                   "--add-generation-prompt"], check=True, capture_output=True,
                                  text=True).stdout
        cli = cli_generate(GEMMA3, ["-p", text, "--image", PHOTO, "--image", JPEG, "-n", "16",
                                    "--temp", "0"])
        r = self.ask(image_message(data_url(PHOTO)) + [conv[1]] +
                     image_message(data_url(JPEG), "And this one?"))
        self.assertEqual(r.usage.prompt_tokens, cli.summary["prompt_tokens"])
        self.assertEqual(r.choices[0].message.content, cli.text)

    def test_typed_placeholder_stays_text(self):
        r = self.ask(image_message(data_url(PHOTO), "<start_of_image>?"), max_tokens=1)
        s = self.ask(image_message(data_url(PHOTO), "<start_of_imagX>?"), max_tokens=1)
        self.assertEqual(r.usage.prompt_tokens, s.usage.prompt_tokens)

    def test_text_template(self):
        d = make_chat_model(GEMMA3_TEXT_TEMPLATE, GEMMA3)
        try:
            srv = Server(d, ["--alias", "x"])
            try:
                r = srv.client().chat.completions.create(
                    model="x", messages=image_message(data_url(PHOTO)), max_tokens=16,
                    temperature=0)
                self.assertEqual(r.usage.prompt_tokens, len(self.ref["chat_prompt_ids"]))
                self.assertEqual(r.choices[0].message.content, self.cli.text)
            finally:
                srv.stop()
        finally:
            remove_tree(d)


class VisionBackendTest(unittest.TestCase):
    def test_tower_on_the_interpreter(self):
        # The tower on interp, the text model on cpu: the same reply as generate's.
        srv = Server(LLAVA, ["--vision-backend", "interp"])
        try:
            cli = cli_generate(LLAVA, ["--chat", "-p", QUESTION, "--image", PHOTO, "-n", "16",
                                       "--temp", "0"])
            r = srv.client().chat.completions.create(
                model="llava", messages=image_message(data_url(PHOTO)), max_tokens=16,
                temperature=0)
            self.assertEqual(r.choices[0].message.content, cli.text)
        finally:
            srv.stop()

    def test_model_on_xla(self):
        # The whole model on the xla backend (its batch's tower and media entries): the same
        # reply as the cpu backend's generate.
        import lammps_jax_pjrt_cpu  # the plugin of tests/requirements.txt: missing fails

        saved = os.environ.get("MLXCEL_XLA_CACHE_DIR")
        os.environ["MLXCEL_XLA_CACHE_DIR"] = "none"  # nothing written outside the test
        try:
            srv = Server(LLAVA, ["--backend", "xla", "--pjrt-plugin",
                                 lammps_jax_pjrt_cpu.PLUGIN_PATH, "--ctx", "128"])
        finally:
            if saved is None:
                del os.environ["MLXCEL_XLA_CACHE_DIR"]
            else:
                os.environ["MLXCEL_XLA_CACHE_DIR"] = saved
        try:
            cli = cli_generate(LLAVA, ["--chat", "-p", QUESTION, "--image", PHOTO, "-n", "16",
                                       "--temp", "0", "--ctx", "128", "--backend", "cpu"])
            r = srv.client().chat.completions.create(
                model="llava", messages=image_message(data_url(PHOTO)), max_tokens=16,
                temperature=0)
            self.assertEqual(r.choices[0].message.content, cli.text)
        finally:
            srv.stop()

    def test_xla_without_plugin_refused_at_start(self):
        env = {k: os.environ.pop(k) for k in ("MLXCEL_XLA_PJRT_PLUGIN", "MLXCEL_XLA_DEVICE")
               if k in os.environ}
        try:
            with self.assertRaises(RuntimeError) as cm:
                Server(LLAVA, ["--vision-backend", "xla"])
        finally:
            os.environ.update(env)
        self.assertIn("vision backend xla: the xla backend needs a PJRT plugin", str(cm.exception))


class TextModelTest(unittest.TestCase):
    def test_text_model_refuses_images(self):
        d = make_chat_model()
        try:
            srv = Server(d, ["--alias", "x"])
            try:
                with self.assertRaises(openai.BadRequestError) as cm:
                    srv.client().chat.completions.create(
                        model="x", messages=image_message(data_url(PHOTO)), max_tokens=2)
                self.assertIn("takes no images", str(cm.exception))
                self.assertIn("model_type 'llama'", str(cm.exception))
            finally:
                srv.stop()
        finally:
            remove_tree(d)


QWEN2_VL = os.path.join(ROOT, "tests", "data", "families", "qwen2_vl")
QWEN3_VL = os.path.join(ROOT, "tests", "data", "families", "qwen3_vl")
YOUTU_VL = os.path.join(ROOT, "tests", "data", "families", "youtu_vl")
# The Qwen fixtures have no chat template; this one renders a user message's parts as their
# references' prompt, "Look: <|vision_start|><|image_pad|><|vision_end|>What is in the picture?".
QWEN_TEMPLATE = (
    "{% for m in messages %}{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif c['type'] == 'text' %}{{ c['text'] }}"
    "{% endif %}{% endfor %}{% endif %}{% endfor %}")


class QwenTest(unittest.TestCase):
    """Qwen2-VL and Qwen3-VL (ADR 0013, 0021) through the batch: each image's grid-sized run and
    the prompt's M-RoPE positions, decoded at the shifted positions beside other slots: the
    reply is transformers' greedy ids for the reference prompt and generate --image's, whether
    alone, with another image request and a text one in the same steps, or again (the prefix
    cache keeps the text before the image); two images of different grids as generate. Youtu-VL
    (ADR 0027) the same way at 1-D positions, against llama.cpp's reference, whose prompt ids
    begin with a BOS given by hand (the fixture's tokenizer adds none)."""

    def check_family(self, base, hand_bos=0):
        with open(os.path.join(base, "vision_reference.json"), encoding="utf-8") as f:
            ref = json.load(f)
        d = make_chat_model(QWEN_TEMPLATE, base)
        try:
            srv = Server(d, ["--alias", "x", "--parallel", "3"])
            try:
                client = srv.client()

                def ask(messages, max_tokens=16):
                    return client.chat.completions.create(model="x", messages=messages,
                                                          max_tokens=max_tokens, temperature=0)

                msgs = [{"role": "user", "content": [
                    {"type": "text", "text": "Look: "}, image_part(data_url(PHOTO)),
                    {"type": "text", "text": QUESTION}]}]
                cli = cli_generate(base, ["-p", ref["prompt"], "--image", PHOTO, "-n", "16",
                                          "--temp", "0"])
                want = detokenize(base, ref["greedy_ids"])
                self.assertEqual(cli.text, want)
                text_msgs = [{"role": "user", "content": "Hello there"}]
                alone = ask(text_msgs)
                with concurrent.futures.ThreadPoolExecutor(3) as ex:
                    fs = [ex.submit(ask, msgs) for _ in range(2)]
                    ft = ex.submit(ask, text_msgs)
                    for f in fs:
                        r = f.result()
                        self.assertEqual(r.usage.prompt_tokens,
                                         len(ref["prompt_ids"]) - hand_bos)
                        self.assertEqual(r.choices[0].message.content, want)
                    self.assertEqual(ft.result().choices[0].message.content,
                                     alone.choices[0].message.content)
                r = ask(msgs)  # again, on a slot that held the same prompt
                self.assertEqual(r.choices[0].message.content, want)
                two = ("Look: <|vision_start|><|image_pad|><|vision_end|>and"
                       "<|vision_start|><|image_pad|><|vision_end|>?")
                cli = cli_generate(base, ["-p", two, "--image", PHOTO, "--image", JPEG, "-n", "16",
                                          "--temp", "0"])
                r = ask([{"role": "user", "content": [
                    {"type": "text", "text": "Look: "}, image_part(data_url(PHOTO)),
                    {"type": "text", "text": "and"}, image_part(data_url(JPEG)),
                    {"type": "text", "text": "?"}]}])
                self.assertEqual(r.usage.prompt_tokens, cli.summary["prompt_tokens"])
                self.assertEqual(r.choices[0].message.content, cli.text)
            finally:
                srv.stop()
        finally:
            remove_tree(d)

    def test_qwen2_vl(self):
        self.check_family(QWEN2_VL)

    def test_qwen3_vl(self):
        self.check_family(QWEN3_VL)

    def test_youtu_vl(self):
        self.check_family(YOUTU_VL, hand_bos=1)


MOLMO2 = os.path.join(ROOT, "tests", "data", "families", "molmo2")
# The fixture has no chat template; this one writes the parts as the reference prompt has them
# ("Look: <|image|> What is in the picture?"), and Molmo2Processor's BOS and expansion follow.
MOLMO2_TEMPLATE = (
    "{% for message in messages %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<|image|>' }}{% else %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endfor %}")


class Molmo2Test(unittest.TestCase):
    """Molmo2 (tests/data/families/molmo2, ADR 0023): an image_url part becomes Molmo2Processor's
    tokens (BOS, the global view's and the crops' rows of <im_patch>), its crops run through the
    batch's pooled tower and the features are added at its <im_patch> tokens under one block:
    transformers' prompt token count and greedy text, alone and twice at once, and for two
    images with text between them."""

    @classmethod
    def setUpClass(cls):
        cls.dir = make_chat_model(MOLMO2_TEMPLATE, MOLMO2)
        cls.srv = Server(cls.dir, ["--parallel", "2"])
        cls.client = cls.srv.client()
        with open(os.path.join(MOLMO2, "vision_reference.json"), encoding="utf-8") as f:
            cls.ref = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        remove_tree(cls.dir)

    def ask(self):
        messages = [{"role": "user", "content": [
            {"type": "text", "text": "Look: "}, image_part(data_url(PHOTO)),
            {"type": "text", "text": " " + QUESTION}]}]
        return self.client.chat.completions.create(model=os.path.basename(self.dir),
                                                   messages=messages,
                                                   max_tokens=16, temperature=0)

    def test_photo_as_transformers(self):
        r = self.ask()
        self.assertEqual(r.usage.prompt_tokens, len(self.ref["prompt_ids"]))
        self.assertEqual(r.choices[0].message.content,
                         detokenize(MOLMO2, self.ref["greedy_ids"]))

    def test_two_at_once(self):
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            replies = list(ex.map(lambda _: self.ask(), range(2)))
        want = detokenize(MOLMO2, self.ref["greedy_ids"])
        for r in replies:
            self.assertEqual(r.choices[0].message.content, want)

    def test_images_separated_by_text(self):
        # Every image token sees every other image's, the later image's too, but not the text
        # between them (transformers' mask; ADR 0023): the server's scheduler takes the span from
        # the first image token to the last as one prefill call, and the answer is transformers'
        # (the photograph twice, "Image 1: <|image|> and image 2: <|image|> compare").
        messages = [{"role": "user", "content": [
            {"type": "text", "text": "Image 1: "}, image_part(data_url(PHOTO)),
            {"type": "text", "text": " and image 2: "}, image_part(data_url(PHOTO)),
            {"type": "text", "text": " compare"}]}]
        r = self.client.chat.completions.create(model=os.path.basename(self.dir),
                                                messages=messages, max_tokens=16, temperature=0)
        self.assertEqual(r.usage.prompt_tokens, len(self.ref["two_image_prompt_ids"]))
        self.assertEqual(r.choices[0].message.content,
                         detokenize(MOLMO2, self.ref["two_image_greedy_ids"]))

if __name__ == "__main__":
    unittest.main()
