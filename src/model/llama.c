// Llama family: the base description as it is (y*w RMSNorm, rotate-half RoPE over the whole
// head, GQA, default / linear / llama3 RoPE scaling, tied or separate lm_head), plus Llama's
// optional biases: attention_bias on q/k/v/o, mlp_bias on gate/up/down.
#include "model/graph_internal.h"

mx_status_t mx_llama_arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  a->mlp_bias = cfg->mlp_bias;
  return MX_OK;
}
