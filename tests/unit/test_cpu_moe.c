// mx.moe on the cpu runtime (src/cpu/compile_moe.c, moe.c) against its decomposition on the
// reference interpreter: decode (one token: the experts' GEMVs shared by panels) and prefill
// (tokens grouped by expert, one GEMM per expert), f32 and bf16 experts, renormalized or not,
// 1 to 3 threads, and batched decoding's rows_as_gemv (each row as a lone decode, bit for bit).
// And the point of the kernel: it reads only the experts the router selects.
// Experts no token selects hold NaN here; the decomposition (masked-dense: every expert times
// its weight, 0 for the unselected) then gives NaN, the plan the exact result.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/cpu_plan.h"
#include "mlxcel/hlo_builder.h"
#include "model/graph_internal.h"
#include "mx_test.h"

enum { E = 6, K = 2, H = 40, F = 24, NA = 2 + 3 * E };

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {  // [0, 1)
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) / 9007199254740992.0;
}

typedef struct moe_case {
  int64_t t;          // tokens
  mx_elem_type_t et;  // the experts' type
  bool norm;
  bool poison;  // experts 4 and 5 (never selected) hold NaN
} moe_case_t;

// main(x[1, T, H], router[E, H], gate_0, up_0, down_0, ...) -> mx.moe
static mx_module_t *build(const moe_case_t *c, mx_tensor_t *args) {
  mx_module_t *m = mx_module_create(NULL);
  mx_type_t types[NA];
  for (int32_t i = 0; i < NA; i++) types[i] = args[i].type;
  mx_func_t *f;
  mx_builder_t b;
  int32_t ids[NA], out = -1;
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, m);
  CHECK_OK(mx_build_func(m, "main", false, types, NA, &f, &b, ids));
  CHECK_OK(mx_comp_moe(&cc, &b, ids[0], ids[1], ids + 2, E, "silu", K, c->norm, &out));
  mx_comp_ctx_free(&cc);
  CHECK_OK(mx_build_return(&b, &out, 1));
  CHECK_OK(mx_hlo_verify_module(m));
  return m;
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
      mx_type_t wt = mx_type_tensor(c->et, 2, j == 2 ? dd : gd);
      mx_tensor_t *w = &args[2 + 3 * e + j];
      CHECK_OK(mx_tensor_alloc(w, &wt));
      for (int64_t i = 0; i < F * H; i++)
        mx_tensor_set_f64(w, i, c->poison && e >= 4 ? NAN : 0.4 * (urand() - 0.5));
    }
  }
}

static double max_diff(const mx_tensor_t *a, const mx_tensor_t *b) {
  int64_t n = mx_type_numel(&a->type);
  double md = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs(mx_tensor_get_f64(a, i) - mx_tensor_get_f64(b, i));
    if (d > md || d != d) md = d;
  }
  return md;
}

static void run_case(const moe_case_t *c) {
  mx_tensor_t args[NA], clean[NA];
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
  CHECK_OK(mx_interp_run(m, f, clean, NA, &ref, NULL));
  if (c->poison) {  // the decomposition reads every expert
    mx_tensor_t dense;
    CHECK_OK(mx_interp_run(m, f, args, NA, &dense, NULL));
    CHECK_MSG(isnan(mx_tensor_get_f64(&dense, 0)), "the decomposition should read expert 4");
    mx_tensor_free(&dense);
  }
  bool w[NA];
  for (int32_t i = 0; i < NA; i++) w[i] = i > 0;
  mx_cpu_compile_opts_t o = {.args = args, .is_weight = w};
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
  double tol = 2e-6;  // bf16 too: both sides round x and the activation to bf16 alike
  for (int threads = 1; threads <= 3; threads++) {
    mx_cpu_pool_t *pool = NULL;
    CHECK_OK(mx_cpu_pool_create(threads, &pool));
    memset(got.data, 0xff, got.nbytes);
    CHECK_OK(mx_cpu_plan_run(p, threads > 1 ? pool : NULL, args, NA, &got));
    double d = max_diff(&got, &ref);
    CHECK_MSG(d <= tol, "T %lld %s norm %d poison %d threads %d: |plan - reference| %g",
              (long long)c->t, mx_elem_name(c->et), c->norm, c->poison, threads, d);
    mx_cpu_pool_destroy(pool);
  }
  mx_tensor_free(&got);
  mx_tensor_free(&ref);
  mx_cpu_plan_destroy(p);
  mx_module_destroy(m);
  for (int32_t i = 0; i < NA; i++) {
    mx_tensor_free(&args[i]);
    mx_tensor_free(&clean[i]);
  }
}

// The result of a compiled plan on args (single thread).
static void run_plan(const moe_case_t *c, mx_tensor_t *args, bool rows_as_gemv, mx_tensor_t *out) {
  mx_module_t *m = build(c, args);
  const mx_func_t *f = mx_module_find_func(m, "main");
  bool w[NA];
  for (int32_t i = 0; i < NA; i++) w[i] = i > 0;
  mx_cpu_compile_opts_t o = {.args = args, .is_weight = w, .rows_as_gemv = rows_as_gemv};
  mx_cpu_plan_t *p = NULL;
  CHECK_OK(mx_cpu_compile(m, f, &o, &p));
  CHECK_OK(mx_tensor_alloc(out, &f->result_types[0]));
  CHECK_OK(mx_cpu_plan_run(p, NULL, args, NA, out));
  mx_cpu_plan_destroy(p);
  mx_module_destroy(m);
}

// Batched decoding (rows_as_gemv): each of 5 tokens gets, bit for bit, what it gets alone.
static void test_rows_as_gemv(mx_elem_type_t et) {
  moe_case_t c = {5, et, true, false};
  mx_tensor_t args[NA], one[NA], all, alone;
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
  CHECK_MSG(bad == 0, "rows_as_gemv %s: %d of 5 rows differ from a lone decode", mx_elem_name(et),
            bad);
  mx_tensor_free(&all);
  for (int32_t i = 0; i < NA; i++) mx_tensor_free(&args[i]);
}

int main(void) {
  static const mx_elem_type_t kTypes[] = {MX_ELEM_F32, MX_ELEM_BF16};
  for (int ti = 0; ti < 2; ti++)
    for (int64_t t = 1; t <= 7; t += 6)
      for (int norm = 0; norm < 2; norm++)
        for (int poison = 0; poison < 2; poison++) {
          moe_case_t c = {t, kTypes[ti], norm != 0, poison != 0};
          run_case(&c);
        }
  test_rows_as_gemv(MX_ELEM_F32);
  test_rows_as_gemv(MX_ELEM_BF16);
  return mx_test_finish();
}
