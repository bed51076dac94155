// The dynamic_* ops of the reference interpreter (dynamic_iota, _reshape, _broadcast_in_dim,
// _pad, _gather, _conv), each run as its static counterpart.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/interp_internal.h"

// ---- dynamic_* ops (shapes given as operands; our result types are static) ----
//
// They are not in the opcode list, so they arrive as MX_OP_UNKNOWN with their name. Each one is
// run as its static counterpart: the shape operands must agree with the static result type and
// the padding / slice-size operands become the attributes the static kernel reads.

#define MX_DYN_MAX_ATTRS 4

typedef struct dyn_op {
  mx_op_t op;
  mx_named_attr_t *attrs;
  int64_t ints[MX_DYN_MAX_ATTRS][2 * MX_MAX_RANK];
  int32_t n_extra;
} dyn_op_t;

// Reads a 1-D (or, for paddings, 2-D) integer operand into v; returns its element count or -1.
static int64_t dyn_ints(const mx_tensor_t *t, int64_t *v, int64_t max) {
  if (t->type.kind != MX_TYPE_TENSOR || !mx_elem_is_int(t->type.elem) || t->type.rank > 2 ||
      !t->data)
    return -1;
  int64_t n = mx_type_numel(&t->type);
  if (n > max) return -1;
  for (int64_t i = 0; i < n; i++) v[i] = mx_tensor_get_i64(t, i);
  return n;
}

static mx_status_t dyn_init(dyn_op_t *d, const mx_op_t *op, mx_opcode_t code, int32_t n_operands) {
  memset(d, 0, sizeof *d);
  d->op = *op;
  d->op.code = code;
  d->op.name = mx_opcode_name(code);
  d->op.n_operands = n_operands;
  d->attrs = calloc((size_t)op->n_attrs + MX_DYN_MAX_ATTRS, sizeof *d->attrs);
  if (!d->attrs) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < op->n_attrs; i++) d->attrs[i] = op->attrs[i];
  d->op.attrs = d->attrs;
  return MX_OK;
}

// Adds (or overrides) a DENSE_ARRAY i64 attribute taken from integer operand `t`.
static mx_status_t dyn_add_ints(dyn_op_t *d, const char *name, const mx_tensor_t *t,
                                int64_t want_n) {
  int32_t k = d->n_extra++;
  int64_t n = dyn_ints(t, d->ints[k], 2 * MX_MAX_RANK);
  if (n < 0 || (want_n >= 0 && n != want_n))
    return mx_error_set(MX_ERR_RUNTIME, "%s: operand for `%s` must be %" PRId64 " integers",
                        d->op.name, name, want_n);
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_DENSE_ARRAY;
  a.elem = MX_ELEM_I64;
  a.n = (int32_t)n;
  a.ints = d->ints[k];
  for (int32_t i = 0; i < d->op.n_attrs; i++)
    if (strcmp(d->attrs[i].name, name) == 0) {
      d->attrs[i].value = a;
      return MX_OK;
    }
  d->attrs[d->op.n_attrs].name = name;
  d->attrs[d->op.n_attrs].value = a;
  d->op.n_attrs++;
  return MX_OK;
}

// The output-shape operand must equal the static result shape.
static mx_status_t dyn_check_shape(const mx_op_t *op, const mx_tensor_t *shape,
                                   const mx_type_t *rt) {
  int64_t v[MX_MAX_RANK];
  int64_t n = dyn_ints(shape, v, MX_MAX_RANK);
  bool ok = n == rt->rank && rt->kind == MX_TYPE_TENSOR;
  for (int64_t i = 0; ok && i < n; i++) ok = v[i] == rt->dims[i];
  if (!ok) {
    char buf[96];
    return mx_error_set(MX_ERR_RUNTIME, "%s: output shape operand does not match result type %s",
                        op->name, mx_type_str(rt, buf, sizeof buf));
  }
  return MX_OK;
}

mx_status_t mx_interp_exec_dynamic(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                   const mx_tensor_t *const *in, mx_tensor_t *out, bool *handled) {
  static const struct {
    const char *name;
    mx_opcode_t code;
    int32_t n_in;
  } table[] = {
      {"stablehlo.dynamic_iota", MX_OP_IOTA, 1},
      {"stablehlo.dynamic_reshape", MX_OP_RESHAPE, 2},
      {"stablehlo.dynamic_broadcast_in_dim", MX_OP_BROADCAST_IN_DIM, 2},
      {"stablehlo.dynamic_pad", MX_OP_PAD, 5},
      {"stablehlo.dynamic_gather", MX_OP_GATHER, 3},
      {"stablehlo.dynamic_conv", MX_OP_CONVOLUTION, 3},
  };
  *handled = false;
  int k = -1;
  for (int i = 0; op->name && i < (int)(sizeof table / sizeof table[0]); i++)
    if (strcmp(op->name, table[i].name) == 0) k = i;
  if (k < 0) return MX_OK;
  *handled = true;
  if (op->n_operands != table[k].n_in || op->n_results != 1)
    return mx_error_set(MX_ERR_RUNTIME, "%s: expected %d operands and one result", op->name,
                        (int)table[k].n_in);
  const mx_type_t *rt = &f->values[op->results[0]].type;
  dyn_op_t d;
  mx_status_t st = MX_OK;
  const mx_tensor_t *args[2] = {NULL, NULL};
  int32_t n_static = 0;
  switch (table[k].code) {
    case MX_OP_IOTA:
      st = dyn_check_shape(op, in[0], rt);
      break;
    case MX_OP_RESHAPE:
    case MX_OP_BROADCAST_IN_DIM:
      st = dyn_check_shape(op, in[1], rt);
      args[0] = in[0];
      n_static = 1;
      break;
    case MX_OP_PAD:
    case MX_OP_GATHER:
    case MX_OP_CONVOLUTION:
      args[0] = in[0];
      args[1] = in[1];
      n_static = 2;
      break;
    default:
      break;
  }
  if (st) return st;
  st = dyn_init(&d, op, table[k].code, n_static);
  if (st) return st;
  int32_t r = in[0]->type.rank;
  if (table[k].code == MX_OP_PAD) {
    st = dyn_add_ints(&d, "edge_padding_low", in[2], r);
    if (!st) st = dyn_add_ints(&d, "edge_padding_high", in[3], r);
    if (!st) st = dyn_add_ints(&d, "interior_padding", in[4], r);
  } else if (table[k].code == MX_OP_GATHER) {
    st = dyn_add_ints(&d, "slice_sizes", in[2], r);
  } else if (table[k].code == MX_OP_CONVOLUTION) {
    st = dyn_add_ints(&d, "padding", in[2], 2 * (int64_t)(r - 2));
  }
  if (!st) st = mx_interp_alloc_results(ip, f, &d.op, out);
  if (!st) {
    mx_interp_kernel_fn fn = mx_interp_kernel_lookup(d.op.code).fn == mx_interp_shape
                                 ? mx_interp_shape
                                 : mx_interp_compute;
    st = fn(ip, f, &d.op, args, out);
    if (st) mx_interp_values_free(out, 1);
  }
  free(d.attrs);
  return st;
}
