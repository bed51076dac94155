// Reference interpreter: elementwise ops. This file holds the dispatcher, element access
// helpers and the ops that mix element classes (select, clamp, compare); the per-class
// arithmetic lives in interp_elementwise_{int,float,complex,convert}.c.
#include <math.h>
#include <string.h>

#include "hlo/interp_elementwise_internal.h"

// ============================================================================================
// Element access
// ============================================================================================

uint64_t mx_ew_mask(int bits) { return bits >= 64 ? ~0ull : ((1ull << bits) - 1); }

int64_t mx_ew_sext(uint64_t raw, int bits) {
  if (bits >= 64) return (int64_t)raw;
  uint64_t m = mx_ew_mask(bits);
  raw &= m;
  uint64_t sign = 1ull << (bits - 1);
  // (raw ^ sign) - sign sign-extends without implementation-defined shifts.
  return (int64_t)((raw ^ sign) - sign);
}

static size_t ew_storage(mx_elem_type_t et) {
  int b = mx_elem_bits(et);
  if (b <= 8) return 1;
  if (b <= 16) return 2;
  if (b <= 32) return 4;
  return 8;  // complex is not accessed through the bit helpers
}

uint64_t mx_ew_load_bits(mx_elem_type_t et, const uint8_t *data, int64_t i) {
  int bits = mx_elem_bits(et);
  switch (ew_storage(et)) {
    case 1:
      if (et == MX_ELEM_I1) return data[i] != 0;
      return data[i] & mx_ew_mask(bits);
    case 2: {
      uint16_t v;
      memcpy(&v, data + 2 * i, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, data + 4 * i, 4);
      return v;
    }
    default: {
      uint64_t v;
      memcpy(&v, data + 8 * i, 8);
      return v;
    }
  }
}

void mx_ew_store_bits(mx_elem_type_t et, uint8_t *data, int64_t i, uint64_t raw) {
  int bits = mx_elem_bits(et);
  raw &= mx_ew_mask(bits);
  switch (ew_storage(et)) {
    case 1:
      if (mx_elem_is_signed(et)) {
        data[i] = (uint8_t)(int8_t)mx_ew_sext(raw, bits);
      } else {
        data[i] = (uint8_t)raw;
      }
      return;
    case 2: {
      uint16_t v = (uint16_t)raw;
      memcpy(data + 2 * i, &v, 2);
      return;
    }
    case 4: {
      uint32_t v = (uint32_t)raw;
      memcpy(data + 4 * i, &v, 4);
      return;
    }
    default:
      memcpy(data + 8 * i, &raw, 8);
      return;
  }
}

double mx_ew_load_real(mx_elem_type_t et, const uint8_t *data, int64_t i) {
  if (et == MX_ELEM_F32) {
    float v;
    memcpy(&v, data + 4 * i, 4);
    return v;
  }
  if (et == MX_ELEM_F64) {
    double v;
    memcpy(&v, data + 8 * i, 8);
    return v;
  }
  return mx_float_decode(et, mx_ew_load_bits(et, data, i));
}

void mx_ew_store_real(mx_elem_type_t et, uint8_t *data, int64_t i, double v) {
  if (et == MX_ELEM_F32) {
    float f = (float)v;  // C conversion rounds to nearest even and overflows to inf
    memcpy(data + 4 * i, &f, 4);
    return;
  }
  if (et == MX_ELEM_F64) {
    memcpy(data + 8 * i, &v, 8);
    return;
  }
  mx_ew_store_bits(et, data, i, mx_float_encode(et, v));
}

double mx_ew_round(mx_elem_type_t et, double v) {
  if (et == MX_ELEM_F64) return v;
  if (et == MX_ELEM_F32) return (double)(float)v;
  return mx_float_decode(et, mx_float_encode(et, v));
}

mx_elem_type_t mx_ew_complex_part(mx_elem_type_t et) {
  return et == MX_ELEM_C64 ? MX_ELEM_F32 : MX_ELEM_F64;
}

void mx_ew_load_complex(mx_elem_type_t et, const uint8_t *data, int64_t i, double *re, double *im) {
  if (et == MX_ELEM_C64) {
    float v[2];
    memcpy(v, data + 8 * i, 8);
    *re = v[0];
    *im = v[1];
  } else {
    double v[2];
    memcpy(v, data + 16 * i, 16);
    *re = v[0];
    *im = v[1];
  }
}

void mx_ew_store_complex(mx_elem_type_t et, uint8_t *data, int64_t i, double re, double im) {
  if (et == MX_ELEM_C64) {
    float v[2] = {(float)re, (float)im};
    memcpy(data + 8 * i, v, 8);
  } else {
    double v[2] = {re, im};
    memcpy(data + 16 * i, v, 16);
  }
}

double mx_ew_fmax(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == 0 && b == 0) return signbit(a) ? b : a;  // +0 > -0
  return a > b ? a : b;
}

double mx_ew_fmin(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == 0 && b == 0) return signbit(a) ? a : b;
  return a < b ? a : b;
}

bool mx_ew_int_less(mx_elem_type_t et, uint64_t a, uint64_t b) {
  if (mx_elem_is_signed(et)) {
    int bits = mx_elem_bits(et);
    return mx_ew_sext(a, bits) < mx_ew_sext(b, bits);
  }
  return a < b;
}

mx_status_t mx_ew_unsupported(const mx_op_t *op, const mx_type_t *t) {
  char buf[128];
  return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s on %s",
                      op->name ? op->name : mx_opcode_name(op->code),
                      t ? mx_type_str(t, buf, sizeof buf) : "this type");
}

// ============================================================================================
// Validation
// ============================================================================================

static const char *ew_name(const mx_op_t *op) {
  return op->name ? op->name : mx_opcode_name(op->code);
}

static bool ew_is_tensor(const mx_tensor_t *t) {
  return t && t->type.kind == MX_TYPE_TENSOR && t->type.elem > MX_ELEM_INVALID &&
         t->type.elem < MX_ELEM_COUNT && (t->data || mx_type_numel(&t->type) == 0) &&
         t->nbytes >= mx_type_nbytes(&t->type);
}

// Operand i must be a tensor with the result's element count (or a scalar if allowed).
static mx_status_t ew_check_operand(const mx_op_t *op, const mx_tensor_t *t, int64_t numel,
                                    bool scalar_ok, int idx) {
  if (!ew_is_tensor(t))
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: operand #%d is not a tensor value", ew_name(op),
                        idx);
  int64_t n = mx_type_numel(&t->type);
  if (n != numel && !(scalar_ok && t->type.rank == 0))
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: operand #%d has %lld elements, result has %lld",
                        ew_name(op), idx, (long long)n, (long long)numel);
  return MX_OK;
}

static mx_status_t ew_same_elem(const mx_op_t *op, const mx_tensor_t *a, const mx_tensor_t *b) {
  if (a->type.elem != b->type.elem)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: operand element types differ (%s vs %s)",
                        ew_name(op), mx_elem_name(a->type.elem), mx_elem_name(b->type.elem));
  return MX_OK;
}

// ============================================================================================
// select / clamp / compare
// ============================================================================================

static mx_status_t ew_select(const mx_op_t *op, const mx_tensor_t *const *in, mx_tensor_t *out) {
  const mx_tensor_t *pred = in[0], *on_true = in[1], *on_false = in[2];
  if (pred->type.elem != MX_ELEM_I1)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: predicate must be i1", ew_name(op));
  mx_status_t st = ew_same_elem(op, on_true, out);
  if (st == MX_OK) st = ew_same_elem(op, on_false, out);
  if (st != MX_OK) return st;
  int64_t n = mx_type_numel(&out->type);
  size_t es = mx_elem_size(out->type.elem);
  bool scalar_pred = pred->type.rank == 0 && n != 1;
  for (int64_t i = 0; i < n; i++) {
    bool p = pred->data[scalar_pred ? 0 : i] != 0;
    const mx_tensor_t *src = p ? on_true : on_false;
    memcpy(out->data + (size_t)i * es, src->data + (size_t)i * es, es);
  }
  return MX_OK;
}

// Lexicographic (real, imag) order used by complex maximum/minimum/clamp (reference semantics).
static bool ew_complex_greater(double ar, double ai, double br, double bi) {
  return ar == br ? ai > bi : ar > br;
}
static bool ew_complex_less(double ar, double ai, double br, double bi) {
  return ar == br ? ai < bi : ar < br;
}

static mx_status_t ew_clamp(const mx_op_t *op, const mx_tensor_t *const *in, mx_tensor_t *out) {
  const mx_tensor_t *lo = in[0], *x = in[1], *hi = in[2];
  mx_status_t st = ew_same_elem(op, lo, x);
  if (st == MX_OK) st = ew_same_elem(op, hi, x);
  if (st == MX_OK) st = ew_same_elem(op, x, out);
  if (st != MX_OK) return st;
  mx_elem_type_t et = x->type.elem;
  int64_t n = mx_type_numel(&out->type);
  bool lo_s = lo->type.rank == 0, hi_s = hi->type.rank == 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t il = lo_s ? 0 : i, ih = hi_s ? 0 : i;
    if (mx_elem_is_complex(et)) {
      double xr, xi, lr, li, hr, hii;
      mx_ew_load_complex(et, x->data, i, &xr, &xi);
      mx_ew_load_complex(et, lo->data, il, &lr, &li);
      mx_ew_load_complex(et, hi->data, ih, &hr, &hii);
      if (!ew_complex_greater(xr, xi, lr, li)) xr = lr, xi = li;  // max(x, lo)
      if (!ew_complex_less(xr, xi, hr, hii)) xr = hr, xi = hii;   // min(., hi)
      mx_ew_store_complex(et, out->data, i, xr, xi);
    } else if (mx_elem_is_float(et)) {
      double v = mx_ew_fmax(mx_ew_load_real(et, x->data, i), mx_ew_load_real(et, lo->data, il));
      v = mx_ew_fmin(v, mx_ew_load_real(et, hi->data, ih));
      mx_ew_store_real(et, out->data, i, v);
    } else {
      uint64_t v = mx_ew_load_bits(et, x->data, i);
      uint64_t l = mx_ew_load_bits(et, lo->data, il), h = mx_ew_load_bits(et, hi->data, ih);
      if (mx_ew_int_less(et, v, l)) v = l;
      if (mx_ew_int_less(et, h, v)) v = h;
      mx_ew_store_bits(et, out->data, i, v);
    }
  }
  return MX_OK;
}

typedef enum { EW_EQ, EW_NE, EW_GE, EW_GT, EW_LE, EW_LT } ew_dir_t;

static bool ew_enum_is(const mx_attr_t *a, const char *s) {
  return a && (a->kind == MX_ATTR_ENUM || a->kind == MX_ATTR_STRING) && a->s &&
         strcmp(a->s, s) == 0;
}

// Applies a direction to a three-way result; `unordered` makes every direction but NE false.
static bool ew_dir_apply(ew_dir_t d, int cmp, bool unordered) {
  if (unordered) return d == EW_NE;
  switch (d) {
    case EW_EQ:
      return cmp == 0;
    case EW_NE:
      return cmp != 0;
    case EW_GE:
      return cmp >= 0;
    case EW_GT:
      return cmp > 0;
    case EW_LE:
      return cmp <= 0;
    default:
      return cmp < 0;
  }
}

// totalOrder key: sign-magnitude bit pattern mapped onto a monotonic signed integer, so
// -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN.
static int64_t ew_total_key(mx_elem_type_t et, uint64_t bits) {
  int w = mx_elem_bits(et);
  if (et == MX_ELEM_F8E8M0FNU) return (int64_t)bits;  // unsigned format: no sign bit
  uint64_t sign = 1ull << (w - 1);
  uint64_t mag = bits & (sign - 1);
  return (bits & sign) ? -(int64_t)mag - 1 : (int64_t)mag;
}

static int ew_cmp3(double a, double b) { return a < b ? -1 : (a > b ? 1 : 0); }

static mx_status_t ew_compare(const mx_op_t *op, const mx_tensor_t *const *in, mx_tensor_t *out) {
  const mx_tensor_t *a = in[0], *b = in[1];
  mx_status_t st = ew_same_elem(op, a, b);
  if (st != MX_OK) return st;
  if (out->type.elem != MX_ELEM_I1)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: result must be i1", ew_name(op));
  const mx_attr_t *da = mx_op_attr(op, "comparison_direction");
  static const char *const names[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
  int dir = -1;
  for (int k = 0; k < 6; k++)
    if (ew_enum_is(da, names[k])) dir = k;
  if (dir < 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: missing or invalid comparison_direction",
                        ew_name(op));
  ew_dir_t d = (ew_dir_t)dir;
  bool total = ew_enum_is(mx_op_attr(op, "compare_type"), "TOTALORDER");
  mx_elem_type_t et = a->type.elem;
  int64_t n = mx_type_numel(&out->type);
  for (int64_t i = 0; i < n; i++) {
    bool r;
    if (mx_elem_is_complex(et)) {
      double ar, ai, br, bi;
      mx_ew_load_complex(et, a->data, i, &ar, &ai);
      mx_ew_load_complex(et, b->data, i, &br, &bi);
      if (d == EW_EQ || d == EW_NE) {
        bool eq = ar == br && ai == bi;
        r = d == EW_EQ ? eq : !eq;
      } else {
        // Lexicographic on (real, imag); any NaN makes the pair unordered.
        bool unordered = isnan(ar) || isnan(ai) || isnan(br) || isnan(bi);
        int c = ar != br ? ew_cmp3(ar, br) : ew_cmp3(ai, bi);
        r = ew_dir_apply(d, c, unordered);
      }
    } else if (mx_elem_is_float(et)) {
      if (total) {
        int64_t ka = ew_total_key(et, mx_ew_load_bits(et, a->data, i));
        int64_t kb = ew_total_key(et, mx_ew_load_bits(et, b->data, i));
        r = ew_dir_apply(d, ka < kb ? -1 : (ka > kb ? 1 : 0), false);
      } else {
        double x = mx_ew_load_real(et, a->data, i), y = mx_ew_load_real(et, b->data, i);
        r = ew_dir_apply(d, ew_cmp3(x, y), isnan(x) || isnan(y));
      }
    } else {
      uint64_t x = mx_ew_load_bits(et, a->data, i), y = mx_ew_load_bits(et, b->data, i);
      int c = mx_ew_int_less(et, x, y) ? -1 : (x == y ? 0 : 1);
      r = ew_dir_apply(d, c, false);
    }
    out->data[i] = r ? 1 : 0;
  }
  return MX_OK;
}

// ============================================================================================
// Dispatcher
// ============================================================================================

static int ew_arity(mx_opcode_t code) {
  switch (code) {
    case MX_OP_CLAMP:
    case MX_OP_SELECT:
      return 3;
    case MX_OP_COMPARE:
      return 2;
    case MX_OP_CONVERT:
    case MX_OP_BITCAST_CONVERT:
    case MX_OP_REDUCE_PRECISION:
      return 1;
    default: {
      unsigned fl = mx_opcode_flags(code);
      if (fl & MX_OPF_UNARY) return 1;
      if (fl & MX_OPF_BINARY) return 2;
      return -1;
    }
  }
}

mx_status_t mx_interp_elementwise(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                  const mx_tensor_t *const *in, mx_tensor_t *out) {
  (void)ip;
  (void)f;
  if (!op || !in || !out) return mx_error_set(MX_ERR_INVALID_ARG, "elementwise: null argument");
  int arity = ew_arity(op->code);
  if (arity < 0) return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s", ew_name(op));
  if (op->n_operands != arity || op->n_results != 1)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: expected %d operands and 1 result", ew_name(op),
                        arity);
  if (!ew_is_tensor(out))
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: result is not a tensor", ew_name(op));
  int64_t numel = mx_type_numel(&out->type);
  bool scalar_ok = op->code == MX_OP_SELECT || op->code == MX_OP_CLAMP;
  for (int k = 0; k < arity; k++) {
    // select's on_true/on_false and clamp's operand must match the result exactly.
    bool may_be_scalar =
        scalar_ok && ((op->code == MX_OP_SELECT && k == 0) || (op->code == MX_OP_CLAMP && k != 1));
    if (op->code == MX_OP_BITCAST_CONVERT) {
      if (!ew_is_tensor(in[k]))
        return mx_error_set(MX_ERR_INVALID_ARG, "%s: operand is not a tensor", ew_name(op));
      continue;
    }
    mx_status_t st = ew_check_operand(op, in[k], numel, may_be_scalar, k);
    if (st != MX_OK) return st;
  }
  switch (op->code) {
    case MX_OP_SELECT:
      return ew_select(op, in, out);
    case MX_OP_CLAMP:
      return ew_clamp(op, in, out);
    case MX_OP_COMPARE:
      return ew_compare(op, in, out);
    case MX_OP_CONVERT:
      return mx_ew_convert(op, in[0], out);
    case MX_OP_BITCAST_CONVERT:
      return mx_ew_bitcast_convert(op, in[0], out);
    case MX_OP_REDUCE_PRECISION:
      return mx_ew_reduce_precision(op, in[0], out);
    default:
      break;
  }
  mx_elem_type_t et = in[0]->type.elem;
  if (arity == 2) {
    mx_status_t st = ew_same_elem(op, in[0], in[1]);
    if (st != MX_OK) return st;
  }
  if (mx_elem_is_complex(et)) {
    return arity == 1 ? mx_ew_complex_unary(op, in[0], out)
                      : mx_ew_complex_binary(op, in[0], in[1], out);
  }
  if (op->code == MX_OP_COMPLEX) {
    if (!mx_elem_is_float(et)) return mx_ew_unsupported(op, &in[0]->type);
    return mx_ew_complex_binary(op, in[0], in[1], out);
  }
  if (mx_elem_is_float(et)) {
    return arity == 1 ? mx_ew_float_unary(op, in[0], out)
                      : mx_ew_float_binary(op, in[0], in[1], out);
  }
  return arity == 1 ? mx_ew_int_unary(op, in[0], out) : mx_ew_int_binary(op, in[0], in[1], out);
}
