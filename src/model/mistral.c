// Mistral: Llama without biases; its sliding window (every layer, or per layer_types) reaches
// the description through cfg->layer_sliding / cfg->sliding_window in mx_arch_base.
#include "model/graph_internal.h"

mx_status_t mx_mistral_arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  return mx_arch_base(cfg, a);
}
