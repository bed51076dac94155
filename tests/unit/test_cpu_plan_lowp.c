// CPU plans of low-precision graphs vs the reference interpreter: hand-written bf16 / f16 linear
// layers (convert + dot_general(bf16, bf16) -> f32 on awkward shapes), converts and a bf16
// embedding gather, then whole model graphs at precision bf16 / f16 with bf16 / f16 / f32 KV
// caches (the llama, qwen3, gemma2 and phi3 fixtures when $MX_SHARED is set). The linears run
// natively (no interpreter fallback), a model graph falls back no more than its f32 graph, and
// 1 vs 3 threads agree bit for bit.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/fused.h"
#include "cpu/plan_internal.h"
#include "mlxcel/cpu_plan.h"
#include "mlxcel/model.h"
#include "mlxcel/session.h"
#include "model/graph_internal.h"
#include "mx_alloc_count.h"
#include "mx_test.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 16);
}

static void fill_random(mx_tensor_t *t, int64_t int_range) {
  int64_t n = mx_type_numel(&t->type);
  for (int64_t i = 0; i < n; i++) {
    if (mx_elem_is_float(t->type.elem))
      mx_tensor_set_f64(t, i, ((double)(rnd() % 20001) - 10000.0) / 10000.0);
    else
      mx_tensor_set_i64(t, i, (int64_t)(rnd() % (uint64_t)int_range));
  }
}

// Max |a - b| / max(1, |b|) over the elements, or with `scaled` max |a - b| / max(1, max |b|)
// (NaN counts as infinite).
static double max_diff(const mx_tensor_t *a, const mx_tensor_t *b, bool scaled) {
  int64_t n = mx_type_numel(&a->type);
  double md = 0, mb = 1;
  for (int64_t i = 0; i < n && scaled; i++) mb = fmax(mb, fabs(mx_tensor_get_f64(b, i)));
  for (int64_t i = 0; i < n; i++) {
    double rb = mx_tensor_get_f64(b, i);
    double d = fabs(mx_tensor_get_f64(a, i) - rb) / (scaled ? mb : fabs(rb) > 1 ? fabs(rb) : 1);
    if (d > md || d != d) md = d;
  }
  return md;
}

// Plans (1 and 3 threads) vs the interpreter within tol (see max_diff); the two plans
// bit-identical; returns
// the plan's stats (and prints its steps when $MX_PLAN_DESCRIBE is set or fallbacks occur).
static void compare(const mx_module_t *m, const mx_func_t *f, mx_tensor_t *args, const bool *w,
                    double tol, bool scaled, const char *label, mx_cpu_plan_stats_t *stats) {
  int32_t na = f->body->n_args, nr = f->n_results;
  mx_tensor_t *ref = calloc((size_t)nr, sizeof *ref);
  mx_tensor_t *res[2];
  CHECK_OK(mx_interp_run(m, f, args, na, ref, NULL));
  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(3, &pool));
  memset(stats, 0, sizeof *stats);
  mx_cpu_compile_opts_t o = {.args = args, .is_weight = w};
  mx_cpu_plan_t *p = NULL;
  CHECK_OK(mx_cpu_compile(m, f, &o, &p));
  if (p) mx_cpu_plan_stats(p, stats);
  if (p && getenv("MX_PLAN_DESCRIBE")) {
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_plan_describe(p, &sb);
    printf("%s plan:\n%s", label, sb.data ? sb.data : "");
    mx_strbuf_free(&sb);
  }
  double worst = 0;
  for (int mode = 0; mode < 2 && p; mode++) {
    res[mode] = calloc((size_t)nr, sizeof(mx_tensor_t));
    for (int32_t r = 0; r < nr; r++) CHECK_OK(mx_tensor_alloc(&res[mode][r], &f->result_types[r]));
    CHECK_OK(mx_cpu_plan_run(p, mode ? pool : NULL, args, na, res[mode]));
    for (int32_t r = 0; r < nr; r++) {
      double d = max_diff(&res[mode][r], &ref[r], scaled);
      if (d > worst) worst = d;
      CHECK_MSG(d <= tol, "%s: %d thread(s) result %d differs by %g", label, mode ? 3 : 1, r, d);
    }
  }
  if (p) {
    for (int32_t r = 0; r < nr; r++) {
      CHECK_MSG(memcmp(res[0][r].data, res[1][r].data, res[0][r].nbytes) == 0,
                "%s: result %d differs between 1 and 3 threads", label, r);
      mx_tensor_free(&res[0][r]);
      mx_tensor_free(&res[1][r]);
    }
    free(res[0]);
    free(res[1]);
  }
  printf("%s: %d steps, %d fast, %d fallback; max rel diff vs interpreter %.3g\n", label,
         stats->n_steps, stats->n_fast, stats->n_fallback, worst);
  mx_cpu_plan_destroy(p);
  mx_cpu_pool_destroy(pool);
  for (int32_t r = 0; r < nr; r++) mx_tensor_free(&ref[r]);
  free(ref);
}

// A linear layer y[m, n] = convert(x[m, k] -> T) . W[n, k]^T (T = bf16 / f16), the converted
// activation widened back to f32, an embedding gather of W's rows, and the same W as a matmul
// weight z[m, k] = convert(x2[m, n] -> T) . W (contracting its dim 0, as Gemma 3's projector):
// packed transposed, apart from the linear's packing of the same bytes even when n == k.
static void run_linear(const char *et, int64_t m, int64_t n, int64_t k) {
  char W[64], X[64], XC[64], Y[64], E[64], X2[64], X2C[64], Z[64], label[96];
  snprintf(W, sizeof W, "tensor<%lldx%lldx%s>", (long long)n, (long long)k, et);
  snprintf(X, sizeof X, "tensor<%lldx%lldxf32>", (long long)m, (long long)k);
  snprintf(XC, sizeof XC, "tensor<%lldx%lldx%s>", (long long)m, (long long)k, et);
  snprintf(Y, sizeof Y, "tensor<%lldx%lldxf32>", (long long)m, (long long)n);
  snprintf(E, sizeof E, "tensor<3x%lldx%s>", (long long)k, et);
  snprintf(X2, sizeof X2, "tensor<%lldx%lldxf32>", (long long)m, (long long)n);
  snprintf(X2C, sizeof X2C, "tensor<%lldx%lldx%s>", (long long)m, (long long)n, et);
  snprintf(Z, sizeof Z, "tensor<%lldx%lldxf32>", (long long)m, (long long)k);
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_strbuf_printf(&sb,
                   "func.func @main(%%w: %s, %%x: %s, %%ids: tensor<3xi32>, %%x2: %s) -> (%s, %s, "
                   "%s, %s) {\n",
                   W, X, X2, Y, X, E, Z);
  mx_strbuf_printf(&sb, "  %%xc = stablehlo.convert %%x : (%s) -> %s\n", X, XC);
  mx_strbuf_printf(&sb, "  %%x2c = stablehlo.convert %%x2 : (%s) -> %s\n", X2, X2C);
  mx_strbuf_printf(&sb,
                   "  %%z = stablehlo.dot_general %%x2c, %%w, contracting_dims = [1] x [0] : (%s, "
                   "%s) -> %s\n",
                   X2C, W, Z);
  mx_strbuf_printf(&sb,
                   "  %%y = stablehlo.dot_general %%xc, %%w, contracting_dims = [1] x [1] : (%s, "
                   "%s) -> %s\n",
                   XC, W, Y);
  mx_strbuf_printf(&sb, "  %%y2 = stablehlo.convert %%xc : (%s) -> %s\n", XC, X);
  mx_strbuf_printf(&sb,
                   "  %%e = \"stablehlo.gather\"(%%w, %%ids) {dimension_numbers = "
                   "#stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], "
                   "start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, "
                   "%lld>} : (%s, tensor<3xi32>) -> %s\n",
                   (long long)k, W, E);
  mx_strbuf_printf(&sb, "  return %%y, %%y2, %%e, %%z : %s, %s, %s, %s\n}\n", Y, X, E, Z);
  const char *text = sb.data;
  snprintf(label, sizeof label, "%s linear m %lld n %lld k %lld", et, (long long)m, (long long)n,
           (long long)k);
  mx_module_t *mod = NULL;
  CHECK_OK(mx_hlo_parse(text, strlen(text), NULL, &mod));
  if (!mod) {
    printf("%s: %s\n%s", label, mx_error_message(), text);
    mx_strbuf_free(&sb);
    return;
  }
  mx_strbuf_free(&sb);
  mx_func_t *f = mx_module_find_func(mod, "main");
  int32_t na = f->body->n_args;
  mx_tensor_t args[4];
  bool w[4] = {true, false, false, false};
  for (int32_t i = 0; i < na; i++) {
    CHECK_OK(mx_tensor_alloc(&args[i], mx_value_type(f, f->body->args[i])));
    fill_random(&args[i], n);
  }
  mx_cpu_plan_stats_t st;
  // The converts are bit-exact; y (z) is an f32 sum of exact products in another order: within
  // k (n) * 2^-23 of the magnitudes (values in [-1, 1]), relative to max(1, |y|).
  compare(mod, f, args, w, 1e-6 * (double)((k > n ? k : n) + 8), false, label, &st);
  CHECK_MSG(st.n_fallback == 0 && !st.whole_function, "%s: %d fallback steps", label,
            st.n_fallback);
  for (int32_t i = 0; i < na; i++) mx_tensor_free(&args[i]);
  mx_module_destroy(mod);
}

static void test_linears(void) {
  static const int64_t shapes[][3] = {{1, 7, 1},     {1, 33, 17},   {1, 100, 257}, {3, 31, 2},
                                      {13, 65, 255}, {29, 40, 513}, {64, 96, 64},  {5, 48, 48}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    run_linear("bf16", shapes[i][0], shapes[i][1], shapes[i][2]);
    run_linear("f16", shapes[i][0], shapes[i][1], shapes[i][2]);
  }
}

// One activation converted once per projection that reads it (as the graphs do for q, k and v):
// the plan converts it once per target type (two bf16 converts of x share one step, the f16
// convert of x and the bf16 convert of x2 are their own), results as the interpreter's.
static void test_shared_converts(void) {
  const char *text =
      "func.func @main(%w1: tensor<24x40xbf16>, %w2: tensor<8x40xbf16>, %x: tensor<1x40xf32>, "
      "%x2: tensor<1x40xf32>) -> (tensor<1x24xf32>, tensor<1x8xf32>, tensor<1x40xf16>, "
      "tensor<1x8xf32>) {\n"
      "  %a = stablehlo.convert %x : (tensor<1x40xf32>) -> tensor<1x40xbf16>\n"
      "  %y1 = stablehlo.dot_general %a, %w1, contracting_dims = [1] x [1] : "
      "(tensor<1x40xbf16>, tensor<24x40xbf16>) -> tensor<1x24xf32>\n"
      "  %b = stablehlo.convert %x : (tensor<1x40xf32>) -> tensor<1x40xbf16>\n"
      "  %y2 = stablehlo.dot_general %b, %w2, contracting_dims = [1] x [1] : "
      "(tensor<1x40xbf16>, tensor<8x40xbf16>) -> tensor<1x8xf32>\n"
      "  %h = stablehlo.convert %x : (tensor<1x40xf32>) -> tensor<1x40xf16>\n"
      "  %c = stablehlo.convert %x2 : (tensor<1x40xf32>) -> tensor<1x40xbf16>\n"
      "  %y3 = stablehlo.dot_general %c, %w2, contracting_dims = [1] x [1] : "
      "(tensor<1x40xbf16>, tensor<8x40xbf16>) -> tensor<1x8xf32>\n"
      "  return %y1, %y2, %h, %y3 : tensor<1x24xf32>, tensor<1x8xf32>, tensor<1x40xf16>, "
      "tensor<1x8xf32>\n}\n";
  mx_module_t *mod = NULL;
  CHECK_OK(mx_hlo_parse(text, strlen(text), NULL, &mod));
  if (!mod) return;
  mx_func_t *f = mx_module_find_func(mod, "main");
  mx_tensor_t args[4];
  bool w[4] = {true, true, false, false};
  for (int32_t i = 0; i < 4; i++) {
    CHECK_OK(mx_tensor_alloc(&args[i], mx_value_type(f, f->body->args[i])));
    fill_random(&args[i], 40);
  }
  mx_cpu_plan_stats_t st;
  compare(mod, f, args, w, 1e-6 * 48, false, "shared converts", &st);
  mx_cpu_plan_t *p = NULL;
  mx_cpu_compile_opts_t o = {.args = args, .is_weight = w};
  CHECK_OK(mx_cpu_compile(mod, f, &o, &p));
  if (p) {
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_plan_describe(p, &sb);
    int n_conv = 0;
    for (const char *q = sb.data; q && (q = strstr(q, "convert (f32")); q++) n_conv++;
    CHECK_MSG(n_conv == 3,
              "shared converts: %d convert steps, want 3 (x bf16, x f16, x2 bf16):\n%s", n_conv,
              sb.data ? sb.data : "");
    mx_strbuf_free(&sb);
  }
  mx_cpu_plan_destroy(p);
  for (int32_t i = 0; i < 4; i++) mx_tensor_free(&args[i]);
  mx_module_destroy(mod);
}

// A decode row of a bf16 / f16 mx.gated_mlp: the plan runs gate, up, the activation and its
// convert as one ST_GATED_UP_LOWP step between the convert of x and the down projection, with
// the same bits as the unfused kernels on the plan's own packed weights (mx_cpu_convert, two
// GEMVs, mx_cpu_gated_act_f32, mx_cpu_convert, the down GEMV) at 1-4 threads, and near the
// interpreter's result. Shapes: a partial last panel; several chunks of panels.
static void run_gated_mlp(mx_elem_type_t et, int64_t H, int64_t F, const char *act_name, int act) {
  char label[96];
  snprintf(label, sizeof label, "%s gated_mlp %s H %lld F %lld", mx_elem_name(et), act_name,
           (long long)H, (long long)F);
  mx_module_t *m = mx_module_create(NULL);
  int64_t xd[3] = {1, 1, H}, gd[2] = {F, H}, dd[2] = {H, F};
  mx_type_t types[4] = {mx_type_tensor(MX_ELEM_F32, 3, xd), mx_type_tensor(et, 2, gd),
                        mx_type_tensor(et, 2, gd), mx_type_tensor(et, 2, dd)};
  mx_builder_t b;
  mx_func_t *f = NULL;
  int32_t ids[4], out = -1;
  CHECK_OK(mx_build_func(m, "main", false, types, 4, &f, &b, ids));
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, m);
  CHECK_OK(mx_comp_gated_mlp(&cc, &b, ids[0], ids[1], ids[2], ids[3], act_name, &out));
  CHECK_OK(mx_build_return(&b, &out, 1));
  mx_comp_ctx_free(&cc);
  CHECK_OK(mx_hlo_verify_module(m));
  mx_tensor_t args[4];
  bool w[4] = {false, true, true, true};
  for (int32_t i = 0; i < 4; i++) {
    CHECK_OK(mx_tensor_alloc(&args[i], &types[i]));
    fill_random(&args[i], i == 0 ? 4 : 2);
  }
  mx_cpu_plan_stats_t st;
  // f32 sums of exact products in another order, through the activation: relative to the
  // largest |result| (values in [-1, 1]).
  compare(m, f, args, w, 1e-6 * (double)(F + H + 8), true, label, &st);
  uint16_t *xc = malloc((size_t)(H + F) * sizeof(uint16_t)), *ac = xc + H;
  float *gate = malloc((size_t)(3 * F + 2 * H) * sizeof(float)), *up = gate + F, *a = up + F;
  float *want = a + F, *got = want + H;
  for (int threads = 1; threads <= 4; threads++) {
    mx_cpu_pool_t *pool = NULL;
    CHECK_OK(mx_cpu_pool_create(threads, &pool));
    mx_cpu_compile_opts_t o = {.args = args, .is_weight = w, .pool = pool};
    mx_cpu_plan_t *p = NULL;
    CHECK_OK(mx_cpu_compile(m, f, &o, &p));
    const mx_step_t *fs = NULL, *down = NULL;
    int n_unfused = 0;
    for (int32_t i = 0; p && i < p->n_steps; i++) {
      const mx_step_t *s = &p->steps[i];
      if (s->kind == ST_GATED_UP_LOWP) fs = s;
      if (s->kind == ST_GEMM_LOWP && fs) down = s;
      if (s->kind == ST_GATED_ACT || (s->kind == ST_GEMM_LOWP && !fs)) n_unfused++;
    }
    CHECK_MSG(fs && down && n_unfused == 0, "%s: %s fused step, %d unfused steps", label,
              fs ? "a" : "no", n_unfused);
    if (fs && down) {
      mx_tensor_t res = {0};
      res.type = f->result_types[0];
      res.data = (uint8_t *)got;
      res.nbytes = (size_t)H * sizeof(float);
      CHECK_OK(mx_cpu_plan_run(p, pool, args, 4, &res));
      mx_cpu_convert(args[0].data, MX_ELEM_F32, xc, et, H, 0, 1);
      mx_cpu_gemv_packed_lowp(fs->wl, xc, gate, 0, 1);
      mx_cpu_gemv_packed_lowp(fs->wl2, xc, up, 0, 1);
      mx_cpu_gated_act_f32(gate, up, a, F, act, 0, 1);
      mx_cpu_convert(a, MX_ELEM_F32, ac, et, F, 0, 1);
      mx_cpu_gemv_packed_lowp(down->wl, ac, want, 0, 1);
      CHECK_MSG(memcmp(want, got, (size_t)H * sizeof(float)) == 0,
                "%s, %d threads: the fused step differs from the unfused kernels", label, threads);
    }
    mx_cpu_plan_destroy(p);
    mx_cpu_pool_destroy(pool);
  }
  free(xc);
  free(gate);
  for (int32_t i = 0; i < 4; i++) mx_tensor_free(&args[i]);
  mx_module_destroy(m);
}

static void test_gated_mlp_decode(void) {
  run_gated_mlp(MX_ELEM_BF16, 48, 100, "silu", 0);
  run_gated_mlp(MX_ELEM_F16, 40, 70, "gelu_tanh", 1);
  run_gated_mlp(MX_ELEM_BF16, 256, 1000, "silu", 0);  // several 64 KiB chunks
}

// Biases after bf16 / f16 linears, as the vision towers and Qwen2's q / k / v build them
// (dot_general, broadcast_in_dim of the bias over rows, add): y = x W^T + b runs as one
// ST_GEMM_LOWP step that adds b to each complete sum (either order of the add's operands), its
// broadcast written nowhere. Not fused: a dot_general with another reader (its add reads the
// bias in place), an add of a scalar; a value per row multiplies in place too. Every result
// bit for bit the unfused kernels' (the plan's own packed weight through
// mx_cpu_gemm_packed_lowp, or the GEMV for one row, then one f32 add / multiply) at 1-4 threads,
// and near the interpreter's.
static void run_bias(mx_elem_type_t et, int64_t m, int64_t n, int64_t k) {
  const char *T = mx_elem_name(et);
  char W[64], X[64], XC[64], Y[64], B[48], R[48], label[96];
  snprintf(W, sizeof W, "tensor<%lldx%lldx%s>", (long long)n, (long long)k, T);
  snprintf(X, sizeof X, "tensor<%lldx%lldxf32>", (long long)m, (long long)k);
  snprintf(XC, sizeof XC, "tensor<%lldx%lldx%s>", (long long)m, (long long)k, T);
  snprintf(Y, sizeof Y, "tensor<%lldx%lldxf32>", (long long)m, (long long)n);
  snprintf(B, sizeof B, "tensor<%lldxf32>", (long long)n);
  snprintf(R, sizeof R, "tensor<%lldxf32>", (long long)m);
  snprintf(label, sizeof label, "%s bias m %lld n %lld k %lld", T, (long long)m, (long long)n,
           (long long)k);
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_strbuf_printf(&sb,
                   "func.func @main(%%w: %s, %%b: %s, %%x: %s, %%s: tensor<f32>, %%r: %s) -> "
                   "(%s, %s, %s, %s, %s, %s) {\n",
                   W, B, X, R, Y, Y, Y, Y, Y, Y);
  mx_strbuf_printf(&sb, "  %%xc = stablehlo.convert %%x : (%s) -> %s\n", X, XC);
  for (int i = 0; i < 4; i++)
    mx_strbuf_printf(&sb,
                     "  %%y%d = stablehlo.dot_general %%xc, %%w, contracting_dims = [1] x [1] : "
                     "(%s, %s) -> %s\n",
                     i, XC, W, Y);
  mx_strbuf_printf(&sb, "  %%bb = stablehlo.broadcast_in_dim %%b, dims = [1] : (%s) -> %s\n", B, Y);
  mx_strbuf_printf(&sb,
                   "  %%sb = stablehlo.broadcast_in_dim %%s, dims = [] : (tensor<f32>) -> %s\n", Y);
  mx_strbuf_printf(&sb, "  %%rb = stablehlo.broadcast_in_dim %%r, dims = [0] : (%s) -> %s\n", R, Y);
  mx_strbuf_printf(&sb, "  %%z0 = stablehlo.add %%y0, %%bb : %s\n", Y);
  mx_strbuf_printf(&sb, "  %%z1 = stablehlo.add %%bb, %%y1 : %s\n", Y);
  mx_strbuf_printf(&sb, "  %%z2 = stablehlo.add %%y2, %%bb : %s\n", Y);
  mx_strbuf_printf(&sb, "  %%z3 = stablehlo.add %%y3, %%sb : %s\n", Y);
  mx_strbuf_printf(&sb, "  %%z4 = stablehlo.multiply %%z0, %%rb : %s\n", Y);
  mx_strbuf_printf(&sb, "  return %%z0, %%z1, %%z2, %%y2, %%z3, %%z4 : %s, %s, %s, %s, %s, %s\n}\n",
                   Y, Y, Y, Y, Y, Y);
  mx_module_t *mod = NULL;
  CHECK_OK(mx_hlo_parse(sb.data, strlen(sb.data), NULL, &mod));
  mx_strbuf_free(&sb);
  if (!mod) return;
  mx_func_t *f = mx_module_find_func(mod, "main");
  mx_tensor_t args[5];
  bool w[5] = {true, true, false, false, false};
  for (int32_t i = 0; i < 5; i++) {
    CHECK_OK(mx_tensor_alloc(&args[i], mx_value_type(f, f->body->args[i])));
    fill_random(&args[i], 2);
  }
  mx_cpu_plan_stats_t st;
  compare(mod, f, args, w, 1e-6 * (double)(k + 8), false, label, &st);
  CHECK_MSG(st.n_fallback == 0, "%s: %d fallback steps", label, st.n_fallback);
  const float *b = (const float *)args[1].data, *r = (const float *)args[4].data,
              *sc = (const float *)args[3].data;
  size_t ny = (size_t)(m * n);
  uint16_t *xc = malloc((size_t)(m * k) * sizeof *xc);
  float *y = malloc(ny * 8 * sizeof *y), *want = y + ny, *got = want + ny;  // got: 6 results
  mx_cpu_convert(args[2].data, MX_ELEM_F32, xc, et, m * k, 0, 1);
  for (int threads = 1; threads <= 4; threads++) {
    mx_cpu_pool_t *pool = NULL;
    CHECK_OK(mx_cpu_pool_create(threads, &pool));
    mx_cpu_compile_opts_t o = {.args = args, .is_weight = w, .pool = pool};
    mx_cpu_plan_t *p = NULL;
    CHECK_OK(mx_cpu_compile(mod, f, &o, &p));
    int n_gemm = 0, n_bias = 0, n_ew = 0, n_copy = 0;
    const mx_cpu_packed_lowp_t *wl = NULL;
    for (int32_t i = 0; p && i < p->n_steps; i++) {
      const mx_step_t *s = &p->steps[i];
      n_gemm += s->kind == ST_GEMM_LOWP;
      n_bias += s->kind == ST_GEMM_LOWP && s->n_in == 2;
      n_ew += s->kind == ST_EW_BINARY;
      n_copy += s->kind == ST_TRANSPOSE;
      if (s->kind == ST_GEMM_LOWP) wl = s->wl;
    }
    // z0, z1 fused; y2 (returned) and y3 (a scalar added) not: their adds and z4's multiply
    // are elementwise steps; no broadcast is written.
    CHECK_MSG(n_gemm == 4 && n_bias == 2 && n_ew == 3 && n_copy == 0,
              "%s: %d GEMMs, %d with a bias, %d elementwise steps, %d copies", label, n_gemm,
              n_bias, n_ew, n_copy);
    mx_tensor_t res[6];
    for (int32_t i = 0; i < 6; i++) {
      res[i].type = f->result_types[i];
      res[i].data = (uint8_t *)(got + (size_t)i * ny);
      res[i].nbytes = ny * sizeof(float);
    }
    if (p && wl) {
      CHECK_OK(mx_cpu_plan_run(p, pool, args, 5, res));
      if (m == 1)  // the plan's GEMV (its own summation order)
        mx_cpu_gemv_packed_lowp(wl, xc, y, 0, 1);
      else
        mx_cpu_gemm_packed_lowp(wl, xc, k, y, n, m, 0, 1);
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) want[i * n + j] = y[i * n + j] + b[j];
      for (int z = 0; z < 3; z++)  // z0, z1, z2: the unfused sums plus the bias
        CHECK_MSG(memcmp(want, got + (size_t)z * ny, ny * sizeof(float)) == 0,
                  "%s, %d threads: z%d differs from the unfused kernels", label, threads, z);
      CHECK_MSG(memcmp(y, got + 3 * ny, ny * sizeof(float)) == 0,
                "%s, %d threads: y2 differs from the unfused GEMM", label, threads);
      bool same3 = true, same4 = true;
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          float z3 = y[i * n + j] + *sc, z4 = want[i * n + j] * r[i];
          same3 &= memcmp(&z3, got + 4 * ny + i * n + j, sizeof z3) == 0;
          same4 &= memcmp(&z4, got + 5 * ny + i * n + j, sizeof z4) == 0;
        }
      CHECK_MSG(same3 && same4, "%s, %d threads: z3 %s, z4 %s", label, threads,
                same3 ? "ok" : "differs", same4 ? "ok" : "differs");
    }
    mx_cpu_plan_destroy(p);
    mx_cpu_pool_destroy(pool);
  }
  free(xc);
  free(y);
  for (int32_t i = 0; i < 5; i++) mx_tensor_free(&args[i]);
  mx_module_destroy(mod);
}

static void test_bias(void) {
  // A GEMV; small odd shapes; two column blocks of panels (512 columns each) and two passes of
  // k (256 each), rows past the microkernel's 12.
  run_bias(MX_ELEM_BF16, 1, 40, 33);
  run_bias(MX_ELEM_F16, 1, 600, 300);
  run_bias(MX_ELEM_BF16, 13, 33, 17);
  run_bias(MX_ELEM_BF16, 29, 600, 300);
  run_bias(MX_ELEM_F16, 29, 600, 300);
}

// A value only converts read, computed by an elementwise step (GELU's last product, a
// LayerNorm's biased output before the next linears): that step writes it converted, in
// blocks, and no convert step is left (a second convert of it is a view); a value also read as
// f32 keeps its own convert step. The converted values bit for bit the interpreter's at 1-4
// threads (several blocks of 512 and thread splits inside them).
static void test_ew_convert(void) {
  const char *text =
      "func.func @main(%x: tensor<37x45xf32>, %b: tensor<45xf32>, %s: tensor<f32>, "
      "%w: tensor<8x45xbf16>) -> (tensor<37x45xbf16>, tensor<37x8xf32>, tensor<37x45xf16>, "
      "tensor<37x45xf32>) {\n"
      "  %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<37x45xf32>\n"
      "  %h = stablehlo.multiply %x, %sb : tensor<37x45xf32>\n"
      "  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<45xf32>) -> "
      "tensor<37x45xf32>\n"
      "  %g = stablehlo.add %h, %bb : tensor<37x45xf32>\n"
      "  %gc = stablehlo.convert %g : (tensor<37x45xf32>) -> tensor<37x45xbf16>\n"
      "  %gc2 = stablehlo.convert %g : (tensor<37x45xf32>) -> tensor<37x45xbf16>\n"
      "  %y = stablehlo.dot_general %gc2, %w, contracting_dims = [1] x [1] : "
      "(tensor<37x45xbf16>, tensor<8x45xbf16>) -> tensor<37x8xf32>\n"
      "  %k = stablehlo.subtract %x, %bb : tensor<37x45xf32>\n"
      "  %kc = stablehlo.convert %k : (tensor<37x45xf32>) -> tensor<37x45xf16>\n"
      "  return %gc, %y, %kc, %k : tensor<37x45xbf16>, tensor<37x8xf32>, tensor<37x45xf16>, "
      "tensor<37x45xf32>\n}\n";
  mx_module_t *mod = NULL;
  CHECK_OK(mx_hlo_parse(text, strlen(text), NULL, &mod));
  if (!mod) return;
  mx_func_t *f = mx_module_find_func(mod, "main");
  mx_tensor_t args[4], ref[4];
  bool w[4] = {false, true, false, true};
  for (int32_t i = 0; i < 4; i++) {
    CHECK_OK(mx_tensor_alloc(&args[i], mx_value_type(f, f->body->args[i])));
    fill_random(&args[i], 2);
  }
  mx_cpu_plan_stats_t st;
  compare(mod, f, args, w, 1e-6 * 53, false, "elementwise + convert", &st);
  memset(ref, 0, sizeof ref);
  CHECK_OK(mx_interp_run(mod, f, args, 4, ref, NULL));
  for (int threads = 1; threads <= 4; threads++) {
    mx_cpu_pool_t *pool = NULL;
    CHECK_OK(mx_cpu_pool_create(threads, &pool));
    mx_cpu_compile_opts_t o = {.args = args, .is_weight = w, .pool = pool};
    mx_cpu_plan_t *p = NULL;
    CHECK_OK(mx_cpu_compile(mod, f, &o, &p));
    int n_conv = 0, n_fused = 0;
    for (int32_t i = 0; p && i < p->n_steps; i++) {
      n_conv += p->steps[i].kind == ST_CONVERT;
      n_fused += p->steps[i].kind == ST_EW_BINARY && p->steps[i].ew.to == MX_ELEM_BF16;
    }
    CHECK_MSG(n_conv == 1 && n_fused == 1,
              "elementwise + convert: %d convert steps (want 1: k's), %d fused (want 1: g's)",
              n_conv, n_fused);
    mx_tensor_t res[4];
    for (int32_t r = 0; r < 4; r++) CHECK_OK(mx_tensor_alloc(&res[r], &f->result_types[r]));
    if (p) CHECK_OK(mx_cpu_plan_run(p, pool, args, 4, res));
    for (int32_t r = 0; r < 4; r++) {
      if (r != 1)  // gc, kc, k: one f32 op then one rounding, as the interpreter's
        CHECK_MSG(memcmp(res[r].data, ref[r].data, res[r].nbytes) == 0,
                  "elementwise + convert, %d threads: result %d differs from the interpreter",
                  threads, r);
      mx_tensor_free(&res[r]);
    }
    mx_cpu_plan_destroy(p);
    mx_cpu_pool_destroy(pool);
  }
  for (int32_t i = 0; i < 4; i++) {
    mx_tensor_free(&args[i]);
    mx_tensor_free(&ref[i]);
  }
  mx_module_destroy(mod);
}

// A model graph at `prec` with `kv` caches against the interpreter: weights as resident after
// the precision pass, random tokens / caches, pos0 11. Per-layer ops must all be native.
// Fallback steps of the f32 plans of a model (@prefill T = 8, @decode).
static void f32_fallbacks(const char *dir, int32_t out[2]) {
  mx_model_load_opts_t lo = {
      .tokenizer_optional = true, .precision = MX_ELEM_F32, .kv_dtype = MX_ELEM_F32};
  mx_model_t *model = NULL;
  out[0] = out[1] = -1;
  CHECK_OK(mx_model_load_ex(dir, &lo, &model));
  for (int k = 0; k < 2 && model; k++) {
    int32_t T = k == 0 ? 8 : 1;
    mx_graph_opts_t go = {.batch = 1, .ctx = 32, .prefill_len = T, .kv_dtype = MX_ELEM_F32};
    mx_module_t *m = NULL;
    CHECK_OK(mx_model_build_graph(&model->config, model->ckpt, &go, &m));
    if (!m) continue;
    mx_func_t *f = mx_module_find_func(m, T == 1 ? "decode" : "prefill");
    int32_t na = f->body->n_args;
    mx_tensor_t *args = calloc((size_t)na, sizeof *args);
    for (int32_t i = 0; i < na; i++) {
      mx_graph_arg_t info;
      CHECK_OK(mx_graph_arg_info(f, i, &info));
      if (info.role != MX_ARG_WEIGHT) continue;
      const mx_weight_t *wt = mx_checkpoint_find(model->ckpt, info.name);
      args[i].type = *mx_value_type(f, f->body->args[i]);
      args[i].data = (uint8_t *)(uintptr_t)wt->data;
      args[i].nbytes = wt->nbytes;
    }
    mx_cpu_compile_opts_t o = {.args = args};
    mx_cpu_plan_t *p = NULL;
    CHECK_OK(mx_cpu_compile(m, f, &o, &p));
    mx_cpu_plan_stats_t st;
    if (p) {
      mx_cpu_plan_stats(p, &st);
      out[k] = st.n_fallback;
    }
    mx_cpu_plan_destroy(p);
    free(args);
    mx_module_destroy(m);
  }
  mx_model_free(model);
}

static void run_model(const char *dir, const char *name, mx_elem_type_t prec, mx_elem_type_t kv) {
  int32_t f32_fallback[2];
  f32_fallbacks(dir, f32_fallback);
  mx_model_load_opts_t lo = {.tokenizer_optional = true, .precision = prec, .kv_dtype = kv};
  mx_model_t *model = NULL;
  if (mx_model_load_ex(dir, &lo, &model) != MX_OK) {
    CHECK_MSG(0, "%s: %s", dir, mx_error_message());
    return;
  }
  for (int k = 0; k < 2; k++) {
    int32_t T = k == 0 ? 8 : 1;
    mx_graph_opts_t go = {
        .batch = 1, .ctx = 32, .prefill_len = T, .all_logits = true, .kv_dtype = kv};
    mx_module_t *m = NULL;
    CHECK_OK(mx_model_build_graph(&model->config, model->ckpt, &go, &m));
    if (!m) continue;
    mx_func_t *f = mx_module_find_func(m, T == 1 ? "decode" : "prefill");
    int32_t na = f->body->n_args;
    mx_tensor_t *args = calloc((size_t)na, sizeof *args);
    bool *w = calloc((size_t)na, sizeof *w);
    for (int32_t i = 0; i < na; i++) {
      mx_graph_arg_t info;
      CHECK_OK(mx_graph_arg_info(f, i, &info));
      const mx_type_t *t = mx_value_type(f, f->body->args[i]);
      if (info.role == MX_ARG_WEIGHT) {
        const mx_weight_t *wt = mx_checkpoint_find(model->ckpt, info.name);
        args[i].type = *t;
        args[i].data = (uint8_t *)(uintptr_t)wt->data;
        args[i].nbytes = wt->nbytes;
        w[i] = true;
      } else {
        CHECK_OK(mx_tensor_alloc(&args[i], t));
        if (info.role == MX_ARG_POS0)
          ((int32_t *)args[i].data)[0] = 11;
        else
          fill_random(&args[i], model->config.vocab_size);
      }
    }
    char label[160];
    snprintf(label, sizeof label, "%s @%s precision %s kv %s", name, f->name,
             mx_elem_name(model->precision), mx_elem_name(model->kv_dtype));
    mx_cpu_plan_stats_t st;
    // Both sides round the activations exactly as the graph says, but an f32 reassociation
    // difference (1e-7) can move a later rounding across a boundary: one ulp of the narrow type
    // in one activation, which later layers and positions carry on. The bound is the mode's:
    // 4 ulps of bf16 / f16 (2^-6, 2^-9) of the largest logit.
    double tol = (prec == MX_ELEM_BF16 || kv == MX_ELEM_BF16) ? 0x1p-6 : 0x1p-9;
    compare(m, f, args, w, tol, true, label, &st);
    // The low-precision graph adds no interpreter fallback to the f32 graph's.
    CHECK_MSG(st.n_fallback <= f32_fallback[k], "%s: %d fallback steps, the f32 graph has %d",
              label, st.n_fallback, f32_fallback[k]);
    for (int32_t i = 0; i < na; i++)
      if (!w[i]) mx_tensor_free(&args[i]);
    free(args);
    free(w);
    mx_module_destroy(m);
  }
  mx_model_free(model);
}

static void test_models(void) {
  const char *data = getenv("MX_TEST_DATA");
  char dir[4096];
  if (data) {
    snprintf(dir, sizeof dir, "%s/../../models/stories260K", data);
    run_model(dir, "stories260K", MX_ELEM_BF16, MX_ELEM_BF16);
    run_model(dir, "stories260K", MX_ELEM_F16, MX_ELEM_F16);
    run_model(dir, "stories260K", MX_ELEM_BF16, MX_ELEM_F32);
    run_model(dir, "stories260K", MX_ELEM_F32, MX_ELEM_BF16);

  } else {
    mx_test_skip("stories260K: MX_TEST_DATA is not set");
  }
  const char *shared = mx_test_shared("fixtures");
  if (!shared) return;
  static const char *archs[] = {"llama", "qwen3", "gemma2", "phi3"};
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
    snprintf(dir, sizeof dir, "%s/fixtures/%s", shared, archs[i]);
    run_model(dir, archs[i], MX_ELEM_BF16, MX_ELEM_BF16);
    run_model(dir, archs[i], MX_ELEM_F16, MX_ELEM_F16);
  }
}

// A bf16 session (bf16 weights and caches) on the cpu backend: decode steps allocate nothing.
static void test_no_alloc(const char *dir) {
  mx_model_load_opts_t lo = {.tokenizer_optional = true, .precision = MX_ELEM_BF16};
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load_ex(dir, &lo, &m));
  mx_session_opts_t so = {.backend = "cpu", .ctx = 64, .backend_opts.threads = 2};
  mx_session_t *s = NULL;
  if (m) CHECK_OK(mx_session_create(m, &so, &s));
  if (s) {
    static const int32_t prompt[] = {1, 403, 407, 261, 378};
    CHECK_OK(mx_session_prefill(s, prompt, 5, NULL));
    CHECK_OK(mx_session_decode(s, 432));
    long before = (long)g_allocs;
    for (int i = 0; i < 8; i++) CHECK_OK(mx_session_decode(s, 383 + i));
    long n = (long)g_allocs - before;
    if (COUNT_ALLOCS) {
      CHECK_MSG(n == 0, "bf16 decode: %ld allocations in 8 steps", n);
    } else {
      printf("note: allocation count (no glibc interposition)\n");
    }
  }
  mx_session_destroy(s);
  mx_model_free(m);
}

int main(void) {
  test_linears();
  test_shared_converts();
  test_gated_mlp_decode();
  test_bias();
  test_ew_convert();
  if (getenv("MX_TEST_DATA")) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/../../models/stories260K", getenv("MX_TEST_DATA"));
    test_no_alloc(dir);
  }
  test_models();
  return mx_test_finish();
}
