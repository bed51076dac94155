// Our own declarations of the part of the PJRT C interface that mlxcel uses (the interface XLA's
// plugins export through GetPjrtApi). Written from the published layout of the interface, not
// copied from its header: only the entries and argument structures we call are spelled out, the
// other entries of the function table are placeholders that keep the offsets right.
//
// Versioning rules of the interface, which the loader (pjrt.c) relies on:
// - a plugin reports the (major, minor) version it was built with in its function table;
//   a different major means a different ABI, a higher minor only appends entries and fields;
// - every structure begins with its size in bytes (offset of the end of its last field) and an
//   extension chain pointer. The caller fills the size of the argument structures it passes; the
//   plugin fills the size of the table it returns, so the table's size tells which entries exist.
//
// Everything here is layout only: no definitions, no ownership (pjrt.h says who owns what).
#ifndef MX_BACKENDS_PJRT_API_H
#define MX_BACKENDS_PJRT_API_H

#include <stddef.h>
#include <stdint.h>

// The interface version these declarations follow. A plugin of another major is refused. The
// minimum minor is the oldest plugin these declarations have been run against (xla_cpu_pjrt
// 0.0.1, interface 0.81; docs/adr/0007-pjrt-cpu-plugin.md): older ones may lack fields we fill.
enum { MX_PJ_MAJOR = 0, MX_PJ_MIN_MINOR = 81 };

// Size of a structure as the interface counts it: up to the end of the named last field (so a
// later version appending fields does not change the size an older caller reports).
#define MX_PJ_SIZE(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))

// Opaque objects owned by the plugin.
typedef struct mx_pj_error mx_pj_error_t;
typedef struct mx_pj_client mx_pj_client_t;
typedef struct mx_pj_device mx_pj_device_t;
typedef struct mx_pj_device_desc mx_pj_device_desc_t;
typedef struct mx_pj_event mx_pj_event_t;
typedef struct mx_pj_buffer mx_pj_buffer_t;
typedef struct mx_pj_loaded_exec mx_pj_loaded_exec_t;
typedef struct mx_pj_exec mx_pj_exec_t;

// The common head of every structure: size, then an extension chain we always leave NULL.
#define MX_PJ_HEAD \
  size_t size;     \
  void *ext

// Status codes carried by an error (the gRPC / absl numbering).
enum {
  MX_PJ_CODE_CANCELLED = 1,
  MX_PJ_CODE_UNKNOWN = 2,
  MX_PJ_CODE_INVALID_ARGUMENT = 3,
  MX_PJ_CODE_DEADLINE_EXCEEDED = 4,
  MX_PJ_CODE_NOT_FOUND = 5,
  MX_PJ_CODE_ALREADY_EXISTS = 6,
  MX_PJ_CODE_PERMISSION_DENIED = 7,
  MX_PJ_CODE_RESOURCE_EXHAUSTED = 8,
  MX_PJ_CODE_FAILED_PRECONDITION = 9,
  MX_PJ_CODE_ABORTED = 10,
  MX_PJ_CODE_OUT_OF_RANGE = 11,
  MX_PJ_CODE_UNIMPLEMENTED = 12,
  MX_PJ_CODE_INTERNAL = 13,
  MX_PJ_CODE_UNAVAILABLE = 14,
  MX_PJ_CODE_DATA_LOSS = 15,
  MX_PJ_CODE_UNAUTHENTICATED = 16,
};

// Element types of device buffers (the interface's numbering; only those our graphs use).
enum {
  MX_PJ_TYPE_PRED = 1,
  MX_PJ_TYPE_S8 = 2,
  MX_PJ_TYPE_S16 = 3,
  MX_PJ_TYPE_S32 = 4,
  MX_PJ_TYPE_S64 = 5,
  MX_PJ_TYPE_U8 = 6,
  MX_PJ_TYPE_U16 = 7,
  MX_PJ_TYPE_U32 = 8,
  MX_PJ_TYPE_U64 = 9,
  MX_PJ_TYPE_F16 = 10,
  MX_PJ_TYPE_F32 = 11,
  MX_PJ_TYPE_F64 = 12,
  MX_PJ_TYPE_BF16 = 13,
};

// How long the plugin may read the host memory a buffer is created from. We use "only during
// the call": the plugin copies (or waits) before returning, so the host copy may go at once.
enum { MX_PJ_HOST_COPY_DURING_CALL = 0 };

typedef struct mx_pj_version {
  MX_PJ_HEAD;
  int major, minor;
} mx_pj_version_t;

// ---- Argument structures, one per entry we call (fields in the interface's order) ----------

typedef struct {
  MX_PJ_HEAD;
  mx_pj_error_t *error;
} mx_pj_error_destroy_args_t;

typedef struct {
  MX_PJ_HEAD;
  const mx_pj_error_t *error;
  const char *message;  // out: owned by the error, not NUL-terminated
  size_t message_size;  // out
} mx_pj_error_message_args_t;

typedef struct {
  MX_PJ_HEAD;
  const mx_pj_error_t *error;
  int code;  // out: MX_PJ_CODE_*
} mx_pj_error_code_args_t;

typedef struct {
  MX_PJ_HEAD;
} mx_pj_plugin_init_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_event_t *event;
} mx_pj_event_args_t;  // the destroy and await entries take the same layout

typedef struct {
  MX_PJ_HEAD;
  const void *options;  // named values; we pass none
  size_t n_options;
  void *kv_get, *kv_get_user;  // distributed key-value store callbacks: unused (one process)
  void *kv_put, *kv_put_user;
  mx_pj_client_t *client;  // out
  void *kv_try_get, *kv_try_get_user;
} mx_pj_client_create_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_client_t *client;
} mx_pj_client_destroy_args_t;

// The platform name and platform version entries share this layout.
typedef struct {
  MX_PJ_HEAD;
  mx_pj_client_t *client;
  const char *text;  // out: owned by the client, not NUL-terminated
  size_t text_size;  // out
} mx_pj_client_text_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_client_t *client;
  mx_pj_device_t *const *devices;  // out: owned by the client
  size_t n_devices;                // out
} mx_pj_client_devices_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_device_t *device;
  mx_pj_device_desc_t *desc;  // out: owned by the device
} mx_pj_device_desc_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_device_desc_t *desc;
  int id;  // out
} mx_pj_desc_id_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_device_desc_t *desc;
  const char *kind;  // out: owned by the description, not NUL-terminated
  size_t kind_size;  // out
} mx_pj_desc_kind_args_t;

// A program handed to the compiler: text or bytes in a named format ("mlir": StableHLO text or
// bytecode).
typedef struct {
  MX_PJ_HEAD;
  const char *code;  // borrowed for the call
  size_t code_size;
  const char *format;
  size_t format_size;
} mx_pj_program_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_client_t *client;
  const mx_pj_program_t *program;
  const char *options;  // a serialized xla.CompileOptionsProto (pjrt.c builds it)
  size_t options_size;
  mx_pj_loaded_exec_t *exec;  // out: owned by the caller
} mx_pj_compile_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_loaded_exec_t *exec;
} mx_pj_loaded_exec_destroy_args_t;

// The compiled program behind a loaded one (for its output count and its serialization); the
// caller destroys it (exec_destroy), which leaves the loaded program alive.
typedef struct {
  MX_PJ_HEAD;
  mx_pj_loaded_exec_t *loaded;
  mx_pj_exec_t *exec;  // out: owned by the caller
} mx_pj_get_exec_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_exec_t *exec;
} mx_pj_exec_destroy_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_exec_t *exec;
  size_t n_outputs;  // out
} mx_pj_exec_num_outputs_args_t;

// The bytes stay valid until `deleter(serialized)` is called; the caller must call it.
typedef struct {
  MX_PJ_HEAD;
  const mx_pj_exec_t *exec;
  const char *bytes;                  // out
  size_t n_bytes;                     // out
  void *serialized;                   // out: the object holding the bytes
  void (*deleter)(void *serialized);  // out
} mx_pj_exec_serialize_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_client_t *client;
  const char *bytes;  // what exec_serialize wrote, borrowed for the call
  size_t n_bytes;
  mx_pj_loaded_exec_t *exec;  // out: owned by the caller
  // Compile options replacing the serialized ones: none. Declared because plugins of 0.115
  // refuse the structure without them (as for the execute options).
  const char *override_options;
  size_t n_override_options;
} mx_pj_exec_deserialize_args_t;

// ---- Buffers and execution ----

// A device buffer from host memory. byte_strides NULL: dense, row-major. memory and
// device_layout NULL: the device's default memory and layout.
typedef struct {
  MX_PJ_HEAD;
  mx_pj_client_t *client;
  const void *data;
  int type;  // MX_PJ_TYPE_*
  const int64_t *dims;
  size_t n_dims;
  const int64_t *byte_strides;
  size_t n_byte_strides;
  int semantics;  // MX_PJ_HOST_COPY_*
  mx_pj_device_t *device;
  void *memory;
  void *device_layout;
  mx_pj_event_t *done_with_host;  // out: owned by the caller
  mx_pj_buffer_t *buffer;         // out: owned by the caller
} mx_pj_buffer_from_host_args_t;

typedef struct {
  MX_PJ_HEAD;
  mx_pj_buffer_t *buffer;
} mx_pj_buffer_destroy_args_t;

// Copies a buffer into host memory (dense, row-major when host_layout is NULL); the copy is
// complete when `event` is ready.
typedef struct {
  MX_PJ_HEAD;
  mx_pj_buffer_t *src;
  void *host_layout;
  void *dst;
  size_t dst_size;
  mx_pj_event_t *event;  // out: owned by the caller
} mx_pj_buffer_to_host_args_t;

// Per-call options of an execution. An argument aliased to a result (tf.aliasing_output) is
// donated unless its index is listed as not donatable: after the call the argument's buffer is
// deleted (its handle must still be destroyed) and the result's buffer holds the memory.
// Plugins check this structure's size against their own version's (XLA's CPU plugin of 0.115
// refuses a shorter one), so every field up to the newest we know is declared and left zero:
// zero means "not used" for each of them.
typedef struct {
  MX_PJ_HEAD;
  void **send_callbacks, **recv_callbacks;  // host callbacks: unused
  size_t n_send, n_recv;
  int launch_id;
  const int64_t *non_donatable;
  size_t n_non_donatable;
  void *context;              // an execute context: none
  const char *call_location;  // for the plugin's diagnostics: none
  size_t n_tasks;             // multi-process ids: none
  int *task_ids;
  int64_t *incarnation_ids;
  void *multi_slice_config;
} mx_pj_execute_options_t;

// One argument list and one output list per device; we run on one device.
typedef struct {
  MX_PJ_HEAD;
  mx_pj_loaded_exec_t *exec;
  mx_pj_execute_options_t *options;
  mx_pj_buffer_t *const *const *args;  // [n_devices][n_args]
  size_t n_devices;
  size_t n_args;
  mx_pj_buffer_t **const *outputs;  // [n_devices][n_outputs]: filled, owned by the caller
  mx_pj_event_t **device_complete;  // [n_devices] out, or NULL: not asked
  mx_pj_device_t *device;           // NULL: the executable's own device
} mx_pj_execute_args_t;

// ---- The function table GetPjrtApi returns -------------------------------------------------

typedef void *mx_pj_slot_t;  // an entry we never call: only its place in the table matters

typedef struct mx_pj_api {
  MX_PJ_HEAD;
  mx_pj_version_t version;
  void (*error_destroy)(mx_pj_error_destroy_args_t *);
  void (*error_message)(mx_pj_error_message_args_t *);
  mx_pj_error_t *(*error_code)(mx_pj_error_code_args_t *);
  mx_pj_error_t *(*plugin_initialize)(mx_pj_plugin_init_args_t *);
  mx_pj_slot_t plugin_attributes;
  mx_pj_error_t *(*event_destroy)(mx_pj_event_args_t *);
  mx_pj_slot_t event_is_ready, event_error;
  mx_pj_error_t *(*event_await)(mx_pj_event_args_t *);
  mx_pj_slot_t event_on_ready;
  mx_pj_error_t *(*client_create)(mx_pj_client_create_args_t *);
  mx_pj_error_t *(*client_destroy)(mx_pj_client_destroy_args_t *);
  mx_pj_error_t *(*client_platform_name)(mx_pj_client_text_args_t *);
  mx_pj_slot_t client_process_index;
  mx_pj_error_t *(*client_platform_version)(mx_pj_client_text_args_t *);
  mx_pj_slot_t client_devices;
  mx_pj_error_t *(*client_addressable_devices)(mx_pj_client_devices_args_t *);
  mx_pj_slot_t client_lookup_device, client_lookup_addressable_device, client_addressable_memories;
  mx_pj_error_t *(*client_compile)(mx_pj_compile_args_t *);
  mx_pj_slot_t client_default_device_assignment;
  mx_pj_error_t *(*client_buffer_from_host)(mx_pj_buffer_from_host_args_t *);
  mx_pj_error_t *(*desc_id)(mx_pj_desc_id_args_t *);
  mx_pj_slot_t desc_process_index, desc_attributes;
  mx_pj_error_t *(*desc_kind)(mx_pj_desc_kind_args_t *);
  mx_pj_slot_t desc_debug_string, desc_to_string;
  mx_pj_error_t *(*device_description)(mx_pj_device_desc_args_t *);
  mx_pj_slot_t device_is_addressable, device_local_hardware_id, device_addressable_memories,
      device_default_memory, device_memory_stats;
  mx_pj_slot_t memory_id, memory_kind, memory_debug_string, memory_to_string,
      memory_addressable_by_devices;
  mx_pj_error_t *(*exec_destroy)(mx_pj_exec_destroy_args_t *);
  mx_pj_slot_t exec_name, exec_num_replicas, exec_num_partitions;
  mx_pj_error_t *(*exec_num_outputs)(mx_pj_exec_num_outputs_args_t *);
  mx_pj_slot_t exec_code_size, exec_cost_analysis, exec_output_memory_kinds, exec_optimized_program;
  mx_pj_error_t *(*exec_serialize)(mx_pj_exec_serialize_args_t *);
  mx_pj_error_t *(*loaded_exec_destroy)(mx_pj_loaded_exec_destroy_args_t *);
  mx_pj_error_t *(*loaded_exec_get_exec)(mx_pj_get_exec_args_t *);
  mx_pj_slot_t loaded_exec_devices, loaded_exec_delete, loaded_exec_is_deleted;
  mx_pj_error_t *(*loaded_exec_execute)(mx_pj_execute_args_t *);
  mx_pj_error_t *(*exec_deserialize_and_load)(mx_pj_exec_deserialize_args_t *);
  mx_pj_slot_t loaded_exec_fingerprint;
  mx_pj_error_t *(*buffer_destroy)(mx_pj_buffer_destroy_args_t *);
  mx_pj_slot_t buffer_element_type, buffer_dims, buffer_unpadded_dims, buffer_dynamic_dims,
      buffer_layout, buffer_device_size, buffer_device, buffer_memory, buffer_delete,
      buffer_is_deleted, buffer_copy_to_device;
  mx_pj_error_t *(*buffer_to_host)(mx_pj_buffer_to_host_args_t *);
} mx_pj_api_t;

// The table must reach at least this far for the entries above to exist.
#define MX_PJ_API_MIN_SIZE MX_PJ_SIZE(mx_pj_api_t, buffer_to_host)

// Places in the table fixed by the interface (entry index x 8 bytes on LP64): a placeholder
// missing or added above an entry moves it, which these catch at build time.
_Static_assert(offsetof(mx_pj_api_t, client_compile) == 25 * sizeof(void *), "PJRT table layout");
_Static_assert(offsetof(mx_pj_api_t, client_buffer_from_host) == 27 * sizeof(void *),
               "PJRT table layout");
_Static_assert(offsetof(mx_pj_api_t, loaded_exec_destroy) == 55 * sizeof(void *),
               "PJRT table layout");
_Static_assert(offsetof(mx_pj_api_t, loaded_exec_execute) == 60 * sizeof(void *),
               "PJRT table layout");
_Static_assert(offsetof(mx_pj_api_t, buffer_to_host) == 75 * sizeof(void *), "PJRT table layout");

// The one symbol a plugin exports.
typedef const mx_pj_api_t *(*mx_pj_get_api_fn)(void);
#define MX_PJ_ENTRY_SYMBOL "GetPjrtApi"

#endif  // MX_BACKENDS_PJRT_API_H
