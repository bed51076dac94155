// AVX-512 bf16 / f16 kernels (function-level target attributes; called only after
// mx_cpu_lowp_get said the machine can): bf16 with VDPBF16PS ("avx512bf16") or emulated with
// shifts + FMA ("avx512"), f16 with VCVTPH2PS + FMA, and the convert loops.
#include "cpu/kernels_lowp_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "base/half.h"
#include "cpu/prefetch.h"

#define MX_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define MX_T512BF __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,avx512bf16")))

enum { NR = MX_LOWP_NR, MR = 12 };

MX_T512 static inline __mmask16 mask16(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1u);
}

MX_T512 static inline void store_rows(float *y, int64_t rows, __m512 lo, __m512 hi) {
  _mm512_mask_storeu_ps(y, mask16(rows), lo);
  _mm512_mask_storeu_ps(y + 16, mask16(rows - 16), hi);
}

// The GEMVs prefetch ahead of every line they read by cpu/prefetch.h's policy. The AVX2 kernels'
// single MX_LOWP_PREFETCH_BYTES into L1 keeps these well below the f32 GEMV's bytes per second
// at a high host bandwidth (lines evicted or fill buffers exhausted before use, presumably: no
// PMU here); split into L1 and L2 they match it, as the quantized GEMVs found
// (docs/performance.md, "Kernel measurements").

static inline uint32_t load_pair(const uint16_t *x) {
  uint32_t v;
  memcpy(&v, x, sizeof v);
  return v;
}

// bf16 pairs (16 lanes of 2) -> the f32 values of the even (low half) and odd (high half) k.
MX_T512 static inline __m512 bf_even(__m512i v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}
MX_T512 static inline __m512 bf_odd(__m512i v) {
  return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)));
}

// f32 values of the pairs q0 .. q0 + n - 1 of x (n <= 16; the pair q = k/2 of an odd k has 0 as
// its odd element): xe[j] = x[2(q0+j)], xo[j] = x[2(q0+j) + 1].
MX_T512 static inline void x_pairs(const uint16_t *x, int64_t k, int64_t q0, int n, float *xe,
                                   float *xo) {
  int64_t full = k / 2 - q0;  // complete pairs from q0
  int nf = full < n ? (int)(full > 0 ? full : 0) : n;
  __m512i v = _mm512_maskz_loadu_epi32(mask16(nf), x + 2 * q0);
  if (nf < n) {  // the last, odd k
    v = _mm512_mask_set1_epi32(v, (__mmask16)(1u << nf), (int)x[k - 1]);
  }
  _mm512_storeu_ps(xe, bf_even(v));
  _mm512_storeu_ps(xo, bf_odd(v));
}

// ---- bf16, emulated: per pair the odd product then the even one, as VDPBF16PS ----

// One pair of k (q) of one panel into the accumulator pair (lo, hi): odd product, then even.
MX_T512 static inline void bf16_step(const uint16_t *bq, const float *xe, const float *xo,
                                     __m512 *lo, __m512 *hi) {
  mx_cpu_prefetch_line(bq);
  mx_cpu_prefetch_line(bq + NR);
  __m512i v0 = _mm512_load_si512((const void *)bq);
  __m512i v1 = _mm512_load_si512((const void *)(bq + NR));
  __m512 so = _mm512_set1_ps(*xo), se = _mm512_set1_ps(*xe);
  *lo = _mm512_fmadd_ps(bf_odd(v0), so, *lo);
  *hi = _mm512_fmadd_ps(bf_odd(v1), so, *hi);
  *lo = _mm512_fmadd_ps(bf_even(v0), se, *lo);
  *hi = _mm512_fmadd_ps(bf_even(v1), se, *hi);
}

// One panel stream at a time; q mod 4 selects one of four accumulator pairs, combined as
// (a0 + a1) + (a2 + a3). The accumulator index is a constant in every step (unrolled by 4):
// a runtime one put the accumulators on the stack, a load and a store around every FMA.
MX_T512 static void gemv_bf16(const uint16_t *panels, const uint16_t *x, float *y, int64_t p0,
                              int64_t p1, int64_t k, int64_t n_total) {
  int64_t kpad = (k + 1) & ~(int64_t)1, nq = kpad / 2;
  _Alignas(64) float xe[16], xo[16];
  for (int64_t p = p0; p < p1; p++) {
    const uint16_t *b = panels + p * kpad * NR;
    __m512 lo[4], hi[4];
    for (int i = 0; i < 4; i++) lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t q0 = 0; q0 < nq; q0 += 16) {
      int n = nq - q0 < 16 ? (int)(nq - q0) : 16, n4 = n & ~3;
      x_pairs(x, k, q0, n, xe, xo);
      const uint16_t *bq = b + q0 * 2 * NR;
      for (int j = 0; j < n4; j += 4) {
#pragma GCC unroll 4
        for (int s = 0; s < 4; s++) {
          bf16_step(bq + (j + s) * 2 * NR, xe + j + s, xo + j + s, &lo[s], &hi[s]);
        }
      }
#pragma GCC unroll 4
      for (int s = 0; s < 4; s++) {
        if (n4 + s < n) bf16_step(bq + (n4 + s) * 2 * NR, xe + n4 + s, xo + n4 + s, &lo[s], &hi[s]);
      }
    }
    __m512 rlo = _mm512_add_ps(_mm512_add_ps(lo[0], lo[1]), _mm512_add_ps(lo[2], lo[3]));
    __m512 rhi = _mm512_add_ps(_mm512_add_ps(hi[0], hi[1]), _mm512_add_ps(hi[2], hi[3]));
    store_rows(y + p * NR, n_total - p * NR, rlo, rhi);
  }
}

// 12 x 32 tile, A in f32 (a[kk * 12 + i]).
MX_T512 static void ukernel_bf16(int64_t kc, const void *apack, const uint16_t *b, float *c,
                                 int64_t ldc, int mr_valid, int nr_valid, bool accumulate) {
  const float *a = apack;
  __mmask16 m0 = mask16(nr_valid), m1 = mask16(nr_valid - 16);
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
  for (int i = 0; i < MR; i++) {
    if (accumulate && i < mr_valid) {
      c0[i] = _mm512_maskz_loadu_ps(m0, c + i * ldc);
      c1[i] = _mm512_maskz_loadu_ps(m1, c + i * ldc + 16);
    } else {
      c0[i] = c1[i] = _mm512_setzero_ps();
    }
  }
  for (int64_t q = 0; q < kc / 2; q++) {
    __m512i v0 = _mm512_load_si512((const void *)(b + q * 2 * NR));
    __m512i v1 = _mm512_load_si512((const void *)(b + q * 2 * NR + NR));
    __m512 o0 = bf_odd(v0), o1 = bf_odd(v1), e0 = bf_even(v0), e1 = bf_even(v1);
    const float *ae = a + 2 * q * MR, *ao = ae + MR;
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
      __m512 so = _mm512_set1_ps(ao[i]), se = _mm512_set1_ps(ae[i]);
      c0[i] = _mm512_fmadd_ps(o0, so, c0[i]);
      c1[i] = _mm512_fmadd_ps(o1, so, c1[i]);
      c0[i] = _mm512_fmadd_ps(e0, se, c0[i]);
      c1[i] = _mm512_fmadd_ps(e1, se, c1[i]);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < MR; i++) {
    if (i < mr_valid) {
      _mm512_mask_storeu_ps(c + i * ldc, m0, c0[i]);
      _mm512_mask_storeu_ps(c + i * ldc + 16, m1, c1[i]);
    }
  }
}

// ---- bf16 with VDPBF16PS ----

MX_T512BF static inline __m512 dp(__m512 acc, __m512i w, __m512i xpair) {
  return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)xpair);
}

MX_T512BF static void gemv_bf16_dp(const uint16_t *panels, const uint16_t *x, float *y, int64_t p0,
                                   int64_t p1, int64_t k, int64_t n_total) {
  int64_t kpad = (k + 1) & ~(int64_t)1, nq = kpad / 2, full = k / 2;
  for (int64_t p = p0; p < p1; p++) {
    const uint16_t *b = panels + p * kpad * NR;
    __m512 lo[4], hi[4];
    for (int i = 0; i < 4; i++) lo[i] = hi[i] = _mm512_setzero_ps();
    int64_t q4 = full & ~(int64_t)3;
    for (int64_t q = 0; q < q4; q += 4) {
#pragma GCC unroll 4
      for (int s = 0; s < 4; s++) {
        const uint16_t *bq = b + (q + s) * 2 * NR;
        mx_cpu_prefetch_line(bq);
        mx_cpu_prefetch_line(bq + NR);
        __m512i xv = _mm512_set1_epi32((int)load_pair(x + 2 * (q + s)));
        lo[s] = dp(lo[s], _mm512_load_si512((const void *)bq), xv);
        hi[s] = dp(hi[s], _mm512_load_si512((const void *)(bq + NR)), xv);
      }
    }
    for (int64_t q = q4; q < nq; q++) {
      int s = (int)(q & 3);
      uint32_t pair = q < full ? load_pair(x + 2 * q) : (uint32_t)x[k - 1];
      const uint16_t *bq = b + q * 2 * NR;
      __m512i xv = _mm512_set1_epi32((int)pair);
      lo[s] = dp(lo[s], _mm512_load_si512((const void *)bq), xv);
      hi[s] = dp(hi[s], _mm512_load_si512((const void *)(bq + NR)), xv);
    }
    __m512 rlo = _mm512_add_ps(_mm512_add_ps(lo[0], lo[1]), _mm512_add_ps(lo[2], lo[3]));
    __m512 rhi = _mm512_add_ps(_mm512_add_ps(hi[0], hi[1]), _mm512_add_ps(hi[2], hi[3]));
    _mm512_mask_storeu_ps(y + p * NR, mask16(n_total - p * NR), rlo);
    _mm512_mask_storeu_ps(y + p * NR + 16, mask16(n_total - p * NR - 16), rhi);
  }
}

// 12 x 32 tile, A as bf16 pairs (a[q * 12 + i]): 24 accumulators, 2 panel loads and 12
// broadcast pairs per k pair.
MX_T512BF static void ukernel_bf16_dp(int64_t kc, const void *apack, const uint16_t *b, float *c,
                                      int64_t ldc, int mr_valid, int nr_valid, bool accumulate) {
  const uint32_t *a = apack;
  __mmask16 m0 = mask16(nr_valid), m1 = mask16(nr_valid - 16);
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
  for (int i = 0; i < MR; i++) {
    if (accumulate && i < mr_valid) {
      c0[i] = _mm512_maskz_loadu_ps(m0, c + i * ldc);
      c1[i] = _mm512_maskz_loadu_ps(m1, c + i * ldc + 16);
    } else {
      c0[i] = c1[i] = _mm512_setzero_ps();
    }
  }
  for (int64_t q = 0; q < kc / 2; q++) {
    __m512i b0 = _mm512_load_si512((const void *)(b + q * 2 * NR));
    __m512i b1 = _mm512_load_si512((const void *)(b + q * 2 * NR + NR));
    const uint32_t *aq = a + q * MR;
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
      __m512i av = _mm512_set1_epi32((int)aq[i]);
      c0[i] = dp(c0[i], b0, av);
      c1[i] = dp(c1[i], b1, av);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < MR; i++) {
    if (i < mr_valid) {
      _mm512_mask_storeu_ps(c + i * ldc, m0, c0[i]);
      _mm512_mask_storeu_ps(c + i * ldc + 16, m1, c1[i]);
    }
  }
}

// ---- f16 ----

MX_T512 static inline __m512 h16(const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)p));
}

// One k of one panel into the accumulator pair (lo, hi).
MX_T512 static inline void f16_step(const uint16_t *bk, const float *xk, __m512 *lo, __m512 *hi) {
  mx_cpu_prefetch_line(bk);
  __m512 xv = _mm512_set1_ps(*xk);
  *lo = _mm512_fmadd_ps(h16(bk), xv, *lo);
  *hi = _mm512_fmadd_ps(h16(bk + 16), xv, *hi);
}

// k mod 4 selects the accumulator pair, a constant in every step as in gemv_bf16.
MX_T512 static void gemv_f16(const uint16_t *panels, const uint16_t *x, float *y, int64_t p0,
                             int64_t p1, int64_t k, int64_t n_total) {
  _Alignas(64) float xs[16];
  for (int64_t p = p0; p < p1; p++) {
    const uint16_t *b = panels + p * k * NR;
    __m512 lo[4], hi[4];
    for (int i = 0; i < 4; i++) lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t k0 = 0; k0 < k; k0 += 16) {
      int n = k - k0 < 16 ? (int)(k - k0) : 16, n4 = n & ~3;
      _mm512_store_ps(xs, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask16(n), x + k0)));
      const uint16_t *bk = b + k0 * NR;
      for (int j = 0; j < n4; j += 4) {
#pragma GCC unroll 4
        for (int s = 0; s < 4; s++) f16_step(bk + (j + s) * NR, xs + j + s, &lo[s], &hi[s]);
      }
#pragma GCC unroll 4
      for (int s = 0; s < 4; s++) {
        if (n4 + s < n) f16_step(bk + (n4 + s) * NR, xs + n4 + s, &lo[s], &hi[s]);
      }
    }
    __m512 rlo = _mm512_add_ps(_mm512_add_ps(lo[0], lo[1]), _mm512_add_ps(lo[2], lo[3]));
    __m512 rhi = _mm512_add_ps(_mm512_add_ps(hi[0], hi[1]), _mm512_add_ps(hi[2], hi[3]));
    store_rows(y + p * NR, n_total - p * NR, rlo, rhi);
  }
}

MX_T512 static void ukernel_f16(int64_t kc, const void *apack, const uint16_t *b, float *c,
                                int64_t ldc, int mr_valid, int nr_valid, bool accumulate) {
  const float *a = apack;
  __mmask16 m0 = mask16(nr_valid), m1 = mask16(nr_valid - 16);
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
  for (int i = 0; i < MR; i++) {
    if (accumulate && i < mr_valid) {
      c0[i] = _mm512_maskz_loadu_ps(m0, c + i * ldc);
      c1[i] = _mm512_maskz_loadu_ps(m1, c + i * ldc + 16);
    } else {
      c0[i] = c1[i] = _mm512_setzero_ps();
    }
  }
  for (int64_t kk = 0; kk < kc; kk++) {
    __m512 b0 = h16(b + kk * NR), b1 = h16(b + kk * NR + 16);
    const float *ak = a + kk * MR;
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
      __m512 av = _mm512_set1_ps(ak[i]);
      c0[i] = _mm512_fmadd_ps(av, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < MR; i++) {
    if (i < mr_valid) {
      _mm512_mask_storeu_ps(c + i * ldc, m0, c0[i]);
      _mm512_mask_storeu_ps(c + i * ldc + 16, m1, c1[i]);
    }
  }
}

// ---- Conversions (16 at a time, masked tail) ----

MX_T512 static void f32_to_bf16(const float *src, uint16_t *dst, int64_t n) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i round = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = mask16(n - i);
    __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, src + i));
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, round), _mm512_and_si512(hi, one)), 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, quiet));
    _mm256_mask_storeu_epi16(dst + i, m, _mm512_cvtepi32_epi16(r));
  }
}

MX_T512 static void bf16_to_f32(const uint16_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = mask16(n - i);
    __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, src + i));
    _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
  }
}

MX_T512 static void f32_to_f16(const float *src, uint16_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = mask16(n - i);
    __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(dst + i, m, h);
  }
}

MX_T512 static void f16_to_f32(const uint16_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = mask16(n - i);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + i)));
  }
}

const struct mx_cpu_lowp_kernels mx_cpu_lowp_bf16_avx512 = {
    .name = "avx512",
    .isa = MX_CPU_LOWP_AVX512,
    .et = MX_ELEM_BF16,
    .mr = MR,
    .a_pairs = false,
    .gemv = gemv_bf16,
    .ukernel = ukernel_bf16,
};

const struct mx_cpu_lowp_kernels mx_cpu_lowp_bf16_avx512bf16 = {
    .name = "avx512bf16",
    .isa = MX_CPU_LOWP_AVX512BF16,
    .et = MX_ELEM_BF16,
    .mr = MR,
    .a_pairs = true,
    .gemv = gemv_bf16_dp,
    .ukernel = ukernel_bf16_dp,
};

// AMX GEMM for whole 32s of k, the AVX-512 (emulated VDPBF16PS order) microkernel for the rest
// and for the GEMV: on the AMX machine measured (Sapphire Rapids) VDPBF16PS issues at half the
// FMA rate, so the shift + FMA GEMV decodes faster (same results: the order is the same).
const struct mx_cpu_lowp_kernels mx_cpu_lowp_bf16_amx = {
    .name = "amx",
    .isa = MX_CPU_LOWP_AMX,
    .et = MX_ELEM_BF16,
    .mr = MR,
    .a_pairs = false,
    .gemv = gemv_bf16,
    .ukernel = ukernel_bf16,
    .gemm_block = mx_cpu_lowp_amx_block,
};

const struct mx_cpu_lowp_kernels mx_cpu_lowp_f16_avx512 = {
    .name = "avx512",
    .isa = MX_CPU_LOWP_AVX512,
    .et = MX_ELEM_F16,
    .mr = MR,
    .a_pairs = false,
    .gemv = gemv_f16,
    .ukernel = ukernel_f16,
};

const mx_cpu_lowp_convert_t mx_cpu_lowp_convert_avx512 = {f32_to_bf16, bf16_to_f32, f32_to_f16,
                                                          f16_to_f32};

#endif  // __x86_64__
