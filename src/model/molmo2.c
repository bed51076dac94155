// Molmo2, model_type "molmo2" (Molmo2ForConditionalGeneration; transformers 5.25): a ViT over
// overlapping crops, an attention-pooling adapter and a Qwen3- or OLMo-style text model.
// Config: text_config with Molmo2TextConfig's defaults and aliases (qkv_bias for
// attention_bias, layer_norm_eps for rms_norm_eps), its additional_vocab_size (embedding rows
// past the head's vocabulary, where the image tokens live), qk_norm_type ("qwen3": q/k RMSNorm
// per head; "olmo": over the whole projections), norm_after (each block's output normalized
// instead of its input) and rope_scaling_layers (a scaled RoPE on some layers only is refused).
// Graph: the checkpoints keep the original Molmo layout, which transformers converts on load and
// writes back on save: model.transformer.wte.embedding [vocab, H] and wte.new_embedding
// [additional, H] (concatenated into one embedding), blocks.<l>.self_attn.att_proj (q, k, v rows),
// attn_out, q_norm / k_norm, mlp.ff_proj (the up rows, then the gate rows), ff_out, attn_norm /
// ff_norm (input / post-attention norms, or with norm_after the attention / MLP output norms),
// transformer.ln_f and lm_head [vocab, H].
#include <string.h>

#include "model/family.h"

// ---- config.json ----

static const mx_cfg_defaults_t kTextDefaults = {
    .vocab_size = 151936,
    .hidden_size = 4096,
    .intermediate_size = 12288,
    .num_layers = 36,
    .num_heads = 32,
    .num_kv_heads = 8,
    .head_dim = 128,
    .max_position_embeddings = 36864,
    .rms_norm_eps = 1e-6,
    .rope_theta = 10000.0,
    .tie_word_embeddings = false,
    .hidden_act = "silu",
    .bos_token_id = -1,
    .eos_token_id = -1,
    .pad_token_id = -1,
};

// rope_scaling_layers: the layers that rotate with the scaled table (all when absent; the others
// with the same theta unscaled). Without scaling both tables are the same and any list is
// accepted.
static mx_status_t rope_layers(const mx_cfg_obj_t *t, const mx_model_config_t *cfg) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->obj, "rope_scaling_layers");
  if (v == NULL || cJSON_IsNull(v)) return MX_OK;
  if (!cJSON_IsArray(v))
    return mx_error_set(MX_ERR_PARSE, "%s: %srope_scaling_layers must be a list of layers", t->src,
                        t->prefix);
  bool all = cJSON_GetArraySize(v) == cfg->num_layers;
  for (int32_t l = 0; all && l < cfg->num_layers; l++) {
    const cJSON *e = cJSON_GetArrayItem(v, l);
    all = cJSON_IsNumber(e) && e->valuedouble == l;
  }
  mx_rope_scaling_kind_t k = cfg->rope_scaling.kind;  // dynamic NTK: the plain table here
  if (all || k == MX_ROPE_SCALING_NONE || k == MX_ROPE_SCALING_DYNAMIC) return MX_OK;
  return mx_error_set(MX_ERR_UNSUPPORTED,
                      "%s: %srope_scaling_layers naming only some layers of a scaled RoPE is not "
                      "supported",
                      t->src, t->prefix);
}

static mx_status_t text_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  const cJSON *tc = NULL;
  cJSON *empty = NULL;
  MX_TRY(mx_cfg_sub_object(o, "text_config", &empty, &tc));
  mx_cfg_obj_t t = {tc, o->src, "text_config."};
  char qk[16];
  int32_t extra = 128;
  bool qkv_bias = false;
  mx_status_t st = mx_cfg_parse_common(&t, &kTextDefaults, cfg);
  if (st == MX_OK) st = mx_cfg_activation(&t, "hidden_act", cfg);
  if (st == MX_OK && mx_cfg_has(&t, "qkv_bias") && !mx_cfg_has(&t, "attention_bias")) {
    st = mx_cfg_bool(&t, "qkv_bias", false, &qkv_bias);
    cfg->attention_bias = qkv_bias;
  }
  if (st == MX_OK && mx_cfg_has(&t, "layer_norm_eps") && !mx_cfg_has(&t, "rms_norm_eps"))
    st = mx_cfg_f64_positive(&t, "layer_norm_eps", cfg->rms_norm_eps, &cfg->rms_norm_eps);
  if (st == MX_OK) st = mx_cfg_i32(&t, "additional_vocab_size", 128, &extra);
  if (st == MX_OK) st = mx_cfg_str(&t, "qk_norm_type", "qwen3", qk, sizeof qk);
  if (st == MX_OK) st = mx_cfg_bool(&t, "norm_after", false, &cfg->norm_after);
  if (st == MX_OK) st = rope_layers(&t, cfg);
  cJSON_Delete(empty);
  if (st != MX_OK) return st;
  if (extra < 0 || extra > (1 << 20))
    return mx_error_set(MX_ERR_PARSE, "%s: text_config.additional_vocab_size %d is out of range",
                        o->src, extra);
  if (strcmp(qk, "qwen3") != 0 && strcmp(qk, "olmo") != 0)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: text_config.qk_norm_type '%s' is not supported (qwen3, olmo)", o->src,
                        qk);
  if (cfg->attention_bias)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: text_config.attention_bias (qkv_bias) true is not supported", o->src);
  cfg->extra_vocab_size = extra;
  cfg->qk_norm_flat = strcmp(qk, "olmo") == 0;
  return MX_OK;
}

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  MX_TRY(text_config(o, cfg));
  if (mx_cfg_has(o, "torch_dtype") || mx_cfg_has(o, "dtype")) MX_TRY(mx_cfg_dtype(o, cfg));
  return mx_cfg_bool(o, "tie_word_embeddings", false, &cfg->tie_word_embeddings);
}

// ---- graph ----

// The standard names the shared core asks for -> the original Molmo names, in order, each once
// (the layer norms before the final one, whose full prefix keeps q_norm / k_norm apart).
#define MOLMO2_NAMES(attn_norm, ff_norm)                                                         \
  {                                                                                              \
    {attn_norm, ".attn_norm."}, {ff_norm, ".ff_norm."},                                          \
        {".self_attn.qkv_proj.", ".self_attn.att_proj."},                                        \
        {".self_attn.o_proj.", ".self_attn.attn_out."}, {".mlp.gate_up_proj.", ".mlp.ff_proj."}, \
        {".mlp.down_proj.", ".mlp.ff_out."}, {"transformer.layers.", "transformer.blocks."},     \
        {"transformer.norm.", "transformer.ln_f."}, {                                            \
      "transformer.embed_tokens.weight", "transformer.wte.embedding"                             \
    }                                                                                            \
  }
static const char *const kNamesPre[][2] =
    MOLMO2_NAMES(".input_layernorm.", ".post_attention_layernorm.");
static const char *const kNamesAfter[][2] =
    MOLMO2_NAMES(".post_attention_layernorm.", ".post_feedforward_layernorm.");
#undef MOLMO2_NAMES

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qk_norm = true;
  a->qk_norm_flat = cfg->qk_norm_flat;
  a->norm_after = cfg->norm_after;
  a->fused_qkv = true;
  a->fused_gate_up = true;
  a->fused_up_first = true;
  a->extra_vocab = cfg->extra_vocab_size;
  a->extra_embed_name = "wte.new_embedding";
  a->prefix = "model.transformer.";
  a->head_name = "lm_head.weight";
  a->renames = cfg->norm_after ? kNamesAfter : kNamesPre;
  a->n_renames = (int32_t)(sizeof kNamesPre / sizeof kNamesPre[0]);
  a->renamed = true;
  return MX_OK;
}

const mx_family_t mx_family_molmo2 = {"molmo2", parse_config, arch};
