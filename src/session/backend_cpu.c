// The "cpu" backend: runs the model's @prefill / @decode graphs as compiled CPU plans
// (include/mlxcel/cpu_plan.h) on a persistent thread pool.
//
// Graph building and binding are shared with the interp backend (graph_binding.h): one
// @prefill per power-of-two T <= the chunk plus @decode (ADR 0002); a prefill of n tokens runs
// as the binary decomposition of n. The default prefill plans return the logits of the last
// position only (ADR 0003: the LM head on every position cost more than the rest of a
// 64-token chunk on small models); a prefill asked for every position's logits uses a second set
// of plans, T <= ALL_LOGITS_MAX_T, compiled on the first such request (a one-time allocation;
// prefills without all-logits and decode steps never allocate). Weights are bound zero-copy to
// the mmapped checkpoint and packed once into a weight cache shared by all the plans of the
// session. The KV caches are owned here and updated in place: every cache result aliases its
// argument (tf.aliasing_output), the plan writes the new rows straight into our buffers.
//
// Threads: $MLXCEL_THREADS (a positive integer) else the physical cores.
// Profiling: $MLXCEL_CPU_PROFILE=1 times every plan step (mx_cpu_plan_set_profile; steps no
// longer overlap) and prints each used plan's report to stderr when the session is destroyed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/cpu_plan.h"
#include "session/batch_state.h"
#include "session/graph_binding.h"
#include "session/session_internal.h"

typedef mx_graph_binding_t fn_binding_t;

// ALL_LOGITS_MAX_T: the largest all-logits prefill call; its logits buffer is T x V floats
// (32 MiB at T = 64 and a 128K vocabulary) and the LM head dominates such a call anyway.
// DEFAULT_CHUNK: the default prefill chunk (ADR 0003): with the last position's logits only, a
// 512-token call costs ~30% less per token than 64-token calls (the weights are streamed once
// per call, and the GEMM reuses each weight panel for more rows).
enum { MAX_BUCKETS = 31, ALL_LOGITS_MAX_T = 64, DEFAULT_CHUNK = 512 };

// Prefill plans for T = 2, 4, 8, ... (b[i].T = 2 << i).
typedef struct bucket_set {
  int32_t n;
  fn_binding_t b[MAX_BUCKETS];
} bucket_set_t;

typedef struct cpu_state {
  const mx_model_t *model;
  int64_t ctx;
  int32_t chunk;
  int32_t V;
  int32_t n_caches;     // 2L
  mx_tensor_t *caches;  // [2L], owned
  mx_tensor_t pos0;     // i32 [1]
  float *logits_buf;    // [V]: decode and last-position prefill results
  float *all_buf;       // [min(chunk, ALL_LOGITS_MAX_T) * V], with the all-logits plans
  void *arena;          // intermediates of the decode and last-position prefill plans
  mx_cpu_pool_t *pool;
  mx_cpu_weights_t *weights;
  bool profile;
  fn_binding_t dec;  // @decode (T = 1)
  bucket_set_t pre;  // @prefill, logits of the last position
  bucket_set_t all;  // @prefill, logits of every position (n == 0 until first needed)
} cpu_state_t;

static void binding_free(fn_binding_t *b) {
  mx_cpu_plan_destroy(b->plan);
  b->plan = NULL;
  mx_graph_binding_free(b);
}

static void report_profile(const fn_binding_t *b) {
  mx_strbuf_t sb = {0};
  mx_cpu_plan_profile_report(b->plan, &sb);
  if (sb.len)  // plans that never ran say nothing
    fprintf(stderr, "mlxcel cpu profile, T = %d%s: %s", b->T, b->all_logits ? " (all logits)" : "",
            sb.data);
  mx_strbuf_free(&sb);
}

static void bucket_set_free(cpu_state_t *s, bucket_set_t *set) {
  for (int32_t i = 0; i < set->n; i++) {
    if (s->profile && set->b[i].plan) report_profile(&set->b[i]);
    binding_free(&set->b[i]);
  }
  set->n = 0;
}

static void cpu_destroy(void *state) {
  cpu_state_t *s = state;
  if (!s) return;
  if (s->profile && s->dec.plan) report_profile(&s->dec);
  binding_free(&s->dec);
  bucket_set_free(s, &s->pre);
  bucket_set_free(s, &s->all);
  mx_cpu_weights_destroy(s->weights);
  mx_cpu_pool_destroy(s->pool);
  for (int32_t j = 0; s->caches && j < s->n_caches; j++) mx_tensor_free(&s->caches[j]);
  free(s->caches);
  free(s->logits_buf);
  free(s->all_buf);
  free(s->arena);  // after the plans
  mx_tensor_free(&s->pos0);
  free(s);
}

// Binds the per-call pieces (tokens, pos0, caches, result buffers) and compiles the plan.
static mx_status_t compile_binding(cpu_state_t *s, fn_binding_t *b, float *logits,
                                   bool shared_arena) {
  b->args[b->tokens_arg] = b->tokens;
  b->args[b->pos0_arg] = s->pos0;
  for (int32_t j = 0; j < s->n_caches; j++) {
    b->args[b->cache_arg[j]] = s->caches[j];
    b->res[b->cache_res[j]] = s->caches[j];  // in place
  }
  b->res[b->logits_res].type = b->f->result_types[b->logits_res];
  b->res[b->logits_res].data = (uint8_t *)logits;
  b->res[b->logits_res].nbytes = (size_t)(b->all_logits ? b->T : 1) * (size_t)s->V * sizeof(float);
  for (int32_t r = 0; r < b->f->n_results; r++)
    if (!b->res[r].data)
      return mx_error_set(MX_ERR_INVALID_ARG, "@%s: unexpected result %d", b->f->name, r);
  mx_cpu_compile_opts_t o = {
      .args = b->args, .weights = s->weights, .pool = s->pool, .external_arena = shared_arena};
  mx_cpu_plan_t *plan = NULL;
  mx_status_t st = mx_cpu_compile(b->mod, b->f, &o, &plan);
  b->plan = plan;
  if (!st && s->profile) st = mx_cpu_plan_set_profile(plan, true);
  return st;
}

// Compiles @prefill for T = 2, 4, ... <= max_t into set.
static mx_status_t build_buckets(cpu_state_t *s, bucket_set_t *set, int32_t max_t, bool all_logits,
                                 float *logits) {
  mx_status_t st = MX_OK;
  for (int64_t T = 2; !st && T <= max_t && set->n < MAX_BUCKETS; T *= 2) {
    fn_binding_t *b = &set->b[set->n++];
    st = mx_graph_bind_batch(s->model, s->ctx, s->V, s->caches, s->n_caches, 1, (int32_t)T,
                             all_logits, b);
    if (!st) st = compile_binding(s, b, logits, !all_logits);
  }
  return st;
}

// The decode plan and the last-position prefill plans never run at the same time: one arena of
// the largest size serves them all (the T = 512 plan's alone is tens of MiB on 1B models).
static mx_status_t share_arena(cpu_state_t *s) {
  size_t need = 0;
  for (int32_t i = -1; i < s->pre.n; i++) {
    mx_cpu_plan_stats_t ps;
    mx_cpu_plan_stats(i < 0 ? s->dec.plan : s->pre.b[i].plan, &ps);
    if (ps.arena_bytes > need) need = ps.arena_bytes;
  }
  need = (need + 63) / 64 * 64;
  if (need) {
    s->arena = aligned_alloc(64, need);
    if (!s->arena)
      return mx_error_set(MX_ERR_NOMEM, "out of memory (plan arena of %zu bytes)", need);
  }
  mx_status_t st = MX_OK;
  for (int32_t i = -1; !st && i < s->pre.n; i++)
    st = mx_cpu_plan_set_arena(i < 0 ? s->dec.plan : s->pre.b[i].plan, s->arena, need);
  return st;
}

// Packed weights are read through their packed copy: drop the checkpoint pages from RSS.
static void release_source(void *user, const void *data, size_t nbytes) {
  mx_checkpoint_release((const mx_checkpoint_t *)user, data, nbytes);
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
  s->model = model;
  s->ctx = ctx;
  s->chunk = prefill_chunk;
  s->V = cfg->vocab_size;
  s->n_caches = 2 * cfg->num_layers;
  const int64_t cdims[4] = {1, cfg->num_kv_heads, ctx, cfg->head_dim}, pd[1] = {1};
  mx_type_t ct = mx_type_tensor(MX_ELEM_F32, 4, cdims), pdt = mx_type_tensor(MX_ELEM_I32, 1, pd);
  s->caches = calloc((size_t)(s->n_caches > 0 ? s->n_caches : 1), sizeof *s->caches);
  s->logits_buf = malloc((size_t)s->V * sizeof(float));
  const char *prof = getenv("MLXCEL_CPU_PROFILE");
  s->profile = prof && prof[0] && strcmp(prof, "0") != 0;
  if (!s->caches || !s->logits_buf) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t j = 0; j < s->n_caches && !st; j++) st = mx_tensor_alloc(&s->caches[j], &ct);
  if (!st) st = mx_tensor_alloc(&s->pos0, &pdt);
  if (!st) st = mx_cpu_pool_create(nthreads, &s->pool);
  if (!st) st = mx_cpu_weights_create(NULL, &s->weights);
  if (!st) mx_cpu_weights_on_packed(s->weights, release_source, (void *)model->ckpt);
  if (!st) st = mx_graph_bind(model, s->ctx, s->V, s->caches, s->n_caches, 1, &s->dec);
  if (!st) st = compile_binding(s, &s->dec, s->logits_buf, true);
  if (!st) st = build_buckets(s, &s->pre, prefill_chunk, false, s->logits_buf);
  if (!st) st = share_arena(s);
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

// The all-logits plans, on the first prefill that asks for every position's logits.
static mx_status_t ensure_all_logits(cpu_state_t *s) {
  if (s->all.n > 0) return MX_OK;
  int32_t max_t = s->chunk < ALL_LOGITS_MAX_T ? s->chunk : ALL_LOGITS_MAX_T;
  if (max_t < 2) return MX_OK;  // chunk 1: decode calls only
  s->all_buf = malloc((size_t)max_t * (size_t)s->V * sizeof(float));
  if (!s->all_buf) return mx_error_set(MX_ERR_NOMEM, "out of memory (all-logits buffer)");
  mx_status_t st = build_buckets(s, &s->all, max_t, true, s->all_buf);
  if (st) {
    bucket_set_free(s, &s->all);
    free(s->all_buf);
    s->all_buf = NULL;
  }
  return st;
}

static mx_status_t cpu_prefill(void *state, const int32_t *ids, int32_t n, int64_t pos0,
                               float *last, float *all) {
  cpu_state_t *s = state;
  if (n <= 0 || n > s->chunk || pos0 < 0 || pos0 + n > s->ctx)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "cpu prefill: %d tokens at position %lld (chunk %d, capacity %lld)", n,
                        (long long)pos0, s->chunk, (long long)s->ctx);
  const size_t V = (size_t)s->V;
  if (all) {
    mx_status_t st = ensure_all_logits(s);
    if (st) return st;
  }
  bucket_set_t *set = all ? &s->all : &s->pre;
  int32_t done = 0;
  // Largest bucket first; T = 1 is the decode plan.
  for (int32_t i = set->n - 1; i >= -1 && done < n; i--) {
    fn_binding_t *b = i >= 0 ? &set->b[i] : &s->dec;
    while (n - done >= b->T) {
      memcpy(b->tokens.data, ids + done, (size_t)b->T * sizeof *ids);
      mx_status_t st = run_fn(s, b, pos0 + done);
      if (st) return st;
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

static void cpu_reset(void *state) {
  cpu_state_t *s = state;
  for (int32_t j = 0; j < s->n_caches; j++) memset(s->caches[j].data, 0, s->caches[j].nbytes);
}

const mx_backend_t mx_backend_cpu = {
    .name = "cpu",
    .caps = MX_CAP_PREFILL_ALL_LOGITS | MX_CAP_BATCH,
    .create = cpu_create,
    .prefill = cpu_prefill,
    .decode = cpu_decode,
    .reset = cpu_reset,
    .destroy = cpu_destroy,
    .default_prefill_chunk = DEFAULT_CHUNK,
};

// ---- Batched decoding (batch_state.h): plans on one pool and one packed-weight cache ----

// The batch's plans run one at a time, like a session's: they share one arena, grown (and
// rebound to every plan) while the plans are prepared at creation.
typedef struct cpu_batch_impl {
  mx_cpu_pool_t *pool;
  mx_cpu_weights_t *weights;
  void *arena;
  size_t arena_bytes;
  int32_t n_plans, cap_plans;
  mx_cpu_plan_t **plans;  // the live plans bound to `arena`
} cpu_batch_impl_t;

static mx_status_t share_batch_arena(cpu_batch_impl_t *c, mx_cpu_plan_t *plan) {
  if (c->n_plans == c->cap_plans) {
    int32_t cap = c->cap_plans ? 2 * c->cap_plans : 16;
    mx_cpu_plan_t **pl = realloc(c->plans, (size_t)cap * sizeof *pl);
    if (!pl) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    c->plans = pl;
    c->cap_plans = cap;
  }
  mx_cpu_plan_stats_t ps;
  mx_cpu_plan_stats(plan, &ps);
  size_t need = (ps.arena_bytes + 63) / 64 * 64;
  if (need > c->arena_bytes) {
    void *a = aligned_alloc(64, need);
    if (!a) return mx_error_set(MX_ERR_NOMEM, "out of memory (plan arena of %zu bytes)", need);
    for (int32_t i = 0; i < c->n_plans; i++) mx_cpu_plan_set_arena(c->plans[i], a, need);
    free(c->arena);
    c->arena = a;
    c->arena_bytes = need;
  }
  mx_status_t st = mx_cpu_plan_set_arena(plan, c->arena, c->arena_bytes);
  if (!st) c->plans[c->n_plans++] = plan;
  return st;
}

static mx_status_t cpu_batch_prepare(void *impl, fn_binding_t *b) {
  cpu_batch_impl_t *c = impl;
  // Decode plans of B > 1 sequences run every matmul row with the GEMV's summation order, so a
  // sequence's logits are those of a B = 1 plan (and of a session) whatever B is.
  mx_cpu_compile_opts_t o = {.args = b->args,
                             .weights = c->weights,
                             .pool = c->pool,
                             .rows_as_gemv = b->T == 1,
                             .external_arena = true};
  mx_cpu_plan_t *plan = NULL;
  mx_status_t st = mx_cpu_compile(b->mod, b->f, &o, &plan);
  b->plan = plan;
  if (!st) st = share_batch_arena(c, plan);
  return st;
}

static mx_status_t cpu_batch_run(void *impl, fn_binding_t *b) {
  cpu_batch_impl_t *c = impl;
  mx_status_t st = mx_cpu_plan_run(b->plan, c->pool, b->args, b->n_args, b->res);
  return st ? mx_error_prefix(st, "cpu") : MX_OK;
}

static void cpu_batch_release(void *impl, fn_binding_t *b) {
  cpu_batch_impl_t *c = impl;
  for (int32_t i = 0; i < c->n_plans; i++)
    if (c->plans[i] == b->plan) c->plans[i] = c->plans[--c->n_plans];
  mx_cpu_plan_destroy(b->plan);
  b->plan = NULL;
}

static void cpu_batch_impl_destroy(void *impl) {
  cpu_batch_impl_t *c = impl;
  if (!c) return;
  mx_cpu_weights_destroy(c->weights);  // after the plans (mx_bstate_destroy releases them first)
  mx_cpu_pool_destroy(c->pool);
  free(c->arena);
  free(c->plans);
  free(c);
}

static const mx_bstate_exec_t g_cpu_batch_exec = {
    .prepare = cpu_batch_prepare,
    .run = cpu_batch_run,
    .release = cpu_batch_release,
    .destroy = cpu_batch_impl_destroy,
};

static mx_status_t cpu_batch_create(const mx_model_t *model, int64_t ctx, int32_t prefill_chunk,
                                    int32_t n_slots, void **state) {
  *state = NULL;
  int nthreads = 0;
  mx_status_t st = threads_from_env(&nthreads);
  if (st) return st;
  cpu_batch_impl_t *c = calloc(1, sizeof *c);
  if (!c) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  st = mx_cpu_pool_create(nthreads, &c->pool);
  if (!st) st = mx_cpu_weights_create(NULL, &c->weights);
  if (!st) mx_cpu_weights_on_packed(c->weights, release_source, (void *)model->ckpt);
  if (st) {
    cpu_batch_impl_destroy(c);
    return st;
  }
  mx_bstate_t *bs = NULL;
  st = mx_bstate_create(model, ctx, prefill_chunk, n_slots, &g_cpu_batch_exec, c, &bs);
  *state = bs;
  return st;
}

static void cpu_batch_destroy(void *state) { mx_bstate_destroy(state); }

const mx_backend_batch_t mx_backend_cpu_batch = {
    .create = cpu_batch_create,
    .prefill = mx_bstate_prefill,
    .decode = mx_bstate_decode,
    .reset = mx_bstate_reset,
    .destroy = cpu_batch_destroy,
};
