// Phi-3 family, model_type "phi3" (Phi3ForCausalLM).
// Config: defaults of transformers' Phi3Config; optional partial rotary embedding and sliding
// window (applied to every layer when set, as transformers does). RoPE scaling: longrope only
// ("su" and "yarn" are Phi-3's old names of it), from original_max_position_embeddings (4096).
// Graph: fused qkv_proj (q rows, then k, then v) and gate_up_proj (gate rows first), no biases;
// partial rotary (rotate-half over the first head_dim * partial_rotary_factor dims) and the
// sliding window come from the config through mx_arch_base.
#include "model/family.h"

// ---- config.json ----

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 32064,
      .hidden_size = 3072,
      .intermediate_size = 8192,
      .num_layers = 32,
      .num_heads = 32,
      .max_position_embeddings = 4096,
      .rms_norm_eps = 1e-5,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 1,
      .eos_token_id = 32000,
      .pad_token_id = 32000,
      .original_max_position_embeddings = 4096,
      .rope_longrope_only = true,
  };
  mx_status_t st = mx_cfg_parse_common(o, &d, cfg);
  if (st == MX_OK) st = mx_cfg_activation(o, "hidden_act", cfg);
  if (st == MX_OK) st = mx_cfg_window(o, 0, cfg);
  if (st == MX_OK) st = mx_cfg_layer_types(o, mx_cfg_every_layer, 0, cfg);
  return st;
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->fused_qkv = true;
  a->fused_gate_up = true;
  return MX_OK;
}

const mx_family_t mx_family_phi3 = {"phi3", parse_config, arch};
