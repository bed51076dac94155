// Splitting a test file into its `// -----` separated cases (StableHLO's -split-input-file).
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"

// Returns the position of the "// -----" marker in [s, e), or NULL. Like MLIR's
// -split-input-file, the marker counts anywhere on a line (so `// // -----` splits too); the rest
// of the marker's line is dropped.
static const char *mx_split_marker(const char *s, const char *e) {
  if (e - s < 8) return NULL;
  const char *m = memmem(s, (size_t)(e - s), "// -----", 8);
  return m;
}

mx_status_t mx_hlo_split_cases(const char *text, size_t len, mx_text_case_t **cases,
                               int32_t *n_cases) {
  if (!cases || !n_cases || (!text && len))
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_hlo_split_cases: bad arguments");
  *cases = NULL;
  *n_cases = 0;
  if (!text) text = "";
  int32_t cap = 8, n = 0;
  mx_text_case_t *out = malloc(sizeof(mx_text_case_t) * (size_t)cap);
  if (!out) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  const char *end = text + len;
  const char *case_start = text;
  int32_t case_line = 1, line = 1;
  for (const char *ls = text; ls < end;) {
    const char *le = memchr(ls, '\n', (size_t)(end - ls));
    const char *next = le ? le + 1 : end;
    if (!le) le = end;
    const char *mk = mx_split_marker(ls, le);
    if (mk) {
      if (n == cap) {
        mx_text_case_t *nc = realloc(out, sizeof(mx_text_case_t) * (size_t)cap * 2);
        if (!nc) {
          free(out);
          return mx_error_set(MX_ERR_NOMEM, "out of memory");
        }
        out = nc;
        cap *= 2;
      }
      out[n].text = case_start;
      out[n].len = (size_t)(mk - case_start);
      out[n].first_line = case_line;
      n++;
      case_start = next;
      case_line = line + 1;
    }
    line++;
    ls = next;
  }
  if (n == cap) {
    mx_text_case_t *nc = realloc(out, sizeof(mx_text_case_t) * (size_t)cap * 2);
    if (!nc) {
      free(out);
      return mx_error_set(MX_ERR_NOMEM, "out of memory");
    }
    out = nc;
  }
  out[n].text = case_start;
  out[n].len = (size_t)(end - case_start);
  out[n].first_line = case_line;
  n++;
  *cases = out;
  *n_cases = n;
  return MX_OK;
}
