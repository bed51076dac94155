// safetensors writer: the written file validates, reloads bit-exactly through the checkpoint
// loader, is laid out as the format says (8-aligned header, sorted, contiguous), and misuse is
// reported.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlxcel/model.h"
#include "mlxcel/writer.h"
#include "mx_test.h"

static char g_dir[256];

static void make_dir(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/mx_test_writer_XXXXXX");
  CHECK(mkdtemp(g_dir) != NULL);
}

static void test_roundtrip(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/model.safetensors", g_dir);
  float a[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f};
  uint16_t b[5] = {0x3f80, 0xbf80, 0x7f7f, 0x0001, 0x8000};
  int32_t c[3] = {7, -8, 9};
  mx_st_desc_t d[4] = {
      {.name = "z.weight", .dtype = MX_ELEM_F32, .rank = 2, .dims = {2, 3}},
      {.name = "a.bias", .dtype = MX_ELEM_BF16, .rank = 1, .dims = {5}},
      {.name = "m.ids", .dtype = MX_ELEM_I32, .rank = 1, .dims = {3}},
      {.name = "empty", .dtype = MX_ELEM_F32, .rank = 2, .dims = {0, 4}},
  };
  const void *data[4] = {a, b, c, NULL};
  CHECK_OK(mx_st_write_file(path, d, data, 4));

  char *img = NULL;
  size_t len = 0;
  CHECK_OK(mx_read_file(path, &img, &len));
  uint64_t hlen = 0;
  for (int k = 0; k < 8; k++) hlen |= (uint64_t)(uint8_t)img[k] << (8 * k);
  CHECK(hlen % 8 == 0);
  CHECK(len == 8 + hlen + sizeof a + sizeof b + sizeof c);
  CHECK(img[8 + hlen - 1] == ' ' || img[8 + hlen - 1] == '}');
  // Sorted by name: a.bias, empty, m.ids, z.weight.
  const char *h = img + 8;
  const char *pa = strstr(h, "\"a.bias\""), *pe = strstr(h, "\"empty\"");
  const char *pm = strstr(h, "\"m.ids\""), *pz = strstr(h, "\"z.weight\"");
  CHECK(pa && pe && pm && pz && pa < pe && pe < pm && pm < pz);
  CHECK(memcmp(img + 8 + hlen, b, sizeof b) == 0);
  CHECK_OK(mx_safetensors_validate(img, len, "model.safetensors"));
  free(img);

  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_open(g_dir, &ck));
  if (ck) {
    CHECK(mx_checkpoint_count(ck) == 4);
    const mx_weight_t *w = mx_checkpoint_find(ck, "z.weight");
    CHECK(w && w->dtype == MX_ELEM_F32 && w->rank == 2 && w->dims[0] == 2 && w->dims[1] == 3);
    CHECK(w && w->nbytes == sizeof a && memcmp(w->data, a, sizeof a) == 0);
    w = mx_checkpoint_find(ck, "a.bias");
    CHECK(w && w->dtype == MX_ELEM_BF16 && memcmp(w->data, b, sizeof b) == 0);
    w = mx_checkpoint_find(ck, "m.ids");
    CHECK(w && w->dtype == MX_ELEM_I32 && memcmp(w->data, c, sizeof c) == 0);
    w = mx_checkpoint_find(ck, "empty");
    CHECK(w && w->nbytes == 0);
  }
  mx_checkpoint_close(ck);
  remove(path);
}

// Streaming: appends in odd chunk sizes spanning tensor boundaries, with metadata.
static void test_streaming(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/model.safetensors", g_dir);
  enum { N0 = 1000, N1 = 333 };
  mx_st_desc_t d[2] = {
      {.name = "b", .dtype = MX_ELEM_F32, .rank = 1, .dims = {N1}},
      {.name = "a", .dtype = MX_ELEM_F32, .rank = 2, .dims = {10, N0 / 10}},
  };
  const char *meta[2] = {"format", "pt"};
  mx_st_writer_t *w = NULL;
  CHECK_OK(mx_st_writer_open(path, d, 2, meta, 1, &w));
  if (!w) return;
  CHECK(mx_st_writer_count(w) == 2);
  CHECK(strcmp(mx_st_writer_desc(w, 0)->name, "a") == 0);
  CHECK(mx_st_desc_bytes(mx_st_writer_desc(w, 0)) == N0 * 4);
  float *all = malloc((N0 + N1) * sizeof(float));
  for (int i = 0; i < N0 + N1; i++) all[i] = (float)i * 0.5f - 7.0f;
  size_t total = (N0 + N1) * sizeof(float), off = 0, step = 37;
  while (off < total) {
    size_t k = total - off < step ? total - off : step;
    CHECK_OK(mx_st_writer_append(w, (const char *)all + off, k));
    off += k;
    step = step * 3 % 1001 + 1;
  }
  CHECK(mx_st_writer_current(w) == 2);
  CHECK(mx_st_writer_append(w, all, 4) == MX_ERR_INVALID_ARG);
  CHECK_OK(mx_st_writer_close(w));
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_open(g_dir, &ck));
  if (ck) {
    const mx_weight_t *a = mx_checkpoint_find(ck, "a"), *b = mx_checkpoint_find(ck, "b");
    CHECK(a && memcmp(a->data, all, N0 * 4) == 0);
    CHECK(b && memcmp(b->data, all + N0, N1 * 4) == 0);
    // Contiguous and 4-aligned inside the mmap.
    CHECK(a && b && (const char *)a->data + a->nbytes == (const char *)b->data);
    CHECK(a && ((uintptr_t)a->data % 8) == 0);
  }
  mx_checkpoint_close(ck);
  free(all);
  remove(path);
}

static void test_errors(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/model.safetensors", g_dir);
  mx_st_writer_t *w = NULL;
  mx_st_desc_t dup[2] = {{.name = "x", .dtype = MX_ELEM_F32, .rank = 1, .dims = {1}},
                         {.name = "x", .dtype = MX_ELEM_F32, .rank = 1, .dims = {2}}};
  CHECK(mx_st_writer_open(path, dup, 2, NULL, 0, &w) == MX_ERR_INVALID_ARG);
  CHECK(strstr(mx_error_message(), "duplicate") != NULL);
  mx_st_desc_t bad = {.name = "x", .dtype = MX_ELEM_F8E4M3FN, .rank = 1, .dims = {1}};
  CHECK(mx_st_writer_open(path, &bad, 1, NULL, 0, &w) == MX_ERR_INVALID_ARG);
  mx_st_desc_t noname = {.name = "", .dtype = MX_ELEM_F32, .rank = 1, .dims = {1}};
  CHECK(mx_st_writer_open(path, &noname, 1, NULL, 0, &w) == MX_ERR_INVALID_ARG);
  CHECK(mx_st_writer_open("/nonexistent-dir/x.safetensors", dup, 1, NULL, 0, &w) == MX_ERR_IO);
  // Incomplete: close fails and removes the file.
  CHECK_OK(mx_st_writer_open(path, dup, 1, NULL, 0, &w));
  if (w) {
    CHECK(mx_st_writer_close(w) == MX_ERR_INVALID_ARG);
    CHECK(strstr(mx_error_message(), "incomplete") != NULL);
    CHECK(access(path, F_OK) != 0);
  }
  // Abort removes the file too.
  CHECK_OK(mx_st_writer_open(path, dup, 1, NULL, 0, &w));
  mx_st_writer_abort(w);
  CHECK(access(path, F_OK) != 0);
  mx_st_writer_abort(NULL);
}

int main(void) {
  make_dir();
  test_roundtrip();
  test_streaming();
  test_errors();
  rmdir(g_dir);
  return mx_test_finish();
}
