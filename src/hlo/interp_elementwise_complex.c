// Reference interpreter: elementwise ops on complex<f32> and complex<f64>.
//
// Component-wise + - * are done in the component type (every partial product and sum rounded
// to f32 for complex<f32>), like the StableHLO reference interpreter; division and the
// transcendental functions are computed on complex<double> (C99 complex.h, the same libm
// routines std::complex uses) and rounded back.
#include <complex.h>
#include <math.h>

#include "hlo/interp_elementwise_internal.h"

typedef struct {
  double re, im;
} ew_c_t;

static ew_c_t ew_c(double re, double im) {
  ew_c_t z = {re, im};
  return z;
}
// CMPLX is C11 but clang 14 with glibc lacks it; build the value through its array layout
// (C17 6.2.5p13: a complex is laid out as two reals).
static double complex ew_cmplx(double re, double im) {
  double complex z;
  ((double *)&z)[0] = re;
  ((double *)&z)[1] = im;
  return z;
}

static double complex ew_to_cx(ew_c_t z) { return ew_cmplx(z.re, z.im); }
static ew_c_t ew_from_cx(double complex z) { return ew_c(creal(z), cimag(z)); }

// Rounds to the component type `pt` (F32 or F64).
static double ew_r(mx_elem_type_t pt, double v) { return mx_ew_round(pt, v); }

static ew_c_t ew_cadd(mx_elem_type_t pt, ew_c_t a, ew_c_t b) {
  return ew_c(ew_r(pt, a.re + b.re), ew_r(pt, a.im + b.im));
}
static ew_c_t ew_csub(mx_elem_type_t pt, ew_c_t a, ew_c_t b) {
  return ew_c(ew_r(pt, a.re - b.re), ew_r(pt, a.im - b.im));
}
static ew_c_t ew_cmul(mx_elem_type_t pt, ew_c_t a, ew_c_t b) {
  double re = ew_r(pt, ew_r(pt, a.re * b.re) - ew_r(pt, a.im * b.im));
  double im = ew_r(pt, ew_r(pt, a.re * b.im) + ew_r(pt, a.im * b.re));
  return ew_c(re, im);
}
static ew_c_t ew_cround(mx_elem_type_t pt, ew_c_t z) {
  return ew_c(ew_r(pt, z.re), ew_r(pt, z.im));
}
static ew_c_t ew_cdiv(mx_elem_type_t pt, ew_c_t a, ew_c_t b) {
  return ew_cround(pt, ew_from_cx(ew_to_cx(a) / ew_to_cx(b)));
}

// Complex atan2(y, x) = -i * log((x + i*y) / sqrt(x*x + y*y)), each step in the element type.
static ew_c_t ew_catan2(mx_elem_type_t pt, ew_c_t y, ew_c_t x) {
  ew_c_t i = ew_c(0.0, 1.0);
  ew_c_t num = ew_cadd(pt, x, ew_cmul(pt, i, y));
  ew_c_t den =
      ew_cround(pt, ew_from_cx(csqrt(ew_to_cx(ew_cadd(pt, ew_cmul(pt, x, x), ew_cmul(pt, y, y))))));
  ew_c_t l = ew_cround(pt, ew_from_cx(clog(ew_to_cx(ew_cdiv(pt, num, den)))));
  return ew_cmul(pt, ew_c(-0.0, -1.0), l);
}

static ew_c_t ew_cunary(mx_opcode_t code, mx_elem_type_t pt, ew_c_t z) {
  double complex c = ew_to_cx(z);
  switch (code) {
    case MX_OP_NEGATE:
      return ew_c(-z.re, -z.im);
    case MX_OP_EXPONENTIAL:
      return ew_from_cx(cexp(c));
    case MX_OP_EXPONENTIAL_MINUS_ONE: {
      double complex e = cexp(c);
      return ew_c(creal(e) - 1.0, cimag(e) - 0.0);
    }
    case MX_OP_LOG:
      return ew_from_cx(clog(c));
    case MX_OP_LOG_PLUS_ONE:
      return ew_from_cx(clog(ew_cmplx(z.re + 1.0, z.im)));
    case MX_OP_SQRT:
      return ew_from_cx(csqrt(c));
    case MX_OP_RSQRT:
      return ew_from_cx(1.0 / csqrt(c));
    case MX_OP_SINE:
      return ew_from_cx(csin(c));
    case MX_OP_COSINE:
      return ew_from_cx(ccos(c));
    case MX_OP_TAN:
      return ew_from_cx(ctan(c));
    case MX_OP_TANH:
      return ew_from_cx(ctanh(c));
    case MX_OP_CBRT: {
      double theta = atan2(z.im, z.re) / 3.0;
      double r = pow(pow(z.re, 2.0) + pow(z.im, 2.0), 1.0 / 6.0);
      return ew_c(r * cos(theta), r * sin(theta));
    }
    case MX_OP_LOGISTIC: {
      // 1 / (1 + exp(-z)), with the reference interpreter's intermediate roundings.
      ew_c_t e = ew_cround(pt, ew_from_cx(cexp(ew_cmplx(-z.re, -z.im))));
      ew_c_t one = ew_c(1.0, 0.0);
      return ew_cdiv(pt, one, ew_cadd(pt, one, e));
    }
    default: {  // SIGN
      if (isnan(z.re) || isnan(z.im)) return ew_c(NAN, NAN);
      if (z.re == 0 && z.im == 0) return ew_c(0.0, 0.0);
      double a = ew_r(pt, cabs(c));
      return ew_cdiv(pt, z, ew_c(a, 0.0));
    }
  }
}

mx_status_t mx_ew_complex_unary(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out) {
  mx_elem_type_t et = x->type.elem, ot = out->type.elem, pt = mx_ew_complex_part(et);
  int64_t n = mx_type_numel(&out->type);
  switch (op->code) {
    case MX_OP_ABS:
    case MX_OP_REAL:
    case MX_OP_IMAG:
      if (ot != pt) return mx_ew_unsupported(op, &out->type);
      for (int64_t i = 0; i < n; i++) {
        double re, im;
        mx_ew_load_complex(et, x->data, i, &re, &im);
        double r = op->code == MX_OP_ABS    ? cabs(ew_cmplx(re, im))
                   : op->code == MX_OP_REAL ? re
                                            : im;
        mx_ew_store_real(pt, out->data, i, r);
      }
      return MX_OK;
    case MX_OP_NEGATE:
    case MX_OP_EXPONENTIAL:
    case MX_OP_EXPONENTIAL_MINUS_ONE:
    case MX_OP_LOG:
    case MX_OP_LOG_PLUS_ONE:
    case MX_OP_SQRT:
    case MX_OP_RSQRT:
    case MX_OP_SINE:
    case MX_OP_COSINE:
    case MX_OP_TAN:
    case MX_OP_TANH:
    case MX_OP_CBRT:
    case MX_OP_LOGISTIC:
    case MX_OP_SIGN:
      break;
    default:
      return mx_ew_unsupported(op, &x->type);
  }
  if (ot != et) return mx_ew_unsupported(op, &out->type);
  for (int64_t i = 0; i < n; i++) {
    ew_c_t z;
    mx_ew_load_complex(et, x->data, i, &z.re, &z.im);
    ew_c_t r = ew_cunary(op->code, pt, z);
    mx_ew_store_complex(et, out->data, i, r.re, r.im);
  }
  return MX_OK;
}

static bool ew_lex_greater(ew_c_t a, ew_c_t b) { return a.re == b.re ? a.im > b.im : a.re > b.re; }
static bool ew_lex_less(ew_c_t a, ew_c_t b) { return a.re == b.re ? a.im < b.im : a.re < b.re; }

mx_status_t mx_ew_complex_binary(const mx_op_t *op, const mx_tensor_t *a, const mx_tensor_t *b,
                                 mx_tensor_t *out) {
  mx_elem_type_t et = a->type.elem, ot = out->type.elem;
  int64_t n = mx_type_numel(&out->type);
  if (op->code == MX_OP_COMPLEX) {
    // complex(real, imag): f32 pairs make complex<f32>, f64 pairs complex<f64>.
    mx_elem_type_t want = et == MX_ELEM_F32   ? MX_ELEM_C64
                          : et == MX_ELEM_F64 ? MX_ELEM_C128
                                              : MX_ELEM_INVALID;
    if (ot != want) return mx_ew_unsupported(op, &a->type);
    for (int64_t i = 0; i < n; i++)
      mx_ew_store_complex(ot, out->data, i, mx_ew_load_real(et, a->data, i),
                          mx_ew_load_real(et, b->data, i));
    return MX_OK;
  }
  switch (op->code) {
    case MX_OP_ADD:
    case MX_OP_SUBTRACT:
    case MX_OP_MULTIPLY:
    case MX_OP_DIVIDE:
    case MX_OP_POWER:
    case MX_OP_ATAN2:
    case MX_OP_MAXIMUM:
    case MX_OP_MINIMUM:
      break;
    default:
      return mx_ew_unsupported(op, &a->type);
  }
  if (ot != et) return mx_ew_unsupported(op, &out->type);
  mx_elem_type_t pt = mx_ew_complex_part(et);
  for (int64_t i = 0; i < n; i++) {
    ew_c_t x, y, r;
    mx_ew_load_complex(et, a->data, i, &x.re, &x.im);
    mx_ew_load_complex(et, b->data, i, &y.re, &y.im);
    switch (op->code) {
      case MX_OP_ADD:
        r = ew_cadd(pt, x, y);
        break;
      case MX_OP_SUBTRACT:
        r = ew_csub(pt, x, y);
        break;
      case MX_OP_MULTIPLY:
        r = ew_cmul(pt, x, y);
        break;
      case MX_OP_DIVIDE:
        r = ew_cdiv(pt, x, y);
        break;
      case MX_OP_POWER:
        r = ew_from_cx(cpow(ew_to_cx(x), ew_to_cx(y)));
        break;
      case MX_OP_ATAN2:
        r = ew_catan2(pt, x, y);
        break;
      case MX_OP_MAXIMUM:
        r = ew_lex_greater(x, y) ? x : y;
        break;
      default:
        r = ew_lex_less(x, y) ? x : y;
        break;  // MINIMUM
    }
    mx_ew_store_complex(et, out->data, i, r.re, r.im);
  }
  return MX_OK;
}
