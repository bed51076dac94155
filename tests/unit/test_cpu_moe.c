// mx.moe on the cpu runtime (src/cpu/compile_moe.c, moe.c) against its decomposition on the
// reference interpreter: decode (one token: the experts' GEMVs shared by panels) and prefill
// (tokens grouped by expert, one GEMM per expert), f32 and bf16 experts, renormalized or not,
// 1 to 3 threads, and batched decoding's rows_as_gemv (each row as a lone decode, bit for bit).
// Quantized experts (int8, int4, MLX affine 4 / 8-bit, mx.linear's formats) through the
// quantized kernels, exact path, the same way, and MXFP4 (gpt-oss's) read as stored.
// gpt-oss's form (a router bias, the experts' biases, the clamped SwiGLU with a limit that
// clamps here) the same way, float and quantized.
// And the point of the kernel: it reads only the experts the router selects.
// Experts no token selects hold NaN here (quantized: their scales); the decomposition
// (masked-dense: every expert times its weight, 0 for the unselected) then gives NaN, the plan
// the exact result.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/cpu_plan.h"
#include "mlxcel/hlo_builder.h"
#include "model/graph_internal.h"
#include "model/quant_internal.h"
#include "mx_test.h"
#include "mx_test_tensor.h"

// H and F multiples of the quantized group (32): every expert of the quantized cases is packed.
enum { E = 6, K = 2, H = 64, F = 32, G = 32, NA_MAX = 2 + 9 * E + 1 + 3 * E };

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {  // [0, 1)
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) / 9007199254740992.0;
}

typedef struct moe_case {
  int64_t t;          // tokens
  mx_elem_type_t et;  // the experts' type (float experts)
  bool norm;
  bool poison;  // experts 4 and 5 (never selected) hold NaN
  int qmode;    // mx_q_mode_t: 0 float experts, else quantized with groups of G
  int bits;     // affine: 4 or 8
  bool oss;     // gpt-oss: router bias, expert biases, clamped SwiGLU
} moe_case_t;

// Operands per projection and in all.
static int32_t per_proj(const moe_case_t *c) {
  return c->qmode == MX_Q_FLOAT ? 1 : c->qmode == MX_Q_AFFINE ? 3 : 2;
}
static int32_t n_args(const moe_case_t *c) {
  return 2 + 3 * E * per_proj(c) + (c->oss ? 1 + 3 * E : 0);
}
static int32_t q_bits(const moe_case_t *c) {
  return c->qmode == MX_Q_INT8 ? 8 : c->qmode == MX_Q_INT4 || c->qmode == MX_Q_MXFP4 ? 4 : c->bits;
}

// MXFP4 (composite.h): random blocks u8 [n, k / 2] and e8m0 scales u8 [n, k / 32] near 2^-3 (any
// bytes are valid weights); poisoned: scales 255 (NaN).
static void make_mxfp4(const int64_t *d, bool poison, mx_tensor_t *out) {
  int64_t n = d[0], k = d[1], wd[2] = {n, k / 2}, sd[2] = {n, k / 32};
  mx_type_t wt = mx_type_tensor(MX_ELEM_UI8, 2, wd), st = mx_type_tensor(MX_ELEM_UI8, 2, sd);
  CHECK_OK(mx_tensor_alloc(&out[0], &wt));
  CHECK_OK(mx_tensor_alloc(&out[1], &st));
  for (int64_t i = 0; i < n * k / 2; i++) ((uint8_t *)out[0].data)[i] = (uint8_t)(256 * urand());
  for (int64_t i = 0; i < n * k / 32; i++) {
    uint8_t v = (uint8_t)(121 + 4 * urand());
    ((uint8_t *)out[1].data)[i] = poison ? 255 : v;
  }
}

// main(x[1, T, H], router[E, H], gate_0, up_0, down_0, ...) -> mx.moe
static mx_module_t *build(const moe_case_t *c, mx_tensor_t *args) {
  mx_module_t *m = mx_module_create(NULL);
  int32_t na = n_args(c);
  mx_type_t types[NA_MAX];
  for (int32_t i = 0; i < na; i++) types[i] = args[i].type;
  mx_func_t *f;
  mx_builder_t b;
  int32_t ids[NA_MAX], out = -1;
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, m);
  CHECK_OK(mx_build_func(m, "main", false, types, na, &f, &b, ids));
  mx_comp_quant_t q = {q_bits(c), G, (mx_qmode_t)c->qmode};
  if (c->oss) {
    mx_comp_moe_t a = {.activation = MX_ACT_CLAMPED_SWIGLU,
                       .top_k = K,
                       .norm_topk = c->norm,
                       .quantized = c->qmode != 0,
                       .quant = q,
                       .router_bias = true,
                       .expert_bias = true,
                       .swiglu_alpha = 1.702,
                       .swiglu_limit = 0.5};
    int32_t rb = 2 + 3 * E * per_proj(c);
    CHECK_OK(mx_comp_moe_biased(&cc, &b, ids[0], ids[1], ids + 2, E, -1, ids[rb], ids + rb + 1, &a,
                                &out));
  } else {
    CHECK_OK(mx_comp_moe(&cc, &b, ids[0], ids[1], ids + 2, E, c->qmode ? &q : NULL, "silu", K,
                         c->norm, &out));
  }
  mx_comp_ctx_free(&cc);
  CHECK_OK(mx_build_return(&b, &out, 1));
  CHECK_OK(mx_hlo_verify_module(m));
  return m;
}

// The stored triple w, scales[, biases] (f16 scales) of a random weight [d0, d1] quantized as
// the model's quantizers do; poisoned: NaN scales.
static void make_qweight(const moe_case_t *c, const int64_t *d, bool poison, mx_tensor_t *out) {
  int64_t n = d[0], k = d[1], bits = q_bits(c), sd[2] = {n, k / G};
  int64_t wd[2] = {n, c->qmode == MX_Q_INT8 ? k : k * bits / 32};
  mx_type_t wt = mx_type_tensor(c->qmode == MX_Q_INT8 ? MX_ELEM_I8 : MX_ELEM_UI32, 2, wd);
  mx_type_t st = mx_type_tensor(MX_ELEM_F16, 2, sd);
  CHECK_OK(mx_tensor_alloc(&out[0], &wt));
  CHECK_OK(mx_tensor_alloc(&out[1], &st));
  if (c->qmode == MX_Q_AFFINE) CHECK_OK(mx_tensor_alloc(&out[2], &st));
  float row[64];
  for (int64_t r = 0; r < n; r++) {
    for (int64_t i = 0; i < k; i++) row[i] = (float)(0.4 * (urand() - 0.5));
    uint8_t *w = (uint8_t *)out[0].data + r * (int64_t)(out[0].nbytes / (size_t)n);
    uint16_t *s = (uint16_t *)out[1].data + r * (k / G);
    if (c->qmode == MX_Q_INT8) {
      mx_q_int8_row(row, k, G, MX_ELEM_F16, (int8_t *)w, s);
    } else if (c->qmode == MX_Q_INT4) {
      mx_q_int4_row(row, k, G, MX_ELEM_F16, (uint32_t *)(void *)w, s);
    } else {
      mx_q_affine_row(row, k, G, (int)bits, MX_ELEM_F16, (uint32_t *)(void *)w, s,
                      (uint16_t *)out[2].data + r * (k / G));
    }
  }
  if (poison)
    for (int64_t i = 0; i < n * (k / G); i++) mx_tensor_set_f64(&out[1], i, NAN);
}

// x in [0.5, 1): positive, so routers rows 0-3 (positive) always beat rows 4-5 (negative).
static void make_args(const moe_case_t *c, mx_tensor_t *args) {
  int64_t xd[3] = {1, c->t, H}, rd[2] = {E, H}, gd[2] = {F, H}, dd[2] = {H, F};
  mx_type_t xt = mx_type_tensor(MX_ELEM_F32, 3, xd), rt = mx_type_tensor(MX_ELEM_F32, 2, rd);
  CHECK_OK(mx_tensor_alloc(&args[0], &xt));
  CHECK_OK(mx_tensor_alloc(&args[1], &rt));
  for (int64_t i = 0; i < c->t * H; i++) mx_tensor_set_f64(&args[0], i, 0.5 + 0.5 * urand());
  for (int64_t e = 0; e < E; e++)
    for (int64_t i = 0; i < H; i++)
      mx_tensor_set_f64(&args[1], e * H + i, e < 4 ? 0.1 * urand() : -0.1 - 0.1 * urand());
  for (int64_t e = 0; e < E; e++) {
    for (int j = 0; j < 3; j++) {
      if (c->qmode == MX_Q_MXFP4) {
        make_mxfp4(j == 2 ? dd : gd, c->poison && e >= 4, &args[2 + 2 * (3 * e + j)]);
        continue;
      }
      if (c->qmode) {
        make_qweight(c, j == 2 ? dd : gd, c->poison && e >= 4,
                     &args[2 + per_proj(c) * (3 * e + j)]);
        continue;
      }
      mx_type_t wt = mx_type_tensor(c->et, 2, j == 2 ? dd : gd);
      mx_tensor_t *w = &args[2 + 3 * e + j];
      CHECK_OK(mx_tensor_alloc(w, &wt));
      for (int64_t i = 0; i < F * H; i++)
        mx_tensor_set_f64(w, i, c->poison && e >= 4 ? NAN : 0.4 * (urand() - 0.5));
    }
  }
  if (!c->oss) return;
  // The router bias (small beside the rows' gap) and each expert's gate, up and down biases,
  // from a fixed state: the poisoned float experts above drew fewer numbers than the clean ones.
  g_rng = 0xA5A5A5A5DEADBEEFull;
  int32_t rb = 2 + 3 * E * per_proj(c);
  int64_t ed[1] = {E};
  mx_type_t bt = mx_type_tensor(MX_ELEM_F32, 1, ed);
  CHECK_OK(mx_tensor_alloc(&args[rb], &bt));
  for (int64_t e = 0; e < E; e++) mx_tensor_set_f64(&args[rb], e, 0.2 * (urand() - 0.5));
  for (int64_t e = 0; e < E; e++) {
    for (int j = 0; j < 3; j++) {
      int64_t n = j == 2 ? H : F;
      mx_type_t t = mx_type_tensor(MX_ELEM_F32, 1, &n);
      mx_tensor_t *w = &args[rb + 1 + 3 * e + j];
      CHECK_OK(mx_tensor_alloc(w, &t));
      for (int64_t i = 0; i < n; i++) {
        double v = 0.4 * (urand() - 0.5);
        mx_tensor_set_f64(w, i, c->poison && e >= 4 ? NAN : v);
      }
    }
  }
}

static void run_case(const moe_case_t *c) {
  int32_t na = n_args(c);
  mx_tensor_t args[NA_MAX], clean[NA_MAX];
  memset(args, 0, sizeof args);
  memset(clean, 0, sizeof clean);
  uint64_t seed = g_rng;
  make_args(c, args);
  moe_case_t cc = *c;
  cc.poison = false;
  g_rng = seed;
  make_args(&cc, clean);  // the same values where args is not poisoned
  mx_module_t *m = build(c, args);
  const mx_func_t *f = mx_module_find_func(m, "main");
  mx_tensor_t ref, got;
  CHECK_OK(mx_interp_run(m, f, clean, na, &ref, NULL));
  if (c->poison) {  // the decomposition reads every expert
    mx_tensor_t dense;
    CHECK_OK(mx_interp_run(m, f, args, na, &dense, NULL));
    CHECK_MSG(isnan(mx_tensor_get_f64(&dense, 0)), "the decomposition should read expert 4");
    mx_tensor_free(&dense);
  }
  bool w[NA_MAX];
  for (int32_t i = 0; i < na; i++) w[i] = i > 0;
  mx_cpu_compile_opts_t o = {.args = args, .is_weight = w, .quant_kernel = MX_CPU_QKERNEL_EXACT};
  mx_cpu_plan_t *p = NULL;
  CHECK_OK(mx_cpu_compile(m, f, &o, &p));
  mx_cpu_plan_stats_t st;
  mx_cpu_plan_stats(p, &st);
  CHECK_MSG(!st.whole_function && st.n_fallback == 0 && st.n_fast == 4,
            "T %lld: %d fast, %d fallback steps, whole %d", (long long)c->t, st.n_fast,
            st.n_fallback, st.whole_function);
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_cpu_plan_describe(p, &sb);
  CHECK_MSG(sb.data && strstr(sb.data, c->t == 1 ? "gemv" : "gemm per expert"), "plan: %s",
            sb.data ? sb.data : "");
  mx_strbuf_free(&sb);
  CHECK_OK(mx_tensor_alloc(&got, &f->result_types[0]));
  // bf16 too: both sides round x and the activation to bf16 alike; quantized experts differ by
  // the exact kernels' order of summation only (kernels_q.h; measured <= 3.1e-7).
  double tol = 2e-6;
  for (int threads = 1; threads <= 3; threads++) {
    mx_cpu_pool_t *pool = NULL;
    CHECK_OK(mx_cpu_pool_create(threads, &pool));
    memset(got.data, 0xff, got.nbytes);
    CHECK_OK(mx_cpu_plan_run(p, threads > 1 ? pool : NULL, args, na, &got));
    double d = mx_test_max_diff(&got, &ref);
    CHECK_MSG(d <= tol,
              "T %lld %s q%d/%d norm %d poison %d oss %d threads %d: |plan - reference| %g",
              (long long)c->t, mx_elem_name(c->et), c->qmode, q_bits(c), c->norm, c->poison, c->oss,
              threads, d);
    mx_cpu_pool_destroy(pool);
  }
  mx_tensor_free(&got);
  mx_tensor_free(&ref);
  mx_cpu_plan_destroy(p);
  mx_module_destroy(m);
  for (int32_t i = 0; i < na; i++) {
    mx_tensor_free(&args[i]);
    mx_tensor_free(&clean[i]);
  }
}

// The result of a compiled plan on args (single thread).
static void run_plan(const moe_case_t *c, mx_tensor_t *args, bool rows_as_gemv, mx_tensor_t *out) {
  int32_t na = n_args(c);
  mx_module_t *m = build(c, args);
  const mx_func_t *f = mx_module_find_func(m, "main");
  bool w[NA_MAX];
  for (int32_t i = 0; i < na; i++) w[i] = i > 0;
  mx_cpu_compile_opts_t o = {.args = args, .is_weight = w, .rows_as_gemv = rows_as_gemv};
  mx_cpu_plan_t *p = NULL;
  CHECK_OK(mx_cpu_compile(m, f, &o, &p));
  CHECK_OK(mx_tensor_alloc(out, &f->result_types[0]));
  CHECK_OK(mx_cpu_plan_run(p, NULL, args, na, out));
  mx_cpu_plan_destroy(p);
  mx_module_destroy(m);
}

// Batched decoding (rows_as_gemv): each of 5 tokens gets, bit for bit, what it gets alone.
static void test_rows_as_gemv(mx_elem_type_t et, int qmode, int bits, bool oss) {
  moe_case_t c = {5, et, true, false, qmode, bits, oss};
  int32_t na = n_args(&c);
  mx_tensor_t args[NA_MAX], one[NA_MAX], all, alone;
  memset(args, 0, sizeof args);
  make_args(&c, args);
  run_plan(&c, args, true, &all);
  moe_case_t c1 = c;
  c1.t = 1;
  int64_t xd[3] = {1, 1, H};
  mx_type_t xt = mx_type_tensor(MX_ELEM_F32, 3, xd);
  int bad = 0;
  for (int64_t m = 0; m < c.t; m++) {
    memcpy(one, args, sizeof one);  // the same weights (borrowed)
    CHECK_OK(mx_tensor_alloc(&one[0], &xt));
    memcpy(one[0].data, (const float *)args[0].data + m * H, sizeof(float) * H);
    run_plan(&c1, one, false, &alone);
    bad += memcmp(alone.data, (const float *)all.data + m * H, sizeof(float) * H) != 0;
    mx_tensor_free(&alone);
    mx_tensor_free(&one[0]);
  }
  CHECK_MSG(bad == 0, "rows_as_gemv %s q%d: %d of 5 rows differ from a lone decode",
            mx_elem_name(et), qmode, bad);
  mx_tensor_free(&all);
  for (int32_t i = 0; i < na; i++) mx_tensor_free(&args[i]);
}

int main(void) {
  static const mx_elem_type_t kTypes[] = {MX_ELEM_F32, MX_ELEM_BF16};
  for (int ti = 0; ti < 2; ti++)
    for (int64_t t = 1; t <= 7; t += 6)
      for (int norm = 0; norm < 2; norm++)
        for (int poison = 0; poison < 2; poison++) {
          moe_case_t c = {t, kTypes[ti], norm != 0, poison != 0, MX_Q_FLOAT, 0, false};
          run_case(&c);
          c.oss = true;
          run_case(&c);
        }
  // Quantized experts: int8, int4, affine 4-bit and 8-bit.
  static const struct {
    int mode, bits;
  } kQuant[] = {
      {MX_Q_INT8, 8}, {MX_Q_INT4, 4}, {MX_Q_AFFINE, 4}, {MX_Q_AFFINE, 8}, {MX_Q_MXFP4, 4}};
  for (int qi = 0; qi < 5; qi++)
    for (int64_t t = 1; t <= 7; t += 6)
      for (int poison = 0; poison < 2; poison++) {
        moe_case_t c = {t, MX_ELEM_F32, true, poison != 0, kQuant[qi].mode, kQuant[qi].bits, false};
        run_case(&c);
        c.oss = true;
        run_case(&c);
      }
  test_rows_as_gemv(MX_ELEM_F32, MX_Q_FLOAT, 0, false);
  test_rows_as_gemv(MX_ELEM_BF16, MX_Q_FLOAT, 0, false);
  test_rows_as_gemv(MX_ELEM_F32, MX_Q_INT4, 4, false);
  test_rows_as_gemv(MX_ELEM_F32, MX_Q_AFFINE, 8, false);
  test_rows_as_gemv(MX_ELEM_F32, MX_Q_FLOAT, 0, true);
  test_rows_as_gemv(MX_ELEM_F32, MX_Q_INT8, 8, true);
  test_rows_as_gemv(MX_ELEM_F32, MX_Q_MXFP4, 4, true);
  return mx_test_finish();
}
