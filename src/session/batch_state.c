// Batched KV state of the cpu and interp backends (see batch_state.h).
#include "session/batch_state.h"

#include <stdlib.h>
#include <string.h>

#include "session/session_internal.h"

static void release_vision(mx_bstate_t *s) {
  if (s->vis.mod) {
    if (s->ex->release) s->ex->release(s->impl, &s->vis);
    mx_graph_binding_free(&s->vis);
  }
  s->vis_grid[0] = s->vis_grid[1] = s->vis_grid[2] = 0;
  free(s->features);
  s->features = NULL;
}

static void release_media(mx_bstate_t *s) {
  release_vision(s);
  for (int32_t i = 0; i < s->n_med; i++) {
    if (s->ex->release) s->ex->release(s->impl, &s->med[i]);
    mx_graph_binding_free(&s->med[i]);
  }
  if (s->med_odd.mod) {
    if (s->ex->release) s->ex->release(s->impl, &s->med_odd);
    mx_graph_binding_free(&s->med_odd);
  }
  s->has_vision = false;
  s->n_med = 0;
}

void mx_bstate_destroy(void *state) {
  mx_bstate_t *s = state;
  if (!s) return;
  release_media(s);
  for (int32_t i = 0; i < s->n_dec; i++) {
    if (s->ex->release) s->ex->release(s->impl, &s->dec[i]);
    mx_graph_binding_free(&s->dec[i]);
  }
  for (int32_t i = 0; i < s->n_pre; i++) {
    if (s->ex->release) s->ex->release(s->impl, &s->pre[i]);
    mx_graph_binding_free(&s->pre[i]);
  }
  for (int32_t i = 0; i < s->n_all; i++) {
    if (s->ex->release) s->ex->release(s->impl, &s->all[i]);
    mx_graph_binding_free(&s->all[i]);
  }
  free(s->all_logits);
  if (s->ex->destroy) s->ex->destroy(s->impl);
  for (int32_t j = 0; s->caches && j < s->n_caches; j++) mx_tensor_free(&s->caches[j]);
  free(s->caches);
  free(s->views);
  free(s->len);
  free(s->pos0);
  free(s->logits);
  free(s);
}

// Points views[] at slots [first, first + B) of every cache, typed [B, Hkv, S, D].
static void set_views(mx_bstate_t *s, int32_t first, int32_t B) {
  for (int32_t j = 0; j < s->n_caches; j++) {
    mx_tensor_t *v = &s->views[j];
    const mx_type_t *ct = &s->caches[j].type;
    int64_t dims[4] = {B, ct->dims[1], ct->dims[2], ct->dims[3]};
    v->type = mx_type_tensor(ct->elem, 4, dims);
    size_t slot_bytes = s->caches[j].nbytes / (size_t)s->n_slots;  // caches differ (MLA)
    v->data = s->caches[j].data + (size_t)first * slot_bytes;
    v->nbytes = (size_t)B * slot_bytes;
  }
}

// Binds tokens, pos0 (B entries of s->pos0), the current views and the result buffers.
static void bind(mx_bstate_t *s, mx_graph_binding_t *b) {
  b->args[b->tokens_arg] = b->tokens;
  if (b->input_arg >= 0) b->args[b->input_arg] = b->input;
  mx_tensor_t *p = &b->args[b->pos0_arg];
  int64_t pd = b->B;
  p->type = mx_type_tensor(MX_ELEM_I32, 1, &pd);
  p->data = (uint8_t *)s->pos0;
  p->nbytes = (size_t)b->B * sizeof *s->pos0;
  for (int32_t j = 0; j < s->n_caches; j++) {
    b->args[b->cache_arg[j]] = s->views[j];
    b->res[b->cache_res[j]] = s->views[j];  // in place
  }
  mx_tensor_t *l = &b->res[b->logits_res];
  l->type = b->f->result_types[b->logits_res];
  l->data = (uint8_t *)(b->all_logits ? s->all_logits : s->logits);
  l->nbytes = (size_t)b->B * (size_t)(b->all_logits ? b->T : 1) * (size_t)s->V * sizeof(float);
}

// What the prefill graphs return. It must be what the session backends' prefill plans return,
// since the last row's logits come out of the LM head matmul with M = T rows (all positions,
// GEMM order) or M = 1 (last position only, GEMV order): a slot's logits equal a session's only
// when both use the same kind (the cpu session: the last position only, ADR 0003).
enum { PREFILL_ALL_LOGITS = false };

static mx_status_t add_entry(mx_bstate_t *s, const mx_model_t *model, int32_t B, int32_t T,
                             bool all_logits, mx_graph_entry_t entry, mx_graph_binding_t *b) {
  set_views(s, 0, B);
  mx_status_t st =
      mx_graph_bind_entry(model, s->S, s->V, s->views, s->n_caches, B, T, all_logits, entry, b);
  if (st) return st;
  bind(s, b);
  for (int32_t r = 0; r < b->f->n_results; r++)
    if (!b->res[r].data)
      return mx_error_set(MX_ERR_INVALID_ARG, "@%s: unexpected result %d", b->f->name, r);
  return s->ex->prepare ? s->ex->prepare(s->impl, b) : MX_OK;
}

static mx_graph_entry_t text_entry(const mx_bstate_t *s) {
  return s->rope_offset ? MX_ENTRY_TEXT_ROPE_OFFSET : MX_ENTRY_TEXT;
}

static mx_status_t add_binding(mx_bstate_t *s, const mx_model_t *model, int32_t B, int32_t T,
                               mx_graph_binding_t *b) {
  return add_entry(s, model, B, T, PREFILL_ALL_LOGITS, text_entry(s), b);
}

// Runs a bound graph; a prefill piece (one sequence of text without a shift) at offset 0.
static mx_status_t run_piece(mx_bstate_t *s, mx_graph_binding_t *b) {
  if (b->rope_offset_arg >= 0) ((int32_t *)b->rope_offset.data)[0] = 0;
  s->runs++;
  return s->ex->run(s->impl, b);
}

mx_status_t mx_bstate_create(const mx_model_t *model, int64_t ctx, int32_t chunk, int32_t n_slots,
                             const mx_graph_exec_t *ex, void *impl, mx_bstate_t **out) {
  *out = NULL;
  const mx_model_config_t *cfg = &model->config;
  if (!model->ckpt || ctx <= 0 || ctx >= INT32_MAX || chunk <= 0 || chunk > ctx || n_slots <= 0 ||
      n_slots > MX_BSTATE_MAX_SLOTS) {
    if (ex->destroy) ex->destroy(impl);
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "batch: bad ctx %lld / prefill chunk %d / %d slots (1..%d), or no "
                        "checkpoint",
                        (long long)ctx, chunk, n_slots, MX_BSTATE_MAX_SLOTS);
  }
  mx_bstate_t *s = calloc(1, sizeof *s);
  if (!s) {
    if (ex->destroy) ex->destroy(impl);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  s->ex = ex;
  s->impl = impl;
  s->model = model;
  s->ctx = ctx;
  s->S = ctx + 1;
  s->chunk = chunk;
  s->V = cfg->vocab_size;
  s->n_slots = n_slots;
  s->n_caches = 2 * cfg->num_layers;
  s->rope_offset = cfg->mrope_section[0] + cfg->mrope_section[1] + cfg->mrope_section[2] > 0;
  mx_status_t st = MX_OK;
  size_t nc = (size_t)(s->n_caches > 0 ? s->n_caches : 1);
  int32_t pre_rows = PREFILL_ALL_LOGITS ? chunk : 1;
  size_t rows = (size_t)(pre_rows > n_slots ? pre_rows : n_slots);
  s->caches = calloc(nc, sizeof *s->caches);
  s->views = calloc(nc, sizeof *s->views);
  s->len = calloc((size_t)n_slots, sizeof *s->len);
  s->pos0 = calloc((size_t)n_slots, sizeof *s->pos0);
  s->logits = malloc(rows * (size_t)s->V * sizeof *s->logits);
  if (!s->caches || !s->views || !s->len || !s->pos0 || !s->logits)
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t j = 0; j < s->n_caches && !st; j++) {
    mx_type_t ct = mx_session_cache_type(model, j, n_slots, s->S);
    st = mx_tensor_alloc(&s->caches[j], &ct);
    if (st)
      st = mx_error_prefix(st, "batch KV cache of %d slots x %lld positions", n_slots,
                           (long long)ctx);
  }
  // Decode graphs: B = 1, 2, 4, ... below n_slots, then n_slots.
  for (int32_t B = 1; !st; B = B * 2 < n_slots ? B * 2 : n_slots) {
    st = add_binding(s, model, B, 1, &s->dec[s->n_dec++]);
    if (B == n_slots) break;
  }
  for (int32_t T = 2; !st && T <= chunk && s->n_pre < MX_BSTATE_MAX_PLANS; T *= 2)
    st = add_binding(s, model, 1, T, &s->pre[s->n_pre++]);
  if (st) {
    mx_bstate_destroy(s);
    return st;
  }
  *out = s;
  return MX_OK;
}

static mx_status_t check_prefill(const mx_bstate_t *s, int32_t slot, int32_t n, int64_t pos0) {
  if (slot < 0 || slot >= s->n_slots || n <= 0 || n > s->chunk || pos0 < 0 || pos0 + n > s->ctx)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "batch prefill: %d tokens at position %lld of slot %d (chunk %d, "
                        "capacity %lld, %d slots)",
                        n, (long long)pos0, slot, s->chunk, (long long)s->ctx, s->n_slots);
  return MX_OK;
}

mx_status_t mx_bstate_prefill(void *state, int32_t slot, const int32_t *ids, int32_t n,
                              int64_t pos0, float *last) {
  mx_bstate_t *s = state;
  mx_status_t st = check_prefill(s, slot, n, pos0);
  if (st) return st;
  const size_t V = (size_t)s->V;
  set_views(s, slot, 1);
  // The pieces of mx_runner_next_piece (the session runner's); T = 1 is the B = 1 decode graph.
  int32_t max_t = s->n_pre > 0 ? s->pre[s->n_pre - 1].T : 1;
  for (int32_t done = 0; done < n;) {
    int32_t start, T = mx_runner_next_piece(n, done, max_t, &start), i = -1;
    while (i + 1 < s->n_pre && s->pre[i + 1].T <= T) i++;
    mx_graph_binding_t *b = i >= 0 ? &s->pre[i] : &s->dec[0];
    if (b->T != T) return mx_error_set(MX_ERR_RUNTIME, "batch prefill: no graph of %d tokens", T);
    memcpy(b->tokens.data, ids + start, (size_t)b->T * sizeof *ids);
    s->pos0[0] = (int32_t)(pos0 + start);
    bind(s, b);
    if ((st = run_piece(s, b))) return st;
    memcpy(last, s->logits + (size_t)(b->all_logits ? b->T - 1 : 0) * V, V * sizeof *last);
    done = start + b->T;
  }
  s->len[slot] = pos0 + n;
  return MX_OK;
}

static mx_status_t add_all_logits(void *ctx, int32_t T) {
  mx_bstate_t *s = ctx;
  mx_graph_binding_t *b = &s->all[s->n_all];
  mx_status_t st = add_entry(s, s->model, 1, T, true, text_entry(s), b);
  if (st) {
    if (s->ex->release) s->ex->release(s->impl, b);
    mx_graph_binding_free(b);
  }
  return st;
}

// The all-logits bindings, each made on the first call that needs it (the runner's schedule).
static mx_status_t ensure_all_logits(mx_bstate_t *s, int32_t n) {
  return mx_runner_grow_all_logits(&s->all_logits, s->V, s->chunk, &s->n_all, MX_BSTATE_MAX_PLANS,
                                   n, add_all_logits, s);
}

mx_status_t mx_bstate_prefill_all(void *state, int32_t slot, const int32_t *ids, int32_t n,
                                  int64_t pos0, float *last, float *all) {
  mx_bstate_t *s = state;
  mx_status_t st = check_prefill(s, slot, n, pos0);
  if (!st) st = ensure_all_logits(s, n);
  if (st) return st;
  const size_t V = (size_t)s->V;
  int32_t done = 0;
  // Largest piece first, as mx_bstate_prefill; a piece of one token is the B = 1 decode graph.
  for (int32_t i = s->n_all - 1; i >= -1 && done < n; i--) {
    mx_graph_binding_t *b = i >= 0 ? &s->all[i] : &s->dec[0];
    while (n - done >= b->T) {
      memcpy(b->tokens.data, ids + done, (size_t)b->T * sizeof *ids);
      s->pos0[0] = (int32_t)(pos0 + done);
      set_views(s, slot, 1);
      bind(s, b);
      if ((st = run_piece(s, b))) return st;
      const float *L = b->all_logits ? s->all_logits : s->logits;
      memcpy(all + (size_t)done * V, L, (size_t)b->T * V * sizeof *L);
      done += b->T;
    }
  }
  memcpy(last, all + (size_t)(n - 1) * V, V * sizeof *last);
  s->len[slot] = pos0 + n;
  return MX_OK;
}

mx_status_t mx_bstate_decode(void *state, const int32_t *slots, const int32_t *ids,
                             const int64_t *pos, const int64_t *rope, int32_t n, float *logits) {
  mx_bstate_t *s = state;
  int32_t hi = -1;
  for (int32_t i = 0; i < n; i++) {
    if (slots[i] < 0 || slots[i] >= s->n_slots || pos[i] < 0 || pos[i] >= s->ctx)
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "batch decode: slot %d at position %lld (%d slots, capacity %lld)",
                          slots[i], (long long)pos[i], s->n_slots, (long long)s->ctx);
    if (slots[i] > hi) hi = slots[i];
    if (rope && rope[i] != pos[i] && (!s->rope_offset || rope[i] < 0 || rope[i] > INT32_MAX))
      return mx_error_set(s->rope_offset ? MX_ERR_INVALID_ARG : MX_ERR_UNSUPPORTED,
                          "batch decode: slot %d at RoPE position %lld, cache position %lld (%s)",
                          slots[i], (long long)rope[i], (long long)pos[i],
                          s->rope_offset ? "out of range" : "the model has no M-RoPE");
  }
  if (n <= 0) return mx_error_set(MX_ERR_INVALID_ARG, "batch decode: %d slots", n);
  mx_graph_binding_t *b = &s->dec[s->n_dec - 1];
  for (int32_t k = 0; k < s->n_dec; k++)
    if (s->dec[k].B > hi) {
      b = &s->dec[k];
      break;
    }
  // Park every slot of the prefix on its first free row (row ctx when full), then place the
  // named ones.
  int32_t *tok = (int32_t *)b->tokens.data;
  int32_t *off = b->rope_offset_arg >= 0 ? (int32_t *)b->rope_offset.data : NULL;
  for (int32_t q = 0; q < b->B; q++) {
    tok[q] = 0;
    s->pos0[q] = (int32_t)(s->len[q] < s->ctx ? s->len[q] : s->ctx);
    if (off) off[q] = 0;
  }
  for (int32_t i = 0; i < n; i++) {
    tok[slots[i]] = ids[i];
    s->pos0[slots[i]] = (int32_t)pos[i];
    if (off && rope) off[slots[i]] = (int32_t)(rope[i] - pos[i]);
  }
  set_views(s, 0, b->B);
  bind(s, b);
  s->runs++;
  mx_status_t st = s->ex->run(s->impl, b);
  if (st) return st;
  const size_t V = (size_t)s->V;
  for (int32_t i = 0; i < n; i++) {
    memcpy(logits + (size_t)i * V, s->logits + (size_t)slots[i] * V, V * sizeof *logits);
    s->len[slots[i]] = pos[i] + 1;
  }
  return MX_OK;
}

// Rows past len are never read before the slot writes them again, so nothing is cleared: a
// reset costs nothing whatever the capacity (a session clears its cache; test_batch checks that
// a reset slot gives exactly a new slot's logits).
void mx_bstate_reset(void *state, int32_t slot) {
  mx_bstate_t *s = state;
  if (slot >= 0 && slot < s->n_slots) s->len[slot] = 0;
}

// The slot's parking row moves back to its new length; the rows past it are rewritten before
// anything reads them, as after a reset.
void mx_bstate_rewind(void *state, int32_t slot, int64_t n) {
  mx_bstate_t *s = state;
  if (slot >= 0 && slot < s->n_slots && n < s->len[slot]) s->len[slot] = n;
}

// @vision and the @prefill_media graphs, on the first image (a one-time allocation: text-only
// serving never builds them). The Qwen towers' @vision waits for its grid (vision_grid).
static mx_status_t ensure_media(mx_bstate_t *s) {
  if (s->has_vision) return MX_OK;
  const mx_model_config_t *mc = &s->model->config;
  s->has_vision = true;
  mx_status_t st = MX_OK;
  if (mc->vision.present && mx_vision_fixed_size(&mc->vision)) {
    size_t nf = (size_t)mc->vision.tokens_per_image * (size_t)mc->hidden_size;
    s->features = malloc(nf * sizeof(float));
    st = s->features ? mx_graph_bind_vision(s->model, s->S, s->V, s->features, &s->vis)
                     : mx_error_set(MX_ERR_NOMEM, "out of memory (image features)");
    if (!st && s->ex->prepare) st = s->ex->prepare(s->impl, &s->vis);
  }
  for (int32_t T = 1; !st && T <= s->chunk && s->n_med < MX_BSTATE_MAX_PLANS; T *= 2)
    st = add_entry(s, s->model, 1, T, PREFILL_ALL_LOGITS, MX_ENTRY_MEDIA, &s->med[s->n_med++]);
  if (st) release_media(s);
  return st;
}

mx_status_t mx_bstate_vision(void *state, const float *pixels, float *features) {
  mx_bstate_t *s = state;
  mx_status_t st = ensure_media(s);
  return st ? st : mx_graph_run_vision(s->ex, s->impl, &s->vis, pixels, features);
}

// @vision (or @audio) just bound in s->vis (st: the binding's status): its features buffer and the
// executor's preparation; on any failure nothing is kept.
static mx_status_t prepare_vision(mx_bstate_t *s, mx_status_t st) {
  size_t nb = st ? 0 : mx_type_nbytes(&s->vis.f->result_types[0]);
  if (!st && !(s->features = malloc(nb)))
    st = mx_error_set(MX_ERR_NOMEM, "out of memory (tower outputs)");
  if (!st) mx_graph_bind_features(&s->vis, s->features);
  if (!st && s->ex->prepare) st = s->ex->prepare(s->impl, &s->vis);
  if (st) release_vision(s);
  return st;
}

mx_status_t mx_bstate_audio(void *state, const float *features, const int32_t *mask, int32_t frames,
                            float *rows) {
  mx_bstate_t *s = state;
  if (s->model->config.vision.present)
    return mx_error_set(MX_ERR_UNSUPPORTED, "the batch runs no audio tower beside a vision tower");
  mx_status_t st = ensure_media(s);
  if (st) return st;
  if (s->vis_grid[0] != frames) {  // another frame count: rebuild @audio
    release_vision(s);
    st = prepare_vision(s, mx_graph_bind_audio(s->model, frames, &s->vis));
    if (st) return st;
    s->vis_grid[0] = frames;
  }
  memcpy(s->vis.audio_mask.data, mask, s->vis.audio_mask.nbytes);
  return mx_graph_run_vision(s->ex, s->impl, &s->vis, features, rows);
}

mx_status_t mx_bstate_vision_grid(void *state, const float *pixels, int32_t grid_h, int32_t grid_w,
                                  float *features) {
  mx_bstate_t *s = state;
  mx_status_t st = ensure_media(s);
  if (st) return st;
  if (s->vis_grid[0] != grid_h || s->vis_grid[1] != grid_w) {  // a new grid: rebuild @vision
    release_vision(s);
    st = prepare_vision(s, mx_graph_bind_vision_grid(s->model, grid_h, grid_w, &s->vis));
    if (st) return st;
    s->vis_grid[0] = grid_h;
    s->vis_grid[1] = grid_w;
  }
  return mx_graph_run_vision(s->ex, s->impl, &s->vis, pixels, features);
}

mx_status_t mx_bstate_vision_pooled(void *state, const float *pixels, int32_t crops,
                                    const int32_t *pooling, int32_t tokens, int32_t pool,
                                    float *features) {
  mx_bstate_t *s = state;
  mx_status_t st = ensure_media(s);
  if (st) return st;
  if (s->vis_grid[0] != crops || s->vis_grid[1] != tokens || s->vis_grid[2] != pool) {
    release_vision(s);  // a new geometry: rebuild @vision
    st = prepare_vision(s, mx_graph_bind_vision_pooled(s->model, crops, tokens, pool, &s->vis));
    if (st) return st;
    s->vis_grid[0] = crops;
    s->vis_grid[1] = tokens;
    s->vis_grid[2] = pool;
  }
  return mx_graph_run_vision_pooled(s->ex, s->impl, &s->vis, pixels, pooling, features);
}

// The @prefill_media binding of a piece of T tokens: the power-of-two one, else med_odd bound
// for exactly T (an image's block of another length).
static mx_status_t media_binding(mx_bstate_t *s, int32_t T, mx_graph_binding_t **out) {
  for (int32_t i = 0; i < s->n_med; i++)
    if (s->med[i].T == T) {
      *out = &s->med[i];
      return MX_OK;
    }
  if (!s->med_odd.mod || s->med_odd.T != T) {
    if (s->med_odd.mod) {
      if (s->ex->release) s->ex->release(s->impl, &s->med_odd);
      mx_graph_binding_free(&s->med_odd);
    }
    mx_status_t st = add_entry(s, s->model, 1, T, PREFILL_ALL_LOGITS, MX_ENTRY_MEDIA, &s->med_odd);
    if (st) {
      if (s->ex->release) s->ex->release(s->impl, &s->med_odd);
      mx_graph_binding_free(&s->med_odd);
      return st;
    }
  }
  *out = &s->med_odd;
  return MX_OK;
}

mx_status_t mx_bstate_prefill_media(void *state, int32_t slot, const int32_t *ids,
                                    const float *media, int32_t n, int64_t pos0, float *last) {
  return mx_bstate_prefill_mrope(state, slot, ids, media, NULL, n, pos0, last);
}

mx_status_t mx_bstate_prefill_mrope(void *state, int32_t slot, const int32_t *ids,
                                    const float *media, const int32_t *positions, int32_t n,
                                    int64_t pos0, float *last) {
  mx_bstate_t *s = state;
  // More than a chunk only as an image's block, which runs whole (mx_vision_prefill_take).
  const mx_vision_config_t *v = &s->model->config.vision;
  bool block = n > s->chunk && mx_vision_blocks(v) && mx_vision_block_token(v, ids[0]);
  mx_status_t st = check_prefill(s, slot, block ? s->chunk : n, pos0);
  if (!st && pos0 + n > s->ctx)
    st = mx_error_set(MX_ERR_INVALID_ARG,
                      "batch prefill: %d tokens at position %lld (capacity %lld)", n,
                      (long long)pos0, (long long)s->ctx);
  if (!st) st = ensure_media(s);
  if (st) return st;
  const size_t W = (size_t)mx_vision_feature_width(&s->model->config);
  const mx_vision_config_t *vc = &s->model->config.vision;
  int32_t max_t = s->med[s->n_med - 1].T;
  // Largest piece first, never one that cuts an image's block (mx_vision_media_piece).
  for (int32_t done = 0, T; done < n; done += T) {
    T = mx_vision_media_piece(vc, ids + done, n - done, max_t);
    mx_graph_binding_t *b = NULL;
    if ((st = media_binding(s, T, &b))) return st;
    set_views(s, slot, 1);
    memcpy(b->tokens.data, ids + done, (size_t)T * sizeof *ids);
    st = mx_graph_media_inputs(s->model, b, media ? media + (size_t)done * W : NULL,
                               positions ? positions + done : NULL, (size_t)n);
    if (st) return st;
    s->pos0[0] = (int32_t)(pos0 + done);
    bind(s, b);
    s->runs++;
    if ((st = s->ex->run(s->impl, b))) return st;
  }
  memcpy(last, s->logits, (size_t)s->V * sizeof *last);
  s->len[slot] = pos0 + n;
  return MX_OK;
}
