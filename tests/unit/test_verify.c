// Verifier: rejects corrupted IR with located messages; accepts every parsed case of StableHLO's
// interpreter suite ($MX_SHARED/stablehlo-interpret, skipped when absent).
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"
#include "mx_test.h"

#define CHECK_ERR(expr, status, sub)                                                          \
  do {                                                                                        \
    mx_status_t st_ = (expr);                                                                 \
    CHECK_MSG(st_ == (status) && strstr(mx_error_message(), (sub)) != NULL, "%s -> %s: '%s'", \
              #expr, mx_status_name(st_), mx_error_message());                                \
  } while (0)

// Builds @f(x: tensor<2x3xf32>) -> tensor<2x3xf32> { return x + x } and corrupts it in turn.
static void test_corruptions(void) {
  mx_module_t *m = mx_module_create(NULL);
  int64_t d[2] = {2, 3};
  mx_type_t t = mx_type_tensor(MX_ELEM_F32, 2, d);
  mx_func_t *f;
  mx_builder_t b;
  int32_t x, y;
  CHECK_OK(mx_build_func(m, "f", false, &t, 1, &f, &b, &x));
  CHECK_OK(mx_build_binary(&b, MX_OP_ADD, x, x, &y));
  CHECK_OK(mx_build_return(&b, &y, 1));
  CHECK_OK(mx_hlo_verify_module(m));

  mx_op_t *add = f->body->ops[0];
  // Wrong declared result type, with a source location.
  f->values[y].type.dims[1] = 4;
  add->line = 7;
  add->col = 10;
  CHECK_ERR(mx_hlo_verify_module(m), MX_ERR_VERIFY,
            "7:10: stablehlo.add: result 0 has type tensor<2x4xf32>, expected tensor<2x3xf32>");
  f->values[y].type.dims[1] = 3;
  // Function result type mismatch.
  f->result_types[0].elem = MX_ELEM_F16;
  CHECK_ERR(mx_hlo_verify_module(m), MX_ERR_VERIFY,
            "func.return: operand 0 type tensor<2x3xf32> does not match @f result type "
            "tensor<2x3xf16>");
  f->result_types[0].elem = MX_ELEM_F32;
  // Missing required attribute.
  int32_t bc;
  int64_t d3[3] = {4, 2, 3}, bd[2] = {1, 2};
  f->body->n_ops = 1;  // drop the return
  CHECK_OK(mx_build_broadcast_in_dim(&b, y, d3, 3, bd, &bc));
  mx_op_t *bop = f->body->ops[1];
  bop->attrs[0].name = "renamed";
  CHECK_ERR(mx_hlo_verify_op(f, bop), MX_ERR_VERIFY,
            "stablehlo.broadcast_in_dim: missing required attribute 'broadcast_dimensions'");
  bop->attrs[0].name = "broadcast_dimensions";
  CHECK_OK(mx_hlo_verify_op(f, bop));
  // Body without a terminator.
  CHECK_ERR(mx_hlo_verify_func(f), MX_ERR_VERIFY, "body does not end with func.return");
  // Terminator in the middle.
  f->body->ops[1] = f->body->ops[0];
  mx_builder_t b2 = mx_builder_at(f, NULL);
  f->body->n_ops = 0;
  CHECK_OK(mx_build_return(&b2, &y, 1));
  f->body->ops[1] = add;
  f->body->n_ops = 2;
  CHECK_ERR(mx_hlo_verify_func(f), MX_ERR_VERIFY, "terminator is not the last op");
  // A region value used outside its region.
  f->body->n_ops = 0;
  mx_op_t *w;
  CHECK_OK(mx_build_while(&b2, &x, 1, &w));
  int32_t inner = w->regions[1]->args[0], neg, tru;
  mx_builder_t cb = mx_builder_at(f, w->regions[0]), bb = mx_builder_at(f, w->regions[1]);
  CHECK_OK(mx_build_scalar(&cb, MX_ELEM_I1, 1, &tru));
  CHECK_OK(mx_build_return(&cb, &tru, 1));
  CHECK_OK(mx_build_return(&bb, &inner, 1));
  CHECK_OK(mx_build_unary(&b2, MX_OP_NEGATE, inner, &neg));
  f->values[inner].name = "it";
  CHECK_ERR(mx_hlo_verify_func(f), MX_ERR_VERIFY,
            "stablehlo.negate: operand 0 (%it) is used outside the scope of its definition");
  CHECK_OK(mx_build_return(&b2, &w->results[0], 1));
  f->body->ops[1] = f->body->ops[2];
  f->body->n_ops = 2;
  CHECK_OK(mx_hlo_verify_func(f));
  // Unknown ops keep their declared types.
  f->body->n_ops = 0;
  mx_type_t rt = mx_type_scalar(MX_ELEM_I64);
  mx_op_t *u = mx_block_append_op(f, f->body, MX_OP_UNKNOWN, "foo.bar", &x, 1, &rt, 1);
  CHECK(u != NULL);
  CHECK_OK(mx_hlo_verify_op(f, u));
  mx_module_destroy(m);
}

// Parseable but ill-typed modules: the parser runs the verifier, which names op and location.
static void test_parsed_errors(void) {
  static const struct {
    const char *text, *msg;
  } cases[] = {
      {"func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {\n"
       "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, "
       "tensor<4x5xf32>) -> tensor<2x5xf32>\n  return %0 : tensor<2x5xf32>\n}\n",
       "2:3: stablehlo.dot_general: contracting dimension sizes differ: lhs tensor<2x3xf32> dim 1 "
       "= 3, rhs tensor<4x5xf32> dim 0 = 4"},
      {"func.func @main(%a: tensor<2xf32>) -> tensor<3xf32> {\n"
       "  %0 = \"stablehlo.add\"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>\n"
       "  return %0 : tensor<3xf32>\n}\n",
       "stablehlo.add: result 0 has type tensor<3xf32>, expected tensor<2xf32>"},
      {"func.func @main(%a: tensor<2x3xf32>) -> tensor<3x3xf32> {\n"
       "  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x3xf32>\n"
       "  return %0 : tensor<3x3xf32>\n}\n",
       "stablehlo.transpose: result 0 has type tensor<3x3xf32>, expected tensor<3x2xf32>"},
      {"func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
       "  %0 = stablehlo.transpose %a, dims = [0, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
       "  return %0 : tensor<2x3xf32>\n}\n",
       "permutation has duplicate dimension 0"},
      {"func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
       "  %0 = stablehlo.reshape %a : (tensor<2x3xf32>) -> tensor<7xf32>\n"
       "  return %a : tensor<2x3xf32>\n}\n",
       "stablehlo.reshape: element counts differ"},
      {"func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xi32> {\n"
       "  return %a : tensor<2x3xf32>\n}\n",
       "func.return: operand 0 type tensor<2x3xf32> does not match @main result type "
       "tensor<2x3xi32>"},
      {"func.func @main(%a: tensor<4xi32>) -> tensor<4xi1> {\n"
       "  %0 = stablehlo.compare LT, %a, %a, FLOAT : (tensor<4xi32>, tensor<4xi32>) -> "
       "tensor<4xi1>\n  return %0 : tensor<4xi1>\n}\n",
       "compare_type FLOAT does not fit operand type tensor<4xi32>"},
      {"func.func @main(%a: tensor<4xf32>) -> tensor<f32> {\n"
       "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
       "  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : "
       "(tensor<4xf32>, tensor<f32>) -> tensor<f32>\n  return %0 : tensor<f32>\n}\n",
       "stablehlo.reduce: dimensions[0] = 1 is out of range [0, 1)"},
      {"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = stablehlo.slice %a [1:5] : (tensor<4xf32>) -> tensor<4xf32>\n"
       "  return %0 : tensor<4xf32>\n}\n",
       "stablehlo.slice: dim 0: need 0 <= start 1 <= limit 5 <= size 4"},
      {"func.func @main(%a: tensor<i32>) -> tensor<i32> {\n"
       "  %0 = stablehlo.while(%it = %a) : tensor<i32>\n"
       "  cond {\n    stablehlo.return %it : tensor<i32>\n  } do {\n"
       "    stablehlo.return %it : tensor<i32>\n  }\n  return %0 : tensor<i32>\n}\n",
       "stablehlo.while: region 0 returns type tensor<i32> at position 0, expected tensor<i1>"},
      {"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = func.call @g(%a) : (tensor<4xf32>) -> tensor<4xf32>\n"
       "  return %0 : tensor<4xf32>\n}\n"
       "func.func private @g(%x: tensor<4xi32>) -> tensor<4xi32> {\n"
       "  return %x : tensor<4xi32>\n}\n",
       "func.call: operand 0 type tensor<4xf32> does not match @g argument type tensor<4xi32>"},
      {"func.func @main(%a: tensor<3xf32>) -> tensor<2x3xf32> {\n"
       "  %0 = stablehlo.broadcast_in_dim %a, dims = [0] : (tensor<3xf32>) -> tensor<2x3xf32>\n"
       "  return %0 : tensor<2x3xf32>\n}\n",
       "stablehlo.broadcast_in_dim: operand tensor<3xf32> dim 0 = 3 must be 1 or equal result "
       "tensor<2x3xf32> dim 0 = 2"},
      {"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = stablehlo.composite \"foo\" %a {decomposition = @g} : (tensor<4xf32>) -> "
       "tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"
       "func.func private @g(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  return %x : tensor<4xf32>\n}\n",
       "stablehlo.composite: name \"foo\" must be a namespaced op name"},
      {"func.func @main(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {\n"
       "  %0 = \"stablehlo.dot_general\"(%a, %a) {dot_dimension_numbers = #stablehlo.dot<"
       "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = "
       "[#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>, #stablehlo<precision "
       "HIGH>]} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>\n"
       "  return %0 : tensor<2x2xf32>\n}\n",
       "precision_config must be a list of at most 2 precisions"},
      {"func.func @main(%a: tensor<4x2xf32>, %z: tensor<f32>) -> tensor<4x2xf32> {\n"
       "  %0 = \"stablehlo.reduce_window\"(%a, %z) ({\n"
       "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
       "    %s = stablehlo.add %x, %y : tensor<f32>\n"
       "    stablehlo.return %s : tensor<f32>\n"
       "  }) {window_dimensions = array<i64: 1, 1>, padding = dense<0> : tensor<4x1xi64>} : "
       "(tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>\n"
       "  return %0 : tensor<4x2xf32>\n}\n",
       "padding has 4 entries or the wrong shape, expected 2 x 2"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mx_module_t *m = NULL;
    mx_status_t st = mx_hlo_parse(cases[i].text, strlen(cases[i].text), NULL, &m);
    CHECK_MSG(st == MX_ERR_VERIFY && strstr(mx_error_message(), cases[i].msg) != NULL,
              "case %zu: %s: '%s'", i, mx_status_name(st), mx_error_message());
    mx_module_destroy(m);
  }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// Parses every case without verification, then verifies; a case the parser accepts but the
// verifier rejects is a verifier bug (the suite's cases are valid StableHLO, except the
// documented error-expecting ones, which fail at run time, not at verification).
static void test_suite(void) {
  const char *shared = getenv("MX_SHARED");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/stablehlo-interpret", shared ? shared : "../shared");
  DIR *dp = opendir(dir);
  if (dp == NULL) {
    mx_test_skip("%s not found (set MX_SHARED)", dir);
    return;
  }
  char **names = NULL;
  int n_names = 0;
  struct dirent *e;
  while ((e = readdir(dp)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len > 5 && strcmp(e->d_name + len - 5, ".mlir") == 0) {
      names = realloc(names, sizeof(char *) * (size_t)(n_names + 1));
      names[n_names++] = strdup(e->d_name);
    }
  }
  closedir(dp);
  qsort(names, (size_t)n_names, sizeof(char *), cmp_str);
  int n_cases = 0, n_parsed = 0, n_verified = 0;
  for (int i = 0; i < n_names; i++) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    char *text;
    size_t len;
    if (mx_read_file(path, &text, &len) != MX_OK) continue;
    mx_text_case_t *cases;
    int32_t nc;
    if (mx_hlo_split_cases(text, len, &cases, &nc) == MX_OK) {
      for (int32_t c = 0; c < nc; c++) {
        mx_parse_opts_t opts = {names[i], cases[c].first_line, true};
        mx_module_t *m = NULL;
        n_cases++;
        if (mx_hlo_parse(cases[c].text, cases[c].len, &opts, &m) != MX_OK) continue;
        n_parsed++;
        if (mx_hlo_verify_module(m) == MX_OK) {
          n_verified++;
        } else {
          fprintf(stderr, "%s (case at line %d): rejected: %s\n", names[i], cases[c].first_line,
                  mx_error_message());
        }
        mx_module_destroy(m);
      }
      free(cases);
    }
    free(text);
  }
  for (int i = 0; i < n_names; i++) free(names[i]);
  free(names);
  printf("suite: %d cases, %d parsed, %d verified\n", n_cases, n_parsed, n_verified);
  CHECK(n_parsed > 0);
  CHECK_MSG(n_verified == n_parsed, "%d parsed cases rejected by the verifier",
            n_parsed - n_verified);
}

int main(void) {
  test_corruptions();
  test_parsed_errors();
  test_suite();
  return mx_test_finish();
}
