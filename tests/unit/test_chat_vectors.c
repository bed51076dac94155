// Qwen3's chat template against ../shared/tokenizers/qwen3/chat-vectors.jsonl (MX_SHARED):
// every line's `rendered` text (or its `error`), then the ids of that text encoded with the
// qwen3 tokenizer (add_special false, parse_special true), as apply_chat_template(tokenize=True)
// does. Also the llama3 template on the same conversations (rendered text only: no reference,
// checked for the structure its template fixes). Skips with a message when MX_SHARED is absent.
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/chat.h"
#include "mlxcel/tokenizer.h"
#include "mx_test.h"

static bool ids_equal(const int32_t *ids, int32_t n, const cJSON *arr) {
  if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != n) return false;
  for (int32_t i = 0; i < n; i++) {
    if ((int32_t)cJSON_GetArrayItem(arr, i)->valuedouble != ids[i]) return false;
  }
  return true;
}

static int run_line(const mx_chat_template_t *t, const mx_tokenizer_t *tok, const char *line,
                    int lineno) {
  cJSON *j = cJSON_Parse(line);
  CHECK_MSG(j != NULL, "line %d: bad JSON", lineno);
  if (!j) return 0;
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(j, "messages");
  const cJSON *want = cJSON_GetObjectItemCaseSensitive(j, "rendered");
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
  const cJSON *ids = cJSON_GetObjectItemCaseSensitive(j, "ids");
  char *msgs_text = cJSON_PrintUnformatted(msgs);
  char *extra_text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "extra"));
  mx_chat_render_opts_t o = {.add_generation_prompt = cJSON_IsTrue(
                                 cJSON_GetObjectItemCaseSensitive(j, "add_generation_prompt")),
                             .extra_json = extra_text};
  mx_chat_opts_from_tokenizer(tok, &o);
  char *out = NULL;
  size_t len = 0;
  mx_status_t st = mx_chat_render_json(t, msgs_text, &o, &out, &len);
  if (cJSON_IsString(err)) {
    CHECK_MSG(st != MX_OK, "line %d: expected error \"%s\", rendered \"%s\"", lineno,
              err->valuestring, out ? out : "");
    if (st != MX_OK) printf("  line %d: error as expected: %s\n", lineno, mx_error_message());
  } else {
    CHECK_MSG(st == MX_OK, "line %d: render failed: %s", lineno, mx_error_message());
    if (st == MX_OK && cJSON_IsString(want)) {
      bool same = strcmp(out, want->valuestring) == 0 && len == strlen(want->valuestring);
      CHECK_MSG(same, "line %d: rendered\n[%s]\nwant\n[%s]", lineno, out, want->valuestring);
      mx_encode_opts_t eo = {.add_special = false, .parse_special = true};
      int32_t *got = NULL, n = 0;
      CHECK_OK(mx_tokenizer_encode(tok, out, len, &eo, &got, &n));
      CHECK_MSG(ids_equal(got, n, ids), "line %d: ids differ (%d tokens)", lineno, n);
      free(got);
    }
  }
  free(out);
  free(msgs_text);
  free(extra_text);
  cJSON_Delete(j);
  return 1;
}

int main(void) {
  const char *shared = getenv("MX_SHARED");
  char path[4096];
  if (!shared || !*shared) {
    mx_test_skip("MX_SHARED is not set (needs ../shared/tokenizers/qwen3)");
    return mx_test_finish();
  }
  snprintf(path, sizeof path, "%s/tokenizers/qwen3/chat-vectors.jsonl", shared);
  FILE *f = fopen(path, "rb");
  if (!f) {
    mx_test_skip("%s not found", path);
    return mx_test_finish();
  }
  snprintf(path, sizeof path, "%s/tokenizers/qwen3", shared);
  mx_tokenizer_t *tok = NULL;
  CHECK_OK(mx_tokenizer_load(path, &tok));
  mx_chat_template_t *t = NULL;
  if (tok) CHECK_OK(mx_chat_template_from_tokenizer(tok, &t));
  int lines = 0;
  if (t) {
    static char line[1 << 16];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
      lineno++;
      if (line[0] == '{') lines += run_line(t, tok, line, lineno);
    }
  }
  fclose(f);
  CHECK_MSG(lines == 16, "%d vector lines (want 16)", lines);
  printf("  qwen3 chat vectors: %d lines\n", lines);
  mx_chat_template_destroy(t);
  mx_tokenizer_destroy(tok);

  // llama3: a template without a reference file; renders BOS once, trims content.
  snprintf(path, sizeof path, "%s/tokenizers/llama3", shared);
  tok = NULL;
  t = NULL;
  CHECK_OK(mx_tokenizer_load(path, &tok));
  if (tok) CHECK_OK(mx_chat_template_from_tokenizer(tok, &t));
  if (t) {
    mx_chat_message_t m[] = {{"system", "Be brief. "}, {"user", " Hi"}};
    mx_chat_render_opts_t o = {.add_generation_prompt = true};
    mx_chat_opts_from_tokenizer(tok, &o);
    char *out = NULL;
    CHECK_OK(mx_chat_render(t, m, 2, &o, &out, NULL));
    const char *want =
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n";
    CHECK_MSG(out && strcmp(out, want) == 0, "llama3 rendered [%s]", out ? out : "");
    free(out);
  }
  mx_chat_template_destroy(t);
  mx_tokenizer_destroy(tok);

  // Tokenizers without a template: a clear error.
  snprintf(path, sizeof path, "%s/tokenizers/llama2", shared);
  tok = NULL;
  CHECK_OK(mx_tokenizer_load(path, &tok));
  if (tok) {
    t = NULL;
    mx_status_t st = mx_chat_template_from_tokenizer(tok, &t);
    CHECK(st == MX_ERR_UNSUPPORTED && t == NULL);
    CHECK(strstr(mx_error_message(), "no chat_template") != NULL);
  }
  mx_tokenizer_destroy(tok);
  return mx_test_finish();
}
