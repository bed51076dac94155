// MX_TRY: the one return-on-error macro of the library's sources. Evaluates an expression
// returning mx_status_t and returns that status from the enclosing function when it is not
// MX_OK (the error message is already set by whoever failed).
#ifndef MX_BASE_TRY_H
#define MX_BASE_TRY_H

#include "mlxcel/base.h"

#define MX_TRY(expr)                   \
  do {                                 \
    mx_status_t mx_try_st_ = (expr);   \
    if (mx_try_st_) return mx_try_st_; \
  } while (0)

#endif  // MX_BASE_TRY_H
