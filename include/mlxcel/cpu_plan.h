// mlxcel-xla CPU runtime, second layer: compile a StableHLO function into a plan (a flat list
// of kernel steps over one preallocated arena) and run it on the thread pool of cpu.h.
//
// Compile: every op of the function gets a step. Recognised patterns run the fast kernels
// (composites mx.rms_norm / mx.rope / mx.attention / mx.gated_mlp -> src/cpu/fused.h and the
// packed GEMV/GEMM; dot_general with a weight right-hand side [N, K] -> packed GEMV/GEMM; an
// embedding gather -> mx_cpu_embed_f32; dynamic_update_slice of an argument whose result aliases
// it (tf.aliasing_output) -> an in-place copy; add/subtract/multiply on f32 -> a parallel loop;
// reshape, f32->f32 convert and transposes that keep the order of non-unit dims -> views).
// Every other op runs the reference interpreter's kernel for that op on views of the plan's
// buffers (serial), composites without a fused kernel run their decomposition with the
// interpreter, and a function the per-op path cannot express (ops with regions at top level,
// quantized types, tuples, tokens) compiles to one step running mx_interp_run on the whole
// function. A plan is therefore always exactly as correct as the reference interpreter;
// mx_cpu_plan_stats tells how much of it is fast.
//
// Run: one pool job per call; threads walk the step list together, kernel steps split by
// (ith, nth), fallback steps on thread 0, a barrier between steps. Intermediates live in one
// arena whose offsets were assigned by liveness at compile time; a run whose steps are all
// native makes no allocation and no system call (fallback steps may allocate).
//
// Ownership and lifetimes:
// - mx_cpu_weights_t is a cache of packed weights keyed by the weight's data pointer (and shape).
//   Plans compiled with the same cache share one packed copy (prefill and decode plans of a
//   model). It must outlive every plan compiled with it; destroy it after them. The weight data
//   it was packed from must not change while the cache lives (the checkpoint stays mapped).
// - A plan borrows the module (must outlive the plan: fallback steps read its ops) and the
//   weight arguments given at compile time (their data pointers are recorded: run() must be
//   passed the same pointers for weight arguments, which is checked).
// - Non-weight arguments and results are the caller's buffers, bound per run.
// - A plan may be run by one thread at a time.
#ifndef MLXCEL_CPU_PLAN_H
#define MLXCEL_CPU_PLAN_H

#include "mlxcel/cpu.h"
#include "mlxcel/hlo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mx_cpu_weights mx_cpu_weights_t;
typedef struct mx_cpu_plan mx_cpu_plan_t;

// kt: the kernel table to pack for (NULL = mx_cpu_kernels_best()).
mx_status_t mx_cpu_weights_create(const mx_cpu_kernels_t *kt, mx_cpu_weights_t **out);
void mx_cpu_weights_destroy(mx_cpu_weights_t *w);         // accepts NULL; after every plan using it
size_t mx_cpu_weights_bytes(const mx_cpu_weights_t *w);   // bytes of packed data held
int32_t mx_cpu_weights_count(const mx_cpu_weights_t *w);  // packed matrices held
// Hook called once per weight right after it was packed, with the source bytes: from then on
// plans read that matrix through the packed copy, so a caller whose weights are mmapped can drop
// their pages from resident memory (mx_checkpoint_release), halving the RSS. The hook must
// leave the bytes readable (other steps, e.g. an embedding gather on a tied table, may still
// read them). fn NULL = no hook (the default). Set before compiling plans with the cache.
typedef void (*mx_cpu_packed_source_fn)(void *user, const void *data, size_t nbytes);
void mx_cpu_weights_on_packed(mx_cpu_weights_t *w, mx_cpu_packed_source_fn fn, void *user);
// Progress of the packing (base.h): after each matrix packed, stage "packing" with the source
// bytes packed so far of `total` (the caller's estimate of what will be packed). *p is copied;
// zero = none (the default). Set before compiling plans with the cache.
void mx_cpu_weights_on_progress(mx_cpu_weights_t *w, const mx_progress_t *p, uint64_t total);

typedef struct mx_cpu_compile_opts {
  // Arguments known at compile time, [f->body->n_args] (NULL = none). An entry with data !=
  // NULL and is_weight[i] (or, when is_weight is NULL, the argument attribute
  // mx.role = "weight") is a weight: constant for the plan's life, packed if a matmul reads it.
  const mx_tensor_t *args;
  const bool *is_weight;      // [n_args] or NULL
  mx_cpu_weights_t *weights;  // shared packed-weight cache; NULL = a private one
  mx_cpu_pool_t *pool;        // used to pack weights (NULL = calling thread)
  bool no_fast;               // testing: every op through the interpreter's kernels
  // The intermediates live in memory the caller binds with mx_cpu_plan_set_arena instead of a
  // plan-owned arena: plans that never run at the same time (a session's prefill buckets and
  // decode) can share one buffer of the largest arena_bytes (mx_cpu_plan_stats).
  bool external_arena;
  // Debugging (mlxcel diff): every value keeps its own memory until the next run, so
  // mx_cpu_plan_value can read any op's result after a run (the arena grows to the sum of all
  // intermediates instead of their peak).
  bool keep_values;
  // Testing only: the first top-level op named this (a composite's name, e.g. "mx.rms_norm", or
  // an op name, e.g. "stablehlo.dot_general") that compiles to fast steps gets a broken result:
  // 1 is added to its first element (f32 results) after its steps ran. NULL = off.
  const char *test_perturb_op;
  // Matmuls of M > 1 rows compute every row with the GEMV's summation order
  // (src/cpu/kernels_rows.h) instead of the GEMM's: a row's result is then the same for
  // any M, bit for bit (batched decoding: a sequence's logits do not depend on how many run).
  bool rows_as_gemv;
  // The decode kernels of quantized weights (AUTO = the CPU's best; mx_cpu_qkernel_t). Plans
  // sharing a weight cache may differ: the cache keys a quantized packing by its kernels.
  mx_cpu_qkernel_t quant_kernel;
} mx_cpu_compile_opts_t;

// Compiles f (a function of m). opts may be NULL.
mx_status_t mx_cpu_compile(const mx_module_t *m, const mx_func_t *f,
                           const mx_cpu_compile_opts_t *opts, mx_cpu_plan_t **out);
void mx_cpu_plan_destroy(mx_cpu_plan_t *p);  // accepts NULL

// Binds the arena of a plan compiled with external_arena: `arena` (borrowed; 64-byte aligned,
// at least nbytes >= the plan's arena_bytes) holds its intermediates during runs and must stay
// valid while the plan runs. Running such a plan before binding is an error.
mx_status_t mx_cpu_plan_set_arena(mx_cpu_plan_t *p, void *arena, size_t nbytes);

// Runs the plan. args[n_args]: types must match the function (weights: the compile-time data
// pointers). results[f->n_results]: caller-preallocated tensors of the result types (data with
// at least the result's bytes); a result whose data pointer equals that of the argument it
// aliases (tf.aliasing_output) is updated in place and not copied. pool: NULL = single thread.
mx_status_t mx_cpu_plan_run(mx_cpu_plan_t *p, mx_cpu_pool_t *pool, const mx_tensor_t *args,
                            int32_t n_args, mx_tensor_t *results);

typedef struct mx_cpu_plan_stats {
  int32_t n_steps;       // steps in the plan
  int32_t n_fast;        // steps running a native kernel
  int32_t n_view;        // ops compiled to views (no step)
  int32_t n_fallback;    // steps running an interpreter kernel or decomposition
  int32_t n_barriers;    // thread barriers per run (independent steps share one)
  bool whole_function;   // the plan is one mx_interp_run of the function
  size_t arena_bytes;    // intermediate arena
  size_t scratch_bytes;  // per-plan scratch (attention)
} mx_cpu_plan_stats_t;
void mx_cpu_plan_stats(const mx_cpu_plan_t *p, mx_cpu_plan_stats_t *s);
// Appends one line per step ("fast mx.attention", "fallback stablehlo.iota", ...) to sb.
void mx_cpu_plan_describe(const mx_cpu_plan_t *p, mx_strbuf_t *sb);

// The value `value_id` of f (an op result or argument) as of the last run: a view into the
// plan's memory (or the run's argument), valid until the next run or destroy. Needs a plan
// compiled with keep_values (else MX_ERR_INVALID_ARG); MX_ERR_UNSUPPORTED for a value the plan
// has no memory for (whole-function plans: every intermediate; values of nested regions).
mx_status_t mx_cpu_plan_value(const mx_cpu_plan_t *p, int32_t value_id, mx_tensor_t *view);

// Profiling, a development aid: while on, every step of a run is followed by a barrier (so
// steps no longer overlap) and its wall time is added to a per-step total. The report appends
// one line per step description (sorted by total time: seconds, share, step count) for the runs
// since profiling was switched on (nothing when the plan has not run since). Switching on allocates
// (once); off frees the totals.
mx_status_t mx_cpu_plan_set_profile(mx_cpu_plan_t *p, bool on);
void mx_cpu_plan_profile_report(const mx_cpu_plan_t *p, mx_strbuf_t *sb);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_CPU_PLAN_H
