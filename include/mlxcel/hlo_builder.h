// mlxcel-xla StableHLO builder API (typed op constructors with shape inference).
// Included by mlxcel/hlo.h; do not include directly.
//
// Every constructor appends one op at the builder's insertion point (the end of a block of a
// function), INFERS the result type(s) from the operand types and parameters, and VERIFIES the
// operands first: on a shape/type/attribute violation nothing is appended, the call returns
// MX_ERR_VERIFY and mx_error_message() names the op and the offending types, e.g.
//   "stablehlo.dot_general: contracting dimension sizes differ: lhs tensor<2x3xf32> dim 1 = 3,
//    rhs tensor<4x5xf32> dim 0 = 4".
// Values are int32_t ids of the builder's function (mx_value_type() gives their types).
// Attributes are stored in the canonical (generic-form) layout documented in hlo.h, so built
// modules print, parse and verify exactly like parsed ones.
//
// Ops with regions (reduce, sort, while, if, case, scatter, reduce_window) come in two forms:
// a simple one taking the body as a binary opcode (MX_OP_ADD, MX_OP_MAXIMUM, ...) and a general
// one that creates the op and its region block(s) WITH their arguments and hands back the op;
// the caller fills each region through a builder at that block (mx_builder_at(f, region)),
// ends it with mx_build_return, then calls mx_build_finish() to verify the whole op.
//
// Elementwise ops never broadcast implicitly (StableHLO requires equal shapes): use
// mx_build_broadcast_in_dim first.
#ifndef MLXCEL_HLO_BUILDER_H
#define MLXCEL_HLO_BUILDER_H

#ifdef __cplusplus
extern "C" {
#endif

// Insertion point: ops are appended at the end of `block`, which belongs to `func`.
typedef struct mx_builder {
  mx_func_t *func;
  mx_block_t *block;
} mx_builder_t;

// Builder appending to `block` of f (NULL = the function body).
mx_builder_t mx_builder_at(mx_func_t *f, mx_block_t *block);

// Creates function `name` with the given argument types (result types are set by the first
// mx_build_return in its body, or explicitly with mx_func_set_result_types), fills *b with a
// builder at its body and arg_ids (room for n_args; may be NULL) with the argument value ids.
mx_status_t mx_build_func(mx_module_t *m, const char *name, bool is_private,
                          const mx_type_t *arg_types, int32_t n_args, mx_func_t **f,
                          mx_builder_t *b, int32_t *arg_ids);

// Type of a value of the builder's function (NULL for a bad id).
const mx_type_t *mx_build_type(const mx_builder_t *b, int32_t id);

// Verifies an op created by a general region form once its regions are filled (region
// argument/terminator types against the op's operands and results).
mx_status_t mx_build_finish(mx_builder_t *b, const mx_op_t *op);

// Any op by opcode (for ops without a dedicated constructor: optimization_barrier,
// reduce_precision, get_tuple_element, ...): attributes in canonical form (payloads owned by the
// module), result types inferred where the verifier's rules determine them; result_types (may
// be NULL when fully inferable) supply the rest. Regions, if any, are added by the caller
// (mx_block_create + mx_op_add_region) and checked by mx_build_finish.
mx_status_t mx_build_op(mx_builder_t *b, mx_opcode_t code, const int32_t *operands,
                        int32_t n_operands, const mx_named_attr_t *attrs, int32_t n_attrs,
                        const mx_type_t *result_types, int32_t n_results, mx_op_t **op);

// ---- Constants ----
// Constant with the value's type and a copy of its data.
mx_status_t mx_build_constant(mx_builder_t *b, const mx_tensor_t *value, int32_t *out);
// Rank-0 constant of element type `et` (ints truncate toward zero, i1 is v != 0, floats round
// to nearest even, complex types get (v, 0)).
mx_status_t mx_build_scalar(mx_builder_t *b, mx_elem_type_t et, double v, int32_t *out);
// Constant of tensor type `type` with every element equal to v (conversion as above). It is
// materialised in full; for large shapes prefer mx_build_scalar + mx_build_broadcast_in_dim.
mx_status_t mx_build_splat(mx_builder_t *b, const mx_type_t *type, double v, int32_t *out);
// iota along `dim` of tensor type `type`.
mx_status_t mx_build_iota(mx_builder_t *b, const mx_type_t *type, int64_t dim, int32_t *out);

// ---- Elementwise ----
// Any MX_OPF_UNARY opcode. Result: operand type, except abs/real/imag of complex -> its real
// type and is_finite -> i1.
mx_status_t mx_build_unary(mx_builder_t *b, mx_opcode_t code, int32_t x, int32_t *out);
// Any MX_OPF_BINARY opcode; operands must have equal types (complex: equal float types, result
// complex).
mx_status_t mx_build_binary(mx_builder_t *b, mx_opcode_t code, int32_t lhs, int32_t rhs,
                            int32_t *out);
mx_status_t mx_build_convert(mx_builder_t *b, int32_t x, mx_elem_type_t et, int32_t *out);
// Reinterprets bits; the result shape gains (narrower et) or loses (wider et) a last dimension
// holding the bit-width ratio.
mx_status_t mx_build_bitcast_convert(mx_builder_t *b, int32_t x, mx_elem_type_t et, int32_t *out);
// pred is tensor<i1> (scalar) or has the operands' shape.
mx_status_t mx_build_select(mx_builder_t *b, int32_t pred, int32_t on_true, int32_t on_false,
                            int32_t *out);
// min/max are scalars or have x's shape.
mx_status_t mx_build_clamp(mx_builder_t *b, int32_t min, int32_t x, int32_t max, int32_t *out);

typedef enum mx_compare_dir {
  MX_CMP_EQ = 0,
  MX_CMP_NE,
  MX_CMP_GE,
  MX_CMP_GT,
  MX_CMP_LE,
  MX_CMP_LT,
} mx_compare_dir_t;

typedef enum mx_compare_type {
  MX_CMP_TYPE_AUTO = 0,  // FLOAT for float/complex, SIGNED for signed ints, UNSIGNED otherwise
  MX_CMP_TYPE_NONE,      // no compare_type attribute
  MX_CMP_TYPE_FLOAT,
  MX_CMP_TYPE_TOTALORDER,
  MX_CMP_TYPE_SIGNED,
  MX_CMP_TYPE_UNSIGNED,
} mx_compare_type_t;

// Result has the operands' shape and element type i1.
mx_status_t mx_build_compare(mx_builder_t *b, mx_compare_dir_t dir, mx_compare_type_t type,
                             int32_t lhs, int32_t rhs, int32_t *out);
const char *mx_compare_dir_name(mx_compare_dir_t dir);     // "EQ", ...
const char *mx_compare_type_name(mx_compare_type_t type);  // "FLOAT", ... (NULL for AUTO/NONE)

// ---- Shapes ----
// Result type: dims[0..rank) with x's element type; x's dim i maps to result dim bdims[i]
// (x has rank(x) entries in bdims; each x dim is 1 or equal to the result dim).
mx_status_t mx_build_broadcast_in_dim(mx_builder_t *b, int32_t x, const int64_t *dims, int32_t rank,
                                      const int64_t *bdims, int32_t *out);
// NumPy-style broadcast of x to dims[0..rank): x's dims align with the trailing result dims
// (x dim i -> result dim rank - rank(x) + i); a broadcast_in_dim underneath.
mx_status_t mx_build_broadcast_to(mx_builder_t *b, int32_t x, const int64_t *dims, int32_t rank,
                                  int32_t *out);
mx_status_t mx_build_reshape(mx_builder_t *b, int32_t x, const int64_t *dims, int32_t rank,
                             int32_t *out);
// perm has rank(x) entries: result dim i = x dim perm[i].
mx_status_t mx_build_transpose(mx_builder_t *b, int32_t x, const int64_t *perm, int32_t n,
                               int32_t *out);
// n = rank(x) entries each; strides may be NULL (all 1).
mx_status_t mx_build_slice(mx_builder_t *b, int32_t x, const int64_t *start, const int64_t *limit,
                           const int64_t *strides, int32_t n, int32_t *out);
// starts: n = rank(x) scalar integer values (one per dim); sizes: rank(x) slice sizes.
mx_status_t mx_build_dynamic_slice(mx_builder_t *b, int32_t x, const int32_t *starts, int32_t n,
                                   const int64_t *sizes, int32_t *out);
mx_status_t mx_build_dynamic_update_slice(mx_builder_t *b, int32_t x, int32_t update,
                                          const int32_t *starts, int32_t n, int32_t *out);
mx_status_t mx_build_concatenate(mx_builder_t *b, const int32_t *xs, int32_t n, int64_t dim,
                                 int32_t *out);
// low/high may be negative; interior may be NULL (all 0). n = rank(x) entries each.
mx_status_t mx_build_pad(mx_builder_t *b, int32_t x, int32_t pad_value, const int64_t *low,
                         const int64_t *high, const int64_t *interior, int32_t n, int32_t *out);
mx_status_t mx_build_reverse(mx_builder_t *b, int32_t x, const int64_t *dims, int32_t n,
                             int32_t *out);

// A list of dimension numbers.
typedef struct mx_dims {
  const int64_t *v;
  int32_t n;
} mx_dims_t;

typedef struct mx_gather_dims {
  mx_dims_t offset_dims;
  mx_dims_t collapsed_slice_dims;
  mx_dims_t operand_batching_dims;
  mx_dims_t start_indices_batching_dims;
  mx_dims_t start_index_map;
  int64_t index_vector_dim;
} mx_gather_dims_t;

// slice_sizes: rank(operand) entries.
mx_status_t mx_build_gather(mx_builder_t *b, int32_t operand, int32_t indices,
                            const mx_gather_dims_t *dims, const int64_t *slice_sizes,
                            bool indices_are_sorted, int32_t *out);

typedef struct mx_scatter_dims {
  mx_dims_t update_window_dims;
  mx_dims_t inserted_window_dims;
  mx_dims_t input_batching_dims;
  mx_dims_t scatter_indices_batching_dims;
  mx_dims_t scatter_dims_to_operand_dims;
  int64_t index_vector_dim;
} mx_scatter_dims_t;

// Update computations of the simple scatter form: any binary opcode (MX_OP_ADD, ...), or
// MX_SCATTER_REPLACE (the update value replaces the input element).
#define MX_SCATTER_REPLACE MX_OP_UNKNOWN

mx_status_t mx_build_scatter(mx_builder_t *b, int32_t input, int32_t indices, int32_t updates,
                             const mx_scatter_dims_t *dims, mx_opcode_t combiner,
                             bool indices_are_sorted, bool unique_indices, int32_t *out);
// General form: n inputs and n updates (same element class as the inputs); the region has 2n
// scalar args of the inputs' element types (current input values, then update values) and must
// return n scalars. Results in (*op)->results.
mx_status_t mx_build_scatter_region(mx_builder_t *b, const int32_t *inputs, int32_t n,
                                    int32_t indices, const int32_t *updates,
                                    const mx_scatter_dims_t *dims, bool indices_are_sorted,
                                    bool unique_indices, mx_op_t **op);

// ---- Compute ----
typedef struct mx_dot_dims {
  mx_dims_t lhs_batching_dims;
  mx_dims_t rhs_batching_dims;
  mx_dims_t lhs_contracting_dims;
  mx_dims_t rhs_contracting_dims;
} mx_dot_dims_t;

// Result shape: batch dims, lhs free dims, rhs free dims. result_et: element type of the
// result (e.g. F32 for f16 x f16 with f32 accumulation); MX_ELEM_INVALID = lhs element type.
mx_status_t mx_build_dot_general(mx_builder_t *b, int32_t lhs, int32_t rhs,
                                 const mx_dot_dims_t *dims, mx_elem_type_t result_et, int32_t *out);

typedef struct mx_conv_params {
  // Dimension numbers (spatial lists have the same length, the number of spatial dims S).
  int64_t input_batch_dim, input_feature_dim;
  mx_dims_t input_spatial_dims;
  int64_t kernel_input_feature_dim, kernel_output_feature_dim;
  mx_dims_t kernel_spatial_dims;
  int64_t output_batch_dim, output_feature_dim;
  mx_dims_t output_spatial_dims;
  // Window: each NULL means the default (strides/dilations 1, padding 0, no reversal).
  const int64_t *window_strides;  // S
  const int64_t *padding;         // S x 2 (low, high), row-major
  const int64_t *lhs_dilation;    // S
  const int64_t *rhs_dilation;    // S
  const bool *window_reversal;    // S
  int64_t feature_group_count;    // 0 means 1
  int64_t batch_group_count;      // 0 means 1
} mx_conv_params_t;

mx_status_t mx_build_convolution(mx_builder_t *b, int32_t lhs, int32_t rhs,
                                 const mx_conv_params_t *p, mx_elem_type_t result_et, int32_t *out);

// Reduces x over dims with init (scalar of x's element type) and `body` (a binary opcode).
mx_status_t mx_build_reduce(mx_builder_t *b, int32_t x, int32_t init, const int64_t *dims,
                            int32_t n_dims, mx_opcode_t body, int32_t *out);
// General form (multi-operand, e.g. argmax): n inputs of equal shape, n scalar inits; the body
// has 2n scalar args of the inits' element types (accumulators, then elements) and returns n
// scalars; results take the inits' element types (an input may be narrower than its init,
// e.g. bf16 inputs with an f32 accumulator, as StableHLO's promotion rules allow).
mx_status_t mx_build_reduce_region(mx_builder_t *b, const int32_t *inputs, const int32_t *inits,
                                   int32_t n, const int64_t *dims, int32_t n_dims, mx_op_t **op);

typedef struct mx_window {
  const int64_t *dims;              // window_dimensions, rank(x) entries (required)
  const int64_t *strides;           // NULL = 1
  const int64_t *base_dilations;    // NULL = 1
  const int64_t *window_dilations;  // NULL = 1
  const int64_t *padding;           // rank(x) x 2 (low, high), NULL = 0
} mx_window_t;

// Windowed reduction (pooling); forms as for reduce.
mx_status_t mx_build_reduce_window(mx_builder_t *b, int32_t x, int32_t init, const mx_window_t *w,
                                   mx_opcode_t body, int32_t *out);
mx_status_t mx_build_reduce_window_region(mx_builder_t *b, const int32_t *inputs,
                                          const int32_t *inits, int32_t n, const mx_window_t *w,
                                          mx_op_t **op);

// Sorts n equally shaped tensors along dim by the comparator region (2n scalar args: lhs and
// rhs of operand 0, then of operand 1, ...; returns tensor<i1>). Results in (*op)->results.
mx_status_t mx_build_sort_region(mx_builder_t *b, const int32_t *inputs, int32_t n, int64_t dim,
                                 bool is_stable, mx_op_t **op);
// Simple form: comparator `compare(dir, lhs0, rhs0)` on operand 0 (the key), other operands
// follow the key's permutation. results: room for n ids.
mx_status_t mx_build_sort(mx_builder_t *b, const int32_t *inputs, int32_t n, int64_t dim,
                          bool is_stable, mx_compare_dir_t dir, int32_t *results);

// ---- Control flow and structure ----
// while: regions[0] (cond) and regions[1] (body) get args of the operands' types; cond returns
// tensor<i1>, body returns values of the operands' types. Results have the operands' types.
mx_status_t mx_build_while(mx_builder_t *b, const int32_t *operands, int32_t n, mx_op_t **op);
// if: pred is tensor<i1>; regions[0] (true) and regions[1] (false) have no args and return
// values of result_types.
mx_status_t mx_build_if(mx_builder_t *b, int32_t pred, const mx_type_t *result_types,
                        int32_t n_results, mx_op_t **op);
// case: index is tensor<i32>; n_branches regions without args returning result_types.
mx_status_t mx_build_case(mx_builder_t *b, int32_t index, int32_t n_branches,
                          const mx_type_t *result_types, int32_t n_results, mx_op_t **op);
// Calls `callee` of the same module; argument types must equal its argument types. results:
// room for its result count (may be NULL when it has none).
mx_status_t mx_build_call(mx_builder_t *b, const char *callee, const int32_t *args, int32_t n,
                          int32_t *results);
// Terminates the builder's block: func.return in the function body (checked against the
// function's result types; sets them when the function has none yet), stablehlo.return in a
// region.
mx_status_t mx_build_return(mx_builder_t *b, const int32_t *values, int32_t n);

// stablehlo.composite `name` (namespaced, e.g. "mx.rms_norm") whose decomposition function (already
// in the module) takes the operands' types; results take its result types. attrs (may be NULL)
// become composite_attributes; the payloads must be owned by the module (mx_attr_* constructors).
// version 0 is left out (StableHLO's default).
mx_status_t mx_build_composite(mx_builder_t *b, const char *name, const int32_t *operands,
                               int32_t n, const mx_named_attr_t *attrs, int32_t n_attrs,
                               const char *decomposition, int32_t version, int32_t *results);
// stablehlo.custom_call: result types are given (nothing can be inferred); backend_config may
// be NULL.
mx_status_t mx_build_custom_call(mx_builder_t *b, const char *target, const int32_t *operands,
                                 int32_t n, const mx_type_t *result_types, int32_t n_results,
                                 bool has_side_effect, const char *backend_config,
                                 int32_t *results);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_HLO_BUILDER_H
