// bf16 / f16 kernels: dispatch, weight packing, the portable drivers (thread split, GEMM
// blocking, packing of the X block) and the convert driver. The per-ISA loops live in
// kernels_lowp_{scalar,avx2,avx512}.c.
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "cpu/kernels_lowp_internal.h"
#include "cpu/stream_alloc.h"

// ---- Dispatch ----

const mx_cpu_lowp_kernels_t *mx_cpu_lowp_get(mx_elem_type_t et, mx_cpu_lowp_isa_t isa) {
  if (et != MX_ELEM_BF16 && et != MX_ELEM_F16) return NULL;
  bool bf = et == MX_ELEM_BF16;
  const mx_cpu_features_t *f = mx_cpu_features();
  (void)f;
  switch (isa) {
    case MX_CPU_LOWP_SCALAR:
      return bf ? &mx_cpu_lowp_bf16_scalar : &mx_cpu_lowp_f16_scalar;
#if defined(__x86_64__)
    case MX_CPU_LOWP_AVX2:
      if (!f->avx2 || !f->fma || (!bf && !f->f16c)) return NULL;
      return bf ? &mx_cpu_lowp_bf16_avx2 : &mx_cpu_lowp_f16_avx2;
    case MX_CPU_LOWP_AVX512:
      if (!(f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->fma)) return NULL;
      return bf ? &mx_cpu_lowp_bf16_avx512 : &mx_cpu_lowp_f16_avx512;
    case MX_CPU_LOWP_AVX512BF16:
      if (!bf ||
          !(f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->fma && f->avx512bf16))
        return NULL;
      return &mx_cpu_lowp_bf16_avx512bf16;
    case MX_CPU_LOWP_AMX:
      if (!bf || !mx_cpu_lowp_get(et, MX_CPU_LOWP_AVX512BF16) || !f->amx_bf16) return NULL;
      return &mx_cpu_lowp_bf16_amx;
#endif
    default:
      return NULL;
  }
}

const mx_cpu_lowp_kernels_t *mx_cpu_lowp_best(mx_elem_type_t et) {
  for (int isa = MX_CPU_LOWP_ISA_COUNT - 1; isa >= 0; isa--) {
    const mx_cpu_lowp_kernels_t *kt = mx_cpu_lowp_get(et, (mx_cpu_lowp_isa_t)isa);
    if (kt) return kt;
  }
  return NULL;
}

const char *mx_cpu_lowp_name(const mx_cpu_lowp_kernels_t *kt) { return kt ? kt->name : "?"; }
mx_elem_type_t mx_cpu_lowp_elem(const mx_cpu_lowp_kernels_t *kt) {
  return kt ? kt->et : MX_ELEM_INVALID;
}

// [lo, hi) of `total` items for thread ith of nth, in units of `grain` items.
static void split_range(int64_t total, int64_t grain, int ith, int nth, int64_t *lo, int64_t *hi) {
  if (nth < 1) nth = 1;
  int64_t units = (total + grain - 1) / grain;
  int64_t u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
  *lo = u0 * grain < total ? u0 * grain : total;
  *hi = u1 * grain < total ? u1 * grain : total;
}

// ---- Packing ----

typedef struct pack_job {
  const uint16_t *w;
  int64_t ldw;
  mx_cpu_packed_lowp_t *p;
} pack_job_t;

static void pack_task(void *ctx, int ith, int nth) {
  const pack_job_t *job = ctx;
  mx_cpu_packed_lowp_t *p = job->p;
  const int64_t NR = MX_LOWP_NR, kpad = p->kpad;
  bool pairs = p->et == MX_ELEM_BF16;
  int64_t p0, p1;
  split_range(p->panels, 1, ith, nth, &p0, &p1);
  for (int64_t pi = p0; pi < p1; pi++) {
    uint16_t *dst = p->data + pi * kpad * NR;
    memset(dst, 0, (size_t)(kpad * NR) * sizeof *dst);
    for (int64_t r = 0; r < NR; r++) {
      int64_t row = pi * NR + r;
      if (row >= p->n) break;
      const uint16_t *src = job->w + row * job->ldw;
      if (pairs) {
        for (int64_t kk = 0; kk < p->k; kk++) dst[(kk >> 1) * 2 * NR + 2 * r + (kk & 1)] = src[kk];
      } else {
        for (int64_t kk = 0; kk < p->k; kk++) dst[kk * NR + r] = src[kk];
      }
    }
  }
}

mx_status_t mx_cpu_pack_lowp(const mx_cpu_lowp_kernels_t *kt, mx_cpu_pool_t *pool,
                             const uint16_t *w, int64_t ldw, int64_t n, int64_t k,
                             mx_cpu_packed_lowp_t **out) {
  return mx_cpu_pack_lowp_in(kt, pool, w, ldw, n, k, NULL, out);
}

mx_status_t mx_cpu_pack_lowp_in(const mx_cpu_lowp_kernels_t *kt, mx_cpu_pool_t *pool,
                                const uint16_t *w, int64_t ldw, int64_t n, int64_t k,
                                mx_cpu_slab_t *slab, mx_cpu_packed_lowp_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_pack_lowp: out is NULL");
  *out = NULL;
  if (!kt) return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_pack_lowp: kernel table is NULL");
  if (n < 0 || k < 0 || ldw < k) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx_cpu_pack_lowp: bad shape W[%lld, %lld] with row stride %lld",
                        (long long)n, (long long)k, (long long)ldw);
  }
  if (!w && n > 0 && k > 0) return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_pack_lowp: W is NULL");
  int64_t kpad = kt->et == MX_ELEM_BF16 ? (k + 1) & ~(int64_t)1 : k;
  int64_t panels = (n + MX_LOWP_NR - 1) / MX_LOWP_NR;
  if (kpad > 0 && panels > (int64_t)(SIZE_MAX / 8 / sizeof(uint16_t)) / MX_LOWP_NR / kpad) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_pack_lowp: W[%lld, %lld] is too large",
                        (long long)n, (long long)k);
  }
  size_t bytes = (size_t)panels * (size_t)kpad * MX_LOWP_NR * sizeof(uint16_t);
  bytes = (bytes + 63) / 64 * 64;
  mx_cpu_packed_lowp_t *p = calloc(1, sizeof *p);
  uint16_t *data = slab ? mx_cpu_slab_alloc(slab, bytes) : mx_cpu_stream_alloc(bytes);
  if (!p || !data) {
    free(p);
    if (!slab) free(data);
    return mx_error_set(MX_ERR_NOMEM,
                        "mx_cpu_pack_lowp: out of memory for W[%lld, %lld] (%zu bytes)",
                        (long long)n, (long long)k, bytes);
  }
  *p = (mx_cpu_packed_lowp_t){
      .kt = kt, .et = kt->et, .n = n, .k = k, .kpad = kpad, .panels = panels, .data = data};
  pack_job_t job = {.w = w, .ldw = ldw, .p = p};
  if (pool) {
    mx_cpu_pool_run(pool, pack_task, &job);
  } else {
    pack_task(&job, 0, 1);
  }
  *out = p;
  return MX_OK;
}

void mx_cpu_packed_lowp_destroy(mx_cpu_packed_lowp_t *p) {
  if (!p) return;
  free(p->data);
  free(p);
}

size_t mx_cpu_packed_lowp_bytes(const mx_cpu_packed_lowp_t *p) {
  return p ? (size_t)p->panels * (size_t)p->kpad * MX_LOWP_NR * sizeof(uint16_t) : 0;
}

// ---- GEMV / GEMM ----

void mx_cpu_gemv_packed_lowp(const mx_cpu_packed_lowp_t *w, const uint16_t *x, float *y, int ith,
                             int nth) {
  int64_t p0, p1;
  split_range(w->panels, 1, ith, nth, &p0, &p1);
  if (p1 > p0) w->kt->gemv(w->data, x, y, p0, p1, w->k, w->n);
}

// y[r, c0:c1) += bias[c0:c1) for rows r in [r0, r1): the epilogue of a complete sum.
static void add_bias(float *y, int64_t ldy, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                     const float *bias) {
  for (int64_t r = r0; r < r1; r++) {
    float *yr = y + r * ldy;
    for (int64_t j = c0; j < c1; j++) yr[j] += bias[j];
  }
}

void mx_cpu_gemv_packed_lowp_dyn(const mx_cpu_packed_lowp_t *w, const uint16_t *x, float *y,
                                 mx_cpu_work_t *work, int ith, int nth) {
  mx_cpu_gemv_packed_lowp_dyn_bias(w, x, NULL, y, work, ith, nth);
}

void mx_cpu_gemv_packed_lowp_dyn_bias(const mx_cpu_packed_lowp_t *w, const uint16_t *x,
                                      const float *bias, float *y, mx_cpu_work_t *work, int ith,
                                      int nth) {
  int64_t panel_bytes = w->kpad * MX_CPU_LOWP_NR * (int64_t)sizeof(uint16_t);
  int64_t g = mx_cpu_work_stream_grain(w->panels, panel_bytes, nth);
  int64_t n = (w->panels + g - 1) / g, c;
  while (mx_cpu_work_claim(work, n, ith, nth, &c)) {
    int64_t p0 = c * g, p1 = p0 + g < w->panels ? p0 + g : w->panels;
    w->kt->gemv(w->data, x, y, p0, p1, w->k, w->n);
    if (bias)
      add_bias(y, 0, 0, 1, p0 * MX_LOWP_NR, p1 * MX_LOWP_NR < w->n ? p1 * MX_LOWP_NR : w->n, bias);
  }
}

static const mx_cpu_lowp_convert_t *convert_table(void);

// The block of rows [0, mv) of X (row stride ldx), k in [pc, pc + kc) of the padded depth, in
// the table's A layout; k >= w->k and rows >= mv read as 0.
static void pack_a(const mx_cpu_packed_lowp_t *w, const uint16_t *x, int64_t ldx, int mv,
                   int64_t pc, int64_t kc, void *apack) {
  const int mr = w->kt->mr;
  const int64_t k = w->k;
  if (w->kt->a_pairs) {
    uint32_t *a = apack;
    for (int64_t q = 0; q < kc / 2; q++) {
      int64_t k0 = pc + 2 * q;
      for (int i = 0; i < mr; i++) {
        uint32_t lo = 0, hi = 0;
        if (i < mv) {
          const uint16_t *row = x + i * ldx;
          lo = k0 < k ? row[k0] : 0;
          hi = k0 + 1 < k ? row[k0 + 1] : 0;
        }
        a[q * mr + i] = lo | hi << 16;
      }
    }
    return;
  }
  // f32: each row widened with the SIMD converts, then spread into the k-major block.
  float *a = apack;
  const mx_cpu_lowp_convert_t *cv = convert_table();
  void (*widen)(const uint16_t *, float *, int64_t) =
      w->et == MX_ELEM_BF16 ? cv->bf16_to_f32 : cv->f16_to_f32;
  int64_t kv = k - pc < kc ? (k - pc > 0 ? k - pc : 0) : kc;  // real k in this block
  _Alignas(64) float row[MX_LOWP_KC];
  for (int i = 0; i < mr; i++) {
    if (i < mv) {
      widen(x + i * ldx + pc, row, kv);
      for (int64_t kk = kv; kk < kc; kk++) row[kk] = 0.0f;
    } else {
      memset(row, 0, (size_t)kc * sizeof *row);
    }
    for (int64_t kk = 0; kk < kc; kk++) a[kk * mr + i] = row[kk];
  }
}

void mx_cpu_gemm_packed_lowp(const mx_cpu_packed_lowp_t *w, const uint16_t *x, int64_t ldx,
                             float *y, int64_t ldy, int64_t m, int ith, int nth) {
  mx_cpu_gemm_packed_lowp_bias(w, x, ldx, NULL, y, ldy, m, ith, nth);
}

void mx_cpu_gemm_packed_lowp_bias(const mx_cpu_packed_lowp_t *w, const uint16_t *x, int64_t ldx,
                                  const float *bias, float *y, int64_t ldy, int64_t m, int ith,
                                  int nth) {
  const mx_cpu_lowp_kernels_t *kt = w->kt;
  const int64_t NR = MX_LOWP_NR, kpad = w->kpad;
  const int mr = kt->mr;
  // As the f32 GEMM (cpu.h): a grid of panel groups x row groups, each output whole on one thread.
  int64_t gn = w->panels < nth ? (w->panels > 0 ? w->panels : 1) : nth;
  int64_t gm = nth / gn;
  if (ith >= gn * gm) return;
  int64_t p0, p1, m0, m1;
  split_range(w->panels, 1, (int)(ith % gn), (int)gn, &p0, &p1);
  split_range(m, mr, (int)(ith / gn), (int)gm, &m0, &m1);
  if (p1 <= p0 || m1 <= m0) return;
  int64_t c0 = p0 * NR, c1 = p1 * NR < w->n ? p1 * NR : w->n;
  if (kpad == 0) {
    for (int64_t i = m0; i < m1; i++) memset(y + i * ldy + c0, 0, (size_t)(c1 - c0) * sizeof *y);
    if (bias) add_bias(y, ldy, m0, m1, c0, c1, bias);
    return;
  }
  // An AMX-style block first (Y over its first k0 k), then the microkernel for the rest.
  int64_t k0 = kt->gemm_block ? kt->gemm_block(w, x, ldx, y, ldy, m0, m1, p0, p1) : 0;
  if (bias && k0 >= kpad) add_bias(y, ldy, m0, m1, c0, c1, bias);
  _Alignas(64) float apack[MX_LOWP_MAX_MR * MX_LOWP_KC];
  for (int64_t jc = p0; jc < p1 && k0 < kpad; jc += MX_LOWP_NC_PANELS) {
    int64_t je = jc + MX_LOWP_NC_PANELS < p1 ? jc + MX_LOWP_NC_PANELS : p1;
    for (int64_t pc = k0; pc < kpad; pc += MX_LOWP_KC) {
      int64_t kc = pc + MX_LOWP_KC < kpad ? MX_LOWP_KC : kpad - pc;
      for (int64_t ir = m0; ir < m1; ir += mr) {
        int mv = m1 - ir < mr ? (int)(m1 - ir) : mr;
        pack_a(w, x + ir * ldx, ldx, mv, pc, kc, apack);
        for (int64_t pi = jc; pi < je; pi++) {
          int64_t rows = w->n - pi * NR;
          int nv = rows < NR ? (int)rows : (int)NR;
          kt->ukernel(kc, apack, w->data + pi * kpad * NR + pc * NR, y + ir * ldy + pi * NR, ldy,
                      mv, nv, pc > 0);
        }
        // The last pass: these rows' outputs of the block are complete and still in cache.
        if (bias && pc + kc >= kpad)
          add_bias(y, ldy, ir, ir + mv, jc * NR, je * NR < w->n ? je * NR : w->n, bias);
      }
    }
  }
}

typedef struct mm_job {
  const mx_cpu_packed_lowp_t *w;
  const uint16_t *x;
  float *y;
  int64_t ldx, ldy, m;
} mm_job_t;

static void gemv_task(void *ctx, int ith, int nth) {
  const mm_job_t *j = ctx;
  mx_cpu_gemv_packed_lowp(j->w, j->x, j->y, ith, nth);
}

static void gemm_task(void *ctx, int ith, int nth) {
  const mm_job_t *j = ctx;
  mx_cpu_gemm_packed_lowp(j->w, j->x, j->ldx, j->y, j->ldy, j->m, ith, nth);
}

void mx_cpu_gemv_packed_lowp_run(mx_cpu_pool_t *pool, const mx_cpu_packed_lowp_t *w,
                                 const uint16_t *x, float *y) {
  mm_job_t job = {.w = w, .x = x, .y = y};
  if (pool) {
    mx_cpu_pool_run(pool, gemv_task, &job);
  } else {
    gemv_task(&job, 0, 1);
  }
}

void mx_cpu_gemm_packed_lowp_run(mx_cpu_pool_t *pool, const mx_cpu_packed_lowp_t *w,
                                 const uint16_t *x, int64_t ldx, float *y, int64_t ldy, int64_t m) {
  mm_job_t job = {.w = w, .x = x, .y = y, .ldx = ldx, .ldy = ldy, .m = m};
  if (pool) {
    mx_cpu_pool_run(pool, gemm_task, &job);
  } else {
    gemm_task(&job, 0, 1);
  }
}

// ---- Conversions ----

static void f32_to_bf16_c(const float *s, uint16_t *d, int64_t n) {
  mx_half_f32_to_bf16(s, d, (size_t)n);
}
static void bf16_to_f32_c(const uint16_t *s, float *d, int64_t n) {
  mx_half_bf16_to_f32(s, d, (size_t)n);
}
static void f32_to_f16_c(const float *s, uint16_t *d, int64_t n) {
  mx_half_f32_to_f16(s, d, (size_t)n);
}
static void f16_to_f32_c(const uint16_t *s, float *d, int64_t n) {
  mx_half_f16_to_f32(s, d, (size_t)n);
}

static const mx_cpu_lowp_convert_t g_convert_c = {f32_to_bf16_c, bf16_to_f32_c, f32_to_f16_c,
                                                  f16_to_f32_c};

static const mx_cpu_lowp_convert_t *convert_table(void) {
#if defined(__x86_64__)
  if (mx_cpu_lowp_get(MX_ELEM_F16, MX_CPU_LOWP_AVX512)) return &mx_cpu_lowp_convert_avx512;
  if (mx_cpu_lowp_get(MX_ELEM_F16, MX_CPU_LOWP_AVX2)) return &mx_cpu_lowp_convert_avx2;
#endif
  return &g_convert_c;
}

bool mx_cpu_convert(const void *src, mx_elem_type_t from, void *dst, mx_elem_type_t to, int64_t n,
                    int ith, int nth) {
  bool half_from = from == MX_ELEM_BF16 || from == MX_ELEM_F16;
  bool half_to = to == MX_ELEM_BF16 || to == MX_ELEM_F16;
  if (!((from == MX_ELEM_F32 && (half_to || to == MX_ELEM_F32)) || (half_from && to == from) ||
        (half_from && to == MX_ELEM_F32)))
    return false;
  int64_t i0, i1;
  split_range(n, 32, ith, nth, &i0, &i1);
  if (i1 <= i0) return true;
  const mx_cpu_lowp_convert_t *c = convert_table();
  int64_t cnt = i1 - i0;
  if (from == to) {
    size_t es = from == MX_ELEM_F32 ? 4 : 2;
    memcpy((uint8_t *)dst + (size_t)i0 * es, (const uint8_t *)src + (size_t)i0 * es,
           (size_t)cnt * es);
  } else if (from == MX_ELEM_F32) {
    const float *s = (const float *)src + i0;
    uint16_t *d = (uint16_t *)dst + i0;
    (to == MX_ELEM_BF16 ? c->f32_to_bf16 : c->f32_to_f16)(s, d, cnt);
  } else {
    const uint16_t *s = (const uint16_t *)src + i0;
    float *d = (float *)dst + i0;
    (from == MX_ELEM_BF16 ? c->bf16_to_f32 : c->f16_to_f32)(s, d, cnt);
  }
  return true;
}
