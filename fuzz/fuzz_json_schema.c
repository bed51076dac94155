// libFuzzer target: arbitrary bytes as a JSON Schema (up to the first NUL), compiled; when it
// compiles, the bytes after the NUL are fed to a matcher one at a time (each refused byte is
// skipped), checking that a refused byte leaves the state unchanged and that a finished
// document refuses every further byte. Malformed or unsupported schemas must give MX_ERR_*.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/grammar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const char *nul = memchr(text, '\0', size);
  size_t len = nul ? (size_t)(nul - text) : size;
  mx_grammar_t *g = NULL;
  if (mx_grammar_from_schema(text, len, &g) != MX_OK) return 0;
  mx_gmatch_t *m = NULL;
  if (mx_gmatch_create(g, &m) == MX_OK && nul) {
    for (size_t i = len + 1; i < size; i++) {
      bool finished = mx_gmatch_finished(m);
      bool accepting = mx_gmatch_accepting(m);
      bool ok = mx_gmatch_feed(m, text + i, 1);
      if (finished && ok) abort();  // nothing may follow a finished document
      if (!ok && mx_gmatch_accepting(m) != accepting) abort();  // refused: state unchanged
    }
  }
  mx_gmatch_destroy(m);
  mx_grammar_destroy(g);
  return 0;
}
