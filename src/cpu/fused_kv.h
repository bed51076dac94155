// Attention over bf16 / f16 KV caches (--kv-dtype): mx_cpu_attention_f32's contract (fused.h)
// with caches of element type `kv` (MX_ELEM_BF16 or MX_ELEM_F16), widened to f32 exactly as
// they are read, so the result is the f32 kernel's on the converted caches, which is what the
// composite's decomposition computes (convert, then f32 dots). Halves the bytes attention reads.
// kv = MX_ELEM_F32 reads f32 caches in place (no widening): mx_cpu_attention_f32's decode path.
//
// Work: the (sequence, query, head) units are ordered by (sequence, kv head, query, head in the
// group) and split into contiguous ranges by (ith, nth); a thread takes the units of one kv head
// up to MX_KV_GROUP at a time and walks the keys in blocks of MX_ATTN_BLOCK aligned to multiples
// of MX_ATTN_BLOCK (MX_KV_STREAM_BLOCK in a decode step whose tile reads the caches in place).
// f32 caches are always read in place, bf16 / f16 ones in the decode steps of a variant with a
// tile step (mx_kv_tile_reads_16bit); otherwise each block of K and V is widened into the
// thread's scratch once for all of them (a GQA group in decode, every query of a prefill chunk).
// Then each query that sees part of the block scores it, updates its online softmax and
// accumulates V in f32, with the variant selected for the fused kernels (mx_cpu_fused_isa);
// where the variant has a tile step, the heads of one position that see the same keys go
// together (each K and V row loaded once). A query's result depends
// only on its own key range (the same block steps in the same order), so it is bit-identical for
// any nth.
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
// The same with mx.attention's sinks (composite.h; NULL: none): sinks[h], h < hq, joins query
// head h's softmax denominator (the running max taken with it, so nothing overflows).
void mx_cpu_attention_kv_sinks(const float *q, const void *k_cache, const void *v_cache,
                               mx_elem_type_t kv, const int32_t *pos0, const float *sinks,
                               float *out, int64_t b, int64_t t, int64_t hq, int64_t hkv, int64_t s,
                               int64_t d, float scale, int64_t window, float softcap,
                               float *scratch, int ith, int nth);
// The same with mx.attention's block ids too (composite.h; NULL: none): blocks[b, t] >= 0 lets
// query t also see the later keys of this call whose ids equal its own (a bidirectional image
// block), as mx_cpu_attention_blocks_f32 does for f32 caches. Where an id recurs after other
// tokens (mx_cpu_attention_blocks_recur: Molmo2's images with text between them), a query of it
// reads its causal range and its own run, then each later run of its id, its online softmax going
// on over them, the tokens between unseen.
void mx_cpu_attention_kv_blocks(const float *q, const void *k_cache, const void *v_cache,
                                mx_elem_type_t kv, const int32_t *pos0, const float *sinks,
                                const int32_t *blocks, float *out, int64_t b, int64_t t, int64_t hq,
                                int64_t hkv, int64_t s, int64_t d, float scale, int64_t window,
                                float softcap, float *scratch, int ith, int nth);
// Whether some row of block ids blocks[b, t] (NULL: none) may give a query keys in more than one
// range: a run whose id is not above every id of the earlier runs of its row (Gemma 3 numbers its
// runs in order: never; Molmo2 gives every image token id 0: from its second image on).
bool mx_cpu_attention_blocks_recur(const int32_t *blocks, int64_t b, int64_t t);

// ---- Decode split over the keys ----
// A decode step (t = 1) has only b * hkv groups of queries sharing a kv head, which split
// unevenly over the threads when few or odd (5 kv heads on 2 threads: one thread reads 3 heads'
// caches; 1 kv head: both read all of it). mx_cpu_attention_kv_split cuts the key range of each
// (sequence, kv head) into `parts` pieces of whole blocks, shares the b * hkv * parts pieces
// between the threads (evenly, or claimed through a work counter) and writes each query's
// online-softmax state per piece to part;
// after a barrier, mx_cpu_attention_kv_merge combines the pieces of each query row into out.
// The cut depends on hkv and the sequence's position only, so a sequence's result is the same
// for any nth and any batch it decodes in (the batch engine's contract).
enum { MX_KV_SPLIT_ITEMS = 16 };  // pieces per sequence to aim for
// Pieces per (sequence, kv head): 1 (no split) when hkv >= MX_KV_SPLIT_ITEMS / 2 groups already
// share well, else enough for MX_KV_SPLIT_ITEMS pieces per sequence.
int64_t mx_cpu_attention_kv_parts(int64_t hkv);
// Floats of part: row (b, h) piece p at ((b * hq + h) * parts + p) * (d + 2): running max,
// sum (0: the piece saw no key), then the d unnormalised accumulators.
size_t mx_cpu_attention_kv_part_floats(int64_t b, int64_t hq, int64_t d, int64_t parts);
// mx_cpu_attention_kv's arguments with t = 1 (scratch likewise), out replaced by part. work:
// the pieces are claimed through it (cpu.h's dynamic work sharing: each thread its own run of
// pieces first, so a thread the host stalls does not hold up the step), zeroed before the call;
// NULL: the fixed split by (ith, nth).
void mx_cpu_attention_kv_split(const float *q, const void *k_cache, const void *v_cache,
                               mx_elem_type_t kv, const int32_t *pos0, float *part, int64_t b,
                               int64_t hq, int64_t hkv, int64_t s, int64_t d, float scale,
                               int64_t window, float softcap, int64_t parts, float *scratch,
                               mx_cpu_work_t *work, int ith, int nth);
// out[rows, d] from part (rows = b * hq): each row split by (ith, nth).
void mx_cpu_attention_kv_merge(const float *part, float *out, int64_t rows, int64_t d,
                               int64_t parts, int ith, int nth);
// The same with sinks[hq] (NULL: none) in each row's denominator; row r is head r % hq.
void mx_cpu_attention_kv_merge_sinks(const float *part, const float *sinks, int64_t hq, float *out,
                                     int64_t rows, int64_t d, int64_t parts, int ith, int nth);

// ---- Internal: one key block for one query, per variant ----
// Queries sharing a widened block: in prefill over bf16 / f16 caches each block is widened once
// per group, so a larger group widens each block fewer times (256 measured faster than 64:
// docs/performance.md, "Kernel measurements"; the scratch holds a group's accumulators).
enum { MX_KV_GROUP = 256 };
// Keys kf[0..nb) (f32 rows of d, widened), values vf likewise: scores q.k * scale (then
// tanh(s / softcap) * softcap when softcap > 0), the online softmax update of the running max
// *m, sum *l and accumulator acc[d]. sc: MX_ATTN_BLOCK floats of scratch.
typedef void (*mx_kv_block_fn)(const float *q, const float *kf, const float *vf, int64_t nb,
                               int64_t d, float scale, float softcap, float *m, float *l,
                               float *acc, float *sc);
typedef void (*mx_kv_widen_fn)(const uint16_t *src, float *dst, int64_t n);
enum { MX_KV_TILE = 8 };  // queries of one tile step
// Keys per block when a decode step's tile reads the caches in place (no widened copy to keep in
// L1): longer blocks spread the per-block softmax step and accumulator rescale over more keys.
enum { MX_KV_STREAM_BLOCK = 256 };
// The queries q + r * d (r < nq, 1 <= nq <= MX_KV_TILE) that see the same keys k[0..nb),
// nb <= MX_KV_STREAM_BLOCK: mx_kv_block_fn's update for each, of m[r], l[r] and
// acc + r * acc_stride. sc: MX_KV_TILE * MX_KV_STREAM_BLOCK floats (row r's scores at
// r * MX_KV_STREAM_BLOCK). Loads each row of K and V once for the tile where the variant can.
// k, v: rows of d elements of type kv: MX_ELEM_F32 (a widened copy, or f32 caches read in
// place) or, when mx_kv_tile_reads_16bit(d), the bf16 / f16 caches themselves (MX_ELEM_BF16 /
// MX_ELEM_F16), widened exactly as they are read (each 16 keys of K once into wbuf, 16 * d
// floats, for every query of the tile; V in registers), so the result is the one on a widened
// copy. stream: k and v are the caches themselves (not a widened copy in L1): prefetch ahead.
typedef void (*mx_kv_tile_fn)(const float *q, int64_t nq, const void *k, const void *v,
                              mx_elem_type_t kv, int64_t nb, int64_t d, float scale, float softcap,
                              float *m, float *l, float *acc, int64_t acc_stride, float *sc,
                              float *wbuf, bool stream);
// Head sizes whose bf16 / f16 caches a tile reads in place (V in whole 64-lane steps).
static inline bool mx_kv_tile_reads_16bit(int64_t d) { return d % 64 == 0; }
#if defined(__x86_64__)
extern const mx_kv_block_fn mx_cpu_kv_block_avx2, mx_cpu_kv_block_avx512;
extern const mx_kv_tile_fn mx_cpu_kv_tile_avx512;
#endif

#endif  // MX_CPU_FUSED_KV_H
