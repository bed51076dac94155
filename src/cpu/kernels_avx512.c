// AVX-512 (F/BW/VL/DQ + FMA) f32 kernels, compiled with function-level target attributes so the
// rest of the build stays portable; only called after mx_cpu_features() said yes.
#include "kernels_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/prefetch.h"

#define MX_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

enum { NR = 32, MR = 12, GEMV_ROWS = 4 };

MX_T512 static inline __mmask16 tail_mask(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

// Four rows at a time (4 weight streams, 8 FMA chains). Per row: acc_a takes the even 16-blocks,
// acc_b the odd ones, a lone last full block goes to acc_a and the masked tail to acc_b; the
// result is reduce(acc_a + acc_b). Missing rows of the last block repeat the last row, so each
// row is summed by exactly the same instruction sequence wherever it sits.
MX_T512 static void gemv_rows(const float *w, int64_t ldw, const float *x, float *y, int64_t n,
                              int64_t k) {
  int64_t k32 = k & ~(int64_t)31;
  int64_t k16 = k & ~(int64_t)15;
  __mmask16 mt = tail_mask(k - k16);
  for (int64_t r = 0; r < n; r += GEMV_ROWS) {
    const float *row[GEMV_ROWS];
    for (int i = 0; i < GEMV_ROWS; i++) row[i] = w + (r + i < n ? r + i : n - 1) * ldw;
    __m512 a[GEMV_ROWS], b[GEMV_ROWS];
    for (int i = 0; i < GEMV_ROWS; i++) a[i] = b[i] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k32; kk += 32) {
      __m512 x0 = _mm512_loadu_ps(x + kk), x1 = _mm512_loadu_ps(x + kk + 16);
#pragma GCC unroll 4
      for (int i = 0; i < GEMV_ROWS; i++) {
        a[i] = _mm512_fmadd_ps(_mm512_loadu_ps(row[i] + kk), x0, a[i]);
        b[i] = _mm512_fmadd_ps(_mm512_loadu_ps(row[i] + kk + 16), x1, b[i]);
      }
    }
    if (k16 > k32) {
      __m512 x0 = _mm512_loadu_ps(x + k32);
#pragma GCC unroll 4
      for (int i = 0; i < GEMV_ROWS; i++) {
        a[i] = _mm512_fmadd_ps(_mm512_loadu_ps(row[i] + k32), x0, a[i]);
      }
    }
    if (mt) {
      __m512 xt = _mm512_maskz_loadu_ps(mt, x + k16);
#pragma GCC unroll 4
      for (int i = 0; i < GEMV_ROWS; i++) {
        b[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mt, row[i] + k16), xt, b[i]);
      }
    }
    for (int i = 0; i < GEMV_ROWS && r + i < n; i++) {
      y[r + i] = _mm512_reduce_add_ps(_mm512_add_ps(a[i], b[i]));
    }
  }
}

// One panel (32 rows, one contiguous stream) at a time; k mod 4 selects one of four accumulator
// pairs (8 FMA chains), combined as (p0 + p1) + (p2 + p3).
MX_T512 static void gemv_panels(const float *panels, const float *x, float *y, int64_t p0,
                                int64_t p1, int64_t k, int64_t n_total) {
  int64_t k4 = k & ~(int64_t)3;
  for (int64_t p = p0; p < p1; p++) {
    const float *b = panels + p * k * NR;
    __m512 lo[4], hi[4];
    for (int i = 0; i < 4; i++) lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k4; kk += 4) {
      // The 8 lines of this step by cpu/prefetch.h's policy, as the quantized and bf16 GEMVs:
      // the stream then runs past a streaming sum's bandwidth (bench/cpu_kernels;
      // docs/performance.md, "Kernel measurements").
#pragma GCC unroll 8
      for (int l = 0; l < 8; l++) mx_cpu_prefetch_line(b + kk * NR + l * 16);
#pragma GCC unroll 4
      for (int i = 0; i < 4; i++) {
        __m512 xv = _mm512_set1_ps(x[kk + i]);
        lo[i] = _mm512_fmadd_ps(_mm512_load_ps(b + (kk + i) * NR), xv, lo[i]);
        hi[i] = _mm512_fmadd_ps(_mm512_load_ps(b + (kk + i) * NR + 16), xv, hi[i]);
      }
    }
    for (int64_t kk = k4; kk < k; kk++) {
      __m512 xv = _mm512_set1_ps(x[kk]);
      lo[0] = _mm512_fmadd_ps(_mm512_load_ps(b + kk * NR), xv, lo[0]);
      hi[0] = _mm512_fmadd_ps(_mm512_load_ps(b + kk * NR + 16), xv, hi[0]);
    }
    __m512 rlo = _mm512_add_ps(_mm512_add_ps(lo[0], lo[1]), _mm512_add_ps(lo[2], lo[3]));
    __m512 rhi = _mm512_add_ps(_mm512_add_ps(hi[0], hi[1]), _mm512_add_ps(hi[2], hi[3]));
    int64_t rows = n_total - p * NR < NR ? n_total - p * NR : NR;
    _mm512_mask_storeu_ps(y + p * NR, tail_mask(rows), rlo);
    _mm512_mask_storeu_ps(y + p * NR + 16, tail_mask(rows - 16 > 0 ? rows - 16 : 0), rhi);
  }
}

// 12 x 32 register tile: 24 accumulators, 2 panel loads and 12 broadcasts per k.
MX_T512 static void gemm_ukernel(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                 int mr_valid, int nr_valid, bool accumulate) {
  __mmask16 m0 = tail_mask(nr_valid), m1 = tail_mask(nr_valid > 16 ? nr_valid - 16 : 0);
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
    __m512 b0 = _mm512_load_ps(b + kk * NR), b1 = _mm512_load_ps(b + kk * NR + 16);
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

// Columns j of an 8 x 8 block (r[i] = row i, 8 consecutive k) land in o[j] = (r0[j] .. r7[j]):
// unpack pairs of rows, shuffle pairs of pairs, then swap 128-bit lanes.
MX_T512 static inline void transpose8(const __m256 r[8], __m256 o[8]) {
  __m256 t[8], s8[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; h++) {
    __m256 a0 = t[4 * h], a1 = t[4 * h + 1], a2 = t[4 * h + 2], a3 = t[4 * h + 3];
    s8[4 * h + 0] = _mm256_shuffle_ps(a0, a2, _MM_SHUFFLE(1, 0, 1, 0));
    s8[4 * h + 1] = _mm256_shuffle_ps(a0, a2, _MM_SHUFFLE(3, 2, 3, 2));
    s8[4 * h + 2] = _mm256_shuffle_ps(a1, a3, _MM_SHUFFLE(1, 0, 1, 0));
    s8[4 * h + 3] = _mm256_shuffle_ps(a1, a3, _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int j = 0; j < 4; j++) {
    o[j] = _mm256_permute2f128_ps(s8[j], s8[4 + j], 0x20);
    o[4 + j] = _mm256_permute2f128_ps(s8[j], s8[4 + j], 0x31);
  }
}

// 12 rows of X -> apack[kk*12 + i], 8 k at a time: rows 0-7 by an 8 x 8 transpose, rows 8-11 by
// two 4 x 4 transposes (one per 128-bit lane); missing rows read as zero.
MX_T512 static void pack_a(const float *x, int64_t ldx, int mr_valid, int64_t kc, float *apack) {
  int64_t k8 = kc & ~(int64_t)7;
  for (int64_t kk = 0; kk < k8; kk += 8) {
    __m256 r[12];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
      r[i] = i < mr_valid ? _mm256_loadu_ps(x + i * ldx + kk) : _mm256_setzero_ps();
    }
    __m256 o[8];
    transpose8(r, o);
    __m256 t0 = _mm256_unpacklo_ps(r[8], r[9]), t1 = _mm256_unpackhi_ps(r[8], r[9]);
    __m256 t2 = _mm256_unpacklo_ps(r[10], r[11]), t3 = _mm256_unpackhi_ps(r[10], r[11]);
    __m256 q[4] = {_mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
                   _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                   _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                   _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2))};
    float *dst = apack + kk * MR;
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
      _mm256_storeu_ps(dst + j * MR, o[j]);
      _mm256_storeu_ps(dst + (j + 4) * MR, o[j + 4]);
      _mm_storeu_ps(dst + j * MR + 8, _mm256_castps256_ps128(q[j]));
      _mm_storeu_ps(dst + (j + 4) * MR + 8, _mm256_extractf128_ps(q[j], 1));
    }
  }
  for (int64_t kk = k8; kk < kc; kk++) {
    for (int i = 0; i < MR; i++) apack[kk * MR + i] = i < mr_valid ? x[i * ldx + kk] : 0.0f;
  }
}

const struct mx_cpu_kernels mx_cpu_kernels_avx512 = {
    .isa = MX_CPU_ISA_AVX512,
    .nr = NR,
    .mr = MR,
    .gemv_rows = gemv_rows,
    .gemv_panels = gemv_panels,
    .gemm_ukernel = gemm_ukernel,
    .pack_a = pack_a,
};

#endif  // __x86_64__
