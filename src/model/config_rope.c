// rope_scaling (transformers <= 4.x) or rope_parameters (5.x): {"rope_type" | "type": ...}, read
// and resolved as transformers' modeling_rope_utils does (its standardize_rope_params and each
// type's _compute_*_parameters), so that mx_rope_inv_freq and the graph need no other field.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/config_internal.h"

static mx_status_t need(const mx_cfg_obj_t *o, const char *key, const char *why) {
  if (mx_cfg_has(o, key)) return MX_OK;
  return mx_error_set(MX_ERR_PARSE, "%s: %s%s is missing (%s)", o->src, o->prefix, key, why);
}

static mx_status_t at_least(const mx_cfg_obj_t *o, const char *key, double v, double lo) {
  if (v >= lo) return MX_OK;
  return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be >= %g (got %g)", o->src, o->prefix, key, lo,
                      v);
}

// The pretraining length the scaled types start from. transformers gives a top-level
// original_max_position_embeddings priority (Phi-3 keeps it there; Phi3Config defaults it to
// 4096: `def`), then the one inside the rope dict, then max_position_embeddings.
static mx_status_t original_max(const mx_cfg_obj_t *root, const mx_cfg_obj_t *o, int64_t def,
                                const mx_model_config_t *cfg, int64_t *out) {
  const char *key = "original_max_position_embeddings";
  if (mx_cfg_has(root, key)) {
    MX_TRY(mx_cfg_i64(root, key, 0, out));
    return mx_cfg_positive(root, key, (double)*out);
  }
  if (def > 0) {
    *out = def;
    return MX_OK;
  }
  MX_TRY(mx_cfg_i64(o, key, cfg->max_position_embeddings, out));
  return mx_cfg_positive(o, key, (double)*out);
}

static mx_status_t parse_llama3(const mx_cfg_obj_t *o, mx_rope_scaling_t *r) {
  static const char *const keys[] = {"factor", "low_freq_factor", "high_freq_factor"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    MX_TRY(need(o, keys[i], "rope_type 'llama3' needs it"));
  }
  MX_TRY(mx_cfg_f64(o, "factor", 1.0, &r->factor));
  MX_TRY(mx_cfg_f64(o, "low_freq_factor", 1.0, &r->low_freq_factor));
  MX_TRY(mx_cfg_f64(o, "high_freq_factor", 1.0, &r->high_freq_factor));
  MX_TRY(mx_cfg_positive(o, "factor", r->factor));
  MX_TRY(mx_cfg_positive(o, "low_freq_factor", r->low_freq_factor));
  // The smoothing interpolates between the two wavelength bounds: they must differ.
  if (!(r->high_freq_factor > r->low_freq_factor)) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %shigh_freq_factor (%g) must be greater than low_freq_factor (%g)",
                        o->src, o->prefix, r->high_freq_factor, r->low_freq_factor);
  }
  return MX_OK;
}

// YaRN's mscale (the paper's eq. 21): 0.1 * m * ln(s) + 1, and 1 when s <= 1.
static double yarn_mscale(double s, double m) { return s <= 1 ? 1.0 : 0.1 * m * log(s) + 1.0; }

// A number that may be null: absent or null -> def.
static mx_status_t opt_f(const mx_cfg_obj_t *o, const char *key, double def, double *out) {
  return mx_cfg_f64(o, key, def, out);
}

static mx_status_t parse_yarn(const mx_cfg_obj_t *o, const mx_model_config_t *cfg,
                              mx_rope_scaling_t *r) {
  // factor null: the ratio of the extended to the original length (DeepSeek-V3's files).
  if (cJSON_GetObjectItemCaseSensitive(o->obj, "factor") == NULL) {  // null is allowed
    return need(o, "factor", "rope_type 'yarn' needs it (null: the ratio of the lengths)");
  }
  MX_TRY(opt_f(o, "factor",
               (double)cfg->max_position_embeddings / (double)r->original_max_position_embeddings,
               &r->factor));
  MX_TRY(at_least(o, "factor", r->factor, 1.0));
  double mscale = 0, mscale_all_dim = 0;
  MX_TRY(opt_f(o, "mscale", 0, &mscale));
  MX_TRY(opt_f(o, "mscale_all_dim", 0, &mscale_all_dim));
  r->mscale_all_dim = mscale_all_dim;
  // transformers: `mscale and mscale_all_dim` (both non-zero) selects the ratio form.
  double derived = mscale != 0 && mscale_all_dim != 0
                       ? yarn_mscale(r->factor, mscale) / yarn_mscale(r->factor, mscale_all_dim)
                       : yarn_mscale(r->factor, 1.0);
  MX_TRY(opt_f(o, "attention_factor", derived, &r->attention_factor));
  MX_TRY(at_least(o, "attention_factor", r->attention_factor, 0.0));
  // `beta_fast or 32`: 0 means the default too.
  MX_TRY(opt_f(o, "beta_fast", 0, &r->beta_fast));
  MX_TRY(opt_f(o, "beta_slow", 0, &r->beta_slow));
  if (r->beta_fast == 0) r->beta_fast = 32;
  if (r->beta_slow == 0) r->beta_slow = 1;
  if (r->beta_fast < r->beta_slow) {
    return mx_error_set(MX_ERR_PARSE, "%s: %sbeta_fast (%g) must be >= beta_slow (%g)", o->src,
                        o->prefix, r->beta_fast, r->beta_slow);
  }
  return mx_cfg_bool(o, "truncate", true, &r->truncate);
}

static mx_status_t factor_list(const mx_cfg_obj_t *o, const char *key, int32_t half, float *out) {
  MX_TRY(need(o, key, "rope_type 'longrope' needs it"));
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o->obj, key);
  int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
  if (n != half) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %s%s must be a list of %d numbers (rotary dimensions / 2), got %s%d",
                        o->src, o->prefix, key, half, n < 0 ? "no list: " : "", n < 0 ? 0 : n);
  }
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || !(e->valuedouble > 0)) {
      return mx_error_set(MX_ERR_PARSE, "%s: %s%s[%d] must be a positive number", o->src, o->prefix,
                          key, i);
    }
    out[i++] = (float)e->valuedouble;
  }
  return MX_OK;
}

static mx_status_t parse_longrope(const mx_cfg_obj_t *o, const mx_model_config_t *cfg, int32_t half,
                                  mx_rope_scaling_t *r) {
  if (half > MX_ROPE_MAX_FACTORS) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: %s'longrope' with %d rotary pairs (at most %d)",
                        o->src, o->prefix, half, MX_ROPE_MAX_FACTORS);
  }
  r->n_factors = half;
  MX_TRY(factor_list(o, "short_factor", half, r->short_factor));
  MX_TRY(factor_list(o, "long_factor", half, r->long_factor));
  double orig = (double)r->original_max_position_embeddings;
  MX_TRY(opt_f(o, "factor", (double)cfg->max_position_embeddings / orig, &r->factor));
  MX_TRY(mx_cfg_positive(o, "factor", r->factor));
  double derived = r->factor <= 1 ? 1.0 : sqrt(1.0 + log(r->factor) / log(orig));
  MX_TRY(opt_f(o, "attention_factor", derived, &r->attention_factor));
  return at_least(o, "attention_factor", r->attention_factor, 0.0);
}

mx_status_t mx_cfg_rope_scaling(const mx_cfg_obj_t *root, const mx_cfg_defaults_t *d,
                                int32_t rotary_dim, mx_model_config_t *cfg) {
  const char *field = "rope_scaling";
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root->obj, field);
  if (!rs || cJSON_IsNull(rs)) {
    field = "rope_parameters";
    rs = cJSON_GetObjectItemCaseSensitive(root->obj, field);
    if (!rs || cJSON_IsNull(rs)) return MX_OK;
  }
  if (!cJSON_IsObject(rs)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s must be an object or null", root->src, field);
  }
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%s%s.", root->prefix, field);
  mx_cfg_obj_t o = {rs, root->src, prefix};
  return mx_cfg_rope_params(root, &o, d, rotary_dim, cfg);
}

mx_status_t mx_cfg_rope_params(const mx_cfg_obj_t *root, const mx_cfg_obj_t *params,
                               const mx_cfg_defaults_t *d, int32_t rotary_dim,
                               mx_model_config_t *cfg) {
  mx_cfg_obj_t o = *params;
  const char *prefix = o.prefix;
  char type[32] = "";
  const char *type_key = mx_cfg_has(&o, "rope_type") ? "rope_type" : "type";
  MX_TRY(mx_cfg_str(&o, type_key, "", type, sizeof type));
  if (type[0] == '\0') {
    return mx_error_set(MX_ERR_PARSE, "%s: %.*s has no rope_type", root->src,
                        (int)strlen(prefix) - 1, prefix);
  }
  mx_rope_scaling_t *r = &cfg->rope_scaling;
  memset(r, 0, sizeof *r);
  r->attention_factor = 1.0;
  if (strcmp(type, "default") == 0) return MX_OK;
  if (d->rope_longrope_only) {
    if (strcmp(type, "su") != 0 && strcmp(type, "yarn") != 0 && strcmp(type, "longrope") != 0) {
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "%s: %s%s '%.32s' is not supported by this family (default, longrope)",
                          root->src, prefix, type_key, type);
    }
    snprintf(type, sizeof type, "longrope");
  }
  if (strcmp(type, "dynamic") == 0) {
    // transformers computes base * (factor * n / max - (factor - 1)) ^ (R / (R - 2)) from the
    // length n, max(n, max_position_embeddings): the plain base for n <= that maximum. Contexts
    // here never exceed it (the session and emit refuse a larger capacity).
    r->kind = MX_ROPE_SCALING_DYNAMIC;
    MX_TRY(need(&o, "factor", "rope_type 'dynamic' needs it"));
    MX_TRY(mx_cfg_f64(&o, "factor", 1.0, &r->factor));
    return at_least(&o, "factor", r->factor, 1.0);
  }
  if (strcmp(type, "linear") == 0) {
    r->kind = MX_ROPE_SCALING_LINEAR;
    MX_TRY(need(&o, "factor", "rope_type 'linear' needs it"));
    MX_TRY(mx_cfg_f64(&o, "factor", 1.0, &r->factor));
    return mx_cfg_positive(&o, "factor", r->factor);
  }
  static const struct {
    const char *name;
    mx_rope_scaling_kind_t kind;
  } kScaled[] = {{"llama3", MX_ROPE_SCALING_LLAMA3},
                 {"yarn", MX_ROPE_SCALING_YARN},
                 {"longrope", MX_ROPE_SCALING_LONGROPE}};
  for (size_t i = 0; i < sizeof kScaled / sizeof kScaled[0]; i++) {
    if (strcmp(type, kScaled[i].name) != 0) continue;
    r->kind = kScaled[i].kind;
    MX_TRY(original_max(root, &o, d->original_max_position_embeddings, cfg,
                        &r->original_max_position_embeddings));
    if (r->kind == MX_ROPE_SCALING_LLAMA3) return parse_llama3(&o, r);
    if (r->kind == MX_ROPE_SCALING_YARN) return parse_yarn(&o, cfg, r);
    return parse_longrope(&o, cfg, rotary_dim / 2, r);
  }
  return mx_error_set(MX_ERR_UNSUPPORTED,
                      "%s: %s%s '%.32s' is not supported (supported: default, linear, dynamic, "
                      "llama3, yarn, longrope)",
                      root->src, prefix, type_key, type);
}

bool mx_cfg_rope_nested(const mx_cfg_obj_t *o) {
  const cJSON *rp = cJSON_GetObjectItemCaseSensitive(o->obj, "rope_parameters");
  return cJSON_IsObject(rp) && (cJSON_GetObjectItemCaseSensitive(rp, "full_attention") ||
                                cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention"));
}

// One layer type's entry of a nested rope_parameters: its base (def when absent), and its
// scaling into cfg->rope_scaling when `scaled` (the full-attention layers'); the other type must
// be unscaled.
static mx_status_t rope_of_type(const mx_cfg_obj_t *o, const cJSON *rp, const char *type,
                                const mx_cfg_defaults_t *d, const char *family, bool scaled,
                                double def, mx_model_config_t *cfg, double *theta) {
  const cJSON *sub = cJSON_GetObjectItemCaseSensitive(rp, type);
  *theta = def;
  if (sub == NULL || cJSON_IsNull(sub)) return MX_OK;
  char prefix[96];
  snprintf(prefix, sizeof prefix, "%srope_parameters.%s.", o->prefix, type);
  if (!cJSON_IsObject(sub)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %.*s must be an object", o->src, (int)strlen(prefix) - 1,
                        prefix);
  }
  mx_cfg_obj_t s = {sub, o->src, prefix};
  char kind[32];
  MX_TRY(mx_cfg_str(&s, "rope_type", "default", kind, sizeof kind));
  if (scaled && strcmp(kind, "default") != 0) {
    int32_t rot = (int32_t)((double)cfg->head_dim * cfg->partial_rotary_factor);
    MX_TRY(mx_cfg_rope_params(o, &s, d, rot, cfg));
  } else if (strcmp(kind, "default") != 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %srope_type '%s' is not supported for model_type '%s' "
                        "(supported: default; the full-attention layers may scale)",
                        o->src, prefix, kind, family);
  }
  MX_TRY(mx_cfg_f64(&s, "rope_theta", def, theta));
  return mx_cfg_positive(&s, "rope_theta", *theta);
}

mx_status_t mx_cfg_parse_common_nested(const mx_cfg_obj_t *o, const mx_cfg_defaults_t *d,
                                       const char *family, double sliding_def,
                                       mx_model_config_t *cfg) {
  // The shared reader knows the flat form only: it reads the rest without rope_parameters (so
  // the top-level rope_theta, or d's, is the full layers' default, as transformers pops it).
  cJSON *rest = cJSON_Duplicate(o->obj, true);
  if (rest == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  cJSON_DeleteItemFromObjectCaseSensitive(rest, "rope_parameters");
  mx_cfg_obj_t r = {rest, o->src, o->prefix};
  mx_status_t st = mx_cfg_parse_common(&r, d, cfg);
  cJSON_Delete(rest);
  MX_TRY(st);
  const cJSON *rp = cJSON_GetObjectItemCaseSensitive(o->obj, "rope_parameters");
  MX_TRY(rope_of_type(o, rp, "full_attention", d, family, true, cfg->rope_theta, cfg,
                      &cfg->rope_theta));
  return rope_of_type(o, rp, "sliding_attention", d, family, false, sliding_def, cfg,
                      &cfg->rope_local_base_freq);
}
