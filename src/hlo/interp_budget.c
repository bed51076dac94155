// Reference interpreter: the work estimate behind mx_interp_opts_t.max_work. An op costs the
// elements it reads and writes, plus the inner loops that no region body accounts for (dot
// contractions, convolution kernels, windows, FFT and triangular-solve passes). Ops with regions
// (reduce, sort, map, while, ...) pay for their bodies as those ops run, so they are not
// estimated here. Saturating arithmetic: the estimate never wraps.
#include "hlo/interp_budget.h"

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// Elements of a value of any kind (tuples: the sum of their elements; tokens: 0). Dynamic
// dimensions count as 1 (the runtime type is used for operands).
static uint64_t type_elems(const mx_type_t *t, int depth) {
  if (t->kind == MX_TYPE_TUPLE) {
    uint64_t s = 0;
    for (int32_t i = 0; i < t->n_tuple && t->tuple && depth < 8; i++)
      s = sat_add(s, type_elems(&t->tuple[i], depth + 1));
    return s;
  }
  if (t->kind != MX_TYPE_TENSOR) return 0;
  uint64_t n = 1;
  for (int32_t i = 0; i < t->rank && i < MX_MAX_RANK; i++)
    n = sat_mul(n, t->dims[i] > 0 ? (uint64_t)t->dims[i] : 1);
  return n;
}

// Product of an integer-list attribute's entries (1 when absent or malformed).
static uint64_t attr_product(const mx_attr_t *a) {
  const int64_t *v = NULL;
  int32_t n = mx_attr_get_i64s(a, &v);
  uint64_t p = 1;
  for (int32_t i = 0; i < n; i++) p = sat_mul(p, v[i] > 0 ? (uint64_t)v[i] : 1);
  return p;
}

// Product of the lhs contracting dimension sizes of a dot_general (1 when unreadable).
static uint64_t dot_contraction(const mx_op_t *op, const mx_type_t *lhs) {
  const mx_attr_t *dn = mx_op_attr(op, "dot_dimension_numbers");
  const mx_attr_t *lc = dn ? mx_attr_field(dn, "lhs_contracting_dimensions") : NULL;
  const int64_t *v = NULL;
  int32_t n = mx_attr_get_i64s(lc, &v);
  uint64_t p = 1;
  for (int32_t i = 0; i < n; i++) {
    if (v[i] >= 0 && v[i] < lhs->rank && lhs->dims[v[i]] > 0)
      p = sat_mul(p, (uint64_t)lhs->dims[v[i]]);
  }
  return p;
}

uint64_t mx_interp_op_cost(const mx_func_t *f, const mx_op_t *op, const mx_tensor_t *const *in) {
  uint64_t in_elems = 0, out_elems = 0;
  for (int32_t i = 0; i < op->n_operands; i++)
    in_elems = sat_add(in_elems, type_elems(&in[i]->type, 0));
  for (int32_t i = 0; i < op->n_results; i++) {
    int32_t id = op->results[i];
    if (id >= 0 && id < f->n_values)
      out_elems = sat_add(out_elems, type_elems(&f->values[id].type, 0));
  }
  uint64_t cost = sat_add(1, sat_add(in_elems, out_elems));
  uint64_t inner = 0;
  switch (op->code) {
    case MX_OP_DOT_GENERAL:
      if (op->n_operands >= 1) inner = sat_mul(out_elems, dot_contraction(op, &in[0]->type));
      break;
    case MX_OP_DOT:
      if (op->n_operands >= 1 && in[0]->type.rank > 0) {
        int64_t k = in[0]->type.dims[in[0]->type.rank - 1];
        inner = sat_mul(out_elems, k > 0 ? (uint64_t)k : 1);
      }
      break;
    case MX_OP_CONVOLUTION:  // an upper bound: every output element against the whole kernel
      if (op->n_operands >= 2) inner = sat_mul(out_elems, type_elems(&in[1]->type, 0));
      break;
    case MX_OP_REDUCE_WINDOW:
      inner = sat_mul(out_elems, attr_product(mx_op_attr(op, "window_dimensions")));
      break;
    case MX_OP_SELECT_AND_SCATTER:
      inner = sat_mul(in_elems, attr_product(mx_op_attr(op, "window_dimensions")));
      break;
    case MX_OP_FFT:
    case MX_OP_TRIANGULAR_SOLVE:  // passes over the trailing dimensions: elements x (size + 64)
      if (op->n_operands >= 1 && in[0]->type.rank > 0) {
        int64_t k = in[0]->type.dims[in[0]->type.rank - 1];
        inner = sat_mul(in_elems, (k > 0 ? (uint64_t)k : 1) + 64);
      }
      break;
    default:
      break;
  }
  return sat_add(cost, inner);
}
