// The "cpu" backend: runs the model's graphs as compiled CPU plans (include/mlxcel/cpu_plan.h)
// on a persistent thread pool. The shared graph runner (src/session/graph_runner.h) and the
// batched state (src/session/batch_state.h) own the KV caches, the bindings and the prefill
// loop; this file says how a bound graph is compiled and run.
//
// Weights are bound zero-copy to the mmapped checkpoint and packed once into a weight cache
// shared by all the plans of a session (or batch); the checkpoint pages of packed weights are
// then released. The KV caches are updated in place: every cache result aliases its argument
// (tf.aliasing_output), so the plan writes the new rows straight into the runner's buffers.
//
// Options: threads (0 = the physical cores), cpu.quant_kernel (the decode kernels of quantized
// weights) and cpu.profile (mx_cpu_plan_set_profile: every plan step timed, steps no longer
// overlap; each used plan's report printed to stderr when it is released).
#include <stdio.h>
#include <stdlib.h>

#include "mlxcel/cpu_plan.h"
#include "session/batch_state.h"
#include "session/graph_runner.h"
#include "session/session_internal.h"

// The default prefill chunk (ADR 0003; the measurements are in docs/performance.md): with the
// last position's logits only, a long call amortizes the weight stream over more tokens and
// lets the GEMM reuse each weight panel for more rows.
enum { DEFAULT_CHUNK = 512 };

// The plans of a session (or batch) run one at a time, so those that take an external arena
// share one, of the largest size any of them needs: grown (and rebound to every plan) while the
// plans are prepared at creation, never on a run. The all-logits plans keep their own arenas
// (they are made later, on first use, and are rare).
typedef struct cpu_exec {
  mx_cpu_pool_t *pool;
  mx_cpu_weights_t *weights;
  bool profile;
  mx_cpu_qkernel_t quant_kernel;
  mx_progress_t progress;   // of the packing, done when the session's plans are all prepared
  uint64_t progress_total;  // the checkpoint's weight bytes
  bool batch;  // plans of a batched state (rows_as_gemv for the decode plans: the media entries
               // of one sequence are compiled as a session's, so their numbers are a session's)
  void *arena;
  size_t arena_bytes;
  int32_t n_plans, cap_plans;
  mx_cpu_plan_t **plans;  // the live plans bound to `arena`
} cpu_exec_t;

static mx_status_t share_arena(cpu_exec_t *c, mx_cpu_plan_t *plan) {
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

static mx_status_t cpu_prepare(void *impl, mx_graph_binding_t *b) {
  cpu_exec_t *c = impl;
  bool shared = !b->all_logits;
  // Decode plans of B > 1 sequences run every matmul row with the GEMV's summation order, so a
  // sequence's logits are those of a B = 1 plan (and of a session) whatever B is.
  mx_cpu_compile_opts_t o = {.args = b->args,
                             .weights = c->weights,
                             .pool = c->pool,
                             .rows_as_gemv = c->batch && b->T == 1 && b->entry == MX_ENTRY_TEXT,
                             .quant_kernel = c->quant_kernel,
                             .external_arena = shared};
  mx_cpu_plan_t *plan = NULL;
  mx_status_t st = mx_cpu_compile(b->mod, b->f, &o, &plan);
  b->plan = plan;
  if (!st && c->profile) st = mx_cpu_plan_set_profile(plan, true);
  if (!st && shared) st = share_arena(c, plan);
  return st;
}

static mx_status_t cpu_run(void *impl, mx_graph_binding_t *b) {
  cpu_exec_t *c = impl;
  mx_status_t st = mx_cpu_plan_run(b->plan, c->pool, b->args, b->n_args, b->res);
  return st ? mx_error_prefix(st, "cpu") : MX_OK;
}

static void report_profile(const mx_graph_binding_t *b) {
  mx_strbuf_t sb = {0};
  mx_cpu_plan_profile_report(b->plan, &sb);
  if (sb.len)  // plans that never ran say nothing
    fprintf(stderr, "mlxcel cpu profile, T = %d%s: %s", b->T, b->all_logits ? " (all logits)" : "",
            sb.data);
  mx_strbuf_free(&sb);
}

static void cpu_release(void *impl, mx_graph_binding_t *b) {
  cpu_exec_t *c = impl;
  if (!b->plan) return;
  if (c->profile) report_profile(b);
  for (int32_t i = 0; i < c->n_plans; i++)
    if (c->plans[i] == b->plan) c->plans[i] = c->plans[--c->n_plans];
  mx_cpu_plan_destroy(b->plan);
  b->plan = NULL;
}

static void cpu_exec_destroy(void *impl) {
  cpu_exec_t *c = impl;
  if (!c) return;
  mx_cpu_weights_destroy(c->weights);  // after the plans (their owners release them first)
  mx_cpu_pool_destroy(c->pool);
  free(c->arena);
  free(c->plans);
  free(c);
}

static const mx_graph_exec_t g_cpu_exec = {
    .prepare = cpu_prepare,
    .run = cpu_run,
    .release = cpu_release,
    .destroy = cpu_exec_destroy,
};

// The bytes of every weight of the checkpoint: what packing reads at most (the matmul weights
// are packed, the rest is read as is).
static uint64_t checkpoint_bytes(const mx_checkpoint_t *ck) {
  uint64_t n = 0;
  for (int32_t k = 0; k < mx_checkpoint_count(ck); k++) n += mx_checkpoint_weight(ck, k)->nbytes;
  return n;
}

// Packed weights are read through their packed copy: drop the checkpoint pages from RSS.
static void release_source(void *user, const void *data, size_t nbytes) {
  mx_checkpoint_release((const mx_checkpoint_t *)user, data, nbytes);
}

static mx_status_t cpu_exec_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                                   bool batch, cpu_exec_t **out) {
  *out = NULL;
  mx_status_t st = mx_backend_check_host_device("cpu", &cfg->opts);
  if (st) return st;
  if (!model->ckpt) return mx_error_set(MX_ERR_INVALID_ARG, "model has no checkpoint");
  if ((unsigned)cfg->opts.cpu.quant_kernel > MX_CPU_QKERNEL_VNNI)
    return mx_error_set(MX_ERR_INVALID_ARG, "cpu: quantized kernel choice %d is not valid",
                        (int)cfg->opts.cpu.quant_kernel);
  cpu_exec_t *c = calloc(1, sizeof *c);
  if (!c) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  c->profile = cfg->opts.cpu.profile;
  c->quant_kernel = cfg->opts.cpu.quant_kernel;
  c->batch = batch;
  st = mx_cpu_pool_create(cfg->opts.threads, &c->pool);
  if (!st) st = mx_cpu_weights_create(NULL, &c->weights);
  if (!st) mx_cpu_weights_on_packed(c->weights, release_source, (void *)model->ckpt);
  if (!st) {
    c->progress = cfg->opts.progress;
    c->progress_total = checkpoint_bytes(model->ckpt);
    mx_cpu_weights_on_progress(c->weights, &c->progress, c->progress_total);
  }
  if (st) {
    cpu_exec_destroy(c);
    return st;
  }
  *out = c;
  return MX_OK;
}

static mx_status_t cpu_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                              void **state) {
  *state = NULL;
  cpu_exec_t *c = NULL;
  mx_status_t st = cpu_exec_create(model, cfg, false, &c);
  if (st) return st;
  mx_graph_runner_t *r = NULL;
  st = mx_graph_runner_create(model, cfg, &g_cpu_exec, c, &r);
  *state = r;
  if (!st) mx_progress_report(&c->progress, "packing", c->progress_total, c->progress_total);
  return st;
}

static mx_status_t cpu_batch_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                                    int32_t n_slots, void **state) {
  *state = NULL;
  cpu_exec_t *c = NULL;
  mx_status_t st = cpu_exec_create(model, cfg, true, &c);
  if (st) return st;
  mx_bstate_t *bs = NULL;
  st = mx_bstate_create(model, cfg->ctx, cfg->prefill_chunk, n_slots, &g_cpu_exec, c, &bs);
  *state = bs;
  if (!st) mx_progress_report(&c->progress, "packing", c->progress_total, c->progress_total);
  return st;
}

static const mx_backend_batch_t g_cpu_batch = {
    .create = cpu_batch_create,
    .prefill = mx_bstate_prefill,
    .decode = mx_bstate_decode,
    .reset = mx_bstate_reset,
    .rewind = mx_bstate_rewind,
    .destroy = mx_bstate_destroy,
    .vision = mx_bstate_vision,
    .prefill_media = mx_bstate_prefill_media,
    .vision_grid = mx_bstate_vision_grid,
    .audio = mx_bstate_audio,
    .prefill_mrope = mx_bstate_prefill_mrope,
    .vision_pooled = mx_bstate_vision_pooled,
    .prefill_all = mx_bstate_prefill_all,
};

const mx_backend_t mx_backend_cpu = {
    .name = "cpu",
    .caps = MX_CAP_PREFILL_ALL_LOGITS | MX_CAP_BATCH,
    .create = cpu_create,
    .default_prefill_chunk = DEFAULT_CHUNK,
    MX_GRAPH_RUNNER_SESSION_ENTRIES,
    .batch = &g_cpu_batch,
};
