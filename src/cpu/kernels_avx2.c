// AVX2 + FMA f32 kernels (256-bit), compiled with function-level target attributes; only called
// after mx_cpu_features() said yes. Same structure as the AVX-512 variant at half the width.
#include "kernels_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define MX_T256 __attribute__((target("avx2,fma")))

enum { NR = 16, MR = 6, GEMV_ROWS = 4 };

// Lane masks for maskload/maskstore: tail_mask(n) enables the first n (0..8) lanes.
MX_T256 static inline __m256i tail_mask(int64_t n) {
  if (n > 8) n = 8;
  if (n < 0) n = 0;
  __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), idx);
}

// Fixed-order horizontal sum: (lo128 + hi128), then pairs, then the last pair.
MX_T256 static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Four rows at a time; per row acc_a takes even 8-blocks, acc_b odd ones, a lone last full block
// goes to acc_a and the masked tail to acc_b (see the AVX-512 variant).
MX_T256 static void gemv_rows(const float *w, int64_t ldw, const float *x, float *y, int64_t n,
                              int64_t k) {
  int64_t k16 = k & ~(int64_t)15;
  int64_t k8 = k & ~(int64_t)7;
  __m256i mt = tail_mask(k - k8);
  for (int64_t r = 0; r < n; r += GEMV_ROWS) {
    const float *row[GEMV_ROWS];
    for (int i = 0; i < GEMV_ROWS; i++) row[i] = w + (r + i < n ? r + i : n - 1) * ldw;
    __m256 a[GEMV_ROWS], b[GEMV_ROWS];
    for (int i = 0; i < GEMV_ROWS; i++) a[i] = b[i] = _mm256_setzero_ps();
    for (int64_t kk = 0; kk < k16; kk += 16) {
      __m256 x0 = _mm256_loadu_ps(x + kk), x1 = _mm256_loadu_ps(x + kk + 8);
#pragma GCC unroll 4
      for (int i = 0; i < GEMV_ROWS; i++) {
        a[i] = _mm256_fmadd_ps(_mm256_loadu_ps(row[i] + kk), x0, a[i]);
        b[i] = _mm256_fmadd_ps(_mm256_loadu_ps(row[i] + kk + 8), x1, b[i]);
      }
    }
    if (k8 > k16) {
      __m256 x0 = _mm256_loadu_ps(x + k16);
#pragma GCC unroll 4
      for (int i = 0; i < GEMV_ROWS; i++) {
        a[i] = _mm256_fmadd_ps(_mm256_loadu_ps(row[i] + k16), x0, a[i]);
      }
    }
    if (k > k8) {
      __m256 xt = _mm256_maskload_ps(x + k8, mt);
#pragma GCC unroll 4
      for (int i = 0; i < GEMV_ROWS; i++) {
        b[i] = _mm256_fmadd_ps(_mm256_maskload_ps(row[i] + k8, mt), xt, b[i]);
      }
    }
    for (int i = 0; i < GEMV_ROWS && r + i < n; i++) y[r + i] = hsum(_mm256_add_ps(a[i], b[i]));
  }
}

// One 16-row panel at a time; k mod 4 selects one of four accumulator pairs.
MX_T256 static void gemv_panels(const float *panels, const float *x, float *y, int64_t p0,
                                int64_t p1, int64_t k, int64_t n_total) {
  int64_t k4 = k & ~(int64_t)3;
  for (int64_t p = p0; p < p1; p++) {
    const float *b = panels + p * k * NR;
    __m256 lo[4], hi[4];
    for (int i = 0; i < 4; i++) lo[i] = hi[i] = _mm256_setzero_ps();
    for (int64_t kk = 0; kk < k4; kk += 4) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; i++) {
        __m256 xv = _mm256_broadcast_ss(x + kk + i);
        lo[i] = _mm256_fmadd_ps(_mm256_load_ps(b + (kk + i) * NR), xv, lo[i]);
        hi[i] = _mm256_fmadd_ps(_mm256_load_ps(b + (kk + i) * NR + 8), xv, hi[i]);
      }
    }
    for (int64_t kk = k4; kk < k; kk++) {
      __m256 xv = _mm256_broadcast_ss(x + kk);
      lo[0] = _mm256_fmadd_ps(_mm256_load_ps(b + kk * NR), xv, lo[0]);
      hi[0] = _mm256_fmadd_ps(_mm256_load_ps(b + kk * NR + 8), xv, hi[0]);
    }
    __m256 rlo = _mm256_add_ps(_mm256_add_ps(lo[0], lo[1]), _mm256_add_ps(lo[2], lo[3]));
    __m256 rhi = _mm256_add_ps(_mm256_add_ps(hi[0], hi[1]), _mm256_add_ps(hi[2], hi[3]));
    int64_t rows = n_total - p * NR < NR ? n_total - p * NR : NR;
    _mm256_maskstore_ps(y + p * NR, tail_mask(rows), rlo);
    _mm256_maskstore_ps(y + p * NR + 8, tail_mask(rows - 8), rhi);
  }
}

// 6 x 16 register tile: 12 accumulators, 2 panel loads and 6 broadcasts per k.
MX_T256 static void gemm_ukernel(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                 int mr_valid, int nr_valid, bool accumulate) {
  __m256i m0 = tail_mask(nr_valid), m1 = tail_mask(nr_valid - 8);
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 6
  for (int i = 0; i < MR; i++) {
    if (accumulate && i < mr_valid) {
      c0[i] = _mm256_maskload_ps(c + i * ldc, m0);
      c1[i] = _mm256_maskload_ps(c + i * ldc + 8, m1);
    } else {
      c0[i] = c1[i] = _mm256_setzero_ps();
    }
  }
  for (int64_t kk = 0; kk < kc; kk++) {
    __m256 b0 = _mm256_load_ps(b + kk * NR), b1 = _mm256_load_ps(b + kk * NR + 8);
    const float *ak = a + kk * MR;
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
      __m256 av = _mm256_broadcast_ss(ak + i);
      c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < MR; i++) {
    if (i < mr_valid) {
      _mm256_maskstore_ps(c + i * ldc, m0, c0[i]);
      _mm256_maskstore_ps(c + i * ldc + 8, m1, c1[i]);
    }
  }
}

const struct mx_cpu_kernels mx_cpu_kernels_avx2 = {
    .isa = MX_CPU_ISA_AVX2,
    .nr = NR,
    .mr = MR,
    .gemv_rows = gemv_rows,
    .gemv_panels = gemv_panels,
    .gemm_ukernel = gemm_ukernel,
};

#endif  // __x86_64__
