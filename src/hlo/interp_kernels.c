// The one table from opcode to reference kernel group (interp_kernels.h): elementwise
// (interp_elementwise.c), data movement (interp_shape.c), compute (interp_compute.c and
// friends).
#include "hlo/interp_internal.h"

mx_interp_kernel_t mx_interp_kernel_lookup(mx_opcode_t code) {
  const mx_interp_kernel_t elementwise = {mx_interp_elementwise, false},
                           shape = {mx_interp_shape, false}, compute = {mx_interp_compute, false},
                           regions = {mx_interp_compute, true}, none = {NULL, false};
  if (mx_opcode_flags(code) & (MX_OPF_UNARY | MX_OPF_BINARY)) return elementwise;
  switch (code) {
    case MX_OP_CLAMP:
    case MX_OP_COMPARE:
    case MX_OP_SELECT:
    case MX_OP_CONVERT:
    case MX_OP_BITCAST_CONVERT:
    case MX_OP_REDUCE_PRECISION:
      return elementwise;
    case MX_OP_IOTA:
    case MX_OP_BROADCAST_IN_DIM:
    case MX_OP_RESHAPE:
    case MX_OP_TRANSPOSE:
    case MX_OP_SLICE:
    case MX_OP_DYNAMIC_SLICE:
    case MX_OP_DYNAMIC_UPDATE_SLICE:
    case MX_OP_CONCATENATE:
    case MX_OP_PAD:
    case MX_OP_REVERSE:
    case MX_OP_GET_DIMENSION_SIZE:
      return shape;
    case MX_OP_DOT_GENERAL:
    case MX_OP_DOT:
    case MX_OP_CONVOLUTION:
    case MX_OP_FFT:
    case MX_OP_TRIANGULAR_SOLVE:
    case MX_OP_GATHER:
      return compute;
    // Ops with a body (reduction, comparator, update or mapped computation).
    case MX_OP_REDUCE:
    case MX_OP_REDUCE_WINDOW:
    case MX_OP_SELECT_AND_SCATTER:
    case MX_OP_SORT:
    case MX_OP_MAP:
    case MX_OP_SCATTER:
      return regions;
    default:
      return none;
  }
}
