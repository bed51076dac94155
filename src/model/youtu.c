// Youtu-LLM, model_type "youtu" (YoutuForCausalLM): Llama's pre-norm layer with DeepSeek-V3's
// multi-latent attention (family_mla.h, ADR 0012: the low-rank query, the normalized latent and
// the rotated shared key in the caches, rope_interleave) and a SwiGLU MLP without biases on
// every layer: transformers' YoutuConfig drops DeepSeek's expert fields and YoutuModel builds
// no mixture of experts, so such keys in a config.json change nothing here either.
// Config: defaults of YoutuConfig (Youtu-LLM-2B's shape, a tied head).
// Youtu-VL, model_type "youtu_vl" (YoutuVLForConditionalGeneration), is that text model under a
// SigLIP-2 tower run as Qwen2.5-VL's windowed ViT (vision_qwen.c, ADR 0027); its layout and
// arithmetic are llama.cpp's (the authors' modeling code is remote code, and transformers has
// none), and its text positions are the plain 1-D ones.
#include <stdio.h>

#include "model/config_internal.h"
#include "model/family.h"
#include "model/family_mla.h"

static mx_status_t parse(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 128256,
      .hidden_size = 2048,
      .intermediate_size = 6144,
      .num_layers = 32,
      .num_heads = 16,
      .num_kv_heads = 16,
      .max_position_embeddings = 131072,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = true,
      .hidden_act = "silu",
      .bos_token_id = 128000,
      .eos_token_id = 128001,
      .pad_token_id = -1,
  };
  return mx_cfg_mla(o, d, true, cfg);
}

const mx_family_t mx_family_youtu = {"youtu", parse, mx_arch_mla};

// ---- Youtu-VL ----

// vision_config: SigLIP-2's ViT fields (mx_cfg_vit; defaults of the so400m patch-16 tower in
// Youtu-VL-4B, image_size 560 as llama.cpp's converter assumes when absent) and Qwen2.5-VL's
// window fields, which llama.cpp requires (window_size, fullatt_block_indexes).
static mx_status_t youtu_vision(const mx_cfg_obj_t *o, mx_vision_config_t *v) {
  static const mx_vit_defaults_t d = {
      .model_type = "siglip2_vision_model",
      .hidden_size = 1152,
      .intermediate_size = 4304,
      .num_layers = 27,
      .num_heads = 16,
      .image_size = 560,
      .patch_size = 16,
      .layer_norm_eps = 1e-6,
      .hidden_act = "gelu_pytorch_tanh",
      .acts = {"gelu_pytorch_tanh", NULL},
  };
  MX_TRY(mx_cfg_vit(o, &d, v));
  if (v->num_layers > MX_VISION_MAX_LAYERS)
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: vision_config.num_hidden_layers (%d) is above %d",
                        o->src, v->num_layers, MX_VISION_MAX_LAYERS);
  const cJSON *vc = NULL;
  cJSON *empty;
  MX_TRY(mx_cfg_sub_object(o, "vision_config", &empty, &vc));
  mx_cfg_obj_t t = {vc, o->src, "vision_config."};
  mx_status_t st = mx_cfg_i32(&t, "spatial_merge_size", 2, &v->spatial_merge_size);
  if (st == MX_OK && !mx_cfg_has(&t, "window_size"))
    st = mx_error_set(MX_ERR_PARSE, "%s: vision_config.window_size is required", o->src);
  if (st == MX_OK) st = mx_cfg_i32(&t, "window_size", 0, &v->window_size);
  if (st == MX_OK) st = mx_cfg_full_blocks(&t, NULL, 0, v);
  cJSON_Delete(empty);
  MX_TRY(st);
  int32_t unit = v->patch_size * v->spatial_merge_size, dh = v->hidden_size / v->num_heads;
  if (v->spatial_merge_size != 2)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: vision_config.spatial_merge_size %d is not supported (2: the merger "
                        "of 2 x 2 patches)",
                        o->src, v->spatial_merge_size);
  if (v->window_size <= 0 || v->window_size % unit != 0)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: vision_config.window_size (%d) must be a positive multiple of "
                        "patch_size x spatial_merge_size (%d)",
                        o->src, v->window_size, unit);
  if (dh % 4 != 0)
    return mx_error_set(MX_ERR_PARSE,
                        "%s: the vision head size (%d) must be a multiple of 4 (2-D RoPE)", o->src,
                        dh);
  v->kind = MX_VISION_YOUTU_VL;
  v->image_size = 0;  // images of any size, in patch grids of multiples of the merge size
  v->temporal_patch_size = 1;
  v->rope_theta = 10000.0;
  v->layers_run = v->num_layers;
  snprintf(v->projector_act, sizeof v->projector_act, "gelu_tanh");
  return MX_OK;
}

// Youtu-VL (YoutuVLForConditionalGeneration, model_type "youtu_vl"): Youtu-LLM's fields at the
// top level (or in text_config), the SigLIP-2 tower in vision_config, and the image tokens
// <|image_pad|>, <|vision_start|>, <|vision_end|> (Youtu-VL-4B's ids by default).
static mx_status_t parse_vl(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  const cJSON *tc = cJSON_GetObjectItemCaseSensitive(o->obj, "text_config");
  if (tc != NULL && !cJSON_IsNull(tc) && !cJSON_IsObject(tc))
    return mx_error_set(MX_ERR_PARSE, "%s: text_config must be an object", o->src);
  bool nested = cJSON_IsObject(tc);
  mx_cfg_obj_t t = {nested ? tc : o->obj, o->src, nested ? "text_config." : ""};
  MX_TRY(parse(&t, cfg));
  if (nested && (mx_cfg_has(o, "torch_dtype") || mx_cfg_has(o, "dtype")))
    MX_TRY(mx_cfg_dtype(o, cfg));
  mx_vision_config_t *v = &cfg->vision;
  MX_TRY(youtu_vision(o, v));
  snprintf(v->text_model_type, sizeof v->text_model_type, "youtu");
  // Youtu-VL-4B's ids by default; each must lie in the vocabulary.
  MX_TRY(mx_cfg_token_index(o, "image_token_id", "image_token_id", 128264, cfg->vocab_size,
                            &v->image_token_id));
  MX_TRY(mx_cfg_token_index(o, "vision_start_token_id", "vision_start_token_id", 128262,
                            cfg->vocab_size, &v->vision_start_token_id));
  MX_TRY(mx_cfg_token_index(o, "vision_end_token_id", "vision_end_token_id", 128263,
                            cfg->vocab_size, &v->vision_end_token_id));
  v->tokens_per_image = 0;
  v->present = true;
  return MX_OK;
}

const mx_family_t mx_family_youtu_vl = {"youtu_vl", parse_vl, mx_arch_mla};
