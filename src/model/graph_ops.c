// Small op-building helpers shared by the graph core and the composite decompositions.
#include "model/graph_internal.h"

mx_status_t mx_g_f32(mx_builder_t *b, int32_t x, int32_t *out) {
  const mx_type_t *t = mx_build_type(b, x);
  if (t == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad value id %d", x);
  if (t->elem == MX_ELEM_F32) {
    *out = x;
    return MX_OK;
  }
  return mx_build_convert(b, x, MX_ELEM_F32, out);
}

mx_status_t mx_g_full_like(mx_builder_t *b, mx_elem_type_t et, double v, int32_t like,
                           int32_t *out) {
  const mx_type_t *t = mx_build_type(b, like);
  if (t == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad value id %d", like);
  mx_type_t lt = *t;
  int32_t s;
  MX_TRY(mx_build_scalar(b, et, v, &s));
  return mx_build_broadcast_in_dim(b, s, lt.dims, lt.rank, NULL, out);
}

mx_status_t mx_g_bcast_like(mx_builder_t *b, int32_t x, int32_t like, const int64_t *bdims,
                            int32_t *out) {
  const mx_type_t *t = mx_build_type(b, like);
  if (t == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad value id %d", like);
  mx_type_t lt = *t;
  return mx_build_broadcast_in_dim(b, x, lt.dims, lt.rank, bdims, out);
}

// The precision of a linear layer is its weight's element type: an f16 / bf16 weight (made
// resident in that type by the loader's precision pass) gets its activation converted to the
// same type, so the dot_general multiplies f16 / bf16 inputs and accumulates into its f32
// result; any other weight is converted to f32.
mx_status_t mx_g_linear(mx_builder_t *b, int32_t x, int32_t w, int32_t *out) {
  const mx_type_t *wt = mx_build_type(b, w);
  if (wt == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad value id %d", w);
  mx_elem_type_t we = wt->elem;
  int32_t lhs = x, rhs = w;
  if (we == MX_ELEM_F16 || we == MX_ELEM_BF16) {
    const mx_type_t *xt0 = mx_build_type(b, x);
    if (xt0 == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad value id %d", x);
    if (xt0->elem != we) MX_TRY(mx_build_convert(b, x, we, &lhs));
  } else {
    MX_TRY(mx_g_f32(b, w, &rhs));
  }
  const mx_type_t *xt = mx_build_type(b, x);
  if (xt == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad value id %d", x);
  int64_t lc = xt->rank - 1, rc = 1;
  mx_dot_dims_t d = {{NULL, 0}, {NULL, 0}, {&lc, 1}, {&rc, 1}};
  return mx_build_dot_general(b, lhs, rhs, &d, MX_ELEM_F32, out);
}

mx_status_t mx_g_add_bias(mx_builder_t *b, int32_t x, int32_t bias, int32_t *out) {
  int32_t bf, bb;
  MX_TRY(mx_g_f32(b, bias, &bf));
  const mx_type_t *xt = mx_build_type(b, x);
  if (xt == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad value id %d", x);
  int64_t last = xt->rank - 1;
  MX_TRY(mx_g_bcast_like(b, bf, x, &last, &bb));
  return mx_build_binary(b, MX_OP_ADD, x, bb, out);
}

mx_status_t mx_g_reshape(mx_builder_t *b, int32_t x, int32_t rank, const int64_t *dims,
                         int32_t *out) {
  return mx_build_reshape(b, x, dims, rank, out);
}
