// Verifier rules for quantized tensors (types with mx_quant_t). Elementwise ops on quantized
// values compute dequantize -> op -> quantize, so their operands and result may carry different
// scales and zero points: like the spec's baseline_type they must agree on shape, storage type,
// storage range, expressed type and quantization axis only. Bitcasts and constants convert
// between a quantized type and its storage type.
#include "hlo/verify_quant.h"

#include <string.h>

#include "hlo/infer.h"

static const mx_type_t *qv_type(const mx_func_t *f, int32_t id) {
  return (id >= 0 && id < f->n_values) ? &f->values[id].type : NULL;
}

static bool qv_quantized(const mx_type_t *t) {
  return t && t->kind == MX_TYPE_TENSOR && t->quant != NULL;
}

bool mx_verify_has_quant(const mx_func_t *f, const mx_op_t *op) {
  for (int32_t i = 0; i < op->n_operands; i++)
    if (qv_quantized(qv_type(f, op->operands[i]))) return true;
  for (int32_t i = 0; i < op->n_results; i++)
    if (qv_quantized(qv_type(f, op->results[i]))) return true;
  return false;
}

// Same type once scales and zero points are dropped.
static bool qv_same_baseline(const mx_type_t *a, const mx_type_t *b) {
  if (a->kind != MX_TYPE_TENSOR || b->kind != MX_TYPE_TENSOR) return false;
  if (a->elem != b->elem || !mx_type_same_shape(a, b)) return false;
  if ((a->quant == NULL) != (b->quant == NULL)) return false;
  if (!a->quant) return true;
  return a->quant->expressed == b->quant->expressed &&
         a->quant->storage_min == b->quant->storage_min &&
         a->quant->storage_max == b->quant->storage_max && a->quant->axis == b->quant->axis;
}

bool mx_verify_quant_elementwise(const mx_op_t *op) {
  unsigned fl = mx_opcode_flags(op->code);
  if (op->code == MX_OP_IS_FINITE || op->code == MX_OP_COMPLEX) return false;
  return (fl & (MX_OPF_UNARY | MX_OPF_BINARY)) != 0;
}

// Bit-level and complex-part ops have no quantized form in the spec.
static bool qv_no_quant_form(mx_opcode_t c) {
  switch (c) {
    case MX_OP_AND:
    case MX_OP_OR:
    case MX_OP_XOR:
    case MX_OP_NOT:
    case MX_OP_SHIFT_LEFT:
    case MX_OP_SHIFT_RIGHT_ARITHMETIC:
    case MX_OP_SHIFT_RIGHT_LOGICAL:
    case MX_OP_POPCNT:
    case MX_OP_COUNT_LEADING_ZEROS:
    case MX_OP_REAL:
    case MX_OP_IMAG:
      return true;
    default:
      return false;
  }
}

mx_status_t mx_verify_quant_op(const mx_func_t *f, const mx_op_t *op) {
  if (qv_no_quant_form(op->code)) return mx_infer_fail(op, "does not accept quantized tensors");
  int32_t want = (mx_opcode_flags(op->code) & MX_OPF_UNARY) ? 1 : 2;
  if (op->n_operands != want)
    return mx_infer_fail(op, "expected %d operand%s, got %d", want, want == 1 ? "" : "s",
                         op->n_operands);
  if (op->n_results != 1) return mx_infer_fail(op, "expected 1 result, got %d", op->n_results);
  const mx_type_t *r = qv_type(f, op->results[0]);
  if (!r) return mx_infer_fail(op, "result refers to an unknown value");
  for (int32_t i = 0; i < op->n_operands; i++) {
    const mx_type_t *t = qv_type(f, op->operands[i]);
    if (!t) return mx_infer_fail(op, "operand %d refers to an unknown value", i);
    if (!qv_same_baseline(t, r))
      return mx_infer_fail(op,
                           "operand %d type %s and result type %s differ beyond scales and zero "
                           "points",
                           i, mx_tstr(t).s, mx_tstr(r).s);
  }
  return MX_OK;
}

bool mx_verify_quant_types_match(const mx_op_t *op, const mx_type_t *decl, const mx_type_t *inf) {
  if (mx_type_equal(decl, inf)) return true;
  if (op->code != MX_OP_BITCAST_CONVERT && op->code != MX_OP_CONSTANT) return false;
  if (decl->kind != MX_TYPE_TENSOR || inf->kind != MX_TYPE_TENSOR) return false;
  // bitcast_convert may reinterpret storage as quantized or back; a constant of quantized type
  // holds its storage values.
  return decl->elem == inf->elem && mx_type_same_shape(decl, inf);
}
