// Gemma 3n family, model_types "gemma3n_text" and "gemma3n" (the multimodal checkpoint: the text
// model from its nested text_config; ids from the vision vocabulary's offset on are embedded by
// embed_vision / embed_audio, graph_gemma3n.c; the audio tower is @audio, audio_gemma3n.c).
// Config: the defaults of transformers' Gemma3nTextConfig.
// Graph: the core's attention (q / k norms with the weight as it is, a weightless v norm,
// scale 1, a RoPE base per layer type, the last num_kv_shared_layers layers attending over the
// caches of the last earlier layer of their type) and MLP, inside Gemma 3n's own layer loop
// (graph_gemma3n.c: per-layer inputs, AltUp, Laurel, activation sparsity); final soft-capping.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/family.h"

// ---- config.json ----

static const mx_cfg_defaults_t kGemma3nDefaults = {
    .vocab_size = 262400,
    .hidden_size = 2048,
    .intermediate_size = 16384,
    .num_layers = 35,
    .num_heads = 8,
    .num_kv_heads = 2,
    .head_dim = 256,
    .max_position_embeddings = 32768,
    .rms_norm_eps = 1e-6,
    .rope_theta = 1000000.0,
    .tie_word_embeddings = true,
    .hidden_act = "gelu_pytorch_tanh",
    .bos_token_id = 2,
    .eos_token_id = 1,
    .pad_token_id = 0,
};

enum { kMaxAltup = 16 };  // streams one layer's AltUp mixes (released models: 4)

// intermediate_size: one size for every layer or a list of num_hidden_layers sizes.
static mx_status_t layer_ffn(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o->obj, "intermediate_size");
  if (!cJSON_IsArray(j)) {
    for (int32_t l = 0; l < cfg->num_layers; l++) cfg->layer_ffn[l] = cfg->intermediate_size;
    return MX_OK;
  }
  if (cJSON_GetArraySize(j) != cfg->num_layers) {
    return mx_error_set(MX_ERR_PARSE, "%s: %sintermediate_size has %d sizes for %d layers", o->src,
                        o->prefix, cJSON_GetArraySize(j), cfg->num_layers);
  }
  int32_t l = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, j) {
    double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
    if (!(v >= 1 && v <= 1 << 30) || v != floor(v)) {
      return mx_error_set(MX_ERR_PARSE, "%s: %sintermediate_size[%d] must be a positive integer",
                          o->src, o->prefix, l);
    }
    cfg->layer_ffn[l++] = (int32_t)v;
  }
  return MX_OK;
}

// activation_sparsity_pattern: a list of num_hidden_layers values in [0, 1); absent or null:
// 0.95 on the first 10 layers of a model with more than 10, none elsewhere (transformers'
// default).
static mx_status_t sparsity(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  const char *key = "activation_sparsity_pattern";
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o->obj, key);
  if (j == NULL || cJSON_IsNull(j)) {
    int32_t n = cfg->num_layers > 10 ? 10 : 0;
    for (int32_t l = 0; l < cfg->num_layers; l++) cfg->layer_sparsity[l] = l < n ? 0.95f : 0.0f;
    return MX_OK;
  }
  if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != cfg->num_layers) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s%s must be a list of %d values", o->src, o->prefix,
                        key, cfg->num_layers);
  }
  int32_t l = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, j) {
    // 1 would put the cutoff at +inf (every activation zero); transformers' own check is none.
    if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0.0 && e->valuedouble < 1.0)) {
      return mx_error_set(MX_ERR_PARSE, "%s: %s%s[%d] must be a number in [0, 1)", o->src,
                          o->prefix, key, l);
    }
    cfg->layer_sparsity[l++] = (float)e->valuedouble;
  }
  return MX_OK;
}

static mx_status_t positive_i(const mx_cfg_obj_t *o, const char *key, int32_t def, int32_t *out) {
  MX_TRY(mx_cfg_i32(o, key, def, out));
  return mx_cfg_positive(o, key, *out);
}

// AltUp, per-layer inputs, Laurel and KV sharing. transformers requires every layer type of the
// sharing layers to have a producer among the others (kv_sharing_modes).
static mx_status_t gemma3n_parts(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  MX_TRY(positive_i(o, "altup_num_inputs", 4, &cfg->altup_num_inputs));
  if (cfg->altup_num_inputs > kMaxAltup) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %saltup_num_inputs %d is not supported (at most %d)", o->src,
                        o->prefix, cfg->altup_num_inputs, kMaxAltup);
  }
  MX_TRY(mx_cfg_i32(o, "altup_active_idx", 0, &cfg->altup_active_idx));
  if (cfg->altup_active_idx < 0 || cfg->altup_active_idx >= cfg->altup_num_inputs) {
    return mx_error_set(MX_ERR_PARSE, "%s: %saltup_active_idx %d is not one of the %d streams",
                        o->src, o->prefix, cfg->altup_active_idx, cfg->altup_num_inputs);
  }
  MX_TRY(mx_cfg_bool(o, "altup_correct_scale", true, &cfg->altup_correct_scale));
  MX_TRY(positive_i(o, "hidden_size_per_layer_input", 256, &cfg->hidden_size_per_layer_input));
  MX_TRY(positive_i(o, "vocab_size_per_layer_input", 262144, &cfg->vocab_size_per_layer_input));
  MX_TRY(positive_i(o, "laurel_rank", 64, &cfg->laurel_rank));
  int32_t shared = 15, L = cfg->num_layers;
  MX_TRY(mx_cfg_i32(o, "num_kv_shared_layers", 15, &shared));
  if (shared < 0 || shared >= L) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %snum_kv_shared_layers %d must be in [0, %d) (num_hidden_layers)",
                        o->src, o->prefix, shared, L);
  }
  cfg->num_kv_shared_layers = shared;
  for (int32_t l = L - shared; l < L; l++) {
    bool producer = false;
    for (int32_t p = 0; p < L - shared && !producer; p++)
      producer = cfg->layer_sliding[p] == cfg->layer_sliding[l];
    if (!producer) {
      return mx_error_set(MX_ERR_PARSE,
                          "%s: %slayer %d shares the KV of a %s layer, and none of the first %d "
                          "layers is one",
                          o->src, o->prefix, l, cfg->layer_sliding[l] ? "sliding" : "full",
                          L - shared);
    }
  }
  return MX_OK;
}

static mx_status_t parse_config_gemma3n_text(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  // The shared reader takes one intermediate_size: a list is read by layer_ffn below.
  cJSON *copy = cJSON_Duplicate(o->obj, true);
  if (copy == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  const cJSON *ffn = cJSON_GetObjectItemCaseSensitive(o->obj, "intermediate_size");
  if (cJSON_IsArray(ffn)) cJSON_DeleteItemFromObjectCaseSensitive(copy, "intermediate_size");
  mx_cfg_obj_t c = {copy, o->src, o->prefix};
  mx_cfg_defaults_t d = kGemma3nDefaults;
  if (cJSON_IsArray(ffn) && cJSON_IsNumber(cJSON_GetArrayItem(ffn, 0))) {
    d.intermediate_size = (int32_t)cJSON_GetArrayItem(ffn, 0)->valueint;
  }
  mx_status_t st = MX_OK;
  if (mx_cfg_rope_nested(&c)) {
    double local = 10000.0;
    st = mx_cfg_f64(&c, "rope_local_base_freq", local, &local);
    if (st == MX_OK) st = mx_cfg_positive(&c, "rope_local_base_freq", local);
    if (st == MX_OK) st = mx_cfg_parse_common_nested(&c, &d, "gemma3n", local, cfg);
  } else {
    st = mx_cfg_parse_common(&c, &d, cfg);
    if (st == MX_OK) {
      st = mx_cfg_f64(&c, "rope_local_base_freq", 10000.0, &cfg->rope_local_base_freq);
    }
    if (st == MX_OK) st = mx_cfg_positive(&c, "rope_local_base_freq", cfg->rope_local_base_freq);
  }
  cJSON_Delete(copy);
  MX_TRY(st);
  MX_TRY(layer_ffn(o, cfg));
  MX_TRY(mx_cfg_str(o, "hidden_activation", "gelu_pytorch_tanh", cfg->hidden_act,
                    sizeof cfg->hidden_act));
  MX_TRY(mx_cfg_activation(o, "hidden_activation", cfg));
  if (strcmp(cfg->hidden_act, "gelu_pytorch_tanh") != 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %shidden_activation %s is not supported for gemma3n "
                        "(gelu_pytorch_tanh only)",
                        o->src, o->prefix, cfg->hidden_act);
  }
  MX_TRY(mx_cfg_softcap(o, "final_logit_softcapping", 30.0, &cfg->final_logit_softcapping));
  MX_TRY(mx_cfg_window(o, 512, cfg));
  MX_TRY(mx_cfg_layer_types(o, mx_cfg_not_every_nth, 5, cfg));
  MX_TRY(sparsity(o, cfg));
  return gemma3n_parts(o, cfg);
}

static mx_status_t parse_config_gemma3n(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  cJSON *empty = NULL;
  const cJSON *tc = NULL;
  MX_TRY(mx_cfg_sub_object(o, "text_config", &empty, &tc));
  mx_cfg_obj_t t = {(cJSON *)tc, o->src, "text_config."};
  mx_status_t st = parse_config_gemma3n_text(&t, cfg);
  cJSON_Delete(empty);
  MX_TRY(st);
  // The outer config carries the checkpoint dtype and, in released files, the token ids.
  if (mx_cfg_has(o, "torch_dtype") || mx_cfg_has(o, "dtype")) MX_TRY(mx_cfg_dtype(o, cfg));
  MX_TRY(mx_cfg_token(o, "bos_token_id", cfg->bos_token_id, &cfg->bos_token_id));
  MX_TRY(mx_cfg_token(o, "pad_token_id", cfg->pad_token_id, &cfg->pad_token_id));
  MX_TRY(mx_cfg_eos(o, cfg));
  MX_TRY(mx_cfg_audio_gemma3n(o, cfg));
  return mx_cfg_mm_embeds_gemma3n(o, cfg);
}

// ---- graph ----

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  int32_t L = a->n_layers, first_shared = L - cfg->num_kv_shared_layers;
  if (cfg->altup_num_inputs < 1 || first_shared < 1) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "graph: %s config without its AltUp / KV-sharing fields", cfg->model_type);
  }
  a->embed_scale = mx_g_round_to(cfg->dtype, sqrt((double)a->hidden));
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  a->sandwich_norm = true;
  a->qk_norm = true;
  a->v_norm = true;
  a->attn_scale = 1.0;  // the q / k norms set the scale
  a->layer_ffn = cfg->layer_ffn;
  if (strcmp(cfg->model_type, "gemma3n") == 0) {
    a->prefix = "model.language_model.";
    a->head_name = "lm_head.weight";
  }
  double local = cfg->rope_local_base_freq > 0 ? cfg->rope_local_base_freq : 10000.0;
  MX_TRY(mx_rope_inv_freq(local, a->rotary_dim, NULL, &a->inv_freq[1]));
  a->n_rope_tables = 2;
  a->layer_kv_src = malloc(sizeof(int32_t) * (size_t)L);
  if (a->layer_kv_src == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t l = 0; l < L; l++) {
    a->layer_rope[l] = cfg->layer_sliding[l] ? 1 : 0;
    a->layer_kv_src[l] = l;
    // A sharing layer reads the last layer of its type before the first sharing one.
    for (int32_t p = first_shared - 1; l >= first_shared && p >= 0; p--) {
      if (cfg->layer_sliding[p] == cfg->layer_sliding[l]) {
        a->layer_kv_src[l] = p;
        break;
      }
    }
  }
  a->more_weights = mx_gemma3n_weights;
  a->layers = mx_gemma3n_layers;
  a->embed_ids = mx_gemma3n_embed_ids;
  return MX_OK;
}

const mx_family_t mx_family_gemma3n_text = {"gemma3n_text", parse_config_gemma3n_text, arch};
const mx_family_t mx_family_gemma3n = {"gemma3n", parse_config_gemma3n, arch};
