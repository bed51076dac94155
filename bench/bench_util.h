// Helpers shared by the micro-benchmarks in bench/ (header-only: each bench is one file).
#ifndef MX_BENCH_UTIL_H
#define MX_BENCH_UTIL_H

#include <time.h>

// Monotonic wall time in seconds.
static inline double mx_bench_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// qsort comparator for doubles, ascending.
static inline int mx_bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#endif  // MX_BENCH_UTIL_H
