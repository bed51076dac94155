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

// Resolves a backend name, a KV capacity and a prefill chunk (0 / NULL = not given) as
// mx_session_create does: options, then the environment, then the model's limits. Shared with
// mx_batch_create. Errors name the option and where its value came from.
mx_status_t mx_session_resolve_opts(const mx_model_t *model, const char *backend, int64_t ctx,
                                    int32_t chunk, const mx_backend_t **be_out, int64_t *ctx_out,
                                    int32_t *chunk_out);

// Batched operation of a backend with MX_CAP_BATCH, the engine of mx_batch (batch.h): n_slots
// sequences ("slots") of capacity ctx each in one state. Kept beside mx_backend_t rather than
// in it so that backends written against session.h stay valid. The caller (batch.c) checks slot
// numbers, capacities and ids before calling. A slot's logits must depend only on its own
// tokens, never on the other slots' content or on which slots run together.
typedef struct mx_backend_batch {
  mx_status_t (*create)(const mx_model_t *model, int64_t ctx, int32_t prefill_chunk,
                        int32_t n_slots, void **state);
  // Runs n (<= prefill_chunk) tokens of `slot` from position pos0; last token's logits to
  // last[V]. The other slots keep their state.
  mx_status_t (*prefill)(void *state, int32_t slot, const int32_t *ids, int32_t n, int64_t pos0,
                         float *last);
  // One token for each of n distinct slots: ids[i] at position pos[i] of slots[i], logits of
  // slots[i] to logits[i * V]. Slots not named keep their state. The cost may grow with the
  // highest slot index named (batch.c hands out low indices first).
  mx_status_t (*decode)(void *state, const int32_t *slots, const int32_t *ids, const int64_t *pos,
                        int32_t n, float *logits);
  void (*reset)(void *state, int32_t slot);  // forget the slot's KV state
  void (*destroy)(void *state);              // accepts NULL
} mx_backend_batch_t;

// The batch operations of a built-in backend with MX_CAP_BATCH; NULL for any other backend
// (mx_batch then runs one backend state per slot).
const mx_backend_batch_t *mx_backend_batch_ops(const mx_backend_t *b);

// Built-in backends.
extern const mx_backend_t mx_backend_interp;
extern const mx_backend_t mx_backend_cpu;
extern const mx_backend_batch_t mx_backend_interp_batch;
extern const mx_backend_batch_t mx_backend_cpu_batch;

#endif  // MLXCEL_SESSION_INTERNAL_H
