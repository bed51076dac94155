// StableHLO text parser: pretty forms of ops that have no opcode of their own (they stay
// MX_OP_UNKNOWN and keep their name; the interpreter runs them by name): chlo.scan, token and
// process-id ops, the dynamic-shape ops, interpreter.probe and check.expect_serialized_eq.
// Each gets the attributes its generic form carries, so both spellings give the same IR.
#include <string.h>

#include "hlo/parse_internal.h"

typedef enum mx_xform {
  MX_XF_SCAN,  // chlo.scan(%i...) inits(%c...) dimension=N [attributes {..}] {..} : (..) -> ..
  MX_XF_SAME,  // %a, %b : T (operands and the one result of type T) or : (..) -> T
  MX_XF_IOTA,  // %shape, dim = N : (S) -> R
  MX_XF_FUNCTIONAL,  // %a, %b : (A, B) -> R
  MX_XF_BROADCAST,   // %x, %shape, dims = [..] [, ...] : (T, S) -> R
  MX_XF_PROBE,       // %x, probe_id = "id" : T            (result of type T)
  MX_XF_SERIALIZED,  // %x, probe_id = "id"[, iter = N] : T  (no result)
} mx_xform_t;

static const struct {
  const char *name;
  mx_xform_t form;
} mx_xops[] = {
    {"chlo.scan", MX_XF_SCAN},
    {"stablehlo.after_all", MX_XF_SAME},
    {"stablehlo.create_token", MX_XF_SAME},
    {"stablehlo.replica_id", MX_XF_SAME},
    {"stablehlo.partition_id", MX_XF_SAME},
    {"stablehlo.dynamic_iota", MX_XF_IOTA},
    {"stablehlo.dynamic_reshape", MX_XF_FUNCTIONAL},
    {"stablehlo.dynamic_pad", MX_XF_FUNCTIONAL},
    {"stablehlo.dynamic_broadcast_in_dim", MX_XF_BROADCAST},
    {"stablehlo.uniform_quantize", MX_XF_FUNCTIONAL},
    {"stablehlo.uniform_dequantize", MX_XF_FUNCTIONAL},
    {"interpreter.probe", MX_XF_PROBE},
    {"check.expect_serialized_eq", MX_XF_SERIALIZED},
};

static int mx_x_find(const mx_tok_t *t) {
  for (size_t i = 0; i < sizeof mx_xops / sizeof mx_xops[0]; i++)
    if (mx_tok_is(t, mx_xops[i].name)) return (int)i;
  return -1;
}

bool mx_p_is_extra_op(const mx_tok_t *t) { return mx_x_find(t) >= 0; }

static mx_type_t *mx_x_types(mx_parser_t *p, int32_t n) {
  return mx_arena_alloc(p->arena, sizeof(mx_type_t) * (size_t)(n > 0 ? n : 1));
}

static mx_status_t mx_x_operands(mx_parser_t *p, mx_pop_t *op) {
  if (mx_p_kind(p) != MX_TK_VALUE) return MX_OK;
  do {
    MX_TRY(mx_p_operand(p, op));
  } while (mx_p_accept(p, MX_TK_COMMA));
  return MX_OK;
}

static mx_status_t mx_x_colon(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' and the operation's type"));
  op->types_tok = *mx_p_tok(p);
  return MX_OK;
}

static mx_status_t mx_x_functional(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_x_colon(p, op));
  mx_ptypes_t ft;
  MX_TRY(mx_p_func_or_types(p, &ft));
  if (!ft.is_func)
    return mx_p_error_at(p, &op->types_tok,
                         "expected function type '(operand types) -> result types'");
  op->operand_types = ft.in;
  op->n_operand_types = ft.n_in;
  op->result_types = ft.out;
  op->n_results = ft.n_out;
  return MX_OK;
}

// `: T` (every operand and the single result have type T) or a function type.
static mx_status_t mx_x_same(mx_parser_t *p, mx_pop_t *op, int32_t n_results) {
  MX_TRY(mx_x_colon(p, op));
  mx_ptypes_t ft;
  MX_TRY(mx_p_func_or_types(p, &ft));
  if (ft.is_func) {
    op->operand_types = ft.in;
    op->n_operand_types = ft.n_in;
    op->result_types = ft.out;
    op->n_results = ft.n_out;
    return MX_OK;
  }
  if (ft.n_out != 1)
    return mx_p_error_at(p, &op->types_tok, "expected a single type or a function type");
  mx_type_t *in = mx_x_types(p, op->n_operands);
  mx_type_t *out = mx_x_types(p, n_results);
  if (!in || !out) return mx_p_oom();
  for (int32_t i = 0; i < op->n_operands; i++) in[i] = ft.out[0];
  for (int32_t i = 0; i < n_results; i++) out[i] = ft.out[0];
  op->operand_types = in;
  op->n_operand_types = op->n_operands;
  op->result_types = out;
  op->n_results = n_results;
  return MX_OK;
}

static mx_status_t mx_x_kw_eq(mx_parser_t *p, const char *kw) {
  MX_TRY(mx_p_expect_kw(p, kw));
  return mx_p_expect(p, MX_TK_EQUAL, "'='");
}

static mx_attr_t mx_x_i32s(mx_parser_t *p, int64_t a, int64_t b) {
  int64_t v[2] = {a, b};
  mx_attr_t r = mx_p_i64s_attr(p, v, 2);
  if (!mx_attr_is_oom(&r)) r.elem = MX_ELEM_I32;
  return r;
}

// `(%a, %b)` (possibly empty) appended to op.
static mx_status_t mx_x_paren_operands(mx_parser_t *p, mx_pop_t *op, const char *what) {
  char buf[64];
  snprintf(buf, sizeof buf, "'(' before %s", what);
  MX_TRY(mx_p_expect(p, MX_TK_LPAREN, buf));
  if (mx_p_accept(p, MX_TK_RPAREN)) return MX_OK;
  MX_TRY(mx_x_operands(p, op));
  snprintf(buf, sizeof buf, "')' after %s", what);
  return mx_p_expect(p, MX_TK_RPAREN, buf);
}

static mx_status_t mx_x_scan(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_x_paren_operands(p, op, "scan inputs"));
  int32_t n_inputs = op->n_operands;
  MX_TRY(mx_p_expect_kw(p, "inits"));
  MX_TRY(mx_x_paren_operands(p, op, "scan inits"));
  int32_t n_inits = op->n_operands - n_inputs;
  MX_TRY(mx_x_kw_eq(p, "dimension"));
  mx_tok_t dt = *mx_p_tok(p);
  int64_t dim;
  MX_TRY(mx_p_int(p, &dim));
  if (dim < 0) return mx_p_error_at(p, &dt, "scan dimension must be non-negative");
  MX_TRY(mx_pop_add_attr(p, op, "dimension", mx_p_int_attr(dim, MX_ELEM_I64)));
  if (mx_p_accept_kw(p, "attributes")) {
    if (mx_p_kind(p) != MX_TK_LBRACE) return mx_p_expected(p, "'{' after 'attributes'");
    MX_TRY(mx_p_opt_attr_dict(p, op));
  }
  mx_block_t *body;
  MX_TRY(mx_p_region(p, NULL, 0, &body));
  MX_TRY(mx_pop_add_region(p, op, body));
  MX_TRY(mx_x_functional(p, op));
  if (op->n_results < n_inits)
    return mx_p_error_at(p, &op->types_tok, "chlo.scan has %d inits but only %d results",
                         (int)n_inits, (int)op->n_results);
  mx_attr_t os = mx_x_i32s(p, n_inputs, n_inits);
  mx_attr_t rs = mx_x_i32s(p, op->n_results - n_inits, n_inits);
  if (mx_attr_is_oom(&os) || mx_attr_is_oom(&rs)) return mx_p_oom();
  MX_TRY(mx_pop_add_attr(p, op, "operandSegmentSizes", os));
  return mx_pop_add_attr(p, op, "resultSegmentSizes", rs);
}

static mx_status_t mx_x_probe_id(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_x_kw_eq(p, "probe_id"));
  if (mx_p_kind(p) != MX_TK_STRING) return mx_p_expected(p, "probe id string");
  mx_attr_t a;
  MX_TRY(mx_p_attr(p, &a));
  return mx_pop_add_attr(p, op, "probe_id", a);
}

mx_status_t mx_p_extra_op(mx_parser_t *p, mx_pop_t *op) {
  int k = mx_x_find(&op->tok);
  if (k < 0) return mx_p_unsupported(p, &op->tok, "%s", op->name);
  switch (mx_xops[k].form) {
    case MX_XF_SCAN:
      return mx_x_scan(p, op);
    case MX_XF_SAME:
      MX_TRY(mx_x_operands(p, op));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_x_same(p, op, 1);
    case MX_XF_IOTA: {
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "','"));
      MX_TRY(mx_x_kw_eq(p, "dim"));
      int64_t d;
      MX_TRY(mx_p_int(p, &d));
      MX_TRY(mx_pop_add_attr(p, op, "iota_dimension", mx_p_int_attr(d, MX_ELEM_I64)));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_x_functional(p, op);
    }
    case MX_XF_FUNCTIONAL:
      MX_TRY(mx_x_operands(p, op));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_x_functional(p, op);
    case MX_XF_BROADCAST: {
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "','"));
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "','"));
      static const char *const kws[3] = {"dims", "known_expanding_dimensions",
                                         "known_nonexpanding_dimensions"};
      static const char *const attrs[3] = {"broadcast_dimensions", "known_expanding_dimensions",
                                           "known_nonexpanding_dimensions"};
      MX_TRY(mx_x_kw_eq(p, kws[0]));
      int i = 0;
      for (;;) {
        int64_t *v;
        int32_t n;
        MX_TRY(mx_p_int_list(p, &v, &n));
        MX_TRY(mx_pop_add_attr(p, op, attrs[i], mx_p_i64s_attr(p, v, n)));
        if (!mx_p_accept(p, MX_TK_COMMA)) break;
        int next = -1;
        for (int j = i + 1; j < 3; j++)
          if (mx_tok_is(mx_p_tok(p), kws[j])) next = j;
        if (next < 0)
          return mx_p_expected(p,
                               "'known_expanding_dimensions' or "
                               "'known_nonexpanding_dimensions'");
        i = next;
        MX_TRY(mx_x_kw_eq(p, kws[i]));
      }
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_x_functional(p, op);
    }
    case MX_XF_PROBE:
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "','"));
      MX_TRY(mx_x_probe_id(p, op));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_x_same(p, op, 1);
    case MX_XF_SERIALIZED:
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "','"));
      MX_TRY(mx_x_probe_id(p, op));
      if (mx_p_accept(p, MX_TK_COMMA)) {
        MX_TRY(mx_x_kw_eq(p, "iter"));
        mx_tok_t it = *mx_p_tok(p);
        int64_t v;
        MX_TRY(mx_p_int(p, &v));
        if (v < 0) return mx_p_error_at(p, &it, "iteration must be non-negative");
        MX_TRY(mx_pop_add_attr(p, op, "iter", mx_p_int_attr(v, MX_ELEM_I64)));
      }
      MX_TRY(mx_p_opt_attr_dict(p, op));
      MX_TRY(mx_x_same(p, op, 0));
      return MX_OK;
  }
  return mx_p_unsupported(p, &op->tok, "%s", op->name);
}
