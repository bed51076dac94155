// Minimal unit-test harness: CHECK macros and a closing "N passed, N failed" line.
#ifndef MX_TEST_H
#define MX_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mlxcel/base.h"

static int mx_test_passed_;
static int mx_test_failed_;
static int mx_test_skipped_;

// ctest's SKIP_RETURN_CODE for the unit tests (tests/CMakeLists.txt).
#define MX_TEST_SKIP_STATUS 77

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

// expr fails with a message that contains frag.
static inline void mx_test_expect_err_(mx_status_t st, const char *frag, const char *file,
                                       int line) {
  if (st != MX_OK && strstr(mx_error_message(), frag)) {
    mx_test_passed_++;
  } else {
    mx_test_failed_++;
    fprintf(stderr, "%s:%d: expected error containing \"%s\", got %s: %s\n", file, line, frag,
            mx_status_name(st), st == MX_OK ? "(ok)" : mx_error_message());
  }
}
#define EXPECT_ERR(st, frag) mx_test_expect_err_((st), (frag), __FILE__, __LINE__)

#define CHECK_NEAR(a, b, tol) \
  CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), "%g vs %g", (double)(a), (double)(b))

// A part of a test that cannot run because its reference data is missing (../shared, or
// tests/data). Such a test must not pass on the checks that are left: it reports itself
// skipped to ctest, and CI fails on any skip. (A part that needs an instruction set the machine
// lacks is not a skip: it prints a note, and the portable paths are still checked.)
static inline void mx_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void mx_test_skip(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("SKIP: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  mx_test_skipped_++;
}

// The shared data folder ($MX_SHARED) when "$MX_SHARED/<rel>" exists; otherwise NULL, with a
// skip recorded that names what is missing.
static inline const char *mx_test_shared(const char *rel) {
  const char *shared = getenv("MX_SHARED");
  char path[4096];
  struct stat sb;
  if (shared && *shared &&
      (size_t)snprintf(path, sizeof path, "%s/%s", shared, rel) < sizeof path &&
      stat(path, &sb) == 0) {
    return shared;
  }
  mx_test_skip("%s/%s not found (set MX_SHARED to the shared data folder)",
               shared && *shared ? shared : "$MX_SHARED", rel);
  return NULL;
}

// Prints the closing line and returns the process exit status: 1 on any failure, else
// MX_TEST_SKIP_STATUS when a part was skipped, else 0.
static inline int mx_test_finish(void) {
  if (mx_test_skipped_) {
    printf("%d passed, %d failed, %d skipped\n", mx_test_passed_, mx_test_failed_,
           mx_test_skipped_);
  } else {
    printf("%d passed, %d failed\n", mx_test_passed_, mx_test_failed_);
  }
  if (mx_test_failed_) return 1;
  return mx_test_skipped_ ? MX_TEST_SKIP_STATUS : 0;
}

#endif  // MX_TEST_H
