// Driver of the bf16 / f16 KV attention (fused_kv.h) and its portable block step.
#include "cpu/fused_kv.h"

#include <math.h>
#include <string.h>

#include "base/half.h"
#include "cpu/fused_internal.h"
#include "cpu/kernels_lowp_internal.h"

static int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// Scratch of one thread: K block [BLOCK * round16(d)] | V block [same] | scores [TILE * BLOCK] |
// accumulators [GROUP * round16(d)] | running max [GROUP] | sums [GROUP] | 16 (threads never
// share a cache line).
size_t mx_cpu_attention_kv_scratch_floats(int64_t d, int64_t s) {
  (void)s;  // keys stream in blocks: the scratch does not grow with the context
  if (d < 1) d = 1;
  return (size_t)(2 * MX_ATTN_BLOCK * round16(d) + MX_KV_TILE * MX_ATTN_BLOCK +
                  MX_KV_GROUP * (round16(d) + 2) + 16);
}

static void widen_bf16(const uint16_t *src, float *dst, int64_t n) {
  mx_half_bf16_to_f32(src, dst, (size_t)n);
}
static void widen_f16(const uint16_t *src, float *dst, int64_t n) {
  mx_half_f16_to_f32(src, dst, (size_t)n);
}

// The portable block step (fused_scalar.c's formulas).
static void block_scalar(const float *q, const float *kf, const float *vf, int64_t nb, int64_t d,
                         float scale, float softcap, float *m, float *l, float *acc, float *sc) {
  float bm = -INFINITY;
  for (int64_t j = 0; j < nb; j++) {
    const float *kr = kf + j * d;
    float dot = 0.0f;
    for (int64_t i = 0; i < d; i++) dot += q[i] * kr[i];
    float sj = dot * scale;
    if (softcap > 0.0f) sj = tanhf(sj / softcap) * softcap;
    sc[j] = sj;
    bm = sj > bm ? sj : bm;
  }
  float mn = bm > *m ? bm : *m;
  float corr = *m == -INFINITY ? 0.0f : expf(*m - mn);
  float bl = 0.0f;
  for (int64_t j = 0; j < nb; j++) {
    sc[j] = expf(sc[j] - mn);
    bl += sc[j];
  }
  *l = *l * corr + bl;
  for (int64_t i = 0; i < d; i++) {
    float a = acc[i] * corr;
    for (int64_t j = 0; j < nb; j++) a += sc[j] * vf[j * d + i];
    acc[i] = a;
  }
  *m = mn;
}

typedef struct unit_pos {
  int64_t b, t, h, kvh;
} unit_pos_t;

// Unit u in (sequence, kv head, query, head in group) order.
static unit_pos_t unit_at(int64_t u, int64_t t, int64_t hkv, int64_t g) {
  unit_pos_t r;
  int64_t gi = u % g, rest = u / g;
  r.t = rest % t;
  rest /= t;
  r.kvh = rest % hkv;
  r.b = rest / hkv;
  r.h = r.kvh * g + gi;
  return r;
}

void mx_cpu_attention_kv(const float *q, const void *k_cache, const void *v_cache,
                         mx_elem_type_t kv, const int32_t *pos0, float *out, int64_t b, int64_t t,
                         int64_t hq, int64_t hkv, int64_t s, int64_t d, float scale, int64_t window,
                         float softcap, float *scratch, int ith, int nth) {
  if (b <= 0 || t <= 0 || hq <= 0 || hkv <= 0 || s <= 0 || d <= 0 || hq % hkv != 0) return;
  if (kv != MX_ELEM_BF16 && kv != MX_ELEM_F16 && kv != MX_ELEM_F32) return;
  bool bf = kv == MX_ELEM_BF16, f32 = kv == MX_ELEM_F32;
  mx_kv_block_fn step = block_scalar;
  mx_kv_tile_fn tile = NULL;  // NULL: step per query
  mx_kv_widen_fn conv = bf ? widen_bf16 : widen_f16;
#if defined(__x86_64__)
  switch (mx_cpu_fused_isa()) {
    case MX_CPU_ISA_AVX512:
      step = mx_cpu_kv_block_avx512;
      tile = mx_cpu_kv_tile_avx512;
      conv = bf ? mx_cpu_lowp_convert_avx512.bf16_to_f32 : mx_cpu_lowp_convert_avx512.f16_to_f32;
      break;
    case MX_CPU_ISA_AVX2:
      step = mx_cpu_kv_block_avx2;
      if (mx_cpu_features()->f16c)
        conv = bf ? mx_cpu_lowp_convert_avx2.bf16_to_f32 : mx_cpu_lowp_convert_avx2.f16_to_f32;
      break;
    default:
      break;
  }
#endif
  const uint16_t *kc = k_cache, *vc = v_cache;
  const float *kc32 = k_cache, *vc32 = v_cache;
  const int64_t d16 = round16(d), B = MX_ATTN_BLOCK;
  float *kf = scratch + (size_t)ith * mx_cpu_attention_kv_scratch_floats(d, s);
  float *vf = kf + B * d16, *sc = vf + B * d16, *acc = sc + MX_KV_TILE * B;
  float *mrun = acc + MX_KV_GROUP * d16, *lrun = mrun + MX_KV_GROUP;
  int64_t g = hq / hkv, n_units = b * t * hq;
  int64_t u0 = n_units * ith / nth, u1 = n_units * (ith + 1) / nth;
  int64_t lo[MX_KV_GROUP], hi[MX_KV_GROUP];
  for (int64_t u = u0; u < u1;) {
    // A group: consecutive units of one (sequence, kv head), at most MX_KV_GROUP.
    unit_pos_t first = unit_at(u, t, hkv, g);
    int64_t n = 0, smin = INT64_MAX, smax = -1;
    while (u + n < u1 && n < MX_KV_GROUP) {
      unit_pos_t p = unit_at(u + n, t, hkv, g);
      if (p.b != first.b || p.kvh != first.kvh) break;
      int64_t pos = (int64_t)pos0[p.b] + p.t;
      lo[n] = window > 0 ? pos - window + 1 : 0;
      if (lo[n] < 0) lo[n] = 0;
      hi[n] = pos < s - 1 ? pos : s - 1;
      if (hi[n] >= lo[n]) {
        smin = lo[n] < smin ? lo[n] : smin;
        smax = hi[n] > smax ? hi[n] : smax;
      }
      mrun[n] = -INFINITY;
      lrun[n] = 0.0f;
      memset(acc + n * d16, 0, (size_t)d * sizeof(float));
      n++;
    }
    size_t kv_off = (size_t)((first.b * hkv + first.kvh) * s) * (size_t)d;
    for (int64_t s0 = smax >= 0 ? smin / B * B : 0; smax >= 0 && s0 <= smax; s0 += B) {
      int64_t c0 = s0 > smin ? s0 : smin, c1 = s0 + B - 1 < smax ? s0 + B - 1 : smax;
      // f32 caches are read in place (the block stays in L1 for the whole group).
      const float *kb = kc32 + kv_off + (size_t)(c0 * d), *vb = vc32 + kv_off + (size_t)(c0 * d);
      if (!f32) {
        conv(kc + kv_off + (size_t)(c0 * d), kf, (c1 - c0 + 1) * d);
        conv(vc + kv_off + (size_t)(c0 * d), vf, (c1 - c0 + 1) * d);
        kb = kf;
        vb = vf;
      }
      for (int64_t j = 0; j < n;) {
        int64_t a = lo[j] > s0 ? lo[j] : s0, e = hi[j] < s0 + B - 1 ? hi[j] : s0 + B - 1;
        if (a > e) {
          j++;
          continue;
        }
        unit_pos_t p = unit_at(u + j, t, hkv, g);
        const float *qr = q + ((p.b * t + p.t) * hq + p.h) * d;
        // A tile: the following queries of the same position (the next heads of the group,
        // whose rows follow in q), which see the same keys of this block.
        int64_t nr = 1;
        while (tile && j + nr < n && nr < MX_KV_TILE) {
          unit_pos_t pn = unit_at(u + j + nr, t, hkv, g);
          if (pn.t != p.t || pn.h != p.h + nr) break;
          int64_t an = lo[j + nr] > s0 ? lo[j + nr] : s0;
          int64_t en = hi[j + nr] < s0 + B - 1 ? hi[j + nr] : s0 + B - 1;
          if (an != a || en != e) break;
          nr++;
        }
        const float *kr = kb + (a - c0) * d, *vr = vb + (a - c0) * d;
        if (tile)
          tile(qr, nr, kr, vr, e - a + 1, d, scale, softcap, &mrun[j], &lrun[j], acc + j * d16, d16,
               sc, f32);
        else
          step(qr, kr, vr, e - a + 1, d, scale, softcap, &mrun[j], &lrun[j], acc + j * d16, sc);
        j += nr;
      }
    }
    for (int64_t j = 0; j < n; j++) {
      unit_pos_t p = unit_at(u + j, t, hkv, g);
      float *o_row = out + ((p.b * t + p.t) * hq + p.h) * d;
      if (hi[j] < lo[j]) {
        memset(o_row, 0, (size_t)d * sizeof(float));
        continue;
      }
      float inv = 1.0f / lrun[j];
      for (int64_t i = 0; i < d; i++) o_row[i] = acc[j * d16 + i] * inv;
    }
    u += n;
  }
}
