// Result-type inference for control flow and structure: returns, call, composite, while, if,
// case, custom_call, optimization_barrier, tuple, get_tuple_element.
#include <ctype.h>
#include <string.h>

#include "hlo/infer.h"

static mx_status_t need_results(const mx_op_t *op, int32_t want, int32_t got) {
  if (want != got) return mx_infer_fail(op, "expected %d results, got %d", want, got);
  return MX_OK;
}

static mx_status_t need_declared(const mx_op_t *op, const mx_type_t *decl, int32_t n) {
  if (decl == NULL && n > 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: result types required for inference",
                        mx_infer_opname(op));
  }
  return MX_OK;
}

// Operands and results of a call-like op must match `callee`'s signature.
static mx_status_t infer_callee(const mx_func_t *f, const mx_op_t *op, const char *attr,
                                const mx_type_t *decl, int32_t n_results, mx_type_t *out) {
  const mx_attr_t *a = mx_op_attr(op, attr);
  if (a == NULL || a->s == NULL || (a->kind != MX_ATTR_SYMBOL && a->kind != MX_ATTR_STRING)) {
    return mx_infer_fail(op, "missing required symbol attribute '%s'", attr);
  }
  const mx_func_t *callee = f->module != NULL ? mx_module_find_func(f->module, a->s) : NULL;
  if (callee == NULL) {
    if (f->module == NULL) {
      mx_status_t st = need_declared(op, decl, n_results);
      if (st != MX_OK) return st;
      for (int32_t i = 0; i < n_results; i++) out[i] = decl[i];
      return MX_OK;
    }
    return mx_infer_fail(op, "'%s' refers to unknown function @%s", attr, a->s);
  }
  int32_t n_args = callee->body != NULL ? callee->body->n_args : 0;
  if (op->n_operands != n_args) {
    return mx_infer_fail(op, "@%s takes %d arguments, got %d operands", a->s, n_args,
                         op->n_operands);
  }
  for (int32_t i = 0; i < n_args; i++) {
    const mx_type_t *want = mx_value_type(callee, callee->body->args[i]);
    const mx_type_t *got = mx_infer_operand(f, op, i);
    if (want == NULL || !mx_type_equal(want, got)) {
      return mx_infer_fail(op, "operand %d type %s does not match @%s argument type %s", i,
                           mx_tstr(got).s, a->s, mx_tstr(want).s);
    }
  }
  if (n_results != callee->n_results) {
    return mx_infer_fail(op, "@%s returns %d values, op has %d results", a->s, callee->n_results,
                         n_results);
  }
  for (int32_t i = 0; i < n_results; i++) out[i] = callee->result_types[i];
  return MX_OK;
}

// Types returned by the terminator of `b` (its operands), into out (n entries expected).
static mx_status_t region_result_types(const mx_func_t *f, const mx_op_t *op, const mx_block_t *b,
                                       int32_t n, mx_type_t *out) {
  if (b == NULL || b->n_ops == 0) return mx_infer_fail(op, "region is empty");
  const mx_op_t *term = b->ops[b->n_ops - 1];
  if (term->n_operands != n) {
    return mx_infer_fail(op, "region returns %d values, op has %d results", term->n_operands, n);
  }
  for (int32_t i = 0; i < n; i++) {
    const mx_type_t *t = mx_infer_operand(f, term, i);
    if (t == NULL) return mx_infer_fail(op, "region terminator has an invalid operand");
    out[i] = *t;
  }
  return MX_OK;
}

static mx_status_t infer_branching(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                                   int32_t n_results, mx_type_t *out) {
  bool is_if = op->code == MX_OP_IF;
  if (op->n_operands != 1) {
    return mx_infer_fail(op, "expected 1 operand (%s), got %d", is_if ? "pred" : "index",
                         op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 1);
  if (st != MX_OK) return st;
  const mx_type_t *p = mx_infer_operand(f, op, 0);
  mx_elem_type_t want = is_if ? MX_ELEM_I1 : MX_ELEM_I32;
  if (p->rank != 0 || p->elem != want) {
    return mx_infer_fail(op, "%s type %s must be tensor<%s>", is_if ? "pred" : "index",
                         mx_tstr(p).s, mx_elem_name(want));
  }
  if (is_if && op->n_regions != 0 && op->n_regions != 2) {
    return mx_infer_fail(op, "expected 2 regions, got %d", op->n_regions);
  }
  if (decl != NULL) {
    for (int32_t i = 0; i < n_results; i++) out[i] = decl[i];
    return MX_OK;
  }
  if (op->n_regions > 0 && n_results > 0)
    return region_result_types(f, op, op->regions[0], n_results, out);
  return need_declared(op, decl, n_results);
}

static mx_status_t infer_tuple(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                               int32_t n_results, mx_type_t *out) {
  mx_status_t st = need_results(op, 1, n_results);
  if (st != MX_OK) return st;
  if ((st = need_declared(op, decl, 1)) != MX_OK) return st;
  if (decl->kind != MX_TYPE_TUPLE || decl->n_tuple != op->n_operands) {
    return mx_infer_fail(op, "result type %s must be a tuple of the %d operand types",
                         mx_tstr(decl).s, op->n_operands);
  }
  for (int32_t i = 0; i < op->n_operands; i++) {
    const mx_type_t *t = mx_infer_operand(f, op, i);
    if (!mx_type_equal(t, &decl->tuple[i])) {
      return mx_infer_fail(op, "operand %d type %s differs from tuple element type %s", i,
                           mx_tstr(t).s, mx_tstr(&decl->tuple[i]).s);
    }
  }
  *out = *decl;
  return MX_OK;
}

static mx_status_t infer_get_tuple_element(const mx_func_t *f, const mx_op_t *op, int32_t n_results,
                                           mx_type_t *out) {
  mx_status_t st = need_results(op, 1, n_results);
  if (st != MX_OK) return st;
  if (op->n_operands != 1) return mx_infer_fail(op, "expected 1 operand, got %d", op->n_operands);
  const mx_type_t *t = mx_infer_operand(f, op, 0);
  if (t->kind != MX_TYPE_TUPLE) {
    return mx_infer_fail(op, "operand type %s must be a tuple", mx_tstr(t).s);
  }
  int64_t index;
  if ((st = mx_infer_int(op, NULL, "index", true, 0, &index)) != MX_OK) return st;
  if (index < 0 || index >= t->n_tuple) {
    return mx_infer_fail(op, "index %lld is out of range for %s", (long long)index, mx_tstr(t).s);
  }
  *out = t->tuple[index];
  return MX_OK;
}

// StableHLO's namespaced op name: [a-zA-Z][a-zA-Z0-9_]*([.][a-zA-Z0-9_$]+)+
static bool is_namespaced_name(const char *s) {
  if (!isalpha((unsigned char)*s)) return false;
  while (isalnum((unsigned char)*s) || *s == '_') s++;
  int groups = 0;
  while (*s == '.') {
    s++;
    const char *start = s;
    while (isalnum((unsigned char)*s) || *s == '_' || *s == '$') s++;
    if (s == start) return false;
    groups++;
  }
  return *s == '\0' && groups > 0;
}

mx_status_t mx_infer_control_op(const mx_func_t *f, const mx_op_t *op, const mx_type_t *declared,
                                int32_t n_results, mx_type_t *out, bool *handled) {
  *handled = true;
  switch (op->code) {
    case MX_OP_FUNC_RETURN:
    case MX_OP_RETURN:
      return need_results(op, 0, n_results);
    case MX_OP_FUNC_CALL:
      return infer_callee(f, op, "callee", declared, n_results, out);
    case MX_OP_COMPOSITE: {
      const mx_attr_t *name = mx_op_attr(op, "name");
      if (name == NULL || name->s == NULL) {
        return mx_infer_fail(op, "missing required string attribute 'name'");
      }
      if (!is_namespaced_name(name->s)) {
        return mx_infer_fail(op, "name \"%s\" must be a namespaced op name like \"ns.op\"",
                             name->s);
      }
      return infer_callee(f, op, "decomposition", declared, n_results, out);
    }
    case MX_OP_WHILE:
    case MX_OP_OPTIMIZATION_BARRIER: {
      mx_status_t st = need_results(op, op->n_operands, n_results);
      if (st != MX_OK) return st;
      for (int32_t i = 0; i < n_results; i++) out[i] = *mx_infer_operand(f, op, i);
      return MX_OK;
    }
    case MX_OP_IF:
    case MX_OP_CASE:
      return infer_branching(f, op, declared, n_results, out);
    case MX_OP_TUPLE:
      return infer_tuple(f, op, declared, n_results, out);
    case MX_OP_GET_TUPLE_ELEMENT:
      return infer_get_tuple_element(f, op, n_results, out);
    case MX_OP_CUSTOM_CALL: {
      const mx_attr_t *t = mx_op_attr(op, "call_target_name");
      if (t == NULL || t->s == NULL) {
        return mx_infer_fail(op, "missing required string attribute 'call_target_name'");
      }
      mx_status_t st = need_declared(op, declared, n_results);
      if (st != MX_OK) return st;
      for (int32_t i = 0; i < n_results; i++) out[i] = declared[i];
      return MX_OK;
    }
    default:
      *handled = false;
      return MX_OK;
  }
}
