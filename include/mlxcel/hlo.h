// mlxcel-xla StableHLO core: element types, tensors, the IR, parser, printer, verifier and the
// reference interpreter. The builder API lives in hlo_builder.h (included at the end).
//
// Ownership: a module owns every IR object reachable from it (functions, blocks, ops, values,
// attributes, constant data) in one arena; all of it dies with mx_module_destroy(). Pointers
// into a module stay valid until the module is destroyed (arrays may be reallocated while a
// function is being built, so do not hold `op->operands` across appends to the same op).
// Tensors handed out by the interpreter are heap-owned by the caller (mx_tensor_free).
#ifndef MLXCEL_HLO_H
#define MLXCEL_HLO_H

#include <stdio.h>

#include "mlxcel/base.h"

#ifdef __cplusplus
extern "C" {
#endif

// ============================================================================================
// Element types
// ============================================================================================

// X(enum suffix, MLIR spelling)
#define MX_ELEM_TYPE_LIST(X)        \
  X(I1, "i1")                       \
  X(I2, "i2")                       \
  X(I4, "i4")                       \
  X(I8, "i8")                       \
  X(I16, "i16")                     \
  X(I32, "i32")                     \
  X(I64, "i64")                     \
  X(UI2, "ui2")                     \
  X(UI4, "ui4")                     \
  X(UI8, "ui8")                     \
  X(UI16, "ui16")                   \
  X(UI32, "ui32")                   \
  X(UI64, "ui64")                   \
  X(F4E2M1FN, "f4E2M1FN")           \
  X(F6E2M3FN, "f6E2M3FN")           \
  X(F6E3M2FN, "f6E3M2FN")           \
  X(F8E3M4, "f8E3M4")               \
  X(F8E4M3, "f8E4M3")               \
  X(F8E4M3FN, "f8E4M3FN")           \
  X(F8E4M3FNUZ, "f8E4M3FNUZ")       \
  X(F8E4M3B11FNUZ, "f8E4M3B11FNUZ") \
  X(F8E5M2, "f8E5M2")               \
  X(F8E5M2FNUZ, "f8E5M2FNUZ")       \
  X(F8E8M0FNU, "f8E8M0FNU")         \
  X(BF16, "bf16")                   \
  X(F16, "f16")                     \
  X(F32, "f32")                     \
  X(F64, "f64")                     \
  X(C64, "complex<f32>")            \
  X(C128, "complex<f64>")

typedef enum mx_elem_type {
  MX_ELEM_INVALID = 0,
#define MX_X_(e, s) MX_ELEM_##e,
  MX_ELEM_TYPE_LIST(MX_X_)
#undef MX_X_
      MX_ELEM_COUNT
} mx_elem_type_t;

// Storage: every element occupies mx_elem_size() bytes, row-major, little-endian:
//   i1 -> 1 byte (0 or 1); i2/i4/i8 -> int8_t (sign-extended); ui2/ui4/ui8 -> uint8_t;
//   i16/ui16, i32/ui32, i64/ui64 -> native ints; f4/f6/f8 -> 1 byte holding the bit pattern in
//   its low bits; bf16/f16 -> uint16_t bit pattern; f32 -> float; f64 -> double;
//   complex<f32> -> 2 floats (re, im); complex<f64> -> 2 doubles.
size_t mx_elem_size(mx_elem_type_t et);
int mx_elem_bits(mx_elem_type_t et);          // logical bit width (i4 -> 4, complex<f32> -> 64)
const char *mx_elem_name(mx_elem_type_t et);  // MLIR spelling; "?" for invalid
// Parses an MLIR element type spelling ("f32", "ui4", "complex<f64>"); MX_ELEM_INVALID if unknown.
mx_elem_type_t mx_elem_from_name(const char *s, size_t n);
bool mx_elem_is_bool(mx_elem_type_t et);      // i1
bool mx_elem_is_int(mx_elem_type_t et);       // signed or unsigned integer, excluding i1
bool mx_elem_is_signed(mx_elem_type_t et);    // i2..i64
bool mx_elem_is_unsigned(mx_elem_type_t et);  // ui2..ui64
bool mx_elem_is_float(mx_elem_type_t et);     // f4..f64 incl. f8 and bf16
bool mx_elem_is_complex(mx_elem_type_t et);
// Converts a float-typed element bit pattern (as stored) to double, and a double to the bit
// pattern of `et` with round-to-nearest-even and that format's overflow/NaN rules. For F32/F64
// the "bits" are the IEEE bit patterns. Only valid for mx_elem_is_float(et).
double mx_float_decode(mx_elem_type_t et, uint64_t bits);
uint64_t mx_float_encode(mx_elem_type_t et, double value);

// ============================================================================================
// Types
// ============================================================================================

#define MX_MAX_RANK 8

typedef enum mx_type_kind {
  MX_TYPE_TENSOR = 0,  // ranked, static shape
  MX_TYPE_TUPLE,
  MX_TYPE_TOKEN,
} mx_type_kind_t;

// Quantized element type (`!quant.uniform<...>`) attached to a TENSOR type whose `elem` is the
// storage integer type. A stored value s in slice k along `axis` stands for
// (s - zero_points[k]) * scales[k] in the `expressed` float type.
typedef struct mx_quant {
  mx_elem_type_t expressed;          // f32, f16, bf16 or f64
  int64_t storage_min, storage_max;  // full storage range unless narrowed (i8<-127:127>)
  int32_t axis;                      // quantization dimension; -1 for per-tensor
  int32_t n;                         // (scale, zero point) pairs: 1 per-tensor, dims[axis] per-axis
  const double *scales;              // n, arena-owned
  const int64_t *zero_points;        // n, arena-owned
} mx_quant_t;

typedef struct mx_type {
  mx_type_kind_t kind;
  mx_elem_type_t elem;  // TENSOR
  int32_t rank;         // TENSOR; 0 = scalar
  int64_t dims[MX_MAX_RANK];
  int32_t n_tuple;              // TUPLE: element count
  const struct mx_type *tuple;  // TUPLE: elements (arena-owned)
  const mx_quant_t *quant;      // TENSOR: quantized element type, else NULL (arena-owned)
} mx_type_t;

mx_type_t mx_type_tensor(mx_elem_type_t et, int32_t rank, const int64_t *dims);
mx_type_t mx_type_scalar(mx_elem_type_t et);
int64_t mx_type_numel(const mx_type_t *t);  // product of dims (1 for scalars); TENSOR only
size_t mx_type_nbytes(const mx_type_t *t);  // numel * elem size; TENSOR only
bool mx_type_equal(const mx_type_t *a, const mx_type_t *b);     // incl. quantization
bool mx_quant_equal(const mx_quant_t *a, const mx_quant_t *b);  // NULL == NULL
bool mx_type_same_shape(const mx_type_t *a, const mx_type_t *b);
// Appends the MLIR spelling ("tensor<2x3xf32>", "tuple<...>", "!stablehlo.token").
void mx_type_print(const mx_type_t *t, mx_strbuf_t *sb);
// Formats into a caller buffer (for error messages); returns buf.
const char *mx_type_str(const mx_type_t *t, char *buf, size_t n);

// ============================================================================================
// Tensors (dense values: constants and interpreter values)
// ============================================================================================

typedef struct mx_tensor {
  mx_type_t type;  // TENSOR kind (TUPLE for interpreter tuple values, see `tuple`)
  uint8_t *data;   // mx_type_nbytes(&type) bytes in the storage layout above
  size_t nbytes;
  int32_t n_tuple;          // TUPLE values only
  struct mx_tensor *tuple;  // TUPLE values only
} mx_tensor_t;

// Heap tensors (interpreter, tests): allocates zeroed storage for `type`.
mx_status_t mx_tensor_alloc(mx_tensor_t *t, const mx_type_t *type);
mx_status_t mx_tensor_clone(mx_tensor_t *dst, const mx_tensor_t *src);
void mx_tensor_free(mx_tensor_t *t);  // frees heap storage (recursively for tuples); accepts NULL
// Generic element access by linear index (slow path; for the interpreter and tests).
double mx_tensor_get_f64(const mx_tensor_t *t, int64_t i);     // ints converted, floats decoded
int64_t mx_tensor_get_i64(const mx_tensor_t *t, int64_t i);    // unsigned 64-bit wraps
uint64_t mx_tensor_get_u64(const mx_tensor_t *t, int64_t i);   // raw zero-extended bits for ints
void mx_tensor_set_f64(mx_tensor_t *t, int64_t i, double v);   // floats encoded RNE
void mx_tensor_set_i64(mx_tensor_t *t, int64_t i, int64_t v);  // ints wrap; i1 stores v != 0

// ============================================================================================
// Attributes
// ============================================================================================

typedef enum mx_attr_kind {
  MX_ATTR_UNIT = 0,  // presence only (`attr` or `unit`)
  MX_ATTR_BOOL,      // true/false                              -> i
  MX_ATTR_INT,       // 3 : i64 (type in `elem`, INVALID = untyped) -> i
  MX_ATTR_FLOAT,     // 1.0e-5 : f32                            -> f (+ elem)
  MX_ATTR_STRING,    // "text"                                  -> s
  MX_ATTR_SYMBOL,    // @name                                   -> s
  MX_ATTR_ENUM,   // #stablehlo<precision DEFAULT>           -> enum_kind="precision", s="DEFAULT"
  MX_ATTR_ARRAY,  // [a, b]                                  -> items[n]
  MX_ATTR_DENSE_ARRAY,  // array<i64: 1, 2> / array<i1: true>      -> ints[n], elem
  MX_ATTR_DENSE,        // dense<...> : tensor<...>                -> dense
  MX_ATTR_DICT,         // {a = x, b = y}                          -> fields[n]
  MX_ATTR_STRUCT,  // #stablehlo.gather<offset_dims = [..]>   -> s = "stablehlo.gather", fields[n]
  MX_ATTR_TYPE,    // a type used as attribute                -> type
} mx_attr_kind_t;

typedef struct mx_named_attr mx_named_attr_t;

typedef struct mx_attr {
  mx_attr_kind_t kind;
  mx_elem_type_t elem;      // INT/FLOAT/DENSE_ARRAY element type
  int32_t n;                // ARRAY / DENSE_ARRAY / DICT / STRUCT count
  int64_t i;                // BOOL, INT
  double f;                 // FLOAT
  const char *s;            // STRING, SYMBOL, ENUM value, STRUCT tag
  const char *enum_kind;    // ENUM: e.g. "precision", "comparison_direction"
  struct mx_attr *items;    // ARRAY
  int64_t *ints;            // DENSE_ARRAY
  mx_named_attr_t *fields;  // DICT, STRUCT
  mx_tensor_t *dense;       // DENSE (arena-owned data)
  mx_type_t *type;          // TYPE
} mx_attr_t;

struct mx_named_attr {
  const char *name;
  mx_attr_t value;
};

// ============================================================================================
// Ops
// ============================================================================================
//
// Canonical attributes are those of StableHLO's generic form (what `stablehlo-opt
// --mlir-print-op-generic` shows), whichever syntax the op was parsed from; e.g. dot_general
// carries `dot_dimension_numbers` = STRUCT "stablehlo.dot" {lhs_batching_dimensions,
// rhs_batching_dimensions, lhs_contracting_dimensions, rhs_contracting_dimensions} (each a
// DENSE_ARRAY i64), convolution carries `dimension_numbers` = STRUCT "stablehlo.conv"
// {input_batch_dimension (INT), input_feature_dimension, input_spatial_dimensions (DENSE_ARRAY),
// kernel_input_feature_dimension, kernel_output_feature_dimension, kernel_spatial_dimensions,
// output_batch_dimension, output_feature_dimension, output_spatial_dimensions} plus
// window_strides/padding(DENSE i64 Nx2)/lhs_dilation/rhs_dilation/window_reversal,
// compare carries `comparison_direction` (ENUM) and optional `compare_type` (ENUM).
// Dimension lists (broadcast_dimensions, permutation, start_indices, ...) are DENSE_ARRAY i64.
// check.expect_*_const ops carry `value` (DENSE); expect_almost_eq* an optional `tolerance`
// (FLOAT); expect_close `min_ulp_difference`/`max_ulp_difference` (INT).

// X(enum suffix, op name, flags)
#define MX_OPF_UNARY 1u       // elementwise, 1 operand
#define MX_OPF_BINARY 2u      // elementwise, 2 operands
#define MX_OPF_TERMINATOR 4u  // ends a block
#define MX_OPF_CHECK 8u       // check dialect / test assertion

#define MX_OP_LIST(X)                                                           \
  X(UNKNOWN, "<unknown>", 0)                                                    \
  /* func dialect */                                                            \
  X(FUNC_RETURN, "func.return", MX_OPF_TERMINATOR)                              \
  X(FUNC_CALL, "func.call", 0)                                                  \
  /* elementwise unary */                                                       \
  X(ABS, "stablehlo.abs", MX_OPF_UNARY)                                         \
  X(CBRT, "stablehlo.cbrt", MX_OPF_UNARY)                                       \
  X(CEIL, "stablehlo.ceil", MX_OPF_UNARY)                                       \
  X(COSINE, "stablehlo.cosine", MX_OPF_UNARY)                                   \
  X(COUNT_LEADING_ZEROS, "stablehlo.count_leading_zeros", MX_OPF_UNARY)         \
  X(EXPONENTIAL, "stablehlo.exponential", MX_OPF_UNARY)                         \
  X(EXPONENTIAL_MINUS_ONE, "stablehlo.exponential_minus_one", MX_OPF_UNARY)     \
  X(FLOOR, "stablehlo.floor", MX_OPF_UNARY)                                     \
  X(IMAG, "stablehlo.imag", MX_OPF_UNARY)                                       \
  X(IS_FINITE, "stablehlo.is_finite", MX_OPF_UNARY)                             \
  X(LOG, "stablehlo.log", MX_OPF_UNARY)                                         \
  X(LOG_PLUS_ONE, "stablehlo.log_plus_one", MX_OPF_UNARY)                       \
  X(LOGISTIC, "stablehlo.logistic", MX_OPF_UNARY)                               \
  X(NEGATE, "stablehlo.negate", MX_OPF_UNARY)                                   \
  X(NOT, "stablehlo.not", MX_OPF_UNARY)                                         \
  X(POPCNT, "stablehlo.popcnt", MX_OPF_UNARY)                                   \
  X(REAL, "stablehlo.real", MX_OPF_UNARY)                                       \
  X(ROUND_NEAREST_AFZ, "stablehlo.round_nearest_afz", MX_OPF_UNARY)             \
  X(ROUND_NEAREST_EVEN, "stablehlo.round_nearest_even", MX_OPF_UNARY)           \
  X(RSQRT, "stablehlo.rsqrt", MX_OPF_UNARY)                                     \
  X(SIGN, "stablehlo.sign", MX_OPF_UNARY)                                       \
  X(SINE, "stablehlo.sine", MX_OPF_UNARY)                                       \
  X(SQRT, "stablehlo.sqrt", MX_OPF_UNARY)                                       \
  X(TAN, "stablehlo.tan", MX_OPF_UNARY)                                         \
  X(TANH, "stablehlo.tanh", MX_OPF_UNARY)                                       \
  /* elementwise binary */                                                      \
  X(ADD, "stablehlo.add", MX_OPF_BINARY)                                        \
  X(AND, "stablehlo.and", MX_OPF_BINARY)                                        \
  X(ATAN2, "stablehlo.atan2", MX_OPF_BINARY)                                    \
  X(COMPLEX, "stablehlo.complex", MX_OPF_BINARY)                                \
  X(DIVIDE, "stablehlo.divide", MX_OPF_BINARY)                                  \
  X(MAXIMUM, "stablehlo.maximum", MX_OPF_BINARY)                                \
  X(MINIMUM, "stablehlo.minimum", MX_OPF_BINARY)                                \
  X(MULTIPLY, "stablehlo.multiply", MX_OPF_BINARY)                              \
  X(OR, "stablehlo.or", MX_OPF_BINARY)                                          \
  X(POWER, "stablehlo.power", MX_OPF_BINARY)                                    \
  X(REMAINDER, "stablehlo.remainder", MX_OPF_BINARY)                            \
  X(SHIFT_LEFT, "stablehlo.shift_left", MX_OPF_BINARY)                          \
  X(SHIFT_RIGHT_ARITHMETIC, "stablehlo.shift_right_arithmetic", MX_OPF_BINARY)  \
  X(SHIFT_RIGHT_LOGICAL, "stablehlo.shift_right_logical", MX_OPF_BINARY)        \
  X(SUBTRACT, "stablehlo.subtract", MX_OPF_BINARY)                              \
  X(XOR, "stablehlo.xor", MX_OPF_BINARY)                                        \
  /* other elementwise */                                                       \
  X(CLAMP, "stablehlo.clamp", 0)                                                \
  X(COMPARE, "stablehlo.compare", 0)                                            \
  X(SELECT, "stablehlo.select", 0)                                              \
  X(CONVERT, "stablehlo.convert", 0)                                            \
  X(BITCAST_CONVERT, "stablehlo.bitcast_convert", 0)                            \
  X(REDUCE_PRECISION, "stablehlo.reduce_precision", 0)                          \
  /* constants and shapes */                                                    \
  X(CONSTANT, "stablehlo.constant", 0)                                          \
  X(IOTA, "stablehlo.iota", 0)                                                  \
  X(BROADCAST_IN_DIM, "stablehlo.broadcast_in_dim", 0)                          \
  X(RESHAPE, "stablehlo.reshape", 0)                                            \
  X(TRANSPOSE, "stablehlo.transpose", 0)                                        \
  X(SLICE, "stablehlo.slice", 0)                                                \
  X(DYNAMIC_SLICE, "stablehlo.dynamic_slice", 0)                                \
  X(DYNAMIC_UPDATE_SLICE, "stablehlo.dynamic_update_slice", 0)                  \
  X(CONCATENATE, "stablehlo.concatenate", 0)                                    \
  X(PAD, "stablehlo.pad", 0)                                                    \
  X(REVERSE, "stablehlo.reverse", 0)                                            \
  X(GATHER, "stablehlo.gather", 0)                                              \
  X(SCATTER, "stablehlo.scatter", 0)                                            \
  X(GET_DIMENSION_SIZE, "stablehlo.get_dimension_size", 0)                      \
  /* compute */                                                                 \
  X(DOT_GENERAL, "stablehlo.dot_general", 0)                                    \
  X(DOT, "stablehlo.dot", 0)                                                    \
  X(CONVOLUTION, "stablehlo.convolution", 0)                                    \
  X(REDUCE, "stablehlo.reduce", 0)                                              \
  X(REDUCE_WINDOW, "stablehlo.reduce_window", 0)                                \
  X(SELECT_AND_SCATTER, "stablehlo.select_and_scatter", 0)                      \
  X(SORT, "stablehlo.sort", 0)                                                  \
  X(MAP, "stablehlo.map", 0)                                                    \
  X(FFT, "stablehlo.fft", 0)                                                    \
  X(TRIANGULAR_SOLVE, "stablehlo.triangular_solve", 0)                          \
  /* control flow and structure */                                              \
  X(WHILE, "stablehlo.while", 0)                                                \
  X(IF, "stablehlo.if", 0)                                                      \
  X(CASE, "stablehlo.case", 0)                                                  \
  X(RETURN, "stablehlo.return", MX_OPF_TERMINATOR)                              \
  X(COMPOSITE, "stablehlo.composite", 0)                                        \
  X(CUSTOM_CALL, "stablehlo.custom_call", 0)                                    \
  X(OPTIMIZATION_BARRIER, "stablehlo.optimization_barrier", 0)                  \
  X(TUPLE, "stablehlo.tuple", 0)                                                \
  X(GET_TUPLE_ELEMENT, "stablehlo.get_tuple_element", 0)                        \
  /* check dialect (StableHLO interpreter tests) */                             \
  X(CHECK_EXPECT_EQ, "check.expect_eq", MX_OPF_CHECK)                           \
  X(CHECK_EXPECT_EQ_CONST, "check.expect_eq_const", MX_OPF_CHECK)               \
  X(CHECK_EXPECT_ALMOST_EQ, "check.expect_almost_eq", MX_OPF_CHECK)             \
  X(CHECK_EXPECT_ALMOST_EQ_CONST, "check.expect_almost_eq_const", MX_OPF_CHECK) \
  X(CHECK_EXPECT_CLOSE, "check.expect_close", MX_OPF_CHECK)

typedef enum mx_opcode {
#define MX_X_(e, s, f) MX_OP_##e,
  MX_OP_LIST(MX_X_)
#undef MX_X_
      MX_OP_COUNT
} mx_opcode_t;

const char *mx_opcode_name(mx_opcode_t code);  // "stablehlo.add"
unsigned mx_opcode_flags(mx_opcode_t code);
// Looks up an op by full name; MX_OP_UNKNOWN if not in the list.
mx_opcode_t mx_opcode_from_name(const char *s, size_t n);

typedef struct mx_block mx_block_t;
typedef struct mx_func mx_func_t;
typedef struct mx_module mx_module_t;

typedef struct mx_op {
  mx_opcode_t code;
  const char *name;  // full op name as written; for MX_OP_UNKNOWN the only identification
  int32_t n_operands;
  int32_t *operands;  // value ids in the enclosing function
  int32_t n_results;
  int32_t *results;  // value ids in the enclosing function
  int32_t n_attrs;
  mx_named_attr_t *attrs;
  int32_t n_regions;
  mx_block_t **regions;  // each region is one block (StableHLO regions have a single block)
  int32_t line, col;     // source position (0 when built in memory)
} mx_op_t;

struct mx_block {
  int32_t n_args, cap_args;
  int32_t *args;  // value ids of block arguments
  int32_t n_ops, cap_ops;
  mx_op_t **ops;
};

typedef struct mx_value {
  mx_type_t type;
  const char *name;   // source name without '%' ("arg0", "result"); may be NULL
  mx_op_t *def;       // defining op, NULL for block arguments
  int32_t def_index;  // result index within def, or argument index within its block
} mx_value_t;

struct mx_func {
  const char *name;  // without '@'
  bool is_private;
  mx_block_t *body;  // body->args are the function arguments
  int32_t n_results;
  mx_type_t *result_types;
  mx_attr_t *arg_attrs;     // per argument: DICT attr (n == 0 when none); length body->n_args
  const char **arg_locs;    // per argument: name location (`loc("name")`) or NULL; length n_args
  int32_t cap_arg_meta;     // room in arg_attrs and arg_locs
  mx_attr_t *result_attrs;  // per result: DICT attr (n == 0 when none); length n_results
  mx_attr_t attrs;          // function attribute DICT (n == 0 when none)
  int32_t n_values, cap_values;
  mx_value_t *values;  // every SSA value of the function, nested regions included
  mx_module_t *module;
};

struct mx_module {
  const char *name;  // NULL for an anonymous module
  mx_attr_t attrs;   // module attribute DICT (n == 0 when none)
  int32_t n_funcs, cap_funcs;
  mx_func_t **funcs;
  mx_arena_t *arena;  // owns everything above
};

// ---- Construction primitives (used by the parser and the builder) ----
mx_module_t *mx_module_create(const char *name);  // name may be NULL; NULL on out-of-memory
void mx_module_destroy(mx_module_t *m);           // accepts NULL
mx_func_t *mx_module_find_func(const mx_module_t *m, const char *name);
// The function `mlxcel run` executes: "main", else the only function; NULL otherwise.
mx_func_t *mx_module_entry(const mx_module_t *m);
// Adds an empty function (no args, no results). Error if the name already exists.
mx_status_t mx_func_create(mx_module_t *m, const char *name, bool is_private, mx_func_t **out);
// Adds a function argument value; returns its value id in *id.
mx_status_t mx_func_add_arg(mx_func_t *f, const mx_type_t *type, const char *name, int32_t *id);
mx_status_t mx_func_set_result_types(mx_func_t *f, const mx_type_t *types, int32_t n);
// Gives argument i a name location, printed as `loc("name")` (e.g. the checkpoint tensor a
// weight argument stands for). The string is copied into the module arena.
mx_status_t mx_func_set_arg_loc(mx_func_t *f, int32_t i, const char *name);
// New block (for an op region); args appended with mx_block_add_arg.
mx_block_t *mx_block_create(mx_func_t *f);
mx_status_t mx_block_add_arg(mx_func_t *f, mx_block_t *b, const mx_type_t *type, const char *name,
                             int32_t *id);
// Appends an op to `b` with the given operands and *result types* (new values are created for
// the results; their ids are in op->results). No verification here. NULL on out-of-memory.
mx_op_t *mx_block_append_op(mx_func_t *f, mx_block_t *b, mx_opcode_t code, const char *name,
                            const int32_t *operands, int32_t n_operands,
                            const mx_type_t *result_types, int32_t n_results);
mx_status_t mx_op_add_region(mx_func_t *f, mx_op_t *op, mx_block_t *region);
// Sets (or replaces) a named attribute; the attribute's payload pointers must be arena-owned by
// f->module (use the mx_attr_* constructors below).
mx_status_t mx_op_set_attr(mx_func_t *f, mx_op_t *op, const char *name, mx_attr_t value);
const mx_attr_t *mx_op_attr(const mx_op_t *op, const char *name);  // NULL if absent
const mx_attr_t *mx_attr_field(const mx_attr_t *dict_or_struct, const char *name);
const mx_type_t *mx_value_type(const mx_func_t *f, int32_t id);

// Attribute constructors: payloads copied into the module arena. On out-of-memory they return
// an attribute of kind UNIT with n = -1 (mx_attr_is_oom() tells).
mx_attr_t mx_attr_int(int64_t v, mx_elem_type_t et);
mx_attr_t mx_attr_float(double v, mx_elem_type_t et);
mx_attr_t mx_attr_bool(bool v);
mx_attr_t mx_attr_string(mx_module_t *m, const char *s);
mx_attr_t mx_attr_symbol(mx_module_t *m, const char *s);
mx_attr_t mx_attr_enum(mx_module_t *m, const char *kind, const char *value);
mx_attr_t mx_attr_i64s(mx_module_t *m, const int64_t *v, int32_t n);  // DENSE_ARRAY i64
mx_attr_t mx_attr_bools(mx_module_t *m, const bool *v, int32_t n);    // DENSE_ARRAY i1
mx_attr_t mx_attr_dense(mx_module_t *m, const mx_tensor_t *value);    // copies the data
mx_attr_t mx_attr_dict(mx_module_t *m, const mx_named_attr_t *fields, int32_t n);  // shallow copy
mx_attr_t mx_attr_struct(mx_module_t *m, const char *tag, const mx_named_attr_t *fields, int32_t n);
bool mx_attr_is_oom(const mx_attr_t *a);
// Reads a DENSE_ARRAY, or a DENSE tensor of i64, as int64 values (pointer into the attribute);
// returns the count, or -1 if the attribute is NULL or of another kind.
int32_t mx_attr_get_i64s(const mx_attr_t *a, const int64_t **values);

// ============================================================================================
// Verifier (shape/type rules of every supported op; also run by the parser)
// ============================================================================================

// Checks one op against its operand types and attributes; error message names the op, its
// location and the offending types. MX_ERR_VERIFY on violation.
mx_status_t mx_hlo_verify_op(const mx_func_t *f, const mx_op_t *op);
mx_status_t mx_hlo_verify_func(const mx_func_t *f);
mx_status_t mx_hlo_verify_module(const mx_module_t *m);

// ============================================================================================
// Parser
// ============================================================================================

typedef struct mx_text_case {
  const char *text;  // points into the caller's buffer
  size_t len;
  int32_t first_line;  // 1-based line number of text[0] in the whole file
} mx_text_case_t;

// Splits a file on lines consisting of "// -----" (StableHLO's -split-input-file marker).
// *cases is heap-allocated (caller frees); always at least one case.
mx_status_t mx_hlo_split_cases(const char *text, size_t len, mx_text_case_t **cases,
                               int32_t *n_cases);

typedef struct mx_parse_opts {
  const char *filename;  // used in error messages ("file:line:col: ..."); may be NULL
  int32_t first_line;    // line number of text[0] (1 if 0)
  bool no_verify;        // skip mx_hlo_verify_module after parsing
} mx_parse_opts_t;

// Parses one module (a `module { ... }` or bare top-level func.func definitions). Accepts pretty
// and generic op forms, `<{...}>` properties and `{...}` attribute dictionaries, loc(...), the
// check dialect, and custom_call @check.expect_* forms (mapped to the check opcodes).
// Unknown ops in generic form parse as MX_OP_UNKNOWN; unknown ops in pretty form fail with
// MX_ERR_UNSUPPORTED ("unsupported: <op name>"). Malformed text fails with MX_ERR_PARSE and a
// "file:line:col: message". opts may be NULL.
mx_status_t mx_hlo_parse(const char *text, size_t len, const mx_parse_opts_t *opts,
                         mx_module_t **out);

// ============================================================================================
// Printer
// ============================================================================================

typedef struct mx_print_opts {
  bool generic;            // print every op in generic form
  bool inline_composites;  // replace composites by calls to their decompositions
  int64_t hex_threshold;   // constants with more elements than this print as dense<"0x..">;
                           // 0 means the default (16)
} mx_print_opts_t;

// Appends the module's StableHLO text to sb. opts may be NULL.
mx_status_t mx_hlo_print(const mx_module_t *m, const mx_print_opts_t *opts, mx_strbuf_t *sb);
mx_status_t mx_hlo_print_file(const mx_module_t *m, const mx_print_opts_t *opts, FILE *out);
// Appends the module restricted to its public function `entry` and every private function (the
// composite decompositions it calls), the entry named `as` (NULL: its own name) and private
// when as_private: what a compiler that takes one entry function gets (XLA compiles only
// @main). The module is only read.
mx_status_t mx_hlo_print_entry(const mx_module_t *m, const char *entry, const char *as,
                               bool as_private, const mx_print_opts_t *opts, mx_strbuf_t *sb);

// ============================================================================================
// Reference interpreter
// ============================================================================================

typedef struct mx_check_report {
  int32_t n_checks;         // check ops evaluated
  int32_t n_failed;         // of those, failed
  char first_failure[512];  // message of the first failed check ("" if none)
} mx_check_report_t;

typedef struct mx_interp_opts {
  mx_check_report_t *checks;     // where check ops report; NULL = check ops are errors when failed
  int64_t max_while_iterations;  // 0 = default (1e8); exceeding is MX_ERR_RUNTIME
  size_t max_tensor_bytes;       // 0 = default (4 GiB); larger intermediate -> MX_ERR_RUNTIME
  // Execution budget for untrusted modules: 0 = unlimited; else the run fails with
  // MX_ERR_RUNTIME once the executed ops have done about this many element operations (each
  // op: the elements it reads and writes, plus dot contractions, convolution kernels and
  // windows; region bodies pay as they run). Each process of a run_parallel grid has its own.
  uint64_t max_work;
  // Debugging (mlxcel diff): called after each op of f's own body (not ops of regions or of
  // called functions; a composite counts as one op) with its results, borrowed for the call.
  // NULL = none.
  void (*on_op)(void *user, const mx_func_t *f, const mx_op_t *op,
                const mx_tensor_t *const *results);
  void *on_op_user;
} mx_interp_opts_t;

// Runs `f` on args (types must equal the function's argument types). results must have room
// for f->n_results tensors; each is filled with a heap tensor the caller frees with
// mx_tensor_free. Ops the interpreter does not implement fail with MX_ERR_UNSUPPORTED and a
// message starting "unsupported: <op name>". opts may be NULL.
mx_status_t mx_interp_run(const mx_module_t *m, const mx_func_t *f, const mx_tensor_t *args,
                          int32_t n_args, mx_tensor_t *results, const mx_interp_opts_t *opts);

#ifdef __cplusplus
}
#endif

#include "mlxcel/hlo_builder.h"

#endif  // MLXCEL_HLO_H
