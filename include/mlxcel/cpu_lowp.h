// mlxcel-xla CPU runtime: bf16 / f16 matmul kernels (the graphs' `dot_general(bf16, bf16) ->
// f32` of a linear layer whose weight is resident in bf16 or f16, see mx_g_linear) and the
// f32 <-> bf16 / f16 `convert` kernels.
//
// Semantics: y[n] = sum_k f32(W[n, k]) * f32(x[k]) where W and x are both bf16 or both f16: a
// product of two such values is exact in f32, and the sum is an f32 accumulation in an order fixed
// by the variant (as the f32 kernels of cpu.h: bit-identical for any thread count, within the
// forward error bound of an f32 sum of the same products in any other order). The activation x
// is already rounded (the graph's convert, mx_cpu_convert below): nothing here rounds it again.
//
// Variants (mx_cpu_lowp_get; the best the machine has is the default):
//   bf16: "amx" (GEMM on AMX tiles, TDPBF16PS, for the k in whole 32s, the rest and the GEMV
//         as "avx512"), "avx512bf16" (VDPBF16PS: two k per lane and instruction), "avx512"
//         and "avx2" (bf16 -> f32 by a 16-bit shift, FMA, in VDPBF16PS's order), "scalar".
//         AMX and VDPBF16PS treat subnormal inputs and results as zero: a product below 2^-126
//         counts as 0, far below any f32 accumulation error.
//   f16:  "avx512" (VCVTPH2PS on 512 bits + FMA), "avx2" (F16C + FMA), "scalar".
// Weights are packed once into panels of MX_CPU_LOWP_NR rows (layout per element type, shared by
// all the variants of that type): 2 bytes per weight, so a decode step streams half the bytes of
// the f32 kernels.
//
// Threading, ownership and alignment: as in cpu.h (split by (ith, nth), fixed per-output
// summation order; packed objects own their memory, immutable once packed).
#ifndef MLXCEL_CPU_LOWP_H
#define MLXCEL_CPU_LOWP_H

#include "mlxcel/cpu.h"
#include "mlxcel/hlo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mx_cpu_lowp_isa {
  MX_CPU_LOWP_SCALAR = 0,
  MX_CPU_LOWP_AVX2 = 1,        // AVX2 + FMA (+ F16C for f16)
  MX_CPU_LOWP_AVX512 = 2,      // AVX-512 F/BW/VL/DQ + FMA
  MX_CPU_LOWP_AVX512BF16 = 3,  // + AVX512_BF16 (bf16 only)
  MX_CPU_LOWP_AMX = 4,         // + AMX-BF16 tiles for the GEMM (bf16 only)
  MX_CPU_LOWP_ISA_COUNT
} mx_cpu_lowp_isa_t;

enum { MX_CPU_LOWP_NR = 32 };  // rows per packed panel, every variant

typedef struct mx_cpu_lowp_kernels mx_cpu_lowp_kernels_t;

// The kernels of element type et (MX_ELEM_BF16 or MX_ELEM_F16) for `isa`; NULL when this machine
// or build cannot run them, or the combination does not exist (f16 x avx512bf16).
const mx_cpu_lowp_kernels_t *mx_cpu_lowp_get(mx_elem_type_t et, mx_cpu_lowp_isa_t isa);
// The fastest available for et (scalar at worst); NULL only for an et other than bf16 / f16.
const mx_cpu_lowp_kernels_t *mx_cpu_lowp_best(mx_elem_type_t et);
const char *mx_cpu_lowp_name(const mx_cpu_lowp_kernels_t *kt);  // "avx512bf16", ...
mx_elem_type_t mx_cpu_lowp_elem(const mx_cpu_lowp_kernels_t *kt);

// W[n, k] (bf16 or f16 bit patterns, row stride ldw elements) packed for kt.
typedef struct mx_cpu_packed_lowp {
  const mx_cpu_lowp_kernels_t *kt;
  mx_elem_type_t et;
  int64_t n, k;
  int64_t kpad;    // k rounded up to the variant's k step (2 for bf16 pairs, 1 for f16)
  int64_t panels;  // ceil(n / MX_CPU_LOWP_NR); panel p holds kpad * NR elements
  uint16_t *data;  // 64-byte aligned, owned (a weight cache's packings: by the cache); rows past
                   // n and k past k are zero
} mx_cpu_packed_lowp_t;

mx_status_t mx_cpu_pack_lowp(const mx_cpu_lowp_kernels_t *kt, mx_cpu_pool_t *pool,
                             const uint16_t *w, int64_t ldw, int64_t n, int64_t k,
                             mx_cpu_packed_lowp_t **out);
void mx_cpu_packed_lowp_destroy(mx_cpu_packed_lowp_t *p);  // accepts NULL
size_t mx_cpu_packed_lowp_bytes(const mx_cpu_packed_lowp_t *p);

// y[n] = W x for one activation row x[k] (same element type as W). Thread ith computes a
// contiguous range of panels.
void mx_cpu_gemv_packed_lowp(const mx_cpu_packed_lowp_t *w, const uint16_t *x, float *y, int ith,
                             int nth);
// The same with the panels shared through `work` (cpu.h's dynamic work sharing).
void mx_cpu_gemv_packed_lowp_dyn(const mx_cpu_packed_lowp_t *w, const uint16_t *x, float *y,
                                 mx_cpu_work_t *work, int ith, int nth);
// Y[m, n] = X W^T, X[m, k] row stride ldx elements, Y row stride ldy. Threads split panels (and
// rows when panels are fewer than threads); K in passes of 256 with the current block of X
// packed on the stack. m == 1 is valid (GEMM's summation order).
void mx_cpu_gemm_packed_lowp(const mx_cpu_packed_lowp_t *w, const uint16_t *x, int64_t ldx,
                             float *y, int64_t ldy, int64_t m, int ith, int nth);

// The same with a bias (NULL: none): each output y[.., j] is its complete sum, then + bias[j]
// as one f32 add, bit for bit the graph's add after its dot_general; added by the thread that
// wrote the output, right after its last pass (no barrier, no second pass over Y).
void mx_cpu_gemv_packed_lowp_dyn_bias(const mx_cpu_packed_lowp_t *w, const uint16_t *x,
                                      const float *bias, float *y, mx_cpu_work_t *work, int ith,
                                      int nth);
void mx_cpu_gemm_packed_lowp_bias(const mx_cpu_packed_lowp_t *w, const uint16_t *x, int64_t ldx,
                                  const float *bias, float *y, int64_t ldy, int64_t m, int ith,
                                  int nth);

// Whole-pool wrappers (pool NULL = the calling thread).
void mx_cpu_gemv_packed_lowp_run(mx_cpu_pool_t *pool, const mx_cpu_packed_lowp_t *w,
                                 const uint16_t *x, float *y);
void mx_cpu_gemm_packed_lowp_run(mx_cpu_pool_t *pool, const mx_cpu_packed_lowp_t *w,
                                 const uint16_t *x, int64_t ldx, float *y, int64_t ldy, int64_t m);

// dst[i] = convert(src[i]) for i < n, between f32 and bf16 / f16 (either way; from == to is a
// copy): StableHLO convert semantics (round to nearest even, overflow to inf, NaN stays NaN,
// f16 subnormals exact), bit-identical to the reference interpreter and to src/base/half.h.
// Thread ith converts a contiguous range (in units of 32 elements). Returns false (nothing
// written) for an unsupported pair of types.
bool mx_cpu_convert(const void *src, mx_elem_type_t from, void *dst, mx_elem_type_t to, int64_t n,
                    int ith, int nth);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_CPU_LOWP_H
