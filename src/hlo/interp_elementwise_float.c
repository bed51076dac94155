// Reference interpreter: elementwise ops on real floating-point types (f4..f64).
//
// Values are decoded to double, computed in double and rounded back to the element type with
// round-to-nearest-even. For + - * / sqrt this equals computing in the element type itself
// (double has more than 2p+2 bits for every p <= 24), and for the transcendental functions it
// is exactly what the StableHLO reference interpreter does (upcast to double, round back).
// Multi-step formulas (logistic) round every intermediate to the element type, like the
// reference interpreter does.
#include <math.h>

#include "hlo/interp_elementwise_internal.h"

// Types whose sign is a plain sign bit (negation/abs are bit flips, -0 exists).
static bool ew_has_sign_bit(mx_elem_type_t et) {
  switch (et) {
    case MX_ELEM_F8E4M3FNUZ:
    case MX_ELEM_F8E5M2FNUZ:
    case MX_ELEM_F8E4M3B11FNUZ:
    case MX_ELEM_F8E8M0FNU:
      return false;
    default:
      return true;
  }
}

static double ew_sign(double v) {
  if (isnan(v) || v == 0) return v;
  return v < 0 ? -1.0 : 1.0;
}

static double ew_round_afz(double v) { return round(v); }       // ties away from zero
static double ew_round_even(double v) { return nearbyint(v); }  // default mode: ties to even

mx_status_t mx_ew_float_unary(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out) {
  mx_elem_type_t et = x->type.elem, ot = out->type.elem;
  int64_t n = mx_type_numel(&out->type);
  if (op->code == MX_OP_IS_FINITE) {
    if (ot != MX_ELEM_I1) return mx_ew_unsupported(op, &out->type);
    for (int64_t i = 0; i < n; i++) out->data[i] = isfinite(mx_ew_load_real(et, x->data, i));
    return MX_OK;
  }
  if (ot != et) return mx_ew_unsupported(op, &out->type);
  int bits = mx_elem_bits(et);
  uint64_t sign_bit = 1ull << (bits - 1);
  bool bit_ops = ew_has_sign_bit(et);
  switch (op->code) {
    case MX_OP_ABS:
    case MX_OP_NEGATE:
    case MX_OP_REAL:
      // Exact bit operations keep NaN payloads intact.
      for (int64_t i = 0; i < n; i++) {
        if (op->code != MX_OP_REAL && !bit_ops) {
          double v = mx_ew_load_real(et, x->data, i);
          mx_ew_store_real(et, out->data, i, op->code == MX_OP_ABS ? fabs(v) : -v);
          continue;
        }
        uint64_t v = mx_ew_load_bits(et, x->data, i);
        if (op->code == MX_OP_ABS) v &= ~sign_bit;
        if (op->code == MX_OP_NEGATE) v ^= sign_bit;
        mx_ew_store_bits(et, out->data, i, v);
      }
      return MX_OK;
    case MX_OP_SIGN:
      for (int64_t i = 0; i < n; i++) {
        double v = mx_ew_load_real(et, x->data, i);
        if (isnan(v)) {
          mx_ew_store_bits(et, out->data, i, mx_ew_load_bits(et, x->data, i));
        } else {
          mx_ew_store_real(et, out->data, i, ew_sign(v));
        }
      }
      return MX_OK;
    case MX_OP_IMAG:
      for (int64_t i = 0; i < n; i++) mx_ew_store_real(et, out->data, i, 0.0);
      return MX_OK;
    default:
      break;
  }
  double (*fn)(double) = NULL;
  switch (op->code) {
    case MX_OP_CBRT:
      fn = cbrt;
      break;
    case MX_OP_CEIL:
      fn = ceil;
      break;
    case MX_OP_COSINE:
      fn = cos;
      break;
    case MX_OP_EXPONENTIAL:
      fn = exp;
      break;
    case MX_OP_EXPONENTIAL_MINUS_ONE:
      fn = expm1;
      break;
    case MX_OP_FLOOR:
      fn = floor;
      break;
    case MX_OP_LOG:
      fn = log;
      break;
    case MX_OP_LOG_PLUS_ONE:
      fn = log1p;
      break;
    case MX_OP_ROUND_NEAREST_AFZ:
      fn = ew_round_afz;
      break;
    case MX_OP_ROUND_NEAREST_EVEN:
      fn = ew_round_even;
      break;
    case MX_OP_SINE:
      fn = sin;
      break;
    case MX_OP_SQRT:
      fn = sqrt;
      break;
    case MX_OP_TAN:
      fn = tan;
      break;
    case MX_OP_TANH:
      fn = tanh;
      break;
    case MX_OP_RSQRT:
    case MX_OP_LOGISTIC:
      break;
    default:
      return mx_ew_unsupported(op, &x->type);
  }
  for (int64_t i = 0; i < n; i++) {
    double v = mx_ew_load_real(et, x->data, i), r;
    if (fn) {
      r = fn(v);
    } else if (op->code == MX_OP_RSQRT) {
      r = 1.0 / sqrt(v);
    } else {
      // logistic = 1 / (1 + exp(-x)), every step rounded to the element type.
      double e = mx_ew_round(et, exp(-v));
      r = 1.0 / mx_ew_round(et, 1.0 + e);
    }
    mx_ew_store_real(et, out->data, i, r);
  }
  return MX_OK;
}

mx_status_t mx_ew_float_binary(const mx_op_t *op, const mx_tensor_t *a, const mx_tensor_t *b,
                               mx_tensor_t *out) {
  mx_elem_type_t et = a->type.elem;
  if (out->type.elem != et) return mx_ew_unsupported(op, &out->type);
  switch (op->code) {
    case MX_OP_ADD:
    case MX_OP_SUBTRACT:
    case MX_OP_MULTIPLY:
    case MX_OP_DIVIDE:
    case MX_OP_REMAINDER:
    case MX_OP_MAXIMUM:
    case MX_OP_MINIMUM:
    case MX_OP_POWER:
    case MX_OP_ATAN2:
      break;
    default:
      return mx_ew_unsupported(op, &a->type);
  }
  int64_t n = mx_type_numel(&out->type);
  for (int64_t i = 0; i < n; i++) {
    double x = mx_ew_load_real(et, a->data, i), y = mx_ew_load_real(et, b->data, i), r;
    switch (op->code) {
      case MX_OP_ADD:
        r = x + y;
        break;
      case MX_OP_SUBTRACT:
        r = x - y;
        break;
      case MX_OP_MULTIPLY:
        r = x * y;
        break;
      case MX_OP_DIVIDE:
        r = x / y;
        break;
      case MX_OP_REMAINDER:
        r = fmod(x, y);
        break;  // quotient truncated: sign of dividend
      case MX_OP_MAXIMUM:
        r = mx_ew_fmax(x, y);
        break;
      case MX_OP_MINIMUM:
        r = mx_ew_fmin(x, y);
        break;
      case MX_OP_POWER:
        r = pow(x, y);
        break;
      default:
        r = atan2(x, y);
        break;
    }
    mx_ew_store_real(et, out->data, i, r);
  }
  return MX_OK;
}
