// Allocation counter for tests that check a hot path allocates nothing: the test binary
// interposes malloc & co (glibc) and counts every call in g_allocs. Include it from exactly one
// translation unit of a test binary (it defines malloc, calloc, realloc, aligned_alloc and
// posix_memalign). COUNT_ALLOCS is 0 where interposing is not possible (other C libraries,
// sanitizers): g_allocs then stays 0 and a test skips its allocation checks.
#ifndef MX_TEST_ALLOC_COUNT_H
#define MX_TEST_ALLOC_COUNT_H

#include <stdlib.h>

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#include <stdatomic.h>
#define COUNT_ALLOCS 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
static atomic_long g_allocs;
void *malloc(size_t n);
void *calloc(size_t a, size_t b);
void *realloc(void *p, size_t n);
void *aligned_alloc(size_t al, size_t n);
int posix_memalign(void **p, size_t al, size_t n);
void *malloc(size_t n) {
  atomic_fetch_add(&g_allocs, 1);
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  atomic_fetch_add(&g_allocs, 1);
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  atomic_fetch_add(&g_allocs, 1);
  return __libc_realloc(p, n);
}
void *aligned_alloc(size_t al, size_t n) {
  atomic_fetch_add(&g_allocs, 1);
  return __libc_memalign(al, n);
}
int posix_memalign(void **p, size_t al, size_t n) {
  atomic_fetch_add(&g_allocs, 1);
  *p = __libc_memalign(al, n);
  return *p ? 0 : 12;
}
#else
#define COUNT_ALLOCS 0
static long g_allocs;
#endif

#endif  // MX_TEST_ALLOC_COUNT_H
