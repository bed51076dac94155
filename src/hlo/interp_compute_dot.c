// Reference interpreter: dot_general, dot and convolution.
//
// Products are accumulated in a wide domain chosen from the result element type (exact wrapping
// 64-bit integers, double, complex double, or boolean or-of-and) and converted to the result type
// once, so mixed operand/result types (f32 -> f64, i8 -> i32, f8 -> f8) round only at the end.
#include <string.h>

#include "hlo/interp_compute.h"

// Accumulation domain for a product of lhs and rhs elements giving `res` elements.
static mx_cp_dom_t pick_dom(mx_elem_type_t res, mx_elem_type_t lhs, mx_elem_type_t rhs) {
  mx_cp_dom_t d = mx_cp_dom_of(res);
  bool int_ops = (mx_elem_is_int(lhs) || mx_elem_is_bool(lhs)) &&
                 (mx_elem_is_int(rhs) || mx_elem_is_bool(rhs));
  bool cpx_ops = mx_elem_is_complex(lhs) || mx_elem_is_complex(rhs);
  if ((d == MX_CP_INT || d == MX_CP_BOOL) && !int_ops) return cpx_ops ? MX_CP_CPX : MX_CP_FLT;
  if (d == MX_CP_BOOL && !(mx_elem_is_bool(lhs) && mx_elem_is_bool(rhs))) return MX_CP_INT;
  if (d == MX_CP_FLT && cpx_ops) return MX_CP_CPX;
  return d;
}

static void strides_of(const mx_type_t *t, int64_t *s) {
  int64_t acc = 1;
  for (int32_t d = t->rank - 1; d >= 0; --d) {
    s[d] = acc;
    acc *= t->dims[d];
  }
}

static bool valid_dims(const int64_t *v, int32_t n, int32_t rank) {
  for (int32_t i = 0; i < n; ++i) {
    if (v[i] < 0 || v[i] >= rank) return false;
    for (int32_t j = 0; j < i; ++j)
      if (v[j] == v[i]) return false;
  }
  return true;
}

typedef struct dot_dims {
  int32_t nb, nc;
  int64_t lb[MX_MAX_RANK], rb[MX_MAX_RANK], lc[MX_MAX_RANK], rc[MX_MAX_RANK];
} dot_dims_t;

static mx_status_t dot_core(const mx_op_t *op, const mx_tensor_t *lhs, const mx_tensor_t *rhs,
                            const dot_dims_t *dd, mx_tensor_t *out) {
  const mx_type_t *lt = &lhs->type, *rt = &rhs->type, *ot = &out->type;
  if (lt->kind != MX_TYPE_TENSOR || rt->kind != MX_TYPE_TENSOR || ot->kind != MX_TYPE_TENSOR)
    return mx_cp_bad(op, "operands and result must be tensors");
  if (!valid_dims(dd->lb, dd->nb, lt->rank) || !valid_dims(dd->rb, dd->nb, rt->rank) ||
      !valid_dims(dd->lc, dd->nc, lt->rank) || !valid_dims(dd->rc, dd->nc, rt->rank))
    return mx_cp_bad(op, "invalid batching/contracting dimensions");
  for (int32_t i = 0; i < dd->nb; ++i) {
    if (mx_cp_contains(dd->lc, dd->nc, dd->lb[i]) || mx_cp_contains(dd->rc, dd->nc, dd->rb[i]))
      return mx_cp_bad(op, "a dimension is both batching and contracting");
    if (lt->dims[dd->lb[i]] != rt->dims[dd->rb[i]])
      return mx_cp_bad(op, "batching dimension sizes differ");
  }
  int64_t csz[MX_MAX_RANK];
  for (int32_t i = 0; i < dd->nc; ++i) {
    if (lt->dims[dd->lc[i]] != rt->dims[dd->rc[i]])
      return mx_cp_bad(op, "contracting dimension sizes differ");
    csz[i] = lt->dims[dd->lc[i]];
  }
  int64_t lfree[MX_MAX_RANK], rfree[MX_MAX_RANK];
  int32_t nlf = 0, nrf = 0;
  for (int32_t d = 0; d < lt->rank; ++d)
    if (!mx_cp_contains(dd->lb, dd->nb, d) && !mx_cp_contains(dd->lc, dd->nc, d)) lfree[nlf++] = d;
  for (int32_t d = 0; d < rt->rank; ++d)
    if (!mx_cp_contains(dd->rb, dd->nb, d) && !mx_cp_contains(dd->rc, dd->nc, d)) rfree[nrf++] = d;
  if (ot->rank != dd->nb + nlf + nrf) return mx_cp_bad(op, "result rank mismatch");
  for (int32_t i = 0; i < dd->nb; ++i)
    if (ot->dims[i] != lt->dims[dd->lb[i]]) return mx_cp_bad(op, "result shape mismatch");
  for (int32_t i = 0; i < nlf; ++i)
    if (ot->dims[dd->nb + i] != lt->dims[lfree[i]]) return mx_cp_bad(op, "result shape mismatch");
  for (int32_t i = 0; i < nrf; ++i)
    if (ot->dims[dd->nb + nlf + i] != rt->dims[rfree[i]])
      return mx_cp_bad(op, "result shape mismatch");

  int64_t ls[MX_MAX_RANK], rs[MX_MAX_RANK];
  strides_of(lt, ls);
  strides_of(rt, rs);
  mx_cp_dom_t dom = pick_dom(ot->elem, lt->elem, rt->elem);
  int64_t n_out = mx_type_numel(ot);
  bool empty_contract = false;
  for (int32_t i = 0; i < dd->nc; ++i)
    if (csz[i] == 0) empty_contract = true;

  int64_t oidx[MX_MAX_RANK] = {0};
  for (int64_t o = 0; o < n_out; ++o) {
    int64_t lbase = 0, rbase = 0;
    for (int32_t i = 0; i < dd->nb; ++i) {
      lbase += oidx[i] * ls[dd->lb[i]];
      rbase += oidx[i] * rs[dd->rb[i]];
    }
    for (int32_t i = 0; i < nlf; ++i) lbase += oidx[dd->nb + i] * ls[lfree[i]];
    for (int32_t i = 0; i < nrf; ++i) rbase += oidx[dd->nb + nlf + i] * rs[rfree[i]];
    mx_cp_val_t acc = {0, 0.0, 0.0};
    if (!empty_contract) {
      int64_t cidx[MX_MAX_RANK] = {0};
      do {
        int64_t lo = lbase, ro = rbase;
        for (int32_t i = 0; i < dd->nc; ++i) {
          lo += cidx[i] * ls[dd->lc[i]];
          ro += cidx[i] * rs[dd->rc[i]];
        }
        mx_cp_fma(&acc, mx_cp_load(lhs, lo, dom), mx_cp_load(rhs, ro, dom), dom);
      } while (mx_cp_next(cidx, csz, dd->nc));
    }
    mx_cp_store(out, o, acc, dom);
    mx_cp_next(oidx, ot->dims, ot->rank);
  }
  return MX_OK;
}

mx_status_t mx_cp_dot_general(const mx_func_t *f, const mx_op_t *op, const mx_tensor_t *const *in,
                              mx_tensor_t *out) {
  (void)f;
  if (op->n_operands != 2 || op->n_results != 1) return mx_cp_bad(op, "expects 2 operands");
  const mx_attr_t *dn = mx_op_attr(op, "dot_dimension_numbers");
  if (!dn || (dn->kind != MX_ATTR_STRUCT && dn->kind != MX_ATTR_DICT))
    return mx_cp_bad(op, "missing `dot_dimension_numbers`");
  dot_dims_t dd;
  int32_t n1, n2, n3, n4;
  mx_status_t st;
  if ((st = mx_cp_field_ints(op, dn, "lhs_batching_dimensions", dd.lb, MX_MAX_RANK, &n1)) ||
      (st = mx_cp_field_ints(op, dn, "rhs_batching_dimensions", dd.rb, MX_MAX_RANK, &n2)) ||
      (st = mx_cp_field_ints(op, dn, "lhs_contracting_dimensions", dd.lc, MX_MAX_RANK, &n3)) ||
      (st = mx_cp_field_ints(op, dn, "rhs_contracting_dimensions", dd.rc, MX_MAX_RANK, &n4)))
    return st;
  if (n1 != n2 || n3 != n4) return mx_cp_bad(op, "lhs/rhs dimension lists differ in length");
  dd.nb = n1;
  dd.nc = n3;
  return dot_core(op, in[0], in[1], &dd, &out[0]);
}

mx_status_t mx_cp_dot(const mx_func_t *f, const mx_op_t *op, const mx_tensor_t *const *in,
                      mx_tensor_t *out) {
  (void)f;
  if (op->n_operands != 2 || op->n_results != 1) return mx_cp_bad(op, "expects 2 operands");
  int32_t rl = in[0]->type.rank, rr = in[1]->type.rank;
  if (rl < 1 || rl > 2 || rr < 1 || rr > 2) return mx_cp_bad(op, "operands must be rank 1 or 2");
  dot_dims_t dd;
  dd.nb = 0;
  dd.nc = 1;
  dd.lc[0] = rl - 1;
  dd.rc[0] = 0;
  return dot_core(op, in[0], in[1], &dd, &out[0]);
}

// ---- convolution ----

typedef struct conv_cfg {
  int32_t ns;  // spatial rank
  int64_t ib, ifd, is[MX_MAX_RANK];
  int64_t kif, kof, ks[MX_MAX_RANK];
  int64_t ob, of, os[MX_MAX_RANK];
  int64_t stride[MX_MAX_RANK], lo[MX_MAX_RANK], hi[MX_MAX_RANK];
  int64_t ldil[MX_MAX_RANK], rdil[MX_MAX_RANK], rev[MX_MAX_RANK];
  int64_t fgc, bgc;
} conv_cfg_t;

static mx_status_t conv_read(const mx_op_t *op, const mx_tensor_t *pad, int32_t rank,
                             conv_cfg_t *c) {
  const mx_attr_t *dn = mx_op_attr(op, "dimension_numbers");
  if (!dn || (dn->kind != MX_ATTR_STRUCT && dn->kind != MX_ATTR_DICT))
    return mx_cp_bad(op, "missing `dimension_numbers`");
  int32_t n1, n2, n3;
  mx_status_t st;
  if ((st = mx_cp_field_int(op, dn, "input_batch_dimension", &c->ib)) ||
      (st = mx_cp_field_int(op, dn, "input_feature_dimension", &c->ifd)) ||
      (st = mx_cp_field_ints(op, dn, "input_spatial_dimensions", c->is, MX_MAX_RANK, &n1)) ||
      (st = mx_cp_field_int(op, dn, "kernel_input_feature_dimension", &c->kif)) ||
      (st = mx_cp_field_int(op, dn, "kernel_output_feature_dimension", &c->kof)) ||
      (st = mx_cp_field_ints(op, dn, "kernel_spatial_dimensions", c->ks, MX_MAX_RANK, &n2)) ||
      (st = mx_cp_field_int(op, dn, "output_batch_dimension", &c->ob)) ||
      (st = mx_cp_field_int(op, dn, "output_feature_dimension", &c->of)) ||
      (st = mx_cp_field_ints(op, dn, "output_spatial_dimensions", c->os, MX_MAX_RANK, &n3)))
    return st;
  if (n1 != n2 || n1 != n3 || n1 != rank - 2)
    return mx_cp_bad(op, "spatial dimension lists must have rank-2 entries");
  c->ns = n1;
  if ((st = mx_cp_window_attr(op, "window_strides", n1, 1, c->stride)) ||
      (st = mx_cp_padding(op, "padding", n1, c->lo, c->hi)) ||
      (st = mx_cp_window_attr(op, "lhs_dilation", n1, 1, c->ldil)) ||
      (st = mx_cp_window_attr(op, "rhs_dilation", n1, 1, c->rdil)) ||
      (st = mx_cp_window_attr(op, "window_reversal", n1, 0, c->rev)))
    return st;
  if (pad) {
    // dynamic_conv: padding is an Nx2 integer operand.
    if (!mx_elem_is_int(pad->type.elem) || mx_type_numel(&pad->type) != 2 * n1)
      return mx_cp_bad(op, "padding operand must be a spatial-rank x 2 integer tensor");
    for (int32_t k = 0; k < n1; ++k) {
      c->lo[k] = mx_tensor_get_i64(pad, 2 * k);
      c->hi[k] = mx_tensor_get_i64(pad, 2 * k + 1);
    }
  }
  c->fgc = mx_cp_op_int(op, "feature_group_count", 1);
  c->bgc = mx_cp_op_int(op, "batch_group_count", 1);
  for (int32_t k = 0; k < n1; ++k)
    if (c->stride[k] < 1 || c->ldil[k] < 1 || c->rdil[k] < 1)
      return mx_cp_bad(op, "strides and dilations must be positive");
  if (c->fgc < 1 || c->bgc < 1) return mx_cp_bad(op, "group counts must be positive");
  // Each of the three layouts must be a permutation of 0..rank-1.
  int64_t a[MX_MAX_RANK], b[MX_MAX_RANK], o[MX_MAX_RANK];
  a[0] = c->ib, a[1] = c->ifd, b[0] = c->kif, b[1] = c->kof, o[0] = c->ob, o[1] = c->of;
  for (int32_t k = 0; k < n1; ++k) a[k + 2] = c->is[k], b[k + 2] = c->ks[k], o[k + 2] = c->os[k];
  if (!valid_dims(a, rank, rank) || !valid_dims(b, rank, rank) || !valid_dims(o, rank, rank))
    return mx_cp_bad(op, "dimension_numbers are not permutations");
  return MX_OK;
}

mx_status_t mx_cp_convolution(const mx_func_t *f, const mx_op_t *op, const mx_tensor_t *const *in,
                              mx_tensor_t *out) {
  (void)f;
  // A third operand (dynamic_conv) carries the padding.
  if (op->n_operands < 2 || op->n_operands > 3 || op->n_results != 1)
    return mx_cp_bad(op, "expects lhs, rhs (and padding)");
  const mx_tensor_t *lhs = in[0], *rhs = in[1];
  const mx_type_t *lt = &lhs->type, *rt = &rhs->type, *ot = &out->type;
  int32_t rank = lt->rank;
  if (rank < 2 || rt->rank != rank || ot->rank != rank) return mx_cp_bad(op, "rank mismatch");
  conv_cfg_t c;
  mx_status_t st = conv_read(op, op->n_operands == 3 ? in[2] : NULL, rank, &c);
  if (st != MX_OK) return st;
  int64_t N = lt->dims[c.ib], C = lt->dims[c.ifd];
  int64_t kin_n = rt->dims[c.kif], O = rt->dims[c.kof];
  if (C != kin_n * c.fgc || O % c.fgc != 0 || O % c.bgc != 0 || N % c.bgc != 0 ||
      ot->dims[c.ob] != N / c.bgc || ot->dims[c.of] != O)
    return mx_cp_bad(op, "feature/batch dimensions do not match the group counts");
  int64_t ksz[MX_MAX_RANK], dil_in[MX_MAX_RANK];
  for (int32_t k = 0; k < c.ns; ++k) {
    ksz[k] = rt->dims[c.ks[k]];
    int64_t s = lt->dims[c.is[k]];
    dil_in[k] = s > 0 ? (s - 1) * c.ldil[k] + 1 : 0;
  }
  int64_t ls[MX_MAX_RANK], rs[MX_MAX_RANK];
  strides_of(lt, ls);
  strides_of(rt, rs);
  mx_cp_dom_t dom = pick_dom(ot->elem, lt->elem, rt->elem);
  int64_t o_per_fg = O / c.fgc, o_per_bg = O / c.bgc, n_per_bg = N / c.bgc;
  bool empty_window = kin_n == 0;
  for (int32_t k = 0; k < c.ns; ++k)
    if (ksz[k] == 0) empty_window = true;

  int64_t n_out = mx_type_numel(ot);
  int64_t oidx[MX_MAX_RANK] = {0};
  for (int64_t oi = 0; oi < n_out; ++oi) {
    int64_t b = oidx[c.ob], o = oidx[c.of];
    int64_t fg = o / o_per_fg, bg = o / o_per_bg;
    int64_t lbase = (bg * n_per_bg + b) * ls[c.ib];
    int64_t rbase = o * rs[c.kof];
    mx_cp_val_t acc = {0, 0.0, 0.0};
    if (!empty_window) {
      int64_t kp[MX_MAX_RANK] = {0};
      do {
        // Map the window position to an input element; padding and dilation holes are zero.
        int64_t lo_sp = lbase, ro_sp = rbase;
        bool hit = true;
        for (int32_t k = 0; k < c.ns && hit; ++k) {
          int64_t pos = oidx[c.os[k]] * c.stride[k] + kp[k] * c.rdil[k] - c.lo[k];
          if (pos < 0 || pos >= dil_in[k] || pos % c.ldil[k] != 0) {
            hit = false;
            break;
          }
          lo_sp += (pos / c.ldil[k]) * ls[c.is[k]];
          int64_t kk = c.rev[k] ? ksz[k] - 1 - kp[k] : kp[k];
          ro_sp += kk * rs[c.ks[k]];
        }
        if (hit) {
          for (int64_t ki = 0; ki < kin_n; ++ki) {
            int64_t lo_off = lo_sp + (fg * kin_n + ki) * ls[c.ifd];
            int64_t ro_off = ro_sp + ki * rs[c.kif];
            mx_cp_fma(&acc, mx_cp_load(lhs, lo_off, dom), mx_cp_load(rhs, ro_off, dom), dom);
          }
        }
      } while (mx_cp_next(kp, ksz, c.ns));
    }
    mx_cp_store(out, oi, acc, dom);
    mx_cp_next(oidx, ot->dims, ot->rank);
  }
  return MX_OK;
}

// ---- chlo.ragged_dot ----
//
// A dot_general where one lhs dimension is split into groups by `group_sizes`:
//   mode 1 (ragged lhs non-contracting dim): each row uses the rhs slice of its group along
//          rhs_group_dimensions; rows past the last group are zero.
//   mode 2 (ragged contracting dim): one result per group (leading result dim), each contracting
//          only over its group's range.
//   mode 3 (ragged batch dim): an ordinary dot_general.

static mx_status_t ragged_read(const mx_op_t *op, dot_dims_t *dd, int64_t *lr, int64_t *rg,
                               int32_t *n_rg) {
  const mx_attr_t *dn = mx_op_attr(op, "ragged_dot_dimension_numbers");
  if (!dn || (dn->kind != MX_ATTR_STRUCT && dn->kind != MX_ATTR_DICT))
    return mx_cp_bad(op, "missing `ragged_dot_dimension_numbers`");
  int32_t n1, n2, n3, n4, n5;
  mx_status_t st;
  if ((st = mx_cp_field_ints(op, dn, "lhs_batching_dimensions", dd->lb, MX_MAX_RANK, &n1)) ||
      (st = mx_cp_field_ints(op, dn, "rhs_batching_dimensions", dd->rb, MX_MAX_RANK, &n2)) ||
      (st = mx_cp_field_ints(op, dn, "lhs_contracting_dimensions", dd->lc, MX_MAX_RANK, &n3)) ||
      (st = mx_cp_field_ints(op, dn, "rhs_contracting_dimensions", dd->rc, MX_MAX_RANK, &n4)) ||
      (st = mx_cp_field_ints(op, dn, "lhs_ragged_dimensions", lr, 1, &n5)) ||
      (st = mx_cp_field_ints(op, dn, "rhs_group_dimensions", rg, 1, n_rg)))
    return st;
  if (n1 != n2 || n3 != n4 || n5 != 1)
    return mx_cp_bad(op, "malformed ragged_dot_dimension_numbers");
  dd->nb = n1;
  dd->nc = n3;
  return MX_OK;
}

mx_status_t mx_cp_ragged_dot(const mx_op_t *op, const mx_tensor_t *const *in, mx_tensor_t *out) {
  if (op->n_operands != 3 || op->n_results != 1)
    return mx_cp_bad(op, "expects lhs, rhs, group_sizes");
  const mx_tensor_t *lhs = in[0], *rhs = in[1], *gs = in[2];
  const mx_type_t *lt = &lhs->type, *rt = &rhs->type, *ot = &out->type;
  dot_dims_t dd;
  int64_t lr, rg = -1;
  int32_t n_rg;
  mx_status_t st = ragged_read(op, &dd, &lr, &rg, &n_rg);
  if (st != MX_OK) return st;
  if (!valid_dims(dd.lb, dd.nb, lt->rank) || !valid_dims(dd.rb, dd.nb, rt->rank) ||
      !valid_dims(dd.lc, dd.nc, lt->rank) || !valid_dims(dd.rc, dd.nc, rt->rank) || lr < 0 ||
      lr >= lt->rank || (n_rg == 1 && (rg < 0 || rg >= rt->rank)))
    return mx_cp_bad(op, "invalid dimensions");
  int mode = mx_cp_contains(dd.lc, dd.nc, lr) ? 2 : mx_cp_contains(dd.lb, dd.nb, lr) ? 3 : 1;
  if ((mode == 1) != (n_rg == 1))
    return mx_cp_bad(op, "rhs_group_dimensions does not fit the mode");
  if (gs->type.rank != 1 || !mx_elem_is_int(gs->type.elem))
    return mx_cp_unsupported(op, "group_sizes must be a 1-D integer tensor");
  int64_t g = gs->type.dims[0];
  if (mode == 1 && rt->dims[rg] != g) return mx_cp_bad(op, "group count mismatch");
  int64_t cum[64];
  if (g > 64) return mx_cp_unsupported(op, "more than 64 groups");
  for (int64_t j = 0, acc = 0; j < g; ++j) {
    int64_t v = mx_tensor_get_i64(gs, j);
    acc += v < 0 ? 0 : (v > (INT64_C(1) << 40) ? (INT64_C(1) << 40) : v);
    cum[j] = acc;
  }
  int64_t lfree[MX_MAX_RANK], rfree[MX_MAX_RANK], csz[MX_MAX_RANK];
  int32_t nlf = 0, nrf = 0, lr_pos = -1, lr_c = -1;
  for (int32_t d = 0; d < lt->rank; ++d)
    if (!mx_cp_contains(dd.lb, dd.nb, d) && !mx_cp_contains(dd.lc, dd.nc, d)) {
      if (d == lr) lr_pos = nlf;
      lfree[nlf++] = d;
    }
  for (int32_t d = 0; d < rt->rank; ++d)
    if (!mx_cp_contains(dd.rb, dd.nb, d) && !mx_cp_contains(dd.rc, dd.nc, d) &&
        !(mode == 1 && d == rg))
      rfree[nrf++] = d;
  for (int32_t i = 0; i < dd.nc; ++i) {
    if (lt->dims[dd.lc[i]] != rt->dims[dd.rc[i]]) return mx_cp_bad(op, "contracting size mismatch");
    csz[i] = lt->dims[dd.lc[i]];
    if (dd.lc[i] == lr) lr_c = i;
  }
  int32_t lead = mode == 2 ? 1 : 0;  // mode 2 results start with the group dimension
  if (ot->rank != lead + dd.nb + nlf + nrf || (mode == 2 && ot->dims[0] != g))
    return mx_cp_bad(op, "result rank mismatch");
  for (int32_t i = 0; i < dd.nb; ++i)
    if (lt->dims[dd.lb[i]] != rt->dims[dd.rb[i]] || ot->dims[lead + i] != lt->dims[dd.lb[i]])
      return mx_cp_bad(op, "batch shape mismatch");
  for (int32_t i = 0; i < nlf; ++i)
    if (ot->dims[lead + dd.nb + i] != lt->dims[lfree[i]]) return mx_cp_bad(op, "shape mismatch");
  for (int32_t i = 0; i < nrf; ++i)
    if (ot->dims[lead + dd.nb + nlf + i] != rt->dims[rfree[i]])
      return mx_cp_bad(op, "shape mismatch");
  int64_t ls[MX_MAX_RANK], rs[MX_MAX_RANK];
  strides_of(lt, ls);
  strides_of(rt, rs);
  mx_cp_dom_t dom = pick_dom(ot->elem, lt->elem, rt->elem);
  bool empty = false;
  for (int32_t i = 0; i < dd.nc; ++i)
    if (csz[i] == 0) empty = true;
  int64_t n_out = mx_type_numel(ot), oidx[MX_MAX_RANK] = {0};
  for (int64_t o = 0; o < n_out; ++o) {
    const int64_t *bi = oidx + lead;
    int64_t lbase = 0, rbase = 0, lo_k = 0, hi_k = INT64_MAX;
    bool zero = empty;
    for (int32_t i = 0; i < dd.nb; ++i) {
      lbase += bi[i] * ls[dd.lb[i]];
      rbase += bi[i] * rs[dd.rb[i]];
    }
    for (int32_t i = 0; i < nlf; ++i) lbase += bi[dd.nb + i] * ls[lfree[i]];
    for (int32_t i = 0; i < nrf; ++i) rbase += bi[dd.nb + nlf + i] * rs[rfree[i]];
    if (mode == 1) {
      int64_t r = bi[dd.nb + lr_pos], j = 0;
      while (j < g && r >= cum[j]) ++j;
      if (j == g)
        zero = true;  // rows past the last group
      else
        rbase += j * rs[rg];
    } else if (mode == 2) {
      lo_k = oidx[0] ? cum[oidx[0] - 1] : 0;
      hi_k = cum[oidx[0]];
    }
    mx_cp_val_t acc = {0, 0.0, 0.0};
    if (!zero) {
      int64_t cidx[MX_MAX_RANK] = {0};
      do {
        if (mode == 2 && (cidx[lr_c] < lo_k || cidx[lr_c] >= hi_k)) continue;
        int64_t lo = lbase, ro = rbase;
        for (int32_t i = 0; i < dd.nc; ++i) {
          lo += cidx[i] * ls[dd.lc[i]];
          ro += cidx[i] * rs[dd.rc[i]];
        }
        mx_cp_fma(&acc, mx_cp_load(lhs, lo, dom), mx_cp_load(rhs, ro, dom), dom);
      } while (mx_cp_next(cidx, csz, dd.nc));
    }
    mx_cp_store(out, o, acc, dom);
    mx_cp_next(oidx, ot->dims, ot->rank);
  }
  return MX_OK;
}
