// mx.mla's fused kernel (mla.h): the absorbed form over the latent and rotated-key caches, an
// online softmax over blocks of MX_MLA_BLOCK visible slots. Dots and updates use eight partial
// sums / lanes in a fixed order, so the result does not depend on the thread split.
#include "cpu/mla.h"

#include <math.h>
#include <string.h>

#include "base/half.h"
#include "cpu/fused.h"

static int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

size_t mx_cpu_mla_scratch_floats(const mx_cpu_mla_shape_t *sh) {
  size_t g = MX_MLA_GROUP, r = (size_t)round16(sh->r), dr = (size_t)round16(sh->dr);
  size_t widen = sh->kv == MX_ELEM_F32 ? 0 : (size_t)MX_MLA_BLOCK * (r + dr);
  return 2 * g * r + g * MX_MLA_BLOCK + 2 * g + widen;
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

// The two loops that take the time, per instruction set: the portable ones above (the compiler
// keeps them at the build's baseline, SSE2 on x86-64) or AVX-512's (the fused kernels' choice,
// mx_cpu_fused_isa(): the machine's best, or the one a test selected).
typedef struct mla_ops {
  float (*dot)(const float *a, const float *b, int64_t n);
  void (*axpy)(float *y, float a, const float *x, int64_t n);
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
#endif

static mla_ops_t pick_ops(void) {
#if defined(__x86_64__)
  if (mx_cpu_fused_isa() == MX_CPU_ISA_AVX512) return (mla_ops_t){dot_avx512, axpy_avx512};
#endif
  return (mla_ops_t){dot, axpy};
}

static void widen(mx_elem_type_t et, const uint16_t *src, float *dst, int64_t n) {
  if (et == MX_ELEM_BF16) {
    for (int64_t i = 0; i < n; i++) dst[i] = mx_bf16_to_f32(src[i]);
  } else {
    for (int64_t i = 0; i < n; i++) dst[i] = mx_f16_to_f32(src[i]);
  }
}

// The heads h0 .. h0 + ng - 1 of query (bi, ti).
static void unit(const mla_ops_t *ops, const mx_cpu_mla_shape_t *sh, const float *q_nope,
                 const float *q_rot, const void *lat, const void *rot, const float *kv_b,
                 const int32_t *pos0, float *out, float *scr, int64_t bi, int64_t ti, int64_t h0,
                 int64_t ng) {
  const int64_t R = sh->r, Dr = sh->dr, Dn = sh->dn, Dv = sh->dv, S = sh->s;
  const int64_t r16 = round16(R), dr16 = round16(Dr);
  float *q_lat = scr, *acc = q_lat + MX_MLA_GROUP * r16, *sc = acc + MX_MLA_GROUP * r16;
  float *m = sc + MX_MLA_GROUP * MX_MLA_BLOCK, *l = m + MX_MLA_GROUP, *wbuf = l + MX_MLA_GROUP;
  const int64_t row = bi * sh->t + ti;
  const int64_t p = (int64_t)pos0[bi] + ti;
  const int64_t n = p < 0 ? 0 : (p + 1 < S ? p + 1 : S);
  for (int64_t g = 0; g < ng; g++) {
    const int64_t h = h0 + g;
    const float *qn = q_nope + (row * sh->h + h) * Dn;
    float *ql = q_lat + g * r16;
    memset(ql, 0, sizeof(float) * (size_t)R);
    for (int64_t d = 0; d < Dn; d++) ops->axpy(ql, qn[d], kv_b + (h * (Dn + Dv) + d) * R, R);
    memset(acc + g * r16, 0, sizeof(float) * (size_t)R);
    m[g] = -INFINITY;
    l[g] = 0;
  }
  const bool f32 = sh->kv == MX_ELEM_F32;
  for (int64_t s0 = 0; s0 < n; s0 += MX_MLA_BLOCK) {
    const int64_t nb = n - s0 < MX_MLA_BLOCK ? n - s0 : MX_MLA_BLOCK;
    const float *cb, *rb;  // the block's latent rows (stride cs) and rotated keys (stride rs)
    int64_t cs = R, rs = Dr;
    if (f32) {
      cb = (const float *)lat + (bi * S + s0) * R;
      rb = (const float *)rot + (bi * S + s0) * Dr;
    } else {
      const uint16_t *lc = (const uint16_t *)lat + (bi * S + s0) * R;
      const uint16_t *rc = (const uint16_t *)rot + (bi * S + s0) * Dr;
      float *wr = wbuf + MX_MLA_BLOCK * r16;
      for (int64_t j = 0; j < nb; j++) {
        widen(sh->kv, lc + j * R, wbuf + j * r16, R);
        widen(sh->kv, rc + j * Dr, wr + j * dr16, Dr);
      }
      cb = wbuf;
      rb = wr;
      cs = r16;
      rs = dr16;
    }
    for (int64_t j = 0; j < nb; j++) {
      for (int64_t g = 0; g < ng; g++) {
        const float *qr = q_rot + (row * sh->h + h0 + g) * Dr;
        float s = ops->dot(q_lat + g * r16, cb + j * cs, R) + ops->dot(qr, rb + j * rs, Dr);
        sc[g * MX_MLA_BLOCK + j] = s * sh->scale;
      }
    }
    for (int64_t g = 0; g < ng; g++) {
      float *sg = sc + g * MX_MLA_BLOCK, mb = sg[0];
      for (int64_t j = 1; j < nb; j++) mb = sg[j] > mb ? sg[j] : mb;
      float mn = m[g] > mb ? m[g] : mb;
      if (m[g] != -INFINITY && m[g] != mn) {
        float corr = expf(m[g] - mn);
        l[g] *= corr;
        float *ag = acc + g * r16;
        for (int64_t i = 0; i < R; i++) ag[i] *= corr;
      }
      m[g] = mn;
      for (int64_t j = 0; j < nb; j++) {
        sg[j] = expf(sg[j] - mn);
        l[g] += sg[j];
      }
    }
    for (int64_t j = 0; j < nb; j++)
      for (int64_t g = 0; g < ng; g++)
        ops->axpy(acc + g * r16, sc[g * MX_MLA_BLOCK + j], cb + j * cs, R);
  }
  for (int64_t g = 0; g < ng; g++) {
    const int64_t h = h0 + g;
    float *o = out + (row * sh->h + h) * Dv, *ag = acc + g * r16;
    if (l[g] == 0) {
      memset(o, 0, sizeof(float) * (size_t)Dv);
      continue;
    }
    float inv = 1.0f / l[g];
    for (int64_t i = 0; i < R; i++) ag[i] *= inv;
    for (int64_t v = 0; v < Dv; v++) o[v] = ops->dot(kv_b + (h * (Dn + Dv) + Dn + v) * R, ag, R);
  }
}

void mx_cpu_mla(const mx_cpu_mla_shape_t *sh, const float *q_nope, const float *q_rot,
                const void *lat, const void *rot, const float *kv_b, const int32_t *pos0,
                float *out, float *scratch, int ith, int nth) {
  const int64_t bt = sh->b * sh->t, H = sh->h;
  if (bt <= 0 || H <= 0) return;
  // Enough head groups per query for every thread to have a unit, each at most MX_MLA_GROUP.
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
    int64_t q = u / groups, h0 = (u % groups) * G;
    int64_t ng = H - h0 < G ? H - h0 : G;
    unit(&o, sh, q_nope, q_rot, lat, rot, kv_b, pos0, out, scr, q / sh->t, q % sh->t, h0, ng);
  }
}
