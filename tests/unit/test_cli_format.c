// The CLI's rendering of interpreter values (`dense<...> : tensor<...>`) and JSON strings.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mx_test.h"

// Renders a tensor of `et` with the given dims whose storage is `data` (nbytes bytes).
static char *render(mx_elem_type_t et, int32_t rank, const int64_t *dims, const void *data,
                    size_t nbytes) {
  mx_type_t ty = mx_type_tensor(et, rank, dims);
  mx_tensor_t t;
  memset(&t, 0, sizeof t);
  if (mx_tensor_alloc(&t, &ty) != MX_OK) return NULL;
  if (nbytes) memcpy(t.data, data, nbytes);
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_cli_format_tensor(&t, &sb);
  mx_tensor_free(&t);
  return mx_strbuf_take(&sb, NULL);
}

#define EXPECT_RENDER(want, et, rank, dims, data)                                            \
  do {                                                                                       \
    char *got_ = render(et, rank, dims, data, sizeof(data));                                 \
    CHECK_MSG(got_ &&strcmp(got_, want) == 0, "got '%s', want '%s'", got_ ? got_ : "(null)", \
              want);                                                                         \
    free(got_);                                                                              \
  } while (0)

static void test_ints(void) {
  const int64_t d22[] = {2, 2}, d3[] = {3};
  const int32_t i32[] = {1, -2, 3, 4};
  EXPECT_RENDER("dense<[[1, -2], [3, 4]]> : tensor<2x2xi32>", MX_ELEM_I32, 2, d22, i32);
  const uint64_t u64[] = {0, UINT64_MAX, 7};
  EXPECT_RENDER("dense<[0, 18446744073709551615, 7]> : tensor<3xui64>", MX_ELEM_UI64, 1, d3, u64);
  const int8_t i4[] = {-8, 7, -1};
  EXPECT_RENDER("dense<[-8, 7, -1]> : tensor<3xi4>", MX_ELEM_I4, 1, d3, i4);
  const int64_t scalar[] = {-42};
  EXPECT_RENDER("dense<-42> : tensor<i64>", MX_ELEM_I64, 0, NULL, scalar);
  const uint8_t b[] = {1, 0, 1};
  EXPECT_RENDER("dense<[true, false, true]> : tensor<3xi1>", MX_ELEM_I1, 1, d3, b);
  const int16_t splat[] = {5, 5, 5, 5};
  EXPECT_RENDER("dense<5> : tensor<2x2xi16>", MX_ELEM_I16, 2, d22, splat);
}

static void test_floats(void) {
  const int64_t d4[] = {4}, d2[] = {2};
  const float f32[] = {0.1f, -1.0f, 3.0e10f, 1.5e-7f};
  EXPECT_RENDER("dense<[0.1, -1.0, 3.0e+10, 1.5e-07]> : tensor<4xf32>", MX_ELEM_F32, 1, d4, f32);
  const double f64[] = {0.1, 1.0 / 3.0};
  EXPECT_RENDER("dense<[0.1, 0.3333333333333333]> : tensor<2xf64>", MX_ELEM_F64, 1, d2, f64);
  // Non-finite values print as bit patterns, as MLIR writes them inside dense<...>.
  const uint32_t special[] = {0x7FC00000u, 0xFF800000u};
  EXPECT_RENDER("dense<[0x7FC00000, 0xFF800000]> : tensor<2xf32>", MX_ELEM_F32, 1, d2, special);
  const double negzero[] = {-0.0};
  EXPECT_RENDER("dense<-0.0> : tensor<f64>", MX_ELEM_F64, 0, NULL, negzero);
  const uint16_t f16[] = {0x3C00, 0x3555};  // 1.0, 0.333251953125
  EXPECT_RENDER("dense<[1.0, 0.3333]> : tensor<2xf16>", MX_ELEM_F16, 1, d2, f16);
  const uint16_t bf16[] = {0x3F80, 0x4049};  // 1.0, 3.140625
  EXPECT_RENDER("dense<[1.0, 3.14]> : tensor<2xbf16>", MX_ELEM_BF16, 1, d2, bf16);
  const float c64[] = {1.0f, -2.5f, 0.0f, 4.0f};
  EXPECT_RENDER("dense<[(1.0, -2.5), (0.0, 4.0)]> : tensor<2xcomplex<f32>>", MX_ELEM_C64, 1, d2,
                c64);
}

static void test_empty(void) {
  const int64_t d0[] = {0, 3};
  mx_type_t ty = mx_type_tensor(MX_ELEM_F32, 2, d0);
  mx_tensor_t t;
  memset(&t, 0, sizeof t);
  CHECK_OK(mx_tensor_alloc(&t, &ty));
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_cli_format_tensor(&t, &sb);
  CHECK_MSG(sb.data && strcmp(sb.data, "dense<> : tensor<0x3xf32>") == 0, "got '%s'", sb.data);
  mx_strbuf_free(&sb);
  mx_tensor_free(&t);
}

static void test_json(void) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_cli_json_string(&sb, "a\"b\\c\n\x01\xc3\xa9\xff");
  CHECK_MSG(sb.data && strcmp(sb.data, "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\\ufffd\"") == 0, "got '%s'",
            sb.data);
  mx_strbuf_free(&sb);
}

int main(void) {
  test_ints();
  test_floats();
  test_empty();
  test_json();
  return mx_test_finish();
}
