// Text streams (text_stream.h) with the bundled stories260K tokenizer: pushing a text's tokens
// one by one releases exactly the text before the earliest stop string (whatever the token
// boundaries), holds back partial matches, ends with finish/last, and rejects bad options.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/text_stream.h"
#include "mx_test.h"

static const char *kText =
    "Once upon a time, there was a little girl named Lily. She liked caf\xc3\xa9 \xe2\x98\x83 and "
    "big red balls. The end.";

// Streams ids[1..n) (after the BOS) through a stream with these stops; returns the text.
static char *run(const mx_tokenizer_t *tok, const int32_t *ids, int32_t n, const char *const *stop,
                 int32_t n_stop, int32_t max_tokens, bool *stopped_out, bool eos_at_end) {
  mx_text_stream_opts_t o = {.stop = stop, .n_stop = n_stop, .mid_text = false};
  mx_text_stream_t *ts = NULL;
  if (mx_text_stream_create(tok, &o, &ts) != MX_OK) return NULL;
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_strbuf_append(&sb, "", 0);
  bool stopped = false;
  int32_t k = 0;
  for (int32_t i = 1; i < n && !stopped; i++) {
    bool last = ++k >= max_tokens;
    size_t len = 0;
    const char *t = mx_text_stream_push(ts, ids[i], last, &len, &stopped);
    CHECK(t[len] == '\0');
    mx_strbuf_append(&sb, t, len);
    if (last) break;
  }
  if (!stopped && eos_at_end) {
    size_t len = 0;
    const char *t = mx_text_stream_finish(ts, &len);
    mx_strbuf_append(&sb, t, len);
  }
  // Over: nothing more comes out.
  size_t len = 1;
  bool again = false;
  mx_text_stream_push(ts, ids[1], false, &len, &again);
  CHECK(len == 0 && !again);
  *stopped_out = stopped;
  mx_text_stream_destroy(ts);
  return mx_strbuf_take(&sb, NULL);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/../../models/stories260K", data ? data : "tests/data");
  mx_tokenizer_t *tok = NULL;
  CHECK_OK(mx_tokenizer_load(dir, &tok));
  if (!tok) return mx_test_finish();
  int32_t *ids = NULL, n = 0;
  CHECK_OK(mx_tokenizer_encode(tok, kText, strlen(kText), NULL, &ids, &n));
  CHECK(n > 10 && ids[0] == mx_tokenizer_bos_id(tok));
  CHECK(!mx_text_stream_mid_text(tok, ids, 1) && mx_text_stream_mid_text(tok, ids, 2));
  CHECK(!mx_text_stream_mid_text(NULL, ids, 2));

  // No stop: the whole text, at EOS or with the last token.
  bool stopped = false;
  char *t = run(tok, ids, n, NULL, 0, 1 << 30, &stopped, true);
  CHECK_MSG(t && strcmp(t, kText) == 0 && !stopped, "'%s'", t);
  free(t);
  t = run(tok, ids, n, NULL, 0, n - 1, &stopped, false);
  CHECK_MSG(t && strcmp(t, kText) == 0, "'%s'", t);
  free(t);

  // One stop string or several: the text before the earliest occurrence of any.
  const char *sets[][3] = {{"Lily", NULL, NULL},     {"girl na", NULL, NULL},
                           {"\xc3\xa9", NULL, NULL}, {"\xe2\x98\x83 and", NULL, NULL},
                           {"end.", "big", "zzz"},   {"zzz", ". She", "little"},
                           {"e", NULL, NULL},        {"The end.!", NULL, NULL}};
  for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
    int32_t ns = 0;
    size_t cut = strlen(kText);
    for (; ns < 3 && sets[s][ns]; ns++) {
      const char *hit = strstr(kText, sets[s][ns]);
      if (hit && (size_t)(hit - kText) < cut) cut = (size_t)(hit - kText);
    }
    t = run(tok, ids, n, sets[s], ns, 1 << 30, &stopped, true);
    CHECK_MSG(t && strlen(t) == cut && strncmp(t, kText, cut) == 0, "set %zu: '%s'", s, t);
    CHECK_MSG(stopped == (cut < strlen(kText)), "set %zu: stopped %d", s, stopped);
    free(t);
  }

  // A partial match is held back until the text rules it out or ends.
  mx_text_stream_opts_t o = {.stop = (const char *const[]){"girl named Bob"}, .n_stop = 1};
  mx_text_stream_t *ts = NULL;
  CHECK_OK(mx_text_stream_create(tok, &o, &ts));
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  // The first release that shows "girl" also shows "girl named ": until the text after it
  // rules out "Bob", "girl named " could be the start of the stop string.
  bool seen_girl = false;
  for (int32_t i = 1; i < n; i++) {
    size_t k = 0;
    bool st = false;
    const char *p = mx_text_stream_push(ts, ids[i], false, &k, &st);
    mx_strbuf_append(&sb, p, k);
    CHECK(!st);
    if (!seen_girl && sb.data && strstr(sb.data, "girl")) {
      seen_girl = true;
      CHECK_MSG(strstr(sb.data, "girl named L") != NULL, "released '%s'", sb.data);
    }
  }
  CHECK(seen_girl);
  size_t len = 0;
  mx_strbuf_append(&sb, mx_text_stream_finish(ts, &len), len);
  CHECK_MSG(sb.data && strcmp(sb.data, kText) == 0, "'%s'", sb.data);
  mx_strbuf_free(&sb);
  mx_text_stream_destroy(ts);

  // Bad options.
  CHECK(mx_text_stream_create(
            tok, &(mx_text_stream_opts_t){.stop = (const char *const[]){""}, .n_stop = 1}, &ts) ==
            MX_ERR_INVALID_ARG &&
        !ts && strstr(mx_error_message(), "empty"));
  CHECK(mx_text_stream_create(tok, &(mx_text_stream_opts_t){.n_stop = 2}, &ts) ==
        MX_ERR_INVALID_ARG);
  CHECK(mx_text_stream_create(
            NULL, &(mx_text_stream_opts_t){.stop = (const char *const[]){"x"}, .n_stop = 1}, &ts) ==
        MX_ERR_INVALID_ARG);
  // Without a tokenizer there is no text.
  CHECK_OK(mx_text_stream_create(NULL, NULL, &ts));
  bool st = true;
  CHECK(mx_text_stream_push(ts, 5, false, &len, &st)[0] == '\0' && len == 0 && !st);
  mx_text_stream_destroy(ts);
  mx_text_stream_destroy(NULL);
  free(ids);
  mx_tokenizer_destroy(tok);
  return mx_test_finish();
}
