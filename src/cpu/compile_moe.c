// mx.moe on the plan (plan_internal.h's ST_MOE_* steps, executed by moe.c): f32, bf16 or f16
// experts whose weights are all arguments of one shape and type, or quantized experts (mx.linear's
// formats, each projection's w, scales[, biases] arguments), packed through the weights cache
// (each expert's gate, up and down once, as a dense MLP's), and a router argument read as
// stored, as are gpt-oss's router and expert biases (f32). Anything else (weights the graph
// computes) is not matched: the op then runs through its decomposition.
#include <stdlib.h>

#include "cpu/compile_internal.h"
#include "mlxcel/composite.h"

// Packs the 3E expert weights into mo (allocated by the caller); false when one is not a weight
// argument of the expected shape and type.
static bool pack_experts(cctx_t *c, const mx_op_t *op, mx_cpu_moe_t *mo, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  for (int64_t i = 0; i < 3 * mo->n_experts; i++) {
    int32_t v = op->operands[2 + i];
    const mx_type_t *t = vtype(f, v);
    int64_t n = i % 3 == 2 ? mo->h : mo->f, k = i % 3 == 2 ? mo->f : mo->h;
    const void *w = weight_bytes(c, v);
    if (!w || t->kind != MX_TYPE_TENSOR || t->quant || t->elem != mo->et || t->rank != 2 ||
        t->dims[0] != n || t->dims[1] != k)
      return false;
    if (mo->et == MX_ELEM_F32) {
      *st = mx_cpu_packed_get(c->p->weights, c->o->pool, (const float *)w, n, k, false, &mo->w[i]);
    } else {
      *st = mx_cpu_packed_lowp_get(c->p->weights, c->o->pool, mo->et, (const uint16_t *)w, n, k,
                                   false, &mo->wl[i]);
    }
    if (*st) return true;
  }
  return true;
}

// MXFP4 experts, read as stored: each projection's blocks u8 [n, k / 2] and scales u8 [n, k / 32]
// weight arguments; false when one is not.
static bool mxfp4_experts(cctx_t *c, const mx_op_t *op, mx_cpu_moe_t *mo) {
  const mx_func_t *f = c->p->f;
  for (int64_t i = 0; i < 3 * mo->n_experts; i++) {
    int64_t n = i % 3 == 2 ? mo->h : mo->f, k = i % 3 == 2 ? mo->f : mo->h;
    for (int p = 0; p < 2; p++) {
      int32_t v = op->operands[2 + 2 * i + p];
      const mx_type_t *t = vtype(f, v);
      const void *w = weight_bytes(c, v);
      if (!w || t->kind != MX_TYPE_TENSOR || t->quant || t->elem != MX_ELEM_UI8 || t->rank != 2 ||
          t->dims[0] != n || t->dims[1] != (p ? k / 32 : k / 2) || k % 32 != 0)
        return false;
      mo->fp4[2 * i + p] = w;
    }
  }
  return true;
}

// The quantized form of pack_experts: operands per projection `per` (2 or 3).
static bool pack_qexperts(cctx_t *c, const mx_op_t *op, mx_cpu_moe_t *mo, int32_t per,
                          mx_status_t *st) {
  for (int64_t i = 0; i < 3 * mo->n_experts; i++) {
    mx_cpu_qsrc_t q;
    int64_t n = i % 3 == 2 ? mo->h : mo->f, k = i % 3 == 2 ? mo->f : mo->h;
    if (!mx_plan_quant_src(c, op, op->operands + 2 + per * i, per, &q) || q.n != n || q.k != k)
      return false;
    *st = mx_cpu_qpacked_get(c->p->weights, c->o->pool, c->o->quant_kernel, &q, &mo->q[i]);
    if (*st) return true;
  }
  return true;
}

// The bytes of weight argument v when it is f32 [n], else NULL (read as stored).
static const float *f32_weight(cctx_t *c, int32_t v, int64_t n) {
  const mx_type_t *t = vtype(c->p->f, v);
  const float *w = weight_bytes(c, v);
  return w && is_f32(t) && t->rank == 1 && t->dims[0] == n ? w : NULL;
}

static mx_step_t *step(cctx_t *c, const mx_op_t *op, step_kind_t kind, const char *what,
                       mx_cpu_moe_t *mo, mx_status_t *st) {
  mx_step_t *s = NULL;
  if ((*st = mx_plan_add_step(c->p, &s))) return NULL;
  s->kind = kind;
  s->parallel = kind != ST_MOE_ROUTE;
  s->op = op;
  s->what = what;
  s->moe = mo;
  return s;
}

static mx_status_t temp(cctx_t *c, size_t bytes, int32_t *slot) {
  return mx_plan_add_temp(c->p, bytes ? bytes : 4, slot);
}

bool mx_plan_match_moe(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  mx_comp_moe_t ma;
  if (mx_composite_kind(op) != MX_COMPOSITE_KIND_MOE || op->n_results != 1 ||
      !mx_comp_moe_read(op, &ma))
    return false;
  // Operands per projection: 1 (float), 2 (int8 / int4: w, scales) or 3 (affine: and biases);
  // after the experts DeepSeek-V3's choice bias, gpt-oss's router bias and its experts' 3E biases.
  int32_t per = !ma.quantized ? 1 : ma.quant.mode == MX_QMODE_AFFINE ? 3 : 2;
  int32_t n_bias = (ma.choice_bias ? 1 : 0) + (ma.router_bias ? 1 : 0);
  int32_t per_expert = 3 * per + (ma.expert_bias ? 3 : 0);
  if (op->n_operands - n_bias < 2 + per_expert || (op->n_operands - n_bias - 2) % per_expert != 0)
    return false;
  const mx_type_t *xt = vtype(f, op->operands[0]), *rt = vtype(f, op->operands[1]),
                  *ot = vtype(f, op->results[0]), *gt = vtype(f, op->operands[2]);
  const void *router = weight_bytes(c, op->operands[1]);
  if (!is_f32(xt) || !is_f32(ot) || !mx_type_same_shape(xt, ot) || xt->rank < 1 || !router ||
      !(is_f32(rt) || is_lowp(rt)) || rt->rank != 2 || gt->kind != MX_TYPE_TENSOR ||
      gt->rank != 2 || (!ma.quantized && !(is_f32(gt) || is_lowp(gt))))
    return false;
  int64_t E = (op->n_operands - n_bias - 2) / per_expert, H = xt->dims[xt->rank - 1],
          F = gt->dims[0];
  int64_t K = ma.top_k, M = H ? mx_type_numel(xt) / H : 0;
  bool mxfp4 = ma.quantized && ma.quant.mode == MX_QMODE_MXFP4;
  if (H == 0 || F == 0 || M == 0 || K > E || (!ma.quantized && gt->dims[1] != H) ||
      (mxfp4 && gt->dims[1] != H / 2) || rt->dims[0] != E || rt->dims[1] != H)
    return false;
  int32_t at = 2 + 3 * per * (int32_t)E;  // the first operand after the experts
  const float *bias = NULL, *rbias = NULL;
  if (ma.choice_bias && !(bias = f32_weight(c, op->operands[at++], E))) return false;
  if (ma.router_bias && !(rbias = f32_weight(c, op->operands[at++], E))) return false;
  for (int64_t i = 0; ma.expert_bias && i < 3 * E; i++)
    if (!f32_weight(c, op->operands[at + i], i % 3 == 2 ? H : F)) return false;
  size_t ptrs = 18 * (size_t)E * sizeof(void *);
  mx_cpu_moe_t *mo = calloc(1, sizeof *mo + ptrs + (mxfp4 ? 512 * sizeof(float) : 0));
  if (!mo) {
    *st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    return true;
  }
  mo->n_experts = E;
  mo->k = K;
  mo->m = M;
  mo->h = H;
  mo->f = F;
  mo->act = (int)ma.activation;
  mo->norm_topk = ma.norm_topk;
  mo->sigmoid = ma.scoring == MX_MOE_SIGMOID;
  mo->bias = bias;
  mo->n_group = ma.n_group;
  mo->topk_group = ma.topk_group;
  mo->group_top2 = ma.group_rank == MX_MOE_GROUP_TOP2_SUM;
  mo->routed_scale = (float)ma.routed_scale;
  mo->router_bias = rbias;
  mo->swiglu_alpha = (float)ma.swiglu_alpha;
  mo->swiglu_limit = (float)ma.swiglu_limit;
  mo->rows_as_gemv = c->o->rows_as_gemv;
  mo->quant = ma.quantized;
  mo->et = ma.quantized ? MX_ELEM_F32 : gt->elem;
  mo->router = router;
  mo->router_et = rt->elem;
  mo->router_bytes = rt->elem == MX_ELEM_F32 ? 4 : 2;
  mo->w = (const mx_cpu_packed_t **)(mo + 1);
  mo->wl = (const mx_cpu_packed_lowp_t **)(mo->w + 3 * E);
  mo->q = (const mx_cpu_qpacked_t **)(mo->wl + 3 * E);
  mo->mxfp4 = mxfp4;
  mo->fp4 = (const uint8_t **)(mo->q + 3 * E);
  if (mxfp4) {  // after the pointer arrays (float-aligned)
    static const float kE2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                    -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
    mo->fp4_pair = (float(*)[2])((char *)(mo + 1) + ptrs);
    for (int b = 0; b < 256; b++) {
      mo->fp4_pair[b][0] = kE2m1[b & 15];
      mo->fp4_pair[b][1] = kE2m1[b >> 4];
    }
  }
  if (ma.expert_bias) {
    mo->ebias = (const float **)(mo->fp4 + 6 * E);
    for (int64_t i = 0; i < 3 * E; i++) mo->ebias[i] = weight_bytes(c, op->operands[at + i]);
  }
  bool lowp = mo->et != MX_ELEM_F32;
  bool packed = mxfp4       ? mxfp4_experts(c, op, mo)
                : mo->quant ? pack_qexperts(c, op, mo, per, st)
                            : pack_experts(c, op, mo, st);
  if (!packed || *st) {
    free(mo);
    return *st != MX_OK;
  }
  int64_t R = M * K;
  int32_t meta, xg, xgl = -1, act, gate, up, actl = -1, rows;
  mx_step_t *s;
  if ((*st = temp(c, mx_cpu_moe_meta_bytes(mo), &meta)) ||
      (*st = temp(c, (size_t)(R * H) * sizeof(float), &xg)) ||
      (lowp && (*st = temp(c, (size_t)(R * H) * sizeof(uint16_t), &xgl))) ||
      (*st = temp(c, (size_t)(R * F) * sizeof(float), &act)) ||
      (*st = temp(c, (size_t)(R * F) * sizeof(float), &gate)) ||
      (*st = temp(c, (size_t)(R * F) * sizeof(float), &up)) ||
      (lowp && (*st = temp(c, (size_t)(R * F) * sizeof(uint16_t), &actl))) ||
      (*st = temp(c, (size_t)(R * H) * sizeof(float), &rows))) {
    free(mo);
    return true;
  }
  // The route step owns mo from here (freed with the plan).
  if (!(s = step(c, op, ST_MOE_ROUTE, "mx.moe route (top-k, rows grouped by expert)", mo, st))) {
    free(mo);
    return true;
  }
  s->n_in = 1;
  s->in[0] = op->operands[0];
  s->n_out = lowp ? 3 : 2;
  s->out[0] = meta;
  s->out[1] = xg;
  s->out[2] = xgl;
  bool gemv = M == 1 || mo->rows_as_gemv;
  const char *what_up =
      gemv ? "mx.moe gate+up gemv, act (selected experts)" : "mx.moe gate+up gemm per expert, act";
  if (!(s = step(c, op, ST_MOE_UP, what_up, mo, st))) return true;
  s->n_in = lowp ? 3 : 2;
  s->in[0] = meta;
  s->in[1] = xg;
  s->in[2] = xgl;
  s->n_out = lowp ? 4 : 3;
  s->out[0] = act;
  s->out[1] = gate;
  s->out[2] = up;
  s->out[3] = actl;
  const char *what_down =
      gemv ? "mx.moe down gemv (selected experts)" : "mx.moe down gemm per expert";
  if (!(s = step(c, op, ST_MOE_DOWN, what_down, mo, st))) return true;
  s->n_in = lowp ? 3 : 2;
  s->in[0] = meta;
  s->in[1] = act;
  s->in[2] = actl;
  s->n_out = 1;
  s->out[0] = rows;
  if (!(s = step(c, op, ST_MOE_COMBINE, "mx.moe combine (weighted sum of k rows)", mo, st)))
    return true;
  s->n_in = 2;
  s->in[0] = meta;
  s->in[1] = rows;
  s->n_out = 1;
  s->out[0] = op->results[0];
  return true;
}
