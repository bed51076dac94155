// The "interp" backend: runs the model's @prefill / @decode graphs with the reference
// interpreter. Slow, obviously correct: the oracle the fast backends are compared with.
//
// Weight arguments are bound zero-copy to the mmapped checkpoint tensors (the interpreter only
// reads its arguments). The KV caches are f32 tensors owned here; each call returns fresh cache
// tensors, which replace the old ones (pointer swap, no copy).
//
// Prefill lengths: @prefill has a static T. Padding a short chunk up to T with dummy ids would
// be harmless for attention (DESIGN.md, mx.attention: every query writes its K/V before
// attending and sees only keys <= its position, so padded slots beyond the real tokens are
// invisible now and rewritten by the next call before any query can see them) but it has two
// costs: a prompt of 5 tokens would cost as much as one of 64 (the interpreter's work is
// proportional to T), and dynamic_update_slice clamps its start index so the update fits in the
// cache: once pos0 + T > S, the padded write would land at S - T, on top of real tokens. So we
// never pad. Create builds one module per power of two T = 2, 4, ..., <= the chunk (B = 1,
// S = ctx, all logits), plus @decode for T = 1, and a prefill of n tokens runs as the binary
// decomposition of n (13 = 8 + 4 + 1): every call is exact, at most log2(chunk) + 1 calls.
// The modules are small (weights are arguments, not constants) and built once.
#include <stdlib.h>
#include <string.h>

#include "session/batch_state.h"
#include "session/graph_binding.h"
#include "session/session_internal.h"

typedef mx_graph_binding_t fn_binding_t;

enum { MAX_BUCKETS = 31 };

typedef struct interp_state {
  int64_t ctx;
  int32_t chunk;
  int32_t V;
  int32_t n_caches;     // 2L
  mx_tensor_t *caches;  // [2L], owned
  mx_tensor_t pos0;     // i32 [1]
  fn_binding_t dec;     // @decode (T = 1)
  int32_t n_pre;
  fn_binding_t pre[MAX_BUCKETS];  // @prefill with T = 2, 4, 8, ... (pre[i].T = 2 << i)
} interp_state_t;

static void binding_free(fn_binding_t *b) { mx_graph_binding_free(b); }
static void interp_destroy(void *state) {
  interp_state_t *s = state;
  if (!s) return;
  for (int32_t j = 0; s->caches && j < s->n_caches; j++) mx_tensor_free(&s->caches[j]);
  free(s->caches);
  mx_tensor_free(&s->pos0);
  binding_free(&s->dec);
  for (int32_t i = 0; i < s->n_pre; i++) binding_free(&s->pre[i]);
  free(s);
}

static mx_status_t interp_create(const mx_model_t *model, int64_t ctx, int32_t prefill_chunk,
                                 void **state) {
  *state = NULL;
  const mx_model_config_t *cfg = &model->config;
  if (!model->ckpt) return mx_error_set(MX_ERR_INVALID_ARG, "model has no checkpoint");
  if (ctx <= 0 || ctx > INT32_MAX || prefill_chunk <= 0 || prefill_chunk > ctx)
    return mx_error_set(MX_ERR_INVALID_ARG, "interp: bad ctx %lld / prefill chunk %d",
                        (long long)ctx, prefill_chunk);
  interp_state_t *s = calloc(1, sizeof *s);
  if (!s) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  s->ctx = ctx;
  s->chunk = prefill_chunk;
  s->V = cfg->vocab_size;
  s->n_caches = 2 * cfg->num_layers;
  mx_status_t st = MX_OK;
  const int64_t cdims[4] = {1, cfg->num_kv_heads, ctx, cfg->head_dim}, pd[1] = {1};
  mx_type_t ct = mx_type_tensor(MX_ELEM_F32, 4, cdims), pdt = mx_type_tensor(MX_ELEM_I32, 1, pd);
  s->caches = calloc((size_t)(s->n_caches > 0 ? s->n_caches : 1), sizeof *s->caches);
  if (!s->caches) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t j = 0; j < s->n_caches && !st; j++) st = mx_tensor_alloc(&s->caches[j], &ct);
  if (!st) st = mx_tensor_alloc(&s->pos0, &pdt);
  if (!st) st = mx_graph_bind(model, s->ctx, s->V, s->caches, s->n_caches, 1, &s->dec);
  for (int64_t T = 2; !st && T <= prefill_chunk && s->n_pre < MAX_BUCKETS; T *= 2)
    st =
        mx_graph_bind(model, s->ctx, s->V, s->caches, s->n_caches, (int32_t)T, &s->pre[s->n_pre++]);
  if (st) {
    interp_destroy(s);
    return st;
  }
  *state = s;
  return MX_OK;
}

// Runs one bound function with the current caches; on success the new caches replace the old
// ones and the logits result stays in b->res[logits_res] for the caller (who frees it).
static mx_status_t run_fn(interp_state_t *s, fn_binding_t *b, int64_t pos0) {
  ((int32_t *)s->pos0.data)[0] = (int32_t)pos0;
  b->args[b->tokens_arg] = b->tokens;
  b->args[b->pos0_arg] = s->pos0;
  for (int32_t j = 0; j < s->n_caches; j++) b->args[b->cache_arg[j]] = s->caches[j];
  mx_status_t st = mx_interp_run(b->mod, b->f, b->args, b->n_args, b->res, NULL);
  if (st) return mx_error_prefix(st, "@%s", b->f->name);
  for (int32_t j = 0; j < s->n_caches; j++) {
    mx_tensor_free(&s->caches[j]);
    s->caches[j] = b->res[b->cache_res[j]];
    memset(&b->res[b->cache_res[j]], 0, sizeof b->res[0]);
  }
  for (int32_t r = 0; r < b->f->n_results; r++)
    if (r != b->logits_res) mx_tensor_free(&b->res[r]);  // anything else (none today)
  return MX_OK;
}

static mx_status_t interp_decode(void *state, int32_t id, int64_t pos, float *logits) {
  interp_state_t *s = state;
  ((int32_t *)s->dec.tokens.data)[0] = id;
  mx_status_t st = run_fn(s, &s->dec, pos);
  if (st) return st;
  mx_tensor_t *lr = &s->dec.res[s->dec.logits_res];
  memcpy(logits, lr->data, (size_t)s->V * sizeof(float));
  mx_tensor_free(lr);
  return MX_OK;
}

static mx_status_t interp_prefill(void *state, const int32_t *ids, int32_t n, int64_t pos0,
                                  float *last, float *all) {
  interp_state_t *s = state;
  if (n <= 0 || n > s->chunk || pos0 < 0 || pos0 + n > s->ctx)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "interp prefill: %d tokens at position %lld (chunk %d, capacity %lld)", n,
                        (long long)pos0, s->chunk, (long long)s->ctx);
  const size_t V = (size_t)s->V;
  int32_t done = 0;
  for (int32_t i = s->n_pre - 1; i >= -1 && done < n; i--) {
    fn_binding_t *b = i >= 0 ? &s->pre[i] : &s->dec;
    // Largest piece first; n <= chunk < 2 * the largest T, so each size runs at most once.
    while (n - done >= b->T) {
      memcpy(b->tokens.data, ids + done, (size_t)b->T * sizeof *ids);
      mx_status_t st = run_fn(s, b, pos0 + done);
      if (st) return st;
      mx_tensor_t *lr = &b->res[b->logits_res];
      const float *L = (const float *)lr->data;
      memcpy(last, L + (size_t)(b->T - 1) * V, V * sizeof *L);
      if (all) memcpy(all + (size_t)done * V, L, (size_t)b->T * V * sizeof *L);
      mx_tensor_free(lr);
      done += b->T;
    }
  }
  return MX_OK;
}

static void interp_reset(void *state) {
  interp_state_t *s = state;
  // Not needed for correctness (every visible slot is written before it is read), but a reset
  // session then holds exactly what a new one does.
  for (int32_t j = 0; j < s->n_caches; j++) memset(s->caches[j].data, 0, s->caches[j].nbytes);
}

const mx_backend_t mx_backend_interp = {
    .name = "interp",
    .caps = MX_CAP_PREFILL_ALL_LOGITS | MX_CAP_BATCH,
    .create = interp_create,
    .prefill = interp_prefill,
    .decode = interp_decode,
    .reset = interp_reset,
    .destroy = interp_destroy,
};

// ---- Batched decoding (batch_state.h): the interpreter returns fresh caches, copied back ----

typedef struct interp_batch_impl {
  int32_t n_res;
  mx_tensor_t *res;  // [n_res] the interpreter's results of the current call
} interp_batch_impl_t;

static mx_status_t interp_batch_prepare(void *impl, fn_binding_t *b) {
  interp_batch_impl_t *c = impl;
  if (b->f->n_results <= c->n_res) return MX_OK;
  mx_tensor_t *r = realloc(c->res, (size_t)b->f->n_results * sizeof *r);
  if (!r) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  memset(r + c->n_res, 0, (size_t)(b->f->n_results - c->n_res) * sizeof *r);
  c->res = r;
  c->n_res = b->f->n_results;
  return MX_OK;
}

static mx_status_t interp_batch_run(void *impl, fn_binding_t *b) {
  interp_batch_impl_t *c = impl;
  mx_status_t st = mx_interp_run(b->mod, b->f, b->args, b->n_args, c->res, NULL);
  if (st) return mx_error_prefix(st, "@%s", b->f->name);
  for (int32_t r = 0; r < b->f->n_results; r++) {
    // b->res[r] is the caller's buffer (a cache slice or the logits), of the result's size.
    if (b->res[r].data && c->res[r].data)
      memcpy(b->res[r].data, c->res[r].data, mx_type_nbytes(&b->f->result_types[r]));
    mx_tensor_free(&c->res[r]);
  }
  return MX_OK;
}

static void interp_batch_impl_destroy(void *impl) {
  interp_batch_impl_t *c = impl;
  if (!c) return;
  free(c->res);
  free(c);
}

static const mx_bstate_exec_t g_interp_batch_exec = {
    .prepare = interp_batch_prepare,
    .run = interp_batch_run,
    .destroy = interp_batch_impl_destroy,
};

static mx_status_t interp_batch_create(const mx_model_t *model, int64_t ctx, int32_t prefill_chunk,
                                       int32_t n_slots, void **state) {
  *state = NULL;
  interp_batch_impl_t *c = calloc(1, sizeof *c);
  if (!c) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_bstate_t *bs = NULL;
  mx_status_t st =
      mx_bstate_create(model, ctx, prefill_chunk, n_slots, &g_interp_batch_exec, c, &bs);
  *state = bs;
  return st;
}

static void interp_batch_destroy(void *state) { mx_bstate_destroy(state); }

const mx_backend_batch_t mx_backend_interp_batch = {
    .create = interp_batch_create,
    .prefill = mx_bstate_prefill,
    .decode = mx_bstate_decode,
    .reset = mx_bstate_reset,
    .destroy = interp_batch_destroy,
};
