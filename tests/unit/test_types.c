// Element types, small-float codecs, type printing and tensor element access.
#include <math.h>

#include "mlxcel/hlo.h"
#include "mx_test.h"

static void test_names(void) {
  for (int i = 1; i < MX_ELEM_COUNT; i++) {
    const char *n = mx_elem_name((mx_elem_type_t)i);
    CHECK(mx_elem_from_name(n, strlen(n)) == (mx_elem_type_t)i);
  }
  CHECK(mx_elem_from_name("f31", 3) == MX_ELEM_INVALID);
  CHECK(mx_elem_size(MX_ELEM_I4) == 1 && mx_elem_bits(MX_ELEM_I4) == 4);
  CHECK(mx_elem_size(MX_ELEM_C128) == 16);
  CHECK(mx_elem_is_float(MX_ELEM_F8E5M2) && !mx_elem_is_float(MX_ELEM_C64));
}

static void test_f16_bf16(void) {
  CHECK(mx_float_encode(MX_ELEM_F16, 1.0) == 0x3C00);
  CHECK(mx_float_encode(MX_ELEM_F16, -2.0) == 0xC000);
  CHECK(mx_float_encode(MX_ELEM_F16, 65504.0) == 0x7BFF);
  CHECK(mx_float_encode(MX_ELEM_F16, 65520.0) == 0x7C00);  // rounds to inf (tie to even)
  CHECK(mx_float_encode(MX_ELEM_F16, 65519.0) == 0x7BFF);
  CHECK(mx_float_encode(MX_ELEM_F16, ldexp(1.0, -24)) == 0x0001);  // smallest subnormal
  CHECK(mx_float_encode(MX_ELEM_F16, ldexp(1.0, -25)) == 0x0000);  // tie to even -> 0
  CHECK(mx_float_encode(MX_ELEM_F16, ldexp(3.0, -26)) == 0x0001);
  CHECK(mx_float_encode(MX_ELEM_F16, -0.0) == 0x8000);
  CHECK((mx_float_encode(MX_ELEM_F16, NAN) & 0x7C00) == 0x7C00);
  CHECK(mx_float_decode(MX_ELEM_F16, 0x3555) == 0x155 * ldexp(1.0, -10 - 2) + 0.25);
  CHECK(mx_float_encode(MX_ELEM_BF16, 1.0) == 0x3F80);
  CHECK(mx_float_encode(MX_ELEM_BF16, 1.00390625) == 0x3F80);  // exact tie -> even
  CHECK(mx_float_encode(MX_ELEM_BF16, 1.01171875) == 0x3F82);  // tie -> even (up)
  CHECK(mx_float_decode(MX_ELEM_BF16, 0x7F80) == INFINITY);
  CHECK(isnan(mx_float_decode(MX_ELEM_BF16, 0x7FC0)));
}

static void test_f8(void) {
  CHECK(mx_float_encode(MX_ELEM_F8E4M3FN, 448.0) == 0x7E);
  CHECK(mx_float_encode(MX_ELEM_F8E4M3FN, 480.0) == 0x7F);  // overflow -> NaN
  CHECK(isnan(mx_float_decode(MX_ELEM_F8E4M3FN, 0x7F)));
  CHECK(mx_float_decode(MX_ELEM_F8E4M3FN, 0x78) == 256.0);   // exp 15 is finite
  CHECK(mx_float_encode(MX_ELEM_F8E4M3FNUZ, -0.0) == 0x00);  // no negative zero
  CHECK(isnan(mx_float_decode(MX_ELEM_F8E4M3FNUZ, 0x80)));
  CHECK(mx_float_decode(MX_ELEM_F8E5M2, 0x7C) == INFINITY);
  CHECK(mx_float_encode(MX_ELEM_F8E5M2, 57344.0) == 0x7B);
  CHECK(mx_float_decode(MX_ELEM_F4E2M1FN, 0x07) == 6.0);
  CHECK(mx_float_decode(MX_ELEM_F4E2M1FN, 0x0F) == -6.0);
  CHECK(mx_float_encode(MX_ELEM_F4E2M1FN, 100.0) == 0x07);   // finite-only saturates
  CHECK(mx_float_encode(MX_ELEM_F4E2M1FN, 3.1415) == 0x05);  // 3.0
  CHECK(mx_float_encode(MX_ELEM_F4E2M1FN, 0.1) == 0x00);
  CHECK(mx_float_decode(MX_ELEM_F6E2M3FN, 0x1F) == 7.5);
  CHECK(mx_float_decode(MX_ELEM_F8E8M0FNU, 127) == 1.0);
  CHECK(mx_float_encode(MX_ELEM_F8E8M0FNU, 0.25) == 125);
  CHECK(mx_float_decode(MX_ELEM_F8E3M4, 0x30) == 1.0);
}

static void test_tensor_access(void) {
  int64_t dims[2] = {2, 3};
  mx_type_t ty = mx_type_tensor(MX_ELEM_I4, 2, dims);
  char buf[64];
  CHECK(strcmp(mx_type_str(&ty, buf, sizeof buf), "tensor<2x3xi4>") == 0);
  mx_tensor_t t;
  CHECK_OK(mx_tensor_alloc(&t, &ty));
  mx_tensor_set_i64(&t, 0, 9);  // wraps to -7
  CHECK(mx_tensor_get_i64(&t, 0) == -7);
  mx_tensor_set_i64(&t, 1, -8);
  CHECK(mx_tensor_get_i64(&t, 1) == -8 && mx_tensor_get_u64(&t, 1) == 8);
  mx_tensor_free(&t);
  mx_type_t s = mx_type_scalar(MX_ELEM_UI64);
  CHECK(strcmp(mx_type_str(&s, buf, sizeof buf), "tensor<ui64>") == 0);
  CHECK_OK(mx_tensor_alloc(&t, &s));
  mx_tensor_set_i64(&t, 0, -1);
  CHECK(mx_tensor_get_u64(&t, 0) == UINT64_MAX);
  mx_tensor_free(&t);
  mx_type_t c = mx_type_scalar(MX_ELEM_BF16);
  CHECK_OK(mx_tensor_alloc(&t, &c));
  mx_tensor_set_f64(&t, 0, 3.0);
  CHECK(mx_tensor_get_f64(&t, 0) == 3.0);
  mx_tensor_free(&t);
  mx_tensor_free(NULL);
}

int main(void) {
  test_names();
  test_f16_bf16();
  test_f8();
  test_tensor_access();
  return mx_test_finish();
}
