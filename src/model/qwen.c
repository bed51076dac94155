// Qwen2: biases on q/k/v (not o_proj). Qwen3: RMSNorm (y*w) over head_dim of every q and k
// head before RoPE, biases on q/k/v/o only with attention_bias. Windows come from the config
// (use_sliding_window, max_window_layers, layer_types) through mx_arch_base.
#include "model/graph_internal.h"

mx_status_t mx_qwen2_arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qkv_bias = true;
  return MX_OK;
}

mx_status_t mx_qwen3_arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qk_norm = true;
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  return MX_OK;
}
