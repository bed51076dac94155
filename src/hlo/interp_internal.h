// Internal contract between the reference interpreter's driver (interp.c) and its op kernels
// (interp_elementwise.c, interp_shape.c, interp_compute.c, ...). Not a public header.
#ifndef MX_HLO_INTERP_INTERNAL_H
#define MX_HLO_INTERP_INTERNAL_H

#include "hlo/interp_kernels.h"
#include "mlxcel/hlo.h"

// Runs a region block (e.g. a reduce or sort body) on `args` (types must match the block
// arguments) and fills `results` (n_results heap tensors the caller frees) from the block's
// terminator operands. Kernels call this for ops with bodies.
mx_status_t mx_interp_run_block(mx_interp_t *ip, const mx_func_t *f, const mx_block_t *blk,
                                const mx_tensor_t *args, int32_t n_args, mx_tensor_t *results,
                                int32_t n_results);

// Kernel groups (mx_interp_kernel_fn, interp_kernels.h; which opcodes each takes:
// interp_kernels.c).

// Unary/binary elementwise ops, clamp, compare, select, convert, bitcast_convert,
// reduce_precision (interp_elementwise.c).
mx_status_t mx_interp_elementwise(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                  const mx_tensor_t *const *in, mx_tensor_t *out);
// Data movement: iota, broadcast_in_dim, reshape, transpose, slice, dynamic_slice,
// dynamic_update_slice, concatenate, pad, reverse, get_dimension_size (interp_shape.c).
mx_status_t mx_interp_shape(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                            const mx_tensor_t *const *in, mx_tensor_t *out);
// dot_general, dot, convolution, reduce, reduce_window, select_and_scatter, sort, map, fft,
// triangular_solve, gather, scatter (interp_compute.c and friends).
mx_status_t mx_interp_compute(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                              const mx_tensor_t *const *in, mx_tensor_t *out);

// ---- Interpreter state (interp.c drives it; interp_value.c, interp_check.c and
// interp_dynamic.c share it) ----

typedef struct mx_proc mx_proc_t;

// An environment slot: empty, a value the environment owns, or one it borrows (arguments).
enum { ENV_EMPTY = 0, ENV_OWNED = 1, ENV_BORROWED = 2 };

typedef struct mx_env {
  const mx_func_t *f;
  int32_t n;
  mx_tensor_t *vals;  // indexed by value id
  uint8_t *state;     // ENV_*
  uint8_t *local;     // scratch marks used when a block exits
  struct mx_env *prev;
} mx_env_t;

struct mx_interp {
  const mx_module_t *m;
  mx_check_report_t *checks;  // NULL: a failed check is an error
  int64_t max_while;
  size_t max_bytes;
  uint64_t max_work;         // 0: unlimited
  uint64_t work;             // work done so far (see interp_budget.c)
  int32_t depth;             // current call depth
  bool err_located;          // the pending error message already names the failing op
  mx_env_t *env;             // innermost function invocation
  mx_proc_t *proc;           // process of a run_parallel grid, NULL when running alone
  struct probe_rec *probes;  // interpreter.probe records, in execution order
  int32_t n_probes, cap_probes;
  const mx_interp_opts_t *opts;   // on_op hook (mx_interp_run's options), NULL = none
  const mx_block_t *on_op_block;  // the entry function's body: where on_op fires
};

// MX_ERR_UNSUPPORTED "unsupported: <op name> (line L:C)" for an op the interpreter does not run.
mx_status_t mx_interp_unsupported(const mx_op_t *op);

// ---- Values and environments (interp_value.c) ----

// Bytes of a tensor of type t, checked against the run's memory limit (ip->max_bytes).
mx_status_t mx_interp_type_nbytes(const mx_interp_t *ip, const mx_type_t *t, size_t *out);
// *t: a zeroed heap value of `type` (a tuple type allocates its elements), within the limit.
mx_status_t mx_interp_value_alloc(const mx_interp_t *ip, mx_tensor_t *t, const mx_type_t *type);
// *dst: a deep copy of src (the caller frees it).
mx_status_t mx_interp_value_clone(mx_tensor_t *dst, const mx_tensor_t *src);
void mx_interp_value_free(mx_tensor_t *t);
void mx_interp_values_free(mx_tensor_t *v, int32_t n);
// Same storage (element type and shape); same value type (quantization and tuple elements too).
bool mx_interp_storage_type_equal(const mx_type_t *a, const mx_type_t *b);
bool mx_interp_value_type_equal(const mx_type_t *a, const mx_type_t *b);
// The op's results allocated with their declared types (freed again on failure).
mx_status_t mx_interp_alloc_results(const mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                    mx_tensor_t *out);
// The environment of one invocation of f: put moves a value in (the environment owns it),
// borrow lends one (an argument), get reads one (an error when not yet defined).
mx_status_t mx_interp_env_init(mx_env_t *e, const mx_func_t *f);
void mx_interp_env_clear_slot(mx_env_t *e, int32_t id);
void mx_interp_env_destroy(mx_env_t *e);
mx_status_t mx_interp_env_check_id(const mx_env_t *e, int32_t id);
mx_status_t mx_interp_env_put(mx_env_t *e, int32_t id, mx_tensor_t *v);
mx_status_t mx_interp_env_borrow(mx_env_t *e, int32_t id, const mx_tensor_t *v);
mx_status_t mx_interp_env_get(const mx_env_t *e, int32_t id, const mx_tensor_t **out);

// ---- Check dialect and probes (interp_check.c) ----

// A check op (code MX_OP_CHECK_*) on in[0..n_in): a failure is reported to ip->checks, or is
// an error without a report. check_name names it in messages; jax_form: the JAX custom-call
// spelling, which has its own default tolerances.
mx_status_t mx_interp_exec_check(mx_interp_t *ip, const mx_op_t *op, const mx_tensor_t *const *in,
                                 int32_t n_in, const char *check_name, bool jax_form);
// interpreter.probe records its operand; check.expect_serialized_eq compares with a record.
mx_status_t mx_interp_exec_probe(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_interp_exec_serialized_eq(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                         const mx_tensor_t *const *in, mx_tensor_t *out);
void mx_interp_probes_free(mx_interp_t *ip);

// ---- dynamic_* ops (interp_dynamic.c) ----

// Runs op when it is a dynamic_* op (*handled true), as its static counterpart.
mx_status_t mx_interp_exec_dynamic(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                   const mx_tensor_t *const *in, mx_tensor_t *out, bool *handled);

#endif  // MX_HLO_INTERP_INTERNAL_H
