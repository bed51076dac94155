// StableHLO text parser: modules, functions, regions, SSA names and generic-form ops.
// Attributes/types live in parse_attr.c, pretty op forms in parse_ops.c.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/parse_internal.h"

// ============================================================================================
// Errors and token helpers
// ============================================================================================

static void mx_p_describe(const mx_tok_t *t, char *buf, size_t n) {
  if (t->kind == MX_TK_EOF) {
    snprintf(buf, n, "end of input");
  } else if (t->kind == MX_TK_ERROR) {
    unsigned char c = (unsigned char)t->text[0];
    if (c == '"')
      snprintf(buf, n, "unterminated string");
    else if (c >= 0x20 && c < 0x7f)
      snprintf(buf, n, "invalid character '%c'", c);
    else
      snprintf(buf, n, "invalid character 0x%02x", c);
  } else {
    size_t len = t->len > 40 ? 40 : t->len;
    // Tokens never contain newlines except inside strings; cut there to keep messages one line.
    for (size_t i = 0; i < len; i++)
      if (t->text[i] == '\n') len = i;
    snprintf(buf, n, "'%.*s%s'", (int)len, t->text, len < t->len ? "..." : "");
  }
}

static const char *mx_p_fname(const mx_parser_t *p) {
  return p->filename ? p->filename : "<input>";
}

mx_status_t mx_p_error_at(mx_parser_t *p, const mx_tok_t *t, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mx_error_set(MX_ERR_PARSE, "%s:%d:%d: error: %s", mx_p_fname(p), (int)t->line, (int)t->col,
                      msg);
}

mx_status_t mx_p_expected(mx_parser_t *p, const char *what) {
  char got[96];
  mx_p_describe(mx_p_tok(p), got, sizeof got);
  return mx_p_error_at(p, mx_p_tok(p), "expected %s, got %s", what, got);
}

mx_status_t mx_p_unsupported(mx_parser_t *p, const mx_tok_t *t, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s (%s:%d:%d)", msg, mx_p_fname(p),
                      (int)t->line, (int)t->col);
}

mx_status_t mx_p_oom(void) { return mx_error_set(MX_ERR_NOMEM, "out of memory while parsing"); }

bool mx_p_accept(mx_parser_t *p, mx_tok_kind_t k) {
  if (mx_p_kind(p) != k) return false;
  mx_p_next(p);
  return true;
}

bool mx_p_accept_kw(mx_parser_t *p, const char *kw) {
  if (!mx_tok_is(mx_p_tok(p), kw)) return false;
  mx_p_next(p);
  return true;
}

mx_status_t mx_p_expect(mx_parser_t *p, mx_tok_kind_t k, const char *what) {
  if (mx_p_accept(p, k)) return MX_OK;
  return mx_p_expected(p, what);
}

mx_status_t mx_p_expect_kw(mx_parser_t *p, const char *kw) {
  if (mx_p_accept_kw(p, kw)) return MX_OK;
  char what[96];
  snprintf(what, sizeof what, "'%s'", kw);
  return mx_p_expected(p, what);
}

mx_status_t mx_p_enter(mx_parser_t *p) {
  if (p->depth >= MX_PARSE_MAX_DEPTH)
    return mx_p_error_at(p, mx_p_tok(p), "nesting too deep (more than %d levels)",
                         MX_PARSE_MAX_DEPTH);
  p->depth++;
  return MX_OK;
}

char *mx_p_strndup(mx_parser_t *p, const char *s, size_t n) {
  return mx_arena_strndup(p->arena, s, n);
}

static int mx_hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

mx_status_t mx_p_string(mx_parser_t *p, const mx_tok_t *t, char **out, size_t *out_len) {
  // t->text is "...", possibly with escapes \" \\ \n \t \XX.
  const char *s = t->text + 1;
  size_t n = t->len >= 2 ? t->len - 2 : 0;
  char *buf = mx_arena_alloc(p->arena, n + 1);
  if (!buf) return mx_p_oom();
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c != '\\') {
      buf[j++] = c;
      continue;
    }
    if (++i >= n) return mx_p_error_at(p, t, "bad escape at end of string");
    c = s[i];
    if (c == 'n')
      buf[j++] = '\n';
    else if (c == 't')
      buf[j++] = '\t';
    else if (c == '"' || c == '\\')
      buf[j++] = c;
    else if (i + 1 < n && mx_hexval(c) >= 0 && mx_hexval(s[i + 1]) >= 0) {
      buf[j++] = (char)(mx_hexval(c) * 16 + mx_hexval(s[i + 1]));
      i++;
    } else {
      return mx_p_error_at(p, t, "unknown escape '\\%c' in string", c);
    }
  }
  buf[j] = '\0';
  *out = buf;
  if (out_len) *out_len = j;
  return MX_OK;
}

mx_status_t mx_p_skip_loc(mx_parser_t *p) { return mx_p_loc_name(p, NULL); }

mx_status_t mx_p_loc_name(mx_parser_t *p, char **name) {
  if (name) *name = NULL;
  if (!mx_tok_is(mx_p_tok(p), "loc")) return MX_OK;
  mx_p_next(p);
  MX_TRY(mx_p_expect(p, MX_TK_LPAREN, "'(' after 'loc'"));
  // A plain name location, loc("name"), is kept; any other location form is skipped.
  bool first = true;
  int depth = 1;
  while (depth > 0) {
    switch (mx_p_kind(p)) {
      case MX_TK_EOF:
      case MX_TK_ERROR:
        return mx_p_expected(p, "')' closing loc(...)");
      case MX_TK_LPAREN:
        depth++;
        break;
      case MX_TK_RPAREN:
        depth--;
        break;
      case MX_TK_STRING:
        if (first && name) {
          size_t len;
          MX_TRY(mx_p_string(p, mx_p_tok(p), name, &len));
        }
        break;
      default:
        break;
    }
    if (!first && name && *name && depth > 0) *name = NULL;  // not a plain name location
    first = false;
    mx_p_next(p);
  }
  return MX_OK;
}

// ============================================================================================
// SSA names
// ============================================================================================

static uint32_t mx_p_hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static int32_t mx_p_lookup(const mx_parser_t *p, const char *s, size_t n) {
  if (!p->n_buckets) return -1;
  uint32_t h = mx_p_hash(s, n);
  for (int32_t i = p->buckets[h & (uint32_t)(p->n_buckets - 1)]; i >= 0; i = p->names[i].next) {
    const mx_pname_t *e = &p->names[i];
    if (e->hash == h && e->len == n && memcmp(e->name, s, n) == 0) return i;
  }
  return -1;
}

static mx_status_t mx_p_rehash(mx_parser_t *p, int32_t nb) {
  int32_t *b = malloc(sizeof(int32_t) * (size_t)nb);
  if (!b) return mx_p_oom();
  for (int32_t i = 0; i < nb; i++) b[i] = -1;
  // Re-insert in definition order so every chain stays newest-first (pops stay O(1)).
  for (int32_t i = 0; i < p->n_names; i++) {
    uint32_t slot = p->names[i].hash & (uint32_t)(nb - 1);
    p->names[i].next = b[slot];
    b[slot] = i;
  }
  free(p->buckets);
  p->buckets = b;
  p->n_buckets = nb;
  return MX_OK;
}

mx_status_t mx_p_define(mx_parser_t *p, const mx_tok_t *t, int32_t first_id, int32_t count) {
  const char *s = t->text + 1;
  size_t n = t->name_len - 1;
  if (mx_p_lookup(p, s, n) >= 0)
    return mx_p_error_at(p, t, "redefinition of SSA value '%%%.*s'", (int)n, s);
  if (p->n_names == p->cap_names) {
    int32_t cap = p->cap_names ? p->cap_names * 2 : 64;
    mx_pname_t *nn = realloc(p->names, sizeof(mx_pname_t) * (size_t)cap);
    if (!nn) return mx_p_oom();
    p->names = nn;
    p->cap_names = cap;
  }
  if (p->n_names + 1 > p->n_buckets) MX_TRY(mx_p_rehash(p, p->n_buckets ? p->n_buckets * 4 : 256));
  mx_pname_t *e = &p->names[p->n_names];
  e->name = s;
  e->len = n;
  e->first_id = first_id;
  e->count = count;
  e->hash = mx_p_hash(s, n);
  uint32_t slot = e->hash & (uint32_t)(p->n_buckets - 1);
  e->next = p->buckets[slot];
  p->buckets[slot] = p->n_names;
  p->n_names++;
  // Give single values their source name (for messages and the printer).
  if (count == 1 && p->f && first_id >= 0 && first_id < p->f->n_values &&
      !p->f->values[first_id].name) {
    char *nm = mx_p_strndup(p, s, n);
    if (!nm) return mx_p_oom();
    p->f->values[first_id].name = nm;
  }
  return MX_OK;
}

void mx_p_pop_names(mx_parser_t *p, int32_t mark) {
  while (p->n_names > mark) {
    mx_pname_t *e = &p->names[--p->n_names];
    p->buckets[e->hash & (uint32_t)(p->n_buckets - 1)] = e->next;
  }
}

mx_status_t mx_p_resolve(mx_parser_t *p, const mx_tok_t *t, int32_t *id) {
  const char *s = t->text + 1;
  size_t n = t->name_len - 1;
  int32_t i = mx_p_lookup(p, s, n);
  if (i < 0) return mx_p_error_at(p, t, "use of undefined value '%%%.*s'", (int)n, s);
  int64_t k = t->num < 0 ? 0 : t->num;
  if (k >= p->names[i].count)
    return mx_p_error_at(p, t, "result number %lld out of range for '%%%.*s' (%d results)",
                         (long long)k, (int)n, s, (int)p->names[i].count);
  *id = p->names[i].first_id + (int32_t)k;
  return MX_OK;
}

// ============================================================================================
// Op assembly
// ============================================================================================

static bool mx_p_grow(mx_parser_t *p, void **arr, int32_t n, int32_t *cap, size_t elem) {
  if (n < *cap) return true;
  int32_t nc = *cap ? *cap * 2 : 4;
  void *na = mx_arena_grow(p->arena, *arr, (size_t)n, (size_t)nc, elem);
  if (!na) return false;
  *arr = na;
  *cap = nc;
  return true;
}

mx_status_t mx_p_push_operand(mx_parser_t *p, mx_pop_t *op, int32_t id, const mx_tok_t *t) {
  int32_t cap = op->cap_operands;
  if (!mx_p_grow(p, (void **)&op->operands, op->n_operands, &cap, sizeof(int32_t)))
    return mx_p_oom();
  int32_t cap2 = op->cap_operands;
  if (!mx_p_grow(p, (void **)&op->operand_toks, op->n_operands, &cap2, sizeof(mx_tok_t)))
    return mx_p_oom();
  op->cap_operands = cap;
  op->operands[op->n_operands] = id;
  op->operand_toks[op->n_operands] = *t;
  op->n_operands++;
  return MX_OK;
}

mx_status_t mx_p_operand(mx_parser_t *p, mx_pop_t *op) {
  if (mx_p_kind(p) != MX_TK_VALUE) return mx_p_expected(p, "SSA value");
  mx_tok_t t = *mx_p_tok(p);
  int32_t id = -1;
  MX_TRY(mx_p_resolve(p, &t, &id));
  mx_p_next(p);
  return mx_p_push_operand(p, op, id, &t);
}

mx_status_t mx_pop_add_attr(mx_parser_t *p, mx_pop_t *op, const char *name, mx_attr_t value) {
  for (int32_t i = 0; i < op->n_attrs; i++)
    if (strcmp(op->attrs[i].name, name) == 0) {
      op->attrs[i].value = value;
      return MX_OK;
    }
  if (!mx_p_grow(p, (void **)&op->attrs, op->n_attrs, &op->cap_attrs, sizeof(mx_named_attr_t)))
    return mx_p_oom();
  op->attrs[op->n_attrs].name = name;
  op->attrs[op->n_attrs].value = value;
  op->n_attrs++;
  return MX_OK;
}

static mx_status_t mx_p_merge_dict(mx_parser_t *p, mx_pop_t *op, const mx_attr_t *d,
                                   const mx_tok_t *at) {
  for (int32_t i = 0; i < d->n; i++) {
    for (int32_t j = 0; j < op->n_attrs; j++)
      if (strcmp(op->attrs[j].name, d->fields[i].name) == 0)
        return mx_p_error_at(p, at, "duplicate attribute '%s'", d->fields[i].name);
    MX_TRY(mx_pop_add_attr(p, op, d->fields[i].name, d->fields[i].value));
  }
  return MX_OK;
}

mx_status_t mx_p_opt_attr_dict(mx_parser_t *p, mx_pop_t *op) {
  if (mx_p_kind(p) != MX_TK_LBRACE) return MX_OK;
  mx_tok_t at = *mx_p_tok(p);
  mx_attr_t d;
  MX_TRY(mx_p_attr_dict(p, &d));
  return mx_p_merge_dict(p, op, &d, &at);
}

mx_status_t mx_pop_add_region(mx_parser_t *p, mx_pop_t *op, mx_block_t *b) {
  if (!mx_p_grow(p, (void **)&op->regions, op->n_regions, &op->cap_regions, sizeof(mx_block_t *)))
    return mx_p_oom();
  op->regions[op->n_regions++] = b;
  return MX_OK;
}

// ============================================================================================
// Regions and ops
// ============================================================================================

static mx_status_t mx_p_op(mx_parser_t *p, mx_block_t *b);

static mx_status_t mx_p_block_arg(mx_parser_t *p, mx_block_t *b) {
  if (mx_p_kind(p) != MX_TK_VALUE || mx_p_tok(p)->num >= 0)
    return mx_p_expected(p, "block argument name");
  mx_tok_t t = *mx_p_tok(p);
  mx_p_next(p);
  MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' after block argument name"));
  mx_type_t ty;
  MX_TRY(mx_p_type(p, &ty));
  MX_TRY(mx_p_skip_loc(p));
  int32_t id;
  if (mx_block_add_arg(p->f, b, &ty, NULL, &id)) return mx_p_oom();
  return mx_p_define(p, &t, id, 1);
}

mx_status_t mx_p_block_body(mx_parser_t *p, mx_block_t *b) {
  while (mx_p_kind(p) != MX_TK_RBRACE) {
    if (mx_p_kind(p) == MX_TK_EOF) return mx_p_expected(p, "'}' closing the block");
    if (mx_p_kind(p) == MX_TK_BLOCK)
      return mx_p_unsupported(p, mx_p_tok(p), "regions with more than one block");
    MX_TRY(mx_p_op(p, b));
  }
  mx_p_next(p);
  return MX_OK;
}

mx_status_t mx_p_region(mx_parser_t *p, const mx_parg_t *preset_args, int32_t n_preset,
                        mx_block_t **out) {
  MX_TRY(mx_p_enter(p));
  MX_TRY(mx_p_expect(p, MX_TK_LBRACE, "'{' to begin a region"));
  mx_block_t *b = mx_block_create(p->f);
  if (!b) return mx_p_oom();
  int32_t mark = p->n_names;
  bool saved = p->in_region;
  p->in_region = true;
  for (int32_t i = 0; i < n_preset; i++) {
    int32_t id;
    if (mx_block_add_arg(p->f, b, &preset_args[i].type, NULL, &id)) return mx_p_oom();
    MX_TRY(mx_p_define(p, &preset_args[i].tok, id, 1));
  }
  if (mx_p_kind(p) == MX_TK_BLOCK) {
    if (n_preset) return mx_p_expected(p, "operation (region arguments were already given)");
    mx_p_next(p);
    if (mx_p_accept(p, MX_TK_LPAREN)) {
      if (!mx_p_accept(p, MX_TK_RPAREN)) {
        for (;;) {
          MX_TRY(mx_p_block_arg(p, b));
          if (mx_p_accept(p, MX_TK_RPAREN)) break;
          MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ')' in block argument list"));
        }
      }
    }
    MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' after block label"));
  }
  MX_TRY(mx_p_block_body(p, b));
  mx_p_pop_names(p, mark);
  p->in_region = saved;
  mx_p_leave(p);
  *out = b;
  return MX_OK;
}

typedef struct mx_presult {
  mx_tok_t tok;
  int32_t count;
} mx_presult_t;

// Generic form: "name"(operands) <{props}> (regions) {attrs} : (types) -> types
static mx_status_t mx_p_generic_op(mx_parser_t *p, mx_pop_t *op) {
  MX_TRY(mx_p_expect(p, MX_TK_LPAREN, "'(' after generic operation name"));
  if (!mx_p_accept(p, MX_TK_RPAREN)) {
    for (;;) {
      MX_TRY(mx_p_operand(p, op));
      if (mx_p_accept(p, MX_TK_RPAREN)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ')' in operand list"));
    }
  }
  if (mx_p_kind(p) == MX_TK_LSQUARE)
    return mx_p_unsupported(p, mx_p_tok(p), "operations with successor blocks");
  if (mx_p_kind(p) == MX_TK_LESS) {
    mx_p_next(p);
    if (mx_p_kind(p) != MX_TK_LBRACE) return mx_p_expected(p, "'{' to begin properties");
    MX_TRY(mx_p_opt_attr_dict(p, op));
    MX_TRY(mx_p_expect(p, MX_TK_GREATER, "'>' closing properties"));
  }
  if (mx_p_accept(p, MX_TK_LPAREN)) {
    for (;;) {
      mx_block_t *r;
      MX_TRY(mx_p_region(p, NULL, 0, &r));
      MX_TRY(mx_pop_add_region(p, op, r));
      if (mx_p_accept(p, MX_TK_RPAREN)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ')' in region list"));
    }
  }
  MX_TRY(mx_p_opt_attr_dict(p, op));
  op->types_tok = *mx_p_tok(p);
  MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' before the operation's function type"));
  op->types_tok = *mx_p_tok(p);
  mx_ptypes_t ft;
  MX_TRY(mx_p_func_or_types(p, &ft));
  if (!ft.is_func) {
    return mx_p_error_at(p, &op->types_tok,
                         "expected function type '(operand types) -> result types' for generic "
                         "operation '%s'",
                         op->name);
  }
  op->operand_types = ft.in;
  op->n_operand_types = ft.n_in;
  op->result_types = ft.out;
  op->n_results = ft.n_out;
  return MX_OK;
}

static mx_status_t mx_p_check_types(mx_parser_t *p, const mx_pop_t *op) {
  if (op->n_operand_types != op->n_operands)
    return mx_p_error_at(p, &op->types_tok, "'%s' has %d operands, but %d operand types were given",
                         op->name, (int)op->n_operands, (int)op->n_operand_types);
  for (int32_t i = 0; i < op->n_operands; i++) {
    const mx_type_t *vt = mx_value_type(p->f, op->operands[i]);
    if (!vt || !mx_type_equal(vt, &op->operand_types[i])) {
      char a[128], b[128];
      mx_type_str(&op->operand_types[i], a, sizeof a);
      if (vt)
        mx_type_str(vt, b, sizeof b);
      else
        snprintf(b, sizeof b, "?");
      const mx_tok_t *t = &op->operand_toks[i];
      return mx_p_error_at(p, t, "use of value '%.*s' expects type %s, but it has type %s",
                           (int)t->len, t->text, a, b);
    }
  }
  return MX_OK;
}

static mx_status_t mx_p_op(mx_parser_t *p, mx_block_t *b) {
  mx_tok_t start = *mx_p_tok(p);
  mx_presult_t stack_res[8];
  mx_presult_t *res = stack_res;
  int32_t n_res = 0, cap_res = 8, n_res_values = 0;
  if (mx_p_kind(p) == MX_TK_VALUE) {
    for (;;) {
      if (mx_p_kind(p) != MX_TK_VALUE || mx_p_tok(p)->num >= 0)
        return mx_p_expected(p, "result name");
      if (n_res == cap_res) {
        mx_presult_t *nr = mx_arena_alloc(p->arena, sizeof(mx_presult_t) * (size_t)cap_res * 2);
        if (!nr) return mx_p_oom();
        memcpy(nr, res, sizeof(mx_presult_t) * (size_t)n_res);
        res = nr;
        cap_res *= 2;
      }
      res[n_res].tok = *mx_p_tok(p);
      res[n_res].count = 1;
      mx_p_next(p);
      if (mx_p_accept(p, MX_TK_COLON)) {
        mx_tok_t ct = *mx_p_tok(p);
        if (ct.kind != MX_TK_INT || ct.is_hex) return mx_p_expected(p, "result count");
        int64_t c = 0;
        MX_TRY(mx_p_int(p, &c));
        if (c < 1 || c > 65536)
          return mx_p_error_at(p, &ct, "invalid result count %lld", (long long)c);
        res[n_res].count = (int32_t)c;
      }
      n_res_values += res[n_res].count;
      if (n_res_values > 65536) return mx_p_error_at(p, &start, "too many results");
      n_res++;
      if (!mx_p_accept(p, MX_TK_COMMA)) break;
    }
    MX_TRY(mx_p_expect(p, MX_TK_EQUAL, "'=' after result names"));
  }

  mx_pop_t op;
  memset(&op, 0, sizeof op);
  op.tok = *mx_p_tok(p);
  if (mx_p_kind(p) == MX_TK_STRING) {
    char *name;
    MX_TRY(mx_p_string(p, mx_p_tok(p), &name, NULL));
    op.name = name;
    op.code = mx_opcode_from_name(name, strlen(name));
    mx_p_next(p);
    MX_TRY(mx_p_generic_op(p, &op));
  } else if (mx_p_kind(p) == MX_TK_IDENT) {
    const mx_tok_t *t = mx_p_tok(p);
    if (mx_tok_is(t, "return")) {
      op.code = p->in_region ? MX_OP_RETURN : MX_OP_FUNC_RETURN;
      op.name = mx_opcode_name(op.code);
    } else if (mx_tok_is(t, "call")) {
      op.code = MX_OP_FUNC_CALL;
      op.name = mx_opcode_name(op.code);
    } else {
      op.code = mx_opcode_from_name(t->text, t->len);
      if (op.code == MX_OP_UNKNOWN && !memchr(t->text, '.', t->len))
        return mx_p_expected(p, "operation name");
      if (op.code == MX_OP_UNKNOWN && mx_p_is_extra_op(t)) {
        op.name = mx_p_strndup(p, t->text, t->len);
        if (!op.name) return mx_p_oom();
        mx_p_next(p);
        MX_TRY(mx_p_extra_op(p, &op));
        goto parsed;
      }
      if (op.code == MX_OP_UNKNOWN) return mx_p_unsupported(p, t, "%.*s", (int)t->len, t->text);
      op.name = mx_opcode_name(op.code);
    }
    mx_p_next(p);
    MX_TRY(mx_p_pretty_op(p, &op));
  } else {
    return mx_p_expected(p, "operation");
  }
parsed:
  MX_TRY(mx_p_skip_loc(p));
  MX_TRY(mx_p_canonicalize(p, &op));
  MX_TRY(mx_p_check_types(p, &op));
  if (n_res && n_res_values != op.n_results)
    return mx_p_error_at(p, &start, "operation '%s' has %d results, but %d names were given",
                         op.name, (int)op.n_results, (int)n_res_values);
  mx_op_t *o = mx_block_append_op(p->f, b, op.code, op.name, op.operands, op.n_operands,
                                  op.result_types, op.n_results);
  if (!o) return mx_p_oom();
  o->attrs = op.attrs;
  o->n_attrs = op.n_attrs;
  for (int32_t i = 0; i < op.n_regions; i++)
    if (mx_op_add_region(p->f, o, op.regions[i])) return mx_p_oom();
  o->line = start.line;
  o->col = start.col;
  int32_t k = 0;
  for (int32_t i = 0; i < n_res; i++) {
    MX_TRY(mx_p_define(p, &res[i].tok, o->results[k], res[i].count));
    k += res[i].count;
  }
  return MX_OK;
}

// ============================================================================================
// Functions and modules
// ============================================================================================

mx_status_t mx_p_symbol_name(mx_parser_t *p, char **out) {
  const mx_tok_t *t = mx_p_tok(p);
  if (t->kind != MX_TK_SYMBOL) return mx_p_expected(p, "symbol name (@name)");
  if (t->len >= 2 && t->text[1] == '"') {
    mx_tok_t st = *t;
    st.text++;
    st.len--;
    MX_TRY(mx_p_string(p, &st, out, NULL));
  } else {
    *out = mx_p_strndup(p, t->text + 1, t->len - 1);
    if (!*out) return mx_p_oom();
  }
  mx_p_next(p);
  return MX_OK;
}

static mx_status_t mx_p_func(mx_parser_t *p) {
  mx_p_next(p);  // func.func
  bool is_private = false;
  if (mx_p_accept_kw(p, "private"))
    is_private = true;
  else if (mx_p_accept_kw(p, "public"))
    is_private = false;
  else if (mx_p_accept_kw(p, "nested"))
    is_private = true;
  mx_tok_t ntok = *mx_p_tok(p);
  char *name;
  MX_TRY(mx_p_symbol_name(p, &name));
  mx_func_t *f;
  if (mx_module_find_func(p->m, name))
    return mx_p_error_at(p, &ntok, "redefinition of function '@%s'", name);
  if (mx_func_create(p->m, name, is_private, &f)) return mx_p_oom();
  p->f = f;
  MX_TRY(mx_p_expect(p, MX_TK_LPAREN, "'(' to begin the argument list"));
  // A declaration (external function) lists argument types without names and has no body.
  bool named = true, any_args = false;
  if (!mx_p_accept(p, MX_TK_RPAREN)) {
    named = !mx_p_at_type(p);
    any_args = true;
    for (;;) {
      mx_tok_t at = *mx_p_tok(p);
      if (named) {
        if (mx_p_kind(p) != MX_TK_VALUE || mx_p_tok(p)->num >= 0)
          return mx_p_expected(p, "argument name");
        mx_p_next(p);
        MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' after argument name"));
      } else if (!mx_p_at_type(p)) {
        return mx_p_expected(p, "argument type (a declaration lists types only)");
      }
      mx_type_t ty;
      MX_TRY(mx_p_type(p, &ty));
      int32_t id;
      if (mx_func_add_arg(f, &ty, NULL, &id)) return mx_p_oom();
      if (named) MX_TRY(mx_p_define(p, &at, id, 1));
      if (mx_p_kind(p) == MX_TK_LBRACE)
        MX_TRY(mx_p_attr_dict(p, &f->arg_attrs[f->body->n_args - 1]));
      char *loc = NULL;
      MX_TRY(mx_p_loc_name(p, &loc));
      if (loc) f->arg_locs[f->body->n_args - 1] = loc;
      if (mx_p_accept(p, MX_TK_RPAREN)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ')' in argument list"));
    }
  }
  if (mx_p_accept(p, MX_TK_ARROW)) {
    mx_type_t *types = NULL;
    mx_attr_t *attrs = NULL;
    int32_t n = 0, cap = 0;
    if (mx_p_accept(p, MX_TK_LPAREN)) {
      if (!mx_p_accept(p, MX_TK_RPAREN)) {
        for (;;) {
          if (n == cap) {
            int32_t nc = cap ? cap * 2 : 4;
            types = mx_arena_grow(p->arena, types, (size_t)n, (size_t)nc, sizeof(mx_type_t));
            attrs = mx_arena_grow(p->arena, attrs, (size_t)n, (size_t)nc, sizeof(mx_attr_t));
            if (!types || !attrs) return mx_p_oom();
            cap = nc;
          }
          MX_TRY(mx_p_type(p, &types[n]));
          attrs[n].kind = MX_ATTR_DICT;
          if (mx_p_kind(p) == MX_TK_LBRACE) MX_TRY(mx_p_attr_dict(p, &attrs[n]));
          MX_TRY(mx_p_skip_loc(p));
          n++;
          if (mx_p_accept(p, MX_TK_RPAREN)) break;
          MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ')' in result list"));
        }
      }
    } else {
      types = mx_arena_alloc(p->arena, sizeof(mx_type_t));
      if (!types) return mx_p_oom();
      MX_TRY(mx_p_type(p, &types[0]));
      n = 1;
    }
    if (mx_func_set_result_types(f, types, n)) return mx_p_oom();
    for (int32_t i = 0; i < n && attrs; i++) f->result_attrs[i] = attrs[i];
  }
  if (mx_p_accept_kw(p, "attributes")) {
    if (mx_p_kind(p) != MX_TK_LBRACE) return mx_p_expected(p, "'{' after 'attributes'");
    MX_TRY(mx_p_attr_dict(p, &f->attrs));
  }
  if (mx_p_kind(p) != MX_TK_LBRACE) {
    if (named && any_args) return mx_p_expected(p, "'{' to begin the function body");
    // Declaration: a function without body ops (the interpreter refuses to call it).
    MX_TRY(mx_p_skip_loc(p));
    mx_p_pop_names(p, 0);
    p->f = NULL;
    return MX_OK;
  }
  if (!named)
    return mx_p_error_at(p, mx_p_tok(p),
                         "a function with a body needs argument names ('%%arg0: type')");
  mx_tok_t btok = *mx_p_tok(p);
  MX_TRY(mx_p_enter(p));
  mx_p_next(p);
  p->in_region = false;
  MX_TRY(mx_p_block_body(p, f->body));
  if (f->body->n_ops == 0)
    return mx_p_error_at(p, &btok, "empty function body (expected at least func.return)");
  mx_p_leave(p);
  MX_TRY(mx_p_skip_loc(p));
  mx_p_pop_names(p, 0);
  p->f = NULL;
  return MX_OK;
}

static mx_status_t mx_p_alias_def(mx_parser_t *p) {
  mx_tok_t t = *mx_p_tok(p);
  mx_p_next(p);
  MX_TRY(mx_p_expect(p, MX_TK_EQUAL, "'=' in alias definition"));
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  if (t.kind == MX_TK_BANG) {
    a.kind = MX_ATTR_TYPE;
    a.type = mx_arena_alloc(p->arena, sizeof(mx_type_t));
    if (!a.type) return mx_p_oom();
    MX_TRY(mx_p_type(p, a.type));
  } else if (mx_tok_is(mx_p_tok(p), "loc")) {
    return mx_p_skip_loc(p);
  } else {
    MX_TRY(mx_p_attr(p, &a));
  }
  if (mx_p_find_alias(p, &t))
    return mx_p_error_at(p, &t, "redefinition of alias '%.*s'", (int)t.len, t.text);
  if (p->n_aliases == p->cap_aliases) {
    int32_t nc = p->cap_aliases ? p->cap_aliases * 2 : 8;
    mx_palias_t *na =
        mx_arena_grow(p->arena, p->aliases, (size_t)p->n_aliases, (size_t)nc, sizeof(mx_palias_t));
    if (!na) return mx_p_oom();
    p->aliases = na;
    p->cap_aliases = nc;
  }
  p->aliases[p->n_aliases].name = t.text;
  p->aliases[p->n_aliases].len = t.len;
  p->aliases[p->n_aliases].value = a;
  p->n_aliases++;
  return MX_OK;
}

mx_status_t mx_p_top_items(mx_parser_t *p, bool in_module) {
  for (;;) {
    mx_tok_kind_t k = mx_p_kind(p);
    if (k == MX_TK_EOF) {
      if (in_module) return mx_p_expected(p, "'}' closing the module");
      return MX_OK;
    }
    if (k == MX_TK_RBRACE && in_module) return MX_OK;
    if (mx_tok_is(mx_p_tok(p), "func.func")) {
      MX_TRY(mx_p_func(p));
    } else if (k == MX_TK_STRING && mx_p_tok(p)->len == 11 &&
               memcmp(mx_p_tok(p)->text, "\"func.func\"", 11) == 0) {
      MX_TRY(mx_p_generic_func(p));
    } else if (k == MX_TK_HASH || k == MX_TK_BANG) {
      MX_TRY(mx_p_alias_def(p));
    } else if (k == MX_TK_IDENT && mx_p_tok(p)->len > 4 &&
               memcmp(mx_p_tok(p)->text, "sdy.", 4) == 0) {
      // Shardy declarations (`sdy.mesh @mesh = <["x"=2]>`) only matter to partitioners; skip
      // the rest of the line (they are printed on one line).
      int32_t line = mx_p_tok(p)->line;
      while (mx_p_kind(p) != MX_TK_EOF && mx_p_tok(p)->line == line) {
        if (mx_p_kind(p) == MX_TK_ERROR) return mx_p_expected(p, "shardy declaration");
        mx_p_next(p);
      }
    } else if (!in_module && mx_tok_is(mx_p_tok(p), "module")) {
      return mx_p_error_at(p, mx_p_tok(p), "a module must be the only top-level item");
    } else {
      return mx_p_expected(p, in_module ? "'func.func' or '}'" : "'func.func' or 'module'");
    }
  }
}

static mx_status_t mx_p_module(mx_parser_t *p) {
  // Leading aliases (e.g. #loc definitions) may precede the module.
  while (mx_p_kind(p) == MX_TK_HASH || mx_p_kind(p) == MX_TK_BANG) MX_TRY(mx_p_alias_def(p));
  if (mx_p_kind(p) == MX_TK_STRING && mx_p_tok(p)->len == 16 &&
      memcmp(mx_p_tok(p)->text, "\"builtin.module\"", 16) == 0) {
    MX_TRY(mx_p_generic_module(p));
    while (mx_p_kind(p) == MX_TK_HASH || mx_p_kind(p) == MX_TK_BANG) MX_TRY(mx_p_alias_def(p));
    if (mx_p_kind(p) != MX_TK_EOF) return mx_p_expected(p, "end of input after the module");
    return MX_OK;
  }
  if (!mx_tok_is(mx_p_tok(p), "module")) return mx_p_top_items(p, false);
  mx_p_next(p);
  if (mx_p_kind(p) == MX_TK_SYMBOL) {
    char *name;
    MX_TRY(mx_p_symbol_name(p, &name));
    p->m->name = name;
  }
  if (mx_p_accept_kw(p, "attributes")) {
    if (mx_p_kind(p) != MX_TK_LBRACE) return mx_p_expected(p, "'{' after 'attributes'");
    MX_TRY(mx_p_attr_dict(p, &p->m->attrs));
  }
  MX_TRY(mx_p_expect(p, MX_TK_LBRACE, "'{' to begin the module body"));
  MX_TRY(mx_p_top_items(p, true));
  MX_TRY(mx_p_expect(p, MX_TK_RBRACE, "'}' closing the module"));
  MX_TRY(mx_p_skip_loc(p));
  while (mx_p_kind(p) == MX_TK_HASH || mx_p_kind(p) == MX_TK_BANG) MX_TRY(mx_p_alias_def(p));
  if (mx_p_kind(p) != MX_TK_EOF) return mx_p_expected(p, "end of input after the module");
  return MX_OK;
}

const mx_attr_t *mx_p_find_alias(const mx_parser_t *p, const mx_tok_t *t) {
  for (int32_t i = 0; i < p->n_aliases; i++)
    if (p->aliases[i].len == t->len && memcmp(p->aliases[i].name, t->text, t->len) == 0)
      return &p->aliases[i].value;
  return NULL;
}

mx_status_t mx_hlo_parse(const char *text, size_t len, const mx_parse_opts_t *opts,
                         mx_module_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_hlo_parse: out is NULL");
  *out = NULL;
  if (!text && len) return mx_error_set(MX_ERR_INVALID_ARG, "mx_hlo_parse: text is NULL");
  if (!text) text = "";
  mx_module_t *m = mx_module_create(NULL);
  if (!m) return mx_p_oom();
  mx_parser_t p;
  memset(&p, 0, sizeof p);
  p.m = m;
  p.arena = m->arena;
  p.filename = opts ? opts->filename : NULL;
  mx_lex_init(&p.lx, text, len, opts && opts->first_line > 0 ? opts->first_line : 1);
  mx_status_t st = mx_p_module(&p);
  free(p.names);
  free(p.buckets);
  if (st == MX_OK && !(opts && opts->no_verify)) st = mx_hlo_verify_module(m);
  if (st != MX_OK) {
    mx_module_destroy(m);
    return st;
  }
  *out = m;
  return MX_OK;
}

mx_status_t mx_p_error_ptr(mx_parser_t *p, const char *ptr, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mx_tok_t t = *mx_p_tok(p);
  mx_lex_pos_of(&p->lx, ptr, &t.line, &t.col);
  return mx_p_error_at(p, &t, "%s", msg);
}
