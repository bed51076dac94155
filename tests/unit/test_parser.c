// Parser tests: the StableHLO interpreter suite, malformed inputs (exact positions and
// messages), custom_call check forms, and pretty vs generic canonical attributes.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"
#include "mx_test.h"

__attribute__((unused)) static mx_status_t parse_str(const char *text, mx_module_t **m) {
  mx_parse_opts_t o = {.filename = "t.mlir", .first_line = 1, .no_verify = false};
  return mx_hlo_parse(text, strlen(text), &o, m);
}

__attribute__((unused)) static mx_status_t parse_nv(const char *text, mx_module_t **m) {
  mx_parse_opts_t o = {.filename = "t.mlir", .first_line = 1, .no_verify = true};
  return mx_hlo_parse(text, strlen(text), &o, m);
}

// ---------------------------------------------------------------------------------------------
// The StableHLO interpreter suite
// ---------------------------------------------------------------------------------------------

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void scan_dir(const char *dir, const char *rel, char ***files, int *n, int *cap) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[4096], relp[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    snprintf(relp, sizeof relp, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
    size_t len = strlen(e->d_name);
    if (len > 5 && strcmp(e->d_name + len - 5, ".mlir") == 0) {
      if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *files = realloc(*files, sizeof(char *) * (size_t)*cap);
      }
      (*files)[(*n)++] = strdup(relp);
    } else if (!strchr(e->d_name, '.')) {
      scan_dir(path, relp, files, n, cap);
    }
  }
  closedir(d);
}

static void test_suite(void) {
  const char *shared = getenv("MX_SHARED");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/stablehlo-interpret", shared ? shared : "/work/shared");
  char **files = NULL;
  int n = 0, cap = 0;
  scan_dir(dir, "", &files, &n, &cap);
  if (n == 0) {
    printf("suite: %s not found, skipped\n", dir);
    return;
  }
  qsort(files, (size_t)n, sizeof(char *), cmp_str);
  int total = 0, ok = 0, unsupported = 0, failed = 0;
  for (int i = 0; i < n; i++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    char *text;
    size_t len;
    if (mx_read_file(path, &text, &len) != MX_OK) continue;
    mx_text_case_t *cases;
    int32_t nc;
    CHECK_OK(mx_hlo_split_cases(text, len, &cases, &nc));
    for (int32_t c = 0; c < nc; c++) {
      // Skip cases with no function (e.g. comment-only trailers).
      if (!memmem(cases[c].text, cases[c].len, "func.func", 9)) continue;
      total++;
      mx_parse_opts_t o = {.filename = files[i], .first_line = cases[c].first_line};
      mx_module_t *m = NULL;
      mx_status_t st = mx_hlo_parse(cases[c].text, cases[c].len, &o, &m);
      if (st == MX_OK) {
        ok++;
        mx_module_destroy(m);
      } else if (st == MX_ERR_UNSUPPORTED) {
        unsupported++;
        printf("  unsupported %s case %d: %s\n", files[i], (int)c, mx_error_message());
      } else {
        failed++;
        printf("  FAILED %s case %d: [%s] %s\n", files[i], (int)c, mx_status_name(st),
               mx_error_message());
      }
    }
    free(cases);
    free(text);
  }
  printf("suite: %d cases, %d parse, %d unsupported, %d failed\n", total, ok, unsupported, failed);
  // Everything outside quantized types / unsupported constructs must parse.
  CHECK_MSG(failed == 0, "%d suite cases failed to parse", failed);
  CHECK(ok >= 480);
  for (int i = 0; i < n; i++) free(files[i]);
  free(files);
}

// ---------------------------------------------------------------------------------------------
// Structural equality (attributes, ops) for pretty vs generic comparisons
// ---------------------------------------------------------------------------------------------

static bool attr_eq(const mx_attr_t *a, const mx_attr_t *b);

static bool fields_eq(const mx_attr_t *a, const mx_attr_t *b) {
  if (a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++) {
    const mx_attr_t *o = mx_attr_field(b, a->fields[i].name);
    if (!o || !attr_eq(&a->fields[i].value, o)) {
      fprintf(stderr, "  field '%s' differs\n", a->fields[i].name);
      return false;
    }
  }
  return true;
}

static bool str_eq(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool attr_eq(const mx_attr_t *a, const mx_attr_t *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case MX_ATTR_UNIT: return true;
    case MX_ATTR_BOOL: return a->i == b->i;
    case MX_ATTR_INT: return a->i == b->i && a->elem == b->elem;
    case MX_ATTR_FLOAT: return a->f == b->f;
    case MX_ATTR_STRING:
    case MX_ATTR_SYMBOL: return str_eq(a->s, b->s);
    case MX_ATTR_ENUM: return str_eq(a->s, b->s) && str_eq(a->enum_kind, b->enum_kind);
    case MX_ATTR_ARRAY:
      if (a->n != b->n) return false;
      for (int32_t i = 0; i < a->n; i++)
        if (!attr_eq(&a->items[i], &b->items[i])) return false;
      return true;
    case MX_ATTR_DENSE_ARRAY:
      if (a->n != b->n || a->elem != b->elem) return false;
      return a->n == 0 || memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n) == 0;
    case MX_ATTR_DENSE:
      return mx_type_equal(&a->dense->type, &b->dense->type) && a->dense->nbytes == b->dense->nbytes &&
             memcmp(a->dense->data, b->dense->data, a->dense->nbytes) == 0;
    case MX_ATTR_DICT: return fields_eq(a, b);
    case MX_ATTR_STRUCT: return str_eq(a->s, b->s) && fields_eq(a, b);
    case MX_ATTR_TYPE: return mx_type_equal(a->type, b->type);
  }
  return false;
}

static bool op_eq(const mx_func_t *fa, const mx_op_t *a, const mx_func_t *fb, const mx_op_t *b);

static bool block_eq(const mx_func_t *fa, const mx_block_t *a, const mx_func_t *fb,
                     const mx_block_t *b) {
  if (a->n_args != b->n_args || a->n_ops != b->n_ops) return false;
  for (int32_t i = 0; i < a->n_args; i++)
    if (!mx_type_equal(mx_value_type(fa, a->args[i]), mx_value_type(fb, b->args[i]))) return false;
  for (int32_t i = 0; i < a->n_ops; i++)
    if (!op_eq(fa, a->ops[i], fb, b->ops[i])) return false;
  return true;
}

static bool op_eq(const mx_func_t *fa, const mx_op_t *a, const mx_func_t *fb, const mx_op_t *b) {
  if (a->code != b->code || strcmp(a->name, b->name) != 0) {
    fprintf(stderr, "  op %s vs %s\n", a->name, b->name);
    return false;
  }
  if (a->n_operands != b->n_operands || a->n_results != b->n_results ||
      a->n_attrs != b->n_attrs || a->n_regions != b->n_regions) {
    fprintf(stderr, "  %s: counts differ (attrs %d vs %d)\n", a->name, (int)a->n_attrs,
            (int)b->n_attrs);
    return false;
  }
  for (int32_t i = 0; i < a->n_results; i++)
    if (!mx_type_equal(mx_value_type(fa, a->results[i]), mx_value_type(fb, b->results[i])))
      return false;
  for (int32_t i = 0; i < a->n_attrs; i++) {
    const mx_attr_t *o = mx_op_attr(b, a->attrs[i].name);
    if (!o || !attr_eq(&a->attrs[i].value, o)) {
      fprintf(stderr, "  %s: attribute '%s' differs\n", a->name, a->attrs[i].name);
      return false;
    }
  }
  for (int32_t i = 0; i < a->n_regions; i++)
    if (!block_eq(fa, a->regions[i], fb, b->regions[i])) return false;
  return true;
}

// Parses both texts (each a module with one function) and compares the first op.
static bool same(const char *what, const char *pretty, const char *generic) {
  mx_module_t *a = NULL, *b = NULL;
  bool eq = false;
  mx_status_t sa = parse_str(pretty, &a);
  CHECK_MSG(sa == MX_OK, "%s (pretty): %s", what, mx_error_message());
  mx_status_t sb = parse_str(generic, &b);
  CHECK_MSG(sb == MX_OK, "%s (generic): %s", what, mx_error_message());
  if (sa == MX_OK && sb == MX_OK) {
    const mx_func_t *fa = a->funcs[0], *fb = b->funcs[0];
    eq = fa->body->n_ops >= 1 && fb->body->n_ops >= 1 &&
         op_eq(fa, fa->body->ops[0], fb, fb->body->ops[0]);
  }
  mx_module_destroy(a);
  mx_module_destroy(b);
  return eq;
}

static void check_same(const char *what, const char *pretty, const char *generic) {
  CHECK_MSG(same(what, pretty, generic), "%s: pretty and generic forms differ", what);
}

// ---------------------------------------------------------------------------------------------
// Pretty vs generic forms give identical canonical attributes
// ---------------------------------------------------------------------------------------------

#define FN2(args, body) "func.func @f(" args ") {\n" body "\n  func.return\n}\n"
#define FN1(sig, ret, body) "func.func @f(" sig ") -> " ret " {\n" body "\n  return %r : " ret "\n}\n"

static void test_pretty_vs_generic(void) {
  check_same("compare",
             FN1("%a: tensor<4xi32>, %b: tensor<4xi32>", "tensor<4xi1>",
                 "  %r = stablehlo.compare GT, %a, %b, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>"),
             FN1("%a: tensor<4xi32>, %b: tensor<4xi32>", "tensor<4xi1>",
                 "  %r = \"stablehlo.compare\"(%a, %b) {comparison_direction = "
                 "#stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>}"
                 " : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>"));
  check_same("add",
             FN1("%a: tensor<4xf32>", "tensor<4xf32>", "  %r = stablehlo.add %a, %a : tensor<4xf32>"),
             FN1("%a: tensor<4xf32>", "tensor<4xf32>",
                 "  %r = \"stablehlo.add\"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>"));
  check_same("dot_general",
             FN1("%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>", "tensor<2x3x5xf32>",
                 "  %r = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1],"
                 " precision = [DEFAULT, HIGHEST] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>"),
             FN1("%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>", "tensor<2x3x5xf32>",
                 "  %r = \"stablehlo.dot_general\"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<"
                 "lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2],"
                 " rhs_contracting_dimensions = [1]>, precision_config = [#stablehlo<precision DEFAULT>,"
                 " #stablehlo<precision HIGHEST>]}> : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>"));
  check_same("dot_general without batching",
             FN1("%a: tensor<3x4xf32>, %b: tensor<4x5xf32>", "tensor<3x5xf32>",
                 "  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]"
                 " : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>"),
             FN1("%a: tensor<3x4xf32>, %b: tensor<4x5xf32>", "tensor<3x5xf32>",
                 "  %r = \"stablehlo.dot_general\"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<"
                 "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}"
                 " : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>"));
#define CONV_COMMON                                                                            \
  " feature_group_count = 1 : i64, lhs_dilation = array<i64: 2, 2>,"                          \
  " precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>],"       \
  " rhs_dilation = array<i64: 1, 1>, window_reversal = array<i1: false, false>,"             \
  " window_strides = array<i64: 4, 4>} : (tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>) -> tensor<1x2x2x1xi64>"
  const char *conv_pretty = FN1(
      "%a: tensor<1x4x4x1xi64>, %b: tensor<3x3x1x1xi64>", "tensor<1x2x2x1xi64>",
      "  %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],"
      " window = {stride = [4, 4], pad = [[0, 0], [0, 0]], lhs_dilate = [2, 2], rhs_dilate = [1, 1],"
      " reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64,"
      " precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}"
      " : (tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>) -> tensor<1x2x2x1xi64>");
  check_same("convolution", conv_pretty,
             FN1("%a: tensor<1x4x4x1xi64>, %b: tensor<3x3x1x1xi64>", "tensor<1x2x2x1xi64>",
                 "  %r = \"stablehlo.convolution\"(%a, %b) {batch_group_count = 1 : i64, dimension_numbers ="
                 " #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<0> : tensor<2x2xi64>,"
                 CONV_COMMON));
  check_same("convolution raw dims", conv_pretty,
             FN1("%a: tensor<1x4x4x1xi64>, %b: tensor<3x3x1x1xi64>", "tensor<1x2x2x1xi64>",
                 "  %r = \"stablehlo.convolution\"(%a, %b) {batch_group_count = 1 : i64, dimension_numbers ="
                 " #stablehlo.conv<raw input_batch_dimension = 0, input_feature_dimension = 3,"
                 " input_spatial_dimensions = [1, 2], kernel_input_feature_dimension = 2,"
                 " kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1],"
                 " output_batch_dimension = 0, output_feature_dimension = 3, output_spatial_dimensions = [1, 2]>,"
                 " padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>," CONV_COMMON));
  check_same("broadcast_in_dim",
             FN1("%a: tensor<3xf32>", "tensor<2x3xf32>",
                 "  %r = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>"),
             FN1("%a: tensor<3xf32>", "tensor<2x3xf32>",
                 "  %r = \"stablehlo.broadcast_in_dim\"(%a) {broadcast_dimensions = dense<1> : tensor<1xi64>}"
                 " : (tensor<3xf32>) -> tensor<2x3xf32>"));
  check_same("transpose",
             FN1("%a: tensor<2x3xf32>", "tensor<3x2xf32>",
                 "  %r = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>"),
             FN1("%a: tensor<2x3xf32>", "tensor<3x2xf32>",
                 "  %r = \"stablehlo.transpose\"(%a) <{permutation = array<i64: 1, 0>}>"
                 " : (tensor<2x3xf32>) -> tensor<3x2xf32>"));
  check_same("reverse",
             FN1("%a: tensor<2x3xf32>", "tensor<2x3xf32>",
                 "  %r = stablehlo.reverse %a, dims = [0] : tensor<2x3xf32>"),
             FN1("%a: tensor<2x3xf32>", "tensor<2x3xf32>",
                 "  %r = \"stablehlo.reverse\"(%a) {dimensions = array<i64: 0>}"
                 " : (tensor<2x3xf32>) -> tensor<2x3xf32>"));
  check_same("iota", FN1("", "tensor<4xi32>", "  %r = stablehlo.iota dim = 0 : tensor<4xi32>"),
             FN1("", "tensor<4xi32>",
                 "  %r = \"stablehlo.iota\"() {iota_dimension = 0 : i64} : () -> tensor<4xi32>"));
  check_same("slice",
             FN1("%a: tensor<3x4xf32>", "tensor<2x1xf32>",
                 "  %r = stablehlo.slice %a [0:2, 1:4:3] : (tensor<3x4xf32>) -> tensor<2x1xf32>"),
             FN1("%a: tensor<3x4xf32>", "tensor<2x1xf32>",
                 "  %r = \"stablehlo.slice\"(%a) {start_indices = array<i64: 0, 1>, limit_indices ="
                 " array<i64: 2, 4>, strides = array<i64: 1, 3>} : (tensor<3x4xf32>) -> tensor<2x1xf32>"));
  check_same("dynamic_slice",
             FN1("%a: tensor<3x4xf32>, %i: tensor<i64>", "tensor<2x2xf32>",
                 "  %r = stablehlo.dynamic_slice %a, %i, %i, sizes = [2, 2] : (tensor<3x4xf32>, tensor<i64>,"
                 " tensor<i64>) -> tensor<2x2xf32>"),
             FN1("%a: tensor<3x4xf32>, %i: tensor<i64>", "tensor<2x2xf32>",
                 "  %r = \"stablehlo.dynamic_slice\"(%a, %i, %i) {slice_sizes = array<i64: 2, 2>}"
                 " : (tensor<3x4xf32>, tensor<i64>, tensor<i64>) -> tensor<2x2xf32>"));
  check_same("concatenate",
             FN1("%a: tensor<2xf32>", "tensor<4xf32>",
                 "  %r = stablehlo.concatenate %a, %a, dim = 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>"),
             FN1("%a: tensor<2xf32>", "tensor<4xf32>",
                 "  %r = \"stablehlo.concatenate\"(%a, %a) {dimension = 0 : i64}"
                 " : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>"));
  check_same("pad",
             FN1("%a: tensor<2xf32>, %v: tensor<f32>", "tensor<6xf32>",
                 "  %r = stablehlo.pad %a, %v, low = [1], high = [2], interior = [1]"
                 " : (tensor<2xf32>, tensor<f32>) -> tensor<6xf32>"),
             FN1("%a: tensor<2xf32>, %v: tensor<f32>", "tensor<6xf32>",
                 "  %r = \"stablehlo.pad\"(%a, %v) {edge_padding_high = array<i64: 2>, edge_padding_low ="
                 " array<i64: 1>, interior_padding = array<i64: 1>} : (tensor<2xf32>, tensor<f32>) -> tensor<6xf32>"));
  check_same("reduce_precision",
             FN1("%a: tensor<2xf64>", "tensor<2xf64>",
                 "  %r = stablehlo.reduce_precision %a, format = e5m10 : tensor<2xf64>"),
             FN1("%a: tensor<2xf64>", "tensor<2xf64>",
                 "  %r = \"stablehlo.reduce_precision\"(%a) {exponent_bits = 5 : i32, mantissa_bits = 10 : i32}"
                 " : (tensor<2xf64>) -> tensor<2xf64>"));
  check_same("fft",
             FN1("%a: tensor<4xcomplex<f32>>", "tensor<4xcomplex<f32>>",
                 "  %r = stablehlo.fft %a, type = FFT, length = [4] : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>"),
             FN1("%a: tensor<4xcomplex<f32>>", "tensor<4xcomplex<f32>>",
                 "  %r = \"stablehlo.fft\"(%a) {fft_type = #stablehlo<fft_type FFT>, fft_length = array<i64: 4>}"
                 " : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>"));
  check_same("constant",
             FN1("", "tensor<2xf32>", "  %r = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf32>"),
             FN1("", "tensor<2xf32>",
                 "  %r = \"stablehlo.constant\"() <{value = dense<[0x3FC00000, 0xC0000000]> : tensor<2xf32>}>"
                 " : () -> tensor<2xf32>"));
  check_same("get_tuple_element",
             FN1("%t: tuple<tensor<f32>, tensor<i32>>", "tensor<i32>",
                 "  %r = stablehlo.get_tuple_element %t[1] : (tuple<tensor<f32>, tensor<i32>>) -> tensor<i32>"),
             FN1("%t: tuple<tensor<f32>, tensor<i32>>", "tensor<i32>",
                 "  %r = \"stablehlo.get_tuple_element\"(%t) {index = 1 : i32}"
                 " : (tuple<tensor<f32>, tensor<i32>>) -> tensor<i32>"));
  check_same("custom_call",
             FN1("%a: tensor<2xf32>", "tensor<2xf32>",
                 "  %r = stablehlo.custom_call @foo(%a) {backend_config = \"\", api_version = 2 : i32}"
                 " : (tensor<2xf32>) -> tensor<2xf32>"),
             FN1("%a: tensor<2xf32>", "tensor<2xf32>",
                 "  %r = \"stablehlo.custom_call\"(%a) {call_target_name = \"foo\", backend_config = \"\","
                 " api_version = 2 : i32} : (tensor<2xf32>) -> tensor<2xf32>"));
  check_same("select",
             FN1("%p: tensor<2xi1>, %a: tensor<2xf32>", "tensor<2xf32>",
                 "  %r = stablehlo.select %p, %a, %a : tensor<2xi1>, tensor<2xf32>"),
             FN1("%p: tensor<2xi1>, %a: tensor<2xf32>", "tensor<2xf32>",
                 "  %r = \"stablehlo.select\"(%p, %a, %a) : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>)"
                 " -> tensor<2xf32>"));
  check_same("complex",
             FN1("%a: tensor<2xf64>", "tensor<2xcomplex<f64>>",
                 "  %r = stablehlo.complex %a, %a : tensor<2xcomplex<f64>>"),
             FN1("%a: tensor<2xf64>", "tensor<2xcomplex<f64>>",
                 "  %r = \"stablehlo.complex\"(%a, %a) : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xcomplex<f64>>"));
  const char *reduce_generic =
      FN1("%a: tensor<2x3xf32>, %z: tensor<f32>", "tensor<2xf32>",
          "  %r = \"stablehlo.reduce\"(%a, %z) ({\n"
          "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
          "    %s = \"stablehlo.add\"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
          "    \"stablehlo.return\"(%s) : (tensor<f32>) -> ()\n"
          "  }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>");
  check_same("reduce applies",
             FN1("%a: tensor<2x3xf32>, %z: tensor<f32>", "tensor<2xf32>",
                 "  %r = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1]"
                 " : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>"),
             reduce_generic);
  check_same("reduce region",
             FN1("%a: tensor<2x3xf32>, %z: tensor<f32>", "tensor<2xf32>",
                 "  %r = stablehlo.reduce(%a init: %z) across dimensions = [1]"
                 " : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
                 "   reducer(%x: tensor<f32>, %y: tensor<f32>) {\n"
                 "    %s = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %s : tensor<f32>\n  }"),
             reduce_generic);
  check_same("while",
             FN1("%n: tensor<i64>", "tensor<i64>",
                 "  %r = stablehlo.while(%i = %n) : tensor<i64>\n"
                 "  cond {\n    %c = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
                 "    stablehlo.return %c : tensor<i1>\n  } do {\n"
                 "    %j = stablehlo.add %i, %n : tensor<i64>\n    stablehlo.return %j : tensor<i64>\n  }"),
             FN1("%n: tensor<i64>", "tensor<i64>",
                 "  %r = \"stablehlo.while\"(%n) ({\n  ^bb0(%i: tensor<i64>):\n"
                 "    %c = \"stablehlo.compare\"(%i, %n) {comparison_direction = #stablehlo<comparison_direction LT>}"
                 " : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
                 "    \"stablehlo.return\"(%c) : (tensor<i1>) -> ()\n  }, {\n  ^bb0(%i: tensor<i64>):\n"
                 "    %j = stablehlo.add %i, %n : tensor<i64>\n    stablehlo.return %j : tensor<i64>\n"
                 "  }) : (tensor<i64>) -> tensor<i64>"));
#define G_FN "func.func private @g(%a: tensor<f32>) -> tensor<f32> {\n  return %a : tensor<f32>\n}\n"
  check_same("func.call",
             FN1("%a: tensor<f32>", "tensor<f32>",
                 "  %r = func.call @g(%a) : (tensor<f32>) -> tensor<f32>") G_FN,
             FN1("%a: tensor<f32>", "tensor<f32>",
                 "  %r = \"func.call\"(%a) {callee = @g} : (tensor<f32>) -> tensor<f32>") G_FN);
  check_same("composite",
             FN1("%a: tensor<f32>", "tensor<f32>",
                 "  %r = stablehlo.composite \"my.op\" %a {composite_attributes = {n = 2 : i64},"
                 " decomposition = @g} : (tensor<f32>) -> tensor<f32>") G_FN,
             FN1("%a: tensor<f32>", "tensor<f32>",
                 "  %r = \"stablehlo.composite\"(%a) {name = \"my.op\", composite_attributes = {n = 2 : i64},"
                 " decomposition = @g} : (tensor<f32>) -> tensor<f32>") G_FN);
  check_same("check.expect_almost_eq_const tolerance",
             FN2("%a: tensor<2xf32>", "  check.expect_almost_eq_const %a, dense<1.0> : tensor<2xf32>, tolerance = 0.5"),
             FN2("%a: tensor<2xf32>", "  check.expect_almost_eq_const %a, dense<1.0> : tensor<2xf32> {tolerance = 0.5 : f64}"));
  check_same("check.expect_almost_eq tolerance",
             FN2("%a: tensor<2xf32>", "  check.expect_almost_eq %a, %a, tolerance = 0.5 : tensor<2xf32>"),
             FN2("%a: tensor<2xf32>", "  check.expect_almost_eq %a, %a {tolerance = 0.5 : f64} : tensor<2xf32>"));
  check_same("check.expect_close",
             FN2("%a: tensor<2xf32>", "  check.expect_close %a, %a, max_ulp_difference = 3 : tensor<2xf32>, tensor<2xf32>"),
             FN2("%a: tensor<2xf32>", "  \"check.expect_close\"(%a, %a) {max_ulp_difference = 3 : ui64}"
                 " : (tensor<2xf32>, tensor<2xf32>) -> ()"));
  // The comparison itself must notice differences.
  fprintf(stderr, "(an expected difference report follows)\n");
  CHECK(!same("compare mismatch",
              FN1("%a: tensor<4xi32>", "tensor<4xi1>",
                  "  %r = stablehlo.compare GT, %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>"),
              FN1("%a: tensor<4xi32>", "tensor<4xi1>",
                  "  %r = stablehlo.compare LT, %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>")));
}

// ---------------------------------------------------------------------------------------------
// custom_call @check.* forms (JAX-generated test data)
// ---------------------------------------------------------------------------------------------

static void test_custom_call_checks(void) {
  const char *text =
      "module @jit_main attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
      "  func.func public @main() -> (tensor<2xf32> {jax.result_info = \"\", mhlo.layout_mode = \"default\"}) {\n"
      "    %0 = call @inputs() : () -> tensor<2xf32>\n"
      "    %1 = call @expected() : () -> tensor<2xf32>\n"
      "    %2 = stablehlo.abs %0 : tensor<2xf32>\n"
      "    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()\n"
      "    stablehlo.custom_call @check.expect_eq(%2, %1) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()\n"
      "    \"stablehlo.custom_call\"(%2, %1) {call_target_name = \"check.expect_almost_eq\", has_side_effect = true}"
      " : (tensor<2xf32>, tensor<2xf32>) -> ()\n"
      "    return %2 : tensor<2xf32>\n"
      "  }\n"
      "  func.func private @inputs() -> (tensor<2xf32> {mhlo.layout_mode = \"default\"}) {\n"
      "    %cst = stablehlo.constant dense<\"0x0000803F000000C0\"> : tensor<2xf32>\n"
      "    return %cst : tensor<2xf32>\n"
      "  }\n"
      "  func.func private @expected() -> (tensor<2xf32> {mhlo.layout_mode = \"default\"}) {\n"
      "    %cst = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>\n"
      "    return %cst : tensor<2xf32>\n"
      "  }\n"
      "}\n";
  mx_module_t *m = NULL;
  CHECK_OK(parse_str(text, &m));
  if (!m) return;
  CHECK(m->name && strcmp(m->name, "jit_main") == 0);
  CHECK(m->attrs.kind == MX_ATTR_DICT && m->attrs.n == 2);
  mx_func_t *f = mx_module_find_func(m, "main");
  CHECK(f != NULL && mx_module_entry(m) == f);
  if (f) {
    CHECK(f->n_results == 1 && f->result_attrs[0].n == 2);
    CHECK(f->body->n_ops == 7);
    const mx_op_t *c0 = f->body->ops[0];
    CHECK(c0->code == MX_OP_FUNC_CALL);
    const mx_attr_t *callee = mx_op_attr(c0, "callee");
    CHECK(callee && callee->kind == MX_ATTR_SYMBOL && strcmp(callee->s, "inputs") == 0);
    const mx_op_t *close = f->body->ops[3];
    CHECK(close->code == MX_OP_CHECK_EXPECT_CLOSE && close->n_operands == 2);
    const mx_attr_t *ulp = mx_op_attr(close, "max_ulp_difference");
    CHECK(ulp && ulp->kind == MX_ATTR_INT && ulp->i == 3);
    CHECK(f->body->ops[4]->code == MX_OP_CHECK_EXPECT_EQ);
    const mx_op_t *ae = f->body->ops[5];
    CHECK(ae->code == MX_OP_CHECK_EXPECT_ALMOST_EQ);
    const mx_attr_t *tol = mx_op_attr(ae, "tolerance");
    CHECK(tol && tol->kind == MX_ATTR_FLOAT && fabs(tol->f - 1e-3) < 1e-12);
    CHECK(f->body->ops[6]->code == MX_OP_FUNC_RETURN);
  }
  mx_func_t *in = mx_module_find_func(m, "inputs");
  CHECK(in && in->is_private);
  if (in) {
    const mx_attr_t *v = mx_op_attr(in->body->ops[0], "value");
    CHECK(v && v->kind == MX_ATTR_DENSE && mx_tensor_get_f64(v->dense, 0) == 1.0 &&
          mx_tensor_get_f64(v->dense, 1) == -2.0);
  }
  mx_module_destroy(m);
}

int main(void) {
  test_suite();
  test_pretty_vs_generic();
  test_custom_call_checks();
  return mx_test_finish();
}
