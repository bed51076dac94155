// AVX-512 block step of the bf16 / f16 KV attention (fused_kv.h): the online softmax of
// fused_avx512.c (its exp16 / tanh16) on a block of K and V the driver widened to f32.
#include <math.h>

#include "cpu/fused_internal.h"
#include "cpu/fused_kv.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/fused_math_avx512.h"
#include "cpu/prefetch.h"

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
  int64_t j = 0;
  for (; j + 4 <= nb; j += 4) dot4(q, kf + j * d, d, sc + j);
  for (; j < nb; j++) sc[j] = dot1(q, kf + j * d, d);
  float corr = softmax_block16(sc, nb, scale, softcap, m, l);
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
}

const mx_kv_block_fn mx_cpu_kv_block_avx512 = block;

// Lane j of the result = the sum of the 16 lanes of v[j] (a transpose-and-add tree: 45
// shuffles and adds for 16 dot products instead of 16 full reductions).
MX_T512 static inline __m512 sum16x16(const __m512 v[16]) {
  __m512 a[8], b[4];
  for (int k = 0; k < 8; k++)  // per 128-bit lane: x0+x2, y0+y2, x1+x3, y1+y3
    a[k] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * k], v[2 * k + 1]),
                         _mm512_unpackhi_ps(v[2 * k], v[2 * k + 1]));
  for (int k = 0; k < 4; k++) {  // per 128-bit lane: the partial sums of four vectors
    __m512d x = _mm512_castps_pd(a[2 * k]), y = _mm512_castps_pd(a[2 * k + 1]);
    b[k] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  __m512 c0 = _mm512_add_ps(_mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(3, 1, 3, 1)));
  __m512 c1 = _mm512_add_ps(_mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(c0, c1, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(c0, c1, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Software prefetch in the K and V streams of a tile that reads the caches in place
// (cpu/prefetch.h's policy, per line read): the hardware prefetcher alone leaves a decode
// attention's cache stream short of the bandwidth, and of the distances tried the policy's
// L1 / L2 split measured best (bench/cpu_attn; docs/performance.md, "Kernel measurements").
// sc[j] = q . k_j for the keys j < nb <= 16 (rows of d), one accumulator each: rows past nb
// read the last row (valid memory) and their sums are not stored. pf: prefetch_line ahead of
// every line read.
MX_T512 static void scores16(const float *q, const float *kf, int64_t nb, int64_t d, float *sc,
                             bool pf) {
  const float *kr[16];
  for (int k = 0; k < 16; k++) kr[k] = kf + (k < nb ? k : nb - 1) * d;
  __m512 acc[16];
  for (int k = 0; k < 16; k++) acc[k] = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; i += 16) {
    __mmask16 m = mask16(d - i);
    __m512 qv = _mm512_maskz_loadu_ps(m, q + i);
    for (int k = 0; k < 16; k++)
      acc[k] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, kr[k] + i), qv, acc[k]);
    if (pf)
      for (int k = 0; k < 16; k++) mx_cpu_prefetch_line(kr[k] + i);
  }
  _mm512_mask_storeu_ps(sc, mask16(nb), sum16x16(acc));
}

// scores16 for 16 whole keys and a head size D that is a multiple of 16 and, at the calls that
// matter, a constant: the D / 16 chunks unroll and the rows are fixed offsets from kf (a tile of
// 3 queries x 64 keys at D = 64 took 0.7x the time of scores16's, single thread, hot).
MX_T512 static inline __attribute__((always_inline)) void scores16_whole(const float *q,
                                                                         const float *kf,
                                                                         const int64_t D, float *sc,
                                                                         bool pf) {
  __m512 acc[16];
  for (int k = 0; k < 16; k++) acc[k] = _mm512_setzero_ps();
  for (int64_t i = 0; i < D; i += 16) {
    __m512 qv = _mm512_loadu_ps(q + i);
    for (int k = 0; k < 16; k++)
      acc[k] = _mm512_fmadd_ps(_mm512_loadu_ps(kf + k * D + i), qv, acc[k]);
    if (pf)
      for (int k = 0; k < 16; k++) mx_cpu_prefetch_line(kf + k * D + i);
  }
  _mm512_storeu_ps(sc, sum16x16(acc));
}

// 16 bf16 / f16 values at p widened to f32 (exact for both).
MX_T512 static inline __attribute__((always_inline)) __m512 widen16(const uint16_t *p,
                                                                    const mx_elem_type_t kv) {
  __m256i h = _mm256_loadu_si256((const __m256i *)p);
  if (kv == MX_ELEM_BF16)
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  return _mm512_cvtph_ps(h);
}

// The keys [j0, j0 + n) of a bf16 / f16 K (rows of D, n * D a multiple of 32) widened into
// wbuf, prefetching the cache ahead: the tile's queries then score them from L1.
MX_T512 static inline __attribute__((always_inline)) void widen_keys(const uint16_t *k, int64_t j0,
                                                                     int64_t n, const int64_t D,
                                                                     const mx_elem_type_t kv,
                                                                     float *wbuf) {
  const uint16_t *src = k + j0 * D;
  for (int64_t i = 0; i < n * D; i += 32) {  // one 64-byte line of the cache per step
    mx_cpu_prefetch_line(src + i);
    _mm512_storeu_ps(wbuf + i, widen16(src + i, kv));
    _mm512_storeu_ps(wbuf + i + 16, widen16(src + i + 16, kv));
  }
}

// acc[r][0..64) = acc[r] * corr[r] + sum_j p[r][j] v_j[0..64) for NR queries (r < NR): each
// row of V (elements of type kv from vf, rows of d) is loaded once for all of them (pf: and
// prefetched ahead). p: row r at p + r * MX_KV_STREAM_BLOCK; acc: row r at acc + r * as.
// Called with a constant NR and kv so the accumulators stay in registers.
MX_T512 static inline __attribute__((always_inline)) void vsum64(const int nr, const void *vf,
                                                                 const mx_elem_type_t kv,
                                                                 int64_t nb, int64_t d,
                                                                 const float *p, const float *corr,
                                                                 float *acc, int64_t as, bool pf) {
  __m512 a[4][4];
  for (int r = 0; r < nr; r++) {
    __m512 c = _mm512_set1_ps(corr[r]);
    for (int k = 0; k < 4; k++) a[r][k] = _mm512_mul_ps(_mm512_loadu_ps(acc + r * as + 16 * k), c);
  }
  for (int64_t j = 0; j < nb; j++) {
    __m512 v0, v1, v2, v3;
    if (kv == MX_ELEM_F32) {
      const float *vr = (const float *)vf + j * d;
      v0 = _mm512_loadu_ps(vr);
      v1 = _mm512_loadu_ps(vr + 16);
      v2 = _mm512_loadu_ps(vr + 32);
      v3 = _mm512_loadu_ps(vr + 48);
      if (pf)
        for (int k = 0; k < 4; k++) mx_cpu_prefetch_line(vr + 16 * k);
    } else {
      const uint16_t *vr = (const uint16_t *)vf + j * d;
      v0 = widen16(vr, kv);
      v1 = widen16(vr + 16, kv);
      v2 = widen16(vr + 32, kv);
      v3 = widen16(vr + 48, kv);
      if (pf) {
        mx_cpu_prefetch_line(vr);
        mx_cpu_prefetch_line(vr + 32);
      }
    }
    for (int r = 0; r < nr; r++) {
      __m512 pj = _mm512_set1_ps(p[r * MX_KV_STREAM_BLOCK + j]);
      a[r][0] = _mm512_fmadd_ps(pj, v0, a[r][0]);
      a[r][1] = _mm512_fmadd_ps(pj, v1, a[r][1]);
      a[r][2] = _mm512_fmadd_ps(pj, v2, a[r][2]);
      a[r][3] = _mm512_fmadd_ps(pj, v3, a[r][3]);
    }
  }
  for (int r = 0; r < nr; r++)
    for (int k = 0; k < 4; k++) _mm512_storeu_ps(acc + r * as + 16 * k, a[r][k]);
}

// nq queries against one key block (fused_kv.h, mx_kv_tile_fn), with the head size D and the
// element type kv constants where tile() knows them. The scores go 16 keys at a time through
// every query of the tile (the 16 rows of K stay in L1 for the others; bf16 / f16 rows widened
// into wbuf first), then each query's softmax step, then V.
MX_T512 static inline __attribute__((always_inline)) void tile_d(
    const float *q, int64_t nq, const void *kf, const void *vf, const mx_elem_type_t kv, int64_t nb,
    const int64_t D, float scale, float softcap, float *m, float *l, float *acc, int64_t as,
    float *sc, float *wbuf, bool stream) {
  const int64_t ps = MX_KV_STREAM_BLOCK;  // row stride of the scores in sc
  const size_t esz = kv == MX_ELEM_F32 ? sizeof(float) : sizeof(uint16_t);
  float corr[MX_KV_TILE];
  for (int64_t j0 = 0; j0 < nb; j0 += 16) {
    const int64_t n = nb - j0 < 16 ? nb - j0 : 16;
    const float *kr = (const float *)kf + j0 * D;
    bool pf = stream;
    if (kv != MX_ELEM_F32) {  // widened once for the tile, read from L1 below
      widen_keys((const uint16_t *)kf, j0, n, D, kv, wbuf);
      kr = wbuf;
      pf = false;
    }
    for (int64_t r = 0; r < nq; r++) {
      if (D % 16 == 0 && n == 16)
        scores16_whole(q + r * D, kr, D, sc + r * ps + j0, pf && r == 0);
      else
        scores16(q + r * D, kr, n, D, sc + r * ps + j0, pf && r == 0);
    }
  }
  for (int64_t r = 0; r < nq; r++)
    corr[r] = softmax_block16(sc + r * ps, nb, scale, softcap, &m[r], &l[r]);
  int64_t i = 0;
  for (; i + 64 <= D; i += 64) {
    const void *vi = (const char *)vf + (size_t)i * esz;
    for (int64_t r0 = 0; r0 < nq; r0 += 4) {
      const float *p = sc + r0 * ps;
      float *ar = acc + r0 * as + i;
      switch (nq - r0 < 4 ? nq - r0 : 4) {
        case 4:
          vsum64(4, vi, kv, nb, D, p, corr + r0, ar, as, stream && r0 == 0);
          break;
        case 3:
          vsum64(3, vi, kv, nb, D, p, corr + r0, ar, as, stream && r0 == 0);
          break;
        case 2:
          vsum64(2, vi, kv, nb, D, p, corr + r0, ar, as, stream && r0 == 0);
          break;
        default:
          vsum64(1, vi, kv, nb, D, p, corr + r0, ar, as, stream && r0 == 0);
          break;
      }
    }
  }
  // The lanes past the last 64 (f32 only: 16-bit caches come here with D % 64 == 0).
  const float *vf32 = (const float *)vf;
  for (; i < D; i += 16) {
    __mmask16 mk = mask16(D - i);
    for (int64_t r = 0; r < nq; r++) {
      const float *p = sc + r * ps;
      __m512 a0 =
          _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, acc + r * as + i), _mm512_set1_ps(corr[r]));
      for (int64_t j = 0; j < nb; j++)
        a0 = _mm512_fmadd_ps(_mm512_set1_ps(p[j]), _mm512_maskz_loadu_ps(mk, vf32 + j * D + i), a0);
      _mm512_mask_storeu_ps(acc + r * as + i, mk, a0);
    }
  }
}

// The common head sizes get their own copy with D constant, per element type.
#define MX_KV_TILE_D(KV)                                                                   \
  do {                                                                                     \
    if (d == 64)                                                                           \
      tile_d(q, nq, kf, vf, KV, nb, 64, scale, softcap, m, l, acc, as, sc, wbuf, stream);  \
    else if (d == 128)                                                                     \
      tile_d(q, nq, kf, vf, KV, nb, 128, scale, softcap, m, l, acc, as, sc, wbuf, stream); \
    else                                                                                   \
      tile_d(q, nq, kf, vf, KV, nb, d, scale, softcap, m, l, acc, as, sc, wbuf, stream);   \
  } while (0)

MX_T512 static void tile(const float *q, int64_t nq, const void *kf, const void *vf,
                         mx_elem_type_t kv, int64_t nb, int64_t d, float scale, float softcap,
                         float *m, float *l, float *acc, int64_t as, float *sc, float *wbuf,
                         bool stream) {
  if (kv == MX_ELEM_BF16)
    MX_KV_TILE_D(MX_ELEM_BF16);
  else if (kv == MX_ELEM_F16)
    MX_KV_TILE_D(MX_ELEM_F16);
  else
    MX_KV_TILE_D(MX_ELEM_F32);
}
#undef MX_KV_TILE_D

const mx_kv_tile_fn mx_cpu_kv_tile_avx512 = tile;

#endif  // __x86_64__
