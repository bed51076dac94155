// Internal to the checkpoint loader: validation of one safetensors image, shared by
// mx_safetensors_validate (in-memory, fuzzing) and mx_checkpoint_open (mmapped files).
#ifndef MLXCEL_MODEL_SAFETENSORS_INTERNAL_H
#define MLXCEL_MODEL_SAFETENSORS_INTERNAL_H

#include "mlxcel/model.h"

// The largest JSON header accepted. Real headers are a few hundred bytes per tensor, so even a
// 100k-tensor checkpoint stays well below; the bound keeps a corrupt length from allocating GBs.
#define MX_ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

// Parses and validates the safetensors image data[0..len) named `filename` in messages. On
// success *out is an arena array of *n weights in header order: names and `file` are arena
// strings (file = `filename`), `data` points into `data`. No two tensors share a name, and none
// is larger than max_tensor_bytes.
mx_status_t mx_st_parse(const uint8_t *data, size_t len, const char *filename,
                        uint64_t max_tensor_bytes, mx_arena_t *arena, mx_weight_t **out,
                        int32_t *n);

// Maps a safetensors dtype string ("F32", "BF16", "U8", "BOOL", ...) to an element type;
// MX_ELEM_INVALID if unknown.
mx_elem_type_t mx_st_dtype(const char *s);

#endif  // MLXCEL_MODEL_SAFETENSORS_INTERNAL_H
