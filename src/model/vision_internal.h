// Internal interface of the vision towers (src/model/vision_*.c): the @vision entry of a
// vision-language model's module (ADR 0010).
#ifndef MLXCEL_MODEL_VISION_INTERNAL_H
#define MLXCEL_MODEL_VISION_INTERNAL_H

#include "model/graph_internal.h"

// Checks that ck holds every tensor @vision reads, with the shape cfg->vision implies and a float
// dtype. Errors name the tensor.
mx_status_t mx_vision_check_weights(const mx_model_config_t *cfg, const mx_checkpoint_t *ck);

// Builds public function @vision into cc->m (model.h, mx_graph_opts_t.media): the CLIP tower up
// to the feature layer, the class token dropped or kept, the projector.
mx_status_t mx_vision_build(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                            mx_comp_ctx_t *cc);

#endif  // MLXCEL_MODEL_VISION_INTERNAL_H
