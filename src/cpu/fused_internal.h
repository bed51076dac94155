// The per-ISA entry points behind the fused kernels of fused.h. fused.c holds the portable
// drivers (thread split, unit loops, RoPE, embedding); each fused_<isa>.c defines one table.
#ifndef MX_CPU_FUSED_INTERNAL_H
#define MX_CPU_FUSED_INTERNAL_H

#include "cpu/fused.h"

enum { MX_ATTN_BLOCK = 64 };  // keys per online-softmax block

typedef struct mx_cpu_fused_ops {
  mx_cpu_isa_t isa;
  // One row of RMSNorm, h > 0.
  void (*rms_row)(const float *x, const float *w, float *y, int64_t h, float eps, float offset);
  // One query against keys [lo, hi] (inclusive, hi >= lo) of one kv head: k, v point at the
  // head's [S, D] cache; out[d]. scratch: MX_ATTN_BLOCK + round_up(d, 16) floats.
  void (*attn_unit)(const float *q, const float *k, const float *v, float *out, int64_t lo,
                    int64_t hi, int64_t d, float scale, float softcap, float *scratch);
  // out[i] = act(gate[i]) * up[i] for i < n.
  void (*gated)(const float *gate, const float *up, float *out, int64_t n, int act);
} mx_cpu_fused_ops_t;

extern const mx_cpu_fused_ops_t mx_cpu_fused_scalar;
#if defined(__x86_64__)
extern const mx_cpu_fused_ops_t mx_cpu_fused_avx2;
extern const mx_cpu_fused_ops_t mx_cpu_fused_avx512;
#endif

#define MX_GELU_C 0.7978845608028654f  // sqrt(2 / pi)

#endif  // MX_CPU_FUSED_INTERNAL_H
