// AMX-INT8 prefill of the VNNI16 path (kernels_q.h): Y = X W^T for int8 / int4 / affine weights
// on 16-bit activations, with TDPBSUD (signed activation bytes x unsigned weight bytes, exact
// int32 sums) in place of vpdpbusd. Called only when mx_cpu_features() reported amx_int8.
//
// Tiles: C 0-1 (16 rows of X x the 16 rows of a panel, int32: the high- and low-byte sums), A 2-3
// (16 rows x KB bytes of the high / low activation bytes), B 4 (KB / 4 rows of the panel's VNNI
// layout, 4 k x 16 weight rows each: the layout is AMX's B operand as packed). Groups are the
// outer loop: the 16 rows' activations of one group are prepared (the GEMV's prep, one group at a
// time) and every panel of an L2-sized block takes its group sums from the tiles, then the float
// steps the GEMV applies (kernels_q_vnni16.h), in the same order: each output equals the GEMV's
// bit for bit, whatever the thread split.
#include "cpu/kernels_q.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "cpu/amx_tiles.h"
#include "cpu/kernels_q_vnni16.h"

#define MX_TQAMX                                                                \
  __attribute__((                                                               \
      target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni," \
             "fma,f16c")))

enum {
  AR = 16,     // rows of X per A tile
  MAXG = 128,  // largest group the per-group activation buffers take
  PB = 32,     // panels per block: 32 x 16 rows x k weight bytes stay in L2 (512 KiB at k 1024)
};

// The activations of one group for the 16 rows of a block (rows past m stay zero).
typedef struct {
  _Alignas(64) int8_t h[AR][MAXG], l[AR][MAXG];
  float xsum[AR], dx[AR];
  int32_t xqsum[AR];
} group_act_t;

// B rows of the 4-bit panel p for k in [k0, k0 + kb): each 8-k chunk (64 bytes, low nibbles k
// 0..3, high nibbles k 4..7 of 16 weight rows) gives two B rows of unsigned bytes.
MX_TQAMX static void unpack_q4(const mx_cpu_qpacked_t *w, int64_t p, int64_t k0, int kb,
                               uint8_t *b) {
  const __m512i m4 = _mm512_set1_epi8(15);
  const uint8_t *src = w->q + p * w->k * (MX_QR / 2) + k0 / 2 * MX_QR;
  for (int c = 0; c < kb / 8; c++) {
    __m512i v = _mm512_load_si512((const void *)(src + c * 64));
    _mm512_store_si512((void *)(b + (2 * c) * 64), _mm512_and_si512(v, m4));
    _mm512_store_si512((void *)(b + (2 * c + 1) * 64),
                       _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
  }
}

MX_TQAMX void mx_cpu_qgemm_amx(const mx_cpu_qpacked_t *w, const float *x, int64_t ldx, float *y,
                               int64_t ldy, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
  const int64_t g = w->group;
  if (g > MAXG) {  // per-group buffers sized for the usual groups (32, 64, 128)
    mx_cpu_qkernels_avx512_vnni16.gemm(w, x, ldx, y, ldy, m0, m1, p0, p1);
    return;
  }
  const int kb = g % 64 == 0 ? 64 : 32;  // k bytes per tile step
  const bool q4 = w->bits == 4, f16 = w->f16, affine = w->b != NULL;
  const int z = q4 ? 8 : 128;
  mx_amx_cfg_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 2; t++) cfg.rows[t] = AR, cfg.colsb[t] = 64;
  for (int t = 2; t < 4; t++) cfg.rows[t] = AR, cfg.colsb[t] = (uint16_t)kb;
  cfg.rows[4] = (uint8_t)(kb / 4), cfg.colsb[4] = 64;
  _tile_loadconfig(&cfg);
  group_act_t act;
  _Alignas(64) int32_t ch[AR * MX_QR], cl[AR * MX_QR];
  _Alignas(64) uint8_t bq4[16 * 64];
  __m512 ys[PB][AR], yb[PB][AR];
  mx_cpu_qpacked_t w1 = *w;  // one group's view for the GEMV's prep
  w1.groups = 1;
  for (int64_t i0 = m0; i0 < m1; i0 += AR) {
    int mb = m1 - i0 < AR ? (int)(m1 - i0) : AR;
    memset(&act, 0, sizeof act);
    for (int64_t pa = p0; pa < p1; pa += PB) {
      int np = p1 - pa < PB ? (int)(p1 - pa) : PB;
      for (int q = 0; q < np; q++)
        for (int i = 0; i < mb; i++) ys[q][i] = yb[q][i] = _mm512_setzero_ps();
      for (int64_t j = 0; j < w->groups; j++) {
        for (int i = 0; i < mb; i++) {
          mx_qact_t a = {&act.xsum[i], act.h[i], act.l[i], &act.dx[i], &act.xqsum[i]};
          w->qk->prep(&w1, x + (i0 + i) * ldx + j * g, &a);
        }
        if (g == kb) {  // one tile step per group: the A tiles serve every panel
          _tile_loadd(2, act.h[0], MAXG);
          _tile_loadd(3, act.l[0], MAXG);
        }
        for (int q = 0; q < np; q++) {
          int64_t p = pa + q;
          _tile_zero(0);
          _tile_zero(1);
          for (int64_t kk = 0; kk < g; kk += kb) {
            if (g != kb) {
              _tile_loadd(2, act.h[0] + kk, MAXG);
              _tile_loadd(3, act.l[0] + kk, MAXG);
            }
            if (q4) {
              unpack_q4(w, p, j * g + kk, kb, bq4);
              _tile_loadd(4, bq4, 64);
            } else {
              _tile_loadd(4, w->q + p * w->k * MX_QR + (j * g + kk) * MX_QR, 64);
            }
            _tile_dpbsud(0, 2, 4);
            _tile_dpbsud(1, 3, 4);
          }
          _tile_stored(0, ch, 64);
          _tile_stored(1, cl, 64);
          for (int i = 0; i < mb; i++)
            mx_q_vnni16_out(w, p, j, _mm512_load_si512((const void *)(ch + i * MX_QR)),
                            _mm512_load_si512((const void *)(cl + i * MX_QR)), z, f16, affine,
                            act.dx[i], act.xqsum[i], act.xsum[i], &ys[q][i], &yb[q][i]);
        }
      }
      for (int q = 0; q < np; q++) {
        int64_t rows = w->n - (pa + q) * MX_QR;
        __mmask16 mask = rows >= MX_QR ? (__mmask16)0xffff : (__mmask16)((1u << rows) - 1u);
        for (int i = 0; i < mb; i++)
          _mm512_mask_storeu_ps(y + (i0 + i) * ldy + (pa + q) * MX_QR, mask,
                                _mm512_add_ps(ys[q][i], yb[q][i]));
      }
    }
  }
  _tile_release();
}

#endif  // __x86_64__
