// The Qwen2-VL, Qwen2.5-VL and Qwen3-VL vision towers, and Youtu-VL's, as the @vision entry
// (ADR 0010, ADR 0013, ADR 0021, ADR 0027), built for one patch grid (gh x gw patches;
// mx_graph_opts_t.vision_grid_h / _w):
//
//   pixels   = the processor's rows [N = gh*gw, C*Tp*P*P], block-major: each m x m block of
//              patches (m = spatial_merge_size) is m*m consecutive rows
//   x        = pixels . patch_embed^T                     (Conv3d with stride = kernel: a GEMM)
//   Youtu-VL:  pixels are [N, P*P*C] (SigLIP-2's patch rows) and patch_embed a linear with a bias
//   Qwen3-VL: x += the conv's bias + the learned position table resampled to the grid
//              (vision_pos_embed.c)
//   Qwen2.5-VL, Youtu-VL: the m*m-row units reordered into window order (window_index)
//   for each block:
//     x += proj(attention(2-D RoPE(q, k), v of norm1(x)))  qkv one linear; attention full within
//                                                          the image, or within each window
//                                                          (Qwen2.5-VL blocks not in
//                                                          fullatt_block_indexes)
//     x += mlp(norm2(x))                                   Qwen2-VL: fc2(quick_gelu(fc1 x));
//                                                          Qwen2.5-VL: down(silu(gate x) * up x)
//                                                          Qwen3-VL, Youtu-VL:
//                                                          fc2(gelu_tanh(fc1 x))
//     Qwen3-VL, after each block of deepstack_visual_indexes: a DeepStack merger of x
//   features = mlp.2(gelu(mlp.0(ln_q(x) viewed [N/m^2, m^2 D])))  (the PatchMerger; Qwen3-VL's
//              names are norm / linear_fc1 / linear_fc2, its DeepStack mergers normalize the
//              viewed [N/m^2, m^2 D] rows instead, and @vision returns the main features
//              followed by every DeepStack merger's along the last axis: [1, N/m^2, (1+L) H])
//   Youtu-VL: x = post_layernorm(x) before the merger, whose norm is an RMSNorm and whose GELU
//             is the tanh form (llama.cpp's)
//   Qwen2.5-VL, Youtu-VL: the merged rows put back in image order (the inverse of window_index)
//
// Norms: Qwen2-VL, Qwen3-VL and Youtu-VL LayerNorm (eps 1e-6; Youtu-VL's layer_norm_eps),
// Qwen2.5-VL RMSNorm (eps 1e-6). The 2-D RoPE
// rotates the pairs (i, i + Dh/2) of each head by h * inv[i] for i < Dh/4 and w * inv[i - Dh/4]
// above, inv of Dh/2 with the tower's theta: two mx.rope over the whole head, one with the
// positions h and the frequencies [inv, 0], one with w and [0, inv]; a zero frequency's rotation
// (cos 1, sin 0) is exact, so each pair is rotated once, as transformers does. The positions, the
// window order and its segments are constants of the grid. A segment's attention is mx.attention
// over its own rows (mx_vision_attention); the reorderings are concatenations of contiguous slices.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/vision_internal.h"

static const char *const kPrefixes[] = {"visual.", "model.visual."};

typedef struct qlayer {
  int32_t n1_w, n1_b, qkv_w, qkv_b, o_w, o_b, n2_w, n2_b;
  int32_t q_w, q_b, k_w, k_b, v_w, v_b;  // Youtu-VL: separate projections (qkv_w -1)
  int32_t fc1_w, fc1_b, fc2_w, fc2_b;    // Qwen2-VL
  int32_t g_w, g_b, u_w, u_b, d_w, d_b;  // Qwen2.5-VL
} qlayer_t;

// A patch merger: norm, then two linears around a GELU.
typedef struct qmerger {
  int32_t n_w, n_b, f1_w, f1_b, f2_w, f2_b;
} qmerger_t;

typedef struct qweights {
  mx_vlist_t l;
  int32_t patch, patch_b, pos;  // patch_b: Qwen3-VL, Youtu-VL; pos: Qwen3-VL (-1 otherwise)
  int32_t post_w, post_b;       // Youtu-VL: SigLIP-2's post_layernorm (-1 otherwise)
  qmerger_t merger;
  qmerger_t *deep;   // [n_deepstack], heap (Qwen3-VL)
  qlayer_t *layers;  // [num_layers], heap
} qweights_t;

static void qweights_free(qweights_t *w) {
  mx_vlist_free(&w->l);
  free(w->layers);
  free(w->deep);
  memset(w, 0, sizeof *w);
}

#define ADD(field, prefix, name, rank, ...)                           \
  do {                                                                \
    const int64_t dims_[5] = {__VA_ARGS__};                           \
    MX_TRY(mx_vlist_add(&w->l, &(field), prefix, name, rank, dims_)); \
  } while (0)

// Qwen3-VL's mergers: `name`norm, linear_fc1 and linear_fc2 (the norm over m^2 D when post).
static mx_status_t list_merger3(qweights_t *w, const char *p, bool post, int64_t D, int64_t M,
                                int64_t H, qmerger_t *mg) {
  int64_t nd = post ? M * D : D;
  ADD(mg->n_w, p, "norm.weight", 1, nd);
  ADD(mg->n_b, p, "norm.bias", 1, nd);
  ADD(mg->f1_w, p, "linear_fc1.weight", 2, M * D, M * D);
  ADD(mg->f1_b, p, "linear_fc1.bias", 1, M * D);
  ADD(mg->f2_w, p, "linear_fc2.weight", 2, H, M * D);
  ADD(mg->f2_b, p, "linear_fc2.bias", 1, H);
  return MX_OK;
}

// Youtu-VL: SigLIP-2's names (the patch embedding a linear over P*P*C inputs) under
// siglip2.vision_model., and a merger with an RMSNorm ln_q, as llama.cpp's converter reads them.
static mx_status_t list_youtu(const mx_model_config_t *cfg, qweights_t *w) {
  const mx_vision_config_t *v = &cfg->vision;
  const char *vp = "siglip2.vision_model.";
  int64_t D = v->hidden_size, F = v->intermediate_size, H = cfg->hidden_size;
  int64_t K = (int64_t)v->num_channels * v->patch_size * v->patch_size, M = 4;
  ADD(w->patch, vp, "embeddings.patch_embedding.weight", 2, D, K);
  ADD(w->patch_b, vp, "embeddings.patch_embedding.bias", 1, D);
  for (int32_t i = 0; i < v->num_layers; i++) {
    qlayer_t *ly = &w->layers[i];
    char p[MX_VISION_MAX_NAME / 2];
    snprintf(p, sizeof p, "%sencoder.layers.%d.", vp, i);
    ly->qkv_w = ly->qkv_b = -1;
    ADD(ly->n1_w, p, "layer_norm1.weight", 1, D);
    ADD(ly->n1_b, p, "layer_norm1.bias", 1, D);
    ADD(ly->q_w, p, "self_attn.q_proj.weight", 2, D, D);
    ADD(ly->q_b, p, "self_attn.q_proj.bias", 1, D);
    ADD(ly->k_w, p, "self_attn.k_proj.weight", 2, D, D);
    ADD(ly->k_b, p, "self_attn.k_proj.bias", 1, D);
    ADD(ly->v_w, p, "self_attn.v_proj.weight", 2, D, D);
    ADD(ly->v_b, p, "self_attn.v_proj.bias", 1, D);
    ADD(ly->o_w, p, "self_attn.out_proj.weight", 2, D, D);
    ADD(ly->o_b, p, "self_attn.out_proj.bias", 1, D);
    ADD(ly->n2_w, p, "layer_norm2.weight", 1, D);
    ADD(ly->n2_b, p, "layer_norm2.bias", 1, D);
    ADD(ly->fc1_w, p, "mlp.fc1.weight", 2, F, D);
    ADD(ly->fc1_b, p, "mlp.fc1.bias", 1, F);
    ADD(ly->fc2_w, p, "mlp.fc2.weight", 2, D, F);
    ADD(ly->fc2_b, p, "mlp.fc2.bias", 1, D);
  }
  ADD(w->post_w, vp, "post_layernorm.weight", 1, D);
  ADD(w->post_b, vp, "post_layernorm.bias", 1, D);
  qmerger_t *mg = &w->merger;
  mg->n_b = -1;
  ADD(mg->n_w, "", "merger.ln_q.weight", 1, D);
  ADD(mg->f1_w, "", "merger.mlp.0.weight", 2, M * D, M * D);
  ADD(mg->f1_b, "", "merger.mlp.0.bias", 1, M * D);
  ADD(mg->f2_w, "", "merger.mlp.2.weight", 2, H, M * D);
  ADD(mg->f2_b, "", "merger.mlp.2.bias", 1, H);
  return MX_OK;
}

static mx_status_t list_weights(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                qweights_t *w) {
  const mx_vision_config_t *v = &cfg->vision;
  if (v->kind == MX_VISION_YOUTU_VL) {
    memset(w, 0, sizeof *w);
    w->pos = -1;
    w->layers = calloc((size_t)v->num_layers, sizeof *w->layers);
    if (w->layers == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    return list_youtu(cfg, w);
  }
  bool v25 = v->kind == MX_VISION_QWEN2_5_VL, v3 = v->kind == MX_VISION_QWEN3_VL;
  const char *vp = mx_vision_pick_prefix(ck, kPrefixes, 2, "patch_embed.proj.weight");
  int64_t D = v->hidden_size, F = v->intermediate_size, C = v->num_channels, P = v->patch_size;
  int64_t Tp = v->temporal_patch_size, M = (int64_t)v->spatial_merge_size * v->spatial_merge_size;
  int64_t H = cfg->hidden_size;
  memset(w, 0, sizeof *w);
  w->patch_b = w->pos = w->post_w = w->post_b = -1;
  w->layers = calloc((size_t)v->num_layers, sizeof *w->layers);
  if (w->layers == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  ADD(w->patch, vp, "patch_embed.proj.weight", 5, D, C, Tp, P, P);
  if (v3) {
    ADD(w->patch_b, vp, "patch_embed.proj.bias", 1, D);
    ADD(w->pos, vp, "pos_embed.weight", 2, v->num_position_embeddings, D);
  }
  for (int32_t i = 0; i < v->num_layers; i++) {
    qlayer_t *ly = &w->layers[i];
    char p[MX_VISION_MAX_NAME / 2];
    if ((size_t)snprintf(p, sizeof p, "%sblocks.%d.", vp, i) >= sizeof p)
      return mx_error_set(MX_ERR_INVALID_ARG, "vision block %d: name too long", i);
    ly->n1_b = ly->n2_b = -1;
    ADD(ly->n1_w, p, "norm1.weight", 1, D);
    if (!v25) ADD(ly->n1_b, p, "norm1.bias", 1, D);
    ADD(ly->qkv_w, p, "attn.qkv.weight", 2, 3 * D, D);
    ADD(ly->qkv_b, p, "attn.qkv.bias", 1, 3 * D);
    ADD(ly->o_w, p, "attn.proj.weight", 2, D, D);
    ADD(ly->o_b, p, "attn.proj.bias", 1, D);
    ADD(ly->n2_w, p, "norm2.weight", 1, D);
    if (!v25) ADD(ly->n2_b, p, "norm2.bias", 1, D);
    if (v25) {
      ADD(ly->g_w, p, "mlp.gate_proj.weight", 2, F, D);
      ADD(ly->g_b, p, "mlp.gate_proj.bias", 1, F);
      ADD(ly->u_w, p, "mlp.up_proj.weight", 2, F, D);
      ADD(ly->u_b, p, "mlp.up_proj.bias", 1, F);
      ADD(ly->d_w, p, "mlp.down_proj.weight", 2, D, F);
      ADD(ly->d_b, p, "mlp.down_proj.bias", 1, D);
    } else {
      const char *fc = v3 ? "mlp.linear_fc" : "mlp.fc";
      char n1[40], n2[40], b1[40], b2[40];
      snprintf(n1, sizeof n1, "%s1.weight", fc);
      snprintf(b1, sizeof b1, "%s1.bias", fc);
      snprintf(n2, sizeof n2, "%s2.weight", fc);
      snprintf(b2, sizeof b2, "%s2.bias", fc);
      ADD(ly->fc1_w, p, n1, 2, F, D);
      ADD(ly->fc1_b, p, b1, 1, F);
      ADD(ly->fc2_w, p, n2, 2, D, F);
      ADD(ly->fc2_b, p, b2, 1, D);
    }
  }
  qmerger_t *mg = &w->merger;
  if (v3) {
    char p[MX_VISION_MAX_NAME / 2];
    snprintf(p, sizeof p, "%smerger.", vp);
    MX_TRY(list_merger3(w, p, false, D, M, H, mg));
    w->deep = calloc((size_t)(v->n_deepstack > 0 ? v->n_deepstack : 1), sizeof *w->deep);
    if (w->deep == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < v->n_deepstack; i++) {
      snprintf(p, sizeof p, "%sdeepstack_merger_list.%d.", vp, i);
      MX_TRY(list_merger3(w, p, true, D, M, H, &w->deep[i]));
    }
    return MX_OK;
  }
  mg->n_b = -1;
  ADD(mg->n_w, vp, "merger.ln_q.weight", 1, D);
  if (!v25) ADD(mg->n_b, vp, "merger.ln_q.bias", 1, D);
  ADD(mg->f1_w, vp, "merger.mlp.0.weight", 2, M * D, M * D);
  ADD(mg->f1_b, vp, "merger.mlp.0.bias", 1, M * D);
  ADD(mg->f2_w, vp, "merger.mlp.2.weight", 2, H, M * D);
  ADD(mg->f2_b, vp, "merger.mlp.2.bias", 1, H);
  return MX_OK;
}
#undef ADD

mx_status_t mx_vision_qwen_list(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                mx_vlist_t *out) {
  qweights_t w;
  mx_status_t st = list_weights(cfg, ck, &w);
  if (st == MX_OK) {
    *out = w.l;
    memset(&w.l, 0, sizeof w.l);
  }
  qweights_free(&w);
  return st;
}

// ---- the grid's constants: window order, segments, positions ----

typedef struct qgrid {
  int32_t gh, gw, m, n;  // patches a side, merge size, patches
  int32_t *unit_order;   // [n / m^2]: merged unit at each position of the window order
  int32_t *seg;          // [n_seg + 1]: segment bounds in patches (window order)
  int32_t n_seg;
  int32_t *pos_h, *pos_w;  // [n]: each patch's row and column, in the tower's order
} qgrid_t;

static void qgrid_free(qgrid_t *g) {
  free(g->unit_order);
  free(g->seg);
  free(g->pos_h);
  free(g->pos_w);
  memset(g, 0, sizeof *g);
}

// Qwen2.5-VL's get_vision_window_index for one image: windows of ws x ws merged units, row-major
// over a grid padded to whole windows, units row-major inside each; empty windows dropped.
// Qwen2-VL (ws 0): the identity and one segment.
static mx_status_t qgrid_make(int32_t gh, int32_t gw, int32_t m, int32_t ws, qgrid_t *g) {
  memset(g, 0, sizeof *g);
  int32_t lh = gh / m, lw = gw / m, units = lh * lw, mm = m * m;
  g->gh = gh;
  g->gw = gw;
  g->m = m;
  g->n = gh * gw;
  int32_t nwh = ws > 0 ? lh / ws + 1 : 1, nww = ws > 0 ? lw / ws + 1 : 1;
  g->unit_order = malloc(sizeof(int32_t) * (size_t)units);
  g->seg = malloc(sizeof(int32_t) * (size_t)(nwh * nww + 1));
  g->pos_h = malloc(sizeof(int32_t) * (size_t)g->n);
  g->pos_w = malloc(sizeof(int32_t) * (size_t)g->n);
  if (!g->unit_order || !g->seg || !g->pos_h || !g->pos_w) {
    qgrid_free(g);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  int32_t k = 0;
  g->seg[0] = 0;
  if (ws <= 0) {
    for (int32_t u = 0; u < units; u++) g->unit_order[u] = u;
    k = units;
    g->seg[++g->n_seg] = units * mm;
  } else {
    for (int32_t wy = 0; wy < nwh; wy++)
      for (int32_t wx = 0; wx < nww; wx++) {
        int32_t k0 = k;
        for (int32_t y = wy * ws; y < (wy + 1) * ws && y < lh; y++)
          for (int32_t x = wx * ws; x < (wx + 1) * ws && x < lw; x++)
            g->unit_order[k++] = y * lw + x;
        if (k > k0) g->seg[++g->n_seg] = k * mm;
      }
  }
  // Patch j of unit u (block-major order): row (u / lw) * m + (j / m), column (u % lw) * m + j % m.
  for (int32_t i = 0; i < units; i++)
    for (int32_t j = 0; j < mm; j++) {
      int32_t u = g->unit_order[i];
      g->pos_h[i * mm + j] = (u / lw) * m + j / m;
      g->pos_w[i * mm + j] = (u % lw) * m + j % m;
    }
  return MX_OK;
}

// ---- building ----

typedef struct qb {
  const mx_model_config_t *cfg;
  const qweights_t *w;
  const qgrid_t *g;
  mx_comp_ctx_t *cc;
  mx_builder_t b;
  int32_t *arg;  // value id of each argument
  int32_t pos_h, pos_w, inv_h, inv_w;
} qb_t;

static mx_status_t i32_const(mx_builder_t *b, const int32_t *v, int64_t n, int32_t *out) {
  int64_t d[2] = {1, n};
  mx_tensor_t t = {.type = mx_type_tensor(MX_ELEM_I32, 2, d),
                   .data = (uint8_t *)v,
                   .nbytes = sizeof(int32_t) * (size_t)n};
  return mx_build_constant(b, &t, out);
}

// The frequency tables of the two rotations: [inv, 0] (height) and [0, inv] (width), Dh/2 each;
// inv[i] = 1 / theta^(2i / (Dh/2)) as transformers computes it in f32.
static mx_status_t rope_consts(qb_t *c) {
  const mx_vision_config_t *v = &c->cfg->vision;
  int32_t Dh = v->hidden_size / v->num_heads, half = Dh / 2, q = Dh / 4;
  float *f = calloc((size_t)(2 * half), sizeof *f);
  if (f == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < q; i++) {
    float e = (float)(2 * i) / (float)half;
    float inv = 1.0f / powf((float)v->rope_theta, e);
    f[i] = inv;             // height table, first quarter
    f[half + q + i] = inv;  // width table, second quarter
  }
  int64_t hd = half;
  mx_tensor_t t = {.type = mx_type_tensor(MX_ELEM_F32, 1, &hd),
                   .data = (uint8_t *)f,
                   .nbytes = sizeof(float) * (size_t)half};
  mx_status_t st = mx_build_constant(&c->b, &t, &c->inv_h);
  t.data = (uint8_t *)(f + half);
  if (st == MX_OK) st = mx_build_constant(&c->b, &t, &c->inv_w);
  if (st == MX_OK) st = i32_const(&c->b, c->g->pos_h, c->g->n, &c->pos_h);
  if (st == MX_OK) st = i32_const(&c->b, c->g->pos_w, c->g->n, &c->pos_w);
  free(f);
  return st;
}

// Rows of x [1, R, C] reordered: row i of the result is row order[i] of x, in units of `unit`
// rows (order indexes units); runs of consecutive units become one slice.
static mx_status_t reorder(mx_builder_t *b, int32_t x, const int32_t *order, int32_t n_units,
                           int64_t unit, int32_t *out) {
  mx_type_t t = *mx_build_type(b, x);
  int32_t *parts = malloc(sizeof *parts * (size_t)n_units);
  if (parts == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  int32_t n = 0;
  mx_status_t st = MX_OK;
  for (int32_t i = 0; i < n_units && st == MX_OK;) {
    int32_t j = i + 1;
    while (j < n_units && order[j] == order[j - 1] + 1) j++;
    int64_t lo[3] = {0, order[i] * unit, 0}, hi[3] = {1, (order[j - 1] + 1) * unit, t.dims[2]};
    st = mx_build_slice(b, x, lo, hi, NULL, 3, &parts[n++]);
    i = j;
  }
  if (st == MX_OK) st = mx_g_concat(b, parts, n, 1, out);
  free(parts);
  return st;
}

static mx_status_t slice_t(mx_builder_t *b, int32_t x, int64_t lo, int64_t hi, int32_t *out) {
  mx_type_t t = *mx_build_type(b, x);
  int64_t s[4] = {0, lo, 0, 0}, l[4] = {1, hi, t.dims[2], t.dims[3]};
  return mx_build_slice(b, x, s, l, NULL, 4, out);
}

// Attention within each segment of [0, N) (one segment: the whole image).
static mx_status_t attention(qb_t *c, int32_t q, int32_t k, int32_t v, bool windows, int32_t *out) {
  mx_builder_t *b = &c->b;
  const qgrid_t *g = c->g;
  int32_t n_seg = windows ? g->n_seg : 1;
  if (n_seg == 1) return mx_vision_attention(c->cc, b, q, k, v, out);
  int32_t *parts = malloc(sizeof *parts * (size_t)n_seg);
  if (parts == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_status_t st = MX_OK;
  for (int32_t s = 0; s < n_seg && st == MX_OK; s++) {
    int32_t qs, ks, vs;
    st = slice_t(b, q, g->seg[s], g->seg[s + 1], &qs);
    if (st == MX_OK) st = slice_t(b, k, g->seg[s], g->seg[s + 1], &ks);
    if (st == MX_OK) st = slice_t(b, v, g->seg[s], g->seg[s + 1], &vs);
    if (st == MX_OK) st = mx_vision_attention(c->cc, b, qs, ks, vs, &parts[s]);
  }
  if (st == MX_OK) st = mx_g_concat(b, parts, n_seg, 1, out);
  free(parts);
  return st;
}

// Rows [row0, row0 + n) of weight / bias argument a.
static mx_status_t rows_of(qb_t *c, int32_t a, int64_t row0, int64_t n, int32_t *out) {
  mx_type_t t = *mx_build_type(&c->b, c->arg[a]);
  int64_t lo[2] = {row0, 0}, hi[2] = {row0 + n, t.rank > 1 ? t.dims[1] : 0};
  return mx_build_slice(&c->b, c->arg[a], lo, hi, NULL, t.rank, out);
}

static mx_status_t rope2d(qb_t *c, int32_t x, int32_t *out) {
  int32_t Dh = c->cfg->vision.hidden_size / c->cfg->vision.num_heads;
  MX_TRY(mx_comp_rope(c->cc, &c->b, x, c->pos_h, c->inv_h, "half", Dh, 1.0, &x));
  return mx_comp_rope(c->cc, &c->b, x, c->pos_w, c->inv_w, "half", Dh, 1.0, out);
}

static mx_status_t block(qb_t *c, int32_t l, int32_t x, int32_t *out) {
  const mx_vision_config_t *v = &c->cfg->vision;
  const qlayer_t *ly = &c->w->layers[l];
  mx_builder_t *b = &c->b;
  bool v25 = v->kind == MX_VISION_QWEN2_5_VL, center = !v25;
  bool windows = v25 || v->kind == MX_VISION_YOUTU_VL;
  int64_t N = c->g->n, D = v->hidden_size, Hh = v->num_heads, hd[4] = {1, N, Hh, D / Hh};
  double eps = v->layer_norm_eps;
  int32_t h, qkv[3], att, o, x1, h2, m;
  MX_TRY(mx_vision_norm(c->cc, b, x, c->arg[ly->n1_w], ly->n1_b >= 0 ? c->arg[ly->n1_b] : -1,
                        center, eps, &h));
  const int32_t sep_w[3] = {ly->q_w, ly->k_w, ly->v_w}, sep_b[3] = {ly->q_b, ly->k_b, ly->v_b};
  for (int32_t i = 0; i < 3; i++) {  // q, k, v: row blocks of the fused qkv weight (views)
    int32_t wv, bv;
    if (ly->qkv_w >= 0) {
      MX_TRY(rows_of(c, ly->qkv_w, i * D, D, &wv));
      MX_TRY(rows_of(c, ly->qkv_b, i * D, D, &bv));
    } else {
      wv = c->arg[sep_w[i]], bv = c->arg[sep_b[i]];
    }
    MX_TRY(mx_vision_linear(b, h, wv, bv, &qkv[i]));
    MX_TRY(mx_build_reshape(b, qkv[i], hd, 4, &qkv[i]));
  }
  MX_TRY(rope2d(c, qkv[0], &qkv[0]));
  MX_TRY(rope2d(c, qkv[1], &qkv[1]));
  MX_TRY(attention(c, qkv[0], qkv[1], qkv[2], windows && !v->layer_full[l], &att));
  MX_TRY(mx_vision_linear(b, att, c->arg[ly->o_w], c->arg[ly->o_b], &o));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, x, o, &x1));
  MX_TRY(mx_vision_norm(c->cc, b, x1, c->arg[ly->n2_w], ly->n2_b >= 0 ? c->arg[ly->n2_b] : -1,
                        center, eps, &h2));
  if (v25) {
    int32_t g, u, a, gu;
    MX_TRY(mx_vision_linear(b, h2, c->arg[ly->g_w], c->arg[ly->g_b], &g));
    MX_TRY(mx_vision_linear(b, h2, c->arg[ly->u_w], c->arg[ly->u_b], &u));
    MX_TRY(mx_vision_act(b, "silu", g, &a));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, a, u, &gu));
    MX_TRY(mx_vision_linear(b, gu, c->arg[ly->d_w], c->arg[ly->d_b], &m));
  } else {
    int32_t f, a;
    MX_TRY(mx_vision_linear(b, h2, c->arg[ly->fc1_w], c->arg[ly->fc1_b], &f));
    MX_TRY(mx_vision_act(b, v->hidden_act, f, &a));
    MX_TRY(mx_vision_linear(b, a, c->arg[ly->fc2_w], c->arg[ly->fc2_b], &m));
  }
  return mx_build_binary(b, MX_OP_ADD, x1, m, out);
}

// A patch merger of x [1, N, D]: its norm over each patch (post: over each viewed merged row),
// the rows viewed [1, N/m^2, m^2 D], fc2(gelu(fc1)).
static mx_status_t merger(qb_t *c, int32_t x, const qmerger_t *mg, bool post, int32_t *out) {
  const mx_vision_config_t *v = &c->cfg->vision;
  mx_builder_t *b = &c->b;
  bool center = v->kind != MX_VISION_QWEN2_5_VL && v->kind != MX_VISION_YOUTU_VL;
  int64_t mm = (int64_t)c->g->m * c->g->m, md[3] = {1, c->g->n / mm, mm * v->hidden_size};
  int32_t h, a, nb = mg->n_b >= 0 ? c->arg[mg->n_b] : -1;
  // Youtu-VL's ln_q: llama.cpp fixes its eps at 1e-6, whatever layer_norm_eps says.
  double eps = v->kind == MX_VISION_YOUTU_VL ? 1e-6 : v->layer_norm_eps;
  if (post) {
    MX_TRY(mx_build_reshape(b, x, md, 3, &h));
    MX_TRY(mx_vision_norm(c->cc, b, h, c->arg[mg->n_w], nb, center, eps, &h));
  } else {
    MX_TRY(mx_vision_norm(c->cc, b, x, c->arg[mg->n_w], nb, center, eps, &h));
    MX_TRY(mx_build_reshape(b, h, md, 3, &h));
  }
  MX_TRY(mx_vision_linear(b, h, c->arg[mg->f1_w], c->arg[mg->f1_b], &a));
  MX_TRY(mx_vision_act(b, v->projector_act, a, &a));
  return mx_vision_linear(b, a, c->arg[mg->f2_w], c->arg[mg->f2_b], out);
}

static mx_status_t body(qb_t *c, int32_t pixels) {
  const mx_vision_config_t *v = &c->cfg->vision;
  const qweights_t *w = c->w;
  const qgrid_t *g = c->g;
  mx_builder_t *b = &c->b;
  bool v3 = v->kind == MX_VISION_QWEN3_VL, youtu = v->kind == MX_VISION_YOUTU_VL;
  bool v25 = v->kind == MX_VISION_QWEN2_5_VL || youtu;  // window order
  int64_t N = g->n, D = v->hidden_size, mm = (int64_t)g->m * g->m, U = N / mm;
  int64_t K = (int64_t)v->num_channels * v->temporal_patch_size * v->patch_size * v->patch_size;
  int64_t rd[3] = {1, N, K}, wd[2] = {D, K};
  int32_t rows, wp, x, outs[1 + MX_VISION_MAX_LAYERS], n_out = 1;
  MX_TRY(rope_consts(c));
  MX_TRY(mx_build_reshape(b, pixels, rd, 3, &rows));
  MX_TRY(mx_build_reshape(b, c->arg[w->patch], wd, 2, &wp));
  MX_TRY(mx_g_linear(b, rows, wp, &x));
  if (w->patch_b >= 0) MX_TRY(mx_g_add_bias(b, x, c->arg[w->patch_b], &x));
  if (v3) {
    int32_t pe;
    MX_TRY(mx_vision_pos_embed(b, c->arg[w->pos], v->num_position_embeddings, g->gh, g->gw,
                               g->pos_h, g->pos_w, &pe));
    MX_TRY(mx_build_binary(b, MX_OP_ADD, x, pe, &x));
  }
  if (v25) MX_TRY(reorder(b, x, g->unit_order, (int32_t)U, mm, &x));
  for (int32_t l = 0; l < v->num_layers; l++) {
    mx_status_t st = block(c, l, x, &x);
    if (st != MX_OK) return mx_error_prefix(st, "vision block %d", l);
    for (int32_t k = 0; v3 && k < v->n_deepstack; k++) {
      if (v->deepstack_layers[k] != l) continue;
      st = merger(c, x, &w->deep[k], true, &outs[1 + k]);
      if (st != MX_OK) return mx_error_prefix(st, "DeepStack merger %d", k);
      n_out++;
    }
  }
  int32_t y;
  // Youtu-VL: SigLIP-2's post_layernorm. llama.cpp applies it after the units are back in
  // image order; it is per patch, so the rows are the same either way.
  if (youtu)
    MX_TRY(mx_vision_norm(c->cc, b, x, c->arg[w->post_w], c->arg[w->post_b], true,
                          v->layer_norm_eps, &x));
  MX_TRY(merger(c, x, &w->merger, false, &y));
  if (n_out > 1) {  // Qwen3-VL: [main | DeepStack 0 | ...] per merged row
    outs[0] = y;
    MX_TRY(mx_build_concatenate(b, outs, n_out, 2, &y));
  }
  if (v25) {  // back to image order: unit unit_order[i] is at row i
    int32_t *inv = malloc(sizeof *inv * (size_t)U);
    if (inv == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < (int32_t)U; i++) inv[g->unit_order[i]] = i;
    mx_status_t st = reorder(b, y, inv, (int32_t)U, 1, &y);
    free(inv);
    MX_TRY(st);
  }
  return mx_build_return(b, &y, 1);
}

mx_status_t mx_vision_qwen_build(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                 const mx_graph_opts_t *o, mx_comp_ctx_t *cc) {
  const mx_vision_config_t *v = &cfg->vision;
  int32_t gh = o->vision_grid_h, gw = o->vision_grid_w, m = v->spatial_merge_size;
  if (gh == 0 && gw == 0) return MX_OK;  // the text and media entries only
  if (gh <= 0 || gw <= 0 || gh % m || gw % m || (int64_t)gh * gw > (1 << 20)) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "graph @vision: a %d x %d patch grid (positive multiples of the merge size "
                        "%d, at most 2^20 patches needed)",
                        gh, gw, m);
  }
  bool windows = v->kind == MX_VISION_QWEN2_5_VL || v->kind == MX_VISION_YOUTU_VL;
  int32_t ws = windows ? v->window_size / (m * v->patch_size) : 0;
  qweights_t w;
  qgrid_t g;
  qb_t c = {.cfg = cfg, .w = &w, .g = &g, .cc = cc};
  int64_t K = (int64_t)v->num_channels * v->temporal_patch_size * v->patch_size * v->patch_size;
  int64_t pd[2] = {(int64_t)gh * gw, K};
  mx_type_t pixels = mx_type_tensor(MX_ELEM_F32, 2, pd);
  memset(&g, 0, sizeof g);
  mx_status_t st = list_weights(cfg, ck, &w);
  if (st == MX_OK) st = mx_vlist_check(&w.l, ck);
  if (st == MX_OK) st = qgrid_make(gh, gw, m, ws, &g);
  if (st == MX_OK) st = mx_vision_func(cc, &w.l, ck, &pixels, &c.b, &c.arg);
  if (st == MX_OK) st = body(&c, c.arg[w.l.n]);
  free(c.arg);
  qgrid_free(&g);
  qweights_free(&w);
  return st != MX_OK ? mx_error_prefix(st, "graph @vision") : MX_OK;
}
