// Huge-page advice for the decode streams (stream_alloc.h). On this project's 2-vCPU virtual
// machines a streaming read over 4 KiB pages reached ~60% of the same read over 2 MiB pages
// (docs/performance.md, "Decode on fast memory"): every 4 KiB a TLB miss, and the hardware
// prefetchers stop at each page's end.
#include "cpu/stream_alloc.h"

#include <stdint.h>
#include <stdlib.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

void *mx_cpu_stream_alloc(size_t bytes) {
  if (bytes < MX_CPU_STREAM_HUGE_MIN) return aligned_alloc(64, bytes ? (bytes + 63) / 64 * 64 : 64);
  if (bytes > SIZE_MAX - MX_CPU_HUGE_PAGE) return NULL;
  size_t size = (bytes + MX_CPU_HUGE_PAGE - 1) / MX_CPU_HUGE_PAGE * MX_CPU_HUGE_PAGE;
  void *p = aligned_alloc(MX_CPU_HUGE_PAGE, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Before the first touch, so the pages are faulted in huge. Failure (no THP in this kernel)
  // leaves ordinary pages.
  if (p) (void)madvise(p, size, MADV_HUGEPAGE);
#endif
  return p;
}
