// Decomposition of mx.attention: causal (optionally windowed, soft-capped) GQA attention over
// the full KV capacity S.
//
// Query t of sequence b sits at position pos0[b] + t and sees key s iff s <= pos0[b] + t and,
// with a window W, s > pos0[b] + t - W. Query head h reads kv head h / (Hq / Hkv). The
// decomposition scores every one of the S cache slots and masks the invisible ones with -inf
// (simple and obviously correct; fused kernels read only the valid range). A query's range is
// clipped to the S slots: with pos0 = S - 1 every query sees all S keys, which is full
// (bidirectional) attention over them (the vision towers' use, ADR 0010).
//
// With the attribute `blocks` (composite.h), a last operand blocks [B, T] i32 gives each query
// of the call a block id (-1: none): query t also sees slot pos0[b] + j of every query j of the
// call with its id, within the window ((causal OR block) AND window, as transformers composes
// Gemma 3's image-block mask on sliding layers). The decomposition builds that as
// same[b, t, j] (ids equal and >= 0) times the one-hot map of j to slot pos0[b] + j.
//
// With sinks (gpt-oss), each query head's learned sink logit joins the softmax's max and
// denominator as one more score with no value, as transformers concatenates it to the scores
// and drops its column after the softmax.
#include <math.h>
#include <stdio.h>

#include "model/composite_internal.h"

// softmax over the last dimension of x [..., S] with one more logit per row, sink [...] (x's
// shape less its last dimension), in the max and the denominator: exp(x - m) / (sum exp(x - m) +
// exp(sink - m)), m = max(max x, sink).
static mx_status_t sink_softmax(mx_builder_t *b, int32_t x, int32_t sink, int32_t *out) {
  const mx_type_t *xt = mx_build_type(b, x);
  int64_t last = xt->rank - 1, lead[MX_MAX_RANK];
  for (int32_t i = 0; i < xt->rank - 1; i++) lead[i] = i;
  int32_t ninf, m, mb, diff, e, zero, sum, sd, se, sumb;
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, -INFINITY, &ninf));
  MX_TRY(mx_build_reduce(b, x, ninf, &last, 1, MX_OP_MAXIMUM, &m));
  MX_TRY(mx_build_binary(b, MX_OP_MAXIMUM, m, sink, &m));
  MX_TRY(mx_g_bcast_like(b, m, x, lead, &mb));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, x, mb, &diff));
  MX_TRY(mx_build_unary(b, MX_OP_EXPONENTIAL, diff, &e));
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, 0.0, &zero));
  MX_TRY(mx_build_reduce(b, e, zero, &last, 1, MX_OP_ADD, &sum));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, sink, m, &sd));
  MX_TRY(mx_build_unary(b, MX_OP_EXPONENTIAL, sd, &se));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, sum, se, &sum));
  MX_TRY(mx_g_bcast_like(b, sum, e, lead, &sumb));
  return mx_build_binary(b, MX_OP_DIVIDE, e, sumb, out);
}

mx_status_t mx_g_causal_softmax(mx_builder_t *b, int32_t s, int32_t pos0, int64_t qdim,
                                int64_t window, int32_t *out) {
  return mx_g_causal_softmax_sink(b, s, pos0, qdim, window, -1, out);
}

mx_status_t mx_g_causal_softmax_sink(mx_builder_t *b, int32_t s, int32_t pos0, int64_t qdim,
                                     int64_t window, int32_t sink, int32_t *out) {
  return mx_g_masked_softmax(b, s, pos0, qdim, window, -1, sink, out);
}

mx_status_t mx_g_masked_softmax(mx_builder_t *b, int32_t s, int32_t pos0, int64_t qdim,
                                int64_t window, int32_t also, int32_t sink, int32_t *out) {
  mx_type_t it = *mx_build_type(b, s);
  it.elem = MX_ELEM_I32;
  int32_t kidx, tidx, p0b, qpos, ok, neg, masked;
  int64_t d0 = 0;
  MX_TRY(mx_build_iota(b, &it, it.rank - 1, &kidx));
  MX_TRY(mx_build_iota(b, &it, qdim, &tidx));
  MX_TRY(mx_build_broadcast_in_dim(b, pos0, it.dims, it.rank, &d0, &p0b));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, p0b, tidx, &qpos));
  MX_TRY(mx_build_compare(b, MX_CMP_LE, MX_CMP_TYPE_AUTO, kidx, qpos, &ok));
  if (also >= 0) MX_TRY(mx_build_binary(b, MX_OP_OR, ok, also, &ok));
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
  if (sink >= 0) return sink_softmax(b, masked, sink, out);
  return mx_g_softmax_last(b, masked, out);
}

typedef struct attn_params {
  double scale, softcap;
  int64_t window;
  bool sinks, blocks;
} attn_params_t;

// The slots each query sees through its block, for scores of shape st [B, Hkv, T, G, S]:
// any_j(blocks[b, t] == blocks[b, j] >= 0 and slot == pos0[b] + j), as an i1 tensor of st.
static mx_status_t block_slots(mx_builder_t *b, int32_t blocks, int32_t pos0, const mx_type_t *st,
                               int32_t *out) {
  int64_t B = st->dims[0], T = st->dims[2], S = st->dims[4];
  int64_t btt[3] = {B, T, T}, bts[3] = {B, T, S}, d01[2] = {0, 1}, d02[2] = {0, 2}, d0 = 0;
  mx_type_t et = mx_type_tensor(MX_ELEM_I32, 3, bts);
  int32_t bq, bk, eq, zero, in, same, samef, jj, ss, p0, at, hit, hitf, a, half, vis;
  MX_TRY(mx_build_broadcast_in_dim(b, blocks, btt, 3, d01, &bq));  // [b, t, j] = blocks[b, t]
  MX_TRY(mx_build_broadcast_in_dim(b, blocks, btt, 3, d02, &bk));  // [b, t, j] = blocks[b, j]
  MX_TRY(mx_build_compare(b, MX_CMP_EQ, MX_CMP_TYPE_AUTO, bq, bk, &eq));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 0.0, bq, &zero));
  MX_TRY(mx_build_compare(b, MX_CMP_GE, MX_CMP_TYPE_AUTO, bq, zero, &in));
  MX_TRY(mx_build_binary(b, MX_OP_AND, eq, in, &same));
  MX_TRY(mx_build_convert(b, same, MX_ELEM_F32, &samef));
  MX_TRY(mx_build_iota(b, &et, 1, &jj));  // [b, j, s] = j
  MX_TRY(mx_build_iota(b, &et, 2, &ss));  // [b, j, s] = s
  MX_TRY(mx_build_broadcast_in_dim(b, pos0, bts, 3, &d0, &p0));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, p0, jj, &at));
  MX_TRY(mx_build_compare(b, MX_CMP_EQ, MX_CMP_TYPE_AUTO, ss, at, &hit));
  MX_TRY(mx_build_convert(b, hit, MX_ELEM_F32, &hitf));
  int64_t lb = 0, rb = 0, lc = 2, rc = 1;
  mx_dot_dims_t dd = {{&lb, 1}, {&rb, 1}, {&lc, 1}, {&rc, 1}};
  MX_TRY(mx_build_dot_general(b, samef, hitf, &dd, MX_ELEM_F32, &a));  // [B, T, S]: 0 or 1
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.5, a, &half));
  MX_TRY(mx_build_compare(b, MX_CMP_GT, MX_CMP_TYPE_AUTO, a, half, &vis));
  int64_t dims[3] = {0, 2, 4};
  return mx_build_broadcast_in_dim(b, vis, st->dims, st->rank, dims, out);
}

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
  // Causal (and window) softmax on [B, Hkv, T, G, S]; sinks[Hq] as [Hkv, G] broadcast to
  // [B, Hkv, T, G].
  int32_t pr, sink = -1;
  if (p->sinks) {
    int32_t s2;
    int64_t sd[2] = {Hkv, G}, bd[4] = {B, Hkv, T, G}, map[2] = {1, 3};
    MX_TRY(mx_build_reshape(b, args[4], sd, 2, &s2));
    MX_TRY(mx_build_broadcast_in_dim(b, s2, bd, 4, map, &sink));
  }
  int32_t also = -1;  // the block ids: the last operand
  if (p->blocks) {
    mx_type_t st = *mx_build_type(b, s);
    MX_TRY(block_slots(b, args[p->sinks ? 5 : 4], pos0, &st, &also));
  }
  MX_TRY(mx_g_masked_softmax(b, s, pos0, 2, p->window, also, sink, &pr));
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
  return mx_comp_attention_sinks(c, b, q, k_cache, v_cache, pos0, -1, scale, window, softcap, out);
}

mx_status_t mx_comp_attention_sinks(mx_comp_ctx_t *c, mx_builder_t *b, int32_t q, int32_t k_cache,
                                    int32_t v_cache, int32_t pos0, int32_t sinks, double scale,
                                    int64_t window, double softcap, int32_t *out) {
  return mx_comp_attention_ex(c, b, q, k_cache, v_cache, pos0, sinks, -1, scale, window, softcap,
                              out);
}

mx_status_t mx_comp_attention_ex(mx_comp_ctx_t *c, mx_builder_t *b, int32_t q, int32_t k_cache,
                                 int32_t v_cache, int32_t pos0, int32_t sinks, int32_t blocks,
                                 double scale, int64_t window, double softcap, int32_t *out) {
  const mx_type_t *qt = mx_build_type(b, q), *kt = mx_build_type(b, k_cache);
  if (qt == NULL || kt == NULL || qt->rank != 4 || kt->rank != 4 || kt->dims[1] <= 0 ||
      qt->dims[2] % kt->dims[1] != 0) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx.attention: q heads must be a multiple of the cache's kv heads");
  }
  if (sinks >= 0) {
    const mx_type_t *st = mx_build_type(b, sinks);
    if (st == NULL || st->rank != 1 || st->dims[0] != qt->dims[2] || st->elem != MX_ELEM_F32) {
      return mx_error_set(MX_ERR_INVALID_ARG, "mx.attention: sinks must be f32 [%lld]",
                          (long long)qt->dims[2]);
    }
  }
  attn_params_t p = {scale, softcap, window, sinks >= 0, blocks >= 0};
  char key[128];
  snprintf(key, sizeof key, "scale=%.17g,window=%lld,softcap=%.17g%s%s", scale, (long long)window,
           softcap, sinks >= 0 ? ",sinks" : "", blocks >= 0 ? ",blocks" : "");
  mx_comp_attention_t a = {scale, window, softcap, sinks >= 0, blocks >= 0};
  mx_named_attr_t attrs[MX_COMPOSITE_MAX_ATTRS];
  int32_t n = mx_comp_attention_write(c->m, &a, attrs), n_ops = 4;
  int32_t ops[6] = {q, k_cache, v_cache, pos0};
  if (sinks >= 0) ops[n_ops++] = sinks;
  if (blocks >= 0) ops[n_ops++] = blocks;
  return mx_comp_call(c, b, MX_COMPOSITE_ATTENTION, ops, n_ops, attrs, n, key, build_attention, &p,
                      out);
}
