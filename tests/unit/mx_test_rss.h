// The process's resident set, for tests that bound what a step leaves in memory.
#ifndef MX_TEST_RSS_H
#define MX_TEST_RSS_H

#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

// Resident set (bytes) from /proc/self/statm; 0 where unavailable.
static inline size_t mx_test_rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, res = 0;
  int n = fscanf(f, "%lu %lu", &size, &res);
  fclose(f);
  return n == 2 ? (size_t)res * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

#endif  // MX_TEST_RSS_H
