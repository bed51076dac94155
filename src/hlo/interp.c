// Reference interpreter driver: environments, op dispatch, control flow, calls, tuples and the
// check dialect. Kernels for the data-carrying ops live in interp_elementwise.c,
// interp_shape.c and interp_compute.c (see interp_internal.h).
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

enum { SLOT_EMPTY = 0, SLOT_OWNED = 1, SLOT_BORROWED = 2 };

typedef struct mx_env {
  const mx_func_t *f;
  int32_t n;
  mx_tensor_t *vals;  // indexed by value id
  uint8_t *state;     // SLOT_*
  uint8_t *local;     // scratch marks used when a block exits
  struct mx_env *prev;
} mx_env_t;

struct mx_interp {
  const mx_module_t *m;
  mx_check_report_t *checks;  // NULL: a failed check is an error
  int64_t max_while;
  size_t max_bytes;
  uint64_t max_work;         // 0: unlimited
  uint64_t work;             // work done so far (see interp_budget.c)
  int32_t depth;             // current call depth
  bool err_located;          // the pending error message already names the failing op
  mx_env_t *env;             // innermost function invocation
  mx_proc_t *proc;           // process of a run_parallel grid, NULL when running alone
  struct probe_rec *probes;  // interpreter.probe records, in execution order
  int32_t n_probes, cap_probes;
  const mx_interp_opts_t *opts;   // on_op hook (mx_interp_run's options), NULL = none
  const mx_block_t *on_op_block;  // the entry function's body: where on_op fires
};

// ---------------------------------------------------------------------------------------------
// Tensors
// ---------------------------------------------------------------------------------------------

static mx_status_t type_nbytes_checked(const mx_interp_t *ip, const mx_type_t *t, size_t *out) {
  if (t->rank < 0 || t->rank > MX_MAX_RANK)
    return mx_error_set(MX_ERR_RUNTIME, "invalid tensor rank %d", (int)t->rank);
  size_t es = mx_elem_size(t->elem);
  if (es == 0) return mx_error_set(MX_ERR_RUNTIME, "invalid element type in tensor type");
  size_t n = es;
  for (int32_t i = 0; i < t->rank; i++) {
    int64_t d = t->dims[i];
    if (d < 0) return mx_error_set(MX_ERR_RUNTIME, "dynamic or negative dimension in result type");
    if (d != 0 && n > SIZE_MAX / (size_t)d)
      n = SIZE_MAX;
    else
      n *= (size_t)d;
  }
  if (n > ip->max_bytes) {
    char buf[128];
    return mx_error_set(MX_ERR_RUNTIME,
                        "tensor %s needs %zu bytes, over the interpreter limit of %zu bytes",
                        mx_type_str(t, buf, sizeof buf), n, ip->max_bytes);
  }
  *out = n;
  return MX_OK;
}

// Allocates a zeroed value of any type kind (tensor, tuple, token), honouring max_tensor_bytes.
static mx_status_t value_alloc(const mx_interp_t *ip, mx_tensor_t *t, const mx_type_t *type) {
  memset(t, 0, sizeof *t);
  if (type->kind == MX_TYPE_TENSOR) {
    size_t nb;
    mx_status_t st = type_nbytes_checked(ip, type, &nb);
    if (st) return st;
    st = mx_tensor_alloc(t, type);
    if (st) memset(t, 0, sizeof *t);
    return st;
  }
  t->type = *type;
  if (type->kind == MX_TYPE_TUPLE) {
    if (type->n_tuple < 0 || (type->n_tuple > 0 && !type->tuple))
      return mx_error_set(MX_ERR_RUNTIME, "invalid tuple type");
    if (type->n_tuple == 0) return MX_OK;
    t->tuple = calloc((size_t)type->n_tuple, sizeof *t->tuple);
    if (!t->tuple) return mx_error_set(MX_ERR_NOMEM, "out of memory allocating a tuple");
    t->n_tuple = type->n_tuple;
    for (int32_t i = 0; i < type->n_tuple; i++) {
      mx_status_t st = value_alloc(ip, &t->tuple[i], &type->tuple[i]);
      if (st) {
        mx_tensor_free(t);
        memset(t, 0, sizeof *t);
        return st;
      }
    }
  }
  return MX_OK;  // token: no storage
}

// Deep copy of any value kind.
static mx_status_t value_clone(mx_tensor_t *dst, const mx_tensor_t *src) {
  memset(dst, 0, sizeof *dst);
  if (src->type.kind == MX_TYPE_TENSOR) {
    mx_status_t st = mx_tensor_alloc(dst, &src->type);
    if (st) {
      memset(dst, 0, sizeof *dst);
      return st;
    }
    size_t n = src->nbytes < dst->nbytes ? src->nbytes : dst->nbytes;
    if (n) memcpy(dst->data, src->data, n);
    return MX_OK;
  }
  dst->type = src->type;
  if (src->type.kind == MX_TYPE_TUPLE && src->n_tuple > 0) {
    dst->tuple = calloc((size_t)src->n_tuple, sizeof *dst->tuple);
    if (!dst->tuple) return mx_error_set(MX_ERR_NOMEM, "out of memory copying a tuple");
    dst->n_tuple = src->n_tuple;
    for (int32_t i = 0; i < src->n_tuple; i++) {
      mx_status_t st = value_clone(&dst->tuple[i], &src->tuple[i]);
      if (st) {
        mx_tensor_free(dst);
        memset(dst, 0, sizeof *dst);
        return st;
      }
    }
  }
  return MX_OK;
}

static void value_free(mx_tensor_t *t) {
  mx_tensor_free(t);
  memset(t, 0, sizeof *t);
}

static void values_free(mx_tensor_t *v, int32_t n) {
  if (!v) return;
  for (int32_t i = 0; i < n; i++) value_free(&v[i]);
}

// Structural type equality for runtime values (tuple element types compared recursively).
// Same storage: element type (a quantized type's storage type) and shape.
static bool storage_type_equal(const mx_type_t *a, const mx_type_t *b) {
  if (a->kind != MX_TYPE_TENSOR || b->kind != MX_TYPE_TENSOR) return false;
  if (a->elem != b->elem || a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

static bool value_type_equal(const mx_type_t *a, const mx_type_t *b) {
  if (a->kind != b->kind) return false;
  if (a->kind == MX_TYPE_TENSOR) return storage_type_equal(a, b) && mx_interp_same_quant(a, b);
  if (a->kind == MX_TYPE_TUPLE) {
    if (a->n_tuple != b->n_tuple) return false;
    for (int32_t i = 0; i < a->n_tuple; i++)
      if (!value_type_equal(&a->tuple[i], &b->tuple[i])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Environments
// ---------------------------------------------------------------------------------------------

static mx_status_t env_init(mx_env_t *e, const mx_func_t *f) {
  memset(e, 0, sizeof *e);
  e->f = f;
  e->n = f->n_values;
  size_t n = e->n > 0 ? (size_t)e->n : 1;
  e->vals = calloc(n, sizeof *e->vals);
  e->state = calloc(n, 1);
  e->local = calloc(n, 1);
  if (!e->vals || !e->state || !e->local) {
    free(e->vals);
    free(e->state);
    free(e->local);
    memset(e, 0, sizeof *e);
    return mx_error_set(MX_ERR_NOMEM, "out of memory creating an interpreter environment");
  }
  return MX_OK;
}

static void env_clear_slot(mx_env_t *e, int32_t id) {
  if (e->state[id] == SLOT_OWNED) mx_tensor_free(&e->vals[id]);
  memset(&e->vals[id], 0, sizeof e->vals[id]);
  e->state[id] = SLOT_EMPTY;
}

static void env_destroy(mx_env_t *e) {
  if (!e->vals) return;
  for (int32_t i = 0; i < e->n; i++) env_clear_slot(e, i);
  free(e->vals);
  free(e->state);
  free(e->local);
  memset(e, 0, sizeof *e);
}

static mx_status_t env_check_id(const mx_env_t *e, int32_t id) {
  if (id < 0 || id >= e->n)
    return mx_error_set(MX_ERR_RUNTIME, "value id %d out of range in function @%s", (int)id,
                        e->f->name ? e->f->name : "?");
  return MX_OK;
}

// Stores an owned value (ownership moves into the environment).
static mx_status_t env_put(mx_env_t *e, int32_t id, mx_tensor_t *v) {
  mx_status_t st = env_check_id(e, id);
  if (st) {
    value_free(v);
    return st;
  }
  env_clear_slot(e, id);
  e->vals[id] = *v;
  e->state[id] = SLOT_OWNED;
  memset(v, 0, sizeof *v);
  return MX_OK;
}

// Binds a value the caller keeps owning (function / region arguments).
static mx_status_t env_borrow(mx_env_t *e, int32_t id, const mx_tensor_t *v) {
  mx_status_t st = env_check_id(e, id);
  if (st) return st;
  env_clear_slot(e, id);
  e->vals[id] = *v;
  e->state[id] = SLOT_BORROWED;
  return MX_OK;
}

static const char *value_label(const mx_func_t *f, int32_t id, char *buf, size_t n) {
  const char *nm = (id >= 0 && id < f->n_values) ? f->values[id].name : NULL;
  if (nm)
    snprintf(buf, n, "%%%s", nm);
  else
    snprintf(buf, n, "value #%d", (int)id);
  return buf;
}

static mx_status_t env_get(const mx_env_t *e, int32_t id, const mx_tensor_t **out) {
  mx_status_t st = env_check_id(e, id);
  if (st) return st;
  if (e->state[id] == SLOT_EMPTY) {
    char buf[96];
    return mx_error_set(MX_ERR_RUNTIME, "use of %s before it is defined",
                        value_label(e->f, id, buf, sizeof buf));
  }
  *out = &e->vals[id];
  return MX_OK;
}

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

static mx_status_t unsupported(const mx_op_t *op) {
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
        env_clear_slot(e, id);
        e->local[id] = 0;
      }
    }
  }
  for (int32_t i = 0; i < blk->n_args; i++) {
    int32_t id = blk->args[i];
    if (id >= 0 && id < e->n) env_clear_slot(e, id);
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
    ok = env_get(e, op->results[r], &res[r]) == MX_OK;
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
    st = env_check_id(e, id);
    if (st) break;
    const mx_type_t *want = &e->f->values[id].type;
    if (!value_type_equal(want, &args[i]->type)) {
      char b1[96], b2[96];
      st = mx_error_set(MX_ERR_RUNTIME, "region argument %d has type %s, expected %s", (int)i,
                        mx_type_str(&args[i]->type, b1, sizeof b1),
                        mx_type_str(want, b2, sizeof b2));
      break;
    }
    st = env_borrow(e, id, args[i]);
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
      st = env_get(e, id, &v);
      if (st) break;
      if (e->local[id] && e->state[id] == SLOT_OWNED && !appears_after(term, i)) {
        results[i] = e->vals[id];
        memset(&e->vals[id], 0, sizeof e->vals[id]);
        e->state[id] = SLOT_EMPTY;
      } else {
        st = value_clone(&results[i], v);
      }
    }
    if (st) st = op_error(ip, e->f, term, st);
  }
  block_release(e, blk);
  if (st) values_free(results, n_results);
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
    st = env_init(&env, f);
    if (!st) {
      env.prev = ip->env;
      ip->env = &env;
      st = run_block_env(ip, &env, blk, ptrs, n_args, results, n_results);
      ip->env = env.prev;
      env_destroy(&env);
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
  mx_status_t st = env_init(&env, f);
  if (st) return st;
  env.prev = ip->env;
  ip->env = &env;
  ip->depth++;
  st = run_block_env(ip, &env, f->body, args, n_args, results, n_results);
  ip->depth--;
  ip->env = env.prev;
  env_destroy(&env);
  if (st) return st;
  for (int32_t i = 0; i < n_results; i++) {
    if (!value_type_equal(&results[i].type, &f->result_types[i])) {
      char b1[96], b2[96];
      st = mx_error_set(MX_ERR_RUNTIME, "@%s returns %s as result %d, declared %s", f->name,
                        mx_type_str(&results[i].type, b1, sizeof b1), (int)i,
                        mx_type_str(&f->result_types[i], b2, sizeof b2));
      values_free(results, n_results);
      return st;
    }
  }
  return MX_OK;
}

// ---------------------------------------------------------------------------------------------
// Element helpers for the check ops
// ---------------------------------------------------------------------------------------------

static uint64_t load_bits(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  switch (n) {
    case 1:
      v = p[0];
      break;
    case 2: {
      uint16_t x;
      memcpy(&x, p, 2);
      v = x;
      break;
    }
    case 4: {
      uint32_t x;
      memcpy(&x, p, 4);
      v = x;
      break;
    }
    case 8:
      memcpy(&v, p, 8);
      break;
    default:
      break;
  }
  return v;
}

static uint64_t bit_mask(int bits) { return bits >= 64 ? ~0ULL : ((1ULL << bits) - 1); }

// Component float type of an element type (itself for real floats).
static mx_elem_type_t component_type(mx_elem_type_t et) {
  if (et == MX_ELEM_C64) return MX_ELEM_F32;
  if (et == MX_ELEM_C128) return MX_ELEM_F64;
  return et;
}

// Reads component `c` (0 = re, 1 = im) of a float/complex element as (bits, value).
static void load_float(const mx_tensor_t *t, int64_t i, int c, uint64_t *bits, double *val) {
  mx_elem_type_t et = t->type.elem;
  mx_elem_type_t ct = component_type(et);
  size_t cs = mx_elem_size(ct);
  size_t es = mx_elem_size(et);
  uint64_t b =
      load_bits(t->data + (size_t)i * es + (size_t)c * cs, cs) & bit_mask(mx_elem_bits(ct));
  *bits = b;
  *val = mx_float_decode(ct, b);
}

static bool float_has_sign_bit(mx_elem_type_t ct) { return ct != MX_ELEM_F8E8M0FNU; }

static int64_t ncomponents(mx_elem_type_t et) { return mx_elem_is_complex(et) ? 2 : 1; }

// Exact equality: integers by value, floats bitwise except that any two NaNs are equal.
static bool elem_equal(const mx_tensor_t *a, const mx_tensor_t *b, int64_t i) {
  mx_elem_type_t et = a->type.elem;
  if (mx_elem_is_float(et) || mx_elem_is_complex(et)) {
    for (int c = 0; c < ncomponents(et); c++) {
      uint64_t ba, bb;
      double va, vb;
      load_float(a, i, c, &ba, &va);
      load_float(b, i, c, &bb, &vb);
      if (ba != bb && !(isnan(va) && isnan(vb))) return false;
    }
    return true;
  }
  if (mx_elem_is_bool(et)) return (mx_tensor_get_i64(a, i) != 0) == (mx_tensor_get_i64(b, i) != 0);
  return mx_tensor_get_i64(a, i) == mx_tensor_get_i64(b, i);
}

// |a - b| <= tol, NaN equals NaN, infinities only equal themselves. (StableHLO's checker also
// rejects tiny values of opposite sign; we accept them, as an absolute tolerance suggests.)
static bool float_almost_equal(double a, double b, double tol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == b) return true;
  if (isinf(a) || isinf(b)) return false;
  return fabs(a - b) <= tol;
}

static bool elem_almost_equal(const mx_tensor_t *a, const mx_tensor_t *b, int64_t i, double tol) {
  mx_elem_type_t et = a->type.elem;
  if (!mx_elem_is_float(et) && !mx_elem_is_complex(et)) return elem_equal(a, b, i);
  for (int c = 0; c < ncomponents(et); c++) {
    uint64_t ba, bb;
    double va, vb;
    load_float(a, i, c, &ba, &va);
    load_float(b, i, c, &bb, &vb);
    if (!float_almost_equal(va, vb, tol)) return false;
  }
  return true;
}

// ULP distance as StableHLO's checker defines it: bit patterns of |x| are ULP counts from zero;
// opposite signs add; non-finite values are 0 apart when bitwise equal or both NaN, else "far".
static uint64_t float_ulp_diff(mx_elem_type_t ct, uint64_t ba, double va, uint64_t bb, double vb) {
  if (ba == bb) return 0;
  if (isnan(va) && isnan(vb)) return 0;
  if (!isfinite(va) || !isfinite(vb)) return UINT64_MAX;
  int bits = mx_elem_bits(ct);
  uint64_t sign = float_has_sign_bit(ct) ? (1ULL << (bits - 1)) : 0;
  uint64_t ma = ba & ~sign, mb = bb & ~sign;
  bool na = (ba & sign) != 0, nb = (bb & sign) != 0;
  if (na != nb) return ma + mb;
  return ma > mb ? ma - mb : mb - ma;
}

static uint64_t elem_ulp_diff(const mx_tensor_t *a, const mx_tensor_t *b, int64_t i) {
  mx_elem_type_t ct = component_type(a->type.elem);
  uint64_t worst = 0;
  for (int c = 0; c < ncomponents(a->type.elem); c++) {
    uint64_t ba, bb;
    double va, vb;
    load_float(a, i, c, &ba, &va);
    load_float(b, i, c, &bb, &vb);
    uint64_t d = float_ulp_diff(ct, ba, va, bb, vb);
    if (d > worst) worst = d;
  }
  return worst;
}

static void format_elem(mx_strbuf_t *sb, const mx_tensor_t *t, int64_t i) {
  mx_elem_type_t et = t->type.elem;
  if (mx_elem_is_bool(et)) {
    mx_strbuf_puts(sb, mx_tensor_get_i64(t, i) ? "true" : "false");
  } else if (mx_elem_is_unsigned(et)) {
    mx_strbuf_printf(sb, "%" PRIu64, mx_tensor_get_u64(t, i));
  } else if (mx_elem_is_int(et)) {
    mx_strbuf_printf(sb, "%" PRId64, mx_tensor_get_i64(t, i));
  } else if (mx_elem_is_float(et)) {
    uint64_t b;
    double v;
    load_float(t, i, 0, &b, &v);
    mx_strbuf_printf(sb, "%.17g", v);
  } else if (mx_elem_is_complex(et)) {
    uint64_t b;
    double re, im;
    load_float(t, i, 0, &b, &re);
    load_float(t, i, 1, &b, &im);
    mx_strbuf_printf(sb, "(%.17g, %.17g)", re, im);
  } else {
    mx_strbuf_puts(sb, "?");
  }
}

static void format_index(mx_strbuf_t *sb, const mx_type_t *t, int64_t lin) {
  int64_t idx[MX_MAX_RANK];
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    int64_t n = t->dims[d] > 0 ? t->dims[d] : 1;
    idx[d] = lin % n;
    lin /= n;
  }
  mx_strbuf_puts(sb, "[");
  for (int32_t d = 0; d < t->rank; d++) mx_strbuf_printf(sb, "%s%" PRId64, d ? ", " : "", idx[d]);
  mx_strbuf_puts(sb, "]");
}

// Records the outcome of one check op: counted in the report, or an error without one.
static mx_status_t check_report(mx_interp_t *ip, const mx_op_t *op, bool ok, const char *msg) {
  if (ip->checks) {
    ip->checks->n_checks++;
    if (ok) return MX_OK;
    if (ip->checks->n_failed == 0)
      snprintf(ip->checks->first_failure, sizeof ip->checks->first_failure, "%s", msg);
    ip->checks->n_failed++;
    return MX_OK;
  }
  if (ok) return MX_OK;
  return mx_error_set(MX_ERR_RUNTIME, "%s", msg);
}

typedef enum { CMP_EQ, CMP_ALMOST, CMP_CLOSE } cmp_kind_t;

static mx_status_t exec_check(mx_interp_t *ip, const mx_op_t *op, const mx_tensor_t *const *in,
                              int32_t n_in, const char *check_name, bool jax_form) {
  cmp_kind_t kind;
  bool is_const = false;
  switch (op->code) {
    case MX_OP_CHECK_EXPECT_EQ:
      kind = CMP_EQ;
      break;
    case MX_OP_CHECK_EXPECT_EQ_CONST:
      kind = CMP_EQ;
      is_const = true;
      break;
    case MX_OP_CHECK_EXPECT_ALMOST_EQ:
      kind = CMP_ALMOST;
      break;
    case MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST:
      kind = CMP_ALMOST;
      is_const = true;
      break;
    case MX_OP_CHECK_EXPECT_CLOSE:
      kind = CMP_CLOSE;
      break;
    default:
      return unsupported(op);
  }
  const mx_tensor_t *actual = NULL, *expected = NULL;
  if (is_const) {
    const mx_attr_t *v = mx_op_attr(op, "value");
    if (n_in != 1 || !v || v->kind != MX_ATTR_DENSE || !v->dense)
      return mx_error_set(MX_ERR_RUNTIME, "%s needs one operand and a dense `value`", check_name);
    actual = in[0];
    expected = v->dense;
  } else {
    if (n_in != 2) return mx_error_set(MX_ERR_RUNTIME, "%s needs two operands", check_name);
    actual = in[0];
    expected = in[1];
  }
  if (actual->type.kind != MX_TYPE_TENSOR || !value_type_equal(&actual->type, &expected->type)) {
    char b1[96], b2[96];
    return mx_error_set(MX_ERR_RUNTIME, "%s: operand type %s does not match expected type %s",
                        check_name, mx_type_str(&actual->type, b1, sizeof b1),
                        mx_type_str(&expected->type, b2, sizeof b2));
  }
  mx_elem_type_t et = actual->type.elem;
  if (kind == CMP_CLOSE && !mx_elem_is_float(et) && !mx_elem_is_complex(et))
    return mx_error_set(MX_ERR_RUNTIME, "%s needs float or complex operands", check_name);
  if (actual->nbytes < mx_type_nbytes(&actual->type) ||
      expected->nbytes < mx_type_nbytes(&expected->type))
    return mx_error_set(MX_ERR_RUNTIME, "%s: tensor storage is smaller than its type", check_name);

  // The JAX custom_call form has fixed, looser limits (what StableHLO's runner uses for it).
  double tol = jax_form ? 1e-3 : 1e-4;
  uint64_t min_ulp = 0, max_ulp = jax_form ? 3 : 1;
  const mx_attr_t *a;
  if ((a = mx_op_attr(op, "tolerance")) != NULL) {
    if (a->kind == MX_ATTR_FLOAT)
      tol = a->f;
    else if (a->kind == MX_ATTR_INT)
      tol = (double)a->i;
  }
  if ((a = mx_op_attr(op, "max_ulp_difference")) != NULL && a->kind == MX_ATTR_INT)
    max_ulp = (uint64_t)a->i;
  if ((a = mx_op_attr(op, "min_ulp_difference")) != NULL && a->kind == MX_ATTR_INT)
    min_ulp = (uint64_t)a->i;

  int64_t n = mx_type_numel(&actual->type);
  for (int64_t i = 0; i < n; i++) {
    bool ok;
    uint64_t ulp = 0;
    if (kind == CMP_EQ)
      ok = elem_equal(actual, expected, i);
    else if (kind == CMP_ALMOST)
      ok = elem_almost_equal(actual, expected, i, tol);
    else {
      ulp = elem_ulp_diff(actual, expected, i);
      ok = ulp >= min_ulp && ulp <= max_ulp;
    }
    if (ok) continue;
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    if (op->line > 0) mx_strbuf_printf(&sb, "line %d: ", (int)op->line);
    mx_strbuf_printf(&sb, "%s failed: ", check_name);
    format_elem(&sb, actual, i);
    mx_strbuf_puts(&sb, " (actual) vs ");
    format_elem(&sb, expected, i);
    mx_strbuf_puts(&sb, " (expected) at index ");
    format_index(&sb, &actual->type, i);
    if (kind == CMP_CLOSE)
      mx_strbuf_printf(&sb, ", ULP difference %" PRIu64 " outside [%" PRIu64 ", %" PRIu64 "]", ulp,
                       min_ulp, max_ulp);
    else if (kind == CMP_ALMOST)
      mx_strbuf_printf(&sb, ", tolerance %g", tol);
    mx_status_t st = check_report(ip, op, false, sb.data ? sb.data : check_name);
    mx_strbuf_free(&sb);
    return st;
  }
  return check_report(ip, op, true, "");
}

// ---------------------------------------------------------------------------------------------
// Op execution
// ---------------------------------------------------------------------------------------------

static bool is_shape_group(mx_opcode_t c) {
  return mx_interp_kernel_lookup(c).fn == mx_interp_shape;
}

// Allocates op results with the declared result types.
static mx_status_t alloc_results(const mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 mx_tensor_t *out) {
  for (int32_t i = 0; i < op->n_results; i++) {
    if (op->results[i] < 0 || op->results[i] >= f->n_values) {
      values_free(out, i);
      return mx_error_set(MX_ERR_RUNTIME, "result value id out of range");
    }
    mx_status_t st = value_alloc(ip, &out[i], &f->values[op->results[i]].type);
    if (st) {
      values_free(out, i);
      return st;
    }
  }
  return MX_OK;
}

// Checks that region results have the op's declared result types.
static mx_status_t check_result_types(const mx_func_t *f, const mx_op_t *op,
                                      const mx_tensor_t *out) {
  for (int32_t i = 0; i < op->n_results; i++) {
    const mx_type_t *want = &f->values[op->results[i]].type;
    if (!value_type_equal(want, &out[i].type)) {
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
  for (int32_t i = 0; i < n && !st; i++) st = value_clone(&cur[i], in[i]);
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
    value_free(&c);
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
    values_free(cur, n);
    free(cur);
    cur = next;
  }
  if (!st) {
    for (int32_t i = 0; i < n; i++) out[i] = cur[i];
    free(cur);
    cur = NULL;
  }
  if (cur) {
    values_free(cur, n);
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

// ---- dynamic_* ops (shapes given as operands; our result types are static) ----
//
// They are not in the opcode list, so they arrive as MX_OP_UNKNOWN with their name. Each one is
// run as its static counterpart: the shape operands must agree with the static result type and
// the padding / slice-size operands become the attributes the static kernel reads.

#define MX_DYN_MAX_ATTRS 4

typedef struct dyn_op {
  mx_op_t op;
  mx_named_attr_t *attrs;
  int64_t ints[MX_DYN_MAX_ATTRS][2 * MX_MAX_RANK];
  int32_t n_extra;
} dyn_op_t;

// Reads a 1-D (or, for paddings, 2-D) integer operand into v; returns its element count or -1.
static int64_t dyn_ints(const mx_tensor_t *t, int64_t *v, int64_t max) {
  if (t->type.kind != MX_TYPE_TENSOR || !mx_elem_is_int(t->type.elem) || t->type.rank > 2 ||
      !t->data)
    return -1;
  int64_t n = mx_type_numel(&t->type);
  if (n > max) return -1;
  for (int64_t i = 0; i < n; i++) v[i] = mx_tensor_get_i64(t, i);
  return n;
}

static mx_status_t dyn_init(dyn_op_t *d, const mx_op_t *op, mx_opcode_t code, int32_t n_operands) {
  memset(d, 0, sizeof *d);
  d->op = *op;
  d->op.code = code;
  d->op.name = mx_opcode_name(code);
  d->op.n_operands = n_operands;
  d->attrs = calloc((size_t)op->n_attrs + MX_DYN_MAX_ATTRS, sizeof *d->attrs);
  if (!d->attrs) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < op->n_attrs; i++) d->attrs[i] = op->attrs[i];
  d->op.attrs = d->attrs;
  return MX_OK;
}

// Adds (or overrides) a DENSE_ARRAY i64 attribute taken from integer operand `t`.
static mx_status_t dyn_add_ints(dyn_op_t *d, const char *name, const mx_tensor_t *t,
                                int64_t want_n) {
  int32_t k = d->n_extra++;
  int64_t n = dyn_ints(t, d->ints[k], 2 * MX_MAX_RANK);
  if (n < 0 || (want_n >= 0 && n != want_n))
    return mx_error_set(MX_ERR_RUNTIME, "%s: operand for `%s` must be %" PRId64 " integers",
                        d->op.name, name, want_n);
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_DENSE_ARRAY;
  a.elem = MX_ELEM_I64;
  a.n = (int32_t)n;
  a.ints = d->ints[k];
  for (int32_t i = 0; i < d->op.n_attrs; i++)
    if (strcmp(d->attrs[i].name, name) == 0) {
      d->attrs[i].value = a;
      return MX_OK;
    }
  d->attrs[d->op.n_attrs].name = name;
  d->attrs[d->op.n_attrs].value = a;
  d->op.n_attrs++;
  return MX_OK;
}

// The output-shape operand must equal the static result shape.
static mx_status_t dyn_check_shape(const mx_op_t *op, const mx_tensor_t *shape,
                                   const mx_type_t *rt) {
  int64_t v[MX_MAX_RANK];
  int64_t n = dyn_ints(shape, v, MX_MAX_RANK);
  bool ok = n == rt->rank && rt->kind == MX_TYPE_TENSOR;
  for (int64_t i = 0; ok && i < n; i++) ok = v[i] == rt->dims[i];
  if (!ok) {
    char buf[96];
    return mx_error_set(MX_ERR_RUNTIME, "%s: output shape operand does not match result type %s",
                        op->name, mx_type_str(rt, buf, sizeof buf));
  }
  return MX_OK;
}

static mx_status_t exec_dynamic(mx_interp_t *ip, mx_env_t *e, const mx_op_t *op,
                                const mx_tensor_t *const *in, mx_tensor_t *out, bool *handled) {
  static const struct {
    const char *name;
    mx_opcode_t code;
    int32_t n_in;
  } table[] = {
      {"stablehlo.dynamic_iota", MX_OP_IOTA, 1},
      {"stablehlo.dynamic_reshape", MX_OP_RESHAPE, 2},
      {"stablehlo.dynamic_broadcast_in_dim", MX_OP_BROADCAST_IN_DIM, 2},
      {"stablehlo.dynamic_pad", MX_OP_PAD, 5},
      {"stablehlo.dynamic_gather", MX_OP_GATHER, 3},
      {"stablehlo.dynamic_conv", MX_OP_CONVOLUTION, 3},
  };
  *handled = false;
  int k = -1;
  for (int i = 0; op->name && i < (int)(sizeof table / sizeof table[0]); i++)
    if (strcmp(op->name, table[i].name) == 0) k = i;
  if (k < 0) return MX_OK;
  *handled = true;
  if (op->n_operands != table[k].n_in || op->n_results != 1)
    return mx_error_set(MX_ERR_RUNTIME, "%s: expected %d operands and one result", op->name,
                        (int)table[k].n_in);
  const mx_type_t *rt = &e->f->values[op->results[0]].type;
  dyn_op_t d;
  mx_status_t st = MX_OK;
  const mx_tensor_t *args[2] = {NULL, NULL};
  int32_t n_static = 0;
  switch (table[k].code) {
    case MX_OP_IOTA:
      st = dyn_check_shape(op, in[0], rt);
      break;
    case MX_OP_RESHAPE:
    case MX_OP_BROADCAST_IN_DIM:
      st = dyn_check_shape(op, in[1], rt);
      args[0] = in[0];
      n_static = 1;
      break;
    case MX_OP_PAD:
    case MX_OP_GATHER:
    case MX_OP_CONVOLUTION:
      args[0] = in[0];
      args[1] = in[1];
      n_static = 2;
      break;
    default:
      break;
  }
  if (st) return st;
  st = dyn_init(&d, op, table[k].code, n_static);
  if (st) return st;
  int32_t r = in[0]->type.rank;
  if (table[k].code == MX_OP_PAD) {
    st = dyn_add_ints(&d, "edge_padding_low", in[2], r);
    if (!st) st = dyn_add_ints(&d, "edge_padding_high", in[3], r);
    if (!st) st = dyn_add_ints(&d, "interior_padding", in[4], r);
  } else if (table[k].code == MX_OP_GATHER) {
    st = dyn_add_ints(&d, "slice_sizes", in[2], r);
  } else if (table[k].code == MX_OP_CONVOLUTION) {
    st = dyn_add_ints(&d, "padding", in[2], 2 * (int64_t)(r - 2));
  }
  if (!st) st = alloc_results(ip, e->f, &d.op, out);
  if (!st) {
    mx_interp_kernel_fn fn = is_shape_group(d.op.code) ? mx_interp_shape : mx_interp_compute;
    st = fn(ip, e->f, &d.op, args, out);
    if (st) values_free(out, 1);
  }
  free(d.attrs);
  return st;
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
  mx_status_t st = alloc_results(ip, f, op, out);
  if (st) return st;
  for (int32_t i = 0; i < op->n_results; i++)
    if (out[i].type.kind != MX_TYPE_TENSOR) {
      values_free(out, op->n_results);
      return mx_error_set(MX_ERR_RUNTIME, "result %d is not a tensor", (int)i);
    }
  if (!quant_aware && mx_interp_op_is_quantized(op, in, out))
    st = run_quantized(ip, f, op, fn, in, out);
  else
    st = fn(ip, f, op, in, out);
  if (st) values_free(out, op->n_results);
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
  mx_status_t st = alloc_results(ip, f, op, out);
  if (st) return st;
  if (out[0].type.kind != MX_TYPE_TOKEN) {
    values_free(out, 1);
    return mx_error_set(MX_ERR_RUNTIME, "%s: result is not a token", op->name);
  }
  return MX_OK;
}

// ---- interpreter.probe / check.expect_serialized_eq ----
//
// StableHLO's interpreter writes each probed value to a .npy file (one per probe id and
// iteration) and expect_serialized_eq reads it back. We keep the values in memory for the run
// instead: the comparison is the same, bit for bit, without a probe directory.

typedef struct probe_rec {
  const char *id;  // points into the module's attribute
  int64_t iter;    // how many earlier records share the id
  mx_tensor_t value;
} probe_rec_t;

static void probes_free(mx_interp_t *ip) {
  for (int32_t i = 0; i < ip->n_probes; i++) mx_tensor_free(&ip->probes[i].value);
  free(ip->probes);
  ip->probes = NULL;
  ip->n_probes = ip->cap_probes = 0;
}

static const char *probe_id_of(const mx_op_t *op) {
  const mx_attr_t *a = mx_op_attr(op, "probe_id");
  return a && a->kind == MX_ATTR_STRING && a->s ? a->s : NULL;
}

static mx_status_t exec_probe(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                              const mx_tensor_t *const *in, mx_tensor_t *out) {
  const char *id = probe_id_of(op);
  if (!id || op->n_operands != 1 || op->n_results != 1 || in[0]->type.kind != MX_TYPE_TENSOR)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs one tensor operand and a `probe_id` string",
                        op->name);
  if (!value_type_equal(&in[0]->type, &f->values[op->results[0]].type))
    return mx_error_set(MX_ERR_RUNTIME, "%s: result type differs from the operand", op->name);
  if (ip->n_probes == ip->cap_probes) {
    int32_t cap = ip->cap_probes ? 2 * ip->cap_probes : 16;
    probe_rec_t *p = realloc(ip->probes, (size_t)cap * sizeof *p);
    if (!p) return mx_error_set(MX_ERR_NOMEM, "out of memory recording a probe");
    ip->probes = p;
    ip->cap_probes = cap;
  }
  int64_t iter = 0;
  for (int32_t i = 0; i < ip->n_probes; i++)
    if (strcmp(ip->probes[i].id, id) == 0) iter++;
  probe_rec_t *r = &ip->probes[ip->n_probes];
  mx_status_t st = mx_tensor_clone(&r->value, in[0]);
  if (st) return st;
  r->id = id;
  r->iter = iter;
  ip->n_probes++;
  st = value_clone(&out[0], in[0]);
  return st;
}

static mx_status_t exec_serialized_eq(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                      const mx_tensor_t *const *in, mx_tensor_t *out) {
  (void)f;
  (void)out;
  const char *id = probe_id_of(op);
  if (!id || op->n_operands != 1 || in[0]->type.kind != MX_TYPE_TENSOR)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs one tensor operand and a `probe_id` string",
                        op->name);
  const mx_attr_t *it = mx_op_attr(op, "iter");
  int64_t iter = it && it->kind == MX_ATTR_INT ? it->i : 0;
  const probe_rec_t *r = NULL;
  for (int32_t i = 0; i < ip->n_probes && !r; i++)
    if (strcmp(ip->probes[i].id, id) == 0 && ip->probes[i].iter == iter) r = &ip->probes[i];
  char where[32] = "";
  if (op->line > 0) snprintf(where, sizeof where, "line %d: ", (int)op->line);
  char msg[384];
  bool ok = false;
  if (!r) {
    snprintf(msg, sizeof msg, "%s%s: no probe \"%.100s\" iteration %" PRId64 " was recorded", where,
             op->name, id, iter);
  } else if (!value_type_equal(&r->value.type, &in[0]->type)) {
    snprintf(msg, sizeof msg, "%s%s: probe \"%.100s\" recorded a value of another type", where,
             op->name, id);
  } else {
    size_t nb = mx_type_nbytes(&in[0]->type);
    ok = nb == 0 || (in[0]->nbytes >= nb && r->value.nbytes >= nb &&
                     memcmp(in[0]->data, r->value.data, nb) == 0);
    if (!ok)
      snprintf(msg, sizeof msg, "%s%s: value differs from probe \"%.100s\" iteration %" PRId64,
               where, op->name, id, iter);
  }
  return check_report(ip, op, ok, ok ? "" : msg);
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
      {"interpreter.probe", K_OTHER, exec_probe},
      {"check.expect_serialized_eq", K_OTHER, exec_serialized_eq},
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
      if (!value_type_equal(rt, &v->dense->type) && !storage_type_equal(rt, &v->dense->type)) {
        char b1[96], b2[96];
        return mx_error_set(MX_ERR_RUNTIME, "constant value type %s differs from result type %s",
                            mx_type_str(&v->dense->type, b1, sizeof b1),
                            mx_type_str(rt, b2, sizeof b2));
      }
      size_t nb = 0;
      st = type_nbytes_checked(ip, rt, &nb);
      if (st) return st;
      if (v->dense->nbytes >= nb) {
        st = value_clone(&out[0], v->dense);
        if (!st) out[0].type = *rt;  // plain storage data may stand for a quantized type
        return st;
      }
      // A dense attribute holding a single element is a splat.
      size_t es = mx_elem_size(rt->elem);
      if (rt->kind != MX_TYPE_TENSOR || v->dense->nbytes != es || !v->dense->data)
        return mx_error_set(MX_ERR_RUNTIME, "constant data is smaller than its type");
      st = value_alloc(ip, &out[0], rt);
      if (st) return st;
      for (size_t off = 0; off < nb; off += es) memcpy(out[0].data + off, v->dense->data, es);
      return MX_OK;
    }
    case MX_OP_OPTIMIZATION_BARRIER:
      if (op->n_results != op->n_operands)
        return mx_error_set(MX_ERR_RUNTIME, "operand and result counts differ");
      for (int32_t i = 0; i < op->n_operands; i++) {
        st = value_clone(&out[i], in[i]);
        if (st) {
          values_free(out, i);
          return st;
        }
      }
      if ((st = check_result_types(f, op, out)) != MX_OK) values_free(out, op->n_results);
      return st;
    case MX_OP_TUPLE: {
      if (op->n_results != 1) return mx_error_set(MX_ERR_RUNTIME, "tuple has one result");
      st = value_alloc(ip, &out[0], &f->values[op->results[0]].type);
      if (st) return st;
      if (out[0].type.kind != MX_TYPE_TUPLE || out[0].n_tuple != op->n_operands) {
        value_free(&out[0]);
        return mx_error_set(MX_ERR_RUNTIME, "tuple result type does not match its operands");
      }
      for (int32_t i = 0; i < op->n_operands; i++) {
        if (!value_type_equal(&out[0].tuple[i].type, &in[i]->type)) {
          value_free(&out[0]);
          return mx_error_set(MX_ERR_RUNTIME, "tuple element %d type mismatch", (int)i);
        }
        value_free(&out[0].tuple[i]);
        st = value_clone(&out[0].tuple[i], in[i]);
        if (st) {
          value_free(&out[0]);
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
      st = value_clone(&out[0], &in[0]->tuple[a->i]);
      if (st) return st;
      if ((st = check_result_types(f, op, out)) != MX_OK) value_free(&out[0]);
      return st;
    }
    case MX_OP_FUNC_CALL:
    case MX_OP_COMPOSITE: {
      const mx_func_t *g = NULL;
      st = find_callee(ip, op, op->code == MX_OP_FUNC_CALL ? "callee" : "decomposition", &g);
      if (st) return st;
      st = call_func(ip, g, in, op->n_operands, out, op->n_results);
      if (st) return st;
      if ((st = check_result_types(f, op, out)) != MX_OK) values_free(out, op->n_results);
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
      if ((st = check_result_types(f, op, out)) != MX_OK) values_free(out, op->n_results);
      return st;
    }
    case MX_OP_WHILE:
      st = exec_while(ip, e, op, in, out);
      if (st) return st;
      if ((st = check_result_types(f, op, out)) != MX_OK) values_free(out, op->n_results);
      return st;
    case MX_OP_CHECK_EXPECT_EQ:
    case MX_OP_CHECK_EXPECT_EQ_CONST:
    case MX_OP_CHECK_EXPECT_ALMOST_EQ:
    case MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST:
    case MX_OP_CHECK_EXPECT_CLOSE: {
      bool jax = op->name && strcmp(op->name, "stablehlo.custom_call") == 0;
      return exec_check(ip, op, in, op->n_operands, mx_opcode_name(op->code), jax);
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
      return exec_check(ip, &tmp, in, op->n_operands, mx_opcode_name(cc), true);
    }
    case MX_OP_UNKNOWN: {
      bool handled;
      st = exec_dynamic(ip, e, op, in, out, &handled);
      if (handled) return st;
      st = exec_named(ip, e, op, in, out, &handled);
      if (handled) return st;
      return unsupported(op);
    }
    default:
      break;
  }
  mx_interp_kernel_fn fn = mx_interp_kernel_lookup(op->code).fn;
  if (!fn) return unsupported(op);
  return run_kernel(ip, f, op, fn, in, out, false);
}

static mx_status_t exec_op(mx_interp_t *ip, mx_env_t *e, const mx_op_t *op) {
  if (op->n_operands < 0 || op->n_results < 0 || (op->n_operands && !op->operands) ||
      (op->n_results && !op->results))
    return mx_error_set(MX_ERR_RUNTIME, "malformed op");
  if (op->code < 0 || op->code >= MX_OP_COUNT) return unsupported(op);
  for (int32_t i = 0; i < op->n_results; i++) {
    mx_status_t st = env_check_id(e, op->results[i]);
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
  for (int32_t i = 0; i < op->n_operands && !st; i++) st = env_get(e, op->operands[i], &in[i]);
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
    for (int32_t i = 0; i < op->n_results && !st; i++) st = env_put(e, op->results[i], &out[i]);
  if (st && out) values_free(out, op->n_results);
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
  probes_free(&ip);
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
    if (!value_type_equal(&f->values[id].type, &args[i].type)) {
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
  probes_free(&ip);
  if (ptrs != small) free(ptrs);
  return st;
}
