// The family registry: every model family, once (family.h).
#include "model/family.h"

#include <string.h>

// Registration order is the order of the "supported:" list in messages.
#define MX_FAMILIES(X) \
  X(llama)             \
  X(mistral)           \
  X(qwen2)             \
  X(qwen3)             \
  X(mimo)              \
  X(gemma)             \
  X(gemma2)            \
  X(gemma3_text)       \
  X(gemma3)            \
  X(gemma3n_text)      \
  X(gemma3n)           \
  X(phi3)              \
  X(phi4_multimodal)   \
  X(phi4mm)            \
  X(granite)           \
  X(minicpm)           \
  X(smollm3)           \
  X(olmo2)             \
  X(olmo3)             \
  X(seed_oss)          \
  X(exaone4)           \
  X(starcoder2)        \
  X(stablelm)          \
  X(cohere)            \
  X(cohere2)           \
  X(internlm3)         \
  X(exaone)            \
  X(llava)             \
  X(qwen2_vl)          \
  X(qwen2_5_vl)        \
  X(qwen3_vl)          \
  X(molmo2)            \
  X(mixtral)           \
  X(qwen2_moe)         \
  X(qwen3_moe)         \
  X(olmoe)             \
  X(deepseek_v2)       \
  X(deepseek_v3)       \
  X(youtu)             \
  X(youtu_vl)          \
  X(gpt_oss)

#define DECLARE(name) extern const mx_family_t mx_family_##name;
MX_FAMILIES(DECLARE)
#undef DECLARE

#define ENTRY(name) &mx_family_##name,
static const mx_family_t *const kFamilies[] = {MX_FAMILIES(ENTRY)};
#undef ENTRY

const mx_family_t *mx_family_find(const char *model_type) {
  for (size_t i = 0; model_type && i < sizeof kFamilies / sizeof kFamilies[0]; i++)
    if (strcmp(model_type, kFamilies[i]->model_type) == 0) return kFamilies[i];
  return NULL;
}

const char *mx_family_list(char *buf, size_t cap) {
  size_t n = 0;
  if (cap == 0) return buf;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof kFamilies / sizeof kFamilies[0]; i++) {
    const char *sep = i ? ", " : "";
    size_t need = strlen(sep) + strlen(kFamilies[i]->model_type);
    if (n + need + 1 > cap) break;
    strcpy(buf + n, sep);
    strcat(buf + n, kFamilies[i]->model_type);
    n += need;
  }
  return buf;
}
