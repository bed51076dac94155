// The GGUF reader (src/gguf): a file written here byte by byte reads back exactly, and every
// kind of malformed file is refused with a message saying what is wrong: every truncation,
// bad magic and versions, absurd counts and lengths, unknown types, nested arrays, shapes that
// overflow, misaligned, out-of-file and overlapping tensors, duplicates, bad alignment.
#include <stdint.h>

#include "gguf/gguf.h"
#include "mx_test.h"

// ---- A little writer ----

typedef struct buf {
  uint8_t b[4096];
  size_t n;
} buf_t;

static void put(buf_t *b, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) b->b[b->n++] = (uint8_t)(v >> (8 * i));
}
static void put_str(buf_t *b, const char *s) {
  put(b, strlen(s), 8);
  memcpy(b->b + b->n, s, strlen(s));
  b->n += strlen(s);
}
static void put_f32(buf_t *b, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  put(b, u, 4);
}

// What the valid file holds; the tests change one field at a time.
typedef struct spec {
  uint32_t version;
  uint64_t n_tensors_override, n_kv_override;  // 0: the real counts
  uint32_t alignment;                          // general.alignment (0: absent)
  uint32_t t0_type, t1_type;                   // tensor types
  uint64_t t0_ne0, t1_ne0;
  uint32_t t0_rank;
  uint64_t t1_offset;  // ~0: the aligned offset after t0
  const char *t1_name;
  const char *dup_key;  // a second key of this name
  uint32_t bool_value;
  uint32_t arr_elem;  // element type of the string list (8: string)
} spec_t;

static spec_t valid(void) {
  spec_t s = {3, 0, 0, 64, 0 /*F32*/, 8 /*Q8_0*/, 4, 32, 2, ~0ull, "b", NULL, 1, 8};
  return s;
}

static size_t build(buf_t *b, const spec_t *s) {
  b->n = 0;
  memcpy(b->b, "GGUF", 4);
  b->n = 4;
  put(b, s->version, 4);
  put(b, s->n_tensors_override ? s->n_tensors_override : 2, 8);
  int n_kv = 5 + (s->alignment != 0) + (s->dup_key != NULL);
  put(b, s->n_kv_override ? s->n_kv_override : (uint64_t)n_kv, 8);
  put_str(b, "general.architecture");
  put(b, MX_GGUF_STRING, 4);
  put_str(b, "llama");
  put_str(b, "llama.block_count");
  put(b, MX_GGUF_U32, 4);
  put(b, 2, 4);
  put_str(b, "llama.attention.layer_norm_rms_epsilon");
  put(b, MX_GGUF_F32, 4);
  put_f32(b, 1e-5f);
  put_str(b, "tokenizer.ggml.add_bos_token");
  put(b, MX_GGUF_BOOL, 4);
  put(b, s->bool_value, 1);
  put_str(b, "tokenizer.ggml.tokens");
  put(b, MX_GGUF_ARRAY, 4);
  put(b, s->arr_elem, 4);
  put(b, 3, 8);
  if (s->arr_elem == MX_GGUF_STRING) {
    put_str(b, "<s>");
    put_str(b, "a");
    put_str(b, "bc");
  } else {
    put(b, 0, 8);  // a would-be nested array's header bytes
  }
  if (s->alignment) {
    put_str(b, "general.alignment");
    put(b, MX_GGUF_U32, 4);
    put(b, s->alignment, 4);
  }
  if (s->dup_key) {
    put_str(b, s->dup_key);
    put(b, MX_GGUF_I32, 4);
    put(b, (uint32_t)-7, 4);
  }
  uint32_t al = s->alignment ? s->alignment : 32;
  uint64_t t0_bytes = s->t0_ne0 * 2 * 4;  // F32 [ne0, 2]
  uint64_t t1_off = s->t1_offset != ~0ull ? s->t1_offset : (t0_bytes + al - 1) / al * al;
  put_str(b, "a");
  put(b, s->t0_rank, 4);
  for (uint32_t d = 0; d < s->t0_rank && d < 8; d++) put(b, d == 0 ? s->t0_ne0 : 2, 8);
  put(b, s->t0_type, 4);
  put(b, 0, 8);
  put_str(b, s->t1_name);
  put(b, 1, 4);
  put(b, s->t1_ne0, 8);
  put(b, s->t1_type, 4);
  put(b, t1_off, 8);
  while (b->n % al) b->b[b->n++] = 0;
  size_t data = b->n;
  for (uint64_t i = 0; i < 8; i++) put_f32(b, (float)i + 0.5f);  // t0: F32 [4, 2]
  b->n = data + (size_t)t1_off;
  put(b, 0x3c00, 2);  // t1: one Q8_0 block, scale 1.0, q = 0..31
  for (int i = 0; i < 32; i++) b->b[b->n++] = (uint8_t)i;
  return data;
}

// Parses b and expects an error whose message contains `want`.
static void expect_err(const buf_t *b, const char *want, const char *what) {
  mx_gguf_t *g = (mx_gguf_t *)1;
  mx_status_t st = mx_gguf_parse(b->b, b->n, "t.gguf", &g);
  CHECK_MSG(st != MX_OK && g == NULL, "%s: parsed", what);
  if (st != MX_OK) {
    CHECK_MSG(strstr(mx_error_message(), want) != NULL, "%s: message '%s' lacks '%s'", what,
              mx_error_message(), want);
    CHECK_MSG(strstr(mx_error_message(), "t.gguf") != NULL, "%s: '%s' does not name the file", what,
              mx_error_message());
  }
}

static void test_valid(void) {
  spec_t s = valid();
  buf_t b;
  size_t data = build(&b, &s);
  mx_gguf_t *g = NULL;
  CHECK_OK(mx_gguf_parse(b.b, b.n, "t.gguf", &g));
  if (!g) return;
  CHECK(g->version == 3 && g->alignment == 64 && g->n_kv == 6 && g->n_tensors == 2);
  uint32_t u = 0;
  double f = 0;
  bool bo = false;
  const char *p;
  size_t n;
  CHECK_OK(mx_gguf_get_u32(g, "llama.block_count", 0, &u));
  CHECK(u == 2);
  CHECK_OK(mx_gguf_get_u32(g, "absent", 9, &u));
  CHECK(u == 9);
  CHECK_OK(mx_gguf_get_f64(g, "llama.attention.layer_norm_rms_epsilon", 0, &f));
  CHECK(f == (double)1e-5f);
  CHECK_OK(mx_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", false, &bo));
  CHECK(bo);
  CHECK_OK(mx_gguf_get_str(g, "general.architecture", &p, &n));
  CHECK(n == 5 && memcmp(p, "llama", 5) == 0);
  // Wrong types are errors naming the key.
  CHECK(mx_gguf_get_u32(g, "general.architecture", 0, &u) == MX_ERR_PARSE);
  CHECK(strstr(mx_error_message(), "general.architecture") != NULL);
  CHECK(mx_gguf_get_str(g, "llama.block_count", &p, &n) == MX_ERR_PARSE);
  const mx_gguf_value_t *arr = NULL;
  CHECK_OK(mx_gguf_get_arr(g, "tokenizer.ggml.tokens", MX_GGUF_STRING, &arr));
  CHECK(arr && arr->arr.n == 3);
  if (arr) {
    size_t cur = 0;
    const char *want[] = {"<s>", "a", "bc"};
    for (int i = 0; i < 3; i++) {
      mx_gguf_arr_next_str(arr, &cur, &p, &n);
      CHECK(n == strlen(want[i]) && memcmp(p, want[i], n) == 0);
    }
  }
  CHECK(mx_gguf_get_arr(g, "tokenizer.ggml.tokens", MX_GGUF_F32, &arr) == MX_ERR_PARSE);
  const mx_gguf_tensor_t *t0 = mx_gguf_find_tensor(g, "a"), *t1 = mx_gguf_find_tensor(g, "b");
  CHECK(t0 && t1);
  if (t0 && t1) {
    CHECK(t0->n_dims == 2 && t0->ne[0] == 4 && t0->ne[1] == 2 && t0->nbytes == 32);
    CHECK(t0->data == b.b + data);
    float v;
    memcpy(&v, t0->data + 4 * 5, 4);
    CHECK(v == 5.5f);
    CHECK(t1->type == MX_GGML_Q8_0 && t1->nbytes == 34 && t1->offset == 64);
    CHECK(t1->data == b.b + data + 64 && t1->data[2 + 31] == 31);
  }
  mx_gguf_free(g);
  CHECK(strcmp(mx_ggml_type_name(MX_GGML_Q4_K), "Q4_K") == 0 && mx_ggml_type_name(99) == NULL);
}

static void test_truncations(void) {
  spec_t s = valid();
  buf_t b;
  build(&b, &s);
  size_t full = b.n;
  int refused = 0;
  for (size_t len = 0; len < full; len++) {
    mx_gguf_t *g = NULL;
    b.n = len;
    mx_status_t st = mx_gguf_parse(b.b, len, "t.gguf", &g);
    refused += st != MX_OK && g == NULL && mx_error_message()[0] != '\0';
    mx_gguf_free(g);
  }
  CHECK_MSG(refused == (int)full, "%d of %zu prefixes refused", refused, full);
}

static void test_malformed(void) {
  buf_t b;
  spec_t s = valid();
  build(&b, &s);
  b.b[0] = 'X';
  expect_err(&b, "not a GGUF file", "magic");
  s = valid();
  s.version = 1;
  build(&b, &s);
  expect_err(&b, "version 1", "version 1");
  s.version = 4;
  build(&b, &s);
  expect_err(&b, "version 4", "version 4");
  s = valid();
  s.n_tensors_override = 1ull << 40;
  build(&b, &s);
  expect_err(&b, "tensors cannot fit", "tensor count");
  s = valid();
  s.n_kv_override = UINT64_MAX;
  build(&b, &s);
  expect_err(&b, "key/values cannot fit", "kv count");
  s = valid();
  s.arr_elem = MX_GGUF_ARRAY;
  build(&b, &s);
  expect_err(&b, "arrays of arrays", "nested array");
  s.arr_elem = 77;
  build(&b, &s);
  expect_err(&b, "unknown value type 77", "array element type");
  s = valid();
  s.bool_value = 2;
  build(&b, &s);
  expect_err(&b, "not 0 or 1", "bool");
  s = valid();
  s.t1_type = 99;
  build(&b, &s);
  expect_err(&b, "unknown tensor type 99", "tensor type");
  s = valid();
  s.t1_ne0 = 33;
  build(&b, &s);
  expect_err(&b, "not a multiple of the Q8_0 block", "block");
  s = valid();
  s.t0_ne0 = 1ull << 62;
  build(&b, &s);
  expect_err(&b, "overflows", "overflow");
  s = valid();
  s.t0_ne0 = 0;
  build(&b, &s);
  expect_err(&b, "dimension 0 is 0", "zero dim");
  s = valid();
  s.t0_rank = 5;
  build(&b, &s);
  expect_err(&b, "rank 5", "rank");
  s = valid();
  s.t1_offset = 0;
  build(&b, &s);
  expect_err(&b, "overlap", "overlap");
  s = valid();
  s.t1_offset = 128;
  build(&b, &s);
  b.n -= 34;  // the file ends where t1 would start
  expect_err(&b, "past the end", "out of file");
  s = valid();
  s.t1_offset = 40;
  build(&b, &s);
  expect_err(&b, "not a multiple of the alignment 64", "unaligned");
  s = valid();
  s.alignment = 48;
  build(&b, &s);
  expect_err(&b, "power of two", "alignment");
  s = valid();
  s.dup_key = "llama.block_count";
  build(&b, &s);
  expect_err(&b, "'llama.block_count' appears twice", "duplicate key");
  s = valid();
  s.t1_name = "a";
  build(&b, &s);
  expect_err(&b, "tensor 'a' appears twice", "duplicate tensor");
  // A string length beyond the file.
  s = valid();
  build(&b, &s);
  memset(b.b + 24, 0xff, 8);  // the first key's length
  expect_err(&b, "bytes long", "string length");
}

int main(void) {
  test_valid();
  test_truncations();
  test_malformed();
  return mx_test_finish();
}
