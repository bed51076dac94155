// Portable bf16 / f16 kernels (any CPU). Each output is one f32 chain in k order; for bf16 a pair
// (2q, 2q + 1) adds the odd product first, as VDPBF16PS does. Products of two bf16 or two f16
// values are exact in f32, so the results do not depend on FMA contraction.
#include "base/half.h"
#include "cpu/kernels_lowp_internal.h"

enum { NR = MX_LOWP_NR, MR = 4 };

static inline int64_t rows_in(int64_t p, int64_t n_total) {
  return n_total - p * NR < NR ? n_total - p * NR : NR;
}

static void gemv_bf16(const uint16_t *panels, const uint16_t *x, float *y, int64_t p0, int64_t p1,
                      int64_t k, int64_t n_total) {
  int64_t kpad = (k + 1) & ~(int64_t)1;
  for (int64_t p = p0; p < p1; p++) {
    const uint16_t *b = panels + p * kpad * NR;
    int64_t rows = rows_in(p, n_total);
    for (int64_t r = 0; r < rows; r++) {
      float acc = 0.0f;
      for (int64_t q = 0; q < kpad / 2; q++) {
        float x0 = mx_bf16_to_f32(x[2 * q]);
        float x1 = 2 * q + 1 < k ? mx_bf16_to_f32(x[2 * q + 1]) : 0.0f;
        const uint16_t *wp = b + q * 2 * NR + 2 * r;
        acc += mx_bf16_to_f32(wp[1]) * x1;
        acc += mx_bf16_to_f32(wp[0]) * x0;
      }
      y[p * NR + r] = acc;
    }
  }
}

static void gemv_f16(const uint16_t *panels, const uint16_t *x, float *y, int64_t p0, int64_t p1,
                     int64_t k, int64_t n_total) {
  for (int64_t p = p0; p < p1; p++) {
    const uint16_t *b = panels + p * k * NR;
    int64_t rows = rows_in(p, n_total);
    for (int64_t r = 0; r < rows; r++) {
      float acc = 0.0f;
      for (int64_t kk = 0; kk < k; kk++)
        acc += mx_f16_to_f32(b[kk * NR + r]) * mx_f16_to_f32(x[kk]);
      y[p * NR + r] = acc;
    }
  }
}

// A is f32 (a_pairs false): a[kk * MR + i].
static void ukernel_bf16(int64_t kc, const void *apack, const uint16_t *b, float *c, int64_t ldc,
                         int mr_valid, int nr_valid, bool accumulate) {
  const float *a = apack;
  for (int i = 0; i < mr_valid; i++) {
    for (int j = 0; j < nr_valid; j++) {
      float acc = accumulate ? c[i * ldc + j] : 0.0f;
      for (int64_t q = 0; q < kc / 2; q++) {
        const uint16_t *wp = b + q * 2 * NR + 2 * j;
        acc += a[(2 * q + 1) * MR + i] * mx_bf16_to_f32(wp[1]);
        acc += a[(2 * q) * MR + i] * mx_bf16_to_f32(wp[0]);
      }
      c[i * ldc + j] = acc;
    }
  }
}

static void ukernel_f16(int64_t kc, const void *apack, const uint16_t *b, float *c, int64_t ldc,
                        int mr_valid, int nr_valid, bool accumulate) {
  const float *a = apack;
  for (int i = 0; i < mr_valid; i++) {
    for (int j = 0; j < nr_valid; j++) {
      float acc = accumulate ? c[i * ldc + j] : 0.0f;
      for (int64_t kk = 0; kk < kc; kk++) acc += a[kk * MR + i] * mx_f16_to_f32(b[kk * NR + j]);
      c[i * ldc + j] = acc;
    }
  }
}

const struct mx_cpu_lowp_kernels mx_cpu_lowp_bf16_scalar = {
    .name = "scalar",
    .isa = MX_CPU_LOWP_SCALAR,
    .et = MX_ELEM_BF16,
    .mr = MR,
    .a_pairs = false,
    .gemv = gemv_bf16,
    .ukernel = ukernel_bf16,
};

const struct mx_cpu_lowp_kernels mx_cpu_lowp_f16_scalar = {
    .name = "scalar",
    .isa = MX_CPU_LOWP_SCALAR,
    .et = MX_ELEM_F16,
    .mr = MR,
    .a_pairs = false,
    .gemv = gemv_f16,
    .ukernel = ukernel_f16,
};
