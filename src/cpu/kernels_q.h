// Quantized-weight kernels of the CPU runtime: the `mx.linear` / `mx.embedding` composites of
// include/mlxcel/model.h's formats (int8, int4, MLX affine 4/8-bit) without materializing the
// dequantized weight matrix.
//
// Packed form (built once per weight at plan compile time, shared like the f32 packed weights):
// unsigned values u (int8: q + 128; int4: q + 8; affine: as stored) in panels of 16 rows, with
// per (row, group) scales s and, for affine, biases b; the weight is w = s (u - o) + b with
// o = 128 (int8), 8 (int4) or 0 (affine, b stored). Two byte layouts:
//   KMAJOR (exact path): 8-bit q[p][k][16]; 4-bit q[p][k / 2][16] (low nibble = even k);
//   VNNI: 8-bit q[p][k / 4][16][4]; 4-bit q[p][k / 8][16][4] (low nibbles = k 0..3 of the
//     chunk, high nibbles = k 4..7), the operand order of vpdpbusd.
// Scales / biases: [p][group][16] as f16 (when stored so) or f32.
//
// Decode (GEMV), per output row and group j, with xsum_j the sum of x over the group:
//   exact path: y += s_j (sum_k u_k x_k - o xsum_j) [+ b_j xsum_j]: f32 FMA on the unpacked
//     values (the interpreter's decomposition up to summation order: differences are rounding
//     level, ~1e-6 relative);
//   VNNI16 path (AVX-512 VNNI; the default there): activations quantized per group to 16 bits,
//     xq = rint(x / dx_j), dx_j = max|x over the group| / 32639, split as xq = 256 h + l (h, l
//     int8); y += s_j dx_j (256 sum u h + sum u l - z sum xq) [+ (b_j + z s_j) xsum_j] with
//     z = 2^(bits - 1), the integer sums exact (two vpdpbusd per chunk). The error is the 16-bit
//     rounding of x only: |dy| <= sum_j |s_j| dx_j / 2 sum_k |u_k - z| per row (~1.5e-5 of the
//     group's max |x| per weight);
//   VNNI path (MX_CPU_QKERNEL_VNNI): the same with 8-bit activations (dx_j = max|x| / 127,
//     one vpdpbusd per chunk): ~1.6x faster than VNNI16 and 256 times less accurate.
// Prefill (GEMM, m > 1), VNNI16 path: each row of x is prepared as the GEMV prepares it and
//   the integer sums of 4 rows at a time share each weight load (8 vpdpbusd per 64 bytes
//   instead of 2), or of 16 rows in AMX-INT8 tiles (TDPBSUD, 16 x 16 x 64 products per
//   instruction), so a prefill row equals that row's decode bit for bit. Other paths: a panel
//   slice of KC k-values is dequantized (w = (u - o) s [+ b], the decomposition's arithmetic)
//   into an L1/L2-resident f32 block and fed to the f32 GEMM microkernel of mlxcel/cpu.h.
// Every row is computed by one thread in a fixed order, so results are bit-identical for any
// thread count.
#ifndef MX_CPU_KERNELS_Q_H
#define MX_CPU_KERNELS_Q_H

#include "cpu/stream_alloc.h"
#include "mlxcel/cpu.h"
#include "mlxcel/hlo.h"

enum { MX_QR = 16 };          // rows per quantized panel
enum { MX_Q_MAX_K = 32768 };  // largest K of the fast kernels (per-call stack buffers)

// Formats (the numbering of src/model/quant_internal.h's mx_q_mode_t).
enum { MX_CPU_Q_INT8 = 1, MX_CPU_Q_INT4 = 2, MX_CPU_Q_AFFINE = 3 };
enum { MX_QL_KMAJOR = 0, MX_QL_VNNI = 1 };

// A quantized weight as the graph binds it (mx.linear operands).
typedef struct mx_cpu_qsrc {
  int mode;             // MX_CPU_Q_*
  int bits;             // 8 or 4
  int64_t n, k, group;  // logical W[n, k]; k % group == 0, group % 8 == 0
  const void *w;        // int8: i8 [n, k]; else u32 [n, k * bits / 32] (LSB first)
  mx_elem_type_t sdt;   // scales / biases: F32, F16 or BF16
  const void *scales;   // [n, k / group]
  const void *biases;   // affine: [n, k / group]; NULL otherwise
} mx_cpu_qsrc_t;

typedef struct mx_cpu_qkernels mx_cpu_qkernels_t;

typedef struct mx_cpu_qpacked {
  const mx_cpu_kernels_t *kt;   // f32 table whose GEMM microkernel prefill uses
  const mx_cpu_qkernels_t *qk;  // the quantized kernels it was packed for
  int mode, bits, layout;
  int64_t n, k, group, groups, panels;
  int offset;    // o: 128, 8 or 0
  bool f16;      // scales / biases stored as f16 (else f32)
  uint8_t *q;    // 64-byte aligned, panels * k * 16 * bits / 8 bytes (then s, b), owned (a weight
                 // cache's packings: by the cache)
  void *s, *b;   // [panels][groups][16]; b NULL unless affine
  size_t bytes;  // q + s + b: what one GEMV reads
} mx_cpu_qpacked_t;

// Per-call activation data of a GEMV (on the caller's stack; see mx_cpu_qgemv).
typedef struct mx_qact {
  float *xsum;     // [groups]
  int8_t *xq;      // [k] (VNNI: the int8 activations; VNNI16: their high bytes)
  int8_t *xl;      // [k] (VNNI16: the low bytes)
  float *dx;       // [groups] (VNNI, VNNI16)
  int32_t *xqsum;  // [groups] (VNNI, VNNI16)
} mx_qact_t;

struct mx_cpu_qkernels {
  const char *name;  // "scalar", "avx2", "avx512", "avx512-vnni"
  int layout;        // MX_QL_*
  // Fills a (xsum; VNNI also xq / dx / xqsum) from x[k].
  void (*prep)(const mx_cpu_qpacked_t *w, const float *x, mx_qact_t *a);
  // y[p*16 + r] for the panels [p0, p1) and rows < n.
  void (*gemv)(const mx_cpu_qpacked_t *w, const float *x, const mx_qact_t *a, float *y, int64_t p0,
               int64_t p1);
  // dst[kk * ld + r] = w[p*16 + r][k0 + kk] for kk < kc, r < 16 (f32, the decomposition's
  // arithmetic); k0 and kc multiples of 8.
  void (*dequant)(const mx_cpu_qpacked_t *w, int64_t p, int64_t k0, int64_t kc, float *dst,
                  int64_t ld);
  // Prefill on quantized activations (NULL: the dequantizing GEMM below): y[i * ldy + p*16 + r]
  // for rows i in [m0, m1) of x (row stride ldx) and panels [p0, p1), each row exactly as prep +
  // gemv compute it (bit for bit), several rows per weight load.
  void (*gemm)(const mx_cpu_qpacked_t *w, const float *x, int64_t ldx, float *y, int64_t ldy,
               int64_t m0, int64_t m1, int64_t p0, int64_t p1);
  // Whether threads should split a long prompt's rows rather than the panels (mx_cpu_qgemm):
  // gemm prepares every row it computes, so with the panels split each thread prepares all of
  // them. Results are the same either way (every row is computed alone).
  bool gemm_split_rows;
};

extern const mx_cpu_qkernels_t mx_cpu_qkernels_scalar;
// The portable kernels (kernels_q_scalar.c), for any layout; the ISA tables reuse some.
void mx_cpu_qprep_generic(const mx_cpu_qpacked_t *w, const float *x, mx_qact_t *a);
void mx_cpu_qgemv_generic(const mx_cpu_qpacked_t *w, const float *x, const mx_qact_t *a, float *y,
                          int64_t p0, int64_t p1);
void mx_cpu_qdequant_generic(const mx_cpu_qpacked_t *w, int64_t p, int64_t k0, int64_t kc,
                             float *dst, int64_t ld);
#if defined(__x86_64__)
extern const mx_cpu_qkernels_t mx_cpu_qkernels_avx2;
extern const mx_cpu_qkernels_t mx_cpu_qkernels_avx512;
extern const mx_cpu_qkernels_t mx_cpu_qkernels_avx512_vnni;
extern const mx_cpu_qkernels_t mx_cpu_qkernels_avx512_vnni16;
// VNNI16 with its prefill on AMX-INT8 tiles (kernels_q_amx.c): the same results (GEMV and GEMM
// bit for bit), where the CPU and the OS allow the tiles (mx_cpu_features()->amx_int8).
extern const mx_cpu_qkernels_t mx_cpu_qkernels_avx512_vnni16_amx;
// Its GEMM entry (kernels_q_amx.c; groups over 128 take the AVX-512 VNNI16 GEMM).
void mx_cpu_qgemm_amx(const mx_cpu_qpacked_t *w, const float *x, int64_t ldx, float *y, int64_t ldy,
                      int64_t m0, int64_t m1, int64_t p0, int64_t p1);
#endif

// The quantized kernels for `bits`-bit weights with f32 table kt and the caller's choice (cpu.h):
// AUTO is VNNI16 where the CPU has AVX-512 VNNI, else the ISA's exact path; VNNI16 and VNNI where
// the CPU has them, else exact. Measurements: docs/quantization.md.
const mx_cpu_qkernels_t *mx_cpu_qkernels_for(const mx_cpu_kernels_t *kt, int bits,
                                             mx_cpu_qkernel_t choice);

// Whether src can be packed (format, group % 8 == 0, k <= MX_Q_MAX_K, dtypes).
bool mx_cpu_qsrc_ok(const mx_cpu_qsrc_t *src);
// Packs src for kt / qk (pool NULL = calling thread). The result owns its memory.
mx_status_t mx_cpu_qpack(const mx_cpu_kernels_t *kt, const mx_cpu_qkernels_t *qk,
                         mx_cpu_pool_t *pool, const mx_cpu_qsrc_t *src, mx_cpu_qpacked_t **out);
// The same with the codes, scales and biases carved from `slab` (NULL: as mx_cpu_qpack), which
// then owns them: the result's q must not be freed (mx_cpu_weights_t's packings).
mx_status_t mx_cpu_qpack_in(const mx_cpu_kernels_t *kt, const mx_cpu_qkernels_t *qk,
                            mx_cpu_pool_t *pool, const mx_cpu_qsrc_t *src, mx_cpu_slab_t *slab,
                            mx_cpu_qpacked_t **out);
void mx_cpu_qpacked_destroy(mx_cpu_qpacked_t *w);  // accepts NULL

// y[n] = W x. Thread ith computes a contiguous range of panels (each thread prepares the
// activation data itself: O(k), no barrier).
void mx_cpu_qgemv(const mx_cpu_qpacked_t *w, const float *x, float *y, int ith, int nth);
// The same with the panels shared through `work` (cpu.h's dynamic work sharing; chunks of at
// least 64 KiB). A thread that claims no chunk skips the activation preparation.
void mx_cpu_qgemv_dyn(const mx_cpu_qpacked_t *w, const float *x, float *y, mx_cpu_work_t *work,
                      int ith, int nth);
// The gate and up projections of a gated MLP and its activation in one pass (decode, one row):
// gate = Wg x, up = Wu x, act = act_kind(gate) * up (mx_cpu_gated_act_f32's activations), the
// panels of both shared through `work` in the same chunks, each chunk's activation right after
// its two GEMVs (no barrier in between) and x prepared once per thread for both. Bit-identical
// to two mx_cpu_qgemv_dyn calls and mx_cpu_gated_act_f32. The pair must pass
// mx_cpu_qgated_pair_ok (same kernels, format, shape and group).
bool mx_cpu_qgated_pair_ok(const mx_cpu_qpacked_t *gate, const mx_cpu_qpacked_t *up);
void mx_cpu_qgated_up_dyn(const mx_cpu_qpacked_t *gate_w, const mx_cpu_qpacked_t *up_w,
                          const float *x, float *gate, float *up, float *act, int act_kind,
                          mx_cpu_work_t *work, int ith, int nth);
// Y[m, n] = X[m, k] W^T (row strides ldx, ldy). Threads split panels (and rows when panels are
// fewer than threads).
void mx_cpu_qgemm(const mx_cpu_qpacked_t *w, const float *x, int64_t ldx, float *y, int64_t ldy,
                  int64_t m, int ith, int nth);
// out[i, :] = dequantized row ids[i] of src (the graph form, no packing), i < n_ids; ids outside
// [0, n) give zeros (the gather would clamp; the plan only runs valid ids). Threads split ids.
void mx_cpu_qembed(const mx_cpu_qsrc_t *src, const int32_t *ids, int64_t n_ids, float *out, int ith,
                   int nth);

// Helpers shared by the ISA files.
static inline float mx_cpu_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0) {
    float v = (float)m * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  x = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112u) << 23) | (m << 13));
  float f;
  __builtin_memcpy(&f, &x, sizeof f);
  return f;
}
// Scale / bias element i of a packed array.
static inline float mx_cpu_qparam(const mx_cpu_qpacked_t *w, const void *a, int64_t i) {
  return w->f16 ? mx_cpu_h2f(((const uint16_t *)a)[i]) : ((const float *)a)[i];
}
// Value u of row r (< 16) of panel p at column kk.
static inline unsigned mx_cpu_qget(const mx_cpu_qpacked_t *w, int64_t p, int r, int64_t kk) {
  const uint8_t *q = w->q;
  int64_t k = w->k;
  if (w->layout == MX_QL_KMAJOR) {
    if (w->bits == 8) return q[(p * k + kk) * MX_QR + r];
    uint8_t v = q[(p * (k / 2) + kk / 2) * MX_QR + r];
    return kk & 1 ? v >> 4 : v & 15u;
  }
  if (w->bits == 8) return q[((p * (k / 4) + kk / 4) * MX_QR + r) * 4 + kk % 4];
  uint8_t v = q[((p * (k / 8) + kk / 8) * MX_QR + r) * 4 + kk % 4];
  return (kk % 8) / 4 ? v >> 4 : v & 15u;
}

#endif  // MX_CPU_KERNELS_Q_H
