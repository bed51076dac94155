// AMX (TDPBF16PS) block of the bf16 GEMM: the part of Y = X W^T over the first K32 = 32 * floor(k
// / 32) k, for the rows and panels of one thread; the driver (kernels_lowp.c) adds the remaining
// k with the AVX-512 microkernel. Called only when mx_cpu_features() reported amx_bf16 (CPU,
// XCR0 and the OS permission for the tile data, requested at detection).
//
// Tiles: C 0-3 (2 row blocks x 2 column halves of a 32-column panel, 16 x 16 f32 each), A 4-5
// (16 rows x 32 bf16 of X), B 6-7 (16 k pairs x 16 columns of the packed panel: the bf16 pair
// layout of kernels_lowp_internal.h is AMX's B layout with a 128-byte row stride). Each C
// element is one hardware dot-product chain over k in order, whatever tile or thread computes
// it, so results do not depend on the thread split. Like VDPBF16PS, TDPBF16PS treats subnormal
// inputs and results as zero.
#include "cpu/kernels_lowp_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "cpu/amx_tiles.h"

#define MX_TAMX __attribute__((target("amx-tile,amx-bf16,avx512f")))

enum { NR = MX_LOWP_NR, KT = 32 };  // k per tile step

// 16 rows of A for k in [kk, kk + 32): straight from X when all 16 rows exist, else staged with
// zero rows (rows past m must not be read).
MX_TAMX static const uint16_t *a_rows(const uint16_t *x, int64_t ldx, int64_t rows, int64_t kk,
                                      uint16_t *stage, int64_t *stride) {
  if (rows >= 16) {
    *stride = ldx * 2;
    return x + kk;
  }
  memset(stage, 0, 16 * KT * sizeof *stage);
  for (int64_t i = 0; i < rows; i++) memcpy(stage + i * KT, x + i * ldx + kk, KT * sizeof *stage);
  *stride = KT * 2;
  return stage;
}

// Stores C tile t (16 x 16) at y (row stride ldy) for rows < rows, cols < cols.
#define STORE_C(t, yp, rows, cols)                                                        \
  do {                                                                                    \
    if ((rows) >= 16 && (cols) >= 16) {                                                   \
      _tile_stored(t, (yp), ldy * 4);                                                     \
    } else if ((rows) > 0 && (cols) > 0) {                                                \
      _tile_stored(t, ctmp, 64);                                                          \
      for (int64_t i_ = 0; i_ < (rows) && i_ < 16; i_++)                                  \
        memcpy((yp) + i_ * ldy, ctmp + i_ * 16, (size_t)((cols) < 16 ? (cols) : 16) * 4); \
    }                                                                                     \
  } while (0)

MX_TAMX int64_t mx_cpu_lowp_amx_block(const mx_cpu_packed_lowp_t *w, const uint16_t *x, int64_t ldx,
                                      float *y, int64_t ldy, int64_t m0, int64_t m1, int64_t p0,
                                      int64_t p1) {
  const int64_t k32 = w->k / KT * KT, kpad = w->kpad;
  if (k32 == 0 || m1 <= m0 || p1 <= p0) return 0;
  mx_amx_cfg_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  _Alignas(64) uint16_t stage0[16 * KT], stage1[16 * KT];
  _Alignas(64) float ctmp[16 * 16];
  // Panel-major: a panel's slice (k x 32 bf16) stays in cache while all row blocks pass.
  for (int64_t pi = p0; pi < p1; pi++) {
    const uint16_t *b = w->data + pi * kpad * NR;
    int64_t cols = w->n - pi * NR;
    for (int64_t ir = m0; ir < m1; ir += 32) {
      int64_t r0 = m1 - ir, r1 = m1 - ir - 16;
      const uint16_t *xa = x + ir * ldx, *xb = x + (ir + 16) * ldx;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t kk = 0; kk < k32; kk += KT) {
        int64_t sa, sb;
        const uint16_t *pa = a_rows(xa, ldx, r0, kk, stage0, &sa);
        _tile_loadd(4, pa, sa);
        _tile_loadd(6, b + kk * NR, 128);
        _tile_loadd(7, b + kk * NR + 32, 128);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        if (r1 > 0) {
          const uint16_t *pb = a_rows(xb, ldx, r1, kk, stage1, &sb);
          _tile_loadd(5, pb, sb);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
      }
      float *yc = y + ir * ldy + pi * NR;
      STORE_C(0, yc, r0, cols);
      STORE_C(1, yc + 16, r0, cols - 16);
      if (r1 > 0) {
        STORE_C(2, yc + 16 * ldy, r1, cols);
        STORE_C(3, yc + 16 * ldy + 16, r1, cols - 16);
      }
    }
  }
  _tile_release();
  return k32;
}

#endif  // __x86_64__
