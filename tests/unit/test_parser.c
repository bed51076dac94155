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

static bool module_eq(const mx_module_t *a, const mx_module_t *b);

// Printing a parsed module (pretty and generic) and parsing it again gives the same IR.
static int roundtrip_failures;
static void check_roundtrip(const mx_module_t *m, const char *where) {
  for (int gen = 0; gen < 2; gen++) {
    mx_print_opts_t po = {.generic = gen};
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_module_t *m2 = NULL;
    mx_parse_opts_t o = {.filename = "printed.mlir"};
    bool ok = mx_hlo_print(m, &po, &sb) == MX_OK &&
              mx_hlo_parse(sb.data, sb.len, &o, &m2) == MX_OK && module_eq(m, m2);
    if (!ok) {
      roundtrip_failures++;
      printf("  ROUNDTRIP (%s) %s: %s\n", gen ? "generic" : "pretty", where, mx_error_message());
    }
    mx_module_destroy(m2);
    mx_strbuf_free(&sb);
  }
}

static void test_suite(void) {
  const char *shared = getenv("MX_SHARED");
  char dir[4096];
  // ctest sets MX_SHARED to ../shared beside the source tree.
  snprintf(dir, sizeof dir, "%s/stablehlo-interpret", shared ? shared : "../shared");
  char **files = NULL;
  int n = 0, cap = 0;
  scan_dir(dir, "", &files, &n, &cap);
  if (n == 0) {
    mx_test_skip("suite: %s not found", dir);
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
        char where[256];
        snprintf(where, sizeof where, "%s case %d", files[i], (int)c);
        check_roundtrip(m, where);
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
  CHECK_MSG(roundtrip_failures == 0, "%d print/parse round trips failed", roundtrip_failures);
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
    case MX_ATTR_UNIT:
      return true;
    case MX_ATTR_BOOL:
      return a->i == b->i;
    case MX_ATTR_INT:
      return a->i == b->i && a->elem == b->elem;
    case MX_ATTR_FLOAT:
      return a->f == b->f;
    case MX_ATTR_STRING:
    case MX_ATTR_SYMBOL:
      return str_eq(a->s, b->s);
    case MX_ATTR_ENUM:
      return str_eq(a->s, b->s) && str_eq(a->enum_kind, b->enum_kind);
    case MX_ATTR_ARRAY:
      if (a->n != b->n) return false;
      for (int32_t i = 0; i < a->n; i++)
        if (!attr_eq(&a->items[i], &b->items[i])) return false;
      return true;
    case MX_ATTR_DENSE_ARRAY:
      if (a->n != b->n || a->elem != b->elem) return false;
      return a->n == 0 || memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n) == 0;
    case MX_ATTR_DENSE:
      return mx_type_equal(&a->dense->type, &b->dense->type) &&
             a->dense->nbytes == b->dense->nbytes &&
             memcmp(a->dense->data, b->dense->data, a->dense->nbytes) == 0;
    case MX_ATTR_DICT:
      return fields_eq(a, b);
    case MX_ATTR_STRUCT:
      return str_eq(a->s, b->s) && fields_eq(a, b);
    case MX_ATTR_TYPE:
      return mx_type_equal(a->type, b->type);
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
  if (a->n_operands != b->n_operands || a->n_results != b->n_results || a->n_attrs != b->n_attrs ||
      a->n_regions != b->n_regions) {
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

static bool module_eq(const mx_module_t *a, const mx_module_t *b) {
  if (a->n_funcs != b->n_funcs) return false;
  for (int32_t i = 0; i < a->n_funcs; i++) {
    const mx_func_t *fa = a->funcs[i], *fb = b->funcs[i];
    if (strcmp(fa->name, fb->name) != 0 || fa->n_results != fb->n_results ||
        fa->is_private != fb->is_private || !block_eq(fa, fa->body, fb, fb->body))
      return false;
    for (int32_t k = 0; k < fa->n_results; k++)
      if (!mx_type_equal(&fa->result_types[k], &fb->result_types[k])) return false;
  }
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
#define FN1(sig, ret, body) \
  "func.func @f(" sig ") -> " ret " {\n" body "\n  return %r : " ret "\n}\n"

static void test_pretty_vs_generic(void) {
  check_same(
      "compare",
      FN1("%a: tensor<4xi32>, %b: tensor<4xi32>", "tensor<4xi1>",
          "  %r = stablehlo.compare GT, %a, %b, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> "
          "tensor<4xi1>"),
      FN1("%a: tensor<4xi32>, %b: tensor<4xi32>", "tensor<4xi1>",
          "  %r = \"stablehlo.compare\"(%a, %b) {comparison_direction = "
          "#stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>}"
          " : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>"));
  check_same(
      "add",
      FN1("%a: tensor<4xf32>", "tensor<4xf32>", "  %r = stablehlo.add %a, %a : tensor<4xf32>"),
      FN1("%a: tensor<4xf32>", "tensor<4xf32>",
          "  %r = \"stablehlo.add\"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>"));
  check_same(
      "dot_general",
      FN1("%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>", "tensor<2x3x5xf32>",
          "  %r = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] "
          "x [1],"
          " precision = [DEFAULT, HIGHEST] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> "
          "tensor<2x3x5xf32>"),
      FN1("%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>", "tensor<2x3x5xf32>",
          "  %r = \"stablehlo.dot_general\"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<"
          "lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
          "lhs_contracting_dimensions = [2],"
          " rhs_contracting_dimensions = [1]>, precision_config = [#stablehlo<precision DEFAULT>,"
          " #stablehlo<precision HIGHEST>]}> : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> "
          "tensor<2x3x5xf32>"));
  check_same("dot_general without batching",
             FN1("%a: tensor<3x4xf32>, %b: tensor<4x5xf32>", "tensor<3x5xf32>",
                 "  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]"
                 " : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>"),
             FN1("%a: tensor<3x4xf32>, %b: tensor<4x5xf32>", "tensor<3x5xf32>",
                 "  %r = \"stablehlo.dot_general\"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<"
                 "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}"
                 " : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>"));
#define CONV_COMMON                                                                      \
  " feature_group_count = 1 : i64, lhs_dilation = array<i64: 2, 2>,"                     \
  " precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>],"  \
  " rhs_dilation = array<i64: 1, 1>, window_reversal = array<i1: false, false>,"         \
  " window_strides = array<i64: 4, 4>} : (tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>) -> " \
  "tensor<1x2x2x1xi64>"
  const char *conv_pretty = FN1(
      "%a: tensor<1x4x4x1xi64>, %b: tensor<3x3x1x1xi64>", "tensor<1x2x2x1xi64>",
      "  %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],"
      " window = {stride = [4, 4], pad = [[0, 0], [0, 0]], lhs_dilate = [2, 2], rhs_dilate = [1, "
      "1],"
      " reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64,"
      " precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}"
      " : (tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>) -> tensor<1x2x2x1xi64>");
  check_same("convolution", conv_pretty,
             FN1("%a: tensor<1x4x4x1xi64>, %b: tensor<3x3x1x1xi64>", "tensor<1x2x2x1xi64>",
                 "  %r = \"stablehlo.convolution\"(%a, %b) {batch_group_count = 1 : i64, "
                 "dimension_numbers ="
                 " #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<0> : "
                 "tensor<2x2xi64>," CONV_COMMON));
  check_same("convolution raw dims", conv_pretty,
             FN1("%a: tensor<1x4x4x1xi64>, %b: tensor<3x3x1x1xi64>", "tensor<1x2x2x1xi64>",
                 "  %r = \"stablehlo.convolution\"(%a, %b) {batch_group_count = 1 : i64, "
                 "dimension_numbers ="
                 " #stablehlo.conv<raw input_batch_dimension = 0, input_feature_dimension = 3,"
                 " input_spatial_dimensions = [1, 2], kernel_input_feature_dimension = 2,"
                 " kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1],"
                 " output_batch_dimension = 0, output_feature_dimension = 3, "
                 "output_spatial_dimensions = [1, 2]>,"
                 " padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>," CONV_COMMON));
  check_same(
      "broadcast_in_dim",
      FN1("%a: tensor<3xf32>", "tensor<2x3xf32>",
          "  %r = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>"),
      FN1("%a: tensor<3xf32>", "tensor<2x3xf32>",
          "  %r = \"stablehlo.broadcast_in_dim\"(%a) {broadcast_dimensions = dense<1> : "
          "tensor<1xi64>}"
          " : (tensor<3xf32>) -> tensor<2x3xf32>"));
  check_same(
      "transpose",
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
  check_same("iota untyped dimension",
             FN1("", "tensor<4xi32>", "  %r = stablehlo.iota dim = 0 : tensor<4xi32>"),
             FN1("", "tensor<4xi32>",
                 "  %r = \"stablehlo.iota\"() {iota_dimension = 0} : () -> tensor<4xi32>"));
  check_same(
      "slice",
      FN1("%a: tensor<3x4xf32>", "tensor<2x1xf32>",
          "  %r = stablehlo.slice %a [0:2, 1:4:3] : (tensor<3x4xf32>) -> tensor<2x1xf32>"),
      FN1("%a: tensor<3x4xf32>", "tensor<2x1xf32>",
          "  %r = \"stablehlo.slice\"(%a) {start_indices = array<i64: 0, 1>, limit_indices ="
          " array<i64: 2, 4>, strides = array<i64: 1, 3>} : (tensor<3x4xf32>) -> tensor<2x1xf32>"));
  check_same("dynamic_slice",
             FN1("%a: tensor<3x4xf32>, %i: tensor<i64>", "tensor<2x2xf32>",
                 "  %r = stablehlo.dynamic_slice %a, %i, %i, sizes = [2, 2] : (tensor<3x4xf32>, "
                 "tensor<i64>,"
                 " tensor<i64>) -> tensor<2x2xf32>"),
             FN1("%a: tensor<3x4xf32>, %i: tensor<i64>", "tensor<2x2xf32>",
                 "  %r = \"stablehlo.dynamic_slice\"(%a, %i, %i) {slice_sizes = array<i64: 2, 2>}"
                 " : (tensor<3x4xf32>, tensor<i64>, tensor<i64>) -> tensor<2x2xf32>"));
  check_same("concatenate",
             FN1("%a: tensor<2xf32>", "tensor<4xf32>",
                 "  %r = stablehlo.concatenate %a, %a, dim = 0 : (tensor<2xf32>, tensor<2xf32>) -> "
                 "tensor<4xf32>"),
             FN1("%a: tensor<2xf32>", "tensor<4xf32>",
                 "  %r = \"stablehlo.concatenate\"(%a, %a) {dimension = 0 : i64}"
                 " : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>"));
  check_same(
      "pad",
      FN1("%a: tensor<2xf32>, %v: tensor<f32>", "tensor<6xf32>",
          "  %r = stablehlo.pad %a, %v, low = [1], high = [2], interior = [1]"
          " : (tensor<2xf32>, tensor<f32>) -> tensor<6xf32>"),
      FN1("%a: tensor<2xf32>, %v: tensor<f32>", "tensor<6xf32>",
          "  %r = \"stablehlo.pad\"(%a, %v) {edge_padding_high = array<i64: 2>, edge_padding_low ="
          " array<i64: 1>, interior_padding = array<i64: 1>} : (tensor<2xf32>, tensor<f32>) -> "
          "tensor<6xf32>"));
  check_same("reduce_precision",
             FN1("%a: tensor<2xf64>", "tensor<2xf64>",
                 "  %r = stablehlo.reduce_precision %a, format = e5m10 : tensor<2xf64>"),
             FN1("%a: tensor<2xf64>", "tensor<2xf64>",
                 "  %r = \"stablehlo.reduce_precision\"(%a) {exponent_bits = 5 : i32, "
                 "mantissa_bits = 10 : i32}"
                 " : (tensor<2xf64>) -> tensor<2xf64>"));
  check_same("fft",
             FN1("%a: tensor<4xcomplex<f32>>", "tensor<4xcomplex<f32>>",
                 "  %r = stablehlo.fft %a, type = FFT, length = [4] : (tensor<4xcomplex<f32>>) -> "
                 "tensor<4xcomplex<f32>>"),
             FN1("%a: tensor<4xcomplex<f32>>", "tensor<4xcomplex<f32>>",
                 "  %r = \"stablehlo.fft\"(%a) {fft_type = #stablehlo<fft_type FFT>, fft_length = "
                 "array<i64: 4>}"
                 " : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>"));
  check_same(
      "constant",
      FN1("", "tensor<2xf32>", "  %r = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf32>"),
      FN1("", "tensor<2xf32>",
          "  %r = \"stablehlo.constant\"() <{value = dense<[0x3FC00000, 0xC0000000]> : "
          "tensor<2xf32>}>"
          " : () -> tensor<2xf32>"));
  check_same("get_tuple_element",
             FN1("%t: tuple<tensor<f32>, tensor<i32>>", "tensor<i32>",
                 "  %r = stablehlo.get_tuple_element %t[1] : (tuple<tensor<f32>, tensor<i32>>) -> "
                 "tensor<i32>"),
             FN1("%t: tuple<tensor<f32>, tensor<i32>>", "tensor<i32>",
                 "  %r = \"stablehlo.get_tuple_element\"(%t) {index = 1 : i32}"
                 " : (tuple<tensor<f32>, tensor<i32>>) -> tensor<i32>"));
  check_same(
      "custom_call",
      FN1("%a: tensor<2xf32>", "tensor<2xf32>",
          "  %r = stablehlo.custom_call @foo(%a) {backend_config = \"\", api_version = 2 : i32}"
          " : (tensor<2xf32>) -> tensor<2xf32>"),
      FN1("%a: tensor<2xf32>", "tensor<2xf32>",
          "  %r = \"stablehlo.custom_call\"(%a) {call_target_name = \"foo\", backend_config = \"\","
          " api_version = 2 : i32} : (tensor<2xf32>) -> tensor<2xf32>"));
  check_same(
      "select",
      FN1("%p: tensor<2xi1>, %a: tensor<2xf32>", "tensor<2xf32>",
          "  %r = stablehlo.select %p, %a, %a : tensor<2xi1>, tensor<2xf32>"),
      FN1("%p: tensor<2xi1>, %a: tensor<2xf32>", "tensor<2xf32>",
          "  %r = \"stablehlo.select\"(%p, %a, %a) : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>)"
          " -> tensor<2xf32>"));
  check_same("complex",
             FN1("%a: tensor<2xf64>", "tensor<2xcomplex<f64>>",
                 "  %r = stablehlo.complex %a, %a : tensor<2xcomplex<f64>>"),
             FN1("%a: tensor<2xf64>", "tensor<2xcomplex<f64>>",
                 "  %r = \"stablehlo.complex\"(%a, %a) : (tensor<2xf64>, tensor<2xf64>) -> "
                 "tensor<2xcomplex<f64>>"));
  const char *reduce_generic =
      FN1("%a: tensor<2x3xf32>, %z: tensor<f32>", "tensor<2xf32>",
          "  %r = \"stablehlo.reduce\"(%a, %z) ({\n"
          "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
          "    %s = \"stablehlo.add\"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
          "    \"stablehlo.return\"(%s) : (tensor<f32>) -> ()\n"
          "  }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>");
  check_same(
      "reduce applies",
      FN1("%a: tensor<2x3xf32>, %z: tensor<f32>", "tensor<2xf32>",
          "  %r = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1]"
          " : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>"),
      reduce_generic);
  check_same("reduce region",
             FN1("%a: tensor<2x3xf32>, %z: tensor<f32>", "tensor<2xf32>",
                 "  %r = stablehlo.reduce(%a init: %z) across dimensions = [1]"
                 " : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
                 "   reducer(%x: tensor<f32>, %y: tensor<f32>) {\n"
                 "    %s = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %s : "
                 "tensor<f32>\n  }"),
             reduce_generic);
  check_same(
      "while",
      FN1("%n: tensor<i64>", "tensor<i64>",
          "  %r = stablehlo.while(%i = %n) : tensor<i64>\n"
          "  cond {\n    %c = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> "
          "tensor<i1>\n"
          "    stablehlo.return %c : tensor<i1>\n  } do {\n"
          "    %j = stablehlo.add %i, %n : tensor<i64>\n    stablehlo.return %j : tensor<i64>\n  "
          "}"),
      FN1("%n: tensor<i64>", "tensor<i64>",
          "  %r = \"stablehlo.while\"(%n) ({\n  ^bb0(%i: tensor<i64>):\n"
          "    %c = \"stablehlo.compare\"(%i, %n) {comparison_direction = "
          "#stablehlo<comparison_direction LT>}"
          " : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
          "    \"stablehlo.return\"(%c) : (tensor<i1>) -> ()\n  }, {\n  ^bb0(%i: tensor<i64>):\n"
          "    %j = stablehlo.add %i, %n : tensor<i64>\n    stablehlo.return %j : tensor<i64>\n"
          "  }) : (tensor<i64>) -> tensor<i64>"));
#define G_FN \
  "func.func private @g(%a: tensor<f32>) -> tensor<f32> {\n  return %a : tensor<f32>\n}\n"
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
                 "  %r = \"stablehlo.composite\"(%a) {name = \"my.op\", composite_attributes = {n "
                 "= 2 : i64},"
                 " decomposition = @g} : (tensor<f32>) -> tensor<f32>") G_FN);
  check_same(
      "check.expect_almost_eq_const tolerance",
      FN2("%a: tensor<2xf32>",
          "  check.expect_almost_eq_const %a, dense<1.0> : tensor<2xf32>, tolerance = 0.5"),
      FN2("%a: tensor<2xf32>",
          "  check.expect_almost_eq_const %a, dense<1.0> : tensor<2xf32> {tolerance = 0.5 : f64}"));
  check_same(
      "check.expect_almost_eq tolerance",
      FN2("%a: tensor<2xf32>", "  check.expect_almost_eq %a, %a, tolerance = 0.5 : tensor<2xf32>"),
      FN2("%a: tensor<2xf32>",
          "  check.expect_almost_eq %a, %a {tolerance = 0.5 : f64} : tensor<2xf32>"));
  check_same(
      "check.expect_close",
      FN2("%a: tensor<2xf32>",
          "  check.expect_close %a, %a, max_ulp_difference = 3 : tensor<2xf32>, tensor<2xf32>"),
      FN2("%a: tensor<2xf32>",
          "  \"check.expect_close\"(%a, %a) {max_ulp_difference = 3 : ui64}"
          " : (tensor<2xf32>, tensor<2xf32>) -> ()"));
  // The comparison itself must notice differences.
  fprintf(stderr, "(an expected difference report follows)\n");
  CHECK(!same(
      "compare mismatch",
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
      "  func.func public @main() -> (tensor<2xf32> {jax.result_info = \"\", mhlo.layout_mode = "
      "\"default\"}) {\n"
      "    %0 = call @inputs() : () -> tensor<2xf32>\n"
      "    %1 = call @expected() : () -> tensor<2xf32>\n"
      "    %2 = stablehlo.abs %0 : tensor<2xf32>\n"
      "    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : "
      "(tensor<2xf32>, tensor<2xf32>) -> ()\n"
      "    stablehlo.custom_call @check.expect_eq(%2, %1) {has_side_effect = true} : "
      "(tensor<2xf32>, tensor<2xf32>) -> ()\n"
      "    \"stablehlo.custom_call\"(%2, %1) {call_target_name = \"check.expect_almost_eq\", "
      "has_side_effect = true}"
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
     MX_ERR_PARSE, 2, 22,
     "use of value '%a' expects type tensor<3xf32>, but it has type tensor<2xf32>"},
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
     "  %0 = \"stablehlo.add\"(%a, %a) {foo = 1, foo = 2} : (tensor<2xf32>, tensor<2xf32>) -> "
     "tensor<2xf32>\n"
     "  func.return\n"
     "}\n",
     MX_ERR_PARSE, 2, 42, "duplicate attribute 'foo'"},
    {"func.func @f(%a: tensor<2xf32>) {\n"
     "  %0 = \"stablehlo.add\"(%a, %a) : tensor<2xf32>\n"
     "  func.return\n"
     "}\n",
     MX_ERR_PARSE, 2, 34,
     "expected function type '(operand types) -> result types' for generic operation "
     "'stablehlo.add'"},
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
     "  %0 = \"stablehlo.add\"(%a, %a) {s = \"abc} : (tensor<2xf32>, tensor<2xf32>) -> "
     "tensor<2xf32>\n"
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
    {"func.func @f(%a: tensor<2x!quant.uniform<i8:f32:0, {1.0}>>) {\n"
     "  func.return\n"
     "}\n",
     MX_ERR_PARSE, 1, 27, "1 scales given for quantization axis 0 of size 2"},
    {"func.func @f(%a: tensor<2xf32>) {\n"
     "  %0 = stablehlo.reduce(%a init: %a) applies stablehlo.compare across dimensions = [0] : "
     "(tensor<2xf32>, tensor<2xf32>) -> tensor<f32>\n"
     "  func.return\n"
     "}\n",
     MX_ERR_PARSE, 2, 46,
     "expected a binary stablehlo operation after 'applies', got 'stablehlo.compare'"},
    {"func.func @f(%a: tensor<2xf32>) {\n"
     "  %0 = stablehlo.convolution(%a, %a) dim_numbers = [b, 0, f]x[0, i, q]->[b, 0, f], window = "
     "{} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
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

// Every truncation of a valid module is an error, never a crash (the sanitizer build checks
// for leaks). Cut identifiers can name unknown ops or types ("stablehlo.ad", "i6"): UNSUPPORTED;
// a cut right after a function can leave a complete module that does not verify.
static void check_prefixes(const char *what, const char *text) {
  size_t len = strlen(text);
  int bad = 0;
  for (size_t n = 0; n < len; n++) {
    mx_parse_opts_t o = {.filename = "t.mlir"};
    mx_module_t *m = NULL;
    mx_status_t st = mx_hlo_parse(text, n, &o, &m);
    if (st != MX_ERR_PARSE && st != MX_OK && st != MX_ERR_UNSUPPORTED && st != MX_ERR_VERIFY) {
      bad++;
      fprintf(stderr, "%s: prefix %zu: %s: %s\n", what, n, mx_status_name(st), mx_error_message());
    }
    if (st == MX_ERR_PARSE && strncmp(mx_error_message(), "t.mlir:", 7) != 0) bad++;
    mx_module_destroy(m);
  }
  CHECK_MSG(bad == 0, "%s: %d prefixes gave unexpected statuses", what, bad);
}

static const char *const rich_module =
    "#loc1 = loc(\"x.py\":1:2)\n"
    "module @m attributes {mhlo.num_replicas = 1 : i32} {\n"
    "  func.func public @main(%arg0: tensor<2x3xf32> {jax.arg_info = \"x\"} loc(\"a\"), %arg1: "
    "tensor<i64>)"
    " -> (tensor<2xf32> {jax.result_info = \"\"}, tensor<i64>) attributes {foo = unit} {\n"
    "    %cst = stablehlo.constant dense<[[1.0, 0x7FC00000, -2.5e-3], [3, 4, 5]]> : "
    "tensor<2x3xf32> loc(#loc1)\n"
    "    %c = stablehlo.constant dense<(1.0, -2.0)> : tensor<complex<f64>>\n"
    "    %b = stablehlo.constant dense<\"0x0100\"> : tensor<2xi8>\n"
    "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "    %s = stablehlo.add %arg0, %cst : tensor<2x3xf32>  // comment\n"
    "    %r = stablehlo.reduce(%s init: %z) applies stablehlo.add across dimensions = [1]"
    " : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
    "    %w:2 = stablehlo.while(%i = %arg1, %acc = %r) : tensor<i64>, tensor<2xf32>\n"
    "    cond {\n"
    "      %p = stablehlo.compare LT, %i, %arg1, SIGNED : (tensor<i64>, tensor<i64>) -> "
    "tensor<i1>\n"
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
    CHECK(f->values[f->body->args[0]].name &&
          strcmp(f->values[f->body->args[0]].name, "arg0") == 0);
  }
  mx_module_destroy(m);
  check_prefixes("rich module", rich_module);
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
  CHECK_MSG(st == MX_ERR_PARSE && strstr(mx_error_message(), fragment), "%s: got %s: %s", what,
            mx_status_name(st), mx_error_message());
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
  // A UTF-8 byte order mark is skipped (columns count from after it).
  st = parse_str(
      "\xEF\xBB\xBF"
      "func.func @f() {\n  func.return\n}\n",
      &m);
  CHECK_OK(st);
  mx_module_destroy(m);
  // Empty input is an empty module.
  CHECK_OK(mx_hlo_parse("", 0, NULL, &m));
  CHECK(m && m->n_funcs == 0);
  mx_module_destroy(m);
  // first_line offsets positions.
  o.first_line = 100;
  st = mx_hlo_parse("func.func @f() {\n  %x = stablehlo.add %y, %y : tensor<f32>\n}\n", 58, &o, &m);
  CHECK_MSG(st == MX_ERR_PARSE && strstr(mx_error_message(), "t.mlir:101:22: error: "),
            "first_line: %s", mx_error_message());
}

static void test_split(void) {
  const char *text =
      "// RUN: x\nfunc.func @a() {\n}\n// -----\nfunc.func @b() {\n}\n  // -----  \n\n";
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

// ---------------------------------------------------------------------------------------------
// Fully generic modules ("builtin.module" / "func.func"), type aliases
// ---------------------------------------------------------------------------------------------

static void test_generic_module(void) {
  const char *generic =
      "!t = tensor<2xf32>\n"
      "\"builtin.module\"() <{sym_name = \"jit_f\"}> ({\n"
      "  \"func.func\"() <{arg_attrs = [{jax.arg_info = \"x\"}], function_type = (!t) -> "
      "tensor<2xf32>, res_attrs = [{jax.result_info = \"\"}], sym_name = \"main\"}> ({\n"
      "  ^bb0(%arg0: tensor<2xf32>):\n"
      "    %0 = \"stablehlo.add\"(%arg0, %arg0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
      "    %1 = \"func.call\"(%0) <{callee = @helper}> : (tensor<2xf32>) -> tensor<2xf32>\n"
      "    \"func.return\"(%1) : (tensor<2xf32>) -> ()\n"
      "  }) : () -> ()\n"
      "  \"func.func\"() <{function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "
      "\"helper\", sym_visibility = \"private\"}> ({\n"
      "  ^bb0(%arg0: tensor<2xf32>):\n"
      "    \"func.return\"(%arg0) : (tensor<2xf32>) -> ()\n"
      "  }) : () -> ()\n"
      "}) {mhlo.num_replicas = 1 : i32} : () -> ()\n";
  const char *pretty =
      "module @jit_f attributes {mhlo.num_replicas = 1 : i32} {\n"
      "  func.func @main(%arg0: tensor<2xf32> {jax.arg_info = \"x\"}) -> (tensor<2xf32> "
      "{jax.result_info = \"\"}) {\n"
      "    %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>\n"
      "    %1 = call @helper(%0) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "    return %1 : tensor<2xf32>\n"
      "  }\n"
      "  func.func private @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
      "    return %arg0 : tensor<2xf32>\n"
      "  }\n"
      "}\n";
  mx_module_t *a = NULL, *b = NULL;
  CHECK_OK(parse_str(generic, &a));
  CHECK_OK(parse_str(pretty, &b));
  if (a && b) {
    CHECK(module_eq(a, b));
    CHECK(a->name && strcmp(a->name, "jit_f") == 0 && a->attrs.n == 1);
    CHECK(a->funcs[1]->is_private && !a->funcs[0]->is_private);
    CHECK(a->funcs[0]->arg_attrs[0].n == 1 && a->funcs[0]->result_attrs[0].n == 1);
  }
  mx_module_destroy(a);
  mx_module_destroy(b);
  check_prefixes("generic module", generic);
  expect_parse_error("generic func without sym_name",
                     "\"func.func\"() <{function_type = () -> ()}> ({\n  \"func.return\"() : () -> "
                     "()\n}) : () -> ()\n",
                     "t.mlir:1:1: error: generic func.func needs a sym_name");
  expect_parse_error(
      "generic func type mismatch",
      "\"func.func\"() <{function_type = (tensor<f32>) -> (), sym_name = \"f\"}> ({\n"
      "^bb0(%a: tensor<i32>):\n  \"func.return\"() : () -> ()\n}) : () -> ()\n",
      "t.mlir:2:10: error: argument 0 does not match the function_type");
  expect_parse_error("type alias redefinition", "!t = tensor<f32>\n!t = tensor<i32>\n",
                     "t.mlir:2:1: error: redefinition of alias '!t'");
}

// ---------------------------------------------------------------------------------------------
// Dense literal decoding into tensor storage
// ---------------------------------------------------------------------------------------------

// Parses `stablehlo.constant <lit> : <type>` in a function and returns its tensor (module kept
// alive in *m; NULL on failure).
static const mx_tensor_t *const_of(const char *lit_and_type, mx_module_t **m) {
  char text[4096];
  snprintf(text, sizeof text, "func.func @f() {\n  %%c = stablehlo.constant %s\n  func.return\n}\n",
           lit_and_type);
  *m = NULL;
  if (parse_str(text, m) != MX_OK) {
    fprintf(stderr, "const_of(%s): %s\n", lit_and_type, mx_error_message());
    return NULL;
  }
  const mx_attr_t *v = mx_op_attr((*m)->funcs[0]->body->ops[0], "value");
  return v && v->kind == MX_ATTR_DENSE ? v->dense : NULL;
}

static void test_literals(void) {
  mx_module_t *m;
  const mx_tensor_t *t;
  t = const_of("dense<[-8, -1, 7]> : tensor<3xi4>", &m);
  CHECK(t && t->nbytes == 3 && (int8_t)t->data[0] == -8 && (int8_t)t->data[1] == -1 &&
        t->data[2] == 7);
  mx_module_destroy(m);
  t = const_of("dense<[0, 15]> : tensor<2xui4>", &m);
  CHECK(t && t->data[0] == 0 && t->data[1] == 15);
  mx_module_destroy(m);
  t = const_of("dense<\"0x0F08\"> : tensor<2xi4>", &m);  // raw bytes, sign-extended
  CHECK(t && (int8_t)t->data[0] == -1 && (int8_t)t->data[1] == -8);
  mx_module_destroy(m);
  t = const_of("dense<[true, false, true]> : tensor<3xi1>", &m);
  CHECK(t && t->data[0] == 1 && t->data[1] == 0 && t->data[2] == 1);
  mx_module_destroy(m);
  t = const_of("dense<\"0x05\"> : tensor<3xi1>", &m);  // bit-packed
  CHECK(t && t->data[0] == 1 && t->data[1] == 0 && t->data[2] == 1);
  mx_module_destroy(m);
  t = const_of("dense<\"0xFF\"> : tensor<3xi1>", &m);  // splat true
  CHECK(t && t->data[0] == 1 && t->data[1] == 1 && t->data[2] == 1);
  mx_module_destroy(m);
  t = const_of("dense<[1.0, 0x7F80, -2.5]> : tensor<3xbf16>", &m);
  uint16_t h[3] = {0, 0, 0};
  if (t) memcpy(h, t->data, sizeof h);
  CHECK(t && h[0] == 0x3F80 && h[1] == 0x7F80 && h[2] == 0xC020);
  mx_module_destroy(m);
  t = const_of("dense<0.1> : tensor<2xf32>", &m);  // splat; decimal -> nearest f32 directly
  float fv[2] = {0, 0};
  if (t) memcpy(fv, t->data, sizeof fv);
  CHECK(t && fv[0] == 0.1f && fv[1] == 0.1f);
  mx_module_destroy(m);
  t = const_of("dense<[(1.5, -2.0), (0x7FF0000000000000, 0x0)]> : tensor<2xcomplex<f64>>", &m);
  double c[4] = {0, 0, 0, 0};
  if (t) memcpy(c, t->data, sizeof c);
  CHECK(t && c[0] == 1.5 && c[1] == -2.0 && c[2] == INFINITY && c[3] == 0.0);
  mx_module_destroy(m);
  t = const_of("dense<\"0x0000803F00000040\"> : tensor<complex<f32>>", &m);
  float cf[2] = {0, 0};
  if (t) memcpy(cf, t->data, sizeof cf);
  CHECK(t && cf[0] == 1.0f && cf[1] == 2.0f);
  mx_module_destroy(m);
  t = const_of("dense<[18446744073709551615, 0]> : tensor<2xui64>", &m);
  uint64_t u[2] = {0, 1};
  if (t) memcpy(u, t->data, sizeof u);
  CHECK(t && u[0] == UINT64_MAX && u[1] == 0);
  mx_module_destroy(m);
  t = const_of("dense<-9223372036854775808> : tensor<i64>", &m);
  CHECK(t && mx_tensor_get_i64(t, 0) == INT64_MIN);
  mx_module_destroy(m);
  t = const_of("dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi16>", &m);
  CHECK(t && t->nbytes == 12 && mx_tensor_get_i64(t, 5) == 6 && mx_tensor_get_i64(t, 3) == 4);
  mx_module_destroy(m);
  t = const_of("dense<[]> : tensor<0x3xf32>", &m);
  CHECK(t && t->nbytes == 0);
  mx_module_destroy(m);
  t = const_of("dense<[0x00, 0x80, 0xFE]> : tensor<3xf8E8M0FNU>", &m);
  CHECK(t && t->data[0] == 0x00 && t->data[1] == 0x80 && t->data[2] == 0xFE);
  mx_module_destroy(m);
  t = const_of("dense<[1.0, -6.0]> : tensor<2xf4E2M1FN>", &m);
  CHECK(t && mx_tensor_get_f64(t, 0) == 1.0 && mx_tensor_get_f64(t, 1) == -6.0);
  mx_module_destroy(m);
  // A float literal longer than any fixed buffer keeps its exponent.
  char lit[512];
  strcpy(lit, "dense<1.");
  for (int i = 0; i < 300; i++) strcat(lit, "0");
  strcat(lit, "e2> : tensor<f64>");
  t = const_of(lit, &m);
  CHECK(t && mx_tensor_get_f64(t, 0) == 100.0);
  mx_module_destroy(m);
}

// JAX export with Shardy annotations and locations.
static void test_jax_shardy(void) {
  const char *text =
      "#loc1 = loc(\"x\")\n"
      "module @jit_f attributes {jax.uses_shape_polymorphism = false, mhlo.frontend_attributes = "
      "{xla.sdy.meshes = \"{mesh = #sdy.mesh<[\\22x\\22=2]>}\"}, mhlo.num_partitions = 2 : i32, "
      "mhlo.num_replicas = 1 : i32} {\n"
      "  sdy.mesh @mesh = <[\"x\"=2]>\n"
      "  func.func public @main(%arg0: tensor<8xf32> {mhlo.layout_mode = \"default\", sdy.sharding "
      "= #sdy.sharding<@mesh, [{\"x\"}]>} loc(\"x\")) -> (tensor<8xf32> {jax.result_info = "
      "\"result\", mhlo.layout_mode = \"default\"}) {\n"
      "    %0 = stablehlo.sine %arg0 : tensor<8xf32> loc(#loc1)\n"
      "    return %0 : tensor<8xf32> loc(#loc1)\n"
      "  } loc(#loc1)\n"
      "} loc(#loc1)\n";
  mx_module_t *m = NULL;
  CHECK_OK(parse_str(text, &m));
  if (m) {
    CHECK(m->attrs.n == 4 && m->n_funcs == 1);
    CHECK(m->funcs[0]->arg_attrs[0].n == 2);
    const mx_attr_t *sh = mx_attr_field(&m->funcs[0]->arg_attrs[0], "sdy.sharding");
    CHECK(sh && sh->kind == MX_ATTR_STRUCT && strcmp(sh->s, "sdy.sharding") == 0);
    const mx_attr_t *fe = mx_attr_field(&m->attrs, "mhlo.frontend_attributes");
    const mx_attr_t *mesh = fe ? mx_attr_field(fe, "xla.sdy.meshes") : NULL;
    CHECK(mesh && mesh->kind == MX_ATTR_STRING && strstr(mesh->s, "\"x\"=2") != NULL);
  }
  mx_module_destroy(m);
}

// ---------------------------------------------------------------------------------------------
// Attribute syntax
// ---------------------------------------------------------------------------------------------

static void test_attributes(void) {
  const char *text =
      "#alias = {x = 1 : i32}\n"
      "func.func @f() {\n"
      "  \"x.op\"() {a = 0x7F800000 : f32, b = 0x3C00 : f16, c = 1 : i1, d = -5 : i32,\n"
      "    e = 2.5 : f32, f = \"s\\n\\22q\\\\\", g = @\"quoted sym\", h = tensor<2xf32>, i = f32,\n"
      "    j = !stablehlo.token, k = #stablehlo.result_accuracy<atol = 1.0, rtol = 0.0, ulps = 1,\n"
      "    mode = #stablehlo.result_accuracy_mode<TOLERANCE>>, l = array<i1: true, false>,\n"
      "    m = 7 : index, n = unit, o, \"quoted.key\" = 1, p = #alias,\n"
      "    q = #stablehlo<fft_type FFT>, r = array<i64>, s = -0.0, t = 0x10,\n"
      "    u = #stablehlo.conv<raw input_batch_dimension = 0>, v = [[1, 2], []]} : () -> ()\n"
      "  func.return\n"
      "}\n";
  mx_module_t *m = NULL;
  CHECK_OK(parse_str(text, &m));
  if (!m) return;
  const mx_op_t *op = m->funcs[0]->body->ops[0];
  CHECK(op->code == MX_OP_UNKNOWN && strcmp(op->name, "x.op") == 0 && op->n_attrs == 23);
  const mx_attr_t *a;
  a = mx_op_attr(op, "a");
  CHECK(a && a->kind == MX_ATTR_FLOAT && a->f == INFINITY && a->elem == MX_ELEM_F32);
  a = mx_op_attr(op, "b");
  CHECK(a && a->kind == MX_ATTR_FLOAT && a->f == 1.0 && a->elem == MX_ELEM_F16);
  a = mx_op_attr(op, "c");
  CHECK(a && a->kind == MX_ATTR_BOOL && a->i == 1);
  a = mx_op_attr(op, "d");
  CHECK(a && a->kind == MX_ATTR_INT && a->i == -5 && a->elem == MX_ELEM_I32);
  a = mx_op_attr(op, "e");
  CHECK(a && a->kind == MX_ATTR_FLOAT && a->f == 2.5 && a->elem == MX_ELEM_F32);
  a = mx_op_attr(op, "f");
  CHECK(a && a->kind == MX_ATTR_STRING && strcmp(a->s, "s\n\"q\\") == 0);
  a = mx_op_attr(op, "g");
  CHECK(a && a->kind == MX_ATTR_SYMBOL && strcmp(a->s, "quoted sym") == 0);
  a = mx_op_attr(op, "h");
  CHECK(a && a->kind == MX_ATTR_TYPE && a->type->rank == 1 && a->type->elem == MX_ELEM_F32);
  a = mx_op_attr(op, "i");
  CHECK(a && a->kind == MX_ATTR_TYPE && a->type->rank == 0 && a->type->elem == MX_ELEM_F32);
  a = mx_op_attr(op, "j");
  CHECK(a && a->kind == MX_ATTR_TYPE && a->type->kind == MX_TYPE_TOKEN);
  a = mx_op_attr(op, "k");
  const mx_attr_t *mode = a ? mx_attr_field(a, "mode") : NULL;
  CHECK(a && a->kind == MX_ATTR_STRUCT && strcmp(a->s, "stablehlo.result_accuracy") == 0 && mode &&
        mode->kind == MX_ATTR_ENUM && strcmp(mode->s, "TOLERANCE") == 0 &&
        strcmp(mode->enum_kind, "stablehlo.result_accuracy_mode") == 0);
  a = mx_op_attr(op, "l");
  CHECK(a && a->kind == MX_ATTR_DENSE_ARRAY && a->elem == MX_ELEM_I1 && a->n == 2 &&
        a->ints[0] == 1 && a->ints[1] == 0);
  a = mx_op_attr(op, "m");
  CHECK(a && a->kind == MX_ATTR_INT && a->i == 7);
  a = mx_op_attr(op, "n");
  CHECK(a && a->kind == MX_ATTR_UNIT);
  a = mx_op_attr(op, "o");
  CHECK(a && a->kind == MX_ATTR_UNIT);
  a = mx_op_attr(op, "quoted.key");
  CHECK(a && a->kind == MX_ATTR_INT && a->i == 1);
  a = mx_op_attr(op, "p");
  CHECK(a && a->kind == MX_ATTR_DICT && a->n == 1 && strcmp(a->fields[0].name, "x") == 0);
  a = mx_op_attr(op, "q");
  CHECK(a && a->kind == MX_ATTR_ENUM && strcmp(a->enum_kind, "fft_type") == 0 &&
        strcmp(a->s, "FFT") == 0);
  a = mx_op_attr(op, "r");
  CHECK(a && a->kind == MX_ATTR_DENSE_ARRAY && a->n == 0);
  a = mx_op_attr(op, "s");
  CHECK(a && a->kind == MX_ATTR_FLOAT && a->f == 0.0 && signbit(a->f));
  a = mx_op_attr(op, "t");
  CHECK(a && a->kind == MX_ATTR_INT && a->i == 16);
  a = mx_op_attr(op, "u");
  CHECK(a && a->kind == MX_ATTR_STRUCT && strcmp(a->s, "stablehlo.conv") == 0 && a->n == 1);
  a = mx_op_attr(op, "v");
  CHECK(a && a->kind == MX_ATTR_ARRAY && a->n == 2 && a->items[0].n == 2 && a->items[1].n == 0);
  mx_module_destroy(m);

#define ATTR_FN(attr) "func.func @f() attributes {" attr "} {\n  func.return\n}\n"
  expect_parse_error("hex float too wide", ATTR_FN("a = 0x7F800000 : f16"),
                     "t.mlir:1:32: error: hexadecimal float literal does not fit f16");
  expect_parse_error("negative hex float", ATTR_FN("a = -0x10 : f32"),
                     "t.mlir:1:32: error: hexadecimal float literal cannot be negative");
  expect_parse_error("float with int type", ATTR_FN("a = 1.5 : i32"),
                     "t.mlir:1:32: error: floating point literal with non-float type i32");
  expect_parse_error("undefined alias", ATTR_FN("a = #nope"),
                     "t.mlir:1:32: error: undefined attribute alias '#nope'");
  expect_parse_error("duplicate struct field",
                     ATTR_FN("a = #stablehlo.gather<index_vector_dim = 1, index_vector_dim = 2>"),
                     "t.mlir:1:72: error: duplicate field 'index_vector_dim'");
  expect_parse_error("unclosed dialect attribute", ATTR_FN("a = #sdy.sharding<@mesh, [{}]"),
                     "t.mlir:1:57: error: expected '>' closing dialect attribute, got '}'");
  expect_parse_error("duplicate dictionary key", ATTR_FN("a = 1, a = 2"),
                     "t.mlir:1:35: error: duplicate attribute 'a'");
  expect_parse_error("bad escape", ATTR_FN("a = \"\\q\""),
                     "t.mlir:1:32: error: unknown escape '\\q' in string");
  expect_parse_error("conv missing feature dim",
                     ATTR_FN("a = #stablehlo.conv<[b, 0]x[0, i, o]->[b, 0, f]>"),
                     "error: convolution dimensions 'b' and 'f' must both be given");
  expect_parse_error("conv duplicate spatial dim",
                     ATTR_FN("a = #stablehlo.conv<[b, 0, 0, f]x[0, i, o]->[b, 0, f]>"),
                     "t.mlir:1:55: error: duplicate spatial dimension 0");
  expect_parse_error("conv missing spatial dim",
                     ATTR_FN("a = #stablehlo.conv<[b, 1, f]x[0, i, o]->[b, 0, f]>"),
                     "error: spatial dimension 0 not specified");
  mx_status_t st;
  m = NULL;
  st = parse_str(ATTR_FN("a = array<f32: 1.0>"), &m);
  CHECK_MSG(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "array<f32>"), "%s",
            mx_error_message());
  st = parse_str(ATTR_FN("a = dense_resource<blob> : tensor<2xf32>"), &m);
  CHECK_MSG(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "dense_resource"), "%s",
            mx_error_message());
  st = parse_str(ATTR_FN("a = tensor<2xi3>"), &m);
  CHECK_MSG(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "element type i3"), "%s",
            mx_error_message());
  CHECK(m == NULL);
}

// Ops the suite does not cover in these forms, through print/parse round trips.
static void test_roundtrip_extra(void) {
  const char *text =
      "func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %p: tensor<i1>, %i: tensor<i32>) "
      "-> tensor<2x4xf32> {\n"
      "  %0 = stablehlo.dot %a, %b, precision = [DEFAULT, HIGH] : (tensor<2x3xf32>, "
      "tensor<3x4xf32>) -> tensor<2x4xf32>\n"
      "  %1 = stablehlo.dot %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>\n"
      "  %2 = \"stablehlo.if\"(%p) ({\n"
      "    stablehlo.return %0 : tensor<2x4xf32>\n"
      "  }, {\n"
      "    stablehlo.return %1 : tensor<2x4xf32>\n"
      "  }) : (tensor<i1>) -> tensor<2x4xf32>\n"
      "  %3 = \"stablehlo.case\"(%i) ({\n"
      "    stablehlo.return %0 : tensor<2x4xf32>\n"
      "  }, {\n"
      "    stablehlo.return %2 : tensor<2x4xf32>\n"
      "  }) : (tensor<i32>) -> tensor<2x4xf32>\n"
      "  %4 = \"stablehlo.map\"(%3, %2) ({\n"
      "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
      "    %m = stablehlo.maximum %x, %y : tensor<f32>\n"
      "    stablehlo.return %m : tensor<f32>\n"
      "  }) {dimensions = array<i64: 0, 1>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> "
      "tensor<2x4xf32>\n"
      "  %5 = stablehlo.get_dimension_size %4, dim = 1 : (tensor<2x4xf32>) -> tensor<i32>\n"
      "  %6 = stablehlo.is_finite %4 : (tensor<2x4xf32>) -> tensor<2x4xi1>\n"
      "  %7 = stablehlo.cbrt %4 : tensor<2x4xf32>\n"
      "  %8 = stablehlo.clamp %a, %a, %a : tensor<2x3xf32>\n"
      "  %9 = stablehlo.reduce_precision %7, format = e8m7 : tensor<2x4xf32>\n"
      "  %10 = stablehlo.dynamic_update_slice %4, %7, %i, %i : (tensor<2x4xf32>, tensor<2x4xf32>, "
      "tensor<i32>, tensor<i32>) -> tensor<2x4xf32>\n"
      "  %11 = stablehlo.reshape %10 : (tensor<2x4xf32>) -> tensor<8xf32>\n"
      "  %12:2 = \"stablehlo.sort\"(%11, %11) <{dimension = 0 : i64, is_stable = true}> ({\n"
      "  ^bb0(%x: tensor<f32>, %y: tensor<f32>, %z: tensor<f32>, %w: tensor<f32>):\n"
      "    %c = stablehlo.compare GT, %x, %y, TOTALORDER : (tensor<f32>, tensor<f32>) -> "
      "tensor<i1>\n"
      "    stablehlo.return %c : tensor<i1>\n"
      "  }) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)\n"
      "  return %9 : tensor<2x4xf32>\n"
      "}\n";
  mx_module_t *m = NULL;
  CHECK_OK(parse_str(text, &m));
  if (!m) return;
  int before = roundtrip_failures;
  check_roundtrip(m, "extra ops");
  check_prefixes("extra ops", text);
  CHECK(roundtrip_failures == before);
  const mx_func_t *f = m->funcs[0];
  CHECK(f->body->n_ops == 14 && f->body->ops[0]->code == MX_OP_DOT &&
        mx_op_attr(f->body->ops[0], "precision_config") != NULL &&
        f->body->ops[2]->code == MX_OP_IF && f->body->ops[2]->n_regions == 2 &&
        f->body->ops[3]->code == MX_OP_CASE && f->body->ops[4]->code == MX_OP_MAP);
  mx_module_destroy(m);
}

int main(void) {
  test_suite();
  test_pretty_vs_generic();
  test_custom_call_checks();
  test_malformed();
  test_prefixes();
  test_limits();
  test_split();
  test_generic_module();
  test_literals();
  test_jax_shardy();
  test_attributes();
  test_roundtrip_extra();
  return mx_test_finish();
}
