// Mixtral family, model_type "mixtral" (MixtralForCausalLM): Mistral's layer with a sparse
// mixture of experts as every MLP.
// Config: defaults of transformers' MixtralConfig (num_local_experts 8, num_experts_per_tok 2,
// each expert of intermediate_size, rope_theta 1e6, no window unless sliding_window is set).
// The router's top-k weights are always renormalized (MixtralTopKRouter); router_jitter_noise
// and the aux-loss fields only act in training.
// Graph: router block_sparse_moe.gate, experts block_sparse_moe.experts.<e>.w1 (gate), w3 (up),
// w2 (down) as the released files and save_pretrained name them.
#include "model/family.h"

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 32000,
      .hidden_size = 4096,
      .intermediate_size = 14336,
      .num_layers = 32,
      .num_heads = 32,
      .num_kv_heads = 8,
      .max_position_embeddings = 4096 * 32,
      .rms_norm_eps = 1e-5,
      .rope_theta = 1e6,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 1,
      .eos_token_id = 2,
      .pad_token_id = -1,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  MX_TRY(mx_cfg_window(o, 0, cfg));
  MX_TRY(mx_cfg_layer_types(o, mx_cfg_every_layer, 0, cfg));
  MX_TRY(mx_cfg_experts(o, 8, cfg));
  MX_TRY(mx_cfg_i32(o, "num_experts_per_tok", 2, &cfg->num_experts_per_tok));
  cfg->moe_intermediate_size = cfg->intermediate_size;
  cfg->shared_expert_intermediate_size = 0;
  cfg->norm_topk_prob = true;
  return mx_cfg_moe(o, "num_local_experts", false, cfg);
}

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  MX_TRY(mx_arch_moe(cfg, a));
  a->moe_block = "block_sparse_moe.";
  a->expert_names[0] = "w1";
  a->expert_names[1] = "w3";
  a->expert_names[2] = "w2";
  return MX_OK;
}

const mx_family_t mx_family_mixtral = {"mixtral", parse_config, arch};
