// mx_encode_opts_t.plain (src/tokenizer/tok_encode.c): special tokens are not matched where
// they overlap a plain range and are matched elsewhere, in one pass, on the bundled stories260K
// tokenizer (special tokens <unk> 0, <s> 1, </s> 2).
#include <stdlib.h>
#include <string.h>

#include "mlxcel/tokenizer.h"
#include "mx_test.h"

static int32_t *enc(const mx_tokenizer_t *t, const char *s, bool parse, const mx_text_range_t *r,
                    int32_t nr, int32_t *n) {
  mx_encode_opts_t o = {.add_special = false, .parse_special = parse, .plain = r, .n_plain = nr};
  int32_t *ids = NULL;
  *n = -1;
  CHECK_OK(mx_tokenizer_encode(t, s, strlen(s), &o, &ids, n));
  return ids;
}

static int32_t count(const int32_t *ids, int32_t n, int32_t id) {
  int32_t k = 0;
  for (int32_t i = 0; i < n; i++) k += ids[i] == id;
  return k;
}

static bool same(const int32_t *a, int32_t na, const int32_t *b, int32_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/../../models/stories260K", data ? data : "tests/data");
  mx_tokenizer_t *t = NULL;
  CHECK_OK(mx_tokenizer_load(dir, &t));
  if (!t) return mx_test_finish();
  const char *s = "<s>Once</s> upon</s> a time";  // </s> at bytes 7 and 16
  int32_t n_parsed, n_text, n;
  int32_t *parsed = enc(t, s, true, NULL, 0, &n_parsed);
  int32_t *text = enc(t, s, false, NULL, 0, &n_text);
  CHECK(count(parsed, n_parsed, 1) == 1 && count(parsed, n_parsed, 2) == 2);
  CHECK(count(text, n_text, 1) == 0 && count(text, n_text, 2) == 0);

  // No ranges: as parse_special. One range over everything: as plain text.
  mx_text_range_t all = {0, strlen(s)};
  int32_t *ids = enc(t, s, true, &all, 1, &n);
  CHECK(same(ids, n, text, n_text));
  free(ids);
  ids = enc(t, s, true, &all, 0, &n);  // n_plain 0: the pointer is ignored
  CHECK(same(ids, n, parsed, n_parsed));
  free(ids);

  // The first </s> plain, the rest matched: <s> and the second </s> stay special.
  mx_text_range_t first = {7, 11};
  ids = enc(t, s, true, &first, 1, &n);
  CHECK_MSG(n > 0 && ids[0] == 1 && count(ids, n, 1) == 1 && count(ids, n, 2) == 1, "n %d", n);
  CHECK(n > n_parsed);
  free(ids);

  // A range touching only part of a spelling ("</" of the second) is enough to keep it text;
  // a range that ends where a spelling starts does not touch it.
  mx_text_range_t parts[2] = {{0, 1}, {15, 17}};
  ids = enc(t, s, true, parts, 2, &n);
  CHECK_MSG(count(ids, n, 1) == 0 && count(ids, n, 2) == 1, "n %d", n);
  free(ids);
  mx_text_range_t before = {3, 7};
  ids = enc(t, s, true, &before, 1, &n);
  CHECK(count(ids, n, 2) == 2);
  free(ids);

  // parse_special false wins over everything.
  ids = enc(t, s, false, &first, 1, &n);
  CHECK(same(ids, n, text, n_text));
  free(ids);
  free(parsed);
  free(text);
  mx_tokenizer_destroy(t);
  return mx_test_finish();
}
