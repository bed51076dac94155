// Checkpoint loader: real checkpoints from ../shared (stories260K single file and MLX sharded,
// every fixture) and a corpus of broken safetensors files / directories generated here, each
// checked for its error message.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlxcel/model.h"
#include "mx_test.h"

static char g_tmp[256];

// Builds a safetensors image: header length (or `hlen_override` when nonzero), header, data.
static uint8_t *make_st(const char *header, const void *data, size_t dlen, uint64_t hlen_override,
                        size_t *len) {
  size_t h = strlen(header);
  *len = 8 + h + dlen;
  uint8_t *b = malloc(*len);
  uint64_t hl = hlen_override ? hlen_override : h;
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(hl >> (8 * i));
  memcpy(b + 8, header, h);
  if (dlen) memcpy(b + 8 + h, data, dlen);
  return b;
}

static mx_status_t validate_hdr(const char *header, size_t dlen) {
  static const uint8_t zeros[256];
  size_t len = 0;
  uint8_t *b = make_st(header, zeros, dlen, 0, &len);
  mx_status_t st = mx_safetensors_validate(b, len, "t.safetensors");
  free(b);
  return st;
}

static void write_file(const char *dir, const char *name, const void *data, size_t len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  if (len) fwrite(data, 1, len, f);
  fclose(f);
}

static void write_st(const char *dir, const char *name, const char *header, const void *data,
                     size_t dlen) {
  size_t len = 0;
  uint8_t *b = make_st(header, data, dlen, 0, &len);
  write_file(dir, name, b, len);
  free(b);
}

// A fresh empty subdirectory of the temp dir.
static const char *subdir(const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", g_tmp, name);
  mkdir(path, 0755);
  return path;
}

static void test_header_errors(void) {
  static const uint8_t five[5] = {1, 2, 3, 4, 5};
  EXPECT_ERR(mx_safetensors_validate(five, 5, "t.safetensors"),
             "t.safetensors: file is 5 bytes, shorter than the 8-byte header length field");
  size_t len = 0;
  uint8_t *b = make_st("{}", NULL, 0, UINT64_MAX, &len);
  EXPECT_ERR(mx_safetensors_validate(b, len, "t.safetensors"), "exceeds the limit");
  free(b);
  b = make_st("{}", NULL, 0, 1000, &len);
  EXPECT_ERR(mx_safetensors_validate(b, len, "t.safetensors"),
             "header length 1000 is larger than the rest of the file (2 bytes)");
  free(b);
  uint8_t zero[8] = {0};
  EXPECT_ERR(mx_safetensors_validate(zero, 8, "t.safetensors"), "header length is 0");
  EXPECT_ERR(validate_hdr("{\"a\": ", 0), "t.safetensors: header is not valid JSON");
  EXPECT_ERR(validate_hdr("[1, 2]", 0), "header is not a JSON object");
  EXPECT_ERR(validate_hdr("{} x", 0), "trailing bytes after the JSON value");
  CHECK_OK(validate_hdr("{}    ", 0));
  EXPECT_ERR(validate_hdr("{\"w\xff\": 1}", 0), "header is not valid UTF-8 (byte 3 of the header)");
  EXPECT_ERR(validate_hdr("{\"\xc0\xaf\": 1}", 0), "not valid UTF-8");      // overlong '/'
  EXPECT_ERR(validate_hdr("{\"\xed\xa0\x80\": 1}", 0), "not valid UTF-8");  // surrogate
  EXPECT_ERR(validate_hdr("{\"\xe2\x82", 0), "not valid UTF-8");            // cut sequence
  CHECK_OK(
      validate_hdr("{\"caf\xc3\xa9 \xf0\x9f\x98\x80\": {\"dtype\": \"U8\", \"shape\": [1], "
                   "\"data_offsets\": [0, 1]}}",
                   1));
  CHECK_OK(validate_hdr("{\"__metadata__\": {\"format\": \"pt\"}}", 0));
  EXPECT_ERR(validate_hdr("{\"__metadata__\": {\"n\": 3}}", 0),
             "__metadata__ value 'n' is not a string");
  EXPECT_ERR(validate_hdr("{\"__metadata__\": 3}", 0), "__metadata__ is not a JSON object");
}

static void test_tensor_errors(void) {
  EXPECT_ERR(validate_hdr("{\"w\": 3}", 0), "tensor 'w': entry is not a JSON object");
  EXPECT_ERR(validate_hdr("{\"w\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4),
             "tensor 'w': missing \"dtype\"");
  EXPECT_ERR(validate_hdr("{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 4),
             "tensor 'w': missing \"shape\"");
  EXPECT_ERR(validate_hdr("{\"w\": {\"dtype\": \"F32\", \"shape\": [1]}}", 4),
             "tensor 'w': missing \"data_offsets\"");
  EXPECT_ERR(validate_hdr("{\"w\": {\"dtype\": 1, \"shape\": [1], \"data_offsets\": [0, 4]}}", 4),
             "\"dtype\" is not a string");
  EXPECT_ERR(
      validate_hdr("{\"w\": {\"dtype\": \"F4\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1),
      "t.safetensors: tensor 'w': unknown dtype 'F4'");
  EXPECT_ERR(
      validate_hdr("{\"w\": {\"dtype\": \"F32\", \"shape\": 1, \"data_offsets\": [0, 4]}}", 4),
      "\"shape\" is not a JSON array");
  EXPECT_ERR(validate_hdr(
                 "{\"w\": {\"dtype\": \"F32\", \"shape\": [2, -3], \"data_offsets\": [0, 4]}}", 4),
             "tensor 'w': shape[1] is negative (-3)");
  EXPECT_ERR(
      validate_hdr("{\"w\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}", 4),
      "shape[0] is not an integer");
  EXPECT_ERR(validate_hdr(
                 "{\"w\": {\"dtype\": \"F32\", \"shape\": [\"2\"], \"data_offsets\": [0, 4]}}", 4),
             "shape[0] is not a number");
  EXPECT_ERR(validate_hdr("{\"w\": {\"dtype\": \"U8\", \"shape\": [1,1,1,1,1,1,1,1,1], "
                          "\"data_offsets\": [0, 1]}}",
                          1),
             "rank 9 exceeds the maximum of 8");
  EXPECT_ERR(validate_hdr("{\"w\": {\"dtype\": \"F64\", \"shape\": [4294967296, 4294967296], "
                          "\"data_offsets\": [0, 8]}}",
                          8),
             "overflows");
  EXPECT_ERR(
      validate_hdr("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}", 4),
      "\"data_offsets\" is not an array of 2 integers");
  EXPECT_ERR(
      validate_hdr("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4, 0]}}", 4),
      "data_offsets[0] is negative");
  EXPECT_ERR(
      validate_hdr("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]}}", 8),
      "data_offsets begin (8) is after end (4)");
  EXPECT_ERR(validate_hdr(
                 "{\"w\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 20]}}", 24),
             "tensor 'w': shape [2, 3] x F32 needs 24 bytes but data_offsets [0, 20] span 20");
  EXPECT_ERR(
      validate_hdr("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", 8),
      "tensor 'w': data_offsets [4, 12] extend beyond the data section (8 bytes)");
  EXPECT_ERR(
      validate_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                   " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
                   12),
      "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]");
  EXPECT_ERR(validate_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                          " \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                          8),
             "tensor 'a': appears twice in the header");
  // Valid: every dtype, a zero-size tensor, holes between spans, out-of-order offsets.
  CHECK_OK(
      validate_hdr("{\"b\": {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [8, 12]},"
                   " \"a\": {\"dtype\": \"F8_E4M3\", \"shape\": [3], \"data_offsets\": [0, 3]},"
                   " \"e\": {\"dtype\": \"F32\", \"shape\": [0, 5], \"data_offsets\": [4, 4]},"
                   " \"s\": {\"dtype\": \"BOOL\", \"shape\": [], \"data_offsets\": [12, 13]}}",
                   16));
}

static void test_dtypes(void) {
  static const struct {
    const char *name;
    int size;
    mx_elem_type_t et;
  } t[] = {{"F64", 8, MX_ELEM_F64},       {"F32", 4, MX_ELEM_F32},
           {"F16", 2, MX_ELEM_F16},       {"BF16", 2, MX_ELEM_BF16},
           {"I64", 8, MX_ELEM_I64},       {"I32", 4, MX_ELEM_I32},
           {"I16", 2, MX_ELEM_I16},       {"I8", 1, MX_ELEM_I8},
           {"U64", 8, MX_ELEM_UI64},      {"U32", 4, MX_ELEM_UI32},
           {"U16", 2, MX_ELEM_UI16},      {"U8", 1, MX_ELEM_UI8},
           {"BOOL", 1, MX_ELEM_I1},       {"F8_E4M3", 1, MX_ELEM_F8E4M3FN},
           {"F8_E5M2", 1, MX_ELEM_F8E5M2}};
  const char *dir = subdir("dtypes");
  static const uint8_t data[64];
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char h[160];
    snprintf(h, sizeof h, "{\"x\": {\"dtype\": \"%s\", \"shape\": [3], \"data_offsets\": [0, %d]}}",
             t[i].name, 3 * t[i].size);
    CHECK_OK(validate_hdr(h, (size_t)(3 * t[i].size)));
    write_st(dir, "model.safetensors", h, data, (size_t)(3 * t[i].size));
    mx_checkpoint_t *ck = NULL;
    CHECK_OK(mx_checkpoint_open(dir, &ck));
    const mx_weight_t *w = mx_checkpoint_find(ck, "x");
    CHECK_MSG(w && w->dtype == t[i].et && w->nbytes == (size_t)(3 * t[i].size), "%s", t[i].name);
    mx_checkpoint_close(ck);
  }
}

// Tensor data at offsets no multiple of the element size (mlx's writer does not pad the header
// to 8 bytes): every tensor is found aligned to its element, with its bytes and its file name;
// an aligned tensor stays inside the mapping.
static void test_misaligned(void) {
  const char *dir = subdir("misaligned");
  // "a" (U8, 3 bytes) first, then "b" (F32, 4) and "c" (F16, 2): with the data section at an even
  // offset (a space after the brace makes the header's length even), b and c start at odd bytes
  // of the file (and of its page-aligned mapping).
  static const char kBody[] =
      "\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[3,19]},"
      "\"c\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[19,23]}}";
  char h[256];
  snprintf(h, sizeof h, "{%s%s", (1 + strlen(kBody)) % 2 ? " " : "", kBody);
  size_t hl = strlen(h);
  CHECK_MSG(hl % 2 == 0, "header length %zu should leave the data at an even offset", hl);
  uint8_t data[23];
  data[0] = 1, data[1] = 2, data[2] = 3;
  float b[4] = {1.5f, -2.0f, 3.25f, 1e-3f};
  memcpy(data + 3, b, sizeof b);
  uint16_t c[2] = {0x3C00, 0xC000};  // f16 1.0, -2.0
  memcpy(data + 19, c, sizeof c);
  write_st(dir, "model.safetensors", h, data, sizeof data);
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_open(dir, &ck));
  const mx_weight_t *wa = mx_checkpoint_find(ck, "a"), *wb = mx_checkpoint_find(ck, "b"),
                    *wc = mx_checkpoint_find(ck, "c");
  CHECK(wa && wb && wc);
  if (wa && wb && wc) {
    CHECK_MSG((uintptr_t)wb->data % 4 == 0 && (uintptr_t)wc->data % 2 == 0,
              "misaligned views: b at %p, c at %p", wb->data, wc->data);
    CHECK(memcmp(wa->data, data, 3) == 0 && memcmp(wb->data, b, sizeof b) == 0 &&
          memcmp(wc->data, c, sizeof c) == 0);
    CHECK_MSG(strstr(wb->file, "model.safetensors") != NULL, "file '%s'", wb->file);
  }
  mx_checkpoint_close(ck);
}

// Directory-level errors: the file name appears in the message.
static void test_dir_errors(void) {
  mx_checkpoint_t *ck = NULL;
  const char *d = subdir("empty");
  EXPECT_ERR(mx_checkpoint_open(d, &ck), "no model.safetensors or model.safetensors.index.json");
  CHECK(ck == NULL);

  d = subdir("truncated");
  write_file(d, "model.safetensors", "\x10\x00\x00", 3);
  EXPECT_ERR(mx_checkpoint_open(d, &ck),
             "truncated/model.safetensors: file is 3 bytes, shorter than the 8-byte");
  write_file(d, "model.safetensors", "", 0);
  EXPECT_ERR(mx_checkpoint_open(d, &ck), "file is 0 bytes");

  d = subdir("beyond");
  static const float vals[4] = {1, 2, 3, 4};
  write_st(d, "model.safetensors",
           "{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", vals, 12);
  EXPECT_ERR(mx_checkpoint_open(d, &ck),
             "beyond/model.safetensors: tensor 'w': data_offsets [0, 16] extend beyond");

  // Sharded: a good two-shard checkpoint, then each way its index can be wrong.
  d = subdir("sharded");
  write_st(d, "a.safetensors",
           "{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", vals, 8);
  write_st(d, "b.safetensors",
           "{\"y\": {\"dtype\": \"F32\", \"shape\": [2, 1], \"data_offsets\": [0, 8]}}", vals + 2,
           8);
  const char *idx =
      "{\"metadata\": {}, \"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"b.safetensors\"}}";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  CHECK_OK(mx_checkpoint_open(d, &ck));
  CHECK(mx_checkpoint_count(ck) == 2);
  const mx_weight_t *y = mx_checkpoint_find(ck, "y");
  CHECK(y && y->rank == 2 && y->dims[0] == 2 && ((const float *)y->data)[1] == 4.0f);
  CHECK(y && strstr(y->file, "b.safetensors"));
  CHECK(mx_checkpoint_find(ck, "z") == NULL);
  mx_checkpoint_close(ck);

  idx = "{\"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"model-00002-of-00002.safetensors\"}}";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  EXPECT_ERR(mx_checkpoint_open(d, &ck),
             "model.safetensors.index.json: shard model-00002-of-00002.safetensors does not exist");
  idx = "{\"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"a.safetensors\"}}";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  EXPECT_ERR(mx_checkpoint_open(d, &ck),
             "tensor 'y' is listed in shard a.safetensors but missing there");
  idx = "{\"weight_map\": {\"x\": \"a.safetensors\", \"q\": \"b.safetensors\"}}";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  EXPECT_ERR(mx_checkpoint_open(d, &ck),
             "tensor 'q' is listed in shard b.safetensors but missing there");
  idx = "{\"weight_map\": {\"x\": \"b.safetensors\", \"y\": \"a.safetensors\"}}";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  EXPECT_ERR(mx_checkpoint_open(d, &ck), "tensor 'x' is listed in shard b.safetensors but is in");
  idx = "{\"weight_map\": {\"x\": \"../a.safetensors\"}}";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  EXPECT_ERR(mx_checkpoint_open(d, &ck),
             "names shard '../a.safetensors', which is not a plain file name");
  idx = "{\"weight_map\": [1]}";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  EXPECT_ERR(mx_checkpoint_open(d, &ck), "\"weight_map\" is not a JSON object");
  idx = "{\"metadata\": {}}";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  EXPECT_ERR(mx_checkpoint_open(d, &ck), "missing \"weight_map\"");
  idx = "{\"weight_map\": {\"x\": ";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  EXPECT_ERR(mx_checkpoint_open(d, &ck), "model.safetensors.index.json: not valid JSON");
  idx = "{\"weight_map\": {}}";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  EXPECT_ERR(mx_checkpoint_open(d, &ck), "weight_map is empty");
  // The same tensor in two shards.
  write_st(d, "b.safetensors",
           "{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", vals, 8);
  idx = "{\"weight_map\": {\"x\": \"a.safetensors\", \"z\": \"b.safetensors\"}}";
  write_file(d, "model.safetensors.index.json", idx, strlen(idx));
  EXPECT_ERR(mx_checkpoint_open(d, &ck), "b.safetensors: tensor 'x' is also in");
  // A broken shard names the shard file.
  write_file(d, "b.safetensors", "\x01\x00", 2);
  EXPECT_ERR(mx_checkpoint_open(d, &ck), "b.safetensors: file is 2 bytes");
  CHECK(ck == NULL);
}

// ---- Real checkpoints from ../shared ----

static void test_stories_hf(const char *shared) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/models/stories260K/hf", shared);
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_open(dir, &ck));
  if (!ck) return;
  CHECK(mx_checkpoint_count(ck) == 47);
  const mx_weight_t *e = mx_checkpoint_find(ck, "model.embed_tokens.weight");
  CHECK(e && e->dtype == MX_ELEM_F32 && e->rank == 2 && e->dims[0] == 512 && e->dims[1] == 64);
  CHECK(e && e->nbytes == 512 * 64 * 4 && strstr(e->file, "hf/model.safetensors"));
  if (e) {
    float v[2];
    memcpy(v, e->data, sizeof v);  // data need not be 4-byte aligned in general
    CHECK_NEAR(v[0], -0.29474878311157227, 0);
    CHECK_NEAR(v[1], 0.5618956089019775, 0);
  }
  int f32 = 0;
  for (int32_t i = 0; i < mx_checkpoint_count(ck); i++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, i);
    f32 += w->dtype == MX_ELEM_F32;
    CHECK(mx_checkpoint_find(ck, w->name) == w);
  }
  CHECK(f32 == 47);
  CHECK(mx_checkpoint_weight(ck, 47) == NULL && mx_checkpoint_weight(ck, -1) == NULL);
  CHECK(mx_checkpoint_find(ck, "model.layers.5.mlp.up_proj.weight") == NULL);
  const mx_weight_t *q = mx_checkpoint_find(ck, "model.layers.4.self_attn.k_proj.weight");
  CHECK(q && q->dims[0] == 32 && q->dims[1] == 64);
  mx_checkpoint_close(ck);
  mx_checkpoint_close(NULL);
}

static void test_stories_mlx(const char *shared) {
  static const char *const variants[] = {"mlx-q4", "mlx-q8"};
  for (int v = 0; v < 2; v++) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/models/stories260K/%s", shared, variants[v]);
    mx_checkpoint_t *ck = NULL;
    CHECK_OK(mx_checkpoint_open(dir, &ck));
    if (!ck) continue;
    CHECK(mx_checkpoint_count(ck) == 109);
    const mx_weight_t *w = mx_checkpoint_find(ck, "model.embed_tokens.weight");
    CHECK(w && w->dtype == MX_ELEM_UI32 && w->dims[0] == 512 && w->dims[1] == (v ? 16 : 8));
    const mx_weight_t *s = mx_checkpoint_find(ck, "model.embed_tokens.scales");
    CHECK(s && s->dtype == MX_ELEM_F16 && s->dims[1] == 2);
    const mx_weight_t *n = mx_checkpoint_find(ck, "model.norm.weight");
    CHECK(n && n->dtype == MX_ELEM_F16 && n->rank == 1 && n->dims[0] == 64);
    mx_checkpoint_close(ck);
  }
}

static void test_fixtures(const char *shared) {
  static const struct {
    const char *arch;
    int count;
  } fx[] = {{"llama", 30}, {"mistral", 30}, {"qwen2", 26},  {"qwen3", 35},
            {"gemma", 20}, {"gemma2", 46},  {"gemma3", 80}, {"phi3", 21}};
  for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/fixtures/%s", shared, fx[i].arch);
    mx_checkpoint_t *ck = NULL;
    CHECK_OK(mx_checkpoint_open(dir, &ck));
    CHECK_MSG(mx_checkpoint_count(ck) == fx[i].count, "%s: %d tensors", fx[i].arch,
              mx_checkpoint_count(ck));
    const mx_weight_t *e = mx_checkpoint_find(ck, "model.embed_tokens.weight");
    CHECK_MSG(e && e->dtype == MX_ELEM_F32 && e->dims[1] == 64, "%s", fx[i].arch);
    mx_checkpoint_close(ck);
  }
}

int main(void) {
  snprintf(g_tmp, sizeof g_tmp, "%s/mx_loader_XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_tmp)) {
    perror("mkdtemp");
    return 1;
  }
  test_header_errors();
  test_tensor_errors();
  test_dtypes();
  test_misaligned();
  test_dir_errors();
  const char *shared = getenv("MX_SHARED");
  char probe[512];
  snprintf(probe, sizeof probe, "%s/models/stories260K/hf/config.json", shared ? shared : "");
  if (shared && access(probe, R_OK) == 0) {
    test_stories_hf(shared);
    test_stories_mlx(shared);
    test_fixtures(shared);
  } else {
    mx_test_skip("MX_SHARED not set or without models/stories260K: shared checkpoints not tested");
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
  return mx_test_finish();
}
