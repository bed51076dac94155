// Reference interpreter driver and data-movement kernels, tested on modules built in memory
// with the construction primitives (no parser needed).
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"
#include "mx_test.h"

// ---- small builders ----

static mx_type_t ty(mx_elem_type_t et, int32_t rank, int64_t d0, int64_t d1, int64_t d2) {
  int64_t d[3] = {d0, d1, d2};
  return mx_type_tensor(et, rank, d);
}
static mx_type_t ti64(int32_t rank, int64_t d0, int64_t d1) {
  return ty(MX_ELEM_I64, rank, d0, d1, 0);
}

// Tensor of `type` holding int values v[] (converted to the element type).
static mx_tensor_t tens_i(mx_type_t type, const int64_t *v) {
  mx_tensor_t t;
  mx_tensor_alloc(&t, &type);
  int64_t n = mx_type_numel(&type);
  for (int64_t i = 0; i < n; i++) {
    if (mx_elem_is_float(type.elem) || mx_elem_is_complex(type.elem))
      mx_tensor_set_f64(&t, i, (double)v[i]);
    else
      mx_tensor_set_i64(&t, i, v[i]);
  }
  return t;
}

static int32_t cnst(mx_func_t *f, mx_block_t *b, mx_type_t type, const int64_t *v) {
  mx_tensor_t t = tens_i(type, v);
  mx_op_t *op = mx_block_append_op(f, b, MX_OP_CONSTANT, NULL, NULL, 0, &type, 1);
  mx_op_set_attr(f, op, "value", mx_attr_dense(f->module, &t));
  mx_tensor_free(&t);
  return op->results[0];
}

static int32_t cnst1(mx_func_t *f, mx_block_t *b, mx_elem_type_t et, int64_t v) {
  return cnst(f, b, ty(et, 0, 0, 0, 0), &v);
}

static mx_op_t *op1(mx_func_t *f, mx_block_t *b, mx_opcode_t c, const int32_t *ops, int32_t n,
                    mx_type_t rt) {
  return mx_block_append_op(f, b, c, NULL, ops, n, &rt, 1);
}

static void ret(mx_func_t *f, mx_block_t *b, mx_opcode_t c, const int32_t *ops, int32_t n) {
  mx_block_append_op(f, b, c, NULL, ops, n, NULL, 0);
}

static void expect_eq_const(mx_func_t *f, mx_block_t *b, int32_t v, mx_type_t type,
                            const int64_t *want) {
  mx_tensor_t t = tens_i(type, want);
  mx_op_t *op = mx_block_append_op(f, b, MX_OP_CHECK_EXPECT_EQ_CONST, NULL, &v, 1, NULL, 0);
  mx_op_set_attr(f, op, "value", mx_attr_dense(f->module, &t));
  mx_tensor_free(&t);
}

static mx_func_t *new_main(mx_module_t *m) {
  mx_func_t *f = NULL;
  mx_func_create(m, "main", false, &f);
  return f;
}

// Runs argument-less, result-less main; returns status; *failed = failed checks.
static mx_status_t run_checks(mx_module_t *m, mx_check_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  mx_interp_opts_t o = {.checks = rep};
  mx_status_t st = mx_interp_run(m, mx_module_entry(m), NULL, 0, NULL, &o);
  if (st) fprintf(stderr, "  run: %s\n", mx_error_message());
  if (rep->n_failed) fprintf(stderr, "  first failure: %s\n", rep->first_failure);
  return st;
}

#define EXPECT_ALL_PASS(m, nchecks)                                                    \
  do {                                                                                 \
    mx_check_report_t rep_;                                                            \
    CHECK_OK(run_checks((m), &rep_));                                                  \
    CHECK_MSG(rep_.n_failed == 0 && rep_.n_checks == (nchecks), "checks %d failed %d", \
              rep_.n_checks, rep_.n_failed);                                           \
  } while (0)

// ---- driver tests ----

static void test_constant_and_args(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t t = ti64(1, 3, 0);
  int32_t a;
  mx_func_add_arg(f, &t, "x", &a);
  int64_t v[3] = {4, 5, 6};
  int32_t c = cnst(f, f->body, t, v);
  mx_type_t rt[2] = {t, t};
  mx_func_set_result_types(f, rt, 2);
  int32_t r[2] = {a, c};
  ret(f, f->body, MX_OP_FUNC_RETURN, r, 2);
  int64_t xv[3] = {1, 2, 3};
  mx_tensor_t arg = tens_i(t, xv);
  mx_tensor_t res[2];
  CHECK_OK(mx_interp_run(m, f, &arg, 1, res, NULL));
  CHECK(mx_tensor_get_i64(&res[0], 2) == 3);
  CHECK(mx_tensor_get_i64(&res[1], 1) == 5);
  CHECK(res[0].data != arg.data);  // results are fresh copies, not the caller's argument
  mx_tensor_free(&res[0]);
  mx_tensor_free(&res[1]);
  // Wrong argument type / count.
  mx_type_t bad = ti64(1, 4, 0);
  mx_tensor_t arg2;
  mx_tensor_alloc(&arg2, &bad);
  CHECK(mx_interp_run(m, f, &arg2, 1, res, NULL) == MX_ERR_INVALID_ARG);
  CHECK(mx_interp_run(m, f, NULL, 0, res, NULL) == MX_ERR_INVALID_ARG);
  mx_tensor_free(&arg2);
  mx_tensor_free(&arg);
  mx_module_destroy(m);
}

// A one-element dense attribute on a larger constant is a splat.
static void test_splat_constant(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t t = ty(MX_ELEM_F32, 1, 3, 0, 0), s = ty(MX_ELEM_F32, 0, 0, 0, 0);
  mx_tensor_t one;
  mx_tensor_alloc(&one, &s);
  float v = 2.5f;
  memcpy(one.data, &v, 4);
  mx_attr_t a = mx_attr_dense(m, &one);
  a.dense->type = t;  // data holds one element only
  mx_op_t *c = op1(f, f->body, MX_OP_CONSTANT, NULL, 0, t);
  mx_op_set_attr(f, c, "value", a);
  mx_func_set_result_types(f, &t, 1);
  ret(f, f->body, MX_OP_FUNC_RETURN, &c->results[0], 1);
  mx_tensor_t r;
  CHECK_OK(mx_interp_run(m, f, NULL, 0, &r, NULL));
  CHECK(mx_tensor_get_f64(&r, 2) == 2.5);
  mx_tensor_free(&r);
  mx_tensor_free(&one);
  mx_module_destroy(m);
}

static void test_unsupported(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t t = ti64(0, 0, 0);
  mx_block_append_op(f, f->body, MX_OP_UNKNOWN, "foo.bar", NULL, 0, &t, 1);
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  CHECK(mx_interp_run(m, f, NULL, 0, NULL, NULL) == MX_ERR_UNSUPPORTED);
  CHECK_MSG(strncmp(mx_error_message(), "unsupported: foo.bar", 20) == 0, "%s", mx_error_message());
  mx_module_destroy(m);

  // A custom_call that is not a check op.
  m = mx_module_create(NULL);
  f = new_main(m);
  mx_op_t *op = mx_block_append_op(f, f->body, MX_OP_CUSTOM_CALL, NULL, NULL, 0, NULL, 0);
  mx_op_set_attr(f, op, "call_target_name", mx_attr_string(m, "my_kernel"));
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  CHECK(mx_interp_run(m, f, NULL, 0, NULL, NULL) == MX_ERR_UNSUPPORTED);
  CHECK_MSG(strstr(mx_error_message(), "unsupported: stablehlo.custom_call") == mx_error_message(),
            "%s", mx_error_message());
  mx_module_destroy(m);
}

static void test_tensor_limit(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t t = ti64(2, 1000, 1000);  // 8 MB
  mx_op_t *op = op1(f, f->body, MX_OP_IOTA, NULL, 0, t);
  mx_op_set_attr(f, op, "iota_dimension", mx_attr_int(0, MX_ELEM_I64));
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  mx_interp_opts_t o = {.max_tensor_bytes = 1 << 20};
  CHECK(mx_interp_run(m, f, NULL, 0, NULL, &o) == MX_ERR_RUNTIME);
  CHECK_MSG(strstr(mx_error_message(), "limit") != NULL, "%s", mx_error_message());
  o.max_tensor_bytes = 16 << 20;
  CHECK_OK(mx_interp_run(m, f, NULL, 0, NULL, &o));
  mx_module_destroy(m);
}

static void test_checks(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t t = ti64(1, 3, 0);
  int64_t v[3] = {1, 2, 3}, w[3] = {1, 2, 4};
  int32_t a = cnst(f, f->body, t, v);
  int32_t b = cnst(f, f->body, t, w);
  expect_eq_const(f, f->body, a, t, v);  // pass
  expect_eq_const(f, f->body, a, t, w);  // fail at [2]
  int32_t ab[2] = {a, b};
  mx_block_append_op(f, f->body, MX_OP_CHECK_EXPECT_EQ, NULL, ab, 2, NULL, 0);  // fail
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  mx_check_report_t rep;
  CHECK_OK(run_checks(m, &rep));
  CHECK(rep.n_checks == 3 && rep.n_failed == 2);
  CHECK_MSG(strstr(rep.first_failure, "check.expect_eq_const") &&
                strstr(rep.first_failure, "[2]") && strstr(rep.first_failure, "4"),
            "%s", rep.first_failure);
  // Without a report a failed check is an error.
  CHECK(mx_interp_run(m, f, NULL, 0, NULL, NULL) == MX_ERR_RUNTIME);
  CHECK(strstr(mx_error_message(), "expect_eq_const") != NULL);
  mx_module_destroy(m);
}

// Float checks: almost_eq tolerance, NaN == NaN, inf, complex, ULP distance.
static void test_float_checks(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t t = ty(MX_ELEM_F64, 1, 4, 0, 0);
  mx_tensor_t x, y;
  mx_tensor_alloc(&x, &t);
  mx_tensor_alloc(&y, &t);
  double xv[4] = {5.0, NAN, INFINITY, -2.0}, yv[4] = {5.00005, NAN, INFINITY, -2.0};
  memcpy(x.data, xv, sizeof xv);
  memcpy(y.data, yv, sizeof yv);
  mx_op_t *cx = op1(f, f->body, MX_OP_CONSTANT, NULL, 0, t);
  mx_op_set_attr(f, cx, "value", mx_attr_dense(m, &x));
  int32_t id = cx->results[0];
  mx_op_t *c;
  c = mx_block_append_op(f, f->body, MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST, NULL, &id, 1, NULL, 0);
  mx_op_set_attr(f, c, "value", mx_attr_dense(m, &y));  // pass (1e-4 default)
  c = mx_block_append_op(f, f->body, MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST, NULL, &id, 1, NULL, 0);
  mx_op_set_attr(f, c, "value", mx_attr_dense(m, &y));
  mx_op_set_attr(f, c, "tolerance", mx_attr_float(1e-6, MX_ELEM_F64));  // fail
  c = mx_block_append_op(f, f->body, MX_OP_CHECK_EXPECT_EQ_CONST, NULL, &id, 1, NULL, 0);
  mx_op_set_attr(f, c, "value", mx_attr_dense(m, &x));  // pass: NaN == NaN bitwise check
  // ULP: 1.0 vs nextafter(1.0) twice -> 2 ulps.
  mx_type_t s = ty(MX_ELEM_F32, 0, 0, 0, 0);
  mx_tensor_t p, q;
  mx_tensor_alloc(&p, &s);
  mx_tensor_alloc(&q, &s);
  float pv = 1.0f, qv = nextafterf(nextafterf(1.0f, 2.0f), 2.0f);
  memcpy(p.data, &pv, 4);
  memcpy(q.data, &qv, 4);
  mx_op_t *cp = op1(f, f->body, MX_OP_CONSTANT, NULL, 0, s);
  mx_op_set_attr(f, cp, "value", mx_attr_dense(m, &p));
  mx_op_t *cq = op1(f, f->body, MX_OP_CONSTANT, NULL, 0, s);
  mx_op_set_attr(f, cq, "value", mx_attr_dense(m, &q));
  int32_t pq[2] = {cp->results[0], cq->results[0]};
  c = mx_block_append_op(f, f->body, MX_OP_CHECK_EXPECT_CLOSE, NULL, pq, 2, NULL, 0);
  mx_op_set_attr(f, c, "max_ulp_difference", mx_attr_int(2, MX_ELEM_UI64));  // pass
  c = mx_block_append_op(f, f->body, MX_OP_CHECK_EXPECT_CLOSE, NULL, pq, 2, NULL, 0);
  mx_op_set_attr(f, c, "max_ulp_difference", mx_attr_int(1, MX_ELEM_UI64));  // fail
  c = mx_block_append_op(f, f->body, MX_OP_CHECK_EXPECT_CLOSE, NULL, pq, 2, NULL, 0);
  mx_op_set_attr(f, c, "max_ulp_difference", mx_attr_int(5, MX_ELEM_UI64));
  mx_op_set_attr(f, c, "min_ulp_difference", mx_attr_int(3, MX_ELEM_UI64));  // fail (too close)
  // Complex almost_eq: imaginary part differs.
  mx_type_t ct = ty(MX_ELEM_C64, 1, 1, 0, 0);
  mx_tensor_t z1, z2;
  mx_tensor_alloc(&z1, &ct);
  mx_tensor_alloc(&z2, &ct);
  float zv1[2] = {1.0f, 2.0f}, zv2[2] = {1.0f, 2.5f};
  memcpy(z1.data, zv1, 8);
  memcpy(z2.data, zv2, 8);
  mx_op_t *cz = op1(f, f->body, MX_OP_CONSTANT, NULL, 0, ct);
  mx_op_set_attr(f, cz, "value", mx_attr_dense(m, &z1));
  int32_t zid = cz->results[0];
  c = mx_block_append_op(f, f->body, MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST, NULL, &zid, 1, NULL, 0);
  mx_op_set_attr(f, c, "value", mx_attr_dense(m, &z2));  // fail
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  mx_check_report_t rep;
  CHECK_OK(run_checks(m, &rep));
  CHECK_MSG(rep.n_checks == 7 && rep.n_failed == 4, "%d %d", rep.n_checks, rep.n_failed);
  CHECK_MSG(strstr(rep.first_failure, "expect_almost_eq_const") != NULL, "%s", rep.first_failure);
  mx_tensor_free(&x);
  mx_tensor_free(&y);
  mx_tensor_free(&p);
  mx_tensor_free(&q);
  mx_tensor_free(&z1);
  mx_tensor_free(&z2);
  mx_module_destroy(m);
}

// if / case: branch selection, out-of-range and negative case index -> last branch, and values
// of the enclosing block used inside regions.
static void build_branch(mx_func_t *f, mx_op_t *op, int32_t outer, int64_t k) {
  mx_block_t *b = mx_block_create(f);
  int32_t c = cnst1(f, b, MX_ELEM_I64, k);
  int32_t r[2] = {c, outer};
  ret(f, b, MX_OP_RETURN, r, 2);
  mx_op_add_region(f, op, b);
}

static void test_if_case(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t s = ti64(0, 0, 0);
  mx_type_t rt[2] = {s, s};
  int32_t outer = cnst1(f, f->body, MX_ELEM_I64, 77);
  int64_t idx[4] = {-1, 0, 1, 5}, want[4] = {2, 0, 1, 2};
  for (int i = 0; i < 4; i++) {
    int32_t k = cnst1(f, f->body, MX_ELEM_I32, idx[i]);
    mx_op_t *op = mx_block_append_op(f, f->body, MX_OP_CASE, NULL, &k, 1, rt, 2);
    for (int br = 0; br < 3; br++) build_branch(f, op, outer, br);
    expect_eq_const(f, f->body, op->results[0], s, &want[i]);
    int64_t o = 77;
    expect_eq_const(f, f->body, op->results[1], s, &o);
  }
  for (int p = 0; p < 2; p++) {
    int32_t pred = cnst1(f, f->body, MX_ELEM_I1, p);
    mx_op_t *op = mx_block_append_op(f, f->body, MX_OP_IF, NULL, &pred, 1, rt, 2);
    build_branch(f, op, outer, 10);
    build_branch(f, op, outer, 20);
    int64_t w = p ? 10 : 20;
    expect_eq_const(f, f->body, op->results[0], s, &w);
  }
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  EXPECT_ALL_PASS(m, 10);
  mx_module_destroy(m);
}

// while: a loop whose condition is a constant; zero iterations, and the iteration limit.
static void test_while_limits(void) {
  for (int forever = 0; forever < 2; forever++) {
    mx_module_t *m = mx_module_create(NULL);
    mx_func_t *f = new_main(m);
    mx_type_t s = ti64(0, 0, 0);
    int32_t init = cnst1(f, f->body, MX_ELEM_I64, 5);
    mx_op_t *w = mx_block_append_op(f, f->body, MX_OP_WHILE, NULL, &init, 1, &s, 1);
    mx_block_t *cond = mx_block_create(f), *body = mx_block_create(f);
    int32_t ca, ba;
    mx_block_add_arg(f, cond, &s, "c", &ca);
    mx_block_add_arg(f, body, &s, "b", &ba);
    int32_t p = cnst1(f, cond, MX_ELEM_I1, forever);
    ret(f, cond, MX_OP_RETURN, &p, 1);
    ret(f, body, MX_OP_RETURN, &ba, 1);
    mx_op_add_region(f, w, cond);
    mx_op_add_region(f, w, body);
    int64_t five = 5;
    expect_eq_const(f, f->body, w->results[0], s, &five);
    ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
    mx_check_report_t rep = {0};
    mx_interp_opts_t o = {.checks = &rep, .max_while_iterations = 1000};
    mx_status_t st = mx_interp_run(m, f, NULL, 0, NULL, &o);
    if (forever) {
      CHECK(st == MX_ERR_RUNTIME);
      CHECK_MSG(strstr(mx_error_message(), "iteration limit") != NULL, "%s", mx_error_message());
    } else {
      CHECK_OK(st);
      CHECK(rep.n_checks == 1 && rep.n_failed == 0);
    }
    mx_module_destroy(m);
  }
}

// while computing sum of 0..9 with add/compare (uses the elementwise kernels).
static void test_while_sum(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t s = ti64(0, 0, 0), b1 = ty(MX_ELEM_I1, 0, 0, 0, 0);
  int32_t init[2] = {cnst1(f, f->body, MX_ELEM_I64, 0), cnst1(f, f->body, MX_ELEM_I64, 0)};
  int32_t one = cnst1(f, f->body, MX_ELEM_I64, 1), ten = cnst1(f, f->body, MX_ELEM_I64, 10);
  mx_type_t st2[2] = {s, s};
  mx_op_t *w = mx_block_append_op(f, f->body, MX_OP_WHILE, NULL, init, 2, st2, 2);
  mx_block_t *cond = mx_block_create(f), *body = mx_block_create(f);
  int32_t c0, c1, i0, s0;
  mx_block_add_arg(f, cond, &s, "i", &c0);
  mx_block_add_arg(f, cond, &s, "s", &c1);
  mx_block_add_arg(f, body, &s, "i", &i0);
  mx_block_add_arg(f, body, &s, "s", &s0);
  int32_t lt_ops[2] = {c0, ten};
  mx_op_t *lt = op1(f, cond, MX_OP_COMPARE, lt_ops, 2, b1);
  mx_op_set_attr(f, lt, "comparison_direction", mx_attr_enum(m, "comparison_direction", "LT"));
  ret(f, cond, MX_OP_RETURN, &lt->results[0], 1);
  int32_t add1[2] = {i0, one}, add2[2] = {s0, i0};
  int32_t ni = op1(f, body, MX_OP_ADD, add1, 2, s)->results[0];
  int32_t ns = op1(f, body, MX_OP_ADD, add2, 2, s)->results[0];
  int32_t r[2] = {ni, ns};
  ret(f, body, MX_OP_RETURN, r, 2);
  mx_op_add_region(f, w, cond);
  mx_op_add_region(f, w, body);
  int64_t e10 = 10, e45 = 45;
  expect_eq_const(f, f->body, w->results[0], s, &e10);
  expect_eq_const(f, f->body, w->results[1], s, &e45);
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  EXPECT_ALL_PASS(m, 2);
  mx_module_destroy(m);
}

// func.call, composite, recursion limit.
static void test_calls(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *g = NULL;
  mx_func_create(m, "pair", true, &g);
  mx_type_t s = ti64(0, 0, 0);
  int32_t x;
  mx_func_add_arg(g, &s, "x", &x);
  mx_type_t rt[2] = {s, s};
  mx_func_set_result_types(g, rt, 2);
  int32_t k = cnst1(g, g->body, MX_ELEM_I64, 9);
  int32_t gr[2] = {k, x};
  ret(g, g->body, MX_OP_FUNC_RETURN, gr, 2);
  mx_func_t *f = new_main(m);
  int32_t a = cnst1(f, f->body, MX_ELEM_I64, 3);
  mx_op_t *call = mx_block_append_op(f, f->body, MX_OP_FUNC_CALL, NULL, &a, 1, rt, 2);
  mx_op_set_attr(f, call, "callee", mx_attr_symbol(m, "pair"));
  mx_op_t *comp = mx_block_append_op(f, f->body, MX_OP_COMPOSITE, NULL, &a, 1, rt, 2);
  mx_op_set_attr(f, comp, "name", mx_attr_string(m, "mx.pair"));
  mx_op_set_attr(f, comp, "decomposition", mx_attr_symbol(m, "pair"));
  int64_t n9 = 9, n3 = 3;
  expect_eq_const(f, f->body, call->results[0], s, &n9);
  expect_eq_const(f, f->body, call->results[1], s, &n3);
  expect_eq_const(f, f->body, comp->results[0], s, &n9);
  expect_eq_const(f, f->body, comp->results[1], s, &n3);
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  EXPECT_ALL_PASS(m, 4);
  mx_module_destroy(m);

  // Unbounded recursion is stopped.
  m = mx_module_create(NULL);
  f = new_main(m);
  mx_op_t *self = mx_block_append_op(f, f->body, MX_OP_FUNC_CALL, NULL, NULL, 0, NULL, 0);
  mx_op_set_attr(f, self, "callee", mx_attr_symbol(m, "main"));
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  CHECK(mx_interp_run(m, f, NULL, 0, NULL, NULL) == MX_ERR_RUNTIME);
  CHECK_MSG(strstr(mx_error_message(), "depth") != NULL, "%s", mx_error_message());
  // Missing callee.
  mx_op_set_attr(f, self, "callee", mx_attr_symbol(m, "nope"));
  CHECK(mx_interp_run(m, f, NULL, 0, NULL, NULL) == MX_ERR_RUNTIME);
  mx_module_destroy(m);
}

static void test_tuples_barrier(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t s = ti64(0, 0, 0), v2 = ti64(1, 2, 0);
  int64_t vv[2] = {4, 5};
  int32_t a = cnst1(f, f->body, MX_ELEM_I64, 3), b = cnst(f, f->body, v2, vv);
  mx_type_t inner_el[1] = {s};
  mx_type_t inner = {.kind = MX_TYPE_TUPLE, .n_tuple = 1, .tuple = inner_el};
  mx_op_t *t1 = op1(f, f->body, MX_OP_TUPLE, &a, 1, inner);
  mx_type_t outer_el[2] = {v2, inner};
  mx_type_t outer = {.kind = MX_TYPE_TUPLE, .n_tuple = 2, .tuple = outer_el};
  int32_t ops[2] = {b, t1->results[0]};
  mx_op_t *t2 = op1(f, f->body, MX_OP_TUPLE, ops, 2, outer);
  mx_op_t *g1 = op1(f, f->body, MX_OP_GET_TUPLE_ELEMENT, &t2->results[0], 1, inner);
  mx_op_set_attr(f, g1, "index", mx_attr_int(1, MX_ELEM_I32));
  mx_op_t *g2 = op1(f, f->body, MX_OP_GET_TUPLE_ELEMENT, &g1->results[0], 1, s);
  mx_op_set_attr(f, g2, "index", mx_attr_int(0, MX_ELEM_I32));
  mx_op_t *g3 = op1(f, f->body, MX_OP_GET_TUPLE_ELEMENT, &t2->results[0], 1, v2);
  mx_op_set_attr(f, g3, "index", mx_attr_int(0, MX_ELEM_I32));
  int32_t bo[2] = {g2->results[0], g3->results[0]};
  mx_type_t bt[2] = {s, v2};
  mx_op_t *bar = mx_block_append_op(f, f->body, MX_OP_OPTIMIZATION_BARRIER, NULL, bo, 2, bt, 2);
  int64_t three = 3;
  expect_eq_const(f, f->body, bar->results[0], s, &three);
  expect_eq_const(f, f->body, bar->results[1], v2, vv);
  // Bad index is an error, not a crash.
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  EXPECT_ALL_PASS(m, 2);
  mx_op_set_attr(f, g1, "index", mx_attr_int(7, MX_ELEM_I32));
  CHECK(mx_interp_run(m, f, NULL, 0, NULL, NULL) == MX_ERR_RUNTIME);
  mx_module_destroy(m);
}

// ---- data-movement kernels ----

static mx_op_t *unary(mx_func_t *f, mx_opcode_t c, int32_t x, mx_type_t rt) {
  return op1(f, f->body, c, &x, 1, rt);
}

static void test_shape_ops(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_block_t *b = f->body;
  int nchecks = 0;
  mx_type_t t23 = ti64(2, 2, 3), t32 = ti64(2, 3, 2), t6 = ti64(1, 6, 0);
  int64_t v[6] = {1, 2, 3, 4, 5, 6};
  int32_t x = cnst(f, b, t23, v);

  // iota (i64 dim 1, f16 dim 0, complex dim 1)
  mx_op_t *op = op1(f, b, MX_OP_IOTA, NULL, 0, t23);
  mx_op_set_attr(f, op, "iota_dimension", mx_attr_int(1, MX_ELEM_I64));
  int64_t iota1[6] = {0, 1, 2, 0, 1, 2};
  expect_eq_const(f, b, op->results[0], t23, iota1), nchecks++;
  mx_type_t h23 = ty(MX_ELEM_F16, 2, 2, 3, 0), c23 = ty(MX_ELEM_C128, 2, 2, 3, 0);
  op = op1(f, b, MX_OP_IOTA, NULL, 0, h23);
  mx_op_set_attr(f, op, "iota_dimension", mx_attr_int(0, MX_ELEM_I64));
  int64_t iota0[6] = {0, 0, 0, 1, 1, 1};
  expect_eq_const(f, b, op->results[0], h23, iota0), nchecks++;
  op = op1(f, b, MX_OP_IOTA, NULL, 0, c23);
  mx_op_set_attr(f, op, "iota_dimension", mx_attr_int(1, MX_ELEM_I64));
  expect_eq_const(f, b, op->results[0], c23, iota1), nchecks++;

  // reshape
  op = unary(f, MX_OP_RESHAPE, x, t6);
  expect_eq_const(f, b, op->results[0], t6, v), nchecks++;

  // transpose
  op = unary(f, MX_OP_TRANSPOSE, x, t32);
  int64_t perm[2] = {1, 0};
  mx_op_set_attr(f, op, "permutation", mx_attr_i64s(m, perm, 2));
  int64_t tv[6] = {1, 4, 2, 5, 3, 6};
  expect_eq_const(f, b, op->results[0], t32, tv), nchecks++;

  // broadcast_in_dim: [2x3] -> [2x2x3] with dims (0, 2); size-1 broadcast [1x3] -> [2x3]
  mx_type_t t223 = ty(MX_ELEM_I64, 3, 2, 2, 3);
  op = unary(f, MX_OP_BROADCAST_IN_DIM, x, t223);
  int64_t bd[2] = {0, 2};
  mx_op_set_attr(f, op, "broadcast_dimensions", mx_attr_i64s(m, bd, 2));
  int64_t bv[12] = {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6};
  expect_eq_const(f, b, op->results[0], t223, bv), nchecks++;
  mx_type_t t13 = ti64(2, 1, 3);
  int32_t row = cnst(f, b, t13, v);
  op = unary(f, MX_OP_BROADCAST_IN_DIM, row, t23);
  int64_t bd01[2] = {0, 1};
  mx_op_set_attr(f, op, "broadcast_dimensions", mx_attr_i64s(m, bd01, 2));
  int64_t rv[6] = {1, 2, 3, 1, 2, 3};
  expect_eq_const(f, b, op->results[0], t23, rv), nchecks++;

  // slice with strides: x[0:2:1, 0:3:2] -> [[1,3],[4,6]]
  mx_type_t t22 = ti64(2, 2, 2);
  op = unary(f, MX_OP_SLICE, x, t22);
  int64_t st0[2] = {0, 0}, lim[2] = {2, 3}, str[2] = {1, 2};
  mx_op_set_attr(f, op, "start_indices", mx_attr_i64s(m, st0, 2));
  mx_op_set_attr(f, op, "limit_indices", mx_attr_i64s(m, lim, 2));
  mx_op_set_attr(f, op, "strides", mx_attr_i64s(m, str, 2));
  int64_t sv[4] = {1, 3, 4, 6};
  expect_eq_const(f, b, op->results[0], t22, sv), nchecks++;

  // reverse dim 1
  op = unary(f, MX_OP_REVERSE, x, t23);
  int64_t d1 = 1;
  mx_op_set_attr(f, op, "dimensions", mx_attr_i64s(m, &d1, 1));
  int64_t rev[6] = {3, 2, 1, 6, 5, 4};
  expect_eq_const(f, b, op->results[0], t23, rev), nchecks++;

  // dynamic_slice with clamping: start (5, -3) size (1, 2) -> row 1, cols 0..1
  int32_t i5 = cnst1(f, b, MX_ELEM_I32, 5), im3 = cnst1(f, b, MX_ELEM_I32, -3);
  int32_t dso[3] = {x, i5, im3};
  mx_type_t t12 = ti64(2, 1, 2);
  op = op1(f, b, MX_OP_DYNAMIC_SLICE, dso, 3, t12);
  int64_t sz[2] = {1, 2};
  mx_op_set_attr(f, op, "slice_sizes", mx_attr_i64s(m, sz, 2));
  int64_t dsv[2] = {4, 5};
  expect_eq_const(f, b, op->results[0], t12, dsv), nchecks++;

  // dynamic_update_slice with clamping: update [1x2] {9,8} at (0, 7) -> cols 1..2 of row 0
  int64_t uv[2] = {9, 8};
  int32_t upd = cnst(f, b, t12, uv);
  int32_t i0 = cnst1(f, b, MX_ELEM_I64, 0), i7 = cnst1(f, b, MX_ELEM_I64, 7);
  int32_t duso[4] = {x, upd, i0, i7};
  op = op1(f, b, MX_OP_DYNAMIC_UPDATE_SLICE, duso, 4, t23);
  int64_t duv[6] = {1, 9, 8, 4, 5, 6};
  expect_eq_const(f, b, op->results[0], t23, duv), nchecks++;

  // concatenate along dim 1: [2x3] ++ [2x2] -> [2x5]
  int64_t cv2[4] = {7, 8, 9, 10};
  int32_t y = cnst(f, b, t22, cv2);
  int32_t co[2] = {x, y};
  mx_type_t t25 = ti64(2, 2, 5);
  op = op1(f, b, MX_OP_CONCATENATE, co, 2, t25);
  mx_op_set_attr(f, op, "dimension", mx_attr_int(1, MX_ELEM_I64));
  int64_t catv[10] = {1, 2, 3, 7, 8, 4, 5, 6, 9, 10};
  expect_eq_const(f, b, op->results[0], t25, catv), nchecks++;

  // pad: low (1, -1), high (0, 1), interior (0, 1): [2x3] -> [3x5]
  int32_t pv = cnst1(f, b, MX_ELEM_I64, 0);
  int32_t po[2] = {x, pv};
  mx_type_t t35 = ti64(2, 3, 5);
  op = op1(f, b, MX_OP_PAD, po, 2, t35);
  int64_t lo[2] = {1, -1}, hi[2] = {0, 1}, in_[2] = {0, 1};
  mx_op_set_attr(f, op, "edge_padding_low", mx_attr_i64s(m, lo, 2));
  mx_op_set_attr(f, op, "edge_padding_high", mx_attr_i64s(m, hi, 2));
  mx_op_set_attr(f, op, "interior_padding", mx_attr_i64s(m, in_, 2));
  // operand row [1,2,3] interior -> [1,0,2,0,3], low -1 -> [0,2,0,3], high 1 -> [0,2,0,3,0]
  int64_t padv[15] = {0, 0, 0, 0, 0, 0, 2, 0, 3, 0, 0, 5, 0, 6, 0};
  expect_eq_const(f, b, op->results[0], t35, padv), nchecks++;

  // get_dimension_size
  mx_type_t si32 = ty(MX_ELEM_I32, 0, 0, 0, 0);
  op = unary(f, MX_OP_GET_DIMENSION_SIZE, x, si32);
  mx_op_set_attr(f, op, "dimension", mx_attr_int(1, MX_ELEM_I64));
  int64_t three = 3;
  expect_eq_const(f, b, op->results[0], si32, &three), nchecks++;

  // complex transpose keeps both parts
  mx_type_t z12 = ty(MX_ELEM_C64, 2, 1, 2, 0), z21 = ty(MX_ELEM_C64, 2, 2, 1, 0);
  mx_tensor_t zt;
  mx_tensor_alloc(&zt, &z12);
  float zv[4] = {1, 2, 3, 4};
  memcpy(zt.data, zv, sizeof zv);
  mx_op_t *zc = op1(f, b, MX_OP_CONSTANT, NULL, 0, z12);
  mx_op_set_attr(f, zc, "value", mx_attr_dense(m, &zt));
  op = unary(f, MX_OP_TRANSPOSE, zc->results[0], z21);
  mx_op_set_attr(f, op, "permutation", mx_attr_i64s(m, perm, 2));
  mx_op_t *chk =
      mx_block_append_op(f, b, MX_OP_CHECK_EXPECT_EQ_CONST, NULL, &op->results[0], 1, NULL, 0);
  zt.type = z21;
  mx_op_set_attr(f, chk, "value", mx_attr_dense(m, &zt));
  nchecks++;
  mx_tensor_free(&zt);

  ret(f, b, MX_OP_FUNC_RETURN, NULL, 0);
  EXPECT_ALL_PASS(m, nchecks);
  mx_module_destroy(m);
}

// Bad attributes in unverified modules are errors, never crashes.
static void test_shape_errors(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t t23 = ti64(2, 2, 3), t32 = ti64(2, 3, 2);
  int64_t v[6] = {0};
  int32_t x = cnst(f, f->body, t23, v);
  mx_op_t *op = unary(f, MX_OP_TRANSPOSE, x, t32);
  int64_t perm[2] = {0, 0};
  mx_op_set_attr(f, op, "permutation", mx_attr_i64s(m, perm, 2));
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  CHECK(mx_interp_run(m, f, NULL, 0, NULL, NULL) == MX_ERR_RUNTIME);
  perm[0] = 1;
  perm[1] = 5;
  mx_op_set_attr(f, op, "permutation", mx_attr_i64s(m, perm, 2));
  CHECK(mx_interp_run(m, f, NULL, 0, NULL, NULL) == MX_ERR_RUNTIME);
  mx_module_destroy(m);
}

// dynamic_* ops arrive as MX_OP_UNKNOWN; a shape operand that disagrees with the static result
// type is an error.
static void test_dynamic_ops(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = new_main(m);
  mx_type_t t23 = ti64(2, 2, 3), s2 = ti64(1, 2, 0);
  int64_t shape[2] = {2, 3};
  int32_t sh = cnst(f, f->body, s2, shape);
  mx_op_t *op =
      mx_block_append_op(f, f->body, MX_OP_UNKNOWN, "stablehlo.dynamic_iota", &sh, 1, &t23, 1);
  mx_op_set_attr(f, op, "iota_dimension", mx_attr_int(0, MX_ELEM_I64));
  int64_t want[6] = {0, 0, 0, 1, 1, 1};
  expect_eq_const(f, f->body, op->results[0], t23, want);
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  EXPECT_ALL_PASS(m, 1);
  mx_module_destroy(m);

  m = mx_module_create(NULL);
  f = new_main(m);
  int64_t bad[2] = {3, 2};
  sh = cnst(f, f->body, s2, bad);
  op = mx_block_append_op(f, f->body, MX_OP_UNKNOWN, "stablehlo.dynamic_iota", &sh, 1, &t23, 1);
  mx_op_set_attr(f, op, "iota_dimension", mx_attr_int(0, MX_ELEM_I64));
  ret(f, f->body, MX_OP_FUNC_RETURN, NULL, 0);
  CHECK(mx_interp_run(m, f, NULL, 0, NULL, NULL) == MX_ERR_RUNTIME);
  CHECK_MSG(strstr(mx_error_message(), "output shape") != NULL, "%s", mx_error_message());
  mx_module_destroy(m);
}

int main(void) {
  test_constant_and_args();
  test_unsupported();
  test_splat_constant();
  test_tensor_limit();
  test_checks();
  test_float_checks();
  test_if_case();
  test_while_limits();
  test_while_sum();
  test_calls();
  test_tuples_barrier();
  test_shape_ops();
  test_shape_errors();
  test_dynamic_ops();
  return mx_test_finish();
}
