// StableHLO text parser: functions and modules written in MLIR's generic op form (what
// `stablehlo-opt --mlir-print-op-generic` prints):
//   "builtin.module"() <{sym_name = "m"}> ({
//     "func.func"() <{function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "main",
//                     sym_visibility = "private", arg_attrs = [{...}], res_attrs = [{...}]}> ({
//     ^bb0(%arg0: tensor<2xf32>):
//       ...
//     }) : () -> ()
//   }) {mhlo.num_replicas = 1 : i32} : () -> ()
#include <string.h>

#include "hlo/parse_internal.h"

// `: () -> ()` closing a generic func/module.
static mx_status_t mx_g_unit_type(mx_parser_t *p) {
  MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' and '() -> ()'"));
  mx_tok_t t = *mx_p_tok(p);
  mx_ptypes_t ft;
  MX_TRY(mx_p_func_or_types(p, &ft));
  if (!ft.is_func || ft.n_in || ft.n_out) return mx_p_error_at(p, &t, "expected '() -> ()'");
  return mx_p_skip_loc(p);
}

// Parses a dict whose `function_type` entry is a function type (not an attribute).
static mx_status_t mx_g_props(mx_parser_t *p, mx_attr_t *dict, mx_ptypes_t *ftype,
                              bool *has_ftype) {
  MX_TRY(mx_p_expect(p, MX_TK_LBRACE, "'{' to begin properties"));
  mx_named_attr_t *fields = NULL;
  int32_t n = 0, cap = 0;
  if (!mx_p_accept(p, MX_TK_RBRACE)) {
    for (;;) {
      mx_tok_t nt = *mx_p_tok(p);
      if (nt.kind != MX_TK_IDENT) return mx_p_expected(p, "property name");
      char *name = mx_p_strndup(p, nt.text, nt.len);
      if (!name) return mx_p_oom();
      mx_p_next(p);
      for (int32_t i = 0; i < n; i++)
        if (strcmp(fields[i].name, name) == 0)
          return mx_p_error_at(p, &nt, "duplicate property '%s'", name);
      MX_TRY(mx_p_expect(p, MX_TK_EQUAL, "'=' after property name"));
      if (strcmp(name, "function_type") == 0) {
        if (*has_ftype) return mx_p_error_at(p, &nt, "duplicate property 'function_type'");
        mx_tok_t tt = *mx_p_tok(p);
        MX_TRY(mx_p_func_or_types(p, ftype));
        if (!ftype->is_func) return mx_p_error_at(p, &tt, "expected function type");
        *has_ftype = true;
      } else {
        mx_attr_t v;
        MX_TRY(mx_p_attr(p, &v));
        MX_TRY(mx_p_add_field(p, &fields, &n, &cap, name, v));
      }
      if (mx_p_accept(p, MX_TK_RBRACE)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or '}' in properties"));
    }
  }
  memset(dict, 0, sizeof *dict);
  dict->kind = MX_ATTR_DICT;
  dict->n = n;
  dict->fields = fields;
  return MX_OK;
}

static const mx_attr_t *mx_g_field(const mx_attr_t *d, const char *name) {
  for (int32_t i = 0; i < d->n; i++)
    if (strcmp(d->fields[i].name, name) == 0) return &d->fields[i].value;
  return NULL;
}

mx_status_t mx_p_generic_func(mx_parser_t *p) {
  mx_tok_t ftok = *mx_p_tok(p);
  mx_p_next(p);  // "func.func"
  MX_TRY(mx_p_expect(p, MX_TK_LPAREN, "'('"));
  MX_TRY(mx_p_expect(p, MX_TK_RPAREN, "')' (func.func has no operands)"));
  mx_attr_t props;
  memset(&props, 0, sizeof props);
  props.kind = MX_ATTR_DICT;
  mx_ptypes_t ft;
  memset(&ft, 0, sizeof ft);
  bool has_ft = false;
  if (mx_p_accept(p, MX_TK_LESS)) {
    MX_TRY(mx_g_props(p, &props, &ft, &has_ft));
    MX_TRY(mx_p_expect(p, MX_TK_GREATER, "'>' closing properties"));
  }
  // Older printers put everything in the trailing dictionary; accept both places.
  const mx_attr_t *sym = mx_g_field(&props, "sym_name");
  if (mx_p_kind(p) != MX_TK_LPAREN) {
    if (sym && sym->kind == MX_ATTR_STRING)
      return mx_p_unsupported(p, &ftok, "function declaration without a body ('@%s')", sym->s);
    return mx_p_expected(p, "'(' and the function body region");
  }
  if (!sym || sym->kind != MX_ATTR_STRING)
    return mx_p_error_at(p, &ftok, "generic func.func needs a sym_name string property");
  if (!has_ft) return mx_p_error_at(p, &ftok, "generic func.func needs a function_type property");
  if (mx_module_find_func(p->m, sym->s))
    return mx_p_error_at(p, &ftok, "redefinition of function '@%s'", sym->s);
  const mx_attr_t *vis = mx_g_field(&props, "sym_visibility");
  bool is_private = vis && vis->kind == MX_ATTR_STRING && strcmp(vis->s, "public") != 0;
  mx_func_t *f;
  if (mx_func_create(p->m, sym->s, is_private, &f)) return mx_p_oom();
  p->f = f;
  mx_p_next(p);  // '('
  MX_TRY(mx_p_enter(p));
  MX_TRY(mx_p_expect(p, MX_TK_LBRACE, "'{' to begin the function body"));
  p->in_region = false;
  if (mx_p_kind(p) == MX_TK_BLOCK) {
    mx_p_next(p);
    if (mx_p_accept(p, MX_TK_LPAREN) && !mx_p_accept(p, MX_TK_RPAREN)) {
      for (;;) {
        if (mx_p_kind(p) != MX_TK_VALUE || mx_p_tok(p)->num >= 0)
          return mx_p_expected(p, "argument name");
        mx_tok_t at = *mx_p_tok(p);
        mx_p_next(p);
        MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' after argument name"));
        mx_tok_t tt = *mx_p_tok(p);
        mx_type_t ty;
        MX_TRY(mx_p_type(p, &ty));
        int32_t k = f->body->n_args;
        if (k >= ft.n_in || !mx_type_equal(&ty, &ft.in[k]))
          return mx_p_error_at(p, &tt, "argument %d does not match the function_type", (int)k);
        int32_t id;
        if (mx_func_add_arg(f, &ty, NULL, &id)) return mx_p_oom();
        MX_TRY(mx_p_define(p, &at, id, 1));
        MX_TRY(mx_p_skip_loc(p));
        if (mx_p_accept(p, MX_TK_RPAREN)) break;
        MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ')' in argument list"));
      }
    }
    MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' after block label"));
  }
  if (f->body->n_args != ft.n_in)
    return mx_p_error_at(p, &ftok, "function_type has %d inputs but the body has %d arguments",
                         (int)ft.n_in, (int)f->body->n_args);
  MX_TRY(mx_p_block_body(p, f->body));
  mx_p_leave(p);
  MX_TRY(mx_p_expect(p, MX_TK_RPAREN, "')' after the function body"));
  mx_p_pop_names(p, 0);
  p->f = NULL;
  if (mx_func_set_result_types(f, ft.out, ft.n_out)) return mx_p_oom();
  // Argument/result attributes: arrays of dictionaries.
  const mx_attr_t *aa = mx_g_field(&props, "arg_attrs");
  if (aa && aa->kind == MX_ATTR_ARRAY && aa->n == f->body->n_args)
    for (int32_t i = 0; i < aa->n; i++)
      if (aa->items[i].kind == MX_ATTR_DICT) f->arg_attrs[i] = aa->items[i];
  const mx_attr_t *ra = mx_g_field(&props, "res_attrs");
  if (ra && ra->kind == MX_ATTR_ARRAY && ra->n == f->n_results)
    for (int32_t i = 0; i < ra->n; i++)
      if (ra->items[i].kind == MX_ATTR_DICT) f->result_attrs[i] = ra->items[i];
  if (mx_p_kind(p) == MX_TK_LBRACE) MX_TRY(mx_p_attr_dict(p, &f->attrs));
  return mx_g_unit_type(p);
}

mx_status_t mx_p_generic_module(mx_parser_t *p) {
  mx_p_next(p);  // "builtin.module"
  MX_TRY(mx_p_expect(p, MX_TK_LPAREN, "'('"));
  MX_TRY(mx_p_expect(p, MX_TK_RPAREN, "')' (builtin.module has no operands)"));
  if (mx_p_accept(p, MX_TK_LESS)) {
    mx_attr_t props;
    mx_ptypes_t ft;
    bool has_ft = false;
    MX_TRY(mx_g_props(p, &props, &ft, &has_ft));
    MX_TRY(mx_p_expect(p, MX_TK_GREATER, "'>' closing properties"));
    const mx_attr_t *sym = mx_g_field(&props, "sym_name");
    if (sym && sym->kind == MX_ATTR_STRING) p->m->name = sym->s;
  }
  MX_TRY(mx_p_expect(p, MX_TK_LPAREN, "'(' and the module body region"));
  MX_TRY(mx_p_expect(p, MX_TK_LBRACE, "'{' to begin the module body"));
  MX_TRY(mx_p_top_items(p, true));
  MX_TRY(mx_p_expect(p, MX_TK_RBRACE, "'}' closing the module"));
  MX_TRY(mx_p_expect(p, MX_TK_RPAREN, "')' after the module body"));
  if (mx_p_kind(p) == MX_TK_LBRACE) MX_TRY(mx_p_attr_dict(p, &p->m->attrs));
  return mx_g_unit_type(p);
}
