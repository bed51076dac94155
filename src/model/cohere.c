// Cohere families, model_types "cohere" (Command-R, CohereForCausalLM) and "cohere2"
// (Command-R7B / Command-A, Cohere2ForCausalLM).
// Config: defaults of transformers' CohereConfig / Cohere2Config: LayerNorm epsilon
// layer_norm_eps, logit_scale (0.0625), tied head. Per-head q/k LayerNorms (cohere's
// use_qk_norm true) are refused. cohere2: head_dim is hidden_size / num_attention_heads
// whatever the file says (as transformers sets it); a window (4096) on the layers layer_types
// marks sliding (default: all but every sliding_window_pattern-th, 4); only those layers apply
// RoPE (none does when sliding_window is null).
// Graph: one input LayerNorm without bias (x - mean(x), normalized, x w) per layer feeding both
// the attention and the gated SiLU MLP of a parallel block, x + attn(h) + mlp(h); interleaved
// RoPE (pairs (2i, 2i+1)); logits x logit_scale.
#include <string.h>

#include "model/family.h"

// ---- config.json ----

static mx_status_t parse_cohere(const mx_cfg_obj_t *o, double theta, mx_model_config_t *cfg) {
  const mx_cfg_defaults_t d = {
      .vocab_size = 256000,
      .hidden_size = 8192,
      .intermediate_size = 22528,
      .num_layers = 40,
      .num_heads = 64,
      .max_position_embeddings = 8192,
      .rms_norm_eps = 1e-5,
      .rope_theta = theta,
      .tie_word_embeddings = true,
      .hidden_act = "silu",
      .bos_token_id = 5,
      .eos_token_id = 255001,
      .pad_token_id = 0,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_f64(o, "layer_norm_eps", 1e-5, &cfg->rms_norm_eps));
  if (!(cfg->rms_norm_eps > 0)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %slayer_norm_eps must be positive", o->src, o->prefix);
  }
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  MX_TRY(mx_cfg_f64(o, "logit_scale", 0.0625, &cfg->logits_multiplier));
  if (!(cfg->logits_multiplier > 0)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %slogit_scale must be positive (got %g)", o->src,
                        o->prefix, cfg->logits_multiplier);
  }
  return MX_OK;
}

static mx_status_t parse_config_cohere(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  MX_TRY(parse_cohere(o, 500000.0, cfg));
  bool qk_norm = false;
  MX_TRY(mx_cfg_bool(o, "use_qk_norm", false, &qk_norm));
  if (qk_norm) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %suse_qk_norm true (per-head q/k LayerNorms) is not supported", o->src,
                        o->prefix);
  }
  return MX_OK;
}

static mx_status_t parse_config_cohere2(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  MX_TRY(parse_cohere(o, 10000.0, cfg));
  if (cfg->hidden_size % cfg->num_heads != 0) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %shidden_size (%d) must be divisible by num_attention_heads (%d)",
                        o->src, o->prefix, cfg->hidden_size, cfg->num_heads);
  }
  cfg->head_dim = cfg->hidden_size / cfg->num_heads;
  MX_TRY(mx_cfg_window(o, 4096, cfg));
  int32_t pattern = 4;
  MX_TRY(mx_cfg_i32(o, "sliding_window_pattern", 4, &pattern));
  if (pattern <= 0) {
    return mx_error_set(MX_ERR_PARSE, "%s: %ssliding_window_pattern must be positive (got %d)",
                        o->src, o->prefix, pattern);
  }
  MX_TRY(mx_cfg_layer_types(o, mx_cfg_not_every_nth, pattern, cfg));
  for (int32_t l = 0; l < cfg->num_layers; l++) {
    if (cfg->sliding_window == 0) cfg->layer_sliding[l] = 0;
    cfg->layer_nope[l] = !cfg->layer_sliding[l];  // RoPE on sliding layers only
  }
  return MX_OK;
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));  // logit_scale reaches it through cfg
  a->layer_norm = true;
  a->parallel_block = true;
  a->rope_style = "interleaved";
  a->qkv_bias = a->o_bias = cfg->attention_bias;
  return MX_OK;
}

const mx_family_t mx_family_cohere = {"cohere", parse_config_cohere, arch};
const mx_family_t mx_family_cohere2 = {"cohere2", parse_config_cohere2, arch};
