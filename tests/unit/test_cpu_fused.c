// The fused CPU kernels (src/cpu/fused.h) against (1) naive double references and (2) the
// composite decompositions of the model graphs run by the reference interpreter (the contract),
// for every ISA variant this machine supports, on 1, 2 and 3 threads (results must be
// bit-identical across thread counts), on awkward shapes: sizes 1, primes, non-multiples of 16,
// GQA 1/2/4/8, windows, softcap, decode and prefill with pos0 > 0, caches much longer than the
// valid range whose invalid part is NaN (a kernel reading it would return NaN).
//
// Tolerance: |got - want| <= TOL * (|want| + M) with TOL = 1e-5 and M the largest |want| of the
// tensor ("1e-5 relative to the magnitude"); gated activations use M = |gate * up| of the
// element (gelu_tanh's 1 + tanh cancels for negative gates, in the decomposition as well).
// Against the interpreter (itself f32) the bound is 2 * TOL.
//
// MX_FUSED_BENCH=1 also times one decode step of attention (Hq 32, Hkv 8, D 128, 100 valid
// positions) at S = 512 and S = 4096: reading only the valid range, both must take the same time.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "cpu/fused.h"
#include "model/graph_internal.h"
#include "mx_test.h"

#define TOL 1e-5

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static double urand(void) {  // [-1, 1)
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) / 4503599627370496.0 - 1.0;
}
static float *rand_f(int64_t n, double scale) {
  float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) p[i] = (float)(scale * urand());
  return p;
}

enum { NPOOLS = 3 };
static mx_cpu_pool_t *g_pools[NPOOLS];  // 1, 2, 3 threads
static long g_bad_values, g_bad_threads, g_bad_sentinel;
static const char *g_isa = "";

// |got - want| <= tol * (|want| + M), M = max |want| (or per element mag[] when given).
static double check_close(const char *what, const float *got, const double *want, const double *mag,
                          int64_t n, double tol) {
  double m = 0, worst = 0;
  for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(want[i]));
  long bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double scale = fabs(want[i]) + (mag ? mag[i] : m);
    double e = fabs((double)got[i] - want[i]);
    if (!(e <= tol * scale)) {
      if (bad++ < 3) {
        printf("  %s [%s] #%lld: got %.9g want %.9g\n", what, g_isa, (long long)i, got[i], want[i]);
      }
    } else if (scale > 0) {
      worst = fmax(worst, e / scale);
    }
  }
  g_bad_values += bad;
  return worst;
}

// ---- Running a kernel on a pool ----

typedef enum { K_RMS, K_ROPE, K_ATTN, K_ACT, K_EMBED, K_TANH, K_LOGISTIC, K_ROWDOT } kind_t;
typedef struct job {
  kind_t kind;
  const float *x, *w, *k, *v;
  float *y, *scratch;
  const int32_t *ids;
  const float *inv;
  int64_t rows, h, bt, nh, d, rd, b, t, hq, hkv, s, window, n, vocab;
  float eps, off, scale, softcap;
  int style, act;
} job_t;

static void job_task(void *ctx, int ith, int nth) {
  job_t *j = ctx;
  switch (j->kind) {
    case K_RMS:
      mx_cpu_rms_norm_f32(j->x, j->w, j->y, j->rows, j->h, j->eps, j->off, ith, nth);
      break;
    case K_ROPE:
      mx_cpu_rope_f32(j->y, j->ids, j->inv, j->bt, j->nh, j->d, j->rd, j->style, ith, nth);
      break;
    case K_ATTN:
      mx_cpu_attention_f32(j->x, j->k, j->v, j->ids, j->y, j->b, j->t, j->hq, j->hkv, j->s, j->d,
                           j->scale, j->window, j->softcap, j->scratch, ith, nth);
      break;
    case K_ACT:
      mx_cpu_gated_act_f32(j->x, j->w, j->y, j->n, j->act, ith, nth);
      break;
    case K_EMBED:
      mx_cpu_embed_f32(j->x, j->vocab, j->h, j->ids, j->n, j->y, ith, nth);
      break;
    case K_TANH:
      mx_cpu_tanh_f32(j->x, j->y, j->n, ith, nth);
      break;
    case K_LOGISTIC:
      mx_cpu_logistic_f32(j->x, j->y, j->n, ith, nth);
      break;
    case K_ROWDOT:
      mx_cpu_row_dot_f32(j->x, j->w, j->y, j->rows, j->h, ith, nth);
      break;
  }
}

enum { SENT = 16 };
static const float kSentinel = -12345.5f;

// Runs the job on 1, 2, 3 threads with out = job->y (n_out floats, followed by SENT sentinels);
// for K_ROPE `init` is copied into y first (in-place kernel). Returns the 1-thread result in y.
static void run_all(job_t *job, int64_t n_out, const float *init) {
  float *first = malloc(sizeof(float) * (size_t)(n_out + 1));
  float *y = job->y;
  for (int p = 0; p < NPOOLS; p++) {
    if (init)
      memcpy(y, init, sizeof(float) * (size_t)n_out);
    else
      for (int64_t i = 0; i < n_out; i++) y[i] = NAN;
    for (int i = 0; i < SENT; i++) y[n_out + i] = kSentinel;
    if (job->scratch) {  // the kernel must not depend on what the scratch held
      size_t per = mx_cpu_attention_scratch_floats(job->d, job->s);
      for (size_t i = 0; i < per * NPOOLS; i++) job->scratch[i] = NAN;
    }
    mx_cpu_pool_run(g_pools[p], job_task, job);
    for (int i = 0; i < SENT; i++) g_bad_sentinel += y[n_out + i] != kSentinel;
    if (p == 0) {
      memcpy(first, y, sizeof(float) * (size_t)n_out);
    } else if (memcmp(first, y, sizeof(float) * (size_t)n_out) != 0) {
      g_bad_threads++;
      printf("  kind %d [%s]: %d threads differ from 1 thread\n", job->kind, g_isa, p + 1);
    }
  }
  memcpy(y, first, sizeof(float) * (size_t)n_out);
  free(first);
}

// ---- Fused pairs: bit-identical to their two kernels in sequence, on 1, 2 and 3 threads ----

typedef struct pair_job {
  const float *a, *b, *w, *inv, *table;
  const int32_t *pos;
  float *sum, *y;
  int64_t rows, h, nh, d, rd;
  int style;
} pair_job_t;

static void add_norm_task(void *ctx, int ith, int nth) {
  pair_job_t *j = ctx;
  mx_cpu_add_rms_norm_f32(j->a, j->b, j->w, j->sum, j->y, j->rows, j->h, 1e-5f, 0.5f, ith, nth);
}

static void rope_copy_task(void *ctx, int ith, int nth) {
  pair_job_t *j = ctx;
  mx_cpu_rope_copy_f32(j->a, j->y, j->pos, j->inv, j->table, j->rows, j->nh, j->d, j->rd, j->style,
                       ith, nth);
}

typedef struct heads_job {
  const float *src, *inv, *table;
  float *dst;
  int32_t pos;
  int64_t nh, d, rd, stride;
  int style;
} heads_job_t;

static void rope_heads_task(void *ctx, int ith, int nth) {
  heads_job_t *j = ctx;
  mx_cpu_rope_copy_heads_f32(j->src, j->dst, j->stride, j->pos, j->inv, j->table, j->nh, j->d,
                             j->rd, j->style, ith, nth);
}

// mx_cpu_rope_copy_heads_f32 of row r of `a` (position pos[r], table row r or none) into slot 1
// of a [nh, 3, d] cache equals row r of `want` (mx_cpu_rope_f32's), nothing else written.
static long check_rope_heads(const float *a, const float *want, const int32_t *pos,
                             const float *inv, const float *table, int64_t rows, int64_t nh,
                             int64_t d, int64_t rd, int style) {
  long bad = 0;
  size_t n = (size_t)(nh * 3 * d);
  float *cache = malloc(sizeof(float) * n);
  for (int64_t r = 0; r < rows; r++)
    for (int p = 0; p < NPOOLS; p++) {
      memset(cache, 0xff, sizeof(float) * n);
      heads_job_t j = {
          a + r * nh * d, inv,  table ? table + r * rd : NULL, cache + d, pos[r], nh, d, rd,
          3 * d,          style};
      mx_cpu_pool_run(g_pools[p], rope_heads_task, &j);
      for (int64_t hh = 0; hh < nh; hh++)
        for (int64_t slot = 0; slot < 3; slot++) {
          const float *got = cache + (hh * 3 + slot) * d;
          if (slot == 1) {
            bad += memcmp(got, want + (r * nh + hh) * d, sizeof(float) * (size_t)d) != 0;
          } else {
            uint32_t u;
            for (int64_t i = 0; i < d; i++) {
              memcpy(&u, got + i, 4);
              bad += u != 0xffffffffu;
            }
          }
        }
    }
  free(cache);
  return bad;
}

// check_rope_heads on `rows` one-token rows of nh heads (as many heads as a model's kv heads, an
// odd number split over 2 and 3 threads).
static void test_rope_heads(int64_t rows, int64_t nh, int64_t d, int64_t rd) {
  float *a = rand_f(rows * nh * d, 3.0), *want = malloc(sizeof(float) * (size_t)(rows * nh * d));
  float *inv = rand_f(rd / 2, 0.5), *table = malloc(sizeof(float) * (size_t)(rows * rd));
  int32_t *pos = malloc(sizeof(int32_t) * (size_t)rows);
  for (int64_t i = 0; i < rows; i++) pos[i] = (int32_t)(7 * i + 500);
  mx_cpu_rope_table_f32(pos, inv, rows, rd / 2, 1.0f, table, 0, 1);
  for (int style = 0; style < 2; style++) {
    memcpy(want, a, sizeof(float) * (size_t)(rows * nh * d));
    mx_cpu_rope_f32(want, pos, inv, rows, nh, d, rd, style, 0, 1);
    long bad = check_rope_heads(a, want, pos, inv, NULL, rows, nh, d, rd, style) +
               check_rope_heads(a, want, pos, inv, table, rows, nh, d, rd, style);
    CHECK_MSG(bad == 0, "rope into a cache [%s] heads %lld d %lld rotary %lld style %d: %ld bad",
              g_isa, (long long)nh, (long long)d, (long long)rd, style, bad);
  }
  free(a), free(want), free(inv), free(table), free(pos);
}

static void test_fused_pairs(int64_t rows, int64_t h) {
  float *a = rand_f(rows * h, 3.0), *b = rand_f(rows * h, 3.0), *w = rand_f(h, 1.0);
  float *sum = malloc(sizeof(float) * (size_t)(rows * h)),
        *y = malloc(sizeof(float) * (size_t)(rows * h));
  float *s2 = malloc(sizeof(float) * (size_t)(rows * h)),
        *y2 = malloc(sizeof(float) * (size_t)(rows * h));
  for (int64_t i = 0; i < rows * h; i++) s2[i] = a[i] + b[i];
  mx_cpu_rms_norm_f32(s2, w, y2, rows, h, 1e-5f, 0.5f, 0, 1);
  pair_job_t j = {.a = a, .b = b, .w = w, .sum = sum, .y = y, .rows = rows, .h = h};
  long bad = 0;
  for (int p = 0; p < NPOOLS; p++) {
    memset(sum, 0xff, sizeof(float) * (size_t)(rows * h));
    memset(y, 0xff, sizeof(float) * (size_t)(rows * h));
    mx_cpu_pool_run(g_pools[p], add_norm_task, &j);
    bad += memcmp(sum, s2, sizeof(float) * (size_t)(rows * h)) != 0;
    bad += memcmp(y, y2, sizeof(float) * (size_t)(rows * h)) != 0;
  }
  CHECK_MSG(bad == 0, "add + rms_norm [%s] rows %lld h %lld: %ld mismatches", g_isa,
            (long long)rows, (long long)h, bad);
  // RoPE out of place against copy + in place: rows = positions, h = heads x d.
  int64_t d = h % 2 ? h - 1 : h, nh = 1;
  if (d >= 8 && d % 4 == 0) {
    nh = 2;
    d /= 2;
  }
  if (d >= 2) {
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)rows);
    for (int64_t i = 0; i < rows; i++) pos[i] = (int32_t)(3 * i + 1);
    int64_t rd = d % 4 == 0 ? d / 2 : d;  // partial rotary on some shapes
    float *inv = rand_f(rd / 2, 0.5);
    for (int style = 0; style < 2; style++) {
      memcpy(y2, a, sizeof(float) * (size_t)(rows * nh * d));
      mx_cpu_rope_f32(y2, pos, inv, rows, nh, d, rd, style, 0, 1);
      // The cos / sin table (computed on 1..3 threads) gives the same rotation.
      float *table = malloc(sizeof(float) * (size_t)(rows * rd));
      mx_cpu_rope_table_f32(pos, inv, rows, rd / 2, 1.0f, table, 0, 1);
      pair_job_t r = {.a = a,
                      .y = y,
                      .pos = pos,
                      .inv = inv,
                      .rows = rows,
                      .nh = nh,
                      .d = d,
                      .rd = rd,
                      .style = style};
      bad = 0;
      for (int p = 0; p < 2 * NPOOLS; p++) {
        r.table = p >= NPOOLS ? table : NULL;
        memset(y, 0xff, sizeof(float) * (size_t)(rows * nh * d));
        mx_cpu_pool_run(g_pools[p % NPOOLS], rope_copy_task, &r);
        bad += memcmp(y, y2, sizeof(float) * (size_t)(rows * nh * d)) != 0;
      }
      CHECK_MSG(bad == 0, "rope copy [%s] rows %lld heads %lld d %lld style %d: %ld mismatches",
                g_isa, (long long)rows, (long long)nh, (long long)d, style, bad);
      // One row into a KV cache slot, heads split over the threads: the same bits.
      bad = check_rope_heads(a, y2, pos, inv, NULL, rows, nh, d, rd, style) +
            check_rope_heads(a, y2, pos, inv, table, rows, nh, d, rd, style);
      CHECK_MSG(bad == 0, "rope into a cache [%s] rows %lld heads %lld d %lld style %d: %ld bad",
                g_isa, (long long)rows, (long long)nh, (long long)d, style, bad);
      free(table);
    }
    free(pos);
    free(inv);
  }
  free(a), free(b), free(w), free(sum), free(y), free(s2), free(y2);
}

// ---- The decompositions through the interpreter ----

typedef mx_status_t (*emit_fn)(mx_comp_ctx_t *c, mx_builder_t *b, const int32_t *args,
                               const void *p, int32_t *out);

static mx_tensor_t interp1(const mx_tensor_t *args, int32_t n, emit_fn emit, const void *p) {
  mx_tensor_t res;
  memset(&res, 0, sizeof res);
  mx_module_t *m = mx_module_create(NULL);
  mx_type_t types[8];
  for (int32_t i = 0; i < n; i++) types[i] = args[i].type;
  mx_func_t *f;
  mx_builder_t b;
  int32_t ids[8], out = -1;
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, m);
  CHECK_OK(mx_build_func(m, "main", false, types, n, &f, &b, ids));
  CHECK_OK(emit(&cc, &b, ids, p, &out));
  mx_comp_ctx_free(&cc);
  CHECK_OK(mx_build_return(&b, &out, 1));
  CHECK_OK(mx_hlo_verify_module(m));
  CHECK_OK(mx_interp_run(m, f, args, n, &res, NULL));
  mx_module_destroy(m);
  return res;
}

static mx_tensor_t tensor_of(mx_elem_type_t et, int32_t rank, const int64_t *dims,
                             const void *src) {
  mx_type_t t = mx_type_tensor(et, rank, dims);
  mx_tensor_t x;
  mx_tensor_alloc(&x, &t);
  if (src) memcpy(x.data, src, x.nbytes);
  return x;
}

static void free_args(mx_tensor_t *a, int n) {
  for (int i = 0; i < n; i++) mx_tensor_free(&a[i]);
}

// ---- RMSNorm ----

typedef struct {
  double eps, off;
} rms_p_t;
static mx_status_t emit_rms(mx_comp_ctx_t *c, mx_builder_t *b, const int32_t *a, const void *p,
                            int32_t *out) {
  const rms_p_t *r = p;
  return mx_comp_rms_norm(c, b, a[0], a[1], r->eps, r->off, out);
}

static void test_rms(int64_t rows, int64_t h, float eps, float off, bool composite) {
  float *x = rand_f(rows * h, 3.0), *w = rand_f(h, 1.0);
  float *y = malloc(sizeof(float) * (size_t)(rows * h + SENT));
  double *want = malloc(sizeof(double) * (size_t)(rows * h));
  for (int64_t r = 0; r < rows; r++) {
    double ss = 0;
    for (int64_t i = 0; i < h; i++) ss += (double)x[r * h + i] * x[r * h + i];
    double inv = 1.0 / sqrt(ss / (double)h + (double)eps);
    for (int64_t i = 0; i < h; i++) want[r * h + i] = x[r * h + i] * inv * ((double)w[i] + off);
  }
  job_t j = {.kind = K_RMS, .x = x, .w = w, .y = y, .rows = rows, .h = h, .eps = eps, .off = off};
  run_all(&j, rows * h, NULL);
  check_close("rms_norm", y, want, NULL, rows * h, TOL);
  if (composite) {
    int64_t xd[3] = {1, rows, h}, wd[1] = {h};
    mx_tensor_t a[2] = {tensor_of(MX_ELEM_F32, 3, xd, x), tensor_of(MX_ELEM_F32, 1, wd, w)};
    rms_p_t p = {eps, off};
    mx_tensor_t ref = interp1(a, 2, emit_rms, &p);
    double *rd = malloc(sizeof(double) * (size_t)(rows * h));
    for (int64_t i = 0; i < rows * h; i++) rd[i] = ref.data ? ((float *)ref.data)[i] : NAN;
    check_close("rms_norm vs decomposition", y, rd, NULL, rows * h, 2 * TOL);
    free(rd);
    mx_tensor_free(&ref);
    free_args(a, 2);
  }
  free(x), free(w), free(y), free(want);
}

// ---- RoPE ----

typedef struct {
  const char *style;
  int32_t rd;
  double scale;
} rope_p_t;
static mx_status_t emit_rope(mx_comp_ctx_t *c, mx_builder_t *b, const int32_t *a, const void *p,
                             int32_t *out) {
  const rope_p_t *r = p;
  return mx_comp_rope(c, b, a[0], a[1], a[2], r->style, r->rd, r->scale, out);
}

static void test_rope(int64_t bt, int64_t nh, int64_t d, int32_t rd, int style, int32_t pos0) {
  int64_t n = bt * nh * d;
  float *x = rand_f(n, 2.0), *y = malloc(sizeof(float) * (size_t)(n + SENT)), *inv = NULL;
  double *want = malloc(sizeof(double) * (size_t)n);
  int32_t *pos = malloc(sizeof(int32_t) * (size_t)bt);
  for (int64_t r = 0; r < bt; r++) pos[r] = pos0 + (int32_t)(r * 7 % 13) + (int32_t)r;
  CHECK_OK(mx_rope_inv_freq(10000.0, rd, NULL, &inv));
  for (int64_t i = 0; i < n; i++) want[i] = x[i];
  for (int64_t r = 0; r < bt; r++) {
    for (int32_t i = 0; i < rd / 2; i++) {
      double ang = (double)((float)pos[r] * inv[i]);  // the contract: the angle in f32
      for (int64_t hh = 0; hh < nh; hh++) {
        int64_t base = (r * nh + hh) * d;
        int64_t ia = style ? 2 * i : i, ib = style ? 2 * i + 1 : i + rd / 2;
        double a = x[base + ia], b = x[base + ib];
        want[base + ia] = a * cos(ang) - b * sin(ang);
        want[base + ib] = b * cos(ang) + a * sin(ang);
      }
    }
  }
  job_t j = {.kind = K_ROPE,
             .y = y,
             .ids = pos,
             .inv = inv,
             .bt = bt,
             .nh = nh,
             .d = d,
             .rd = rd,
             .style = style};
  run_all(&j, n, x);
  check_close("rope", y, want, NULL, n, TOL);
  int64_t xd[4] = {1, bt, nh, d}, pd[2] = {1, bt}, fd[1] = {rd / 2};
  mx_tensor_t a[3] = {tensor_of(MX_ELEM_F32, 4, xd, x), tensor_of(MX_ELEM_I32, 2, pd, pos),
                      tensor_of(MX_ELEM_F32, 1, fd, inv)};
  rope_p_t p = {style ? "interleaved" : "half", rd, 1.0};
  mx_tensor_t ref = interp1(a, 3, emit_rope, &p);
  for (int64_t i = 0; i < n; i++) want[i] = ref.data ? ((float *)ref.data)[i] : NAN;
  check_close("rope vs decomposition", y, want, NULL, n, 2 * TOL);
  mx_tensor_free(&ref);
  // A scaled table (YaRN / LongRoPE's attention factor) against the scaled decomposition: the
  // runtime applies the scale only through the table.
  p.scale = 1.1386;
  float *table = malloc(sizeof(float) * (size_t)(bt * rd));
  mx_cpu_rope_table_f32(pos, inv, bt, rd / 2, (float)p.scale, table, 0, 1);
  mx_cpu_rope_copy_f32(x, y, pos, inv, table, bt, nh, d, rd, style, 0, 1);
  ref = interp1(a, 3, emit_rope, &p);
  for (int64_t i = 0; i < n; i++) want[i] = ref.data ? ((float *)ref.data)[i] : NAN;
  check_close("scaled rope vs decomposition", y, want, NULL, n, 2 * TOL);
  free(table);
  mx_tensor_free(&ref);
  free_args(a, 3);
  free(x), free(y), free(inv), free(want), free(pos);
}

// ---- Attention ----

typedef struct {
  double scale, softcap;
  int64_t window;
} attn_p_t;
static mx_status_t emit_attn(mx_comp_ctx_t *c, mx_builder_t *b, const int32_t *a, const void *p,
                             int32_t *out) {
  const attn_p_t *q = p;
  return mx_comp_attention(c, b, a[0], a[1], a[2], a[3], q->scale, q->window, q->softcap, out);
}

typedef struct attn_case {
  int64_t b, t, hq, hkv, s, d, window;
  double softcap, qscale;
  int32_t pos0[3];
} attn_case_t;

static void test_attention(const attn_case_t *c, bool composite) {
  int64_t B = c->b, T = c->t, Hq = c->hq, Hkv = c->hkv, S = c->s, D = c->d, G = Hq / Hkv;
  int64_t nq = B * T * Hq * D, nkv = B * Hkv * S * D;
  float *q = rand_f(nq, c->qscale), *k = rand_f(nkv, 1.0), *v = rand_f(nkv, 1.0);
  float *kn = malloc(sizeof(float) * (size_t)nkv), *vn = malloc(sizeof(float) * (size_t)nkv);
  float *y = malloc(sizeof(float) * (size_t)(nq + SENT));
  double *want = malloc(sizeof(double) * (size_t)nq), *sc = malloc(sizeof(double) * (size_t)S);
  float scale = (float)(1.0 / sqrt((double)D));
  // NaN everywhere no query of the sequence may read.
  memcpy(kn, k, sizeof(float) * (size_t)nkv);
  memcpy(vn, v, sizeof(float) * (size_t)nkv);
  for (int64_t bi = 0; bi < B; bi++) {
    int64_t first = c->window > 0 ? c->pos0[bi] - c->window + 1 : 0, last = c->pos0[bi] + T - 1;
    for (int64_t h = 0; h < Hkv; h++) {
      for (int64_t si = 0; si < S; si++) {
        if (si >= first && si <= last) continue;
        for (int64_t i = 0; i < D; i++) kn[((bi * Hkv + h) * S + si) * D + i] = NAN;
        for (int64_t i = 0; i < D; i++) vn[((bi * Hkv + h) * S + si) * D + i] = NAN;
      }
    }
  }
  for (int64_t bi = 0; bi < B; bi++) {
    for (int64_t ti = 0; ti < T; ti++) {
      int64_t p = c->pos0[bi] + ti, lo = c->window > 0 ? p - c->window + 1 : 0;
      if (lo < 0) lo = 0;
      for (int64_t h = 0; h < Hq; h++) {
        const float *qr = q + ((bi * T + ti) * Hq + h) * D;
        const float *kh = k + (bi * Hkv + h / G) * S * D, *vh = v + (bi * Hkv + h / G) * S * D;
        double m = -INFINITY, l = 0;
        for (int64_t si = lo; si <= p; si++) {
          double dot = 0;
          for (int64_t i = 0; i < D; i++) dot += (double)qr[i] * kh[si * D + i];
          dot *= scale;
          if (c->softcap > 0) dot = tanh(dot / c->softcap) * c->softcap;
          sc[si] = dot;
          m = fmax(m, dot);
        }
        for (int64_t si = lo; si <= p; si++) l += (sc[si] = exp(sc[si] - m));
        double *wr = want + ((bi * T + ti) * Hq + h) * D;
        for (int64_t i = 0; i < D; i++) {
          double acc = 0;
          for (int64_t si = lo; si <= p; si++) acc += sc[si] * vh[si * D + i];
          wr[i] = acc / l;
        }
      }
    }
  }
  size_t per = mx_cpu_attention_scratch_floats(D, S);
  float *scratch = malloc(sizeof(float) * per * NPOOLS);
  job_t j = {.kind = K_ATTN,
             .x = q,
             .k = kn,
             .v = vn,
             .ids = c->pos0,
             .y = y,
             .scratch = scratch,
             .b = B,
             .t = T,
             .hq = Hq,
             .hkv = Hkv,
             .s = S,
             .d = D,
             .scale = scale,
             .window = c->window,
             .softcap = (float)c->softcap};
  run_all(&j, nq, NULL);
  char what[160];
  snprintf(what, sizeof what, "attention B%lld T%lld Hq%lld Hkv%lld S%lld D%lld w%lld cap%g",
           (long long)B, (long long)T, (long long)Hq, (long long)Hkv, (long long)S, (long long)D,
           (long long)c->window, c->softcap);
  check_close(what, y, want, NULL, nq, TOL);
  if (composite) {  // the decomposition scores all S slots: give it the finite caches
    int64_t qd[4] = {B, T, Hq, D}, kd[4] = {B, Hkv, S, D}, pd[1] = {B};
    mx_tensor_t a[4] = {tensor_of(MX_ELEM_F32, 4, qd, q), tensor_of(MX_ELEM_F32, 4, kd, k),
                        tensor_of(MX_ELEM_F32, 4, kd, v), tensor_of(MX_ELEM_I32, 1, pd, c->pos0)};
    attn_p_t p = {scale, c->softcap, c->window};
    mx_tensor_t ref = interp1(a, 4, emit_attn, &p);
    for (int64_t i = 0; i < nq; i++) want[i] = ref.data ? ((float *)ref.data)[i] : NAN;
    strncat(what, " vs decomposition", sizeof what - strlen(what) - 1);
    check_close(what, y, want, NULL, nq, 2 * TOL);
    mx_tensor_free(&ref);
    free_args(a, 4);
  }
  free(q), free(k), free(v), free(kn), free(vn), free(y), free(want), free(sc), free(scratch);
}

// ---- Gated activation ----

// The decomposition of mx.gated_mlp with selection matrices: x = [gate | up] (2n), W_gate =
// [I 0], W_up = [0 I], W_down = [I; 0] (2n x n): out[:n] = act(gate) * up exactly as the
// composite computes it (the products with 0 / 1 are exact).
typedef struct {
  const char *act;
} act_p_t;
static mx_status_t emit_mlp(mx_comp_ctx_t *c, mx_builder_t *b, const int32_t *a, const void *p,
                            int32_t *out) {
  const act_p_t *r = p;
  return mx_comp_gated_mlp(c, b, a[0], a[1], a[2], a[3], r->act, out);
}

static void test_act(int64_t n, int act, double range, bool composite) {
  float *g = rand_f(n, range), *u = rand_f(n, 2.0), *y = malloc(sizeof(float) * (size_t)(n + SENT));
  double *want = malloc(sizeof(double) * (size_t)n), *mag = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    double gv = g[i], a;
    if (act == 1) {
      a = 0.5 * gv * (1.0 + tanh(sqrt(2.0 / M_PI) * (gv + 0.044715 * gv * gv * gv)));
    } else {
      a = gv / (1.0 + exp(-gv));
    }
    want[i] = a * u[i];
    mag[i] = fabs(gv * u[i]) * 0.1;
  }
  job_t j = {.kind = K_ACT, .x = g, .w = u, .y = y, .n = n, .act = act};
  run_all(&j, n, NULL);
  check_close(act ? "gelu_tanh" : "silu", y, want, mag, n, TOL);
  if (composite) {
    int64_t xd[3] = {1, 1, 2 * n}, gd[2] = {n, 2 * n}, dd[2] = {2 * n, n};
    float *xs = malloc(sizeof(float) * (size_t)(2 * n));
    memcpy(xs, g, sizeof(float) * (size_t)n);
    memcpy(xs + n, u, sizeof(float) * (size_t)n);
    mx_tensor_t a[4] = {tensor_of(MX_ELEM_F32, 3, xd, xs), tensor_of(MX_ELEM_F32, 2, gd, NULL),
                        tensor_of(MX_ELEM_F32, 2, gd, NULL), tensor_of(MX_ELEM_F32, 2, dd, NULL)};
    float *wg = (float *)a[1].data, *wu = (float *)a[2].data, *wd = (float *)a[3].data;
    for (int64_t i = 0; i < n; i++) {
      wg[i * 2 * n + i] = 1.0f;
      wu[i * 2 * n + n + i] = 1.0f;
      wd[i * n + i] = 1.0f;
    }
    act_p_t p = {act ? "gelu_tanh" : "silu"};
    mx_tensor_t ref = interp1(a, 4, emit_mlp, &p);
    for (int64_t i = 0; i < n; i++) want[i] = ref.data ? ((float *)ref.data)[i] : NAN;
    check_close(act ? "gelu_tanh vs decomposition" : "silu vs decomposition", y, want, mag, n,
                2 * TOL);
    mx_tensor_free(&ref);
    free_args(a, 4);
    free(xs);
  }
  free(g), free(u), free(y), free(want), free(mag);
}

// tanh (1.7e-7 relative, fused.h) and the rows' dot products with a vector, against double.
static void test_tanh_rowdot(int64_t n, double range) {
  float *x = rand_f(n, range), *y = malloc(sizeof(float) * (size_t)(n + SENT));
  double *want = malloc(sizeof(double) * (size_t)n), *mag = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    want[i] = tanh((double)x[i]);
    mag[i] = fmax(fabs(want[i]), 1e-30);
  }
  job_t j = {.kind = K_TANH, .x = x, .y = y, .n = n};
  run_all(&j, n, NULL);
  check_close("tanh", y, want, mag, n, TOL);
  int64_t k = 1 + n % 97, rows = n / k;
  float *v = rand_f(k, 1.0);
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0, m = 0;
    for (int64_t i = 0; i < k; i++) {
      acc += (double)x[r * k + i] * v[i];
      m += fabs((double)x[r * k + i] * v[i]);
    }
    want[r] = acc;
    mag[r] = m;
  }
  job_t d = {.kind = K_ROWDOT, .x = x, .w = v, .y = y, .rows = rows, .h = k};
  run_all(&d, rows, NULL);
  check_close("row dot", y, want, mag, rows, TOL);
  free(x), free(v), free(y), free(want), free(mag);
}

// logistic against double, relative to each element (1e-30 at least): both tails keep their
// relative accuracy (the negative one down to exp's clamp near 1.2e-38, past which the values
// are below 1e-30 * TOL). range 100 reaches both past the clamp; every x = -range..range in
// steps of 1/8 is appended, so +-0, +-1, the clamp and the saturation are all hit.
static void test_logistic(int64_t n_rand, double range) {
  int64_t n_grid = (int64_t)(16 * range) + 1, n = n_rand + n_grid;
  float *x = rand_f(n, range), *y = malloc(sizeof(float) * (size_t)(n + SENT));
  for (int64_t i = 0; i < n_grid; i++) x[n_rand + i] = (float)(-range + (double)i / 8.0);
  double *want = malloc(sizeof(double) * (size_t)n), *mag = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    want[i] = 1.0 / (1.0 + exp(-(double)x[i]));
    mag[i] = fmax(want[i], 1e-30);
  }
  job_t j = {.kind = K_LOGISTIC, .x = x, .y = y, .n = n};
  run_all(&j, n, NULL);
  check_close("logistic", y, want, mag, n, TOL);
  free(x), free(y), free(want), free(mag);
}

// ---- Embedding ----

static void test_embed(int64_t vocab, int64_t h, int64_t n) {
  float *table = rand_f(vocab * h, 1.0), *y = malloc(sizeof(float) * (size_t)(n * h + SENT));
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(i * 7919 % (vocab + 6)) - 3;  // some < 0, >= V
  job_t j = {.kind = K_EMBED, .x = table, .ids = ids, .y = y, .n = n, .h = h, .vocab = vocab};
  run_all(&j, n * h, NULL);
  long bad = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t id = ids[i] < 0 ? 0 : ids[i] >= vocab ? vocab - 1 : ids[i];
    bad += memcmp(y + i * h, table + id * h, sizeof(float) * (size_t)h) != 0;
  }
  CHECK_MSG(bad == 0, "embed [%s]: %ld rows wrong", g_isa, bad);
  free(table), free(y), free(ids);
}

// ---- No allocation (glibc: the heap in use does not change across the calls) ----

static void test_no_alloc(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  int64_t D = 64, S = 300, n = 64 * 300;
  float *q = rand_f(2 * D, 1), *k = rand_f(n, 1), *v = rand_f(n, 1), *o = rand_f(2 * D, 1);
  float *scr = rand_f((int64_t)mx_cpu_attention_scratch_floats(D, S), 1), *x = rand_f(n, 1);
  int32_t pos0 = 250, ids[3] = {1, 2, 3};
  float inv[32];
  for (int i = 0; i < 32; i++) inv[i] = 1.0f / (float)(i + 1);
  mx_cpu_attention_f32(q, k, v, &pos0, o, 1, 1, 2, 1, S, D, 0.1f, 0, 0, scr, 0, 1);  // warm-up
  struct mallinfo2 before = mallinfo2();
  mx_cpu_rms_norm_f32(x, x, x + D, 10, D, 1e-6f, 0.0f, 0, 1);
  mx_cpu_rope_f32(x, ids, inv, 3, 2, D, D, 0, 0, 1);
  mx_cpu_attention_f32(q, k, v, &pos0, o, 1, 1, 2, 1, S, D, 0.1f, 0, 30.0f, scr, 0, 1);
  mx_cpu_gated_act_f32(x, x + 100, x + 200, 100, 1, 0, 1);
  mx_cpu_embed_f32(k, S, D, ids, 3, x, 0, 1);
  struct mallinfo2 after = mallinfo2();
  CHECK_MSG(before.uordblks == after.uordblks && before.hblkhd == after.hblkhd,
            "fused kernels changed the heap: %zu -> %zu bytes", before.uordblks, after.uordblks);
  free(q), free(k), free(v), free(o), free(scr), free(x);
#endif
}

// ---- Timing ----

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void bench_decode(void) {
  int64_t Hq = 32, Hkv = 8, D = 128;
  int64_t sizes[2] = {512, 4096};
  float *q = rand_f(Hq * D, 1.0), *o = malloc(sizeof(float) * (size_t)(Hq * D));
  float *scr = malloc(sizeof(float) * mx_cpu_attention_scratch_floats(D, 4096));
  int32_t pos0 = 99;  // 100 valid positions
  for (int si = 0; si < 2; si++) {
    int64_t S = sizes[si];
    float *k = rand_f(Hkv * S * D, 1.0), *v = rand_f(Hkv * S * D, 1.0);
    double t[51];
    for (int r = 0; r < 51; r++) {
      double t0 = now_s();
      for (int it = 0; it < 20; it++) {
        mx_cpu_attention_f32(q, k, v, &pos0, o, 1, 1, Hq, Hkv, S, D, 0.088f, 0, 0, scr, 0, 1);
      }
      t[r] = (now_s() - t0) / 20;
    }
    qsort(t, 51, sizeof(double), cmp_d);
    printf(
        "bench [%s] decode attention Hq=32 Hkv=8 D=128 S=%lld, 100 valid: median %.2f us "
        "(min %.2f), 1 thread\n",
        g_isa, (long long)S, t[25] * 1e6, t[0] * 1e6);
    free(k), free(v);
  }
  free(q), free(o), free(scr);
  // Prefill: T = 256 new tokens after 256 cached ones (keys 0 .. 511), S = 4096.
  int64_t T = 256, S = 4096;
  q = rand_f(T * Hq * D, 1.0);
  o = malloc(sizeof(float) * (size_t)(T * Hq * D));
  scr = malloc(sizeof(float) * mx_cpu_attention_scratch_floats(D, S));
  float *k = rand_f(Hkv * S * D, 1.0), *v = rand_f(Hkv * S * D, 1.0);
  pos0 = 256;
  double t[5];
  for (int r = 0; r < 5; r++) {
    double t0 = now_s();
    mx_cpu_attention_f32(q, k, v, &pos0, o, 1, T, Hq, Hkv, S, D, 0.088f, 0, 0, scr, 0, 1);
    t[r] = now_s() - t0;
  }
  qsort(t, 5, sizeof(double), cmp_d);
  double flops = 4.0 * (double)Hq * (double)D * (double)T * (256.0 + (double)(T + 1) / 2);
  printf(
      "bench [%s] prefill attention T=256 pos0=256 Hq=32 Hkv=8 D=128: median %.2f ms, "
      "%.1f GFLOP/s, 1 thread\n",
      g_isa, t[2] * 1e3, flops / t[2] * 1e-9);
  free(q), free(o), free(scr), free(k), free(v);
}

int main(void) {
  int nth[NPOOLS] = {1, 2, 3};
  for (int p = 0; p < NPOOLS; p++) CHECK_OK(mx_cpu_pool_create(nth[p], &g_pools[p]));
  CHECK(mx_cpu_fused_use_isa((mx_cpu_isa_t)99) == MX_ERR_UNSUPPORTED);
  static const attn_case_t kAttn[] = {
      // b, t, hq, hkv, s, d, window, softcap, qscale, pos0
      {1, 1, 8, 1, 300, 64, 0, 0, 1.0, {100}},             // decode, GQA 8
      {2, 1, 4, 2, 257, 17, 0, 50, 4.0, {0, 200}},         // GQA 2, softcap, pos 0
      {2, 5, 4, 1, 131, 80, 7, 0, 3.0, {3, 60}},           // prefill pos0 > 0, window, GQA 4
      {1, 13, 3, 3, 97, 1, 0, 30, 8.0, {20}},              // D = 1, GQA 1
      {1, 70, 2, 1, 200, 128, 0, 0, 2.0, {40}},            // several key blocks
      {3, 2, 8, 4, 1000, 64, 100, 0, 2.0, {0, 500, 997}},  // window 100, S >> valid
      {1, 3, 2, 2, 64, 31, 1, 0, 1.0, {10}},               // window 1: only itself
      {1, 1, 16, 2, 4096, 256, 0, 20, 2.0, {4000}},        // long decode, many blocks, D 256
      {1, 1, 4, 4, 50, 16, 0, 0, 1.0, {49}},               // p = S - 1
      {2, 4, 6, 2, 41, 5, 3, 10, 5.0, {0, 37}},            // window 3 with softcap
      {2, 1, 20, 1, 150, 48, 40, 0, 2.0, {30, 149}},       // decode GQA 20, window, two seqs
      {3, 1, 9, 3, 700, 64, 0, 0, 2.0, {699, 0, 350}},     // decode GQA 3, many blocks
      // Prefill tiles (16 rows: Hq/Hkv heads x 16/(Hq/Hkv) positions) on awkward shapes.
      {1, 37, 15, 5, 90, 64, 0, 0, 2.0, {50}},       // GQA 3: 5-position tiles, a partial one
      {2, 33, 8, 2, 140, 128, 0, 0, 2.0, {0, 100}},  // GQA 4, D 128, two sequences
      {1, 19, 3, 1, 30, 80, 0, 0, 2.0, {7}},         // D 80, GQA 3
      {1, 17, 4, 4, 110, 96, 0, 0, 2.0, {90}},       // GQA 1: 16 positions per tile, D 96
      {1, 9, 2, 1, 210, 256, 0, 15, 2.0, {200}},     // D 256 with softcap
      {1, 23, 17, 1, 30, 16, 0, 0, 2.0, {3}},        // GQA 17 > 16 rows: per-query path
      {2, 40, 6, 2, 105, 64, 30, 0, 2.0, {0, 60}},   // window 30 across tiles and blocks
      {1, 2, 2, 1, 10, 3, 0, 0, 1.0, {0}},           // T 2 at position 0, D 3
      {1, 50, 1, 1, 60, 64, 0, 0, 2.0, {10}},        // MHA 1 head, p reaches S - 1
  };
  int64_t rms_h[] = {1, 5, 16, 17, 31, 64, 129, 1000};
  int64_t act_n[] = {1, 7, 16, 17, 100, 257, 1021};
  for (int isa = 0; isa < MX_CPU_ISA_COUNT; isa++) {
    if (mx_cpu_fused_use_isa((mx_cpu_isa_t)isa) != MX_OK) {
      printf("%s: not supported here, skipped\n", mx_cpu_isa_name((mx_cpu_isa_t)isa));
      continue;
    }
    CHECK(mx_cpu_fused_isa() == (mx_cpu_isa_t)isa);
    g_isa = mx_cpu_isa_name((mx_cpu_isa_t)isa);
    long before = g_bad_values + g_bad_threads + g_bad_sentinel;
    for (size_t i = 0; i < sizeof rms_h / sizeof *rms_h; i++) {
      test_rms(1 + (int64_t)i % 3 * 3, rms_h[i], i % 2 ? 1e-6f : 1e-5f, i % 3 == 2 ? 1.0f : 0.0f,
               true);
    }
    test_rms(7, 4096, 1e-6f, 0.0f, false);
    test_rope(1, 1, 2, 2, 0, 0);
    test_rope(3, 4, 64, 64, 0, 5);
    test_rope(5, 3, 64, 32, 0, 1000);
    test_rope(2, 2, 80, 80, 1, 17);
    test_rope(7, 5, 96, 48, 1, 123);
    test_rope(4, 2, 6, 2, 1, 2);
    int64_t pair_shapes[][2] = {{1, 1}, {1, 960}, {3, 17}, {7, 64}, {13, 131}, {2, 2048}};
    for (size_t i = 0; i < sizeof pair_shapes / sizeof *pair_shapes; i++)
      test_fused_pairs(pair_shapes[i][0], pair_shapes[i][1]);
    test_rope_heads(2, 5, 64, 64);
    test_rope_heads(1, 3, 64, 32);
    test_rope_heads(3, 8, 128, 128);
    test_rope_heads(1, 1, 10, 6);
    for (size_t i = 0; i < sizeof kAttn / sizeof *kAttn; i++) test_attention(&kAttn[i], true);
    for (size_t i = 0; i < sizeof act_n / sizeof *act_n; i++) {
      test_act(act_n[i], 0, i % 2 ? 20.0 : 4.0, act_n[i] < 300);
      test_act(act_n[i], 1, i % 2 ? 20.0 : 4.0, act_n[i] < 300);
    }
    test_act(100000, 0, 90.0, false);
    test_act(100000, 1, 90.0, false);
    for (size_t i = 0; i < sizeof act_n / sizeof *act_n; i++)
      test_tanh_rowdot(act_n[i], i % 2 ? 12.0 : 0.7);
    for (size_t i = 0; i < sizeof act_n / sizeof *act_n; i++)
      test_logistic(act_n[i], i % 2 ? 100.0 : 4.0);
    test_embed(37, 19, 50);
    test_embed(1, 1, 3);
    test_no_alloc();
    printf("%s: %ld failures\n", g_isa, g_bad_values + g_bad_threads + g_bad_sentinel - before);
    if (getenv("MX_FUSED_BENCH")) bench_decode();
  }
  CHECK_MSG(g_bad_values == 0, "%ld values out of tolerance", g_bad_values);
  CHECK_MSG(g_bad_threads == 0, "%ld results differ between thread counts", g_bad_threads);
  CHECK_MSG(g_bad_sentinel == 0, "%ld writes outside the output", g_bad_sentinel);
  CHECK(mx_cpu_fused_use_isa(MX_CPU_ISA_SCALAR) == MX_OK);
  for (int t = 0; t < NPOOLS; t++) mx_cpu_pool_destroy(g_pools[t]);
  return mx_test_finish();
}
