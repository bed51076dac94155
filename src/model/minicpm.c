// MiniCPM family, model_type "minicpm" (MiniCPMForCausalLM: the authors' remote code beside
// their checkpoints; transformers has no class for it): Llama with the scalings of muP training.
// Config: the defaults of the authors' MiniCPMConfig (Llama's sizes, rms_norm_eps 1e-6, tied
// head; scale_emb, scale_depth and dim_model_base 1). Refused, naming the field: num_experts
// (MiniCPM-MoE), sparse_config (MiniCPM4's sparse attention), use_mup false and kv_channels
// (MiniCPM4 options whose effect this family does not implement).
// Graph: Granite's multipliers (mx_arch_base reads them from cfg): embeddings x scale_emb, each
// attention and MLP output x scale_depth / sqrt(num_hidden_layers) before its residual add, the
// final hidden state divided by hidden_size / dim_model_base before the head (the authors' code
// does so whether the head is tied or not; mlx-lm's skips it with a tied head: greedy ids agree,
// logits differ by that factor).
#include <math.h>

#include "model/family.h"

// ---- config.json ----

static mx_status_t refuse(const mx_cfg_obj_t *o, const char *key, const char *what) {
  return mx_error_set(MX_ERR_UNSUPPORTED, "%s: %s%s is not supported (%s)", o->src, o->prefix, key,
                      what);
}

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 32000,
      .hidden_size = 4096,
      .intermediate_size = 11008,
      .num_layers = 32,
      .num_heads = 32,
      .max_position_embeddings = 2048,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = true,
      .hidden_act = "silu",
      .bos_token_id = 1,
      .eos_token_id = 2,
      .pad_token_id = -1,
  };
  int32_t experts = 0;
  MX_TRY(mx_cfg_i32(o, "num_experts", 0, &experts));
  if (experts > 0) return refuse(o, "num_experts", "MiniCPM-MoE's experts");
  if (mx_cfg_has(o, "sparse_config"))
    return refuse(o, "sparse_config", "MiniCPM4's sparse attention; dense attention only");
  bool mup = true;
  MX_TRY(mx_cfg_bool(o, "use_mup", true, &mup));
  if (!mup) return refuse(o, "use_mup false", "the muP scalings are always applied");
  if (mx_cfg_has(o, "kv_channels")) return refuse(o, "kv_channels", "use head_dim");
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  double scale_emb = 1.0, scale_depth = 1.0, dim_model_base = 1.0;
  MX_TRY(mx_cfg_f64_positive(o, "scale_emb", 1.0, &scale_emb));
  MX_TRY(mx_cfg_f64_positive(o, "scale_depth", 1.0, &scale_depth));
  MX_TRY(mx_cfg_f64_positive(o, "dim_model_base", 1.0, &dim_model_base));
  cfg->embedding_multiplier = scale_emb;
  cfg->residual_multiplier = scale_depth / sqrt((double)cfg->num_layers);
  cfg->logits_multiplier = dim_model_base / (double)cfg->hidden_size;
  return MX_OK;
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));  // the multipliers reach it through cfg
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  return MX_OK;
}

const mx_family_t mx_family_minicpm = {"minicpm", parse_config, arch};
