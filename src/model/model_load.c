// mx_model_load: config.json (+ generation_config.json), the checkpoint (validated and checked
// against the architecture) and the tokenizer, in that order, so the cheapest checks fail first.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlxcel/tokenizer.h"
#include "model/checkpoint_internal.h"

// MLX-quantized checkpoints store packed uint32 "<x>.weight" next to "<x>.scales" (and
// "<x>.biases"). They open as checkpoints, but no graph runs them yet: say so plainly instead of
// reporting a shape mismatch.
static mx_status_t refuse_quantized(const char *dir, const mx_checkpoint_t *ck) {
  for (int32_t i = 0; i < mx_checkpoint_count(ck); i++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, i);
    size_t n = strlen(w->name);
    if (n <= 7 || strcmp(w->name + n - 7, ".scales") != 0 || n - 7 > 400) continue;
    char base[420];
    snprintf(base, sizeof base, "%.*s.weight", (int)(n - 7), w->name);
    const mx_weight_t *q = mx_checkpoint_find(ck, base);
    if (q && (mx_elem_is_int(q->dtype))) {
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "%s: tensor '%s' is quantized (MLX layout, with '%s'): quantized "
                          "checkpoints are not supported yet",
                          dir, base, w->name);
    }
  }
  return MX_OK;
}

// Whether DIR/tokenizer.json exists (for the optional-tokenizer load).
static bool has_tokenizer_json(const char *dir) {
  char path[4096];
  size_t n = strlen(dir);
  const char *sep = (n && dir[n - 1] == '/') ? "" : "/";
  if ((size_t)snprintf(path, sizeof path, "%s%stokenizer.json", dir, sep) >= sizeof path) {
    return true;  // let the tokenizer loader report the path problem
  }
  return access(path, F_OK) == 0 || errno != ENOENT;  // unreadable: the loader says why
}

mx_status_t mx_model_load(const char *dir, mx_model_t **out) {
  return mx_model_load_ex(dir, NULL, out);
}

mx_status_t mx_model_load_ex(const char *dir, const mx_model_load_opts_t *opts, mx_model_t **out) {
  *out = NULL;
  bool tok_optional = opts != NULL && opts->tokenizer_optional;
  if (!dir) return mx_error_set(MX_ERR_INVALID_ARG, "mx_model_load: no directory");
  mx_model_t *m = calloc(1, sizeof *m);
  if (!m || !(m->dir = strdup(dir))) {
    free(m);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  mx_status_t st = mx_config_load(dir, &m->config);
  if (st == MX_OK) st = mx_checkpoint_open_ex(dir, opts ? &opts->limits : NULL, &m->ckpt);
  if (st == MX_OK) st = refuse_quantized(dir, m->ckpt);
  if (st == MX_OK) {
    st = mx_model_check_weights(&m->config, m->ckpt);
    // The check names the tensor and its file, not always the checkpoint directory.
    if (st != MX_OK) mx_error_prefix(st, "%s", dir);
  }
  if (st == MX_OK && !(opts && opts->allow_nonfinite)) st = mx_ckpt_check_finite(m->ckpt);
  if (st == MX_OK && !(tok_optional && !has_tokenizer_json(dir))) {
    st = mx_tokenizer_load(dir, &m->tokenizer);
  }
  if (st != MX_OK) {
    mx_model_free(m);
    return st;
  }
  *out = m;
  return MX_OK;
}

void mx_model_free(mx_model_t *m) {
  if (!m) return;
  mx_tokenizer_destroy(m->tokenizer);
  mx_checkpoint_close(m->ckpt);
  free(m->dir);
  free(m);
}
