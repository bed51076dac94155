// The "cpu" backend: runs the model's @prefill / @decode graphs as compiled CPU plans
// (include/mlxcel/cpu_plan.h) on a persistent thread pool.
//
// Graph building and binding are those of the interp backend (same modules: one @prefill per
// power-of-two T <= the chunk plus @decode, ADR 0002; a prefill of n tokens runs as the binary
// decomposition of n). Weights are bound zero-copy to the mmapped checkpoint and packed once into
// a weight cache shared by all the plans of the session (prefill and decode read the same packed
// copy). The KV caches are owned here and updated in place: every cache result aliases its
// argument (tf.aliasing_output), the plan writes the new rows straight into our buffers.
//
// Threads: $MLXCEL_THREADS (a positive integer) else the physical cores.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/cpu_plan.h"
#include "session/session_internal.h"

typedef struct fn_binding {
  mx_module_t *mod;    // owned
  int32_t T;           // static token count
  mx_tensor_t tokens;  // i32 [1, T], owned
  mx_func_t *f;
  int32_t n_args;
  mx_tensor_t *args;  // [n_args]; weights borrowed from the checkpoint, caches ours
  mx_tensor_t *res;   // [f->n_results]: caches point at ours, logits at s->logits_buf
  int32_t tokens_arg, pos0_arg;
  int32_t *cache_arg;  // [2L]: argument index of cache j (k_l = 2l, v_l = 2l+1)
  int32_t *cache_res;  // [2L]: result index holding the new cache j
  int32_t logits_res;
  mx_cpu_plan_t *plan;
} fn_binding_t;

enum { MAX_BUCKETS = 31 };

typedef struct cpu_state {
  int64_t ctx;
  int32_t chunk;
  int32_t V;
  int32_t n_caches;     // 2L
  mx_tensor_t *caches;  // [2L], owned
  mx_tensor_t pos0;     // i32 [1]
  float *logits_buf;    // [chunk * V]
  mx_cpu_pool_t *pool;
  mx_cpu_weights_t *weights;
  fn_binding_t dec;  // @decode (T = 1)
  int32_t n_pre;
  fn_binding_t pre[MAX_BUCKETS];  // @prefill with T = 2, 4, 8, ... (pre[i].T = 2 << i)
} cpu_state_t;

static void binding_free(fn_binding_t *b) {
  mx_cpu_plan_destroy(b->plan);
  mx_module_destroy(b->mod);
  mx_tensor_free(&b->tokens);
  free(b->args);
  free(b->res);
  free(b->cache_arg);
  free(b->cache_res);
}

static void cpu_destroy(void *state) {
  cpu_state_t *s = state;
  if (!s) return;
  binding_free(&s->dec);
  for (int32_t i = 0; i < s->n_pre; i++) binding_free(&s->pre[i]);
  mx_cpu_weights_destroy(s->weights);
  mx_cpu_pool_destroy(s->pool);
  for (int32_t j = 0; s->caches && j < s->n_caches; j++) mx_tensor_free(&s->caches[j]);
  free(s->caches);
  free(s->logits_buf);
  mx_tensor_free(&s->pos0);
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
static mx_status_t bind(cpu_state_t *s, const mx_model_t *model, int32_t T, fn_binding_t *b) {
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

// Binds the per-call pieces (tokens, pos0, caches, result buffers) and compiles the plan.
static mx_status_t compile_binding(cpu_state_t *s, fn_binding_t *b) {
  b->args[b->tokens_arg] = b->tokens;
  b->args[b->pos0_arg] = s->pos0;
  for (int32_t j = 0; j < s->n_caches; j++) {
    b->args[b->cache_arg[j]] = s->caches[j];
    b->res[b->cache_res[j]] = s->caches[j];  // in place
  }
  b->res[b->logits_res].type = b->f->result_types[b->logits_res];
  b->res[b->logits_res].data = (uint8_t *)s->logits_buf;
  b->res[b->logits_res].nbytes = (size_t)b->T * (size_t)s->V * sizeof(float);
  for (int32_t r = 0; r < b->f->n_results; r++)
    if (!b->res[r].data)
      return mx_error_set(MX_ERR_INVALID_ARG, "@%s: unexpected result %d", b->f->name, r);
  mx_cpu_compile_opts_t o = {.args = b->args, .weights = s->weights, .pool = s->pool};
  return mx_cpu_compile(b->mod, b->f, &o, &b->plan);
}

static mx_status_t threads_from_env(int *n) {
  *n = 0;
  const char *e = getenv("MLXCEL_THREADS");
  if (!e || !*e) return MX_OK;
  char *end = NULL;
  long v = strtol(e, &end, 10);
  if (*end || v <= 0 || v > 256)
    return mx_error_set(MX_ERR_INVALID_ARG, "MLXCEL_THREADS='%s': expected an integer in 1..256",
                        e);
  *n = (int)v;
  return MX_OK;
}

static mx_status_t cpu_create(const mx_model_t *model, int64_t ctx, int32_t prefill_chunk,
                              void **state) {
  *state = NULL;
  const mx_model_config_t *cfg = &model->config;
  if (!model->ckpt) return mx_error_set(MX_ERR_INVALID_ARG, "model has no checkpoint");
  if (ctx <= 0 || ctx > INT32_MAX || prefill_chunk <= 0 || prefill_chunk > ctx)
    return mx_error_set(MX_ERR_INVALID_ARG, "cpu: bad ctx %lld / prefill chunk %d", (long long)ctx,
                        prefill_chunk);
  int nthreads = 0;
  mx_status_t st = threads_from_env(&nthreads);
  if (st) return st;
  cpu_state_t *s = calloc(1, sizeof *s);
  if (!s) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  s->ctx = ctx;
  s->chunk = prefill_chunk;
  s->V = cfg->vocab_size;
  s->n_caches = 2 * cfg->num_layers;
  const int64_t cdims[4] = {1, cfg->num_kv_heads, ctx, cfg->head_dim}, pd[1] = {1};
  mx_type_t ct = mx_type_tensor(MX_ELEM_F32, 4, cdims), pdt = mx_type_tensor(MX_ELEM_I32, 1, pd);
  s->caches = calloc((size_t)(s->n_caches > 0 ? s->n_caches : 1), sizeof *s->caches);
  s->logits_buf = malloc((size_t)prefill_chunk * (size_t)s->V * sizeof(float));
  if (!s->caches || !s->logits_buf) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t j = 0; j < s->n_caches && !st; j++) st = mx_tensor_alloc(&s->caches[j], &ct);
  if (!st) st = mx_tensor_alloc(&s->pos0, &pdt);
  if (!st) st = mx_cpu_pool_create(nthreads, &s->pool);
  if (!st) st = mx_cpu_weights_create(NULL, &s->weights);
  if (!st) st = bind(s, model, 1, &s->dec);
  if (!st) st = compile_binding(s, &s->dec);
  for (int64_t T = 2; !st && T <= prefill_chunk && s->n_pre < MAX_BUCKETS; T *= 2) {
    fn_binding_t *b = &s->pre[s->n_pre++];
    st = bind(s, model, (int32_t)T, b);
    if (!st) st = compile_binding(s, b);
  }
  if (st) {
    cpu_destroy(s);
    return st;
  }
  *state = s;
  return MX_OK;
}

static mx_status_t run_fn(cpu_state_t *s, fn_binding_t *b, int64_t pos0) {
  ((int32_t *)s->pos0.data)[0] = (int32_t)pos0;
  mx_status_t st = mx_cpu_plan_run(b->plan, s->pool, b->args, b->n_args, b->res);
  return st ? mx_error_prefix(st, "cpu") : MX_OK;
}

static mx_status_t cpu_decode(void *state, int32_t id, int64_t pos, float *logits) {
  cpu_state_t *s = state;
  ((int32_t *)s->dec.tokens.data)[0] = id;
  mx_status_t st = run_fn(s, &s->dec, pos);
  if (st) return st;
  memcpy(logits, s->logits_buf, (size_t)s->V * sizeof(float));
  return MX_OK;
}

static mx_status_t cpu_prefill(void *state, const int32_t *ids, int32_t n, int64_t pos0,
                               float *last, float *all) {
  cpu_state_t *s = state;
  if (n <= 0 || n > s->chunk || pos0 < 0 || pos0 + n > s->ctx)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "cpu prefill: %d tokens at position %lld (chunk %d, capacity %lld)", n,
                        (long long)pos0, s->chunk, (long long)s->ctx);
  const size_t V = (size_t)s->V;
  int32_t done = 0;
  for (int32_t i = s->n_pre - 1; i >= -1 && done < n; i--) {
    fn_binding_t *b = i >= 0 ? &s->pre[i] : &s->dec;
    while (n - done >= b->T) {
      memcpy(b->tokens.data, ids + done, (size_t)b->T * sizeof *ids);
      mx_status_t st = run_fn(s, b, pos0 + done);
      if (st) return st;
      const float *L = s->logits_buf;
      memcpy(last, L + (size_t)(b->T - 1) * V, V * sizeof *L);
      if (all) memcpy(all + (size_t)done * V, L, (size_t)b->T * V * sizeof *L);
      done += b->T;
    }
  }
  return MX_OK;
}

static void cpu_reset(void *state) {
  cpu_state_t *s = state;
  for (int32_t j = 0; j < s->n_caches; j++) memset(s->caches[j].data, 0, s->caches[j].nbytes);
}

const mx_backend_t mx_backend_cpu = {
    .name = "cpu",
    .caps = MX_CAP_PREFILL_ALL_LOGITS,
    .create = cpu_create,
    .prefill = cpu_prefill,
    .decode = cpu_decode,
    .reset = cpu_reset,
    .destroy = cpu_destroy,
};
