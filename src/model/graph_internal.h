// Internal interface of the model graph builders (src/model/graph*.c, llama*.c, composite*.c).
//
// A family file (llama.c, mistral.c, qwen.c, gemma.c, phi3.c; registered in family.c, see
// family.h) turns a config into an mx_arch_t: tensor names and shape facts plus the feature flags
// of the shared transformer core (graph_core.c), which builds @prefill and @decode from it.
// Composite call sites go through composite.c, which creates one private decomposition function per
// distinct (composite, operand types, attributes) and reuses it for every call site with that
// signature.
#ifndef MLXCEL_MODEL_GRAPH_INTERNAL_H
#define MLXCEL_MODEL_GRAPH_INTERNAL_H

#include "base/try.h"
#include "mlxcel/composite.h"
#include "mlxcel/model.h"

// ---- Architecture description (filled by a family file) ----

enum { MX_ARCH_MAX_ROPE_TABLES = 2 };

typedef struct core mx_core_t;  // the shared core building one function (graph_core.c)
struct mx_wlist;

typedef struct mx_arch {
  const mx_model_config_t *cfg;
  int32_t vocab, hidden, ffn, n_layers, n_heads, n_kv_heads, head_dim;
  double rms_eps;
  double norm_offset;     // 0: y * w; 1: y * (1 + w) (Gemma)
  double embed_scale;     // 0: none; else embeddings are multiplied by it (Gemma: sqrt(hidden))
  bool media_add;         // @prefill_media: the media rows are added to the image tokens'
                          // embeddings (Molmo2), not put in their place
  bool media_blocks;      // @prefill_media: each run of image tokens attends bidirectionally
                          // within itself (Gemma 3: mx.attention's blocks)
  bool qkv_bias;          // q/k/v projections have biases
  bool o_bias;            // o_proj has a bias
  bool mlp_bias;          // gate/up/down have biases
  bool qk_norm;           // RMSNorm over head_dim of q and k (per head), before RoPE
  bool tied;              // lm_head = embedding matrix
  bool sandwich_norm;     // Gemma 2/3: post_attention_layernorm normalizes the attention output
                          // before the residual add; pre_/post_feedforward_layernorm around MLP
  bool fused_qkv;         // Phi-3: one qkv_proj [(Hq + 2 Hkv) D, H], rows q, then k, then v
  bool fused_gate_up;     // Phi-3: one gate_up_proj [2F, H], gate rows first
  bool fused_up_first;    // ... Molmo2's ff_proj: the up rows first, then the gate rows
  bool norm_after;        // OLMo 2: no input norms; post_attention_layernorm normalizes the
                          // attention output and post_feedforward_layernorm the MLP output,
                          // each before its residual add
  bool qk_norm_flat;      // OLMo 2: q_norm [Hq D] / k_norm [Hkv D] over the whole projection
  bool layer_norm;        // every norm is LayerNorm (x - mean(x) normalized), not RMSNorm
  bool norm_bias;         // ... with a bias (<norm>.bias) after the weight
  bool parallel_block;    // Cohere, StableLM's use_parallel_residual: x + attn(h) + mlp(h),
                          // h = input_layernorm(x); no post_attention_layernorm
  bool plain_mlp;         // StarCoder2: down(act(up(x))) named mlp.c_fc / mlp.c_proj, no gate
  double residual_scale;  // 0: none; else attention / MLP outputs x it before the adds
  // Mixture of experts (n_experts 0: dense). A sparse layer's MLP is the router <block>gate,
  // softmax, top_k, [renormalized], mx.moe over <block>experts.<e>.<names>, plus Qwen2-MoE's
  // shared expert (<block>shared_expert.*, shared_ffn) x sigmoid(<block>shared_expert_gate h).
  int32_t n_experts, top_k, expert_ffn, shared_ffn;
  bool norm_topk;
  const char *moe_block;        // "mlp." or Mixtral's "block_sparse_moe."
  const char *expert_names[3];  // gate, up, down: "gate_proj"... or Mixtral's w1, w3, w2
  const uint8_t *layer_dense;   // cfg->layer_dense: a dense MLP of ffn on that layer
  // DeepSeek: the routing of mx.moe's optional attributes (scoring, choice bias
  // <block>gate.e_score_correction_bias, groups, routed scale; zeros: plain softmax routing),
  // and shared experts <block>shared_experts.* summed without a gate (shared_plain).
  // gpt-oss: the router is <block><router_name> ("gate" unless the family names it), with a
  // bias (router_bias); the experts' projections have biases (<block>experts.<e>.<name>.bias:
  // expert_bias); swiglu_limit > 0: the clamped SwiGLU (mx.moe's clamped_swiglu) instead of
  // `activation` in the experts.
  const char *router_name;
  bool router_bias, expert_bias;
  double swiglu_alpha, swiglu_limit;
  mx_moe_scoring_t moe_scoring;
  bool choice_bias;
  int32_t moe_groups, moe_topk_groups;
  mx_moe_group_rank_t moe_group_rank;
  double routed_scale;
  bool shared_plain;
  double logit_scale;  // 0: none; else logits x it (before any soft-cap)
  bool attn_sinks;     // gpt-oss: self_attn.sinks [n_heads], mx.attention's sinks
  // Multi-latent attention (DeepSeek; kv_lora 0: ordinary attention): q from q_proj, or
  // q_b_proj(q_a_layernorm(q_a_proj x)) when q_lora > 0; kv_a_proj_with_mqa gives the latent
  // (kv_lora, kv_a_layernorm) and the shared key's qk_rope dims; mx.mla expands through
  // kv_b_proj. Rotary dims are head_dim (= qk_rope); attn_scale includes YaRN's mscale^2.
  int32_t kv_lora, q_lora, qk_nope, qk_rope, v_dim;
  // Tensor names: prefix + "embed_tokens.weight", prefix + "layers.<l>. ...", prefix +
  // "norm.weight" and head_name. A family whose checkpoints come in several layouts lists
  // them in prefix_alts / head_alts; the first whose embedding is present is used.
  const char *prefix;     // "model."
  const char *head_name;  // "lm_head.weight"
  // Molmo2: the embedding continues past vocab with extra_vocab rows of a second table
  // (prefix + extra_embed_name), where its image tokens live; the head has vocab rows.
  int32_t extra_vocab;
  const char *extra_embed_name;
  const char *prefix_alts[3], *head_alts[3];
  // A family whose original files name tensors otherwise (EXAONE 3) lists {standard part,
  // original part} pairs, each replaced once, in order, in every standard name when the
  // checkpoint holds layout_probe (mx_arch_resolve_names then sets renamed).
  const char *const (*renames)[2];
  int32_t n_renames;
  const char *layout_probe;
  bool renamed;
  const char *activation;  // "silu" | "gelu_tanh"
  const char *rope_style;  // "half" | "interleaved"
  int32_t rotary_dim;      // R <= head_dim, even
  double attn_scale;       // multiplies q.k
  double attn_softcap;     // 0: none
  double final_softcap;    // 0: none
  // RoPE tables (host-computed inv_freq, R/2 floats each) and per-layer choices.
  int32_t n_rope_tables;
  float *inv_freq[MX_ARCH_MAX_ROPE_TABLES];  // heap, owned
  // YaRN / LongRoPE: cos and sin of a table's layers are multiplied by it (1: plain RoPE).
  double rope_attn_factor[MX_ARCH_MAX_ROPE_TABLES];
  // LongRoPE: table 0's long-factor version (heap, owned; NULL otherwise), used by graphs whose
  // KV capacity exceeds rope_long_above (the original context), as llama.cpp chooses; transformers
  // switches per forward call, which equals this whenever a sequence stays on one side.
  float *inv_freq_long;
  int64_t rope_long_above;
  int32_t *layer_rope;    // [n_layers] table index, -1: no RoPE (NoPE layer); heap, owned
  int32_t *layer_window;  // [n_layers] sliding window (0 = full attention); heap, owned
  // Gemma 3n. v_norm: RMSNorm without a weight over head_dim of v (per head). layer_ffn
  // [n_layers]: each layer's intermediate size (NULL: ffn; cfg's array). layer_kv_src
  // [n_layers]: the layer whose caches layer l attends over (NULL, or l: its own; another: l has
  // no k / v projections and writes no cache); heap, owned.
  bool v_norm;
  const int32_t *layer_ffn;
  int32_t *layer_kv_src;
  // A family whose weights go beyond the core's appends them to the list (NULL: none), after
  // the core's and before the final norm and head.
  mx_status_t (*more_weights)(const struct mx_arch *a, struct mx_wlist *wl);
  // A family whose layers are not the core's builds them (NULL: the core's layer loop): from
  // the scaled token embeddings x [B, T, H] f32 to the hidden state [B, T, H] f32 the final
  // norm and head read, with the mx_core_* pieces below.
  mx_status_t (*layers)(mx_core_t *c, int32_t x, int32_t *out);
  // A family whose ids of some ranges are embedded by other tables replaces their rows of the
  // scaled token embeddings x [B, T, H] f32 (NULL: none), before @prefill_media's media rows.
  mx_status_t (*embed_ids)(mx_core_t *c, int32_t x, int32_t *out);
} mx_arch_t;

// Fills *a from cfg for the family of cfg->model_type; MX_ERR_UNSUPPORTED for other families.
mx_status_t mx_arch_from_config(const mx_model_config_t *cfg, mx_arch_t *a);
void mx_arch_free(mx_arch_t *a);  // frees the owned arrays; accepts a zeroed struct

// Fills the description every family starts from (graph_arch.c): sizes; y*w norms;
// rotate-half RoPE over head_dim * partial_rotary_factor dims with one table (rope_theta,
// rope_scaling) for every layer; per-layer windows from cfg->layer_sliding and
// cfg->sliding_window; attention scale from query_pre_attn_scalar or head_dim; softcaps; tied
// head per config; silu or gelu_tanh from hidden_act; no biases, no q/k norm. The family files
// then change what is specific to them.
mx_status_t mx_arch_base(const mx_model_config_t *cfg, mx_arch_t *a);

// Picks a->prefix / a->head_name among the alternatives by what ck holds (no-op without any).
void mx_arch_resolve_names(mx_arch_t *a, const mx_checkpoint_t *ck);

// inv_freq[i] = theta^(-2i/R) for i < R/2, scaled per `scaling`, computed in double and rounded
// to float once. out: heap array of R/2 floats (caller frees).
// LongRoPE's short factors; mx_rope_inv_freq_long its long ones (the same table for other kinds).
mx_status_t mx_rope_inv_freq(double theta, int32_t rotary_dim, const mx_rope_scaling_t *scaling,
                             float **out);
mx_status_t mx_rope_inv_freq_long(double theta, int32_t rotary_dim,
                                  const mx_rope_scaling_t *scaling, float **out);

// ---- The weights a graph reads ----

typedef enum mx_wkind {
  MX_WK_OTHER = 0,  // norms, biases
  MX_WK_LINEAR,     // a matmul weight [N, K] (y = x W^T): quantizable
  MX_WK_EMBED,      // the embedding table [V, H] (quantizable; also the head when tied)
  MX_WK_QPARAM,     // scales / biases of a quantized weight (added by mx_wlist_resolve_quant)
  MX_WK_EXPERT,     // an expert's matmul weight [N, K] (mx.moe: converted and quantized like
                    // linears, one format per layer)
  MX_WK_GATE,       // a router or shared-expert gate [N, H], read in float (a stored-quantized
                    // one, as mlx-lm writes them, is dequantized at load)
  MX_WK_TABLE,      // a table read by a gather only (Gemma 3n's per-layer embeddings [V, L P]):
                    // kept in the checkpoint's type, a step reads one row per token
} mx_wkind_t;

typedef struct mx_wspec {
  char *name;  // heap
  int32_t rank;
  int64_t dims[2];  // as stored (packed dims for a quantized weight)
  mx_wkind_t kind;
  // Quantized storage, set by mx_wlist_resolve_quant (qmode 0: a float tensor).
  int32_t qmode;             // mx_q_mode_t of model/quant_internal.h
  int32_t qbits, qgroup;     // bits per value (8 or 4) and group size
  int64_t qn, qk;            // logical [N, K]
  int32_t qscales, qbiases;  // spec indices of the scales / biases (-1: none)
} mx_wspec_t;

// Weight indices of one decoder layer in the spec list (-1 when the layer has none).
typedef struct mx_layer_w {
  int32_t in_norm, q, k, v, o, q_b, k_b, v_b, o_b, q_norm, k_norm;
  int32_t post_norm, gate, up, down, gate_b, up_b, down_b;
  int32_t qkv, gate_up;               // fused projections (Phi-3)
  int32_t pre_ff_norm, post_ff_norm;  // sandwich norms (Gemma 2/3)
  int32_t in_norm_b, post_norm_b;     // LayerNorm biases (StarCoder2, StableLM)
  // A sparse MoE layer: the router [E, H], the experts' weights from `experts` on (gate, up,
  // down of expert 0, then of expert 1, ...), Qwen2-MoE's shared expert gate [1, H]; the
  // shared expert itself is gate / up / down.
  int32_t router, experts, shared_gate;
  int32_t router_bias;  // DeepSeek-V3's e_score_correction_bias [E]
  // gpt-oss: the router's bias [E], the experts' biases from expert_b on (gate_b [F], up_b [F],
  // down_b [H] of expert 0, then of expert 1, ...), the attention sinks [Hq].
  int32_t router_b, expert_b, sinks;
  // Multi-latent attention (q is q_proj when the query is not low-rank).
  int32_t q_a, q_a_bias, q_a_norm, q_b_proj, kv_a, kv_a_bias, kv_a_norm, kv_b_proj;
} mx_layer_w_t;

typedef struct mx_wlist {
  int32_t n, cap;
  mx_wspec_t *w;                                  // heap
  int32_t embed, final_norm, final_norm_b, head;  // final_norm_b: -1 unless norm_bias
  int32_t embed_extra;                            // the extra_vocab rows, -1 without
  mx_layer_w_t *layers;                           // [n_layers], heap
} mx_wlist_t;

// Lists every tensor the architecture reads, in argument order.
mx_status_t mx_arch_weights(const mx_arch_t *a, mx_wlist_t *out);
// Appends weight `suffix` (layer >= 0: "<prefix>layers.<layer>.<suffix>"; -1: "<prefix><suffix>";
// -2: `suffix` itself) of shape [d0] (rank 1) or [d0, d1] and kind `kind`; *idx its index.
mx_status_t mx_wlist_add(mx_wlist_t *wl, const mx_arch_t *a, int32_t *idx, int32_t rank, int64_t d0,
                         int64_t d1, int32_t layer, const char *suffix, mx_wkind_t kind);
// The index of the weight named `name`, -1 when the list has none.
int32_t mx_wlist_find(const mx_wlist_t *wl, const char *name);
void mx_wlist_free(mx_wlist_t *wl);
// Finds which linear / embedding weights ck holds quantized ("<x>.weight" with "<x>.scales"
// and, for MLX affine, "<x>.biases"), validates their packed shapes and dtypes, records the
// format in their specs (stored dims replace the logical ones) and appends the scales / biases
// to the list (graph_quant.c).
mx_status_t mx_wlist_resolve_quant(mx_wlist_t *wl, const mx_checkpoint_t *ck);

// ---- Composites ----

typedef struct mx_comp_entry mx_comp_entry_t;

// Dedupe table of the decomposition functions built so far for one module.
typedef struct mx_comp_ctx {
  mx_module_t *m;
  int32_t n, cap;
  mx_comp_entry_t *e;  // heap
} mx_comp_ctx_t;

void mx_comp_ctx_init(mx_comp_ctx_t *c, mx_module_t *m);
void mx_comp_ctx_free(mx_comp_ctx_t *c);

// Each appends one stablehlo.composite at b (building its decomposition on first use).
// rms_norm: x[B,T,H] f32, w[H] (any float type) -> [B,T,H] f32.
mx_status_t mx_comp_rms_norm(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t w, double eps,
                             double weight_offset, int32_t *out);
// rope: x[B,T,N,D] f32, pos[B,T] i32, inv_freq[R/2] f32 -> [B,T,N,D] f32.
mx_status_t mx_comp_rope(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t pos,
                         int32_t inv_freq, const char *style, int32_t rotary_dim, double scale,
                         int32_t *out);
// attention: q[B,T,Hq,D] f32, caches [B,Hkv,S,D] (any float type), pos0[B] i32 -> [B,T,Hq,D].
mx_status_t mx_comp_attention(mx_comp_ctx_t *c, mx_builder_t *b, int32_t q, int32_t k_cache,
                              int32_t v_cache, int32_t pos0, double scale, int64_t window,
                              double softcap, int32_t *out);
// The same with sinks[Hq] f32 (-1: none, the graph mx_comp_attention builds).
mx_status_t mx_comp_attention_sinks(mx_comp_ctx_t *c, mx_builder_t *b, int32_t q, int32_t k_cache,
                                    int32_t v_cache, int32_t pos0, int32_t sinks, double scale,
                                    int64_t window, double softcap, int32_t *out);
// The same with block ids blocks [B, T] i32 of the queries too (-1: none; composite.h).
mx_status_t mx_comp_attention_ex(mx_comp_ctx_t *c, mx_builder_t *b, int32_t q, int32_t k_cache,
                                 int32_t v_cache, int32_t pos0, int32_t sinks, int32_t blocks,
                                 double scale, int64_t window, double softcap, int32_t *out);
// gated_mlp: x[B,T,H] f32, w_gate[F,H], w_up[F,H], w_down[H,F] (any float type) -> [B,T,H].
mx_status_t mx_comp_gated_mlp(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t w_gate,
                              int32_t w_up, int32_t w_down, const char *activation, int32_t *out);

// moe (composite_moe.c, mx.moe): x[B,T,H] f32, router[E,H], experts (gate, up, down of
// expert 0, then of expert 1, ...) -> [B,T,H] f32. quant NULL: float experts, 3E operands;
// else each projection is its stored w, scales[, biases (affine)]: 6E or 9E operands.
mx_status_t mx_comp_moe(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t router,
                        const int32_t *experts, int32_t n_experts, const mx_comp_quant_t *quant,
                        const char *activation, int32_t top_k, bool norm_topk, int32_t *out);
// The same with every attribute of *a (composite.h: activation, top_k, the quantized format
// when a->quantized, DeepSeek's routing) and, when a->choice_bias, the choice bias operand
// bias[E] f32 (else -1), which goes after the experts' operands.
mx_status_t mx_comp_moe_ex(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t router,
                           const int32_t *experts, int32_t n_experts, int32_t choice_bias,
                           const mx_comp_moe_t *a, int32_t *out);
// The same with gpt-oss's router bias rbias[E] f32 (-1: none, a->router_bias 0) and experts'
// biases (NULL: none, a->expert_bias 0; else 3E f32 operands: gate_b[F], up_b[F], down_b[H] of
// expert 0, then of expert 1, ...).
mx_status_t mx_comp_moe_biased(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t router,
                               const int32_t *experts, int32_t n_experts, int32_t choice_bias,
                               int32_t router_bias, const int32_t *expert_bias,
                               const mx_comp_moe_t *a, int32_t *out);

// mla (composite_mla.c, mx.mla): q_nope[B,T,H,Dn], q_rot[B,T,H,Dr] f32, latent cache
// [B,1,S,R], rotated-key cache [B,1,S,Dr], kv_b[H (Dn + Dv), R], pos0[B] -> [B,T,H,Dv] f32.
mx_status_t mx_comp_mla(mx_comp_ctx_t *c, mx_builder_t *b, int32_t q_nope, int32_t q_rot,
                        int32_t latent_cache, int32_t rot_cache, int32_t kv_b, int32_t pos0,
                        double scale, int32_t *out);

// Quantized weights (composite_quant.c). w, scales[, biases] are the stored tensors of spec s.
// linear: x[..., K] f32 -> [..., N] f32 (`mx.linear`).
mx_status_t mx_comp_linear_q(mx_comp_ctx_t *c, mx_builder_t *b, const mx_wspec_t *s, int32_t x,
                             int32_t w, int32_t scales, int32_t biases, int32_t *out);
// embedding: tokens[B, T] i32 -> rows [B, T, K] f32 (`mx.embedding`).
mx_status_t mx_comp_embedding_q(mx_comp_ctx_t *c, mx_builder_t *b, const mx_wspec_t *s,
                                int32_t tokens, int32_t w, int32_t scales, int32_t biases,
                                int32_t *out);
// gated activation act(g) * u of f32 tensors of one shape (`mx.gated_act`), the middle of a
// gated MLP whose projections are quantized.
mx_status_t mx_comp_gated_act(mx_comp_ctx_t *c, mx_builder_t *b, int32_t g, int32_t u,
                              const char *activation, int32_t *out);
// 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) (composite_norm_mlp.c).
mx_status_t mx_g_gelu_tanh(mx_builder_t *b, int32_t g, int32_t *out);

// Linear layer of spec wi (w: value ids of the weight arguments): mx.linear when the weight is
// quantized, else mx_g_linear. rows >= 0: only rows [row0, row0 + rows) of W (a fused
// projection's part).
mx_status_t mx_gq_linear(mx_comp_ctx_t *c, mx_builder_t *b, const mx_wlist_t *wl, const int32_t *w,
                         int32_t wi, int32_t x, int64_t row0, int64_t rows, int32_t *out);
// True when spec wi is stored quantized.
bool mx_gq_is_quant(const mx_wlist_t *wl, int32_t wi);

// ---- Mixture of experts (graph_moe.c) ----

// The MoE fields of *a from cfg (after mx_arch_base): sizes, renormalization, the sparse layers,
// and the names most families use ("mlp.", gate_proj / up_proj / down_proj).
mx_status_t mx_arch_moe(const mx_model_config_t *cfg, mx_arch_t *a);
// True when layer l of a routes its MLP through experts.
bool mx_arch_layer_moe(const mx_arch_t *a, int32_t l);
// The routed experts of a sparse layer on h [B, T, H] f32: one mx.moe -> [B, T, H] f32.
mx_status_t mx_graph_moe(mx_comp_ctx_t *cc, mx_builder_t *b, const mx_arch_t *a,
                         const mx_wlist_t *wl, const int32_t *w, const mx_layer_w_t *lw, int32_t h,
                         int32_t *out);

// ---- The shared transformer core (graph_core.c) ----

// Builds public function `name` (T tokens per sequence; logits of all T positions when
// all_logits, else of the last one, shape [B, V]) into cc->m. o is normalized (batch >= 1,
// kv_dtype set); the weights were checked against ck.
mx_status_t mx_graph_build_func(const mx_arch_t *a, const mx_wlist_t *wl, const mx_checkpoint_t *ck,
                                const mx_graph_opts_t *o, mx_comp_ctx_t *cc, const char *name,
                                int32_t T, bool all_logits);

// @prefill_media (model.h, mx_graph_opts_t.media): @prefill of T tokens whose image-token
// positions take their embeddings from one more argument, the media rows [B, T, H] f32.
mx_status_t mx_graph_build_media_func(const mx_arch_t *a, const mx_wlist_t *wl,
                                      const mx_checkpoint_t *ck, const mx_graph_opts_t *o,
                                      mx_comp_ctx_t *cc, int32_t T, bool all_logits);
// Sets argument i's `mx.role` / `mx.name` attributes (and a weight's location) as the graph
// contract (model.h) has them, for arguments without a layer or an alias.
mx_status_t mx_graph_set_arg_attrs(mx_func_t *f, int32_t i, const char *role, const char *name);

// The core's pieces for a family's own layer loop (mx_arch_t.layers), on the function being
// built: its builder, composite table, architecture, weight list, the value of weight wi and
// of the tokens [B, T] i32; layer l's attention of h (its input norm applied; caches, RoPE and
// q / k / v norms as the arch says) -> o_proj's output; the arch's norm with weight wi; a linear
// layer of weight wi (quantized or not); layer l's MLP of h.
mx_builder_t *mx_core_builder(mx_core_t *c);
mx_comp_ctx_t *mx_core_comp(mx_core_t *c);
const mx_arch_t *mx_core_arch(const mx_core_t *c);
const mx_wlist_t *mx_core_wlist(const mx_core_t *c);
int32_t mx_core_weight(const mx_core_t *c, int32_t wi);
int32_t mx_core_tokens(const mx_core_t *c);
mx_status_t mx_core_attention(mx_core_t *c, int32_t l, int32_t h, int32_t *out);
mx_status_t mx_core_norm(mx_core_t *c, int32_t x, int32_t wi, int32_t *out);
mx_status_t mx_core_linear(mx_core_t *c, int32_t x, int32_t wi, int32_t *out);
mx_status_t mx_core_mlp(mx_core_t *c, int32_t l, int32_t h, int32_t *out);

// ---- Gemma 3n (graph_gemma3n.c) ----

// mx_arch_t.more_weights and .layers of Gemma 3n: per-layer inputs, AltUp, Laurel, the
// activation-sparse MLPs.
mx_status_t mx_gemma3n_weights(const mx_arch_t *a, struct mx_wlist *wl);
mx_status_t mx_gemma3n_layers(mx_core_t *c, int32_t x, int32_t *out);
// mx_arch_t.embed_ids of model_type gemma3n: embed_vision's and embed_audio's hard embeddings of
// the ids in their ranges (Gemma3nModel.forward), listed by mx_gemma3n_weights.
mx_status_t mx_gemma3n_embed_ids(mx_core_t *c, int32_t x, int32_t *out);

// ---- Small building helpers shared by the graph files (graph_ops.c) ----

// x converted to f32 (x itself when already f32).
mx_status_t mx_g_f32(mx_builder_t *b, int32_t x, int32_t *out);
// 1.0f where the i1 tensor cond holds, else 0.0f, as a select of two splats: the form of a 0 / 1
// operand of a dot_general, because IREE 3.13 fails to compile a vector-matrix product whose
// operand is a convert of an i1 (docs/portability.md, "IREE 3.13 defects").
mx_status_t mx_g_indicator(mx_builder_t *b, int32_t cond, int32_t *out);
// concatenate of xs[0..n) (n >= 1) along dim, in groups of at most 8 operands: the cpu runtime's
// step limit, past which it hands the whole entry to the interpreter. Overwrites xs.
mx_status_t mx_g_concat(mx_builder_t *b, int32_t *xs, int32_t n, int64_t dim, int32_t *out);
// Scalar constant of type et broadcast to `like`'s shape.
mx_status_t mx_g_full_like(mx_builder_t *b, mx_elem_type_t et, double v, int32_t like,
                           int32_t *out);
// x (lower rank) broadcast to the shape of `like` (element type of x) with dims map bdims.
mx_status_t mx_g_bcast_like(mx_builder_t *b, int32_t x, int32_t like, const int64_t *bdims,
                            int32_t *out);
// y[..., N] = x[..., K] . w[N, K]^T, f32. An f16 / bf16 w multiplies x converted to its type
// (f32 accumulation: dot_general(bf16, bf16) -> f32); any other w is converted to f32.
mx_status_t mx_g_linear(mx_builder_t *b, int32_t x, int32_t w, int32_t *out);
// y[..., N] = x[..., K] . w[K, N] (a matmul weight, stored as the transpose of a linear's), as
// mx_g_linear: one dot_general contracting w's dim 0, which the cpu runtime packs as it packs a
// linear's (a transpose op in the graph would make the weight a computed value, which its GEMM
// matchers do not take).
mx_status_t mx_g_matmul_w(mx_builder_t *b, int32_t x, int32_t w, int32_t *out);
// x + bias broadcast along the last dimension (bias converted to f32 when needed).
mx_status_t mx_g_add_bias(mx_builder_t *b, int32_t x, int32_t bias, int32_t *out);
mx_status_t mx_g_reshape(mx_builder_t *b, int32_t x, int32_t rank, const int64_t *dims,
                         int32_t *out);
// softmax of f32 x over its last dimension (max-subtracted; a row of -inf but one finite value
// is fine, an all -inf row is NaN).
mx_status_t mx_g_softmax_last(mx_builder_t *b, int32_t x, int32_t *out);
// x - mean(x) over the last dimension (f32): LayerNorm is mx.rms_norm of it.
mx_status_t mx_g_center(mx_builder_t *b, int32_t x, int32_t *out);
// mean(x) over the last dimension of f32 x [..., N] -> [...] (a dot_general with ones: no
// reduce region, which the cpu runtime would hand to the interpreter).
mx_status_t mx_g_mean_last(mx_builder_t *b, int32_t x, int32_t *out);
// v rounded to element type dt (f32, f16, bf16; f64 unchanged), as a scale the checkpoint's
// framework keeps in the weights' dtype.
double mx_g_round_to(mx_elem_type_t dt, double v);
// Block ids [B, T] i32 of the runs of token_id in tokens [B, T] i32: the k-th maximal run of
// the row (from 0) gets k, every other token -1 (mx.attention's blocks operand; a run is what
// transformers' token_type_ids make one image block).
mx_status_t mx_g_run_ids(mx_builder_t *b, int32_t tokens, int32_t token_id, int32_t *out);
// Block ids [B, T] i32 that give every token lo <= t <= hi id 0 and the others -1: one block of
// all of them, whatever lies between (Molmo2's image tokens: each sees every other, ADR 0023).
mx_status_t mx_g_range_ids(mx_builder_t *b, int32_t tokens, int32_t lo, int32_t hi, int32_t *out);
// erf(x) of f32 x as a rational function of x clamped to [-4, 4] (StableHLO has no erf; chlo's
// is not portable): within 5e-7 of erf everywhere, for the exact GELU.
mx_status_t mx_g_erf(mx_builder_t *b, int32_t x, int32_t *out);

#endif  // MLXCEL_MODEL_GRAPH_INTERNAL_H
