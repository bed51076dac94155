// Private: verifier rules for quantized tensor types (verify_quant.c), used by verify.c.
#ifndef MLXCEL_HLO_VERIFY_QUANT_H
#define MLXCEL_HLO_VERIFY_QUANT_H

#include "mlxcel/hlo.h"

// True if any operand or result of op has a quantized tensor type.
bool mx_verify_has_quant(const mx_func_t *f, const mx_op_t *op);
// True for the elementwise ops whose quantized form mx_verify_quant_op checks.
bool mx_verify_quant_elementwise(const mx_op_t *op);
// Elementwise op on quantized tensors: operands and result agree up to scales/zero points.
mx_status_t mx_verify_quant_op(const mx_func_t *f, const mx_op_t *op);
// Declared vs inferred result type, allowing the storage <-> quantized changes of
// bitcast_convert and constant.
bool mx_verify_quant_types_match(const mx_op_t *op, const mx_type_t *decl, const mx_type_t *inf);

#endif  // MLXCEL_HLO_VERIFY_QUANT_H
