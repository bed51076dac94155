// Quantized-weight matchers of the plan compiler: mx.linear -> packed quantized GEMV / GEMM,
// mx.embedding -> dequantized rows, mx.gated_act -> the gated-MLP activation kernel
// (src/cpu/kernels_q.h; the composites are those of src/model/composite_quant.c).
#include <stdlib.h>
#include <string.h>

#include "cpu/compile_internal.h"
#include "mlxcel/composite.h"

bool mx_plan_quant_src(cctx_t *c, const mx_op_t *op, const int32_t *ops, int32_t n_ops,
                       mx_cpu_qsrc_t *q) {
  const mx_func_t *f = c->p->f;
  mx_comp_quant_t a;
  if (!mx_comp_quant_read(op, &a)) return false;
  int64_t bits = a.bits, group = a.group_size;
  if ((bits != 4 && bits != 8) || group < 1 || group > MX_Q_MAX_K) return false;
  memset(q, 0, sizeof *q);
  q->mode = (int)a.mode;  // mx_qmode_t and MX_CPU_Q_* share their values
  if (n_ops != (q->mode == MX_CPU_Q_AFFINE ? 3 : 2)) return false;
  int32_t wa[3];
  for (int32_t i = 0; i < n_ops; i++)
    if ((wa[i] = weight_arg(c, ops[i])) < 0) return false;
  const mx_type_t *wt = vtype(f, ops[0]), *st = vtype(f, ops[1]);
  if (wt->kind != MX_TYPE_TENSOR || wt->quant || wt->rank != 2 || st->kind != MX_TYPE_TENSOR ||
      st->quant || st->rank != 2 || st->dims[0] != wt->dims[0] || st->dims[1] <= 0)
    return false;
  if (n_ops == 3 && !mx_type_equal(st, vtype(f, ops[2]))) return false;
  q->bits = (int)bits;
  q->group = group;
  q->n = wt->dims[0];
  q->k = st->dims[1] * group;
  int64_t kw = q->mode == MX_CPU_Q_INT8 ? q->k : q->k * bits / 32;
  if (wt->dims[1] != kw || wt->elem != (q->mode == MX_CPU_Q_INT8 ? MX_ELEM_I8 : MX_ELEM_UI32))
    return false;
  q->w = c->p->weight_data[wa[0]];
  q->sdt = st->elem;
  q->scales = c->p->weight_data[wa[1]];
  q->biases = n_ops == 3 ? c->p->weight_data[wa[2]] : NULL;
  return mx_cpu_qsrc_ok(q);
}

bool mx_plan_match_quant(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_results != 1) return false;
  mx_composite_kind_t kind = mx_composite_kind(op);
  const mx_type_t *ot = vtype(f, op->results[0]);
  mx_step_t *s = NULL;
  if (kind == MX_COMPOSITE_KIND_GATED_ACT && op->n_operands == 2) {
    const mx_type_t *gt = vtype(f, op->operands[0]), *ut = vtype(f, op->operands[1]);
    mx_comp_gated_t ga;
    int a = mx_comp_gated_read(op, &ga) ? (int)ga.activation : -1;
    if (a < 0 || !is_f32(gt) || !is_f32(ut) || !is_f32(ot) || !mx_type_same_shape(gt, ut) ||
        !mx_type_same_shape(gt, ot))
      return false;
    if ((*st = mx_plan_simple_step(c, op, ST_GATED_ACT, MX_COMPOSITE_GATED_ACT, op->operands, 2,
                                   op->results[0], &s)))
      return true;
    s->ew = (step_ew_t){.n = mx_type_numel(ot), .op = a};
    return true;
  }
  mx_cpu_qsrc_t q;
  if (kind == MX_COMPOSITE_KIND_LINEAR && (op->n_operands == 3 || op->n_operands == 4)) {
    const mx_type_t *xt = vtype(f, op->operands[0]);
    if (!is_f32(xt) || !is_f32(ot) || xt->rank < 1 || ot->rank != xt->rank ||
        !mx_plan_quant_src(c, op, op->operands + 1, op->n_operands - 1, &q) ||
        xt->dims[xt->rank - 1] != q.k || ot->dims[ot->rank - 1] != q.n)
      return false;
    int64_t m = mx_type_numel(xt) / q.k;
    const mx_cpu_qpacked_t *pk = NULL;
    if (m <= 0 ||
        (*st = mx_cpu_qpacked_get(c->p->weights, c->o->pool, c->o->quant_kernel, &q, &pk)))
      return m > 0;
    if ((*st = mx_plan_simple_step(c, op, ST_QGEMM, m == 1 ? "mx.linear qgemv" : "mx.linear qgemm",
                                   op->operands, 1, op->results[0], &s)))
      return true;
    s->qw = pk;
    s->quant.m = m;
    return true;
  }
  if (kind == MX_COMPOSITE_KIND_EMBEDDING && (op->n_operands == 3 || op->n_operands == 4)) {
    const mx_type_t *it = vtype(f, op->operands[0]);
    if (!is_i32(it) || !is_f32(ot) || ot->rank != it->rank + 1 ||
        !mx_plan_quant_src(c, op, op->operands + 1, op->n_operands - 1, &q) ||
        ot->dims[ot->rank - 1] != q.k)
      return false;
    mx_cpu_qsrc_t *qs = malloc(sizeof *qs);
    if (!qs) {
      *st = mx_error_set(MX_ERR_NOMEM, "out of memory");
      return true;
    }
    *qs = q;
    if ((*st = mx_plan_simple_step(c, op, ST_QEMBED, MX_COMPOSITE_EMBEDDING, op->operands, 1,
                                   op->results[0], &s))) {
      free(qs);
      return true;
    }
    s->qsrc = qs;
    s->quant.m = mx_type_numel(it);
    return true;
  }
  return false;
}

// A quantized gated MLP's decode reaches the plan as three consecutive steps: the gate and up
// qgemvs of one row x and mx.gated_act of their results. One ST_QGATED_UP step does all three
// (kernels_q.h, mx_cpu_qgated_up_dyn): a step and a barrier fewer per layer, x prepared once,
// each chunk's activation while its gate and up rows are still in cache. Same results bit for
// bit; the gate and up values are still written (out[1], out[2]) for any other reader.
void mx_plan_fuse_qgated(mx_cpu_plan_t *p) {
  int32_t w = 0;
  for (int32_t k = 0; k < p->n_steps; k++) {
    mx_step_t *g = &p->steps[k];
    if (k + 2 < p->n_steps) {
      mx_step_t *u = &p->steps[k + 1], *a = &p->steps[k + 2];
      if (g->kind == ST_QGEMM && u->kind == ST_QGEMM && a->kind == ST_GATED_ACT &&
          g->quant.m == 1 && u->quant.m == 1 && g->n_in == 1 && u->n_in == 1 &&
          g->in[0] == u->in[0] && a->n_in == 2 && a->in[0] == g->out[0] && a->in[1] == u->out[0] &&
          g->out[0] != u->out[0] && a->out[0] != g->in[0] && mx_cpu_qgated_pair_ok(g->qw, u->qw) &&
          a->ew.n == g->qw->n) {
        mx_step_t f = *a;
        f.kind = ST_QGATED_UP;
        f.what = "mx.gated_act (gate+up qgemv, act)";
        f.n_in = 1;
        f.in[0] = g->in[0];
        f.n_out = 3;
        f.out[1] = g->out[0];
        f.out[2] = u->out[0];
        f.qw = g->qw;
        f.qw2 = u->qw;
        f.quant.m = 1;
        f.quant.act = (int)a->ew.op;
        p->steps[w++] = f;
        k += 2;
        continue;
      }
    }
    p->steps[w++] = *g;
  }
  p->n_steps = w;
}
