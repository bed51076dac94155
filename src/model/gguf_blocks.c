// ggml's quantized blocks, one block at a time, as the values and per-group scales (and biases)
// of a stored format of model.h. Each mapping is exact: the weight the format's decomposition
// computes from them (int8: q s; int4: (u - 8) s; affine: u s + b, each step rounded to f32) is
// the weight ggml's reference dequantization computes from the block:
//   Q8_0 {f16 d; i8 q[32]}            w = d q                 int8, group 32, f16 scales
//   Q4_0 {f16 d; u8 q[16]}            w = d (u - 8)           int4, group 32, f16 scales
//   Q4_1 {f16 d, m; u8 q[16]}         w = d u + m             affine 4-bit, group 32, f16
//   Q4_K {f16 d, dmin; u8 sc[12]; u8 q[128]}  per 32: w = (d sc_j) u - (dmin m_j)
//                                     affine 4-bit, group 32, f32 scales d sc_j, biases -dmin m_j
//   Q5_K {f16 d, dmin; u8 sc[12]; u8 qh[32]; u8 q[128]}  as Q4_K with a fifth bit from qh
//                                     affine 8-bit (values 0..31), group 32, f32
//   Q6_K {u8 ql[128]; u8 qh[64]; i8 sc[16]; f16 d}  per 16: w = (d sc_j) (q - 32)
//                                     int8 (values -32..31), group 16, f32 scales
// 4-bit legacy blocks hold element j < 16 in the low nibble of byte j and j + 16 in its high
// nibble; K-quant sub-block j's 6-bit scale and min are spread over the 12 scale bytes.
#include "model/gguf_internal.h"
#include "model/quant_internal.h"

static const mx_gguf_qmap_t kMaps[] = {
    {MX_GGML_Q8_0, 32, 34, 32, 8, true, false, MX_ELEM_F16},
    {MX_GGML_Q4_0, 32, 18, 32, 4, false, false, MX_ELEM_F16},
    {MX_GGML_Q4_1, 32, 20, 32, 4, false, true, MX_ELEM_F16},
    {MX_GGML_Q4_K, 256, 144, 32, 4, false, true, MX_ELEM_F32},
    {MX_GGML_Q5_K, 256, 176, 32, 8, false, true, MX_ELEM_F32},
    {MX_GGML_Q6_K, 256, 210, 16, 8, true, false, MX_ELEM_F32},
};

const mx_gguf_qmap_t *mx_gguf_qmap(uint32_t type) {
  for (size_t i = 0; i < sizeof kMaps / sizeof kMaps[0]; i++) {
    if (kMaps[i].type == type) return &kMaps[i];
  }
  return NULL;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

// K-quant sub-block j's 6-bit scale and min from the 12 packed bytes.
static void k_scale_min(const uint8_t *s, int j, int *sc, int *m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q4_K / Q5_K: scales and biases of the 8 sub-blocks, computed in f32 as ggml does.
static void k_params(const uint8_t *blk, float *s, float *b) {
  float d = mx_q_f16_to_f32(rd16(blk)), dmin = mx_q_f16_to_f32(rd16(blk + 2));
  for (int j = 0; j < 8; j++) {
    int sc, m;
    k_scale_min(blk + 4, j, &sc, &m);
    s[j] = d * (float)sc;
    b[j] = -(dmin * (float)m);
  }
}

void mx_gguf_decode_block(const mx_gguf_qmap_t *m, const uint8_t *blk, int16_t *v, void *scales,
                          void *biases) {
  uint16_t *hs = scales, *hb = biases;
  float *fs = scales, *fb = biases;
  switch (m->type) {
    case MX_GGML_Q8_0:
      hs[0] = rd16(blk);
      for (int e = 0; e < 32; e++) v[e] = (int8_t)blk[2 + e];
      return;
    case MX_GGML_Q4_0:
    case MX_GGML_Q4_1: {
      hs[0] = rd16(blk);
      const uint8_t *q = blk + 2;
      if (m->type == MX_GGML_Q4_1) {
        hb[0] = rd16(blk + 2);
        q = blk + 4;
      }
      for (int e = 0; e < 16; e++) {
        v[e] = q[e] & 0xF;
        v[e + 16] = q[e] >> 4;
      }
      return;
    }
    case MX_GGML_Q4_K:
    case MX_GGML_Q5_K: {
      k_params(blk, fs, fb);
      bool five = m->type == MX_GGML_Q5_K;
      const uint8_t *qh = blk + 16, *q = blk + (five ? 48 : 16);
      for (int e = 0; e < 256; e++) {
        int j = e / 32, i = e % 32;  // sub-block j: nibble j % 2 of bytes 32 (j / 2) + i
        int u = (q[32 * (j / 2) + i] >> (4 * (j % 2))) & 0xF;
        if (five) u |= ((qh[i] >> j) & 1) << 4;
        v[e] = (int16_t)u;
      }
      return;
    }
    case MX_GGML_Q6_K: {
      const uint8_t *ql = blk, *qh = blk + 128;
      const int8_t *sc = (const int8_t *)(blk + 192);
      float d = mx_q_f16_to_f32(rd16(blk + 208));
      for (int j = 0; j < 16; j++) fs[j] = d * (float)sc[j];
      for (int e = 0; e < 256; e++) {
        int h = e / 128, r = e % 128;  // half h; 4 bits from ql, 2 from qh
        int lo = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0xF;
        int hi = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
        v[e] = (int16_t)((lo | hi << 4) - 32);
      }
      return;
    }
    default:
      return;
  }
}
