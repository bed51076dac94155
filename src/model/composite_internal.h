// Internal to composite*.c: the shared call-site helper and the decomposition builder type.
#ifndef MLXCEL_MODEL_COMPOSITE_INTERNAL_H
#define MLXCEL_MODEL_COMPOSITE_INTERNAL_H

#include "mlxcel/composite.h"
#include "model/graph_internal.h"

// Builds the body of a decomposition function at b from its arguments; returns its one result.
typedef mx_status_t (*mx_decomp_fn)(mx_builder_t *b, const int32_t *args, const void *params,
                                    int32_t *result);

// Appends `stablehlo.composite name(operands) {composite_attributes = attrs, version = 1}` whose
// decomposition is built by `build(params)` the first time this (name, operand types, attr_key)
// is seen in the module, and reused afterwards. attr_key must identify the attributes (and
// anything else `params` changes in the body).
mx_status_t mx_comp_call(mx_comp_ctx_t *c, mx_builder_t *b, const char *name,
                         const int32_t *operands, int32_t n, const mx_named_attr_t *attrs,
                         int32_t n_attrs, const char *attr_key, mx_decomp_fn build,
                         const void *params, int32_t *out);

// Softmax over the last dimension (the key slots) of scores s, of the slots query t sees: slot k
// iff k <= pos0[b] + t, and k > pos0[b] + t - window when window > 0; the others -inf. t is
// s's dimension qdim, b its dimension 0 (pos0[B] i32). mx.attention's and mx.mla's mask.
mx_status_t mx_g_causal_softmax(mx_builder_t *b, int32_t s, int32_t pos0, int64_t qdim,
                                int64_t window, int32_t *out);
// The same with sink logits (s's shape less its last dimension; -1: none) in the max and the
// denominator (mx.attention's sinks, composite.h).
mx_status_t mx_g_causal_softmax_sink(mx_builder_t *b, int32_t s, int32_t pos0, int64_t qdim,
                                     int64_t window, int32_t sink, int32_t *out);
// The same with the slots where `also` (an i1 tensor of s's shape, or -1 for none) is true
// visible too, before the window applies: (causal OR also) AND window, transformers' order for
// Gemma 3's image blocks on sliding layers.
mx_status_t mx_g_masked_softmax(mx_builder_t *b, int32_t s, int32_t pos0, int64_t qdim,
                                int64_t window, int32_t also, int32_t sink, int32_t *out);

// The dequantized f32 weights [..., K] of stored w, scales [..., K / group][, biases] in format
// q (composite_quant.c: mx.linear's arithmetic, for every composite that reads packed weights;
// biases is read only with mode affine).
mx_status_t mx_comp_dequant(mx_builder_t *b, const mx_comp_quant_t *q, int32_t w, int32_t scales,
                            int32_t biases, int32_t *out);

#endif  // MLXCEL_MODEL_COMPOSITE_INTERNAL_H
