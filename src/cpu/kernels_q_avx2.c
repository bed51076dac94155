// AVX2 + FMA quantized kernels: the exact path on the KMAJOR layout, a panel's 16 rows as two
// 8-lane halves (see kernels_q.h and the AVX-512 variant). Function-level target attributes.
#include "cpu/kernels_q.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define MX_T256 __attribute__((target("avx2,fma,f16c")))

// 8 scales / biases (rows h*8 .. h*8+7) of one (panel, group) as f32.
MX_T256 static inline __m256 load_params(const mx_cpu_qpacked_t *w, const void *a, int64_t i) {
  if (w->f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)a + i)));
  return _mm256_loadu_ps((const float *)a + i);
}

// Software prefetch ahead of the group being read (see the AVX-512 variant; always_inline as
// there: GCC 12 may drop a prefetch-only helper that it does not inline).
enum { PF_AHEAD = 2048 };
MX_T256 static inline __attribute__((always_inline)) void prefetch_group(const uint8_t *group,
                                                                         int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64)
    _mm_prefetch((const char *)group + PF_AHEAD + o, _MM_HINT_T0);
}

MX_T256 static inline __m256 u8x8(const uint8_t *q) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q)));
}

MX_T256 static void gemv_exact(const mx_cpu_qpacked_t *w, const float *x, const mx_qact_t *a,
                               float *y, int64_t p0, int64_t p1) {
  const int64_t k = w->k, g = w->group;
  const __m256 off = _mm256_set1_ps((float)w->offset);
  const __m256i lo4 = _mm256_set1_epi32(15);
  for (int64_t p = p0; p < p1; p++) {
    __m256 y0 = _mm256_setzero_ps(), y1 = y0;
    for (int64_t j = 0; j < w->groups; j++) {
      const float *xg = x + j * g;
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;  // a: rows 0-7, b: 8-15
      if (w->bits == 8) {
        const uint8_t *qg = w->q + p * k * MX_QR + j * g * MX_QR;
        prefetch_group(qg, g * MX_QR);
        for (int64_t i = 0; i < g; i += 2) {
          __m256 x0 = _mm256_set1_ps(xg[i]), x1 = _mm256_set1_ps(xg[i + 1]);
          a0 = _mm256_fmadd_ps(u8x8(qg + i * MX_QR), x0, a0);
          b0 = _mm256_fmadd_ps(u8x8(qg + i * MX_QR + 8), x0, b0);
          a1 = _mm256_fmadd_ps(u8x8(qg + (i + 1) * MX_QR), x1, a1);
          b1 = _mm256_fmadd_ps(u8x8(qg + (i + 1) * MX_QR + 8), x1, b1);
        }
      } else {
        const uint8_t *qg = w->q + p * (k / 2) * MX_QR + j * (g / 2) * MX_QR;
        prefetch_group(qg, g / 2 * MX_QR);
        for (int64_t i = 0; i < g; i += 2) {
          __m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(qg + i / 2 * MX_QR)));
          __m256i v1 =
              _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(qg + i / 2 * MX_QR + 8)));
          __m256 x0 = _mm256_set1_ps(xg[i]), x1 = _mm256_set1_ps(xg[i + 1]);
          a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v0, lo4)), x0, a0);
          b0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v1, lo4)), x0, b0);
          a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(v0, 4)), x1, a1);
          b1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(v1, 4)), x1, b1);
        }
      }
      __m256 xs = _mm256_set1_ps(a->xsum[j]);
      __m256 ta = _mm256_fnmadd_ps(off, xs, _mm256_add_ps(a0, a1));
      __m256 tb = _mm256_fnmadd_ps(off, xs, _mm256_add_ps(b0, b1));
      int64_t pi = (p * w->groups + j) * MX_QR;
      y0 = _mm256_fmadd_ps(load_params(w, w->s, pi), ta, y0);
      y1 = _mm256_fmadd_ps(load_params(w, w->s, pi + 8), tb, y1);
      if (w->b) {
        y0 = _mm256_fmadd_ps(load_params(w, w->b, pi), xs, y0);
        y1 = _mm256_fmadd_ps(load_params(w, w->b, pi + 8), xs, y1);
      }
    }
    float out[MX_QR];
    _mm256_storeu_ps(out, y0);
    _mm256_storeu_ps(out + 8, y1);
    for (int r = 0; r < MX_QR && p * MX_QR + r < w->n; r++) y[p * MX_QR + r] = out[r];
  }
}

// dst[kk * ld + r] = (u - o) * s [+ b] on the KMAJOR layout.
MX_T256 static void dequant(const mx_cpu_qpacked_t *w, int64_t p, int64_t k0, int64_t kc,
                            float *dst, int64_t ld) {
  const int64_t k = w->k, g = w->group;
  const __m256 off = _mm256_set1_ps((float)w->offset);
  const __m256i lo4 = _mm256_set1_epi32(15);
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, c0 = s0, c1 = s0;
  for (int64_t kk = k0; kk < k0 + kc; kk++) {
    if (kk == k0 || kk % g == 0) {
      int64_t pi = (p * w->groups + kk / g) * MX_QR;
      s0 = load_params(w, w->s, pi);
      s1 = load_params(w, w->s, pi + 8);
      if (w->b) {
        c0 = load_params(w, w->b, pi);
        c1 = load_params(w, w->b, pi + 8);
      }
    }
    __m256 u0, u1;
    if (w->bits == 8) {
      const uint8_t *q = w->q + (p * k + kk) * MX_QR;
      u0 = u8x8(q);
      u1 = u8x8(q + 8);
    } else {
      const uint8_t *q = w->q + (p * (k / 2) + kk / 2) * MX_QR;
      __m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q));
      __m256i v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8)));
      int sh = kk & 1 ? 4 : 0;
      u0 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(v0, sh), lo4));
      u1 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(v1, sh), lo4));
    }
    __m256 v0 = _mm256_mul_ps(_mm256_sub_ps(u0, off), s0);
    __m256 v1 = _mm256_mul_ps(_mm256_sub_ps(u1, off), s1);
    if (w->b) {
      v0 = _mm256_add_ps(v0, c0);
      v1 = _mm256_add_ps(v1, c1);
    }
    _mm256_storeu_ps(dst + (kk - k0) * ld, v0);
    _mm256_storeu_ps(dst + (kk - k0) * ld + 8, v1);
  }
}

// xsum of every group: 8-lane partial sums, then a fixed-order reduction.
MX_T256 static void prep(const mx_cpu_qpacked_t *w, const float *x, mx_qact_t *a) {
  for (int64_t j = 0; j < w->groups; j++) {
    const float *xg = x + j * w->group;
    __m256 s = _mm256_loadu_ps(xg);
    for (int64_t i = 8; i < w->group; i += 8) s = _mm256_add_ps(s, _mm256_loadu_ps(xg + i));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    a->xsum[j] = _mm_cvtss_f32(h);
  }
}

const mx_cpu_qkernels_t mx_cpu_qkernels_avx2 = {
    .name = "avx2",
    .layout = MX_QL_KMAJOR,
    .prep = prep,
    .gemv = gemv_exact,
    .dequant = dequant,
};

#endif  // __x86_64__
