// Youtu-LLM, model_type "youtu" (YoutuForCausalLM): Llama's pre-norm layer with DeepSeek-V3's
// multi-latent attention (family_mla.h, ADR 0012: the low-rank query, the normalized latent and
// the rotated shared key in the caches, rope_interleave) and a SwiGLU MLP without biases on
// every layer: transformers' YoutuConfig drops DeepSeek's expert fields and YoutuModel builds
// no mixture of experts, so such keys in a config.json change nothing here either.
// Config: defaults of YoutuConfig (Youtu-LLM-2B's shape, a tied head).
#include "model/family.h"
#include "model/family_mla.h"

static mx_status_t parse(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 128256,
      .hidden_size = 2048,
      .intermediate_size = 6144,
      .num_layers = 32,
      .num_heads = 16,
      .num_kv_heads = 16,
      .max_position_embeddings = 131072,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = true,
      .hidden_act = "silu",
      .bos_token_id = 128000,
      .eos_token_id = 128001,
      .pad_token_id = -1,
  };
  return mx_cfg_mla(o, d, true, cfg);
}

const mx_family_t mx_family_youtu = {"youtu", parse, mx_arch_mla};
