// Quantized-weight kernels of the CPU runtime (src/cpu/kernels_q.h) against an independent
// double-precision reference (weights decoded here from the graph form, f16/bf16 through the
// IR's own float codec), on awkward shapes, every format and scale type and every kernel table
// the machine runs; then CPU plans of the mx.linear / mx.embedding / mx.gated_act composites
// against the reference interpreter running their decompositions.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/fused.h"
#include "cpu/kernels_internal.h"
#include "cpu/kernels_q.h"
#include "cpu/plan_internal.h"
#include "mlxcel/cpu_plan.h"
#include "model/graph_internal.h"
#include "mx_test.h"

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 16);
}
static double urand(double lo, double hi) { return lo + (hi - lo) * (rnd() % 1000001) / 1e6; }

// ---- A random quantized weight in the graph form ----

typedef struct qw {
  mx_cpu_qsrc_t src;
  uint8_t *w;
  uint8_t *s, *b;
  double *ref;  // [n][k] dequantized, double
} qw_t;

static void param_store(mx_elem_type_t et, uint8_t *a, int64_t i, double v) {
  uint64_t bits = mx_float_encode(et, v);
  size_t es = mx_elem_size(et);
  memcpy(a + (size_t)i * es, &bits, es);  // little-endian host: the low bytes
}
static double param_load(mx_elem_type_t et, const uint8_t *a, int64_t i) {
  uint64_t bits = 0;
  size_t es = mx_elem_size(et);
  memcpy(&bits, a + (size_t)i * es, es);
  return mx_float_decode(et, bits);
}

static void qw_make(qw_t *q, int mode, int bits, int64_t n, int64_t k, int64_t g,
                    mx_elem_type_t sdt) {
  memset(q, 0, sizeof *q);
  int64_t G = k / g;
  size_t wb = mode == MX_CPU_Q_INT8 ? (size_t)(n * k) : (size_t)(n * k) * (size_t)bits / 8;
  q->w = calloc(wb + 4, 1);
  q->s = calloc((size_t)(n * G), 4);
  q->b = calloc((size_t)(n * G), 4);
  q->ref = calloc((size_t)(n * k), sizeof *q->ref);
  for (int64_t r = 0; r < n; r++) {
    for (int64_t j = 0; j < G; j++) {
      // Both signs of scales (MLX has negative ones), biases around -s * 2^(bits-1).
      double s = urand(0.002, 0.05) * (rnd() % 3 == 0 ? -1 : 1);
      param_store(sdt, q->s, r * G + j, s);
      param_store(sdt, q->b, r * G + j, -s * (1 << (bits - 1)) + urand(-0.01, 0.01));
    }
    for (int64_t kk = 0; kk < k; kk++) {
      double s = param_load(sdt, q->s, r * G + kk / g), b = param_load(sdt, q->b, r * G + kk / g);
      unsigned u = rnd() % (1u << bits);
      double w;
      if (mode == MX_CPU_Q_INT8) {
        int8_t v = (int8_t)((int)(rnd() % 255) - 127);
        q->w[r * k + kk] = (uint8_t)v;
        w = v * s;
      } else {
        int per = 32 / bits;
        uint32_t *words = (uint32_t *)(void *)q->w;
        words[(r * k + kk) / per] |= (uint32_t)u << (bits * ((r * k + kk) % per));
        w = mode == MX_CPU_Q_INT4 ? ((double)u - 8) * s : u * s + b;
      }
      q->ref[r * k + kk] = w;
    }
  }
  q->src = (mx_cpu_qsrc_t){.mode = mode,
                           .bits = bits,
                           .n = n,
                           .k = k,
                           .group = g,
                           .w = q->w,
                           .sdt = sdt,
                           .scales = q->s,
                           .biases = mode == MX_CPU_Q_AFFINE ? q->b : NULL};
}

static void qw_free(qw_t *q) {
  free(q->w);
  free(q->s);
  free(q->b);
  free(q->ref);
}

// ---- Kernel tests ----

static const mx_cpu_qkernels_t *g_tables[6];
static int g_n_tables;

static void collect_tables(void) {
  g_tables[g_n_tables++] = &mx_cpu_qkernels_scalar;
#if defined(__x86_64__)
  if (mx_cpu_kernels_get(MX_CPU_ISA_AVX2)) g_tables[g_n_tables++] = &mx_cpu_qkernels_avx2;
  if (mx_cpu_kernels_get(MX_CPU_ISA_AVX512)) {
    g_tables[g_n_tables++] = &mx_cpu_qkernels_avx512;
    if (mx_cpu_features()->avx512vnni) {
      g_tables[g_n_tables++] = &mx_cpu_qkernels_avx512_vnni;
      g_tables[g_n_tables++] = &mx_cpu_qkernels_avx512_vnni16;
      if (mx_cpu_features()->amx_int8) g_tables[g_n_tables++] = &mx_cpu_qkernels_avx512_vnni16_amx;
    }
  }
#endif
}

static const mx_cpu_kernels_t *f32_table_for(const mx_cpu_qkernels_t *qk) {
#if defined(__x86_64__)
  if (qk == &mx_cpu_qkernels_avx2) return mx_cpu_kernels_get(MX_CPU_ISA_AVX2);
  if (qk == &mx_cpu_qkernels_avx512 || qk == &mx_cpu_qkernels_avx512_vnni ||
      qk == &mx_cpu_qkernels_avx512_vnni16 || qk == &mx_cpu_qkernels_avx512_vnni16_amx)
    return mx_cpu_kernels_get(MX_CPU_ISA_AVX512);
#endif
  (void)qk;
  return mx_cpu_kernels_get(MX_CPU_ISA_SCALAR);
}

// The VNNI paths' documented error bound for row r: sum_j |s_j| dx_j / 2 sum_k |u_k - z| (plus
// the exact path's rounding), with dx_j = max |x| over the group / range (127 for the int8
// activations of VNNI, 32639 for the 16-bit ones of VNNI16).
static double vnni_bound(const qw_t *q, int64_t r, const float *x, double range) {
  const mx_cpu_qsrc_t *s = &q->src;
  int64_t G = s->k / s->group;
  double z = 1 << (s->bits - 1), bound = 0;
  for (int64_t j = 0; j < G; j++) {
    double amax = 0, su = 0;
    double sc = param_load(s->sdt, q->s, r * G + j);
    for (int64_t kk = j * s->group; kk < (j + 1) * s->group; kk++) {
      amax = fmax(amax, fabs(x[kk]));
      // |u - z| = |w - (b + z s)| / |s| for affine; |q| for int8; |u - 8| for int4.
      double wv = q->ref[r * s->k + kk];
      double c = s->mode == MX_CPU_Q_AFFINE ? param_load(s->sdt, q->b, r * G + j) + z * sc : 0;
      su += fabs((wv - c) / sc);
    }
    bound += fabs(sc) * amax / range / 2.0 * su;
  }
  return bound * 1.0001;
}

static void check_gemv(const qw_t *q, const mx_cpu_qkernels_t *qk, const char *label) {
  const mx_cpu_qsrc_t *s = &q->src;
  mx_cpu_qpacked_t *p = NULL;
  CHECK_OK(mx_cpu_qpack(f32_table_for(qk), qk, NULL, s, &p));
  if (!p) return;
  float *x = malloc((size_t)s->k * sizeof *x), *y = malloc((size_t)s->n * sizeof *y);
  float *y3 = malloc((size_t)s->n * sizeof *y3);
  for (int64_t i = 0; i < s->k; i++) x[i] = (float)urand(-1, 1) * (i % 17 == 0 ? 8.0f : 1.0f);
  mx_cpu_qgemv(p, x, y, 0, 1);
  for (int t = 0; t < 3; t++) mx_cpu_qgemv(p, x, y3, t, 3);  // any split: the same bits
  CHECK_MSG(memcmp(y, y3, (size_t)s->n * sizeof *y) == 0, "%s: 1 vs 3 threads differ", label);
  // Work sharing (one counter, threads taking turns as a pool would interleave them).
  mx_cpu_work_t work;
  mx_cpu_work_reset(&work);
  memset(y3, 0xff, (size_t)s->n * sizeof *y3);
  for (int t = 0; t < 3; t++) mx_cpu_qgemv_dyn(p, x, y3, &work, t, 3);
  CHECK_MSG(memcmp(y, y3, (size_t)s->n * sizeof *y) == 0, "%s: work-shared GEMV differs", label);
  double worst = 0;
  for (int64_t r = 0; r < s->n; r++) {
    double ref = 0, mag = 0;
    int64_t G = s->k / s->group;
    double o = s->mode == MX_CPU_Q_INT8 ? 128 : s->mode == MX_CPU_Q_INT4 ? 8 : 0;
    for (int64_t kk = 0; kk < s->k; kk++) {
      ref += q->ref[r * s->k + kk] * x[kk];
      // The exact path sums u x and o xsum (and b xsum) separately: its rounding scales with
      // (|s| (2^bits + o) + |b|) |x|, not with |w x|.
      double sc = fabs(param_load(s->sdt, q->s, r * G + kk / s->group));
      double bb = s->biases ? fabs(param_load(s->sdt, q->b, r * G + kk / s->group)) : 0;
      mag += (sc * ((1 << s->bits) + o) + bb) * fabs(x[kk]);
    }
    double tol = 4.0 * (double)(s->group + 2) * 0x1p-24 * mag;
#if defined(__x86_64__)
    if (qk == &mx_cpu_qkernels_avx512_vnni) tol += vnni_bound(q, r, x, 127.0);
    if (qk == &mx_cpu_qkernels_avx512_vnni16 || qk == &mx_cpu_qkernels_avx512_vnni16_amx)
      tol += vnni_bound(q, r, x, 32639.0);
#endif
    double e = fabs((double)y[r] - ref);
    if (e / tol > worst) worst = e / tol;
  }
  CHECK_MSG(worst <= 1.0, "%s: gemv error %.3g of the tolerance", label, worst);
  free(x), free(y), free(y3);
  mx_cpu_qpacked_destroy(p);
}

static void check_gemm(const qw_t *q, const mx_cpu_qkernels_t *qk, int64_t m, const char *label) {
  const mx_cpu_qsrc_t *s = &q->src;
  mx_cpu_qpacked_t *p = NULL;
  CHECK_OK(mx_cpu_qpack(f32_table_for(qk), qk, NULL, s, &p));
  if (!p) return;
  int64_t ldx = s->k + 3, ldy = s->n + 5;
  float *x = malloc((size_t)(m * ldx) * sizeof *x), *y = calloc((size_t)(m * ldy), sizeof *y);
  float *y2 = calloc((size_t)(m * ldy), sizeof *y2);
  for (int64_t i = 0; i < m * ldx; i++) x[i] = (float)urand(-1, 1);
  mx_cpu_qgemm(p, x, ldx, y, ldy, m, 0, 1);
  for (int t = 0; t < 4; t++) mx_cpu_qgemm(p, x, ldx, y2, ldy, m, t, 4);
  bool same = true;
  for (int64_t i = 0; i < m; i++)
    same = same && memcmp(y + i * ldy, y2 + i * ldy, (size_t)s->n * sizeof *y) == 0;
  CHECK_MSG(same, "%s: gemm 1 vs 4 threads differ", label);
  // An integer prefill (VNNI16) computes each row as the GEMV does: the same bits.
  if (qk->gemm) {
    for (int64_t i = 0; i < m && same; i++) {
      mx_cpu_qgemv(p, x + i * ldx, y2, 0, 1);
      same = memcmp(y + i * ldy, y2, (size_t)s->n * sizeof *y) == 0;
      CHECK_MSG(same, "%s m=%lld: gemm row %lld differs from its gemv", label, (long long)m,
                (long long)i);
    }
  }
  double worst = 0;
  for (int64_t i = 0; i < m; i++) {
    for (int64_t r = 0; r < s->n; r++) {
      double ref = 0, mag = 0;
      for (int64_t kk = 0; kk < s->k; kk++) {
        ref += q->ref[r * s->k + kk] * x[i * ldx + kk];
        mag += fabs(q->ref[r * s->k + kk] * x[i * ldx + kk]);
      }
      double tol = 4.0 * (double)(s->k + 4) * 0x1p-24 * mag + 1e-30;
#if defined(__x86_64__)
      if (qk->gemm) {  // 16-bit activations, the GEMV's arithmetic
        double o = s->mode == MX_CPU_Q_INT8 ? 128 : s->mode == MX_CPU_Q_INT4 ? 8 : 0, mq = 0;
        int64_t G = s->k / s->group;
        for (int64_t kk = 0; kk < s->k; kk++) {
          double sc = fabs(param_load(s->sdt, q->s, r * G + kk / s->group));
          double bb = s->biases ? fabs(param_load(s->sdt, q->b, r * G + kk / s->group)) : 0;
          mq += (sc * ((1 << s->bits) + o) + bb) * fabs(x[i * ldx + kk]);
        }
        tol = 4.0 * (double)(s->group + 2) * 0x1p-24 * mq + vnni_bound(q, r, x + i * ldx, 32639.0);
      }
#endif
      double e = fabs((double)y[i * ldy + r] - ref);
      if (e / tol > worst) worst = e / tol;
    }
  }
  CHECK_MSG(worst <= 1.0, "%s m=%lld: gemm error %.3g of the tolerance", label, (long long)m,
            worst);
  free(x), free(y), free(y2);
  mx_cpu_qpacked_destroy(p);
}

// Embedding rows: the decomposition's f32 arithmetic exactly.
static void check_embed(const qw_t *q, const char *label) {
  const mx_cpu_qsrc_t *s = &q->src;
  int32_t ids[5] = {0, (int32_t)s->n - 1, (int32_t)(s->n / 2), 0, (int32_t)s->n};
  float *out = malloc((size_t)(5 * s->k) * sizeof *out);
  for (int t = 0; t < 2; t++) mx_cpu_qembed(s, ids, 5, out, t, 2);
  bool ok = true;
  int64_t G = s->k / s->group;
  for (int i = 0; i < 5; i++) {
    for (int64_t kk = 0; kk < s->k; kk++) {
      float want = 0.0f;
      if (ids[i] < s->n) {
        int64_t r = ids[i];
        float sc = (float)param_load(s->sdt, q->s, r * G + kk / s->group);
        float bi = (float)param_load(s->sdt, q->b, r * G + kk / s->group);
        if (s->mode == MX_CPU_Q_INT8) {
          want = (float)(int8_t)q->w[r * s->k + kk] * sc;
        } else {
          int per = 32 / s->bits;
          uint32_t word = ((const uint32_t *)(const void *)q->w)[(r * s->k + kk) / per];
          float u = (float)((word >> (s->bits * ((r * s->k + kk) % per))) & ((1u << s->bits) - 1));
          want = s->mode == MX_CPU_Q_INT4 ? (u - 8.0f) * sc : u * sc + bi;
        }
      }
      ok = ok && out[i * s->k + kk] == want;
    }
  }
  CHECK_MSG(ok, "%s: embedding rows differ from the decomposition", label);
  free(out);
}

static void test_kernels(void) {
  collect_tables();
  static const struct {
    int mode, bits;
  } fmts[] = {{MX_CPU_Q_INT8, 8}, {MX_CPU_Q_INT4, 4}, {MX_CPU_Q_AFFINE, 4}, {MX_CPU_Q_AFFINE, 8}};
  static const struct {
    int64_t n, k, g;
  } shapes[] = {{1, 32, 32},   {17, 96, 32}, {50, 128, 64}, {33, 384, 128},
                {16, 320, 32}, {20, 192, 96}};  // g 96: the 4-bit loop's generic instance
  static const mx_elem_type_t sdts[] = {MX_ELEM_F16, MX_ELEM_F32, MX_ELEM_BF16};
  for (size_t f = 0; f < 4; f++) {
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
      for (size_t d = 0; d < 3; d++) {
        qw_t q;
        qw_make(&q, fmts[f].mode, fmts[f].bits, shapes[sh].n, shapes[sh].k, shapes[sh].g, sdts[d]);
        CHECK(mx_cpu_qsrc_ok(&q.src));
        char label[160];
        snprintf(label, sizeof label, "mode %d bits %d %lldx%lld g%lld %s", fmts[f].mode,
                 fmts[f].bits, (long long)shapes[sh].n, (long long)shapes[sh].k,
                 (long long)shapes[sh].g, mx_elem_name(sdts[d]));
        check_embed(&q, label);
        for (int t = 0; t < g_n_tables; t++) {
          char l2[200];
          snprintf(l2, sizeof l2, "%s [%s]", label, g_tables[t]->name);
          check_gemv(&q, g_tables[t], l2);
          check_gemm(&q, g_tables[t], 5, l2);
          if (sh == 2) check_gemm(&q, g_tables[t], 29, l2);
        }
        qw_free(&q);
      }
    }
  }
  // What cannot be packed is refused (the plan then runs the decomposition).
  qw_t q;
  qw_make(&q, MX_CPU_Q_INT8, 8, 4, 64, 64, MX_ELEM_F16);
  q.src.group = 16;
  CHECK(!mx_cpu_qsrc_ok(&q.src));
  q.src.group = 64;
  q.src.biases = q.b;  // int8 has no biases
  CHECK(!mx_cpu_qsrc_ok(&q.src));
  mx_cpu_qpacked_t *p = NULL;
  CHECK(mx_cpu_qpack(mx_cpu_kernels_best(), &mx_cpu_qkernels_scalar, NULL, &q.src, &p) ==
            MX_ERR_INVALID_ARG &&
        p == NULL);
  qw_free(&q);
}

// The integer prefill's blocking at larger shapes: the AMX kernel prepares the activations in
// chunks of 16 * 32768 / k rows and unpacks / streams the weights in blocks of
// 256 KiB / (16 k) panels, so k 8192 gives chunks of 64 rows (70 rows: two, the second
// partial) and blocks of 2 panels (48 rows: two, the second one panel), and k 32768 chunks of
// 16 rows and blocks of one panel. Each row must still equal its GEMV bit for bit (check_gemm).
static void test_gemm_blocking(void) {
  static const struct {
    int mode, bits;
    int64_t n, k, g, m;
    mx_elem_type_t sdt;
  } cases[] = {
      {MX_CPU_Q_INT4, 4, 48, 8192, 32, 70, MX_ELEM_F16},
      {MX_CPU_Q_INT8, 8, 48, 8192, 128, 70, MX_ELEM_F32},
      {MX_CPU_Q_AFFINE, 4, 48, 8192, 64, 70, MX_ELEM_BF16},
      {MX_CPU_Q_AFFINE, 8, 48, 8192, 32, 70, MX_ELEM_F16},
      {MX_CPU_Q_INT4, 4, 20, 32768, 32, 20, MX_ELEM_F16},
      // The AVX-512 VNNI16 GEMM: chunks of 4 * 32768 / k rows of x in multiples of 4 (k 2560:
      // 48, so 51 rows end with a chunk of 3, a block narrower than 4 rows) and blocks of
      // 256 KiB / (16 k bits / 8) panels (8-bit: 6, so 117 outputs are blocks of 6 and 2
      // panels, the last one partial; 4-bit: 12, one block).
      {MX_CPU_Q_INT8, 8, 117, 2560, 64, 51, MX_ELEM_F16},
      {MX_CPU_Q_AFFINE, 4, 117, 2560, 32, 51, MX_ELEM_F32},
      // 260 rows: at 4 threads (check_gemm) its threads split the rows (65 each: 16 blocks of
      // 4 and one of 1), not the panels (gemm_split_rows from 64 rows per thread).
      {MX_CPU_Q_INT4, 4, 40, 256, 32, 260, MX_ELEM_F16},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    qw_t q;
    qw_make(&q, cases[c].mode, cases[c].bits, cases[c].n, cases[c].k, cases[c].g, cases[c].sdt);
    for (int t = 0; t < g_n_tables; t++) {
      if (!g_tables[t]->gemm) continue;  // the dequantizing GEMM has no blocking of its own
      char label[200];
      snprintf(label, sizeof label, "blocking case %zu [%s]", c, g_tables[t]->name);
      check_gemm(&q, g_tables[t], cases[c].m, label);
    }
    qw_free(&q);
  }
}

// ---- Plans of the composites vs the interpreter ----

typedef struct graph {
  mx_module_t *m;
  mx_func_t *f;
  mx_tensor_t args[6];
  bool w[6];
  int32_t n;
} graph_t;

static void bind_weight(graph_t *g, int32_t i, const void *data, const mx_type_t *t) {
  g->args[i].type = *t;
  g->args[i].data = (uint8_t *)(uintptr_t)data;
  g->args[i].nbytes = mx_type_nbytes(t);
  g->w[i] = true;
}

// @main(x [1, M, K] f32 | tokens [1, M] i32, w, s[, b]) -> mx.linear / mx.embedding, then (for
// linear) mx.gated_act of the result with itself.
static void build_graph(graph_t *g, const qw_t *q, int64_t M, bool embed) {
  const mx_cpu_qsrc_t *s = &q->src;
  memset(g, 0, sizeof *g);
  g->m = mx_module_create(NULL);
  int64_t G = s->k / s->group;
  int64_t kw = s->mode == MX_CPU_Q_INT8 ? s->k : s->k * s->bits / 32;
  int64_t xd[3] = {1, M, s->k}, td[2] = {1, M}, wd[2] = {s->n, kw}, sd[2] = {s->n, G};
  mx_type_t types[4] = {
      embed ? mx_type_tensor(MX_ELEM_I32, 2, td) : mx_type_tensor(MX_ELEM_F32, 3, xd),
      mx_type_tensor(s->mode == MX_CPU_Q_INT8 ? MX_ELEM_I8 : MX_ELEM_UI32, 2, wd),
      mx_type_tensor(s->sdt, 2, sd), mx_type_tensor(s->sdt, 2, sd)};
  g->n = s->mode == MX_CPU_Q_AFFINE ? 4 : 3;
  mx_builder_t b;
  int32_t ids[4], out = -1;
  CHECK_OK(mx_build_func(g->m, "main", false, types, g->n, &g->f, &b, ids));
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, g->m);
  mx_wspec_t spec = {.name = "w",
                     .qmode = s->mode,
                     .qbits = s->bits,
                     .qgroup = (int32_t)s->group,
                     .qn = s->n,
                     .qk = s->k};
  int32_t bi = g->n == 4 ? ids[3] : -1;
  if (embed) {
    CHECK_OK(mx_comp_embedding_q(&cc, &b, &spec, ids[0], ids[1], ids[2], bi, &out));
  } else {
    int32_t y = -1;
    CHECK_OK(mx_comp_linear_q(&cc, &b, &spec, ids[0], ids[1], ids[2], bi, &y));
    CHECK_OK(mx_comp_gated_act(&cc, &b, y, y, "silu", &out));
  }
  CHECK_OK(mx_build_return(&b, &out, 1));
  mx_comp_ctx_free(&cc);
  CHECK_OK(mx_hlo_verify_module(g->m));
  CHECK_OK(mx_tensor_alloc(&g->args[0], &types[0]));
  for (int64_t i = 0; i < mx_type_numel(&types[0]); i++) {
    if (embed)
      mx_tensor_set_i64(&g->args[0], i, (int64_t)(rnd() % (uint32_t)s->n));
    else
      mx_tensor_set_f64(&g->args[0], i, urand(-1, 1));
  }
  bind_weight(g, 1, q->w, &types[1]);
  bind_weight(g, 2, q->s, &types[2]);
  if (g->n == 4) bind_weight(g, 3, q->b, &types[3]);
}

// Plan vs interpreter with the quantized decode kernels `qk`; returns the max |diff| relative to
// max(1, |ref|).
static double plan_vs_interp(graph_t *g, int threads, mx_cpu_qkernel_t qk, bool *all_fast) {
  mx_tensor_t ref, got;
  memset(&ref, 0, sizeof ref);
  CHECK_OK(mx_interp_run(g->m, g->f, g->args, g->n, &ref, NULL));
  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(threads, &pool));
  mx_cpu_compile_opts_t o = {.args = g->args, .is_weight = g->w, .pool = pool, .quant_kernel = qk};
  mx_cpu_plan_t *p = NULL;
  CHECK_OK(mx_cpu_compile(g->m, g->f, &o, &p));
  double md = INFINITY;
  if (p && ref.data) {
    mx_cpu_plan_stats_t st;
    mx_cpu_plan_stats(p, &st);
    *all_fast = st.n_fallback == 0;
    CHECK_OK(mx_tensor_alloc(&got, &g->f->result_types[0]));
    CHECK_OK(mx_cpu_plan_run(p, pool, g->args, g->n, &got));
    md = 0;
    for (int64_t i = 0; i < mx_type_numel(&got.type); i++) {
      double r = mx_tensor_get_f64(&ref, i), d = fabs(mx_tensor_get_f64(&got, i) - r);
      d /= fabs(r) > 1 ? fabs(r) : 1;
      if (d > md || d != d) md = d;
    }
    mx_tensor_free(&got);
  }
  mx_cpu_plan_destroy(p);
  mx_cpu_pool_destroy(pool);
  mx_tensor_free(&ref);
  return md;
}

static void test_plans(void) {
  static const struct {
    int mode, bits;
    int64_t n, k, g, m;
    mx_elem_type_t sdt;
  } cases[] = {
      {MX_CPU_Q_INT8, 8, 37, 96, 32, 1, MX_ELEM_F16},
      {MX_CPU_Q_INT8, 8, 37, 96, 32, 7, MX_ELEM_F32},
      {MX_CPU_Q_INT4, 4, 50, 128, 64, 1, MX_ELEM_F16},
      {MX_CPU_Q_INT4, 4, 50, 128, 64, 13, MX_ELEM_F16},
      {MX_CPU_Q_AFFINE, 4, 19, 256, 128, 1, MX_ELEM_BF16},
      {MX_CPU_Q_AFFINE, 8, 64, 64, 32, 3, MX_ELEM_F16},
      {MX_CPU_Q_AFFINE, 4, 64, 64, 32, 2, MX_ELEM_F32},
  };
  for (int kern = 0; kern < 2; kern++) {
    bool vnni = kern == 1;
#if defined(__x86_64__)
    if (vnni && !(mx_cpu_features()->avx512vnni && mx_cpu_kernels_get(MX_CPU_ISA_AVX512))) break;
#else
    if (vnni) break;
#endif
    mx_cpu_qkernel_t qk = vnni ? MX_CPU_QKERNEL_VNNI : MX_CPU_QKERNEL_EXACT;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      qw_t q;
      qw_make(&q, cases[c].mode, cases[c].bits, cases[c].n, cases[c].k, cases[c].g, cases[c].sdt);
      for (int e = 0; e < 2; e++) {
        graph_t g;
        build_graph(&g, &q, cases[c].m, e == 1);
        bool fast = false;
        double d = plan_vs_interp(&g, c % 2 ? 3 : 1, qk, &fast);
        // Exact kernels: rounding level. VNNI (decode rows only; prefill GEMM is exact): the
        // activation rounding (its rigorous bound is checked by test_kernels), here ~1e-2
        // relative on y, amplified by silu(y) * y to ~6e-2.
        double tol = (vnni && cases[c].m == 1 && e == 0) ? 0.15 : 2e-5;
        CHECK_MSG(d <= tol, "case %zu %s %s: plan vs interpreter %.3g", c,
                  e ? "embedding" : "linear", mx_cpu_qkernel_name(qk), d);
        CHECK_MSG(fast, "case %zu %s: the plan fell back to the interpreter", c,
                  e ? "embedding" : "linear");
        mx_tensor_free(&g.args[0]);
        mx_module_destroy(g.m);
      }
      qw_free(&q);
    }
  }
}

// ---- A gated MLP's gate + up + activation fused into one decode step ----

// @main(x [1, 1, K], wg, sg[, bg], wu, su[, bu]) -> mx.gated_act(linear(x, g), linear(x, u)).
static void build_gated(mx_module_t **mp, mx_func_t **fp, mx_tensor_t *args, bool *isw,
                        int32_t *n_args, const qw_t *qg, const qw_t *qu) {
  const mx_cpu_qsrc_t *s = &qg->src;
  *mp = mx_module_create(NULL);
  int64_t G = s->k / s->group, kw = s->mode == MX_CPU_Q_INT8 ? s->k : s->k * s->bits / 32;
  int64_t xd[3] = {1, 1, s->k}, wd[2] = {s->n, kw}, sd[2] = {s->n, G};
  mx_type_t wt = mx_type_tensor(s->mode == MX_CPU_Q_INT8 ? MX_ELEM_I8 : MX_ELEM_UI32, 2, wd),
            st = mx_type_tensor(s->sdt, 2, sd);
  bool aff = s->mode == MX_CPU_Q_AFFINE;
  int32_t per = aff ? 3 : 2, n = 1 + 2 * per;
  mx_type_t types[7];
  types[0] = mx_type_tensor(MX_ELEM_F32, 3, xd);
  for (int32_t j = 0; j < 2; j++) {
    types[1 + j * per] = wt;
    types[2 + j * per] = st;
    if (aff) types[3 + j * per] = st;
  }
  mx_builder_t b;
  int32_t ids[7], y[2], out = -1;
  CHECK_OK(mx_build_func(*mp, "main", false, types, n, fp, &b, ids));
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, *mp);
  mx_wspec_t spec = {.name = "w",
                     .qmode = s->mode,
                     .qbits = s->bits,
                     .qgroup = (int32_t)s->group,
                     .qn = s->n,
                     .qk = s->k};
  for (int32_t j = 0; j < 2; j++)
    CHECK_OK(mx_comp_linear_q(&cc, &b, &spec, ids[0], ids[1 + j * per], ids[2 + j * per],
                              aff ? ids[3 + j * per] : -1, &y[j]));
  CHECK_OK(mx_comp_gated_act(&cc, &b, y[0], y[1], "silu", &out));
  CHECK_OK(mx_build_return(&b, &out, 1));
  mx_comp_ctx_free(&cc);
  CHECK_OK(mx_hlo_verify_module(*mp));
  memset(args, 0, 7 * sizeof *args);
  memset(isw, 0, 7 * sizeof *isw);
  CHECK_OK(mx_tensor_alloc(&args[0], &types[0]));
  for (int64_t i = 0; i < s->k; i++) mx_tensor_set_f64(&args[0], i, urand(-1, 1));
  for (int32_t j = 0; j < 2; j++) {
    const qw_t *q = j ? qu : qg;
    const void *data[3] = {q->w, q->s, q->b};
    for (int32_t i = 0; i < per; i++) {
      mx_tensor_t *a = &args[1 + j * per + i];
      a->type = types[1 + j * per + i];
      a->data = (uint8_t *)(uintptr_t)data[i];
      a->nbytes = mx_type_nbytes(&a->type);
      isw[1 + j * per + i] = true;
    }
  }
  *n_args = n;
}

// The plan of build_gated has one ST_QGATED_UP step and no separate qgemv or activation; its
// result equals the unfused kernels' (two mx_cpu_qgemv, then mx_cpu_gated_act_f32) on the same
// packed weights bit for bit, for 1-4 threads, and the interpreter's decomposition within the
// kernels' tolerance. Shapes: a partial last panel, one chunk and several chunks of panels.
static void test_gated_fusion(void) {
  static const struct {
    int mode, bits;
    int64_t n, k, g;
    mx_elem_type_t sdt;
  } cases[] = {
      {MX_CPU_Q_INT4, 4, 50, 128, 64, MX_ELEM_F16},
      {MX_CPU_Q_INT8, 8, 37, 96, 32, MX_ELEM_F32},
      {MX_CPU_Q_AFFINE, 4, 19, 256, 128, MX_ELEM_BF16},
      {MX_CPU_Q_INT4, 4, 1000, 512, 64, MX_ELEM_F32},  // several 64 KiB chunks
      {MX_CPU_Q_INT8, 8, 1200, 96, 32, MX_ELEM_F16},
  };
  for (int kern = 0; kern < 2; kern++) {
    mx_cpu_qkernel_t qk = kern ? MX_CPU_QKERNEL_AUTO : MX_CPU_QKERNEL_EXACT;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      qw_t qg, qu;
      qw_make(&qg, cases[c].mode, cases[c].bits, cases[c].n, cases[c].k, cases[c].g, cases[c].sdt);
      qw_make(&qu, cases[c].mode, cases[c].bits, cases[c].n, cases[c].k, cases[c].g, cases[c].sdt);
      mx_module_t *m = NULL;
      mx_func_t *f = NULL;
      mx_tensor_t args[7], ref;
      bool isw[7];
      int32_t na = 0;
      build_gated(&m, &f, args, isw, &na, &qg, &qu);
      memset(&ref, 0, sizeof ref);
      CHECK_OK(mx_interp_run(m, f, args, na, &ref, NULL));
      int64_t n = cases[c].n;
      float *want = malloc((size_t)n * 3 * sizeof(float)), *gate = want + n, *up = want + 2 * n;
      for (int threads = 1; threads <= 4; threads++) {
        mx_cpu_pool_t *pool = NULL;
        CHECK_OK(mx_cpu_pool_create(threads, &pool));
        mx_cpu_compile_opts_t o = {
            .args = args, .is_weight = isw, .pool = pool, .quant_kernel = qk};
        mx_cpu_plan_t *p = NULL;
        CHECK_OK(mx_cpu_compile(m, f, &o, &p));
        if (!p) {
          mx_cpu_pool_destroy(pool);
          continue;
        }
        const mx_step_t *fs = NULL;
        int n_other = 0;
        for (int32_t i = 0; i < p->n_steps; i++) {
          if (p->steps[i].kind == ST_QGATED_UP)
            fs = &p->steps[i];
          else if (p->steps[i].kind == ST_QGEMM || p->steps[i].kind == ST_GATED_ACT)
            n_other++;
        }
        CHECK_MSG(fs && n_other == 0, "case %zu: %s fused step, %d unfused qgemv / act steps", c,
                  fs ? "a" : "no", n_other);
        mx_tensor_t got;
        CHECK_OK(mx_tensor_alloc(&got, &f->result_types[0]));
        CHECK_OK(mx_cpu_plan_run(p, pool, args, na, &got));
        if (fs) {  // the unfused path on the plan's own packed weights
          const float *x = (const float *)args[0].data;
          mx_cpu_qgemv(fs->qw, x, gate, 0, 1);
          mx_cpu_qgemv(fs->qw2, x, up, 0, 1);
          mx_cpu_gated_act_f32(gate, up, want, n, 0, 0, 1);
          CHECK_MSG(memcmp(want, got.data, (size_t)n * sizeof(float)) == 0,
                    "case %zu %s, %d threads: fused gate/up/act differs from the unfused kernels",
                    c, mx_cpu_qkernel_name(qk), threads);
        }
        double md = 0;
        for (int64_t i = 0; i < n; i++) {
          double r = mx_tensor_get_f64(&ref, i), d = fabs(mx_tensor_get_f64(&got, i) - r);
          d /= fabs(r) > 1 ? fabs(r) : 1;
          if (d > md || d != d) md = d;
        }
        // The bit-exact check above is the fusion's contract; this one catches a wrong pairing
        // (gate and up swapped: errors of order 1). Exact kernels: the rounding of gate and up
        // (relative to the size of their terms, not of their value) times the other factor,
        // which with hundreds of rows reaches ~3e-5 where up nearly cancels; VNNI16 (AUTO on a
        // VNNI machine): the activation rounding, as test_plans.
        double tol = kern ? 0.15 : 1e-3;
        CHECK_MSG(md <= tol, "case %zu %s, %d threads: fused plan vs interpreter %.3g", c,
                  mx_cpu_qkernel_name(qk), threads, md);
        mx_tensor_free(&got);
        mx_cpu_plan_destroy(p);
        mx_cpu_pool_destroy(pool);
      }
      free(want);
      mx_tensor_free(&ref);
      mx_tensor_free(&args[0]);
      mx_module_destroy(m);
      qw_free(&qg);
      qw_free(&qu);
    }
  }
}

// The kernel choice's names parse back to it; anything else is refused, by name and by value.
static void test_choice(void) {
  for (int k = MX_CPU_QKERNEL_AUTO; k <= MX_CPU_QKERNEL_VNNI; k++) {
    mx_cpu_qkernel_t got = MX_CPU_QKERNEL_AUTO;
    CHECK_OK(mx_cpu_qkernel_parse(mx_cpu_qkernel_name((mx_cpu_qkernel_t)k), "k", &got));
    CHECK(got == (mx_cpu_qkernel_t)k);
  }
  mx_cpu_qkernel_t got = MX_CPU_QKERNEL_AUTO;
  CHECK(mx_cpu_qkernel_parse("fast", "MLXCEL_QUANT_KERNEL", &got) == MX_ERR_INVALID_ARG);
  CHECK_MSG(strstr(mx_error_message(), "MLXCEL_QUANT_KERNEL: 'fast' is not a quantized kernel"),
            "message: %s", mx_error_message());
  qw_t q;
  qw_make(&q, MX_CPU_Q_INT8, 8, 37, 96, 32, MX_ELEM_F16);
  graph_t g;
  build_graph(&g, &q, 1, false);
  mx_cpu_compile_opts_t o = {.args = g.args, .is_weight = g.w, .quant_kernel = (mx_cpu_qkernel_t)9};
  mx_cpu_plan_t *p = NULL;
  CHECK(mx_cpu_compile(g.m, g.f, &o, &p) == MX_ERR_INVALID_ARG && p == NULL);
  mx_tensor_free(&g.args[0]);
  mx_module_destroy(g.m);
  qw_free(&q);
}

int main(void) {
  test_kernels();
  test_gemm_blocking();
  test_plans();
  test_gated_fusion();
  test_choice();
  return mx_test_finish();
}
