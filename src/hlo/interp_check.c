// The check dialect of the reference interpreter (check.expect_eq / _almost_eq / _close and
// their _const forms, also as JAX custom calls), and interpreter.probe with
// check.expect_serialized_eq.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/interp_internal.h"

// ---------------------------------------------------------------------------------------------
// Element helpers for the check ops
// ---------------------------------------------------------------------------------------------

static uint64_t load_bits(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  switch (n) {
    case 1:
      v = p[0];
      break;
    case 2: {
      uint16_t x;
      memcpy(&x, p, 2);
      v = x;
      break;
    }
    case 4: {
      uint32_t x;
      memcpy(&x, p, 4);
      v = x;
      break;
    }
    case 8:
      memcpy(&v, p, 8);
      break;
    default:
      break;
  }
  return v;
}

static uint64_t bit_mask(int bits) { return bits >= 64 ? ~0ULL : ((1ULL << bits) - 1); }

// Component float type of an element type (itself for real floats).
static mx_elem_type_t component_type(mx_elem_type_t et) {
  if (et == MX_ELEM_C64) return MX_ELEM_F32;
  if (et == MX_ELEM_C128) return MX_ELEM_F64;
  return et;
}

// Reads component `c` (0 = re, 1 = im) of a float/complex element as (bits, value).
static void load_float(const mx_tensor_t *t, int64_t i, int c, uint64_t *bits, double *val) {
  mx_elem_type_t et = t->type.elem;
  mx_elem_type_t ct = component_type(et);
  size_t cs = mx_elem_size(ct);
  size_t es = mx_elem_size(et);
  uint64_t b =
      load_bits(t->data + (size_t)i * es + (size_t)c * cs, cs) & bit_mask(mx_elem_bits(ct));
  *bits = b;
  *val = mx_float_decode(ct, b);
}

static bool float_has_sign_bit(mx_elem_type_t ct) { return ct != MX_ELEM_F8E8M0FNU; }

static int64_t ncomponents(mx_elem_type_t et) { return mx_elem_is_complex(et) ? 2 : 1; }

// Exact equality: integers by value, floats bitwise except that any two NaNs are equal.
static bool elem_equal(const mx_tensor_t *a, const mx_tensor_t *b, int64_t i) {
  mx_elem_type_t et = a->type.elem;
  if (mx_elem_is_float(et) || mx_elem_is_complex(et)) {
    for (int c = 0; c < ncomponents(et); c++) {
      uint64_t ba, bb;
      double va, vb;
      load_float(a, i, c, &ba, &va);
      load_float(b, i, c, &bb, &vb);
      if (ba != bb && !(isnan(va) && isnan(vb))) return false;
    }
    return true;
  }
  if (mx_elem_is_bool(et)) return (mx_tensor_get_i64(a, i) != 0) == (mx_tensor_get_i64(b, i) != 0);
  return mx_tensor_get_i64(a, i) == mx_tensor_get_i64(b, i);
}

// |a - b| <= tol, NaN equals NaN, infinities only equal themselves. (StableHLO's checker also
// rejects tiny values of opposite sign; we accept them, as an absolute tolerance suggests.)
static bool float_almost_equal(double a, double b, double tol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == b) return true;
  if (isinf(a) || isinf(b)) return false;
  return fabs(a - b) <= tol;
}

static bool elem_almost_equal(const mx_tensor_t *a, const mx_tensor_t *b, int64_t i, double tol) {
  mx_elem_type_t et = a->type.elem;
  if (!mx_elem_is_float(et) && !mx_elem_is_complex(et)) return elem_equal(a, b, i);
  for (int c = 0; c < ncomponents(et); c++) {
    uint64_t ba, bb;
    double va, vb;
    load_float(a, i, c, &ba, &va);
    load_float(b, i, c, &bb, &vb);
    if (!float_almost_equal(va, vb, tol)) return false;
  }
  return true;
}

// ULP distance as StableHLO's checker defines it: bit patterns of |x| are ULP counts from zero;
// opposite signs add; non-finite values are 0 apart when bitwise equal or both NaN, else "far".
static uint64_t float_ulp_diff(mx_elem_type_t ct, uint64_t ba, double va, uint64_t bb, double vb) {
  if (ba == bb) return 0;
  if (isnan(va) && isnan(vb)) return 0;
  if (!isfinite(va) || !isfinite(vb)) return UINT64_MAX;
  int bits = mx_elem_bits(ct);
  uint64_t sign = float_has_sign_bit(ct) ? (1ULL << (bits - 1)) : 0;
  uint64_t ma = ba & ~sign, mb = bb & ~sign;
  bool na = (ba & sign) != 0, nb = (bb & sign) != 0;
  if (na != nb) return ma + mb;
  return ma > mb ? ma - mb : mb - ma;
}

static uint64_t elem_ulp_diff(const mx_tensor_t *a, const mx_tensor_t *b, int64_t i) {
  mx_elem_type_t ct = component_type(a->type.elem);
  uint64_t worst = 0;
  for (int c = 0; c < ncomponents(a->type.elem); c++) {
    uint64_t ba, bb;
    double va, vb;
    load_float(a, i, c, &ba, &va);
    load_float(b, i, c, &bb, &vb);
    uint64_t d = float_ulp_diff(ct, ba, va, bb, vb);
    if (d > worst) worst = d;
  }
  return worst;
}

static void format_elem(mx_strbuf_t *sb, const mx_tensor_t *t, int64_t i) {
  mx_elem_type_t et = t->type.elem;
  if (mx_elem_is_bool(et)) {
    mx_strbuf_puts(sb, mx_tensor_get_i64(t, i) ? "true" : "false");
  } else if (mx_elem_is_unsigned(et)) {
    mx_strbuf_printf(sb, "%" PRIu64, mx_tensor_get_u64(t, i));
  } else if (mx_elem_is_int(et)) {
    mx_strbuf_printf(sb, "%" PRId64, mx_tensor_get_i64(t, i));
  } else if (mx_elem_is_float(et)) {
    uint64_t b;
    double v;
    load_float(t, i, 0, &b, &v);
    mx_strbuf_printf(sb, "%.17g", v);
  } else if (mx_elem_is_complex(et)) {
    uint64_t b;
    double re, im;
    load_float(t, i, 0, &b, &re);
    load_float(t, i, 1, &b, &im);
    mx_strbuf_printf(sb, "(%.17g, %.17g)", re, im);
  } else {
    mx_strbuf_puts(sb, "?");
  }
}

static void format_index(mx_strbuf_t *sb, const mx_type_t *t, int64_t lin) {
  int64_t idx[MX_MAX_RANK];
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    int64_t n = t->dims[d] > 0 ? t->dims[d] : 1;
    idx[d] = lin % n;
    lin /= n;
  }
  mx_strbuf_puts(sb, "[");
  for (int32_t d = 0; d < t->rank; d++) mx_strbuf_printf(sb, "%s%" PRId64, d ? ", " : "", idx[d]);
  mx_strbuf_puts(sb, "]");
}

// Records the outcome of one check op: counted in the report, or an error without one.
static mx_status_t check_report(mx_interp_t *ip, const mx_op_t *op, bool ok, const char *msg) {
  if (ip->checks) {
    ip->checks->n_checks++;
    if (ok) return MX_OK;
    if (ip->checks->n_failed == 0)
      snprintf(ip->checks->first_failure, sizeof ip->checks->first_failure, "%s", msg);
    ip->checks->n_failed++;
    return MX_OK;
  }
  if (ok) return MX_OK;
  return mx_error_set(MX_ERR_RUNTIME, "%s", msg);
}

typedef enum { CMP_EQ, CMP_ALMOST, CMP_CLOSE } cmp_kind_t;

mx_status_t mx_interp_exec_check(mx_interp_t *ip, const mx_op_t *op, const mx_tensor_t *const *in,
                                 int32_t n_in, const char *check_name, bool jax_form) {
  cmp_kind_t kind;
  bool is_const = false;
  switch (op->code) {
    case MX_OP_CHECK_EXPECT_EQ:
      kind = CMP_EQ;
      break;
    case MX_OP_CHECK_EXPECT_EQ_CONST:
      kind = CMP_EQ;
      is_const = true;
      break;
    case MX_OP_CHECK_EXPECT_ALMOST_EQ:
      kind = CMP_ALMOST;
      break;
    case MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST:
      kind = CMP_ALMOST;
      is_const = true;
      break;
    case MX_OP_CHECK_EXPECT_CLOSE:
      kind = CMP_CLOSE;
      break;
    default:
      return mx_interp_unsupported(op);
  }
  const mx_tensor_t *actual = NULL, *expected = NULL;
  if (is_const) {
    const mx_attr_t *v = mx_op_attr(op, "value");
    if (n_in != 1 || !v || v->kind != MX_ATTR_DENSE || !v->dense)
      return mx_error_set(MX_ERR_RUNTIME, "%s needs one operand and a dense `value`", check_name);
    actual = in[0];
    expected = v->dense;
  } else {
    if (n_in != 2) return mx_error_set(MX_ERR_RUNTIME, "%s needs two operands", check_name);
    actual = in[0];
    expected = in[1];
  }
  if (actual->type.kind != MX_TYPE_TENSOR ||
      !mx_interp_value_type_equal(&actual->type, &expected->type)) {
    char b1[96], b2[96];
    return mx_error_set(MX_ERR_RUNTIME, "%s: operand type %s does not match expected type %s",
                        check_name, mx_type_str(&actual->type, b1, sizeof b1),
                        mx_type_str(&expected->type, b2, sizeof b2));
  }
  mx_elem_type_t et = actual->type.elem;
  if (kind == CMP_CLOSE && !mx_elem_is_float(et) && !mx_elem_is_complex(et))
    return mx_error_set(MX_ERR_RUNTIME, "%s needs float or complex operands", check_name);
  if (actual->nbytes < mx_type_nbytes(&actual->type) ||
      expected->nbytes < mx_type_nbytes(&expected->type))
    return mx_error_set(MX_ERR_RUNTIME, "%s: tensor storage is smaller than its type", check_name);

  // The JAX custom_call form has fixed, looser limits (what StableHLO's runner uses for it).
  double tol = jax_form ? 1e-3 : 1e-4;
  uint64_t min_ulp = 0, max_ulp = jax_form ? 3 : 1;
  const mx_attr_t *a;
  if ((a = mx_op_attr(op, "tolerance")) != NULL) {
    if (a->kind == MX_ATTR_FLOAT)
      tol = a->f;
    else if (a->kind == MX_ATTR_INT)
      tol = (double)a->i;
  }
  if ((a = mx_op_attr(op, "max_ulp_difference")) != NULL && a->kind == MX_ATTR_INT)
    max_ulp = (uint64_t)a->i;
  if ((a = mx_op_attr(op, "min_ulp_difference")) != NULL && a->kind == MX_ATTR_INT)
    min_ulp = (uint64_t)a->i;

  int64_t n = mx_type_numel(&actual->type);
  for (int64_t i = 0; i < n; i++) {
    bool ok;
    uint64_t ulp = 0;
    if (kind == CMP_EQ)
      ok = elem_equal(actual, expected, i);
    else if (kind == CMP_ALMOST)
      ok = elem_almost_equal(actual, expected, i, tol);
    else {
      ulp = elem_ulp_diff(actual, expected, i);
      ok = ulp >= min_ulp && ulp <= max_ulp;
    }
    if (ok) continue;
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    if (op->line > 0) mx_strbuf_printf(&sb, "line %d: ", (int)op->line);
    mx_strbuf_printf(&sb, "%s failed: ", check_name);
    format_elem(&sb, actual, i);
    mx_strbuf_puts(&sb, " (actual) vs ");
    format_elem(&sb, expected, i);
    mx_strbuf_puts(&sb, " (expected) at index ");
    format_index(&sb, &actual->type, i);
    if (kind == CMP_CLOSE)
      mx_strbuf_printf(&sb, ", ULP difference %" PRIu64 " outside [%" PRIu64 ", %" PRIu64 "]", ulp,
                       min_ulp, max_ulp);
    else if (kind == CMP_ALMOST)
      mx_strbuf_printf(&sb, ", tolerance %g", tol);
    mx_status_t st = check_report(ip, op, false, sb.data ? sb.data : check_name);
    mx_strbuf_free(&sb);
    return st;
  }
  return check_report(ip, op, true, "");
}

// ---- interpreter.probe / check.expect_serialized_eq ----
//
// StableHLO's interpreter writes each probed value to a .npy file (one per probe id and
// iteration) and expect_serialized_eq reads it back. We keep the values in memory for the run
// instead: the comparison is the same, bit for bit, without a probe directory.

typedef struct probe_rec {
  const char *id;  // points into the module's attribute
  int64_t iter;    // how many earlier records share the id
  mx_tensor_t value;
} probe_rec_t;

void mx_interp_probes_free(mx_interp_t *ip) {
  for (int32_t i = 0; i < ip->n_probes; i++) mx_tensor_free(&ip->probes[i].value);
  free(ip->probes);
  ip->probes = NULL;
  ip->n_probes = ip->cap_probes = 0;
}

static const char *probe_id_of(const mx_op_t *op) {
  const mx_attr_t *a = mx_op_attr(op, "probe_id");
  return a && a->kind == MX_ATTR_STRING && a->s ? a->s : NULL;
}

mx_status_t mx_interp_exec_probe(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out) {
  const char *id = probe_id_of(op);
  if (!id || op->n_operands != 1 || op->n_results != 1 || in[0]->type.kind != MX_TYPE_TENSOR)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs one tensor operand and a `probe_id` string",
                        op->name);
  if (!mx_interp_value_type_equal(&in[0]->type, &f->values[op->results[0]].type))
    return mx_error_set(MX_ERR_RUNTIME, "%s: result type differs from the operand", op->name);
  if (ip->n_probes == ip->cap_probes) {
    int32_t cap = ip->cap_probes ? 2 * ip->cap_probes : 16;
    probe_rec_t *p = realloc(ip->probes, (size_t)cap * sizeof *p);
    if (!p) return mx_error_set(MX_ERR_NOMEM, "out of memory recording a probe");
    ip->probes = p;
    ip->cap_probes = cap;
  }
  int64_t iter = 0;
  for (int32_t i = 0; i < ip->n_probes; i++)
    if (strcmp(ip->probes[i].id, id) == 0) iter++;
  probe_rec_t *r = &ip->probes[ip->n_probes];
  mx_status_t st = mx_tensor_clone(&r->value, in[0]);
  if (st) return st;
  r->id = id;
  r->iter = iter;
  ip->n_probes++;
  st = mx_interp_value_clone(&out[0], in[0]);
  return st;
}

mx_status_t mx_interp_exec_serialized_eq(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                         const mx_tensor_t *const *in, mx_tensor_t *out) {
  (void)f;
  (void)out;
  const char *id = probe_id_of(op);
  if (!id || op->n_operands != 1 || in[0]->type.kind != MX_TYPE_TENSOR)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs one tensor operand and a `probe_id` string",
                        op->name);
  const mx_attr_t *it = mx_op_attr(op, "iter");
  int64_t iter = it && it->kind == MX_ATTR_INT ? it->i : 0;
  const probe_rec_t *r = NULL;
  for (int32_t i = 0; i < ip->n_probes && !r; i++)
    if (strcmp(ip->probes[i].id, id) == 0 && ip->probes[i].iter == iter) r = &ip->probes[i];
  char where[32] = "";
  if (op->line > 0) snprintf(where, sizeof where, "line %d: ", (int)op->line);
  char msg[384];
  bool ok = false;
  if (!r) {
    snprintf(msg, sizeof msg, "%s%s: no probe \"%.100s\" iteration %" PRId64 " was recorded", where,
             op->name, id, iter);
  } else if (!mx_interp_value_type_equal(&r->value.type, &in[0]->type)) {
    snprintf(msg, sizeof msg, "%s%s: probe \"%.100s\" recorded a value of another type", where,
             op->name, id);
  } else {
    size_t nb = mx_type_nbytes(&in[0]->type);
    ok = nb == 0 || (in[0]->nbytes >= nb && r->value.nbytes >= nb &&
                     memcmp(in[0]->data, r->value.data, nb) == 0);
    if (!ok)
      snprintf(msg, sizeof msg, "%s%s: value differs from probe \"%.100s\" iteration %" PRId64,
               where, op->name, id, iter);
  }
  return check_report(ip, op, ok, ok ? "" : msg);
}
