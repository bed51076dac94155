// Fields shared by the decoder-only families (sizes, heads, norms, RoPE and its scaling, dtype,
// token ids), read with the family's Hugging Face defaults, then validated.
#include <math.h>
#include <string.h>

#include "model/config_internal.h"

static mx_status_t positive_i(const char *src, const char *key, int64_t v) {
  if (v > 0) return MX_OK;
  return mx_error_set(MX_ERR_PARSE, "%s: %s must be positive (got %lld)", src, key, (long long)v);
}

mx_status_t mx_cfg_dtype(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  // transformers 5 writes "dtype"; earlier versions "torch_dtype".
  const char *key = mx_cfg_has(o, "torch_dtype") ? "torch_dtype" : "dtype";
  char s[32];
  MX_TRY(mx_cfg_str(o, key, "float32", s, sizeof s));
  static const struct {
    const char *name;
    mx_elem_type_t et;
  } map[] = {{"float32", MX_ELEM_F32},
             {"float16", MX_ELEM_F16},
             {"bfloat16", MX_ELEM_BF16},
             {"float64", MX_ELEM_F64}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    if (strcmp(s, map[i].name) == 0) {
      cfg->dtype = map[i].et;
      return MX_OK;
    }
  }
  return mx_error_set(MX_ERR_UNSUPPORTED,
                      "%s: %s '%s' is not supported (supported: float32, float16, bfloat16, "
                      "float64)",
                      o->src, key, s);
}

static mx_status_t parse_sizes(const mx_cfg_obj_t *o, const mx_cfg_defaults_t *d,
                               mx_model_config_t *cfg) {
  MX_TRY(mx_cfg_i32(o, "vocab_size", d->vocab_size, &cfg->vocab_size));
  MX_TRY(mx_cfg_i32(o, "hidden_size", d->hidden_size, &cfg->hidden_size));
  MX_TRY(mx_cfg_i32(o, "intermediate_size", d->intermediate_size, &cfg->intermediate_size));
  MX_TRY(mx_cfg_i32(o, "num_hidden_layers", d->num_layers, &cfg->num_layers));
  MX_TRY(mx_cfg_i32(o, "num_attention_heads", d->num_heads, &cfg->num_heads));
  // Absent keys take the family's default; a null value means "derive it" (HF: None).
  bool kv_absent = !cJSON_GetObjectItemCaseSensitive(o->obj, "num_key_value_heads");
  int32_t kv_def = kv_absent && d->num_kv_heads > 0 ? d->num_kv_heads : cfg->num_heads;
  MX_TRY(mx_cfg_i32(o, "num_key_value_heads", kv_def, &cfg->num_kv_heads));
  bool hd_absent = !cJSON_GetObjectItemCaseSensitive(o->obj, "head_dim");
  bool hd_given = mx_cfg_has(o, "head_dim") || (hd_absent && d->head_dim > 0);
  MX_TRY(mx_cfg_i32(o, "head_dim", hd_absent ? d->head_dim : 0, &cfg->head_dim));
  MX_TRY(mx_cfg_i64(o, "max_position_embeddings", d->max_position_embeddings,
                    &cfg->max_position_embeddings));
  const char *src = o->src;
  MX_TRY(positive_i(src, "vocab_size", cfg->vocab_size));
  MX_TRY(positive_i(src, "hidden_size", cfg->hidden_size));
  MX_TRY(positive_i(src, "intermediate_size", cfg->intermediate_size));
  MX_TRY(positive_i(src, "num_hidden_layers", cfg->num_layers));
  MX_TRY(positive_i(src, "num_attention_heads", cfg->num_heads));
  MX_TRY(positive_i(src, "num_key_value_heads", cfg->num_kv_heads));
  MX_TRY(positive_i(src, "max_position_embeddings", cfg->max_position_embeddings));
  if (cfg->num_layers > MX_MAX_LAYERS) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: num_hidden_layers (%d) exceeds %d", src,
                        cfg->num_layers, MX_MAX_LAYERS);
  }
  if (hd_given) {
    MX_TRY(positive_i(src, "head_dim", cfg->head_dim));
  } else {
    if (cfg->hidden_size % cfg->num_heads != 0) {
      return mx_error_set(MX_ERR_PARSE,
                          "%s: hidden_size (%d) must be divisible by num_attention_heads (%d) "
                          "when head_dim is absent",
                          src, cfg->hidden_size, cfg->num_heads);
    }
    cfg->head_dim = cfg->hidden_size / cfg->num_heads;
  }
  if (cfg->num_heads % cfg->num_kv_heads != 0) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: num_key_value_heads (%d) must divide num_attention_heads (%d)", src,
                        cfg->num_kv_heads, cfg->num_heads);
  }
  return MX_OK;
}

static mx_status_t parse_rope(const mx_cfg_obj_t *o, const mx_cfg_defaults_t *d,
                              mx_model_config_t *cfg) {
  double theta = d->rope_theta, prf = d->partial_rotary_factor > 0 ? d->partial_rotary_factor : 1.0;
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(o->obj, "rope_parameters");
  if (cJSON_IsObject(params)) {  // transformers 5 moves rope_theta (and the factor) in here
    mx_cfg_obj_t p = {params, o->src, "rope_parameters."};
    MX_TRY(mx_cfg_f64(&p, "rope_theta", theta, &theta));
    MX_TRY(mx_cfg_positive(&p, "rope_theta", theta));
    MX_TRY(mx_cfg_f64(&p, "partial_rotary_factor", prf, &prf));
  }
  MX_TRY(mx_cfg_f64(o, "rope_theta", theta, &cfg->rope_theta));
  MX_TRY(mx_cfg_positive(o, "rope_theta", cfg->rope_theta));
  MX_TRY(mx_cfg_f64(o, "partial_rotary_factor", prf, &cfg->partial_rotary_factor));
  if (!(cfg->partial_rotary_factor > 0 && cfg->partial_rotary_factor <= 1)) {
    return mx_error_set(MX_ERR_PARSE, "%s: partial_rotary_factor (%g) must be in (0, 1]", o->src,
                        cfg->partial_rotary_factor);
  }
  // HF rotates int(head_dim * factor) dims in pairs (i, i + rot/2): rot must be even.
  int64_t rot = (int64_t)((double)cfg->head_dim * cfg->partial_rotary_factor);
  if (rot < 2 || rot % 2 != 0) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: head_dim (%d) x partial_rotary_factor (%g) gives %lld rotary "
                        "dimensions; an even number >= 2 is needed",
                        o->src, cfg->head_dim, cfg->partial_rotary_factor, (long long)rot);
  }
  return mx_cfg_rope_scaling(o, d, (int32_t)rot, cfg);
}

mx_status_t mx_cfg_parse_common(const mx_cfg_obj_t *o, const mx_cfg_defaults_t *d,
                                mx_model_config_t *cfg) {
  MX_TRY(parse_sizes(o, d, cfg));
  MX_TRY(mx_cfg_f64(o, "rms_norm_eps", d->rms_norm_eps, &cfg->rms_norm_eps));
  MX_TRY(mx_cfg_positive(o, "rms_norm_eps", cfg->rms_norm_eps));
  MX_TRY(parse_rope(o, d, cfg));
  MX_TRY(mx_cfg_bool(o, "tie_word_embeddings", d->tie_word_embeddings, &cfg->tie_word_embeddings));
  MX_TRY(mx_cfg_bool(o, "attention_bias", false, &cfg->attention_bias));
  MX_TRY(mx_cfg_bool(o, "mlp_bias", false, &cfg->mlp_bias));
  MX_TRY(mx_cfg_str(o, "hidden_act", d->hidden_act, cfg->hidden_act, sizeof cfg->hidden_act));
  MX_TRY(mx_cfg_dtype(o, cfg));
  MX_TRY(mx_cfg_token(o, "bos_token_id", d->bos_token_id, &cfg->bos_token_id));
  MX_TRY(mx_cfg_token(o, "pad_token_id", d->pad_token_id, &cfg->pad_token_id));
  cfg->n_eos = 0;
  if (d->eos_token_id >= 0) cfg->eos_token_ids[cfg->n_eos++] = d->eos_token_id;
  MX_TRY(mx_cfg_eos(o, cfg));
  return MX_OK;
}
