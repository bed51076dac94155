// Internal to the GGUF model loader (src/model/gguf_*.c): how a GGUF file's metadata, tensors
// and tokenizer become a config, a checkpoint and a tokenizer (ADR 0011).
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
// / Q4_1 / Q4_K / Q5_K / Q6_K repacked into the int8 / int4 / MLX affine layouts of model.h.
mx_status_t mx_gguf_tensors(const mx_gguf_t *g, const mx_model_config_t *cfg, const char *src,
                            mx_checkpoint_t *ck);

// How a ggml block type maps exactly onto a stored format of model.h (gguf_blocks.c).
typedef struct mx_gguf_qmap {
  uint32_t type;        // mx_ggml_type_t
  int32_t block;        // elements per ggml block
  int32_t block_bytes;  // bytes per ggml block
  int32_t group;        // elements per scale of the target format
  int32_t bits;         // 8 or 4 bits per stored value
  bool is_signed;       // int8 target (i8 values); otherwise unsigned values packed in u32
  bool affine;          // the target has biases (MLX affine)
  mx_elem_type_t sdt;   // scales / biases: F16 (the block's own) or F32 (ggml's f32 products)
} mx_gguf_qmap_t;
// NULL for types without a mapping.
const mx_gguf_qmap_t *mx_gguf_qmap(uint32_t type);
// One block: v[block] values (signed for int8 targets), block / group scales and (affine)
// biases, of type m->sdt.
void mx_gguf_decode_block(const mx_gguf_qmap_t *m, const uint8_t *blk, int16_t *v, void *scales,
                          void *biases);

// tokenizer.json and tokenizer_config.json texts (heap, NUL-terminated, the caller frees)
// written from the tokenizer.* keys (gguf_tokenizer.c). *tok_json is NULL when the file has no
// tokenizer.ggml.model.
mx_status_t mx_gguf_tokenizer_json(const mx_gguf_t *g, const char *src, char **tok_json,
                                   char **config_json);

#endif  // MLXCEL_MODEL_GGUF_INTERNAL_H
