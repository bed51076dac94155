// Minimal unit-test harness: CHECK macros and a closing "N passed, N failed" line.
#ifndef MX_TEST_H
#define MX_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int mx_test_passed_;
static int mx_test_failed_;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      mx_test_passed_++;                                                       \
    } else {                                                                   \
      mx_test_failed_++;                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define CHECK_MSG(cond, ...)                                                   \
  do {                                                                         \
    if (cond) {                                                                \
      mx_test_passed_++;                                                       \
    } else {                                                                   \
      mx_test_failed_++;                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
    }                                                                          \
  } while (0)

#define CHECK_OK(expr)                                                                          \
  do {                                                                                          \
    mx_status_t st_ = (expr);                                                                   \
    if (st_ == MX_OK) {                                                                         \
      mx_test_passed_++;                                                                        \
    } else {                                                                                    \
      mx_test_failed_++;                                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, mx_error_message()); \
    }                                                                                           \
  } while (0)

#define CHECK_NEAR(a, b, tol) \
  CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), "%g vs %g", (double)(a), (double)(b))

// Prints the closing line and returns the process exit status.
static inline int mx_test_finish(void) {
  printf("%d passed, %d failed\n", mx_test_passed_, mx_test_failed_);
  return mx_test_failed_ ? 1 : 0;
}

#endif  // MX_TEST_H
