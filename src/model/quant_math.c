// Quantizers and dequantizers of the weight formats of model.h (one row at a time), and the
// float16 / bfloat16 conversions they need.
#include <math.h>
#include <string.h>

#include "model/quant_internal.h"

// ---- Conversions ----

float mx_q_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t x;
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in float
    float v = (float)m * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

uint16_t mx_q_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (ax < 0x38800000u) {  // below 2^-14: a subnormal (or zero) of f16, units of 2^-24
    float v;
    memcpy(&v, &ax, sizeof v);
    return (uint16_t)(sign | (uint16_t)nearbyintf(v * 16777216.0f));
  }
  uint32_t h = ((((ax >> 23) - 127u + 15u) << 10) | ((ax & 0x7fffffu) >> 13));
  uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;  // ties to even; carries are right
  return (uint16_t)(sign | h);
}

float mx_q_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

uint16_t mx_q_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

float mx_q_load_float(mx_elem_type_t et, const void *data, int64_t i) {
  if (et == MX_ELEM_F32) {
    float v;
    memcpy(&v, (const uint8_t *)data + 4 * i, sizeof v);
    return v;
  }
  uint16_t h;
  memcpy(&h, (const uint8_t *)data + 2 * i, sizeof h);
  return et == MX_ELEM_BF16 ? mx_q_bf16_to_f32(h) : mx_q_f16_to_f32(h);
}

void mx_q_store_float(mx_elem_type_t et, void *data, int64_t i, float v) {
  if (et == MX_ELEM_F32) {
    memcpy((uint8_t *)data + 4 * i, &v, sizeof v);
    return;
  }
  uint16_t h = et == MX_ELEM_BF16 ? mx_q_f32_to_bf16(v) : mx_q_f32_to_f16(v);
  memcpy((uint8_t *)data + 2 * i, &h, sizeof h);
}

void mx_q_to_f32(mx_elem_type_t et, const void *src, float *dst, int64_t n) {
  if (et == MX_ELEM_F32) {
    memcpy(dst, src, (size_t)n * sizeof *dst);
    return;
  }
  for (int64_t i = 0; i < n; i++) dst[i] = mx_q_load_float(et, src, i);
}

// The scale value as stored: rounded to dt, clamped to its finite range.
static float stored_scale(mx_elem_type_t dt, void *scales, int64_t j, float s) {
  if (dt == MX_ELEM_F16 && fabsf(s) > 65504.0f) s = s < 0 ? -65504.0f : 65504.0f;
  mx_q_store_float(dt, scales, j, s);
  return mx_q_load_float(dt, scales, j);
}

// ---- Quantizers ----

void mx_q_int8_row(const float *w, int64_t k, int64_t g, mx_elem_type_t scale_dt, int8_t *q,
                   void *scales) {
  for (int64_t j = 0; j * g < k; j++) {
    const float *wg = w + j * g;
    float amax = 0.0f;
    for (int64_t i = 0; i < g; i++) amax = fmaxf(amax, fabsf(wg[i]));
    float s = stored_scale(scale_dt, scales, j, amax / 127.0f);
    for (int64_t i = 0; i < g; i++) {
      float v = s != 0.0f ? rintf(wg[i] / s) : 0.0f;
      v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
      q[j * g + i] = (int8_t)v;
    }
  }
}

void mx_q_int4_row(const float *w, int64_t k, int64_t g, mx_elem_type_t scale_dt, uint32_t *words,
                   void *scales) {
  memset(words, 0, (size_t)(k / 8) * sizeof *words);
  for (int64_t j = 0; j * g < k; j++) {
    const float *wg = w + j * g;
    float big = 0.0f;
    for (int64_t i = 0; i < g; i++)
      if (fabsf(wg[i]) > fabsf(big)) big = wg[i];
    float s = stored_scale(scale_dt, scales, j, big / -8.0f);
    for (int64_t i = 0; i < g; i++) {
      float v = s != 0.0f ? rintf(wg[i] / s) : 0.0f;
      v = v > 7.0f ? 7.0f : v < -8.0f ? -8.0f : v;
      int64_t e = j * g + i;
      words[e / 8] |= (uint32_t)((int)v + 8) << (4 * (e % 8));
    }
  }
}

void mx_q_affine_row(const float *w, int64_t k, int64_t g, int bits, mx_elem_type_t scale_dt,
                     uint32_t *words, void *scales, void *biases) {
  const int per = 32 / bits;
  const float n_bins = (float)((1 << bits) - 1);
  memset(words, 0, (size_t)(k / per) * sizeof *words);
  for (int64_t j = 0; j * g < k; j++) {
    const float *wg = w + j * g;
    float w_min = wg[0], w_max = wg[0];
    for (int64_t i = 1; i < g; i++) {
      w_min = fminf(w_min, wg[i]);
      w_max = fmaxf(w_max, wg[i]);
    }
    float scale = fmaxf((w_max - w_min) / n_bins, 1e-7f);
    bool side = fabsf(w_min) > fabsf(w_max);
    scale = side ? scale : -scale;
    float edge = side ? w_min : w_max;
    float q0 = rintf(edge / scale), bias = 0.0f;
    if (q0 != 0.0f) {
      scale = edge / q0;
      bias = edge;
    }
    for (int64_t i = 0; i < g; i++) {
      float v = rintf((wg[i] - bias) / scale);
      v = v < 0.0f ? 0.0f : v > n_bins ? n_bins : v;
      int64_t e = j * g + i;
      words[e / per] |= (uint32_t)v << (bits * (e % per));
    }
    mx_q_store_float(scale_dt, scales, j, scale);
    mx_q_store_float(scale_dt, biases, j, bias);
  }
}

// ---- Dequantizer ----

float mx_q_e2m1(unsigned code) {
  static const float kValues[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  float v = kValues[code & 7u];
  return code & 8u ? -v : v;
}

float mx_q_e8m0(uint8_t s) { return s == 255 ? NAN : ldexpf(1.0f, (int)s - 127); }

void mx_q_dequant_row(mx_q_mode_t mode, int bits, int64_t k, int64_t g, const void *wq,
                      mx_elem_type_t sdt, const void *scales, const void *biases, int64_t r,
                      float *w) {
  int64_t G = k / g;
  if (mode == MX_Q_MXFP4) {
    const uint8_t *q = (const uint8_t *)wq + r * (k / 2), *s = (const uint8_t *)scales + r * G;
    for (int64_t i = 0; i < k; i++)
      w[i] = mx_q_e2m1(q[i / 2] >> (4 * (i % 2))) * mx_q_e8m0(s[i / g]);
    return;
  }
  if (mode == MX_Q_INT8) {
    const int8_t *q = (const int8_t *)wq + r * k;
    for (int64_t i = 0; i < k; i++)
      w[i] = (float)q[i] * mx_q_load_float(sdt, scales, r * G + i / g);
    return;
  }
  const int per = 32 / bits;
  const uint32_t mask = (1u << bits) - 1u;
  const uint8_t *words = (const uint8_t *)wq + (size_t)(r * (k / per)) * 4;  // any alignment
  for (int64_t i = 0; i < k; i++) {
    uint32_t word;
    memcpy(&word, words + 4 * (i / per), sizeof word);
    float u = (float)((word >> (bits * (i % per))) & mask);
    float s = mx_q_load_float(sdt, scales, r * G + i / g);
    if (mode == MX_Q_INT4) {
      w[i] = (u - 8.0f) * s;
    } else {
      w[i] = u * s + mx_q_load_float(sdt, biases, r * G + i / g);
    }
  }
}
