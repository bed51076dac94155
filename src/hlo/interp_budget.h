// Internal to the reference interpreter: the work estimate of one op execution, charged
// against mx_interp_opts_t.max_work (see interp_budget.c for what is counted).
#ifndef MX_HLO_INTERP_BUDGET_H
#define MX_HLO_INTERP_BUDGET_H

#include "mlxcel/hlo.h"

// Estimated element operations of running `op` of `f` on operands `in` (their runtime types).
uint64_t mx_interp_op_cost(const mx_func_t *f, const mx_op_t *op, const mx_tensor_t *const *in);

#endif  // MX_HLO_INTERP_BUDGET_H
