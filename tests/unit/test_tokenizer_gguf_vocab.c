// llama.cpp's tokenizer test vectors (scripts/ggml_vocab.py puts them in the test environment,
// MX_GGML_VOCAB): for each vocabulary-only GGUF file (Phi-3, Llama 2, Llama 3, Qwen2), every text
// of its .inp file encoded through the GGUF loader's tokenizer (mx_gguf_load_tokenizer) without
// special tokens must give the ids of its .out file, which transformers' AutoTokenizer produced
// on the model's own Hugging Face tokenizer. Skips (77) when the files are missing.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/model.h"
#include "mlxcel/tokenizer.h"
#include "mx_test.h"

static const char kSep[] = "\n__ggml_vocab_test__\n";

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 12, n = 0;
  char *buf = malloc(cap + 1);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) {
      char *nb = realloc(buf, 2 * cap + 1);
      if (!nb) free(buf);
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  *len = n;
  return buf;
}

// Checks every case of vocabulary `name`; returns the number checked.
static int check_vocab(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir, name);
  mx_tokenizer_t *tok = NULL;
  mx_status_t st = mx_gguf_load_tokenizer(path, &tok);
  CHECK_MSG(st == MX_OK, "%s: %s", path, mx_error_message());
  if (st != MX_OK) return 0;
  size_t in_len, out_len;
  snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.inp", dir, name);
  char *in = slurp(path, &in_len);
  snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.out", dir, name);
  char *out = slurp(path, &out_len);
  CHECK_MSG(in && out, "%s: cannot read the .inp / .out files", name);
  int cases = 0;
  const char *text = in, *line = out;
  while (in && out && *line) {
    const char *end = strstr(text, kSep);
    size_t len = end ? (size_t)(end - text) : strlen(text);
    const char *eol = strchr(line, '\n');
    size_t line_len = eol ? (size_t)(eol - line) : strlen(line);
    mx_encode_opts_t eo = {.add_special = false, .parse_special = true};
    int32_t *ids = NULL, n = 0;
    st = mx_tokenizer_encode(tok, text, len, &eo, &ids, &n);
    CHECK_MSG(st == MX_OK, "%s case %d: %s", name, cases, mx_error_message());
    // The expected ids: " 1122 220 19" (a leading space, one line per text).
    bool same = st == MX_OK;
    const char *p = line, *stop = line + line_len;
    int32_t k = 0;
    while (same) {
      while (p < stop && *p == ' ') p++;
      if (p == stop) break;
      char *q;
      long v = strtol(p, &q, 10);
      same = q > p && k < n && ids[k] == v;
      k++;
      p = q;
    }
    same = same && k == n;
    CHECK_MSG(same, "%s case %d (\"%.*s\"): ids differ from transformers' (%.*s), got %d ids", name,
              cases, (int)(len < 40 ? len : 40), text, (int)(line_len < 80 ? line_len : 80), line,
              (int)n);
    free(ids);
    cases++;
    if (!end || !eol) break;
    text = end + strlen(kSep);
    line = eol + 1;
  }
  printf("  %s: %d cases\n", name, cases);
  free(in);
  free(out);
  mx_tokenizer_destroy(tok);
  return cases;
}

int main(void) {
  const char *dir = getenv("MX_GGML_VOCAB");
  char probe[1024];
  snprintf(probe, sizeof probe, "%s/ggml-vocab-qwen2.gguf.out", dir ? dir : "");
  FILE *f = dir ? fopen(probe, "rb") : NULL;
  if (!f) {
    mx_test_skip(
        "no llama.cpp tokenizer vectors at MX_GGML_VOCAB=%s (scripts/venv.sh fetches them)",
        dir ? dir : "(unset)");
    return mx_test_finish();
  }
  fclose(f);
  static const char *const kVocabs[] = {"phi-3", "llama-spm", "llama-bpe", "qwen2"};
  for (size_t i = 0; i < sizeof kVocabs / sizeof kVocabs[0]; i++) {
    int n = check_vocab(dir, kVocabs[i]);
    CHECK_MSG(n >= 40, "%s: only %d cases read", kVocabs[i], n);
  }
  return mx_test_finish();
}
