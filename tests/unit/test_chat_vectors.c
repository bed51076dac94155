// Qwen3's chat template against ../shared/tokenizers/qwen3/chat-vectors.jsonl (MX_SHARED):
// every line's `rendered` text (or its `error`), then the ids of that text encoded with the
// qwen3 tokenizer (add_special false, parse_special true), as apply_chat_template(tokenize=True)
// does. Then the other families' templates against tests/data/chat/vectors.jsonl, which
// transformers' apply_chat_template wrote (tests/data/chat/make_vectors.py): the same checks,
// ids where ../shared has the family's tokenizer. Skips with a message when MX_SHARED is absent.
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

// ---- tests/data/chat/vectors.jsonl: llama3, gemma, gemma3, mistral, phi3, qwen2 ----

static char *read_text(const char *path, size_t *len) {
  char *text = NULL;
  return mx_read_file(path, &text, len) == MX_OK ? text : NULL;
}

// The template a vector names: a file of tests/data/chat/templates, or "shared:<tokenizer>" for
// the chat_template of a tokenizer in ../shared.
static mx_chat_template_t *vector_template(const char *data, const char *shared,
                                           const char *source) {
  mx_chat_template_t *t = NULL;
  char path[4096];
  if (strncmp(source, "shared:", 7) == 0) {
    snprintf(path, sizeof path, "%s/tokenizers/%s", shared, source + 7);
    mx_tokenizer_t *tok = NULL;
    CHECK_OK(mx_tokenizer_load(path, &tok));
    if (tok) CHECK_OK(mx_chat_template_from_tokenizer(tok, &t));
    mx_tokenizer_destroy(tok);
    return t;
  }
  snprintf(path, sizeof path, "%s/chat/templates/%s", data, source);
  size_t len = 0;
  char *src = read_text(path, &len);
  CHECK_MSG(src != NULL, "%s: %s", path, mx_error_message());
  if (src) CHECK_OK(mx_chat_template_compile(src, len, &t));
  free(src);
  return t;
}

static const char *str_or_null(const cJSON *j, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int family_vectors(const char *data, const char *shared) {
  char path[4096];
  snprintf(path, sizeof path, "%s/chat/vectors.jsonl", data);
  FILE *f = fopen(path, "rb");
  CHECK_MSG(f != NULL, "%s not found", path);
  if (!f) return 0;
  static char line[1 << 16];
  int n = 0, with_ids = 0, errors = 0;
  while (fgets(line, sizeof line, f)) {
    cJSON *j = cJSON_Parse(line);
    CHECK_MSG(j != NULL, "%s:%d: bad JSON", path, n + 1);
    if (!j) continue;
    n++;
    const char *family = str_or_null(j, "family"), *conv = str_or_null(j, "conversation");
    mx_chat_template_t *t = vector_template(data, shared, str_or_null(j, "template"));
    char *msgs = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "messages"));
    mx_chat_render_opts_t o = {.add_generation_prompt = cJSON_IsTrue(
                                   cJSON_GetObjectItemCaseSensitive(j, "add_generation_prompt")),
                               .bos_token = str_or_null(j, "bos_token"),
                               .eos_token = str_or_null(j, "eos_token")};
    char *out = NULL;
    size_t len = 0;
    mx_status_t st = t ? mx_chat_render_json(t, msgs, &o, &out, &len) : MX_ERR_INVALID_ARG;
    const char *want = str_or_null(j, "rendered"), *err = str_or_null(j, "error");
    if (err) {
      errors++;
      CHECK_MSG(st != MX_OK && strstr(mx_error_message(), err) != NULL,
                "%s %s: expected the template's error \"%s\", got %s", family, conv, err,
                st == MX_OK ? out : mx_error_message());
    } else {
      CHECK_MSG(st == MX_OK && want && strcmp(out, want) == 0 && len == strlen(want),
                "%s %s: rendered\n[%s]\nwant\n[%s]", family, conv,
                st == MX_OK ? out : mx_error_message(), want ? want : "");
      const char *tok_name = str_or_null(j, "tokenizer");
      if (st == MX_OK && tok_name) {
        snprintf(path, sizeof path, "%s/tokenizers/%s", shared, tok_name);
        mx_tokenizer_t *tok = NULL;
        CHECK_OK(mx_tokenizer_load(path, &tok));
        mx_encode_opts_t eo = {.add_special = false, .parse_special = true};
        int32_t *got = NULL, ng = 0;
        if (tok) CHECK_OK(mx_tokenizer_encode(tok, out, len, &eo, &got, &ng));
        CHECK_MSG(ids_equal(got, ng, cJSON_GetObjectItemCaseSensitive(j, "ids")),
                  "%s %s: ids differ from transformers' (%d tokens)", family, conv, ng);
        with_ids++;
        free(got);
        mx_tokenizer_destroy(tok);
      }
    }
    free(out);
    free(msgs);
    mx_chat_template_destroy(t);
    cJSON_Delete(j);
  }
  fclose(f);
  printf("  family chat vectors: %d lines (%d with ids, %d template errors)\n", n, with_ids,
         errors);
  return n;
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

  const char *data = getenv("MX_TEST_DATA");
  if (data) {
    CHECK(family_vectors(data, shared) == 98);
  } else {
    mx_test_skip("MX_TEST_DATA is not set: tests/data/chat/vectors.jsonl not checked");
  }
  return mx_test_finish();
}
