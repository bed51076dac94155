// Memory for the large read-only streams of decode (packed weights): on 2 MiB pages where the
// system gives them, so the GEMVs' weight streams walk one TLB entry per 2 MiB instead of one
// per 4 KiB.
#ifndef MX_CPU_STREAM_ALLOC_H
#define MX_CPU_STREAM_ALLOC_H

#include <stddef.h>

enum {
  MX_CPU_HUGE_PAGE = 2 << 20,
  // Smaller buffers keep 64-byte alignment: rounding them up to a whole 2 MiB page would cost
  // more resident memory than their streams gain.
  MX_CPU_STREAM_HUGE_MIN = 1 << 20
};

// At least `bytes` bytes (rounded up to 64, and of at least MX_CPU_STREAM_HUGE_MIN bytes to a
// whole number of MX_CPU_HUGE_PAGE pages on a MX_CPU_HUGE_PAGE boundary, advised as huge pages
// on Linux: MADV_HUGEPAGE, which transparent huge pages honour in their default "madvise" mode).
// NULL when out of memory. Released with free(). The advice is a hint: where the system has no
// huge pages the memory is ordinary.
void *mx_cpu_stream_alloc(size_t bytes);

// A bump allocator of such streams for buffers that live as long as it (a weight cache's packed
// copies, src/cpu/weights.c): chunks of at least MX_CPU_SLAB_CHUNK bytes on a MX_CPU_HUGE_PAGE
// boundary, advised as huge pages, from which each buffer is carved 64-byte aligned. A model's
// weights end on a partial huge page only where a chunk does, not where each weight does
// (rounding every weight up to whole huge pages kept about 1 MiB per weight resident for
// nothing). Chunk bytes never carved are never touched, hence never resident.
enum { MX_CPU_SLAB_CHUNK = 256 << 20 };
typedef struct mx_cpu_slab mx_cpu_slab_t;
mx_cpu_slab_t *mx_cpu_slab_create(void);  // NULL when out of memory
// At least `bytes` bytes (rounded up to 64), 64-byte aligned, valid until the slab is destroyed;
// NULL when out of memory. Never freed on their own.
void *mx_cpu_slab_alloc(mx_cpu_slab_t *s, size_t bytes);
size_t mx_cpu_slab_bytes(const mx_cpu_slab_t *s);  // bytes carved so far
void mx_cpu_slab_destroy(mx_cpu_slab_t *s);        // accepts NULL

#endif  // MX_CPU_STREAM_ALLOC_H
