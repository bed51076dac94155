// Reference interpreter: chlo.scan. The body maps (input slices..., carries...) to
// (output slices..., new carries...) at each position along `dimension` (from the end when
// is_reverse); results are the stacked outputs followed by the final carries.
#include <string.h>

#include "hlo/interp_compute.h"

// Number of `inputs` operands: from operandSegmentSizes when present, else the leading operands
// whose type differs from the matching body argument (inputs are sliced, carries are not).
static int32_t scan_n_inputs(const mx_func_t *f, const mx_op_t *op) {
  const mx_attr_t *seg = mx_op_attr(op, "operandSegmentSizes");
  if (!seg) seg = mx_op_attr(op, "operand_segment_sizes");
  int64_t v[2];
  if (seg && mx_cp_ints(seg, v, 2) == 2 && v[0] >= 0 && v[0] + v[1] == op->n_operands)
    return (int32_t)v[0];
  if (op->n_regions < 1 || !op->regions[0] || op->regions[0]->n_args != op->n_operands) return -1;
  int32_t n = 0;
  while (n < op->n_operands) {
    const mx_type_t *at = mx_value_type(f, op->regions[0]->args[n]);
    const mx_type_t *ot = mx_value_type(f, op->operands[n]);
    if (!at || !ot || mx_type_equal(at, ot)) break;
    ++n;
  }
  return n;
}

// Visits the (full offset, slice offset) pairs of the slice at position t along `dim`.
#define FOR_SLICE(ft, dim, t, fo, so, BODY)                                       \
  do {                                                                            \
    int64_t outer_ = 1, inner_ = 1, len_ = (ft)->dims[dim];                       \
    for (int32_t d_ = 0; d_ < (dim); ++d_) outer_ *= (ft)->dims[d_];              \
    for (int32_t d_ = (dim) + 1; d_ < (ft)->rank; ++d_) inner_ *= (ft)->dims[d_]; \
    for (int64_t o_ = 0; o_ < outer_; ++o_)                                       \
      for (int64_t k_ = 0; k_ < inner_; ++k_) {                                   \
        int64_t fo = (o_ * len_ + (t)) * inner_ + k_, so = o_ * inner_ + k_;      \
        BODY;                                                                     \
      }                                                                           \
  } while (0)

static int64_t slice_numel(const mx_type_t *t, int32_t dim) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; ++d)
    if (d != dim) n *= t->dims[d];
  return n;
}

mx_status_t mx_cp_scan(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                       const mx_tensor_t *const *in, mx_tensor_t *out) {
  int32_t n_in = scan_n_inputs(f, op);
  int32_t n_all = op->n_operands;
  if (n_in < 1 || op->n_results != n_all) return mx_cp_bad(op, "cannot tell inputs from inits");
  int32_t n_carry = n_all - n_in;
  int64_t dim = mx_cp_op_int(op, "dimension", -1);
  bool reverse = mx_cp_op_bool(op, "is_reverse", false);
  const mx_type_t *t0 = &in[0]->type;
  if (dim < 0 || dim >= t0->rank) return mx_cp_bad(op, "`dimension` out of range");
  int64_t len = t0->dims[dim];
  for (int32_t i = 0; i < n_in; ++i)
    if (in[i]->type.rank != t0->rank || in[i]->type.dims[dim] != len ||
        out[i].type.rank != t0->rank || out[i].type.dims[dim] != len)
      return mx_cp_bad(op, "inputs and outputs must share the scan dimension");
  for (int32_t j = 0; j < n_carry; ++j)
    if (mx_type_numel(&in[n_in + j]->type) != mx_type_numel(&out[n_in + j].type))
      return mx_cp_bad(op, "carry shapes differ from their inits");
  mx_cp_body_t b;
  mx_status_t st = mx_cp_body_init_any(&b, ip, f, op, 0, n_all, n_all);
  if (st != MX_OK) return st;
  for (int32_t i = 0; i < n_in && st == MX_OK; ++i)
    if (mx_type_numel(&b.args[i].type) != slice_numel(&in[i]->type, (int32_t)dim))
      st = mx_cp_bad(op, "body input argument does not match a slice of the input");
  for (int32_t j = 0; j < n_carry && st == MX_OK; ++j) {
    int64_t n = mx_type_numel(&in[n_in + j]->type);
    if (mx_type_numel(&b.args[n_in + j].type) != n) st = mx_cp_bad(op, "carry shape mismatch");
    for (int64_t e = 0; e < n && st == MX_OK; ++e)
      mx_cp_copy_elem(&b.args[n_in + j], e, in[n_in + j], e);
  }
  for (int64_t s = 0; s < len && st == MX_OK; ++s) {
    int64_t t = reverse ? len - 1 - s : s;
    for (int32_t i = 0; i < n_in; ++i)
      FOR_SLICE(&in[i]->type, (int32_t)dim, t, fo, so, mx_cp_copy_elem(&b.args[i], so, in[i], fo));
    if ((st = mx_cp_body_run(&b)) != MX_OK) break;
    for (int32_t i = 0; i < n_all; ++i) {
      int64_t want =
          i < n_in ? slice_numel(&out[i].type, (int32_t)dim) : mx_type_numel(&b.args[i].type);
      if (mx_type_numel(&b.results[i].type) != want) {
        st = mx_cp_bad(op, "body result shape mismatch");
        break;
      }
    }
    if (st != MX_OK) break;
    for (int32_t i = 0; i < n_in; ++i)
      FOR_SLICE(&out[i].type, (int32_t)dim, t, fo, so,
                mx_cp_copy_elem(&out[i], fo, &b.results[i], so));
    for (int32_t j = 0; j < n_carry; ++j) {
      int64_t n = mx_type_numel(&b.args[n_in + j].type);
      for (int64_t e = 0; e < n; ++e)
        mx_cp_copy_elem(&b.args[n_in + j], e, &b.results[n_in + j], e);
    }
  }
  for (int32_t j = 0; j < n_carry && st == MX_OK; ++j) {
    int64_t n = mx_type_numel(&out[n_in + j].type);
    for (int64_t e = 0; e < n; ++e) mx_cp_copy_elem(&out[n_in + j], e, &b.args[n_in + j], e);
  }
  mx_cp_body_free(&b);
  return st;
}
