// Builder API: a small transformer-like graph with inferred types, shape errors for every
// constructor (status and message text), and the module's bytes for a function of many
// arguments (a model graph has a thousand weights).
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"
#include "mx_test.h"

static mx_type_t T(mx_elem_type_t et, int32_t rank, int64_t d0, int64_t d1, int64_t d2,
                   int64_t d3) {
  int64_t d[4] = {d0, d1, d2, d3};
  return mx_type_tensor(et, rank, d);
}
#define T0(et) mx_type_scalar(et)
#define T1(et, a) T(et, 1, a, 0, 0, 0)
#define T2(et, a, b) T(et, 2, a, b, 0, 0)
#define T3(et, a, b, c) T(et, 3, a, b, c, 0)
#define T4(et, a, b, c, d) T(et, 4, a, b, c, d)

static bool type_is(const mx_builder_t *b, int32_t id, mx_type_t want) {
  const mx_type_t *t = mx_build_type(b, id);
  if (t == NULL || !mx_type_equal(t, &want)) {
    char s1[128], s2[128];
    fprintf(stderr, "  type %s, expected %s\n", t ? mx_type_str(t, s1, sizeof s1) : "NULL",
            mx_type_str(&want, s2, sizeof s2));
    return false;
  }
  return true;
}

// The call must fail with `status` and a message containing each of the given substrings.
#define CHECK_ERR(expr, status, ...)                                                  \
  do {                                                                                \
    mx_status_t st_ = (expr);                                                         \
    const char *subs_[] = {__VA_ARGS__};                                              \
    bool ok_ = st_ == (status);                                                       \
    for (size_t i_ = 0; ok_ && i_ < sizeof subs_ / sizeof subs_[0]; i_++)             \
      ok_ = strstr(mx_error_message(), subs_[i_]) != NULL;                            \
    CHECK_MSG(ok_, "%s -> %s: '%s'", #expr, mx_status_name(st_), mx_error_message()); \
  } while (0)

#define E MX_ERR_VERIFY

static const int64_t k0[] = {0}, k1[] = {1}, k2[] = {2};

// rms_norm decomposition: x * rsqrt(mean(x^2) + eps) * w over the last dim.
static void build_rms_norm(mx_module_t *m) {
  mx_type_t args[2] = {T3(MX_ELEM_F32, 1, 4, 8), T1(MX_ELEM_F32, 8)};
  mx_func_t *f;
  mx_builder_t b;
  int32_t a[2];
  CHECK_OK(mx_build_func(m, "rms_norm_impl", true, args, 2, &f, &b, a));
  int32_t sq, zero, sum, n, mean, eps, var, r, rb, xn, wb, y;
  CHECK_OK(mx_build_binary(&b, MX_OP_MULTIPLY, a[0], a[0], &sq));
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_F32, 0.0, &zero));
  CHECK_OK(mx_build_reduce(&b, sq, zero, k2, 1, MX_OP_ADD, &sum));
  CHECK(type_is(&b, sum, T2(MX_ELEM_F32, 1, 4)));
  mx_type_t t14 = T2(MX_ELEM_F32, 1, 4);
  CHECK_OK(mx_build_splat(&b, &t14, 8.0, &n));
  CHECK_OK(mx_build_binary(&b, MX_OP_DIVIDE, sum, n, &mean));
  CHECK_OK(mx_build_splat(&b, &t14, 1e-5, &eps));
  CHECK_OK(mx_build_binary(&b, MX_OP_ADD, mean, eps, &var));
  CHECK_OK(mx_build_unary(&b, MX_OP_RSQRT, var, &r));
  static const int64_t d148[] = {1, 4, 8}, bd01[] = {0, 1};
  CHECK_OK(mx_build_broadcast_in_dim(&b, r, d148, 3, bd01, &rb));
  CHECK(type_is(&b, rb, T3(MX_ELEM_F32, 1, 4, 8)));
  CHECK_OK(mx_build_binary(&b, MX_OP_MULTIPLY, a[0], rb, &xn));
  CHECK_OK(mx_build_broadcast_in_dim(&b, a[1], d148, 3, k2, &wb));
  CHECK_OK(mx_build_binary(&b, MX_OP_MULTIPLY, xn, wb, &y));
  CHECK_OK(mx_build_return(&b, &y, 1));
  CHECK(f->n_results == 1 && mx_type_equal(&f->result_types[0], &args[0]));
}

static mx_module_t *test_transformer_graph(void) {
  mx_module_t *m = mx_module_create("graph");
  build_rms_norm(m);
  mx_type_t args[3] = {T3(MX_ELEM_F16, 1, 4, 8), T1(MX_ELEM_F32, 8), T2(MX_ELEM_F16, 8, 16)};
  mx_func_t *f;
  mx_builder_t b;
  int32_t a[3];
  CHECK_OK(mx_build_func(m, "main", false, args, 3, &f, &b, a));
  int32_t x32, normed, h16, q;
  CHECK_OK(mx_build_convert(&b, a[0], MX_ELEM_F32, &x32));
  CHECK(type_is(&b, x32, T3(MX_ELEM_F32, 1, 4, 8)));
  mx_named_attr_t cattrs[1] = {{"eps", mx_attr_float(1e-5, MX_ELEM_F32)}};
  int32_t cops[2] = {x32, a[1]};
  CHECK_OK(mx_build_composite(&b, "mx.rms_norm", cops, 2, cattrs, 1, "rms_norm_impl", 1, &normed));
  CHECK(type_is(&b, normed, T3(MX_ELEM_F32, 1, 4, 8)));
  CHECK_OK(mx_build_convert(&b, normed, MX_ELEM_F16, &h16));
  // f16 x f16 -> f32 accumulation.
  mx_dot_dims_t dd = {{NULL, 0}, {NULL, 0}, {k2, 1}, {k0, 1}};
  CHECK_OK(mx_build_dot_general(&b, h16, a[2], &dd, MX_ELEM_F32, &q));
  CHECK(type_is(&b, q, T3(MX_ELEM_F32, 1, 4, 16)));
  const mx_op_t *dot = b.block->ops[b.block->n_ops - 1];
  const mx_attr_t *dn = mx_op_attr(dot, "dot_dimension_numbers");
  CHECK(dn != NULL && dn->kind == MX_ATTR_STRUCT && strcmp(dn->s, "stablehlo.dot") == 0);
  const mx_attr_t *lc = mx_attr_field(dn, "lhs_contracting_dimensions");
  CHECK(lc != NULL && lc->kind == MX_ATTR_DENSE_ARRAY && lc->n == 1 && lc->ints[0] == 2);

  // while (i < 3) { i += 1; acc += q }
  int32_t i0, acc0;
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_I32, 0, &i0));
  CHECK_OK(mx_build_binary(&b, MX_OP_SUBTRACT, q, q, &acc0));
  int32_t wops[2] = {i0, acc0};
  mx_op_t *w;
  CHECK_OK(mx_build_while(&b, wops, 2, &w));
  if (w != NULL) {
    CHECK(w->n_regions == 2 && w->n_results == 2);
    mx_block_t *cond = w->regions[0], *body = w->regions[1];
    mx_builder_t cb = mx_builder_at(f, cond);
    int32_t three, lt;
    CHECK_OK(mx_build_scalar(&cb, MX_ELEM_I32, 3, &three));
    CHECK_OK(mx_build_compare(&cb, MX_CMP_LT, MX_CMP_TYPE_AUTO, cond->args[0], three, &lt));
    CHECK(type_is(&cb, lt, T0(MX_ELEM_I1)));
    CHECK_OK(mx_build_return(&cb, &lt, 1));
    mx_builder_t bb = mx_builder_at(f, body);
    int32_t one, i1, acc1;
    CHECK_OK(mx_build_scalar(&bb, MX_ELEM_I32, 1, &one));
    CHECK_OK(mx_build_binary(&bb, MX_OP_ADD, body->args[0], one, &i1));
    CHECK_OK(mx_build_binary(&bb, MX_OP_ADD, body->args[1], q, &acc1));
    int32_t rets[2] = {i1, acc1};
    CHECK_OK(mx_build_return(&bb, rets, 2));
    CHECK_OK(mx_build_finish(&b, w));
    CHECK(type_is(&b, w->results[1], T3(MX_ELEM_F32, 1, 4, 16)));
    CHECK_OK(mx_build_return(&b, &w->results[1], 1));
  }
  CHECK_OK(mx_hlo_verify_module(m));
  // Composite carries its canonical attributes.
  const mx_op_t *comp = NULL;
  for (int32_t i = 0; i < f->body->n_ops; i++) {
    if (f->body->ops[i]->code == MX_OP_COMPOSITE) comp = f->body->ops[i];
  }
  CHECK(comp != NULL);
  if (comp != NULL) {
    const mx_attr_t *n = mx_op_attr(comp, "name"), *d = mx_op_attr(comp, "decomposition");
    const mx_attr_t *v = mx_op_attr(comp, "version"),
                    *ca = mx_op_attr(comp, "composite_attributes");
    CHECK(n && n->kind == MX_ATTR_STRING && strcmp(n->s, "mx.rms_norm") == 0);
    CHECK(d && d->kind == MX_ATTR_SYMBOL && strcmp(d->s, "rms_norm_impl") == 0);
    CHECK(v && v->kind == MX_ATTR_INT && v->i == 1 && v->elem == MX_ELEM_I32);
    CHECK(ca && ca->kind == MX_ATTR_DICT && mx_attr_field(ca, "eps") != NULL);
  }
  // Function names are unique.
  mx_func_t *dup;
  CHECK_ERR(mx_build_func(m, "main", false, NULL, 0, &dup, NULL, NULL), E,
            "function @main is defined twice");
  // Nothing can follow the return.
  int32_t z;
  CHECK_ERR(mx_build_scalar(&b, MX_ELEM_F32, 0, &z), MX_ERR_INVALID_ARG, "already ends with");
  return m;
}

// print -> parse (verifies) -> print is stable, in pretty and generic form.
static void test_roundtrip(const mx_module_t *m) {
  for (int generic = 0; generic < 2; generic++) {
    mx_print_opts_t po = {0};
    po.generic = generic;
    mx_strbuf_t s1, s2;
    mx_strbuf_init(&s1);
    mx_strbuf_init(&s2);
    CHECK_OK(mx_hlo_print(m, &po, &s1));
    mx_module_t *m2 = NULL;
    CHECK_OK(mx_hlo_parse(s1.data, s1.len, NULL, &m2));
    if (m2 != NULL) {
      CHECK_OK(mx_hlo_print(m2, &po, &s2));
      CHECK_MSG(s2.data != NULL && strcmp(s1.data, s2.data) == 0, "round trip differs:\n%s\n--\n%s",
                s1.data, s2.data ? s2.data : "");
    }
    mx_module_destroy(m2);
    mx_strbuf_free(&s1);
    mx_strbuf_free(&s2);
  }
}

// Runs @main of the built graph (composite -> its decomposition, f16 dot with f32 accumulation,
// while loop adding q three times) and compares with a direct computation.
static void test_run_graph(const mx_module_t *m) {
  const mx_func_t *f = mx_module_find_func(m, "main");
  if (f == NULL) return;
  mx_tensor_t args[3], out;
  memset(&out, 0, sizeof out);
  for (int i = 0; i < 3; i++)
    CHECK_OK(mx_tensor_alloc(&args[i], mx_value_type(f, f->body->args[i])));
  for (int64_t i = 0; i < 32; i++) mx_tensor_set_f64(&args[0], i, 0.25 * (double)(i % 7) - 0.6);
  for (int64_t i = 0; i < 8; i++) mx_tensor_set_f64(&args[1], i, 0.5 + 0.125 * (double)i);
  for (int64_t i = 0; i < 128; i++) mx_tensor_set_f64(&args[2], i, 0.0625 * (double)(i % 5) - 0.1);
  mx_status_t st = mx_interp_run(m, f, args, 3, &out, NULL);
  CHECK_OK(st);
  if (st == MX_OK) {
    double max_err = 0;
    for (int t = 0; t < 4; t++) {
      double x[8], ss = 0;
      for (int h = 0; h < 8; h++) {
        x[h] = mx_tensor_get_f64(&args[0], t * 8 + h);
        ss += x[h] * x[h];
      }
      double r = 1.0 / sqrt(ss / 8 + 1e-5);
      double h16[8];
      for (int h = 0; h < 8; h++) {
        double y = x[h] * r * mx_tensor_get_f64(&args[1], h);
        h16[h] = mx_float_decode(MX_ELEM_F16, mx_float_encode(MX_ELEM_F16, y));
      }
      for (int n = 0; n < 16; n++) {
        double q = 0;
        for (int h = 0; h < 8; h++) q += h16[h] * mx_tensor_get_f64(&args[2], h * 16 + n);
        double err = fabs(3 * q - mx_tensor_get_f64(&out, t * 16 + n));
        if (err > max_err) max_err = err;
      }
    }
    CHECK_MSG(max_err < 1e-3, "max error %g", max_err);
  }
  for (int i = 0; i < 3; i++) mx_tensor_free(&args[i]);
  mx_tensor_free(&out);
}

// A fresh function `name` with the given argument types.
static mx_builder_t fn(mx_module_t *m, const char *name, const mx_type_t *args, int32_t n,
                       int32_t *ids) {
  mx_func_t *f = NULL;
  mx_builder_t b = {0};
  mx_status_t st = mx_build_func(m, name, false, args, n, &f, &b, ids);
  CHECK_OK(st);
  return b;
}

static void test_elementwise_errors(mx_module_t *m) {
  mx_type_t args[6] = {T2(MX_ELEM_F32, 2, 3), T2(MX_ELEM_F32, 3, 2), T2(MX_ELEM_I32, 2, 3),
                       T2(MX_ELEM_I1, 2, 3),  T1(MX_ELEM_F32, 3),    T0(MX_ELEM_F32)};
  int32_t a[6], r;
  mx_builder_t b = fn(m, "elementwise", args, 6, a);
  // unary
  CHECK_OK(mx_build_unary(&b, MX_OP_EXPONENTIAL, a[0], &r));
  CHECK_ERR(mx_build_unary(&b, MX_OP_FLOOR, a[2], &r), E, "stablehlo.floor", "tensor<2x3xi32>",
            "floating-point");
  CHECK_ERR(mx_build_unary(&b, MX_OP_ADD, a[0], &r), MX_ERR_INVALID_ARG, "not a unary");
  CHECK_ERR(mx_build_unary(&b, MX_OP_NOT, a[0], &r), E, "stablehlo.not", "boolean or integer");
  CHECK_ERR(mx_build_unary(&b, MX_OP_NEGATE, 999, &r), E, "unknown value");
  CHECK_OK(mx_build_unary(&b, MX_OP_IS_FINITE, a[0], &r));
  CHECK(type_is(&b, r, T2(MX_ELEM_I1, 2, 3)));
  // binary
  CHECK_ERR(mx_build_binary(&b, MX_OP_ADD, a[0], a[1], &r), E,
            "stablehlo.add: operand types differ: lhs tensor<2x3xf32>, rhs tensor<3x2xf32>",
            "broadcast_in_dim");
  CHECK_ERR(mx_build_binary(&b, MX_OP_MULTIPLY, a[0], a[4], &r), E, "tensor<3xf32>");
  CHECK_ERR(mx_build_binary(&b, MX_OP_ADD, a[0], a[2], &r), E, "tensor<2x3xi32>");
  CHECK_ERR(mx_build_binary(&b, MX_OP_AND, a[0], a[0], &r), E, "stablehlo.and",
            "boolean or integer");
  CHECK_ERR(mx_build_binary(&b, MX_OP_SHIFT_LEFT, a[3], a[3], &r), E, "integer elements");
  CHECK_ERR(mx_build_binary(&b, MX_OP_EXPONENTIAL, a[0], a[0], &r), MX_ERR_INVALID_ARG,
            "not a binary");
  CHECK_OK(mx_build_binary(&b, MX_OP_COMPLEX, a[0], a[0], &r));
  CHECK(type_is(&b, r, T2(MX_ELEM_C64, 2, 3)));
  int32_t re;
  CHECK_OK(mx_build_unary(&b, MX_OP_ABS, r, &re));
  CHECK(type_is(&b, re, T2(MX_ELEM_F32, 2, 3)));
  // convert / bitcast_convert
  CHECK_OK(mx_build_convert(&b, a[0], MX_ELEM_BF16, &r));
  CHECK(type_is(&b, r, T2(MX_ELEM_BF16, 2, 3)));
  CHECK_ERR(mx_build_convert(&b, a[0], MX_ELEM_INVALID, &r), E, "stablehlo.convert",
            "invalid result element type");
  CHECK_OK(mx_build_bitcast_convert(&b, a[0], MX_ELEM_I32, &r));
  CHECK(type_is(&b, r, T2(MX_ELEM_I32, 2, 3)));
  CHECK_OK(mx_build_bitcast_convert(&b, a[0], MX_ELEM_F16, &r));
  CHECK(type_is(&b, r, T3(MX_ELEM_F16, 2, 3, 2)));
  CHECK_ERR(mx_build_bitcast_convert(&b, a[0], MX_ELEM_F64, &r), E,
            "stablehlo.bitcast_convert: cannot bitcast tensor<2x3xf32> to f64",
            "last dimension must be 2");
  // select / clamp / compare
  CHECK_OK(mx_build_select(&b, a[3], a[0], a[0], &r));
  CHECK_ERR(mx_build_select(&b, a[0], a[0], a[0], &r), E, "stablehlo.select",
            "pred type tensor<2x3xf32> must have i1 elements");
  CHECK_ERR(mx_build_select(&b, a[3], a[0], a[2], &r), E, "on_true type tensor<2x3xf32>",
            "tensor<2x3xi32> differ");
  CHECK_OK(mx_build_clamp(&b, a[5], a[0], a[5], &r));
  CHECK_ERR(mx_build_clamp(&b, a[4], a[0], a[5], &r), E, "stablehlo.clamp",
            "min type tensor<3xf32> must be a scalar or match operand type tensor<2x3xf32>");
  CHECK_OK(mx_build_compare(&b, MX_CMP_GT, MX_CMP_TYPE_AUTO, a[0], a[0], &r));
  CHECK(type_is(&b, r, T2(MX_ELEM_I1, 2, 3)));
  const mx_op_t *cmp = b.block->ops[b.block->n_ops - 1];
  const mx_attr_t *dir = mx_op_attr(cmp, "comparison_direction");
  const mx_attr_t *ct = mx_op_attr(cmp, "compare_type");
  CHECK(dir && dir->kind == MX_ATTR_ENUM && strcmp(dir->s, "GT") == 0 &&
        strcmp(dir->enum_kind, "comparison_direction") == 0);
  CHECK(ct && ct->kind == MX_ATTR_ENUM && strcmp(ct->s, "FLOAT") == 0 &&
        strcmp(ct->enum_kind, "comparison_type") == 0);
  CHECK_ERR(mx_build_compare(&b, MX_CMP_EQ, MX_CMP_TYPE_AUTO, a[0], a[1], &r), E,
            "stablehlo.compare: operand types differ");
  CHECK_ERR(mx_build_compare(&b, MX_CMP_EQ, MX_CMP_TYPE_SIGNED, a[0], a[0], &r), E,
            "compare_type SIGNED does not fit operand type tensor<2x3xf32>");
  CHECK_ERR(mx_build_compare(&b, (mx_compare_dir_t)42, MX_CMP_TYPE_AUTO, a[0], a[0], &r),
            MX_ERR_INVALID_ARG, "direction");
}

static void test_constant_errors(mx_module_t *m) {
  int32_t a[1], r;
  mx_builder_t b = fn(m, "constants", NULL, 0, a);
  mx_tensor_t t;
  mx_type_t ty = T2(MX_ELEM_I32, 2, 2);
  CHECK_OK(mx_tensor_alloc(&t, &ty));
  mx_tensor_set_i64(&t, 3, 7);
  CHECK_OK(mx_build_constant(&b, &t, &r));
  CHECK(type_is(&b, r, ty));
  mx_tensor_free(&t);
  CHECK_ERR(mx_build_constant(&b, NULL, &r), MX_ERR_INVALID_ARG, "stablehlo.constant");
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_BF16, 1.5, &r));
  CHECK(type_is(&b, r, T0(MX_ELEM_BF16)));
  CHECK_ERR(mx_build_scalar(&b, MX_ELEM_INVALID, 1.0, &r), MX_ERR_INVALID_ARG, "splat type");
  mx_type_t neg = T1(MX_ELEM_F32, -1);
  CHECK_ERR(mx_build_splat(&b, &neg, 1.0, &r), MX_ERR_INVALID_ARG, "negative dimension");
  mx_type_t it = T2(MX_ELEM_I32, 4, 5);
  CHECK_OK(mx_build_iota(&b, &it, 1, &r));
  CHECK(type_is(&b, r, it));
  CHECK_ERR(mx_build_iota(&b, &it, 2, &r), E,
            "stablehlo.iota: iota_dimension 2 is out of range for result type tensor<4x5xi32>");
  mx_type_t bt = T1(MX_ELEM_I1, 4);
  CHECK_ERR(mx_build_iota(&b, &bt, 0, &r), E, "stablehlo.iota", "tensor<4xi1>");
}

static void test_shape_errors(mx_module_t *m) {
  mx_type_t args[5] = {T3(MX_ELEM_F32, 2, 3, 4), T0(MX_ELEM_I32), T0(MX_ELEM_F32),
                       T2(MX_ELEM_F32, 3, 4), T0(MX_ELEM_F16)};
  int32_t a[5], r;
  mx_builder_t b = fn(m, "shapes", args, 5, a);
  // broadcast_in_dim
  static const int64_t d234[] = {2, 3, 4}, d534[] = {5, 3, 4}, bd12[] = {1, 2}, bd03[] = {0, 3};
  CHECK_OK(mx_build_broadcast_in_dim(&b, a[3], d234, 3, bd12, &r));
  CHECK(type_is(&b, r, T3(MX_ELEM_F32, 2, 3, 4)));
  static const int64_t d244[] = {2, 4, 4};
  CHECK_ERR(mx_build_broadcast_in_dim(&b, a[3], d244, 3, bd12, &r), E,
            "stablehlo.broadcast_in_dim: operand tensor<3x4xf32> dim 0 = 3 must be 1 or equal "
            "result tensor<2x4x4xf32> dim 1 = 4");
  CHECK_ERR(mx_build_broadcast_in_dim(&b, a[3], d534, 3, bd03, &r), E,
            "broadcast_dimensions[1] = 3 is out of range [0, 3)");
  CHECK_ERR(mx_build_broadcast_in_dim(&b, a[3], d234, 3, NULL, &r), MX_ERR_INVALID_ARG,
            "broadcast_dimensions");
  // broadcast_to (trailing alignment)
  CHECK_OK(mx_build_broadcast_to(&b, a[3], d234, 3, &r));
  CHECK(type_is(&b, r, T3(MX_ELEM_F32, 2, 3, 4)));
  static const int64_t d43[] = {4, 3};
  CHECK_ERR(
      mx_build_broadcast_to(&b, a[3], d43, 2, &r), E,
      "operand tensor<3x4xf32> dim 0 = 3 must be 1 or equal result tensor<4x3xf32> dim 0 = 4");
  CHECK_ERR(mx_build_broadcast_to(&b, a[0], d43, 2, &r), E,
            "cannot broadcast tensor<2x3x4xf32> to rank 2");
  // reshape
  static const int64_t d64[] = {6, 4}, d65[] = {6, 5};
  CHECK_OK(mx_build_reshape(&b, a[0], d64, 2, &r));
  CHECK(type_is(&b, r, T2(MX_ELEM_F32, 6, 4)));
  CHECK_ERR(mx_build_reshape(&b, a[0], d65, 2, &r), E,
            "stablehlo.reshape: element counts differ: operand tensor<2x3x4xf32> has 24, result "
            "tensor<6x5xf32> has 30");
  // transpose
  static const int64_t p201[] = {2, 0, 1}, p200[] = {2, 0, 0}, p01[] = {0, 1};
  CHECK_OK(mx_build_transpose(&b, a[0], p201, 3, &r));
  CHECK(type_is(&b, r, T3(MX_ELEM_F32, 4, 2, 3)));
  CHECK_ERR(mx_build_transpose(&b, a[0], p200, 3, &r), E,
            "stablehlo.transpose: permutation has duplicate dimension 0");
  CHECK_ERR(mx_build_transpose(&b, a[0], p01, 2, &r), E,
            "permutation has 2 entries, expected rank(tensor<2x3x4xf32>) = 3");
  // slice
  static const int64_t s0[] = {0, 1, 0}, l0[] = {2, 3, 4}, st[] = {1, 1, 3}, l9[] = {2, 9, 4};
  CHECK_OK(mx_build_slice(&b, a[0], s0, l0, st, 3, &r));
  CHECK(type_is(&b, r, T3(MX_ELEM_F32, 2, 2, 2)));
  CHECK_ERR(mx_build_slice(&b, a[0], s0, l9, NULL, 3, &r), E,
            "stablehlo.slice: dim 1: need 0 <= start 1 <= limit 9 <= size 3");
  // dynamic_slice
  int32_t starts[3] = {a[1], a[1], a[1]};
  static const int64_t sz[] = {1, 2, 4}, szbad[] = {1, 4, 4};
  CHECK_OK(mx_build_dynamic_slice(&b, a[0], starts, 3, sz, &r));
  CHECK(type_is(&b, r, T3(MX_ELEM_F32, 1, 2, 4)));
  CHECK_ERR(mx_build_dynamic_slice(&b, a[0], starts, 3, szbad, &r), E,
            "stablehlo.dynamic_slice: slice_sizes[1] = 4 is out of range for operand "
            "tensor<2x3x4xf32>");
  CHECK_ERR(mx_build_dynamic_slice(&b, a[0], starts, 2, sz, &r), E, "expected 3 start indices");
  int32_t fstarts[3] = {a[1], a[2], a[1]};
  CHECK_ERR(mx_build_dynamic_slice(&b, a[0], fstarts, 3, sz, &r), E,
            "start index 1 has type tensor<f32>, expected an integer scalar");
  // dynamic_update_slice
  int32_t upd;
  CHECK_OK(mx_build_dynamic_slice(&b, a[0], starts, 3, sz, &upd));
  CHECK_OK(mx_build_dynamic_update_slice(&b, a[0], upd, starts, 3, &r));
  CHECK(type_is(&b, r, T3(MX_ELEM_F32, 2, 3, 4)));
  CHECK_ERR(mx_build_dynamic_update_slice(&b, upd, a[0], starts, 3, &r), E,
            "stablehlo.dynamic_update_slice: update tensor<2x3x4xf32> dim 0 = 2 exceeds operand "
            "tensor<1x2x4xf32> dim 0 = 1");
  // concatenate
  int32_t cc[2] = {a[0], a[0]}, cbad[2] = {a[0], upd};
  CHECK_OK(mx_build_concatenate(&b, cc, 2, 1, &r));
  CHECK(type_is(&b, r, T3(MX_ELEM_F32, 2, 6, 4)));
  CHECK_ERR(mx_build_concatenate(&b, cbad, 2, 2, &r), E,
            "stablehlo.concatenate: operand 1 type tensor<1x2x4xf32> differs from "
            "tensor<2x3x4xf32> in dim 0");
  CHECK_ERR(mx_build_concatenate(&b, cc, 2, 3, &r), E, "dimension 3 is out of range");
  // pad
  static const int64_t lo[] = {1, 0, -1}, hi[] = {0, 2, 0}, in[] = {0, 1, 0};
  CHECK_OK(mx_build_pad(&b, a[0], a[2], lo, hi, in, 3, &r));
  CHECK(type_is(&b, r, T3(MX_ELEM_F32, 3, 7, 3)));
  CHECK_ERR(mx_build_pad(&b, a[0], a[4], lo, hi, in, 3, &r), E,
            "stablehlo.pad: padding value type tensor<f16> must be a scalar");
  static const int64_t neg[] = {0, 0, -5};
  CHECK_ERR(mx_build_pad(&b, a[0], a[2], neg, hi, NULL, 3, &r), E, "negative size");
  // reverse
  static const int64_t rv[] = {0, 2}, rvbad[] = {0, 3};
  CHECK_OK(mx_build_reverse(&b, a[0], rv, 2, &r));
  CHECK_ERR(mx_build_reverse(&b, a[0], rvbad, 2, &r), E,
            "stablehlo.reverse: dimensions[1] = 3 is out of range [0, 3)");
}

static void test_gather_scatter(mx_module_t *m) {
  // Embedding lookup: table[V=10, H=8], ids[B=1, T=4] -> [1, 4, 8].
  mx_type_t args[4] = {T2(MX_ELEM_F32, 10, 8), T3(MX_ELEM_I32, 1, 4, 1), T3(MX_ELEM_F32, 1, 4, 8),
                       T3(MX_ELEM_F32, 1, 5, 8)};
  int32_t a[4], r;
  mx_builder_t b = fn(m, "gather_scatter", args, 4, a);
  static const int64_t ss[] = {1, 8}, ssbad[] = {1, 9}, ss2[] = {2, 8};
  mx_gather_dims_t g = {{k2, 1}, {k0, 1}, {NULL, 0}, {NULL, 0}, {k0, 1}, 2};
  CHECK_OK(mx_build_gather(&b, a[0], a[1], &g, ss, false, &r));
  CHECK(type_is(&b, r, T3(MX_ELEM_F32, 1, 4, 8)));
  const mx_attr_t *dn = mx_op_attr(b.block->ops[b.block->n_ops - 1], "dimension_numbers");
  CHECK(dn && dn->kind == MX_ATTR_STRUCT && strcmp(dn->s, "stablehlo.gather") == 0);
  CHECK(dn && mx_attr_field(dn, "index_vector_dim")->i == 2);
  CHECK_ERR(mx_build_gather(&b, a[0], a[1], &g, ssbad, false, &r), E,
            "stablehlo.gather: slice_sizes[1] = 9 is out of range for operand tensor<10x8xf32>");
  CHECK_ERR(mx_build_gather(&b, a[0], a[1], &g, ss2, false, &r), E,
            "slice_sizes[0] = 2 must be <= 1");
  mx_gather_dims_t g2 = g;
  static const int64_t sim2[] = {0, 1};
  g2.start_index_map = (mx_dims_t){sim2, 2};
  CHECK_ERR(mx_build_gather(&b, a[0], a[1], &g2, ss, false, &r), E,
            "start_index_map has 2 entries, expected 1");
  CHECK_ERR(mx_build_gather(&b, a[0], a[2], &g, ss, false, &r), E,
            "start_indices type tensor<1x4x8xf32> must have integer elements");
  // Scatter rows back (add), and replace.
  mx_scatter_dims_t s = {{k2, 1}, {k0, 1}, {NULL, 0}, {NULL, 0}, {k0, 1}, 2};
  CHECK_OK(mx_build_scatter(&b, a[0], a[1], a[2], &s, MX_OP_ADD, false, false, &r));
  CHECK(type_is(&b, r, T2(MX_ELEM_F32, 10, 8)));
  CHECK_OK(mx_build_scatter(&b, a[0], a[1], a[2], &s, MX_SCATTER_REPLACE, false, true, &r));
  CHECK_OK(mx_hlo_verify_op(b.func, b.block->ops[b.block->n_ops - 1]));
  CHECK_ERR(mx_build_scatter(&b, a[0], a[1], a[3], &s, MX_OP_ADD, false, false, &r), E,
            "stablehlo.scatter: updates tensor<1x5x8xf32> dim 1 = 5 must equal scatter_indices "
            "tensor<1x4x1xi32> dim 1 = 4");
  // General form with two inputs of different shapes.
  int32_t sin2[2] = {a[0], a[2]}, sup2[2] = {a[2], a[2]};
  mx_op_t *sop;
  CHECK_ERR(mx_build_scatter_region(&b, sin2, 2, a[1], sup2, &s, false, false, &sop), E,
            "stablehlo.scatter: inputs (and updates) must have equal shapes: tensor<1x4x8xf32> vs "
            "tensor<10x8xf32>");
  int32_t sin3[2] = {a[0], a[0]}, sup3[2] = {a[2], a[2]};
  CHECK_OK(mx_build_scatter_region(&b, sin3, 2, a[1], sup3, &s, false, false, &sop));
  if (sop != NULL) {
    CHECK(sop->n_results == 2 && sop->regions[0]->n_args == 4);
    mx_builder_t rb = mx_builder_at(b.func, sop->regions[0]);
    int32_t rr[2] = {sop->regions[0]->args[2], sop->regions[0]->args[3]};
    CHECK_OK(mx_build_return(&rb, rr, 2));
    CHECK_OK(mx_build_finish(&b, sop));
  }
  static const int64_t k3[] = {3};
  mx_scatter_dims_t s2 = s;
  s2.update_window_dims = (mx_dims_t){k3, 1};
  CHECK_ERR(mx_build_scatter(&b, a[0], a[1], a[2], &s2, MX_OP_ADD, false, false, &r), E,
            "update_window_dims[0] = 3 is out of range [0, 3)");
}

static void test_compute_errors(mx_module_t *m) {
  mx_type_t args[6] = {
      T2(MX_ELEM_F32, 2, 3),        T2(MX_ELEM_F32, 4, 5), T4(MX_ELEM_F32, 1, 8, 8, 3),
      T4(MX_ELEM_F32, 3, 3, 3, 16), T0(MX_ELEM_F32),       T2(MX_ELEM_F32, 3, 5)};
  int32_t a[6], r;
  mx_builder_t b = fn(m, "compute", args, 6, a);
  // dot_general
  mx_dot_dims_t dd = {{NULL, 0}, {NULL, 0}, {k1, 1}, {k0, 1}};
  CHECK_ERR(mx_build_dot_general(&b, a[0], a[1], &dd, MX_ELEM_INVALID, &r), E,
            "stablehlo.dot_general: contracting dimension sizes differ: lhs tensor<2x3xf32> dim "
            "1 = 3, rhs tensor<4x5xf32> dim 0 = 4");
  CHECK_OK(mx_build_dot_general(&b, a[0], a[5], &dd, MX_ELEM_INVALID, &r));
  CHECK(type_is(&b, r, T2(MX_ELEM_F32, 2, 5)));
  mx_dot_dims_t bad = {{k0, 1}, {NULL, 0}, {k1, 1}, {k0, 1}};
  CHECK_ERR(mx_build_dot_general(&b, a[0], a[5], &bad, MX_ELEM_F32, &r), E,
            "different numbers of batching dimensions");
  mx_dot_dims_t oor = {{NULL, 0}, {NULL, 0}, {k2, 1}, {k0, 1}};
  CHECK_ERR(mx_build_dot_general(&b, a[0], a[5], &oor, MX_ELEM_F32, &r), E,
            "lhs batching/contracting dimensions[0] = 2 is out of range [0, 2)");
  // convolution: NHWC input, HWIO kernel, stride 2, SAME-ish padding.
  static const int64_t sp12[] = {1, 2}, sp01[] = {0, 1}, strides[] = {2, 2};
  static const int64_t pad[] = {1, 1, 1, 1};
  mx_conv_params_t cp = {0,         3,       {sp12, 2}, 2,    3,    {sp01, 2}, 0, 3,
                         {sp12, 2}, strides, pad,       NULL, NULL, NULL,      1, 1};
  CHECK_OK(mx_build_convolution(&b, a[2], a[3], &cp, MX_ELEM_INVALID, &r));
  CHECK(type_is(&b, r, T4(MX_ELEM_F32, 1, 4, 4, 16)));
  mx_conv_params_t cbad = cp;
  cbad.kernel_input_feature_dim = 3;
  cbad.kernel_output_feature_dim = 2;
  CHECK_ERR(mx_build_convolution(&b, a[2], a[3], &cbad, MX_ELEM_F32, &r), E,
            "stablehlo.convolution: input feature size 3 of lhs tensor<1x8x8x3xf32> must equal "
            "feature_group_count 1 x kernel input feature size 16");
  mx_conv_params_t cdup = cp;
  cdup.input_feature_dim = 1;
  CHECK_ERR(mx_build_convolution(&b, a[2], a[3], &cdup, MX_ELEM_F32, &r), E,
            "input has duplicate dimension 1");
  // reduce
  CHECK_OK(mx_build_reduce(&b, a[2], a[4], sp12, 2, MX_OP_MAXIMUM, &r));
  CHECK(type_is(&b, r, T2(MX_ELEM_F32, 1, 3)));
  static const int64_t d4[] = {4};
  CHECK_ERR(mx_build_reduce(&b, a[2], a[4], d4, 1, MX_OP_ADD, &r), E,
            "stablehlo.reduce: dimensions[0] = 4 is out of range [0, 4)");
  int32_t i0;
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_I32, 0, &i0));
  CHECK_ERR(mx_build_reduce(&b, a[2], i0, k0, 1, MX_OP_ADD, &r), E,
            "init value type tensor<i32> does not match the element type of input");
  CHECK_ERR(mx_build_reduce(&b, a[2], a[0], k0, 1, MX_OP_ADD, &r), E, "init value",
            "tensor<2x3xf32>");
  CHECK_ERR(mx_build_reduce(&b, a[2], a[4], k0, 1, MX_OP_NEGATE, &r), MX_ERR_INVALID_ARG,
            "not a binary");
  // argmax over dim 1 of [2,3]: general reduce with 2 operands.
  mx_type_t it = T2(MX_ELEM_I32, 2, 3);
  int32_t idx, ninf, izero;
  CHECK_OK(mx_build_iota(&b, &it, 1, &idx));
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_F32, -1e30, &ninf));
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_I32, 0, &izero));
  int32_t ins[2] = {a[0], idx}, inits[2] = {ninf, izero};
  mx_op_t *red;
  CHECK_OK(mx_build_reduce_region(&b, ins, inits, 2, k1, 1, &red));
  if (red != NULL) {
    mx_block_t *body = red->regions[0];
    CHECK(body->n_args == 4);
    mx_builder_t rb = mx_builder_at(b.func, body);
    int32_t gt, v, i;
    CHECK_OK(mx_build_compare(&rb, MX_CMP_GT, MX_CMP_TYPE_AUTO, body->args[2], body->args[0], &gt));
    CHECK_OK(mx_build_select(&rb, gt, body->args[2], body->args[0], &v));
    CHECK_OK(mx_build_select(&rb, gt, body->args[3], body->args[1], &i));
    int32_t rets[2] = {v, i};
    CHECK_OK(mx_build_return(&rb, rets, 2));
    CHECK_OK(mx_build_finish(&b, red));
    CHECK(type_is(&b, red->results[1], T1(MX_ELEM_I32, 2)));
  }
  // bf16 inputs with an f32 accumulator (StableHLO promotion).
  int32_t xb;
  CHECK_OK(mx_build_convert(&b, a[0], MX_ELEM_BF16, &xb));
  CHECK_OK(mx_build_reduce_region(&b, &xb, &a[4], 1, k1, 1, &red));
  if (red != NULL) {
    mx_block_t *body = red->regions[0];
    mx_builder_t rb = mx_builder_at(b.func, body);
    int32_t s;
    CHECK(type_is(&rb, body->args[1], T0(MX_ELEM_F32)));
    CHECK_OK(mx_build_binary(&rb, MX_OP_ADD, body->args[0], body->args[1], &s));
    CHECK_OK(mx_build_return(&rb, &s, 1));
    CHECK_OK(mx_build_finish(&b, red));
    CHECK(type_is(&b, red->results[0], T1(MX_ELEM_F32, 2)));
  }
  // ... but not narrower accumulators.
  int64_t i64d[1] = {3};
  mx_type_t i64t = mx_type_tensor(MX_ELEM_I64, 1, i64d);
  int32_t iv;
  CHECK_OK(mx_build_iota(&b, &i64t, 0, &iv));
  mx_op_t *nar;
  CHECK_OK(mx_build_reduce_region(&b, &iv, &i0, 1, k0, 1, &nar));
  if (nar != NULL) {
    mx_builder_t rb = mx_builder_at(b.func, nar->regions[0]);
    CHECK_OK(mx_build_return(&rb, &nar->regions[0]->args[0], 1));
    CHECK_ERR(mx_build_finish(&b, nar), E,
              "stablehlo.reduce: region 0 argument 1 has type tensor<i32>, which "
              "tensor<3xi64> does not promote to");
  }
  // A body returning the wrong arity is caught by mx_build_finish.
  CHECK_OK(mx_build_reduce_region(&b, ins, inits, 2, k1, 1, &red));
  if (red != NULL) {
    mx_builder_t rb = mx_builder_at(b.func, red->regions[0]);
    CHECK_OK(mx_build_return(&rb, &red->regions[0]->args[0], 1));
    CHECK_ERR(mx_build_finish(&b, red), E,
              "stablehlo.reduce: region 0 returns 1 values, "
              "expected 2");
  }
  // reduce_window: 2x2 max pool, stride 2 over H, W.
  static const int64_t win[] = {1, 2, 2, 1}, ws[] = {1, 2, 2, 1}, win3[] = {2, 2, 1};
  mx_window_t w = {win, ws, NULL, NULL, NULL};
  CHECK_OK(mx_build_reduce_window(&b, a[2], a[4], &w, MX_OP_MAXIMUM, &r));
  CHECK(type_is(&b, r, T4(MX_ELEM_F32, 1, 4, 4, 3)));
  CHECK_OK(mx_hlo_verify_op(b.func, b.block->ops[b.block->n_ops - 1]));
  static const int64_t s01[] = {0, 1};
  mx_window_t wbad = {win3, s01, NULL, NULL, NULL};
  CHECK_ERR(mx_build_reduce_window(&b, a[0], a[4], &wbad, MX_OP_MAXIMUM, &r), E,
            "stablehlo.reduce_window: window_strides[0] = 0 must be positive");
  static const int64_t zero2[] = {0, 1};
  mx_window_t wzero = {zero2, NULL, NULL, NULL, NULL};
  CHECK_ERR(mx_build_reduce_window(&b, a[0], a[4], &wzero, MX_OP_ADD, &r), E,
            "window_dimensions[0] = 0 must be positive");
  // reduce_window general form: inputs of different shapes, then a bad body.
  mx_op_t *rw;
  int32_t rwin[2] = {a[0], a[5]}, rwinit[2] = {a[4], a[4]};
  static const int64_t w11[] = {1, 1};
  mx_window_t w1 = {w11, NULL, NULL, NULL, NULL};
  CHECK_ERR(mx_build_reduce_window_region(&b, rwin, rwinit, 2, &w1, &rw), E,
            "stablehlo.reduce_window: inputs must have equal shapes: tensor<2x3xf32> vs "
            "tensor<3x5xf32>");
  CHECK_OK(mx_build_reduce_window_region(&b, a, &a[4], 1, &w1, &rw));
  if (rw != NULL) {
    mx_builder_t rb = mx_builder_at(b.func, rw->regions[0]);
    CHECK_OK(mx_build_return(&rb, &i0, 1));
    CHECK_ERR(mx_build_finish(&b, rw), E,
              "stablehlo.reduce_window: region 0 returns type "
              "tensor<i32> at position 0, expected tensor<f32>");
  }
  // dot_general operands must share an element type.
  int32_t h;
  CHECK_OK(mx_build_convert(&b, a[5], MX_ELEM_F16, &h));
  CHECK_ERR(mx_build_dot_general(&b, a[0], h, &dd, MX_ELEM_F32, &r), E,
            "stablehlo.dot_general: operand element types differ: lhs tensor<2x3xf32>, rhs "
            "tensor<3x5xf16>");
  // sort: values and indices by value descending along dim 1.
  int32_t sorted[2], sins[2] = {a[0], idx};
  CHECK_OK(mx_build_sort(&b, sins, 2, 1, true, MX_CMP_GT, sorted));
  CHECK(type_is(&b, sorted[1], T2(MX_ELEM_I32, 2, 3)));
  CHECK_OK(mx_hlo_verify_op(b.func, b.block->ops[b.block->n_ops - 1]));
  CHECK_ERR(mx_build_sort(&b, sins, 2, 2, true, MX_CMP_GT, sorted), E,
            "stablehlo.sort: dimension 2 is out of range for tensor<2x3xf32>");
  int32_t sbad[2] = {a[0], a[1]};
  CHECK_ERR(mx_build_sort(&b, sbad, 2, 0, false, MX_CMP_LT, sorted), E,
            "inputs must have equal shapes");
  mx_op_t *so;
  CHECK_OK(mx_build_sort_region(&b, sins, 2, 0, false, &so));
  if (so != NULL) {
    mx_builder_t rb = mx_builder_at(b.func, so->regions[0]);
    CHECK_OK(mx_build_return(&rb, &so->regions[0]->args[0], 1));
    CHECK_ERR(mx_build_finish(&b, so), E,
              "stablehlo.sort: region 0 returns type tensor<f32> at "
              "position 0, expected tensor<i1>");
  }
}

static void test_control_errors(mx_module_t *m) {
  mx_type_t sig[2] = {T1(MX_ELEM_F32, 4), T1(MX_ELEM_F32, 4)};
  mx_func_t *callee;
  mx_builder_t cb;
  int32_t ca[2], cr;
  CHECK_OK(mx_build_func(m, "add2", true, sig, 2, &callee, &cb, ca));
  CHECK_OK(mx_build_binary(&cb, MX_OP_ADD, ca[0], ca[1], &cr));
  CHECK_OK(mx_build_return(&cb, &cr, 1));

  mx_type_t args[4] = {T1(MX_ELEM_F32, 4), T0(MX_ELEM_I1), T0(MX_ELEM_I32), T1(MX_ELEM_I32, 4)};
  int32_t a[4], r;
  mx_func_t *f;
  mx_builder_t b;
  CHECK_OK(mx_build_func(m, "control", false, args, 4, &f, &b, a));
  mx_type_t rt = T1(MX_ELEM_F32, 4);
  CHECK_OK(mx_func_set_result_types(f, &rt, 1));
  // call
  int32_t cargs[2] = {a[0], a[0]}, cbad[2] = {a[0], a[3]};
  CHECK_OK(mx_build_call(&b, "add2", cargs, 2, &r));
  CHECK(type_is(&b, r, T1(MX_ELEM_F32, 4)));
  CHECK_ERR(mx_build_call(&b, "add2", cbad, 2, &r), E,
            "func.call: operand 1 type tensor<4xi32> does not match @add2 argument type "
            "tensor<4xf32>");
  CHECK_ERR(mx_build_call(&b, "add2", cargs, 1, &r), E, "@add2 takes 2 arguments, got 1");
  CHECK_ERR(mx_build_call(&b, "nope", cargs, 2, &r), E, "func.call: unknown function @nope");
  // composite
  CHECK_OK(mx_build_composite(&b, "mx.add2", cargs, 2, NULL, 0, "add2", 0, &r));
  CHECK(type_is(&b, r, T1(MX_ELEM_F32, 4)));
  CHECK(mx_op_attr(b.block->ops[b.block->n_ops - 1], "version") == NULL);
  CHECK_ERR(mx_build_composite(&b, "mx.add2", cbad, 2, NULL, 0, "add2", 1, &r), E,
            "stablehlo.composite: operand 1 type tensor<4xi32> does not match @add2 argument");
  CHECK_ERR(mx_build_composite(&b, "mx.x", cargs, 2, NULL, 0, "missing", 1, &r), E,
            "stablehlo.composite: unknown function @missing");
  // custom_call
  mx_type_t crt[1] = {T1(MX_ELEM_F32, 4)};
  CHECK_OK(mx_build_custom_call(&b, "my_kernel", a, 1, crt, 1, false, "cfg", &r));
  CHECK(type_is(&b, r, crt[0]));
  CHECK_ERR(mx_build_custom_call(&b, NULL, a, 1, crt, 1, false, NULL, &r), MX_ERR_INVALID_ARG,
            "stablehlo.custom_call");
  // if
  mx_op_t *op;
  CHECK_OK(mx_build_if(&b, a[1], &rt, 1, &op));
  if (op != NULL) {
    mx_builder_t tb = mx_builder_at(f, op->regions[0]), eb = mx_builder_at(f, op->regions[1]);
    int32_t neg;
    CHECK_OK(mx_build_return(&tb, &a[0], 1));
    CHECK_OK(mx_build_unary(&eb, MX_OP_NEGATE, a[0], &neg));
    CHECK_OK(mx_build_return(&eb, &neg, 1));
    CHECK_OK(mx_build_finish(&b, op));
  }
  CHECK_ERR(mx_build_if(&b, a[2], &rt, 1, &op), E,
            "stablehlo.if: pred type tensor<i32> must be tensor<i1>");
  CHECK_OK(mx_build_if(&b, a[1], &rt, 1, &op));
  if (op != NULL) {
    mx_builder_t tb = mx_builder_at(f, op->regions[0]), eb = mx_builder_at(f, op->regions[1]);
    CHECK_OK(mx_build_return(&tb, &a[0], 1));
    CHECK_OK(mx_build_return(&eb, &a[3], 1));
    CHECK_ERR(mx_build_finish(&b, op), E,
              "stablehlo.if: region 1 returns type tensor<4xi32> "
              "at position 0, expected tensor<4xf32>");
    op->regions[1]->n_ops = 0;  // undo for the module check below
    mx_builder_t eb2 = mx_builder_at(f, op->regions[1]);
    CHECK_OK(mx_build_return(&eb2, &a[0], 1));
  }
  // case
  CHECK_OK(mx_build_case(&b, a[2], 3, &rt, 1, &op));
  if (op != NULL) {
    CHECK(op->n_regions == 3);
    for (int32_t i = 0; i < 3; i++) {
      mx_builder_t rb = mx_builder_at(f, op->regions[i]);
      CHECK_OK(mx_build_return(&rb, &a[0], 1));
    }
    CHECK_OK(mx_build_finish(&b, op));
  }
  CHECK_ERR(mx_build_case(&b, a[1], 2, &rt, 1, &op), E,
            "stablehlo.case: index type tensor<i1> must be tensor<i32>");
  // while whose cond returns a non-i1 value.
  mx_op_t *w;
  CHECK_OK(mx_build_while(&b, a, 1, &w));
  if (w != NULL) {
    mx_builder_t c = mx_builder_at(f, w->regions[0]), bd = mx_builder_at(f, w->regions[1]);
    CHECK_OK(mx_build_return(&c, &w->regions[0]->args[0], 1));
    CHECK_OK(mx_build_return(&bd, &w->regions[1]->args[0], 1));
    CHECK_ERR(mx_build_finish(&b, w), E,
              "stablehlo.while: region 0 returns type tensor<4xf32> at position 0, expected "
              "tensor<i1>");
  }
  // return
  CHECK_ERR(mx_build_return(&b, &a[3], 1), E,
            "func.return: operand 0 type tensor<4xi32> does not match @control result type "
            "tensor<4xf32>");
  CHECK_ERR(mx_build_return(&b, a, 2), E, "@control returns 1 values, got 2");
  CHECK_OK(mx_build_return(&b, &a[0], 1));
}

// One valid use of every constructor; the module verifies and round-trips through text.
static void test_all_ops_roundtrip(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_type_t sig = T1(MX_ELEM_F32, 4);
  mx_func_t *cf;
  mx_builder_t cb;
  int32_t ca, cr;
  CHECK_OK(mx_build_func(m, "neg", true, &sig, 1, &cf, &cb, &ca));
  CHECK_OK(mx_build_unary(&cb, MX_OP_NEGATE, ca, &cr));
  CHECK_OK(mx_build_return(&cb, &cr, 1));
  mx_type_t args[4] = {T2(MX_ELEM_F32, 4, 6), T1(MX_ELEM_F32, 4), T0(MX_ELEM_I32),
                       T4(MX_ELEM_F32, 1, 6, 6, 2)};
  int32_t a[4], v[64];
  mx_func_t *f;
  mx_builder_t b;
  CHECK_OK(mx_build_func(m, "main", false, args, 4, &f, &b, a));
  mx_type_t it = T2(MX_ELEM_I32, 4, 6), sp = T2(MX_ELEM_F32, 4, 6);
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_F32, 0, &v[0]));
  CHECK_OK(mx_build_splat(&b, &sp, 2.5, &v[1]));
  CHECK_OK(mx_build_iota(&b, &it, 1, &v[2]));
  CHECK_OK(mx_build_unary(&b, MX_OP_TANH, a[0], &v[3]));
  CHECK_OK(mx_build_binary(&b, MX_OP_POWER, v[3], v[1], &v[4]));
  CHECK_OK(mx_build_convert(&b, v[2], MX_ELEM_F32, &v[5]));
  CHECK_OK(mx_build_bitcast_convert(&b, v[5], MX_ELEM_UI32, &v[6]));
  CHECK_OK(mx_build_compare(&b, MX_CMP_LE, MX_CMP_TYPE_TOTALORDER, v[4], v[5], &v[7]));
  CHECK_OK(mx_build_select(&b, v[7], v[4], v[5], &v[8]));
  CHECK_OK(mx_build_clamp(&b, v[0], v[8], v[0], &v[9]));
  static const int64_t d246[] = {2, 4, 6}, bd12[] = {1, 2}, d64[] = {6, 4}, p10[] = {1, 0};
  CHECK_OK(mx_build_broadcast_in_dim(&b, v[9], d246, 3, bd12, &v[10]));
  CHECK_OK(mx_build_reshape(&b, a[0], d64, 2, &v[11]));
  CHECK_OK(mx_build_transpose(&b, v[11], p10, 2, &v[12]));
  static const int64_t s0[] = {1, 0}, l0[] = {4, 6}, st[] = {2, 3};
  CHECK_OK(mx_build_slice(&b, v[12], s0, l0, st, 2, &v[13]));
  int32_t starts[2] = {a[2], a[2]};
  static const int64_t sz[] = {2, 3};
  CHECK_OK(mx_build_dynamic_slice(&b, a[0], starts, 2, sz, &v[14]));
  CHECK_OK(mx_build_dynamic_update_slice(&b, a[0], v[14], starts, 2, &v[15]));
  int32_t cc[2] = {v[15], a[0]};
  CHECK_OK(mx_build_concatenate(&b, cc, 2, 0, &v[16]));
  static const int64_t lo[] = {1, -1}, hi[] = {0, 2}, in[] = {1, 0};
  CHECK_OK(mx_build_pad(&b, a[0], v[0], lo, hi, in, 2, &v[17]));
  CHECK_OK(mx_build_reverse(&b, a[0], k1, 1, &v[18]));
  // gather rows of a[0] by index a[2] (as [1,1] indices), scatter them back.
  static const int64_t i11[] = {1, 1}, ss[] = {1, 6};
  int32_t idx;
  CHECK_OK(mx_build_broadcast_in_dim(&b, a[2], i11, 2, NULL, &idx));
  mx_gather_dims_t g = {{k1, 1}, {k0, 1}, {NULL, 0}, {NULL, 0}, {k0, 1}, 1};
  CHECK_OK(mx_build_gather(&b, a[0], idx, &g, ss, true, &v[19]));
  mx_scatter_dims_t sd = {{k1, 1}, {k0, 1}, {NULL, 0}, {NULL, 0}, {k0, 1}, 1};
  CHECK_OK(mx_build_scatter(&b, a[0], idx, v[19], &sd, MX_OP_ADD, false, false, &v[20]));
  CHECK_OK(mx_build_scatter(&b, a[0], idx, v[19], &sd, MX_SCATTER_REPLACE, true, true, &v[21]));
  mx_dot_dims_t dd = {{NULL, 0}, {NULL, 0}, {k1, 1}, {k0, 1}};
  CHECK_OK(mx_build_dot_general(&b, a[0], v[11], &dd, MX_ELEM_F32, &v[22]));
  // conv with every window attribute.
  static const int64_t sp12[] = {1, 2}, sp01[] = {0, 1}, cst[] = {1, 2}, pad[] = {1, 0, 0, 1};
  static const int64_t ld[] = {1, 1}, rd[] = {2, 1};
  static const bool rev[] = {false, true};
  mx_type_t kt = T4(MX_ELEM_F32, 2, 2, 2, 3);
  int32_t kern;
  CHECK_OK(mx_build_splat(&b, &kt, 0.5, &kern));
  mx_conv_params_t cp = {0,         3,   {sp12, 2}, 2,  3,  {sp01, 2}, 0, 3,
                         {sp12, 2}, cst, pad,       ld, rd, rev,       1, 1};
  CHECK_OK(mx_build_convolution(&b, a[3], kern, &cp, MX_ELEM_INVALID, &v[23]));
  CHECK(type_is(&b, v[23], T4(MX_ELEM_F32, 1, 5, 3, 3)));
  CHECK_OK(mx_build_reduce(&b, a[0], v[0], k1, 1, MX_OP_ADD, &v[24]));
  static const int64_t win[] = {2, 2}, wpad[] = {0, 1, 1, 0}, bdl[] = {1, 2}, wdl[] = {2, 1};
  mx_window_t w = {win, NULL, bdl, wdl, wpad};
  CHECK_OK(mx_build_reduce_window(&b, a[0], v[0], &w, MX_OP_MAXIMUM, &v[25]));
  int32_t srt[2], sin[2] = {a[0], v[2]};
  CHECK_OK(mx_build_sort(&b, sin, 2, 1, true, MX_CMP_LT, srt));
  // if / case / while / call / composite / custom_call
  int32_t pred, cst1;
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_I1, 1, &pred));
  mx_type_t vt = T1(MX_ELEM_F32, 4);
  mx_op_t *op;
  CHECK_OK(mx_build_if(&b, pred, &vt, 1, &op));
  if (op != NULL) {
    for (int r = 0; r < 2; r++) {
      mx_builder_t rb = mx_builder_at(f, op->regions[r]);
      int32_t x = a[1];
      if (r == 1) CHECK_OK(mx_build_unary(&rb, MX_OP_ABS, a[1], &x));
      CHECK_OK(mx_build_return(&rb, &x, 1));
    }
    v[26] = op->results[0];
  }
  CHECK_OK(mx_build_case(&b, a[2], 2, NULL, 0, &op));
  if (op != NULL) {
    for (int r = 0; r < 2; r++) {
      mx_builder_t rb = mx_builder_at(f, op->regions[r]);
      CHECK_OK(mx_build_return(&rb, NULL, 0));
    }
  }
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_I32, 1, &cst1));
  CHECK_OK(mx_build_while(&b, &a[2], 1, &op));
  if (op != NULL) {
    mx_builder_t c = mx_builder_at(f, op->regions[0]), d = mx_builder_at(f, op->regions[1]);
    int32_t lt, nx;
    CHECK_OK(
        mx_build_compare(&c, MX_CMP_LT, MX_CMP_TYPE_SIGNED, op->regions[0]->args[0], cst1, &lt));
    CHECK_OK(mx_build_return(&c, &lt, 1));
    CHECK_OK(mx_build_binary(&d, MX_OP_ADD, op->regions[1]->args[0], cst1, &nx));
    CHECK_OK(mx_build_return(&d, &nx, 1));
    CHECK_OK(mx_build_finish(&b, op));
  }
  CHECK_OK(mx_build_call(&b, "neg", &a[1], 1, &v[27]));
  mx_named_attr_t attrs[2] = {{"k", mx_attr_int(3, MX_ELEM_I64)},
                              {"mode", mx_attr_string(m, "fast")}};
  CHECK_OK(mx_build_composite(&b, "mx.neg", &a[1], 1, attrs, 2, "neg", 2, &v[28]));
  CHECK_OK(mx_build_custom_call(&b, "host_fn", &a[1], 1, &vt, 1, true, "cfg", &v[29]));
  // Ops without a dedicated constructor.
  mx_op_t *gop;
  int32_t bar[2] = {a[1], a[2]};
  CHECK_OK(mx_build_op(&b, MX_OP_OPTIMIZATION_BARRIER, bar, 2, NULL, 0, NULL, 2, &gop));
  CHECK(gop != NULL && type_is(&b, gop->results[1], T0(MX_ELEM_I32)));
  mx_named_attr_t rp[2] = {{"exponent_bits", mx_attr_int(5, MX_ELEM_I32)},
                           {"mantissa_bits", mx_attr_int(10, MX_ELEM_I32)}};
  CHECK_OK(mx_build_op(&b, MX_OP_REDUCE_PRECISION, &a[1], 1, rp, 2, NULL, 1, &gop));
  CHECK_ERR(mx_build_op(&b, MX_OP_REDUCE_PRECISION, &a[2], 1, rp, 2, NULL, 1, &gop), E,
            "stablehlo.reduce_precision: operand type tensor<i32>: expected floating-point");
  CHECK_ERR(mx_build_op(&b, MX_OP_REDUCE_PRECISION, &a[1], 1, rp, 1, NULL, 1, &gop), E,
            "missing required attribute 'mantissa_bits'");
  CHECK_ERR(mx_build_op(&b, MX_OP_OPTIMIZATION_BARRIER, bar, 2, NULL, 0, NULL, 1, &gop), E,
            "expected 2 results, got 1");
  int32_t rets[4] = {v[22], v[23], v[26], v[28]};
  CHECK_OK(mx_build_return(&b, rets, 4));
  CHECK_OK(mx_hlo_verify_module(m));
  test_roundtrip(m);
  if (getenv("MX_DUMP")) mx_hlo_print_file(m, NULL, stdout);
  mx_module_destroy(m);
}

// A function of 2048 arguments: the arena holds a linear number of bytes for them (the argument
// arrays grow geometrically; grown by one per argument, each copy kept, they held 200 MiB), and
// each argument keeps its index, attribute dict and location.
static void test_many_args(void) {
  enum { N = 2048 };
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = NULL;
  CHECK(m && mx_func_create(m, "many", false, &f) == MX_OK);
  if (!f) {
    mx_module_destroy(m);
    return;
  }
  size_t before = mx_arena_bytes(m->arena);
  mx_type_t t = T2(MX_ELEM_BF16, 64, 64);
  for (int32_t i = 0; i < N; i++) {
    int32_t id = -1;
    CHECK_OK(mx_func_add_arg(f, &t, NULL, &id));
    if (i % 7 == 0) CHECK_OK(mx_func_set_arg_loc(f, i, "w"));
  }
  size_t per_arg = sizeof(mx_value_t) + sizeof(mx_attr_t) + sizeof(char *) + sizeof(int32_t);
  size_t used = mx_arena_bytes(m->arena) - before;
  CHECK_MSG(used < 4 * per_arg * N + (1u << 20), "%zu bytes for %d arguments", used, N);
  CHECK(f->body->n_args == N);
  int bad = 0;
  for (int32_t i = 0; i < N; i++) {
    int32_t v = f->body->args[i];
    bad += f->values[v].def_index != i || f->arg_attrs[i].kind != MX_ATTR_DICT ||
           f->arg_attrs[i].n != 0 || (i % 7 == 0) != (f->arg_locs[i] != NULL) ||
           !mx_type_equal(&f->values[v].type, &t);
  }
  CHECK_MSG(bad == 0, "%d arguments wrong", bad);
  mx_module_destroy(m);
}

int main(void) {
  test_many_args();
  test_all_ops_roundtrip();
  mx_module_t *g = test_transformer_graph();
  test_roundtrip(g);
  test_run_graph(g);
  mx_module_destroy(g);
  mx_module_t *m = mx_module_create(NULL);
  test_elementwise_errors(m);
  test_constant_errors(m);
  test_shape_errors(m);
  test_gather_scatter(m);
  test_compute_errors(m);
  test_control_errors(m);
  mx_module_destroy(m);
  return mx_test_finish();
}
