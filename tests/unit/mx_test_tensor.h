// Helpers of the kernel tests that compare a plan's tensors with the reference interpreter's:
// a deterministic uniform generator and the largest elementwise difference.
#ifndef MX_TEST_TENSOR_H
#define MX_TEST_TENSOR_H

#include <math.h>
#include <stdint.h>

#include "mlxcel/hlo.h"

// xorshift64 on *state: [0, 1) with 53 random bits.
static inline double mx_test_urand(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return (double)(*state >> 11) / 9007199254740992.0;
}

// max |a - b| over the elements of two tensors of one shape; NaN when either holds NaN there.
static inline double mx_test_max_diff(const mx_tensor_t *a, const mx_tensor_t *b) {
  int64_t n = mx_type_numel(&a->type);
  double md = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs(mx_tensor_get_f64(a, i) - mx_tensor_get_f64(b, i));
    if (d > md || d != d) md = d;
  }
  return md;
}

#endif  // MX_TEST_TENSOR_H
