// Internal to the plan compiler (compile*.c): the compile context, the helpers every matcher
// uses and the matchers per concern. compile.c is the entry point (mx_cpu_compile): it walks the
// function's ops, offers each to the matchers (compile_f32.c, compile_lowp.c, compile_quant.c,
// compile_layout.c), falls back to the interpreter's kernels, then lays out memory
// (compile_memory.c) and elides barriers (compile_barriers.c).
#ifndef MX_CPU_COMPILE_INTERNAL_H
#define MX_CPU_COMPILE_INTERNAL_H

#include "cpu/plan_internal.h"

enum { MAX_ROPE_TABLES = 8, MAX_CONVERTS = 8 };

// A broadcast_in_dim whose readers are all f32 elementwise ops of its shape: no step writes it
// (its slot is SLOT_NONE); each reader, an ST_EW_BINARY (compile_f32.c) or the bias of an
// ST_GEMM_LOWP (compile_lowp.c), reads `src` through `rd` (step_ew_t.rd). src -1: none.
typedef struct lazy_bcast {
  int32_t src;
  ew_read_t rd;
} lazy_bcast_t;

typedef struct cctx {
  mx_cpu_plan_t *p;
  const mx_cpu_compile_opts_t *o;
  int32_t *n_uses;      // per value: uses by top-level ops and the return
  int32_t *dus_arg;     // per value: the argument an in-place dynamic_update_slice wrote, or -1
  lazy_bcast_t *bcast;  // per value: a broadcast not materialized (src -1: not one)
  int32_t op_index;     // the index in the body of the op being compiled
  int32_t *conv_of;     // per f32 value: the value holding it converted by the elementwise step
                        // that computed it (compile_lowp.c), or -1
  bool perturbed;       // test_perturb_op applied
  // RoPE tables emitted so far: {positions value, inv_freq value, table slot}.
  int32_t n_rope_tables;
  int32_t rope_tables[MAX_ROPE_TABLES][3];
  double rope_table_scale[MAX_ROPE_TABLES];  // the mx.rope scale each table's cos / sin carry
  // The latest f32 <-> bf16 / f16 converts emitted: {operand, result} (a ring), so a convert of
  // the same value to the same type reuses that result.
  int32_t n_converts;
  int32_t converts[MAX_CONVERTS][2];
} cctx_t;

static inline const mx_type_t *vtype(const mx_func_t *f, int32_t id) { return &f->values[id].type; }

static inline bool is_f32(const mx_type_t *t) {
  return t->kind == MX_TYPE_TENSOR && t->elem == MX_ELEM_F32 && !t->quant;
}
static inline bool is_i32(const mx_type_t *t) {
  return t->kind == MX_TYPE_TENSOR && t->elem == MX_ELEM_I32 && !t->quant;
}
static inline bool is_lowp(const mx_type_t *t) {
  return t->kind == MX_TYPE_TENSOR && !t->quant &&
         (t->elem == MX_ELEM_BF16 || t->elem == MX_ELEM_F16);
}

static inline size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

// Root slot of a value (follows views).
static inline int32_t root(const mx_cpu_plan_t *p, int32_t s) {
  return p->slots[s].kind == SLOT_VIEW ? p->slots[s].base : s;
}

static inline bool arg_is_weight(const cctx_t *c, int32_t i) {
  return c->p->weight_data[i] != NULL;
}

// Slot -> argument index when the value is a (root) weight argument, else -1.
static inline int32_t weight_arg(const cctx_t *c, int32_t v) {
  const mx_slot_t *s = &c->p->slots[v];
  if (s->kind != SLOT_ARG || !arg_is_weight(c, s->arg)) return -1;
  return s->arg;
}

// The bytes of a matmul weight: a weight argument, or a view into one (the gate or up rows of
// Phi-3's fused gate_up_proj are contiguous slices of it); NULL for any other value.
static inline const void *weight_bytes(const cctx_t *c, int32_t v) {
  const mx_slot_t *s = &c->p->slots[v];
  size_t off = 0;
  if (s->kind == SLOT_VIEW) {
    off = s->off;
    s = &c->p->slots[s->base];
  }
  if (s->kind != SLOT_ARG || !arg_is_weight(c, s->arg)) return NULL;
  return (const uint8_t *)c->p->weight_data[s->arg] + off;
}

// ---- Building steps and slots (compile.c) ----

// A zeroed step appended to the plan (*out valid until the next append).
mx_status_t mx_plan_add_step(mx_cpu_plan_t *p, mx_step_t **out);
// A new arena slot of nbytes for a value no op defines (a kernel's temporary).
mx_status_t mx_plan_add_temp(mx_cpu_plan_t *p, size_t nbytes, int32_t *slot);
// Value v becomes a view of src's bytes from off on.
void mx_plan_make_view(mx_cpu_plan_t *p, int32_t v, int32_t src, size_t off);
// A parallel step of `kind` reading in[0..n_in) and writing out.
mx_status_t mx_plan_simple_step(cctx_t *c, const mx_op_t *op, step_kind_t kind, const char *what,
                                const int32_t *in, int32_t n_in, int32_t out, mx_step_t **sp);
// dot_general(x, W) of types lt, rt -> ot contracting x's last dim with dim 1 of a rank-2 W,
// without batching dims: y[m, n] = x[m, k] W^T, none of m, n, k zero; or with W's dim 0 (*kn
// set: W is [k, n], y = x W, a matmul weight such as Gemma 3's mm_input_projection_weight).
bool mx_plan_dot_xwt(const mx_op_t *op, const mx_type_t *lt, const mx_type_t *rt,
                     const mx_type_t *ot, int64_t *m, int64_t *n, int64_t *k, bool *kn);
// gather of whole rows of a rank-2 table (type tt) by the indices (type it): an embedding lookup.
bool mx_plan_gather_is_rows(const mx_op_t *op, const mx_type_t *tt, const mx_type_t *it);

// ---- Matchers: each returns true when it emitted steps for op (*st set on error) ----

// f32 (compile_f32.c): matmuls against weights, embedding gathers, the composites' fused
// kernels (mx.rms_norm, mx.rope, mx.attention, mx.gated_mlp), elementwise add / sub / mul.
bool mx_plan_match_dot(cctx_t *c, const mx_op_t *op, mx_status_t *st);
bool mx_plan_match_embed(cctx_t *c, const mx_op_t *op, mx_status_t *st);
bool mx_plan_match_composite(cctx_t *c, const mx_op_t *op, mx_status_t *st);
bool mx_plan_match_ew(cctx_t *c, const mx_op_t *op, mx_status_t *st);
// An ST_GEMM step y[m, n] = x[m, k] W^T with W packed through the weights cache (kn: w holds
// W^T, [k, n]).
mx_status_t mx_plan_emit_gemm(cctx_t *c, const mx_op_t *op, int32_t x, const void *w, bool kn,
                              int64_t m, int64_t n, int64_t k, int32_t out, const char *what);
// *a: the shape and attributes of an mx.attention with f32 q and result, i32 pos0 and f32
// caches (lowp_kv: bf16 / f16 caches), with or without sinks; false when op is not one.
bool mx_plan_attention_shape(cctx_t *c, const mx_op_t *op, bool lowp_kv, step_attn_t *a);
// A decode mx.attention of shape *a split over the keys; false when the shapes need no split.
bool mx_plan_emit_attention_split(cctx_t *c, const mx_op_t *op, const step_attn_t *a,
                                  mx_status_t *st);
// mx.attention of shape *a as one ST_ATTENTION_KV step (fused_kv.h's driver; *st on error).
bool mx_plan_emit_attention_kv(cctx_t *c, const mx_op_t *op, const step_attn_t *a, mx_status_t *st);
// Low precision (compile_lowp.c): bf16 / f16 converts, linears, embeddings, MLPs, KV caches.
bool mx_plan_match_lowp(cctx_t *c, const mx_op_t *op, mx_status_t *st);
// Quantized weights (compile_quant.c): mx.linear, mx.embedding, mx.gated_act.
bool mx_plan_match_quant(cctx_t *c, const mx_op_t *op, mx_status_t *st);
// After every op is compiled: gate + up qgemvs and their mx.gated_act into ST_QGATED_UP steps.
void mx_plan_fuse_qgated(mx_cpu_plan_t *p);
// After every op is compiled: a one-row f32 RoPE whose only reader stores it in a KV cache in
// place writes it there itself (step_rope_t.cache_op); the store step goes.
void mx_plan_fuse_rope_cache(mx_cpu_plan_t *p);
// The quantized weight operands ops[0..n_ops) (w, scales[, biases]) of a composite carrying
// mx.linear's attributes (bits, group_size, mode), when they are weight arguments of a format the
// kernels take (compile_quant.c; mx.moe's quantized experts use it too).
bool mx_plan_quant_src(cctx_t *c, const mx_op_t *op, const int32_t *ops, int32_t n_ops,
                       mx_cpu_qsrc_t *q);
// Mixture of experts (compile_moe.c): mx.moe with f32 / bf16 / f16 expert weights.
bool mx_plan_match_moe(cctx_t *c, const mx_op_t *op, mx_status_t *st);
// Multi-latent attention (compile_mla.c): mx.mla with an f32 kv_b and f32 / bf16 / f16 caches.
bool mx_plan_match_mla(cctx_t *c, const mx_op_t *op, mx_status_t *st);
// Layout (compile_layout.c): views (no step), strided copies, in-place dynamic_update_slice.
bool mx_plan_match_view(cctx_t *c, const mx_op_t *op);
bool mx_plan_match_slice(cctx_t *c, const mx_op_t *op, mx_status_t *st);
bool mx_plan_match_transpose(cctx_t *c, const mx_op_t *op, mx_status_t *st);
bool mx_plan_match_broadcast(cctx_t *c, const mx_op_t *op, mx_status_t *st);
bool mx_plan_match_dus(cctx_t *c, const mx_op_t *op, mx_status_t *st);

// ---- After the steps are emitted ----

// Liveness of the arena slots and their first-fit offsets; allocates the arena unless it is
// external (compile_memory.c).
mx_status_t mx_plan_memory(mx_cpu_plan_t *p);
// X packed once per GEMM (compile_barriers.c): before mx_plan_memory, marks the GEMM steps that
// pack X and sizes the region; after mx_plan_barriers, lets a step reuse the last packed X.
void mx_plan_apack_size(mx_cpu_plan_t *p);
void mx_plan_apack_order(mx_cpu_plan_t *p);
// Which steps need a barrier before them (compile_barriers.c).
void mx_plan_barriers(mx_cpu_plan_t *p);

#endif  // MX_CPU_COMPILE_INTERNAL_H
