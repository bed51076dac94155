// Internal contract between the plan compiler (compile.c) and the executor (exec.c).
#ifndef MX_CPU_PLAN_INTERNAL_H
#define MX_CPU_PLAN_INTERNAL_H

#include "cpu/fused.h"
#include "cpu/kernels_q.h"
#include "mlxcel/cpu_lowp.h"
#include "mlxcel/cpu_plan.h"
#define MX_CPU_HAVE_FUSED 1

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
  ST_GEMM = 0,  // y[m, n] = x[m, k] W^T (packed)
  ST_EMBED,     // rows of an embedding table
  ST_RMS_NORM,
  ST_ROPE,          // out = rope(in[0]); in[3], when present: the cos / sin table
  ST_ROPE_TABLE,    // out = cos / sin of pos in[0] x inv_freq in[1] (shared by the RoPEs)
  ST_ADD_RMS_NORM,  // out[0] = in[0] + in[1], out[1] = rms_norm(out[0]) * in[2]
  ST_GATED_ACT,     // out[0] = act(in[0]) * in[1] (mx.gated_act of quantized MLPs)
  ST_GATED_UP,      // out[1] = x w^T, out[2] = x w2^T, out[0] = act(out[1]) * out[2]
  ST_ATTENTION,
  ST_EW_BINARY,    // f32 add / subtract / multiply
  ST_DUS_INPLACE,  // dynamic_update_slice into a buffer the result aliases
  ST_TRANSPOSE,    // strided copy of 4-byte elements (transpose, slice): p[0] = rank,
                   // p[1] = first input element, tdims/tstr below
  ST_FALLBACK,     // interpreter kernel on views (serial)
  ST_CALL,         // composite decomposition / func.call through mx_interp_run (serial)
  ST_WHOLE,        // the whole function through mx_interp_run (serial)
  ST_QGEMM,        // y[m, n] = x[m, k] W^T, W quantized (qw; kernels_q.h)
  ST_QEMBED,       // dequantized rows of a quantized table (qsrc)
  ST_PERTURB,      // testing (test_perturb_op): out[0] first f32 element += 1 (serial)
  // Low-precision steps (compile.c "Low-precision" section, executed by plan_lowp.c):
  ST_CONVERT,       // out = convert(in), f32 <-> bf16 / f16 (p[0] = n, p[1] = from, p[2] = to)
  ST_GEMM_LOWP,     // y[m, n] f32 = x[m, k] W^T, x and W bf16 / f16 (packed: wl)
  ST_EMBED_ROWS,    // rows of a bf16 / f16 table (p[0] vocab, p[1] h, p[2] n ids, p[3] bytes)
  ST_ATTENTION_KV,  // ST_ATTENTION over bf16 / f16 caches (p[7] = the cache element type)
  // Decode attention split over the keys (fused_kv.h): ST_ATTN_SPLIT writes the pieces' states
  // (out[0], a temp), ST_ATTN_MERGE combines them into the result.
  ST_ATTN_SPLIT,  // p: b, hq, hkv, s, d, window, cache element type, parts; fp: scale, softcap
  ST_ATTN_MERGE,  // p: rows, d, parts
} step_kind_t;

enum { STEP_MAX_IN = 8, STEP_MAX_OUT = 4 };

// ST_GEMM / ST_GATED_UP with m > 1, p[6]: how X reaches the microkernel (compile.c plan_apack,
// exec.c step_apack). p[7] = 1: a barrier before packing (the region may still be read).
enum { APACK_NONE = 0, APACK_PACK = 1, APACK_REUSE = 2 };

typedef struct mx_step {
  step_kind_t kind;
  bool parallel;
  bool barrier_before;  // false: independent of every step since the last barrier
  const mx_op_t *op;    // the op it came from (NULL for synthesised steps)
  const char *what;     // description ("mx.attention", "dot_general->gemv", ...)
  int32_t n_in, n_out;
  int32_t in[STEP_MAX_IN];
  int32_t out[STEP_MAX_OUT];
  const mx_cpu_packed_t *w;        // ST_GEMM, ST_GATED_UP (gate)
  const mx_cpu_packed_t *w2;       // ST_GATED_UP (up)
  const mx_cpu_packed_lowp_t *wl;  // ST_GEMM_LOWP
  int64_t p[8];                    // integer parameters (meaning per kind)
  float fp[4];                     // float parameters
  int64_t tdims[MX_MAX_RANK];      // ST_TRANSPOSE: output dims
  int64_t tstr[MX_MAX_RANK];       // ST_TRANSPOSE: input stride (elements) of each output dim
  // ST_FALLBACK / ST_CALL: views bound per run; n_in / n_out of them.
  mx_tensor_t *tin, *tout;
  const mx_tensor_t **pin;
  mx_tensor_t *heap_out;       // ST_CALL: interpreter results (freed each run)
  const mx_func_t *callee;     // ST_CALL
  const mx_cpu_qpacked_t *qw;  // ST_QGEMM (owned by the weight cache)
  mx_cpu_qsrc_t *qsrc;         // ST_QEMBED (owned by the step)
} mx_step_t;

typedef struct mx_packed_entry {
  const void *data;
  int64_t n, k;
  mx_cpu_packed_t *packed;
} mx_packed_entry_t;

typedef struct mx_packed_lowp_entry {
  const void *data;
  int64_t n, k;
  mx_cpu_packed_lowp_t *packed;
} mx_packed_lowp_entry_t;

typedef struct mx_qpacked_entry {
  const void *data;
  int64_t n, k;
  mx_cpu_qpacked_t *packed;
} mx_qpacked_entry_t;

struct mx_cpu_weights {
  const mx_cpu_kernels_t *kt;
  int32_t n, cap;
  mx_packed_entry_t *e;
  size_t bytes;
  int32_t n_lowp, cap_lowp;  // bf16 / f16 weights (plan_lowp.c)
  mx_packed_lowp_entry_t *lowp;
  int32_t nq, capq;  // quantized weights (mx.linear), packed by mx_cpu_qpacked_get
  mx_qpacked_entry_t *qe;
  mx_cpu_packed_source_fn on_packed;  // mx_cpu_weights_on_packed
  void *on_packed_user;
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

// Executor entry points (exec.c).
void mx_cpu_step_exec(mx_cpu_plan_t *p, mx_step_t *s, int ith, int nth);
mx_status_t mx_cpu_packed_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, const float *data,
                              int64_t n, int64_t k, const mx_cpu_packed_t **out);
// The packed form of a quantized weight, from the cache or packed now (compile_quant.c).
mx_status_t mx_cpu_qpacked_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, const mx_cpu_qsrc_t *src,
                               const mx_cpu_qpacked_t **out);
void mx_cpu_qpacked_free_all(mx_cpu_weights_t *w);

// Low-precision steps (plan_lowp.c): the packed copy of a bf16 / f16 weight W[n, k] (packed
// once per weights cache, with the best kernels of its type), its release, and the executor.
mx_status_t mx_cpu_packed_lowp_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, mx_elem_type_t et,
                                   const uint16_t *data, int64_t n, int64_t k,
                                   const mx_cpu_packed_lowp_t **out);
void mx_cpu_weights_lowp_free(mx_cpu_weights_t *w);
void mx_cpu_lowp_step_exec(mx_cpu_plan_t *p, mx_step_t *s, int ith, int nth);

#endif  // MX_CPU_PLAN_INTERNAL_H
