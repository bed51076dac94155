// Shared graph binding of the session backends (see graph_binding.h).
#include "session/graph_binding.h"

#include <stdlib.h>
#include <string.h>

void mx_graph_binding_free(mx_graph_binding_t *b) {
  mx_module_destroy(b->mod);
  mx_tensor_free(&b->tokens);
  mx_tensor_free(&b->input);
  mx_tensor_free(&b->positions);
  mx_tensor_free(&b->deepstack);
  mx_tensor_free(&b->pooling);
  mx_tensor_free(&b->audio_mask);
  mx_tensor_free(&b->rope_offset);
  free(b->args);
  free(b->res);
  free(b->cache_arg);
  free(b->cache_res);
  memset(b, 0, sizeof *b);
}

static bool type_is(const mx_type_t *t, mx_elem_type_t et, int32_t rank, const int64_t *dims) {
  if (t->kind != MX_TYPE_TENSOR || t->elem != et || t->rank != rank) return false;
  for (int32_t i = 0; i < rank; i++)
    if (t->dims[i] != dims[i]) return false;
  return true;
}

// Result index an argument aliases (tf.aliasing_output), or -1.
static int32_t aliased_result(const mx_func_t *f, int32_t i) {
  if (!f->arg_attrs || f->arg_attrs[i].n == 0) return -1;
  const mx_attr_t *a = mx_attr_field(&f->arg_attrs[i], "tf.aliasing_output");
  return a && a->kind == MX_ATTR_INT ? (int32_t)a->i : -1;
}

// The media rows [B, T, H] of @prefill_media or the pixels of @vision: allocated to the
// argument's type, which must be f32 of the expected rank.
static mx_status_t bind_input(mx_graph_binding_t *b, int32_t i, const mx_type_t *at, int32_t rank,
                              const char *fname) {
  char b1[96];
  bool rows = rank == 3 && b->entry == MX_ENTRY_MEDIA;  // [B, T, H]
  if (b->input_arg >= 0 || at->kind != MX_TYPE_TENSOR || at->elem != MX_ELEM_F32 ||
      at->rank != rank || (rows && (at->dims[0] != b->B || at->dims[1] != b->T)))
    return mx_error_set(MX_ERR_INVALID_ARG, "@%s argument %d is %s, not the expected f32 input",
                        fname, i, mx_type_str(at, b1, sizeof b1));
  b->input_arg = i;
  return mx_tensor_alloc(&b->input, at);
}

static mx_status_t bind(const mx_model_t *model, int64_t ctx, int64_t attn_len, bool seq_caches,
                        int32_t V, const mx_tensor_t *caches, int32_t n_caches, int32_t B,
                        int32_t T, bool all_logits, mx_graph_entry_t entry, const int32_t grid[3],
                        mx_graph_binding_t *b);

mx_status_t mx_graph_bind_entry(const mx_model_t *model, int64_t ctx, int32_t V,
                                const mx_tensor_t *caches, int32_t n_caches, int32_t B, int32_t T,
                                bool all_logits, mx_graph_entry_t entry, mx_graph_binding_t *b) {
  const int32_t none[3] = {0, 0, 0};
  return bind(model, ctx, 0, false, V, caches, n_caches, B, T, all_logits, entry, none, b);
}

mx_status_t mx_graph_bind_audio(const mx_model_t *model, int32_t frames, mx_graph_binding_t *b) {
  const int32_t f[3] = {frames, 0, 0};
  return bind(model, 1, 0, false, model->config.vocab_size, NULL, 0, 1, 1, false, MX_ENTRY_AUDIO, f,
              b);
}

mx_status_t mx_graph_bind_vision_grid(const mx_model_t *model, int32_t grid_h, int32_t grid_w,
                                      mx_graph_binding_t *b) {
  const int32_t grid[3] = {grid_h, grid_w, 0};
  return bind(model, 1, 0, false, model->config.vocab_size, NULL, 0, 1, 1, false, MX_ENTRY_VISION,
              grid, b);
}

mx_status_t mx_graph_bind_vision_pooled(const mx_model_t *model, int32_t crops, int32_t tokens,
                                        int32_t pool, mx_graph_binding_t *b) {
  const int32_t grid[3] = {crops, tokens, pool};
  return bind(model, 1, 0, false, model->config.vocab_size, NULL, 0, 1, 1, false, MX_ENTRY_VISION,
              grid, b);
}

// Builds the module, then binds every argument of the function: weights to the checkpoint,
// tokens/pos0 to our small tensors, caches (types checked here, data bound by the caller).
// Records where the results are. grid: the Qwen towers' patch grid for @vision, {frames, 0} for
// @audio.
static mx_status_t bind(const mx_model_t *model, int64_t ctx, int64_t attn_len, bool seq_caches,
                        int32_t V, const mx_tensor_t *caches, int32_t n_caches, int32_t B,
                        int32_t T, bool all_logits, mx_graph_entry_t entry, const int32_t grid[3],
                        mx_graph_binding_t *b) {
  const char *fname = entry == MX_ENTRY_VISION  ? "vision"
                      : entry == MX_ENTRY_AUDIO ? "audio"
                      : entry == MX_ENTRY_MEDIA ? "prefill_media"
                      : T == 1                  ? "decode"
                                                : "prefill";
  all_logits = all_logits && T > 1;
  b->entry = entry;
  b->input_arg = b->positions_arg = b->deepstack_arg = b->pooling_arg = b->audio_mask_arg =
      b->rope_offset_arg = -1;
  bool audio = entry == MX_ENTRY_AUDIO;
  bool text = entry == MX_ENTRY_TEXT || entry == MX_ENTRY_TEXT_ROPE_OFFSET;
  mx_graph_opts_t go = {.batch = B,
                        .ctx = ctx,
                        .prefill_len = T,
                        .all_logits = all_logits,
                        .kv_dtype = n_caches > 0 ? caches[0].type.elem : MX_ELEM_F32,
                        .media = entry == MX_ENTRY_MEDIA || entry == MX_ENTRY_VISION,
                        .vision_grid_h = audio ? 0 : grid[0],
                        .vision_grid_w = audio ? 0 : grid[1],
                        .vision_pool = audio ? 0 : grid[2],
                        .audio_frames = audio ? grid[0] : 0,
                        .attn_len = attn_len,
                        .seq_caches = seq_caches,
                        .rope_offset = entry == MX_ENTRY_TEXT_ROPE_OFFSET};
  mx_status_t st0 = mx_model_build_graph(&model->config, model->ckpt, &go, &b->mod);
  if (st0) return st0;
  b->B = B;
  b->T = T;
  b->n_caches = n_caches;
  b->all_logits = all_logits;
  const int64_t tok_dims[2] = {B, T}, pos_dims[1] = {B};
  mx_type_t tt = mx_type_tensor(MX_ELEM_I32, 2, tok_dims);
  st0 = mx_tensor_alloc(&b->tokens, &tt);
  if (st0) return st0;
  b->f = mx_module_find_func(b->mod, fname);
  if (!b->f || !b->f->body)
    return mx_error_set(MX_ERR_INVALID_ARG, "model graph has no @%s function", fname);
  mx_func_t *f = b->f;
  b->n_args = f->body->n_args;
  b->args = calloc((size_t)b->n_args, sizeof *b->args);
  b->res = calloc((size_t)(f->n_results > 0 ? f->n_results : 1), sizeof *b->res);
  b->cache_arg = malloc((size_t)n_caches * sizeof *b->cache_arg);
  b->cache_res = malloc((size_t)n_caches * sizeof *b->cache_res);
  if (!b->args || !b->res || !b->cache_arg || !b->cache_res)
    return mx_error_set(MX_ERR_NOMEM, "out of memory binding @%s", fname);
  for (int32_t j = 0; j < n_caches; j++) b->cache_arg[j] = b->cache_res[j] = -1;
  b->tokens_arg = b->pos0_arg = -1;
  int32_t n_cache_seen = 0;
  for (int32_t i = 0; i < b->n_args; i++) {
    const mx_type_t *at = mx_value_type(f, f->body->args[i]);
    mx_graph_arg_t info;
    mx_status_t st = mx_graph_arg_info(f, i, &info);
    if (st) return mx_error_prefix(st, "@%s argument %d", fname, i);
    char b1[96], b2[96];
    switch (info.role) {
      case MX_ARG_WEIGHT: {
        const mx_weight_t *w = mx_checkpoint_find(model->ckpt, info.name);
        if (!w)
          return mx_error_set(MX_ERR_INVALID_ARG,
                              "@%s argument %d: tensor '%s' not in the checkpoint", fname, i,
                              info.name);
        mx_type_t wt = mx_type_tensor(w->dtype, w->rank, w->dims);
        if (!mx_type_equal(&wt, at))
          return mx_error_set(
              MX_ERR_INVALID_ARG,
              "@%s argument %d: checkpoint tensor '%s' (%s) is %s, the graph wants %s", fname, i,
              info.name, w->file ? w->file : "?", mx_type_str(&wt, b1, sizeof b1),
              mx_type_str(at, b2, sizeof b2));
        // Zero-copy: backends never write their weight arguments.
        b->args[i].type = *at;
        b->args[i].data = (uint8_t *)(uintptr_t)w->data;
        b->args[i].nbytes = w->nbytes;
        break;
      }
      case MX_ARG_TOKENS:
        if (!type_is(at, MX_ELEM_I32, 2, tok_dims))
          return mx_error_set(MX_ERR_INVALID_ARG,
                              "@%s tokens argument is %s, expected [%d, %lld] i32", fname,
                              mx_type_str(at, b1, sizeof b1), B, (long long)T);
        b->tokens_arg = i;
        break;
      case MX_ARG_POS0:
        if (!type_is(at, MX_ELEM_I32, 1, pos_dims))
          return mx_error_set(MX_ERR_INVALID_ARG, "@%s pos0 argument is %s, expected [%d] i32",
                              fname, mx_type_str(at, b1, sizeof b1), B);
        b->pos0_arg = i;
        break;
      case MX_ARG_K_CACHE:
      case MX_ARG_V_CACHE: {
        // Sequence-major with seq_caches (model.h): sequence s's 2L caches from 2 L s on.
        int32_t j = (seq_caches ? 2 * model->config.num_layers * info.seq : 0) + 2 * info.layer +
                    (info.role == MX_ARG_V_CACHE);
        if (info.layer < 0 || info.seq >= B || j >= n_caches || b->cache_arg[j] >= 0)
          return mx_error_set(MX_ERR_INVALID_ARG, "@%s argument %d: bad or repeated cache layer %d",
                              fname, i, info.layer);
        if (!mx_type_equal(at, &caches[j].type))
          return mx_error_set(MX_ERR_INVALID_ARG, "@%s argument %d (%s) is %s, the cache is %s",
                              fname, i, info.name, mx_type_str(at, b1, sizeof b1),
                              mx_type_str(&caches[j].type, b2, sizeof b2));
        b->cache_arg[j] = i;
        int32_t r = aliased_result(f, i);
        // Without the aliasing attribute: the contract's order (logits, k0, v0, k1, ...).
        b->cache_res[j] = r >= 0 ? r : 1 + n_cache_seen;
        n_cache_seen++;
        r = b->cache_res[j];
        if (r < 0 || r >= f->n_results || !mx_type_equal(&f->result_types[r], at))
          return mx_error_set(MX_ERR_INVALID_ARG, "@%s: no result of type %s for cache %s", fname,
                              mx_type_str(at, b1, sizeof b1), info.name);
        break;
      }
      case MX_ARG_POSITIONS: {
        const int64_t pd[3] = {3, B, T};
        if (entry != MX_ENTRY_MEDIA || b->positions_arg >= 0 || !type_is(at, MX_ELEM_I32, 3, pd))
          return mx_error_set(MX_ERR_INVALID_ARG,
                              "@%s positions argument is %s, expected [3, %d, %lld] i32", fname,
                              mx_type_str(at, b1, sizeof b1), B, (long long)T);
        b->positions_arg = i;
        st = mx_tensor_alloc(&b->positions, at);
        if (st) return st;
        b->args[i] = b->positions;
        break;
      }
      case MX_ARG_DEEPSTACK: {
        const int64_t dd[4] = {model->config.vision.n_deepstack, B, T, model->config.hidden_size};
        if (entry != MX_ENTRY_MEDIA || b->deepstack_arg >= 0 || !type_is(at, MX_ELEM_F32, 4, dd))
          return mx_error_set(MX_ERR_INVALID_ARG,
                              "@%s deepstack argument is %s, expected [%lld, %d, %lld, %lld] f32",
                              fname, mx_type_str(at, b1, sizeof b1), (long long)dd[0], B,
                              (long long)T, (long long)dd[3]);
        b->deepstack_arg = i;
        st = mx_tensor_alloc(&b->deepstack, at);
        if (st) return st;
        b->args[i] = b->deepstack;
        break;
      }
      case MX_ARG_MEDIA:
      case MX_ARG_PIXELS:
        if ((info.role == MX_ARG_MEDIA) != (entry == MX_ENTRY_MEDIA) || text)
          return mx_error_set(MX_ERR_INVALID_ARG, "@%s argument %d: unexpected role %s", fname, i,
                              info.role == MX_ARG_MEDIA ? "media" : "pixels");
        // Pixels: Molmo2's crops [crops, N, P*P*3], the Qwen towers' rows, else [1, C, S, S].
        st = bind_input(b, i, at,
                        entry == MX_ENTRY_MEDIA || grid[2] > 0 ? 3
                        : grid[0] > 0                          ? 2
                                                               : 4,
                        fname);
        if (st) return st;
        break;
      case MX_ARG_POOLING: {  // Molmo2's image_token_pooling [tokens, pool] i32
        const int64_t pd[2] = {grid[1], grid[2]};
        if (entry != MX_ENTRY_VISION || b->pooling_arg >= 0 || grid[2] <= 0 ||
            !type_is(at, MX_ELEM_I32, 2, pd))
          return mx_error_set(MX_ERR_INVALID_ARG,
                              "@%s pooling argument is %s, expected [%d, %d] i32", fname,
                              mx_type_str(at, b1, sizeof b1), grid[1], grid[2]);
        b->pooling_arg = i;
        st = mx_tensor_alloc(&b->pooling, at);
        if (st) return st;
        b->args[i] = b->pooling;
        break;
      }
      case MX_ARG_AUDIO:
        if (!audio)
          return mx_error_set(MX_ERR_INVALID_ARG, "@%s argument %d: unexpected role audio", fname,
                              i);
        st = bind_input(b, i, at, 3, fname);
        if (st) return st;
        break;
      case MX_ARG_AUDIO_MASK: {
        const int64_t md[2] = {1, grid[0]};
        if (!audio || b->audio_mask_arg >= 0 || !type_is(at, MX_ELEM_I32, 2, md))
          return mx_error_set(MX_ERR_INVALID_ARG,
                              "@%s audio_mask argument is %s, expected [1, %d] i32", fname,
                              mx_type_str(at, b1, sizeof b1), grid[0]);
        b->audio_mask_arg = i;
        st = mx_tensor_alloc(&b->audio_mask, at);
        if (st) return st;
        b->args[i] = b->audio_mask;
        break;
      }
      case MX_ARG_ROPE_OFFSET:
        if (entry != MX_ENTRY_TEXT_ROPE_OFFSET || b->rope_offset_arg >= 0 ||
            !type_is(at, MX_ELEM_I32, 1, pos_dims))
          return mx_error_set(MX_ERR_INVALID_ARG,
                              "@%s rope_offset argument is %s, expected [%d] i32", fname,
                              mx_type_str(at, b1, sizeof b1), B);
        b->rope_offset_arg = i;
        st = mx_tensor_alloc(&b->rope_offset, at);
        if (st) return st;
        b->args[i] = b->rope_offset;
        break;
      default:
        return mx_error_set(MX_ERR_INVALID_ARG, "@%s argument %d: unknown role %d", fname, i,
                            (int)info.role);
    }
  }
  if (entry == MX_ENTRY_VISION) {
    const mx_vision_config_t *vc = &model->config.vision;
    int32_t m = vc->spatial_merge_size > 0 ? vc->spatial_merge_size : 1;
    int64_t n = grid[2] > 0   ? grid[1]  // Molmo2: one feature per pooled token
                : grid[0] > 0 ? (int64_t)grid[0] * grid[1] / (m * m)
                              : vc->tokens_per_image;
    const int64_t fd[3] = {1, n, mx_vision_feature_width(&model->config)};
    if (b->input_arg < 0 || (grid[2] > 0) != (b->pooling_arg >= 0) || f->n_results != 1 ||
        !type_is(&f->result_types[0], MX_ELEM_F32, 3, fd))
      return mx_error_set(
          MX_ERR_INVALID_ARG,
          "@vision must take the pixels and return the features [1, %lld, %lld] f32", (long long)n,
          (long long)fd[2]);
    return MX_OK;
  }
  if (audio) {
    const mx_audio_config_t *ac = &model->config.audio;
    const int64_t rd[3] = {1, ac->soft_tokens, model->config.hidden_size};
    if (b->input_arg < 0 || b->audio_mask_arg < 0 || f->n_results != 1 ||
        !type_is(&f->result_types[0], MX_ELEM_F32, 3, rd))
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "@audio must take the features and the frame mask and return the rows "
                          "[1, %lld, %lld] f32",
                          (long long)rd[1], (long long)rd[2]);
    return MX_OK;
  }
  if (entry == MX_ENTRY_MEDIA && b->input_arg < 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "@%s has no media argument", fname);
  if (entry == MX_ENTRY_TEXT_ROPE_OFFSET && b->rope_offset_arg < 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "@%s has no rope_offset argument", fname);
  if (b->tokens_arg < 0 || b->pos0_arg < 0 || n_cache_seen != n_caches)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "@%s lacks a tokens or pos0 argument, or some of the %d caches", fname,
                        n_caches);
  // Logits: [B, T, V] from @prefill with all positions, else [B, V].
  b->logits_res = 0;
  const int64_t lp[3] = {B, T, V}, ld[2] = {B, V};
  bool ok = f->n_results >= 1 && (all_logits ? type_is(&f->result_types[0], MX_ELEM_F32, 3, lp)
                                             : type_is(&f->result_types[0], MX_ELEM_F32, 2, ld));
  if (!ok) {
    char b1[96];
    return mx_error_set(MX_ERR_INVALID_ARG, "@%s result 0 is %s, expected the f32 logits", fname,
                        f->n_results ? mx_type_str(&f->result_types[0], b1, sizeof b1) : "missing");
  }
  return MX_OK;
}

mx_status_t mx_graph_bind_vision(const mx_model_t *model, int64_t ctx, int32_t V, float *features,
                                 mx_graph_binding_t *b) {
  mx_status_t st = mx_graph_bind_entry(model, ctx, V, NULL, 0, 1, 1, false, MX_ENTRY_VISION, b);
  if (!st) mx_graph_bind_features(b, features);
  return st;
}

void mx_graph_bind_features(mx_graph_binding_t *b, float *features) {
  b->args[b->input_arg] = b->input;
  b->res[0].type = b->f->result_types[0];
  b->res[0].data = (uint8_t *)features;
  b->res[0].nbytes = mx_type_nbytes(&b->f->result_types[0]);
}

static const int32_t kNoGrid[3] = {0, 0, 0};

mx_status_t mx_graph_bind(const mx_model_t *model, int64_t ctx, int32_t V,
                          const mx_tensor_t *caches, int32_t n_caches, int32_t B, int32_t T,
                          bool all_logits, mx_graph_binding_t *b) {
  return bind(model, ctx, 0, false, V, caches, n_caches, B, T, all_logits, MX_ENTRY_TEXT, kNoGrid,
              b);
}

mx_status_t mx_graph_bind_window(const mx_model_t *model, int64_t ctx, int64_t attn_len, int32_t V,
                                 const mx_tensor_t *caches, int32_t n_caches, int32_t T,
                                 mx_graph_binding_t *b) {
  return bind(model, ctx, attn_len, false, V, caches, n_caches, 1, T, false, MX_ENTRY_TEXT, kNoGrid,
              b);
}

mx_status_t mx_graph_bind_seqs(const mx_model_t *model, int64_t ctx, int64_t attn_len, int32_t V,
                               const mx_tensor_t *caches, int32_t n_caches, int32_t B,
                               bool rope_offset, mx_graph_binding_t *b) {
  return bind(model, ctx, attn_len, B > 1, V, caches, n_caches, B, 1, false,
              rope_offset ? MX_ENTRY_TEXT_ROPE_OFFSET : MX_ENTRY_TEXT, kNoGrid, b);
}
