// Typed readers for config.json / generation_config.json fields. Every type error names the
// source file and the field, and says what was found instead.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "model/config_internal.h"

mx_status_t mx_cfg_parse_json(const char *text, size_t len, const char *src, cJSON **root) {
  *root = NULL;
  cJSON *j = NULL;
  mx_status_t st = mx_json_parse(text, len, MX_CONFIG_JSON_MAX_BYTES, MX_JSON_MAX_DEPTH, src, &j);
  if (st != MX_OK) return st;
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return mx_error_set(MX_ERR_PARSE, "%s: not a JSON object", src);
  }
  *root = j;
  return MX_OK;
}

static const char *type_name(const cJSON *j) {
  if (cJSON_IsString(j)) return "a string";
  if (cJSON_IsBool(j)) return "a boolean";
  if (cJSON_IsNumber(j)) return "a number";
  if (cJSON_IsArray(j)) return "an array";
  if (cJSON_IsObject(j)) return "an object";
  return "null";
}

static const cJSON *get(const mx_cfg_obj_t *o, const char *key) {
  const cJSON *j = o->obj ? cJSON_GetObjectItemCaseSensitive(o->obj, key) : NULL;
  return (j && !cJSON_IsNull(j)) ? j : NULL;
}

bool mx_cfg_has(const mx_cfg_obj_t *o, const char *key) { return get(o, key) != NULL; }

static mx_status_t type_error(const mx_cfg_obj_t *o, const char *key, const char *want,
                              const cJSON *j) {
  return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be %s, got %s", o->src, o->prefix, key, want,
                      type_name(j));
}

// Integral JSON number within [lo, hi].
static mx_status_t get_int(const mx_cfg_obj_t *o, const char *key, double lo, double hi,
                           const cJSON *j, int64_t *out) {
  if (!cJSON_IsNumber(j)) return type_error(o, key, "an integer", j);
  double v = j->valuedouble;
  if (v != floor(v)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be an integer, got %g", o->src, o->prefix, key,
                        v);
  }
  if (!(v >= lo && v <= hi)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s%s (%g) is out of range", o->src, o->prefix, key, v);
  }
  *out = (int64_t)v;
  return MX_OK;
}

mx_status_t mx_cfg_i32(const mx_cfg_obj_t *o, const char *key, int32_t def, int32_t *out) {
  const cJSON *j = get(o, key);
  if (!j) {
    *out = def;
    return MX_OK;
  }
  int64_t v = 0;
  mx_status_t st = get_int(o, key, (double)INT32_MIN, (double)INT32_MAX, j, &v);
  if (st == MX_OK) *out = (int32_t)v;
  return st;
}

mx_status_t mx_cfg_i64(const mx_cfg_obj_t *o, const char *key, int64_t def, int64_t *out) {
  const cJSON *j = get(o, key);
  if (!j) {
    *out = def;
    return MX_OK;
  }
  // 2^53: the largest range in which a JSON number (a double) is an exact integer.
  return get_int(o, key, -9007199254740992.0, 9007199254740992.0, j, out);
}

mx_status_t mx_cfg_positive(const mx_cfg_obj_t *o, const char *key, double v) {
  if (v > 0) return MX_OK;
  return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be positive (got %g)", o->src, o->prefix, key,
                      v);
}

mx_status_t mx_cfg_f64_positive(const mx_cfg_obj_t *o, const char *key, double def, double *out) {
  MX_TRY(mx_cfg_f64(o, key, def, out));
  return mx_cfg_positive(o, key, *out);
}

mx_status_t mx_cfg_f64(const mx_cfg_obj_t *o, const char *key, double def, double *out) {
  const cJSON *j = get(o, key);
  if (!j) {
    *out = def;
    return MX_OK;
  }
  if (!cJSON_IsNumber(j)) return type_error(o, key, "a number", j);
  if (!isfinite(j->valuedouble)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s%s is not finite", o->src, o->prefix, key);
  }
  *out = j->valuedouble;
  return MX_OK;
}

mx_status_t mx_cfg_bool(const mx_cfg_obj_t *o, const char *key, bool def, bool *out) {
  const cJSON *j = get(o, key);
  if (!j) {
    *out = def;
    return MX_OK;
  }
  if (!cJSON_IsBool(j)) return type_error(o, key, "true or false", j);
  *out = cJSON_IsTrue(j);
  return MX_OK;
}

mx_status_t mx_cfg_str(const mx_cfg_obj_t *o, const char *key, const char *def, char *out,
                       size_t cap) {
  const cJSON *j = get(o, key);
  const char *s = def;
  if (j) {
    if (!cJSON_IsString(j)) return type_error(o, key, "a string", j);
    s = j->valuestring;
  }
  if (strlen(s) >= cap) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s%s '%.60s...' is too long (at most %zu bytes)", o->src,
                        o->prefix, key, s, cap - 1);
  }
  strcpy(out, s);
  return MX_OK;
}

mx_status_t mx_cfg_token(const mx_cfg_obj_t *o, const char *key, int32_t def, int32_t *out) {
  const cJSON *j = o->obj ? cJSON_GetObjectItemCaseSensitive(o->obj, key) : NULL;
  if (!j) {
    *out = def;
    return MX_OK;
  }
  if (cJSON_IsNull(j)) {
    *out = -1;
    return MX_OK;
  }
  int64_t v = 0;
  mx_status_t st = get_int(o, key, (double)INT32_MIN, (double)INT32_MAX, j, &v);
  if (st == MX_OK) *out = v < 0 ? -1 : (int32_t)v;
  return st;
}

mx_status_t mx_cfg_eos(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  const char *key = "eos_token_id";
  const cJSON *j = o->obj ? cJSON_GetObjectItemCaseSensitive(o->obj, key) : NULL;
  if (!j) return MX_OK;
  cfg->n_eos = 0;
  if (cJSON_IsNull(j)) return MX_OK;
  if (cJSON_IsNumber(j)) {
    int64_t v = 0;
    mx_status_t st = get_int(o, key, 0, (double)INT32_MAX, j, &v);
    if (st != MX_OK) return st;
    cfg->eos_token_ids[cfg->n_eos++] = (int32_t)v;
    return MX_OK;
  }
  if (!cJSON_IsArray(j)) return type_error(o, key, "an integer or a list of integers", j);
  int n = cJSON_GetArraySize(j);
  if (n > MX_MAX_EOS_IDS) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: %s%s lists %d ids (at most %d supported)", o->src,
                        o->prefix, key, n, MX_MAX_EOS_IDS);
  }
  for (const cJSON *e = j->child; e; e = e->next) {
    if (!cJSON_IsNumber(e)) return type_error(o, "eos_token_id[]", "an integer", e);
    int64_t v = 0;
    mx_status_t st = get_int(o, "eos_token_id[]", 0, (double)INT32_MAX, e, &v);
    if (st != MX_OK) return st;
    cfg->eos_token_ids[cfg->n_eos++] = (int32_t)v;
  }
  return MX_OK;
}
