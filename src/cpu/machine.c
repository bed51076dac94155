// Machine limits (include/mlxcel/machine.h): streaming-sum bandwidth and FMA peak, after the
// method of bench/cpu_kernels.c.
#include "mlxcel/machine.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define MX_T512 __attribute__((target("avx512f,fma")))
#define MX_T256 __attribute__((target("avx2,fma")))
#endif

enum { MX_MACHINE_MAX_REPS = 101, MX_PAD = 16 };

typedef enum loop_kind { LOOP_SCALAR = 0, LOOP_AVX2 = 1, LOOP_AVX512 = 2 } loop_kind_t;

static loop_kind_t loop_kind(void) {
  const mx_cpu_features_t *f = mx_cpu_features();
  if (f->avx512f && f->fma) return LOOP_AVX512;
  if (f->avx2 && f->fma) return LOOP_AVX2;
  return LOOP_SCALAR;
}

const char *mx_machine_loop_isa(void) {
  static const char *const names[] = {"scalar", "avx2", "avx512"};
  return names[loop_kind()];
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void stats(double *v, int n, double *median, double *best) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  *best = v[n - 1];
}

// ---- Bandwidth ----

typedef struct bw_job {
  const float *buf;
  size_t n;        // floats in the buffer, a multiple of 64
  size_t lo, len;  // the range one pass reads (multiples of 64 floats: aligned loads)
  loop_kind_t kind;
  float partial[256 * MX_PAD];
} bw_job_t;

#if defined(__x86_64__)
// Four accumulators, 256 bytes per iteration (the fastest simple read loop in cpu_kernels.c).
MX_T512 static float sum_avx512(const float *p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  for (; i < n; i++) s += p[i];
  return s;
}

MX_T256 static float sum_avx2(const float *p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  __m256 s8 = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  float t[8];
  _mm256_storeu_ps(t, s8);
  float s = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
  for (; i < n; i++) s += p[i];
  return s;
}
#endif

static float sum_scalar(const float *p, size_t n) {
  float s[8] = {0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; j++) s[j] += p[i + j];
  }
  for (; i < n; i++) s[0] += p[i];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

static void bw_task(void *ctx, int ith, int nth) {
  bw_job_t *job = ctx;
  size_t chunk = (job->len / (size_t)nth) & ~(size_t)63;  // 256-byte multiples: aligned loads
  size_t lo = job->lo + chunk * (size_t)ith;
  size_t hi = ith == nth - 1 ? job->lo + job->len : lo + chunk;
  const float *p = job->buf + lo;
  float s;
#if defined(__x86_64__)
  if (job->kind == LOOP_AVX512) {
    s = sum_avx512(p, hi - lo);
  } else if (job->kind == LOOP_AVX2) {
    s = sum_avx2(p, hi - lo);
  } else {
    s = sum_scalar(p, hi - lo);
  }
#else
  s = sum_scalar(p, hi - lo);
#endif
  job->partial[ith * MX_PAD] = s;
}

// Each thread writes its own part first, so pages are placed as the readers will use them.
static void fill_task(void *ctx, int ith, int nth) {
  bw_job_t *job = ctx;
  size_t chunk = (job->n / (size_t)nth) & ~(size_t)63;
  size_t lo = chunk * (size_t)ith, hi = ith == nth - 1 ? job->n : lo + chunk;
  float *p = (float *)job->buf;
  for (size_t i = lo; i < hi; i++) p[i] = (float)(i & 1023) * (1.0f / 1024.0f) - 0.5f;
}

struct mx_machine_stream {
  bw_job_t job;
  size_t pos;  // where the next read starts (floats)
};

mx_status_t mx_machine_stream_create(mx_cpu_pool_t *pool, size_t bytes, mx_machine_stream_t **out) {
  *out = NULL;
  if (!pool || bytes < 4096) {
    return mx_error_set(MX_ERR_INVALID_ARG, "machine stream: need a pool and >= 4096 bytes");
  }
  size_t n = bytes / sizeof(float) / 64 * 64;
  // mmap, not malloc: the pages go back to the system on destroy (malloc's dynamic mmap
  // threshold would keep a second buffer of this size resident in the heap, and a caller
  // measuring its own peak RSS would count it).
  mx_machine_stream_t *s = calloc(1, sizeof *s);
  void *map =
      mmap(NULL, n * sizeof(float), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!s || map == MAP_FAILED) {
    free(s);
    if (map != MAP_FAILED) munmap(map, n * sizeof(float));
    return mx_error_set(MX_ERR_NOMEM, "machine stream: cannot allocate %zu bytes", bytes);
  }
#if defined(MADV_HUGEPAGE)
  // The same 2 MiB pages as the packed weights (cpu/stream_alloc.h): over 4 KiB pages the
  // streaming read measured the TLB, not the memory (~60% of this on a 2-vCPU VM).
  (void)madvise(map, n * sizeof(float), MADV_HUGEPAGE);
#endif
  s->job.buf = map;  // page-aligned
  s->job.n = n;
  s->job.len = n;
  s->job.kind = loop_kind();
  mx_cpu_pool_run(pool, fill_task, &s->job);
  *out = s;
  return MX_OK;
}

void mx_machine_stream_destroy(mx_machine_stream_t *s) {
  if (!s) return;
  munmap((void *)s->job.buf, s->job.n * sizeof(float));
  free(s);
}

size_t mx_machine_stream_bytes(const mx_machine_stream_t *s) { return s->job.n * sizeof(float); }

double mx_machine_stream_read(mx_machine_stream_t *s, mx_cpu_pool_t *pool, size_t bytes) {
  size_t want = (bytes / sizeof(float) + 63) & ~(size_t)63;
  double t = 0;
  while (want > 0) {
    if (s->pos >= s->job.n) s->pos = 0;
    size_t len = s->job.n - s->pos < want ? s->job.n - s->pos : want;
    s->job.lo = s->pos;
    s->job.len = len;
    double t0 = now_s();
    mx_cpu_pool_run(pool, bw_task, &s->job);
    t += now_s() - t0;
    s->pos += len;
    want -= len;
  }
  return t;
}

mx_status_t mx_machine_bandwidth(mx_cpu_pool_t *pool, size_t bytes, int reps, double *median_gbs,
                                 double *best_gbs) {
  if (!pool || reps < 1 || reps > MX_MACHINE_MAX_REPS || bytes < 4096) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "machine bandwidth: need a pool, 1..%d reps and >= 4096 bytes",
                        MX_MACHINE_MAX_REPS);
  }
  mx_machine_stream_t *s = NULL;
  mx_status_t st = mx_machine_stream_create(pool, bytes, &s);
  if (st != MX_OK) return st;
  size_t total = mx_machine_stream_bytes(s);
  mx_machine_stream_read(s, pool, total);  // warm-up pass (TLB, frequency)
  double v[MX_MACHINE_MAX_REPS];
  for (int r = 0; r < reps; r++) {
    double t = mx_machine_stream_read(s, pool, total);  // one whole pass
    v[r] = (double)total / (t > 0 ? t : 1e-9) / 1e9;
  }
  stats(v, reps, median_gbs, best_gbs);
  mx_machine_stream_destroy(s);
  return MX_OK;
}

// ---- Peak ----

typedef struct peak_job {
  long iters;
  loop_kind_t kind;
  double flops_per_thread;
  float sink[256 * MX_PAD];
} peak_job_t;

#if defined(__x86_64__)
// 16 independent accumulators: covers FMA latency (4-5 cycles) x 2-4 FMA pipes.
MX_T512 static float fma_avx512(long iters, double *flops) {
  __m512 a[16];
  __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps((float)i);
  for (long it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) a[i] = _mm512_fmadd_ps(a[i], m, c);
  }
  __m512 s = a[0];
  for (int i = 1; i < 16; i++) s = _mm512_add_ps(s, a[i]);
  *flops = (double)iters * 16 * 16 * 2;
  return _mm512_reduce_add_ps(s);
}

// 12 accumulators + 2 constants fit the 16 ymm registers.
MX_T256 static float fma_avx2(long iters, double *flops) {
  __m256 a[12];
  __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i);
  for (long it = 0; it < iters; it++) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++) a[i] = _mm256_fmadd_ps(a[i], m, c);
  }
  __m256 s = a[0];
  for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, a[i]);
  float t[8];
  _mm256_storeu_ps(t, s);
  *flops = (double)iters * 12 * 8 * 2;
  return t[0] + t[7];
}
#endif

static float fma_scalar(long iters, double *flops) {
  float a[8];
  for (int i = 0; i < 8; i++) a[i] = (float)i;
  for (long it = 0; it < iters; it++) {
    for (int i = 0; i < 8; i++) a[i] = a[i] * 0.999999f + 1e-7f;
  }
  *flops = (double)iters * 8 * 2;
  return a[0] + a[7];
}

static void peak_task(void *ctx, int ith, int nth) {
  peak_job_t *job = ctx;
  double flops = 0;
  float s;
#if defined(__x86_64__)
  if (job->kind == LOOP_AVX512) {
    s = fma_avx512(job->iters, &flops);
  } else if (job->kind == LOOP_AVX2) {
    s = fma_avx2(job->iters, &flops);
  } else {
    s = fma_scalar(job->iters, &flops);
  }
#else
  s = fma_scalar(job->iters, &flops);
#endif
  job->sink[ith * MX_PAD] = s;
  if (ith == 0) job->flops_per_thread = flops;
  (void)nth;
}

static double run_peak(mx_cpu_pool_t *pool, peak_job_t *job, double *seconds) {
  double t0 = now_s();
  mx_cpu_pool_run(pool, peak_task, job);
  double t = now_s() - t0;
  if (t <= 0) t = 1e-9;
  *seconds = t;
  return job->flops_per_thread * mx_cpu_pool_threads(pool) / t / 1e9;
}

mx_status_t mx_machine_peak(mx_cpu_pool_t *pool, double seconds, int reps, double *median_gflops,
                            double *best_gflops) {
  if (!pool || reps < 1 || reps > MX_MACHINE_MAX_REPS || !(seconds > 0)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "machine peak: need a pool, 1..%d reps, seconds > 0",
                        MX_MACHINE_MAX_REPS);
  }
  peak_job_t *job = calloc(1, sizeof *job);
  if (!job) return mx_error_set(MX_ERR_NOMEM, "machine peak: out of memory");
  job->kind = loop_kind();
  // Calibrate the iteration count so one run takes about `seconds`.
  job->iters = 10000;
  double t = 0;
  for (int k = 0; k < 20; k++) {
    run_peak(pool, job, &t);
    if (t >= seconds * 0.25) break;
    job->iters *= 4;
  }
  double scaled = (double)job->iters * seconds / t;
  job->iters = scaled < 1000 ? 1000 : (long)scaled;
  double v[MX_MACHINE_MAX_REPS];
  for (int r = 0; r < reps; r++) v[r] = run_peak(pool, job, &t);
  stats(v, reps, median_gflops, best_gflops);
  free(job);
  return MX_OK;
}

mx_status_t mx_machine_measure(const mx_machine_opts_t *opts, mx_machine_info_t *out) {
  mx_machine_opts_t o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  if (o.bw_bytes == 0) o.bw_bytes = (size_t)1 << 30;
  if (o.reps == 0) o.reps = 5;
  if (o.peak_seconds == 0) o.peak_seconds = 0.2;
  memset(out, 0, sizeof *out);
  mx_cpu_pool_t *pool = NULL;
  mx_status_t st = mx_cpu_pool_create(o.threads, &pool);
  if (st != MX_OK) return st;
  out->threads = mx_cpu_pool_threads(pool);
  out->bw_bytes = o.bw_bytes;
  out->reps = o.reps;
  out->loop_isa = mx_machine_loop_isa();
  st =
      mx_machine_bandwidth(pool, o.bw_bytes, o.reps, &out->bandwidth_gbs, &out->bandwidth_best_gbs);
  if (st == MX_OK) {
    st = mx_machine_peak(pool, o.peak_seconds, o.reps, &out->peak_gflops, &out->peak_best_gflops);
  }
  mx_cpu_pool_destroy(pool);
  return st;
}
