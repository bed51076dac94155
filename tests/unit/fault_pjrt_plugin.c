// A PJRT plugin for test_backend_xla's failures that a healthy CPU plugin never shows: it hands
// every entry to the real plugin named by $MX_FAULT_PJRT_REAL and injects the fault that
// $MX_FAULT_PJRT names, read at each call (so one process can test several):
//   "compile"  every compile fails with INVALID_ARGUMENT, as a compiler rejecting a program does;
//   "oom:N"    host-to-device copies after the first N fail with RESOURCE_EXHAUSTED, as a device
//              out of memory does (N counts from the moment the mode is set);
//   unset      no fault.
// Its own errors are two static objects; error_message / error_code / error_destroy answer for
// those and forward every other error to the real plugin.
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backends/pjrt_api.h"

struct mx_pj_error {
  int code;
  const char *message;
};

static struct mx_pj_error g_rejected = {MX_PJ_CODE_INVALID_ARGUMENT,
                                        "fault plugin: the compiler rejects this program"};
static struct mx_pj_error g_no_memory = {
    MX_PJ_CODE_RESOURCE_EXHAUSTED, "fault plugin: out of device memory allocating the buffer"};

static const mx_pj_api_t *g_real;
static mx_pj_api_t g_api;
static char g_mode[64];  // the mode the copy count belongs to
static long g_copies;

static bool ours(const mx_pj_error_t *e) { return e == &g_rejected || e == &g_no_memory; }

// The current mode; a change of mode restarts the copy count.
static const char *mode(void) {
  const char *m = getenv("MX_FAULT_PJRT");
  if (!m) m = "";
  if (strncmp(m, g_mode, sizeof g_mode) != 0) {
    strncpy(g_mode, m, sizeof g_mode - 1);
    g_copies = 0;
  }
  return m;
}

static void error_destroy(mx_pj_error_destroy_args_t *a) {
  if (!ours(a->error)) g_real->error_destroy(a);
}

static void error_message(mx_pj_error_message_args_t *a) {
  if (!ours(a->error)) {
    g_real->error_message(a);
    return;
  }
  a->message = a->error->message;
  a->message_size = strlen(a->error->message);
}

static mx_pj_error_t *error_code(mx_pj_error_code_args_t *a) {
  if (!ours(a->error)) return g_real->error_code(a);
  a->code = a->error->code;
  return NULL;
}

static mx_pj_error_t *client_compile(mx_pj_compile_args_t *a) {
  if (strcmp(mode(), "compile") == 0) return &g_rejected;
  return g_real->client_compile(a);
}

static mx_pj_error_t *buffer_from_host(mx_pj_buffer_from_host_args_t *a) {
  const char *m = mode();
  if (strncmp(m, "oom:", 4) == 0 && g_copies++ >= atol(m + 4)) return &g_no_memory;
  return g_real->client_buffer_from_host(a);
}

__attribute__((visibility("default"))) const mx_pj_api_t *GetPjrtApi(void);
const mx_pj_api_t *GetPjrtApi(void) {
  if (g_real) return &g_api;
  const char *path = getenv("MX_FAULT_PJRT_REAL");
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  mx_pj_get_api_fn get = h ? (mx_pj_get_api_fn)dlsym(h, MX_PJ_ENTRY_SYMBOL) : NULL;
  const mx_pj_api_t *real = get ? get() : NULL;
  if (!real || real->size < sizeof g_api) return NULL;  // the loader reports "no table"
  g_real = real;
  memcpy(&g_api, real, sizeof g_api);
  g_api.size = sizeof g_api;  // the entries past ours are not forwarded
  g_api.error_destroy = error_destroy;
  g_api.error_message = error_message;
  g_api.error_code = error_code;
  g_api.client_compile = client_compile;
  g_api.client_buffer_from_host = buffer_from_host;
  return &g_api;
}
