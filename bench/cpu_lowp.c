// Micro-benchmark of the bf16 / f16 matmul kernels (include/mlxcel/cpu_lowp.h) next to the f32
// ones on the linear-layer shapes of SmolLM2-360M and Llama-3.2-1B.
//
//   cpu_lowp [--threads T] [--reps R] [--m M[,M...]] [--isa-bf16 NAME] [--gemv]
//
// GEMM: GFLOP/s of Y[M, N] = X W^T for each shape, f32 vs bf16 vs f16, interleaved per
// repetition (the machine is shared: medians of R). GEMV (--gemv): GB/s of weight bytes streamed
// per second, over enough copies of each matrix to exceed the last-level cache; the best of R
// (interference only slows a run down) and the ratios of the bests.
#include "mlxcel/cpu_lowp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

enum { MAX_REPS = 64 };

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, mx_bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void *xalloc(size_t bytes) {
  void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "cpu_lowp: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  memset(p, 0, (bytes + 63) / 64 * 64);
  return p;
}

static uint16_t half_of(float v, mx_elem_type_t et) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if (et == MX_ELEM_BF16) return (uint16_t)(u >> 16);
  // f16 of a small value in [-1, 1]: exponent rebias, truncated mantissa (speed does not care).
  uint32_t e = (u >> 23) & 0xff;
  uint16_t s = (uint16_t)((u >> 16) & 0x8000);
  if (e < 113) return s;
  return (uint16_t)(s | ((e - 112) << 10) | ((u >> 13) & 0x3ff));
}

typedef struct shape {
  const char *name;
  int64_t n, k;
} shape_t;

static const shape_t kShapes[] = {
    {"360m qo", 960, 960},      {"360m kv", 320, 960},   {"360m gate/up", 2560, 960},
    {"360m down", 960, 2560},   {"1b q/o", 2048, 2048},  {"1b kv", 512, 2048},
    {"1b gate/up", 8192, 2048}, {"1b down", 2048, 8192},
};

int main(int argc, char **argv) {
  int threads = 2, reps = 5;
  int64_t ms[8] = {64, 512};
  int n_m = 2;
  bool gemv = false;
  const char *isa_bf16 = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--m") && i + 1 < argc) {
      n_m = 0;
      for (char *s = strtok(argv[++i], ","); s && n_m < 8; s = strtok(NULL, ","))
        ms[n_m++] = atoll(s);
    } else if (!strcmp(argv[i], "--isa-bf16") && i + 1 < argc) {
      isa_bf16 = argv[++i];
    } else if (!strcmp(argv[i], "--gemv")) {
      gemv = true;
    } else {
      fprintf(stderr,
              "usage: cpu_lowp [--threads T] [--reps R] [--m M,...] [--isa-bf16 NAME] [--gemv]\n");
      return 2;
    }
  }
  if (reps > MAX_REPS) reps = MAX_REPS;
  mx_cpu_pool_t *pool = NULL;
  if (mx_cpu_pool_create(threads, &pool) != MX_OK) return 1;
  const mx_cpu_kernels_t *kt = mx_cpu_kernels_best();
  const mx_cpu_lowp_kernels_t *kb = mx_cpu_lowp_best(MX_ELEM_BF16),
                              *kh = mx_cpu_lowp_best(MX_ELEM_F16);
  for (int isa = 0; isa_bf16 && isa < MX_CPU_LOWP_ISA_COUNT; isa++) {
    const mx_cpu_lowp_kernels_t *k = mx_cpu_lowp_get(MX_ELEM_BF16, (mx_cpu_lowp_isa_t)isa);
    if (k && !strcmp(mx_cpu_lowp_name(k), isa_bf16)) kb = k;
  }
  printf("threads %d, f32 %s, bf16 %s, f16 %s, medians of %d\n", threads,
         mx_cpu_isa_name(mx_cpu_kernels_isa(kt)), mx_cpu_lowp_name(kb), mx_cpu_lowp_name(kh), reps);
  for (size_t si = 0; si < sizeof kShapes / sizeof kShapes[0]; si++) {
    const shape_t *sh = &kShapes[si];
    int64_t n = sh->n, k = sh->k;
    // GEMV: enough copies to exceed 256 MiB of f32 weights.
    int copies = gemv ? (int)((256ll << 20) / (n * k * 4) + 1) : 1;
    mx_cpu_packed_t **pf = calloc((size_t)copies, sizeof *pf);
    mx_cpu_packed_lowp_t **pb = calloc((size_t)copies, sizeof *pb),
                         **ph = calloc((size_t)copies, sizeof *ph);
    float *wf = xalloc((size_t)(n * k) * 4);
    uint16_t *wb = xalloc((size_t)(n * k) * 2), *wh = xalloc((size_t)(n * k) * 2);
    for (int64_t i = 0; i < n * k; i++) {
      float v = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
      wf[i] = v;
      wb[i] = half_of(v, MX_ELEM_BF16);
      wh[i] = half_of(v, MX_ELEM_F16);
    }
    for (int c = 0; c < copies; c++) {
      if (mx_cpu_pack_f32(kt, pool, wf, k, n, k, &pf[c]) ||
          mx_cpu_pack_lowp(kb, pool, wb, k, n, k, &pb[c]) ||
          mx_cpu_pack_lowp(kh, pool, wh, k, n, k, &ph[c]))
        return 1;
    }
    int64_t mmax = 1;
    for (int i = 0; i < n_m; i++) mmax = ms[i] > mmax ? ms[i] : mmax;
    float *xf = xalloc((size_t)(mmax * k) * 4), *y = xalloc((size_t)(mmax * n) * 4);
    uint16_t *xb = xalloc((size_t)(mmax * k) * 2), *xh = xalloc((size_t)(mmax * k) * 2);
    for (int64_t i = 0; i < mmax * k; i++) {
      xf[i] = (float)(i % 17) / 17.0f;
      xb[i] = half_of(xf[i], MX_ELEM_BF16);
      xh[i] = half_of(xf[i], MX_ELEM_F16);
    }
    if (gemv) {
      double t[3][MAX_REPS];
      for (int r = 0; r < reps; r++) {
        for (int v = 0; v < 3; v++) {
          double t0 = mx_bench_now_s();
          for (int c = 0; c < copies; c++) {
            if (v == 0) mx_cpu_gemv_packed_f32_run(pool, pf[c], xf, y);
            if (v == 1) mx_cpu_gemv_packed_lowp_run(pool, pb[c], xb, y);
            if (v == 2) mx_cpu_gemv_packed_lowp_run(pool, ph[c], xh, y);
          }
          double dt = mx_bench_now_s() - t0,
                 bytes = (double)copies * (double)(n * k) * (v == 0 ? 4 : 2);
          t[v][r] = bytes / dt / 1e9;
        }
      }
      double best[3] = {0, 0, 0};
      for (int v = 0; v < 3; v++)
        for (int r = 0; r < reps; r++) best[v] = t[v][r] > best[v] ? t[v][r] : best[v];
      printf(
          "%-12s GEMV %5lldx%-5lld  f32 %6.1f GB/s  bf16 %6.1f GB/s (%.2f)  f16 %6.1f GB/s "
          "(%.2f)  [best of %d; medians %.1f %.1f %.1f]\n",
          sh->name, (long long)n, (long long)k, best[0], best[1], best[1] / best[0], best[2],
          best[2] / best[0], reps, median(t[0], reps), median(t[1], reps), median(t[2], reps));
    }
    for (int mi = 0; mi < n_m && !gemv; mi++) {
      int64_t m = ms[mi];
      double t[3][MAX_REPS];
      for (int r = 0; r < reps; r++) {
        for (int v = 0; v < 3; v++) {
          double t0 = mx_bench_now_s();
          if (v == 0) mx_cpu_gemm_packed_f32_run(pool, pf[0], xf, k, y, n, m);
          if (v == 1) mx_cpu_gemm_packed_lowp_run(pool, pb[0], xb, k, y, n, m);
          if (v == 2) mx_cpu_gemm_packed_lowp_run(pool, ph[0], xh, k, y, n, m);
          t[v][r] = 2.0 * (double)(m * n * k) / (mx_bench_now_s() - t0) / 1e9;
        }
      }
      double f = median(t[0], reps), b = median(t[1], reps), h = median(t[2], reps);
      printf(
          "%-12s GEMM M %4lld %5lldx%-5lld  f32 %7.1f  bf16 %7.1f (%.2fx)  f16 %7.1f (%.2fx) "
          "GFLOP/s\n",
          sh->name, (long long)m, (long long)n, (long long)k, f, b, b / f, h, h / f);
    }
    for (int c = 0; c < copies; c++) {
      mx_cpu_packed_destroy(pf[c]);
      mx_cpu_packed_lowp_destroy(pb[c]);
      mx_cpu_packed_lowp_destroy(ph[c]);
    }
    free(pf), free(pb), free(ph), free(wf), free(wb), free(wh), free(xf), free(y), free(xb),
        free(xh);
  }
  mx_cpu_pool_destroy(pool);
  return 0;
}
