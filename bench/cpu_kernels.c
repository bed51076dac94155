// Micro-benchmark of the f32 CPU kernels against this machine's limits.
//
//   cpu_kernels [--reps R] [--threads T[,T...]] [--skip-gemm] [--skip-gemv] [--isa NAME]
//
// Measures, per thread count: memory read bandwidth (a streaming sum over a 1 GiB buffer),
// peak f32 FMA FLOP/s (a register-only FMA loop on every thread), GEMV on the decode shapes of
// SmolLM2-360M and Llama-3.2-1B (row-major and packed weights; enough copies of each matrix to
// exceed the last-level cache so weights come from DRAM, as in a real decode step), and GEMM
// with M = 512 on the same shapes. The machine's bandwidth drifts, so each kernel repetition is
// paired with a bandwidth (or peak) measurement taken right before it; the tables give the
// medians and the median of the per-repetition ratios.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "mlxcel/cpu.h"
#include "mlxcel/machine.h"

enum { MAX_REPS = 64 };

static double median(const double *v, int n) {
  double tmp[MAX_REPS];
  memcpy(tmp, v, (size_t)n * sizeof *v);
  qsort(tmp, (size_t)n, sizeof *tmp, mx_bench_cmp_double);
  return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

// Per-repetition (limit, kernel) pairs: medians, the median of the ratios, and the ratio of the
// bests (interference from other processes only ever slows a run down, so the best of each is
// the least disturbed estimate).
typedef struct rep_stats {
  int n;
  double limit[MAX_REPS], kernel[MAX_REPS], ratio[MAX_REPS];
} rep_stats_t;

static void rep_add(rep_stats_t *st, double limit, double kernel) {
  if (st->n >= MAX_REPS) return;
  st->limit[st->n] = limit;
  st->kernel[st->n] = kernel;
  st->ratio[st->n] = kernel / limit;
  st->n++;
}

static double rep_median_limit(const rep_stats_t *st) { return median(st->limit, st->n); }
static double rep_median_kernel(const rep_stats_t *st) { return median(st->kernel, st->n); }
static double rep_median_ratio(const rep_stats_t *st) { return median(st->ratio, st->n); }
static double rep_best_ratio(const rep_stats_t *st) {
  double bl = 0, bk = 0;
  for (int i = 0; i < st->n; i++) {
    bl = st->limit[i] > bl ? st->limit[i] : bl;
    bk = st->kernel[i] > bk ? st->kernel[i] : bk;
  }
  return bk / bl;
}

static void *xalloc(size_t bytes) {
  void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "cpu_kernels: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

// Deterministic, denormal-free fill (speed does not depend on values).
static void fill(float *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u + seed) % 1024) / 1024.0f - 0.5f;
}

// ---- Bandwidth and peak: the library's loops (src/cpu/machine.c) ----

// The 1 GiB buffer the bandwidth samples stream from.
static mx_machine_stream_t *g_stream;

// Streams `bytes` of the buffer from where the previous call stopped (wrapping around), the
// same way a kernel streams its weights; returns the seconds taken.
static double stream_bytes(mx_cpu_pool_t *pool, size_t bytes) {
  return mx_machine_stream_read(g_stream, pool, bytes);
}

// One pass over the whole buffer; returns GB/s (1e9 bytes).
static double measure_bw(mx_cpu_pool_t *pool) {
  size_t bytes = mx_machine_stream_bytes(g_stream);
  return (double)bytes / stream_bytes(pool, bytes) / 1e9;
}

// GFLOP/s of all threads together: one FMA-loop run of about 0.1 s.
static double measure_peak(mx_cpu_pool_t *pool) {
  double median = 0, best = 0;
  if (mx_machine_peak(pool, 0.1, 1, &median, &best) != MX_OK) {
    fprintf(stderr, "peak: %s\n", mx_error_message());
    exit(1);
  }
  return median;
}

// ---- Pool dispatch latency ----

static void empty_task(void *ctx, int ith, int nth) {
  (void)ctx;
  (void)ith;
  (void)nth;
}

// Microseconds per empty job (run + join of all threads), over a burst of 10000 jobs.
static double measure_dispatch_us(mx_cpu_pool_t *pool) {
  enum { JOBS = 10000 };
  double t0 = mx_bench_now_s();
  for (int j = 0; j < JOBS; j++) mx_cpu_pool_run(pool, empty_task, NULL);
  return (mx_bench_now_s() - t0) / JOBS * 1e6;
}

// ---- Shapes ----

typedef struct shape {
  const char *model, *name;
  int64_t n, k;
} shape_t;

static const shape_t kShapes[] = {
    {"SmolLM2-360M", "q/o 960x960", 960, 960},
    {"SmolLM2-360M", "gate/up 2560x960", 2560, 960},
    {"SmolLM2-360M", "down 960x2560", 960, 2560},
    {"SmolLM2-360M", "lm_head 49152x960", 49152, 960},
    {"Llama-3.2-1B", "q/o 2048x2048", 2048, 2048},
    {"Llama-3.2-1B", "gate/up 8192x2048", 8192, 2048},
    {"Llama-3.2-1B", "down 2048x8192", 2048, 8192},
    {"Llama-3.2-1B", "lm_head 128256x2048", 128256, 2048},
};
enum { NSHAPES = sizeof kShapes / sizeof kShapes[0] };

// Copies of a matrix so that one sweep reads at least this much: beyond any last-level cache.
static const size_t kSweepBytes = (size_t)512 << 20;

static void bench_gemv(mx_cpu_pool_t *pool, const mx_cpu_kernels_t *kt, const shape_t *s,
                       int reps) {
  size_t mat_bytes = (size_t)s->n * (size_t)s->k * sizeof(float);
  int copies = (int)((kSweepBytes + mat_bytes - 1) / mat_bytes);
  if (copies < 1) copies = 1;
  float **w = calloc((size_t)copies, sizeof *w);
  mx_cpu_packed_t **pw = calloc((size_t)copies, sizeof *pw);
  float *x = xalloc((size_t)s->k * sizeof(float));
  float *y = xalloc((size_t)s->n * sizeof(float));
  fill(x, (size_t)s->k, 7);
  for (int c = 0; c < copies; c++) {
    w[c] = xalloc(mat_bytes);
    fill(w[c], (size_t)s->n * (size_t)s->k, (unsigned)c);
  }
  // Each weight copy's GEMV is paired with a streaming sum over as many bytes of the bandwidth
  // buffer, timed right before it: both see the same machine state, so their time ratio is the
  // fraction of the currently available bandwidth the kernel reaches.
  rep_stats_t rows = {0}, packed = {0};
  mx_cpu_gemv_f32_run(pool, kt, w[0], s->k, x, y, s->n, s->k);  // warm-up
  for (int r = 0; r < reps; r++) {
    double t_bw = 0, t_k = 0;
    for (int c = 0; c < copies; c++) {
      t_bw += stream_bytes(pool, mat_bytes);
      double t0 = mx_bench_now_s();
      mx_cpu_gemv_f32_run(pool, kt, w[c], s->k, x, y, s->n, s->k);
      t_k += mx_bench_now_s() - t0;
    }
    rep_add(&rows, (double)mat_bytes * copies / t_bw / 1e9, (double)mat_bytes * copies / t_k / 1e9);
  }
  // Then the row-major copies are replaced by packed ones (keeps peak memory at one set).
  for (int c = 0; c < copies; c++) {
    if (mx_cpu_pack_f32(kt, pool, w[c], s->k, s->n, s->k, &pw[c]) != MX_OK) {
      fprintf(stderr, "pack: %s\n", mx_error_message());
      exit(1);
    }
    free(w[c]);
  }
  mx_cpu_gemv_packed_f32_run(pool, pw[0], x, y);
  for (int r = 0; r < reps; r++) {
    double t_bw = 0, t_k = 0;
    for (int c = 0; c < copies; c++) {
      t_bw += stream_bytes(pool, mat_bytes);
      double t0 = mx_bench_now_s();
      mx_cpu_gemv_packed_f32_run(pool, pw[c], x, y);
      t_k += mx_bench_now_s() - t0;
    }
    rep_add(&packed, (double)mat_bytes * copies / t_bw / 1e9,
            (double)mat_bytes * copies / t_k / 1e9);
  }
  printf("%-13s %-20s %2d | %5.1f %6.1f %5.1f%% %5.1f%% | %5.1f %6.1f %5.1f%% %5.1f%% | %3d\n",
         s->model, s->name, mx_cpu_pool_threads(pool), rep_median_limit(&rows),
         rep_median_kernel(&rows), 100 * rep_median_ratio(&rows), 100 * rep_best_ratio(&rows),
         rep_median_limit(&packed), rep_median_kernel(&packed), 100 * rep_median_ratio(&packed),
         100 * rep_best_ratio(&packed), copies);
  fflush(stdout);
  for (int c = 0; c < copies; c++) mx_cpu_packed_destroy(pw[c]);
  free(w);
  free(pw);
  free(x);
  free(y);
}

static void bench_gemm(mx_cpu_pool_t *pool, const mx_cpu_kernels_t *kt, const shape_t *s,
                       int reps) {
  const int64_t m = 512;
  float *w = xalloc((size_t)s->n * (size_t)s->k * sizeof(float));
  fill(w, (size_t)s->n * (size_t)s->k, 3);
  mx_cpu_packed_t *pw = NULL;
  if (mx_cpu_pack_f32(kt, pool, w, s->k, s->n, s->k, &pw) != MX_OK) {
    fprintf(stderr, "pack: %s\n", mx_error_message());
    exit(1);
  }
  free(w);
  float *x = xalloc((size_t)m * (size_t)s->k * sizeof(float));
  float *y = xalloc((size_t)m * (size_t)s->n * sizeof(float));
  fill(x, (size_t)m * (size_t)s->k, 5);
  double flops = 2.0 * (double)m * (double)s->n * (double)s->k;
  // Peak is measured right before and right after each GEMM; their mean is the limit.
  rep_stats_t st = {0};
  mx_cpu_gemm_packed_f32_run(pool, pw, x, s->k, y, s->n, m < 24 ? m : 24);  // warm-up
  for (int r = 0; r < reps; r++) {
    double before = measure_peak(pool);
    double t0 = mx_bench_now_s();
    mx_cpu_gemm_packed_f32_run(pool, pw, x, s->k, y, s->n, m);
    double t = mx_bench_now_s() - t0;
    double after = measure_peak(pool);
    rep_add(&st, 0.5 * (before + after), flops / t / 1e9);
  }
  printf("%-13s %-20s %2d | %7.1f %7.1f %5.1f%% %5.1f%%\n", s->model, s->name,
         mx_cpu_pool_threads(pool), rep_median_limit(&st), rep_median_kernel(&st),
         100 * rep_median_ratio(&st), 100 * rep_best_ratio(&st));
  fflush(stdout);
  mx_cpu_packed_destroy(pw);
  free(x);
  free(y);
}

int main(int argc, char **argv) {
  int reps = 5, threads[8] = {1, 2}, nthreads = 2;
  bool do_gemv = true, do_gemm = true;
  const mx_cpu_kernels_t *kt = mx_cpu_kernels_best();
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      nthreads = 0;
      for (char *t = strtok(argv[++i], ","); t && nthreads < 8; t = strtok(NULL, ",")) {
        threads[nthreads++] = atoi(t);
      }
    } else if (!strcmp(argv[i], "--skip-gemm")) {
      do_gemm = false;
    } else if (!strcmp(argv[i], "--skip-gemv")) {
      do_gemv = false;
    } else if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
      const char *name = argv[++i];
      kt = NULL;
      for (int isa = 0; isa < MX_CPU_ISA_COUNT; isa++) {
        if (!strcmp(name, mx_cpu_isa_name((mx_cpu_isa_t)isa))) {
          kt = mx_cpu_kernels_get((mx_cpu_isa_t)isa);
        }
      }
      if (!kt) {
        fprintf(stderr, "cpu_kernels: ISA '%s' unknown or unsupported here\n", name);
        return 2;
      }
    } else {
      fprintf(stderr,
              "usage: cpu_kernels [--reps R] [--threads T[,T...]] [--skip-gemm] [--skip-gemv] "
              "[--isa scalar|avx2|avx512]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (reps > MAX_REPS) reps = MAX_REPS;
  const mx_cpu_features_t *f = mx_cpu_features();
  printf("cpu: %d logical / %d physical; kernels %s; bandwidth/peak loops %s; %d reps\n",
         f->logical_cpus, f->physical_cores, mx_cpu_isa_name(mx_cpu_kernels_isa(kt)),
         mx_machine_loop_isa(), reps);

  for (int ti = 0; ti < nthreads; ti++) {
    mx_cpu_pool_t *pool = NULL;
    if (mx_cpu_pool_create(threads[ti], &pool) != MX_OK ||
        (!g_stream && mx_machine_stream_create(pool, (size_t)1 << 30, &g_stream) != MX_OK)) {
      fprintf(stderr, "pool: %s\n", mx_error_message());
      return 1;
    }
    double bw[MAX_REPS], pk[MAX_REPS], us[MAX_REPS];
    for (int r = 0; r < reps; r++) {
      bw[r] = measure_bw(pool);
      pk[r] = measure_peak(pool);
      us[r] = measure_dispatch_us(pool);
    }
    double bw_min = bw[0], bw_max = bw[0];
    for (int r = 1; r < reps; r++) {
      bw_min = bw[r] < bw_min ? bw[r] : bw_min;
      bw_max = bw[r] > bw_max ? bw[r] : bw_max;
    }
    printf(
        "\n== %d thread(s): bandwidth %.1f GB/s (%.1f..%.1f), peak %.1f GFLOP/s, empty job "
        "%.2f us (medians)\n",
        threads[ti], median(bw, reps), bw_min, bw_max, median(pk, reps), median(us, reps));
    if (do_gemv) {
      printf(
          "GEMV (decode), GB/s                 | row-major: BW   GEMV  med%%  best%% | "
          "packed: BW  GEMV  med%%  best%% | copies\n");
      for (int s = 0; s < NSHAPES; s++) bench_gemv(pool, kt, &kShapes[s], reps);
    }
    if (do_gemm) {
      printf("GEMM M=512 (prefill), GFLOP/s      |    peak    GEMM  med%%  best%%\n");
      for (int s = 0; s < NSHAPES; s++) bench_gemm(pool, kt, &kShapes[s], reps);
    }
    mx_cpu_pool_destroy(pool);
  }
  mx_machine_stream_destroy(g_stream);
  return 0;
}
