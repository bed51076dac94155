// AVX-512 variant of the fused kernels (function-level target attributes; called only when
// mx_cpu_kernels_get(MX_CPU_ISA_AVX512) says the machine can).
#include <math.h>

#include "cpu/fused_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/fused_math_avx512.h"

MX_T512 static inline __mmask16 tail_mask(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

MX_T512 static void rms_row(const float *x, const float *w, float *y, int64_t h, float eps,
                            float offset) {
  __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= h; i += 32) {
    __m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
    a = _mm512_fmadd_ps(x0, x0, a);
    b = _mm512_fmadd_ps(x1, x1, b);
  }
  for (; i < h; i += 16) {
    __m512 x0 = _mm512_maskz_loadu_ps(tail_mask(h - i), x + i);
    a = _mm512_fmadd_ps(x0, x0, a);
  }
  float ss = _mm512_reduce_add_ps(_mm512_add_ps(a, b));
  __m512 inv = _mm512_set1_ps(1.0f / sqrtf(ss / (float)h + eps));
  __m512 off = _mm512_set1_ps(offset);
  for (i = 0; i < h; i += 16) {
    __mmask16 m = tail_mask(h - i);
    __m512 x0 = _mm512_maskz_loadu_ps(m, x + i);
    __m512 w0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m, w + i), off);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_mul_ps(x0, inv), w0));
  }
}

// Four dot products q . k_r (r < 4), each one FMA chain over the 16-blocks of d (masked tail),
// then a reduce: a key's score does not depend on which group it is computed in.
MX_T512 static void dot4(const float *q, const float *k0, const float *k1, const float *k2,
                         const float *k3, int64_t d, float *res) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i < d; i += 16) {
    __mmask16 m = tail_mask(d - i);
    __m512 qv = _mm512_maskz_loadu_ps(m, q + i);
    a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, k0 + i), qv, a0);
    a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, k1 + i), qv, a1);
    a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, k2 + i), qv, a2);
    a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, k3 + i), qv, a3);
  }
  res[0] = _mm512_reduce_add_ps(a0);
  res[1] = _mm512_reduce_add_ps(a1);
  res[2] = _mm512_reduce_add_ps(a2);
  res[3] = _mm512_reduce_add_ps(a3);
}

// Eight dot products at once, each key the same chain as in dot4.
MX_T512 static void dot8(const float *q, const float *k, int64_t d, float *res) {
  __m512 a[8];
#pragma GCC unroll 8
  for (int r = 0; r < 8; r++) a[r] = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; i += 16) {
    __mmask16 m = tail_mask(d - i);
    __m512 qv = _mm512_maskz_loadu_ps(m, q + i);
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++)
      a[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, k + r * d + i), qv, a[r]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < 8; r++) res[r] = _mm512_reduce_add_ps(a[r]);
}

MX_T512 static void attn_unit(const float *q, const float *k, const float *v, float *out,
                              int64_t lo, int64_t hi, int64_t d, float scale, float softcap,
                              float *scratch) {
  float *sc = scratch, *acc = scratch + MX_ATTN_BLOCK;
  for (int64_t i = 0; i < d; i += 16)
    _mm512_mask_storeu_ps(acc + i, tail_mask(d - i), _mm512_setzero_ps());
  float m = -INFINITY, l = 0.0f;
  for (int64_t s0 = lo; s0 <= hi; s0 += MX_ATTN_BLOCK) {
    int64_t nb = hi + 1 - s0 < MX_ATTN_BLOCK ? hi + 1 - s0 : MX_ATTN_BLOCK;
    const float *kb = k + s0 * d, *vb = v + s0 * d;
    int64_t j = 0;
    for (; j + 8 <= nb; j += 8) dot8(q, kb + j * d, d, sc + j);
    for (; j + 4 <= nb; j += 4) {
      dot4(q, kb + j * d, kb + (j + 1) * d, kb + (j + 2) * d, kb + (j + 3) * d, d, sc + j);
    }
    for (; j < nb; j++) {  // the same chain as dot4 (lanes 1-3 unused)
      float r4[4];
      const float *kr = kb + j * d;
      dot4(q, kr, kr, kr, kr, d, r4);
      sc[j] = r4[0];
    }
    float corr = softmax_block16(sc, nb, scale, softcap, &m, &l);
    __m512 vc = _mm512_set1_ps(corr);
    int64_t i = 0;
    for (; i + 128 <= d; i += 128) {  // eight 16-blocks of the accumulator in registers
      __m512 a[8];
#pragma GCC unroll 8
      for (int r = 0; r < 8; r++) a[r] = _mm512_mul_ps(_mm512_loadu_ps(acc + i + 16 * r), vc);
      for (j = 0; j < nb; j++) {
        __m512 pj = _mm512_set1_ps(sc[j]);
        const float *vr = vb + j * d + i;
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) a[r] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vr + 16 * r), a[r]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < 8; r++) _mm512_storeu_ps(acc + i + 16 * r, a[r]);
    }
    for (; i + 64 <= d; i += 64) {  // four 16-blocks of the accumulator in registers
      __m512 a0 = _mm512_mul_ps(_mm512_loadu_ps(acc + i), vc);
      __m512 a1 = _mm512_mul_ps(_mm512_loadu_ps(acc + i + 16), vc);
      __m512 a2 = _mm512_mul_ps(_mm512_loadu_ps(acc + i + 32), vc);
      __m512 a3 = _mm512_mul_ps(_mm512_loadu_ps(acc + i + 48), vc);
      for (j = 0; j < nb; j++) {
        __m512 pj = _mm512_set1_ps(sc[j]);
        const float *vr = vb + j * d + i;
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
      __mmask16 mk = tail_mask(d - i);
      __m512 a0 = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, acc + i), vc);
      for (j = 0; j < nb; j++) {
        a0 = _mm512_fmadd_ps(_mm512_set1_ps(sc[j]), _mm512_maskz_loadu_ps(mk, vb + j * d + i), a0);
      }
      _mm512_mask_storeu_ps(acc + i, mk, a0);
    }
  }
  __m512 inv = _mm512_set1_ps(1.0f / l);
  for (int64_t i = 0; i < d; i += 16) {
    __mmask16 mk = tail_mask(d - i);
    _mm512_mask_storeu_ps(out + i, mk, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, acc + i), inv));
  }
}

// Scores of keys k[0..15] (rows at stride d) against the 16 transposed query rows qt[i][16]:
// acc[j] lane r = q_r . k_j, one FMA chain per key in i order. Inlined for constant d the key
// addresses are constant displacements from one pointer (no register pressure).
MX_T512 static inline __attribute__((always_inline)) void scores16(const float *qt, const float *k,
                                                                   int64_t d, __m512 acc[16]) {
#pragma GCC unroll 16
  for (int jj = 0; jj < 16; jj++) acc[jj] = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; i++) {
    __m512 qv = _mm512_loadu_ps(qt + i * MX_ATTN_TILE_ROWS);
#pragma GCC unroll 16
    for (int jj = 0; jj < 16; jj++)
      acc[jj] = _mm512_fmadd_ps(_mm512_set1_ps(k[jj * d + i]), qv, acc[jj]);
  }
}

// The same for keys jg .. jg+15 of a block of nb keys at kb, any d: keys past the block's end
// repeat its last key (valid data; their lanes are dropped by the caller). Same chains.
MX_T512 static void scores16_clamped(const float *qt, const float *kb, int64_t jg, int64_t nb,
                                     int64_t d, __m512 acc[16]) {
  const float *kr[16];
#pragma GCC unroll 16
  for (int jj = 0; jj < 16; jj++) kr[jj] = kb + (jg + jj < nb ? jg + jj : nb - 1) * d;
#pragma GCC unroll 16
  for (int jj = 0; jj < 16; jj++) acc[jj] = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; i++) {
    __m512 qv = _mm512_loadu_ps(qt + i * MX_ATTN_TILE_ROWS);
#pragma GCC unroll 16
    for (int jj = 0; jj < 16; jj++)
      acc[jj] = _mm512_fmadd_ps(_mm512_set1_ps(kr[jj][i]), qv, acc[jj]);
  }
}

// Prefill attention on a tile of up to 16 query rows sharing one kv head (mx_attn_tile_t), with
// the rows in the 16 lanes of a vector: the queries are transposed once per tile (qt[i][r]);
// scores of 16 keys at a time come from 16 independent FMA chains (one per key, broadcasting
// K[key][i] against qt[i]); the running max / sum and the validity masks are per lane, so the
// online softmax needs no horizontal reduction. The weighted V sum accumulates os[r][:] for
// 4 rows x 64 dims in registers, broadcasting each row's probability against V's rows.
MX_T512 static void attn_tile(const mx_attn_tile_t *t, float *scratch) {
  enum { L = MX_ATTN_TILE_ROWS, B = MX_ATTN_BLOCK };
  const int64_t d = t->d, dp = (d + 15) & ~(int64_t)15;
  const int rows = t->rows;
  float *qt = scratch, *os = qt + L * dp, *pt = os + L * dp;
  for (int64_t i = 0; i < d; i++)
    for (int r = 0; r < L; r++) qt[i * L + r] = r < rows ? t->q[r][i] : 0.0f;
  for (int64_t i = 0; i < L * dp; i += 16) _mm512_storeu_ps(os + i, _mm512_setzero_ps());
  int32_t lo16[L], hi16[L];
  int64_t lo_max = 0, hi_min = INT64_MAX;  // keys in [lo_max, hi_min]: seen by every row
  for (int r = 0; r < L; r++) {
    lo16[r] = r < rows ? t->lo[r] : 1;  // lanes past the tile never see a key
    hi16[r] = r < rows ? t->hi[r] : 0;
    if (r < rows && t->lo[r] > lo_max) lo_max = t->lo[r];
    if (r < rows && t->hi[r] < hi_min) hi_min = t->hi[r];
  }
  const __mmask16 all_rows = (__mmask16)((1u << rows) - 1u);
  const __m512i vlo = _mm512_loadu_si512(lo16), vhi = _mm512_loadu_si512(hi16);
  const __m512 vscale = _mm512_set1_ps(t->scale), vcap = _mm512_set1_ps(t->softcap);
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  __m512 m = ninf, l = _mm512_setzero_ps();
  __mmask16 valid[B];
  _Alignas(64) float corr16[L];
  for (int64_t s0 = t->klo; s0 <= t->khi; s0 += B) {
    const int64_t nb = t->khi + 1 - s0 < B ? t->khi + 1 - s0 : B;
    const float *kb = t->k + s0 * d, *vb = t->v + s0 * d;
    // Blocks every row sees whole (all but the causal diagonal and window edges) skip the
    // per-key range tests.
    const bool inner = s0 >= lo_max && s0 + nb - 1 <= hi_min;
    __m512 vmax = ninf;
    for (int64_t jg = 0; jg < nb; jg += 16) {
      __m512 acc[16];
      const float *kg = kb + jg * d;
      bool full = jg + 16 <= nb;
      // The common head sizes get constant key strides.
      if (full && d == 64)
        scores16(qt, kg, 64, acc);
      else if (full && d == 128)
        scores16(qt, kg, 128, acc);
      else if (full && d == 80)
        scores16(qt, kg, 80, acc);
      else if (full && d == 96)
        scores16(qt, kg, 96, acc);
      else if (full && d == 256)
        scores16(qt, kg, 256, acc);
      else
        scores16_clamped(qt, kb, jg, nb, d, acc);
#pragma GCC unroll 16
      for (int jj = 0; jj < 16; jj++) {
        int64_t j = jg + jj;
        if (j >= nb) break;
        __m512 x = _mm512_mul_ps(acc[jj], vscale);
        if (t->softcap > 0.0f) x = _mm512_mul_ps(tanh16(_mm512_div_ps(x, vcap)), vcap);
        __mmask16 vm = all_rows;
        if (!inner) {
          __m512i kp = _mm512_set1_epi32((int32_t)(s0 + j));
          vm = _mm512_cmp_epi32_mask(vlo, kp, _MM_CMPINT_LE) &
               _mm512_cmp_epi32_mask(kp, vhi, _MM_CMPINT_LE);
        }
        valid[j] = vm;
        _mm512_storeu_ps(pt + j * L, x);
        vmax = _mm512_mask_max_ps(vmax, vm, vmax, x);
      }
    }
    // Online softmax per lane; lanes that have seen no key yet keep m = -inf, l = 0, and get
    // corr = 0 (never exp(-inf - -inf)).
    __m512 mn = _mm512_max_ps(m, vmax);
    __mmask16 seen = _mm512_cmp_ps_mask(m, ninf, _CMP_NEQ_OQ);
    __m512 corr = _mm512_maskz_mov_ps(seen, exp16(_mm512_sub_ps(m, mn)));
    __m512 lsum = _mm512_setzero_ps();
    for (int64_t j = 0; j < nb; j++) {
      __m512 e =
          _mm512_maskz_mov_ps(valid[j], exp16(_mm512_sub_ps(_mm512_loadu_ps(pt + j * L), mn)));
      _mm512_storeu_ps(pt + j * L, e);
      lsum = _mm512_add_ps(lsum, e);
    }
    l = _mm512_fmadd_ps(l, corr, lsum);
    m = mn;
    _mm512_store_ps(corr16, corr);
    for (int r0 = 0; r0 < rows; r0 += 4) {
      int64_t i = 0;
      for (; i + 64 <= d; i += 64) {  // 4 rows x 64 dims in 16 registers
        __m512 a[4][4];
#pragma GCC unroll 4
        for (int rr = 0; rr < 4; rr++) {
          __m512 c = _mm512_set1_ps(corr16[r0 + rr]);
#pragma GCC unroll 4
          for (int vv = 0; vv < 4; vv++)
            a[rr][vv] = _mm512_mul_ps(_mm512_loadu_ps(os + (r0 + rr) * dp + i + 16 * vv), c);
        }
        for (int64_t j = 0; j < nb; j++) {
          const float *vr = vb + j * d + i;
          __m512 v0 = _mm512_loadu_ps(vr), v1 = _mm512_loadu_ps(vr + 16);
          __m512 v2 = _mm512_loadu_ps(vr + 32), v3 = _mm512_loadu_ps(vr + 48);
#pragma GCC unroll 4
          for (int rr = 0; rr < 4; rr++) {
            __m512 p = _mm512_set1_ps(pt[j * L + r0 + rr]);
            a[rr][0] = _mm512_fmadd_ps(p, v0, a[rr][0]);
            a[rr][1] = _mm512_fmadd_ps(p, v1, a[rr][1]);
            a[rr][2] = _mm512_fmadd_ps(p, v2, a[rr][2]);
            a[rr][3] = _mm512_fmadd_ps(p, v3, a[rr][3]);
          }
        }
#pragma GCC unroll 4
        for (int rr = 0; rr < 4; rr++)
#pragma GCC unroll 4
          for (int vv = 0; vv < 4; vv++)
            _mm512_storeu_ps(os + (r0 + rr) * dp + i + 16 * vv, a[rr][vv]);
      }
      for (; i < d; i += 16) {  // the rest, one masked 16-block at a time
        __mmask16 mk = tail_mask(d - i);
        __m512 a[4];
#pragma GCC unroll 4
        for (int rr = 0; rr < 4; rr++)
          a[rr] = _mm512_mul_ps(_mm512_loadu_ps(os + (r0 + rr) * dp + i),
                                _mm512_set1_ps(corr16[r0 + rr]));
        for (int64_t j = 0; j < nb; j++) {
          __m512 vv = _mm512_maskz_loadu_ps(mk, vb + j * d + i);
#pragma GCC unroll 4
          for (int rr = 0; rr < 4; rr++)
            a[rr] = _mm512_fmadd_ps(_mm512_set1_ps(pt[j * L + r0 + rr]), vv, a[rr]);
        }
#pragma GCC unroll 4
        for (int rr = 0; rr < 4; rr++) _mm512_storeu_ps(os + (r0 + rr) * dp + i, a[rr]);
      }
    }
  }
  _Alignas(64) float l16[L];
  _mm512_store_ps(l16, l);
  for (int r = 0; r < rows; r++) {
    float *o = t->out[r];
    if (!(l16[r] > 0.0f)) {  // saw no key
      for (int64_t i = 0; i < d; i++) o[i] = 0.0f;
      continue;
    }
    __m512 inv = _mm512_set1_ps(1.0f / l16[r]);
    for (int64_t i = 0; i < d; i += 16) {
      __mmask16 mk = tail_mask(d - i);
      _mm512_mask_storeu_ps(o + i, mk, _mm512_mul_ps(_mm512_loadu_ps(os + r * dp + i), inv));
    }
  }
}

MX_T512 static void gated(const float *gate, const float *up, float *out, int64_t n, int act) {
  __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = tail_mask(n - i);
    __m512 g = _mm512_maskz_loadu_ps(mk, gate + i), u = _mm512_maskz_loadu_ps(mk, up + i), a;
    if (act == 1) {
      __m512 g3 = _mm512_mul_ps(_mm512_mul_ps(g, g), g);
      __m512 inner = _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), g3, g);
      __m512 th = tanh16(_mm512_mul_ps(_mm512_set1_ps(MX_GELU_C), inner));
      a = _mm512_mul_ps(_mm512_mul_ps(half, g), _mm512_add_ps(one, th));
    } else {
      a = _mm512_div_ps(g, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    }
    _mm512_mask_storeu_ps(out + i, mk, _mm512_mul_ps(a, u));
  }
}

MX_T512 static void tanh_n(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, mk, tanh16(_mm512_maskz_loadu_ps(mk, x + i)));
  }
}

// As logistic_n of fused_scalar.c: from e = exp(-|x|), 1 / (1 + e), times e where x < 0.
MX_T512 static void logistic_n(const float *x, float *y, int64_t n) {
  __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = tail_mask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(mk, x + i);
    __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(v)));
    __m512 r = _mm512_div_ps(one, _mm512_add_ps(one, e));
    __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    _mm512_mask_storeu_ps(y + i, mk, _mm512_mask_mul_ps(r, neg, e, r));
  }
}

const mx_cpu_fused_ops_t mx_cpu_fused_avx512 = {.isa = MX_CPU_ISA_AVX512,
                                                .rms_row = rms_row,
                                                .attn_unit = attn_unit,
                                                .attn_tile = attn_tile,
                                                .gated = gated,
                                                .tanh_n = tanh_n,
                                                .logistic_n = logistic_n};

#endif  // __x86_64__
