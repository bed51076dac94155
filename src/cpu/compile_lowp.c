// Low-precision (bf16 / f16) matchers of the plan compiler: converts between f32 and bf16 / f16;
// the linear layers whose weight is resident in bf16 / f16 (dot_general(bf16, bf16) -> f32 on a
// converted activation, also inside mx.gated_mlp), with the bias add after them; rows of a bf16 /
// f16 embedding table; attention over bf16 / f16 caches. Kernels: mlxcel/cpu_lowp.h and fused_kv.h;
// executor: plan_lowp.c. Every step computes what its op computes (the activation is rounded by its
// own convert step, as the graph says).
#include "cpu/compile_internal.h"
#include "cpu/fused_kv.h"
#include "mlxcel/composite.h"

static mx_status_t emit_convert(cctx_t *c, const mx_op_t *op, int32_t in, mx_elem_type_t from,
                                int32_t out, mx_elem_type_t to, int64_t n) {
  mx_step_t *s = NULL;
  mx_status_t st =
      mx_plan_simple_step(c, op, ST_CONVERT, "convert (f32 <-> bf16/f16)", &in, 1, out, &s);
  if (st) return st;
  s->convert = (step_convert_t){n, from, to};
  return MX_OK;
}

// kn: w holds W^T, [k, n] (mx_plan_dot_xwt).
static mx_status_t emit_gemm_lowp(cctx_t *c, const mx_op_t *op, int32_t x, const void *w, bool kn,
                                  mx_elem_type_t et, int64_t m, int64_t n, int64_t k, int32_t out,
                                  const char *what) {
  mx_cpu_plan_t *p = c->p;
  const mx_cpu_packed_lowp_t *pk = NULL;
  mx_status_t st =
      mx_cpu_packed_lowp_get(p->weights, c->o->pool, et, (const uint16_t *)w, n, k, kn, &pk);
  if (st) return st;
  mx_step_t *s = NULL;
  if ((st = mx_plan_simple_step(c, op, ST_GEMM_LOWP, what, &x, 1, out, &s))) return st;
  s->wl = pk;
  s->gemm.m = m;
  s->gemm.n = n;
  s->gemm.k = k;
  return MX_OK;
}

// The ST_EW_BINARY step that computed x when every reader of x is a convert to type o (the
// graphs convert an activation once per linear that reads it), else NULL.
static mx_step_t *ew_for_convert(cctx_t *c, int32_t x, const mx_type_t *o) {
  mx_cpu_plan_t *p = c->p;
  const mx_block_t *b = p->f->body;
  if (p->slots[x].kind != SLOT_ARENA) return NULL;
  int32_t seen = 0;
  for (int32_t i = 0; i < b->n_ops && seen < c->n_uses[x]; i++) {
    const mx_op_t *u = b->ops[i];
    for (int32_t j = 0; j < u->n_operands; j++) {
      if (u->operands[j] != x) continue;
      if (u->code != MX_OP_CONVERT || u->n_results != 1 ||
          !mx_type_equal(vtype(p->f, u->results[0]), o))
        return NULL;
      seen++;
    }
  }
  if (seen != c->n_uses[x]) return NULL;
  for (int32_t k = p->n_steps - 1; k >= 0; k--) {
    mx_step_t *s = &p->steps[k];
    for (int32_t j = 0; j < s->n_out; j++) {
      if (s->out[j] != x) continue;
      return s->kind == ST_EW_BINARY && s->n_out == 1 && s->ew.to == MX_ELEM_INVALID ? s : NULL;
    }
  }
  return NULL;
}

static bool match_lowp_convert(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 1 || op->n_results != 1) return false;
  const mx_type_t *a = vtype(f, op->operands[0]), *o = vtype(f, op->results[0]);
  if (!((is_f32(a) && is_lowp(o)) || (is_lowp(a) && is_f32(o))) || !mx_type_same_shape(a, o))
    return false;
  int32_t x = op->operands[0], done = c->conv_of[x];
  if (done >= 0) {  // converted by its elementwise step: another reader of the same result
    mx_plan_make_view(c->p, op->results[0], done, 0);
    c->p->n_view_ops++;
    return true;
  }
  // A value only converts read (a LayerNorm's biased output, GELU's product) is written by its
  // elementwise step converted, block by block: its f32 form never goes to memory.
  mx_step_t *ew = is_lowp(o) ? ew_for_convert(c, x, o) : NULL;
  if (ew) {
    ew->out[0] = op->results[0];
    ew->ew.to = o->elem;
    ew->what = "elementwise + convert (f32 -> bf16/f16)";
    c->p->slots[x].kind = SLOT_NONE;
    c->conv_of[x] = op->results[0];
    return true;
  }
  // The graphs convert one activation once per projection that reads it (q, k and v each convert
  // the normed row): values are immutable, so a repeat of a recent convert is a view of its
  // result, a step and a barrier fewer (the readers then share one barrier).
  int32_t n = c->n_converts < MAX_CONVERTS ? c->n_converts : MAX_CONVERTS;
  for (int32_t i = 0; i < n; i++) {
    const int32_t *cv = c->converts[i];
    if (cv[0] == op->operands[0] && mx_type_equal(vtype(f, cv[1]), o)) {
      mx_plan_make_view(c->p, op->results[0], cv[1], 0);
      c->p->n_view_ops++;
      return true;
    }
  }
  *st = emit_convert(c, op, op->operands[0], a->elem, op->results[0], o->elem, mx_type_numel(o));
  if (!*st) {
    int32_t *slot = c->converts[c->n_converts++ % MAX_CONVERTS];
    slot[0] = op->operands[0];
    slot[1] = op->results[0];
  }
  return true;
}

// y = dot_general(x, W) contracting x's last dim with W[n, k]'s dim 1 (or W[k, n]'s dim 0), x
// and W both bf16 or both f16 (x: the converted activation), W a weight argument, y f32.
static bool match_lowp_dot(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const mx_type_t *lt = vtype(f, op->operands[0]), *rt = vtype(f, op->operands[1]),
                  *ot = vtype(f, op->results[0]);
  if (!is_lowp(lt) || !is_lowp(rt) || lt->elem != rt->elem || !is_f32(ot) || rt->rank != 2 ||
      lt->rank < 1)
    return false;
  const void *w = weight_bytes(c, op->operands[1]);
  int64_t m, n, k;
  bool kn;
  if (!w || !mx_plan_dot_xwt(op, lt, rt, ot, &m, &n, &k, &kn)) return false;
  *st = emit_gemm_lowp(c, op, op->operands[0], w, kn, rt->elem, m, n, k, op->results[0],
                       m == 1 ? "dot_general->gemv (bf16/f16)" : "dot_general->gemm (bf16/f16)");
  return true;
}

// add(y, broadcast(b)) (either order) where y is a bf16 / f16 GEMM's result read by nothing else
// and b a weight or constant of y's last dimension, broadcast over y's rows and not materialized
// (compile_layout.c): the GEMM step adds b to each output once its sum is complete and writes the
// add's result (ST_GEMM_LOWP with in[1]): the same f32 sum, then the same f32 add, without the
// add's pass over y.
static bool match_lowp_bias(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  mx_cpu_plan_t *p = c->p;
  (void)st;
  if (op->n_operands != 2 || op->n_results != 1 || !is_f32(vtype(p->f, op->results[0])))
    return false;
  for (int j = 0; j < 2; j++) {
    int32_t y = op->operands[j];
    const lazy_bcast_t *lb = &c->bcast[op->operands[1 - j]];
    if (lb->src < 0 || c->n_uses[y] != 1 || lb->rd.div != 1 || p->slots[y].kind != SLOT_ARENA ||
        !mx_type_same_shape(vtype(p->f, y), vtype(p->f, op->results[0])))
      continue;
    slot_kind_t bk = p->slots[root(p, lb->src)].kind;
    if (bk != SLOT_ARG && bk != SLOT_CONST) continue;  // defined before the GEMM runs
    for (int32_t k = p->n_steps - 1; k >= 0; k--) {
      mx_step_t *s = &p->steps[k];
      bool writes = false;
      for (int32_t o = 0; o < s->n_out; o++) writes |= s->out[o] == y;
      if (!writes) continue;
      if (s->kind != ST_GEMM_LOWP || s->n_in != 1 || s->gemm.n != lb->rd.mod) return false;
      s->in[s->n_in++] = lb->src;
      s->out[0] = op->results[0];
      s->what = s->gemm.m == 1 ? "dot_general->gemv + bias (bf16/f16)"
                               : "dot_general->gemm + bias (bf16/f16)";
      p->slots[y].kind = SLOT_NONE;
      return true;
    }
    return false;
  }
  return false;
}

// Gather of whole rows of a bf16 / f16 table (the embedding of a tied, low-precision head).
static bool match_lowp_embed(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const mx_type_t *tt = vtype(f, op->operands[0]), *it = vtype(f, op->operands[1]),
                  *ot = vtype(f, op->results[0]);
  if (!is_lowp(tt) || tt->rank != 2 || !is_i32(it) || ot->elem != tt->elem || ot->quant ||
      !mx_plan_gather_is_rows(op, tt, it))
    return false;
  if (ot->rank != it->rank + 1 || ot->dims[ot->rank - 1] != tt->dims[1] || tt->dims[0] <= 0)
    return false;
  mx_step_t *s = NULL;
  if ((*st = mx_plan_simple_step(c, op, ST_EMBED_ROWS, "gather->embed (bf16/f16 rows)",
                                 op->operands, 2, op->results[0], &s)))
    return true;
  s->rows =
      (step_rows_t){tt->dims[0], tt->dims[1], mx_type_numel(it), (int64_t)mx_elem_size(tt->elem)};
  return true;
}

// mx.gated_mlp with bf16 / f16 weights: its decomposition converts x (and the activation) to the
// weights' type before each linear; so do these steps.
static bool match_lowp_mlp(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  const mx_type_t *xt = vtype(f, op->operands[0]), *gt = vtype(f, op->operands[1]),
                  *ut = vtype(f, op->operands[2]), *dt = vtype(f, op->operands[3]),
                  *ot = vtype(f, op->results[0]);
  mx_comp_gated_t ga;
  int a = mx_comp_gated_read(op, &ga) ? (int)ga.activation : -1;
  const void *wg = weight_bytes(c, op->operands[1]), *wu = weight_bytes(c, op->operands[2]),
             *wd = weight_bytes(c, op->operands[3]);
  if (a < 0 || !wg || !wu || !wd || !is_f32(xt) || !is_lowp(gt) || !mx_type_equal(gt, ut) ||
      dt->elem != gt->elem || dt->quant || !is_f32(ot) || gt->rank != 2 || dt->rank != 2 ||
      xt->rank < 1 || !mx_type_same_shape(xt, ot))
    return false;
  mx_elem_type_t et = gt->elem;
  int64_t H = xt->dims[xt->rank - 1], F = gt->dims[0];
  if (gt->dims[1] != H || dt->dims[0] != H || dt->dims[1] != F || H == 0 || F == 0) return false;
  int64_t M = mx_type_numel(xt) / H;
  if (M == 0) return false;
  size_t tb = (size_t)(M * F) * sizeof(float);
  int32_t xc, tg, tu, ta, tac;
  if ((*st = mx_plan_add_temp(c->p, (size_t)(M * H) * 2, &xc)) ||
      (*st = mx_plan_add_temp(c->p, tb, &tg)) || (*st = mx_plan_add_temp(c->p, tb, &tu)) ||
      (*st = mx_plan_add_temp(c->p, tb, &ta)) ||
      (*st = mx_plan_add_temp(c->p, (size_t)(M * F) * 2, &tac)))
    return true;
  mx_step_t *s = NULL;
  if ((*st = emit_convert(c, op, op->operands[0], MX_ELEM_F32, xc, et, M * H))) return true;
  if (M == 1) {
    // Decode: gate, up, the activation and its convert in one step (plan_lowp.c), two barriers
    // and three steps fewer per layer.
    const mx_cpu_packed_lowp_t *pg = NULL, *pu = NULL;
    if ((*st = mx_cpu_packed_lowp_get(c->p->weights, c->o->pool, et, (const uint16_t *)wg, F, H,
                                      false, &pg)) ||
        (*st = mx_cpu_packed_lowp_get(c->p->weights, c->o->pool, et, (const uint16_t *)wu, F, H,
                                      false, &pu)))
      return true;
    if ((*st = mx_plan_simple_step(c, op, ST_GATED_UP_LOWP,
                                   "mx.gated_mlp gate+up gemv, act, convert (bf16/f16)", &xc, 1,
                                   tac, &s)))
      return true;
    s->wl = pg;
    s->wl2 = pu;
    s->n_out = 4;
    s->out[1] = tg;
    s->out[2] = tu;
    s->out[3] = ta;
    s->gemm.m = 1;
    s->gemm.n = F;
    s->gemm.k = H;
    s->gemm.act = a;
    *st = emit_gemm_lowp(c, op, tac, wd, false, et, M, H, F, op->results[0],
                         "mx.gated_mlp down (bf16/f16)");
    return true;
  }
  const char *w1 =
      M == 1 ? "mx.gated_mlp gate gemv (bf16/f16)" : "mx.gated_mlp gate gemm (bf16/f16)";
  if ((*st = emit_gemm_lowp(c, op, xc, wg, false, et, M, F, H, tg, w1))) return true;
  if ((*st = emit_gemm_lowp(c, op, xc, wu, false, et, M, F, H, tu, "mx.gated_mlp up (bf16/f16)")))
    return true;
  int32_t in[2] = {tg, tu};
  if ((*st = mx_plan_simple_step(c, op, ST_GATED_ACT, "mx.gated_mlp act", in, 2, ta, &s)))
    return true;
  s->ew = (step_ew_t){.n = M * F, .op = a};
  if ((*st = emit_convert(c, op, ta, MX_ELEM_F32, tac, et, M * F))) return true;
  *st = emit_gemm_lowp(c, op, tac, wd, false, et, M, H, F, op->results[0],
                       "mx.gated_mlp down (bf16/f16)");
  return true;
}

// mx.attention over bf16 / f16 caches (the decomposition converts them to f32 exactly; the
// kernel converts as it reads).
static bool match_lowp_attention(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  step_attn_t a;
  if (!mx_plan_attention_shape(c, op, true, &a)) return false;
  if (mx_plan_emit_attention_split(c, op, &a, st)) return true;
  return mx_plan_emit_attention_kv(c, op, &a, st);
}

// The hook: true when op became low-precision steps (*st set on error).
bool mx_plan_match_lowp(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  switch (op->code) {
    case MX_OP_CONVERT:
      return match_lowp_convert(c, op, st);
    case MX_OP_DOT_GENERAL:
      return match_lowp_dot(c, op, st);
    case MX_OP_ADD:
      return match_lowp_bias(c, op, st);
    case MX_OP_GATHER:
      return match_lowp_embed(c, op, st);
    case MX_OP_COMPOSITE: {
      mx_composite_kind_t kind = mx_composite_kind(op);
      if (op->n_results != 1) return false;
      if (kind == MX_COMPOSITE_KIND_GATED_MLP && op->n_operands == 4)
        return match_lowp_mlp(c, op, st);
      if (kind == MX_COMPOSITE_KIND_ATTENTION) return match_lowp_attention(c, op, st);
      return false;
    }
    default:
      return false;
  }
}
