// Reference interpreter kernels for data-movement ops: iota, broadcast_in_dim, reshape,
// transpose, slice, dynamic_slice, dynamic_update_slice, concatenate, pad, reverse,
// get_dimension_size. They move whole elements (mx_elem_size bytes), so every element type,
// complex included, is handled by the same code. Every attribute and shape is validated here
// because modules built in memory may not have been verified.
#include <inttypes.h>
#include <string.h>

#include "hlo/interp_internal.h"

static mx_status_t shape_err(const mx_op_t *op, const char *msg) {
  return mx_error_set(MX_ERR_RUNTIME, "%s: %s", mx_opcode_name(op->code), msg);
}

static mx_status_t need_counts(const mx_op_t *op, int32_t n_in, int32_t n_out) {
  if ((n_in >= 0 && op->n_operands != n_in) || op->n_results != n_out)
    return shape_err(op, "wrong number of operands or results");
  return MX_OK;
}

// Reads a dimension-list attribute; `n_want` >= 0 requires that length.
static mx_status_t get_dims_attr(const mx_op_t *op, const char *name, int32_t n_want,
                                 const int64_t **v) {
  const mx_attr_t *a = mx_op_attr(op, name);
  int32_t n = a ? mx_attr_get_i64s(a, v) : -1;
  if (n < 0)
    return mx_error_set(MX_ERR_RUNTIME, "%s: missing or malformed `%s`", mx_opcode_name(op->code),
                        name);
  if (n_want >= 0 && n != n_want)
    return mx_error_set(MX_ERR_RUNTIME, "%s: `%s` has %d entries, expected %d",
                        mx_opcode_name(op->code), name, (int)n, (int)n_want);
  if (n == 0) *v = NULL;
  return MX_OK;
}

static mx_status_t get_int_attr(const mx_op_t *op, const char *name, int64_t *v) {
  const mx_attr_t *a = mx_op_attr(op, name);
  if (!a || a->kind != MX_ATTR_INT)
    return mx_error_set(MX_ERR_RUNTIME, "%s: missing integer `%s`", mx_opcode_name(op->code), name);
  *v = a->i;
  return MX_OK;
}

static void row_major_strides(const mx_type_t *t, int64_t *s) {
  int64_t acc = 1;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    s[d] = acc;
    acc *= t->dims[d];
  }
}

static bool storage_ok(const mx_tensor_t *t) {
  return t->type.kind == MX_TYPE_TENSOR && (t->data || mx_type_nbytes(&t->type) == 0) &&
         t->nbytes >= mx_type_nbytes(&t->type);
}

// Generic gather-by-strides: out[i] = in[base + sum_d idx_d * stride_d] over out's shape, where
// stride_d (in elements) may be zero (broadcast) or negative (reverse).
static void strided_copy(const mx_tensor_t *in, mx_tensor_t *out, int64_t base,
                         const int64_t *stride) {
  const mx_type_t *ot = &out->type;
  size_t es = mx_elem_size(ot->elem);
  int64_t n = mx_type_numel(ot);
  if (n == 0) return;
  int32_t r = ot->rank;
  if (r == 0) {
    memcpy(out->data, in->data + (size_t)base * es, es);
    return;
  }
  int64_t idx[MX_MAX_RANK] = {0};
  int64_t inner = ot->dims[r - 1];
  int64_t s_in = stride[r - 1];
  int64_t off = base;
  uint8_t *dst = out->data;
  for (int64_t done = 0; done < n; done += inner) {
    if (s_in == 1) {
      memcpy(dst, in->data + (size_t)off * es, (size_t)inner * es);
      dst += (size_t)inner * es;
    } else {
      int64_t o = off;
      for (int64_t k = 0; k < inner; k++, o += s_in, dst += es)
        memcpy(dst, in->data + (size_t)o * es, es);
    }
    // Advance the outer index (dims 0 .. r-2).
    for (int32_t d = r - 2; d >= 0; d--) {
      idx[d]++;
      off += stride[d];
      if (idx[d] < ot->dims[d]) break;
      off -= stride[d] * idx[d];
      idx[d] = 0;
    }
  }
}

// Stores integer `v` into element i of `t` in its element type (iota, get_dimension_size).
static void store_int(mx_tensor_t *t, int64_t i, int64_t v) {
  mx_elem_type_t et = t->type.elem;
  size_t es = mx_elem_size(et);
  uint8_t *p = t->data + (size_t)i * es;
  if (mx_elem_is_complex(et)) {
    if (et == MX_ELEM_C64) {
      float re = (float)v, im = 0.0f;
      memcpy(p, &re, 4);
      memcpy(p + 4, &im, 4);
    } else {
      double re = (double)v, im = 0.0;
      memcpy(p, &re, 8);
      memcpy(p + 8, &im, 8);
    }
  } else if (mx_elem_is_float(et)) {
    uint64_t bits = mx_float_encode(et, (double)v);
    switch (es) {
      case 1: {
        uint8_t x = (uint8_t)bits;
        memcpy(p, &x, 1);
        break;
      }
      case 2: {
        uint16_t x = (uint16_t)bits;
        memcpy(p, &x, 2);
        break;
      }
      case 4: {
        uint32_t x = (uint32_t)bits;
        memcpy(p, &x, 4);
        break;
      }
      default:
        memcpy(p, &bits, 8);
        break;
    }
  } else {
    mx_tensor_set_i64(t, i, v);
  }
}

static mx_status_t op_iota(const mx_op_t *op, mx_tensor_t *out) {
  mx_status_t st = need_counts(op, 0, 1);
  if (st) return st;
  int64_t dim = 0;
  if ((st = get_int_attr(op, "iota_dimension", &dim))) return st;
  const mx_type_t *t = &out->type;
  if (dim < 0 || dim >= t->rank) return shape_err(op, "iota_dimension out of range");
  int64_t s[MX_MAX_RANK];
  row_major_strides(t, s);
  int64_t n = mx_type_numel(t);
  for (int64_t i = 0; i < n; i++) store_int(out, i, (i / s[dim]) % t->dims[dim]);
  return MX_OK;
}

static mx_status_t op_broadcast_in_dim(const mx_op_t *op, const mx_tensor_t *in, mx_tensor_t *out) {
  const mx_type_t *it = &in->type, *ot = &out->type;
  const int64_t *bd;
  mx_status_t st = get_dims_attr(op, "broadcast_dimensions", it->rank, &bd);
  if (st) return st;
  int64_t is[MX_MAX_RANK], stride[MX_MAX_RANK] = {0};
  bool used[MX_MAX_RANK] = {false};
  row_major_strides(it, is);
  for (int32_t i = 0; i < it->rank; i++) {
    int64_t d = bd[i];
    if (d < 0 || d >= ot->rank || used[d]) return shape_err(op, "bad broadcast dimension");
    used[d] = true;
    if (it->dims[i] == ot->dims[d])
      stride[d] = it->dims[i] == 1 ? 0 : is[i];
    else if (it->dims[i] == 1)
      stride[d] = 0;
    else
      return shape_err(op, "operand dimension is neither 1 nor the result dimension");
  }
  strided_copy(in, out, 0, stride);
  return MX_OK;
}

static mx_status_t op_transpose(const mx_op_t *op, const mx_tensor_t *in, mx_tensor_t *out) {
  const mx_type_t *it = &in->type, *ot = &out->type;
  const int64_t *perm;
  if (ot->rank != it->rank) return shape_err(op, "result rank differs from operand rank");
  mx_status_t st = get_dims_attr(op, "permutation", it->rank, &perm);
  if (st) return st;
  int64_t is[MX_MAX_RANK], stride[MX_MAX_RANK];
  bool seen[MX_MAX_RANK] = {false};
  row_major_strides(it, is);
  for (int32_t i = 0; i < it->rank; i++) {
    int64_t p = perm[i];
    if (p < 0 || p >= it->rank || seen[p]) return shape_err(op, "invalid permutation");
    seen[p] = true;
    if (ot->dims[i] != it->dims[p]) return shape_err(op, "result shape does not match permutation");
    stride[i] = is[p];
  }
  strided_copy(in, out, 0, stride);
  return MX_OK;
}

static mx_status_t op_slice(const mx_op_t *op, const mx_tensor_t *in, mx_tensor_t *out) {
  const mx_type_t *it = &in->type, *ot = &out->type;
  if (ot->rank != it->rank) return shape_err(op, "result rank differs from operand rank");
  const int64_t *start, *limit, *strides = NULL;
  mx_status_t st = get_dims_attr(op, "start_indices", it->rank, &start);
  if (!st) st = get_dims_attr(op, "limit_indices", it->rank, &limit);
  if (!st && mx_op_attr(op, "strides")) st = get_dims_attr(op, "strides", it->rank, &strides);
  if (st) return st;
  int64_t is[MX_MAX_RANK], stride[MX_MAX_RANK], base = 0;
  row_major_strides(it, is);
  for (int32_t d = 0; d < it->rank; d++) {
    int64_t s = strides ? strides[d] : 1;
    if (s <= 0 || start[d] < 0 || limit[d] > it->dims[d] || start[d] > limit[d])
      return shape_err(op, "slice bounds out of range");
    if (ot->dims[d] != (limit[d] - start[d] + s - 1) / s)
      return shape_err(op, "result shape does not match the slice");
    base += start[d] * is[d];
    stride[d] = s * is[d];
  }
  strided_copy(in, out, base, stride);
  return MX_OK;
}

static mx_status_t op_reverse(const mx_op_t *op, const mx_tensor_t *in, mx_tensor_t *out) {
  const mx_type_t *it = &in->type;
  if (!mx_type_equal(it, &out->type)) return shape_err(op, "result type differs from operand");
  const mx_attr_t *a = mx_op_attr(op, "dimensions");
  const int64_t *dims = NULL;
  int32_t nd = a ? mx_attr_get_i64s(a, &dims) : -1;
  if (nd < 0) return shape_err(op, "missing or malformed `dimensions`");
  int64_t is[MX_MAX_RANK], stride[MX_MAX_RANK], base = 0;
  bool rev[MX_MAX_RANK] = {false};
  row_major_strides(it, is);
  for (int32_t i = 0; i < nd; i++) {
    if (dims[i] < 0 || dims[i] >= it->rank || rev[dims[i]]) return shape_err(op, "bad dimension");
    rev[dims[i]] = true;
  }
  for (int32_t d = 0; d < it->rank; d++) {
    if (rev[d] && it->dims[d] > 0) {
      base += (it->dims[d] - 1) * is[d];
      stride[d] = -is[d];
    } else {
      stride[d] = is[d];
    }
  }
  strided_copy(in, out, base, stride);
  return MX_OK;
}

static mx_status_t op_reshape(const mx_op_t *op, const mx_tensor_t *in, mx_tensor_t *out) {
  if (in->type.elem != out->type.elem || mx_type_numel(&in->type) != mx_type_numel(&out->type))
    return shape_err(op, "element count or type differs");
  size_t n = mx_type_nbytes(&out->type);
  if (n) memcpy(out->data, in->data, n);
  return MX_OK;
}

static mx_status_t op_concatenate(const mx_op_t *op, const mx_tensor_t *const *in,
                                  mx_tensor_t *out) {
  const mx_type_t *ot = &out->type;
  int64_t dim = 0;
  mx_status_t st = get_int_attr(op, "dimension", &dim);
  if (st) return st;
  if (dim < 0 || dim >= ot->rank) return shape_err(op, "dimension out of range");
  int64_t total = 0;
  for (int32_t k = 0; k < op->n_operands; k++) {
    const mx_type_t *t = &in[k]->type;
    if (t->rank != ot->rank || t->elem != ot->elem) return shape_err(op, "operand type mismatch");
    for (int32_t d = 0; d < ot->rank; d++)
      if (d != dim && t->dims[d] != ot->dims[d]) return shape_err(op, "operand shape mismatch");
    total += t->dims[dim];
  }
  if (total != ot->dims[dim]) return shape_err(op, "result dimension is not the sum of operands");
  size_t es = mx_elem_size(ot->elem);
  int64_t outer = 1, inner = 1;
  for (int32_t d = 0; d < dim; d++) outer *= ot->dims[d];
  for (int32_t d = (int32_t)dim + 1; d < ot->rank; d++) inner *= ot->dims[d];
  uint8_t *dst = out->data;
  for (int64_t o = 0; o < outer; o++)
    for (int32_t k = 0; k < op->n_operands; k++) {
      size_t chunk = (size_t)(in[k]->type.dims[dim] * inner) * es;
      if (chunk) memcpy(dst, in[k]->data + (size_t)o * chunk, chunk);
      dst += chunk;
    }
  return MX_OK;
}

static mx_status_t op_pad(const mx_op_t *op, const mx_tensor_t *const *in, mx_tensor_t *out) {
  const mx_tensor_t *x = in[0], *pv = in[1];
  const mx_type_t *it = &x->type, *ot = &out->type;
  if (pv->type.rank != 0 || pv->type.elem != it->elem || ot->elem != it->elem ||
      ot->rank != it->rank)
    return shape_err(op, "operand, padding value and result types do not agree");
  const int64_t *lo, *hi, *inter;
  mx_status_t st = get_dims_attr(op, "edge_padding_low", it->rank, &lo);
  if (!st) st = get_dims_attr(op, "edge_padding_high", it->rank, &hi);
  if (!st) st = get_dims_attr(op, "interior_padding", it->rank, &inter);
  if (st) return st;
  for (int32_t d = 0; d < it->rank; d++) {
    int64_t n = it->dims[d];
    if (inter[d] < 0) return shape_err(op, "negative interior padding");
    int64_t want = lo[d] + hi[d] + n + (n > 0 ? (n - 1) * inter[d] : 0);
    if (want != ot->dims[d]) return shape_err(op, "result shape does not match the padding");
  }
  size_t es = mx_elem_size(ot->elem);
  int64_t n_out = mx_type_numel(ot), n_in = mx_type_numel(it);
  for (int64_t i = 0; i < n_out; i++) memcpy(out->data + (size_t)i * es, pv->data, es);
  if (n_in == 0 || n_out == 0) return MX_OK;
  int64_t os[MX_MAX_RANK];
  row_major_strides(ot, os);
  int64_t idx[MX_MAX_RANK] = {0};
  for (int64_t i = 0; i < n_in; i++) {
    int64_t off = 0;
    bool inside = true;
    for (int32_t d = 0; d < it->rank; d++) {
      int64_t p = lo[d] + idx[d] * (inter[d] + 1);
      if (p < 0 || p >= ot->dims[d]) {
        inside = false;
        break;
      }
      off += p * os[d];
    }
    if (inside) memcpy(out->data + (size_t)off * es, x->data + (size_t)i * es, es);
    for (int32_t d = it->rank - 1; d >= 0; d--) {
      if (++idx[d] < it->dims[d]) break;
      idx[d] = 0;
    }
  }
  return MX_OK;
}

// Start indices of dynamic_slice / dynamic_update_slice: one integer scalar operand per
// dimension (or, in the legacy form, a single 1-D tensor), clamped into [0, dim - size].
static mx_status_t dynamic_starts(const mx_op_t *op, const mx_tensor_t *const *idx, int32_t n_idx,
                                  const mx_type_t *operand, const int64_t *sizes, int64_t *start) {
  int32_t r = operand->rank;
  bool legacy = n_idx == 1 && idx[0]->type.rank == 1;
  if (legacy) {
    if (idx[0]->type.dims[0] != r) return shape_err(op, "start index vector has the wrong length");
  } else if (n_idx != r) {
    return shape_err(op, "needs one start index per operand dimension");
  }
  for (int32_t d = 0; d < r; d++) {
    const mx_tensor_t *t = legacy ? idx[0] : idx[d];
    if (!mx_elem_is_int(t->type.elem) || (!legacy && t->type.rank != 0) || !storage_ok(t))
      return shape_err(op, "start indices must be integer scalars");
    int64_t s;
    if (mx_elem_is_unsigned(t->type.elem)) {
      uint64_t u = mx_tensor_get_u64(t, legacy ? d : 0);
      s = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
    } else {
      s = mx_tensor_get_i64(t, legacy ? d : 0);
    }
    int64_t hi = operand->dims[d] - sizes[d];
    if (s > hi) s = hi;
    if (s < 0) s = 0;
    start[d] = s;
  }
  return MX_OK;
}

static mx_status_t op_dynamic_slice(const mx_op_t *op, const mx_tensor_t *const *in,
                                    mx_tensor_t *out) {
  const mx_type_t *it = &in[0]->type, *ot = &out->type;
  if (ot->rank != it->rank || ot->elem != it->elem) return shape_err(op, "result type mismatch");
  const int64_t *sizes;
  mx_status_t st = get_dims_attr(op, "slice_sizes", it->rank, &sizes);
  if (st) return st;
  for (int32_t d = 0; d < it->rank; d++)
    if (sizes[d] < 0 || sizes[d] > it->dims[d] || sizes[d] != ot->dims[d])
      return shape_err(op, "slice_sizes do not fit the operand or result");
  int64_t start[MX_MAX_RANK], is[MX_MAX_RANK], base = 0;
  st = dynamic_starts(op, in + 1, op->n_operands - 1, it, sizes, start);
  if (st) return st;
  row_major_strides(it, is);
  for (int32_t d = 0; d < it->rank; d++) base += start[d] * is[d];
  strided_copy(in[0], out, base, is);
  return MX_OK;
}

static mx_status_t op_dynamic_update_slice(const mx_op_t *op, const mx_tensor_t *const *in,
                                           mx_tensor_t *out) {
  const mx_tensor_t *x = in[0], *upd = in[1];
  const mx_type_t *it = &x->type, *ut = &upd->type;
  if (!mx_type_equal(it, &out->type) || ut->rank != it->rank || ut->elem != it->elem)
    return shape_err(op, "operand, update and result types do not agree");
  for (int32_t d = 0; d < it->rank; d++)
    if (ut->dims[d] > it->dims[d]) return shape_err(op, "update is larger than the operand");
  int64_t start[MX_MAX_RANK];
  mx_status_t st = dynamic_starts(op, in + 2, op->n_operands - 2, it, ut->dims, start);
  if (st) return st;
  size_t es = mx_elem_size(it->elem);
  size_t nb = mx_type_nbytes(it);
  if (nb) memcpy(out->data, x->data, nb);
  int64_t nu = mx_type_numel(ut);
  if (nu == 0) return MX_OK;
  int64_t os[MX_MAX_RANK];
  row_major_strides(it, os);
  int32_t r = ut->rank;
  if (r == 0) {
    memcpy(out->data, upd->data, es);
    return MX_OK;
  }
  // Copy the update row by row (its innermost dimension is contiguous in both tensors).
  int64_t idx[MX_MAX_RANK] = {0};
  int64_t inner = ut->dims[r - 1];
  const uint8_t *src = upd->data;
  for (int64_t done = 0; done < nu; done += inner) {
    int64_t off = 0;
    for (int32_t d = 0; d < r; d++) off += (start[d] + idx[d]) * os[d];
    memcpy(out->data + (size_t)off * es, src, (size_t)inner * es);
    src += (size_t)inner * es;
    for (int32_t d = r - 2; d >= 0; d--) {
      if (++idx[d] < ut->dims[d]) break;
      idx[d] = 0;
    }
  }
  return MX_OK;
}

static mx_status_t op_get_dimension_size(const mx_op_t *op, const mx_tensor_t *in,
                                         mx_tensor_t *out) {
  int64_t dim = 0;
  mx_status_t st = get_int_attr(op, "dimension", &dim);
  if (st) return st;
  if (dim < 0 || dim >= in->type.rank) return shape_err(op, "dimension out of range");
  if (out->type.rank != 0 || mx_type_numel(&out->type) != 1)
    return shape_err(op, "result must be a scalar");
  store_int(out, 0, in->type.dims[dim]);
  return MX_OK;
}

mx_status_t mx_interp_shape(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                            const mx_tensor_t *const *in, mx_tensor_t *out) {
  (void)ip;
  (void)f;
  for (int32_t i = 0; i < op->n_operands; i++)
    if (!storage_ok(in[i])) return shape_err(op, "operand storage does not match its type");
  for (int32_t i = 0; i < op->n_results; i++)
    if (!storage_ok(&out[i])) return shape_err(op, "result storage does not match its type");
  mx_status_t st;
  switch (op->code) {
    case MX_OP_IOTA:
      return op_iota(op, out);
    case MX_OP_BROADCAST_IN_DIM:
      if ((st = need_counts(op, 1, 1))) return st;
      if (in[0]->type.elem != out->type.elem) return shape_err(op, "element type mismatch");
      return op_broadcast_in_dim(op, in[0], out);
    case MX_OP_RESHAPE:
      if ((st = need_counts(op, 1, 1))) return st;
      return op_reshape(op, in[0], out);
    case MX_OP_TRANSPOSE:
      if ((st = need_counts(op, 1, 1))) return st;
      if (in[0]->type.elem != out->type.elem) return shape_err(op, "element type mismatch");
      return op_transpose(op, in[0], out);
    case MX_OP_SLICE:
      if ((st = need_counts(op, 1, 1))) return st;
      if (in[0]->type.elem != out->type.elem) return shape_err(op, "element type mismatch");
      return op_slice(op, in[0], out);
    case MX_OP_DYNAMIC_SLICE:
      if (op->n_operands < 1 || op->n_results != 1) return need_counts(op, 1, 1);
      return op_dynamic_slice(op, in, out);
    case MX_OP_DYNAMIC_UPDATE_SLICE:
      if (op->n_operands < 2 || op->n_results != 1) return need_counts(op, 2, 1);
      return op_dynamic_update_slice(op, in, out);
    case MX_OP_CONCATENATE:
      if (op->n_operands < 1 || op->n_results != 1) return need_counts(op, 1, 1);
      return op_concatenate(op, in, out);
    case MX_OP_PAD:
      if ((st = need_counts(op, 2, 1))) return st;
      return op_pad(op, in, out);
    case MX_OP_REVERSE:
      if ((st = need_counts(op, 1, 1))) return st;
      return op_reverse(op, in[0], out);
    case MX_OP_GET_DIMENSION_SIZE:
      if ((st = need_counts(op, 1, 1))) return st;
      return op_get_dimension_size(op, in[0], out);
    default:
      return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s",
                          op->name ? op->name : mx_opcode_name(op->code));
  }
}
