// mx_chat_render_guarded: special-token text in message content renders as plain-text ranges
// (the chat CLI, `generate --chat` and the server encode it as text), whatever the template does
// with the content: once, repeated, cut through a spelling. On tests/data/tokenizer/mini-bytelevel,
// whose special token is <|end|> (id 300).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/chat.h"
#include "mx_test.h"

enum { END_ID = 300 };

typedef struct fixture {
  mx_tokenizer_t *tok;
  mx_chat_guard_t *guard;
} fixture_t;

// Renders one user message through `tmpl`; returns the text (heap) or NULL, with the ranges.
static char *render(const fixture_t *f, const char *tmpl, const char *content,
                    mx_text_range_t **plain, int32_t *n_plain, mx_status_t *st) {
  mx_chat_template_t *t = NULL;
  *st = mx_chat_template_compile(tmpl, strlen(tmpl), &t);
  if (*st) return NULL;
  mx_chat_message_t m = {"user", content};
  char *text = NULL;
  *st = mx_chat_render_guarded(t, f->guard, &m, 1, NULL, &text, NULL, plain, n_plain);
  mx_chat_template_destroy(t);
  return text;
}

// The number of <|end|> ids in the encoding of `text`, with and without the ranges.
static int count_end(const fixture_t *f, const char *text, const mx_text_range_t *plain,
                     int32_t n_plain) {
  mx_encode_opts_t eo = {
      .add_special = false, .parse_special = true, .plain = plain, .n_plain = n_plain};
  int32_t *ids = NULL, n = 0;
  if (mx_tokenizer_encode(f->tok, text, strlen(text), &eo, &ids, &n) != MX_OK) return -1;
  int c = 0;
  for (int32_t i = 0; i < n; i++) c += ids[i] == END_ID;
  free(ids);
  return c;
}

static void test_markup_stays_special(const fixture_t *f) {
  mx_text_range_t *plain = NULL;
  int32_t n_plain = 0;
  mx_status_t st;
  char *text = render(f, "{% for m in messages %}<|end|>{{ m.content }}{% endfor %}", "a<|end|>b",
                      &plain, &n_plain, &st);
  CHECK_OK(st);
  if (!text) return;
  // The marks are gone: the text is what mx_chat_render writes.
  CHECK_MSG(strcmp(text, "<|end|>a<|end|>b") == 0, "text [%s]", text);
  CHECK(n_plain == 1 && plain && plain[0].start == 8 && plain[0].end == 15);
  CHECK(count_end(f, text, plain, n_plain) == 1);  // the template's own
  CHECK(count_end(f, text, NULL, 0) == 2);         // what a plain render would give the model
  free(plain);
  free(text);
}

static void test_content_repeated_and_cut(const fixture_t *f) {
  mx_text_range_t *plain = NULL;
  int32_t n_plain = 0;
  mx_status_t st;
  // Two spellings, the content rendered twice: four ranges, none special.
  char *text = render(f, "{% for m in messages %}{{ m.content }}|{{ m.content }}{% endfor %}",
                      "<|end|>x<|end|>", &plain, &n_plain, &st);
  CHECK_OK(st);
  if (text) {
    CHECK_MSG(strcmp(text, "<|end|>x<|end|>|<|end|>x<|end|>") == 0, "text [%s]", text);
    CHECK(n_plain == 4 && plain[1].start == 8 && plain[1].end == 15 && plain[3].end == 31);
    CHECK(count_end(f, text, plain, n_plain) == 0);
  }
  free(plain);
  free(text);
  // A template that slices through a marked spelling: the lone mark goes, nothing else.
  text = render(f, "{% for m in messages %}{{ m.content[:3] }}{% endfor %}", "<|end|>", &plain,
                &n_plain, &st);
  CHECK_OK(st);
  CHECK_MSG(text && strcmp(text, "<|") == 0 && n_plain == 0, "text [%s]", text ? text : "");
  free(plain);
  free(text);
}

static void test_reserved_noncharacters(const fixture_t *f) {
  mx_text_range_t *plain = NULL;
  int32_t n_plain = 0;
  mx_status_t st;
  char *text = render(f, "{% for m in messages %}{{ m.content }}{% endfor %}", "a\xEF\xB7\x90",
                      &plain, &n_plain, &st);
  CHECK(st == MX_ERR_INVALID_ARG && !text && !plain);
  CHECK(strstr(mx_error_message(), "message 0") && strstr(mx_error_message(), "U+FDD0"));
  // A render error passes through as the template's.
  text = render(f, "{{ raise_exception('no') }}", "x", &plain, &n_plain, &st);
  CHECK(st == MX_ERR_RUNTIME && !text && strstr(mx_error_message(), "no"));
}

// A message's other fields (mx_chat_render_guarded_fields): the template reads them, and their
// strings are guarded as contents are, escaped spellings too (JSON's \u003c is '<').
static void test_fields(const fixture_t *f) {
  const char *tmpl =
      "{% for m in messages %}{{ m.role }}:{% for c in m.tool_calls %}[{{ c.function.name }} "
      "{{ c.function.arguments | tojson }}]{% endfor %}{{ m.tool_call_id }}{% endfor %}";
  mx_chat_template_t *t = NULL;
  CHECK_OK(mx_chat_template_compile(tmpl, strlen(tmpl), &t));
  if (!t) return;
  mx_chat_message_t m[2] = {{"assistant", ""}, {"tool", "ok"}};
  const char *fields[2] = {
      "{\"tool_calls\":[{\"function\":{\"name\":\"f<|end|>\",\"arguments\":{\"q\":"
      "\"\\u003c|end|>\"}}}]}",
      "{\"tool_call_id\":\"c1\"}"};
  char *text = NULL;
  mx_text_range_t *plain = NULL;
  int32_t n_plain = 0;
  CHECK_OK(mx_chat_render_guarded_fields(t, f->guard, m, fields, 2, NULL, &text, NULL, &plain,
                                         &n_plain));
  CHECK_MSG(text && strcmp(text, "assistant:[f<|end|> {\"q\": \"<|end|>\"}]tool:c1") == 0, "[%s]",
            text ? text : "(null)");
  CHECK(n_plain == 2);
  if (text) CHECK(count_end(f, text, plain, n_plain) == 0 && count_end(f, text, NULL, 0) == 2);
  free(plain);
  free(text);
  // Unguarded, the same fields render the same text; fields that are not an object are refused.
  CHECK_OK(mx_chat_render_fields(t, m, fields, 2, NULL, &text, NULL));
  CHECK(text && strcmp(text, "assistant:[f<|end|> {\"q\": \"<|end|>\"}]tool:c1") == 0);
  free(text);
  const char *bad[2] = {"[1]", NULL};
  CHECK(mx_chat_render_fields(t, m, bad, 2, NULL, &text, NULL) == MX_ERR_INVALID_ARG);
  mx_chat_template_destroy(t);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tokenizer/mini-bytelevel", data ? data : "tests/data");
  fixture_t f = {0};
  CHECK_OK(mx_tokenizer_load(dir, &f.tok));
  if (f.tok) CHECK_OK(mx_chat_guard_create(f.tok, &f.guard));
  if (f.guard) {
    test_markup_stays_special(&f);
    test_content_repeated_and_cut(&f);
    test_reserved_noncharacters(&f);
    test_fields(&f);
  }
  mx_chat_guard_destroy(f.guard);
  mx_tokenizer_destroy(f.tok);
  return mx_test_finish();
}
