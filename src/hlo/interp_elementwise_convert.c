// Reference interpreter: convert, bitcast_convert and reduce_precision.
//
// convert follows the StableHLO reference interpreter where the spec leaves behaviour open:
// float -> int truncates toward zero and saturates (NaN -> 0, negative -> 0 for unsigned);
// int -> float and float -> float round to nearest even; anything -> i1 is (x != 0) using the
// real part of complex values; complex -> real drops the imaginary part.
#include <math.h>
#include <string.h>

#include "hlo/interp_elementwise_internal.h"

typedef enum { EW_K_BOOL, EW_K_SINT, EW_K_UINT, EW_K_FLOAT, EW_K_COMPLEX } ew_kind_t;

static ew_kind_t ew_kind(mx_elem_type_t et) {
  if (et == MX_ELEM_I1) return EW_K_BOOL;
  if (mx_elem_is_signed(et)) return EW_K_SINT;
  if (mx_elem_is_unsigned(et)) return EW_K_UINT;
  if (mx_elem_is_complex(et)) return EW_K_COMPLEX;
  return EW_K_FLOAT;
}

// |v| as a double rounded to 53 bits with round-to-odd, so that a second rounding to any
// narrower format (p <= 51) is still correctly rounded.
static double ew_u64_to_double_odd(uint64_t mag) {
  if (mag < (1ull << 53)) return (double)mag;
  int s = 0;
  while ((mag >> s) >= (1ull << 53)) s++;
  uint64_t keep = mag >> s;
  if (mag & ((1ull << s) - 1)) keep |= 1;
  return ldexp((double)keep, s);
}

// Integer (given as signed/unsigned 64-bit) to a real float type, correctly rounded.
static void ew_store_int_as_float(mx_elem_type_t ft, uint8_t *data, int64_t i, uint64_t raw,
                                  bool is_signed) {
  bool neg = is_signed && (int64_t)raw < 0;
  uint64_t mag = neg ? 0 - raw : raw;
  if (ft == MX_ELEM_F64 || ft == MX_ELEM_F32) {
    // The C conversions round to nearest even straight from the integer.
    double d;
    if (ft == MX_ELEM_F32) {
      float fv = is_signed ? (float)(int64_t)raw : (float)raw;
      d = fv;
    } else {
      d = is_signed ? (double)(int64_t)raw : (double)raw;
    }
    mx_ew_store_real(ft, data, i, d);
    return;
  }
  double d = ew_u64_to_double_odd(mag);
  mx_ew_store_real(ft, data, i, neg ? -d : d);
}

// Float (as double) to an integer type: truncate, saturate, NaN -> 0.
static uint64_t ew_float_to_int(double v, int bits, bool is_signed) {
  if (isnan(v)) return 0;
  double t = trunc(v);
  if (is_signed) {
    double lim = ldexp(1.0, bits - 1);
    if (t >= lim) return mx_ew_mask(bits - 1);                     // INT_MAX
    if (t < -lim) return (1ull << (bits - 1)) & mx_ew_mask(bits);  // INT_MIN
    return (uint64_t)(int64_t)t & mx_ew_mask(bits);
  }
  if (t <= 0) return 0;
  if (t >= ldexp(1.0, bits)) return mx_ew_mask(bits);
  return (uint64_t)t;
}

mx_status_t mx_ew_convert(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out) {
  (void)op;
  mx_elem_type_t st = x->type.elem, dt = out->type.elem;
  ew_kind_t sk = ew_kind(st), dk = ew_kind(dt);
  int dbits = mx_elem_bits(dt), sbits = mx_elem_bits(st);
  int64_t n = mx_type_numel(&out->type);
  for (int64_t i = 0; i < n; i++) {
    // Source value: integers as raw 64-bit (sign- or zero-extended), floats as re (+ im).
    uint64_t iv = 0;
    double re = 0, im = 0;
    switch (sk) {
      case EW_K_BOOL:
        iv = x->data[i] != 0;
        break;
      case EW_K_SINT:
        iv = (uint64_t)mx_ew_sext(mx_ew_load_bits(st, x->data, i), sbits);
        break;
      case EW_K_UINT:
        iv = mx_ew_load_bits(st, x->data, i);
        break;
      case EW_K_FLOAT:
        re = mx_ew_load_real(st, x->data, i);
        break;
      case EW_K_COMPLEX:
        mx_ew_load_complex(st, x->data, i, &re, &im);
        break;
    }
    bool from_int = sk == EW_K_BOOL || sk == EW_K_SINT || sk == EW_K_UINT;
    switch (dk) {
      case EW_K_BOOL:
        out->data[i] = from_int ? iv != 0 : re != 0;  // NaN != 0 is true
        break;
      case EW_K_SINT:
      case EW_K_UINT:
        mx_ew_store_bits(dt, out->data, i,
                         from_int ? iv : ew_float_to_int(re, dbits, dk == EW_K_SINT));
        break;
      case EW_K_FLOAT:
        if (from_int) {
          ew_store_int_as_float(dt, out->data, i, iv, sk == EW_K_SINT);
        } else {
          mx_ew_store_real(dt, out->data, i, re);
        }
        break;
      case EW_K_COMPLEX: {
        mx_elem_type_t pt = mx_ew_complex_part(dt);
        if (from_int) {
          // Round the integer into the component type first (exactly, via the float path).
          uint8_t tmp[8];
          ew_store_int_as_float(pt, tmp, 0, iv, sk == EW_K_SINT);
          re = mx_ew_load_real(pt, tmp, 0);
        }
        mx_ew_store_complex(dt, out->data, i, re, sk == EW_K_COMPLEX ? im : 0.0);
        break;
      }
    }
  }
  return MX_OK;
}

// ---- bitcast_convert ----

static int ew_get_bit(const mx_tensor_t *t, int w, int64_t b) {
  if (w % 8 == 0) return (t->data[b >> 3] >> (b & 7)) & 1;
  int64_t e = b / w;
  int k = (int)(b % w);
  if (t->type.elem == MX_ELEM_I1) return t->data[e] != 0;
  return (t->data[e] >> k) & 1;
}

mx_status_t mx_ew_bitcast_convert(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out) {
  int win = mx_elem_bits(x->type.elem), wout = mx_elem_bits(out->type.elem);
  int64_t nin = mx_type_numel(&x->type), nout = mx_type_numel(&out->type);
  if (win <= 0 || wout <= 0 || nin * win != nout * wout)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "%s: %lld x %d bits cannot be reinterpreted as %lld x %d",
                        op->name ? op->name : "stablehlo.bitcast_convert", (long long)nin, win,
                        (long long)nout, wout);
  int64_t total = nin * win;
  if (total == 0) return MX_OK;
  if (win % 8 == 0 && wout % 8 == 0) {
    // Byte-aligned types are stored as their little-endian bit patterns.
    memcpy(out->data, x->data, (size_t)(total / 8));
    return MX_OK;
  }
  if (wout % 8 == 0) {
    memset(out->data, 0, (size_t)(total / 8));
    for (int64_t b = 0; b < total; b++)
      if (ew_get_bit(x, win, b)) out->data[b >> 3] |= (uint8_t)(1u << (b & 7));
    return MX_OK;
  }
  for (int64_t j = 0; j < nout; j++) {
    uint64_t raw = 0;
    for (int k = 0; k < wout; k++) raw |= (uint64_t)ew_get_bit(x, win, j * wout + k) << k;
    mx_ew_store_bits(out->type.elem, out->data, j, raw);
  }
  return MX_OK;
}

// ---- reduce_precision ----

// Explicit mantissa (trailing significand) bits of each float type.
static int ew_mantissa_bits(mx_elem_type_t et) {
  switch (et) {
    case MX_ELEM_F4E2M1FN:
      return 1;
    case MX_ELEM_F6E2M3FN:
      return 3;
    case MX_ELEM_F6E3M2FN:
      return 2;
    case MX_ELEM_F8E3M4:
      return 4;
    case MX_ELEM_F8E4M3:
    case MX_ELEM_F8E4M3FN:
    case MX_ELEM_F8E4M3FNUZ:
    case MX_ELEM_F8E4M3B11FNUZ:
      return 3;
    case MX_ELEM_F8E5M2:
    case MX_ELEM_F8E5M2FNUZ:
      return 2;
    case MX_ELEM_F8E8M0FNU:
      return 0;
    case MX_ELEM_BF16:
      return 7;
    case MX_ELEM_F16:
      return 10;
    case MX_ELEM_F32:
      return 23;
    case MX_ELEM_F64:
      return 52;
    default:
      return -1;
  }
}

static bool ew_attr_int(const mx_op_t *op, const char *name, int64_t *v) {
  const mx_attr_t *a = mx_op_attr(op, name);
  if (!a || a->kind != MX_ATTR_INT) return false;
  *v = a->i;
  return true;
}

mx_status_t mx_ew_reduce_precision(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out) {
  mx_elem_type_t et = x->type.elem;
  int src_m = ew_mantissa_bits(et);
  if (src_m < 0 || out->type.elem != et) return mx_ew_unsupported(op, &x->type);
  int64_t eb, mb;
  if (!ew_attr_int(op, "exponent_bits", &eb) || !ew_attr_int(op, "mantissa_bits", &mb) || eb < 1 ||
      mb < 0)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "%s: needs integer exponent_bits >= 1 and mantissa_bits >= 0",
                        op->name ? op->name : "stablehlo.reduce_precision");
  int width = mx_elem_bits(et);
  int src_e = width - src_m - 1;
  uint64_t wmask = mx_ew_mask(width);
  int64_t n = mx_type_numel(&out->type);
  for (int64_t i = 0; i < n; i++) {
    uint64_t bits = mx_ew_load_bits(et, x->data, i), v = bits;
    if (mb < src_m) {
      // Round the mantissa to `mb` bits, ties to even, then clear the dropped bits.
      int drop = src_m - (int)mb;
      uint64_t last = 1ull << drop;
      uint64_t bias = (last >> 1) - 1 + ((v & last) >> drop);
      v = (v + bias) & ~(last - 1) & wmask;
    }
    if (eb < src_e && src_e >= 2) {
      // Exponents outside the reduced range overflow to inf / underflow to zero (no
      // denormals in the reduced format).
      uint64_t sign = 1ull << (width - 1);
      uint64_t exp_mask = mx_ew_mask(src_e) << src_m;
      uint64_t bias = (1ull << (src_e - 1)) - 1;
      uint64_t rbias = (1ull << (eb - 1)) - 1;
      uint64_t max_e = bias + rbias, min_e = bias - rbias;
      uint64_t e = v & exp_mask;
      if (e > (max_e << src_m)) {
        v = (v & sign) | exp_mask;
      } else if (e <= (min_e << src_m)) {
        v &= sign;
      }
    }
    double orig = mx_ew_load_real(et, x->data, i);
    if (isnan(orig)) {
      // NaN stays NaN unless no mantissa bits remain (then it became an infinity).
      v = mb > 0 ? bits : mx_float_encode(et, INFINITY);
    }
    mx_ew_store_bits(et, out->data, i, v);
  }
  return MX_OK;
}
