// Private to src/session/ (and its tests): the session object's layout, the backend registry's
// test hook and the built-in backends.
#ifndef MLXCEL_SESSION_INTERNAL_H
#define MLXCEL_SESSION_INTERNAL_H

#include "mlxcel/session.h"

struct mx_session {
  const mx_model_t *model;  // borrowed; outlives the session
  const mx_backend_t *backend;
  void *state;      // the backend's per-session object
  int64_t ctx;      // KV capacity in tokens
  int32_t chunk;    // most tokens per backend prefill call (<= ctx)
  int32_t vocab;    // logits width (config vocab_size)
  int64_t n_past;   // tokens held in the KV state
  bool has_logits;  // logits[] holds the last processed token's row
  float *logits;    // [vocab], owned
  int32_t *tokens;  // [ctx] the ids processed so far (history for the penalties)
};

// Adds a backend to the registry (for tests and out-of-tree backends). The vtable must outlive
// every session using it. Error when the name is taken or the registry is full.
mx_status_t mx_backend_register(const mx_backend_t *b);

// Writes "interp, cpu, ..." (the registered names) into buf; for error messages.
void mx_backend_list_names(char *buf, size_t n);

// Element type of the KV caches of a model's sessions: model->kv_dtype (resolved by the loader),
// f32 for a model whose kv_dtype is unset.
static inline mx_elem_type_t mx_session_kv_dtype(const mx_model_t *m) {
  return m->kv_dtype == MX_ELEM_F16 || m->kv_dtype == MX_ELEM_BF16 ? m->kv_dtype : MX_ELEM_F32;
}

// Built-in backends.
extern const mx_backend_t mx_backend_interp;

#endif  // MLXCEL_SESSION_INTERNAL_H
