// AVX-512 block step of the bf16 / f16 KV attention (fused_kv.h): the online softmax of
// fused_avx512.c (its exp16 / tanh16) on a block of K and V the driver widened to f32.
#include <math.h>

#include "cpu/fused_internal.h"
#include "cpu/fused_kv.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/fused_math_avx512.h"

MX_T512 static inline __mmask16 mask16(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

// q . k_r for the four rows k, k + d, k + 2d, k + 3d (one FMA chain each over the 16-blocks).
MX_T512 static void dot4(const float *q, const float *k, int64_t d, float *res) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i < d; i += 16) {
    __mmask16 m = mask16(d - i);
    __m512 qv = _mm512_maskz_loadu_ps(m, q + i);
    a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, k + i), qv, a0);
    a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, k + d + i), qv, a1);
    a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, k + 2 * d + i), qv, a2);
    a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, k + 3 * d + i), qv, a3);
  }
  res[0] = _mm512_reduce_add_ps(a0);
  res[1] = _mm512_reduce_add_ps(a1);
  res[2] = _mm512_reduce_add_ps(a2);
  res[3] = _mm512_reduce_add_ps(a3);
}

MX_T512 static float dot1(const float *q, const float *k, int64_t d) {
  __m512 a0 = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; i += 16) {
    __mmask16 m = mask16(d - i);
    a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, k + i), _mm512_maskz_loadu_ps(m, q + i), a0);
  }
  return _mm512_reduce_add_ps(a0);
}

// One key block for one query (fused_kv.h, mx_kv_block_fn): fused_avx512.c's block math.
MX_T512 static void block(const float *q, const float *kf, const float *vf, int64_t nb, int64_t d,
                          float scale, float softcap, float *m, float *l, float *acc, float *sc) {
  __m512 vscale = _mm512_set1_ps(scale), vcap = _mm512_set1_ps(softcap);
  int64_t j = 0;
  for (; j + 4 <= nb; j += 4) dot4(q, kf + j * d, d, sc + j);
  for (; j < nb; j++) sc[j] = dot1(q, kf + j * d, d);
  __m512 vm = _mm512_set1_ps(-INFINITY);
  for (j = 0; j < nb; j += 16) {
    __mmask16 mk = mask16(nb - j);
    __m512 s = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, sc + j), vscale);
    if (softcap > 0.0f) s = _mm512_mul_ps(tanh16(_mm512_div_ps(s, vcap)), vcap);
    _mm512_mask_storeu_ps(sc + j, mk, s);
    vm = _mm512_mask_max_ps(vm, mk, vm, s);
  }
  float bm = _mm512_reduce_max_ps(vm);
  float mn = bm > *m ? bm : *m;
  float corr = 0.0f;
  if (*m != -INFINITY) corr = _mm512_cvtss_f32(exp16(_mm512_set1_ps(*m - mn)));
  __m512 vmn = _mm512_set1_ps(mn), vsum = _mm512_setzero_ps();
  for (j = 0; j < nb; j += 16) {
    __mmask16 mk = mask16(nb - j);
    __m512 e =
        _mm512_maskz_mov_ps(mk, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, sc + j), vmn)));
    _mm512_mask_storeu_ps(sc + j, mk, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  *l = *l * corr + _mm512_reduce_add_ps(vsum);
  __m512 vc = _mm512_set1_ps(corr);
  int64_t i = 0;
  for (; i + 64 <= d; i += 64) {  // four 16-blocks of the accumulator in registers
    __m512 a0 = _mm512_mul_ps(_mm512_loadu_ps(acc + i), vc);
    __m512 a1 = _mm512_mul_ps(_mm512_loadu_ps(acc + i + 16), vc);
    __m512 a2 = _mm512_mul_ps(_mm512_loadu_ps(acc + i + 32), vc);
    __m512 a3 = _mm512_mul_ps(_mm512_loadu_ps(acc + i + 48), vc);
    for (j = 0; j < nb; j++) {
      __m512 pj = _mm512_set1_ps(sc[j]);
      const float *vr = vf + j * d + i;
      a0 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vr), a0);
      a1 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vr + 16), a1);
      a2 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vr + 32), a2);
      a3 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vr + 48), a3);
    }
    _mm512_storeu_ps(acc + i, a0);
    _mm512_storeu_ps(acc + i + 16, a1);
    _mm512_storeu_ps(acc + i + 32, a2);
    _mm512_storeu_ps(acc + i + 48, a3);
  }
  for (; i < d; i += 16) {
    __mmask16 mk = mask16(d - i);
    __m512 a0 = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, acc + i), vc);
    for (j = 0; j < nb; j++)
      a0 = _mm512_fmadd_ps(_mm512_set1_ps(sc[j]), _mm512_maskz_loadu_ps(mk, vf + j * d + i), a0);
    _mm512_mask_storeu_ps(acc + i, mk, a0);
  }
  *m = mn;
}

const mx_kv_block_fn mx_cpu_kv_block_avx512 = block;

#endif  // __x86_64__
