// mx_model_load: config.json (+ generation_config.json), the checkpoint (validated and checked
// against the architecture) and the tokenizer, in that order, so the cheapest checks fail first.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/model.h"
#include "mlxcel/tokenizer.h"

mx_status_t mx_model_load(const char *dir, mx_model_t **out) {
  *out = NULL;
  if (!dir) return mx_error_set(MX_ERR_INVALID_ARG, "mx_model_load: no directory");
  mx_model_t *m = calloc(1, sizeof *m);
  if (!m || !(m->dir = strdup(dir))) {
    free(m);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  mx_status_t st = mx_config_load(dir, &m->config);
  if (st == MX_OK) st = mx_checkpoint_open(dir, &m->ckpt);
  if (st == MX_OK) {
    st = mx_model_check_weights(&m->config, m->ckpt);
    // The check names the tensor and its file, not always the checkpoint directory.
    if (st != MX_OK) mx_error_prefix(st, "%s", dir);
  }
  if (st == MX_OK) st = mx_tokenizer_load(dir, &m->tokenizer);
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
