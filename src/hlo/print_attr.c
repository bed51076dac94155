// StableHLO text printer: attributes and dense constants.
//
// Float tensor elements print as hex bit patterns (`dense<0x3F800000>`), which MLIR accepts for
// every float type and which round-trip exactly; integers print in decimal, i1 as true/false,
// complex values as `(re,im)` pairs. A tensor whose elements are all equal prints in splat form;
// large tensors of byte-multiple element types print as MLIR's raw hex string `dense<"0x..">`
// (little-endian element bytes, the same layout as our storage).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/print_internal.h"

// ---- Scalars, strings, symbols ----

static void mx_pr_hex_bits(mx_pr_t *p, uint64_t bits, int nbits) {
  int digits = (nbits + 3) / 4;
  if (nbits < 64) bits &= (UINT64_C(1) << nbits) - 1;
  mx_strbuf_printf(p->sb, "0x%0*llX", digits, (unsigned long long)bits);
}

// Bits of `v` in float type `et` (F64 when et is not a float type).
static uint64_t mx_pr_float_bits(double v, mx_elem_type_t et, int *nbits) {
  if (!mx_elem_is_float(et) || et == MX_ELEM_F64) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    *nbits = 64;
    return b;
  }
  *nbits = mx_elem_bits(et);
  return mx_float_encode(et, v);
}

static bool mx_pr_float_roundtrips(const char *text, double v, mx_elem_type_t et) {
  double back = strtod(text, NULL);
  int nb = 0;
  return mx_pr_float_bits(back, et, &nb) == mx_pr_float_bits(v, et, &nb);
}

// Like MLIR: "%.6e" when that reads back to the same value of the type, else enough digits,
// and hex bits for NaN/Inf (which have no decimal spelling).
void mx_pr_float(mx_pr_t *p, double v, mx_elem_type_t et) {
  if (!mx_elem_is_float(et)) et = MX_ELEM_F64;
  if (isfinite(v)) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.6e", v);
    if (!mx_pr_float_roundtrips(buf, v, et)) {
      snprintf(buf, sizeof buf, "%.9e", v);
      if (!mx_pr_float_roundtrips(buf, v, et)) snprintf(buf, sizeof buf, "%.16e", v);
    }
    mx_pr_puts(p, buf);
    return;
  }
  int nbits = 0;
  uint64_t bits = mx_pr_float_bits(v, et, &nbits);
  mx_pr_hex_bits(p, bits, nbits);
}

bool mx_pr_is_bare_id(const char *s) {
  if (!s || !*s) return false;
  unsigned char c = (unsigned char)s[0];
  if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')) return false;
  for (const char *q = s + 1; *q; q++) {
    c = (unsigned char)*q;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '$' || c == '.'))
      return false;
  }
  return true;
}

// llvm::printEscapedString: backslash doubled, printable ASCII but '"' verbatim, else \XX.
void mx_pr_string(mx_pr_t *p, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  char buf[256];
  size_t k = 0;
  buf[k++] = '"';
  for (const unsigned char *q = (const unsigned char *)(s ? s : ""); *q; q++) {
    if (k > sizeof buf - 8) {
      mx_strbuf_append(p->sb, buf, k);
      k = 0;
    }
    unsigned char c = *q;
    if (c == '\\') {
      buf[k++] = '\\';
      buf[k++] = '\\';
    } else if (c >= 0x20 && c < 0x7f && c != '"') {
      buf[k++] = (char)c;
    } else {
      buf[k++] = '\\';
      buf[k++] = hex[c >> 4];
      buf[k++] = hex[c & 15];
    }
  }
  buf[k++] = '"';
  mx_strbuf_append(p->sb, buf, k);
}

void mx_pr_symbol(mx_pr_t *p, const char *name) {
  mx_pr_puts(p, "@");
  if (mx_pr_is_bare_id(name))
    mx_pr_puts(p, name);
  else
    mx_pr_string(p, name);
}

void mx_pr_i64_list(mx_pr_t *p, const int64_t *v, int32_t n) {
  mx_pr_puts(p, "[");
  for (int32_t i = 0; i < n; i++) mx_strbuf_printf(p->sb, i ? ", %lld" : "%lld", (long long)v[i]);
  mx_pr_puts(p, "]");
}

// ---- Dense elements ----

static uint64_t mx_pr_load(const uint8_t *q, size_t size) {
  uint64_t v = 0;
  if (size > sizeof v) size = sizeof v;
  memcpy(&v, q, size);  // little-endian host (as the storage layout)
  return v;
}

static void mx_pr_element(mx_pr_t *p, const mx_tensor_t *t, int64_t i) {
  mx_elem_type_t et = t->type.elem;
  size_t es = mx_elem_size(et);
  const uint8_t *q = t->data + (size_t)i * es;
  if (et == MX_ELEM_I1) {
    mx_pr_puts(p, q[0] ? "true" : "false");
  } else if (mx_elem_is_signed(et)) {
    mx_strbuf_printf(p->sb, "%lld", (long long)mx_tensor_get_i64(t, i));
  } else if (mx_elem_is_unsigned(et)) {
    mx_strbuf_printf(p->sb, "%llu", (unsigned long long)mx_tensor_get_u64(t, i));
  } else if (mx_elem_is_complex(et)) {
    size_t half = es / 2;
    mx_pr_puts(p, "(");
    mx_pr_hex_bits(p, mx_pr_load(q, half), (int)half * 8);
    mx_pr_puts(p, ",");
    mx_pr_hex_bits(p, mx_pr_load(q + half, half), (int)half * 8);
    mx_pr_puts(p, ")");
  } else {
    mx_pr_hex_bits(p, mx_pr_load(q, es), mx_elem_bits(et));
  }
}

static void mx_pr_dense_list(mx_pr_t *p, const mx_tensor_t *t, int32_t dim, int64_t *next) {
  mx_pr_puts(p, "[");
  for (int64_t j = 0; j < t->type.dims[dim]; j++) {
    if (j) mx_pr_puts(p, ", ");
    if (dim == t->type.rank - 1)
      mx_pr_element(p, t, (*next)++);
    else
      mx_pr_dense_list(p, t, dim + 1, next);
  }
  mx_pr_puts(p, "]");
}

static void mx_pr_hex_bytes(mx_pr_t *p, const uint8_t *data, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  char buf[1024];
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k + 2 > sizeof buf) {
      mx_strbuf_append(p->sb, buf, k);
      k = 0;
    }
    buf[k++] = hex[data[i] >> 4];
    buf[k++] = hex[data[i] & 15];
  }
  mx_strbuf_append(p->sb, buf, k);
}

void mx_pr_dense(mx_pr_t *p, const mx_tensor_t *t) {
  if (!t || t->type.kind != MX_TYPE_TENSOR || t->type.elem <= MX_ELEM_INVALID ||
      t->type.elem >= MX_ELEM_COUNT) {
    mx_pr_fail(p, MX_ERR_INVALID_ARG, "dense attribute without a tensor type");
    mx_pr_puts(p, "dense<>");
    return;
  }
  int64_t n = mx_type_numel(&t->type);
  size_t es = mx_elem_size(t->type.elem);
  if (n <= 0) {
    mx_pr_puts(p, "dense<>");
    return;
  }
  if (!t->data || t->nbytes < (size_t)n * es) {
    mx_pr_fail(p, MX_ERR_INVALID_ARG, "dense attribute with too little data");
    mx_pr_puts(p, "dense<>");
    return;
  }
  bool splat = true;
  for (int64_t i = 1; i < n && splat; i++)
    if (memcmp(t->data + (size_t)i * es, t->data, es) != 0) splat = false;
  mx_pr_puts(p, "dense<");
  int bits = mx_elem_bits(t->type.elem);
  if (splat) {
    mx_pr_element(p, t, 0);
  } else if (n > p->hex_threshold && bits % 8 == 0 && (size_t)bits == es * 8) {
    // MLIR's raw storage: byte-multiple element types only (i1 and sub-byte types are packed
    // or padded differently there).
    mx_pr_puts(p, "\"0x");
    mx_pr_hex_bytes(p, t->data, (size_t)n * es);
    mx_pr_puts(p, "\"");
  } else {
    int64_t next = 0;
    mx_pr_dense_list(p, t, 0, &next);
  }
  mx_pr_puts(p, ">");
}

// ---- Structured attributes ----

static void mx_pr_struct_field_value(mx_pr_t *p, const char *field, const mx_attr_t *v) {
  if (v->kind == MX_ATTR_ENUM && v->s && v->enum_kind && strcmp(v->enum_kind, field) == 0) {
    // A bare keyword field (`accumulation_type = f32`), not a `#stablehlo<kind value>` enum.
    mx_pr_puts(p, v->s);
  } else if (v->kind == MX_ATTR_DENSE_ARRAY && v->elem != MX_ELEM_I1) {
    mx_pr_i64_list(p, v->ints, v->n);
  } else if (v->kind == MX_ATTR_INT) {
    mx_strbuf_printf(p->sb, "%lld", (long long)v->i);
  } else {
    mx_pr_attr(p, v);
  }
}

static bool mx_pr_field_is_empty(const mx_attr_t *v) {
  return (v->kind == MX_ATTR_DENSE_ARRAY && v->n == 0) || (v->kind == MX_ATTR_INT && v->i == 0) ||
         (v->kind == MX_ATTR_ARRAY && v->n == 0);
}

static const char *const mx_pr_gather_fields[] = {"offset_dims",
                                                  "collapsed_slice_dims",
                                                  "operand_batching_dims",
                                                  "start_indices_batching_dims",
                                                  "start_index_map",
                                                  "index_vector_dim",
                                                  NULL};
static const char *const mx_pr_scatter_fields[] = {"update_window_dims",
                                                   "inserted_window_dims",
                                                   "input_batching_dims",
                                                   "scatter_indices_batching_dims",
                                                   "scatter_dims_to_operand_dims",
                                                   "index_vector_dim",
                                                   NULL};
static const char *const mx_pr_dot_fields[] = {"lhs_batching_dimensions", "rhs_batching_dimensions",
                                               "lhs_contracting_dimensions",
                                               "rhs_contracting_dimensions", NULL};

static bool mx_pr_in_list(const char *const *list, const char *name) {
  for (; list && *list; list++)
    if (strcmp(*list, name) == 0) return true;
  return false;
}

// Known StableHLO structs print their fields in declaration order and omit empty/zero ones
// (like StableHLO's printStruct); other structs print every field in stored order.
static void mx_pr_struct_generic(mx_pr_t *p, const mx_attr_t *a) {
  mx_pr_puts(p, "#");
  mx_pr_puts(p, a->s);
  mx_pr_struct_body(p, a);
}

void mx_pr_struct_body(mx_pr_t *p, const mx_attr_t *a) {
  const char *const *order = NULL;
  if (a->s && strcmp(a->s, "stablehlo.gather") == 0) order = mx_pr_gather_fields;
  if (a->s && strcmp(a->s, "stablehlo.scatter") == 0) order = mx_pr_scatter_fields;
  if (a->s && strcmp(a->s, "stablehlo.dot") == 0) order = mx_pr_dot_fields;
  mx_pr_puts(p, "<");
  const char *sep = "";
  for (const char *const *o = order; o && *o; o++) {
    const mx_attr_t *v = mx_attr_field(a, *o);
    if (!v || mx_pr_field_is_empty(v)) continue;
    mx_strbuf_printf(p->sb, "%s%s = ", sep, *o);
    mx_pr_struct_field_value(p, *o, v);
    sep = ", ";
  }
  for (int32_t i = 0; i < a->n; i++) {
    if (mx_pr_in_list(order, a->fields[i].name)) continue;
    mx_strbuf_printf(p->sb, "%s%s = ", sep, a->fields[i].name);
    mx_pr_struct_field_value(p, a->fields[i].name, &a->fields[i].value);
    sep = ", ";
  }
  mx_pr_puts(p, ">");
}

// One side of `[b, 0, 1, f]`: fills labels (-1 b/-2 f/-3 i/-4 o, >= 0 spatial index).
static bool mx_pr_conv_side(const mx_attr_t *a, const char *d1, int64_t l1, const char *d2,
                            int64_t l2, const char *spatial, int64_t *labels, int32_t *rank) {
  const mx_attr_t *x1 = mx_attr_field(a, d1), *x2 = mx_attr_field(a, d2);
  const mx_attr_t *sp = mx_attr_field(a, spatial);
  const int64_t *s = NULL;
  int32_t ns = mx_attr_get_i64s(sp, &s);
  if (!x1 || !x2 || x1->kind != MX_ATTR_INT || x2->kind != MX_ATTR_INT || ns < 0) return false;
  int32_t r = ns + 2;
  if (r > MX_MAX_RANK + 2) return false;
  for (int32_t i = 0; i < r; i++) labels[i] = INT64_MIN;
  if (x1->i < 0 || x1->i >= r || x2->i < 0 || x2->i >= r || x1->i == x2->i) return false;
  labels[x1->i] = l1;
  labels[x2->i] = l2;
  for (int32_t i = 0; i < ns; i++) {
    if (s[i] < 0 || s[i] >= r || labels[s[i]] != INT64_MIN) return false;
    labels[s[i]] = i;
  }
  *rank = r;
  return true;
}

static void mx_pr_conv_labels(mx_pr_t *p, const int64_t *labels, int32_t r) {
  static const char names[] = "bfio";
  mx_pr_puts(p, "[");
  for (int32_t i = 0; i < r; i++) {
    if (i) mx_pr_puts(p, ", ");
    if (labels[i] >= 0)
      mx_strbuf_printf(p->sb, "%lld", (long long)labels[i]);
    else
      mx_strbuf_append(p->sb, &names[-labels[i] - 1], 1);
  }
  mx_pr_puts(p, "]");
}

bool mx_pr_conv_dims(mx_pr_t *p, const mx_attr_t *a) {
  int64_t in[MX_MAX_RANK + 2], k[MX_MAX_RANK + 2], out[MX_MAX_RANK + 2];
  int32_t rin = 0, rk = 0, rout = 0;
  if (!a || a->kind != MX_ATTR_STRUCT ||
      !mx_pr_conv_side(a, "input_batch_dimension", -1, "input_feature_dimension", -2,
                       "input_spatial_dimensions", in, &rin) ||
      !mx_pr_conv_side(a, "kernel_input_feature_dimension", -3, "kernel_output_feature_dimension",
                       -4, "kernel_spatial_dimensions", k, &rk) ||
      !mx_pr_conv_side(a, "output_batch_dimension", -1, "output_feature_dimension", -2,
                       "output_spatial_dimensions", out, &rout))
    return false;
  mx_pr_conv_labels(p, in, rin);
  mx_pr_puts(p, "x");
  mx_pr_conv_labels(p, k, rk);
  mx_pr_puts(p, "->");
  mx_pr_conv_labels(p, out, rout);
  return true;
}

static void mx_pr_struct(mx_pr_t *p, const mx_attr_t *a) {
  if (!a->s) {
    mx_pr_fail(p, MX_ERR_INVALID_ARG, "struct attribute without a tag");
    mx_pr_puts(p, "#<>");
    return;
  }
  if (strcmp(a->s, "stablehlo.conv") == 0) {
    mx_pr_puts(p, "#stablehlo.conv<");
    size_t mark = p->sb->len;
    if (mx_pr_conv_dims(p, a)) {
      mx_pr_puts(p, ">");
      return;
    }
    if (p->sb->data && !p->sb->oom) {
      p->sb->len = mark;
      p->sb->data[mark] = '\0';
    }
    // StableHLO's escape hatch for dimension numbers that do not form a permutation.
    mx_pr_puts(p, "raw ");
    for (int32_t i = 0; i < a->n; i++) {
      mx_strbuf_printf(p->sb, "%s%s = ", i ? ", " : "", a->fields[i].name);
      mx_pr_struct_field_value(p, a->fields[i].name, &a->fields[i].value);
    }
    mx_pr_puts(p, ">");
    return;
  }
  mx_pr_struct_generic(p, a);
}

// ---- Attributes ----

static void mx_pr_int_attr(mx_pr_t *p, const mx_attr_t *a) {
  if (a->elem == MX_ELEM_I1) {
    mx_pr_puts(p, a->i ? "true" : "false");
    return;
  }
  if (mx_elem_is_unsigned(a->elem))
    mx_strbuf_printf(p->sb, "%llu", (unsigned long long)a->i);
  else
    mx_strbuf_printf(p->sb, "%lld", (long long)a->i);
  if (a->elem > MX_ELEM_INVALID && a->elem < MX_ELEM_COUNT)
    mx_strbuf_printf(p->sb, " : %s", mx_elem_name(a->elem));
}

void mx_pr_attr(mx_pr_t *p, const mx_attr_t *a) {
  switch (a->kind) {
    case MX_ATTR_UNIT:
      mx_pr_puts(p, "unit");
      return;
    case MX_ATTR_BOOL:
      mx_pr_puts(p, a->i ? "true" : "false");
      return;
    case MX_ATTR_INT:
      mx_pr_int_attr(p, a);
      return;
    case MX_ATTR_FLOAT: {
      mx_elem_type_t et = mx_elem_is_float(a->elem) ? a->elem : MX_ELEM_F64;
      mx_pr_float(p, a->f, et);
      mx_strbuf_printf(p->sb, " : %s", mx_elem_name(et));
      return;
    }
    case MX_ATTR_STRING:
      mx_pr_string(p, a->s);
      return;
    case MX_ATTR_SYMBOL:
      mx_pr_symbol(p, a->s ? a->s : "");
      return;
    case MX_ATTR_ENUM:
      mx_strbuf_printf(p->sb, "#stablehlo<%s %s>", a->enum_kind ? a->enum_kind : "?",
                       a->s ? a->s : "?");
      return;
    case MX_ATTR_ARRAY:
      mx_pr_puts(p, "[");
      for (int32_t i = 0; i < a->n; i++) {
        if (i) mx_pr_puts(p, ", ");
        mx_pr_attr(p, &a->items[i]);
      }
      mx_pr_puts(p, "]");
      return;
    case MX_ATTR_DENSE_ARRAY: {
      mx_elem_type_t et =
          a->elem > MX_ELEM_INVALID && a->elem < MX_ELEM_COUNT ? a->elem : MX_ELEM_I64;
      mx_strbuf_printf(p->sb, "array<%s", mx_elem_name(et));
      for (int32_t i = 0; i < a->n; i++) {
        mx_pr_puts(p, i ? ", " : ": ");
        if (et == MX_ELEM_I1)
          mx_pr_puts(p, a->ints[i] ? "true" : "false");
        else
          mx_strbuf_printf(p->sb, "%lld", (long long)a->ints[i]);
      }
      mx_pr_puts(p, ">");
      return;
    }
    case MX_ATTR_DENSE:
      mx_pr_dense(p, a->dense);
      if (a->dense) {
        mx_pr_puts(p, " : ");
        mx_pr_type(p, &a->dense->type);
      }
      return;
    case MX_ATTR_DICT:
      mx_pr_puts(p, "{");
      mx_pr_named_attrs(p, a->fields, a->n, NULL);
      mx_pr_puts(p, "}");
      return;
    case MX_ATTR_STRUCT:
      mx_pr_struct(p, a);
      return;
    case MX_ATTR_TYPE:
      if (a->type)
        mx_pr_type(p, a->type);
      else
        mx_pr_fail(p, MX_ERR_INVALID_ARG, "type attribute without a type");
      return;
  }
  mx_pr_fail(p, MX_ERR_INVALID_ARG, "attribute of unknown kind");
}

void mx_pr_sort_attrs(const mx_named_attr_t **v, int32_t n) {
  for (int32_t i = 1; i < n; i++) {
    const mx_named_attr_t *x = v[i];
    int32_t j = i - 1;
    while (j >= 0 && strcmp(v[j]->name, x->name) > 0) {
      v[j + 1] = v[j];
      j--;
    }
    v[j + 1] = x;
  }
}

void mx_pr_named_attrs(mx_pr_t *p, const mx_named_attr_t *attrs, int32_t n,
                       const char *const *elided) {
  if (n <= 0) return;
  const mx_named_attr_t **v = malloc(sizeof *v * (size_t)n);
  if (!v) {
    mx_pr_fail(p, MX_ERR_NOMEM, "out of memory");
    return;
  }
  int32_t k = 0;
  for (int32_t i = 0; i < n; i++) {
    if (!attrs[i].name) continue;
    bool skip = false;
    for (const char *const *e = elided; e && *e; e++)
      if (strcmp(*e, attrs[i].name) == 0) skip = true;
    if (!skip) v[k++] = &attrs[i];
  }
  mx_pr_sort_attrs(v, k);
  for (int32_t i = 0; i < k; i++) {
    if (i) mx_pr_puts(p, ", ");
    if (mx_pr_is_bare_id(v[i]->name))
      mx_pr_puts(p, v[i]->name);
    else
      mx_pr_string(p, v[i]->name);
    if (v[i]->value.kind == MX_ATTR_UNIT) continue;
    mx_pr_puts(p, " = ");
    mx_pr_attr(p, &v[i]->value);
  }
  free(v);
}
