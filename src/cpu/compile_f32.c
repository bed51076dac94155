// f32 matchers of the plan compiler: matmuls against weight arguments (dot_general -> packed
// GEMV / GEMM, a linear's W[n, k] or a matmul's W[k, n]), embedding gathers, the fused kernels of
// the composites (mx.rms_norm, joined with the residual add before it; mx.rope with one shared cos
// / sin table; mx.attention, split over the keys for decode; mx.gated_mlp) and elementwise add /
// subtract / multiply.
#include <string.h>

#include "cpu/compile_internal.h"
#include "cpu/fused_kv.h"
#include "mlxcel/composite.h"

mx_status_t mx_plan_emit_gemm(cctx_t *c, const mx_op_t *op, int32_t x, const void *w, bool kn,
                              int64_t m, int64_t n, int64_t k, int32_t out, const char *what) {
  mx_cpu_plan_t *p = c->p;
  const mx_cpu_packed_t *pk = NULL;
  mx_status_t st = mx_cpu_packed_get(p->weights, c->o->pool, (const float *)w, n, k, kn, &pk);
  if (st) return st;
  mx_step_t *s = NULL;
  if ((st = mx_plan_add_step(p, &s)) != MX_OK) return st;
  s->kind = ST_GEMM;
  s->parallel = true;
  s->op = op;
  s->what = what;
  s->n_in = 1;
  s->in[0] = x;
  s->n_out = 1;
  s->out[0] = out;
  s->w = pk;
  s->gemm.m = m;
  s->gemm.n = n;
  s->gemm.k = k;
  s->gemm.rows_as_gemv = c->o->rows_as_gemv;
  if (c->o->rows_as_gemv && m > 1) s->what = "gemv per row (rows_as_gemv)";
  return MX_OK;
}

// The count of an optional integer-list attribute (0 when absent), its values in *v.
static int32_t n_ints(const mx_attr_t *a, const int64_t **v) {
  *v = NULL;
  return a ? mx_attr_get_i64s(a, v) : 0;
}

// x[..., k] . v[k] -> [...]: the last dim of x contracted with a vector (any value), no
// batching dims. LayerNorm's mean is a dot_general with a vector of ones (mx_g_mean_last).
static bool match_row_dot(cctx_t *c, const mx_op_t *op, const mx_type_t *lt, const mx_type_t *rt,
                          const mx_type_t *ot, mx_status_t *st) {
  const mx_attr_t *dn = mx_op_attr(op, "dot_dimension_numbers");
  const int64_t *lc, *rc, *lb, *rb;
  if (!dn || lt->rank < 1 || rt->rank != 1 || ot->rank != lt->rank - 1 ||
      n_ints(mx_attr_field(dn, "lhs_contracting_dimensions"), &lc) != 1 ||
      n_ints(mx_attr_field(dn, "rhs_contracting_dimensions"), &rc) != 1 ||
      n_ints(mx_attr_field(dn, "lhs_batching_dimensions"), &lb) != 0 ||
      n_ints(mx_attr_field(dn, "rhs_batching_dimensions"), &rb) != 0 || lc[0] != lt->rank - 1 ||
      rc[0] != 0 || lt->dims[lt->rank - 1] != rt->dims[0])
    return false;
  mx_step_t *s = NULL;
  if ((*st = mx_plan_simple_step(c, op, ST_ROW_DOT, "dot_general->row dot", op->operands, 2,
                                 op->results[0], &s)))
    return true;
  s->ew = (step_ew_t){.n = mx_type_numel(ot), .row_k = rt->dims[0]};
  return true;
}

// Element strides of a row-major type.
static void row_strides(const mx_type_t *t, int64_t *s) {
  int64_t acc = 1;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    s[d] = acc;
    acc *= t->dims[d];
  }
}

static bool listed(const int64_t *v, int32_t n, int64_t d) {
  for (int32_t i = 0; i < n; i++)
    if (v[i] == d) return true;
  return false;
}

// A product of two f32 values (no weight packing) with one contracting dim and any batching
// dims, as the reference kernel defines the result's dims (batching, lhs free, rhs free): the
// activation x activation products of attention written out in the graph (Gemma 3n's audio
// tower's chunked attention), which otherwise run on the interpreter's kernel.
static bool match_batch_dot(cctx_t *c, const mx_op_t *op, const mx_type_t *lt, const mx_type_t *rt,
                            const mx_type_t *ot, mx_status_t *st) {
  const mx_attr_t *dn = mx_op_attr(op, "dot_dimension_numbers");
  const int64_t *lc, *rc, *lb, *rb;
  if (!dn) return false;
  int32_t nb = n_ints(mx_attr_field(dn, "lhs_batching_dimensions"), &lb);
  if (n_ints(mx_attr_field(dn, "rhs_batching_dimensions"), &rb) != nb ||
      n_ints(mx_attr_field(dn, "lhs_contracting_dimensions"), &lc) != 1 ||
      n_ints(mx_attr_field(dn, "rhs_contracting_dimensions"), &rc) != 1 ||
      ot->rank != lt->rank + rt->rank - nb - 2 || ot->rank > MX_MAX_RANK)
    return false;
  if (lc[0] < 0 || lc[0] >= lt->rank || rc[0] < 0 || rc[0] >= rt->rank ||
      lt->dims[lc[0]] != rt->dims[rc[0]] || lt->dims[lc[0]] == 0)
    return false;
  int64_t ls[MX_MAX_RANK], rs[MX_MAX_RANK];
  row_strides(lt, ls);
  row_strides(rt, rs);
  step_bdot_t bd = {.rank = ot->rank, .k = lt->dims[lc[0]], .lk = ls[lc[0]], .rk = rs[rc[0]]};
  int32_t o = 0;
  for (int32_t i = 0; i < nb; i++, o++) {
    if (lb[i] < 0 || lb[i] >= lt->rank || rb[i] < 0 || rb[i] >= rt->rank ||
        lt->dims[lb[i]] != rt->dims[rb[i]] || lb[i] == lc[0] || rb[i] == rc[0])
      return false;
    bd.dims[o] = lt->dims[lb[i]], bd.ls[o] = ls[lb[i]], bd.rs[o] = rs[rb[i]];
  }
  for (int32_t d = 0; d < lt->rank; d++)
    if (d != lc[0] && !listed(lb, nb, d)) bd.dims[o] = lt->dims[d], bd.ls[o++] = ls[d];
  for (int32_t d = 0; d < rt->rank; d++)
    if (d != rc[0] && !listed(rb, nb, d)) bd.dims[o] = rt->dims[d], bd.rs[o++] = rs[d];
  for (int32_t d = 0; d < ot->rank; d++)
    if (o != ot->rank || bd.dims[d] != ot->dims[d]) return false;
  mx_step_t *s = NULL;
  if ((*st = mx_plan_simple_step(c, op, ST_BATCH_DOT, "dot_general->batched dot", op->operands, 2,
                                 op->results[0], &s)))
    return true;
  s->bdot = bd;
  return true;
}

bool mx_plan_match_dot(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const mx_type_t *lt = vtype(f, op->operands[0]), *rt = vtype(f, op->operands[1]),
                  *ot = vtype(f, op->results[0]);
  if (is_f32(lt) && is_f32(rt) && is_f32(ot) && rt->rank == 1)
    return match_row_dot(c, op, lt, rt, ot, st);
  if (!is_f32(lt) || !is_f32(rt) || !is_f32(ot) || lt->rank < 1) return false;
  const void *w = rt->rank == 2 ? weight_bytes(c, op->operands[1]) : NULL;
  int64_t m, n, k;
  bool kn;
  if (!w && !weight_bytes(c, op->operands[0]) && !weight_bytes(c, op->operands[1]))
    return match_batch_dot(c, op, lt, rt, ot, st);
  if (!w || !mx_plan_dot_xwt(op, lt, rt, ot, &m, &n, &k, &kn)) return false;
  *st = mx_plan_emit_gemm(c, op, op->operands[0], w, kn, m, n, k, op->results[0],
                          m == 1 ? "dot_general->gemv" : "dot_general->gemm");
  return true;
}

bool mx_plan_match_embed(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const mx_type_t *tt = vtype(f, op->operands[0]), *it = vtype(f, op->operands[1]),
                  *ot = vtype(f, op->results[0]);
  if (!is_f32(tt) || tt->rank != 2 || !is_i32(it) || !is_f32(ot) ||
      !mx_plan_gather_is_rows(op, tt, it))
    return false;
  if (ot->rank != it->rank + 1 || ot->dims[ot->rank - 1] != tt->dims[1]) return false;
  mx_step_t *s = NULL;
  if ((*st = mx_plan_add_step(c->p, &s)) != MX_OK) return true;
  s->kind = ST_EMBED;
  s->parallel = true;
  s->op = op;
  s->what = "gather->embed";
  s->n_in = 2;
  s->in[0] = op->operands[0];
  s->in[1] = op->operands[1];
  s->n_out = 1;
  s->out[0] = op->results[0];
  s->rows.vocab = tt->dims[0];
  s->rows.h = tt->dims[1];
  s->rows.n = mx_type_numel(it);
  return true;
}

// The last step when it is an f32 add (ST_EW_BINARY) whose result is exactly x (the same
// value or a whole-value view of it): an RMSNorm of x can join it.
static mx_step_t *fusable_add(cctx_t *c, int32_t x) {
  mx_cpu_plan_t *p = c->p;
  if (p->n_steps == 0) return NULL;
  mx_step_t *s = &p->steps[p->n_steps - 1];
  if (s->kind != ST_EW_BINARY || s->ew.op != MX_OP_ADD || s->n_out != 1 || s->ew.rd[0].mod ||
      s->ew.rd[1].mod || s->ew.to != MX_ELEM_INVALID)  // the fused kernel reads both operands
    return NULL;                                       // whole and writes f32
  int32_t o = s->out[0];
  bool same = o == x || (p->slots[x].kind == SLOT_VIEW && p->slots[x].base == root(p, o) &&
                         p->slots[o].kind != SLOT_VIEW && p->slots[x].off == 0);
  if (!same || mx_type_numel(vtype(p->f, o)) != mx_type_numel(vtype(p->f, x))) return NULL;
  return s;
}

bool mx_plan_attention_shape(cctx_t *c, const mx_op_t *op, bool lowp_kv, step_attn_t *a) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands < 4 || op->n_operands > 6 || op->n_results != 1) return false;
  const mx_type_t *qt = vtype(f, op->operands[0]), *kt = vtype(f, op->operands[1]),
                  *vt = vtype(f, op->operands[2]), *pt = vtype(f, op->operands[3]),
                  *ot = vtype(f, op->results[0]);
  mx_comp_attention_t ca;
  if (!is_f32(qt) || qt->rank != 4 || !(lowp_kv ? is_lowp(kt) : is_f32(kt)) || kt->rank != 4 ||
      !mx_type_equal(kt, vt) || !is_i32(pt) || pt->rank != 1 || !is_f32(ot) ||
      !mx_type_same_shape(qt, ot) || !mx_comp_attention_read(op, &ca) ||
      op->n_operands != 4 + ca.sinks + ca.blocks)
    return false;
  // Block ids: [B, T] i32, the last operand.
  if (ca.blocks) {
    const mx_type_t *bt = vtype(f, op->operands[op->n_operands - 1]);
    if (!is_i32(bt) || bt->rank != 2 || bt->dims[0] != qt->dims[0] || bt->dims[1] != qt->dims[1])
      return false;
  }
  if (ca.sinks) {  // f32 [hq], read at run time
    const mx_type_t *st = vtype(f, op->operands[4]);
    if (!is_f32(st) || st->rank != 1 || st->dims[0] != qt->dims[2]) return false;
  }
  *a = (step_attn_t){.b = qt->dims[0],
                     .t = qt->dims[1],
                     .hq = qt->dims[2],
                     .hkv = kt->dims[1],
                     .s = kt->dims[2],
                     .d = qt->dims[3],
                     .window = ca.window,
                     .blocks = ca.blocks,
                     .kv = kt->elem,
                     .scale = (float)ca.scale,
                     .softcap = (float)ca.softcap,
                     .sinks = ca.sinks};
  return kt->dims[0] == a->b && kt->dims[3] == a->d && pt->dims[0] == a->b && a->hkv > 0 &&
         a->hq % a->hkv == 0;
}

// A decode mx.attention (T = 1) whose b * hkv groups share out unevenly between threads: the
// split-over-keys pair of steps (fused_kv.h). false when the shapes need no split (or the op has
// block ids, which only a prefill uses).
bool mx_plan_emit_attention_split(cctx_t *c, const mx_op_t *op, const step_attn_t *a,
                                  mx_status_t *st) {
  int64_t B = a->b, Hq = a->hq, D = a->d, S = a->s;
  int64_t parts = mx_cpu_attention_kv_parts(a->hkv);
  if (a->t != 1 || parts <= 1 || a->blocks) return false;
  int32_t part = -1;
  mx_step_t *s = NULL;
  size_t nbytes = mx_cpu_attention_kv_part_floats(B, Hq, D, parts) * sizeof(float);
  if ((*st = mx_plan_add_temp(c->p, nbytes, &part))) return true;
  if ((*st = mx_plan_simple_step(c, op, ST_ATTN_SPLIT, "mx.attention (decode, split over keys)",
                                 op->operands, 4, part, &s)))
    return true;
  s->attn = *a;
  s->attn.parts = parts;
  size_t need = mx_cpu_attention_kv_scratch_floats(D, S);
  if (need > c->p->scratch_per_thread) c->p->scratch_per_thread = need;
  int32_t merge_in[2] = {part, a->sinks ? op->operands[4] : -1};
  if ((*st = mx_plan_simple_step(c, op, ST_ATTN_MERGE, "mx.attention (merge of the key pieces)",
                                 merge_in, a->sinks ? 2 : 1, op->results[0], &s)))
    return true;
  s->merge = (step_merge_t){B * Hq, D, parts, Hq, a->sinks};
  return true;
}

// mx.attention through fused_kv.h's driver (caches of any float type, sinks and block ids when
// the op has them): the step every attention over bf16 / f16 caches takes, and the f32 ones with
// sinks.
bool mx_plan_emit_attention_kv(cctx_t *c, const mx_op_t *op, const step_attn_t *a,
                               mx_status_t *st) {
  mx_step_t *s = NULL;
  const char *what = a->kv == MX_ELEM_F32 ? "mx.attention (sinks)" : "mx.attention (bf16/f16 KV)";
  if ((*st = mx_plan_simple_step(c, op, ST_ATTENTION_KV, what, op->operands, op->n_operands,
                                 op->results[0], &s)))
    return true;
  s->attn = *a;
  size_t need = mx_cpu_attention_kv_scratch_floats(a->d, a->s);
  if (need > c->p->scratch_per_thread) c->p->scratch_per_thread = need;
  return true;
}

bool mx_plan_match_composite(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_results != 1) return false;
  mx_composite_kind_t kind = mx_composite_kind(op);
  const mx_type_t *ot = vtype(f, op->results[0]);
  int32_t out = op->results[0];
  mx_step_t *s = NULL;
  if (kind == MX_COMPOSITE_KIND_RMS_NORM && op->n_operands == 2) {
    const mx_type_t *xt = vtype(f, op->operands[0]), *wt = vtype(f, op->operands[1]);
    mx_comp_rms_norm_t a;
    if (!is_f32(xt) || !is_f32(wt) || !is_f32(ot) || wt->rank != 1 || xt->rank < 1 ||
        xt->dims[xt->rank - 1] != wt->dims[0] || !mx_type_same_shape(xt, ot) ||
        !mx_comp_rms_norm_read(op, &a) || wt->dims[0] == 0)
      return false;
    mx_step_t *prev = fusable_add(c, op->operands[0]);
    if (prev) {  // the residual add just before: one pass writes the sum and the norm
      prev->kind = ST_ADD_RMS_NORM;
      prev->what = "residual add + mx.rms_norm";
      prev->op = op;
      prev->in[prev->n_in++] = op->operands[1];
      prev->out[prev->n_out++] = out;
      s = prev;
    } else if ((*st = mx_plan_simple_step(c, op, ST_RMS_NORM, MX_COMPOSITE_RMS_NORM, op->operands,
                                          2, out, &s))) {
      return true;
    }
    s->norm = (step_norm_t){mx_type_numel(xt) / wt->dims[0], wt->dims[0], (float)a.eps,
                            (float)a.weight_offset};
    return true;
  }
  if (kind == MX_COMPOSITE_KIND_ROPE && op->n_operands == 3) {
    const mx_type_t *xt = vtype(f, op->operands[0]), *pt = vtype(f, op->operands[1]),
                    *it = vtype(f, op->operands[2]);
    mx_comp_rope_t a;
    if (!mx_comp_rope_read(op, &a)) return false;
    int64_t rd = a.rotary_dim;
    if (!is_f32(xt) || xt->rank != 4 || !is_i32(pt) || pt->rank != 2 || !is_f32(it) ||
        it->rank != 1 || !mx_type_same_shape(xt, ot) || !is_f32(ot) || pt->dims[0] != xt->dims[0] ||
        pt->dims[1] != xt->dims[1] || rd > xt->dims[3] || rd < 0 || rd % 2 || it->dims[0] != rd / 2)
      return false;
    // One cos / sin table per (positions, frequencies) pair serves every RoPE of the graph.
    int64_t bt = xt->dims[0] * xt->dims[1];
    int32_t table = -1;
    for (int32_t i = 0; i < c->n_rope_tables && table < 0; i++)
      if (c->rope_tables[i][0] == op->operands[1] && c->rope_tables[i][1] == op->operands[2] &&
          c->rope_table_scale[i] == a.scale)
        table = c->rope_tables[i][2];
    if (table < 0 && c->n_rope_tables < MAX_ROPE_TABLES) {
      if ((*st = mx_plan_add_temp(c->p, (size_t)(bt * rd) * sizeof(float), &table))) return true;
      if ((*st = mx_plan_simple_step(c, op, ST_ROPE_TABLE, "mx.rope cos/sin table",
                                     op->operands + 1, 2, table, &s)))
        return true;
      s->rope_table = (step_rope_table_t){bt, rd / 2, (float)a.scale};
      c->rope_table_scale[c->n_rope_tables] = a.scale;
      int32_t *e = c->rope_tables[c->n_rope_tables++];
      e[0] = op->operands[1];
      e[1] = op->operands[2];
      e[2] = table;
    }
    // The scale lives only in the table: without one, the decomposition runs.
    if (table < 0 && a.scale != 1.0) return false;
    // Out of place: each thread copies and rotates its own rows (no barrier in between).
    int32_t in[4] = {op->operands[0], op->operands[1], op->operands[2], table};
    if ((*st = mx_plan_simple_step(c, op, ST_ROPE, MX_COMPOSITE_ROPE, in, table >= 0 ? 4 : 3, out,
                                   &s)))
      return true;
    s->rope = (step_rope_t){bt, xt->dims[2], xt->dims[3], rd, a.style, NULL, 0};
    return true;
  }
  if (kind == MX_COMPOSITE_KIND_ATTENTION) {
    step_attn_t a;
    if (!mx_plan_attention_shape(c, op, false, &a)) return false;
    if (mx_plan_emit_attention_split(c, op, &a, st)) return true;
    if (a.sinks) return mx_plan_emit_attention_kv(c, op, &a, st);
    if ((*st = mx_plan_simple_step(c, op, ST_ATTENTION, MX_COMPOSITE_ATTENTION, op->operands,
                                   a.blocks ? 5 : 4, out, &s)))
      return true;
    s->attn = a;
    size_t need = mx_cpu_attention_scratch_floats(a.d, a.s);
    if (need > c->p->scratch_per_thread) c->p->scratch_per_thread = need;
    return true;
  }
  if (kind == MX_COMPOSITE_KIND_GATED_MLP && op->n_operands == 4) {
    const mx_type_t *xt = vtype(f, op->operands[0]), *gt = vtype(f, op->operands[1]),
                    *ut = vtype(f, op->operands[2]), *dt = vtype(f, op->operands[3]);
    mx_comp_gated_t ga;
    int a = mx_comp_gated_read(op, &ga) ? (int)ga.activation : -1;
    const void *wg = weight_bytes(c, op->operands[1]), *wu = weight_bytes(c, op->operands[2]),
               *wd = weight_bytes(c, op->operands[3]);
    if (a < 0 || !wg || !wu || !wd || !is_f32(xt) || !is_f32(gt) || !is_f32(ut) || !is_f32(dt) ||
        !is_f32(ot) || gt->rank != 2 || !mx_type_equal(gt, ut) || dt->rank != 2 || xt->rank < 1 ||
        !mx_type_same_shape(xt, ot))
      return false;
    int64_t H = xt->dims[xt->rank - 1], F = gt->dims[0];
    if (gt->dims[1] != H || dt->dims[0] != H || dt->dims[1] != F || H == 0 || F == 0) return false;
    int64_t M = mx_type_numel(xt) / H;
    if (M == 0) return false;
    size_t tb = (size_t)(M * F) * sizeof(float);
    int32_t tg, tu, ta;
    if ((*st = mx_plan_add_temp(c->p, tb, &tg)) || (*st = mx_plan_add_temp(c->p, tb, &tu)) ||
        (*st = mx_plan_add_temp(c->p, tb, &ta)))
      return true;
    // Gate and up matmuls and the activation in one step: every thread applies the activation
    // to the part of gate / up it computed itself (mx_cpu_matmul_region), so no barrier is
    // needed before it.
    const char *w1 = M == 1 ? "mx.gated_mlp gate+up gemv, act" : "mx.gated_mlp gate+up gemm, act";
    if ((*st = mx_plan_emit_gemm(c, op, op->operands[0], wg, false, M, F, H, ta, w1))) return true;
    s = &c->p->steps[c->p->n_steps - 1];
    const mx_cpu_packed_t *pu = NULL;
    *st = mx_cpu_packed_get(c->p->weights, c->o->pool, (const float *)wu, F, H, false, &pu);
    if (*st) return true;
    s->kind = ST_GATED_UP;
    s->w2 = pu;
    s->gemm.act = a;
    s->out[s->n_out++] = tg;
    s->out[s->n_out++] = tu;
    *st = mx_plan_emit_gemm(c, op, ta, wd, false, M, H, F, out, "mx.gated_mlp down");
    return true;
  }
  return false;
}

// tanh or logistic of f32 (GELU's tanh approximation is built from elementwise ops and one tanh;
// the vision towers' SiLU and quick_gelu from a logistic and multiplies).
static bool match_unary(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 1 || op->n_results != 1) return false;
  const mx_type_t *a = vtype(f, op->operands[0]), *o = vtype(f, op->results[0]);
  if (!is_f32(a) || !is_f32(o) || !mx_type_same_shape(a, o)) return false;
  mx_step_t *s = NULL;
  if ((*st = mx_plan_simple_step(c, op, ST_EW_UNARY, mx_opcode_name(op->code), op->operands, 1,
                                 op->results[0], &s)))
    return true;
  s->ew = (step_ew_t){.n = mx_type_numel(o), .op = op->code};
  return true;
}

bool mx_plan_match_ew(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->code == MX_OP_TANH || op->code == MX_OP_LOGISTIC) return match_unary(c, op, st);
  if (op->code != MX_OP_ADD && op->code != MX_OP_SUBTRACT && op->code != MX_OP_MULTIPLY &&
      op->code != MX_OP_DIVIDE)
    return false;
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const mx_type_t *a = vtype(f, op->operands[0]), *b = vtype(f, op->operands[1]),
                  *o = vtype(f, op->results[0]);
  if (!is_f32(a) || !is_f32(b) || !is_f32(o) || !mx_type_same_shape(a, o) ||
      !mx_type_same_shape(b, o))
    return false;
  // An operand that is a broadcast not materialized is read in place (compile_layout.c).
  int32_t in[2];
  ew_read_t rd[2] = {{0, 0}, {0, 0}};
  for (int j = 0; j < 2; j++) {
    const lazy_bcast_t *lb = &c->bcast[op->operands[j]];
    in[j] = lb->src >= 0 ? lb->src : op->operands[j];
    if (lb->src >= 0) rd[j] = lb->rd;
  }
  mx_step_t *s = NULL;
  if ((*st = mx_plan_simple_step(c, op, ST_EW_BINARY, mx_opcode_name(op->code), in, 2,
                                 op->results[0], &s)))
    return true;
  s->ew = (step_ew_t){.n = mx_type_numel(o), .op = op->code, .rd = {rd[0], rd[1]}};
  return true;
}
