// Driver of the bf16 / f16 KV attention (fused_kv.h) and its portable unit.
#include "cpu/fused_kv.h"

#include <math.h>
#include <string.h>

#include "base/half.h"
#include "cpu/fused_internal.h"
#include "cpu/kernels_lowp_internal.h"

static int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// Scratch of one thread: scores [BLOCK] | acc [round16(d)] | K block [BLOCK * round16(d)] |
// V block [BLOCK * round16(d)] | 16 (threads never share a cache line).
size_t mx_cpu_attention_kv_scratch_floats(int64_t d, int64_t s) {
  (void)s;
  if (d < 1) d = 1;
  return (size_t)(MX_ATTN_BLOCK + round16(d) + 2 * MX_ATTN_BLOCK * round16(d) + 16);
}

static void widen_bf16(const uint16_t *src, float *dst, int64_t n) {
  mx_half_bf16_to_f32(src, dst, (size_t)n);
}
static void widen_f16(const uint16_t *src, float *dst, int64_t n) {
  mx_half_f16_to_f32(src, dst, (size_t)n);
}

// The portable unit: the block of K and V widened into scratch, then fused_scalar.c's math.
static void unit_scalar(const float *q, const uint16_t *k, const uint16_t *v, mx_kv_widen_fn conv,
                        float *out, int64_t lo, int64_t hi, int64_t d, float scale, float softcap,
                        float *scratch) {
  float *sc = scratch, *acc = scratch + MX_ATTN_BLOCK, *kf = acc + round16(d);
  float *vf = kf + MX_ATTN_BLOCK * round16(d);
  for (int64_t i = 0; i < d; i++) acc[i] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  for (int64_t s0 = lo; s0 <= hi; s0 += MX_ATTN_BLOCK) {
    int64_t nb = hi + 1 - s0 < MX_ATTN_BLOCK ? hi + 1 - s0 : MX_ATTN_BLOCK;
    conv(k + s0 * d, kf, nb * d);
    conv(v + s0 * d, vf, nb * d);
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
    float mn = bm > m ? bm : m;
    float corr = m == -INFINITY ? 0.0f : expf(m - mn);
    float bl = 0.0f;
    for (int64_t j = 0; j < nb; j++) {
      sc[j] = expf(sc[j] - mn);
      bl += sc[j];
    }
    l = l * corr + bl;
    for (int64_t i = 0; i < d; i++) {
      float a = acc[i] * corr;
      for (int64_t j = 0; j < nb; j++) a += sc[j] * vf[j * d + i];
      acc[i] = a;
    }
    m = mn;
  }
  float inv = 1.0f / l;
  for (int64_t i = 0; i < d; i++) out[i] = acc[i] * inv;
}

void mx_cpu_attention_kv(const float *q, const void *k_cache, const void *v_cache,
                         mx_elem_type_t kv, const int32_t *pos0, float *out, int64_t b, int64_t t,
                         int64_t hq, int64_t hkv, int64_t s, int64_t d, float scale, int64_t window,
                         float softcap, float *scratch, int ith, int nth) {
  if (b <= 0 || t <= 0 || hq <= 0 || hkv <= 0 || s <= 0 || d <= 0 || hq % hkv != 0) return;
  if (kv != MX_ELEM_BF16 && kv != MX_ELEM_F16) return;
  bool bf = kv == MX_ELEM_BF16;
  mx_kv_unit_fn unit = unit_scalar;
  mx_kv_widen_fn conv = bf ? widen_bf16 : widen_f16;
#if defined(__x86_64__)
  switch (mx_cpu_fused_isa()) {
    case MX_CPU_ISA_AVX512:
      unit = mx_cpu_kv_unit_avx512;
      conv = bf ? mx_cpu_lowp_convert_avx512.bf16_to_f32 : mx_cpu_lowp_convert_avx512.f16_to_f32;
      break;
    case MX_CPU_ISA_AVX2:
      unit = mx_cpu_kv_unit_avx2;
      if (mx_cpu_features()->f16c)
        conv = bf ? mx_cpu_lowp_convert_avx2.bf16_to_f32 : mx_cpu_lowp_convert_avx2.f16_to_f32;
      break;
    default:
      break;
  }
#endif
  const uint16_t *kc = k_cache, *vc = v_cache;
  float *scr = scratch + (size_t)ith * mx_cpu_attention_kv_scratch_floats(d, s);
  int64_t g = hq / hkv, u0 = b * t * hq * ith / nth, u1 = b * t * hq * (ith + 1) / nth;
  for (int64_t u = u0; u < u1; u++) {
    int64_t h = u % hq, bt = u / hq, bi = bt / t, ti = bt % t;
    int64_t p = (int64_t)pos0[bi] + ti;
    int64_t lo = window > 0 ? p - window + 1 : 0;
    if (lo < 0) lo = 0;
    int64_t hi = p < s - 1 ? p : s - 1;
    float *o_row = out + u * d;
    if (hi < lo) {
      memset(o_row, 0, (size_t)d * sizeof(float));
      continue;
    }
    size_t kv_off = (size_t)((bi * hkv + h / g) * s) * (size_t)d;
    unit(q + u * d, kc + kv_off, vc + kv_off, conv, o_row, lo, hi, d, scale, softcap, scr);
  }
}
