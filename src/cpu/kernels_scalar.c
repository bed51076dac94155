// Portable C kernels: the fallback on every machine and the shape every SIMD variant follows.
#include "kernels_internal.h"

enum { NR = 16, MR = 4 };

// Four partial sums per row (k mod 4) break the add dependency chain; combined as
// (s0 + s1) + (s2 + s3). The order depends only on k.
static void gemv_rows(const float *w, int64_t ldw, const float *x, float *y, int64_t n, int64_t k) {
  int64_t k4 = k & ~(int64_t)3;
  for (int64_t r = 0; r < n; r++) {
    const float *row = w + r * ldw;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int64_t kk = 0; kk < k4; kk += 4) {
      s0 += row[kk] * x[kk];
      s1 += row[kk + 1] * x[kk + 1];
      s2 += row[kk + 2] * x[kk + 2];
      s3 += row[kk + 3] * x[kk + 3];
    }
    for (int64_t kk = k4; kk < k; kk++) s0 += row[kk] * x[kk];
    y[r] = (s0 + s1) + (s2 + s3);
  }
}

static void gemv_panels(const float *panels, const float *x, float *y, int64_t p0, int64_t p1,
                        int64_t k, int64_t n_total) {
  for (int64_t p = p0; p < p1; p++) {
    const float *b = panels + p * k * NR;
    float acc[NR] = {0};
    for (int64_t kk = 0; kk < k; kk++) {
      float xv = x[kk];
      for (int j = 0; j < NR; j++) acc[j] += b[kk * NR + j] * xv;
    }
    int64_t rows = n_total - p * NR < NR ? n_total - p * NR : NR;
    for (int64_t j = 0; j < rows; j++) y[p * NR + j] = acc[j];
  }
}

static void gemm_ukernel(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                         int mr_valid, int nr_valid, bool accumulate) {
  float acc[MR][NR];
  for (int i = 0; i < MR; i++) {
    for (int j = 0; j < NR; j++) {
      acc[i][j] = (accumulate && i < mr_valid && j < nr_valid) ? c[i * ldc + j] : 0.0f;
    }
  }
  for (int64_t kk = 0; kk < kc; kk++) {
    for (int i = 0; i < MR; i++) {
      float av = a[kk * MR + i];
      for (int j = 0; j < NR; j++) acc[i][j] += av * b[kk * NR + j];
    }
  }
  for (int i = 0; i < mr_valid; i++) {
    for (int j = 0; j < nr_valid; j++) c[i * ldc + j] = acc[i][j];
  }
}

const struct mx_cpu_kernels mx_cpu_kernels_scalar = {
    .isa = MX_CPU_ISA_SCALAR,
    .nr = NR,
    .mr = MR,
    .gemv_rows = gemv_rows,
    .gemv_panels = gemv_panels,
    .gemm_ukernel = gemm_ukernel,
};
