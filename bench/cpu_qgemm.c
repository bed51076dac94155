// Micro-benchmark of the quantized prefill GEMM (mx_cpu_qgemm, src/cpu/kernels_q.h) against the
// f32 packed GEMM on the linear layers of one transformer layer of a real model shape.
//
//   cpu_qgemm [--shape smollm2-360m|llama-3.2-1b] [--rows M] [--reps R] [--threads T]
//             [--group G] [--params f16|f32] [--kernel auto|vnni16] [--formats LIST]
//
// The seven matrices of one layer (q, k, v, o, gate, up, down) are packed once per format (f32;
// int8, int4, MLX affine 4-bit and 8-bit with groups of G: 32 is GGUF's block, 64 mlx-lm's
// default) and X (M rows, default 512: a prefill chunk) is multiplied by each, --reps times,
// formats interleaved (the shared machine drifts). Reported per format: the median and best
// time of the layer's GEMMs, the integer multiply-adds per second, and the speed-up of the
// median over f32's median. --threads runs each GEMM as one pool job (default 1: the per-core
// rate, which is what the kernels change); --kernel vnni16 takes the AVX-512 VNNI GEMM even where
// the CPU has AMX-INT8 tiles; --formats (comma-separated names, default all) runs only those
// (f32 always: the reference), e.g. for a profiler.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cpu/kernels_internal.h"
#include "cpu/kernels_q.h"
#include "mlxcel/machine.h"

enum { MAX_REPS = 64, N_MATS = 7, N_FMT = 5 };

static uint64_t rng = 88172645463325252ull;
static uint64_t next_u64(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

typedef struct shape {
  int64_t n, k;
} shape_t;

static bool layer_shapes(const char *name, shape_t *s) {
  int64_t H, F, Q, KV;
  if (!strcmp(name, "smollm2-360m")) {
    H = 960, F = 2560, Q = 960, KV = 320;
  } else if (!strcmp(name, "llama-3.2-1b")) {
    H = 2048, F = 8192, Q = 2048, KV = 512;
  } else {
    return false;
  }
  shape_t ls[N_MATS] = {{Q, H}, {KV, H}, {KV, H}, {H, Q}, {F, H}, {F, H}, {H, F}};
  memcpy(s, ls, sizeof ls);
  return true;
}

typedef struct fmt {
  const char *name;
  int mode, bits;  // mode 0 = f32
  mx_cpu_packed_t *fp[N_MATS];
  mx_cpu_qpacked_t *qp[N_MATS];
  double t[MAX_REPS];
} fmt_t;

typedef struct job {
  const mx_cpu_packed_t *fp;
  const mx_cpu_qpacked_t *qp;
  const float *x;
  float *y;
  int64_t m;
} job_t;

static void gemm_task(void *ctx, int ith, int nth) {
  job_t *j = ctx;
  if (j->fp)
    mx_cpu_gemm_packed_f32(j->fp, j->x, j->fp->k, NULL, j->y, j->fp->n, j->m, ith, nth);
  else
    mx_cpu_qgemm(j->qp, j->x, j->qp->k, j->y, j->qp->n, j->m, ith, nth);
}

static mx_status_t build(fmt_t *f, const mx_cpu_kernels_t *kt, const mx_cpu_qkernels_t *qk,
                         const shape_t *sh, int64_t group, bool f32_params) {
  for (int i = 0; i < N_MATS; i++) {
    shape_t s = sh[i];
    if (f->mode == 0) {
      float *w = malloc((size_t)(s.n * s.k) * sizeof *w);
      if (!w) return mx_error_set(MX_ERR_NOMEM, "out of memory");
      for (int64_t e = 0; e < s.n * s.k; e++) w[e] = (float)(next_u64() % 2001) * 1e-3f - 1.0f;
      mx_status_t st = mx_cpu_pack_f32(kt, NULL, w, s.k, s.n, s.k, &f->fp[i]);
      free(w);
      if (st) return st;
      continue;
    }
    int64_t G = s.k / group;
    size_t wb = f->mode == 1 ? (size_t)(s.n * s.k) : (size_t)(s.n * s.k) * (size_t)f->bits / 8;
    uint8_t *w = malloc(wb);
    uint16_t *sc = malloc((size_t)(s.n * G) * 2), *bi = malloc((size_t)(s.n * G) * 2);
    float *scf = malloc((size_t)(s.n * G) * 4), *bif = malloc((size_t)(s.n * G) * 4);
    if (!w || !sc || !bi || !scf || !bif) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    for (size_t e = 0; e < wb; e++) w[e] = (uint8_t)next_u64();
    for (int64_t e = 0; e < s.n * G; e++) {
      sc[e] = (uint16_t)(0x2000 + next_u64() % 0x400);  // ~0.008 .. 0.016 in f16
      bi[e] = (uint16_t)(0xA000 + next_u64() % 0x400);
      scf[e] = 0.008f + (float)(next_u64() % 1000) * 8e-6f;
      bif[e] = -scf[e] * 8.0f;
    }
    mx_cpu_qsrc_t q = {.mode = f->mode,
                       .bits = f->bits,
                       .n = s.n,
                       .k = s.k,
                       .group = group,
                       .w = w,
                       .sdt = f32_params ? MX_ELEM_F32 : MX_ELEM_F16,
                       .scales = f32_params ? (const void *)scf : sc,
                       .biases = f->mode == 3 ? (f32_params ? (const void *)bif : bi) : NULL};
    mx_status_t st = mx_cpu_qpack(kt, qk, NULL, &q, &f->qp[i]);
    free(w), free(sc), free(bi), free(scf), free(bif);
    if (st) return st;
  }
  return MX_OK;
}

int main(int argc, char **argv) {
  const char *shape = "smollm2-360m", *kernel = "auto", *formats = NULL;
  int reps = 7, threads = 1;
  int64_t group = 32, rows = 512;
  bool f32_params = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--shape") && v) {
      shape = v, i++;
    } else if (!strcmp(a, "--rows") && v) {
      rows = atoll(v), i++;
    } else if (!strcmp(a, "--reps") && v) {
      reps = atoi(v), i++;
    } else if (!strcmp(a, "--threads") && v) {
      threads = atoi(v), i++;
    } else if (!strcmp(a, "--group") && v) {
      group = atoll(v), i++;
    } else if (!strcmp(a, "--params") && v) {
      f32_params = !strcmp(v, "f32"), i++;
    } else if (!strcmp(a, "--kernel") && v) {
      kernel = v, i++;
    } else if (!strcmp(a, "--formats") && v) {
      formats = v, i++;
    } else {
      fprintf(stderr,
              "usage: cpu_qgemm [--shape smollm2-360m|llama-3.2-1b] [--rows M] [--reps R] "
              "[--threads T] [--group G] [--params f16|f32] [--kernel auto|vnni16] "
              "[--formats LIST]\n");
      return 2;
    }
  }
  shape_t sh[N_MATS];
  if (!layer_shapes(shape, sh) || rows < 1 || reps < 1 || reps > MAX_REPS || threads < 1 ||
      group < 32 || group % 32) {
    fprintf(stderr, "cpu_qgemm: bad arguments (see --help)\n");
    return 2;
  }
  mx_cpu_pool_t *pool = NULL;
  if (mx_cpu_pool_create(threads, &pool)) {
    fprintf(stderr, "cpu_qgemm: %s\n", mx_error_message());
    return 1;
  }
  const mx_cpu_kernels_t *kt = mx_cpu_kernels_best();
  const mx_cpu_qkernels_t *qk = mx_cpu_qkernels_for(kt, 8, MX_CPU_QKERNEL_VNNI16);
#if defined(__x86_64__)
  if (!strcmp(kernel, "vnni16") && qk == &mx_cpu_qkernels_avx512_vnni16_amx)
    qk = &mx_cpu_qkernels_avx512_vnni16;
#endif
  fmt_t all[N_FMT] = {{.name = "f32"},
                      {.name = "int8", .mode = 1, .bits = 8},
                      {.name = "int4", .mode = 2, .bits = 4},
                      {.name = "affine4", .mode = 3, .bits = 4},
                      {.name = "affine8", .mode = 3, .bits = 8}};
  fmt_t f[N_FMT];
  int n_fmt = 0;
  for (int i = 0; i < N_FMT; i++) {
    size_t len = strlen(all[i].name);
    const char *hit = formats ? strstr(formats, all[i].name) : NULL;
    bool listed = hit && (hit == formats || hit[-1] == ',') && (hit[len] == ',' || !hit[len]);
    if (i == 0 || !formats || listed) f[n_fmt++] = all[i];
  }
  int64_t kmax = 0, nmax = 0;
  double macs = 0;
  for (int i = 0; i < N_MATS; i++) {
    kmax = sh[i].k > kmax ? sh[i].k : kmax;
    nmax = sh[i].n > nmax ? sh[i].n : nmax;
    macs += (double)rows * (double)sh[i].n * (double)sh[i].k;
  }
  for (int i = 0; i < n_fmt; i++) {
    if (build(&f[i], kt, qk, sh, group, f32_params)) {
      fprintf(stderr, "cpu_qgemm: %s\n", mx_error_message());
      return 1;
    }
  }
  float *x = malloc((size_t)(rows * kmax) * sizeof *x), *y = malloc((size_t)(rows * nmax) * 4);
  if (!x || !y) return 1;
  for (int64_t e = 0; e < rows * kmax; e++) x[e] = (float)(next_u64() % 2001) * 1e-3f - 1.0f;
  printf("cpu_qgemm: %s layer, %lld rows, %d threads, group %lld, %s params, kernel %s, %d reps\n",
         shape, (long long)rows, threads, (long long)group, f32_params ? "f32" : "f16", qk->name,
         reps);
  for (int r = 0; r < reps; r++) {
    for (int i = 0; i < n_fmt; i++) {
      double t0 = mx_bench_now_s();
      for (int mi = 0; mi < N_MATS; mi++) {
        job_t j = {f[i].fp[mi], f[i].qp[mi], x, y, rows};
        mx_cpu_pool_run(pool, gemm_task, &j);
      }
      f[i].t[r] = mx_bench_now_s() - t0;
    }
  }
  double f32_med = 0;
  printf("%-8s %12s %12s %12s %10s\n", "format", "median ms", "best ms", "GMAC/s", "vs f32");
  for (int i = 0; i < n_fmt; i++) {
    double t[MAX_REPS];
    memcpy(t, f[i].t, (size_t)reps * sizeof *t);
    qsort(t, (size_t)reps, sizeof *t, mx_bench_cmp_double);
    double med = t[reps / 2];
    if (i == 0) f32_med = med;
    printf("%-8s %12.3f %12.3f %12.1f %9.2fx\n", f[i].name, med * 1e3, t[0] * 1e3,
           macs / med * 1e-9, f32_med / med);
  }
  for (int i = 0; i < n_fmt; i++) {
    for (int mi = 0; mi < N_MATS; mi++) {
      mx_cpu_packed_destroy(f[i].fp[mi]);
      mx_cpu_qpacked_destroy(f[i].qp[mi]);
    }
  }
  free(x), free(y);
  mx_cpu_pool_destroy(pool);
  return 0;
}
