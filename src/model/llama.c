// Llama family, model_type "llama" (LlamaForCausalLM).
// Config: defaults of transformers' LlamaConfig.
// Graph: the base description as it is (y*w RMSNorm, rotate-half RoPE over the whole head, GQA,
// default / linear / llama3 RoPE scaling, tied or separate lm_head), plus Llama's optional
// biases: attention_bias on q/k/v/o, mlp_bias on gate/up/down.
#include <string.h>

#include "model/family.h"

// ---- config.json ----

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

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  a->mlp_bias = cfg->mlp_bias;
  return MX_OK;
}

const mx_family_t mx_family_llama = {"llama", parse_config, arch};
