// Small op-building helpers shared by the graph core and the composite decompositions.
#include <math.h>

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

mx_status_t mx_g_indicator(mx_builder_t *b, int32_t cond, int32_t *out) {
  int32_t one, zero;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 1.0, cond, &one));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.0, cond, &zero));
  return mx_build_select(b, cond, one, zero, out);
}

// concatenate of xs[0..n) along dim, in groups of at most 8 operands (the cpu runtime's step
// limit; a larger concatenate would hand the whole entry to the interpreter). Overwrites xs.
mx_status_t mx_g_concat(mx_builder_t *b, int32_t *xs, int32_t n, int64_t dim, int32_t *out) {
  while (n > 8) {
    int32_t m = 0;
    for (int32_t i = 0; i < n; i += 8) {
      int32_t k = n - i < 8 ? n - i : 8;
      if (k == 1) {
        xs[m++] = xs[i];
      } else {
        MX_TRY(mx_build_concatenate(b, xs + i, k, dim, &xs[m++]));
      }
    }
    n = m;
  }
  return n == 1 ? (*out = xs[0], MX_OK) : mx_build_concatenate(b, xs, n, dim, out);
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
// result; any other weight is converted to f32. x's last dim is contracted with w's dim rc.
static mx_status_t linear_dim(mx_builder_t *b, int32_t x, int32_t w, int64_t rc, int32_t *out) {
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
  int64_t lc = xt->rank - 1;
  mx_dot_dims_t d = {{NULL, 0}, {NULL, 0}, {&lc, 1}, {&rc, 1}};
  return mx_build_dot_general(b, lhs, rhs, &d, MX_ELEM_F32, out);
}

mx_status_t mx_g_linear(mx_builder_t *b, int32_t x, int32_t w, int32_t *out) {
  return linear_dim(b, x, w, 1, out);
}

mx_status_t mx_g_matmul_w(mx_builder_t *b, int32_t x, int32_t w, int32_t *out) {
  return linear_dim(b, x, w, 0, out);
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

// The sum is a dot_general with a vector of ones rather than a reduce: a reduce carries a
// region, which the cpu runtime runs only by handing the whole function to the interpreter,
// while a dot_general is one op of the plan.
mx_status_t mx_g_mean_last(mx_builder_t *b, int32_t x, int32_t *out) {
  const mx_type_t *xt = mx_build_type(b, x);
  if (xt == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad value id %d", x);
  mx_type_t t = *xt;
  int64_t last = t.rank - 1, zero_dim = 0, H = t.dims[last];
  mx_type_t ot = mx_type_tensor(MX_ELEM_F32, 1, &H);
  int32_t ones, sum, n;
  MX_TRY(mx_build_splat(b, &ot, 1.0, &ones));
  mx_dot_dims_t dd = {{NULL, 0}, {NULL, 0}, {&last, 1}, {&zero_dim, 1}};
  MX_TRY(mx_build_dot_general(b, x, ones, &dd, MX_ELEM_F32, &sum));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, (double)H, sum, &n));
  return mx_build_binary(b, MX_OP_DIVIDE, sum, n, out);
}

mx_status_t mx_g_center(mx_builder_t *b, int32_t x, int32_t *out) {
  const mx_type_t *xt = mx_build_type(b, x);
  if (xt == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad value id %d", x);
  int64_t lead[MX_MAX_RANK];
  for (int32_t i = 0; i < xt->rank - 1; i++) lead[i] = i;
  int32_t mean, mean_b;
  MX_TRY(mx_g_mean_last(b, x, &mean));
  MX_TRY(mx_g_bcast_like(b, mean, x, lead, &mean_b));
  return mx_build_binary(b, MX_OP_SUBTRACT, x, mean_b, out);
}

double mx_g_round_to(mx_elem_type_t dt, double v) {
  if (dt == MX_ELEM_BF16 || dt == MX_ELEM_F16) return mx_float_decode(dt, mx_float_encode(dt, v));
  if (dt == MX_ELEM_F64) return v;
  return (double)(float)v;
}

// p(x) / q(x) with x clamped to [-4, 4] (erf(4) is 1 in f32), p odd of degree 13, q even of
// degree 8, evaluated in f32 by Horner's rule in x^2: the float approximation Eigen and XLA
// use for erf (their published coefficients; max error 4.2e-7 against erf on [-6, 6]).
static const double kErfNum[7] = {
    -2.72614225801306e-10, 2.77068142495902e-08,  -2.10102402082508e-06, -5.69250639462346e-05,
    -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02};
static const double kErfDen[5] = {-1.45660718464996e-05, -2.13374055278905e-04,
                                  -1.68282697438203e-03, -7.37332916720468e-03,
                                  -1.42647390514189e-02};

static mx_status_t horner(mx_builder_t *b, int32_t x2, const double *c, int32_t n, int32_t *out) {
  int32_t acc, k;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, c[0], x2, &acc));
  for (int32_t i = 1; i < n; i++) {
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, acc, x2, &acc));
    MX_TRY(mx_g_full_like(b, MX_ELEM_F32, c[i], x2, &k));
    MX_TRY(mx_build_binary(b, MX_OP_ADD, acc, k, &acc));
  }
  *out = acc;
  return MX_OK;
}

mx_status_t mx_g_erf(mx_builder_t *b, int32_t x, int32_t *out) {
  int32_t lo, hi, xc, x2, p, px, q;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, -4.0, x, &lo));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 4.0, x, &hi));
  MX_TRY(mx_build_clamp(b, lo, x, hi, &xc));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, xc, xc, &x2));
  MX_TRY(horner(b, x2, kErfNum, 7, &p));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, p, xc, &px));
  MX_TRY(horner(b, x2, kErfDen, 5, &q));
  return mx_build_binary(b, MX_OP_DIVIDE, px, q, out);
}

mx_status_t mx_g_softmax_last(mx_builder_t *b, int32_t x, int32_t *out) {
  const mx_type_t *xt = mx_build_type(b, x);
  if (xt == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad value id %d", x);
  int64_t last = xt->rank - 1, lead[MX_MAX_RANK];
  for (int32_t i = 0; i < xt->rank - 1; i++) lead[i] = i;
  int32_t ninf, mx, mxb, diff, e, zero, sum, sumb;
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, -INFINITY, &ninf));
  MX_TRY(mx_build_reduce(b, x, ninf, &last, 1, MX_OP_MAXIMUM, &mx));
  MX_TRY(mx_g_bcast_like(b, mx, x, lead, &mxb));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, x, mxb, &diff));
  MX_TRY(mx_build_unary(b, MX_OP_EXPONENTIAL, diff, &e));
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, 0.0, &zero));
  MX_TRY(mx_build_reduce(b, e, zero, &last, 1, MX_OP_ADD, &sum));
  MX_TRY(mx_g_bcast_like(b, sum, e, lead, &sumb));
  return mx_build_binary(b, MX_OP_DIVIDE, e, sumb, out);
}

// id_lo <= t && t <= id_hi for tokens [B, T] i32, as i1.
static mx_status_t in_range(mx_builder_t *b, int32_t tokens, int32_t id_lo, int32_t id_hi,
                            int32_t *is) {
  const mx_type_t *tt = mx_build_type(b, tokens);
  if (tt == NULL || tt->rank != 2)
    return mx_error_set(MX_ERR_INVALID_ARG, "graph: block ids need tokens [B, T]");
  int32_t vlo, vhi, ge, below;
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, (double)id_lo, tokens, &vlo));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, (double)id_hi, tokens, &vhi));
  MX_TRY(mx_build_compare(b, MX_CMP_GE, MX_CMP_TYPE_AUTO, tokens, vlo, &ge));
  MX_TRY(mx_build_compare(b, MX_CMP_LE, MX_CMP_TYPE_AUTO, tokens, vhi, &below));
  return mx_build_select(b, ge, below, ge, is);
}

mx_status_t mx_g_range_ids(mx_builder_t *b, int32_t tokens, int32_t id_lo, int32_t id_hi,
                           int32_t *out) {
  int32_t is, zero, neg;
  MX_TRY(in_range(b, tokens, id_lo, id_hi, &is));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 0.0, tokens, &zero));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, -1.0, tokens, &neg));
  return mx_build_select(b, is, zero, neg, out);
}

// The run count is a running sum of the run starts: a dot_general with the triangle (j <= t) of
// ones, exact in f32 for any T the graphs take, and one op of the cpu plan (a reduce_window
// would carry a region).
mx_status_t mx_g_run_ids(mx_builder_t *b, int32_t tokens, int32_t token_id, int32_t *out) {
  int32_t is, isf, starts = -1, tri, cum, ids, one, neg;
  MX_TRY(in_range(b, tokens, token_id, token_id, &is));
  const mx_type_t *tt = mx_build_type(b, tokens);
  int64_t B = tt->dims[0], T = tt->dims[1], tri_d[2] = {T, T};
  // 0 / 1 as a select of splats, not a convert of the i1: the running count below is a
  // vector-matrix dot_general (IREE 3.13, docs/portability.md).
  MX_TRY(mx_g_indicator(b, is, &isf));
  starts = isf;
  if (T > 1) {  // starts = is * (1 - is shifted right by one)
    int64_t lo[2] = {0, 0}, hi[2] = {B, T - 1}, zd[2] = {B, 1};
    mx_type_t zt = mx_type_tensor(MX_ELEM_F32, 2, zd);
    int32_t head, zero, prev, onef, notprev;
    MX_TRY(mx_build_slice(b, isf, lo, hi, NULL, 2, &head));
    MX_TRY(mx_build_splat(b, &zt, 0.0, &zero));
    int32_t parts[2] = {zero, head};
    MX_TRY(mx_build_concatenate(b, parts, 2, 1, &prev));
    MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 1.0, prev, &onef));
    MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, onef, prev, &notprev));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, isf, notprev, &starts));
  }
  mx_type_t it = mx_type_tensor(MX_ELEM_I32, 2, tri_d);
  int32_t jj, ti, le;
  MX_TRY(mx_build_iota(b, &it, 0, &jj));
  MX_TRY(mx_build_iota(b, &it, 1, &ti));
  MX_TRY(mx_build_compare(b, MX_CMP_LE, MX_CMP_TYPE_AUTO, jj, ti, &le));
  MX_TRY(mx_g_indicator(b, le, &tri));
  int64_t lc = 1, rc = 0;
  mx_dot_dims_t dd = {{NULL, 0}, {NULL, 0}, {&lc, 1}, {&rc, 1}};
  MX_TRY(mx_build_dot_general(b, starts, tri, &dd, MX_ELEM_F32, &cum));  // runs begun by t
  MX_TRY(mx_build_convert(b, cum, MX_ELEM_I32, &ids));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 1.0, ids, &one));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, ids, one, &ids));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, -1.0, ids, &neg));
  return mx_build_select(b, is, ids, neg, out);
}
