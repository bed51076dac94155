// Internal contract between the plan compiler (compile*.c), the packed-weight cache (weights.c)
// and the executor (exec.c, plan_lowp.c).
#ifndef MX_CPU_PLAN_INTERNAL_H
#define MX_CPU_PLAN_INTERNAL_H

#include "base/try.h"
#include "cpu/fused.h"
#include "cpu/kernels_q.h"
#include "cpu/mla.h"
#include "cpu/stream_alloc.h"
#include "mlxcel/cpu_lowp.h"
#include "mlxcel/cpu_plan.h"

// Where a slot's bytes live.
typedef enum slot_kind {
  SLOT_NONE = 0,  // unused (nested region values)
  SLOT_ARG,       // function argument `arg`, bound per run
  SLOT_ARENA,     // arena + off
  SLOT_CONST,     // plan-owned constant data
  SLOT_VIEW,      // bytes of slot `base` (a root: ARG, ARENA or CONST) + off
} slot_kind_t;

typedef struct mx_slot {
  slot_kind_t kind;
  int32_t arg;     // SLOT_ARG
  int32_t base;    // SLOT_VIEW: root slot
  size_t off;      // SLOT_ARENA / SLOT_VIEW: byte offset
  size_t nbytes;   // size of the value
  uint8_t *cdata;  // SLOT_CONST (owned by the plan)
  int32_t def;     // step defining it (-1: before the first step)
  int32_t last;    // last step reading it (INT32_MAX: a function result)
} mx_slot_t;

typedef enum step_kind {
  ST_GEMM = 0,      // y[m, n] = x[m, k] W^T (packed w)
  ST_EMBED,         // rows of an f32 embedding table
  ST_RMS_NORM,      // out = rms_norm(in[0]) * in[1]
  ST_ROPE,          // out = rope(in[0]); in[3], when present: the cos / sin table
  ST_ROPE_TABLE,    // out = cos / sin of pos in[0] x inv_freq in[1] (shared by the RoPEs)
  ST_ADD_RMS_NORM,  // out[0] = in[0] + in[1], out[1] = rms_norm(out[0]) * in[2]
  ST_GATED_ACT,     // out[0] = act(in[0]) * in[1] (mx.gated_act of quantized MLPs)
  ST_GATED_UP,      // out[1] = x w^T, out[2] = x w2^T, out[0] = act(out[1]) * out[2]
  ST_ATTENTION,     // mx.attention over f32 caches
  ST_EW_BINARY,     // f32 add / subtract / multiply / divide
  ST_EW_UNARY,      // f32 tanh / logistic (ew.n elements, ew.op)
  ST_ROW_DOT,       // out[r] = in[0][r, :] . in[1] (ew.n rows of row_k elements)
  ST_DUS_INPLACE,   // dynamic_update_slice into a buffer the result aliases
  ST_TRANSPOSE,     // strided copy of 4-byte elements (transpose, slice)
  ST_FALLBACK,      // interpreter kernel on views (serial)
  ST_CALL,          // composite decomposition / func.call through mx_interp_run (serial)
  ST_WHOLE,         // the whole function through mx_interp_run (serial)
  ST_QGEMM,         // y[m, n] = x[m, k] W^T, W quantized (qw; kernels_q.h)
  ST_QEMBED,        // dequantized rows of a quantized table (qsrc)
  ST_QGATED_UP,     // out[1] = x qw^T, out[2] = x qw2^T, out[0] = act(out[1]) * out[2] (one row)
  ST_PERTURB,       // testing (test_perturb_op): out[0] first f32 element += 1 (serial)
  // Low-precision steps (compile_lowp.c, executed by plan_lowp.c):
  ST_CONVERT,       // out = convert(in), f32 <-> bf16 / f16
  ST_GEMM_LOWP,     // y[m, n] f32 = x[m, k] W^T (+ in[1][n] when n_in is 2: the bias add
                    // that followed the dot_general), x and W bf16 / f16 (packed: wl)
  ST_EMBED_ROWS,    // rows of a bf16 / f16 table
  ST_ATTENTION_KV,  // ST_ATTENTION over bf16 / f16 caches
  // Decode (one row) of a bf16 / f16 mx.gated_mlp between its convert of x and its down
  // projection: out[1] = x wl^T, out[2] = x wl2^T, out[3] = act(out[1]) * out[2] (f32) and
  // out[0] = out[3] converted to the weights' type (gemm.act; wl->et), chunk by chunk.
  ST_GATED_UP_LOWP,
  // Decode attention split over the keys (fused_kv.h): ST_ATTN_SPLIT writes the pieces' states
  // (out[0], a temp), ST_ATTN_MERGE combines them into the result.
  ST_ATTN_SPLIT,
  ST_ATTN_MERGE,
  // mx.moe (compile_moe.c, executed by moe.c), reading only the selected experts' weights:
  ST_MOE_ROUTE,    // routes each token, groups the (token, k) pairs by expert, gathers their
                   // x rows (serial)
  ST_MOE_UP,       // act(gate_e x) * up_e x of every gathered row, by expert or by panels
  ST_MOE_DOWN,     // down_e of every row's activation
  ST_MOE_COMBINE,  // out[token] = sum over k of wts[k] * its row's result
  ST_MLA,          // mx.mla, the absorbed form over the latent caches (mla.h)
  ST_BATCH_DOT,    // f32 dot_general of two values, one contracting dim, any batching dims
} step_kind_t;

// The router and experts of one mx.moe (owned by its ST_MOE_ROUTE step, shared by the three
// after it). Rows: the R = M * K (token, k) pairs, grouped by expert; the `meta` temp (moe.c)
// holds the routing and the grouping.
typedef struct mx_cpu_moe {
  int64_t n_experts, k, m, h, f;  // E, K, tokens M, hidden H, expert width F
  int act;                        // mx_activation_t
  bool norm_topk;
  bool rows_as_gemv;         // every row through the GEMVs (mx_cpu_compile_opts_t.rows_as_gemv)
  mx_elem_type_t et;         // the experts' type: F32 (also for quantized), or BF16 / F16
  bool quant;                // quantized experts (q), which take f32 rows
  const void *router;        // [E, H] weight argument bytes
  mx_elem_type_t router_et;  // F32, BF16 or F16
  int64_t router_bytes;      // bytes of one router element
  // DeepSeek's routing (mx.moe's optional attributes; zeros / NULL: the softmax routing).
  bool sigmoid;       // scores = sigmoid(logits)
  const float *bias;  // [E] choice bias argument bytes, NULL: none
  int64_t n_group, topk_group;
  bool group_top2;     // a group's rank: the sum of its two best, else its best
  float routed_scale;  // 0: 1
  // gpt-oss (mx.moe's optional attributes; NULL / 0: none): the router's bias [E], each
  // expert's gate, up and down biases ([3E] f32 weight argument bytes), the clamped SwiGLU's
  // alpha and limit (act MX_ACT_CLAMPED_SWIGLU).
  const float *router_bias;
  const float **ebias;
  float swiglu_alpha, swiglu_limit;
  const mx_cpu_packed_t **w;        // [3E] gate, up, down of each expert (f32)
  const mx_cpu_packed_lowp_t **wl;  // [3E] the same, lowp
  const mx_cpu_qpacked_t **q;       // [3E] the same, quantized (owned by the weight cache)
  // MXFP4 experts (composite.h), read as stored: [3E] pairs (blocks u8 [N, K / 2], scales u8
  // [N, K / 32]) of weight argument bytes, at fp4[2 (3e + j)] and fp4[2 (3e + j) + 1].
  bool mxfp4;
  const uint8_t **fp4;
  float (*fp4_pair)[2];  // [256]: the e2m1 values of a byte's low and high nibbles
} mx_cpu_moe_t;

enum { STEP_MAX_IN = 8, STEP_MAX_OUT = 4 };

// How X reaches the microkernel of an ST_GEMM / ST_GATED_UP step with m > 1 (compile_barriers.c
// plan_apack_*, exec.c step_apack).
enum { APACK_NONE = 0, APACK_PACK = 1, APACK_REUSE = 2 };

// The parameters of each step kind (mx_step_t's union, named after the kinds that use it).
typedef struct step_gemm {  // ST_GEMM, ST_GATED_UP, ST_GEMM_LOWP
  int64_t m, n, k;
  bool rows_as_gemv;   // one GEMV per row (mx_cpu_compile_opts_t.rows_as_gemv)
  int act;             // ST_GATED_UP, ST_GATED_UP_LOWP: mx_activation_t
  int apack;           // APACK_*
  bool apack_barrier;  // APACK_PACK: a barrier before packing (the region may still be read)
} step_gemm_t;

typedef struct step_rows {  // ST_EMBED, ST_EMBED_ROWS: out[i] = table[ids[i]]
  int64_t vocab, h, n;      // table rows, row length, ids
  int64_t elem_bytes;       // ST_EMBED_ROWS: bytes of a table element
} step_rows_t;

typedef struct step_norm {  // ST_RMS_NORM, ST_ADD_RMS_NORM
  int64_t rows, h;
  float eps, weight_offset;
} step_norm_t;

typedef struct step_rope {  // ST_ROPE
  int64_t rows;             // B * T
  int64_t heads, head_dim, rotary_dim;
  int style;  // mx_rope_style_t
  // Non-NULL: the in-place dynamic_update_slice this RoPE writes through (compile_layout.c,
  // mx_plan_fuse_rope_cache): one row, written straight into the cache at the slice's start;
  // its start indices are in[n_rope_in..n_in), and nothing is written to out (n_out = 0).
  const mx_op_t *cache_op;
  int32_t n_rope_in;
} step_rope_t;

typedef struct step_rope_table {  // ST_ROPE_TABLE: [rows, half] cos / sin pairs
  int64_t rows, half;
  float scale;  // multiplies cos and sin (mx.rope's scale)
} step_rope_table_t;

typedef struct step_attn {  // ST_ATTENTION, ST_ATTENTION_KV, ST_ATTN_SPLIT
  int64_t b, t, hq, hkv, s, d, window;
  bool blocks;        // the last input holds mx.attention's block ids [B, T]
  mx_elem_type_t kv;  // ST_ATTENTION_KV, ST_ATTN_SPLIT: the caches' element type
  int64_t parts;      // ST_ATTN_SPLIT: pieces of the keys
  float scale, softcap;
  bool sinks;  // ST_ATTENTION_KV: in[4] is mx.attention's sinks [hq] (only that step takes them)
} step_attn_t;

typedef struct step_merge {  // ST_ATTN_MERGE
  int64_t rows, d, parts;
  int64_t hq;  // sinks: in[1] holds mx.attention's sinks [hq]
  bool sinks;
} step_merge_t;

// How an ST_EW_BINARY step reads one operand: element i of the result reads element
// (i / div) % mod of in[j]; mod 0: element i (an operand of the result's size). mod > 0 is the
// operand of a broadcast_in_dim that was not materialized (compile_layout.c): a bias repeated
// over rows (div 1), a value per row (div = the row length), a scalar (mod 1).
typedef struct ew_read {
  int64_t div, mod;
} ew_read_t;

typedef struct step_ew {  // ST_EW_BINARY, ST_EW_UNARY, ST_GATED_ACT: n elements; ST_ROW_DOT: rows
  int64_t n;
  int op;           // ST_EW_BINARY: MX_OP_ADD / _SUBTRACT / _MULTIPLY / _DIVIDE; ST_EW_UNARY:
                    // MX_OP_TANH / _LOGISTIC; ST_GATED_ACT: mx_activation_t
  int64_t row_k;    // ST_ROW_DOT: elements per row
  ew_read_t rd[2];  // ST_EW_BINARY: how in[0] and in[1] are read
  // ST_EW_BINARY: MX_ELEM_INVALID, or BF16 / F16: out[0] is the result converted to it (a
  // convert of a value that nothing else read, compile_lowp.c; the f32 result is not written).
  mx_elem_type_t to;
} step_ew_t;

typedef struct step_copy {  // ST_TRANSPOSE
  int32_t rank;
  int64_t first;                // first input element
  int64_t dims[MX_MAX_RANK];    // output dims
  int64_t stride[MX_MAX_RANK];  // input stride (elements) of each output dim
} step_copy_t;

// ST_BATCH_DOT: out (row-major dims[rank]) element o = sum over j < k of
// in[0][l(o) + j * lk] * in[1][r(o) + j * rk], l(o) / r(o) the sums of o's index in each out dim
// times ls / rs (0 where the dim is the other operand's), accumulated in double in order of j
// as the interpreter's reference kernel does (products of f32 values are exact in double), so
// its results are the interpreter's bit for bit.
typedef struct step_bdot {
  int32_t rank;
  int64_t dims[MX_MAX_RANK], ls[MX_MAX_RANK], rs[MX_MAX_RANK];
  int64_t k, lk, rk;
} step_bdot_t;

typedef struct step_quant {  // ST_QGEMM: m rows of x; ST_QEMBED: n ids; ST_QGATED_UP: 1
  int64_t m;
  int act;  // ST_QGATED_UP: mx_activation_t
} step_quant_t;

typedef struct step_convert {  // ST_CONVERT
  int64_t n;
  mx_elem_type_t from, to;
} step_convert_t;

typedef struct mx_step {
  step_kind_t kind;
  bool parallel;
  bool barrier_before;  // false: independent of every step since the last barrier
  const mx_op_t *op;    // the op it came from (NULL for synthesised steps)
  const char *what;     // description ("mx.attention", "dot_general->gemv", ...)
  int32_t n_in, n_out;
  int32_t in[STEP_MAX_IN];
  int32_t out[STEP_MAX_OUT];
  const mx_cpu_packed_t *w;         // ST_GEMM, ST_GATED_UP (gate)
  const mx_cpu_packed_t *w2;        // ST_GATED_UP (up)
  const mx_cpu_packed_lowp_t *wl;   // ST_GEMM_LOWP, ST_GATED_UP_LOWP (gate)
  const mx_cpu_packed_lowp_t *wl2;  // ST_GATED_UP_LOWP (up)
  union {
    step_gemm_t gemm;
    step_rows_t rows;
    step_norm_t norm;
    step_rope_t rope;
    step_rope_table_t rope_table;
    step_attn_t attn;
    step_merge_t merge;
    step_ew_t ew;
    step_copy_t copy;
    step_bdot_t bdot;
    step_quant_t quant;
    step_convert_t convert;
    mx_cpu_mla_shape_t mla;  // ST_MLA
  };
  // ST_FALLBACK / ST_CALL: views bound per run; n_in / n_out of them.
  mx_tensor_t *tin, *tout;
  const mx_tensor_t **pin;
  mx_tensor_t *heap_out;        // ST_CALL: interpreter results (freed each run)
  const mx_func_t *callee;      // ST_CALL
  const mx_cpu_qpacked_t *qw;   // ST_QGEMM, ST_QGATED_UP (gate) (owned by the weight cache)
  const mx_cpu_qpacked_t *qw2;  // ST_QGATED_UP (up)
  mx_cpu_qsrc_t *qsrc;          // ST_QEMBED (owned by the step)
  mx_cpu_moe_t *moe;            // ST_MOE_* (owned by the ST_MOE_ROUTE step, with its arrays)
} mx_step_t;

// The packed-weight cache (weights.c): one entry per packed copy of a weight.
typedef enum mx_packed_kind { PACKED_F32, PACKED_LOWP, PACKED_Q } mx_packed_kind_t;

typedef struct mx_packed_entry {
  mx_packed_kind_t kind;
  const void *data;  // the source bytes (a weight argument), the key with kind, n, k and kn
  int64_t n, k;
  bool kn;                 // the source is W^T, [k, n] row-major (the weight of a matmul x . W)
  union {                  // owned by the cache
    mx_cpu_packed_t *f32;  // PACKED_F32
    mx_cpu_packed_lowp_t *lowp;  // PACKED_LOWP (its et is part of the key)
    mx_cpu_qpacked_t *q;         // PACKED_Q (its qk is part of the key)
  };
} mx_packed_entry_t;

struct mx_cpu_weights {
  const mx_cpu_kernels_t *kt;
  mx_cpu_slab_t *slab;  // the packings' data
  int32_t n, cap;
  mx_packed_entry_t *e;
  size_t bytes;
  mx_cpu_packed_source_fn on_packed;  // mx_cpu_weights_on_packed
  void *on_packed_user;
  mx_progress_t progress;  // mx_cpu_weights_on_progress
  uint64_t progress_done, progress_total;
};

struct mx_cpu_plan {
  const mx_module_t *m;
  const mx_func_t *f;
  mx_cpu_weights_t *weights;
  bool own_weights;
  int32_t n_args;
  const void **weight_data;  // [n_args]: compile-time pointer of weight args, else NULL
  int32_t n_slots;
  mx_slot_t *slots;
  int32_t n_steps, cap_steps;
  mx_step_t *steps;
  int32_t *result_slot;  // [f->n_results]
  uint8_t **vp;          // [n_slots]: resolved data pointers of the current run
  uint8_t *arena;
  size_t arena_bytes;
  size_t apack_off;    // arena region of X packed for the GEMMs (APACK_PACK / APACK_REUSE steps)
  size_t apack_bytes;  // its size (0: no such step)
  bool own_arena;      // false: bound by mx_cpu_plan_set_arena (external_arena)
  float *scratch;      // attention scratch: scratch_per_thread * scratch_threads floats
  size_t scratch_per_thread;
  int scratch_threads;
  mx_cpu_work_t *work;  // [n_steps]: work-sharing counters of the steps, zeroed before each run
  int32_t n_view_ops;
  int32_t n_barriers;
  bool whole;
  bool keep_values;     // every value has its own memory (mx_cpu_plan_value)
  bool external_arena;  // the arena is bound by mx_cpu_plan_set_arena
  bool ran;             // vp[] holds the pointers of a completed run
  // Run state.
  const mx_tensor_t *run_args;
  mx_cpu_pool_t *run_pool;  // the run's pool (NULL: single thread)
  volatile int run_failed;
  mx_status_t run_status;
  // Profiling (mx_cpu_plan_set_profile): seconds per step, summed over runs; NULL when off.
  double *prof_s;
  int64_t prof_runs;
};

// Executor entry points (exec.c; plan_lowp.c for the low-precision steps).
void mx_cpu_step_exec(mx_cpu_plan_t *p, mx_step_t *s, int ith, int nth);
void mx_cpu_lowp_step_exec(mx_cpu_plan_t *p, mx_step_t *s, int ith, int nth);
void mx_cpu_moe_step_exec(mx_cpu_plan_t *p, mx_step_t *s, int ith, int nth);  // moe.c
// The bytes of an mx.moe's `meta` temp (moe.c).
size_t mx_cpu_moe_meta_bytes(const mx_cpu_moe_t *mo);

// The packed form of a weight W[n, k] from the cache, or packed now (with the cache's kernels,
// the best of its type for bf16 / f16) and kept (weights.c). kn: data holds W^T, [k, n]
// row-major (a matmul's weight rather than a linear's), transposed into a scratch copy to pack.
mx_status_t mx_cpu_packed_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, const float *data,
                              int64_t n, int64_t k, bool kn, const mx_cpu_packed_t **out);
mx_status_t mx_cpu_packed_lowp_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, mx_elem_type_t et,
                                   const uint16_t *data, int64_t n, int64_t k, bool kn,
                                   const mx_cpu_packed_lowp_t **out);
mx_status_t mx_cpu_qpacked_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, mx_cpu_qkernel_t choice,
                               const mx_cpu_qsrc_t *src, const mx_cpu_qpacked_t **out);

#endif  // MX_CPU_PLAN_INTERNAL_H
