// Private to src/session/, src/backends/ (and their tests): the session object's layout, the
// backend registry's test hook, batched decoding and the built-in backends.
#ifndef MLXCEL_SESSION_INTERNAL_H
#define MLXCEL_SESSION_INTERNAL_H

#include "mlxcel/session.h"

struct mx_session {
  const mx_model_t *model;  // borrowed; outlives the session
  const mx_backend_t *backend;
  void *state;                   // the backend's per-session object
  const mx_backend_t *vbackend;  // vision_backend's, with a tower-only state vstate; NULL: the
  void *vstate;                  // tower runs on `state`
  int64_t ctx;                   // KV capacity in tokens
  int32_t chunk;                 // most tokens per backend prefill call (<= ctx)
  int32_t vocab;                 // logits width (config vocab_size)
  int64_t n_past;                // tokens held in the KV state
  bool has_logits;               // logits[] holds the last processed token's row
  float *logits;                 // [vocab], owned
  int32_t *tokens;               // [ctx] the ids processed so far (history for the penalties)
  // M-RoPE models (ADR 0013), else NULL: rope_after[i] is the RoPE position after token i
  // (i + 1 until an image), and mpos the positions of one chunk [3 * chunk].
  int64_t *rope_after;
  int32_t *mpos;
};

// The M-RoPE path of session_mrope.c: n text tokens at the positions rope_next + i (after an
// image, where plain RoPE positions would be wrong); last logits to s->logits. Appends them.
mx_status_t mx_session_mrope_text(mx_session_t *s, const int32_t *ids, int32_t n);
// True when the next text token's RoPE position differs from n_past (M-RoPE after an image).
bool mx_session_mrope_shifted(const mx_session_t *s);
// Records tokens [from, to) as text after position rope_after[from - 1] (M-RoPE models).
void mx_session_mrope_note_text(mx_session_t *s, int64_t from, int64_t to);

// Adds a backend to the registry (for tests and out-of-tree backends). The vtable must outlive
// every session using it. Error when the name is taken or the registry is full.
mx_status_t mx_backend_register(const mx_backend_t *b);

// Element type of the KV caches of a model's sessions: model->kv_dtype (resolved by the loader),
// f32 for a model whose kv_dtype is unset.
static inline mx_elem_type_t mx_session_kv_dtype(const mx_model_t *m) {
  return m->kv_dtype == MX_ELEM_F16 || m->kv_dtype == MX_ELEM_BF16 ? m->kv_dtype : MX_ELEM_F32;
}

// The type of KV cache j of a model's sessions: [B, heads, S, width] at the session KV dtype,
// heads and width from mx_config_cache_dims (multi-latent attention: the latent and the rotated
// shared key, ADR 0012).
static inline mx_type_t mx_session_cache_type(const mx_model_t *m, int32_t j, int64_t B,
                                              int64_t S) {
  int64_t hw[2];
  mx_config_cache_dims(&m->config, j, hw);
  const int64_t d[4] = {B, hw[0], S, hw[1]};
  return mx_type_tensor(mx_session_kv_dtype(m), 4, d);
}

// Resolves a session's or batch's options as mx_session_create does: the backend by name
// (NULL = cpu), the KV capacity (0 = min(max_position_embeddings, 4096)), the prefill chunk
// (0 = the backend's default, at most the capacity) and the backend options (checked). Shared
// with mx_batch_create. Errors name the option.
mx_status_t mx_session_resolve_opts(const mx_model_t *model, const mx_session_opts_t *opts,
                                    const mx_backend_t **be_out, mx_backend_config_t *cfg_out);

// The tower-only state of mx_session_opts_t.vision_backend (shared with mx_batch_create):
// *vbe / *vstate NULL when the tower runs on the text backend's own state (no option, the same
// backend, a text-only model). Errors name the option: an unknown backend, one without @vision.
mx_status_t mx_session_vision_state(const mx_model_t *model, const char *name,
                                    const mx_backend_t *text_be, const mx_backend_config_t *bc,
                                    const mx_backend_t **vbe, void **vstate);

// The sizes mx_session_vision and mx_batch_vision take: n_pixels the tower's C * S * S,
// n_features tokens_per_image * hidden_size; an error naming both otherwise.
// The same for one image of a Qwen tower's patch grid (ADR 0013): the grid, the pixel rows and
// the feature rows of mx_vision_feature_width floats (session_mrope.c).
mx_status_t mx_session_check_grid_sizes(const mx_model_t *model, int64_t n_pixels, int32_t grid_h,
                                        int32_t grid_w, int64_t n_features);
mx_status_t mx_session_check_vision_sizes(const mx_model_t *m, int64_t n_pixels,
                                          int64_t n_features);

// Batched operation of a backend with MX_CAP_BATCH (mx_backend_t.batch), the engine of
// mx_batch (batch.h): n_slots sequences ("slots") of capacity cfg->ctx each in one state. The
// caller (batch.c) checks slot numbers, capacities and ids before calling. A slot's logits must
// depend only on its own tokens, never on the other slots' content; on cpu and interp not even
// on which slots run together (on xla the batched linear layers of a call may round differently
// from one slot's alone: within 1e-4, ADR 0016).
typedef struct mx_backend_batch {
  mx_status_t (*create)(const mx_model_t *model, const mx_backend_config_t *cfg, int32_t n_slots,
                        void **state);
  // Runs n (<= prefill_chunk) tokens of `slot` from position pos0; last token's logits to
  // last[V]. The other slots keep their state.
  mx_status_t (*prefill)(void *state, int32_t slot, const int32_t *ids, int32_t n, int64_t pos0,
                         float *last);
  // One token for each of n distinct slots: ids[i] at position pos[i] of slots[i], logits of
  // slots[i] to logits[i * V]. Slots not named keep their state. The cost may grow with the
  // highest slot index named (batch.c hands out low indices first). rope[i]: the RoPE position
  // of slots[i]'s token, for an M-RoPE model's slot whose text an image shifted behind its cache
  // positions (three equal rows; ADR 0013), all slots in the one call; NULL: pos[i] for all.
  // A model whose graphs take no RoPE offset (not M-RoPE) refuses rope[i] != pos[i].
  mx_status_t (*decode)(void *state, const int32_t *slots, const int32_t *ids, const int64_t *pos,
                        const int64_t *rope, int32_t n, float *logits);
  void (*reset)(void *state, int32_t slot);  // forget the slot's KV state
  // Keep the slot's first n (>= 1) tokens, forget the rest (calls take positions, so only what
  // the state keeps per slot changes); NULL: the state keeps nothing per slot.
  void (*rewind)(void *state, int32_t slot, int64_t n);
  void (*destroy)(void *state);  // accepts NULL
  // Vision-language models (ADR 0010), as mx_backend_t's entries; NULL: the batch runs text
  // only. `vision` runs @vision on one image (pixels [C, S, S] -> features [N][H]), touching no
  // slot; `prefill_media` is `prefill` whose image-token positions take their row of
  // media[n][H] as input embedding.
  mx_status_t (*vision)(void *state, const float *pixels, float *features);
  mx_status_t (*prefill_media)(void *state, int32_t slot, const int32_t *ids, const float *media,
                               int32_t n, int64_t pos0, float *last);
  // The Qwen towers (ADR 0013), as mx_backend_t's: `vision_grid` runs @vision built for the grid
  // (rebuilt when it changes), touching no slot; `prefill_mrope` is `prefill_media` of rows
  // media[n][mx_vision_feature_width] (NULL: text) with each token's M-RoPE positions
  // positions[s * n + i].
  mx_status_t (*vision_grid)(void *state, const float *pixels, int32_t grid_h, int32_t grid_w,
                             float *features);
  mx_status_t (*prefill_mrope)(void *state, int32_t slot, const int32_t *ids, const float *media,
                               const int32_t *positions, int32_t n, int64_t pos0, float *last);
  // Molmo2's tower (ADR 0023), as mx_backend_t's, touching no slot.
  mx_status_t (*vision_pooled)(void *state, const float *pixels, int32_t crops,
                               const int32_t *pooling, int32_t tokens, int32_t pool,
                               float *features);
  // Gemma 3n's audio tower (ADR 0022), as mx_backend_t's `audio`, touching no slot; NULL: none.
  mx_status_t (*audio)(void *state, const float *features, const int32_t *mask, int32_t frames,
                       float *rows);
  // `prefill` that also writes every position's logits to all[n][V] (speculative decoding's
  // verification, ADR 0024); NULL: the batch cannot verify drafts.
  mx_status_t (*prefill_all)(void *state, int32_t slot, const int32_t *ids, int32_t n, int64_t pos0,
                             float *last, float *all);
} mx_backend_batch_t;

// The backend state of a batch that runs on its backend's batch operations, and that backend
// (*be); NULL (and *be NULL) for a batch that runs one state per slot.
struct mx_batch;
const void *mx_batch_backend_state(const struct mx_batch *b, const mx_backend_t **be);

// b->batch (NULL for NULL): the batch operations of a backend with MX_CAP_BATCH.
const mx_backend_batch_t *mx_backend_batch_ops(const mx_backend_t *b);

// Built-in backends (src/backends/builtin.h: one line per backend).
#include "backends/builtin.h"
#define MX_DECLARE_BACKEND(name) extern const mx_backend_t mx_backend_##name;
MX_BUILTIN_BACKENDS(MX_DECLARE_BACKEND)
#undef MX_DECLARE_BACKEND

#endif  // MLXCEL_SESSION_INTERNAL_H
