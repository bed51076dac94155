// The shared graph runner: everything a session backend does that does not depend on how a
// graph is executed. It owns the KV caches, the graph bindings and the prefill chunk sizes, and
// runs the prefill loop; a backend (src/backends/) supplies only an executor (mx_graph_exec_t):
// how a bound graph is prepared (compiled), run and released. The batched state (batch_state.h)
// runs on the same executors.
//
// It lives in src/session/ rather than src/backends/ because what it encodes is the session's
// contract with the model graph (argument roles, KV layout, which T values exist), the same for
// every backend; src/backends/ then holds only per-backend code, one file each.
//
// Graphs: one @prefill per power of two T = 2, 4, ... <= the prefill chunk plus @decode
// (T = 1); a prefill of n tokens runs as the binary decomposition of n (13 = 8 + 4 + 1), largest
// piece first, so every call is exact and costs what its tokens cost (ADR 0002: never pad a
// prompt), except that a tail of several pieces runs as one graph started a few tokens early when
// that recomputes few rows (mx_runner_next_piece, ADR 0028). These graphs return the last
// position's logits only (ADR 0003); a prefill asked for every position's logits uses a second set,
// T <= MX_RUNNER_ALL_LOGITS_MAX_T, each T built on the first such request that needs it (a one-time
// allocation: prefills without all-logits and decode steps never allocate).
//
// KV state: 2L host caches [1, Hkv, ctx, D] at the model's KV dtype, owned here. Every binding
// binds each cache result to its argument's buffer: the executor updates the caches in place
// (cpu: tf.aliasing_output) or copies the new caches into them (interp).
//
// Device backends: an executor whose KV state lives in device memory (the xla backend: a PJRT
// client's buffers, donated and updated in place) sets mx_graph_exec_t.device_caches. The
// runner then allocates no host caches: the cache tensors it binds carry their types only
// (data NULL), and the executor owns the caches (ADR 0008). The per-binding `prepare` is the
// compile-once-per-entry hook.
#ifndef MX_SESSION_GRAPH_RUNNER_H
#define MX_SESSION_GRAPH_RUNNER_H

#include "mlxcel/session.h"
#include "session/graph_binding.h"

// ALL_LOGITS_MAX_T: the largest all-logits prefill call; its logits buffer is T x V floats
// (32 MiB at T = 64 and a 128K vocabulary) and the LM head dominates such a call anyway.
enum { MX_RUNNER_MAX_BUCKETS = 31, MX_RUNNER_ALL_LOGITS_MAX_T = 64 };

// The all-logits set's schedule, shared by the runner and the batched state: T = 2, 4, ... up to
// the first T >= n (never past min(chunk, MX_RUNNER_ALL_LOGITS_MAX_T) or max_sets sets), so a
// caller asking for a few positions at a time (speculative decoding's verification) builds only
// the lengths it uses. Allocates *buf (max T x V floats) on first need, then calls add(ctx, T)
// for each missing T, counting it in *n_have once add succeeded; on add's failure the caller
// frees what add left and the set stays as it was before that T. chunk < 2: nothing to build.
typedef mx_status_t (*mx_runner_add_all_fn)(void *ctx, int32_t T);

// The next piece of a prefill of n tokens of which the first `done` have run, with graphs of
// T = 1 and every power of two up to max_t (a power of two): the largest T <= min(n - done,
// max_t) from *start = done, unless the rest is below max_t, would take k >= 2 such pieces, and
// the smallest power of two T >= the rest recomputes at most MX_RUNNER_EXTRA_ROWS_PER_PIECE
// rows per piece it saves: then that T from *start = n - T (>= 0), whose first T - (n - done)
// rows run again at their own positions (the same keys and values). Every piece reads all the
// weights once; a few rows of arithmetic cost less (ADR 0028). The last piece ends at n.
enum { MX_RUNNER_EXTRA_ROWS_PER_PIECE = 4 };
int32_t mx_runner_next_piece(int32_t n, int32_t done, int32_t max_t, int32_t *start);
mx_status_t mx_runner_grow_all_logits(float **buf, int64_t V, int32_t chunk, int32_t *n_have,
                                      int32_t max_sets, int32_t n, mx_runner_add_all_fn add,
                                      void *ctx);

// What a backend supplies: how the runner's bound graphs are executed.
typedef struct mx_graph_exec {
  // Called once per binding when it is made, with b->args[] and b->res[] bound as for a run
  // (tokens, pos0, the caches; each cache result bound to its argument's buffer; the logits
  // result to the runner's logits buffer). The place to compile (b->plan). May be NULL.
  mx_status_t (*prepare)(void *impl, mx_graph_binding_t *b);
  // Runs b as bound: afterwards the cache buffers hold the new caches and the logits are in
  // b->res[b->logits_res]. Must not allocate (it is the decode hot path).
  mx_status_t (*run)(void *impl, mx_graph_binding_t *b);
  void (*release)(void *impl, mx_graph_binding_t *b);  // frees b->plan; may be NULL
  void (*destroy)(void *impl);                         // accepts NULL
  // Optional: the executor keeps the KV caches itself. Called once at creation, before any
  // prepare, with the types of the n caches (k_l = 2l, v_l = 2l + 1); the caches must then read
  // as zeros. The bindings' cache arguments and results have data NULL, and the runner's reset
  // leaves the caches as they are (every row is written before it is read).
  mx_status_t (*device_caches)(void *impl, const mx_type_t *types, int32_t n);
  // Optional: the smallest attention window of the windowed entries (ADR 0015), for executors
  // whose attention reads every cache row the graph gives it (the cpu's fused kernel reads only
  // the valid rows and needs none). 0 or NULL: every entry reads the whole capacity.
  int64_t (*attn_window)(void *impl);
} mx_graph_exec_t;

// One sequence's KV state and graphs (the state of a session backend).
typedef struct mx_graph_runner {
  const mx_graph_exec_t *ex;
  void *impl;               // owned; ex->destroy frees it
  const mx_model_t *model;  // borrowed
  int64_t ctx;
  int32_t chunk, V, n_caches;  // n_caches = 2L (k_l = 2l, v_l = 2l + 1); 0 when vision_only
  bool vision_only;            // mx_backend_config_t.vision_only: @vision alone, nothing else
  mx_tensor_t *caches;     // [n_caches] [1, Hkv, ctx, D] at the KV dtype, owned (types only, data
                           // NULL, with ex->device_caches)
  mx_tensor_t pos0;        // i32 [1]
  float *logits;           // [V]: decode and last-position prefill results
  float *all_logits;       // [min(chunk, ALL_LOGITS_MAX_T) * V], with the all-logits set
  mx_graph_binding_t dec;  // @decode (T = 1)
  int32_t n_pre, n_all;
  mx_graph_binding_t pre[MX_RUNNER_MAX_BUCKETS];  // @prefill T = 2 << i, last position's logits
  mx_graph_binding_t all[MX_RUNNER_MAX_BUCKETS];  // @prefill T = 2 << i, every position's
  // Windowed entries (ex->attn_window): window k is W = attn_window << k < ctx; win[k][0] is
  // @decode and win[k][1 + i] @prefill T = 2 << i of that window, each made on the first call
  // that needs it (b->f == NULL until then; calls at positions >= the last window run the
  // whole-capacity bindings above). A call of T tokens at pos0 runs the smallest window
  // >= pos0 + T.
  int64_t attn_window;
  int32_t n_win;
  mx_graph_binding_t (*win)[MX_RUNNER_MAX_BUCKETS + 1];  // [n_win], owned
  // Vision-language models (ADR 0010), made on the first image: @vision, whose features land in
  // `features` [tokens_per_image * H], and @prefill_media for T = 1 << i up to the chunk (an
  // image token may fall in any piece, the single last one too).
  bool has_vision;
  mx_graph_binding_t vis;  // Qwen towers: bound for the grid vis_grid (0 x 0: none yet);
                           // Molmo2: for crops, tokens, pool (vis_grid[0..2])
  int32_t vis_grid[3];
  float *features;
  // Gemma 3n (ADR 0022): @audio bound for aud_frames log-mel frames (0: none yet), rebuilt when a
  // recording has another frame count; its rows land in aud_rows [soft_tokens * H].
  mx_graph_binding_t aud;
  int32_t aud_frames;
  float *aud_rows;
  int32_t n_med;
  mx_graph_binding_t med[MX_RUNNER_MAX_BUCKETS];
  // An image's block whose length is not a power of two runs as one call of exactly its length
  // (mx_vision_media_piece): bound for med_odd.T on first need, rebuilt when the length changes.
  mx_graph_binding_t med_odd;
} mx_graph_runner_t;

// Allocates the caches and makes (and prepares) the decode and last-position prefill bindings.
// Takes ownership of impl: ex->destroy frees it, also on failure.
mx_status_t mx_graph_runner_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                                   const mx_graph_exec_t *ex, void *impl, mx_graph_runner_t **out);

// The mx_backend_t entries on a mx_graph_runner_t state: a backend built on the runner sets
// .prefill, .decode, .reset and .destroy to these.
mx_status_t mx_graph_runner_prefill(void *state, const int32_t *ids, int32_t n, int64_t pos0,
                                    float *last, float *all);
mx_status_t mx_graph_runner_decode(void *state, int32_t id, int64_t pos, float *logits);
void mx_graph_runner_reset(void *state);
// The media entries (mx_backend_t.vision / .prefill_media), for models with a vision tower.
mx_status_t mx_graph_runner_vision(void *state, const float *pixels, float *features);
mx_status_t mx_graph_runner_prefill_media(void *state, const int32_t *ids, const float *media,
                                          int32_t n, int64_t pos0, float *last);
// Gemma 3n's audio tower (mx_backend_t.audio; ADR 0022): @audio rebuilt when the frame count
// changes.
mx_status_t mx_graph_runner_audio(void *state, const float *features, const int32_t *mask,
                                  int32_t frames, float *rows);
// The Qwen towers (mx_backend_t.vision_grid / .prefill_mrope; ADR 0013): @vision rebuilt when
// the grid changes, @prefill_media with M-RoPE positions.
mx_status_t mx_graph_runner_vision_grid(void *state, const float *pixels, int32_t grid_h,
                                        int32_t grid_w, float *features);
mx_status_t mx_graph_runner_prefill_mrope(void *state, const int32_t *ids, const float *media,
                                          const int32_t *positions, int32_t n, int64_t pos0,
                                          float *last);
// Molmo2's tower (mx_backend_t.vision_pooled): @vision rebuilt when crops / tokens / pool change.
mx_status_t mx_graph_runner_vision_pooled(void *state, const float *pixels, int32_t crops,
                                          const int32_t *pooling, int32_t tokens, int32_t pool,
                                          float *features);
void mx_graph_runner_destroy(void *state);  // accepts NULL
// The session entries of a backend whose sessions are this runner (cpu, interp, xla), for its
// mx_backend_t initializer: one list, so that the three cannot drift apart (the xla backend
// lacked every media entry until issue 23 item 4).
#define MX_GRAPH_RUNNER_SESSION_ENTRIES                                             \
  .prefill = mx_graph_runner_prefill, .decode = mx_graph_runner_decode,             \
  .reset = mx_graph_runner_reset, .destroy = mx_graph_runner_destroy,               \
  .vision = mx_graph_runner_vision, .prefill_media = mx_graph_runner_prefill_media, \
  .vision_grid = mx_graph_runner_vision_grid, .audio = mx_graph_runner_audio,       \
  .prefill_mrope = mx_graph_runner_prefill_mrope, .vision_pooled = mx_graph_runner_vision_pooled
// Runs a bound @vision (mx_graph_bind_vision, prepared by ex) on one image's pixels and copies
// its features out; shared by the runner and the batched state.
mx_status_t mx_graph_run_vision(const mx_graph_exec_t *ex, void *impl, mx_graph_binding_t *vis,
                                const float *pixels, float *features);
// The same with Molmo2's pooling indices (vis->pooling's size) copied in first.
mx_status_t mx_graph_run_vision_pooled(const mx_graph_exec_t *ex, void *impl,
                                       mx_graph_binding_t *vis, const float *pixels,
                                       const int32_t *pooling, float *features);

// The inputs of one @prefill_media call of b->T tokens (the runner's and the batched state's):
// media (T rows of mx_vision_feature_width floats, or NULL: text, zero rows) split into b's
// media argument (each row's first hidden_size floats) and Qwen3-VL's DeepStack argument (part
// l of each row to its row l), and the M-RoPE positions positions[s * stride + t] (s = temporal,
// height, width; NULL for an entry without them) into b's positions. Error: positions given to
// an entry without them, or missing for one that needs them.
mx_status_t mx_graph_media_inputs(const mx_model_t *model, mx_graph_binding_t *b,
                                  const float *media, const int32_t *positions, size_t stride);

// For an executor with device_caches whose batch decodes B > 1 sequences in one call (ADR
// 0013): makes and prepares in *b the @decode of B sequences with one cache argument per
// sequence (mx_graph_bind_seqs; attention window attn_len, 0 = the whole capacity), the caches
// bound by type only, pos0 (i32 [B], borrowed) as its pos0 and logits[B * V] (borrowed) as its
// logits. The caller writes b->tokens and pos0 before each run and releases b with
// mx_graph_runner_release. With rope_offset the graph also takes its RoPE offsets
// (MX_ENTRY_TEXT_ROPE_OFFSET: b->rope_offset, which the caller writes). On failure *b is
// released.
mx_status_t mx_graph_runner_bind_seqs(mx_graph_runner_t *r, int32_t B, int64_t attn_len,
                                      bool rope_offset, const mx_tensor_t *pos0, float *logits,
                                      mx_graph_binding_t *b);
// The window a call whose positions end before `end` runs (ADR 0015): its index k, whose entries
// read W = r->attn_window << k rows, or r->n_win for the whole capacity.
int32_t mx_graph_runner_window(const mx_graph_runner_t *r, int64_t end);
// Releases a binding made by mx_graph_runner_bind_seqs (its executor plan, then the binding).
void mx_graph_runner_release(mx_graph_runner_t *r, mx_graph_binding_t *b);

// Backends that run on the host (cpu, interp) accept only the default device or "cpu".
mx_status_t mx_backend_check_host_device(const char *backend, const mx_backend_opts_t *o);

#endif  // MX_SESSION_GRAPH_RUNNER_H
