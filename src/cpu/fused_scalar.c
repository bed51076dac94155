// Portable C variant of the fused kernels (libm expf / tanhf). Also the model of the SIMD
// variants: the same blocked online softmax, the same formulas.
#include <math.h>

#include "cpu/fused_internal.h"

static void rms_row(const float *x, const float *w, float *y, int64_t h, float eps, float offset) {
  float ss = 0.0f;
  for (int64_t i = 0; i < h; i++) ss += x[i] * x[i];
  float inv = 1.0f / sqrtf(ss / (float)h + eps);
  for (int64_t i = 0; i < h; i++) y[i] = x[i] * inv * (w[i] + offset);
}

static void attn_unit(const float *q, const float *k, const float *v, float *out, int64_t lo,
                      int64_t hi, int64_t d, float scale, float softcap, float *scratch) {
  float *sc = scratch, *acc = scratch + MX_ATTN_BLOCK;
  for (int64_t i = 0; i < d; i++) acc[i] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  for (int64_t s0 = lo; s0 <= hi; s0 += MX_ATTN_BLOCK) {
    int64_t nb = hi + 1 - s0 < MX_ATTN_BLOCK ? hi + 1 - s0 : MX_ATTN_BLOCK;
    float bm = -INFINITY;
    for (int64_t j = 0; j < nb; j++) {
      const float *kr = k + (s0 + j) * d;
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
      for (int64_t j = 0; j < nb; j++) a += sc[j] * v[(s0 + j) * d + i];
      acc[i] = a;
    }
    m = mn;
  }
  float inv = 1.0f / l;
  for (int64_t i = 0; i < d; i++) out[i] = acc[i] * inv;
}

static void gated(const float *gate, const float *up, float *out, int64_t n, int act) {
  if (act == 1) {
    for (int64_t i = 0; i < n; i++) {
      float g = gate[i];
      float th = tanhf(MX_GELU_C * (g + 0.044715f * g * g * g));
      out[i] = 0.5f * g * (1.0f + th) * up[i];
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      float g = gate[i];
      out[i] = g / (1.0f + expf(-g)) * up[i];
    }
  }
}

static void tanh_n(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
}

// From exp(-|x|), which cannot overflow: 1 / (1 + e) for x >= 0, e / (1 + e) below, so that
// the negative tail keeps its relative accuracy (1 - logistic(|x|) would cancel).
static void logistic_n(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float e = expf(-fabsf(x[i])), r = 1.0f / (1.0f + e);
    y[i] = x[i] < 0.0f ? e * r : r;
  }
}

const mx_cpu_fused_ops_t mx_cpu_fused_scalar = {.isa = MX_CPU_ISA_SCALAR,
                                                .rms_row = rms_row,
                                                .attn_unit = attn_unit,
                                                .gated = gated,
                                                .tanh_n = tanh_n,
                                                .logistic_n = logistic_n};
