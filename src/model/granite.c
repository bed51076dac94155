// Granite family, model_type "granite" (GraniteForCausalLM): Llama with four scalar
// multipliers.
// Config: defaults of transformers' GraniteConfig; embedding_multiplier, residual_multiplier,
// attention_multiplier and logits_scaling (all 1.0 by default) must be positive.
// Graph: Llama's (biases per attention_bias / mlp_bias) with embeddings x embedding_multiplier,
// each attention and MLP output x residual_multiplier before its residual add, the attention
// scale equal to attention_multiplier itself (not head_dim^-0.5, whatever the default) and the
// logits divided by logits_scaling.
#include "model/family.h"

// ---- config.json ----

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 32000,
      .hidden_size = 4096,
      .intermediate_size = 11008,
      .num_layers = 32,
      .num_heads = 32,
      .max_position_embeddings = 2048,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 1,
      .eos_token_id = 2,
      .pad_token_id = -1,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  double logits_scaling = 1.0;
  MX_TRY(mx_cfg_f64_positive(o, "embedding_multiplier", 1.0, &cfg->embedding_multiplier));
  MX_TRY(mx_cfg_f64_positive(o, "residual_multiplier", 1.0, &cfg->residual_multiplier));
  MX_TRY(mx_cfg_f64_positive(o, "attention_multiplier", 1.0, &cfg->attention_multiplier));
  MX_TRY(mx_cfg_f64_positive(o, "logits_scaling", 1.0, &logits_scaling));
  cfg->logits_multiplier = 1.0 / logits_scaling;
  return MX_OK;
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));  // the multipliers reach it through cfg
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  a->mlp_bias = cfg->mlp_bias;
  return MX_OK;
}

const mx_family_t mx_family_granite = {"granite", parse_config, arch};
