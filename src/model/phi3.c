// Phi-3 family, model_type "phi3" (Phi3ForCausalLM), and the text model of Phi-4-multimodal:
// "phi4_multimodal" (transformers' own Phi4MultimodalForCausalLM) and "phi4mm" (the released
// checkpoint's remote-code layout).
// Config: defaults of transformers' Phi3Config / Phi4MultimodalConfig; optional partial rotary
// embedding and sliding window (applied to every layer when set, as transformers does). RoPE
// scaling: longrope only ("su" and "yarn" are its old names), from
// original_max_position_embeddings (4096).
// Graph: fused qkv_proj (q rows, then k, then v) and gate_up_proj (gate rows first), no biases;
// partial rotary (rotate-half over the first head_dim * partial_rotary_factor dims) and the
// sliding window come from the config through mx_arch_base. Phi-4-multimodal's text model is
// Phi-3's; its image / audio embedders (model.embed_tokens_extend.*) are not read. The phi4mm
// layout keeps each adapted projection as a LoRA wrapper, "<proj>.base_layer.weight" beside
// lora_A / lora_B per mode: text runs with the adapters off (as the remote code sets for
// language-only input), i.e. on the base weights.
#include "model/family.h"

// ---- config.json ----

static mx_status_t parse_with(const mx_cfg_obj_t *o, const mx_cfg_defaults_t *d,
                              mx_model_config_t *cfg) {
  MX_TRY(mx_cfg_parse_common(o, d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  MX_TRY(mx_cfg_window(o, 0, cfg));
  return mx_cfg_layer_types(o, mx_cfg_every_layer, 0, cfg);
}

static mx_status_t parse_phi3(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
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
  return parse_with(o, &d, cfg);
}

static mx_status_t parse_phi4mm(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 200064,
      .hidden_size = 3072,
      .intermediate_size = 8192,
      .num_layers = 32,
      .num_heads = 32,
      .num_kv_heads = 8,
      .max_position_embeddings = 131072,
      .rms_norm_eps = 1e-5,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 199999,
      .eos_token_id = -1,
      .pad_token_id = 199999,
      .original_max_position_embeddings = 4096,
      .rope_longrope_only = true,
  };
  MX_TRY(parse_with(o, &d, cfg));
  // Phi4MultimodalConfig: `eos_token_id or [199999, 200020]`.
  if (cfg->n_eos == 0) {
    cfg->eos_token_ids[cfg->n_eos++] = 199999;
    cfg->eos_token_ids[cfg->n_eos++] = 200020;
  }
  return MX_OK;
}

// ---- graph ----

static mx_status_t arch_phi3(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->fused_qkv = true;
  a->fused_gate_up = true;
  return MX_OK;
}

// The remote-code layout's names of the four adapted projections.
static const char *const kLoraBaseNames[][2] = {
    {".self_attn.qkv_proj.weight", ".self_attn.qkv_proj.base_layer.weight"},
    {".self_attn.o_proj.weight", ".self_attn.o_proj.base_layer.weight"},
    {".mlp.gate_up_proj.weight", ".mlp.gate_up_proj.base_layer.weight"},
    {".mlp.down_proj.weight", ".mlp.down_proj.base_layer.weight"},
};

static mx_status_t arch_phi4mm(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(arch_phi3(cfg, a));
  a->renames = kLoraBaseNames;
  a->n_renames = (int32_t)(sizeof kLoraBaseNames / sizeof kLoraBaseNames[0]);
  a->layout_probe = "model.layers.0.self_attn.qkv_proj.base_layer.weight";
  return MX_OK;
}

const mx_family_t mx_family_phi3 = {"phi3", parse_phi3, arch_phi3};
const mx_family_t mx_family_phi4_multimodal = {"phi4_multimodal", parse_phi4mm, arch_phi3};
const mx_family_t mx_family_phi4mm = {"phi4mm", parse_phi4mm, arch_phi4mm};
