// AMX-INT8 prefill of the VNNI16 path (kernels_q.h): Y = X W^T for int8 / int4 / affine weights
// on 16-bit activations, with TDPBSUD (signed activation bytes x unsigned weight bytes, exact
// int32 sums) in place of vpdpbusd. Called only when mx_cpu_features() reported amx_int8.
//
// The integer products are cheap here (two TDPBSUD per 16 x 16 x 64 block: the high and the low
// activation bytes); what costs is everything around them: the per-group float steps, moving
// the sums out of the tiles, and preparing both operands. Hence the shape of this kernel
// (docs/performance.md, "Integer prefill", has the profile that led to it):
// - the activations of a chunk of up to CHUNK_BYTES / k rows are prepared once per call (the
//   GEMV's prep, whole rows), not once per group and panel block;
// - 4-bit weights are unpacked to bytes (AMX's B layout) once per chunk and block of panels,
//   not once per 16-row block: every row block of the chunk reads the same unpacked block;
// - two panels share each pair of A tiles (tiles: C 0-3 = high / low sums of panel a, then of
//   panel b; A 4-5 = high / low activation bytes of 16 rows; B 6-7 = the two panels' weights);
// - the float steps of group j run while the tiles compute group j + 1: the sums of group j
//   are stored to one of two buffers after group j + 1's TDPBSUDs are issued, so neither the
//   tile unit nor the vector unit waits for the other (with one buffer, a store right after its
//   TDPBSUD stalled on the products' latency, and the float steps then on the store).
// Every output goes through the same exact integer sums and the same float steps as the GEMV
// (kernels_q_vnni16.h's arithmetic, groups in order, the bias term in its own accumulator), so
// each prefill row equals its decode bit for bit, whatever the thread split.
#include "cpu/kernels_q.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/amx_tiles.h"
#include "cpu/kernels_q_vnni16.h"

#define MX_TQAMX                                                                \
  __attribute__((                                                               \
      target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni," \
             "fma,f16c")))

enum {
  AR = 16,     // rows of X per A tile (a row block)
  MAXG = 128,  // largest group (exact int32 sums: |sum u xq| < 2^31 up to 128, kernels_q.h)
  CHUNK_BYTES = AR * MX_Q_MAX_K,    // activation bytes (high or low) per chunk: >= 16 rows
  CHUNK_PARAMS = CHUNK_BYTES / 32,  // (row, group) entries per chunk (groups are >= 32)
  BLOCK_TARGET = 256 * 1024,        // weight bytes of a panel block: stays in L2 with A
  BLOCK_BYTES = AR * MX_Q_MAX_K,    // unpacked 4-bit block: at least one panel of any k
};

// Per-thread working memory (1.7 MiB, allocated on a thread's first call and freed at its exit:
// too large for the pool threads' stacks or for static TLS in every thread of the process).
typedef struct {
  _Alignas(64) int8_t h[CHUNK_BYTES];   // high activation bytes, row i at h + i * k
  _Alignas(64) int8_t l[CHUNK_BYTES];   // low bytes
  _Alignas(64) float dx[CHUNK_PARAMS];  // per (row, group): the prep's dx, xsum and
  _Alignas(64) float xsum[CHUNK_PARAMS];
  _Alignas(64) int32_t zq[CHUNK_PARAMS];  // z * xqsum
  _Alignas(64) uint8_t b[BLOCK_BYTES];    // 4-bit panels unpacked, 16 k rows of 64 bytes per
                                          // 4 k, as the 8-bit VNNI layout (kernels_q.h)
} amx_scratch_t;

static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static bool g_key_ok;

static void key_create(void) { g_key_ok = pthread_key_create(&g_key, free) == 0; }

static amx_scratch_t *scratch_get(void) {
  pthread_once(&g_key_once, key_create);
  if (!g_key_ok) return NULL;
  amx_scratch_t *s = pthread_getspecific(g_key);
  if (s) return s;
  s = aligned_alloc(64, sizeof *s);
  if (s && pthread_setspecific(g_key, s) != 0) {
    free(s);
    s = NULL;
  }
  return s;
}

// Unpacks 4-bit panel p into dst (16 * k bytes): each 8-k chunk (64 bytes, low nibbles k 0..3,
// high nibbles k 4..7 of 16 weight rows) gives two 64-byte B rows of unsigned bytes.
MX_TQAMX static void unpack_q4(const mx_cpu_qpacked_t *w, int64_t p, uint8_t *dst) {
  const __m512i m4 = _mm512_set1_epi8(15);
  const uint8_t *src = w->q + p * w->k * (MX_QR / 2);
  for (int64_t c = 0; c < w->k / 8; c++) {
    __m512i v = _mm512_load_si512((const void *)(src + c * 64));
    _mm512_store_si512((void *)(dst + (2 * c) * 64), _mm512_and_si512(v, m4));
    _mm512_store_si512((void *)(dst + (2 * c + 1) * 64),
                       _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
  }
}

// The float steps of group j for one panel from its stored sums (hi / lo: 16 rows x 16 int32):
// ys[i] += s dx_ij (256 hs + ls - z xqsum_ij), kernels_q_vnni16.h's operations in its order.
MX_TQAMX static inline __attribute__((always_inline)) void group_out(
    const mx_cpu_qpacked_t *w, const amx_scratch_t *sc, int64_t row0, int mb, int64_t p, int64_t j,
    bool f16, const int32_t *hi, const int32_t *lo, float *ys) {
  const int64_t G = w->groups;
  __m512 s = params16(w->s, (p * G + j) * MX_QR, f16);
  for (int i = 0; i < mb; i++) {
    int64_t e = (row0 + i) * G + j;
    __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(hi + i * MX_QR), 8),
                                    _mm512_load_si512(lo + i * MX_QR));
    isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(sc->zq[e]));
    __m512 acc = _mm512_load_ps(ys + i * MX_QR);
    acc =
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(s, _mm512_set1_ps(sc->dx[e])), acc);
    _mm512_store_ps(ys + i * MX_QR, acc);
  }
}

// The affine weights' bias term of one panel, its own accumulator as in the GEMV:
// yb[i] += (b + z s) xsum_ij over the groups in order.
MX_TQAMX static void bias_out(const mx_cpu_qpacked_t *w, const amx_scratch_t *sc, int64_t row0,
                              int mb, int64_t p, int z, bool f16, float *yb) {
  const int64_t G = w->groups;
  for (int64_t j = 0; j < G; j++) {
    int64_t pi = (p * G + j) * MX_QR;
    __m512 c =
        _mm512_fmadd_ps(params16(w->s, pi, f16), _mm512_set1_ps((float)z), params16(w->b, pi, f16));
    for (int i = 0; i < mb; i++) {
      __m512 acc = _mm512_load_ps(yb + i * MX_QR);
      acc = _mm512_fmadd_ps(c, _mm512_set1_ps(sc->xsum[(row0 + i) * G + j]), acc);
      _mm512_store_ps(yb + i * MX_QR, acc);
    }
  }
}

// Rows [row0, row0 + mb) of the chunk (mb <= 16; its A rows past mb are zeros) times panels pa
// and, when two, pa + 1, whose B rows (VNNI byte layout, 16 * k bytes each) start at b0 / b1.
MX_TQAMX static void panel_pair(const mx_cpu_qpacked_t *w, const amx_scratch_t *sc, int64_t row0,
                                int mb, int64_t pa, bool two, const uint8_t *b0, const uint8_t *b1,
                                int kb, float *y, int64_t ldy) {
  const int64_t k = w->k, g = w->group, G = w->groups;
  const bool f16 = w->f16;
  const int z = w->bits == 4 ? 8 : 128;
  const int8_t *ah = sc->h + row0 * k, *al = sc->l + row0 * k;
  _Alignas(64) int32_t cbuf[2][4][AR * MX_QR];
  _Alignas(64) float ys[2][AR * MX_QR], yb[2][AR * MX_QR];
  memset(ys, 0, sizeof ys);
  memset(yb, 0, sizeof yb);
  for (int64_t j = 0; j < G; j++) {
    _tile_zero(0);
    _tile_zero(1);
    if (two) {
      _tile_zero(2);
      _tile_zero(3);
    }
    for (int64_t kk = j * g; kk < (j + 1) * g; kk += kb) {
      _tile_loadd(4, ah + kk, k);
      _tile_loadd(5, al + kk, k);
      _tile_loadd(6, b0 + kk * MX_QR, 64);
      _tile_dpbsud(0, 4, 6);
      _tile_dpbsud(1, 5, 6);
      if (two) {
        _tile_loadd(7, b1 + kk * MX_QR, 64);
        _tile_dpbsud(2, 4, 7);
        _tile_dpbsud(3, 5, 7);
      }
    }
    if (j > 0) {  // group j - 1's float steps while the tiles compute group j
      int32_t(*c)[AR * MX_QR] = cbuf[(j - 1) & 1];
      group_out(w, sc, row0, mb, pa, j - 1, f16, c[0], c[1], ys[0]);
      if (two) group_out(w, sc, row0, mb, pa + 1, j - 1, f16, c[2], c[3], ys[1]);
    }
    int32_t(*c)[AR * MX_QR] = cbuf[j & 1];
    _tile_stored(0, c[0], 64);
    _tile_stored(1, c[1], 64);
    if (two) {
      _tile_stored(2, c[2], 64);
      _tile_stored(3, c[3], 64);
    }
  }
  int32_t(*c)[AR * MX_QR] = cbuf[(G - 1) & 1];
  group_out(w, sc, row0, mb, pa, G - 1, f16, c[0], c[1], ys[0]);
  if (two) group_out(w, sc, row0, mb, pa + 1, G - 1, f16, c[2], c[3], ys[1]);
  for (int t = 0; t < (two ? 2 : 1); t++) {
    int64_t p = pa + t, rows = w->n - p * MX_QR;
    if (w->b) bias_out(w, sc, row0, mb, p, z, f16, yb[t]);
    __mmask16 mask = rows >= MX_QR ? (__mmask16)0xffff : (__mmask16)((1u << rows) - 1u);
    for (int i = 0; i < mb; i++)
      _mm512_mask_storeu_ps(
          y + i * ldy + p * MX_QR, mask,
          _mm512_add_ps(_mm512_load_ps(ys[t] + i * MX_QR), _mm512_load_ps(yb[t] + i * MX_QR)));
  }
}

MX_TQAMX void mx_cpu_qgemm_amx(const mx_cpu_qpacked_t *w, const float *x, int64_t ldx, float *y,
                               int64_t ldy, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
  const int64_t k = w->k, g = w->group, G = w->groups;
  amx_scratch_t *sc = g <= MAXG ? scratch_get() : NULL;
  if (!sc) {  // groups over 128, or no memory: the AVX-512 GEMM (the same results)
    mx_cpu_qkernels_avx512_vnni16.gemm(w, x, ldx, y, ldy, m0, m1, p0, p1);
    return;
  }
  const int kb = g % 64 == 0 ? 64 : 32;  // k bytes per tile step
  const bool q4 = w->bits == 4;
  const int32_t z = q4 ? 8 : 128;
  mx_amx_cfg_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 4; t++) cfg.rows[t] = AR, cfg.colsb[t] = 64;
  for (int t = 4; t < 6; t++) cfg.rows[t] = AR, cfg.colsb[t] = (uint16_t)kb;
  for (int t = 6; t < 8; t++) cfg.rows[t] = (uint8_t)(kb / 4), cfg.colsb[t] = 64;
  _tile_loadconfig(&cfg);
  const int64_t chunk = CHUNK_BYTES / k / AR * AR;  // rows per chunk (>= 16: k <= MX_Q_MAX_K)
  const int64_t panel_bytes = AR * k;               // bytes of one panel as B rows
  int64_t pb = BLOCK_TARGET / panel_bytes;
  if (pb < 1) pb = 1;
  for (int64_t c0 = m0; c0 < m1; c0 += chunk) {
    int64_t rows = m1 - c0 < chunk ? m1 - c0 : chunk, rows16 = (rows + AR - 1) / AR * AR;
    for (int64_t i = 0; i < rows; i++) {
      mx_qact_t a = {sc->xsum + i * G, sc->h + i * k, sc->l + i * k, sc->dx + i * G,
                     sc->zq + i * G};
      w->qk->prep(w, x + (c0 + i) * ldx, &a);
      for (int64_t j = 0; j < G; j++) sc->zq[i * G + j] *= z;
    }
    memset(sc->h + rows * k, 0, (size_t)((rows16 - rows) * k));
    memset(sc->l + rows * k, 0, (size_t)((rows16 - rows) * k));
    for (int64_t pa = p0; pa < p1; pa += pb) {
      int64_t pz = pa + pb < p1 ? pa + pb : p1;
      if (q4)
        for (int64_t p = pa; p < pz; p++) unpack_q4(w, p, sc->b + (p - pa) * panel_bytes);
      for (int64_t r0 = 0; r0 < rows16; r0 += AR) {
        int mb = rows - r0 < AR ? (int)(rows - r0) : AR;
        for (int64_t p = pa; p < pz; p += 2) {
          const uint8_t *b0 = q4 ? sc->b + (p - pa) * panel_bytes : w->q + p * panel_bytes;
          bool two = p + 1 < pz;
          panel_pair(w, sc, r0, mb, p, two, b0, b0 + panel_bytes, kb, y + (c0 + r0) * ldy, ldy);
        }
      }
    }
  }
  _tile_release();
}

#endif  // __x86_64__
