// The dispatch table behind mx_cpu_kernels_t and the per-ISA kernel entry points.
//
// Each ISA file (kernels_scalar.c, kernels_avx2.c, kernels_avx512.c, later kernels_neon.c)
// defines one table. Only the ISA files are compiled with target attributes; the drivers in
// kernels.c (thread split, blocking loops) are portable C and call through the table.
#ifndef MX_CPU_KERNELS_INTERNAL_H
#define MX_CPU_KERNELS_INTERNAL_H

#include "cpu/stream_alloc.h"
#include "mlxcel/cpu.h"

// mx_cpu_pack_f32 whose packed data is carved from `slab` (NULL: its own stream allocation),
// which then owns it: the packed object's data must not be freed (mx_cpu_weights_t's packings).
mx_status_t mx_cpu_pack_f32_in(const mx_cpu_kernels_t *kt, mx_cpu_pool_t *pool, const float *w,
                               int64_t ldw, int64_t n, int64_t k, mx_cpu_slab_t *slab,
                               mx_cpu_packed_t **out);

// GEMM blocking: KC is the depth of one pass (a KC x NR slice of a panel is 32 KiB at NR = 32:
// it stays in L1 while the microkernel sweeps MR rows of X); NC_PANELS panels of KC depth
// (~512 KiB) stay in L2 while all rows of X go past them.
// (Overridable at compile time for tuning experiments.)
#ifndef MX_GEMM_KC_DEFAULT
#define MX_GEMM_KC_DEFAULT 256
#endif
#ifndef MX_GEMM_NC_DEFAULT
#define MX_GEMM_NC_DEFAULT 16
#endif
enum {
  MX_GEMM_KC = MX_GEMM_KC_DEFAULT,
  MX_GEMM_NC_PANELS = MX_GEMM_NC_DEFAULT,
  MX_GEMM_MAX_MR = 16
};

struct mx_cpu_kernels {
  mx_cpu_isa_t isa;
  int nr;  // panel rows (GEMM microkernel width)
  int mr;  // GEMM microkernel height (rows of X)
  // y[r] = sum_k w[r*ldw + k] * x[k] for rows r in [0, n). Per-row summation order must not
  // depend on n or on where the row sits in the block (the driver splits rows by thread).
  void (*gemv_rows)(const float *w, int64_t ldw, const float *x, float *y, int64_t n, int64_t k);
  // Packed panels [p0, p1) of a packed W (k, panel stride k*nr floats); writes y[p*nr + r]
  // for rows < n_total.
  void (*gemv_panels)(const float *panels, const float *x, float *y, int64_t p0, int64_t p1,
                      int64_t k, int64_t n_total);
  // C[i][j] (+)= sum_{kk < kc} A[kk*mr + i] * B[kk*nr + j] for i < mr_valid, j < nr_valid.
  // A is a packed kc x mr block (rows past mr_valid are zero padding), B a kc x nr slice of a
  // panel. accumulate = false starts from 0 (C is only written). The sum over kk is one
  // multiply-add chain per element in kk order, so splitting K into passes with
  // accumulate = true gives exactly the unsplit result, whatever mr_valid / nr_valid are.
  void (*gemm_ukernel)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                       int mr_valid, int nr_valid, bool accumulate);
  // Optional (NULL = the driver's portable loop): apack[kk*mr + i] = x[i*ldx + kk] for i <
  // mr_valid, 0 for mr_valid <= i < mr, kk < kc. Packing is ~10-15% of GEMM time when done
  // element by element, hence the SIMD transposes.
  void (*pack_a)(const float *x, int64_t ldx, int mr_valid, int64_t kc, float *apack);
};

extern const struct mx_cpu_kernels mx_cpu_kernels_scalar;
#if defined(__x86_64__)
extern const struct mx_cpu_kernels mx_cpu_kernels_avx2;
extern const struct mx_cpu_kernels mx_cpu_kernels_avx512;
#endif

#endif  // MX_CPU_KERNELS_INTERNAL_H
