// The CLIP ViT tower with LLaVA's projector and the SigLIP tower with Gemma 3's pooled projector
// as the @vision entry (ADR 0010): the same ViT, told apart by cfg->vision.kind.
//
//   patches  = pixels [1, C, S, S] cut into G x G patches of C x P x P, row-major (the stride-P
//              convolution of the patch embedding as one GEMM against its weight [D, C*P*P],
//              plus its bias for SigLIP)
//   x        = [class_embedding;] patches + position_embedding   [1, G*G (+ 1 for CLIP), D]
//   x        = pre_layrnorm(x)                                    (CLIP)
//   for the layers the features need (CLIP's vision_feature_layer -2: all but the last; SigLIP:
//   all):
//     x += out_proj(attention(q, k, v of layer_norm1(x)))  (full, bidirectional: mx.attention
//                                                           over the tokens' own k and v)
//     x += fc2(act(fc1(layer_norm2(x))))                    (quick_gelu, gelu or gelu_tanh)
//   CLIP:   features = linear_2(act(linear_1(x without the class token under "default")))
//   SigLIP: x = post_layernorm(x); the G x G grid average-pooled in k x k blocks to
//           tokens_per_image rows (k = G / sqrt(tokens_per_image)), then
//           features = ((1 + w) RMSNorm(pooled)) . mm_input_projection_weight ([D, hidden])
// LayerNorm is mx.rms_norm of the centred input plus its bias (what the decoder families with
// LayerNorm do); linears are mx_g_linear (GEMMs against the weights on the cpu backend), the
// patch embedding too (its weight reshaped, a view of the argument).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/vision_internal.h"

// Where the tower's and the projector's tensors live: released llava-hf files keep
// "vision_tower.vision_model.", transformers 5 writes "vision_tower." (its own renaming),
// transformers 4.52..4.x "model.vision_tower.vision_model."; Gemma 3's checkpoints use the same
// layouts.
static const char *const kTowerPrefixes[] = {"vision_tower.vision_model.", "vision_tower.",
                                             "model.vision_tower.vision_model.",
                                             "model.vision_tower."};
static const char *const kProjPrefixes[] = {"multi_modal_projector.",
                                            "model.multi_modal_projector."};

// Index of each tensor in the list (the argument order of @vision).
typedef struct vlayer {
  int32_t ln1_w, ln1_b, q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w,
      fc2_b;
} vlayer_t;

typedef struct vweights {
  mx_vlist_t l;
  int32_t patch, cls, pos, pre_w, pre_b, p1_w, p1_b, p2_w, p2_b;  // p*_b: -1 without biases
  int32_t patch_b, post_w, post_b, mm_norm, mm_proj;              // SigLIP; -1 for CLIP
  vlayer_t *layers;                                               // [layers_run], heap
} vweights_t;

static void vweights_free(vweights_t *w) {
  mx_vlist_free(&w->l);
  free(w->layers);
  memset(w, 0, sizeof *w);
}

#define ADD(field, prefix, name, rank, ...)                           \
  do {                                                                \
    const int64_t dims_[4] = {__VA_ARGS__};                           \
    MX_TRY(mx_vlist_add(&w->l, &(field), prefix, name, rank, dims_)); \
  } while (0)

static mx_status_t list_weights(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                vweights_t *w) {
  const mx_vision_config_t *v = &cfg->vision;
  bool siglip = v->kind == MX_VISION_SIGLIP;
  const char *tp =
      mx_vision_pick_prefix(ck, kTowerPrefixes, 4, "embeddings.patch_embedding.weight");
  const char *pp = mx_vision_pick_prefix(ck, kProjPrefixes, 2,
                                         siglip ? "mm_input_projection_weight" : "linear_1.weight");
  int64_t D = v->hidden_size, F = v->intermediate_size, C = v->num_channels, P = v->patch_size;
  int64_t G = v->image_size / v->patch_size, H = cfg->hidden_size;
  memset(w, 0, sizeof *w);
  w->layers = calloc((size_t)(v->layers_run > 0 ? v->layers_run : 1), sizeof *w->layers);
  if (w->layers == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  w->cls = w->pre_w = w->pre_b = w->p1_w = w->p1_b = w->p2_w = w->p2_b = -1;
  w->patch_b = w->post_w = w->post_b = w->mm_norm = w->mm_proj = -1;
  ADD(w->patch, tp, "embeddings.patch_embedding.weight", 4, D, C, P, P);
  if (siglip) {
    ADD(w->patch_b, tp, "embeddings.patch_embedding.bias", 1, D, 0, 0, 0);
    ADD(w->pos, tp, "embeddings.position_embedding.weight", 2, G * G, D, 0, 0);
  } else {
    ADD(w->cls, tp, "embeddings.class_embedding", 1, D, 0, 0, 0);
    ADD(w->pos, tp, "embeddings.position_embedding.weight", 2, G * G + 1, D, 0, 0);
    ADD(w->pre_w, tp, "pre_layrnorm.weight", 1, D, 0, 0, 0);
    ADD(w->pre_b, tp, "pre_layrnorm.bias", 1, D, 0, 0, 0);
  }
  for (int32_t i = 0; i < v->layers_run; i++) {
    vlayer_t *ly = &w->layers[i];
    char p[MX_VISION_MAX_NAME / 2];
    if ((size_t)snprintf(p, sizeof p, "%sencoder.layers.%d.", tp, i) >= sizeof p)
      return mx_error_set(MX_ERR_INVALID_ARG, "vision layer %d: name too long", i);
    ADD(ly->ln1_w, p, "layer_norm1.weight", 1, D, 0, 0, 0);
    ADD(ly->ln1_b, p, "layer_norm1.bias", 1, D, 0, 0, 0);
    ADD(ly->q_w, p, "self_attn.q_proj.weight", 2, D, D, 0, 0);
    ADD(ly->q_b, p, "self_attn.q_proj.bias", 1, D, 0, 0, 0);
    ADD(ly->k_w, p, "self_attn.k_proj.weight", 2, D, D, 0, 0);
    ADD(ly->k_b, p, "self_attn.k_proj.bias", 1, D, 0, 0, 0);
    ADD(ly->v_w, p, "self_attn.v_proj.weight", 2, D, D, 0, 0);
    ADD(ly->v_b, p, "self_attn.v_proj.bias", 1, D, 0, 0, 0);
    ADD(ly->o_w, p, "self_attn.out_proj.weight", 2, D, D, 0, 0);
    ADD(ly->o_b, p, "self_attn.out_proj.bias", 1, D, 0, 0, 0);
    ADD(ly->ln2_w, p, "layer_norm2.weight", 1, D, 0, 0, 0);
    ADD(ly->ln2_b, p, "layer_norm2.bias", 1, D, 0, 0, 0);
    ADD(ly->fc1_w, p, "mlp.fc1.weight", 2, F, D, 0, 0);
    ADD(ly->fc1_b, p, "mlp.fc1.bias", 1, F, 0, 0, 0);
    ADD(ly->fc2_w, p, "mlp.fc2.weight", 2, D, F, 0, 0);
    ADD(ly->fc2_b, p, "mlp.fc2.bias", 1, D, 0, 0, 0);
  }
  if (siglip) {
    ADD(w->post_w, tp, "post_layernorm.weight", 1, D, 0, 0, 0);
    ADD(w->post_b, tp, "post_layernorm.bias", 1, D, 0, 0, 0);
    ADD(w->mm_norm, pp, "mm_soft_emb_norm.weight", 1, D, 0, 0, 0);
    ADD(w->mm_proj, pp, "mm_input_projection_weight", 2, D, H, 0, 0);
    return MX_OK;
  }
  ADD(w->p1_w, pp, "linear_1.weight", 2, H, D, 0, 0);
  if (v->projector_bias) ADD(w->p1_b, pp, "linear_1.bias", 1, H, 0, 0, 0);
  ADD(w->p2_w, pp, "linear_2.weight", 2, H, H, 0, 0);
  if (v->projector_bias) ADD(w->p2_b, pp, "linear_2.bias", 1, H, 0, 0, 0);
  return MX_OK;
}
#undef ADD

mx_status_t mx_vision_list(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                           mx_vlist_t *out) {
  memset(out, 0, sizeof *out);
  if (!cfg->vision.present) return MX_OK;
  if (cfg->vision.kind == MX_VISION_MOLMO2) return mx_vision_molmo2_list(cfg, out);
  if (!mx_vision_fixed_size(&cfg->vision)) return mx_vision_qwen_list(cfg, ck, out);
  vweights_t w;
  mx_status_t st = list_weights(cfg, ck, &w);
  if (st == MX_OK) {
    *out = w.l;
    memset(&w.l, 0, sizeof w.l);
  }
  vweights_free(&w);
  return st;
}

mx_status_t mx_vision_check_weights(const mx_model_config_t *cfg, const mx_checkpoint_t *ck) {
  mx_vlist_t l;
  mx_status_t st = mx_vision_list(cfg, ck, &l);
  if (st == MX_OK) st = mx_vlist_check(&l, ck);
  mx_vlist_free(&l);
  return st;
}

mx_status_t mx_vision_list_weights(const mx_model_config_t *cfg, mx_weight_spec_fn fn, void *user) {
  if (cfg == NULL || fn == NULL)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_vision_list_weights: NULL argument");
  mx_vlist_t l;
  mx_status_t st = mx_vision_list(cfg, NULL, &l);
  for (int32_t i = 0; st == MX_OK && i < l.n; i++)
    st = fn(user, l.w[i].name, l.w[i].rank, l.w[i].dims);
  mx_vlist_free(&l);
  return st;
}

// ---- building ----

typedef struct vb {
  const mx_model_config_t *cfg;
  const vweights_t *w;
  mx_comp_ctx_t *cc;
  mx_builder_t b;
  int32_t *arg;  // value id of each weight argument
} vb_t;

static mx_status_t layer_norm(vb_t *c, int32_t x, int32_t wi, int32_t bi, int32_t *out) {
  return mx_vision_norm(c->cc, &c->b, x, c->arg[wi], c->arg[bi], true,
                        c->cfg->vision.layer_norm_eps, out);
}

static mx_status_t linear(vb_t *c, int32_t x, int32_t wi, int32_t bi, int32_t *out) {
  return mx_vision_linear(&c->b, x, c->arg[wi], bi >= 0 ? c->arg[bi] : -1, out);
}

static mx_status_t encoder_layer(vb_t *c, const vlayer_t *ly, int32_t x, int32_t *out) {
  const mx_vision_config_t *v = &c->cfg->vision;
  mx_builder_t *b = &c->b;
  mx_type_t xt = *mx_build_type(b, x);
  int64_t N = xt.dims[1], Hh = v->num_heads, Dh = v->hidden_size / v->num_heads;
  int64_t hd[4] = {1, N, Hh, Dh};
  int32_t h, q, k, vv, att, o, x1, h2, f, a, m;
  MX_TRY(layer_norm(c, x, ly->ln1_w, ly->ln1_b, &h));
  MX_TRY(linear(c, h, ly->q_w, ly->q_b, &q));
  MX_TRY(linear(c, h, ly->k_w, ly->k_b, &k));
  MX_TRY(linear(c, h, ly->v_w, ly->v_b, &vv));
  MX_TRY(mx_build_reshape(b, q, hd, 4, &q));
  MX_TRY(mx_build_reshape(b, k, hd, 4, &k));
  MX_TRY(mx_build_reshape(b, vv, hd, 4, &vv));
  MX_TRY(mx_vision_attention(c->cc, b, q, k, vv, &att));
  MX_TRY(linear(c, att, ly->o_w, ly->o_b, &o));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, x, o, &x1));
  MX_TRY(layer_norm(c, x1, ly->ln2_w, ly->ln2_b, &h2));
  MX_TRY(linear(c, h2, ly->fc1_w, ly->fc1_b, &f));
  MX_TRY(mx_vision_act(b, v->hidden_act, f, &a));
  MX_TRY(linear(c, a, ly->fc2_w, ly->fc2_b, &m));
  return mx_build_binary(b, MX_OP_ADD, x1, m, out);
}

// [1, C, S, S] pixels -> [1, G*G, D] patch embeddings (+ bias) [+ class token] + positions.
static mx_status_t embeddings(vb_t *c, int32_t pixels, int32_t *out) {
  const mx_vision_config_t *v = &c->cfg->vision;
  const vweights_t *w = c->w;
  mx_builder_t *b = &c->b;
  int64_t C = v->num_channels, P = v->patch_size, G = v->image_size / P, D = v->hidden_size;
  int64_t N = G * G + (w->cls >= 0 ? 1 : 0);
  int64_t d6[6] = {1, C, G, P, G, P}, perm[6] = {0, 2, 4, 1, 3, 5}, d3[3] = {1, G * G, C * P * P};
  int64_t wd[2] = {D, C * P * P}, cd[3] = {1, 1, D}, pd[3] = {1, N, D};
  int32_t x6, xt, rows, wp, x, pos, posf;
  MX_TRY(mx_build_reshape(b, pixels, d6, 6, &x6));
  MX_TRY(mx_build_transpose(b, x6, perm, 6, &xt));
  MX_TRY(mx_build_reshape(b, xt, d3, 3, &rows));
  MX_TRY(mx_build_reshape(b, c->arg[w->patch], wd, 2, &wp));
  MX_TRY(mx_vision_linear(b, rows, wp, w->patch_b >= 0 ? c->arg[w->patch_b] : -1, &x));
  if (w->cls >= 0) {
    int32_t cls, clsf;
    MX_TRY(mx_g_f32(b, c->arg[w->cls], &clsf));
    MX_TRY(mx_build_reshape(b, clsf, cd, 3, &cls));
    int32_t parts[2] = {cls, x};
    MX_TRY(mx_build_concatenate(b, parts, 2, 1, &x));
  }
  MX_TRY(mx_g_f32(b, c->arg[w->pos], &posf));
  MX_TRY(mx_build_reshape(b, posf, pd, 3, &pos));
  return mx_build_binary(b, MX_OP_ADD, x, pos, out);
}

// Gemma 3's projector: [1, G*G, D] -> average pool of k x k patches -> (1 + w) RMSNorm ->
// . mm_input_projection_weight [D, hidden] (a matmul, not a linear: mx_g_matmul_w). The
// pool's sums are a dot_general with ones over each block's k*k values (moved last) rather than
// a reduce, which carries a region the cpu runtime would hand to the interpreter whole.
static mx_status_t pooled_projector(vb_t *c, int32_t x, int32_t *out) {
  const mx_vision_config_t *v = &c->cfg->vision;
  const vweights_t *w = c->w;
  mx_builder_t *b = &c->b;
  int64_t G = v->image_size / v->patch_size, D = v->hidden_size, g = 1;
  while ((g + 1) * (g + 1) <= v->tokens_per_image) g++;
  int64_t k = G / g, kk = k * k, d6[6] = {1, g, k, g, k, D}, perm[6] = {0, 1, 3, 5, 2, 4};
  int64_t d5[5] = {1, g, g, D, kk}, d3[3] = {1, g * g, D}, last = 4, zero = 0;
  mx_type_t ot = mx_type_tensor(MX_ELEM_F32, 1, &kk);
  mx_dot_dims_t dd = {{NULL, 0}, {NULL, 0}, {&last, 1}, {&zero, 1}};
  int32_t x6, xt, x5, ones, sum, area, mean, pooled, normed;
  MX_TRY(mx_build_reshape(b, x, d6, 6, &x6));
  MX_TRY(mx_build_transpose(b, x6, perm, 6, &xt));
  MX_TRY(mx_build_reshape(b, xt, d5, 5, &x5));
  MX_TRY(mx_build_splat(b, &ot, 1.0, &ones));
  MX_TRY(mx_build_dot_general(b, x5, ones, &dd, MX_ELEM_F32, &sum));  // [1, g, g, D]
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, (double)kk, sum, &area));
  MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, sum, area, &mean));
  MX_TRY(mx_build_reshape(b, mean, d3, 3, &pooled));
  MX_TRY(mx_comp_rms_norm(c->cc, b, pooled, c->arg[w->mm_norm], v->layer_norm_eps, 1.0, &normed));
  return mx_g_matmul_w(b, normed, c->arg[w->mm_proj], out);
}

static mx_status_t body(vb_t *c, int32_t pixels) {
  const mx_vision_config_t *v = &c->cfg->vision;
  const vweights_t *w = c->w;
  mx_builder_t *b = &c->b;
  int32_t x, y;
  MX_TRY(embeddings(c, pixels, &x));
  if (w->pre_w >= 0) MX_TRY(layer_norm(c, x, w->pre_w, w->pre_b, &x));
  for (int32_t l = 0; l < v->layers_run; l++) {
    mx_status_t st = encoder_layer(c, &w->layers[l], x, &x);
    if (st != MX_OK) return mx_error_prefix(st, "vision layer %d", l);
  }
  if (w->post_w >= 0) {
    MX_TRY(layer_norm(c, x, w->post_w, w->post_b, &x));
    MX_TRY(pooled_projector(c, x, &y));
    return mx_build_return(b, &y, 1);
  }
  if (v->drop_cls) {
    mx_type_t t = *mx_build_type(b, x);
    int64_t lo[3] = {0, 1, 0}, hi[3] = {1, t.dims[1], t.dims[2]};
    MX_TRY(mx_build_slice(b, x, lo, hi, NULL, 3, &x));
  }
  int32_t h, a;
  MX_TRY(linear(c, x, w->p1_w, w->p1_b, &h));
  MX_TRY(mx_vision_act(b, v->projector_act, h, &a));
  MX_TRY(linear(c, a, w->p2_w, w->p2_b, &y));
  return mx_build_return(b, &y, 1);
}

static mx_status_t build(vb_t *c, const mx_checkpoint_t *ck) {
  const mx_vision_config_t *v = &c->cfg->vision;
  int64_t pd[4] = {1, v->num_channels, v->image_size, v->image_size};
  mx_type_t pixels = mx_type_tensor(MX_ELEM_F32, 4, pd);
  MX_TRY(mx_vision_func(c->cc, &c->w->l, ck, &pixels, &c->b, &c->arg));
  return body(c, c->arg[c->w->l.n]);
}

mx_status_t mx_vision_build(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                            const mx_graph_opts_t *o, mx_comp_ctx_t *cc) {
  if (!cfg->vision.present)
    return mx_error_set(MX_ERR_INVALID_ARG, "graph: model_type '%s' has no vision tower",
                        cfg->model_type);
  if (cfg->vision.kind == MX_VISION_MOLMO2) return mx_vision_molmo2_build(cfg, ck, o, cc);
  if (!mx_vision_fixed_size(&cfg->vision)) return mx_vision_qwen_build(cfg, ck, o, cc);
  vweights_t w;
  vb_t c = {.cfg = cfg, .w = &w, .cc = cc};
  mx_status_t st = list_weights(cfg, ck, &w);
  if (st == MX_OK) st = mx_vlist_check(&w.l, ck);
  if (st == MX_OK) st = build(&c, ck);
  free(c.arg);
  vweights_free(&w);
  return st != MX_OK ? mx_error_prefix(st, "graph @vision") : MX_OK;
}
