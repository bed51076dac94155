// Test helper of tests/gguf_reference.py (case vocab): loads the tokenizer of a GGUF file once
// and encodes each input of a llama.cpp vocabulary test (inputs separated by
// "\n__ggml_vocab_test__\n") without special tokens, comparing with the expected ids (one line
// of space-separated ids per input). Prints each mismatch and a summary; exit 0 when all match.
// Usage: gguf_vocab FILE.gguf INPUTS.inp EXPECTED.out
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/model.h"
#include "mlxcel/tokenizer.h"

static char *slurp(const char *path) {
  char *data = NULL;
  size_t len = 0;
  if (mx_read_file(path, &data, &len) != MX_OK) {
    fprintf(stderr, "gguf_vocab: %s\n", mx_error_message());
    return NULL;
  }
  return data;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: gguf_vocab FILE.gguf INPUTS.inp EXPECTED.out\n");
    return 2;
  }
  mx_tokenizer_t *tok = NULL;
  if (mx_gguf_load_tokenizer(argv[1], &tok) != MX_OK) {
    fprintf(stderr, "gguf_vocab: %s\n", mx_error_message());
    return 1;
  }
  char *in = slurp(argv[2]), *out = slurp(argv[3]);
  int cases = 0, bad = 0;
  static const char kSep[] = "\n__ggml_vocab_test__\n";
  char *ip = in, *op = out;
  while (in && out) {
    char *sep = strstr(ip, kSep), *eol = strchr(op, '\n');
    if (!sep || !eol) break;
    *eol = '\0';
    int32_t want[4096], nw = 0;
    for (char *t = strtok(op, " "); t && nw < 4096; t = strtok(NULL, " ")) want[nw++] = atoi(t);
    mx_encode_opts_t eo = {.add_special = false, .parse_special = true};
    int32_t *ids = NULL, n = 0;
    if (mx_tokenizer_encode(tok, ip, (size_t)(sep - ip), &eo, &ids, &n) != MX_OK) {
      printf("case %d: error: %s\n", cases, mx_error_message());
      bad++;
    } else if (n != nw || (n > 0 && memcmp(ids, want, (size_t)n * sizeof *ids) != 0)) {
      printf("case %d (%.*s): got", cases, (int)(sep - ip), ip);
      for (int32_t i = 0; i < n; i++) printf(" %d", ids[i]);
      printf(", want %s\n", op);
      bad++;
    }
    free(ids);
    cases++;
    ip = sep + sizeof kSep - 1;
    op = eol + 1;
  }
  printf("%s: %d/%d inputs encode to the expected ids\n", argv[1], cases - bad, cases);
  free(in);
  free(out);
  mx_tokenizer_destroy(tok);
  return in && out && bad == 0 && cases > 0 ? 0 : 1;
}
