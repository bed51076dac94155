// Gemma family, model_types "gemma", "gemma2", "gemma3_text" and "gemma3" (the text part of the
// multimodal checkpoint, from its nested text_config).
// Config: defaults of transformers' GemmaConfig, Gemma2Config and Gemma3TextConfig.
// Graph, on the shared core:
//   gemma:   (1 + w) RMSNorm, embeddings x sqrt(hidden) (the scale rounded to the model dtype,
//            as transformers does), gelu_tanh gated MLP, tied head by default.
//   gemma2:  + post_attention_layernorm on the attention output before the residual add and
//            pre_/post_feedforward_layernorm around the MLP; attention and final logit
//            soft-capping, query_pre_attn_scalar and the alternating window (from the config).
//   gemma3_text / gemma3: gemma2's layer + (1 + w) q/k norms; sliding layers rotate with an
//            unscaled table of base rope_local_base_freq, full layers with rope_theta and
//            rope_scaling. gemma3 (the multimodal checkpoint) keeps its text weights under
//            language_model.model. (transformers < 4.52) or model.language_model. (later).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/family.h"

// ---- config.json ----

static mx_status_t activation(const mx_cfg_obj_t *o, const char *def, mx_model_config_t *cfg) {
  const char *key = "hidden_activation";
  if (def == NULL && !mx_cfg_has(o, key)) {
    key = "hidden_act";  // gemma: hidden_activation null -> hidden_act (read by the common part)
  } else {
    MX_TRY(mx_cfg_str(o, key, def, cfg->hidden_act, sizeof cfg->hidden_act));
  }
  return mx_cfg_activation(o, key, cfg);
}

// Gemma2Config's defaults. GemmaConfig has other sizes and no GQA default; Gemma3TextConfig
// another vocabulary, context and RoPE base.
static const mx_cfg_defaults_t kGemma2Defaults = {
    .vocab_size = 256000,
    .hidden_size = 2304,
    .intermediate_size = 9216,
    .num_layers = 26,
    .num_heads = 8,
    .num_kv_heads = 4,
    .head_dim = 256,
    .max_position_embeddings = 8192,
    .rms_norm_eps = 1e-6,
    .rope_theta = 10000.0,
    .tie_word_embeddings = true,
    .hidden_act = "gelu_pytorch_tanh",
    .bos_token_id = 2,
    .eos_token_id = 1,
    .pad_token_id = 0,
};

static mx_status_t parse_config_gemma(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  mx_cfg_defaults_t d = kGemma2Defaults;
  d.hidden_size = 3072;
  d.intermediate_size = 24576;
  d.num_layers = 28;
  d.num_heads = 16;
  d.num_kv_heads = 0;  // num_attention_heads
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  // Early Gemma files say "hidden_act": "gelu" next to "hidden_activation":
  // "gelu_pytorch_tanh", the function the model was trained with: hidden_activation wins.
  return activation(o, NULL, cfg);
}

// The fields Gemma 2 and Gemma 3 share: the common ones, the activation, the attention scale,
// the soft-caps (defaults differ per class) and the sliding window (4096 by default). Gemma 3's
// RoPE: transformers 5 nests rope_parameters per layer type (the sliding layers' base defaults to
// rope_local_base_freq, then 10000); earlier files keep rope_theta, rope_scaling (the full
// layers') and rope_local_base_freq flat.
static mx_status_t parse_gemma23(const mx_cfg_obj_t *o, const mx_cfg_defaults_t *d, bool gemma3,
                                 double attn_softcap, double final_softcap,
                                 mx_model_config_t *cfg) {
  if (gemma3 && mx_cfg_rope_nested(o)) {
    double local = 10000.0;
    MX_TRY(mx_cfg_f64(o, "rope_local_base_freq", local, &local));
    MX_TRY(mx_cfg_positive(o, "rope_local_base_freq", local));
    MX_TRY(mx_cfg_parse_common_nested(o, d, "gemma3", local, cfg));
  } else {
    MX_TRY(mx_cfg_parse_common(o, d, cfg));
    if (gemma3) {
      MX_TRY(mx_cfg_f64(o, "rope_local_base_freq", 10000.0, &cfg->rope_local_base_freq));
      MX_TRY(mx_cfg_positive(o, "rope_local_base_freq", cfg->rope_local_base_freq));
    }
  }
  MX_TRY(activation(o, "gelu_pytorch_tanh", cfg));
  MX_TRY(mx_cfg_f64(o, "query_pre_attn_scalar", 256.0, &cfg->query_pre_attn_scalar));
  MX_TRY(mx_cfg_positive(o, "query_pre_attn_scalar", cfg->query_pre_attn_scalar));
  MX_TRY(mx_cfg_softcap(o, "attn_logit_softcapping", attn_softcap, &cfg->attn_logit_softcapping));
  MX_TRY(
      mx_cfg_softcap(o, "final_logit_softcapping", final_softcap, &cfg->final_logit_softcapping));
  return mx_cfg_window(o, 4096, cfg);
}

static bool even_layer(int32_t layer, int32_t arg) {
  (void)arg;
  return layer % 2 == 0;
}

static mx_status_t parse_config_gemma2(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  MX_TRY(parse_gemma23(o, &kGemma2Defaults, false, 50.0, 30.0, cfg));
  return mx_cfg_layer_types(o, even_layer, 0, cfg);  // layers 0, 2, 4, ... slide
}

static mx_status_t parse_config_gemma3_text(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  mx_cfg_defaults_t d = kGemma2Defaults;
  d.vocab_size = 262208;
  d.max_position_embeddings = 131072;
  d.rope_theta = 1000000.0;
  MX_TRY(parse_gemma23(o, &d, true, 0.0, 0.0, cfg));
  bool bidir = false;
  MX_TRY(mx_cfg_bool(o, "use_bidirectional_attention", false, &bidir));
  if (bidir) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %suse_bidirectional_attention true is not supported (causal "
                        "decoding only)",
                        o->src, o->prefix);
  }
  // transformers 4.50 writes sliding_window_pattern; later ones _sliding_window_pattern and
  // layer_types (which wins when present).
  const char *pkey = mx_cfg_has(o, "sliding_window_pattern") ? "sliding_window_pattern"
                                                             : "_sliding_window_pattern";
  int32_t pattern = 6;
  MX_TRY(mx_cfg_i32(o, pkey, 6, &pattern));
  if (pattern <= 0) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be positive (got %d)", o->src, o->prefix, pkey,
                        pattern);
  }
  return mx_cfg_layer_types(o, mx_cfg_not_every_nth, pattern, cfg);
}

// SiglipVisionConfig's defaults (Gemma3Config's vision_config).
static const mx_vit_defaults_t kSiglipDefaults = {
    .model_type = "siglip_vision_model",
    .hidden_size = 768,
    .intermediate_size = 3072,
    .num_layers = 12,
    .num_heads = 12,
    .image_size = 224,
    .patch_size = 16,
    .layer_norm_eps = 1e-6,
    .hidden_act = "gelu_pytorch_tanh",
    .acts = {"gelu_pytorch_tanh", NULL},
};

// The vision side of Gemma3Config: a SigLIP tower (its last hidden state, after post_layernorm,
// is the features: vision_use_head is not read, as Gemma3Model does not), average-pooled from
// its patch grid to mm_tokens_per_image tokens (a square number whose side divides the grid's).
// Only when config.json has a vision_config: a checkpoint without one is read as text only.
static mx_status_t parse_vision_gemma3(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  mx_vision_config_t *v = &cfg->vision;
  if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o->obj, "vision_config"))) return MX_OK;
  MX_TRY(mx_cfg_vit(o, &kSiglipDefaults, v));
  v->kind = MX_VISION_SIGLIP;
  v->layers_run = v->num_layers;
  MX_TRY(mx_cfg_token_index(o, "image_token_index", "image_token_id", 262144, cfg->vocab_size,
                            &v->image_token_id));
  MX_TRY(mx_cfg_token_index(o, "boi_token_index", "boi_token_id", 255999, cfg->vocab_size,
                            &v->vision_start_token_id));
  MX_TRY(mx_cfg_token_index(o, "eoi_token_index", "eoi_token_id", 256000, cfg->vocab_size,
                            &v->vision_end_token_id));
  int32_t n = 256, grid = v->image_size / v->patch_size;
  MX_TRY(mx_cfg_i32(o, "mm_tokens_per_image", 256, &n));
  int32_t side = 0;
  while ((side + 1) * (side + 1) <= n && side < grid) side++;
  if (n <= 0 || side * side != n || grid % side != 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: mm_tokens_per_image (%d) must be the square of a divisor of the "
                        "patch grid's side (%d)",
                        o->src, n, grid);
  }
  v->tokens_per_image = n;
  v->present = true;
  return MX_OK;
}

static mx_status_t parse_config_gemma3(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  const cJSON *tc = cJSON_GetObjectItemCaseSensitive(o->obj, "text_config");
  cJSON *empty = NULL;
  if (tc == NULL || cJSON_IsNull(tc)) {
    empty = cJSON_CreateObject();  // Gemma3Config: no text_config -> Gemma3TextConfig()
    if (empty == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    tc = empty;
  } else if (!cJSON_IsObject(tc)) {
    return mx_error_set(MX_ERR_PARSE, "%s: text_config must be an object", o->src);
  }
  mx_cfg_obj_t t = {tc, o->src, "text_config."};
  mx_status_t st = parse_config_gemma3_text(&t, cfg);
  cJSON_Delete(empty);
  if (st != MX_OK) return st;
  // The outer config carries the checkpoint dtype and, in released files, the token ids.
  if (mx_cfg_has(o, "torch_dtype") || mx_cfg_has(o, "dtype")) MX_TRY(mx_cfg_dtype(o, cfg));
  MX_TRY(mx_cfg_token(o, "bos_token_id", cfg->bos_token_id, &cfg->bos_token_id));
  MX_TRY(mx_cfg_token(o, "pad_token_id", cfg->pad_token_id, &cfg->pad_token_id));
  MX_TRY(mx_cfg_eos(o, cfg));
  return parse_vision_gemma3(o, cfg);
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  const char *mt = cfg->model_type;
  bool g1 = strcmp(mt, "gemma") == 0;
  bool g3 = strcmp(mt, "gemma3_text") == 0 || strcmp(mt, "gemma3") == 0;
  a->norm_offset = 1.0;
  a->embed_scale = mx_g_round_to(cfg->dtype, sqrt((double)a->hidden));
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  a->sandwich_norm = !g1;
  if (!g3) return MX_OK;
  a->qk_norm = true;
  // Gemma3Model: image tokens attend bidirectionally within their image (token_type_ids).
  a->media_blocks = cfg->vision.present && cfg->vision.kind == MX_VISION_SIGLIP;
  if (strcmp(mt, "gemma3") == 0) {
    a->prefix = "language_model.model.";
    a->prefix_alts[0] = "language_model.model.";
    a->head_alts[0] = "language_model.lm_head.weight";
    a->prefix_alts[1] = "model.language_model.";
    a->head_alts[1] = "lm_head.weight";
    a->prefix_alts[2] = "model.";
    a->head_alts[2] = "lm_head.weight";
    a->head_name = a->head_alts[0];
  }
  double local = cfg->rope_local_base_freq > 0 ? cfg->rope_local_base_freq : 10000.0;
  MX_TRY(mx_rope_inv_freq(local, a->rotary_dim, NULL, &a->inv_freq[1]));
  a->n_rope_tables = 2;
  for (int32_t l = 0; l < a->n_layers; l++) a->layer_rope[l] = cfg->layer_sliding[l] ? 1 : 0;
  return MX_OK;
}

const mx_family_t mx_family_gemma = {"gemma", parse_config_gemma, arch};
const mx_family_t mx_family_gemma2 = {"gemma2", parse_config_gemma2, arch};
const mx_family_t mx_family_gemma3_text = {"gemma3_text", parse_config_gemma3_text, arch};
const mx_family_t mx_family_gemma3 = {"gemma3", parse_config_gemma3, arch};
