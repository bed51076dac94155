// Result-type inference shared by the builder (which creates ops from inferred types) and the
// verifier (which compares an op's declared result types with the inferred ones). Private.
#ifndef MLXCEL_HLO_INFER_H
#define MLXCEL_HLO_INFER_H

#include "mlxcel/hlo.h"

// Computes the result types of `op` (which need not be in a block yet: only code, name,
// operands, attrs and regions are read) from the operand types in f, its attributes and, where
// they decide it, its regions. `declared` (NULL when unknown) are the op's claimed result
// types; they supply what cannot be inferred (convert's element type, reshape's shape,
// dot_general's result element type, custom_call results, ...). n_results is the op's result
// count; out receives n_results types. Violations: MX_ERR_VERIFY, message "<op name>: ...".
mx_status_t mx_infer_op(const mx_func_t *f, const mx_op_t *op, const mx_type_t *declared,
                        int32_t n_results, mx_type_t *out);

// ---- helpers shared by infer*.c and verify*.c ----

// Long enough for any type in an error message (longer ones are truncated).
typedef struct mx_tstr {
  char s[160];
} mx_tstr_t;
mx_tstr_t mx_tstr(const mx_type_t *t);

// An integer list read from an attribute.
#define MX_ILIST_CAP 64
typedef struct mx_ilist {
  int64_t v[MX_ILIST_CAP];
  int32_t n;
} mx_ilist_t;

// Records "<op name>: <message>" as an MX_ERR_VERIFY error.
mx_status_t mx_infer_fail(const mx_op_t *op, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *mx_infer_opname(const mx_op_t *op);

// Type of operand i (NULL if the id is out of range).
const mx_type_t *mx_infer_operand(const mx_func_t *f, const mx_op_t *op, int32_t i);

// Reads an integer list attribute (DENSE_ARRAY, ARRAY of INT, integer DENSE tensor, or a single
// INT). `field_of` non-NULL: read field `name` of that DICT/STRUCT instead of an op attribute.
// Absent: *present = false, l->n = 0, MX_OK. Malformed: MX_ERR_VERIFY.
mx_status_t mx_infer_ints(const mx_op_t *op, const mx_attr_t *field_of, const char *name,
                          bool required, mx_ilist_t *l, bool *present);
// Reads an integer (INT, BOOL, or a one-element list) attribute or field.
mx_status_t mx_infer_int(const mx_op_t *op, const mx_attr_t *field_of, const char *name,
                         bool required, int64_t dflt, int64_t *v);

// Checks n operands are present and each is a ranked tensor.
mx_status_t mx_infer_need_tensors(const mx_func_t *f, const mx_op_t *op, int32_t first,
                                  int32_t count);
// Dims are unique and within [0, rank).
mx_status_t mx_infer_check_dims(const mx_op_t *op, const char *what, const mx_ilist_t *l,
                                int32_t rank, bool sorted);

// StableHLO's "promotable" element types (reduction bodies may accumulate wider): same class
// (integer incl. i1 / float / complex), floats of any precision, ints no narrower.
bool mx_infer_promotable(mx_elem_type_t from, mx_elem_type_t to);
// Same class as above without the width rule.
bool mx_infer_same_class(mx_elem_type_t a, mx_elem_type_t b);

// Per-family inference (dispatch lives in infer.c).
mx_status_t mx_infer_shape_op(const mx_func_t *f, const mx_op_t *op, const mx_type_t *declared,
                              int32_t n_results, mx_type_t *out, bool *handled);
mx_status_t mx_infer_index_op(const mx_func_t *f, const mx_op_t *op, const mx_type_t *declared,
                              int32_t n_results, mx_type_t *out, bool *handled);
mx_status_t mx_infer_compute_op(const mx_func_t *f, const mx_op_t *op, const mx_type_t *declared,
                                int32_t n_results, mx_type_t *out, bool *handled);
mx_status_t mx_infer_control_op(const mx_func_t *f, const mx_op_t *op, const mx_type_t *declared,
                                int32_t n_results, mx_type_t *out, bool *handled);

#endif  // MLXCEL_HLO_INFER_H
