// Parser tests for the pretty forms of named ops without an opcode (chlo.scan, token and
// process-id ops, dynamic-shape ops, probes), quantized element types, function declarations
// and empty dense literals; each checked against the generic form and for print round trips.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"
#include "mx_test.h"

static mx_status_t parse_str(const char *text, mx_module_t **m) {
  mx_parse_opts_t o = {.filename = "t.mlir", .first_line = 1};
  return mx_hlo_parse(text, strlen(text), &o, m);
}

// Heap string of the module printed with `generic`; NULL on failure.
static char *print_module(const mx_module_t *m, bool generic) {
  mx_print_opts_t po = {.generic = generic};
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  if (mx_hlo_print(m, &po, &sb) != MX_OK) {
    mx_strbuf_free(&sb);
    return NULL;
  }
  char *s = malloc(sb.len + 1);
  if (s) {
    memcpy(s, sb.data, sb.len);
    s[sb.len] = '\0';
  }
  mx_strbuf_free(&sb);
  return s;
}

// print(parse(print(m))) == print(m) for the pretty and generic printers; returns the pretty
// text (caller frees) for further checks.
static char *check_roundtrip(const char *what, const mx_module_t *m) {
  char *pretty = NULL;
  for (int gen = 0; gen < 2; gen++) {
    char *a = print_module(m, gen);
    CHECK_MSG(a != NULL, "%s: print failed: %s", what, mx_error_message());
    if (!a) continue;
    mx_module_t *m2 = NULL;
    mx_status_t st = parse_str(a, &m2);
    CHECK_MSG(st == MX_OK, "%s: printed text does not parse: %s\n%s", what, mx_error_message(), a);
    char *b = m2 ? print_module(m2, gen) : NULL;
    CHECK_MSG(b && strcmp(a, b) == 0, "%s: %s round trip differs:\n%s\n---\n%s", what,
              gen ? "generic" : "pretty", a, b ? b : "(null)");
    free(b);
    mx_module_destroy(m2);
    if (gen == 0)
      pretty = a;
    else
      free(a);
  }
  return pretty;
}

// The pretty text and the generic text give the same IR (compared via the generic printer),
// and both round-trip. Returns the pretty printing of the pretty parse (caller frees).
static char *check_forms(const char *what, const char *pretty, const char *generic) {
  mx_module_t *a = NULL, *b = NULL;
  mx_status_t sa = parse_str(pretty, &a);
  CHECK_MSG(sa == MX_OK, "%s (pretty): %s", what, mx_error_message());
  mx_status_t sb = parse_str(generic, &b);
  CHECK_MSG(sb == MX_OK, "%s (generic): %s", what, mx_error_message());
  char *out = NULL;
  if (a && b) {
    char *ga = print_module(a, true), *gb = print_module(b, true);
    CHECK_MSG(ga && gb && strcmp(ga, gb) == 0, "%s: forms differ:\n%s\n---\n%s", what, ga ? ga : "",
              gb ? gb : "");
    free(ga);
    free(gb);
    out = check_roundtrip(what, a);
    free(check_roundtrip(what, b));
  }
  mx_module_destroy(a);
  mx_module_destroy(b);
  return out;
}

static void expect_contains(const char *what, const char *text, const char *frag) {
  CHECK_MSG(text && strstr(text, frag), "%s: '%s' not in:\n%s", what, frag, text ? text : "");
}

static void expect_error(const char *what, const char *text, mx_status_t want, const char *frag) {
  mx_module_t *m = NULL;
  mx_status_t st = parse_str(text, &m);
  CHECK_MSG(st == want && m == NULL && strstr(mx_error_message(), frag), "%s: got %s: %s", what,
            mx_status_name(st), mx_error_message());
  mx_module_destroy(m);
}

// ---------------------------------------------------------------------------------------------

#define SCAN_BODY                                            \
  "{\n"                                                      \
  "  ^bb0(%x: tensor<i32>, %c: tensor<i32>):\n"              \
  "    %s = stablehlo.add %x, %c : tensor<i32>\n"            \
  "    stablehlo.return %s, %s : tensor<i32>, tensor<i32>\n" \
  "  }"

static void test_scan(void) {
  const char *pretty =
      "func.func @f(%in: tensor<4xi32>, %init: tensor<i32>) {\n"
      "  %0:2 = chlo.scan(%in) inits(%init) dimension=0 " SCAN_BODY
      " : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)\n"
      "  func.return\n"
      "}\n";
  const char *generic =
      "func.func @f(%in: tensor<4xi32>, %init: tensor<i32>) {\n"
      "  %0:2 = \"chlo.scan\"(%in, %init) <{dimension = 0 : i64, operandSegmentSizes = "
      "array<i32: 1, 1>, resultSegmentSizes = array<i32: 1, 1>}> (" SCAN_BODY
      ") : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)\n"
      "  func.return\n"
      "}\n";
  char *out = check_forms("scan", pretty, generic);
  expect_contains("scan", out, "chlo.scan(%arg0) inits(%arg1) dimension=0 {");
  free(out);
  // `inits (` with a space, the attributes keyword, and an empty input list.
  const char *rev =
      "func.func @f(%in: tensor<4xi32>, %init: tensor<i32>) {\n"
      "  %0:2 = chlo.scan(%in) inits (%init) dimension=0 attributes {is_reverse = true} " SCAN_BODY
      " : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)\n"
      "  func.return\n"
      "}\n";
  mx_module_t *m = NULL;
  CHECK_OK(parse_str(rev, &m));
  if (m) {
    const mx_op_t *op = m->funcs[0]->body->ops[0];
    const mx_attr_t *r = mx_op_attr(op, "is_reverse");
    const mx_attr_t *os = mx_op_attr(op, "operandSegmentSizes");
    const mx_attr_t *rs = mx_op_attr(op, "resultSegmentSizes");
    const mx_attr_t *d = mx_op_attr(op, "dimension");
    CHECK(op->code == MX_OP_UNKNOWN && strcmp(op->name, "chlo.scan") == 0 && op->n_regions == 1);
    CHECK(r && r->kind == MX_ATTR_BOOL && r->i == 1);
    CHECK(d && d->kind == MX_ATTR_INT && d->elem == MX_ELEM_I64 && d->i == 0);
    CHECK(os && os->kind == MX_ATTR_DENSE_ARRAY && os->elem == MX_ELEM_I32 && os->n == 2 &&
          os->ints[0] == 1 && os->ints[1] == 1);
    CHECK(rs && rs->kind == MX_ATTR_DENSE_ARRAY && rs->n == 2 && rs->ints[0] == 1 &&
          rs->ints[1] == 1);
    char *p = check_roundtrip("scan reverse", m);
    expect_contains("scan reverse", p, "dimension=0 attributes {is_reverse = true} {");
    free(p);
  }
  mx_module_destroy(m);
  expect_error("scan without inits",
               "func.func @f(%in: tensor<4xi32>) {\n"
               "  %0 = chlo.scan(%in) dimension=0 {\n"
               "  }\n"
               "  func.return\n"
               "}\n",
               MX_ERR_PARSE, "t.mlir:2:23: error: expected 'inits', got 'dimension'");
  expect_error("scan with more inits than results",
               "func.func @f(%in: tensor<4xi32>, %i: tensor<i32>) {\n"
               "  chlo.scan(%in) inits(%i) dimension=0 {\n"
               "    stablehlo.return %i : tensor<i32>\n"
               "  } : (tensor<4xi32>, tensor<i32>) -> ()\n"
               "  func.return\n"
               "}\n",
               MX_ERR_PARSE, "chlo.scan has 1 inits but only 0 results");
}

#define FN0(body) "func.func @f() {\n" body "\n  func.return\n}\n"

static void test_token_and_ids(void) {
  char *out = check_forms("after_all",
                          FN0("  %a = stablehlo.after_all : !stablehlo.token\n"
                              "  %b = stablehlo.create_token : !stablehlo.token\n"
                              "  %c = stablehlo.after_all %a, %b : !stablehlo.token"),
                          FN0("  %a = \"stablehlo.after_all\"() : () -> !stablehlo.token\n"
                              "  %b = \"stablehlo.create_token\"() : () -> !stablehlo.token\n"
                              "  %c = \"stablehlo.after_all\"(%a, %b) : (!stablehlo.token, "
                              "!stablehlo.token) -> !stablehlo.token"));
  expect_contains("after_all", out, "%0 = stablehlo.after_all : !stablehlo.token");
  expect_contains("after_all", out, "stablehlo.after_all %0, %1 : !stablehlo.token");
  expect_contains("create_token", out, "stablehlo.create_token : !stablehlo.token");
  free(out);
  out = check_forms("ids",
                    FN0("  %r = stablehlo.replica_id : tensor<ui32>\n"
                        "  %p = stablehlo.partition_id : tensor<ui32>"),
                    FN0("  %r = \"stablehlo.replica_id\"() : () -> tensor<ui32>\n"
                        "  %p = \"stablehlo.partition_id\"() : () -> tensor<ui32>"));
  expect_contains("ids", out, "stablehlo.replica_id : tensor<ui32>");
  expect_contains("ids", out, "stablehlo.partition_id : tensor<ui32>");
  free(out);
}

#define FNS(body) \
  "func.func @f(%s: tensor<2xi64>, %x: tensor<1x6xi64>) {\n" body "\n  func.return\n}\n"

static void test_dynamic(void) {
  char *out = check_forms(
      "dynamic_iota",
      FNS("  %0 = stablehlo.dynamic_iota %s, dim = 1 : (tensor<2xi64>) -> tensor<3x4xi64>"),
      FNS("  %0 = \"stablehlo.dynamic_iota\"(%s) {iota_dimension = 1 : i64} : (tensor<2xi64>) -> "
          "tensor<3x4xi64>"));
  expect_contains("dynamic_iota", out, "stablehlo.dynamic_iota %arg0, dim = 1 : (tensor<2xi64>)");
  free(out);
  out = check_forms(
      "dynamic_reshape",
      FNS("  %0 = stablehlo.dynamic_reshape %x, %s : (tensor<1x6xi64>, tensor<2xi64>) -> "
          "tensor<2x3xi64>"),
      FNS("  %0 = \"stablehlo.dynamic_reshape\"(%x, %s) : (tensor<1x6xi64>, tensor<2xi64>) -> "
          "tensor<2x3xi64>"));
  expect_contains("dynamic_reshape", out, "stablehlo.dynamic_reshape %arg1, %arg0 : (");
  free(out);
  out = check_forms(
      "dynamic_pad",
      FNS("  %z = stablehlo.constant dense<0> : tensor<i64>\n"
          "  %0 = stablehlo.dynamic_pad %x, %z, %s, %s, %s\n"
          "      : (tensor<1x6xi64>, tensor<i64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> "
          "tensor<5x20xi64>"),
      FNS("  %z = stablehlo.constant dense<0> : tensor<i64>\n"
          "  %0 = \"stablehlo.dynamic_pad\"(%x, %z, %s, %s, %s) : (tensor<1x6xi64>, tensor<i64>, "
          "tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<5x20xi64>"));
  expect_contains("dynamic_pad", out, "stablehlo.dynamic_pad %arg1, %c, %arg0, %arg0, %arg0 : (");
  free(out);
  out = check_forms(
      "dynamic_broadcast_in_dim",
      FNS("  %0 = stablehlo.dynamic_broadcast_in_dim %x, %s, dims = [0, 1], "
          "known_nonexpanding_dimensions = [1] : (tensor<1x6xi64>, tensor<2xi64>) -> "
          "tensor<3x6xi64>"),
      FNS("  %0 = \"stablehlo.dynamic_broadcast_in_dim\"(%x, %s) <{broadcast_dimensions = "
          "array<i64: 0, 1>, known_nonexpanding_dimensions = array<i64: 1>}> : (tensor<1x6xi64>, "
          "tensor<2xi64>) -> tensor<3x6xi64>"));
  expect_contains("dynamic_broadcast_in_dim", out,
                  "dims = [0, 1], known_nonexpanding_dimensions = [1] : (");
  free(out);
  expect_error("dynamic_iota without dim",
               FNS("  %0 = stablehlo.dynamic_iota %s : (tensor<2xi64>) -> tensor<3x4xi64>"),
               MX_ERR_PARSE, "t.mlir:2:34: error: expected ','");
}

static void test_probe(void) {
  char *out = check_forms(
      "probe",
      "func.func @f(%x: tensor<3xf32>) {\n"
      "  %p = interpreter.probe %x, probe_id = \"a/b\" : tensor<3xf32>\n"
      "  check.expect_serialized_eq %p, probe_id = \"a/b\" : tensor<3xf32>\n"
      "  check.expect_serialized_eq %p, probe_id = \"a/b\", iter = 2 : tensor<3xf32>\n"
      "  func.return\n"
      "}\n",
      "func.func @f(%x: tensor<3xf32>) {\n"
      "  %p = \"interpreter.probe\"(%x) {probe_id = \"a/b\"} : (tensor<3xf32>) -> tensor<3xf32>\n"
      "  \"check.expect_serialized_eq\"(%p) {probe_id = \"a/b\"} : (tensor<3xf32>) -> ()\n"
      "  \"check.expect_serialized_eq\"(%p) {probe_id = \"a/b\", iter = 2 : i64} : "
      "(tensor<3xf32>) -> ()\n"
      "  func.return\n"
      "}\n");
  expect_contains("probe", out, "%0 = interpreter.probe %arg0, probe_id = \"a/b\" : tensor<3xf32>");
  expect_contains("probe", out, "check.expect_serialized_eq %0, probe_id = \"a/b\", iter = 2 :");
  free(out);
  expect_error("probe without id",
               "func.func @f(%x: tensor<3xf32>) {\n"
               "  %p = interpreter.probe %x, id = \"a\" : tensor<3xf32>\n"
               "  func.return\n"
               "}\n",
               MX_ERR_PARSE, "t.mlir:2:30: error: expected 'probe_id', got 'id'");
  expect_error("probe id not a string",
               "func.func @f(%x: tensor<3xf32>) {\n"
               "  %p = interpreter.probe %x, probe_id = 3 : tensor<3xf32>\n"
               "  func.return\n"
               "}\n",
               MX_ERR_PARSE, "t.mlir:2:41: error: expected probe id string");
}

// ---------------------------------------------------------------------------------------------
// Quantized types
// ---------------------------------------------------------------------------------------------

static const mx_type_t *arg_type(const mx_module_t *m, int i) {
  const mx_func_t *f = m->funcs[0];
  return &f->values[f->body->args[i]].type;
}

static void test_quant_types(void) {
  const char *text =
      "func.func @f(%a: tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>,\n"
      "             %b: tensor<2x!quant.uniform<i8:f32, 0.1:-30>>,\n"
      "             %c: tensor<3x!quant.uniform<u8<1:255>:bf16, 2.5e-2:128>>,\n"
      "             %d: tensor<!quant.uniform<i4:f16, 1.0>>,\n"
      "             %e: tensor<2x3x!quant.uniform<i16:f64:1, {1.0, 2.0:3, 4}>>) {\n"
      "  func.return\n"
      "}\n";
  mx_module_t *m = NULL;
  CHECK_OK(parse_str(text, &m));
  if (!m) return;
  const mx_type_t *a = arg_type(m, 0), *b = arg_type(m, 1), *c = arg_type(m, 2);
  const mx_type_t *d = arg_type(m, 3), *e = arg_type(m, 4);
  CHECK(a->elem == MX_ELEM_I8 && a->quant && a->quant->axis == 0 && a->quant->n == 2 &&
        a->quant->scales[0] == 0.1 && a->quant->scales[1] == 0.5 &&
        a->quant->zero_points[0] == -30 && a->quant->zero_points[1] == -20 &&
        a->quant->expressed == MX_ELEM_F32 && a->quant->storage_min == -128 &&
        a->quant->storage_max == 127);
  CHECK(b->quant && b->quant->axis == -1 && b->quant->n == 1 && b->quant->zero_points[0] == -30);
  CHECK(c->elem == MX_ELEM_UI8 && c->quant && c->quant->storage_min == 1 &&
        c->quant->storage_max == 255 && c->quant->expressed == MX_ELEM_BF16 &&
        c->quant->scales[0] == 2.5e-2 && c->quant->zero_points[0] == 128);
  CHECK(d->elem == MX_ELEM_I4 && d->rank == 0 && d->quant && d->quant->zero_points[0] == 0 &&
        d->quant->storage_min == -8 && d->quant->storage_max == 7);
  CHECK(e->elem == MX_ELEM_I16 && e->quant && e->quant->axis == 1 && e->quant->n == 3 &&
        e->quant->scales[2] == 4.0 && e->quant->zero_points[1] == 3 &&
        e->quant->expressed == MX_ELEM_F64);
  CHECK(!mx_type_equal(a, b));
  char *out = check_roundtrip("quant types", m);
  expect_contains("quant", out, "tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>");
  expect_contains("quant", out, "tensor<3x!quant.uniform<u8<1:255>:bf16, 0.025:128>>");
  expect_contains("quant", out, "tensor<!quant.uniform<i4:f16, 1.0>>");
  free(out);
  mx_module_destroy(m);

#define QFN(t) "func.func @f(%a: " t ") {\n  func.return\n}\n"
  expect_error("negative scale", QFN("tensor<2x!quant.uniform<i8:f32, -0.5>>"), MX_ERR_PARSE,
               "t.mlir:1:50: error: quantization scale must be positive and finite");
  expect_error("zero scale", QFN("tensor<2x!quant.uniform<i8:f32, 0.0>>"), MX_ERR_PARSE,
               "quantization scale must be positive and finite");
  expect_error("zero point range", QFN("tensor<2x!quant.uniform<i8:f32, 0.5:200>>"), MX_ERR_PARSE,
               "t.mlir:1:54: error: zero point 200 is outside the storage range [-128, 127]");
  expect_error("narrow range zp", QFN("tensor<2x!quant.uniform<i8<-10:10>:f32, 0.5:-11>>"),
               MX_ERR_PARSE, "zero point -11 is outside the storage range [-10, 10]");
  expect_error("bad range", QFN("tensor<2x!quant.uniform<i8<-200:10>:f32, 0.5>>"), MX_ERR_PARSE,
               "t.mlir:1:44: error: storage range <-200:10> invalid for i8");
  expect_error("axis count", QFN("tensor<2x3x!quant.uniform<i8:f32:1, {0.5, 0.25}>>"), MX_ERR_PARSE,
               "t.mlir:1:29: error: 2 scales given for quantization axis 1 of size 3");
  expect_error("axis range", QFN("tensor<2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>"), MX_ERR_PARSE,
               "t.mlir:1:27: error: quantization axis 1 out of range for a rank-1 tensor");
  expect_error("list without axis", QFN("tensor<2x!quant.uniform<i8:f32, {0.5, 0.25}>>"),
               MX_ERR_PARSE, "a list of scales needs a quantization axis");
  expect_error("axis without list", QFN("tensor<2x!quant.uniform<i8:f32:0, 0.5>>"), MX_ERR_PARSE,
               "expected '{' to begin per-axis scales");
  expect_error("float storage", QFN("tensor<2x!quant.uniform<f8E4M3:f32, 0.5>>"), MX_ERR_PARSE,
               "t.mlir:1:42: error: invalid quantized storage type 'f8E4M3'");
  expect_error("i64 storage", QFN("tensor<2x!quant.uniform<i64:f32, 0.5>>"), MX_ERR_PARSE,
               "invalid quantized storage type 'i64'");
  expect_error("int expressed", QFN("tensor<2x!quant.uniform<i8:i32, 0.5>>"), MX_ERR_PARSE,
               "expected quantized expressed type");
  expect_error("unterminated", QFN("tensor<2x!quant.uniform<i8:f32, 0.5"), MX_ERR_PARSE,
               "expected '>' closing the quantized type");
#undef QFN
}

static void test_quant_verify(void) {
  // Elementwise ops compare types up to scales and zero points.
  const char *ok =
      "func.func @f(%a: tensor<2x!quant.uniform<i8:f32, 0.1:-30>>,\n"
      "             %b: tensor<2x!quant.uniform<i8:f32, 0.5:-20>>) {\n"
      "  %0 = stablehlo.add %a, %b : (tensor<2x!quant.uniform<i8:f32, 0.1:-30>>, "
      "tensor<2x!quant.uniform<i8:f32, 0.5:-20>>) -> tensor<2x!quant.uniform<i8:f32, 0.5:-20>>\n"
      "  %1 = stablehlo.bitcast_convert %0 : (tensor<2x!quant.uniform<i8:f32, 0.5:-20>>) -> "
      "tensor<2xi8>\n"
      "  %2 = stablehlo.bitcast_convert %1 : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, "
      "0.25>>\n"
      "  %3 = stablehlo.uniform_dequantize %2 : (tensor<2x!quant.uniform<i8:f32, 0.25>>) -> "
      "tensor<2xf32>\n"
      "  %4 = stablehlo.abs %a : (tensor<2x!quant.uniform<i8:f32, 0.1:-30>>) -> "
      "tensor<2x!quant.uniform<i8:f32, 2.0>>\n"
      "  func.return\n"
      "}\n";
  mx_module_t *m = NULL;
  CHECK_OK(parse_str(ok, &m));
  if (m) free(check_roundtrip("quant ops", m));
  mx_module_destroy(m);
  expect_error("storage mismatch",
               "func.func @f(%a: tensor<2x!quant.uniform<i8:f32, 0.1>>,\n"
               "             %b: tensor<2x!quant.uniform<i16:f32, 0.5>>) {\n"
               "  %0 = stablehlo.add %a, %b : (tensor<2x!quant.uniform<i8:f32, 0.1>>, "
               "tensor<2x!quant.uniform<i16:f32, 0.5>>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>\n"
               "  func.return\n"
               "}\n",
               MX_ERR_VERIFY, "differ beyond scales and zero points");
  expect_error("axis mismatch",
               "func.func @f(%a: tensor<2x!quant.uniform<i8:f32:0, {0.1, 0.2}>>) {\n"
               "  %0 = stablehlo.negate %a : (tensor<2x!quant.uniform<i8:f32:0, {0.1, 0.2}>>) -> "
               "tensor<2x!quant.uniform<i8:f32, 0.5>>\n"
               "  func.return\n"
               "}\n",
               MX_ERR_VERIFY, "differ beyond scales and zero points");
  expect_error("quantized vs float",
               "func.func @f(%a: tensor<2x!quant.uniform<i8:f32, 0.1>>, %b: tensor<2xf32>) {\n"
               "  %0 = stablehlo.add %a, %b : (tensor<2x!quant.uniform<i8:f32, 0.1>>, "
               "tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>\n"
               "  func.return\n"
               "}\n",
               MX_ERR_VERIFY, "operand 1");
  expect_error("bitwise op",
               "func.func @f(%a: tensor<2x!quant.uniform<i8:f32, 0.1>>) {\n"
               "  %0 = stablehlo.not %a : tensor<2x!quant.uniform<i8:f32, 0.1>>\n"
               "  func.return\n"
               "}\n",
               MX_ERR_VERIFY, "does not accept quantized tensors");
  expect_error("bitcast shape",
               "func.func @f(%a: tensor<2x!quant.uniform<i8:f32, 0.1>>) {\n"
               "  %0 = stablehlo.bitcast_convert %a : (tensor<2x!quant.uniform<i8:f32, 0.1>>) -> "
               "tensor<3xi8>\n"
               "  func.return\n"
               "}\n",
               MX_ERR_VERIFY, "bitcast_convert");
}

// ---------------------------------------------------------------------------------------------
// Declarations and empty literals
// ---------------------------------------------------------------------------------------------

static void test_declarations(void) {
  const char *text =
      "func.func private @g(tensor<f32>, tensor<2xi32> {a = 1 : i64}) -> tensor<f32>\n"
      "func.func private @h()\n"
      "func.func @main(%x: tensor<f32>) -> tensor<f32> {\n"
      "  return %x : tensor<f32>\n"
      "}\n";
  mx_module_t *m = NULL;
  CHECK_OK(parse_str(text, &m));
  if (m) {
    CHECK(m->n_funcs == 3);
    const mx_func_t *g = m->funcs[0];
    CHECK(g->is_private && g->body && g->body->n_args == 2 && g->body->n_ops == 0 &&
          g->n_results == 1 && g->arg_attrs[1].n == 1);
    CHECK(m->funcs[1]->body->n_ops == 0 && m->funcs[1]->body->n_args == 0);
    char *out = check_roundtrip("declarations", m);
    expect_contains("declarations", out,
                    "func.func private @g(tensor<f32>, tensor<2xi32> {a = 1 : i64}) -> "
                    "tensor<f32>\n");
    free(out);
    // Calling a declaration is an error, not a crash.
    mx_func_t *g2 = mx_module_find_func(m, "g");
    mx_tensor_t args[2], res[1];
    memset(args, 0, sizeof args);
    memset(res, 0, sizeof res);
    mx_type_t t0 = mx_type_scalar(MX_ELEM_F32);
    int64_t two = 2;
    mx_type_t t1 = mx_type_tensor(MX_ELEM_I32, 1, &two);
    CHECK_OK(mx_tensor_alloc(&args[0], &t0));
    CHECK_OK(mx_tensor_alloc(&args[1], &t1));
    CHECK(mx_interp_run(m, g2, args, 2, res, NULL) != MX_OK);
    mx_tensor_free(&args[0]);
    mx_tensor_free(&args[1]);
  }
  mx_module_destroy(m);
  expect_error("named args without body", "func.func private @g(%a: tensor<f32>) -> tensor<f32>\n",
               MX_ERR_PARSE, "expected '{' to begin the function body");
  expect_error("types with a body", "func.func @g(tensor<f32>) {\n  func.return\n}\n", MX_ERR_PARSE,
               "t.mlir:1:27: error: a function with a body needs argument names");
  expect_error("mixed args", "func.func @g(tensor<f32>, %a: tensor<f32>)\n", MX_ERR_PARSE,
               "expected argument type (a declaration lists types only)");
  expect_error("empty body", "func.func @g() {\n}\n", MX_ERR_PARSE,
               "t.mlir:1:16: error: empty function body");
}

static void test_empty_dense(void) {
  const char *forms[] = {"[]", "", "[[]]"};
  for (int i = 0; i < 3; i++) {
    char text[512];
    snprintf(text, sizeof text,
             "func.func @main() {\n"
             "  %%c = stablehlo.constant dense<%s> : tensor<0x1x2xi16>\n"
             "  %%d = \"stablehlo.constant\"() <{value = dense<%s> : tensor<2x0x3xf32>}> : () -> "
             "tensor<2x0x3xf32>\n"
             "  check.expect_eq_const %%c, dense<%s> : tensor<0x1x2xi16>\n"
             "  func.return\n"
             "}\n",
             forms[i], forms[i], forms[i]);
    mx_module_t *m = NULL;
    mx_status_t st = parse_str(text, &m);
    CHECK_MSG(st == MX_OK, "dense<%s>: %s", forms[i], mx_error_message());
    if (m) {
      const mx_attr_t *v = mx_op_attr(m->funcs[0]->body->ops[0], "value");
      CHECK(v && v->dense && v->dense->type.rank == 3 && mx_type_numel(&v->dense->type) == 0);
      free(check_roundtrip("empty dense", m));
    }
    mx_module_destroy(m);
  }
  expect_error("non-empty literal for empty type",
               "func.func @main() {\n"
               "  %c = stablehlo.constant dense<[1]> : tensor<0x1xi16>\n"
               "  func.return\n"
               "}\n",
               MX_ERR_PARSE, "t.mlir:2:");
}

int main(void) {
  test_scan();
  test_token_and_ids();
  test_dynamic();
  test_probe();
  test_quant_types();
  test_quant_verify();
  test_declarations();
  test_empty_dense();
  return mx_test_finish();
}
