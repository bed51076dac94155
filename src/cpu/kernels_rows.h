// Few-row matmul on packed weights with the GEMV's summation order, for batched decoding: each
// of the m rows of Y is bit-identical to what mx_cpu_gemv_packed_f32 gives for that row alone,
// whatever m is and however the rows are split across threads. (The GEMM sums each element in
// one chain, the GEMV in four interleaved ones, so a batch run through the GEMM would differ in
// the last bits from the same sequence decoded alone.)
#ifndef MX_CPU_KERNELS_ROWS_H
#define MX_CPU_KERNELS_ROWS_H

#include "mlxcel/cpu.h"

// Y[i, :] = W X[i, :] for i < m; X row stride ldx, Y row stride ldy (floats). Thread ith
// computes a contiguous range of panels for all rows: the weights are streamed once per call,
// not once per row. Y must not alias X.
void mx_cpu_gemv_packed_rows_f32(const mx_cpu_packed_t *w, const float *x, int64_t ldx, float *y,
                                 int64_t ldy, int64_t m, int ith, int nth);

// Per-ISA bodies: rows [0, m) of X over panels [p0, p1) (m <= MX_ROWS_MAX_M, the most rows
// whose accumulators fit the stack buffer; the graph builders' batch limit is 64).
enum { MX_ROWS_MAX_M = 64 };
#if defined(__x86_64__)
void mx_cpu_rows_avx512(const mx_cpu_packed_t *w, const float *x, int64_t ldx, float *y,
                        int64_t ldy, int64_t m, int64_t p0, int64_t p1);
void mx_cpu_rows_avx2(const mx_cpu_packed_t *w, const float *x, int64_t ldx, float *y, int64_t ldy,
                      int64_t m, int64_t p0, int64_t p1);
#endif

#endif  // MX_CPU_KERNELS_ROWS_H
