// Resource limits with exact error messages: checkpoint tensor size and total mapped size
// (mx_checkpoint_limits_t, also through mx_model_load_ex), JSON size and nesting depth of the
// config and tokenizer files, files that never end (a symlink to /dev/zero), prompts longer than
// the context, and the tokenizer's text limit.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlxcel/model.h"
#include "mlxcel/session.h"
#include "mlxcel/tokenizer.h"
#include "mx_test.h"

#define EXPECT_STATUS(expr, status, text)                                                       \
  do {                                                                                          \
    mx_error_clear();                                                                           \
    mx_status_t st_ = (expr);                                                                   \
    CHECK_MSG(st_ == (status), "%s returned %d (%s), expected %d", #expr, (int)st_,             \
              mx_error_message(), (int)(status));                                               \
    CHECK_MSG(strcmp(mx_error_message(), (text)) == 0, "message\n  \"%s\"\nexpected\n  \"%s\"", \
              mx_error_message(), (text));                                                      \
  } while (0)

static char g_stories[4096];
static char g_tmp[256];

static void test_checkpoint_limits(void) {
  char expect[8192];
  mx_checkpoint_t *ck = NULL;
  // The first tensor in header order over the limit is named.
  mx_checkpoint_limits_t lim = {.max_tensor_bytes = 100000};
  snprintf(expect, sizeof expect,
           "%s/model.safetensors: tensor 'model.embed_tokens.weight': shape [512, 64] x F32 is "
           "131072 bytes, over the tensor size limit of 100000",
           g_stories);
  EXPECT_STATUS(mx_checkpoint_open_ex(g_stories, &lim, &ck), MX_ERR_PARSE, expect);
  CHECK(ck == NULL);
  lim.max_tensor_bytes = 131072;  // the limit itself is allowed
  CHECK_OK(mx_checkpoint_open_ex(g_stories, &lim, &ck));
  mx_checkpoint_close(ck);
  ck = NULL;

  mx_checkpoint_limits_t tot = {.max_total_bytes = 1000000};
  snprintf(expect, sizeof expect,
           "%s/model.safetensors: 1044992 bytes: the checkpoint's files would total 1044992 "
           "bytes, over the mapped-size limit of 1000000",
           g_stories);
  EXPECT_STATUS(mx_checkpoint_open_ex(g_stories, &tot, &ck), MX_ERR_IO, expect);
  tot.max_total_bytes = 1044992;
  CHECK_OK(mx_checkpoint_open_ex(g_stories, &tot, &ck));
  mx_checkpoint_close(ck);

  // Through the model loader's options.
  mx_model_load_opts_t o = {.limits = {.max_total_bytes = 1000000}};
  mx_model_t *m = NULL;
  EXPECT_STATUS(mx_model_load_ex(g_stories, &o, &m), MX_ERR_IO, expect);
  CHECK(m == NULL);
}

// "[[[[...1...]]]]" nested `depth` levels, as the value of "x" in an object.
static char *nested(int depth) {
  char *s = malloc((size_t)depth * 2 + 32);
  if (!s) return NULL;
  size_t k = (size_t)sprintf(s, "{\"x\": ");
  for (int i = 0; i < depth - 1; i++) s[k++] = '[';
  s[k++] = '1';
  for (int i = 0; i < depth - 1; i++) s[k++] = ']';
  strcpy(s + k, "}");
  return s;
}

static void test_json_limits(void) {
  mx_model_config_t cfg;
  char *deep = nested(65), *ok = nested(64);
  if (!deep || !ok) return;
  // Depth 65: the 65th opening bracket is at column 70 ("{"x": " then 64 '[').
  EXPECT_STATUS(mx_config_parse(deep, strlen(deep), NULL, 0, "c/config.json", &cfg), MX_ERR_PARSE,
                "c/config.json: JSON nested deeper than 64 levels (line 1, column 70)");
  // Depth 64 parses (and is then refused for what it says, not for its shape).
  EXPECT_STATUS(mx_config_parse(ok, strlen(ok), NULL, 0, "c/config.json", &cfg), MX_ERR_PARSE,
                "c/config.json: model_type is missing");
  EXPECT_STATUS(
      mx_config_parse("{\"model_type\": \"llama\"}", 23, deep, strlen(deep), "c/config.json", &cfg),
      MX_ERR_PARSE,
      "c/generation_config.json: JSON nested deeper than 64 levels (line 1, column 70)");
  mx_tokenizer_t *tok = NULL;
  EXPECT_STATUS(mx_tokenizer_load_json(deep, strlen(deep), NULL, 0, &tok), MX_ERR_PARSE,
                "tokenizer.json: JSON nested deeper than 64 levels (line 1, column 70)");
  // Brackets inside strings do not count; a line break moves the position.
  const char *strs =
      "{\"model_type\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
      "[[[[[[[[[[[[[[\",\n \"x\": [}";
  EXPECT_STATUS(mx_config_parse(strs, strlen(strs), NULL, 0, "s.json", &cfg), MX_ERR_PARSE,
                "s.json: not valid JSON (line 2, column 8)");
  free(deep);
  free(ok);

  // Size: one byte over 16 MiB of spaces around an object.
  size_t big = ((size_t)16 << 20) + 1;
  char *text = malloc(big);
  if (!text) return;
  memset(text, ' ', big);
  text[0] = '{';
  text[1] = '}';
  EXPECT_STATUS(mx_config_parse(text, big, NULL, 0, "b/config.json", &cfg), MX_ERR_PARSE,
                "b/config.json: 16777217 bytes, over the limit of 16777216 bytes");
  free(text);
}

static void test_file_limits(void) {
  char dir[512], path[600], expect[1024];
  snprintf(dir, sizeof dir, "%s/endless", g_tmp);
  CHECK(mkdir(dir, 0700) == 0);
  // config.json that never ends: the reader stops at the limit instead of filling memory.
  snprintf(path, sizeof path, "%s/config.json", dir);
  CHECK(symlink("/dev/zero", path) == 0);
  mx_model_config_t cfg;
  snprintf(expect, sizeof expect, "'%s' is larger than the limit of 16777216 bytes", path);
  EXPECT_STATUS(mx_config_load(dir, &cfg), MX_ERR_IO, expect);
  unlink(path);
  // tokenizer.json likewise (its limit is 256 MiB: a regular file of 300 bytes with a limit of
  // 100 shows the reader's behaviour without writing 256 MiB).
  snprintf(path, sizeof path, "%s/t.json", dir);
  FILE *f = fopen(path, "w");
  if (f) {
    for (int i = 0; i < 300; i++) fputc(' ', f);
    fclose(f);
  }
  char *data = NULL;
  size_t len = 0;
  snprintf(expect, sizeof expect, "'%s' is larger than the limit of 100 bytes", path);
  EXPECT_STATUS(mx_read_file_max(path, 100, &data, &len), MX_ERR_IO, expect);
  CHECK(data == NULL);
  CHECK_OK(mx_read_file_max(path, 300, &data, &len));
  CHECK(data && len == 300);
  free(data);
  unlink(path);
  rmdir(dir);
}

static void test_prompt_limits(void) {
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(g_stories, &m));
  if (!m) return;
  mx_session_opts_t so = {.backend = "cpu", .ctx = 32};
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  if (s) {
    int32_t ids[40];
    for (int i = 0; i < 40; i++) ids[i] = 1 + i;
    EXPECT_STATUS(mx_session_prefill(s, ids, 40, NULL), MX_ERR_INVALID_ARG,
                  "prompt of 40 tokens does not fit: context capacity 32, 0 tokens already in the "
                  "session");
    CHECK_OK(mx_session_prefill(s, ids, 30, NULL));
    EXPECT_STATUS(mx_session_prefill(s, ids, 3, NULL), MX_ERR_INVALID_ARG,
                  "prompt of 3 tokens does not fit: context capacity 32, 30 tokens already in the "
                  "session");
    // Generation stops at the context instead of failing: 27 generated tokens fill positions
    // 5..31, the 28th comes from the last logits and needs no position.
    mx_session_reset(s);
    mx_generate_opts_t go = {.max_tokens = 100, .ignore_eos = true};
    mx_sampler_params_default(&go.sampling);
    go.sampling.temperature = 0;
    mx_generate_stats_t stats;
    CHECK_OK(mx_generate(s, m->tokenizer, ids, 5, &go, NULL, NULL, &stats));
    CHECK_MSG(stats.finish == MX_FINISH_CONTEXT && stats.n_generated == 28, "%s after %d tokens",
              mx_finish_reason_name(stats.finish), (int)stats.n_generated);
    mx_session_destroy(s);
  }
  // Text beyond the tokenizer's limit (1 GiB) is refused before it is read.
  int32_t *out = NULL, n = 0;
  EXPECT_STATUS(mx_tokenizer_encode(m->tokenizer, "", (size_t)INT32_MAX / 2 + 1, NULL, &out, &n),
                MX_ERR_INVALID_ARG, "mx_tokenizer_encode: text of 1073741824 bytes is too long");
  mx_model_free(m);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  snprintf(g_stories, sizeof g_stories, "%s/../../models/stories260K", data ? data : "tests/data");
  snprintf(g_tmp, sizeof g_tmp, "/tmp/mx_limits_%d", (int)getpid());
  if (mkdir(g_tmp, 0700) != 0) return 1;
  test_checkpoint_limits();
  test_json_limits();
  test_file_limits();
  test_prompt_limits();
  rmdir(g_tmp);
  return mx_test_finish();
}
