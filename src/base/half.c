// Bulk bf16 / f16 <-> f32 conversions (see half.h). Straight loops over the inline scalar
// conversions: branch-light, so the compiler vectorizes the common paths.
#include "base/half.h"

void mx_half_f32_to_bf16(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = mx_f32_to_bf16(src[i]);
}

void mx_half_bf16_to_f32(const uint16_t *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = mx_bf16_to_f32(src[i]);
}

void mx_half_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = mx_f32_to_f16(src[i]);
}

void mx_half_f16_to_f32(const uint16_t *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = mx_f16_to_f32(src[i]);
}
