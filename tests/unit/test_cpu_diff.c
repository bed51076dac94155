// The divergence finder (mlxcel/cpu_diff.h) and the plan debugging hooks it rests on
// (keep_values / mx_cpu_plan_value, test_perturb_op, the interpreter's on_op hook): a clean
// graph reports no divergence, a perturbed op is named with its worst element, and an op
// downstream of it is never reported first.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/cpu_diff.h"
#include "mx_test.h"

static const char *kGraph =
    "func.func @main(%w: tensor<24x16xf32>, %v: tensor<16x24xf32>, %x: tensor<5x16xf32>)"
    " -> (tensor<5x16xf32>, tensor<5x24xf32>) {\n"
    "  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] :"
    " (tensor<5x16xf32>, tensor<24x16xf32>) -> tensor<5x24xf32>\n"
    "  %1 = stablehlo.tanh %0 : tensor<5x24xf32>\n"
    "  %2 = stablehlo.add %1, %0 : tensor<5x24xf32>\n"
    "  %3 = stablehlo.dot_general %2, %v, contracting_dims = [1] x [1] :"
    " (tensor<5x24xf32>, tensor<16x24xf32>) -> tensor<5x16xf32>\n"
    "  %4 = stablehlo.add %3, %x : tensor<5x16xf32>\n"
    "  return %4, %2 : tensor<5x16xf32>, tensor<5x24xf32>\n"
    "}\n";

static void fill(mx_tensor_t *t, uint32_t seed) {
  float *p = (float *)t->data;
  int64_t n = mx_type_numel(&t->type);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)((seed >> 9) % 2001) / 1000.0f - 1.0f;
  }
}

typedef struct on_op_log {
  int32_t n;
  const mx_op_t *ops[16];
} on_op_log_t;

static void log_op(void *user, const mx_func_t *f, const mx_op_t *op,
                   const mx_tensor_t *const *results) {
  (void)f;
  on_op_log_t *l = user;
  if (l->n < 16 && results[0] && results[0]->data) l->ops[l->n++] = op;
}

int main(void) {
  mx_module_t *m = NULL;
  CHECK_OK(mx_hlo_parse(kGraph, strlen(kGraph), NULL, &m));
  if (!m) return mx_test_finish();
  mx_func_t *f = mx_module_find_func(m, "main");
  mx_tensor_t args[3];
  bool w[3] = {true, true, false};
  for (int32_t i = 0; i < 3; i++) {
    CHECK_OK(mx_tensor_alloc(&args[i], mx_value_type(f, f->body->args[i])));
    fill(&args[i], 17u * (uint32_t)i + 3u);
  }
  const mx_op_t *const *ops = (const mx_op_t *const *)f->body->ops;

  // The interpreter's hook sees every op of the body once, in order (not the return).
  on_op_log_t log = {0};
  mx_interp_opts_t io = {.on_op = log_op, .on_op_user = &log};
  mx_tensor_t res[2];
  memset(res, 0, sizeof res);
  CHECK_OK(mx_interp_run(m, f, args, 3, res, &io));
  CHECK(log.n == 5);
  for (int32_t i = 0; i < log.n && i < 5; i++) CHECK(log.ops[i] == ops[i]);
  mx_tensor_free(&res[0]);
  mx_tensor_free(&res[1]);

  // mx_cpu_plan_value needs keep_values and a completed run.
  mx_cpu_compile_opts_t co = {.args = args, .is_weight = w};
  mx_cpu_plan_t *p = NULL;
  CHECK_OK(mx_cpu_compile(m, f, &co, &p));
  mx_tensor_t view;
  CHECK(mx_cpu_plan_value(p, ops[1]->results[0], &view) == MX_ERR_INVALID_ARG);
  mx_cpu_plan_destroy(p);
  co.keep_values = true;
  CHECK_OK(mx_cpu_compile(m, f, &co, &p));
  CHECK(mx_cpu_plan_value(p, ops[1]->results[0], &view) == MX_ERR_INVALID_ARG);  // not run yet
  mx_tensor_t out[2];
  CHECK_OK(mx_tensor_alloc(&out[0], &f->result_types[0]));
  CHECK_OK(mx_tensor_alloc(&out[1], &f->result_types[1]));
  CHECK_OK(mx_cpu_plan_run(p, NULL, args, 3, out));
  CHECK_OK(mx_cpu_plan_value(p, ops[2]->results[0], &view));  // %2 is also result 1
  CHECK(view.data && view.nbytes == out[1].nbytes &&
        memcmp(view.data, out[1].data, out[1].nbytes) == 0);
  CHECK(mx_cpu_plan_value(p, 9999, &view) == MX_ERR_INVALID_ARG);
  mx_cpu_plan_destroy(p);
  mx_tensor_free(&out[0]);
  mx_tensor_free(&out[1]);

  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(2, &pool));
  for (int pass = 0; pass < 2; pass++) {
    mx_cpu_pool_t *pl = pass ? pool : NULL;
    // Clean: every op result compared, none diverges.
    mx_cpu_diff_report_t rep;
    mx_cpu_diff_opts_t o = {.tol = 1e-5, .pool = pl};
    CHECK_OK(mx_cpu_diff(m, f, args, w, &o, &rep));
    CHECK(!rep.found && rep.n_diverged == 0 && rep.n_compared == 5 && rep.n_skipped == 0);
    CHECK(rep.has_worst && rep.worst.op != NULL && rep.worst.err <= 1e-5);
    // A broken dot_general: the first one is named, not the ops it feeds.
    o.test_perturb_op = "stablehlo.dot_general";
    CHECK_OK(mx_cpu_diff(m, f, args, w, &o, &rep));
    CHECK(rep.found && rep.first.op == ops[0] && rep.first.op_index == 0 && rep.first.result == 0 &&
          rep.first.index == 0 && rep.first.n_bad == 1);
    CHECK_MSG(fabs(rep.first.fast - rep.first.ref - 1.0) < 1e-6 && rep.first.err >= 0.5,
              "fast %g ref %g err %g", rep.first.fast, rep.first.ref, rep.first.err);
    CHECK(rep.n_diverged >= 3);  // %0 and everything downstream
    // The first add is named even though the return reads it.
    o.test_perturb_op = "stablehlo.add";
    CHECK_OK(mx_cpu_diff(m, f, args, w, &o, &rep));
    CHECK(rep.found && rep.first.op == ops[2] && rep.first.op_index == 2);
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_diff_format(f, &rep, 1e-5, &sb);
    CHECK_MSG(sb.data && strstr(sb.data, "%2 = stablehlo.add (op 2 of @main, line 4)") &&
                  strstr(sb.data, "worst element [0, 0] (flat 0)") &&
                  strstr(sb.data, "1 of 120 elements beyond 1e-05"),
              "report:\n%s", sb.data ? sb.data : "");
    mx_strbuf_free(&sb);
    // An op name that matches nothing perturbs nothing.
    o.test_perturb_op = "mx.no_such_op";
    CHECK_OK(mx_cpu_diff(m, f, args, w, &o, &rep));
    CHECK(!rep.found);
  }
  // A whole-function plan has no intermediates: its results are compared.
  static const char *kWhole =
      "func.func @main(%a: tensor<4x6xf32>) -> tensor<4xf32> {\n"
      "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] :"
      " (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>\n"
      "  return %0 : tensor<4xf32>\n}\n";
  mx_module_t *mw = NULL;
  CHECK_OK(mx_hlo_parse(kWhole, strlen(kWhole), NULL, &mw));
  if (mw) {
    mx_func_t *fw = mx_module_find_func(mw, "main");
    mx_tensor_t a;
    CHECK_OK(mx_tensor_alloc(&a, mx_value_type(fw, fw->body->args[0])));
    fill(&a, 5);
    mx_cpu_diff_report_t rep;
    CHECK_OK(mx_cpu_diff(mw, fw, &a, NULL, NULL, &rep));
    CHECK(rep.whole_function && rep.n_compared == 1 && !rep.found && rep.has_worst &&
          rep.worst.op == NULL && rep.worst.op_index == -1 && rep.worst.value >= 0);
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_diff_format(fw, &rep, 0, &sb);
    CHECK_MSG(sb.data && strstr(sb.data, "final results of @main"), "%s", sb.data ? sb.data : "");
    mx_strbuf_free(&sb);
    mx_tensor_free(&a);
    mx_module_destroy(mw);
  }
  char where[256];
  mx_cpu_diff_locate(f, 3, where, sizeof where);
  CHECK_MSG(strstr(where, "%3 = stablehlo.dot_general (op 3 of @main, line 5)") != NULL, "%s",
            where);
  mx_cpu_diff_locate(f, -1, where, sizeof where);
  CHECK(strstr(where, "final results") != NULL);
  mx_cpu_pool_destroy(pool);
  for (int32_t i = 0; i < 3; i++) mx_tensor_free(&args[i]);
  mx_module_destroy(m);
  return mx_test_finish();
}
