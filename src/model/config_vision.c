// The vision side of the vision-language configs (config_internal.h): the ViT vision_config of
// LLaVA's CLIP tower and Gemma 3's SigLIP tower (the same fields, each class with its own
// defaults), sub-objects and the special tokens' indices.
#include <string.h>

#include "model/config_internal.h"

mx_status_t mx_cfg_sub_object(const mx_cfg_obj_t *o, const char *key, cJSON **empty,
                              const cJSON **out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o->obj, key);
  *empty = NULL;
  if (v == NULL || cJSON_IsNull(v)) {  // absent -> the sub-config's defaults
    *empty = cJSON_CreateObject();
    if (*empty == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    v = *empty;
  } else if (!cJSON_IsObject(v)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be an object", o->src, o->prefix, key);
  }
  *out = v;
  return MX_OK;
}

mx_status_t mx_cfg_token_index(const mx_cfg_obj_t *o, const char *key, const char *alias,
                               int32_t def, int32_t vocab, int32_t *out) {
  const char *k = mx_cfg_has(o, key) ? key : alias;
  MX_TRY(mx_cfg_i32(o, k, def, out));
  if (*out >= 0 && *out < vocab) return MX_OK;
  return mx_error_set(MX_ERR_PARSE, "%s: %s%s (%d) is outside the text vocabulary (%d)", o->src,
                      o->prefix, k, *out, vocab);
}

static mx_status_t positive(const mx_cfg_obj_t *o, const char *key, int64_t v) {
  if (v > 0) return MX_OK;
  return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be positive (got %lld)", o->src, o->prefix, key,
                      (long long)v);
}

static mx_status_t read_vit(const mx_cfg_obj_t *t, const mx_vit_defaults_t *d,
                            mx_vision_config_t *v) {
  char type[32];
  MX_TRY(mx_cfg_str(t, "model_type", d->model_type, type, sizeof type));
  if (strcmp(type, d->model_type) != 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %smodel_type '%s' is not supported (supported: %s)", t->src, t->prefix,
                        type, d->model_type);
  }
  MX_TRY(mx_cfg_i32(t, "hidden_size", d->hidden_size, &v->hidden_size));
  MX_TRY(mx_cfg_i32(t, "intermediate_size", d->intermediate_size, &v->intermediate_size));
  MX_TRY(mx_cfg_i32(t, "num_hidden_layers", d->num_layers, &v->num_layers));
  MX_TRY(mx_cfg_i32(t, "num_attention_heads", d->num_heads, &v->num_heads));
  MX_TRY(mx_cfg_i32(t, "image_size", d->image_size, &v->image_size));
  MX_TRY(mx_cfg_i32(t, "patch_size", d->patch_size, &v->patch_size));
  MX_TRY(mx_cfg_i32(t, "num_channels", 3, &v->num_channels));
  MX_TRY(mx_cfg_f64(t, "layer_norm_eps", d->layer_norm_eps, &v->layer_norm_eps));
  char act[32];
  MX_TRY(mx_cfg_str(t, "hidden_act", d->hidden_act, act, sizeof act));
  const char *known = NULL;
  for (int i = 0; i < 2 && d->acts[i]; i++)
    if (strcmp(act, d->acts[i]) == 0) known = d->acts[i];
  if (!known) {
    return mx_error_set(
        MX_ERR_UNSUPPORTED, "%s: %shidden_act '%s' is not supported (supported: %s%s%s)", t->src,
        t->prefix, act, d->acts[0], d->acts[1] ? ", " : "", d->acts[1] ? d->acts[1] : "");
  }
  // gelu_pytorch_tanh is kept as gelu_tanh (the graph's name for it).
  snprintf(v->hidden_act, sizeof v->hidden_act, "%s",
           strcmp(known, "gelu_pytorch_tanh") == 0 ? "gelu_tanh" : known);
  MX_TRY(positive(t, "hidden_size", v->hidden_size));
  MX_TRY(positive(t, "intermediate_size", v->intermediate_size));
  MX_TRY(positive(t, "num_hidden_layers", v->num_layers));
  MX_TRY(positive(t, "num_attention_heads", v->num_heads));
  MX_TRY(positive(t, "image_size", v->image_size));
  MX_TRY(positive(t, "patch_size", v->patch_size));
  MX_TRY(positive(t, "num_channels", v->num_channels));
  if (v->hidden_size % v->num_heads != 0) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %shidden_size (%d) is not a multiple of num_attention_heads (%d)",
                        t->src, t->prefix, v->hidden_size, v->num_heads);
  }
  if (v->image_size % v->patch_size != 0 || v->image_size / v->patch_size > 128) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %simage_size (%d) must be a multiple of patch_size (%d), at most 128 "
                        "patches a side",
                        t->src, t->prefix, v->image_size, v->patch_size);
  }
  return MX_OK;
}

mx_status_t mx_cfg_vit(const mx_cfg_obj_t *o, const mx_vit_defaults_t *d, mx_vision_config_t *v) {
  const cJSON *vc = NULL;
  cJSON *empty;
  MX_TRY(mx_cfg_sub_object(o, "vision_config", &empty, &vc));
  mx_cfg_obj_t t = {vc, o->src, "vision_config."};
  mx_status_t st = read_vit(&t, d, v);
  cJSON_Delete(empty);
  return st;
}
