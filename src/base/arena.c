// Bump allocator: chunks of at least 64 KiB; oversized requests get a chunk of their own.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/base.h"

typedef struct mx_chunk {
  struct mx_chunk *next;
  size_t size;  // usable bytes after the header
  size_t used;
  _Alignas(16) unsigned char data[];
} mx_chunk_t;

struct mx_arena {
  mx_chunk_t *head;
  size_t total;
};

enum { MX_ARENA_CHUNK = 64 * 1024 };

mx_arena_t *mx_arena_create(void) { return calloc(1, sizeof(mx_arena_t)); }

void mx_arena_destroy(mx_arena_t *arena) {
  if (!arena) return;
  mx_chunk_t *c = arena->head;
  while (c) {
    mx_chunk_t *next = c->next;
    free(c);
    c = next;
  }
  free(arena);
}

void *mx_arena_alloc(mx_arena_t *arena, size_t size) {
  if (!arena) return NULL;
  size_t need = (size + 15u) & ~(size_t)15u;
  if (need < size) return NULL;  // overflow
  if (need == 0) need = 16;
  mx_chunk_t *c = arena->head;
  if (!c || c->size - c->used < need) {
    size_t csize = need > MX_ARENA_CHUNK / 2 ? need : MX_ARENA_CHUNK;
    if (csize > SIZE_MAX - sizeof(mx_chunk_t)) return NULL;
    mx_chunk_t *nc = malloc(sizeof(mx_chunk_t) + csize);
    if (!nc) return NULL;
    nc->size = csize;
    nc->used = 0;
    arena->total += csize;
    if (need > MX_ARENA_CHUNK / 2 && c) {
      // Big block: link it behind the current chunk so the current one keeps serving.
      nc->next = c->next;
      c->next = nc;
    } else {
      nc->next = c;
      arena->head = nc;
    }
    c = nc;
  }
  void *p = c->data + c->used;
  c->used += need;
  memset(p, 0, need);
  return p;
}

char *mx_arena_strndup(mx_arena_t *arena, const char *s, size_t n) {
  char *p = mx_arena_alloc(arena, n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *mx_arena_strdup(mx_arena_t *arena, const char *s) {
  return mx_arena_strndup(arena, s, strlen(s));
}

void *mx_arena_grow(mx_arena_t *arena, void *old, size_t old_n, size_t new_cap, size_t elem) {
  if (elem && new_cap > SIZE_MAX / elem) return NULL;
  void *p = mx_arena_alloc(arena, new_cap * elem);
  if (!p) return NULL;
  if (old && old_n) memcpy(p, old, old_n * elem);
  return p;
}

size_t mx_arena_bytes(const mx_arena_t *arena) { return arena ? arena->total : 0; }
