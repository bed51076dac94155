// Element types, small-float codecs, tensor types and heap tensors.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"

// ---- Element type table ----

static const char *const mx_elem_names[MX_ELEM_COUNT] = {[MX_ELEM_INVALID] = "?",
#define MX_X_(e, s) [MX_ELEM_##e] = s,
                                                         MX_ELEM_TYPE_LIST(MX_X_)
#undef MX_X_
};

const char *mx_elem_name(mx_elem_type_t et) {
  return (et > MX_ELEM_INVALID && et < MX_ELEM_COUNT) ? mx_elem_names[et] : "?";
}

mx_elem_type_t mx_elem_from_name(const char *s, size_t n) {
  for (int i = 1; i < MX_ELEM_COUNT; i++) {
    const char *name = mx_elem_names[i];
    if (strlen(name) == n && memcmp(name, s, n) == 0) return (mx_elem_type_t)i;
  }
  return MX_ELEM_INVALID;
}

int mx_elem_bits(mx_elem_type_t et) {
  switch (et) {
    case MX_ELEM_I1:
      return 1;
    case MX_ELEM_I2:
    case MX_ELEM_UI2:
      return 2;
    case MX_ELEM_I4:
    case MX_ELEM_UI4:
    case MX_ELEM_F4E2M1FN:
      return 4;
    case MX_ELEM_F6E2M3FN:
    case MX_ELEM_F6E3M2FN:
      return 6;
    case MX_ELEM_I8:
    case MX_ELEM_UI8:
    case MX_ELEM_F8E3M4:
    case MX_ELEM_F8E4M3:
    case MX_ELEM_F8E4M3FN:
    case MX_ELEM_F8E4M3FNUZ:
    case MX_ELEM_F8E4M3B11FNUZ:
    case MX_ELEM_F8E5M2:
    case MX_ELEM_F8E5M2FNUZ:
    case MX_ELEM_F8E8M0FNU:
      return 8;
    case MX_ELEM_I16:
    case MX_ELEM_UI16:
    case MX_ELEM_BF16:
    case MX_ELEM_F16:
      return 16;
    case MX_ELEM_I32:
    case MX_ELEM_UI32:
    case MX_ELEM_F32:
      return 32;
    case MX_ELEM_I64:
    case MX_ELEM_UI64:
    case MX_ELEM_F64:
    case MX_ELEM_C64:
      return 64;
    case MX_ELEM_C128:
      return 128;
    default:
      return 0;
  }
}

size_t mx_elem_size(mx_elem_type_t et) {
  int bits = mx_elem_bits(et);
  return bits <= 8 ? (bits ? 1 : 0) : (size_t)bits / 8;
}

bool mx_elem_is_bool(mx_elem_type_t et) { return et == MX_ELEM_I1; }
bool mx_elem_is_signed(mx_elem_type_t et) { return et >= MX_ELEM_I2 && et <= MX_ELEM_I64; }
bool mx_elem_is_unsigned(mx_elem_type_t et) { return et >= MX_ELEM_UI2 && et <= MX_ELEM_UI64; }
bool mx_elem_is_int(mx_elem_type_t et) { return mx_elem_is_signed(et) || mx_elem_is_unsigned(et); }
bool mx_elem_is_float(mx_elem_type_t et) { return et >= MX_ELEM_F4E2M1FN && et <= MX_ELEM_F64; }
bool mx_elem_is_complex(mx_elem_type_t et) { return et == MX_ELEM_C64 || et == MX_ELEM_C128; }

// ---- Small float formats ----
//
// Non-finite behaviour follows LLVM's APFloat semantics used by MLIR: IEEE formats have inf and
// NaN; "FN" formats have no inf and a single NaN mantissa (all ones) per sign; "FNUZ" formats
// have no inf, no negative zero and NaN is the negative-zero pattern; finite-only formats (f4, f6)
// saturate on overflow; f8E8M0FNU is an unsigned power of two with 0xFF as NaN.

typedef enum { MX_NF_IEEE, MX_NF_FN, MX_NF_FNUZ, MX_NF_FINITE, MX_NF_E8M0 } mx_nonfinite_t;

typedef struct {
  int ebits, mbits, bias;
  mx_nonfinite_t nf;
} mx_float_fmt_t;

static bool mx_float_fmt(mx_elem_type_t et, mx_float_fmt_t *f) {
  switch (et) {
    case MX_ELEM_F4E2M1FN:
      *f = (mx_float_fmt_t){2, 1, 1, MX_NF_FINITE};
      return true;
    case MX_ELEM_F6E2M3FN:
      *f = (mx_float_fmt_t){2, 3, 1, MX_NF_FINITE};
      return true;
    case MX_ELEM_F6E3M2FN:
      *f = (mx_float_fmt_t){3, 2, 3, MX_NF_FINITE};
      return true;
    case MX_ELEM_F8E3M4:
      *f = (mx_float_fmt_t){3, 4, 3, MX_NF_IEEE};
      return true;
    case MX_ELEM_F8E4M3:
      *f = (mx_float_fmt_t){4, 3, 7, MX_NF_IEEE};
      return true;
    case MX_ELEM_F8E4M3FN:
      *f = (mx_float_fmt_t){4, 3, 7, MX_NF_FN};
      return true;
    case MX_ELEM_F8E4M3FNUZ:
      *f = (mx_float_fmt_t){4, 3, 8, MX_NF_FNUZ};
      return true;
    case MX_ELEM_F8E4M3B11FNUZ:
      *f = (mx_float_fmt_t){4, 3, 11, MX_NF_FNUZ};
      return true;
    case MX_ELEM_F8E5M2:
      *f = (mx_float_fmt_t){5, 2, 15, MX_NF_IEEE};
      return true;
    case MX_ELEM_F8E5M2FNUZ:
      *f = (mx_float_fmt_t){5, 2, 16, MX_NF_FNUZ};
      return true;
    case MX_ELEM_F8E8M0FNU:
      *f = (mx_float_fmt_t){8, 0, 127, MX_NF_E8M0};
      return true;
    case MX_ELEM_BF16:
      *f = (mx_float_fmt_t){8, 7, 127, MX_NF_IEEE};
      return true;
    case MX_ELEM_F16:
      *f = (mx_float_fmt_t){5, 10, 15, MX_NF_IEEE};
      return true;
    default:
      return false;
  }
}

static double mx_small_decode(const mx_float_fmt_t *f, uint64_t bits) {
  if (f->nf == MX_NF_E8M0) {
    unsigned e = (unsigned)(bits & 0xFF);
    return e == 0xFF ? NAN : ldexp(1.0, (int)e - 127);
  }
  uint64_t emask = (1u << f->ebits) - 1, mmask = (1u << f->mbits) - 1;
  bool neg = (bits >> (f->ebits + f->mbits)) & 1;
  uint64_t e = (bits >> f->mbits) & emask, m = bits & mmask;
  double v;
  if (f->nf == MX_NF_FNUZ && neg && e == 0 && m == 0) return NAN;
  if (f->nf == MX_NF_IEEE && e == emask) {
    v = m ? NAN : INFINITY;
  } else if (f->nf == MX_NF_FN && e == emask && m == mmask) {
    v = NAN;
  } else if (e == 0) {
    v = ldexp((double)m, 1 - f->bias - f->mbits);
  } else {
    v = ldexp((double)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
  }
  return neg ? -v : v;
}

static uint64_t mx_small_nan(const mx_float_fmt_t *f, bool neg) {
  uint64_t sign = (uint64_t)neg << (f->ebits + f->mbits);
  uint64_t emask = (1u << f->ebits) - 1, mmask = (1u << f->mbits) - 1;
  switch (f->nf) {
    case MX_NF_IEEE:
      return sign | (emask << f->mbits) | (1u << (f->mbits - 1));
    case MX_NF_FN:
      return sign | (emask << f->mbits) | mmask;
    case MX_NF_FNUZ:
      return 1u << (f->ebits + f->mbits);
    case MX_NF_E8M0:
      return 0xFF;
    case MX_NF_FINITE:
      return sign | (emask << f->mbits) | mmask;  // no NaN: largest magnitude
  }
  return 0;
}

static uint64_t mx_small_encode(const mx_float_fmt_t *f, double x) {
  if (f->nf == MX_NF_E8M0) {
    if (isnan(x) || x < 0) return 0xFF;
    if (x == 0) return 0;  // no zero: smallest value
    int k;
    double m = frexp(x, &k);  // x = m * 2^k, m in [0.5, 1)
    int e = k - 1;
    if (m * 2 >= 1.5) e++;  // nearest power of two; ties go up (the significand 1 is odd)
    if (e + 127 > 254) return 0xFF;
    if (e + 127 < 0) return 0;
    return (uint64_t)(e + 127);
  }
  bool neg = signbit(x) != 0;
  uint64_t sign = (uint64_t)neg << (f->ebits + f->mbits);
  uint64_t emask = (1u << f->ebits) - 1, mmask = (1u << f->mbits) - 1;
  if (isnan(x)) return mx_small_nan(f, neg);
  // Largest finite (exponent field, mantissa) of the format.
  uint64_t max_e = f->nf == MX_NF_IEEE ? emask - 1 : emask;
  uint64_t max_m = f->nf == MX_NF_FN ? mmask - 1 : mmask;
  uint64_t overflow = f->nf == MX_NF_IEEE ? sign | (emask << f->mbits)
                      : (f->nf == MX_NF_FN || f->nf == MX_NF_FNUZ)
                          ? mx_small_nan(f, neg)
                          : sign | (max_e << f->mbits) | max_m;
  double a = fabs(x);
  if (isinf(a)) return overflow;
  if (a == 0) return f->nf == MX_NF_FNUZ ? 0 : sign;
  int k;
  (void)frexp(a, &k);
  int e = k - 1;  // a in [2^e, 2^(e+1))
  int emin = 1 - f->bias;
  if (e < emin) e = emin;
  double r = nearbyint(ldexp(a, f->mbits - e));  // round-to-nearest-even in the current mode
  if (r >= ldexp(1.0, f->mbits + 1)) {
    r = ldexp(r, -1);
    e++;
  }
  uint64_t mant = (uint64_t)r, ef;
  if (mant < (1u << f->mbits)) {
    ef = 0;  // subnormal (or rounded to zero)
  } else {
    ef = (uint64_t)(e + f->bias);
    mant -= 1u << f->mbits;
  }
  if (ef > max_e || (ef == max_e && mant > max_m)) return overflow;
  if (ef == 0 && mant == 0 && f->nf == MX_NF_FNUZ) return 0;
  return sign | (ef << f->mbits) | mant;
}

double mx_float_decode(mx_elem_type_t et, uint64_t bits) {
  if (et == MX_ELEM_F32) {
    uint32_t b = (uint32_t)bits;
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
  }
  if (et == MX_ELEM_F64) {
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
  }
  mx_float_fmt_t f;
  return mx_float_fmt(et, &f) ? mx_small_decode(&f, bits) : NAN;
}

uint64_t mx_float_encode(mx_elem_type_t et, double value) {
  if (et == MX_ELEM_F32) {
    float v = (float)value;
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
  }
  if (et == MX_ELEM_F64) {
    uint64_t b;
    memcpy(&b, &value, sizeof b);
    return b;
  }
  mx_float_fmt_t f;
  return mx_float_fmt(et, &f) ? mx_small_encode(&f, value) : 0;
}

// ---- Types ----

mx_type_t mx_type_tensor(mx_elem_type_t et, int32_t rank, const int64_t *dims) {
  mx_type_t t;
  memset(&t, 0, sizeof t);
  t.kind = MX_TYPE_TENSOR;
  t.elem = et;
  if (rank < 0) rank = 0;
  if (rank > MX_MAX_RANK) rank = MX_MAX_RANK;
  t.rank = rank;
  for (int32_t i = 0; i < rank; i++) t.dims[i] = dims[i];
  return t;
}

mx_type_t mx_type_scalar(mx_elem_type_t et) { return mx_type_tensor(et, 0, NULL); }

int64_t mx_type_numel(const mx_type_t *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i] < 0) return -1;
    if (t->dims[i] != 0 && n > INT64_MAX / t->dims[i]) return -1;
    n *= t->dims[i];
  }
  return n;
}

size_t mx_type_nbytes(const mx_type_t *t) {
  int64_t n = mx_type_numel(t);
  size_t es = mx_elem_size(t->elem);
  if (n < 0 || (es && (uint64_t)n > SIZE_MAX / es)) return SIZE_MAX;
  return (size_t)n * es;
}

bool mx_type_same_shape(const mx_type_t *a, const mx_type_t *b) {
  if (a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool mx_quant_equal(const mx_quant_t *a, const mx_quant_t *b) {
  if (!a || !b) return a == b;
  if (a->expressed != b->expressed || a->storage_min != b->storage_min ||
      a->storage_max != b->storage_max || a->axis != b->axis || a->n != b->n)
    return false;
  for (int32_t i = 0; i < a->n; i++)
    if (a->scales[i] != b->scales[i] || a->zero_points[i] != b->zero_points[i]) return false;
  return true;
}

// Shortest decimal that reads back as the same double.
static void mx_print_double(mx_strbuf_t *sb, double v) {
  char buf[48];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  // MLIR float literals need a '.' or an exponent.
  if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
  mx_strbuf_puts(sb, buf);
}

static void mx_storage_range(mx_elem_type_t et, int64_t *lo, int64_t *hi) {
  int bits = mx_elem_bits(et);
  if (mx_elem_is_unsigned(et)) {
    *lo = 0;
    *hi = bits >= 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << bits) - 1);
  } else {
    *lo = bits >= 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
    *hi = bits >= 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
  }
}

// `!quant.uniform<i8<-127:127>:f32:1, {0.1:-30,0.5}>`: MLIR spells unsigned storage `u8`, omits
// the range when it is the full one, and omits zero points that are 0.
static void mx_quant_print(const mx_type_t *t, mx_strbuf_t *sb) {
  const mx_quant_t *q = t->quant;
  const char *storage = mx_elem_name(t->elem);
  mx_strbuf_puts(sb, "!quant.uniform<");
  if (mx_elem_is_unsigned(t->elem)) {  // "ui8" -> "u8"
    mx_strbuf_puts(sb, "u");
    storage += 2;
  }
  mx_strbuf_puts(sb, storage);
  int64_t lo, hi;
  mx_storage_range(t->elem, &lo, &hi);
  if (q->storage_min != lo || q->storage_max != hi)
    mx_strbuf_printf(sb, "<%lld:%lld>", (long long)q->storage_min, (long long)q->storage_max);
  mx_strbuf_printf(sb, ":%s", mx_elem_name(q->expressed));
  if (q->axis >= 0) mx_strbuf_printf(sb, ":%d", q->axis);
  mx_strbuf_puts(sb, q->axis >= 0 ? ", {" : ", ");
  for (int32_t i = 0; i < q->n; i++) {
    if (i) mx_strbuf_puts(sb, ",");
    mx_print_double(sb, q->scales[i]);
    if (q->zero_points[i]) mx_strbuf_printf(sb, ":%lld", (long long)q->zero_points[i]);
  }
  mx_strbuf_puts(sb, q->axis >= 0 ? "}>" : ">");
}

bool mx_type_equal(const mx_type_t *a, const mx_type_t *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case MX_TYPE_TOKEN:
      return true;
    case MX_TYPE_TENSOR:
      return a->elem == b->elem && mx_type_same_shape(a, b) && mx_quant_equal(a->quant, b->quant);
    case MX_TYPE_TUPLE:
      if (a->n_tuple != b->n_tuple) return false;
      for (int32_t i = 0; i < a->n_tuple; i++)
        if (!mx_type_equal(&a->tuple[i], &b->tuple[i])) return false;
      return true;
  }
  return false;
}

void mx_type_print(const mx_type_t *t, mx_strbuf_t *sb) {
  switch (t->kind) {
    case MX_TYPE_TOKEN:
      mx_strbuf_puts(sb, "!stablehlo.token");
      return;
    case MX_TYPE_TUPLE:
      mx_strbuf_puts(sb, "tuple<");
      for (int32_t i = 0; i < t->n_tuple; i++) {
        if (i) mx_strbuf_puts(sb, ", ");
        mx_type_print(&t->tuple[i], sb);
      }
      mx_strbuf_puts(sb, ">");
      return;
    case MX_TYPE_TENSOR:
      mx_strbuf_puts(sb, "tensor<");
      for (int32_t i = 0; i < t->rank; i++) mx_strbuf_printf(sb, "%lldx", (long long)t->dims[i]);
      if (t->quant)
        mx_quant_print(t, sb);
      else
        mx_strbuf_puts(sb, mx_elem_name(t->elem));
      mx_strbuf_puts(sb, ">");
      return;
  }
}

const char *mx_type_str(const mx_type_t *t, char *buf, size_t n) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_type_print(t, &sb);
  if (n) {
    size_t len = sb.data ? (sb.len < n - 1 ? sb.len : n - 1) : 0;
    if (len) memcpy(buf, sb.data, len);
    buf[len] = '\0';
  }
  mx_strbuf_free(&sb);
  return buf;
}

// ---- Heap tensors ----

mx_status_t mx_tensor_alloc(mx_tensor_t *t, const mx_type_t *type) {
  memset(t, 0, sizeof *t);
  t->type = *type;
  if (type->kind == MX_TYPE_TUPLE) {
    t->n_tuple = type->n_tuple;
    if (type->n_tuple == 0) return MX_OK;
    t->tuple = calloc((size_t)type->n_tuple, sizeof *t->tuple);
    if (!t->tuple) return mx_error_set(MX_ERR_NOMEM, "out of memory allocating a tuple");
    for (int32_t i = 0; i < type->n_tuple; i++) {
      mx_status_t st = mx_tensor_alloc(&t->tuple[i], &type->tuple[i]);
      if (st) {
        mx_tensor_free(t);
        return st;
      }
    }
    return MX_OK;
  }
  if (type->kind == MX_TYPE_TOKEN) return MX_OK;
  size_t n = mx_type_nbytes(type);
  if (n == SIZE_MAX) return mx_error_set(MX_ERR_NOMEM, "tensor size overflows");
  t->data = calloc(n ? n : 1, 1);
  if (!t->data) return mx_error_set(MX_ERR_NOMEM, "out of memory allocating %zu bytes", n);
  t->nbytes = n;
  return MX_OK;
}

mx_status_t mx_tensor_clone(mx_tensor_t *dst, const mx_tensor_t *src) {
  mx_status_t st = mx_tensor_alloc(dst, &src->type);
  if (st) return st;
  if (src->type.kind == MX_TYPE_TUPLE) {
    for (int32_t i = 0; i < src->n_tuple; i++) {
      mx_tensor_free(&dst->tuple[i]);
      st = mx_tensor_clone(&dst->tuple[i], &src->tuple[i]);
      if (st) {
        mx_tensor_free(dst);
        return st;
      }
    }
    return MX_OK;
  }
  if (src->nbytes) memcpy(dst->data, src->data, src->nbytes);
  return MX_OK;
}

void mx_tensor_free(mx_tensor_t *t) {
  if (!t) return;
  for (int32_t i = 0; i < t->n_tuple; i++) mx_tensor_free(&t->tuple[i]);
  free(t->tuple);
  free(t->data);
  memset(t, 0, sizeof *t);
}

static uint64_t mx_load_bits(const uint8_t *p, size_t size) {
  switch (size) {
    case 1:
      return p[0];
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      memcpy(&v, p, 8);
      return v;
    }
  }
}

static void mx_store_bits(uint8_t *p, size_t size, uint64_t v) {
  switch (size) {
    case 1:
      p[0] = (uint8_t)v;
      break;
    case 2: {
      uint16_t x = (uint16_t)v;
      memcpy(p, &x, 2);
      break;
    }
    case 4: {
      uint32_t x = (uint32_t)v;
      memcpy(p, &x, 4);
      break;
    }
    default:
      memcpy(p, &v, 8);
      break;
  }
}

uint64_t mx_tensor_get_u64(const mx_tensor_t *t, int64_t i) {
  mx_elem_type_t et = t->type.elem;
  size_t es = mx_elem_size(et);
  uint64_t v = mx_load_bits(t->data + (size_t)i * es, es < 8 ? es : 8);
  int bits = mx_elem_bits(et);
  if (bits < 64 && !mx_elem_is_complex(et)) v &= (UINT64_C(1) << bits) - 1;
  return v;
}

static int64_t mx_sign_extend(uint64_t v, int bits) {
  if (bits >= 64) return (int64_t)v;
  uint64_t m = UINT64_C(1) << (bits - 1);
  v &= (UINT64_C(1) << bits) - 1;
  return (int64_t)((v ^ m) - m);
}

int64_t mx_tensor_get_i64(const mx_tensor_t *t, int64_t i) {
  mx_elem_type_t et = t->type.elem;
  if (mx_elem_is_signed(et)) return mx_sign_extend(mx_tensor_get_u64(t, i), mx_elem_bits(et));
  if (mx_elem_is_unsigned(et) || mx_elem_is_bool(et)) return (int64_t)mx_tensor_get_u64(t, i);
  double d = mx_tensor_get_f64(t, i);
  if (isnan(d)) return 0;
  if (d >= 9.2233720368547758e18) return INT64_MAX;
  if (d <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)d;
}

double mx_tensor_get_f64(const mx_tensor_t *t, int64_t i) {
  mx_elem_type_t et = t->type.elem;
  if (mx_elem_is_float(et)) return mx_float_decode(et, mx_tensor_get_u64(t, i));
  if (et == MX_ELEM_C64) {
    float v;
    memcpy(&v, t->data + (size_t)i * 8, sizeof v);
    return v;
  }
  if (et == MX_ELEM_C128) {
    double v;
    memcpy(&v, t->data + (size_t)i * 16, sizeof v);
    return v;
  }
  if (mx_elem_is_signed(et)) return (double)mx_tensor_get_i64(t, i);
  return (double)mx_tensor_get_u64(t, i);
}

void mx_tensor_set_i64(mx_tensor_t *t, int64_t i, int64_t v) {
  mx_elem_type_t et = t->type.elem;
  if (mx_elem_is_float(et) || mx_elem_is_complex(et)) {
    mx_tensor_set_f64(t, i, (double)v);
    return;
  }
  if (mx_elem_is_bool(et)) {
    t->data[i] = v != 0;
    return;
  }
  size_t es = mx_elem_size(et);
  int bits = mx_elem_bits(et);
  uint64_t u = (uint64_t)v;
  if (bits < 64) u &= (UINT64_C(1) << bits) - 1;
  if (mx_elem_is_signed(et)) u = (uint64_t)mx_sign_extend(u, bits);  // sub-byte: keep sign
  mx_store_bits(t->data + (size_t)i * es, es, u);
}

void mx_tensor_set_f64(mx_tensor_t *t, int64_t i, double v) {
  mx_elem_type_t et = t->type.elem;
  size_t es = mx_elem_size(et);
  if (mx_elem_is_float(et)) {
    mx_store_bits(t->data + (size_t)i * es, es, mx_float_encode(et, v));
  } else if (et == MX_ELEM_C64) {
    float parts[2] = {(float)v, 0.0f};
    memcpy(t->data + (size_t)i * 8, parts, sizeof parts);
  } else if (et == MX_ELEM_C128) {
    double parts[2] = {v, 0.0};
    memcpy(t->data + (size_t)i * 16, parts, sizeof parts);
  } else if (mx_elem_is_bool(et)) {
    t->data[i] = v != 0;
  } else {
    // Truncation toward zero, saturating at the int64 range (the convert op has its own rules).
    int64_t x = isnan(v)                      ? 0
                : v >= 9.2233720368547758e18  ? INT64_MAX
                : v <= -9.2233720368547758e18 ? INT64_MIN
                                              : (int64_t)v;
    if (mx_elem_is_unsigned(et) && v >= 9.2233720368547758e18 && v < 1.8446744073709552e19)
      x = (int64_t)(uint64_t)v;
    mx_tensor_set_i64(t, i, x);
  }
}
