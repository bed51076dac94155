// Molmo2, model_type "molmo2" (Molmo2ForConditionalGeneration; transformers 5.25): a ViT over
// overlapping crops, an attention-pooling adapter and a Qwen3- or OLMo-style text model.
// Config: text_config with Molmo2TextConfig's defaults and aliases (qkv_bias for
// attention_bias, layer_norm_eps for rms_norm_eps), its additional_vocab_size (embedding rows
// past the head's vocabulary, where the image tokens live), qk_norm_type ("qwen3": q/k RMSNorm
// per head; "olmo": over the whole projections), norm_after (each block's output normalized
// instead of its input) and rope_scaling_layers (a scaled RoPE on some layers only is refused);
// vision_config and adapter_config with Molmo2VisionConfig's / Molmo2AdapterConfig's defaults.
// Graph: the checkpoints keep the original Molmo layout, which transformers converts on load and
// writes back on save: model.transformer.wte.embedding [vocab, H] and wte.new_embedding
// [additional, H] (concatenated into one embedding), blocks.<l>.self_attn.att_proj (q, k, v rows),
// attn_out, q_norm / k_norm, mlp.ff_proj (the up rows, then the gate rows), ff_out, attn_norm /
// ff_norm (input / post-attention norms, or with norm_after the attention / MLP output norms),
// transformer.ln_f and lm_head [vocab, H].
#include <string.h>

#include "model/family.h"

// ---- config.json ----

static const mx_cfg_defaults_t kTextDefaults = {
    .vocab_size = 151936,
    .hidden_size = 4096,
    .intermediate_size = 12288,
    .num_layers = 36,
    .num_heads = 32,
    .num_kv_heads = 8,
    .head_dim = 128,
    .max_position_embeddings = 36864,
    .rms_norm_eps = 1e-6,
    .rope_theta = 10000.0,
    .tie_word_embeddings = false,
    .hidden_act = "silu",
    .bos_token_id = -1,
    .eos_token_id = -1,
    .pad_token_id = -1,
};

// rope_scaling_layers: the layers that rotate with the scaled table (all when absent; the others
// with the same theta unscaled). Without scaling both tables are the same and any list is
// accepted.
static mx_status_t rope_layers(const mx_cfg_obj_t *t, const mx_model_config_t *cfg) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->obj, "rope_scaling_layers");
  if (v == NULL || cJSON_IsNull(v)) return MX_OK;
  if (!cJSON_IsArray(v))
    return mx_error_set(MX_ERR_PARSE, "%s: %srope_scaling_layers must be a list of layers", t->src,
                        t->prefix);
  bool all = cJSON_GetArraySize(v) == cfg->num_layers;
  for (int32_t l = 0; all && l < cfg->num_layers; l++) {
    const cJSON *e = cJSON_GetArrayItem(v, l);
    all = cJSON_IsNumber(e) && e->valuedouble == l;
  }
  mx_rope_scaling_kind_t k = cfg->rope_scaling.kind;  // dynamic NTK: the plain table here
  if (all || k == MX_ROPE_SCALING_NONE || k == MX_ROPE_SCALING_DYNAMIC) return MX_OK;
  return mx_error_set(MX_ERR_UNSUPPORTED,
                      "%s: %srope_scaling_layers naming only some layers of a scaled RoPE is not "
                      "supported",
                      t->src, t->prefix);
}

static mx_status_t text_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  const cJSON *tc = NULL;
  cJSON *empty = NULL;
  MX_TRY(mx_cfg_sub_object(o, "text_config", &empty, &tc));
  mx_cfg_obj_t t = {tc, o->src, "text_config."};
  char qk[16];
  int32_t extra = 128;
  bool qkv_bias = false;
  mx_status_t st = mx_cfg_parse_common(&t, &kTextDefaults, cfg);
  if (st == MX_OK) st = mx_cfg_activation(&t, "hidden_act", cfg);
  if (st == MX_OK && mx_cfg_has(&t, "qkv_bias") && !mx_cfg_has(&t, "attention_bias")) {
    st = mx_cfg_bool(&t, "qkv_bias", false, &qkv_bias);
    cfg->attention_bias = qkv_bias;
  }
  if (st == MX_OK && mx_cfg_has(&t, "layer_norm_eps") && !mx_cfg_has(&t, "rms_norm_eps"))
    st = mx_cfg_f64_positive(&t, "layer_norm_eps", cfg->rms_norm_eps, &cfg->rms_norm_eps);
  if (st == MX_OK) st = mx_cfg_i32(&t, "additional_vocab_size", 128, &extra);
  if (st == MX_OK) st = mx_cfg_str(&t, "qk_norm_type", "qwen3", qk, sizeof qk);
  if (st == MX_OK) st = mx_cfg_bool(&t, "norm_after", false, &cfg->norm_after);
  if (st == MX_OK) st = rope_layers(&t, cfg);
  cJSON_Delete(empty);
  if (st != MX_OK) return st;
  if (extra < 0 || extra > (1 << 20))
    return mx_error_set(MX_ERR_PARSE, "%s: text_config.additional_vocab_size %d is out of range",
                        o->src, extra);
  if (strcmp(qk, "qwen3") != 0 && strcmp(qk, "olmo") != 0)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: text_config.qk_norm_type '%s' is not supported (qwen3, olmo)", o->src,
                        qk);
  if (cfg->attention_bias)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: text_config.attention_bias (qkv_bias) true is not supported", o->src);
  cfg->extra_vocab_size = extra;
  cfg->qk_norm_flat = strcmp(qk, "olmo") == 0;
  return MX_OK;
}

// An integer list at key (of at most cap entries; one integer counts as a list of one):
// *n entries into out; absent or null leaves both as they are.
static mx_status_t int_list(const mx_cfg_obj_t *t, const char *key, int32_t cap, int32_t *out,
                            int32_t *n) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->obj, key);
  if (v == NULL || cJSON_IsNull(v)) return MX_OK;
  int32_t m = cJSON_IsNumber(v) ? 1 : cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
  if (m < 1 || m > cap)
    return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be a list of 1 to %d integers", t->src,
                        t->prefix, key, cap);
  for (int32_t i = 0; i < m; i++) {
    const cJSON *e = cJSON_IsNumber(v) ? v : cJSON_GetArrayItem(v, i);
    if (!cJSON_IsNumber(e) || e->valuedouble != (double)(int32_t)e->valuedouble)
      return mx_error_set(MX_ERR_PARSE, "%s: %s%s holds a value that is not an integer", t->src,
                          t->prefix, key);
    out[i] = (int32_t)e->valuedouble;
  }
  *n = m;
  return MX_OK;
}

// The first of key / alias that o holds (key when neither: its default applies).
static const char *key_or(const mx_cfg_obj_t *o, const char *key, const char *alias) {
  return mx_cfg_has(o, key) || !mx_cfg_has(o, alias) ? key : alias;
}

// vision_config: Molmo2VisionConfig's defaults; the released config.json's
// image_default_input_size, image_patch_size and image_num_pos are its aliases of image_size,
// patch_size and num_position_embeddings.
static mx_status_t vision_tower(const mx_cfg_obj_t *o, mx_vision_config_t *v) {
  const cJSON *vc = NULL;
  cJSON *empty = NULL;
  MX_TRY(mx_cfg_sub_object(o, "vision_config", &empty, &vc));
  mx_cfg_obj_t t = {vc, o->src, "vision_config."};
  int32_t kv = 0, side[2] = {378, 378}, n_side = 2;
  mx_status_t st = mx_cfg_i32(&t, "hidden_size", 1152, &v->hidden_size);
  if (st == MX_OK) st = mx_cfg_i32(&t, "intermediate_size", 4304, &v->intermediate_size);
  if (st == MX_OK) st = mx_cfg_i32(&t, "num_hidden_layers", 25, &v->num_layers);
  if (st == MX_OK) st = mx_cfg_i32(&t, "num_attention_heads", 16, &v->num_heads);
  if (st == MX_OK) st = mx_cfg_i32(&t, "num_key_value_heads", v->num_heads, &kv);
  if (st == MX_OK) st = mx_cfg_i32(&t, "head_dim", 72, &v->head_dim);
  if (st == MX_OK)
    st = mx_cfg_str(&t, "hidden_act", "gelu_pytorch_tanh", v->hidden_act, sizeof v->hidden_act);
  if (st == MX_OK) st = mx_cfg_f64_positive(&t, "layer_norm_eps", 1e-6, &v->layer_norm_eps);
  if (st == MX_OK)
    st = int_list(&t, key_or(&t, "image_size", "image_default_input_size"), 2, side, &n_side);
  if (st == MX_OK)
    st = mx_cfg_i32(&t, key_or(&t, "patch_size", "image_patch_size"), 14, &v->patch_size);
  if (st == MX_OK) st = mx_cfg_i32(&t, "num_channels", 3, &v->num_channels);
  if (st == MX_OK) st = mx_cfg_bool(&t, "attention_bias", true, &v->attention_bias);
  int32_t g = v->patch_size > 0 ? side[0] / v->patch_size : 0;
  if (st == MX_OK)
    st = mx_cfg_i32(&t, key_or(&t, "num_position_embeddings", "image_num_pos"), g * g,
                    &v->num_position_embeddings);
  cJSON_Delete(empty);
  if (st != MX_OK) return st;
  const int32_t pos[] = {v->hidden_size, v->intermediate_size, v->num_layers,  v->num_heads,
                         v->head_dim,    v->patch_size,        v->num_channels};
  for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
    if (pos[i] <= 0 || pos[i] > (1 << 20))
      return mx_error_set(MX_ERR_PARSE, "%s: vision_config has a size that is not positive",
                          o->src);
  if (n_side != 2 || side[0] != side[1] || side[0] % v->patch_size)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: vision_config.image_size must be square and a multiple of the patch "
                        "size %d",
                        o->src, v->patch_size);
  if (kv != v->num_heads)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: vision_config.num_key_value_heads %d other than num_attention_heads "
                        "is not supported",
                        o->src, kv);
  if (v->num_position_embeddings != g * g)
    return mx_error_set(MX_ERR_PARSE,
                        "%s: vision_config.num_position_embeddings %d is not the crop's %d x %d "
                        "patches",
                        o->src, v->num_position_embeddings, g, g);
  if (strcmp(v->hidden_act, "gelu_pytorch_tanh") != 0)
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: vision_config.hidden_act '%s' is not supported",
                        o->src, v->hidden_act);
  if (v->num_layers > MX_VISION_MAX_LAYERS)
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: vision_config.num_hidden_layers %d is above %d",
                        o->src, v->num_layers, MX_VISION_MAX_LAYERS);
  v->image_size = side[0];
  return MX_OK;
}

// adapter_config: Molmo2AdapterConfig's defaults (vit_layers is vision_feature_layer's alias).
// The feature layers index the tower's hidden states as transformers does: l >= 0 the output of
// layer l (hidden state l + 1), a negative one counted from the last.
static mx_status_t vision_adapter(const mx_cfg_obj_t *o, int32_t text_hidden,
                                  mx_vision_config_t *v) {
  const cJSON *ac = NULL;
  cJSON *empty = NULL;
  MX_TRY(mx_cfg_sub_object(o, "adapter_config", &empty, &ac));
  mx_cfg_obj_t t = {ac, o->src, "adapter_config."};
  int32_t layers[MX_VISION_MAX_FEATURES] = {24, 18}, n = 2, kv = 0, out = 0;
  bool mlp_bias = false;
  char act[16];
  mx_status_t st = int_list(&t, key_or(&t, "vision_feature_layer", "vit_layers"),
                            MX_VISION_MAX_FEATURES, layers, &n);
  if (st == MX_OK) st = mx_cfg_i32(&t, "hidden_size", 1152, &v->adapter_hidden);
  if (st == MX_OK) st = mx_cfg_i32(&t, "num_attention_heads", 16, &v->adapter_heads);
  if (st == MX_OK) st = mx_cfg_i32(&t, "num_key_value_heads", v->adapter_heads, &kv);
  if (st == MX_OK) st = mx_cfg_i32(&t, "head_dim", 72, &v->adapter_head_dim);
  if (st == MX_OK) st = mx_cfg_bool(&t, "attention_bias", true, &v->adapter_attention_bias);
  if (st == MX_OK) st = mx_cfg_str(&t, "hidden_act", "silu", act, sizeof act);
  if (st == MX_OK) st = mx_cfg_i32(&t, "intermediate_size", 18944, &v->adapter_intermediate);
  if (st == MX_OK) st = mx_cfg_i32(&t, "text_hidden_size", 3584, &out);
  if (st == MX_OK) st = mx_cfg_bool(&t, "mlp_bias", false, &mlp_bias);
  cJSON_Delete(empty);
  if (st != MX_OK) return st;
  if (v->adapter_hidden <= 0 || v->adapter_heads <= 0 || v->adapter_head_dim <= 0 ||
      v->adapter_intermediate <= 0)
    return mx_error_set(MX_ERR_PARSE, "%s: adapter_config has a size that is not positive", o->src);
  if (kv != v->adapter_heads)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: adapter_config.num_key_value_heads %d other than "
                        "num_attention_heads is not supported",
                        o->src, kv);
  if (strcmp(act, "silu") != 0 || mlp_bias)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: adapter_config with hidden_act '%s'%s is not supported (silu, no "
                        "mlp_bias)",
                        o->src, act, mlp_bias ? " and mlp_bias" : "");
  if (out != text_hidden)
    return mx_error_set(MX_ERR_PARSE,
                        "%s: adapter_config.text_hidden_size (%d) must equal the text model's "
                        "hidden_size (%d)",
                        o->src, out, text_hidden);
  v->n_feature_layers = n;
  v->layers_run = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t l = layers[i];
    if (l < -v->num_layers || l >= v->num_layers)
      return mx_error_set(MX_ERR_PARSE,
                          "%s: adapter_config.vision_feature_layer %d must index the %d layers "
                          "of vision_config",
                          o->src, l, v->num_layers);
    v->feature_layers[i] = l >= 0 ? l + 1 : v->num_layers + 1 + l;
    if (v->feature_layers[i] > v->layers_run) v->layers_run = v->feature_layers[i];
  }
  return MX_OK;
}

// The image token ids (Molmo2Config's defaults), which must be input ids of the embedding.
static mx_status_t image_tokens(const mx_cfg_obj_t *o, const mx_model_config_t *cfg,
                                mx_vision_config_t *v) {
  int32_t nv = mx_config_input_vocab(cfg);
  MX_TRY(mx_cfg_token_index(o, "image_patch_id", "image_token_id", 151938, nv, &v->image_token_id));
  MX_TRY(mx_cfg_token_index(o, "image_start_token_id", "image_start_token_id", 151936, nv,
                            &v->vision_start_token_id));
  MX_TRY(mx_cfg_token_index(o, "image_end_token_id", "image_end_token_id", 151937, nv,
                            &v->vision_end_token_id));
  MX_TRY(mx_cfg_token_index(o, "low_res_image_start_token_id", "low_res_image_start_token_id",
                            151940, nv, &v->low_res_start_token_id));
  const int32_t ids[4] = {v->image_token_id, v->vision_start_token_id, v->vision_end_token_id,
                          v->low_res_start_token_id};
  v->block_lo = v->block_hi = ids[0];
  for (int i = 1; i < 4; i++) {
    if (ids[i] < v->block_lo) v->block_lo = ids[i];
    if (ids[i] > v->block_hi) v->block_hi = ids[i];
  }
  if (v->block_hi - v->block_lo > 16)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: the image token ids %d..%d are not the consecutive special ids "
                        "Molmo2's tokenizers give them (one image's block is every id between)",
                        o->src, v->block_lo, v->block_hi);
  return MX_OK;
}

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  MX_TRY(text_config(o, cfg));
  mx_vision_config_t *v = &cfg->vision;
  if (mx_cfg_has(o, "vit_config") && !mx_cfg_has(o, "vision_config"))
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: the pre-release layout (vit_config) is not supported; transformers "
                        "writes vision_config",
                        o->src);
  MX_TRY(vision_tower(o, v));
  MX_TRY(vision_adapter(o, cfg->hidden_size, v));
  MX_TRY(image_tokens(o, cfg, v));
  v->kind = MX_VISION_MOLMO2;
  v->present = true;
  if (mx_cfg_has(o, "torch_dtype") || mx_cfg_has(o, "dtype")) MX_TRY(mx_cfg_dtype(o, cfg));
  return mx_cfg_bool(o, "tie_word_embeddings", false, &cfg->tie_word_embeddings);
}

// ---- graph ----

// The standard names the shared core asks for -> the original Molmo names, in order, each once
// (the layer norms before the final one, whose full prefix keeps q_norm / k_norm apart).
#define MOLMO2_NAMES(attn_norm, ff_norm)                                                         \
  {                                                                                              \
    {attn_norm, ".attn_norm."}, {ff_norm, ".ff_norm."},                                          \
        {".self_attn.qkv_proj.", ".self_attn.att_proj."},                                        \
        {".self_attn.o_proj.", ".self_attn.attn_out."}, {".mlp.gate_up_proj.", ".mlp.ff_proj."}, \
        {".mlp.down_proj.", ".mlp.ff_out."}, {"transformer.layers.", "transformer.blocks."},     \
        {"transformer.norm.", "transformer.ln_f."}, {                                            \
      "transformer.embed_tokens.weight", "transformer.wte.embedding"                             \
    }                                                                                            \
  }
static const char *const kNamesPre[][2] =
    MOLMO2_NAMES(".input_layernorm.", ".post_attention_layernorm.");
static const char *const kNamesAfter[][2] =
    MOLMO2_NAMES(".post_attention_layernorm.", ".post_feedforward_layernorm.");
#undef MOLMO2_NAMES

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qk_norm = true;
  a->qk_norm_flat = cfg->qk_norm_flat;
  a->norm_after = cfg->norm_after;
  a->fused_qkv = true;
  a->fused_gate_up = true;
  a->fused_up_first = true;
  a->extra_vocab = cfg->extra_vocab_size;
  a->extra_embed_name = "wte.new_embedding";
  a->prefix = "model.transformer.";
  a->head_name = "lm_head.weight";
  a->renames = cfg->norm_after ? kNamesAfter : kNamesPre;
  a->n_renames = (int32_t)(sizeof kNamesPre / sizeof kNamesPre[0]);
  a->renamed = true;
  a->media_blocks = cfg->vision.present;  // every image token of an image: one block
  a->media_add = true;                    // features added to the <im_patch> embeddings
  return MX_OK;
}

const mx_family_t mx_family_molmo2 = {"molmo2", parse_config, arch};
