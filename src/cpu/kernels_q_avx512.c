// AVX-512 quantized kernels (see kernels_q.h): the exact path on the KMAJOR layout (one zmm =
// the 16 rows of a panel: unpack, convert, FMA with the broadcast activation) and the VNNI path
// on the VNNI layout (vpdpbusd of unsigned weights and int8 activations). Compiled with
// function-level target attributes; only called after mx_cpu_features() said yes.
#include "cpu/kernels_q.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/kernels_q_vnni16.h"
#include "cpu/prefetch.h"

#define MX_TVNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")))

MX_T512 static inline __m512 load_params(const mx_cpu_qpacked_t *w, const void *a, int64_t i) {
  return params16(a, i, w->f16);
}

// Software prefetch PF_AHEAD bytes ahead of the group being read: each thread streams one
// contiguous run of panels, and the hardware prefetcher alone leaves part of the bandwidth
// unused on the quantized streams (bench/cpu_quant; docs/performance.md, "Kernel measurements").
// Prefetching past the end of the buffer is harmless (prefetches never fault). always_inline: see
// prefetch_step.
enum { PF_AHEAD = 2048 };
MX_T512 static inline __attribute__((always_inline)) void prefetch_group(const uint8_t *group,
                                                                         int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64)
    _mm_prefetch((const char *)group + PF_AHEAD + o, _MM_HINT_T0);
}

// The VNNI16 loops and the 4-bit VNNI loop read 128 bytes of weights per step and prefetch
// inside the loop, its two lines by cpu/prefetch.h's policy (1 KiB ahead into L1, 4 KiB into L2),
// instead of a group's lines at once PF_AHEAD ahead: the burst starves the 4-bit loops (twice
// the arithmetic per byte of the 8-bit ones) where a prefetch spread over the loop keeps the
// stream at the bandwidth (bench/cpu_quant; docs/performance.md, "Kernel measurements").
// always_inline: called from an always_inline body (vnni16_q4), a plain static inline copy lost
// its prefetches altogether in GCC 12's object code (no call, no prefetch instruction left: a
// function that only prefetches has no side effects the optimizer must keep).
MX_T512 static inline __attribute__((always_inline)) void prefetch_step(const uint8_t *p) {
  mx_cpu_prefetch_line(p);
  mx_cpu_prefetch_line(p + 64);
}

MX_T512 static inline __mmask16 row_mask(const mx_cpu_qpacked_t *w, int64_t p) {
  int64_t rows = w->n - p * MX_QR;
  return rows >= MX_QR ? (__mmask16)0xffff : (__mmask16)((1u << rows) - 1u);
}

// xsum[j] of every group (fixed order: 16-lane partial sums, then the lane reduction).
MX_T512 static void prep_exact(const mx_cpu_qpacked_t *w, const float *x, mx_qact_t *a) {
  for (int64_t j = 0; j < w->groups; j++) {
    const float *xg = x + j * w->group;
    __m512 s = _mm512_loadu_ps(xg);
    for (int64_t i = 16; i < w->group; i += 16) s = _mm512_add_ps(s, _mm512_loadu_ps(xg + i));
    a->xsum[j] = _mm512_reduce_add_ps(s);
  }
}

// Group epilogue shared by both paths: y += s * t [+ b * xsum].
MX_T512 static inline __m512 group_out(const mx_cpu_qpacked_t *w, int64_t pi, __m512 t, float xs,
                                       __m512 y) {
  y = _mm512_fmadd_ps(load_params(w, w->s, pi), t, y);
  if (w->b) y = _mm512_fmadd_ps(load_params(w, w->b, pi), _mm512_set1_ps(xs), y);
  return y;
}

MX_T512 static void gemv_exact(const mx_cpu_qpacked_t *w, const float *x, const mx_qact_t *a,
                               float *y, int64_t p0, int64_t p1) {
  const int64_t k = w->k, g = w->group;
  const __m512 off = _mm512_set1_ps((float)w->offset);
  const __m512i lo4 = _mm512_set1_epi32(15);
  for (int64_t p = p0; p < p1; p++) {
    __m512 yv = _mm512_setzero_ps();
    if (w->bits == 8) {
      const uint8_t *qp = w->q + p * k * MX_QR;
      for (int64_t j = 0; j < w->groups; j++) {
        const uint8_t *qg = qp + j * g * MX_QR;
        const float *xg = x + j * g;
        prefetch_group(qg, g * MX_QR);
        __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
        for (int64_t i = 0; i < g; i += 4) {
          __m512 v0 = _mm512_cvtepi32_ps(
              _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(qg + i * MX_QR))));
          __m512 v1 = _mm512_cvtepi32_ps(
              _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(qg + (i + 1) * MX_QR))));
          __m512 v2 = _mm512_cvtepi32_ps(
              _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(qg + (i + 2) * MX_QR))));
          __m512 v3 = _mm512_cvtepi32_ps(
              _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(qg + (i + 3) * MX_QR))));
          c0 = _mm512_fmadd_ps(v0, _mm512_set1_ps(xg[i]), c0);
          c1 = _mm512_fmadd_ps(v1, _mm512_set1_ps(xg[i + 1]), c1);
          c2 = _mm512_fmadd_ps(v2, _mm512_set1_ps(xg[i + 2]), c2);
          c3 = _mm512_fmadd_ps(v3, _mm512_set1_ps(xg[i + 3]), c3);
        }
        __m512 acc = _mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3));
        __m512 t = _mm512_fnmadd_ps(off, _mm512_set1_ps(a->xsum[j]), acc);
        yv = group_out(w, (p * w->groups + j) * MX_QR, t, a->xsum[j], yv);
      }
    } else {
      const uint8_t *qp = w->q + p * (k / 2) * MX_QR;
      for (int64_t j = 0; j < w->groups; j++) {
        const uint8_t *qg = qp + j * (g / 2) * MX_QR;
        const float *xg = x + j * g;
        prefetch_group(qg, g / 2 * MX_QR);
        __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
        for (int64_t i = 0; i < g; i += 4) {
          __m512i b0 = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(qg + i / 2 * MX_QR)));
          __m512i b1 =
              _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(qg + (i / 2 + 1) * MX_QR)));
          c0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(b0, lo4)), _mm512_set1_ps(xg[i]),
                               c0);
          c1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(b0, 4)),
                               _mm512_set1_ps(xg[i + 1]), c1);
          c2 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(b1, lo4)),
                               _mm512_set1_ps(xg[i + 2]), c2);
          c3 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(b1, 4)),
                               _mm512_set1_ps(xg[i + 3]), c3);
        }
        __m512 acc = _mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3));
        __m512 t = _mm512_fnmadd_ps(off, _mm512_set1_ps(a->xsum[j]), acc);
        yv = group_out(w, (p * w->groups + j) * MX_QR, t, a->xsum[j], yv);
      }
    }
    _mm512_mask_storeu_ps(y + p * MX_QR, row_mask(w, p), yv);
  }
}

// dst[kk * ld + r] = (u - o) * s [+ b] for a 16-row panel; u from either layout.
MX_T512 static void dequant(const mx_cpu_qpacked_t *w, int64_t p, int64_t k0, int64_t kc,
                            float *dst, int64_t ld) {
  const int64_t k = w->k, g = w->group;
  const __m512 off = _mm512_set1_ps((float)w->offset);
  const __m512i m8 = _mm512_set1_epi32(255), m4 = _mm512_set1_epi32(15);
  __m512 s = _mm512_setzero_ps(), b = _mm512_setzero_ps();
  for (int64_t kk = k0; kk < k0 + kc; kk += 8) {
    if (kk == k0 || kk % g == 0) {
      int64_t pi = (p * w->groups + kk / g) * MX_QR;
      s = load_params(w, w->s, pi);
      if (w->b) b = load_params(w, w->b, pi);
    }
    __m512i u[8];
    if (w->layout == MX_QL_KMAJOR && w->bits == 8) {
      const uint8_t *q = w->q + (p * k + kk) * MX_QR;
      for (int i = 0; i < 8; i++)
        u[i] = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(q + i * MX_QR)));
    } else if (w->layout == MX_QL_KMAJOR) {
      const uint8_t *q = w->q + (p * (k / 2) + kk / 2) * MX_QR;
      for (int i = 0; i < 4; i++) {
        __m512i v = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(q + i * MX_QR)));
        u[2 * i] = _mm512_and_si512(v, m4);
        u[2 * i + 1] = _mm512_srli_epi32(v, 4);
      }
    } else if (w->bits == 8) {  // VNNI: lane r holds 4 consecutive k of row r
      const uint8_t *q = w->q + (p * (k / 4) + kk / 4) * MX_QR * 4;
      for (int h = 0; h < 2; h++) {
        __m512i v = _mm512_load_si512((const void *)(q + h * 64));
        for (int i = 0; i < 4; i++)
          u[4 * h + i] = _mm512_and_si512(_mm512_srli_epi32(v, 8 * i), m8);
      }
    } else {  // VNNI 4-bit: byte i low nibble = k i, high nibble = k 4 + i
      __m512i v = _mm512_load_si512((const void *)(w->q + (p * (k / 8) + kk / 8) * MX_QR * 4));
      for (int i = 0; i < 4; i++) {
        u[i] = _mm512_and_si512(_mm512_srli_epi32(v, 8 * i), m4);
        u[4 + i] = _mm512_and_si512(_mm512_srli_epi32(v, 8 * i + 4), m4);
      }
    }
    for (int i = 0; i < 8; i++) {
      __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(u[i]), off), s);
      if (w->b) v = _mm512_add_ps(v, b);
      _mm512_storeu_ps(dst + (kk - k0 + i) * ld, v);
    }
  }
}

const mx_cpu_qkernels_t mx_cpu_qkernels_avx512 = {
    .name = "avx512",
    .layout = MX_QL_KMAJOR,
    .prep = prep_exact,
    .gemv = gemv_exact,
    .dequant = dequant,
};

// ---- VNNI path ----

// Per group: xsum (f32), dx = max|x| / 127, xq = rint(x / dx) (saturated to int8), xqsum.
MX_TVNNI static void prep_vnni(const mx_cpu_qpacked_t *w, const float *x, mx_qact_t *a) {
  const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  for (int64_t j = 0; j < w->groups; j++) {
    const float *xg = x + j * w->group;
    __m512 s = _mm512_loadu_ps(xg), mx = _mm512_and_ps(s, absmask);
    for (int64_t i = 16; i < w->group; i += 16) {
      __m512 v = _mm512_loadu_ps(xg + i);
      s = _mm512_add_ps(s, v);
      mx = _mm512_max_ps(mx, _mm512_and_ps(v, absmask));
    }
    a->xsum[j] = _mm512_reduce_add_ps(s);
    float amax = _mm512_reduce_max_ps(mx);
    a->dx[j] = amax / 127.0f;
    __m512 inv = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    __m512i qs = _mm512_setzero_si512();
    for (int64_t i = 0; i < w->group; i += 16) {
      __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xg + i), inv));
      qs = _mm512_add_epi32(qs, q);
      _mm_storeu_si128((__m128i *)(a->xq + j * w->group + i), _mm512_cvtsepi32_epi8(q));
    }
    a->xqsum[j] = _mm512_reduce_add_epi32(qs);
  }
}

// acc + u . s (vpdpbusd: u unsigned bytes, s the 4 signed bytes at s broadcast to every lane),
// in place. Written in asm because GCC 12 gives _mm512_dpbusd_epi32's result a fresh register
// and copies it back to the accumulator (two vmovdqa per vpdpbusd in the unrolled loops below,
// plus a separate broadcast), a measurable share of the int8 decode (docs/performance.md, "Kernel
// measurements").
typedef struct {
  int8_t b[4];
} i8x4_t;
MX_TVNNI static inline __m512i dpbusd_b(__m512i acc, __m512i u, const int8_t *s) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*(const i8x4_t *)s));
  return acc;
}

MX_TVNNI static void gemv_vnni(const mx_cpu_qpacked_t *w, const float *x, const mx_qact_t *a,
                               float *y, int64_t p0, int64_t p1) {
  (void)x;
  const int64_t k = w->k, g = w->group;
  const int z = 1 << (w->bits - 1);
  const __m512i m4 = _mm512_set1_epi8(15);
  const __m512 zf = _mm512_set1_ps((float)z);
  for (int64_t p = p0; p < p1; p++) {
    __m512 yv = _mm512_setzero_ps();
    const uint8_t *qp = w->q + p * k * MX_QR * w->bits / 8;
    for (int64_t j = 0; j < w->groups; j++) {
      const int8_t *xg = a->xq + j * g;
      __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0;
      if (w->bits == 8) {
        const uint8_t *qg = qp + j * g * MX_QR;
        prefetch_group(qg, g * MX_QR);
        for (int64_t i = 0; i < g; i += 16) {  // 4 chunks of 4 k
          c0 = dpbusd_b(c0, _mm512_load_si512((const void *)(qg + i * MX_QR)), xg + i);
          c1 = dpbusd_b(c1, _mm512_load_si512((const void *)(qg + (i + 4) * MX_QR)), xg + i + 4);
          c2 = dpbusd_b(c2, _mm512_load_si512((const void *)(qg + (i + 8) * MX_QR)), xg + i + 8);
          c3 = dpbusd_b(c3, _mm512_load_si512((const void *)(qg + (i + 12) * MX_QR)), xg + i + 12);
        }
      } else {
        const uint8_t *qg = qp + j * (g / 2) * MX_QR;
        for (int64_t i = 0; i < g; i += 16) {  // 2 chunks of 8 k
          __m512i v0 = _mm512_load_si512((const void *)(qg + i / 2 * MX_QR));
          __m512i v1 = _mm512_load_si512((const void *)(qg + (i / 2 + 4) * MX_QR));
          prefetch_step(qg + i / 2 * MX_QR);
          c0 = dpbusd_b(c0, _mm512_and_si512(v0, m4), xg + i);
          c1 = dpbusd_b(c1, _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4), xg + i + 4);
          c2 = dpbusd_b(c2, _mm512_and_si512(v1, m4), xg + i + 8);
          c3 = dpbusd_b(c3, _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4), xg + i + 12);
        }
      }
      __m512i isum = _mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3));
      isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(z * a->xqsum[j]));
      int64_t pi = (p * w->groups + j) * MX_QR;
      __m512 s = load_params(w, w->s, pi);
      yv =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(s, _mm512_set1_ps(a->dx[j])), yv);
      if (w->b) {  // (b + z s) xsum
        __m512 c = _mm512_fmadd_ps(s, zf, load_params(w, w->b, pi));
        yv = _mm512_fmadd_ps(c, _mm512_set1_ps(a->xsum[j]), yv);
      }
    }
    _mm512_mask_storeu_ps(y + p * MX_QR, row_mask(w, p), yv);
  }
}

const mx_cpu_qkernels_t mx_cpu_qkernels_avx512_vnni = {
    .name = "avx512-vnni",
    .layout = MX_QL_VNNI,
    .prep = prep_vnni,
    .gemv = gemv_vnni,
    .dequant = dequant,
};

// ---- VNNI16 path: 16-bit activations as two int8 halves, two vpdpbusd per chunk ----
//
// xq = rint(x / dx) with dx = max|x| / 32639 (so xq in [-32639, 32639]) is split as
// xq = 256 h + l with l in [-128, 127] and h in [-128, 127]; sum u xq = 256 sum u h + sum u l,
// both exact int32 sums (|sum u xq| < 2^31 for groups of up to 128). The only error is the
// 16-bit rounding of x: 256 times smaller than the VNNI path's.

enum { VNNI16_RANGE = 127 * 256 + 127 };

MX_TVNNI static void prep_vnni16(const mx_cpu_qpacked_t *w, const float *x, mx_qact_t *a) {
  const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __m512i c128 = _mm512_set1_epi32(128), c255 = _mm512_set1_epi32(255);
  for (int64_t j = 0; j < w->groups; j++) {
    const float *xg = x + j * w->group;
    __m512 s = _mm512_loadu_ps(xg), mx = _mm512_and_ps(s, absmask);
    for (int64_t i = 16; i < w->group; i += 16) {
      __m512 v = _mm512_loadu_ps(xg + i);
      s = _mm512_add_ps(s, v);
      mx = _mm512_max_ps(mx, _mm512_and_ps(v, absmask));
    }
    a->xsum[j] = _mm512_reduce_add_ps(s);
    float amax = _mm512_reduce_max_ps(mx);
    a->dx[j] = amax / (float)VNNI16_RANGE;
    __m512 inv = _mm512_set1_ps(amax > 0.0f ? (float)VNNI16_RANGE / amax : 0.0f);
    __m512i lim = _mm512_set1_epi32(VNNI16_RANGE);
    __m512i qs = _mm512_setzero_si512();
    for (int64_t i = 0; i < w->group; i += 16) {
      __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xg + i), inv));
      q = _mm512_max_epi32(_mm512_min_epi32(q, lim), _mm512_sub_epi32(_mm512_setzero_si512(), lim));
      qs = _mm512_add_epi32(qs, q);
      __m512i lo = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(q, c128), c255), c128);
      __m512i hi = _mm512_srai_epi32(_mm512_sub_epi32(q, lo), 8);
      _mm_storeu_si128((__m128i *)(a->xl + j * w->group + i), _mm512_cvtepi32_epi8(lo));
      _mm_storeu_si128((__m128i *)(a->xq + j * w->group + i), _mm512_cvtepi32_epi8(hi));
    }
    a->xqsum[j] = _mm512_reduce_add_epi32(qs);
  }
}

// One group's contribution (kernels_q_vnni16.h) from the activation data of a.
MX_TVNNI static inline __attribute__((always_inline)) void vnni16_group_out(
    const mx_cpu_qpacked_t *w, const mx_qact_t *a, int64_t p, int64_t j, __m512i hs, __m512i ls,
    int z, bool f16, bool affine, __m512 *ys, __m512 *yb) {
  mx_q_vnni16_out(w, p, j, hs, ls, z, f16, affine, a->dx[j], a->xqsum[j], a->xsum[j], ys, yb);
}

// The 4-bit loop. Two chunks of 8 k per step (groups are multiples of 32, mx_cpu_qsrc_ok) into
// separate accumulators: with one chunk per step the four vpdpbusd chains bounded the loop. The
// high nibbles are masked in place, not shifted down (16 u instead of u: one shift less per
// chunk), and their sums divided by 16 at the end, exactly.
// Always inlined into instances for a constant group size and parameter format (vnni16_q4_for),
// so the step loop unrolls completely and the format tests leave the group loop: the loop with
// all of them at run time spent a fifth of its instructions on 4-iteration loop control, pointer
// reloads and those tests (docs/performance.md, "Kernel measurements").
MX_TVNNI static inline __attribute__((always_inline)) void vnni16_q4(const mx_cpu_qpacked_t *w,
                                                                     const mx_qact_t *a, float *y,
                                                                     int64_t p0, int64_t p1, int g,
                                                                     bool f16, bool affine) {
  const __m512i m4 = _mm512_set1_epi8(15);
  for (int64_t p = p0; p < p1; p++) {
    __m512 ys = _mm512_setzero_ps(), yb = ys;
    const uint8_t *qg = w->q + p * w->groups * g * (MX_QR / 2);
    for (int64_t j = 0; j < w->groups; j++, qg += g * (MX_QR / 2)) {
      const int8_t *xh = a->xq + j * g, *xl = a->xl + j * g;
      __m512i h0 = _mm512_setzero_si512(), h1 = h0, h2 = h0, h3 = h0;
      __m512i l0 = h0, l1 = h0, l2 = h0, l3 = h0;
      for (int i = 0; i < g; i += 16) {
        __m512i v = _mm512_load_si512((const void *)(qg + i / 2 * MX_QR));
        __m512i u = _mm512_load_si512((const void *)(qg + (i + 8) / 2 * MX_QR));
        prefetch_step(qg + i / 2 * MX_QR);
        __m512i vlo = _mm512_and_si512(v, m4), vhi = _mm512_andnot_si512(m4, v);
        __m512i ulo = _mm512_and_si512(u, m4), uhi = _mm512_andnot_si512(m4, u);
        h0 = dpbusd_b(h0, vlo, xh + i);
        l0 = dpbusd_b(l0, vlo, xl + i);
        h1 = dpbusd_b(h1, vhi, xh + i + 4);
        l1 = dpbusd_b(l1, vhi, xl + i + 4);
        h2 = dpbusd_b(h2, ulo, xh + i + 8);
        l2 = dpbusd_b(l2, ulo, xl + i + 8);
        h3 = dpbusd_b(h3, uhi, xh + i + 12);
        l3 = dpbusd_b(l3, uhi, xl + i + 12);
      }
      __m512i hs = _mm512_add_epi32(_mm512_add_epi32(h0, h2),
                                    _mm512_srai_epi32(_mm512_add_epi32(h1, h3), 4));
      __m512i ls = _mm512_add_epi32(_mm512_add_epi32(l0, l2),
                                    _mm512_srai_epi32(_mm512_add_epi32(l1, l3), 4));
      vnni16_group_out(w, a, p, j, hs, ls, 8, f16, affine, &ys, &yb);
    }
    _mm512_mask_storeu_ps(y + p * MX_QR, row_mask(w, p), _mm512_add_ps(ys, yb));
  }
}

#define MX_VNNI16_Q4(G, F16, AFF)                                                        \
  MX_TVNNI static void vnni16_q4_##G##_##F16##_##AFF(                                    \
      const mx_cpu_qpacked_t *w, const mx_qact_t *a, float *y, int64_t p0, int64_t p1) { \
    vnni16_q4(w, a, y, p0, p1, G, F16, AFF);                                             \
  }
#define MX_VNNI16_Q4_G(G) \
  MX_VNNI16_Q4(G, 0, 0)   \
  MX_VNNI16_Q4(G, 0, 1)   \
  MX_VNNI16_Q4(G, 1, 0)   \
  MX_VNNI16_Q4(G, 1, 1)
MX_VNNI16_Q4_G(32)
MX_VNNI16_Q4_G(64)
MX_VNNI16_Q4_G(128)

// Any other group size (a multiple of 32): the same loop with everything decided at run time.
MX_TVNNI static void vnni16_q4_any(const mx_cpu_qpacked_t *w, const mx_qact_t *a, float *y,
                                   int64_t p0, int64_t p1) {
  vnni16_q4(w, a, y, p0, p1, (int)w->group, w->f16, w->b != NULL);
}

typedef void (*vnni16_q4_fn)(const mx_cpu_qpacked_t *, const mx_qact_t *, float *, int64_t,
                             int64_t);
static vnni16_q4_fn vnni16_q4_for(const mx_cpu_qpacked_t *w) {
  static const vnni16_q4_fn fns[3][4] = {
      {vnni16_q4_32_0_0, vnni16_q4_32_0_1, vnni16_q4_32_1_0, vnni16_q4_32_1_1},
      {vnni16_q4_64_0_0, vnni16_q4_64_0_1, vnni16_q4_64_1_0, vnni16_q4_64_1_1},
      {vnni16_q4_128_0_0, vnni16_q4_128_0_1, vnni16_q4_128_1_0, vnni16_q4_128_1_1}};
  int gi = w->group == 32 ? 0 : w->group == 64 ? 1 : w->group == 128 ? 2 : -1;
  return gi < 0 ? vnni16_q4_any : fns[gi][(w->f16 ? 2 : 0) + (w->b ? 1 : 0)];
}

MX_TVNNI static void gemv_vnni16(const mx_cpu_qpacked_t *w, const float *x, const mx_qact_t *a,
                                 float *y, int64_t p0, int64_t p1) {
  (void)x;
  if (w->bits == 4) {
    vnni16_q4_for(w)(w, a, y, p0, p1);
    return;
  }
  const int64_t g = w->group;
  const bool f16 = w->f16, affine = w->b != NULL;
  for (int64_t p = p0; p < p1; p++) {
    __m512 ys = _mm512_setzero_ps(), yb = ys;
    const uint8_t *qp = w->q + p * w->k * MX_QR;
    for (int64_t j = 0; j < w->groups; j++) {
      const int8_t *xh = a->xq + j * g, *xl = a->xl + j * g;
      const uint8_t *qg = qp + j * g * MX_QR;
      __m512i h0 = _mm512_setzero_si512(), h1 = h0, l0 = h0, l1 = h0;
      for (int64_t i = 0; i < g; i += 8) {  // 2 chunks of 4 k
        __m512i v0 = _mm512_load_si512((const void *)(qg + i * MX_QR));
        __m512i v1 = _mm512_load_si512((const void *)(qg + (i + 4) * MX_QR));
        prefetch_step(qg + i * MX_QR);
        h0 = dpbusd_b(h0, v0, xh + i);
        l0 = dpbusd_b(l0, v0, xl + i);
        h1 = dpbusd_b(h1, v1, xh + i + 4);
        l1 = dpbusd_b(l1, v1, xl + i + 4);
      }
      vnni16_group_out(w, a, p, j, _mm512_add_epi32(h0, h1), _mm512_add_epi32(l0, l1), 128, f16,
                       affine, &ys, &yb);
    }
    _mm512_mask_storeu_ps(y + p * MX_QR, row_mask(w, p), _mm512_add_ps(ys, yb));
  }
}

// ---- VNNI16 prefill: the GEMV's arithmetic for QM rows of x per weight load ----
//
// The rows' activations are prepared by prep_vnni16 and every output goes through the same
// exact integer sums and the same float steps (vnni16_group_out, groups in order) as the GEMV:
// a prefill row equals its decode bit for bit. The rows are prepared once per call, a chunk of
// up to QCHUNK_BYTES / k of them at a time; panels go in blocks of about QGEMM_L2 bytes, which
// stay in L2 while the chunk's row blocks pass over them.
//
// The row count of a block (mb), the weight format and the parameter format are compile-time
// constants of each instance (vnni16_gemm_for): with mb known only at run time GCC kept the
// 8-16 integer accumulators in arrays on the stack, a store and a load around every vpdpbusd,
// whose store-to-load forwarding then bounded the loop (0.65x of the f32 GEMM on Zen 4;
// docs/performance.md, "Integer prefill").
enum {
  QM = 4,
  QGEMM_L2 = 256 * 1024,
  QCHUNK_BYTES = QM * MX_Q_MAX_K,    // activation bytes (high or low) per chunk: >= QM rows
  QCHUNK_PARAMS = QCHUNK_BYTES / 32  // (row, group) entries per chunk (groups are >= 32)
};

// A chunk's prepared rows: row i's high / low bytes at xq / xl + i * k, its group data at
// xsum / dx / xqsum + i * groups.
typedef struct {
  _Alignas(64) int8_t xq[QCHUNK_BYTES];
  _Alignas(64) int8_t xl[QCHUNK_BYTES];
  _Alignas(64) float xsum[QCHUNK_PARAMS];
  _Alignas(64) float dx[QCHUNK_PARAMS];
  _Alignas(64) int32_t xqsum[QCHUNK_PARAMS];
} qgemm_act_t;

// One panel for MB prepared rows: y[i * ldy + p * 16 + r].
MX_TVNNI static inline __attribute__((always_inline)) void vnni16_gemm_panel(
    const mx_cpu_qpacked_t *w, const mx_qact_t *a, const int MB, float *y, int64_t ldy, int64_t p,
    const bool q4, const bool f16, const bool affine) {
  const int64_t g = w->group;
  const int z = q4 ? 8 : 128;
  const __m512i m4 = _mm512_set1_epi8(15);
  __m512 ys[QM], yb[QM];
#pragma GCC unroll 4
  for (int i = 0; i < MB; i++) ys[i] = yb[i] = _mm512_setzero_ps();
  const uint8_t *qp = w->q + p * w->k * MX_QR * (q4 ? 4 : 8) / 8;
  for (int64_t j = 0; j < w->groups; j++) {
    __m512i h[QM], l[QM], hh[QM], lh[QM];  // hh / lh: 4-bit high nibbles (16 u, divided below)
#pragma GCC unroll 4
    for (int i = 0; i < MB; i++) h[i] = l[i] = hh[i] = lh[i] = _mm512_setzero_si512();
    if (q4) {
      const uint8_t *qg = qp + j * (g / 2) * MX_QR;
      for (int64_t c = 0; c < g; c += 8) {  // one chunk of 8 k: low nibbles k..k+3, high k+4..
        __m512i v = _mm512_load_si512((const void *)(qg + c / 2 * MX_QR));
        __m512i vlo = _mm512_and_si512(v, m4), vhi = _mm512_andnot_si512(m4, v);
#pragma GCC unroll 4
        for (int i = 0; i < MB; i++) {
          const int8_t *xh = a[i].xq + j * g + c, *xl = a[i].xl + j * g + c;
          h[i] = dpbusd_b(h[i], vlo, xh);
          l[i] = dpbusd_b(l[i], vlo, xl);
          hh[i] = dpbusd_b(hh[i], vhi, xh + 4);
          lh[i] = dpbusd_b(lh[i], vhi, xl + 4);
        }
      }
    } else {
      const uint8_t *qg = qp + j * g * MX_QR;
      for (int64_t c = 0; c < g; c += 8) {  // two chunks of 4 k (groups are multiples of 8)
        __m512i v = _mm512_load_si512((const void *)(qg + c * MX_QR));
        __m512i u = _mm512_load_si512((const void *)(qg + (c + 4) * MX_QR));
#pragma GCC unroll 4
        for (int i = 0; i < MB; i++) {
          const int8_t *xh = a[i].xq + j * g + c, *xl = a[i].xl + j * g + c;
          h[i] = dpbusd_b(h[i], v, xh);
          l[i] = dpbusd_b(l[i], v, xl);
          hh[i] = dpbusd_b(hh[i], u, xh + 4);
          lh[i] = dpbusd_b(lh[i], u, xl + 4);
        }
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < MB; i++) {
      __m512i hs, ls;
      if (q4) {
        hs = _mm512_add_epi32(h[i], _mm512_srai_epi32(hh[i], 4));
        ls = _mm512_add_epi32(l[i], _mm512_srai_epi32(lh[i], 4));
      } else {
        hs = _mm512_add_epi32(h[i], hh[i]);
        ls = _mm512_add_epi32(l[i], lh[i]);
      }
      vnni16_group_out(w, &a[i], p, j, hs, ls, z, f16, affine, &ys[i], &yb[i]);
    }
  }
  const __mmask16 mask = row_mask(w, p);
#pragma GCC unroll 4
  for (int i = 0; i < MB; i++)
    _mm512_mask_storeu_ps(y + i * ldy + p * MX_QR, mask, _mm512_add_ps(ys[i], yb[i]));
}

MX_TVNNI static inline __attribute__((always_inline)) void vnni16_gemm(
    const mx_cpu_qpacked_t *w, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t m0,
    int64_t m1, int64_t p0, int64_t p1, const bool q4, const bool f16, const bool affine) {
  static _Thread_local qgemm_act_t act_tls;  // 304 KiB: off the (pool threads') stacks
  // Its address through an opaque register: GCC otherwise recomputed it in the group loop (the
  // row pointers below derive from it), a __tls_get_addr call per group and panel around which
  // every zmm was spilled.
  qgemm_act_t *actp = &act_tls;
  __asm__("" : "+r"(actp));
  qgemm_act_t *const restrict act = actp;
  const int64_t k = w->k, G = w->groups;
  const int64_t chunk = QCHUNK_BYTES / k / QM * QM;  // rows per chunk (>= QM: k <= MX_Q_MAX_K)
  int64_t panel_bytes = k * MX_QR * w->bits / 8;
  int64_t pb = QGEMM_L2 / (panel_bytes > 0 ? panel_bytes : 1);
  if (pb < 1) pb = 1;
  for (int64_t c0 = m0; c0 < m1; c0 += chunk) {
    int64_t rows = m1 - c0 < chunk ? m1 - c0 : chunk;
    for (int64_t i = 0; i < rows; i++) {
      mx_qact_t ai = {act->xsum + i * G, act->xq + i * k, act->xl + i * k, act->dx + i * G,
                      act->xqsum + i * G};
      prep_vnni16(w, x + (c0 + i) * ldx, &ai);
    }
    for (int64_t pa = p0; pa < p1; pa += pb) {
      int64_t pz = pa + pb < p1 ? pa + pb : p1;
      for (int64_t r0 = 0; r0 < rows; r0 += QM) {
        int mb = rows - r0 < QM ? (int)(rows - r0) : QM;
        mx_qact_t a[QM];
        for (int i = 0; i < QM; i++) {  // rows past mb: unused (the instance for mb reads none)
          int64_t r = r0 + (i < mb ? i : 0);
          a[i] = (mx_qact_t){act->xsum + r * G, act->xq + r * k, act->xl + r * k, act->dx + r * G,
                             act->xqsum + r * G};
        }
        float *yi = y + (c0 + r0) * ldy;
        for (int64_t p = pa; p < pz; p++) {
          switch (mb) {
            case QM:
              vnni16_gemm_panel(w, a, QM, yi, ldy, p, q4, f16, affine);
              break;
            case 3:
              vnni16_gemm_panel(w, a, 3, yi, ldy, p, q4, f16, affine);
              break;
            case 2:
              vnni16_gemm_panel(w, a, 2, yi, ldy, p, q4, f16, affine);
              break;
            default:
              vnni16_gemm_panel(w, a, 1, yi, ldy, p, q4, f16, affine);
              break;
          }
        }
      }
    }
  }
}

#define MX_VNNI16_GEMM(Q4, F16, AFF)                                                             \
  MX_TVNNI static void vnni16_gemm_##Q4##_##F16##_##AFF(                                         \
      const mx_cpu_qpacked_t *w, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t m0, \
      int64_t m1, int64_t p0, int64_t p1) {                                                      \
    vnni16_gemm(w, x, ldx, y, ldy, m0, m1, p0, p1, Q4, F16, AFF);                                \
  }
MX_VNNI16_GEMM(0, 0, 0)
MX_VNNI16_GEMM(0, 0, 1)
MX_VNNI16_GEMM(0, 1, 0)
MX_VNNI16_GEMM(0, 1, 1)
MX_VNNI16_GEMM(1, 0, 0)
MX_VNNI16_GEMM(1, 0, 1)
MX_VNNI16_GEMM(1, 1, 0)
MX_VNNI16_GEMM(1, 1, 1)

MX_TVNNI static void gemm_vnni16(const mx_cpu_qpacked_t *w, const float *x, int64_t ldx, float *y,
                                 int64_t ldy, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
  typedef void (*fn_t)(const mx_cpu_qpacked_t *, const float *, int64_t, float *, int64_t, int64_t,
                       int64_t, int64_t, int64_t);
  static const fn_t fns[8] = {vnni16_gemm_0_0_0, vnni16_gemm_0_0_1, vnni16_gemm_0_1_0,
                              vnni16_gemm_0_1_1, vnni16_gemm_1_0_0, vnni16_gemm_1_0_1,
                              vnni16_gemm_1_1_0, vnni16_gemm_1_1_1};
  fns[(w->bits == 4 ? 4 : 0) + (w->f16 ? 2 : 0) + (w->b ? 1 : 0)](w, x, ldx, y, ldy, m0, m1, p0,
                                                                  p1);
}

const mx_cpu_qkernels_t mx_cpu_qkernels_avx512_vnni16 = {
    .name = "avx512-vnni16",
    .layout = MX_QL_VNNI,
    .prep = prep_vnni16,
    .gemv = gemv_vnni16,
    .dequant = dequant,
    .gemm = gemm_vnni16,
    .gemm_split_rows = true,
};

const mx_cpu_qkernels_t mx_cpu_qkernels_avx512_vnni16_amx = {
    .name = "avx512-vnni16+amx",
    .layout = MX_QL_VNNI,
    .prep = prep_vnni16,
    .gemv = gemv_vnni16,
    .dequant = dequant,
    .gemm = mx_cpu_qgemm_amx,
};

#endif  // __x86_64__
