// Shared by the graph tests: loads a checkpoint, builds its graph and runs @prefill / @decode
// with the reference interpreter, carrying the KV caches between calls; JSON helpers.
#ifndef MX_TEST_GRAPH_RUNNER_H
#define MX_TEST_GRAPH_RUNNER_H

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlxcel/model.h"
#include "mx_test.h"

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline cJSON *read_json(const char *path) {
  char *text = NULL;
  size_t len = 0;
  if (mx_read_file(path, &text, &len) != MX_OK) return NULL;
  cJSON *j = cJSON_ParseWithLength(text, len);
  free(text);
  return j;
}

// ---- a loaded model and its graph, run step by step with the interpreter ----

typedef struct runner {
  mx_model_config_t cfg;
  mx_checkpoint_t *ck;
  mx_module_t *m;
  mx_func_t *prefill, *decode;
  int32_t L;
  mx_tensor_t *caches;  // [2L] current k/v caches (heap tensors)
} runner_t;

static inline void runner_free(runner_t *r) {
  if (r->caches) {
    for (int32_t i = 0; i < 2 * r->L; i++) mx_tensor_free(&r->caches[i]);
    free(r->caches);
  }
  mx_module_destroy(r->m);
  mx_checkpoint_close(r->ck);
  memset(r, 0, sizeof *r);
}

// precision: MX_ELEM_INVALID = the weights as stored, else the loader's precision pass
// (mx_model_apply_precision) first.
static inline bool runner_open_prec(runner_t *r, const char *dir, const mx_graph_opts_t *o,
                                    mx_elem_type_t precision) {
  memset(r, 0, sizeof *r);
  mx_status_t st = mx_config_load(dir, &r->cfg);
  if (st == MX_OK) st = mx_checkpoint_open(dir, &r->ck);
  if (st == MX_OK) st = mx_moe_unstack(&r->cfg, r->ck);  // the loader's expert layout
  if (st == MX_OK) st = mx_model_check_weights(&r->cfg, r->ck);
  if (st == MX_OK && precision != MX_ELEM_INVALID)
    st = mx_model_apply_precision(&r->cfg, r->ck, precision);
  if (st == MX_OK) st = mx_model_build_graph(&r->cfg, r->ck, o, &r->m);
  CHECK_MSG(st == MX_OK, "%s: %s", dir, mx_error_message());
  if (st != MX_OK) return false;
  r->prefill = mx_module_find_func(r->m, "prefill");
  r->decode = mx_module_find_func(r->m, "decode");
  CHECK(r->prefill != NULL && r->decode != NULL);
  if (!r->prefill || !r->decode) return false;
  r->L = r->cfg.num_layers;
  r->caches = calloc((size_t)(2 * r->L), sizeof(mx_tensor_t));
  int32_t first_cache = r->prefill->body->n_args - 2 * r->L;
  for (int32_t i = 0; i < 2 * r->L; i++) {
    const mx_type_t *t = mx_value_type(r->prefill, r->prefill->body->args[first_cache + i]);
    CHECK_OK(mx_tensor_alloc(&r->caches[i], t));
  }
  return true;
}

static inline bool runner_open(runner_t *r, const char *dir, const mx_graph_opts_t *o) {
  return runner_open_prec(r, dir, o, MX_ELEM_INVALID);
}

// Runs f on `tokens` [B, T] with start positions pos0 [B]; returns the logits (heap, caller
// frees); the updated caches replace r->caches.
static inline float *runner_step_b(runner_t *r, mx_func_t *f, const int32_t *tokens,
                                   const int32_t *pos0, int64_t *n_logits) {
  int32_t n = f->body->n_args;
  mx_tensor_t *args = calloc((size_t)n, sizeof(mx_tensor_t));
  mx_tensor_t *res = calloc((size_t)f->n_results, sizeof(mx_tensor_t));
  mx_tensor_t tok, p0;
  memset(&tok, 0, sizeof tok);
  memset(&p0, 0, sizeof p0);
  float *out = NULL;
  int32_t k = 0;
  for (int32_t i = 0; i < n; i++) {
    mx_graph_arg_t info;
    if (mx_graph_arg_info(f, i, &info) != MX_OK) {
      CHECK_MSG(0, "arg info %d: %s", i, mx_error_message());
      goto done;
    }
    const mx_type_t *t = mx_value_type(f, f->body->args[i]);
    switch (info.role) {
      case MX_ARG_WEIGHT: {
        const mx_weight_t *w = mx_checkpoint_find(r->ck, info.name);
        CHECK(w != NULL && w->dtype == t->elem && w->nbytes == mx_type_nbytes(t));
        if (!w) goto done;
        args[i].type = *t;
        args[i].data = (uint8_t *)w->data;
        args[i].nbytes = w->nbytes;
        break;
      }
      case MX_ARG_TOKENS:
        mx_tensor_alloc(&tok, t);
        memcpy(tok.data, tokens, tok.nbytes);
        args[i] = tok;
        break;
      case MX_ARG_POS0:
        mx_tensor_alloc(&p0, t);
        memcpy(p0.data, pos0, p0.nbytes);
        args[i] = p0;
        break;
      case MX_ARG_K_CACHE:
      case MX_ARG_V_CACHE:
        CHECK(info.layer == k / 2 && (k % 2 == 0) == (info.role == MX_ARG_K_CACHE));
        args[i] = r->caches[k++];
        break;
      case MX_ARG_MEDIA:  // the media entries are not run here (test_vlm_llava.c runs them)
      case MX_ARG_POSITIONS:
      case MX_ARG_DEEPSTACK:
      case MX_ARG_PIXELS:
      case MX_ARG_POOLING:
      case MX_ARG_AUDIO:
      case MX_ARG_AUDIO_MASK:
      case MX_ARG_ROPE_OFFSET:  // only the batch builds graphs with it
        CHECK_MSG(0, "argument %d: a media entry's input", i);
        goto done;
    }
  }
  mx_status_t st = mx_interp_run(r->m, f, args, n, res, NULL);
  CHECK_MSG(st == MX_OK, "interp @%s: %s", f->name, mx_error_message());
  if (st != MX_OK) goto done;
  *n_logits = mx_type_numel(&res[0].type);
  out = malloc(res[0].nbytes);
  memcpy(out, res[0].data, res[0].nbytes);
  for (int32_t i = 0; i < 2 * r->L; i++) {
    mx_tensor_free(&r->caches[i]);
    r->caches[i] = res[1 + i];
    memset(&res[1 + i], 0, sizeof res[1 + i]);
  }
done:
  for (int32_t i = 0; i < f->n_results; i++) mx_tensor_free(&res[i]);
  free(res);
  free(args);
  mx_tensor_free(&tok);
  mx_tensor_free(&p0);
  return out;
}

static inline float *runner_step(runner_t *r, mx_func_t *f, const int32_t *tokens, int32_t pos0,
                                 int64_t *n_logits) {
  return runner_step_b(r, f, tokens, &pos0, n_logits);
}

// max |got - want[row][...]| over n_rows rows of `vocab` (want: JSON array of arrays, or of
// objects with a "logits" array).
static inline double max_diff_rows(const float *got, const cJSON *want, int32_t row0,
                                   int32_t n_rows, int32_t vocab) {
  double md = 0;
  for (int32_t i = 0; i < n_rows; i++) {
    const cJSON *row = cJSON_GetArrayItem(want, row0 + i);
    if (cJSON_IsObject(row)) row = cJSON_GetObjectItem(row, "logits");
    if (cJSON_GetArraySize(row) != vocab) return 1e30;
    int32_t j = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, row) {
      double d = fabs((double)got[(int64_t)i * vocab + j] - v->valuedouble);
      if (d > md || d != d) md = d != d ? 1e30 : d;
      j++;
    }
  }
  return md;
}

static inline int32_t *json_ids(const cJSON *a, int32_t *n) {
  *n = cJSON_GetArraySize(a);
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)(*n > 0 ? *n : 1));
  int32_t i = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, a) ids[i++] = v->valueint;
  return ids;
}

#endif  // MX_TEST_GRAPH_RUNNER_H
