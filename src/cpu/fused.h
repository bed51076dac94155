// Fused f32 kernels for the CPU runtime (issue 4): the composites of the model graphs
// (mx.rms_norm, mx.rope, mx.attention, the activation of mx.gated_mlp) and the embedding
// gather, each one pass over its data. Their contract is the composite's decomposition
// (src/model/composite*.c); tests/unit/test_cpu_fused.c checks every kernel against it.
//
// Conventions (as in mlxcel/cpu.h): f32, row-major, no alignment needed; work is split by
// (ith, nth) into fixed disjoint parts, and every output element is computed by the same
// instruction sequence whatever nth is, so results are bit-identical for any thread count.
// No kernel allocates; attention takes its per-thread scratch from the caller. Preconditions
// (shapes, Hq % Hkv == 0, ids/pos types) are the caller's (the plan compiler verified the graph);
// a kernel given nonsensical sizes (<= 0) writes nothing.
//
// ISA variants: every kernel has a portable scalar path and AVX2+FMA / AVX-512 paths selected
// at run time (the best the machine supports, see mx_cpu_fused_use_isa). Scalar uses libm
// expf / tanhf; the SIMD paths use a vectorised exp (Cody-Waite reduction + degree-7 Taylor;
// measured max error 0.92 ulp vs double on [-87, 88], inputs clamped to [-87.3, 88.3]) and a
// tanh derived from it (|x| < 0.55: odd Taylor polynomial to x^17, else
// sign(x) (1 - 2 / (exp(2|x|) + 1)); measured max 1.45 ulp, 1.7e-7 relative, on [-12, 12]) and
// a logistic (1 / (1 + e), e / (1 + e) for x < 0, with e = exp(-|x|)).
// All arithmetic is f32 (f32 accumulation, FMA where the ISA has it).
#ifndef MLXCEL_CPU_FUSED_H
#define MLXCEL_CPU_FUSED_H

#include "mlxcel/cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

// y[r,:] = x[r,:] / sqrt(mean(x[r,:]^2) + eps) * (weight_offset + w[:]); rows = B*T.
// Thread ith takes a contiguous block of rows. y may equal x (in place).
void mx_cpu_rms_norm_f32(const float *x, const float *w, float *y, int64_t rows, int64_t h,
                         float eps, float weight_offset, int ith, int nth);

// The residual add and the RMSNorm that reads it, in one pass: sum = a + b, then
// y = rms_norm(sum) as above (bit-identical to the two kernels in sequence). Thread ith takes a
// contiguous block of rows. sum and y must not alias a, b or each other.
void mx_cpu_add_rms_norm_f32(const float *a, const float *b, const float *w, float *sum, float *y,
                             int64_t rows, int64_t h, float eps, float weight_offset, int ith,
                             int nth);

// mx_cpu_rope_f32 out of place: x = rope(src) (each thread copies then rotates its own rows, so
// no barrier is needed between the copy and the rotation). src may equal x. table: NULL, or the
// angles' cos / sin from mx_cpu_rope_table_f32 for the same pos / inv_freq (bit-identical
// results; every RoPE of a graph shares one table instead of calling cosf / sinf again).
void mx_cpu_rope_copy_f32(const float *src, float *x, const int32_t *pos, const float *inv_freq,
                          const float *table, int64_t bt, int64_t n_heads, int64_t d,
                          int64_t rotary_dim, int style, int ith, int nth);
// mx_cpu_rope_copy_f32 of one row (bt = 1, position pos; table: its row) with head hh written to
// x + hh * head_stride (a decode step's slot in a [heads, S, d] KV cache: the rotated key goes
// straight into the cache), the heads split across threads; the same bits.
void mx_cpu_rope_copy_heads_f32(const float *src, float *x, int64_t head_stride, int32_t pos,
                                const float *inv_freq, const float *table, int64_t n_heads,
                                int64_t d, int64_t rotary_dim, int style, int ith, int nth);
// table[(r * half + i) * 2 + {0, 1}] = cosf / sinf(f32(pos[r]) * inv_freq[i]) for r < bt,
// i < half (= rotary_dim / 2), each times scale when scale != 1 (mx.rope's attribute: the
// product rounded to f32 as the decomposition computes it). Thread ith takes a block of rows.
void mx_cpu_rope_table_f32(const int32_t *pos, const float *inv_freq, int64_t bt, int64_t half,
                           float scale, float *table, int ith, int nth);

// In place on x[B*T, n_heads, d]; pos[B*T]; inv_freq[rotary_dim/2]; style 0 = half
// (HF rotate-half over the first rotary_dim dims), 1 = interleaved pairs; dims >= rotary_dim pass.
// angle = f32(pos) * inv_freq[i] in f32, then cosf / sinf, as the decomposition computes it.
// Thread ith takes a contiguous block of the B*T rows.
void mx_cpu_rope_f32(float *x, const int32_t *pos, const float *inv_freq, int64_t bt,
                     int64_t n_heads, int64_t d, int64_t rotary_dim, int style, int ith, int nth);

// q[B,T,Hq,D], caches [B,Hkv,S,D] (f32), pos0[B]; out[B,T,Hq,D]. Query t of sequence b at
// position p = pos0[b]+t sees keys max(0, p-window+1) .. p (window 0 = all), causal; scores =
// q.k*scale, softcap>0: tanh(s/softcap)*softcap; reads ONLY the valid key range (online softmax,
// flash-style, so long contexts stream); GQA: head h uses kv head h / (Hq/Hkv).
// scratch: at least nth * mx_cpu_attention_scratch_floats(D, S) floats, shared by the threads of
// the call (each uses its own disjoint slice).
// Work: decode (T = 1) orders the B*Hq heads by (sequence, kv head) and splits them into
// contiguous blocks by (ith, nth); the heads of one GQA group that a thread holds walk the keys
// together in blocks of 64, so each block of K and V is read from memory once per group: per
// head the scores of the block, one rescale of the running sum / accumulator, then the
// weighted V sum (fused_kv.c's driver on the f32 caches in place). Plans with few kv heads
// (Hkv < 8) run decode as mx_cpu_attention_kv_split + merge instead (fused_kv.h: the key range
// cut into pieces so the threads share the caches evenly). Prefill (T > 1, on ISAs with a
// tile kernel, Hq / Hkv <= 16) works on tiles: the Hq/Hkv heads of one kv head at up to 16 /
// (Hq/Hkv) consecutive positions, up to 16 rows computed together (flash-style: each K/V block is
// read once per tile, the scores of all rows of the tile at once), tiles dealt round-robin to the
// threads so causal work is shared evenly. Keys past S - 1
// do not exist (p >= S sees 0 .. S-1); a query that sees no key (p < 0, or the window starting
// past S - 1) gets zeros (the decomposition would give NaN). out must not alias q or the caches.
size_t mx_cpu_attention_scratch_floats(int64_t d, int64_t s);
void mx_cpu_attention_f32(const float *q, const float *k_cache, const float *v_cache,
                          const int32_t *pos0, float *out, int64_t b, int64_t t, int64_t hq,
                          int64_t hkv, int64_t s, int64_t d, float scale, int64_t window,
                          float softcap, float *scratch, int ith, int nth);
// The same with mx.attention's block ids (composite.h; NULL: none) blocks[B, T]: query t of a
// run of equal ids >= 0 also sees the keys of the rest of its run, up to position
// pos0[b] + (the run's last t), within the window (the run's keys are one range with the
// causal ones, so the same streaming kernels read it), and the keys of every later run of its
// id: a call where an id recurs after other tokens (Molmo2's images with text between them,
// mx_cpu_attention_blocks_recur) runs on fused_kv.c's driver, which reads them as more
// segments of the same online softmax.
void mx_cpu_attention_blocks_f32(const float *q, const float *k_cache, const float *v_cache,
                                 const int32_t *pos0, const int32_t *blocks, float *out, int64_t b,
                                 int64_t t, int64_t hq, int64_t hkv, int64_t s, int64_t d,
                                 float scale, int64_t window, float softcap, float *scratch,
                                 int ith, int nth);

// out[i] = act(gate[i]) * up[i]; act 0 = silu (g / (1 + exp(-g))), 1 = gelu_tanh
// (0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))), HF gelu_pytorch_tanh). out may equal gate
// or up. Thread ith takes a contiguous range in units of 16 elements.
void mx_cpu_gated_act_f32(const float *gate, const float *up, float *out, int64_t n, int act,
                          int ith, int nth);

// y[i] = tanh(x[i]) (stablehlo.tanh; GELU's tanh approximation built from elementwise ops).
// y may equal x. Thread ith takes a contiguous range in units of 16 elements.
void mx_cpu_tanh_f32(const float *x, float *y, int64_t n, int ith, int nth);

// y[i] = 1 / (1 + exp(-x[i])) (stablehlo.logistic: the vision towers' SiLU and quick_gelu,
// x * logistic(1.702 x)), from exp(-|x|) so that neither tail loses relative accuracy. y may
// equal x. Thread ith takes a contiguous range in units of 16 elements.
void mx_cpu_logistic_f32(const float *x, float *y, int64_t n, int ith, int nth);

// y[r] = x[r, :] . v for rows x [rows, k] (a dot_general with a vector: LayerNorm's mean is one
// with a vector of ones). Thread ith takes a contiguous block of rows.
void mx_cpu_row_dot_f32(const float *x, const float *v, float *y, int64_t rows, int64_t k, int ith,
                        int nth);

// Embedding rows: out[i,:] = table[ids[i],:] (ids clamped like StableHLO gather).
void mx_cpu_embed_f32(const float *table, int64_t vocab, int64_t h, const int32_t *ids, int64_t n,
                      float *out, int ith, int nth);

// ---- Variant selection (tests, benchmarks) ----
// Process-wide: the variant all fused kernels use from now on. Not to be changed while a kernel
// runs. MX_ERR_UNSUPPORTED when this machine / build cannot run `isa` (the selection is then
// unchanged). The default is the best supported variant.
mx_status_t mx_cpu_fused_use_isa(mx_cpu_isa_t isa);
mx_cpu_isa_t mx_cpu_fused_isa(void);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_CPU_FUSED_H
