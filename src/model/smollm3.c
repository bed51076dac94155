// SmolLM3 family, model_type "smollm3" (SmolLM3ForCausalLM): Llama's layer where some layers
// apply no RoPE (NoPE).
// Config: defaults of transformers' SmolLM3Config. no_rope_layers[l] is 1 where layer l uses
// RoPE (default: every layer but each no_rope_layer_interval-th); the window applies only
// with use_sliding_window, on the layers layer_types marks sliding (default: the NoPE layers,
// when sliding_window is set).
// Graph: the base description; NoPE layers and windows reach it through the config.
#include "model/family.h"

// ---- config.json ----

static mx_status_t parse_no_rope(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  int32_t interval = 4;
  MX_TRY(mx_cfg_i32(o, "no_rope_layer_interval", 4, &interval));
  const cJSON *nr = cJSON_GetObjectItemCaseSensitive(o->obj, "no_rope_layers");
  if (!nr || cJSON_IsNull(nr)) {
    if (interval <= 0) {
      return mx_error_set(MX_ERR_PARSE, "%s: %sno_rope_layer_interval must be positive (got %d)",
                          o->src, o->prefix, interval);
    }
    for (int32_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = (l + 1) % interval == 0;
    return MX_OK;
  }
  if (!cJSON_IsArray(nr) || cJSON_GetArraySize(nr) != cfg->num_layers) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %sno_rope_layers must be a list of num_hidden_layers (%d) 0/1 values",
                        o->src, o->prefix, cfg->num_layers);
  }
  int32_t l = 0;
  for (const cJSON *e = nr->child; e; e = e->next, l++) {
    if (!cJSON_IsNumber(e) || (e->valuedouble != 0 && e->valuedouble != 1)) {
      return mx_error_set(MX_ERR_PARSE, "%s: %sno_rope_layers[%d] must be 0 or 1", o->src,
                          o->prefix, l);
    }
    cfg->layer_nope[l] = e->valuedouble == 0;  // 1 means "uses RoPE"
  }
  return MX_OK;
}

static mx_status_t parse_window(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  bool use = false;
  MX_TRY(mx_cfg_bool(o, "use_sliding_window", false, &use));
  MX_TRY(mx_cfg_window(o, 0, cfg));
  if (mx_cfg_has(o, "layer_types")) {
    MX_TRY(mx_cfg_layer_types(o, mx_cfg_every_layer, 0, cfg));  // the list decides
  } else {  // HF's default: the NoPE layers slide when a window is configured
    for (int32_t l = 0; l < cfg->num_layers; l++)
      cfg->layer_sliding[l] = use && cfg->sliding_window > 0 && cfg->layer_nope[l];
  }
  if (!use) cfg->sliding_window = 0;  // HF: a window only with use_sliding_window
  return MX_OK;
}

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 128256,
      .hidden_size = 2048,
      .intermediate_size = 11008,
      .num_layers = 36,
      .num_heads = 16,
      .num_kv_heads = 4,
      .max_position_embeddings = 32768,
      .rms_norm_eps = 1e-6,
      .rope_theta = 2000000.0,
      .tie_word_embeddings = true,
      .hidden_act = "silu",
      .bos_token_id = 128000,
      .eos_token_id = 128001,
      .pad_token_id = 128004,
  };
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  MX_TRY(parse_no_rope(o, cfg));
  return parse_window(o, cfg);
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  a->mlp_bias = cfg->mlp_bias;
  return MX_OK;
}

const mx_family_t mx_family_smollm3 = {"smollm3", parse_config, arch};
