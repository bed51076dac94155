// Micro-benchmark of the quantized GEMV kernels (src/cpu/kernels_q.h) against the f32 packed
// GEMV and this machine's memory bandwidth, on the decode matrices of a real model shape.
//
//   cpu_quant [--shape smollm2-360m|llama-3.2-1b] [--reps R] [--threads T] [--group G]
//             [--mib M] [--params f16|f32] [--hot]
//
// For each format (f32 packed; int8, int4, MLX affine 4-bit with the exact and the VNNI
// kernels) the matrices of one decode step (every layer's q, k, v, o, gate, up, down and the
// tied LM head) are packed, repeated cyclically until the working set is at least M MiB (well
// beyond the last-level cache, so weights stream from DRAM as in a real decode), and run as one
// pool job per matrix. Repetitions are interleaved across formats with a bandwidth sample each,
// because the shared machine drifts. Reported per format: bytes per decoded token, the best and
// median effective read bandwidth, the fraction of the best measured bandwidth, and the decode
// time of the matrices of one token with the speed-up over f32. --params: the dtype of the scales
// and biases (f16, the default; f32 as `mlxcel quantize` writes them for an f32 checkpoint).
//
// --hot measures compute throughput instead: one 1024 x 1024 matrix per format, resident in
// L2, run by one thread (best of many repetitions): the weights per second a core can process,
// to compare with what its share of the memory bandwidth delivers (a kernel whose hot rate is
// below bandwidth / bytes-per-weight cannot be memory-bound).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "cpu/kernels_internal.h"
#include "cpu/kernels_q.h"
#include "mlxcel/machine.h"

enum { MAX_REPS = 64, MAX_FMT = 12 };

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

// The decode matrices of one token: per layer q, k, v, o, gate, up, down; then the tied head.
static int model_shapes(const char *name, shape_t *s, int cap) {
  int64_t H, F, Q, KV, L, V;
  if (!strcmp(name, "smollm2-360m")) {
    H = 960, F = 2560, Q = 960, KV = 320, L = 32, V = 49152;
  } else if (!strcmp(name, "llama-3.2-1b")) {
    H = 2048, F = 8192, Q = 2048, KV = 512, L = 16, V = 128256;
  } else {
    return 0;
  }
  int n = 0;
  for (int64_t l = 0; l < L && n + 7 <= cap; l++) {
    shape_t ls[7] = {{Q, H}, {KV, H}, {KV, H}, {H, Q}, {F, H}, {F, H}, {H, F}};
    memcpy(s + n, ls, sizeof ls);
    n += 7;
  }
  if (n < cap) s[n++] = (shape_t){V, H};
  return n;
}

typedef struct fmt {
  const char *name;
  int mode;  // 0 = f32
  int bits;
  const mx_cpu_qkernels_t *qk;
  int n_mats;
  mx_cpu_packed_t **fp;
  mx_cpu_qpacked_t **qp;
  double token_bytes;  // bytes of one token's matrices
  double set_bytes;    // bytes of the working set
  int tokens_x1000;    // working set in tokens * 1000
  double gbs[MAX_REPS];
  int nr;
} fmt_t;

typedef struct job {
  const mx_cpu_packed_t *fp;
  const mx_cpu_qpacked_t *qp;
  const float *x;
  float *y;
} job_t;

static void gemv_task(void *ctx, int ith, int nth) {
  job_t *j = ctx;
  if (j->fp)
    mx_cpu_gemv_packed_f32(j->fp, j->x, j->y, ith, nth);
  else
    mx_cpu_qgemv(j->qp, j->x, j->y, ith, nth);
}

static mx_status_t build(fmt_t *f, const mx_cpu_kernels_t *kt, mx_cpu_pool_t *pool,
                         const shape_t *sh, int n_sh, int64_t group, bool f32_params,
                         double min_bytes) {
  const double pb = f32_params ? 4 : 2;  // bytes per scale / bias
  double tok = 0;
  for (int i = 0; i < n_sh; i++) {
    double e = (double)sh[i].n * (double)sh[i].k;
    tok += f->mode == 0 ? 4 * e : e * f->bits / 8 + pb * e / (double)group * (f->mode == 3 ? 2 : 1);
  }
  f->token_bytes = tok;
  int cap = 64, n = 0;
  f->fp = calloc((size_t)cap * 64, sizeof *f->fp);
  f->qp = calloc((size_t)cap * 64, sizeof *f->qp);
  double bytes = 0;
  for (int i = 0; bytes < min_bytes || i < n_sh; i++, n++) {
    if (n >= cap * 64) return mx_error_set(MX_ERR_NOMEM, "too many matrices");
    shape_t s = sh[i % n_sh];
    if (f->mode == 0) {
      float *w = malloc((size_t)(s.n * s.k) * sizeof *w);
      for (int64_t e = 0; e < s.n * s.k; e++) w[e] = (float)(next_u64() % 2001) * 1e-3f - 1.0f;
      mx_status_t st = mx_cpu_pack_f32(kt, pool, w, s.k, s.n, s.k, &f->fp[n]);
      free(w);
      if (st) return st;
      bytes += (double)f->fp[n]->panels * (double)f->fp[n]->k * f->fp[n]->nr * 4;
    } else {
      int64_t G = s.k / group;
      size_t wb = f->mode == 1 ? (size_t)(s.n * s.k) : (size_t)(s.n * s.k) * (size_t)f->bits / 8;
      uint8_t *w = malloc(wb);
      uint16_t *sc = malloc((size_t)(s.n * G) * 2), *bi = malloc((size_t)(s.n * G) * 2);
      float *scf = malloc((size_t)(s.n * G) * 4), *bif = malloc((size_t)(s.n * G) * 4);
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
      mx_status_t st = mx_cpu_qpack(kt, f->qk, pool, &q, &f->qp[n]);
      free(w);
      free(sc);
      free(bi);
      free(scf);
      free(bif);
      if (st) return st;
      bytes += (double)f->qp[n]->bytes;
    }
  }
  f->n_mats = n;
  f->set_bytes = bytes;
  return MX_OK;
}

int main(int argc, char **argv) {
  const char *shape = "smollm2-360m";
  int reps = 7, threads = 0;
  bool hot = false, f32_params = false;
  int64_t group = 64, mib = 768;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
      shape = argv[++i];
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--group") && i + 1 < argc) {
      group = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
      mib = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--params") && i + 1 < argc &&
               (!strcmp(argv[i + 1], "f16") || !strcmp(argv[i + 1], "f32"))) {
      f32_params = !strcmp(argv[++i], "f32");
    } else if (!strcmp(argv[i], "--hot")) {
      hot = true;
    } else {
      fprintf(stderr,
              "usage: cpu_quant [--shape NAME] [--reps R] [--threads T] [--group G] "
              "[--mib M] [--params f16|f32] [--hot]\n");
      return 2;
    }
  }
  if (reps < 1 || reps > MAX_REPS) reps = 7;
  shape_t sh[1024];
  int n_sh = hot ? 1 : model_shapes(shape, sh, 1024);
  if (hot) {
    sh[0] = (shape_t){1024, 1024};
    mib = 0;
  }
  if (!n_sh) {
    fprintf(stderr, "cpu_quant: unknown shape '%s'\n", shape);
    return 2;
  }
  mx_cpu_pool_t *pool = NULL;
  if (mx_cpu_pool_create(threads, &pool)) {
    fprintf(stderr, "cpu_quant: %s\n", mx_error_message());
    return 1;
  }
  const mx_cpu_kernels_t *kt = mx_cpu_kernels_best();
  fmt_t f[MAX_FMT];
  int nf = 0;
  memset(f, 0, sizeof f);
  f[nf++] = (fmt_t){.name = "f32", .mode = 0};
  const mx_cpu_qkernels_t *exact = mx_cpu_qkernels_for(kt, 8, MX_CPU_QKERNEL_EXACT);
  const mx_cpu_qkernels_t *vnni = NULL, *vnni16 = NULL;
#if defined(__x86_64__)
  if (mx_cpu_features()->avx512vnni && mx_cpu_kernels_isa(kt) == MX_CPU_ISA_AVX512) {
    vnni = &mx_cpu_qkernels_avx512_vnni;
    vnni16 = &mx_cpu_qkernels_avx512_vnni16;
  }
#endif
  const struct {
    const char *name;
    int mode, bits;
  } qf[3] = {{"int8", 1, 8}, {"int4", 2, 4}, {"mlx-q4", 3, 4}};
  for (int i = 0; i < 3; i++) {
    f[nf++] = (fmt_t){.name = qf[i].name, .mode = qf[i].mode, .bits = qf[i].bits, .qk = exact};
    if (vnni)
      f[nf++] = (fmt_t){.name = qf[i].name, .mode = qf[i].mode, .bits = qf[i].bits, .qk = vnni};
    if (vnni16)
      f[nf++] = (fmt_t){.name = qf[i].name, .mode = qf[i].mode, .bits = qf[i].bits, .qk = vnni16};
  }
  printf(
      "cpu_quant: %s, %d threads, group %lld, %s scales, working sets >= %lld MiB, %d reps, %s\n",
      shape, mx_cpu_pool_threads(pool), (long long)group, f32_params ? "f32" : "f16",
      (long long)mib, reps, mx_cpu_isa_name(mx_cpu_kernels_isa(kt)));
  for (int i = 0; i < nf; i++) {
    mx_status_t st = build(&f[i], kt, pool, sh, n_sh, group, f32_params, (double)mib * 1048576.0);
    if (st) {
      fprintf(stderr, "cpu_quant: %s\n", mx_error_message());
      return 1;
    }
  }
  float *x = aligned_alloc(64, 65536 * sizeof *x), *y = aligned_alloc(64, 262144 * sizeof *y);
  for (int i = 0; i < 65536; i++) x[i] = (float)(next_u64() % 2001) * 1e-3f - 1.0f;
  if (hot) {
    printf("%-8s %-12s %14s %16s\n", "format", "kernel", "best G weights/s", "GB/s equivalent");
    for (int i = 0; i < nf; i++) {
      double best = 1e30;
      for (int r = 0; r < 400 * reps; r++) {
        double t0 = mx_bench_now_s();
        if (f[i].mode == 0)
          mx_cpu_gemv_packed_f32(f[i].fp[0], x, y, 0, 1);
        else
          mx_cpu_qgemv(f[i].qp[0], x, y, 0, 1);
        double t = mx_bench_now_s() - t0;
        if (t < best) best = t;
      }
      double wps = 1024.0 * 1024.0 / best;
      printf("%-8s %-12s %14.2f %16.2f\n", f[i].name, f[i].mode ? f[i].qk->name : "packed f32",
             wps / 1e9, f[i].set_bytes / best / 1e9);
    }
    return 0;
  }
  double bw[MAX_REPS];
  for (int r = 0; r < reps; r++) {
    double med;
    mx_machine_bandwidth(pool, (size_t)512 << 20, 1, &med, &bw[r]);
    for (int t = 0; t < nf; t++) {
      fmt_t *g = &f[(t + r) % nf];  // rotate the order across repetitions
      double t0 = mx_bench_now_s();
      for (int i = 0; i < g->n_mats; i++) {
        job_t j = {g->mode == 0 ? g->fp[i] : NULL, g->mode ? g->qp[i] : NULL, x, y};
        mx_cpu_pool_run(pool, gemv_task, &j);
      }
      g->gbs[g->nr++] = g->set_bytes / (mx_bench_now_s() - t0) / 1e9;
    }
  }
  qsort(bw, (size_t)reps, sizeof *bw, mx_bench_cmp_double);
  double bw_best = bw[reps - 1];
  printf("memory read bandwidth: best %.1f GB/s, median %.1f GB/s\n", bw_best, bw[reps / 2]);
  printf("%-8s %-12s %10s %10s %10s %8s %12s %8s\n", "format", "kernel", "MB/token", "best GB/s",
         "med GB/s", "% of bw", "ms/token", "vs f32");
  double f32_ms = 0;
  for (int i = 0; i < nf; i++) {
    qsort(f[i].gbs, (size_t)f[i].nr, sizeof(double), mx_bench_cmp_double);
    double best = f[i].gbs[f[i].nr - 1], med = f[i].gbs[f[i].nr / 2];
    double ms = f[i].token_bytes / (best * 1e9) * 1e3;
    if (i == 0) f32_ms = ms;
    printf("%-8s %-12s %10.1f %10.2f %10.2f %7.1f%% %12.2f %7.2fx\n", f[i].name,
           f[i].mode ? f[i].qk->name : "packed f32", f[i].token_bytes / 1e6, best, med,
           100.0 * best / bw_best, ms, f32_ms / ms);
  }
  return 0;
}
