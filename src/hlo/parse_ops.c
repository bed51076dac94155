// StableHLO text parser: pretty (custom assembly) forms of the ops in MX_OP_LIST, and the
// mapping of every op's attributes to the canonical (generic-form) representation.
#include <stdlib.h>
#include <string.h>

#include "hlo/parse_internal.h"

// ============================================================================================
// Small helpers
// ============================================================================================

static mx_type_t *mx_o_types(mx_parser_t *p, int32_t n) {
  return mx_arena_alloc(p->arena, sizeof(mx_type_t) * (size_t)(n > 0 ? n : 1));
}

// Comma-separated operands; zero if the current token is not a value.
static mx_status_t mx_o_operands(mx_parser_t *p, mx_pop_t *op) {
  if (mx_p_kind(p) != MX_TK_VALUE) return MX_OK;
  do {
    MX_TRY(mx_p_operand(p, op));
  } while (mx_p_accept(p, MX_TK_COMMA));
  return MX_OK;
}

static mx_status_t mx_o_comma(mx_parser_t *p) { return mx_p_expect(p, MX_TK_COMMA, "','"); }

static mx_status_t mx_o_colon(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' and the operation's type"));
  op->types_tok = *mx_p_tok(p);
  return MX_OK;
}

static void mx_o_set_in(mx_pop_t *op, mx_type_t *in, int32_t n) {
  op->operand_types = in;
  op->n_operand_types = n;
}

// `: T` (all operands and `n_results` results have type T) or `: (ins) -> outs`.
static mx_status_t mx_o_types_same(mx_parser_t *p, mx_pop_t *op, int32_t n_results) {
  MX_TRY(mx_o_colon(p, op));
  mx_ptypes_t ft;
  MX_TRY(mx_p_func_or_types(p, &ft));
  if (ft.is_func) {
    mx_o_set_in(op, ft.in, ft.n_in);
    op->result_types = ft.out;
    op->n_results = ft.n_out;
    return MX_OK;
  }
  if (ft.n_out != 1)
    return mx_p_error_at(p, &op->types_tok, "expected a single type or a function type");
  mx_type_t *in = mx_o_types(p, op->n_operands);
  mx_type_t *out = mx_o_types(p, n_results);
  if (!in || !out) return mx_p_oom();
  for (int32_t i = 0; i < op->n_operands; i++) in[i] = ft.out[0];
  for (int32_t i = 0; i < n_results; i++) out[i] = ft.out[0];
  mx_o_set_in(op, in, op->n_operands);
  op->result_types = out;
  op->n_results = n_results;
  return MX_OK;
}

static mx_status_t mx_o_types_func(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_o_colon(p, op));
  mx_ptypes_t ft;
  MX_TRY(mx_p_func_or_types(p, &ft));
  if (!ft.is_func)
    return mx_p_error_at(p, &op->types_tok,
                         "expected function type '(operand types) -> result types'");
  mx_o_set_in(op, ft.in, ft.n_in);
  op->result_types = ft.out;
  op->n_results = ft.n_out;
  return MX_OK;
}

// `: T, T, ...` giving the operand types; no results.
static mx_status_t mx_o_types_operands(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_o_colon(p, op));
  mx_type_t *ts;
  int32_t n;
  MX_TRY(mx_p_type_list(p, &ts, &n));
  mx_o_set_in(op, ts, n);
  op->n_results = 0;
  return MX_OK;
}

static mx_status_t mx_o_kw_eq(mx_parser_t *p, const char *kw) {
  MX_TRY(mx_p_expect_kw(p, kw));
  return mx_p_expect(p, MX_TK_EQUAL, "'='");
}

// `kw = [i, j]` -> DENSE_ARRAY i64 attribute `attr`.
static mx_status_t mx_o_kw_ints(mx_parser_t *p, mx_pop_t *op, const char *kw, const char *attr) {
  MX_TRY(mx_o_kw_eq(p, kw));
  int64_t *v;
  int32_t n;
  MX_TRY(mx_p_int_list(p, &v, &n));
  return mx_pop_add_attr(p, op, attr, mx_p_i64s_attr(p, v, n));
}

static mx_status_t mx_o_kw_int(mx_parser_t *p, mx_pop_t *op, const char *kw, const char *attr,
                               mx_elem_type_t et) {
  MX_TRY(mx_o_kw_eq(p, kw));
  int64_t v;
  MX_TRY(mx_p_int(p, &v));
  return mx_pop_add_attr(p, op, attr, mx_p_int_attr(v, et));
}

static mx_status_t mx_o_float(mx_parser_t *p, double *out) {
  bool neg = mx_p_accept(p, MX_TK_MINUS);
  const mx_tok_t *t = mx_p_tok(p);
  if (t->kind == MX_TK_FLOAT) {
    MX_TRY(mx_p_float_text(p, t->text, t->len, out, NULL));
  } else if (t->kind == MX_TK_INT && !t->is_hex) {
    uint64_t u;
    if (!mx_p_tok_u64(t, &u)) return mx_p_error_at(p, t, "number too large");
    *out = (double)u;
  } else {
    return mx_p_expected(p, "floating point number");
  }
  if (neg) *out = -*out;
  mx_p_next(p);
  return MX_OK;
}

static mx_attr_t mx_o_float_attr(double v) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_FLOAT;
  a.f = v;
  a.elem = MX_ELEM_F64;
  return a;
}

static mx_status_t mx_o_enum(mx_parser_t *p, const char *kind, const char *const *allowed,
                             mx_attr_t *out) {
  const mx_tok_t *t = mx_p_tok(p);
  if (t->kind != MX_TK_IDENT) {
    char what[64];
    snprintf(what, sizeof what, "%s value", kind);
    return mx_p_expected(p, what);
  }
  bool ok = allowed == NULL;
  for (int i = 0; allowed && allowed[i]; i++) ok = ok || mx_tok_is(t, allowed[i]);
  if (!ok) {
    char what[64];
    snprintf(what, sizeof what, "%s value", kind);
    return mx_p_expected(p, what);
  }
  memset(out, 0, sizeof *out);
  out->kind = MX_ATTR_ENUM;
  out->enum_kind = kind;
  out->s = mx_p_strndup(p, t->text, t->len);
  if (!out->s) return mx_p_oom();
  mx_p_next(p);
  return MX_OK;
}

static const char *const mx_precisions[] = {"DEFAULT", "HIGH", "HIGHEST", NULL};

// `precision = [DEFAULT, HIGH]` -> precision_config ARRAY of ENUM
static mx_status_t mx_o_precision(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_o_kw_eq(p, "precision"));
  MX_TRY(mx_p_expect(p, MX_TK_LSQUARE, "'['"));
  mx_attr_t *items = mx_arena_alloc(p->arena, sizeof(mx_attr_t) * 2);
  if (!items) return mx_p_oom();
  int32_t n = 0;
  if (!mx_p_accept(p, MX_TK_RSQUARE)) {
    for (;;) {
      if (n == 2) return mx_p_error_at(p, mx_p_tok(p), "at most two precision values allowed");
      MX_TRY(mx_o_enum(p, "precision", mx_precisions, &items[n++]));
      if (mx_p_accept(p, MX_TK_RSQUARE)) break;
      MX_TRY(mx_o_comma(p));
    }
  }
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_ARRAY;
  a.n = n;
  a.items = items;
  return mx_pop_add_attr(p, op, "precision_config", a);
}

// `[a, b] x [c, d]`
static mx_status_t mx_o_lhs_rhs(mx_parser_t *p, mx_attr_t *l, mx_attr_t *r) {
  int64_t *v;
  int32_t n;
  MX_TRY(mx_p_int_list(p, &v, &n));
  *l = mx_p_i64s_attr(p, v, n);
  MX_TRY(mx_p_expect_kw(p, "x"));
  MX_TRY(mx_p_int_list(p, &v, &n));
  *r = mx_p_i64s_attr(p, v, n);
  if (mx_attr_is_oom(l) || mx_attr_is_oom(r)) return mx_p_oom();
  return MX_OK;
}

static mx_status_t mx_o_dot_general(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_p_operand(p, op));
  MX_TRY(mx_o_comma(p));
  MX_TRY(mx_p_operand(p, op));
  MX_TRY(mx_o_comma(p));
  mx_attr_t lb, rb, lc, rc;
  lb = rb = mx_p_i64s_attr(p, NULL, 0);
  if (mx_p_accept_kw(p, "batching_dims")) {
    MX_TRY(mx_p_expect(p, MX_TK_EQUAL, "'='"));
    MX_TRY(mx_o_lhs_rhs(p, &lb, &rb));
    MX_TRY(mx_o_comma(p));
  }
  MX_TRY(mx_o_kw_eq(p, "contracting_dims"));
  MX_TRY(mx_o_lhs_rhs(p, &lc, &rc));
  mx_named_attr_t *f = NULL;
  int32_t n = 0, cap = 0;
  MX_TRY(mx_p_add_field(p, &f, &n, &cap, "lhs_batching_dimensions", lb));
  MX_TRY(mx_p_add_field(p, &f, &n, &cap, "rhs_batching_dimensions", rb));
  MX_TRY(mx_p_add_field(p, &f, &n, &cap, "lhs_contracting_dimensions", lc));
  MX_TRY(mx_p_add_field(p, &f, &n, &cap, "rhs_contracting_dimensions", rc));
  mx_attr_t dd;
  memset(&dd, 0, sizeof dd);
  dd.kind = MX_ATTR_STRUCT;
  dd.s = "stablehlo.dot";
  dd.n = n;
  dd.fields = f;
  MX_TRY(mx_pop_add_attr(p, op, "dot_dimension_numbers", dd));
  if (mx_p_accept(p, MX_TK_COMMA)) {
    if (mx_tok_is(mx_p_tok(p), "precision")) {
      MX_TRY(mx_o_precision(p, op));
      if (mx_p_accept(p, MX_TK_COMMA) && !mx_tok_is(mx_p_tok(p), "algorithm"))
        return mx_p_expected(p, "'algorithm'");
    }
    if (mx_tok_is(mx_p_tok(p), "algorithm")) {
      MX_TRY(mx_o_kw_eq(p, "algorithm"));
      mx_attr_t alg;
      MX_TRY(mx_p_struct_body(p, "stablehlo.dot_algorithm", &alg));
      MX_TRY(mx_pop_add_attr(p, op, "algorithm", alg));
    } else if (!mx_p_at_type(p) && mx_p_kind(p) != MX_TK_LBRACE && mx_p_kind(p) != MX_TK_COLON) {
      return mx_p_expected(p, "'precision' or 'algorithm'");
    }
  }
  MX_TRY(mx_p_opt_attr_dict(p, op));
  return mx_o_types_func(p, op);
}

static mx_status_t mx_o_convolution(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_p_expect(p, MX_TK_LPAREN, "'(' before convolution operands"));
  if (!mx_p_accept(p, MX_TK_RPAREN)) {
    MX_TRY(mx_o_operands(p, op));
    MX_TRY(mx_p_expect(p, MX_TK_RPAREN, "')' after convolution operands"));
  }
  MX_TRY(mx_o_kw_eq(p, "dim_numbers"));
  mx_attr_t dn;
  MX_TRY(mx_p_conv_dims(p, &dn));
  MX_TRY(mx_pop_add_attr(p, op, "dimension_numbers", dn));
  MX_TRY(mx_o_comma(p));
  MX_TRY(mx_o_kw_eq(p, "window"));
  MX_TRY(mx_p_expect(p, MX_TK_LBRACE, "'{' after 'window ='"));
  bool seen[5] = {false, false, false, false, false};
  static const char *const keys[5] = {"stride", "pad", "lhs_dilate", "rhs_dilate", "reverse"};
  static const char *const names[5] = {"window_strides", "padding", "lhs_dilation", "rhs_dilation",
                                       "window_reversal"};
  while (mx_p_kind(p) == MX_TK_IDENT) {
    int k = -1;
    for (int i = 0; i < 5; i++)
      if (mx_tok_is(mx_p_tok(p), keys[i])) k = i;
    if (k < 0) return mx_p_expected(p, "one of stride, pad, lhs_dilate, rhs_dilate, reverse");
    if (seen[k]) return mx_p_error_at(p, mx_p_tok(p), "duplicate window attribute '%s'", keys[k]);
    seen[k] = true;
    mx_p_next(p);
    MX_TRY(mx_p_expect(p, MX_TK_EQUAL, "'='"));
    if (k == 1) {
      // [[lo, hi], ...] -> DENSE tensor<Nx2xi64>
      MX_TRY(mx_p_expect(p, MX_TK_LSQUARE, "'[' to begin padding"));
      int64_t *v = NULL;
      int32_t n = 0, cap = 0;
      if (!mx_p_accept(p, MX_TK_RSQUARE)) {
        for (;;) {
          int64_t *pair;
          int32_t np;
          mx_tok_t pt = *mx_p_tok(p);
          MX_TRY(mx_p_int_list(p, &pair, &np));
          if (np != 2) return mx_p_error_at(p, &pt, "expected [low, high] padding pair");
          if (n + 2 > cap) {
            int32_t nc = cap ? cap * 2 : 8;
            if (nc > (1 << 20)) return mx_p_error_at(p, &pt, "padding list too long");
            v = mx_arena_grow(p->arena, v, (size_t)n, (size_t)nc, sizeof(int64_t));
            if (!v) return mx_p_oom();
            cap = nc;
          }
          v[n++] = pair[0];
          v[n++] = pair[1];
          if (mx_p_accept(p, MX_TK_RSQUARE)) break;
          MX_TRY(mx_o_comma(p));
        }
      }
      int64_t dims[2] = {n / 2, 2};
      mx_tensor_t *t = mx_arena_alloc(p->arena, sizeof(mx_tensor_t));
      if (!t) return mx_p_oom();
      t->type = mx_type_tensor(MX_ELEM_I64, 2, dims);
      t->nbytes = sizeof(int64_t) * (size_t)n;
      t->data = mx_arena_alloc(p->arena, t->nbytes ? t->nbytes : 1);
      if (!t->data) return mx_p_oom();
      if (n) memcpy(t->data, v, t->nbytes);
      mx_attr_t a;
      memset(&a, 0, sizeof a);
      a.kind = MX_ATTR_DENSE;
      a.dense = t;
      MX_TRY(mx_pop_add_attr(p, op, names[k], a));
    } else {
      int64_t *v;
      int32_t n;
      MX_TRY(mx_p_int_list(p, &v, &n));
      mx_attr_t a = mx_p_i64s_attr(p, v, n);
      if (mx_attr_is_oom(&a)) return mx_p_oom();
      if (k == 4) {
        a.elem = MX_ELEM_I1;
        for (int32_t i = 0; i < n; i++) a.ints[i] = a.ints[i] != 0;
      }
      MX_TRY(mx_pop_add_attr(p, op, names[k], a));
    }
    if (!mx_p_accept(p, MX_TK_COMMA)) break;
  }
  MX_TRY(mx_p_expect(p, MX_TK_RBRACE, "'}' closing window attributes"));
  MX_TRY(mx_p_opt_attr_dict(p, op));
  return mx_o_types_func(p, op);
}

// Builds the reduce body `^bb0(%a: T, %b: T): %r = <inner> %a, %b : T; stablehlo.return %r`.
static mx_status_t mx_o_reduce_body(mx_parser_t *p, mx_pop_t *op, mx_opcode_t inner,
                                    const mx_tok_t *inner_tok) {
  if (op->n_operand_types < 1 || op->operand_types[0].kind != MX_TYPE_TENSOR)
    return mx_p_error_at(p, &op->types_tok, "reduce needs at least one tensor input type");
  mx_type_t st = mx_type_scalar(op->operand_types[0].elem);
  mx_block_t *b = mx_block_create(p->f);
  if (!b) return mx_p_oom();
  int32_t a0, a1;
  if (mx_block_add_arg(p->f, b, &st, NULL, &a0) || mx_block_add_arg(p->f, b, &st, NULL, &a1))
    return mx_p_oom();
  int32_t ins[2] = {a0, a1};
  mx_op_t *o = mx_block_append_op(p->f, b, inner, NULL, ins, 2, &st, 1);
  if (!o) return mx_p_oom();
  o->line = inner_tok->line;
  o->col = inner_tok->col;
  mx_op_t *r = mx_block_append_op(p->f, b, MX_OP_RETURN, NULL, o->results, 1, NULL, 0);
  if (!r) return mx_p_oom();
  r->line = inner_tok->line;
  r->col = inner_tok->col;
  return mx_pop_add_region(p, op, b);
}

static mx_status_t mx_o_reduce(mx_parser_t *p, mx_pop_t *op) {
  // (%x init: %c), (%y init: %d) -- stored as inputs then inits.
  mx_pop_t inits;
  memset(&inits, 0, sizeof inits);
  do {
    MX_TRY(mx_p_expect(p, MX_TK_LPAREN, "'(' before reduce operand"));
    MX_TRY(mx_p_operand(p, op));
    MX_TRY(mx_p_expect_kw(p, "init"));
    MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' after 'init'"));
    MX_TRY(mx_p_operand(p, &inits));
    MX_TRY(mx_p_expect(p, MX_TK_RPAREN, "')' after reduce init value"));
  } while (mx_p_accept(p, MX_TK_COMMA));
  for (int32_t i = 0; i < inits.n_operands; i++)
    MX_TRY(mx_p_push_operand(p, op, inits.operands[i], &inits.operand_toks[i]));
  mx_opcode_t inner = MX_OP_UNKNOWN;
  mx_tok_t inner_tok = *mx_p_tok(p);
  if (mx_p_accept_kw(p, "applies")) {
    inner_tok = *mx_p_tok(p);
    if (inner_tok.kind != MX_TK_IDENT) return mx_p_expected(p, "reduction operation name");
    inner = mx_opcode_from_name(inner_tok.text, inner_tok.len);
    if (!(mx_opcode_flags(inner) & MX_OPF_BINARY))
      return mx_p_error_at(p, &inner_tok,
                           "expected a binary stablehlo operation after 'applies', got '%.*s'",
                           (int)inner_tok.len, inner_tok.text);
    mx_p_next(p);
  }
  MX_TRY(mx_p_expect_kw(p, "across"));
  MX_TRY(mx_o_kw_ints(p, op, "dimensions", "dimensions"));
  MX_TRY(mx_p_opt_attr_dict(p, op));
  MX_TRY(mx_o_types_func(p, op));
  if (inner != MX_OP_UNKNOWN) return mx_o_reduce_body(p, op, inner, &inner_tok);
  MX_TRY(mx_p_skip_loc(p));
  MX_TRY(mx_p_expect_kw(p, "reducer"));
  // (%a0: T, %b0: T) (%a1: T, %b1: T): block args are a0, a1, ..., b0, b1, ...
  int32_t cap = 8, n = 0;
  mx_parg_t *firsts = mx_arena_alloc(p->arena, sizeof(mx_parg_t) * (size_t)cap);
  mx_parg_t *seconds = mx_arena_alloc(p->arena, sizeof(mx_parg_t) * (size_t)cap);
  if (!firsts || !seconds) return mx_p_oom();
  while (mx_p_accept(p, MX_TK_LPAREN)) {
    if (n == cap) {
      firsts = mx_arena_grow(p->arena, firsts, (size_t)n, (size_t)cap * 2, sizeof(mx_parg_t));
      seconds = mx_arena_grow(p->arena, seconds, (size_t)n, (size_t)cap * 2, sizeof(mx_parg_t));
      if (!firsts || !seconds) return mx_p_oom();
      cap *= 2;
    }
    for (int k = 0; k < 2; k++) {
      mx_parg_t *a = k == 0 ? &firsts[n] : &seconds[n];
      if (mx_p_kind(p) != MX_TK_VALUE || mx_p_tok(p)->num >= 0)
        return mx_p_expected(p, "reducer argument name");
      a->tok = *mx_p_tok(p);
      mx_p_next(p);
      MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' after reducer argument"));
      MX_TRY(mx_p_type(p, &a->type));
      MX_TRY(mx_p_skip_loc(p));
      if (k == 0) MX_TRY(mx_o_comma(p));
    }
    MX_TRY(mx_p_expect(p, MX_TK_RPAREN, "')' after reducer arguments"));
    n++;
  }
  mx_parg_t *all = mx_arena_alloc(p->arena, sizeof(mx_parg_t) * (size_t)(2 * n + 1));
  if (!all) return mx_p_oom();
  for (int32_t i = 0; i < n; i++) {
    all[i] = firsts[i];
    all[n + i] = seconds[i];
  }
  mx_block_t *b;
  MX_TRY(mx_p_region(p, all, 2 * n, &b));
  return mx_pop_add_region(p, op, b);
}

static mx_status_t mx_o_while(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_p_expect(p, MX_TK_LPAREN, "'(' after 'stablehlo.while'"));
  mx_parg_t *args = NULL;
  int32_t n = 0, cap = 0;
  if (!mx_p_accept(p, MX_TK_RPAREN)) {
    for (;;) {
      if (n == cap) {
        int32_t nc = cap ? cap * 2 : 4;
        args = mx_arena_grow(p->arena, args, (size_t)n, (size_t)nc, sizeof(mx_parg_t));
        if (!args) return mx_p_oom();
        cap = nc;
      }
      if (mx_p_kind(p) != MX_TK_VALUE || mx_p_tok(p)->num >= 0)
        return mx_p_expected(p, "loop-carried value name");
      args[n].tok = *mx_p_tok(p);
      mx_p_next(p);
      MX_TRY(mx_p_expect(p, MX_TK_EQUAL, "'=' after loop-carried value name"));
      MX_TRY(mx_p_operand(p, op));
      n++;
      if (mx_p_accept(p, MX_TK_RPAREN)) break;
      MX_TRY(mx_o_comma(p));
    }
  }
  mx_type_t *types = NULL;
  int32_t nt = 0;
  if (n) {
    MX_TRY(mx_o_colon(p, op));
    MX_TRY(mx_p_type_list(p, &types, &nt));
    if (nt != n)
      return mx_p_error_at(p, &op->types_tok, "while has %d operands but %d types", (int)n,
                           (int)nt);
    for (int32_t i = 0; i < n; i++) args[i].type = types[i];
  }
  mx_o_set_in(op, types, nt);
  op->result_types = types;
  op->n_results = nt;
  if (mx_p_accept_kw(p, "attributes")) {
    if (mx_p_kind(p) != MX_TK_LBRACE) return mx_p_expected(p, "'{' after 'attributes'");
    MX_TRY(mx_p_opt_attr_dict(p, op));
  }
  MX_TRY(mx_p_expect_kw(p, "cond"));
  mx_block_t *c, *b;
  MX_TRY(mx_p_region(p, args, n, &c));
  MX_TRY(mx_p_expect_kw(p, "do"));
  MX_TRY(mx_p_region(p, args, n, &b));
  MX_TRY(mx_pop_add_region(p, op, c));
  return mx_pop_add_region(p, op, b);
}

static mx_status_t mx_o_constant(mx_parser_t *p, mx_pop_t *op) {
  if (mx_p_accept(p, MX_TK_LPAREN)) {
    // stablehlo.constant() <{value = ...}> : () -> T
    MX_TRY(mx_p_expect(p, MX_TK_RPAREN, "')'"));
    if (mx_p_accept(p, MX_TK_LESS)) {
      if (mx_p_kind(p) != MX_TK_LBRACE) return mx_p_expected(p, "'{' to begin properties");
      MX_TRY(mx_p_opt_attr_dict(p, op));
      MX_TRY(mx_p_expect(p, MX_TK_GREATER, "'>' closing properties"));
    }
    MX_TRY(mx_p_opt_attr_dict(p, op));
    return mx_o_types_func(p, op);
  }
  MX_TRY(mx_p_opt_attr_dict(p, op));
  mx_tok_t vt = *mx_p_tok(p);
  mx_attr_t v;
  MX_TRY(mx_p_attr(p, &v));
  if (v.kind != MX_ATTR_DENSE) return mx_p_error_at(p, &vt, "expected dense<...> constant value");
  MX_TRY(mx_pop_add_attr(p, op, "value", v));
  op->result_types = mx_o_types(p, 1);
  if (!op->result_types) return mx_p_oom();
  op->result_types[0] = v.dense->type;
  op->n_results = 1;
  return MX_OK;
}

static mx_status_t mx_o_check(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_p_operand(p, op));
  MX_TRY(mx_o_comma(p));
  bool is_const =
      op->code == MX_OP_CHECK_EXPECT_EQ_CONST || op->code == MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST;
  if (is_const) {
    mx_tok_t vt = *mx_p_tok(p);
    mx_attr_t v;
    MX_TRY(mx_p_attr(p, &v));
    if (v.kind != MX_ATTR_DENSE) return mx_p_error_at(p, &vt, "expected dense<...> expected value");
    MX_TRY(mx_pop_add_attr(p, op, "value", v));
    op->types_tok = vt;
    mx_type_t *in = mx_o_types(p, 1);
    if (!in) return mx_p_oom();
    in[0] = v.dense->type;
    mx_o_set_in(op, in, 1);
  } else {
    MX_TRY(mx_p_operand(p, op));
  }
  if (op->code == MX_OP_CHECK_EXPECT_CLOSE) {
    MX_TRY(mx_o_comma(p));
    MX_TRY(mx_o_kw_int(p, op, "max_ulp_difference", "max_ulp_difference", MX_ELEM_UI64));
    if (mx_p_accept(p, MX_TK_COMMA))
      MX_TRY(mx_o_kw_int(p, op, "min_ulp_difference", "min_ulp_difference", MX_ELEM_UI64));
    MX_TRY(mx_o_colon(p, op));
    MX_TRY(mx_p_opt_attr_dict(p, op));
    mx_type_t *ts;
    int32_t n;
    MX_TRY(mx_p_type_list(p, &ts, &n));
    mx_o_set_in(op, ts, n);
    return MX_OK;
  }
  if ((op->code == MX_OP_CHECK_EXPECT_ALMOST_EQ ||
       op->code == MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST) &&
      mx_p_accept(p, MX_TK_COMMA)) {
    MX_TRY(mx_o_kw_eq(p, "tolerance"));
    double tol = 0;
    MX_TRY(mx_o_float(p, &tol));
    MX_TRY(mx_pop_add_attr(p, op, "tolerance", mx_o_float_attr(tol)));
  }
  MX_TRY(mx_p_opt_attr_dict(p, op));
  if (is_const) return MX_OK;
  MX_TRY(mx_o_colon(p, op));
  mx_type_t *t = mx_o_types(p, 2);
  if (!t) return mx_p_oom();
  MX_TRY(mx_p_type(p, &t[0]));
  t[1] = t[0];
  mx_o_set_in(op, t, 2);
  return MX_OK;
}

static const char *const mx_cmp_dirs[] = {"EQ", "NE", "GE", "GT", "LE", "LT", NULL};
static const char *const mx_cmp_types[] = {"NOTYPE", "FLOAT",    "TOTALORDER",
                                           "SIGNED", "UNSIGNED", NULL};
static const char *const mx_fft_types[] = {"FFT", "IFFT", "RFFT", "IRFFT", NULL};

static mx_status_t mx_o_symbol_call(mx_parser_t *p, mx_pop_t *op, const char *attr,
                                    bool as_string) {
  const mx_tok_t *t = mx_p_tok(p);
  if (t->kind != MX_TK_SYMBOL) return mx_p_expected(p, "symbol (@name)");
  mx_attr_t a;
  MX_TRY(mx_p_attr(p, &a));
  if (as_string) a.kind = MX_ATTR_STRING;
  MX_TRY(mx_pop_add_attr(p, op, attr, a));
  MX_TRY(mx_p_expect(p, MX_TK_LPAREN, "'(' before call operands"));
  if (!mx_p_accept(p, MX_TK_RPAREN)) {
    MX_TRY(mx_o_operands(p, op));
    MX_TRY(mx_p_expect(p, MX_TK_RPAREN, "')' after call operands"));
  }
  MX_TRY(mx_p_opt_attr_dict(p, op));
  return mx_o_types_func(p, op);
}

mx_status_t mx_p_pretty_op(mx_parser_t *p, mx_pop_t *op) {
  unsigned flags = mx_opcode_flags(op->code);
  if (flags & (MX_OPF_UNARY | MX_OPF_BINARY)) {
    if (op->code == MX_OP_COMPLEX) {
      MX_TRY(mx_o_operands(p, op));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      MX_TRY(mx_o_types_same(p, op, 1));
      if (op->n_operand_types == op->n_operands && op->n_results == 1 && op->n_operands &&
          mx_type_equal(&op->operand_types[0], &op->result_types[0]) &&
          op->result_types[0].kind == MX_TYPE_TENSOR &&
          mx_elem_is_complex(op->result_types[0].elem)) {
        // `: tensor<..xcomplex<f32>>` means real operands of the component type.
        mx_type_t rt = op->result_types[0];
        rt.elem = rt.elem == MX_ELEM_C64 ? MX_ELEM_F32 : MX_ELEM_F64;
        for (int32_t i = 0; i < op->n_operands; i++) op->operand_types[i] = rt;
      }
      return MX_OK;
    }
    MX_TRY(mx_o_operands(p, op));
    MX_TRY(mx_p_opt_attr_dict(p, op));
    return mx_o_types_same(p, op, 1);
  }
  switch (op->code) {
    case MX_OP_CONVERT:
    case MX_OP_BITCAST_CONVERT:
    case MX_OP_RESHAPE:
    case MX_OP_DYNAMIC_UPDATE_SLICE:
    case MX_OP_CLAMP:
      MX_TRY(mx_o_operands(p, op));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_same(p, op, 1);
    case MX_OP_SELECT: {
      MX_TRY(mx_o_operands(p, op));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      MX_TRY(mx_o_colon(p, op));
      mx_ptypes_t ft;
      MX_TRY(mx_p_func_or_types(p, &ft));
      if (ft.is_func) {
        mx_o_set_in(op, ft.in, ft.n_in);
        op->result_types = ft.out;
        op->n_results = ft.n_out;
        return MX_OK;
      }
      if (ft.n_out != 2)
        return mx_p_error_at(p, &op->types_tok, "expected functional type or list of two types");
      // `: pred_type, result_type`
      mx_type_t *in = mx_o_types(p, 3);
      if (!in) return mx_p_oom();
      in[0] = ft.out[0];
      in[1] = in[2] = ft.out[1];
      mx_o_set_in(op, in, 3);
      op->result_types = ft.out + 1;
      op->n_results = 1;
      return MX_OK;
    }
    case MX_OP_COMPARE: {
      mx_attr_t dir;
      MX_TRY(mx_o_enum(p, "comparison_direction", mx_cmp_dirs, &dir));
      MX_TRY(mx_pop_add_attr(p, op, "comparison_direction", dir));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_p_operand(p, op));
      if (mx_p_accept(p, MX_TK_COMMA)) {
        mx_attr_t ct;
        MX_TRY(mx_o_enum(p, "comparison_type", mx_cmp_types, &ct));
        MX_TRY(mx_pop_add_attr(p, op, "compare_type", ct));
      }
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_func(p, op);
    }
    case MX_OP_REDUCE_PRECISION: {
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_o_kw_eq(p, "format"));
      const mx_tok_t *t = mx_p_tok(p);
      // e<exp>m<mant>
      size_t i = 1;
      int64_t e = 0, m = 0;
      bool ok = t->kind == MX_TK_IDENT && t->len >= 4 && t->text[0] == 'e';
      size_t d0 = i;
      while (ok && i < t->len && t->text[i] >= '0' && t->text[i] <= '9' && i < 10)
        e = e * 10 + (t->text[i++] - '0');
      ok = ok && i > d0 && i < t->len && t->text[i] == 'm';
      size_t d1 = ++i;
      while (ok && i < t->len && t->text[i] >= '0' && t->text[i] <= '9' && i - d1 < 9)
        m = m * 10 + (t->text[i++] - '0');
      ok = ok && i > d1 && i == t->len;
      if (!ok) return mx_p_expected(p, "exponent/mantissa format e#m#");
      mx_p_next(p);
      MX_TRY(mx_pop_add_attr(p, op, "exponent_bits", mx_p_int_attr(e, MX_ELEM_I32)));
      MX_TRY(mx_pop_add_attr(p, op, "mantissa_bits", mx_p_int_attr(m, MX_ELEM_I32)));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_same(p, op, 1);
    }
    case MX_OP_CONSTANT:
      return mx_o_constant(p, op);
    case MX_OP_IOTA: {
      MX_TRY(mx_o_kw_int(p, op, "dim", "iota_dimension", MX_ELEM_I64));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      MX_TRY(mx_o_colon(p, op));
      op->result_types = mx_o_types(p, 1);
      if (!op->result_types) return mx_p_oom();
      MX_TRY(mx_p_type(p, &op->result_types[0]));
      op->n_results = 1;
      return MX_OK;
    }
    case MX_OP_BROADCAST_IN_DIM:
    case MX_OP_TRANSPOSE:
    case MX_OP_REVERSE: {
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_o_comma(p));
      const char *attr = op->code == MX_OP_BROADCAST_IN_DIM ? "broadcast_dimensions"
                         : op->code == MX_OP_TRANSPOSE      ? "permutation"
                                                            : "dimensions";
      MX_TRY(mx_o_kw_ints(p, op, "dims", attr));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_same(p, op, 1);
    }
    case MX_OP_SLICE: {
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_p_expect(p, MX_TK_LSQUARE, "'[' to begin slice ranges"));
      int64_t v[3][MX_MAX_RANK];
      int32_t n = 0;
      if (!mx_p_accept(p, MX_TK_RSQUARE)) {
        for (;;) {
          if (n == MX_MAX_RANK) return mx_p_error_at(p, mx_p_tok(p), "too many slice ranges");
          MX_TRY(mx_p_int(p, &v[0][n]));
          MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' in slice range"));
          MX_TRY(mx_p_int(p, &v[1][n]));
          v[2][n] = 1;
          if (mx_p_accept(p, MX_TK_COLON)) MX_TRY(mx_p_int(p, &v[2][n]));
          n++;
          if (mx_p_accept(p, MX_TK_RSQUARE)) break;
          MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ']' in slice ranges"));
        }
      }
      MX_TRY(mx_pop_add_attr(p, op, "start_indices", mx_p_i64s_attr(p, v[0], n)));
      MX_TRY(mx_pop_add_attr(p, op, "limit_indices", mx_p_i64s_attr(p, v[1], n)));
      MX_TRY(mx_pop_add_attr(p, op, "strides", mx_p_i64s_attr(p, v[2], n)));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_func(p, op);
    }
    case MX_OP_DYNAMIC_SLICE:
    case MX_OP_CONCATENATE: {
      // Operands each followed by ',' then `sizes = [..]` / `dim = N`.
      if (op->code == MX_OP_DYNAMIC_SLICE) {
        MX_TRY(mx_p_operand(p, op));
        MX_TRY(mx_o_comma(p));
      }
      while (mx_p_kind(p) == MX_TK_VALUE) {
        MX_TRY(mx_p_operand(p, op));
        MX_TRY(mx_o_comma(p));
      }
      if (op->code == MX_OP_DYNAMIC_SLICE)
        MX_TRY(mx_o_kw_ints(p, op, "sizes", "slice_sizes"));
      else
        MX_TRY(mx_o_kw_int(p, op, "dim", "dimension", MX_ELEM_I64));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_func(p, op);
    }
    case MX_OP_PAD:
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_o_kw_ints(p, op, "low", "edge_padding_low"));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_o_kw_ints(p, op, "high", "edge_padding_high"));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_o_kw_ints(p, op, "interior", "interior_padding"));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_func(p, op);
    case MX_OP_GET_DIMENSION_SIZE:
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_o_kw_int(p, op, "dim", "dimension", MX_ELEM_I64));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_func(p, op);
    case MX_OP_DOT_GENERAL:
      return mx_o_dot_general(p, op);
    case MX_OP_DOT:
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_p_operand(p, op));
      if (mx_p_accept(p, MX_TK_COMMA)) MX_TRY(mx_o_precision(p, op));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_func(p, op);
    case MX_OP_CONVOLUTION:
      return mx_o_convolution(p, op);
    case MX_OP_FFT: {
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_o_kw_eq(p, "type"));
      mx_attr_t ft;
      MX_TRY(mx_o_enum(p, "fft_type", mx_fft_types, &ft));
      MX_TRY(mx_pop_add_attr(p, op, "fft_type", ft));
      MX_TRY(mx_o_comma(p));
      MX_TRY(mx_o_kw_ints(p, op, "length", "fft_length"));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_func(p, op);
    }
    case MX_OP_REDUCE:
      return mx_o_reduce(p, op);
    case MX_OP_WHILE:
      return mx_o_while(p, op);
    case MX_OP_RETURN:
    case MX_OP_FUNC_RETURN:
      MX_TRY(mx_o_operands(p, op));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      op->types_tok = *mx_p_tok(p);
      if (op->n_operands) return mx_o_types_operands(p, op);
      return MX_OK;
    case MX_OP_FUNC_CALL:
      return mx_o_symbol_call(p, op, "callee", false);
    case MX_OP_CUSTOM_CALL:
      return mx_o_symbol_call(p, op, "call_target_name", true);
    case MX_OP_COMPOSITE: {
      const mx_tok_t *t = mx_p_tok(p);
      if (t->kind != MX_TK_STRING) return mx_p_expected(p, "composite name string");
      mx_attr_t nm;
      MX_TRY(mx_p_attr(p, &nm));
      MX_TRY(mx_pop_add_attr(p, op, "name", nm));
      MX_TRY(mx_o_operands(p, op));
      if (mx_p_accept(p, MX_TK_LPAREN)) {  // optional `({...}, ...)` composite regions
        for (;;) {
          mx_block_t *r;
          MX_TRY(mx_p_region(p, NULL, 0, &r));
          MX_TRY(mx_pop_add_region(p, op, r));
          if (mx_p_accept(p, MX_TK_RPAREN)) break;
          MX_TRY(mx_o_comma(p));
        }
      }
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_func(p, op);
    }
    case MX_OP_OPTIMIZATION_BARRIER: {
      MX_TRY(mx_p_opt_attr_dict(p, op));
      if (mx_p_accept(p, MX_TK_LPAREN)) {
        op->types_tok = *mx_p_tok(p);
        return mx_p_expect(p, MX_TK_RPAREN, "')'");
      }
      MX_TRY(mx_o_operands(p, op));
      MX_TRY(mx_o_colon(p, op));
      mx_type_t *ts;
      int32_t n;
      MX_TRY(mx_p_type_list(p, &ts, &n));
      mx_o_set_in(op, ts, n);
      op->result_types = ts;
      op->n_results = n;
      return MX_OK;
    }
    case MX_OP_TUPLE: {
      MX_TRY(mx_o_operands(p, op));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      MX_TRY(mx_o_colon(p, op));
      op->result_types = mx_o_types(p, 1);
      if (!op->result_types) return mx_p_oom();
      MX_TRY(mx_p_type(p, &op->result_types[0]));
      op->n_results = 1;
      if (op->result_types[0].kind != MX_TYPE_TUPLE)
        return mx_p_error_at(p, &op->types_tok, "expected tuple type");
      mx_o_set_in(op, (mx_type_t *)op->result_types[0].tuple, op->result_types[0].n_tuple);
      return MX_OK;
    }
    case MX_OP_GET_TUPLE_ELEMENT: {
      MX_TRY(mx_p_operand(p, op));
      MX_TRY(mx_p_expect(p, MX_TK_LSQUARE, "'[' before tuple index"));
      int64_t idx;
      mx_tok_t it = *mx_p_tok(p);
      MX_TRY(mx_p_int(p, &idx));
      if (idx < 0 || idx > INT32_MAX) return mx_p_error_at(p, &it, "invalid tuple index");
      MX_TRY(mx_p_expect(p, MX_TK_RSQUARE, "']' after tuple index"));
      MX_TRY(mx_pop_add_attr(p, op, "index", mx_p_int_attr(idx, MX_ELEM_I32)));
      MX_TRY(mx_p_opt_attr_dict(p, op));
      return mx_o_types_func(p, op);
    }
    case MX_OP_CHECK_EXPECT_EQ:
    case MX_OP_CHECK_EXPECT_EQ_CONST:
    case MX_OP_CHECK_EXPECT_ALMOST_EQ:
    case MX_OP_CHECK_EXPECT_ALMOST_EQ_CONST:
    case MX_OP_CHECK_EXPECT_CLOSE:
      return mx_o_check(p, op);
    default:
      return mx_p_error_at(p, &op->tok,
                           "'%s' has no custom assembly form; use the generic form "
                           "\"%s\"(...) : (...) -> ...",
                           op->name, op->name);
  }
}

// ============================================================================================
// Canonical attributes
// ============================================================================================

// Attributes whose canonical form is DENSE_ARRAY i64 (older printers used dense<> tensors).
static const char *const mx_dim_list_attrs[] = {"broadcast_dimensions",
                                                "permutation",
                                                "dimensions",
                                                "start_indices",
                                                "limit_indices",
                                                "strides",
                                                "slice_sizes",
                                                "edge_padding_low",
                                                "edge_padding_high",
                                                "interior_padding",
                                                "window_dimensions",
                                                "window_strides",
                                                "base_dilations",
                                                "window_dilations",
                                                "lhs_dilation",
                                                "rhs_dilation",
                                                "fft_length",
                                                "window_reversal",
                                                NULL};

static mx_status_t mx_o_to_dense_array(mx_parser_t *p, mx_attr_t *a, bool is_bool) {
  if (a->kind == MX_ATTR_DENSE_ARRAY) return MX_OK;
  int64_t *v = NULL;
  int32_t n = 0;
  if (a->kind == MX_ATTR_ARRAY) {
    for (int32_t i = 0; i < a->n; i++)
      if (a->items[i].kind != MX_ATTR_INT && a->items[i].kind != MX_ATTR_BOOL) return MX_OK;
    n = a->n;
    v = n ? mx_arena_alloc(p->arena, sizeof(int64_t) * (size_t)n) : NULL;
    if (n && !v) return mx_p_oom();
    for (int32_t i = 0; i < n; i++) v[i] = a->items[i].i;
  } else if (a->kind == MX_ATTR_DENSE && a->dense->type.rank <= 1 &&
             (mx_elem_is_int(a->dense->type.elem) || mx_elem_is_bool(a->dense->type.elem))) {
    int64_t numel = mx_type_numel(&a->dense->type);
    if (numel > (1 << 24)) return MX_OK;
    n = (int32_t)numel;
    v = n ? mx_arena_alloc(p->arena, sizeof(int64_t) * (size_t)n) : NULL;
    if (n && !v) return mx_p_oom();
    for (int32_t i = 0; i < n; i++) v[i] = mx_tensor_get_i64(a->dense, i);
  } else {
    return MX_OK;
  }
  memset(a, 0, sizeof *a);
  a->kind = MX_ATTR_DENSE_ARRAY;
  a->elem = is_bool ? MX_ELEM_I1 : MX_ELEM_I64;
  a->n = n;
  a->ints = v;
  return MX_OK;
}

// Integer attributes and the width StableHLO gives them (untyped integers get it; MLIR would
// type them i64, which is what the i64 ones are anyway).
static const struct {
  const char *name;
  mx_elem_type_t et;
} mx_int_attrs[] = {{"iota_dimension", MX_ELEM_I64},
                    {"dimension", MX_ELEM_I64},
                    {"feature_group_count", MX_ELEM_I64},
                    {"batch_group_count", MX_ELEM_I64},
                    {"index", MX_ELEM_I32},
                    {"exponent_bits", MX_ELEM_I32},
                    {"mantissa_bits", MX_ELEM_I32},
                    {"api_version", MX_ELEM_I32},
                    {"version", MX_ELEM_I32}};

mx_status_t mx_p_canonicalize(mx_parser_t *p, mx_pop_t *op) {
  for (int32_t i = 0; i < op->n_attrs; i++) {
    mx_named_attr_t *na = &op->attrs[i];
    if (na->value.kind == MX_ATTR_INT && na->value.elem == MX_ELEM_INVALID)
      for (size_t k = 0; k < sizeof mx_int_attrs / sizeof mx_int_attrs[0]; k++)
        if (strcmp(na->name, mx_int_attrs[k].name) == 0) na->value.elem = mx_int_attrs[k].et;
    for (int k = 0; mx_dim_list_attrs[k]; k++)
      if (strcmp(na->name, mx_dim_list_attrs[k]) == 0)
        MX_TRY(mx_o_to_dense_array(p, &na->value, strcmp(na->name, "window_reversal") == 0));
  }
  if (op->code != MX_OP_CUSTOM_CALL) return MX_OK;
  // JAX test data asserts with `stablehlo.custom_call @check.expect_*(%a, %b)`; StableHLO's
  // interpreter treats these as check ops (expect_close: 3 ULP, expect_almost_eq: 1e-3).
  const mx_attr_t *tgt = NULL;
  for (int32_t i = 0; i < op->n_attrs; i++)
    if (strcmp(op->attrs[i].name, "call_target_name") == 0) tgt = &op->attrs[i].value;
  if (!tgt || tgt->kind != MX_ATTR_STRING || op->n_operands != 2 || op->n_results != 0)
    return MX_OK;
  mx_opcode_t code = MX_OP_UNKNOWN;
  if (strcmp(tgt->s, "check.expect_eq") == 0)
    code = MX_OP_CHECK_EXPECT_EQ;
  else if (strcmp(tgt->s, "check.expect_almost_eq") == 0)
    code = MX_OP_CHECK_EXPECT_ALMOST_EQ;
  else if (strcmp(tgt->s, "check.expect_close") == 0)
    code = MX_OP_CHECK_EXPECT_CLOSE;
  if (code == MX_OP_UNKNOWN) return MX_OK;
  const mx_attr_t *tol = NULL;
  for (int32_t i = 0; i < op->n_attrs; i++)
    if (strcmp(op->attrs[i].name, "tolerance") == 0) tol = &op->attrs[i].value;
  mx_attr_t tol_copy = tol ? *tol : mx_o_float_attr(1e-3);
  op->code = code;
  op->name = mx_opcode_name(code);
  op->n_attrs = 0;
  if (code == MX_OP_CHECK_EXPECT_ALMOST_EQ) {
    if (tol_copy.kind == MX_ATTR_INT) tol_copy = mx_o_float_attr((double)tol_copy.i);
    MX_TRY(mx_pop_add_attr(p, op, "tolerance", tol_copy));
  } else if (code == MX_OP_CHECK_EXPECT_CLOSE) {
    MX_TRY(mx_pop_add_attr(p, op, "max_ulp_difference", mx_p_int_attr(3, MX_ELEM_UI64)));
    MX_TRY(mx_pop_add_attr(p, op, "min_ulp_difference", mx_p_int_attr(0, MX_ELEM_UI64)));
  }
  return MX_OK;
}
