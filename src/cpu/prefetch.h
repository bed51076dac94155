// The software prefetch of the AVX-512 decode kernels' streams (the f32 packed GEMV,
// kernels_avx512.c; the quantized GEMVs, kernels_q_avx512.c; the bf16 / f16 GEMVs,
// kernels_lowp_avx512.c; the decode attention over the KV caches, fused_kv_avx512.c): for every
// 64-byte line read, the line MX_CPU_PF_L1_BYTES ahead into L1 and the one MX_CPU_PF_L2_BYTES
// ahead into L2. One policy, tuned once: the hardware prefetcher alone, or one prefetch a few
// KiB ahead into L1, left those kernels short of the bandwidth; this split brought them to it
// (docs/performance.md, "Kernel measurements"). x86-64 only (SSE prefetch, part of the base ISA).
#ifndef MX_CPU_PREFETCH_H
#define MX_CPU_PREFETCH_H

#include <immintrin.h>

#define MX_CPU_PF_L1_BYTES 1024
#define MX_CPU_PF_L2_BYTES 4096

// always_inline: as a plain static inline, GCC 12 stopped unrolling some loops around the calls
// (a third fewer prefetch instructions in the attention tile, which then ran slower).
static inline __attribute__((always_inline)) void mx_cpu_prefetch_line(const void *p) {
  _mm_prefetch((const char *)p + MX_CPU_PF_L1_BYTES, _MM_HINT_T0);
  _mm_prefetch((const char *)p + MX_CPU_PF_L2_BYTES, _MM_HINT_T1);
}

#endif  // MX_CPU_PREFETCH_H
