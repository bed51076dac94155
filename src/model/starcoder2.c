// StarCoder2 family, model_type "starcoder2" (Starcoder2ForCausalLM).
// Config: defaults of transformers' Starcoder2Config: LayerNorm epsilon norm_epsilon, biases on
// every projection with use_bias (true), a plain GELU (tanh approximation) MLP, tied head, a
// sliding window on every layer when sliding_window is set. Other activations are refused.
// Graph: LayerNorm with bias (input, post_attention, final), Llama's attention, MLP
// c_proj(gelu_tanh(c_fc(x) + b) + b); the dropout fields do not apply at inference.
#include <string.h>

#include "model/family.h"

// ---- config.json ----

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 49152,
      .hidden_size = 3072,
      .intermediate_size = 12288,
      .num_layers = 30,
      .num_heads = 24,
      .num_kv_heads = 2,
      .max_position_embeddings = 4096,
      .rms_norm_eps = 1e-5,
      .rope_theta = 10000.0,
      .tie_word_embeddings = true,
      .hidden_act = "gelu_pytorch_tanh",
      .bos_token_id = 50256,
      .eos_token_id = 50256,
      .pad_token_id = -1,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_f64(o, "norm_epsilon", 1e-5, &cfg->rms_norm_eps));
  if (!(cfg->rms_norm_eps > 0)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %snorm_epsilon must be positive", o->src, o->prefix);
  }
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  if (strcmp(cfg->hidden_act, "gelu_pytorch_tanh") != 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %shidden_act '%s' is not supported for model_type 'starcoder2' "
                        "(supported: gelu_pytorch_tanh, gelu_new)",
                        o->src, o->prefix, cfg->hidden_act);
  }
  bool use_bias = true;
  MX_TRY(mx_cfg_bool(o, "use_bias", true, &use_bias));
  cfg->attention_bias = cfg->mlp_bias = use_bias;
  MX_TRY(mx_cfg_window(o, 0, cfg));
  return mx_cfg_layer_types(o, mx_cfg_every_layer, 0, cfg);
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->layer_norm = true;
  a->norm_bias = true;
  a->plain_mlp = true;
  a->qkv_bias = a->o_bias = a->mlp_bias = cfg->attention_bias;
  return MX_OK;
}

const mx_family_t mx_family_starcoder2 = {"starcoder2", parse_config, arch};
