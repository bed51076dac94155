// mlxcel-xla models: checkpoint loading (safetensors, mmapped), config.json, and the graph
// builders that turn a config into StableHLO `prefill` / `decode` functions.
//
// Data flow: checkpoint dir -> mx_model_load (config + checkpoint + tokenizer, validated) ->
// mx_model_build_graph (StableHLO module) -> a session backend binds the weight arguments to
// the mmapped tensors and runs the functions.
#ifndef MLXCEL_MODEL_H
#define MLXCEL_MODEL_H

#include "mlxcel/hlo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mx_tokenizer mx_tokenizer_t;  // see mlxcel/tokenizer.h

// ============================================================================================
// Checkpoint (safetensors, single file or sharded via model.safetensors.index.json)
// ============================================================================================

typedef struct mx_weight {
  const char *name;  // checkpoint tensor name ("model.layers.0.self_attn.q_proj.weight")
  mx_elem_type_t
      dtype;  // F64 F32 F16 BF16 I64 I32 I16 I8 UI64 UI32 UI16 UI8 I1(BOOL) F8E4M3FN F8E5M2
  int32_t rank;
  int64_t dims[MX_MAX_RANK];
  const void *data;  // points into the mmapped file: zero-copy, valid while the checkpoint is open
  size_t nbytes;     // == numel * mx_elem_size(dtype)
  const char *file;  // file name the tensor lives in (for messages)
} mx_weight_t;

typedef struct mx_checkpoint mx_checkpoint_t;

// Opens DIR/model.safetensors, or every shard listed in DIR/model.safetensors.index.json, and
// validates each header strictly (length bounds, JSON, known dtypes, shape x dtype == byte span,
// spans inside the file and non-overlapping). Errors name the file, tensor and problem.
mx_status_t mx_checkpoint_open(const char *dir, mx_checkpoint_t **out);
void mx_checkpoint_close(mx_checkpoint_t *ck);  // accepts NULL; unmaps the files
int32_t mx_checkpoint_count(const mx_checkpoint_t *ck);
const mx_weight_t *mx_checkpoint_weight(const mx_checkpoint_t *ck, int32_t i);  // 0 <= i < count
const mx_weight_t *mx_checkpoint_find(const mx_checkpoint_t *ck,
                                      const char *name);  // NULL if absent
// Drops the whole pages of [data, data + nbytes) from this process's resident memory when the
// range lies inside one of the checkpoint's (read-only) file mappings: for tensors a runtime has
// copied (e.g. packed) and no longer reads. The bytes stay valid and readable (the next access
// reads them from the file again). Returns the bytes released (0 outside the mappings).
size_t mx_checkpoint_release(const mx_checkpoint_t *ck, const void *data, size_t nbytes);
// Validates one safetensors file image in memory (the same checks as open); for fuzzing/tests.
mx_status_t mx_safetensors_validate(const void *data, size_t len, const char *filename);

// Resident-weight overlay (used by the load-time quantization pass, src/model/quant_*.c): puts
// a tensor the checkpoint then owns (`data`: from malloc / aligned_alloc, released with free()
// at close; on error it is freed here) under `name`, replacing any tensor of that name (a
// replaced mmapped tensor stays mapped but is no longer found). mx_checkpoint_remove hides a
// tensor (MX_ERR_INVALID_ARG when absent). Both invalidate pointers returned earlier by
// mx_checkpoint_find / mx_checkpoint_weight.
mx_status_t mx_checkpoint_put(mx_checkpoint_t *ck, const char *name, mx_elem_type_t dtype,
                              int32_t rank, const int64_t *dims, void *data);
mx_status_t mx_checkpoint_remove(mx_checkpoint_t *ck, const char *name);

// Resource limits of a checkpoint; 0 selects the default. A checkpoint over a limit is refused
// before anything is mapped beyond it, with a message naming the file (and tensor) and the limit.
typedef struct mx_checkpoint_limits {
  uint64_t max_tensor_bytes;  // largest single tensor (default 32 GiB)
  uint64_t max_total_bytes;   // sum of the sizes of the mapped safetensors files (default 2 TiB)
} mx_checkpoint_limits_t;
#define MX_CHECKPOINT_MAX_TENSOR_BYTES ((uint64_t)32 << 30)
#define MX_CHECKPOINT_MAX_TOTAL_BYTES ((uint64_t)2 << 40)
// mx_checkpoint_open with limits; limits may be NULL (all defaults).
mx_status_t mx_checkpoint_open_ex(const char *dir, const mx_checkpoint_limits_t *limits,
                                  mx_checkpoint_t **out);

// ============================================================================================
// Model configuration (config.json + generation_config.json)
// ============================================================================================

typedef enum mx_rope_scaling_kind {
  MX_ROPE_SCALING_NONE = 0,
  MX_ROPE_SCALING_LINEAR,    // inv_freq / factor
  MX_ROPE_SCALING_LLAMA3,    // Llama 3.1 frequency-dependent scaling
  MX_ROPE_SCALING_YARN,      // YaRN: per-dimension blend of interpolation and extrapolation
  MX_ROPE_SCALING_LONGROPE,  // LongRoPE (Phi-3.5 / Phi-4): per-dimension factors, short or long
  // Dynamic NTK: changes the base only for sequences past max_position_embeddings, which bounds
  // every context of this engine, so its tables are the plain ones.
  MX_ROPE_SCALING_DYNAMIC,
} mx_rope_scaling_kind_t;

enum { MX_ROPE_MAX_FACTORS = 256 };  // longrope factor lists: rotary_dim / 2 entries at most

// Every value resolved as transformers resolves it (defaults and derived values filled in), so
// the graph builder needs nothing else of the config.
typedef struct mx_rope_scaling {
  mx_rope_scaling_kind_t kind;
  double factor;
  double low_freq_factor;                    // llama3
  double high_freq_factor;                   // llama3
  int64_t original_max_position_embeddings;  // llama3, yarn, longrope
  double beta_fast, beta_slow;               // yarn (32, 1)
  bool truncate;                             // yarn: floor / ceil the correction range (true)
  // yarn, longrope: cos and sin are multiplied by it (the derived default when the config
  // gives none: yarn's mscale rule, longrope's sqrt(1 + ln(factor) / ln(original))).
  double attention_factor;
  // yarn: mscale_all_dim of the config (0 when absent). Multi-latent attention (DeepSeek) also
  // multiplies its softmax scale by yarn's mscale(factor, mscale_all_dim)^2 when it is set.
  double mscale_all_dim;
  int32_t n_factors;                        // longrope: entries of each list (rotary_dim / 2)
  float short_factor[MX_ROPE_MAX_FACTORS];  // longrope: used while the context fits the original
  float long_factor[MX_ROPE_MAX_FACTORS];   // longrope: used when the capacity exceeds it
} mx_rope_scaling_t;

enum { MX_MAX_EOS_IDS = 16 };
enum { MX_MAX_LAYERS = 512 };  // num_hidden_layers above this is refused

// Gemma 3n's audio tower (Gemma3nAudioConfig; ADR 0022): present when the config has an
// audio_config. The log-mel frames (input_feat_size mels) go through the convolutional
// sub-sampler (two blocks: sscp_channels[i] output channels, kernel sscp_kernel[i] and stride
// sscp_stride[i] as (time, frequency), cumulative group norms of sscp_group_norm_eps), then
// num_layers conformer blocks of hidden_size (num_heads heads; chunked local attention of
// chunk_size with context_left - 1 past and context_right future frames, relative position
// logits, logits capped at logit_cap; light convolutions of conv_kernel; feed-forwards scaled by
// residual_weight; activations clipped at gradient_clipping), every reduction-th frame kept; then
// embed_audio (vocab_size hard tokens from vocab_offset; rms_norm_eps) onto the text model's
// width. soft_tokens (audio_soft_tokens_per_image) rows per audio, padded with the embedding of
// the text vocabulary's last id; the prompt's audio_token_id positions take them, between
// boa_token_id and eoa_token_id.
typedef struct mx_audio_config {
  bool present;
  int32_t input_feat_size, hidden_size, num_heads, num_layers;
  int32_t chunk_size, context_left, context_right, conv_kernel, reduction;
  int32_t sscp_channels[2], sscp_kernel[2][2], sscp_stride[2][2];  // [block][time, frequency]
  double logit_cap, gradient_clipping, residual_weight, sscp_group_norm_eps, rms_norm_eps;
  int32_t vocab_size, vocab_offset, soft_tokens;
  int32_t audio_token_id, boa_token_id, eoa_token_id;
} mx_audio_config_t;

// One of Gemma 3n's multimodal embedders (Gemma3nMultimodalEmbedder: embed_vision, embed_audio)
// as the text model's input embedding sees it: ids from `offset` on (up to the next embedder's
// offset) are row id - offset of its vocab x hidden table, RMS-normalized (hard_embedding_norm,
// eps), projected to the text width and RMS-normalized without a scale; vocab 0: none.
typedef struct mx_mm_embed {
  int32_t offset, vocab, hidden;
  double eps;
} mx_mm_embed_t;
enum { MX_MM_VISION, MX_MM_AUDIO, MX_MM_EMBEDS };

// Soft tokens the audio tower gives for `frames` log-mel frames (before the padding to
// soft_tokens): the sub-sampler's output frames, every reduction-th kept.
int64_t mx_audio_tokens(const mx_audio_config_t *a, int64_t frames);

// Which vision tower (ADR 0010): LLaVA's CLIP ViT and projector, Gemma 3's SigLIP ViT and pooled
// projector (both: square images of one size, tokens_per_image features each), or Qwen2-VL's /
// Qwen2.5-VL's ViT with 2-D RoPE and patch merger (images of any size: one @vision per patch
// grid).
typedef enum mx_vision_kind {
  MX_VISION_CLIP = 0,
  MX_VISION_QWEN2_VL = 1,
  MX_VISION_QWEN2_5_VL = 2,
  MX_VISION_SIGLIP = 3,
  MX_VISION_QWEN3_VL = 4,  // Qwen2-VL's layout plus learned position embeddings and DeepStack
  MX_VISION_MOLMO2 = 5,    // Molmo2: a ViT over crops, an attention-pooling adapter
  MX_VISION_YOUTU_VL = 6,  // Youtu-VL: SigLIP-2 patches in Qwen2.5-VL's windowed tower (ADR 0027)
} mx_vision_kind_t;

enum { MX_VISION_MAX_LAYERS = 128, MX_VISION_MAX_FEATURES = 8 };

// The vision tower of a vision-language model (LLaVA: a CLIP ViT and a two-layer projector onto
// the text model's hidden size; ADR 0010). Zeroed (present false) for text-only models.
typedef struct mx_vision_config {
  bool present;
  mx_vision_kind_t kind;
  char text_model_type[32];  // the family of text_config ("llama", "mistral", "qwen2")
  int32_t image_size, patch_size, num_channels;  // square images of image_size pixels
  int32_t hidden_size, intermediate_size, num_heads;
  int32_t num_layers;  // encoder layers in the checkpoint
  int32_t layers_run;  // encoder layers the features need (vision_feature_layer: -2 = all but
                       // the last); the tower's hidden states after them are the features
  bool drop_cls;       // vision_feature_select_strategy "default": the class token is dropped
  double layer_norm_eps;
  char hidden_act[32];       // the tower's MLP: "quick_gelu", "gelu", (SigLIP) "gelu_tanh",
                             // (Qwen3-VL) "gelu_pytorch_tanh"
  char projector_act[16];    // between the projector's two linears: "gelu" or "quick_gelu"
  bool projector_bias;       // multimodal_projector_bias
  int32_t image_token_id;    // image_token_index: one such token per image feature in the prompt
  int32_t tokens_per_image;  // features per image: patches (+ 1 when the class token is kept);
                             // Gemma 3: mm_tokens_per_image (the patches average-pooled);
                             // 0 for the Qwen towers (grid_h * grid_w / merge^2 per image)
  // Qwen2-VL / Qwen2.5-VL (image_size is 0: images come in any patch grid).
  int32_t spatial_merge_size;     // m: m x m patches merge into one feature
  int32_t temporal_patch_size;    // frames per patch (an image is repeated to fill them)
  int32_t window_size;            // Qwen2.5-VL: a window's side in pixels (window attention)
  int32_t vision_start_token_id;  // <|vision_start|> (Gemma 3: <start_of_image>, boi_token_index)
                                  // before each image's tokens
  int32_t vision_end_token_id;    // <|vision_end|> (Gemma 3: <end_of_image>) after them
  double rope_theta;              // the tower's 2-D RoPE base
  uint8_t layer_full[MX_VISION_MAX_LAYERS];  // Qwen2.5-VL: 1 for fullatt_block_indexes
  // Qwen3-VL: a learned num_position_embeddings-row table (a square grid) resampled to each
  // image's grid, and DeepStack: after each block of deepstack_layers[0..n_deepstack), a merger
  // of its own whose features are added to the hidden states of text layer i (ADR 0021).
  int32_t num_position_embeddings;
  int32_t n_deepstack;
  int32_t deepstack_layers[MX_VISION_MAX_LAYERS];
  // Molmo2: the tower's heads of head_dim (q/k/v biases: attention_bias); the hidden states
  // feature_layers[0..n_feature_layers) (0: the embeddings, l: after layer l) concatenated and
  // pooled by the adapter (attention of adapter_heads x adapter_head_dim, its output
  // adapter_hidden wide, then a SiLU-gated MLP of adapter_intermediate onto the text model);
  // image_token_id is <im_patch>, vision_start / end_token_id <im_start> / <im_end>, and the
  // global view starts with low_res_start_token_id.
  int32_t head_dim;
  bool attention_bias;
  int32_t n_feature_layers;
  int32_t feature_layers[MX_VISION_MAX_FEATURES];
  int32_t adapter_heads, adapter_head_dim, adapter_hidden, adapter_intermediate;
  bool adapter_attention_bias;
  int32_t low_res_start_token_id;
  // Molmo2's image tokens are the consecutive special ids block_lo..block_hi (the smallest and
  // largest of config.json's image_start / image_end / image_patch / low_res_image_start /
  // frame_start / frame_end ids; <im_col> and <im_low> lie between them in the released and
  // the fixture tokenizers, and <|image|> too, which never survives the prompt's expansion):
  // each run of them is one bidirectional block (ADR 0023). 0 / -1 for the other towers.
  int32_t block_lo, block_hi;
} mx_vision_config_t;

// Whether the image tokens of each image attend to each other bidirectionally in the text model
// (Gemma 3: causal, and bidirectional inside each run of image tokens): a prefill call must hold
// each run whole (mx_vision_prefill_take).
static inline bool mx_vision_blocks(const mx_vision_config_t *v) {
  return v->present && (v->kind == MX_VISION_SIGLIP || v->kind == MX_VISION_MOLMO2);
}

// Whether the processor expands each image in the prompt text before tokenizing (Gemma 3:
// mx_chat_expand_images), rather than the ids after it (Molmo2, the others).
static inline bool mx_vision_text_expanded(const mx_vision_config_t *v) {
  return v->present && v->kind == MX_VISION_SIGLIP;
}

// Whether token id belongs to an image's block (mx_vision_blocks): Gemma 3's image token, or
// any of Molmo2's image tokens (block_lo..block_hi: patches, columns, starts and ends).
static inline bool mx_vision_block_token(const mx_vision_config_t *v, int32_t id) {
  if (v->kind == MX_VISION_MOLMO2) return id >= v->block_lo && id <= v->block_hi;
  return id == v->image_token_id;
}

// Whether the tower takes square images of one size (vision.image_size) and gives
// tokens_per_image features each through one @vision (CLIP, SigLIP), rather than one @vision per
// patch grid (the Qwen towers).
static inline bool mx_vision_fixed_size(const mx_vision_config_t *v) {
  return v->kind == MX_VISION_CLIP || v->kind == MX_VISION_SIGLIP;
}

// Whether the text model takes each image's 3-D M-RoPE positions (ADR 0013): the Qwen towers.
// Youtu-VL's tower takes a patch grid too, but its text model's positions are the plain 1-D ones.
static inline bool mx_vision_mrope(const mx_vision_config_t *v) {
  return v->present && (v->kind == MX_VISION_QWEN2_VL || v->kind == MX_VISION_QWEN2_5_VL ||
                        v->kind == MX_VISION_QWEN3_VL);
}

// The processor's prompt rule for images (ADR 0010): each of the n_images image tokens of
// ids[n] (vision.image_token_id, one per image, in order) becomes a run of image tokens, so the
// features of image i land on the i-th run: tokens_per_image each for the fixed-size towers,
// counts[i] for the Qwen towers (their grid's merged units, ADR 0013), whose runs are also
// wrapped in vision_start / vision_end tokens where the prompt lacks them (a chat template
// writes them; a raw prompt or a template that takes text may not). counts may be NULL for the
// fixed-size towers. *out (heap, the caller frees) receives the expanded ids, *n_out their
// count. Errors: a number of image tokens other than n_images (MX_ERR_INVALID_ARG naming both),
// a Qwen tower without counts, a prompt over INT32_MAX tokens, out of memory; Gemma 3
// (MX_ERR_UNSUPPORTED: its processor expands the text, mx_chat_expand_images in chat.h).
struct mx_model_config;
mx_status_t mx_vision_expand_prompt(const struct mx_model_config *cfg, const int32_t *ids,
                                    int32_t n, int32_t n_images, const int32_t *counts,
                                    int32_t **out, int32_t *n_out);
// Where the features of n_images images go in an expanded prompt ids[n]: starts[i] is the first
// position of the i-th run of counts[i] image tokens (counts NULL: tokens_per_image each), each
// run starting at the next image token after the previous one. Error when a run is missing.
mx_status_t mx_vision_image_runs(const struct mx_model_config *cfg, const int32_t *ids, int32_t n,
                                 int32_t n_images, const int32_t *counts, int32_t *starts);
// How many of the n prompt tokens ids[] the next prefill call, of at most `chunk` tokens, takes
// (*take): all it can, but for a model with image blocks (mx_vision_blocks) never cutting a run
// of image tokens. prev_image: the context before ids[0] holds image tokens that ids' image
// tokens would attend to (mx_vision_context_image). A run longer than the chunk that starts ids
// is taken whole (the runners run it as one graph). For Molmo2, whose image tokens all attend to
// each other (transformers' mask, ADR 0023), the span from the first image token of ids to the
// last, text between images included, is what is never cut. Errors (MX_ERR_INVALID_ARG): ids
// continue a run of image tokens already in the context; for Molmo2, image tokens after the
// context's.
mx_status_t mx_vision_prefill_take(const struct mx_model_config *cfg, const int32_t *ids, int32_t n,
                                   int32_t chunk, bool prev_image, int32_t *take);
// Whether a context tokens[n] holds image tokens that a prefill's image tokens would attend to
// (mx_vision_prefill_take's prev_image): the last token for Gemma 3 (each image its own block),
// any image token for Molmo2 (all of them one block); false for models without blocks.
bool mx_vision_context_image(const mx_vision_config_t *v, const int32_t *tokens, int64_t n);
// The next piece of a prefill call's ids[n] that a runner of power-of-two graphs (the largest
// max_pow2) runs as one call, so that no piece cuts an image's block (mx_vision_blocks): at a
// run of block tokens, the whole run (any length: the runner takes a graph of that length), for
// Molmo2 everything up to the last image token of ids (its images are one block); else the
// largest power of two <= max_pow2 within the text before the next run. 0 when n is 0.
int32_t mx_vision_media_piece(const mx_vision_config_t *v, const int32_t *ids, int32_t n,
                              int32_t max_pow2);
// Molmo2's image tokens (Molmo2Processor; the ids are the tokenizer's: config.json names only
// some of them) and its processor_config.json options: col_tokens (image_use_col_tokens),
// single_crop_col_tokens (use_single_crop_col_tokens; -1 when unset: as col_tokens),
// single_crop_start (use_single_crop_start_token).
typedef struct mx_molmo2_prompt {
  int32_t placeholder;                            // <|image|>, one per image in the prompt
  int32_t patch, col, start, low_res_start, end;  // <im_patch> <im_col> <im_start> ... <im_end>
  bool col_tokens;
  int32_t single_crop_col_tokens;
  bool single_crop_start;
} mx_molmo2_prompt_t;
// Molmo2Processor.replace_image_token on ids: the i-th placeholder of ids[n] becomes image i's
// tokens for its image_grids row grids[i] (the global view's pooled rows and columns, then the
// crops'): <low_res_im_start> (or <im_start>), grids[i][0] rows of grids[i][1] <im_patch> each
// followed by <im_col> where the options say, <im_end>, then <im_start>, grids[i][2] rows of
// grids[i][3] <im_patch> (+ <im_col>), <im_end>. The processor expands the text, but these are
// special tokens, which a tokenizer splits out before anything else, so expanding the ids is
// the same. *out (heap, the caller frees) receives n_out ids. Errors: a placeholder count other
// than n_images, a grid that is not positive, more than INT32_MAX tokens, out of memory.
mx_status_t mx_molmo2_expand_prompt(const mx_molmo2_prompt_t *p, const int32_t *ids, int32_t n,
                                    const int64_t (*grids)[4], int32_t n_images, int32_t **out,
                                    int32_t *n_out);
// The prompt tokens of a loaded Molmo2 model (struct mx_model, below): the ids from its
// tokenizer (each refused by name when missing, or when outside config.json's image tokens) and
// the options from DIR/processor_config.json (Molmo2Processor's defaults without the file).
struct mx_model;
mx_status_t mx_molmo2_prompt_load(const struct mx_model *m, mx_molmo2_prompt_t *out);
// Whether preprocessed pixel values of shape[rank] are what the tower takes ([C, S, S]); an
// error naming both shapes (the image processor and the model config disagree) otherwise.
mx_status_t mx_vision_check_pixels(const struct mx_model_config *cfg, int32_t rank,
                                   const int64_t *shape);

typedef struct mx_model_config {
  char model_type[32];    // "llama", ...
  char architecture[64];  // architectures[0], "" when absent
  int32_t vocab_size;
  int32_t hidden_size;
  int32_t intermediate_size;
  int32_t num_layers;    // num_hidden_layers
  int32_t num_heads;     // num_attention_heads
  int32_t num_kv_heads;  // num_key_value_heads (defaults to num_heads)
  int32_t head_dim;      // head_dim (defaults to hidden_size / num_heads)
  int64_t max_position_embeddings;
  double rms_norm_eps;
  double rope_theta;  // default 10000
  mx_rope_scaling_t rope_scaling;
  double partial_rotary_factor;  // 1.0 unless configured
  bool tie_word_embeddings;      // default per family (llama: false)
  bool attention_bias;
  bool mlp_bias;
  bool attention_out_bias;  // Seed-OSS: o_proj bias (other families follow attention_bias)
  char hidden_act[32];      // "silu", "gelu_pytorch_tanh", ...
  mx_elem_type_t dtype;     // torch_dtype (F32 when absent)
  int32_t bos_token_id;     // -1 when none
  int32_t pad_token_id;     // -1 when none
  int32_t n_eos;            // generation_config.json eos_token_id (int or list), else config's
  int32_t eos_token_ids[MX_MAX_EOS_IDS];
  // generation_config.json sampling defaults; has_* false when absent. They apply only when
  // do_sample is true: transformers' default (do_sample absent or false) decodes greedily
  // whatever temperature the file also names.
  bool do_sample;
  bool has_temperature, has_top_p, has_top_k;
  float temperature, top_p;
  int32_t top_k;
  // Attention variants of the families after Llama (zero when the family has none).
  int32_t sliding_window;                // W: key k visible from query q iff q - W < k <= q
  uint8_t layer_sliding[MX_MAX_LAYERS];  // 1: layer l uses the window (HF layer_types)
  double query_pre_attn_scalar;          // attention scale = its^-0.5 (0: head_dim^-0.5)
  double attn_logit_softcapping;         // scores = tanh(s / c) * c (0: none)
  double final_logit_softcapping;        // logits = tanh(l / c) * c (0: none)
  double rope_local_base_freq;           // Gemma 3: RoPE base of sliding layers, unscaled
  uint8_t layer_nope[MX_MAX_LAYERS];     // 1: layer l applies no RoPE (SmolLM3, EXAONE 4)
  // Scalar multipliers of Granite and MiniCPM (0: none, i.e. 1).
  double embedding_multiplier;  // token embeddings x it
  double residual_multiplier;   // attention and MLP outputs x it before each residual add
  double attention_multiplier;  // the attention scale itself (replaces head_dim^-0.5)
  double logits_multiplier;     // logits x it (Granite: 1 / logits_scaling)
  bool use_parallel_residual;   // StableLM: x + attn(ln(x)) + mlp(ln(x)), one norm per layer
  // Mixture of experts (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE); num_experts 0: dense.
  int32_t num_experts;                      // num_local_experts (Mixtral) / num_experts
  int32_t num_experts_per_tok;              // k of the top-k routing
  int32_t moe_intermediate_size;            // an expert's F (Mixtral, OLMoE: intermediate_size)
  int32_t shared_expert_intermediate_size;  // Qwen2-MoE's sigmoid-gated shared expert (0: none)
  bool norm_topk_prob;                      // the k routing weights renormalized to sum 1
  uint8_t layer_dense[MX_MAX_LAYERS];       // 1: layer l has a dense MLP of intermediate_size
                                            // (Qwen MoE's mlp_only_layers / decoder_sparse_step)
  // DeepSeek's routing (zeros for the others): sigmoid scores plus e_score_correction_bias for
  // the choice (V3) instead of the softmax; the experts in moe_groups groups of which the
  // moe_topk_groups best are kept (0: no groups); weights x routed_scaling_factor (0: 1); the
  // shared experts (shared_expert_intermediate_size) summed without a gate.
  bool moe_sigmoid;
  int32_t moe_groups, moe_topk_groups;
  double routed_scaling_factor;
  // gpt-oss's experts: the clamped SwiGLU of swiglu_alpha and swiglu_limit (0: the family's
  // hidden_act), the router's and the experts' biases, attention sinks.
  double swiglu_alpha, swiglu_limit;
  // Multi-latent attention (DeepSeek-V2 / V3; ADR 0012); kv_lora_rank 0: ordinary attention.
  // q = q_b_proj(q_a_layernorm(q_a_proj x)) (q_proj x when q_lora_rank is 0) splits per head
  // into qk_nope_head_dim dims and qk_rope_head_dim rotated ones; kv_a_proj_with_mqa x splits
  // into the latent (kv_lora_rank, normalized by kv_a_layernorm) and one rotated key shared by
  // every head; kv_b_proj expands the latent into per-head nope keys and values (v_head_dim).
  // The KV caches hold the latent and the rotated key (mx_config_cache_dims).
  int32_t kv_lora_rank, q_lora_rank;
  int32_t qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
  bool rope_interleave;  // the rotated dims pair as (2i, 2i + 1) (DeepSeek), not (i, i + R/2)
  // MLX quantization (config `quantization`, or `quantization_config` when only that is
  // present): default bits (4 or 8) and group size of the quantized layers; 0 when the config
  // has none. Only mode "affine" (or no mode) is accepted. Per-layer overrides are read and
  // checked against the tensors at load (mx_model_load_ex).
  int32_t quant_bits;
  int32_t quant_group_size;
  mx_vision_config_t vision;  // vision-language models only (present false otherwise)
  mx_audio_config_t audio;    // Gemma 3n with an audio_config only (present false otherwise)
  // model_type gemma3n: embed_vision and embed_audio (vision_config's and audio_config's fields,
  // transformers' defaults when a config is absent); other models: vocab 0.
  mx_mm_embed_t mm_embed[MX_MM_EMBEDS];
  // Qwen2-VL's M-RoPE: the rotary half's frequencies split into temporal / height / width
  // sections of these sizes (summing to head_dim / 2); all 0 for one position per token.
  int32_t mrope_section[3];
  // Qwen3-VL's interleaved M-RoPE: frequency i belongs to the height section when i % 3 == 1 and
  // i < 3 * mrope_section[1], to the width section when i % 3 == 2 and i < 3 * mrope_section[2],
  // to the temporal section otherwise (mx_mrope_section_of).
  bool mrope_interleaved;
  // Gemma 3n's text model (altup_num_inputs 0 for the other families): AltUp over
  // altup_num_inputs streams of which altup_active_idx runs through the layer (its corrected
  // output x correct_output_scale when altup_correct_scale), per-layer inputs of
  // hidden_size_per_layer_input from a table of vocab_size_per_layer_input rows, Laurel blocks
  // of laurel_rank, the last num_kv_shared_layers layers attending over the KV of the last
  // earlier layer of their type, per-layer intermediate sizes and activation sparsities (the
  // gaussian top-k of the gate: 0 for none).
  int32_t altup_num_inputs, altup_active_idx;
  bool altup_correct_scale;
  int32_t hidden_size_per_layer_input, vocab_size_per_layer_input, laurel_rank;
  int32_t num_kv_shared_layers;
  int32_t layer_ffn[MX_MAX_LAYERS];
  float layer_sparsity[MX_MAX_LAYERS];
  // Molmo2: the embedding has extra_vocab_size rows beyond the LM head's vocab_size (its
  // additional vocabulary, where the image tokens live): token ids below vocab_size +
  // extra_vocab_size are valid input (mx_config_input_vocab); its text layers normalize q and k
  // over whole projections (qk_norm_flat, qk_norm_type "olmo") and may normalize each block's
  // output instead of its input (norm_after).
  int32_t extra_vocab_size;
  bool qk_norm_flat, norm_after;
} mx_model_config_t;

// The number of valid input token ids: vocab_size plus any embedding rows beyond it (Molmo2).
static inline int32_t mx_config_input_vocab(const mx_model_config_t *cfg) {
  return cfg->vocab_size + cfg->extra_vocab_size;
}

// Floats per image token of a vision model's features (@vision's rows, the host's media rows):
// the text model's hidden size, times 1 + n_deepstack for Qwen3-VL, whose rows carry the main
// merger's features followed by each DeepStack merger's (ADR 0021).
int64_t mx_vision_feature_width(const mx_model_config_t *cfg);
// The token id whose prompt positions take @prefill_media's rows: vision.image_token_id, or
// audio.audio_token_id for a model with an audio tower and no vision tower (Gemma 3n).
int32_t mx_media_token_id(const mx_model_config_t *cfg);

// The shape [heads, width] of KV cache j of a model (j = 2l: layer l's k_cache, 2l + 1: its
// v_cache), each cache being [B, heads, capacity, width]: [num_kv_heads, head_dim] for both;
// with multi-latent attention (kv_lora_rank > 0; ADR 0012) the k_cache holds the normalized
// latent [1, kv_lora_rank] and the v_cache the rotated shared key [1, qk_rope_head_dim]; Gemma
// 3n's KV-sharing layers (the last num_kv_shared_layers), which read an earlier layer's caches,
// get [1, 1] caches nothing reads.
void mx_config_cache_dims(const mx_model_config_t *cfg, int32_t j, int64_t dims[2]);

// Reads DIR/config.json and, when present, DIR/generation_config.json. Unknown model_types and
// unsupported options are refused with a message naming the field; out-of-range values (zero
// heads, hidden not divisible, negative sizes, ...) too.
mx_status_t mx_config_load(const char *dir, mx_model_config_t *cfg);
// Same from memory; gen_json may be NULL. `source` names the input in messages.
mx_status_t mx_config_parse(const char *config_json, size_t len, const char *gen_json,
                            size_t gen_len, const char *source, mx_model_config_t *cfg);

// ============================================================================================
// Weight quantization (docs/quantization.md)
// ============================================================================================
//
// Weight-only, per group of `group_size` consecutive weights of a row (the input dimension K)
// of every linear layer whose K is a multiple of the group size (the others stay as they are):
// - INT8: symmetric, q = round(w / s) in [-127, 127], s = max|w| / 127 per group; stored as
//   i8 [N, K] "<x>.weight" + "<x>.scales" [N, K / g] (f16 by default, or f32).
// - INT4: symmetric, s = -w_absmax_signed / 8 (the element of largest magnitude maps to -8),
//   q = clamp(round(w / s), -8, 7); stored as MLX packs 4-bit values (uint32 [N, K / 8], 8
//   lanes LSB first) holding q + 8, with "<x>.scales" (no biases): w = (u - 8) * s.
// - MLX: the affine format of MLX checkpoints as stored: uint32-packed `bits`-bit values u (LSB
//   first), "<x>.scales" and "<x>.biases" (f16, bf16 or f32) [N, K / g]: w = u * s + b.
// In the graph each such layer is one `mx.linear` composite (and a quantized embedding one
// `mx.embedding`) whose decomposition unpacks, converts, scales and runs dot_general / gather.

typedef enum mx_quant_mode {
  MX_QUANT_AUTO = 0,  // MLX for MLX-quantized checkpoints, NONE otherwise
  MX_QUANT_NONE,      // float weights (MLX checkpoints are dequantized at load)
  MX_QUANT_INT8,      // requantize every quantizable layer to symmetric int8 at load
  MX_QUANT_INT4,      // requantize to symmetric int4 at load
  MX_QUANT_MLX,       // keep the checkpoint's MLX affine 4/8-bit layers resident as stored
} mx_quant_mode_t;

// "auto", "none", "int8", "int4", "mlx"; "?" for other values.
const char *mx_quant_mode_name(mx_quant_mode_t m);
// Parses one of the names above (exact, lowercase). MX_ERR_INVALID_ARG naming `what` otherwise.
mx_status_t mx_quant_mode_parse(const char *s, const char *what, mx_quant_mode_t *out);

// Writes an MLX-format quantized copy of the model in in_dir (any checkpoint mx_model_load
// reads; an MLX one is dequantized first) to out_dir, as `mlx_lm.convert -q --q-bits B
// --q-group-size G --dtype D` lays it out: every linear layer and embedding whose input dimension
// is a multiple of G becomes "<x>.weight" uint32 (B-bit values, LSB first), "<x>.scales" and
// "<x>.biases" (MLX's affine rule, on the weights cast to D); every other tensor is cast to D;
// config.json gets `quantization` / `quantization_config` {group_size, bits, mode: "affine"};
// model.safetensors (metadata format "mlx") with its index; the other files of in_dir
// (tokenizer, generation config) are copied. out_dir is created if needed; files there are
// replaced.
// Mixture-of-experts expert weights are quantized the same way (per expert, as mx.moe reads
// them) when the hidden and expert sizes are both multiples of G; routers and shared-expert
// gates stay float (the graph reads them in float).
typedef struct mx_quantize_report {
  int32_t n_quantized;  // matrices written quantized (experts included)
  int32_t n_experts;    // of which expert projections
  int32_t n_gates;      // routers and shared-expert gates, left float
  int32_t n_float;      // other matrices left float (input size not a multiple of G)
} mx_quantize_report_t;
typedef struct mx_quantize_opts {
  int32_t bits;                  // 4 or 8
  int32_t group_size;            // 32, 64 or 128 (0 = 64)
  mx_elem_type_t dtype;          // F16 (MX_ELEM_INVALID = default), BF16 or F32
  mx_quantize_report_t *report;  // filled on success when not NULL (caller-owned)
} mx_quantize_opts_t;
mx_status_t mx_model_quantize(const char *in_dir, const char *out_dir,
                              const mx_quantize_opts_t *opts);

// ============================================================================================
// A loaded model: config + checkpoint + tokenizer
// ============================================================================================

typedef struct mx_model {
  char *dir;  // heap copy of the directory path
  mx_model_config_t config;
  mx_checkpoint_t *ckpt;      // owned; holds the resident (possibly requantized) weights
  mx_tokenizer_t *tokenizer;  // owned; NULL only via mx_model_load_ex's tokenizer_optional
  // Resolved quantization (never MX_QUANT_AUTO): what the resident weights are.
  mx_quant_mode_t quant;
  int32_t quant_group_size;  // INT8 / INT4: the group size used; MLX: the config's default
  int32_t quant_bits;        // 8, 4 (MLX: the config's default bits); 0 for NONE
  int32_t n_quantized;       // linear layers, embeddings and expert projections held quantized
  bool quant_mxfp4;          // MLX mode whose stored weights are all MXFP4 (gpt-oss's experts)
  // Resolved precision (see mx_model_load_opts_t): the element type of every matmul weight as
  // resident in ckpt (F32, F16 or BF16), hence of the inputs of the graphs' weight
  // dot_generals; and the KV-cache element type sessions use.
  mx_elem_type_t precision;
  mx_elem_type_t kv_dtype;
} mx_model_t;

// What a loaded model's weights are, for reports: mx_quant_mode_name(m->quant), except "mxfp4"
// for a checkpoint whose stored quantized weights are all MXFP4 (static storage).
const char *mx_model_quant_name(const mx_model_t *m);

// Loads config, checkpoint and tokenizer from DIR and checks that every tensor the architecture
// needs is present with the right shape and a supported dtype (mx_model_check_weights), and that
// no floating-point weight holds NaN or Inf (see mx_model_load_opts_t.allow_nonfinite). The
// precision is auto (see mx_model_load_opts_t).
mx_status_t mx_model_load(const char *dir, mx_model_t **out);

typedef struct mx_model_load_opts {
  // false (mx_model_load): DIR/tokenizer.json must load. true: it is loaded when present and
  // m->tokenizer is NULL otherwise (graph-only uses: parity tests on the tokenizer-less
  // fixtures, emit, logits from ids); callers that need text must then check m->tokenizer.
  bool tokenizer_optional;
  // Weight quantization (see above). AUTO (0) when unset.
  mx_quant_mode_t quant;
  // INT8 / INT4 group size: 32, 64 or 128 (0 = 64). Must be 0 for NONE and MLX.
  int32_t group_size;
  // INT8 / INT4 scales: MX_ELEM_F16 (MX_ELEM_INVALID = default) or MX_ELEM_F32.
  mx_elem_type_t quant_scale_dtype;

  mx_checkpoint_limits_t limits;  // checkpoint size limits (zeros: the defaults)
  // false: a floating-point weight holding NaN or +-Inf is refused at load ("tensor 'x' has a
  // non-finite value (NaN at element 12)"): such a model can only produce garbage. The check
  // reads every weight once (memory bandwidth). true: skip it.
  bool allow_nonfinite;
  // Precision of the matmuls: MX_ELEM_F32, MX_ELEM_F16 or MX_ELEM_BF16. The matmul weights
  // (attention and MLP projections, the LM head, hence a tied embedding) are made resident in
  // this type, converted once here (round to nearest even; an f16 overflow is an error naming
  // the tensor), so the graph's dot_generals take f16/bf16 inputs with f32 accumulation and a
  // decode step reads half the bytes. Norm weights and biases become f32; an untied embedding
  // keeps the checkpoint's type. MX_ELEM_INVALID = auto: the checkpoint's dominant matmul-weight
  // type (a bf16 checkpoint runs bf16, an f32 one f32).
  mx_elem_type_t precision;
  // KV-cache element type (F32, F16, BF16); MX_ELEM_INVALID = the resolved precision.
  mx_elem_type_t kv_dtype;
  // Progress hook (base.h) of the stages that read or rewrite every weight: "quantizing" (or
  // "dequantizing" an MLX checkpoint), "mapping" (the first read of the mmapped weights: the
  // non-finite check) and "converting" (precision). Zero = none.
  mx_progress_t progress;
} mx_model_load_opts_t;
// mx_model_load with options; opts may be NULL (= mx_model_load).
mx_status_t mx_model_load_ex(const char *dir, const mx_model_load_opts_t *opts, mx_model_t **out);

// GGUF files (llama.cpp's format; docs/adr/0011-gguf.md): mx_model_load / _ex take the path of
// a .gguf file in place of a directory; the file's metadata is the config, its tensors the
// checkpoint (F32, F16, BF16 as mapped; Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K repacked exactly into
// the int8, int4 and MLX-affine layouts above), its tokenizer.* keys the tokenizer and chat
// template.
// Whether PATH names a GGUF file: a name ending in ".gguf", or a regular file starting "GGUF".
bool mx_model_is_gguf(const char *path);
// The tokenizer of the GGUF file at PATH (on failure *out is NULL).
mx_status_t mx_gguf_load_tokenizer(const char *path, mx_tokenizer_t **out);
void mx_model_free(mx_model_t *m);  // accepts NULL

// Parses a precision / KV dtype name: "f32", "f16", "bf16" (also "float32", "float16",
// "bfloat16"). MX_ERR_INVALID_ARG naming `what` (e.g. "--precision") otherwise.
mx_status_t mx_precision_parse(const char *s, const char *what, mx_elem_type_t *out);
// The precision the loader would pick for this config + checkpoint when none is forced: the
// element type holding most matmul-weight elements, quantized weights counting as f32 (their
// layers compute in f32); F32 when the checkpoint has no f16 / bf16 majority.
mx_status_t mx_model_auto_precision(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                    mx_elem_type_t *out);
// The precision and KV dtype mx_model_load_ex resolves for opts (NULL = both auto) on this
// config + checkpoint: explicit values (validated: f32, f16, bf16), else the defaults.
mx_status_t mx_model_resolve_precision(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                       const mx_model_load_opts_t *opts, mx_elem_type_t *precision,
                                       mx_elem_type_t *kv_dtype);
// Converts the checkpoint's float weights in place (mx_checkpoint_put) to the resident types of
// `precision` described at mx_model_load_opts_t. Tensors already in their type, and quantized
// ones, are untouched.
mx_status_t mx_model_apply_precision(const mx_model_config_t *cfg, mx_checkpoint_t *ck,
                                     mx_elem_type_t precision);
// What the matmul weights of one decoded token (every layer's projections and the LM head)
// weigh as the model holds them: quantized layers their stored values + scales (+ biases),
// float layers float_bytes per weight (what the runtime computes in). *params gets the number
// of matmul weights, *n_quant how many of the matrices are quantized (either may be NULL).
mx_status_t mx_model_matmul_bytes(const mx_model_t *m, int float_bytes, double *bytes,
                                  double *params, int32_t *n_quant);
// The same for the mixture-of-experts expert projections of every layer and expert (0 for a
// dense model): a decode step reads top_k / num_experts of them. *n_quant (may be NULL): how
// many are quantized.
mx_status_t mx_model_expert_bytes(const mx_model_t *m, int float_bytes, double *bytes,
                                  int32_t *n_quant);

// ============================================================================================
// Graph builders
// ============================================================================================
//
// mx_model_build_graph returns a module with two public functions and private composite
// decompositions:
//   @prefill(weights..., %tokens: tensor<B x T x i32>, %pos0: tensor<B x i32>,
//            %k_cache_0, %v_cache_0, ..., %k_cache_{L-1}, %v_cache_{L-1})
//       -> (logits, k_cache_0, v_cache_0, ...)
//   @decode: the same with T = 1 and logits of shape [B, V].
// Caches are tensor<B x Hkv x S x D x kv_dtype>; each cache result aliases its argument
// (`tf.aliasing_output`). Prefill logits are [B, T, V] f32 when all_logits, else [B, V] for the
// last position. Query t of sequence b sits at position pos0[b] + t. Weight arguments keep the
// checkpoint tensor's dtype (as resident after the loader's precision pass). The precision of
// each linear layer is its weight's type: an f16 / bf16 weight multiplies the f32 activation
// converted to that type (`convert`, then `dot_general(bf16, bf16) -> f32`: f32 accumulation);
// other weights are converted to f32. Norms, RoPE, attention (softmax and its dots, on the
// caches converted to f32) and residuals are f32 whatever the precision. Every argument carries
// arg attributes `mx.role` ("weight", "tokens", "pos0", "k_cache", "v_cache"; "media", "pixels" in
// the media entries), `mx.name` (checkpoint tensor name, or "k_cache_3"), and for caches
// `mx.layer` (and `mx.seq` with seq_caches); mx_graph_arg_info reads them back (also on a
// re-parsed, emitted module).

typedef struct mx_graph_opts {
  int32_t batch;            // B; 0 means 1
  int64_t ctx;              // S, the KV capacity (> 0)
  int32_t prefill_len;      // T of @prefill (> 0)
  bool all_logits;          // @prefill returns logits of all T positions
  mx_elem_type_t kv_dtype;  // MX_ELEM_INVALID means f32
  // Vision-language models (cfg->vision.present) only: also build the media entries (ADR 0010):
  //   @vision(weights..., %pixels: tensor<1 x C x S x S x f32>) -> features [1, N, H] f32
  //       (the tower, the feature layer's hidden states, the projector; N = tokens_per_image)
  //   @prefill_media: @prefill (T tokens) with one more argument after the caches,
  //       %media: tensor<B x T x H x f32> (role "media"): the embedding of every position whose
  //       token is the image token is replaced by its media row (the other rows are not read).
  //       Models with M-RoPE (mrope_section) take one more argument after the media rows,
  //       %positions: tensor<3 x B x T x i32> (role "positions"): each token's temporal, height
  //       and width RoPE positions (the cache positions stay pos0[b] + t; ADR 0013).
  //       Qwen3-VL (vision.n_deepstack = L > 0) takes one more after them,
  //       %deepstack: tensor<L x B x T x H x f32> (role "deepstack"): row l is added to the
  //       image tokens' hidden states after text layer l (l < num_layers; ADR 0021).
  bool media;
  // The Qwen towers: the patch grid (grid_thw's h, w) @vision is built for; its pixels are
  // tensor<(gh*gw) x (C*Tp*P*P) x f32> (the processor's rows) and its features
  // [1, gh*gw / m^2, H]. 0: no @vision (the other media entries are still built).
  int32_t vision_grid_h, vision_grid_w;
  // Molmo2: @vision is built for vision_grid_h crops and vision_grid_w pooled tokens of
  // vision_pool patches each; it takes the processor's pixel_values [crops, N, P*P*3] f32 and
  // image_token_pooling [tokens, vision_pool] i32 (role "pooling") and gives [1, tokens, H].
  int32_t vision_pool;
  // Attention window of the entries (ADR 0015): 0 (or ctx) = attention reads the whole cache;
  // W < ctx = each layer's attention reads only cache rows [0, W) (a static slice after the
  // cache update), so the entry costs what W costs, not what the capacity S costs. The caches
  // stay [B, Hkv, S, D] arguments and results, updated in place as always. Correct only for
  // calls whose every query position is < W (pos0 + T <= W): the caller picks the entry.
  int64_t attn_len;
  // One cache argument per sequence (ADR 0016): with B > 1, each layer's caches are B separate
  // arguments [1, Hkv, S, D] (argument attribute `mx.seq` = b) instead of one [B, Hkv, S, D],
  // ordered sequence-major (sequence b's k_0, v_0, k_1, ... then b + 1's; result 1 + j for
  // cache argument j). The linear layers run on all B rows at once; each sequence's cache write
  // and attention read only its own caches. For backends whose sequences keep their caches in
  // separate device buffers (the xla backend's serve slots), so that one call decodes any set
  // of them.
  bool seq_caches;
  // Models with an audio tower (cfg->audio.present) only: frames > 0 also builds (ADR 0022)
  //   @audio(weights..., %audio: tensor<1 x frames x input_feat_size x f32> (role "audio": the
  //          host's log-mel features), %audio_mask: tensor<1 x frames x i32> (role
  //          "audio_mask": 1 for a real frame, 0 for padding))
  //       -> tensor<1 x soft_tokens x H x f32>: the tower's rows through embed_audio, rows of
  //          padded frames and the rows past the tower's output the padding embedding.
  int32_t audio_frames;
  // @prefill and @decode take one more argument, the last: %rope_offset: tensor<B x i32> (role
  // "rope_offset"), and query t of sequence b is rotated at position pos0[b] + t +
  // rope_offset[b] while its K/V row and its attention stay at pos0[b] + t. An M-RoPE model's
  // text after an image has three equal positions that run behind the cache positions (ADR
  // 0013): with equal rows M-RoPE is the plain RoPE of that position, so a batch whose slots
  // have different shifts decodes them all in one call (mx_batch_decode).
  bool rope_offset;
} mx_graph_opts_t;

// Brings stacked expert tensors into the per-expert layout the graph reads
// ("<block>experts.<e>.<name>.*"), as mx_model_load does after opening a checkpoint: mlx-lm's
// SwitchGLU tensors ("<block>switch_mlp.<proj>.{weight,scales,biases}" [E, ...]) become views,
// gpt-oss's (gate_up_proj [E, H, 2F] interleaved, down_proj [E, F, H] and their biases)
// transposed copies the checkpoint owns; the stacked tensors leave it (src/model/moe_stacked.c).
// Nothing to do for dense models or per-expert checkpoints.
mx_status_t mx_moe_unstack(const mx_model_config_t *cfg, mx_checkpoint_t *ck);

// Checks that every tensor the architecture needs is in the checkpoint with the right shape.
mx_status_t mx_model_check_weights(const mx_model_config_t *cfg, const mx_checkpoint_t *ck);
// Lists the tensors the architecture of cfg reads (what mx_model_check_weights checks), in
// graph argument order: one call of fn per tensor with its checkpoint name (the family's first
// naming layout, e.g. "model.layers.0.self_attn.q_proj.weight") and the shape the config
// implies (rank 1 or 2). name and dims are valid during the call only. A non-OK status from
// fn stops the walk and is returned. Writers of checkpoints (`mlxcel mkmodel`) use it.
typedef mx_status_t (*mx_weight_spec_fn)(void *user, const char *name, int32_t rank,
                                         const int64_t *dims);
mx_status_t mx_model_list_weights(const mx_model_config_t *cfg, mx_weight_spec_fn fn, void *user);
// The same for the vision tower of a vision-language model (cfg->vision.present; nothing
// otherwise): every tensor @vision reads (tower, projector / merger), in its argument order,
// with the first naming layout of its family (e.g. "visual.blocks.0.attn.qkv.weight").
mx_status_t mx_vision_list_weights(const mx_model_config_t *cfg, mx_weight_spec_fn fn, void *user);
// The same for Gemma 3n's audio tower (cfg->audio.present; nothing otherwise): every tensor
// @audio reads (the sub-sampler, the conformer blocks and embed_audio, whose tensors the text
// model's list has too), in its argument order.
mx_status_t mx_audio_list_weights(const mx_model_config_t *cfg, mx_weight_spec_fn fn, void *user);
// Builds the StableHLO module; the module does not reference the checkpoint afterwards.
mx_status_t mx_model_build_graph(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                 const mx_graph_opts_t *opts, mx_module_t **out);

typedef enum mx_arg_role {
  MX_ARG_WEIGHT = 0,
  MX_ARG_TOKENS,
  MX_ARG_POS0,
  MX_ARG_K_CACHE,
  MX_ARG_V_CACHE,
  MX_ARG_MEDIA,      // @prefill_media's rows placed at the image-token positions
  MX_ARG_PIXELS,     // @vision's preprocessed image
  MX_ARG_POSITIONS,  // @prefill_media of an M-RoPE model: the positions [3, B, T] i32
  MX_ARG_DEEPSTACK,  // @prefill_media of Qwen3-VL: the DeepStack rows [L, B, T, H] f32
  MX_ARG_POOLING,    // Molmo2's @vision: image_token_pooling [tokens, K] i32
  MX_ARG_AUDIO,      // @audio's log-mel features [1, F, mels] f32
  // @audio's frame mask [1, F] i32
  MX_ARG_AUDIO_MASK,
  MX_ARG_ROPE_OFFSET,  // @prefill / @decode with mx_graph_opts_t.rope_offset: [B] i32
} mx_arg_role_t;

typedef struct mx_graph_arg {
  mx_arg_role_t role;
  const char *name;  // arena-owned by the module
  int32_t layer;     // caches; -1 otherwise
  int32_t seq;       // caches of a graph with seq_caches: the sequence; 0 otherwise
} mx_graph_arg_t;

// Reads the role attributes of argument i of a graph function. MX_ERR_INVALID_ARG if absent.
mx_status_t mx_graph_arg_info(const mx_func_t *f, int32_t i, mx_graph_arg_t *info);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_MODEL_H
