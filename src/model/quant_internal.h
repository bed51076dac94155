// Internal to the weight quantization of src/model (quant_*.c, config_quant.c): the quantizers
// and dequantizers of the three formats of model.h, the config reader and the load-time pass.
#ifndef MLXCEL_MODEL_QUANT_INTERNAL_H
#define MLXCEL_MODEL_QUANT_INTERNAL_H

#include <cjson/cJSON.h>

#include "mlxcel/model.h"

// ---- Scalar conversions (round to nearest even; NaN / Inf kept) ----

float mx_q_f16_to_f32(uint16_t h);
uint16_t mx_q_f32_to_f16(float f);
float mx_q_bf16_to_f32(uint16_t h);
uint16_t mx_q_f32_to_bf16(float f);
// Element i of a float tensor of type et (F32, F16, BF16) as float.
float mx_q_load_float(mx_elem_type_t et, const void *data, int64_t i);
// Stores v (rounded to et) as element i.
void mx_q_store_float(mx_elem_type_t et, void *data, int64_t i, float v);
// Converts n elements of type et to float.
void mx_q_to_f32(mx_elem_type_t et, const void *src, float *dst, int64_t n);

// MXFP4's scalars (composite.h): the e2m1 value of the low 4 bits of code, and 2^(s - 127) of an
// e8m0 scale 2^(s - 127) (s = 0: 2^-127, a subnormal float; s = 255: NaN, as in the format).
float mx_q_e2m1(unsigned code);
float mx_q_e8m0(uint8_t s);

// ---- One row of W[N, K] with groups of g (K % g == 0) ----

// INT8: q[K] = round(w / s_j) in [-127, 127], s_j = max|w| / 127 rounded to scale_dt (the
// rounded scale is the one used to quantize, so dequantization error stays <= s / 2).
void mx_q_int8_row(const float *w, int64_t k, int64_t g, mx_elem_type_t scale_dt, int8_t *q,
                   void *scales);
// INT4: s_j = -(the weight of largest magnitude) / 8 rounded to scale_dt, u = clamp(round(w /
// s), -8, 7) + 8, packed 8 per uint32 (LSB first) into words[K / 8].
void mx_q_int4_row(const float *w, int64_t k, int64_t g, mx_elem_type_t scale_dt, uint32_t *words,
                   void *scales);
// MLX affine quantization of one row (the rule of mlx/backend/cpu/quantized.cpp, float32
// arithmetic, documented in ../shared/models/stories260K/mlx-q4/README.md): packs bits-bit
// values into words[K * bits / 32], scales / biases [K / g] stored as scale_dt.
void mx_q_affine_row(const float *w, int64_t k, int64_t g, int bits, mx_elem_type_t scale_dt,
                     uint32_t *words, void *scales, void *biases);

// Dequantizes row r of a stored quantized tensor into w[K] (float): mode int8 (q i8 [N, K]),
// int4 (u32 [N, K/8], w = (u - 8) s), affine (u32 [N, K bits/32], w = u s + b) or mxfp4 (u8
// [N, K/2], e2m1 pairs times 2^(s - 127), scales u8: composite.h). scales / biases [N, K/g] of
// type sdt. The arithmetic is the graph decomposition's, in float: u * s,
// then + b (two roundings); int4: (u - 8) * s.
typedef enum mx_q_mode {
  MX_Q_FLOAT = 0,
  MX_Q_INT8,
  MX_Q_INT4,
  MX_Q_AFFINE,
  MX_Q_MXFP4,  // mx_qmode_t's MXFP4 (composite.h): experts only
} mx_q_mode_t;
void mx_q_dequant_row(mx_q_mode_t mode, int bits, int64_t k, int64_t g, const void *wq,
                      mx_elem_type_t sdt, const void *scales, const void *biases, int64_t r,
                      float *w);

// ---- config.json ----

// Reads `quantization` (or an MLX-style `quantization_config`) into cfg->quant_bits /
// quant_group_size (0 when absent). Called by mx_config_parse on the root object.
mx_status_t mx_cfg_parse_quant(const cJSON *root, const char *src, mx_model_config_t *cfg);
// Bits and group size the config gives module `module` ("model.layers.0.mlp.down_proj"):
// its override when the quantization dictionary has one, 0 / 0 when the override is false,
// the defaults otherwise.
mx_status_t mx_quant_config_layer(const cJSON *root, const char *src, const char *module,
                                  int32_t def_bits, int32_t def_group, int32_t *bits,
                                  int32_t *group);

// ---- Load-time pass (quant_load.c) ----

// Resolves opts' mode against the checkpoint, validates an MLX checkpoint against its config
// (per-layer overrides included) and rewrites the resident weights of m->ckpt for the mode
// (requantization, dequantization). Fills m->quant, quant_group_size, quant_bits, n_quantized.
mx_status_t mx_quant_apply(mx_model_t *m, const mx_model_load_opts_t *opts);

#endif  // MLXCEL_MODEL_QUANT_INTERNAL_H
