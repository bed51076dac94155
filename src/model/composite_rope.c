// Decomposition of mx.rope: rotary position embedding with a host-computed inv_freq table.
//
// angle[b,t,i] = f32(pos[b,t]) * inv_freq[i] (as Hugging Face computes it, in f32); pairs are
// (x[i], x[i + R/2]) for style "half" (rotate-half) and (x[2i], x[2i+1]) for "interleaved";
// each pair (a, b) becomes (a cos - b sin, b cos + a sin); dims R..D pass through unchanged.
// Attribute `scale` (YaRN / LongRoPE's attention factor, when not 1) multiplies cos and sin, in
// f32 after they are computed, as transformers does: the pass-through dims are not scaled.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/composite_internal.h"

typedef struct rope_params {
  bool interleaved;
  int32_t rotary_dim;
  double scale;
} rope_params_t;

// x[..., lo:hi] along the last dimension.
static mx_status_t slice_last(mx_builder_t *b, int32_t x, int64_t lo, int64_t hi, int32_t *out) {
  mx_type_t t = *mx_build_type(b, x);
  int64_t start[MX_MAX_RANK] = {0}, limit[MX_MAX_RANK];
  for (int32_t i = 0; i < t.rank; i++) limit[i] = t.dims[i];
  start[t.rank - 1] = lo;
  limit[t.rank - 1] = hi;
  return mx_build_slice(b, x, start, limit, NULL, t.rank, out);
}

// (a cos - b sin, b cos + a sin)
static mx_status_t rotate(mx_builder_t *b, int32_t a, int32_t bb, int32_t cs, int32_t sn,
                          int32_t *ra, int32_t *rb) {
  int32_t ac, bs, bc, as;
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, a, cs, &ac));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, bb, sn, &bs));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, ac, bs, ra));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, bb, cs, &bc));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, a, sn, &as));
  return mx_build_binary(b, MX_OP_ADD, bc, as, rb);
}

static mx_status_t build_rope(mx_builder_t *b, const int32_t *args, const void *params,
                              int32_t *result) {
  const rope_params_t *p = params;
  int32_t x = args[0], pos = args[1], inv = args[2];
  mx_type_t xt = *mx_build_type(b, x);
  int64_t B = xt.dims[0], T = xt.dims[1], N = xt.dims[2], D = xt.dims[3];
  int64_t R = p->rotary_dim, h = R / 2;
  // angle [B,T,h], then cos/sin broadcast over heads: [B,T,N,h]
  int32_t posf, pb, fb, ang, cs0, sn0, cs, sn;
  int64_t adims[3] = {B, T, h}, bt[2] = {0, 1}, last = 2;
  MX_TRY(mx_build_convert(b, pos, MX_ELEM_F32, &posf));
  MX_TRY(mx_build_broadcast_in_dim(b, posf, adims, 3, bt, &pb));
  MX_TRY(mx_build_broadcast_in_dim(b, inv, adims, 3, &last, &fb));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, pb, fb, &ang));
  MX_TRY(mx_build_unary(b, MX_OP_COSINE, ang, &cs0));
  MX_TRY(mx_build_unary(b, MX_OP_SINE, ang, &sn0));
  if (p->scale != 1.0) {
    int32_t s, sb;
    MX_TRY(mx_build_scalar(b, MX_ELEM_F32, p->scale, &s));
    MX_TRY(mx_build_broadcast_in_dim(b, s, adims, 3, NULL, &sb));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, cs0, sb, &cs0));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, sn0, sb, &sn0));
  }
  int64_t hdims[4] = {B, T, N, h}, hmap[3] = {0, 1, 3};
  MX_TRY(mx_build_broadcast_in_dim(b, cs0, hdims, 4, hmap, &cs));
  MX_TRY(mx_build_broadcast_in_dim(b, sn0, hdims, 4, hmap, &sn));
  int32_t parts[3], n_parts = 0;
  if (!p->interleaved) {
    int32_t x1, x2;
    MX_TRY(slice_last(b, x, 0, h, &x1));
    MX_TRY(slice_last(b, x, h, R, &x2));
    MX_TRY(rotate(b, x1, x2, cs, sn, &parts[0], &parts[1]));
    n_parts = 2;
  } else {
    int32_t xr, x5, xe5, xo5, xe, xo, oe, oo, oe5, oo5, o5, pair[2];
    int64_t d5[5] = {B, T, N, h, 2}, d5one[5] = {B, T, N, h, 1};
    MX_TRY(slice_last(b, x, 0, R, &xr));
    MX_TRY(mx_build_reshape(b, xr, d5, 5, &x5));
    MX_TRY(slice_last(b, x5, 0, 1, &xe5));
    MX_TRY(slice_last(b, x5, 1, 2, &xo5));
    MX_TRY(mx_build_reshape(b, xe5, hdims, 4, &xe));
    MX_TRY(mx_build_reshape(b, xo5, hdims, 4, &xo));
    MX_TRY(rotate(b, xe, xo, cs, sn, &oe, &oo));
    MX_TRY(mx_build_reshape(b, oe, d5one, 5, &oe5));
    MX_TRY(mx_build_reshape(b, oo, d5one, 5, &oo5));
    pair[0] = oe5;
    pair[1] = oo5;
    MX_TRY(mx_build_concatenate(b, pair, 2, 4, &o5));
    int64_t rdims[4] = {B, T, N, R};
    MX_TRY(mx_build_reshape(b, o5, rdims, 4, &parts[0]));
    n_parts = 1;
  }
  if (R < D) MX_TRY(slice_last(b, x, R, D, &parts[n_parts++]));
  if (n_parts == 1) {
    *result = parts[0];
    return MX_OK;
  }
  return mx_build_concatenate(b, parts, n_parts, 3, result);
}

mx_status_t mx_comp_rope(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t pos,
                         int32_t inv_freq, const char *style, int32_t rotary_dim, double scale,
                         int32_t *out) {
  const mx_type_t *xt = mx_build_type(b, x);
  mx_comp_rope_t a = {MX_ROPE_HALF, rotary_dim, scale};
  if (!mx_rope_style_parse(style, &a.style)) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "mx.rope: unknown style \"%s\"", style);
  }
  if (xt == NULL || xt->rank != 4 || rotary_dim <= 0 || rotary_dim % 2 != 0 ||
      rotary_dim > xt->dims[3]) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx.rope: rotary_dim %d must be even, positive and <= head_dim",
                        rotary_dim);
  }
  if (!(scale > 0) || !isfinite(scale)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx.rope: scale %g must be positive", scale);
  }
  char key[96];
  if (scale == 1.0) {
    snprintf(key, sizeof key, "%s,R=%d", style, rotary_dim);
  } else {
    snprintf(key, sizeof key, "%s,R=%d,scale=%.17g", style, rotary_dim, scale);
  }
  rope_params_t p = {a.style == MX_ROPE_INTERLEAVED, rotary_dim, scale};
  mx_named_attr_t attrs[MX_COMPOSITE_MAX_ATTRS];
  int32_t n = mx_comp_rope_write(c->m, &a, attrs);
  int32_t ops[3] = {x, pos, inv_freq};
  return mx_comp_call(c, b, MX_COMPOSITE_ROPE, ops, 3, attrs, n, key, build_rope, &p, out);
}
