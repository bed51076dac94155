// Mixture-of-experts fields shared by the MoE family parsers (config_internal.h).
#include <string.h>

#include "model/config_internal.h"

// Qwen MoE: layer l is sparse unless it is in mlp_only_layers or (l + 1) is not a multiple of
// decoder_sparse_step (transformers' Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer).
static mx_status_t sparse_layers(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  int32_t step = 1;
  MX_TRY(mx_cfg_i32(o, "decoder_sparse_step", 1, &step));
  if (step < 1) {
    return mx_error_set(MX_ERR_PARSE, "%s: %sdecoder_sparse_step must be >= 1, got %d", o->src,
                        o->prefix, step);
  }
  for (int32_t l = 0; l < cfg->num_layers; l++) cfg->layer_dense[l] = (l + 1) % step != 0;
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o->obj, "mlp_only_layers");
  if (!j || cJSON_IsNull(j)) return MX_OK;
  if (!cJSON_IsArray(j)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %smlp_only_layers must be a list of layer indices",
                        o->src, o->prefix);
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, j) {
    double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
    if (v != (double)(int32_t)v || v < 0 || v >= cfg->num_layers) {
      return mx_error_set(
          MX_ERR_PARSE, "%s: %smlp_only_layers holds %s, not a layer index below %d", o->src,
          o->prefix, cJSON_IsNumber(e) ? "an out-of-range value" : "a non-number", cfg->num_layers);
    }
    cfg->layer_dense[(int32_t)v] = 1;
  }
  return MX_OK;
}

mx_status_t mx_cfg_experts(const mx_cfg_obj_t *o, int32_t def, mx_model_config_t *cfg) {
  int32_t a = def, b = def;
  bool has_a = mx_cfg_has(o, "num_experts"), has_b = mx_cfg_has(o, "num_local_experts");
  MX_TRY(mx_cfg_i32(o, "num_experts", def, &a));
  MX_TRY(mx_cfg_i32(o, "num_local_experts", def, &b));
  if (has_a && has_b && a != b) {
    return mx_error_set(MX_ERR_PARSE, "%s: %snum_experts (%d) and num_local_experts (%d) differ",
                        o->src, o->prefix, a, b);
  }
  cfg->num_experts = has_a ? a : b;
  return MX_OK;
}

mx_status_t mx_cfg_moe(const mx_cfg_obj_t *o, const char *experts_key, bool sparse,
                       mx_model_config_t *cfg) {
  if (cfg->num_experts < 1) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %s%s is %d; a model without experts is not supported as '%s'", o->src,
                        o->prefix, experts_key, cfg->num_experts, cfg->model_type);
  }
  if (cfg->num_experts_per_tok < 1 || cfg->num_experts_per_tok > cfg->num_experts) {
    return mx_error_set(MX_ERR_PARSE, "%s: %snum_experts_per_tok must be in [1, %s = %d], got %d",
                        o->src, o->prefix, experts_key, cfg->num_experts, cfg->num_experts_per_tok);
  }
  if (cfg->moe_intermediate_size < 1 || cfg->shared_expert_intermediate_size < 0) {
    return mx_error_set(MX_ERR_PARSE, "%s: %sthe experts' intermediate sizes must be positive",
                        o->src, o->prefix);
  }
  memset(cfg->layer_dense, 0, sizeof cfg->layer_dense);
  return sparse ? sparse_layers(o, cfg) : MX_OK;
}
