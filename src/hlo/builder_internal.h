// Shared plumbing of builder*.c. Private.
#ifndef MLXCEL_HLO_BUILDER_INTERNAL_H
#define MLXCEL_HLO_BUILDER_INTERNAL_H

#include "hlo/infer.h"
#include "mlxcel/hlo.h"

// Checks the builder, infers the result types of (code, operands, attrs) with `declared` as
// the hint for what cannot be inferred, then appends the op with its attributes. Nothing is
// appended on failure. op_out may be NULL.
mx_status_t mx_build_emit(mx_builder_t *b, mx_opcode_t code, const int32_t *operands,
                          int32_t n_operands, const mx_named_attr_t *attrs, int32_t n_attrs,
                          const mx_type_t *declared, int32_t n_results, mx_op_t **op_out);

// Adds a region block to op with scalar args of the given element types (n each listed twice
// when `twice`: the (accumulator..., element...) layout of reduce-like bodies).
mx_status_t mx_build_add_scalar_region(mx_builder_t *b, mx_op_t *op, const mx_elem_type_t *ets,
                                       int32_t n, bool twice, mx_block_t **region);

// Fills a 2-arg scalar region with `return body(arg0, arg1)` (body: binary opcode) or, with
// MX_SCATTER_REPLACE, `return arg1`.
mx_status_t mx_build_binary_body(mx_builder_t *b, mx_block_t *region, mx_opcode_t body);

// An attribute of an i64 list (DENSE_ARRAY i64).
static inline mx_named_attr_t mx_build_i64s_attr(mx_builder_t *b, const char *name,
                                                 const int64_t *v, int32_t n) {
  mx_named_attr_t a;
  a.name = name;
  a.value = mx_attr_i64s(b->func->module, v, n);
  return a;
}

// Checks a caller array of n entries: non-NULL unless n == 0, n within [0, cap].
mx_status_t mx_build_check_array(const char *op, const char *what, const void *p, int32_t n,
                                 int32_t cap);

#endif  // MLXCEL_HLO_BUILDER_INTERNAL_H
