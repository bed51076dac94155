// Private interface of the StableHLO text printer (print.c, print_attr.c, print_ops.c).
#ifndef MLXCEL_HLO_PRINT_INTERNAL_H
#define MLXCEL_HLO_PRINT_INTERNAL_H

#include "mlxcel/hlo.h"

// How one SSA value is spelled: "%" base, plus "#index" for results of multi-result ops.
typedef struct mx_pr_name {
  const char *base;  // "0", "arg3", "cst_2", "iterArg"; NULL while not (yet) in scope
  int32_t index;     // result index for multi-result ops, -1 otherwise
} mx_pr_name_t;

typedef struct mx_pr {
  mx_strbuf_t *sb;
  bool generic;
  bool inline_composites;
  int64_t hex_threshold;
  const mx_module_t *m;
  const mx_func_t *f;   // function being printed
  mx_pr_name_t *names;  // per value id of f
  mx_arena_t *scratch;  // name strings; reset per function
  int indent;           // current indentation in spaces
  int depth;            // 0 = ops directly in a function body (default dialect "func")
  mx_status_t st;       // first error met (output continues so the text stays debuggable)
} mx_pr_t;

// ---- print.c ----
void mx_pr_fail(mx_pr_t *p, mx_status_t st, const char *what);
void mx_pr_puts(mx_pr_t *p, const char *s);
void mx_pr_newline(mx_pr_t *p);  // "\n" + current indentation
void mx_pr_value(mx_pr_t *p, int32_t id);
void mx_pr_values(mx_pr_t *p, const int32_t *ids, int32_t n);  // comma separated
const mx_type_t *mx_pr_vtype(mx_pr_t *p, int32_t id);          // never NULL
void mx_pr_type(mx_pr_t *p, const mx_type_t *t);
void mx_pr_types_of(mx_pr_t *p, const int32_t *ids, int32_t n);  // comma separated
// "(operand types) -> result type" / "-> (r1, r2)".
void mx_pr_functional_type(mx_pr_t *p, const mx_op_t *op);
// Result type alone when every operand has the result's type, else the functional type.
void mx_pr_same_type(mx_pr_t *p, const mx_op_t *op);
// " {a = .., b}" with the op's attributes except `elided` (NULL-terminated); sorted by name.
void mx_pr_attr_dict(mx_pr_t *p, const mx_op_t *op, const char *const *elided);
// A region without its entry block header: "{\n ops \n}".
void mx_pr_region(mx_pr_t *p, const mx_block_t *b, bool print_args);
void mx_pr_generic_op(mx_pr_t *p, const mx_op_t *op);
// Prints the op name, dropping "func." directly inside a function body like MLIR does.
void mx_pr_op_name(mx_pr_t *p, const mx_op_t *op);

// ---- print_ops.c ----
// Prints the op (after its "%r = " prefix) in pretty form; false if it has none or the op does
// not have the attributes its pretty form needs (nothing printed then).
bool mx_pr_pretty_op(mx_pr_t *p, const mx_op_t *op);

// ---- print_extra.c ----
// Pretty forms of named MX_OP_UNKNOWN ops (chlo.scan, after_all, dynamic_iota, probe, ...);
// false (nothing printed) for other ops or attributes that would not read back identically.
bool mx_pr_extra_op(mx_pr_t *p, const mx_op_t *op);

// ---- print_attr.c ----
void mx_pr_attr(mx_pr_t *p, const mx_attr_t *a);
// Dictionary body entries "a = x, b" sorted by name (no braces).
void mx_pr_named_attrs(mx_pr_t *p, const mx_named_attr_t *attrs, int32_t n,
                       const char *const *elided);
void mx_pr_dense(mx_pr_t *p, const mx_tensor_t *t);         // "dense<...>" without the type
void mx_pr_float(mx_pr_t *p, double v, mx_elem_type_t et);  // value only, no type
// `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`; false (nothing printed) if the fields are unusable.
bool mx_pr_conv_dims(mx_pr_t *p, const mx_attr_t *conv_struct);
// The `<field = value, ...>` part of a struct attribute (what printStrippedAttrOrType shows).
void mx_pr_struct_body(mx_pr_t *p, const mx_attr_t *a);
void mx_pr_i64_list(mx_pr_t *p, const int64_t *v, int32_t n);  // "[1, 2]"
void mx_pr_symbol(mx_pr_t *p, const char *name);               // "@name" or @"quoted"
void mx_pr_string(mx_pr_t *p, const char *s);                  // "escaped"
bool mx_pr_is_bare_id(const char *s);
// Sorts attribute pointers by name (stable); n is small.
void mx_pr_sort_attrs(const mx_named_attr_t **v, int32_t n);

#endif  // MLXCEL_HLO_PRINT_INTERNAL_H
