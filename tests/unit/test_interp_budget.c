// The interpreter's execution budget (mx_interp_opts_t.max_work): a loop whose work exceeds it
// fails with MX_ERR_RUNTIME and a message naming the limit; the same module runs to the right
// result with no budget or a sufficient one; a dot_general is charged for its contraction.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"
#include "mx_test.h"

// Sums 0..n-1 in a while loop: 1000 iterations of ~8 small ops each.
static const char kLoop[] =
    "func.func @main() -> tensor<i64> {\n"
    "  %n = stablehlo.constant dense<1000> : tensor<i64>\n"
    "  %z = stablehlo.constant dense<0> : tensor<i64>\n"
    "  %one = stablehlo.constant dense<1> : tensor<i64>\n"
    "  %r:2 = stablehlo.while(%i = %z, %s = %z) : tensor<i64>, tensor<i64>\n"
    "    cond {\n"
    "      %c = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
    "      stablehlo.return %c : tensor<i1>\n"
    "    } do {\n"
    "      %s2 = stablehlo.add %s, %i : tensor<i64>\n"
    "      %i2 = stablehlo.add %i, %one : tensor<i64>\n"
    "      stablehlo.return %i2, %s2 : tensor<i64>, tensor<i64>\n"
    "    }\n"
    "  return %r#1 : tensor<i64>\n"
    "}\n";

// [64 x 256] . [256 x 64]: 4096 outputs, each a 256-long contraction (~1M multiply-adds).
static const char kDot[] =
    "func.func @main(%a: tensor<64x256xf32>, %b: tensor<256x64xf32>) -> tensor<64x64xf32> {\n"
    "  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] :"
    " (tensor<64x256xf32>, tensor<256x64xf32>) -> tensor<64x64xf32>\n"
    "  return %d : tensor<64x64xf32>\n"
    "}\n";

static mx_module_t *parse(const char *text) {
  mx_module_t *m = NULL;
  mx_parse_opts_t po = {.filename = "budget.mlir"};
  CHECK_OK(mx_hlo_parse(text, strlen(text), &po, &m));
  return m;
}

static void test_loop(void) {
  mx_module_t *m = parse(kLoop);
  if (!m) return;
  const mx_func_t *f = mx_module_entry(m);
  mx_tensor_t r;
  memset(&r, 0, sizeof r);
  CHECK_OK(mx_interp_run(m, f, NULL, 0, &r, NULL));
  CHECK(r.data && mx_tensor_get_i64(&r, 0) == 499500);
  mx_tensor_free(&r);

  mx_interp_opts_t o = {.max_work = 1000};
  memset(&r, 0, sizeof r);
  mx_status_t st = mx_interp_run(m, f, NULL, 0, &r, &o);
  CHECK(st == MX_ERR_RUNTIME);
  CHECK_MSG(strstr(mx_error_message(),
                   "execution budget exceeded: more than 1000 element "
                   "operations") != NULL,
            "%s", mx_error_message());
  CHECK(r.data == NULL);
  mx_tensor_free(&r);

  o.max_work = 1000000;
  memset(&r, 0, sizeof r);
  CHECK_OK(mx_interp_run(m, f, NULL, 0, &r, &o));
  CHECK(r.data && mx_tensor_get_i64(&r, 0) == 499500);
  mx_tensor_free(&r);
  mx_module_destroy(m);
}

static void test_dot(void) {
  mx_module_t *m = parse(kDot);
  if (!m) return;
  const mx_func_t *f = mx_module_entry(m);
  mx_tensor_t args[2], r;
  int64_t da[2] = {64, 256}, db[2] = {256, 64};
  mx_type_t ta = mx_type_tensor(MX_ELEM_F32, 2, da), tb = mx_type_tensor(MX_ELEM_F32, 2, db);
  CHECK_OK(mx_tensor_alloc(&args[0], &ta));
  CHECK_OK(mx_tensor_alloc(&args[1], &tb));
  // Operands and result are ~37K elements: a budget counting only those would let it pass.
  mx_interp_opts_t o = {.max_work = 500000};
  memset(&r, 0, sizeof r);
  CHECK(mx_interp_run(m, f, args, 2, &r, &o) == MX_ERR_RUNTIME);
  mx_tensor_free(&r);
  o.max_work = 2000000;
  memset(&r, 0, sizeof r);
  CHECK_OK(mx_interp_run(m, f, args, 2, &r, &o));
  mx_tensor_free(&r);
  mx_tensor_free(&args[0]);
  mx_tensor_free(&args[1]);
  mx_module_destroy(m);
}

int main(void) {
  test_loop();
  test_dot();
  return mx_test_finish();
}
