// The reference interpreter's op kernels, as the other runtimes of this library see them: one
// lookup from an opcode to the kernel that computes it. The interpreter dispatches through the
// same lookup, so the list of ops and their kernels is written once (interp_kernels.c). The CPU
// runtime (src/cpu/exec.c) runs these kernels on views of its own buffers for the ops it has no
// fused kernel for. Not part of the public API (include/mlxcel).
#ifndef MX_HLO_INTERP_KERNELS_H
#define MX_HLO_INTERP_KERNELS_H

#include <stdbool.h>

#include "mlxcel/hlo.h"

// Opaque per-run interpreter state (options, limits, check report, module).
typedef struct mx_interp mx_interp_t;

// A kernel receives the op's operand values `in[0..op->n_operands)` and `out[0..op->n_results)`,
// which the caller has already allocated (zeroed) with the op's result types and owns; the
// kernel fills out[i].data. It returns MX_ERR_UNSUPPORTED with a message starting
// "unsupported: <op name>" for opcodes or type combinations it does not implement.
typedef mx_status_t (*mx_interp_kernel_fn)(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                           const mx_tensor_t *const *in, mx_tensor_t *out);

typedef struct mx_interp_kernel {
  mx_interp_kernel_fn fn;  // NULL: no kernel (the interpreter's driver runs the op, or nothing)
  bool needs_interp;       // fn runs region bodies: it needs a live interpreter (ip != NULL);
                           // false: fn reads nothing but its operands (ip may be NULL)
} mx_interp_kernel_t;

// The reference kernel of opcode `code`.
mx_interp_kernel_t mx_interp_kernel_lookup(mx_opcode_t code);

#endif  // MX_HLO_INTERP_KERNELS_H
