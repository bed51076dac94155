// mx.mla's fused kernel (mla.h): the absorbed form over the latent and rotated-key caches, an
// online softmax over blocks of MX_MLA_BLOCK visible slots. Dots and updates use eight partial
// sums / lanes in a fixed order, so the result does not depend on the thread split.
#include "cpu/mla.h"

#include <math.h>
#include <string.h>

#include "base/half.h"
#include "cpu/fused.h"

static int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// Scratch of one unit (see unit): q_lat and acc for each (query, head) of a tile and group, the
// scores of one key block per head, m and l per (query, head), the widened block.
size_t mx_cpu_mla_scratch_floats(const mx_cpu_mla_shape_t *sh) {
  size_t g = MX_MLA_GROUP, tq = MX_MLA_TILE, r = (size_t)round16(sh->r);
  size_t dr = (size_t)round16(sh->dr);
  size_t widen = sh->kv == MX_ELEM_F32 ? 0 : (size_t)MX_MLA_BLOCK * (r + dr);
  return 2 * tq * g * r + g * MX_MLA_BLOCK + 2 * tq * g + widen;
}

static float dot(const float *a, const float *b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
  for (int j = 0; i < n; i++, j++) acc[j] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// y += a * x
static void axpy(float *y, float a, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

// The projections of nq queries through a head's rows of kv_b, each element summed exactly as
// the loops of one query alone do (so a query's result does not depend on its tile):
// proj_in: out[q][0..R) = sum over d < Dn of x[q][d] w[d][0..R) (x rows xs apart, out rows os
// apart; out zeroed before), one axpy per d in d order; proj_out: out[q][v] = dot(w[v], x[q])
// for v < Dv (x rows xs apart, out rows os apart).
static void proj_in(const float *x, int64_t xs, int64_t nq, const float *w, int64_t dn, int64_t r,
                    float *out, int64_t os) {
  for (int64_t d = 0; d < dn; d++)
    for (int64_t q = 0; q < nq; q++) axpy(out + q * os, x[q * xs + d], w + d * r, r);
}

static void proj_out(const float *w, int64_t dv, int64_t r, const float *x, int64_t xs, int64_t nq,
                     float *out, int64_t os) {
  for (int64_t v = 0; v < dv; v++)
    for (int64_t q = 0; q < nq; q++) out[q * os + v] = dot(w + v * r, x + q * xs, r);
}

// acc[0..R) += sum over j < nb of p[j] c_j (rows cs apart), one axpy per key in key order.
static void lat_sum(float *acc, const float *p, const float *c, int64_t cs, int64_t nb, int64_t r) {
  for (int64_t j = 0; j < nb; j++) axpy(acc, p[j], c + j * cs, r);
}

static void widen(mx_elem_type_t et, const uint16_t *src, float *dst, int64_t n) {
  if (et == MX_ELEM_BF16) {
    for (int64_t i = 0; i < n; i++) dst[i] = mx_bf16_to_f32(src[i]);
  } else {
    for (int64_t i = 0; i < n; i++) dst[i] = mx_f16_to_f32(src[i]);
  }
}

// The loops that take the time, per instruction set: the portable ones above (the compiler
// keeps them at the build's baseline, SSE2 on x86-64) or AVX-512's (the fused kernels' choice,
// mx_cpu_fused_isa(): the machine's best, or the one a test selected).
typedef struct mla_ops {
  float (*dot)(const float *a, const float *b, int64_t n);
  void (*axpy)(float *y, float a, const float *x, int64_t n);
  void (*proj_in)(const float *x, int64_t xs, int64_t nq, const float *w, int64_t dn, int64_t r,
                  float *out, int64_t os);
  void (*proj_out)(const float *w, int64_t dv, int64_t r, const float *x, int64_t xs, int64_t nq,
                   float *out, int64_t os);
  void (*lat_sum)(float *acc, const float *p, const float *c, int64_t cs, int64_t nb, int64_t r);
  // dst[0..n) = the bf16 / f16 values src[0..n) as f32 (exact).
  void (*widen)(mx_elem_type_t et, const uint16_t *src, float *dst, int64_t n);
} mla_ops_t;

#if defined(__x86_64__)
#include <immintrin.h>
#define MLA_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

MLA_T512 static float dot_avx512(const float *a, const float *b, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
  }
  for (; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i), s0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

MLA_T512 static void axpy_avx512(float *y, float a, const float *x, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(
        y + i, k,
        _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, y + i)));
  }
}

MLA_T512 static inline __mmask16 mask_from(int64_t left) {
  return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
}

// proj_in for NQ queries: 64 columns of out at a time in registers for all of them, each row of
// w loaded once (axpy_avx512's FMA per element and d order).
MLA_T512 static inline __attribute__((always_inline)) void proj_in_q(const int NQ, const float *x,
                                                                     int64_t xs, const float *w,
                                                                     int64_t dn, int64_t r,
                                                                     float *out, int64_t os) {
  for (int64_t i = 0; i < r; i += 64) {
    __mmask16 k[4];
    for (int c = 0; c < 4; c++) k[c] = mask_from(r - i - 16 * c);
    __m512 acc[4][4];
    for (int q = 0; q < NQ; q++)
      for (int c = 0; c < 4; c++) acc[q][c] = _mm512_setzero_ps();
    for (int64_t d = 0; d < dn; d++) {
      __m512 wv[4];
      for (int c = 0; c < 4; c++) wv[c] = _mm512_maskz_loadu_ps(k[c], w + d * r + i + 16 * c);
      for (int q = 0; q < NQ; q++) {
        __m512 b = _mm512_set1_ps(x[q * xs + d]);
        for (int c = 0; c < 4; c++) acc[q][c] = _mm512_fmadd_ps(b, wv[c], acc[q][c]);
      }
    }
    for (int q = 0; q < NQ; q++)
      for (int c = 0; c < 4; c++) _mm512_mask_storeu_ps(out + q * os + i + 16 * c, k[c], acc[q][c]);
  }
}

MLA_T512 static void proj_in_avx512(const float *x, int64_t xs, int64_t nq, const float *w,
                                    int64_t dn, int64_t r, float *out, int64_t os) {
  for (int64_t q = 0; q < nq; q += 4) {
    switch (nq - q < 4 ? nq - q : 4) {
      case 4:
        proj_in_q(4, x + q * xs, xs, w, dn, r, out + q * os, os);
        break;
      case 3:
        proj_in_q(3, x + q * xs, xs, w, dn, r, out + q * os, os);
        break;
      case 2:
        proj_in_q(2, x + q * xs, xs, w, dn, r, out + q * os, os);
        break;
      default:
        proj_in_q(1, x + q * xs, xs, w, dn, r, out + q * os, os);
        break;
    }
  }
}

// proj_out for NQ queries: dot_avx512's two accumulators per query, each chunk of w's row loaded
// once for all of them.
MLA_T512 static inline __attribute__((always_inline)) void proj_out_q(const int NQ, const float *w,
                                                                      int64_t dv, int64_t r,
                                                                      const float *x, int64_t xs,
                                                                      float *out, int64_t os) {
  for (int64_t v = 0; v < dv; v++) {
    const float *wr = w + v * r;
    __m512 s0[4], s1[4];
    for (int q = 0; q < NQ; q++) s0[q] = s1[q] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= r; i += 32) {
      __m512 a0 = _mm512_loadu_ps(wr + i), a1 = _mm512_loadu_ps(wr + i + 16);
      for (int q = 0; q < NQ; q++) {
        s0[q] = _mm512_fmadd_ps(a0, _mm512_loadu_ps(x + q * xs + i), s0[q]);
        s1[q] = _mm512_fmadd_ps(a1, _mm512_loadu_ps(x + q * xs + i + 16), s1[q]);
      }
    }
    for (; i < r; i += 16) {
      __mmask16 k = mask_from(r - i);
      __m512 a0 = _mm512_maskz_loadu_ps(k, wr + i);
      for (int q = 0; q < NQ; q++)
        s0[q] = _mm512_fmadd_ps(a0, _mm512_maskz_loadu_ps(k, x + q * xs + i), s0[q]);
    }
    for (int q = 0; q < NQ; q++)
      out[q * os + v] = _mm512_reduce_add_ps(_mm512_add_ps(s0[q], s1[q]));
  }
}

MLA_T512 static void proj_out_avx512(const float *w, int64_t dv, int64_t r, const float *x,
                                     int64_t xs, int64_t nq, float *out, int64_t os) {
  for (int64_t q = 0; q < nq; q += 4) {
    switch (nq - q < 4 ? nq - q : 4) {
      case 4:
        proj_out_q(4, w, dv, r, x + q * xs, xs, out + q * os, os);
        break;
      case 3:
        proj_out_q(3, w, dv, r, x + q * xs, xs, out + q * os, os);
        break;
      case 2:
        proj_out_q(2, w, dv, r, x + q * xs, xs, out + q * os, os);
        break;
      default:
        proj_out_q(1, w, dv, r, x + q * xs, xs, out + q * os, os);
        break;
    }
  }
}

// lat_sum with 64 accumulators in registers across the block's keys (axpy_avx512 loaded and
// stored them once per key).
MLA_T512 static void lat_sum_avx512(float *acc, const float *p, const float *c, int64_t cs,
                                    int64_t nb, int64_t r) {
  for (int64_t i = 0; i < r; i += 64) {
    __mmask16 k[4];
    __m512 a[4];
    for (int q = 0; q < 4; q++) {
      k[q] = mask_from(r - i - 16 * q);
      a[q] = _mm512_maskz_loadu_ps(k[q], acc + i + 16 * q);
    }
    for (int64_t j = 0; j < nb; j++) {
      __m512 pj = _mm512_set1_ps(p[j]);
      for (int q = 0; q < 4; q++)
        a[q] = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(k[q], c + j * cs + i + 16 * q), a[q]);
    }
    for (int q = 0; q < 4; q++) _mm512_mask_storeu_ps(acc + i + 16 * q, k[q], a[q]);
  }
}

MLA_T512 static void widen_avx512(mx_elem_type_t et, const uint16_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = mask_from(n - i);
    __m256i h = _mm256_maskz_loadu_epi16(k, src + i);
    __m512 f = et == MX_ELEM_BF16
                   ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                   : _mm512_cvtph_ps(h);
    _mm512_mask_storeu_ps(dst + i, k, f);
  }
}
#endif

static mla_ops_t pick_ops(void) {
#if defined(__x86_64__)
  if (mx_cpu_fused_isa() == MX_CPU_ISA_AVX512)
    return (mla_ops_t){dot_avx512,      axpy_avx512,    proj_in_avx512,
                       proj_out_avx512, lat_sum_avx512, widen_avx512};
#endif
  return (mla_ops_t){dot, axpy, proj_in, proj_out, lat_sum, widen};
}

// The heads h0 .. h0 + ng - 1 of the queries t0 .. t0 + nq - 1 of sequence bi (nq <=
// MX_MLA_TILE). The two projections through kv_b run for the tile's queries together, each row
// of kv_b (R floats) loaded once for all of them: one query alone reads a head's whole kv_b,
// (Dn + Dv) R floats, from beyond L2 at real shapes, and that bounded a prefill. Every element
// still sums in the order of one query alone (d ascending for q_lat, dot's order for the
// output), so a query's result does not depend on its tile.
static void unit(const mla_ops_t *ops, const mx_cpu_mla_shape_t *sh, const float *q_nope,
                 const float *q_rot, const void *lat, const void *rot, const float *kv_b,
                 const int32_t *pos0, float *out, float *scr, int64_t bi, int64_t t0, int64_t nq,
                 int64_t h0, int64_t ng) {
  const int64_t R = sh->r, Dr = sh->dr, Dn = sh->dn, Dv = sh->dv, S = sh->s;
  const int64_t r16 = round16(R), dr16 = round16(Dr), qg = nq * ng;
  float *q_lat = scr, *acc = q_lat + MX_MLA_TILE * MX_MLA_GROUP * r16;
  float *sc = acc + MX_MLA_TILE * MX_MLA_GROUP * r16, *m = sc + MX_MLA_GROUP * MX_MLA_BLOCK;
  float *l = m + MX_MLA_TILE * MX_MLA_GROUP, *wbuf = l + MX_MLA_TILE * MX_MLA_GROUP;
  // Row (query q, head g) of q_lat / acc / m / l: q * ng + g.
  for (int64_t i = 0; i < qg; i++) {
    memset(q_lat + i * r16, 0, sizeof(float) * (size_t)R);
    memset(acc + i * r16, 0, sizeof(float) * (size_t)R);
    m[i] = -INFINITY;
    l[i] = 0;
  }
  for (int64_t g = 0; g < ng; g++) {
    const int64_t h = h0 + g;
    ops->proj_in(q_nope + ((bi * sh->t + t0) * sh->h + h) * Dn, sh->h * Dn, nq,
                 kv_b + h * (Dn + Dv) * R, Dn, R, q_lat + g * r16, ng * r16);
  }
  // Keys visible to the tile's queries (the last sees the most); each block of them is read
  // (and widened) once for the tile, then walked by each query that sees into it.
  int64_t n_max = 0;
  for (int64_t q = 0; q < nq; q++) {
    const int64_t p = (int64_t)pos0[bi] + t0 + q, n = p < 0 ? 0 : (p + 1 < S ? p + 1 : S);
    n_max = n > n_max ? n : n_max;
  }
  const bool f32 = sh->kv == MX_ELEM_F32;
  for (int64_t s0 = 0; s0 < n_max; s0 += MX_MLA_BLOCK) {
    const int64_t nb_max = n_max - s0 < MX_MLA_BLOCK ? n_max - s0 : MX_MLA_BLOCK;
    const float *cb, *rb;  // the block's latent rows (stride cs) and rotated keys (stride rs)
    int64_t cs = R, rs = Dr;
    if (f32) {
      cb = (const float *)lat + (bi * S + s0) * R;
      rb = (const float *)rot + (bi * S + s0) * Dr;
    } else {
      const uint16_t *lc = (const uint16_t *)lat + (bi * S + s0) * R;
      const uint16_t *rc = (const uint16_t *)rot + (bi * S + s0) * Dr;
      float *wr = wbuf + MX_MLA_BLOCK * r16;
      for (int64_t j = 0; j < nb_max; j++) {
        ops->widen(sh->kv, lc + j * R, wbuf + j * r16, R);
        ops->widen(sh->kv, rc + j * Dr, wr + j * dr16, Dr);
      }
      cb = wbuf;
      rb = wr;
      cs = r16;
      rs = dr16;
    }
    for (int64_t q = 0; q < nq; q++) {
      const int64_t row = bi * sh->t + t0 + q;
      const int64_t p = (int64_t)pos0[bi] + t0 + q;
      const int64_t n = p < 0 ? 0 : (p + 1 < S ? p + 1 : S);
      if (n <= s0) continue;
      const int64_t nb = n - s0 < MX_MLA_BLOCK ? n - s0 : MX_MLA_BLOCK;
      float *qlq = q_lat + q * ng * r16, *aq = acc + q * ng * r16, *mq = m + q * ng;
      float *lq = l + q * ng;
      for (int64_t j = 0; j < nb; j++) {
        for (int64_t g = 0; g < ng; g++) {
          const float *qr = q_rot + (row * sh->h + h0 + g) * Dr;
          float s = ops->dot(qlq + g * r16, cb + j * cs, R) + ops->dot(qr, rb + j * rs, Dr);
          sc[g * MX_MLA_BLOCK + j] = s * sh->scale;
        }
      }
      for (int64_t g = 0; g < ng; g++) {
        float *sg = sc + g * MX_MLA_BLOCK, mb = sg[0];
        for (int64_t j = 1; j < nb; j++) mb = sg[j] > mb ? sg[j] : mb;
        float mn = mq[g] > mb ? mq[g] : mb;
        if (mq[g] != -INFINITY && mq[g] != mn) {
          float corr = expf(mq[g] - mn);
          lq[g] *= corr;
          float *ag = aq + g * r16;
          for (int64_t i = 0; i < R; i++) ag[i] *= corr;
        }
        mq[g] = mn;
        for (int64_t j = 0; j < nb; j++) {
          sg[j] = expf(sg[j] - mn);
          lq[g] += sg[j];
        }
      }
      for (int64_t g = 0; g < ng; g++)
        ops->lat_sum(aq + g * r16, sc + g * MX_MLA_BLOCK, cb, cs, nb, R);
    }
  }
  for (int64_t i = 0; i < qg; i++) {
    if (l[i] == 0) continue;
    float inv = 1.0f / l[i], *ag = acc + i * r16;
    for (int64_t e = 0; e < R; e++) ag[e] *= inv;
  }
  for (int64_t g = 0; g < ng; g++) {
    const int64_t h = h0 + g;
    float *o = out + ((bi * sh->t + t0) * sh->h + h) * Dv;
    ops->proj_out(kv_b + (h * (Dn + Dv) + Dn) * R, Dv, R, acc + g * r16, ng * r16, nq, o,
                  sh->h * Dv);
    for (int64_t q = 0; q < nq; q++)  // a query that saw no key: zeros, whatever kv_b holds
      if (l[q * ng + g] == 0) memset(o + q * sh->h * Dv, 0, sizeof(float) * (size_t)Dv);
  }
}

void mx_cpu_mla(const mx_cpu_mla_shape_t *sh, const float *q_nope, const float *q_rot,
                const void *lat, const void *rot, const float *kv_b, const int32_t *pos0,
                float *out, float *scratch, int ith, int nth) {
  const int64_t H = sh->h, tiles = (sh->t + MX_MLA_TILE - 1) / MX_MLA_TILE;
  const int64_t bt = sh->b * tiles;
  if (bt <= 0 || H <= 0) return;
  // Enough head groups per tile for every thread to have a unit, each at most MX_MLA_GROUP.
  int64_t groups = (nth + bt - 1) / bt;
  if (groups > H) groups = H;
  if (groups < 1) groups = 1;
  int64_t G = (H + groups - 1) / groups;
  if (G > MX_MLA_GROUP) G = MX_MLA_GROUP;
  groups = (H + G - 1) / G;
  const int64_t units = bt * groups;
  const int64_t lo = units * ith / nth, hi = units * (ith + 1) / nth;
  float *scr = scratch + (size_t)ith * mx_cpu_mla_scratch_floats(sh);
  const mla_ops_t o = pick_ops();
  for (int64_t u = lo; u < hi; u++) {
    int64_t tile = u / groups, h0 = (u % groups) * G;
    int64_t ng = H - h0 < G ? H - h0 : G;
    int64_t bi = tile / tiles, t0 = (tile % tiles) * MX_MLA_TILE;
    int64_t nq = sh->t - t0 < MX_MLA_TILE ? sh->t - t0 : MX_MLA_TILE;
    unit(&o, sh, q_nope, q_rot, lat, rot, kv_b, pos0, out, scr, bi, t0, nq, h0, ng);
  }
}
