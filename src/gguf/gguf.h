// GGUF files (the llama.cpp / ggml checkpoint format, versions 2 and 3): the header, the
// metadata key/values, the tensor infos and where each tensor's bytes lie. Only reading and
// validating; what the metadata means for a model is src/model/gguf_*.c's job.
//
// Layout (little endian): "GGUF", u32 version, u64 tensor count, u64 key/value count; each
// key/value is a string key (u64 length + bytes), a u32 value type and the value (an array is a
// u32 element type, a u64 count and the elements); each tensor info is a string name, u32 rank,
// u64 dims (innermost first: ne[0] is the row length), u32 ggml type and a u64 offset into the
// data section, which starts at the first multiple of general.alignment (default 32) after the
// infos.
#ifndef MLXCEL_GGUF_GGUF_H
#define MLXCEL_GGUF_GGUF_H

#include "mlxcel/base.h"

// Limits that keep a corrupt or hostile header from costing more than a few MiB of memory:
// real files hold a few thousand tensors and a few dozen keys (a vocabulary is one array).
enum {
  MX_GGUF_MAX_TENSORS = 1 << 16,
  MX_GGUF_MAX_KV = 1 << 16,
  MX_GGUF_MAX_NAME = 255,         // tensor names (ggml's own limit is 63)
  MX_GGUF_MAX_STRING = 16 << 20,  // one string value (a chat template, a token)
  MX_GGUF_MAX_ARRAY = 1 << 28,    // elements of one array
  MX_GGUF_MAX_DIMS = 4,
};

typedef enum mx_gguf_vtype {
  MX_GGUF_U8 = 0,
  MX_GGUF_I8 = 1,
  MX_GGUF_U16 = 2,
  MX_GGUF_I16 = 3,
  MX_GGUF_U32 = 4,
  MX_GGUF_I32 = 5,
  MX_GGUF_F32 = 6,
  MX_GGUF_BOOL = 7,
  MX_GGUF_STRING = 8,
  MX_GGUF_ARRAY = 9,
  MX_GGUF_U64 = 10,
  MX_GGUF_I64 = 11,
  MX_GGUF_F64 = 12,
  MX_GGUF_N_VTYPES
} mx_gguf_vtype_t;

// ggml tensor types this reader knows the block layout of (others are refused by number).
typedef enum mx_ggml_type {
  MX_GGML_F32 = 0,
  MX_GGML_F16 = 1,
  MX_GGML_Q4_0 = 2,
  MX_GGML_Q4_1 = 3,
  MX_GGML_Q5_0 = 6,
  MX_GGML_Q5_1 = 7,
  MX_GGML_Q8_0 = 8,
  MX_GGML_Q8_1 = 9,
  MX_GGML_Q2_K = 10,
  MX_GGML_Q3_K = 11,
  MX_GGML_Q4_K = 12,
  MX_GGML_Q5_K = 13,
  MX_GGML_Q6_K = 14,
  MX_GGML_Q8_K = 15,
  MX_GGML_I8 = 24,
  MX_GGML_I16 = 25,
  MX_GGML_I32 = 26,
  MX_GGML_I64 = 27,
  MX_GGML_F64 = 28,
  MX_GGML_BF16 = 30,
} mx_ggml_type_t;

// Name ("Q8_0") of a ggml type number; NULL when the reader does not know it.
const char *mx_ggml_type_name(uint32_t type);
// Elements per block and bytes per block of a known type; false otherwise.
bool mx_ggml_type_block(uint32_t type, int64_t *block_elems, int64_t *block_bytes);

// A value. Strings and arrays point into the file image (not NUL-terminated).
typedef struct mx_gguf_value {
  mx_gguf_vtype_t type;
  union {
    uint64_t u;  // U8 U16 U32 U64 BOOL
    int64_t i;   // I8 I16 I32 I64
    double f;    // F32 F64
    struct {
      const char *p;
      uint64_t len;
    } str;
    struct {
      mx_gguf_vtype_t type;  // element type (never ARRAY: nested arrays are refused)
      uint64_t n;
      const uint8_t *data;  // the first element's bytes; strings are length-prefixed
    } arr;
  };
} mx_gguf_value_t;

typedef struct mx_gguf_kv {
  const char *key;  // NUL-terminated, owned by the mx_gguf_t
  mx_gguf_value_t v;
} mx_gguf_kv_t;

typedef struct mx_gguf_tensor {
  const char *name;  // NUL-terminated, owned by the mx_gguf_t
  uint32_t type;     // mx_ggml_type_t
  int32_t n_dims;
  int64_t ne[MX_GGUF_MAX_DIMS];  // ne[0] innermost; unused dims are 1
  uint64_t offset;               // from the start of the data section
  uint64_t nbytes;
  const uint8_t *data;  // inside the file image
} mx_gguf_tensor_t;

typedef struct mx_gguf {
  uint32_t version;
  uint32_t alignment;
  int32_t n_kv;
  mx_gguf_kv_t *kv;  // file order
  int32_t n_tensors;
  mx_gguf_tensor_t *tensors;  // file order
  const char *name;           // the file's name in messages (owned)
  const uint8_t *base;        // the file image (borrowed, or the mapping of mx_gguf_open)
  size_t len;
  mx_arena_t *arena;
  void *map;  // mx_gguf_open's mapping (NULL for mx_gguf_parse); see mx_gguf_take_map
  size_t map_len;
} mx_gguf_t;

// Parses and validates a file image data[0..len) (borrowed: it must outlive *out); `name` names
// it in messages. Refused, with a message naming the file, the offset or key or tensor and the
// problem: a wrong magic, versions other than 2 and 3, a truncated header, counts or lengths
// over the limits above or beyond the file, unknown value or tensor types, nested arrays,
// duplicate keys or tensor names, a bad general.alignment (not a power of two), a rank outside
// 1..4, a dimension below 1, a row length not a multiple of the type's block, element counts
// that overflow, offsets not aligned, tensors reaching past the file or overlapping each other.
mx_status_t mx_gguf_parse(const void *data, size_t len, const char *name, mx_gguf_t **out);
// Maps PATH read-only and parses it; the mapping lives until mx_gguf_free.
mx_status_t mx_gguf_open(const char *path, mx_gguf_t **out);
void mx_gguf_free(mx_gguf_t *g);  // accepts NULL; unmaps what mx_gguf_open mapped
// Hands mx_gguf_open's mapping to the caller (who then munmaps *map, *len): tensors keep
// pointing into it after mx_gguf_free. False when there is none.
bool mx_gguf_take_map(mx_gguf_t *g, void **map, size_t *len);

// Lookups; NULL when absent.
const mx_gguf_kv_t *mx_gguf_find(const mx_gguf_t *g, const char *key);
const mx_gguf_tensor_t *mx_gguf_find_tensor(const mx_gguf_t *g, const char *name);

// Typed readers: absent -> *out = def and MX_OK; present with another type (or an integer out
// of the target's range) -> MX_ERR_PARSE naming the file and the key. Integers of any width and
// sign are accepted where they fit; floats accept F32 and F64 (and integers).
mx_status_t mx_gguf_get_u32(const mx_gguf_t *g, const char *key, uint32_t def, uint32_t *out);
mx_status_t mx_gguf_get_i64(const mx_gguf_t *g, const char *key, int64_t def, int64_t *out);
mx_status_t mx_gguf_get_f64(const mx_gguf_t *g, const char *key, double def, double *out);
mx_status_t mx_gguf_get_bool(const mx_gguf_t *g, const char *key, bool def, bool *out);
// A string value: *p / *len point into the file (NULL / 0 when absent).
mx_status_t mx_gguf_get_str(const mx_gguf_t *g, const char *key, const char **p, size_t *len);
// An array whose elements have type `elem` (MX_GGUF_N_VTYPES: any); NULL *out when absent.
mx_status_t mx_gguf_get_arr(const mx_gguf_t *g, const char *key, mx_gguf_vtype_t elem,
                            const mx_gguf_value_t **out);

// Array element access (the array was validated at parse time). Numbers: element i as double
// / int64. Strings: walk them in order with a cursor starting at 0.
double mx_gguf_arr_f64(const mx_gguf_value_t *arr, uint64_t i);
int64_t mx_gguf_arr_i64(const mx_gguf_value_t *arr, uint64_t i);
void mx_gguf_arr_next_str(const mx_gguf_value_t *arr, size_t *cursor, const char **p, size_t *len);

const char *mx_gguf_vtype_name(mx_gguf_vtype_t t);

#endif  // MLXCEL_GGUF_GGUF_H
