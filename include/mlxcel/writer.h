// mlxcel-xla safetensors writer: streams a checkpoint file to disk tensor by tensor, so a model
// of any size is written with O(chunk) memory (the random-model generator `mlxcel mkmodel` and
// tests use it).
//
// File layout (what the loader and Hugging Face's safetensors read): 8-byte little-endian header
// length N, N bytes of JSON padded with spaces so that N is a multiple of 8, then the data
// section. Tensors are stored in name order, back to back (the format allows no holes), so each
// tensor starts at a multiple of its element size from an 8-aligned data section; when every
// tensor's byte size is a multiple of 64 (as for all model shapes with dims that are multiples
// of 16) every tensor is 64-byte aligned in the file, and so in an mmap.
//
// Usage:
//   mx_st_writer_t *w;
//   mx_st_writer_open(path, descs, n, NULL, 0, &w);      // header written here
//   for (int32_t i = 0; i < mx_st_writer_count(w); i++) {
//     const mx_st_desc_t *d = mx_st_writer_desc(w, i);   // file order (sorted by name)
//     ... mx_st_writer_append(w, bytes, k) until mx_st_desc_bytes(d) bytes are written ...
//   }
//   mx_st_writer_close(w);                               // checks everything was written
// On any error call mx_st_writer_abort(w) (removes the partial file).
#ifndef MLXCEL_WRITER_H
#define MLXCEL_WRITER_H

#include "mlxcel/hlo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mx_st_desc {
  const char *name;  // copied by the writer
  mx_elem_type_t dtype;
  int32_t rank;
  int64_t dims[MX_MAX_RANK];
} mx_st_desc_t;

// Bytes of the tensor (numel * element size); 0 for an unsupported dtype.
uint64_t mx_st_desc_bytes(const mx_st_desc_t *d);

typedef struct mx_st_writer mx_st_writer_t;

// Creates (truncates) `path` and writes the header. `meta` holds n_meta key/value pairs
// (meta[2i], meta[2i+1]) for "__metadata__" (may be NULL). Names must be unique and non-empty;
// dtypes must have a safetensors name (F64/F32/F16/BF16/I64/I32/I16/I8/U64/U32/U16/U8/BOOL).
mx_status_t mx_st_writer_open(const char *path, const mx_st_desc_t *tensors, int32_t n,
                              const char *const *meta, int32_t n_meta, mx_st_writer_t **out);
int32_t mx_st_writer_count(const mx_st_writer_t *w);
// The i-th tensor in file order (sorted by name, byte-wise). Data must be appended in this order.
const mx_st_desc_t *mx_st_writer_desc(const mx_st_writer_t *w, int32_t i);
// Index of the tensor the next append goes to (== count when all are complete).
int32_t mx_st_writer_current(const mx_st_writer_t *w);
// Appends raw little-endian bytes of the current tensor; may span tensor boundaries (the bytes
// continue with the next tensor in file order). Writing past the last tensor is an error.
mx_status_t mx_st_writer_append(mx_st_writer_t *w, const void *data, size_t nbytes);
// Checks that every tensor is complete, flushes and closes; frees w in every case (on error
// the partial file is removed).
mx_status_t mx_st_writer_close(mx_st_writer_t *w);
// Closes, removes the partial file and frees w. Accepts NULL.
void mx_st_writer_abort(mx_st_writer_t *w);

// Convenience: writes a whole file from in-memory tensors (data[i] holds tensors[i]'s bytes).
mx_status_t mx_st_write_file(const char *path, const mx_st_desc_t *tensors, const void *const *data,
                             int32_t n);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_WRITER_H
