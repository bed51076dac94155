// mx.mla on the cpu runtime (src/cpu/compile_mla.c, mla.c: the absorbed form) against its
// decomposition on the reference interpreter: decode (T = 1) and prefill (T = 5, 9: whole and
// partial tiles of queries; sequence 0's straddle the kernel's first block of 64 keys, so the
// queries of one tile see different numbers of its keys) of two sequences at different
// positions (one past the capacity: every slot visible), f32 and bf16 caches, 1 to 3 threads
// (bit-identical to one another: a head's arithmetic does not depend on the split), more heads
// than one group holds. And the kernel reads only the visible slots: slots past every query's
// position hold NaN, which leaves the plan's result exact while the decomposition (p = 0 times
// NaN in the weighted latent sum) turns NaN.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/fused.h"
#include "mlxcel/cpu_plan.h"
#include "mlxcel/hlo_builder.h"
#include "model/graph_internal.h"
#include "mx_test.h"
#include "mx_test_tensor.h"

enum { B = 2, H = 20, DN = 12, DR = 8, R = 24, DV = 10, S = 80, NA = 6 };

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double urand(void) { return mx_test_urand(&g_rng); }

typedef struct mla_case {
  int64_t t;          // queries per sequence
  mx_elem_type_t kv;  // the caches' type
  bool poison;        // slots no query sees hold NaN
} mla_case_t;

// Sequence 0's queries sit at 62 .. 62 + T - 1, across the kernel's blocks of 64 slots; sequence
// 1 sees every slot.
static const int32_t kPos0[B] = {62, S + 3};

// main(q_nope, q_rot, lat, rot, kv_b, pos0) -> mx.mla
static mx_module_t *build(const mx_tensor_t *args) {
  mx_module_t *m = mx_module_create(NULL);
  mx_type_t types[NA];
  for (int32_t i = 0; i < NA; i++) types[i] = args[i].type;
  mx_func_t *f;
  mx_builder_t b;
  int32_t ids[NA], out = -1;
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, m);
  CHECK_OK(mx_build_func(m, "main", false, types, NA, &f, &b, ids));
  CHECK_OK(mx_comp_mla(&cc, &b, ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], 0.3, &out));
  mx_comp_ctx_free(&cc);
  CHECK_OK(mx_build_return(&b, &out, 1));
  CHECK_OK(mx_hlo_verify_module(m));
  return m;
}

static void fill(mx_tensor_t *t, const int64_t *dims, int32_t rank, mx_elem_type_t et, double amp) {
  mx_type_t ty = mx_type_tensor(et, rank, dims);
  CHECK_OK(mx_tensor_alloc(t, &ty));
  for (int64_t i = 0; i < mx_type_numel(&ty); i++) mx_tensor_set_f64(t, i, amp * (urand() - 0.5));
}

static void make_args(const mla_case_t *c, mx_tensor_t *args) {
  int64_t qn[4] = {B, c->t, H, DN}, qr[4] = {B, c->t, H, DR}, ld[4] = {B, 1, S, R};
  int64_t rd[4] = {B, 1, S, DR}, wd[2] = {H * (DN + DV), R}, pd[1] = {B};
  fill(&args[0], qn, 4, MX_ELEM_F32, 2.0);
  fill(&args[1], qr, 4, MX_ELEM_F32, 2.0);
  fill(&args[2], ld, 4, c->kv, 2.0);
  fill(&args[3], rd, 4, c->kv, 2.0);
  fill(&args[4], wd, 2, MX_ELEM_F32, 0.6);
  mx_type_t pt = mx_type_tensor(MX_ELEM_I32, 1, pd);
  CHECK_OK(mx_tensor_alloc(&args[5], &pt));
  memcpy(args[5].data, kPos0, sizeof kPos0);
  if (!c->poison) return;
  // Sequence 0's queries see slots 0 .. 62 + T - 1: the rest of its cache rows are unread.
  for (int64_t s = kPos0[0] + c->t; s < S; s++) {
    for (int64_t i = 0; i < R; i++) mx_tensor_set_f64(&args[2], s * R + i, NAN);
    for (int64_t i = 0; i < DR; i++) mx_tensor_set_f64(&args[3], s * DR + i, NAN);
  }
}

static void run_case(const mla_case_t *c) {
  mx_tensor_t args[NA], clean[NA];
  memset(args, 0, sizeof args);
  memset(clean, 0, sizeof clean);
  uint64_t seed = g_rng;
  make_args(c, args);
  mla_case_t cc = *c;
  cc.poison = false;
  g_rng = seed;
  make_args(&cc, clean);  // the same values where args is not poisoned
  mx_module_t *m = build(args);
  const mx_func_t *f = mx_module_find_func(m, "main");
  mx_tensor_t ref, got, first;
  CHECK_OK(mx_interp_run(m, f, clean, NA, &ref, NULL));
  if (c->poison) {  // the decomposition reads every slot
    mx_tensor_t dense;
    CHECK_OK(mx_interp_run(m, f, args, NA, &dense, NULL));
    CHECK_MSG(isnan(mx_tensor_get_f64(&dense, 0)), "the decomposition should read slot %d",
              kPos0[0] + (int)c->t);
    mx_tensor_free(&dense);
  }
  bool w[NA] = {false, false, false, false, true, false};
  mx_cpu_compile_opts_t o = {.args = args, .is_weight = w};
  mx_cpu_plan_t *p = NULL;
  CHECK_OK(mx_cpu_compile(m, f, &o, &p));
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_cpu_plan_describe(p, &sb);
  CHECK_MSG(sb.data && strstr(sb.data, "fast mx.mla") && !strstr(sb.data, "decomposition"),
            "plan: %s", sb.data ? sb.data : "");
  mx_strbuf_free(&sb);
  CHECK_OK(mx_tensor_alloc(&got, &f->result_types[0]));
  CHECK_OK(mx_tensor_alloc(&first, &f->result_types[0]));
  // f32 sums in another order than the decomposition's dot_generals (bf16 caches: both widen the
  // same stored values, so the same bound holds).
  double tol = 2e-5;
  for (int threads = 1; threads <= 3; threads++) {
    mx_cpu_pool_t *pool = NULL;
    CHECK_OK(mx_cpu_pool_create(threads, &pool));
    memset(got.data, 0xff, got.nbytes);
    CHECK_OK(mx_cpu_plan_run(p, threads > 1 ? pool : NULL, args, NA, &got));
    double d = mx_test_max_diff(&got, &ref);
    CHECK_MSG(d <= tol, "T %lld %s poison %d threads %d: |plan - reference| %g", (long long)c->t,
              mx_elem_name(c->kv), c->poison, threads, d);
    if (threads == 1) memcpy(first.data, got.data, got.nbytes);
    CHECK_MSG(memcmp(first.data, got.data, got.nbytes) == 0, "threads %d differ from 1 thread",
              threads);
    mx_cpu_pool_destroy(pool);
  }
  mx_tensor_free(&got);
  mx_tensor_free(&first);
  mx_tensor_free(&ref);
  mx_cpu_plan_destroy(p);
  mx_module_destroy(m);
  for (int32_t i = 0; i < NA; i++) {
    mx_tensor_free(&args[i]);
    mx_tensor_free(&clean[i]);
  }
}

int main(void) {
  const int64_t ts[3] = {1, 5, 9};
  const mx_elem_type_t kvs[2] = {MX_ELEM_F32, MX_ELEM_BF16};
  // Every instruction set the kernel has loops for (mla.c: portable and AVX-512) that this
  // machine runs.
  for (int isa = 0; isa < MX_CPU_ISA_COUNT; isa++) {
    if (mx_cpu_fused_use_isa((mx_cpu_isa_t)isa) != MX_OK) continue;
    printf("%s\n", mx_cpu_isa_name((mx_cpu_isa_t)isa));
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 2; j++)
        for (int poison = 0; poison < 2; poison++)
          run_case(&(mla_case_t){ts[i], kvs[j], poison == 1});
  }
  return mx_test_finish();
}
