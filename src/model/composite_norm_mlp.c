// Decompositions of mx.rms_norm and mx.gated_mlp (plain StableHLO, f32 arithmetic).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/composite_internal.h"

// ---- mx.rms_norm: y = x / sqrt(mean(x^2, last dim) + eps) * (w + weight_offset) ----

typedef struct norm_params {
  double eps, offset;
} norm_params_t;

static mx_status_t build_rms_norm(mx_builder_t *b, const int32_t *args, const void *params,
                                  int32_t *result) {
  const norm_params_t *p = params;
  int32_t x = args[0], w = args[1];
  mx_type_t xt = *mx_build_type(b, x);
  int32_t r = xt.rank;
  int64_t last = r - 1;
  int32_t xx, zero, sum, n, mean, eps, var, inv, inv_b, y, wf, wb, out;
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, x, x, &xx));
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, 0.0, &zero));
  MX_TRY(mx_build_reduce(b, xx, zero, &last, 1, MX_OP_ADD, &sum));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, (double)xt.dims[r - 1], sum, &n));
  MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, sum, n, &mean));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, p->eps, mean, &eps));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, mean, eps, &var));
  MX_TRY(mx_build_unary(b, MX_OP_RSQRT, var, &inv));
  int64_t lead[MX_MAX_RANK];
  for (int32_t i = 0; i < r - 1; i++) lead[i] = i;
  MX_TRY(mx_g_bcast_like(b, inv, x, lead, &inv_b));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, x, inv_b, &y));
  MX_TRY(mx_g_f32(b, w, &wf));
  if (p->offset != 0.0) {
    int32_t off;
    MX_TRY(mx_g_full_like(b, MX_ELEM_F32, p->offset, wf, &off));
    MX_TRY(mx_build_binary(b, MX_OP_ADD, wf, off, &wf));
  }
  MX_TRY(mx_g_bcast_like(b, wf, x, &last, &wb));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, y, wb, &out));
  *result = out;
  return MX_OK;
}

mx_status_t mx_comp_rms_norm(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t w, double eps,
                             double weight_offset, int32_t *out) {
  norm_params_t p = {eps, weight_offset};
  char key[96];
  snprintf(key, sizeof key, "eps=%.17g,off=%.17g", eps, weight_offset);
  mx_comp_rms_norm_t a = {eps, weight_offset};
  mx_named_attr_t attrs[MX_COMPOSITE_MAX_ATTRS];
  int32_t n = mx_comp_rms_norm_write(c->m, &a, attrs);
  int32_t ops[2] = {x, w};
  return mx_comp_call(c, b, MX_COMPOSITE_RMS_NORM, ops, 2, attrs, n, key, build_rms_norm, &p, out);
}

// ---- mx.gated_mlp: down(act(gate(x)) * up(x)) ----

typedef struct mlp_params {
  bool gelu;  // gelu_tanh, else silu
} mlp_params_t;

// 0.5 * g * (1 + tanh(sqrt(2/pi) * (g + 0.044715 * g^3)))
mx_status_t mx_g_gelu_tanh(mx_builder_t *b, int32_t g, int32_t *out) {
  int32_t g2, g3, c1, t1, inner, c2, t2, th, one, t3, half, t4;
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, g, g, &g2));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, g2, g, &g3));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.044715, g, &c1));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, g3, c1, &t1));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, g, t1, &inner));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, sqrt(2.0 / M_PI), g, &c2));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, inner, c2, &t2));
  MX_TRY(mx_build_unary(b, MX_OP_TANH, t2, &th));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 1.0, g, &one));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, th, one, &t3));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.5, g, &half));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, g, half, &t4));
  return mx_build_binary(b, MX_OP_MULTIPLY, t4, t3, out);
}

static mx_status_t build_gated_mlp(mx_builder_t *b, const int32_t *args, const void *params,
                                   int32_t *result) {
  const mlp_params_t *p = params;
  int32_t g, u, a, h;
  MX_TRY(mx_g_linear(b, args[0], args[1], &g));
  MX_TRY(mx_g_linear(b, args[0], args[2], &u));
  if (p->gelu) {
    MX_TRY(mx_g_gelu_tanh(b, g, &a));
  } else {  // silu(g) = g * sigmoid(g)
    int32_t s;
    MX_TRY(mx_build_unary(b, MX_OP_LOGISTIC, g, &s));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, g, s, &a));
  }
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, a, u, &h));
  return mx_g_linear(b, h, args[3], result);
}

mx_status_t mx_comp_gated_mlp(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t w_gate,
                              int32_t w_up, int32_t w_down, const char *activation, int32_t *out) {
  mx_comp_gated_t a;
  if (!mx_activation_parse(activation, &a.activation)) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "mx.gated_mlp: unsupported activation \"%s\"",
                        activation);
  }
  mlp_params_t p = {a.activation == MX_ACT_GELU_TANH};
  mx_named_attr_t attrs[MX_COMPOSITE_MAX_ATTRS];
  int32_t n = mx_comp_gated_write(c->m, &a, attrs);
  int32_t ops[4] = {x, w_gate, w_up, w_down};
  return mx_comp_call(c, b, MX_COMPOSITE_GATED_MLP, ops, 4, attrs, n, activation, build_gated_mlp,
                      &p, out);
}
