// Plan executor: one pool job per run; every thread walks the step list, kernel steps split by
// (ith, nth), serial steps on thread 0, a barrier after each step.
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/fused_kv.h"
#include "cpu/kernels_rows.h"
#include "cpu/plan_internal.h"
#include "hlo/interp_kernels.h"

static void split(int64_t n, int ith, int nth, int64_t *b, int64_t *e) {
  *b = n * ith / nth;
  *e = n * (ith + 1) / nth;
}

// o[j] = a[j] op b[j] for j < len, an operand with stride 0 being one value.
#define EW_RUN(OP)                                           \
  do {                                                       \
    if (sa) {                                                \
      float x = *a;                                          \
      for (int64_t j = 0; j < len; j++) o[j] = x OP b[j];    \
    } else if (sb) {                                         \
      float y = *b;                                          \
      for (int64_t j = 0; j < len; j++) o[j] = a[j] OP y;    \
    } else {                                                 \
      for (int64_t j = 0; j < len; j++) o[j] = a[j] OP b[j]; \
    }                                                        \
  } while (0)

static void ew_run(int code, const float *a, bool sa, const float *b, bool sb, float *o,
                   int64_t len) {
  switch (code) {
    case MX_OP_ADD:
      EW_RUN(+);
      break;
    case MX_OP_SUBTRACT:
      EW_RUN(-);
      break;
    case MX_OP_DIVIDE:
      EW_RUN(/);
      break;
    default:
      EW_RUN(*);
      break;
  }
}
#undef EW_RUN

// Where element i of an operand read through rd is (*at), whether the elements after it up to
// *end (lowered to where that stops holding) are contiguous (false) or the same one (true).
static bool ew_at(const float *x, ew_read_t rd, int64_t i, const float **at, int64_t *end) {
  if (rd.mod == 0) {
    *at = x + i;
    return false;
  }
  if (rd.mod == 1) {
    *at = x;
    return true;
  }
  if (rd.div == 1) {
    int64_t r = i % rd.mod, e = i - r + rd.mod;
    *at = x + r;
    if (e < *end) *end = e;
    return false;
  }
  int64_t e = (i / rd.div + 1) * rd.div;
  *at = x + (i / rd.div) % rd.mod;
  if (e < *end) *end = e;
  return true;
}

// o[0 .. i1 - i0) = the results i0 .. i1 of an elementwise op, in runs over which each operand
// is contiguous or one value (a broadcast operand read in place, step_ew_t.rd).
static void ew_range(const float *a, ew_read_t ra, const float *b, ew_read_t rb, float *o,
                     int64_t i0, int64_t i1, int code) {
  for (int64_t i = i0; i < i1;) {
    int64_t e = i1;
    const float *pa, *pb;
    bool sa = ew_at(a, ra, i, &pa, &e), sb = ew_at(b, rb, i, &pb, &e);
    float *oi = o + (i - i0);
    if (sa && sb) {  // one value over the run
      ew_run(code, pa, true, pb, false, oi, 1);
      for (int64_t j = 1; j < e - i; j++) oi[j] = oi[0];
    } else {
      ew_run(code, pa, sa, pb, sb, oi, e - i);
    }
    i = e;
  }
}

// ST_EW_BINARY: this thread's share. With a convert fused (step_ew_t.to), the f32 results go
// through a block on the stack into the converted output, each rounded by mx_cpu_convert as
// the convert step would.
static void ew_binary(const float *a, ew_read_t ra, const float *b, ew_read_t rb, void *out,
                      mx_elem_type_t to, int64_t n, int code, int ith, int nth) {
  int64_t i0, i1;
  split(n, ith, nth, &i0, &i1);
  if (to == MX_ELEM_INVALID) {
    ew_range(a, ra, b, rb, (float *)out + i0, i0, i1, code);
    return;
  }
  enum { BLOCK = 512 };
  _Alignas(64) float t[BLOCK];
  for (int64_t c = i0; c < i1; c += BLOCK) {
    int64_t e = c + BLOCK < i1 ? c + BLOCK : i1;
    ew_range(a, ra, b, rb, t, c, e, code);
    mx_cpu_convert(t, MX_ELEM_F32, (uint16_t *)out + c, to, e - c, 0, 1);
  }
}

// ST_BATCH_DOT (plan_internal.h, step_bdot_t): this thread's share of the output elements.
static void batch_dot(const step_bdot_t *d, const float *l, const float *r, float *out, int ith,
                      int nth) {
  int64_t n = 1;
  for (int32_t i = 0; i < d->rank; i++) n *= d->dims[i];
  int64_t b, e;
  split(n, ith, nth, &b, &e);
  int64_t idx[MX_MAX_RANK] = {0}, rem = b;
  for (int32_t i = d->rank - 1; i >= 0; i--) {
    idx[i] = rem % d->dims[i];
    rem /= d->dims[i];
  }
  for (int64_t o = b; o < e; o++) {
    int64_t lo = 0, ro = 0;
    for (int32_t i = 0; i < d->rank; i++) lo += idx[i] * d->ls[i], ro += idx[i] * d->rs[i];
    double acc = 0.0;
    for (int64_t j = 0; j < d->k; j++) acc += (double)l[lo + j * d->lk] * (double)r[ro + j * d->rk];
    out[o] = (float)acc;
    for (int32_t i = d->rank - 1; i >= 0; i--) {
      if (++idx[i] < d->dims[i]) break;
      idx[i] = 0;
    }
  }
}

// out[o0, .., o_{r-1}] = in[sum o_d * str[d]] for 4-byte elements; rows of the last output dim
// are split across threads.
static void transpose4(const uint32_t *in, uint32_t *out, int32_t r, const int64_t *dims,
                       const int64_t *str, int ith, int nth) {
  int64_t row = dims[r - 1], rows = 1;
  for (int32_t d = 0; d < r - 1; d++) rows *= dims[d];
  if (row == 0 || rows == 0) return;
  int64_t b, e;
  split(rows, ith, nth, &b, &e);
  int64_t idx[MX_MAX_RANK] = {0};
  int64_t rem = b;
  for (int32_t d = r - 2; d >= 0; d--) {
    idx[d] = rem % dims[d];
    rem /= dims[d];
  }
  const int64_t ls = str[r - 1];
  for (int64_t k = b; k < e; k++) {
    int64_t base = 0;
    for (int32_t d = 0; d < r - 1; d++) base += idx[d] * str[d];
    uint32_t *o = out + k * row;
    const uint32_t *src = in + base;
    if (ls == 1) {
      memcpy(o, src, (size_t)row * sizeof *o);
    } else {
      for (int64_t j = 0; j < row; j++) o[j] = src[j * ls];
    }
    for (int32_t d = r - 2; d >= 0; d--) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

static int64_t scalar_int(const uint8_t *d, const mx_type_t *t) {
  if (t->elem == MX_ELEM_I64) {
    int64_t v;
    memcpy(&v, d, sizeof v);
    return v;
  }
  int32_t v;
  memcpy(&v, d, sizeof v);
  return v;
}

// dynamic_update_slice in place: the operand buffer is the result's. The update's rows (its last
// dimension) are split across threads.
static void dus_inplace(mx_cpu_plan_t *p, const mx_step_t *s, int ith, int nth) {
  const mx_func_t *f = p->f;
  const mx_op_t *op = s->op;
  const mx_type_t *t = &f->values[op->operands[0]].type, *u = &f->values[op->operands[1]].type;
  uint8_t *dst = p->vp[op->results[0]];
  const uint8_t *src = p->vp[s->in[0]];
  int32_t r = t->rank;
  int64_t start[MX_MAX_RANK], idx[MX_MAX_RANK];
  for (int32_t d = 0; d < r; d++) {
    int64_t v = scalar_int(p->vp[s->in[1 + d]], &f->values[s->in[1 + d]].type);
    int64_t hi = t->dims[d] - u->dims[d];
    start[d] = v < 0 ? 0 : v > hi ? hi : v;  // clamped like the spec
    idx[d] = 0;
  }
  size_t es = mx_elem_size(t->elem);
  if (mx_type_numel(u) == 0) return;
  if (r == 0) {
    if (ith == 0) memcpy(dst, src, es);
    return;
  }
  int64_t row = u->dims[r - 1];
  int64_t rows = mx_type_numel(u) / row, k0, k1;
  split(rows, ith, nth, &k0, &k1);
  int64_t rem = k0;  // the update index of row k0
  for (int32_t d = r - 2; d >= 0; d--) {
    idx[d] = rem % u->dims[d];
    rem /= u->dims[d];
  }
  for (int64_t k = k0; k < k1; k++) {
    int64_t off = 0;
    for (int32_t d = 0; d < r; d++) off = off * t->dims[d] + start[d] + idx[d];
    memcpy(dst + (size_t)off * es, src + (size_t)(k * row) * es, (size_t)row * es);
    for (int32_t d = r - 2; d >= 0; d--) {
      if (++idx[d] < u->dims[d]) break;
      idx[d] = 0;
    }
  }
}

// An ST_ROPE fused with the in-place dynamic_update_slice that stored its row in a KV cache
// (rope.cache_op; compile_layout.c checked the shapes: update [1, heads, 1, d] into a rank-4 f32
// cache): the start indices clamped as dus_inplace clamps them, head hh of the row written at
// cache[0, start1 + hh, start2, :].
static void rope_to_cache(mx_cpu_plan_t *p, const mx_step_t *s, int ith, int nth) {
  const mx_func_t *f = p->f;
  const mx_op_t *op = s->rope.cache_op;
  const mx_type_t *t = &f->values[op->operands[0]].type, *u = &f->values[op->operands[1]].type;
  int64_t start[4];
  for (int32_t d = 0; d < 4; d++) {
    int32_t iv = s->in[s->rope.n_rope_in + d];
    int64_t v = scalar_int(p->vp[iv], &f->values[iv].type), hi = t->dims[d] - u->dims[d];
    start[d] = v < 0 ? 0 : v > hi ? hi : v;
  }
  int64_t S = t->dims[2], D = t->dims[3];
  float *dst = (float *)p->vp[op->results[0]] +
               ((start[0] * t->dims[1] + start[1]) * S + start[2]) * D + start[3];
  const float *table = s->rope.n_rope_in > 3 ? (const float *)p->vp[s->in[3]] : NULL;
  mx_cpu_rope_copy_heads_f32((const float *)p->vp[s->in[0]], dst, S * D,
                             ((const int32_t *)p->vp[s->in[1]])[0], (const float *)p->vp[s->in[2]],
                             table, s->rope.heads, s->rope.head_dim, s->rope.rotary_dim,
                             s->rope.style, ith, nth);
}

static mx_status_t run_serial(mx_cpu_plan_t *p, mx_step_t *s) {
  const mx_op_t *op = s->op;
  mx_status_t st = MX_OK;
  if (s->kind == ST_WHOLE) {
    const mx_func_t *f = p->f;
    st = mx_interp_run(p->m, f, p->run_args, p->n_args, s->heap_out, NULL);
    return st;
  }
  if (s->kind == ST_PERTURB) {  // testing: a deliberately wrong result
    float *o = (float *)p->vp[s->out[0]];
    o[0] += 1.0f;
    return MX_OK;
  }
  for (int32_t i = 0; i < s->n_in; i++) {
    s->tin[i].data = p->vp[s->in[i]];
    s->tin[i].nbytes = mx_type_nbytes(&s->tin[i].type);
  }
  if (s->kind == ST_CALL) {
    st = mx_interp_run(p->m, s->callee, s->tin, s->n_in, s->heap_out, NULL);
    if (st) return st;
    for (int32_t i = 0; i < s->n_out; i++) {
      size_t nb = mx_type_nbytes(&s->tout[i].type);
      if (s->heap_out[i].nbytes >= nb && nb) memcpy(p->vp[s->out[i]], s->heap_out[i].data, nb);
      mx_tensor_free(&s->heap_out[i]);
    }
    return MX_OK;
  }
  for (int32_t i = 0; i < s->n_out; i++) {
    s->tout[i].data = p->vp[s->out[i]];
    s->tout[i].nbytes = mx_type_nbytes(&s->tout[i].type);
    memset(s->tout[i].data, 0, s->tout[i].nbytes);
  }
  // compile.c sends no op whose kernel needs the interpreter here (needs_whole).
  mx_interp_kernel_t k = mx_interp_kernel_lookup(op->code);
  if (!k.fn || k.needs_interp)
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s", mx_opcode_name(op->code));
  return k.fn(NULL, p->f, op, s->pin, s->tout);
}

// X packed once for a GEMM step (compile_barriers.c plan_apack_*, gemm.apack): APACK_PACK packs
// it into the arena's apack region here (after a barrier when gemm.apack_barrier: a GEMM since
// the last barrier may still
// read the region), then waits for every thread's share; APACK_REUSE reads what the last packing
// step left there (same input, the barrier in that step published it). NULL: APACK_NONE, the
// GEMM packs X block by block itself.
static const float *step_apack(mx_cpu_plan_t *p, const mx_step_t *s, const float *x, int ith,
                               int nth) {
  if (s->gemm.apack == APACK_NONE) return NULL;
  float *apack = (float *)(p->arena + p->apack_off);
  if (s->gemm.apack == APACK_PACK) {
    if (nth > 1 && s->gemm.apack_barrier) mx_cpu_pool_barrier(p->run_pool);
    mx_cpu_gemm_pack_x(s->w->kt, x, s->gemm.k, s->gemm.m, s->w->k, apack, ith, nth);
    if (nth > 1) mx_cpu_pool_barrier(p->run_pool);
  }
  return apack;
}

// Y = X W^T for a matmul step's shape (s->gemm) with the fixed split by (ith, nth); apack:
// step_apack's.
static void matmul_fixed(const mx_step_t *s, const mx_cpu_packed_t *w, const float *x,
                         const float *apack, float *y, int ith, int nth) {
  const step_gemm_t *g = &s->gemm;
  if (g->m == 1)
    mx_cpu_gemv_packed_f32(w, x, y, ith, nth);
  else if (g->rows_as_gemv)
    mx_cpu_gemv_packed_rows_f32(w, x, g->k, y, g->n, g->m, ith, nth);
  else
    mx_cpu_gemm_packed_f32(w, x, g->k, apack, y, g->n, g->m, ith, nth);
}

// The same with the panels shared through the step's work counter where the kernel can.
static void matmul(mx_cpu_plan_t *p, const mx_step_t *s, const mx_cpu_packed_t *w, const float *x,
                   float *y, int ith, int nth) {
  mx_cpu_work_t *wk = &p->work[s - p->steps];
  const step_gemm_t *g = &s->gemm;
  if (g->m == 1)
    mx_cpu_gemv_packed_f32_dyn(w, x, y, wk, ith, nth);
  else if (g->rows_as_gemv)
    matmul_fixed(s, w, x, NULL, y, ith, nth);
  else
    mx_cpu_gemm_packed_f32_dyn(w, x, g->k, step_apack(p, s, x, ith, nth), y, g->n, g->m, wk, ith,
                               nth);
}

// mx.gated_mlp's gate and up projections and the activation, chunk by chunk: each claimed
// group of panels gets its gate and up columns (all rows) and then their activation, so no
// barrier is needed in between. With fewer panels than threads, the fixed split of
// mx_cpu_matmul_region.
static void gated_up(mx_cpu_plan_t *p, const mx_step_t *s, int ith, int nth) {
  uint8_t **vp = p->vp;
  const float *x = (const float *)vp[s->in[0]];
  float *act = (float *)vp[s->out[0]], *gate = (float *)vp[s->out[1]], *up = (float *)vp[s->out[2]];
  const mx_cpu_packed_t *w = s->w;
  int64_t m = s->gemm.m, n = s->gemm.n, k = s->gemm.k, r0 = 0, r1 = m, c0, c1;
  bool gemm = m > 1 && !s->gemm.rows_as_gemv;
  const float *apack = gemm ? step_apack(p, s, x, ith, nth) : NULL;
  if (w->panels >= nth && (m == 1 || gemm)) {
    int64_t g =
        m == 1 ? mx_cpu_gemv_packed_f32_grain(w, nth) : mx_cpu_gemm_packed_f32_grain(w, nth);
    int64_t chunks = (w->panels + g - 1) / g, c;
    while (mx_cpu_work_claim(&p->work[s - p->steps], chunks, ith, nth, &c)) {
      int64_t q0 = c * g, q1 = q0 + g;
      if (m == 1) {
        mx_cpu_gemv_packed_f32_panels(w, x, gate, q0, q1);
        mx_cpu_gemv_packed_f32_panels(s->w2, x, up, q0, q1);
      } else {
        mx_cpu_gemm_packed_f32_block(w, x, k, apack, gate, n, 0, m, q0, q1);
        mx_cpu_gemm_packed_f32_block(s->w2, x, k, apack, up, n, 0, m, q0, q1);
      }
      c0 = q0 * w->nr;
      c1 = q1 * w->nr < n ? q1 * w->nr : n;
      for (int64_t r = 0; r < m && c1 > c0; r++)
        mx_cpu_gated_act_f32(gate + r * n + c0, up + r * n + c0, act + r * n + c0, c1 - c0,
                             s->gemm.act, 0, 1);
    }
    return;
  }
  matmul_fixed(s, w, x, apack, gate, ith, nth);
  matmul_fixed(s, s->w2, x, apack, up, ith, nth);
  // The activation over exactly what this thread wrote (gate and up split alike).
  mx_cpu_matmul_region(w, m, gemm, ith, nth, &r0, &r1, &c0, &c1);
  for (int64_t r = r0; r < r1 && c1 > c0; r++)
    mx_cpu_gated_act_f32(gate + r * n + c0, up + r * n + c0, act + r * n + c0, c1 - c0, s->gemm.act,
                         0, 1);
}

void mx_cpu_step_exec(mx_cpu_plan_t *p, mx_step_t *s, int ith, int nth) {
  uint8_t **vp = p->vp;
  switch (s->kind) {
    case ST_GEMM:
      matmul(p, s, s->w, (const float *)vp[s->in[0]], (float *)vp[s->out[0]], ith, nth);
      break;
    case ST_GATED_ACT:
      mx_cpu_gated_act_f32((const float *)vp[s->in[0]], (const float *)vp[s->in[1]],
                           (float *)vp[s->out[0]], s->ew.n, s->ew.op, ith, nth);
      break;
    case ST_GATED_UP:
      gated_up(p, s, ith, nth);
      break;
    case ST_EMBED:
      mx_cpu_embed_f32((const float *)vp[s->in[0]], s->rows.vocab, s->rows.h,
                       (const int32_t *)vp[s->in[1]], s->rows.n, (float *)vp[s->out[0]], ith, nth);
      break;
    case ST_RMS_NORM:
      mx_cpu_rms_norm_f32((const float *)vp[s->in[0]], (const float *)vp[s->in[1]],
                          (float *)vp[s->out[0]], s->norm.rows, s->norm.h, s->norm.eps,
                          s->norm.weight_offset, ith, nth);
      break;
    case ST_ADD_RMS_NORM:
      mx_cpu_add_rms_norm_f32((const float *)vp[s->in[0]], (const float *)vp[s->in[1]],
                              (const float *)vp[s->in[2]], (float *)vp[s->out[0]],
                              (float *)vp[s->out[1]], s->norm.rows, s->norm.h, s->norm.eps,
                              s->norm.weight_offset, ith, nth);
      break;
    case ST_ROPE:
      if (s->rope.cache_op) {
        rope_to_cache(p, s, ith, nth);
        break;
      }
      mx_cpu_rope_copy_f32((const float *)vp[s->in[0]], (float *)vp[s->out[0]],
                           (const int32_t *)vp[s->in[1]], (const float *)vp[s->in[2]],
                           s->n_in > 3 ? (const float *)vp[s->in[3]] : NULL, s->rope.rows,
                           s->rope.heads, s->rope.head_dim, s->rope.rotary_dim, s->rope.style, ith,
                           nth);
      break;
    case ST_ROPE_TABLE:
      mx_cpu_rope_table_f32((const int32_t *)vp[s->in[0]], (const float *)vp[s->in[1]],
                            s->rope_table.rows, s->rope_table.half, s->rope_table.scale,
                            (float *)vp[s->out[0]], ith, nth);
      break;
    case ST_ATTENTION:
      mx_cpu_attention_blocks_f32(
          (const float *)vp[s->in[0]], (const float *)vp[s->in[1]], (const float *)vp[s->in[2]],
          (const int32_t *)vp[s->in[3]], s->attn.blocks ? (const int32_t *)vp[s->in[4]] : NULL,
          (float *)vp[s->out[0]], s->attn.b, s->attn.t, s->attn.hq, s->attn.hkv, s->attn.s,
          s->attn.d, s->attn.scale, s->attn.window, s->attn.softcap, p->scratch, ith, nth);
      break;
    case ST_ATTN_SPLIT:
      mx_cpu_attention_kv_split((const float *)vp[s->in[0]], vp[s->in[1]], vp[s->in[2]], s->attn.kv,
                                (const int32_t *)vp[s->in[3]], (float *)vp[s->out[0]], s->attn.b,
                                s->attn.hq, s->attn.hkv, s->attn.s, s->attn.d, s->attn.scale,
                                s->attn.window, s->attn.softcap, s->attn.parts, p->scratch,
                                &p->work[s - p->steps], ith, nth);
      break;
    case ST_ATTN_MERGE:
      mx_cpu_attention_kv_merge_sinks(
          (const float *)vp[s->in[0]], s->merge.sinks ? (const float *)vp[s->in[1]] : NULL,
          s->merge.hq, (float *)vp[s->out[0]], s->merge.rows, s->merge.d, s->merge.parts, ith, nth);
      break;
    case ST_QGEMM: {
      const float *x = (const float *)vp[s->in[0]];
      float *y = (float *)vp[s->out[0]];
      if (s->quant.m == 1)
        mx_cpu_qgemv_dyn(s->qw, x, y, &p->work[s - p->steps], ith, nth);
      else
        mx_cpu_qgemm(s->qw, x, s->qw->k, y, s->qw->n, s->quant.m, ith, nth);
      break;
    }
    case ST_QGATED_UP:
      mx_cpu_qgated_up_dyn(s->qw, s->qw2, (const float *)vp[s->in[0]], (float *)vp[s->out[1]],
                           (float *)vp[s->out[2]], (float *)vp[s->out[0]], s->quant.act,
                           &p->work[s - p->steps], ith, nth);
      break;
    case ST_QEMBED:
      mx_cpu_qembed(s->qsrc, (const int32_t *)vp[s->in[0]], s->quant.m, (float *)vp[s->out[0]], ith,
                    nth);
      break;
    case ST_DUS_INPLACE:
      dus_inplace(p, s, ith, nth);
      break;
    case ST_EW_BINARY:
      ew_binary((const float *)vp[s->in[0]], s->ew.rd[0], (const float *)vp[s->in[1]], s->ew.rd[1],
                vp[s->out[0]], s->ew.to, s->ew.n, s->ew.op, ith, nth);
      break;
    case ST_EW_UNARY:
      if (s->ew.op == MX_OP_LOGISTIC)
        mx_cpu_logistic_f32((const float *)vp[s->in[0]], (float *)vp[s->out[0]], s->ew.n, ith, nth);
      else
        mx_cpu_tanh_f32((const float *)vp[s->in[0]], (float *)vp[s->out[0]], s->ew.n, ith, nth);
      break;
    case ST_BATCH_DOT:
      batch_dot(&s->bdot, (const float *)vp[s->in[0]], (const float *)vp[s->in[1]],
                (float *)vp[s->out[0]], ith, nth);
      break;
    case ST_ROW_DOT:
      mx_cpu_row_dot_f32((const float *)vp[s->in[0]], (const float *)vp[s->in[1]],
                         (float *)vp[s->out[0]], s->ew.n, s->ew.row_k, ith, nth);
      break;
    case ST_TRANSPOSE:
      transpose4((const uint32_t *)vp[s->in[0]] + s->copy.first, (uint32_t *)vp[s->out[0]],
                 s->copy.rank, s->copy.dims, s->copy.stride, ith, nth);
      break;
    case ST_MOE_ROUTE:
    case ST_MOE_UP:
    case ST_MOE_DOWN:
    case ST_MOE_COMBINE:
      mx_cpu_moe_step_exec(p, s, ith, nth);
      break;
    case ST_MLA:
      mx_cpu_mla(&s->mla, (const float *)vp[s->in[0]], (const float *)vp[s->in[1]], vp[s->in[2]],
                 vp[s->in[3]], (const float *)vp[s->in[4]], (const int32_t *)vp[s->in[5]],
                 (float *)vp[s->out[0]], p->scratch, ith, nth);
      break;
    case ST_CONVERT:
    case ST_GEMM_LOWP:
    case ST_EMBED_ROWS:
    case ST_ATTENTION_KV:
    case ST_GATED_UP_LOWP:
      mx_cpu_lowp_step_exec(p, s, ith, nth);
      break;
    default:
      if (ith == 0) {
        mx_status_t st = run_serial(p, s);
        if (st) {
          p->run_status = st;
          p->run_failed = 1;
        }
      }
      break;
  }
}

typedef struct job {
  mx_cpu_plan_t *p;
  mx_cpu_pool_t *pool;
} job_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Profiled run: a barrier after every step, thread 0 times each one.
static void run_job_profiled(job_t *j, int ith, int nth) {
  mx_cpu_plan_t *p = j->p;
  for (int32_t i = 0; i < p->n_steps; i++) {
    mx_step_t *s = &p->steps[i];
    double t0 = ith == 0 ? now_s() : 0;
    if (s->parallel)
      mx_cpu_step_exec(p, s, ith, nth);
    else if (ith == 0)
      mx_cpu_step_exec(p, s, 0, 1);
    if (nth > 1) mx_cpu_pool_barrier(j->pool);
    if (ith == 0) p->prof_s[i] += now_s() - t0;
    if (p->run_failed) return;  // after the barrier: every thread sees the same value
  }
}

static void run_job(void *ctx, int ith, int nth) {
  job_t *j = ctx;
  mx_cpu_plan_t *p = j->p;
  if (p->prof_s) {
    run_job_profiled(j, ith, nth);
    return;
  }
  for (int32_t i = 0; i < p->n_steps; i++) {
    mx_step_t *s = &p->steps[i];
    if (nth > 1 && s->barrier_before) {
      mx_cpu_pool_barrier(j->pool);
      if (p->run_failed) return;  // every thread sees it after the barrier
    }
    if (s->parallel)
      mx_cpu_step_exec(p, s, ith, nth);
    else if (ith == 0)
      mx_cpu_step_exec(p, s, 0, 1);
    if (nth == 1 && p->run_failed) return;
  }
}

mx_status_t mx_cpu_plan_run(mx_cpu_plan_t *p, mx_cpu_pool_t *pool, const mx_tensor_t *args,
                            int32_t n_args, mx_tensor_t *results) {
  const mx_func_t *f = p->f;
  if (n_args != p->n_args || (n_args && !args) || (f->n_results && !results))
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_plan_run @%s: %d arguments, expected %d",
                        f->name, n_args, p->n_args);
  for (int32_t i = 0; i < n_args; i++) {
    const mx_type_t *t = &f->values[f->body->args[i]].type;
    if (p->weight_data[i] && args[i].data != p->weight_data[i])
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "mx_cpu_plan_run @%s: weight argument %d is not the compiled one",
                          f->name, i);
    if (t->kind == MX_TYPE_TENSOR && (args[i].nbytes < mx_type_nbytes(t) || !args[i].data) &&
        mx_type_nbytes(t))
      return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_plan_run @%s: argument %d has no storage",
                          f->name, i);
  }
  if (p->arena_bytes && !p->arena)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_plan_run @%s: no arena bound (external_arena)",
                        f->name);
  int nth = pool ? mx_cpu_pool_threads(pool) : 1;
  if (p->scratch_per_thread && nth > p->scratch_threads) {
    // Only when the pool outgrew the compile-time guess (once).
    float *s2 = aligned_alloc(
        64, ((p->scratch_per_thread * (size_t)nth * sizeof(float)) + 63) & ~(size_t)63);
    if (!s2) return mx_error_set(MX_ERR_NOMEM, "out of memory (attention scratch)");
    free(p->scratch);
    p->scratch = s2;
    p->scratch_threads = nth;
  }
  p->run_args = args;
  p->ran = false;
  p->run_failed = 0;
  p->run_status = MX_OK;
  if (p->whole) {
    mx_step_t *s = &p->steps[0];
    mx_status_t st = run_serial(p, s);
    if (st) return mx_error_prefix(st, "@%s", f->name);
    for (int32_t r = 0; r < f->n_results; r++) {
      size_t nb = mx_type_nbytes(&f->result_types[r]);
      if (nb) memcpy(results[r].data, s->heap_out[r].data, nb);
      mx_tensor_free(&s->heap_out[r]);
    }
    return MX_OK;
  }
  // Resolve slot pointers: roots first, then views.
  for (int32_t i = 0; i < p->n_slots; i++) {
    const mx_slot_t *s = &p->slots[i];
    switch (s->kind) {
      case SLOT_ARG:
        p->vp[i] = args[s->arg].data;
        break;
      case SLOT_ARENA:
        p->vp[i] = p->arena + s->off;
        break;
      case SLOT_CONST:
        p->vp[i] = s->cdata;
        break;
      default:
        p->vp[i] = NULL;
        break;
    }
  }
  for (int32_t i = 0; i < p->n_slots; i++)
    if (p->slots[i].kind == SLOT_VIEW) p->vp[i] = p->vp[p->slots[i].base] + p->slots[i].off;
  for (int32_t i = 0; i < p->n_steps; i++) mx_cpu_work_reset(&p->work[i]);
  p->run_pool = pool;
  job_t j = {p, pool};
  if (pool && nth > 1)
    mx_cpu_pool_run(pool, run_job, &j);
  else
    run_job(&j, 0, 1);
  if (p->prof_s) p->prof_runs++;
  if (p->run_failed) return mx_error_prefix(p->run_status, "@%s", f->name);
  p->ran = true;
  for (int32_t r = 0; r < f->n_results; r++) {
    const uint8_t *src = p->vp[p->result_slot[r]];
    size_t nb = mx_type_nbytes(&f->result_types[r]);
    if (results[r].data != src && nb) memcpy(results[r].data, src, nb);
  }
  return MX_OK;
}
