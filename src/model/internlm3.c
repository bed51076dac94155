// InternLM3 family, model_type "internlm3", which transformers runs as LlamaForCausalLM.
// Config: defaults of transformers' InternLM3Config (head_dim 128, 2 kv heads); its files name
// the biases qkv_bias (q/k/v/o) and bias (gate/up/down), aliases of attention_bias and
// mlp_bias, which transformers requires to be equal (refused otherwise, as it does). Released
// files carry rope_scaling "dynamic" (plain RoPE within max_position_embeddings: config_rope.c).
// Graph: Llama's.
#include "model/family.h"

// ---- config.json ----

// `key` or, when absent, its alias.
static mx_status_t aliased_bool(const mx_cfg_obj_t *o, const char *key, const char *alias,
                                bool *out, const char **used) {
  *used = mx_cfg_has(o, alias) && !mx_cfg_has(o, key) ? alias : key;
  return mx_cfg_bool(o, *used, false, out);
}

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 128512,
      .hidden_size = 4096,
      .intermediate_size = 10240,
      .num_layers = 48,
      .num_heads = 32,
      .num_kv_heads = 2,
      .head_dim = 128,
      .max_position_embeddings = 32768,
      .rms_norm_eps = 1e-5,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 1,
      .eos_token_id = 2,
      .pad_token_id = 2,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  const char *qkv_key, *mlp_key;
  MX_TRY(aliased_bool(o, "attention_bias", "qkv_bias", &cfg->attention_bias, &qkv_key));
  MX_TRY(aliased_bool(o, "mlp_bias", "bias", &cfg->mlp_bias, &mlp_key));
  if (cfg->attention_bias != cfg->mlp_bias) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %s%s (%s) differs from %s%s (%s): transformers runs InternLM3 only "
                        "with the same bias setting for both",
                        o->src, o->prefix, qkv_key, cfg->attention_bias ? "true" : "false",
                        o->prefix, mlp_key, cfg->mlp_bias ? "true" : "false");
  }
  return MX_OK;
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qkv_bias = a->o_bias = cfg->attention_bias;
  a->mlp_bias = cfg->mlp_bias;
  return MX_OK;
}

const mx_family_t mx_family_internlm3 = {"internlm3", parse_config, arch};
