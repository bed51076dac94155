// Attention over bf16 / f16 KV caches (--kv-dtype): mx_cpu_attention_f32's contract (fused.h)
// with caches of element type `kv` (MX_ELEM_BF16 or MX_ELEM_F16), widened to f32 exactly as
// they are read, so the result is the f32 kernel's on the converted caches, which is what the
// composite's decomposition computes (convert, then f32 dots). Halves the bytes attention reads.
//
// Keys are processed in blocks of MX_ATTN_BLOCK: a block of K and of V is converted into the
// thread's scratch (L1/L2 resident), then scored, softmaxed (online) and accumulated in f32 by the
// variant selected for the fused kernels (mx_cpu_fused_isa). Bit-identical for any nth.
#ifndef MX_CPU_FUSED_KV_H
#define MX_CPU_FUSED_KV_H

#include "cpu/fused.h"
#include "mlxcel/hlo.h"

// Scratch floats per thread (grows with d only, not with the context).
size_t mx_cpu_attention_kv_scratch_floats(int64_t d, int64_t s);
void mx_cpu_attention_kv(const float *q, const void *k_cache, const void *v_cache,
                         mx_elem_type_t kv, const int32_t *pos0, float *out, int64_t b, int64_t t,
                         int64_t hq, int64_t hkv, int64_t s, int64_t d, float scale, int64_t window,
                         float softcap, float *scratch, int ith, int nth);

// ---- Internal: one (query, head) unit of a variant ----
// keys [lo, hi] (hi >= lo) of one kv head: k, v point at the head's [S, D] cache; conv widens n
// elements; scratch: mx_cpu_attention_kv_scratch_floats floats.
typedef void (*mx_kv_widen_fn)(const uint16_t *src, float *dst, int64_t n);
typedef void (*mx_kv_unit_fn)(const float *q, const uint16_t *k, const uint16_t *v,
                              mx_kv_widen_fn conv, float *out, int64_t lo, int64_t hi, int64_t d,
                              float scale, float softcap, float *scratch);
#if defined(__x86_64__)
extern const mx_kv_unit_fn mx_cpu_kv_unit_avx2, mx_cpu_kv_unit_avx512;
#endif

#endif  // MX_CPU_FUSED_KV_H
