// Backend registry: the built-in backends (src/backends/builtin.h) plus those registered at run
// time (tests, out-of-tree backends).
#include <stdio.h>
#include <string.h>

#include "session/session_internal.h"

enum { MAX_BACKENDS = 16 };

static const mx_backend_t *g_extra[MAX_BACKENDS];
static int g_n_extra;

#define MX_BACKEND_ENTRY(name) &mx_backend_##name,
static const mx_backend_t *const g_builtin[] = {MX_BUILTIN_BACKENDS(MX_BACKEND_ENTRY)};
#undef MX_BACKEND_ENTRY
enum { N_BUILTIN = (int)(sizeof g_builtin / sizeof g_builtin[0]) };

const mx_backend_t *mx_backend_find(const char *name) {
  if (!name) return NULL;
  for (int i = 0; i < N_BUILTIN; i++)
    if (strcmp(g_builtin[i]->name, name) == 0) return g_builtin[i];
  for (int i = 0; i < g_n_extra; i++)
    if (strcmp(g_extra[i]->name, name) == 0) return g_extra[i];
  return NULL;
}

mx_status_t mx_backend_register(const mx_backend_t *b) {
  if (!b || !b->name || !b->name[0] || !b->create || !b->prefill || !b->decode || !b->reset ||
      !b->destroy)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_backend_register: incomplete backend vtable");
  const mx_backend_batch_t *bb = b->batch;
  if (bb && (!bb->create || !bb->prefill || !bb->decode || !bb->reset || !bb->destroy))
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_backend_register: incomplete batch vtable");
  if (mx_backend_find(b->name))
    return mx_error_set(MX_ERR_INVALID_ARG, "backend '%s' is already registered", b->name);
  if (g_n_extra >= MAX_BACKENDS)
    return mx_error_set(MX_ERR_RUNTIME, "backend registry full (%d entries)", MAX_BACKENDS);
  g_extra[g_n_extra++] = b;
  return MX_OK;
}

void mx_backend_list_names(char *buf, size_t n) {
  if (!buf || n == 0) return;
  buf[0] = '\0';
  size_t used = 0;
  for (int i = 0; i < N_BUILTIN + g_n_extra; i++) {
    const mx_backend_t *b = i < N_BUILTIN ? g_builtin[i] : g_extra[i - N_BUILTIN];
    int k = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", b->name);
    if (k < 0 || (size_t)k >= n - used) return;  // truncated: keep what fits
    used += (size_t)k;
  }
}

const mx_backend_batch_t *mx_backend_batch_ops(const mx_backend_t *b) {
  return b ? b->batch : NULL;
}
