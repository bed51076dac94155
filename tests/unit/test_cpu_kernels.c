// f32 GEMV / GEMM kernels against a double-accumulating reference on random inputs and awkward
// shapes, for every dispatch variant this machine supports (scalar always) and 1, 2, 3 threads.
//
// Tolerance: |y - ref| <= 4 * (K + 2) * 2^-24 * sum_k |w_k x_k| + 1e-30, i.e. the textbook bound
// for a length-K f32 sum (gamma_K ~ K u with u = 2^-24) with a safety factor of 4, relative to
// the sum of absolute products (y itself may cancel to ~0). Results must be bit-identical
// across thread counts, and outputs outside the written range must stay untouched.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/cpu.h"
#include "mx_test.h"

static const int64_t kSizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 64, 100, 127, 172, 513};
enum { NSIZES = sizeof kSizes / sizeof kSizes[0], NPOOLS = 3 };

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float rnd(void) {  // uniform in [-1, 1)
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *rand_buf(int64_t n) {
  float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = rnd();
  return p;
}

static const float kSentinel = 12345.5f;

static mx_cpu_pool_t *g_pools[NPOOLS];  // 1, 2, 3 threads
static long g_bad_values, g_bad_threads, g_bad_sentinel;

// ref[i*n + j] and abs sums for Y = X W^T.
static void reference(const float *x, int64_t ldx, const float *w, int64_t ldw, int64_t m,
                      int64_t n, int64_t k, double *ref, double *mag) {
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      double s = 0, a = 0;
      for (int64_t kk = 0; kk < k; kk++) {
        double p = (double)x[i * ldx + kk] * (double)w[j * ldw + kk];
        s += p;
        a += p < 0 ? -p : p;
      }
      ref[i * n + j] = s;
      mag[i * n + j] = a;
    }
  }
}

// Compares y (m rows of stride ldy, n valid columns) with the reference; counts sentinel damage
// in columns [n, ldy).
static void compare(const char *what, const char *isa, const float *y, int64_t ldy,
                    const double *ref, const double *mag, int64_t m, int64_t n, int64_t k) {
  double tol_scale = 4.0 * (double)(k + 2) / 16777216.0;
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      double err = fabs((double)y[i * ldy + j] - ref[i * n + j]);
      if (!(err <= tol_scale * mag[i * n + j] + 1e-30)) {
        if (g_bad_values++ < 10) {
          fprintf(stderr, "%s/%s M=%lld N=%lld K=%lld at [%lld,%lld]: %.9g vs %.9g\n", what, isa,
                  (long long)m, (long long)n, (long long)k, (long long)i, (long long)j,
                  (double)y[i * ldy + j], ref[i * n + j]);
        }
      }
    }
    for (int64_t j = n; j < ldy; j++) g_bad_sentinel += y[i * ldy + j] != kSentinel;
  }
}

static void fill_sentinel(float *y, int64_t count) {
  for (int64_t i = 0; i < count; i++) y[i] = kSentinel;
}

// The work-sharing kernels (cpu.h's _dyn), run as one pool job with a fresh counter; with
// apack, X is packed first (mx_cpu_gemm_pack_x, every thread its share, then a barrier).
typedef struct dyn_job {
  const mx_cpu_packed_t *w;
  const float *x;
  float *y, *apack;
  int64_t ldx, ldy, m;
  mx_cpu_pool_t *pool;
  mx_cpu_work_t work;
} dyn_job_t;

static void dyn_task(void *ctx, int ith, int nth) {
  dyn_job_t *j = ctx;
  if (j->m == 1 && j->ldx == 0) {
    mx_cpu_gemv_packed_f32_dyn(j->w, j->x, j->y, &j->work, ith, nth);
    return;
  }
  if (j->apack) {
    mx_cpu_gemm_pack_x(j->w->kt, j->x, j->ldx, j->m, j->w->k, j->apack, ith, nth);
    mx_cpu_pool_barrier(j->pool);
  }
  mx_cpu_gemm_packed_f32_dyn(j->w, j->apack ? NULL : j->x, j->ldx, j->apack, j->y, j->ldy, j->m,
                             &j->work, ith, nth);
}

// Runs the _dyn kernel on every pool into a sentinel-filled copy and counts differences from
// `want` (the fixed split's single-thread result, m rows of stride ldy); GEMMs also from X
// packed once.
static void check_dyn(const mx_cpu_packed_t *pw, const float *x, int64_t ldx, int64_t ldy,
                      int64_t m, const float *want) {
  float *y = malloc((size_t)(m * ldy) * sizeof(float));
  bool gemv = m == 1 && ldx == 0;
  float *apack = gemv ? NULL : malloc(mx_cpu_gemm_apack_floats(pw->kt, m, pw->k) * sizeof(float));
  for (int pre = 0; pre < (gemv ? 1 : 2); pre++) {
    for (int t = 0; t < NPOOLS; t++) {
      fill_sentinel(y, m * ldy);
      dyn_job_t j = {.w = pw, .x = x, .y = y, .ldx = ldx, .ldy = ldy, .m = m, .pool = g_pools[t]};
      if (pre) j.apack = apack;
      mx_cpu_work_reset(&j.work);
      mx_cpu_pool_run(g_pools[t], dyn_task, &j);
      g_bad_threads += memcmp(y, want, (size_t)(m * ldy) * sizeof(float)) != 0;
    }
  }
  free(apack);
  free(y);
}

// GEMV (row-major and packed) for one shape, all pools; ldw = k + pad.
static void check_gemv(const mx_cpu_kernels_t *kt, int64_t n, int64_t k, int64_t pad) {
  const char *isa = mx_cpu_isa_name(mx_cpu_kernels_isa(kt));
  int64_t ldw = k + pad;
  float *w = rand_buf(n * ldw), *x = rand_buf(k);
  double *ref = malloc((size_t)n * sizeof *ref), *mag = malloc((size_t)n * sizeof *mag);
  reference(x, k, w, ldw, 1, n, k, ref, mag);
  mx_cpu_packed_t *pw = NULL;
  CHECK_OK(mx_cpu_pack_f32(kt, g_pools[1], w, ldw, n, k, &pw));
  float *y[2][NPOOLS];
  for (int t = 0; t < NPOOLS; t++) {
    for (int v = 0; v < 2; v++) {
      y[v][t] = malloc((size_t)(n + 5) * sizeof(float));
      fill_sentinel(y[v][t], n + 5);
    }
    mx_cpu_gemv_f32_run(g_pools[t], kt, w, ldw, x, y[0][t], n, k);
    if (pw) mx_cpu_gemv_packed_f32_run(g_pools[t], pw, x, y[1][t]);
    compare("gemv", isa, y[0][t], n + 5, ref, mag, 1, n, k);
    if (pw) compare("gemv_packed", isa, y[1][t], n + 5, ref, mag, 1, n, k);
  }
  if (pw) check_dyn(pw, x, 0, n + 5, 1, y[1][0]);
  for (int v = 0; v < 2; v++) {
    for (int t = 1; t < NPOOLS; t++) {
      g_bad_threads += memcmp(y[v][0], y[v][t], (size_t)n * sizeof(float)) != 0;
    }
    for (int t = 0; t < NPOOLS; t++) free(y[v][t]);
  }
  mx_cpu_packed_destroy(pw);
  free(w);
  free(x);
  free(ref);
  free(mag);
}

// GEMM for one shape, all pools; ldx = k + 1 and ldy = n + 3 exercise strides and sentinels.
static void check_gemm(const mx_cpu_kernels_t *kt, int64_t m, int64_t n, int64_t k) {
  const char *isa = mx_cpu_isa_name(mx_cpu_kernels_isa(kt));
  int64_t ldx = k + 1, ldy = n + 3;
  float *w = rand_buf(n * k), *x = rand_buf(m * ldx);
  double *ref = malloc((size_t)(m * n) * sizeof *ref), *mag = malloc((size_t)(m * n) * sizeof *mag);
  reference(x, ldx, w, k, m, n, k, ref, mag);
  mx_cpu_packed_t *pw = NULL;
  CHECK_OK(mx_cpu_pack_f32(kt, NULL, w, k, n, k, &pw));
  float *y[NPOOLS];
  for (int t = 0; t < NPOOLS; t++) {
    y[t] = malloc((size_t)(m * ldy) * sizeof(float));
    fill_sentinel(y[t], m * ldy);
    if (pw) mx_cpu_gemm_packed_f32_run(g_pools[t], pw, x, ldx, y[t], ldy, m);
    compare("gemm", isa, y[t], ldy, ref, mag, m, n, k);
  }
  if (pw) check_dyn(pw, x, ldx, ldy, m, y[0]);
  for (int t = 1; t < NPOOLS; t++) {
    g_bad_threads += memcmp(y[0], y[t], (size_t)(m * ldy) * sizeof(float)) != 0;
  }
  for (int t = 0; t < NPOOLS; t++) free(y[t]);
  mx_cpu_packed_destroy(pw);
  free(w);
  free(x);
  free(ref);
  free(mag);
}

static void check_pack_layout(const mx_cpu_kernels_t *kt) {
  int64_t n = 37, k = 5;
  float *w = rand_buf(n * k);
  mx_cpu_packed_t *p = NULL;
  CHECK_OK(mx_cpu_pack_f32(kt, NULL, w, k, n, k, &p));
  if (!p) return;
  int nr = mx_cpu_kernels_panel_rows(kt);
  CHECK(p->nr == nr && p->panels == (n + nr - 1) / nr && p->n == n && p->k == k);
  CHECK(((uintptr_t)p->data & 63) == 0);
  long bad = 0;
  for (int64_t pi = 0; pi < p->panels; pi++) {
    for (int64_t kk = 0; kk < k; kk++) {
      for (int r = 0; r < nr; r++) {
        int64_t row = pi * nr + r;
        float want = row < n ? w[row * k + kk] : 0.0f;
        bad += p->data[(pi * k + kk) * nr + r] != want;
      }
    }
  }
  CHECK(bad == 0);
  mx_cpu_packed_destroy(p);
  free(w);
}

// mx_cpu_matmul_region: running only thread ith's share of a GEMM / GEMV writes exactly its
// region, and the regions of all threads tile Y without overlap.
static void check_regions(const mx_cpu_kernels_t *kt, int64_t m, int64_t n, int64_t k, int nth) {
  float *w = rand_buf(n * k), *x = rand_buf(m * k), *y = malloc(sizeof(float) * (size_t)(m * n));
  int *owner = calloc((size_t)(m * n), sizeof *owner);
  mx_cpu_packed_t *pw = NULL;
  CHECK_OK(mx_cpu_pack_f32(kt, NULL, w, k, n, k, &pw));
  long bad = 0;
  for (int gemm = 0; gemm < 2 && pw; gemm++) {
    if (!gemm && m != 1) continue;  // the GEMV split is for one row (and the per-row kernels)
    memset(owner, 0, sizeof(int) * (size_t)(m * n));
    for (int ith = 0; ith < nth; ith++) {
      for (int64_t i = 0; i < m * n; i++) y[i] = kSentinel;
      if (gemm)
        mx_cpu_gemm_packed_f32(pw, x, k, NULL, y, n, m, ith, nth);
      else
        mx_cpu_gemv_packed_f32(pw, x, y, ith, nth);
      int64_t r0, r1, c0, c1;
      mx_cpu_matmul_region(pw, m, gemm, ith, nth, &r0, &r1, &c0, &c1);
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          bool in = i >= r0 && i < r1 && j >= c0 && j < c1;
          bad += in == (y[i * n + j] == kSentinel);  // written iff inside the region
          if (in) owner[i * n + j]++;
        }
    }
    for (int64_t i = 0; i < m * n; i++) bad += owner[i] != 1;
  }
  CHECK_MSG(bad == 0, "%s regions m %lld n %lld k %lld, %d threads: %ld mismatches",
            mx_cpu_isa_name(mx_cpu_kernels_isa(kt)), (long long)m, (long long)n, (long long)k, nth,
            bad);
  mx_cpu_packed_destroy(pw);
  free(w), free(x), free(y), free(owner);
}

int main(void) {
  const mx_cpu_features_t *f = mx_cpu_features();
  printf("features: avx2=%d fma=%d f16c=%d avx512f=%d bw=%d vl=%d dq=%d vnni=%d bf16=%d\n", f->avx2,
         f->fma, f->f16c, f->avx512f, f->avx512bw, f->avx512vl, f->avx512dq, f->avx512vnni,
         f->avx512bf16);
  printf("best: %s\n", mx_cpu_isa_name(mx_cpu_kernels_isa(mx_cpu_kernels_best())));
  CHECK(mx_cpu_kernels_get(MX_CPU_ISA_SCALAR) != NULL);
  CHECK(mx_cpu_kernels_get(MX_CPU_ISA_COUNT) == NULL);
  CHECK(strcmp(mx_cpu_isa_name(MX_CPU_ISA_COUNT), "?") == 0);

  for (int t = 0; t < NPOOLS; t++) CHECK_OK(mx_cpu_pool_create(t + 1, &g_pools[t]));

  mx_cpu_packed_t *p = NULL;
  CHECK(mx_cpu_pack_f32(NULL, NULL, NULL, 1, 1, 1, &p) == MX_ERR_INVALID_ARG);
  CHECK(mx_cpu_pack_f32(mx_cpu_kernels_best(), NULL, NULL, 1, 2, 2, &p) == MX_ERR_INVALID_ARG);

  for (int isa = 0; isa < MX_CPU_ISA_COUNT; isa++) {
    const mx_cpu_kernels_t *kt = mx_cpu_kernels_get((mx_cpu_isa_t)isa);
    if (!kt) {
      printf("%s: not supported here, skipped\n", mx_cpu_isa_name((mx_cpu_isa_t)isa));
      continue;
    }
    long before = g_bad_values + g_bad_threads + g_bad_sentinel;
    int shapes = 0;
    check_pack_layout(kt);
    for (int a = 0; a < NSIZES; a++) {
      for (int b = 0; b < NSIZES; b++) {
        check_gemv(kt, kSizes[a], kSizes[b], (a + b) % 3);
        shapes++;
      }
    }
    check_gemv(kt, 5, 0, 0);  // K = 0: y = 0
    for (int a = 0; a < NSIZES; a++) {
      for (int b = 0; b < NSIZES; b++) {
        for (int c = 0; c < NSIZES; c++) {
          if (kSizes[a] * kSizes[b] * kSizes[c] > 300000) continue;
          check_gemm(kt, kSizes[a], kSizes[b], kSizes[c]);
          shapes++;
        }
      }
    }
    check_gemm(kt, 513, 513, 513);
    const int64_t rs[][3] = {{1, 100, 17}, {1, 31, 5}, {7, 33, 9}, {40, 17, 3}, {13, 200, 8}};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
      for (int nth = 1; nth <= 5; nth++) check_regions(kt, rs[i][0], rs[i][1], rs[i][2], nth);
    check_gemm(kt, 4, 3, 0);  // K = 0: Y = 0
    shapes += 2;
    long after = g_bad_values + g_bad_threads + g_bad_sentinel;
    printf("%s: %d shapes x %d thread counts, %ld failures\n", mx_cpu_isa_name((mx_cpu_isa_t)isa),
           shapes, NPOOLS, after - before);
  }
  CHECK_MSG(g_bad_values == 0, "%ld values out of tolerance", g_bad_values);
  CHECK_MSG(g_bad_threads == 0, "%ld results differ between thread counts", g_bad_threads);
  CHECK_MSG(g_bad_sentinel == 0, "%ld writes outside the output", g_bad_sentinel);
  for (int t = 0; t < NPOOLS; t++) mx_cpu_pool_destroy(g_pools[t]);
  return mx_test_finish();
}
