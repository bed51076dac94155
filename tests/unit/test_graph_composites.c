// The composite decompositions against plain C references in double on random inputs,
// covering the options the Llama fixture does not: interleaved and partial RoPE, sliding
// window, attention softcap, B = 2 with different pos0, GQA 3:1, RMSNorm weight offset,
// gelu_tanh, f16 / bf16 operands, and the dedupe of decomposition functions.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph_internal.h"
#include "mx_test.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {  // [-1, 1)
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) / 4503599627370496.0 - 1.0;
}

static mx_tensor_t rand_tensor(mx_elem_type_t et, int32_t rank, const int64_t *dims, double scale) {
  mx_type_t t = mx_type_tensor(et, rank, dims);
  mx_tensor_t x;
  mx_tensor_alloc(&x, &t);
  for (int64_t i = 0; i < mx_type_numel(&t); i++) mx_tensor_set_f64(&x, i, scale * urand());
  return x;
}

typedef mx_status_t (*emit_fn)(mx_comp_ctx_t *c, mx_builder_t *b, const int32_t *args,
                               const void *p, int32_t *out);

// Builds @main(args) = one composite (twice, to check the dedupe), runs it, returns the result.
static mx_tensor_t run1(const mx_tensor_t *args, int32_t n, emit_fn emit, const void *p,
                        const char *decomp) {
  mx_tensor_t res;
  memset(&res, 0, sizeof res);
  mx_module_t *m = mx_module_create(NULL);
  mx_type_t types[8];
  for (int32_t i = 0; i < n; i++) types[i] = args[i].type;
  mx_func_t *f;
  mx_builder_t b;
  int32_t ids[8], out1 = -1, out2 = -1;
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, m);
  CHECK_OK(mx_build_func(m, "main", false, types, n, &f, &b, ids));
  CHECK_OK(emit(&cc, &b, ids, p, &out1));
  CHECK_OK(emit(&cc, &b, ids, p, &out2));
  CHECK(cc.n == 1);  // one decomposition for both call sites
  mx_comp_ctx_free(&cc);
  CHECK_OK(mx_build_return(&b, &out1, 1));
  CHECK_OK(mx_hlo_verify_module(m));
  CHECK(m->n_funcs == 2 && mx_module_find_func(m, decomp) != NULL);
  CHECK_OK(mx_interp_run(m, f, args, n, &res, NULL));
  mx_module_destroy(m);
  return res;
}

// ---- rope ----

typedef struct rope_p {
  const char *style;
  int32_t R;
  double scale;
} rope_p_t;

static mx_status_t emit_rope(mx_comp_ctx_t *c, mx_builder_t *b, const int32_t *a, const void *p,
                             int32_t *out) {
  const rope_p_t *r = p;
  return mx_comp_rope(c, b, a[0], a[1], a[2], r->style, r->R, r->scale, out);
}

// scale: YaRN / LongRoPE's attention factor on cos and sin (not on the pass-through dims).
static void test_rope(const char *style, int32_t R, double scale) {
  int64_t B = 2, T = 3, N = 2, D = 8;
  int64_t xd[4] = {B, T, N, D}, pd[2] = {B, T}, fd[1] = {R / 2};
  mx_tensor_t a[3];
  a[0] = rand_tensor(MX_ELEM_F32, 4, xd, 1.0);
  mx_type_t pt = mx_type_tensor(MX_ELEM_I32, 2, pd);
  mx_tensor_alloc(&a[1], &pt);
  for (int64_t i = 0; i < B * T; i++) mx_tensor_set_i64(&a[1], i, 5 * i + 3);
  float *inv = NULL;
  CHECK_OK(mx_rope_inv_freq(10000.0, R, NULL, &inv));
  mx_type_t ft = mx_type_tensor(MX_ELEM_F32, 1, fd);
  mx_tensor_alloc(&a[2], &ft);
  memcpy(a[2].data, inv, sizeof(float) * (size_t)(R / 2));
  rope_p_t p = {style, R, scale};
  mx_tensor_t y = run1(a, 3, emit_rope, &p, "mx_rope_0");
  double md = 0;
  bool inter = strcmp(style, "interleaved") == 0;
  const float *x = (const float *)a[0].data;
  for (int64_t bt = 0; bt < B * T && y.data; bt++) {
    double pos = (double)(5 * bt + 3);
    for (int64_t n = 0; n < N; n++) {
      const float *xv = x + (bt * N + n) * D;
      const float *yv = (const float *)y.data + (bt * N + n) * D;
      double want[8];
      for (int64_t d = 0; d < D; d++) want[d] = xv[d];  // dims >= R pass through
      for (int32_t i = 0; i < R / 2; i++) {
        double ang = (double)(float)(pos * (double)inv[i]);
        int32_t i0 = inter ? 2 * i : i, i1 = inter ? 2 * i + 1 : i + R / 2;
        double c = cos(ang) * scale, s = sin(ang) * scale;
        want[i0] = xv[i0] * c - xv[i1] * s;
        want[i1] = xv[i1] * c + xv[i0] * s;
      }
      for (int64_t d = 0; d < D; d++) md = fmax(md, fabs(want[d] - yv[d]));
    }
  }
  CHECK_MSG(y.data && md < 1e-5, "rope %s R=%d scale %g: max diff %g", style, R, scale, md);
  free(inv);
  for (int32_t i = 0; i < 3; i++) mx_tensor_free(&a[i]);
  mx_tensor_free(&y);
}

// ---- attention ----

typedef struct attn_p {
  double scale, softcap;
  int64_t window;
} attn_p_t;

static mx_status_t emit_attn(mx_comp_ctx_t *c, mx_builder_t *b, const int32_t *a, const void *p,
                             int32_t *out) {
  const attn_p_t *q = p;
  return mx_comp_attention(c, b, a[0], a[1], a[2], a[3], q->scale, q->window, q->softcap, out);
}

static void test_attention(int64_t window, double softcap, mx_elem_type_t kv_et) {
  int64_t B = 2, T = 3, Hq = 6, Hkv = 2, S = 10, D = 4, G = Hq / Hkv;
  int64_t qd[4] = {B, T, Hq, D}, kd[4] = {B, Hkv, S, D}, pd[1] = {B};
  mx_tensor_t a[4];
  a[0] = rand_tensor(MX_ELEM_F32, 4, qd, 2.0);
  a[1] = rand_tensor(kv_et, 4, kd, 2.0);
  a[2] = rand_tensor(kv_et, 4, kd, 1.0);
  mx_type_t pt = mx_type_tensor(MX_ELEM_I32, 1, pd);
  mx_tensor_alloc(&a[3], &pt);
  int32_t pos0[2] = {0, 5};
  memcpy(a[3].data, pos0, sizeof pos0);
  attn_p_t p = {0.5, softcap, window};
  mx_tensor_t y = run1(a, 4, emit_attn, &p, "mx_attention_0");
  double md = 0;
  for (int64_t b = 0; b < B && y.data; b++) {
    for (int64_t t = 0; t < T; t++) {
      int64_t qp = pos0[b] + t;
      for (int64_t h = 0; h < Hq; h++) {
        int64_t kvh = h / G;
        double sc[16], mx = -INFINITY, sum = 0;
        for (int64_t s = 0; s < S; s++) {
          bool vis = s <= qp && (window == 0 || s > qp - window);
          double dot = 0;
          for (int64_t d = 0; d < D; d++) {
            dot += mx_tensor_get_f64(&a[0], ((b * T + t) * Hq + h) * D + d) *
                   mx_tensor_get_f64(&a[1], ((b * Hkv + kvh) * S + s) * D + d);
          }
          dot *= p.scale;
          if (softcap > 0) dot = tanh(dot / softcap) * softcap;
          sc[s] = vis ? dot : -INFINITY;
          mx = fmax(mx, sc[s]);
        }
        for (int64_t s = 0; s < S; s++) sum += (sc[s] = exp(sc[s] - mx));
        for (int64_t d = 0; d < D; d++) {
          double o = 0;
          for (int64_t s = 0; s < S; s++)
            o += sc[s] / sum * mx_tensor_get_f64(&a[2], ((b * Hkv + kvh) * S + s) * D + d);
          double got = mx_tensor_get_f64(&y, ((b * T + t) * Hq + h) * D + d);
          md = fmax(md, fabs(got - o));
        }
      }
    }
  }
  CHECK_MSG(y.data && md < 2e-5, "attention window %lld softcap %g %s: max diff %g",
            (long long)window, softcap, mx_elem_name(kv_et), md);
  for (int32_t i = 0; i < 4; i++) mx_tensor_free(&a[i]);
  mx_tensor_free(&y);
}

// ---- rms_norm ----

static mx_status_t emit_norm(mx_comp_ctx_t *c, mx_builder_t *b, const int32_t *a, const void *p,
                             int32_t *out) {
  return mx_comp_rms_norm(c, b, a[0], a[1], 1e-6, *(const double *)p, out);
}

static void test_rms_norm(double offset, mx_elem_type_t w_et) {
  int64_t xd[3] = {2, 3, 16}, wd[1] = {16};
  mx_tensor_t a[2] = {rand_tensor(MX_ELEM_F32, 3, xd, 3.0), rand_tensor(w_et, 1, wd, 1.0)};
  mx_tensor_t y = run1(a, 2, emit_norm, &offset, "mx_rms_norm_0");
  double md = 0;
  for (int64_t r = 0; r < 6 && y.data; r++) {
    double ss = 0;
    for (int64_t h = 0; h < 16; h++) ss += pow(mx_tensor_get_f64(&a[0], r * 16 + h), 2);
    double inv = 1.0 / sqrt(ss / 16 + 1e-6);
    for (int64_t h = 0; h < 16; h++) {
      double want =
          mx_tensor_get_f64(&a[0], r * 16 + h) * inv * (offset + mx_tensor_get_f64(&a[1], h));
      md = fmax(md, fabs(want - mx_tensor_get_f64(&y, r * 16 + h)));
    }
  }
  CHECK_MSG(y.data && md < 1e-5, "rms_norm offset %g %s: max diff %g", offset, mx_elem_name(w_et),
            md);
  mx_tensor_free(&a[0]);
  mx_tensor_free(&a[1]);
  mx_tensor_free(&y);
}

// ---- gated_mlp ----

static mx_status_t emit_mlp(mx_comp_ctx_t *c, mx_builder_t *b, const int32_t *a, const void *p,
                            int32_t *out) {
  return mx_comp_gated_mlp(c, b, a[0], a[1], a[2], a[3], (const char *)p, out);
}

// v rounded to et (RNE), as the graph's convert; identity for f32.
static double round_to(mx_elem_type_t et, double v) {
  if (et == MX_ELEM_F32) return (float)v;
  return mx_float_decode(et, mx_float_encode(et, (float)v));
}

// Half an ulp of v in et (the most one rounding moves it).
static double half_ulp(mx_elem_type_t et, double v) {
  int mant = et == MX_ELEM_BF16 ? 8 : et == MX_ELEM_F16 ? 11 : 24;
  int e;
  frexp(v, &e);
  return v == 0 ? 0 : ldexp(1.0, e - mant - 1);
}

// With f16 / bf16 weights the linears multiply their input rounded to the weight type
// (mx_g_linear): the reference rounds x and the hidden activation the same way. The hidden
// activation is computed in f32 by the graph and in double here, so its rounding may land on the
// other side of a boundary: each such flip moves the output by at most one ulp times the weight,
// which the bound allows for.
static void test_mlp(const char *act, mx_elem_type_t w_et) {
  int64_t H = 8, F = 12, xd[3] = {1, 2, H}, gd[2] = {F, H}, dd[2] = {H, F};
  mx_tensor_t a[4] = {rand_tensor(MX_ELEM_F32, 3, xd, 2.0), rand_tensor(w_et, 2, gd, 1.0),
                      rand_tensor(w_et, 2, gd, 1.0), rand_tensor(w_et, 2, dd, 1.0)};
  mx_tensor_t y = run1(a, 4, emit_mlp, act, "mx_gated_mlp_0");
  bool gelu = strcmp(act, "gelu_tanh") == 0;
  double md = 0;
  for (int64_t t = 0; t < 2 && y.data; t++) {
    double hbuf[12], hflip[12];
    for (int64_t f = 0; f < F; f++) {
      double g = 0, u = 0;
      for (int64_t h = 0; h < H; h++) {
        double x = round_to(w_et, mx_tensor_get_f64(&a[0], t * H + h));
        g += x * mx_tensor_get_f64(&a[1], f * H + h);
        u += x * mx_tensor_get_f64(&a[2], f * H + h);
      }
      double act_g = gelu ? 0.5 * g * (1 + tanh(sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)))
                          : g / (1 + exp(-g));
      hflip[f] = w_et == MX_ELEM_F32 ? 0 : 2 * half_ulp(w_et, act_g * u);
      hbuf[f] = round_to(w_et, act_g * u);
    }
    for (int64_t h = 0; h < H; h++) {
      double o = 0, allow = 0;
      for (int64_t f = 0; f < F; f++) {
        o += hbuf[f] * mx_tensor_get_f64(&a[3], h * F + f);
        allow += hflip[f] * fabs(mx_tensor_get_f64(&a[3], h * F + f));
      }
      md = fmax(md, fabs(o - mx_tensor_get_f64(&y, t * H + h)) - allow);
    }
  }
  CHECK_MSG(y.data && md < 2e-5, "gated_mlp %s %s: max diff %g", act, mx_elem_name(w_et), md);
  for (int32_t i = 0; i < 4; i++) mx_tensor_free(&a[i]);
  mx_tensor_free(&y);
}

// ---- inv_freq tables ----

static void test_inv_freq(void) {
  float *f = NULL;
  // llama3 (the fixture's values): theta 5e5, dim 16, factor 8, low 1, high 4, original 64:
  // frequency 0 kept, 1 interpolated, 2..7 divided by 8.
  mx_rope_scaling_t sc = {.kind = MX_ROPE_SCALING_LLAMA3,
                          .factor = 8.0,
                          .low_freq_factor = 1.0,
                          .high_freq_factor = 4.0,
                          .original_max_position_embeddings = 64};
  CHECK_OK(mx_rope_inv_freq(500000.0, 16, &sc, &f));
  if (f) {
    CHECK(f[0] == 1.0f);
    for (int32_t i = 2; i < 8; i++) {
      double base = 1.0 / pow(500000.0, 2.0 * i / 16.0);
      CHECK(f[i] == (float)(base / 8));
    }
    double b1 = 1.0 / pow(500000.0, 2.0 / 16.0);
    CHECK(f[1] < b1 && f[1] > b1 / 8);
  }
  free(f);
  sc.kind = MX_ROPE_SCALING_LINEAR;
  sc.factor = 4.0;
  CHECK_OK(mx_rope_inv_freq(10000.0, 8, &sc, &f));
  if (f) CHECK_NEAR(f[1], 0.1 / 4, 1e-9);
  free(f);
  CHECK(mx_rope_inv_freq(10000.0, 7, NULL, &f) == MX_ERR_INVALID_ARG && f == NULL);
  // yarn, theta 1e4, dim 16, factor 4, original 32, betas 32 / 1: the correction range is
  // [floor(-1.60), ceil(1.41)] -> [0, 2]: pair 0 kept, pair 1 blended half way, pairs >= 2
  // interpolated (divided by the factor); the long table is the same.
  sc = (mx_rope_scaling_t){.kind = MX_ROPE_SCALING_YARN,
                           .factor = 4.0,
                           .original_max_position_embeddings = 32,
                           .beta_fast = 32,
                           .beta_slow = 1,
                           .truncate = true};
  float *g = NULL;
  CHECK_OK(mx_rope_inv_freq(10000.0, 16, &sc, &f));
  CHECK_OK(mx_rope_inv_freq_long(10000.0, 16, &sc, &g));
  if (f && g) {
    CHECK(f[0] == 1.0f);
    double b1 = 1.0 / pow(10000.0, 2.0 / 16.0);
    CHECK_NEAR(f[1], b1 * 0.5 + b1 / 4 * 0.5, 1e-7);
    for (int32_t i = 2; i < 8; i++) CHECK(f[i] == (float)(1.0 / pow(10000.0, 2.0 * i / 16) / 4));
    CHECK(memcmp(f, g, sizeof(float) * 8) == 0);
  }
  free(f), free(g);
  // longrope: each pair divided by its short (or long) factor.
  sc = (mx_rope_scaling_t){.kind = MX_ROPE_SCALING_LONGROPE,
                           .factor = 8.0,
                           .original_max_position_embeddings = 16,
                           .n_factors = 2};
  sc.short_factor[0] = 1.0f, sc.short_factor[1] = 2.0f;
  sc.long_factor[0] = 3.0f, sc.long_factor[1] = 5.0f;
  CHECK_OK(mx_rope_inv_freq(10000.0, 4, &sc, &f));
  CHECK_OK(mx_rope_inv_freq_long(10000.0, 4, &sc, &g));
  if (f && g) {
    CHECK(f[0] == 1.0f && g[0] == (float)(1.0 / 3));
    CHECK(f[1] == (float)(0.01 / 2) && g[1] == (float)(0.01 / 5));
  }
  free(f), free(g);
  sc.n_factors = 3;  // factor lists that do not match the rotary dims
  CHECK(mx_rope_inv_freq(10000.0, 4, &sc, &f) == MX_ERR_INVALID_ARG && f == NULL);
}

int main(void) {
  test_rope("half", 8, 1.0);
  test_rope("half", 4, 1.0);
  test_rope("interleaved", 8, 1.0);
  test_rope("interleaved", 6, 1.0);
  test_rope("half", 6, 1.1386);  // partial rotary: the last 2 dims pass unscaled
  test_rope("interleaved", 8, 0.75);
  test_attention(0, 0.0, MX_ELEM_F32);
  test_attention(3, 0.0, MX_ELEM_F32);
  test_attention(0, 1.5, MX_ELEM_F32);
  test_attention(4, 2.0, MX_ELEM_BF16);
  test_rms_norm(0.0, MX_ELEM_F32);
  test_rms_norm(1.0, MX_ELEM_BF16);
  test_mlp("silu", MX_ELEM_F32);
  test_mlp("gelu_tanh", MX_ELEM_F16);
  test_inv_freq();
  return mx_test_finish();
}
