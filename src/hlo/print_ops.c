// StableHLO text printer: the pretty (custom assembly) forms of ops, following the
// assemblyFormat strings of stablehlo/dialect/StablehloOps.td and the custom printers of
// AssemblyFormat.cpp, plus the func and check dialects. An op whose shape or attributes do not
// fit its pretty form (wrong operand count, missing or oddly-typed attribute) returns false and
// is printed in generic form instead, so every IR prints and re-parses to itself.
#include <string.h>

#include "hlo/print_internal.h"

// ---- Attribute access ----

static const mx_attr_t *mx_pr_attr_of(const mx_op_t *op, const char *name, mx_attr_kind_t kind) {
  const mx_attr_t *a = mx_op_attr(op, name);
  return a && a->kind == kind ? a : NULL;
}

// An i64 dimension list (DENSE_ARRAY); the pretty forms cannot carry other encodings.
static bool mx_pr_dims(const mx_op_t *op, const char *name, const int64_t **v, int32_t *n) {
  const mx_attr_t *a = mx_pr_attr_of(op, name, MX_ATTR_DENSE_ARRAY);
  if (!a || a->elem != MX_ELEM_I64 || a->n < 0) return false;
  *v = a->ints;
  *n = a->n;
  return true;
}

static bool mx_pr_print_dims_attr(mx_pr_t *p, const mx_op_t *op, const char *name) {
  const int64_t *v = NULL;
  int32_t n = 0;
  if (!mx_pr_dims(op, name, &v, &n)) return false;
  mx_pr_i64_list(p, v, n);
  return true;
}

static bool mx_pr_shape_is(const mx_op_t *op, int32_t n_operands, int32_t n_results) {
  return op->n_regions == 0 && (n_operands < 0 || op->n_operands == n_operands) &&
         (n_results < 0 || op->n_results == n_results);
}

static void mx_pr_name_sp(mx_pr_t *p, const mx_op_t *op) {
  mx_pr_op_name(p, op);
  mx_pr_puts(p, " ");
}

// `... {attrs} : (types) -> types`
static void mx_pr_tail_functional(mx_pr_t *p, const mx_op_t *op, const char *const *elided) {
  mx_pr_attr_dict(p, op, elided);
  mx_pr_puts(p, " : ");
  mx_pr_functional_type(p, op);
}

static void mx_pr_tail_same(mx_pr_t *p, const mx_op_t *op, const char *const *elided) {
  mx_pr_attr_dict(p, op, elided);
  mx_pr_puts(p, " : ");
  mx_pr_same_type(p, op);
}

static bool mx_pr_is_enum(const mx_attr_t *a) { return a && a->kind == MX_ATTR_ENUM && a->s; }

// `precision = [DEFAULT, HIGHEST]` from an ARRAY of precision enums.
static bool mx_pr_precision_ok(const mx_attr_t *a) {
  if (!a) return true;
  if (a->kind != MX_ATTR_ARRAY) return false;
  for (int32_t i = 0; i < a->n; i++)
    if (!mx_pr_is_enum(&a->items[i])) return false;
  return true;
}

static void mx_pr_precision(mx_pr_t *p, const mx_attr_t *a) {
  if (!a) return;
  mx_pr_puts(p, ", precision = [");
  for (int32_t i = 0; i < a->n; i++) {
    if (i) mx_pr_puts(p, ", ");
    mx_pr_puts(p, a->items[i].s);
  }
  mx_pr_puts(p, "]");
}

// ---- Elementwise and simple ops ----

static bool mx_pr_complex(mx_pr_t *p, const mx_op_t *op) {
  if (!mx_pr_shape_is(op, 2, 1)) return false;
  mx_pr_name_sp(p, op);
  mx_pr_values(p, op->operands, 2);
  mx_pr_attr_dict(p, op, NULL);
  mx_pr_puts(p, " : ");
  // Only the result type when both operands are its real counterpart.
  const mx_type_t *r = mx_pr_vtype(p, op->results[0]);
  bool short_form = r->kind == MX_TYPE_TENSOR && mx_elem_is_complex(r->elem);
  if (short_form) {
    mx_type_t real = *r;
    real.elem = r->elem == MX_ELEM_C64 ? MX_ELEM_F32 : MX_ELEM_F64;
    for (int32_t i = 0; i < 2; i++)
      if (!mx_type_equal(mx_pr_vtype(p, op->operands[i]), &real)) short_form = false;
  }
  if (short_form)
    mx_pr_type(p, r);
  else
    mx_pr_functional_type(p, op);
  return true;
}

static bool mx_pr_compare(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *dir = mx_op_attr(op, "comparison_direction");
  const mx_attr_t *ct = mx_op_attr(op, "compare_type");
  if (!mx_pr_shape_is(op, 2, 1) || !mx_pr_is_enum(dir) || (ct && !mx_pr_is_enum(ct))) return false;
  static const char *const elided[] = {"comparison_direction", "compare_type", NULL};
  mx_pr_name_sp(p, op);
  mx_pr_puts(p, dir->s);
  mx_pr_puts(p, ", ");
  mx_pr_values(p, op->operands, 2);
  if (ct) {
    mx_pr_puts(p, ", ");
    mx_pr_puts(p, ct->s);
  }
  mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_select(mx_pr_t *p, const mx_op_t *op) {
  if (!mx_pr_shape_is(op, 3, 1)) return false;
  mx_pr_name_sp(p, op);
  mx_pr_values(p, op->operands, 3);
  mx_pr_attr_dict(p, op, NULL);
  mx_pr_puts(p, " : ");
  const mx_type_t *r = mx_pr_vtype(p, op->results[0]);
  if (mx_type_equal(mx_pr_vtype(p, op->operands[1]), r) &&
      mx_type_equal(mx_pr_vtype(p, op->operands[2]), r)) {
    mx_pr_type(p, mx_pr_vtype(p, op->operands[0]));
    mx_pr_puts(p, ", ");
    mx_pr_type(p, r);
  } else {
    mx_pr_functional_type(p, op);
  }
  return true;
}

static bool mx_pr_constant(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *v = mx_pr_attr_of(op, "value", MX_ATTR_DENSE);
  if (!mx_pr_shape_is(op, 0, 1) || !v || !v->dense ||
      !mx_type_equal(&v->dense->type, mx_pr_vtype(p, op->results[0])))
    return false;
  static const char *const elided[] = {"value", NULL};
  mx_pr_op_name(p, op);
  mx_pr_attr_dict(p, op, elided);
  mx_pr_puts(p, " ");
  mx_pr_attr(p, v);
  return true;
}

// `name %x, <kw> = <int attr> {attrs} : functional/same type` (iota has no operand).
static bool mx_pr_int_kw(mx_pr_t *p, const mx_op_t *op, int32_t n_operands, const char *attr,
                         const char *kw, bool same_type) {
  const mx_attr_t *a = mx_pr_attr_of(op, attr, MX_ATTR_INT);
  if (!mx_pr_shape_is(op, n_operands, 1) || !a) return false;
  const char *elided[] = {attr, NULL};
  mx_pr_name_sp(p, op);
  if (n_operands) {
    mx_pr_values(p, op->operands, n_operands);
    mx_pr_puts(p, ", ");
  }
  mx_strbuf_printf(p->sb, "%s = %lld", kw, (long long)a->i);
  if (same_type)
    mx_pr_tail_same(p, op, elided);
  else
    mx_pr_tail_functional(p, op, elided);
  return true;
}

// `name %x, dims = [..] {attrs} : types`
static bool mx_pr_dims_kw(mx_pr_t *p, const mx_op_t *op, const char *attr, bool same_type) {
  const int64_t *v = NULL;
  int32_t n = 0;
  if (!mx_pr_shape_is(op, 1, 1) || !mx_pr_dims(op, attr, &v, &n)) return false;
  const char *elided[] = {attr, NULL};
  mx_pr_name_sp(p, op);
  mx_pr_value(p, op->operands[0]);
  mx_pr_puts(p, ", dims = ");
  mx_pr_i64_list(p, v, n);
  if (same_type)
    mx_pr_tail_same(p, op, elided);
  else
    mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_slice(mx_pr_t *p, const mx_op_t *op) {
  const int64_t *s = NULL, *l = NULL, *st = NULL;
  int32_t ns = 0, nl = 0, nst = 0;
  if (!mx_pr_shape_is(op, 1, 1) || !mx_pr_dims(op, "start_indices", &s, &ns) ||
      !mx_pr_dims(op, "limit_indices", &l, &nl) || !mx_pr_dims(op, "strides", &st, &nst) ||
      ns != nl || ns != nst)
    return false;
  static const char *const elided[] = {"start_indices", "limit_indices", "strides", NULL};
  mx_pr_name_sp(p, op);
  mx_pr_value(p, op->operands[0]);
  mx_pr_puts(p, " [");
  for (int32_t i = 0; i < ns; i++) {
    mx_strbuf_printf(p->sb, "%s%lld:%lld", i ? ", " : "", (long long)s[i], (long long)l[i]);
    if (st[i] != 1) mx_strbuf_printf(p->sb, ":%lld", (long long)st[i]);
  }
  mx_pr_puts(p, "]");
  mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_dynamic_slice(mx_pr_t *p, const mx_op_t *op) {
  const int64_t *v = NULL;
  int32_t n = 0;
  if (!mx_pr_shape_is(op, -1, 1) || op->n_operands < 1 || !mx_pr_dims(op, "slice_sizes", &v, &n))
    return false;
  static const char *const elided[] = {"slice_sizes", NULL};
  mx_pr_name_sp(p, op);
  for (int32_t i = 0; i < op->n_operands; i++) {
    mx_pr_value(p, op->operands[i]);
    mx_pr_puts(p, ", ");
  }
  mx_pr_puts(p, "sizes = ");
  mx_pr_i64_list(p, v, n);
  mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_concatenate(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *d = mx_pr_attr_of(op, "dimension", MX_ATTR_INT);
  if (!mx_pr_shape_is(op, -1, 1) || !d) return false;
  static const char *const elided[] = {"dimension", NULL};
  mx_pr_name_sp(p, op);
  for (int32_t i = 0; i < op->n_operands; i++) {
    mx_pr_value(p, op->operands[i]);
    mx_pr_puts(p, ", ");
  }
  mx_strbuf_printf(p->sb, "dim = %lld", (long long)d->i);
  mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_pad(mx_pr_t *p, const mx_op_t *op) {
  const int64_t *v = NULL;
  int32_t n = 0;
  if (!mx_pr_shape_is(op, 2, 1) || !mx_pr_dims(op, "edge_padding_low", &v, &n) ||
      !mx_pr_dims(op, "edge_padding_high", &v, &n) || !mx_pr_dims(op, "interior_padding", &v, &n))
    return false;
  static const char *const elided[] = {"edge_padding_low", "edge_padding_high", "interior_padding",
                                       NULL};
  mx_pr_name_sp(p, op);
  mx_pr_values(p, op->operands, 2);
  mx_pr_puts(p, ", low = ");
  mx_pr_print_dims_attr(p, op, "edge_padding_low");
  mx_pr_puts(p, ", high = ");
  mx_pr_print_dims_attr(p, op, "edge_padding_high");
  mx_pr_puts(p, ", interior = ");
  mx_pr_print_dims_attr(p, op, "interior_padding");
  mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_reduce_precision(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *e = mx_pr_attr_of(op, "exponent_bits", MX_ATTR_INT);
  const mx_attr_t *m = mx_pr_attr_of(op, "mantissa_bits", MX_ATTR_INT);
  if (!mx_pr_shape_is(op, 1, 1) || !e || !m || e->i < 0 || m->i < 0) return false;
  static const char *const elided[] = {"exponent_bits", "mantissa_bits", NULL};
  mx_pr_name_sp(p, op);
  mx_pr_value(p, op->operands[0]);
  mx_strbuf_printf(p->sb, ", format = e%lldm%lld", (long long)e->i, (long long)m->i);
  mx_pr_tail_same(p, op, elided);
  return true;
}

static bool mx_pr_fft(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *t = mx_op_attr(op, "fft_type");
  const int64_t *v = NULL;
  int32_t n = 0;
  if (!mx_pr_shape_is(op, 1, 1) || !mx_pr_is_enum(t) || !mx_pr_dims(op, "fft_length", &v, &n))
    return false;
  static const char *const elided[] = {"fft_type", "fft_length", NULL};
  mx_pr_name_sp(p, op);
  mx_pr_value(p, op->operands[0]);
  mx_strbuf_printf(p->sb, ", type = %s, length = ", t->s);
  mx_pr_i64_list(p, v, n);
  mx_pr_tail_functional(p, op, elided);
  return true;
}

// ---- Compute ----

static bool mx_pr_dot(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *prec = mx_op_attr(op, "precision_config");
  if (!mx_pr_shape_is(op, 2, 1) || !mx_pr_precision_ok(prec)) return false;
  static const char *const elided[] = {"precision_config", NULL};
  mx_pr_name_sp(p, op);
  mx_pr_values(p, op->operands, 2);
  mx_pr_precision(p, prec);
  mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_dnums_field(const mx_attr_t *s, const char *name, const int64_t **v, int32_t *n) {
  const mx_attr_t *a = mx_attr_field(s, name);
  *v = NULL;
  *n = 0;
  if (!a) return true;  // absent == empty
  if (a->kind != MX_ATTR_DENSE_ARRAY || a->elem != MX_ELEM_I64) return false;
  *v = a->ints;
  *n = a->n;
  return true;
}

static bool mx_pr_dot_general(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *prec = mx_op_attr(op, "precision_config");
  const mx_attr_t *dn = mx_pr_attr_of(op, "dot_dimension_numbers", MX_ATTR_STRUCT);
  const int64_t *lb, *rb, *lc, *rc;
  int32_t nlb, nrb, nlc, nrc;
  const mx_attr_t *alg = mx_op_attr(op, "algorithm");
  if (alg && (alg->kind != MX_ATTR_STRUCT || !alg->s || strcmp(alg->s, "stablehlo.dot_algorithm")))
    return false;
  if (!mx_pr_shape_is(op, 2, 1) || !mx_pr_precision_ok(prec) || !dn ||
      !mx_pr_dnums_field(dn, "lhs_batching_dimensions", &lb, &nlb) ||
      !mx_pr_dnums_field(dn, "rhs_batching_dimensions", &rb, &nrb) ||
      !mx_pr_dnums_field(dn, "lhs_contracting_dimensions", &lc, &nlc) ||
      !mx_pr_dnums_field(dn, "rhs_contracting_dimensions", &rc, &nrc))
    return false;
  // Unknown extra fields would be lost by the pretty form.
  for (int32_t i = 0; i < dn->n; i++) {
    const char *f = dn->fields[i].name;
    if (strcmp(f, "lhs_batching_dimensions") && strcmp(f, "rhs_batching_dimensions") &&
        strcmp(f, "lhs_contracting_dimensions") && strcmp(f, "rhs_contracting_dimensions"))
      return false;
  }
  static const char *const elided[] = {"precision_config", "dot_dimension_numbers", "algorithm",
                                       NULL};
  mx_pr_name_sp(p, op);
  mx_pr_values(p, op->operands, 2);
  mx_pr_puts(p, ", ");
  if (nlb || nrb) {
    mx_pr_puts(p, "batching_dims = ");
    mx_pr_i64_list(p, lb, nlb);
    mx_pr_puts(p, " x ");
    mx_pr_i64_list(p, rb, nrb);
    mx_pr_puts(p, ", ");
  }
  mx_pr_puts(p, "contracting_dims = ");
  mx_pr_i64_list(p, lc, nlc);
  mx_pr_puts(p, " x ");
  mx_pr_i64_list(p, rc, nrc);
  mx_pr_precision(p, prec);
  if (alg) {
    mx_pr_puts(p, ", algorithm = ");
    mx_pr_struct_body(p, alg);
  }
  mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_convolution(mx_pr_t *p, const mx_op_t *op) {
  static const char *const kw[] = {"stride", "lhs_dilate", "rhs_dilate"};
  static const char *const names[] = {"window_strides", "lhs_dilation", "rhs_dilation"};
  const mx_attr_t *dn = mx_pr_attr_of(op, "dimension_numbers", MX_ATTR_STRUCT);
  const mx_attr_t *pad = mx_op_attr(op, "padding");
  const mx_attr_t *rev = mx_op_attr(op, "window_reversal");
  if (!mx_pr_shape_is(op, 2, 1) || !dn) return false;
  for (int i = 0; i < 3; i++) {
    const int64_t *v;
    int32_t n;
    if (mx_op_attr(op, names[i]) && !mx_pr_dims(op, names[i], &v, &n)) return false;
  }
  if (pad && (pad->kind != MX_ATTR_DENSE || !pad->dense ||
              pad->dense->type.kind != MX_TYPE_TENSOR || pad->dense->type.elem != MX_ELEM_I64 ||
              pad->dense->type.rank != 2 || pad->dense->type.dims[1] != 2))
    return false;
  if (rev && (rev->kind != MX_ATTR_DENSE_ARRAY || rev->elem != MX_ELEM_I1)) return false;
  mx_pr_op_name(p, op);
  mx_pr_puts(p, "(");
  mx_pr_values(p, op->operands, 2);
  mx_pr_puts(p, ") dim_numbers = ");
  if (!mx_pr_conv_dims(p, dn)) return false;  // the caller rolls the partial text back
  mx_pr_puts(p, ", window = {");
  const char *sep = "";
  for (int i = 0; i < 3; i++) {
    if (i == 1 && pad) {
      const int64_t *v = (const int64_t *)pad->dense->data;
      int64_t rows = pad->dense->type.dims[0];
      mx_strbuf_printf(p->sb, "%spad = [", sep);
      for (int64_t r = 0; r < rows; r++)
        mx_strbuf_printf(p->sb, "%s[%lld, %lld]", r ? ", " : "", (long long)v[2 * r],
                         (long long)v[2 * r + 1]);
      mx_pr_puts(p, "]");
      sep = ", ";
    }
    if (!mx_op_attr(op, names[i])) continue;
    mx_strbuf_printf(p->sb, "%s%s = ", sep, kw[i]);
    mx_pr_print_dims_attr(p, op, names[i]);
    sep = ", ";
  }
  if (rev) {
    mx_strbuf_printf(p->sb, "%sreverse = [", sep);
    for (int32_t i = 0; i < rev->n; i++)
      mx_strbuf_printf(p->sb, "%s%d", i ? ", " : "", rev->ints[i] ? 1 : 0);
    mx_pr_puts(p, "]");
  }
  mx_pr_puts(p, "}");
  static const char *const elided[] = {
      "dimension_numbers", "window_strides",  "padding", "lhs_dilation",
      "rhs_dilation",      "window_reversal", NULL};
  mx_pr_tail_functional(p, op, elided);
  return true;
}

// Commutative binary StableHLO ops (HLO_Commutative): the ones `applies` may name.
static bool mx_pr_is_commutative(mx_opcode_t c) {
  return c == MX_OP_ADD || c == MX_OP_MULTIPLY || c == MX_OP_MAXIMUM || c == MX_OP_MINIMUM ||
         c == MX_OP_AND || c == MX_OP_OR || c == MX_OP_XOR;
}

// StableHLO's isReduceEligibleForCompactPrint, plus "the inner op has no attributes" (the
// compact form cannot carry them).
static bool mx_pr_reduce_compact(mx_pr_t *p, const mx_op_t *op, const mx_block_t *b) {
  if (op->n_operands != 2 || b->n_ops != 2 || b->n_args != 2) return false;
  const mx_op_t *inner = b->ops[0], *ret = b->ops[1];
  if (!inner || !ret || !mx_pr_is_commutative(inner->code) || inner->n_regions || inner->n_attrs ||
      inner->n_operands != 2 || inner->n_results != 1)
    return false;
  if (strcmp(inner->name, mx_opcode_name(inner->code)) != 0) return false;
  const mx_type_t *t = mx_pr_vtype(p, inner->results[0]);
  for (int32_t i = 0; i < 2; i++)
    if (!mx_type_equal(mx_pr_vtype(p, inner->operands[i]), t)) return false;
  const mx_type_t *in = mx_pr_vtype(p, op->operands[0]);
  if (in->kind != MX_TYPE_TENSOR || t->kind != MX_TYPE_TENSOR || t->rank != 0 ||
      t->elem != in->elem)
    return false;
  if (inner->operands[0] != b->args[0] || inner->operands[1] != b->args[1]) return false;
  return ret->code == MX_OP_RETURN && ret->n_operands == 1 && ret->n_attrs == 0 &&
         ret->operands[0] == inner->results[0];
}

static bool mx_pr_reduce(mx_pr_t *p, const mx_op_t *op) {
  const int64_t *dims = NULL;
  int32_t nd = 0;
  if (op->n_regions != 1 || !op->regions[0] || op->n_operands < 2 || op->n_operands % 2 ||
      !mx_pr_dims(op, "dimensions", &dims, &nd))
    return false;
  const mx_block_t *b = op->regions[0];
  int32_t pairs = op->n_operands / 2;
  if (b->n_args != op->n_operands) return false;
  static const char *const elided[] = {"dimensions", NULL};
  mx_pr_op_name(p, op);
  for (int32_t i = 0; i < pairs; i++) {
    mx_pr_puts(p, i ? ", (" : "(");
    mx_pr_value(p, op->operands[i]);
    mx_pr_puts(p, " init: ");
    mx_pr_value(p, op->operands[i + pairs]);
    mx_pr_puts(p, ")");
  }
  bool compact = mx_pr_reduce_compact(p, op, b);
  if (compact) {
    mx_pr_puts(p, " applies ");
    mx_pr_puts(p, b->ops[0]->name);
  }
  mx_pr_puts(p, " across dimensions = ");
  mx_pr_i64_list(p, dims, nd);
  mx_pr_tail_functional(p, op, elided);
  if (compact) return true;
  mx_pr_newline(p);
  mx_pr_puts(p, " reducer");
  for (int32_t i = 0; i < pairs; i++) {
    mx_pr_puts(p, "(");
    for (int32_t k = 0; k < 2; k++) {
      int32_t arg = b->args[i + k * pairs];
      if (k) mx_pr_puts(p, ", ");
      mx_pr_value(p, arg);
      mx_pr_puts(p, ": ");
      mx_pr_type(p, mx_pr_vtype(p, arg));
    }
    mx_pr_puts(p, ") ");
  }
  mx_pr_puts(p, " ");
  mx_pr_region(p, b, false);
  return true;
}

// ---- Control flow and structure ----

static bool mx_pr_while(mx_pr_t *p, const mx_op_t *op) {
  if (op->n_regions != 2 || !op->regions[0] || !op->regions[1] || op->n_results != op->n_operands ||
      op->regions[0]->n_args != op->n_operands || op->regions[1]->n_args != op->n_operands)
    return false;
  const mx_block_t *cond = op->regions[0], *body = op->regions[1];
  for (int32_t i = 0; i < op->n_operands; i++) {
    // The syntax names the arguments once for both regions.
    if (cond->args[i] < 0 || body->args[i] < 0 || cond->args[i] >= p->f->n_values ||
        body->args[i] >= p->f->n_values || !p->names[cond->args[i]].base ||
        !p->names[body->args[i]].base ||
        strcmp(p->names[cond->args[i]].base, p->names[body->args[i]].base) != 0)
      return false;
    if (!mx_type_equal(mx_pr_vtype(p, op->operands[i]), mx_pr_vtype(p, body->args[i])) ||
        !mx_type_equal(mx_pr_vtype(p, op->operands[i]), mx_pr_vtype(p, cond->args[i])) ||
        !mx_type_equal(mx_pr_vtype(p, op->operands[i]), mx_pr_vtype(p, op->results[i])))
      return false;
  }
  mx_pr_op_name(p, op);
  mx_pr_puts(p, "(");
  for (int32_t i = 0; i < op->n_operands; i++) {
    if (i) mx_pr_puts(p, ", ");
    mx_pr_value(p, body->args[i]);
    mx_pr_puts(p, " = ");
    mx_pr_value(p, op->operands[i]);
  }
  mx_pr_puts(p, ")");
  if (op->n_operands) {
    mx_pr_puts(p, " : ");
    mx_pr_types_of(p, op->operands, op->n_operands);
  }
  if (op->n_attrs) {
    mx_pr_puts(p, " attributes");
    mx_pr_attr_dict(p, op, NULL);
  }
  mx_pr_newline(p);
  mx_pr_puts(p, "cond ");
  mx_pr_region(p, cond, false);
  mx_pr_puts(p, " do ");
  mx_pr_region(p, body, false);
  return true;
}

static bool mx_pr_return(mx_pr_t *p, const mx_op_t *op) {
  if (!mx_pr_shape_is(op, -1, 0)) return false;
  mx_pr_op_name(p, op);
  if (op->n_operands) {
    mx_pr_puts(p, " ");
    mx_pr_values(p, op->operands, op->n_operands);
  }
  mx_pr_attr_dict(p, op, NULL);
  if (op->n_operands) {
    mx_pr_puts(p, " : ");
    mx_pr_types_of(p, op->operands, op->n_operands);
  }
  return true;
}

static bool mx_pr_call(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *callee = mx_pr_attr_of(op, "callee", MX_ATTR_SYMBOL);
  if (op->n_regions || !callee || !callee->s) return false;
  static const char *const elided[] = {"callee", NULL};
  mx_pr_name_sp(p, op);
  mx_pr_symbol(p, callee->s);
  mx_pr_puts(p, "(");
  mx_pr_values(p, op->operands, op->n_operands);
  mx_pr_puts(p, ")");
  mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_is_empty_collection(const mx_attr_t *a) {
  return a && (a->kind == MX_ATTR_DICT || a->kind == MX_ATTR_ARRAY) && a->n == 0;
}

static bool mx_pr_composite(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *name = mx_pr_attr_of(op, "name", MX_ATTR_STRING);
  const mx_attr_t *dec = mx_pr_attr_of(op, "decomposition", MX_ATTR_SYMBOL);
  if (op->n_regions || !name || !dec) return false;
  // Default-valued attributes are elided like ODS does (composite_attributes = {}, version = 0).
  const mx_attr_t *ca = mx_op_attr(op, "composite_attributes");
  const mx_attr_t *ver = mx_op_attr(op, "version");
  const char *elided[4] = {"name", NULL, NULL, NULL};
  int k = 1;
  if (mx_pr_is_empty_collection(ca)) elided[k++] = "composite_attributes";
  if (ver && ver->kind == MX_ATTR_INT && ver->i == 0) elided[k++] = "version";
  mx_pr_name_sp(p, op);
  mx_pr_string(p, name->s);
  if (op->n_operands) {
    mx_pr_puts(p, " ");
    mx_pr_values(p, op->operands, op->n_operands);
  }
  mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_custom_call(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *target = mx_pr_attr_of(op, "call_target_name", MX_ATTR_STRING);
  if (op->n_regions || !target || !target->s) return false;
  const mx_attr_t *se = mx_op_attr(op, "has_side_effect");
  const mx_attr_t *api = mx_op_attr(op, "api_version");
  const char *elided[6] = {"call_target_name", NULL, NULL, NULL, NULL, NULL};
  int k = 1;
  if (se && se->kind == MX_ATTR_BOOL && !se->i) elided[k++] = "has_side_effect";
  if (api && ((api->kind == MX_ATTR_INT && api->i == 1) ||
              (api->kind == MX_ATTR_ENUM && api->s && !strcmp(api->s, "API_VERSION_ORIGINAL"))))
    elided[k++] = "api_version";
  if (mx_pr_is_empty_collection(mx_op_attr(op, "called_computations")))
    elided[k++] = "called_computations";
  if (mx_pr_is_empty_collection(mx_op_attr(op, "output_operand_aliases")))
    elided[k++] = "output_operand_aliases";
  mx_pr_name_sp(p, op);
  mx_pr_symbol(p, target->s);
  mx_pr_puts(p, "(");
  mx_pr_values(p, op->operands, op->n_operands);
  mx_pr_puts(p, ")");
  mx_pr_tail_functional(p, op, elided);
  return true;
}

static bool mx_pr_optimization_barrier(mx_pr_t *p, const mx_op_t *op) {
  if (op->n_regions || op->n_results != op->n_operands) return false;
  for (int32_t i = 0; i < op->n_operands; i++)
    if (!mx_type_equal(mx_pr_vtype(p, op->operands[i]), mx_pr_vtype(p, op->results[i])))
      return false;
  mx_pr_op_name(p, op);
  mx_pr_attr_dict(p, op, NULL);
  if (!op->n_operands) {
    mx_pr_puts(p, "()");
    return true;
  }
  mx_pr_puts(p, " ");
  mx_pr_values(p, op->operands, op->n_operands);
  mx_pr_puts(p, " : ");
  mx_pr_types_of(p, op->operands, op->n_operands);
  return true;
}

static bool mx_pr_tuple(mx_pr_t *p, const mx_op_t *op) {
  if (!mx_pr_shape_is(op, -1, 1)) return false;
  const mx_type_t *r = mx_pr_vtype(p, op->results[0]);
  if (r->kind != MX_TYPE_TUPLE || r->n_tuple != op->n_operands) return false;
  for (int32_t i = 0; i < op->n_operands; i++)
    if (!mx_type_equal(mx_pr_vtype(p, op->operands[i]), &r->tuple[i])) return false;
  mx_pr_op_name(p, op);
  if (op->n_operands) {
    mx_pr_puts(p, " ");
    mx_pr_values(p, op->operands, op->n_operands);
  }
  mx_pr_attr_dict(p, op, NULL);
  mx_pr_puts(p, " : ");
  mx_pr_type(p, r);
  return true;
}

static bool mx_pr_get_tuple_element(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *idx = mx_pr_attr_of(op, "index", MX_ATTR_INT);
  if (!mx_pr_shape_is(op, 1, 1) || !idx) return false;
  static const char *const elided[] = {"index", NULL};
  mx_pr_name_sp(p, op);
  mx_pr_value(p, op->operands[0]);
  mx_strbuf_printf(p->sb, "[%lld]", (long long)idx->i);
  mx_pr_tail_functional(p, op, elided);
  return true;
}

// ---- check dialect ----

static bool mx_pr_check(mx_pr_t *p, const mx_op_t *op) {
  if (op->n_regions || op->n_results) return false;
  bool is_const =
      op->code == MX_OP_CHECK_EXPECT_EQ_CONST || op->code == MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST;
  const mx_attr_t *val = mx_pr_attr_of(op, "value", MX_ATTR_DENSE);
  if (op->n_operands != (is_const ? 1 : 2) || (is_const && (!val || !val->dense))) return false;
  bool almost =
      op->code == MX_OP_CHECK_EXPECT_ALMOST_EQ || op->code == MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST;
  const mx_attr_t *tol = almost ? mx_op_attr(op, "tolerance") : NULL;
  if (tol && tol->kind != MX_ATTR_FLOAT) return false;
  if (op->code == MX_OP_CHECK_EXPECT_CLOSE) {
    const mx_attr_t *mx = mx_op_attr(op, "max_ulp_difference");
    const mx_attr_t *mn = mx_op_attr(op, "min_ulp_difference");
    if ((mx && mx->kind != MX_ATTR_INT) || (mn && mn->kind != MX_ATTR_INT)) return false;
    static const char *const elided[] = {"max_ulp_difference", "min_ulp_difference", NULL};
    mx_pr_name_sp(p, op);
    mx_pr_values(p, op->operands, 2);
    mx_strbuf_printf(p->sb, ", max_ulp_difference = %llu",
                     (unsigned long long)(mx ? (uint64_t)mx->i : 1u));
    if (mn) mx_strbuf_printf(p->sb, ", min_ulp_difference = %llu", (unsigned long long)mn->i);
    mx_pr_puts(p, " :");
    mx_pr_attr_dict(p, op, elided);
    mx_pr_puts(p, " ");
    mx_pr_types_of(p, op->operands, 2);
    return true;
  }
  static const char *const elided[] = {"value", "tolerance", NULL};
  mx_pr_name_sp(p, op);
  mx_pr_value(p, op->operands[0]);
  mx_pr_puts(p, ", ");
  if (is_const)
    mx_pr_attr(p, val);
  else
    mx_pr_value(p, op->operands[1]);
  if (tol) {
    mx_pr_puts(p, ", tolerance = ");
    mx_pr_float(p, tol->f, MX_ELEM_F64);
  }
  mx_pr_attr_dict(p, op, elided);
  if (!is_const) {
    mx_pr_puts(p, " : ");
    mx_pr_type(p, mx_pr_vtype(p, op->operands[0]));
  }
  return true;
}

// ---- Dispatch ----

bool mx_pr_pretty_op(mx_pr_t *p, const mx_op_t *op) {
  if (op->code == MX_OP_UNKNOWN) return mx_pr_extra_op(p, op);
  // Ops whose name does not match their opcode (dialect look-alikes) stay generic.
  if (!op->name || strcmp(op->name, mx_opcode_name(op->code)) != 0) return false;
  unsigned flags = mx_opcode_flags(op->code);
  if (flags & MX_OPF_CHECK) return mx_pr_check(p, op);
  switch (op->code) {
    case MX_OP_IS_FINITE:
      if (!mx_pr_shape_is(op, 1, 1)) return false;
      mx_pr_name_sp(p, op);
      mx_pr_values(p, op->operands, 1);
      mx_pr_tail_functional(p, op, NULL);
      return true;
    case MX_OP_COMPLEX:
      return mx_pr_complex(p, op);
    case MX_OP_CONVERT:
    case MX_OP_BITCAST_CONVERT:
    case MX_OP_RESHAPE:
    case MX_OP_DYNAMIC_UPDATE_SLICE:
    case MX_OP_CLAMP: {
      bool same = op->code == MX_OP_CONVERT || op->code == MX_OP_CLAMP;
      if (!mx_pr_shape_is(op, -1, 1) || op->n_operands < 1) return false;
      if (op->code == MX_OP_CLAMP && op->n_operands != 3) return false;
      if ((op->code == MX_OP_CONVERT || op->code == MX_OP_BITCAST_CONVERT ||
           op->code == MX_OP_RESHAPE) &&
          op->n_operands != 1)
        return false;
      mx_pr_name_sp(p, op);
      mx_pr_values(p, op->operands, op->n_operands);
      if (same)
        mx_pr_tail_same(p, op, NULL);
      else
        mx_pr_tail_functional(p, op, NULL);
      return true;
    }
    case MX_OP_COMPARE:
      return mx_pr_compare(p, op);
    case MX_OP_SELECT:
      return mx_pr_select(p, op);
    case MX_OP_REDUCE_PRECISION:
      return mx_pr_reduce_precision(p, op);
    case MX_OP_CONSTANT:
      return mx_pr_constant(p, op);
    case MX_OP_IOTA:
      return mx_pr_int_kw(p, op, 0, "iota_dimension", "dim", true);
    case MX_OP_BROADCAST_IN_DIM:
      return mx_pr_dims_kw(p, op, "broadcast_dimensions", false);
    case MX_OP_TRANSPOSE:
      return mx_pr_dims_kw(p, op, "permutation", false);
    case MX_OP_REVERSE:
      return mx_pr_dims_kw(p, op, "dimensions", true);
    case MX_OP_SLICE:
      return mx_pr_slice(p, op);
    case MX_OP_DYNAMIC_SLICE:
      return mx_pr_dynamic_slice(p, op);
    case MX_OP_CONCATENATE:
      return mx_pr_concatenate(p, op);
    case MX_OP_PAD:
      return mx_pr_pad(p, op);
    case MX_OP_GET_DIMENSION_SIZE:
      return mx_pr_int_kw(p, op, 1, "dimension", "dim", false);
    case MX_OP_DOT_GENERAL:
      return mx_pr_dot_general(p, op);
    case MX_OP_DOT:
      return mx_pr_dot(p, op);
    case MX_OP_CONVOLUTION:
      return mx_pr_convolution(p, op);
    case MX_OP_REDUCE:
      return mx_pr_reduce(p, op);
    case MX_OP_FFT:
      return mx_pr_fft(p, op);
    case MX_OP_WHILE:
      return mx_pr_while(p, op);
    case MX_OP_RETURN:
    case MX_OP_FUNC_RETURN:
      return mx_pr_return(p, op);
    case MX_OP_FUNC_CALL:
      return mx_pr_call(p, op);
    case MX_OP_COMPOSITE:
      return mx_pr_composite(p, op);
    case MX_OP_CUSTOM_CALL:
      return mx_pr_custom_call(p, op);
    case MX_OP_OPTIMIZATION_BARRIER:
      return mx_pr_optimization_barrier(p, op);
    case MX_OP_TUPLE:
      return mx_pr_tuple(p, op);
    case MX_OP_GET_TUPLE_ELEMENT:
      return mx_pr_get_tuple_element(p, op);
    default:
      break;
  }
  if (flags & (MX_OPF_UNARY | MX_OPF_BINARY)) {
    int32_t n = (flags & MX_OPF_UNARY) ? 1 : 2;
    if (!mx_pr_shape_is(op, n, 1)) return false;
    mx_pr_name_sp(p, op);
    mx_pr_values(p, op->operands, n);
    mx_pr_tail_same(p, op, NULL);
    return true;
  }
  return false;  // gather, scatter, sort, reduce_window, map, if, case, ...: generic form
}
