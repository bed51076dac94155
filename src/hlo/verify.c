// Verifier: every op's result types must equal the inferred ones (mx_infer_op, shared with the
// builder), regions must have the argument and terminator types their op requires, and every
// function must end with a func.return of its result types. Exact where the StableHLO spec is
// clear; ops without rules (unknown ops, check ops, custom_call) keep their declared types.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/infer.h"
#include "hlo/verify_quant.h"

static mx_status_t verify_block(const mx_func_t *f, const mx_block_t *b, const mx_op_t *owner,
                                int depth);

// Adds "line:col: " to the current message when the op has a source position.
static mx_status_t located(const mx_op_t *op, mx_status_t st) {
  if (st == MX_OK || op == NULL || op->line <= 0) return st;
  return mx_error_prefix(st, "%d:%d", op->line, op->col);
}

static const mx_type_t *vtype(const mx_func_t *f, int32_t id) {
  return (id >= 0 && id < f->n_values) ? &f->values[id].type : NULL;
}

static const mx_op_t *terminator(const mx_block_t *b) {
  if (b == NULL || b->n_ops == 0) return NULL;
  const mx_op_t *t = b->ops[b->n_ops - 1];
  return (mx_opcode_flags(t->code) & MX_OPF_TERMINATOR) ? t : NULL;
}

// Region `r` of op: n_args arguments; types[i] (if non-NULL) each argument's exact type, or
// scalar_elems[i] (if non-NULL) a scalar of that element type, or any scalar when scalars.
typedef struct region_sig {
  int32_t n_args;
  const mx_type_t *arg_types;       // exact types, or NULL
  const mx_elem_type_t *arg_elems;  // scalar element types, or NULL
  bool scalar_args;                 // args must be rank-0 tensors
  int32_t n_rets;                   // -1: not checked
  const mx_type_t *ret_types;       // exact types, or NULL
  const mx_elem_type_t *ret_elems;  // scalar element types, or NULL
  bool scalar_rets;
} region_sig_t;

static mx_status_t check_region(const mx_func_t *f, const mx_op_t *op, int32_t ri,
                                const region_sig_t *s) {
  const mx_block_t *r = op->regions[ri];
  if (r == NULL) return mx_infer_fail(op, "region %d is missing", ri);
  if (r->n_args != s->n_args) {
    return mx_infer_fail(op, "region %d has %d arguments, expected %d", ri, r->n_args, s->n_args);
  }
  for (int32_t i = 0; i < r->n_args; i++) {
    const mx_type_t *t = vtype(f, r->args[i]);
    if (t == NULL) return mx_infer_fail(op, "region %d argument %d is invalid", ri, i);
    bool ok = true;
    if (s->arg_types != NULL) {
      ok = mx_type_equal(t, &s->arg_types[i]);
    } else if (s->scalar_args) {
      ok = t->kind == MX_TYPE_TENSOR && t->rank == 0 &&
           (s->arg_elems == NULL || t->elem == s->arg_elems[i]);
    }
    if (!ok) {
      mx_type_t want = s->arg_types != NULL
                           ? s->arg_types[i]
                           : mx_type_scalar(s->arg_elems ? s->arg_elems[i] : t->elem);
      return mx_infer_fail(op, "region %d argument %d has type %s, expected %s%s", ri, i,
                           mx_tstr(t).s, s->arg_types || s->arg_elems ? "" : "a scalar like ",
                           mx_tstr(&want).s);
    }
  }
  const mx_op_t *term = terminator(r);
  if (term == NULL) return mx_infer_fail(op, "region %d does not end with a return", ri);
  if (s->n_rets < 0) return MX_OK;
  if (term->n_operands != s->n_rets) {
    return mx_infer_fail(op, "region %d returns %d values, expected %d", ri, term->n_operands,
                         s->n_rets);
  }
  for (int32_t i = 0; i < s->n_rets; i++) {
    const mx_type_t *t = vtype(f, term->operands[i]);
    if (t == NULL) return mx_infer_fail(op, "region %d returns an invalid value", ri);
    bool ok = true;
    if (s->ret_types != NULL) {
      ok = mx_type_equal(t, &s->ret_types[i]);
    } else if (s->scalar_rets) {
      ok = t->kind == MX_TYPE_TENSOR && t->rank == 0 &&
           (s->ret_elems == NULL || t->elem == s->ret_elems[i]);
    }
    if (!ok) {
      mx_type_t want = s->ret_types != NULL
                           ? s->ret_types[i]
                           : mx_type_scalar(s->ret_elems ? s->ret_elems[i] : t->elem);
      return mx_infer_fail(op, "region %d returns type %s at position %d, expected %s", ri,
                           mx_tstr(t).s, i, mx_tstr(&want).s);
    }
  }
  return MX_OK;
}

// A reduction body (reduce, reduce_window, scatter, select_and_scatter's scatter) following
// StableHLO's rules: 2n scalar args (accumulators, then elements), n scalar returns; each return
// has its accumulator's type; elements are promotable from the inputs' element types, returns
// from the inits'; results take the returns' element types.
static mx_status_t check_reducer(const mx_func_t *f, const mx_op_t *op, int32_t ri,
                                 const int32_t *inputs, const int32_t *inits, int32_t n,
                                 const int32_t *results) {
  const mx_block_t *r = op->regions[ri];
  if (r == NULL) return mx_infer_fail(op, "region %d is missing", ri);
  if (r->n_args != 2 * n) {
    return mx_infer_fail(op, "region %d has %d arguments, expected %d", ri, r->n_args, 2 * n);
  }
  const mx_op_t *term = terminator(r);
  if (term == NULL) return mx_infer_fail(op, "region %d does not end with a return", ri);
  if (term->n_operands != n) {
    return mx_infer_fail(op, "region %d returns %d values, expected %d", ri, term->n_operands, n);
  }
  for (int32_t i = 0; i < n; i++) {
    const mx_type_t *acc = vtype(f, r->args[i]), *el = vtype(f, r->args[n + i]);
    const mx_type_t *ret = vtype(f, term->operands[i]);
    const mx_type_t *in = vtype(f, inputs[i]), *init = vtype(f, inits[i]);
    const mx_type_t *res = results != NULL ? vtype(f, results[i]) : NULL;
    if (acc == NULL || el == NULL || ret == NULL || in == NULL || init == NULL) {
      return mx_infer_fail(op, "region %d refers to an unknown value", ri);
    }
    const mx_type_t *scalars[3] = {acc, el, ret};
    for (int32_t k = 0; k < 3; k++) {
      if (scalars[k]->kind != MX_TYPE_TENSOR || scalars[k]->rank != 0) {
        return mx_infer_fail(op, "region %d %s %d has type %s, expected a scalar tensor", ri,
                             k == 2 ? "return value" : "argument",
                             k == 0   ? i
                             : k == 1 ? n + i
                                      : i,
                             mx_tstr(scalars[k]).s);
      }
    }
    if (ret->elem != acc->elem) {
      return mx_infer_fail(op,
                           "region %d returns type %s at position %d, expected %s (the type "
                           "of argument %d)",
                           ri, mx_tstr(ret).s, i, mx_tstr(acc).s, i);
    }
    if (el->elem != ret->elem && !(mx_elem_is_float(el->elem) && mx_elem_is_float(ret->elem))) {
      return mx_infer_fail(op, "region %d argument %d has type %s, expected %s", ri, n + i,
                           mx_tstr(el).s, mx_tstr(ret).s);
    }
    if (!mx_infer_promotable(init->elem, ret->elem)) {
      return mx_infer_fail(op,
                           "region %d returns type %s at position %d, which %s does not "
                           "promote to",
                           ri, mx_tstr(ret).s, i, mx_tstr(init).s);
    }
    if (!mx_infer_promotable(in->elem, el->elem)) {
      return mx_infer_fail(op, "region %d argument %d has type %s, which %s does not promote to",
                           ri, n + i, mx_tstr(el).s, mx_tstr(in).s);
    }
    if (res != NULL && res->kind == MX_TYPE_TENSOR && res->elem != ret->elem) {
      return mx_infer_fail(op, "result %d has type %s, expected element type %s (the region's)", i,
                           mx_tstr(res).s, mx_elem_name(ret->elem));
    }
  }
  return MX_OK;
}

static mx_status_t need_regions(const mx_op_t *op, int32_t n) {
  if (op->n_regions != n) {
    return mx_infer_fail(op, "expected %d region%s, got %d", n, n == 1 ? "" : "s", op->n_regions);
  }
  return MX_OK;
}

// Region signature rules per op. Scratch arrays are heap-allocated (sizes follow the op).
static mx_status_t check_regions(const mx_func_t *f, const mx_op_t *op) {
  switch (op->code) {
    case MX_OP_REDUCE:
    case MX_OP_REDUCE_WINDOW:
    case MX_OP_SCATTER:
    case MX_OP_SELECT_AND_SCATTER:
    case MX_OP_SORT:
    case MX_OP_MAP:
    case MX_OP_WHILE:
    case MX_OP_IF:
    case MX_OP_CASE:
      break;
    default:
      return MX_OK;  // no region rules (other ops' regions are verified op by op only)
  }
  int32_t nin = op->n_operands, nres = op->n_results;
  size_t cap = (size_t)(2 * (nin > nres ? nin : nres) + 2);
  mx_type_t *types = malloc(sizeof(mx_type_t) * cap);
  mx_elem_type_t *elems = malloc(sizeof(mx_elem_type_t) * cap);
  mx_elem_type_t *rets = malloc(sizeof(mx_elem_type_t) * cap);
  mx_status_t st = MX_OK;
  region_sig_t s;
  memset(&s, 0, sizeof s);
  if (types == NULL || elems == NULL || rets == NULL) {
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    goto done;
  }
  switch (op->code) {
    case MX_OP_REDUCE:
    case MX_OP_REDUCE_WINDOW: {
      if ((st = need_regions(op, 1)) != MX_OK) break;
      int32_t n = nres;
      st = check_reducer(f, op, 0, op->operands, op->operands + n, n, op->results);
      break;
    }
    case MX_OP_SCATTER: {
      if ((st = need_regions(op, 1)) != MX_OK) break;
      // Inputs feed the accumulators; updates play the init values' part.
      int32_t n = nres;
      st = check_reducer(f, op, 0, op->operands, op->operands + n + 1, n, op->results);
      break;
    }
    case MX_OP_SELECT_AND_SCATTER: {
      if ((st = need_regions(op, 2)) != MX_OK) break;
      const mx_type_t *x = vtype(f, op->operands[0]);
      const mx_block_t *sel = op->regions[0];
      if (sel == NULL || sel->n_args != 2) {
        st = mx_infer_fail(op, "select region must take 2 arguments");
        break;
      }
      for (int32_t i = 0; i < 2 && st == MX_OK; i++) {
        const mx_type_t *t = vtype(f, sel->args[i]);
        if (t == NULL || t->kind != MX_TYPE_TENSOR || t->rank != 0 ||
            !(t->elem == x->elem || (mx_elem_is_float(t->elem) && mx_elem_is_float(x->elem)))) {
          st = mx_infer_fail(op, "select region argument %d has type %s, expected tensor<%s>", i,
                             mx_tstr(t).s, mx_elem_name(x->elem));
        }
      }
      if (st != MX_OK) break;
      rets[0] = MX_ELEM_I1;
      s = (region_sig_t){2, NULL, NULL, true, 1, NULL, rets, true};
      if ((st = check_region(f, op, 0, &s)) != MX_OK) break;
      // Scatter region: a reducer over the source elements with init_value.
      st = check_reducer(f, op, 1, &op->operands[1], &op->operands[2], 1, op->results);
      break;
    }
    case MX_OP_SORT: {
      if ((st = need_regions(op, 1)) != MX_OK) break;
      for (int32_t i = 0; i < nin; i++) {
        elems[2 * i] = elems[2 * i + 1] = vtype(f, op->operands[i])->elem;
      }
      rets[0] = MX_ELEM_I1;
      s = (region_sig_t){2 * nin, NULL, elems, true, 1, NULL, rets, true};
      st = check_region(f, op, 0, &s);
      break;
    }
    case MX_OP_MAP: {
      if ((st = need_regions(op, 1)) != MX_OK) break;
      for (int32_t i = 0; i < nin; i++) elems[i] = vtype(f, op->operands[i])->elem;
      rets[0] = vtype(f, op->results[0])->elem;
      s = (region_sig_t){nin, NULL, elems, true, 1, NULL, rets, true};
      st = check_region(f, op, 0, &s);
      break;
    }
    case MX_OP_WHILE: {
      if ((st = need_regions(op, 2)) != MX_OK) break;
      for (int32_t i = 0; i < nin; i++) types[i] = *vtype(f, op->operands[i]);
      types[nin] = mx_type_scalar(MX_ELEM_I1);
      s = (region_sig_t){nin, types, NULL, false, 1, types + nin, NULL, false};
      if ((st = check_region(f, op, 0, &s)) != MX_OK) break;
      s = (region_sig_t){nin, types, NULL, false, nin, types, NULL, false};
      st = check_region(f, op, 1, &s);
      break;
    }
    case MX_OP_IF:
    case MX_OP_CASE: {
      if (op->code == MX_OP_IF && (st = need_regions(op, 2)) != MX_OK) break;
      if (op->n_regions < 1) {
        st = mx_infer_fail(op, "expected at least one branch");
        break;
      }
      for (int32_t i = 0; i < nres; i++) types[i] = *vtype(f, op->results[i]);
      s = (region_sig_t){0, NULL, NULL, false, nres, types, NULL, false};
      for (int32_t r = 0; r < op->n_regions && st == MX_OK; r++) st = check_region(f, op, r, &s);
      break;
    }
    default:
      break;
  }
done:
  free(types);
  free(elems);
  free(rets);
  return st;
}

static mx_status_t verify_op_rec(const mx_func_t *f, const mx_op_t *op, int depth) {
  if (op == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "mx_hlo_verify_op: NULL op");
  if (depth > 256) return located(op, mx_infer_fail(op, "regions nested too deeply"));
  if (op->n_results < 0 || op->n_operands < 0 || (op->n_results > 0 && op->results == NULL) ||
      (op->n_operands > 0 && op->operands == NULL)) {
    return located(op, mx_infer_fail(op, "malformed operand or result list"));
  }
  mx_type_t small_decl[4], small_out[4];
  mx_type_t *decl = small_decl, *out = small_out;
  if (op->n_results > 4) {
    decl = malloc(sizeof(mx_type_t) * (size_t)op->n_results);
    out = malloc(sizeof(mx_type_t) * (size_t)op->n_results);
  }
  mx_status_t st = MX_OK;
  if (decl == NULL || out == NULL) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; st == MX_OK && i < op->n_results; i++) {
    const mx_type_t *t = vtype(f, op->results[i]);
    if (t == NULL) {
      st = mx_infer_fail(op, "result %d refers to an unknown value", i);
    } else {
      decl[i] = *t;
    }
  }
  bool quant = st == MX_OK && mx_verify_has_quant(f, op);
  if (quant && mx_verify_quant_elementwise(op)) {
    st = mx_verify_quant_op(f, op);
    for (int32_t i = 0; st == MX_OK && i < op->n_results; i++) out[i] = decl[i];
  } else if (st == MX_OK) {
    st = mx_infer_op(f, op, decl, op->n_results, out);
  }
  if (st == MX_ERR_INVALID_ARG) st = mx_error_prefix(MX_ERR_VERIFY, "invalid op");
  for (int32_t i = 0; st == MX_OK && i < op->n_results; i++) {
    if (quant ? !mx_verify_quant_types_match(op, &decl[i], &out[i])
              : !mx_type_equal(&decl[i], &out[i])) {
      st = mx_infer_fail(op, "result %d has type %s, expected %s", i, mx_tstr(&decl[i]).s,
                         mx_tstr(&out[i]).s);
    }
  }
  if (decl != small_decl) free(decl);
  if (out != small_out) free(out);
  for (int32_t r = 0; st == MX_OK && r < op->n_regions; r++) {
    if (op->regions == NULL || op->regions[r] == NULL) {
      st = mx_infer_fail(op, "region %d is missing", r);
    } else {
      st = verify_block(f, op->regions[r], op, depth + 1);
      if (st != MX_OK) return st;  // already located at the inner op
    }
  }
  if (st == MX_OK) st = check_regions(f, op);
  return located(op, st);
}

// Ops in order; a terminator only at the end. Regions of `owner` must end with a terminator;
// the function body's terminator is checked by mx_hlo_verify_func.
static mx_status_t verify_block(const mx_func_t *f, const mx_block_t *b, const mx_op_t *owner,
                                int depth) {
  for (int32_t i = 0; i < b->n_ops; i++) {
    const mx_op_t *op = b->ops[i];
    mx_status_t st = verify_op_rec(f, op, depth);
    if (st != MX_OK) return st;
    if ((mx_opcode_flags(op->code) & MX_OPF_TERMINATOR) && i != b->n_ops - 1) {
      return located(op, mx_infer_fail(op, "terminator is not the last op of its block"));
    }
    if (op->code == MX_OP_FUNC_RETURN && owner != NULL) {
      return located(
          op, mx_infer_fail(op, "func.return inside the region of %s", mx_infer_opname(owner)));
    }
  }
  if (owner != NULL && owner->code != MX_OP_UNKNOWN && terminator(b) == NULL) {
    return located(owner, mx_infer_fail(owner, "region does not end with a return"));
  }
  return MX_OK;
}

// SSA visibility: a value is usable after its definition in its block and inside the regions
// nested there, never before or outside. `vis` marks the currently visible values.
static mx_status_t check_dominance(const mx_func_t *f, const mx_block_t *b, uint8_t *vis,
                                   int depth) {
  if (depth > 256) return mx_error_set(MX_ERR_VERIFY, "regions nested too deeply");
  mx_status_t st = MX_OK;
  for (int32_t i = 0; i < b->n_args; i++) {
    if (b->args[i] < 0 || b->args[i] >= f->n_values) {
      return mx_error_set(MX_ERR_VERIFY, "block argument %d refers to an unknown value", i);
    }
    vis[b->args[i]] = 1;
  }
  for (int32_t i = 0; st == MX_OK && i < b->n_ops; i++) {
    const mx_op_t *op = b->ops[i];
    for (int32_t k = 0; k < op->n_operands; k++) {
      int32_t id = op->operands[k];
      if (!vis[id]) {
        const char *name = f->values[id].name;
        st = located(op, mx_infer_fail(op,
                                       "operand %d (%s%s) is used outside the scope of its "
                                       "definition",
                                       k, name ? "%" : "value without name", name ? name : ""));
        break;
      }
    }
    for (int32_t r = 0; st == MX_OK && r < op->n_regions; r++) {
      st = check_dominance(f, op->regions[r], vis, depth + 1);
    }
    for (int32_t k = 0; k < op->n_results; k++) vis[op->results[k]] = 1;
  }
  // Leaving the block: its values go out of scope.
  for (int32_t i = 0; i < b->n_args; i++) vis[b->args[i]] = 0;
  for (int32_t i = 0; i < b->n_ops; i++) {
    for (int32_t k = 0; k < b->ops[i]->n_results; k++) vis[b->ops[i]->results[k]] = 0;
  }
  return st;
}

mx_status_t mx_hlo_verify_op(const mx_func_t *f, const mx_op_t *op) {
  if (f == NULL || op == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "mx_hlo_verify_op: NULL");
  return verify_op_rec(f, op, 0);
}

mx_status_t mx_hlo_verify_func(const mx_func_t *f) {
  if (f == NULL || f->body == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_hlo_verify_func: NULL function");
  }
  if (f->body->n_ops == 0) return MX_OK;  // a declaration (external function): nothing to check
  mx_status_t st = verify_block(f, f->body, NULL, 0);
  if (st != MX_OK) {
    // Keep "line:col: op: ..." first (the parser prefixes the file name); name the function last.
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", mx_error_message());
    return mx_error_set(st, "%s (in function @%s)", msg, f->name ? f->name : "?");
  }
  uint8_t *vis = calloc((size_t)f->n_values + 1, 1);
  if (vis == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  st = check_dominance(f, f->body, vis, 0);
  free(vis);
  if (st != MX_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", mx_error_message());
    return mx_error_set(st, "%s (in function @%s)", msg, f->name ? f->name : "?");
  }
  const mx_op_t *term = terminator(f->body);
  if (term == NULL || term->code != MX_OP_FUNC_RETURN) {
    return mx_error_set(MX_ERR_VERIFY, "function @%s: body does not end with func.return",
                        f->name ? f->name : "?");
  }
  if (term->n_operands != f->n_results) {
    return located(term, mx_error_set(MX_ERR_VERIFY, "func.return: @%s returns %d values, got %d",
                                      f->name, f->n_results, term->n_operands));
  }
  for (int32_t i = 0; i < term->n_operands; i++) {
    const mx_type_t *t = vtype(f, term->operands[i]);
    if (t == NULL || !mx_type_equal(t, &f->result_types[i])) {
      return located(term, mx_error_set(MX_ERR_VERIFY,
                                        "func.return: operand %d type %s does not match @%s result "
                                        "type %s",
                                        i, mx_tstr(t).s, f->name, mx_tstr(&f->result_types[i]).s));
    }
  }
  return MX_OK;
}

mx_status_t mx_hlo_verify_module(const mx_module_t *m) {
  if (m == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "mx_hlo_verify_module: NULL module");
  for (int32_t i = 0; i < m->n_funcs; i++) {
    mx_status_t st = mx_hlo_verify_func(m->funcs[i]);
    if (st != MX_OK) return st;
  }
  return MX_OK;
}
