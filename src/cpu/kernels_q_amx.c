// AMX-INT8 prefill of the VNNI16 path (kernels_q.h): Y = X W^T for int8 / int4 / affine weights
// on 16-bit activations, with TDPBSUD (signed activation bytes x unsigned weight bytes, exact
// int32 sums) in place of vpdpbusd. Called only when mx_cpu_features() reported amx_int8.
//
// The integer products are cheap here (two TDPBSUD per 16 x 16 block of outputs and up to 64 k:
// the high and the low activation bytes); what costs is everything around them: storing the
// sums of every group out of the tiles, the per-group float steps, and preparing both
// operands. Hence the shape of this kernel (docs/performance.md, "Integer prefill", has the
// profile that led to it):
// - the activations of a chunk of up to CHUNK_BYTES / k rows are prepared once per call (the
//   GEMV's prep, whole rows), not once per group and panel block;
// - the weights of a block of panels are copied (8-bit) or unpacked to bytes (4-bit, AMX's B
//   layout) once per chunk into an L2-resident buffer, not once per 16-row block (where the B
//   tile load stalled on the bytes just written) nor read by the tile loads from memory (where
//   the first row block's loads missed to DRAM one by one);
// - two panels share each pair of A tiles (tiles: C 0-3 = high / low sums of panel a, then of
//   panel b; A 4-5 = high / low activation bytes of 16 rows; B 6-7 = the two panels' weights);
// - group j's sums go to one of two buffers (stored after group j - 1's float steps) and its
//   float steps run once group j + 1's TDPBSUDs are issued, not right after its own products
//   (where the store waited for the products and the float steps for the store).
// Measured on Sapphire Rapids, one 16 x 16 block of outputs and 32 k in L1: ~11 ns of TDPBSUD
// (the same at 64 k: its cost does not depend on the depth), ~9 ns of tile stores, ~15 ns of
// float steps, and the tile work and the float steps overlap little (~31 ns together): groups of
// 32 (GGUF's blocks) cost nearly twice what groups of 64 cost per product.
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

// TILESTORED of tile t to the 16 x 16 int32 at buf (64-byte rows), the written bytes its output
// operand: GCC's _tile_stored clobbers all memory, which kept every accumulator of the float
// steps on the stack across it (a load and a store per row and group).
#define MX_TILE_STORE(t, buf)                             \
  __asm__ volatile("tilestored %%tmm" #t ", (%1,%2,1)"    \
                   : "=m"(*(int32_t(*)[AR * MX_QR])(buf)) \
                   : "r"(buf), "r"((long)64))

// Per-thread working memory (1.7 MiB, allocated on a thread's first call and freed at its exit:
// too large for the pool threads' stacks or for static TLS in every thread of the process).
typedef struct {
  // High / low activation bytes, row i of the chunk at h + i * k (an A tile: 16 rows at stride
  // k; a layout with each tile's 16 x kb bytes contiguous measured 5% slower, its copy included).
  _Alignas(64) int8_t h[CHUNK_BYTES];
  _Alignas(64) int8_t l[CHUNK_BYTES];
  _Alignas(64) float dx[CHUNK_PARAMS];  // per (row, group): the prep's dx, xsum and
  _Alignas(64) float xsum[CHUNK_PARAMS];
  _Alignas(64) int32_t zq[CHUNK_PARAMS];  // z * xqsum
  _Alignas(64) uint8_t b[BLOCK_BYTES];    // a block of panels as B rows: 16 k rows of 64 bytes
                                          // per 4 k, the 8-bit VNNI layout (kernels_q.h)
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
// All 16 rows (rows past the chunk's have zero sums and parameters).
MX_TQAMX static inline __attribute__((always_inline)) void group_out(
    const mx_cpu_qpacked_t *w, const amx_scratch_t *sc, int64_t row0, int64_t p, int64_t j,
    bool f16, const int32_t *hi, const int32_t *lo, float *ys) {
  const int64_t G = w->groups;
  __m512 s = params16(w->s, (p * G + j) * MX_QR, f16);
  const float *dx = sc->dx + row0 * G + j;
  const int32_t *zq = sc->zq + row0 * G + j;
#pragma GCC unroll 16
  for (int i = 0; i < AR; i++) {
    __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(hi + i * MX_QR), 8),
                                    _mm512_load_si512(lo + i * MX_QR));
    isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(zq[i * G]));
    __m512 acc = _mm512_load_ps(ys + i * MX_QR);
    acc =
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(s, _mm512_set1_ps(dx[i * G])), acc);
    _mm512_store_ps(ys + i * MX_QR, acc);
  }
}

// Stores rows < mb of panel p: ys (16 x 16 in memory) plus, for affine weights, the bias term
// in its own accumulator as the GEMV has it: yb[i] = sum over groups of (b + z s) xsum_ij.
MX_TQAMX static void panel_store(const mx_cpu_qpacked_t *w, const amx_scratch_t *sc, int64_t row0,
                                 int mb, int64_t p, const float *ys, float *y, int64_t ldy) {
  const int64_t G = w->groups;
  const bool f16 = w->f16;
  __m512 yb[AR];
#pragma GCC unroll 16
  for (int i = 0; i < AR; i++) yb[i] = _mm512_setzero_ps();
  if (w->b) {
    const __m512 z = _mm512_set1_ps(w->bits == 4 ? 8.0f : 128.0f);
    for (int64_t j = 0; j < G; j++) {
      int64_t pi = (p * G + j) * MX_QR;
      __m512 c = _mm512_fmadd_ps(params16(w->s, pi, f16), z, params16(w->b, pi, f16));
      const float *xs = sc->xsum + row0 * G + j;
#pragma GCC unroll 16
      for (int i = 0; i < AR; i++) yb[i] = _mm512_fmadd_ps(c, _mm512_set1_ps(xs[i * G]), yb[i]);
    }
  }
  int64_t rows = w->n - p * MX_QR;
  __mmask16 mask = rows >= MX_QR ? (__mmask16)0xffff : (__mmask16)((1u << rows) - 1u);
#pragma GCC unroll 16
  for (int i = 0; i < AR; i++)
    if (i < mb)
      _mm512_mask_storeu_ps(y + i * ldy + p * MX_QR, mask,
                            _mm512_add_ps(_mm512_load_ps(ys + i * MX_QR), yb[i]));
}

// Rows [row0, row0 + mb) of the chunk (mb <= 16; its A rows past mb are zeros) times panel p
// and, when two, p + 1, whose B rows (VNNI byte layout, 16 * k bytes each) start at b0 / b1.
MX_TQAMX static void panel_pair(const mx_cpu_qpacked_t *w, const amx_scratch_t *sc, int64_t row0,
                                int mb, int64_t p, bool two, const uint8_t *b0, const uint8_t *b1,
                                int kb, float *y, int64_t ldy) {
  const int64_t k = w->k, g = w->group, G = w->groups;
  const bool f16 = w->f16;
  const int8_t *ah = sc->h + row0 * k, *al = sc->l + row0 * k;
  _Alignas(64) int32_t cbuf[2][4][AR * MX_QR];
  _Alignas(64) float ys[2][AR * MX_QR];
  memset(ys, 0, sizeof ys);
  // Group j's products into C 0-3 and their store to cbuf[j & 1]; the float steps of group
  // j - 1 come between the two, while the tiles compute.
#define MX_AMX_GROUP_TILES(j)                                \
  do {                                                       \
    _tile_zero(0);                                           \
    _tile_zero(1);                                           \
    if (two) {                                               \
      _tile_zero(2);                                         \
      _tile_zero(3);                                         \
    }                                                        \
    for (int64_t kk = (j)*g; kk < ((j) + 1) * g; kk += kb) { \
      _tile_loadd(4, ah + kk, k);                            \
      _tile_loadd(5, al + kk, k);                            \
      _tile_loadd(6, b0 + kk * MX_QR, 64);                   \
      _tile_dpbsud(0, 4, 6);                                 \
      _tile_dpbsud(1, 5, 6);                                 \
      if (two) {                                             \
        _tile_loadd(7, b1 + kk * MX_QR, 64);                 \
        _tile_dpbsud(2, 4, 7);                               \
        _tile_dpbsud(3, 5, 7);                               \
      }                                                      \
    }                                                        \
  } while (0)
#define MX_AMX_GROUP_STORE(j)               \
  do {                                      \
    int32_t(*c_)[AR * MX_QR] = cbuf[(j)&1]; \
    MX_TILE_STORE(0, c_[0]);                \
    MX_TILE_STORE(1, c_[1]);                \
    if (two) {                              \
      MX_TILE_STORE(2, c_[2]);              \
      MX_TILE_STORE(3, c_[3]);              \
    }                                       \
  } while (0)
#define MX_AMX_GROUP_OUT(j)                                                \
  do {                                                                     \
    int32_t(*c_)[AR * MX_QR] = cbuf[(j)&1];                                \
    group_out(w, sc, row0, p, (j), f16, c_[0], c_[1], ys[0]);              \
    if (two) group_out(w, sc, row0, p + 1, (j), f16, c_[2], c_[3], ys[1]); \
  } while (0)
  MX_AMX_GROUP_TILES(0);
  MX_AMX_GROUP_STORE(0);
  for (int64_t j = 1; j < G; j++) {
    MX_AMX_GROUP_TILES(j);
    MX_AMX_GROUP_OUT(j - 1);
    MX_AMX_GROUP_STORE(j);
  }
  MX_AMX_GROUP_OUT(G - 1);
#undef MX_AMX_GROUP_TILES
#undef MX_AMX_GROUP_STORE
#undef MX_AMX_GROUP_OUT
  panel_store(w, sc, row0, mb, p, ys[0], y, ldy);
  if (two) panel_store(w, sc, row0, mb, p + 1, ys[1], y, ldy);
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
    memset(sc->dx + rows * G, 0, (size_t)((rows16 - rows) * G) * sizeof *sc->dx);
    memset(sc->xsum + rows * G, 0, (size_t)((rows16 - rows) * G) * sizeof *sc->xsum);
    memset(sc->zq + rows * G, 0, (size_t)((rows16 - rows) * G) * sizeof *sc->zq);
    for (int64_t pa = p0; pa < p1; pa += pb) {
      int64_t pz = pa + pb < p1 ? pa + pb : p1;
      // The block's weights as B rows in the L2-resident buffer: 4-bit ones unpacked, 8-bit ones
      // copied (their tile loads straight from the packed weights missed to DRAM on the first
      // row block: a sequential copy streams them at the bandwidth).
      for (int64_t p = pa; p < pz; p++) {
        if (q4)
          unpack_q4(w, p, sc->b + (p - pa) * panel_bytes);
        else
          memcpy(sc->b + (p - pa) * panel_bytes, w->q + p * panel_bytes, (size_t)panel_bytes);
      }
      // The tile loads are asm statements that name no memory: the activations and the
      // unpacked weights must be in memory before them.
      __asm__ volatile("" ::: "memory");
      for (int64_t r0 = 0; r0 < rows16; r0 += AR) {
        int mb = rows - r0 < AR ? (int)(rows - r0) : AR;
        for (int64_t p = pa; p < pz; p += 2) {
          const uint8_t *b = sc->b + (p - pa) * panel_bytes;
          panel_pair(w, sc, r0, mb, p, p + 1 < pz, b, b + panel_bytes, kb, y + (c0 + r0) * ldy,
                     ldy);
        }
      }
    }
  }
  _tile_release();
}

#endif  // __x86_64__
