// The batched KV state shared by the backends that implement MX_CAP_BATCH (cpu, interp):
// n_slots sequences in one cache per layer, the graph bindings that run on it, and the rules
// that keep slots independent. The backend supplies only how a bound graph runs, with the same
// executor (mx_graph_exec_t, graph_runner.h) as its sessions: the cpu backend compiles and runs
// plans in place, the interpreter runs the function and copies the new caches back.
//
// Layout: cache j is [n_slots, Hkv, S, D] at the model's KV dtype, with S = ctx + 1; slot s owns
// the contiguous slice [s], so a prefix [0, B) of the slots is itself a [B, Hkv, S, D] tensor and
// one slot is a [1, Hkv, S, D] tensor: graphs built for B sequences or for one sequence bind to
// those slices zero-copy.
//
// Decode: one @decode graph per B in {1, 2, 4, ..., n_slots} (a small set); a call naming slots
// whose highest index is h runs the smallest B > h over the prefix [0, B). Slots in the prefix
// that the call does not name are "parked": they get token 0 at position len[s] (the tokens the
// slot holds), so their write lands on a row no query of theirs has seen (every query reads
// only keys <= its position, and the slot's next real token rewrites that row before anything
// reads it). A full slot (len == ctx) parks on row ctx, the spare row that only parked writes
// touch: without it, dynamic_update_slice would clamp the write onto row ctx - 1, the slot's
// last real key. Parked rows' logits are discarded.
//
// Prefill: the @prefill graphs of one sequence (T = 2, 4, ..., <= chunk, binary decomposition
// of n as the session backends do) and the B = 1 @decode graph, bound to the slot's slice.
//
// Independence: every graph op the batched decode runs computes each sequence's rows from that
// sequence's rows only (per-row matmuls, norms, RoPE; attention reads the sequence's own cache
// slice), so a slot's logits do not depend on the other slots as long as the backend's kernels
// give per-row results that do not depend on the row count (the cpu backend compiles its decode
// plans with mx_cpu_compile_opts_t.rows_as_gemv for that).
#ifndef MX_SESSION_BATCH_STATE_H
#define MX_SESSION_BATCH_STATE_H

#include "session/graph_runner.h"

enum { MX_BSTATE_MAX_SLOTS = 64, MX_BSTATE_MAX_PLANS = 32 };

typedef struct mx_bstate {
  const mx_graph_exec_t *ex;
  const mx_model_t *model;  // borrowed; outlives the state
  void *impl;               // owned; ex->destroy frees it
  int64_t ctx;
  int64_t S;  // ctx + 1 (the spare row)
  int32_t chunk, V, n_slots, n_caches;
  mx_tensor_t *caches;  // [n_caches] [n_slots, Hkv, S, D] at the KV dtype, owned
  mx_tensor_t *views;   // [n_caches] the slices bound for the current call
  int64_t *len;         // [n_slots] tokens each slot holds (its parking row)
  int32_t *pos0;        // [n_slots] pos0 argument storage
  float *logits;        // [max(prefill logits rows, n_slots) * V]
  // M-RoPE models (ADR 0013): the text graphs (dec, pre, all) take a RoPE offset per sequence
  // (MX_ENTRY_TEXT_ROPE_OFFSET), so that slots an image shifted decode in the shared call;
  // prefill pieces run with offset 0 (text before any image, as the session's @prefill).
  bool rope_offset;
  int64_t runs;  // graph calls made (tests check that a decode step is one call)
  int32_t n_dec;
  mx_graph_binding_t dec[MX_BSTATE_MAX_PLANS];  // @decode for B = 1, 2, 4, ..., n_slots
  int32_t n_pre;
  mx_graph_binding_t pre[MX_BSTATE_MAX_PLANS];  // @prefill B = 1, T = 2, 4, ... <= chunk
  // Every position's logits (speculative decoding's verification, ADR 0024): @prefill B = 1,
  // T = 2, 4, ... <= min(chunk, MX_RUNNER_ALL_LOGITS_MAX_T), each made on the first call that
  // needs it, as the session runner's all-logits set; their logits land in all_logits [T * V].
  int32_t n_all;
  mx_graph_binding_t all[MX_BSTATE_MAX_PLANS];
  float *all_logits;
  // Vision-language models (ADR 0010), made on the first image as a session's runner makes
  // them: @vision (features [tokens_per_image * H]) and @prefill_media B = 1, T = 1, 2, 4, ...
  // <= chunk, bound to one slot's slice per call like the prefill graphs.
  // The Qwen towers' @vision is bound per patch grid (vis_grid; 0 x 0: none yet). A model with
  // an audio tower and no vision tower (Gemma 3n) holds @audio there instead, bound for
  // vis_grid[0] log-mel frames, its rows in `features`.
  bool has_vision;
  mx_graph_binding_t vis;
  int32_t vis_grid[3];  // Molmo2: crops, tokens, pool
  float *features;
  int32_t n_med;
  mx_graph_binding_t med[MX_BSTATE_MAX_PLANS];
  // An image's block of a length that is not a power of two: one call of exactly its length
  // (mx_vision_media_piece), bound on first need and rebuilt when the length changes.
  mx_graph_binding_t med_odd;
} mx_bstate_t;

// Takes ownership of impl (freed by ex->destroy also on failure).
mx_status_t mx_bstate_create(const mx_model_t *model, int64_t ctx, int32_t chunk, int32_t n_slots,
                             const mx_graph_exec_t *ex, void *impl, mx_bstate_t **out);
void mx_bstate_destroy(void *state);  // accepts NULL
// The mx_backend_batch_t entries (session_internal.h) on a mx_bstate_t (with mx_bstate_destroy).
mx_status_t mx_bstate_prefill(void *state, int32_t slot, const int32_t *ids, int32_t n,
                              int64_t pos0, float *last);
mx_status_t mx_bstate_decode(void *state, const int32_t *slots, const int32_t *ids,
                             const int64_t *pos, const int64_t *rope, int32_t n, float *logits);
// mx_bstate_prefill that also writes every position's logits to all[n][V] (the all-logits
// graphs, built on first need; pieces of one token run the B = 1 decode graph).
mx_status_t mx_bstate_prefill_all(void *state, int32_t slot, const int32_t *ids, int32_t n,
                                  int64_t pos0, float *last, float *all);
void mx_bstate_reset(void *state, int32_t slot);
void mx_bstate_rewind(void *state, int32_t slot, int64_t n);
// The optional media entries of mx_backend_batch_t (the vision tower on one image; a prefill of
// one slot whose image-token positions take their media rows), as the session runner's.
mx_status_t mx_bstate_vision(void *state, const float *pixels, float *features);
mx_status_t mx_bstate_prefill_media(void *state, int32_t slot, const int32_t *ids,
                                    const float *media, int32_t n, int64_t pos0, float *last);
// The Qwen towers' entries (ADR 0013): @vision per patch grid, @prefill_media with M-RoPE
// positions.
mx_status_t mx_bstate_vision_grid(void *state, const float *pixels, int32_t grid_h, int32_t grid_w,
                                  float *features);
// Molmo2's tower: @vision per geometry (crops, tokens, pool) with its pooling indices.
mx_status_t mx_bstate_vision_pooled(void *state, const float *pixels, int32_t crops,
                                    const int32_t *pooling, int32_t tokens, int32_t pool,
                                    float *features);
mx_status_t mx_bstate_prefill_mrope(void *state, int32_t slot, const int32_t *ids,
                                    const float *media, const int32_t *positions, int32_t n,
                                    int64_t pos0, float *last);
// Gemma 3n's @audio (ADR 0022), bound per frame count.
mx_status_t mx_bstate_audio(void *state, const float *features, const int32_t *mask, int32_t frames,
                            float *rows);

#endif  // MX_SESSION_BATCH_STATE_H
