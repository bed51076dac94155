// OLMoE family, model_type "olmoe" (OlmoeForCausalLM): Llama's pre-norm layer with RMSNorm of
// the whole q and k projections (as OLMo 2, but before the residual layout changes) and a
// sparse mixture of experts as every MLP.
// Config: defaults of transformers' OlmoeConfig (64 experts, top-8, each of intermediate_size,
// norm_topk_prob false). clip_qkv (clamping q / k / v) is refused.
// Graph: router mlp.gate, experts mlp.experts.<e>.{gate,up,down}_proj.
#include "model/family.h"

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 50304,
      .hidden_size = 2048,
      .intermediate_size = 2048,
      .num_layers = 16,
      .num_heads = 16,
      .max_position_embeddings = 4096,
      .rms_norm_eps = 1e-5,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = -1,
      .eos_token_id = 50279,
      .pad_token_id = 1,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  if (mx_cfg_has(o, "clip_qkv") &&
      !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o->obj, "clip_qkv"))) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %sclip_qkv is not supported for model_type 'olmoe' (only null)",
                        o->src, o->prefix);
  }
  MX_TRY(mx_cfg_experts(o, 64, cfg));
  MX_TRY(mx_cfg_i32(o, "num_experts_per_tok", 8, &cfg->num_experts_per_tok));
  MX_TRY(mx_cfg_bool(o, "norm_topk_prob", false, &cfg->norm_topk_prob));
  cfg->moe_intermediate_size = cfg->intermediate_size;
  cfg->shared_expert_intermediate_size = 0;
  return mx_cfg_moe(o, "num_experts", false, cfg);
}

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  MX_TRY(mx_arch_moe(cfg, a));
  a->qk_norm = true;
  a->qk_norm_flat = true;
  a->qkv_bias = a->o_bias = cfg->attention_bias;
  return MX_OK;
}

const mx_family_t mx_family_olmoe = {"olmoe", parse_config, arch};
