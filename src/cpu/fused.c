// Drivers of the fused kernels: variant selection, thread split, the attention unit loop,
// RoPE and the embedding gather (portable: they move little data per flop).
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cpu/fused_internal.h"
#include "cpu/fused_kv.h"

// ---- Variant selection ----

static _Atomic(const mx_cpu_fused_ops_t *) g_ops;

static const mx_cpu_fused_ops_t *ops_for(mx_cpu_isa_t isa) {
  const mx_cpu_kernels_t *kt = mx_cpu_kernels_get(isa);  // the same feature test as the GEMMs
  if (!kt) return NULL;
  switch (isa) {
    case MX_CPU_ISA_SCALAR:
      return &mx_cpu_fused_scalar;
#if defined(__x86_64__)
    case MX_CPU_ISA_AVX2:
      return &mx_cpu_fused_avx2;
    case MX_CPU_ISA_AVX512:
      return &mx_cpu_fused_avx512;
#endif
    default:
      return NULL;
  }
}

static const mx_cpu_fused_ops_t *ops(void) {
  const mx_cpu_fused_ops_t *o = atomic_load_explicit(&g_ops, memory_order_acquire);
  if (o) return o;
  o = ops_for(mx_cpu_kernels_isa(mx_cpu_kernels_best()));
  if (!o) o = &mx_cpu_fused_scalar;
  const mx_cpu_fused_ops_t *expected = NULL;  // first writer wins; all write the same value
  atomic_compare_exchange_strong(&g_ops, &expected, o);
  return atomic_load_explicit(&g_ops, memory_order_acquire);
}

mx_status_t mx_cpu_fused_use_isa(mx_cpu_isa_t isa) {
  const mx_cpu_fused_ops_t *o = ops_for(isa);
  if (!o) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "fused kernels: ISA %s is not available here",
                        mx_cpu_isa_name(isa));
  }
  atomic_store_explicit(&g_ops, o, memory_order_release);
  return MX_OK;
}

mx_cpu_isa_t mx_cpu_fused_isa(void) { return ops()->isa; }

// [lo, hi) of `total` items for thread ith of nth, in units of `grain` items.
static void split(int64_t total, int64_t grain, int ith, int nth, int64_t *lo, int64_t *hi) {
  if (nth < 1) nth = 1;
  int64_t units = (total + grain - 1) / grain;
  int64_t u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
  *lo = u0 * grain < total ? u0 * grain : total;
  *hi = u1 * grain < total ? u1 * grain : total;
}

// ---- RMSNorm ----

void mx_cpu_rms_norm_f32(const float *x, const float *w, float *y, int64_t rows, int64_t h,
                         float eps, float weight_offset, int ith, int nth) {
  if (rows <= 0 || h <= 0) return;
  const mx_cpu_fused_ops_t *o = ops();
  int64_t r0, r1;
  split(rows, 1, ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++) o->rms_row(x + r * h, w, y + r * h, h, eps, weight_offset);
}

void mx_cpu_add_rms_norm_f32(const float *a, const float *b, const float *w, float *sum, float *y,
                             int64_t rows, int64_t h, float eps, float weight_offset, int ith,
                             int nth) {
  if (rows <= 0 || h <= 0) return;
  const mx_cpu_fused_ops_t *o = ops();
  int64_t r0, r1;
  split(rows, 1, ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++) {
    const float *ar = a + r * h, *br = b + r * h;
    float *sr = sum + r * h;
    for (int64_t i = 0; i < h; i++) sr[i] = ar[i] + br[i];
    o->rms_row(sr, w, y + r * h, h, eps, weight_offset);
  }
}

// ---- RoPE ----

void mx_cpu_rope_f32(float *x, const int32_t *pos, const float *inv_freq, int64_t bt,
                     int64_t n_heads, int64_t d, int64_t rotary_dim, int style, int ith, int nth) {
  mx_cpu_rope_copy_f32(x, x, pos, inv_freq, NULL, bt, n_heads, d, rotary_dim, style, ith, nth);
}

void mx_cpu_rope_table_f32(const int32_t *pos, const float *inv_freq, int64_t bt, int64_t half,
                           float scale, float *table, int ith, int nth) {
  if (bt <= 0 || half <= 0) return;
  int64_t r0, r1;
  split(bt, 1, ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++) {
    float p = (float)pos[r];
    float *t = table + r * half * 2;
    for (int64_t i = 0; i < half; i++) {
      float ang = p * inv_freq[i];
      t[2 * i] = cosf(ang) * scale;
      t[2 * i + 1] = sinf(ang) * scale;
    }
  }
}

// One rotation of mx.rope: both rope kernels below, so they round alike.
static inline void rope_rotate(float *xr, int64_t ia, int64_t ib, float c, float s) {
  float a = xr[ia], b = xr[ib];
  xr[ia] = a * c - b * s;
  xr[ib] = b * c + a * s;
}

void mx_cpu_rope_copy_f32(const float *src, float *x, const int32_t *pos, const float *inv_freq,
                          const float *table, int64_t bt, int64_t n_heads, int64_t d,
                          int64_t rotary_dim, int style, int ith, int nth) {
  if (bt <= 0 || n_heads <= 0 || d <= 0 || rotary_dim <= 0 || rotary_dim > d) return;
  int64_t half = rotary_dim / 2;
  int64_t r0, r1;
  split(bt, 1, ith, nth, &r0, &r1);
  if (src != x && r1 > r0)
    memcpy(x + r0 * n_heads * d, src + r0 * n_heads * d,
           (size_t)((r1 - r0) * n_heads * d) * sizeof(float));
  for (int64_t r = r0; r < r1; r++) {
    float p = (float)pos[r];
    for (int64_t i = 0; i < half; i++) {
      float c, s;
      if (table) {
        c = table[(r * half + i) * 2];
        s = table[(r * half + i) * 2 + 1];
      } else {
        float ang = p * inv_freq[i];
        c = cosf(ang);
        s = sinf(ang);
      }
      for (int64_t hh = 0; hh < n_heads; hh++) {
        int64_t ia = style == 1 ? 2 * i : i, ib = style == 1 ? 2 * i + 1 : i + half;
        rope_rotate(x + (r * n_heads + hh) * d, ia, ib, c, s);
      }
    }
  }
}

void mx_cpu_rope_copy_heads_f32(const float *src, float *x, int64_t head_stride, int32_t pos,
                                const float *inv_freq, const float *table, int64_t n_heads,
                                int64_t d, int64_t rotary_dim, int style, int ith, int nth) {
  if (n_heads <= 0 || d <= 0 || rotary_dim <= 0 || rotary_dim > d) return;
  int64_t half = rotary_dim / 2, h0, h1;
  split(n_heads, 1, ith, nth, &h0, &h1);
  for (int64_t hh = h0; hh < h1; hh++)
    memcpy(x + hh * head_stride, src + hh * d, (size_t)d * sizeof(float));
  float p = (float)pos;
  for (int64_t i = 0; i < half && h1 > h0; i++) {
    float c, s;
    if (table) {
      c = table[i * 2];
      s = table[i * 2 + 1];
    } else {
      float ang = p * inv_freq[i];
      c = cosf(ang);
      s = sinf(ang);
    }
    int64_t ia = style == 1 ? 2 * i : i, ib = style == 1 ? 2 * i + 1 : i + half;
    for (int64_t hh = h0; hh < h1; hh++) rope_rotate(x + hh * head_stride, ia, ib, c, s);
  }
}

// ---- Attention ----

static int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

size_t mx_cpu_attn_tile_scratch_floats(int64_t d) {
  if (d < 1) d = 1;
  return (size_t)(2 * MX_ATTN_TILE_ROWS * round16(d) + MX_ATTN_BLOCK * MX_ATTN_TILE_ROWS);
}

size_t mx_cpu_attention_scratch_floats(int64_t d, int64_t s) {
  if (d < 1) d = 1;  // keys stream in blocks: the scratch does not grow with the context
  size_t unit = (size_t)(MX_ATTN_BLOCK + round16(d)), tile = mx_cpu_attn_tile_scratch_floats(d);
  size_t own = (unit > tile ? unit : tile) + 16;  // + 16: threads never share a cache line
  size_t grouped = mx_cpu_attention_kv_scratch_floats(d, s);  // decode: fused_kv.c's driver
  return own > grouped ? own : grouped;
}

// Keys query t of sequence b sees: [*lo, *hi] (empty when *hi < *lo); with block ids
// blocks[B, T], up to the end of the query's run of equal ids >= 0 (the window counts from the
// query's own position).
static void key_range(const int32_t *pos0, const int32_t *blocks, int64_t t, int64_t bi, int64_t ti,
                      int64_t s, int64_t window, int64_t *lo, int64_t *hi) {
  int64_t p = (int64_t)pos0[bi] + ti, last = p;
  if (blocks && blocks[bi * t + ti] >= 0) {
    const int32_t *row = blocks + bi * t;
    int64_t j = ti;
    while (j + 1 < t && row[j + 1] == row[ti]) j++;
    last = (int64_t)pos0[bi] + j;
  }
  *lo = window > 0 ? p - window + 1 : 0;
  if (*lo < 0) *lo = 0;
  *hi = last < s - 1 ? last : s - 1;
}

// Prefill: tiles of the g query heads of one kv head at tq consecutive positions (g * tq <= 16
// rows). Tiles are dealt to threads round-robin: causal tiles grow with their position, and
// interleaving keeps the threads' shares equal where contiguous blocks would not.
static void attention_tiles(const mx_cpu_fused_ops_t *o, const float *q, const float *k_cache,
                            const float *v_cache, const int32_t *pos0, const int32_t *blocks,
                            float *out, int64_t b, int64_t t, int64_t hq, int64_t hkv, int64_t s,
                            int64_t d, float scale, int64_t window, float softcap, float *scr,
                            int ith, int nth) {
  int64_t g = hq / hkv, tq = MX_ATTN_TILE_ROWS / g, n_tiles = (t + tq - 1) / tq;
  int64_t units = b * hkv * n_tiles;
  mx_attn_tile_t tile;
  tile.d = d;
  tile.scale = scale;
  tile.softcap = softcap;
  for (int64_t u = ith; u < units; u += nth) {
    int64_t bi = u / (hkv * n_tiles), hk = u / n_tiles % hkv, t0 = u % n_tiles * tq;
    int64_t t1 = t0 + tq < t ? t0 + tq : t;
    int64_t klo = INT64_MAX, khi = -1;
    int32_t r = 0;
    for (int64_t ti = t0; ti < t1; ti++) {
      int64_t lo, hi;
      key_range(pos0, blocks, t, bi, ti, s, window, &lo, &hi);
      for (int64_t gi = 0; gi < g; gi++, r++) {
        int64_t row = (bi * t + ti) * hq + hk * g + gi;
        tile.q[r] = q + row * d;
        tile.out[r] = out + row * d;
        if (hi < lo) {  // sees no key: zeros, like the per-query path
          memset(tile.out[r], 0, (size_t)d * sizeof(float));
          lo = 1;
          hi = 0;
        } else {
          klo = lo < klo ? lo : klo;
          khi = hi > khi ? hi : khi;
        }
        tile.lo[r] = (int32_t)lo;
        tile.hi[r] = (int32_t)hi;
      }
    }
    if (khi < klo) continue;
    tile.rows = r;
    tile.klo = klo;
    tile.khi = khi;
    size_t kv_off = (size_t)((bi * hkv + hk) * s) * (size_t)d;
    tile.k = k_cache + kv_off;
    tile.v = v_cache + kv_off;
    o->attn_tile(&tile, scr);
  }
}

void mx_cpu_attention_f32(const float *q, const float *k_cache, const float *v_cache,
                          const int32_t *pos0, float *out, int64_t b, int64_t t, int64_t hq,
                          int64_t hkv, int64_t s, int64_t d, float scale, int64_t window,
                          float softcap, float *scratch, int ith, int nth) {
  mx_cpu_attention_blocks_f32(q, k_cache, v_cache, pos0, NULL, out, b, t, hq, hkv, s, d, scale,
                              window, softcap, scratch, ith, nth);
}

void mx_cpu_attention_blocks_f32(const float *q, const float *k_cache, const float *v_cache,
                                 const int32_t *pos0, const int32_t *blocks, float *out, int64_t b,
                                 int64_t t, int64_t hq, int64_t hkv, int64_t s, int64_t d,
                                 float scale, int64_t window, float softcap, float *scratch,
                                 int ith, int nth) {
  if (b <= 0 || t <= 0 || hq <= 0 || hkv <= 0 || s <= 0 || d <= 0 || hq % hkv != 0) return;
  if (nth < 1) nth = 1;
  const mx_cpu_fused_ops_t *o = ops();
  float *scr = scratch + (size_t)ith * mx_cpu_attention_scratch_floats(d, s);
  int64_t g = hq / hkv;
  if (t > 1 && mx_cpu_attention_blocks_recur(blocks, b, t)) {
    // A query whose block id recurs after other tokens reads its keys in segments (the text
    // between unseen): fused_kv.c's driver, whose online softmax state goes on over them, on the
    // f32 caches in place. Other calls keep the one-range kernels below.
    mx_cpu_attention_kv_blocks(q, k_cache, v_cache, MX_ELEM_F32, pos0, NULL, blocks, out, b, t, hq,
                               hkv, s, d, scale, window, softcap, scratch, ith, nth);
    return;
  }
  if (t > 1 && o->attn_tile && g <= MX_ATTN_TILE_ROWS && s <= INT32_MAX) {
    attention_tiles(o, q, k_cache, v_cache, pos0, blocks, out, b, t, hq, hkv, s, d, scale, window,
                    softcap, scr, ith, nth);
    return;
  }
  if (t == 1) {
    // Decode: the query heads of one GQA group walk the keys together, block by block, so each
    // block of K and V comes from memory once per group instead of once per head (fused_kv.c's
    // driver, reading the f32 caches in place).
    mx_cpu_attention_kv(q, k_cache, v_cache, MX_ELEM_F32, pos0, out, b, t, hq, hkv, s, d, scale,
                        window, softcap, scratch, ith, nth);
    return;
  }
  // Prefill without a tile kernel: per query row, rows dealt round-robin (causal rows grow with
  // their position, contiguous blocks would leave the first thread a fraction of the work).
  int64_t units = b * t * hq;
  for (int64_t u = ith; u < units; u += nth) {
    int64_t h = u % hq, bt = u / hq, bi = bt / t, ti = bt % t;
    int64_t lo, hi;
    key_range(pos0, blocks, t, bi, ti, s, window, &lo, &hi);
    float *o_row = out + u * d;
    if (hi < lo) {
      memset(o_row, 0, (size_t)d * sizeof(float));
      continue;
    }
    size_t kv_off = (size_t)((bi * hkv + h / g) * s) * (size_t)d;
    o->attn_unit(q + u * d, k_cache + kv_off, v_cache + kv_off, o_row, lo, hi, d, scale, softcap,
                 scr);
  }
}

// ---- Gated activation ----

enum { ACT_GRAIN = 16 };  // one 64-byte line of out per unit

void mx_cpu_gated_act_f32(const float *gate, const float *up, float *out, int64_t n, int act,
                          int ith, int nth) {
  if (n <= 0) return;
  int64_t i0, i1;
  split(n, ACT_GRAIN, ith, nth, &i0, &i1);
  if (i1 > i0) ops()->gated(gate + i0, up + i0, out + i0, i1 - i0, act);
}

void mx_cpu_tanh_f32(const float *x, float *y, int64_t n, int ith, int nth) {
  if (n <= 0) return;
  int64_t i0, i1;
  split(n, ACT_GRAIN, ith, nth, &i0, &i1);
  if (i1 > i0) ops()->tanh_n(x + i0, y + i0, i1 - i0);
}

void mx_cpu_logistic_f32(const float *x, float *y, int64_t n, int ith, int nth) {
  if (n <= 0) return;
  int64_t i0, i1;
  split(n, ACT_GRAIN, ith, nth, &i0, &i1);
  if (i1 > i0) ops()->logistic_n(x + i0, y + i0, i1 - i0);
}

// The rows' dot products with one vector, y[r] = x[r, :] . v: eight partial sums per row, added
// pairwise at the end, so that a row's result does not depend on the thread split.
void mx_cpu_row_dot_f32(const float *x, const float *v, float *y, int64_t rows, int64_t k, int ith,
                        int nth) {
  if (rows <= 0) return;
  int64_t r0, r1;
  split(rows, 1, ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++) {
    const float *xr = x + r * k;
    float acc[8] = {0};
    int64_t j = 0;
    for (; j + 8 <= k; j += 8) {
      for (int u = 0; u < 8; u++) acc[u] += xr[j + u] * v[j + u];
    }
    for (; j < k; j++) acc[j % 8] += xr[j] * v[j];
    y[r] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  }
}

// ---- Embedding ----

void mx_cpu_embed_f32(const float *table, int64_t vocab, int64_t h, const int32_t *ids, int64_t n,
                      float *out, int ith, int nth) {
  if (n <= 0 || h <= 0 || vocab <= 0) return;
  int64_t r0, r1;
  split(n, 1, ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++) {
    int64_t id = ids[r];
    if (id < 0) id = 0;
    if (id > vocab - 1) id = vocab - 1;
    memcpy(out + r * h, table + id * h, (size_t)h * sizeof(float));
  }
}
