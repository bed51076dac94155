// gpt-oss, model_type "gpt_oss" (GptOssForCausalLM): Llama's pre-norm layer with q/k/v/o
// biases, attention sinks (a learned logit per query head in every softmax's denominator:
// mx.attention's sinks), sliding-window and full layers alternating (layer_types), YaRN, and a
// sparse mixture of experts as every MLP: a router with a bias (the top k of its logits, a
// softmax over those k), experts with biases and the clamped SwiGLU
// (clamp(up, -L, L) + 1) * g * sigmoid(alpha g), g = min(gate, L).
// Config: defaults of transformers' GptOssConfig (128 experts, top-4, intermediate_size 2880,
// head_dim 64, sliding_window 128, every even layer sliding, swiglu_alpha 1.702, swiglu_limit
// 7, attention_bias true, rope_theta 150000) and, when neither rope_parameters nor rope_scaling
// is given, the YaRN dict its __post_init__ sets (factor 32, beta_fast 32, beta_slow 1,
// truncate false, original_max_position_embeddings 4096). hidden_act is read by nobody there
// (the experts' activation is fixed), so it is not checked. Refused naming the field: a
// swiglu_limit that is not positive (the clamp's range would be empty).
// Graph: router mlp.router.{weight,bias}; experts as save_pretrained writes them, stacked
// mlp.experts.gate_up_proj [E, H, 2F] (gate and up interleaved in its last dimension),
// gate_up_proj_bias [E, 2F], down_proj [E, F, H], down_proj_bias [E, H], split at load into
// the per-expert [N, K] tensors mx.moe reads (moe_stacked.c), or, as the released checkpoints
// store them, MXFP4 *_blocks / *_scales kept packed (quantization_config mxfp4); self_attn.sinks
// [Hq].
#include <stdio.h>

#include "model/family.h"

// GptOssConfig.__post_init__'s rope_parameters when the config has none.
static const char kDefaultRope[] =
    "{\"rope_type\": \"yarn\", \"factor\": 32.0, \"beta_fast\": 32.0, \"beta_slow\": 1.0, "
    "\"truncate\": false, \"original_max_position_embeddings\": 4096}";

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 201088,
      .hidden_size = 2880,
      .intermediate_size = 2880,
      .num_layers = 36,
      .num_heads = 64,
      .num_kv_heads = 8,
      .head_dim = 64,
      .max_position_embeddings = 131072,
      .rms_norm_eps = 1e-5,
      .rope_theta = 150000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = -1,
      .eos_token_id = -1,
      .pad_token_id = -1,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  snprintf(cfg->hidden_act, sizeof cfg->hidden_act, "silu");  // unused by the experts
  if (!mx_cfg_has(o, "rope_parameters") && !mx_cfg_has(o, "rope_scaling")) {
    cJSON *rope = NULL;
    MX_TRY(mx_cfg_parse_json(kDefaultRope, sizeof kDefaultRope - 1, o->src, &rope));
    mx_cfg_obj_t p = {rope, o->src, "rope_parameters (GptOssConfig's default)."};
    mx_status_t st = mx_cfg_rope_params(o, &p, &d, cfg->head_dim, cfg);
    cJSON_Delete(rope);
    MX_TRY(st);
  }
  MX_TRY(mx_cfg_bool(o, "attention_bias", true, &cfg->attention_bias));
  MX_TRY(mx_cfg_window(o, 128, cfg));
  MX_TRY(mx_cfg_layer_types(o, mx_cfg_not_every_nth, 2, cfg));
  MX_TRY(mx_cfg_experts(o, 128, cfg));
  MX_TRY(mx_cfg_i32(o, "num_experts_per_tok", 4, &cfg->num_experts_per_tok));
  MX_TRY(mx_cfg_f64(o, "swiglu_alpha", 1.702, &cfg->swiglu_alpha));
  MX_TRY(mx_cfg_f64(o, "swiglu_limit", 7.0, &cfg->swiglu_limit));
  if (!(cfg->swiglu_limit > 0)) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %sswiglu_limit must be positive for model_type 'gpt_oss' (got %g)",
                        o->src, o->prefix, cfg->swiglu_limit);
  }
  cfg->moe_intermediate_size = cfg->intermediate_size;
  cfg->shared_expert_intermediate_size = 0;
  cfg->norm_topk_prob = true;  // a softmax over the top-k logits
  return mx_cfg_moe(o, "num_local_experts", false, cfg);
}

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  MX_TRY(mx_arch_moe(cfg, a));
  a->qkv_bias = a->o_bias = cfg->attention_bias;
  a->attn_sinks = true;
  a->router_name = "router";
  a->router_bias = a->expert_bias = true;
  a->swiglu_alpha = cfg->swiglu_alpha;
  a->swiglu_limit = cfg->swiglu_limit;
  return MX_OK;
}

const mx_family_t mx_family_gpt_oss = {"gpt_oss", parse_config, arch};
