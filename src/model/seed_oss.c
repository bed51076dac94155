// Seed-OSS family, model_type "seed_oss" (SeedOssForCausalLM): Llama's layer with q/k/v biases
// by default and a separate switch for the o_proj bias.
// Config: defaults of transformers' SeedOssConfig (attention_bias true, attention_out_bias
// false, head_dim 128); the dropout fields do not apply at inference.
// Graph: the base description plus biases on q/k/v (attention_bias), o_proj
// (attention_out_bias) and gate/up/down (mlp_bias).
#include "model/family.h"

// ---- config.json ----

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 155136,
      .hidden_size = 4096,
      .intermediate_size = 27648,
      .num_layers = 64,
      .num_heads = 80,
      .num_kv_heads = 8,
      .head_dim = 128,
      .max_position_embeddings = 524288,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 0,
      .eos_token_id = 2,
      .pad_token_id = 1,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  MX_TRY(mx_cfg_bool(o, "attention_bias", true, &cfg->attention_bias));
  return mx_cfg_bool(o, "attention_out_bias", false, &cfg->attention_out_bias);
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_out_bias;
  a->mlp_bias = cfg->mlp_bias;
  return MX_OK;
}

const mx_family_t mx_family_seed_oss = {"seed_oss", parse_config, arch};
