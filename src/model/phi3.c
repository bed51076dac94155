// Phi-3: fused qkv_proj (q rows, then k, then v) and gate_up_proj (gate rows first), no biases;
// partial rotary (rotate-half over the first head_dim * partial_rotary_factor dims) and the
// sliding window come from the config through mx_arch_base.
#include "model/graph_internal.h"

mx_status_t mx_phi3_arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->fused_qkv = true;
  a->fused_gate_up = true;
  return MX_OK;
}
