// Internal to the checkpoint loader: the sharded index (model.safetensors.index.json).
#ifndef MLXCEL_MODEL_CHECKPOINT_INTERNAL_H
#define MLXCEL_MODEL_CHECKPOINT_INTERNAL_H

#include "mlxcel/model.h"

typedef struct mx_ckpt_index {
  int32_t n_shards;
  const char **shards;  // distinct shard file names, in order of first appearance (arena)
  int32_t n_entries;
  const char **names;  // tensor names listed in weight_map (arena)
  int32_t *shard_of;   // names[i] lives in shards[shard_of[i]]
} mx_ckpt_index_t;

// Parses an index file's text. `source` names it in messages. Everything lives in `arena`.
// Shard names must be plain file names (no '/', not "." or ".."): the index must not point
// outside the checkpoint directory.
mx_status_t mx_ckpt_index_parse(const char *json, size_t len, const char *source, mx_arena_t *arena,
                                mx_ckpt_index_t *out);

// MX_ERR_PARSE naming the first floating-point tensor holding NaN or +-Inf (weight_check.c).
// The first read of the mmapped weights: its progress is the "mapping" stage (progress may be
// NULL). It gives back the mapped pages it read (mx_checkpoint_release) as it goes.
mx_status_t mx_ckpt_check_finite(const mx_checkpoint_t *ck, const mx_progress_t *progress);

// mx_model_apply_precision reporting the "converting" stage to progress (may be NULL)
// (precision.c).
mx_status_t mx_precision_apply(const mx_model_config_t *cfg, mx_checkpoint_t *ck,
                               mx_elem_type_t precision, const mx_progress_t *progress);

// ---- Checkpoints another reader fills (src/model/gguf_*.c) ----

// An empty checkpoint (limits may be NULL: the defaults).
mx_status_t mx_checkpoint_create(const mx_checkpoint_limits_t *limits, mx_checkpoint_t **out);
// Gives ck a read-only file mapping, unmapped at close and used by mx_checkpoint_release (one
// per checkpoint made by mx_checkpoint_create).
void mx_checkpoint_adopt_map(mx_checkpoint_t *ck, void *map, size_t len);
// Adds a tensor whose bytes stay where they are (inside the adopted mapping or memory ck
// owns through mx_checkpoint_put); name and file are copied. A name already present, or a
// tensor over the size limit, is an error naming `file`.
mx_status_t mx_checkpoint_add_view(mx_checkpoint_t *ck, const char *name, mx_elem_type_t dtype,
                                   int32_t rank, const int64_t *dims, const void *data,
                                   const char *file);

// Loads the GGUF file at PATH into m (config, checkpoint, and the tokenizer unless
// tokenizer_optional and the file has none) (gguf_model.c).
mx_status_t mx_gguf_model_load(const char *path, const mx_model_load_opts_t *opts, mx_model_t *m);

#endif  // MLXCEL_MODEL_CHECKPOINT_INTERNAL_H
