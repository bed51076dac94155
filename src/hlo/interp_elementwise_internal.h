// Private helpers shared by the elementwise kernels of the reference interpreter
// (interp_elementwise*.c). Not part of any contract with other modules.
//
// Value model used by every kernel:
//   - booleans and integers travel as "raw" uint64_t: the low `bits` bits of the two's-complement
//     pattern, zero-extended (mx_ew_sext gives the signed view);
//   - real floats travel as double (every supported format converts to double exactly) and are
//     rounded back to the element type with round-to-nearest-even on store;
//   - complex values travel as two doubles.
#ifndef MX_HLO_INTERP_ELEMENTWISE_INTERNAL_H
#define MX_HLO_INTERP_ELEMENTWISE_INTERNAL_H

#include "hlo/interp_internal.h"

// ---- Element access (interp_elementwise.c) ----
uint64_t mx_ew_mask(int bits);               // low `bits` ones (bits in 1..64)
int64_t mx_ew_sext(uint64_t raw, int bits);  // sign-extends the low `bits` bits
// Raw bit pattern of element i (ints, bools, real floats; not complex).
uint64_t mx_ew_load_bits(mx_elem_type_t et, const uint8_t *data, int64_t i);
// Stores a raw bit pattern (masked to the width; signed sub-byte ints are sign-extended into
// their int8 storage, i1 stores 0/1).
void mx_ew_store_bits(mx_elem_type_t et, uint8_t *data, int64_t i, uint64_t raw);
// Real floats as double / from double (round-to-nearest-even into the element type).
double mx_ew_load_real(mx_elem_type_t et, const uint8_t *data, int64_t i);
void mx_ew_store_real(mx_elem_type_t et, uint8_t *data, int64_t i, double v);
// Rounds a double to the precision/range of float type `et` (identity for f64).
double mx_ew_round(mx_elem_type_t et, double v);
// Complex element access; `et` is C64 or C128.
void mx_ew_load_complex(mx_elem_type_t et, const uint8_t *data, int64_t i, double *re, double *im);
void mx_ew_store_complex(mx_elem_type_t et, uint8_t *data, int64_t i, double re, double im);
// The real component type of a complex type (F32 for C64, F64 for C128).
mx_elem_type_t mx_ew_complex_part(mx_elem_type_t et);

// IEEE-754 `maximum`/`minimum` (NaN propagating, -0 < +0), shared by clamp and max/min.
double mx_ew_fmax(double a, double b);
double mx_ew_fmin(double a, double b);

// "unsupported: <op name> on <type>" (MX_ERR_UNSUPPORTED).
mx_status_t mx_ew_unsupported(const mx_op_t *op, const mx_type_t *t);

// ---- Kernel families ----
// Each receives already-validated operands (same element count as out[0]).
mx_status_t mx_ew_int_unary(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out);
mx_status_t mx_ew_int_binary(const mx_op_t *op, const mx_tensor_t *a, const mx_tensor_t *b,
                             mx_tensor_t *out);
mx_status_t mx_ew_float_unary(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out);
mx_status_t mx_ew_float_binary(const mx_op_t *op, const mx_tensor_t *a, const mx_tensor_t *b,
                               mx_tensor_t *out);
mx_status_t mx_ew_complex_unary(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out);
mx_status_t mx_ew_complex_binary(const mx_op_t *op, const mx_tensor_t *a, const mx_tensor_t *b,
                                 mx_tensor_t *out);
mx_status_t mx_ew_convert(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out);
mx_status_t mx_ew_bitcast_convert(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out);
mx_status_t mx_ew_reduce_precision(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out);

// Integer helpers reused by clamp/compare (raw values, see above).
bool mx_ew_int_less(mx_elem_type_t et, uint64_t a, uint64_t b);

#endif  // MX_HLO_INTERP_ELEMENTWISE_INTERNAL_H
