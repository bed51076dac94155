// Reference interpreter: dispatcher for the compute kernels and their shared helpers
// (index arithmetic, attribute readers, accumulation values, body invocation).
#include "hlo/interp_compute.h"

#include <stdlib.h>
#include <string.h>

mx_status_t mx_interp_compute(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                              const mx_tensor_t *const *in, mx_tensor_t *out) {
  switch (op->code) {
    case MX_OP_DOT_GENERAL:
      return mx_cp_dot_general(f, op, in, out);
    case MX_OP_DOT:
      return mx_cp_dot(f, op, in, out);
    case MX_OP_CONVOLUTION:
      return mx_cp_convolution(f, op, in, out);
    case MX_OP_REDUCE:
      return mx_cp_reduce(ip, f, op, in, out);
    case MX_OP_REDUCE_WINDOW:
      return mx_cp_reduce_window(ip, f, op, in, out);
    case MX_OP_SELECT_AND_SCATTER:
      return mx_cp_select_and_scatter(ip, f, op, in, out);
    case MX_OP_SORT:
      return mx_cp_sort(ip, f, op, in, out);
    case MX_OP_MAP:
      return mx_cp_map(ip, f, op, in, out);
    case MX_OP_FFT:
      return mx_cp_fft(op, in, out);
    case MX_OP_TRIANGULAR_SOLVE:
      return mx_cp_triangular_solve(op, in, out);
    case MX_OP_GATHER:
      return mx_cp_gather(op, in, out);
    case MX_OP_SCATTER:
      return mx_cp_scatter(ip, f, op, in, out);
    case MX_OP_UNKNOWN:
      // dynamic_gather / dynamic_conv have no opcode of their own; they are gather and
      // convolution with slice_sizes / padding passed as a third operand.
      if (op->name && !strcmp(op->name, "stablehlo.dynamic_gather"))
        return mx_cp_gather(op, in, out);
      if (op->name && !strcmp(op->name, "stablehlo.dynamic_conv"))
        return mx_cp_convolution(f, op, in, out);
      if (op->name && !strcmp(op->name, "chlo.ragged_dot")) return mx_cp_ragged_dot(op, in, out);
      if (op->name && !strcmp(op->name, "chlo.scan")) return mx_cp_scan(ip, f, op, in, out);
      return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s", op->name ? op->name : "?");
    default:
      return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s (not a compute op)",
                          op->name ? op->name : mx_opcode_name(op->code));
  }
}

// ---- Errors ----

static const char *op_name(const mx_op_t *op) {
  return op->name ? op->name : mx_opcode_name(op->code);
}

mx_status_t mx_cp_unsupported(const mx_op_t *op, const char *why) {
  return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s: %s", op_name(op), why);
}

mx_status_t mx_cp_bad(const mx_op_t *op, const char *why) {
  return mx_error_set(MX_ERR_INVALID_ARG, "%s (line %d): %s", op_name(op), (int)op->line, why);
}

void *mx_cp_calloc(size_t n, size_t size) { return calloc(n ? n : 1, size ? size : 1); }

// ---- Index arithmetic ----

bool mx_cp_next(int64_t *idx, const int64_t *dims, int32_t rank) {
  for (int32_t d = rank - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

int64_t mx_cp_offset(const int64_t *idx, const int64_t *dims, int32_t rank) {
  int64_t off = 0;
  for (int32_t d = 0; d < rank; ++d) off = off * dims[d] + idx[d];
  return off;
}

bool mx_cp_contains(const int64_t *v, int32_t n, int64_t x) {
  for (int32_t i = 0; i < n; ++i)
    if (v[i] == x) return true;
  return false;
}

bool mx_cp_in_bounds(const int64_t *idx, const int64_t *dims, int32_t rank) {
  for (int32_t d = 0; d < rank; ++d)
    if (idx[d] < 0 || idx[d] >= dims[d]) return false;
  return true;
}

// ---- Attributes ----

int32_t mx_cp_ints(const mx_attr_t *a, int64_t *out, int32_t max) {
  if (!a) return -1;
  if (a->kind == MX_ATTR_DENSE && a->dense) {
    // Old-style dense<[...]> : tensor<Nxi64> lists.
    int64_t n = mx_type_numel(&a->dense->type);
    if (n > max) return -2;
    for (int64_t i = 0; i < n; ++i) out[i] = mx_tensor_get_i64(a->dense, i);
    return (int32_t)n;
  }
  if (a->kind == MX_ATTR_DENSE_ARRAY && a->elem == MX_ELEM_I1) {
    if (a->n > max) return -2;
    for (int32_t i = 0; i < a->n; ++i) out[i] = a->ints[i] != 0;
    return a->n;
  }
  const int64_t *v = NULL;
  int32_t n = mx_attr_get_i64s(a, &v);
  if (n < 0 || n > max) return -2;
  for (int32_t i = 0; i < n; ++i) out[i] = v[i];
  return n;
}

int32_t mx_cp_op_ints(const mx_op_t *op, const char *name, int64_t *out, int32_t max) {
  int32_t n = mx_cp_ints(mx_op_attr(op, name), out, max);
  if (n == -2)
    mx_error_set(MX_ERR_INVALID_ARG, "%s: malformed or too long `%s`", op_name(op), name);
  return n;
}

mx_status_t mx_cp_field_ints(const mx_op_t *op, const mx_attr_t *st, const char *name, int64_t *out,
                             int32_t max, int32_t *n) {
  *n = 0;
  const mx_attr_t *a = st ? mx_attr_field(st, name) : NULL;
  if (!a) return MX_OK;
  int32_t k = mx_cp_ints(a, out, max);
  if (k < 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: malformed or too long `%s`", op_name(op), name);
  *n = k;
  return MX_OK;
}

mx_status_t mx_cp_field_int(const mx_op_t *op, const mx_attr_t *st, const char *name,
                            int64_t *out) {
  const mx_attr_t *a = st ? mx_attr_field(st, name) : NULL;
  if (a && (a->kind == MX_ATTR_INT || a->kind == MX_ATTR_BOOL)) {
    *out = a->i;
    return MX_OK;
  }
  int64_t v[1];
  if (a && mx_cp_ints(a, v, 1) == 1) {
    *out = v[0];
    return MX_OK;
  }
  return mx_error_set(MX_ERR_INVALID_ARG, "%s: missing or malformed `%s`", op_name(op), name);
}

int64_t mx_cp_op_int(const mx_op_t *op, const char *name, int64_t dflt) {
  const mx_attr_t *a = mx_op_attr(op, name);
  if (a && (a->kind == MX_ATTR_INT || a->kind == MX_ATTR_BOOL)) return a->i;
  return dflt;
}

bool mx_cp_op_bool(const mx_op_t *op, const char *name, bool dflt) {
  const mx_attr_t *a = mx_op_attr(op, name);
  if (!a) return dflt;
  if (a->kind == MX_ATTR_UNIT) return true;
  if (a->kind == MX_ATTR_BOOL || a->kind == MX_ATTR_INT) return a->i != 0;
  return dflt;
}

mx_status_t mx_cp_padding(const mx_op_t *op, const char *name, int32_t n, int64_t *lo,
                          int64_t *hi) {
  for (int32_t i = 0; i < n; ++i) lo[i] = hi[i] = 0;
  const mx_attr_t *a = mx_op_attr(op, name);
  if (!a) return MX_OK;
  int64_t v[2 * MX_MAX_RANK];
  int32_t k = mx_cp_ints(a, v, 2 * MX_MAX_RANK);
  if (k == 0) return MX_OK;
  if (k != 2 * n)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: `%s` must have %d (lo, hi) pairs", op_name(op),
                        name, (int)n);
  for (int32_t i = 0; i < n; ++i) {
    lo[i] = v[2 * i];
    hi[i] = v[2 * i + 1];
  }
  return MX_OK;
}

mx_status_t mx_cp_window_attr(const mx_op_t *op, const char *name, int32_t n, int64_t dflt,
                              int64_t *out) {
  for (int32_t i = 0; i < n; ++i) out[i] = dflt;
  int32_t k = mx_cp_op_ints(op, name, out, MX_MAX_RANK);
  if (k == -2) return MX_ERR_INVALID_ARG;
  if (k == -1 || k == 0) {
    for (int32_t i = 0; i < n; ++i) out[i] = dflt;
    return MX_OK;
  }
  if (k != n)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: `%s` must have %d entries", op_name(op), name,
                        (int)n);
  return MX_OK;
}

// ---- Numeric values ----

mx_cp_dom_t mx_cp_dom_of(mx_elem_type_t et) {
  if (mx_elem_is_bool(et)) return MX_CP_BOOL;
  if (mx_elem_is_int(et)) return MX_CP_INT;
  if (mx_elem_is_complex(et)) return MX_CP_CPX;
  return MX_CP_FLT;
}

void mx_cp_get_c(const mx_tensor_t *t, int64_t i, double *re, double *im) {
  if (t->type.elem == MX_ELEM_C64) {
    float p[2];
    memcpy(p, t->data + (size_t)i * 8u, sizeof p);
    *re = p[0];
    *im = p[1];
  } else if (t->type.elem == MX_ELEM_C128) {
    double p[2];
    memcpy(p, t->data + (size_t)i * 16u, sizeof p);
    *re = p[0];
    *im = p[1];
  } else {
    *re = mx_tensor_get_f64(t, i);
    *im = 0.0;
  }
}

void mx_cp_set_c(mx_tensor_t *t, int64_t i, double re, double im) {
  if (t->type.elem == MX_ELEM_C64) {
    float p[2] = {(float)re, (float)im};
    memcpy(t->data + (size_t)i * 8u, p, sizeof p);
  } else if (t->type.elem == MX_ELEM_C128) {
    double p[2] = {re, im};
    memcpy(t->data + (size_t)i * 16u, p, sizeof p);
  } else {
    mx_tensor_set_f64(t, i, re);
  }
}

mx_cp_val_t mx_cp_load(const mx_tensor_t *t, int64_t i, mx_cp_dom_t dom) {
  mx_cp_val_t v = {0, 0.0, 0.0};
  mx_elem_type_t et = t->type.elem;
  switch (dom) {
    case MX_CP_INT:
    case MX_CP_BOOL:
      if (mx_elem_is_int(et) || mx_elem_is_bool(et)) {
        v.u = mx_elem_is_unsigned(et) ? mx_tensor_get_u64(t, i) : (uint64_t)mx_tensor_get_i64(t, i);
      } else {
        double re, im;
        mx_cp_get_c(t, i, &re, &im);
        v.u = (uint64_t)(int64_t)re;
      }
      if (dom == MX_CP_BOOL) v.u = v.u != 0;
      break;
    case MX_CP_FLT:
    case MX_CP_CPX:
      mx_cp_get_c(t, i, &v.re, &v.im);
      if (dom == MX_CP_FLT) v.im = 0.0;
      break;
  }
  return v;
}

// Saturating double -> int64 (NaN -> 0) so out-of-range conversions are defined.
static int64_t sat_i64(double d) {
  if (d != d) return 0;
  if (d >= 9.2233720368547758e18) return INT64_MAX;
  if (d <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)d;
}

void mx_cp_store(mx_tensor_t *t, int64_t i, mx_cp_val_t v, mx_cp_dom_t dom) {
  mx_elem_type_t et = t->type.elem;
  if (mx_elem_is_bool(et)) {
    bool b = (dom == MX_CP_INT || dom == MX_CP_BOOL) ? v.u != 0 : (v.re != 0.0 || v.im != 0.0);
    mx_tensor_set_i64(t, i, b ? 1 : 0);
  } else if (mx_elem_is_int(et)) {
    mx_tensor_set_i64(t, i, (dom == MX_CP_INT || dom == MX_CP_BOOL) ? (int64_t)v.u : sat_i64(v.re));
  } else {
    // Float / complex results from an integer accumulation are unusual; honor the domain.
    if (dom == MX_CP_INT || dom == MX_CP_BOOL) {
      v.re = (double)(int64_t)v.u;
      v.im = 0.0;
    }
    mx_cp_set_c(t, i, v.re, v.im);
  }
}

void mx_cp_fma(mx_cp_val_t *acc, mx_cp_val_t a, mx_cp_val_t b, mx_cp_dom_t dom) {
  switch (dom) {
    case MX_CP_INT:
      acc->u += a.u * b.u;  // unsigned arithmetic wraps like two's complement
      break;
    case MX_CP_BOOL:
      acc->u = acc->u | (a.u & b.u);
      break;
    case MX_CP_FLT:
      acc->re += a.re * b.re;
      break;
    case MX_CP_CPX:
      acc->re += a.re * b.re - a.im * b.im;
      acc->im += a.re * b.im + a.im * b.re;
      break;
  }
}

void mx_cp_copy_elem(mx_tensor_t *dst, int64_t di, const mx_tensor_t *src, int64_t si) {
  mx_elem_type_t de = dst->type.elem, se = src->type.elem;
  if (de == se) {
    size_t sz = mx_elem_size(de);
    memcpy(dst->data + (size_t)di * sz, src->data + (size_t)si * sz, sz);
    return;
  }
  if (mx_elem_is_bool(de)) {
    double re, im;
    if (mx_elem_is_int(se) || mx_elem_is_bool(se)) {
      mx_tensor_set_i64(dst, di, mx_tensor_get_u64(src, si) != 0);
    } else {
      mx_cp_get_c(src, si, &re, &im);
      mx_tensor_set_i64(dst, di, re != 0.0 || im != 0.0);
    }
  } else if (mx_elem_is_int(de)) {
    if (mx_elem_is_int(se) || mx_elem_is_bool(se)) {
      mx_tensor_set_i64(dst, di, mx_tensor_get_i64(src, si));
    } else {
      double re, im;
      mx_cp_get_c(src, si, &re, &im);
      mx_tensor_set_i64(dst, di, sat_i64(re));
    }
  } else {
    double re, im;
    if (mx_elem_is_unsigned(se)) {
      re = (double)mx_tensor_get_u64(src, si);
      im = 0.0;
    } else {
      mx_cp_get_c(src, si, &re, &im);
    }
    mx_cp_set_c(dst, di, re, im);
  }
}

// ---- Bodies ----

static mx_status_t body_init(mx_cp_body_t *b, mx_interp_t *ip, const mx_func_t *f,
                             const mx_op_t *op, int32_t region, int32_t n_args, int32_t n_results,
                             bool any_shape) {
  memset(b, 0, sizeof *b);
  b->any_shape = any_shape;
  if (region >= op->n_regions || !op->regions[region]) return mx_cp_bad(op, "missing body region");
  const mx_block_t *blk = op->regions[region];
  if (blk->n_args != n_args)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: body has %d arguments, expected %d", op_name(op),
                        (int)blk->n_args, (int)n_args);
  b->ip = ip;
  b->f = f;
  b->blk = blk;
  b->n_args = n_args;
  b->n_results = n_results;
  b->args = mx_cp_calloc((size_t)n_args, sizeof(mx_tensor_t));
  b->results = mx_cp_calloc((size_t)n_results, sizeof(mx_tensor_t));
  if (!b->args || !b->results) {
    mx_cp_body_free(b);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; i < n_args; ++i) {
    const mx_type_t *t = mx_value_type(f, blk->args[i]);
    if (!t || t->kind != MX_TYPE_TENSOR || (!any_shape && mx_type_numel(t) != 1)) {
      mx_cp_body_free(b);
      return mx_cp_bad(op, "body arguments must be scalar tensors");
    }
    mx_status_t st = mx_tensor_alloc(&b->args[i], t);
    if (st != MX_OK) {
      mx_cp_body_free(b);
      return st;
    }
  }
  return MX_OK;
}

mx_status_t mx_cp_body_init(mx_cp_body_t *b, mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                            int32_t region, int32_t n_args, int32_t n_results) {
  return body_init(b, ip, f, op, region, n_args, n_results, false);
}

mx_status_t mx_cp_body_init_any(mx_cp_body_t *b, mx_interp_t *ip, const mx_func_t *f,
                                const mx_op_t *op, int32_t region, int32_t n_args,
                                int32_t n_results) {
  return body_init(b, ip, f, op, region, n_args, n_results, true);
}

static void free_results(mx_cp_body_t *b) {
  for (int32_t i = 0; i < b->n_results; ++i) {
    mx_tensor_free(&b->results[i]);
    memset(&b->results[i], 0, sizeof b->results[i]);
  }
}

mx_status_t mx_cp_body_run(mx_cp_body_t *b) {
  free_results(b);
  mx_status_t st =
      mx_interp_run_block(b->ip, b->f, b->blk, b->args, b->n_args, b->results, b->n_results);
  if (st != MX_OK) {
    free_results(b);
    return st;
  }
  for (int32_t i = 0; i < b->n_results; ++i) {
    if (b->results[i].type.kind != MX_TYPE_TENSOR || !b->results[i].data ||
        (!b->any_shape && mx_type_numel(&b->results[i].type) != 1)) {
      free_results(b);
      return mx_error_set(MX_ERR_INVALID_ARG, "body must return %s",
                          b->any_shape ? "tensors" : "scalar tensors");
    }
  }
  return MX_OK;
}

void mx_cp_body_free(mx_cp_body_t *b) {
  if (b->args) {
    for (int32_t i = 0; i < b->n_args; ++i) mx_tensor_free(&b->args[i]);
  }
  if (b->results) free_results(b);
  free(b->args);
  free(b->results);
  b->args = b->results = NULL;
}

bool mx_cp_body_bool(const mx_cp_body_t *b) {
  if (b->n_results < 1 || !b->results[0].data) return false;
  return mx_tensor_get_u64(&b->results[0], 0) != 0;
}
