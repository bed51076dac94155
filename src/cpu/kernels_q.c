// Quantized-weight kernels: kernel selection, packing, and the portable drivers (thread split,
// GEMM blocking, embedding rows) around the per-ISA kernels of kernels_q_*.c (see kernels_q.h).
#include "cpu/kernels_q.h"

#include <stdlib.h>
#include <string.h>

#include "cpu/fused.h"
#include "cpu/kernels_internal.h"
#include "cpu/stream_alloc.h"

// ---- Selection ----

static const char *const kQkernelNames[] = {"auto", "exact", "vnni16", "vnni"};

const char *mx_cpu_qkernel_name(mx_cpu_qkernel_t k) {
  return (unsigned)k < sizeof kQkernelNames / sizeof kQkernelNames[0] ? kQkernelNames[k] : "?";
}

mx_status_t mx_cpu_qkernel_parse(const char *s, const char *what, mx_cpu_qkernel_t *out) {
  for (size_t i = 0; s && i < sizeof kQkernelNames / sizeof kQkernelNames[0]; i++) {
    if (strcmp(s, kQkernelNames[i]) == 0) {
      *out = (mx_cpu_qkernel_t)i;
      return MX_OK;
    }
  }
  return mx_error_set(MX_ERR_INVALID_ARG,
                      "%s: '%s' is not a quantized kernel (auto, exact, vnni16, vnni)",
                      what ? what : "quantized kernel", s ? s : "(null)");
}

const mx_cpu_qkernels_t *mx_cpu_qkernels_for(const mx_cpu_kernels_t *kt, int bits,
                                             mx_cpu_qkernel_t choice) {
  (void)bits;  // every path handles both widths; kept for per-width choices
#if defined(__x86_64__)
  // Default: VNNI16 where the CPU has AVX-512 VNNI (16-bit activations: error ~1e-5 of the
  // group's max |x|, 2.5-3x the exact path's throughput), the exact path elsewhere. The numbers
  // behind the choice are in docs/quantization.md.
  if (choice == MX_CPU_QKERNEL_AUTO) choice = MX_CPU_QKERNEL_VNNI16;
  bool vnni_ok = mx_cpu_features()->avx512vnni;
  switch (kt ? kt->isa : MX_CPU_ISA_SCALAR) {
    case MX_CPU_ISA_AVX512:
      if (vnni_ok && choice == MX_CPU_QKERNEL_VNNI16)
        return mx_cpu_features()->amx_int8 ? &mx_cpu_qkernels_avx512_vnni16_amx
                                           : &mx_cpu_qkernels_avx512_vnni16;
      if (vnni_ok && choice == MX_CPU_QKERNEL_VNNI) return &mx_cpu_qkernels_avx512_vnni;
      return &mx_cpu_qkernels_avx512;
    case MX_CPU_ISA_AVX2:
      return &mx_cpu_qkernels_avx2;
    default:
      return &mx_cpu_qkernels_scalar;
  }
#else
  (void)kt;
  (void)choice;
  return &mx_cpu_qkernels_scalar;
#endif
}

bool mx_cpu_qsrc_ok(const mx_cpu_qsrc_t *s) {
  if (!s || !s->w || !s->scales || s->n <= 0 || s->k <= 0 || s->group <= 0) return false;
  if (s->k > MX_Q_MAX_K || s->group % 32 != 0 || s->k % s->group != 0) return false;
  if (s->sdt != MX_ELEM_F32 && s->sdt != MX_ELEM_F16 && s->sdt != MX_ELEM_BF16) return false;
  switch (s->mode) {
    case MX_CPU_Q_INT8:
      return s->bits == 8 && !s->biases;
    case MX_CPU_Q_INT4:
      return s->bits == 4 && !s->biases;
    case MX_CPU_Q_AFFINE:
      return (s->bits == 4 || s->bits == 8) && s->biases;
    default:
      return false;
  }
}

// ---- Packing ----

// Loads from the graph's tensors, which point into a mmapped checkpoint at whatever offset the
// file gives them (safetensors aligns nothing): memcpy, not a typed dereference.
static inline uint32_t load_u32(const void *p, int64_t i) {
  uint32_t v;
  memcpy(&v, (const uint8_t *)p + 4 * i, sizeof v);
  return v;
}
static inline uint16_t load_u16(const void *p, int64_t i) {
  uint16_t v;
  memcpy(&v, (const uint8_t *)p + 2 * i, sizeof v);
  return v;
}

// Value u of row r at column kk of the graph form.
static inline unsigned src_u(const mx_cpu_qsrc_t *s, int64_t r, int64_t kk) {
  if (s->mode == MX_CPU_Q_INT8) return (uint8_t)(((const int8_t *)s->w)[r * s->k + kk] ^ 0x80);
  int per = 32 / s->bits;
  uint32_t word = load_u32(s->w, r * (s->k / per) + kk / per);
  return (word >> (s->bits * (kk % per))) & ((1u << s->bits) - 1u);
}

static inline float src_param(const mx_cpu_qsrc_t *s, const void *a, int64_t i) {
  switch (s->sdt) {
    case MX_ELEM_F16:
      return mx_cpu_h2f(load_u16(a, i));
    case MX_ELEM_BF16: {
      uint32_t x = (uint32_t)load_u16(a, i) << 16;
      float f;
      memcpy(&f, &x, sizeof f);
      return f;
    }
    default: {
      uint32_t x = load_u32(a, i);
      float f;
      memcpy(&f, &x, sizeof f);
      return f;
    }
  }
}

// The values u of row `row` of the graph form into u[k].
static void src_row(const mx_cpu_qsrc_t *s, int64_t row, uint8_t *u) {
  if (s->mode == MX_CPU_Q_INT8) {
    const uint8_t *q = (const uint8_t *)s->w + row * s->k;
    for (int64_t kk = 0; kk < s->k; kk++) u[kk] = q[kk] ^ 0x80;
  } else if (s->bits == 8) {  // 4 bytes per word, LSB first: the bytes in memory order
    memcpy(u, (const uint8_t *)s->w + row * s->k, (size_t)s->k);  // little-endian: in order
  } else {
    for (int64_t i = 0; i < s->k / 8; i++) {
      uint32_t word = load_u32(s->w, row * (s->k / 8) + i);
      for (int b = 0; b < 8; b++) u[8 * i + b] = (uint8_t)((word >> (4 * b)) & 15u);
    }
  }
}

// Row r of panel p from u[k], in the packed layout (see kernels_q.h).
static void put_row(mx_cpu_qpacked_t *w, int64_t p, int r, const uint8_t *u) {
  uint8_t *q = w->q;
  int64_t k = w->k;
  if (w->layout == MX_QL_KMAJOR && w->bits == 8) {
    for (int64_t kk = 0; kk < k; kk++) q[(p * k + kk) * MX_QR + r] = u[kk];
  } else if (w->layout == MX_QL_KMAJOR) {
    for (int64_t kk = 0; kk < k; kk += 2)
      q[(p * (k / 2) + kk / 2) * MX_QR + r] = (uint8_t)(u[kk] | u[kk + 1] << 4);
  } else if (w->bits == 8) {
    for (int64_t c = 0; c < k / 4; c++)
      memcpy(q + ((p * (k / 4) + c) * MX_QR + r) * 4, u + 4 * c, 4);
  } else {
    for (int64_t c = 0; c < k / 8; c++)
      for (int i = 0; i < 4; i++)
        q[((p * (k / 8) + c) * MX_QR + r) * 4 + i] =
            (uint8_t)(u[8 * c + i] | u[8 * c + 4 + i] << 4);
  }
}

typedef struct qpack_job {
  const mx_cpu_qsrc_t *src;
  mx_cpu_qpacked_t *w;
} qpack_job_t;

static void qpack_task(void *ctx, int ith, int nth) {
  qpack_job_t *job = ctx;
  const mx_cpu_qsrc_t *s = job->src;
  mx_cpu_qpacked_t *w = job->w;
  int64_t p0 = w->panels * ith / nth, p1 = w->panels * (ith + 1) / nth;
  _Alignas(64) uint8_t u[MX_Q_MAX_K];
  for (int64_t p = p0; p < p1; p++) {
    for (int r = 0; r < MX_QR; r++) {
      int64_t row = p * MX_QR + r;
      bool real = row < w->n;
      if (real) {
        src_row(s, row, u);
      } else {
        memset(u, 0, (size_t)w->k);
      }
      put_row(w, p, r, u);
      for (int64_t j = 0; j < w->groups; j++) {
        int64_t d = (p * w->groups + j) * MX_QR + r, si = row * w->groups + j;
        if (w->f16) {
          ((uint16_t *)w->s)[d] = real ? load_u16(s->scales, si) : 0;
          if (w->b) ((uint16_t *)w->b)[d] = real ? load_u16(s->biases, si) : 0;
        } else {
          ((float *)w->s)[d] = real ? src_param(s, s->scales, si) : 0.0f;
          if (w->b) ((float *)w->b)[d] = real ? src_param(s, s->biases, si) : 0.0f;
        }
      }
    }
  }
}

mx_status_t mx_cpu_qpack(const mx_cpu_kernels_t *kt, const mx_cpu_qkernels_t *qk,
                         mx_cpu_pool_t *pool, const mx_cpu_qsrc_t *src, mx_cpu_qpacked_t **out) {
  return mx_cpu_qpack_in(kt, qk, pool, src, NULL, out);
}

mx_status_t mx_cpu_qpack_in(const mx_cpu_kernels_t *kt, const mx_cpu_qkernels_t *qk,
                            mx_cpu_pool_t *pool, const mx_cpu_qsrc_t *src, mx_cpu_slab_t *slab,
                            mx_cpu_qpacked_t **out) {
  *out = NULL;
  if (!kt || !qk || !mx_cpu_qsrc_ok(src))
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_qpack: unsupported quantized weight");
  if (kt->nr % MX_QR != 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_qpack: panel width %d", kt->nr);
  mx_cpu_qpacked_t *w = calloc(1, sizeof *w);
  if (!w) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  w->kt = kt;
  w->qk = qk;
  w->mode = src->mode;
  w->bits = src->bits;
  w->layout = qk->layout;
  w->n = src->n;
  w->k = src->k;
  w->group = src->group;
  w->groups = src->k / src->group;
  w->panels = (src->n + MX_QR - 1) / MX_QR;
  w->offset = src->mode == MX_CPU_Q_INT8 ? 128 : src->mode == MX_CPU_Q_INT4 ? 8 : 0;
  w->f16 = src->sdt == MX_ELEM_F16;
  size_t qb = (size_t)w->panels * MX_QR * (size_t)w->k * (size_t)w->bits / 8;
  size_t pb = (size_t)w->panels * (size_t)w->groups * MX_QR * (w->f16 ? 2 : 4);
  size_t qa = (qb + 63) & ~(size_t)63, pa = (pb + 63) & ~(size_t)63;
  w->q = slab ? mx_cpu_slab_alloc(slab, qa + 2 * pa) : mx_cpu_stream_alloc(qa + 2 * pa);
  if (!w->q) {
    free(w);
    return mx_error_set(MX_ERR_NOMEM, "out of memory packing a %lld x %lld quantized weight",
                        (long long)src->n, (long long)src->k);
  }
  memset(w->q, 0, qa);
  w->s = w->q + qa;
  w->b = src->mode == MX_CPU_Q_AFFINE ? (void *)(w->q + qa + pa) : NULL;
  w->bytes = qb + pb * (w->b ? 2 : 1);
  qpack_job_t job = {src, w};
  if (pool)
    mx_cpu_pool_run(pool, qpack_task, &job);
  else
    qpack_task(&job, 0, 1);
  *out = w;
  return MX_OK;
}

void mx_cpu_qpacked_destroy(mx_cpu_qpacked_t *w) {
  if (!w) return;
  free(w->q);
  free(w);
}

// ---- Drivers ----

static void split_units(int64_t total, int ith, int nth, int64_t *lo, int64_t *hi) {
  *lo = total * ith / nth;
  *hi = total * (ith + 1) / nth;
}

void mx_cpu_qgemv(const mx_cpu_qpacked_t *w, const float *x, float *y, int ith, int nth) {
  int64_t p0, p1;
  split_units(w->panels, ith, nth, &p0, &p1);
  if (p1 <= p0) return;
  _Alignas(64) float xsum[MX_Q_MAX_K / 32], dx[MX_Q_MAX_K / 32];
  _Alignas(64) int32_t xqsum[MX_Q_MAX_K / 32];
  _Alignas(64) int8_t xq[MX_Q_MAX_K], xl[MX_Q_MAX_K];
  mx_qact_t a = {xsum, xq, xl, dx, xqsum};
  w->qk->prep(w, x, &a);
  w->qk->gemv(w, x, &a, y, p0, p1);
}

void mx_cpu_qgemv_dyn(const mx_cpu_qpacked_t *w, const float *x, float *y, mx_cpu_work_t *work,
                      int ith, int nth) {
  int64_t panel_bytes = (int64_t)(w->bytes / (size_t)(w->panels > 0 ? w->panels : 1));
  int64_t g = mx_cpu_work_stream_grain(w->panels, panel_bytes, nth);
  int64_t n = (w->panels + g - 1) / g, c;
  if (!mx_cpu_work_claim(work, n, ith, nth, &c)) return;  // nothing left: skip the activation prep
  _Alignas(64) float xsum[MX_Q_MAX_K / 32], dx[MX_Q_MAX_K / 32];
  _Alignas(64) int32_t xqsum[MX_Q_MAX_K / 32];
  _Alignas(64) int8_t xq[MX_Q_MAX_K], xl[MX_Q_MAX_K];
  mx_qact_t a = {xsum, xq, xl, dx, xqsum};
  w->qk->prep(w, x, &a);
  do {
    int64_t p0 = c * g, p1 = p0 + g < w->panels ? p0 + g : w->panels;
    w->qk->gemv(w, x, &a, y, p0, p1);
  } while (mx_cpu_work_claim(work, n, ith, nth, &c));
}

bool mx_cpu_qgated_pair_ok(const mx_cpu_qpacked_t *gate, const mx_cpu_qpacked_t *up) {
  return gate && up && gate->qk == up->qk && gate->mode == up->mode && gate->bits == up->bits &&
         gate->layout == up->layout && gate->n == up->n && gate->k == up->k &&
         gate->group == up->group && gate->panels == up->panels && gate->f16 == up->f16 &&
         gate->k <= MX_Q_MAX_K;
}

void mx_cpu_qgated_up_dyn(const mx_cpu_qpacked_t *gate_w, const mx_cpu_qpacked_t *up_w,
                          const float *x, float *gate, float *up, float *act, int act_kind,
                          mx_cpu_work_t *work, int ith, int nth) {
  const int64_t panels = gate_w->panels;
  // Chunks of the grain one of the two GEMVs has alone: each weight's stream runs as long between
  // switches as it does unfused.
  int64_t panel_bytes = (int64_t)(gate_w->bytes / (size_t)(panels > 0 ? panels : 1));
  int64_t g = mx_cpu_work_stream_grain(panels, panel_bytes, nth);
  int64_t n = (panels + g - 1) / g, c;
  if (!mx_cpu_work_claim(work, n, ith, nth, &c)) return;
  _Alignas(64) float xsum[MX_Q_MAX_K / 32], dx[MX_Q_MAX_K / 32];
  _Alignas(64) int32_t xqsum[MX_Q_MAX_K / 32];
  _Alignas(64) int8_t xq[MX_Q_MAX_K], xl[MX_Q_MAX_K];
  mx_qact_t a = {xsum, xq, xl, dx, xqsum};
  // One preparation for both: the pair has the same format, k and group (mx_cpu_qgated_pair_ok),
  // so it is the one each GEMV would make.
  gate_w->qk->prep(gate_w, x, &a);
  do {
    int64_t p0 = c * g, p1 = p0 + g < panels ? p0 + g : panels;
    gate_w->qk->gemv(gate_w, x, &a, gate, p0, p1);
    up_w->qk->gemv(up_w, x, &a, up, p0, p1);
    int64_t r0 = p0 * MX_QR, r1 = p1 * MX_QR < gate_w->n ? p1 * MX_QR : gate_w->n;
    if (r1 > r0) mx_cpu_gated_act_f32(gate + r0, up + r0, act + r0, r1 - r0, act_kind, 0, 1);
  } while (mx_cpu_work_claim(work, n, ith, nth, &c));
}

enum { QKC = 256 };  // k values per dequantized block (a multiple of every group size)

// Rows of x per thread from which a GEMM with gemm_split_rows splits the rows, not the panels.
enum { QSPLIT_ROWS = 64 };

// Integer prefill (qk->gemm): threads split the 16-row panels, and the rows of x when panels
// are fewer than threads or the kernels ask for it (gemm_split_rows) and m is large enough.
static void qgemm_int(const mx_cpu_qpacked_t *w, const float *x, int64_t ldx, float *y, int64_t ldy,
                      int64_t m, int ith, int nth) {
  int64_t gn = w->panels < nth ? (w->panels > 0 ? w->panels : 1) : nth, gm = nth / gn;
  if (w->qk->gemm_split_rows && m >= (int64_t)nth * QSPLIT_ROWS) gn = 1, gm = nth;
  if (ith >= gn * gm) return;
  int64_t p0, p1, m0, m1;
  split_units(w->panels, (int)(ith % gn), (int)gn, &p0, &p1);
  split_units(m, (int)(ith / gn), (int)gm, &m0, &m1);
  if (p1 > p0 && m1 > m0) w->qk->gemm(w, x, ldx, y, ldy, m0, m1, p0, p1);
}

void mx_cpu_qgemm(const mx_cpu_qpacked_t *w, const float *x, int64_t ldx, float *y, int64_t ldy,
                  int64_t m, int ith, int nth) {
  if (w->qk->gemm) {
    qgemm_int(w, x, ldx, y, ldy, m, ith, nth);
    return;
  }
  const mx_cpu_kernels_t *kt = w->kt;
  const int nr = kt->nr, mr = kt->mr, sub = nr / MX_QR;
  int64_t fpanels = (w->n + nr - 1) / nr;  // f32 panels of nr rows
  int64_t gn = fpanels < nth ? (fpanels > 0 ? fpanels : 1) : nth;
  int64_t gm = nth / gn;
  if (ith >= gn * gm) return;
  int64_t j0, j1, m0, m1;
  split_units(fpanels, (int)(ith % gn), (int)gn, &j0, &j1);
  int64_t units = (m + mr - 1) / mr;
  split_units(units, (int)(ith / gn), (int)gm, &m0, &m1);
  m0 *= mr;
  m1 = m1 * mr < m ? m1 * mr : m;
  if (j1 <= j0 || m1 <= m0) return;
  _Alignas(64) float bpack[QKC * 32];
  _Alignas(64) float apack[MX_GEMM_MAX_MR * QKC];
  for (int64_t jp = j0; jp < j1; jp++) {
    int64_t rows = w->n - jp * nr;
    int nv = rows < nr ? (int)rows : nr;
    for (int64_t pc = 0; pc < w->k; pc += QKC) {
      int64_t kc = pc + QKC < w->k ? QKC : w->k - pc;
      for (int t = 0; t < sub; t++) {
        int64_t qp = jp * sub + t;
        if (qp < w->panels) {
          w->qk->dequant(w, qp, pc, kc, bpack + t * MX_QR, nr);
        } else {
          for (int64_t kk = 0; kk < kc; kk++) memset(bpack + kk * nr + t * MX_QR, 0, MX_QR * 4);
        }
      }
      for (int64_t ir = m0; ir < m1; ir += mr) {
        int mv = m1 - ir < mr ? (int)(m1 - ir) : mr;
        if (kt->pack_a) {
          kt->pack_a(x + ir * ldx + pc, ldx, mv, kc, apack);
        } else {
          for (int i = 0; i < mr; i++)
            for (int64_t kk = 0; kk < kc; kk++)
              apack[kk * mr + i] = i < mv ? x[(ir + i) * ldx + pc + kk] : 0.0f;
        }
        kt->gemm_ukernel(kc, apack, bpack, y + ir * ldy + jp * nr, ldy, mv, nv, pc > 0);
      }
    }
  }
}

void mx_cpu_qembed(const mx_cpu_qsrc_t *s, const int32_t *ids, int64_t n_ids, float *out, int ith,
                   int nth) {
  int64_t i0, i1;
  split_units(n_ids, ith, nth, &i0, &i1);
  int64_t k = s->k, G = k / s->group;
  float off = s->mode == MX_CPU_Q_INT8 ? 128.0f : s->mode == MX_CPU_Q_INT4 ? 8.0f : 0.0f;
  for (int64_t i = i0; i < i1; i++) {
    float *o = out + i * k;
    int64_t r = ids[i];
    if (r < 0 || r >= s->n) {
      memset(o, 0, (size_t)k * sizeof *o);
      continue;
    }
    for (int64_t j = 0; j < G; j++) {
      float sc = src_param(s, s->scales, r * G + j);
      float bi = s->biases ? src_param(s, s->biases, r * G + j) : 0.0f;
      for (int64_t kk = j * s->group; kk < (j + 1) * s->group; kk++) {
        float v = ((float)src_u(s, r, kk) - off) * sc;
        o[kk] = s->biases ? v + bi : v;
      }
    }
  }
}
