// The float steps of the VNNI16 path (kernels_q.h) shared by its AVX-512 GEMV / GEMM
// (kernels_q_avx512.c) and its AMX prefill (kernels_q_amx.c): one arithmetic in one place, so a
// prefill row equals its decode bit for bit whichever unit summed the integers.
#ifndef MX_CPU_KERNELS_Q_VNNI16_H
#define MX_CPU_KERNELS_Q_VNNI16_H

#include "cpu/kernels_q.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define MX_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))

// 16 scales / biases of one (panel, group) as f32, from f16 or f32 storage. always_inline: the
// VNNI16 instances pass a constant f16.
MX_T512 static inline __attribute__((always_inline)) __m512 params16(const void *a, int64_t i,
                                                                     bool f16) {
  if (f16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)a + i)));
  return _mm512_loadu_ps((const float *)a + i);
}

// Group j's contribution to the 16 rows of panel p from the exact integer sums hs = sum u h and
// ls = sum u l of one activation row (dx, xqsum, xsum: that row's group data, kernels_q.h):
// ys += s dx (256 hs + ls - z xqsum), and for affine weights yb += (b + z s) xsum. The scale and
// the bias terms go to separate accumulators so that consecutive groups do not chain two FMAs.
MX_T512 static inline __attribute__((always_inline)) void mx_q_vnni16_out(
    const mx_cpu_qpacked_t *w, int64_t p, int64_t j, __m512i hs, __m512i ls, int z, bool f16,
    bool affine, float dx, int32_t xqsum, float xsum, __m512 *ys, __m512 *yb) {
  __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(hs, 8), ls);
  isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(z * xqsum));
  int64_t pi = (p * w->groups + j) * MX_QR;
  __m512 s = params16(w->s, pi, f16);
  *ys = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(s, _mm512_set1_ps(dx)), *ys);
  if (affine) {
    *yb = _mm512_fmadd_ps(_mm512_fmadd_ps(s, _mm512_set1_ps((float)z), params16(w->b, pi, f16)),
                          _mm512_set1_ps(xsum), *yb);
  }
}

#endif  // __x86_64__
#endif  // MX_CPU_KERNELS_Q_VNNI16_H
