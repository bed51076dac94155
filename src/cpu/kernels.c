// Dispatch tables, weight packing and the portable drivers (thread split, GEMM blocking) around
// the per-ISA f32 kernels.
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/stream_alloc.h"
#include "kernels_internal.h"

// ---- Dispatch ----

const char *mx_cpu_isa_name(mx_cpu_isa_t isa) {
  switch (isa) {
    case MX_CPU_ISA_SCALAR:
      return "scalar";
    case MX_CPU_ISA_AVX2:
      return "avx2";
    case MX_CPU_ISA_AVX512:
      return "avx512";
    default:
      return "?";
  }
}

const mx_cpu_kernels_t *mx_cpu_kernels_get(mx_cpu_isa_t isa) {
  const mx_cpu_features_t *f = mx_cpu_features();
  switch (isa) {
    case MX_CPU_ISA_SCALAR:
      return &mx_cpu_kernels_scalar;
#if defined(__x86_64__)
    case MX_CPU_ISA_AVX2:
      return f->avx2 && f->fma ? &mx_cpu_kernels_avx2 : NULL;
    case MX_CPU_ISA_AVX512:
      return f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->fma
                 ? &mx_cpu_kernels_avx512
                 : NULL;
#endif
    default:
      (void)f;
      return NULL;
  }
}

const mx_cpu_kernels_t *mx_cpu_kernels_best(void) {
  for (int isa = MX_CPU_ISA_COUNT - 1; isa > 0; isa--) {
    const mx_cpu_kernels_t *kt = mx_cpu_kernels_get((mx_cpu_isa_t)isa);
    if (kt) return kt;
  }
  return &mx_cpu_kernels_scalar;
}

mx_cpu_isa_t mx_cpu_kernels_isa(const mx_cpu_kernels_t *kt) { return kt->isa; }
int mx_cpu_kernels_panel_rows(const mx_cpu_kernels_t *kt) { return kt->nr; }
int mx_cpu_kernels_gemm_rows(const mx_cpu_kernels_t *kt) { return kt->mr; }

// [lo, hi) of `total` items for thread ith of nth, in units of `grain` items.
static void split_range(int64_t total, int64_t grain, int ith, int nth, int64_t *lo, int64_t *hi) {
  int64_t units = (total + grain - 1) / grain;
  int64_t u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
  *lo = u0 * grain < total ? u0 * grain : total;
  *hi = u1 * grain < total ? u1 * grain : total;
}

// ---- GEMV on row-major weights ----

// 16 rows = one 64-byte line of y per unit, so threads never write the same cache line.
enum { GEMV_ROW_GRAIN = 16 };

void mx_cpu_gemv_f32(const mx_cpu_kernels_t *kt, const float *w, int64_t ldw, const float *x,
                     float *y, int64_t n, int64_t k, int ith, int nth) {
  int64_t r0, r1;
  split_range(n, GEMV_ROW_GRAIN, ith, nth, &r0, &r1);
  if (r1 > r0) kt->gemv_rows(w + r0 * ldw, ldw, x, y + r0, r1 - r0, k);
}

// ---- Packing ----

enum { PACK_KBLOCK = 64 };

typedef struct pack_job {
  const float *w;
  int64_t ldw;
  mx_cpu_packed_t *p;
} pack_job_t;

// Panel-by-panel transpose in PACK_KBLOCK x nr tiles so the destination tile stays in L1.
static void pack_task(void *ctx, int ith, int nth) {
  pack_job_t *job = ctx;
  mx_cpu_packed_t *p = job->p;
  int nr = p->nr;
  int64_t p0, p1;
  split_range(p->panels, 1, ith, nth, &p0, &p1);
  for (int64_t pi = p0; pi < p1; pi++) {
    float *dst = p->data + pi * p->k * nr;
    for (int64_t k0 = 0; k0 < p->k; k0 += PACK_KBLOCK) {
      int64_t k1 = k0 + PACK_KBLOCK < p->k ? k0 + PACK_KBLOCK : p->k;
      for (int r = 0; r < nr; r++) {
        int64_t row = pi * nr + r;
        if (row < p->n) {
          const float *src = job->w + row * job->ldw;
          for (int64_t kk = k0; kk < k1; kk++) dst[kk * nr + r] = src[kk];
        } else {
          for (int64_t kk = k0; kk < k1; kk++) dst[kk * nr + r] = 0.0f;
        }
      }
    }
  }
}

mx_status_t mx_cpu_pack_f32(const mx_cpu_kernels_t *kt, mx_cpu_pool_t *pool, const float *w,
                            int64_t ldw, int64_t n, int64_t k, mx_cpu_packed_t **out) {
  return mx_cpu_pack_f32_in(kt, pool, w, ldw, n, k, NULL, out);
}

mx_status_t mx_cpu_pack_f32_in(const mx_cpu_kernels_t *kt, mx_cpu_pool_t *pool, const float *w,
                               int64_t ldw, int64_t n, int64_t k, mx_cpu_slab_t *slab,
                               mx_cpu_packed_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_pack_f32: out is NULL");
  *out = NULL;
  if (!kt) return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_pack_f32: kernel table is NULL");
  if (n < 0 || k < 0 || ldw < k) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx_cpu_pack_f32: bad shape W[%lld, %lld] with row stride %lld",
                        (long long)n, (long long)k, (long long)ldw);
  }
  if (!w && n > 0 && k > 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_pack_f32: weights are NULL");
  }
  int64_t panels = (n + kt->nr - 1) / kt->nr;
  if (k > 0 && panels > (int64_t)(SIZE_MAX / 8 / sizeof(float)) / kt->nr / k) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_pack_f32: W[%lld, %lld] is too large",
                        (long long)n, (long long)k);
  }
  size_t bytes = (size_t)panels * (size_t)k * (size_t)kt->nr * sizeof(float);
  bytes = (bytes + 63) / 64 * 64;
  mx_cpu_packed_t *p = calloc(1, sizeof *p);
  float *data = slab ? mx_cpu_slab_alloc(slab, bytes) : mx_cpu_stream_alloc(bytes);
  if (!p || !data) {
    free(p);
    if (!slab) free(data);
    return mx_error_set(MX_ERR_NOMEM,
                        "mx_cpu_pack_f32: out of memory for W[%lld, %lld] (%zu bytes)",
                        (long long)n, (long long)k, bytes);
  }
  *p = (mx_cpu_packed_t){.kt = kt, .n = n, .k = k, .panels = panels, .nr = kt->nr, .data = data};
  pack_job_t job = {.w = w, .ldw = ldw, .p = p};
  if (pool) {
    mx_cpu_pool_run(pool, pack_task, &job);
  } else {
    pack_task(&job, 0, 1);
  }
  *out = p;
  return MX_OK;
}

void mx_cpu_packed_destroy(mx_cpu_packed_t *p) {
  if (!p) return;
  free(p->data);
  free(p);
}

// ---- GEMV / GEMM on packed weights ----

void mx_cpu_gemv_packed_f32(const mx_cpu_packed_t *w, const float *x, float *y, int ith, int nth) {
  int64_t p0, p1;
  split_range(w->panels, 1, ith, nth, &p0, &p1);
  if (p1 > p0) w->kt->gemv_panels(w->data, x, y, p0, p1, w->k, w->n);
}

// ---- Dynamic work sharing ----

void mx_cpu_work_reset(mx_cpu_work_t *w) {
  for (int i = 0; i < MX_CPU_WORK_SEGMENTS; i++)
    atomic_store_explicit(&w->seg[i].v, 0, memory_order_relaxed);
}

bool mx_cpu_work_claim(mx_cpu_work_t *w, int64_t n, int ith, int nth, int64_t *c) {
  // Relaxed: the counters only hand out indices; the data a chunk writes is published by the
  // barrier (or job end) after it, like any other kernel output.
  int64_t segs = nth < MX_CPU_WORK_SEGMENTS ? nth : MX_CPU_WORK_SEGMENTS;
  if (segs > n) segs = n;
  if (segs < 1 || ith < 0) return false;
  int64_t own = ith % segs;
  for (int64_t k = 0; k < segs; k++) {  // own segment first, then the others' back ends
    int64_t sg = (own + k) % segs, lo = n * sg / segs, len = n * (sg + 1) / segs - lo;
    uint64_t v = atomic_load_explicit(&w->seg[sg].v, memory_order_relaxed);
    for (;;) {
      uint64_t front = v & 0xffffffffu, back = v >> 32;
      if ((int64_t)(front + back) >= len) break;
      uint64_t next = k == 0 ? v + 1 : v + ((uint64_t)1 << 32);
      if (atomic_compare_exchange_weak_explicit(&w->seg[sg].v, &v, next, memory_order_relaxed,
                                                memory_order_relaxed)) {
        *c = k == 0 ? lo + (int64_t)front : lo + len - 1 - (int64_t)back;
        return true;
      }
    }
  }
  return false;
}

enum { WORK_CHUNKS_PER_THREAD = 8 };

int64_t mx_cpu_work_grain(int64_t units, int nth, int64_t min_units) {
  if (nth < 1) nth = 1;
  int64_t chunks = (int64_t)nth * WORK_CHUNKS_PER_THREAD;
  int64_t g = (units + chunks - 1) / chunks;
  if (g < min_units) g = min_units;
  return g > 0 ? g : 1;
}

void mx_cpu_gemv_packed_f32_panels(const mx_cpu_packed_t *w, const float *x, float *y, int64_t p0,
                                   int64_t p1) {
  if (p1 > w->panels) p1 = w->panels;
  if (p1 > p0) w->kt->gemv_panels(w->data, x, y, p0, p1, w->k, w->n);
}

enum { STREAM_CHUNK_BYTES = 64 << 10 };

int64_t mx_cpu_work_stream_grain(int64_t units, int64_t unit_bytes, int nth) {
  int64_t min_units = unit_bytes > 0 ? (STREAM_CHUNK_BYTES + unit_bytes - 1) / unit_bytes : 1;
  return mx_cpu_work_grain(units, nth, min_units);
}

int64_t mx_cpu_gemv_packed_f32_grain(const mx_cpu_packed_t *w, int nth) {
  return mx_cpu_work_stream_grain(w->panels, w->k * w->nr * (int64_t)sizeof(float), nth);
}

void mx_cpu_gemv_packed_f32_dyn(const mx_cpu_packed_t *w, const float *x, float *y,
                                mx_cpu_work_t *work, int ith, int nth) {
  int64_t g = mx_cpu_gemv_packed_f32_grain(w, nth), n = (w->panels + g - 1) / g, c;
  while (mx_cpu_work_claim(work, n, ith, nth, &c))
    mx_cpu_gemv_packed_f32_panels(w, x, y, c * g, c * g + g);
}

// Prefetches (for writing) a rows x cols tile of Y, one request per 64-byte line.
static void prefetch_tile(float *y, int64_t ldy, int rows, int cols) {
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j += 16) __builtin_prefetch(y + i * ldy + j, 1, 3);
}

// Threads form a grid: gn groups over panels (all of them when there are enough panels), and
// when panels are fewer than threads, gm groups over blocks of mr rows. Each element is still
// computed whole by one thread, so the split never changes a result. Panels [p0, p1), rows
// [m0, m1) for thread ith (empty ranges for threads outside the grid).
static void gemm_grid(const mx_cpu_packed_t *w, int64_t m, int ith, int nth, int64_t *p0,
                      int64_t *p1, int64_t *m0, int64_t *m1) {
  int64_t gn = w->panels < nth ? (w->panels > 0 ? w->panels : 1) : nth;
  int64_t gm = nth / gn;
  *p0 = *p1 = *m0 = *m1 = 0;
  if (ith >= gn * gm) return;
  split_range(w->panels, 1, (int)(ith % gn), (int)gn, p0, p1);
  split_range(m, w->kt->mr, (int)(ith / gn), (int)gm, m0, m1);
}

void mx_cpu_matmul_region(const mx_cpu_packed_t *w, int64_t m, bool gemm, int ith, int nth,
                          int64_t *r0, int64_t *r1, int64_t *c0, int64_t *c1) {
  int64_t p0, p1;
  if (gemm) {
    gemm_grid(w, m, ith, nth, &p0, &p1, r0, r1);
  } else {  // mx_cpu_gemv_packed_f32 and the per-row kernels: panels by thread, every row
    split_range(w->panels, 1, ith, nth, &p0, &p1);
    *r0 = 0;
    *r1 = m;
  }
  *c0 = p0 * w->nr < w->n ? p0 * w->nr : w->n;
  *c1 = p1 * w->nr < w->n ? p1 * w->nr : w->n;
}

// apack[kk * mr + i] = x[i * ldx + kk] for i < mv, 0 for mv <= i < mr, kk < kc.
static void pack_rows(const mx_cpu_kernels_t *kt, const float *x, int64_t ldx, int mv, int64_t kc,
                      float *apack) {
  const int mr = kt->mr;
  if (kt->pack_a) {
    kt->pack_a(x, ldx, mv, kc, apack);
    return;
  }
  for (int i = 0; i < mr; i++) {
    if (i < mv) {
      const float *src = x + i * ldx;
      for (int64_t kk = 0; kk < kc; kk++) apack[kk * mr + i] = src[kk];
    } else {
      for (int64_t kk = 0; kk < kc; kk++) apack[kk * mr + i] = 0.0f;
    }
  }
}

size_t mx_cpu_gemm_apack_floats(const mx_cpu_kernels_t *kt, int64_t m, int64_t k) {
  return (size_t)((m + kt->mr - 1) / kt->mr * kt->mr) * (size_t)k;
}

void mx_cpu_gemm_pack_x(const mx_cpu_kernels_t *kt, const float *x, int64_t ldx, int64_t m,
                        int64_t k, float *apack, int ith, int nth) {
  const int mr = kt->mr;
  int64_t b0, b1;
  split_range((m + mr - 1) / mr, 1, ith, nth, &b0, &b1);
  for (int64_t b = b0; b < b1; b++) {
    int mv = m - b * mr < mr ? (int)(m - b * mr) : mr;
    pack_rows(kt, x + b * mr * ldx, ldx, mv, k, apack + b * mr * k);
  }
}

void mx_cpu_gemm_packed_f32_block(const mx_cpu_packed_t *w, const float *x, int64_t ldx,
                                  const float *apack, float *y, int64_t ldy, int64_t m0, int64_t m1,
                                  int64_t p0, int64_t p1) {
  const mx_cpu_kernels_t *kt = w->kt;
  const int nr = kt->nr, mr = kt->mr;
  const int64_t kdim = w->k;
  if (p1 > w->panels) p1 = w->panels;
  if (p1 <= p0 || m1 <= m0) return;
  if (kdim == 0) {
    int64_t c0 = p0 * nr, c1 = p1 * nr < w->n ? p1 * nr : w->n;
    for (int64_t i = m0; i < m1; i++) memset(y + i * ldy + c0, 0, (size_t)(c1 - c0) * sizeof *y);
    return;
  }
  // Without apack: the current kc x mr block of X, transposed so the microkernel broadcasts
  // from one stream.
  _Alignas(64) float ablock[MX_GEMM_MAX_MR * MX_GEMM_KC];
  for (int64_t jc = p0; jc < p1; jc += MX_GEMM_NC_PANELS) {
    int64_t je = jc + MX_GEMM_NC_PANELS < p1 ? jc + MX_GEMM_NC_PANELS : p1;
    for (int64_t pc = 0; pc < kdim; pc += MX_GEMM_KC) {
      int64_t kc = pc + MX_GEMM_KC < kdim ? MX_GEMM_KC : kdim - pc;
      for (int64_t ir = m0; ir < m1; ir += mr) {
        int mv = m1 - ir < mr ? (int)(m1 - ir) : mr;
        const float *a = ablock;
        if (apack)
          a = apack + ir * kdim + pc * mr;
        else
          pack_rows(kt, x + ir * ldx + pc, ldx, mv, kc, ablock);
        for (int64_t pi = jc; pi < je; pi++) {
          int64_t rows = w->n - pi * nr;
          int nv = rows < nr ? (int)rows : nr;
          // The next tile of Y is read (and written) by the next call: start fetching it now, so
          // its misses overlap this call's arithmetic instead of stalling the next one.
          if (pi + 1 < je) prefetch_tile(y + ir * ldy + (pi + 1) * nr, ldy, mv, nr);
          kt->gemm_ukernel(kc, a, w->data + (pi * kdim + pc) * nr, y + ir * ldy + pi * nr, ldy, mv,
                           nv, pc > 0);
        }
      }
    }
  }
}

void mx_cpu_gemm_packed_f32(const mx_cpu_packed_t *w, const float *x, int64_t ldx,
                            const float *apack, float *y, int64_t ldy, int64_t m, int ith,
                            int nth) {
  int64_t p0, p1, m0, m1;
  gemm_grid(w, m, ith, nth, &p0, &p1, &m0, &m1);
  mx_cpu_gemm_packed_f32_block(w, x, ldx, apack, y, ldy, m0, m1, p0, p1);
}

// Panels per dynamic GEMM chunk: at least 4 (each chunk re-packs the rows of X it sweeps, ~2.5%
// of its time at 4 panels), at most one L2 block.
enum { GEMM_CHUNK_MIN_PANELS = 4 };

int64_t mx_cpu_gemm_packed_f32_grain(const mx_cpu_packed_t *w, int nth) {
  int64_t g = mx_cpu_work_grain(w->panels, nth, GEMM_CHUNK_MIN_PANELS);
  return g < MX_GEMM_NC_PANELS ? g : MX_GEMM_NC_PANELS;
}

void mx_cpu_gemm_packed_f32_dyn(const mx_cpu_packed_t *w, const float *x, int64_t ldx,
                                const float *apack, float *y, int64_t ldy, int64_t m,
                                mx_cpu_work_t *work, int ith, int nth) {
  if (w->panels < nth) {
    mx_cpu_gemm_packed_f32(w, x, ldx, apack, y, ldy, m, ith, nth);
    return;
  }
  int64_t g = mx_cpu_gemm_packed_f32_grain(w, nth), n = (w->panels + g - 1) / g, c;
  while (mx_cpu_work_claim(work, n, ith, nth, &c))
    mx_cpu_gemm_packed_f32_block(w, x, ldx, apack, y, ldy, 0, m, c * g, c * g + g);
}

// ---- Whole-pool wrappers ----

typedef struct mm_job {
  const mx_cpu_kernels_t *kt;
  const mx_cpu_packed_t *pw;
  const float *w, *x;
  float *y;
  int64_t ldw, ldx, ldy, m, n, k;
} mm_job_t;

static void gemv_task(void *ctx, int ith, int nth) {
  mm_job_t *j = ctx;
  mx_cpu_gemv_f32(j->kt, j->w, j->ldw, j->x, j->y, j->n, j->k, ith, nth);
}

static void gemv_packed_task(void *ctx, int ith, int nth) {
  mm_job_t *j = ctx;
  mx_cpu_gemv_packed_f32(j->pw, j->x, j->y, ith, nth);
}

static void gemm_packed_task(void *ctx, int ith, int nth) {
  mm_job_t *j = ctx;
  mx_cpu_gemm_packed_f32(j->pw, j->x, j->ldx, NULL, j->y, j->ldy, j->m, ith, nth);
}

static void run_job(mx_cpu_pool_t *pool, mx_cpu_task_fn fn, mm_job_t *job) {
  if (pool) {
    mx_cpu_pool_run(pool, fn, job);
  } else {
    fn(job, 0, 1);
  }
}

void mx_cpu_gemv_f32_run(mx_cpu_pool_t *pool, const mx_cpu_kernels_t *kt, const float *w,
                         int64_t ldw, const float *x, float *y, int64_t n, int64_t k) {
  mm_job_t job = {.kt = kt, .w = w, .ldw = ldw, .x = x, .y = y, .n = n, .k = k};
  run_job(pool, gemv_task, &job);
}

void mx_cpu_gemv_packed_f32_run(mx_cpu_pool_t *pool, const mx_cpu_packed_t *w, const float *x,
                                float *y) {
  mm_job_t job = {.pw = w, .x = x, .y = y};
  run_job(pool, gemv_packed_task, &job);
}

void mx_cpu_gemm_packed_f32_run(mx_cpu_pool_t *pool, const mx_cpu_packed_t *w, const float *x,
                                int64_t ldx, float *y, int64_t ldy, int64_t m) {
  mm_job_t job = {.pw = w, .x = x, .ldx = ldx, .y = y, .ldy = ldy, .m = m};
  run_job(pool, gemm_packed_task, &job);
}
