// model_type "phi3" (Phi3ForCausalLM): fused qkv_proj / gate_up_proj, optional partial rotary
// embedding and sliding window (applied to every layer when set, as transformers does).
// Defaults of transformers' Phi3Config. Phi-3's "longrope" / "su" rope scaling is refused by
// the shared rope_scaling reader, naming the field.
#include "model/config_internal.h"

static bool every_layer(int32_t layer, int32_t arg) {
  (void)layer;
  (void)arg;
  return true;
}

mx_status_t mx_cfg_parse_phi3(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
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
  };
  mx_status_t st = mx_cfg_parse_common(o, &d, cfg);
  if (st == MX_OK) st = mx_cfg_activation(o, "hidden_act", cfg);
  if (st == MX_OK) st = mx_cfg_window(o, 0, cfg);
  if (st == MX_OK) st = mx_cfg_layer_types(o, every_layer, 0, cfg);
  return st;
}
