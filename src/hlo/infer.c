// Result-type inference: shared helpers, elementwise ops, and the per-opcode dispatch.
#include "hlo/infer.h"

#include <stdio.h>
#include <string.h>

mx_tstr_t mx_tstr(const mx_type_t *t) {
  mx_tstr_t r;
  r.s[0] = '\0';
  if (t == NULL) {
    snprintf(r.s, sizeof r.s, "<invalid>");
  } else {
    mx_type_str(t, r.s, sizeof r.s);
  }
  return r;
}

const char *mx_infer_opname(const mx_op_t *op) {
  if (op->name != NULL && op->name[0] != '\0') return op->name;
  return mx_opcode_name(op->code);
}

mx_status_t mx_infer_fail(const mx_op_t *op, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mx_error_set(MX_ERR_VERIFY, "%s: %s", mx_infer_opname(op), msg);
}

const mx_type_t *mx_infer_operand(const mx_func_t *f, const mx_op_t *op, int32_t i) {
  if (i < 0 || i >= op->n_operands) return NULL;
  int32_t id = op->operands[i];
  if (id < 0 || id >= f->n_values) return NULL;
  return &f->values[id].type;
}

static const mx_attr_t *find_attr(const mx_op_t *op, const mx_attr_t *field_of, const char *name) {
  if (field_of != NULL) {
    if (field_of->kind != MX_ATTR_DICT && field_of->kind != MX_ATTR_STRUCT) return NULL;
    for (int32_t i = 0; i < field_of->n; i++) {
      if (field_of->fields[i].name != NULL && strcmp(field_of->fields[i].name, name) == 0) {
        return &field_of->fields[i].value;
      }
    }
    return NULL;
  }
  for (int32_t i = 0; i < op->n_attrs; i++) {
    if (op->attrs[i].name != NULL && strcmp(op->attrs[i].name, name) == 0) {
      return &op->attrs[i].value;
    }
  }
  return NULL;
}

mx_status_t mx_infer_ints(const mx_op_t *op, const mx_attr_t *field_of, const char *name,
                          bool required, mx_ilist_t *l, bool *present) {
  l->n = 0;
  if (present != NULL) *present = false;
  const mx_attr_t *a = find_attr(op, field_of, name);
  if (a == NULL) {
    if (required) return mx_infer_fail(op, "missing required attribute '%s'", name);
    return MX_OK;
  }
  if (present != NULL) *present = true;
  switch (a->kind) {
    case MX_ATTR_DENSE_ARRAY:
      if (a->n < 0 || a->n > MX_ILIST_CAP || (a->n > 0 && a->ints == NULL)) break;
      for (int32_t i = 0; i < a->n; i++) l->v[i] = a->ints[i];
      l->n = a->n;
      return MX_OK;
    case MX_ATTR_ARRAY:
      if (a->n < 0 || a->n > MX_ILIST_CAP || (a->n > 0 && a->items == NULL)) break;
      for (int32_t i = 0; i < a->n; i++) {
        if (a->items[i].kind != MX_ATTR_INT && a->items[i].kind != MX_ATTR_BOOL) {
          return mx_infer_fail(op, "attribute '%s' must be a list of integers", name);
        }
        l->v[i] = a->items[i].i;
      }
      l->n = a->n;
      return MX_OK;
    case MX_ATTR_DENSE: {
      const mx_tensor_t *t = a->dense;
      if (t == NULL || t->type.kind != MX_TYPE_TENSOR) break;
      if (!mx_elem_is_int(t->type.elem) && !mx_elem_is_bool(t->type.elem)) break;
      int64_t n = mx_type_numel(&t->type);
      if (n > MX_ILIST_CAP || t->data == NULL) break;
      for (int64_t i = 0; i < n; i++) l->v[i] = mx_tensor_get_i64(t, i);
      l->n = (int32_t)n;
      return MX_OK;
    }
    case MX_ATTR_INT:
    case MX_ATTR_BOOL:
      l->v[0] = a->i;
      l->n = 1;
      return MX_OK;
    default:
      break;
  }
  return mx_infer_fail(op, "attribute '%s' must be a list of at most %d integers", name,
                       MX_ILIST_CAP);
}

mx_status_t mx_infer_int(const mx_op_t *op, const mx_attr_t *field_of, const char *name,
                         bool required, int64_t dflt, int64_t *v) {
  *v = dflt;
  const mx_attr_t *a = find_attr(op, field_of, name);
  if (a == NULL) {
    if (required) return mx_infer_fail(op, "missing required attribute '%s'", name);
    return MX_OK;
  }
  if (a->kind == MX_ATTR_INT || a->kind == MX_ATTR_BOOL) {
    *v = a->i;
    return MX_OK;
  }
  mx_ilist_t l;
  mx_status_t st = mx_infer_ints(op, field_of, name, true, &l, NULL);
  if (st != MX_OK || l.n != 1) {
    return mx_infer_fail(op, "attribute '%s' must be an integer", name);
  }
  *v = l.v[0];
  return MX_OK;
}

mx_status_t mx_infer_need_tensors(const mx_func_t *f, const mx_op_t *op, int32_t first,
                                  int32_t count) {
  for (int32_t i = first; i < first + count; i++) {
    const mx_type_t *t = mx_infer_operand(f, op, i);
    if (t == NULL) return mx_infer_fail(op, "operand %d is missing or invalid", i);
    if (t->kind != MX_TYPE_TENSOR) {
      return mx_infer_fail(op, "operand %d must be a tensor, got %s", i, mx_tstr(t).s);
    }
  }
  return MX_OK;
}

mx_status_t mx_infer_check_dims(const mx_op_t *op, const char *what, const mx_ilist_t *l,
                                int32_t rank, bool sorted) {
  for (int32_t i = 0; i < l->n; i++) {
    if (l->v[i] < 0 || l->v[i] >= rank) {
      return mx_infer_fail(op, "%s[%d] = %lld is out of range [0, %d)", what, i, (long long)l->v[i],
                           rank);
    }
    for (int32_t j = 0; j < i; j++) {
      if (l->v[j] == l->v[i]) {
        return mx_infer_fail(op, "%s has duplicate dimension %lld", what, (long long)l->v[i]);
      }
    }
    if (sorted && i > 0 && l->v[i] < l->v[i - 1]) {
      return mx_infer_fail(op, "%s must be sorted", what);
    }
  }
  return MX_OK;
}

static int elem_class(mx_elem_type_t et) {
  if (mx_elem_is_bool(et) || mx_elem_is_int(et)) return 1;
  if (mx_elem_is_float(et)) return 2;
  if (mx_elem_is_complex(et)) return 3;
  return 0;
}

bool mx_infer_same_class(mx_elem_type_t a, mx_elem_type_t b) {
  return elem_class(a) != 0 && elem_class(a) == elem_class(b);
}

bool mx_infer_promotable(mx_elem_type_t from, mx_elem_type_t to) {
  if (!mx_infer_same_class(from, to)) return false;
  if (elem_class(from) == 2) return true;
  return mx_elem_bits(from) <= mx_elem_bits(to);
}

// ---- elementwise ----

enum {
  K_BOOL = 1,
  K_SINT = 2,
  K_UINT = 4,
  K_FLOAT = 8,
  K_COMPLEX = 16,
  K_INT = K_SINT | K_UINT,
  K_ANY = K_BOOL | K_INT | K_FLOAT | K_COMPLEX,
};

static unsigned elem_kind(mx_elem_type_t et) {
  if (mx_elem_is_bool(et)) return K_BOOL;
  if (mx_elem_is_signed(et)) return K_SINT;
  if (mx_elem_is_unsigned(et)) return K_UINT;
  if (mx_elem_is_float(et)) return K_FLOAT;
  if (mx_elem_is_complex(et)) return K_COMPLEX;
  return 0;
}

static const char *kinds_text(unsigned k) {
  switch (k) {
    case K_ANY:
      return "any element type";
    case K_BOOL | K_INT:
      return "boolean or integer elements";
    case K_INT:
      return "integer elements";
    case K_FLOAT:
      return "floating-point elements";
    case K_FLOAT | K_COMPLEX:
      return "floating-point or complex elements";
    case K_INT | K_FLOAT | K_COMPLEX:
      return "integer, floating-point or complex elements";
    case K_SINT | K_FLOAT | K_COMPLEX:
      return "signed integer, floating-point or complex elements";
    default:
      return "a different element type";
  }
}

static unsigned allowed_kinds(mx_opcode_t code) {
  switch (code) {
    case MX_OP_ABS:
    case MX_OP_SIGN:
      return K_SINT | K_FLOAT | K_COMPLEX;
    case MX_OP_CBRT:
    case MX_OP_COSINE:
    case MX_OP_SINE:
    case MX_OP_TAN:
    case MX_OP_TANH:
    case MX_OP_EXPONENTIAL:
    case MX_OP_EXPONENTIAL_MINUS_ONE:
    case MX_OP_LOG:
    case MX_OP_LOG_PLUS_ONE:
    case MX_OP_LOGISTIC:
    case MX_OP_RSQRT:
    case MX_OP_SQRT:
    case MX_OP_IMAG:
    case MX_OP_REAL:
    case MX_OP_ATAN2:
      return K_FLOAT | K_COMPLEX;
    case MX_OP_CEIL:
    case MX_OP_FLOOR:
    case MX_OP_ROUND_NEAREST_AFZ:
    case MX_OP_ROUND_NEAREST_EVEN:
    case MX_OP_IS_FINITE:
    case MX_OP_COMPLEX:
      return K_FLOAT;
    case MX_OP_COUNT_LEADING_ZEROS:
    case MX_OP_POPCNT:
    case MX_OP_SHIFT_LEFT:
    case MX_OP_SHIFT_RIGHT_ARITHMETIC:
    case MX_OP_SHIFT_RIGHT_LOGICAL:
      return K_INT;
    case MX_OP_NOT:
    case MX_OP_AND:
    case MX_OP_OR:
    case MX_OP_XOR:
      return K_BOOL | K_INT;
    case MX_OP_NEGATE:
    case MX_OP_DIVIDE:
    case MX_OP_POWER:
    case MX_OP_REMAINDER:
    case MX_OP_SUBTRACT:
      return K_INT | K_FLOAT | K_COMPLEX;
    default:
      return K_ANY;
  }
}

static mx_elem_type_t complex_part(mx_elem_type_t et) {
  if (et == MX_ELEM_C64) return MX_ELEM_F32;
  if (et == MX_ELEM_C128) return MX_ELEM_F64;
  return et;
}

static mx_status_t check_kind(const mx_op_t *op, const mx_type_t *t) {
  unsigned allowed = allowed_kinds(op->code);
  if ((elem_kind(t->elem) & allowed) == 0) {
    return mx_infer_fail(op, "operand type %s: expected %s", mx_tstr(t).s, kinds_text(allowed));
  }
  return MX_OK;
}

static mx_status_t infer_unary(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands != 1) return mx_infer_fail(op, "expected 1 operand, got %d", op->n_operands);
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 1);
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  if ((st = check_kind(op, x)) != MX_OK) return st;
  *out = *x;
  if (op->code == MX_OP_ABS || op->code == MX_OP_REAL || op->code == MX_OP_IMAG) {
    out->elem = complex_part(x->elem);
  } else if (op->code == MX_OP_IS_FINITE) {
    out->elem = MX_ELEM_I1;
  }
  return MX_OK;
}

static mx_status_t infer_binary(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands != 2) {
    return mx_infer_fail(op, "expected 2 operands, got %d", op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 2);
  if (st != MX_OK) return st;
  const mx_type_t *a = mx_infer_operand(f, op, 0);
  const mx_type_t *b = mx_infer_operand(f, op, 1);
  if (!mx_type_equal(a, b)) {
    return mx_infer_fail(op,
                         "operand types differ: lhs %s, rhs %s (no implicit broadcasting; use "
                         "broadcast_in_dim)",
                         mx_tstr(a).s, mx_tstr(b).s);
  }
  if ((st = check_kind(op, a)) != MX_OK) return st;
  *out = *a;
  if (op->code == MX_OP_COMPLEX) {
    if (a->elem == MX_ELEM_F32) {
      out->elem = MX_ELEM_C64;
    } else if (a->elem == MX_ELEM_F64) {
      out->elem = MX_ELEM_C128;
    } else {
      return mx_infer_fail(op, "operand type %s: expected f32 or f64 elements", mx_tstr(a).s);
    }
  }
  return MX_OK;
}

static mx_status_t infer_clamp(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands != 3) {
    return mx_infer_fail(op, "expected 3 operands (min, operand, max), got %d", op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 3);
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 1);
  static const char *const names[3] = {"min", "operand", "max"};
  for (int32_t i = 0; i < 3; i += 2) {
    const mx_type_t *m = mx_infer_operand(f, op, i);
    if (m->elem != x->elem || (m->rank != 0 && !mx_type_same_shape(m, x))) {
      return mx_infer_fail(op, "%s type %s must be a scalar or match operand type %s", names[i],
                           mx_tstr(m).s, mx_tstr(x).s);
    }
  }
  *out = *x;
  return MX_OK;
}

static mx_status_t infer_select(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands != 3) {
    return mx_infer_fail(op, "expected 3 operands (pred, on_true, on_false), got %d",
                         op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 3);
  if (st != MX_OK) return st;
  const mx_type_t *p = mx_infer_operand(f, op, 0);
  const mx_type_t *t = mx_infer_operand(f, op, 1);
  const mx_type_t *e = mx_infer_operand(f, op, 2);
  if (!mx_type_equal(t, e)) {
    return mx_infer_fail(op, "on_true type %s and on_false type %s differ", mx_tstr(t).s,
                         mx_tstr(e).s);
  }
  if (p->elem != MX_ELEM_I1) {
    return mx_infer_fail(op, "pred type %s must have i1 elements", mx_tstr(p).s);
  }
  if (p->rank != 0 && !mx_type_same_shape(p, t)) {
    return mx_infer_fail(op, "pred type %s must be a scalar or have the shape of %s", mx_tstr(p).s,
                         mx_tstr(t).s);
  }
  *out = *t;
  return MX_OK;
}

static const char *const k_cmp_dirs[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
static const char *const k_cmp_types[] = {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};

static mx_status_t check_enum(const mx_op_t *op, const char *name, const char *kind,
                              const char *const *values, int32_t n_values, bool required) {
  const mx_attr_t *a = mx_op_attr(op, name);
  if (a == NULL) {
    if (required) return mx_infer_fail(op, "missing required attribute '%s'", name);
    return MX_OK;
  }
  if ((a->kind != MX_ATTR_ENUM && a->kind != MX_ATTR_STRING) || a->s == NULL) {
    return mx_infer_fail(op, "attribute '%s' must be a #stablehlo<%s ...> value", name, kind);
  }
  for (int32_t i = 0; i < n_values; i++) {
    if (strcmp(a->s, values[i]) == 0) return MX_OK;
  }
  return mx_infer_fail(op, "attribute '%s' has unknown value '%s'", name, a->s);
}

static mx_status_t infer_compare(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands != 2) {
    return mx_infer_fail(op, "expected 2 operands, got %d", op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 2);
  if (st != MX_OK) return st;
  const mx_type_t *a = mx_infer_operand(f, op, 0);
  const mx_type_t *b = mx_infer_operand(f, op, 1);
  if (!mx_type_equal(a, b)) {
    return mx_infer_fail(op, "operand types differ: lhs %s, rhs %s", mx_tstr(a).s, mx_tstr(b).s);
  }
  st = check_enum(op, "comparison_direction", "comparison_direction", k_cmp_dirs, 6, true);
  if (st != MX_OK) return st;
  st = check_enum(op, "compare_type", "comparison_type", k_cmp_types, 5, false);
  if (st != MX_OK) return st;
  const mx_attr_t *ct = mx_op_attr(op, "compare_type");
  if (ct != NULL && ct->s != NULL) {
    unsigned k = elem_kind(a->elem);
    bool ok = true;
    if (strcmp(ct->s, "FLOAT") == 0 || strcmp(ct->s, "TOTALORDER") == 0) {
      ok = (k & (K_FLOAT | K_COMPLEX)) != 0;
    } else if (strcmp(ct->s, "SIGNED") == 0 || strcmp(ct->s, "UNSIGNED") == 0) {
      // The spec ties SIGNED/UNSIGNED to the element type's signedness, but XLA (and
      // StableHLO's verifier) accept either on any integer: only the class is checked.
      ok = (k & (K_INT | K_BOOL)) != 0;
    }
    if (!ok) {
      return mx_infer_fail(op, "compare_type %s does not fit operand type %s", ct->s, mx_tstr(a).s);
    }
  }
  *out = *a;
  out->elem = MX_ELEM_I1;
  return MX_OK;
}

static mx_status_t need_declared(const mx_op_t *op, const mx_type_t *declared) {
  if (declared == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: result type required for inference",
                        mx_infer_opname(op));
  }
  return MX_OK;
}

static mx_status_t infer_convert(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                                 mx_type_t *out) {
  if (op->n_operands != 1) return mx_infer_fail(op, "expected 1 operand, got %d", op->n_operands);
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 1);
  if (st != MX_OK) return st;
  if ((st = need_declared(op, decl)) != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  if (decl->kind != MX_TYPE_TENSOR || decl->elem == MX_ELEM_INVALID) {
    return mx_infer_fail(op, "result type %s must be a tensor", mx_tstr(decl).s);
  }
  *out = *x;
  out->elem = decl->elem;
  return MX_OK;
}

static mx_status_t infer_bitcast(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                                 mx_type_t *out) {
  if (op->n_operands != 1) return mx_infer_fail(op, "expected 1 operand, got %d", op->n_operands);
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 1);
  if (st != MX_OK) return st;
  if ((st = need_declared(op, decl)) != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  if (decl->kind != MX_TYPE_TENSOR || decl->elem == MX_ELEM_INVALID) {
    return mx_infer_fail(op, "result type %s must be a tensor", mx_tstr(decl).s);
  }
  if (mx_elem_is_complex(x->elem) != mx_elem_is_complex(decl->elem)) {
    return mx_infer_fail(op, "cannot bitcast between complex and non-complex types (%s to %s)",
                         mx_tstr(x).s, mx_elem_name(decl->elem));
  }
  int in_bits = mx_elem_bits(x->elem), out_bits = mx_elem_bits(decl->elem);
  *out = *x;
  out->elem = decl->elem;
  if (in_bits == out_bits) return MX_OK;
  if (in_bits <= 0 || out_bits <= 0) return mx_infer_fail(op, "invalid element types");
  if (in_bits > out_bits) {
    if (in_bits % out_bits != 0 || x->rank >= MX_MAX_RANK) {
      return mx_infer_fail(op, "cannot bitcast %s to %s elements", mx_tstr(x).s,
                           mx_elem_name(decl->elem));
    }
    out->dims[out->rank++] = in_bits / out_bits;
    return MX_OK;
  }
  if (out_bits % in_bits != 0 || x->rank == 0 || x->dims[x->rank - 1] != out_bits / in_bits) {
    return mx_infer_fail(op, "cannot bitcast %s to %s elements: the last dimension must be %d",
                         mx_tstr(x).s, mx_elem_name(decl->elem),
                         in_bits > 0 ? out_bits / in_bits : 0);
  }
  out->rank--;
  return MX_OK;
}

static mx_status_t infer_reduce_precision(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands != 1) return mx_infer_fail(op, "expected 1 operand, got %d", op->n_operands);
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 1);
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  if (!mx_elem_is_float(x->elem)) {
    return mx_infer_fail(op, "operand type %s: expected floating-point elements", mx_tstr(x).s);
  }
  int64_t eb, mb;
  if ((st = mx_infer_int(op, NULL, "exponent_bits", true, 0, &eb)) != MX_OK) return st;
  if ((st = mx_infer_int(op, NULL, "mantissa_bits", true, 0, &mb)) != MX_OK) return st;
  if (eb < 1 || mb < 0) {
    return mx_infer_fail(op, "exponent_bits = %lld must be >= 1 and mantissa_bits = %lld >= 0",
                         (long long)eb, (long long)mb);
  }
  *out = *x;
  return MX_OK;
}

mx_status_t mx_infer_op(const mx_func_t *f, const mx_op_t *op, const mx_type_t *declared,
                        int32_t n_results, mx_type_t *out) {
  if (f == NULL || op == NULL || (n_results > 0 && out == NULL)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_infer_op: NULL argument");
  }
  for (int32_t i = 0; i < op->n_operands; i++) {
    if (mx_infer_operand(f, op, i) == NULL) {
      return mx_infer_fail(op, "operand %d refers to an unknown value", i);
    }
  }
  unsigned flags = mx_opcode_flags(op->code);
  bool one_result = (flags & (MX_OPF_UNARY | MX_OPF_BINARY)) != 0;
  switch (op->code) {
    case MX_OP_CLAMP:
    case MX_OP_COMPARE:
    case MX_OP_SELECT:
    case MX_OP_CONVERT:
    case MX_OP_BITCAST_CONVERT:
    case MX_OP_REDUCE_PRECISION:
      one_result = true;
      break;
    default:
      break;
  }
  if (one_result) {
    if (n_results != 1) return mx_infer_fail(op, "expected 1 result, got %d", n_results);
    if (flags & MX_OPF_UNARY) return infer_unary(f, op, out);
    if (flags & MX_OPF_BINARY) return infer_binary(f, op, out);
    switch (op->code) {
      case MX_OP_CLAMP:
        return infer_clamp(f, op, out);
      case MX_OP_COMPARE:
        return infer_compare(f, op, out);
      case MX_OP_SELECT:
        return infer_select(f, op, out);
      case MX_OP_CONVERT:
        return infer_convert(f, op, declared, out);
      case MX_OP_BITCAST_CONVERT:
        return infer_bitcast(f, op, declared, out);
      default:
        return infer_reduce_precision(f, op, out);
    }
  }
  bool handled = false;
  mx_status_t st = mx_infer_shape_op(f, op, declared, n_results, out, &handled);
  if (handled) return st;
  st = mx_infer_index_op(f, op, declared, n_results, out, &handled);
  if (handled) return st;
  st = mx_infer_compute_op(f, op, declared, n_results, out, &handled);
  if (handled) return st;
  st = mx_infer_control_op(f, op, declared, n_results, out, &handled);
  if (handled) return st;
  // Unknown ops, check ops and anything without rules: the declared types stand.
  if (n_results > 0) {
    if ((st = need_declared(op, declared)) != MX_OK) return st;
    for (int32_t i = 0; i < n_results; i++) out[i] = declared[i];
  }
  return MX_OK;
}
