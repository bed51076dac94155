// AVX-512 few-row matmul with the GEMV's summation order (kernels_rows.h).
//
// The AVX-512 GEMV (kernels_avx512.c, gemv_panels) sums each output element of a 32-row panel
// in four FMA chains, chain i taking k = i mod 4 for k < k4 = k & ~3, then k4 .. k-1 into chain
// 0, and returns (c0 + c1) + (c2 + c3). This kernel makes exactly those chains for up to three
// rows of X at once (8 accumulators per row: 4 chains x 2 halves of the panel), so the weight
// vectors loaded for one k serve every row: one load feeds 2R FMAs instead of 2. The panel is
// walked in k-blocks of KB (16 KiB of panel) and all row groups pass over a block while it is
// in L1; between blocks the accumulators are parked in a small stack buffer. Every row's
// result is bit-identical to the GEMV's (checked in tests/unit/test_batch.c for every m).
#include "cpu/kernels_rows.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/kernels_internal.h"

#define MX_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

enum { NR = 32, KB = 128, MAX_R = 3 };

MX_T512 static inline __mmask16 tail16(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

// R rows (x[r] = row r of X) over k in [k0, k1) of one panel b, k0 and k1 multiples of 4;
// acc[r][0..3] = low-half chains, acc[r][4..7] = high-half chains, loaded from and stored to
// the park buffer (zero-initialised when first).
MX_T512 static inline __attribute__((always_inline)) void rows_block(const float *b,
                                                                     const float *const *x, int R,
                                                                     int64_t k0, int64_t k1,
                                                                     __m512 *park, bool first) {
  __m512 lo[MAX_R][4], hi[MAX_R][4];
#pragma GCC unroll 3
  for (int r = 0; r < R; r++) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
      lo[r][i] = first ? _mm512_setzero_ps() : park[r * 8 + i];
      hi[r][i] = first ? _mm512_setzero_ps() : park[r * 8 + 4 + i];
    }
  }
  for (int64_t kk = k0; kk < k1; kk += 4) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
      __m512 wl = _mm512_load_ps(b + (kk + i) * NR), wh = _mm512_load_ps(b + (kk + i) * NR + 16);
      // Keep the weights in registers: folded into each FMA as a memory operand they would be
      // loaded once per row (36 loads per 24 FMAs instead of 20, load-port bound).
      __asm__("" : "+v"(wl), "+v"(wh));
#pragma GCC unroll 3
      for (int r = 0; r < R; r++) {
        __m512 xv = _mm512_set1_ps(x[r][kk + i]);
        lo[r][i] = _mm512_fmadd_ps(wl, xv, lo[r][i]);
        hi[r][i] = _mm512_fmadd_ps(wh, xv, hi[r][i]);
      }
    }
  }
#pragma GCC unroll 3
  for (int r = 0; r < R; r++) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
      park[r * 8 + i] = lo[r][i];
      park[r * 8 + 4 + i] = hi[r][i];
    }
  }
}

MX_T512 static void rows_block_r(const float *b, const float *const *x, int R, int64_t k0,
                                 int64_t k1, __m512 *park, bool first) {
  switch (R) {
    case 1:
      rows_block(b, x, 1, k0, k1, park, first);
      break;
    case 2:
      rows_block(b, x, 2, k0, k1, park, first);
      break;
    default:
      rows_block(b, x, 3, k0, k1, park, first);
      break;
  }
}

// Rows [0, m) of X, panels [p0, p1); m <= MX_ROWS_MAX_M.
MX_T512 void mx_cpu_rows_avx512(const mx_cpu_packed_t *w, const float *x, int64_t ldx, float *y,
                                int64_t ldy, int64_t m, int64_t p0, int64_t p1) {
  const int64_t k = w->k, k4 = k & ~(int64_t)3;
  __m512 park[MX_ROWS_MAX_M * 8];
  for (int64_t p = p0; p < p1; p++) {
    const float *b = w->data + p * k * NR;
    for (int64_t kb = 0; kb < k4 || kb == 0; kb += KB) {
      int64_t ke = kb + KB < k4 ? kb + KB : k4;
      for (int64_t r0 = 0; r0 < m; r0 += MAX_R) {
        int R = m - r0 < MAX_R ? (int)(m - r0) : MAX_R;
        const float *xr[MAX_R];
        for (int r = 0; r < R; r++) xr[r] = x + (r0 + r) * ldx;
        rows_block_r(b, xr, R, kb, ke, park + r0 * 8, kb == 0);
      }
      if (k4 == 0) break;
    }
    int64_t rows = w->n - p * NR < NR ? w->n - p * NR : NR;
    __mmask16 m0 = tail16(rows), m1 = tail16(rows - 16);
    for (int64_t r = 0; r < m; r++) {
      __m512 *a = park + r * 8;
      const float *xr = x + r * ldx;
      for (int64_t kk = k4; kk < k; kk++) {  // the GEMV's tail: chain 0
        __m512 xv = _mm512_set1_ps(xr[kk]);
        a[0] = _mm512_fmadd_ps(_mm512_load_ps(b + kk * NR), xv, a[0]);
        a[4] = _mm512_fmadd_ps(_mm512_load_ps(b + kk * NR + 16), xv, a[4]);
      }
      __m512 rlo = _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]));
      __m512 rhi = _mm512_add_ps(_mm512_add_ps(a[4], a[5]), _mm512_add_ps(a[6], a[7]));
      _mm512_mask_storeu_ps(y + r * ldy + p * NR, m0, rlo);
      _mm512_mask_storeu_ps(y + r * ldy + p * NR + 16, m1, rhi);
    }
  }
}

#endif  // __x86_64__
