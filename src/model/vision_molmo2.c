// Molmo2's ViT and pooling adapter as the @vision entry (ADR 0010), built for one image
// geometry (mx_graph_opts_t: vision_grid_h crops, vision_grid_w pooled tokens, vision_pool
// patches per pooling window):
//
//   pixels   [C, N, P*P*3] f32: the processor's crops (the global view first), patch rows
//   pooling  [T, K] i32: image_token_pooling, patch indices into the crops' N patches each in
//            order, -1 for a window's padding
//   x        = patch_embedding(pixels) + positional_embedding                [C, N, D]
//   for the layers the features need: (full attention within each crop: mx.attention with B = C)
//     x += o_proj(attention(q, k, v of layer_norm1(x)))
//     x += fc2(gelu_tanh(fc1(layer_norm2(x))))
//   feats    = hidden states after the vision_feature_layer layers (0: the embeddings),
//              concatenated                                                  [C * N, L * D]
//   rows     = feats at each token's valid indices, moved to the front of its K slots
//   query    = the mean of a token's valid rows
//   pooled   = o_proj(attention(q_proj(query); k_proj(rows), v_proj(rows)))  mx.attention with
//              B = T, one query per token and its valid rows as a cache read up to pos0 =
//              valid - 1: the keys the processor's padding hides are never read
//   features = w2(silu(w1(pooled)) * w3(pooled))                             [1, T, text hidden]
//
// The valid indices are moved first in the graph (each one's rank among its row's valid ones,
// the invalid after them; a one-hot of the ranks applied by dot_general), so @vision takes the
// processor's image_token_pooling as it is. The attention's result does not depend on the order
// of its keys, and the mean's only through the order of its sum.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/vision_internal.h"

// The released checkpoints (original Molmo names), which transformers writes back on save.
#define VIT "model.vision_backbone.image_vit."
#define ADAPTER "model.vision_backbone."

typedef struct mlayer {
  int32_t ln1_w, ln1_b, q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w,
      fc2_b;
} mlayer_t;

typedef struct mweights {
  mx_vlist_t l;
  int32_t patch_w, patch_b, pos;
  mlayer_t *layers;                                        // [layers_run], heap
  int32_t pq_w, pq_b, pk_w, pk_b, pv_w, pv_b, po_w, po_b;  // image_pooling_2d (biases: -1 none)
  int32_t gate, up, down;                                  // image_projector w1, w3, w2
} mweights_t;

static void mweights_free(mweights_t *w) {
  mx_vlist_free(&w->l);
  free(w->layers);
  memset(w, 0, sizeof *w);
}

#define ADD(field, prefix, name, rank, ...)                           \
  do {                                                                \
    const int64_t dims_[4] = {__VA_ARGS__};                           \
    MX_TRY(mx_vlist_add(&w->l, &(field), prefix, name, rank, dims_)); \
  } while (0)

// An attention's wq / wk / wv [qd, in] and wo [out, qd] under prefix + stem, with their biases
// when `bias` (else their indices are -1): the tower's blocks and the pooling adapter name them
// alike.
static mx_status_t add_attention(mweights_t *w, const char *prefix, const char *stem, int64_t qd,
                                 int64_t in, int64_t out, bool bias, int32_t *q_w, int32_t *q_b,
                                 int32_t *k_w, int32_t *k_b, int32_t *v_w, int32_t *v_b,
                                 int32_t *o_w, int32_t *o_b) {
  static const char *const kProj[4] = {"wq", "wk", "wv", "wo"};
  int32_t *ws[4] = {q_w, k_w, v_w, o_w}, *bs[4] = {q_b, k_b, v_b, o_b};
  for (int i = 0; i < 4; i++) {
    char name[64];
    const int64_t wd[2] = {i < 3 ? qd : out, i < 3 ? in : qd}, bd[1] = {wd[0]};
    *bs[i] = -1;
    snprintf(name, sizeof name, "%s%s.weight", stem, kProj[i]);
    MX_TRY(mx_vlist_add(&w->l, ws[i], prefix, name, 2, wd));
    snprintf(name, sizeof name, "%s%s.bias", stem, kProj[i]);
    if (bias) MX_TRY(mx_vlist_add(&w->l, bs[i], prefix, name, 1, bd));
  }
  return MX_OK;
}

static mx_status_t list_weights(const mx_model_config_t *cfg, mweights_t *w) {
  const mx_vision_config_t *v = &cfg->vision;
  int64_t D = v->hidden_size, F = v->intermediate_size, P = v->patch_size, C = v->num_channels;
  int64_t QD = (int64_t)v->num_heads * v->head_dim;
  int64_t A = v->adapter_hidden, AQ = (int64_t)v->adapter_heads * v->adapter_head_dim;
  int64_t IN = (int64_t)v->n_feature_layers * D, AF = v->adapter_intermediate;
  memset(w, 0, sizeof *w);
  w->layers = calloc((size_t)(v->layers_run > 0 ? v->layers_run : 1), sizeof *w->layers);
  if (w->layers == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  ADD(w->patch_w, VIT, "patch_embedding.weight", 2, D, P * P * C);
  ADD(w->patch_b, VIT, "patch_embedding.bias", 1, D);
  ADD(w->pos, VIT, "positional_embedding", 2, v->num_position_embeddings, D);
  for (int32_t i = 0; i < v->layers_run; i++) {
    mlayer_t *ly = &w->layers[i];
    char p[MX_VISION_MAX_NAME / 2];
    if ((size_t)snprintf(p, sizeof p, "%stransformer.resblocks.%d.", VIT, i) >= sizeof p)
      return mx_error_set(MX_ERR_INVALID_ARG, "vision layer %d: name too long", i);
    ADD(ly->ln1_w, p, "attention_norm.weight", 1, D);
    ADD(ly->ln1_b, p, "attention_norm.bias", 1, D);
    MX_TRY(add_attention(w, p, "attention.", QD, D, D, v->attention_bias, &ly->q_w, &ly->q_b,
                         &ly->k_w, &ly->k_b, &ly->v_w, &ly->v_b, &ly->o_w, &ly->o_b));
    ADD(ly->ln2_w, p, "ffn_norm.weight", 1, D);
    ADD(ly->ln2_b, p, "ffn_norm.bias", 1, D);
    ADD(ly->fc1_w, p, "feed_forward.w1.weight", 2, F, D);
    ADD(ly->fc1_b, p, "feed_forward.w1.bias", 1, F);
    ADD(ly->fc2_w, p, "feed_forward.w2.weight", 2, D, F);
    ADD(ly->fc2_b, p, "feed_forward.w2.bias", 1, D);
  }
  MX_TRY(add_attention(w, ADAPTER, "image_pooling_2d.", AQ, IN, A, v->adapter_attention_bias,
                       &w->pq_w, &w->pq_b, &w->pk_w, &w->pk_b, &w->pv_w, &w->pv_b, &w->po_w,
                       &w->po_b));
  ADD(w->gate, ADAPTER, "image_projector.w1.weight", 2, AF, A);
  ADD(w->up, ADAPTER, "image_projector.w3.weight", 2, AF, A);
  ADD(w->down, ADAPTER, "image_projector.w2.weight", 2, cfg->hidden_size, AF);
  return MX_OK;
}
#undef ADD

mx_status_t mx_vision_molmo2_list(const mx_model_config_t *cfg, mx_vlist_t *out) {
  mweights_t w;
  mx_status_t st = list_weights(cfg, &w);
  if (st == MX_OK) {
    *out = w.l;
    memset(&w.l, 0, sizeof w.l);
  }
  mweights_free(&w);
  return st;
}

// ---- building ----

typedef struct mb {
  const mx_model_config_t *cfg;
  const mweights_t *w;
  mx_comp_ctx_t *cc;
  mx_builder_t b;
  int32_t *arg;
} mb_t;

static mx_status_t linear(mb_t *c, int32_t x, int32_t wi, int32_t bi, int32_t *out) {
  return mx_vision_linear(&c->b, x, c->arg[wi], bi >= 0 ? c->arg[bi] : -1, out);
}

static mx_status_t layer_norm(mb_t *c, int32_t x, int32_t wi, int32_t bi, int32_t *out) {
  return mx_vision_norm(c->cc, &c->b, x, c->arg[wi], c->arg[bi], true,
                        c->cfg->vision.layer_norm_eps, out);
}

// Attention of B sequences of one query block each: q [B, T, H, Dh], k / v [B, S, H, Dh], every
// query reading keys 0 .. pos0[b] (pos0 [B] i32) -> [B, T, H * Dh].
static mx_status_t attend(mb_t *c, int32_t q, int32_t k, int32_t v, int32_t pos0, int32_t *out) {
  mx_builder_t *b = &c->b;
  mx_type_t qt = *mx_build_type(b, q);
  int64_t perm[4] = {0, 2, 1, 3}, od[3] = {qt.dims[0], qt.dims[1], qt.dims[2] * qt.dims[3]};
  int32_t kc, vc, att;
  MX_TRY(mx_build_transpose(b, k, perm, 4, &kc));
  MX_TRY(mx_build_transpose(b, v, perm, 4, &vc));
  MX_TRY(
      mx_comp_attention(c->cc, b, q, kc, vc, pos0, 1.0 / sqrt((double)qt.dims[3]), 0, 0.0, &att));
  return mx_build_reshape(b, att, od, 3, out);
}

static mx_status_t encoder_layer(mb_t *c, const mlayer_t *ly, int32_t x, int32_t pos0,
                                 int32_t *out) {
  const mx_vision_config_t *v = &c->cfg->vision;
  mx_builder_t *b = &c->b;
  mx_type_t xt = *mx_build_type(b, x);
  int64_t hd[4] = {xt.dims[0], xt.dims[1], v->num_heads, v->head_dim};
  int32_t h, q, k, vv, att, o, x1, h2, f, a, m;
  MX_TRY(layer_norm(c, x, ly->ln1_w, ly->ln1_b, &h));
  MX_TRY(linear(c, h, ly->q_w, ly->q_b, &q));
  MX_TRY(linear(c, h, ly->k_w, ly->k_b, &k));
  MX_TRY(linear(c, h, ly->v_w, ly->v_b, &vv));
  MX_TRY(mx_build_reshape(b, q, hd, 4, &q));
  MX_TRY(mx_build_reshape(b, k, hd, 4, &k));
  MX_TRY(mx_build_reshape(b, vv, hd, 4, &vv));
  MX_TRY(attend(c, q, k, vv, pos0, &att));
  MX_TRY(linear(c, att, ly->o_w, ly->o_b, &o));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, x, o, &x1));
  MX_TRY(layer_norm(c, x1, ly->ln2_w, ly->ln2_b, &h2));
  MX_TRY(linear(c, h2, ly->fc1_w, ly->fc1_b, &f));
  MX_TRY(mx_vision_act(b, v->hidden_act, f, &a));
  MX_TRY(linear(c, a, ly->fc2_w, ly->fc2_b, &m));
  return mx_build_binary(b, MX_OP_ADD, x1, m, out);
}

// The tower: [C, N, P*P*3] pixels -> the concatenated feature layers [C * N, L * D].
static mx_status_t tower(mb_t *c, int32_t pixels, int64_t crops, int32_t *out) {
  const mx_vision_config_t *v = &c->cfg->vision;
  mx_builder_t *b = &c->b;
  int64_t N = v->num_position_embeddings, D = v->hidden_size, pd[3] = {1, N, D};
  int64_t bd[3] = {0, 1, 2}, xd[3] = {crops, N, D}, one = crops;
  mx_type_t pt = mx_type_tensor(MX_ELEM_I32, 1, &one);
  int32_t x, posf, pos, posb, pos0, states[MX_VISION_MAX_FEATURES];
  MX_TRY(linear(c, pixels, c->w->patch_w, c->w->patch_b, &x));
  MX_TRY(mx_g_f32(b, c->arg[c->w->pos], &posf));
  MX_TRY(mx_build_reshape(b, posf, pd, 3, &pos));
  MX_TRY(mx_build_broadcast_in_dim(b, pos, xd, 3, bd, &posb));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, x, posb, &x));
  MX_TRY(mx_build_splat(b, &pt, (double)(N - 1), &pos0));  // every patch of the crop
  for (int32_t l = 0; l <= v->layers_run; l++) {
    for (int32_t f = 0; f < v->n_feature_layers; f++)
      if (v->feature_layers[f] == l) states[f] = x;
    if (l == v->layers_run) break;
    mx_status_t st = encoder_layer(c, &c->w->layers[l], x, pos0, &x);
    if (st != MX_OK) return mx_error_prefix(st, "vision layer %d", l);
  }
  int32_t cat = states[0];
  if (v->n_feature_layers > 1)
    MX_TRY(mx_build_concatenate(b, states, v->n_feature_layers, 2, &cat));
  int64_t fd[2] = {crops * N, (int64_t)v->n_feature_layers * D};
  return mx_build_reshape(b, cat, fd, 2, out);
}

// f32 constant [rows, cols] with value fn(i, j).
static mx_status_t table(mx_builder_t *b, int64_t rows, int64_t cols, float (*fn)(int64_t, int64_t),
                         int32_t *out) {
  int64_t d[2] = {rows, cols};
  float *t = malloc(sizeof(float) * (size_t)(rows * cols));
  if (!t) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) t[i * cols + j] = fn(i, j);
  mx_tensor_t tv = {.type = mx_type_tensor(MX_ELEM_F32, 2, d),
                    .data = (uint8_t *)t,
                    .nbytes = sizeof(float) * (size_t)(rows * cols)};
  mx_status_t st = mx_build_constant(b, &tv, out);
  free(t);
  return st;
}
static float before(int64_t i, int64_t j) { return i < j ? 1.0f : 0.0f; }
static float ones(int64_t i, int64_t j) { return 1.0f; }
static float column(int64_t i, int64_t j) { return (float)j; }

// x [T, K] f32 . m [K, M] -> [T, M].
static mx_status_t matmul(mx_builder_t *b, int32_t x, int32_t m, int32_t *out) {
  int64_t one = 1, zero = 0;
  mx_dot_dims_t dd = {{NULL, 0}, {NULL, 0}, {&one, 1}, {&zero, 1}};
  return mx_build_dot_general(b, x, m, &dd, MX_ELEM_F32, out);
}

// The pooling indices [T, K] with each row's valid ones first (in order), the count of valid
// ones per row [T] f32, and which slots hold them [T, K] f32 (1 / 0).
static mx_status_t compact(mb_t *c, int32_t idx, int32_t *sorted, int32_t *count,
                           int32_t *valid_slots) {
  mx_builder_t *b = &c->b;
  mx_type_t it = *mx_build_type(b, idx);
  int64_t T = it.dims[0], K = it.dims[1], td[3] = {T, K, K}, b01[2] = {0, 1}, b02[2] = {0, 2};
  int32_t zero, ge, valid, idxf, tri, one_k, cnt, cnt_k, vb, jcol, jf, inv_b, after, rank, rank3,
      col3, onehot, oh;
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 0, idx, &zero));
  MX_TRY(mx_build_compare(b, MX_CMP_GE, MX_CMP_TYPE_AUTO, idx, zero, &ge));
  // Every 0 / 1 operand below is mx_g_indicator (a select of splats), not a convert of the i1:
  // IREE 3.13 miscompiles a vector-matrix dot_general of a converted i1 (docs/portability.md).
  MX_TRY(mx_g_indicator(b, ge, &valid));
  MX_TRY(mx_build_convert(b, idx, MX_ELEM_F32, &idxf));
  MX_TRY(table(b, K, K, before, &tri));
  MX_TRY(table(b, K, K, ones, &one_k));
  MX_TRY(matmul(b, valid, tri, &vb));       // valid slots before j
  MX_TRY(matmul(b, valid, one_k, &cnt_k));  // the row's valid count, in every column
  MX_TRY(table(b, 1, K, column, &jcol));
  int64_t kd[2] = {T, K}, b1[2] = {0, 1};
  MX_TRY(mx_build_broadcast_in_dim(b, jcol, kd, 2, b1, &jf));
  // invalid slots before j = j - valid before j; an invalid slot goes after every valid one.
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, jf, vb, &inv_b));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, cnt_k, inv_b, &after));
  MX_TRY(mx_build_select(b, ge, vb, after, &rank));
  // one-hot [T, j, r] of rank[t, j] == r, then sorted[t, r] = sum_j idx[t, j] onehot[t, j, r].
  MX_TRY(mx_build_broadcast_in_dim(b, rank, td, 3, b01, &rank3));
  MX_TRY(mx_build_broadcast_in_dim(b, jcol, td, 3, b02, &col3));
  MX_TRY(mx_build_compare(b, MX_CMP_EQ, MX_CMP_TYPE_AUTO, rank3, col3, &oh));
  MX_TRY(mx_g_indicator(b, oh, &onehot));
  int64_t bt = 0, cj = 1;
  mx_dot_dims_t dd = {{&bt, 1}, {&bt, 1}, {&cj, 1}, {&cj, 1}};
  int32_t sf, slots_left;
  MX_TRY(mx_build_dot_general(b, idxf, onehot, &dd, MX_ELEM_F32, &sf));
  MX_TRY(mx_build_convert(b, sf, MX_ELEM_I32, sorted));
  int64_t lo[2] = {0, 0}, hi[2] = {T, 1}, t1[1] = {T};
  MX_TRY(mx_build_slice(b, cnt_k, lo, hi, NULL, 2, &cnt));
  MX_TRY(mx_build_reshape(b, cnt, t1, 1, count));
  MX_TRY(mx_build_compare(b, MX_CMP_LT, MX_CMP_TYPE_AUTO, jf, cnt_k, &slots_left));
  return mx_g_indicator(b, slots_left, valid_slots);
}

// The adapter: features [C * N, L * D], pooling [T, K] i32 -> [1, T, text hidden].
static mx_status_t adapter(mb_t *c, int32_t feats, int32_t idx, int32_t *out) {
  const mx_vision_config_t *v = &c->cfg->vision;
  const mweights_t *w = c->w;
  mx_builder_t *b = &c->b;
  mx_type_t it = *mx_build_type(b, idx), ft = *mx_build_type(b, feats);
  int64_t T = it.dims[0], K = it.dims[1], IN = ft.dims[1];
  int64_t Hh = v->adapter_heads, Dh = v->adapter_head_dim;
  int32_t sorted, count, slots, zero, safe, rows, mask, masked, sum, cnt_b, query;
  MX_TRY(compact(c, idx, &sorted, &count, &slots));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 0, sorted, &zero));
  MX_TRY(mx_build_binary(b, MX_OP_MAXIMUM, sorted, zero, &safe));
  int64_t off = 2, coll = 0, map = 0, sizes[2] = {1, IN};
  mx_gather_dims_t gd = {{&off, 1}, {&coll, 1}, {NULL, 0}, {NULL, 0}, {&map, 1}, 2};
  MX_TRY(mx_build_gather(b, feats, safe, &gd, sizes, false, &rows));  // [T, K, IN]
  int64_t rd[3] = {T, K, IN}, b01[2] = {0, 1};
  MX_TRY(mx_build_broadcast_in_dim(b, slots, rd, 3, b01, &mask));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, rows, mask, &masked));
  // The mean of the valid rows: their sum (a dot_general with ones, not a reduce) / count.
  int64_t kd = K, two = 2, z = 0, perm[3] = {0, 2, 1};
  mx_type_t kt = mx_type_tensor(MX_ELEM_F32, 1, &kd);
  mx_dot_dims_t sd = {{NULL, 0}, {NULL, 0}, {&two, 1}, {&z, 1}};
  int32_t onesk, ssum;
  MX_TRY(mx_build_splat(b, &kt, 1.0, &onesk));
  MX_TRY(mx_build_transpose(b, masked, perm, 3, &ssum));                 // [T, IN, K]
  MX_TRY(mx_build_dot_general(b, ssum, onesk, &sd, MX_ELEM_F32, &sum));  // [T, IN]
  int64_t sdims[2] = {T, IN}, b0[1] = {0};
  MX_TRY(mx_build_broadcast_in_dim(b, count, sdims, 2, b0, &cnt_b));
  MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, sum, cnt_b, &query));
  // Attention of the query over the token's valid rows (slots 0 .. count - 1).
  int32_t q, k, vv, pos0, one_i, cnt_i, att, o, o3, y;
  int64_t qd[4] = {T, 1, Hh, Dh}, kvd[4] = {T, K, Hh, Dh};
  MX_TRY(linear(c, query, w->pq_w, w->pq_b, &q));
  MX_TRY(linear(c, masked, w->pk_w, w->pk_b, &k));
  MX_TRY(linear(c, masked, w->pv_w, w->pv_b, &vv));
  MX_TRY(mx_build_reshape(b, q, qd, 4, &q));
  MX_TRY(mx_build_reshape(b, k, kvd, 4, &k));
  MX_TRY(mx_build_reshape(b, vv, kvd, 4, &vv));
  MX_TRY(mx_build_convert(b, count, MX_ELEM_I32, &cnt_i));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 1, cnt_i, &one_i));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, cnt_i, one_i, &pos0));
  MX_TRY(attend(c, q, k, vv, pos0, &att));  // [T, 1, Hh * Dh]
  MX_TRY(linear(c, att, w->po_w, w->po_b, &o));
  int64_t o3d[3] = {1, T, v->adapter_hidden};
  MX_TRY(mx_build_reshape(b, o, o3d, 3, &o3));
  // Three linears rather than mx.gated_mlp, whose fused kernel is the text layers' (row counts of
  // a prompt chunk): each one here is a GEMM over the image's tokens.
  int32_t g, u, a, gu;
  MX_TRY(linear(c, o3, w->gate, -1, &g));
  MX_TRY(linear(c, o3, w->up, -1, &u));
  MX_TRY(mx_vision_act(b, "silu", g, &a));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, a, u, &gu));
  MX_TRY(linear(c, gu, w->down, -1, &y));
  *out = y;
  return MX_OK;
}

static mx_status_t build(mb_t *c, const mx_checkpoint_t *ck, const mx_graph_opts_t *o) {
  const mx_vision_config_t *v = &c->cfg->vision;
  int64_t crops = o->vision_grid_h, T = o->vision_grid_w, K = o->vision_pool;
  int64_t pd[3] = {crops, v->num_position_embeddings,
                   (int64_t)v->patch_size * v->patch_size * v->num_channels};
  int64_t id[2] = {T, K};
  mx_type_t inputs[2] = {mx_type_tensor(MX_ELEM_F32, 3, pd), mx_type_tensor(MX_ELEM_I32, 2, id)};
  MX_TRY(mx_vision_func_n(c->cc, &c->w->l, ck, inputs, 2, &c->b, &c->arg));
  int32_t pixels = c->arg[c->w->l.n], pooling = c->arg[c->w->l.n + 1], feats, y;
  MX_TRY(tower(c, pixels, crops, &feats));
  MX_TRY(adapter(c, feats, pooling, &y));
  return mx_build_return(&c->b, &y, 1);
}

mx_status_t mx_vision_molmo2_build(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                   const mx_graph_opts_t *o, mx_comp_ctx_t *cc) {
  if (o->vision_grid_h == 0 && o->vision_grid_w == 0) return MX_OK;  // the other entries only
  if (o->vision_grid_h <= 0 || o->vision_grid_w <= 0 || o->vision_pool <= 0 ||
      o->vision_grid_h > 256 || o->vision_grid_w > (1 << 16) || o->vision_pool > 64)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "graph @vision: %d crops, %d pooled tokens of %d patches each",
                        o->vision_grid_h, o->vision_grid_w, o->vision_pool);
  mweights_t w;
  mb_t c = {.cfg = cfg, .w = &w, .cc = cc};
  mx_status_t st = list_weights(cfg, &w);
  if (st == MX_OK) st = mx_vlist_check(&w.l, ck);
  if (st == MX_OK) st = build(&c, ck, o);
  free(c.arg);
  mweights_free(&w);
  return st != MX_OK ? mx_error_prefix(st, "graph @vision") : MX_OK;
}
