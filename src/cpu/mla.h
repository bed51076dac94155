// The fused kernel of mx.mla (multi-latent attention, ADR 0012) in the absorbed form: per query
// head, q_lat = q_nope W_k (kv_b's key rows of the head), scores q_lat . c_s + q_rot . r_s over
// the cached latents c and rotated keys r of the visible slots only, an online softmax, the
// weighted latent sum, and W_v (the head's value rows) times it. Neither the per-head keys nor
// the values are ever formed: a decode step reads the latent cache (R + Dr per position) and
// kv_b once per head group.
#ifndef MX_CPU_MLA_H
#define MX_CPU_MLA_H

#include <stddef.h>
#include <stdint.h>

#include "mlxcel/hlo.h"

// Heads that walk the keys together and queries whose projections through kv_b share its loads
// (both bound the scratch).
enum { MX_MLA_GROUP = 16, MX_MLA_BLOCK = 64, MX_MLA_TILE = 4 };

typedef struct mx_cpu_mla_shape {
  int64_t b, t, h, s;     // sequences, queries per sequence, heads, cache capacity
  int64_t dn, dr, r, dv;  // nope dims, rotated dims, latent rank, value dims
  mx_elem_type_t kv;      // the caches' element type: F32, BF16 or F16
  float scale;
} mx_cpu_mla_shape_t;

// Scratch floats per thread.
size_t mx_cpu_mla_scratch_floats(const mx_cpu_mla_shape_t *sh);

// q_nope[B,T,H,Dn], q_rot[B,T,H,Dr] f32; lat[B,1,S,R], rot[B,1,S,Dr] of type sh->kv;
// kv_b[H (Dn + Dv), R] f32; pos0[B]; out[B,T,H,Dv] f32. Query t of sequence b at p = pos0[b] + t
// sees slots 0 .. min(p, S - 1) (none when p < 0: zeros). Work: units of (sequence, tile of up
// to MX_MLA_TILE queries, group of heads), the group size chosen from nth so every thread has
// work, split contiguously by (ith, nth); a head's arithmetic depends on neither its group nor
// its tile, so results are bit-identical for any nth. scratch: nth * mx_cpu_mla_scratch_floats
// floats, thread ith uses its own slice.
void mx_cpu_mla(const mx_cpu_mla_shape_t *sh, const float *q_nope, const float *q_rot,
                const void *lat, const void *rot, const float *kv_b, const int32_t *pos0,
                float *out, float *scratch, int ith, int nth);

#endif  // MX_CPU_MLA_H
