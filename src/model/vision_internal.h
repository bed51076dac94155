// Internal interface of the vision towers (src/model/vision_*.c): the @vision entry of a
// vision-language model's module (ADR 0010), and the pieces the towers share (vision_common.c).
#ifndef MLXCEL_MODEL_VISION_INTERNAL_H
#define MLXCEL_MODEL_VISION_INTERNAL_H

#include "model/graph_internal.h"

struct mx_vlist;  // a tower's tensor list (below)

// Checks that ck holds every tensor @vision reads, with the shape cfg->vision implies and a float
// dtype. Errors name the tensor.
mx_status_t mx_vision_check_weights(const mx_model_config_t *cfg, const mx_checkpoint_t *ck);

// Builds public function @vision into cc->m (model.h, mx_graph_opts_t.media): the CLIP tower up
// to the feature layer, the class token dropped or kept, the projector; the SigLIP tower and
// Gemma 3's pooled projector; the Qwen towers for the patch grid of o (vision_qwen.c).
mx_status_t mx_vision_build(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                            const mx_graph_opts_t *o, mx_comp_ctx_t *cc);

// The Qwen2-VL / Qwen2.5-VL / Qwen3-VL towers (vision_qwen.c): the same contract as the two above.
// The tower's tensors (qwen / molmo2: the list the check and the build read) into *out (the
// caller frees it with mx_vlist_free); ck NULL: the first naming layout (writers of checkpoints).
mx_status_t mx_vision_qwen_list(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                struct mx_vlist *out);
mx_status_t mx_vision_qwen_build(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                 const mx_graph_opts_t *o, mx_comp_ctx_t *cc);

// Molmo2's ViT and pooling adapter (vision_molmo2.c): the same contract, for the geometry of o
// (vision_grid_h crops, vision_grid_w tokens, vision_pool patches per token).
mx_status_t mx_vision_molmo2_list(const mx_model_config_t *cfg, struct mx_vlist *out);
mx_status_t mx_vision_molmo2_build(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                   const mx_graph_opts_t *o, mx_comp_ctx_t *cc);

// Qwen3-VL's learned position embeddings of a gh x gw patch grid (vision_pos_embed.c): table
// [rows, D] (a square grid of side floor(sqrt(rows))) resampled bilinearly with aligned corners
// as transformers does, for the N = gh * gw patches whose grid row / column are pos_h[p] /
// pos_w[p] (the tower's patch order); *out [1, N, D] f32.
mx_status_t mx_vision_pos_embed(mx_builder_t *b, int32_t table, int32_t rows, int32_t gh,
                                int32_t gw, const int32_t *pos_h, const int32_t *pos_w,
                                int32_t *out);

// ---- shared by the towers (vision_common.c) ----

enum { MX_VISION_MAX_NAME = 192 };

// One tensor a tower reads: its checkpoint name and the shape the config implies.
typedef struct mx_vspec {
  char name[MX_VISION_MAX_NAME];
  int32_t rank;
  int64_t dims[5];
} mx_vspec_t;

typedef struct mx_vlist {
  int32_t n, cap;
  mx_vspec_t *w;  // heap; mx_vlist_free
} mx_vlist_t;

// Every tensor of the model's tower (the list its check and build read; empty without a tower)
// into *out, freed with mx_vlist_free; ck NULL: the first naming layout (checkpoint writers).
mx_status_t mx_vision_list(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                           mx_vlist_t *out);

// Appends prefix + name with dims[0..rank) (rank <= 5) and sets *idx to its index (the argument
// order of @vision).
mx_status_t mx_vlist_add(mx_vlist_t *l, int32_t *idx, const char *prefix, const char *name,
                         int32_t rank, const int64_t *dims);
void mx_vlist_free(mx_vlist_t *l);
// Every tensor of l is in ck with its shape and a float dtype; errors name the tensor.
mx_status_t mx_vlist_check(const mx_vlist_t *l, const mx_checkpoint_t *ck);
// The first of prefixes[0..n) under which ck holds `probe` (prefixes[0] when none does, so that
// the missing tensor is named in the first layout).
const char *mx_vision_pick_prefix(const mx_checkpoint_t *ck, const char *const *prefixes, size_t n,
                                  const char *probe);
// Builds public function @vision with the weight arguments of l (role "weight"), then `input`
// (role "pixels"); *arg receives the value id of every argument (heap, [l->n + 1]; the caller
// frees it, also on failure).
mx_status_t mx_vision_func(mx_comp_ctx_t *cc, const mx_vlist_t *l, const mx_checkpoint_t *ck,
                           const mx_type_t *input, mx_builder_t *b, int32_t **arg);
// The same with n_inputs inputs after the weights: the pixels, then (Molmo2) the pooling
// indices (role "pooling").
mx_status_t mx_vision_func_n(mx_comp_ctx_t *cc, const mx_vlist_t *l, const mx_checkpoint_t *ck,
                             const mx_type_t *inputs, int32_t n_inputs, mx_builder_t *b,
                             int32_t **arg);

// LayerNorm over the last dimension: mx.rms_norm of the centred x, plus the bias (bias < 0:
// none, i.e. RMSNorm with center false).
mx_status_t mx_vision_norm(mx_comp_ctx_t *cc, mx_builder_t *b, int32_t x, int32_t w, int32_t bias,
                           bool center, double eps, int32_t *out);
// y = x . w^T (+ bias when bias >= 0).
mx_status_t mx_vision_linear(mx_builder_t *b, int32_t x, int32_t w, int32_t bias, int32_t *out);
// act(x) of f32 x: "quick_gelu" (x sigmoid(1.702 x)), "gelu" (exact, erf), "silu", "gelu_tanh"
// and its transformers name "gelu_pytorch_tanh" (the tanh approximation).
mx_status_t mx_vision_act(mx_builder_t *b, const char *act, int32_t x, int32_t *out);
// Full (bidirectional) multi-head attention of the tokens of one segment: q, k, v
// [1, N, Hh, Dh] f32 -> [1, N, Hh * Dh]; mx.attention over the tokens' own k and v laid out as
// a cache of capacity N with pos0 = N - 1, so every query's range is all N keys.
mx_status_t mx_vision_attention(mx_comp_ctx_t *cc, mx_builder_t *b, int32_t q, int32_t k, int32_t v,
                                int32_t *out);

#endif  // MLXCEL_MODEL_VISION_INTERNAL_H
