// The shared graph runner of the session backends (see graph_runner.h).
#include "session/graph_runner.h"

#include <stdlib.h>
#include <string.h>

#include "base/try.h"
#include "session/session_internal.h"

static void binding_release(mx_graph_runner_t *r, mx_graph_binding_t *b) {
  if (r->ex->release) r->ex->release(r->impl, b);
  mx_graph_binding_free(b);
}

static void release_vision(mx_graph_runner_t *r) {
  if (r->vis.mod) binding_release(r, &r->vis);
  r->vis_grid[0] = r->vis_grid[1] = r->vis_grid[2] = 0;
  free(r->features);
  r->features = NULL;
}

static void release_audio(mx_graph_runner_t *r) {
  if (r->aud.mod) binding_release(r, &r->aud);
  r->aud_frames = 0;
  free(r->aud_rows);
  r->aud_rows = NULL;
}

static void release_media(mx_graph_runner_t *r) {
  release_vision(r);
  release_audio(r);
  for (int32_t i = 0; i < r->n_med; i++) binding_release(r, &r->med[i]);
  if (r->med_odd.mod) binding_release(r, &r->med_odd);
  r->has_vision = false;
  r->n_med = 0;
}

static void release_all_logits(mx_graph_runner_t *r) {
  for (int32_t i = 0; i < r->n_all; i++) binding_release(r, &r->all[i]);
  r->n_all = 0;
  free(r->all_logits);
  r->all_logits = NULL;
}

void mx_graph_runner_destroy(void *state) {
  mx_graph_runner_t *r = state;
  if (!r) return;
  // The bindings first (the executor's plans), then the executor, then the buffers they used.
  binding_release(r, &r->dec);
  for (int32_t i = 0; i < r->n_pre; i++) binding_release(r, &r->pre[i]);
  for (int32_t k = 0; r->win && k < r->n_win; k++)
    for (int32_t i = 0; i <= MX_RUNNER_MAX_BUCKETS; i++)
      if (r->win[k][i].f) binding_release(r, &r->win[k][i]);
  free(r->win);
  release_all_logits(r);
  release_media(r);
  if (r->ex->destroy) r->ex->destroy(r->impl);
  for (int32_t j = 0; r->caches && j < r->n_caches; j++) mx_tensor_free(&r->caches[j]);
  free(r->caches);
  free(r->logits);
  mx_tensor_free(&r->pos0);
  free(r);
}

// Binds the per-call pieces (tokens, pos0, caches in place, the logits buffer) once; a run then
// only writes the token ids and pos0.
static mx_status_t bind(mx_graph_runner_t *r, mx_graph_binding_t *b, float *logits) {
  b->args[b->tokens_arg] = b->tokens;
  b->args[b->pos0_arg] = r->pos0;
  if (b->input_arg >= 0) b->args[b->input_arg] = b->input;
  for (int32_t j = 0; j < r->n_caches; j++) {
    b->args[b->cache_arg[j]] = r->caches[j];
    b->res[b->cache_res[j]] = r->caches[j];  // in place
  }
  b->res[b->logits_res].type = b->f->result_types[b->logits_res];
  b->res[b->logits_res].data = (uint8_t *)logits;
  b->res[b->logits_res].nbytes = (size_t)(b->all_logits ? b->T : 1) * (size_t)r->V * sizeof(float);
  // Every result is the logits or a cache (device caches are bound by type only).
  if (b->f->n_results != 1 + r->n_caches)
    return mx_error_set(MX_ERR_INVALID_ARG, "@%s: %d results, expected the logits and %d caches",
                        b->f->name, b->f->n_results, r->n_caches);
  return r->ex->prepare ? r->ex->prepare(r->impl, b) : MX_OK;
}

static mx_status_t add_binding(mx_graph_runner_t *r, int32_t T, bool all_logits, float *logits,
                               mx_graph_binding_t *b) {
  mx_status_t st =
      mx_graph_bind(r->model, r->ctx, r->V, r->caches, r->n_caches, 1, T, all_logits, b);
  return st ? st : bind(r, b, logits);
}

// @prefill for T = 2, 4, ... <= max_t into set[] (*n of them made).
static mx_status_t add_buckets(mx_graph_runner_t *r, mx_graph_binding_t *set, int32_t *n,
                               int32_t max_t, bool all_logits, float *logits) {
  mx_status_t st = MX_OK;
  for (int64_t T = 2; !st && T <= max_t && *n < MX_RUNNER_MAX_BUCKETS; T *= 2)
    st = add_binding(r, (int32_t)T, all_logits, logits, &set[(*n)++]);
  return st;
}

mx_status_t mx_graph_runner_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                                   const mx_graph_exec_t *ex, void *impl, mx_graph_runner_t **out) {
  *out = NULL;
  const mx_model_config_t *mc = &model->config;
  int64_t ctx = cfg->ctx;
  int32_t chunk = cfg->prefill_chunk;
  mx_graph_runner_t *r = NULL;
  mx_status_t st = MX_OK;
  if (!model->ckpt) {
    st = mx_error_set(MX_ERR_INVALID_ARG, "model has no checkpoint");
  } else if (ctx <= 0 || ctx > INT32_MAX || chunk <= 0 || chunk > ctx) {
    st = mx_error_set(MX_ERR_INVALID_ARG, "bad ctx %lld / prefill chunk %d", (long long)ctx, chunk);
  } else if (!(r = calloc(1, sizeof *r))) {
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  if (st) {
    if (ex->destroy) ex->destroy(impl);
    return st;
  }
  r->ex = ex;
  r->impl = impl;
  r->model = model;
  r->ctx = ctx;
  r->chunk = chunk;
  r->V = mc->vocab_size;
  r->vision_only = cfg->vision_only;
  r->n_caches = r->vision_only ? 0 : 2 * mc->num_layers;
  const int64_t pd[1] = {1};
  mx_type_t pdt = mx_type_tensor(MX_ELEM_I32, 1, pd);
  r->caches = calloc((size_t)(r->n_caches > 0 ? r->n_caches : 1), sizeof *r->caches);
  r->logits = malloc((size_t)r->V * sizeof(float));
  if (!r->caches || !r->logits) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  if (ex->device_caches) {
    // Types only: the executor holds the data.
    mx_type_t *types = malloc((size_t)(r->n_caches > 0 ? r->n_caches : 1) * sizeof *types);
    if (!st && !types) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    for (int32_t j = 0; j < r->n_caches && !st; j++)
      r->caches[j].type = types[j] = mx_session_cache_type(model, j, 1, ctx);
    if (!st) st = ex->device_caches(impl, types, r->n_caches);
    free(types);
  } else {
    for (int32_t j = 0; j < r->n_caches && !st; j++) {
      mx_type_t ct = mx_session_cache_type(model, j, 1, ctx);
      st = mx_tensor_alloc(&r->caches[j], &ct);
    }
  }
  if (!st) st = mx_tensor_alloc(&r->pos0, &pdt);
  r->attn_window = ex->attn_window ? ex->attn_window(impl) : 0;
  for (int64_t w = r->attn_window; !st && w > 0 && w < ctx && r->n_win < MX_RUNNER_MAX_BUCKETS;
       w *= 2)
    r->n_win++;
  if (!st && r->n_win > 0 && !(r->win = calloc((size_t)r->n_win, sizeof *r->win)))
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  if (!st && !r->vision_only) st = add_binding(r, 1, false, r->logits, &r->dec);
  if (!st && !r->vision_only) st = add_buckets(r, r->pre, &r->n_pre, chunk, false, r->logits);
  if (st) {
    mx_graph_runner_destroy(r);
    return st;
  }
  *out = r;
  return MX_OK;
}

mx_status_t mx_runner_grow_all_logits(float **buf, int64_t V, int32_t chunk, int32_t *n_have,
                                      int32_t max_sets, int32_t n, mx_runner_add_all_fn add,
                                      void *ctx) {
  int32_t max_t = chunk < MX_RUNNER_ALL_LOGITS_MAX_T ? chunk : MX_RUNNER_ALL_LOGITS_MAX_T;
  if (max_t < 2) return MX_OK;  // chunk 1: decode calls only
  if (!*buf) *buf = malloc((size_t)max_t * (size_t)V * sizeof(float));
  if (!*buf) return mx_error_set(MX_ERR_NOMEM, "out of memory (all-logits buffer)");
  for (int64_t T = (int64_t)2 << *n_have; T <= max_t && T / 2 < n && *n_have < max_sets; T *= 2) {
    MX_TRY(add(ctx, (int32_t)T));
    (*n_have)++;
  }
  return MX_OK;
}

int32_t mx_runner_next_piece(int32_t n, int32_t done, int32_t max_t, int32_t *start) {
  int32_t rest = n - done, T = 1;
  *start = done;
  while (T * 2 <= rest && T * 2 <= max_t) T *= 2;
  if (rest >= max_t || T == rest) return T;
  int32_t up = T * 2, pieces = __builtin_popcount((unsigned)rest);
  if (pieces >= 2 && up <= n && up - rest <= MX_RUNNER_EXTRA_ROWS_PER_PIECE * (pieces - 1)) {
    *start = n - up;
    return up;
  }
  return T;
}

static mx_status_t add_all_logits(void *ctx, int32_t T) {
  mx_graph_runner_t *r = ctx;
  return add_binding(r, T, true, r->all_logits, &r->all[r->n_all]);
}

// The all-logits bindings, each made on the first prefill of every position's logits that needs
// it; a failure drops the whole set (the next request builds it again).
static mx_status_t ensure_all_logits(mx_graph_runner_t *r, int32_t n) {
  mx_status_t st = mx_runner_grow_all_logits(&r->all_logits, r->V, r->chunk, &r->n_all,
                                             MX_RUNNER_MAX_BUCKETS, n, add_all_logits, r);
  if (st) release_all_logits(r);
  return st;
}

// Binds @vision's input and its features (a buffer of the result's size), then prepares it.
static mx_status_t prepare_vision(mx_graph_runner_t *r) {
  mx_graph_binding_t *v = &r->vis;
  size_t nb = mx_type_nbytes(&v->f->result_types[0]);
  r->features = malloc(nb);
  if (!r->features) return mx_error_set(MX_ERR_NOMEM, "out of memory (image features)");
  mx_graph_bind_features(v, r->features);
  return r->ex->prepare ? r->ex->prepare(r->impl, v) : MX_OK;
}

// @vision and the @prefill_media buckets, on the first image (a one-time allocation, like the
// all-logits set: text prompts never pay for them).
static mx_status_t ensure_media(mx_graph_runner_t *r) {
  if (r->has_vision) return MX_OK;
  const mx_model_config_t *mc = &r->model->config;
  if (!mc->vision.present && !mc->audio.present)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "model_type '%s' takes no images or audio (no vision or audio tower)",
                        mc->model_type);
  r->has_vision = true;
  mx_status_t st = MX_OK;
  // The Qwen towers' @vision depends on the image's grid: bound per grid (vision_grid); @audio
  // on the recording's frame count (audio).
  if (mc->vision.present && mx_vision_fixed_size(&mc->vision)) {
    st =
        mx_graph_bind_entry(r->model, r->ctx, r->V, NULL, 0, 1, 1, false, MX_ENTRY_VISION, &r->vis);
    if (!st) st = prepare_vision(r);
  }
  for (int64_t T = 1; !st && !r->vision_only && T <= r->chunk && r->n_med < MX_RUNNER_MAX_BUCKETS;
       T *= 2) {
    mx_graph_binding_t *b = &r->med[r->n_med++];
    st = mx_graph_bind_entry(r->model, r->ctx, r->V, r->caches, r->n_caches, 1, (int32_t)T, false,
                             MX_ENTRY_MEDIA, b);
    if (!st) st = bind(r, b, r->logits);
  }
  if (st) release_media(r);
  return st;
}

int32_t mx_graph_runner_window(const mx_graph_runner_t *r, int64_t end) {
  int32_t k = 0;
  while (k < r->n_win && (r->attn_window << k) < end) k++;
  return k;
}

// The binding a call of full->T tokens ending at position `end` (exclusive) runs: the smallest
// attention window >= end (made on its first use: one module build and compile per window and
// T, like the all-logits set), else `full`, whose attention reads the whole capacity.
// slot: 0 for @decode, 1 + i for the last-position @prefill pre[i].
static mx_graph_binding_t *windowed(mx_graph_runner_t *r, mx_graph_binding_t *full, int32_t slot,
                                    int64_t end, mx_status_t *st) {
  int32_t k = mx_graph_runner_window(r, end);
  if (k == r->n_win) return full;
  mx_graph_binding_t *b = &r->win[k][slot];
  if (b->f) return b;
  *st = mx_graph_bind_window(r->model, r->ctx, r->attn_window << k, r->V, r->caches, r->n_caches,
                             full->T, b);
  if (!*st) *st = bind(r, b, r->logits);
  if (*st) {
    binding_release(r, b);  // leaves it zeroed: a later call tries again
    return NULL;
  }
  return b;
}

mx_status_t mx_graph_runner_bind_seqs(mx_graph_runner_t *r, int32_t B, int64_t attn_len,
                                      bool rope_offset, const mx_tensor_t *pos0, float *logits,
                                      mx_graph_binding_t *b) {
  int32_t n = B * r->n_caches;
  mx_tensor_t *types = calloc((size_t)(n > 0 ? n : 1), sizeof *types);
  if (!types) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t j = 0; j < n; j++) types[j].type = r->caches[j % r->n_caches].type;  // types only
  mx_status_t st =
      mx_graph_bind_seqs(r->model, r->ctx, attn_len, r->V, types, n, B, rope_offset, b);
  if (!st) {
    b->args[b->tokens_arg] = b->tokens;
    b->args[b->pos0_arg] = *pos0;
    for (int32_t j = 0; j < n; j++) b->args[b->cache_arg[j]] = b->res[b->cache_res[j]] = types[j];
    b->res[b->logits_res].type = b->f->result_types[b->logits_res];
    b->res[b->logits_res].data = (uint8_t *)logits;
    b->res[b->logits_res].nbytes = (size_t)B * (size_t)r->V * sizeof(float);
    if (r->ex->prepare) st = r->ex->prepare(r->impl, b);
  }
  free(types);
  if (st) binding_release(r, b);
  return st;
}

static mx_status_t run(mx_graph_runner_t *r, mx_graph_binding_t *b, int64_t pos0) {
  ((int32_t *)r->pos0.data)[0] = (int32_t)pos0;
  return r->ex->run(r->impl, b);
}

mx_status_t mx_graph_runner_decode(void *state, int32_t id, int64_t pos, float *logits) {
  mx_graph_runner_t *r = state;
  mx_status_t st = MX_OK;
  mx_graph_binding_t *b = windowed(r, &r->dec, 0, pos + 1, &st);
  if (st) return st;
  ((int32_t *)b->tokens.data)[0] = id;
  if ((st = run(r, b, pos))) return st;
  memcpy(logits, r->logits, (size_t)r->V * sizeof(float));
  return MX_OK;
}

mx_status_t mx_graph_runner_prefill(void *state, const int32_t *ids, int32_t n, int64_t pos0,
                                    float *last, float *all) {
  mx_graph_runner_t *r = state;
  if (n <= 0 || n > r->chunk || pos0 < 0 || pos0 + n > r->ctx)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "prefill: %d tokens at position %lld (chunk %d, capacity %lld)", n,
                        (long long)pos0, r->chunk, (long long)r->ctx);
  const size_t V = (size_t)r->V;
  if (all) {
    mx_status_t st = ensure_all_logits(r, n);
    if (st) return st;
  }
  mx_graph_binding_t *set = all ? r->all : r->pre;
  int32_t n_set = all ? r->n_all : r->n_pre;
  int32_t done = 0;
  if (!all) {  // the pieces of mx_runner_next_piece; T = 1 is the decode graph
    int32_t max_t = n_set > 0 ? set[n_set - 1].T : 1;
    while (done < n) {
      int32_t start, T = mx_runner_next_piece(n, done, max_t, &start), i = -1;
      while ((i + 1 < n_set) && set[i + 1].T <= T) i++;
      if ((i >= 0 ? set[i].T : 1) != T)
        return mx_error_set(MX_ERR_RUNTIME, "prefill: no graph of %d tokens", T);
      mx_status_t st = MX_OK;
      mx_graph_binding_t *b = windowed(r, i >= 0 ? &set[i] : &r->dec, i + 1, pos0 + start + T, &st);
      if (st) return st;
      memcpy(b->tokens.data, ids + start, (size_t)b->T * sizeof *ids);
      if ((st = run(r, b, pos0 + start))) return st;
      memcpy(last, (const float *)b->res[b->logits_res].data, V * sizeof(float));
      done = start + b->T;
    }
    return MX_OK;
  }
  // Every position's logits: exact pieces, largest first; T = 1 is the decode graph.
  for (int32_t i = n_set - 1; i >= -1 && done < n; i--) {
    mx_graph_binding_t *full = i >= 0 ? &set[i] : &r->dec;
    while (n - done >= full->T) {
      mx_status_t st = MX_OK;
      // The all-logits set (rare: scoring, echo) always reads the whole capacity.
      mx_graph_binding_t *b =
          all && i >= 0 ? full : windowed(r, full, i + 1, pos0 + done + full->T, &st);
      if (st) return st;
      memcpy(b->tokens.data, ids + done, (size_t)b->T * sizeof *ids);
      if ((st = run(r, b, pos0 + done))) return st;
      const float *L = (const float *)b->res[b->logits_res].data;
      if (b->all_logits) {
        memcpy(last, L + (size_t)(b->T - 1) * V, V * sizeof *L);
        memcpy(all + (size_t)done * V, L, (size_t)b->T * V * sizeof *L);
      } else {
        memcpy(last, L, V * sizeof *L);
        if (all) memcpy(all + (size_t)done * V, L, V * sizeof *L);  // T == 1 (decode)
      }
      done += b->T;
    }
  }
  return MX_OK;
}

mx_status_t mx_graph_runner_vision(void *state, const float *pixels, float *features) {
  mx_graph_runner_t *r = state;
  mx_status_t st = ensure_media(r);
  return st ? st : mx_graph_run_vision(r->ex, r->impl, &r->vis, pixels, features);
}

mx_status_t mx_graph_run_vision(const mx_graph_exec_t *ex, void *impl, mx_graph_binding_t *vis,
                                const float *pixels, float *features) {
  memcpy(vis->input.data, pixels, vis->input.nbytes);
  mx_status_t st = ex->run(impl, vis);
  if (!st) memcpy(features, vis->res[0].data, vis->res[0].nbytes);
  return st;
}

mx_status_t mx_graph_runner_vision_grid(void *state, const float *pixels, int32_t grid_h,
                                        int32_t grid_w, float *features) {
  mx_graph_runner_t *r = state;
  mx_status_t st = ensure_media(r);
  if (st) return st;
  if (r->vis_grid[0] != grid_h || r->vis_grid[1] != grid_w) {  // a new grid: rebuild @vision
    release_vision(r);
    st = mx_graph_bind_vision_grid(r->model, grid_h, grid_w, &r->vis);
    if (!st) st = prepare_vision(r);
    if (st) {
      release_vision(r);
      return st;
    }
    r->vis_grid[0] = grid_h;
    r->vis_grid[1] = grid_w;
  }
  return mx_graph_run_vision(r->ex, r->impl, &r->vis, pixels, features);
}

mx_status_t mx_graph_run_vision_pooled(const mx_graph_exec_t *ex, void *impl,
                                       mx_graph_binding_t *vis, const float *pixels,
                                       const int32_t *pooling, float *features) {
  memcpy(vis->pooling.data, pooling, vis->pooling.nbytes);
  return mx_graph_run_vision(ex, impl, vis, pixels, features);
}

mx_status_t mx_graph_runner_vision_pooled(void *state, const float *pixels, int32_t crops,
                                          const int32_t *pooling, int32_t tokens, int32_t pool,
                                          float *features) {
  mx_graph_runner_t *r = state;
  mx_status_t st = ensure_media(r);
  if (st) return st;
  if (r->vis_grid[0] != crops || r->vis_grid[1] != tokens || r->vis_grid[2] != pool) {
    release_vision(r);  // a new geometry: rebuild @vision
    st = mx_graph_bind_vision_pooled(r->model, crops, tokens, pool, &r->vis);
    if (!st) st = prepare_vision(r);
    if (st) {
      release_vision(r);
      return st;
    }
    r->vis_grid[0] = crops;
    r->vis_grid[1] = tokens;
    r->vis_grid[2] = pool;
  }
  return mx_graph_run_vision_pooled(r->ex, r->impl, &r->vis, pixels, pooling, features);
}

// The @prefill_media binding of a piece of T tokens: the power-of-two bucket, else med_odd
// bound for exactly T (an image's block of another length).
static mx_status_t media_binding(mx_graph_runner_t *r, int32_t T, mx_graph_binding_t **out) {
  for (int32_t i = 0; i < r->n_med; i++)
    if (r->med[i].T == T) {
      *out = &r->med[i];
      return MX_OK;
    }
  if (r->med_odd.mod && r->med_odd.T == T) {
    *out = &r->med_odd;
    return MX_OK;
  }
  if (r->med_odd.mod) binding_release(r, &r->med_odd);
  mx_status_t st = mx_graph_bind_entry(r->model, r->ctx, r->V, r->caches, r->n_caches, 1, T, false,
                                       MX_ENTRY_MEDIA, &r->med_odd);
  if (!st) st = bind(r, &r->med_odd, r->logits);
  if (st) {
    binding_release(r, &r->med_odd);
    return st;
  }
  *out = &r->med_odd;
  return MX_OK;
}

mx_status_t mx_graph_runner_audio(void *state, const float *features, const int32_t *mask,
                                  int32_t frames, float *rows) {
  mx_graph_runner_t *r = state;
  mx_status_t st = ensure_media(r);
  if (st) return st;
  if (r->aud_frames != frames) {  // another frame count: rebuild @audio
    release_audio(r);
    st = mx_graph_bind_audio(r->model, frames, &r->aud);
    if (!st) {
      r->aud_rows = malloc(mx_type_nbytes(&r->aud.f->result_types[0]));
      if (!r->aud_rows) st = mx_error_set(MX_ERR_NOMEM, "out of memory (audio rows)");
    }
    if (!st) {
      mx_graph_bind_features(&r->aud, r->aud_rows);
      if (r->ex->prepare) st = r->ex->prepare(r->impl, &r->aud);
    }
    if (st) {
      release_audio(r);
      return st;
    }
    r->aud_frames = frames;
  }
  mx_graph_binding_t *a = &r->aud;
  memcpy(a->audio_mask.data, mask, a->audio_mask.nbytes);
  return mx_graph_run_vision(r->ex, r->impl, a, features, rows);
}

mx_status_t mx_graph_media_inputs(const mx_model_t *model, mx_graph_binding_t *b,
                                  const float *media, const int32_t *positions, size_t stride) {
  if ((positions == NULL) != (b->positions_arg < 0))
    return mx_error_set(MX_ERR_INVALID_ARG, "@prefill_media %s M-RoPE positions",
                        positions ? "takes no" : "needs");
  const size_t H = (size_t)model->config.hidden_size, T = (size_t)b->T;
  const size_t W = (size_t)mx_vision_feature_width(&model->config), L = W / H - 1;
  float *in = (float *)b->input.data, *deep = (float *)b->deepstack.data;
  for (int32_t s = 0; positions && s < 3; s++)
    memcpy((int32_t *)b->positions.data + (size_t)s * T, positions + (size_t)s * stride,
           T * sizeof *positions);
  if (!media) {
    memset(in, 0, b->input.nbytes);
    if (deep) memset(deep, 0, b->deepstack.nbytes);
    return MX_OK;
  }
  for (size_t t = 0; t < T; t++) {
    memcpy(in + t * H, media + t * W, H * sizeof *media);
    for (size_t l = 0; deep && l < L; l++)
      memcpy(deep + (l * T + t) * H, media + t * W + (1 + l) * H, H * sizeof *media);
  }
  return MX_OK;
}

mx_status_t mx_graph_runner_prefill_media(void *state, const int32_t *ids, const float *media,
                                          int32_t n, int64_t pos0, float *last) {
  return mx_graph_runner_prefill_mrope(state, ids, media, NULL, n, pos0, last);
}

mx_status_t mx_graph_runner_prefill_mrope(void *state, const int32_t *ids, const float *media,
                                          const int32_t *positions, int32_t n, int64_t pos0,
                                          float *last) {
  mx_graph_runner_t *r = state;
  // More than a chunk only as an image's block, which runs whole (mx_vision_prefill_take).
  const mx_vision_config_t *vb = &r->model->config.vision;
  if (n <= 0 || (n > r->chunk && !(mx_vision_blocks(vb) && mx_vision_block_token(vb, ids[0]))) ||
      pos0 < 0 || pos0 + n > r->ctx)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "prefill: %d tokens at position %lld (chunk %d, capacity %lld)", n,
                        (long long)pos0, r->chunk, (long long)r->ctx);
  mx_status_t st = ensure_media(r);
  if (st) return st;
  const size_t W = (size_t)mx_vision_feature_width(&r->model->config);
  const mx_vision_config_t *vc = &r->model->config.vision;
  int32_t max_t = r->med[r->n_med - 1].T;
  // Pieces of power-of-two graphs, largest first, but never one that cuts an image's block
  // (mx_vision_media_piece: a block runs whole, in a graph of its length).
  for (int32_t done = 0, T; done < n; done += T) {
    T = mx_vision_media_piece(vc, ids + done, n - done, max_t);
    mx_graph_binding_t *b = NULL;
    if ((st = media_binding(r, T, &b))) return st;
    memcpy(b->tokens.data, ids + done, (size_t)T * sizeof *ids);
    st = mx_graph_media_inputs(r->model, b, media ? media + (size_t)done * W : NULL,
                               positions ? positions + done : NULL, (size_t)n);
    if (st || (st = run(r, b, pos0 + done))) return st;
  }
  memcpy(last, r->logits, (size_t)r->V * sizeof *last);
  return MX_OK;
}

void mx_graph_runner_reset(void *state) {
  mx_graph_runner_t *r = state;
  // Not needed for correctness (every visible row is written before it is read), but a reset
  // session then holds exactly what a new one does.
  for (int32_t j = 0; j < r->n_caches; j++)
    if (r->caches[j].data) memset(r->caches[j].data, 0, r->caches[j].nbytes);
}

mx_status_t mx_backend_check_host_device(const char *backend, const mx_backend_opts_t *o) {
  if (o->device && strcmp(o->device, "cpu") != 0)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "device '%s': the %s backend runs on the host (device \"cpu\" or none)",
                        o->device, backend);
  return MX_OK;
}

void mx_graph_runner_release(mx_graph_runner_t *r, mx_graph_binding_t *b) { binding_release(r, b); }
