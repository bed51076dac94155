// bf16 / f16 matmul and convert kernels (include/mlxcel/cpu_lowp.h), every variant this machine
// runs, against a double-precision reference on awkward shapes (k odd, k across the 256 pass
// boundary, partial panels and row blocks), plus: thread splits are bit-identical, the
// emulated bf16 variants follow VDPBF16PS's order, and every convert matches src/base/half.h.
#include <stdlib.h>

#include "base/half.h"
#include "mlxcel/cpu_lowp.h"
#include "mx_test.h"

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static double urand(void) {  // [-1, 1)
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) / 4503599627370496.0 - 1.0;
}

static uint16_t enc(mx_elem_type_t et, float v) {
  return et == MX_ELEM_BF16 ? mx_f32_to_bf16(v) : mx_f32_to_f16(v);
}
static double dec(mx_elem_type_t et, uint16_t h) {
  return et == MX_ELEM_BF16 ? mx_bf16_to_f32(h) : mx_f16_to_f32(h);
}

static uint16_t *rand_half(mx_elem_type_t et, int64_t n, double scale) {
  uint16_t *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = enc(et, (float)(urand() * scale));
  return v;
}

// Checks y[m][n] (row stride ldy) against the exact sum, within the f32 forward error bound.
static int check_result(mx_elem_type_t et, const uint16_t *w, const uint16_t *x, const float *y,
                        int64_t m, int64_t n, int64_t k, int64_t ldy, double *worst) {
  int bad = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t r = 0; r < n; r++) {
      double s = 0, a = 0;
      for (int64_t kk = 0; kk < k; kk++) {
        double p = dec(et, w[r * k + kk]) * dec(et, x[i * k + kk]);
        s += p;
        a += fabs(p);
      }
      double err = fabs((double)y[i * ldy + r] - s), tol = 4.0 * (double)(k + 2) * 0x1p-24 * a;
      if (err > tol) bad++;
      if (a > 0 && err / a > *worst) *worst = err / a;
    }
  return bad;
}

static void test_shapes(const mx_cpu_lowp_kernels_t *kt) {
  mx_elem_type_t et = mx_cpu_lowp_elem(kt);
  static const int64_t ns[] = {1, 7, 31, 32, 33, 100};
  static const int64_t ks[] = {1, 2, 3, 15, 16, 17, 255, 256, 257, 513};
  static const int64_t ms[] = {2, 5, 12, 13, 29};
  int bad_v = 0, bad_m = 0, bad_split = 0, cases = 0;
  double worst = 0;
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++) {
      int64_t n = ns[a], k = ks[b];
      uint16_t *w = rand_half(et, n * k, 1.0);
      mx_cpu_packed_lowp_t *pk = NULL;
      CHECK_OK(mx_cpu_pack_lowp(kt, NULL, w, k, n, k, &pk));
      if (!pk) {
        free(w);
        continue;
      }
      // GEMV, whole and split over 2 and 3 threads.
      uint16_t *x = rand_half(et, 29 * k, 2.0);
      float *y = malloc(sizeof(float) * (size_t)(29 * n + 8));
      float *y2 = malloc(sizeof(float) * (size_t)(29 * n + 8));
      mx_cpu_gemv_packed_lowp(pk, x, y, 0, 1);
      bad_v += check_result(et, w, x, y, 1, n, k, n, &worst);
      for (int nth = 2; nth <= 3; nth++) {
        for (int t = 0; t < nth; t++) mx_cpu_gemv_packed_lowp(pk, x, y2, t, nth);
        bad_split += memcmp(y, y2, sizeof(float) * (size_t)n) != 0;
        // Work sharing: the threads take turns claiming chunks from one counter.
        mx_cpu_work_t work;
        mx_cpu_work_reset(&work);
        memset(y2, 0xff, sizeof(float) * (size_t)n);
        for (int t = 0; t < nth; t++) mx_cpu_gemv_packed_lowp_dyn(pk, x, y2, &work, t, nth);
        bad_split += memcmp(y, y2, sizeof(float) * (size_t)n) != 0;
      }
      // GEMM (row stride n + 3 to catch ldy mistakes).
      for (size_t c = 0; c < sizeof ms / sizeof ms[0]; c++) {
        int64_t m = ms[c], ldy = n + 3;
        float *ym = malloc(sizeof(float) * (size_t)(m * ldy));
        float *ym2 = malloc(sizeof(float) * (size_t)(m * ldy));
        mx_cpu_gemm_packed_lowp(pk, x, k, ym, ldy, m, 0, 1);
        bad_m += check_result(et, w, x, ym, m, n, k, ldy, &worst);
        for (int nth = 2; nth <= 5; nth += 3) {
          for (int t = 0; t < nth; t++) mx_cpu_gemm_packed_lowp(pk, x, k, ym2, ldy, m, t, nth);
          for (int64_t i = 0; i < m; i++)
            bad_split += memcmp(ym + i * ldy, ym2 + i * ldy, sizeof(float) * (size_t)n) != 0;
        }
        free(ym);
        free(ym2);
        cases++;
      }
      free(x);
      free(y);
      free(y2);
      free(w);
      mx_cpu_packed_lowp_destroy(pk);
    }
  printf("%s %s: %d GEMM cases, worst |err| / sum|w x| = %.3g\n", mx_elem_name(et),
         mx_cpu_lowp_name(kt), cases, worst);
  CHECK_MSG(bad_v == 0, "%s %s: %d GEMV outputs beyond the bound", mx_elem_name(et),
            mx_cpu_lowp_name(kt), bad_v);
  CHECK_MSG(bad_m == 0, "%s %s: %d GEMM outputs beyond the bound", mx_elem_name(et),
            mx_cpu_lowp_name(kt), bad_m);
  CHECK_MSG(bad_split == 0, "%s %s: %d thread splits differ", mx_elem_name(et),
            mx_cpu_lowp_name(kt), bad_split);
}

// The emulated AVX-512 bf16 kernels add a pair's products in VDPBF16PS's order, so on normal
// values (no subnormal product for VDPBF16PS to flush) the two agree bit for bit.
static void test_bf16_emulation(void) {
  const mx_cpu_lowp_kernels_t *dp = mx_cpu_lowp_get(MX_ELEM_BF16, MX_CPU_LOWP_AVX512BF16);
  const mx_cpu_lowp_kernels_t *em = mx_cpu_lowp_get(MX_ELEM_BF16, MX_CPU_LOWP_AVX512);
  if (!dp || !em) {
    printf("note: no AVX512_BF16 on this machine\n");
    return;
  }
  int64_t n = 70, k = 301, m = 17;
  uint16_t *w = rand_half(MX_ELEM_BF16, n * k, 1.0), *x = rand_half(MX_ELEM_BF16, m * k, 3.0);
  mx_cpu_packed_lowp_t *pd = NULL, *pe = NULL;
  CHECK_OK(mx_cpu_pack_lowp(dp, NULL, w, k, n, k, &pd));
  CHECK_OK(mx_cpu_pack_lowp(em, NULL, w, k, n, k, &pe));
  float *a = malloc(sizeof(float) * (size_t)(m * n)), *b = malloc(sizeof(float) * (size_t)(m * n));
  if (pd && pe) {
    mx_cpu_gemv_packed_lowp(pd, x, a, 0, 1);
    mx_cpu_gemv_packed_lowp(pe, x, b, 0, 1);
    CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)n) == 0, "GEMV: VDPBF16PS vs emulation");
    mx_cpu_gemm_packed_lowp(pd, x, k, a, n, m, 0, 1);
    mx_cpu_gemm_packed_lowp(pe, x, k, b, n, m, 0, 1);
    CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)(m * n)) == 0, "GEMM: VDPBF16PS vs emulation");
  }
  free(a);
  free(b);
  free(w);
  free(x);
  mx_cpu_packed_lowp_destroy(pd);
  mx_cpu_packed_lowp_destroy(pe);
}

// Through a real pool: the whole-pool wrappers give the single-thread result.
static void test_pool(void) {
  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(3, &pool));
  const mx_elem_type_t ets[2] = {MX_ELEM_BF16, MX_ELEM_F16};
  for (int e = 0; e < 2 && pool; e++) {
    const mx_cpu_lowp_kernels_t *kt = mx_cpu_lowp_best(ets[e]);
    int64_t n = 333, k = 130, m = 40;
    uint16_t *w = rand_half(ets[e], n * k, 1.0), *x = rand_half(ets[e], m * k, 1.0);
    mx_cpu_packed_lowp_t *p1 = NULL, *p2 = NULL;
    CHECK_OK(mx_cpu_pack_lowp(kt, NULL, w, k, n, k, &p1));
    CHECK_OK(mx_cpu_pack_lowp(kt, pool, w, k, n, k, &p2));
    if (p1 && p2) {
      CHECK(memcmp(p1->data, p2->data, mx_cpu_packed_lowp_bytes(p1)) == 0);
      float *a = malloc(sizeof(float) * (size_t)(m * n)),
            *b = malloc(sizeof(float) * (size_t)(m * n));
      mx_cpu_gemv_packed_lowp(p1, x, a, 0, 1);
      mx_cpu_gemv_packed_lowp_run(pool, p2, x, b);
      CHECK(memcmp(a, b, sizeof(float) * (size_t)n) == 0);
      mx_cpu_gemm_packed_lowp(p1, x, k, a, n, m, 0, 1);
      mx_cpu_gemm_packed_lowp_run(pool, p2, x, k, b, n, m);
      CHECK(memcmp(a, b, sizeof(float) * (size_t)(m * n)) == 0);
      free(a);
      free(b);
    }
    mx_cpu_packed_lowp_destroy(p1);
    mx_cpu_packed_lowp_destroy(p2);
    free(w);
    free(x);
  }
  mx_cpu_pool_destroy(pool);
}

static bool same_bits_or_nan(mx_elem_type_t et, uint32_t a, uint32_t b) {
  if (et == MX_ELEM_F32) {
    float fa = mx_f32_from_bits(a), fb = mx_f32_from_bits(b);
    return (isnan(fa) && isnan(fb)) || a == b;
  }
  double da = dec(et, (uint16_t)a), db = dec(et, (uint16_t)b);
  return (isnan(da) && isnan(db)) || a == b;
}

static void test_convert(void) {
  enum { N = 70001 };
  float *f = malloc(sizeof(float) * N);
  uint16_t *h = malloc(sizeof(uint16_t) * N), *h2 = malloc(sizeof(uint16_t) * N);
  float *f2 = malloc(sizeof(float) * N);
  for (int i = 0; i < N; i++) {
    uint32_t u;
    if (i < 65536) {  // every pattern of the upper half, random low bits (ties included)
      u = (uint32_t)i << 16 | (i % 7 == 0 ? 0x8000u : (uint32_t)(urand() * 32768 + 32768));
    } else {
      u = (uint32_t)(urand() * 2147483647.0 + 2147483648.0);
    }
    f[i] = mx_f32_from_bits(u);
  }
  const mx_elem_type_t ets[2] = {MX_ELEM_BF16, MX_ELEM_F16};
  for (int e = 0; e < 2; e++) {
    mx_elem_type_t et = ets[e];
    int bad = 0;
    for (int nth = 1; nth <= 3; nth++) {
      for (int t = 0; t < nth; t++) CHECK(mx_cpu_convert(f, MX_ELEM_F32, h, et, N, t, nth));
      for (int i = 0; i < N; i++) bad += !same_bits_or_nan(et, h[i], enc(et, f[i]));
      for (int i = 0; i < N; i++) h2[i] = (uint16_t)(i * 40503u);
      for (int t = 0; t < nth; t++) CHECK(mx_cpu_convert(h2, et, f2, MX_ELEM_F32, N, t, nth));
      for (int i = 0; i < N; i++) {
        float want = (float)dec(et, h2[i]);
        bad += !same_bits_or_nan(MX_ELEM_F32, mx_f32_bits(f2[i]), mx_f32_bits(want));
      }
    }
    CHECK_MSG(bad == 0, "convert f32 <-> %s: %d elements differ", mx_elem_name(et), bad);
  }
  CHECK(!mx_cpu_convert(f, MX_ELEM_F32, h, MX_ELEM_I32, N, 0, 1));
  CHECK(!mx_cpu_convert(h, MX_ELEM_F16, h2, MX_ELEM_BF16, N, 0, 1));
  free(f);
  free(f2);
  free(h);
  free(h2);
}

static void test_errors(void) {
  const mx_cpu_lowp_kernels_t *kt = mx_cpu_lowp_best(MX_ELEM_BF16);
  mx_cpu_packed_lowp_t *p = NULL;
  uint16_t w[4] = {0};
  CHECK(mx_cpu_pack_lowp(kt, NULL, w, 1, 2, 2, &p) == MX_ERR_INVALID_ARG && p == NULL);
  CHECK(mx_cpu_pack_lowp(NULL, NULL, w, 2, 2, 2, &p) == MX_ERR_INVALID_ARG);
  CHECK(mx_cpu_lowp_get(MX_ELEM_F16, MX_CPU_LOWP_AVX512BF16) == NULL);
  CHECK(mx_cpu_lowp_get(MX_ELEM_F32, MX_CPU_LOWP_SCALAR) == NULL);
  CHECK(mx_cpu_lowp_best(MX_ELEM_F16) != NULL);
  mx_cpu_packed_lowp_destroy(NULL);
}

int main(void) {
  const mx_elem_type_t ets[2] = {MX_ELEM_BF16, MX_ELEM_F16};
  for (int e = 0; e < 2; e++)
    for (int isa = 0; isa < MX_CPU_LOWP_ISA_COUNT; isa++) {
      const mx_cpu_lowp_kernels_t *kt = mx_cpu_lowp_get(ets[e], (mx_cpu_lowp_isa_t)isa);
      if (kt) test_shapes(kt);
    }
  test_bf16_emulation();
  test_pool();
  test_convert();
  test_errors();
  return mx_test_finish();
}
