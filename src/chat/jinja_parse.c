// Jinja parser: tokens to AST (statements and expressions), recursive descent with Jinja's
// operator precedence. Every error names the position and what was expected.
#include <stdio.h>
#include <string.h>

#include "jinja.h"

typedef jj_compiler_t P;

static jj_token_t *cur(P *p) { return &p->toks[p->cur]; }
static jj_token_t *peek(P *p, int k) {
  int32_t i = p->cur + k;
  return &p->toks[i < p->n_toks ? i : p->n_toks - 1];
}
static void next(P *p) {
  if (p->toks[p->cur].kind != JT_EOF) p->cur++;
}

static bool tok_is(const jj_token_t *t, jj_tok_kind_t k, const char *s) {
  if (t->kind != k) return false;
  if (!s) return true;
  return t->n == strlen(s) && memcmp(t->s, s, t->n) == 0;
}
static bool is_op(P *p, const char *s) { return tok_is(cur(p), JT_OP, s); }
static bool is_name(P *p, const char *s) { return tok_is(cur(p), JT_NAME, s); }

static const char *describe(const jj_token_t *t, char *buf, size_t cap) {
  switch (t->kind) {
    case JT_EOF:
      return "end of template";
    case JT_TEXT:
      return "template text";
    case JT_VAR_BEGIN:
      return "'{{'";
    case JT_VAR_END:
      return "'}}'";
    case JT_BLOCK_BEGIN:
      return "'{%'";
    case JT_BLOCK_END:
      return "'%}'";
    case JT_STRING:
      return "a string";
    case JT_INT:
    case JT_FLOAT:
      return "a number";
    default:
      snprintf(buf, cap, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s);
      return buf;
  }
}

static _Noreturn void expected(P *p, const char *what) {
  char buf[64];
  jj_compile_fail(p, cur(p)->pos, "expected %s, found %s", what, describe(cur(p), buf, sizeof buf));
}

static void expect_op(P *p, const char *op) {
  if (!is_op(p, op)) {
    char what[16];
    snprintf(what, sizeof what, "'%s'", op);
    expected(p, what);
  }
  next(p);
}

static void expect_block_end(P *p) {
  if (cur(p)->kind != JT_BLOCK_END) expected(p, "'%}'");
  next(p);
}

static jj_node_t *new_node(P *p, jj_node_kind_t kind, uint32_t pos) {
  jj_node_t *n = mx_arena_alloc(p->arena, sizeof *n);
  if (!n) jj_compile_fail(p, pos, "out of memory");
  n->kind = kind;
  n->pos = pos;
  return n;
}

typedef struct nvec {
  jj_node_t **v;
  int32_t n, cap;
} nvec_t;

static void nvec_push(P *p, nvec_t *v, jj_node_t *n) {
  if (v->n == v->cap) {
    int32_t cap = v->cap ? v->cap * 2 : 4;
    v->v = mx_arena_grow(p->arena, v->v, (size_t)v->n, (size_t)cap, sizeof *v->v);
    if (!v->v) jj_compile_fail(p, 0, "out of memory");
    v->cap = cap;
  }
  v->v[v->n++] = n;
}

static const char **names_push(P *p, const char **names, int32_t n, const char *s) {
  const char **r = mx_arena_grow(p->arena, (void *)names, (size_t)n, (size_t)n + 1, sizeof *r);
  if (!r) jj_compile_fail(p, 0, "out of memory");
  r[n] = s;
  return r;
}

static const char *expect_name(P *p, const char *what) {
  if (cur(p)->kind != JT_NAME) expected(p, what);
  const char *s = mx_arena_strndup(p->arena, cur(p)->s, cur(p)->n);
  if (!s) jj_compile_fail(p, cur(p)->pos, "out of memory");
  next(p);
  return s;
}

static void enter(P *p) {
  if (++p->depth > JJ_MAX_DEPTH) {
    jj_compile_fail(p, cur(p)->pos, "nesting deeper than %d levels", JJ_MAX_DEPTH);
  }
}
static void leave(P *p) { p->depth--; }

static jj_node_t *parse_expr(P *p, bool with_cond);
static jj_node_t *parse_unary(P *p, bool with_filter);

// (args...) with keyword arguments name=value into n->list / n->names + n->list2.
static void parse_call_args(P *p, jj_node_t *n) {
  expect_op(p, "(");
  nvec_t pos = {0}, kw = {0};
  while (!is_op(p, ")")) {
    if (cur(p)->kind == JT_NAME && tok_is(peek(p, 1), JT_OP, "=")) {
      const char *k = expect_name(p, "an argument name");
      next(p);
      n->names = names_push(p, n->names, n->n_names++, k);
      nvec_push(p, &kw, parse_expr(p, true));
    } else {
      if (kw.n > 0) jj_compile_fail(p, cur(p)->pos, "positional argument after keyword argument");
      nvec_push(p, &pos, parse_expr(p, true));
    }
    if (is_op(p, ",")) {
      next(p);
    } else if (!is_op(p, ")")) {
      expected(p, "',' or ')'");
    }
  }
  next(p);
  n->list = pos.v;
  n->n = pos.n;
  n->list2 = kw.v;
  n->n2 = kw.n;
}

static jj_node_t *parse_primary(P *p) {
  jj_token_t *t = cur(p);
  jj_node_t *n = NULL;
  switch (t->kind) {
    case JT_NAME:
      if (is_name(p, "true") || is_name(p, "True") || is_name(p, "false") || is_name(p, "False")) {
        n = new_node(p, JN_BOOL, t->pos);
        n->i = t->s[0] == 't' || t->s[0] == 'T';
      } else if (is_name(p, "none") || is_name(p, "None")) {
        n = new_node(p, JN_NONE, t->pos);
      } else {
        n = new_node(p, JN_NAME, t->pos);
        n->s = mx_arena_strndup(p->arena, t->s, t->n);
        n->sn = t->n;
      }
      next(p);
      return n;
    case JT_STRING: {
      n = new_node(p, JN_STR, t->pos);
      n->s = t->s;
      n->sn = t->n;
      next(p);
      // Adjacent literals concatenate, as in Jinja.
      while (cur(p)->kind == JT_STRING) {
        char *s = mx_arena_alloc(p->arena, n->sn + cur(p)->n + 1);
        if (!s) jj_compile_fail(p, t->pos, "out of memory");
        memcpy(s, n->s, n->sn);
        memcpy(s + n->sn, cur(p)->s, cur(p)->n);
        n->s = s;
        n->sn += cur(p)->n;
        next(p);
      }
      return n;
    }
    case JT_INT:
      n = new_node(p, JN_INT, t->pos);
      n->i = t->i;
      next(p);
      return n;
    case JT_FLOAT:
      n = new_node(p, JN_FLOAT, t->pos);
      n->f = t->f;
      next(p);
      return n;
    case JT_OP:
      if (is_op(p, "(")) {
        next(p);
        if (is_op(p, ")")) {  // empty tuple
          next(p);
          n = new_node(p, JN_LIST, t->pos);
          n->i = 1;
          return n;
        }
        jj_node_t *e = parse_expr(p, true);
        if (!is_op(p, ",")) {
          expect_op(p, ")");
          return e;
        }
        nvec_t items = {0};
        nvec_push(p, &items, e);
        while (is_op(p, ",")) {
          next(p);
          if (is_op(p, ")")) break;
          nvec_push(p, &items, parse_expr(p, true));
        }
        expect_op(p, ")");
        n = new_node(p, JN_LIST, t->pos);
        n->list = items.v;
        n->n = items.n;
        n->i = 1;
        return n;
      }
      if (is_op(p, "[")) {
        next(p);
        nvec_t items = {0};
        while (!is_op(p, "]")) {
          nvec_push(p, &items, parse_expr(p, true));
          if (is_op(p, ",")) {
            next(p);
          } else if (!is_op(p, "]")) {
            expected(p, "',' or ']'");
          }
        }
        next(p);
        n = new_node(p, JN_LIST, t->pos);
        n->list = items.v;
        n->n = items.n;
        return n;
      }
      if (is_op(p, "{")) {
        next(p);
        nvec_t keys = {0}, vals = {0};
        while (!is_op(p, "}")) {
          nvec_push(p, &keys, parse_expr(p, true));
          expect_op(p, ":");
          nvec_push(p, &vals, parse_expr(p, true));
          if (is_op(p, ",")) {
            next(p);
          } else if (!is_op(p, "}")) {
            expected(p, "',' or '}'");
          }
        }
        next(p);
        n = new_node(p, JN_DICT, t->pos);
        n->list = keys.v;
        n->list2 = vals.v;
        n->n = n->n2 = keys.n;
        return n;
      }
      break;
    default:
      break;
  }
  expected(p, "an expression");
}

static jj_node_t *parse_postfix(P *p, jj_node_t *n) {
  for (;;) {
    uint32_t pos = cur(p)->pos;
    if (is_op(p, ".")) {
      next(p);
      if (cur(p)->kind == JT_INT) {
        jj_node_t *it = new_node(p, JN_ITEM, pos);
        it->a = n;
        it->b = new_node(p, JN_INT, cur(p)->pos);
        it->b->i = cur(p)->i;
        next(p);
        n = it;
        continue;
      }
      jj_node_t *at = new_node(p, JN_ATTR, pos);
      at->a = n;
      at->s = expect_name(p, "an attribute name after '.'");
      n = at;
    } else if (is_op(p, "[")) {
      next(p);
      jj_node_t *parts[3] = {NULL, NULL, NULL};
      int k = 0;
      bool is_slice = false;
      for (;;) {
        if (!is_op(p, ":") && !is_op(p, "]")) parts[k] = parse_expr(p, true);
        if (is_op(p, ":")) {
          is_slice = true;
          if (++k > 2) expected(p, "']'");
          next(p);
          continue;
        }
        break;
      }
      expect_op(p, "]");
      if (!is_slice) {
        if (!parts[0]) jj_compile_fail(p, pos, "empty subscript");
        jj_node_t *it = new_node(p, JN_ITEM, pos);
        it->a = n;
        it->b = parts[0];
        n = it;
      } else {
        jj_node_t *sl = new_node(p, JN_SLICE, pos);
        sl->a = n;
        sl->list = mx_arena_alloc(p->arena, 3 * sizeof *sl->list);
        if (!sl->list) jj_compile_fail(p, pos, "out of memory");
        for (int j = 0; j < 3; j++) sl->list[j] = parts[j];
        sl->n = 3;
        n = sl;
      }
    } else if (is_op(p, "(")) {
      jj_node_t *call = new_node(p, JN_CALL, n->pos);  // errors point at the callee
      call->a = n;
      parse_call_args(p, call);
      n = call;
    } else {
      return n;
    }
  }
}

static bool starts_test_arg(P *p) {
  jj_token_t *t = cur(p);
  if (t->kind == JT_STRING || t->kind == JT_INT || t->kind == JT_FLOAT) return true;
  if (t->kind == JT_OP) return is_op(p, "[") || is_op(p, "{");
  if (t->kind != JT_NAME) return false;
  static const char *const kw[] = {"and", "or", "else", "if", "in", "is", "not"};
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++) {
    if (is_name(p, kw[i])) return false;
  }
  return true;
}

static jj_node_t *parse_filter_expr(P *p, jj_node_t *n) {
  for (;;) {
    uint32_t pos = cur(p)->pos;
    if (is_op(p, "|")) {
      next(p);
      jj_node_t *f = new_node(p, JN_FILTER, pos);
      f->a = n;
      f->pos = cur(p)->pos;
      f->s = expect_name(p, "a filter name after '|'");
      if (is_op(p, "(")) parse_call_args(p, f);
      n = f;
    } else if (is_name(p, "is")) {
      next(p);
      jj_node_t *t = new_node(p, JN_TEST, pos);
      t->a = n;
      if (is_name(p, "not")) {
        t->i = 1;
        next(p);
      }
      // `none`, `true`, `false` are test names here although they are literals elsewhere.
      t->s = expect_name(p, "a test name after 'is'");
      if (is_op(p, "(")) {
        parse_call_args(p, t);
      } else if (starts_test_arg(p)) {
        t->list = mx_arena_alloc(p->arena, sizeof *t->list);
        if (!t->list) jj_compile_fail(p, pos, "out of memory");
        t->list[0] = parse_postfix(p, parse_primary(p));
        t->n = 1;
      }
      n = t;
    } else {
      return n;
    }
  }
}

static jj_node_t *parse_unary(P *p, bool with_filter) {
  enter(p);
  uint32_t pos = cur(p)->pos;
  jj_node_t *n;
  if (is_op(p, "-") || is_op(p, "+")) {
    bool neg = is_op(p, "-");
    next(p);
    n = new_node(p, neg ? JN_NEG : JN_POS, pos);
    n->a = parse_unary(p, false);
  } else {
    n = parse_postfix(p, parse_primary(p));
  }
  if (with_filter) n = parse_filter_expr(p, n);
  leave(p);
  return n;
}

static jj_node_t *bin(P *p, uint32_t pos, const char *op, jj_node_t *a, jj_node_t *b) {
  jj_node_t *n = new_node(p, JN_BIN, pos);
  n->s = op;
  n->a = a;
  n->b = b;
  return n;
}

static jj_node_t *parse_pow(P *p) {
  jj_node_t *n = parse_unary(p, true);
  while (is_op(p, "**")) {
    uint32_t pos = cur(p)->pos;
    next(p);
    n = bin(p, pos, "**", n, parse_unary(p, true));
  }
  return n;
}

static jj_node_t *parse_math2(P *p) {
  jj_node_t *n = parse_pow(p);
  for (;;) {
    const char *op = is_op(p, "*")    ? "*"
                     : is_op(p, "/")  ? "/"
                     : is_op(p, "//") ? "//"
                     : is_op(p, "%")  ? "%"
                                      : NULL;
    if (!op) return n;
    uint32_t pos = cur(p)->pos;
    next(p);
    n = bin(p, pos, op, n, parse_pow(p));
  }
}

static jj_node_t *parse_concat(P *p) {
  jj_node_t *n = parse_math2(p);
  while (is_op(p, "~")) {
    uint32_t pos = cur(p)->pos;
    next(p);
    n = bin(p, pos, "~", n, parse_math2(p));
  }
  return n;
}

static jj_node_t *parse_math1(P *p) {
  jj_node_t *n = parse_concat(p);
  for (;;) {
    const char *op = is_op(p, "+") ? "+" : is_op(p, "-") ? "-" : NULL;
    if (!op) return n;
    uint32_t pos = cur(p)->pos;
    next(p);
    n = bin(p, pos, op, n, parse_concat(p));
  }
}

static jj_node_t *parse_compare(P *p) {
  jj_node_t *n = parse_math1(p);
  for (;;) {
    uint32_t pos = cur(p)->pos;
    static const char *const ops[] = {"==", "!=", "<", ">", "<=", ">="};
    const char *op = NULL;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
      if (is_op(p, ops[i])) op = ops[i];
    }
    if (op) {
      next(p);
    } else if (is_name(p, "in")) {
      op = "in";
      next(p);
    } else if (is_name(p, "not") && tok_is(peek(p, 1), JT_NAME, "in")) {
      op = "not in";
      next(p);
      next(p);
    } else {
      return n;
    }
    n = bin(p, pos, op, n, parse_math1(p));
  }
}

static jj_node_t *parse_not(P *p) {
  if (is_name(p, "not")) {
    enter(p);
    jj_node_t *n = new_node(p, JN_NOT, cur(p)->pos);
    next(p);
    n->a = parse_not(p);
    leave(p);
    return n;
  }
  return parse_compare(p);
}

static jj_node_t *parse_and(P *p) {
  jj_node_t *n = parse_not(p);
  while (is_name(p, "and")) {
    jj_node_t *a = new_node(p, JN_AND, cur(p)->pos);
    next(p);
    a->a = n;
    a->b = parse_not(p);
    n = a;
  }
  return n;
}

static jj_node_t *parse_or(P *p) {
  jj_node_t *n = parse_and(p);
  while (is_name(p, "or")) {
    jj_node_t *o = new_node(p, JN_OR, cur(p)->pos);
    next(p);
    o->a = n;
    o->b = parse_and(p);
    n = o;
  }
  return n;
}

static jj_node_t *parse_expr(P *p, bool with_cond) {
  enter(p);
  jj_node_t *n = parse_or(p);
  if (with_cond && is_name(p, "if")) {
    jj_node_t *c = new_node(p, JN_COND, cur(p)->pos);
    next(p);
    c->a = n;
    c->b = parse_or(p);
    if (is_name(p, "else")) {
      next(p);
      c->c = parse_expr(p, true);
    }
    n = c;
  }
  leave(p);
  return n;
}

// expr[, expr...] as a tuple when there is a comma.
static jj_node_t *parse_tuple_expr(P *p, bool with_cond) {
  uint32_t pos = cur(p)->pos;
  jj_node_t *e = parse_expr(p, with_cond);
  if (!is_op(p, ",")) return e;
  nvec_t items = {0};
  nvec_push(p, &items, e);
  while (is_op(p, ",")) {
    next(p);
    if (cur(p)->kind == JT_BLOCK_END || cur(p)->kind == JT_VAR_END || is_name(p, "if")) break;
    nvec_push(p, &items, parse_expr(p, with_cond));
  }
  jj_node_t *n = new_node(p, JN_LIST, pos);
  n->list = items.v;
  n->n = items.n;
  n->i = 1;
  return n;
}

// ---- Statements ----
typedef struct body_end {
  const char *which;  // the end keyword that stopped the body (cursor is after it)
  uint32_t pos;
} body_end_t;

static jj_node_t **parse_body(P *p, const char *const *ends, int n_ends, const char *opener,
                              uint32_t opener_pos, int32_t *n_out, body_end_t *end);

static jj_node_t *parse_statement(P *p, int *loop_depth) {
  jj_token_t *t = cur(p);
  uint32_t pos = t->pos;
  if (t->kind != JT_NAME) expected(p, "a tag name (if, for, set, macro, ...)");
  if (is_name(p, "if")) {
    next(p);
    jj_node_t *n = new_node(p, JN_IF, pos);
    n->a = parse_expr(p, true);
    expect_block_end(p);
    static const char *const ends[] = {"elif", "else", "endif"};
    body_end_t e;
    n->list = parse_body(p, ends, 3, "if", pos, &n->n, &e);
    jj_node_t *tail = n;
    while (strcmp(e.which, "elif") == 0) {
      jj_node_t *el = new_node(p, JN_IF, e.pos);
      el->a = parse_expr(p, true);
      expect_block_end(p);
      el->list = parse_body(p, ends, 3, "elif", e.pos, &el->n, &e);
      tail->list2 = mx_arena_alloc(p->arena, sizeof *tail->list2);
      if (!tail->list2) jj_compile_fail(p, pos, "out of memory");
      tail->list2[0] = el;
      tail->n2 = 1;
      tail = el;
    }
    if (strcmp(e.which, "else") == 0) {
      expect_block_end(p);
      static const char *const ends2[] = {"endif"};
      tail->list2 = parse_body(p, ends2, 1, "else", e.pos, &tail->n2, &e);
    }
    expect_block_end(p);
    return n;
  }
  if (is_name(p, "for")) {
    next(p);
    jj_node_t *n = new_node(p, JN_FOR, pos);
    do {
      if (n->n_names > 0) next(p);
      n->names = names_push(p, n->names, n->n_names, expect_name(p, "a loop variable name"));
      n->n_names++;
    } while (is_op(p, ","));
    if (!is_name(p, "in")) expected(p, "'in'");
    next(p);
    n->a = parse_tuple_expr(p, false);
    if (is_name(p, "if")) {
      next(p);
      n->b = parse_expr(p, false);
    }
    if (is_name(p, "recursive")) {
      jj_compile_fail(p, cur(p)->pos, "recursive loops are not supported");
    }
    expect_block_end(p);
    static const char *const ends[] = {"else", "endfor"};
    body_end_t e;
    (*loop_depth)++;
    n->list = parse_body(p, ends, 2, "for", pos, &n->n, &e);
    (*loop_depth)--;
    if (strcmp(e.which, "else") == 0) {
      expect_block_end(p);
      static const char *const ends2[] = {"endfor"};
      n->list2 = parse_body(p, ends2, 1, "for", pos, &n->n2, &e);
    }
    expect_block_end(p);
    return n;
  }
  if (is_name(p, "set")) {
    next(p);
    jj_node_t *n = new_node(p, JN_SET, pos);
    const char *first = expect_name(p, "a variable name after 'set'");
    if (is_op(p, ".")) {
      next(p);
      jj_node_t *obj = new_node(p, JN_NAME, pos);
      obj->s = first;
      n->a = obj;
      n->s = expect_name(p, "an attribute name");
    } else {
      n->names = names_push(p, NULL, 0, first);
      n->n_names = 1;
      while (is_op(p, ",")) {
        next(p);
        n->names = names_push(p, n->names, n->n_names, expect_name(p, "a variable name"));
        n->n_names++;
      }
    }
    if (cur(p)->kind == JT_BLOCK_END && !n->a && n->n_names == 1) {
      next(p);
      n->kind = JN_SETBLOCK;
      static const char *const ends[] = {"endset"};
      body_end_t e;
      n->list = parse_body(p, ends, 1, "set", pos, &n->n, &e);
      expect_block_end(p);
      return n;
    }
    expect_op(p, "=");
    n->b = parse_tuple_expr(p, true);
    expect_block_end(p);
    return n;
  }
  if (is_name(p, "macro")) {
    next(p);
    jj_node_t *n = new_node(p, JN_MACRO, pos);
    n->s = expect_name(p, "a macro name");
    expect_op(p, "(");
    nvec_t defs = {0};
    while (!is_op(p, ")")) {
      n->names = names_push(p, n->names, n->n_names, expect_name(p, "a parameter name"));
      n->n_names++;
      jj_node_t *d = NULL;
      if (is_op(p, "=")) {
        next(p);
        d = parse_expr(p, true);
      }
      nvec_push(p, &defs, d);
      if (is_op(p, ",")) {
        next(p);
      } else if (!is_op(p, ")")) {
        expected(p, "',' or ')'");
      }
    }
    next(p);
    n->list2 = defs.v;
    n->n2 = defs.n;
    expect_block_end(p);
    static const char *const ends[] = {"endmacro"};
    body_end_t e;
    int saved = *loop_depth;
    *loop_depth = 0;
    n->list = parse_body(p, ends, 1, "macro", pos, &n->n, &e);
    *loop_depth = saved;
    if (cur(p)->kind == JT_NAME) next(p);  // {% endmacro name %}
    expect_block_end(p);
    return n;
  }
  if (is_name(p, "break") || is_name(p, "continue")) {
    bool brk = is_name(p, "break");
    if (*loop_depth == 0) {
      jj_compile_fail(p, pos, "'%s' outside of a for loop", brk ? "break" : "continue");
    }
    next(p);
    expect_block_end(p);
    return new_node(p, brk ? JN_BREAK : JN_CONTINUE, pos);
  }
  if (is_name(p, "generation")) {  // transformers' assistant-mask marker: renders its body
    next(p);
    expect_block_end(p);
    jj_node_t *n = new_node(p, JN_BODY, pos);
    static const char *const ends[] = {"endgeneration"};
    body_end_t e;
    n->list = parse_body(p, ends, 1, "generation", pos, &n->n, &e);
    expect_block_end(p);
    return n;
  }
  char buf[64];
  jj_compile_fail(p, pos, "unknown or unexpected tag %s", describe(t, buf, sizeof buf));
}

static jj_node_t **parse_body(P *p, const char *const *ends, int n_ends, const char *opener,
                              uint32_t opener_pos, int32_t *n_out, body_end_t *end) {
  enter(p);
  nvec_t body = {0};
  for (;;) {
    jj_token_t *t = cur(p);
    if (t->kind == JT_EOF) {
      if (n_ends == 0) break;
      int line = 0, col = 0;
      jj_line_col(p->src, p->len, opener_pos, &line, &col);
      jj_compile_fail(p, t->pos,
                      "unexpected end of template: expected '{%% %s %%}' to close '%s' at %d:%d",
                      ends[n_ends - 1], opener, line, col);
    }
    if (t->kind == JT_TEXT) {
      jj_node_t *n = new_node(p, JN_TEXT, t->pos);
      n->s = t->s;
      n->sn = t->n;
      nvec_push(p, &body, n);
      next(p);
      continue;
    }
    if (t->kind == JT_VAR_BEGIN) {
      next(p);
      jj_node_t *n = new_node(p, JN_OUT, t->pos);
      n->a = parse_tuple_expr(p, true);
      if (cur(p)->kind != JT_VAR_END) expected(p, "'}}'");
      next(p);
      nvec_push(p, &body, n);
      continue;
    }
    if (t->kind != JT_BLOCK_BEGIN) expected(p, "text, '{{' or '{%'");
    jj_token_t *name = peek(p, 1);
    bool is_end = false;
    for (int i = 0; i < n_ends; i++) {
      if (tok_is(name, JT_NAME, ends[i])) {
        end->which = ends[i];
        end->pos = name->pos;
        is_end = true;
      }
    }
    if (is_end) {
      next(p);
      next(p);
      break;
    }
    next(p);
    if (name->kind == JT_NAME &&
        (name->n >= 3 && (memcmp(name->s, "end", 3) == 0 || tok_is(name, JT_NAME, "else") ||
                          tok_is(name, JT_NAME, "elif")))) {
      char buf[64];
      if (n_ends == 0) {
        jj_compile_fail(p, name->pos, "unexpected %s with no open block",
                        describe(name, buf, sizeof buf));
      }
      int line = 0, col = 0;
      jj_line_col(p->src, p->len, opener_pos, &line, &col);
      jj_compile_fail(p, name->pos, "unexpected %s: expected '{%% %s %%}' to close '%s' at %d:%d",
                      describe(name, buf, sizeof buf), ends[n_ends - 1], opener, line, col);
    }
    nvec_push(p, &body, parse_statement(p, &p->loop_depth));
  }
  leave(p);
  *n_out = body.n;
  return body.v;
}

jj_node_t *jj_parse(jj_compiler_t *c) {
  c->loop_depth = 0;
  jj_node_t *root = new_node(c, JN_BODY, 0);
  body_end_t e = {0};
  root->list = parse_body(c, NULL, 0, "", 0, &root->n, &e);
  return root;
}
