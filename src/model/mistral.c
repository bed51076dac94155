// Mistral family, model_type "mistral" (MistralForCausalLM): Llama without biases, with a
// sliding window on every layer.
// Config: defaults of transformers' MistralConfig.
// Graph: the base description; the window (every layer, or per layer_types) reaches it through
// cfg->layer_sliding / cfg->sliding_window in mx_arch_base.
#include "model/family.h"

// ---- config.json ----

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 32000,
      .hidden_size = 4096,
      .intermediate_size = 14336,
      .num_layers = 32,
      .num_heads = 32,
      .num_kv_heads = 8,
      .max_position_embeddings = 4096 * 32,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 1,
      .eos_token_id = 2,
      .pad_token_id = -1,
  };
  mx_status_t st = mx_cfg_parse_common(o, &d, cfg);
  if (st == MX_OK) st = mx_cfg_activation(o, "hidden_act", cfg);
  // Mistral v0.1 uses a 4096 window; later releases write "sliding_window": null (none).
  if (st == MX_OK) st = mx_cfg_window(o, 4096, cfg);
  if (st == MX_OK) st = mx_cfg_layer_types(o, mx_cfg_every_layer, 0, cfg);
  return st;
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) { return mx_arch_base(cfg, a); }

const mx_family_t mx_family_mistral = {"mistral", parse_config, arch};
