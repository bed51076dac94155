// Private helpers shared by the reference interpreter's compute kernels (interp_compute*.c):
// index arithmetic, attribute readers, a small numeric value type for accumulation, and
// scalar plumbing for running op bodies. Not a public header.
#ifndef MX_HLO_INTERP_COMPUTE_H
#define MX_HLO_INTERP_COMPUTE_H

#include "hlo/interp_internal.h"

// ---- Kernels (one per op family; dispatched by mx_interp_compute) ----
mx_status_t mx_cp_dot_general(const mx_func_t *f, const mx_op_t *op, const mx_tensor_t *const *in,
                              mx_tensor_t *out);
mx_status_t mx_cp_dot(const mx_func_t *f, const mx_op_t *op, const mx_tensor_t *const *in,
                      mx_tensor_t *out);
mx_status_t mx_cp_convolution(const mx_func_t *f, const mx_op_t *op, const mx_tensor_t *const *in,
                              mx_tensor_t *out);
// chlo.ragged_dot (parsed as an unknown op; dispatched by name).
mx_status_t mx_cp_ragged_dot(const mx_op_t *op, const mx_tensor_t *const *in, mx_tensor_t *out);
// chlo.scan (unknown op, dispatched by name): bodies take and return non-scalar slices.
mx_status_t mx_cp_scan(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                       const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_cp_reduce(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                         const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_cp_reduce_window(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_cp_select_and_scatter(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                     const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_cp_sort(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                       const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_cp_map(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                      const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_cp_fft(const mx_op_t *op, const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_cp_triangular_solve(const mx_op_t *op, const mx_tensor_t *const *in,
                                   mx_tensor_t *out);
mx_status_t mx_cp_gather(const mx_op_t *op, const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_cp_scatter(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                          const mx_tensor_t *const *in, mx_tensor_t *out);

// ---- Index arithmetic (row-major) ----
// Advances a multi-index like an odometer; false once it wraps around (or for empty shapes).
bool mx_cp_next(int64_t *idx, const int64_t *dims, int32_t rank);
// Linear offset of idx in a tensor of the given shape.
int64_t mx_cp_offset(const int64_t *idx, const int64_t *dims, int32_t rank);
bool mx_cp_contains(const int64_t *v, int32_t n, int64_t x);
bool mx_cp_in_bounds(const int64_t *idx, const int64_t *dims, int32_t rank);

// ---- Attributes ----
// Reads an int list attribute (op attr) into out[0..max); returns count, or -1 when absent.
// Fails (returns -2 with an error set) when the list is longer than max or malformed.
int32_t mx_cp_ints(const mx_attr_t *a, int64_t *out, int32_t max);
int32_t mx_cp_op_ints(const mx_op_t *op, const char *name, int64_t *out, int32_t max);
// Reads a STRUCT field that is an int list. Absent -> 0 entries.
mx_status_t mx_cp_field_ints(const mx_op_t *op, const mx_attr_t *st, const char *name, int64_t *out,
                             int32_t max, int32_t *n);
// Reads a STRUCT field that is a single int. Absent -> error.
mx_status_t mx_cp_field_int(const mx_op_t *op, const mx_attr_t *st, const char *name, int64_t *out);
// INT attribute with a default.
int64_t mx_cp_op_int(const mx_op_t *op, const char *name, int64_t dflt);
// BOOL (or UNIT) attribute with a default.
bool mx_cp_op_bool(const mx_op_t *op, const char *name, bool dflt);
// Padding attribute (DENSE Nx2 i64, or flat int list of 2N): fills lo/hi; zeros when absent.
mx_status_t mx_cp_padding(const mx_op_t *op, const char *name, int32_t n, int64_t *lo, int64_t *hi);
// Reads an optional int list that must have exactly n entries; fills `dflt` when absent.
mx_status_t mx_cp_window_attr(const mx_op_t *op, const char *name, int32_t n, int64_t dflt,
                              int64_t *out);
mx_status_t mx_cp_unsupported(const mx_op_t *op, const char *why);
mx_status_t mx_cp_bad(const mx_op_t *op, const char *why);

// ---- Numeric values ----
// Accumulation domains: exact wrapping integers, double, complex double, boolean.
typedef enum mx_cp_dom { MX_CP_INT = 0, MX_CP_FLT, MX_CP_CPX, MX_CP_BOOL } mx_cp_dom_t;

typedef struct mx_cp_val {
  uint64_t u;     // INT / BOOL (two's complement bits)
  double re, im;  // FLT (re) / CPX
} mx_cp_val_t;

// The domain in which results of element type `et` are accumulated.
mx_cp_dom_t mx_cp_dom_of(mx_elem_type_t et);
mx_cp_val_t mx_cp_load(const mx_tensor_t *t, int64_t i, mx_cp_dom_t dom);
void mx_cp_store(mx_tensor_t *t, int64_t i, mx_cp_val_t v, mx_cp_dom_t dom);
// acc += a * b in the domain.
void mx_cp_fma(mx_cp_val_t *acc, mx_cp_val_t a, mx_cp_val_t b, mx_cp_dom_t dom);
// Complex element access (real tensors read with im = 0, written with the real part).
void mx_cp_get_c(const mx_tensor_t *t, int64_t i, double *re, double *im);
void mx_cp_set_c(mx_tensor_t *t, int64_t i, double re, double im);
// Copies element si of src into element di of dst, converting when element types differ.
void mx_cp_copy_elem(mx_tensor_t *dst, int64_t di, const mx_tensor_t *src, int64_t si);

// ---- Bodies ----
// Argument tensors for a block, shaped like its arguments (scalars for all compute bodies).
typedef struct mx_cp_body {
  mx_interp_t *ip;
  const mx_func_t *f;
  const mx_block_t *blk;
  int32_t n_args, n_results;
  mx_tensor_t *args;     // n_args, allocated with the block argument types
  mx_tensor_t *results;  // n_results, filled by mx_cp_body_run (freed on next run / free)
  bool any_shape;        // arguments/results may be tensors of any shape (default: scalars)
} mx_cp_body_t;

mx_status_t mx_cp_body_init(mx_cp_body_t *b, mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                            int32_t region, int32_t n_args, int32_t n_results);
// Like mx_cp_body_init, for bodies whose arguments and results may have any shape.
mx_status_t mx_cp_body_init_any(mx_cp_body_t *b, mx_interp_t *ip, const mx_func_t *f,
                                const mx_op_t *op, int32_t region, int32_t n_args,
                                int32_t n_results);
mx_status_t mx_cp_body_run(mx_cp_body_t *b);
void mx_cp_body_free(mx_cp_body_t *b);
// Reads the boolean result 0 of the last run.
bool mx_cp_body_bool(const mx_cp_body_t *b);

// Checked allocation helpers.
void *mx_cp_calloc(size_t n, size_t size);

#endif  // MX_HLO_INTERP_COMPUTE_H
