// The per-ISA entry points behind the fused kernels of fused.h. fused.c holds the portable
// drivers (thread split, unit loops, RoPE, embedding); each fused_<isa>.c defines one table.
#ifndef MX_CPU_FUSED_INTERNAL_H
#define MX_CPU_FUSED_INTERNAL_H

#include "cpu/fused.h"

enum { MX_ATTN_BLOCK = 64 };  // keys per online-softmax block

enum { MX_ATTN_TILE_ROWS = 16 };  // query rows per attention tile (one 16-lane vector)

// A tile of prefill attention: up to MX_ATTN_TILE_ROWS query rows (the g heads of one GQA
// group at consecutive positions) against the keys [klo, khi] of their kv head, row r seeing
// [lo[r], hi[r]] within it (every key of [klo, khi] is seen by some row, so all are valid
// data). Keys are visited in blocks of MX_ATTN_BLOCK from klo; each row's result does not
// depend on the other rows of the tile.
typedef struct mx_attn_tile {
  int32_t rows;
  const float *q[MX_ATTN_TILE_ROWS];  // row r's query [d]
  float *out[MX_ATTN_TILE_ROWS];      // row r's output [d]
  int32_t lo[MX_ATTN_TILE_ROWS], hi[MX_ATTN_TILE_ROWS];
  int64_t klo, khi;
  const float *k, *v;  // the kv head's [S, d] caches
  int64_t d;
  float scale, softcap;
} mx_attn_tile_t;

// Scratch floats attn_tile needs: transposed queries and the output accumulators (16 x
// round_up(d, 16) each) and the probabilities of one block (MX_ATTN_BLOCK x 16).
size_t mx_cpu_attn_tile_scratch_floats(int64_t d);

typedef struct mx_cpu_fused_ops {
  mx_cpu_isa_t isa;
  // One row of RMSNorm, h > 0.
  void (*rms_row)(const float *x, const float *w, float *y, int64_t h, float eps, float offset);
  // One query against keys [lo, hi] (inclusive, hi >= lo) of one kv head: k, v point at the
  // head's [S, D] cache; out[d]. scratch: MX_ATTN_BLOCK + round_up(d, 16) floats.
  void (*attn_unit)(const float *q, const float *k, const float *v, float *out, int64_t lo,
                    int64_t hi, int64_t d, float scale, float softcap, float *scratch);
  // Optional (NULL: the driver runs attn_unit per query row): a tile of query rows that share
  // one kv head, the prefill kernel (mx_attn_tile_t).
  void (*attn_tile)(const struct mx_attn_tile *t, float *scratch);
  // out[i] = act(gate[i]) * up[i] for i < n.
  void (*gated)(const float *gate, const float *up, float *out, int64_t n, int act);
  // y[i] = tanh(x[i]) for i < n.
  void (*tanh_n)(const float *x, float *y, int64_t n);
  // y[i] = 1 / (1 + exp(-x[i])) for i < n.
  void (*logistic_n)(const float *x, float *y, int64_t n);
} mx_cpu_fused_ops_t;

extern const mx_cpu_fused_ops_t mx_cpu_fused_scalar;
#if defined(__x86_64__)
extern const mx_cpu_fused_ops_t mx_cpu_fused_avx2;
extern const mx_cpu_fused_ops_t mx_cpu_fused_avx512;
#endif

#define MX_GELU_C 0.7978845608028654f  // sqrt(2 / pi)

#endif  // MX_CPU_FUSED_INTERNAL_H
