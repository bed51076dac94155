// Printer tests: modules built with the construction primitives compared with exact text, and
// print(parse(print(m))) == print(m) over every case of the StableHLO interpreter suite (also
// through the generic form: print(parse(print_generic(m))) == print(m)).
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"
#include "mx_test.h"

static char *print_module(const mx_module_t *m, const mx_print_opts_t *opts) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_status_t st = mx_hlo_print(m, opts, &sb);
  CHECK_MSG(st == MX_OK, "print failed: %s", mx_error_message());
  return mx_strbuf_take(&sb, NULL);
}

static void expect_text(const mx_module_t *m, const mx_print_opts_t *opts, const char *want,
                        int line) {
  char *got = print_module(m, opts);
  bool ok = got && strcmp(got, want) == 0;
  CHECK_MSG(ok, "line %d: printed text differs\n--- got:\n%s--- want:\n%s", line,
            got ? got : "(null)", want);
  free(got);
}
#define EXPECT_TEXT(m, opts, want) expect_text(m, opts, want, __LINE__)

static void roundtrip_module(const mx_module_t *m, const char *what);

static mx_type_t t1(mx_elem_type_t et, int64_t d0) { return mx_type_tensor(et, 1, &d0); }
static mx_type_t t2(mx_elem_type_t et, int64_t d0, int64_t d1) {
  int64_t d[2] = {d0, d1};
  return mx_type_tensor(et, 2, d);
}

static mx_attr_t dense_f32(mx_module_t *m, const mx_type_t *t, const float *v) {
  mx_tensor_t x;
  mx_tensor_alloc(&x, t);
  memcpy(x.data, v, x.nbytes);
  mx_attr_t a = mx_attr_dense(m, &x);
  mx_tensor_free(&x);
  return a;
}

static mx_attr_t dense_i64(mx_module_t *m, const mx_type_t *t, const int64_t *v) {
  mx_tensor_t x;
  mx_tensor_alloc(&x, t);
  for (int64_t i = 0; i < mx_type_numel(t); i++) mx_tensor_set_i64(&x, i, v[i]);
  mx_attr_t a = mx_attr_dense(m, &x);
  mx_tensor_free(&x);
  return a;
}

static int32_t constant(mx_func_t *f, mx_block_t *b, mx_attr_t value) {
  mx_op_t *op = mx_block_append_op(f, b, MX_OP_CONSTANT, NULL, NULL, 0, &value.dense->type, 1);
  mx_op_set_attr(f, op, "value", value);
  return op->results[0];
}

static void test_elementwise(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f;
  CHECK_OK(mx_func_create(m, "main", false, &f));
  mx_type_t t = t1(MX_ELEM_F32, 4);
  mx_type_t tb = t1(MX_ELEM_I1, 4);
  int32_t a, b;
  mx_func_add_arg(f, &t, NULL, &a);
  mx_func_add_arg(f, &t, NULL, &b);
  mx_func_set_result_types(f, &tb, 1);
  float ones[4] = {1, 1, 1, 1};
  int32_t c = constant(f, f->body, dense_f32(m, &t, ones));
  int32_t ops[2] = {a, c};
  mx_op_t *add = mx_block_append_op(f, f->body, MX_OP_ADD, NULL, ops, 2, &t, 1);
  mx_op_set_attr(f, add, "foo", mx_attr_int(1, MX_ELEM_I32));  // discardable: `{...}`
  int32_t cmp_in[2] = {add->results[0], b};
  mx_op_t *cmp = mx_block_append_op(f, f->body, MX_OP_COMPARE, NULL, cmp_in, 2, &tb, 1);
  mx_op_set_attr(f, cmp, "comparison_direction", mx_attr_enum(m, "comparison_direction", "GT"));
  mx_op_set_attr(f, cmp, "compare_type", mx_attr_enum(m, "comparison_type", "FLOAT"));
  mx_type_t ti = t1(MX_ELEM_I32, 4);
  mx_block_append_op(f, f->body, MX_OP_CONVERT, NULL, &add->results[0], 1, &ti, 1);
  mx_block_append_op(f, f->body, MX_OP_FUNC_RETURN, NULL, &cmp->results[0], 1, NULL, 0);
  EXPECT_TEXT(m, NULL,
              "module {\n"
              "  func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xi1> {\n"
              "    %cst = stablehlo.constant dense<0x3F800000> : tensor<4xf32>\n"
              "    %0 = stablehlo.add %arg0, %cst {foo = 1 : i32} : tensor<4xf32>\n"
              "    %1 = stablehlo.compare GT, %0, %arg1, FLOAT : (tensor<4xf32>, tensor<4xf32>) "
              "-> tensor<4xi1>\n"
              "    %2 = stablehlo.convert %0 : (tensor<4xf32>) -> tensor<4xi32>\n"
              "    return %1 : tensor<4xi1>\n"
              "  }\n"
              "}\n");
  mx_print_opts_t generic = {.generic = true};
  EXPECT_TEXT(
      m, &generic,
      "module {\n"
      "  func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xi1> {\n"
      "    %0 = \"stablehlo.constant\"() <{value = dense<0x3F800000> : tensor<4xf32>}> : "
      "() -> tensor<4xf32>\n"
      "    %1 = \"stablehlo.add\"(%arg0, %0) {foo = 1 : i32} : (tensor<4xf32>, tensor<4xf32>) -> "
      "tensor<4xf32>\n"
      "    %2 = \"stablehlo.compare\"(%1, %arg1) <{compare_type = "
      "#stablehlo<comparison_type FLOAT>, comparison_direction = "
      "#stablehlo<comparison_direction GT>}> : (tensor<4xf32>, tensor<4xf32>) -> "
      "tensor<4xi1>\n"
      "    %3 = \"stablehlo.convert\"(%1) : (tensor<4xf32>) -> tensor<4xi32>\n"
      "    \"func.return\"(%2) : (tensor<4xi1>) -> ()\n"
      "  }\n"
      "}\n");
  roundtrip_module(m, "elementwise");
  mx_module_destroy(m);
}

static void test_constants(void) {
  mx_module_t *m = mx_module_create("consts");
  mx_func_t *f;
  CHECK_OK(mx_func_create(m, "c", true, &f));
  mx_type_t t = t2(MX_ELEM_F32, 2, 2);
  float v[4] = {1.0f, 2.0f, -0.0f, 0.5f};
  constant(f, f->body, dense_f32(m, &t, v));
  mx_type_t ti = t2(MX_ELEM_I64, 2, 3);
  int64_t iv[6] = {1, -2, 3, 4, 5, 6};
  constant(f, f->body, dense_i64(m, &ti, iv));
  mx_type_t tb = t1(MX_ELEM_I1, 3);
  int64_t bv[3] = {1, 0, 1};
  constant(f, f->body, dense_i64(m, &tb, bv));
  mx_type_t tu = t1(MX_ELEM_UI8, 2);
  int64_t uv[2] = {255, 7};
  constant(f, f->body, dense_i64(m, &tu, uv));
  mx_type_t t0 = t1(MX_ELEM_F32, 0);
  constant(f, f->body, dense_f32(m, &t0, v));
  mx_type_t tbf = mx_type_scalar(MX_ELEM_BF16);
  int64_t bfbits = 0x3F80;
  {
    mx_tensor_t x;
    mx_tensor_alloc(&x, &tbf);
    memcpy(x.data, &bfbits, 2);
    constant(f, f->body, mx_attr_dense(m, &x));
    mx_tensor_free(&x);
  }
  mx_type_t tc = t1(MX_ELEM_C64, 2);
  float cv[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  constant(f, f->body, dense_f32(m, &tc, cv));
  // More than hex_threshold elements: raw little-endian bytes.
  mx_type_t th = t1(MX_ELEM_I16, 6);
  int64_t hv[6] = {1, 2, -1, 0, 0, 0};
  constant(f, f->body, dense_i64(m, &th, hv));
  mx_type_t t4 = t1(MX_ELEM_I4, 3);
  int64_t i4v[3] = {-8, 7, -1};
  constant(f, f->body, dense_i64(m, &t4, i4v));
  mx_block_append_op(f, f->body, MX_OP_FUNC_RETURN, NULL, NULL, 0, NULL, 0);
  mx_print_opts_t opts = {.hex_threshold = 5};
  EXPECT_TEXT(
      m, &opts,
      "module @consts {\n"
      "  func.func private @c() {\n"
      "    %cst = stablehlo.constant dense<[[0x3F800000, 0x40000000], [0x80000000, "
      "0x3F000000]]> : tensor<2x2xf32>\n"
      "    %c = stablehlo.constant dense<\"0x0100000000000000FEFFFFFFFFFFFFFF0300000000000000"
      "040000000000000005000000000000000600000000000000\"> : tensor<2x3xi64>\n"
      "    %c_0 = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>\n"
      "    %c_1 = stablehlo.constant dense<[255, 7]> : tensor<2xui8>\n"
      "    %cst_2 = stablehlo.constant dense<> : tensor<0xf32>\n"
      "    %cst_3 = stablehlo.constant dense<0x3F80> : tensor<bf16>\n"
      "    %cst_4 = stablehlo.constant dense<[(0x3F800000,0x40000000), "
      "(0x40400000,0x40800000)]> : tensor<2xcomplex<f32>>\n"
      "    %c_5 = stablehlo.constant dense<\"0x01000200FFFF000000000000\"> : tensor<6xi16>\n"
      "    %c_6 = stablehlo.constant dense<[-8, 7, -1]> : tensor<3xi4>\n"
      "    return\n"
      "  }\n"
      "}\n");
  roundtrip_module(m, "constants");
  mx_module_destroy(m);
}

// reduce (compact and region forms), while, multi-result values, generic gather.
static void test_regions(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f;
  CHECK_OK(mx_func_create(m, "main", false, &f));
  mx_type_t t = t2(MX_ELEM_F32, 2, 3), s = mx_type_scalar(MX_ELEM_F32);
  mx_type_t r = t1(MX_ELEM_F32, 2);
  int32_t x, init;
  mx_func_add_arg(f, &t, NULL, &x);
  mx_func_add_arg(f, &s, NULL, &init);
  int64_t one = 1;
  // compact reduce
  int32_t in[2] = {x, init};
  mx_op_t *red = mx_block_append_op(f, f->body, MX_OP_REDUCE, NULL, in, 2, &r, 1);
  mx_op_set_attr(f, red, "dimensions", mx_attr_i64s(m, &one, 1));
  mx_block_t *body = mx_block_create(f);
  int32_t a0, a1;
  mx_block_add_arg(f, body, &s, NULL, &a0);
  mx_block_add_arg(f, body, &s, NULL, &a1);
  int32_t ab[2] = {a0, a1};
  mx_op_t *add = mx_block_append_op(f, body, MX_OP_ADD, NULL, ab, 2, &s, 1);
  mx_block_append_op(f, body, MX_OP_RETURN, NULL, &add->results[0], 1, NULL, 0);
  mx_op_add_region(f, red, body);
  // region reduce (non-commutative body)
  mx_op_t *red2 = mx_block_append_op(f, f->body, MX_OP_REDUCE, NULL, in, 2, &r, 1);
  mx_op_set_attr(f, red2, "dimensions", mx_attr_i64s(m, &one, 1));
  body = mx_block_create(f);
  mx_block_add_arg(f, body, &s, NULL, &a0);
  mx_block_add_arg(f, body, &s, NULL, &a1);
  int32_t ab2[2] = {a0, a1};
  mx_op_t *sub = mx_block_append_op(f, body, MX_OP_SUBTRACT, NULL, ab2, 2, &s, 1);
  mx_block_append_op(f, body, MX_OP_RETURN, NULL, &sub->results[0], 1, NULL, 0);
  mx_op_add_region(f, red2, body);
  // while with two loop values
  mx_type_t ti = mx_type_scalar(MX_ELEM_I64), tb = mx_type_scalar(MX_ELEM_I1);
  int64_t zero = 0;
  int32_t c0 = constant(f, f->body, dense_i64(m, &ti, &zero));
  int32_t wi[2] = {c0, init};
  mx_type_t wt[2] = {ti, s};
  mx_op_t *wh = mx_block_append_op(f, f->body, MX_OP_WHILE, NULL, wi, 2, wt, 2);
  mx_block_t *cond = mx_block_create(f);
  int32_t i0, v0, i1, v1;
  mx_block_add_arg(f, cond, &ti, NULL, &i0);
  mx_block_add_arg(f, cond, &s, NULL, &v0);
  int32_t ci[2] = {i0, i0};
  mx_op_t *cmp = mx_block_append_op(f, cond, MX_OP_COMPARE, NULL, ci, 2, &tb, 1);
  mx_op_set_attr(f, cmp, "comparison_direction", mx_attr_enum(m, "comparison_direction", "LT"));
  mx_block_append_op(f, cond, MX_OP_RETURN, NULL, &cmp->results[0], 1, NULL, 0);
  mx_block_t *wb = mx_block_create(f);
  mx_block_add_arg(f, wb, &ti, NULL, &i1);
  mx_block_add_arg(f, wb, &s, NULL, &v1);
  int32_t rets[2] = {i1, v1};
  mx_block_append_op(f, wb, MX_OP_RETURN, NULL, rets, 2, NULL, 0);
  mx_op_add_region(f, wh, cond);
  mx_op_add_region(f, wh, wb);
  // gather: generic form with a #stablehlo.gather struct
  mx_type_t idx = t2(MX_ELEM_I64, 1, 1), g = t2(MX_ELEM_F32, 1, 3);
  int32_t ix = constant(f, f->body, dense_i64(m, &idx, &one));
  int32_t gi[2] = {x, ix};
  mx_op_t *ga = mx_block_append_op(f, f->body, MX_OP_GATHER, NULL, gi, 2, &g, 1);
  int64_t off = 1, sizes[2] = {1, 3};
  mx_named_attr_t dn[4] = {
      {"offset_dims", mx_attr_i64s(m, &off, 1)},
      {"collapsed_slice_dims", mx_attr_i64s(m, &zero, 1)},
      {"start_index_map", mx_attr_i64s(m, &zero, 1)},
      {"index_vector_dim", mx_attr_int(1, MX_ELEM_INVALID)},
  };
  mx_op_set_attr(f, ga, "dimension_numbers", mx_attr_struct(m, "stablehlo.gather", dn, 4));
  mx_op_set_attr(f, ga, "slice_sizes", mx_attr_i64s(m, sizes, 2));
  mx_op_set_attr(f, ga, "indices_are_sorted", mx_attr_bool(false));
  int32_t res[3] = {red->results[0], wh->results[1], ga->results[0]};
  mx_type_t rt[3] = {r, s, g};
  mx_func_set_result_types(f, rt, 3);
  mx_block_append_op(f, f->body, MX_OP_FUNC_RETURN, NULL, res, 3, NULL, 0);
  EXPECT_TEXT(
      m, NULL,
      "module {\n"
      "  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<f32>) -> (tensor<2xf32>, "
      "tensor<f32>, tensor<1x3xf32>) {\n"
      "    %0 = stablehlo.reduce(%arg0 init: %arg1) applies stablehlo.add across dimensions = "
      "[1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
      "    %1 = stablehlo.reduce(%arg0 init: %arg1) across dimensions = [1] : "
      "(tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
      "     reducer(%arg2: tensor<f32>, %arg3: tensor<f32>)  {\n"
      "      %4 = stablehlo.subtract %arg2, %arg3 : tensor<f32>\n"
      "      stablehlo.return %4 : tensor<f32>\n"
      "    }\n"
      "    %c = stablehlo.constant dense<0> : tensor<i64>\n"
      "    %2:2 = stablehlo.while(%iterArg = %c, %iterArg_1 = %arg1) : tensor<i64>, tensor<f32>\n"
      "    cond {\n"
      "      %4 = stablehlo.compare LT, %iterArg, %iterArg : (tensor<i64>, tensor<i64>) -> "
      "tensor<i1>\n"
      "      stablehlo.return %4 : tensor<i1>\n"
      "    } do {\n"
      "      stablehlo.return %iterArg, %iterArg_1 : tensor<i64>, tensor<f32>\n"
      "    }\n"
      "    %c_0 = stablehlo.constant dense<1> : tensor<1x1xi64>\n"
      "    %3 = \"stablehlo.gather\"(%arg0, %c_0) <{dimension_numbers = "
      "#stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], "
      "index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 3>}> : "
      "(tensor<2x3xf32>, tensor<1x1xi64>) -> tensor<1x3xf32>\n"
      "    return %0, %2#1, %3 : tensor<2xf32>, tensor<f32>, tensor<1x3xf32>\n"
      "  }\n"
      "}\n");
  roundtrip_module(m, "regions");
  mx_module_destroy(m);
}

// dot_general, broadcast/transpose/slice, composite (kept and inlined), arg/result attributes.
static void test_shapes_and_composites(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *dec, *f;
  mx_type_t t = t2(MX_ELEM_F32, 2, 4), w = t1(MX_ELEM_F32, 4);
  CHECK_OK(mx_func_create(m, "rms_norm_impl", true, &dec));
  int32_t dx, dw;
  mx_func_add_arg(dec, &t, NULL, &dx);
  mx_func_add_arg(dec, &w, NULL, &dw);
  mx_func_set_result_types(dec, &t, 1);
  int64_t one = 1;
  mx_op_t *bc = mx_block_append_op(dec, dec->body, MX_OP_BROADCAST_IN_DIM, NULL, &dw, 1, &t, 1);
  mx_op_set_attr(dec, bc, "broadcast_dimensions", mx_attr_i64s(m, &one, 1));
  int32_t mi[2] = {dx, bc->results[0]};
  mx_op_t *mul = mx_block_append_op(dec, dec->body, MX_OP_MULTIPLY, NULL, mi, 2, &t, 1);
  mx_block_append_op(dec, dec->body, MX_OP_FUNC_RETURN, NULL, &mul->results[0], 1, NULL, 0);

  CHECK_OK(mx_func_create(m, "main", false, &f));
  int32_t x, wt;
  mx_func_add_arg(f, &t, NULL, &x);
  mx_func_add_arg(f, &w, NULL, &wt);
  mx_named_attr_t alias = {"tf.aliasing_output", mx_attr_int(0, MX_ELEM_I32)};
  f->arg_attrs[0] = mx_attr_dict(m, &alias, 1);
  mx_type_t tt = t2(MX_ELEM_F32, 4, 2), o = t2(MX_ELEM_F32, 2, 2), sl = t2(MX_ELEM_F32, 1, 2);
  mx_func_set_result_types(f, &sl, 1);
  mx_named_attr_t info = {"jax.result_info", mx_attr_string(m, "out\"1\"")};
  f->result_attrs[0] = mx_attr_dict(m, &info, 1);
  int32_t ci[2] = {x, wt};
  mx_op_t *comp = mx_block_append_op(f, f->body, MX_OP_COMPOSITE, NULL, ci, 2, &t, 1);
  mx_named_attr_t eps = {"epsilon", mx_attr_float(1e-5, MX_ELEM_F32)};
  mx_op_set_attr(f, comp, "name", mx_attr_string(m, "mx.rms_norm"));
  mx_op_set_attr(f, comp, "composite_attributes", mx_attr_dict(m, &eps, 1));
  mx_op_set_attr(f, comp, "decomposition", mx_attr_symbol(m, "rms_norm_impl"));
  mx_op_set_attr(f, comp, "version", mx_attr_int(1, MX_ELEM_I32));
  int64_t perm[2] = {1, 0};
  mx_op_t *tr = mx_block_append_op(f, f->body, MX_OP_TRANSPOSE, NULL, &comp->results[0], 1, &tt, 1);
  mx_op_set_attr(f, tr, "permutation", mx_attr_i64s(m, perm, 2));
  int32_t di[2] = {comp->results[0], tr->results[0]};
  mx_op_t *dot = mx_block_append_op(f, f->body, MX_OP_DOT_GENERAL, NULL, di, 2, &o, 1);
  int64_t zero = 0;
  mx_named_attr_t dn[2] = {{"lhs_contracting_dimensions", mx_attr_i64s(m, &one, 1)},
                           {"rhs_contracting_dimensions", mx_attr_i64s(m, &zero, 1)}};
  mx_op_set_attr(f, dot, "dot_dimension_numbers", mx_attr_struct(m, "stablehlo.dot", dn, 2));
  mx_attr_t prec[2] = {mx_attr_enum(m, "precision", "DEFAULT"),
                       mx_attr_enum(m, "precision", "HIGHEST")};
  mx_attr_t parr = {.kind = MX_ATTR_ARRAY, .n = 2, .items = prec};
  mx_op_set_attr(f, dot, "precision_config", parr);
  mx_op_t *s = mx_block_append_op(f, f->body, MX_OP_SLICE, NULL, &dot->results[0], 1, &sl, 1);
  int64_t st[2] = {1, 0}, lim[2] = {2, 2}, str[2] = {1, 1};
  mx_op_set_attr(f, s, "start_indices", mx_attr_i64s(m, st, 2));
  mx_op_set_attr(f, s, "limit_indices", mx_attr_i64s(m, lim, 2));
  mx_op_set_attr(f, s, "strides", mx_attr_i64s(m, str, 2));
  mx_block_append_op(f, f->body, MX_OP_FUNC_RETURN, NULL, &s->results[0], 1, NULL, 0);
  const char *body_tail =
      "    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>\n"
      "    %2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0], precision = "
      "[DEFAULT, HIGHEST] : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>\n"
      "    %3 = stablehlo.slice %2 [1:2, 0:2] : (tensor<2x2xf32>) -> tensor<1x2xf32>\n"
      "    return %3 : tensor<1x2xf32>\n"
      "  }\n"
      "}\n";
  const char *head =
      "module {\n"
      "  func.func private @rms_norm_impl(%arg0: tensor<2x4xf32>, %arg1: tensor<4xf32>) -> "
      "tensor<2x4xf32> {\n"
      "    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<4xf32>) -> "
      "tensor<2x4xf32>\n"
      "    %1 = stablehlo.multiply %arg0, %0 : tensor<2x4xf32>\n"
      "    return %1 : tensor<2x4xf32>\n"
      "  }\n"
      "  func.func @main(%arg0: tensor<2x4xf32> {tf.aliasing_output = 0 : i32}, %arg1: "
      "tensor<4xf32>) -> (tensor<1x2xf32> {jax.result_info = \"out\\221\\22\"}) {\n";
  char want[4096];
  snprintf(want, sizeof want, "%s%s%s", head,
           "    %0 = stablehlo.composite \"mx.rms_norm\" %arg0, %arg1 {composite_attributes = "
           "{epsilon = 1.000000e-05 : f32}, decomposition = @rms_norm_impl, version = 1 : i32} "
           ": (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>\n",
           body_tail);
  EXPECT_TEXT(m, NULL, want);
  mx_print_opts_t inl = {.inline_composites = true};
  snprintf(want, sizeof want, "%s%s%s", head,
           "    %0 = call @rms_norm_impl(%arg0, %arg1) : (tensor<2x4xf32>, tensor<4xf32>) -> "
           "tensor<2x4xf32>\n",
           body_tail);
  EXPECT_TEXT(m, &inl, want);
  roundtrip_module(m, "shapes and composites");
  char *inlined = print_module(m, &inl);
  mx_module_t *minl = NULL;
  CHECK_OK(inlined ? mx_hlo_parse(inlined, strlen(inlined), NULL, &minl) : MX_ERR_NOMEM);
  mx_module_destroy(minl);
  free(inlined);
  mx_module_destroy(m);
}

// ---- JAX-style text (public visibility, locations, attributes, old spacing) normalizes ----

static void test_jax_style(void) {
  static const char in[] =
      "#loc1 = loc(\"x\")\n"
      "module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
      "  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.layout_mode = \"default\", "
      "mhlo.sharding = \"{replicated}\"} loc(\"x\"), %arg1: tensor<3xbf16>) -> (tensor<2xf32> "
      "{jax.result_info = \"result[0]\", mhlo.layout_mode = \"default\"}, tensor<i32>) {\n"
      "    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32> loc(#loc1)\n"
      "    %cst_0 = stablehlo.constant dense<[1.0, 2.5, 0x7FC0]> : tensor<3xbf16>\n"
      "    %0 = stablehlo.convert %arg1 : (tensor<3xbf16>) -> tensor<3xf32>\n"
      "    %1 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>\n"
      "    %2 = stablehlo.multiply %arg0, %1 : tensor<2x3xf32>\n"
      "    %3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [1] : "
      "(tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
      "    %4 = stablehlo.custom_call @Sharding(%3) {backend_config = \"\", mhlo.sharding = "
      "\"{replicated}\"} : (tensor<2xf32>) -> tensor<2xf32>\n"
      "    %5 = call @helper(%4) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "    %c = stablehlo.constant dense<0> : tensor<i32>\n"
      "    %6:2 = stablehlo.while(%iterArg = %c, %iterArg_1 = %5) : tensor<i32>, tensor<2xf32>\n"
      "     cond {\n"
      "      %c_2 = stablehlo.constant dense<10> : tensor<i32>\n"
      "      %8 = stablehlo.compare  LT, %iterArg, %c_2,  SIGNED : (tensor<i32>, tensor<i32>) -> "
      "tensor<i1>\n"
      "      stablehlo.return %8 : tensor<i1>\n"
      "    } do {\n"
      "      %c_2 = stablehlo.constant dense<1> : tensor<i32>\n"
      "      %8 = stablehlo.add %iterArg, %c_2 : tensor<i32>\n"
      "      stablehlo.return %8, %iterArg_1 : tensor<i32>, tensor<2xf32>\n"
      "    }\n"
      "    %7 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [0], precision = "
      "[DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>\n"
      "    return %7, %6#0 : tensor<2xf32>, tensor<i32>\n"
      "  }\n"
      "  func.func private @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
      "    %0 = stablehlo.sine %arg0 : tensor<2xf32>\n"
      "    return %0 : tensor<2xf32>\n"
      "  }\n"
      "}\n";
  static const char want[] =
      "module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
      "  func.func @main(%arg0: tensor<2x3xf32> {mhlo.layout_mode = \"default\", mhlo.sharding = "
      "\"{replicated}\"} loc(\"x\"), %arg1: tensor<3xbf16>) -> (tensor<2xf32> {jax.result_info = "
      "\"result[0]\", mhlo.layout_mode = \"default\"}, tensor<i32>) {\n"
      "    %cst = stablehlo.constant dense<0x3F800000> : tensor<f32>\n"
      "    %cst_0 = stablehlo.constant dense<[0x3F80, 0x4020, 0x7FC0]> : tensor<3xbf16>\n"
      "    %0 = stablehlo.convert %arg1 : (tensor<3xbf16>) -> tensor<3xf32>\n"
      "    %1 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>\n"
      "    %2 = stablehlo.multiply %arg0, %1 : tensor<2x3xf32>\n"
      "    %3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [1] : "
      "(tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
      "    %4 = stablehlo.custom_call @Sharding(%3) {backend_config = \"\", mhlo.sharding = "
      "\"{replicated}\"} : (tensor<2xf32>) -> tensor<2xf32>\n"
      "    %5 = call @helper(%4) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "    %c = stablehlo.constant dense<0> : tensor<i32>\n"
      "    %6:2 = stablehlo.while(%iterArg = %c, %iterArg_1 = %5) : tensor<i32>, tensor<2xf32>\n"
      "    cond {\n"
      "      %c_2 = stablehlo.constant dense<10> : tensor<i32>\n"
      "      %8 = stablehlo.compare LT, %iterArg, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> "
      "tensor<i1>\n"
      "      stablehlo.return %8 : tensor<i1>\n"
      "    } do {\n"
      "      %c_2 = stablehlo.constant dense<1> : tensor<i32>\n"
      "      %8 = stablehlo.add %iterArg, %c_2 : tensor<i32>\n"
      "      stablehlo.return %8, %iterArg_1 : tensor<i32>, tensor<2xf32>\n"
      "    }\n"
      "    %7 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [0], precision = "
      "[DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>\n"
      "    return %7, %6#0 : tensor<2xf32>, tensor<i32>\n"
      "  }\n"
      "  func.func private @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
      "    %0 = stablehlo.sine %arg0 : tensor<2xf32>\n"
      "    return %0 : tensor<2xf32>\n"
      "  }\n"
      "}\n";
  mx_module_t *m = NULL;
  CHECK_OK(mx_hlo_parse(in, strlen(in), NULL, &m));
  if (!m) return;
  EXPECT_TEXT(m, NULL, want);
  roundtrip_module(m, "jax style");
  mx_module_destroy(m);
}

// ---- Malformed IR never crashes the printer ----

static void test_malformed(void) {
  mx_module_t *m = mx_module_create("we ird");  // needs quoting
  mx_func_t *f;
  CHECK_OK(mx_func_create(m, "f-1", false, &f));
  mx_type_t t = mx_type_scalar(MX_ELEM_F32);
  int32_t bad[2] = {12345, -7};
  mx_op_t *op = mx_block_append_op(f, f->body, MX_OP_ADD, NULL, bad, 2, &t, 1);
  CHECK(op != NULL);
  // Attributes with missing payloads and kinds the pretty forms do not expect.
  mx_attr_t null_dense = {.kind = MX_ATTR_DENSE};
  mx_attr_t null_type = {.kind = MX_ATTR_TYPE};
  mx_attr_t null_struct = {.kind = MX_ATTR_STRUCT};
  mx_attr_t null_enum = {.kind = MX_ATTR_ENUM};
  mx_op_set_attr(f, op, "a", null_dense);
  mx_op_set_attr(f, op, "b", null_type);
  mx_op_set_attr(f, op, "c", null_struct);
  mx_op_set_attr(f, op, "d", null_enum);
  mx_op_set_attr(f, op, "\"odd name\"", mx_attr_string(m, "tab\there \\ \x01"));
  mx_op_t *bc = mx_block_append_op(f, f->body, MX_OP_BROADCAST_IN_DIM, NULL, op->results, 1, &t, 1);
  mx_op_set_attr(f, bc, "broadcast_dimensions", mx_attr_int(3, MX_ELEM_I64));  // not a list
  mx_op_t *conv = mx_block_append_op(f, f->body, MX_OP_CONVOLUTION, NULL, bad, 2, &t, 1);
  mx_named_attr_t dn[1] = {{"input_batch_dimension", mx_attr_int(9, MX_ELEM_I64)}};
  mx_op_set_attr(f, conv, "dimension_numbers", mx_attr_struct(m, "stablehlo.conv", dn, 1));
  mx_block_append_op(f, f->body, MX_OP_WHILE, NULL, NULL, 0, NULL, 0);  // no regions
  mx_block_append_op(f, f->body, MX_OP_REDUCE, NULL, bad, 2, &t, 1);
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_status_t st = mx_hlo_print(m, NULL, &sb);
  CHECK(st == MX_ERR_INVALID_ARG);
  CHECK(sb.data && strstr(sb.data, "<<UNKNOWN SSA VALUE>>"));
  CHECK(sb.data && strstr(sb.data, "module @\"we ird\""));
  CHECK(sb.data && strstr(sb.data, "@\"f-1\""));
  CHECK(sb.data && strstr(sb.data, "\"tab\\09here \\\\ \\01\""));
  CHECK(sb.data && strstr(sb.data, "\"stablehlo.broadcast_in_dim\"("));
  CHECK(sb.data && strstr(sb.data, "#stablehlo.conv<raw input_batch_dimension = 9>"));
  CHECK(sb.data && strstr(sb.data, "\"stablehlo.while\"() : () -> ()"));
  if (getenv("MX_TEST_VERBOSE")) printf("%s", sb.data ? sb.data : "");
  mx_strbuf_free(&sb);
  CHECK(mx_hlo_print(NULL, NULL, NULL) == MX_ERR_INVALID_ARG);
  mx_module_destroy(m);

  // A function without ops prints as a declaration.
  m = mx_module_create(NULL);
  CHECK_OK(mx_func_create(m, "ext", true, &f));
  int32_t arg;
  mx_func_add_arg(f, &t, NULL, &arg);
  mx_func_set_result_types(f, &t, 1);
  EXPECT_TEXT(m, NULL,
              "module {\n"
              "  func.func private @ext(tensor<f32>) -> tensor<f32>\n"
              "}\n");
  mx_module_destroy(m);
}

// ---- Modules made with the builder print, re-parse and print identically ----

static void roundtrip_module(const mx_module_t *m, const char *what) {
  char *t1 = print_module(m, NULL);
  if (getenv("MX_TEST_VERBOSE")) printf("%s:\n%s", what, t1 ? t1 : "");
  mx_module_t *m2 = NULL;
  mx_parse_opts_t o = {.filename = what, .first_line = 1};
  mx_status_t st = t1 ? mx_hlo_parse(t1, strlen(t1), &o, &m2) : MX_ERR_NOMEM;
  CHECK_MSG(st == MX_OK, "%s: printed text does not parse and verify: %s\n%s", what,
            mx_error_message(), t1 ? t1 : "");
  if (st == MX_OK) {
    char *t2 = print_module(m2, NULL);
    CHECK_MSG(t2 && strcmp(t1, t2) == 0, "%s: print(parse(print(m))) differs:\n%s\n---\n%s", what,
              t1, t2 ? t2 : "");
    free(t2);
    mx_print_opts_t g = {.generic = true};
    char *tg = print_module(m, &g);
    mx_module_t *m3 = NULL;
    st = tg ? mx_hlo_parse(tg, strlen(tg), &o, &m3) : MX_ERR_NOMEM;
    CHECK_MSG(st == MX_OK, "%s: generic text does not parse: %s\n%s", what, mx_error_message(),
              tg ? tg : "");
    if (st == MX_OK) {
      char *t3 = print_module(m3, NULL);
      CHECK_MSG(t3 && strcmp(t1, t3) == 0, "%s: generic round trip differs:\n%s\n---\n%s", what, t1,
                t3 ? t3 : "");
      free(t3);
    }
    mx_module_destroy(m3);
    free(tg);
  }
  mx_module_destroy(m2);
  free(t1);
}

static void test_builder_roundtrip(void) {
  mx_module_t *m = mx_module_create("built");
  mx_func_t *f, *g;
  mx_builder_t b, gb;
  mx_type_t x_t = t2(MX_ELEM_F32, 4, 8), w_t = t2(MX_ELEM_F32, 8, 8), v_t = t1(MX_ELEM_F32, 8);
  // Decomposition of a composite: x * w (broadcast).
  mx_type_t dec_args[2] = {x_t, v_t};
  int32_t da[2];
  CHECK_OK(mx_build_func(m, "scale_impl", true, dec_args, 2, &g, &gb, da));
  int64_t bd = 1, xd[2] = {4, 8};
  int32_t wb = -1, prod = -1;
  CHECK_OK(mx_build_broadcast_in_dim(&gb, da[1], xd, 2, &bd, &wb));
  CHECK_OK(mx_build_binary(&gb, MX_OP_MULTIPLY, da[0], wb, &prod));
  CHECK_OK(mx_build_return(&gb, &prod, 1));

  mx_type_t args[3] = {x_t, w_t, v_t};
  int32_t a[3];
  CHECK_OK(mx_build_func(m, "main", false, args, 3, &f, &b, a));
  int64_t l1 = 1, r0 = 0;
  mx_dot_dims_t dd = {{NULL, 0}, {NULL, 0}, {&l1, 1}, {&r0, 1}};
  int32_t mm = -1, mx = -1, ninf = -1, ex = -1, sum = -1, zero = -1, sc = -1, h = -1;
  CHECK_OK(mx_build_dot_general(&b, a[0], a[1], &dd, MX_ELEM_INVALID, &mm));
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_F32, -1.0 / 0.0, &ninf));
  CHECK_OK(mx_build_reduce(&b, mm, ninf, &l1, 1, MX_OP_MAXIMUM, &mx));
  CHECK_OK(mx_build_unary(&b, MX_OP_EXPONENTIAL, mm, &ex));
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_F32, 0.0, &zero));
  CHECK_OK(mx_build_reduce(&b, ex, zero, &l1, 1, MX_OP_ADD, &sum));
  mx_named_attr_t eps = {"epsilon", mx_attr_float(1e-6, MX_ELEM_F32)};
  CHECK_OK(
      mx_build_composite(&b, "mx.scale", (int32_t[]){ex, a[2]}, 2, &eps, 1, "scale_impl", 1, &sc));
  mx_type_t h_t = t2(MX_ELEM_F16, 4, 8), bf_t = t1(MX_ELEM_BF16, 20);
  CHECK_OK(mx_build_convert(&b, sc, MX_ELEM_F16, &h));
  int32_t big = -1, it = -1, sorted[1] = {-1};
  CHECK_OK(mx_build_iota(&b, &bf_t, 0, &it));
  CHECK_OK(mx_build_splat(&b, &h_t, 0.5, &big));
  {
    mx_tensor_t t;
    mx_tensor_alloc(&t, &bf_t);
    for (int i = 0; i < 20; i++) mx_tensor_set_f64(&t, i, i * 0.25 - 1.0);
    CHECK_OK(mx_build_constant(&b, &t, &big));
    mx_tensor_free(&t);
  }
  CHECK_OK(mx_build_sort(&b, &big, 1, 0, true, MX_CMP_GT, sorted));
  // while: count to 3
  int32_t i0 = -1, three = -1, one = -1;
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_I32, 0, &i0));
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_I32, 3, &three));
  CHECK_OK(mx_build_scalar(&b, MX_ELEM_I32, 1, &one));
  mx_op_t *wh = NULL;
  CHECK_OK(mx_build_while(&b, (int32_t[]){i0, sum}, 2, &wh));
  if (wh) {
    mx_builder_t cb = mx_builder_at(f, wh->regions[0]), bb = mx_builder_at(f, wh->regions[1]);
    int32_t lt = -1, nx = -1;
    CHECK_OK(
        mx_build_compare(&cb, MX_CMP_LT, MX_CMP_TYPE_AUTO, wh->regions[0]->args[0], three, &lt));
    CHECK_OK(mx_build_return(&cb, &lt, 1));
    CHECK_OK(mx_build_binary(&bb, MX_OP_ADD, wh->regions[1]->args[0], one, &nx));
    CHECK_OK(mx_build_return(&bb, (int32_t[]){nx, wh->regions[1]->args[1]}, 2));
    CHECK_OK(mx_build_finish(&b, wh));
  }
  // if on a predicate
  int32_t pred = -1;
  CHECK_OK(mx_build_compare(&b, MX_CMP_GT, MX_CMP_TYPE_NONE, i0, three, &pred));
  mx_op_t *iff = NULL;
  mx_type_t s4 = t1(MX_ELEM_F32, 4);
  CHECK_OK(mx_build_if(&b, pred, &s4, 1, &iff));
  if (iff) {
    mx_builder_t tb = mx_builder_at(f, iff->regions[0]), fb = mx_builder_at(f, iff->regions[1]);
    int32_t neg = -1;
    CHECK_OK(mx_build_return(&tb, &mx, 1));
    CHECK_OK(mx_build_unary(&fb, MX_OP_NEGATE, mx, &neg));
    CHECK_OK(mx_build_return(&fb, &neg, 1));
    CHECK_OK(mx_build_finish(&b, iff));
  }
  int32_t cc = -1;
  CHECK_OK(mx_build_custom_call(&b, "my.target", &mx, 1, &s4, 1, true, "cfg", &cc));
  int32_t outs[3] = {iff ? iff->results[0] : mx, h, sorted[0]};
  CHECK_OK(mx_build_return(&b, outs, 3));
  CHECK_OK(mx_hlo_verify_module(m));
  roundtrip_module(m, "builder module");
  mx_module_destroy(m);
}

// ---- Round trip over the StableHLO interpreter suite ----

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int list_mlir(const char *dir, char ***files) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len <= 5 || strcmp(e->d_name + len - 5, ".mlir") != 0) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 128;
      *files = realloc(*files, sizeof(char *) * (size_t)cap);
    }
    (*files)[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(*files, (size_t)n, sizeof(char *), cmp_str);
  return n;
}

typedef struct rt_stats {
  int cases, parsed, ok, reparse_fail, mismatch, generic_fail;
} rt_stats_t;

static mx_status_t parse_text(const char *text, size_t len, const char *name, int32_t line,
                              mx_module_t **m) {
  mx_parse_opts_t o = {.filename = name, .first_line = line, .no_verify = true};
  return mx_hlo_parse(text, len, &o, m);
}

// Reports the first differing line of two texts.
static void report_diff(const char *what, const char *a, const char *b) {
  int line = 1;
  const char *la = a, *lb = b;
  while (*a && *a == *b) {
    if (*a == '\n') {
      line++;
      la = a + 1;
      lb = b + 1;
    }
    a++;
    b++;
  }
  const char *ea = strchr(la, '\n'), *eb = strchr(lb, '\n');
  fprintf(stderr, "  %s: line %d differs:\n    first:  %.*s\n    second: %.*s\n", what, line,
          (int)(ea ? ea - la : (long)strlen(la)), la, (int)(eb ? eb - lb : (long)strlen(lb)), lb);
}

static void roundtrip_case(const char *name, const mx_text_case_t *c, rt_stats_t *s) {
  mx_module_t *m = NULL;
  s->cases++;
  if (parse_text(c->text, c->len, name, c->first_line, &m) != MX_OK) return;
  s->parsed++;
  char *t1 = print_module(m, NULL);
  mx_print_opts_t g = {.generic = true};
  char *tg = print_module(m, &g);
  mx_module_destroy(m);
  mx_module_t *m2 = NULL;
  if (!t1 || parse_text(t1, strlen(t1), "printed", 1, &m2) != MX_OK) {
    s->reparse_fail++;
    fprintf(stderr, "%s:%d: printed text does not parse: %s\n%s", name, c->first_line,
            mx_error_message(), t1 ? t1 : "");
  } else {
    char *t2 = print_module(m2, NULL);
    if (t2 && strcmp(t1, t2) == 0) {
      s->ok++;
    } else {
      s->mismatch++;
      fprintf(stderr, "%s:%d: print(parse(print(m))) != print(m)\n", name, c->first_line);
      if (t2) report_diff("pretty", t1, t2);
    }
    free(t2);
  }
  mx_module_destroy(m2);
  mx_module_t *m3 = NULL;
  if (!tg || parse_text(tg, strlen(tg), "generic", 1, &m3) != MX_OK) {
    s->generic_fail++;
    fprintf(stderr, "%s:%d: generic text does not parse: %s\n", name, c->first_line,
            mx_error_message());
  } else {
    char *t3 = print_module(m3, NULL);
    if (!t3 || !t1 || strcmp(t1, t3) != 0) {
      s->generic_fail++;
      fprintf(stderr, "%s:%d: print(parse(print_generic(m))) != print(m)\n", name, c->first_line);
      if (t1 && t3) report_diff("generic", t1, t3);
    }
    free(t3);
  }
  mx_module_destroy(m3);
  free(t1);
  free(tg);
}

static void test_suite_roundtrip(void) {
  const char *shared = getenv("MX_SHARED");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/stablehlo-interpret", shared ? shared : "../shared");
  char **files = NULL;
  int n = list_mlir(dir, &files);
  if (n == 0) {
    mx_test_skip("suite round trip: %s not found", dir);
    return;
  }
  rt_stats_t s = {0};
  for (int i = 0; i < n; i++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    char *text = NULL;
    size_t len = 0;
    if (mx_read_file(path, &text, &len) == MX_OK) {
      mx_text_case_t *cases = NULL;
      int32_t nc = 0;
      if (mx_hlo_split_cases(text, len, &cases, &nc) == MX_OK) {
        for (int32_t c = 0; c < nc; c++)
          if (memmem(cases[c].text, cases[c].len, "func.func", 9))
            roundtrip_case(files[i], &cases[c], &s);
      }
      free(cases);
      free(text);
    }
    free(files[i]);
  }
  free(files);
  printf(
      "suite round trip: %d cases, %d parse, %d round-trip exactly, %d printed texts do not "
      "re-parse, %d differ, %d generic-form failures\n",
      s.cases, s.parsed, s.ok, s.reparse_fail, s.mismatch, s.generic_fail);
  CHECK(s.parsed > 0);
  CHECK(s.reparse_fail == 0);
  CHECK(s.mismatch == 0);
  CHECK(s.generic_fail == 0);
}

int main(void) {
  test_elementwise();
  test_constants();
  test_regions();
  test_shapes_and_composites();
  test_jax_style();
  test_malformed();
  test_builder_roundtrip();
  test_suite_roundtrip();
  return mx_test_finish();
}
