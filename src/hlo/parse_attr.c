// StableHLO text parser: integers, types and attributes (everything but dense literals).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/parse_internal.h"

// ============================================================================================
// Integers
// ============================================================================================

// Magnitude of an INT token; false on overflow of uint64.
static bool mx_tok_u64(const mx_tok_t *t, uint64_t *out) {
  uint64_t v = 0;
  if (t->is_hex) {
    for (size_t i = 2; i < t->len; i++) {
      char c = t->text[i];
      int d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
      if (v >> 60) return false;
      v = v * 16 + (uint64_t)d;
    }
  } else {
    for (size_t i = 0; i < t->len; i++) {
      uint64_t d = (uint64_t)(t->text[i] - '0');
      if (v > (UINT64_MAX - d) / 10) return false;
      v = v * 10 + d;
    }
  }
  *out = v;
  return true;
}

bool mx_p_tok_u64(const mx_tok_t *t, uint64_t *out) { return mx_tok_u64(t, out); }

mx_status_t mx_p_float_text(mx_parser_t *p, const char *text, size_t n, double *d, float *f) {
  char small[128];
  char *buf = small;
  if (n >= sizeof small) {
    buf = mx_arena_alloc(p->arena, n + 1);  // very long literals: rare, kept exact
    if (!buf) return mx_p_oom();
  }
  memcpy(buf, text, n);
  buf[n] = '\0';
  if (d) *d = strtod(buf, NULL);
  if (f) *f = strtof(buf, NULL);
  return MX_OK;
}

mx_status_t mx_p_int(mx_parser_t *p, int64_t *out) {
  bool neg = false;
  mx_tok_t start = *mx_p_tok(p);
  if (mx_p_accept(p, MX_TK_MINUS)) neg = true;
  if (mx_p_kind(p) != MX_TK_INT) return mx_p_expected(p, "integer");
  uint64_t u;
  if (!mx_tok_u64(mx_p_tok(p), &u) || (!neg && u > (uint64_t)INT64_MAX) ||
      (neg && u > (uint64_t)INT64_MAX + 1))
    return mx_p_error_at(p, &start, "integer literal out of range for 64 bits");
  *out = neg ? (int64_t)(0 - u) : (int64_t)u;
  mx_p_next(p);
  return MX_OK;
}

mx_status_t mx_p_int_list(mx_parser_t *p, int64_t **out, int32_t *n) {
  MX_TRY(mx_p_expect(p, MX_TK_LSQUARE, "'['"));
  int64_t *v = NULL;
  int32_t cnt = 0, cap = 0;
  if (!mx_p_accept(p, MX_TK_RSQUARE)) {
    for (;;) {
      if (cnt == cap) {
        int32_t nc = cap ? cap * 2 : 8;
        if (nc > (1 << 24)) return mx_p_error_at(p, mx_p_tok(p), "integer list too long");
        v = mx_arena_grow(p->arena, v, (size_t)cnt, (size_t)nc, sizeof(int64_t));
        if (!v) return mx_p_oom();
        cap = nc;
      }
      if (mx_tok_is(mx_p_tok(p), "true") || mx_tok_is(mx_p_tok(p), "false")) {
        v[cnt++] = mx_tok_is(mx_p_tok(p), "true");
        mx_p_next(p);
      } else {
        MX_TRY(mx_p_int(p, &v[cnt++]));
      }
      if (mx_p_accept(p, MX_TK_RSQUARE)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ']' in integer list"));
    }
  }
  *out = v;
  *n = cnt;
  return MX_OK;
}

// ============================================================================================
// Types
// ============================================================================================

// Valid MLIR type spellings we do not support get MX_ERR_UNSUPPORTED instead of a parse error.
static bool mx_is_foreign_type_name(const char *s, size_t n) {
  static const char *const known[] = {"index",  "tf32",   "f80",     "f128", "none",
                                      "memref", "vector", "complex", "bf8"};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strlen(known[i]) == n && memcmp(known[i], s, n) == 0) return true;
  size_t i = 0;
  if (i < n && (s[i] == 's' || s[i] == 'u')) i++;
  if (i < n && s[i] == 'i') {
    i++;
    if (i == n) return false;
    for (; i < n; i++)
      if (s[i] < '0' || s[i] > '9') return false;
    return true;
  }
  return n > 1 && s[0] == 'f' && s[1] >= '0' && s[1] <= '9';
}

mx_status_t mx_p_elem_type(mx_parser_t *p, mx_elem_type_t *out) {
  const mx_tok_t *t = mx_p_tok(p);
  if (t->kind == MX_TK_BANG) {
    if (t->len >= 6 && memcmp(t->text, "!quant", 6) == 0)
      return mx_p_unsupported(p, t, "quantized type %.*s", (int)t->len, t->text);
    return mx_p_unsupported(p, t, "element type %.*s", (int)t->len, t->text);
  }
  if (t->kind != MX_TK_IDENT) return mx_p_expected(p, "element type");
  if (mx_tok_is(t, "complex")) {
    mx_tok_t ct = *t;
    mx_p_next(p);
    MX_TRY(mx_p_expect(p, MX_TK_LESS, "'<' after 'complex'"));
    const mx_tok_t *e = mx_p_tok(p);
    mx_elem_type_t et = MX_ELEM_INVALID;
    if (mx_tok_is(e, "f32"))
      et = MX_ELEM_C64;
    else if (mx_tok_is(e, "f64"))
      et = MX_ELEM_C128;
    else if (e->kind == MX_TK_IDENT)
      return mx_p_unsupported(p, &ct, "complex element type %.*s", (int)e->len, e->text);
    else
      return mx_p_expected(p, "complex component type");
    mx_p_next(p);
    MX_TRY(mx_p_expect(p, MX_TK_GREATER, "'>' closing complex type"));
    *out = et;
    return MX_OK;
  }
  mx_elem_type_t et = mx_elem_from_name(t->text, t->len);
  if (et == MX_ELEM_INVALID && p->index_as_i64 && mx_tok_is(t, "index")) et = MX_ELEM_I64;
  if (et == MX_ELEM_INVALID) {
    if (mx_is_foreign_type_name(t->text, t->len))
      return mx_p_unsupported(p, t, "element type %.*s", (int)t->len, t->text);
    return mx_p_expected(p, "element type");
  }
  mx_p_next(p);
  *out = et;
  return MX_OK;
}

bool mx_p_at_type(const mx_parser_t *p) {
  const mx_tok_t *t = mx_p_tok(p);
  if (t->kind == MX_TK_BANG) return true;
  return mx_tok_is(t, "tensor") || mx_tok_is(t, "tuple");
}

static mx_status_t mx_p_tensor_type(mx_parser_t *p, mx_type_t *out) {
  mx_p_next(p);  // 'tensor'
  if (mx_p_kind(p) != MX_TK_LESS) return mx_p_expected(p, "'<' after 'tensor'");
  // Dimensions are scanned raw: `2x3xf32` is not a sequence of MLIR tokens.
  const char *s = mx_p_tok(p)->text + 1;
  const char *end = p->lx.end;
  while (s < end && (*s == ' ' || *s == '\t')) s++;
  int64_t dims[MX_MAX_RANK];
  int32_t rank = 0;
  int64_t numel = 1;
  for (;;) {
    if (s < end && (*s == '?' || *s == '*')) {
      mx_tok_t t = *mx_p_tok(p);
      mx_lex_pos_of(&p->lx, s, &t.line, &t.col);
      return mx_p_unsupported(p, &t, "%s tensor type",
                              *s == '?' ? "dynamic shape ('?') in" : "unranked");
    }
    if (s >= end || *s < '0' || *s > '9') break;
    const char *d0 = s;
    int64_t v = 0;
    while (s < end && *s >= '0' && *s <= '9') {
      if (v > (MX_PARSE_MAX_NUMEL / 10)) return mx_p_error_ptr(p, d0, "dimension size too large");
      v = v * 10 + (*s - '0');
      s++;
    }
    if (s >= end || *s != 'x') return mx_p_error_ptr(p, s, "expected 'x' after dimension size");
    s++;
    if (rank == MX_MAX_RANK) {
      mx_tok_t t = *mx_p_tok(p);
      return mx_p_unsupported(p, &t, "tensor rank greater than %d", MX_MAX_RANK);
    }
    dims[rank++] = v;
    if (v && numel > MX_PARSE_MAX_NUMEL / v) return mx_p_error_ptr(p, d0, "tensor type too large");
    numel *= v;
  }
  mx_lex_reset(&p->lx, s);
  mx_elem_type_t et;
  const mx_quant_t *q = NULL;
  mx_tok_t qt = *mx_p_tok(p);
  if (mx_p_at_quant(p))
    MX_TRY(mx_p_quant(p, &et, &q));
  else
    MX_TRY(mx_p_elem_type(p, &et));
  if (mx_p_kind(p) == MX_TK_COMMA) return mx_p_unsupported(p, mx_p_tok(p), "tensor type encodings");
  MX_TRY(mx_p_expect(p, MX_TK_GREATER, "'>' closing tensor type"));
  *out = mx_type_tensor(et, rank, dims);
  out->quant = q;
  return mx_p_quant_check(p, &qt, out);
}

mx_status_t mx_p_type(mx_parser_t *p, mx_type_t *out) {
  MX_TRY(mx_p_enter(p));
  const mx_tok_t *t = mx_p_tok(p);
  memset(out, 0, sizeof *out);
  if (mx_tok_is(t, "tensor")) {
    MX_TRY(mx_p_tensor_type(p, out));
  } else if (mx_tok_is(t, "tuple")) {
    mx_p_next(p);
    MX_TRY(mx_p_expect(p, MX_TK_LESS, "'<' after 'tuple'"));
    mx_type_t *elems = NULL;
    int32_t n = 0, cap = 0;
    if (!mx_p_accept(p, MX_TK_GREATER)) {
      for (;;) {
        if (n == cap) {
          int32_t nc = cap ? cap * 2 : 4;
          elems = mx_arena_grow(p->arena, elems, (size_t)n, (size_t)nc, sizeof(mx_type_t));
          if (!elems) return mx_p_oom();
          cap = nc;
        }
        MX_TRY(mx_p_type(p, &elems[n++]));
        if (mx_p_accept(p, MX_TK_GREATER)) break;
        MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or '>' in tuple type"));
      }
    }
    out->kind = MX_TYPE_TUPLE;
    out->n_tuple = n;
    out->tuple = elems;
  } else if (t->kind == MX_TK_BANG) {
    if (t->len == 16 && memcmp(t->text, "!stablehlo.token", 16) == 0) {
      mx_p_next(p);
      out->kind = MX_TYPE_TOKEN;
    } else if (t->len >= 6 && memcmp(t->text, "!quant", 6) == 0) {
      return mx_p_unsupported(p, t, "quantized type %.*s", (int)t->len, t->text);
    } else if (mx_p_find_alias(p, t) && mx_p_find_alias(p, t)->kind == MX_ATTR_TYPE) {
      *out = *mx_p_find_alias(p, t)->type;
      mx_p_next(p);
    } else {
      return mx_p_unsupported(p, t, "type %.*s", (int)t->len, t->text);
    }
  } else if (t->kind == MX_TK_IDENT && (mx_elem_from_name(t->text, t->len) != MX_ELEM_INVALID ||
                                        mx_is_foreign_type_name(t->text, t->len))) {
    return mx_p_unsupported(p, t, "non-tensor type '%.*s'", (int)t->len, t->text);
  } else {
    return mx_p_expected(p, "type");
  }
  mx_p_leave(p);
  return MX_OK;
}

static mx_status_t mx_p_push_type(mx_parser_t *p, mx_type_t **arr, int32_t *n, int32_t *cap) {
  if (*n == *cap) {
    int32_t nc = *cap ? *cap * 2 : 1;  // most type lists have one entry
    if (nc > (1 << 20)) return mx_p_error_at(p, mx_p_tok(p), "type list too long");
    mx_type_t *na = mx_arena_grow(p->arena, *arr, (size_t)*n, (size_t)nc, sizeof(mx_type_t));
    if (!na) return mx_p_oom();
    *arr = na;
    *cap = nc;
  }
  MX_TRY(mx_p_type(p, &(*arr)[*n]));
  (*n)++;
  return MX_OK;
}

mx_status_t mx_p_type_list(mx_parser_t *p, mx_type_t **out, int32_t *n) {
  mx_type_t *arr = NULL;
  int32_t cnt = 0, cap = 0;
  do {
    MX_TRY(mx_p_push_type(p, &arr, &cnt, &cap));
  } while (mx_p_accept(p, MX_TK_COMMA));
  *out = arr;
  *n = cnt;
  return MX_OK;
}

mx_status_t mx_p_type_list_parens(mx_parser_t *p, mx_type_t **out, int32_t *n) {
  if (!mx_p_accept(p, MX_TK_LPAREN)) {
    *out = mx_arena_alloc(p->arena, sizeof(mx_type_t));
    if (!*out) return mx_p_oom();
    *n = 1;
    return mx_p_type(p, *out);
  }
  mx_type_t *arr = NULL;
  int32_t cnt = 0, cap = 0;
  if (!mx_p_accept(p, MX_TK_RPAREN)) {
    for (;;) {
      MX_TRY(mx_p_push_type(p, &arr, &cnt, &cap));
      MX_TRY(mx_p_skip_loc(p));
      if (mx_p_accept(p, MX_TK_RPAREN)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ')' in type list"));
    }
  }
  *out = arr;
  *n = cnt;
  return MX_OK;
}

mx_status_t mx_p_func_or_types(mx_parser_t *p, mx_ptypes_t *out) {
  memset(out, 0, sizeof *out);
  if (mx_p_kind(p) == MX_TK_LPAREN) {
    MX_TRY(mx_p_type_list_parens(p, &out->in, &out->n_in));
    MX_TRY(mx_p_expect(p, MX_TK_ARROW, "'->' in function type"));
    out->is_func = true;
    return mx_p_type_list_parens(p, &out->out, &out->n_out);
  }
  MX_TRY(mx_p_type_list(p, &out->out, &out->n_out));
  return MX_OK;
}

// ============================================================================================
// Attributes
// ============================================================================================

mx_attr_t mx_p_int_attr(int64_t v, mx_elem_type_t et) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_INT;
  a.i = v;
  a.elem = et;
  return a;
}

mx_attr_t mx_p_i64s_attr(mx_parser_t *p, const int64_t *v, int32_t n) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_DENSE_ARRAY;
  a.elem = MX_ELEM_I64;
  a.n = n;
  if (n > 0) {
    a.ints = mx_arena_alloc(p->arena, sizeof(int64_t) * (size_t)n);
    if (!a.ints) {
      a.kind = MX_ATTR_UNIT;
      a.n = -1;
      return a;
    }
    memcpy(a.ints, v, sizeof(int64_t) * (size_t)n);
  }
  return a;
}

mx_status_t mx_p_add_field(mx_parser_t *p, mx_named_attr_t **fields, int32_t *n, int32_t *cap,
                           const char *name, mx_attr_t value) {
  if (mx_attr_is_oom(&value)) return mx_p_oom();
  if (*n == *cap) {
    int32_t nc = *cap ? *cap * 2 : 4;
    mx_named_attr_t *nf =
        mx_arena_grow(p->arena, *fields, (size_t)*n, (size_t)nc, sizeof(mx_named_attr_t));
    if (!nf) return mx_p_oom();
    *fields = nf;
    *cap = nc;
  }
  (*fields)[*n].name = name;
  (*fields)[*n].value = value;
  (*n)++;
  return MX_OK;
}

// True if the token after the current one exists and is an element type name (used to decide
// whether `: <type>` after a number belongs to the number).
static bool mx_p_next_is_elem_type(const mx_parser_t *p) {
  mx_lexer_t copy = p->lx;
  mx_lex_next(&copy);
  const mx_tok_t *t = &copy.tok;
  if (t->kind != MX_TK_IDENT) return false;
  return mx_elem_from_name(t->text, t->len) != MX_ELEM_INVALID || mx_tok_is(t, "index") ||
         mx_tok_is(t, "complex");
}

static mx_status_t mx_p_number_attr(mx_parser_t *p, mx_attr_t *out) {
  mx_tok_t start = *mx_p_tok(p);
  bool neg = mx_p_accept(p, MX_TK_MINUS);
  mx_tok_t t = *mx_p_tok(p);
  memset(out, 0, sizeof *out);
  if (t.kind == MX_TK_FLOAT) {
    out->kind = MX_ATTR_FLOAT;
    MX_TRY(mx_p_float_text(p, t.text, t.len, &out->f, NULL));
    if (neg) out->f = -out->f;
    out->elem = MX_ELEM_F64;
    mx_p_next(p);
  } else if (t.kind == MX_TK_INT) {
    uint64_t u;
    if (!mx_p_tok_u64(&t, &u)) return mx_p_error_at(p, &start, "integer literal too large");
    mx_p_next(p);
    out->kind = MX_ATTR_INT;
    out->elem = MX_ELEM_INVALID;
    bool typed = false;
    if (mx_p_kind(p) == MX_TK_COLON && mx_p_next_is_elem_type(p)) {
      mx_p_next(p);
      typed = true;
      if (mx_tok_is(mx_p_tok(p), "index")) {
        mx_p_next(p);
        out->elem = MX_ELEM_I64;
      } else {
        MX_TRY(mx_p_elem_type(p, &out->elem));
      }
    }
    if (typed && (mx_elem_is_float(out->elem) || mx_elem_is_complex(out->elem))) {
      mx_elem_type_t et = out->elem;
      out->kind = MX_ATTR_FLOAT;
      if (t.is_hex) {
        if (neg) return mx_p_error_at(p, &start, "hexadecimal float literal cannot be negative");
        if (mx_elem_bits(et) < 64 && (u >> mx_elem_bits(et)))
          return mx_p_error_at(p, &start, "hexadecimal float literal does not fit %s",
                               mx_elem_name(et));
        if (et == MX_ELEM_F64) {
          memcpy(&out->f, &u, sizeof out->f);
        } else if (et == MX_ELEM_F32) {
          uint32_t b = (uint32_t)u;
          float fv;
          memcpy(&fv, &b, sizeof fv);
          out->f = fv;
        } else if (mx_elem_is_float(et)) {
          out->f = mx_float_decode(et, u);
        } else {
          return mx_p_error_at(p, &start, "unexpected complex scalar attribute");
        }
      } else {
        out->f = neg ? -(double)u : (double)u;
      }
      return MX_OK;
    }
    if (!t.is_hex || !neg) {
      if (neg ? u > (uint64_t)INT64_MAX + 1
              : (u > (uint64_t)INT64_MAX && out->elem != MX_ELEM_UI64))
        return mx_p_error_at(p, &start, "integer literal out of range");
    }
    out->i = neg ? (int64_t)(0 - u) : (int64_t)u;
    if (out->elem == MX_ELEM_I1) {
      out->kind = MX_ATTR_BOOL;
      out->i = out->i != 0;
    }
    return MX_OK;
  } else {
    return mx_p_expected(p, "number");
  }
  if (mx_p_kind(p) == MX_TK_COLON && mx_p_next_is_elem_type(p)) {
    mx_p_next(p);
    MX_TRY(mx_p_elem_type(p, &out->elem));
    if (!mx_elem_is_float(out->elem))
      return mx_p_error_at(p, &start, "floating point literal with non-float type %s",
                           mx_elem_name(out->elem));
  }
  return MX_OK;
}

static mx_status_t mx_p_attr_name(mx_parser_t *p, const char **name) {
  const mx_tok_t *t = mx_p_tok(p);
  if (t->kind == MX_TK_IDENT) {
    *name = mx_p_strndup(p, t->text, t->len);
    if (!*name) return mx_p_oom();
  } else if (t->kind == MX_TK_STRING) {
    char *s;
    MX_TRY(mx_p_string(p, t, &s, NULL));
    *name = s;
  } else {
    return mx_p_expected(p, "attribute name");
  }
  mx_p_next(p);
  return MX_OK;
}

mx_status_t mx_p_attr_dict(mx_parser_t *p, mx_attr_t *out) {
  MX_TRY(mx_p_enter(p));
  MX_TRY(mx_p_expect(p, MX_TK_LBRACE, "'{' to begin an attribute dictionary"));
  mx_named_attr_t *fields = NULL;
  int32_t n = 0, cap = 0;
  if (!mx_p_accept(p, MX_TK_RBRACE)) {
    for (;;) {
      mx_tok_t nt = *mx_p_tok(p);
      const char *name;
      MX_TRY(mx_p_attr_name(p, &name));
      for (int32_t i = 0; i < n; i++)
        if (strcmp(fields[i].name, name) == 0)
          return mx_p_error_at(p, &nt, "duplicate attribute '%s'", name);
      mx_attr_t v;
      memset(&v, 0, sizeof v);
      v.kind = MX_ATTR_UNIT;
      if (mx_p_accept(p, MX_TK_EQUAL)) MX_TRY(mx_p_attr(p, &v));
      MX_TRY(mx_p_add_field(p, &fields, &n, &cap, name, v));
      if (mx_p_accept(p, MX_TK_RBRACE)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or '}' in attribute dictionary"));
    }
  }
  memset(out, 0, sizeof *out);
  out->kind = MX_ATTR_DICT;
  out->n = n;
  out->fields = fields;
  mx_p_leave(p);
  return MX_OK;
}

static mx_status_t mx_p_array_attr(mx_parser_t *p, mx_attr_t *out) {
  mx_p_next(p);  // '['
  mx_attr_t *items = NULL;
  int32_t n = 0, cap = 0;
  if (!mx_p_accept(p, MX_TK_RSQUARE)) {
    for (;;) {
      if (n == cap) {
        int32_t nc = cap ? cap * 2 : 4;
        if (nc > (1 << 24)) return mx_p_error_at(p, mx_p_tok(p), "array too long");
        items = mx_arena_grow(p->arena, items, (size_t)n, (size_t)nc, sizeof(mx_attr_t));
        if (!items) return mx_p_oom();
        cap = nc;
      }
      MX_TRY(mx_p_attr(p, &items[n++]));
      if (mx_p_accept(p, MX_TK_RSQUARE)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ']' in array attribute"));
    }
  }
  memset(out, 0, sizeof *out);
  out->kind = MX_ATTR_ARRAY;
  out->n = n;
  out->items = items;
  return MX_OK;
}

// array<i64: 1, 2>, array<i1: true>, array<i64>
static mx_status_t mx_p_dense_array(mx_parser_t *p, mx_attr_t *out) {
  mx_p_next(p);  // 'array'
  MX_TRY(mx_p_expect(p, MX_TK_LESS, "'<' after 'array'"));
  mx_tok_t et_tok = *mx_p_tok(p);
  mx_elem_type_t et;
  MX_TRY(mx_p_elem_type(p, &et));
  if (!mx_elem_is_int(et) && !mx_elem_is_bool(et))
    return mx_p_unsupported(p, &et_tok, "array<%s> attributes", mx_elem_name(et));
  int64_t *v = NULL;
  int32_t n = 0, cap = 0;
  if (mx_p_accept(p, MX_TK_COLON)) {
    for (;;) {
      if (n == cap) {
        int32_t nc = cap ? cap * 2 : 8;
        if (nc > (1 << 24)) return mx_p_error_at(p, mx_p_tok(p), "array too long");
        v = mx_arena_grow(p->arena, v, (size_t)n, (size_t)nc, sizeof(int64_t));
        if (!v) return mx_p_oom();
        cap = nc;
      }
      if (mx_elem_is_bool(et) &&
          (mx_tok_is(mx_p_tok(p), "true") || mx_tok_is(mx_p_tok(p), "false"))) {
        v[n++] = mx_tok_is(mx_p_tok(p), "true");
        mx_p_next(p);
      } else {
        MX_TRY(mx_p_int(p, &v[n++]));
      }
      if (!mx_p_accept(p, MX_TK_COMMA)) break;
    }
  }
  MX_TRY(mx_p_expect(p, MX_TK_GREATER, "'>' closing array attribute"));
  memset(out, 0, sizeof *out);
  out->kind = MX_ATTR_DENSE_ARRAY;
  out->elem = et;
  out->n = n;
  out->ints = v;
  return MX_OK;
}

static bool mx_is_dialect_enum_prefix(const mx_tok_t *t) {
  return (t->len == 10 && memcmp(t->text, "#stablehlo", 10) == 0) ||
         (t->len == 5 && memcmp(t->text, "#chlo", 5) == 0) ||
         (t->len == 5 && memcmp(t->text, "#mhlo", 5) == 0);
}

// Turns ARRAYs of INT inside dimension structs into DENSE_ARRAY i64 (the canonical form).
static mx_status_t mx_p_normalize_field(mx_parser_t *p, mx_attr_t *a) {
  if (a->kind == MX_ATTR_INT) {
    a->elem = MX_ELEM_I64;
    return MX_OK;
  }
  if (a->kind != MX_ATTR_ARRAY) return MX_OK;
  for (int32_t i = 0; i < a->n; i++)
    if (a->items[i].kind != MX_ATTR_INT) return MX_OK;
  int64_t *v = a->n ? mx_arena_alloc(p->arena, sizeof(int64_t) * (size_t)a->n) : NULL;
  if (a->n && !v) return mx_p_oom();
  for (int32_t i = 0; i < a->n; i++) v[i] = a->items[i].i;
  int32_t n = a->n;
  memset(a, 0, sizeof *a);
  a->kind = MX_ATTR_DENSE_ARRAY;
  a->elem = MX_ELEM_I64;
  a->n = n;
  a->ints = v;
  return MX_OK;
}

// Fills fields absent from known dimension-number structs with their defaults so consumers
// can rely on every field being present.
static mx_status_t mx_p_struct_defaults(mx_parser_t *p, mx_attr_t *s) {
  static const char *const gather[] = {"offset_dims",           "collapsed_slice_dims",
                                       "operand_batching_dims", "start_indices_batching_dims",
                                       "start_index_map",       NULL};
  static const char *const scatter[] = {
      "update_window_dims",           "inserted_window_dims",
      "input_batching_dims",          "scatter_indices_batching_dims",
      "scatter_dims_to_operand_dims", NULL};
  static const char *const dot[] = {"lhs_batching_dimensions", "rhs_batching_dimensions",
                                    "lhs_contracting_dimensions", "rhs_contracting_dimensions",
                                    NULL};
  const char *const *lists = NULL;
  bool has_ivd = false;
  if (strcmp(s->s, "stablehlo.gather") == 0)
    lists = gather, has_ivd = true;
  else if (strcmp(s->s, "stablehlo.scatter") == 0)
    lists = scatter, has_ivd = true;
  else if (strcmp(s->s, "stablehlo.dot") == 0)
    lists = dot;
  if (!lists) return MX_OK;
  int32_t cap = s->n;
  for (int i = 0; lists[i]; i++)
    if (!mx_attr_field(s, lists[i]))
      MX_TRY(mx_p_add_field(p, &s->fields, &s->n, &cap, lists[i], mx_p_i64s_attr(p, NULL, 0)));
  if (has_ivd && !mx_attr_field(s, "index_vector_dim"))
    MX_TRY(mx_p_add_field(p, &s->fields, &s->n, &cap, "index_vector_dim",
                          mx_p_int_attr(0, MX_ELEM_I64)));
  return MX_OK;
}

static char *mx_p_strdup_c(mx_parser_t *p, const char *s) { return mx_arena_strdup(p->arena, s); }

// Generic `#dialect.name<field = value, ...>` struct attribute (current token is '<').
mx_status_t mx_p_struct_body(mx_parser_t *p, const char *tag, mx_attr_t *out) {
  MX_TRY(mx_p_expect(p, MX_TK_LESS, "'<' to begin struct attribute"));
  mx_named_attr_t *fields = NULL;
  int32_t n = 0, cap = 0;
  if (mx_p_kind(p) == MX_TK_IDENT) {
    // `#stablehlo.result_accuracy_mode<TOLERANCE>`: a single keyword is an enum of that kind.
    mx_lexer_t save = p->lx;
    mx_tok_t kw = *mx_p_tok(p);
    mx_p_next(p);
    if (mx_p_accept(p, MX_TK_GREATER)) {
      memset(out, 0, sizeof *out);
      out->kind = MX_ATTR_ENUM;
      out->enum_kind = mx_p_strdup_c(p, tag);
      out->s = mx_p_strndup(p, kw.text, kw.len);
      if (!out->enum_kind || !out->s) return mx_p_oom();
      return MX_OK;
    }
    p->lx = save;
  }
  if (!mx_p_accept(p, MX_TK_GREATER)) {
    for (;;) {
      mx_tok_t nt = *mx_p_tok(p);
      if (nt.kind != MX_TK_IDENT) return mx_p_expected(p, "field name");
      const char *name = mx_p_strndup(p, nt.text, nt.len);
      if (!name) return mx_p_oom();
      mx_p_next(p);
      for (int32_t i = 0; i < n; i++)
        if (strcmp(fields[i].name, name) == 0)
          return mx_p_error_at(p, &nt, "duplicate field '%s'", name);
      MX_TRY(mx_p_expect(p, MX_TK_EQUAL, "'=' after field name"));
      mx_attr_t v;
      const mx_tok_t *vt = mx_p_tok(p);
      if (vt->kind == MX_TK_IDENT && !mx_tok_is(vt, "true") && !mx_tok_is(vt, "false") &&
          !mx_tok_is(vt, "dense") && !mx_tok_is(vt, "array") && !mx_tok_is(vt, "tensor") &&
          !mx_tok_is(vt, "tuple") && !mx_tok_is(vt, "unit")) {
        // Bare keyword (e.g. `accumulation_type = f32`, `lhs_precision_type = tf32`).
        memset(&v, 0, sizeof v);
        v.kind = MX_ATTR_ENUM;
        v.enum_kind = name;
        v.s = mx_p_strndup(p, vt->text, vt->len);
        if (!v.s) return mx_p_oom();
        mx_p_next(p);
      } else {
        MX_TRY(mx_p_attr(p, &v));
      }
      MX_TRY(mx_p_normalize_field(p, &v));
      MX_TRY(mx_p_add_field(p, &fields, &n, &cap, name, v));
      if (mx_p_accept(p, MX_TK_GREATER)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or '>' in struct attribute"));
      if (mx_p_accept(p, MX_TK_GREATER)) break;  // trailing comma
    }
  }
  memset(out, 0, sizeof *out);
  out->kind = MX_ATTR_STRUCT;
  out->s = mx_p_strdup_c(p, tag);
  if (!out->s) return mx_p_oom();
  out->n = n;
  out->fields = fields;
  return mx_p_struct_defaults(p, out);
}

static mx_status_t mx_p_hash_attr(mx_parser_t *p, mx_attr_t *out) {
  mx_tok_t t = *mx_p_tok(p);
  mx_p_next(p);
  if (mx_p_kind(p) != MX_TK_LESS) {
    const mx_attr_t *a = mx_p_find_alias(p, &t);
    if (!a) return mx_p_error_at(p, &t, "undefined attribute alias '%.*s'", (int)t.len, t.text);
    *out = *a;
    return MX_OK;
  }
  if (mx_is_dialect_enum_prefix(&t)) {
    // #stablehlo<precision DEFAULT>
    mx_p_next(p);
    const mx_tok_t *k = mx_p_tok(p);
    if (k->kind != MX_TK_IDENT) return mx_p_expected(p, "enum kind");
    memset(out, 0, sizeof *out);
    out->kind = MX_ATTR_ENUM;
    out->enum_kind = mx_p_strndup(p, k->text, k->len);
    mx_p_next(p);
    const mx_tok_t *v = mx_p_tok(p);
    if (v->kind != MX_TK_IDENT) return mx_p_expected(p, "enum value");
    out->s = mx_p_strndup(p, v->text, v->len);
    if (!out->enum_kind || !out->s) return mx_p_oom();
    mx_p_next(p);
    return mx_p_expect(p, MX_TK_GREATER, "'>' closing enum attribute");
  }
  if (t.len == 15 && memcmp(t.text, "#stablehlo.conv", 15) == 0) {
    mx_p_next(p);  // '<'
    if (!mx_p_accept_kw(p, "raw")) {
      MX_TRY(mx_p_conv_dims(p, out));
      return mx_p_expect(p, MX_TK_GREATER, "'>' closing #stablehlo.conv");
    }
    // `#stablehlo.conv<raw field = value, ...>`: the struct spelled out.
    mx_named_attr_t *fields = NULL;
    int32_t n = 0, cap = 0;
    if (!mx_p_accept(p, MX_TK_GREATER)) {
      for (;;) {
        mx_tok_t nt = *mx_p_tok(p);
        if (nt.kind != MX_TK_IDENT) return mx_p_expected(p, "field name");
        const char *name = mx_p_strndup(p, nt.text, nt.len);
        if (!name) return mx_p_oom();
        mx_p_next(p);
        MX_TRY(mx_p_expect(p, MX_TK_EQUAL, "'=' after field name"));
        mx_attr_t v;
        MX_TRY(mx_p_attr(p, &v));
        MX_TRY(mx_p_normalize_field(p, &v));
        MX_TRY(mx_p_add_field(p, &fields, &n, &cap, name, v));
        if (mx_p_accept(p, MX_TK_GREATER)) break;
        MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or '>' in struct attribute"));
      }
    }
    memset(out, 0, sizeof *out);
    out->kind = MX_ATTR_STRUCT;
    out->s = "stablehlo.conv";
    out->n = n;
    out->fields = fields;
    return MX_OK;
  }
  char *tag = mx_p_strndup(p, t.text + 1, t.len - 1);
  if (!tag) return mx_p_oom();
  if (strncmp(tag, "stablehlo.", 10) == 0 || strncmp(tag, "chlo.", 5) == 0 ||
      strncmp(tag, "mhlo.", 5) == 0)
    return mx_p_struct_body(p, tag, out);
  // Attributes of other dialects (sharding, sparsity, ...) are kept as an empty STRUCT with
  // their tag: their bodies use grammars of their own, which we skip by bracket matching.
  char closers[MX_PARSE_MAX_DEPTH];
  int depth = 0;
  do {
    mx_tok_kind_t k = mx_p_kind(p);
    char open = k == MX_TK_LESS      ? '>'
                : k == MX_TK_LPAREN  ? ')'
                : k == MX_TK_LSQUARE ? ']'
                : k == MX_TK_LBRACE  ? '}'
                                     : 0;
    char close = k == MX_TK_GREATER   ? '>'
                 : k == MX_TK_RPAREN  ? ')'
                 : k == MX_TK_RSQUARE ? ']'
                 : k == MX_TK_RBRACE  ? '}'
                                      : 0;
    if (k == MX_TK_EOF || k == MX_TK_ERROR ||
        (close && (depth == 0 || close != closers[depth - 1]))) {
      char what[64];
      snprintf(what, sizeof what, "'%c' closing dialect attribute",
               depth ? closers[depth - 1] : '>');
      return mx_p_expected(p, what);
    }
    if (open) {
      if (depth == MX_PARSE_MAX_DEPTH)
        return mx_p_error_at(p, mx_p_tok(p), "nesting too deep (more than %d levels)",
                             MX_PARSE_MAX_DEPTH);
      closers[depth++] = open;
    } else if (close) {
      depth--;
    }
    mx_p_next(p);
  } while (depth > 0);
  memset(out, 0, sizeof *out);
  out->kind = MX_ATTR_STRUCT;
  out->s = tag;
  return MX_OK;
}

mx_status_t mx_p_attr(mx_parser_t *p, mx_attr_t *out) {
  MX_TRY(mx_p_enter(p));
  const mx_tok_t *t = mx_p_tok(p);
  memset(out, 0, sizeof *out);
  switch (t->kind) {
    case MX_TK_IDENT:
      if (mx_tok_is(t, "true") || mx_tok_is(t, "false")) {
        out->kind = MX_ATTR_BOOL;
        out->i = mx_tok_is(t, "true");
        mx_p_next(p);
      } else if (mx_tok_is(t, "unit")) {
        out->kind = MX_ATTR_UNIT;
        mx_p_next(p);
      } else if (mx_tok_is(t, "dense")) {
        MX_TRY(mx_p_dense(p, out));
      } else if (mx_tok_is(t, "array")) {
        MX_TRY(mx_p_dense_array(p, out));
      } else if (mx_tok_is(t, "tensor") || mx_tok_is(t, "tuple")) {
        out->kind = MX_ATTR_TYPE;
        out->type = mx_arena_alloc(p->arena, sizeof(mx_type_t));
        if (!out->type) return mx_p_oom();
        MX_TRY(mx_p_type(p, out->type));
      } else if (mx_tok_is(t, "dense_resource") || mx_tok_is(t, "sparse") ||
                 mx_tok_is(t, "affine_map") || mx_tok_is(t, "opaque") || mx_tok_is(t, "strided") ||
                 mx_tok_is(t, "distinct") || mx_tok_is(t, "affine_set")) {
        return mx_p_unsupported(p, t, "%.*s attributes", (int)t->len, t->text);
      } else if (mx_elem_from_name(t->text, t->len) != MX_ELEM_INVALID || mx_tok_is(t, "complex")) {
        // A scalar type used as an attribute (e.g. `accumulation_type = f32`).
        mx_elem_type_t et;
        MX_TRY(mx_p_elem_type(p, &et));
        out->kind = MX_ATTR_TYPE;
        out->type = mx_arena_alloc(p->arena, sizeof(mx_type_t));
        if (!out->type) return mx_p_oom();
        *out->type = mx_type_scalar(et);
      } else {
        return mx_p_expected(p, "attribute value");
      }
      break;
    case MX_TK_INT:
    case MX_TK_FLOAT:
    case MX_TK_MINUS:
      MX_TRY(mx_p_number_attr(p, out));
      break;
    case MX_TK_STRING: {
      char *s;
      MX_TRY(mx_p_string(p, t, &s, NULL));
      out->kind = MX_ATTR_STRING;
      out->s = s;
      mx_p_next(p);
      break;
    }
    case MX_TK_SYMBOL: {
      out->kind = MX_ATTR_SYMBOL;
      if (t->len >= 2 && t->text[1] == '"') {
        mx_tok_t st = *t;
        st.text++;
        st.len--;
        char *s;
        MX_TRY(mx_p_string(p, &st, &s, NULL));
        out->s = s;
      } else {
        out->s = mx_p_strndup(p, t->text + 1, t->len - 1);
        if (!out->s) return mx_p_oom();
      }
      mx_p_next(p);
      break;
    }
    case MX_TK_LSQUARE:
      MX_TRY(mx_p_array_attr(p, out));
      break;
    case MX_TK_LBRACE:
      MX_TRY(mx_p_attr_dict(p, out));
      break;
    case MX_TK_HASH:
      MX_TRY(mx_p_hash_attr(p, out));
      break;
    case MX_TK_BANG:
      out->kind = MX_ATTR_TYPE;
      out->type = mx_arena_alloc(p->arena, sizeof(mx_type_t));
      if (!out->type) return mx_p_oom();
      MX_TRY(mx_p_type(p, out->type));
      break;
    default:
      return mx_p_expected(p, "attribute value");
  }
  mx_p_leave(p);
  return MX_OK;
}

// ============================================================================================
// Convolution dimension numbers: [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]
// ============================================================================================

static mx_status_t mx_p_conv_group(mx_parser_t *p, char c1, char c2, int64_t *pos1, int64_t *pos2,
                                   int64_t *spatial, int32_t *n_spatial) {
  MX_TRY(mx_p_expect(p, MX_TK_LSQUARE, "'[' in convolution dimension numbers"));
  int64_t idx = 0;
  *pos1 = *pos2 = -1;
  int32_t max_sp = -1;
  int64_t where[MX_MAX_RANK];
  for (int i = 0; i < MX_MAX_RANK; i++) where[i] = -1;
  for (;;) {
    const mx_tok_t *t = mx_p_tok(p);
    if (idx >= MX_MAX_RANK)
      return mx_p_error_at(p, t, "too many dimensions in convolution dimension numbers");
    if (t->kind == MX_TK_INT) {
      int64_t d;
      mx_tok_t dt = *t;
      MX_TRY(mx_p_int(p, &d));
      if (d < 0 || d >= MX_MAX_RANK)
        return mx_p_error_at(p, &dt, "invalid spatial dimension %lld", (long long)d);
      if (where[d] >= 0)
        return mx_p_error_at(p, &dt, "duplicate spatial dimension %lld", (long long)d);
      where[d] = idx;
      if (d > max_sp) max_sp = (int32_t)d;
    } else if (t->kind == MX_TK_IDENT && t->len == 1 && (t->text[0] == c1 || t->text[0] == c2)) {
      int64_t *slot = t->text[0] == c1 ? pos1 : pos2;
      if (*slot >= 0) return mx_p_error_at(p, t, "duplicate dimension '%c'", t->text[0]);
      *slot = idx;
      mx_p_next(p);
    } else {
      char what[64];
      snprintf(what, sizeof what, "dimension number, '%c' or '%c'", c1, c2);
      return mx_p_expected(p, what);
    }
    idx++;
    if (mx_p_accept(p, MX_TK_RSQUARE)) break;
    MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ']' in convolution dimension numbers"));
  }
  if (*pos1 < 0 || *pos2 < 0)
    return mx_p_error_at(p, mx_p_tok(p), "convolution dimensions '%c' and '%c' must both be given",
                         c1, c2);
  for (int32_t d = 0; d <= max_sp; d++) {
    if (where[d] < 0)
      return mx_p_error_at(p, mx_p_tok(p), "spatial dimension %d not specified", (int)d);
    spatial[d] = where[d];
  }
  *n_spatial = max_sp + 1;
  return MX_OK;
}

mx_status_t mx_p_conv_dims(mx_parser_t *p, mx_attr_t *out) {
  int64_t ib, iff, kif, kof, ob, of;
  int64_t isp[MX_MAX_RANK], ksp[MX_MAX_RANK], osp[MX_MAX_RANK];
  int32_t ni, nk, no;
  MX_TRY(mx_p_conv_group(p, 'b', 'f', &ib, &iff, isp, &ni));
  MX_TRY(mx_p_expect_kw(p, "x"));
  MX_TRY(mx_p_conv_group(p, 'i', 'o', &kif, &kof, ksp, &nk));
  MX_TRY(mx_p_expect(p, MX_TK_ARROW, "'->' in convolution dimension numbers"));
  MX_TRY(mx_p_conv_group(p, 'b', 'f', &ob, &of, osp, &no));
  mx_named_attr_t *fields = NULL;
  int32_t n = 0, cap = 0;
  MX_TRY(mx_p_add_field(p, &fields, &n, &cap, "input_batch_dimension",
                        mx_p_int_attr(ib, MX_ELEM_I64)));
  MX_TRY(mx_p_add_field(p, &fields, &n, &cap, "input_feature_dimension",
                        mx_p_int_attr(iff, MX_ELEM_I64)));
  MX_TRY(
      mx_p_add_field(p, &fields, &n, &cap, "input_spatial_dimensions", mx_p_i64s_attr(p, isp, ni)));
  MX_TRY(mx_p_add_field(p, &fields, &n, &cap, "kernel_input_feature_dimension",
                        mx_p_int_attr(kif, MX_ELEM_I64)));
  MX_TRY(mx_p_add_field(p, &fields, &n, &cap, "kernel_output_feature_dimension",
                        mx_p_int_attr(kof, MX_ELEM_I64)));
  MX_TRY(mx_p_add_field(p, &fields, &n, &cap, "kernel_spatial_dimensions",
                        mx_p_i64s_attr(p, ksp, nk)));
  MX_TRY(mx_p_add_field(p, &fields, &n, &cap, "output_batch_dimension",
                        mx_p_int_attr(ob, MX_ELEM_I64)));
  MX_TRY(mx_p_add_field(p, &fields, &n, &cap, "output_feature_dimension",
                        mx_p_int_attr(of, MX_ELEM_I64)));
  MX_TRY(mx_p_add_field(p, &fields, &n, &cap, "output_spatial_dimensions",
                        mx_p_i64s_attr(p, osp, no)));
  memset(out, 0, sizeof *out);
  out->kind = MX_ATTR_STRUCT;
  out->s = "stablehlo.conv";
  out->n = n;
  out->fields = fields;
  return MX_OK;
}
