// AVX2 few-row matmul with the GEMV's summation order (kernels_rows.h).
//
// The AVX2 GEMV (kernels_avx2.c, gemv_panels) sums each element of a 16-row panel in four FMA
// chains (chain i: k = i mod 4 below k4 = k & ~3, then k4 .. k-1 into chain 0) and returns
// (c0 + c1) + (c2 + c3). With 16 registers only one row's 8 accumulators fit beside the weights,
// so the rows take turns over each k-block of the panel (KB = 128: 8 KiB, in L1) and park their
// accumulators in a stack buffer in between: the weights come from memory once per call, the
// other rows read them from L1, and memory and compute overlap. Bit-identical to the GEMV per
// row (tests/unit/test_batch.c).
#include "cpu/kernels_rows.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/kernels_internal.h"

#define MX_T256 __attribute__((target("avx2,fma")))

enum { NR = 16, KB = 128 };

MX_T256 static inline __m256i tail8(int64_t n) {
  if (n > 8) n = 8;
  if (n < 0) n = 0;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// One row over k in [k0, k1) (multiples of 4) of panel b; park[0..3] low-half chains,
// park[4..7] high-half chains.
MX_T256 static void row_block(const float *b, const float *x, int64_t k0, int64_t k1, __m256 *park,
                              bool first) {
  __m256 lo[4], hi[4];
  for (int i = 0; i < 4; i++) {
    lo[i] = first ? _mm256_setzero_ps() : park[i];
    hi[i] = first ? _mm256_setzero_ps() : park[4 + i];
  }
  for (int64_t kk = k0; kk < k1; kk += 4) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
      __m256 xv = _mm256_broadcast_ss(x + kk + i);
      lo[i] = _mm256_fmadd_ps(_mm256_load_ps(b + (kk + i) * NR), xv, lo[i]);
      hi[i] = _mm256_fmadd_ps(_mm256_load_ps(b + (kk + i) * NR + 8), xv, hi[i]);
    }
  }
  for (int i = 0; i < 4; i++) {
    park[i] = lo[i];
    park[4 + i] = hi[i];
  }
}

MX_T256 void mx_cpu_rows_avx2(const mx_cpu_packed_t *w, const float *x, int64_t ldx, float *y,
                              int64_t ldy, int64_t m, int64_t p0, int64_t p1) {
  const int64_t k = w->k, k4 = k & ~(int64_t)3;
  __m256 park[MX_ROWS_MAX_M * 8];
  for (int64_t p = p0; p < p1; p++) {
    const float *b = w->data + p * k * NR;
    for (int64_t kb = 0; kb < k4 || kb == 0; kb += KB) {
      int64_t ke = kb + KB < k4 ? kb + KB : k4;
      for (int64_t r = 0; r < m; r++) row_block(b, x + r * ldx, kb, ke, park + r * 8, kb == 0);
      if (k4 == 0) break;
    }
    int64_t rows = w->n - p * NR < NR ? w->n - p * NR : NR;
    __m256i m0 = tail8(rows), m1 = tail8(rows - 8);
    for (int64_t r = 0; r < m; r++) {
      __m256 *a = park + r * 8;
      const float *xr = x + r * ldx;
      for (int64_t kk = k4; kk < k; kk++) {  // the GEMV's tail: chain 0
        __m256 xv = _mm256_broadcast_ss(xr + kk);
        a[0] = _mm256_fmadd_ps(_mm256_load_ps(b + kk * NR), xv, a[0]);
        a[4] = _mm256_fmadd_ps(_mm256_load_ps(b + kk * NR + 8), xv, a[4]);
      }
      __m256 rlo = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
      __m256 rhi = _mm256_add_ps(_mm256_add_ps(a[4], a[5]), _mm256_add_ps(a[6], a[7]));
      _mm256_maskstore_ps(y + r * ldy + p * NR, m0, rlo);
      _mm256_maskstore_ps(y + r * ldy + p * NR + 8, m1, rhi);
    }
  }
}

#endif  // __x86_64__
