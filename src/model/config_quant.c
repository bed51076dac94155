// config.json `quantization` (MLX checkpoints): the default bits / group size, and the
// per-layer overrides that mlx-lm writes into the same dictionary (key = module path, value =
// {"bits", "group_size"} or false for a layer left unquantized).
#include <stdio.h>
#include <string.h>

#include "model/config_internal.h"
#include "model/quant_internal.h"

// The quantization dictionary: "quantization", else an MLX-style "quantization_config" (one
// without "quant_method"; Hugging Face's GPTQ / AWQ / bitsandbytes configs have one; "mxfp4"'s
// is read as none). NULL when there is none; *err set when the config names a scheme we cannot
// run.
static const cJSON *quant_dict(const cJSON *root, const char *src, mx_status_t *err) {
  *err = MX_OK;
  const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization");
  if (q && !cJSON_IsNull(q)) {
    if (!cJSON_IsObject(q)) {
      *err = mx_error_set(MX_ERR_PARSE, "%s: quantization must be an object", src);
      return NULL;
    }
    return q;
  }
  q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
  if (!q || cJSON_IsNull(q)) return NULL;
  if (!cJSON_IsObject(q)) {
    *err = mx_error_set(MX_ERR_PARSE, "%s: quantization_config must be an object", src);
    return NULL;
  }
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
  // gpt-oss's MXFP4 experts: the stored tensors say which weights are packed (u8 blocks and e8m0
  // scales, validated by their shapes at load); no dictionary of bits and groups goes with them.
  if (cJSON_IsString(m) && strcmp(m->valuestring, "mxfp4") == 0) return NULL;
  if (m) {
    *err = mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: quantization_config.quant_method '%s' is not supported (MLX affine "
                        "4/8-bit checkpoints are)",
                        src, cJSON_IsString(m) ? m->valuestring : "?");
    return NULL;
  }
  return q;
}

// bits / group_size of one dictionary (the top level or a per-layer override).
static mx_status_t read_bits_group(const mx_cfg_obj_t *o, int32_t def_bits, int32_t def_group,
                                   int32_t *bits, int32_t *group) {
  mx_status_t st = mx_cfg_i32(o, "bits", def_bits, bits);
  if (st == MX_OK) st = mx_cfg_i32(o, "group_size", def_group, group);
  if (st != MX_OK) return st;
  char mode[32];
  st = mx_cfg_str(o, "mode", "affine", mode, sizeof mode);
  if (st != MX_OK) return st;
  if (strcmp(mode, "affine") != 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %smode '%s' is not supported (MLX affine quantization is)", o->src,
                        o->prefix, mode);
  }
  if (*bits != 4 && *bits != 8) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %sbits %d is not supported (MLX 4-bit and 8-bit quantization are)",
                        o->src, o->prefix, *bits);
  }
  if (*group != 32 && *group != 64 && *group != 128) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: %sgroup_size %d is not supported (32, 64, 128)",
                        o->src, o->prefix, *group);
  }
  return MX_OK;
}

mx_status_t mx_cfg_parse_quant(const cJSON *root, const char *src, mx_model_config_t *cfg) {
  cfg->quant_bits = cfg->quant_group_size = 0;
  mx_status_t st;
  const cJSON *q = quant_dict(root, src, &st);
  if (!q) return st;
  char prefix[32];
  snprintf(prefix, sizeof prefix, "%s.",
           cJSON_GetObjectItemCaseSensitive(root, "quantization") ? "quantization"
                                                                  : "quantization_config");
  mx_cfg_obj_t o = {q, src, prefix};
  if (!mx_cfg_has(&o, "bits") || !mx_cfg_has(&o, "group_size")) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s needs bits and group_size", src, prefix);
  }
  return read_bits_group(&o, 0, 0, &cfg->quant_bits, &cfg->quant_group_size);
}

mx_status_t mx_quant_config_layer(const cJSON *root, const char *src, const char *module,
                                  int32_t def_bits, int32_t def_group, int32_t *bits,
                                  int32_t *group) {
  *bits = def_bits;
  *group = def_group;
  mx_status_t st;
  const cJSON *q = quant_dict(root, src, &st);
  if (!q) return st;
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(q, module);
  if (!e) return MX_OK;
  if (cJSON_IsFalse(e)) {
    *bits = *group = 0;
    return MX_OK;
  }
  char prefix[300];
  snprintf(prefix, sizeof prefix, "quantization.%.250s.", module);
  if (!cJSON_IsObject(e)) {
    return mx_error_set(MX_ERR_PARSE, "%s: quantization.%s must be an object or false", src,
                        module);
  }
  mx_cfg_obj_t o = {e, src, prefix};
  return read_bits_group(&o, def_bits, def_group, bits, group);
}
