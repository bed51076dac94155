// Internal contract between the reference interpreter's driver (interp.c) and its op kernels
// (interp_elementwise.c, interp_shape.c, interp_compute.c, ...). Not a public header.
#ifndef MX_HLO_INTERP_INTERNAL_H
#define MX_HLO_INTERP_INTERNAL_H

#include "hlo/interp_kernels.h"
#include "mlxcel/hlo.h"

// Runs a region block (e.g. a reduce or sort body) on `args` (types must match the block
// arguments) and fills `results` (n_results heap tensors the caller frees) from the block's
// terminator operands. Kernels call this for ops with bodies.
mx_status_t mx_interp_run_block(mx_interp_t *ip, const mx_func_t *f, const mx_block_t *blk,
                                const mx_tensor_t *args, int32_t n_args, mx_tensor_t *results,
                                int32_t n_results);

// Kernel groups (mx_interp_kernel_fn, interp_kernels.h; which opcodes each takes:
// interp_kernels.c).

// Unary/binary elementwise ops, clamp, compare, select, convert, bitcast_convert,
// reduce_precision (interp_elementwise.c).
mx_status_t mx_interp_elementwise(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                  const mx_tensor_t *const *in, mx_tensor_t *out);
// Data movement: iota, broadcast_in_dim, reshape, transpose, slice, dynamic_slice,
// dynamic_update_slice, concatenate, pad, reverse, get_dimension_size (interp_shape.c).
mx_status_t mx_interp_shape(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                            const mx_tensor_t *const *in, mx_tensor_t *out);
// dot_general, dot, convolution, reduce, reduce_window, select_and_scatter, sort, map, fft,
// triangular_solve, gather, scatter (interp_compute.c and friends).
mx_status_t mx_interp_compute(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                              const mx_tensor_t *const *in, mx_tensor_t *out);

#endif  // MX_HLO_INTERP_INTERNAL_H
