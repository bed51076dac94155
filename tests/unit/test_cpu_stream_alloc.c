// The decode streams' memory (cpu/stream_alloc.h): large buffers start on a 2 MiB boundary, span
// whole 2 MiB pages and carry the huge-page advice (the "hg" flag of their mapping in
// /proc/self/smaps, where the kernel has transparent huge pages); small ones stay 64-byte
// aligned; the packed f32, bf16 and quantized weights of a decode GEMV are such buffers.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cpu/kernels_q.h"
#include "cpu/stream_alloc.h"
#include "mlxcel/cpu.h"
#include "mlxcel/cpu_lowp.h"
#include "mx_test.h"

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

int main(void) {
  test_alloc();
  test_packed();
  return mx_test_finish();
}
