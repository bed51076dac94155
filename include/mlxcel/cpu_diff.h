// mlxcel-xla divergence finder (`mlxcel diff`): runs one function with the fast CPU runtime
// (cpu_plan.h, compiled with keep_values) and with the reference interpreter on the same
// arguments, compares every op result of the function body in program order, and names the
// first one that differs beyond a tolerance, with its worst element.
//
// The comparison follows the interpreter (mx_interp_opts_t.on_op): a composite is one op (its
// fused kernel against the interpreter's decomposition), ops inside regions and callees are not
// compared. Once one op diverges, the ops that read it usually diverge too: the first in program
// order is the one to look at.
#ifndef MLXCEL_CPU_DIFF_H
#define MLXCEL_CPU_DIFF_H

#include "mlxcel/cpu_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mx_cpu_diff_opts {
  double tol;                     // allowed |fast - ref| / max(1, |ref|); <= 0 means 1e-4
  mx_cpu_pool_t *pool;            // threads of the fast run; NULL = the calling thread
  const char *test_perturb_op;    // testing: mx_cpu_compile_opts_t.test_perturb_op
  mx_cpu_qkernel_t quant_kernel;  // the fast run's quantized decode kernels (AUTO = the best)
} mx_cpu_diff_opts_t;

// One compared op result and its worst element.
typedef struct mx_cpu_diff_value {
  const mx_op_t *op;  // borrowed from the module; NULL: a result of the function
  int32_t op_index;   // position in f's body (-1: a result of the function)
  int32_t result;     // which result of the op (of the function when op is NULL)
  int32_t value;      // the compared value's id in f
  int64_t index;      // flat (row-major) index of the worst element
  int64_t n_bad;      // elements beyond the tolerance
  double fast, ref;   // the worst element's values
  double err;         // its |fast - ref| / max(1, |ref|) (infinity when one side is NaN)
} mx_cpu_diff_value_t;

typedef struct mx_cpu_diff_report {
  int32_t n_compared;         // op results compared
  int32_t n_skipped;          // op results the plan has no memory for (not compared)
                              // (a whole-function plan: its results are compared instead)
  int32_t n_diverged;         // op results with an element beyond the tolerance
  bool whole_function;        // the plan is one interpreter call: nothing to compare per op
  bool found;                 // `first` is set
  mx_cpu_diff_value_t first;  // the first divergent result in program order
  bool has_worst;             // `worst` is set (something was compared)
  mx_cpu_diff_value_t worst;  // the compared result with the largest error
} mx_cpu_diff_report_t;

// Compiles f (args[i] with is_weight[i] are weights, as in mx_cpu_compile_opts_t), runs it
// both ways and fills rep. args are not modified (the fast run works on copies of the
// non-weight arguments, since it updates aliased caches in place). Errors: compile or run
// failures of either side.
mx_status_t mx_cpu_diff(const mx_module_t *m, const mx_func_t *f, const mx_tensor_t *args,
                        const bool *is_weight, const mx_cpu_diff_opts_t *opts,
                        mx_cpu_diff_report_t *rep);

// Where op `op_index` of f sits, for people: "%19 = mx.attention (op 23 of @prefill), after
// weight model.layers.0.self_attn.v_proj.weight" (the last op at or before it that reads a weight
// argument names the layer; weights are named by their mx.name attribute or location).
void mx_cpu_diff_locate(const mx_func_t *f, int32_t op_index, char *buf, size_t n);

// Appends the report as text (first divergence with location, result shape, the worst element
// as a multi-index with both values, the operand types; then the totals) to sb.
void mx_cpu_diff_format(const mx_func_t *f, const mx_cpu_diff_report_t *rep, double tol,
                        mx_strbuf_t *sb);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_CPU_DIFF_H
