// Reference interpreter driver: op dispatch, control flow, calls and tuples. Values and
// environments live in interp_value.c, the check dialect in interp_check.c, the dynamic_* ops in
// interp_dynamic.c, and the kernels of the data-carrying ops in interp_elementwise.c,
// interp_shape.c and interp_compute.c (which opcode goes where: interp_kernels.c).
//
// Execution model: one environment per function invocation, indexed by value id. Value ids are
// unique per function including nested regions, so a region body simply reads the values of its
// enclosing blocks from the same environment. Values defined inside a block are released when
// the block finishes (after its results have been moved or copied out), so a while loop or a
// reduce body does not accumulate memory.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/interp_budget.h"
#include "hlo/interp_chlo.h"
#include "hlo/interp_internal.h"
#include "hlo/interp_parallel.h"
#include "hlo/interp_quant.h"

#define MX_INTERP_DEFAULT_MAX_WHILE 100000000LL
#define MX_INTERP_DEFAULT_MAX_BYTES ((size_t)4 << 30)
// Nested calls (func.call, composite) allowed before MX_ERR_RUNTIME; bounds C stack use.
#define MX_INTERP_MAX_CALL_DEPTH 200

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

// Adds "<op name> (@func, line L:C): " context to an error, once: the innermost failing op
// names the place, enclosing ops (call, while, reduce, ...) add nothing. "unsupported: ..."
// messages keep their documented prefix.
static mx_status_t op_error(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                            mx_status_t st) {
  if (st == MX_OK || st == MX_ERR_UNSUPPORTED || ip->err_located) return st;
  ip->err_located = true;
  const char *nm = op->name ? op->name : mx_opcode_name(op->code);
  const char *fn = f && f->name ? f->name : "?";
  if (op->line > 0)
    return mx_error_prefix(st, "%s (in @%s, line %d:%d)", nm, fn, (int)op->line, (int)op->col);
  return mx_error_prefix(st, "%s (in @%s)", nm, fn);
}

mx_status_t mx_interp_unsupported(const mx_op_t *op) {
  const char *nm = op->name ? op->name : mx_opcode_name(op->code);
  if (op->line > 0)
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s (line %d:%d)", nm, (int)op->line,
                        (int)op->col);
  return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s", nm);
}

// ---------------------------------------------------------------------------------------------
// Blocks and calls
// ---------------------------------------------------------------------------------------------

static mx_status_t exec_op(mx_interp_t *ip, mx_env_t *e, const mx_op_t *op);

static bool appears_after(const mx_op_t *term, int32_t i) {
  for (int32_t j = i + 1; j < term->n_operands; j++)
    if (term->operands[j] == term->operands[i]) return true;
  return false;
}

// Releases every value defined by an op directly in `blk` and unbinds the block arguments.
static void block_release(mx_env_t *e, const mx_block_t *blk) {
  for (int32_t i = 0; i < blk->n_ops; i++) {
    const mx_op_t *op = blk->ops[i];
    for (int32_t r = 0; r < op->n_results; r++) {
      int32_t id = op->results[r];
      if (id >= 0 && id < e->n) {
        mx_interp_env_clear_slot(e, id);
        e->local[id] = 0;
      }
    }
  }
  for (int32_t i = 0; i < blk->n_args; i++) {
    int32_t id = blk->args[i];
    if (id >= 0 && id < e->n) mx_interp_env_clear_slot(e, id);
  }
}

// The on_op hook (mx_interp_opts_t) for one executed op of the entry function's body.
static void report_op(mx_interp_t *ip, const mx_env_t *e, const mx_op_t *op) {
  const mx_tensor_t *small[8] = {0};
  const mx_tensor_t **res = small;
  if (op->n_results > 8) {
    res = calloc((size_t)op->n_results, sizeof *res);
    if (!res) return;
  }
  bool ok = true;
  for (int32_t r = 0; r < op->n_results && ok; r++)
    ok = mx_interp_env_get(e, op->results[r], &res[r]) == MX_OK;
  if (ok) ip->opts->on_op(ip->opts->on_op_user, e->f, op, res);
  if (res != small) free(res);
}

// Runs `blk` in environment `e` with borrowed arguments; fills `results` (owned, n_results).
static mx_status_t run_block_env(mx_interp_t *ip, mx_env_t *e, const mx_block_t *blk,
                                 const mx_tensor_t *const *args, int32_t n_args,
                                 mx_tensor_t *results, int32_t n_results) {
  for (int32_t i = 0; i < n_results; i++) memset(&results[i], 0, sizeof results[i]);
  if (!blk || blk->n_ops < 0 || (blk->n_ops && !blk->ops) || (blk->n_args && !blk->args))
    return mx_error_set(MX_ERR_RUNTIME, "malformed region");
  if (n_args != blk->n_args)
    return mx_error_set(MX_ERR_RUNTIME, "region expects %d arguments, got %d", (int)blk->n_args,
                        (int)n_args);
  mx_status_t st = MX_OK;
  for (int32_t i = 0; i < n_args && !st; i++) {
    int32_t id = blk->args[i];
    st = mx_interp_env_check_id(e, id);
    if (st) break;
    const mx_type_t *want = &e->f->values[id].type;
    if (!mx_interp_value_type_equal(want, &args[i]->type)) {
      char b1[96], b2[96];
      st = mx_error_set(MX_ERR_RUNTIME, "region argument %d has type %s, expected %s", (int)i,
                        mx_type_str(&args[i]->type, b1, sizeof b1),
                        mx_type_str(want, b2, sizeof b2));
      break;
    }
    st = mx_interp_env_borrow(e, id, args[i]);
  }
  const mx_op_t *term = NULL;
  for (int32_t i = 0; i < blk->n_ops && !st; i++) {
    const mx_op_t *op = blk->ops[i];
    if (mx_opcode_flags(op->code) & MX_OPF_TERMINATOR) {
      term = op;
      break;
    }
    st = exec_op(ip, e, op);
    if (!st && ip->opts && ip->opts->on_op && blk == ip->on_op_block) report_op(ip, e, op);
  }
  if (!st) {
    int32_t n_term = term ? term->n_operands : 0;
    if (n_term != n_results)
      st = mx_error_set(MX_ERR_RUNTIME, "region returns %d values, expected %d", (int)n_term,
                        (int)n_results);
  }
  if (!st && term) {
    // Mark values local to this block: those can be moved out instead of copied.
    for (int32_t i = 0; i < blk->n_ops; i++)
      for (int32_t r = 0; r < blk->ops[i]->n_results; r++) {
        int32_t id = blk->ops[i]->results[r];
        if (id >= 0 && id < e->n) e->local[id] = 1;
      }
    for (int32_t i = 0; i < term->n_operands && !st; i++) {
      int32_t id = term->operands[i];
      const mx_tensor_t *v = NULL;
      st = mx_interp_env_get(e, id, &v);
      if (st) break;
      if (e->local[id] && e->state[id] == ENV_OWNED && !appears_after(term, i)) {
        results[i] = e->vals[id];
        memset(&e->vals[id], 0, sizeof e->vals[id]);
        e->state[id] = ENV_EMPTY;
      } else {
        st = mx_interp_value_clone(&results[i], v);
      }
    }
    if (st) st = op_error(ip, e->f, term, st);
  }
  block_release(e, blk);
  if (st) mx_interp_values_free(results, n_results);
  return st;
}

mx_status_t mx_interp_run_block(mx_interp_t *ip, const mx_func_t *f, const mx_block_t *blk,
                                const mx_tensor_t *args, int32_t n_args, mx_tensor_t *results,
                                int32_t n_results) {
  if (!ip || !f || !blk || n_args < 0 || n_results < 0 || (n_args && !args) ||
      (n_results && !results))
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_interp_run_block: invalid arguments");
  const mx_tensor_t *small[8] = {0};
  const mx_tensor_t **ptrs = small;
  if (n_args > 8) {
    ptrs = malloc((size_t)n_args * sizeof *ptrs);
    if (!ptrs) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; i < n_args; i++) ptrs[i] = &args[i];
  mx_status_t st;
  if (ip->env && ip->env->f == f) {
    st = run_block_env(ip, ip->env, blk, ptrs, n_args, results, n_results);
  } else {
    // Called outside a running invocation of `f`: give the block its own environment.
    mx_env_t env;
    st = mx_interp_env_init(&env, f);
    if (!st) {
      env.prev = ip->env;
      ip->env = &env;
      st = run_block_env(ip, &env, blk, ptrs, n_args, results, n_results);
      ip->env = env.prev;
      mx_interp_env_destroy(&env);
    }
  }
  if (ptrs != small) free(ptrs);
  return st;
}

// Calls `f` with borrowed arguments; results (f->n_results) are owned by the caller.
static mx_status_t call_func(mx_interp_t *ip, const mx_func_t *f, const mx_tensor_t *const *args,
                             int32_t n_args, mx_tensor_t *results, int32_t n_results) {
  if (!f->body || f->body->n_ops == 0)
    return mx_error_set(MX_ERR_RUNTIME, "function @%s is a declaration (no body)", f->name);
  if (n_results != f->n_results)
    return mx_error_set(MX_ERR_RUNTIME, "call to @%s expects %d results, function has %d", f->name,
                        (int)n_results, (int)f->n_results);
  if (ip->depth >= MX_INTERP_MAX_CALL_DEPTH)
    return mx_error_set(MX_ERR_RUNTIME, "call depth limit (%d) exceeded calling @%s",
                        MX_INTERP_MAX_CALL_DEPTH, f->name);
  mx_env_t env;
  mx_status_t st = mx_interp_env_init(&env, f);
  if (st) return st;
  env.prev = ip->env;
  ip->env = &env;
  ip->depth++;
  st = run_block_env(ip, &env, f->body, args, n_args, results, n_results);
  ip->depth--;
  ip->env = env.prev;
  mx_interp_env_destroy(&env);
  if (st) return st;
  for (int32_t i = 0; i < n_results; i++) {
    if (!mx_interp_value_type_equal(&results[i].type, &f->result_types[i])) {
      char b1[96], b2[96];
      st = mx_error_set(MX_ERR_RUNTIME, "@%s returns %s as result %d, declared %s", f->name,
                        mx_type_str(&results[i].type, b1, sizeof b1), (int)i,
                        mx_type_str(&f->result_types[i], b2, sizeof b2));
      mx_interp_values_free(results, n_results);
      return st;
    }
  }
  return MX_OK;
}

// ---------------------------------------------------------------------------------------------
// Op execution
// ---------------------------------------------------------------------------------------------

static bool is_shape_group(mx_opcode_t c) {
  return mx_interp_kernel_lookup(c).fn == mx_interp_shape;
}

// Checks that region results have the op's declared result types.
static mx_status_t check_result_types(const mx_func_t *f, const mx_op_t *op,
                                      const mx_tensor_t *out) {
  for (int32_t i = 0; i < op->n_results; i++) {
    const mx_type_t *want = &f->values[op->results[i]].type;
    if (!mx_interp_value_type_equal(want, &out[i].type)) {
      char b1[96], b2[96];
      return mx_error_set(MX_ERR_RUNTIME, "result %d has type %s, op declares %s", (int)i,
                          mx_type_str(&out[i].type, b1, sizeof b1),
                          mx_type_str(want, b2, sizeof b2));
    }
  }
  return MX_OK;
}

static bool tensor_is_scalar_int(const mx_tensor_t *t) {
  return t->type.kind == MX_TYPE_TENSOR && t->type.rank == 0 &&
         (mx_elem_is_int(t->type.elem) || mx_elem_is_bool(t->type.elem)) && t->data;
}

static mx_status_t exec_while(mx_interp_t *ip, mx_env_t *e, const mx_op_t *op,
                              const mx_tensor_t *const *in, mx_tensor_t *out) {
  if (op->n_regions != 2) return mx_error_set(MX_ERR_RUNTIME, "while needs cond and body regions");
  int32_t n = op->n_operands;
  if (op->n_results != n)
    return mx_error_set(MX_ERR_RUNTIME, "while has %d operands but %d results", (int)n,
                        (int)op->n_results);
  const mx_block_t *cond = op->regions[0], *body = op->regions[1];
  mx_tensor_t *cur = calloc((size_t)(n > 0 ? n : 1), sizeof *cur);
  const mx_tensor_t **ptrs = calloc((size_t)(n > 0 ? n : 1), sizeof *ptrs);
  mx_status_t st = MX_OK;
  if (!cur || !ptrs) st = mx_error_set(MX_ERR_NOMEM, "out of memory in while");
  for (int32_t i = 0; i < n && !st; i++) st = mx_interp_value_clone(&cur[i], in[i]);
  for (int64_t iter = 0; !st; iter++) {
    for (int32_t i = 0; i < n; i++) ptrs[i] = &cur[i];
    mx_tensor_t c;
    st = run_block_env(ip, e, cond, ptrs, n, &c, 1);
    if (st) break;
    bool go = false;
    if (c.type.kind == MX_TYPE_TENSOR && c.type.elem == MX_ELEM_I1 && c.type.rank == 0 && c.data)
      go = c.data[0] != 0;
    else
      st = mx_error_set(MX_ERR_RUNTIME, "while condition must return tensor<i1>");
    mx_interp_value_free(&c);
    if (st || !go) break;
    if (iter >= ip->max_while) {
      st = mx_error_set(MX_ERR_RUNTIME, "while loop exceeded the iteration limit (%" PRId64 ")",
                        ip->max_while);
      break;
    }
    mx_tensor_t *next = calloc((size_t)(n > 0 ? n : 1), sizeof *next);
    if (!next) {
      st = mx_error_set(MX_ERR_NOMEM, "out of memory in while");
      break;
    }
    st = run_block_env(ip, e, body, ptrs, n, next, n);
    mx_interp_values_free(cur, n);
    free(cur);
    cur = next;
  }
  if (!st) {
    for (int32_t i = 0; i < n; i++) out[i] = cur[i];
    free(cur);
    cur = NULL;
  }
  if (cur) {
    mx_interp_values_free(cur, n);
    free(cur);
  }
  free(ptrs);
  return st;
}

static mx_status_t find_callee(const mx_interp_t *ip, const mx_op_t *op, const char *attr,
                               const mx_func_t **out) {
  const mx_attr_t *a = mx_op_attr(op, attr);
  if (!a || (a->kind != MX_ATTR_SYMBOL && a->kind != MX_ATTR_STRING) || !a->s)
    return mx_error_set(MX_ERR_RUNTIME, "missing `%s` function symbol", attr);
  const mx_func_t *g = mx_module_find_func(ip->m, a->s);
  if (!g) return mx_error_set(MX_ERR_RUNTIME, "function @%s not found", a->s);
  *out = g;
  return MX_OK;
}

// Returns the check opcode a custom_call @check.expect_* stands for, or MX_OP_UNKNOWN.
static mx_opcode_t custom_call_check(const mx_op_t *op) {
  const mx_attr_t *a = mx_op_attr(op, "call_target_name");
  if (!a || !a->s) return MX_OP_UNKNOWN;
  static const struct {
    const char *name;
    mx_opcode_t code;
  } map[] = {
      {"check.expect_eq", MX_OP_CHECK_EXPECT_EQ},
      {"check.expect_eq_const", MX_OP_CHECK_EXPECT_EQ_CONST},
      {"check.expect_almost_eq", MX_OP_CHECK_EXPECT_ALMOST_EQ},
      {"check.expect_almost_eq_const", MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST},
      {"check.expect_close", MX_OP_CHECK_EXPECT_CLOSE},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(a->s, map[i].name) == 0) return map[i].code;
  return MX_OP_UNKNOWN;
}

// Kernel on quantized operands/results: ops that only move or reinterpret stored values run on
// the storage integers; arithmetic runs as the spec's dequantize_op_quantize; ops with bodies
// are not supported on quantized tensors.
static mx_status_t run_quantized(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 mx_interp_kernel_fn fn, const mx_tensor_t *const *in,
                                 mx_tensor_t *out) {
  if (op->code == MX_OP_BITCAST_CONVERT || op->code == MX_OP_GATHER || is_shape_group(op->code))
    return fn(ip, f, op, in, out);
  switch (op->code) {
    case MX_OP_DOT_GENERAL:
    case MX_OP_DOT:
    case MX_OP_CONVOLUTION:
    case MX_OP_TRIANGULAR_SOLVE:
      return mx_interp_dequantize_op_quantize(ip, f, op, fn, in, out);
    default:
      if (mx_interp_kernel_lookup(op->code).fn == mx_interp_elementwise)
        return mx_interp_dequantize_op_quantize(ip, f, op, fn, in, out);
      break;
  }
  const char *nm = op->name ? op->name : mx_opcode_name(op->code);
  return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s on quantized tensors", nm);
}

// Runs a tensor kernel: operands and results must be tensors; results are allocated (zeroed)
// with the declared types before the kernel fills them, and freed again if it fails.
// `quant_aware` kernels see quantized tensors as they are; others go through run_quantized.
static mx_status_t run_kernel(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                              mx_interp_kernel_fn fn, const mx_tensor_t *const *in,
                              mx_tensor_t *out, bool quant_aware) {
  for (int32_t i = 0; i < op->n_operands; i++)
    if (in[i]->type.kind != MX_TYPE_TENSOR)
      return mx_error_set(MX_ERR_RUNTIME, "operand %d is not a tensor", (int)i);
  mx_status_t st = mx_interp_alloc_results(ip, f, op, out);
  if (st) return st;
  for (int32_t i = 0; i < op->n_results; i++)
    if (out[i].type.kind != MX_TYPE_TENSOR) {
      mx_interp_values_free(out, op->n_results);
      return mx_error_set(MX_ERR_RUNTIME, "result %d is not a tensor", (int)i);
    }
  if (!quant_aware && mx_interp_op_is_quantized(op, in, out))
    st = run_quantized(ip, f, op, fn, in, out);
  else
    st = fn(ip, f, op, in, out);
  if (st) mx_interp_values_free(out, op->n_results);
  return st;
}

// Token ops: after_all (and the older create_token) join tokens; a token carries no data, so
// the result is just a fresh token.
static mx_status_t exec_token_join(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                   const mx_tensor_t *const *in, mx_tensor_t *out) {
  if (op->n_results != 1) return mx_error_set(MX_ERR_RUNTIME, "%s has one result", op->name);
  for (int32_t i = 0; i < op->n_operands; i++)
    if (in[i]->type.kind != MX_TYPE_TOKEN)
      return mx_error_set(MX_ERR_RUNTIME, "%s: operand %d is not a token", op->name, (int)i);
  mx_status_t st = mx_interp_alloc_results(ip, f, op, out);
  if (st) return st;
  if (out[0].type.kind != MX_TYPE_TOKEN) {
    mx_interp_values_free(out, 1);
    return mx_error_set(MX_ERR_RUNTIME, "%s: result is not a token", op->name);
  }
  return MX_OK;
}

// Ops without an opcode of their own, recognized by name (MX_OP_UNKNOWN from the parser).
static mx_status_t exec_named(mx_interp_t *ip, mx_env_t *e, const mx_op_t *op,
                              const mx_tensor_t *const *in, mx_tensor_t *out, bool *handled) {
  enum { K_TENSOR, K_QUANT, K_OTHER };
  static const struct {
    const char *name;
    int kind;
    mx_interp_kernel_fn fn;
  } table[] = {
      {"chlo.mulhi", K_TENSOR, mx_interp_chlo_mulhi},
      {"chlo.scan", K_TENSOR, mx_interp_chlo_scan},
      {"chlo.ragged_dot", K_TENSOR, mx_interp_compute},
      {"stablehlo.uniform_quantize", K_QUANT, mx_interp_uniform_quantize},
      {"stablehlo.uniform_dequantize", K_QUANT, mx_interp_uniform_dequantize},
      {"stablehlo.after_all", K_OTHER, exec_token_join},
      {"interpreter.probe", K_OTHER, mx_interp_exec_probe},
      {"check.expect_serialized_eq", K_OTHER, mx_interp_exec_serialized_eq},
      {"stablehlo.create_token", K_OTHER, exec_token_join},
      {"stablehlo.replica_id", K_OTHER, mx_interp_process_id},
      {"stablehlo.partition_id", K_OTHER, mx_interp_process_id},
      {"interpreter.run_parallel", K_OTHER, mx_interp_run_parallel},
      {"stablehlo.all_reduce", K_OTHER, mx_interp_collective},
      {"stablehlo.all_gather", K_OTHER, mx_interp_collective},
      {"stablehlo.all_to_all", K_OTHER, mx_interp_collective},
      {"stablehlo.reduce_scatter", K_OTHER, mx_interp_collective},
      {"stablehlo.collective_permute", K_OTHER, mx_interp_collective},
      {"stablehlo.collective_broadcast", K_OTHER, mx_interp_collective},
      {"stablehlo.collective_reduce", K_OTHER, mx_interp_collective},
      {"stablehlo.send", K_OTHER, mx_interp_channel_op},
      {"stablehlo.recv", K_OTHER, mx_interp_channel_op},
      {"stablehlo.infeed", K_OTHER, mx_interp_channel_op},
      {"stablehlo.outfeed", K_OTHER, mx_interp_channel_op},
  };
  *handled = false;
  if (!op->name) return MX_OK;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (strcmp(op->name, table[i].name) != 0) continue;
    *handled = true;
    if (table[i].kind != K_OTHER)
      return run_kernel(ip, e->f, op, table[i].fn, in, out, table[i].kind == K_QUANT);
    return table[i].fn(ip, e->f, op, in, out);
  }
  return MX_OK;
}

static mx_status_t exec_op_inner(mx_interp_t *ip, mx_env_t *e, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out) {
  const mx_func_t *f = e->f;
  mx_status_t st;
  switch (op->code) {
    case MX_OP_CONSTANT: {
      const mx_attr_t *v = mx_op_attr(op, "value");
      if (op->n_results != 1 || !v || v->kind != MX_ATTR_DENSE || !v->dense)
        return mx_error_set(MX_ERR_RUNTIME, "constant needs a dense `value`");
      const mx_type_t *rt = &f->values[op->results[0]].type;
      // A quantized constant holds its storage values (`dense<..> : tensor<..xi8>`).
      if (!mx_interp_value_type_equal(rt, &v->dense->type) &&
          !mx_interp_storage_type_equal(rt, &v->dense->type)) {
        char b1[96], b2[96];
        return mx_error_set(MX_ERR_RUNTIME, "constant value type %s differs from result type %s",
                            mx_type_str(&v->dense->type, b1, sizeof b1),
                            mx_type_str(rt, b2, sizeof b2));
      }
      size_t nb = 0;
      st = mx_interp_type_nbytes(ip, rt, &nb);
      if (st) return st;
      if (v->dense->nbytes >= nb) {
        st = mx_interp_value_clone(&out[0], v->dense);
        if (!st) out[0].type = *rt;  // plain storage data may stand for a quantized type
        return st;
      }
      // A dense attribute holding a single element is a splat.
      size_t es = mx_elem_size(rt->elem);
      if (rt->kind != MX_TYPE_TENSOR || v->dense->nbytes != es || !v->dense->data)
        return mx_error_set(MX_ERR_RUNTIME, "constant data is smaller than its type");
      st = mx_interp_value_alloc(ip, &out[0], rt);
      if (st) return st;
      for (size_t off = 0; off < nb; off += es) memcpy(out[0].data + off, v->dense->data, es);
      return MX_OK;
    }
    case MX_OP_OPTIMIZATION_BARRIER:
      if (op->n_results != op->n_operands)
        return mx_error_set(MX_ERR_RUNTIME, "operand and result counts differ");
      for (int32_t i = 0; i < op->n_operands; i++) {
        st = mx_interp_value_clone(&out[i], in[i]);
        if (st) {
          mx_interp_values_free(out, i);
          return st;
        }
      }
      if ((st = check_result_types(f, op, out)) != MX_OK) mx_interp_values_free(out, op->n_results);
      return st;
    case MX_OP_TUPLE: {
      if (op->n_results != 1) return mx_error_set(MX_ERR_RUNTIME, "tuple has one result");
      st = mx_interp_value_alloc(ip, &out[0], &f->values[op->results[0]].type);
      if (st) return st;
      if (out[0].type.kind != MX_TYPE_TUPLE || out[0].n_tuple != op->n_operands) {
        mx_interp_value_free(&out[0]);
        return mx_error_set(MX_ERR_RUNTIME, "tuple result type does not match its operands");
      }
      for (int32_t i = 0; i < op->n_operands; i++) {
        if (!mx_interp_value_type_equal(&out[0].tuple[i].type, &in[i]->type)) {
          mx_interp_value_free(&out[0]);
          return mx_error_set(MX_ERR_RUNTIME, "tuple element %d type mismatch", (int)i);
        }
        mx_interp_value_free(&out[0].tuple[i]);
        st = mx_interp_value_clone(&out[0].tuple[i], in[i]);
        if (st) {
          mx_interp_value_free(&out[0]);
          return st;
        }
      }
      return MX_OK;
    }
    case MX_OP_GET_TUPLE_ELEMENT: {
      const mx_attr_t *a = mx_op_attr(op, "index");
      if (op->n_operands != 1 || op->n_results != 1 || !a || a->kind != MX_ATTR_INT)
        return mx_error_set(MX_ERR_RUNTIME, "get_tuple_element needs a tuple and an `index`");
      if (in[0]->type.kind != MX_TYPE_TUPLE || a->i < 0 || a->i >= in[0]->n_tuple)
        return mx_error_set(MX_ERR_RUNTIME, "index %" PRId64 " out of range for tuple", a->i);
      st = mx_interp_value_clone(&out[0], &in[0]->tuple[a->i]);
      if (st) return st;
      if ((st = check_result_types(f, op, out)) != MX_OK) mx_interp_value_free(&out[0]);
      return st;
    }
    case MX_OP_FUNC_CALL:
    case MX_OP_COMPOSITE: {
      const mx_func_t *g = NULL;
      st = find_callee(ip, op, op->code == MX_OP_FUNC_CALL ? "callee" : "decomposition", &g);
      if (st) return st;
      st = call_func(ip, g, in, op->n_operands, out, op->n_results);
      if (st) return st;
      if ((st = check_result_types(f, op, out)) != MX_OK) mx_interp_values_free(out, op->n_results);
      return st;
    }
    case MX_OP_IF:
    case MX_OP_CASE: {
      if (op->n_operands != 1 || !tensor_is_scalar_int(in[0]))
        return mx_error_set(MX_ERR_RUNTIME, "needs one integer scalar operand");
      if (op->n_regions < 1) return mx_error_set(MX_ERR_RUNTIME, "needs regions");
      int64_t k;
      if (op->code == MX_OP_IF) {
        if (op->n_regions != 2) return mx_error_set(MX_ERR_RUNTIME, "if needs two regions");
        k = mx_tensor_get_i64(in[0], 0) != 0 ? 0 : 1;
      } else {
        k = mx_tensor_get_i64(in[0], 0);
        if (k < 0 || k >= op->n_regions) k = op->n_regions - 1;  // spec: default branch
      }
      st = run_block_env(ip, e, op->regions[k], NULL, 0, out, op->n_results);
      if (st) return st;
      if ((st = check_result_types(f, op, out)) != MX_OK) mx_interp_values_free(out, op->n_results);
      return st;
    }
    case MX_OP_WHILE:
      st = exec_while(ip, e, op, in, out);
      if (st) return st;
      if ((st = check_result_types(f, op, out)) != MX_OK) mx_interp_values_free(out, op->n_results);
      return st;
    case MX_OP_CHECK_EXPECT_EQ:
    case MX_OP_CHECK_EXPECT_EQ_CONST:
    case MX_OP_CHECK_EXPECT_ALMOST_EQ:
    case MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST:
    case MX_OP_CHECK_EXPECT_CLOSE: {
      bool jax = op->name && strcmp(op->name, "stablehlo.custom_call") == 0;
      return mx_interp_exec_check(ip, op, in, op->n_operands, mx_opcode_name(op->code), jax);
    }
    case MX_OP_CUSTOM_CALL: {
      mx_opcode_t cc = custom_call_check(op);
      if (cc == MX_OP_UNKNOWN) {
        const mx_attr_t *a = mx_op_attr(op, "call_target_name");
        return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: stablehlo.custom_call @%s",
                            a && a->s ? a->s : "?");
      }
      mx_op_t tmp = *op;
      tmp.code = cc;
      return mx_interp_exec_check(ip, &tmp, in, op->n_operands, mx_opcode_name(cc), true);
    }
    case MX_OP_UNKNOWN: {
      bool handled;
      st = mx_interp_exec_dynamic(ip, e->f, op, in, out, &handled);
      if (handled) return st;
      st = exec_named(ip, e, op, in, out, &handled);
      if (handled) return st;
      return mx_interp_unsupported(op);
    }
    default:
      break;
  }
  mx_interp_kernel_fn fn = mx_interp_kernel_lookup(op->code).fn;
  if (!fn) return mx_interp_unsupported(op);
  return run_kernel(ip, f, op, fn, in, out, false);
}

static mx_status_t exec_op(mx_interp_t *ip, mx_env_t *e, const mx_op_t *op) {
  if (op->n_operands < 0 || op->n_results < 0 || (op->n_operands && !op->operands) ||
      (op->n_results && !op->results))
    return mx_error_set(MX_ERR_RUNTIME, "malformed op");
  if (op->code < 0 || op->code >= MX_OP_COUNT) return mx_interp_unsupported(op);
  for (int32_t i = 0; i < op->n_results; i++) {
    mx_status_t st = mx_interp_env_check_id(e, op->results[i]);
    if (st) return op_error(ip, e->f, op, st);
  }
  const mx_tensor_t *in_small[8] = {0};
  mx_tensor_t out_small[4];
  const mx_tensor_t **in = in_small;
  mx_tensor_t *out = out_small;
  if (op->n_operands > 8) in = malloc((size_t)op->n_operands * sizeof *in);
  if (op->n_results > 4) out = calloc((size_t)op->n_results, sizeof *out);
  mx_status_t st = MX_OK;
  if (!in || !out)
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  else
    memset(out, 0, (size_t)(op->n_results > 4 ? op->n_results : 4) * sizeof *out);
  for (int32_t i = 0; i < op->n_operands && !st; i++)
    st = mx_interp_env_get(e, op->operands[i], &in[i]);
  if (!st && ip->max_work) {
    uint64_t cost = mx_interp_op_cost(e->f, op, in);
    ip->work = cost > UINT64_MAX - ip->work ? UINT64_MAX : ip->work + cost;
    if (ip->work > ip->max_work)
      st = mx_error_set(MX_ERR_RUNTIME,
                        "execution budget exceeded: more than %" PRIu64
                        " element operations (mx_interp_opts_t.max_work)",
                        ip->max_work);
  }
  if (!st) st = exec_op_inner(ip, e, op, in, out);
  if (!st)
    for (int32_t i = 0; i < op->n_results && !st; i++)
      st = mx_interp_env_put(e, op->results[i], &out[i]);
  if (st && out) mx_interp_values_free(out, op->n_results);
  if (in && in != in_small) free(in);
  if (out && out != out_small) free(out);
  return op_error(ip, e->f, op, st);
}

// ---------------------------------------------------------------------------------------------
// Process grids (interp_parallel.c)
// ---------------------------------------------------------------------------------------------

mx_proc_t *mx_interp_proc(const mx_interp_t *ip) { return ip->proc; }

const mx_module_t *mx_interp_module(const mx_interp_t *ip) { return ip->m; }

mx_status_t mx_interp_call_in_process(const mx_interp_t *parent, mx_proc_t *proc,
                                      const mx_func_t *f, const mx_tensor_t *const *args,
                                      int32_t n_args, mx_tensor_t *results) {
  mx_interp_t ip;
  memset(&ip, 0, sizeof ip);
  ip.m = parent->m;
  ip.max_while = parent->max_while;
  ip.max_bytes = parent->max_bytes;
  ip.max_work = parent->max_work;
  ip.work = parent->work;
  ip.depth = parent->depth;
  ip.proc = proc;
  mx_status_t st = call_func(&ip, f, args, n_args, results, f->n_results);
  mx_interp_probes_free(&ip);
  return st;
}

mx_status_t mx_interp_call(mx_interp_t *ip, const mx_func_t *f, const mx_tensor_t *const *args,
                           int32_t n_args, mx_tensor_t *results) {
  return call_func(ip, f, args, n_args, results, f->n_results);
}

// ---------------------------------------------------------------------------------------------
// Public entry point
// ---------------------------------------------------------------------------------------------

mx_status_t mx_interp_run(const mx_module_t *m, const mx_func_t *f, const mx_tensor_t *args,
                          int32_t n_args, mx_tensor_t *results, const mx_interp_opts_t *opts) {
  if (!m || !f) return mx_error_set(MX_ERR_INVALID_ARG, "mx_interp_run: no module or function");
  if (n_args < 0 || (n_args && !args) || (f->n_results && !results))
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_interp_run: invalid arguments");
  if (!f->body || f->body->n_ops == 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "function @%s is a declaration (no body)", f->name);
  if (n_args != f->body->n_args)
    return mx_error_set(MX_ERR_INVALID_ARG, "@%s takes %d arguments, got %d", f->name,
                        (int)f->body->n_args, (int)n_args);
  for (int32_t i = 0; i < n_args; i++) {
    int32_t id = f->body->args[i];
    if (id < 0 || id >= f->n_values)
      return mx_error_set(MX_ERR_INVALID_ARG, "@%s: malformed argument list", f->name);
    if (!mx_interp_value_type_equal(&f->values[id].type, &args[i].type)) {
      char b1[96], b2[96];
      return mx_error_set(MX_ERR_INVALID_ARG, "argument %d of @%s has type %s, expected %s", (int)i,
                          f->name, mx_type_str(&args[i].type, b1, sizeof b1),
                          mx_type_str(&f->values[id].type, b2, sizeof b2));
    }
    if (args[i].type.kind == MX_TYPE_TENSOR && args[i].nbytes < mx_type_nbytes(&args[i].type))
      return mx_error_set(MX_ERR_INVALID_ARG, "argument %d of @%s: storage smaller than its type",
                          (int)i, f->name);
  }
  mx_interp_t ip;
  memset(&ip, 0, sizeof ip);
  ip.m = m;
  ip.checks = opts ? opts->checks : NULL;
  ip.max_while = opts && opts->max_while_iterations > 0 ? opts->max_while_iterations
                                                        : MX_INTERP_DEFAULT_MAX_WHILE;
  ip.max_bytes =
      opts && opts->max_tensor_bytes > 0 ? opts->max_tensor_bytes : MX_INTERP_DEFAULT_MAX_BYTES;
  ip.max_work = opts ? opts->max_work : 0;
  ip.opts = opts;
  ip.on_op_block = f->body;
  const mx_tensor_t *small[8] = {0};
  const mx_tensor_t **ptrs = small;
  if (n_args > 8) {
    ptrs = malloc((size_t)n_args * sizeof *ptrs);
    if (!ptrs) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; i < n_args; i++) ptrs[i] = &args[i];
  mx_status_t st = call_func(&ip, f, ptrs, n_args, results, f->n_results);
  mx_interp_probes_free(&ip);
  if (ptrs != small) free(ptrs);
  return st;
}
