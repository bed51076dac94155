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

#include "session/session_internal.h"

typedef struct fn_binding {
  mx_module_t *mod;    // owned
  int32_t T;           // static token count
  mx_tensor_t tokens;  // i32 [1, T], owned
  mx_func_t *f;
  int32_t n_args;
  mx_tensor_t *args;  // [n_args]; weights borrowed from the checkpoint, caches refreshed per call
  mx_tensor_t *res;   // [f->n_results] filled by the interpreter
  int32_t tokens_arg, pos0_arg;
  int32_t *cache_arg;  // [2L]: argument index of cache j (k_l = 2l, v_l = 2l+1)
  int32_t *cache_res;  // [2L]: result index holding the new cache j
  int32_t logits_res;
} fn_binding_t;

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

static void binding_free(fn_binding_t *b) {
  mx_module_destroy(b->mod);
  mx_tensor_free(&b->tokens);
  free(b->args);
  free(b->res);
  free(b->cache_arg);
  free(b->cache_res);
}

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

// Builds the module with @prefill of T tokens (T = 1: only @decode is used), then binds every
// argument of the function: weights to the checkpoint, tokens/pos0 to our small tensors, caches
// (types checked here, data refreshed per call). Records where the results are.
static mx_status_t bind(interp_state_t *s, const mx_model_t *model, int32_t T, fn_binding_t *b) {
  const char *fname = T == 1 ? "decode" : "prefill";
  mx_graph_opts_t go = {
      .batch = 1, .ctx = s->ctx, .prefill_len = T, .all_logits = true, .kv_dtype = MX_ELEM_F32};
  mx_status_t st0 = mx_model_build_graph(&model->config, model->ckpt, &go, &b->mod);
  if (st0) return st0;
  b->T = T;
  const int64_t tok_dims[2] = {1, T}, pos_dims[1] = {1};
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
  b->cache_arg = malloc((size_t)s->n_caches * sizeof *b->cache_arg);
  b->cache_res = malloc((size_t)s->n_caches * sizeof *b->cache_res);
  if (!b->args || !b->res || !b->cache_arg || !b->cache_res)
    return mx_error_set(MX_ERR_NOMEM, "out of memory binding @%s", fname);
  for (int32_t j = 0; j < s->n_caches; j++) b->cache_arg[j] = b->cache_res[j] = -1;
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
        // Zero-copy: the interpreter never writes its arguments.
        b->args[i].type = *at;
        b->args[i].data = (uint8_t *)(uintptr_t)w->data;
        b->args[i].nbytes = w->nbytes;
        break;
      }
      case MX_ARG_TOKENS:
        if (!type_is(at, MX_ELEM_I32, 2, tok_dims))
          return mx_error_set(MX_ERR_INVALID_ARG,
                              "@%s tokens argument is %s, expected [1, %lld] i32", fname,
                              mx_type_str(at, b1, sizeof b1), (long long)T);
        b->tokens_arg = i;
        break;
      case MX_ARG_POS0:
        if (!type_is(at, MX_ELEM_I32, 1, pos_dims))
          return mx_error_set(MX_ERR_INVALID_ARG, "@%s pos0 argument is %s, expected [1] i32",
                              fname, mx_type_str(at, b1, sizeof b1));
        b->pos0_arg = i;
        break;
      case MX_ARG_K_CACHE:
      case MX_ARG_V_CACHE: {
        int32_t j = 2 * info.layer + (info.role == MX_ARG_V_CACHE);
        if (info.layer < 0 || j >= s->n_caches || b->cache_arg[j] >= 0)
          return mx_error_set(MX_ERR_INVALID_ARG, "@%s argument %d: bad or repeated cache layer %d",
                              fname, i, info.layer);
        if (!mx_type_equal(at, &s->caches[j].type))
          return mx_error_set(MX_ERR_INVALID_ARG, "@%s argument %d (%s) is %s, the cache is %s",
                              fname, i, info.name, mx_type_str(at, b1, sizeof b1),
                              mx_type_str(&s->caches[j].type, b2, sizeof b2));
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
      default:
        return mx_error_set(MX_ERR_INVALID_ARG, "@%s argument %d: unknown role %d", fname, i,
                            (int)info.role);
    }
  }
  if (b->tokens_arg < 0 || b->pos0_arg < 0 || n_cache_seen != s->n_caches)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "@%s lacks a tokens or pos0 argument, or some of the %d caches", fname,
                        s->n_caches);
  // Logits: [1, T, V] from @prefill (all positions), [1, V] from @decode.
  b->logits_res = 0;
  const int64_t lp[3] = {1, T, s->V}, ld[2] = {1, s->V};
  bool ok = f->n_results >= 1 && (T == 1 ? type_is(&f->result_types[0], MX_ELEM_F32, 2, ld)
                                         : type_is(&f->result_types[0], MX_ELEM_F32, 3, lp));
  if (!ok) {
    char b1[96];
    return mx_error_set(MX_ERR_INVALID_ARG, "@%s result 0 is %s, expected the f32 logits", fname,
                        f->n_results ? mx_type_str(&f->result_types[0], b1, sizeof b1) : "missing");
  }
  return MX_OK;
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
  if (!st) st = bind(s, model, 1, &s->dec);
  for (int64_t T = 2; !st && T <= prefill_chunk && s->n_pre < MAX_BUCKETS; T *= 2)
    st = bind(s, model, (int32_t)T, &s->pre[s->n_pre++]);
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
    .caps = MX_CAP_PREFILL_ALL_LOGITS,
    .create = interp_create,
    .prefill = interp_prefill,
    .decode = interp_decode,
    .reset = interp_reset,
    .destroy = interp_destroy,
};
