// Internal to config parsing: the typed field readers the family parsers (family.h) use.
#ifndef MLXCEL_MODEL_CONFIG_INTERNAL_H
#define MLXCEL_MODEL_CONFIG_INTERNAL_H

#include <cjson/cJSON.h>

#include "base/try.h"
#include "mlxcel/model.h"

// A JSON object being read; `src` and `prefix` ("" or "rope_scaling.") name fields in messages
// ("models/x/config.json: rope_scaling.factor must be a number, got a string").
typedef struct mx_cfg_obj {
  const cJSON *obj;
  const char *src;
  const char *prefix;
} mx_cfg_obj_t;

// Parses JSON text (not necessarily NUL-terminated) into a root object; `src` names it.
mx_status_t mx_cfg_parse_json(const char *text, size_t len, const char *src, cJSON **root);

// True when `key` is present and not JSON null (HF treats null as "use the default").
bool mx_cfg_has(const mx_cfg_obj_t *o, const char *key);
// Readers: absent or null -> `def`; a value of the wrong JSON type or out of range -> an error
// naming the field.
mx_status_t mx_cfg_i32(const mx_cfg_obj_t *o, const char *key, int32_t def, int32_t *out);
mx_status_t mx_cfg_i64(const mx_cfg_obj_t *o, const char *key, int64_t def, int64_t *out);
mx_status_t mx_cfg_f64(const mx_cfg_obj_t *o, const char *key, double def, double *out);
// "<src>: <prefix><key> must be positive (got v)" unless v > 0 (a value read before).
mx_status_t mx_cfg_positive(const mx_cfg_obj_t *o, const char *key, double v);
// mx_cfg_f64 whose value (def included) must be positive.
mx_status_t mx_cfg_f64_positive(const mx_cfg_obj_t *o, const char *key, double def, double *out);
mx_status_t mx_cfg_bool(const mx_cfg_obj_t *o, const char *key, bool def, bool *out);
mx_status_t mx_cfg_str(const mx_cfg_obj_t *o, const char *key, const char *def, char *out,
                       size_t cap);
// Token id: absent -> def, null or negative -> -1.
mx_status_t mx_cfg_token(const mx_cfg_obj_t *o, const char *key, int32_t def, int32_t *out);
// eos_token_id: int or list of ints; absent leaves cfg untouched, null clears it.
mx_status_t mx_cfg_eos(const mx_cfg_obj_t *o, mx_model_config_t *cfg);

// HF defaults of the fields every decoder-only family shares (the family's *Config class).
typedef struct mx_cfg_defaults {
  int32_t vocab_size, hidden_size, intermediate_size, num_layers, num_heads;
  int32_t num_kv_heads;  // used when the key is absent; 0 (or a null value): num_heads
  int32_t head_dim;      // used when the key is absent; 0 (or a null value): hidden / heads
  int64_t max_position_embeddings;
  double rms_norm_eps, rope_theta;
  double partial_rotary_factor;  // used when the key is absent; 0: 1.0 (StableLM: 0.25)
  bool tie_word_embeddings;
  const char *hidden_act;
  int32_t bos_token_id, eos_token_id, pad_token_id;  // -1: none
  // The scaled RoPE types' pretraining length when the config has no top-level key (Phi-3:
  // 4096); 0: the rope dict's, else max_position_embeddings.
  int64_t original_max_position_embeddings;
  // Phi-3: "su" and "yarn" are its old names of longrope, and only default / longrope exist.
  bool rope_longrope_only;
} mx_cfg_defaults_t;

// Reads the shared fields (sizes, heads, head_dim, eps, rope incl. rope_scaling, tie, biases,
// hidden_act, dtype, token ids) with the family's defaults and validates them.
mx_status_t mx_cfg_parse_common(const mx_cfg_obj_t *o, const mx_cfg_defaults_t *d,
                                mx_model_config_t *cfg);

// rope_scaling / rope_parameters -> cfg->rope_scaling, every value resolved (config_rope.c).
// Needs cfg->max_position_embeddings; rotary_dim sizes longrope's factor lists.
mx_status_t mx_cfg_rope_scaling(const mx_cfg_obj_t *root, const mx_cfg_defaults_t *d,
                                int32_t rotary_dim, mx_model_config_t *cfg);
// The same from one rope dict `params` (its prefix names it in messages), for families whose
// dicts are nested per layer type; root holds the top-level keys.
mx_status_t mx_cfg_rope_params(const mx_cfg_obj_t *root, const mx_cfg_obj_t *params,
                               const mx_cfg_defaults_t *d, int32_t rotary_dim,
                               mx_model_config_t *cfg);

// Whether o's rope_parameters is nested per layer type, as transformers 5 writes OLMo 3's and
// Gemma 3's: {"full_attention": {...}, "sliding_attention": {...}}.
bool mx_cfg_rope_nested(const mx_cfg_obj_t *o);
// mx_cfg_parse_common for such a config: the full-attention entry gives rope_theta (default: the
// top-level rope_theta, else d's) and cfg->rope_scaling (any type); the sliding entry gives
// cfg->rope_local_base_freq (default sliding_def) and must be unscaled (the refusal names
// `family`), as transformers applies scaling to the full-attention layers only.
mx_status_t mx_cfg_parse_common_nested(const mx_cfg_obj_t *o, const mx_cfg_defaults_t *d,
                                       const char *family, double sliding_def,
                                       mx_model_config_t *cfg);

// o's sub-object `key` in *out; absent or null: an empty object in *empty (the caller deletes it),
// so that the sub-config's defaults apply; another type is an error naming the key.
mx_status_t mx_cfg_sub_object(const mx_cfg_obj_t *o, const char *key, cJSON **empty,
                              const cJSON **out);

// A special token's index in o (key, or alias when o lacks key; def when both are absent),
// which must lie in the text vocabulary: the error names the key.
mx_status_t mx_cfg_token_index(const mx_cfg_obj_t *o, const char *key, const char *alias,
                               int32_t def, int32_t vocab, int32_t *out);

// Gemma 3n's audio_config and audio token ids from the outer config o into cfg->audio (after the
// text config: the token ids must lie in cfg->vocab_size); absent audio_config: no audio tower
// (config_audio.c).
mx_status_t mx_cfg_audio_gemma3n(const mx_cfg_obj_t *o, mx_model_config_t *cfg);
// Gemma 3n's embed_vision / embed_audio (mx_model_config_t.mm_embed) from the outer config's
// vision_config and audio_config (Gemma3nVisionConfig's / Gemma3nAudioConfig's defaults).
mx_status_t mx_cfg_mm_embeds_gemma3n(const mx_cfg_obj_t *o, mx_model_config_t *cfg);

// A ViT vision_config class's defaults (CLIPVisionConfig, SiglipVisionConfig).
typedef struct mx_vit_defaults {
  const char *model_type;  // the one accepted
  int32_t hidden_size, intermediate_size, num_layers, num_heads, image_size, patch_size;
  double layer_norm_eps;
  const char *hidden_act;  // the default
  const char *acts[2];     // the activations the tower supports (acts[1] may be NULL)
} mx_vit_defaults_t;

// o's vision_config (absent: the defaults) into the ViT fields of *v (sizes, eps, hidden_act:
// gelu_pytorch_tanh stored as "gelu_tanh"), validated (config_vision.c).
mx_status_t mx_cfg_vit(const mx_cfg_obj_t *o, const mx_vit_defaults_t *d, mx_vision_config_t *v);

// fullatt_block_indexes of a windowed tower's vision_config t (Qwen2.5-VL, Youtu-VL): the blocks
// with full attention (the others attend within windows) into v->layer_full, after
// v->num_layers is read. Absent or null: def[0..n_def) (those below num_layers), or an error
// when def is NULL (qwen2_vl.c).
mx_status_t mx_cfg_full_blocks(const mx_cfg_obj_t *t, const int32_t *def, int32_t n_def,
                               mx_vision_config_t *v);

// torch_dtype (or transformers 5's dtype) -> cfg->dtype; absent: float32.
mx_status_t mx_cfg_dtype(const mx_cfg_obj_t *o, mx_model_config_t *cfg);

// Normalizes cfg->hidden_act (read from `key`) to "silu" or "gelu_pytorch_tanh"; any other
// activation is refused naming the field and the family.
mx_status_t mx_cfg_activation(const mx_cfg_obj_t *o, const char *key, mx_model_config_t *cfg);

// Which layers use the sliding window. `layer_types` (a list of num_hidden_layers strings,
// "full_attention" | "sliding_attention") wins when present; otherwise layer l is sliding iff
// default_sliding(l, arg). Needs cfg->num_layers.
typedef bool (*mx_cfg_sliding_fn)(int32_t layer, int32_t arg);
mx_status_t mx_cfg_layer_types(const mx_cfg_obj_t *o, mx_cfg_sliding_fn default_sliding,
                               int32_t arg, mx_model_config_t *cfg);
// sliding_window: absent -> def, null -> 0 (none); must be positive otherwise.
mx_status_t mx_cfg_window(const mx_cfg_obj_t *o, int32_t def, mx_model_config_t *cfg);
// A soft-capping value: absent -> def, null -> 0 (none); must be positive otherwise.
mx_status_t mx_cfg_softcap(const mx_cfg_obj_t *o, const char *key, double def, double *out);

// Mixture of experts (config_moe.c): checks cfg's expert fields (experts >= 1, 1 <= k <= experts,
// F >= 1; `experts_key` names the count in messages) and, with sparse_layers, reads Qwen's
// decoder_sparse_step and mlp_only_layers into cfg->layer_dense as transformers places the
// sparse blocks.
mx_status_t mx_cfg_moe(const mx_cfg_obj_t *o, const char *experts_key, bool sparse_layers,
                       mx_model_config_t *cfg);
// cfg->num_experts from num_experts or num_local_experts (transformers maps one onto the other
// in every MoE config: transformers 5 writes Qwen3-MoE's as num_local_experts, released files
// num_experts); both present and different is an error naming both.
mx_status_t mx_cfg_experts(const mx_cfg_obj_t *o, int32_t def, mx_model_config_t *cfg);

// A mx_cfg_sliding_fn for families whose window applies to every layer.
bool mx_cfg_every_layer(int32_t layer, int32_t arg);
// A mx_cfg_sliding_fn: every layer slides but each n-th ((layer + 1) % n == 0), n > 0.
bool mx_cfg_not_every_nth(int32_t layer, int32_t n);

#endif  // MLXCEL_MODEL_CONFIG_INTERNAL_H
