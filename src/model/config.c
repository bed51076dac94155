// config.json + generation_config.json -> mx_model_config_t. The model_type selects the
// family's parser (family.h); generation_config.json then overrides the token ids
// and supplies sampling defaults.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "model/config_internal.h"
#include "model/family.h"
#include "model/quant_internal.h"

// Families the system this engine implements refuses on its graph path, with the reason, so
// that their checkpoints get more than "not supported".
static const struct {
  const char *model_type, *reason;
} kRefused[] = {
    {"muse_glimmer",
     "Muse Glimmer: its vision tower (window and full attention, sparse attention factor) and its "
     "text model (attention output gate, QK scale factor, output soft cap, normalized token "
     "embeddings) have no StableHLO graph here, for images or text; mlxcel's MLX backend (not "
     "part of this engine) runs it"},
    {"muse_glimmer_text",
     "the Muse Glimmer text model (attention output gate, QK scale factor, output soft cap, "
     "normalized token embeddings) has no StableHLO graph here; mlxcel's MLX backend (not part "
     "of this engine) runs it"},
    {"muse_glimmer_vision",
     "the Muse Glimmer vision tower has no StableHLO graph here, and a vision tower alone is not "
     "a model this engine runs; mlxcel's MLX backend (not part of this engine) runs Muse Glimmer"},
};

static mx_status_t parse_config(const cJSON *root, const char *src, mx_model_config_t *cfg) {
  mx_cfg_obj_t o = {root, src, ""};
  if (!mx_cfg_has(&o, "model_type")) {
    return mx_error_set(MX_ERR_PARSE, "%s: model_type is missing", src);
  }
  MX_TRY(mx_cfg_str(&o, "model_type", "", cfg->model_type, sizeof cfg->model_type));
  const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
  if (arch && !cJSON_IsNull(arch)) {
    if (!cJSON_IsArray(arch)) {
      return mx_error_set(MX_ERR_PARSE, "%s: architectures must be a list of strings", src);
    }
    if (arch->child) {
      if (!cJSON_IsString(arch->child)) {
        return mx_error_set(MX_ERR_PARSE, "%s: architectures[0] must be a string", src);
      }
      snprintf(cfg->architecture, sizeof cfg->architecture, "%s", arch->child->valuestring);
    }
  }
  const mx_family_t *fam = mx_family_find(cfg->model_type);
  if (fam) {
    MX_TRY(fam->parse_config(&o, cfg));
    return mx_cfg_parse_quant(root, src, cfg);
  }
  for (size_t i = 0; i < sizeof kRefused / sizeof kRefused[0]; i++)
    if (strcmp(cfg->model_type, kRefused[i].model_type) == 0)
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "%s: model_type '%s' is not supported on this engine's graph path: %s",
                          src, cfg->model_type, kRefused[i].reason);
  char list[512];
  return mx_error_set(MX_ERR_UNSUPPORTED, "%s: model_type '%s' is not supported (supported: %s)",
                      src, cfg->model_type, mx_family_list(list, sizeof list));
}

static mx_status_t parse_generation(const cJSON *root, const char *src, mx_model_config_t *cfg) {
  mx_cfg_obj_t o = {root, src, ""};
  MX_TRY(mx_cfg_eos(&o, cfg));
  MX_TRY(mx_cfg_token(&o, "bos_token_id", cfg->bos_token_id, &cfg->bos_token_id));
  MX_TRY(mx_cfg_token(&o, "pad_token_id", cfg->pad_token_id, &cfg->pad_token_id));
  MX_TRY(mx_cfg_bool(&o, "do_sample", false, &cfg->do_sample));
  double v = 0;
  if ((cfg->has_temperature = mx_cfg_has(&o, "temperature"))) {
    MX_TRY(mx_cfg_f64(&o, "temperature", 1.0, &v));
    if (v < 0) {
      return mx_error_set(MX_ERR_PARSE, "%s: temperature (%g) must not be negative", src, v);
    }
    cfg->temperature = (float)v;
  }
  if ((cfg->has_top_p = mx_cfg_has(&o, "top_p"))) {
    MX_TRY(mx_cfg_f64(&o, "top_p", 1.0, &v));
    if (!(v > 0 && v <= 1)) {
      return mx_error_set(MX_ERR_PARSE, "%s: top_p (%g) must be in (0, 1]", src, v);
    }
    cfg->top_p = (float)v;
  }
  if ((cfg->has_top_k = mx_cfg_has(&o, "top_k"))) {
    MX_TRY(mx_cfg_i32(&o, "top_k", 0, &cfg->top_k));
    if (cfg->top_k < 0) {
      return mx_error_set(MX_ERR_PARSE, "%s: top_k (%d) must not be negative", src, cfg->top_k);
    }
  }
  return MX_OK;
}

// "dir/config.json" -> "dir/generation_config.json", for messages about the second input.
static void generation_source(const char *src, char *out, size_t cap) {
  size_t n = strlen(src);
  const char *tail = "config.json";
  size_t t = strlen(tail);
  if (n >= t && strcmp(src + n - t, tail) == 0 && (n == t || src[n - t - 1] == '/')) {
    snprintf(out, cap, "%.*sgeneration_config.json", (int)(n - t), src);
  } else {
    snprintf(out, cap, "%s (generation config)", src);
  }
}

mx_status_t mx_config_parse(const char *config_json, size_t len, const char *gen_json,
                            size_t gen_len, const char *source, mx_model_config_t *cfg) {
  const char *src = source ? source : "config.json";
  memset(cfg, 0, sizeof *cfg);
  if (!config_json) return mx_error_set(MX_ERR_INVALID_ARG, "%s: no config text", src);
  cJSON *root = NULL;
  mx_status_t st = mx_cfg_parse_json(config_json, len, src, &root);
  if (st == MX_OK) st = parse_config(root, src, cfg);
  cJSON_Delete(root);
  if (st == MX_OK && gen_json) {
    char gsrc[1024];
    generation_source(src, gsrc, sizeof gsrc);
    cJSON *groot = NULL;
    st = mx_cfg_parse_json(gen_json, gen_len, gsrc, &groot);
    if (st == MX_OK) st = parse_generation(groot, gsrc, cfg);
    cJSON_Delete(groot);
  }
  if (st != MX_OK) memset(cfg, 0, sizeof *cfg);
  return st;
}

mx_status_t mx_config_load(const char *dir, mx_model_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  if (!dir) return mx_error_set(MX_ERR_INVALID_ARG, "mx_config_load: no directory");
  size_t n = strlen(dir);
  const char *sep = (n && dir[n - 1] == '/') ? "" : "/";
  char path[4096], gpath[4096];
  if ((size_t)snprintf(path, sizeof path, "%s%sconfig.json", dir, sep) >= sizeof path ||
      (size_t)snprintf(gpath, sizeof gpath, "%s%sgeneration_config.json", dir, sep) >=
          sizeof gpath) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%.100s...: path too long", dir);
  }
  char *text = NULL, *gtext = NULL;
  size_t len = 0, glen = 0;
  mx_status_t st = mx_read_file_max(path, MX_CONFIG_JSON_MAX_BYTES, &text, &len);
  if (st != MX_OK) return st;
  // Optional: absent is fine, present but unreadable (a symlink loop, no permission) is not.
  if (access(gpath, F_OK) == 0 || errno != ENOENT)
    st = mx_read_file_max(gpath, MX_CONFIG_JSON_MAX_BYTES, &gtext, &glen);
  if (st == MX_OK) st = mx_config_parse(text, len, gtext, glen, path, cfg);
  free(text);
  free(gtext);
  return st;
}

void mx_config_cache_dims(const mx_model_config_t *cfg, int32_t j, int64_t dims[2]) {
  if (cfg->kv_lora_rank > 0) {  // the latent, then the rotated shared key (ADR 0012)
    dims[0] = 1;
    dims[1] = j % 2 == 0 ? cfg->kv_lora_rank : cfg->qk_rope_head_dim;
    return;
  }
  // Gemma 3n's KV-sharing layers attend over an earlier layer's caches: theirs are never read
  // or written, so they take the smallest shape rather than a capacity's worth of rows.
  if (cfg->num_kv_shared_layers > 0 && j / 2 >= cfg->num_layers - cfg->num_kv_shared_layers) {
    dims[0] = 1;
    dims[1] = 1;
    return;
  }
  dims[0] = cfg->num_kv_heads;
  dims[1] = cfg->head_dim;
}
