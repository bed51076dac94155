// bf16 / f16 <-> f32 conversions of src/base/half.h against the interpreter's generic float
// codec (mx_float_encode / mx_float_decode, which rounds from double): every 16-bit pattern
// one way, and a dense sweep of f32 bit patterns (all exponents, mantissas around every
// rounding boundary) the other way.
#include "base/half.h"
#include "mlxcel/hlo.h"
#include "mx_test.h"

static bool same_float(float a, float b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return mx_f32_bits(a) == mx_f32_bits(b);
}

static bool same_half(mx_elem_type_t et, uint16_t a, uint16_t b) {
  double da = mx_float_decode(et, a), db = mx_float_decode(et, b);
  if (isnan(da) || isnan(db)) return isnan(da) && isnan(db);
  return a == b;
}

static void test_widen_all(void) {
  int bad_b = 0, bad_h = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float b = mx_bf16_to_f32((uint16_t)h), f = mx_f16_to_f32((uint16_t)h);
    if (!same_float(b, (float)mx_float_decode(MX_ELEM_BF16, h))) bad_b++;
    if (!same_float(f, (float)mx_float_decode(MX_ELEM_F16, h))) bad_h++;
  }
  CHECK_MSG(bad_b == 0, "%d bf16 patterns differ", bad_b);
  CHECK_MSG(bad_h == 0, "%d f16 patterns differ", bad_h);
}

// Every f32 with a mantissa near a rounding boundary of either format, for all exponents and
// both signs, plus a pseudo-random sample.
static void test_narrow_sweep(void) {
  static const uint32_t low[] = {0,      1,      0xfff,  0x1000, 0x1001, 0x1fff, 0x2000,
                                 0x3fff, 0x7fff, 0x8000, 0x8001, 0xffff, 0x10000};
  int bad_b = 0, bad_h = 0, n = 0;
  uint64_t x = 88172645463325252ull;
  for (uint32_t s = 0; s < 2; s++)
    for (uint32_t e = 0; e < 256; e++)
      for (uint32_t hi = 0; hi < 128; hi += 1)
        for (size_t l = 0; l < sizeof low / sizeof low[0] + 4; l++) {
          uint32_t lo;
          if (l < sizeof low / sizeof low[0]) {
            lo = low[l];
          } else {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            lo = (uint32_t)x & 0xffff;
          }
          uint32_t mant = ((hi << 16) | lo) & 0x7fffff;
          uint32_t u = (s << 31) | (e << 23) | mant;
          float f = mx_f32_from_bits(u);
          n++;
          if (!same_half(MX_ELEM_BF16, mx_f32_to_bf16(f),
                         (uint16_t)mx_float_encode(MX_ELEM_BF16, (double)f)))
            bad_b++;
          if (!same_half(MX_ELEM_F16, mx_f32_to_f16(f),
                         (uint16_t)mx_float_encode(MX_ELEM_F16, (double)f)))
            bad_h++;
        }
  CHECK_MSG(bad_b == 0, "%d of %d f32 -> bf16 differ", bad_b, n);
  CHECK_MSG(bad_h == 0, "%d of %d f32 -> f16 differ", bad_h, n);
}

static void test_edges(void) {
  CHECK(mx_f32_to_f16(65504.0f) == 0x7bff);
  CHECK(mx_f32_to_f16(65519.99f) == 0x7bff);
  CHECK(mx_f32_to_f16(65520.0f) == 0x7c00);  // tie at the top rounds to even: inf
  CHECK(mx_f32_to_f16(-1e9f) == 0xfc00);
  CHECK(mx_f32_to_f16(5.9604644775390625e-8f) == 0x0001);   // 2^-24
  CHECK(mx_f32_to_f16(2.98023223876953125e-8f) == 0x0000);  // 2^-25: tie to even, zero
  CHECK(mx_f32_to_f16(-0.0f) == 0x8000);
  CHECK(mx_f32_to_bf16(1.0f + 1.0f / 256.0f) == 0x3f80);  // tie: even (down)
  CHECK(mx_f32_to_bf16(1.0f + 3.0f / 256.0f) == 0x3f82);  // tie: even (up)
  CHECK(mx_f32_to_bf16(3.4e38f) == 0x7f80);               // rounds past the max: inf
  CHECK(isnan(mx_bf16_to_f32(mx_f32_to_bf16(NAN))));
  CHECK(isnan(mx_f16_to_f32(mx_f32_to_f16(NAN))));
  // Bulk forms agree with the scalar ones.
  float src[37];
  uint16_t hb[37], hh[37];
  float back[37];
  for (int i = 0; i < 37; i++) src[i] = (float)(i - 18) * 0.3711f + 1e-3f * (float)i;
  mx_half_f32_to_bf16(src, hb, 37);
  mx_half_f32_to_f16(src, hh, 37);
  int bad = 0;
  for (int i = 0; i < 37; i++) {
    bad += hb[i] != mx_f32_to_bf16(src[i]) || hh[i] != mx_f32_to_f16(src[i]);
  }
  mx_half_bf16_to_f32(hb, back, 37);
  for (int i = 0; i < 37; i++) bad += !same_float(back[i], mx_bf16_to_f32(hb[i]));
  mx_half_f16_to_f32(hh, back, 37);
  for (int i = 0; i < 37; i++) bad += !same_float(back[i], mx_f16_to_f32(hh[i]));
  CHECK(bad == 0);
}

int main(void) {
  test_widen_all();
  test_narrow_sweep();
  test_edges();
  return mx_test_finish();
}
