// The decode streams' memory (cpu/stream_alloc.h): large buffers start on a 2 MiB boundary, span
// whole 2 MiB pages and carry the huge-page advice (the "hg" flag of their mapping in
// /proc/self/smaps, where the kernel has transparent huge pages); small ones stay 64-byte
// aligned; the packed f32, bf16 and quantized weights of a decode GEMV are such buffers. A weight
// cache carves its float packings from one slab: 64-byte aligned, on advised chunks, and resident
// about their own bytes (not a whole number of 2 MiB pages each).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu/kernels_q.h"
#include "cpu/plan_internal.h"
#include "cpu/stream_alloc.h"
#include "mlxcel/cpu.h"
#include "mlxcel/cpu_lowp.h"
#include "mx_test.h"
#include "mx_test_rss.h"

// 1: the mapping holding p is advised MADV_HUGEPAGE, 0: it is not, -1: no smaps to tell.
static int advised_huge(const void *p) {
#if defined(__linux__)
  struct stat sb;
  if (stat("/sys/kernel/mm/transparent_hugepage", &sb) != 0) return -1;  // no THP: no advice
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  bool inside = false;
  int found = 0;
  uintptr_t a = (uintptr_t)p;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      inside = a >= lo && a < hi;
    } else if (inside && !strncmp(line, "VmFlags:", 8)) {
      found = strstr(line, " hg") != NULL;
      break;
    }
  }
  fclose(f);
  return found;
#else
  (void)p;
  return -1;
#endif
}

static void test_alloc(void) {
  size_t big = ((size_t)3 << 20) + 100;
  uint8_t *p = mx_cpu_stream_alloc(big);
  CHECK(p != NULL);
  if (!p) return;
  CHECK((uintptr_t)p % MX_CPU_HUGE_PAGE == 0);
  memset(p, 1, 2 * (size_t)MX_CPU_HUGE_PAGE);  // the size rounded up to whole pages is usable
  int h = advised_huge(p);
  if (h >= 0) CHECK(h == 1);
  free(p);

  uint8_t *s = mx_cpu_stream_alloc(1000);
  CHECK(s != NULL && (uintptr_t)s % 64 == 0);
  if (s) memset(s, 2, 1024);
  free(s);
  uint8_t *z = mx_cpu_stream_alloc(0);
  CHECK(z != NULL);
  free(z);
}

// A decode-sized weight packed for the f32 and the bf16 GEMVs lands on advised 2 MiB pages.
static void test_packed(void) {
  int64_t n = 1024, k = 1024;
  float *w = calloc((size_t)(n * k), sizeof *w);
  uint16_t *wb = calloc((size_t)(n * k), sizeof *wb);
  CHECK(w && wb);
  if (!w || !wb) goto done;
  mx_cpu_packed_t *pf = NULL;
  CHECK_OK(mx_cpu_pack_f32(mx_cpu_kernels_best(), NULL, w, k, n, k, &pf));
  if (pf) {
    CHECK((uintptr_t)pf->data % MX_CPU_HUGE_PAGE == 0);
    int h = advised_huge(pf->data);
    if (h >= 0) CHECK(h == 1);
  }
  mx_cpu_packed_destroy(pf);
  mx_cpu_packed_lowp_t *pl = NULL;
  CHECK_OK(mx_cpu_pack_lowp(mx_cpu_lowp_best(MX_ELEM_BF16), NULL, wb, k, n, k, &pl));
  if (pl) {
    CHECK((uintptr_t)pl->data % MX_CPU_HUGE_PAGE == 0);
    int h = advised_huge(pl->data);
    if (h >= 0) CHECK(h == 1);
  }
  mx_cpu_packed_lowp_destroy(pl);
  // And an int8 weight packed for the quantized GEMV (its codes and scales in one buffer).
  const mx_cpu_kernels_t *kt = mx_cpu_kernels_best();
  int8_t *q8 = calloc((size_t)(n * k), 1);
  float *sc = calloc((size_t)(n * k / 64), sizeof *sc);
  CHECK(q8 && sc);
  if (q8 && sc) {
    for (int64_t i = 0; i < n * k / 64; i++) sc[i] = 1.0f;
    mx_cpu_qsrc_t src = {.mode = MX_CPU_Q_INT8,
                         .bits = 8,
                         .n = n,
                         .k = k,
                         .group = 64,
                         .w = q8,
                         .sdt = MX_ELEM_F32,
                         .scales = sc};
    mx_cpu_qpacked_t *pq = NULL;
    CHECK_OK(mx_cpu_qpack(kt, mx_cpu_qkernels_for(kt, 8, MX_CPU_QKERNEL_AUTO), NULL, &src, &pq));
    if (pq) {
      CHECK((uintptr_t)pq->q % MX_CPU_HUGE_PAGE == 0);
      int h = advised_huge(pq->q);
      if (h >= 0) CHECK(h == 1);
    }
    mx_cpu_qpacked_destroy(pq);
  }
  free(q8);
  free(sc);
done:
  free(w);
  free(wb);
}

static void test_slab(void) {
  mx_cpu_slab_t *s = mx_cpu_slab_create();
  CHECK(s != NULL);
  if (!s) return;
  uint8_t *a = mx_cpu_slab_alloc(s, 100), *b = mx_cpu_slab_alloc(s, 3 << 20);
  uint8_t *c = mx_cpu_slab_alloc(s, (size_t)MX_CPU_SLAB_CHUNK + 5);  // a chunk of its own
  uint8_t *d = mx_cpu_slab_alloc(s, 0);
  CHECK(a && b && c && d);
  if (a && b && c && d) {
    CHECK((uintptr_t)a % MX_CPU_HUGE_PAGE == 0 && (uintptr_t)c % MX_CPU_HUGE_PAGE == 0);
    CHECK((uintptr_t)b % 64 == 0 && b >= a + 128 && (uintptr_t)d % 64 == 0);
    CHECK(d >= b + (3 << 20) && d < a + MX_CPU_SLAB_CHUNK);  // first fit: back in a's chunk
    memset(a, 1, 100);
    memset(b, 2, 3 << 20);
    memset(c + MX_CPU_SLAB_CHUNK, 3, 5);
    CHECK(a[99] == 1 && b[0] == 2);
    int h = advised_huge(b);
    if (h >= 0) CHECK(h == 1);
    CHECK(mx_cpu_slab_bytes(s) == 128 + (3 << 20) + (size_t)MX_CPU_SLAB_CHUNK + 64 + 64);
  }
  mx_cpu_slab_destroy(s);
  mx_cpu_slab_destroy(NULL);
  CHECK(mx_cpu_slab_alloc(NULL, 64) == NULL);
}

// A weight cache packing 48 bf16 weights of 1.1 MiB: resident about their bytes. Each on whole
// 2 MiB pages of its own (faulted in whole where the kernel has transparent huge pages), they
// held 96 MiB.
static void test_cache_resident(void) {
  enum { NW = 48, N = 560, K = 1024 };
  uint16_t *src[NW];
  int ok = 1;
  for (int i = 0; i < NW; i++) {
    src[i] = malloc(sizeof(uint16_t) * N * K);
    ok &= src[i] != NULL;
    if (src[i]) memset(src[i], 0x3f, sizeof(uint16_t) * N * K);
  }
  mx_cpu_weights_t *w = NULL;
  CHECK(ok && mx_cpu_weights_create(NULL, &w) == MX_OK);
  if (ok && w) {
    size_t before = mx_test_rss_bytes();
    for (int i = 0; i < NW; i++) {
      const mx_cpu_packed_lowp_t *pk = NULL;
      CHECK_OK(mx_cpu_packed_lowp_get(w, NULL, MX_ELEM_BF16, src[i], N, K, false, &pk));
      CHECK(pk && pk->data && (uintptr_t)pk->data % 64 == 0);
      if (pk && pk->data) CHECK(pk->data[2] == 0x3f3f);  // row 1, k 0
    }
    size_t after = mx_test_rss_bytes(), packed = mx_cpu_weights_bytes(w);
    CHECK(packed >= (size_t)NW * N * K * 2);
    CHECK_MSG(before == 0 || after - before < packed + packed / 8 + ((size_t)4 << 20),
              "RSS +%zu bytes for %zu packed bytes", after - before, packed);
    // The same for int8 weights of 1.1 MB (codes and scales in one buffer each).
    float *sc = malloc(sizeof(float) * 2 * N * (K / 64));
    CHECK(sc != NULL);
    before = mx_test_rss_bytes();
    for (int i = 0; sc && i < NW; i++) {
      for (int j = 0; j < 2 * N * (K / 64); j++) sc[j] = 1.0f;
      mx_cpu_qsrc_t q = {.mode = MX_CPU_Q_INT8,
                         .bits = 8,
                         .n = 2 * N,
                         .k = K,
                         .group = 64,
                         .w = src[i],  // 2 N K bytes of codes
                         .sdt = MX_ELEM_F32,
                         .scales = sc};
      const mx_cpu_qpacked_t *pq = NULL;
      CHECK_OK(mx_cpu_qpacked_get(w, NULL, MX_CPU_QKERNEL_AUTO, &q, &pq));
      CHECK(pq && pq->q && (uintptr_t)pq->q % 64 == 0);
    }
    after = mx_test_rss_bytes();
    size_t qbytes = mx_cpu_weights_bytes(w) - packed;
    CHECK_MSG(before == 0 || after - before < qbytes + qbytes / 8 + ((size_t)4 << 20),
              "RSS +%zu bytes for %zu quantized bytes", after - before, qbytes);
    free(sc);
  }
  mx_cpu_weights_destroy(w);
  for (int i = 0; i < NW; i++) free(src[i]);
}

int main(void) {
  test_alloc();
  test_packed();
  test_slab();
  test_cache_resident();
  return mx_test_finish();
}
