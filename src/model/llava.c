// LLaVA family, model_type "llava" (LlavaForConditionalGeneration): a CLIP ViT vision tower and a
// two-layer projector (vision_clip.c) in front of a Llama, Mistral or Qwen2 text model.
// Config: defaults of transformers' LlavaConfig; text_config is parsed by the family of its own
// model_type, vision_config with CLIPVisionConfig's defaults.
// Graph: the text family's description as it is, its tensors under "language_model.model." /
// "language_model.lm_head.weight" (the released llava-hf files, and what transformers 5 writes)
// or "model.language_model." / "lm_head.weight" (transformers 4.52..4.x).
#include <string.h>

#include "model/family.h"

// The text models LLaVA checkpoints are released with (the scope; others are refused).
static const char *const kTextTypes[] = {"llama", "mistral", "qwen2"};

static const mx_family_t *text_family(const char *model_type) {
  for (size_t i = 0; i < sizeof kTextTypes / sizeof kTextTypes[0]; i++)
    if (strcmp(model_type, kTextTypes[i]) == 0) return mx_family_find(model_type);
  return NULL;
}

// ---- config.json ----

static mx_status_t text_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  const cJSON *tc = NULL;
  cJSON *empty;
  MX_TRY(mx_cfg_sub_object(o, "text_config", &empty, &tc));
  mx_cfg_obj_t t = {tc, o->src, "text_config."};
  char type[32];
  mx_status_t st = mx_cfg_str(&t, "model_type", "llama", type, sizeof type);
  const mx_family_t *fam = st == MX_OK ? text_family(type) : NULL;
  if (st == MX_OK && fam == NULL) {
    st = mx_error_set(MX_ERR_UNSUPPORTED,
                      "%s: text_config.model_type '%s' is not supported for model_type 'llava' "
                      "(supported: llama, mistral, qwen2)",
                      o->src, type);
  }
  if (st == MX_OK) st = fam->parse_config(&t, cfg);
  cJSON_Delete(empty);
  if (st == MX_OK)
    snprintf(cfg->vision.text_model_type, sizeof cfg->vision.text_model_type, "%s", type);
  return st;
}

static mx_status_t one_of(const mx_cfg_obj_t *o, const char *key, const char *v, const char *a,
                          const char *b) {
  if (strcmp(v, a) == 0 || strcmp(v, b) == 0) return MX_OK;
  return mx_error_set(MX_ERR_UNSUPPORTED, "%s: %s%s '%s' is not supported (supported: %s, %s)",
                      o->src, o->prefix, key, v, a, b);
}

// vision_config: a CLIP vision tower (CLIPVisionConfig's defaults: CLIP ViT-L/14 at 336 px is
// what LlavaConfig builds when vision_config is absent).
static const mx_vit_defaults_t kClipDefaults = {
    .model_type = "clip_vision_model",
    .hidden_size = 1024,
    .intermediate_size = 4096,
    .num_layers = 24,
    .num_heads = 16,
    .image_size = 336,
    .patch_size = 14,
    .layer_norm_eps = 1e-5,
    .hidden_act = "quick_gelu",
    .acts = {"quick_gelu", "gelu"},
};

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  MX_TRY(text_config(o, cfg));
  mx_vision_config_t *v = &cfg->vision;
  MX_TRY(mx_cfg_vit(o, &kClipDefaults, v));
  // The outer config carries the checkpoint dtype and, in released files, the token ids.
  if (mx_cfg_has(o, "torch_dtype") || mx_cfg_has(o, "dtype")) MX_TRY(mx_cfg_dtype(o, cfg));
  MX_TRY(mx_cfg_token(o, "bos_token_id", cfg->bos_token_id, &cfg->bos_token_id));
  MX_TRY(mx_cfg_token(o, "pad_token_id", cfg->pad_token_id, &cfg->pad_token_id));
  MX_TRY(mx_cfg_eos(o, cfg));
  MX_TRY(mx_cfg_token_index(o, "image_token_index", "image_token_id", 32000, cfg->vocab_size,
                            &v->image_token_id));
  MX_TRY(mx_cfg_str(o, "projector_hidden_act", "gelu", v->projector_act, sizeof v->projector_act));
  MX_TRY(one_of(o, "projector_hidden_act", v->projector_act, "gelu", "quick_gelu"));
  MX_TRY(mx_cfg_bool(o, "multimodal_projector_bias", true, &v->projector_bias));
  if (mx_cfg_has(o, "vision_feature_layer") &&
      !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o->obj, "vision_feature_layer"))) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: vision_feature_layer as a list of layers is not supported (one "
                        "layer index)",
                        o->src);
  }
  int32_t layer = -2;
  MX_TRY(mx_cfg_i32(o, "vision_feature_layer", -2, &layer));
  // hidden_states[0] is the embeddings, [l] the output of encoder layer l - 1.
  int32_t n_states = v->num_layers + 1, idx = layer < 0 ? n_states + layer : layer;
  if (idx < 0 || idx >= n_states) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: vision_feature_layer (%d) is outside the tower's %d hidden states",
                        o->src, layer, n_states);
  }
  v->layers_run = idx;
  char strategy[16];
  MX_TRY(mx_cfg_str(o, "vision_feature_select_strategy", "default", strategy, sizeof strategy));
  MX_TRY(one_of(o, "vision_feature_select_strategy", strategy, "default", "full"));
  v->drop_cls = strcmp(strategy, "default") == 0;
  int32_t g = v->image_size / v->patch_size;
  v->tokens_per_image = g * g + (v->drop_cls ? 0 : 1);
  v->present = true;
  return MX_OK;
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  const mx_family_t *fam = text_family(cfg->vision.text_model_type);
  if (fam == NULL) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "llava: text model type '%s' is not supported",
                        cfg->vision.text_model_type);
  }
  // The text family sees its own model_type (some families branch on it).
  mx_model_config_t text = *cfg;
  snprintf(text.model_type, sizeof text.model_type, "%s", cfg->vision.text_model_type);
  MX_TRY(fam->arch(&text, a));
  a->cfg = cfg;
  a->prefix = "language_model.model.";
  a->head_name = "language_model.lm_head.weight";
  a->prefix_alts[0] = "language_model.model.";
  a->head_alts[0] = "language_model.lm_head.weight";
  a->prefix_alts[1] = "model.language_model.";
  a->head_alts[1] = "lm_head.weight";
  a->prefix_alts[2] = NULL;
  a->head_alts[2] = NULL;
  return MX_OK;
}

const mx_family_t mx_family_llava = {"llava", parse_config, arch};
