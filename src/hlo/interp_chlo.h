// CHLO ops the reference interpreter runs directly (interp_chlo.c). They reach the driver as
// MX_OP_UNKNOWN with their name; mlxcel never emits them, the interpreter only runs them for
// modules written by other producers (and StableHLO's test suite).
#ifndef MX_HLO_INTERP_CHLO_H
#define MX_HLO_INTERP_CHLO_H

#include "hlo/interp_internal.h"

// chlo.mulhi: the high half of the double-width product of two integer tensors of one type.
// Same contract as mx_interp_kernel_fn (out already allocated with the result type).
mx_status_t mx_interp_chlo_mulhi(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out);

// chlo.scan: runs the body along `dimension` of the inputs, threading the carries; outputs are
// the per-position body outputs stacked along `dimension`, then the final carries.
// Same contract as mx_interp_kernel_fn.
mx_status_t mx_interp_chlo_scan(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                const mx_tensor_t *const *in, mx_tensor_t *out);

// Exposed for unit tests: high 64 bits of the 128-bit product (signed or unsigned).
uint64_t mx_interp_mulhi_u64(uint64_t a, uint64_t b);
int64_t mx_interp_mulhi_i64(int64_t a, int64_t b);

#endif  // MX_HLO_INTERP_CHLO_H
