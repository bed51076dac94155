// Direct tests of the elementwise kernels (mx_interp_elementwise) on hand-built ops and
// tensors: wrap-around, division by zero, shifts, rounding ties, NaN/-0 semantics, conversions,
// bitcasts, reduce_precision, complex arithmetic, select/clamp broadcasting of scalars.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hlo/interp_internal.h"
#include "mlxcel/hlo.h"
#include "mx_test.h"

// ---- helpers ----

static mx_tensor_t vec(mx_elem_type_t et, int64_t n) {
  mx_tensor_t t;
  memset(&t, 0, sizeof t);
  mx_type_t ty = n < 0 ? mx_type_scalar(et) : mx_type_tensor(et, 1, &n);
  mx_status_t st = mx_tensor_alloc(&t, &ty);
  (void)st;
  return t;
}

static mx_tensor_t ivec(mx_elem_type_t et, int64_t n, const int64_t *v) {
  mx_tensor_t t = vec(et, n);
  for (int64_t i = 0; i < (n < 0 ? 1 : n); i++) mx_tensor_set_i64(&t, i, v[i]);
  return t;
}

static mx_tensor_t fvec(mx_elem_type_t et, int64_t n, const double *v) {
  mx_tensor_t t = vec(et, n);
  for (int64_t i = 0; i < (n < 0 ? 1 : n); i++) mx_tensor_set_f64(&t, i, v[i]);
  return t;
}

static mx_tensor_t cvec(mx_elem_type_t et, int64_t n, const double *re_im) {
  mx_tensor_t t = vec(et, n);
  for (int64_t i = 0; i < n; i++) {
    if (et == MX_ELEM_C64) {
      float p[2] = {(float)re_im[2 * i], (float)re_im[2 * i + 1]};
      memcpy(t.data + 8 * i, p, 8);
    } else {
      memcpy(t.data + 16 * i, re_im + 2 * i, 16);
    }
  }
  return t;
}

// Runs `code` on up to three operands producing a tensor of type `rt` (shape of `shape_of`
// unless rt_rank1 >= 0, which sets a rank-1 result of that length).
static mx_status_t run_op(mx_opcode_t code, const mx_named_attr_t *attrs, int n_attrs,
                          mx_elem_type_t rt, int64_t rlen, int n_in, const mx_tensor_t *a,
                          const mx_tensor_t *b, const mx_tensor_t *c, mx_tensor_t *out) {
  mx_op_t op;
  memset(&op, 0, sizeof op);
  op.code = code;
  op.name = mx_opcode_name(code);
  op.n_operands = n_in;
  op.n_results = 1;
  op.n_attrs = n_attrs;
  op.attrs = (mx_named_attr_t *)attrs;
  memset(out, 0, sizeof *out);
  *out = vec(rt, rlen);
  const mx_tensor_t *in[3] = {a, b, c};
  return mx_interp_elementwise(NULL, NULL, &op, in, out);
}

static mx_tensor_t un(mx_opcode_t code, mx_elem_type_t rt, const mx_tensor_t *a) {
  mx_tensor_t out;
  int64_t n = a->type.rank ? a->type.dims[0] : -1;
  CHECK_OK(run_op(code, NULL, 0, rt, n, 1, a, NULL, NULL, &out));
  return out;
}

static mx_tensor_t bin(mx_opcode_t code, const mx_tensor_t *a, const mx_tensor_t *b) {
  mx_tensor_t out;
  int64_t n = a->type.rank ? a->type.dims[0] : -1;
  CHECK_OK(run_op(code, NULL, 0, a->type.elem, n, 2, a, b, NULL, &out));
  return out;
}

static void expect_ints(const mx_tensor_t *t, const int64_t *want, int64_t n, int line) {
  for (int64_t i = 0; i < n; i++) {
    int64_t got = mx_tensor_get_i64(t, i);
    CHECK_MSG(got == want[i], "line %d elem %lld: got %lld want %lld", line, (long long)i,
              (long long)got, (long long)want[i]);
  }
}

static bool same_f(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return a == b && signbit(a) == signbit(b);
}

static void expect_f(const mx_tensor_t *t, const double *want, int64_t n, int line) {
  for (int64_t i = 0; i < n; i++) {
    double got = mx_tensor_get_f64(t, i);
    CHECK_MSG(same_f(got, want[i]), "line %d elem %lld: got %.17g want %.17g", line, (long long)i,
              got, want[i]);
  }
}

#define EXPECT_INTS(t, ...)                                               \
  do {                                                                    \
    const int64_t w_[] = {__VA_ARGS__};                                   \
    expect_ints(&(t), w_, (int64_t)(sizeof w_ / sizeof w_[0]), __LINE__); \
  } while (0)
#define EXPECT_F(t, ...)                                               \
  do {                                                                 \
    const double w_[] = {__VA_ARGS__};                                 \
    expect_f(&(t), w_, (int64_t)(sizeof w_ / sizeof w_[0]), __LINE__); \
  } while (0)
#define IV(et, ...) \
  ivec(et, (int64_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define FV(et, ...) \
  fvec(et, (int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), (double[]){__VA_ARGS__})

static void free_all(mx_tensor_t *a, mx_tensor_t *b, mx_tensor_t *c) {
  mx_tensor_free(a);
  mx_tensor_free(b);
  mx_tensor_free(c);
}

// ---- integer tests ----

static void test_int_wrap(void) {
  mx_tensor_t a = IV(MX_ELEM_I4, 7, -8, 5, -1), b = IV(MX_ELEM_I4, 1, -1, 5, 1);
  mx_tensor_t r = bin(MX_OP_ADD, &a, &b);
  EXPECT_INTS(r, -8, 7, -6, 0);
  mx_tensor_free(&r);
  r = bin(MX_OP_MULTIPLY, &a, &b);
  EXPECT_INTS(r, 7, -8, -7, -1);  // -8 * -1 wraps to -8; 25 wraps to 9 - 16 = -7
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_I2, 1, -2, 0, -1);
  b = IV(MX_ELEM_I2, 1, -1, -1, -1);
  r = bin(MX_OP_ADD, &a, &b);
  EXPECT_INTS(r, -2, 1, -1, -2);
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_UI4, 15, 0, 9);
  b = IV(MX_ELEM_UI4, 1, 1, 9);
  r = bin(MX_OP_ADD, &a, &b);
  EXPECT_INTS(r, 0, 1, 2);
  mx_tensor_free(&r);
  r = bin(MX_OP_SUBTRACT, &a, &b);
  EXPECT_INTS(r, 14, 15, 0);
  mx_tensor_free(&r);
  r = un(MX_OP_NEGATE, MX_ELEM_UI4, &a);
  EXPECT_INTS(r, 1, 0, 7);
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_I8, -128, -5, 0, 7);
  r = un(MX_OP_ABS, MX_ELEM_I8, &a);
  EXPECT_INTS(r, -128, 5, 0, 7);
  mx_tensor_free(&r);
  r = un(MX_OP_NEGATE, MX_ELEM_I8, &a);
  EXPECT_INTS(r, -128, 5, 0, -7);
  mx_tensor_free(&r);
  r = un(MX_OP_SIGN, MX_ELEM_I8, &a);
  EXPECT_INTS(r, -1, -1, 0, 1);
  mx_tensor_free(&r);
  r = un(MX_OP_NOT, MX_ELEM_I8, &a);
  EXPECT_INTS(r, 127, 4, -1, -8);
  free_all(&a, &r, NULL);
}

static void test_int_div(void) {
  mx_tensor_t a = IV(MX_ELEM_I32, 17, -17, 5, INT32_MIN, INT32_MIN, 7);
  mx_tensor_t b = IV(MX_ELEM_I32, 3, 3, 0, -1, 0, -2);
  mx_tensor_t r = bin(MX_OP_DIVIDE, &a, &b);
  EXPECT_INTS(r, 5, -5, -1, INT32_MIN, -1, -3);
  mx_tensor_free(&r);
  r = bin(MX_OP_REMAINDER, &a, &b);
  EXPECT_INTS(r, 2, -2, 5, 0, INT32_MIN, 1);
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_I64, INT64_MIN, 9);
  b = IV(MX_ELEM_I64, -1, 0);
  r = bin(MX_OP_DIVIDE, &a, &b);
  EXPECT_INTS(r, INT64_MIN, -1);
  mx_tensor_free(&r);
  r = bin(MX_OP_REMAINDER, &a, &b);
  EXPECT_INTS(r, 0, 9);
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_UI8, 7, 200, 200);
  b = IV(MX_ELEM_UI8, 0, 7, 0);
  r = bin(MX_OP_DIVIDE, &a, &b);
  EXPECT_INTS(r, 255, 28, 255);
  mx_tensor_free(&r);
  r = bin(MX_OP_REMAINDER, &a, &b);
  EXPECT_INTS(r, 7, 4, 200);
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_I4, -8, -8, 7);
  b = IV(MX_ELEM_I4, -1, 0, 2);
  r = bin(MX_OP_DIVIDE, &a, &b);
  EXPECT_INTS(r, -8, -1, 3);
  free_all(&a, &b, &r);
}

static void test_int_shift_pow_bits(void) {
  mx_tensor_t a = IV(MX_ELEM_I8, 1, 1, -1, -128, -128, 64, -1);
  mx_tensor_t b = IV(MX_ELEM_I8, 7, 8, 1, 9, -1, 1, 0);
  mx_tensor_t r = bin(MX_OP_SHIFT_LEFT, &a, &b);
  EXPECT_INTS(r, -128, 0, -2, 0, 0, -128, -1);
  mx_tensor_free(&r);
  r = bin(MX_OP_SHIFT_RIGHT_ARITHMETIC, &a, &b);
  EXPECT_INTS(r, 0, 0, -1, -1, -1, 32, -1);
  mx_tensor_free(&r);
  r = bin(MX_OP_SHIFT_RIGHT_LOGICAL, &a, &b);
  EXPECT_INTS(r, 0, 0, 127, 0, 0, 32, -1);
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_I64, -1, 0, 8);
  b = IV(MX_ELEM_I64, 1, 2, 3);
  r = bin(MX_OP_SHIFT_RIGHT_LOGICAL, &a, &b);
  EXPECT_INTS(r, INT64_MAX, 0, 1);
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_I32, 2, 2, -1, -1, 1, 3, 0);
  b = IV(MX_ELEM_I32, 10, -1, -3, -4, -7, 0, 0);
  r = bin(MX_OP_POWER, &a, &b);
  EXPECT_INTS(r, 1024, 0, -1, 1, 1, 1, 1);
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_I4, 1, 0, -1, 5);
  r = un(MX_OP_COUNT_LEADING_ZEROS, MX_ELEM_I4, &a);
  EXPECT_INTS(r, 3, 4, 0, 1);
  mx_tensor_free(&r);
  r = un(MX_OP_POPCNT, MX_ELEM_I4, &a);
  EXPECT_INTS(r, 1, 0, 4, 2);
  free_all(&a, &r, NULL);

  a = IV(MX_ELEM_UI64, 0, 1, -1);
  r = un(MX_OP_COUNT_LEADING_ZEROS, MX_ELEM_UI64, &a);
  EXPECT_INTS(r, 64, 63, 0);
  mx_tensor_free(&r);
  r = un(MX_OP_POPCNT, MX_ELEM_UI64, &a);
  EXPECT_INTS(r, 0, 1, 64);
  free_all(&a, &r, NULL);

  a = IV(MX_ELEM_I16, -3, 4);
  b = IV(MX_ELEM_I16, 2, -4);
  r = bin(MX_OP_MAXIMUM, &a, &b);
  EXPECT_INTS(r, 2, 4);
  mx_tensor_free(&r);
  r = bin(MX_OP_MINIMUM, &a, &b);
  EXPECT_INTS(r, -3, -4);
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_UI16, 65535, 4);
  b = IV(MX_ELEM_UI16, 2, 40000);
  r = bin(MX_OP_MAXIMUM, &a, &b);
  EXPECT_INTS(r, 65535, 40000);
  free_all(&a, &b, &r);
}

static void test_bool(void) {
  mx_tensor_t a = IV(MX_ELEM_I1, 0, 0, 1, 1), b = IV(MX_ELEM_I1, 0, 1, 0, 1);
  mx_tensor_t r = bin(MX_OP_ADD, &a, &b);
  EXPECT_INTS(r, 0, 1, 1, 1);
  mx_tensor_free(&r);
  r = bin(MX_OP_MULTIPLY, &a, &b);
  EXPECT_INTS(r, 0, 0, 0, 1);
  mx_tensor_free(&r);
  r = bin(MX_OP_XOR, &a, &b);
  EXPECT_INTS(r, 0, 1, 1, 0);
  mx_tensor_free(&r);
  r = bin(MX_OP_MAXIMUM, &a, &b);
  EXPECT_INTS(r, 0, 1, 1, 1);
  mx_tensor_free(&r);
  r = un(MX_OP_NOT, MX_ELEM_I1, &a);
  EXPECT_INTS(r, 1, 1, 0, 0);
  mx_tensor_free(&r);
  mx_tensor_t out;
  CHECK(run_op(MX_OP_SUBTRACT, NULL, 0, MX_ELEM_I1, 4, 2, &a, &b, NULL, &out) ==
        MX_ERR_UNSUPPORTED);
  CHECK(strncmp(mx_error_message(), "unsupported: stablehlo.subtract", 31) == 0);
  free_all(&a, &b, &out);
}

// ---- float tests ----

static void test_float_rounding(void) {
  // bf16 has 8 significant bits: 1 + 2^-8 ties to 1.0; 1 + 3*2^-8 ties up to 1 + 2^-6.
  mx_tensor_t a = FV(MX_ELEM_BF16, 1.0, 1.0, 3.0e38);
  mx_tensor_t b = FV(MX_ELEM_BF16, 0.00390625, 0.01171875, 3.0e38);
  mx_tensor_t r = bin(MX_OP_ADD, &a, &b);
  EXPECT_F(r, 1.0, 1.015625, INFINITY);
  free_all(&a, &b, &r);

  a = FV(MX_ELEM_F16, 65504.0, 300.0, -0.0);
  b = FV(MX_ELEM_F16, 2.0, 300.0, 0.0);
  r = bin(MX_OP_MULTIPLY, &a, &b);
  EXPECT_F(r, INFINITY, INFINITY, -0.0);
  free_all(&a, &b, &r);

  a = FV(MX_ELEM_F32, 16777216.0, 1.0);
  b = FV(MX_ELEM_F32, 1.0, 3.0);
  r = bin(MX_OP_ADD, &a, &b);
  EXPECT_F(r, 16777216.0, 4.0);
  mx_tensor_free(&r);
  r = bin(MX_OP_DIVIDE, &b, &a);
  EXPECT_F(r, (double)(1.0f / 16777216.0f), (double)(3.0f / 1.0f));
  free_all(&a, &b, &r);

  // f8E5M2 has 3 significant bits: 1.125 ties to 1.0, 1.375 ties to 1.5.
  a = FV(MX_ELEM_F8E5M2, 1.0, 1.25, 57344.0);
  b = FV(MX_ELEM_F8E5M2, 0.125, 0.125, 57344.0);
  r = bin(MX_OP_ADD, &a, &b);
  EXPECT_F(r, 1.0, 1.5, INFINITY);
  free_all(&a, &b, &r);

  // f8E4M3FN has no inf: overflow becomes NaN; max finite 448.
  a = FV(MX_ELEM_F8E4M3FN, 448.0, 2.0);
  b = FV(MX_ELEM_F8E4M3FN, 448.0, 3.0);
  r = bin(MX_OP_ADD, &a, &b);
  EXPECT_F(r, NAN, 5.0);
  free_all(&a, &b, &r);

  a = FV(MX_ELEM_F64, 2.5, -2.5, 0.5, -0.5, 1.5, -0.0);
  r = un(MX_OP_ROUND_NEAREST_AFZ, MX_ELEM_F64, &a);
  EXPECT_F(r, 3.0, -3.0, 1.0, -1.0, 2.0, -0.0);
  mx_tensor_free(&r);
  r = un(MX_OP_ROUND_NEAREST_EVEN, MX_ELEM_F64, &a);
  EXPECT_F(r, 2.0, -2.0, 0.0, -0.0, 2.0, -0.0);
  mx_tensor_free(&r);
  r = un(MX_OP_CEIL, MX_ELEM_F64, &a);
  EXPECT_F(r, 3.0, -2.0, 1.0, -0.0, 2.0, -0.0);
  mx_tensor_free(&r);
  r = un(MX_OP_FLOOR, MX_ELEM_F64, &a);
  EXPECT_F(r, 2.0, -3.0, 0.0, -1.0, 1.0, -0.0);
  free_all(&a, &r, NULL);
}

static void test_float_special(void) {
  mx_tensor_t a = FV(MX_ELEM_F32, NAN, 1.0, -0.0, 0.0, -INFINITY);
  mx_tensor_t b = FV(MX_ELEM_F32, 1.0, NAN, 0.0, -0.0, 5.0);
  mx_tensor_t r = bin(MX_OP_MAXIMUM, &a, &b);
  EXPECT_F(r, NAN, NAN, 0.0, 0.0, 5.0);
  mx_tensor_free(&r);
  r = bin(MX_OP_MINIMUM, &a, &b);
  EXPECT_F(r, NAN, NAN, -0.0, -0.0, -INFINITY);
  mx_tensor_free(&r);
  r = un(MX_OP_SIGN, MX_ELEM_F32, &a);
  EXPECT_F(r, NAN, 1.0, -0.0, 0.0, -1.0);
  mx_tensor_free(&r);
  r = un(MX_OP_NEGATE, MX_ELEM_F32, &a);
  EXPECT_F(r, NAN, -1.0, 0.0, -0.0, INFINITY);
  mx_tensor_free(&r);
  r = un(MX_OP_IS_FINITE, MX_ELEM_I1, &a);
  EXPECT_INTS(r, 0, 1, 1, 1, 0);
  free_all(&a, &b, &r);

  a = FV(MX_ELEM_F64, 5.5, -5.5, 5.5, 1.0);
  b = FV(MX_ELEM_F64, 2.0, 2.0, -2.0, 0.0);
  r = bin(MX_OP_REMAINDER, &a, &b);
  EXPECT_F(r, 1.5, -1.5, 1.5, NAN);
  free_all(&a, &b, &r);

  // logistic in f16 rounds its intermediates; check a plain value.
  a = FV(MX_ELEM_F32, 0.0, 1.0);
  r = un(MX_OP_LOGISTIC, MX_ELEM_F32, &a);
  EXPECT_F(r, 0.5, (double)(1.0f / (1.0f + (float)exp(-1.0))));
  free_all(&a, &r, NULL);

  // Negation of FNUZ zero stays zero (no negative zero; 0x80 is NaN).
  a = FV(MX_ELEM_F8E4M3FNUZ, 0.0, 2.0);
  r = un(MX_OP_NEGATE, MX_ELEM_F8E4M3FNUZ, &a);
  EXPECT_F(r, 0.0, -2.0);
  free_all(&a, &r, NULL);
}

static mx_named_attr_t dir_attr(const char *dir) {
  mx_named_attr_t a;
  memset(&a, 0, sizeof a);
  a.name = "comparison_direction";
  a.value.kind = MX_ATTR_ENUM;
  a.value.enum_kind = "comparison_direction";
  a.value.s = dir;
  return a;
}

static mx_tensor_t cmp(const char *dir, const char *type, const mx_tensor_t *a,
                       const mx_tensor_t *b) {
  mx_named_attr_t attrs[2] = {dir_attr(dir), dir_attr(type ? type : "FLOAT")};
  attrs[1].name = "compare_type";
  attrs[1].value.enum_kind = "comparison_type";
  mx_tensor_t out;
  CHECK_OK(
      run_op(MX_OP_COMPARE, attrs, type ? 2 : 1, MX_ELEM_I1, a->type.dims[0], 2, a, b, NULL, &out));
  return out;
}

static void test_compare(void) {
  mx_tensor_t a = FV(MX_ELEM_F64, -0.0, NAN, -NAN, 1.0, -INFINITY, NAN);
  mx_tensor_t b = FV(MX_ELEM_F64, 0.0, NAN, -INFINITY, 2.0, -INFINITY, 1.0);
  mx_tensor_t r = cmp("EQ", "FLOAT", &a, &b);
  EXPECT_INTS(r, 1, 0, 0, 0, 1, 0);
  mx_tensor_free(&r);
  r = cmp("NE", NULL, &a, &b);
  EXPECT_INTS(r, 0, 1, 1, 1, 0, 1);
  mx_tensor_free(&r);
  r = cmp("LT", "FLOAT", &a, &b);
  EXPECT_INTS(r, 0, 0, 0, 1, 0, 0);
  mx_tensor_free(&r);
  r = cmp("EQ", "TOTALORDER", &a, &b);
  EXPECT_INTS(r, 0, 1, 0, 0, 1, 0);
  mx_tensor_free(&r);
  r = cmp("LT", "TOTALORDER", &a, &b);
  EXPECT_INTS(r, 1, 0, 1, 1, 0, 0);
  mx_tensor_free(&r);
  r = cmp("GE", "TOTALORDER", &a, &b);
  EXPECT_INTS(r, 0, 1, 0, 0, 1, 1);
  free_all(&a, &b, &r);

  a = IV(MX_ELEM_I4, -8, 7, -1);
  b = IV(MX_ELEM_I4, 7, -8, 1);
  r = cmp("LT", "SIGNED", &a, &b);
  EXPECT_INTS(r, 1, 0, 1);
  free_all(&a, &b, &r);
  a = IV(MX_ELEM_UI64, -1, 0);
  b = IV(MX_ELEM_UI64, 1, 0);
  r = cmp("GT", "UNSIGNED", &a, &b);
  EXPECT_INTS(r, 1, 0);
  free_all(&a, &b, &r);

  double ca[] = {1, 2, 1, 2, 1, NAN}, cb[] = {1, 3, 1, 2, 0, 0};
  a = cvec(MX_ELEM_C128, 3, ca);
  b = cvec(MX_ELEM_C128, 3, cb);
  r = cmp("EQ", NULL, &a, &b);
  EXPECT_INTS(r, 0, 1, 0);
  mx_tensor_free(&r);
  r = cmp("LT", NULL, &a, &b);
  EXPECT_INTS(r, 1, 0, 0);
  free_all(&a, &b, &r);
}

// ---- convert / bitcast / reduce_precision ----

static mx_tensor_t conv(mx_elem_type_t rt, const mx_tensor_t *a) {
  return un(MX_OP_CONVERT, rt, a);
}

static void test_convert(void) {
  mx_tensor_t a = FV(MX_ELEM_F32, 300.0, -300.0, NAN, -1.5, 2.9, -2.9, INFINITY);
  mx_tensor_t r = conv(MX_ELEM_I8, &a);
  EXPECT_INTS(r, 127, -128, 0, -1, 2, -2, 127);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_UI8, &a);
  EXPECT_INTS(r, 255, 0, 0, 0, 2, 0, 255);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_I4, &a);
  EXPECT_INTS(r, 7, -8, 0, -1, 2, -2, 7);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_I1, &a);
  EXPECT_INTS(r, 1, 1, 1, 1, 1, 1, 1);
  free_all(&a, &r, NULL);

  a = FV(MX_ELEM_F64, 1e300, -1e300, 9.3e18);
  r = conv(MX_ELEM_I64, &a);
  EXPECT_INTS(r, INT64_MAX, INT64_MIN, INT64_MAX);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_F16, &a);
  EXPECT_F(r, INFINITY, -INFINITY, INFINITY);
  free_all(&a, &r, NULL);

  // int -> float is correctly rounded (no double rounding through f64).
  a = IV(MX_ELEM_I64, (INT64_C(1) << 53) + (INT64_C(1) << 29) + 1,
         (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1, 65520, -7);
  r = conv(MX_ELEM_F32, &a);
  EXPECT_F(r, 9007200328482816.0, 1152921504606846976.0 + 4503599627370496.0, 65520.0, -7.0);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_BF16, &a);
  EXPECT_F(r, 9007199254740992.0, 1152921504606846976.0 + 9007199254740992.0, 65536.0, -7.0);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_F16, &a);
  EXPECT_F(r, INFINITY, INFINITY, INFINITY, -7.0);
  free_all(&a, &r, NULL);

  a = IV(MX_ELEM_UI64, -1, 3);
  r = conv(MX_ELEM_F64, &a);
  EXPECT_F(r, 18446744073709551616.0, 3.0);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_I4, &a);
  EXPECT_INTS(r, -1, 3);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_I1, &a);
  EXPECT_INTS(r, 1, 1);
  free_all(&a, &r, NULL);

  double cz[] = {-2.5, 7.0, 0.0, 1.0};
  a = cvec(MX_ELEM_C128, 2, cz);
  r = conv(MX_ELEM_F32, &a);
  EXPECT_F(r, -2.5, 0.0);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_I1, &a);
  EXPECT_INTS(r, 1, 0);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_C64, &a);
  float parts[4];
  memcpy(parts, r.data, 16);
  CHECK(parts[0] == -2.5f && parts[1] == 7.0f && parts[2] == 0.0f && parts[3] == 1.0f);
  free_all(&a, &r, NULL);

  a = IV(MX_ELEM_I4, -8, 7);
  r = conv(MX_ELEM_C64, &a);
  memcpy(parts, r.data, 16);
  CHECK(parts[0] == -8.0f && parts[1] == 0.0f && parts[2] == 7.0f && parts[3] == 0.0f);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_F8E4M3FN, &a);
  EXPECT_F(r, -8.0, 7.0);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_UI2, &a);
  EXPECT_INTS(r, 0, 3);
  free_all(&a, &r, NULL);

  a = FV(MX_ELEM_F8E4M3FN, 448.0, -0.5);
  r = conv(MX_ELEM_F8E5M2, &a);
  EXPECT_F(r, 448.0, -0.5);
  mx_tensor_free(&r);
  r = conv(MX_ELEM_F4E2M1FN, &a);
  EXPECT_F(r, 6.0, -0.5);
  free_all(&a, &r, NULL);
}

static void test_bitcast(void) {
  mx_tensor_t out;
  mx_tensor_t a = FV(MX_ELEM_F32, 1.0);  // 0x3F800000
  CHECK_OK(run_op(MX_OP_BITCAST_CONVERT, NULL, 0, MX_ELEM_UI8, 4, 1, &a, NULL, NULL, &out));
  EXPECT_INTS(out, 0x00, 0x00, 0x80, 0x3F);
  free_all(&a, &out, NULL);

  a = IV(MX_ELEM_UI8, 0xF7, 0x21);
  CHECK_OK(run_op(MX_OP_BITCAST_CONVERT, NULL, 0, MX_ELEM_I4, 4, 1, &a, NULL, NULL, &out));
  // Wrong shape for a real bitcast, but the bit stream is what matters here: low nibble first.
  EXPECT_INTS(out, 7, -1, 1, 2);
  mx_tensor_t back;
  CHECK_OK(run_op(MX_OP_BITCAST_CONVERT, NULL, 0, MX_ELEM_UI8, 2, 1, &out, NULL, NULL, &back));
  EXPECT_INTS(back, 0xF7, 0x21);
  free_all(&a, &out, &back);

  a = IV(MX_ELEM_I1, 1, 0, 1, 0, 0, 0, 0, 1);
  CHECK_OK(run_op(MX_OP_BITCAST_CONVERT, NULL, 0, MX_ELEM_UI8, -1, 1, &a, NULL, NULL, &out));
  EXPECT_INTS(out, 0x85);
  CHECK_OK(run_op(MX_OP_BITCAST_CONVERT, NULL, 0, MX_ELEM_I1, 8, 1, &out, NULL, NULL, &back));
  EXPECT_INTS(back, 1, 0, 1, 0, 0, 0, 0, 1);
  free_all(&a, &out, &back);

  // complex<f64> -> 2 x complex<f32>: (re bits low, im bits high), little-endian.
  uint64_t bits[2] = {0x0123456789ABCDEFull, 0x0000000011111111ull};
  a = vec(MX_ELEM_C128, -1);
  memcpy(a.data, bits, 16);
  CHECK_OK(run_op(MX_OP_BITCAST_CONVERT, NULL, 0, MX_ELEM_C64, 2, 1, &a, NULL, NULL, &out));
  uint32_t w[4];
  memcpy(w, out.data, 16);
  CHECK(w[0] == 0x89ABCDEFu && w[1] == 0x01234567u && w[2] == 0x11111111u && w[3] == 0);
  free_all(&a, &out, NULL);

  a = IV(MX_ELEM_I32, 1, 2, 3);
  CHECK(run_op(MX_OP_BITCAST_CONVERT, NULL, 0, MX_ELEM_I64, -1, 1, &a, NULL, NULL, &out) ==
        MX_ERR_INVALID_ARG);
  free_all(&a, &out, NULL);
}

static void test_reduce_precision(void) {
  mx_named_attr_t attrs[2];
  memset(attrs, 0, sizeof attrs);
  attrs[0].name = "exponent_bits";
  attrs[0].value.kind = MX_ATTR_INT;
  attrs[0].value.i = 5;
  attrs[1].name = "mantissa_bits";
  attrs[1].value.kind = MX_ATTR_INT;
  attrs[1].value.i = 10;
  double sub;
  uint64_t one = 1;
  memcpy(&sub, &one, 8);
  mx_tensor_t a = FV(MX_ELEM_F64, INFINITY, NAN, sub, 0.0, 65519.0, 65520.0, -1.0009765625,
                     1.00048828125, 1.00146484375);
  mx_tensor_t out;
  CHECK_OK(run_op(MX_OP_REDUCE_PRECISION, attrs, 2, MX_ELEM_F64, 9, 1, &a, NULL, NULL, &out));
  EXPECT_F(out, INFINITY, NAN, 0.0, 0.0, 65504.0, INFINITY, -1.0009765625, 1.0, 1.001953125);
  mx_tensor_free(&out);
  attrs[1].value.i = 0;
  CHECK_OK(run_op(MX_OP_REDUCE_PRECISION, attrs, 2, MX_ELEM_F64, 9, 1, &a, NULL, NULL, &out));
  EXPECT_F(out, INFINITY, INFINITY, 0.0, 0.0, INFINITY, INFINITY, -1.0, 1.0, 1.0);
  free_all(&a, &out, NULL);

  // f16 -> (5, 10) is the identity, subnormals included.
  attrs[1].value.i = 10;
  a = FV(MX_ELEM_F16, 5.9604644775390625e-08, 1.5);
  CHECK_OK(run_op(MX_OP_REDUCE_PRECISION, attrs, 2, MX_ELEM_F16, 2, 1, &a, NULL, NULL, &out));
  EXPECT_F(out, 5.9604644775390625e-08, 1.5);
  free_all(&a, &out, NULL);
}

// ---- complex ----

static void test_complex(void) {
  double za[] = {1, 2, 3, 4}, zb[] = {3, 4, 1, -1};
  mx_tensor_t a = cvec(MX_ELEM_C128, 2, za), b = cvec(MX_ELEM_C128, 2, zb);
  mx_tensor_t r = bin(MX_OP_MULTIPLY, &a, &b);
  double v[4];
  memcpy(v, r.data, 32);
  CHECK(v[0] == -5 && v[1] == 10 && v[2] == 7 && v[3] == 1);
  mx_tensor_free(&r);
  r = bin(MX_OP_DIVIDE, &a, &b);
  memcpy(v, r.data, 32);
  CHECK_NEAR(v[0], 0.44, 1e-15);
  CHECK_NEAR(v[1], 0.08, 1e-15);
  CHECK_NEAR(v[2], -0.5, 1e-15);
  CHECK_NEAR(v[3], 3.5, 1e-15);
  mx_tensor_free(&r);
  r = un(MX_OP_ABS, MX_ELEM_F64, &b);
  EXPECT_F(r, 5.0, sqrt(2.0));
  mx_tensor_free(&r);
  r = un(MX_OP_IMAG, MX_ELEM_F64, &a);
  EXPECT_F(r, 2.0, 4.0);
  mx_tensor_free(&r);
  r = un(MX_OP_SIGN, MX_ELEM_C128, &b);
  memcpy(v, r.data, 32);
  CHECK_NEAR(v[0], 0.6, 1e-15);
  CHECK_NEAR(v[1], 0.8, 1e-15);
  mx_tensor_free(&r);
  r = un(MX_OP_EXPONENTIAL, MX_ELEM_C128, &a);
  memcpy(v, r.data, 32);
  CHECK_NEAR(v[0], exp(1.0) * cos(2.0), 1e-12);
  CHECK_NEAR(v[1], exp(1.0) * sin(2.0), 1e-12);
  free_all(&a, &b, &r);

  mx_tensor_t re = FV(MX_ELEM_F32, 1.5, -2.0), im = FV(MX_ELEM_F32, 0.25, 8.0);
  mx_tensor_t out;
  CHECK_OK(run_op(MX_OP_COMPLEX, NULL, 0, MX_ELEM_C64, 2, 2, &re, &im, NULL, &out));
  float p[4];
  memcpy(p, out.data, 16);
  CHECK(p[0] == 1.5f && p[1] == 0.25f && p[2] == -2.0f && p[3] == 8.0f);
  free_all(&re, &im, &out);
}

// ---- select / clamp ----

static void test_select_clamp(void) {
  mx_tensor_t pred = IV(MX_ELEM_I1, 1, 0, 1);
  mx_tensor_t t = IV(MX_ELEM_I64, 1, 2, 3), f = IV(MX_ELEM_I64, -1, -2, -3), out;
  CHECK_OK(run_op(MX_OP_SELECT, NULL, 0, MX_ELEM_I64, 3, 3, &pred, &t, &f, &out));
  EXPECT_INTS(out, 1, -2, 3);
  mx_tensor_free(&out);
  mx_tensor_t sp = ivec(MX_ELEM_I1, -1, (int64_t[]){0});
  CHECK_OK(run_op(MX_OP_SELECT, NULL, 0, MX_ELEM_I64, 3, 3, &sp, &t, &f, &out));
  EXPECT_INTS(out, -1, -2, -3);
  free_all(&pred, &sp, &out);

  mx_tensor_t lo = ivec(MX_ELEM_I64, -1, (int64_t[]){0}), hi = IV(MX_ELEM_I64, 1, 1, 2);
  CHECK_OK(run_op(MX_OP_CLAMP, NULL, 0, MX_ELEM_I64, 3, 3, &lo, &f, &hi, &out));
  EXPECT_INTS(out, 0, 0, 0);
  mx_tensor_free(&out);
  CHECK_OK(run_op(MX_OP_CLAMP, NULL, 0, MX_ELEM_I64, 3, 3, &lo, &t, &hi, &out));
  EXPECT_INTS(out, 1, 1, 2);
  free_all(&lo, &hi, &out);
  free_all(&t, &f, NULL);

  mx_tensor_t flo = FV(MX_ELEM_F32, 0.0), fhi = FV(MX_ELEM_F32, 1.0);
  mx_tensor_t fx = FV(MX_ELEM_F32, -3.0, 0.5, 7.0, NAN);
  mx_tensor_t slo = fvec(MX_ELEM_F32, -1, (double[]){0.0});
  mx_tensor_t shi = fvec(MX_ELEM_F32, -1, (double[]){1.0});
  CHECK_OK(run_op(MX_OP_CLAMP, NULL, 0, MX_ELEM_F32, 4, 3, &slo, &fx, &shi, &out));
  EXPECT_F(out, 0.0, 0.5, 1.0, NAN);
  free_all(&flo, &fhi, &fx);
  free_all(&slo, &shi, &out);

  // Mismatched shapes are an error, not a crash.
  mx_tensor_t a = IV(MX_ELEM_I32, 1, 2), b = IV(MX_ELEM_I32, 1, 2, 3);
  CHECK(run_op(MX_OP_ADD, NULL, 0, MX_ELEM_I32, 2, 2, &a, &b, NULL, &out) == MX_ERR_INVALID_ARG);
  mx_tensor_free(&out);
  CHECK(run_op(MX_OP_IOTA, NULL, 0, MX_ELEM_I32, 2, 1, &a, NULL, NULL, &out) == MX_ERR_UNSUPPORTED);
  free_all(&a, &b, &out);
}

// ---- sweeps over every element type: never crash, only OK or "unsupported: ..." ----

static const mx_elem_type_t all_types[] = {
#define MX_X_(e, s) MX_ELEM_##e,
    MX_ELEM_TYPE_LIST(MX_X_)
#undef MX_X_
};
#define N_TYPES ((int)(sizeof all_types / sizeof all_types[0]))

// Fills a tensor with varied bit patterns (every byte of storage).
static mx_tensor_t patterned(mx_elem_type_t et, int64_t n, unsigned seed) {
  mx_tensor_t t = vec(et, n);
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < t.nbytes; i++) {
    x = x * 1103515245u + 12345u;
    t.data[i] = (uint8_t)(x >> 16);
  }
  // Re-normalize sub-byte / bool storage to the documented layout.
  for (int64_t i = 0; i < n; i++)
    if (!mx_elem_is_float(et) && !mx_elem_is_complex(et))
      mx_tensor_set_i64(&t, i, (int64_t)t.data[i] * 977 - 3000 * (t.data[i] & 1));
  if (mx_elem_bits(et) < 8 && mx_elem_is_float(et))
    for (int64_t i = 0; i < n; i++) t.data[i] &= (uint8_t)((1u << mx_elem_bits(et)) - 1);
  return t;
}

static void test_sweep_ops(void) {
  int ok = 0, unsupported = 0;
  for (int c = 0; c < MX_OP_COUNT; c++) {
    unsigned fl = mx_opcode_flags((mx_opcode_t)c);
    if (!(fl & (MX_OPF_UNARY | MX_OPF_BINARY))) continue;
    int arity = (fl & MX_OPF_UNARY) ? 1 : 2;
    for (int k = 0; k < N_TYPES; k++) {
      mx_elem_type_t et = all_types[k], rt = et;
      if (c == MX_OP_IS_FINITE) rt = MX_ELEM_I1;
      if (mx_elem_is_complex(et) && (c == MX_OP_ABS || c == MX_OP_REAL || c == MX_OP_IMAG))
        rt = et == MX_ELEM_C64 ? MX_ELEM_F32 : MX_ELEM_F64;
      if (c == MX_OP_COMPLEX) rt = et == MX_ELEM_F32 ? MX_ELEM_C64 : MX_ELEM_C128;
      mx_tensor_t a = patterned(et, 16, (unsigned)(c * 31 + k)), b = patterned(et, 16, (unsigned)k);
      mx_tensor_t out;
      mx_status_t st = run_op((mx_opcode_t)c, NULL, 0, rt, 16, arity, &a, &b, NULL, &out);
      if (st == MX_OK) {
        ok++;
      } else {
        unsupported++;
        CHECK_MSG(st == MX_ERR_UNSUPPORTED && strncmp(mx_error_message(), "unsupported: ", 13) == 0,
                  "%s on %s: %s", mx_opcode_name((mx_opcode_t)c), mx_elem_name(et),
                  mx_error_message());
      }
      free_all(&a, &b, &out);
    }
  }
  CHECK(ok > 500);
  (void)unsupported;
}

static void test_sweep_convert_bitcast(void) {
  for (int i = 0; i < N_TYPES; i++) {
    for (int j = 0; j < N_TYPES; j++) {
      mx_elem_type_t st = all_types[i], dt = all_types[j];
      mx_tensor_t a = patterned(st, 8, (unsigned)(i * 7 + j)), out, back;
      CHECK_OK(run_op(MX_OP_CONVERT, NULL, 0, dt, 8, 1, &a, NULL, NULL, &out));
      // Converting to a type and back is exact whenever the source fits the destination.
      if ((mx_elem_is_float(st) && mx_elem_is_float(dt) && mx_elem_bits(dt) > mx_elem_bits(st) &&
           (dt == MX_ELEM_F32 || dt == MX_ELEM_F64)) ||
          (mx_elem_is_int(st) && mx_elem_is_int(dt) &&
           mx_elem_is_signed(st) == mx_elem_is_signed(dt) &&
           mx_elem_bits(dt) >= mx_elem_bits(st))) {
        CHECK_OK(run_op(MX_OP_CONVERT, NULL, 0, st, 8, 1, &out, NULL, NULL, &back));
        for (int64_t e = 0; e < 8; e++) {
          double x = mx_tensor_get_f64(&a, e), y = mx_tensor_get_f64(&back, e);
          CHECK_MSG(same_f(x, y) || (isnan(x) && isnan(y)), "%s->%s->%s elem %lld: %g vs %g",
                    mx_elem_name(st), mx_elem_name(dt), mx_elem_name(st), (long long)e, x, y);
        }
        mx_tensor_free(&back);
      }
      mx_tensor_free(&out);
      // bitcast to a type of any width and back restores every bit.
      int ws = mx_elem_bits(st), wd = mx_elem_bits(dt);
      int64_t total = 8 * ws;
      if (total % wd == 0) {
        CHECK_OK(run_op(MX_OP_BITCAST_CONVERT, NULL, 0, dt, total / wd, 1, &a, NULL, NULL, &out));
        CHECK_OK(run_op(MX_OP_BITCAST_CONVERT, NULL, 0, st, 8, 1, &out, NULL, NULL, &back));
        CHECK_MSG(memcmp(a.data, back.data, a.nbytes) == 0, "bitcast %s<->%s", mx_elem_name(st),
                  mx_elem_name(dt));
        free_all(&out, &back, NULL);
      }
      mx_tensor_free(&a);
    }
  }
}

int main(void) {
  test_int_wrap();
  test_int_div();
  test_int_shift_pow_bits();
  test_bool();
  test_float_rounding();
  test_float_special();
  test_compare();
  test_convert();
  test_bitcast();
  test_reduce_precision();
  test_complex();
  test_select_clamp();
  test_sweep_ops();
  test_sweep_convert_bitcast();
  return mx_test_finish();
}
