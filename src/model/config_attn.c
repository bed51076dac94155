// Config readers for the attention variants of the families after Llama: sliding windows and
// which layers use them (layer_types), soft-capping values, and the MLP activation.
#include <string.h>

#include "model/config_internal.h"

mx_status_t mx_cfg_activation(const mx_cfg_obj_t *o, const char *key, mx_model_config_t *cfg) {
  // transformers' ACT2FN names; "swish" is SiLU, "gelu_new" the same tanh approximation.
  static const struct {
    const char *name, *as;
  } map[] = {{"silu", "silu"},
             {"swish", "silu"},
             {"gelu_pytorch_tanh", "gelu_pytorch_tanh"},
             {"gelu_new", "gelu_pytorch_tanh"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    if (strcmp(cfg->hidden_act, map[i].name) == 0) {
      strcpy(cfg->hidden_act, map[i].as);
      return MX_OK;
    }
  }
  return mx_error_set(MX_ERR_UNSUPPORTED,
                      "%s: %s%s '%s' is not supported for model_type '%s' (supported: silu, "
                      "gelu_pytorch_tanh)",
                      o->src, o->prefix, key, cfg->hidden_act, cfg->model_type);
}

bool mx_cfg_every_layer(int32_t layer, int32_t arg) {
  (void)layer;
  (void)arg;
  return true;
}

bool mx_cfg_not_every_nth(int32_t layer, int32_t n) { return (layer + 1) % n != 0; }

mx_status_t mx_cfg_window(const mx_cfg_obj_t *o, int32_t def, mx_model_config_t *cfg) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o->obj, "sliding_window");
  if (j && cJSON_IsNull(j)) {
    cfg->sliding_window = 0;
    return MX_OK;
  }
  MX_TRY(mx_cfg_i32(o, "sliding_window", def, &cfg->sliding_window));
  if (j && cfg->sliding_window <= 0) {
    return mx_error_set(MX_ERR_PARSE, "%s: %ssliding_window must be positive or null (got %d)",
                        o->src, o->prefix, cfg->sliding_window);
  }
  return MX_OK;
}

mx_status_t mx_cfg_softcap(const mx_cfg_obj_t *o, const char *key, double def, double *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o->obj, key);
  if (j && cJSON_IsNull(j)) {
    *out = 0.0;
    return MX_OK;
  }
  MX_TRY(mx_cfg_f64(o, key, def, out));
  if (j && !(*out > 0)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be positive or null (got %g)", o->src,
                        o->prefix, key, *out);
  }
  return MX_OK;
}

mx_status_t mx_cfg_layer_types(const mx_cfg_obj_t *o, mx_cfg_sliding_fn default_sliding,
                               int32_t arg, mx_model_config_t *cfg) {
  const cJSON *lt = cJSON_GetObjectItemCaseSensitive(o->obj, "layer_types");
  if (!lt || cJSON_IsNull(lt)) {
    for (int32_t l = 0; l < cfg->num_layers; l++) cfg->layer_sliding[l] = default_sliding(l, arg);
    return MX_OK;
  }
  if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != cfg->num_layers) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %slayer_types must be a list of num_hidden_layers (%d) strings",
                        o->src, o->prefix, cfg->num_layers);
  }
  int32_t l = 0;
  for (const cJSON *e = lt->child; e; e = e->next, l++) {
    if (cJSON_IsString(e) && strcmp(e->valuestring, "full_attention") == 0) {
      cfg->layer_sliding[l] = 0;
    } else if (cJSON_IsString(e) && strcmp(e->valuestring, "sliding_attention") == 0) {
      cfg->layer_sliding[l] = 1;
    } else {
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "%s: %slayer_types[%d] %s%.40s%s is not supported (supported: "
                          "full_attention, sliding_attention)",
                          o->src, o->prefix, l, cJSON_IsString(e) ? "'" : "",
                          cJSON_IsString(e) ? e->valuestring : "(not a string)",
                          cJSON_IsString(e) ? "'" : "");
    }
  }
  return MX_OK;
}
