// OLMo 2 and OLMo 3 families, model_types "olmo2" and "olmo3" (Olmo2ForCausalLM,
// Olmo3ForCausalLM).
// Config: defaults of transformers' Olmo2Config / Olmo3Config. OLMo 3 adds a sliding window
// (4096 by default) on the layers layer_types marks sliding (default: all but every 4th) and
// RoPE parameters per layer type: transformers 5 writes rope_parameters as {"full_attention":
// {...}, "sliding_attention": {...}}; older files a flat rope_theta / rope_scaling, whose
// scaling applies to the full-attention layers only. The full-attention entry may scale (yarn,
// as the long-context releases do); scaling of the sliding layers is refused naming the field.
// Graph: no input norms; post_attention_layernorm normalizes the attention output and
// post_feedforward_layernorm the MLP output, each before its residual add; q_norm / k_norm
// (y*w RMSNorm) over the whole q / k projection (all heads at once) before RoPE. OLMo 3's
// sliding layers rotate with their own, unscaled table.
#include <string.h>

#include "model/family.h"

// ---- config.json ----

static const mx_cfg_defaults_t kOlmo2Defaults = {
    .vocab_size = 50304,
    .hidden_size = 4096,
    .intermediate_size = 11008,
    .num_layers = 32,
    .num_heads = 32,
    .max_position_embeddings = 2048,
    .rms_norm_eps = 1e-5,
    .rope_theta = 10000.0,
    .tie_word_embeddings = false,
    .hidden_act = "silu",
    .bos_token_id = -1,
    .eos_token_id = 50279,
    .pad_token_id = 1,
};

static mx_status_t parse_config_olmo2(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  MX_TRY(mx_cfg_parse_common(o, &kOlmo2Defaults, cfg));
  return mx_cfg_activation(o, "hidden_act", cfg);
}

static mx_status_t parse_config_olmo3(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  mx_cfg_defaults_t d = kOlmo2Defaults;
  d.rope_theta = 500000.0;
  if (mx_cfg_rope_nested(o)) {
    MX_TRY(mx_cfg_parse_common_nested(o, &d, "olmo3", d.rope_theta, cfg));
  } else {
    MX_TRY(mx_cfg_parse_common(o, &d, cfg));
    cfg->rope_local_base_freq = cfg->rope_theta;  // rope_scaling: full layers only
  }
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  MX_TRY(mx_cfg_window(o, 4096, cfg));
  return mx_cfg_layer_types(o, mx_cfg_not_every_nth, 4, cfg);
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->norm_after = true;
  a->qk_norm = true;
  a->qk_norm_flat = true;
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  if (strcmp(cfg->model_type, "olmo3") != 0) return MX_OK;
  MX_TRY(mx_rope_inv_freq(cfg->rope_local_base_freq, a->rotary_dim, NULL, &a->inv_freq[1]));
  a->n_rope_tables = 2;
  for (int32_t l = 0; l < a->n_layers; l++) a->layer_rope[l] = cfg->layer_sliding[l] ? 1 : 0;
  return MX_OK;
}

const mx_family_t mx_family_olmo2 = {"olmo2", parse_config_olmo2, arch};
const mx_family_t mx_family_olmo3 = {"olmo3", parse_config_olmo3, arch};
