// Vectorised exp and tanh of the AVX-512 fused kernels (fused_avx512.c, fused_kv_avx512.c);
// accuracy in fused.h. Include after <immintrin.h>, on x86-64 only.
#ifndef MX_CPU_FUSED_MATH_AVX512_H
#define MX_CPU_FUSED_MATH_AVX512_H

#define MX_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

// exp(x): x = n ln2 + r (Cody-Waite, |r| <= ln2/2), degree-7 Taylor polynomial of exp(r),
// times 2^n (VSCALEFPS). x is clamped to [-87.3, 88.3] (so exp(x < -87.3) gives
// ~1.2e-38 instead of a denormal or 0; NaN inputs are not propagated).
MX_T512 static inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  // p * 2^n in one VSCALEFPS (n is integral; the clamp keeps 2^n a normal number), instead of
  // building 2^n's bits (convert, add, shift) and multiplying: the same exact product.
  return _mm512_scalef_ps(p, n);
}

// tanh(x): |x| < 0.55: odd Taylor polynomial to x^17; else sign(x) (1 - 2 / (exp(2|x|) + 1)).
MX_T512 static inline __m512 tanh16(__m512 x) {
  __m512 a = _mm512_abs_ps(x);
  __m512 x2 = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(6404582.0f / 10854718875.0f);
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-929569.0f / 638512875.0f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(21844.0f / 6081075.0f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-1382.0f / 155925.0f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(62.0f / 2835.0f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-17.0f / 315.0f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(2.0f / 15.0f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-1.0f / 3.0f));
  p = _mm512_mul_ps(_mm512_mul_ps(p, x2), x);
  __m512 small = _mm512_add_ps(x, p);
  __m512 e = exp16(_mm512_add_ps(a, a));
  __m512 big =
      _mm512_sub_ps(_mm512_set1_ps(1.0f),
                    _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
  // copy the sign of x onto big
  big = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_castps_si512(big),
      _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
  __mmask16 is_small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.55f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(is_small, big, small);
}

// The online-softmax step of one query over the raw scores p[0..nb) of a key block: scales
// them (then tanh(s / softcap) * softcap when softcap > 0), replaces them by exp(s - m') with
// m' = max(*m, the block's max), sets *l = *l * c + their sum and *m = m', and returns
// c = exp(old *m - m') (0 for the first block), the factor the accumulator must be rescaled by.
MX_T512 static inline float softmax_block16(float *p, int64_t nb, float scale, float softcap,
                                            float *m, float *l) {
  __m512 vscale = _mm512_set1_ps(scale), vcap = _mm512_set1_ps(softcap);
  __m512 vm = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < nb; j += 16) {
    __mmask16 mk = nb - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nb - j)) - 1u);
    __m512 s = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, p + j), vscale);
    if (softcap > 0.0f) s = _mm512_mul_ps(tanh16(_mm512_div_ps(s, vcap)), vcap);
    _mm512_mask_storeu_ps(p + j, mk, s);
    vm = _mm512_mask_max_ps(vm, mk, vm, s);
  }
  float bm = _mm512_reduce_max_ps(vm);
  float mn = bm > *m ? bm : *m;
  float corr = 0.0f;
  if (*m != -INFINITY) corr = _mm512_cvtss_f32(exp16(_mm512_set1_ps(*m - mn)));
  __m512 vmn = _mm512_set1_ps(mn), vsum = _mm512_setzero_ps();
  for (int64_t j = 0; j < nb; j += 16) {
    __mmask16 mk = nb - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nb - j)) - 1u);
    __m512 e = _mm512_maskz_mov_ps(mk, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, p + j), vmn)));
    _mm512_mask_storeu_ps(p + j, mk, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  *l = *l * corr + _mm512_reduce_add_ps(vsum);
  *m = mn;
  return corr;
}

#endif  // MX_CPU_FUSED_MATH_AVX512_H
