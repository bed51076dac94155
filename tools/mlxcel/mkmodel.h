// `mlxcel mkmodel` internals: the model families and presets it writes (mkmodel_presets.c), the
// JSON files of a checkpoint (mkmodel_config.c, mkmodel_tokenizer.c) and the weights
// (mkmodel_weights.c). Everything family-specific is data in these tables; the tensor list comes
// from the library (mx_model_list_weights), so a checkpoint holds exactly what the graph reads.
#ifndef MLXCEL_TOOLS_MKMODEL_H
#define MLXCEL_TOOLS_MKMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "mlxcel/hlo.h"
#include "mlxcel/model.h"

// The optional config.json keys a family's *Config class writes (transformers 4.55 layout, as
// in ../shared/fixtures); the keys every family writes are in mkmodel_config.c.
enum {
  MK_KEY_ATTN_BIAS = 1 << 0,     // attention_bias: false
  MK_KEY_LLAMA = 1 << 1,         // mlp_bias: false, pretraining_tp: 1
  MK_KEY_HEAD_DIM = 1 << 2,      // head_dim
  MK_KEY_ACT = 1 << 3,           // hidden_act (null-valued hidden_activation too with ACTIVATION)
  MK_KEY_ACTIVATION = 1 << 4,    // hidden_activation (Gemma)
  MK_KEY_ROPE_SCALING = 1 << 5,  // rope_scaling: null | {llama3} | {linear}
  MK_KEY_TIE = 1 << 6,           // tie_word_embeddings (Gemma omits it: tied by default)
  MK_KEY_LAYER_TYPES = 1 << 7,   // layer_types, as the library decides them from the rest
  MK_KEY_QWEN_WINDOW = 1 << 8,   // max_window_layers, use_sliding_window: false, window null
  MK_KEY_WINDOW = 1 << 9,        // sliding_window (null when the preset has none)
  MK_KEY_PAD = 1 << 10,          // pad_token_id
  MK_KEY_SOFTCAP = 1 << 11,      // attn_logit_softcapping, final_logit_softcapping
  MK_KEY_QPAS = 1 << 12,         // query_pre_attn_scalar
  MK_KEY_LOCAL_ROPE = 1 << 13,   // rope_local_base_freq, sliding_window_pattern
  MK_KEY_PHI3 = 1 << 14,         // embd_pdrop, resid_pdrop, original_max_position_embeddings,
                                 // partial_rotary_factor
  MK_KEY_MOE = 1 << 15,          // num_experts (num_local_experts with MOE_LOCAL),
                                 // num_experts_per_tok, output_router_logits,
                                 // router_aux_loss_coef, norm_topk_prob (not with MOE_LOCAL)
  MK_KEY_MOE_LOCAL = 1 << 16,    // Mixtral's num_local_experts, router_jitter_noise
  MK_KEY_MOE_QWEN = 1 << 17,     // moe_intermediate_size, decoder_sparse_step, mlp_only_layers
  MK_KEY_SHARED = 1 << 18,       // shared_expert_intermediate_size
  MK_KEY_DEEPSEEK = 1 << 19,     // DeepSeek's experts: n_routed_experts, n_shared_experts,
                                 // num_experts_per_tok, moe_intermediate_size,
                                 // first_k_dense_replace, n_group, topk_group,
                                 // routed_scaling_factor, norm_topk_prob
  MK_KEY_DEEPSEEK_V2 = 1 << 20,  // V2's topk_method
  // The norms' epsilon of LayerNorm families (instead of rms_norm_eps):
  MK_KEY_LAYER_NORM_EPS = 1 << 21,  // layer_norm_eps (Cohere, StableLM)
  MK_KEY_NORM_EPSILON = 1 << 22,    // norm_epsilon (StarCoder 2)
  MK_KEY_MLA = 1 << 23,             // multi-latent attention (DeepSeek, Youtu): kv_lora_rank,
                                    // q_lora_rank, qk_nope/rope_head_dim, v_head_dim
};

typedef struct mk_family {
  const char *arch;          // --arch and model_type
  const char *architecture;  // architectures[0]
  const char *act;           // "silu" | "gelu_pytorch_tanh"
  uint32_t keys;             // MK_KEY_*
} mk_family_t;

// Special tokens and chat format of a tokenizer. Token ids: `bottom` from 0, then the regular
// byte-level BPE tokens, then `top`, then reserved specials up to the vocabulary size.
typedef struct mk_layout {
  const char *bottom[8], *top[16];  // NULL-terminated
  const char *bos, *eos, *eot;      // eot: end of turn, a second EOS id (may be NULL)
  const char *pad;                  // may be NULL
  // Tokens past the vocabulary, ids vocab on: Molmo2's additional vocabulary (embedding rows
  // the LM head does not have); NULL-terminated.
  const char *additional[12];
  // Reserved specials renamed: fixed[k] is id vocab - fixed_from_end[k] (Gemma 3n's audio and
  // image tokens, in the block of reserved ids at the top); NULL-terminated.
  const char *fixed[8];
  int32_t fixed_from_end[8];
  bool add_bos;               // the post-processor prepends BOS
  const char *chat_template;  // NULL: none (a base model)
} mk_layout_t;

typedef enum mk_rope { MK_ROPE_NONE = 0, MK_ROPE_LLAMA3, MK_ROPE_LINEAR } mk_rope_t;

// A vision-language model's parts beyond its text model (issue 23): the preset's family is the
// outer model (model_type, architectures[0]; its keys and activation are the text model's), the
// preset's fields the text model, written as text_config or, where the released files keep them
// there (Qwen2-VL, Qwen2.5-VL), at the top level.
typedef struct mk_vision {
  const char *text_model_type;  // text_config's model_type; NULL: the text keys at the top level
  const char *vision_config;    // the vision_config object, JSON (the released config's values)
  // Top-level keys whose value is the id of a layout's special token (the tokenizer's id):
  // "key", "token" pairs, NULL-terminated.
  const char *token_ids[13];
  const char *extra[9];      // more top-level keys: "key", "JSON value" pairs, NULL-terminated
  const char *preprocessor;  // preprocessor_config.json (the released processor's values); NULL:
                             // none (Gemma 3n: its audio features are the library's)
} mk_vision_t;

typedef struct mk_preset {
  const char *name, *desc;
  const mk_family_t *family;
  const mk_layout_t *layout;
  int32_t vocab, hidden, inter, layers, heads, kv_heads, head_dim;
  int64_t max_pos;
  double theta;
  const char *eps;            // rms_norm_eps as transformers prints it
  int32_t n_special;          // special tokens in all (named ones + reserved); 0: the named ones
  bool untied;                // separate lm_head (where the family writes tie_word_embeddings)
  mk_rope_t rope;             // llama3: factor 32, original 8192 (Llama 3.2); linear: rope_factor
  double rope_factor;         //
  int32_t window;             // sliding_window; 0: none (null)
  int32_t max_window_layers;  // Qwen; 0: num_hidden_layers
  double attn_softcap, final_softcap;  // Gemma 2 (0: null)
  double qpas;                         // query_pre_attn_scalar (Gemma 2/3)
  double local_base;                   // rope_local_base_freq (Gemma 3)
  int32_t window_pattern;              // sliding_window_pattern (Gemma 3)
  double partial_rotary;               // Phi-3 (0: 1.0)
  const char *note;                    // e.g. "f32 needs 29 GiB: use --dtype bf16"; may be NULL
  // Mixture of experts (MK_KEY_MOE): experts, selected per token, an expert's intermediate
  // size (MOE_QWEN; else intermediate_size is the experts'), the shared expert's, renormalized.
  int32_t experts, top_k, moe_inter, shared_inter;
  bool norm_topk;
  // gpt-oss as released: each sparse layer's experts stacked and packed in MXFP4 (u8 blocks of
  // e2m1 pairs and e8m0 scales per 32 weights), with quantization_config {"quant_method":
  // "mxfp4"}; the other weights at --dtype.
  bool mxfp4_experts;
  // Multi-latent attention (MK_KEY_MLA): latent rank, query rank (0: null, a full q_proj), nope
  // / rope / value head dims; DeepSeek's experts (MK_KEY_DEEPSEEK): dense layers first, expert
  // groups (0: none; V2 then greedy), routed scale.
  int32_t kv_lora, q_lora, qk_nope, qk_rope, v_dim, first_dense, n_group, topk_group;
  double routed_scale;
  // Keys of the family's *Config that no field above covers (Granite's multipliers, MiniCPM's
  // scalings, ...): "key", "JSON value" pairs, NULL-terminated.
  const char *extra[13];
  const mk_vision_t *vision;  // a vision-language model's tower and its files; NULL: text only
} mk_preset_t;

// The preset table (mkmodel_presets.c).
int32_t mk_preset_count(void);
const mk_preset_t *mk_preset_at(int32_t i);
// The first preset called `name` of family `arch` (of any family when arch is NULL); NULL when
// there is none. *n_found: how many match.
const mk_preset_t *mk_preset_find(const char *arch, const char *name, int32_t *n_found);
const mk_family_t *mk_family_find(const char *arch);
// "llama, mistral, ..." (static storage).
const char *mk_arch_list(void);

// Special-token name k of the layout (k < the preset's n_special; reserved ones numbered).
void mk_special_name(const mk_preset_t *p, int32_t k, char *buf, size_t cap);
int32_t mk_special_count(const mk_preset_t *p);  // n_special, at least the named ones
// Token id of a special token name of the layout, the additional ones' included (-1 when
// absent).
int32_t mk_special_id(const mk_preset_t *p, const char *name);

// config.json (mkmodel_config.c): parses back what it wrote into *cfg (the library decides the
// sliding layers, written as layer_types where the family has that key).
mx_status_t mk_config_json(const mk_preset_t *p, mx_elem_type_t dt, mx_strbuf_t *sb,
                           mx_model_config_t *cfg);
void mk_generation_config_json(const mk_preset_t *p, mx_strbuf_t *sb);
// preprocessor_config.json of a vision-language preset (nothing for text presets).
void mk_preprocessor_config_json(const mk_preset_t *p, mx_strbuf_t *sb);

// tokenizer.json and tokenizer_config.json (mkmodel_tokenizer.c).
void mk_tokenizer_json(const mk_preset_t *p, mx_strbuf_t *sb);
void mk_tokenizer_config_json(const mk_preset_t *p, mx_strbuf_t *sb);

// model.safetensors with every tensor cfg's architecture reads (mkmodel_weights.c): seeded
// N(0, 0.02) values, norm weights 1 (with p->mxfp4_experts the experts packed as gpt-oss
// releases them: random e2m1 values, scales 2^-8 to 2^-6); progress on stderr for big files
// unless quiet.
mx_status_t mk_write_weights(const char *path, const mk_preset_t *p, const mx_model_config_t *cfg,
                             mx_elem_type_t dt, uint64_t seed, bool quiet);

#endif  // MLXCEL_TOOLS_MKMODEL_H
