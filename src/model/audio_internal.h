// Internal interface of the audio towers (src/model/audio_*.c): the @audio entry of a model with
// an audio tower (ADR 0022).
#ifndef MLXCEL_MODEL_AUDIO_INTERNAL_H
#define MLXCEL_MODEL_AUDIO_INTERNAL_H

#include "model/graph_internal.h"
#include "model/vision_internal.h"

// Builds public function @audio into cc->m for o->audio_frames log-mel frames (model.h,
// mx_graph_opts_t.audio_frames): Gemma 3n's audio tower and embed_audio, padded to
// audio_soft_tokens_per_image rows. Checks the tower's tensors in ck first (errors name them);
// refuses a frame count whose tokens exceed audio_soft_tokens_per_image.
mx_status_t mx_audio_build(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                           const mx_graph_opts_t *o, mx_comp_ctx_t *cc);

// The audio tower's tensors (nothing without cfg->audio.present) into *l (mx_vlist_free).
mx_status_t mx_audio_list(const mx_model_config_t *cfg, mx_vlist_t *l);

#endif  // MLXCEL_MODEL_AUDIO_INTERNAL_H
