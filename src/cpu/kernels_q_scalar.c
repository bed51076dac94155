// Portable quantized kernels (exact path, any packed layout): the reference the ISA variants are
// tested against, and the kernels of machines without AVX2.
#include "cpu/kernels_q.h"

void mx_cpu_qprep_generic(const mx_cpu_qpacked_t *w, const float *x, mx_qact_t *a) {
  for (int64_t j = 0; j < w->groups; j++) {
    float s = 0.0f;
    for (int64_t i = j * w->group; i < (j + 1) * w->group; i++) s += x[i];
    a->xsum[j] = s;
  }
}

void mx_cpu_qgemv_generic(const mx_cpu_qpacked_t *w, const float *x, const mx_qact_t *a, float *y,
                          int64_t p0, int64_t p1) {
  const float off = (float)w->offset;
  for (int64_t p = p0; p < p1; p++) {
    for (int r = 0; r < MX_QR && p * MX_QR + r < w->n; r++) {
      float yr = 0.0f;
      for (int64_t j = 0; j < w->groups; j++) {
        float acc = 0.0f;
        for (int64_t kk = j * w->group; kk < (j + 1) * w->group; kk++) {
          acc += (float)mx_cpu_qget(w, p, r, kk) * x[kk];
        }
        int64_t pi = (p * w->groups + j) * MX_QR + r;
        yr += mx_cpu_qparam(w, w->s, pi) * (acc - off * a->xsum[j]);
        if (w->b) yr += mx_cpu_qparam(w, w->b, pi) * a->xsum[j];
      }
      y[p * MX_QR + r] = yr;
    }
  }
}

void mx_cpu_qdequant_generic(const mx_cpu_qpacked_t *w, int64_t p, int64_t k0, int64_t kc,
                             float *dst, int64_t ld) {
  const float off = (float)w->offset;
  for (int r = 0; r < MX_QR; r++) {
    for (int64_t kk = k0; kk < k0 + kc; kk++) {
      int64_t pi = (p * w->groups + kk / w->group) * MX_QR + r;
      float v = ((float)mx_cpu_qget(w, p, r, kk) - off) * mx_cpu_qparam(w, w->s, pi);
      dst[(kk - k0) * ld + r] = w->b ? v + mx_cpu_qparam(w, w->b, pi) : v;
    }
  }
}

const mx_cpu_qkernels_t mx_cpu_qkernels_scalar = {
    .name = "scalar",
    .layout = MX_QL_KMAJOR,
    .prep = mx_cpu_qprep_generic,
    .gemv = mx_cpu_qgemv_generic,
    .dequant = mx_cpu_qdequant_generic,
};
