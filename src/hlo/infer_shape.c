// Result-type inference for constants and shape ops (iota, broadcast_in_dim, reshape,
// transpose, slices, concatenate, pad, reverse, get_dimension_size).
#include "hlo/infer.h"

static mx_status_t need_operands(const mx_func_t *f, const mx_op_t *op, int32_t n,
                                 const char *what) {
  if (op->n_operands != n) {
    return mx_infer_fail(op, "expected %d operand%s (%s), got %d", n, n == 1 ? "" : "s", what,
                         op->n_operands);
  }
  return mx_infer_need_tensors(f, op, 0, n);
}

static mx_status_t need_tensor_decl(const mx_op_t *op, const mx_type_t *decl) {
  if (decl == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: result type required for inference",
                        mx_infer_opname(op));
  }
  if (decl->kind != MX_TYPE_TENSOR || decl->elem == MX_ELEM_INVALID) {
    return mx_infer_fail(op, "result type %s must be a tensor", mx_tstr(decl).s);
  }
  return MX_OK;
}

static mx_status_t need_len(const mx_op_t *op, const char *name, const mx_ilist_t *l,
                            const mx_type_t *t) {
  if (l->n != t->rank) {
    return mx_infer_fail(op, "%s has %d entries, expected rank(%s) = %d", name, l->n, mx_tstr(t).s,
                         t->rank);
  }
  return MX_OK;
}

static mx_status_t infer_constant(const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands != 0) return mx_infer_fail(op, "expected no operands");
  const mx_attr_t *v = mx_op_attr(op, "value");
  if (v == NULL) return mx_infer_fail(op, "missing required attribute 'value'");
  if (v->kind != MX_ATTR_DENSE || v->dense == NULL) {
    return mx_infer_fail(op, "attribute 'value' must be a dense tensor");
  }
  *out = v->dense->type;
  return MX_OK;
}

static mx_status_t infer_iota(const mx_op_t *op, const mx_type_t *decl, mx_type_t *out) {
  if (op->n_operands != 0) return mx_infer_fail(op, "expected no operands");
  mx_status_t st = need_tensor_decl(op, decl);
  if (st != MX_OK) return st;
  int64_t dim;
  if ((st = mx_infer_int(op, NULL, "iota_dimension", true, 0, &dim)) != MX_OK) return st;
  if (dim < 0 || dim >= decl->rank) {
    return mx_infer_fail(op, "iota_dimension %lld is out of range for result type %s",
                         (long long)dim, mx_tstr(decl).s);
  }
  if (mx_elem_is_bool(decl->elem)) {
    return mx_infer_fail(op,
                         "result type %s must have integer, floating-point or complex "
                         "elements",
                         mx_tstr(decl).s);
  }
  *out = *decl;
  return MX_OK;
}

static mx_status_t infer_broadcast(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                                   mx_type_t *out) {
  mx_status_t st = need_operands(f, op, 1, "operand");
  if (st != MX_OK) return st;
  if ((st = need_tensor_decl(op, decl)) != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  mx_ilist_t bd;
  if ((st = mx_infer_ints(op, NULL, "broadcast_dimensions", true, &bd, NULL)) != MX_OK) {
    return st;
  }
  if ((st = need_len(op, "broadcast_dimensions", &bd, x)) != MX_OK) return st;
  if ((st = mx_infer_check_dims(op, "broadcast_dimensions", &bd, decl->rank, false)) != MX_OK) {
    return st;
  }
  for (int32_t i = 0; i < bd.n; i++) {
    int64_t rd = decl->dims[bd.v[i]];
    if (x->dims[i] != 1 && x->dims[i] != rd) {
      return mx_infer_fail(
          op, "operand %s dim %d = %lld must be 1 or equal result %s dim %lld = %lld", mx_tstr(x).s,
          i, (long long)x->dims[i], mx_tstr(decl).s, (long long)bd.v[i], (long long)rd);
    }
  }
  *out = *decl;
  out->elem = x->elem;
  return MX_OK;
}

static mx_status_t infer_reshape(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                                 mx_type_t *out) {
  mx_status_t st = need_operands(f, op, 1, "operand");
  if (st != MX_OK) return st;
  if ((st = need_tensor_decl(op, decl)) != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  if (mx_type_numel(x) != mx_type_numel(decl)) {
    return mx_infer_fail(op, "element counts differ: operand %s has %lld, result %s has %lld",
                         mx_tstr(x).s, (long long)mx_type_numel(x), mx_tstr(decl).s,
                         (long long)mx_type_numel(decl));
  }
  *out = *decl;
  out->elem = x->elem;
  return MX_OK;
}

static mx_status_t infer_transpose(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  mx_status_t st = need_operands(f, op, 1, "operand");
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  mx_ilist_t p;
  if ((st = mx_infer_ints(op, NULL, "permutation", true, &p, NULL)) != MX_OK) return st;
  if ((st = need_len(op, "permutation", &p, x)) != MX_OK) return st;
  if ((st = mx_infer_check_dims(op, "permutation", &p, x->rank, false)) != MX_OK) return st;
  *out = *x;
  for (int32_t i = 0; i < p.n; i++) out->dims[i] = x->dims[p.v[i]];
  return MX_OK;
}

static mx_status_t infer_slice(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  mx_status_t st = need_operands(f, op, 1, "operand");
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  mx_ilist_t s, l, k;
  bool has_strides;
  if ((st = mx_infer_ints(op, NULL, "start_indices", true, &s, NULL)) != MX_OK) return st;
  if ((st = mx_infer_ints(op, NULL, "limit_indices", true, &l, NULL)) != MX_OK) return st;
  if ((st = mx_infer_ints(op, NULL, "strides", false, &k, &has_strides)) != MX_OK) return st;
  if ((st = need_len(op, "start_indices", &s, x)) != MX_OK) return st;
  if ((st = need_len(op, "limit_indices", &l, x)) != MX_OK) return st;
  if (has_strides && (st = need_len(op, "strides", &k, x)) != MX_OK) return st;
  *out = *x;
  for (int32_t i = 0; i < x->rank; i++) {
    int64_t stride = has_strides ? k.v[i] : 1;
    if (s.v[i] < 0 || s.v[i] > l.v[i] || l.v[i] > x->dims[i]) {
      return mx_infer_fail(
          op, "dim %d: need 0 <= start %lld <= limit %lld <= size %lld of operand %s", i,
          (long long)s.v[i], (long long)l.v[i], (long long)x->dims[i], mx_tstr(x).s);
    }
    if (stride <= 0) {
      return mx_infer_fail(op, "dim %d: stride %lld must be positive", i, (long long)stride);
    }
    out->dims[i] = l.v[i] == s.v[i] ? 0 : (l.v[i] - s.v[i] - 1) / stride + 1;
  }
  return MX_OK;
}

static mx_status_t check_start_indices(const mx_func_t *f, const mx_op_t *op, int32_t first,
                                       const mx_type_t *x) {
  int32_t n = op->n_operands - first;
  if (n != x->rank) {
    return mx_infer_fail(op, "expected %d start indices (rank of %s), got %d", x->rank,
                         mx_tstr(x).s, n < 0 ? 0 : n);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, first, n);
  if (st != MX_OK) return st;
  const mx_type_t *t0 = n > 0 ? mx_infer_operand(f, op, first) : NULL;
  for (int32_t i = 0; i < n; i++) {
    const mx_type_t *t = mx_infer_operand(f, op, first + i);
    if (t->rank != 0 || !mx_elem_is_int(t->elem)) {
      return mx_infer_fail(op, "start index %d has type %s, expected an integer scalar", i,
                           mx_tstr(t).s);
    }
    if (t->elem != t0->elem) {
      return mx_infer_fail(op, "start indices have different types %s and %s", mx_tstr(t0).s,
                           mx_tstr(t).s);
    }
  }
  return MX_OK;
}

static mx_status_t infer_dynamic_slice(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands < 1) return mx_infer_fail(op, "expected an operand");
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 1);
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  if ((st = check_start_indices(f, op, 1, x)) != MX_OK) return st;
  mx_ilist_t sz;
  if ((st = mx_infer_ints(op, NULL, "slice_sizes", true, &sz, NULL)) != MX_OK) return st;
  if ((st = need_len(op, "slice_sizes", &sz, x)) != MX_OK) return st;
  *out = *x;
  for (int32_t i = 0; i < x->rank; i++) {
    if (sz.v[i] < 0 || sz.v[i] > x->dims[i]) {
      return mx_infer_fail(op, "slice_sizes[%d] = %lld is out of range for operand %s", i,
                           (long long)sz.v[i], mx_tstr(x).s);
    }
    out->dims[i] = sz.v[i];
  }
  return MX_OK;
}

static mx_status_t infer_dynamic_update_slice(const mx_func_t *f, const mx_op_t *op,
                                              mx_type_t *out) {
  if (op->n_operands < 2) return mx_infer_fail(op, "expected operand and update");
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 2);
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  const mx_type_t *u = mx_infer_operand(f, op, 1);
  if (u->elem != x->elem || u->rank != x->rank) {
    return mx_infer_fail(op, "update type %s must have the rank and element type of operand %s",
                         mx_tstr(u).s, mx_tstr(x).s);
  }
  for (int32_t i = 0; i < x->rank; i++) {
    if (u->dims[i] > x->dims[i]) {
      return mx_infer_fail(op, "update %s dim %d = %lld exceeds operand %s dim %d = %lld",
                           mx_tstr(u).s, i, (long long)u->dims[i], mx_tstr(x).s, i,
                           (long long)x->dims[i]);
    }
  }
  if ((st = check_start_indices(f, op, 2, x)) != MX_OK) return st;
  *out = *x;
  return MX_OK;
}

static mx_status_t infer_concatenate(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands < 1) return mx_infer_fail(op, "expected at least one operand");
  mx_status_t st = mx_infer_need_tensors(f, op, 0, op->n_operands);
  if (st != MX_OK) return st;
  int64_t dim;
  if ((st = mx_infer_int(op, NULL, "dimension", true, 0, &dim)) != MX_OK) return st;
  const mx_type_t *x0 = mx_infer_operand(f, op, 0);
  if (dim < 0 || dim >= x0->rank) {
    return mx_infer_fail(op, "dimension %lld is out of range for operand %s", (long long)dim,
                         mx_tstr(x0).s);
  }
  *out = *x0;
  for (int32_t i = 1; i < op->n_operands; i++) {
    const mx_type_t *x = mx_infer_operand(f, op, i);
    if (x->elem != x0->elem || x->rank != x0->rank) {
      return mx_infer_fail(op, "operand %d type %s must have the rank and element type of %s", i,
                           mx_tstr(x).s, mx_tstr(x0).s);
    }
    for (int32_t d = 0; d < x0->rank; d++) {
      if (d != dim && x->dims[d] != x0->dims[d]) {
        return mx_infer_fail(op,
                             "operand %d type %s differs from %s in dim %d (concatenating dim "
                             "%lld)",
                             i, mx_tstr(x).s, mx_tstr(x0).s, d, (long long)dim);
      }
    }
    if (__builtin_add_overflow(out->dims[dim], x->dims[dim], &out->dims[dim])) {
      return mx_infer_fail(op, "result dimension %lld overflows", (long long)dim);
    }
  }
  return MX_OK;
}

static mx_status_t infer_pad(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  mx_status_t st = need_operands(f, op, 2, "operand, padding_value");
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  const mx_type_t *pv = mx_infer_operand(f, op, 1);
  if (pv->rank != 0 || pv->elem != x->elem) {
    return mx_infer_fail(op, "padding value type %s must be a scalar of operand %s's element type",
                         mx_tstr(pv).s, mx_tstr(x).s);
  }
  mx_ilist_t lo, hi, in;
  bool has_in;
  if ((st = mx_infer_ints(op, NULL, "edge_padding_low", true, &lo, NULL)) != MX_OK) return st;
  if ((st = mx_infer_ints(op, NULL, "edge_padding_high", true, &hi, NULL)) != MX_OK) return st;
  if ((st = mx_infer_ints(op, NULL, "interior_padding", false, &in, &has_in)) != MX_OK) return st;
  if ((st = need_len(op, "edge_padding_low", &lo, x)) != MX_OK) return st;
  if ((st = need_len(op, "edge_padding_high", &hi, x)) != MX_OK) return st;
  if (has_in && (st = need_len(op, "interior_padding", &in, x)) != MX_OK) return st;
  *out = *x;
  for (int32_t i = 0; i < x->rank; i++) {
    int64_t interior = has_in ? in.v[i] : 0;
    if (interior < 0) {
      return mx_infer_fail(op, "interior_padding[%d] = %lld must be >= 0", i, (long long)interior);
    }
    int64_t d = x->dims[i], r = 0;
    if (__builtin_mul_overflow(d > 0 ? d - 1 : 0, interior, &r) ||
        __builtin_add_overflow(r, d, &r) || __builtin_add_overflow(r, lo.v[i], &r) ||
        __builtin_add_overflow(r, hi.v[i], &r)) {
      return mx_infer_fail(op, "dim %d: padded size overflows", i);
    }
    if (r < 0) {
      return mx_infer_fail(op, "dim %d of operand %s would have negative size %lld", i,
                           mx_tstr(x).s, (long long)r);
    }
    out->dims[i] = r;
  }
  return MX_OK;
}

static mx_status_t infer_reverse(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  mx_status_t st = need_operands(f, op, 1, "operand");
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  mx_ilist_t d;
  if ((st = mx_infer_ints(op, NULL, "dimensions", true, &d, NULL)) != MX_OK) return st;
  if ((st = mx_infer_check_dims(op, "dimensions", &d, x->rank, false)) != MX_OK) return st;
  *out = *x;
  return MX_OK;
}

static mx_status_t infer_get_dimension_size(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  mx_status_t st = need_operands(f, op, 1, "operand");
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  int64_t dim;
  if ((st = mx_infer_int(op, NULL, "dimension", true, 0, &dim)) != MX_OK) return st;
  if (dim < 0 || dim >= x->rank) {
    return mx_infer_fail(op, "dimension %lld is out of range for operand %s", (long long)dim,
                         mx_tstr(x).s);
  }
  *out = mx_type_scalar(MX_ELEM_I32);
  return MX_OK;
}

mx_status_t mx_infer_shape_op(const mx_func_t *f, const mx_op_t *op, const mx_type_t *declared,
                              int32_t n_results, mx_type_t *out, bool *handled) {
  *handled = true;
  switch (op->code) {
    case MX_OP_CONSTANT:
    case MX_OP_IOTA:
    case MX_OP_BROADCAST_IN_DIM:
    case MX_OP_RESHAPE:
    case MX_OP_TRANSPOSE:
    case MX_OP_SLICE:
    case MX_OP_DYNAMIC_SLICE:
    case MX_OP_DYNAMIC_UPDATE_SLICE:
    case MX_OP_CONCATENATE:
    case MX_OP_PAD:
    case MX_OP_REVERSE:
    case MX_OP_GET_DIMENSION_SIZE:
      break;
    default:
      *handled = false;
      return MX_OK;
  }
  if (n_results != 1) return mx_infer_fail(op, "expected 1 result, got %d", n_results);
  switch (op->code) {
    case MX_OP_CONSTANT:
      return infer_constant(op, out);
    case MX_OP_IOTA:
      return infer_iota(op, declared, out);
    case MX_OP_BROADCAST_IN_DIM:
      return infer_broadcast(f, op, declared, out);
    case MX_OP_RESHAPE:
      return infer_reshape(f, op, declared, out);
    case MX_OP_TRANSPOSE:
      return infer_transpose(f, op, out);
    case MX_OP_SLICE:
      return infer_slice(f, op, out);
    case MX_OP_DYNAMIC_SLICE:
      return infer_dynamic_slice(f, op, out);
    case MX_OP_DYNAMIC_UPDATE_SLICE:
      return infer_dynamic_update_slice(f, op, out);
    case MX_OP_CONCATENATE:
      return infer_concatenate(f, op, out);
    case MX_OP_PAD:
      return infer_pad(f, op, out);
    case MX_OP_REVERSE:
      return infer_reverse(f, op, out);
    default:
      return infer_get_dimension_size(f, op, out);
  }
}
