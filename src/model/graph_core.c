// The shared transformer core: builds @prefill / @decode for any mx_arch_t.
//
// Layout of one decoder layer (pre-norm, as Llama and its relatives):
//   h = rms_norm(x); q, k, v = proj(h) [+ bias] (or slices of one fused qkv_proj);
//   [q, k = rms_norm per head, or over the whole projection (OLMo 2)];
//   q, k = rope(q, k) (the layer's table; none on a NoPE layer)
//   caches[:, :, pos0[b] : pos0[b] + T] = k, v          (dynamic_update_slice per sequence)
//   x += [rms_norm](o_proj(attention(q, k_cache, v_cache, pos0, layer window)) [+ bias]) [* r]
//   x += [rms_norm](gated_mlp(rms_norm(x))) [* r]        ([...]: sandwich norms, Gemma 2/3)
// (OLMo 2 drops the input norms and keeps the output ones; r: Granite's residual multiplier;
// LayerNorm families normalize x - mean(x) and may add a bias; a parallel block (Cohere) adds
// attention and MLP of the same normalized input; StarCoder2's MLP is plain, c_proj(act(c_fc))),
// Multi-latent attention (DeepSeek) replaces q / k / v: the caches take the normalized latent and
// the rotated shared key, and mx.mla attends over them (ADR 0012).
// then logits = head(rms_norm(x)) [* scale] [softcapped]. Weights arrive in their resident dtype; a
// linear layer's precision is its weight's type (mx_g_linear), everything else computes in f32.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph_internal.h"

typedef struct core {
  const mx_arch_t *a;
  const mx_wlist_t *wl;
  const mx_graph_opts_t *o;
  mx_comp_ctx_t *cc;
  mx_builder_t b;
  int32_t B, T;
  int32_t *w;  // value id of each weight argument
  int32_t tokens, pos0, pos;
  // RoPE positions [B, T]: pos, or with a rope_offset argument (mx_graph_opts_t.rope_offset)
  // pos + rope_offset[b]; rope_off is that argument's value id (-1 without).
  int32_t rope_pos, rope_off;
  int32_t zero;    // i32 scalar 0 (cache write offsets)
  int32_t p0[64];  // scalar pos0[b] for b < min(B, 64) (cache write offsets)
  int32_t inv_freq[MX_ARCH_MAX_ROPE_TABLES];
  int32_t ns;                  // cache arguments per layer and kind: B with seq_caches, else 1
  int32_t *k_cache, *v_cache;  // current value of the caches, [L * ns]: layer l, sequence i at
                               // l * ns + i (cache_at)
  bool media;                  // @prefill_media: one more argument, the media rows
  int32_t media_rows;          // its value id
  // M-RoPE (@prefill_media of a model with mrope_section): the positions argument [3, B, T],
  // its rows [B, T], and the frequencies of each section (zero outside it; ADR 0013).
  bool mrope;
  int32_t mrope_arg, mpos[3], minv[3];
  int32_t blocks;  // @prefill_media with media_blocks: the image runs' block ids [B, T], else -1
  bool msec[3];    // whether section s has any frequency
  // DeepStack (@prefill_media of Qwen3-VL; ADR 0021): the argument [L, B, T, H], the image-token
  // mask [B, T, H] of the embedding, and how many of the L rows the layers add (at most one per
  // layer: transformers adds row l after layer l and drops the rest).
  int32_t n_deep, deep_used, deep_arg, img_mask;
} core_t;

// x * s (x itself when s is 0: no multiplier configured).
static mx_status_t scale_by(mx_builder_t *b, int32_t x, double s, int32_t *out) {
  *out = x;
  if (s == 0.0) return MX_OK;
  int32_t sv;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, s, x, &sv));
  return mx_build_binary(b, MX_OP_MULTIPLY, x, sv, out);
}

static int32_t cache_at(const core_t *c, int32_t l, int32_t i) { return l * c->ns + i; }

// ---- arguments and their attributes ----

// layer, seq, alias: -1 for none.
static mx_status_t set_arg_attrs(mx_func_t *f, int32_t i, const char *role, const char *name,
                                 int32_t layer, int32_t seq, int32_t alias) {
  mx_module_t *m = f->module;
  mx_named_attr_t fields[5];
  int32_t n = 0;
  // Sorted by name, as MLIR keeps dictionary attributes.
  if (layer >= 0) fields[n++] = (mx_named_attr_t){"mx.layer", mx_attr_int(layer, MX_ELEM_I32)};
  fields[n++] = (mx_named_attr_t){"mx.name", mx_attr_string(m, name)};
  fields[n++] = (mx_named_attr_t){"mx.role", mx_attr_string(m, role)};
  if (seq >= 0) fields[n++] = (mx_named_attr_t){"mx.seq", mx_attr_int(seq, MX_ELEM_I32)};
  if (alias >= 0) {
    fields[n++] = (mx_named_attr_t){"tf.aliasing_output", mx_attr_int(alias, MX_ELEM_I32)};
  }
  for (int32_t k = 0; k < n; k++)
    if (mx_attr_is_oom(&fields[k].value)) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_attr_t d = mx_attr_dict(m, fields, n);
  if (mx_attr_is_oom(&d)) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  f->arg_attrs[i] = d;
  // Weights also carry their checkpoint name as the argument's location, which IREE and XLA
  // keep in their diagnostics and which readers of the emitted text see next to the type.
  if (strcmp(role, "weight") == 0) return mx_func_set_arg_loc(f, i, name);
  return MX_OK;
}

static mx_status_t make_func(core_t *c, const mx_checkpoint_t *ck, const char *name) {
  const mx_arch_t *a = c->a;
  const mx_wlist_t *wl = c->wl;
  int32_t L = a->n_layers, nw = wl->n, nc = 2 * L * c->ns;
  int32_t n_args = nw + 2 + nc + (c->media ? 1 : 0) + (c->mrope ? 1 : 0) + (c->n_deep ? 1 : 0) +
                   (c->rope_off >= 0 ? 1 : 0);
  mx_type_t *types = malloc(sizeof(mx_type_t) * (size_t)n_args);
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)n_args);
  if (types == NULL || ids == NULL) {
    free(types);
    free(ids);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; i < nw; i++) {
    const mx_weight_t *w = mx_checkpoint_find(ck, wl->w[i].name);
    types[i] = mx_type_tensor(w->dtype, wl->w[i].rank, wl->w[i].dims);
  }
  int64_t td[2] = {c->B, c->T}, pd[1] = {c->B};
  types[nw] = mx_type_tensor(MX_ELEM_I32, 2, td);
  types[nw + 1] = mx_type_tensor(MX_ELEM_I32, 1, pd);
  for (int32_t j = 0; j < nc; j++) {  // cache j is layer (j / 2) % L's, of sequence j / (2L)
    int64_t hw[2];
    mx_config_cache_dims(a->cfg, j % (2 * L), hw);
    int64_t cd[4] = {c->ns > 1 ? 1 : c->B, hw[0], c->o->ctx, hw[1]};
    types[nw + 2 + j] = mx_type_tensor(c->o->kv_dtype, 4, cd);
  }
  int64_t md[3] = {c->B, c->T, a->hidden}, rd[3] = {3, c->B, c->T};
  int32_t media_i = nw + 2 + nc;
  if (c->media) types[media_i] = mx_type_tensor(MX_ELEM_F32, 3, md);
  if (c->mrope) types[media_i + 1] = mx_type_tensor(MX_ELEM_I32, 3, rd);
  int64_t dd[4] = {c->n_deep, c->B, c->T, a->hidden};
  int32_t deep_i = media_i + 1 + (c->mrope ? 1 : 0);
  if (c->n_deep) types[deep_i] = mx_type_tensor(MX_ELEM_F32, 4, dd);
  int32_t off_i = n_args - 1;  // the last argument, when there is one
  if (c->rope_off >= 0) types[off_i] = mx_type_tensor(MX_ELEM_I32, 1, pd);
  mx_func_t *f;
  mx_status_t st = mx_build_func(c->cc->m, name, false, types, n_args, &f, &c->b, ids);
  free(types);
  for (int32_t i = 0; st == MX_OK && i < nw; i++) {
    c->w[i] = ids[i];
    st = set_arg_attrs(f, i, "weight", wl->w[i].name, -1, -1, -1);
  }
  if (st == MX_OK) {
    c->tokens = ids[nw];
    c->pos0 = ids[nw + 1];
    st = set_arg_attrs(f, nw, "tokens", "tokens", -1, -1, -1);
  }
  if (st == MX_OK) st = set_arg_attrs(f, nw + 1, "pos0", "pos0", -1, -1, -1);
  // Cache argument j = 2 (i L + l) [+ 1 for v] of sequence i (i = 0 without seq_caches);
  // result 0 is the logits, result 1 + j cache j.
  for (int32_t i = 0; st == MX_OK && i < c->ns; i++) {
    for (int32_t l = 0; st == MX_OK && l < L; l++) {
      char kn[48], vn[48];
      if (c->ns > 1) {
        snprintf(kn, sizeof kn, "k_cache_%d_seq_%d", l, i);
        snprintf(vn, sizeof vn, "v_cache_%d_seq_%d", l, i);
      } else {
        snprintf(kn, sizeof kn, "k_cache_%d", l);
        snprintf(vn, sizeof vn, "v_cache_%d", l);
      }
      int32_t j = 2 * (i * L + l), seq = c->ns > 1 ? i : -1;
      c->k_cache[cache_at(c, l, i)] = ids[nw + 2 + j];
      c->v_cache[cache_at(c, l, i)] = ids[nw + 3 + j];
      st = set_arg_attrs(f, nw + 2 + j, "k_cache", kn, l, seq, 1 + j);
      if (st == MX_OK) st = set_arg_attrs(f, nw + 3 + j, "v_cache", vn, l, seq, 2 + j);
    }
  }
  if (st == MX_OK && c->media) {
    c->media_rows = ids[media_i];
    st = set_arg_attrs(f, media_i, "media", "media", -1, -1, -1);
  }
  if (st == MX_OK && c->mrope) {
    c->mrope_arg = ids[media_i + 1];
    st = set_arg_attrs(f, media_i + 1, "positions", "positions", -1, -1, -1);
  }
  if (st == MX_OK && c->n_deep) {
    c->deep_arg = ids[deep_i];
    st = set_arg_attrs(f, deep_i, "deepstack", "deepstack", -1, -1, -1);
  }
  if (st == MX_OK && c->rope_off >= 0) {
    c->rope_off = ids[off_i];
    st = set_arg_attrs(f, off_i, "rope_offset", "rope_offset", -1, -1, -1);
  }
  free(ids);
  return st;
}

// ---- pieces ----

// Rows `tokens` [B, T] of table `wi` as [B, T, H] f32.
static mx_status_t gather_rows(core_t *c, int32_t wi, int32_t tokens, int32_t *out) {
  int64_t H = c->a->hidden, off = 2, coll = 0, map = 0, sizes[2] = {1, H};
  mx_gather_dims_t gd = {{&off, 1}, {&coll, 1}, {NULL, 0}, {NULL, 0}, {&map, 1}, 2};
  int32_t rows;
  const mx_wspec_t *es = &c->wl->w[wi];
  if (es->qmode) {  // quantized table: mx.embedding dequantizes the gathered rows
    int32_t bi = es->qbiases >= 0 ? c->w[es->qbiases] : -1;
    return mx_comp_embedding_q(c->cc, &c->b, es, tokens, c->w[wi], c->w[es->qscales], bi, out);
  }
  MX_TRY(mx_build_gather(&c->b, c->w[wi], tokens, &gd, sizes, false, &rows));
  return mx_g_f32(&c->b, rows, out);
}

// Molmo2's embedding of ids past the head's vocab V: rows id - V of the extra table, selected
// where id >= V (each gather reads a clamped id, so neither reads out of its table).
static mx_status_t embed_extra(core_t *c, int32_t x, int32_t *out) {
  mx_builder_t *b = &c->b;
  int64_t bd[2] = {0, 1};
  int32_t v, zero, shifted, extra, is_extra, mask;
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, c->a->vocab, c->tokens, &v));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 0, c->tokens, &zero));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, c->tokens, v, &shifted));
  MX_TRY(mx_build_binary(b, MX_OP_MAXIMUM, shifted, zero, &shifted));
  MX_TRY(gather_rows(c, c->wl->embed_extra, shifted, &extra));
  MX_TRY(mx_build_compare(b, MX_CMP_GE, MX_CMP_TYPE_AUTO, c->tokens, v, &is_extra));
  MX_TRY(mx_g_bcast_like(b, is_extra, x, bd, &mask));
  return mx_build_select(b, mask, extra, x, out);
}

// Token embeddings [B, T, H] f32 (gather of rows of the embedding matrix).
static mx_status_t embed(core_t *c, int32_t *out) {
  int32_t x;
  MX_TRY(gather_rows(c, c->wl->embed, c->tokens, &x));
  if (c->wl->embed_extra >= 0) MX_TRY(embed_extra(c, x, &x));
  MX_TRY(scale_by(&c->b, x, c->a->embed_scale, &x));
  if (c->a->embed_ids != NULL) MX_TRY(c->a->embed_ids(c, x, &x));
  if (!c->media) {
    *out = x;
    return MX_OK;
  }
  // @prefill_media: the rows of the image-token positions (audio-token positions of a model
  // with an audio tower and no vision tower, Gemma 3n) come from the media argument.
  int32_t img, is_img, mask;
  int64_t bd[2] = {0, 1};
  MX_TRY(mx_g_full_like(&c->b, MX_ELEM_I32, mx_media_token_id(c->a->cfg), c->tokens, &img));
  MX_TRY(mx_build_compare(&c->b, MX_CMP_EQ, MX_CMP_TYPE_AUTO, c->tokens, img, &is_img));
  MX_TRY(mx_g_bcast_like(&c->b, is_img, x, bd, &mask));
  c->img_mask = mask;
  if (!c->a->media_add) return mx_build_select(&c->b, mask, c->media_rows, x, out);
  // Molmo2: x + features at <im_patch> (zero added elsewhere, whatever the media rows hold).
  int32_t zero, add;
  MX_TRY(mx_g_full_like(&c->b, MX_ELEM_F32, 0.0, x, &zero));
  MX_TRY(mx_build_select(&c->b, mask, c->media_rows, zero, &add));
  return mx_build_binary(&c->b, MX_OP_ADD, x, add, out);
}

// DeepStack after layer l: row l of the deepstack argument added to the image tokens' hidden
// states (zero added elsewhere, which leaves them exactly as they are).
static mx_status_t deepstack_add(core_t *c, int32_t l, int32_t x, int32_t *out) {
  mx_builder_t *b = &c->b;
  int64_t lo[4] = {l, 0, 0, 0}, hi[4] = {l + 1, c->B, c->T, c->a->hidden};
  int64_t rd[3] = {c->B, c->T, c->a->hidden};
  int32_t row, zero, add;
  MX_TRY(mx_build_slice(b, c->deep_arg, lo, hi, NULL, 4, &row));
  MX_TRY(mx_build_reshape(b, row, rd, 3, &row));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.0, row, &zero));
  MX_TRY(mx_build_select(b, c->img_mask, row, zero, &add));
  return mx_build_binary(b, MX_OP_ADD, x, add, out);
}

// The M-RoPE section of frequency i: contiguous sections in order (Qwen2-VL), or Qwen3-VL's
// interleaving (height on i % 3 == 1 below 3 sec[1], width on i % 3 == 2 below 3 sec[2],
// temporal on the rest; its Qwen3VLTextRotaryEmbedding.recomposition_frequencies).
static int32_t mrope_section_of(const mx_model_config_t *cfg, int64_t i) {
  const int32_t *sec = cfg->mrope_section;
  if (cfg->mrope_interleaved) {
    if (i % 3 == 1 && i < 3 * (int64_t)sec[1]) return 1;
    if (i % 3 == 2 && i < 3 * (int64_t)sec[2]) return 2;
    return 0;
  }
  return i < sec[0] ? 0 : i < sec[0] + sec[1] ? 1 : i < sec[0] + sec[1] + sec[2] ? 2 : 3;
}

// M-RoPE: row s of the positions argument, and table 0's frequencies zeroed outside section s
// (a zero angle rotates exactly nothing, so rotating once per section is M-RoPE; ADR 0013).
// The argument [3, B, T] is reshaped once to [3 B, T] and each row is a slice of that: a
// reshape's result passed to several mx.rope calls (q and k of every layer) makes IREE 3.13's
// StableHLO import fail (docs/portability.md, "IREE 3.13 defects"); a slice's does not.
static mx_status_t mrope_positions(core_t *c) {
  mx_builder_t *b = &c->b;
  int64_t h = c->a->rotary_dim / 2, rows[2] = {3 * c->B, c->T};
  float *f = malloc(sizeof(float) * (size_t)h);
  if (f == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  int32_t all;
  mx_status_t st = mx_build_reshape(b, c->mrope_arg, rows, 2, &all);
  for (int32_t s = 0; s < 3 && st == MX_OK; s++) {
    int64_t start[2] = {s * c->B, 0}, limit[2] = {(s + 1) * c->B, c->T};
    c->msec[s] = false;
    for (int64_t i = 0; i < h; i++) {
      bool in = mrope_section_of(c->a->cfg, i) == s;
      f[i] = in ? c->a->inv_freq[0][i] : 0.0f;
      c->msec[s] = c->msec[s] || in;
    }
    mx_tensor_t tv = {.type = mx_type_tensor(MX_ELEM_F32, 1, &h),
                      .data = (uint8_t *)f,
                      .nbytes = sizeof(float) * (size_t)h};
    st = mx_build_constant(b, &tv, &c->minv[s]);
    if (st == MX_OK) st = mx_build_slice(b, all, start, limit, NULL, 2, &c->mpos[s]);
  }
  free(f);
  return st;
}

// pos[b, t] = pos0[b] + t, the RoPE positions, the scalars pos0[b], and the inv_freq constants.
static mx_status_t positions(core_t *c) {
  mx_builder_t *b = &c->b;
  int64_t td[2] = {c->B, c->T}, d0 = 0;
  mx_type_t it = mx_type_tensor(MX_ELEM_I32, 2, td);
  int32_t t, p0b;
  MX_TRY(mx_build_iota(b, &it, 1, &t));
  MX_TRY(mx_build_broadcast_in_dim(b, c->pos0, td, 2, &d0, &p0b));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, p0b, t, &c->pos));
  c->rope_pos = c->pos;
  if (c->rope_off >= 0) {
    int32_t ob;
    MX_TRY(mx_build_broadcast_in_dim(b, c->rope_off, td, 2, &d0, &ob));
    MX_TRY(mx_build_binary(b, MX_OP_ADD, c->pos, ob, &c->rope_pos));
  }
  MX_TRY(mx_build_scalar(b, MX_ELEM_I32, 0.0, &c->zero));
  for (int32_t i = 0; i < c->B; i++) {
    int64_t lo = i, hi = i + 1;
    int32_t s;
    MX_TRY(mx_build_slice(b, c->pos0, &lo, &hi, NULL, 1, &s));
    MX_TRY(mx_build_reshape(b, s, NULL, 0, &c->p0[i]));
  }
  for (int32_t k = 0; k < c->a->n_rope_tables; k++) {
    int64_t h = c->a->rotary_dim / 2;
    mx_tensor_t tv;
    memset(&tv, 0, sizeof tv);
    tv.type = mx_type_tensor(MX_ELEM_F32, 1, &h);
    // LongRoPE: the long factors for a graph whose capacity exceeds the original context.
    bool use_long = k == 0 && c->a->inv_freq_long != NULL && c->o->ctx > c->a->rope_long_above;
    tv.data = (uint8_t *)(use_long ? c->a->inv_freq_long : c->a->inv_freq[k]);
    tv.nbytes = sizeof(float) * (size_t)h;
    MX_TRY(mx_build_constant(b, &tv, &c->inv_freq[k]));
  }
  return c->mrope ? mrope_positions(c) : MX_OK;
}

// y = x . w^T [+ bias] (bias index -1 = none)
static mx_status_t proj(core_t *c, int32_t x, int32_t wi, int32_t bi, int32_t *out) {
  MX_TRY(mx_gq_linear(c->cc, &c->b, c->wl, c->w, wi, x, 0, -1, out));
  if (bi >= 0) MX_TRY(mx_g_add_bias(&c->b, *out, c->w[bi], out));
  return MX_OK;
}

// Writes kv [B, T, Hkv, D] f32 into cache [B, Hkv, N, D] at positions pos0[b] .. + T (N: the
// capacity S, or an attention window that holds those positions); with seq >= 0 only sequence
// seq's rows, into its own cache [1, Hkv, N, D] (seq_caches).
static mx_status_t cache_write(core_t *c, int32_t cache, int32_t kv, int32_t seq, int32_t *out) {
  mx_builder_t *b = &c->b;
  int64_t perm[4] = {0, 2, 1, 3};
  int32_t kt, zero = c->zero;
  MX_TRY(mx_build_transpose(b, kv, perm, 4, &kt));
  if (c->o->kv_dtype != MX_ELEM_F32) MX_TRY(mx_build_convert(b, kt, c->o->kv_dtype, &kt));
  mx_type_t t = *mx_build_type(b, kt);
  for (int32_t i = 0; i < c->B; i++) {
    if (seq >= 0 && i != seq) continue;
    int32_t upd = kt, bi = zero;
    if (c->B > 1) {
      int64_t lo[4] = {i, 0, 0, 0}, hi[4] = {i + 1, t.dims[1], t.dims[2], t.dims[3]};
      MX_TRY(mx_build_slice(b, kt, lo, hi, NULL, 4, &upd));
      if (seq < 0) MX_TRY(mx_build_scalar(b, MX_ELEM_I32, (double)i, &bi));
    }
    int32_t starts[4] = {bi, zero, c->p0[i], zero};
    MX_TRY(mx_build_dynamic_update_slice(b, cache, upd, starts, 4, &cache));
  }
  *out = cache;
  return MX_OK;
}

// The cache rows attention reads: all S, or the entry's window [0, W) (graph opts attn_len).
// The slice is what makes a windowed entry cheap on IREE and XLA, whose attention is the
// decomposition over every row it is given.
static mx_status_t attn_rows(core_t *c, int32_t cache, int32_t *out) {
  int64_t W = c->o->attn_len;
  if (W <= 0 || W >= c->o->ctx) {
    *out = cache;
    return MX_OK;
  }
  mx_type_t t = *mx_build_type(&c->b, cache);
  int64_t lo[4] = {0, 0, 0, 0}, hi[4] = {t.dims[0], t.dims[1], W, t.dims[3]};
  return mx_build_slice(&c->b, cache, lo, hi, NULL, 4, out);
}

// One attention composite of a layer over caches kc, vc (all rows, or the entry's window):
// qs[] its query-side inputs, pos0 [B'] the positions of the B' sequences they hold.
typedef struct attn_call attn_call_t;
struct attn_call {
  mx_status_t (*fn)(core_t *c, const attn_call_t *a, const int32_t *qs, int32_t kc, int32_t vc,
                    int32_t pos0, int32_t *out);
  int32_t layer;
  int32_t kv_layer;  // whose caches it reads (the layer's own, or a Gemma 3n producer's)
  int32_t weight;    // mx.mla: kv_b_proj's value id
};

static mx_status_t attend_plain(core_t *c, const attn_call_t *call, const int32_t *qs, int32_t kc,
                                int32_t vc, int32_t pos0, int32_t *out) {
  const mx_arch_t *a = c->a;
  int32_t si = c->wl->layers[call->layer].sinks, sinks = -1;
  if (si >= 0) MX_TRY(mx_g_f32(&c->b, c->w[si], &sinks));  // as stored when not f32
  // With c->blocks, the image runs attend bidirectionally (one cache set: build_func).
  return mx_comp_attention_ex(c->cc, &c->b, qs[0], kc, vc, pos0, sinks, c->blocks, a->attn_scale,
                              a->layer_window[call->layer], a->attn_softcap, out);
}

static mx_status_t attend_latent(core_t *c, const attn_call_t *call, const int32_t *qs, int32_t kc,
                                 int32_t vc, int32_t pos0, int32_t *out) {
  return mx_comp_mla(c->cc, &c->b, qs[0], qs[1], kc, vc, call->weight, pos0, c->a->attn_scale, out);
}

// Writes the T new rows k, v [B, T, ., .] of layer call->layer into its caches (none written
// when k < 0: a layer reading another's, call->kv_layer) and runs the attention over them: once
// over the [B, ...] caches, or with seq_caches once per sequence over its own caches, with that
// sequence's rows of each query input qs[0..nq) [B, T, ., .] and of pos0 (the outputs concatenated
// on the batch axis).
static mx_status_t attend(core_t *c, const attn_call_t *call, const int32_t *qs, int32_t nq,
                          int32_t k, int32_t v, int32_t *out) {
  mx_builder_t *b = &c->b;
  int32_t parts[64];  // ns <= B <= 64 (build_func)
  for (int32_t i = 0; i < c->ns; i++) {
    int32_t seq = c->ns > 1 ? i : -1, at = cache_at(c, call->kv_layer, i), kw, vw, p0 = c->pos0;
    int32_t qi[4];
    if (k >= 0) {
      MX_TRY(cache_write(c, c->k_cache[at], k, seq, &c->k_cache[at]));
      MX_TRY(cache_write(c, c->v_cache[at], v, seq, &c->v_cache[at]));
    }
    MX_TRY(attn_rows(c, c->k_cache[at], &kw));
    MX_TRY(attn_rows(c, c->v_cache[at], &vw));
    for (int32_t n = 0; n < nq && n < 4; n++) {
      qi[n] = qs[n];
      if (seq < 0) continue;
      const mx_type_t qt = *mx_build_type(b, qs[n]);
      int64_t lo[4] = {i, 0, 0, 0}, hi[4] = {i + 1, qt.dims[1], qt.dims[2], qt.dims[3]};
      MX_TRY(mx_build_slice(b, qs[n], lo, hi, NULL, 4, &qi[n]));
    }
    if (seq >= 0) {
      int64_t plo = i, phi = i + 1;
      MX_TRY(mx_build_slice(b, c->pos0, &plo, &phi, NULL, 1, &p0));
    }
    MX_TRY(call->fn(c, call, qi, kw, vw, p0, &parts[i]));
  }
  return mx_g_concat(b, parts, c->ns, 0, out);
}

// RMSNorm over head_dim of x [B, T, N, D] (per head) with weight wi, or with none (wi < 0:
// Gemma 3n's v_norm, a weight of ones, which multiplies exactly nothing).
static mx_status_t head_norm(core_t *c, int32_t x, int32_t wi, int32_t *out) {
  mx_type_t t = *mx_build_type(&c->b, x);
  int64_t flat[3] = {t.dims[0], t.dims[1] * t.dims[2], t.dims[3]}, d = t.dims[3];
  int32_t xf, y, w = wi >= 0 ? c->w[wi] : -1;
  double offset = wi >= 0 ? c->a->norm_offset : 0.0;
  if (w < 0) {
    int32_t one;
    MX_TRY(mx_build_scalar(&c->b, MX_ELEM_F32, 1.0, &one));
    MX_TRY(mx_build_broadcast_in_dim(&c->b, one, &d, 1, NULL, &w));
  }
  MX_TRY(mx_build_reshape(&c->b, x, flat, 3, &xf));
  MX_TRY(mx_comp_rms_norm(c->cc, &c->b, xf, w, c->a->rms_eps, offset, &y));
  return mx_build_reshape(&c->b, y, t.dims, 4, out);
}

// The architecture's norm of x with weight wi [and bias bi; -1: none]: rms_norm with its eps /
// weight offset, or LayerNorm, which is rms_norm of the centered x (its variance is the mean
// square of x - mean(x)), plus the bias.
static mx_status_t norm_b(core_t *c, int32_t x, int32_t wi, int32_t bi, int32_t *out) {
  if (c->a->layer_norm) MX_TRY(mx_g_center(&c->b, x, &x));
  MX_TRY(mx_comp_rms_norm(c->cc, &c->b, x, c->w[wi], c->a->rms_eps, c->a->norm_offset, out));
  if (bi >= 0) MX_TRY(mx_g_add_bias(&c->b, *out, c->w[bi], out));
  return MX_OK;
}

static mx_status_t norm(core_t *c, int32_t x, int32_t wi, int32_t *out) {
  return norm_b(c, x, wi, -1, out);
}

// x[..., lo:hi] along the last dimension.
static mx_status_t slice_last(mx_builder_t *b, int32_t x, int64_t lo, int64_t hi, int32_t *out) {
  mx_type_t t = *mx_build_type(b, x);
  int64_t start[MX_MAX_RANK] = {0}, limit[MX_MAX_RANK];
  for (int32_t i = 0; i < t.rank; i++) limit[i] = t.dims[i];
  start[t.rank - 1] = lo;
  limit[t.rank - 1] = hi;
  return mx_build_slice(b, x, start, limit, NULL, t.rank, out);
}

// Gated MLP one projection at a time (quantized weights: mx.linear; fused gate_up: its row
// halves; biases, which mx.gated_mlp has not, added after each), mx.gated_act between them.
static mx_status_t split_mlp(core_t *c, const mx_layer_w_t *lw, int32_t h, int32_t *out) {
  mx_builder_t *b = &c->b;
  int32_t g, u, act;
  if (c->a->fused_gate_up) {
    int64_t F = c->a->ffn, g0 = c->a->fused_up_first ? F : 0;
    MX_TRY(mx_gq_linear(c->cc, b, c->wl, c->w, lw->gate_up, h, g0, F, &g));
    MX_TRY(mx_gq_linear(c->cc, b, c->wl, c->w, lw->gate_up, h, F - g0, F, &u));
  } else {
    MX_TRY(proj(c, h, lw->gate, lw->gate_b, &g));
    MX_TRY(proj(c, h, lw->up, lw->up_b, &u));
  }
  MX_TRY(mx_comp_gated_act(c->cc, b, g, u, c->a->activation, &act));
  return proj(c, act, lw->down, lw->down_b, out);
}

// A sparse layer's MLP: the routed experts, plus the shared expert (the dense MLP of gate / up
// / down) x sigmoid(shared_expert_gate h) where the family has one (DeepSeek: no gate).
static mx_status_t dense_mlp(core_t *c, const mx_layer_w_t *lw, int32_t h, int32_t *out);
static mx_status_t moe_mlp(core_t *c, const mx_layer_w_t *lw, int32_t h, int32_t *out) {
  mx_builder_t *b = &c->b;
  int32_t routed, shared, g, s, sb, y;
  MX_TRY(mx_graph_moe(c->cc, b, c->a, c->wl, c->w, lw, h, &routed));
  if (lw->gate < 0) {
    *out = routed;
    return MX_OK;
  }
  int64_t lead[2] = {0, 1};
  MX_TRY(dense_mlp(c, lw, h, &shared));
  if (lw->shared_gate < 0) return mx_build_binary(b, MX_OP_ADD, routed, shared, out);
  MX_TRY(mx_g_linear(b, h, c->w[lw->shared_gate], &g));  // [B, T, 1]
  MX_TRY(mx_build_unary(b, MX_OP_LOGISTIC, g, &s));
  int64_t bt[2] = {c->B, c->T};
  MX_TRY(mx_build_reshape(b, s, bt, 2, &s));
  MX_TRY(mx_g_bcast_like(b, s, shared, lead, &sb));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, shared, sb, &y));
  return mx_build_binary(b, MX_OP_ADD, routed, y, out);
}

// The layer's MLP of h: routed experts on a sparse layer, else the dense one.
static mx_status_t mlp(core_t *c, int32_t l, const mx_layer_w_t *lw, int32_t h, int32_t *out) {
  if (mx_arch_layer_moe(c->a, l)) return moe_mlp(c, lw, h, out);
  return dense_mlp(c, lw, h, out);
}

// A dense MLP of h: gated (separate or fused gate/up, each quantized or not) or plain.
static mx_status_t dense_mlp(core_t *c, const mx_layer_w_t *lw, int32_t h, int32_t *out) {
  const mx_arch_t *a = c->a;
  mx_builder_t *b = &c->b;
  if (a->plain_mlp) {  // down(act(up(h) + b) + b)
    if (strcmp(a->activation, "gelu_tanh") != 0) {
      return mx_error_set(MX_ERR_UNSUPPORTED, "graph: a plain MLP with %s", a->activation);
    }
    int32_t u, g;
    MX_TRY(proj(c, h, lw->up, lw->up_b, &u));
    MX_TRY(mx_g_gelu_tanh(b, u, &g));
    return proj(c, g, lw->down, lw->down_b, out);
  }
  int32_t gate = -1, up = -1;
  bool mlp_q = mx_gq_is_quant(c->wl, lw->gate_up) || mx_gq_is_quant(c->wl, lw->gate) ||
               mx_gq_is_quant(c->wl, lw->up) || mx_gq_is_quant(c->wl, lw->down);
  if (mlp_q || a->mlp_bias) return split_mlp(c, lw, h, out);
  if (a->fused_gate_up) {  // rows [0, F) gate, [F, 2F) up (or the other way round)
    int64_t F = a->ffn, H = a->hidden;
    int64_t lo0[2] = {0, 0}, hi0[2] = {F, H}, lo1[2] = {F, 0}, hi1[2] = {2 * F, H};
    MX_TRY(mx_build_slice(b, c->w[lw->gate_up], lo0, hi0, NULL, 2, &gate));
    MX_TRY(mx_build_slice(b, c->w[lw->gate_up], lo1, hi1, NULL, 2, &up));
    if (a->fused_up_first) {
      int32_t t = gate;
      gate = up, up = t;
    }
  } else {
    gate = c->w[lw->gate];
    up = c->w[lw->up];
  }
  return mx_comp_gated_mlp(c->cc, b, h, gate, up, c->w[lw->down], a->activation, out);
}

// RoPE of layer l's table on q and k (none on a NoPE layer: positions only through the causal
// mask; k < 0: a layer reading another's caches, q only).
static mx_status_t rope_pair(core_t *c, int32_t l, int32_t *q, int32_t *k) {
  const mx_arch_t *a = c->a;
  int32_t t = a->layer_rope[l];
  if (t < 0) return MX_OK;
  double sc = a->rope_attn_factor[t];
  for (int32_t s = 0; s < (c->mrope ? 3 : 1); s++) {  // M-RoPE: once per section
    if (c->mrope && !c->msec[s]) continue;
    int32_t pos = c->mrope ? c->mpos[s] : c->rope_pos, inv = c->mrope ? c->minv[s] : c->inv_freq[t];
    MX_TRY(mx_comp_rope(c->cc, &c->b, *q, pos, inv, a->rope_style, a->rotary_dim, sc, q));
    if (*k >= 0)
      MX_TRY(mx_comp_rope(c->cc, &c->b, *k, pos, inv, a->rope_style, a->rotary_dim, sc, k));
  }
  return MX_OK;
}

// RMSNorm of x [B, T, N] by weight wi with DeepSeek's low-rank norms' eps (their RMSNorm is built
// with its default 1e-6 whatever rms_norm_eps says).
static mx_status_t latent_norm(core_t *c, int32_t x, int32_t wi, int32_t *out) {
  return mx_comp_rms_norm(c->cc, &c->b, x, c->w[wi], 1e-6, 0.0, out);
}

// Multi-latent attention of h (ADR 0012): the caches take the normalized latent and the rotated
// shared key of the T tokens; mx.mla attends over them; returns o_proj's output.
static mx_status_t mla_block(core_t *c, int32_t l, const mx_layer_w_t *lw, int32_t h,
                             int32_t *out) {
  const mx_arch_t *a = c->a;
  mx_builder_t *b = &c->b;
  int64_t B = c->B, T = c->T, Hq = a->n_heads, Dn = a->qk_nope, Dr = a->qk_rope;
  int32_t q, kv, lat, rot, q_nope, q_rot, att;
  if (a->q_lora > 0) {
    MX_TRY(proj(c, h, lw->q_a, lw->q_a_bias, &q));
    MX_TRY(latent_norm(c, q, lw->q_a_norm, &q));
    MX_TRY(proj(c, q, lw->q_b_proj, -1, &q));
  } else {
    MX_TRY(proj(c, h, lw->q, -1, &q));
  }
  int64_t qd[4] = {B, T, Hq, Dn + Dr}, ld[4] = {B, T, 1, a->kv_lora}, rd[4] = {B, T, 1, Dr};
  MX_TRY(mx_build_reshape(b, q, qd, 4, &q));
  MX_TRY(slice_last(b, q, 0, Dn, &q_nope));
  MX_TRY(slice_last(b, q, Dn, Dn + Dr, &q_rot));
  MX_TRY(proj(c, h, lw->kv_a, lw->kv_a_bias, &kv));
  MX_TRY(slice_last(b, kv, 0, a->kv_lora, &lat));
  MX_TRY(slice_last(b, kv, a->kv_lora, a->kv_lora + Dr, &rot));
  MX_TRY(latent_norm(c, lat, lw->kv_a_norm, &lat));
  MX_TRY(mx_build_reshape(b, lat, ld, 4, &lat));
  MX_TRY(mx_build_reshape(b, rot, rd, 4, &rot));
  MX_TRY(rope_pair(c, l, &q_rot, &rot));
  attn_call_t call = {attend_latent, l, l, c->w[lw->kv_b_proj]};
  const int32_t qs[2] = {q_nope, q_rot};
  MX_TRY(attend(c, &call, qs, 2, lat, rot, &att));
  int64_t ad[3] = {B, T, Hq * a->v_dim};
  MX_TRY(mx_build_reshape(b, att, ad, 3, &att));
  return proj(c, att, lw->o, lw->o_b, out);
}

// The attention of h (its input norm applied): o_proj's output.
static mx_status_t attention_block(core_t *c, int32_t l, const mx_layer_w_t *lw, int32_t h,
                                   int32_t *out) {
  const mx_arch_t *a = c->a;
  mx_builder_t *b = &c->b;
  int64_t B = c->B, T = c->T, D = a->head_dim;
  int32_t q, k = -1, v = -1;
  int32_t src = a->layer_kv_src != NULL ? a->layer_kv_src[l] : l;
  if (a->kv_lora > 0) return mla_block(c, l, lw, h, out);
  if (src != l) {  // reads layer src's caches: a query only
    MX_TRY(proj(c, h, lw->q, lw->q_b, &q));
  } else if (a->fused_qkv) {  // one matmul, then its q / k / v column ranges
    int64_t QD = (int64_t)a->n_heads * D, KD = (int64_t)a->n_kv_heads * D;
    int32_t qkv;
    MX_TRY(proj(c, h, lw->qkv, -1, &qkv));
    MX_TRY(slice_last(b, qkv, 0, QD, &q));
    MX_TRY(slice_last(b, qkv, QD, QD + KD, &k));
    MX_TRY(slice_last(b, qkv, QD + KD, QD + 2 * KD, &v));
  } else {
    MX_TRY(proj(c, h, lw->q, lw->q_b, &q));
    MX_TRY(proj(c, h, lw->k, lw->k_b, &k));
    MX_TRY(proj(c, h, lw->v, lw->v_b, &v));
  }
  if (a->qk_norm && a->qk_norm_flat) {  // over all heads at once, before the reshape
    MX_TRY(norm(c, q, lw->q_norm, &q));
    if (k >= 0) MX_TRY(norm(c, k, lw->k_norm, &k));
  }
  int64_t qd[4] = {B, T, a->n_heads, D}, kd[4] = {B, T, a->n_kv_heads, D};
  MX_TRY(mx_build_reshape(b, q, qd, 4, &q));
  if (k >= 0) {
    MX_TRY(mx_build_reshape(b, k, kd, 4, &k));
    MX_TRY(mx_build_reshape(b, v, kd, 4, &v));
    if (a->v_norm) MX_TRY(head_norm(c, v, -1, &v));
  }
  if (a->qk_norm && !a->qk_norm_flat) {
    MX_TRY(head_norm(c, q, lw->q_norm, &q));
    if (k >= 0) MX_TRY(head_norm(c, k, lw->k_norm, &k));
  }
  MX_TRY(rope_pair(c, l, &q, &k));
  int32_t att, att2;
  attn_call_t call = {attend_plain, l, src, -1};
  MX_TRY(attend(c, &call, &q, 1, k, v, &att));
  int64_t ad[3] = {B, T, (int64_t)a->n_heads * D};
  MX_TRY(mx_build_reshape(b, att, ad, 3, &att2));
  return proj(c, att2, lw->o, lw->o_b, out);
}

static mx_status_t layer(core_t *c, int32_t l, int32_t x, int32_t *out) {
  const mx_arch_t *a = c->a;
  const mx_layer_w_t *lw = &c->wl->layers[l];
  mx_builder_t *b = &c->b;
  int32_t h = x, o, x1;
  if (!a->norm_after) MX_TRY(norm_b(c, x, lw->in_norm, lw->in_norm_b, &h));
  MX_TRY(attention_block(c, l, lw, h, &o));
  // Sandwich (Gemma 2/3): post_attention_layernorm normalizes the attention output; the MLP
  // input norm is pre_feedforward_layernorm and its output is normalized too.
  // OLMo 2 has only these output norms (norm_after).
  if (a->sandwich_norm || a->norm_after) MX_TRY(norm(c, o, lw->post_norm, &o));
  MX_TRY(scale_by(b, o, a->residual_scale, &o));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, x, o, &x1));
  int32_t h2 = x1, m;
  if (a->parallel_block) {  // the MLP reads the same normalized input as the attention
    h2 = h;
  } else if (!a->norm_after) {
    MX_TRY(a->sandwich_norm ? norm(c, x1, lw->pre_ff_norm, &h2)
                            : norm_b(c, x1, lw->post_norm, lw->post_norm_b, &h2));
  }
  MX_TRY(mlp(c, l, lw, h2, &m));
  if (a->sandwich_norm || a->norm_after) MX_TRY(norm(c, m, lw->post_ff_norm, &m));
  MX_TRY(scale_by(b, m, a->residual_scale, &m));
  return mx_build_binary(b, MX_OP_ADD, x1, m, out);
}

static mx_status_t head(core_t *c, int32_t x, bool all_logits, int32_t *out) {
  mx_builder_t *b = &c->b;
  const mx_arch_t *a = c->a;
  int64_t B = c->B, T = c->T, H = a->hidden;
  if (!all_logits && T > 1) {
    int64_t lo[3] = {0, T - 1, 0}, hi[3] = {B, T, H};
    MX_TRY(mx_build_slice(b, x, lo, hi, NULL, 3, &x));
  }
  int32_t xn, lg;
  MX_TRY(norm_b(c, x, c->wl->final_norm, c->wl->final_norm_b, &xn));
  MX_TRY(mx_gq_linear(c->cc, b, c->wl, c->w, c->wl->head, xn, 0, -1, &lg));
  MX_TRY(scale_by(b, lg, a->logit_scale, &lg));
  if (a->final_softcap > 0.0) {  // tanh(l / cap) * cap
    int32_t cap, d, th;
    MX_TRY(mx_g_full_like(b, MX_ELEM_F32, a->final_softcap, lg, &cap));
    MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, lg, cap, &d));
    MX_TRY(mx_build_unary(b, MX_OP_TANH, d, &th));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, th, cap, &lg));
  }
  if (!all_logits) {
    int64_t ld[2] = {B, a->vocab};
    MX_TRY(mx_build_reshape(b, lg, ld, 2, &lg));
  }
  *out = lg;
  return MX_OK;
}

static mx_status_t body(core_t *c, bool all_logits) {
  int32_t x;
  MX_TRY(positions(c));
  MX_TRY(embed(c, &x));
  const mx_vision_config_t *vc = &c->a->cfg->vision;
  if (c->media && c->a->media_blocks && vc->kind == MX_VISION_MOLMO2)
    MX_TRY(mx_g_range_ids(&c->b, c->tokens, vc->block_lo, vc->block_hi, &c->blocks));
  else if (c->media && c->a->media_blocks)
    MX_TRY(mx_g_run_ids(&c->b, c->tokens, vc->image_token_id, &c->blocks));
  for (int32_t l = 0; c->a->layers == NULL && l < c->a->n_layers; l++) {
    mx_status_t st = layer(c, l, x, &x);
    if (st == MX_OK && l < c->deep_used) st = deepstack_add(c, l, x, &x);
    if (st != MX_OK) return mx_error_prefix(st, "layer %d", l);
  }
  if (c->a->layers != NULL) MX_TRY(c->a->layers(c, x, &x));
  int32_t L = c->a->n_layers, n_res = 1 + 2 * L * c->ns;
  int32_t *res = malloc(sizeof(int32_t) * (size_t)n_res);
  if (res == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_status_t st = head(c, x, all_logits, &res[0]);
  for (int32_t i = 0; i < c->ns; i++) {
    for (int32_t l = 0; l < L; l++) {  // the order of make_func's cache arguments
      res[1 + 2 * (i * L + l)] = c->k_cache[cache_at(c, l, i)];
      res[2 + 2 * (i * L + l)] = c->v_cache[cache_at(c, l, i)];
    }
  }
  if (st == MX_OK) st = mx_build_return(&c->b, res, n_res);
  free(res);
  return st;
}

static mx_status_t build_func(const mx_arch_t *a, const mx_wlist_t *wl, const mx_checkpoint_t *ck,
                              const mx_graph_opts_t *o, mx_comp_ctx_t *cc, const char *name,
                              int32_t T, bool all_logits, bool media) {
  if (o->batch > 64) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "graph: batch %d exceeds 64", o->batch);
  }
  core_t c;
  memset(&c, 0, sizeof c);
  c.a = a;
  c.wl = wl;
  c.o = o;
  c.cc = cc;
  c.B = o->batch;
  c.T = T;
  c.media = media;
  c.mrope =
      media && a->cfg->mrope_section[0] + a->cfg->mrope_section[1] + a->cfg->mrope_section[2] > 0;
  c.rope_off = o->rope_offset && !media ? 0 : -1;  // the argument's value id once made
  if (media && a->cfg->vision.kind == MX_VISION_QWEN3_VL && a->cfg->vision.n_deepstack > 0) {
    c.n_deep = a->cfg->vision.n_deepstack;
    c.deep_used = c.n_deep < a->n_layers ? c.n_deep : a->n_layers;
  }
  if (c.mrope && (a->n_rope_tables != 1 || a->inv_freq_long != NULL))
    return mx_error_set(MX_ERR_UNSUPPORTED, "graph @%s: M-RoPE needs one plain RoPE table", name);
  c.ns = o->seq_caches && c.B > 1 ? c.B : 1;
  c.blocks = -1;
  if (media && a->media_blocks && c.ns > 1)
    return mx_error_set(MX_ERR_UNSUPPORTED, "graph @%s: image blocks need one cache set", name);
  c.w = malloc(sizeof(int32_t) * (size_t)(wl->n > 0 ? wl->n : 1));
  c.k_cache = malloc(sizeof(int32_t) * (size_t)a->n_layers * (size_t)c.ns);
  c.v_cache = malloc(sizeof(int32_t) * (size_t)a->n_layers * (size_t)c.ns);
  mx_status_t st = MX_OK;
  if (c.w == NULL || c.k_cache == NULL || c.v_cache == NULL) {
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  if (st == MX_OK) st = make_func(&c, ck, name);
  if (st == MX_OK) st = body(&c, all_logits);
  free(c.w);
  free(c.k_cache);
  free(c.v_cache);
  if (st != MX_OK) return mx_error_prefix(st, "graph @%s", name);
  return MX_OK;
}

mx_status_t mx_graph_build_func(const mx_arch_t *a, const mx_wlist_t *wl, const mx_checkpoint_t *ck,
                                const mx_graph_opts_t *o, mx_comp_ctx_t *cc, const char *name,
                                int32_t T, bool all_logits) {
  return build_func(a, wl, ck, o, cc, name, T, all_logits, false);
}

mx_status_t mx_graph_build_media_func(const mx_arch_t *a, const mx_wlist_t *wl,
                                      const mx_checkpoint_t *ck, const mx_graph_opts_t *o,
                                      mx_comp_ctx_t *cc, int32_t T, bool all_logits) {
  return build_func(a, wl, ck, o, cc, "prefill_media", T, all_logits, true);
}

mx_status_t mx_graph_set_arg_attrs(mx_func_t *f, int32_t i, const char *role, const char *name) {
  return set_arg_attrs(f, i, role, name, -1, -1, -1);
}

// ---- the pieces a family's own layer loop uses (mx_arch_t.layers, graph_internal.h) ----

mx_builder_t *mx_core_builder(mx_core_t *c) { return &c->b; }
mx_comp_ctx_t *mx_core_comp(mx_core_t *c) { return c->cc; }
const mx_arch_t *mx_core_arch(const mx_core_t *c) { return c->a; }
const mx_wlist_t *mx_core_wlist(const mx_core_t *c) { return c->wl; }
int32_t mx_core_weight(const mx_core_t *c, int32_t wi) { return c->w[wi]; }
int32_t mx_core_tokens(const mx_core_t *c) { return c->tokens; }

mx_status_t mx_core_attention(mx_core_t *c, int32_t l, int32_t h, int32_t *out) {
  return attention_block(c, l, &c->wl->layers[l], h, out);
}

mx_status_t mx_core_norm(mx_core_t *c, int32_t x, int32_t wi, int32_t *out) {
  return norm(c, x, wi, out);
}

mx_status_t mx_core_linear(mx_core_t *c, int32_t x, int32_t wi, int32_t *out) {
  return proj(c, x, wi, -1, out);
}

mx_status_t mx_core_mlp(mx_core_t *c, int32_t l, int32_t h, int32_t *out) {
  return mlp(c, l, &c->wl->layers[l], h, out);
}
