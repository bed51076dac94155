// Driver of the bf16 / f16 KV attention (fused_kv.h) and its portable block step.
#include "cpu/fused_kv.h"

#include <math.h>
#include <string.h>

#include "base/half.h"
#include "cpu/fused_internal.h"
#include "cpu/kernels_lowp_internal.h"

static int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// Scratch of one thread: K block [BLOCK * round16(d)] (a tile's wbuf when it reads 16-bit
// caches in place) | V block [same] | scores [TILE * STREAM_BLOCK] | accumulators
// [GROUP * round16(d)] | running max [GROUP] | sums [GROUP] | 16 (threads never share a line).
size_t mx_cpu_attention_kv_scratch_floats(int64_t d, int64_t s) {
  (void)s;  // keys stream in blocks: the scratch does not grow with the context
  if (d < 1) d = 1;
  return (size_t)(2 * MX_ATTN_BLOCK * round16(d) + MX_KV_TILE * MX_KV_STREAM_BLOCK +
                  MX_KV_GROUP * (round16(d) + 2) + 16);
}

static void widen_bf16(const uint16_t *src, float *dst, int64_t n) {
  mx_half_bf16_to_f32(src, dst, (size_t)n);
}
static void widen_f16(const uint16_t *src, float *dst, int64_t n) {
  mx_half_f16_to_f32(src, dst, (size_t)n);
}

// The portable block step (fused_scalar.c's formulas).
static void block_scalar(const float *q, const float *kf, const float *vf, int64_t nb, int64_t d,
                         float scale, float softcap, float *m, float *l, float *acc, float *sc) {
  float bm = -INFINITY;
  for (int64_t j = 0; j < nb; j++) {
    const float *kr = kf + j * d;
    float dot = 0.0f;
    for (int64_t i = 0; i < d; i++) dot += q[i] * kr[i];
    float sj = dot * scale;
    if (softcap > 0.0f) sj = tanhf(sj / softcap) * softcap;
    sc[j] = sj;
    bm = sj > bm ? sj : bm;
  }
  float mn = bm > *m ? bm : *m;
  float corr = *m == -INFINITY ? 0.0f : expf(*m - mn);
  float bl = 0.0f;
  for (int64_t j = 0; j < nb; j++) {
    sc[j] = expf(sc[j] - mn);
    bl += sc[j];
  }
  *l = *l * corr + bl;
  for (int64_t i = 0; i < d; i++) {
    float a = acc[i] * corr;
    for (int64_t j = 0; j < nb; j++) a += sc[j] * vf[j * d + i];
    acc[i] = a;
  }
  *m = mn;
}

typedef struct unit_pos {
  int64_t b, t, h, kvh;
} unit_pos_t;

// Unit u in (sequence, kv head, query, head in group) order.
static unit_pos_t unit_at(int64_t u, int64_t t, int64_t hkv, int64_t g) {
  unit_pos_t r;
  int64_t gi = u % g, rest = u / g;
  r.t = rest % t;
  rest /= t;
  r.kvh = rest % hkv;
  r.b = rest / hkv;
  r.h = r.kvh * g + gi;
  return r;
}

// One call's constants and the calling thread's scratch.
typedef struct kv_run {
  const float *q;
  const uint16_t *kc, *vc;  // the caches (elements of esz bytes; bf16 / f16 as uint16_t)
  mx_elem_type_t kv;        // the caches' element type
  size_t esz;               // its size in bytes
  bool f32;                 // f32 caches
  bool in_place;            // the steps read the caches themselves (else widened blocks)
  mx_kv_block_fn step;
  mx_kv_tile_fn tile;  // NULL: step per query
  mx_kv_widen_fn conv;
  int64_t t, hq, hkv, g, s, d, d16;
  float scale, softcap;
  float *kf, *vf, *sc, *acc, *mrun, *lrun;
} kv_run_t;

static bool kv_run_init(kv_run_t *r, const float *q, const void *k_cache, const void *v_cache,
                        mx_elem_type_t kv, int64_t t, int64_t hq, int64_t hkv, int64_t s, int64_t d,
                        float scale, float softcap, float *scratch, int ith) {
  if (t <= 0 || hq <= 0 || hkv <= 0 || s <= 0 || d <= 0 || hq % hkv != 0) return false;
  if (kv != MX_ELEM_BF16 && kv != MX_ELEM_F16 && kv != MX_ELEM_F32) return false;
  bool bf = kv == MX_ELEM_BF16;
  r->f32 = kv == MX_ELEM_F32;
  r->step = block_scalar;
  r->tile = NULL;
  r->conv = bf ? widen_bf16 : widen_f16;
#if defined(__x86_64__)
  switch (mx_cpu_fused_isa()) {
    case MX_CPU_ISA_AVX512:
      r->step = mx_cpu_kv_block_avx512;
      r->tile = mx_cpu_kv_tile_avx512;
      r->conv = bf ? mx_cpu_lowp_convert_avx512.bf16_to_f32 : mx_cpu_lowp_convert_avx512.f16_to_f32;
      break;
    case MX_CPU_ISA_AVX2:
      r->step = mx_cpu_kv_block_avx2;
      if (mx_cpu_features()->f16c)
        r->conv = bf ? mx_cpu_lowp_convert_avx2.bf16_to_f32 : mx_cpu_lowp_convert_avx2.f16_to_f32;
      break;
    default:
      break;
  }
#endif
  r->q = q;
  r->kc = k_cache;
  r->vc = v_cache;
  r->kv = kv;
  r->esz = mx_elem_size(kv);
  // f32 caches always; bf16 / f16 ones in decode steps with a tile that widens them itself.
  r->in_place = r->f32 || (r->tile && t == 1 && mx_kv_tile_reads_16bit(d));
  r->t = t;
  r->hq = hq;
  r->hkv = hkv;
  r->g = hq / hkv;
  r->s = s;
  r->d = d;
  r->d16 = round16(d);
  r->scale = scale;
  r->softcap = softcap;
  const int64_t B = MX_ATTN_BLOCK;
  r->kf = scratch + (size_t)ith * mx_cpu_attention_kv_scratch_floats(d, s);
  r->vf = r->kf + B * r->d16;
  r->sc = r->vf + B * r->d16;
  r->acc = r->sc + MX_KV_TILE * MX_KV_STREAM_BLOCK;
  r->mrun = r->acc + MX_KV_GROUP * r->d16;
  r->lrun = r->mrun + MX_KV_GROUP;
  return true;
}

// Keys query t of sequence b sees: [*lo, *hi] (empty when *hi < *lo); with block ids [B, T], up
// to the end of the query's run of equal ids >= 0 (the window counts from its own position).
static void query_keys(const kv_run_t *r, const int32_t *pos0, const int32_t *blocks, int64_t b,
                       int64_t t, int64_t window, int64_t *lo, int64_t *hi) {
  int64_t pos = (int64_t)pos0[b] + t, last = pos;
  if (blocks && blocks[b * r->t + t] >= 0) {
    const int32_t *row = blocks + b * r->t;
    int64_t j = t;
    while (j + 1 < r->t && row[j + 1] == row[t]) j++;
    last = (int64_t)pos0[b] + j;
  }
  *lo = window > 0 ? pos - window + 1 : 0;
  if (*lo < 0) *lo = 0;
  *hi = last < r->s - 1 ? last : r->s - 1;
}

bool mx_cpu_attention_blocks_recur(const int32_t *blocks, int64_t b, int64_t t) {
  for (int64_t bi = 0; blocks && bi < b; bi++) {
    const int32_t *row = blocks + bi * t;
    int32_t top = -1;  // the largest id of the runs so far
    for (int64_t j = 0; j < t; j++) {
      if (row[j] < 0 || (j > 0 && row[j - 1] == row[j])) continue;
      if (row[j] <= top) return true;
      top = row[j];
    }
  }
  return false;
}

// The next run of id `id` in a row of block ids row[t], from index *from on: [*a, *e], or false
// when there is none; *from moves past it.
static bool next_run(const int32_t *row, int64_t t, int32_t id, int64_t *from, int64_t *a,
                     int64_t *e) {
  int64_t j = *from;
  while (j < t && row[j] != id) j++;
  if (j == t) {
    *from = t;
    return false;
  }
  *a = j;
  while (j + 1 < t && row[j + 1] == id) j++;
  *e = j;
  *from = j + 1;
  return true;
}

// The online softmax states of n queries, before their first key.
static void reset_group(const kv_run_t *r, int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    r->mrun[j] = -INFINITY;
    r->lrun[j] = 0.0f;
    memset(r->acc + j * r->d16, 0, (size_t)r->d * sizeof(float));
  }
}

// The n (<= MX_KV_GROUP) queries of units u, u + 1, ... (one sequence and kv head), query j
// over the keys [lo[j], hi[j]] (none when hi[j] < lo[j]): their online softmax states in
// r->mrun, r->lrun and r->acc (row j at j * d16) go on over these keys (reset_group first).
static void walk_group(const kv_run_t *r, int64_t u, int64_t n, const int64_t *lo,
                       const int64_t *hi) {
  const int64_t B = r->in_place && r->tile && r->t == 1 ? MX_KV_STREAM_BLOCK : MX_ATTN_BLOCK;
  const int64_t d = r->d, d16 = r->d16, t = r->t, hq = r->hq;
  int64_t smin = INT64_MAX, smax = -1;
  for (int64_t j = 0; j < n; j++) {
    if (hi[j] >= lo[j]) {
      smin = lo[j] < smin ? lo[j] : smin;
      smax = hi[j] > smax ? hi[j] : smax;
    }
  }
  unit_pos_t first = unit_at(u, t, r->hkv, r->g);
  size_t kv_off = (size_t)((first.b * r->hkv + first.kvh) * r->s) * (size_t)d;
  for (int64_t s0 = smax >= 0 ? smin / B * B : 0; smax >= 0 && s0 <= smax; s0 += B) {
    int64_t c0 = s0 > smin ? s0 : smin, c1 = s0 + B - 1 < smax ? s0 + B - 1 : smax;
    // Read in place (the block stays in L1 for the whole group), or widened into the scratch.
    size_t off = (kv_off + (size_t)(c0 * d)) * r->esz;
    const char *kb = (const char *)r->kc + off, *vb = (const char *)r->vc + off;
    mx_elem_type_t et = r->kv;
    if (!r->in_place) {
      r->conv(r->kc + kv_off + (size_t)(c0 * d), r->kf, (c1 - c0 + 1) * d);
      r->conv(r->vc + kv_off + (size_t)(c0 * d), r->vf, (c1 - c0 + 1) * d);
      kb = (const char *)r->kf;
      vb = (const char *)r->vf;
      et = MX_ELEM_F32;
    }
    const size_t row = (size_t)d * mx_elem_size(et);  // bytes per key of kb / vb
    for (int64_t j = 0; j < n;) {
      int64_t a = lo[j] > s0 ? lo[j] : s0, e = hi[j] < s0 + B - 1 ? hi[j] : s0 + B - 1;
      if (a > e) {
        j++;
        continue;
      }
      unit_pos_t p = unit_at(u + j, t, r->hkv, r->g);
      const float *qr = r->q + ((p.b * t + p.t) * hq + p.h) * d;
      // A tile: the following queries of the same position (the next heads of the group,
      // whose rows follow in q), which see the same keys of this block.
      int64_t nr = 1;
      while (r->tile && j + nr < n && nr < MX_KV_TILE) {
        unit_pos_t pn = unit_at(u + j + nr, t, r->hkv, r->g);
        if (pn.t != p.t || pn.h != p.h + nr) break;
        int64_t an = lo[j + nr] > s0 ? lo[j + nr] : s0;
        int64_t en = hi[j + nr] < s0 + B - 1 ? hi[j + nr] : s0 + B - 1;
        if (an != a || en != e) break;
        nr++;
      }
      const char *kr = kb + (size_t)(a - c0) * row, *vr = vb + (size_t)(a - c0) * row;
      if (r->tile)
        r->tile(qr, nr, kr, vr, et, e - a + 1, d, r->scale, r->softcap, &r->mrun[j], &r->lrun[j],
                r->acc + j * d16, d16, r->sc, r->kf, r->in_place);
      else  // f32 rows (the caches, or the widened block)
        r->step(qr, (const float *)kr, (const float *)vr, e - a + 1, d, r->scale, r->softcap,
                &r->mrun[j], &r->lrun[j], r->acc + j * d16, r->sc);
      j += nr;
    }
  }
}

// out[0..d) = acc / l, or with a sink logit z (sinks != NULL) acc / (l + exp(z - m)), m the
// running max: the decomposition's max over the scores and z, rescaled when z is the larger so
// that no exponential overflows.
static void finish_row(const float *acc, float m, float l, const float *sinks, int64_t h, float *o,
                       int64_t d) {
  float inv;
  if (sinks == NULL) {
    inv = 1.0f / l;
  } else if (sinks[h] > m) {
    float r = expf(m - sinks[h]);
    inv = r / (l * r + 1.0f);
  } else {
    inv = 1.0f / (l + expf(sinks[h] - m));
  }
  for (int64_t i = 0; i < d; i++) o[i] = acc[i] * inv;
}

void mx_cpu_attention_kv(const float *q, const void *k_cache, const void *v_cache,
                         mx_elem_type_t kv, const int32_t *pos0, float *out, int64_t b, int64_t t,
                         int64_t hq, int64_t hkv, int64_t s, int64_t d, float scale, int64_t window,
                         float softcap, float *scratch, int ith, int nth) {
  mx_cpu_attention_kv_sinks(q, k_cache, v_cache, kv, pos0, NULL, out, b, t, hq, hkv, s, d, scale,
                            window, softcap, scratch, ith, nth);
}

void mx_cpu_attention_kv_sinks(const float *q, const void *k_cache, const void *v_cache,
                               mx_elem_type_t kv, const int32_t *pos0, const float *sinks,
                               float *out, int64_t b, int64_t t, int64_t hq, int64_t hkv, int64_t s,
                               int64_t d, float scale, int64_t window, float softcap,
                               float *scratch, int ith, int nth) {
  mx_cpu_attention_kv_blocks(q, k_cache, v_cache, kv, pos0, sinks, NULL, out, b, t, hq, hkv, s, d,
                             scale, window, softcap, scratch, ith, nth);
}

void mx_cpu_attention_kv_blocks(const float *q, const void *k_cache, const void *v_cache,
                                mx_elem_type_t kv, const int32_t *pos0, const float *sinks,
                                const int32_t *blocks, float *out, int64_t b, int64_t t, int64_t hq,
                                int64_t hkv, int64_t s, int64_t d, float scale, int64_t window,
                                float softcap, float *scratch, int ith, int nth) {
  kv_run_t r;
  if (b <= 0 ||
      !kv_run_init(&r, q, k_cache, v_cache, kv, t, hq, hkv, s, d, scale, softcap, scratch, ith))
    return;
  int64_t n_units = b * t * hq;
  int64_t u0 = n_units * ith / nth, u1 = n_units * (ith + 1) / nth;
  int64_t lo[MX_KV_GROUP], hi[MX_KV_GROUP];
  // An id that recurs after other tokens (Molmo2's images with text between them): a query of it
  // also sees the later runs of its id, each one more segment of keys after its own range, over
  // which its online softmax goes on; the text between them stays unseen.
  bool recur = t > 1 && mx_cpu_attention_blocks_recur(blocks, b, t);
  int64_t from[MX_KV_GROUP], slo[MX_KV_GROUP], shi[MX_KV_GROUP];
  for (int64_t u = u0; u < u1;) {
    // A group: consecutive units of one (sequence, kv head), at most MX_KV_GROUP.
    unit_pos_t first = unit_at(u, t, hkv, r.g);
    int64_t n = 0;
    while (u + n < u1 && n < MX_KV_GROUP) {
      unit_pos_t p = unit_at(u + n, t, hkv, r.g);
      if (p.b != first.b || p.kvh != first.kvh) break;
      query_keys(&r, pos0, blocks, p.b, p.t, window, &lo[n], &hi[n]);
      n++;
    }
    reset_group(&r, n);
    walk_group(&r, u, n, lo, hi);
    for (int64_t j = 0; recur && j < n; j++) {  // search after the query's own range
      unit_pos_t p = unit_at(u + j, t, hkv, r.g);
      from[j] = hi[j] >= lo[j] && blocks[p.b * t + p.t] >= 0 ? hi[j] - pos0[p.b] + 1 : t;
    }
    for (bool more = recur; more;) {
      more = false;
      for (int64_t j = 0; j < n; j++) {
        unit_pos_t p = unit_at(u + j, t, hkv, r.g);
        int64_t a, e;
        slo[j] = 1;
        shi[j] = 0;
        if (from[j] < t && next_run(blocks + p.b * t, t, blocks[p.b * t + p.t], &from[j], &a, &e) &&
            pos0[p.b] + a <= s - 1) {
          slo[j] = pos0[p.b] + a;
          shi[j] = pos0[p.b] + e < s - 1 ? pos0[p.b] + e : s - 1;
          more = true;
        }
      }
      if (more) walk_group(&r, u, n, slo, shi);
    }
    for (int64_t j = 0; j < n; j++) {
      unit_pos_t p = unit_at(u + j, t, hkv, r.g);
      float *o_row = out + ((p.b * t + p.t) * hq + p.h) * d;
      if (hi[j] < lo[j]) {
        memset(o_row, 0, (size_t)d * sizeof(float));
        continue;
      }
      finish_row(r.acc + j * r.d16, r.mrun[j], r.lrun[j], sinks, p.h, o_row, d);
    }
    u += n;
  }
}

// ---- Decode split over the keys ----

int64_t mx_cpu_attention_kv_parts(int64_t hkv) {
  if (hkv <= 0 || hkv >= MX_KV_SPLIT_ITEMS / 2) return 1;
  return (MX_KV_SPLIT_ITEMS + hkv - 1) / hkv;
}

size_t mx_cpu_attention_kv_part_floats(int64_t b, int64_t hq, int64_t d, int64_t parts) {
  return (size_t)(b * hq * parts * (d + 2));
}

void mx_cpu_attention_kv_split(const float *q, const void *k_cache, const void *v_cache,
                               mx_elem_type_t kv, const int32_t *pos0, float *part, int64_t b,
                               int64_t hq, int64_t hkv, int64_t s, int64_t d, float scale,
                               int64_t window, float softcap, int64_t parts, float *scratch,
                               mx_cpu_work_t *work, int ith, int nth) {
  kv_run_t r;
  if (b <= 0 || parts <= 0 ||
      !kv_run_init(&r, q, k_cache, v_cache, kv, 1, hq, hkv, s, d, scale, softcap, scratch, ith))
    return;
  const int64_t B = MX_ATTN_BLOCK, n_items = b * hkv * parts;
  int64_t lo[MX_KV_GROUP], hi[MX_KV_GROUP];
  int64_t it = n_items * ith / nth, end = n_items * (ith + 1) / nth;
  while (work ? mx_cpu_work_claim(work, n_items, ith, nth, &it) : it < end) {
    int64_t pi = it % parts, grp = it / parts, bi = grp / hkv, kvh = grp % hkv;
    // The piece: blocks [nblk * pi / parts, nblk * (pi + 1) / parts) of the query's key range
    // (block-aligned, so each piece walks the same blocks the whole range would).
    int64_t qlo, qhi, plo = 0, phi = -1;
    query_keys(&r, pos0, NULL, bi, 0, window, &qlo, &qhi);
    if (qhi >= qlo) {
      int64_t fb = qlo / B, nblk = qhi / B - fb + 1;
      int64_t b0 = fb + nblk * pi / parts, b1 = fb + nblk * (pi + 1) / parts;
      plo = b0 * B > qlo ? b0 * B : qlo;
      phi = b1 * B - 1 < qhi ? b1 * B - 1 : qhi;
    }
    for (int64_t j0 = 0; j0 < r.g; j0 += MX_KV_GROUP) {
      int64_t n = r.g - j0 < MX_KV_GROUP ? r.g - j0 : MX_KV_GROUP;
      for (int64_t j = 0; j < n; j++) {
        lo[j] = plo;
        hi[j] = phi;
      }
      int64_t u = (bi * hkv + kvh) * r.g + j0;  // unit of the first query (t = 1)
      reset_group(&r, n);
      walk_group(&r, u, n, lo, hi);
      for (int64_t j = 0; j < n; j++) {
        float *dst = part + ((bi * hq + kvh * r.g + j0 + j) * parts + pi) * (d + 2);
        dst[0] = r.mrun[j];
        dst[1] = r.lrun[j];  // 0: the piece has no key
        memcpy(dst + 2, r.acc + j * r.d16, (size_t)d * sizeof(float));
      }
    }
    it++;  // the fixed split's next piece (work: the next claim overwrites it)
  }
}

void mx_cpu_attention_kv_merge(const float *part, float *out, int64_t rows, int64_t d,
                               int64_t parts, int ith, int nth) {
  mx_cpu_attention_kv_merge_sinks(part, NULL, 1, out, rows, d, parts, ith, nth);
}

void mx_cpu_attention_kv_merge_sinks(const float *part, const float *sinks, int64_t hq, float *out,
                                     int64_t rows, int64_t d, int64_t parts, int ith, int nth) {
  for (int64_t row = rows * ith / nth; row < rows * (ith + 1) / nth; row++) {
    const float *pr = part + row * parts * (d + 2);
    float *o = out + row * d;
    float m = -INFINITY;
    for (int64_t p = 0; p < parts; p++)
      if (pr[p * (d + 2) + 1] > 0.0f && pr[p * (d + 2)] > m) m = pr[p * (d + 2)];
    memset(o, 0, (size_t)d * sizeof(float));
    if (m == -INFINITY) continue;  // no key at all: zeros, like the unsplit kernel
    float l = 0.0f;
    for (int64_t p = 0; p < parts; p++) {
      const float *src = pr + p * (d + 2);
      if (src[1] <= 0.0f) continue;
      float w = expf(src[0] - m);
      l += src[1] * w;
      for (int64_t i = 0; i < d; i++) o[i] += src[2 + i] * w;
    }
    finish_row(o, m, l, sinks, row % hq, o, d);
  }
}
