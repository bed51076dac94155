// 16-bit float formats (bf16, IEEE f16) <-> f32: the bit-exact conversions shared by the model
// loader's precision pass (src/model/precision.c) and the CPU runtime's low-precision kernels.
//
// Semantics are StableHLO `convert`'s (and the reference interpreter's): f32 -> bf16 / f16
// round to nearest, ties to even, with overflow to +-inf, f16 subnormals produced exactly, and
// NaN kept NaN (quiet, sign kept); bf16 / f16 -> f32 is exact. The bulk functions are plain C
// loops the compiler vectorizes; nothing here depends on the CPU's rounding mode or DAZ/FTZ.
#ifndef MLXCEL_BASE_HALF_H
#define MLXCEL_BASE_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t mx_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float mx_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline float mx_bf16_to_f32(uint16_t h) { return mx_f32_from_bits((uint32_t)h << 16); }

static inline uint16_t mx_f32_to_bf16(float f) {
  uint32_t u = mx_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);  // quiet NaN
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; a carry into the
  // exponent is the correct result (up to +-inf).
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float mx_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return mx_f32_from_bits(sign | 0x7f800000u | (m << 13));  // inf / NaN
  if (e == 0) {
    // Zero or subnormal: m * 2^-24, exact in f32.
    float v = (float)m * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return mx_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

static inline uint16_t mx_f32_to_f16(float f) {
  uint32_t u = mx_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds to >= 65520: +-inf
  if (a >= 0x38800000u) {                                   // normal f16 (>= 2^-14)
    uint32_t r = a + 0x0fffu + ((a >> 13) & 1u);            // RNE at bit 13
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));    // rebias 127 -> 15
  }
  if (a < 0x33000000u) return sign;  // < 2^-25: rounds to zero (2^-25 itself is a tie -> 0)
  // Subnormal f16: value / 2^-24 rounded to an integer, ties to even.
  uint32_t e = a >> 23, mant = (a & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - e;  // value = mant * 2^(e - 150); units of 2^-24: mant >> (126 - e)
  uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) q++;
  return (uint16_t)(sign | q);
}

// Bulk conversions; dst and src must not overlap.
void mx_half_f32_to_bf16(const float *src, uint16_t *dst, size_t n);
void mx_half_bf16_to_f32(const uint16_t *src, float *dst, size_t n);
void mx_half_f32_to_f16(const float *src, uint16_t *dst, size_t n);
void mx_half_f16_to_f32(const uint16_t *src, float *dst, size_t n);

#endif  // MLXCEL_BASE_HALF_H
