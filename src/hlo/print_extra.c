// StableHLO text printer: pretty forms of ops without an opcode of their own (MX_OP_UNKNOWN,
// identified by name), mirroring what parse_extra.c reads: chlo.scan, token and process-id ops,
// the dynamic-shape ops, uniform_(de)quantize, interpreter.probe, check.expect_serialized_eq.
// An op whose attributes would not read back identically stays in generic form.
#include <string.h>

#include "hlo/print_internal.h"

static const mx_attr_t *mx_px_attr(const mx_op_t *op, const char *name, mx_attr_kind_t kind) {
  const mx_attr_t *a = mx_op_attr(op, name);
  return a && a->kind == kind ? a : NULL;
}

static bool mx_px_i64(const mx_op_t *op, const char *name, int64_t *v) {
  const mx_attr_t *a = mx_px_attr(op, name, MX_ATTR_INT);
  if (!a || a->elem != MX_ELEM_I64) return false;
  *v = a->i;
  return true;
}

static bool mx_px_dims(const mx_op_t *op, const char *name) {
  const mx_attr_t *a = mx_px_attr(op, name, MX_ATTR_DENSE_ARRAY);
  return a && a->elem == MX_ELEM_I64 && a->n >= 0;
}

static bool mx_px_is(const mx_op_t *op, const char *name) { return strcmp(op->name, name) == 0; }

static void mx_px_tail(mx_pr_t *p, const mx_op_t *op, const char *const *elided, bool same) {
  mx_pr_attr_dict(p, op, elided);
  mx_pr_puts(p, " : ");
  if (same)
    mx_pr_same_type(p, op);
  else
    mx_pr_functional_type(p, op);
}

static bool mx_px_segments(const mx_op_t *op, const char *name, int64_t a, int64_t b) {
  const mx_attr_t *s = mx_px_attr(op, name, MX_ATTR_DENSE_ARRAY);
  return s && s->elem == MX_ELEM_I32 && s->n == 2 && s->ints[0] == a && s->ints[1] == b;
}

static bool mx_px_scan(mx_pr_t *p, const mx_op_t *op) {
  const mx_attr_t *seg = mx_px_attr(op, "operandSegmentSizes", MX_ATTR_DENSE_ARRAY);
  int64_t dim;
  if (op->n_regions != 1 || !op->regions[0] || !seg || seg->n != 2 || seg->ints[0] < 0 ||
      seg->ints[1] < 0 || seg->ints[0] + seg->ints[1] != op->n_operands ||
      !mx_px_i64(op, "dimension", &dim) || dim < 0)
    return false;
  int32_t n_in = (int32_t)seg->ints[0], n_init = (int32_t)seg->ints[1];
  if (op->n_results < n_init || !mx_px_segments(op, "operandSegmentSizes", n_in, n_init) ||
      !mx_px_segments(op, "resultSegmentSizes", op->n_results - n_init, n_init))
    return false;
  mx_pr_op_name(p, op);
  mx_pr_puts(p, "(");
  mx_pr_values(p, op->operands, n_in);
  mx_pr_puts(p, ") inits(");
  mx_pr_values(p, op->operands + n_in, n_init);
  mx_strbuf_printf(p->sb, ") dimension=%lld", (long long)dim);
  static const char *const elided[] = {"dimension", "operandSegmentSizes", "resultSegmentSizes",
                                       NULL};
  if (op->n_attrs > 3) {
    mx_pr_puts(p, " attributes");
    mx_pr_attr_dict(p, op, elided);
  }
  mx_pr_puts(p, " ");
  mx_pr_region(p, op->regions[0], true);
  mx_pr_puts(p, " : ");
  mx_pr_functional_type(p, op);
  return true;
}

static bool mx_px_probe(mx_pr_t *p, const mx_op_t *op, bool is_check) {
  const mx_attr_t *id = mx_px_attr(op, "probe_id", MX_ATTR_STRING);
  int64_t iter = 0;
  bool has_iter = mx_op_attr(op, "iter") != NULL;
  if (!id || !id->s || op->n_operands != 1 || op->n_results != (is_check ? 0 : 1)) return false;
  if (has_iter && (!is_check || !mx_px_i64(op, "iter", &iter) || iter < 0)) return false;
  mx_pr_op_name(p, op);
  mx_pr_puts(p, " ");
  mx_pr_values(p, op->operands, 1);
  mx_pr_puts(p, ", probe_id = ");
  mx_pr_string(p, id->s);
  if (has_iter) mx_strbuf_printf(p->sb, ", iter = %lld", (long long)iter);
  static const char *const elided[] = {"probe_id", "iter", NULL};
  if (is_check) {
    mx_pr_attr_dict(p, op, elided);
    mx_pr_puts(p, " : ");
    mx_pr_type(p, mx_pr_vtype(p, op->operands[0]));
  } else {
    mx_px_tail(p, op, elided, true);
  }
  return true;
}

static bool mx_px_broadcast(mx_pr_t *p, const mx_op_t *op) {
  static const char *const kws[3] = {"dims", "known_expanding_dimensions",
                                     "known_nonexpanding_dimensions"};
  static const char *const attrs[4] = {"broadcast_dimensions", "known_expanding_dimensions",
                                       "known_nonexpanding_dimensions", NULL};
  if (op->n_operands != 2 || op->n_results != 1 || !mx_px_dims(op, attrs[0])) return false;
  for (int i = 1; i < 3; i++)
    if (mx_op_attr(op, attrs[i]) && !mx_px_dims(op, attrs[i])) return false;
  mx_pr_op_name(p, op);
  mx_pr_puts(p, " ");
  mx_pr_values(p, op->operands, 2);
  for (int i = 0; i < 3; i++) {
    const mx_attr_t *a = mx_op_attr(op, attrs[i]);
    if (!a) continue;
    mx_strbuf_printf(p->sb, ", %s = ", kws[i]);
    mx_pr_i64_list(p, a->ints, a->n);
  }
  mx_px_tail(p, op, attrs, false);
  return true;
}

bool mx_pr_extra_op(mx_pr_t *p, const mx_op_t *op) {
  if (op->code != MX_OP_UNKNOWN || !op->name) return false;
  if (mx_px_is(op, "chlo.scan")) return mx_px_scan(p, op);
  if (op->n_regions != 0) return false;
  if (mx_px_is(op, "stablehlo.after_all") || mx_px_is(op, "stablehlo.create_token") ||
      mx_px_is(op, "stablehlo.replica_id") || mx_px_is(op, "stablehlo.partition_id")) {
    if (op->n_results != 1) return false;
    mx_pr_op_name(p, op);
    if (op->n_operands) {
      mx_pr_puts(p, " ");
      mx_pr_values(p, op->operands, op->n_operands);
    }
    mx_px_tail(p, op, NULL, true);
    return true;
  }
  if (mx_px_is(op, "stablehlo.dynamic_iota")) {
    int64_t d;
    if (op->n_operands != 1 || op->n_results != 1 || !mx_px_i64(op, "iota_dimension", &d))
      return false;
    mx_pr_op_name(p, op);
    mx_pr_puts(p, " ");
    mx_pr_values(p, op->operands, 1);
    mx_strbuf_printf(p->sb, ", dim = %lld", (long long)d);
    static const char *const elided[] = {"iota_dimension", NULL};
    mx_px_tail(p, op, elided, false);
    return true;
  }
  if (mx_px_is(op, "stablehlo.dynamic_reshape") || mx_px_is(op, "stablehlo.dynamic_pad") ||
      mx_px_is(op, "stablehlo.uniform_quantize") || mx_px_is(op, "stablehlo.uniform_dequantize")) {
    if (op->n_operands < 1) return false;
    mx_pr_op_name(p, op);
    mx_pr_puts(p, " ");
    mx_pr_values(p, op->operands, op->n_operands);
    mx_px_tail(p, op, NULL, false);
    return true;
  }
  if (mx_px_is(op, "stablehlo.dynamic_broadcast_in_dim")) return mx_px_broadcast(p, op);
  if (mx_px_is(op, "interpreter.probe")) return mx_px_probe(p, op, false);
  if (mx_px_is(op, "check.expect_serialized_eq")) return mx_px_probe(p, op, true);
  return false;
}
