// Vectorised exp and tanh of the AVX2 fused kernels (fused_avx2.c, fused_kv_avx2.c), as those
// of fused_math_avx512.h with 8 lanes. Include after <immintrin.h>, on x86-64 only.
#ifndef MX_CPU_FUSED_MATH_AVX2_H
#define MX_CPU_FUSED_MATH_AVX2_H

#define MX_T256 __attribute__((target("avx2,fma")))

// exp(x), as exp16 in fused_math_avx512.h.
MX_T256 static inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// tanh(x), as tanh16 in fused_math_avx512.h.
MX_T256 static inline __m256 tanh8(__m256 x) {
  __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
  __m256 a = _mm256_andnot_ps(sign, x);
  __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(6404582.0f / 10854718875.0f);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-929569.0f / 638512875.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(21844.0f / 6081075.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1382.0f / 155925.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(62.0f / 2835.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-17.0f / 315.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.0f / 15.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.0f / 3.0f));
  p = _mm256_mul_ps(_mm256_mul_ps(p, x2), x);
  __m256 small = _mm256_add_ps(x, p);
  __m256 e = exp8(_mm256_add_ps(a, a));
  __m256 big =
      _mm256_sub_ps(_mm256_set1_ps(1.0f),
                    _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
  big = _mm256_or_ps(big, _mm256_and_ps(x, sign));
  __m256 is_small = _mm256_cmp_ps(a, _mm256_set1_ps(0.55f), _CMP_LT_OQ);
  return _mm256_blendv_ps(big, small, is_small);
}

#endif  // MX_CPU_FUSED_MATH_AVX2_H
