// EXAONE 4 family, model_type "exaone4" (Exaone4ForCausalLM).
// Config: defaults of transformers' Exaone4Config. A sliding window (4096 by default) on the
// layers layer_types marks sliding (default: all but every sliding_window_pattern-th; a pattern
// given as a string needs layer_types). With a window, the full-attention layers apply no RoPE
// ("global NoPE"); with sliding_window null every layer rotates and none slides.
// Graph: OLMo 2's layer order (no input norms; post_attention_layernorm and
// post_feedforward_layernorm on the attention and MLP outputs before the residual adds) with
// per-head q/k RMSNorm (y*w over head_dim) before RoPE; no biases.
#include <stdint.h>

#include "model/family.h"

// ---- config.json ----

static bool no_layer(int32_t layer, int32_t arg) {
  (void)layer;
  (void)arg;
  return false;
}

static mx_status_t parse_layers(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  MX_TRY(mx_cfg_window(o, 4096, cfg));
  if (cfg->sliding_window == 0 || mx_cfg_has(o, "layer_types")) {
    MX_TRY(mx_cfg_layer_types(o, no_layer, 0, cfg));
  } else {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o->obj, "sliding_window_pattern");
    if (p && cJSON_IsString(p)) {
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "%s: %ssliding_window_pattern '%.16s' (a string) needs layer_types",
                          o->src, o->prefix, p->valuestring);
    }
    int32_t pattern = 4;
    MX_TRY(mx_cfg_i32(o, "sliding_window_pattern", 4, &pattern));
    if (pattern <= 0) {
      return mx_error_set(MX_ERR_PARSE, "%s: %ssliding_window_pattern must be positive (got %d)",
                          o->src, o->prefix, pattern);
    }
    MX_TRY(mx_cfg_layer_types(o, mx_cfg_not_every_nth, pattern, cfg));
  }
  for (int32_t l = 0; l < cfg->num_layers; l++) {
    if (cfg->sliding_window == 0) cfg->layer_sliding[l] = 0;  // no window to apply
    cfg->layer_nope[l] = cfg->sliding_window > 0 && !cfg->layer_sliding[l];
  }
  return MX_OK;
}

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 102400,
      .hidden_size = 4096,
      .intermediate_size = 16384,
      .num_layers = 32,
      .num_heads = 32,
      .num_kv_heads = 32,
      .max_position_embeddings = 2048,
      .rms_norm_eps = 1e-5,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 0,
      .eos_token_id = 2,
      .pad_token_id = -1,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  return parse_layers(o, cfg);
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->norm_after = true;
  a->qk_norm = true;
  return MX_OK;
}

const mx_family_t mx_family_exaone4 = {"exaone4", parse_config, arch};
