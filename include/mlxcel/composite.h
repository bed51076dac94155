// The composite contract (v1): the names of the mx.* composites the graph builders emit, one
// attribute struct per composite, and for each one function that writes its attributes and one
// that reads them. The graph builders (src/model/composite_*.c) write through this header; the
// CPU plan compiler (src/cpu/) and any other backend read through it, so an attribute's name and
// encoding are spelled once. Operands, shapes and semantics: each composite's decomposition
// (src/model/composite_*.c), which the reference interpreter runs; docs/architecture.md says
// where a new composite goes. Changing a contract is an ADR and a version bump
// (MX_COMPOSITE_VERSION).
//
// Ownership: writers fill caller-provided mx_named_attr_t arrays whose strings live in the
// module's arena (mx_attr_string); readers only read the op and copy plain values out.
#ifndef MLXCEL_COMPOSITE_H
#define MLXCEL_COMPOSITE_H

#include <stdbool.h>
#include <stdint.h>

#include "mlxcel/hlo.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MX_COMPOSITE_RMS_NORM "mx.rms_norm"
#define MX_COMPOSITE_ROPE "mx.rope"
#define MX_COMPOSITE_ATTENTION "mx.attention"
#define MX_COMPOSITE_GATED_MLP "mx.gated_mlp"
// Quantized weights (docs/quantization.md).
#define MX_COMPOSITE_LINEAR "mx.linear"
#define MX_COMPOSITE_EMBEDDING "mx.embedding"
#define MX_COMPOSITE_GATED_ACT "mx.gated_act"
// Mixture of experts: the router, top-k routing and the selected experts' gated MLPs.
#define MX_COMPOSITE_MOE "mx.moe"
// Multi-latent attention (DeepSeek-V2 / V3) over a cache of latents and rotated keys (ADR 0012).
#define MX_COMPOSITE_MLA "mx.mla"

// The `version` every composite of this contract carries.
enum { MX_COMPOSITE_VERSION = 1 };
// The most attributes a composite of this contract has (size of the writers' arrays).
enum { MX_COMPOSITE_MAX_ATTRS = 16 };

typedef enum mx_composite_kind {
  MX_COMPOSITE_NONE = 0,  // not a composite of this contract
  MX_COMPOSITE_KIND_RMS_NORM,
  MX_COMPOSITE_KIND_ROPE,
  MX_COMPOSITE_KIND_ATTENTION,
  MX_COMPOSITE_KIND_GATED_MLP,
  MX_COMPOSITE_KIND_LINEAR,
  MX_COMPOSITE_KIND_EMBEDDING,
  MX_COMPOSITE_KIND_GATED_ACT,
  MX_COMPOSITE_KIND_MOE,
  MX_COMPOSITE_KIND_MLA,
} mx_composite_kind_t;

// The activation of mx.gated_mlp / mx.gated_act (attribute `activation`: "silu", "gelu_tanh"),
// and of mx.moe, which also takes "clamped_swiglu" (gpt-oss: see mx_comp_moe_t).
typedef enum mx_activation {
  MX_ACT_SILU = 0,
  MX_ACT_GELU_TANH = 1,
  MX_ACT_CLAMPED_SWIGLU = 2,  // mx.moe only
} mx_activation_t;
// The pairing of mx.rope (attribute `style`: "half" = Hugging Face rotate-half, "interleaved").
typedef enum mx_rope_style { MX_ROPE_HALF = 0, MX_ROPE_INTERLEAVED = 1 } mx_rope_style_t;
// The quantization of mx.linear / mx.embedding (attribute `mode`: "int8", "int4", "affine"; the
// symmetric schemes are int8 and int4). Same values as src/cpu/kernels_q.h's MX_CPU_Q_*.
// "mxfp4" (OCP microscaling FP4, gpt-oss's experts; mx.moe only): w ui8 [N, K / 2], two e2m1
// values per byte (element 2i the low nibble, 2i + 1 the high one; codes 0..7 are 0, 0.5, 1,
// 1.5, 2, 3, 4, 6, codes 8..15 their negatives), scales ui8 [N, K / 32], e8m0: 2^(s - 127);
// bits 4, group_size 32.
typedef enum mx_qmode {
  MX_QMODE_INT8 = 1,
  MX_QMODE_INT4 = 2,
  MX_QMODE_AFFINE = 3,
  MX_QMODE_MXFP4 = 4,
} mx_qmode_t;

typedef struct mx_comp_rms_norm {
  double eps;
  double weight_offset;  // 0, or 1 for Gemma's (1 + w)
} mx_comp_rms_norm_t;

typedef struct mx_comp_rope {
  mx_rope_style_t style;
  int64_t rotary_dim;  // R <= head dim, even
  double scale;        // cos and sin are multiplied by it (YaRN / LongRoPE); optional, 1
} mx_comp_rope_t;

// mx.attention with attribute sinks 1 (gpt-oss) takes one more operand, the last: sinks[Hq]
// f32, a learned logit per query head that joins the softmax's denominator only: query head h's
// weights are exp(s_i - m) / (sum_j exp(s_j - m) + exp(sinks[h] - m)), m the largest of its
// visible scores and sinks[h] (the weights no longer sum to 1; no value goes with the sink).
typedef struct mx_comp_attention {
  double scale;
  int64_t window;  // 0: none
  double softcap;  // 0: none
  bool sinks;      // attribute sinks: 0 or 1; absent: 0
  // Bidirectional blocks (Gemma 3's and Molmo2's image tokens; attribute `blocks`, written only
  // when set): the last operand (after sinks) is block ids [B, T] i32 of the call's T queries, -1
  // for none. Query t also sees the keys of this call's tokens with its own id >= 0 (at positions
  // pos0 + j), within the window. Gemma 3 gives each image's run its own id (a query's keys stay
  // one range); Molmo2 gives all its image tokens one id, so with text between images a query
  // sees its causal range and the later runs of its id, not the text between them.
  bool blocks;
} mx_comp_attention_t;

typedef struct mx_comp_gated {
  mx_activation_t activation;
} mx_comp_gated_t;  // mx.gated_mlp and mx.gated_act

// mx.moe operands: x[B, T, H] f32, router[E, H], then per expert e < E its gate[F, H],
// up[F, H], down[H, F] (the experts of one float type; the router of any). Result [B, T, H]
// f32: per token, p = softmax(x router^T) (a linear layer: x in the router's type when that is
// bf16 / f16, f32 accumulation), the top_k experts by p (the lowest index first among equal
// values), their weights w = p (divided by their sum when norm_topk), and the sum over them of
// w * down_e(act(gate_e x) * up_e x), each product in the experts' type as a linear layer.
// Quantized experts (attributes bits, group_size and mode present, as mx.linear's): each of
// gate, up and down is instead its stored triple w, scales[, biases] (biases with mode affine
// only), so an expert is 6 or 9 operands, and each product is mx.linear's: x . dequant(w)^T.
//
// DeepSeek's routing, optional attributes (absent: the rule above). scoring "sigmoid": the scores
// s are sigmoid(x router^T) instead of the softmax. choice_bias 1: one more operand after the
// experts (after their quantized triples too), bias[E] f32, added to s for the choice only
// (c = s + bias; c = s without it). n_group
// G > 1 with topk_group < G: the E experts form G consecutive groups, each group ranked by the
// largest c in it (group_rank "max") or the sum of its two largest (group_rank "top2_sum"), the
// topk_group best groups kept (the lowest index first among equal ranks) and every expert of the
// other groups left out of the choice. Then the top_k experts by c among those left (the lowest
// index first), weights w = s of the chosen (not c), divided by their sum when norm_topk, times
// routed_scale.
//
// gpt-oss, optional attributes (absent: none of this). router_bias 1: one more operand after the
// experts (and after the choice bias), rbias[E] f32, added to the router's logits before the
// softmax (gpt-oss takes the softmax of the top-k logits, which is the renormalized top k of
// this softmax: norm_topk 1). expert_bias 1: 3E more operands after that, per expert e its
// biases gate_b[F], up_b[F], down_b[H] f32, added to its gate, up and down products. Activation
// "clamped_swiglu" (attributes swiglu_alpha and swiglu_limit L > 0 required): with
// g = min(gate, L) and u = clamp(up, -L, L), act = (u + 1) * (g * sigmoid(swiglu_alpha * g)).

typedef struct mx_comp_quant {
  int64_t bits;
  int64_t group_size;
  mx_qmode_t mode;
} mx_comp_quant_t;  // mx.linear and mx.embedding

typedef enum mx_moe_scoring { MX_MOE_SOFTMAX = 0, MX_MOE_SIGMOID = 1 } mx_moe_scoring_t;
typedef enum mx_moe_group_rank {
  MX_MOE_GROUP_MAX = 0,
  MX_MOE_GROUP_TOP2_SUM = 1
} mx_moe_group_rank_t;

typedef struct mx_comp_moe {
  mx_activation_t activation;
  int64_t top_k;   // 1 <= top_k <= E
  bool norm_topk;  // attribute norm_topk: 0 or 1
  bool quantized;  // the experts' format is `quant` (else float; no such attributes)
  mx_comp_quant_t quant;
  mx_moe_scoring_t scoring;           // attribute scoring ("softmax", "sigmoid"); absent: softmax
  bool choice_bias;                   // attribute choice_bias: 0 or 1; absent: 0
  int64_t n_group, topk_group;        // attributes n_group, topk_group; absent: 0 (no groups)
  mx_moe_group_rank_t group_rank;     // attribute group_rank ("max", "top2_sum"); absent: max
  double routed_scale;                // attribute routed_scale; absent (0 for the writer): 1
  bool router_bias;                   // attribute router_bias: 0 or 1; absent: 0
  bool expert_bias;                   // attribute expert_bias: 0 or 1; absent: 0
  double swiglu_alpha, swiglu_limit;  // activation clamped_swiglu only
} mx_comp_moe_t;

// mx.mla operands: q_nope[B, T, H, Dn] f32, q_rot[B, T, H, Dr] f32 (rotated), latent cache
// [B, 1, S, R], rotated-key cache [B, 1, S, Dr] (any float type), kv_b[H (Dn + Dv), R] (any
// float type; per head h its rows h (Dn + Dv) .. + Dn expand the latent into the nope key, the
// next Dv rows into the value), pos0[B] i32. Result [B, T, H, Dv] f32: query t of sequence b
// (at position pos0[b] + t) sees cache slots s <= pos0[b] + t; its score of slot s is
// scale * (q_nope . (kv_b_k latent_s) + q_rot . rot_s), softmax over the visible slots, and
// the output the softmax-weighted sum of the values kv_b_v latent_s.
typedef struct mx_comp_mla {
  double scale;
} mx_comp_mla_t;

// The composite an op is (its `name` attribute), MX_COMPOSITE_NONE for any other op. Says
// nothing of its operands or attributes.
mx_composite_kind_t mx_composite_kind(const mx_op_t *op);
// The op's `version` attribute, 0 when absent.
int64_t mx_composite_version(const mx_op_t *op);

// Names of the enum values as written in the graph; NULL for a value out of range.
const char *mx_activation_name(mx_activation_t a);
const char *mx_rope_style_name(mx_rope_style_t s);
const char *mx_qmode_name(mx_qmode_t m);
// The enum value a name stands for; false for a name the contract does not know.
bool mx_activation_parse(const char *name, mx_activation_t *out);
bool mx_rope_style_parse(const char *name, mx_rope_style_t *out);

// Writers: fill attrs[0..n) (n returned, at most MX_COMPOSITE_MAX_ATTRS) with the composite's
// `composite_attributes`; string values are allocated in m's arena (an allocation failure shows
// as mx_attr_is_oom on that attribute, as for every mx_attr_* constructor).
int32_t mx_comp_rms_norm_write(mx_module_t *m, const mx_comp_rms_norm_t *a, mx_named_attr_t *attrs);
int32_t mx_comp_rope_write(mx_module_t *m, const mx_comp_rope_t *a, mx_named_attr_t *attrs);
int32_t mx_comp_attention_write(mx_module_t *m, const mx_comp_attention_t *a,
                                mx_named_attr_t *attrs);
int32_t mx_comp_gated_write(mx_module_t *m, const mx_comp_gated_t *a, mx_named_attr_t *attrs);
int32_t mx_comp_quant_write(mx_module_t *m, const mx_comp_quant_t *a, mx_named_attr_t *attrs);
int32_t mx_comp_moe_write(mx_module_t *m, const mx_comp_moe_t *a, mx_named_attr_t *attrs);
int32_t mx_comp_mla_write(mx_module_t *m, const mx_comp_mla_t *a, mx_named_attr_t *attrs);

// Readers: *a from the op's `composite_attributes`; false when a required attribute is missing,
// has the wrong kind or names a value the contract does not know (a backend then runs the
// decomposition). Optional attributes (attention's window and softcap) default to 0, rope's scale
// to 1. Float
// attributes may be written as integers. Readers do not check the op's name or operands.
bool mx_comp_rms_norm_read(const mx_op_t *op, mx_comp_rms_norm_t *a);
bool mx_comp_rope_read(const mx_op_t *op, mx_comp_rope_t *a);
bool mx_comp_attention_read(const mx_op_t *op, mx_comp_attention_t *a);
bool mx_comp_gated_read(const mx_op_t *op, mx_comp_gated_t *a);
bool mx_comp_quant_read(const mx_op_t *op, mx_comp_quant_t *a);
bool mx_comp_moe_read(const mx_op_t *op, mx_comp_moe_t *a);  // top_k >= 1, norm_topk 0 / 1
bool mx_comp_mla_read(const mx_op_t *op, mx_comp_mla_t *a);

#ifdef __cplusplus
}
#endif

#endif  // MLXCEL_COMPOSITE_H
