// Binding a model's @prefill / @decode graph function to a session's buffers, shared by the
// backends: the module is built for T tokens, weight arguments point zero-copy at the mmapped
// checkpoint tensors (types checked), and the tokens / pos0 / cache arguments and the logits and
// cache results are located by their `mx.role` attributes (model.h, mx_graph_arg_info).
#ifndef MX_SESSION_GRAPH_BINDING_H
#define MX_SESSION_GRAPH_BINDING_H

#include "mlxcel/model.h"

// Which entry of the model's module a binding runs (ADR 0010 for the media entries).
typedef enum mx_graph_entry {
  MX_ENTRY_TEXT = 0,  // @prefill (T > 1) or @decode (T = 1)
  MX_ENTRY_MEDIA,     // @prefill_media: tokens, pos0, caches and the media rows
  MX_ENTRY_VISION,    // @vision: the pixels of one image -> its features (no caches, no tokens)
  MX_ENTRY_AUDIO,     // @audio: one recording's log-mel features and frame mask -> its rows
  // @prefill / @decode with a RoPE offset per sequence (mx_graph_opts_t.rope_offset): the
  // batched decode of M-RoPE models whose slots an image shifted (ADR 0013).
  MX_ENTRY_TEXT_ROPE_OFFSET,
} mx_graph_entry_t;

typedef struct mx_graph_binding {
  mx_module_t *mod;    // owned
  int32_t B;           // sequences (batch)
  int32_t T;           // static token count
  mx_tensor_t tokens;  // i32 [B, T], owned
  mx_func_t *f;        // @prefill (T > 1) or @decode (T = 1) in mod
  int32_t n_args;
  mx_tensor_t
      *args;         // [n_args]; weights borrowed from the checkpoint, the rest bound by the runner
  mx_tensor_t *res;  // [f->n_results], bound by the runner, filled by the executor
  int32_t tokens_arg, pos0_arg;  // -1 for @vision
  mx_graph_entry_t entry;
  // @prefill_media: the media rows f32 [B, T, H]; @vision: the pixels f32 [1, C, S, S]; owned
  // (bound as argument input_arg by mx_graph_bind). Empty for the text entries.
  mx_tensor_t input;
  int32_t input_arg;
  // @prefill_media of an M-RoPE model: the positions i32 [3, B, T] (owned, bound as argument
  // positions_arg; the runner fills it); -1 / empty otherwise.
  mx_tensor_t positions;
  int32_t positions_arg;
  // @prefill_media of Qwen3-VL: the DeepStack rows f32 [L, B, T, H] (owned, bound as argument
  // deepstack_arg; the runner fills it); -1 / empty otherwise.
  mx_tensor_t deepstack;
  int32_t deepstack_arg;
  // @vision of Molmo2: image_token_pooling i32 [tokens, pool] (owned, bound as argument
  // pooling_arg; the runner fills it); -1 / empty otherwise.
  mx_tensor_t pooling;
  int32_t pooling_arg;
  // @audio: the frame mask i32 [1, F] (owned, bound as argument audio_mask_arg; the features
  // f32 [1, F, mels] are `input`); -1 / empty otherwise.
  mx_tensor_t audio_mask;
  int32_t audio_mask_arg;
  // MX_ENTRY_TEXT_ROPE_OFFSET: the RoPE offsets i32 [B] (owned, zeroed, bound as argument
  // rope_offset_arg; the runner fills it); -1 / empty otherwise.
  mx_tensor_t rope_offset;
  int32_t rope_offset_arg;
  int32_t n_caches;    // 2L, or B * 2L (mx_graph_bind_seqs)
  int32_t *cache_arg;  // [n_caches]: argument index of cache j (k_l = 2l, v_l = 2l+1)
  int32_t *cache_res;  // [n_caches]: result index holding the new cache j
  int32_t logits_res;
  bool all_logits;  // logits hold every position ([B, T, V]); false: [B, V] of the last one
  void *plan;  // the executor's compiled form (the cpu backend's mx_cpu_plan_t); NULL otherwise
} mx_graph_binding_t;

// Builds the graph for B sequences of T tokens (T = 1 binds @decode, else @prefill) with KV
// capacity ctx, and binds it: tokens [B, T], pos0 [B], caches [B, Hkv, ctx, D] (caches[] give
// the types), logits [B, T, V] when all_logits and T > 1, else [B, V] (the last position's).
// On failure the partly filled binding must still be released with mx_graph_binding_free.
mx_status_t mx_graph_bind(const mx_model_t *model, int64_t ctx, int32_t V,
                          const mx_tensor_t *caches, int32_t n_caches, int32_t B, int32_t T,
                          bool all_logits, mx_graph_binding_t *b);
// mx_graph_bind of one sequence (last position's logits) whose attention reads only cache rows
// [0, attn_len) (mx_graph_opts_t.attn_len, ADR 0015): for calls with pos0 + T <= attn_len.
mx_status_t mx_graph_bind_window(const mx_model_t *model, int64_t ctx, int64_t attn_len, int32_t V,
                                 const mx_tensor_t *caches, int32_t n_caches, int32_t T,
                                 mx_graph_binding_t *b);
// @decode of B sequences with one cache argument per sequence (mx_graph_opts_t.seq_caches,
// ADR 0016): caches[B * 2L] sequence-major (sequence s's k_l = 2 L s + 2l, v_l = 2 L s + 2l + 1),
// each [1, Hkv, ctx, D]; tokens [B, 1], pos0 [B], logits [B, V]; attention reads cache rows
// [0, attn_len) (0: all), as mx_graph_bind_window.
// With rope_offset, the graph also takes its rope_offset argument (MX_ENTRY_TEXT_ROPE_OFFSET).
mx_status_t mx_graph_bind_seqs(const mx_model_t *model, int64_t ctx, int64_t attn_len, int32_t V,
                               const mx_tensor_t *caches, int32_t n_caches, int32_t B,
                               bool rope_offset, mx_graph_binding_t *b);
// mx_graph_bind for any entry: MX_ENTRY_MEDIA binds @prefill_media (any T >= 1; its input is
// the media rows), MX_ENTRY_TEXT_ROPE_OFFSET @prefill / @decode with their rope_offset argument,
// MX_ENTRY_VISION binds @vision (n_caches 0, T 1; its input is the pixels,
// result 0 the features [1, N, H] f32, which the caller binds).
mx_status_t mx_graph_bind_entry(const mx_model_t *model, int64_t ctx, int32_t V,
                                const mx_tensor_t *caches, int32_t n_caches, int32_t B, int32_t T,
                                bool all_logits, mx_graph_entry_t entry, mx_graph_binding_t *b);
// @vision bound for one image (mx_graph_bind_entry with MX_ENTRY_VISION, ctx as the caller's
// caches were built for): the pixels are its input, and its result 0, the features [1, N, H],
// is bound to `features` (N * H floats, borrowed; outlives the binding).
mx_status_t mx_graph_bind_vision(const mx_model_t *model, int64_t ctx, int32_t V, float *features,
                                 mx_graph_binding_t *b);
// @audio of Gemma 3n for `frames` log-mel frames (ADR 0022): its input is the features
// [1, frames, mels], audio_mask the frame mask [1, frames], result 0 the rows
// [1, audio_soft_tokens_per_image, H] f32 (the caller binds it).
mx_status_t mx_graph_bind_audio(const mx_model_t *model, int32_t frames, mx_graph_binding_t *b);
// @vision of a Qwen tower for a grid_h x grid_w patch grid (ADR 0013): its input is the pixel
// rows [grid_h * grid_w, C*Tp*P*P], result 0 the features [1, grid_h * grid_w / m^2, H].
mx_status_t mx_graph_bind_vision_grid(const mx_model_t *model, int32_t grid_h, int32_t grid_w,
                                      mx_graph_binding_t *b);
// @vision of Molmo2 for `crops` crops and `tokens` pooled tokens of `pool` patches each: its
// input is the pixel_values [crops, N, P*P*3], its pooling argument image_token_pooling
// [tokens, pool], result 0 the features [1, tokens, H].
mx_status_t mx_graph_bind_vision_pooled(const mx_model_t *model, int32_t crops, int32_t tokens,
                                        int32_t pool, mx_graph_binding_t *b);
// Binds a bound @vision's input and its result 0 to `features` (the result's size in floats,
// borrowed; outlives the binding): the last step of mx_graph_bind_vision, for a grid's too.
void mx_graph_bind_features(mx_graph_binding_t *b, float *features);
// Frees what mx_graph_bind allocated (not `plan`, which its executor owns). Accepts a zeroed one.
void mx_graph_binding_free(mx_graph_binding_t *b);

#endif  // MX_SESSION_GRAPH_BINDING_H
