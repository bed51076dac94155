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

// ---- Slab ----

typedef struct slab_chunk {
  uint8_t *base;
  size_t size, used;
} slab_chunk_t;

struct mx_cpu_slab {
  slab_chunk_t *c;
  int32_t n, cap;
  size_t carved;
};

mx_cpu_slab_t *mx_cpu_slab_create(void) { return calloc(1, sizeof(mx_cpu_slab_t)); }

void *mx_cpu_slab_alloc(mx_cpu_slab_t *s, size_t bytes) {
  if (!s || bytes > SIZE_MAX - MX_CPU_SLAB_CHUNK) return NULL;
  size_t need = bytes ? (bytes + 63) / 64 * 64 : 64;
  // First fit: a later, smaller buffer fills what an earlier chunk has left.
  for (int32_t i = 0; i < s->n; i++) {
    slab_chunk_t *c = &s->c[i];
    if (c->size - c->used >= need) {
      void *p = c->base + c->used;
      c->used += need;
      s->carved += need;
      return p;
    }
  }
  if (s->n == s->cap) {
    int32_t cap = s->cap ? 2 * s->cap : 8;
    slab_chunk_t *nc = realloc(s->c, (size_t)cap * sizeof *nc);
    if (!nc) return NULL;
    s->c = nc;
    s->cap = cap;
  }
  size_t size = need > MX_CPU_SLAB_CHUNK ? need : MX_CPU_SLAB_CHUNK;
  size = (size + MX_CPU_HUGE_PAGE - 1) / MX_CPU_HUGE_PAGE * MX_CPU_HUGE_PAGE;
  uint8_t *base = aligned_alloc(MX_CPU_HUGE_PAGE, size);
  if (!base) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  (void)madvise(base, size, MADV_HUGEPAGE);
#endif
  s->c[s->n++] = (slab_chunk_t){.base = base, .size = size, .used = need};
  s->carved += need;
  return base;
}

size_t mx_cpu_slab_bytes(const mx_cpu_slab_t *s) { return s ? s->carved : 0; }

void mx_cpu_slab_destroy(mx_cpu_slab_t *s) {
  if (!s) return;
  for (int32_t i = 0; i < s->n; i++) free(s->c[i].base);
  free(s->c);
  free(s);
}
