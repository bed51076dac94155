// JSON parsing with size and depth limits and located messages (see json.h).
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

// 1-based line and column of byte `at` of text.
static void line_col(const char *text, size_t at, size_t *line, size_t *col) {
  *line = 1;
  size_t start = 0;
  for (size_t i = 0; i < at; i++) {
    if (text[i] == '\n') {
      (*line)++;
      start = i + 1;
    }
  }
  *col = at - start + 1;
}

// Offset of the first bracket that opens nesting level max_depth + 1 (strings skipped), or
// `len` when the nesting stays within the limit. A scan without allocation, before cJSON.
static size_t too_deep_at(const char *s, size_t len, int max_depth) {
  int depth = 0;
  bool in_str = false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (in_str) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      depth--;
    }
  }
  return len;
}

mx_status_t mx_json_parse(const char *text, size_t len, size_t max_bytes, int max_depth,
                          const char *what, cJSON **out) {
  *out = NULL;
  if (!text) return mx_error_set(MX_ERR_INVALID_ARG, "%s: no text", what);
  if (len > max_bytes) {
    return mx_error_set(MX_ERR_PARSE, "%s: %zu bytes, over the limit of %zu bytes", what, len,
                        max_bytes);
  }
  size_t line, col, deep = too_deep_at(text, len, max_depth);
  if (deep < len) {
    line_col(text, deep, &line, &col);
    return mx_error_set(MX_ERR_PARSE,
                        "%s: JSON nested deeper than %d levels (line %zu, column %zu)", what,
                        max_depth, line, col);
  }
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, false);
  if (!j) {
    size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
    line_col(text, at, &line, &col);
    // cJSON cannot tell a syntax error from an allocation failure; the position says which.
    return mx_error_set(MX_ERR_PARSE, "%s: not valid JSON (line %zu, column %zu)", what, line, col);
  }
  for (const char *p = end; p && p < text + len; p++) {
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      line_col(text, (size_t)(p - text), &line, &col);
      cJSON_Delete(j);
      return mx_error_set(MX_ERR_PARSE,
                          "%s: trailing bytes after the JSON value (line %zu, column %zu)", what,
                          line, col);
    }
  }
  *out = j;
  return MX_OK;
}
