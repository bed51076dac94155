// A PJRT plugin loaded at run time and one client of it: the device side of the "xla" backend.
// PJRT is the C interface XLA's vendors ship as a shared object exporting GetPjrtApi (XLA's CPU
// client, jax's CUDA and ROCm plugins, TPUs, ...); nothing of it is needed at build time.
//
// Loading checks, before anything is called: the file opens, exports GetPjrtApi, reports
// interface major MX_PJ_MAJOR and minor >= MX_PJ_MIN_MINOR (pjrt_api.h), and its function table
// and version structure are large enough for every entry and field we use. Every failure,
// including the plugin's own errors (message and status code), becomes an mx status with the
// plugin's path in the message.
//
// The shared object stays loaded for the rest of the process once opened: XLA's plugins start
// threads and register process-wide state that unloading would leave dangling, and the
// interface's one-time initialization must run once per process per plugin. Clients are
// created and destroyed freely.
#ifndef MX_BACKENDS_PJRT_H
#define MX_BACKENDS_PJRT_H

#include <stdint.h>

#include "mlxcel/hlo.h"

typedef struct mx_pjrt mx_pjrt_t;

// Loads the plugin at `path` (borrowed for the call) and creates a client on it. On success
// *out is owned by the caller (mx_pjrt_close). Errors: MX_ERR_INVALID_ARG for a NULL or empty
// path, MX_ERR_IO when the file cannot be loaded, MX_ERR_UNSUPPORTED for a library that is not
// a PJRT plugin or one of an incompatible interface version (both versions in the message),
// MX_ERR_RUNTIME when the plugin fails to initialize or to create its client.
mx_status_t mx_pjrt_open(const char *path, mx_pjrt_t **out);
void mx_pjrt_close(mx_pjrt_t *p);  // destroys the client; accepts NULL

// Descriptions, owned by p and valid until mx_pjrt_close: the platform name ("cpu", "cuda",
// ...) and version the client reports, the interface version the plugin was built with, the
// number of devices this process can use and the kind of device i ("cpu", "NVIDIA H200", ...).
const char *mx_pjrt_platform(const mx_pjrt_t *p);
const char *mx_pjrt_platform_version(const mx_pjrt_t *p);
void mx_pjrt_api_version(const mx_pjrt_t *p, int *major, int *minor);
int32_t mx_pjrt_device_count(const mx_pjrt_t *p);
const char *mx_pjrt_device_kind(const mx_pjrt_t *p, int32_t i);  // NULL when i is out of range
int mx_pjrt_device_id(const mx_pjrt_t *p, int32_t i);            // -1 when i is out of range

// A program compiled for the client's first device; owned by the caller (mx_pjrt_exec_free),
// which must free it before closing the client.
typedef struct mx_pjrt_exec mx_pjrt_exec_t;

// Compiles a StableHLO module (text or bytecode, `n` bytes, borrowed for the call) whose entry
// function is named `main` (XLA compiles only that one), for one replica and one partition.
// A module the plugin rejects is MX_ERR_RUNTIME with the plugin's diagnostic in the message.
mx_status_t mx_pjrt_compile(mx_pjrt_t *p, const char *module, size_t n, mx_pjrt_exec_t **out);
void mx_pjrt_exec_free(mx_pjrt_exec_t *e);  // accepts NULL
// Number of results a call of e returns (one buffer each).
int32_t mx_pjrt_exec_outputs(const mx_pjrt_exec_t *e);

// The compiled program as bytes the same plugin (same version) can load again without
// compiling: *bytes (*n of them) owned by the caller (free()).
mx_status_t mx_pjrt_exec_serialize(const mx_pjrt_exec_t *e, char **bytes, size_t *n);
// Loads what mx_pjrt_exec_serialize wrote (borrowed for the call). Bytes of another plugin or
// version, or damaged ones, are an error (MX_ERR_RUNTIME with the plugin's message).
mx_status_t mx_pjrt_exec_load(mx_pjrt_t *p, const char *bytes, size_t n, mx_pjrt_exec_t **out);

// ---- Device buffers ------------------------------------------------------------------------

// A buffer in the memory of the client's first device, owned by whoever holds it
// (mx_pjrt_buf_free), which must free it before closing the client.
typedef struct mx_pjrt_buf mx_pjrt_buf_t;

// Copies a dense row-major host array (type t, mx_type_nbytes(t) bytes at data, borrowed for
// the call: the plugin has its own copy when this returns) to a new device buffer. Element
// types without a PJRT equivalent (i4, ...) are MX_ERR_UNSUPPORTED; a device out of memory is
// MX_ERR_NOMEM.
mx_status_t mx_pjrt_buf_upload(mx_pjrt_t *p, const mx_type_t *t, const void *data,
                               mx_pjrt_buf_t **out);
// Copies the buffer to dst (n bytes, its exact size) and waits for the copy.
mx_status_t mx_pjrt_buf_download(mx_pjrt_t *p, mx_pjrt_buf_t *b, void *dst, size_t n);
void mx_pjrt_buf_free(mx_pjrt_t *p, mx_pjrt_buf_t *b);  // accepts NULL

// Runs e on args[n_args] (borrowed) and writes its mx_pjrt_exec_outputs(e) result buffers to
// outs[] (owned by the caller). An argument the program aliases to a result
// (tf.aliasing_output) is donated: its memory becomes that result's, and the caller must then
// only free the argument's handle (mx_pjrt_buf_free), never use it again. Returns when the call
// is queued; reading a result (mx_pjrt_buf_download) waits for it.
mx_status_t mx_pjrt_execute(mx_pjrt_t *p, mx_pjrt_exec_t *e, mx_pjrt_buf_t *const *args,
                            int32_t n_args, mx_pjrt_buf_t **outs);

// Bytes copied host -> device (uploads) and device -> host (downloads) by this client so far:
// how a test tells what a decode step moves.
void mx_pjrt_transfers(const mx_pjrt_t *p, uint64_t *to_device, uint64_t *to_host);

#endif  // MX_BACKENDS_PJRT_H
