// StableHLO text printer: modules, functions, regions, SSA naming and the generic op form.
//
// The output follows what `stablehlo-opt` prints: values are named like MLIR's SSANameState
// does (function arguments %argN, op results %N numbered per function, constants %c/%cst with
// _N suffixes on conflicts, while-loop region arguments %iterArg, nested regions numbered after
// their parent region), `func.` is dropped from ops directly inside a function body, ops with a
// StableHLO pretty syntax use it (print_ops.c) and everything else uses the generic form.
#include <stdlib.h>
#include <string.h>

#include "hlo/print_internal.h"

// ---- Small output helpers ----

void mx_pr_fail(mx_pr_t *p, mx_status_t st, const char *what) {
  if (p->st == MX_OK) p->st = mx_error_set(st, "print: %s", what);
}

void mx_pr_puts(mx_pr_t *p, const char *s) { mx_strbuf_puts(p->sb, s); }

void mx_pr_newline(mx_pr_t *p) {
  static const char spaces[] = "                                                                ";
  mx_strbuf_append(p->sb, "\n", 1);
  int n = p->indent;
  while (n > 0) {
    int k = n < 64 ? n : 64;
    mx_strbuf_append(p->sb, spaces, (size_t)k);
    n -= k;
  }
}

static bool mx_pr_valid_id(const mx_pr_t *p, int32_t id) { return id >= 0 && id < p->f->n_values; }

void mx_pr_value(mx_pr_t *p, int32_t id) {
  if (!mx_pr_valid_id(p, id) || !p->names[id].base) {
    mx_pr_fail(p, MX_ERR_INVALID_ARG, "an operand is not a value defined in scope");
    mx_pr_puts(p, "%<<UNKNOWN SSA VALUE>>");
    return;
  }
  mx_strbuf_printf(p->sb, "%%%s", p->names[id].base);
  if (p->names[id].index >= 0) mx_strbuf_printf(p->sb, "#%d", (int)p->names[id].index);
}

void mx_pr_values(mx_pr_t *p, const int32_t *ids, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    if (i) mx_pr_puts(p, ", ");
    mx_pr_value(p, ids[i]);
  }
}

const mx_type_t *mx_pr_vtype(mx_pr_t *p, int32_t id) {
  static const mx_type_t none = {.kind = MX_TYPE_TOKEN};
  if (!mx_pr_valid_id(p, id)) return &none;  // already reported by mx_pr_value
  return &p->f->values[id].type;
}

// Fixes the storage spelling of the quantized types printed from `start` on: MLIR spells unsigned
// storage `u8`, but mx_type_print writes `i8` for ui8 (which would read back as signed).
static void mx_pr_fix_quant(mx_pr_t *p, const mx_type_t *t, size_t *pos) {
  if (t->kind == MX_TYPE_TUPLE) {
    for (int32_t i = 0; i < t->n_tuple; i++) mx_pr_fix_quant(p, &t->tuple[i], pos);
    return;
  }
  if (t->kind != MX_TYPE_TENSOR || !t->quant) return;
  static const char key[] = "!quant.uniform<";
  const size_t kn = sizeof key - 1;
  while (*pos + kn < p->sb->len && memcmp(p->sb->data + *pos, key, kn) != 0) (*pos)++;
  if (*pos + kn >= p->sb->len) return;
  *pos += kn;
  if (mx_elem_is_unsigned(t->elem) && p->sb->data[*pos] == 'i') p->sb->data[*pos] = 'u';
}

void mx_pr_type(mx_pr_t *p, const mx_type_t *t) {
  size_t start = p->sb->len;
  mx_type_print(t, p->sb);
  mx_pr_fix_quant(p, t, &start);
}

void mx_pr_types_of(mx_pr_t *p, const int32_t *ids, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    if (i) mx_pr_puts(p, ", ");
    mx_pr_type(p, mx_pr_vtype(p, ids[i]));
  }
}

void mx_pr_functional_type(mx_pr_t *p, const mx_op_t *op) {
  mx_pr_puts(p, "(");
  mx_pr_types_of(p, op->operands, op->n_operands);
  mx_pr_puts(p, ") -> ");
  if (op->n_results == 1) {
    mx_pr_type(p, mx_pr_vtype(p, op->results[0]));
  } else {
    mx_pr_puts(p, "(");
    mx_pr_types_of(p, op->results, op->n_results);
    mx_pr_puts(p, ")");
  }
}

void mx_pr_same_type(mx_pr_t *p, const mx_op_t *op) {
  if (op->n_results != 1) {
    mx_pr_functional_type(p, op);
    return;
  }
  const mx_type_t *r = mx_pr_vtype(p, op->results[0]);
  for (int32_t i = 0; i < op->n_operands; i++) {
    if (!mx_type_equal(mx_pr_vtype(p, op->operands[i]), r)) {
      mx_pr_functional_type(p, op);
      return;
    }
  }
  mx_pr_type(p, r);
}

void mx_pr_attr_dict(mx_pr_t *p, const mx_op_t *op, const char *const *elided) {
  int32_t shown = 0;
  for (int32_t i = 0; i < op->n_attrs; i++) {
    bool skip = false;
    for (const char *const *e = elided; e && *e; e++)
      if (strcmp(*e, op->attrs[i].name) == 0) skip = true;
    if (!skip) shown++;
  }
  if (!shown) return;
  mx_pr_puts(p, " {");
  mx_pr_named_attrs(p, op->attrs, op->n_attrs, elided);
  mx_pr_puts(p, "}");
}

void mx_pr_op_name(mx_pr_t *p, const mx_op_t *op) {
  const char *name = op->name ? op->name : mx_opcode_name(op->code);
  // MLIR elides the default dialect ("func" inside func.func) when the rest has no dot.
  if (p->depth == 0 && strncmp(name, "func.", 5) == 0 && !strchr(name + 5, '.')) name += 5;
  mx_pr_puts(p, name);
}

// ---- SSA naming (mirrors MLIR's SSANameState) ----

enum { MX_NAME_C = 1, MX_NAME_CST = 2, MX_NAME_ITER = 4 };

typedef struct mx_name_ctx {
  int32_t next_value, next_arg, next_conflict;
  unsigned used;  // MX_NAME_* bases taken in this scope or an enclosing one
} mx_name_ctx_t;

// "<prefix><n>" or "<prefix>_<n>" (prefix NULL: just the number), copied to the scratch arena.
static const char *mx_pr_name_str(mx_pr_t *p, const char *prefix, bool underscore, int32_t n) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s%s%d", prefix ? prefix : "", underscore ? "_" : "", (int)n);
  const char *r = mx_arena_strdup(p->scratch, buf);
  if (!r) mx_pr_fail(p, MX_ERR_NOMEM, "out of memory");
  return r;
}

// A name based on `base` that is unique in the current scope ("c", then "c_<conflict id>").
static const char *mx_pr_unique(mx_pr_t *p, mx_name_ctx_t *c, unsigned bit, const char *base) {
  if (!(c->used & bit)) {
    c->used |= bit;
    return base;
  }
  return mx_pr_name_str(p, base, true, c->next_conflict++);
}

static void mx_pr_set_name(mx_pr_t *p, int32_t id, const char *base, int32_t index) {
  if (!mx_pr_valid_id(p, id)) {
    mx_pr_fail(p, MX_ERR_INVALID_ARG, "an op result or block argument has an invalid value id");
    return;
  }
  p->names[id].base = base;
  p->names[id].index = index;
}

static void mx_pr_name_block(mx_pr_t *p, const mx_block_t *b, mx_name_ctx_t *c, bool loop_args) {
  for (int32_t i = 0; i < b->n_args; i++) {
    const char *name = loop_args ? mx_pr_unique(p, c, MX_NAME_ITER, "iterArg")
                                 : mx_pr_name_str(p, "arg", false, c->next_arg++);
    mx_pr_set_name(p, b->args[i], name, -1);
  }
  for (int32_t i = 0; i < b->n_ops; i++) {
    const mx_op_t *op = b->ops[i];
    if (op->n_results == 0) continue;
    const char *base = NULL;
    if (!p->generic && op->code == MX_OP_CONSTANT && op->n_results == 1 &&
        mx_pr_valid_id(p, op->results[0])) {
      const mx_type_t *t = &p->f->values[op->results[0]].type;
      bool is_int = t->kind == MX_TYPE_TENSOR && (mx_elem_is_int(t->elem) || t->elem == MX_ELEM_I1);
      base = is_int ? mx_pr_unique(p, c, MX_NAME_C, "c") : mx_pr_unique(p, c, MX_NAME_CST, "cst");
    } else {
      base = mx_pr_name_str(p, NULL, false, c->next_value++);
    }
    for (int32_t r = 0; r < op->n_results; r++)
      mx_pr_set_name(p, op->results[r], base, op->n_results > 1 ? r : -1);
  }
  // Nested regions are numbered after the whole enclosing region, each starting from the
  // counters reached here; sibling regions do not see each other's names.
  for (int32_t i = 0; i < b->n_ops; i++) {
    const mx_op_t *op = b->ops[i];
    for (int32_t r = 0; r < op->n_regions; r++) {
      if (!op->regions[r]) continue;
      mx_name_ctx_t child = *c;
      mx_pr_name_block(p, op->regions[r], &child, !p->generic && op->code == MX_OP_WHILE);
    }
  }
}

// ---- Ops and regions ----

static void mx_pr_op(mx_pr_t *p, const mx_op_t *op);

static void mx_pr_block_ops(mx_pr_t *p, const mx_block_t *b) {
  for (int32_t i = 0; i < b->n_ops; i++) {
    mx_pr_newline(p);
    if (b->ops[i])
      mx_pr_op(p, b->ops[i]);
    else
      mx_pr_fail(p, MX_ERR_INVALID_ARG, "NULL op in a block");
  }
}

static void mx_pr_block_arg_list(mx_pr_t *p, const mx_block_t *b) {
  for (int32_t i = 0; i < b->n_args; i++) {
    if (i) mx_pr_puts(p, ", ");
    mx_pr_value(p, b->args[i]);
    mx_pr_puts(p, ": ");
    mx_pr_type(p, mx_pr_vtype(p, b->args[i]));
  }
}

void mx_pr_region(mx_pr_t *p, const mx_block_t *b, bool print_args) {
  mx_pr_puts(p, "{");
  if (!b) {
    mx_pr_fail(p, MX_ERR_INVALID_ARG, "NULL region");
    mx_pr_newline(p);
    mx_pr_puts(p, "}");
    return;
  }
  p->depth++;
  if (print_args && b->n_args > 0) {
    mx_pr_newline(p);
    mx_pr_puts(p, "^bb0(");
    mx_pr_block_arg_list(p, b);
    mx_pr_puts(p, "):");
  }
  p->indent += 2;
  mx_pr_block_ops(p, b);
  p->indent -= 2;
  p->depth--;
  mx_pr_newline(p);
  mx_pr_puts(p, "}");
}

// Inherent attributes (MLIR properties, printed in `<{...}>` by the generic form) of the ops we
// know, from StablehloOps.td and the func/check dialects; NULL for ops not listed.
static const char *const *mx_pr_inherent_names(mx_opcode_t code) {
  static const char *const none[] = {NULL};
  static const char *const accuracy[] = {"result_accuracy", NULL};
  static const char *const compare[] = {"comparison_direction", "compare_type", NULL};
  static const char *const reduce_precision[] = {"exponent_bits", "mantissa_bits", NULL};
  static const char *const constant[] = {"value", NULL};
  static const char *const iota[] = {"iota_dimension", NULL};
  static const char *const bcast[] = {"broadcast_dimensions", NULL};
  static const char *const transpose[] = {"permutation", NULL};
  static const char *const slice[] = {"start_indices", "limit_indices", "strides", NULL};
  static const char *const dslice[] = {"slice_sizes", NULL};
  static const char *const dimension[] = {"dimension", NULL};
  static const char *const dimensions[] = {"dimensions", NULL};
  static const char *const pad[] = {"edge_padding_low", "edge_padding_high", "interior_padding",
                                    NULL};
  static const char *const gather[] = {"dimension_numbers", "slice_sizes", "indices_are_sorted",
                                       NULL};
  static const char *const scatter[] = {"scatter_dimension_numbers", "indices_are_sorted",
                                        "unique_indices", NULL};
  static const char *const dot_general[] = {"dot_dimension_numbers", "precision_config",
                                            "algorithm", NULL};
  static const char *const dot[] = {"precision_config", NULL};
  static const char *const conv[] = {"window_strides",      "padding",
                                     "lhs_dilation",        "rhs_dilation",
                                     "window_reversal",     "dimension_numbers",
                                     "feature_group_count", "batch_group_count",
                                     "precision_config",    NULL};
  static const char *const reduce_window[] = {
      "window_dimensions", "window_strides", "base_dilations", "window_dilations", "padding", NULL};
  static const char *const select_and_scatter[] = {"window_dimensions", "window_strides", "padding",
                                                   NULL};
  static const char *const sort[] = {"dimension", "is_stable", NULL};
  static const char *const fft[] = {"fft_type", "fft_length", NULL};
  static const char *const tri[] = {"left_side", "lower", "unit_diagonal", "transpose_a", NULL};
  static const char *const composite[] = {"name", "composite_attributes", "decomposition",
                                          "version", NULL};
  static const char *const custom_call[] = {"call_target_name",    "has_side_effect",
                                            "backend_config",      "api_version",
                                            "called_computations", "operand_layouts",
                                            "result_layouts",      "output_operand_aliases",
                                            "result_tilings",      NULL};
  static const char *const gte[] = {"index", NULL};
  static const char *const call[] = {"callee", "arg_attrs", "res_attrs", "no_inline", NULL};
  static const char *const check[] = {"value", "tolerance", "max_ulp_difference",
                                      "min_ulp_difference", NULL};
  switch (code) {
    case MX_OP_UNKNOWN:
      return NULL;
    case MX_OP_COMPARE:
      return compare;
    case MX_OP_REDUCE_PRECISION:
      return reduce_precision;
    case MX_OP_CONSTANT:
      return constant;
    case MX_OP_IOTA:
      return iota;
    case MX_OP_BROADCAST_IN_DIM:
      return bcast;
    case MX_OP_TRANSPOSE:
      return transpose;
    case MX_OP_SLICE:
      return slice;
    case MX_OP_DYNAMIC_SLICE:
      return dslice;
    case MX_OP_CONCATENATE:
    case MX_OP_GET_DIMENSION_SIZE:
      return dimension;
    case MX_OP_SORT:
      return sort;
    case MX_OP_REVERSE:
    case MX_OP_REDUCE:
    case MX_OP_MAP:
      return dimensions;
    case MX_OP_PAD:
      return pad;
    case MX_OP_GATHER:
      return gather;
    case MX_OP_SCATTER:
      return scatter;
    case MX_OP_DOT_GENERAL:
      return dot_general;
    case MX_OP_DOT:
      return dot;
    case MX_OP_CONVOLUTION:
      return conv;
    case MX_OP_REDUCE_WINDOW:
      return reduce_window;
    case MX_OP_SELECT_AND_SCATTER:
      return select_and_scatter;
    case MX_OP_FFT:
      return fft;
    case MX_OP_TRIANGULAR_SOLVE:
      return tri;
    case MX_OP_COMPOSITE:
      return composite;
    case MX_OP_CUSTOM_CALL:
      return custom_call;
    case MX_OP_GET_TUPLE_ELEMENT:
      return gte;
    case MX_OP_FUNC_CALL:
      return call;
    default:
      break;
  }
  if (mx_opcode_flags(code) & MX_OPF_CHECK) return check;
  if (mx_opcode_flags(code) & MX_OPF_UNARY) return accuracy;
  return none;
}

// Whether attribute `name` of `op` is discardable (`{...}`) rather than inherent (`<{...}>`).
// Known ops use the table above; for others MLIR's naming convention decides: discardable
// attributes carry a dialect prefix.
static bool mx_pr_is_discardable(const mx_op_t *op, const char *name) {
  const char *const *inherent = NULL;
  if (op->name && strcmp(op->name, mx_opcode_name(op->code)) == 0)
    inherent = mx_pr_inherent_names(op->code);
  if (!inherent) return strchr(name, '.') != NULL;
  for (; *inherent; inherent++)
    if (strcmp(*inherent, name) == 0) return false;
  return true;
}

static void mx_pr_attr_group(mx_pr_t *p, const mx_op_t *op, bool discardable, const char *open,
                             const char *close) {
  int32_t n = 0;
  for (int32_t i = 0; i < op->n_attrs; i++)
    if (mx_pr_is_discardable(op, op->attrs[i].name) == discardable) n++;
  if (!n) return;
  const char **elided = calloc((size_t)(op->n_attrs - n) + 1, sizeof *elided);
  if (!elided) {
    mx_pr_fail(p, MX_ERR_NOMEM, "out of memory");
    return;
  }
  int32_t k = 0;
  for (int32_t i = 0; i < op->n_attrs; i++)
    if (mx_pr_is_discardable(op, op->attrs[i].name) != discardable) elided[k++] = op->attrs[i].name;
  mx_pr_puts(p, open);
  mx_pr_named_attrs(p, op->attrs, op->n_attrs, elided);
  mx_pr_puts(p, close);
  free(elided);
}

void mx_pr_generic_op(mx_pr_t *p, const mx_op_t *op) {
  mx_pr_string(p, op->name ? op->name : mx_opcode_name(op->code));
  mx_pr_puts(p, "(");
  mx_pr_values(p, op->operands, op->n_operands);
  mx_pr_puts(p, ")");
  mx_pr_attr_group(p, op, false, " <{", "}>");
  if (op->n_regions > 0) {
    mx_pr_puts(p, " (");
    for (int32_t r = 0; r < op->n_regions; r++) {
      if (r) mx_pr_puts(p, ", ");
      mx_pr_region(p, op->regions[r], true);
    }
    mx_pr_puts(p, ")");
  }
  mx_pr_attr_group(p, op, true, " {", "}");
  mx_pr_puts(p, " : ");
  mx_pr_functional_type(p, op);
}

// `inline_composites`: a composite becomes a call of its decomposition.
static bool mx_pr_composite_as_call(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *d = mx_op_attr(op, "decomposition");
  if (!d || d->kind != MX_ATTR_SYMBOL || !d->s) return false;
  mx_pr_puts(p, p->depth == 0 ? "call " : "func.call ");
  mx_pr_symbol(p, d->s);
  mx_pr_puts(p, "(");
  mx_pr_values(p, op->operands, op->n_operands);
  mx_pr_puts(p, ") : ");
  mx_pr_functional_type(p, op);
  return true;
}

static void mx_pr_op(mx_pr_t *p, const mx_op_t *op) {
  if (op->n_results > 0) {
    int32_t id = op->results[0];
    if (!mx_pr_valid_id(p, id) || !p->names[id].base) {
      mx_pr_value(p, id);  // reports the error
    } else {
      mx_strbuf_printf(p->sb, "%%%s", p->names[id].base);
      if (op->n_results > 1) mx_strbuf_printf(p->sb, ":%d", (int)op->n_results);
    }
    mx_pr_puts(p, " = ");
  }
  if (p->inline_composites && op->code == MX_OP_COMPOSITE && mx_pr_composite_as_call(p, op)) return;
  if (!p->generic) {
    size_t mark = p->sb->len;
    mx_status_t st = p->st;
    if (mx_pr_pretty_op(p, op)) return;
    // No pretty form: roll back whatever was started and use the generic form.
    if (p->sb->data && !p->sb->oom) {
      p->sb->len = mark;
      p->sb->data[mark] = '\0';
    }
    p->st = st;
  }
  mx_pr_generic_op(p, op);
}

// ---- Functions and modules ----

static void mx_pr_dict_attr_braced(mx_pr_t *p, const mx_attr_t *d) {
  if (!d || d->kind != MX_ATTR_DICT || d->n <= 0) return;
  mx_pr_puts(p, " {");
  mx_pr_named_attrs(p, d->fields, d->n, NULL);
  mx_pr_puts(p, "}");
}

static void mx_pr_func(mx_pr_t *p, const mx_func_t *f) {
  p->f = f;
  p->names = calloc((size_t)(f->n_values > 0 ? f->n_values : 1), sizeof *p->names);
  if (!p->names) {
    mx_pr_fail(p, MX_ERR_NOMEM, "out of memory");
    return;
  }
  mx_name_ctx_t ctx = {0, 0, 0, 0};
  if (f->body) mx_pr_name_block(p, f->body, &ctx, false);

  mx_pr_newline(p);
  mx_pr_puts(p, "func.func ");
  if (f->is_private) mx_pr_puts(p, "private ");
  mx_pr_symbol(p, f->name ? f->name : "");
  // A function without ops has no body to show: MLIR's external-function form lists only the
  // argument types (a block without a terminator could not be printed validly anyway).
  bool decl = !f->body || f->body->n_ops == 0;
  mx_pr_puts(p, "(");
  if (f->body) {
    for (int32_t i = 0; i < f->body->n_args; i++) {
      if (i) mx_pr_puts(p, ", ");
      if (!decl) {
        mx_pr_value(p, f->body->args[i]);
        mx_pr_puts(p, ": ");
      }
      mx_pr_type(p, mx_pr_vtype(p, f->body->args[i]));
      if (f->arg_attrs) mx_pr_dict_attr_braced(p, &f->arg_attrs[i]);
      if (f->arg_locs && f->arg_locs[i]) {
        mx_pr_puts(p, " loc(");
        mx_pr_string(p, f->arg_locs[i]);
        mx_pr_puts(p, ")");
      }
    }
  }
  mx_pr_puts(p, ")");
  if (f->n_results > 0) {
    bool any_attrs = false;
    for (int32_t i = 0; f->result_attrs && i < f->n_results; i++)
      if (f->result_attrs[i].kind == MX_ATTR_DICT && f->result_attrs[i].n > 0) any_attrs = true;
    mx_pr_puts(p, " -> ");
    if (f->n_results == 1 && !any_attrs) {
      mx_pr_type(p, &f->result_types[0]);
    } else {
      mx_pr_puts(p, "(");
      for (int32_t i = 0; i < f->n_results; i++) {
        if (i) mx_pr_puts(p, ", ");
        mx_pr_type(p, &f->result_types[i]);
        if (f->result_attrs) mx_pr_dict_attr_braced(p, &f->result_attrs[i]);
      }
      mx_pr_puts(p, ")");
    }
  }
  if (f->attrs.kind == MX_ATTR_DICT && f->attrs.n > 0) {
    mx_pr_puts(p, " attributes");
    mx_pr_dict_attr_braced(p, &f->attrs);
  }
  if (!decl) {
    mx_pr_puts(p, " ");
    p->depth = -1;  // mx_pr_region increments: ops of the body are at depth 0
    mx_pr_region(p, f->body, false);
    p->depth = 0;
  }
  free(p->names);
  p->names = NULL;
  p->f = NULL;
}

mx_status_t mx_hlo_print(const mx_module_t *m, const mx_print_opts_t *opts, mx_strbuf_t *sb) {
  if (!m || !sb) return mx_error_set(MX_ERR_INVALID_ARG, "mx_hlo_print: NULL argument");
  mx_pr_t p;
  memset(&p, 0, sizeof p);
  p.sb = sb;
  p.m = m;
  p.hex_threshold = 16;
  if (opts) {
    p.generic = opts->generic;
    p.inline_composites = opts->inline_composites;
    if (opts->hex_threshold > 0) p.hex_threshold = opts->hex_threshold;
  }
  mx_pr_puts(&p, "module");
  if (m->name) {
    mx_pr_puts(&p, " ");
    mx_pr_symbol(&p, m->name);
  }
  if (m->attrs.kind == MX_ATTR_DICT && m->attrs.n > 0) {
    mx_pr_puts(&p, " attributes");
    mx_pr_dict_attr_braced(&p, &m->attrs);
  }
  mx_pr_puts(&p, " {");
  p.indent = 2;
  for (int32_t i = 0; i < m->n_funcs; i++) {
    p.scratch = mx_arena_create();
    if (!p.scratch) {
      mx_pr_fail(&p, MX_ERR_NOMEM, "out of memory");
      break;
    }
    if (m->funcs[i]) mx_pr_func(&p, m->funcs[i]);
    mx_arena_destroy(p.scratch);
    p.scratch = NULL;
  }
  p.indent = 0;
  mx_pr_newline(&p);
  mx_pr_puts(&p, "}\n");
  if (sb->oom && p.st == MX_OK) p.st = mx_error_set(MX_ERR_NOMEM, "print: out of memory");
  return p.st;
}

mx_status_t mx_hlo_print_entry(const mx_module_t *m, const char *entry, const char *as,
                               bool as_private, const mx_print_opts_t *opts, mx_strbuf_t *sb) {
  const mx_func_t *keep = mx_module_find_func(m, entry);
  if (!keep || keep->is_private)
    return mx_error_set(MX_ERR_INVALID_ARG, "the module has no public @%s function", entry);
  mx_func_t **subset = calloc((size_t)m->n_funcs, sizeof *subset);
  if (!subset) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  // A view of the module listing only the kept functions, the entry through a shallow copy
  // carrying the new name (nothing calls the entry, so no reference needs the change).
  mx_func_t renamed = *keep;
  if (as) renamed.name = as;
  renamed.is_private = as_private;
  int32_t n = 0;
  for (int32_t i = 0; i < m->n_funcs; i++) {
    if (m->funcs[i] == keep) {
      subset[n++] = &renamed;
    } else if (m->funcs[i] && m->funcs[i]->is_private) {
      subset[n++] = m->funcs[i];
    }
  }
  mx_module_t view = *m;
  view.funcs = subset;
  view.n_funcs = n;
  mx_status_t st = mx_hlo_print(&view, opts, sb);
  free(subset);
  return st;
}

mx_status_t mx_hlo_print_file(const mx_module_t *m, const mx_print_opts_t *opts, FILE *out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_hlo_print_file: NULL file");
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_status_t st = mx_hlo_print(m, opts, &sb);
  if (sb.len && fwrite(sb.data, 1, sb.len, out) != sb.len && st == MX_OK)
    st = mx_error_set(MX_ERR_IO, "print: write failed");
  if (st == MX_OK && fflush(out) != 0) st = mx_error_set(MX_ERR_IO, "print: write failed");
  mx_strbuf_free(&sb);
  return st;
}
