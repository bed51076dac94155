// AVX2 block step of the bf16 / f16 KV attention (fused_kv.h): as fused_kv_avx512.c with 8
// lanes.
#include <math.h>

#include "cpu/fused_internal.h"
#include "cpu/fused_kv.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/fused_math_avx2.h"

static const int32_t kMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

MX_T256 static inline __m256i tmask(int64_t n) {
  if (n > 8) n = 8;
  return _mm256_loadu_si256((const __m256i *)(const void *)(kMask + 8 - n));
}
MX_T256 static inline __m256 load(const float *p, int64_t n) {
  return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, tmask(n));
}
MX_T256 static inline void store(float *p, int64_t n, __m256 v) {
  if (n >= 8) {
    _mm256_storeu_ps(p, v);
  } else {
    _mm256_maskstore_ps(p, tmask(n), v);
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

MX_T256 static float dot1(const float *q, const float *k, int64_t d) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0;
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(k + i), _mm256_loadu_ps(q + i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(k + i + 8), _mm256_loadu_ps(q + i + 8), a1);
  }
  for (; i < d; i += 8) a0 = _mm256_fmadd_ps(load(k + i, d - i), load(q + i, d - i), a0);
  return hsum(_mm256_add_ps(a0, a1));
}

// One key block for one query (fused_kv.h, mx_kv_block_fn): fused_avx2.c's block math.
MX_T256 static void block(const float *q, const float *kf, const float *vf, int64_t nb, int64_t d,
                          float scale, float softcap, float *m, float *l, float *acc, float *sc) {
  __m256 vscale = _mm256_set1_ps(scale), vcap = _mm256_set1_ps(softcap);
  for (int64_t j = 0; j < nb; j++) sc[j] = dot1(q, kf + j * d, d);
  __m256 vm = _mm256_set1_ps(-INFINITY);
  for (int64_t j = 0; j < nb; j += 8) {
    int64_t n = nb - j;
    __m256 s = _mm256_mul_ps(load(sc + j, n), vscale);
    if (softcap > 0.0f) s = _mm256_mul_ps(tanh8(_mm256_div_ps(s, vcap)), vcap);
    store(sc + j, n, s);
    if (n < 8) s = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), s, _mm256_castsi256_ps(tmask(n)));
    vm = _mm256_max_ps(vm, s);
  }
  float bm = hmax(vm);
  float mn = bm > *m ? bm : *m;
  float corr = 0.0f;
  if (*m != -INFINITY) corr = _mm256_cvtss_f32(exp8(_mm256_set1_ps(*m - mn)));
  __m256 vmn = _mm256_set1_ps(mn), vsum = _mm256_setzero_ps();
  for (int64_t j = 0; j < nb; j += 8) {
    int64_t n = nb - j;
    __m256 e = exp8(_mm256_sub_ps(load(sc + j, n), vmn));
    if (n < 8) e = _mm256_and_ps(e, _mm256_castsi256_ps(tmask(n)));
    store(sc + j, n, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  *l = *l * corr + hsum(vsum);
  __m256 vc = _mm256_set1_ps(corr);
  int64_t i = 0;
  for (; i + 32 <= d; i += 32) {
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acc + i), vc);
    __m256 a1 = _mm256_mul_ps(_mm256_loadu_ps(acc + i + 8), vc);
    __m256 a2 = _mm256_mul_ps(_mm256_loadu_ps(acc + i + 16), vc);
    __m256 a3 = _mm256_mul_ps(_mm256_loadu_ps(acc + i + 24), vc);
    for (int64_t j = 0; j < nb; j++) {
      __m256 pj = _mm256_set1_ps(sc[j]);
      const float *vr = vf + j * d + i;
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
    for (int64_t j = 0; j < nb; j++)
      a0 = _mm256_fmadd_ps(_mm256_set1_ps(sc[j]), load(vf + j * d + i, n), a0);
    store(acc + i, n, a0);
  }
  *m = mn;
}

const mx_kv_block_fn mx_cpu_kv_block_avx2 = block;

#endif  // __x86_64__
