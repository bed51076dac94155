// GGUF metadata -> model config. The keys llama.cpp's converter writes (<arch>.block_count,
// <arch>.attention.head_count, ...) are translated into the config.json fields transformers
// names them by, and that object goes through mx_config_parse: the family's defaults,
// validation and refusals are the same as for a Hugging Face folder (ADR 0011).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/try.h"
#include "model/gguf_internal.h"

// general.architecture -> model_type, for the architectures whose tensors gguf_tensors.c maps
// (llama.cpp writes Mistral-type models as "llama").
static const struct {
  const char *arch, *model_type;
} kArchs[] = {{"llama", "llama"}, {"qwen2", "qwen2"}, {"qwen3", "qwen3"}, {"phi3", "phi3"}};

const char *mx_gguf_model_type(const char *arch) {
  for (size_t i = 0; i < sizeof kArchs / sizeof kArchs[0]; i++) {
    if (strcmp(kArchs[i].arch, arch) == 0) return kArchs[i].model_type;
  }
  return NULL;
}

mx_status_t mx_gguf_arch(const mx_gguf_t *g, const char *src, char *arch, size_t cap) {
  const char *p;
  size_t n;
  MX_TRY(mx_gguf_get_str(g, "general.architecture", &p, &n));
  if (!p) return mx_error_set(MX_ERR_PARSE, "%s: general.architecture is missing", src);
  if (n >= cap) n = cap - 1;
  memcpy(arch, p, n);
  arch[n] = '\0';
  if (!mx_gguf_model_type(arch)) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: GGUF architecture '%s' is not supported (supported: llama, qwen2, "
                        "qwen3, phi3)",
                        src, arch);
  }
  return MX_OK;
}

// One metadata key, "<arch>.<suffix>", copied into the config as `field` when present.
typedef struct num_key {
  const char *suffix, *field;
  bool is_float;
} num_key_t;

static const num_key_t kNumKeys[] = {
    {"block_count", "num_hidden_layers", false},
    {"embedding_length", "hidden_size", false},
    {"feed_forward_length", "intermediate_size", false},
    {"attention.head_count", "num_attention_heads", false},
    {"attention.head_count_kv", "num_key_value_heads", false},
    {"attention.key_length", "head_dim", false},
    {"context_length", "max_position_embeddings", false},
    {"attention.layer_norm_rms_epsilon", "rms_norm_eps", true},
    {"rope.freq_base", "rope_theta", true},
    {"attention.sliding_window", "sliding_window", false},
};

static mx_status_t add_num(cJSON *o, const char *field, double v) {
  return cJSON_AddNumberToObject(o, field, v) ? MX_OK : mx_error_set(MX_ERR_NOMEM, "out of memory");
}

// RoPE scaling keys: none or linear run; yarn and the others are refused by name.
static mx_status_t add_rope_scaling(const mx_gguf_t *g, const char *arch, const char *src,
                                    cJSON *o) {
  char key[128];
  snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
  const char *p;
  size_t n;
  MX_TRY(mx_gguf_get_str(g, key, &p, &n));
  if (!p || (n == 4 && memcmp(p, "none", 4) == 0)) return MX_OK;
  if (!(n == 6 && memcmp(p, "linear", 6) == 0)) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: %s '%.*s' is not supported (none, linear)", src,
                        key, (int)(n > 40 ? 40 : n), p);
  }
  double factor;
  snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
  MX_TRY(mx_gguf_get_f64(g, key, 0, &factor));
  cJSON *rs = cJSON_AddObjectToObject(o, "rope_scaling");
  if (!rs || !cJSON_AddStringToObject(rs, "rope_type", "linear")) {
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  return add_num(rs, "factor", factor);
}

// The config.json object the metadata describes.
static mx_status_t build(const mx_gguf_t *g, const char *arch, const char *src, cJSON *o) {
  char key[128];
  if (!cJSON_AddStringToObject(o, "model_type", mx_gguf_model_type(arch))) {
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  snprintf(key, sizeof key, "%s.expert_count", arch);
  int64_t experts;
  MX_TRY(mx_gguf_get_i64(g, key, 0, &experts));
  if (experts > 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %s is %lld: mixture-of-experts GGUF files are not "
                        "supported",
                        src, key, (long long)experts);
  }
  for (size_t i = 0; i < sizeof kNumKeys / sizeof kNumKeys[0]; i++) {
    snprintf(key, sizeof key, "%s.%s", arch, kNumKeys[i].suffix);
    if (!mx_gguf_find(g, key)) continue;
    double v;
    if (kNumKeys[i].is_float) {
      MX_TRY(mx_gguf_get_f64(g, key, 0, &v));
    } else {
      int64_t iv;
      MX_TRY(mx_gguf_get_i64(g, key, 0, &iv));
      v = (double)iv;
    }
    MX_TRY(add_num(o, kNumKeys[i].field, v));
  }
  // The rotary dimension: the whole head unless the file says less.
  snprintf(key, sizeof key, "%s.rope.dimension_count", arch);
  int64_t rot, heads, hidden, head_dim;
  MX_TRY(mx_gguf_get_i64(g, key, 0, &rot));
  snprintf(key, sizeof key, "%s.attention.head_count", arch);
  MX_TRY(mx_gguf_get_i64(g, key, 0, &heads));
  snprintf(key, sizeof key, "%s.embedding_length", arch);
  MX_TRY(mx_gguf_get_i64(g, key, 0, &hidden));
  snprintf(key, sizeof key, "%s.attention.key_length", arch);
  MX_TRY(mx_gguf_get_i64(g, key, heads > 0 ? hidden / heads : 0, &head_dim));
  if (rot > 0 && head_dim > 0 && rot != head_dim) {
    MX_TRY(add_num(o, "partial_rotary_factor", (double)rot / (double)head_dim));
  }
  MX_TRY(add_rope_scaling(g, arch, src, o));
  // Vocabulary and head: the embedding's rows; the head is tied when the file has no output.
  const mx_gguf_tensor_t *emb = mx_gguf_find_tensor(g, "token_embd.weight");
  if (!emb || emb->n_dims != 2) {
    return mx_error_set(MX_ERR_PARSE, "%s: no 2-D tensor 'token_embd.weight'", src);
  }
  MX_TRY(add_num(o, "vocab_size", (double)emb->ne[1]));
  if (!cJSON_AddBoolToObject(o, "tie_word_embeddings",
                             mx_gguf_find_tensor(g, "output.weight") == NULL)) {
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  // Biases on q/k/v (Qwen2 has them by its class; Llama only when the file carries them).
  if (strcmp(arch, "llama") == 0 && mx_gguf_find_tensor(g, "blk.0.attn_q.bias")) {
    if (!cJSON_AddBoolToObject(o, "attention_bias", true)) {
      return mx_error_set(MX_ERR_NOMEM, "out of memory");
    }
  }
  static const struct {
    const char *key, *field;
  } kTokens[] = {{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                 {"tokenizer.ggml.eos_token_id", "eos_token_id"},
                 {"tokenizer.ggml.padding_token_id", "pad_token_id"}};
  for (size_t i = 0; i < sizeof kTokens / sizeof kTokens[0]; i++) {
    if (!mx_gguf_find(g, kTokens[i].key)) {
      if (!cJSON_AddNullToObject(o, kTokens[i].field)) {
        return mx_error_set(MX_ERR_NOMEM, "out of memory");
      }
      continue;
    }
    int64_t id;
    MX_TRY(mx_gguf_get_i64(g, kTokens[i].key, -1, &id));
    // llama.cpp writes "none" as -1 stored in a uint32.
    if (id < 0 || id == UINT32_MAX) {
      if (!cJSON_AddNullToObject(o, kTokens[i].field)) return mx_error_set(MX_ERR_NOMEM, "oom");
      continue;
    }
    MX_TRY(add_num(o, kTokens[i].field, (double)id));
  }
  return MX_OK;
}

mx_status_t mx_gguf_config(const mx_gguf_t *g, const char *src, mx_model_config_t *cfg) {
  char arch[64];
  MX_TRY(mx_gguf_arch(g, src, arch, sizeof arch));
  cJSON *o = cJSON_CreateObject();
  if (!o) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_status_t st = build(g, arch, src, o);
  char *text = st == MX_OK ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  if (st == MX_OK && !text) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  if (st == MX_OK) {
    char what[4200];
    snprintf(what, sizeof what, "%.4000s (metadata)", src);
    st = mx_config_parse(text, strlen(text), NULL, 0, what, cfg);
  }
  free(text);
  return st;
}
