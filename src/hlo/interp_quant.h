// Uniform quantization for the reference interpreter (interp_quant.c): the spec's `quantize` and
// `dequantize` (StableHLO spec, "Quantization computations"), per-tensor and per-axis.
//
// The IR has no quantized element type yet; these functions take the quantization parameters
// in a private descriptor so that the arithmetic can be written and tested now. Once mx_type_t
// carries a quantization descriptor, the driver fills an mx_qparams_t from it.
#ifndef MX_HLO_INTERP_QUANT_H
#define MX_HLO_INTERP_QUANT_H

#include "hlo/interp_internal.h"
#include "mlxcel/hlo.h"

typedef struct mx_qparams {
  mx_elem_type_t storage;            // integer type of the stored values (<= 32 bits)
  mx_elem_type_t expressed;          // float type the values stand for
  int64_t storage_min, storage_max;  // clamping range of quantize()
  int32_t axis;                      // quantization dimension, -1 for per-tensor
  int32_t n;                         // number of (scale, zero point) pairs
  const double *scales;              // n scales (> 0, finite)
  const int64_t *zero_points;        // n zero points
} mx_qparams_t;

// Fills storage_min/max with the full range of `storage`.
void mx_qparams_default_range(mx_qparams_t *qp);

// Checks the descriptor against itself and against the tensor shape `t` (rank/dims only):
// integer storage of at most 32 bits, float expressed type, min <= zero points <= max,
// positive finite scales, n == 1 per-tensor or n == dims[axis] per-axis.
mx_status_t mx_qparams_check(const mx_qparams_t *qp, const mx_type_t *shape);

// dequantize: f[i] = (q[i] - zero_point[k]) * scale[k] with k the index along the quantization
// axis, each step rounded to the expressed type. q holds storage integers, f is a preallocated
// tensor of the expressed type with q's shape.
mx_status_t mx_interp_dequantize(const mx_tensor_t *q, const mx_qparams_t *qp, mx_tensor_t *f);

// quantize: q[i] = convert(round_nearest_even(clamp(min, f[i] / scale[k] + zero_point[k], max)))
// computed in the expressed type. f holds floats of any float type (converted to the expressed
// type first); q is a preallocated tensor of the storage type with f's shape. NaN stores 0, as
// convert does.
mx_status_t mx_interp_quantize(const mx_tensor_t *f, const mx_qparams_t *qp, mx_tensor_t *q);

// ---- Quantized tensors in the interpreter ----

// Reads the quantization parameters of a tensor type into *qp; false for ordinary tensors (and,
// until mx_type_t carries a quantization descriptor, for every type).
bool mx_interp_type_qparams(const mx_type_t *t, mx_qparams_t *qp);

// True when a and b are both unquantized or have identical quantization parameters.
bool mx_interp_same_quant(const mx_type_t *a, const mx_type_t *b);

// True when an operand or result of the op is a quantized tensor.
bool mx_interp_op_is_quantized(const mx_op_t *op, const mx_tensor_t *const *in,
                               const mx_tensor_t *out);

// stablehlo.uniform_quantize (float or quantized operand) and stablehlo.uniform_dequantize.
// Kernel contract (out allocated with the result types).
mx_status_t mx_interp_uniform_quantize(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                       const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_interp_uniform_dequantize(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                         const mx_tensor_t *const *in, mx_tensor_t *out);

// The spec's dequantize_op_quantize: runs kernel `fn` on the dequantized (expressed-type)
// operands and quantizes each quantized result with its own parameters; unquantized operands
// and results (e.g. compare's i1 result, select's predicate, a hybrid dot's float lhs) pass
// through. out is allocated with the op's result types.
mx_status_t mx_interp_dequantize_op_quantize(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                             mx_interp_kernel_fn fn, const mx_tensor_t *const *in,
                                             mx_tensor_t *out);

#endif  // MX_HLO_INTERP_QUANT_H
