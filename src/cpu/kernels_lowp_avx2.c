// AVX2 + FMA (+ F16C) bf16 / f16 kernels and convert loops (function-level target attributes;
// called only after mx_cpu_lowp_get said the machine can). Same algorithms as the AVX-512
// variants with 8 lanes; the GEMM microkernel is 4 rows x 32 columns, done as two 16-column
// halves so the accumulators and converted panel vectors fit the 16 registers.
#include "cpu/kernels_lowp_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "base/half.h"

#define MX_T256 __attribute__((target("avx2,fma,f16c")))

enum { NR = MX_LOWP_NR, MR = 4 };

MX_T256 static inline __m256 bf_even(__m256i v) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
MX_T256 static inline __m256 bf_odd(__m256i v) {
  return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xffff0000u)));
}

// always_inline: GCC 12 may drop a prefetch-only helper that it does not inline (see
// kernels_q_avx512.c prefetch_step).
static inline __attribute__((always_inline)) void prefetch_ahead(const uint16_t *p) {
  _mm_prefetch((const char *)p + MX_LOWP_PREFETCH_BYTES, _MM_HINT_T0);
}

MX_T256 static inline __m256i ld(const uint16_t *p) {
  return _mm256_load_si256((const __m256i *)(const void *)p);
}

// Stores 32 row results (4 vectors), the first `rows` of them.
MX_T256 static inline void store_rows(float *y, int64_t rows, const __m256 *v) {
  if (rows >= NR) {
    for (int i = 0; i < 4; i++) _mm256_storeu_ps(y + 8 * i, v[i]);
    return;
  }
  _Alignas(32) float t[NR];
  for (int i = 0; i < 4; i++) _mm256_store_ps(t + 8 * i, v[i]);
  memcpy(y, t, (size_t)rows * sizeof *y);
}

// ---- bf16 (emulated VDPBF16PS order: per pair the odd product, then the even one) ----

// One pair of k (q) of one panel into a set of 4 accumulators: odd product, then even.
MX_T256 static inline void bf16_step(const uint16_t *panel, const uint16_t *x, int64_t q, int64_t k,
                                     __m256 acc[4]) {
  float xe = mx_bf16_to_f32(x[2 * q]);
  float xo = 2 * q + 1 < k ? mx_bf16_to_f32(x[2 * q + 1]) : 0.0f;
  __m256 so = _mm256_set1_ps(xo), se = _mm256_set1_ps(xe);
  const uint16_t *bq = panel + q * 2 * NR;
  prefetch_ahead(bq);
  prefetch_ahead(bq + NR);
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {
    __m256i v = ld(bq + 16 * i);
    acc[i] = _mm256_fmadd_ps(bf_odd(v), so, acc[i]);
    acc[i] = _mm256_fmadd_ps(bf_even(v), se, acc[i]);
  }
}

// q mod 2 selects one of two sets of 4 accumulators (rows 0-7, 8-15, 16-23, 24-31), a constant
// in every step: a runtime index put the accumulators on the stack.
MX_T256 static void gemv_bf16(const uint16_t *panels, const uint16_t *x, float *y, int64_t p0,
                              int64_t p1, int64_t k, int64_t n_total) {
  int64_t kpad = (k + 1) & ~(int64_t)1, nq = kpad / 2;
  for (int64_t p = p0; p < p1; p++) {
    const uint16_t *b = panels + p * kpad * NR;
    __m256 acc[2][4];
    for (int s = 0; s < 2; s++)
      for (int i = 0; i < 4; i++) acc[s][i] = _mm256_setzero_ps();
    for (int64_t q = 0; q + 1 < nq; q += 2) {
      bf16_step(b, x, q, k, acc[0]);
      bf16_step(b, x, q + 1, k, acc[1]);
    }
    if (nq & 1) bf16_step(b, x, nq - 1, k, acc[0]);
    __m256 r[4];
    for (int i = 0; i < 4; i++) r[i] = _mm256_add_ps(acc[0][i], acc[1][i]);
    store_rows(y + p * NR, n_total - p * NR, r);
  }
}

// A in f32 (a[kk * 4 + i]).
MX_T256 static void ukernel_bf16(int64_t kc, const void *apack, const uint16_t *b, float *c,
                                 int64_t ldc, int mr_valid, int nr_valid, bool accumulate) {
  const float *a = apack;
  for (int h = 0; h < 2; h++) {  // columns [16h, 16h + 16)
    int nv = nr_valid - 16 * h;
    if (nv <= 0) break;
    if (nv > 16) nv = 16;
    __m256 c0[MR], c1[MR];
    _Alignas(32) float t[16];
    for (int i = 0; i < MR; i++) {
      c0[i] = c1[i] = _mm256_setzero_ps();
      if (accumulate && i < mr_valid) {
        memset(t, 0, sizeof t);
        memcpy(t, c + i * ldc + 16 * h, (size_t)nv * sizeof *t);
        c0[i] = _mm256_load_ps(t);
        c1[i] = _mm256_load_ps(t + 8);
      }
    }
    for (int64_t q = 0; q < kc / 2; q++) {
      const uint16_t *bq = b + q * 2 * NR + 2 * 16 * h;
      __m256i v0 = ld(bq), v1 = ld(bq + 16);
      __m256 o0 = bf_odd(v0), o1 = bf_odd(v1), e0 = bf_even(v0), e1 = bf_even(v1);
      const float *ae = a + 2 * q * MR, *ao = ae + MR;
#pragma GCC unroll 4
      for (int i = 0; i < MR; i++) {
        __m256 so = _mm256_set1_ps(ao[i]), se = _mm256_set1_ps(ae[i]);
        c0[i] = _mm256_fmadd_ps(o0, so, c0[i]);
        c1[i] = _mm256_fmadd_ps(o1, so, c1[i]);
        c0[i] = _mm256_fmadd_ps(e0, se, c0[i]);
        c1[i] = _mm256_fmadd_ps(e1, se, c1[i]);
      }
    }
    for (int i = 0; i < mr_valid; i++) {
      _mm256_store_ps(t, c0[i]);
      _mm256_store_ps(t + 8, c1[i]);
      memcpy(c + i * ldc + 16 * h, t, (size_t)nv * sizeof *t);
    }
  }
}

// ---- f16 ----

MX_T256 static inline __m256 h8(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(const void *)p));
}

// One k of one panel into a set of 4 accumulators.
MX_T256 static inline void f16_step(const uint16_t *bk, uint16_t xk, __m256 acc[4]) {
  __m256 xv = _mm256_set1_ps(mx_f16_to_f32(xk));
  prefetch_ahead(bk);
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) acc[i] = _mm256_fmadd_ps(h8(bk + 8 * i), xv, acc[i]);
}

// k mod 2 selects the set of accumulators, as in gemv_bf16.
MX_T256 static void gemv_f16(const uint16_t *panels, const uint16_t *x, float *y, int64_t p0,
                             int64_t p1, int64_t k, int64_t n_total) {
  for (int64_t p = p0; p < p1; p++) {
    const uint16_t *b = panels + p * k * NR;
    __m256 acc[2][4];
    for (int s = 0; s < 2; s++)
      for (int i = 0; i < 4; i++) acc[s][i] = _mm256_setzero_ps();
    for (int64_t kk = 0; kk + 1 < k; kk += 2) {
      f16_step(b + kk * NR, x[kk], acc[0]);
      f16_step(b + (kk + 1) * NR, x[kk + 1], acc[1]);
    }
    if (k & 1) f16_step(b + (k - 1) * NR, x[k - 1], acc[0]);
    __m256 r[4];
    for (int i = 0; i < 4; i++) r[i] = _mm256_add_ps(acc[0][i], acc[1][i]);
    store_rows(y + p * NR, n_total - p * NR, r);
  }
}

MX_T256 static void ukernel_f16(int64_t kc, const void *apack, const uint16_t *b, float *c,
                                int64_t ldc, int mr_valid, int nr_valid, bool accumulate) {
  const float *a = apack;
  for (int h = 0; h < 2; h++) {
    int nv = nr_valid - 16 * h;
    if (nv <= 0) break;
    if (nv > 16) nv = 16;
    __m256 c0[MR], c1[MR];
    _Alignas(32) float t[16];
    for (int i = 0; i < MR; i++) {
      c0[i] = c1[i] = _mm256_setzero_ps();
      if (accumulate && i < mr_valid) {
        memset(t, 0, sizeof t);
        memcpy(t, c + i * ldc + 16 * h, (size_t)nv * sizeof *t);
        c0[i] = _mm256_load_ps(t);
        c1[i] = _mm256_load_ps(t + 8);
      }
    }
    for (int64_t kk = 0; kk < kc; kk++) {
      const uint16_t *bk = b + kk * NR + 16 * h;
      __m256 b0 = h8(bk), b1 = h8(bk + 8);
      const float *ak = a + kk * MR;
#pragma GCC unroll 4
      for (int i = 0; i < MR; i++) {
        __m256 av = _mm256_set1_ps(ak[i]);
        c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);
        c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
      }
    }
    for (int i = 0; i < mr_valid; i++) {
      _mm256_store_ps(t, c0[i]);
      _mm256_store_ps(t + 8, c1[i]);
      memcpy(c + i * ldc + 16 * h, t, (size_t)nv * sizeof *t);
    }
  }
}

// ---- Conversions (8 at a time, scalar tail) ----

MX_T256 static void f32_to_bf16(const float *src, uint16_t *dst, int64_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i round = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i u = _mm256_castps_si256(_mm256_loadu_ps(src + i));
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, round), _mm256_and_si256(hi, one)), 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);  // both >= 0
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), nan);
    __m256i pk = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8);
    _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm256_castsi256_si128(pk));
  }
  for (; i < n; i++) dst[i] = mx_f32_to_bf16(src[i]);
}

MX_T256 static void bf16_to_f32(const uint16_t *src, float *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
  }
  for (; i < n; i++) dst[i] = mx_bf16_to_f32(src[i]);
}

MX_T256 static void f32_to_f16(const float *src, uint16_t *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128((__m128i *)(void *)(dst + i), h);
  }
  for (; i < n; i++) dst[i] = mx_f32_to_f16(src[i]);
}

MX_T256 static void f16_to_f32(const uint16_t *src, float *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
  }
  for (; i < n; i++) dst[i] = mx_f16_to_f32(src[i]);
}

const struct mx_cpu_lowp_kernels mx_cpu_lowp_bf16_avx2 = {
    .name = "avx2",
    .isa = MX_CPU_LOWP_AVX2,
    .et = MX_ELEM_BF16,
    .mr = MR,
    .a_pairs = false,
    .gemv = gemv_bf16,
    .ukernel = ukernel_bf16,
};

const struct mx_cpu_lowp_kernels mx_cpu_lowp_f16_avx2 = {
    .name = "avx2",
    .isa = MX_CPU_LOWP_AVX2,
    .et = MX_ELEM_F16,
    .mr = MR,
    .a_pairs = false,
    .gemv = gemv_f16,
    .ukernel = ukernel_f16,
};

const mx_cpu_lowp_convert_t mx_cpu_lowp_convert_avx2 = {f32_to_bf16, bf16_to_f32, f32_to_f16,
                                                        f16_to_f32};

#endif  // __x86_64__
