// Compute kernels of the reference interpreter (dot_general, convolution, reduce, sort, gather,
// scatter, fft, triangular_solve), tested on ops built in memory (no parser needed). Kernels
// without bodies are called directly through mx_interp_compute; ops with bodies run through
// mx_interp_run. The .mlir cases in tests/data/interp/compute_*.mlir cover much more.
#include <stdlib.h>
#include <string.h>

#include "hlo/interp_internal.h"
#include "mlxcel/hlo.h"
#include "mx_test.h"

static mx_type_t ty(mx_elem_type_t et, int32_t rank, const int64_t *dims) {
  return mx_type_tensor(et, rank, dims);
}

static mx_tensor_t tens(mx_type_t type, const double *v) {
  mx_tensor_t t;
  mx_tensor_alloc(&t, &type);
  int64_t n = mx_type_numel(&type);
  for (int64_t i = 0; i < n; i++) {
    if (mx_elem_is_float(type.elem) || mx_elem_is_complex(type.elem))
      mx_tensor_set_f64(&t, i, v[i]);
    else
      mx_tensor_set_i64(&t, i, (int64_t)v[i]);
  }
  return t;
}

// An op `code` in a fresh module whose operands are function arguments of the given types.
typedef struct harness {
  mx_module_t *m;
  mx_func_t *f;
  mx_op_t *op;
} harness_t;

static harness_t make_op(mx_opcode_t code, const mx_type_t *in_types, int32_t n_in,
                         const mx_type_t *out_types, int32_t n_out) {
  harness_t h;
  h.m = mx_module_create(NULL);
  mx_func_create(h.m, "main", false, &h.f);
  int32_t ids[8];
  for (int32_t i = 0; i < n_in; i++) mx_func_add_arg(h.f, &in_types[i], NULL, &ids[i]);
  h.op = mx_block_append_op(h.f, h.f->body, code, NULL, ids, n_in, out_types, n_out);
  return h;
}

static mx_status_t run_kernel(harness_t *h, const mx_tensor_t *const *in, mx_tensor_t *out,
                              const mx_type_t *out_types, int32_t n_out) {
  for (int32_t i = 0; i < n_out; i++) mx_tensor_alloc(&out[i], &out_types[i]);
  return mx_interp_compute(NULL, h->f, h->op, in, out);
}

static mx_attr_t ints(mx_module_t *m, const int64_t *v, int32_t n) { return mx_attr_i64s(m, v, n); }

static void test_dot_general_i8_to_i32(void) {
  int64_t d3[1] = {3};
  mx_type_t it[2] = {ty(MX_ELEM_I8, 1, d3), ty(MX_ELEM_I8, 1, d3)};
  mx_type_t ot = ty(MX_ELEM_I32, 0, NULL);
  harness_t h = make_op(MX_OP_DOT_GENERAL, it, 2, &ot, 1);
  int64_t zero = 0;
  mx_named_attr_t fl[2] = {{"lhs_contracting_dimensions", ints(h.m, &zero, 1)},
                           {"rhs_contracting_dimensions", ints(h.m, &zero, 1)}};
  mx_op_set_attr(h.f, h.op, "dot_dimension_numbers", mx_attr_struct(h.m, "stablehlo.dot", fl, 2));
  double v[3] = {127, 127, -128};
  mx_tensor_t a = tens(it[0], v), b = tens(it[1], v), out;
  const mx_tensor_t *in[2] = {&a, &b};
  CHECK_OK(run_kernel(&h, in, &out, &ot, 1));
  CHECK(mx_tensor_get_i64(&out, 0) == 127 * 127 * 2 + 128 * 128);
  mx_tensor_free(&out);
  // A contracting dimension out of range is an error, not a crash.
  int64_t bad = 5;
  fl[0].value = ints(h.m, &bad, 1);
  mx_op_set_attr(h.f, h.op, "dot_dimension_numbers", mx_attr_struct(h.m, "stablehlo.dot", fl, 2));
  CHECK(run_kernel(&h, in, &out, &ot, 1) != MX_OK);
  mx_tensor_free(&out);
  mx_tensor_free(&a);
  mx_tensor_free(&b);
  mx_module_destroy(h.m);
}

static void test_convolution_lhs_dilation(void) {
  // The convolution_op_test_si64 example: 1x4x4x1 input, 3x3 ones kernel, stride 4, lhs dilation 2.
  int64_t ld[4] = {1, 4, 4, 1}, rd[4] = {3, 3, 1, 1}, od[4] = {1, 2, 2, 1};
  mx_type_t it[2] = {ty(MX_ELEM_I64, 4, ld), ty(MX_ELEM_I64, 4, rd)};
  mx_type_t ot = ty(MX_ELEM_I64, 4, od);
  harness_t h = make_op(MX_OP_CONVOLUTION, it, 2, &ot, 1);
  mx_module_t *m = h.m;
  int64_t sp[2] = {1, 2}, ksp[2] = {0, 1};
  mx_named_attr_t fl[9] = {
      {"input_batch_dimension", mx_attr_int(0, MX_ELEM_I64)},
      {"input_feature_dimension", mx_attr_int(3, MX_ELEM_I64)},
      {"input_spatial_dimensions", ints(m, sp, 2)},
      {"kernel_input_feature_dimension", mx_attr_int(2, MX_ELEM_I64)},
      {"kernel_output_feature_dimension", mx_attr_int(3, MX_ELEM_I64)},
      {"kernel_spatial_dimensions", ints(m, ksp, 2)},
      {"output_batch_dimension", mx_attr_int(0, MX_ELEM_I64)},
      {"output_feature_dimension", mx_attr_int(3, MX_ELEM_I64)},
      {"output_spatial_dimensions", ints(m, sp, 2)},
  };
  mx_op_set_attr(h.f, h.op, "dimension_numbers", mx_attr_struct(m, "stablehlo.conv", fl, 9));
  int64_t four[2] = {4, 4}, two[2] = {2, 2};
  mx_op_set_attr(h.f, h.op, "window_strides", ints(m, four, 2));
  mx_op_set_attr(h.f, h.op, "lhs_dilation", ints(m, two, 2));
  double lv[16] = {1, 2, 5, 6, 3, 4, 7, 8, 10, 11, 14, 15, 12, 13, 16, 17};
  double rv[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  mx_tensor_t a = tens(it[0], lv), b = tens(it[1], rv), out;
  const mx_tensor_t *in[2] = {&a, &b};
  CHECK_OK(run_kernel(&h, in, &out, &ot, 1));
  int64_t want[4] = {10, 26, 46, 62};
  for (int i = 0; i < 4; i++) CHECK(mx_tensor_get_i64(&out, i) == want[i]);
  mx_tensor_free(&out);
  mx_tensor_free(&a);
  mx_tensor_free(&b);
  mx_module_destroy(h.m);
}

static void test_gather_clamp(void) {
  int64_t od[2] = {5, 3}, id[2] = {3, 1}, rd[3] = {3, 2, 3};
  mx_type_t it[2] = {ty(MX_ELEM_I32, 2, od), ty(MX_ELEM_I64, 2, id)};
  mx_type_t ot = ty(MX_ELEM_I32, 3, rd);
  harness_t h = make_op(MX_OP_GATHER, it, 2, &ot, 1);
  int64_t offs[2] = {1, 2}, sim[1] = {0}, ss[2] = {2, 3};
  mx_named_attr_t fl[3] = {{"offset_dims", ints(h.m, offs, 2)},
                           {"start_index_map", ints(h.m, sim, 1)},
                           {"index_vector_dim", mx_attr_int(1, MX_ELEM_I64)}};
  mx_op_set_attr(h.f, h.op, "dimension_numbers", mx_attr_struct(h.m, "stablehlo.gather", fl, 3));
  mx_op_set_attr(h.f, h.op, "slice_sizes", ints(h.m, ss, 2));
  double ov[15], iv[3] = {4, -2, 1};
  for (int i = 0; i < 15; i++) ov[i] = 10 * (i / 3) + i % 3;
  mx_tensor_t a = tens(it[0], ov), b = tens(it[1], iv), out;
  const mx_tensor_t *in[2] = {&a, &b};
  CHECK_OK(run_kernel(&h, in, &out, &ot, 1));
  int64_t want[18] = {30, 31, 32, 40, 41, 42, 0, 1, 2, 10, 11, 12, 10, 11, 12, 20, 21, 22};
  for (int i = 0; i < 18; i++) CHECK_MSG(mx_tensor_get_i64(&out, i) == want[i], "at %d", i);
  mx_tensor_free(&out);
  mx_tensor_free(&a);
  mx_tensor_free(&b);
  mx_module_destroy(h.m);
}

static void test_fft_roundtrip(void) {
  int64_t d5[1] = {5}, d3[1] = {3};
  mx_type_t rt = ty(MX_ELEM_F64, 1, d5), ct = ty(MX_ELEM_C128, 1, d3);
  harness_t h = make_op(MX_OP_FFT, &rt, 1, &ct, 1);
  int64_t len = 5;
  mx_op_set_attr(h.f, h.op, "fft_type", mx_attr_enum(h.m, "fft_type", "RFFT"));
  mx_op_set_attr(h.f, h.op, "fft_length", ints(h.m, &len, 1));
  double xv[5] = {1, -2, 0.5, 3, 4};
  mx_tensor_t x = tens(rt, xv), spec, back;
  const mx_tensor_t *in[1] = {&x};
  CHECK_OK(run_kernel(&h, in, &spec, &ct, 1));
  const double *c = (const double *)spec.data;
  CHECK_NEAR(c[0], 6.5, 1e-12);  // DC term = sum
  CHECK_NEAR(c[1], 0.0, 0);
  CHECK_NEAR(c[2],
             1 * 1 + -2 * cos(2 * M_PI / 5) + 0.5 * cos(4 * M_PI / 5) + 3 * cos(6 * M_PI / 5) +
                 4 * cos(8 * M_PI / 5),
             1e-12);
  harness_t h2 = make_op(MX_OP_FFT, &ct, 1, &rt, 1);
  mx_op_set_attr(h2.f, h2.op, "fft_type", mx_attr_enum(h2.m, "fft_type", "IRFFT"));
  mx_op_set_attr(h2.f, h2.op, "fft_length", ints(h2.m, &len, 1));
  const mx_tensor_t *in2[1] = {&spec};
  CHECK_OK(run_kernel(&h2, in2, &back, &rt, 1));
  for (int i = 0; i < 5; i++) CHECK_NEAR(mx_tensor_get_f64(&back, i), xv[i], 1e-12);
  mx_tensor_free(&x);
  mx_tensor_free(&spec);
  mx_tensor_free(&back);
  mx_module_destroy(h.m);
  mx_module_destroy(h2.m);
}

static void test_triangular_solve(void) {
  // Left, lower, transposed: solve L^T x = b; the upper triangle holds garbage.
  int64_t d33[2] = {3, 3}, d31[2] = {3, 1};
  mx_type_t it[2] = {ty(MX_ELEM_F64, 2, d33), ty(MX_ELEM_F64, 2, d31)};
  harness_t h = make_op(MX_OP_TRIANGULAR_SOLVE, it, 2, &it[1], 1);
  mx_op_set_attr(h.f, h.op, "left_side", mx_attr_bool(true));
  mx_op_set_attr(h.f, h.op, "lower", mx_attr_bool(true));
  mx_op_set_attr(h.f, h.op, "unit_diagonal", mx_attr_bool(false));
  mx_op_set_attr(h.f, h.op, "transpose_a", mx_attr_enum(h.m, "transpose", "TRANSPOSE"));
  double av[9] = {2, 99, 99, 1, 4, 99, -1, 0.5, 0.5};
  double xv[3] = {1, -1, 3};
  // b = L^T x with L = [[2,0,0],[1,4,0],[-1,0.5,0.5]].
  double bv[3] = {2 * 1 + 1 * -1 + -1 * 3, 4 * -1 + 0.5 * 3, 0.5 * 3};
  mx_tensor_t a = tens(it[0], av), b = tens(it[1], bv), out;
  const mx_tensor_t *in[2] = {&a, &b};
  CHECK_OK(run_kernel(&h, in, &out, &it[1], 1));
  for (int i = 0; i < 3; i++) CHECK_NEAR(mx_tensor_get_f64(&out, i), xv[i], 1e-12);
  mx_tensor_free(&out);
  mx_tensor_free(&a);
  mx_tensor_free(&b);
  mx_module_destroy(h.m);
}

// chlo.ragged_dot arrives as an unknown op and is dispatched by name. Mode 2 (ragged contracting
// dimension): one result per group, each contracting over its group's range only.
static void test_ragged_dot_mode2(void) {
  int64_t ld[2] = {2, 4}, rd[2] = {4, 3}, gd[1] = {2}, od[3] = {2, 2, 3};
  mx_type_t it[3] = {ty(MX_ELEM_F32, 2, ld), ty(MX_ELEM_F32, 2, rd), ty(MX_ELEM_I64, 1, gd)};
  mx_type_t ot = ty(MX_ELEM_F32, 3, od);
  harness_t h = make_op(MX_OP_UNKNOWN, it, 3, &ot, 1);
  h.op->name = "chlo.ragged_dot";
  int64_t one = 1, zero = 0;
  mx_named_attr_t fl[6] = {{"lhs_batching_dimensions", ints(h.m, NULL, 0)},
                           {"rhs_batching_dimensions", ints(h.m, NULL, 0)},
                           {"lhs_contracting_dimensions", ints(h.m, &one, 1)},
                           {"rhs_contracting_dimensions", ints(h.m, &zero, 1)},
                           {"lhs_ragged_dimensions", ints(h.m, &one, 1)},
                           {"rhs_group_dimensions", ints(h.m, NULL, 0)}};
  mx_op_set_attr(h.f, h.op, "ragged_dot_dimension_numbers",
                 mx_attr_struct(h.m, "chlo.ragged_dot", fl, 6));
  double lv[8] = {1, 2, 3, 4, 5, 6, 7, 8}, rv[12] = {1, 0, 2, 0, 1, 1, 1, 1, 0, 2, 0, 1};
  double gv[2] = {1, 3};
  mx_tensor_t a = tens(it[0], lv), b = tens(it[1], rv), g = tens(it[2], gv), out;
  const mx_tensor_t *in[3] = {&a, &b, &g};
  CHECK_OK(run_kernel(&h, in, &out, &ot, 1));
  double want[12] = {1, 0, 2, 5, 0, 10, 11, 5, 6, 23, 13, 14};
  for (int i = 0; i < 12; i++) CHECK_NEAR(mx_tensor_get_f64(&out, i), want[i], 0);
  mx_tensor_free(&out);
  mx_tensor_free(&a);
  mx_tensor_free(&b);
  mx_tensor_free(&g);
  mx_module_destroy(h.m);
}

// ---- ops with bodies, through mx_interp_run ----

// Appends a body block with `n` scalar args of types et[i] to op.
static mx_block_t *body(mx_func_t *f, mx_op_t *op, const mx_elem_type_t *et, int32_t n,
                        int32_t *args) {
  mx_block_t *b = mx_block_create(f);
  for (int32_t i = 0; i < n; i++) {
    mx_type_t t = mx_type_scalar(et[i]);
    mx_block_add_arg(f, b, &t, NULL, &args[i]);
  }
  mx_op_add_region(f, op, b);
  return b;
}

static void test_sort_stable_two_operands(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f;
  mx_func_create(m, "main", false, &f);
  int64_t d6[1] = {6};
  mx_type_t kt = ty(MX_ELEM_I64, 1, d6), pt = ty(MX_ELEM_I32, 1, d6);
  int32_t ids[2];
  mx_func_add_arg(f, &kt, "k", &ids[0]);
  mx_func_add_arg(f, &pt, "p", &ids[1]);
  mx_type_t rts[2] = {kt, pt};
  mx_op_t *op = mx_block_append_op(f, f->body, MX_OP_SORT, NULL, ids, 2, rts, 2);
  mx_op_set_attr(f, op, "dimension", mx_attr_int(0, MX_ELEM_I64));
  mx_op_set_attr(f, op, "is_stable", mx_attr_bool(true));
  mx_elem_type_t bet[4] = {MX_ELEM_I64, MX_ELEM_I64, MX_ELEM_I32, MX_ELEM_I32};
  int32_t a[4];
  mx_block_t *b = body(f, op, bet, 4, a);
  mx_type_t bt = mx_type_scalar(MX_ELEM_I1);
  mx_op_t *cmp = mx_block_append_op(f, b, MX_OP_COMPARE, NULL, a, 2, &bt, 1);
  mx_op_set_attr(f, cmp, "comparison_direction", mx_attr_enum(m, "comparison_direction", "LT"));
  mx_block_append_op(f, b, MX_OP_RETURN, NULL, &cmp->results[0], 1, NULL, 0);
  mx_func_set_result_types(f, rts, 2);
  op = f->body->ops[0];
  mx_block_append_op(f, f->body, MX_OP_FUNC_RETURN, NULL, op->results, 2, NULL, 0);

  double kv[6] = {3, 1, 3, 2, 1, 3}, pv[6] = {0, 1, 2, 3, 4, 5};
  mx_tensor_t args[2] = {tens(kt, kv), tens(pt, pv)}, res[2];
  mx_status_t st = mx_interp_run(m, f, args, 2, res, NULL);
  CHECK_OK(st);
  if (st == MX_OK) {
    int64_t wk[6] = {1, 1, 2, 3, 3, 3}, wp[6] = {1, 4, 3, 0, 2, 5};
    for (int i = 0; i < 6; i++) {
      CHECK(mx_tensor_get_i64(&res[0], i) == wk[i]);
      CHECK(mx_tensor_get_i64(&res[1], i) == wp[i]);
    }
    mx_tensor_free(&res[0]);
    mx_tensor_free(&res[1]);
  }
  mx_tensor_free(&args[0]);
  mx_tensor_free(&args[1]);
  mx_module_destroy(m);
}

static void test_reduce_sum_rows(void) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f;
  mx_func_create(m, "main", false, &f);
  int64_t d23[2] = {2, 3}, d2[1] = {2};
  mx_type_t xt = ty(MX_ELEM_F32, 2, d23), st0 = mx_type_scalar(MX_ELEM_F32),
            rt = ty(MX_ELEM_F32, 1, d2);
  int32_t ids[2];
  mx_func_add_arg(f, &xt, "x", &ids[0]);
  mx_func_add_arg(f, &st0, "z", &ids[1]);
  mx_op_t *op = mx_block_append_op(f, f->body, MX_OP_REDUCE, NULL, ids, 2, &rt, 1);
  int64_t one = 1;
  mx_op_set_attr(f, op, "dimensions", mx_attr_i64s(m, &one, 1));
  mx_elem_type_t bet[2] = {MX_ELEM_F32, MX_ELEM_F32};
  int32_t a[2];
  mx_block_t *b = body(f, op, bet, 2, a);
  mx_op_t *add = mx_block_append_op(f, b, MX_OP_ADD, NULL, a, 2, &st0, 1);
  mx_block_append_op(f, b, MX_OP_RETURN, NULL, &add->results[0], 1, NULL, 0);
  mx_func_set_result_types(f, &rt, 1);
  op = f->body->ops[0];
  mx_block_append_op(f, f->body, MX_OP_FUNC_RETURN, NULL, op->results, 1, NULL, 0);
  double xv[6] = {1, 2, 3, 4, 5, 6.5}, zv[1] = {0.5};
  mx_tensor_t args[2] = {tens(xt, xv), tens(st0, zv)}, res[1];
  mx_status_t s = mx_interp_run(m, f, args, 2, res, NULL);
  CHECK_OK(s);
  if (s == MX_OK) {
    CHECK_NEAR(mx_tensor_get_f64(&res[0], 0), 6.5, 0);
    CHECK_NEAR(mx_tensor_get_f64(&res[0], 1), 16.0, 0);
    mx_tensor_free(&res[0]);
  }
  mx_tensor_free(&args[0]);
  mx_tensor_free(&args[1]);
  mx_module_destroy(m);
}

// Malformed attributes reach kernels only when the verifier is bypassed; they must fail cleanly.
static void test_bad_attributes(void) {
  int64_t od[2] = {5, 3}, id[2] = {3, 1}, rd[3] = {3, 2, 3};
  mx_type_t it[2] = {ty(MX_ELEM_I32, 2, od), ty(MX_ELEM_I64, 2, id)};
  mx_type_t ot = ty(MX_ELEM_I32, 3, rd);
  double ov[15] = {0}, iv[3] = {0};
  mx_tensor_t a = tens(it[0], ov), b = tens(it[1], iv), out;
  const mx_tensor_t *in[2] = {&a, &b};

  harness_t h = make_op(MX_OP_GATHER, it, 2, &ot, 1);
  int64_t offs[2] = {1, 7}, sim[1] = {0}, ss[2] = {2, 3};
  mx_named_attr_t fl[3] = {{"offset_dims", ints(h.m, offs, 2)},
                           {"start_index_map", ints(h.m, sim, 1)},
                           {"index_vector_dim", mx_attr_int(1, MX_ELEM_I64)}};
  mx_op_set_attr(h.f, h.op, "dimension_numbers", mx_attr_struct(h.m, "stablehlo.gather", fl, 3));
  mx_op_set_attr(h.f, h.op, "slice_sizes", ints(h.m, ss, 2));
  CHECK(run_kernel(&h, in, &out, &ot, 1) == MX_ERR_INVALID_ARG);  // offset dim 7 out of range
  mx_tensor_free(&out);
  fl[2].value = mx_attr_int(9, MX_ELEM_I64);
  offs[1] = 2;
  fl[0].value = ints(h.m, offs, 2);
  mx_op_set_attr(h.f, h.op, "dimension_numbers", mx_attr_struct(h.m, "stablehlo.gather", fl, 3));
  CHECK(run_kernel(&h, in, &out, &ot, 1) == MX_ERR_INVALID_ARG);  // index_vector_dim 9
  mx_tensor_free(&out);
  fl[2].value = mx_attr_int(1, MX_ELEM_I64);
  mx_op_set_attr(h.f, h.op, "dimension_numbers", mx_attr_struct(h.m, "stablehlo.gather", fl, 3));
  int64_t big[2] = {9, 3};
  mx_op_set_attr(h.f, h.op, "slice_sizes", ints(h.m, big, 2));
  CHECK(run_kernel(&h, in, &out, &ot, 1) == MX_ERR_INVALID_ARG);  // slice larger than operand
  mx_tensor_free(&out);
  mx_module_destroy(h.m);

  // Triangular solve with a non-square `a`; fft with a wrong length; sort dimension 5.
  harness_t t = make_op(MX_OP_TRIANGULAR_SOLVE, it, 2, &it[0], 1);
  CHECK(run_kernel(&t, in, &out, &it[0], 1) == MX_ERR_INVALID_ARG);
  mx_tensor_free(&out);
  mx_module_destroy(t.m);
  int64_t d4[1] = {4};
  mx_type_t ct = ty(MX_ELEM_C64, 1, d4);
  harness_t ff = make_op(MX_OP_FFT, &ct, 1, &ct, 1);
  int64_t len = 3;
  mx_op_set_attr(ff.f, ff.op, "fft_type", mx_attr_enum(ff.m, "fft_type", "FFT"));
  mx_op_set_attr(ff.f, ff.op, "fft_length", ints(ff.m, &len, 1));
  mx_tensor_t cx;
  mx_tensor_alloc(&cx, &ct);
  const mx_tensor_t *cin[1] = {&cx};
  CHECK(run_kernel(&ff, cin, &out, &ct, 1) == MX_ERR_INVALID_ARG);
  mx_tensor_free(&out);
  mx_op_set_attr(ff.f, ff.op, "fft_type", mx_attr_enum(ff.m, "fft_type", "WAVELET"));
  CHECK(run_kernel(&ff, cin, &out, &ct, 1) == MX_ERR_UNSUPPORTED);
  mx_tensor_free(&out);
  mx_tensor_free(&cx);
  mx_module_destroy(ff.m);
  harness_t so = make_op(MX_OP_SORT, it, 1, it, 1);
  mx_op_set_attr(so.f, so.op, "dimension", mx_attr_int(5, MX_ELEM_I64));
  CHECK(run_kernel(&so, in, &out, it, 1) == MX_ERR_INVALID_ARG);
  mx_tensor_free(&out);
  mx_module_destroy(so.m);
  mx_tensor_free(&a);
  mx_tensor_free(&b);
}

// chlo.scan (unknown op dispatched by name): cumulative sum along dimension 1 with a rank-1
// carry, forward and reverse.
static void test_scan_cumsum_dim1(bool reverse) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f;
  mx_func_create(m, "main", false, &f);
  int64_t d23[2] = {2, 3}, d2[1] = {2};
  mx_type_t xt = ty(MX_ELEM_I32, 2, d23), ct = ty(MX_ELEM_I32, 1, d2);
  int32_t ids[2];
  mx_func_add_arg(f, &xt, "x", &ids[0]);
  mx_func_add_arg(f, &ct, "c", &ids[1]);
  mx_type_t rts[2] = {xt, ct};
  mx_op_t *op = mx_block_append_op(f, f->body, MX_OP_UNKNOWN, "chlo.scan", ids, 2, rts, 2);
  mx_op_set_attr(f, op, "dimension", mx_attr_int(1, MX_ELEM_I64));
  if (reverse) mx_op_set_attr(f, op, "is_reverse", mx_attr_bool(true));
  mx_block_t *b = mx_block_create(f);
  int32_t a[2];
  mx_block_add_arg(f, b, &ct, NULL, &a[0]);
  mx_block_add_arg(f, b, &ct, NULL, &a[1]);
  mx_op_add_region(f, op, b);
  mx_op_t *add = mx_block_append_op(f, b, MX_OP_ADD, NULL, a, 2, &ct, 1);
  int32_t r2[2] = {add->results[0], add->results[0]};
  mx_block_append_op(f, b, MX_OP_RETURN, NULL, r2, 2, NULL, 0);
  mx_func_set_result_types(f, rts, 2);
  op = f->body->ops[0];
  mx_block_append_op(f, f->body, MX_OP_FUNC_RETURN, NULL, op->results, 2, NULL, 0);
  double xv[6] = {1, 2, 3, 4, 5, 6}, cv[2] = {0, 100};
  mx_tensor_t args[2] = {tens(xt, xv), tens(ct, cv)}, res[2];
  mx_status_t st = mx_interp_run(m, f, args, 2, res, NULL);
  // The driver may not route unknown chlo ops to the compute kernels yet.
  if (st == MX_ERR_UNSUPPORTED)
    fprintf(stderr, "note: chlo.scan not routed by the driver: %s\n", mx_error_message());
  else
    CHECK_OK(st);
  if (st == MX_OK) {
    int64_t fw[6] = {1, 3, 6, 104, 109, 115}, rv[6] = {6, 5, 3, 115, 111, 106};
    for (int i = 0; i < 6; i++) CHECK(mx_tensor_get_i64(&res[0], i) == (reverse ? rv : fw)[i]);
    CHECK(mx_tensor_get_i64(&res[1], 0) == 6 && mx_tensor_get_i64(&res[1], 1) == 115);
    mx_tensor_free(&res[0]);
    mx_tensor_free(&res[1]);
  }
  mx_tensor_free(&args[0]);
  mx_tensor_free(&args[1]);
  mx_module_destroy(m);
}

int main(void) {
  test_scan_cumsum_dim1(false);
  test_scan_cumsum_dim1(true);
  test_bad_attributes();
  test_ragged_dot_mode2();
  test_dot_general_i8_to_i32();
  test_convolution_lhs_dilation();
  test_gather_clamp();
  test_fft_roundtrip();
  test_triangular_solve();
  test_sort_stable_two_operands();
  test_reduce_sum_rows();
  return mx_test_finish();
}
