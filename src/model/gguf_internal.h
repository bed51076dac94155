// Internal to the GGUF model loader (src/model/gguf_*.c): how a GGUF file's metadata, tensors
// and tokenizer become a config, a checkpoint and a tokenizer (ADR 0010).
#ifndef MLXCEL_MODEL_GGUF_INTERNAL_H
#define MLXCEL_MODEL_GGUF_INTERNAL_H

#include <cjson/cJSON.h>

#include "gguf/gguf.h"
#include "mlxcel/model.h"

// The model_type of a general.architecture we run (NULL otherwise).
const char *mx_gguf_model_type(const char *arch);
// general.architecture into arch[cap]; an architecture we do not run is MX_ERR_UNSUPPORTED.
mx_status_t mx_gguf_arch(const mx_gguf_t *g, const char *src, char *arch, size_t cap);

// The metadata as a config (gguf_config.c); `src` names the file in messages.
mx_status_t mx_gguf_config(const mx_gguf_t *g, const char *src, mx_model_config_t *cfg);

// Every tensor of g into ck under its Hugging Face name (gguf_tensors.c): float tensors as
// views of the mapping, Q/K rows of the llama architecture un-permuted into copies, Q8_0 / Q4_0
// / Q4_1 repacked into the int8 / int4 / MLX affine layouts of model.h.
mx_status_t mx_gguf_tensors(const mx_gguf_t *g, const mx_model_config_t *cfg, const char *src,
                            mx_checkpoint_t *ck);

// tokenizer.json and tokenizer_config.json texts (heap, NUL-terminated, the caller frees)
// written from the tokenizer.* keys (gguf_tokenizer.c). *tok_json is NULL when the file has no
// tokenizer.ggml.model.
mx_status_t mx_gguf_tokenizer_json(const mx_gguf_t *g, const char *src, char **tok_json,
                                   char **config_json);

#endif  // MLXCEL_MODEL_GGUF_INTERNAL_H
