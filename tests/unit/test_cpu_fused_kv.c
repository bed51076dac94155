// Attention over bf16 / f16 KV caches (src/cpu/fused_kv.h), every fused-kernel variant: the
// result must be the f32 kernel's on the exactly widened caches (same softmax; the blocks are
// aligned differently and the dot products grouped differently, so within f32 rounding), on
// awkward shapes (d not a multiple of 16, GQA, windows, soft-capping, a query past the capacity,
// none visible, more queries per kv head than one group), and bit-identical for any split.
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "cpu/fused_kv.h"
#include "mx_test.h"

static uint64_t g_rng = 0x8F14E45FCEEA167Aull;
static float frand(void) {  // [-1, 1)
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return (float)((double)(g_rng >> 11) / 4503599627370496.0 - 1.0);
}

typedef struct shape {
  int64_t b, t, hq, hkv, s, d, window;
  float softcap;
  int32_t pos0[2];
} shape_t;

// Decode split over the keys (t = 1): split + merge equals the unsplit kernel's ref within f32
// rounding for `parts` pieces, and is bit-identical for 1-3 threads.
static void split_case(mx_elem_type_t kv, const shape_t *c, const void *k, const void *v,
                       const float *q, const float *ref, int64_t parts, float *scr,
                       const char *isa) {
  int64_t rows = c->b * c->hq, n = rows * c->d;
  size_t np = mx_cpu_attention_kv_part_floats(c->b, c->hq, c->d, parts);
  float *part = malloc(sizeof(float) * np), *o1 = malloc(sizeof(float) * (size_t)n);
  float *o2 = malloc(sizeof(float) * (size_t)n);
  // nth 1-3 with the fixed split, then 2-3 claiming through a work counter (called one after
  // the other: the first call takes every piece).
  for (int run = 1; run <= 5; run++) {
    int nth = run <= 3 ? run : run - 2;
    mx_cpu_work_t work;
    mx_cpu_work_reset(&work);
    float *o = nth == 1 ? o1 : o2;
    memset(o, 0xff, sizeof(float) * (size_t)n);
    for (size_t i = 0; i < np; i++) part[i] = NAN;  // every piece must be written
    for (int t = 0; t < nth; t++)
      mx_cpu_attention_kv_split(q, k, v, kv, c->pos0, part, c->b, c->hq, c->hkv, c->s, c->d, 0.125f,
                                c->window, c->softcap, parts, scr, run > 3 ? &work : NULL, t, nth);
    for (int t = nth - 1; t >= 0; t--)
      mx_cpu_attention_kv_merge(part, o, rows, c->d, parts, t, nth);
    if (nth == 1) {
      double md = 0;
      for (int64_t i = 0; i < n; i++) md = fmax(md, fabs((double)o1[i] - ref[i]));
      CHECK_MSG(md <= 2e-6, "%s %s split in %lld: hq%lld hkv%lld s%lld d%lld w%lld: max diff %g",
                isa, mx_elem_name(kv), (long long)parts, (long long)c->hq, (long long)c->hkv,
                (long long)c->s, (long long)c->d, (long long)c->window, md);
    } else {
      CHECK_MSG(memcmp(o1, o2, sizeof(float) * (size_t)n) == 0,
                "%s %s split in %lld: %d threads differ", isa, mx_elem_name(kv), (long long)parts,
                nth);
    }
  }
  free(part), free(o1), free(o2);
}

// Random queries q[nq], and caches of nc values stored as kv (kh, vh) with their exact f32
// values (kf, vf).
static void fill(mx_elem_type_t kv, float *q, int64_t nq, uint16_t *kh, uint16_t *vh, float *kf,
                 float *vf, int64_t nc) {
  for (int64_t i = 0; i < nq; i++) q[i] = 2.0f * frand();
  for (int64_t i = 0; i < nc; i++) {
    float a = 1.5f * frand(), b = frand();
    kh[i] = kv == MX_ELEM_BF16 ? mx_f32_to_bf16(a) : mx_f32_to_f16(a);
    vh[i] = kv == MX_ELEM_BF16 ? mx_f32_to_bf16(b) : mx_f32_to_f16(b);
    kf[i] = kv == MX_ELEM_BF16 ? mx_bf16_to_f32(kh[i]) : mx_f16_to_f32(kh[i]);
    vf[i] = kv == MX_ELEM_BF16 ? mx_bf16_to_f32(vh[i]) : mx_f16_to_f32(vh[i]);
  }
}

static void run_case(mx_elem_type_t kv, const shape_t *c, const char *isa) {
  int64_t nq = c->b * c->t * c->hq * c->d, nc = c->b * c->hkv * c->s * c->d;
  float *q = malloc(sizeof(float) * (size_t)nq), *kf = malloc(sizeof(float) * (size_t)nc);
  float *vf = malloc(sizeof(float) * (size_t)nc);
  uint16_t *kh = malloc(sizeof(uint16_t) * (size_t)nc), *vh = malloc(sizeof(uint16_t) * (size_t)nc);
  float *o32 = malloc(sizeof(float) * (size_t)nq), *o16 = malloc(sizeof(float) * (size_t)nq);
  float *o16b = malloc(sizeof(float) * (size_t)nq);
  fill(kv, q, nq, kh, vh, kf, vf, nc);
  size_t s32 = mx_cpu_attention_scratch_floats(c->d, c->s);
  size_t s16 = mx_cpu_attention_kv_scratch_floats(c->d, c->s);
  float *scr = malloc(sizeof(float) * (s32 > s16 ? s32 : s16) * 4);
  mx_cpu_attention_f32(q, kf, vf, c->pos0, o32, c->b, c->t, c->hq, c->hkv, c->s, c->d, 0.125f,
                       c->window, c->softcap, scr, 0, 1);
  mx_cpu_attention_kv(q, kh, vh, kv, c->pos0, o16, c->b, c->t, c->hq, c->hkv, c->s, c->d, 0.125f,
                      c->window, c->softcap, scr, 0, 1);
  double md = 0;
  for (int64_t i = 0; i < nq; i++) md = fmax(md, fabs((double)o16[i] - o32[i]));
  CHECK_MSG(md <= 2e-6, "%s %s b%lld t%lld hq%lld hkv%lld s%lld d%lld w%lld cap %g: max diff %g",
            isa, mx_elem_name(kv), (long long)c->b, (long long)c->t, (long long)c->hq,
            (long long)c->hkv, (long long)c->s, (long long)c->d, (long long)c->window,
            (double)c->softcap, md);
  for (int nth = 2; nth <= 3; nth++) {
    memset(o16b, 0xff, sizeof(float) * (size_t)nq);
    for (int t = 0; t < nth; t++)
      mx_cpu_attention_kv(q, kh, vh, kv, c->pos0, o16b, c->b, c->t, c->hq, c->hkv, c->s, c->d,
                          0.125f, c->window, c->softcap, scr, t, nth);
    CHECK_MSG(memcmp(o16, o16b, sizeof(float) * (size_t)nq) == 0, "%s %s: %d threads differ", isa,
              mx_elem_name(kv), nth);
  }
  if (c->t > 2) {  // block ids (two bidirectional runs per sequence), as the f32 kernel reads them
    int32_t *blocks = malloc(sizeof(int32_t) * (size_t)(c->b * c->t));
    for (int64_t bi = 0; bi < c->b; bi++)
      for (int64_t ti = 0; ti < c->t; ti++)
        blocks[bi * c->t + ti] = ti >= c->t / 4 && ti < c->t / 2 ? 7 : ti > c->t / 2 ? 3 : -1;
    mx_cpu_attention_blocks_f32(q, kf, vf, c->pos0, blocks, o32, c->b, c->t, c->hq, c->hkv, c->s,
                                c->d, 0.125f, c->window, c->softcap, scr, 0, 1);
    for (int nth = 1; nth <= 3; nth++) {
      float *o = nth == 1 ? o16 : o16b;
      memset(o, 0xff, sizeof(float) * (size_t)nq);
      for (int t = 0; t < nth; t++)
        mx_cpu_attention_kv_blocks(q, kh, vh, kv, c->pos0, NULL, blocks, o, c->b, c->t, c->hq,
                                   c->hkv, c->s, c->d, 0.125f, c->window, c->softcap, scr, t, nth);
    }
    md = 0;
    for (int64_t i = 0; i < nq; i++) md = fmax(md, fabs((double)o16[i] - o32[i]));
    CHECK_MSG(md <= 2e-6, "%s %s blocks b%lld t%lld hq%lld hkv%lld s%lld d%lld w%lld: max diff %g",
              isa, mx_elem_name(kv), (long long)c->b, (long long)c->t, (long long)c->hq,
              (long long)c->hkv, (long long)c->s, (long long)c->d, (long long)c->window, md);
    CHECK_MSG(memcmp(o16, o16b, sizeof(float) * (size_t)nq) == 0, "%s %s blocks: threads differ",
              isa, mx_elem_name(kv));
    free(blocks);
  }
  if (c->t == 1) {
    int64_t parts[3] = {mx_cpu_attention_kv_parts(c->hkv), 3, 7};
    for (int i = 0; i < 3; i++) {
      split_case(kv, c, kh, vh, q, o16, parts[i], scr, isa);
      if (kv == MX_ELEM_BF16) split_case(MX_ELEM_F32, c, kf, vf, q, o32, parts[i], scr, isa);
    }
  }
  free(q), free(kf), free(vf), free(kh), free(vh), free(o32), free(o16), free(o16b), free(scr);
}

// mx.attention's block semantics by their definition (composite.h), in double: query t of
// sequence b at p = pos0[b] + t sees slot j (< s, within the window from p) when j <= p or j is
// pos0[b] + u of a query u of the call with its id >= 0.
static void naive_blocks(const float *q, const float *k, const float *v, const shape_t *c,
                         const int32_t *blocks, float *out) {
  int64_t g = c->hq / c->hkv;
  double *w = malloc(sizeof(double) * (size_t)c->s);
  for (int64_t bi = 0; bi < c->b; bi++)
    for (int64_t ti = 0; ti < c->t; ti++)
      for (int64_t h = 0; h < c->hq; h++) {
        int64_t p = c->pos0[bi] + ti, id = blocks[bi * c->t + ti];
        const float *qr = q + ((bi * c->t + ti) * c->hq + h) * c->d;
        const float *kc = k + (bi * c->hkv + h / g) * c->s * c->d;
        const float *vc = v + (bi * c->hkv + h / g) * c->s * c->d;
        float *o = out + ((bi * c->t + ti) * c->hq + h) * c->d;
        double m = -INFINITY, l = 0;
        for (int64_t j = 0; j < c->s; j++) {
          int64_t u = j - c->pos0[bi];
          bool seen = j <= p || (id >= 0 && u >= 0 && u < c->t && blocks[bi * c->t + u] == id);
          if (c->window > 0 && j <= p - c->window) seen = false;
          w[j] = -INFINITY;
          if (!seen) continue;
          double dot = 0;
          for (int64_t i = 0; i < c->d; i++) dot += (double)qr[i] * kc[j * c->d + i];
          w[j] = dot * 0.125;
          if (c->softcap > 0) w[j] = tanh(w[j] / c->softcap) * c->softcap;
          m = fmax(m, w[j]);
        }
        for (int64_t i = 0; i < c->d; i++) o[i] = 0.0f;
        if (m == -INFINITY) continue;
        for (int64_t j = 0; j < c->s; j++) l += w[j] == -INFINITY ? 0 : exp(w[j] - m);
        for (int64_t i = 0; i < c->d; i++) {
          double a = 0;
          for (int64_t j = 0; j < c->s; j++)
            if (w[j] != -INFINITY) a += exp(w[j] - m) * vc[j * c->d + i];
          o[i] = (float)(a / l);
        }
      }
  free(w);
}

// Block ids that recur after other tokens (Molmo2's images with text between them: one id for
// all its image tokens): a query of the id sees its causal keys and every later run of its id,
// never the tokens between; the f32 kernel and the bf16 / f16 driver against the definition
// (a kernel that read one range per query would see the text between, or miss the later runs),
// bit-identical for 1-3 threads. The ids of runs numbered in order (Gemma 3) are not recurring.
static void recur_case(mx_elem_type_t kv, const shape_t *c, const char *isa) {
  int64_t nq = c->b * c->t * c->hq * c->d, nc = c->b * c->hkv * c->s * c->d;
  float *q = malloc(sizeof(float) * (size_t)nq), *kf = malloc(sizeof(float) * (size_t)nc);
  float *vf = malloc(sizeof(float) * (size_t)nc), *ref = malloc(sizeof(float) * (size_t)nq);
  uint16_t *kh = malloc(sizeof(uint16_t) * (size_t)nc), *vh = malloc(sizeof(uint16_t) * (size_t)nc);
  float *o1 = malloc(sizeof(float) * (size_t)nq), *o2 = malloc(sizeof(float) * (size_t)nq);
  int32_t *blocks = malloc(sizeof(int32_t) * (size_t)(c->b * c->t));
  fill(kv, q, nq, kh, vh, kf, vf, nc);
  // Text, id 0, text, id 0, id 5 (another block beside it), text, id 0, text (by eighths of t).
  static const int32_t kIds[8] = {-1, 0, -1, 0, 5, -1, 0, -1};
  for (int64_t bi = 0; bi < c->b; bi++)
    for (int64_t ti = 0; ti < c->t; ti++) blocks[bi * c->t + ti] = kIds[ti * 8 / c->t];
  CHECK(mx_cpu_attention_blocks_recur(blocks, c->b, c->t));
  naive_blocks(q, kf, vf, c, blocks, ref);
  size_t s32 = mx_cpu_attention_scratch_floats(c->d, c->s);
  size_t s16 = mx_cpu_attention_kv_scratch_floats(c->d, c->s);
  float *scr = malloc(sizeof(float) * (s32 > s16 ? s32 : s16) * 4);
  for (int pass = 0; pass < 2; pass++) {  // the f32 kernel, then the 16-bit driver
    for (int nth = 1; nth <= 3; nth++) {
      float *o = nth == 1 ? o1 : o2;
      memset(o, 0xff, sizeof(float) * (size_t)nq);
      for (int t = 0; t < nth; t++) {
        if (pass == 0)
          mx_cpu_attention_blocks_f32(q, kf, vf, c->pos0, blocks, o, c->b, c->t, c->hq, c->hkv,
                                      c->s, c->d, 0.125f, c->window, c->softcap, scr, t, nth);
        else
          mx_cpu_attention_kv_blocks(q, kh, vh, kv, c->pos0, NULL, blocks, o, c->b, c->t, c->hq,
                                     c->hkv, c->s, c->d, 0.125f, c->window, c->softcap, scr, t,
                                     nth);
      }
      if (nth > 1)
        CHECK_MSG(memcmp(o1, o2, sizeof(float) * (size_t)nq) == 0,
                  "%s %s recurring blocks (%s): %d threads differ", isa, mx_elem_name(kv),
                  pass ? "16-bit" : "f32", nth);
    }
    double md = 0;
    for (int64_t i = 0; i < nq; i++) md = fmax(md, fabs((double)o1[i] - ref[i]));
    CHECK_MSG(md <= 1e-5, "%s %s recurring blocks (%s) b%lld t%lld hq%lld hkv%lld w%lld: %g", isa,
              mx_elem_name(kv), pass ? "16-bit" : "f32", (long long)c->b, (long long)c->t,
              (long long)c->hq, (long long)c->hkv, (long long)c->window, md);
  }
  // Runs numbered in order, each id once: one range per query (the tile kernels' path).
  for (int64_t ti = 0; ti < c->t; ti++) blocks[ti] = kIds[ti * 8 / c->t] < 0 ? -1 : (int32_t)ti;
  CHECK(!mx_cpu_attention_blocks_recur(blocks, 1, c->t));
  free(q), free(kf), free(vf), free(ref), free(kh), free(vh), free(o1), free(o2), free(blocks);
  free(scr);
}

int main(void) {
  static const shape_t recur[] = {
      {1, 40, 4, 2, 64, 16, 0, 0.0f, {0, 0}},     // prefill from 0, GQA 2
      {2, 96, 6, 2, 300, 24, 0, 0.0f, {5, 150}},  // 2 sequences, runs across 64-key blocks
      {1, 64, 2, 1, 120, 32, 20, 0.0f, {10, 0}},  // window 20 from the query's position
      {1, 48, 4, 4, 60, 16, 0, 10.0f, {20, 0}},   // soft-cap; the last runs past capacity
  };
  static const shape_t cases[] = {
      {1, 1, 4, 2, 200, 64, 0, 0.0f, {150, 0}},     // decode, GQA 2, 3 blocks
      {1, 1, 3, 1, 70, 100, 0, 0.0f, {69, 0}},      // d = 100 (masked tails), last slot
      {2, 5, 6, 3, 40, 17, 0, 0.0f, {3, 30}},       // batch 2, prefill, d = 17
      {1, 7, 2, 2, 130, 32, 8, 0.0f, {60, 0}},      // sliding window 8
      {1, 3, 4, 1, 90, 24, 0, 20.0f, {80, 0}},      // soft-capping
      {1, 2, 2, 1, 16, 8, 0, 0.0f, {15, 0}},        // the second query sits past the capacity
      {1, 1, 2, 1, 16, 8, 4, 0.0f, {-1, 0}},        // no key visible: zeros
      {1, 1, 8, 8, 300, 128, 0, 0.0f, {299, 0}},    // d = 128 (the 4-block accumulator path)
      {1, 4, 4, 2, 256, 256, 0, 0.0f, {200, 0}},    // d = 256
      {1, 80, 4, 1, 400, 48, 0, 0.0f, {150, 0}},    // 320 queries per kv head: two groups
      {2, 33, 6, 2, 200, 32, 70, 0.0f, {60, 100}},  // window 70 across block boundaries
      {1, 1, 12, 2, 150, 80, 0, 0.0f, {149, 0}},    // tiles of 6 queries, d = 64 + 16 lanes
      {1, 1, 24, 2, 100, 64, 0, 0.0f, {70, 0}},     // GQA 12: tiles of 8 and 4 queries
      {1, 3, 10, 2, 120, 64, 0, 3.0f, {50, 0}},     // prefill, 5 heads per position, soft-cap
      {2, 1, 6, 3, 300, 64, 100, 2.0f, {250, 40}},  // decode, 2 sequences, window over blocks
      {1, 1, 300, 1, 100, 16, 0, 0.0f, {90, 0}},    // 300 heads on one kv head: two groups
      {1, 1, 8, 2, 600, 256, 0, 0.0f, {580, 0}},    // decode, d = 256 (not a D-constant tile)
      {1, 1, 6, 2, 300, 128, 0, 30.0f, {299, 0}},   // decode, d = 128, soft-cap, 2 stream blocks
  };
  static const char *names[] = {"scalar", "avx2", "avx512"};
  for (int isa = 0; isa < 3; isa++) {
    if (mx_cpu_fused_use_isa((mx_cpu_isa_t)isa) != MX_OK) {
      printf("note: %s not available\n", names[isa]);
      continue;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      run_case(MX_ELEM_BF16, &cases[i], names[isa]);
      run_case(MX_ELEM_F16, &cases[i], names[isa]);
    }
    for (size_t i = 0; i < sizeof recur / sizeof recur[0]; i++) {
      recur_case(MX_ELEM_BF16, &recur[i], names[isa]);
      recur_case(MX_ELEM_F16, &recur[i], names[isa]);
    }
  }
  return mx_test_finish();
}
