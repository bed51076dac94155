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
  DIR *probe = opendir(dir);
  if (probe)
    closedir(probe);
  else
    snprintf(dir, sizeof dir, "/work/shared/stablehlo-interpret");
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

// ---------------------------------------------------------------------------------------------
// Malformed inputs: status, exact line:col and message
// ---------------------------------------------------------------------------------------------

typedef struct bad_case {
  const char *text;
  mx_status_t status;
  int line, col;
  const char *fragment;  // must occur in the message
} bad_case_t;

static const bad_case_t bad_cases[] = {
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<1> : tensor<i32>\n",
   MX_ERR_PARSE, 3, 1, "expected '}' closing the block, got end of input"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.add %1, %1 : tensor<i32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 22, "use of undefined value '%1'"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<1> : tensor<i32>\n"
      "  %0 = stablehlo.constant dense<2> : tensor<i32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 3, 3, "redefinition of SSA value '%0'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.add %a, %a : tensor<3xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 22, "use of value '%a' expects type tensor<3xf32>, but it has type tensor<2xf32>"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<99999999999999999999> : tensor<i64>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 33, "integer literal too large"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<300> : tensor<i8>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 33, "literal out of range for element type i8"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<[1, 2, 3]> : tensor<2xi32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 27, "dense literal shape does not match type tensor<2xi32>"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<[[1, 2], [3]]> : tensor<2x2xi32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 42, "dense literal has inconsistent sizes (1 vs 2 elements)"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<1.5> : tensor<i32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 33, "expected integer literal for element type i32"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<1> : tensor<2x3xq32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 49, "expected element type, got 'q32'"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<1> : tensor<2x3f32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 48, "expected 'x' after dimension size"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<\"0x0102\"> : tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 33, "hexadecimal dense literal has 2 bytes, expected 8"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<\"hello\"> : tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 33, "expected hexadecimal string \"0x...\" in dense literal"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = \"stablehlo.add\"(%a, %a) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 34, "'stablehlo.add' has 2 operands, but 1 operand types were given"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0, %1 = stablehlo.add %a, %a : tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 3, "operation 'stablehlo.add' has 1 results, but 2 names were given"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = \"stablehlo.add\"(%a, %a) {foo = 1, foo = 2} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 42, "duplicate attribute 'foo'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = \"stablehlo.add\"(%a, %a) : tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 34, "expected function type '(operand types) -> result types' for generic operation 'stablehlo.add'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.add %a %a : tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 25, "expected ':' and the operation's type, got '%a'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n"
      "  func.return\n",
   MX_ERR_PARSE, 4, 1, "expected '}' closing the block, got end of input"},
  {"func.func @f(%a: tensor<2xf32> {\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 4, 1, "expected ',' or ')' in argument list, got end of input"},
  {"func.func f(%a: tensor<2xf32>) {\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 1, 11, "expected symbol name (@name), got 'f'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.compare GTE, %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 26, "expected comparison_direction value, got 'GTE'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.broadcast_in_dim %a, dims = [0, : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 50, "expected integer, got ':'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = \"stablehlo.add\"(%a, %a) {s = \"abc} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 37, "expected attribute value, got unterminated string"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.add %a, %a : tensor<2xf32> ` \n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 45, "expected operation, got invalid character '`'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.foo %a : tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_UNSUPPORTED, 2, 8, "unsupported: stablehlo.foo"},
  {"func.func @f(%a: tensor<?xf32>) {\n"
      "  func.return\n"
      "}\n",
   MX_ERR_UNSUPPORTED, 1, 25, "unsupported: dynamic shape ('?') in tensor type"},
  {"func.func @f(%a: tensor<2x!quant.uniform<i8:f32, 1.0>>) {\n"
      "  func.return\n"
      "}\n",
   MX_ERR_UNSUPPORTED, 1, 27, "unsupported: quantized type !quant.uniform"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.reduce(%a init: %a) applies stablehlo.compare across dimensions = [0] : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 46, "expected a binary stablehlo operation after 'applies', got 'stablehlo.compare'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.convolution(%a, %a) dim_numbers = [b, 0, f]x[0, i, q]->[b, 0, f], window = {} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 69, "expected dimension number, 'i' or 'o', got 'q'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0:2 = \"stablehlo.foo\"(%a) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)\n"
      "  %1 = stablehlo.add %0#2, %0#1 : tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 3, 22, "result number 2 out of range for '%0' (2 results)"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = \"stablehlo.sort\"(%a) ({\n"
      "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
      "    %c = stablehlo.compare GT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
      "    stablehlo.return %c : tensor<i1>\n"
      "  }) {dimension = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  %1 = stablehlo.add %x, %x : tensor<f32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 7, 22, "use of undefined value '%x'"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<1> : tensor<1x2x3x4x5x6x7x8x9xi32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_UNSUPPORTED, 2, 44, "unsupported: tensor rank greater than 8"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<1> : tensor<99999999999999999999xi32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 45, "dimension size too large"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.iota dim = 0 : tensor<4xi32>\n"
      "  %1 = stablehlo.add %0, %0 : tensor<4xi32>\n"
      "  %2 = stablehlo.multiply %1, %3 : tensor<4xi32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 4, 31, "use of undefined value '%3'"},
  {"module {\n"
      "  func.func @f() {\n"
      "    func.return\n"
      "  }\n",
   MX_ERR_PARSE, 5, 1, "expected '}' closing the module, got end of input"},
  {"module {\n"
      "  func.func @f() {\n"
      "    func.return\n"
      "  }\n"
      "}\n"
      "func.func @g() {\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 6, 1, "expected end of input after the module, got 'func.func'"},
  {"func.func @f() {\n"
      "  func.return\n"
      "}\n"
      "func.func @f() {\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 4, 11, "redefinition of function '@f'"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<[(1.0, 2.0)]> : tensor<1xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 27, "complex literal for non-complex type"},
  {"func.func @f() {\n"
      "  %0 = stablehlo.constant dense<0x1FFFF> : tensor<bf16>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 33, "hexadecimal literal too wide for element type bf16"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.reduce_precision %a, format = e5 : tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 48, "expected exponent/mantissa format e#m#, got 'e5'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  check.expect_close %a, %a, max_ulp = 3 : tensor<2xf32>, tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 30, "expected 'max_ulp_difference', got 'max_ulp'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.slice %a [0:2:1:3] : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  func.return\n"
      "}\n",
   MX_ERR_PARSE, 2, 33, "expected ',' or ']' in slice ranges, got ':'"},
  {"func.func @f(%a: tensor<2xf32>) {\n"
      "  %0 = stablehlo.while(%i = %a) : tensor<2xf32>\n"
      "  cond {\n"
      "    stablehlo.return %i : tensor<2xf32>\n"
      "  } od {\n"
      "  }\n"
      "  func.return\n"
      "}\n"
      "\n",
   MX_ERR_PARSE, 5, 5, "expected 'do', got 'od'"},
};

static void test_malformed(void) {
  int n = (int)(sizeof bad_cases / sizeof bad_cases[0]);
  for (int i = 0; i < n; i++) {
    const bad_case_t *c = &bad_cases[i];
    mx_module_t *m = NULL;
    mx_status_t st = parse_str(c->text, &m);
    CHECK_MSG(st == c->status && m == NULL, "case %d: status %s, expected %s", i,
              mx_status_name(st), mx_status_name(c->status));
    char pos[64];
    if (c->status == MX_ERR_PARSE)
      snprintf(pos, sizeof pos, "t.mlir:%d:%d: error: ", c->line, c->col);
    else
      snprintf(pos, sizeof pos, "(t.mlir:%d:%d)", c->line, c->col);
    const char *msg = mx_error_message();
    CHECK_MSG(strstr(msg, pos) != NULL, "case %d: message '%s' lacks position '%s'", i, msg, pos);
    CHECK_MSG(strstr(msg, c->fragment) != NULL, "case %d: message '%s' lacks '%s'", i, msg,
              c->fragment);
    mx_module_destroy(m);
  }
  printf("malformed: %d cases checked\n", n);
}

// ---------------------------------------------------------------------------------------------
// Robustness: every prefix of a valid module, deep nesting, huge numbers
// ---------------------------------------------------------------------------------------------

static const char *const rich_module =
    "#loc1 = loc(\"x.py\":1:2)\n"
    "module @m attributes {mhlo.num_replicas = 1 : i32} {\n"
    "  func.func public @main(%arg0: tensor<2x3xf32> {jax.arg_info = \"x\"} loc(\"a\"), %arg1: tensor<i64>)"
    " -> (tensor<2xf32> {jax.result_info = \"\"}, tensor<i64>) attributes {foo = unit} {\n"
    "    %cst = stablehlo.constant dense<[[1.0, 0x7FC00000, -2.5e-3], [3, 4, 5]]> : tensor<2x3xf32> loc(#loc1)\n"
    "    %c = stablehlo.constant dense<(1.0, -2.0)> : tensor<complex<f64>>\n"
    "    %b = stablehlo.constant dense<\"0x0100\"> : tensor<2xi8>\n"
    "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "    %s = stablehlo.add %arg0, %cst : tensor<2x3xf32>  // comment\n"
    "    %r = stablehlo.reduce(%s init: %z) applies stablehlo.add across dimensions = [1]"
    " : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
    "    %w:2 = stablehlo.while(%i = %arg1, %acc = %r) : tensor<i64>, tensor<2xf32>\n"
    "    cond {\n"
    "      %p = stablehlo.compare LT, %i, %arg1, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
    "      stablehlo.return %p : tensor<i1>\n"
    "    } do {\n"
    "      %sorted = \"stablehlo.sort\"(%acc) <{dimension = 0 : i64, is_stable = true}> ({\n"
    "      ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
    "        %q = stablehlo.compare GT, %x, %y, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
    "        stablehlo.return %q : tensor<i1>\n"
    "      }) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "      stablehlo.return %i, %sorted : tensor<i64>, tensor<2xf32>\n"
    "    }\n"
    "    \"stablehlo.custom_call\"(%w#1) <{call_target_name = \"foo\"}> {api_version = 2 : i32,"
    " backend_config = \"\", dims = array<i64: 1, 2>, g = #stablehlo.gather<offset_dims = [1],"
    " index_vector_dim = 1>, n = [1, -2, 0x10], d = {x = \"y\"}} : (tensor<2xf32>) -> ()\n"
    "    return %w#1, %w#0 : tensor<2xf32>, tensor<i64>\n"
    "  } loc(#loc1)\n"
    "} loc(#loc1)\n"
    "#loc2 = loc(\"y.py\":3:4)\n";

static void test_prefixes(void) {
  mx_module_t *m = NULL;
  CHECK_OK(parse_str(rich_module, &m));
  if (m) {
    const mx_func_t *f = m->funcs[0];
    CHECK(f->body->n_args == 2 && f->arg_attrs[0].n == 1 && f->n_results == 2);
    CHECK(f->attrs.n == 1);
    const mx_op_t *cst = f->body->ops[0];
    const mx_attr_t *v = mx_op_attr(cst, "value");
    CHECK(v && v->dense && mx_tensor_get_f64(v->dense, 0) == 1.0 &&
          mx_tensor_get_f64(v->dense, 1) != mx_tensor_get_f64(v->dense, 1) &&
          fabs(mx_tensor_get_f64(v->dense, 2) + 2.5e-3) < 1e-9 &&
          mx_tensor_get_f64(v->dense, 5) == 5.0);
    const mx_attr_t *cv = mx_op_attr(f->body->ops[1], "value");
    double parts[2] = {0, 0};
    if (cv && cv->dense) memcpy(parts, cv->dense->data, sizeof parts);
    CHECK(parts[0] == 1.0 && parts[1] == -2.0);
    const mx_attr_t *bv = mx_op_attr(f->body->ops[2], "value");
    CHECK(bv && bv->dense && bv->dense->data[0] == 1 && bv->dense->data[1] == 0);
    const mx_op_t *red = f->body->ops[5];
    CHECK(red->code == MX_OP_REDUCE && red->n_regions == 1 && red->regions[0]->n_ops == 2 &&
          red->regions[0]->ops[0]->code == MX_OP_ADD &&
          red->regions[0]->ops[1]->code == MX_OP_RETURN);
    const mx_op_t *wh = f->body->ops[6];
    CHECK(wh->code == MX_OP_WHILE && wh->n_results == 2 && wh->n_regions == 2 &&
          wh->regions[0]->n_args == 2 && wh->regions[1]->n_args == 2);
    const mx_op_t *cc = f->body->ops[7];
    CHECK(cc->code == MX_OP_CUSTOM_CALL && cc->n_attrs == 7);
    const mx_attr_t *g = mx_op_attr(cc, "g");
    // Missing gather fields are filled with their defaults.
    CHECK(g && g->kind == MX_ATTR_STRUCT && g->n == 6);
    const mx_attr_t *od = g ? mx_attr_field(g, "offset_dims") : NULL;
    CHECK(od && od->kind == MX_ATTR_DENSE_ARRAY && od->n == 1 && od->ints[0] == 1);
    const mx_attr_t *na = mx_op_attr(cc, "n");
    CHECK(na && na->kind == MX_ATTR_ARRAY && na->n == 3 && na->items[1].i == -2 &&
          na->items[2].i == 16);
    CHECK(f->values[f->body->args[0]].name && strcmp(f->values[f->body->args[0]].name, "arg0") == 0);
  }
  mx_module_destroy(m);
  // Every truncation of it is an error, never a crash (the sanitizer build checks for leaks).
  size_t len = strlen(rich_module);
  int bad = 0;
  for (size_t n = 0; n < len; n++) {
    mx_parse_opts_t o = {.filename = "t.mlir"};
    m = NULL;
    mx_status_t st = mx_hlo_parse(rich_module, n, &o, &m);
    // Cut identifiers can name unknown ops or types ("stablehlo.ad", "i6"): UNSUPPORTED.
    if (st != MX_ERR_PARSE && st != MX_OK && st != MX_ERR_UNSUPPORTED) {
      bad++;
      fprintf(stderr, "prefix %zu: %s: %s\n", n, mx_status_name(st), mx_error_message());
    }
    if (st == MX_ERR_PARSE) CHECK(strncmp(mx_error_message(), "t.mlir:", 7) == 0);
    mx_module_destroy(m);
  }
  CHECK_MSG(bad == 0, "%d prefixes gave unexpected statuses", bad);
}

static char *repeat(const char *prefix, const char *unit, int n, const char *suffix) {
  size_t lu = strlen(unit), lp = strlen(prefix), ls = strlen(suffix);
  char *s = malloc(lp + lu * (size_t)n + ls + 1);
  memcpy(s, prefix, lp);
  for (int i = 0; i < n; i++) memcpy(s + lp + lu * (size_t)i, unit, lu);
  memcpy(s + lp + lu * (size_t)n, suffix, ls + 1);
  return s;
}

static void expect_parse_error(const char *what, const char *text, const char *fragment) {
  mx_module_t *m = NULL;
  mx_status_t st = parse_str(text, &m);
  CHECK_MSG(st == MX_ERR_PARSE && strstr(mx_error_message(), fragment),
            "%s: got %s: %s", what, mx_status_name(st), mx_error_message());
  mx_module_destroy(m);
}

static void test_limits(void) {
  char *s = repeat("func.func @f() attributes {a = ", "[", 100000, "");
  expect_parse_error("deep array attribute", s, "nesting too deep");
  free(s);
  s = repeat("func.func @f(%a: ", "tuple<", 5000, "");
  expect_parse_error("deep tuple type", s, "nesting too deep");
  free(s);
  s = repeat("func.func @f() {\n", "\"x.y\"() ({\n", 5000, "");
  expect_parse_error("deep regions", s, "nesting too deep");
  free(s);
  s = repeat("func.func @f() attributes {a = ", "{b = ", 100000, "");
  expect_parse_error("deep dictionaries", s, "nesting too deep");
  free(s);
  // 256 levels of nested regions are fine, but 1000 are not.
  expect_parse_error("huge integer attribute",
                     "func.func @f() attributes {a = 123456789012345678901234567890} {\n"
                     "  func.return\n}\n",
                     "t.mlir:1:32: error: integer literal too large");
  expect_parse_error("huge result count",
                     "func.func @f() {\n  %0:99999999999 = \"x.y\"() : () -> ()\n}\n",
                     "t.mlir:2:6: error: ");
  // Embedded NUL bytes are just invalid characters.
  static const char nul_text[] = "func.func @f() {\n  func.return\n}\n\0garbage";
  mx_module_t *m = NULL;
  mx_parse_opts_t o = {.filename = "t.mlir"};
  mx_status_t st = mx_hlo_parse(nul_text, sizeof nul_text - 1, &o, &m);
  CHECK_MSG(st == MX_ERR_PARSE && strstr(mx_error_message(), "t.mlir:4:1: error: ") &&
                strstr(mx_error_message(), "invalid character 0x00"),
            "NUL: %s", mx_error_message());
  mx_module_destroy(m);
  // Empty input is an empty module.
  CHECK_OK(mx_hlo_parse("", 0, NULL, &m));
  CHECK(m && m->n_funcs == 0);
  mx_module_destroy(m);
  // first_line offsets positions.
  o.first_line = 100;
  st = mx_hlo_parse("func.func @f() {\n  %x = stablehlo.add %y, %y : tensor<f32>\n}\n", 58, &o, &m);
  CHECK_MSG(st == MX_ERR_PARSE && strstr(mx_error_message(), "t.mlir:101:22: error: "), "first_line: %s",
            mx_error_message());
}

static void test_split(void) {
  const char *text = "// RUN: x\nfunc.func @a() {\n}\n// -----\nfunc.func @b() {\n}\n  // -----  \n\n";
  mx_text_case_t *cases = NULL;
  int32_t n = 0;
  CHECK_OK(mx_hlo_split_cases(text, strlen(text), &cases, &n));
  CHECK(n == 3);
  if (n == 3) {
    CHECK(cases[0].first_line == 1 && cases[1].first_line == 5 && cases[2].first_line == 8);
    CHECK(strncmp(cases[1].text, "func.func @b", 12) == 0);
    CHECK(cases[0].len == strlen("// RUN: x\nfunc.func @a() {\n}\n"));
  }
  free(cases);
  // Like MLIR, a commented-out marker still splits.
  const char *t2 = "func.func @a() {\n}\n// // -----\nfunc.func @b() {\n}\n";
  CHECK_OK(mx_hlo_split_cases(t2, strlen(t2), &cases, &n));
  CHECK(n == 2 && cases[1].first_line == 4 && strncmp(cases[1].text, "func.func @b", 12) == 0);
  free(cases);
  CHECK_OK(mx_hlo_split_cases("", 0, &cases, &n));
  CHECK(n == 1 && cases[0].len == 0);
  free(cases);
}


int main(void) {
  test_suite();
  test_pretty_vs_generic();
  test_custom_call_checks();
  test_malformed();
  test_prefixes();
  test_limits();
  test_split();
  return mx_test_finish();
}
