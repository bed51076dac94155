// Chat-template engine: every supported construct on hand-written templates (expected text as
// Python Jinja with trim_blocks/lstrip_blocks renders it), real chat templates of the model
// families (Llama 2, Mistral, Gemma, Gemma 3, Phi-3, Qwen2), malformed templates with their
// error positions, render-time errors and the resource limits.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/chat.h"
#include "mx_test.h"

// Renders `tmpl` with messages (JSON array), extra variables (JSON object or NULL) and
// add_generation_prompt; returns a heap string or NULL (error in mx_error_message()).
static char *render_full(const char *tmpl, const char *msgs, const char *extra, bool agp) {
  mx_chat_template_t *t = NULL;
  if (mx_chat_template_compile(tmpl, strlen(tmpl), &t) != MX_OK) return NULL;
  mx_chat_render_opts_t o = {
      .add_generation_prompt = agp, .bos_token = "<s>", .eos_token = "</s>", .extra_json = extra};
  char *out = NULL;
  mx_status_t st = mx_chat_render_json(t, msgs ? msgs : "[]", &o, &out, NULL);
  mx_chat_template_destroy(t);
  return st == MX_OK ? out : NULL;
}

static void expect(int line, const char *tmpl, const char *msgs, const char *extra, bool agp,
                   const char *want) {
  char *got = render_full(tmpl, msgs, extra, agp);
  if (!got) {
    mx_test_failed_++;
    fprintf(stderr, "test_chat.c:%d: render failed: %s\n  template: %s\n", line, mx_error_message(),
            tmpl);
    return;
  }
  if (strcmp(got, want) == 0) {
    mx_test_passed_++;
  } else {
    mx_test_failed_++;
    fprintf(stderr, "test_chat.c:%d: got\n[%s]\nwant\n[%s]\n  template: %s\n", line, got, want,
            tmpl);
  }
  free(got);
}
#define EXPECT(tmpl, want) expect(__LINE__, tmpl, NULL, NULL, false, want)
#define EXPECT_M(tmpl, msgs, want) expect(__LINE__, tmpl, msgs, NULL, false, want)

// A compile error at `pos` ("L:C") whose message contains `what`.
static void expect_compile_error(int line, const char *tmpl, const char *pos, const char *what) {
  mx_chat_template_t *t = NULL;
  mx_status_t st = mx_chat_template_compile(tmpl, strlen(tmpl), &t);
  const char *msg = mx_error_message();
  char want_pos[32];
  size_t pl = strlen(pos);
  snprintf(want_pos, sizeof want_pos, "template %s%s", pos, pl && pos[pl - 1] == ':' ? "" : ":");
  bool ok = st == MX_ERR_PARSE && t == NULL && strstr(msg, want_pos) && strstr(msg, what);
  if (ok) {
    mx_test_passed_++;
  } else {
    mx_test_failed_++;
    fprintf(stderr, "test_chat.c:%d: status %d, message \"%s\"; want %s and \"%s\"\n", line,
            (int)st, st == MX_OK ? "" : msg, pos, what);
  }
  mx_chat_template_destroy(t);
}
#define COMPILE_ERROR(tmpl, pos, what) expect_compile_error(__LINE__, tmpl, pos, what)

// A render error at `pos` containing `what`.
static void expect_render_error(int line, const char *tmpl, const char *pos, const char *what) {
  char *got = render_full(tmpl, "[{\"role\": \"user\", \"content\": \"hi\"}]", NULL, false);
  const char *msg = mx_error_message();
  char want_pos[32];
  size_t pl = strlen(pos);
  snprintf(want_pos, sizeof want_pos, "template %s%s", pos, pl && pos[pl - 1] == ':' ? "" : ":");
  if (!got && strstr(msg, want_pos) && strstr(msg, what)) {
    mx_test_passed_++;
  } else {
    mx_test_failed_++;
    fprintf(stderr, "test_chat.c:%d: rendered [%s] / message \"%s\"; want error %s \"%s\"\n", line,
            got ? got : "(null)", got ? "" : msg, pos, what);
  }
  free(got);
}
#define RENDER_ERROR(tmpl, pos, what) expect_render_error(__LINE__, tmpl, pos, what)

static void test_expressions(void) {
  EXPECT("{{ 'a' ~ 1 ~ none ~ true }}", "a1NoneTrue");
  EXPECT("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 10 }} {{ -3 + +1 }}", "7 9 1024 -2");
  EXPECT("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 4 / 2 }}",
         "3 -4 1 2 3.5 2.0");
  EXPECT("{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.0 }} {{ 1e-5 }} {{ 2.5 * 2 }} {{ 1 == 1.0 }}",
         "0.30000000000000004 1e+20 1.0 1e-05 5.0 True");
  EXPECT("{{ \"a\\tb\\n\\u00e9\\x41\\\\\" }}|{{ 'it\\'s' }}",
         "a\tb\n\xc3\xa9"
         "A\\|it's");
  EXPECT("{{ 'con' 'cat' }}", "concat");
  EXPECT("{{ [1, 'a', none, true, 1.5] }} {{ {'a': 1, 'b': [2]} }} {{ (1, 2) }} {{ [\"it's\"] }}",
         "[1, 'a', None, True, 1.5] {'a': 1, 'b': [2]} [1, 2] [\"it's\"]");
  EXPECT("{{ True }}{{ False }}{{ None }}|{{ none }}|{{ undefined_name }}|",
         "TrueFalseNone|None||");
  EXPECT("{{ 1 < 2 }}{{ 2 <= 2 }}{{ 3 > 4 }}{{ 'a' >= 'b' }}{{ 1 != 2 }}{{ 'a' == 'a' }}",
         "TrueTrueFalseFalseTrueTrue");
  EXPECT("{{ 'a' in 'cat' }}{{ 2 not in [1] }}{{ 'k' in {'k': 1} }}{{ none is not none }}",
         "TrueTrueTrueFalse");
  EXPECT("{{ 1 and 0 }}|{{ 0 or 'x' }}|{{ not 0 }}|{{ not 1 == 1 }}", "0|x|True|False");
  EXPECT("{{ 'y' if 1 > 2 else 'n' }}[{{ 'z' if false }}]{{ 'a' if true }}", "n[]a");
  EXPECT("{% set d = {'a': {'b': [10, 20]}} %}{{ d.a.b[1] }}{{ d['a']['b'][-1] }}{{ d.a.b.0 }}",
         "202010");
  EXPECT(
      "{{ 'hello'[1:3] }}|{{ 'hello'[::-1] }}|{{ [1,2,3,4][1:] }}|{{ [1,2,3,4][-2:] }}|"
      "{{ 'h\xc3\xa9llo'[::-1] }}|{{ [1,2,3,4,5][::2] }}|{{ [1,2,3][:-1] }}|{{ 'abc'[5:] }}|"
      "{{ 'h\xc3\xa9llo'[1] }}|{{ [1,2,3][::-2] }}",
      "el|olleh|[2, 3, 4]|[3, 4]|oll\xc3\xa9h|[1, 3, 5]|[1, 2]||\xc3\xa9|[3, 1]");
  EXPECT("{{ [1] + [2] }}{{ 'ab' * 2 }}{{ [0] * 3 }}", "[1, 2]abab[0, 0, 0]");
  EXPECT("{{ range(3) | list }}{{ range(1, 10, 3) | list }}{{ range(3, 0, -1) | list }}",
         "[0, 1, 2][1, 4, 7][3, 2, 1]");
}

static void test_statements(void) {
  EXPECT(
      "{% for x in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
      "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
      "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  EXPECT(
      "{% for i in [1,2,3] %}{{ loop.previtem | default('-') }}{{ loop.nextitem | "
      "default('-') }}{{ loop.cycle('a', 'b') }} {% endfor %}",
      "-2a 13b 2-a ");
  EXPECT(
      "{% set ns = namespace(n=0, s='') %}{% for i in range(5) %}{% set ns.n = ns.n + i %}"
      "{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}",
      "10 01234");
  EXPECT("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", "21");
  EXPECT("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = [3, 4] %}{% set d, e = c %}{{ e }}", "124");
  EXPECT(
      "{% for i in [1,2,3] %}{% if i == 1 %}a{% elif i == 2 %}b{% else %}c{% endif %}"
      "{% endfor %}",
      "abc");
  EXPECT("{% for i in [] %}x{% else %}empty{% endfor %}", "empty");
  EXPECT(
      "{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}"
      "{% break %}{% endif %}{{ i }}{% endfor %}",
      "023");
  EXPECT("{% for i in range(6) if i is even %}{{ i }}{{ loop.length }}{% endfor %}", "032343");
  EXPECT(
      "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"
      "{% for k, v in {'c': 3} | items %}{{ k }}{{ v }}{% endfor %}{% for k in {'z': 0} %}{{ k }}"
      "{% endfor %}",
      "a=1;b=2;c3z");
  EXPECT("{% set s %}a{{ 1 }}b{% endset %}[{{ s }}]", "[a1b]");
  EXPECT(
      "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
      "{{ greet('A') }} {{ greet('B', punct='?') }} {{ greet(name='C') }}",
      "Hi A! Hi B? Hi C!");
  EXPECT(
      "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}"
      "{% endmacro %}{{ fact(5) }}",
      "120");
  EXPECT("{% raw %}{{ x }}{% if %}{% endraw %}!", "{{ x }}{% if %}!");
  EXPECT("a{% generation %}b{% endgeneration %}c", "abc");
  EXPECT("a{# a comment {{ x }} #}b", "ab");
}

static void test_whitespace(void) {
  EXPECT("a  {%- if true -%}  b  {%- endif -%}  c", "abc");
  EXPECT("a \n{{- ' x ' -}}\n b", "a x b");
  EXPECT("a\n{# c #}\nb", "a\nb");
  EXPECT("a\n  {#- c -#}  \nb", "ab");
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it.
  EXPECT_M(
      "{% for m in messages %}\n  {% if m.role == 'user' %}\nU:{{ m.content }}\n"
      "  {% endif %}\n{% endfor %}\n",
      "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"x\",\"content\":\"-\"},"
      "{\"role\":\"user\",\"content\":\"b\"}]",
      "U:a\nU:b\n");
  EXPECT("  {%+ if true %}x{% endif %}", "  x");
  EXPECT("{% if true +%}\nx{% endif %}", "\nx");
  EXPECT("x  {% if true %}y{% endif %}", "x  y");  // not at the start of a line: kept
  EXPECT("  {{ 'v' }}\n\n", "  v\n");              // lstrip_blocks leaves {{ }} alone
  // One trailing newline of the source goes (keep_trailing_newline off); CR LF reads as LF.
  EXPECT("a\r\nb\rc\n", "a\nb\nc");
  EXPECT("{{ '\\101\\0'|length }}{{ '\\101' }}", "2A");
}

static void test_tests_filters_methods(void) {
  const char *extra = "{\"x\": 1, \"y\": {\"z\": 2}, \"flag\": false, \"s\": \"str\"}";
  expect(__LINE__, "{{ x }}|{{ y.z }}|{{ flag }}", NULL, extra, false, "1|2|False");
  expect(__LINE__,
         "{{ x is defined }}{{ nope is undefined }}{{ none is none }}{{ s is string }}"
         "{{ y is mapping }}{{ [] is iterable }}{{ x is number }}{{ flag is false }}"
         "{{ true is true }}{{ [] is sequence }}{{ x is integer }}{{ 1.5 is float }}"
         "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby(3) }}{{ 9 is divisibleby 4 }}"
         "{{ x is eq 1 }}{{ s is not none }}{{ 'ab' is lower }}{{ flag is boolean }}",
         NULL, extra, false,
         "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrue");
  EXPECT(
      "{{ '  a  ' | trim }}|{{ 'ab' | upper }}|{{ 'AB' | lower }}|{{ 'hello world' | "
      "capitalize }}|{{ 'hello world' | title }}|{{ 'aXa' | replace('a', 'b') }}|"
      "{{ [1,2] | join(',') }}|{{ nope | default('d') }}|{{ '' | default('e', true) }}|"
      "{{ [1,2,3] | first }}{{ [1,2,3] | last }}|{{ 'ab' | list }}|{{ 12 | string }}|"
      "{{ '42' | int + 1 }}|{{ 'x' | int }}|{{ 3.9 | int }}|{{ [3,4] | length }}|"
      "{{ 'h\xc3\xa9' | length }}|{{ {'a': 1} | length }}|{{ nope | length }}|"
      "{{ [3,1,2] | sort }}|{{ [1,1,2] | unique | list }}|{{ [1,2] | reverse | list }}|"
      "{{ -3 | abs }}|{{ '<a>' | e }}|{{ 'x' | safe }}|{{ '2.5' | float }}",
      "a|AB|ab|Hello world|Hello World|bXb|1,2|d|e|13|['a', 'b']|12|43|0|3|2|2|1|0|"
      "[1, 2, 3]|[1, 2]|[2, 1]|3|&lt;a&gt;|x|2.5");
  const char *msgs =
      "[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"U\"},"
      "{\"role\":\"assistant\",\"content\":\"A\",\"tool_calls\":[{\"name\":\"f\"}]}]";
  EXPECT_M(
      "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join "
      "}}|{{ messages | rejectattr('role', 'equalto', 'user') | map(attribute='content') | "
      "join(',') }}|{{ messages | map(attribute='role') | list }}|{{ messages | "
      "selectattr('tool_calls') | list | length }}|{{ messages | selectattr('tool_calls', "
      "'defined') | map(attribute='role') | first }}|{{ ['a', 'b'] | map('upper') | join }}",
      msgs, "U|S,A|['system', 'user', 'assistant']|1|assistant|AB");
  EXPECT_M(
      "{{ messages[0].content }}{{ messages[0]['role'] }}{{ messages[2].tool_calls[0].name }}"
      "{{ messages[0].reasoning_content is defined }}{{ messages[-1].content }}"
      "{{ messages | length }}",
      msgs,
      "Ssystemf"
      "FalseA3");
  EXPECT("{{ {'a': [1, 2.5, '\xc3\xa9\"\\n\\u0001'], 'b': none, 'c': true, 'd': {}} | tojson }}",
         "{\"a\": [1, 2.5, \"\xc3\xa9\\\"\\n\\u0001\"], \"b\": null, \"c\": true, \"d\": {}}");
  EXPECT("{{ {'a': [1], 'b': []} | tojson(indent=2) }}",
         "{\n  \"a\": [\n    1\n  ],\n  \"b\": []\n}");
  EXPECT("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|{{ 'x' | tojson }}|{{ 1.0 | tojson }}",
         "{\"a\": 2, \"b\": 1}|\"x\"|1.0");
  EXPECT(
      "{{ ' a b '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'xxaxx'.rstrip('x') }}|"
      "{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|"
      "{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith(('x', 'a')) "
      "}}|{{ 'aB'.upper() }}{{ 'aB'.lower() }}|{{ 'aaa'.replace('a', 'b', 2) }}|"
      "{{ {'k': 1}.get('k') }}{{ {'k': 1}.get('z', 5) }}{{ {'k': 1}.get('z') }}|"
      "{{ {'k': 1}.keys() | list }}{{ {'k': 1}.values() | list }}|{{ 'hi there'.title() }}|"
      "{{ 'abcb'.find('b') }}{{ 'abcb'.count('b') }}|{{ '-'.join(['a', 'b']) }}",
      "a b|axx|xxa|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|TrueTrueTrue|ABab|bba|"
      "15None|['k'][1]|Hi There|12|a-b");
  EXPECT("{{ strftime_now('%Y') | length }}", "4");
  // Undefined values filter as Jinja's Undefined does.
  EXPECT(
      "[{{ nope | trim }}{{ nope | upper }}{{ nope | items | list }}{{ nope | join }}"
      "{{ nope | list }}{{ nope | first is undefined }}]",
      "[[][]True]");
  // Constructs of the Mistral / Llama 3.1 tool templates.
  EXPECT(
      "{% for k, v in {'a': 1, 'return': 2, 'b': 'x'}.items() if k != 'return' %}"
      "{{ k }}{{ v }}{{ loop.length }},{% endfor %}|{{ ['a', 'code', 'b'] | "
      "reject('equalto', 'code') | join(', ') }}|{{ 'id' if 'tool_calls' in {'tool_calls': 1} "
      "}}",
      "a12,bx2,|a, b|id");
  RENDER_ERROR("{{ nope | tojson }}", "1:11", "'nope' is undefined");
  EXPECT("{{ dict(a=1) }}{{ namespace(a=1).a }}", "{'a': 1}1");
}

// Chat templates of the model families (as published in their tokenizer_config.json).
static void test_family_templates(void) {
  const char *llama2 =
      "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set "
      "system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% "
      "set system_message = false %}{% endif %}{% for message in loop_messages %}{% if "
      "(message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation "
      "roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == "
      "0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
      "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] "
      "%}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() "
      "+ ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + "
      "eos_token }}{% endif %}{% endfor %}";
  const char *conv =
      "[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"Hi \"},"
      "{\"role\":\"assistant\",\"content\":\"Hello\"},{\"role\":\"user\",\"content\":\"Q\"}]";
  EXPECT_M(llama2, conv,
           "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] Q [/INST]");
  char *bad = render_full(llama2, "[{\"role\":\"assistant\",\"content\":\"x\"}]", NULL, false);
  CHECK(bad == NULL && strstr(mx_error_message(), "Conversation roles must alternate"));
  free(bad);

  const char *mistral =
      "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
      "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
      "user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ "
      "'[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ "
      "message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant "
      "roles are supported!') }}{% endif %}{% endfor %}";
  EXPECT_M(mistral,
           "[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Yo\"},"
           "{\"role\":\"user\",\"content\":\"Q\"}]",
           "<s>[INST] Hi [/INST]Yo</s>[INST] Q [/INST]");

  const char *gemma =
      "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role "
      "not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == "
      "'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
      "user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') "
      "%}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ "
      "'<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% "
      "endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}";
  expect(__LINE__, gemma,
         "[{\"role\":\"user\",\"content\":\" Hi \"},{\"role\":\"assistant\",\"content\":\"A\"},"
         "{\"role\":\"user\",\"content\":\"Q\"}]",
         NULL, true,
         "<s><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nA<end_of_turn>\n"
         "<start_of_turn>user\nQ<end_of_turn>\n<start_of_turn>model\n");

  const char *gemma3 =
      "{{ bos_token }}\n"
      "{%- if messages[0]['role'] == 'system' -%}\n"
      "    {%- if messages[0]['content'] is string -%}\n"
      "        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n"
      "    {%- else -%}\n"
      "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}\n"
      "    {%- endif -%}\n"
      "    {%- set loop_messages = messages[1:] -%}\n"
      "{%- else -%}\n"
      "    {%- set first_user_prefix = \"\" -%}\n"
      "    {%- set loop_messages = messages -%}\n"
      "{%- endif -%}\n"
      "{%- for message in loop_messages -%}\n"
      "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
      "        {{ raise_exception(\"Conversation roles must alternate "
      "user/assistant/user/assistant/...\") }}\n"
      "    {%- endif -%}\n"
      "    {%- if (message['role'] == 'assistant') -%}\n"
      "        {%- set role = \"model\" -%}\n"
      "    {%- else -%}\n"
      "        {%- set role = message['role'] -%}\n"
      "    {%- endif -%}\n"
      "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n"
      "    {%- if message['content'] is string -%}\n"
      "        {{ message['content'] | trim }}\n"
      "    {%- elif message['content'] is iterable -%}\n"
      "        {%- for item in message['content'] -%}\n"
      "            {%- if item['type'] == 'image' -%}\n"
      "                {{ '<start_of_image>' }}\n"
      "            {%- elif item['type'] == 'text' -%}\n"
      "                {{ item['text'] | trim }}\n"
      "            {%- endif -%}\n"
      "        {%- endfor -%}\n"
      "    {%- else -%}\n"
      "        {{ raise_exception(\"Invalid content type\") }}\n"
      "    {%- endif -%}\n"
      "    {{ '<end_of_turn>\n' }}\n"
      "{%- endfor -%}\n"
      "{%- if add_generation_prompt -%}\n"
      "    {{'<start_of_turn>model\n'}}\n"
      "{%- endif -%}\n";
  expect(__LINE__, gemma3,
         "[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":[{\"type\":"
         "\"image\"},{\"type\":\"text\",\"text\":\" Hi \"}]}]",
         NULL, true,
         "<s><start_of_turn>user\nS\n\n<start_of_image>Hi<end_of_turn>\n<start_of_turn>model\n");

  const char *phi3 =
      "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\\n' + "
      "message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\\n' + "
      "message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'assistant' "
      "%}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}{% endif %}{% endfor %}{% if "
      "add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}";
  expect(__LINE__, phi3, "[{\"role\":\"user\",\"content\":\"Hi\"}]", NULL, true,
         "<|user|>\nHi<|end|>\n<|assistant|>\n");
  expect(__LINE__, phi3, "[{\"role\":\"user\",\"content\":\"Hi\"}]", NULL, false,
         "<|user|>\nHi<|end|>\n</s>");

  const char *qwen2 =
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
      "'<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif "
      "%}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
      "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif "
      "%}";
  expect(__LINE__, qwen2, "[{\"role\":\"user\",\"content\":\"Hi\"}]", NULL, true,
         "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi"
         "<|im_end|>\n<|im_start|>assistant\n");
}

static void test_struct_api(void) {
  const char *src =
      "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
      "{% if add_generation_prompt %}>{% endif %}{{ unk_token is defined }}";
  mx_chat_template_t *t = NULL;
  CHECK_OK(mx_chat_template_compile(src, strlen(src), &t));
  mx_chat_message_t m[] = {{"system", "s"}, {"user", "u"}};
  mx_chat_render_opts_t o = {.add_generation_prompt = true};
  char *out = NULL;
  size_t len = 0;
  CHECK_OK(mx_chat_render(t, m, 2, &o, &out, &len));
  CHECK(out && strcmp(out, "[system:s][user:u]>False") == 0 && len == strlen(out));
  free(out);
  CHECK_OK(mx_chat_render(t, NULL, 0, NULL, &out, NULL));
  CHECK(out && strcmp(out, "False") == 0);
  free(out);
  o.extra_json = "[1]";
  CHECK(mx_chat_render(t, m, 2, &o, &out, NULL) == MX_ERR_INVALID_ARG && out == NULL);
  CHECK(mx_chat_render_json(t, "{\"not\": \"a list\"}", NULL, &out, NULL) == MX_ERR_INVALID_ARG);
  mx_chat_template_destroy(t);
  mx_chat_template_destroy(NULL);
  CHECK_OK(mx_chat_template_compile("", 0, &t));
  CHECK_OK(mx_chat_render(t, NULL, 0, NULL, &out, &len));
  CHECK(out && len == 0);
  free(out);
  mx_chat_template_destroy(t);
}

// Images in content (chat.h): a fields "content" replaces the text, which kind of template
// takes parts, parts from marked text, and marks replaced with the plain ranges moved.
static void test_images(void) {
  static const char kParts[] =
      "{% for m in messages %}{{ m.role }}:{% for p in m.content %}{% if p.type == 'image' %}"
      "<image>{% else %}{{ p.text }}{% endif %}{% endfor %}|{% endfor %}";
  static const char kText[] = "{% for m in messages %}{{ m.role }}:{{ m.content }}|{% endfor %}";
  mx_chat_template_t *tp = NULL, *tt = NULL;
  CHECK_OK(mx_chat_template_compile(kParts, strlen(kParts), &tp));
  CHECK_OK(mx_chat_template_compile(kText, strlen(kText), &tt));
  if (!tp || !tt) goto out;
  CHECK(mx_chat_template_takes_parts(tp, "<image>", 7));
  CHECK(!mx_chat_template_takes_parts(tp, "<img>", 5));    // no image token in its output
  CHECK(!mx_chat_template_takes_parts(tt, "<image>", 7));  // prints the parts as data
  char *parts = NULL;
  CHECK_OK(mx_chat_parts_from_marks(
      MX_CHAT_IMAGE_MARK "ab" MX_CHAT_IMAGE_MARK MX_CHAT_IMAGE_MARK "c\"d", &parts));
  CHECK_MSG(parts && strcmp(parts,
                            "[{\"type\":\"image\"},{\"type\":\"text\",\"text\":\"ab\"},{\"type\":"
                            "\"image\"},{\"type\":\"image\"},{\"type\":\"text\",\"text\":"
                            "\"c\\\"d\"}]") == 0,
            "%s", parts ? parts : "NULL");
  // The parts rendered as the content of a message, the text renders of the others kept.
  mx_chat_message_t m[] = {{"user", "ignored"}, {"assistant", "x"}};
  char fields[256];
  snprintf(fields, sizeof fields, "{\"content\":%s}", parts ? parts : "[]");
  const char *fj[2] = {fields, NULL};
  char *out = NULL;
  size_t len = 0;
  CHECK_OK(mx_chat_render_fields(tp, m, fj, 1, NULL, &out, &len));
  CHECK_MSG(out && strcmp(out, "user:<image>ab<image><image>c\"d|") == 0, "%s", out);
  free(out);
  free(parts);
  // Marks in rendered text: each becomes `with`; plain ranges after a mark move with the text.
  char *text = strdup("a" MX_CHAT_IMAGE_MARK "bc" MX_CHAT_IMAGE_MARK "d");
  len = strlen(text);
  mx_text_range_t plain[3] = {{0, 1}, {4, 6}, {9, 10}};
  CHECK_OK(mx_chat_replace_marks(&text, &len, plain, 3, "<I>\n", 4));
  CHECK(text && strcmp(text, "a<I>\nbc<I>\nd") == 0 && len == 12);
  CHECK(plain[0].start == 0 && plain[0].end == 1 && plain[1].start == 5 && plain[1].end == 7 &&
        plain[2].start == 11 && plain[2].end == 12);
  free(text);
out:
  mx_chat_template_destroy(tp);
  mx_chat_template_destroy(tt);
}

static void test_compile_errors(void) {
  COMPILE_ERROR("{{ x ", "1:1", "unterminated '{{'");
  COMPILE_ERROR("{% if x %}a", "1:12", "expected '{% endif %}' to close 'if' at 1:4");
  COMPILE_ERROR("{% for x in %}", "1:13", "expected an expression, found '%}'");
  COMPILE_ERROR("{{ 1 + }}", "1:8", "expected an expression, found '}}'");
  COMPILE_ERROR("{% endif %}", "1:4", "unexpected 'endif' with no open block");
  COMPILE_ERROR("{% if x %}{% endfor %}", "1:14", "unexpected 'endfor'");
  COMPILE_ERROR("{{ 'abc }}", "1:4", "unterminated string literal");
  COMPILE_ERROR("ab\n{# comment", "2:1", "unterminated comment");
  COMPILE_ERROR("{% foo %}", "1:4", "unknown or unexpected tag 'foo'");
  COMPILE_ERROR("{{ a.}}", "1:6", "expected an attribute name");
  COMPILE_ERROR("{% set %}", "1:8", "expected a variable name after 'set'");
  COMPILE_ERROR("{% for x xs %}", "1:10", "expected 'in'");
  COMPILE_ERROR("{{ x | }}", "1:8", "expected a filter name");
  COMPILE_ERROR("{{ x is }}", "1:9", "expected a test name");
  COMPILE_ERROR("{% if x %}{% else %}{% else %}{% endif %}", "1:24", "unexpected 'else'");
  COMPILE_ERROR("{% break %}", "1:4", "'break' outside of a for loop");
  COMPILE_ERROR("line1\n  {{ 1 +* 2 }}", "2:9", "expected an expression, found '*'");
  COMPILE_ERROR("{{ \"\\x4\" }}", "1:8", "hex digits");
  COMPILE_ERROR("{% macro m(a %}", "1:14", "expected ',' or ')'");
  COMPILE_ERROR("{{ x ! y }}", "1:6", "unexpected character '!'");
  COMPILE_ERROR("{% set x = 1 %}{{ x }", "1:16", "unterminated '{{'");
  COMPILE_ERROR("{{ f(1, 2 }}", "1:11", "expected ',' or ')', found '}}'");
  COMPILE_ERROR("{{ [1, 2) }}", "1:9", "expected ',' or ']'");
  COMPILE_ERROR("{% if true %}\n{% for x in y %}\n{% endif %}", "3:4", "close 'for' at 2:4");
  COMPILE_ERROR("{{ 99999999999999999999 }}", "1:4", "out of range");
  COMPILE_ERROR("{% for x in y recursive %}{% endfor %}", "1:15", "recursive");
  COMPILE_ERROR("{{ }}", "1:4", "expected an expression");
  COMPILE_ERROR("{% %}", "1:4", "expected a tag name");
  // Nesting far beyond real templates is refused, not a stack overflow.
  char deep[2048];
  size_t k = 0;
  k += (size_t)snprintf(deep, sizeof deep, "{{ ");
  for (int i = 0; i < 600; i++) deep[k++] = '(';
  deep[k++] = '1';
  for (int i = 0; i < 600; i++) deep[k++] = ')';
  snprintf(deep + k, sizeof deep - k, " }}");
  COMPILE_ERROR(deep, "1:", "nesting deeper than");
}

static void test_render_errors_and_limits(void) {
  RENDER_ERROR("{{ raise_exception('bad role') }}", "1:4", "raise_exception: bad role");
  RENDER_ERROR("ok\n{{ 'a' + 1 }}", "2:8", "unsupported operand types for +: string and int");
  RENDER_ERROR("{{ nothing.attr }}", "1:11", "'nothing' is undefined");
  RENDER_ERROR("{{ messages[0].content.nope() }}", "1:23", "not callable");
  RENDER_ERROR("{% set x = 1 %}{% set x.a = 2 %}", "1:19", "only on a namespace");
  RENDER_ERROR("{{ 1 // 0 }}", "1:6", "division by zero");
  RENDER_ERROR("{{ 'x' | nosuchfilter }}", "1:10", "unknown filter 'nosuchfilter'");
  RENDER_ERROR("{{ 1 is nosuchtest }}", "1:6", "unknown test");
  RENDER_ERROR("{{ 1 < 'a' }}", "1:6", "cannot compare");
  RENDER_ERROR("{% for a, b in [1] %}{% endfor %}", "1:4", "cannot unpack");
  RENDER_ERROR(
      "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}"
      "{% endfor %}{% endfor %}{% endfor %}",
      "1:", "loop iterations");
  RENDER_ERROR(
      "{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(40) %}"
      "{% set ns.s = ns.s + ns.s %}{% endfor %}",
      "1:", "limit");
  RENDER_ERROR("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "1:", "nested deeper");
  RENDER_ERROR("{% for i in range(1000000) %}{{ 'x' * 100 }}{% endfor %}", "1:", "limit");
  RENDER_ERROR("{{ range(100000000) | length }}", "1:", "limit");
  RENDER_ERROR("{{ 'ab' * 100000000000 }}", "1:", "limit");
  RENDER_ERROR("{{ 2 ** 64 }}", "1:6", "integer overflow");
  // Cyclic values (a namespace holding itself) and deep nesting neither crash nor hang.
  EXPECT("{% set ns = namespace(x=1) %}{% set ns.x = ns %}{{ ns == ns }}", "True");
  RENDER_ERROR("{% set ns = namespace(x=1) %}{% set ns.x = ns %}{{ ns | tojson }}", "1:", "deeper");
  RENDER_ERROR(
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
      "{% endfor %}",
      "1:", "nested deeper than 256");
  // Repeated big scans hit the work budget instead of running for minutes.
  RENDER_ERROR(
      "{% set big = 'a' * 10000000 %}{% for i in range(1000) %}{% if 'zz' in big %}"
      "{% endif %}{% endfor %}",
      "1:", "units of work");
  RENDER_ERROR(
      "{% set big = 'a' * 10000000 %}{% for i in range(1000) %}{{ big[5000000] }}"
      "{% endfor %}",
      "1:", "units of work");
  // Work that must stay near-linear on hostile sizes (each would take minutes if quadratic).
  EXPECT(
      "{% set ns = namespace(s='') %}{% for i in range(200000) %}{% set ns.s = ns.s ~ 'abcdefgh' "
      "%}{% endfor %}{{ ns.s | length }}",
      "1600000");
  EXPECT(
      "{{ range(100000) | list | sort(reverse=true) | first }}|{{ ((range(50000) | list) + "
      "(range(50000) | list)) | unique | list | length }}|{{ ('a' * 1000000 ~ 'b') in ('a' * "
      "4000000) }}|{{ ('ab' * 1000000).replace('ab', 'c') | length }}|{{ ('a,' * 100000)."
      "split(',') | length }}",
      "99999|50000|False|1000000|100001");
  EXPECT(
      "{% set d = {} %}{% set ns = namespace(d={}) %}{% for i in range(3) %}{% endfor %}"
      "{{ [{'b': 1, 'a': 2}, {'a': 1}] | sort(attribute='a') | map(attribute='a') | list }}",
      "[1, 2]");
}

int main(void) {
  test_expressions();
  test_statements();
  test_whitespace();
  test_tests_filters_methods();
  test_family_templates();
  test_struct_api();
  test_images();
  test_compile_errors();
  test_render_errors_and_limits();
  return mx_test_finish();
}
