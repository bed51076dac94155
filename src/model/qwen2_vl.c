// Qwen2-VL, Qwen2.5-VL and Qwen3-VL, model_types "qwen2_vl", "qwen2_5_vl" and "qwen3_vl"
// (Qwen2VLForConditionalGeneration, Qwen2_5_VLForConditionalGeneration,
// Qwen3VLForConditionalGeneration): a ViT with 2-D RoPE and a patch merger (vision_qwen.c) in
// front of a Qwen2 (Qwen3 for Qwen3-VL) text model whose RoPE is M-RoPE.
// Config: transformers 5 nests the text model in text_config; the released Qwen2-VL checkpoints
// (and transformers 4.x) keep its fields at the top level, which Qwen2VLConfig reads the same
// way. Defaults are Qwen2VLTextConfig's / Qwen2_5_VLTextConfig's (the same values) or
// Qwen3VLTextConfig's, and the vision configs'. rope_scaling / rope_parameters carry
// mrope_section ([16, 24, 24] when absent; Qwen3-VL [24, 20, 20]) and the type "mrope", which
// transformers reads as "default". Qwen3-VL's M-RoPE is interleaved (transformers 5.25 always
// interleaves it and reads no mrope_interleaved key, so neither do we), its sections need not
// sum to head_dim / 2 (the temporal rows take every frequency the others do not), and its
// tower adds learned position embeddings and DeepStack mergers (ADR 0021).
// Graph: the Qwen2 text model (q/k/v biases) or the Qwen3 one (q/k norms, no biases) under
// "model." (released Qwen2-VL files, transformers 5 Qwen2-VL) or "model.language_model."
// (Qwen3-VL; Qwen2-VL under transformers 4.52..4.x). A prompt without images has equal
// temporal / height / width positions, for which M-RoPE is the plain RoPE of the text entries;
// the media entries take the three position rows (ADR 0013).
#include <string.h>

#include "model/family.h"

// ---- config.json ----

static mx_status_t positive(const mx_cfg_obj_t *o, const char *key, int64_t v) {
  if (v > 0) return MX_OK;
  return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be positive (got %lld)", o->src, o->prefix, key,
                      (long long)v);
}

// The rope dict of the text object (rope_scaling first, as mx_cfg_rope_scaling reads it).
static cJSON *rope_dict(cJSON *text) {
  cJSON *r = cJSON_GetObjectItemCaseSensitive(text, "rope_scaling");
  if (!cJSON_IsObject(r)) r = cJSON_GetObjectItemCaseSensitive(text, "rope_parameters");
  return cJSON_IsObject(r) ? r : NULL;
}

// mrope_section from the rope dict; "mrope" renamed to "default" in the copy the shared parser
// reads (Qwen2VLTextConfig.convert_rope_params_to_dict does the same).
static mx_status_t mrope(const mx_cfg_obj_t *t, cJSON *copy, bool v3, mx_model_config_t *cfg) {
  static const int32_t kDefault[3] = {16, 24, 24}, kDefault3[3] = {24, 20, 20};
  memcpy(cfg->mrope_section, v3 ? kDefault3 : kDefault, sizeof kDefault);
  cJSON *r = rope_dict(copy);
  if (r == NULL) return MX_OK;
  const char *type_key = cJSON_GetObjectItemCaseSensitive(r, "rope_type") ? "rope_type" : "type";
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(r, type_key);
  if (cJSON_IsString(type) && strcmp(type->valuestring, "mrope") == 0 &&
      !cJSON_ReplaceItemInObjectCaseSensitive(r, type_key, cJSON_CreateString("default")))
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  const cJSON *sec = cJSON_GetObjectItemCaseSensitive(r, "mrope_section");
  if (sec == NULL || cJSON_IsNull(sec)) return MX_OK;
  if (!cJSON_IsArray(sec) || cJSON_GetArraySize(sec) != 3) {
    return mx_error_set(MX_ERR_PARSE, "%s: %smrope_section must be a list of 3 integers", t->src,
                        t->prefix);
  }
  for (int32_t i = 0; i < 3; i++) {
    const cJSON *v = cJSON_GetArrayItem(sec, i);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 4096 ||
        v->valuedouble != (double)(int32_t)v->valuedouble)
      return mx_error_set(MX_ERR_PARSE, "%s: %smrope_section[%d] must be an integer in 0..4096",
                          t->src, t->prefix, i);
    cfg->mrope_section[i] = (int32_t)v->valuedouble;
  }
  return MX_OK;
}

static mx_status_t text_config(const mx_cfg_obj_t *o, bool v3, mx_model_config_t *cfg) {
  const cJSON *tc = cJSON_GetObjectItemCaseSensitive(o->obj, "text_config");
  if (tc != NULL && !cJSON_IsNull(tc) && !cJSON_IsObject(tc))
    return mx_error_set(MX_ERR_PARSE, "%s: text_config must be an object", o->src);
  bool nested = cJSON_IsObject(tc);
  cJSON *copy = cJSON_Duplicate(nested ? tc : o->obj, true);
  if (copy == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_cfg_obj_t t = {copy, o->src, nested ? "text_config." : ""};
  const mx_cfg_defaults_t d2 = {
      .vocab_size = 152064,
      .hidden_size = 8192,
      .intermediate_size = 29568,
      .num_layers = 80,
      .num_heads = 64,
      .num_kv_heads = 8,
      .max_position_embeddings = 32768,
      .rms_norm_eps = 1e-5,
      .rope_theta = 1000000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 151643,
      .eos_token_id = 151645,
      .pad_token_id = -1,
  };
  const mx_cfg_defaults_t d3 = {
      .vocab_size = 151936,
      .hidden_size = 4096,
      .intermediate_size = 22016,
      .num_layers = 32,
      .num_heads = 32,
      .head_dim = 128,
      .max_position_embeddings = 128000,
      .rms_norm_eps = 1e-6,
      .rope_theta = 500000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = -1,
      .eos_token_id = -1,
      .pad_token_id = -1,
  };
  bool sliding = false;
  mx_status_t st = mrope(&t, copy, v3, cfg);
  if (st == MX_OK) st = mx_cfg_parse_common(&t, v3 ? &d3 : &d2, cfg);
  if (st == MX_OK) st = mx_cfg_activation(&t, "hidden_act", cfg);
  if (st == MX_OK) st = mx_cfg_bool(&t, "use_sliding_window", false, &sliding);
  cJSON_Delete(copy);
  if (st != MX_OK) return st;
  if (sliding) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: %suse_sliding_window true is not supported",
                        o->src, t.prefix);
  }
  cfg->sliding_window = 0;
  int32_t half = cfg->head_dim / 2, sum = 0;
  for (int32_t i = 0; i < 3; i++) sum += cfg->mrope_section[i];
  cfg->mrope_interleaved = v3;
  if (v3) {
    snprintf(cfg->vision.text_model_type, sizeof cfg->vision.text_model_type, "qwen3");
    return MX_OK;
  }
  if (sum != half) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: mrope_section [%d, %d, %d] must sum to head_dim / 2 (%d)", o->src,
                        cfg->mrope_section[0], cfg->mrope_section[1], cfg->mrope_section[2], half);
  }
  snprintf(cfg->vision.text_model_type, sizeof cfg->vision.text_model_type, "qwen2");
  return MX_OK;
}

mx_status_t mx_cfg_full_blocks(const mx_cfg_obj_t *t, const int32_t *def, int32_t n_def,
                               mx_vision_config_t *v) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(t->obj, "fullatt_block_indexes");
  if ((a == NULL || cJSON_IsNull(a)) && def == NULL)
    return mx_error_set(MX_ERR_PARSE, "%s: %sfullatt_block_indexes is required", t->src, t->prefix);
  if (a == NULL || cJSON_IsNull(a)) {
    for (int32_t i = 0; i < n_def; i++)
      if (def[i] < v->num_layers) v->layer_full[def[i]] = 1;
    return MX_OK;
  }
  if (!cJSON_IsArray(a))
    return mx_error_set(MX_ERR_PARSE, "%s: %sfullatt_block_indexes must be a list", t->src,
                        t->prefix);
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= v->num_layers ||
        e->valuedouble != (double)(int32_t)e->valuedouble)
      return mx_error_set(MX_ERR_PARSE, "%s: %sfullatt_block_indexes holds %g, not a block index",
                          t->src, t->prefix, cJSON_IsNumber(e) ? e->valuedouble : -1.0);
    v->layer_full[(int32_t)e->valuedouble] = 1;
  }
  return MX_OK;
}

// deepstack_visual_indexes: the blocks after which a DeepStack merger takes the hidden states
// (increasing, as transformers pairs the i-th index with the i-th merger and text layer).
static mx_status_t deepstack(const mx_cfg_obj_t *t, mx_vision_config_t *v) {
  static const int32_t kDefault[3] = {8, 16, 24};
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(t->obj, "deepstack_visual_indexes");
  v->n_deepstack = 0;
  if (a == NULL || cJSON_IsNull(a)) {
    for (int32_t i = 0; i < 3; i++) v->deepstack_layers[v->n_deepstack++] = kDefault[i];
  } else if (!cJSON_IsArray(a)) {
    return mx_error_set(MX_ERR_PARSE, "%s: %sdeepstack_visual_indexes must be a list", t->src,
                        t->prefix);
  } else {
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
      if (!cJSON_IsNumber(e) || e->valuedouble != (double)(int32_t)e->valuedouble ||
          v->n_deepstack >= MX_VISION_MAX_LAYERS)
        return mx_error_set(MX_ERR_PARSE, "%s: %sdeepstack_visual_indexes must hold integers",
                            t->src, t->prefix);
      v->deepstack_layers[v->n_deepstack++] = (int32_t)e->valuedouble;
    }
  }
  for (int32_t i = 0; i < v->n_deepstack; i++) {
    int32_t l = v->deepstack_layers[i];
    if (l < 0 || l >= v->num_layers || (i > 0 && l <= v->deepstack_layers[i - 1]))
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "%s: %sdeepstack_visual_indexes holds %d: increasing block indexes "
                          "below depth (%d) are supported",
                          t->src, t->prefix, l, v->num_layers);
  }
  return MX_OK;
}

// Qwen2VLVisionConfig, Qwen2_5_VLVisionConfig or Qwen3VLVisionConfig (Qwen2.5-VL's field names,
// LayerNorm blocks with a fc1 / fc2 MLP, learned position embeddings and DeepStack mergers).
static mx_status_t vision_config(const mx_cfg_obj_t *o, mx_vision_kind_t kind, int32_t text_hidden,
                                 mx_vision_config_t *v) {
  bool v25 = kind == MX_VISION_QWEN2_5_VL, v3 = kind == MX_VISION_QWEN3_VL, named = v25 || v3;
  const cJSON *vc = cJSON_GetObjectItemCaseSensitive(o->obj, "vision_config");
  if (vc != NULL && !cJSON_IsNull(vc) && !cJSON_IsObject(vc))
    return mx_error_set(MX_ERR_PARSE, "%s: vision_config must be an object", o->src);
  cJSON *empty = cJSON_IsObject(vc) ? NULL : cJSON_CreateObject();
  if (!cJSON_IsObject(vc) && empty == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_cfg_obj_t t = {cJSON_IsObject(vc) ? vc : empty, o->src, "vision_config."};
  v->kind = kind;
  int32_t out_hidden = 0, mlp_ratio = 4;
  const char *acts = v3 ? "gelu_pytorch_tanh" : v25 ? "silu" : "quick_gelu";
  mx_status_t st = mx_cfg_i32(&t, "depth", v3 ? 27 : 32, &v->num_layers);
  if (st == MX_OK && named) st = mx_cfg_i32(&t, "hidden_size", v3 ? 1152 : 3584, &v->hidden_size);
  if (st == MX_OK && named)
    st = mx_cfg_i32(&t, "intermediate_size", v3 ? 4304 : 3420, &v->intermediate_size);
  if (st == MX_OK && named) st = mx_cfg_i32(&t, "out_hidden_size", 3584, &out_hidden);
  if (st == MX_OK && !named) st = mx_cfg_i32(&t, "embed_dim", 1280, &v->hidden_size);
  if (st == MX_OK && !named) st = mx_cfg_i32(&t, "hidden_size", 3584, &out_hidden);
  if (st == MX_OK && !named) st = mx_cfg_i32(&t, "mlp_ratio", 4, &mlp_ratio);
  if (st == MX_OK) st = mx_cfg_i32(&t, "num_heads", 16, &v->num_heads);
  if (st == MX_OK) st = mx_cfg_i32(&t, "in_channels", 3, &v->num_channels);
  if (st == MX_OK) st = mx_cfg_i32(&t, "patch_size", v3 ? 16 : 14, &v->patch_size);
  if (st == MX_OK) st = mx_cfg_i32(&t, "spatial_merge_size", 2, &v->spatial_merge_size);
  if (st == MX_OK) st = mx_cfg_i32(&t, "temporal_patch_size", 2, &v->temporal_patch_size);
  if (st == MX_OK && v25) st = mx_cfg_i32(&t, "window_size", 112, &v->window_size);
  if (st == MX_OK && v3)
    st = mx_cfg_i32(&t, "num_position_embeddings", 2304, &v->num_position_embeddings);
  if (st == MX_OK) st = mx_cfg_str(&t, "hidden_act", acts, v->hidden_act, sizeof v->hidden_act);
  v->rope_theta = 10000.0;
  const cJSON *rp = cJSON_GetObjectItemCaseSensitive(t.obj, "rope_parameters");
  if (st == MX_OK && cJSON_IsObject(rp)) {
    mx_cfg_obj_t r = {rp, o->src, "vision_config.rope_parameters."};
    st = mx_cfg_f64(&r, "rope_theta", 10000.0, &v->rope_theta);
  }
  if (st == MX_OK) st = positive(&t, "depth", v->num_layers);
  if (st == MX_OK && v->num_layers > MX_VISION_MAX_LAYERS)
    st = mx_error_set(MX_ERR_UNSUPPORTED, "%s: vision_config.depth (%d) is above %d", o->src,
                      v->num_layers, MX_VISION_MAX_LAYERS);
  static const int32_t kFull[4] = {7, 15, 23, 31};
  if (st == MX_OK && v25) st = mx_cfg_full_blocks(&t, kFull, 4, v);
  if (st == MX_OK && v3) st = deepstack(&t, v);
  cJSON_Delete(empty);
  if (st != MX_OK) return st;
  if (!named) v->intermediate_size = v->hidden_size * mlp_ratio;
  if (strcmp(v->hidden_act, acts) != 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: vision_config.hidden_act '%s' is not supported (supported: %s)",
                        o->src, v->hidden_act, acts);
  }
  MX_TRY(positive(&t, named ? "hidden_size" : "embed_dim", v->hidden_size));
  MX_TRY(positive(&t, "intermediate_size", v->intermediate_size));
  MX_TRY(positive(&t, "num_heads", v->num_heads));
  MX_TRY(positive(&t, "in_channels", v->num_channels));
  MX_TRY(positive(&t, "patch_size", v->patch_size));
  MX_TRY(positive(&t, "spatial_merge_size", v->spatial_merge_size));
  MX_TRY(positive(&t, "temporal_patch_size", v->temporal_patch_size));
  if (v25) MX_TRY(positive(&t, "window_size", v->window_size));
  if (v3) MX_TRY(positive(&t, "num_position_embeddings", v->num_position_embeddings));
  if (v->hidden_size % v->num_heads != 0 || (v->hidden_size / v->num_heads) % 4 != 0) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: the vision head size (%d / %d) must be a multiple of 4 (2-D RoPE)",
                        o->src, v->hidden_size, v->num_heads);
  }
  if (v25 && v->window_size % (v->patch_size * v->spatial_merge_size) != 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: vision_config.window_size (%d) must be a multiple of patch_size x "
                        "spatial_merge_size (%d)",
                        o->src, v->window_size, v->patch_size * v->spatial_merge_size);
  }
  if (out_hidden != text_hidden) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: vision_config.%s (%d) must equal the text model's hidden_size (%d)",
                        o->src, named ? "out_hidden_size" : "hidden_size", out_hidden, text_hidden);
  }
  snprintf(v->projector_act, sizeof v->projector_act, "gelu");
  v->layer_norm_eps = 1e-6;  // the blocks' and the mergers' norms (fixed in the modeling code)
  v->layers_run = v->num_layers;
  return MX_OK;
}

static mx_status_t token(const mx_cfg_obj_t *o, const char *key, int32_t def, int32_t vocab,
                         int32_t *out) {
  MX_TRY(mx_cfg_i32(o, key, def, out));
  if (*out >= 0 && *out < vocab) return MX_OK;
  return mx_error_set(MX_ERR_PARSE, "%s: %s (%d) is outside the text vocabulary (%d)", o->src, key,
                      *out, vocab);
}

static mx_status_t parse(const mx_cfg_obj_t *o, mx_vision_kind_t kind, mx_model_config_t *cfg) {
  bool v3 = kind == MX_VISION_QWEN3_VL;
  MX_TRY(text_config(o, v3, cfg));
  mx_vision_config_t *v = &cfg->vision;
  MX_TRY(vision_config(o, kind, cfg->hidden_size, v));
  // The outer config carries the checkpoint dtype, tying and, in released files, the token ids.
  if (mx_cfg_has(o, "torch_dtype") || mx_cfg_has(o, "dtype")) MX_TRY(mx_cfg_dtype(o, cfg));
  if (mx_cfg_has(o, "text_config")) {  // pre-5 files kept a true value in text_config only
    bool tie = false;
    MX_TRY(mx_cfg_bool(o, "tie_word_embeddings", false, &tie));
    cfg->tie_word_embeddings = cfg->tie_word_embeddings || tie;
  }
  MX_TRY(token(o, "image_token_id", 151655, cfg->vocab_size, &v->image_token_id));
  MX_TRY(token(o, "vision_start_token_id", 151652, cfg->vocab_size, &v->vision_start_token_id));
  MX_TRY(token(o, "vision_end_token_id", 151653, cfg->vocab_size, &v->vision_end_token_id));
  v->tokens_per_image = 0;
  v->present = true;
  return MX_OK;
}

static mx_status_t parse_qwen2_vl(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  return parse(o, MX_VISION_QWEN2_VL, cfg);
}

static mx_status_t parse_qwen2_5_vl(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  return parse(o, MX_VISION_QWEN2_5_VL, cfg);
}

static mx_status_t parse_qwen3_vl(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  return parse(o, MX_VISION_QWEN3_VL, cfg);
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qkv_bias = true;
  a->prefix = "model.";
  a->head_name = "lm_head.weight";
  a->prefix_alts[0] = "model.";
  a->head_alts[0] = "lm_head.weight";
  a->prefix_alts[1] = "model.language_model.";
  a->head_alts[1] = "lm_head.weight";
  a->prefix_alts[2] = NULL;
  a->head_alts[2] = NULL;
  return MX_OK;
}

// Qwen3-VL: the Qwen3 layer (q / k norms over head_dim, biases only with attention_bias).
static mx_status_t arch3(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(arch(cfg, a));
  a->qk_norm = true;
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  a->prefix = "model.language_model.";
  a->prefix_alts[0] = "model.language_model.";
  a->prefix_alts[1] = "model.";
  return MX_OK;
}

const mx_family_t mx_family_qwen2_vl = {"qwen2_vl", parse_qwen2_vl, arch};
const mx_family_t mx_family_qwen2_5_vl = {"qwen2_5_vl", parse_qwen2_5_vl, arch};
const mx_family_t mx_family_qwen3_vl = {"qwen3_vl", parse_qwen3_vl, arch3};
