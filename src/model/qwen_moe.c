// Qwen MoE families, model_types "qwen2_moe" and "qwen3_moe": Qwen2's / Qwen3's attention with a
// sparse mixture of experts as the MLP of the layers transformers makes sparse (not in
// mlp_only_layers, (l + 1) a multiple of decoder_sparse_step); the other layers have a dense MLP
// of intermediate_size.
// Config: defaults of transformers' Qwen2MoeConfig (60 experts, top-4, moe_intermediate_size
// 1408, a shared expert of shared_expert_intermediate_size 5632 with a sigmoid gate, qkv_bias
// true) and Qwen3MoeConfig (128 experts, top-8, moe_intermediate_size 768, no shared expert,
// head_dim hidden / heads unless given). norm_topk_prob defaults to false in both. A sliding
// window (use_sliding_window true) is refused: neither family's released files use one.
// Graph: router mlp.gate, experts mlp.experts.<e>.{gate,up,down}_proj, Qwen2-MoE's
// mlp.shared_expert.* and mlp.shared_expert_gate.
#include "model/family.h"

static mx_status_t parse_moe(const mx_cfg_obj_t *o, const mx_cfg_defaults_t *d, int32_t experts,
                             int32_t k, int32_t ffn, int32_t shared, mx_model_config_t *cfg) {
  MX_TRY(mx_cfg_parse_common(o, d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  bool sliding = false;
  MX_TRY(mx_cfg_bool(o, "use_sliding_window", false, &sliding));
  if (sliding) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %suse_sliding_window true is not supported for model_type '%s'",
                        o->src, o->prefix, cfg->model_type);
  }
  cfg->sliding_window = 0;
  MX_TRY(mx_cfg_experts(o, experts, cfg));
  MX_TRY(mx_cfg_i32(o, "num_experts_per_tok", k, &cfg->num_experts_per_tok));
  MX_TRY(mx_cfg_i32(o, "moe_intermediate_size", ffn, &cfg->moe_intermediate_size));
  cfg->shared_expert_intermediate_size = 0;
  if (shared > 0) {
    MX_TRY(mx_cfg_i32(o, "shared_expert_intermediate_size", shared,
                      &cfg->shared_expert_intermediate_size));
  }
  MX_TRY(mx_cfg_bool(o, "norm_topk_prob", false, &cfg->norm_topk_prob));
  return mx_cfg_moe(o, "num_experts", true, cfg);
}

static mx_status_t parse_config_qwen2_moe(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 151936,
      .hidden_size = 2048,
      .intermediate_size = 5632,
      .num_layers = 24,
      .num_heads = 16,
      .num_kv_heads = 16,
      .max_position_embeddings = 32768,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .hidden_act = "silu",
      .bos_token_id = -1,
      .eos_token_id = -1,
      .pad_token_id = -1,
  };
  MX_TRY(parse_moe(o, &d, 60, 4, 1408, 5632, cfg));
  if (cfg->shared_expert_intermediate_size < 1) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %sshared_expert_intermediate_size must be positive for "
                        "model_type 'qwen2_moe'",
                        o->src, o->prefix);
  }
  return mx_cfg_bool(o, "qkv_bias", true, &cfg->attention_bias);
}

static mx_status_t parse_config_qwen3_moe(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 151936,
      .hidden_size = 2048,
      .intermediate_size = 6144,
      .num_layers = 24,
      .num_heads = 32,
      .num_kv_heads = 4,
      .max_position_embeddings = 32768,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .hidden_act = "silu",
      .bos_token_id = -1,
      .eos_token_id = -1,
      .pad_token_id = -1,
  };
  return parse_moe(o, &d, 128, 8, 768, 0, cfg);
}

static mx_status_t arch_qwen2_moe(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  MX_TRY(mx_arch_moe(cfg, a));
  a->qkv_bias = cfg->attention_bias;
  return MX_OK;
}

static mx_status_t arch_qwen3_moe(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  MX_TRY(mx_arch_moe(cfg, a));
  a->qk_norm = true;
  a->qkv_bias = a->o_bias = cfg->attention_bias;
  return MX_OK;
}

const mx_family_t mx_family_qwen2_moe = {"qwen2_moe", parse_config_qwen2_moe, arch_qwen2_moe};
const mx_family_t mx_family_qwen3_moe = {"qwen3_moe", parse_config_qwen3_moe, arch_qwen3_moe};
