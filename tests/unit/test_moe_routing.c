// DeepSeek's routing in mx.moe (composite.h's optional attributes): the decomposition on the
// reference interpreter against the rule computed here in double (independently: sorting, not
// iterative argmax), and the cpu plan (src/cpu/moe.c) against the decomposition, for V2's
// greedy and group-limited softmax routing and V3's sigmoid routing with its choice bias,
// top-2-sum group ranks and renormalization, each with a routed scale; one token (decode) and
// several (prefill), 1 to 3 threads. The choice bias (up to 0.3, the size of the sigmoid scores'
// spread here) moves choices, and the rule weights by the unbiased scores. V3's routing also
// with quantized experts (int8, int4, MLX affine 4-bit: each projection its stored triple, the
// choice bias after them all), the rule then computed on the dequantized weights.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/cpu_plan.h"
#include "mlxcel/hlo_builder.h"
#include "model/graph_internal.h"
#include "model/quant_internal.h"
#include "mx_test.h"
#include "mx_test_tensor.h"

// NA: float experts' arguments (and the bias); NQ: quantized ones' at most; QG: the quantized
// experts' group (divides H and F; the cpu kernels take multiples of 32).
enum { E = 8, K = 2, H = 32, F = 32, T = 5, NA = 3 + 3 * E, NQ = 3 + 9 * E, QG = 32 };

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static double urand(void) { return mx_test_urand(&g_rng); }

typedef struct routing_case {
  const char *name;
  mx_comp_moe_t a;  // activation silu, top_k K; a.quantized: the experts' format (groups of QG)
  int64_t t;        // tokens
} routing_case_t;

// main(x[1, T, H], router[E, H], gate_0, up_0, down_0, ..., [bias[E]]) -> mx.moe
static mx_module_t *build(const routing_case_t *c, const mx_tensor_t *args, int32_t n) {
  mx_module_t *m = mx_module_create(NULL);
  mx_type_t types[NQ];
  for (int32_t i = 0; i < n; i++) types[i] = args[i].type;
  mx_func_t *f;
  mx_builder_t b;
  int32_t ids[NQ], out = -1;
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, m);
  CHECK_OK(mx_build_func(m, "main", false, types, n, &f, &b, ids));
  CHECK_OK(mx_comp_moe_ex(&cc, &b, ids[0], ids[1], ids + 2, E, c->a.choice_bias ? ids[n - 1] : -1,
                          &c->a, &out));
  mx_comp_ctx_free(&cc);
  CHECK_OK(mx_build_return(&b, &out, 1));
  CHECK_OK(mx_hlo_verify_module(m));
  return m;
}

static void make(mx_tensor_t *t, int32_t rank, const int64_t *dims, double lo, double hi) {
  mx_type_t ty = mx_type_tensor(MX_ELEM_F32, rank, dims);
  CHECK_OK(mx_tensor_alloc(t, &ty));
  for (int64_t i = 0; i < mx_type_numel(&ty); i++)
    mx_tensor_set_f64(t, i, lo + (hi - lo) * urand());
}

static double at(const mx_tensor_t *t, int64_t i) { return mx_tensor_get_f64(t, i); }

// The k best of v[0..n) (ties: the lower index), by sorting an index array.
static void best_k(const double *v, int64_t n, int64_t k, bool *keep) {
  int64_t idx[E];
  for (int64_t i = 0; i < n; i++) idx[i] = i;
  for (int64_t i = 1; i < n; i++)
    for (int64_t j = i; j > 0 && v[idx[j]] > v[idx[j - 1]]; j--) {
      int64_t s = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = s;
    }
  for (int64_t i = 0; i < n; i++) keep[idx[i]] = i < k;
}

// out[t, :] by the rule of composite.h, in double.
static void reference(const routing_case_t *c, const mx_tensor_t *args, double *out) {
  const mx_comp_moe_t *a = &c->a;
  for (int64_t t = 0; t < c->t; t++) {
    double lg[E], s[E], ch[E], mx = -INFINITY, sum = 0;
    for (int64_t e = 0; e < E; e++) {
      lg[e] = 0;
      for (int64_t i = 0; i < H; i++) lg[e] += at(&args[0], t * H + i) * at(&args[1], e * H + i);
      mx = fmax(mx, lg[e]);
    }
    for (int64_t e = 0; e < E; e++) {
      s[e] = a->scoring == MX_MOE_SIGMOID ? 1 / (1 + exp(-lg[e])) : exp(lg[e] - mx);
      sum += s[e];
    }
    for (int64_t e = 0; e < E; e++) {
      if (a->scoring == MX_MOE_SOFTMAX) s[e] /= sum;
      ch[e] = s[e] + (a->choice_bias ? at(&args[NA - 1], e) : 0);
    }
    if (a->n_group > 1) {
      int64_t G = a->n_group, N = E / G;
      double rank[E];
      bool keep_g[E];
      for (int64_t g = 0; g < G; g++) {
        double v[E];
        bool top[E];
        for (int64_t i = 0; i < N; i++) v[i] = ch[g * N + i];
        best_k(v, N, a->group_rank == MX_MOE_GROUP_TOP2_SUM ? 2 : 1, top);
        rank[g] = 0;
        for (int64_t i = 0; i < N; i++)
          if (top[i]) rank[g] += v[i];
      }
      best_k(rank, G, a->topk_group, keep_g);
      for (int64_t e = 0; e < E; e++)
        if (!keep_g[e / N]) ch[e] = -INFINITY;
    }
    bool keep[E];
    best_k(ch, E, a->top_k, keep);
    double w[E], ws = 0;
    for (int64_t e = 0; e < E; e++) {
      w[e] = keep[e] ? s[e] : 0;
      ws += w[e];
    }
    for (int64_t i = 0; i < H; i++) out[t * H + i] = 0;
    for (int64_t e = 0; e < E; e++) {
      if (!keep[e]) continue;
      double we = (a->norm_topk ? w[e] / ws : w[e]) * (a->routed_scale ? a->routed_scale : 1);
      const mx_tensor_t *g = &args[2 + 3 * e], *u = &args[3 + 3 * e], *d = &args[4 + 3 * e];
      double act[F];
      for (int64_t j = 0; j < F; j++) {
        double gv = 0, uv = 0;
        for (int64_t i = 0; i < H; i++) {
          gv += at(&args[0], t * H + i) * at(g, j * H + i);
          uv += at(&args[0], t * H + i) * at(u, j * H + i);
        }
        act[j] = gv / (1 + exp(-gv)) * uv;
      }
      for (int64_t i = 0; i < H; i++) {
        double y = 0;
        for (int64_t j = 0; j < F; j++) y += act[j] * at(d, i * F + j);
        out[t * H + i] += we * y;
      }
    }
  }
}

// The stored triple q[0..per) (f16 scales) of the float weight *w [n, k] in format *qf, and *w's
// values replaced by their dequantization (the rule in double then uses those). Returns per.
static int32_t quantize(const mx_comp_quant_t *qf, mx_tensor_t *w, mx_tensor_t *q) {
  int64_t n = w->type.dims[0], k = w->type.dims[1], sd[2] = {n, k / QG};
  mx_q_mode_t mode = (mx_q_mode_t)qf->mode;
  int bits = (int)qf->bits;
  int64_t wd[2] = {n, mode == MX_Q_INT8 ? k : k * bits / 32};
  mx_type_t wt = mx_type_tensor(mode == MX_Q_INT8 ? MX_ELEM_I8 : MX_ELEM_UI32, 2, wd);
  mx_type_t st = mx_type_tensor(MX_ELEM_F16, 2, sd);
  CHECK_OK(mx_tensor_alloc(&q[0], &wt));
  CHECK_OK(mx_tensor_alloc(&q[1], &st));
  int32_t per = mode == MX_Q_AFFINE ? 3 : 2;
  if (per > 2) CHECK_OK(mx_tensor_alloc(&q[2], &st));
  float row[H];
  for (int64_t r = 0; r < n; r++) {
    for (int64_t i = 0; i < k; i++) row[i] = (float)at(w, r * k + i);
    uint8_t *wq = (uint8_t *)q[0].data + r * (int64_t)(q[0].nbytes / (size_t)n);
    uint16_t *sc = (uint16_t *)q[1].data + r * (k / QG);
    if (mode == MX_Q_INT8) {
      mx_q_int8_row(row, k, QG, MX_ELEM_F16, (int8_t *)wq, sc);
    } else if (mode == MX_Q_INT4) {
      mx_q_int4_row(row, k, QG, MX_ELEM_F16, (uint32_t *)(void *)wq, sc);
    } else {
      mx_q_affine_row(row, k, QG, bits, MX_ELEM_F16, (uint32_t *)(void *)wq, sc,
                      (uint16_t *)q[2].data + r * (k / QG));
    }
    mx_q_dequant_row(mode, bits, k, QG, q[0].data, MX_ELEM_F16, q[1].data,
                     per > 2 ? q[2].data : NULL, r, row);
    for (int64_t i = 0; i < k; i++) mx_tensor_set_f64(w, r * k + i, row[i]);
  }
  return per;
}

static void run_case(const routing_case_t *c) {
  int32_t n = 2 + 3 * E + (c->a.choice_bias ? 1 : 0);
  mx_tensor_t args[NA];
  memset(args, 0, sizeof args);
  int64_t xd[3] = {1, c->t, H}, rd[2] = {E, H}, gd[2] = {F, H}, dd[2] = {H, F}, bd[1] = {E};
  make(&args[0], 3, xd, -1, 1);
  make(&args[1], 2, rd, -1, 1);
  for (int64_t e = 0; e < E; e++)
    for (int j = 0; j < 3; j++) make(&args[2 + 3 * e + j], 2, j == 2 ? dd : gd, -0.5, 0.5);
  if (c->a.choice_bias) make(&args[n - 1], 1, bd, -0.3, 0.3);
  // The graph's arguments: args, or with quantized experts x, router, the triples, [bias].
  mx_tensor_t qargs[NQ], *ga = args;
  int32_t gn = n;
  memset(qargs, 0, sizeof qargs);
  if (c->a.quantized) {
    ga = qargs;
    gn = 2;
    qargs[0] = args[0];
    qargs[1] = args[1];
    for (int32_t i = 0; i < 3 * E; i++) gn += quantize(&c->a.quant, &args[2 + i], &qargs[gn]);
    if (c->a.choice_bias) qargs[gn++] = args[n - 1];
  }
  mx_module_t *m = build(c, ga, gn);
  const mx_func_t *f = mx_module_find_func(m, "main");
  mx_tensor_t ref, got;
  double want[T * H];
  reference(c, args, want);
  CHECK_OK(mx_interp_run(m, f, ga, gn, &ref, NULL));
  double d = 0;
  for (int64_t i = 0; i < c->t * H; i++) d = fmax(d, fabs(at(&ref, i) - want[i]));
  CHECK_MSG(d <= 1e-5, "%s T %lld: |decomposition - rule| %g", c->name, (long long)c->t, d);
  bool w[NQ];
  for (int32_t i = 0; i < gn; i++) w[i] = i > 0;
  // Quantized experts: the exact kernels (the fast ones round the activations to 8 bits).
  mx_cpu_compile_opts_t o = {.args = ga, .is_weight = w, .quant_kernel = MX_CPU_QKERNEL_EXACT};
  mx_cpu_plan_t *p = NULL;
  CHECK_OK(mx_cpu_compile(m, f, &o, &p));
  mx_cpu_plan_stats_t st;
  mx_cpu_plan_stats(p, &st);
  CHECK_MSG(!st.whole_function && st.n_fallback == 0 && st.n_fast == 4,
            "%s: %d fast, %d fallback steps, whole %d", c->name, st.n_fast, st.n_fallback,
            st.whole_function);
  CHECK_OK(mx_tensor_alloc(&got, &f->result_types[0]));
  for (int threads = 1; threads <= 3; threads++) {
    mx_cpu_pool_t *pool = NULL;
    CHECK_OK(mx_cpu_pool_create(threads, &pool));
    memset(got.data, 0xff, got.nbytes);
    CHECK_OK(mx_cpu_plan_run(p, threads > 1 ? pool : NULL, ga, gn, &got));
    double dp = mx_test_max_diff(&got, &ref);
    CHECK_MSG(dp <= 2e-6, "%s T %lld threads %d: |plan - decomposition| %g", c->name,
              (long long)c->t, threads, dp);
    mx_cpu_pool_destroy(pool);
  }
  mx_tensor_free(&got);
  mx_tensor_free(&ref);
  mx_cpu_plan_destroy(p);
  mx_module_destroy(m);
  for (int32_t i = 0; i < n; i++) mx_tensor_free(&args[i]);
  // The triples (x, router and the bias are args' own).
  for (int32_t i = 2; c->a.quantized && i < gn - (c->a.choice_bias ? 1 : 0); i++)
    mx_tensor_free(&qargs[i]);
}

int main(void) {
  const mx_comp_moe_t greedy = {.top_k = K, .routed_scale = 1.5};
  const mx_comp_moe_t grouped = {
      .top_k = K, .n_group = 4, .topk_group = 2, .group_rank = MX_MOE_GROUP_MAX};
  const mx_comp_moe_t v3 = {.top_k = K,
                            .norm_topk = true,
                            .scoring = MX_MOE_SIGMOID,
                            .choice_bias = true,
                            .n_group = 4,
                            .topk_group = 2,
                            .group_rank = MX_MOE_GROUP_TOP2_SUM,
                            .routed_scale = 2.5};
  const mx_comp_moe_t sigmoid_plain = {
      .top_k = 3, .scoring = MX_MOE_SIGMOID, .choice_bias = true, .routed_scale = 0.5};
  mx_comp_moe_t v3_int8 = v3, v3_int4 = v3, v3_q4 = v3;
  v3_int8.quantized = v3_int4.quantized = v3_q4.quantized = true;
  v3_int8.quant = (mx_comp_quant_t){8, QG, MX_QMODE_INT8};
  v3_int4.quant = (mx_comp_quant_t){4, QG, MX_QMODE_INT4};
  v3_q4.quant = (mx_comp_quant_t){4, QG, MX_QMODE_AFFINE};
  const routing_case_t cases[] = {
      {"v2 greedy", greedy, 1},
      {"v2 greedy", greedy, T},
      {"v2 group-limited", grouped, 1},
      {"v2 group-limited", grouped, T},
      {"v3", v3, 1},
      {"v3", v3, T},
      {"sigmoid, bias", sigmoid_plain, T},
      {"v3 int8 experts", v3_int8, 1},
      {"v3 int8 experts", v3_int8, T},
      {"v3 int4 experts", v3_int4, 1},
      {"v3 affine q4 experts", v3_q4, T},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
  return mx_test_finish();
}
