// The "interp" backend: runs the model's graphs with the reference interpreter. Slow, obviously
// correct: the oracle the fast backends are compared with. The shared graph runner
// (src/session/graph_runner.h) and the batched state (src/session/batch_state.h) own the KV
// caches, the bindings and the prefill loop; this file says how a bound graph runs.
//
// Weight arguments are bound zero-copy to the mmapped checkpoint tensors (the interpreter only
// reads its arguments). The interpreter returns fresh result tensors; those the caller bound a
// buffer for (the new caches, the logits) are copied into it, the rest are freed.
#include <stdlib.h>
#include <string.h>

#include "session/batch_state.h"
#include "session/graph_runner.h"
#include "session/session_internal.h"

// Every interpreter call costs in proportion to its T: a longer chunk gains nothing.
enum { DEFAULT_CHUNK = 64 };

typedef struct interp_exec {
  int32_t n_res;
  mx_tensor_t *res;  // [n_res] the interpreter's results of the current call
} interp_exec_t;

static mx_status_t interp_prepare(void *impl, mx_graph_binding_t *b) {
  interp_exec_t *c = impl;
  if (b->f->n_results <= c->n_res) return MX_OK;
  mx_tensor_t *r = realloc(c->res, (size_t)b->f->n_results * sizeof *r);
  if (!r) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  memset(r + c->n_res, 0, (size_t)(b->f->n_results - c->n_res) * sizeof *r);
  c->res = r;
  c->n_res = b->f->n_results;
  return MX_OK;
}

static mx_status_t interp_run(void *impl, mx_graph_binding_t *b) {
  interp_exec_t *c = impl;
  mx_status_t st = mx_interp_run(b->mod, b->f, b->args, b->n_args, c->res, NULL);
  if (st) return mx_error_prefix(st, "@%s", b->f->name);
  for (int32_t r = 0; r < b->f->n_results; r++) {
    // b->res[r] is the caller's buffer (a cache or the logits), of the result's size.
    if (b->res[r].data && c->res[r].data)
      memcpy(b->res[r].data, c->res[r].data, mx_type_nbytes(&b->f->result_types[r]));
    mx_tensor_free(&c->res[r]);
  }
  return MX_OK;
}

static void interp_exec_destroy(void *impl) {
  interp_exec_t *c = impl;
  if (!c) return;
  free(c->res);
  free(c);
}

static const mx_graph_exec_t g_interp_exec = {
    .prepare = interp_prepare,
    .run = interp_run,
    .destroy = interp_exec_destroy,
};

static mx_status_t interp_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                                 void **state) {
  *state = NULL;
  mx_status_t st = mx_backend_check_host_device("interp", &cfg->opts);
  if (st) return st;
  interp_exec_t *c = calloc(1, sizeof *c);
  if (!c) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_graph_runner_t *r = NULL;
  st = mx_graph_runner_create(model, cfg, &g_interp_exec, c, &r);
  *state = r;
  return st;
}

static mx_status_t interp_batch_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                                       int32_t n_slots, void **state) {
  *state = NULL;
  mx_status_t st = mx_backend_check_host_device("interp", &cfg->opts);
  if (st) return st;
  interp_exec_t *c = calloc(1, sizeof *c);
  if (!c) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_bstate_t *bs = NULL;
  st = mx_bstate_create(model, cfg->ctx, cfg->prefill_chunk, n_slots, &g_interp_exec, c, &bs);
  *state = bs;
  return st;
}

static const mx_backend_batch_t g_interp_batch = {
    .create = interp_batch_create,
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

const mx_backend_t mx_backend_interp = {
    .name = "interp",
    .caps = MX_CAP_PREFILL_ALL_LOGITS | MX_CAP_BATCH,
    .create = interp_create,
    .default_prefill_chunk = DEFAULT_CHUNK,
    MX_GRAPH_RUNNER_SESSION_ENTRIES,
    .batch = &g_interp_batch,
};
