// model_type "llama" (LlamaForCausalLM): defaults of transformers' LlamaConfig.
#include <string.h>

#include "model/config_internal.h"

mx_status_t mx_cfg_parse_llama(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 32000,
      .hidden_size = 4096,
      .intermediate_size = 11008,
      .num_layers = 32,
      .num_heads = 32,
      .max_position_embeddings = 2048,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 1,
      .eos_token_id = 2,
      .pad_token_id = -1,
  };
  mx_status_t st = mx_cfg_parse_common(o, &d, cfg);
  if (st != MX_OK) return st;
  // The Llama MLP is gated SiLU; "swish" is transformers' other name for the same function.
  if (strcmp(cfg->hidden_act, "swish") == 0) strcpy(cfg->hidden_act, "silu");
  if (strcmp(cfg->hidden_act, "silu") != 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: hidden_act '%s' is not supported for model_type 'llama' (supported: "
                        "silu)",
                        o->src, cfg->hidden_act);
  }
  return MX_OK;
}
