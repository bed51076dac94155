// Uniform quantization for the reference interpreter (interp_quant.c): the spec's `quantize` and
// `dequantize` (StableHLO spec, "Quantization computations"), per-tensor and per-axis.
//
// The IR has no quantized element type yet; these functions take the quantization parameters
// in a private descriptor so that the arithmetic can be written and tested now. Once mx_type_t
// carries a quantization descriptor, the driver fills an mx_qparams_t from it.
#ifndef MX_HLO_INTERP_QUANT_H
#define MX_HLO_INTERP_QUANT_H

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

#endif  // MX_HLO_INTERP_QUANT_H
