"""Structured outputs and tool calls of `mlxcel serve` (issue 26 item 2) with the official openai
client: response_format json_object and json_schema (strict, and the client's pydantic `parse`
helper), tools with each tool_choice, streamed tool calls, assistant tool calls and tool results
rendered by the chat template, schemas the server cannot compile refused with a 400 naming the
part.

stories260K writes children's stories, not JSON: every valid document here comes from
constrained decoding, which is what these tests check (the output must parse and conform to the
schema for any seed). Run by tests/server/run.sh (ctest server_structured).
"""

import json
import typing
import unittest

import openai
import pydantic

from harness import Server, make_chat_model, remove_tree, tokenize

# Tools in the template (as Hermes / Qwen templates list them), assistant calls and tool results
# rendered too: the prompt grows with each, which the tests see in usage.prompt_tokens.
TOOL_TEMPLATE = (
    "{{ bos_token }}{% if tools %}tools:{% for t in tools %} {{ t['function']['name'] }}"
    "{{ t['function']['parameters'] | tojson }}{% endfor %}\n{% endif %}"
    "{% for m in messages %}{{ m['role'] }}: "
    "{% if m['tool_calls'] %}{% for c in m['tool_calls'] %}<tool_call>\n"
    "{\"name\": \"{{ c['function']['name'] }}\", \"arguments\": "
    "{{ c['function']['arguments'] | tojson }}}\n</tool_call>{% endfor %}"
    "{% elif m['role'] == 'tool' %}<tool_response>{{ m['content'] }}</tool_response>"
    "{% else %}{{ m['content'] }}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 12},
                "unit": {"enum": ["c", "f"]},
                "days": {"type": "integer"},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
ALARM = {
    "type": "function",
    "function": {
        "name": "set_alarm",
        "parameters": {
            "type": "object",
            "properties": {"hour": {"type": "integer"}, "label": {"type": ["string", "null"],
                                                                  "maxLength": 8}},
            "required": ["hour", "label"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [WEATHER, ALARM]

PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 10},
        "age": {"type": "integer"},
        "color": {"enum": ["red", "green", "blue"]},
        "pets": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
        "height": {"anyOf": [{"type": "number"}, {"type": "null"}]},
    },
    "required": ["name", "age", "color", "pets", "height"],
    "additionalProperties": False,
}


class Pet(pydantic.BaseModel):
    kind: typing.Literal["cat", "dog"]
    name: str = pydantic.Field(max_length=8)


class Person(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=10)
    age: int
    happy: bool
    pet: typing.Optional[Pet]
    tags: typing.List[typing.Literal["a", "b"]] = pydantic.Field(max_length=3)


def conforms(schema, value):
    """A small JSON Schema check of what the tests' schemas use (an independent reading)."""
    if "anyOf" in schema:
        return any(conforms(s, value) for s in schema["anyOf"])
    if "enum" in schema:
        return value in schema["enum"]
    t = schema.get("type")
    if isinstance(t, list):
        return any(conforms(dict(schema, type=x), value) for x in t)
    if t == "null":
        return value is None
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "string":
        return isinstance(value, str) and len(value) <= schema.get("maxLength", len(value))
    if t == "array":
        return (isinstance(value, list) and len(value) <= schema.get("maxItems", len(value))
                and all(conforms(schema["items"], v) for v in value))
    if t == "object":
        props = schema.get("properties", {})
        return (isinstance(value, dict) and all(k in value for k in schema.get("required", []))
                and all(k in props and conforms(props[k], v) for k, v in value.items()))
    return t is None


# Endings that complete a cut document when it is a prefix of a valid one: a string's quote,
# the rest of an escape, a digit, the rest of true / false / null.
_ENDINGS = ["", "\"", "n\"", "0\"", "00\"", "000\"", "0000\"", "0", "ue", "rue", "e", "alse",
            "lse", "se", "ull", "ll", "l"]


def json_prefix(text):
    """Whether text is the start of some JSON document: with one of _ENDINGS added, Python's
    parser either reads it whole or stops only because the text ended (not at a wrong byte)."""
    for end in _ENDINGS:
        t = text + end
        try:
            json.loads(t)
            return True
        except json.JSONDecodeError as e:
            if e.pos >= len(t) and not e.msg.startswith("Extra data"):
                return True
    return False


class Structured(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model_dir = make_chat_model(TOOL_TEMPLATE)
        try:
            cls.srv = Server(cls.model_dir, ("--parallel", "2", "--alias", "tiny-chat"))
        except BaseException:
            remove_tree(cls.model_dir)
            raise
        cls.client = cls.srv.client()

    @classmethod
    def tearDownClass(cls):
        try:
            cls.client.close()
            code = cls.srv.stop()
            if code != 0:
                raise AssertionError(f"the server exited {code}:\n{cls.srv.log()}")
        finally:
            remove_tree(cls.model_dir)

    def chat(self, **body):
        body.setdefault("messages", [{"role": "user", "content": "Tell me about a person."}])
        return self.client.chat.completions.create(model="tiny-chat", **body)

    def test_json_schema_strict_output_conforms_for_every_seed(self):
        fmt = {"type": "json_schema",
               "json_schema": {"name": "person", "schema": PERSON_SCHEMA, "strict": True}}
        for seed in range(6):
            r = self.chat(response_format=fmt, max_tokens=420, temperature=1.0, seed=seed)
            c = r.choices[0]
            self.assertEqual(c.finish_reason, "stop", c.message.content)
            value = json.loads(c.message.content)
            self.assertTrue(conforms(PERSON_SCHEMA, value), c.message.content)
        # Greedy too, and streamed deltas add up to the same document.
        r = self.chat(response_format=fmt, max_tokens=420, temperature=0)
        text = "".join(ch.choices[0].delta.content or "" for ch in self.chat(
            response_format=fmt, max_tokens=420, temperature=0, stream=True) if ch.choices)
        self.assertEqual(text, r.choices[0].message.content)
        self.assertTrue(conforms(PERSON_SCHEMA, json.loads(text)))

    def test_max_tokens_cut_is_length(self):
        fmt = {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON_SCHEMA}}
        r = self.chat(response_format=fmt, max_tokens=3, temperature=0)
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertTrue(r.choices[0].message.content.startswith("{"))

    def test_pydantic_parse_helper(self):
        for seed in range(4):
            r = self.client.chat.completions.parse(
                model="tiny-chat", messages=[{"role": "user", "content": "A person, please."}],
                response_format=Person, max_tokens=420, temperature=1.0, seed=seed)
            c = r.choices[0]
            self.assertEqual(c.finish_reason, "stop", c.message.content)
            self.assertIsInstance(c.message.parsed, Person)
            self.assertLessEqual(len(c.message.parsed.name), 10)

    def test_json_object_is_an_object(self):
        # Free-form objects have no end the schema forces, and a story model never wants to
        # close one: the replies are cut by max_tokens, each the start of a JSON object.
        self.assertTrue(json_prefix('{"a": [1, -') and not json_prefix('{"a" 1'))
        for seed in range(4):
            r = self.chat(response_format={"type": "json_object"}, max_tokens=120,
                          temperature=1.0, seed=seed)
            c = r.choices[0]
            self.assertTrue(c.message.content.startswith("{"), c.message.content)
            if c.finish_reason == "stop":
                self.assertIsInstance(json.loads(c.message.content), dict)
            else:
                self.assertEqual(c.finish_reason, "length")
                self.assertTrue(json_prefix(c.message.content), c.message.content)

    def test_unsupported_schemas_are_400_naming_the_part(self):
        bad = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat(response_format={"type": "json_schema",
                                       "json_schema": {"name": "x", "schema": bad}})
        self.assertEqual(cm.exception.param, "response_format")
        self.assertIn("'pattern' at #/properties/id", cm.exception.message)
        tool = {"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}}}}
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat(tools=[tool], tool_choice="required")
        self.assertEqual(cm.exception.param, "tools")
        self.assertIn("'minimum'", cm.exception.message)
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat(tools=TOOLS, tool_choice={"type": "function",
                                                "function": {"name": "nope"}})
        self.assertEqual(cm.exception.param, "tool_choice")
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat(response_format={"type": "yaml"})
        self.assertEqual(cm.exception.param, "response_format")

    def check_call(self, call, names):
        self.assertEqual(call.type, "function")
        self.assertTrue(call.id.startswith("call_"))
        self.assertIn(call.function.name, names)
        tool = next(t for t in TOOLS if t["function"]["name"] == call.function.name)
        args = json.loads(call.function.arguments)
        self.assertTrue(conforms(tool["function"]["parameters"], args), call.function.arguments)

    def test_tool_choice_required_and_named(self):
        for seed in range(4):
            r = self.chat(tools=TOOLS, tool_choice="required", max_tokens=150, temperature=1.0,
                          seed=seed)
            c = r.choices[0]
            self.assertEqual(c.finish_reason, "tool_calls", c.message.content)
            self.assertEqual(len(c.message.tool_calls), 1)
            self.check_call(c.message.tool_calls[0], ("get_weather", "set_alarm"))
        for name in ("get_weather", "set_alarm"):
            r = self.chat(tools=TOOLS, max_tokens=150, temperature=0,
                          tool_choice={"type": "function", "function": {"name": name}})
            c = r.choices[0]
            self.assertEqual(c.finish_reason, "tool_calls")
            self.assertIsNone(c.message.content)
            self.check_call(c.message.tool_calls[0], (name,))

    def test_tool_choice_none_and_auto_give_text(self):
        # The story model never writes a call by itself: auto and none both answer in text.
        for choice in ("none", "auto"):
            r = self.chat(tools=TOOLS, tool_choice=choice, max_tokens=20, temperature=0)
            c = r.choices[0]
            self.assertIn(c.finish_reason, ("stop", "length"))
            self.assertFalse(c.message.tool_calls)
            self.assertIsInstance(c.message.content, str)

    def test_streamed_tool_calls(self):
        stream = self.chat(tools=TOOLS, tool_choice={"type": "function",
                                                     "function": {"name": "get_weather"}},
                           max_tokens=150, temperature=0.8, seed=3, stream=True)
        calls, finish = {}, None
        for ch in stream:
            for choice in ch.choices:
                for d in choice.delta.tool_calls or []:
                    call = calls.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
                    call["id"] = d.id or call["id"]
                    call["name"] += (d.function.name or "") if d.function else ""
                    call["arguments"] += (d.function.arguments or "") if d.function else ""
                finish = choice.finish_reason or finish
        self.assertEqual(finish, "tool_calls")
        self.assertEqual(list(calls), [0])
        self.assertEqual(calls[0]["name"], "get_weather")
        self.assertTrue(calls[0]["id"].startswith("call_"))
        self.assertTrue(conforms(WEATHER["function"]["parameters"],
                                 json.loads(calls[0]["arguments"])))

    def test_tool_calls_and_results_are_rendered_by_the_template(self):
        user = [{"role": "user", "content": "Weather in Oslo?"}]
        call = {"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}
        turn = user + [{"role": "assistant", "content": None, "tool_calls": [call]},
                       {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
        plain = self.chat(messages=user, max_tokens=1).usage.prompt_tokens
        with_tools = self.chat(messages=user, tools=TOOLS, max_tokens=1).usage.prompt_tokens
        with_turn = self.chat(messages=turn, tools=TOOLS, max_tokens=1).usage.prompt_tokens
        # The template's text as transformers renders it (jinja2 with trim_blocks, so the line
        # break after each block tag goes; tojson is json.dumps with ", " and ": "; the call's
        # arguments string reaches the template as an object).
        head = "<s>tools:" + "".join(
            " %s%s" % (t["function"]["name"], json.dumps(t["function"]["parameters"]))
            for t in TOOLS)
        text = (head + "user: Weather in Oslo?assistant: <tool_call>\n{\"name\": "
                "\"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"
                "tool: <tool_response>sunny</tool_response>assistant:")
        self.assertEqual(with_turn, len(tokenize(self.model_dir, text)))
        self.assertEqual(plain, len(tokenize(self.model_dir,
                                             "<s>user: Weather in Oslo?assistant:")))
        self.assertGreater(with_tools, plain + 20)


if __name__ == "__main__":
    unittest.main()
