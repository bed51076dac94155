// Private: state and helpers shared by the StableHLO text parser files (parse*.c).
#ifndef MLXCEL_HLO_PARSE_INTERNAL_H
#define MLXCEL_HLO_PARSE_INTERNAL_H

#include "base/try.h"
#include "hlo/lex.h"
#include "mlxcel/hlo.h"

#define MX_PARSE_MAX_DEPTH 256
// Largest constant payload the parser materializes (guards against `dense<0> : tensor<1e12xf32>`).
#define MX_PARSE_MAX_DENSE_BYTES ((size_t)1 << 28)
#define MX_PARSE_MAX_NUMEL ((int64_t)1 << 40)

// One name -> value binding. `%r:2` binds one entry with count 2 (addressed as %r#0, %r#1).
typedef struct mx_pname {
  const char *name;  // source text without '%' (points into the source buffer)
  size_t len;
  int32_t first_id;
  int32_t count;
  int32_t next;  // chain in the hash bucket (index into names), -1 = end
  uint32_t hash;
} mx_pname_t;

// Attribute alias (`#name = <attr>`) or type alias (`!name = type`, value.kind == TYPE).
typedef struct mx_palias {
  const char *name;  // including '#'
  size_t len;
  mx_attr_t value;
} mx_palias_t;

typedef struct mx_parser {
  mx_lexer_t lx;
  mx_module_t *m;
  mx_arena_t *arena;
  const char *filename;
  int depth;     // nesting depth (regions, attributes, types, literals)
  mx_func_t *f;  // function being parsed
  // Value name scopes (a stack; a region pops what it defined).
  mx_pname_t *names;
  int32_t n_names, cap_names;
  int32_t *buckets;
  int32_t n_buckets;
  mx_palias_t *aliases;
  int32_t n_aliases, cap_aliases;
  bool in_region;     // parsing a nested op region (affects what bare `return` means)
  bool index_as_i64;  // parsing the type of a dense attribute: `index` elements are i64
} mx_parser_t;

// An op being assembled before it is appended (pretty and generic forms).
typedef struct mx_pop {
  const char *name;  // full op name (arena or static)
  mx_opcode_t code;
  mx_tok_t tok;  // the op-name token (for positions)
  int32_t *operands;
  mx_tok_t *operand_toks;  // where each operand was used (for type mismatch messages)
  int32_t n_operands, cap_operands;
  mx_type_t *operand_types;  // declared types (n_operand_types; checked against the values)
  int32_t n_operand_types;
  mx_tok_t types_tok;  // where the type signature starts
  mx_type_t *result_types;
  int32_t n_results;
  mx_named_attr_t *attrs;
  int32_t n_attrs, cap_attrs;
  mx_block_t **regions;
  int32_t n_regions, cap_regions;
} mx_pop_t;

// ---- errors and tokens (parse.c) ----
// Sets MX_ERR_PARSE "file:line:col: error: <msg>" at token t.
mx_status_t mx_p_error_at(mx_parser_t *p, const mx_tok_t *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// "expected <what>, got <current token>".
mx_status_t mx_p_expected(mx_parser_t *p, const char *what);
mx_status_t mx_p_unsupported(mx_parser_t *p, const mx_tok_t *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
mx_status_t mx_p_oom(void);
static inline const mx_tok_t *mx_p_tok(const mx_parser_t *p) { return &p->lx.tok; }
static inline mx_tok_kind_t mx_p_kind(const mx_parser_t *p) { return p->lx.tok.kind; }
static inline void mx_p_next(mx_parser_t *p) { mx_lex_next(&p->lx); }
bool mx_p_accept(mx_parser_t *p, mx_tok_kind_t k);    // consumes if current is k
bool mx_p_accept_kw(mx_parser_t *p, const char *kw);  // consumes IDENT kw
mx_status_t mx_p_expect(mx_parser_t *p, mx_tok_kind_t k, const char *what);
mx_status_t mx_p_expect_kw(mx_parser_t *p, const char *kw);
mx_status_t mx_p_enter(mx_parser_t *p);  // depth guard; pair with mx_p_leave
static inline void mx_p_leave(mx_parser_t *p) { p->depth--; }
char *mx_p_strndup(mx_parser_t *p, const char *s, size_t n);
// Decodes a STRING token's contents (escapes) into the arena.
mx_status_t mx_p_string(mx_parser_t *p, const mx_tok_t *t, char **out, size_t *out_len);
// Skips `loc(...)` if present.
mx_status_t mx_p_skip_loc(mx_parser_t *p);
// Like mx_p_skip_loc, but returns the name of a plain `loc("name")` (arena string) in *name,
// NULL for other location forms or none.
mx_status_t mx_p_loc_name(mx_parser_t *p, char **name);
// Looks up a top-level attribute alias (#name); NULL if unknown.
const mx_attr_t *mx_p_find_alias(const mx_parser_t *p, const mx_tok_t *t);
// Error at a raw source pointer (for scanners that bypass the lexer).
mx_status_t mx_p_error_ptr(mx_parser_t *p, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// ---- integers (parse_attr.c) ----
// Magnitude of an INT token (decimal or hex); false on uint64 overflow.
bool mx_p_tok_u64(const mx_tok_t *t, uint64_t *out);
// Converts a FLOAT token's text (strtod/strtof; any length).
mx_status_t mx_p_float_text(mx_parser_t *p, const char *text, size_t n, double *d, float *f);
// Parses an optionally negative integer literal.
mx_status_t mx_p_int(mx_parser_t *p, int64_t *out);
// Parses `[i, j, ...]` (possibly empty) into an arena array.
mx_status_t mx_p_int_list(mx_parser_t *p, int64_t **out, int32_t *n);

// ---- types (parse_attr.c) ----
bool mx_p_at_type(const mx_parser_t *p);
mx_status_t mx_p_type(mx_parser_t *p, mx_type_t *out);
// Element type spelling at the current token (f32, complex<f64>, ...).
mx_status_t mx_p_elem_type(mx_parser_t *p, mx_elem_type_t *out);
// `(t, ...)` or a single type; used for result lists. Arena array.
mx_status_t mx_p_type_list_parens(mx_parser_t *p, mx_type_t **out, int32_t *n);
// Comma-separated types without parens (at least one).
mx_status_t mx_p_type_list(mx_parser_t *p, mx_type_t **out, int32_t *n);
// A type or a function type `(a, b) -> r` / `(a) -> (r, s)`.
typedef struct mx_ptypes {
  bool is_func;
  mx_type_t *in;
  int32_t n_in;
  mx_type_t *out;
  int32_t n_out;
} mx_ptypes_t;
mx_status_t mx_p_func_or_types(mx_parser_t *p, mx_ptypes_t *out);

// ---- quantized element types (parse_quant.c) ----
bool mx_p_at_quant(const mx_parser_t *p);  // current token is `!quant.uniform`
// Parses `!quant.uniform<...>`; *storage gets the storage element type, *out the arena copy.
mx_status_t mx_p_quant(mx_parser_t *p, mx_elem_type_t *storage, const mx_quant_t **out);
// Checks t's quantization against its shape (axis in range, one scale per slice); error at `at`.
mx_status_t mx_p_quant_check(mx_parser_t *p, const mx_tok_t *at, const mx_type_t *t);

// ---- attributes (parse_attr.c) ----
mx_status_t mx_p_attr(mx_parser_t *p, mx_attr_t *out);
// `{name = attr, name, ...}` into a DICT attribute (current token must be '{').
mx_status_t mx_p_attr_dict(mx_parser_t *p, mx_attr_t *out);
// dense<...> : type (current token is the `dense` identifier).
mx_status_t mx_p_dense(mx_parser_t *p, mx_attr_t *out);
// `<field = value, ...>` struct with the given tag (current token is '<').
mx_status_t mx_p_struct_body(mx_parser_t *p, const char *tag, mx_attr_t *out);
// The body of `#stablehlo.conv<...>` after '<', through '>'.
mx_status_t mx_p_conv_dims(mx_parser_t *p, mx_attr_t *out);
// Attribute builders in the module arena.
mx_attr_t mx_p_i64s_attr(mx_parser_t *p, const int64_t *v, int32_t n);
mx_attr_t mx_p_int_attr(int64_t v, mx_elem_type_t et);
mx_status_t mx_p_add_field(mx_parser_t *p, mx_named_attr_t **fields, int32_t *n, int32_t *cap,
                           const char *name, mx_attr_t value);

// ---- values and ops (parse.c) ----
mx_status_t mx_p_operand(mx_parser_t *p, mx_pop_t *op);  // %x[#n] resolved and appended
mx_status_t mx_p_resolve(mx_parser_t *p, const mx_tok_t *t, int32_t *id);
mx_status_t mx_pop_add_attr(mx_parser_t *p, mx_pop_t *op, const char *name, mx_attr_t value);
// Parses `{...}` if present and merges into op attributes.
mx_status_t mx_p_opt_attr_dict(mx_parser_t *p, mx_pop_t *op);
mx_status_t mx_pop_add_region(mx_parser_t *p, mx_pop_t *op, mx_block_t *b);
// Parses a region `{ [^bb(args):] ops }`. If preset_args is non-NULL these are the block
// arguments (names and types already known, e.g. from while/reduce pretty forms).
typedef struct mx_parg {
  mx_tok_t tok;  // the %name token
  mx_type_t type;
} mx_parg_t;
mx_status_t mx_p_region(mx_parser_t *p, const mx_parg_t *preset_args, int32_t n_preset,
                        mx_block_t **out);
// Defines a name in the current scope.
mx_status_t mx_p_define(mx_parser_t *p, const mx_tok_t *t, int32_t first_id, int32_t count);
mx_status_t mx_p_push_operand(mx_parser_t *p, mx_pop_t *op, int32_t id, const mx_tok_t *t);

mx_status_t mx_p_block_body(mx_parser_t *p, mx_block_t *b);  // ops up to and including '}'
mx_status_t mx_p_symbol_name(mx_parser_t *p, char **out);
mx_status_t mx_p_top_items(mx_parser_t *p, bool in_module);  // funcs/aliases up to '}' or EOF
void mx_p_pop_names(mx_parser_t *p, int32_t mark);

// ---- generic-form functions and modules (parse_generic.c) ----
// "func.func"() <{function_type = ..., sym_name = "f"}> ({ ^bb0(...): ... }) : () -> ()
mx_status_t mx_p_generic_func(mx_parser_t *p);
// "builtin.module"() ({ ... }) : () -> ()
mx_status_t mx_p_generic_module(mx_parser_t *p);

// ---- pretty forms (parse_ops.c) ----
// Parses everything after the op name of a pretty-form op; fills op.
mx_status_t mx_p_pretty_op(mx_parser_t *p, mx_pop_t *op);
// Normalizes attributes of a generic op to the canonical form and maps custom_call checks.
mx_status_t mx_p_canonicalize(mx_parser_t *p, mx_pop_t *op);

// ---- pretty forms of ops without an opcode (parse_extra.c) ----
// True if the op-name token names an op whose pretty form parse_extra.c knows.
bool mx_p_is_extra_op(const mx_tok_t *t);
// Parses everything after the op name (op->tok, op->name set; op->code is MX_OP_UNKNOWN).
mx_status_t mx_p_extra_op(mx_parser_t *p, mx_pop_t *op);

#endif  // MLXCEL_HLO_PARSE_INTERNAL_H
