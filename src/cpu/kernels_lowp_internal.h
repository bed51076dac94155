// The dispatch tables behind mx_cpu_lowp_kernels_t (include/mlxcel/cpu_lowp.h).
//
// Packed layouts (NR = MX_CPU_LOWP_NR rows per panel, rows past n and k past k are zero):
//   bf16: k in pairs: panel p, pair q, row r: data[(p * kpad/2 + q) * 2NR + 2r + j] =
//         W[p*NR + r][2q + j] (j = 0, 1); kpad = k rounded up to even. One 64-byte vector holds
//         16 rows x one pair, which is what VDPBF16PS multiplies with a broadcast pair of x.
//   f16:  k-major: data[(p * k + kk) * NR + r] = W[p*NR + r][kk]; kpad = k.
// In both, the slice of a panel for k in [pc, pc + kc) (pc even for bf16) starts at element
// pc * NR of the panel.
#ifndef MX_CPU_KERNELS_LOWP_INTERNAL_H
#define MX_CPU_KERNELS_LOWP_INTERNAL_H

#include "cpu/stream_alloc.h"
#include "mlxcel/cpu_lowp.h"

// mx_cpu_pack_lowp whose packed data is carved from `slab` (NULL: its own stream allocation),
// which then owns it (as mx_cpu_pack_f32_in).
mx_status_t mx_cpu_pack_lowp_in(const mx_cpu_lowp_kernels_t *kt, mx_cpu_pool_t *pool,
                                const uint16_t *w, int64_t ldw, int64_t n, int64_t k,
                                mx_cpu_slab_t *slab, mx_cpu_packed_lowp_t **out);

// The AVX2 GEMVs prefetch their weight stream this many bytes ahead, one prefetch per 64-byte
// line: with 2-byte weights the hardware prefetcher alone leaves a single core's stream below
// the f32 GEMV's bytes per second (bench/cpu_lowp.c --gemv). The AVX-512 ones split it into L1
// and L2 (cpu/prefetch.h), which measured better (docs/performance.md, "Kernel measurements").
#define MX_LOWP_PREFETCH_BYTES 8192

enum {
  MX_LOWP_NR = MX_CPU_LOWP_NR,
  MX_LOWP_KC = 256,  // K per GEMM pass (even)
  MX_LOWP_NC_PANELS = 16,
  MX_LOWP_MAX_MR = 16,
};

struct mx_cpu_lowp_kernels {
  const char *name;
  mx_cpu_lowp_isa_t isa;
  mx_elem_type_t et;
  int mr;        // GEMM microkernel rows
  bool a_pairs;  // GEMM A block: bf16 pairs, apack32[q * mr + i] = x[i][2q] | x[i][2q+1] << 16;
                 // else f32, apackf[kk * mr + i] = f32(x[i][kk]). Rows past mr_valid are 0.
  // Panels [p0, p1) of a packed W (k: logical depth; kpad from the layout); x[k] in W's type;
  // writes y[p*NR + r] for rows < n_total.
  void (*gemv)(const uint16_t *panels, const uint16_t *x, float *y, int64_t p0, int64_t p1,
               int64_t k, int64_t n_total);
  // C[i][j] (+)= sum over the kc (even for bf16) k of this pass, i < mr_valid, j < nr_valid;
  // b: the panel's slice for the pass. accumulate = false starts from 0. One chain per
  // element in k order, so passes with accumulate = true give the unsplit result.
  void (*ukernel)(int64_t kc, const void *apack, const uint16_t *b, float *c, int64_t ldc,
                  int mr_valid, int nr_valid, bool accumulate);
  // Optional (NULL = none): writes Y[m0:m1, panels p0:p1] over the first K0 k (a multiple of the
  // step it returns, 0 = nothing done); the driver then adds k in [K0, kpad) with `ukernel`.
  int64_t (*gemm_block)(const mx_cpu_packed_lowp_t *w, const uint16_t *x, int64_t ldx, float *y,
                        int64_t ldy, int64_t m0, int64_t m1, int64_t p0, int64_t p1);
};

#if defined(__x86_64__)
// AMX block (kernels_lowp_amx.c).
int64_t mx_cpu_lowp_amx_block(const mx_cpu_packed_lowp_t *w, const uint16_t *x, int64_t ldx,
                              float *y, int64_t ldy, int64_t m0, int64_t m1, int64_t p0,
                              int64_t p1);
#endif

// Bulk conversions of one ISA (NULL = the portable loops of src/base/half.c).
typedef struct mx_cpu_lowp_convert {
  void (*f32_to_bf16)(const float *src, uint16_t *dst, int64_t n);
  void (*bf16_to_f32)(const uint16_t *src, float *dst, int64_t n);
  void (*f32_to_f16)(const float *src, uint16_t *dst, int64_t n);
  void (*f16_to_f32)(const uint16_t *src, float *dst, int64_t n);
} mx_cpu_lowp_convert_t;

extern const struct mx_cpu_lowp_kernels mx_cpu_lowp_bf16_scalar, mx_cpu_lowp_f16_scalar;
#if defined(__x86_64__)
extern const struct mx_cpu_lowp_kernels mx_cpu_lowp_bf16_avx2, mx_cpu_lowp_f16_avx2;
extern const struct mx_cpu_lowp_kernels mx_cpu_lowp_bf16_avx512, mx_cpu_lowp_f16_avx512;
extern const struct mx_cpu_lowp_kernels mx_cpu_lowp_bf16_avx512bf16, mx_cpu_lowp_bf16_amx;
extern const mx_cpu_lowp_convert_t mx_cpu_lowp_convert_avx2, mx_cpu_lowp_convert_avx512;
#endif

#endif  // MX_CPU_KERNELS_LOWP_INTERNAL_H
