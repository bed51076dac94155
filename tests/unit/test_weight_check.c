// The load-time non-finite weight check (src/model/weight_check.c) on every floating dtype: a
// NaN or infinity anywhere in a tensor (first element, inside a word, the partial last word, a
// later block) is found at its exact element, the largest finite values are not mistaken for
// it, and integer tensors are never flagged. The scan gives back the mapped pages it read, in
// slices, and still finds a value in a later slice at its element. (mx_model_load's refusal:
// ctest bad_checkpoints.)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/checkpoint_internal.h"
#include "mx_test.h"
#include "mx_test_rss.h"

static char g_dir[256];

typedef struct dtype_case {
  const char *name;       // safetensors dtype
  int size;               // bytes per element
  uint64_t finite;        // the largest finite value's bits (fills the tensor)
  uint64_t bad;           // a non-finite value's bits
  const char *bad_label;  // as the message spells it
} dtype_case_t;

static const dtype_case_t kCases[] = {
    {"F64", 8, 0x7FEFFFFFFFFFFFFFULL, 0x7FF8000000000000ULL, "NaN"},
    {"F64", 8, 0xFFEFFFFFFFFFFFFFULL, 0xFFF0000000000000ULL, "-Inf"},
    {"F32", 4, 0x7F7FFFFF, 0x7F800000, "+Inf"},
    {"F32", 4, 0xFF7FFFFF, 0xFFC00001, "NaN"},
    {"F16", 2, 0x7BFF, 0x7C00, "+Inf"},
    {"F16", 2, 0xFBFF, 0x7E00, "NaN"},
    {"BF16", 2, 0x7F7F, 0xFF80, "-Inf"},
    {"BF16", 2, 0xFF7F, 0x7FC1, "NaN"},
    {"F8_E5M2", 1, 0x7B, 0x7C, "+Inf"},
    {"F8_E5M2", 1, 0xFB, 0xFE, "NaN"},
    {"F8_E4M3", 1, 0x7E, 0x7F, "NaN"},  // e4m3fn: 0x7E is 448, only S.1111.111 is NaN
    {"F8_E4M3", 1, 0xFE, 0xFF, "NaN"},
};

// Writes DIR/model.safetensors with one tensor "w" of n elements of `fill`, element `at` (if
// >= 0) set to `bad`.
static bool write_ckpt(const char *dtype, int size, int64_t n, uint64_t fill, int64_t at,
                       uint64_t bad) {
  char header[256], path[512];
  int hl = snprintf(header, sizeof header,
                    "{\"w\":{\"dtype\":\"%s\",\"shape\":[%lld],\"data_offsets\":[0,%lld]}}", dtype,
                    (long long)n, (long long)(n * size));
  snprintf(path, sizeof path, "%s/model.safetensors", g_dir);
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)hl >> (8 * i));
  fwrite(len, 1, 8, f);
  fwrite(header, 1, (size_t)hl, f);
  for (int64_t i = 0; i < n; i++) {
    uint64_t v = i == at ? bad : fill;
    fwrite(&v, 1, (size_t)size, f);  // little-endian host
  }
  return fclose(f) == 0;
}

static mx_status_t check(void) {
  mx_checkpoint_t *ck = NULL;
  mx_status_t st = mx_checkpoint_open(g_dir, &ck);
  if (st == MX_OK) st = mx_ckpt_check_finite(ck, NULL);
  mx_checkpoint_close(ck);
  return st;
}

// A tensor of 48 MiB (three slices of the scan): after the check its pages are not resident
// (the scan would otherwise leave the whole checkpoint in RSS beside what is made of it later),
// its values read back, and a value in the third slice is found at its element.
static void test_released(void) {
  enum { N = 12 << 20 };
  CHECK(write_ckpt("F32", 4, N, 0x3F800000, -1, 0));  // 1.0f
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_open(g_dir, &ck));
  const mx_weight_t *w = mx_checkpoint_find(ck, "w");
  CHECK(w != NULL);
  if (w) {
    size_t before = mx_test_rss_bytes();
    CHECK_OK(mx_ckpt_check_finite(ck, NULL));
    size_t after = mx_test_rss_bytes();
    CHECK_MSG(before == 0 || after < before + w->nbytes / 8,
              "RSS %zu -> %zu bytes after checking a tensor of %zu", before, after, w->nbytes);
    const float *v = w->data;
    CHECK(v[0] == 1.0f && v[N / 2] == 1.0f && v[N - 1] == 1.0f);
  }
  mx_checkpoint_close(ck);
  int64_t at = (int64_t)N - 1000;
  CHECK(write_ckpt("F32", 4, N, 0x3F800000, at, 0x7F800000));
  char expect[1024];
  snprintf(expect, sizeof expect,
           "%s/model.safetensors: tensor 'w' has a non-finite value (+Inf at element %lld)", g_dir,
           (long long)at);
  mx_error_clear();
  mx_status_t st = check();
  CHECK_MSG(st == MX_ERR_PARSE && strcmp(mx_error_message(), expect) == 0, "got \"%s\"",
            mx_error_message());
}

static void test_dtypes(void) {
  static const int64_t kAt[] = {0, 5, 36, 20000};  // first; inside a word; the tail; block 2+
  char expect[1024];
  for (size_t c = 0; c < sizeof kCases / sizeof kCases[0]; c++) {
    const dtype_case_t *d = &kCases[c];
    CHECK(write_ckpt(d->name, d->size, 37, d->finite, -1, 0));
    mx_status_t st = check();
    CHECK_MSG(st == MX_OK, "%s filled with %llx: %s", d->name, (unsigned long long)d->finite,
              mx_error_message());
    for (size_t k = 0; k < sizeof kAt / sizeof kAt[0]; k++) {
      int64_t n = kAt[k] < 37 ? 37 : 20001;
      CHECK(write_ckpt(d->name, d->size, n, d->finite, kAt[k], d->bad));
      snprintf(expect, sizeof expect,
               "%s/model.safetensors: tensor 'w' has a non-finite value (%s at element %lld)",
               g_dir, d->bad_label, (long long)kAt[k]);
      mx_error_clear();
      st = check();
      CHECK_MSG(st == MX_ERR_PARSE && strcmp(mx_error_message(), expect) == 0,
                "%s %llx at %lld: got \"%s\", expected \"%s\"", d->name, (unsigned long long)d->bad,
                (long long)kAt[k], mx_error_message(), expect);
    }
  }
  // Integer tensors holding exponent-like bit patterns are not floating-point data.
  CHECK(write_ckpt("I32", 4, 37, 0x7F800000, 3, 0x7FC00000));
  CHECK_OK(check());
  CHECK(write_ckpt("U8", 1, 37, 0xFF, -1, 0));
  CHECK_OK(check());
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/mx_weight_check_%d", (int)getpid());
  if (mkdir(g_dir, 0700) != 0) return 1;
  test_dtypes();
  test_released();
  char path[512];
  snprintf(path, sizeof path, "%s/model.safetensors", g_dir);
  unlink(path);
  rmdir(g_dir);
  return mx_test_finish();
}
