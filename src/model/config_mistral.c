// model_type "mistral" (MistralForCausalLM): Llama with a sliding window on every layer.
// Defaults of transformers' MistralConfig.
#include "model/config_internal.h"

static bool every_layer(int32_t layer, int32_t arg) {
  (void)layer;
  (void)arg;
  return true;
}

mx_status_t mx_cfg_parse_mistral(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 32000,
      .hidden_size = 4096,
      .intermediate_size = 14336,
      .num_layers = 32,
      .num_heads = 32,
      .num_kv_heads = 8,
      .max_position_embeddings = 4096 * 32,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 1,
      .eos_token_id = 2,
      .pad_token_id = -1,
  };
  mx_status_t st = mx_cfg_parse_common(o, &d, cfg);
  if (st == MX_OK) st = mx_cfg_activation(o, "hidden_act", cfg);
  // Mistral v0.1 uses a 4096 window; later releases write "sliding_window": null (none).
  if (st == MX_OK) st = mx_cfg_window(o, 4096, cfg);
  if (st == MX_OK) st = mx_cfg_layer_types(o, every_layer, 0, cfg);
  return st;
}
