// mx.mla on the plan: one ST_MLA step (mla.h's kernel) when q_nope, q_rot and the result are f32,
// the two caches share one f32 / bf16 / f16 type, kv_b is f32 and every shape is the contract's
// (composite.h). Anything else runs the decomposition.
#include "cpu/compile_internal.h"
#include "mlxcel/composite.h"

static bool is_kv(const mx_type_t *t) { return is_f32(t) || is_lowp(t); }

bool mx_plan_match_mla(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  mx_comp_mla_t ma;
  if (mx_composite_kind(op) != MX_COMPOSITE_KIND_MLA || op->n_operands != 6 || op->n_results != 1 ||
      !mx_comp_mla_read(op, &ma))
    return false;
  const mx_type_t *qn = vtype(f, op->operands[0]), *qr = vtype(f, op->operands[1]);
  const mx_type_t *lt = vtype(f, op->operands[2]), *rt = vtype(f, op->operands[3]);
  const mx_type_t *wt = vtype(f, op->operands[4]), *pt = vtype(f, op->operands[5]);
  const mx_type_t *ot = vtype(f, op->results[0]);
  if (!is_f32(qn) || !is_f32(qr) || !is_kv(lt) || !is_kv(rt) || lt->elem != rt->elem ||
      !is_f32(wt) || !is_i32(pt) || !is_f32(ot) || qn->rank != 4 || qr->rank != 4 ||
      lt->rank != 4 || rt->rank != 4 || wt->rank != 2 || pt->rank != 1 || ot->rank != 4)
    return false;
  mx_cpu_mla_shape_t sh = {
      .b = qn->dims[0],
      .t = qn->dims[1],
      .h = qn->dims[2],
      .dn = qn->dims[3],
      .dr = qr->dims[3],
      .s = lt->dims[2],
      .r = lt->dims[3],
      .kv = lt->elem,
      .scale = (float)ma.scale,
  };
  if (sh.h <= 0 || wt->dims[0] % sh.h != 0) return false;
  sh.dv = wt->dims[0] / sh.h - sh.dn;
  const int64_t q_rot[4] = {sh.b, sh.t, sh.h, sh.dr}, lat[4] = {sh.b, 1, sh.s, sh.r};
  const int64_t rot[4] = {sh.b, 1, sh.s, sh.dr}, res[4] = {sh.b, sh.t, sh.h, sh.dv};
  for (int32_t i = 0; i < 4; i++)
    if (qr->dims[i] != q_rot[i] || lt->dims[i] != lat[i] || rt->dims[i] != rot[i] ||
        ot->dims[i] != res[i])
      return false;
  if (sh.dv <= 0 || wt->dims[1] != sh.r || pt->dims[0] != sh.b) return false;
  mx_step_t *s = NULL;
  if ((*st = mx_plan_simple_step(c, op, ST_MLA, MX_COMPOSITE_MLA, op->operands, 6, op->results[0],
                                 &s)))
    return true;
  s->mla = sh;
  size_t need = mx_cpu_mla_scratch_floats(&sh);
  if (need > c->p->scratch_per_thread) c->p->scratch_per_thread = need;
  return true;
}
