// Robustness of the interpreter driver and data-movement kernels on unverified modules: random
// operand/result shapes and random (often invalid) attributes must give MX_OK or a clean error,
// never a crash or an out-of-bounds access (run this under MX_SANITIZE=ON to see the latter).
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"
#include "mx_test.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint32_t rnd(uint32_t n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return n ? (uint32_t)(rng_state % n) : 0;
}

static const mx_elem_type_t kElems[] = {MX_ELEM_I1,  MX_ELEM_I8,  MX_ELEM_I64, MX_ELEM_UI4,
                                        MX_ELEM_F16, MX_ELEM_F32, MX_ELEM_C64, MX_ELEM_C128};

static mx_type_t rand_type(mx_elem_type_t et) {
  int64_t d[MX_MAX_RANK];
  int32_t r = (int32_t)rnd(4);
  for (int32_t i = 0; i < r; i++) d[i] = rnd(4);
  return mx_type_tensor(et, r, d);
}

static mx_attr_t rand_ints(mx_module_t *m, int32_t rank) {
  int64_t v[MX_MAX_RANK + 1];
  int32_t n = rank + (int32_t)rnd(3) - 1;
  if (n < 0) n = 0;
  for (int32_t i = 0; i < n; i++) v[i] = (int64_t)rnd(8) - 3;
  return mx_attr_i64s(m, v, n);
}

// Constant of type t with small integer contents.
static int32_t rand_const(mx_func_t *f, mx_type_t t) {
  mx_tensor_t x;
  if (mx_tensor_alloc(&x, &t)) return -1;
  int64_t n = mx_type_numel(&t);
  for (int64_t i = 0; i < n; i++) {
    if (mx_elem_is_float(t.elem) || mx_elem_is_complex(t.elem))
      mx_tensor_set_f64(&x, i, (double)rnd(5));
    else
      mx_tensor_set_i64(&x, i, (int64_t)rnd(9) - 4);
  }
  mx_op_t *op = mx_block_append_op(f, f->body, MX_OP_CONSTANT, NULL, NULL, 0, &t, 1);
  mx_op_set_attr(f, op, "value", mx_attr_dense(f->module, &x));
  mx_tensor_free(&x);
  return op->results[0];
}

static const mx_opcode_t kOps[] = {
    MX_OP_IOTA,
    MX_OP_BROADCAST_IN_DIM,
    MX_OP_RESHAPE,
    MX_OP_TRANSPOSE,
    MX_OP_SLICE,
    MX_OP_DYNAMIC_SLICE,
    MX_OP_DYNAMIC_UPDATE_SLICE,
    MX_OP_CONCATENATE,
    MX_OP_PAD,
    MX_OP_REVERSE,
    MX_OP_GET_DIMENSION_SIZE,
};

static void fuzz_one(int iter, int *n_ok, int *n_err) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = NULL;
  mx_func_create(m, "main", false, &f);
  mx_opcode_t code = kOps[rnd(sizeof kOps / sizeof kOps[0])];
  mx_elem_type_t et = kElems[rnd(sizeof kElems / sizeof kElems[0])];
  mx_type_t in_t = rand_type(et);
  mx_type_t out_t = rnd(4) ? rand_type(et) : rand_type(kElems[rnd(8)]);
  int32_t ops[6];
  int32_t n_ops = 0;
  if (code != MX_OP_IOTA) ops[n_ops++] = rand_const(f, in_t);
  switch (code) {
    case MX_OP_DYNAMIC_UPDATE_SLICE:
      ops[n_ops++] = rand_const(f, rand_type(et));
      /* fall through */
    case MX_OP_DYNAMIC_SLICE: {
      int32_t k = in_t.rank + (int32_t)rnd(2) - (rnd(4) == 0);
      for (int32_t i = 0; i < k && n_ops < 6; i++)
        ops[n_ops++] = rand_const(f, mx_type_scalar(rnd(2) ? MX_ELEM_I32 : MX_ELEM_UI8));
      break;
    }
    case MX_OP_CONCATENATE:
      ops[n_ops++] = rand_const(f, rand_type(et));
      break;
    case MX_OP_PAD:
      ops[n_ops++] = rand_const(f, rnd(4) ? mx_type_scalar(et) : rand_type(et));
      break;
    default:
      break;
  }
  if (code == MX_OP_GET_DIMENSION_SIZE && rnd(2)) out_t = mx_type_scalar(MX_ELEM_I32);
  mx_op_t *op = mx_block_append_op(f, f->body, code, NULL, ops, n_ops, &out_t, 1);
  int32_t r = in_t.rank;
  const char *list_attrs[] = {"broadcast_dimensions",
                              "permutation",
                              "start_indices",
                              "limit_indices",
                              "strides",
                              "slice_sizes",
                              "edge_padding_low",
                              "edge_padding_high",
                              "interior_padding",
                              "dimensions"};
  for (size_t i = 0; i < sizeof list_attrs / sizeof list_attrs[0]; i++)
    if (rnd(4)) mx_op_set_attr(f, op, list_attrs[i], rand_ints(m, rnd(3) ? r : out_t.rank));
  if (rnd(4))
    mx_op_set_attr(f, op, "iota_dimension", mx_attr_int((int64_t)rnd(5) - 1, MX_ELEM_I64));
  if (rnd(4)) mx_op_set_attr(f, op, "dimension", mx_attr_int((int64_t)rnd(5) - 1, MX_ELEM_I64));
  mx_block_append_op(f, f->body, MX_OP_FUNC_RETURN, NULL, NULL, 0, NULL, 0);
  mx_status_t st = mx_interp_run(m, f, NULL, 0, NULL, NULL);
  CHECK_MSG(st == MX_OK || st == MX_ERR_RUNTIME, "iter %d op %s: status %d: %s", iter,
            mx_opcode_name(code), (int)st, mx_error_message());
  if (st == MX_OK)
    (*n_ok)++;
  else
    (*n_err)++;
  mx_module_destroy(m);
}

// Random nesting of if/case/while regions returning values from enclosing blocks.
static int32_t build_nested(mx_func_t *f, mx_block_t *b, int32_t outer, int depth) {
  mx_type_t s = mx_type_scalar(MX_ELEM_I64);
  if (depth == 0) return outer;
  int kind = (int)rnd(3);
  if (kind == 0 || kind == 1) {
    int64_t k = (int64_t)rnd(5) - 2;
    mx_type_t it = mx_type_scalar(kind == 0 ? MX_ELEM_I1 : MX_ELEM_I32);
    mx_tensor_t x;
    mx_tensor_alloc(&x, &it);
    mx_tensor_set_i64(&x, 0, k);
    mx_op_t *c = mx_block_append_op(f, b, MX_OP_CONSTANT, NULL, NULL, 0, &it, 1);
    mx_op_set_attr(f, c, "value", mx_attr_dense(f->module, &x));
    mx_tensor_free(&x);
    mx_op_t *op =
        mx_block_append_op(f, b, kind == 0 ? MX_OP_IF : MX_OP_CASE, NULL, &c->results[0], 1, &s, 1);
    int nb = kind == 0 ? 2 : 1 + (int)rnd(3);
    for (int i = 0; i < nb; i++) {
      mx_block_t *rb = mx_block_create(f);
      int32_t v = build_nested(f, rb, outer, depth - 1);
      mx_block_append_op(f, rb, MX_OP_RETURN, NULL, &v, 1, NULL, 0);
      mx_op_add_region(f, op, rb);
    }
    return op->results[0];
  }
  // while with a false condition: the body never runs, result = operand.
  mx_op_t *w = mx_block_append_op(f, b, MX_OP_WHILE, NULL, &outer, 1, &s, 1);
  mx_block_t *cond = mx_block_create(f), *body = mx_block_create(f);
  int32_t ca, ba;
  mx_block_add_arg(f, cond, &s, NULL, &ca);
  mx_block_add_arg(f, body, &s, NULL, &ba);
  mx_type_t bt = mx_type_scalar(MX_ELEM_I1);
  mx_tensor_t x;
  mx_tensor_alloc(&x, &bt);
  mx_op_t *c = mx_block_append_op(f, cond, MX_OP_CONSTANT, NULL, NULL, 0, &bt, 1);
  mx_op_set_attr(f, c, "value", mx_attr_dense(f->module, &x));
  mx_tensor_free(&x);
  mx_block_append_op(f, cond, MX_OP_RETURN, NULL, &c->results[0], 1, NULL, 0);
  int32_t v = build_nested(f, body, ba, depth - 1);
  mx_block_append_op(f, body, MX_OP_RETURN, NULL, &v, 1, NULL, 0);
  mx_op_add_region(f, w, cond);
  mx_op_add_region(f, w, body);
  return w->results[0];
}

static void nested_regions(int iter) {
  mx_module_t *m = mx_module_create(NULL);
  mx_func_t *f = NULL;
  mx_func_create(m, "main", false, &f);
  mx_type_t s = mx_type_scalar(MX_ELEM_I64);
  mx_tensor_t x;
  mx_tensor_alloc(&x, &s);
  mx_tensor_set_i64(&x, 0, 1234);
  mx_op_t *c = mx_block_append_op(f, f->body, MX_OP_CONSTANT, NULL, NULL, 0, &s, 1);
  mx_op_set_attr(f, c, "value", mx_attr_dense(m, &x));
  int32_t v = build_nested(f, f->body, c->results[0], 1 + (int)rnd(5));
  mx_func_set_result_types(f, &s, 1);
  mx_block_append_op(f, f->body, MX_OP_FUNC_RETURN, NULL, &v, 1, NULL, 0);
  mx_tensor_t r;
  mx_status_t st = mx_interp_run(m, f, NULL, 0, &r, NULL);
  CHECK_MSG(st == MX_OK, "nested %d: %s", iter, mx_error_message());
  if (st == MX_OK) {
    CHECK(mx_tensor_get_i64(&r, 0) == 1234);
    mx_tensor_free(&r);
  }
  mx_tensor_free(&x);
  mx_module_destroy(m);
}

int main(void) {
  int n_ok = 0, n_err = 0;
  for (int i = 0; i < 3000; i++) fuzz_one(i, &n_ok, &n_err);
  printf("random data-movement ops: %d ran, %d rejected\n", n_ok, n_err);
  CHECK(n_ok > 50);  // the generator must also produce valid ops
  for (int i = 0; i < 200; i++) nested_regions(i);
  return mx_test_finish();
}
