// Composites of quantized weights and their plain-StableHLO decompositions:
//   mx.linear(x, w, scales[, biases])       y = x . dequant(w)^T
//   mx.embedding(tokens, w, scales[, biases]) rows = dequant(w)[tokens]
//   mx.gated_act(g, u)                      act(g) * u (the middle of a quantized gated MLP)
// Attributes of the first two: mode ("int8" | "int4" | "affine"), bits (8 | 4), group_size.
// Dequantization (model.h formats), all in f32:
//   int8:   q = convert(w : i8)                                       w' = q * s
//   int4 / affine: u = (w >> (bits * lane)) & (2^bits - 1) for the 32 / bits lanes of every
//           uint32 word, LSB first      int4: w' = (u - 8) * s      affine: w' = u * s + b
// with s, b [.., K / g] converted to f32 and broadcast over their group of g weights.
//   mxfp4 (mx.moe's experts only): u = (w >> (4 * lane)) & 15 for the 2 lanes of every u8, then
//           v = e2m1(u & 7) by comparisons (0.5 m below 4, m - 2 below 6, else 2 m - 8: exact),
//           negated where u >= 8; s = 2^(e - 127) built as the f32 bits e << 23 (e = 0: 2^-127)
//           w' = v * s
// An IREE or XLA consumer that does not know the composites runs exactly these ops.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/composite_internal.h"
#include "model/quant_internal.h"

typedef struct q_params {
  int32_t mode;  // mx_q_mode_t
  int32_t bits, group;
  int64_t k;  // logical K
} q_params_t;

// Unpacked values of w [..., K * bits / word bits] (u32 words, or u8 for MXFP4) as f32 [..., K].
static mx_status_t unpack(mx_builder_t *b, int32_t w, int32_t bits, int64_t k, int32_t *out) {
  mx_type_t t = *mx_build_type(b, w);
  int32_t r = t.rank;
  int64_t lanes = (int64_t)(8 * mx_elem_size(t.elem)) / bits;
  int64_t d3[MX_MAX_RANK], bd[MX_MAX_RANK], dk[MX_MAX_RANK];
  for (int32_t i = 0; i < r; i++) {
    d3[i] = dk[i] = t.dims[i];
    bd[i] = i;
  }
  d3[r] = lanes;
  dk[r - 1] = k;
  mx_type_t it = mx_type_tensor(t.elem, r + 1, d3);
  int32_t wb, lane, nb, sh, v, mask, m, q;
  MX_TRY(mx_build_broadcast_in_dim(b, w, d3, r + 1, bd, &wb));
  MX_TRY(mx_build_iota(b, &it, r, &lane));
  MX_TRY(mx_g_full_like(b, t.elem, (double)bits, lane, &nb));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, lane, nb, &sh));
  MX_TRY(mx_build_binary(b, MX_OP_SHIFT_RIGHT_LOGICAL, wb, sh, &v));
  MX_TRY(mx_g_full_like(b, t.elem, (double)((1u << bits) - 1u), v, &mask));
  MX_TRY(mx_build_binary(b, MX_OP_AND, v, mask, &m));
  MX_TRY(mx_build_reshape(b, m, dk, r, &q));
  return mx_build_convert(b, q, MX_ELEM_F32, out);
}

// s [..., G] (any float type) -> f32 [..., G * group], each value repeated over its group.
static mx_status_t expand_groups(mx_builder_t *b, int32_t s, int32_t group, int32_t *out) {
  mx_type_t t = *mx_build_type(b, s);
  int32_t r = t.rank;
  int64_t d3[MX_MAX_RANK], bd[MX_MAX_RANK], dk[MX_MAX_RANK];
  for (int32_t i = 0; i < r; i++) {
    d3[i] = dk[i] = t.dims[i];
    bd[i] = i;
  }
  d3[r] = group;
  dk[r - 1] = t.dims[r - 1] * group;
  int32_t sf, sb;
  MX_TRY(mx_g_f32(b, s, &sf));
  MX_TRY(mx_build_broadcast_in_dim(b, sf, d3, r + 1, bd, &sb));
  return mx_build_reshape(b, sb, dk, r, out);
}

// e2m1 codes c (f32 0..15) -> their values (composite.h's table), exact.
static mx_status_t e2m1(mx_builder_t *b, int32_t c, int32_t *out) {
  int32_t k2, k4, k6, k8, half, two, neg, m, lt4, lt6, lo, mid, hi, v, nv, t;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 2.0, c, &two));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 4.0, c, &k4));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 6.0, c, &k6));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 8.0, c, &k8));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.5, c, &half));
  MX_TRY(mx_build_compare(b, MX_CMP_GE, MX_CMP_TYPE_AUTO, c, k8, &neg));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, c, k8, &t));
  MX_TRY(mx_build_select(b, neg, t, c, &m));  // the magnitude's code 0..7
  MX_TRY(mx_build_compare(b, MX_CMP_LT, MX_CMP_TYPE_AUTO, m, k4, &lt4));
  MX_TRY(mx_build_compare(b, MX_CMP_LT, MX_CMP_TYPE_AUTO, m, k6, &lt6));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, m, half, &lo));  // 0, 0.5, 1, 1.5
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, m, two, &mid));  // 2, 3
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, m, two, &k2));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, k2, k8, &hi));  // 4, 6
  MX_TRY(mx_build_select(b, lt6, mid, hi, &v));
  MX_TRY(mx_build_select(b, lt4, lo, v, &v));
  MX_TRY(mx_build_unary(b, MX_OP_NEGATE, v, &nv));
  return mx_build_select(b, neg, nv, v, out);
}

// e8m0 scales s (u8) -> f32 2^(s - 127): the f32 whose bits are s << 23 (s * 2^23 in i32),
// 2^-127 (a subnormal, not representable that way) where s is 0, and NaN where s is 255 (the
// format's NaN; s << 23 would be +inf).
static mx_status_t e8m0(mx_builder_t *b, int32_t s, int32_t *out) {
  int32_t si, sh, bits, f, zero, is0, tiny, top, is255, nan, v;
  MX_TRY(mx_build_convert(b, s, MX_ELEM_I32, &si));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 8388608.0, si, &sh));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, si, sh, &bits));
  MX_TRY(mx_build_bitcast_convert(b, bits, MX_ELEM_F32, &f));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 0.0, si, &zero));
  MX_TRY(mx_build_compare(b, MX_CMP_EQ, MX_CMP_TYPE_AUTO, si, zero, &is0));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, ldexp(1.0, -127), f, &tiny));
  MX_TRY(mx_build_select(b, is0, tiny, f, &v));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 255.0, si, &top));
  MX_TRY(mx_build_compare(b, MX_CMP_EQ, MX_CMP_TYPE_AUTO, si, top, &is255));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, NAN, f, &nan));
  return mx_build_select(b, is255, nan, v, out);
}

// The dequantized f32 weights [..., K] of stored w with scales s and biases bi (-1: none).
static mx_status_t dequant(mx_builder_t *b, const q_params_t *p, int32_t w, int32_t s, int32_t bi,
                           int32_t *out) {
  int32_t q, se, y;
  if (p->mode == MX_Q_MXFP4) {
    int32_t c, sf;
    MX_TRY(unpack(b, w, 4, p->k, &c));
    MX_TRY(e2m1(b, c, &q));
    MX_TRY(e8m0(b, s, &sf));
    MX_TRY(expand_groups(b, sf, p->group, &se));
    return mx_build_binary(b, MX_OP_MULTIPLY, q, se, out);
  }
  if (p->mode == MX_Q_INT8) {
    MX_TRY(mx_build_convert(b, w, MX_ELEM_F32, &q));
  } else {
    MX_TRY(unpack(b, w, p->bits, p->k, &q));
  }
  if (p->mode == MX_Q_INT4) {
    int32_t eight;
    MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 8.0, q, &eight));
    MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, q, eight, &q));
  }
  MX_TRY(expand_groups(b, s, p->group, &se));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, q, se, &y));
  if (p->mode == MX_Q_AFFINE) {
    int32_t be;
    MX_TRY(expand_groups(b, bi, p->group, &be));
    MX_TRY(mx_build_binary(b, MX_OP_ADD, y, be, &y));
  }
  *out = y;
  return MX_OK;
}

mx_status_t mx_comp_dequant(mx_builder_t *b, const mx_comp_quant_t *q, int32_t w, int32_t scales,
                            int32_t biases, int32_t *out) {
  const mx_type_t *st = mx_build_type(b, scales);
  // mx_qmode_t and mx_q_mode_t share their values.
  q_params_t p = {(int32_t)q->mode, (int32_t)q->bits, (int32_t)q->group_size,
                  st->dims[st->rank - 1] * q->group_size};
  return dequant(b, &p, w, scales, q->mode == MX_QMODE_AFFINE ? biases : -1, out);
}

static mx_status_t build_linear(mx_builder_t *b, const int32_t *args, const void *params,
                                int32_t *result) {
  const q_params_t *p = params;
  int32_t w;
  MX_TRY(dequant(b, p, args[1], args[2], p->mode == MX_Q_AFFINE ? args[3] : -1, &w));
  return mx_g_linear(b, args[0], w, result);
}

static mx_status_t build_embedding(mx_builder_t *b, const int32_t *args, const void *params,
                                   int32_t *result) {
  const q_params_t *p = params;
  int32_t tokens = args[0];
  int32_t n = p->mode == MX_Q_AFFINE ? 3 : 2;
  int32_t rows[3];
  for (int32_t i = 0; i < n; i++) {  // the token rows of w, scales, biases
    const mx_type_t *t = mx_build_type(b, args[1 + i]);
    int64_t off = 2, coll = 0, map = 0, sizes[2] = {1, t->dims[1]};
    mx_gather_dims_t gd = {{&off, 1}, {&coll, 1}, {NULL, 0}, {NULL, 0}, {&map, 1}, 2};
    MX_TRY(mx_build_gather(b, args[1 + i], tokens, &gd, sizes, false, &rows[i]));
  }
  return dequant(b, p, rows[0], rows[1], n == 3 ? rows[2] : -1, result);
}

// Attributes and parameters of a quantized weight spec.
static mx_status_t q_setup(mx_comp_ctx_t *c, const mx_wspec_t *s, int32_t biases, q_params_t *p,
                           mx_named_attr_t *attrs, char *key, size_t key_cap) {
  if (s->qmode != MX_Q_INT8 && s->qmode != MX_Q_INT4 && s->qmode != MX_Q_AFFINE) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: not a quantized weight", s->name);
  }
  if ((s->qmode == MX_Q_AFFINE) != (biases >= 0)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: biases go with (and only with) affine mode",
                        s->name);
  }
  p->mode = s->qmode;
  p->bits = s->qbits;
  p->group = s->qgroup;
  p->k = s->qk;
  // mx_q_mode_t and mx_qmode_t share their values.
  mx_comp_quant_t a = {p->bits, p->group, (mx_qmode_t)p->mode};
  snprintf(key, key_cap, "%s,b=%d,g=%d,k=%lld", mx_qmode_name(a.mode), p->bits, p->group,
           (long long)p->k);
  mx_comp_quant_write(c->m, &a, attrs);
  return MX_OK;
}

mx_status_t mx_comp_linear_q(mx_comp_ctx_t *c, mx_builder_t *b, const mx_wspec_t *s, int32_t x,
                             int32_t w, int32_t scales, int32_t biases, int32_t *out) {
  q_params_t p;
  mx_named_attr_t attrs[3];
  char key[96];
  MX_TRY(q_setup(c, s, biases, &p, attrs, key, sizeof key));
  int32_t ops[4] = {x, w, scales, biases};
  return mx_comp_call(c, b, MX_COMPOSITE_LINEAR, ops, biases >= 0 ? 4 : 3, attrs, 3, key,
                      build_linear, &p, out);
}

mx_status_t mx_comp_embedding_q(mx_comp_ctx_t *c, mx_builder_t *b, const mx_wspec_t *s,
                                int32_t tokens, int32_t w, int32_t scales, int32_t biases,
                                int32_t *out) {
  q_params_t p;
  mx_named_attr_t attrs[3];
  char key[96];
  MX_TRY(q_setup(c, s, biases, &p, attrs, key, sizeof key));
  int32_t ops[4] = {tokens, w, scales, biases};
  return mx_comp_call(c, b, MX_COMPOSITE_EMBEDDING, ops, biases >= 0 ? 4 : 3, attrs, 3, key,
                      build_embedding, &p, out);
}

typedef struct act_params {
  bool gelu;
} act_params_t;

static mx_status_t build_gated_act(mx_builder_t *b, const int32_t *args, const void *params,
                                   int32_t *result) {
  const act_params_t *p = params;
  int32_t g = args[0], a;
  if (p->gelu) {
    MX_TRY(mx_g_gelu_tanh(b, g, &a));
  } else {  // silu(g) = g * sigmoid(g)
    int32_t s;
    MX_TRY(mx_build_unary(b, MX_OP_LOGISTIC, g, &s));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, g, s, &a));
  }
  return mx_build_binary(b, MX_OP_MULTIPLY, a, args[1], result);
}

mx_status_t mx_comp_gated_act(mx_comp_ctx_t *c, mx_builder_t *b, int32_t g, int32_t u,
                              const char *activation, int32_t *out) {
  mx_comp_gated_t a;
  if (!mx_activation_parse(activation, &a.activation)) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "mx.gated_act: unsupported activation \"%s\"",
                        activation);
  }
  act_params_t p = {a.activation == MX_ACT_GELU_TANH};
  mx_named_attr_t attrs[MX_COMPOSITE_MAX_ATTRS];
  int32_t n = mx_comp_gated_write(c->m, &a, attrs);
  int32_t ops[2] = {g, u};
  return mx_comp_call(c, b, MX_COMPOSITE_GATED_ACT, ops, 2, attrs, n, activation, build_gated_act,
                      &p, out);
}
