// Few-row matmul with the GEMV's summation order (kernels_rows.h).
//
// AVX-512 and AVX2: kernels_rows_avx512.c / kernels_rows_avx2.c (k-blocks in L1 shared by all
// rows; AVX-512 also register-blocked over rows). Other ISAs (scalar), the portable driver: the
// panels of this thread go by in blocks small enough to stay in L2 (~256 KiB), and every row runs
// the ISA's own GEMV panel kernel over the block, so each row's result is the GEMV's by
// construction; the weights come from memory once, the other rows read them from L2 (slower than
// register blocking: memory and compute do not overlap).
#include "cpu/kernels_rows.h"

#include "cpu/kernels_internal.h"

enum { ROWS_BLOCK_BYTES = 256 * 1024 };

void mx_cpu_gemv_packed_rows_f32(const mx_cpu_packed_t *w, const float *x, int64_t ldx, float *y,
                                 int64_t ldy, int64_t m, int ith, int nth) {
  const mx_cpu_kernels_t *kt = w->kt;
  int64_t p0 = w->panels * ith / nth, p1 = w->panels * (ith + 1) / nth;
  if (p1 <= p0 || m <= 0) return;
#if defined(__x86_64__)
  if (kt->isa == MX_CPU_ISA_AVX512 && kt->nr == 32 && m <= MX_ROWS_MAX_M) {
    mx_cpu_rows_avx512(w, x, ldx, y, ldy, m, p0, p1);
    return;
  }
  if (kt->isa == MX_CPU_ISA_AVX2 && kt->nr == 16 && m <= MX_ROWS_MAX_M) {
    mx_cpu_rows_avx2(w, x, ldx, y, ldy, m, p0, p1);
    return;
  }
#endif
  int64_t panel_bytes = w->k * (int64_t)w->nr * (int64_t)sizeof(float);
  int64_t pb = panel_bytes > 0 ? ROWS_BLOCK_BYTES / panel_bytes : 1;
  if (pb < 1) pb = 1;
  for (int64_t b0 = p0; b0 < p1; b0 += pb) {
    int64_t b1 = b0 + pb < p1 ? b0 + pb : p1;
    for (int64_t i = 0; i < m; i++)
      kt->gemv_panels(w->data, x + i * ldx, y + i * ldy, b0, b1, w->k, w->n);
  }
}
