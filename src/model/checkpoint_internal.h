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
// NULL).
mx_status_t mx_ckpt_check_finite(const mx_checkpoint_t *ck, const mx_progress_t *progress);

// mx_model_apply_precision reporting the "converting" stage to progress (may be NULL)
// (precision.c).
mx_status_t mx_precision_apply(const mx_model_config_t *cfg, mx_checkpoint_t *ck,
                               mx_elem_type_t precision, const mx_progress_t *progress);

#endif  // MLXCEL_MODEL_CHECKPOINT_INTERNAL_H
