// mx_model_load: config.json (+ generation_config.json), the checkpoint (validated and checked
// against the architecture) and the tokenizer, in that order, so the cheapest checks fail first.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlxcel/tokenizer.h"
#include "model/checkpoint_internal.h"
#include "model/graph_internal.h"
#include "model/quant_internal.h"

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

// The precision pass: resolve precision and KV dtype, convert the weights (precision.c).
static mx_status_t apply_precision(mx_model_t *m, const mx_model_load_opts_t *opts) {
  mx_status_t st =
      mx_model_resolve_precision(&m->config, m->ckpt, opts, &m->precision, &m->kv_dtype);
  return st == MX_OK
             ? mx_precision_apply(&m->config, m->ckpt, m->precision, opts ? &opts->progress : NULL)
             : st;
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
  // A GGUF file holds config, weights and tokenizer (gguf_model.c); a directory holds files.
  bool gguf = mx_model_is_gguf(dir);
  mx_status_t st = gguf ? mx_gguf_model_load(dir, opts, m) : mx_config_load(dir, &m->config);
  if (st == MX_OK && !gguf) {
    st = mx_checkpoint_open_ex(dir, opts ? &opts->limits : NULL, &m->ckpt);
    if (st == MX_OK) st = mx_moe_unstack(&m->config, m->ckpt);  // mlx-lm's stacked experts
  }
  // Quantization: MLX checkpoints load as stored or dequantized, float ones may be requantized
  // (model.h, src/model/quant_load.c).
  if (st == MX_OK) {
    st = mx_quant_apply(m, opts);
    if (st != MX_OK) mx_error_prefix(st, "%s", dir);
  }
  if (st == MX_OK) {
    st = mx_model_check_weights(&m->config, m->ckpt);
    // The check names the tensor and its file, not always the checkpoint directory.
    if (st != MX_OK) mx_error_prefix(st, "%s", dir);
  }
  if (st == MX_OK && !(opts && opts->allow_nonfinite))
    st = mx_ckpt_check_finite(m->ckpt, opts ? &opts->progress : NULL);
  if (st == MX_OK) {
    st = apply_precision(m, opts);
    if (st != MX_OK) mx_error_prefix(st, "%s", dir);
  }
  if (st == MX_OK && !gguf && !(tok_optional && !has_tokenizer_json(dir))) {
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
