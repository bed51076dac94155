// Builder core (insertion point, emit-with-inference), constants, elementwise and shape ops.
#include <stdlib.h>
#include <string.h>

#include "hlo/builder_internal.h"

mx_builder_t mx_builder_at(mx_func_t *f, mx_block_t *block) {
  mx_builder_t b;
  b.func = f;
  b.block = block != NULL ? block : (f != NULL ? f->body : NULL);
  return b;
}

const mx_type_t *mx_build_type(const mx_builder_t *b, int32_t id) {
  if (b == NULL || b->func == NULL) return NULL;
  return mx_value_type(b->func, id);
}

mx_status_t mx_build_func(mx_module_t *m, const char *name, bool is_private,
                          const mx_type_t *arg_types, int32_t n_args, mx_func_t **f,
                          mx_builder_t *b, int32_t *arg_ids) {
  if (m == NULL || name == NULL || f == NULL || n_args < 0 || (n_args > 0 && arg_types == NULL)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_build_func: invalid argument");
  }
  mx_status_t st = mx_func_create(m, name, is_private, f);
  if (st != MX_OK) return st;
  for (int32_t i = 0; i < n_args; i++) {
    int32_t id;
    if ((st = mx_func_add_arg(*f, &arg_types[i], NULL, &id)) != MX_OK) return st;
    if (arg_ids != NULL) arg_ids[i] = id;
  }
  if (b != NULL) *b = mx_builder_at(*f, NULL);
  return MX_OK;
}

mx_status_t mx_build_check_array(const char *op, const char *what, const void *p, int32_t n,
                                 int32_t cap) {
  if (n < 0 || n > cap || (n > 0 && p == NULL)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid %s (count %d)", op, what, n);
  }
  return MX_OK;
}

static mx_status_t check_builder(const mx_builder_t *b, mx_opcode_t code) {
  if (b == NULL || b->func == NULL || b->block == NULL || b->func->module == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: builder has no insertion point",
                        mx_opcode_name(code));
  }
  const mx_block_t *blk = b->block;
  if (blk->n_ops > 0 && (mx_opcode_flags(blk->ops[blk->n_ops - 1]->code) & MX_OPF_TERMINATOR)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: block already ends with %s", mx_opcode_name(code),
                        mx_opcode_name(blk->ops[blk->n_ops - 1]->code));
  }
  return MX_OK;
}

mx_status_t mx_build_emit(mx_builder_t *b, mx_opcode_t code, const int32_t *operands,
                          int32_t n_operands, const mx_named_attr_t *attrs, int32_t n_attrs,
                          const mx_type_t *declared, int32_t n_results, mx_op_t **op_out) {
  if (op_out != NULL) *op_out = NULL;
  mx_status_t st = check_builder(b, code);
  if (st != MX_OK) return st;
  if (n_operands < 0 || n_results < 0 || (n_operands > 0 && operands == NULL)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid operand list", mx_opcode_name(code));
  }
  for (int32_t i = 0; i < n_attrs; i++) {
    if (mx_attr_is_oom(&attrs[i].value)) {
      return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", mx_opcode_name(code));
    }
  }
  mx_op_t tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.code = code;
  tmp.name = mx_opcode_name(code);
  tmp.operands = (int32_t *)operands;
  tmp.n_operands = n_operands;
  tmp.attrs = (mx_named_attr_t *)attrs;
  tmp.n_attrs = n_attrs;
  tmp.n_results = n_results;
  mx_type_t small[4];
  mx_type_t *out = small;
  if (n_results > 4) {
    out = malloc(sizeof(mx_type_t) * (size_t)n_results);
    if (out == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  st = mx_infer_op(b->func, &tmp, declared, n_results, out);
  mx_op_t *op = NULL;
  if (st == MX_OK) {
    op = mx_block_append_op(b->func, b->block, code, NULL, operands, n_operands, out, n_results);
    if (op == NULL) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  if (out != small) free(out);
  for (int32_t i = 0; st == MX_OK && i < n_attrs; i++) {
    st = mx_op_set_attr(b->func, op, attrs[i].name, attrs[i].value);
  }
  if (st == MX_OK && op_out != NULL) *op_out = op;
  return st;
}

mx_status_t mx_build_op(mx_builder_t *b, mx_opcode_t code, const int32_t *operands,
                        int32_t n_operands, const mx_named_attr_t *attrs, int32_t n_attrs,
                        const mx_type_t *result_types, int32_t n_results, mx_op_t **op) {
  if (code < 0 || code >= MX_OP_COUNT || n_attrs < 0 || (n_attrs > 0 && attrs == NULL)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_build_op: invalid opcode or attributes");
  }
  return mx_build_emit(b, code, operands, n_operands, attrs, n_attrs, result_types, n_results, op);
}

static mx_status_t emit1(mx_builder_t *b, mx_opcode_t code, const int32_t *operands,
                         int32_t n_operands, const mx_named_attr_t *attrs, int32_t n_attrs,
                         const mx_type_t *declared, int32_t *out) {
  mx_op_t *op;
  mx_status_t st = mx_build_emit(b, code, operands, n_operands, attrs, n_attrs, declared, 1, &op);
  if (st == MX_OK && out != NULL) *out = op->results[0];
  return st;
}

mx_status_t mx_build_add_scalar_region(mx_builder_t *b, mx_op_t *op, const mx_elem_type_t *ets,
                                       int32_t n, bool twice, mx_block_t **region) {
  mx_block_t *r = mx_block_create(b->func);
  if (r == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t k = 0; k < (twice ? 2 : 1); k++) {
    for (int32_t i = 0; i < n; i++) {
      mx_type_t t = mx_type_scalar(ets[i]);
      int32_t id;
      mx_status_t st = mx_block_add_arg(b->func, r, &t, NULL, &id);
      if (st != MX_OK) return st;
    }
  }
  if (region != NULL) *region = r;
  return mx_op_add_region(b->func, op, r);
}

mx_status_t mx_build_binary_body(mx_builder_t *b, mx_block_t *region, mx_opcode_t body) {
  mx_builder_t rb = mx_builder_at(b->func, region);
  int32_t v = region->args[1];
  if (body != MX_SCATTER_REPLACE) {
    if (!(mx_opcode_flags(body) & MX_OPF_BINARY)) {
      return mx_error_set(MX_ERR_INVALID_ARG, "body opcode %s is not a binary elementwise op",
                          mx_opcode_name(body));
    }
    mx_status_t st = mx_build_binary(&rb, body, region->args[0], region->args[1], &v);
    if (st != MX_OK) return st;
  }
  return mx_build_return(&rb, &v, 1);
}

mx_status_t mx_build_finish(mx_builder_t *b, const mx_op_t *op) {
  if (b == NULL || b->func == NULL || op == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_build_finish: invalid argument");
  }
  return mx_hlo_verify_op(b->func, op);
}

// ---- constants ----

mx_status_t mx_build_constant(mx_builder_t *b, const mx_tensor_t *value, int32_t *out) {
  mx_status_t st = check_builder(b, MX_OP_CONSTANT);
  if (st != MX_OK) return st;
  if (value == NULL || value->type.kind != MX_TYPE_TENSOR || value->data == NULL ||
      value->nbytes != mx_type_nbytes(&value->type)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "stablehlo.constant: invalid tensor value");
  }
  mx_named_attr_t a = {"value", mx_attr_dense(b->func->module, value)};
  return emit1(b, MX_OP_CONSTANT, NULL, 0, &a, 1, NULL, out);
}

mx_status_t mx_build_splat(mx_builder_t *b, const mx_type_t *type, double v, int32_t *out) {
  if (type == NULL || type->kind != MX_TYPE_TENSOR || type->elem <= MX_ELEM_INVALID ||
      type->elem >= MX_ELEM_COUNT || type->rank < 0 || type->rank > MX_MAX_RANK) {
    return mx_error_set(MX_ERR_INVALID_ARG, "stablehlo.constant: invalid splat type");
  }
  for (int32_t i = 0; i < type->rank; i++) {
    if (type->dims[i] < 0) {
      return mx_error_set(MX_ERR_INVALID_ARG, "stablehlo.constant: negative dimension");
    }
  }
  mx_tensor_t t;
  mx_status_t st = mx_tensor_alloc(&t, type);
  if (st != MX_OK) return st;
  int64_t n = mx_type_numel(type);
  if (n > 0) {
    mx_tensor_set_f64(&t, 0, v);
    size_t es = mx_elem_size(type->elem);
    for (int64_t i = 1; i < n; i++) memcpy(t.data + (size_t)i * es, t.data, es);
  }
  st = mx_build_constant(b, &t, out);
  mx_tensor_free(&t);
  return st;
}

mx_status_t mx_build_scalar(mx_builder_t *b, mx_elem_type_t et, double v, int32_t *out) {
  mx_type_t t = mx_type_scalar(et);
  return mx_build_splat(b, &t, v, out);
}

mx_status_t mx_build_iota(mx_builder_t *b, const mx_type_t *type, int64_t dim, int32_t *out) {
  if (type == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "stablehlo.iota: NULL type");
  mx_named_attr_t a = {"iota_dimension", mx_attr_int(dim, MX_ELEM_I64)};
  return emit1(b, MX_OP_IOTA, NULL, 0, &a, 1, type, out);
}

// ---- elementwise ----

mx_status_t mx_build_unary(mx_builder_t *b, mx_opcode_t code, int32_t x, int32_t *out) {
  if (code < 0 || code >= MX_OP_COUNT || !(mx_opcode_flags(code) & MX_OPF_UNARY)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_build_unary: %s is not a unary elementwise op",
                        (code >= 0 && code < MX_OP_COUNT) ? mx_opcode_name(code) : "?");
  }
  return emit1(b, code, &x, 1, NULL, 0, NULL, out);
}

mx_status_t mx_build_binary(mx_builder_t *b, mx_opcode_t code, int32_t lhs, int32_t rhs,
                            int32_t *out) {
  if (code < 0 || code >= MX_OP_COUNT || !(mx_opcode_flags(code) & MX_OPF_BINARY)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_build_binary: %s is not a binary elementwise op",
                        (code >= 0 && code < MX_OP_COUNT) ? mx_opcode_name(code) : "?");
  }
  int32_t ops[2] = {lhs, rhs};
  return emit1(b, code, ops, 2, NULL, 0, NULL, out);
}

static mx_status_t elem_result(mx_builder_t *b, mx_opcode_t code, int32_t x, mx_elem_type_t et,
                               int32_t *out) {
  if (et <= MX_ELEM_INVALID || et >= MX_ELEM_COUNT) {
    return mx_error_set(MX_ERR_VERIFY, "%s: invalid result element type", mx_opcode_name(code));
  }
  mx_type_t decl = mx_type_scalar(et);
  return emit1(b, code, &x, 1, NULL, 0, &decl, out);
}

mx_status_t mx_build_convert(mx_builder_t *b, int32_t x, mx_elem_type_t et, int32_t *out) {
  return elem_result(b, MX_OP_CONVERT, x, et, out);
}

mx_status_t mx_build_bitcast_convert(mx_builder_t *b, int32_t x, mx_elem_type_t et, int32_t *out) {
  return elem_result(b, MX_OP_BITCAST_CONVERT, x, et, out);
}

mx_status_t mx_build_select(mx_builder_t *b, int32_t pred, int32_t on_true, int32_t on_false,
                            int32_t *out) {
  int32_t ops[3] = {pred, on_true, on_false};
  return emit1(b, MX_OP_SELECT, ops, 3, NULL, 0, NULL, out);
}

mx_status_t mx_build_clamp(mx_builder_t *b, int32_t min, int32_t x, int32_t max, int32_t *out) {
  int32_t ops[3] = {min, x, max};
  return emit1(b, MX_OP_CLAMP, ops, 3, NULL, 0, NULL, out);
}

const char *mx_compare_dir_name(mx_compare_dir_t dir) {
  static const char *const names[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
  return (dir >= MX_CMP_EQ && dir <= MX_CMP_LT) ? names[dir] : NULL;
}

const char *mx_compare_type_name(mx_compare_type_t type) {
  switch (type) {
    case MX_CMP_TYPE_FLOAT:
      return "FLOAT";
    case MX_CMP_TYPE_TOTALORDER:
      return "TOTALORDER";
    case MX_CMP_TYPE_SIGNED:
      return "SIGNED";
    case MX_CMP_TYPE_UNSIGNED:
      return "UNSIGNED";
    default:
      return NULL;
  }
}

mx_status_t mx_build_compare(mx_builder_t *b, mx_compare_dir_t dir, mx_compare_type_t type,
                             int32_t lhs, int32_t rhs, int32_t *out) {
  mx_status_t st = check_builder(b, MX_OP_COMPARE);
  if (st != MX_OK) return st;
  const char *dname = mx_compare_dir_name(dir);
  if (dname == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "stablehlo.compare: invalid comparison direction");
  }
  if (type == MX_CMP_TYPE_AUTO) {
    const mx_type_t *t = mx_build_type(b, lhs);
    type = MX_CMP_TYPE_UNSIGNED;
    if (t != NULL && (mx_elem_is_float(t->elem) || mx_elem_is_complex(t->elem))) {
      type = MX_CMP_TYPE_FLOAT;
    } else if (t != NULL && mx_elem_is_signed(t->elem)) {
      type = MX_CMP_TYPE_SIGNED;
    }
  }
  mx_module_t *m = b->func->module;
  mx_named_attr_t attrs[2];
  int32_t n = 0;
  attrs[n].name = "comparison_direction";
  attrs[n++].value = mx_attr_enum(m, "comparison_direction", dname);
  const char *tname = mx_compare_type_name(type);
  if (tname != NULL) {
    attrs[n].name = "compare_type";
    attrs[n++].value = mx_attr_enum(m, "comparison_type", tname);
  } else if (type != MX_CMP_TYPE_NONE) {
    return mx_error_set(MX_ERR_INVALID_ARG, "stablehlo.compare: invalid compare type");
  }
  int32_t ops[2] = {lhs, rhs};
  return emit1(b, MX_OP_COMPARE, ops, 2, attrs, n, NULL, out);
}

// ---- shapes ----

mx_status_t mx_build_broadcast_in_dim(mx_builder_t *b, int32_t x, const int64_t *dims, int32_t rank,
                                      const int64_t *bdims, int32_t *out) {
  const char *op = "stablehlo.broadcast_in_dim";
  mx_status_t st = mx_build_check_array(op, "result dims", dims, rank, MX_MAX_RANK);
  if (st != MX_OK) return st;
  const mx_type_t *xt = mx_build_type(b, x);
  int32_t nb = xt != NULL && xt->kind == MX_TYPE_TENSOR ? xt->rank : 0;
  if ((st = mx_build_check_array(op, "broadcast_dimensions", bdims, nb, MX_MAX_RANK)) != MX_OK) {
    return st;
  }
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] < 0) return mx_error_set(MX_ERR_VERIFY, "%s: negative result dimension", op);
  }
  mx_type_t decl = mx_type_tensor(xt != NULL ? xt->elem : MX_ELEM_F32, rank, dims);
  mx_named_attr_t a = mx_build_i64s_attr(b, "broadcast_dimensions", bdims, nb);
  return emit1(b, MX_OP_BROADCAST_IN_DIM, &x, 1, &a, 1, &decl, out);
}

mx_status_t mx_build_broadcast_to(mx_builder_t *b, int32_t x, const int64_t *dims, int32_t rank,
                                  int32_t *out) {
  const mx_type_t *xt = mx_build_type(b, x);
  if (xt != NULL && xt->kind == MX_TYPE_TENSOR && rank >= 0 && xt->rank > rank) {
    char s[160];
    return mx_error_set(MX_ERR_VERIFY, "stablehlo.broadcast_in_dim: cannot broadcast %s to rank %d",
                        mx_type_str(xt, s, sizeof s), rank);
  }
  int64_t bd[MX_MAX_RANK];
  int32_t xr = xt != NULL && xt->kind == MX_TYPE_TENSOR ? xt->rank : 0;
  for (int32_t i = 0; i < xr && i < MX_MAX_RANK; i++) bd[i] = rank - xr + i;
  return mx_build_broadcast_in_dim(b, x, dims, rank, bd, out);
}

mx_status_t mx_build_reshape(mx_builder_t *b, int32_t x, const int64_t *dims, int32_t rank,
                             int32_t *out) {
  mx_status_t st = mx_build_check_array("stablehlo.reshape", "dims", dims, rank, MX_MAX_RANK);
  if (st != MX_OK) return st;
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] < 0) {
      return mx_error_set(MX_ERR_VERIFY, "stablehlo.reshape: negative dimension %lld",
                          (long long)dims[i]);
    }
  }
  const mx_type_t *xt = mx_build_type(b, x);
  mx_type_t decl = mx_type_tensor(xt != NULL ? xt->elem : MX_ELEM_F32, rank, dims);
  return emit1(b, MX_OP_RESHAPE, &x, 1, NULL, 0, &decl, out);
}

mx_status_t mx_build_transpose(mx_builder_t *b, int32_t x, const int64_t *perm, int32_t n,
                               int32_t *out) {
  mx_status_t st =
      mx_build_check_array("stablehlo.transpose", "permutation", perm, n, MX_ILIST_CAP);
  if (st != MX_OK) return st;
  mx_named_attr_t a = mx_build_i64s_attr(b, "permutation", perm, n);
  return emit1(b, MX_OP_TRANSPOSE, &x, 1, &a, 1, NULL, out);
}

mx_status_t mx_build_slice(mx_builder_t *b, int32_t x, const int64_t *start, const int64_t *limit,
                           const int64_t *strides, int32_t n, int32_t *out) {
  const char *op = "stablehlo.slice";
  mx_status_t st = mx_build_check_array(op, "start_indices", start, n, MX_ILIST_CAP);
  if (st == MX_OK) st = mx_build_check_array(op, "limit_indices", limit, n, MX_ILIST_CAP);
  if (st != MX_OK) return st;
  int64_t ones[MX_ILIST_CAP];
  for (int32_t i = 0; i < n; i++) ones[i] = 1;
  mx_named_attr_t a[3] = {mx_build_i64s_attr(b, "start_indices", start, n),
                          mx_build_i64s_attr(b, "limit_indices", limit, n),
                          mx_build_i64s_attr(b, "strides", strides != NULL ? strides : ones, n)};
  return emit1(b, MX_OP_SLICE, &x, 1, a, 3, NULL, out);
}

mx_status_t mx_build_dynamic_slice(mx_builder_t *b, int32_t x, const int32_t *starts, int32_t n,
                                   const int64_t *sizes, int32_t *out) {
  const char *op = "stablehlo.dynamic_slice";
  mx_status_t st = mx_build_check_array(op, "start indices", starts, n, MX_MAX_RANK);
  if (st != MX_OK) return st;
  const mx_type_t *xt = mx_build_type(b, x);
  int32_t ns = xt != NULL && xt->kind == MX_TYPE_TENSOR ? xt->rank : 0;
  if ((st = mx_build_check_array(op, "slice_sizes", sizes, ns, MX_MAX_RANK)) != MX_OK) return st;
  int32_t ops[1 + MX_MAX_RANK];
  ops[0] = x;
  for (int32_t i = 0; i < n; i++) ops[1 + i] = starts[i];
  mx_named_attr_t a = mx_build_i64s_attr(b, "slice_sizes", sizes, ns);
  return emit1(b, MX_OP_DYNAMIC_SLICE, ops, 1 + n, &a, 1, NULL, out);
}

mx_status_t mx_build_dynamic_update_slice(mx_builder_t *b, int32_t x, int32_t update,
                                          const int32_t *starts, int32_t n, int32_t *out) {
  mx_status_t st = mx_build_check_array("stablehlo.dynamic_update_slice", "start indices", starts,
                                        n, MX_MAX_RANK);
  if (st != MX_OK) return st;
  int32_t ops[2 + MX_MAX_RANK];
  ops[0] = x;
  ops[1] = update;
  for (int32_t i = 0; i < n; i++) ops[2 + i] = starts[i];
  return emit1(b, MX_OP_DYNAMIC_UPDATE_SLICE, ops, 2 + n, NULL, 0, NULL, out);
}

mx_status_t mx_build_concatenate(mx_builder_t *b, const int32_t *xs, int32_t n, int64_t dim,
                                 int32_t *out) {
  if (n <= 0 || xs == NULL) {
    return mx_error_set(MX_ERR_VERIFY, "stablehlo.concatenate: expected at least one operand");
  }
  mx_named_attr_t a = {"dimension", mx_attr_int(dim, MX_ELEM_I64)};
  return emit1(b, MX_OP_CONCATENATE, xs, n, &a, 1, NULL, out);
}

mx_status_t mx_build_pad(mx_builder_t *b, int32_t x, int32_t pad_value, const int64_t *low,
                         const int64_t *high, const int64_t *interior, int32_t n, int32_t *out) {
  const char *op = "stablehlo.pad";
  mx_status_t st = mx_build_check_array(op, "edge_padding_low", low, n, MX_ILIST_CAP);
  if (st == MX_OK) st = mx_build_check_array(op, "edge_padding_high", high, n, MX_ILIST_CAP);
  if (st != MX_OK) return st;
  int64_t zeros[MX_ILIST_CAP] = {0};
  mx_named_attr_t a[3] = {
      mx_build_i64s_attr(b, "edge_padding_low", low, n),
      mx_build_i64s_attr(b, "edge_padding_high", high, n),
      mx_build_i64s_attr(b, "interior_padding", interior != NULL ? interior : zeros, n)};
  int32_t ops[2] = {x, pad_value};
  return emit1(b, MX_OP_PAD, ops, 2, a, 3, NULL, out);
}

mx_status_t mx_build_reverse(mx_builder_t *b, int32_t x, const int64_t *dims, int32_t n,
                             int32_t *out) {
  mx_status_t st = mx_build_check_array("stablehlo.reverse", "dimensions", dims, n, MX_ILIST_CAP);
  if (st != MX_OK) return st;
  mx_named_attr_t a = mx_build_i64s_attr(b, "dimensions", dims, n);
  return emit1(b, MX_OP_REVERSE, &x, 1, &a, 1, NULL, out);
}
