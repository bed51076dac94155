// Unit tests for the interpreter's chlo.mulhi helpers and the uniform quantization arithmetic.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/interp_chlo.h"
#include "hlo/interp_quant.h"
#include "mlxcel/hlo.h"
#include "mx_test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {  // xorshift64*
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

// Reference high halves from 16-bit limbs (independent of the 32-bit limb implementation).
static uint64_t ref_mulhi_u64(uint64_t a, uint64_t b) {
  uint32_t r[8] = {0};
  for (int i = 0; i < 4; i++) {
    uint64_t carry = 0;
    uint64_t ai = (a >> (16 * i)) & 0xffff;
    for (int j = 0; j < 4; j++) {
      uint64_t bj = (b >> (16 * j)) & 0xffff;
      uint64_t t = r[i + j] + ai * bj + carry;
      r[i + j] = (uint32_t)(t & 0xffff);
      carry = t >> 16;
    }
    int k = i + 4;
    while (carry && k < 8) {
      uint64_t t = r[k] + carry;
      r[k++] = (uint32_t)(t & 0xffff);
      carry = t >> 16;
    }
  }
  return (uint64_t)r[4] | ((uint64_t)r[5] << 16) | ((uint64_t)r[6] << 32) | ((uint64_t)r[7] << 48);
}

static void test_mulhi(void) {
  CHECK(mx_interp_mulhi_u64(UINT64_MAX, UINT64_MAX) == UINT64_MAX - 1);
  CHECK(mx_interp_mulhi_u64(1ull << 32, 1ull << 32) == 1);
  CHECK(mx_interp_mulhi_u64(0, UINT64_MAX) == 0);
  CHECK(mx_interp_mulhi_i64(INT64_MIN, INT64_MIN) == (INT64_C(1) << 62));
  CHECK(mx_interp_mulhi_i64(INT64_MIN, -1) == 0);
  CHECK(mx_interp_mulhi_i64(INT64_MIN, 1) == -1);
  CHECK(mx_interp_mulhi_i64(INT64_MIN, INT64_MAX) == -(INT64_C(1) << 62));
  CHECK(mx_interp_mulhi_i64(INT64_MAX, INT64_MAX) == (INT64_C(1) << 62) - 1);
  CHECK(mx_interp_mulhi_i64(-1, -1) == 0);
  CHECK(mx_interp_mulhi_i64(-1, 1) == -1);
  int bad = 0;
  for (int i = 0; i < 200000; i++) {
    uint64_t a = rng(), b = rng();
    if (i % 4 == 1) a >>= rng() % 64;
    if (i % 4 == 2) b = (uint64_t) - (int64_t)(rng() % 1000);
    uint64_t hu = ref_mulhi_u64(a, b);
    if (mx_interp_mulhi_u64(a, b) != hu) bad++;
    // Signed high half from the unsigned one, computed independently with the 2^64 identity.
    uint64_t hs = hu - ((int64_t)a < 0 ? b : 0) - ((int64_t)b < 0 ? a : 0);
    if ((uint64_t)mx_interp_mulhi_i64((int64_t)a, (int64_t)b) != hs) bad++;
#ifdef __SIZEOF_INT128__
    __extension__ typedef __int128 i128;
    __extension__ typedef unsigned __int128 u128;
    if ((uint64_t)(((u128)a * b) >> 64) != hu) bad++;
    if ((int64_t)(((i128)(int64_t)a * (int64_t)b) >> 64) != (int64_t)hs) bad++;
#endif
  }
  CHECK_MSG(bad == 0, "%d mismatches", bad);
}

static mx_tensor_t make(mx_elem_type_t et, int32_t rank, const int64_t *dims) {
  mx_tensor_t t;
  mx_type_t ty = mx_type_tensor(et, rank, dims);
  if (mx_tensor_alloc(&t, &ty) != MX_OK) memset(&t, 0, sizeof t);
  return t;
}

static void test_quant_suite_values(void) {
  // Per-axis i8:f32:0 {0.1:-30, 0.5:-20}: [4.0, 15.0] <-> [10, 10].
  int64_t d2[1] = {2};
  double sc[2] = {0.1, 0.5};
  int64_t zp[2] = {-30, -20};
  mx_qparams_t qa = {MX_ELEM_I8, MX_ELEM_F32, 0, 0, 0, 2, sc, zp};
  mx_qparams_default_range(&qa);
  CHECK(qa.storage_min == -128 && qa.storage_max == 127);
  mx_tensor_t f = make(MX_ELEM_F32, 1, d2), q = make(MX_ELEM_I8, 1, d2);
  mx_tensor_set_f64(&f, 0, 4.0);
  mx_tensor_set_f64(&f, 1, 15.0);
  CHECK_OK(mx_interp_quantize(&f, &qa, &q));
  CHECK(mx_tensor_get_i64(&q, 0) == 10 && mx_tensor_get_i64(&q, 1) == 10);
  mx_tensor_t g = make(MX_ELEM_F32, 1, d2);
  CHECK_OK(mx_interp_dequantize(&q, &qa, &g));
  CHECK(fabs(mx_tensor_get_f64(&g, 0) - 4.0) < 1e-6 &&
        fabs(mx_tensor_get_f64(&g, 1) - 15.0) < 1e-6);
  // Requantize to {0.1:-20, 0.2:-30}: [20, 45].
  double sc2[2] = {0.1, 0.2};
  int64_t zp2[2] = {-20, -30};
  mx_qparams_t qb = {MX_ELEM_I8, MX_ELEM_F32, -128, 127, 0, 2, sc2, zp2};
  mx_tensor_t q2 = make(MX_ELEM_I8, 1, d2);
  CHECK_OK(mx_interp_quantize(&g, &qb, &q2));
  CHECK(mx_tensor_get_i64(&q2, 0) == 20 && mx_tensor_get_i64(&q2, 1) == 45);
  // Quantized add: dequantize both, add, quantize with the result parameters -> [-12, -8].
  double s1 = 0.1, s2 = 0.5;
  int64_t z1 = -30, z2 = -20;
  mx_qparams_t p1 = {MX_ELEM_I8, MX_ELEM_F32, -128, 127, -1, 1, &s1, &z1};
  mx_qparams_t p2 = {MX_ELEM_I8, MX_ELEM_F32, -128, 127, -1, 1, &s2, &z2};
  mx_tensor_t a = make(MX_ELEM_F32, 1, d2), b = make(MX_ELEM_F32, 1, d2);
  mx_tensor_t qa1 = make(MX_ELEM_I8, 1, d2), qb1 = make(MX_ELEM_I8, 1, d2);
  mx_tensor_set_f64(&a, 0, 1.0);
  mx_tensor_set_f64(&a, 1, 2.0);
  mx_tensor_set_f64(&b, 0, 3.0);
  mx_tensor_set_f64(&b, 1, 4.0);
  CHECK_OK(mx_interp_quantize(&a, &p1, &qa1));
  CHECK_OK(mx_interp_quantize(&b, &p2, &qb1));
  CHECK(mx_tensor_get_i64(&qa1, 0) == -20 && mx_tensor_get_i64(&qb1, 1) == -12);
  CHECK_OK(mx_interp_dequantize(&qa1, &p1, &a));
  CHECK_OK(mx_interp_dequantize(&qb1, &p2, &b));
  for (int i = 0; i < 2; i++)
    mx_tensor_set_f64(&a, i, (double)(float)(mx_tensor_get_f64(&a, i) + mx_tensor_get_f64(&b, i)));
  CHECK_OK(mx_interp_quantize(&a, &p2, &qa1));
  CHECK(mx_tensor_get_i64(&qa1, 0) == -12 && mx_tensor_get_i64(&qa1, 1) == -8);
  mx_tensor_free(&f);
  mx_tensor_free(&g);
  mx_tensor_free(&q);
  mx_tensor_free(&q2);
  mx_tensor_free(&a);
  mx_tensor_free(&b);
  mx_tensor_free(&qa1);
  mx_tensor_free(&qb1);
}

static void test_quant_rounding_and_clamping(void) {
  int64_t d[1] = {9};
  double s = 1.0;
  int64_t z = 0;
  mx_qparams_t p = {MX_ELEM_I8, MX_ELEM_F32, -127, 127, -1, 1, &s, &z};  // i8<-127:127>
  mx_tensor_t f = make(MX_ELEM_F32, 1, d), q = make(MX_ELEM_I8, 1, d);
  double in[9] = {0.5, 1.5, 2.5, -0.5, -2.5, 1000.0, -1000.0, NAN, 126.6};
  int64_t want[9] = {0, 2, 2, 0, -2, 127, -127, 0, 127};
  for (int i = 0; i < 9; i++) mx_tensor_set_f64(&f, i, in[i]);
  CHECK_OK(mx_interp_quantize(&f, &p, &q));
  for (int i = 0; i < 9; i++)
    CHECK_MSG(mx_tensor_get_i64(&q, i) == want[i], "i=%d got %lld", i,
              (long long)mx_tensor_get_i64(&q, i));
  // ui8 storage, zero point 128, bf16 expressed (values rounded to bf16 at each step).
  double s8 = 0.25;
  int64_t z8 = 128;
  mx_qparams_t pu = {MX_ELEM_UI8, MX_ELEM_BF16, 0, 0, -1, 1, &s8, &z8};
  mx_qparams_default_range(&pu);
  CHECK(pu.storage_min == 0 && pu.storage_max == 255);
  mx_tensor_t fb = make(MX_ELEM_BF16, 1, d), qu = make(MX_ELEM_UI8, 1, d);
  double inb[9] = {0.0, -32.0, -40.0, 31.75, 40.0, 0.125, 0.375, -0.125, 1.0};
  int64_t wantb[9] = {128, 0, 0, 255, 255, 128, 130, 128, 132};
  for (int i = 0; i < 9; i++) mx_tensor_set_f64(&fb, i, inb[i]);
  CHECK_OK(mx_interp_quantize(&fb, &pu, &qu));
  for (int i = 0; i < 9; i++)
    CHECK_MSG(mx_tensor_get_i64(&qu, i) == wantb[i], "i=%d got %lld", i,
              (long long)mx_tensor_get_i64(&qu, i));
  CHECK_OK(mx_interp_dequantize(&qu, &pu, &fb));
  CHECK(mx_tensor_get_f64(&fb, 0) == 0.0 && mx_tensor_get_f64(&fb, 1) == -32.0);
  CHECK(mx_tensor_get_f64(&fb, 3) == 31.75 && mx_tensor_get_f64(&fb, 6) == 0.5);
  mx_tensor_free(&f);
  mx_tensor_free(&q);
  mx_tensor_free(&fb);
  mx_tensor_free(&qu);
}

static void test_quant_per_axis_inner(void) {
  // 2x3 tensor quantized along axis 1: column k uses scale k.
  int64_t d[2] = {2, 3};
  double sc[3] = {1.0, 2.0, 4.0};
  int64_t zp[3] = {0, 1, -1};
  mx_qparams_t p = {MX_ELEM_I16, MX_ELEM_F32, 0, 0, 1, 3, sc, zp};
  mx_qparams_default_range(&p);
  mx_tensor_t f = make(MX_ELEM_F32, 2, d), q = make(MX_ELEM_I16, 2, d);
  for (int i = 0; i < 6; i++) mx_tensor_set_f64(&f, i, 8.0 * (i + 1));
  CHECK_OK(mx_interp_quantize(&f, &p, &q));
  int64_t want[6] = {8, 9, 5, 32, 21, 11};  // 8/1+0, 16/2+1, 24/4-1, 32/1, 40/2+1, 48/4-1
  for (int i = 0; i < 6; i++)
    CHECK_MSG(mx_tensor_get_i64(&q, i) == want[i], "i=%d got %lld", i,
              (long long)mx_tensor_get_i64(&q, i));
  mx_tensor_t g = make(MX_ELEM_F32, 2, d);
  CHECK_OK(mx_interp_dequantize(&q, &p, &g));
  for (int i = 0; i < 6; i++) CHECK(mx_tensor_get_f64(&g, i) == 8.0 * (i + 1));
  mx_tensor_free(&f);
  mx_tensor_free(&q);
  mx_tensor_free(&g);
}

static void test_quant_bad_params(void) {
  int64_t d[1] = {2};
  mx_type_t t = mx_type_tensor(MX_ELEM_I8, 1, d);
  double sc[2] = {0.1, 0.5}, neg = -1.0, inf = INFINITY;
  int64_t zp[2] = {0, 0}, big = 300;
  mx_qparams_t p = {MX_ELEM_I8, MX_ELEM_F32, -128, 127, -1, 2, sc, zp};
  CHECK(mx_qparams_check(&p, &t) != MX_OK);  // per-tensor with 2 scales
  p.axis = 0;
  CHECK_OK(mx_qparams_check(&p, &t));
  p.axis = 1;
  CHECK(mx_qparams_check(&p, &t) != MX_OK);  // axis out of range
  mx_qparams_t p1 = {MX_ELEM_I8, MX_ELEM_F32, -128, 127, -1, 1, &neg, zp};
  CHECK(mx_qparams_check(&p1, &t) != MX_OK);
  p1.scales = &inf;
  CHECK(mx_qparams_check(&p1, &t) != MX_OK);
  p1.scales = sc;
  p1.zero_points = &big;
  CHECK(mx_qparams_check(&p1, &t) != MX_OK);
  p1.zero_points = zp;
  p1.storage = MX_ELEM_I64;
  CHECK(mx_qparams_check(&p1, &t) != MX_OK);
  p1.storage = MX_ELEM_I8;
  p1.expressed = MX_ELEM_I32;
  CHECK(mx_qparams_check(&p1, &t) != MX_OK);
  p1.expressed = MX_ELEM_F32;
  p1.storage_min = 10;
  p1.storage_max = 5;
  CHECK(mx_qparams_check(&p1, &t) != MX_OK);
  // Shape and storage mismatches are errors, never crashes.
  p1.storage_min = -128;
  p1.storage_max = 127;
  int64_t d3[1] = {3};
  mx_tensor_t f = make(MX_ELEM_F32, 1, d3), q = make(MX_ELEM_I8, 1, d),
              q16 = make(MX_ELEM_I16, 1, d);
  CHECK(mx_interp_quantize(&f, &p1, &q) != MX_OK);
  CHECK(mx_interp_dequantize(&q, &p1, &f) != MX_OK);
  mx_tensor_t f2 = make(MX_ELEM_F32, 1, d);
  CHECK(mx_interp_quantize(&f2, &p1, &q16) != MX_OK);
  CHECK(mx_interp_dequantize(&q, &p1, &q16) != MX_OK);
  mx_tensor_free(&f);
  mx_tensor_free(&f2);
  mx_tensor_free(&q);
  mx_tensor_free(&q16);
}

// Parses `text` (unverified) and runs its function @main with no arguments; returns the status.
static mx_status_t run_text(const char *text, mx_check_report_t *rep) {
  mx_parse_opts_t po;
  memset(&po, 0, sizeof po);
  po.no_verify = true;
  mx_module_t *m = NULL;
  mx_status_t st = mx_hlo_parse(text, strlen(text), &po, &m);
  if (st) return st;
  mx_func_t *f = mx_module_find_func(m, "main");
  mx_interp_opts_t o;
  memset(&o, 0, sizeof o);
  memset(rep, 0, sizeof *rep);
  o.checks = rep;
  st = f ? mx_interp_run(m, f, NULL, 0, NULL, &o) : MX_ERR_INVALID_ARG;
  mx_module_destroy(m);
  return st;
}

#define SCAN_HEAD                                                 \
  "func.func @main() {\n"                                         \
  "  %in = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>\n" \
  "  %c = stablehlo.constant dense<0> : tensor<i32>\n"

// Malformed name-dispatched ops fail with a message, never crash (bodies, arities, types).
static void test_malformed(void) {
  static const char *bad[] = {
      // mulhi: float, rank mismatch, one operand, two results
      "func.func @main() {\n  %a = stablehlo.constant dense<1.0> : tensor<f32>\n"
      "  %r = \"chlo.mulhi\"(%a, %a) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n  func.return\n}",
      "func.func @main() {\n  %a = stablehlo.constant dense<1> : tensor<2xi32>\n"
      "  %b = stablehlo.constant dense<1> : tensor<i32>\n"
      "  %r = \"chlo.mulhi\"(%a, %b) : (tensor<2xi32>, tensor<i32>) -> tensor<2xi32>\n"
      "  func.return\n}",
      "func.func @main() {\n  %a = stablehlo.constant dense<1> : tensor<i32>\n"
      "  %r = \"chlo.mulhi\"(%a) : (tensor<i32>) -> tensor<i32>\n  func.return\n}",
      "func.func @main() {\n  %a = stablehlo.constant dense<1> : tensor<i32>\n"
      "  %r:2 = \"chlo.mulhi\"(%a, %a) : (tensor<i32>, tensor<i32>) -> (tensor<i32>, tensor<i32>)\n"
      "  func.return\n}",
      // scan: no region, bad dimension, bad segments, wrong body result types, body arity,
      // no inputs and no outputs, results fewer than carries, output length mismatch
      SCAN_HEAD
      "  %0:2 = \"chlo.scan\"(%in, %c) <{dimension = 0 : i64}> : (tensor<3xi32>, "
      "tensor<i32>) -> (tensor<3xi32>, tensor<i32>)\n  func.return\n}",
      SCAN_HEAD
      "  %0:2 = \"chlo.scan\"(%in, %c) <{dimension = 5 : i64}> ({\n"
      "  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
      "    stablehlo.return %x, %y : tensor<i32>, tensor<i32>\n"
      "  }) : (tensor<3xi32>, tensor<i32>) -> (tensor<3xi32>, tensor<i32>)\n"
      "  func.return\n}",
      SCAN_HEAD
      "  %0:2 = \"chlo.scan\"(%in, %c) <{dimension = 0 : i64, operandSegmentSizes = "
      "array<i32: 2, 1>}> ({\n"
      "  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
      "    stablehlo.return %x, %y : tensor<i32>, tensor<i32>\n"
      "  }) : (tensor<3xi32>, tensor<i32>) -> (tensor<3xi32>, tensor<i32>)\n"
      "  func.return\n}",
      SCAN_HEAD
      "  %0:2 = \"chlo.scan\"(%in, %c) <{dimension = 0 : i64}> ({\n"
      "  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
      "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "    stablehlo.return %z, %y : tensor<f32>, tensor<i32>\n"
      "  }) : (tensor<3xi32>, tensor<i32>) -> (tensor<3xi32>, tensor<i32>)\n"
      "  func.return\n}",
      SCAN_HEAD
      "  %0:2 = \"chlo.scan\"(%in, %c) <{dimension = 0 : i64}> ({\n"
      "  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
      "    stablehlo.return %x : tensor<i32>\n"
      "  }) : (tensor<3xi32>, tensor<i32>) -> (tensor<3xi32>, tensor<i32>)\n"
      "  func.return\n}",
      SCAN_HEAD
      "  %0 = \"chlo.scan\"(%c) <{dimension = 0 : i64, scan_dim_size = "
      "1000000000000 : i64}> ({\n"
      "  ^bb0(%y: tensor<i32>):\n"
      "    stablehlo.return %y : tensor<i32>\n"
      "  }) : (tensor<i32>) -> tensor<i32>\n"
      "  func.return\n}",
      SCAN_HEAD
      "  %0 = \"chlo.scan\"(%in, %c) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 0, "
      "2>}> ({\n"
      "  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
      "    stablehlo.return %y : tensor<i32>\n"
      "  }) : (tensor<3xi32>, tensor<i32>) -> tensor<i32>\n"
      "  func.return\n}",
      SCAN_HEAD
      "  %0:2 = \"chlo.scan\"(%in, %c) <{dimension = 0 : i64}> ({\n"
      "  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
      "    stablehlo.return %x, %y : tensor<i32>, tensor<i32>\n"
      "  }) : (tensor<3xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)\n"
      "  func.return\n}",
      // tokens and process ids
      "func.func @main() {\n  %a = stablehlo.constant dense<0> : tensor<i32>\n"
      "  %t = \"stablehlo.after_all\"(%a) : (tensor<i32>) -> !stablehlo.token\n  func.return\n}",
      "func.func @main() {\n"
      "  %t = \"stablehlo.after_all\"() : () -> tensor<i32>\n  func.return\n}",
      "func.func @main() {\n"
      "  %r = \"stablehlo.replica_id\"() : () -> tensor<f32>\n  func.return\n}",
      "func.func @main() {\n  %a = stablehlo.constant dense<0> : tensor<ui32>\n"
      "  %r = \"stablehlo.partition_id\"(%a) : (tensor<ui32>) -> tensor<ui32>\n  func.return\n}",
      // quantize ops without quantized types
      "func.func @main() {\n  %a = stablehlo.constant dense<1.0> : tensor<f32>\n"
      "  %r = \"stablehlo.uniform_quantize\"(%a) : (tensor<f32>) -> tensor<i8>\n  func.return\n}",
      "func.func @main() {\n  %a = stablehlo.constant dense<1> : tensor<i8>\n"
      "  %r = \"stablehlo.uniform_dequantize\"(%a) : (tensor<i8>) -> tensor<f32>\n"
      "  func.return\n}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    mx_check_report_t rep;
    mx_status_t st = run_text(bad[i], &rep);
    CHECK_MSG(st != MX_OK, "case %zu ran", i);
    CHECK_MSG(st == MX_ERR_PARSE || mx_error_message()[0] != '\0', "case %zu: no message", i);
  }
  // The same text, well-formed, runs.
  mx_check_report_t rep;
  CHECK_OK(run_text(SCAN_HEAD
                    "  %0:2 = \"chlo.scan\"(%in, %c) <{dimension = 0 : i64}> ({\n"
                    "  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
                    "    %s = stablehlo.add %x, %y : tensor<i32>\n"
                    "    stablehlo.return %s, %s : tensor<i32>, tensor<i32>\n"
                    "  }) : (tensor<3xi32>, tensor<i32>) -> (tensor<3xi32>, tensor<i32>)\n"
                    "  check.expect_eq_const %0#0, dense<[1, 3, 6]> : tensor<3xi32>\n"
                    "  func.return\n}",
                    &rep));
  CHECK(rep.n_checks == 1 && rep.n_failed == 0);
}

#define AR_FN(name)                                                                              \
  "  func.func @" name                                                                           \
  "(%x: tensor<i64>) -> tensor<i64> {\n"                                                         \
  "    %s = \"stablehlo.all_reduce\"(%x) ({\n"                                                   \
  "    ^bb0(%a: tensor<i64>, %b: tensor<i64>):\n"                                                \
  "      %t = stablehlo.add %a, %b : tensor<i64>\n"                                              \
  "      stablehlo.return %t : tensor<i64>\n"                                                    \
  "    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<i64>) -> tensor<i64>\n" \
  "    return %s : tensor<i64>\n  }\n"

#define RP_MAIN(progs)                                                 \
  "  func.func @main() {\n"                                            \
  "    %a = stablehlo.constant dense<1> : tensor<i64>\n"               \
  "    %r:2 = \"interpreter.run_parallel\"(%a, %a) {programs = " progs \
  "}"                                                                  \
  " : (tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<i64>)\n"      \
  "    func.return\n  }\n"

// Failures inside a process grid end the whole run with the failing process's message, and
// processes waiting for it do not hang.
static void test_parallel_failures(void) {
  static const struct {
    const char *text;
    const char *want;  // substring of the error message
  } bad[] = {
      // a process fails before the collective its partner waits in
      {"module {\n" AR_FN("ar") "  func.func @boom(%x: tensor<i64>) -> tensor<i64> {\n"
                                "    %y = \"stablehlo.custom_call\"(%x) {call_target_name = "
                                "\"nope\"} : (tensor<i64>) -> tensor<i64>\n"
                                "    return %y : tensor<i64>\n  }\n" RP_MAIN(
                                    "[[@ar], [@boom]]") "}",
       "nope"},
      // a process returns without joining the collective
      {"module {\n" AR_FN("ar") "  func.func @quit(%x: tensor<i64>) -> tensor<i64> {\n"
                                "    return %x : tensor<i64>\n  }\n" RP_MAIN(
                                    "[[@ar], [@quit]]") "}",
       "without joining"},
      // group member outside the grid
      {"module {\n" AR_FN("ar") RP_MAIN("[[@ar, @ar]]") "}", "out of range"},
      // unknown program, wrong input count, ragged grid
      {"module {\n" AR_FN("ar") RP_MAIN("[[@ar], [@nope]]") "}", "not found"},
      {"module {\n" AR_FN("ar") RP_MAIN("[[@ar]]") "}", "inputs"},
      {"module {\n" AR_FN("ar") RP_MAIN("[[@ar], []]") "}", "equal lengths"},
      // recv with nothing sent; infeed without producers
      {"module {\n  func.func @r(%t: !stablehlo.token) -> tensor<i64> {\n"
       "    %v:2 = \"stablehlo.recv\"(%t) {channel_handle = #stablehlo.channel_handle<handle = 1, "
       "type = 1>} : (!stablehlo.token) -> (tensor<i64>, !stablehlo.token)\n"
       "    return %v#0 : tensor<i64>\n  }\n"
       "  func.func @main() {\n    %t = \"stablehlo.after_all\"() : () -> !stablehlo.token\n"
       "    %r:2 = \"interpreter.run_parallel\"(%t, %t) {programs = [[@r, @r]]} : "
       "(!stablehlo.token, !stablehlo.token) -> (tensor<i64>, tensor<i64>)\n"
       "    func.return\n  }\n}",
       "deadlocked"},
      {"module {\n  func.func @r(%t: !stablehlo.token) -> tensor<i64> {\n"
       "    %v:2 = \"stablehlo.recv\"(%t) {channel_handle = #stablehlo.channel_handle<handle = 1, "
       "type = 1>} : (!stablehlo.token) -> (tensor<i64>, !stablehlo.token)\n"
       "    return %v#0 : tensor<i64>\n  }\n"
       "  func.func @done(%t: !stablehlo.token) -> tensor<i64> {\n"
       "    %a = stablehlo.constant dense<1> : tensor<i64>\n    return %a : tensor<i64>\n  }\n"
       "  func.func @main() {\n    %t = \"stablehlo.after_all\"() : () -> !stablehlo.token\n"
       "    %r:2 = \"interpreter.run_parallel\"(%t, %t) {programs = [[@r, @done]]} : "
       "(!stablehlo.token, !stablehlo.token) -> (tensor<i64>, tensor<i64>)\n"
       "    func.return\n  }\n}",
       "nothing was sent"},
      {"module {\n  func.func @r(%t: !stablehlo.token) -> tensor<i64> {\n"
       "    %v:2 = \"stablehlo.infeed\"(%t) : (!stablehlo.token) -> (tensor<i64>, "
       "!stablehlo.token)\n"
       "    return %v#0 : tensor<i64>\n  }\n"
       "  func.func @main() {\n    %t = \"stablehlo.after_all\"() : () -> !stablehlo.token\n"
       "    %r = \"interpreter.run_parallel\"(%t) {programs = [[@r]]} : (!stablehlo.token) -> "
       "tensor<i64>\n"
       "    func.return\n  }\n}",
       "infeed queue is empty"},
      // nested grids; channel ops outside a grid
      {"module {\n  func.func @inner() -> tensor<i64> {\n"
       "    %a = stablehlo.constant dense<1> : tensor<i64>\n    return %a : tensor<i64>\n  }\n"
       "  func.func @outer() -> tensor<i64> {\n"
       "    %r = \"interpreter.run_parallel\"() {programs = [[@inner]]} : () -> tensor<i64>\n"
       "    return %r : tensor<i64>\n  }\n"
       "  func.func @main() {\n"
       "    %r = \"interpreter.run_parallel\"() {programs = [[@outer]]} : () -> tensor<i64>\n"
       "    func.return\n  }\n}",
       "nested"},
      {"func.func @main() {\n  %t = \"stablehlo.after_all\"() : () -> !stablehlo.token\n"
       "  %a = stablehlo.constant dense<1> : tensor<i64>\n"
       "  %u = \"stablehlo.send\"(%a, %t) : (tensor<i64>, !stablehlo.token) -> !stablehlo.token\n"
       "  func.return\n}",
       "outside interpreter.run_parallel"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    mx_check_report_t rep;
    mx_status_t st = run_text(bad[i].text, &rep);
    CHECK_MSG(st != MX_OK && st != MX_ERR_PARSE, "case %zu: status %d", i, (int)st);
    CHECK_MSG(strstr(mx_error_message(), bad[i].want) != NULL, "case %zu: message '%s'", i,
              mx_error_message());
  }
}

int main(void) {
  test_mulhi();
  test_quant_suite_values();
  test_quant_rounding_and_clamping();
  test_quant_per_axis_inner();
  test_quant_bad_params();
  test_malformed();
  test_parallel_failures();
  return mx_test_finish();
}
