// mlxcel-xla batched decoding: several independent sequences ("slots") of one model advance
// together, the engine under continuous batching (mlxcel serve --parallel N).
//
// Each slot owns its KV cache region and position. mx_batch_decode advances any subset of slots
// by one token in ONE batched graph call (the weights are read once for all of them), so
// aggregate decode throughput grows with the number of active slots. mx_batch_prefill appends a
// prompt chunk to one slot while the others keep their state (the server interleaves one prefill
// chunk between decode steps so running streams never stall for longer than one chunk).
// Greedy tokens of a slot do not depend on what the other slots hold or whether they are active.
//
// Threading: a batch may be used by one thread at a time (the server's scheduler thread).
// Everything a step needs is allocated at create time; prefill/decode do not allocate.
//
// Cost: a decode call costs about one single-sequence step (the weights are streamed once) plus
// the per-sequence work (attention, small per-row ops) of the slots it advances. A slot gets its
// place in the batched state when its sequence starts (the lowest free one) and gives it back on
// reset; a call runs the places up to the highest one it names, rounded up to a power of two,
// so held slots it does not name may run as discarded rows (with their attention): schedulers
// should advance every ready slot in each call and reset finished ones. Backends without batch
// support (mx_backend_t.batch NULL) work too, one call per slot. KV memory: n_slots x (ctx + 1)
// positions, taken at create.
//
// Numerics (cpu, interp): a slot's logits are bit-identical to those of an mx_session fed the
// same tokens through the same calls (prefill chunks, then one decode per token), whatever the
// other slots hold or do.
#ifndef MLXCEL_BATCH_H
#define MLXCEL_BATCH_H

#include "mlxcel/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mx_batch mx_batch_t;

enum { MX_BATCH_MAX_SLOTS = 64 };  // the graph builders' batch limit

typedef struct mx_batch_opts {
  const char *backend;             // as mx_session_opts_t ("cpu" default, "interp")
  int64_t ctx;                     // KV capacity of EACH slot; 0 = as mx_session_opts_t
  int32_t prefill_chunk;           // most tokens per prefill call; 0 = default
  int32_t n_slots;                 // 1..MX_BATCH_MAX_SLOTS
  mx_backend_opts_t backend_opts;  // as mx_session_opts_t
  const char *vision_backend;      // as mx_session_opts_t
} mx_batch_opts_t;

// `model` must outlive the batch. Bad options are errors naming the option.
mx_status_t mx_batch_create(const mx_model_t *model, const mx_batch_opts_t *opts, mx_batch_t **out);
void mx_batch_destroy(mx_batch_t *b);  // accepts NULL

int32_t mx_batch_n_slots(const mx_batch_t *b);
int64_t mx_batch_ctx(const mx_batch_t *b);    // per slot
int32_t mx_batch_chunk(const mx_batch_t *b);  // most tokens one mx_batch_prefill call takes
int32_t mx_batch_vocab(const mx_batch_t *b);
const mx_backend_t *mx_batch_backend(const mx_batch_t *b);  // NULL for NULL
const mx_model_t *mx_batch_model(const mx_batch_t *b);      // NULL for NULL

// Appends n tokens (1 <= n <= mx_batch_chunk) to the slot's sequence in one backend call. Fails
// before any work, with the numbers in the message, if n_past + n exceeds the capacity or an id
// is out of range. The logits of the last token are then mx_batch_logits(b, slot).
mx_status_t mx_batch_prefill(mx_batch_t *b, int32_t slot, const int32_t *ids, int32_t n);

// Appends ids[i] to slots[i] for i < n (distinct slots) in one batched graph call; same checks
// for every slot before any work (1 <= n <= n_slots, a full slot is an error naming it).
// Afterwards mx_batch_logits(b, slots[i]) holds each slot's. On failure the named slots have no
// logits and keep their n_past (except M-RoPE slots shifted by an image, which run first, one
// call each: those that ran keep their token).
mx_status_t mx_batch_decode(mx_batch_t *b, const int32_t *slots, const int32_t *ids, int32_t n);

// Vision-language models (model->config.vision.present; ADR 0010), as mx_session_vision and
// mx_session_prefill_media: the features of one image (pixels [C, S, S] f32, n_pixels values;
// features [tokens_per_image][hidden_size], n_features values), touching no slot; and
// mx_batch_prefill whose image-token positions take row i of media[n][hidden_size] as their
// input embedding. The first image builds (and compiles) the media entries. Errors: a text-only
// model, a backend without vision (naming it), sizes that differ from the model's.
mx_status_t mx_batch_vision(mx_batch_t *b, const float *pixels, int64_t n_pixels, float *features,
                            int64_t n_features);
mx_status_t mx_batch_prefill_media(mx_batch_t *b, int32_t slot, const int32_t *ids,
                                   const float *media, int32_t n);
// Gemma 3n (model->config.audio.present; ADR 0022), as mx_session_audio: one recording's rows
// [audio_soft_tokens_per_image][hidden_size] (n_rows values) from its log-mel features
// [frames][input_feat_size] and mask[frames], touching no slot; mx_batch_prefill_media then
// takes them at the audio tokens. Errors: no audio tower, a backend without it, too many frames.
mx_status_t mx_batch_audio(mx_batch_t *b, const float *features, const uint8_t *mask,
                           int64_t frames, float *rows, int64_t n_rows);

// The Qwen towers (Qwen2-VL, Qwen2.5-VL, Qwen3-VL; ADR 0013), as mx_session_vision_grid and
// mx_session_prefill_mrope: the features of one image of a grid_h x grid_w patch grid (its pixel
// rows, n_pixels values; features [grid_h * grid_w / m^2][mx_vision_feature_width], n_features
// values), touching no slot; and mx_batch_prefill_media with each token's M-RoPE positions
// positions[s * n + i] (s = temporal, height, width; mx_mrope_positions). A slot keeps, per
// token, the RoPE position after it: text after an image (mx_batch_prefill, mx_batch_decode)
// continues at mx_batch_rope_next through the media entry, one call per such slot (those slots
// do not share a decode step's batched call), and mx_batch_rewind keeps what it keeps.
// Molmo2 (ADR 0023): mx_session_vision_pooled's features of one image on the batch's tower,
// touching no slot; mx_batch_prefill_media then adds them at a slot's <im_patch> tokens.
mx_status_t mx_batch_vision_pooled(mx_batch_t *b, const float *pixels, int64_t n_pixels,
                                   int32_t crops, const int32_t *pooling, int32_t tokens,
                                   int32_t pool, float *features, int64_t n_features);
mx_status_t mx_batch_vision_grid(mx_batch_t *b, const float *pixels, int64_t n_pixels,
                                 int32_t grid_h, int32_t grid_w, float *features,
                                 int64_t n_features);
mx_status_t mx_batch_prefill_mrope(mx_batch_t *b, int32_t slot, const int32_t *ids,
                                   const float *media, const int32_t *positions, int32_t n);
// The RoPE position of the slot's next token (mx_batch_n_past unless an image shifted it).
int64_t mx_batch_rope_next(const mx_batch_t *b, int32_t slot);

// Logits [V] of the last token the slot processed; valid until that slot's next call or reset.
// NULL when the slot has none (new, reset, failed call) or the slot is out of range.
const float *mx_batch_logits(const mx_batch_t *b, int32_t slot);
int64_t mx_batch_n_past(const mx_batch_t *b, int32_t slot);  // 0 for a bad slot
// Forgets the slot's sequence (cheap: nothing is cleared, no other slot is touched); a bad slot
// is ignored.
void mx_batch_reset(mx_batch_t *b, int32_t slot);
// Keeps the slot's first n tokens and forgets the rest (0 <= n <= n_past; 0 is a reset), so a
// new sequence that starts with those tokens continues from them instead of prefilling them
// again (the server's prefix cache). Cheap: nothing is cleared or moved. The slot has no logits
// until its next call. Errors: a bad slot, n out of range.
mx_status_t mx_batch_rewind(mx_batch_t *b, int32_t slot, int64_t n);

// ---- Speculative decoding in a batch (ADR 0024; the session's is ADR 0020) ----
// A slot that drafts verifies its pending token and the drafts in one call of its own, every
// position's logits returned; slots without a draft keep sharing mx_batch_decode's call.

// mx_batch_prefill that also writes the logits of every position to all_logits[n][vocab]
// (caller-owned); mx_batch_logits(b, slot) is then the last row. Errors: as mx_batch_prefill, a
// batch whose backend cannot return them (mx_batch_check_all_logits), a slot whose text an
// M-RoPE image shifted (its calls run through the media entry, which has no such form).
mx_status_t mx_batch_prefill_all(mx_batch_t *b, int32_t slot, const int32_t *ids, int32_t n,
                                 float *all_logits);
// MX_OK when mx_batch_prefill_all can run on this batch's backend (cpu, interp, xla), else an
// error naming the backend.
mx_status_t mx_batch_check_all_logits(const mx_batch_t *b);

// A draft model's batch beside a target batch (ADR 0024): slot i of the drafter follows slot i
// of the target. Each draft rewinds the draft slot to the prefix it shares with the target's
// history, feeds the rest (the pending token in a decode call of its own) and takes the draft
// model's greedy tokens, as mx_generate's draft model does, so that a slot drafts what a session
// would. A new sequence in a slot reuses the draft slot's common prefix as the target's prefix
// cache does. Used by one thread at a time (the scheduler's).
typedef struct mx_batch_drafter mx_batch_drafter_t;

// `draft` (borrowed; must outlive the drafter) must have the target's tokenizer
// (mx_spec_check_draft); opts are mx_batch_create's for the draft model's batch, whose n_slots
// and ctx must be the target's (0: the target's). Errors name the difference.
mx_status_t mx_batch_drafter_create(const mx_batch_t *target, const mx_model_t *draft,
                                    const mx_batch_opts_t *opts, mx_batch_drafter_t **out);
void mx_batch_drafter_destroy(mx_batch_drafter_t *d);  // accepts NULL

// One slot's speculative state: its options and the buffers of a verification, allocated at
// create so that the steps never allocate. Drafts by prompt lookup (MX_SPEC_NGRAM), or from a
// drafter's draft model (MX_SPEC_DRAFT).
typedef struct mx_batch_spec mx_batch_spec_t;

// draft_tokens (k) 1..MX_SPEC_MAX_TOKENS and ngram_max 1..MX_SPEC_MAX_TOKENS, 0 = the
// defaults of mx_spec_opts_t; k + 1 is capped at the prefill chunk. drafter: NULL for prompt
// lookup, else the slot drafts with it (borrowed; it must outlive the state and follow b).
// Errors name the option, or the backend (mx_batch_check_all_logits). The batch must outlive
// the state, which may be created on any thread (it reads only what the batch fixed at create).
mx_status_t mx_batch_spec_create(const mx_batch_t *b, mx_batch_drafter_t *drafter,
                                 int32_t draft_tokens, int32_t ngram_max, mx_batch_spec_t **out);
void mx_batch_spec_destroy(mx_batch_spec_t *sp);          // accepts NULL
int32_t mx_batch_spec_tokens(const mx_batch_spec_t *sp);  // k as resolved

// The drafts of `slot` over history[0..n), whose last token is the slot's pending one (sampled,
// not yet fed): up to min(k, limit), kept in sp for mx_batch_spec_verify; *m their count, 0
// when there is none (no recurring suffix, a full draft slot: then decode as usual). Prompt
// lookup (ADR 0020's drafter) never fails; a draft model's calls may (the error names them).
mx_status_t mx_batch_spec_draft(mx_batch_spec_t *sp, int32_t slot, const int32_t *history,
                                int32_t n, int32_t limit, int32_t *m);
// mx_batch_spec_draft for n states of distinct slots at once (n <= MX_BATCH_MAX_SLOTS): the
// states drafting with one drafter share its draft model's calls (one batched decode call per
// draft position for all their slots) instead of a call each. ms[i] gets state i's count. A
// draft model's failure costs the slots it concerns their drafts (ms 0) and is returned after
// every state was handled.
mx_status_t mx_batch_spec_draft_many(mx_batch_spec_t *const *sps, const int32_t *slots,
                                     const int32_t *const *histories, const int32_t *ns,
                                     const int32_t *limits, int32_t n, int32_t *ms);

// Verifies the m drafts of the last mx_batch_spec_draft for `slot`, which holds history[0..n-1)
// (n - 1 tokens, the pending token history[n - 1] not yet fed): one mx_batch_prefill_all call
// of the pending token and the drafts (padded with copies of the last draft to a power of two
// where the chunk and the capacity allow, as the session pads), then the sampler judges them as
// mx_generate's speculative steps do (mx_sampler_spec_accept, the same draws in the same order).
// history must have room for n + m ids: history[n..n + m) receives the drafts (the penalties'
// history of the later rows). Writes the step's tokens to out[0..*n_out) (1..m + 1: the accepted
// drafts, then the sampler's own; out needs m + 1 entries) and rewinds the slot to hold the
// pending token and the accepted drafts: out's last token is the next pending one. On failure
// the slot's tokens past n - 1 are forgotten.
mx_status_t mx_batch_spec_verify(mx_batch_t *b, int32_t slot, mx_batch_spec_t *sp,
                                 mx_sampler_t *smp, int32_t *history, int32_t n, int32_t m,
                                 int32_t *out, int32_t *n_out);

// Fills *out for a batch of the xla backend (its slots share one device client; `calls` counts
// device calls: one per decode step of any number of slots, ADR 0016); false (and *out zeroed)
// for any other batch.
bool mx_xla_batch_stats(const mx_batch_t *b, mx_xla_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_BATCH_H
