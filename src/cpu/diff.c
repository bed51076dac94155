// Divergence finder (cpu_diff.h): the fast plan runs first with keep_values; the interpreter
// then runs with an on_op hook that compares each op's results with the plan's memory.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/cpu_diff.h"

typedef struct diff_ctx {
  const mx_cpu_plan_t *plan;
  const mx_func_t *f;
  double tol;
  mx_cpu_diff_report_t *rep;
} diff_ctx_t;

// Error of one element pair: relative to max(1, |ref|); NaN on one side only is infinite.
static double elem_err(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0.0 : INFINITY;
  if (a == b) return 0.0;  // also equal infinities
  double d = fabs(a - b), s = fabs(b) > 1.0 ? fabs(b) : 1.0;
  return isnan(d) ? INFINITY : d / s;
}

static int32_t op_index_of(const mx_func_t *f, const mx_op_t *op) {
  for (int32_t i = 0; i < f->body->n_ops; i++)
    if (f->body->ops[i] == op) return i;
  return -1;
}

// Compares one value (fast against reference) and records it in the report.
static void compare_value(diff_ctx_t *c, mx_cpu_diff_value_t v, const mx_tensor_t *fast,
                          const mx_tensor_t *ref) {
  v.index = -1;
  int64_t n = mx_type_numel(&ref->type);
  for (int64_t i = 0; i < n; i++) {
    double a = mx_tensor_get_f64(fast, i), b = mx_tensor_get_f64(ref, i);
    double e = elem_err(a, b);
    if (e > c->tol) v.n_bad++;
    if (v.index < 0 || e > v.err) {
      v.index = i;
      v.err = e;
      v.fast = a;
      v.ref = b;
    }
  }
  c->rep->n_compared++;
  if (v.index >= 0 && (!c->rep->has_worst || v.err > c->rep->worst.err)) {
    c->rep->worst = v;
    c->rep->has_worst = true;
  }
  if (v.n_bad > 0) {
    c->rep->n_diverged++;
    if (!c->rep->found) {
      c->rep->found = true;
      c->rep->first = v;
    }
  }
}

static void compare_op(void *user, const mx_func_t *f, const mx_op_t *op,
                       const mx_tensor_t *const *results) {
  diff_ctx_t *c = user;
  if (c->rep->whole_function) return;  // no intermediates: the results are compared after
  for (int32_t r = 0; r < op->n_results; r++) {
    const mx_tensor_t *ref = results[r];
    if (ref->type.kind != MX_TYPE_TENSOR) continue;
    mx_tensor_t fast;
    if (mx_cpu_plan_value(c->plan, op->results[r], &fast) != MX_OK || !fast.data) {
      c->rep->n_skipped++;
      continue;
    }
    mx_cpu_diff_value_t v = {
        .op = op, .op_index = op_index_of(f, op), .result = r, .value = op->results[r]};
    compare_value(c, v, &fast, ref);
  }
}

static void free_copies(mx_tensor_t *t, const bool *is_weight, int32_t n) {
  if (!t) return;
  for (int32_t i = 0; i < n; i++)
    if (!is_weight || !is_weight[i]) mx_tensor_free(&t[i]);
  free(t);
}

mx_status_t mx_cpu_diff(const mx_module_t *m, const mx_func_t *f, const mx_tensor_t *args,
                        const bool *is_weight, const mx_cpu_diff_opts_t *opts,
                        mx_cpu_diff_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  if (!m || !f || !f->body || (f->body->n_args && !args))
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_diff: no function or arguments");
  double tol = opts && opts->tol > 0 ? opts->tol : 1e-4;
  int32_t na = f->body->n_args, nr = f->n_results;
  mx_cpu_compile_opts_t co = {.args = args,
                              .is_weight = is_weight,
                              .pool = opts ? opts->pool : NULL,
                              .keep_values = true,
                              .test_perturb_op = opts ? opts->test_perturb_op : NULL,
                              .quant_kernel = opts ? opts->quant_kernel : MX_CPU_QKERNEL_AUTO};
  mx_cpu_plan_t *plan = NULL;
  mx_tensor_t *fa = calloc((size_t)(na ? na : 1), sizeof *fa);
  mx_tensor_t *fr = calloc((size_t)(nr ? nr : 1), sizeof *fr);
  mx_tensor_t *ir = calloc((size_t)(nr ? nr : 1), sizeof *ir);
  mx_status_t st = fa && fr && ir ? MX_OK : mx_error_set(MX_ERR_NOMEM, "out of memory");
  if (!st) st = mx_cpu_compile(m, f, &co, &plan);
  // The fast run gets copies of everything but the weights: it updates aliased caches in place.
  for (int32_t i = 0; !st && i < na; i++) {
    if (is_weight && is_weight[i])
      fa[i] = args[i];
    else
      st = mx_tensor_clone(&fa[i], &args[i]);
  }
  for (int32_t r = 0; !st && r < nr; r++) st = mx_tensor_alloc(&fr[r], &f->result_types[r]);
  if (!st) st = mx_cpu_plan_run(plan, opts ? opts->pool : NULL, fa, na, fr);
  if (!st) {
    mx_cpu_plan_stats_t ps;
    mx_cpu_plan_stats(plan, &ps);
    rep->whole_function = ps.whole_function;
    diff_ctx_t c = {plan, f, tol, rep};
    mx_interp_opts_t io = {.on_op = compare_op, .on_op_user = &c};
    st = mx_interp_run(m, f, args, na, ir, &io);
    if (st) st = mx_error_prefix(st, "reference interpreter");
    const mx_op_t *ret = f->body->ops[f->body->n_ops - 1];
    for (int32_t r = 0; !st && rep->whole_function && r < nr; r++) {
      if (ir[r].type.kind != MX_TYPE_TENSOR) continue;
      mx_cpu_diff_value_t v = {.op_index = -1, .result = r, .value = ret->operands[r]};
      compare_value(&c, v, &fr[r], &ir[r]);
    }
  } else {
    st = mx_error_prefix(st, "fast runtime");
  }
  for (int32_t r = 0; r < nr; r++) {
    if (ir) mx_tensor_free(&ir[r]);
    if (fr) mx_tensor_free(&fr[r]);
  }
  free(ir);
  free(fr);
  free_copies(fa, is_weight, na);
  mx_cpu_plan_destroy(plan);
  return st;
}

// Name of weight argument i: mx.name attribute, else its location, else NULL.
static const char *weight_name(const mx_func_t *f, int32_t i) {
  if (f->arg_attrs && f->arg_attrs[i].n) {
    const mx_attr_t *role = mx_attr_field(&f->arg_attrs[i], "mx.role");
    if (!role || role->kind != MX_ATTR_STRING || !role->s || strcmp(role->s, "weight") != 0)
      return NULL;
    const mx_attr_t *nm = mx_attr_field(&f->arg_attrs[i], "mx.name");
    if (nm && nm->kind == MX_ATTR_STRING && nm->s) return nm->s;
  }
  return f->arg_locs ? f->arg_locs[i] : NULL;
}

// Argument index of value id, or -1.
static int32_t arg_index(const mx_func_t *f, int32_t id) {
  for (int32_t i = 0; i < f->body->n_args; i++)
    if (f->body->args[i] == id) return i;
  return -1;
}

static const char *op_label(const mx_op_t *op) {
  const mx_attr_t *na = op->code == MX_OP_COMPOSITE ? mx_op_attr(op, "name") : NULL;
  return na && na->kind == MX_ATTR_STRING && na->s ? na->s : mx_opcode_name(op->code);
}

static const char *value_name(const mx_func_t *f, int32_t id, char *buf, size_t n) {
  const char *nm = id >= 0 && id < f->n_values ? f->values[id].name : NULL;
  if (nm)
    snprintf(buf, n, "%%%s", nm);
  else
    snprintf(buf, n, "%%v%d", id);
  return buf;
}

void mx_cpu_diff_locate(const mx_func_t *f, int32_t op_index, char *buf, size_t n) {
  if (!f || !f->body || op_index < 0 || op_index >= f->body->n_ops) {
    snprintf(buf, n, "(final results of @%s)", f && f->name ? f->name : "?");
    return;
  }
  const mx_op_t *op = f->body->ops[op_index];
  const char *near = NULL;
  for (int32_t i = op_index; i >= 0 && !near; i--) {
    const mx_op_t *o = f->body->ops[i];
    for (int32_t j = o->n_operands - 1; j >= 0 && !near; j--) {
      int32_t a = arg_index(f, o->operands[j]);
      if (a >= 0) near = weight_name(f, a);
    }
  }
  char vn[64];
  int k = snprintf(buf, n, "%s = %s (op %d of @%s",
                   op->n_results ? value_name(f, op->results[0], vn, sizeof vn) : "", op_label(op),
                   op_index, f->name ? f->name : "?");
  if (k < 0 || (size_t)k >= n) return;
  size_t len = (size_t)k;
  if (op->line > 0) {
    k = snprintf(buf + len, n - len, ", line %d", op->line);
    if (k < 0 || (size_t)k >= n - len) return;
    len += (size_t)k;
  }
  if (near)
    snprintf(buf + len, n - len, "), after weight %s", near);
  else
    snprintf(buf + len, n - len, ")");
}

// "[0, 2, 5]" for flat index i of type t.
static void multi_index(const mx_type_t *t, int64_t i, char *buf, size_t n) {
  int64_t idx[MX_MAX_RANK];
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    int64_t dim = t->dims[d] > 0 ? t->dims[d] : 1;
    idx[d] = i % dim;
    i /= dim;
  }
  size_t len = 0;
  buf[0] = 0;
  for (int32_t d = 0; d < t->rank && len < n; d++) {
    int k = snprintf(buf + len, n - len, "%s%lld", d ? ", " : "[", (long long)idx[d]);
    if (k < 0) return;
    len += (size_t)k;
  }
  if (len < n) snprintf(buf + len, n - len, t->rank ? "]" : "[]");
}

static void format_value(const mx_func_t *f, const mx_cpu_diff_value_t *v, double tol,
                         mx_strbuf_t *sb) {
  char where[512], ty[128], mi[128], vn[64];
  mx_cpu_diff_locate(f, v->op_index, where, sizeof where);
  int32_t id = v->value;
  const mx_type_t *t = mx_value_type(f, id);
  mx_strbuf_printf(sb, "  at: %s\n", where);
  mx_strbuf_printf(sb, "  result %d (%s): %s, %lld of %lld elements beyond %g\n", v->result,
                   value_name(f, id, vn, sizeof vn), mx_type_str(t, ty, sizeof ty),
                   (long long)v->n_bad, (long long)mx_type_numel(t), tol);
  multi_index(t, v->index, mi, sizeof mi);
  mx_strbuf_printf(sb, "  worst element %s (flat %lld): fast %.9g, reference %.9g (error %.3g)\n",
                   mi, (long long)v->index, v->fast, v->ref, v->err);
  for (int32_t j = 0; v->op && j < v->op->n_operands; j++) {
    int32_t o = v->op->operands[j];
    int32_t a = arg_index(f, o);
    const char *wn = a >= 0 ? weight_name(f, a) : NULL;
    mx_strbuf_printf(sb, "  operand %d: %s %s%s%s\n", j, value_name(f, o, vn, sizeof vn),
                     mx_type_str(mx_value_type(f, o), ty, sizeof ty), wn ? " weight " : "",
                     wn ? wn : "");
  }
}

void mx_cpu_diff_format(const mx_func_t *f, const mx_cpu_diff_report_t *rep, double tol,
                        mx_strbuf_t *sb) {
  if (tol <= 0) tol = 1e-4;
  if (rep->found) {
    mx_strbuf_printf(sb, "first divergence (error > %g):\n", tol);
    format_value(f, &rep->first, tol, sb);
  } else {
    mx_strbuf_printf(sb, "no divergence: every compared op result is within %g\n", tol);
  }
  mx_strbuf_printf(
      sb, "%d op results compared, %d diverged, %d not compared%s\n", rep->n_compared,
      rep->n_diverged, rep->n_skipped,
      rep->whole_function ? " (a whole-function plan: only its results compared)" : "");
  if (rep->has_worst) {
    char where[512];
    mx_cpu_diff_locate(f, rep->worst.op_index, where, sizeof where);
    mx_strbuf_printf(sb, "largest error %.3g at %s\n", rep->worst.err, where);
  }
}
