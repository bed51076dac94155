// Decomposition of mx.attention: causal (optionally windowed, soft-capped) GQA attention over
// the full KV capacity S.
//
// Query t of sequence b sits at position pos0[b] + t and sees key s iff s <= pos0[b] + t and,
// with a window W, s > pos0[b] + t - W. Query head h reads kv head h / (Hq / Hkv). The
// decomposition scores every one of the S cache slots and masks the invisible ones with -inf
// (simple and obviously correct; fused kernels read only the valid range). A query's range is
// clipped to the S slots: with pos0 = S - 1 every query sees all S keys, which is full
// (bidirectional) attention over them (the vision towers' use, ADR 0010).
#include <math.h>
#include <stdio.h>

#include "model/composite_internal.h"

mx_status_t mx_g_causal_softmax(mx_builder_t *b, int32_t s, int32_t pos0, int64_t qdim,
                                int64_t window, int32_t *out) {
  mx_type_t it = *mx_build_type(b, s);
  it.elem = MX_ELEM_I32;
  int32_t kidx, tidx, p0b, qpos, ok, neg, masked;
  int64_t d0 = 0;
  MX_TRY(mx_build_iota(b, &it, it.rank - 1, &kidx));
  MX_TRY(mx_build_iota(b, &it, qdim, &tidx));
  MX_TRY(mx_build_broadcast_in_dim(b, pos0, it.dims, it.rank, &d0, &p0b));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, p0b, tidx, &qpos));
  MX_TRY(mx_build_compare(b, MX_CMP_LE, MX_CMP_TYPE_AUTO, kidx, qpos, &ok));
  if (window > 0) {
    int32_t w, lo, ok2;
    MX_TRY(mx_g_full_like(b, MX_ELEM_I32, (double)window, qpos, &w));
    MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, qpos, w, &lo));
    MX_TRY(mx_build_compare(b, MX_CMP_GT, MX_CMP_TYPE_AUTO, kidx, lo, &ok2));
    MX_TRY(mx_build_binary(b, MX_OP_AND, ok, ok2, &ok));
  }
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, -INFINITY, s, &neg));
  MX_TRY(mx_build_select(b, ok, s, neg, &masked));
  // Key 0 .. the query's own position is always visible: the max is finite.
  return mx_g_softmax_last(b, masked, out);
}

typedef struct attn_params {
  double scale, softcap;
  int64_t window;
} attn_params_t;

static mx_status_t build_attention(mx_builder_t *b, const int32_t *args, const void *params,
                                   int32_t *result) {
  const attn_params_t *p = params;
  int32_t q = args[0], pos0 = args[3], kf, vf;
  mx_type_t qt = *mx_build_type(b, q), kt = *mx_build_type(b, args[1]);
  int64_t B = qt.dims[0], T = qt.dims[1], Hq = qt.dims[2], D = qt.dims[3];
  int64_t Hkv = kt.dims[1], G = Hq / Hkv;
  MX_TRY(mx_g_f32(b, args[1], &kf));
  MX_TRY(mx_g_f32(b, args[2], &vf));
  // scores[b, kvh, t, g, s] = sum_d q[b, t, kvh*G + g, d] * k[b, kvh, s, d]
  int32_t q5, sc;
  int64_t q5d[5] = {B, T, Hkv, G, D};
  MX_TRY(mx_build_reshape(b, q, q5d, 5, &q5));
  {
    int64_t lb[2] = {0, 2}, rb[2] = {0, 1}, lc = 4, rc = 3;
    mx_dot_dims_t dd = {{lb, 2}, {rb, 2}, {&lc, 1}, {&rc, 1}};
    MX_TRY(mx_build_dot_general(b, q5, kf, &dd, MX_ELEM_F32, &sc));
  }
  int32_t c, s;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, p->scale, sc, &c));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, sc, c, &s));
  if (p->softcap > 0.0) {  // tanh(s / cap) * cap
    int32_t cap, d, th;
    MX_TRY(mx_g_full_like(b, MX_ELEM_F32, p->softcap, s, &cap));
    MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, s, cap, &d));
    MX_TRY(mx_build_unary(b, MX_OP_TANH, d, &th));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, th, cap, &s));
  }
  // Causal (and window) softmax on [B, Hkv, T, G, S].
  int32_t pr;
  MX_TRY(mx_g_causal_softmax(b, s, pos0, 2, p->window, &pr));
  // out[b, kvh, t, g, d] = sum_s p[b, kvh, t, g, s] * v[b, kvh, s, d]
  int32_t o5, ot;
  {
    int64_t lb[2] = {0, 1}, rb[2] = {0, 1}, lc = 4, rc = 2;
    mx_dot_dims_t dd = {{lb, 2}, {rb, 2}, {&lc, 1}, {&rc, 1}};
    MX_TRY(mx_build_dot_general(b, pr, vf, &dd, MX_ELEM_F32, &o5));
  }
  int64_t perm[5] = {0, 2, 1, 3, 4}, od[4] = {B, T, Hq, D};
  MX_TRY(mx_build_transpose(b, o5, perm, 5, &ot));
  return mx_build_reshape(b, ot, od, 4, result);
}

mx_status_t mx_comp_attention(mx_comp_ctx_t *c, mx_builder_t *b, int32_t q, int32_t k_cache,
                              int32_t v_cache, int32_t pos0, double scale, int64_t window,
                              double softcap, int32_t *out) {
  const mx_type_t *qt = mx_build_type(b, q), *kt = mx_build_type(b, k_cache);
  if (qt == NULL || kt == NULL || qt->rank != 4 || kt->rank != 4 || kt->dims[1] <= 0 ||
      qt->dims[2] % kt->dims[1] != 0) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx.attention: q heads must be a multiple of the cache's kv heads");
  }
  attn_params_t p = {scale, softcap, window};
  char key[96];
  snprintf(key, sizeof key, "scale=%.17g,window=%lld,softcap=%.17g", scale, (long long)window,
           softcap);
  mx_comp_attention_t a = {scale, window, softcap};
  mx_named_attr_t attrs[MX_COMPOSITE_MAX_ATTRS];
  int32_t n = mx_comp_attention_write(c->m, &a, attrs);
  int32_t ops[4] = {q, k_cache, v_cache, pos0};
  return mx_comp_call(c, b, MX_COMPOSITE_ATTENTION, ops, 4, attrs, n, key, build_attention, &p,
                      out);
}
