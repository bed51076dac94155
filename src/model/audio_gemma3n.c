// Gemma 3n's audio tower and embed_audio as the @audio entry (ADR 0022; model.h,
// mx_graph_opts_t.audio_frames), as transformers 5.25's Gemma3nAudioEncoder,
// Gemma3nMultimodalEmbedder and Gemma3nModel's padding compute them:
//
//   x = features [F, M, 1] (time, mels, channels)
//   2 x: x = relu(cumulative_group_norm(conv2d(x)))  (kernel (kt, kf), stride (st, sf), padded
//        (0, kt - 1) in time and (1, 1) in frequency; im2col slices and one GEMM)
//   x = input_proj_linear(x as [T, W * C])             [T, D]
//   valid[t] = mask[t * st0 * st1]
//   per conformer block:
//     x = ffw(x); x = x + post_norm(clip(post(attention(pre_attn_norm(clip(x))))))
//     x = lconv(x where valid, else 0); x = ffw(x); x = norm(clip(x))
//   rows = every reduction-th x; embed_audio: post-projection RMSNorm (no scale) of
//   embedding_projection(soft_embedding_norm(rows)); invalid rows and the rows up to
//   soft_tokens: embed_audio of the text vocabulary's last id (its hard embedding).
//
// The attention is local: queries in chunks of W = chunk_size, each reading the C = W + L + R
// keys from L = context_left - 1 before its chunk to R = context_right after it (zero-padded at
// the ends), logits q.k plus q.(pos_proj of sinusoids of the relative position L .. -R), shifted
// to the key slots as transformers' _relative_shift does (pad to C + 1, flatten, cut, reshape),
// capped (cap tanh(x / cap)), masked to the keys of real frames within [w, w + L + R] of the
// query's slot. No composite: dot_generals with batch dimensions, and the softmax's sums
// dot_generals with ones (no reduce region, which would hand the whole entry to the
// interpreter on the cpu runtime). Logits are at most cap after the capping, so the softmax
// takes exp(x - cap) without a max; a query with no valid key (a padding frame's) gets zeros
// where transformers spreads it evenly, which only padding frames' rows see (the keys of
// padding frames are masked and the light convolution is causal), and those become padding.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/audio_internal.h"
#include "model/vision_internal.h"

static const char kTower[] = "model.audio_tower.";
static const char kEmbed[] = "model.embed_audio.";

typedef struct ablock {
  int32_t ffw[2][4];  // start, end: pre_layer_norm, ffw_layer_1, ffw_layer_2, post_layer_norm
  int32_t attn_pre, q, k, v, pos, pds, post, post_norm;
  int32_t lc_pre, lc_start, lc_conv, lc_norm, lc_end, norm;
} ablock_t;

typedef struct aweights {
  mx_vlist_t l;
  int32_t conv[2], conv_norm[2], proj;
  int32_t emb, hard_norm, soft_norm, emb_proj;
  ablock_t *blocks;  // [num_layers], heap
} aweights_t;

static void aweights_free(aweights_t *w) {
  mx_vlist_free(&w->l);
  free(w->blocks);
  memset(w, 0, sizeof *w);
}

// Appends tensor prefix + name of shape [d0, d1, d2, d3][:rank]; *idx its argument index.
static mx_status_t add(aweights_t *w, int32_t *idx, const char *prefix, const char *name,
                       int32_t rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
  const int64_t dims[4] = {d0, d1, d2, d3};
  return mx_vlist_add(&w->l, idx, prefix, name, rank, dims);
}
#define ADD(field, prefix, name, rank, d0, d1, d2, d3) \
  MX_TRY(add(w, &(field), prefix, name, rank, d0, d1, d2, d3))

// The sub-sampler's output width (frequency bins) after block i.
static int64_t conv_width(const mx_audio_config_t *a, int i) {
  int64_t f = a->input_feat_size;
  for (int k = 0; k <= i; k++) f = (f + 2 - a->sscp_kernel[k][1]) / a->sscp_stride[k][1] + 1;
  return f;
}

static mx_status_t list_weights(const mx_model_config_t *cfg, aweights_t *w) {
  const mx_audio_config_t *a = &cfg->audio;
  int64_t D = a->hidden_size, H = cfg->hidden_size, K = a->conv_kernel;
  memset(w, 0, sizeof *w);
  w->blocks = calloc((size_t)a->num_layers, sizeof *w->blocks);
  if (w->blocks == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  char p[MX_VISION_MAX_NAME / 2];
  for (int i = 0; i < 2; i++) {
    int64_t cin = i == 0 ? 1 : a->sscp_channels[0], cout = a->sscp_channels[i];
    snprintf(p, sizeof p, "%ssubsample_conv_projection.conv_%d.", kTower, i);
    ADD(w->conv[i], p, "conv.weight", 4, cout, cin, a->sscp_kernel[i][0], a->sscp_kernel[i][1]);
    ADD(w->conv_norm[i], p, "norm.weight", 1, cout, 0, 0, 0);
  }
  snprintf(p, sizeof p, "%ssubsample_conv_projection.", kTower);
  ADD(w->proj, p, "input_proj_linear.weight", 2, D, a->sscp_channels[1] * conv_width(a, 1), 0, 0);
  static const char *const ffw[2] = {"ffw_layer_start.", "ffw_layer_end."};
  static const char *const ffw_names[4] = {"pre_layer_norm.weight", "ffw_layer_1.weight",
                                           "ffw_layer_2.weight", "post_layer_norm.weight"};
  for (int32_t l = 0; l < a->num_layers; l++) {
    ablock_t *k = &w->blocks[l];
    for (int j = 0; j < 2; j++) {
      snprintf(p, sizeof p, "%sconformer.%d.%s", kTower, l, ffw[j]);
      int64_t d0[4][2] = {{D, 0}, {4 * D, D}, {D, 4 * D}, {D, 0}};
      for (int n = 0; n < 4; n++)
        ADD(k->ffw[j][n], p, ffw_names[n], d0[n][1] ? 2 : 1, d0[n][0], d0[n][1], 0, 0);
    }
    snprintf(p, sizeof p, "%sconformer.%d.attention.", kTower, l);
    ADD(k->attn_pre, p, "pre_attn_norm.weight", 1, D, 0, 0, 0);
    ADD(k->q, p, "attn.q_proj.weight", 2, D, D, 0, 0);
    ADD(k->k, p, "attn.k_proj.weight", 2, D, D, 0, 0);
    ADD(k->v, p, "attn.v_proj.weight", 2, D, D, 0, 0);
    ADD(k->pos, p, "attn.relative_position_embedding.pos_proj.weight", 2, D, D, 0, 0);
    ADD(k->pds, p, "attn.per_dim_scale", 1, D / a->num_heads, 0, 0, 0);
    ADD(k->post, p, "post.weight", 2, D, D, 0, 0);
    ADD(k->post_norm, p, "post_norm.weight", 1, D, 0, 0, 0);
    snprintf(p, sizeof p, "%sconformer.%d.lconv1d.", kTower, l);
    ADD(k->lc_pre, p, "pre_layer_norm.weight", 1, D, 0, 0, 0);
    ADD(k->lc_start, p, "linear_start.weight", 2, 2 * D, D, 0, 0);
    ADD(k->lc_conv, p, "depthwise_conv1d.weight", 3, D, 1, K, 0);
    ADD(k->lc_norm, p, "conv_norm.weight", 1, D, 0, 0, 0);
    ADD(k->lc_end, p, "linear_end.weight", 2, D, D, 0, 0);
    snprintf(p, sizeof p, "%sconformer.%d.", kTower, l);
    ADD(k->norm, p, "norm.weight", 1, D, 0, 0, 0);
  }
  ADD(w->emb, kEmbed, "embedding.weight", 2, a->vocab_size, D, 0, 0);
  ADD(w->hard_norm, kEmbed, "hard_embedding_norm.weight", 1, D, 0, 0, 0);
  ADD(w->soft_norm, kEmbed, "soft_embedding_norm.weight", 1, D, 0, 0, 0);
  ADD(w->emb_proj, kEmbed, "embedding_projection.weight", 2, H, D, 0, 0);
  return MX_OK;
}
#undef ADD

mx_status_t mx_audio_list(const mx_model_config_t *cfg, mx_vlist_t *l) {
  memset(l, 0, sizeof *l);
  if (!cfg->audio.present) return MX_OK;
  aweights_t w;
  mx_status_t st = list_weights(cfg, &w);
  if (st == MX_OK) {
    *l = w.l;
    memset(&w.l, 0, sizeof w.l);
  }
  aweights_free(&w);
  return st;
}

mx_status_t mx_audio_list_weights(const mx_model_config_t *cfg, mx_weight_spec_fn fn, void *user) {
  if (cfg == NULL || fn == NULL)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_audio_list_weights: NULL argument");
  if (!cfg->audio.present) return MX_OK;
  aweights_t w;
  mx_status_t st = list_weights(cfg, &w);
  for (int32_t i = 0; st == MX_OK && i < w.l.n; i++)
    st = fn(user, w.l.w[i].name, w.l.w[i].rank, w.l.w[i].dims);
  aweights_free(&w);
  return st;
}

// ---- building ----

typedef struct ab {
  const mx_audio_config_t *a;
  const aweights_t *w;
  mx_comp_ctx_t *cc;
  mx_builder_t b;
  int32_t *arg;    // value id of each weight argument, then the features and the mask
  int64_t T;       // frames after the sub-sampler
  int64_t pad_id;  // embed_audio row of the padding (the text vocabulary's last id)
} ab_t;

static mx_status_t f32_arg(ab_t *c, int32_t wi, int32_t *out) {
  return mx_g_f32(&c->b, c->arg[wi], out);
}

// x [1, T, D] RMS-normalized with weight wi (Gemma3nRMSNorm: x (mean(x^2) + eps)^-1/2 w).
static mx_status_t norm(ab_t *c, int32_t x, int32_t wi, double eps, int32_t *out) {
  return mx_comp_rms_norm(c->cc, &c->b, x, c->arg[wi], eps, 0.0, out);
}

static mx_status_t linear(ab_t *c, int32_t x, int32_t wi, int32_t *out) {
  return mx_g_linear(&c->b, x, c->arg[wi], out);
}

static mx_status_t clip(ab_t *c, int32_t x, int32_t *out) {
  int32_t lo, hi;
  MX_TRY(mx_build_scalar(&c->b, MX_ELEM_F32, -c->a->gradient_clipping, &lo));
  MX_TRY(mx_build_scalar(&c->b, MX_ELEM_F32, c->a->gradient_clipping, &hi));
  return mx_build_clamp(&c->b, lo, x, hi, out);
}

static mx_status_t scale(ab_t *c, int32_t x, double v, int32_t *out) {
  int32_t k;
  MX_TRY(mx_g_full_like(&c->b, MX_ELEM_F32, v, x, &k));
  return mx_build_binary(&c->b, MX_OP_MULTIPLY, x, k, out);
}

static mx_status_t silu(ab_t *c, int32_t x, int32_t *out) {
  int32_t s;
  MX_TRY(mx_build_unary(&c->b, MX_OP_LOGISTIC, x, &s));
  return mx_build_binary(&c->b, MX_OP_MULTIPLY, x, s, out);
}

// Sum of x [..., n] over its last dimension (a dot_general with ones) -> [...].
static mx_status_t sum_last(ab_t *c, int32_t x, int32_t *out) {
  const mx_type_t *t = mx_build_type(&c->b, x);
  int64_t last = t->rank - 1, zero = 0, n = t->dims[last];
  mx_type_t ot = mx_type_tensor(MX_ELEM_F32, 1, &n);
  mx_dot_dims_t dd = {{NULL, 0}, {NULL, 0}, {&last, 1}, {&zero, 1}};
  int32_t ones;
  MX_TRY(mx_build_splat(&c->b, &ot, 1.0, &ones));
  return mx_build_dot_general(&c->b, x, ones, &dd, MX_ELEM_F32, out);
}

// Running sum over t of s [T] f32: a dot_general with the triangle (j <= t) of ones.
static mx_status_t cumsum(ab_t *c, int32_t s, int32_t *out) {
  int64_t T = mx_build_type(&c->b, s)->dims[0], td[2] = {T, T}, one = 1, zero = 0;
  mx_type_t it = mx_type_tensor(MX_ELEM_I32, 2, td);
  mx_dot_dims_t dd = {{NULL, 0}, {NULL, 0}, {&one, 1}, {&zero, 1}};
  int32_t row, col, le, tri;
  MX_TRY(mx_build_iota(&c->b, &it, 0, &row));
  MX_TRY(mx_build_iota(&c->b, &it, 1, &col));
  MX_TRY(mx_build_compare(&c->b, MX_CMP_LE, MX_CMP_TYPE_AUTO, col, row, &le));
  MX_TRY(mx_build_convert(&c->b, le, MX_ELEM_F32, &tri));  // no [T, T] constants in the module
  return mx_build_dot_general(&c->b, tri, s, &dd, MX_ELEM_F32, out);
}

// x [T, ...] of any rank (<= 4) zero-padded by lo rows before and hi after.
static mx_status_t pad_rows(ab_t *c, int32_t x, int64_t lo, int64_t hi, int32_t *out) {
  const mx_type_t *t = mx_build_type(&c->b, x);
  int64_t l[4] = {lo, 0, 0, 0}, h[4] = {hi, 0, 0, 0};
  int32_t zero;
  MX_TRY(mx_build_scalar(&c->b, t->elem, 0.0, &zero));
  return mx_build_pad(&c->b, x, zero, l, h, NULL, t->rank, out);
}

// Gemma3nAudioCumulativeGroupNorm of y [T, W, C] with weight wi [C], then ReLU: each frame
// normalized by the mean and variance of every value of the frames up to it (the variance of
// frame s taken around frame s's own running mean, as transformers sums it).
static mx_status_t group_norm_relu(ab_t *c, int32_t y, int32_t wi, int32_t *out) {
  mx_builder_t *b = &c->b;
  mx_type_t yt = *mx_build_type(b, y);
  int64_t T = yt.dims[0], n = yt.dims[1] * yt.dims[2], fd[2] = {T, n}, td = T, b0 = 0;
  int64_t b2 = 2;
  mx_type_t it = mx_type_tensor(MX_ELEM_F32, 1, &td);
  int32_t flat, s, cs, idx, one, cnt, k, mean, meanb, d, sq, ss, css, var, eps, r, rb, xn, wf, wb;
  int32_t x3, zero;
  MX_TRY(mx_build_reshape(b, y, fd, 2, &flat));
  MX_TRY(sum_last(c, flat, &s));
  MX_TRY(cumsum(c, s, &cs));
  MX_TRY(mx_build_iota(b, &it, 0, &idx));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 1.0, idx, &one));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, idx, one, &cnt));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, (double)n, cnt, &k));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, cnt, k, &cnt));  // values up to frame t (exact)
  MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, cs, cnt, &mean));
  MX_TRY(mx_build_broadcast_in_dim(b, mean, fd, 2, &b0, &meanb));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, flat, meanb, &d));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, d, d, &sq));
  MX_TRY(sum_last(c, sq, &ss));
  MX_TRY(cumsum(c, ss, &css));
  MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, css, cnt, &var));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, c->a->sscp_group_norm_eps, var, &eps));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, var, eps, &var));
  MX_TRY(mx_build_unary(b, MX_OP_RSQRT, var, &r));
  MX_TRY(mx_build_broadcast_in_dim(b, r, fd, 2, &b0, &rb));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, d, rb, &xn));
  MX_TRY(mx_build_reshape(b, xn, yt.dims, 3, &x3));
  MX_TRY(f32_arg(c, wi, &wf));
  MX_TRY(mx_build_broadcast_in_dim(b, wf, yt.dims, 3, &b2, &wb));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, x3, wb, &x3));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.0, x3, &zero));
  return mx_build_binary(b, MX_OP_MAXIMUM, x3, zero, out);
}

// Block i of the sub-sampler on x [T, W, Cin]: the convolution as im2col (one strided slice per
// kernel tap, taps then input channels last) times the weight [Cout, Cin, kt, kf] laid out the
// same way, then the group norm and ReLU -> [To, Wo, Cout].
static mx_status_t conv_block(ab_t *c, int i, int32_t x, int32_t *out) {
  const mx_audio_config_t *a = c->a;
  mx_builder_t *b = &c->b;
  mx_type_t xt = *mx_build_type(b, x);
  int64_t kt = a->sscp_kernel[i][0], kf = a->sscp_kernel[i][1], st = a->sscp_stride[i][0];
  int64_t sf = a->sscp_stride[i][1], T = xt.dims[0], W = xt.dims[1], ci = xt.dims[2];
  int64_t co = a->sscp_channels[i], To = (T - 1) / st + 1, Wo = (W + 2 - kf) / sf + 1;
  int64_t lo[3] = {0, 1, 0}, hi[3] = {kt - 1, 1, 0}, strides[3] = {st, sf, 1};
  int64_t td[4] = {To, Wo, 1, ci}, rd[3] = {To, Wo, kt * kf * ci}, perm[4] = {0, 2, 3, 1};
  int64_t wd[2] = {co, kt * kf * ci};
  int32_t zero, xp, wf, wt, w2, cols, y;
  int32_t *taps = malloc(sizeof *taps * (size_t)(kt * kf));
  if (taps == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_status_t st_ = mx_build_scalar(b, MX_ELEM_F32, 0.0, &zero);
  if (st_ == MX_OK) st_ = mx_build_pad(b, x, zero, lo, hi, NULL, 3, &xp);
  for (int64_t r = 0; st_ == MX_OK && r < kt; r++) {
    for (int64_t q = 0; st_ == MX_OK && q < kf; q++) {
      int64_t s0[3] = {r, q, 0}, s1[3] = {r + (To - 1) * st + 1, q + (Wo - 1) * sf + 1, ci};
      int32_t tap;
      st_ = mx_build_slice(b, xp, s0, s1, strides, 3, &tap);
      if (st_ == MX_OK) st_ = mx_build_reshape(b, tap, td, 4, &taps[r * kf + q]);
    }
  }
  if (st_ == MX_OK) st_ = mx_g_concat(b, taps, (int32_t)(kt * kf), 2, &cols);
  free(taps);
  MX_TRY(st_);
  MX_TRY(mx_build_reshape(b, cols, rd, 3, &cols));
  MX_TRY(f32_arg(c, c->w->conv[i], &wf));
  MX_TRY(mx_build_transpose(b, wf, perm, 4, &wt));  // [Cout, kt, kf, Cin]
  MX_TRY(mx_build_reshape(b, wt, wd, 2, &w2));
  MX_TRY(mx_g_linear(b, cols, w2, &y));
  return group_norm_relu(c, y, c->w->conv_norm[i], out);
}

// Gemma3nAudioConformerFeedForward j of block k on x [1, T, D].
static mx_status_t ffw(ab_t *c, const ablock_t *k, int j, int32_t x, int32_t *out) {
  const int32_t *w = k->ffw[j];
  int32_t h;
  MX_TRY(clip(c, x, &h));
  MX_TRY(norm(c, h, w[0], 1e-6, &h));
  MX_TRY(linear(c, h, w[1], &h));
  MX_TRY(silu(c, h, &h));
  MX_TRY(linear(c, h, w[2], &h));
  MX_TRY(clip(c, h, &h));
  MX_TRY(norm(c, h, w[3], 1e-6, &h));
  MX_TRY(scale(c, h, c->a->residual_weight, &h));
  return mx_build_binary(&c->b, MX_OP_ADD, x, h, out);
}

// The key context of every query chunk: x [T, ...] (rank r <= 3) -> [U, C, ...], rows
// u W - L .. u W - L + C - 1 of x zero-padded; as U shifted views of its W-row blocks.
static mx_status_t context(ab_t *c, int32_t x, int64_t U, int32_t *out) {
  const mx_audio_config_t *a = c->a;
  mx_builder_t *b = &c->b;
  mx_type_t xt = *mx_build_type(b, x);
  int64_t W = a->chunk_size, L = a->context_left > 0 ? a->context_left - 1 : 0;
  int64_t C = W + L + a->context_right, nb = (C + W - 1) / W, r = xt.rank;
  int64_t bd[5] = {U + nb, W}, lo[5] = {0}, hi[5] = {U, nb * W}, cd[5] = {U, C};
  for (int64_t i = 1; i < r; i++) bd[i + 1] = hi[i + 1] = cd[i + 1] = xt.dims[i];
  int32_t xp, blocks, parts[64], cat;
  if (nb > 64) return mx_error_set(MX_ERR_UNSUPPORTED, "audio attention context too long");
  MX_TRY(pad_rows(c, x, L, (U + nb) * W - L - xt.dims[0], &xp));
  MX_TRY(mx_build_reshape(b, xp, bd, (int32_t)r + 1, &blocks));
  for (int64_t j = 0; j < nb; j++) {
    int64_t s0[5] = {j, 0, 0, 0, 0}, s1[5] = {j + U, W};
    for (int64_t i = 1; i < r; i++) s1[i + 1] = xt.dims[i];
    MX_TRY(mx_build_slice(b, blocks, s0, s1, NULL, (int32_t)r + 1, &parts[j]));
  }
  MX_TRY(mx_g_concat(b, parts, (int32_t)nb, 1, &cat));
  return mx_build_slice(b, cat, lo, cd, NULL, (int32_t)r + 1, out);
}

// The sinusoids of relative positions L, L - 1, .. -R [L + R + 1, D] as transformers computes
// them in f32 (timescales 1 .. 1e4 over D / 2 channels; sin then cos).
static mx_status_t timing(ab_t *c, int64_t Fs, int64_t L, int32_t *out) {
  int64_t D = c->a->hidden_size, half = D / 2, dims[2] = {Fs, D};
  mx_type_t t = mx_type_tensor(MX_ELEM_F32, 2, dims);
  mx_tensor_t v;
  MX_TRY(mx_tensor_alloc(&v, &t));
  float *p = (float *)v.data;
  float inc = (float)(log(1.0e4) / (double)(half > 1 ? half - 1 : 1));
  for (int64_t f = 0; f < Fs; f++) {
    for (int64_t i = 0; i < half; i++) {
      float inv = expf((float)i * -inc), s = (float)(L - f) * inv;
      p[f * D + i] = sinf(s);
      p[f * D + half + i] = cosf(s);
    }
  }
  mx_status_t st = mx_build_constant(&c->b, &v, out);
  mx_tensor_free(&v);
  return st;
}

// Softplus of f32 x as torch computes it (x itself above 20).
static mx_status_t softplus(ab_t *c, int32_t x, int32_t *out) {
  int32_t e, l, lim, big;
  MX_TRY(mx_build_unary(&c->b, MX_OP_EXPONENTIAL, x, &e));
  MX_TRY(mx_build_unary(&c->b, MX_OP_LOG_PLUS_ONE, e, &l));
  MX_TRY(mx_g_full_like(&c->b, MX_ELEM_F32, 20.0, x, &lim));
  MX_TRY(mx_build_compare(&c->b, MX_CMP_GT, MX_CMP_TYPE_AUTO, x, lim, &big));
  return mx_build_select(&c->b, big, x, l, out);
}

// Gemma3nAudioAttention of h [1, T, D] with key validity kvalid [U, C] (i1) -> [1, T, D].
static mx_status_t attention(ab_t *c, const ablock_t *k, int32_t h, int32_t kvalid, int32_t *out) {
  const mx_audio_config_t *a = c->a;
  mx_builder_t *b = &c->b;
  int64_t T = c->T, N = a->num_heads, D = a->hidden_size, Hd = D / N, W = a->chunk_size;
  int64_t L = a->context_left > 0 ? a->context_left - 1 : 0, R = a->context_right;
  int64_t C = W + L + R, Fs = L + R + 1, U = (T + W - 1) / W;
  int64_t hd[3] = {T, N, Hd}, qd[4] = {U, W, N, Hd}, sd[3] = {Fs, N, Hd}, ld[4] = {U, N, W, C};
  int32_t q, kk, v, pds, sp, qs, qb, kc, vc, sig, se, ac, bd, logits;
  MX_TRY(linear(c, h, k->q, &q));
  MX_TRY(linear(c, h, k->k, &kk));
  MX_TRY(linear(c, h, k->v, &v));
  MX_TRY(mx_build_reshape(b, q, hd, 3, &q));
  MX_TRY(mx_build_reshape(b, kk, hd, 3, &kk));
  MX_TRY(mx_build_reshape(b, v, hd, 3, &v));
  // q (Hd^-1/2 / softplus(0)) softplus(per_dim_scale), the scale in f32 as transformers has it.
  float qscale = (float)pow((double)Hd, -0.5) * (1.0f / (float)log(2.0));
  int64_t last = 2;
  MX_TRY(f32_arg(c, k->pds, &pds));
  MX_TRY(softplus(c, pds, &sp));
  MX_TRY(scale(c, q, (double)qscale, &q));
  MX_TRY(mx_build_broadcast_in_dim(b, sp, hd, 3, &last, &qs));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, q, qs, &q));
  MX_TRY(pad_rows(c, q, 0, U * W - T, &qb));
  MX_TRY(mx_build_reshape(b, qb, qd, 4, &qb));  // [U, W, N, Hd]
  MX_TRY(context(c, kk, U, &kc));               // [U, C, N, Hd]
  MX_TRY(context(c, v, U, &vc));
  // Content logits [U, N, W, C].
  int64_t lb[2] = {0, 2}, rb[2] = {0, 2}, lc = 3, rc = 3;
  mx_dot_dims_t dac = {{lb, 2}, {rb, 2}, {&lc, 1}, {&rc, 1}};
  MX_TRY(mx_build_dot_general(b, qb, kc, &dac, MX_ELEM_F32, &ac));
  // Position logits: q . pos_proj(sinusoids) [U, W, N, Hd] x [Fs, N, Hd] -> [N, U, W, Fs], as
  // [U, N, W, Fs], shifted to the key slots: pad to C + 1, flatten W x (C + 1), keep W x C.
  int64_t pl = 2, pr = 1, pc = 3, prc = 2, perm[4] = {1, 0, 2, 3};
  mx_dot_dims_t dbd = {{&pl, 1}, {&pr, 1}, {&pc, 1}, {&prc, 1}};
  MX_TRY(timing(c, Fs, L, &sig));
  MX_TRY(linear(c, sig, k->pos, &se));
  MX_TRY(mx_build_reshape(b, se, sd, 3, &se));
  MX_TRY(mx_build_dot_general(b, qb, se, &dbd, MX_ELEM_F32, &bd));
  MX_TRY(mx_build_transpose(b, bd, perm, 4, &bd));
  int64_t plo[4] = {0, 0, 0, 0}, phi[4] = {0, 0, 0, C + 1 - Fs}, fl[3] = {U, N, W * (C + 1)};
  int64_t s0[3] = {0, 0, 0}, s1[3] = {U, N, W * C};
  int32_t zero;
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, 0.0, &zero));
  MX_TRY(mx_build_pad(b, bd, zero, plo, phi, NULL, 4, &bd));
  MX_TRY(mx_build_reshape(b, bd, fl, 3, &bd));
  MX_TRY(mx_build_slice(b, bd, s0, s1, NULL, 3, &bd));
  MX_TRY(mx_build_reshape(b, bd, ld, 4, &bd));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, ac, bd, &logits));
  // Cap, mask, softmax over the C keys.
  int32_t cap, t, row, col, wide, rel_lo, rel_hi, ok, kv, cond, e, zeros, sum, tiny, sb, p;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, a->logit_cap, logits, &cap));
  MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, logits, cap, &t));
  MX_TRY(mx_build_unary(b, MX_OP_TANH, t, &t));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, t, cap, &logits));
  mx_type_t it = mx_type_tensor(MX_ELEM_I32, 4, ld);
  MX_TRY(mx_build_iota(b, &it, 2, &row));
  MX_TRY(mx_build_iota(b, &it, 3, &col));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, (double)(L + R), row, &wide));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, row, wide, &wide));
  MX_TRY(mx_build_compare(b, MX_CMP_GE, MX_CMP_TYPE_AUTO, col, row, &rel_lo));
  MX_TRY(mx_build_compare(b, MX_CMP_LE, MX_CMP_TYPE_AUTO, col, wide, &rel_hi));
  MX_TRY(mx_build_binary(b, MX_OP_AND, rel_lo, rel_hi, &ok));
  int64_t kvd[2] = {0, 3};
  MX_TRY(mx_build_broadcast_in_dim(b, kvalid, ld, 4, kvd, &kv));
  MX_TRY(mx_build_binary(b, MX_OP_AND, ok, kv, &cond));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, logits, cap, &e));
  MX_TRY(mx_build_unary(b, MX_OP_EXPONENTIAL, e, &e));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.0, e, &zeros));
  MX_TRY(mx_build_select(b, cond, e, zeros, &e));
  MX_TRY(sum_last(c, e, &sum));  // [U, N, W]
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 1e-30, sum, &tiny));
  MX_TRY(mx_build_binary(b, MX_OP_MAXIMUM, sum, tiny, &sum));
  int64_t sbd[3] = {0, 1, 2};
  MX_TRY(mx_build_broadcast_in_dim(b, sum, ld, 4, sbd, &sb));
  MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, e, sb, &p));
  // Context [U, N, W, C] x [U, C, N, Hd] -> [U, N, W, Hd] -> [U W, N Hd], the first T rows.
  int64_t cb[2] = {0, 1}, vb[2] = {0, 2}, cc3 = 3, vc1 = 1, perm2[4] = {0, 2, 1, 3};
  mx_dot_dims_t dcv = {{cb, 2}, {vb, 2}, {&cc3, 1}, {&vc1, 1}};
  int64_t rd[2] = {U * W, D}, z2[2] = {0, 0}, e2[2] = {T, D}, od[3] = {1, T, D};
  int32_t o;
  MX_TRY(mx_build_dot_general(b, p, vc, &dcv, MX_ELEM_F32, &o));
  MX_TRY(mx_build_transpose(b, o, perm2, 4, &o));
  MX_TRY(mx_build_reshape(b, o, rd, 2, &o));
  MX_TRY(mx_build_slice(b, o, z2, e2, NULL, 2, &o));
  return mx_build_reshape(b, o, od, 3, out);
}

// Gemma3nAudioConformerLightConv1d on x [1, T, D]: GLU, a causal depthwise convolution of
// kernel K (taps of the input shifted by K - 1 - j frames, times weight column j), norm, SiLU.
static mx_status_t lconv(ab_t *c, const ablock_t *k, int32_t x, int32_t *out) {
  const mx_audio_config_t *a = c->a;
  mx_builder_t *b = &c->b;
  int64_t T = c->T, D = a->hidden_size, K = a->conv_kernel, xd[3] = {1, T, D};
  int64_t z3[3] = {0, 0, 0}, ah[3] = {1, T, D}, gl[3] = {0, 0, D}, gh[3] = {1, T, 2 * D};
  int64_t wd[2] = {D, K}, lo[3] = {0, K - 1, 0}, hi[3] = {0, 0, 0}, two = 2;
  int32_t h, av, gv, g, wf, w2, zero, hp, acc = -1;
  MX_TRY(norm(c, x, k->lc_pre, a->rms_norm_eps, &h));
  MX_TRY(linear(c, h, k->lc_start, &h));
  MX_TRY(mx_build_slice(b, h, z3, ah, NULL, 3, &av));
  MX_TRY(mx_build_slice(b, h, gl, gh, NULL, 3, &gv));
  MX_TRY(mx_build_unary(b, MX_OP_LOGISTIC, gv, &g));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, av, g, &h));
  MX_TRY(f32_arg(c, k->lc_conv, &wf));
  MX_TRY(mx_build_reshape(b, wf, wd, 2, &w2));
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, 0.0, &zero));
  MX_TRY(mx_build_pad(b, h, zero, lo, hi, NULL, 3, &hp));
  for (int64_t j = 0; j < K; j++) {
    int64_t s0[3] = {0, j, 0}, s1[3] = {1, j + T, D}, c0[2] = {0, j}, c1[2] = {D, j + 1};
    int32_t tap, col, colb, term;
    MX_TRY(mx_build_slice(b, hp, s0, s1, NULL, 3, &tap));
    MX_TRY(mx_build_slice(b, w2, c0, c1, NULL, 2, &col));
    MX_TRY(mx_build_reshape(b, col, &D, 1, &col));
    MX_TRY(mx_build_broadcast_in_dim(b, col, xd, 3, &two, &colb));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, tap, colb, &term));
    if (acc < 0) {
      acc = term;
    } else {
      MX_TRY(mx_build_binary(b, MX_OP_ADD, acc, term, &acc));
    }
  }
  MX_TRY(clip(c, acc, &h));
  MX_TRY(norm(c, h, k->lc_norm, a->rms_norm_eps, &h));
  MX_TRY(silu(c, h, &h));
  MX_TRY(linear(c, h, k->lc_end, &h));
  return mx_build_binary(b, MX_OP_ADD, h, x, out);
}

static mx_status_t conformer(ab_t *c, const ablock_t *k, int32_t x, int32_t valid, int32_t kvalid,
                             int32_t *out) {
  mx_builder_t *b = &c->b;
  int32_t h, a, zeros;
  MX_TRY(ffw(c, k, 0, x, &x));
  MX_TRY(clip(c, x, &h));
  MX_TRY(norm(c, h, k->attn_pre, 1e-6, &h));
  MX_TRY(attention(c, k, h, kvalid, &a));
  MX_TRY(linear(c, a, k->post, &a));
  MX_TRY(clip(c, a, &a));
  MX_TRY(norm(c, a, k->post_norm, 1e-6, &a));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, x, a, &x));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.0, x, &zeros));
  MX_TRY(mx_build_select(b, valid, x, zeros, &x));
  MX_TRY(lconv(c, k, x, &x));
  MX_TRY(ffw(c, k, 1, x, &x));
  MX_TRY(clip(c, x, &x));
  return norm(c, x, k->norm, 1e-6, out);
}

// embed_audio of soft rows x [1, n, D] (soft_embedding_norm) or of the hard embedding row.
static mx_status_t embed(ab_t *c, int32_t x, int32_t norm_w, int32_t *out) {
  mx_builder_t *b = &c->b;
  int64_t H = mx_build_type(b, c->arg[c->w->emb_proj])->dims[0];
  mx_type_t ot = mx_type_tensor(MX_ELEM_F32, 1, &H);
  int32_t h, ones;
  MX_TRY(norm(c, x, norm_w, c->a->rms_norm_eps, &h));
  MX_TRY(linear(c, h, c->w->emb_proj, &h));
  MX_TRY(mx_build_splat(b, &ot, 1.0, &ones));
  return mx_comp_rms_norm(c->cc, b, h, ones, c->a->rms_norm_eps, 0.0, out);
}

static mx_status_t body(ab_t *c, int32_t feats, int32_t mask, int64_t F) {
  const mx_audio_config_t *a = c->a;
  mx_builder_t *b = &c->b;
  int64_t M = a->input_feat_size, D = a->hidden_size,
          S = a->sscp_stride[0][0] * a->sscp_stride[1][0];
  int64_t xd[3] = {F, M, 1};
  int32_t x;
  MX_TRY(mx_build_reshape(b, feats, xd, 3, &x));
  for (int i = 0; i < 2; i++) MX_TRY(conv_block(c, i, x, &x));
  mx_type_t xt = *mx_build_type(b, x);
  int64_t T = xt.dims[0], pd[3] = {1, T, xt.dims[1] * xt.dims[2]};
  c->T = T;
  MX_TRY(mx_build_reshape(b, x, pd, 3, &x));
  MX_TRY(linear(c, x, c->w->proj, &x));  // [1, T, D]
  // The mask of each sub-sampled frame: that of its first input frame (t S <= F - 1 always).
  int64_t m0[2] = {0, 0}, m1[2] = {1, (T - 1) * S + 1}, ms[2] = {1, S}, vd[3] = {1, T, D};
  int64_t b01[2] = {0, 1};
  int32_t m, zero_i, valid1, valid, vf, kvf, kvalid, half;
  MX_TRY(mx_build_slice(b, mask, m0, m1, ms, 2, &m));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 0.0, m, &zero_i));
  MX_TRY(mx_build_compare(b, MX_CMP_NE, MX_CMP_TYPE_AUTO, m, zero_i, &valid1));  // [1, T]
  MX_TRY(mx_build_broadcast_in_dim(b, valid1, vd, 3, b01, &valid));
  // Key validity per chunk [U, C]: the frames' validity as f32 through the same context view.
  MX_TRY(mx_build_convert(b, m, MX_ELEM_F32, &vf));
  MX_TRY(mx_build_reshape(b, vf, &T, 1, &vf));
  int64_t U = (T + a->chunk_size - 1) / a->chunk_size;
  MX_TRY(context(c, vf, U, &kvf));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.5, kvf, &half));
  MX_TRY(mx_build_compare(b, MX_CMP_GT, MX_CMP_TYPE_AUTO, kvf, half, &kvalid));
  for (int32_t l = 0; l < a->num_layers; l++) {
    mx_status_t st = conformer(c, &c->w->blocks[l], x, valid, kvalid, &x);
    if (st != MX_OK) return mx_error_prefix(st, "audio block %d", l);
  }
  // Every reduction-th frame, embedded; padding frames and the rows past them the padding row.
  int64_t n = (T + a->reduction - 1) / a->reduction, r0[3] = {0, 0, 0}, r1[3] = {1, T, D};
  int64_t rs[3] = {1, a->reduction, 1}, H = mx_build_type(b, c->arg[c->w->emb_proj])->dims[0];
  int64_t od[3] = {1, n, H}, e0[2] = {0, 0}, e1[2] = {0, D}, ed[3] = {1, 1, D};
  int32_t rows, vr, vrb, pad_row, padb, y;
  MX_TRY(mx_build_slice(b, x, r0, r1, rs, 3, &rows));
  MX_TRY(embed(c, rows, c->w->soft_norm, &rows));
  int64_t v0[2] = {0, 0}, v1[2] = {1, T}, vs[2] = {1, a->reduction};
  MX_TRY(mx_build_slice(b, valid1, v0, v1, vs, 2, &vr));
  MX_TRY(mx_build_broadcast_in_dim(b, vr, od, 3, b01, &vrb));
  e0[0] = c->pad_id, e1[0] = c->pad_id + 1;
  int32_t ef;
  MX_TRY(f32_arg(c, c->w->emb, &ef));
  MX_TRY(mx_build_slice(b, ef, e0, e1, NULL, 2, &pad_row));
  MX_TRY(mx_build_reshape(b, pad_row, ed, 3, &pad_row));
  MX_TRY(embed(c, pad_row, c->w->hard_norm, &pad_row));  // [1, 1, H]
  int64_t pb[3] = {0, 1, 2};
  MX_TRY(mx_build_broadcast_in_dim(b, pad_row, od, 3, pb, &padb));
  MX_TRY(mx_build_select(b, vrb, rows, padb, &y));
  if (n < a->soft_tokens) {
    int64_t fd[3] = {1, a->soft_tokens - n, H};
    int32_t fill, parts[2];
    MX_TRY(mx_build_broadcast_in_dim(b, pad_row, fd, 3, pb, &fill));
    parts[0] = y, parts[1] = fill;
    MX_TRY(mx_build_concatenate(b, parts, 2, 1, &y));
  }
  return mx_build_return(b, &y, 1);
}

mx_status_t mx_audio_build(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                           const mx_graph_opts_t *o, mx_comp_ctx_t *cc) {
  const mx_audio_config_t *a = &cfg->audio;
  int64_t F = o->audio_frames;
  if (!a->present) {
    return mx_error_set(MX_ERR_INVALID_ARG, "graph: model_type '%s' has no audio tower (no @audio)",
                        cfg->model_type);
  }
  int64_t n = mx_audio_tokens(a, F);
  if (F < 1 || n > a->soft_tokens) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "graph @audio: %lld log-mel frames give %lld audio tokens (1 .. %d, "
                        "audio_soft_tokens_per_image, allowed)",
                        (long long)F, (long long)n, a->soft_tokens);
  }
  aweights_t w;
  ab_t c = {.a = a, .w = &w, .cc = cc, .pad_id = (int64_t)cfg->vocab_size - 1 - a->vocab_offset};
  mx_status_t st = list_weights(cfg, &w);
  if (st == MX_OK) st = mx_vlist_check(&w.l, ck);
  int32_t nw = w.l.n;
  mx_type_t *types = st == MX_OK ? calloc((size_t)nw + 2, sizeof *types) : NULL;
  c.arg = st == MX_OK ? malloc(sizeof *c.arg * ((size_t)nw + 2)) : NULL;
  if (st == MX_OK && (types == NULL || c.arg == NULL))
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  if (st == MX_OK) {
    for (int32_t i = 0; i < nw; i++) {
      const mx_vspec_t *s = &w.l.w[i];
      types[i] = mx_type_tensor(mx_checkpoint_find(ck, s->name)->dtype, s->rank, s->dims);
    }
    int64_t fd[3] = {1, F, a->input_feat_size}, md[2] = {1, F};
    types[nw] = mx_type_tensor(MX_ELEM_F32, 3, fd);
    types[nw + 1] = mx_type_tensor(MX_ELEM_I32, 2, md);
    mx_func_t *f;
    st = mx_build_func(cc->m, "audio", false, types, nw + 2, &f, &c.b, c.arg);
    for (int32_t i = 0; st == MX_OK && i < nw; i++)
      st = mx_graph_set_arg_attrs(f, i, "weight", w.l.w[i].name);
    if (st == MX_OK) st = mx_graph_set_arg_attrs(f, nw, "audio", "audio");
    if (st == MX_OK) st = mx_graph_set_arg_attrs(f, nw + 1, "audio_mask", "audio_mask");
    if (st == MX_OK) st = body(&c, c.arg[nw], c.arg[nw + 1], F);
  }
  free(types);
  free(c.arg);
  aweights_free(&w);
  return st != MX_OK ? mx_error_prefix(st, "graph @audio") : MX_OK;
}
