// Loading a PJRT plugin and creating its client (see pjrt.h).
#include "backends/pjrt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/pjrt_api.h"

struct mx_pjrt {
  const mx_pj_api_t *api;  // the plugin's table, static in the plugin
  mx_pj_client_t *client;  // owned
  char *path;              // owned copy, for messages
  char *platform;          // owned
  char *platform_version;  // owned
  int32_t n_devices;
  mx_pj_device_t *const *devices;  // owned by the client
  char **kinds;                    // [n_devices], owned
  int *ids;                        // [n_devices]
  uint64_t to_device, to_host;     // bytes transferred (mx_pjrt_transfers)
};

// ============================================================================================
// Plugin errors -> mx status
// ============================================================================================

static const char *code_name(int code) {
  static const char *const names[] = {"OK",
                                      "CANCELLED",
                                      "UNKNOWN",
                                      "INVALID_ARGUMENT",
                                      "DEADLINE_EXCEEDED",
                                      "NOT_FOUND",
                                      "ALREADY_EXISTS",
                                      "PERMISSION_DENIED",
                                      "RESOURCE_EXHAUSTED",
                                      "FAILED_PRECONDITION",
                                      "ABORTED",
                                      "OUT_OF_RANGE",
                                      "UNIMPLEMENTED",
                                      "INTERNAL",
                                      "UNAVAILABLE",
                                      "DATA_LOSS",
                                      "UNAUTHENTICATED"};
  return code >= 0 && code < (int)(sizeof names / sizeof names[0]) ? names[code] : "unknown code";
}

// Turns a plugin error into an mx status ("<what>: <plugin message> (PJRT <CODE>)") and frees
// it. A device that runs out of memory is MX_ERR_NOMEM, an operation the plugin lacks
// MX_ERR_UNSUPPORTED, anything else MX_ERR_RUNTIME.
static mx_status_t pj_fail(const mx_pj_api_t *api, mx_pj_error_t *e, const char *what) {
  mx_pj_error_message_args_t m = {.size = MX_PJ_SIZE(mx_pj_error_message_args_t, message_size),
                                  .error = e};
  api->error_message(&m);
  mx_pj_error_code_args_t c = {.size = MX_PJ_SIZE(mx_pj_error_code_args_t, code), .error = e};
  mx_pj_error_t *e2 = api->error_code(&c);
  int code = MX_PJ_CODE_UNKNOWN;
  if (e2) {  // the code itself could not be read: free that error too, keep "UNKNOWN"
    mx_pj_error_destroy_args_t d = {.size = MX_PJ_SIZE(mx_pj_error_destroy_args_t, error),
                                    .error = e2};
    api->error_destroy(&d);
  } else {
    code = c.code;
  }
  mx_status_t st = code == MX_PJ_CODE_RESOURCE_EXHAUSTED ? MX_ERR_NOMEM
                   : code == MX_PJ_CODE_UNIMPLEMENTED    ? MX_ERR_UNSUPPORTED
                                                         : MX_ERR_RUNTIME;
  int len = m.message_size > 4000 ? 4000 : (int)m.message_size;
  mx_error_set(st, "%s: %.*s (PJRT %s)", what, len, m.message ? m.message : "", code_name(code));
  mx_pj_error_destroy_args_t d = {.size = MX_PJ_SIZE(mx_pj_error_destroy_args_t, error),
                                  .error = e};
  api->error_destroy(&d);
  return st;
}

// ============================================================================================
// The process-wide table of opened plugins
// ============================================================================================

// A plugin's shared object is opened and initialized once per process and never closed
// (pjrt.h says why). dlopen of the same file returns the same handle, which is the key.
enum { MAX_PLUGINS = 8 };
static struct {
  void *handle;
  const mx_pj_api_t *api;
} g_plugins[MAX_PLUGINS];
static int g_n_plugins;
static pthread_mutex_t g_plugins_lock = PTHREAD_MUTEX_INITIALIZER;

// Checks what GetPjrtApi returned before any of its entries is called.
static mx_status_t check_api(const mx_pj_api_t *api, const char *path) {
  if (!api)
    return mx_error_set(MX_ERR_UNSUPPORTED, "PJRT plugin '%s': GetPjrtApi returned no table", path);
  if (api->size < offsetof(mx_pj_api_t, version) + sizeof(size_t))
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "PJRT plugin '%s': function table of %zu bytes is too small to hold a "
                        "version",
                        path, api->size);
  const mx_pj_version_t *v = &api->version;
  if (v->size < MX_PJ_SIZE(mx_pj_version_t, minor))
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "PJRT plugin '%s': version structure of %zu bytes, expected at least %zu",
                        path, v->size, MX_PJ_SIZE(mx_pj_version_t, minor));
  if (v->major != MX_PJ_MAJOR || v->minor < MX_PJ_MIN_MINOR)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "PJRT plugin '%s' implements PJRT C API %d.%d; mlxcel needs %d.%d or a "
                        "later %d.x",
                        path, v->major, v->minor, MX_PJ_MAJOR, MX_PJ_MIN_MINOR, MX_PJ_MAJOR);
  if (api->size < MX_PJ_API_MIN_SIZE)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "PJRT plugin '%s' (API %d.%d): function table of %zu bytes, mlxcel "
                        "needs at least %zu",
                        path, v->major, v->minor, api->size, (size_t)MX_PJ_API_MIN_SIZE);
  return MX_OK;
}

// Opens (or finds) the plugin and runs its one-time initialization.
static mx_status_t plugin_load(const char *path, const mx_pj_api_t **api_out) {
  *api_out = NULL;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    return mx_error_set(MX_ERR_IO, "cannot load PJRT plugin '%s': %s", path,
                        why ? why : "unknown error");
  }
  pthread_mutex_lock(&g_plugins_lock);
  mx_status_t st = MX_OK;
  for (int i = 0; i < g_n_plugins; i++) {
    if (g_plugins[i].handle == h) {
      *api_out = g_plugins[i].api;
      break;
    }
  }
  if (!*api_out) {
    mx_pj_get_api_fn get = NULL;
    void *sym = dlsym(h, MX_PJ_ENTRY_SYMBOL);
    // dlsym returns an object pointer; the function pointer is copied out bitwise, as POSIX
    // allows (a direct cast between the two is not ISO C).
    memcpy(&get, &sym, sizeof get);
    const mx_pj_api_t *api = NULL;
    if (!get) {
      st = mx_error_set(MX_ERR_UNSUPPORTED,
                        "'%s' is not a PJRT plugin: it does not export " MX_PJ_ENTRY_SYMBOL, path);
    } else if (g_n_plugins == MAX_PLUGINS) {
      st = mx_error_set(MX_ERR_RUNTIME, "PJRT plugin '%s': more than %d plugins loaded", path,
                        MAX_PLUGINS);
    } else {
      api = get();
      st = check_api(api, path);
    }
    if (!st) {
      mx_pj_plugin_init_args_t a = {.size = MX_PJ_SIZE(mx_pj_plugin_init_args_t, ext)};
      mx_pj_error_t *e = api->plugin_initialize(&a);
      if (e) {
        st = pj_fail(api, e, "PJRT plugin initialization");
        mx_error_prefix(st, "'%s'", path);
      }
    }
    if (st) {
      // Not a plugin we use: this one may be closed again (nothing of it ran, or it refused to
      // initialize, in which case it holds no state we could leave dangling).
      dlclose(h);
    } else {
      g_plugins[g_n_plugins].handle = h;
      g_plugins[g_n_plugins].api = api;
      g_n_plugins++;
      *api_out = api;
    }
  } else {
    dlclose(h);  // drops the reference this dlopen added; the table's reference remains
  }
  pthread_mutex_unlock(&g_plugins_lock);
  return st;
}

// ============================================================================================
// Client
// ============================================================================================

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    if (n) memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

// Reads the client's description: platform name and version, the addressable devices.
static mx_status_t describe(mx_pjrt_t *p) {
  const mx_pj_api_t *api = p->api;
  mx_pj_client_text_args_t t = {.size = MX_PJ_SIZE(mx_pj_client_text_args_t, text_size),
                                .client = p->client};
  mx_pj_error_t *e = api->client_platform_name(&t);
  if (e) return pj_fail(api, e, "PJRT platform name");
  if (!(p->platform = dup_n(t.text, t.text_size)))
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  t.text = NULL;
  t.text_size = 0;
  if ((e = api->client_platform_version(&t))) return pj_fail(api, e, "PJRT platform version");
  if (!(p->platform_version = dup_n(t.text, t.text_size)))
    return mx_error_set(MX_ERR_NOMEM, "out of memory");

  mx_pj_client_devices_args_t d = {.size = MX_PJ_SIZE(mx_pj_client_devices_args_t, n_devices),
                                   .client = p->client};
  if ((e = api->client_addressable_devices(&d))) return pj_fail(api, e, "PJRT device list");
  if (d.n_devices == 0 || d.n_devices > INT32_MAX)
    return mx_error_set(MX_ERR_RUNTIME, "PJRT platform '%s' offers %zu devices to this process",
                        p->platform, d.n_devices);
  p->devices = d.devices;
  p->kinds = calloc(d.n_devices, sizeof *p->kinds);
  p->ids = calloc(d.n_devices, sizeof *p->ids);
  if (!p->kinds || !p->ids) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  p->n_devices = (int32_t)d.n_devices;
  for (int32_t i = 0; i < p->n_devices; i++) {
    mx_pj_device_desc_args_t g = {.size = MX_PJ_SIZE(mx_pj_device_desc_args_t, desc),
                                  .device = d.devices[i]};
    if ((e = api->device_description(&g))) return pj_fail(api, e, "PJRT device description");
    mx_pj_desc_kind_args_t k = {.size = MX_PJ_SIZE(mx_pj_desc_kind_args_t, kind_size),
                                .desc = g.desc};
    if ((e = api->desc_kind(&k))) return pj_fail(api, e, "PJRT device kind");
    if (!(p->kinds[i] = dup_n(k.kind, k.kind_size)))
      return mx_error_set(MX_ERR_NOMEM, "out of memory");
    mx_pj_desc_id_args_t id = {.size = MX_PJ_SIZE(mx_pj_desc_id_args_t, id), .desc = g.desc};
    if ((e = api->desc_id(&id))) return pj_fail(api, e, "PJRT device id");
    p->ids[i] = id.id;
  }
  return MX_OK;
}

mx_status_t mx_pjrt_open(const char *path, mx_pjrt_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_pjrt_open: out is NULL");
  *out = NULL;
  if (!path || !path[0]) return mx_error_set(MX_ERR_INVALID_ARG, "no PJRT plugin path given");
  const mx_pj_api_t *api = NULL;
  mx_status_t st = plugin_load(path, &api);
  if (st) return st;
  mx_pjrt_t *p = calloc(1, sizeof *p);
  if (!p || !(p->path = dup_n(path, strlen(path)))) {
    free(p);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  p->api = api;
  // No options: every plugin's client has defaults for all of them; the key-value store
  // callbacks are only for clients spanning several processes.
  mx_pj_client_create_args_t c = {.size = MX_PJ_SIZE(mx_pj_client_create_args_t, kv_try_get_user)};
  mx_pj_error_t *e = api->client_create(&c);
  if (e) {
    st = pj_fail(api, e, "PJRT client creation");
  } else {
    p->client = c.client;
    st = describe(p);
  }
  if (st) {
    mx_error_prefix(st, "PJRT plugin '%s'", path);
    mx_pjrt_close(p);
    return st;
  }
  *out = p;
  return MX_OK;
}

void mx_pjrt_close(mx_pjrt_t *p) {
  if (!p) return;
  if (p->client) {
    mx_pj_client_destroy_args_t d = {.size = MX_PJ_SIZE(mx_pj_client_destroy_args_t, client),
                                     .client = p->client};
    mx_pj_error_t *e = p->api->client_destroy(&d);
    // Nothing to report to at teardown; the error object still has to be freed.
    if (e) pj_fail(p->api, e, "PJRT client destruction");
  }
  for (int32_t i = 0; p->kinds && i < p->n_devices; i++) free(p->kinds[i]);
  free(p->kinds);
  free(p->ids);
  free(p->platform);
  free(p->platform_version);
  free(p->path);
  free(p);
}

const char *mx_pjrt_platform(const mx_pjrt_t *p) { return p->platform; }
const char *mx_pjrt_platform_version(const mx_pjrt_t *p) { return p->platform_version; }

void mx_pjrt_api_version(const mx_pjrt_t *p, int *major, int *minor) {
  *major = p->api->version.major;
  *minor = p->api->version.minor;
}

int32_t mx_pjrt_device_count(const mx_pjrt_t *p) { return p->n_devices; }

const char *mx_pjrt_device_kind(const mx_pjrt_t *p, int32_t i) {
  return i >= 0 && i < p->n_devices ? p->kinds[i] : NULL;
}

int mx_pjrt_device_id(const mx_pjrt_t *p, int32_t i) {
  return i >= 0 && i < p->n_devices ? p->ids[i] : -1;
}

// ============================================================================================
// Compilation
// ============================================================================================

struct mx_pjrt_exec {
  const mx_pj_api_t *api;
  mx_pj_loaded_exec_t *exec;  // owned
  int32_t n_outputs;
};

// The compiled program behind x->exec (owned by the caller: exec_destroy).
static mx_status_t get_exec(const mx_pjrt_exec_t *x, mx_pj_exec_t **out) {
  mx_pj_get_exec_args_t g = {.size = MX_PJ_SIZE(mx_pj_get_exec_args_t, exec), .loaded = x->exec};
  mx_pj_error_t *e = x->api->loaded_exec_get_exec(&g);
  if (e) return pj_fail(x->api, e, "PJRT executable");
  *out = g.exec;
  return MX_OK;
}

static void destroy_exec(const mx_pj_api_t *api, mx_pj_exec_t *ex) {
  mx_pj_exec_destroy_args_t d = {.size = MX_PJ_SIZE(mx_pj_exec_destroy_args_t, exec), .exec = ex};
  mx_pj_error_t *e = api->exec_destroy(&d);
  if (e) pj_fail(api, e, "PJRT executable destruction");
}

// Wraps a loaded program: reads its output count (every call needs room for that many).
static mx_status_t wrap_exec(const mx_pj_api_t *api, mx_pj_loaded_exec_t *le,
                             mx_pjrt_exec_t **out) {
  mx_pjrt_exec_t *x = calloc(1, sizeof *x);
  if (!x) {
    mx_pj_loaded_exec_destroy_args_t d = {
        .size = MX_PJ_SIZE(mx_pj_loaded_exec_destroy_args_t, exec), .exec = le};
    mx_pj_error_t *e = api->loaded_exec_destroy(&d);
    if (e) pj_fail(api, e, "PJRT executable destruction");
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  x->api = api;
  x->exec = le;
  mx_pj_exec_t *ex = NULL;
  mx_status_t st = get_exec(x, &ex);
  if (!st) {
    mx_pj_exec_num_outputs_args_t n = {.size = MX_PJ_SIZE(mx_pj_exec_num_outputs_args_t, n_outputs),
                                       .exec = ex};
    mx_pj_error_t *e = api->exec_num_outputs(&n);
    if (e) {
      st = pj_fail(api, e, "PJRT executable outputs");
    } else if (n.n_outputs > INT32_MAX) {
      st = mx_error_set(MX_ERR_RUNTIME, "PJRT executable with %zu outputs", n.n_outputs);
    } else {
      x->n_outputs = (int32_t)n.n_outputs;
    }
    destroy_exec(api, ex);
  }
  if (st) {
    mx_pjrt_exec_free(x);
    return st;
  }
  *out = x;
  return MX_OK;
}

// The compile options, a serialized xla.CompileOptionsProto written by hand (three protobuf
// fields; no protobuf library needed): field 3, executable_build_options, a length-delimited
// ExecutableBuildOptionsProto (tag 0x1a, 4 bytes) holding field 4 num_replicas = 1 (varint, tag
// 0x20) and field 5 num_partitions = 1 (tag 0x28). An empty message is not enough: XLA's CPU
// client then sees zero replicas and aborts the process on a failed internal check.
static const char k_compile_options[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01};

mx_status_t mx_pjrt_compile(mx_pjrt_t *p, const char *module, size_t n, mx_pjrt_exec_t **out) {
  *out = NULL;
  if (!module || n == 0) return mx_error_set(MX_ERR_INVALID_ARG, "PJRT compile: empty module");
  mx_pj_program_t prog = {.size = MX_PJ_SIZE(mx_pj_program_t, format_size),
                          .code = module,
                          .code_size = n,
                          .format = "mlir",
                          .format_size = 4};
  mx_pj_compile_args_t a = {.size = MX_PJ_SIZE(mx_pj_compile_args_t, exec),
                            .client = p->client,
                            .program = &prog,
                            .options = k_compile_options,
                            .options_size = sizeof k_compile_options};
  mx_pj_error_t *e = p->api->client_compile(&a);
  if (e) return pj_fail(p->api, e, "PJRT compile");
  return wrap_exec(p->api, a.exec, out);
}

int32_t mx_pjrt_exec_outputs(const mx_pjrt_exec_t *x) { return x->n_outputs; }

mx_status_t mx_pjrt_exec_serialize(const mx_pjrt_exec_t *x, char **bytes, size_t *n) {
  *bytes = NULL;
  *n = 0;
  mx_pj_exec_t *ex = NULL;
  mx_status_t st = get_exec(x, &ex);
  if (st) return st;
  mx_pj_exec_serialize_args_t a = {.size = MX_PJ_SIZE(mx_pj_exec_serialize_args_t, deleter),
                                   .exec = ex};
  mx_pj_error_t *e = x->api->exec_serialize(&a);
  if (e) {
    st = pj_fail(x->api, e, "PJRT executable serialization");
  } else {
    *bytes = malloc(a.n_bytes ? a.n_bytes : 1);
    if (!*bytes) {
      st = mx_error_set(MX_ERR_NOMEM, "out of memory (%zu bytes of executable)", a.n_bytes);
    } else {
      if (a.n_bytes) memcpy(*bytes, a.bytes, a.n_bytes);
      *n = a.n_bytes;
    }
    if (a.deleter) a.deleter(a.serialized);
  }
  destroy_exec(x->api, ex);
  return st;
}

mx_status_t mx_pjrt_exec_load(mx_pjrt_t *p, const char *bytes, size_t n, mx_pjrt_exec_t **out) {
  *out = NULL;
  if (!bytes || n == 0) return mx_error_set(MX_ERR_INVALID_ARG, "PJRT executable load: no bytes");
  mx_pj_exec_deserialize_args_t a = {
      .size = MX_PJ_SIZE(mx_pj_exec_deserialize_args_t, n_override_options),
      .client = p->client,
      .bytes = bytes,
      .n_bytes = n};
  mx_pj_error_t *e = p->api->exec_deserialize_and_load(&a);
  if (e) return pj_fail(p->api, e, "PJRT executable load");
  return wrap_exec(p->api, a.exec, out);
}

void mx_pjrt_exec_free(mx_pjrt_exec_t *x) {
  if (!x) return;
  mx_pj_loaded_exec_destroy_args_t d = {.size = MX_PJ_SIZE(mx_pj_loaded_exec_destroy_args_t, exec),
                                        .exec = x->exec};
  mx_pj_error_t *e = x->api->loaded_exec_destroy(&d);
  if (e) pj_fail(x->api, e, "PJRT executable destruction");
  free(x);
}

// ============================================================================================
// Buffers and execution
// ============================================================================================

// Our device buffers are the plugin's: the handle type is ours only so that pjrt.h needs no
// interface declaration.
static mx_pj_buffer_t *pj_buf(mx_pjrt_buf_t *b) { return (mx_pj_buffer_t *)b; }

static int pj_type(mx_elem_type_t et) {
  switch (et) {
    case MX_ELEM_I1:
      return MX_PJ_TYPE_PRED;
    case MX_ELEM_I8:
      return MX_PJ_TYPE_S8;
    case MX_ELEM_I16:
      return MX_PJ_TYPE_S16;
    case MX_ELEM_I32:
      return MX_PJ_TYPE_S32;
    case MX_ELEM_I64:
      return MX_PJ_TYPE_S64;
    case MX_ELEM_UI8:
      return MX_PJ_TYPE_U8;
    case MX_ELEM_UI16:
      return MX_PJ_TYPE_U16;
    case MX_ELEM_UI32:
      return MX_PJ_TYPE_U32;
    case MX_ELEM_UI64:
      return MX_PJ_TYPE_U64;
    case MX_ELEM_F16:
      return MX_PJ_TYPE_F16;
    case MX_ELEM_F32:
      return MX_PJ_TYPE_F32;
    case MX_ELEM_F64:
      return MX_PJ_TYPE_F64;
    case MX_ELEM_BF16:
      return MX_PJ_TYPE_BF16;
    default:
      return 0;
  }
}

// Waits for an event and destroys it; the event's error (the work it tracks failed) is returned.
static mx_status_t await_event(const mx_pj_api_t *api, mx_pj_event_t *ev, const char *what) {
  if (!ev) return MX_OK;
  mx_pj_event_args_t a = {.size = MX_PJ_SIZE(mx_pj_event_args_t, event), .event = ev};
  mx_pj_error_t *e = api->event_await(&a);
  mx_status_t st = e ? pj_fail(api, e, what) : MX_OK;
  e = api->event_destroy(&a);
  if (e) pj_fail(api, e, "PJRT event destruction");
  return st;
}

mx_status_t mx_pjrt_buf_upload(mx_pjrt_t *p, const mx_type_t *t, const void *data,
                               mx_pjrt_buf_t **out) {
  *out = NULL;
  char tb[96];
  int type = t->kind == MX_TYPE_TENSOR && !t->quant ? pj_type(t->elem) : 0;
  if (!type)
    return mx_error_set(MX_ERR_UNSUPPORTED, "PJRT upload: no device type for %s",
                        mx_type_str(t, tb, sizeof tb));
  mx_pj_buffer_from_host_args_t a = {
      .size = MX_PJ_SIZE(mx_pj_buffer_from_host_args_t, buffer),
      .client = p->client,
      .data = data,
      .type = type,
      .dims = t->dims,
      .n_dims = (size_t)t->rank,
      .semantics = MX_PJ_HOST_COPY_DURING_CALL,
      .device = p->devices[0],
  };
  mx_pj_error_t *e = p->api->client_buffer_from_host(&a);
  if (e) return pj_fail(p->api, e, "PJRT upload");
  // "During the call" lets the plugin still be reading when it returns on some clients: the
  // event says when the host copy may go, and the caller frees it right after.
  mx_status_t st = await_event(p->api, a.done_with_host, "PJRT upload");
  if (st) {
    mx_pjrt_buf_free(p, (mx_pjrt_buf_t *)a.buffer);
    return st;
  }
  p->to_device += mx_type_nbytes(t);
  *out = (mx_pjrt_buf_t *)a.buffer;
  return MX_OK;
}

mx_status_t mx_pjrt_buf_download(mx_pjrt_t *p, mx_pjrt_buf_t *b, void *dst, size_t n) {
  mx_pj_buffer_to_host_args_t a = {.size = MX_PJ_SIZE(mx_pj_buffer_to_host_args_t, event),
                                   .src = pj_buf(b),
                                   .dst = dst,
                                   .dst_size = n};
  mx_pj_error_t *e = p->api->buffer_to_host(&a);
  if (e) return pj_fail(p->api, e, "PJRT download");
  mx_status_t st = await_event(p->api, a.event, "PJRT download");
  if (!st) p->to_host += n;
  return st;
}

void mx_pjrt_buf_free(mx_pjrt_t *p, mx_pjrt_buf_t *b) {
  if (!b) return;
  mx_pj_buffer_destroy_args_t d = {.size = MX_PJ_SIZE(mx_pj_buffer_destroy_args_t, buffer),
                                   .buffer = pj_buf(b)};
  mx_pj_error_t *e = p->api->buffer_destroy(&d);
  if (e) pj_fail(p->api, e, "PJRT buffer destruction");
}

mx_status_t mx_pjrt_execute(mx_pjrt_t *p, mx_pjrt_exec_t *x, mx_pjrt_buf_t *const *args,
                            int32_t n_args, mx_pjrt_buf_t **outs) {
  mx_pj_execute_options_t o = {.size = MX_PJ_SIZE(mx_pj_execute_options_t, multi_slice_config)};
  mx_pj_buffer_t *const *arg_list = (mx_pj_buffer_t *const *)args;
  mx_pj_buffer_t **out_list = (mx_pj_buffer_t **)outs;
  mx_pj_execute_args_t a = {.size = MX_PJ_SIZE(mx_pj_execute_args_t, device),
                            .exec = x->exec,
                            .options = &o,
                            .args = &arg_list,
                            .n_devices = 1,
                            .n_args = (size_t)n_args,
                            .outputs = &out_list};
  mx_pj_error_t *e = p->api->loaded_exec_execute(&a);
  return e ? pj_fail(p->api, e, "PJRT execute") : MX_OK;
}

void mx_pjrt_transfers(const mx_pjrt_t *p, uint64_t *to_device, uint64_t *to_host) {
  *to_device = p->to_device;
  *to_host = p->to_host;
}
