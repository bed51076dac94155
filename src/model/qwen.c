// Qwen family, model_types "qwen2", "qwen3" and "mimo".
// Config: defaults of transformers' Qwen2Config / Qwen3Config (qwen3: explicit head_dim). Both
// carry a sliding window that is used only when use_sliding_window is true, on the layers from
// max_window_layers on (or per layer_types).
// Graph: Qwen2: biases on q/k/v (not o_proj). Qwen3: RMSNorm (y*w) over head_dim of every q and
// k head before RoPE, biases on q/k/v/o only with attention_bias. Windows come from the config
// through mx_arch_base.
// MiMo (Xiaomi's MiMoForCausalLM, remote code): its MiMoConfig extends Qwen2Config and its
// decoder is Qwen2's; num_nextn_predict_layers more layers (model.mtp_layers.*) predict further
// tokens for training and speculative decoding, and generation never reads them, so their
// tensors stay unloaded.
#include <stdint.h>

#include "model/family.h"

// ---- config.json ----

static bool from_layer(int32_t layer, int32_t first) { return layer >= first; }

static mx_status_t parse_window(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  bool use = false;
  int32_t max_window_layers = 28;
  MX_TRY(mx_cfg_bool(o, "use_sliding_window", false, &use));
  MX_TRY(mx_cfg_window(o, 4096, cfg));
  if (!use) cfg->sliding_window = 0;  // HF: sliding_window = None unless use_sliding_window
  MX_TRY(mx_cfg_i32(o, "max_window_layers", 28, &max_window_layers));
  int32_t first = cfg->sliding_window > 0 ? max_window_layers : INT32_MAX;
  return mx_cfg_layer_types(o, from_layer, first, cfg);
}

static mx_status_t parse_qwen(const mx_cfg_obj_t *o, int32_t head_dim, mx_model_config_t *cfg) {
  const mx_cfg_defaults_t d = {
      .vocab_size = 151936,
      .hidden_size = 4096,
      .intermediate_size = 22016,
      .num_layers = 32,
      .num_heads = 32,
      .head_dim = head_dim,
      .max_position_embeddings = 32768,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = -1,
      .eos_token_id = -1,
      .pad_token_id = -1,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  return parse_window(o, cfg);
}

static mx_status_t parse_config_qwen2(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  return parse_qwen(o, 0, cfg);  // head_dim = hidden / heads
}

static mx_status_t parse_config_qwen3(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  return parse_qwen(o, 128, cfg);
}

// ---- graph ----

static mx_status_t arch_qwen2(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qkv_bias = true;
  return MX_OK;
}

static mx_status_t arch_qwen3(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qk_norm = true;
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  return MX_OK;
}

const mx_family_t mx_family_qwen2 = {"qwen2", parse_config_qwen2, arch_qwen2};
const mx_family_t mx_family_qwen3 = {"qwen3", parse_config_qwen3, arch_qwen3};

static mx_status_t parse_config_mimo(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  int32_t mtp = 0;
  MX_TRY(mx_cfg_i32(o, "num_nextn_predict_layers", 0, &mtp));
  if (mtp < 0)
    return mx_error_set(MX_ERR_PARSE, "%s: %snum_nextn_predict_layers must be >= 0 (got %d)",
                        o->src, o->prefix, mtp);
  return parse_config_qwen2(o, cfg);
}

const mx_family_t mx_family_mimo = {"mimo", parse_config_mimo, arch_qwen2};
