// Result-type inference for compute ops: dot_general, dot, convolution, reduce, reduce_window,
// select_and_scatter, sort, map, fft, triangular_solve.
#include <string.h>

#include "hlo/infer.h"

static bool contains(const mx_ilist_t *l, int64_t v) {
  for (int32_t i = 0; i < l->n; i++) {
    if (l->v[i] == v) return true;
  }
  return false;
}

static mx_elem_type_t result_elem(const mx_type_t *decl, int32_t i, mx_elem_type_t dflt) {
  if (decl != NULL && decl[i].kind == MX_TYPE_TENSOR && decl[i].elem != MX_ELEM_INVALID) {
    return decl[i].elem;
  }
  return dflt;
}

// precision_config: at most two of DEFAULT/HIGH/HIGHEST (absent is fine).
static mx_status_t check_precision(const mx_op_t *op) {
  const mx_attr_t *p = mx_op_attr(op, "precision_config");
  if (p == NULL) return MX_OK;
  if (p->kind != MX_ATTR_ARRAY || p->n > 2) {
    return mx_infer_fail(op, "precision_config must be a list of at most 2 precisions");
  }
  for (int32_t i = 0; i < p->n; i++) {
    const mx_attr_t *e = &p->items[i];
    if (e->kind != MX_ATTR_ENUM || e->s == NULL ||
        (strcmp(e->s, "DEFAULT") != 0 && strcmp(e->s, "HIGH") != 0 &&
         strcmp(e->s, "HIGHEST") != 0)) {
      return mx_infer_fail(op,
                           "precision_config[%d] must be #stablehlo<precision DEFAULT|HIGH|"
                           "HIGHEST>",
                           i);
    }
  }
  return MX_OK;
}

static mx_status_t infer_dot_general(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                                     mx_type_t *out) {
  if (op->n_operands != 2) {
    return mx_infer_fail(op, "expected 2 operands (lhs, rhs), got %d", op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 2);
  if (st != MX_OK) return st;
  if ((st = check_precision(op)) != MX_OK) return st;
  const mx_type_t *l = mx_infer_operand(f, op, 0);
  const mx_type_t *r = mx_infer_operand(f, op, 1);
  const mx_attr_t *dn = mx_op_attr(op, "dot_dimension_numbers");
  if (dn == NULL) return mx_infer_fail(op, "missing required attribute 'dot_dimension_numbers'");
  if (dn->kind != MX_ATTR_STRUCT && dn->kind != MX_ATTR_DICT) {
    return mx_infer_fail(op, "attribute 'dot_dimension_numbers' must be a #stablehlo.dot struct");
  }
  mx_ilist_t lb, rb, lc, rc;
  if ((st = mx_infer_ints(op, dn, "lhs_batching_dimensions", false, &lb, NULL)) != MX_OK) return st;
  if ((st = mx_infer_ints(op, dn, "rhs_batching_dimensions", false, &rb, NULL)) != MX_OK) return st;
  if ((st = mx_infer_ints(op, dn, "lhs_contracting_dimensions", false, &lc, NULL)) != MX_OK) {
    return st;
  }
  if ((st = mx_infer_ints(op, dn, "rhs_contracting_dimensions", false, &rc, NULL)) != MX_OK) {
    return st;
  }
  if (lb.n != rb.n) {
    return mx_infer_fail(op, "lhs and rhs have different numbers of batching dimensions (%d vs %d)",
                         lb.n, rb.n);
  }
  if (lc.n != rc.n) {
    return mx_infer_fail(
        op, "lhs and rhs have different numbers of contracting dimensions (%d vs %d)", lc.n, rc.n);
  }
  // Batching and contracting dims of each side must be distinct and in range.
  mx_ilist_t all;
  for (int side = 0; side < 2; side++) {
    const mx_ilist_t *b = side ? &rb : &lb, *c = side ? &rc : &lc;
    const mx_type_t *t = side ? r : l;
    if (b->n + c->n > t->rank) {
      return mx_infer_fail(op, "%s %s has more batching and contracting dimensions than its rank",
                           side ? "rhs" : "lhs", mx_tstr(t).s);
    }
    all.n = 0;
    for (int32_t i = 0; i < b->n; i++) all.v[all.n++] = b->v[i];
    for (int32_t i = 0; i < c->n; i++) all.v[all.n++] = c->v[i];
    st = mx_infer_check_dims(
        op, side ? "rhs batching/contracting dimensions" : "lhs batching/contracting dimensions",
        &all, t->rank, false);
    if (st != MX_OK) return st;
  }
  for (int32_t i = 0; i < lb.n; i++) {
    if (l->dims[lb.v[i]] != r->dims[rb.v[i]]) {
      return mx_infer_fail(op,
                           "batching dimension sizes differ: lhs %s dim %lld = %lld, rhs %s "
                           "dim %lld = %lld",
                           mx_tstr(l).s, (long long)lb.v[i], (long long)l->dims[lb.v[i]],
                           mx_tstr(r).s, (long long)rb.v[i], (long long)r->dims[rb.v[i]]);
    }
  }
  for (int32_t i = 0; i < lc.n; i++) {
    if (l->dims[lc.v[i]] != r->dims[rc.v[i]]) {
      return mx_infer_fail(op,
                           "contracting dimension sizes differ: lhs %s dim %lld = %lld, rhs "
                           "%s dim %lld = %lld",
                           mx_tstr(l).s, (long long)lc.v[i], (long long)l->dims[lc.v[i]],
                           mx_tstr(r).s, (long long)rc.v[i], (long long)r->dims[rc.v[i]]);
    }
  }
  int32_t rank = l->rank + r->rank - lb.n - lc.n - rc.n;
  if (rank > MX_MAX_RANK) return mx_infer_fail(op, "result rank %d is too large", rank);
  *out = *l;
  out->elem = result_elem(decl, 0, l->elem);
  out->rank = 0;
  for (int32_t i = 0; i < lb.n; i++) out->dims[out->rank++] = l->dims[lb.v[i]];
  for (int32_t d = 0; d < l->rank; d++) {
    if (!contains(&lb, d) && !contains(&lc, d)) out->dims[out->rank++] = l->dims[d];
  }
  for (int32_t d = 0; d < r->rank; d++) {
    if (!contains(&rb, d) && !contains(&rc, d)) out->dims[out->rank++] = r->dims[d];
  }
  return MX_OK;
}

static mx_status_t infer_dot(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                             mx_type_t *out) {
  if (op->n_operands != 2) {
    return mx_infer_fail(op, "expected 2 operands (lhs, rhs), got %d", op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 2);
  if (st != MX_OK) return st;
  if ((st = check_precision(op)) != MX_OK) return st;
  const mx_type_t *l = mx_infer_operand(f, op, 0);
  const mx_type_t *r = mx_infer_operand(f, op, 1);
  if (l->rank < 1 || l->rank > 2 || r->rank < 1 || r->rank > 2) {
    return mx_infer_fail(op, "operands %s and %s must have rank 1 or 2", mx_tstr(l).s,
                         mx_tstr(r).s);
  }
  if (l->dims[l->rank - 1] != r->dims[0]) {
    return mx_infer_fail(op,
                         "contracting dimension sizes differ: lhs %s dim %d = %lld, rhs %s "
                         "dim 0 = %lld",
                         mx_tstr(l).s, l->rank - 1, (long long)l->dims[l->rank - 1], mx_tstr(r).s,
                         (long long)r->dims[0]);
  }
  *out = *l;
  out->elem = result_elem(decl, 0, l->elem);
  out->rank = 0;
  if (l->rank == 2) out->dims[out->rank++] = l->dims[0];
  if (r->rank == 2) out->dims[out->rank++] = r->dims[1];
  return MX_OK;
}

// Output size of one windowed dimension (reduce_window, convolution, select_and_scatter);
// -1 when the arithmetic overflows int64 (absurd attributes from hostile input).
static int64_t window_out(int64_t in, int64_t base_dil, int64_t pad_lo, int64_t pad_hi, int64_t win,
                          int64_t win_dil, int64_t stride) {
  int64_t dilated = 0, padded, dw = 0;
  if (in > 0 && (__builtin_mul_overflow(in - 1, base_dil, &dilated) ||
                 __builtin_add_overflow(dilated, 1, &dilated))) {
    return -1;
  }
  if (__builtin_add_overflow(pad_lo, dilated, &padded) ||
      __builtin_add_overflow(padded, pad_hi, &padded)) {
    return -1;
  }
  if (win > 0 &&
      (__builtin_mul_overflow(win - 1, win_dil, &dw) || __builtin_add_overflow(dw, 1, &dw))) {
    return -1;
  }
  if (padded < dw || padded <= 0) return 0;
  return (padded - dw) / stride + 1;
}

static mx_status_t window_overflow(const mx_op_t *op, int32_t dim) {
  return mx_infer_fail(op, "window arithmetic overflows in dimension %d", dim);
}

// Reads an optional per-dim list with a default value; checks length and positivity.
static mx_status_t opt_list(const mx_op_t *op, const char *name, int32_t n, int64_t dflt,
                            bool positive, mx_ilist_t *l) {
  bool present;
  mx_status_t st = mx_infer_ints(op, NULL, name, false, l, &present);
  if (st != MX_OK) return st;
  if (!present) {
    for (int32_t i = 0; i < n; i++) l->v[i] = dflt;
    l->n = n;
    return MX_OK;
  }
  if (l->n != n) return mx_infer_fail(op, "%s has %d entries, expected %d", name, l->n, n);
  for (int32_t i = 0; i < n && positive; i++) {
    if (l->v[i] <= 0) {
      return mx_infer_fail(op, "%s[%d] = %lld must be positive", name, i, (long long)l->v[i]);
    }
  }
  return MX_OK;
}

static mx_status_t read_padding(const mx_op_t *op, int32_t n, mx_ilist_t *p) {
  bool present;
  mx_status_t st = mx_infer_ints(op, NULL, "padding", false, p, &present);
  if (st != MX_OK) return st;
  if (!present) {
    for (int32_t i = 0; i < 2 * n; i++) p->v[i] = 0;
    p->n = 2 * n;
    return MX_OK;
  }
  const mx_attr_t *a = mx_op_attr(op, "padding");
  bool shaped_ok =
      a->kind != MX_ATTR_DENSE ||
      (a->dense->type.rank == 2 && a->dense->type.dims[0] == n && a->dense->type.dims[1] == 2) ||
      (n == 0 && mx_type_numel(&a->dense->type) == 0);
  if (p->n != 2 * n || !shaped_ok) {
    return mx_infer_fail(op, "padding has %d entries%s, expected %d x 2", p->n,
                         shaped_ok ? "" : " or the wrong shape", n);
  }
  return MX_OK;
}

typedef struct conv_dims {
  int64_t ib, ifeat, kif, kof, ob, of;
  mx_ilist_t is, ks, os;
} conv_dims_t;

static mx_status_t check_perm(const mx_op_t *op, const char *what, int64_t a, int64_t b,
                              const mx_ilist_t *sp, int32_t rank) {
  mx_ilist_t all;
  all.n = 0;
  all.v[all.n++] = a;
  all.v[all.n++] = b;
  for (int32_t i = 0; i < sp->n && all.n < MX_ILIST_CAP; i++) all.v[all.n++] = sp->v[i];
  if (all.n != rank) {
    return mx_infer_fail(op, "%s dimension numbers name %d dimensions, expected %d", what, all.n,
                         rank);
  }
  return mx_infer_check_dims(op, what, &all, rank, false);
}

static mx_status_t read_conv_dims(const mx_op_t *op, conv_dims_t *c) {
  const mx_attr_t *dn = mx_op_attr(op, "dimension_numbers");
  if (dn == NULL) return mx_infer_fail(op, "missing required attribute 'dimension_numbers'");
  if (dn->kind != MX_ATTR_STRUCT && dn->kind != MX_ATTR_DICT) {
    return mx_infer_fail(op, "attribute 'dimension_numbers' must be a #stablehlo.conv struct");
  }
  mx_status_t st;
  if ((st = mx_infer_int(op, dn, "input_batch_dimension", true, 0, &c->ib)) != MX_OK) return st;
  if ((st = mx_infer_int(op, dn, "input_feature_dimension", true, 0, &c->ifeat)) != MX_OK) {
    return st;
  }
  if ((st = mx_infer_ints(op, dn, "input_spatial_dimensions", false, &c->is, NULL)) != MX_OK) {
    return st;
  }
  if ((st = mx_infer_int(op, dn, "kernel_input_feature_dimension", true, 0, &c->kif)) != MX_OK) {
    return st;
  }
  if ((st = mx_infer_int(op, dn, "kernel_output_feature_dimension", true, 0, &c->kof)) != MX_OK) {
    return st;
  }
  if ((st = mx_infer_ints(op, dn, "kernel_spatial_dimensions", false, &c->ks, NULL)) != MX_OK) {
    return st;
  }
  if ((st = mx_infer_int(op, dn, "output_batch_dimension", true, 0, &c->ob)) != MX_OK) return st;
  if ((st = mx_infer_int(op, dn, "output_feature_dimension", true, 0, &c->of)) != MX_OK) {
    return st;
  }
  return mx_infer_ints(op, dn, "output_spatial_dimensions", false, &c->os, NULL);
}

static mx_status_t infer_convolution(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                                     mx_type_t *out) {
  if (op->n_operands != 2) {
    return mx_infer_fail(op, "expected 2 operands (lhs, rhs), got %d", op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 2);
  if (st != MX_OK) return st;
  if ((st = check_precision(op)) != MX_OK) return st;
  const mx_type_t *l = mx_infer_operand(f, op, 0);
  const mx_type_t *r = mx_infer_operand(f, op, 1);
  if (l->rank != r->rank || l->rank < 2) {
    return mx_infer_fail(op, "lhs %s and rhs %s must have the same rank >= 2", mx_tstr(l).s,
                         mx_tstr(r).s);
  }
  if (l->elem != r->elem) {
    return mx_infer_fail(op, "lhs %s and rhs %s must have the same element type", mx_tstr(l).s,
                         mx_tstr(r).s);
  }
  conv_dims_t c;
  if ((st = read_conv_dims(op, &c)) != MX_OK) return st;
  int32_t n = l->rank, ns = n - 2;
  if ((st = check_perm(op, "input", c.ib, c.ifeat, &c.is, n)) != MX_OK) return st;
  if ((st = check_perm(op, "kernel", c.kif, c.kof, &c.ks, n)) != MX_OK) return st;
  if ((st = check_perm(op, "output", c.ob, c.of, &c.os, n)) != MX_OK) return st;
  mx_ilist_t strides, pad, lhs_dil, rhs_dil, rev;
  if ((st = opt_list(op, "window_strides", ns, 1, true, &strides)) != MX_OK) return st;
  if ((st = read_padding(op, ns, &pad)) != MX_OK) return st;
  if ((st = opt_list(op, "lhs_dilation", ns, 1, true, &lhs_dil)) != MX_OK) return st;
  if ((st = opt_list(op, "rhs_dilation", ns, 1, true, &rhs_dil)) != MX_OK) return st;
  if ((st = opt_list(op, "window_reversal", ns, 0, false, &rev)) != MX_OK) return st;
  int64_t fgc, bgc;
  if ((st = mx_infer_int(op, NULL, "feature_group_count", false, 1, &fgc)) != MX_OK) return st;
  if ((st = mx_infer_int(op, NULL, "batch_group_count", false, 1, &bgc)) != MX_OK) return st;
  if (fgc <= 0 || bgc <= 0 || (fgc > 1 && bgc > 1)) {
    return mx_infer_fail(op,
                         "feature_group_count %lld and batch_group_count %lld must be "
                         "positive and not both > 1",
                         (long long)fgc, (long long)bgc);
  }
  int64_t in_batch = l->dims[c.ib], in_feat = l->dims[c.ifeat];
  int64_t k_in = r->dims[c.kif], k_out = r->dims[c.kof];
  if (in_feat % fgc != 0 || in_feat / fgc != k_in) {
    return mx_infer_fail(op,
                         "input feature size %lld of lhs %s must equal feature_group_count "
                         "%lld x kernel input feature size %lld of rhs %s",
                         (long long)in_feat, mx_tstr(l).s, (long long)fgc, (long long)k_in,
                         mx_tstr(r).s);
  }
  if (in_batch % bgc != 0) {
    return mx_infer_fail(op,
                         "input batch size %lld of %s is not divisible by batch_group_count "
                         "%lld",
                         (long long)in_batch, mx_tstr(l).s, (long long)bgc);
  }
  if (k_out % bgc != 0 || k_out % fgc != 0) {
    return mx_infer_fail(op,
                         "kernel output feature size %lld of %s must be divisible by the "
                         "group counts",
                         (long long)k_out, mx_tstr(r).s);
  }
  *out = *l;
  out->elem = result_elem(decl, 0, l->elem);
  out->dims[c.ob] = in_batch / bgc;
  out->dims[c.of] = k_out;
  for (int32_t i = 0; i < ns; i++) {
    out->dims[c.os.v[i]] =
        window_out(l->dims[c.is.v[i]], lhs_dil.v[i], pad.v[2 * i], pad.v[2 * i + 1],
                   r->dims[c.ks.v[i]], rhs_dil.v[i], strides.v[i]);
    if (out->dims[c.os.v[i]] < 0) return window_overflow(op, c.os.v[i]);
  }
  return MX_OK;
}

// inputs[0..n) tensors of equal shape, inits[n..2n) scalars.
static mx_status_t check_inputs_inits(const mx_func_t *f, const mx_op_t *op, int32_t n_results,
                                      int32_t *n) {
  if (op->n_operands < 2 || op->n_operands % 2 != 0) {
    return mx_infer_fail(op, "expected N inputs and N init values, got %d operands",
                         op->n_operands);
  }
  *n = op->n_operands / 2;
  if (n_results != *n) return mx_infer_fail(op, "expected %d results, got %d", *n, n_results);
  mx_status_t st = mx_infer_need_tensors(f, op, 0, op->n_operands);
  if (st != MX_OK) return st;
  const mx_type_t *x0 = mx_infer_operand(f, op, 0);
  for (int32_t i = 0; i < *n; i++) {
    const mx_type_t *x = mx_infer_operand(f, op, i);
    const mx_type_t *init = mx_infer_operand(f, op, *n + i);
    if (!mx_type_same_shape(x, x0)) {
      return mx_infer_fail(op, "inputs must have equal shapes: %s vs %s", mx_tstr(x0).s,
                           mx_tstr(x).s);
    }
    // Exact element rules involve the body (promotable types); see the verifier's region check.
    if (init->rank != 0 || !mx_infer_same_class(init->elem, x->elem)) {
      return mx_infer_fail(op, "init value %d type %s must be a scalar like input %s's elements", i,
                           mx_tstr(init).s, mx_tstr(x).s);
    }
  }
  return MX_OK;
}

static mx_status_t infer_reduce(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                                int32_t n_results, mx_type_t *out) {
  int32_t n;
  mx_status_t st = check_inputs_inits(f, op, n_results, &n);
  if (st != MX_OK) return st;
  const mx_type_t *x0 = mx_infer_operand(f, op, 0);
  mx_ilist_t dims;
  if ((st = mx_infer_ints(op, NULL, "dimensions", true, &dims, NULL)) != MX_OK) return st;
  if ((st = mx_infer_check_dims(op, "dimensions", &dims, x0->rank, false)) != MX_OK) return st;
  mx_type_t shape = *x0;
  shape.rank = 0;
  for (int32_t d = 0; d < x0->rank; d++) {
    if (!contains(&dims, d)) shape.dims[shape.rank++] = x0->dims[d];
  }
  for (int32_t i = 0; i < n; i++) {
    out[i] = shape;
    out[i].elem = result_elem(decl, i, mx_infer_operand(f, op, n + i)->elem);
  }
  return MX_OK;
}

static mx_status_t window_shape(const mx_op_t *op, const mx_type_t *x, bool dims_required,
                                mx_type_t *out) {
  int32_t r = x->rank;
  mx_ilist_t wd, ws, bd, wdl, pad;
  mx_status_t st;
  if (dims_required) {
    if ((st = mx_infer_ints(op, NULL, "window_dimensions", true, &wd, NULL)) != MX_OK) return st;
    if (wd.n != r) {
      return mx_infer_fail(op, "window_dimensions has %d entries, expected rank(%s) = %d", wd.n,
                           mx_tstr(x).s, r);
    }
    for (int32_t i = 0; i < r; i++) {
      if (wd.v[i] <= 0) {
        return mx_infer_fail(op, "window_dimensions[%d] = %lld must be positive", i,
                             (long long)wd.v[i]);
      }
    }
  } else if ((st = opt_list(op, "window_dimensions", r, 1, true, &wd)) != MX_OK) {
    return st;
  }
  if ((st = opt_list(op, "window_strides", r, 1, true, &ws)) != MX_OK) return st;
  if ((st = opt_list(op, "base_dilations", r, 1, true, &bd)) != MX_OK) return st;
  if ((st = opt_list(op, "window_dilations", r, 1, true, &wdl)) != MX_OK) return st;
  if ((st = read_padding(op, r, &pad)) != MX_OK) return st;
  *out = *x;
  for (int32_t i = 0; i < r; i++) {
    out->dims[i] =
        window_out(x->dims[i], bd.v[i], pad.v[2 * i], pad.v[2 * i + 1], wd.v[i], wdl.v[i], ws.v[i]);
    if (out->dims[i] < 0) return window_overflow(op, i);
  }
  return MX_OK;
}

static mx_status_t infer_reduce_window(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                                       int32_t n_results, mx_type_t *out) {
  int32_t n;
  mx_status_t st = check_inputs_inits(f, op, n_results, &n);
  if (st != MX_OK) return st;
  mx_type_t shape;
  if ((st = window_shape(op, mx_infer_operand(f, op, 0), true, &shape)) != MX_OK) return st;
  for (int32_t i = 0; i < n; i++) {
    out[i] = shape;
    out[i].elem = result_elem(decl, i, mx_infer_operand(f, op, n + i)->elem);
  }
  return MX_OK;
}

static mx_status_t infer_select_and_scatter(const mx_func_t *f, const mx_op_t *op,
                                            const mx_type_t *decl, mx_type_t *out) {
  if (op->n_operands != 3) {
    return mx_infer_fail(op, "expected 3 operands (operand, source, init_value), got %d",
                         op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 3);
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  const mx_type_t *src = mx_infer_operand(f, op, 1);
  const mx_type_t *init = mx_infer_operand(f, op, 2);
  mx_type_t shape;
  if ((st = window_shape(op, x, x->rank > 0, &shape)) != MX_OK) return st;
  if (!mx_type_same_shape(&shape, src)) {
    return mx_infer_fail(op, "source type %s must have the windowed shape of operand %s",
                         mx_tstr(src).s, mx_tstr(x).s);
  }
  if (init->rank != 0 || !mx_infer_same_class(init->elem, src->elem)) {
    return mx_infer_fail(op, "init value type %s must be a scalar like source %s's elements",
                         mx_tstr(init).s, mx_tstr(src).s);
  }
  *out = *x;
  out->elem = result_elem(decl, 0, init->elem);
  return MX_OK;
}

static mx_status_t infer_sort(const mx_func_t *f, const mx_op_t *op, int32_t n_results,
                              mx_type_t *out) {
  if (op->n_operands < 1) return mx_infer_fail(op, "expected at least one operand");
  if (n_results != op->n_operands) {
    return mx_infer_fail(op, "expected %d results, got %d", op->n_operands, n_results);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, op->n_operands);
  if (st != MX_OK) return st;
  const mx_type_t *x0 = mx_infer_operand(f, op, 0);
  for (int32_t i = 0; i < op->n_operands; i++) {
    const mx_type_t *x = mx_infer_operand(f, op, i);
    if (!mx_type_same_shape(x, x0)) {
      return mx_infer_fail(op, "inputs must have equal shapes: %s vs %s", mx_tstr(x0).s,
                           mx_tstr(x).s);
    }
    out[i] = *x;
  }
  int64_t dim;
  if ((st = mx_infer_int(op, NULL, "dimension", false, -1, &dim)) != MX_OK) return st;
  if (dim < -x0->rank || dim >= x0->rank || x0->rank == 0) {
    return mx_infer_fail(op, "dimension %lld is out of range for %s", (long long)dim,
                         mx_tstr(x0).s);
  }
  return MX_OK;
}

static mx_status_t infer_map(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                             mx_type_t *out) {
  if (op->n_operands < 1) return mx_infer_fail(op, "expected at least one operand");
  mx_status_t st = mx_infer_need_tensors(f, op, 0, op->n_operands);
  if (st != MX_OK) return st;
  const mx_type_t *x0 = mx_infer_operand(f, op, 0);
  for (int32_t i = 1; i < op->n_operands; i++) {
    const mx_type_t *x = mx_infer_operand(f, op, i);
    if (!mx_type_same_shape(x, x0)) {
      return mx_infer_fail(op, "inputs must have equal shapes: %s vs %s", mx_tstr(x0).s,
                           mx_tstr(x).s);
    }
  }
  mx_ilist_t dims;
  bool has_dims;
  if ((st = mx_infer_ints(op, NULL, "dimensions", false, &dims, &has_dims)) != MX_OK) return st;
  for (int32_t i = 0; has_dims && i < dims.n; i++) {
    if (dims.n != x0->rank || dims.v[i] != i) {
      return mx_infer_fail(op, "dimensions must be [0, ..., rank - 1] for inputs %s",
                           mx_tstr(x0).s);
    }
  }
  if (has_dims && dims.n != x0->rank) {
    return mx_infer_fail(op, "dimensions must be [0, ..., rank - 1] for inputs %s", mx_tstr(x0).s);
  }
  *out = *x0;
  out->elem = result_elem(decl, 0, x0->elem);
  return MX_OK;
}

static mx_status_t infer_fft(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands != 1) return mx_infer_fail(op, "expected 1 operand, got %d", op->n_operands);
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 1);
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  const mx_attr_t *t = mx_op_attr(op, "fft_type");
  if (t == NULL || t->s == NULL) return mx_infer_fail(op, "missing required attribute 'fft_type'");
  mx_ilist_t len;
  if ((st = mx_infer_ints(op, NULL, "fft_length", true, &len, NULL)) != MX_OK) return st;
  if (len.n < 1 || len.n > 3 || len.n > x->rank) {
    return mx_infer_fail(op, "fft_length has %d entries; expected 1 to 3 and at most rank(%s)",
                         len.n, mx_tstr(x).s);
  }
  *out = *x;
  bool rfft = strcmp(t->s, "RFFT") == 0, irfft = strcmp(t->s, "IRFFT") == 0;
  if (!rfft && !irfft && strcmp(t->s, "FFT") != 0 && strcmp(t->s, "IFFT") != 0) {
    return mx_infer_fail(op, "unknown fft_type '%s'", t->s);
  }
  if (rfft) {
    if (x->elem != MX_ELEM_F32 && x->elem != MX_ELEM_F64) {
      return mx_infer_fail(op, "RFFT operand %s must have f32 or f64 elements", mx_tstr(x).s);
    }
    out->elem = x->elem == MX_ELEM_F32 ? MX_ELEM_C64 : MX_ELEM_C128;
    for (int32_t i = 0; i < len.n; i++) {
      int32_t d = x->rank - len.n + i;
      if (x->dims[d] != len.v[i]) {
        return mx_infer_fail(op, "operand %s dim %d must equal fft_length[%d] = %lld", mx_tstr(x).s,
                             d, i, (long long)len.v[i]);
      }
    }
    out->dims[x->rank - 1] = len.v[len.n - 1] == 0 ? 0 : len.v[len.n - 1] / 2 + 1;
    return MX_OK;
  }
  if (!mx_elem_is_complex(x->elem)) {
    return mx_infer_fail(op, "%s operand %s must have complex elements", t->s, mx_tstr(x).s);
  }
  if (irfft) {
    out->elem = x->elem == MX_ELEM_C64 ? MX_ELEM_F32 : MX_ELEM_F64;
    int64_t last = len.v[len.n - 1];
    for (int32_t i = 0; i + 1 < len.n; i++) {
      int32_t d = x->rank - len.n + i;
      if (x->dims[d] != len.v[i]) {
        return mx_infer_fail(op, "operand %s dim %d must equal fft_length[%d] = %lld", mx_tstr(x).s,
                             d, i, (long long)len.v[i]);
      }
    }
    if (x->dims[x->rank - 1] != (last == 0 ? 0 : last / 2 + 1)) {
      return mx_infer_fail(op,
                           "IRFFT operand %s must have last dimension fft_length / 2 + 1 = "
                           "%lld",
                           mx_tstr(x).s, (long long)(last == 0 ? 0 : last / 2 + 1));
    }
    out->dims[x->rank - 1] = last;
  }
  return MX_OK;
}

static mx_status_t infer_triangular_solve(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands != 2) {
    return mx_infer_fail(op, "expected 2 operands (a, b), got %d", op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 2);
  if (st != MX_OK) return st;
  const mx_type_t *a = mx_infer_operand(f, op, 0);
  const mx_type_t *b = mx_infer_operand(f, op, 1);
  if (a->rank < 2 || a->rank != b->rank || a->elem != b->elem ||
      a->dims[a->rank - 1] != a->dims[a->rank - 2]) {
    return mx_infer_fail(op, "a %s must be square matrices of b %s's rank and element type",
                         mx_tstr(a).s, mx_tstr(b).s);
  }
  const mx_attr_t *ta = mx_op_attr(op, "transpose_a");
  if (ta != NULL &&
      (ta->s == NULL || (strcmp(ta->s, "NO_TRANSPOSE") != 0 && strcmp(ta->s, "TRANSPOSE") != 0 &&
                         strcmp(ta->s, "ADJOINT") != 0))) {
    return mx_infer_fail(op, "transpose_a must be NO_TRANSPOSE, TRANSPOSE or ADJOINT");
  }
  int64_t left;
  if ((st = mx_infer_int(op, NULL, "left_side", false, 0, &left)) != MX_OK) return st;
  int32_t bd = left ? b->rank - 2 : b->rank - 1;
  bool ok = a->dims[a->rank - 1] == b->dims[bd];
  for (int32_t i = 0; i + 2 < a->rank; i++) ok = ok && a->dims[i] == b->dims[i];
  if (!ok) {
    return mx_infer_fail(op, "shapes of a %s and b %s do not match (left_side = %s)", mx_tstr(a).s,
                         mx_tstr(b).s, left ? "true" : "false");
  }
  *out = *b;
  return MX_OK;
}

mx_status_t mx_infer_compute_op(const mx_func_t *f, const mx_op_t *op, const mx_type_t *declared,
                                int32_t n_results, mx_type_t *out, bool *handled) {
  *handled = true;
  switch (op->code) {
    case MX_OP_REDUCE:
      return infer_reduce(f, op, declared, n_results, out);
    case MX_OP_REDUCE_WINDOW:
      return infer_reduce_window(f, op, declared, n_results, out);
    case MX_OP_SORT:
      return infer_sort(f, op, n_results, out);
    case MX_OP_DOT_GENERAL:
    case MX_OP_DOT:
    case MX_OP_CONVOLUTION:
    case MX_OP_SELECT_AND_SCATTER:
    case MX_OP_MAP:
    case MX_OP_FFT:
    case MX_OP_TRIANGULAR_SOLVE:
      break;
    default:
      *handled = false;
      return MX_OK;
  }
  if (n_results != 1) return mx_infer_fail(op, "expected 1 result, got %d", n_results);
  switch (op->code) {
    case MX_OP_DOT_GENERAL:
      return infer_dot_general(f, op, declared, out);
    case MX_OP_DOT:
      return infer_dot(f, op, declared, out);
    case MX_OP_CONVOLUTION:
      return infer_convolution(f, op, declared, out);
    case MX_OP_SELECT_AND_SCATTER:
      return infer_select_and_scatter(f, op, declared, out);
    case MX_OP_MAP:
      return infer_map(f, op, declared, out);
    case MX_OP_FFT:
      return infer_fft(f, op, out);
    default:
      return infer_triangular_solve(f, op, out);
  }
}
