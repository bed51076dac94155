// Builders for indexing (gather/scatter), compute (dot_general, convolution, reduce,
// reduce_window, sort) and structure (while, if, case, call, return, composite, custom_call).
#include <stdlib.h>
#include <string.h>

#include "hlo/builder_internal.h"

// Appends `name = list` to fields when the list is non-empty (what the generic printer omits
// when empty, so built and parsed IR agree).
static mx_status_t add_dims(mx_builder_t *b, mx_named_attr_t *fields, int32_t *n, const char *name,
                            const mx_dims_t *d, const char *op) {
  mx_status_t st = mx_build_check_array(op, name, d->v, d->n, MX_ILIST_CAP);
  if (st != MX_OK) return st;
  if (d->n > 0) fields[(*n)++] = mx_build_i64s_attr(b, name, d->v, d->n);
  return MX_OK;
}

static mx_status_t emit_results(mx_builder_t *b, mx_opcode_t code, const int32_t *operands,
                                int32_t n_operands, const mx_named_attr_t *attrs, int32_t n_attrs,
                                const mx_type_t *declared, int32_t n_results, int32_t *results,
                                mx_op_t **op_out) {
  mx_op_t *op;
  mx_status_t st =
      mx_build_emit(b, code, operands, n_operands, attrs, n_attrs, declared, n_results, &op);
  if (st != MX_OK) return st;
  for (int32_t i = 0; results != NULL && i < n_results; i++) results[i] = op->results[i];
  if (op_out != NULL) *op_out = op;
  return MX_OK;
}

// Region with args of the given types (any kind).
static mx_status_t add_region(mx_builder_t *b, mx_op_t *op, const mx_type_t *types, int32_t n) {
  mx_block_t *r = mx_block_create(b->func);
  if (r == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) {
    int32_t id;
    mx_status_t st = mx_block_add_arg(b->func, r, &types[i], NULL, &id);
    if (st != MX_OK) return st;
  }
  return mx_op_add_region(b->func, op, r);
}

// Element types of the values ids[0..n) (INVALID for non-tensors).
static void value_elems(mx_builder_t *b, const int32_t *ids, int32_t n, mx_elem_type_t *ets) {
  for (int32_t i = 0; i < n; i++) {
    const mx_type_t *t = mx_build_type(b, ids[i]);
    ets[i] = t != NULL && t->kind == MX_TYPE_TENSOR ? t->elem : MX_ELEM_INVALID;
  }
}

// Concatenates id lists into a heap array (caller frees).
static int32_t *concat_ids(const int32_t *a, int32_t na, const int32_t *b, int32_t nb,
                           const int32_t *c, int32_t nc) {
  int32_t *r = malloc(sizeof(int32_t) * (size_t)(na + nb + nc + 1));
  if (r == NULL) return NULL;
  if (na) memcpy(r, a, sizeof(int32_t) * (size_t)na);
  if (nb) memcpy(r + na, b, sizeof(int32_t) * (size_t)nb);
  if (nc) memcpy(r + na + nb, c, sizeof(int32_t) * (size_t)nc);
  return r;
}

// ---- gather / scatter ----

mx_status_t mx_build_gather(mx_builder_t *b, int32_t operand, int32_t indices,
                            const mx_gather_dims_t *dims, const int64_t *slice_sizes,
                            bool indices_are_sorted, int32_t *out) {
  const char *op = "stablehlo.gather";
  if (b == NULL || b->func == NULL || dims == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", op);
  }
  const mx_type_t *xt = mx_build_type(b, operand);
  int32_t rank = xt != NULL && xt->kind == MX_TYPE_TENSOR ? xt->rank : 0;
  mx_status_t st = mx_build_check_array(op, "slice_sizes", slice_sizes, rank, MX_MAX_RANK);
  if (st != MX_OK) return st;
  mx_named_attr_t f[6];
  int32_t nf = 0;
  if ((st = add_dims(b, f, &nf, "offset_dims", &dims->offset_dims, op)) != MX_OK) return st;
  if ((st = add_dims(b, f, &nf, "collapsed_slice_dims", &dims->collapsed_slice_dims, op)) !=
      MX_OK) {
    return st;
  }
  if ((st = add_dims(b, f, &nf, "operand_batching_dims", &dims->operand_batching_dims, op)) !=
      MX_OK) {
    return st;
  }
  if ((st = add_dims(b, f, &nf, "start_indices_batching_dims", &dims->start_indices_batching_dims,
                     op)) != MX_OK) {
    return st;
  }
  if ((st = add_dims(b, f, &nf, "start_index_map", &dims->start_index_map, op)) != MX_OK) return st;
  f[nf].name = "index_vector_dim";
  f[nf++].value = mx_attr_int(dims->index_vector_dim, MX_ELEM_I64);
  mx_module_t *m = b->func->module;
  mx_named_attr_t a[3] = {{"dimension_numbers", mx_attr_struct(m, "stablehlo.gather", f, nf)},
                          mx_build_i64s_attr(b, "slice_sizes", slice_sizes, rank),
                          {"indices_are_sorted", mx_attr_bool(indices_are_sorted)}};
  int32_t ops[2] = {operand, indices};
  return emit_results(b, MX_OP_GATHER, ops, 2, a, 3, NULL, 1, out, NULL);
}

mx_status_t mx_build_scatter_region(mx_builder_t *b, const int32_t *inputs, int32_t n,
                                    int32_t indices, const int32_t *updates,
                                    const mx_scatter_dims_t *dims, bool indices_are_sorted,
                                    bool unique_indices, mx_op_t **op_out) {
  const char *op = "stablehlo.scatter";
  if (op_out != NULL) *op_out = NULL;
  if (b == NULL || b->func == NULL || dims == NULL || op_out == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", op);
  }
  mx_status_t st = mx_build_check_array(op, "inputs", inputs, n, 1 << 16);
  if (st == MX_OK) st = mx_build_check_array(op, "updates", updates, n, 1 << 16);
  if (st != MX_OK) return st;
  if (n == 0) return mx_error_set(MX_ERR_VERIFY, "%s: expected at least one input", op);
  mx_named_attr_t f[6];
  int32_t nf = 0;
  if ((st = add_dims(b, f, &nf, "update_window_dims", &dims->update_window_dims, op)) != MX_OK) {
    return st;
  }
  if ((st = add_dims(b, f, &nf, "inserted_window_dims", &dims->inserted_window_dims, op)) !=
      MX_OK) {
    return st;
  }
  if ((st = add_dims(b, f, &nf, "input_batching_dims", &dims->input_batching_dims, op)) != MX_OK) {
    return st;
  }
  if ((st = add_dims(b, f, &nf, "scatter_indices_batching_dims",
                     &dims->scatter_indices_batching_dims, op)) != MX_OK) {
    return st;
  }
  if ((st = add_dims(b, f, &nf, "scatter_dims_to_operand_dims", &dims->scatter_dims_to_operand_dims,
                     op)) != MX_OK) {
    return st;
  }
  f[nf].name = "index_vector_dim";
  f[nf++].value = mx_attr_int(dims->index_vector_dim, MX_ELEM_I64);
  mx_module_t *m = b->func->module;
  mx_named_attr_t a[3] = {
      {"scatter_dimension_numbers", mx_attr_struct(m, "stablehlo.scatter", f, nf)},
      {"indices_are_sorted", mx_attr_bool(indices_are_sorted)},
      {"unique_indices", mx_attr_bool(unique_indices)}};
  int32_t *ops = concat_ids(inputs, n, &indices, 1, updates, n);
  mx_elem_type_t *ets = malloc(sizeof(mx_elem_type_t) * (size_t)n);
  mx_op_t *o = NULL;
  if (ops == NULL || ets == NULL) {
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  } else {
    st = emit_results(b, MX_OP_SCATTER, ops, 2 * n + 1, a, 3, NULL, n, NULL, &o);
  }
  if (st == MX_OK) {
    value_elems(b, inputs, n, ets);
    st = mx_build_add_scalar_region(b, o, ets, n, true, NULL);
  }
  free(ops);
  free(ets);
  if (st == MX_OK) *op_out = o;
  return st;
}

mx_status_t mx_build_scatter(mx_builder_t *b, int32_t input, int32_t indices, int32_t updates,
                             const mx_scatter_dims_t *dims, mx_opcode_t combiner,
                             bool indices_are_sorted, bool unique_indices, int32_t *out) {
  mx_op_t *op;
  mx_status_t st = mx_build_scatter_region(b, &input, 1, indices, &updates, dims,
                                           indices_are_sorted, unique_indices, &op);
  if (st != MX_OK) return st;
  if ((st = mx_build_binary_body(b, op->regions[0], combiner)) != MX_OK) return st;
  if (out != NULL) *out = op->results[0];
  return MX_OK;
}

// ---- dot_general / convolution ----

mx_status_t mx_build_dot_general(mx_builder_t *b, int32_t lhs, int32_t rhs,
                                 const mx_dot_dims_t *dims, mx_elem_type_t result_et,
                                 int32_t *out) {
  const char *op = "stablehlo.dot_general";
  if (b == NULL || b->func == NULL || dims == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", op);
  }
  const mx_type_t *lt = mx_build_type(b, lhs), *rt = mx_build_type(b, rhs);
  if (lt != NULL && rt != NULL && lt->kind == MX_TYPE_TENSOR && rt->kind == MX_TYPE_TENSOR &&
      lt->elem != rt->elem) {
    char l[160], r[160];
    return mx_error_set(MX_ERR_VERIFY, "%s: operand element types differ: lhs %s, rhs %s", op,
                        mx_type_str(lt, l, sizeof l), mx_type_str(rt, r, sizeof r));
  }
  if (result_et < MX_ELEM_INVALID || result_et >= MX_ELEM_COUNT) {
    return mx_error_set(MX_ERR_VERIFY, "%s: invalid result element type", op);
  }
  mx_named_attr_t f[4];
  int32_t nf = 0;
  mx_status_t st;
  if ((st = add_dims(b, f, &nf, "lhs_batching_dimensions", &dims->lhs_batching_dims, op)) ||
      (st = add_dims(b, f, &nf, "rhs_batching_dimensions", &dims->rhs_batching_dims, op)) ||
      (st = add_dims(b, f, &nf, "lhs_contracting_dimensions", &dims->lhs_contracting_dims, op)) ||
      (st = add_dims(b, f, &nf, "rhs_contracting_dimensions", &dims->rhs_contracting_dims, op))) {
    return st;
  }
  mx_named_attr_t a = {"dot_dimension_numbers",
                       mx_attr_struct(b->func->module, "stablehlo.dot", f, nf)};
  mx_type_t decl = mx_type_scalar(result_et != MX_ELEM_INVALID ? result_et
                                  : lt != NULL                 ? lt->elem
                                                               : MX_ELEM_F32);
  int32_t ops[2] = {lhs, rhs};
  return emit_results(b, MX_OP_DOT_GENERAL, ops, 2, &a, 1, &decl, 1, out, NULL);
}

// DENSE tensor<n x 2 x i64> (the canonical padding attribute).
static mx_attr_t padding_attr(mx_builder_t *b, const int64_t *pad, int32_t n) {
  int64_t dims[2] = {n, 2};
  mx_tensor_t t;
  memset(&t, 0, sizeof t);
  t.type = mx_type_tensor(MX_ELEM_I64, 2, dims);
  int64_t zero = 0;
  t.data = (uint8_t *)(n > 0 ? (const void *)pad : (const void *)&zero);
  t.nbytes = sizeof(int64_t) * 2 * (size_t)n;
  return mx_attr_dense(b->func->module, &t);
}

mx_status_t mx_build_convolution(mx_builder_t *b, int32_t lhs, int32_t rhs,
                                 const mx_conv_params_t *p, mx_elem_type_t result_et,
                                 int32_t *out) {
  const char *op = "stablehlo.convolution";
  if (b == NULL || b->func == NULL || p == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", op);
  }
  if (result_et < MX_ELEM_INVALID || result_et >= MX_ELEM_COUNT) {
    return mx_error_set(MX_ERR_VERIFY, "%s: invalid result element type", op);
  }
  int32_t ns = p->input_spatial_dims.n;
  mx_status_t st;
  if ((st = mx_build_check_array(op, "input_spatial_dims", p->input_spatial_dims.v, ns,
                                 MX_MAX_RANK)) ||
      (st = mx_build_check_array(op, "kernel_spatial_dims", p->kernel_spatial_dims.v,
                                 p->kernel_spatial_dims.n, MX_MAX_RANK)) ||
      (st = mx_build_check_array(op, "output_spatial_dims", p->output_spatial_dims.v,
                                 p->output_spatial_dims.n, MX_MAX_RANK))) {
    return st;
  }
  if (p->kernel_spatial_dims.n != ns || p->output_spatial_dims.n != ns) {
    return mx_error_set(MX_ERR_VERIFY,
                        "%s: input, kernel and output spatial dimension lists "
                        "have different lengths (%d, %d, %d)",
                        op, ns, p->kernel_spatial_dims.n, p->output_spatial_dims.n);
  }
  mx_module_t *m = b->func->module;
  mx_named_attr_t f[9] = {
      {"input_batch_dimension", mx_attr_int(p->input_batch_dim, MX_ELEM_I64)},
      {"input_feature_dimension", mx_attr_int(p->input_feature_dim, MX_ELEM_I64)},
      mx_build_i64s_attr(b, "input_spatial_dimensions", p->input_spatial_dims.v, ns),
      {"kernel_input_feature_dimension", mx_attr_int(p->kernel_input_feature_dim, MX_ELEM_I64)},
      {"kernel_output_feature_dimension", mx_attr_int(p->kernel_output_feature_dim, MX_ELEM_I64)},
      mx_build_i64s_attr(b, "kernel_spatial_dimensions", p->kernel_spatial_dims.v, ns),
      {"output_batch_dimension", mx_attr_int(p->output_batch_dim, MX_ELEM_I64)},
      {"output_feature_dimension", mx_attr_int(p->output_feature_dim, MX_ELEM_I64)},
      mx_build_i64s_attr(b, "output_spatial_dimensions", p->output_spatial_dims.v, ns)};
  mx_named_attr_t a[8];
  int32_t na = 0;
  if (p->window_strides) a[na++] = mx_build_i64s_attr(b, "window_strides", p->window_strides, ns);
  if (p->padding) a[na++] = (mx_named_attr_t){"padding", padding_attr(b, p->padding, ns)};
  if (p->lhs_dilation) a[na++] = mx_build_i64s_attr(b, "lhs_dilation", p->lhs_dilation, ns);
  if (p->rhs_dilation) a[na++] = mx_build_i64s_attr(b, "rhs_dilation", p->rhs_dilation, ns);
  if (p->window_reversal) {
    a[na++] = (mx_named_attr_t){"window_reversal", mx_attr_bools(m, p->window_reversal, ns)};
  }
  a[na++] = (mx_named_attr_t){"dimension_numbers", mx_attr_struct(m, "stablehlo.conv", f, 9)};
  a[na++] = (mx_named_attr_t){
      "feature_group_count",
      mx_attr_int(p->feature_group_count > 0 ? p->feature_group_count : 1, MX_ELEM_I64)};
  a[na++] = (mx_named_attr_t){
      "batch_group_count",
      mx_attr_int(p->batch_group_count > 0 ? p->batch_group_count : 1, MX_ELEM_I64)};
  const mx_type_t *lt = mx_build_type(b, lhs);
  mx_type_t decl = mx_type_scalar(result_et != MX_ELEM_INVALID ? result_et
                                  : lt != NULL                 ? lt->elem
                                                               : MX_ELEM_F32);
  int32_t ops[2] = {lhs, rhs};
  return emit_results(b, MX_OP_CONVOLUTION, ops, 2, a, na, &decl, 1, out, NULL);
}

// ---- reduce / reduce_window ----

static mx_status_t reduce_like(mx_builder_t *b, mx_opcode_t code, const int32_t *inputs,
                               const int32_t *inits, int32_t n, const mx_named_attr_t *attrs,
                               int32_t n_attrs, mx_op_t **op_out) {
  const char *op = mx_opcode_name(code);
  if (op_out != NULL) *op_out = NULL;
  if (b == NULL || b->func == NULL || op_out == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", op);
  }
  mx_status_t st = mx_build_check_array(op, "inputs", inputs, n, 1 << 16);
  if (st == MX_OK) st = mx_build_check_array(op, "init values", inits, n, 1 << 16);
  if (st != MX_OK) return st;
  if (n == 0) return mx_error_set(MX_ERR_VERIFY, "%s: expected at least one input", op);
  int32_t *ops = concat_ids(inputs, n, inits, n, NULL, 0);
  mx_elem_type_t *ets = malloc(sizeof(mx_elem_type_t) * (size_t)n);
  mx_op_t *o = NULL;
  if (ops == NULL || ets == NULL) {
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  } else {
    st = emit_results(b, code, ops, 2 * n, attrs, n_attrs, NULL, n, NULL, &o);
  }
  if (st == MX_OK) {
    value_elems(b, inits, n, ets);
    st = mx_build_add_scalar_region(b, o, ets, n, true, NULL);
  }
  free(ops);
  free(ets);
  if (st == MX_OK) *op_out = o;
  return st;
}

static mx_status_t check_init_matches(mx_builder_t *b, const char *op, int32_t x, int32_t init) {
  const mx_type_t *xt = mx_build_type(b, x), *it = mx_build_type(b, init);
  if (xt != NULL && it != NULL && xt->kind == MX_TYPE_TENSOR && it->kind == MX_TYPE_TENSOR &&
      xt->elem != it->elem) {
    char s1[160], s2[160];
    return mx_error_set(MX_ERR_VERIFY,
                        "%s: init value type %s does not match the element type "
                        "of input %s",
                        op, mx_type_str(it, s1, sizeof s1), mx_type_str(xt, s2, sizeof s2));
  }
  return MX_OK;
}

mx_status_t mx_build_reduce_region(mx_builder_t *b, const int32_t *inputs, const int32_t *inits,
                                   int32_t n, const int64_t *dims, int32_t n_dims, mx_op_t **op) {
  mx_status_t st =
      mx_build_check_array("stablehlo.reduce", "dimensions", dims, n_dims, MX_ILIST_CAP);
  if (st != MX_OK) return st;
  if (b == NULL || b->func == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "stablehlo.reduce: invalid builder");
  }
  mx_named_attr_t a = mx_build_i64s_attr(b, "dimensions", dims, n_dims);
  return reduce_like(b, MX_OP_REDUCE, inputs, inits, n, &a, 1, op);
}

mx_status_t mx_build_reduce(mx_builder_t *b, int32_t x, int32_t init, const int64_t *dims,
                            int32_t n_dims, mx_opcode_t body, int32_t *out) {
  if (b == NULL || b->func == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "stablehlo.reduce: invalid builder");
  }
  mx_status_t st = check_init_matches(b, "stablehlo.reduce", x, init);
  if (st != MX_OK) return st;
  mx_op_t *op;
  if ((st = mx_build_reduce_region(b, &x, &init, 1, dims, n_dims, &op)) != MX_OK) return st;
  if ((st = mx_build_binary_body(b, op->regions[0], body)) != MX_OK) return st;
  if (out != NULL) *out = op->results[0];
  return MX_OK;
}

mx_status_t mx_build_reduce_window_region(mx_builder_t *b, const int32_t *inputs,
                                          const int32_t *inits, int32_t n, const mx_window_t *w,
                                          mx_op_t **op) {
  const char *name = "stablehlo.reduce_window";
  if (b == NULL || b->func == NULL || w == NULL || inputs == NULL || n <= 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", name);
  }
  const mx_type_t *xt = mx_build_type(b, inputs[0]);
  int32_t r = xt != NULL && xt->kind == MX_TYPE_TENSOR ? xt->rank : 0;
  mx_status_t st = mx_build_check_array(name, "window dims", w->dims, r, MX_MAX_RANK);
  if (st != MX_OK) return st;
  mx_named_attr_t a[5];
  int32_t na = 0;
  a[na++] = mx_build_i64s_attr(b, "window_dimensions", w->dims, r);
  if (w->strides) a[na++] = mx_build_i64s_attr(b, "window_strides", w->strides, r);
  if (w->base_dilations) a[na++] = mx_build_i64s_attr(b, "base_dilations", w->base_dilations, r);
  if (w->window_dilations) {
    a[na++] = mx_build_i64s_attr(b, "window_dilations", w->window_dilations, r);
  }
  if (w->padding) a[na++] = (mx_named_attr_t){"padding", padding_attr(b, w->padding, r)};
  return reduce_like(b, MX_OP_REDUCE_WINDOW, inputs, inits, n, a, na, op);
}

mx_status_t mx_build_reduce_window(mx_builder_t *b, int32_t x, int32_t init, const mx_window_t *w,
                                   mx_opcode_t body, int32_t *out) {
  if (b == NULL || b->func == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "stablehlo.reduce_window: invalid builder");
  }
  mx_status_t st = check_init_matches(b, "stablehlo.reduce_window", x, init);
  if (st != MX_OK) return st;
  mx_op_t *op;
  if ((st = mx_build_reduce_window_region(b, &x, &init, 1, w, &op)) != MX_OK) return st;
  if ((st = mx_build_binary_body(b, op->regions[0], body)) != MX_OK) return st;
  if (out != NULL) *out = op->results[0];
  return MX_OK;
}

// ---- sort ----

mx_status_t mx_build_sort_region(mx_builder_t *b, const int32_t *inputs, int32_t n, int64_t dim,
                                 bool is_stable, mx_op_t **op_out) {
  const char *op = "stablehlo.sort";
  if (op_out != NULL) *op_out = NULL;
  if (b == NULL || b->func == NULL || op_out == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", op);
  }
  mx_status_t st = mx_build_check_array(op, "inputs", inputs, n, 1 << 16);
  if (st != MX_OK) return st;
  if (n == 0) return mx_error_set(MX_ERR_VERIFY, "%s: expected at least one input", op);
  mx_named_attr_t a[2] = {{"dimension", mx_attr_int(dim, MX_ELEM_I64)},
                          {"is_stable", mx_attr_bool(is_stable)}};
  mx_op_t *o;
  if ((st = emit_results(b, MX_OP_SORT, inputs, n, a, 2, NULL, n, NULL, &o)) != MX_OK) return st;
  mx_type_t *types = malloc(sizeof(mx_type_t) * 2 * (size_t)n);
  if (types == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) {
    types[2 * i] = types[2 * i + 1] = mx_type_scalar(mx_build_type(b, inputs[i])->elem);
  }
  st = add_region(b, o, types, 2 * n);
  free(types);
  if (st == MX_OK) *op_out = o;
  return st;
}

mx_status_t mx_build_sort(mx_builder_t *b, const int32_t *inputs, int32_t n, int64_t dim,
                          bool is_stable, mx_compare_dir_t dir, int32_t *results) {
  if (mx_compare_dir_name(dir) == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "stablehlo.sort: invalid comparison direction");
  }
  mx_op_t *op;
  mx_status_t st = mx_build_sort_region(b, inputs, n, dim, is_stable, &op);
  if (st != MX_OK) return st;
  mx_block_t *r = op->regions[0];
  mx_builder_t rb = mx_builder_at(b->func, r);
  int32_t c;
  if ((st = mx_build_compare(&rb, dir, MX_CMP_TYPE_AUTO, r->args[0], r->args[1], &c)) != MX_OK) {
    return st;
  }
  if ((st = mx_build_return(&rb, &c, 1)) != MX_OK) return st;
  for (int32_t i = 0; results != NULL && i < n; i++) results[i] = op->results[i];
  return MX_OK;
}

// ---- control flow and structure ----

mx_status_t mx_build_while(mx_builder_t *b, const int32_t *operands, int32_t n, mx_op_t **op_out) {
  const char *op = "stablehlo.while";
  if (op_out != NULL) *op_out = NULL;
  if (b == NULL || b->func == NULL || op_out == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", op);
  }
  mx_status_t st = mx_build_check_array(op, "operands", operands, n, 1 << 16);
  if (st != MX_OK) return st;
  mx_op_t *o;
  if ((st = emit_results(b, MX_OP_WHILE, operands, n, NULL, 0, NULL, n, NULL, &o)) != MX_OK) {
    return st;
  }
  mx_type_t *types = malloc(sizeof(mx_type_t) * (size_t)(n + 1));
  if (types == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) types[i] = *mx_build_type(b, operands[i]);
  st = add_region(b, o, types, n);
  if (st == MX_OK) st = add_region(b, o, types, n);
  free(types);
  if (st == MX_OK) *op_out = o;
  return st;
}

static mx_status_t branching(mx_builder_t *b, mx_opcode_t code, int32_t operand, int32_t n_branches,
                             const mx_type_t *result_types, int32_t n_results, mx_op_t **op_out) {
  const char *op = mx_opcode_name(code);
  if (op_out != NULL) *op_out = NULL;
  if (b == NULL || b->func == NULL || op_out == NULL || n_branches <= 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", op);
  }
  mx_status_t st = mx_build_check_array(op, "result types", result_types, n_results, 1 << 16);
  if (st != MX_OK) return st;
  mx_op_t *o;
  st = emit_results(b, code, &operand, 1, NULL, 0, result_types, n_results, NULL, &o);
  for (int32_t i = 0; st == MX_OK && i < n_branches; i++) st = add_region(b, o, NULL, 0);
  if (st == MX_OK) *op_out = o;
  return st;
}

mx_status_t mx_build_if(mx_builder_t *b, int32_t pred, const mx_type_t *result_types,
                        int32_t n_results, mx_op_t **op) {
  return branching(b, MX_OP_IF, pred, 2, result_types, n_results, op);
}

mx_status_t mx_build_case(mx_builder_t *b, int32_t index, int32_t n_branches,
                          const mx_type_t *result_types, int32_t n_results, mx_op_t **op) {
  return branching(b, MX_OP_CASE, index, n_branches, result_types, n_results, op);
}

static const mx_func_t *find_callee(mx_builder_t *b, const char *op, const char *name,
                                    mx_status_t *st) {
  *st = MX_OK;
  if (b == NULL || b->func == NULL || name == NULL) {
    *st = mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", op);
    return NULL;
  }
  const mx_func_t *f = mx_module_find_func(b->func->module, name);
  if (f == NULL) *st = mx_error_set(MX_ERR_VERIFY, "%s: unknown function @%s", op, name);
  return f;
}

mx_status_t mx_build_call(mx_builder_t *b, const char *callee, const int32_t *args, int32_t n,
                          int32_t *results) {
  mx_status_t st;
  const mx_func_t *f = find_callee(b, "func.call", callee, &st);
  if (f == NULL) return st;
  if ((st = mx_build_check_array("func.call", "arguments", args, n, 1 << 16)) != MX_OK) return st;
  mx_named_attr_t a = {"callee", mx_attr_symbol(b->func->module, callee)};
  return emit_results(b, MX_OP_FUNC_CALL, args, n, &a, 1, NULL, f->n_results, results, NULL);
}

mx_status_t mx_build_return(mx_builder_t *b, const int32_t *values, int32_t n) {
  if (b == NULL || b->func == NULL || b->block == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "return: builder has no insertion point");
  }
  mx_status_t st = mx_build_check_array("return", "values", values, n, 1 << 16);
  if (st != MX_OK) return st;
  mx_func_t *f = b->func;
  if (b->block != f->body) {
    return emit_results(b, MX_OP_RETURN, values, n, NULL, 0, NULL, 0, NULL, NULL);
  }
  for (int32_t i = 0; i < n; i++) {
    if (mx_value_type(f, values[i]) == NULL) {
      return mx_error_set(MX_ERR_VERIFY, "func.return: operand %d refers to an unknown value", i);
    }
  }
  bool set_types = f->n_results == 0 && n > 0;
  if (!set_types) {
    if (f->n_results != n) {
      return mx_error_set(MX_ERR_VERIFY, "func.return: @%s returns %d values, got %d", f->name,
                          f->n_results, n);
    }
    for (int32_t i = 0; i < n; i++) {
      const mx_type_t *t = mx_value_type(f, values[i]);
      if (!mx_type_equal(t, &f->result_types[i])) {
        char s1[160], s2[160];
        return mx_error_set(MX_ERR_VERIFY,
                            "func.return: operand %d type %s does not match @%s "
                            "result type %s",
                            i, mx_type_str(t, s1, sizeof s1), f->name,
                            mx_type_str(&f->result_types[i], s2, sizeof s2));
      }
    }
  }
  if ((st = emit_results(b, MX_OP_FUNC_RETURN, values, n, NULL, 0, NULL, 0, NULL, NULL)) != MX_OK) {
    return st;
  }
  if (set_types) {
    mx_type_t *types = malloc(sizeof(mx_type_t) * (size_t)n);
    if (types == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < n; i++) types[i] = *mx_value_type(f, values[i]);
    st = mx_func_set_result_types(f, types, n);
    free(types);
  }
  return st;
}

mx_status_t mx_build_composite(mx_builder_t *b, const char *name, const int32_t *operands,
                               int32_t n, const mx_named_attr_t *attrs, int32_t n_attrs,
                               const char *decomposition, int32_t version, int32_t *results) {
  const char *op = "stablehlo.composite";
  mx_status_t st;
  const mx_func_t *f = find_callee(b, op, decomposition, &st);
  if (f == NULL) return st;
  if (name == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "%s: NULL name", op);
  if ((st = mx_build_check_array(op, "operands", operands, n, 1 << 16)) != MX_OK) return st;
  if ((st = mx_build_check_array(op, "attributes", attrs, n_attrs, 1 << 16)) != MX_OK) return st;
  mx_module_t *m = b->func->module;
  mx_named_attr_t a[4];
  int32_t na = 0;
  a[na++] = (mx_named_attr_t){"name", mx_attr_string(m, name)};
  if (n_attrs > 0) {
    a[na++] = (mx_named_attr_t){"composite_attributes", mx_attr_dict(m, attrs, n_attrs)};
  }
  a[na++] = (mx_named_attr_t){"decomposition", mx_attr_symbol(m, decomposition)};
  if (version != 0) a[na++] = (mx_named_attr_t){"version", mx_attr_int(version, MX_ELEM_I32)};
  return emit_results(b, MX_OP_COMPOSITE, operands, n, a, na, NULL, f->n_results, results, NULL);
}

mx_status_t mx_build_custom_call(mx_builder_t *b, const char *target, const int32_t *operands,
                                 int32_t n, const mx_type_t *result_types, int32_t n_results,
                                 bool has_side_effect, const char *backend_config,
                                 int32_t *results) {
  const char *op = "stablehlo.custom_call";
  if (b == NULL || b->func == NULL || target == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: invalid argument", op);
  }
  mx_status_t st = mx_build_check_array(op, "operands", operands, n, 1 << 16);
  if (st == MX_OK) st = mx_build_check_array(op, "result types", result_types, n_results, 1 << 16);
  if (st != MX_OK) return st;
  mx_module_t *m = b->func->module;
  mx_named_attr_t a[3];
  int32_t na = 0;
  a[na++] = (mx_named_attr_t){"call_target_name", mx_attr_string(m, target)};
  if (has_side_effect) a[na++] = (mx_named_attr_t){"has_side_effect", mx_attr_bool(true)};
  if (backend_config != NULL) {
    a[na++] = (mx_named_attr_t){"backend_config", mx_attr_string(m, backend_config)};
  }
  return emit_results(b, MX_OP_CUSTOM_CALL, operands, n, a, na, result_types, n_results, results,
                      NULL);
}
