// StableLM family, model_type "stablelm" (StableLmForCausalLM).
// Config: defaults of transformers' StableLmConfig: LayerNorm epsilon layer_norm_eps,
// partial_rotary_factor 0.25 (top level or, as transformers 5 writes it, in rope_parameters),
// q/k/v biases with use_qkv_bias, the parallel block with use_parallel_residual. Per-head q/k
// LayerNorms (qk_layernorm true) are refused.
// Graph: LayerNorm with bias (input, post_attention, final), rotate-half RoPE over the first
// quarter of each head, gated SiLU MLP; o_proj has no bias. Parallel: x + attn(h) + mlp(h) with
// h = input_layernorm(x) and no post_attention_layernorm.
#include "model/family.h"

// ---- config.json ----

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 50304,
      .hidden_size = 2560,
      .intermediate_size = 6912,
      .num_layers = 32,
      .num_heads = 32,
      .num_kv_heads = 32,
      .max_position_embeddings = 4096,
      .rms_norm_eps = 1e-5,
      .rope_theta = 10000.0,
      .partial_rotary_factor = 0.25,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 0,
      .eos_token_id = 0,
      .pad_token_id = -1,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_f64(o, "layer_norm_eps", 1e-5, &cfg->rms_norm_eps));
  if (!(cfg->rms_norm_eps > 0)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %slayer_norm_eps must be positive", o->src, o->prefix);
  }
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  bool qk_layernorm = false;
  MX_TRY(mx_cfg_bool(o, "qk_layernorm", false, &qk_layernorm));
  if (qk_layernorm) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %sqk_layernorm true (per-head q/k LayerNorms) is not supported",
                        o->src, o->prefix);
  }
  MX_TRY(mx_cfg_bool(o, "use_qkv_bias", false, &cfg->attention_bias));
  return mx_cfg_bool(o, "use_parallel_residual", false, &cfg->use_parallel_residual);
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->layer_norm = true;
  a->norm_bias = true;
  a->qkv_bias = cfg->attention_bias;
  a->parallel_block = cfg->use_parallel_residual;
  return MX_OK;
}

const mx_family_t mx_family_stablelm = {"stablelm", parse_config, arch};
