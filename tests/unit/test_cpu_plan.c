// CPU plans vs the reference interpreter: small hand-written graphs exercising the fast paths,
// views and the fallback (per-op kernels, composite decompositions, whole-function), and the
// llama fixture's @prefill/@decode graphs (when $MX_SHARED is set).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/plan_internal.h"
#include "mlxcel/cpu_plan.h"
#include "mlxcel/model.h"
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

static double max_diff(const mx_tensor_t *a, const mx_tensor_t *b) {
  int64_t n = mx_type_numel(&a->type);
  double md = 0;
  for (int64_t i = 0; i < n; i++) {
    double rb = mx_tensor_get_f64(b, i);
    double d = fabs(mx_tensor_get_f64(a, i) - rb) / (fabs(rb) > 1 ? fabs(rb) : 1);
    if (d > md || d != d) md = d;
  }
  return md;
}

// Runs f with the interpreter and with plans (fast and no_fast, 1 and 3 threads) on args;
// results must agree within tol (relative to max(1, |ref|)). Returns the fast plan's stats.
static void compare(const mx_module_t *m, const mx_func_t *f, mx_tensor_t *args, const bool *w,
                    double tol, const char *label, mx_cpu_plan_stats_t *stats_out) {
  int32_t na = f->body->n_args, nr = f->n_results;
  mx_tensor_t *ref = calloc((size_t)nr, sizeof *ref);
  CHECK_OK(mx_interp_run(m, f, args, na, ref, NULL));
  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(3, &pool));
  for (int mode = 0; mode < 4; mode++) {
    mx_cpu_compile_opts_t o = {.args = args, .is_weight = w, .no_fast = mode >= 2};
    mx_cpu_plan_t *p = NULL;
    CHECK_OK(mx_cpu_compile(m, f, &o, &p));
    if (!p) continue;
    if (mode == 0 && stats_out) mx_cpu_plan_stats(p, stats_out);
    if (mode == 0 && getenv("MX_PLAN_DESCRIBE")) {
      mx_strbuf_t sb;
      mx_strbuf_init(&sb);
      mx_cpu_plan_describe(p, &sb);
      printf("%s plan:\n%s", label, sb.data ? sb.data : "");
      mx_strbuf_free(&sb);
    }
    mx_tensor_t *res = calloc((size_t)nr, sizeof *res);
    for (int32_t r = 0; r < nr; r++) CHECK_OK(mx_tensor_alloc(&res[r], &f->result_types[r]));
    if (mode == 1) CHECK_OK(mx_cpu_plan_set_profile(p, true));
    CHECK_OK(mx_cpu_plan_run(p, (mode & 1) ? pool : NULL, args, na, res));
    if (mode == 1) {  // the profile's header counts the barriers of an unprofiled run
      mx_cpu_plan_stats_t ps;
      mx_cpu_plan_stats(p, &ps);
      char want[96];
      snprintf(want, sizeof want, "in %d steps (%d barriers, ", ps.n_steps, ps.n_barriers);
      mx_strbuf_t sb;
      mx_strbuf_init(&sb);
      mx_cpu_plan_profile_report(p, &sb);
      // A whole-function plan times no steps: its report is empty.
      CHECK_MSG(ps.whole_function || (sb.data && strstr(sb.data, want)),
                "%s: profile header lacks \"%s\": %s", label, want, sb.data ? sb.data : "");
      mx_strbuf_free(&sb);
    }
    for (int32_t r = 0; r < nr; r++) {
      double d = max_diff(&res[r], &ref[r]);
      CHECK_MSG(d <= tol, "%s: mode %d result %d differs by %g", label, mode, r, d);
      mx_tensor_free(&res[r]);
    }
    free(res);
    mx_cpu_plan_destroy(p);
  }
  mx_cpu_pool_destroy(pool);
  for (int32_t r = 0; r < nr; r++) mx_tensor_free(&ref[r]);
  free(ref);
}

// Returns the fast plan's stats (zeros when the text did not parse).
static mx_cpu_plan_stats_t run_text(const char *label, const char *text, double tol,
                                    int32_t n_weights, bool expect_whole) {
  mx_cpu_plan_stats_t st;
  memset(&st, 0, sizeof st);
  mx_module_t *m = NULL;
  CHECK_OK(mx_hlo_parse(text, strlen(text), NULL, &m));
  if (!m) {
    printf("%s: %s\n", label, mx_error_message());
    return st;
  }
  mx_func_t *f = mx_module_find_func(m, "main");
  int32_t na = f->body->n_args;
  mx_tensor_t *args = calloc((size_t)na, sizeof *args);
  bool *w = calloc((size_t)na, sizeof *w);
  for (int32_t i = 0; i < na; i++) {
    CHECK_OK(mx_tensor_alloc(&args[i], mx_value_type(f, f->body->args[i])));
    fill_random(&args[i], 4);
    w[i] = i < n_weights;
  }
  compare(m, f, args, w, 1e-5, label, &st);
  CHECK_MSG(st.whole_function == expect_whole, "%s: whole_function %d", label, st.whole_function);
  printf("%s: %d steps, %d fast, %d views, %d fallback%s\n", label, st.n_steps, st.n_fast,
         st.n_view, st.n_fallback, st.whole_function ? " (whole function)" : "");
  for (int32_t i = 0; i < na; i++) mx_tensor_free(&args[i]);
  free(args);
  free(w);
  mx_module_destroy(m);
  return st;
}

static void test_small_graphs(void) {
  // Weight matmul (gemv and gemm), elementwise, reshape/transpose views, fallback ops.
  run_text("matmul+ew",
           "func.func @main(%w: tensor<24x16xf32>, %x: tensor<1x3x16xf32>, %b: tensor<1x3x24xf32>)"
           " -> (tensor<3x24xf32>, tensor<1x24x3xf32>) {\n"
           "  %0 = stablehlo.dot_general %x, %w, contracting_dims = [2] x [1] :"
           " (tensor<1x3x16xf32>, tensor<24x16xf32>) -> tensor<1x3x24xf32>\n"
           "  %1 = stablehlo.add %0, %b : tensor<1x3x24xf32>\n"
           "  %2 = stablehlo.multiply %1, %0 : tensor<1x3x24xf32>\n"
           "  %3 = stablehlo.reshape %2 : (tensor<1x3x24xf32>) -> tensor<3x24xf32>\n"
           "  %4 = stablehlo.transpose %2, dims = [0, 2, 1] : (tensor<1x3x24xf32>) ->"
           " tensor<1x24x3xf32>\n"
           "  %5 = stablehlo.exponential %4 : tensor<1x24x3xf32>\n"
           "  return %3, %5 : tensor<3x24xf32>, tensor<1x24x3xf32>\n}\n",
           1e-5, 1, false);
  run_text("gemv+fallback",
           "func.func @main(%w: tensor<40x8xf32>, %x: tensor<1x8xf32>, %i: tensor<1xi32>)"
           " -> (tensor<1x40xf32>, tensor<1x4xf32>) {\n"
           "  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] :"
           " (tensor<1x8xf32>, tensor<40x8xf32>) -> tensor<1x40xf32>\n"
           "  %1 = stablehlo.slice %0 [0:1, 2:10:2] : (tensor<1x40xf32>) -> tensor<1x4xf32>\n"
           "  %2 = stablehlo.tanh %1 : tensor<1x4xf32>\n"
           "  %3 = stablehlo.iota dim = 1 : tensor<1x4xf32>\n"
           "  %4 = stablehlo.subtract %2, %3 : tensor<1x4xf32>\n"
           "  %5 = stablehlo.sine %0 : tensor<1x40xf32>\n"
           "  return %5, %4 : tensor<1x40xf32>, tensor<1x4xf32>\n}\n",
           1e-5, 1, false);
  // Non-weight matmul (a batched dot step), broadcast, compare/select, concatenate.
  run_text("fallback mix",
           "func.func @main(%a: tensor<4x6xf32>, %b: tensor<6x5xf32>, %c: tensor<5xf32>)"
           " -> tensor<4x10xf32> {\n"
           "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] :"
           " (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>\n"
           "  %1 = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<5xf32>) -> tensor<4x5xf32>\n"
           "  %2 = stablehlo.compare GT, %0, %1 : (tensor<4x5xf32>, tensor<4x5xf32>) ->"
           " tensor<4x5xi1>\n"
           "  %3 = stablehlo.select %2, %0, %1 : tensor<4x5xi1>, tensor<4x5xf32>\n"
           "  %4 = stablehlo.concatenate %3, %1, dim = 1 : (tensor<4x5xf32>, tensor<4x5xf32>) ->"
           " tensor<4x10xf32>\n"
           "  return %4 : tensor<4x10xf32>\n}\n",
           1e-5, 0, false);
  // Products of two values with batching dims, as Gemma 3n's audio attention writes them (its
  // content logits [U, W, N, Hd] x [U, C, N, Hd] batched over U and N, the position logits
  // against [F, N, Hd] batched over N, the probabilities [U, N, W, C] times the values): native
  // steps, the interpreter's results bit for bit (tolerance 0), on 1 and 3 threads; a
  // two-dimension contraction stays the interpreter's.
  mx_cpu_plan_stats_t bd = run_text(
      "batched dots",
      "func.func @main(%q: tensor<3x4x2x5xf32>, %k: tensor<3x6x2x5xf32>, %s: tensor<7x2x5xf32>,"
      " %p: tensor<3x2x4x6xf32>) -> (tensor<3x2x4x6xf32>, tensor<2x3x4x7xf32>,"
      " tensor<3x2x4x5xf32>) {\n"
      "  %0 = stablehlo.dot_general %q, %k, batching_dims = [0, 2] x [0, 2],"
      " contracting_dims = [3] x [3] : (tensor<3x4x2x5xf32>, tensor<3x6x2x5xf32>) ->"
      " tensor<3x2x4x6xf32>\n"
      "  %1 = stablehlo.dot_general %q, %s, batching_dims = [2] x [1],"
      " contracting_dims = [3] x [2] : (tensor<3x4x2x5xf32>, tensor<7x2x5xf32>) ->"
      " tensor<2x3x4x7xf32>\n"
      "  %2 = stablehlo.dot_general %p, %k, batching_dims = [0, 1] x [0, 2],"
      " contracting_dims = [3] x [1] : (tensor<3x2x4x6xf32>, tensor<3x6x2x5xf32>) ->"
      " tensor<3x2x4x5xf32>\n"
      "  return %0, %1, %2 : tensor<3x2x4x6xf32>, tensor<2x3x4x7xf32>, tensor<3x2x4x5xf32>\n}\n",
      0, 0, false);
  CHECK_MSG(bd.n_fallback == 0 && bd.n_fast == 3, "batched dots: %d fallback, %d fast",
            bd.n_fallback, bd.n_fast);
  mx_cpu_plan_stats_t bd2 = run_text(
      "two contracting dims",
      "func.func @main(%a: tensor<3x4x5xf32>, %b: tensor<3x4x6xf32>) -> tensor<5x6xf32> {\n"
      "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0, 1] x [0, 1] :"
      " (tensor<3x4x5xf32>, tensor<3x4x6xf32>) -> tensor<5x6xf32>\n"
      "  return %0 : tensor<5x6xf32>\n}\n",
      0, 0, false);
  CHECK_MSG(bd2.n_fallback == 1, "two contracting dims: %d fallback", bd2.n_fallback);
  run_text("transposes",
           "func.func @main(%a: tensor<3x5x7xf32>, %b: tensor<2x3x4x5xi32>)"
           " -> (tensor<7x3x5xf32>, tensor<5x2x4x3xi32>) {\n"
           "  %0 = stablehlo.transpose %a, dims = [2, 0, 1] : (tensor<3x5x7xf32>) ->"
           " tensor<7x3x5xf32>\n"
           "  %1 = stablehlo.transpose %b, dims = [3, 0, 2, 1] : (tensor<2x3x4x5xi32>) ->"
           " tensor<5x2x4x3xi32>\n"
           "  return %0, %1 : tensor<7x3x5xf32>, tensor<5x2x4x3xi32>\n}\n",
           0, 0, false);
  // Slices that are not contiguous runs: strided copies (offsets in every dim, strides, a
  // Phi-3-style split of a fused projection), exact, none left to the interpreter.
  mx_cpu_plan_stats_t sl = run_text(
      "slices",
      "func.func @main(%a: tensor<4x6x9xf32>, %b: tensor<5x96xf32>, %c: tensor<17xi32>)"
      " -> (tensor<2x2x3xf32>, tensor<5x32xf32>, tensor<5x32xf32>, tensor<6xi32>,"
      " tensor<1x1x1xf32>) {\n"
      "  %0 = stablehlo.slice %a [1:4:2, 2:6:3, 1:9:3] : (tensor<4x6x9xf32>) -> tensor<2x2x3xf32>\n"
      "  %1 = stablehlo.slice %b [0:5, 32:64] : (tensor<5x96xf32>) -> tensor<5x32xf32>\n"
      "  %2 = stablehlo.slice %b [0:5, 64:96] : (tensor<5x96xf32>) -> tensor<5x32xf32>\n"
      "  %3 = stablehlo.slice %c [1:17:3] : (tensor<17xi32>) -> tensor<6xi32>\n"
      "  %4 = stablehlo.slice %a [3:4, 5:6, 8:9] : (tensor<4x6x9xf32>) -> tensor<1x1x1xf32>\n"
      "  return %0, %1, %2, %3, %4 : tensor<2x2x3xf32>, tensor<5x32xf32>, tensor<5x32xf32>,"
      " tensor<6xi32>, tensor<1x1x1xf32>\n}\n",
      0, 0, false);
  CHECK_MSG(sl.n_fallback == 0 && sl.n_fast >= 4, "slices: %d fallback, %d fast", sl.n_fallback,
            sl.n_fast);
  // LayerNorm, biases and GELU's tanh as the LayerNorm families' graphs build them: a row mean as
  // a dot_general with a vector of ones, broadcasts of a bias over rows, of a row's mean over
  // its columns and of a scalar, divide, tanh: every one a native step, none left to the
  // interpreter's kernels (they cost StarCoder 2's prefill 5x). The three broadcasts are no
  // steps: their elementwise readers read their operands in place (7 steps for 10 ops).
  mx_cpu_plan_stats_t ln = run_text(
      "layer norm, bias, tanh",
      "func.func @main(%x: tensor<3x16xf32>, %b: tensor<16xf32>, %s: tensor<f32>)"
      " -> (tensor<3x16xf32>, tensor<3xf32>) {\n"
      "  %ones = stablehlo.constant dense<1.0> : tensor<16xf32>\n"
      "  %n = stablehlo.constant dense<16.0> : tensor<3xf32>\n"
      "  %0 = stablehlo.dot_general %x, %ones, contracting_dims = [1] x [0] :"
      " (tensor<3x16xf32>, tensor<16xf32>) -> tensor<3xf32>\n"
      "  %1 = stablehlo.divide %0, %n : tensor<3xf32>\n"
      "  %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<3xf32>) -> tensor<3x16xf32>\n"
      "  %3 = stablehlo.subtract %x, %2 : tensor<3x16xf32>\n"
      "  %4 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<3x16xf32>\n"
      "  %5 = stablehlo.add %3, %4 : tensor<3x16xf32>\n"
      "  %6 = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<3x16xf32>\n"
      "  %7 = stablehlo.multiply %5, %6 : tensor<3x16xf32>\n"
      "  %8 = stablehlo.tanh %7 : tensor<3x16xf32>\n"
      "  %9 = stablehlo.dot_general %8, %b, contracting_dims = [1] x [0] :"
      " (tensor<3x16xf32>, tensor<16xf32>) -> tensor<3xf32>\n"
      "  return %8, %9 : tensor<3x16xf32>, tensor<3xf32>\n}\n",
      1e-5, 0, false);
  CHECK_MSG(ln.n_fallback == 0 && ln.n_fast == 7, "layer norm: %d fallback, %d fast", ln.n_fallback,
            ln.n_fast);
  // SiLU and quick_gelu (x * logistic(1.702 x)) as the vision towers build them, on values up to
  // +-60 (both tails of the logistic) and a size that is no multiple of 16: every op native.
  mx_cpu_plan_stats_t lg =
      run_text("logistic",
               "func.func @main(%a: tensor<5x37xf32>) -> (tensor<5x37xf32>, tensor<5x37xf32>) {\n"
               "  %big = stablehlo.constant dense<60.0> : tensor<5x37xf32>\n"
               "  %k = stablehlo.constant dense<1.702> : tensor<5x37xf32>\n"
               "  %x = stablehlo.multiply %a, %big : tensor<5x37xf32>\n"
               "  %0 = stablehlo.logistic %x : tensor<5x37xf32>\n"
               "  %1 = stablehlo.multiply %x, %0 : tensor<5x37xf32>\n"
               "  %2 = stablehlo.multiply %x, %k : tensor<5x37xf32>\n"
               "  %3 = stablehlo.logistic %2 : tensor<5x37xf32>\n"
               "  %4 = stablehlo.multiply %x, %3 : tensor<5x37xf32>\n"
               "  return %1, %4 : tensor<5x37xf32>, tensor<5x37xf32>\n}\n",
               1e-5, 0, false);
  CHECK_MSG(lg.n_fallback == 0 && lg.n_fast >= 6, "logistic: %d fallback, %d fast", lg.n_fallback,
            lg.n_fast);
  // Matmul weights W[k, n] (dot_general contracting the weight's dim 0, Gemma 3's projector):
  // packed GEMM / GEMV steps, the square one also as a linear, its two packings kept apart.
  mx_cpu_plan_stats_t mw = run_text(
      "matmul weights",
      "func.func @main(%w: tensor<24x24xf32>, %v: tensor<24x40xf32>, %x: tensor<1x5x24xf32>,"
      " %y: tensor<1x24xf32>) -> (tensor<1x5x24xf32>, tensor<1x5x24xf32>, tensor<1x5x40xf32>,"
      " tensor<1x40xf32>) {\n"
      "  %0 = stablehlo.dot_general %x, %w, contracting_dims = [2] x [0] :"
      " (tensor<1x5x24xf32>, tensor<24x24xf32>) -> tensor<1x5x24xf32>\n"
      "  %1 = stablehlo.dot_general %x, %w, contracting_dims = [2] x [1] :"
      " (tensor<1x5x24xf32>, tensor<24x24xf32>) -> tensor<1x5x24xf32>\n"
      "  %2 = stablehlo.dot_general %x, %v, contracting_dims = [2] x [0] :"
      " (tensor<1x5x24xf32>, tensor<24x40xf32>) -> tensor<1x5x40xf32>\n"
      "  %3 = stablehlo.dot_general %y, %v, contracting_dims = [1] x [0] :"
      " (tensor<1x24xf32>, tensor<24x40xf32>) -> tensor<1x40xf32>\n"
      "  return %0, %1, %2, %3 : tensor<1x5x24xf32>, tensor<1x5x24xf32>, tensor<1x5x40xf32>,"
      " tensor<1x40xf32>\n}\n",
      1e-5, 2, false);
  CHECK_MSG(mw.n_fallback == 0 && mw.n_fast == 4, "matmul weights: %d fallback, %d fast",
            mw.n_fallback, mw.n_fast);
  // A reduce at top level: the whole function runs in the interpreter.
  run_text("whole function",
           "func.func @main(%a: tensor<4x6xf32>) -> tensor<4xf32> {\n"
           "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
           "  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] :"
           " (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>\n"
           "  return %0 : tensor<4xf32>\n}\n",
           1e-5, 0, true);
  // A composite without a fused kernel: its decomposition runs in the interpreter.
  run_text("composite fallback",
           "func.func @main(%a: tensor<4x6xf32>) -> tensor<4x6xf32> {\n"
           "  %0 = stablehlo.composite \"my.thing\" %a {decomposition = @dec} :"
           " (tensor<4x6xf32>) -> tensor<4x6xf32>\n"
           "  %1 = stablehlo.add %0, %a : tensor<4x6xf32>\n"
           "  return %1 : tensor<4x6xf32>\n}\n"
           "func.func private @dec(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {\n"
           "  %0 = stablehlo.multiply %x, %x : tensor<4x6xf32>\n"
           "  return %0 : tensor<4x6xf32>\n}\n",
           1e-5, 0, false);
}

// The decode plan writes each layer's rotated key straight into its cache (one mx.rope step per
// layer with rope.cache_op, one in-place dynamic_update_slice per layer left: the values'), with
// the same bits in every result (logits and caches) as the plan without that fusion (keep_values
// keeps every intermediate, so it keeps the RoPE's own result and the separate store), at 1 and
// 3 threads.
static void check_rope_cache(mx_module_t *m, mx_func_t *f, mx_tensor_t *args, const bool *w,
                             int32_t layers) {
  int32_t na = f->body->n_args, nr = f->n_results;
  mx_tensor_t *res[2][2];
  mx_tensor_t *saved = calloc((size_t)na, sizeof *saved);
  for (int32_t i = 0; i < na; i++)  // the caches are updated in place: each run starts alike
    if (!w[i]) {
      CHECK_OK(mx_tensor_alloc(&saved[i], &args[i].type));
      memcpy(saved[i].data, args[i].data, args[i].nbytes);
    }
  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(3, &pool));
  for (int fused = 0; fused < 2; fused++) {
    mx_cpu_compile_opts_t o = {.args = args, .is_weight = w, .keep_values = !fused};
    mx_cpu_plan_t *p = NULL;
    CHECK_OK(mx_cpu_compile(m, f, &o, &p));
    int n_cache = 0, n_dus = 0;
    for (int32_t i = 0; p && i < p->n_steps; i++) {
      n_cache += p->steps[i].kind == ST_ROPE && p->steps[i].rope.cache_op != NULL;
      n_dus += p->steps[i].kind == ST_DUS_INPLACE;
    }
    CHECK_MSG(n_cache == (fused ? layers : 0) && n_dus == (fused ? layers : 2 * layers),
              "llama @decode%s: %d RoPEs into the cache, %d in-place stores (%d layers)",
              fused ? "" : " (keep_values)", n_cache, n_dus, layers);
    for (int t = 0; t < 2; t++) {
      res[fused][t] = calloc((size_t)nr, sizeof(mx_tensor_t));
      for (int32_t r = 0; r < nr; r++)
        CHECK_OK(mx_tensor_alloc(&res[fused][t][r], &f->result_types[r]));
      for (int32_t i = 0; i < na; i++)
        if (!w[i]) memcpy(args[i].data, saved[i].data, args[i].nbytes);
      if (p) CHECK_OK(mx_cpu_plan_run(p, t ? pool : NULL, args, na, res[fused][t]));
    }
    mx_cpu_plan_destroy(p);
  }
  for (int t = 0; t < 2; t++)
    for (int32_t r = 0; r < nr; r++) {
      CHECK_MSG(memcmp(res[0][t][r].data, res[1][t][r].data, res[0][t][r].nbytes) == 0,
                "llama @decode, %d thread(s): result %d differs with the RoPE into the cache",
                t ? 3 : 1, r);
      mx_tensor_free(&res[0][t][r]);
      mx_tensor_free(&res[1][t][r]);
    }
  for (int t = 0; t < 2; t++) free(res[0][t]), free(res[1][t]);
  for (int32_t i = 0; i < na; i++)
    if (!w[i]) {
      memcpy(args[i].data, saved[i].data, args[i].nbytes);
      mx_tensor_free(&saved[i]);
    }
  free(saved);
  mx_cpu_pool_destroy(pool);
}

// The llama fixture graphs (prefill T = 8 and decode) with random caches and positions.
static void test_llama_graphs(void) {
  const char *shared = getenv("MX_SHARED");
  if (!shared) {
    mx_test_skip("llama fixture graphs: MX_SHARED is not set");
    return;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/fixtures/llama", shared);
  mx_model_load_opts_t lo = {.tokenizer_optional = true};
  mx_model_t *model = NULL;
  if (mx_model_load_ex(dir, &lo, &model) != MX_OK) {
    mx_test_skip("llama fixture graphs: %s", mx_error_message());
    return;
  }
  for (int k = 0; k < 2; k++) {
    int32_t T = k == 0 ? 8 : 1;
    mx_graph_opts_t go = {
        .batch = 1, .ctx = 32, .prefill_len = T, .all_logits = true, .kv_dtype = MX_ELEM_F32};
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
    mx_cpu_plan_stats_t st;
    compare(m, f, args, w, 1e-4, T == 1 ? "llama @decode" : "llama @prefill", &st);
    if (T == 1) check_rope_cache(m, f, args, w, model->config.num_layers);
    printf("llama %s: %d steps, %d fast, %d views, %d fallback, %d barriers, arena %zu bytes\n",
           f->name, st.n_steps, st.n_fast, st.n_view, st.n_fallback, st.n_barriers, st.arena_bytes);
    for (int32_t i = 0; i < na; i++)
      if (!w[i]) mx_tensor_free(&args[i]);
    free(args);
    free(w);
    mx_module_destroy(m);
  }
  mx_model_free(model);
}

// The weight cache's packed-source hook: once per distinct packed matrix, with its bytes, and a
// second plan sharing the cache packs (and reports) nothing again.
static void count_packed(void *user, const void *data, size_t nbytes) {
  (void)data;
  size_t *c = user;
  c[0]++;
  c[1] += nbytes;
}

static void test_packed_hook(void) {
  const char *text =
      "func.func @main(%w: tensor<24x16xf32>, %v: tensor<8x24xf32>, %x: tensor<3x16xf32>)"
      " -> tensor<3x8xf32> {\n"
      "  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] :"
      " (tensor<3x16xf32>, tensor<24x16xf32>) -> tensor<3x24xf32>\n"
      "  %1 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] :"
      " (tensor<3x16xf32>, tensor<24x16xf32>) -> tensor<3x24xf32>\n"
      "  %2 = stablehlo.add %0, %1 : tensor<3x24xf32>\n"
      "  %3 = stablehlo.dot_general %2, %v, contracting_dims = [1] x [1] :"
      " (tensor<3x24xf32>, tensor<8x24xf32>) -> tensor<3x8xf32>\n"
      "  return %3 : tensor<3x8xf32>\n"
      "}\n";
  mx_module_t *m = NULL;
  CHECK_OK(mx_hlo_parse(text, strlen(text), NULL, &m));
  if (!m) return;
  mx_func_t *f = mx_module_find_func(m, "main");
  mx_tensor_t args[3];
  bool w[3] = {true, true, false};
  for (int32_t i = 0; i < 3; i++) {
    CHECK_OK(mx_tensor_alloc(&args[i], mx_value_type(f, f->body->args[i])));
    fill_random(&args[i], 4);
  }
  mx_cpu_weights_t *wc = NULL;
  CHECK_OK(mx_cpu_weights_create(NULL, &wc));
  size_t calls[2] = {0, 0};
  mx_cpu_weights_on_packed(wc, count_packed, calls);
  mx_cpu_compile_opts_t o = {.args = args, .is_weight = w, .weights = wc};
  mx_cpu_plan_t *p1 = NULL, *p2 = NULL;
  CHECK_OK(mx_cpu_compile(m, f, &o, &p1));
  CHECK_OK(mx_cpu_compile(m, f, &o, &p2));
  CHECK_MSG(calls[0] == 2 && calls[1] == (24 * 16 + 8 * 24) * sizeof(float),
            "hook: %zu calls, %zu bytes", calls[0], calls[1]);
  CHECK(mx_cpu_weights_count(wc) == 2);
  // External arena: run refuses without one, set_arena checks size and alignment, and a plan
  // on a borrowed arena computes what the plan with its own arena does.
  mx_cpu_compile_opts_t oe = o;
  oe.external_arena = true;
  mx_cpu_plan_t *pe = NULL;
  CHECK_OK(mx_cpu_compile(m, f, &oe, &pe));
  mx_cpu_plan_stats_t ps;
  mx_cpu_plan_stats(pe, &ps);
  mx_tensor_t r1, r2;
  CHECK_OK(mx_tensor_alloc(&r1, &f->result_types[0]));
  CHECK_OK(mx_tensor_alloc(&r2, &f->result_types[0]));
  CHECK(ps.arena_bytes > 0);
  CHECK(mx_cpu_plan_run(pe, NULL, args, 3, &r2) == MX_ERR_INVALID_ARG);
  uint8_t *arena = aligned_alloc(64, ps.arena_bytes + 64);
  CHECK(mx_cpu_plan_set_arena(pe, arena, ps.arena_bytes - 1) == MX_ERR_INVALID_ARG);
  CHECK(mx_cpu_plan_set_arena(pe, arena + 4, ps.arena_bytes) == MX_ERR_INVALID_ARG);
  CHECK(mx_cpu_plan_set_arena(p1, arena, ps.arena_bytes) == MX_ERR_INVALID_ARG);  // own arena
  CHECK_OK(mx_cpu_plan_set_arena(pe, arena, ps.arena_bytes));
  memset(arena, 0x7f, ps.arena_bytes);  // garbage must not matter
  CHECK_OK(mx_cpu_plan_run(pe, NULL, args, 3, &r2));
  CHECK_OK(mx_cpu_plan_run(p1, NULL, args, 3, &r1));
  CHECK(memcmp(r1.data, r2.data, r1.nbytes) == 0);
  mx_cpu_plan_destroy(pe);
  free(arena);
  mx_tensor_free(&r1);
  mx_tensor_free(&r2);
  mx_cpu_plan_destroy(p1);
  mx_cpu_plan_destroy(p2);
  mx_cpu_weights_destroy(wc);
  for (int32_t i = 0; i < 3; i++) mx_tensor_free(&args[i]);
  mx_module_destroy(m);
}

int main(void) {
  test_small_graphs();
  test_packed_hook();
  test_llama_graphs();
  return mx_test_finish();
}
