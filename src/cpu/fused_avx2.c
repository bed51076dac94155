// AVX2 + FMA variant of the fused kernels (function-level target attributes; called only when
// mx_cpu_kernels_get(MX_CPU_ISA_AVX2) says the machine can). Same algorithms as the AVX-512
// variant with 8 lanes; tails use maskload / maskstore (masked-off lanes are not accessed).
#include <math.h>

#include "cpu/fused_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/fused_math_avx2.h"

static const int32_t kMaskTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

MX_T256 static inline __m256i tail_mask(int64_t n) {
  if (n > 8) n = 8;
  return _mm256_loadu_si256((const __m256i *)(kMaskTable + 8 - n));
}
MX_T256 static inline __m256 load(const float *p, int64_t n) {
  return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, tail_mask(n));
}
MX_T256 static inline void store(float *p, int64_t n, __m256 v) {
  if (n >= 8) {
    _mm256_storeu_ps(p, v);
  } else {
    _mm256_maskstore_ps(p, tail_mask(n), v);
  }
}
MX_T256 static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
MX_T256 static inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

MX_T256 static void rms_row(const float *x, const float *w, float *y, int64_t h, float eps,
                            float offset) {
  __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= h; i += 16) {
    __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
    a = _mm256_fmadd_ps(x0, x0, a);
    b = _mm256_fmadd_ps(x1, x1, b);
  }
  for (; i < h; i += 8) {
    __m256 x0 = load(x + i, h - i);
    a = _mm256_fmadd_ps(x0, x0, a);
  }
  float ss = hsum(_mm256_add_ps(a, b));
  __m256 inv = _mm256_set1_ps(1.0f / sqrtf(ss / (float)h + eps));
  __m256 off = _mm256_set1_ps(offset);
  for (i = 0; i < h; i += 8) {
    __m256 x0 = load(x + i, h - i);
    __m256 w0 = _mm256_add_ps(load(w + i, h - i), off);
    store(y + i, h - i, _mm256_mul_ps(_mm256_mul_ps(x0, inv), w0));
  }
}

// As dot4 in fused_avx512.c.
MX_T256 static void dot4(const float *q, const float *k0, const float *k1, const float *k2,
                         const float *k3, int64_t d, float *res) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i < d; i += 8) {
    int64_t n = d - i;
    __m256 qv = load(q + i, n);
    a0 = _mm256_fmadd_ps(load(k0 + i, n), qv, a0);
    a1 = _mm256_fmadd_ps(load(k1 + i, n), qv, a1);
    a2 = _mm256_fmadd_ps(load(k2 + i, n), qv, a2);
    a3 = _mm256_fmadd_ps(load(k3 + i, n), qv, a3);
  }
  res[0] = hsum(a0);
  res[1] = hsum(a1);
  res[2] = hsum(a2);
  res[3] = hsum(a3);
}

MX_T256 static void attn_unit(const float *q, const float *k, const float *v, float *out,
                              int64_t lo, int64_t hi, int64_t d, float scale, float softcap,
                              float *scratch) {
  float *sc = scratch, *acc = scratch + MX_ATTN_BLOCK;
  for (int64_t i = 0; i < d; i++) acc[i] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  __m256 vscale = _mm256_set1_ps(scale), vcap = _mm256_set1_ps(softcap);
  for (int64_t s0 = lo; s0 <= hi; s0 += MX_ATTN_BLOCK) {
    int64_t nb = hi + 1 - s0 < MX_ATTN_BLOCK ? hi + 1 - s0 : MX_ATTN_BLOCK;
    const float *kb = k + s0 * d, *vb = v + s0 * d;
    int64_t j = 0;
    for (; j + 4 <= nb; j += 4) {
      dot4(q, kb + j * d, kb + (j + 1) * d, kb + (j + 2) * d, kb + (j + 3) * d, d, sc + j);
    }
    for (; j < nb; j++) {
      float r4[4];
      const float *kr = kb + j * d;
      dot4(q, kr, kr, kr, kr, d, r4);
      sc[j] = r4[0];
    }
    __m256 vm = _mm256_set1_ps(-INFINITY);
    for (j = 0; j < nb; j += 8) {
      int64_t n = nb - j;
      __m256 s = _mm256_mul_ps(load(sc + j, n), vscale);
      if (softcap > 0.0f) s = _mm256_mul_ps(tanh8(_mm256_div_ps(s, vcap)), vcap);
      store(sc + j, n, s);
      if (n < 8)
        s = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), s, _mm256_castsi256_ps(tail_mask(n)));
      vm = _mm256_max_ps(vm, s);
    }
    float bm = hmax(vm);
    float mn = bm > m ? bm : m;
    float corr = 0.0f;
    if (m != -INFINITY) corr = _mm256_cvtss_f32(exp8(_mm256_set1_ps(m - mn)));
    __m256 vmn = _mm256_set1_ps(mn), vsum = _mm256_setzero_ps();
    for (j = 0; j < nb; j += 8) {
      int64_t n = nb - j;
      __m256 e = exp8(_mm256_sub_ps(load(sc + j, n), vmn));
      if (n < 8) e = _mm256_and_ps(e, _mm256_castsi256_ps(tail_mask(n)));
      store(sc + j, n, e);
      vsum = _mm256_add_ps(vsum, e);
    }
    l = l * corr + hsum(vsum);
    __m256 vc = _mm256_set1_ps(corr);
    int64_t i = 0;
    for (; i + 64 <= d; i += 64) {  // eight 8-blocks of the accumulator in registers
      __m256 a[8];
#pragma GCC unroll 8
      for (int r = 0; r < 8; r++) a[r] = _mm256_mul_ps(_mm256_loadu_ps(acc + i + 8 * r), vc);
      for (j = 0; j < nb; j++) {
        __m256 pj = _mm256_set1_ps(sc[j]);
        const float *vr = vb + j * d + i;
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) a[r] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vr + 8 * r), a[r]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < 8; r++) _mm256_storeu_ps(acc + i + 8 * r, a[r]);
    }
    for (; i + 32 <= d; i += 32) {  // four 8-blocks of the accumulator in registers
      __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acc + i), vc);
      __m256 a1 = _mm256_mul_ps(_mm256_loadu_ps(acc + i + 8), vc);
      __m256 a2 = _mm256_mul_ps(_mm256_loadu_ps(acc + i + 16), vc);
      __m256 a3 = _mm256_mul_ps(_mm256_loadu_ps(acc + i + 24), vc);
      for (j = 0; j < nb; j++) {
        __m256 pj = _mm256_set1_ps(sc[j]);
        const float *vr = vb + j * d + i;
        a0 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vr), a0);
        a1 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vr + 8), a1);
        a2 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vr + 16), a2);
        a3 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vr + 24), a3);
      }
      _mm256_storeu_ps(acc + i, a0);
      _mm256_storeu_ps(acc + i + 8, a1);
      _mm256_storeu_ps(acc + i + 16, a2);
      _mm256_storeu_ps(acc + i + 24, a3);
    }
    for (; i < d; i += 8) {
      int64_t n = d - i;
      __m256 a0 = _mm256_mul_ps(load(acc + i, n), vc);
      for (j = 0; j < nb; j++) {
        a0 = _mm256_fmadd_ps(_mm256_set1_ps(sc[j]), load(vb + j * d + i, n), a0);
      }
      store(acc + i, n, a0);
    }
    m = mn;
  }
  __m256 inv = _mm256_set1_ps(1.0f / l);
  for (int64_t i = 0; i < d; i += 8) {
    store(out + i, d - i, _mm256_mul_ps(load(acc + i, d - i), inv));
  }
}

MX_T256 static void gated(const float *gate, const float *up, float *out, int64_t n, int act) {
  __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
  for (int64_t i = 0; i < n; i += 8) {
    int64_t r = n - i;
    __m256 g = load(gate + i, r), u = load(up + i, r), a;
    if (act == 1) {
      __m256 g3 = _mm256_mul_ps(_mm256_mul_ps(g, g), g);
      __m256 inner = _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), g3, g);
      __m256 th = tanh8(_mm256_mul_ps(_mm256_set1_ps(MX_GELU_C), inner));
      a = _mm256_mul_ps(_mm256_mul_ps(half, g), _mm256_add_ps(one, th));
    } else {
      a = _mm256_div_ps(g, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    }
    store(out + i, r, _mm256_mul_ps(a, u));
  }
}

MX_T256 static void tanh_n(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) store(y + i, n - i, tanh8(load(x + i, n - i)));
}

// As logistic_n of fused_scalar.c: from e = exp(-|x|), 1 / (1 + e), times e where x < 0.
MX_T256 static void logistic_n(const float *x, float *y, int64_t n) {
  __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u)),
         one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 8) {
    __m256 v = load(x + i, n - i);
    __m256 e = exp8(_mm256_or_ps(v, sign));  // -|x|
    __m256 r = _mm256_div_ps(one, _mm256_add_ps(one, e));
    __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
    store(y + i, n - i, _mm256_blendv_ps(r, _mm256_mul_ps(e, r), neg));
  }
}

const mx_cpu_fused_ops_t mx_cpu_fused_avx2 = {.isa = MX_CPU_ISA_AVX2,
                                              .rms_row = rms_row,
                                              .attn_unit = attn_unit,
                                              .gated = gated,
                                              .tanh_n = tanh_n,
                                              .logistic_n = logistic_n};

#endif  // __x86_64__
