// mlxcel-xla base: status codes, error messages, arena allocator, growable strings.
//
// Error convention: every fallible function returns mx_status_t (MX_OK == 0). On failure it
// records a human-readable message in a thread-local buffer, read with mx_error_message(),
// valid until the next failing call on the same thread.
#ifndef MLXCEL_BASE_H
#define MLXCEL_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mx_status {
  MX_OK = 0,
  MX_ERR_INVALID_ARG = 1,  // caller passed something malformed
  MX_ERR_PARSE = 2,        // text could not be parsed (message has file:line:col)
  MX_ERR_VERIFY = 3,       // IR is ill-formed (wrong shape/type/attribute)
  MX_ERR_UNSUPPORTED = 4,  // well-formed, but this engine does not implement it
  MX_ERR_NOMEM = 5,        // allocation failed
  MX_ERR_RUNTIME = 6,      // execution failed (e.g. resource limit)
  MX_ERR_IO = 7,           // file system error
} mx_status_t;

// Records a formatted message for the current thread and returns `status` (for `return`).
mx_status_t mx_error_set(mx_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
mx_status_t mx_error_setv(mx_status_t status, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
// Prepends "prefix: " to the current message (adds context while unwinding); returns status.
mx_status_t mx_error_prefix(mx_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
// The current thread's last message ("" if none). Owned by the library; valid until the next
// mx_error_* call on this thread.
const char *mx_error_message(void);
void mx_error_clear(void);
const char *mx_status_name(mx_status_t status);

// ---- Progress of long steps: the caller's hook (the library prints nothing) ----
// A step that can take seconds (loading a model: "quantizing" or "dequantizing", "mapping",
// "converting"; a cpu session packing its weights: "packing") reports `done` of `total` bytes of
// its stage to the hook, on the thread that called the library: once when the stage starts
// (done 0), after each tensor, and when it ends (done == total). `stage` is a static string.
typedef void (*mx_progress_fn)(void *user, const char *stage, uint64_t done, uint64_t total);
typedef struct mx_progress {
  mx_progress_fn fn;  // NULL = no reports
  void *user;         // borrowed; passed back to fn
} mx_progress_t;
// Calls p->fn when p and p->fn are set.
static inline void mx_progress_report(const mx_progress_t *p, const char *stage, uint64_t done,
                                      uint64_t total) {
  if (p && p->fn) p->fn(p->user, stage, done, total);
}

// ---- Arena: bump allocator; everything is freed at once by mx_arena_destroy. ----
typedef struct mx_arena mx_arena_t;

mx_arena_t *mx_arena_create(void);         // NULL on out-of-memory
void mx_arena_destroy(mx_arena_t *arena);  // accepts NULL
// Zeroed, 16-byte aligned memory living as long as the arena. NULL on out-of-memory.
void *mx_arena_alloc(mx_arena_t *arena, size_t size);
// Copies n bytes of s and appends a NUL.
char *mx_arena_strndup(mx_arena_t *arena, const char *s, size_t n);
char *mx_arena_strdup(mx_arena_t *arena, const char *s);
// Grows an arena-owned array: returns a new block of new_cap*elem bytes holding the first
// old_n*elem bytes of `old` (old memory is simply abandoned inside the arena).
void *mx_arena_grow(mx_arena_t *arena, void *old, size_t old_n, size_t new_cap, size_t elem);
// Total bytes requested from the system (for limits and tests).
size_t mx_arena_bytes(const mx_arena_t *arena);

// ---- Growable string buffer (heap). ----
typedef struct mx_strbuf {
  char *data;  // NUL-terminated; owned by the buffer (heap); NULL until first append
  size_t len;
  size_t cap;
  bool oom;  // sticky: set when an allocation failed; contents are then truncated
} mx_strbuf_t;

void mx_strbuf_init(mx_strbuf_t *sb);
void mx_strbuf_free(mx_strbuf_t *sb);  // accepts a zeroed buffer
void mx_strbuf_append(mx_strbuf_t *sb, const char *s, size_t n);
void mx_strbuf_puts(mx_strbuf_t *sb, const char *s);
void mx_strbuf_printf(mx_strbuf_t *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Transfers ownership of the data to the caller (free() it); the buffer is reset.
char *mx_strbuf_take(mx_strbuf_t *sb, size_t *len);

// Reads a whole file into a NUL-terminated heap buffer (caller frees). MX_ERR_IO on failure.
mx_status_t mx_read_file(const char *path, char **data, size_t *len);
// Same, refusing (MX_ERR_IO, "'PATH' is larger than the limit of N bytes") a file longer than
// max_bytes without reading more than that (the loaders' limit on the JSON files they read).
mx_status_t mx_read_file_max(const char *path, size_t max_bytes, char **data, size_t *len);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_BASE_H
