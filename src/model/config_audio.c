// Gemma 3n's audio_config (Gemma3nAudioConfig, transformers 5.25) and the audio token ids of the
// outer config (Gemma3nConfig): the defaults of those classes, every field checked, and what the
// graph does not run refused by name.
#include <stdio.h>
#include <string.h>

#include "model/config_internal.h"

// The conv blocks' output frames (time) and width (frequency) of n_in input frames / f_in mels:
// padded by (0, k - 1) in time and (1, 1) in frequency, as Gemma3nAudioSubSampleConvProjection.
static int64_t conv_out(int64_t in, int32_t pad, int32_t k, int32_t stride) {
  return in + pad < k ? 0 : (in + pad - k) / stride + 1;
}

int64_t mx_audio_tokens(const mx_audio_config_t *a, int64_t frames) {
  int64_t t = frames;
  for (int i = 0; i < 2; i++)
    t = conv_out(t, a->sscp_kernel[i][0] - 1, a->sscp_kernel[i][0], a->sscp_stride[i][0]);
  return a->reduction > 0 ? (t + a->reduction - 1) / a->reduction : 0;
}

static mx_status_t positive(const mx_cfg_obj_t *o, const char *key, int32_t def, int32_t *out) {
  MX_TRY(mx_cfg_i32(o, key, def, out));
  return mx_cfg_positive(o, key, *out);
}

// key: a list of two positive integers (channels) or of two pairs of them (kernels, strides).
static mx_status_t int_list(const mx_cfg_obj_t *o, const char *key, bool pairs, int32_t *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o->obj, key);
  if (j == NULL || cJSON_IsNull(j)) return MX_OK;  // the defaults already in out
  bool ok = cJSON_IsArray(j) && cJSON_GetArraySize(j) == 2;
  for (int i = 0; ok && i < 2; i++) {
    const cJSON *e = cJSON_GetArrayItem(j, i);
    for (int k = 0; ok && k < (pairs ? 2 : 1); k++) {
      const cJSON *v = pairs ? cJSON_GetArrayItem(e, k) : e;
      ok = (!pairs || (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2)) && cJSON_IsNumber(v) &&
           v->valuedouble >= 1 && v->valuedouble <= 4096 &&
           v->valuedouble == (int32_t)v->valuedouble;
      if (ok) out[pairs ? 2 * i + k : i] = (int32_t)v->valuedouble;
    }
  }
  if (!ok) {
    return mx_error_set(
        MX_ERR_PARSE, "%s: %s%s must be a list of two %s", o->src, o->prefix, key,
        pairs ? "[time, frequency] pairs of positive integers" : "positive integers");
  }
  return MX_OK;
}

static mx_status_t audio_fields(const mx_cfg_obj_t *o, mx_audio_config_t *a) {
  MX_TRY(positive(o, "input_feat_size", 128, &a->input_feat_size));
  MX_TRY(positive(o, "hidden_size", 1536, &a->hidden_size));
  MX_TRY(positive(o, "conf_num_attention_heads", 8, &a->num_heads));
  MX_TRY(positive(o, "conf_num_hidden_layers", 12, &a->num_layers));
  MX_TRY(positive(o, "conf_attention_chunk_size", 12, &a->chunk_size));
  MX_TRY(mx_cfg_i32(o, "conf_attention_context_left", 13, &a->context_left));
  MX_TRY(mx_cfg_i32(o, "conf_attention_context_right", 0, &a->context_right));
  MX_TRY(positive(o, "conf_conv_kernel_size", 5, &a->conv_kernel));
  MX_TRY(positive(o, "conf_reduction_factor", 4, &a->reduction));
  MX_TRY(mx_cfg_f64_positive(o, "conf_attention_logit_cap", 50.0, &a->logit_cap));
  MX_TRY(mx_cfg_f64_positive(o, "gradient_clipping", 1e10, &a->gradient_clipping));
  MX_TRY(mx_cfg_f64(o, "conf_residual_weight", 0.5, &a->residual_weight));
  MX_TRY(mx_cfg_f64_positive(o, "sscp_conv_group_norm_eps", 1e-3, &a->sscp_group_norm_eps));
  MX_TRY(mx_cfg_f64_positive(o, "rms_norm_eps", 1e-6, &a->rms_norm_eps));
  MX_TRY(positive(o, "vocab_size", 128, &a->vocab_size));
  MX_TRY(mx_cfg_i32(o, "vocab_offset", 262144 + 128, &a->vocab_offset));
  a->sscp_channels[0] = 128, a->sscp_channels[1] = 32;
  for (int i = 0; i < 2; i++) {
    a->sscp_kernel[i][0] = a->sscp_kernel[i][1] = 3;
    a->sscp_stride[i][0] = a->sscp_stride[i][1] = 2;
  }
  MX_TRY(int_list(o, "sscp_conv_channel_size", false, a->sscp_channels));
  MX_TRY(int_list(o, "sscp_conv_kernel_size", true, &a->sscp_kernel[0][0]));
  MX_TRY(int_list(o, "sscp_conv_stride_size", true, &a->sscp_stride[0][0]));
  if (a->context_left < 0 || a->context_right < 0 || a->context_left > 4096 ||
      a->context_right > 4096) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %sconf_attention_context_left / _right must be in [0, 4096] (got "
                        "%d, %d)",
                        o->src, o->prefix, a->context_left, a->context_right);
  }
  if (a->hidden_size % a->num_heads != 0) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %shidden_size %d is not a multiple of conf_num_attention_heads %d",
                        o->src, o->prefix, a->hidden_size, a->num_heads);
  }
  int64_t f = a->input_feat_size;
  for (int i = 0; i < 2; i++) f = conv_out(f, 2, a->sscp_kernel[i][1], a->sscp_stride[i][1]);
  if (f < 1) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %sthe sub-sampler's kernels and strides leave no frequency bins of "
                        "input_feat_size %d",
                        o->src, o->prefix, a->input_feat_size);
  }
  return MX_OK;
}

// Token id key of the outer config (def when absent), which must be a text vocabulary id.
static mx_status_t token(const mx_cfg_obj_t *o, const char *key, int32_t def, int32_t vocab,
                         int32_t *out) {
  MX_TRY(mx_cfg_i32(o, key, def, out));
  if (*out < 0 || *out >= vocab) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s %d is not in the text vocabulary [0, %d)", o->src,
                        key, *out, vocab);
  }
  return MX_OK;
}

mx_status_t mx_cfg_audio_gemma3n(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  mx_audio_config_t *a = &cfg->audio;
  memset(a, 0, sizeof *a);
  // A text-only layout (the text config nested, no audio_config) has no tower to run.
  if (!mx_cfg_has(o, "audio_config")) return MX_OK;
  cJSON *empty = NULL;
  const cJSON *ac = NULL;
  MX_TRY(mx_cfg_sub_object(o, "audio_config", &empty, &ac));
  mx_cfg_obj_t sub = {ac, o->src, "audio_config."};
  mx_status_t st = audio_fields(&sub, a);
  cJSON_Delete(empty);
  MX_TRY(st);
  int32_t V = cfg->vocab_size;
  MX_TRY(positive(o, "audio_soft_tokens_per_image", 188, &a->soft_tokens));
  MX_TRY(token(o, "audio_token_id", 262273, V, &a->audio_token_id));
  MX_TRY(token(o, "boa_token_id", 256000, V, &a->boa_token_id));
  MX_TRY(token(o, "eoa_token_id", 262272, V, &a->eoa_token_id));
  // Gemma3nModel pads the audio rows with embed_audio of the text vocabulary's last id.
  int64_t pad = (int64_t)V - 1 - a->vocab_offset;
  if (pad < 0 || pad >= a->vocab_size) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: the padding id %d (text vocab_size - 1) is not an audio token "
                        "(audio_config.vocab_offset %d, vocab_size %d)",
                        o->src, V - 1, a->vocab_offset, a->vocab_size);
  }
  a->present = true;
  return MX_OK;
}

// ---- embed_vision / embed_audio ----

// The embedder of sub-config `key` (absent: the class's defaults).
static mx_status_t mm_embed(const mx_cfg_obj_t *o, const char *key, int32_t offset, int32_t hidden,
                            mx_mm_embed_t *e) {
  cJSON *empty = NULL;
  const cJSON *sc = NULL;
  MX_TRY(mx_cfg_sub_object(o, key, &empty, &sc));
  char prefix[32];
  snprintf(prefix, sizeof prefix, "%s.", key);
  mx_cfg_obj_t sub = {sc, o->src, prefix};
  mx_status_t st = positive(&sub, "vocab_size", 128, &e->vocab);
  if (st == MX_OK) st = mx_cfg_i32(&sub, "vocab_offset", offset, &e->offset);
  if (st == MX_OK) st = positive(&sub, "hidden_size", hidden, &e->hidden);
  if (st == MX_OK) st = mx_cfg_f64_positive(&sub, "rms_norm_eps", 1e-6, &e->eps);
  if (st == MX_OK && e->offset < 0)
    st = mx_error_set(MX_ERR_PARSE, "%s: %s.vocab_offset %d is negative", o->src, key, e->offset);
  cJSON_Delete(empty);
  return st;
}

mx_status_t mx_cfg_mm_embeds_gemma3n(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  mx_mm_embed_t *v = &cfg->mm_embed[MX_MM_VISION], *a = &cfg->mm_embed[MX_MM_AUDIO];
  MX_TRY(mm_embed(o, "vision_config", 262144, 2048, v));
  MX_TRY(mm_embed(o, "audio_config", 262144 + 128, 1536, a));
  // Gemma3nModel sends ids in [vision offset, audio offset) to embed_vision and the ids from the
  // audio offset on to embed_audio: each range the text vocabulary reaches must fit its table.
  int64_t V = cfg->vocab_size;
  if (v->offset > a->offset) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: vision_config.vocab_offset %d lies past audio_config.vocab_offset %d",
                        o->src, v->offset, a->offset);
  }
  const int64_t ends[MX_MM_EMBEDS] = {a->offset < V ? a->offset : V, V};
  static const char *const keys[MX_MM_EMBEDS] = {"vision_config", "audio_config"};
  for (int i = 0; i < MX_MM_EMBEDS; i++) {
    const mx_mm_embed_t *e = &cfg->mm_embed[i];
    if (ends[i] - e->offset > e->vocab) {
      return mx_error_set(MX_ERR_PARSE,
                          "%s: ids %d .. %lld of the text vocabulary reach %s's embedder, whose "
                          "vocab_size is %d",
                          o->src, e->offset, (long long)ends[i] - 1, keys[i], e->vocab);
    }
  }
  return MX_OK;
}
