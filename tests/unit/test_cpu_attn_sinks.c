// mx.attention with sinks (gpt-oss; composite.h) on the cpu runtime against its decomposition on
// the reference interpreter: decode split over the keys (few kv heads) and unsplit (8 kv heads),
// prefill, f32 and bf16 caches, with and without a window, sinks below and far above the scores
// (the running max is then the sink's), 1 to 3 threads. The plan must run the op as fused steps,
// never through the decomposition.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/cpu_plan.h"
#include "mlxcel/hlo_builder.h"
#include "model/graph_internal.h"
#include "mx_test.h"
#include "mx_test_tensor.h"

enum { B = 2, S = 40, D = 16 };

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {  // [-1, 1)
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) / 4503599627370496.0 - 1.0;
}

typedef struct attn_case {
  int64_t t, hq, hkv, window;
  mx_elem_type_t kv;
  double sink_shift;  // added to every sink: 0 (near the scores) or far above them
} attn_case_t;

// main(q, k_cache, v_cache, pos0, sinks) -> mx.attention with sinks (scale 0.25)
static mx_module_t *build(const mx_tensor_t *args, int64_t window) {
  mx_module_t *m = mx_module_create(NULL);
  mx_type_t types[5];
  for (int32_t i = 0; i < 5; i++) types[i] = args[i].type;
  mx_func_t *f;
  mx_builder_t b;
  int32_t ids[5], out = -1;
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, m);
  CHECK_OK(mx_build_func(m, "main", false, types, 5, &f, &b, ids));
  CHECK_OK(mx_comp_attention_sinks(&cc, &b, ids[0], ids[1], ids[2], ids[3], ids[4], 0.25, window,
                                   0.0, &out));
  mx_comp_ctx_free(&cc);
  CHECK_OK(mx_build_return(&b, &out, 1));
  CHECK_OK(mx_hlo_verify_module(m));
  return m;
}

static void fill(mx_tensor_t *t, mx_elem_type_t et, int32_t rank, const int64_t *dims, double scale,
                 double shift) {
  mx_type_t ty = mx_type_tensor(et, rank, dims);
  CHECK_OK(mx_tensor_alloc(t, &ty));
  for (int64_t i = 0; i < mx_type_numel(&ty); i++) mx_tensor_set_f64(t, i, shift + scale * urand());
}

static void run_case(const attn_case_t *c) {
  int64_t qd[4] = {B, c->t, c->hq, D}, kd[4] = {B, c->hkv, S, D}, pd[1] = {B}, sd[1] = {c->hq};
  mx_tensor_t args[5];
  fill(&args[0], MX_ELEM_F32, 4, qd, 2.0, 0.0);
  fill(&args[1], c->kv, 4, kd, 2.0, 0.0);
  fill(&args[2], c->kv, 4, kd, 1.0, 0.0);
  mx_type_t pt = mx_type_tensor(MX_ELEM_I32, 1, pd);
  CHECK_OK(mx_tensor_alloc(&args[3], &pt));
  int32_t pos0[B] = {3, (int32_t)(S - c->t - 1)};  // a short and a long key range
  memcpy(args[3].data, pos0, sizeof pos0);
  fill(&args[4], MX_ELEM_F32, 1, sd, 2.0, c->sink_shift);
  mx_module_t *m = build(args, c->window);
  const mx_func_t *f = mx_module_find_func(m, "main");
  mx_tensor_t ref, got;
  CHECK_OK(mx_interp_run(m, f, args, 5, &ref, NULL));
  bool w[5] = {false, false, false, false, true};
  mx_cpu_compile_opts_t o = {.args = args, .is_weight = w};
  mx_cpu_plan_t *p = NULL;
  CHECK_OK(mx_cpu_compile(m, f, &o, &p));
  mx_cpu_plan_stats_t st;
  mx_cpu_plan_stats(p, &st);
  CHECK_MSG(!st.whole_function && st.n_fallback == 0 && st.n_fast >= 1,
            "T %lld Hkv %lld: %d fast, %d fallback steps, whole %d", (long long)c->t,
            (long long)c->hkv, st.n_fast, st.n_fallback, st.whole_function);
  CHECK_OK(mx_tensor_alloc(&got, &f->result_types[0]));
  for (int threads = 1; threads <= 3; threads++) {
    mx_cpu_pool_t *pool = NULL;
    CHECK_OK(mx_cpu_pool_create(threads, &pool));
    memset(got.data, 0xff, got.nbytes);
    CHECK_OK(mx_cpu_plan_run(p, threads > 1 ? pool : NULL, args, 5, &got));
    double d = mx_test_max_diff(&got, &ref);
    // The online softmax against the decomposition's two passes: rounding only.
    CHECK_MSG(d <= 2e-6, "T %lld Hq %lld Hkv %lld window %lld %s shift %g threads %d: %g",
              (long long)c->t, (long long)c->hq, (long long)c->hkv, (long long)c->window,
              mx_elem_name(c->kv), c->sink_shift, threads, d);
    mx_cpu_pool_destroy(pool);
  }
  mx_tensor_free(&got);
  mx_tensor_free(&ref);
  mx_cpu_plan_destroy(p);
  mx_module_destroy(m);
  for (int32_t i = 0; i < 5; i++) mx_tensor_free(&args[i]);
}

// The sinks change the result: the same op without them differs (the test can fail).
static void test_sinks_matter(void) {
  int64_t qd[4] = {1, 1, 4, D}, kd[4] = {1, 2, S, D}, pd[1] = {1}, sd[1] = {4};
  mx_tensor_t args[5];
  fill(&args[0], MX_ELEM_F32, 4, qd, 2.0, 0.0);
  fill(&args[1], MX_ELEM_F32, 4, kd, 2.0, 0.0);
  fill(&args[2], MX_ELEM_F32, 4, kd, 1.0, 0.0);
  mx_type_t pt = mx_type_tensor(MX_ELEM_I32, 1, pd);
  CHECK_OK(mx_tensor_alloc(&args[3], &pt));
  ((int32_t *)args[3].data)[0] = 7;
  fill(&args[4], MX_ELEM_F32, 1, sd, 0.5, 1.0);
  mx_module_t *m = build(args, 0);
  mx_tensor_t with;
  CHECK_OK(mx_interp_run(m, mx_module_find_func(m, "main"), args, 5, &with, NULL));
  mx_module_destroy(m);
  for (int64_t i = 0; i < 4; i++) mx_tensor_set_f64(&args[4], i, -INFINITY);  // exp(-inf) = 0
  m = build(args, 0);
  mx_tensor_t without;
  CHECK_OK(mx_interp_run(m, mx_module_find_func(m, "main"), args, 5, &without, NULL));
  CHECK_MSG(mx_test_max_diff(&with, &without) > 1e-2, "sinks left the result unchanged");
  mx_tensor_free(&with);
  mx_tensor_free(&without);
  mx_module_destroy(m);
  for (int32_t i = 0; i < 5; i++) mx_tensor_free(&args[i]);
}

int main(void) {
  static const mx_elem_type_t kKv[] = {MX_ELEM_F32, MX_ELEM_BF16};
  static const int64_t kShapes[][3] = {{1, 4, 2}, {1, 16, 8}, {5, 6, 2}};  // t, hq, hkv
  for (int ki = 0; ki < 2; ki++)
    for (int si = 0; si < 3; si++)
      for (int64_t window = 0; window <= 6; window += 6)
        for (int shift = 0; shift < 2; shift++) {
          attn_case_t c = {kShapes[si][0], kShapes[si][1], kShapes[si][2],
                           window,         kKv[ki],        shift ? 40.0 : 0.0};
          run_case(&c);
        }
  test_sinks_matter();
  return mx_test_finish();
}
