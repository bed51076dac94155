// StableHLO text parser: dense<...> literals, decoded straight into tensor storage (hlo.h
// layout) in the module arena.
#include <stdlib.h>
#include <string.h>

#include "hlo/parse_internal.h"

typedef enum { MX_LIT_INT, MX_LIT_FLOAT, MX_LIT_BOOL } mx_lit_kind_t;

typedef struct mx_lit {
  uint8_t kind;
  bool neg;
  bool hex;
  uint64_t u;        // INT magnitude / BOOL value
  const char *text;  // FLOAT: token text (re-parsed with the target precision)
  size_t len;
  int32_t line, col;  // for error messages
} mx_lit_t;

typedef struct mx_dense_ctx {
  mx_lit_t *lits;
  int64_t n, cap;
  int64_t dims[MX_MAX_RANK + 1];
  bool dim_known[MX_MAX_RANK + 1];
  int32_t leaf_depth;    // -1 until the first scalar/empty list
  int32_t complex_mode;  // -1 unknown, 0 real leaves, 1 complex leaves
} mx_dense_ctx_t;

static mx_status_t mx_d_push(mx_parser_t *p, mx_dense_ctx_t *c, const mx_lit_t *l) {
  if (c->n == c->cap) {
    int64_t nc = c->cap ? c->cap * 2 : 64;
    if ((size_t)nc * sizeof(mx_lit_t) > MX_PARSE_MAX_DENSE_BYTES * 4)
      return mx_p_error_at(p, mx_p_tok(p), "dense literal too large");
    // Scratch on the heap (freed by mx_p_dense), not in the module arena.
    mx_lit_t *nl = realloc(c->lits, (size_t)nc * sizeof(mx_lit_t));
    if (!nl) return mx_p_oom();
    c->lits = nl;
    c->cap = nc;
  }
  c->lits[c->n++] = *l;
  return MX_OK;
}

static mx_status_t mx_d_scalar(mx_parser_t *p, mx_dense_ctx_t *c) {
  mx_lit_t l;
  memset(&l, 0, sizeof l);
  const mx_tok_t *t = mx_p_tok(p);
  l.line = t->line;
  l.col = t->col;
  if (mx_tok_is(t, "true") || mx_tok_is(t, "false")) {
    l.kind = MX_LIT_BOOL;
    l.u = mx_tok_is(t, "true");
    mx_p_next(p);
    return mx_d_push(p, c, &l);
  }
  if (mx_p_accept(p, MX_TK_MINUS)) l.neg = true;
  t = mx_p_tok(p);
  if (t->kind == MX_TK_INT) {
    l.kind = MX_LIT_INT;
    l.hex = t->is_hex;
    if (!mx_p_tok_u64(t, &l.u)) return mx_p_error_at(p, t, "integer literal too large");
  } else if (t->kind == MX_TK_FLOAT) {
    l.kind = MX_LIT_FLOAT;
    l.text = t->text;
    l.len = t->len;
  } else if (!l.neg && (mx_tok_is(t, "inf") || mx_tok_is(t, "nan"))) {
    l.kind = MX_LIT_FLOAT;
    l.text = t->text;
    l.len = t->len;
  } else {
    return mx_p_expected(p, "element literal");
  }
  mx_p_next(p);
  return mx_d_push(p, c, &l);
}

static mx_status_t mx_d_leaf(mx_parser_t *p, mx_dense_ctx_t *c, int32_t depth) {
  if (c->leaf_depth < 0)
    c->leaf_depth = depth;
  else if (c->leaf_depth != depth)
    return mx_p_error_at(p, mx_p_tok(p), "dense literal has inconsistent nesting");
  int is_complex = mx_p_kind(p) == MX_TK_LPAREN;
  if (c->complex_mode < 0)
    c->complex_mode = is_complex;
  else if (c->complex_mode != is_complex)
    return mx_p_error_at(p, mx_p_tok(p), "dense literal mixes complex and real elements");
  if (!is_complex) return mx_d_scalar(p, c);
  mx_p_next(p);
  MX_TRY(mx_d_scalar(p, c));
  MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' in complex literal"));
  MX_TRY(mx_d_scalar(p, c));
  return mx_p_expect(p, MX_TK_RPAREN, "')' closing complex literal");
}

static mx_status_t mx_d_list(mx_parser_t *p, mx_dense_ctx_t *c, int32_t depth) {
  if (mx_p_kind(p) != MX_TK_LSQUARE) return mx_d_leaf(p, c, depth);
  if (depth >= MX_MAX_RANK)
    return mx_p_unsupported(p, mx_p_tok(p), "dense literal with rank greater than %d", MX_MAX_RANK);
  MX_TRY(mx_p_enter(p));
  mx_tok_t open = *mx_p_tok(p);
  mx_p_next(p);
  int64_t count = 0;
  if (!mx_p_accept(p, MX_TK_RSQUARE)) {
    for (;;) {
      MX_TRY(mx_d_list(p, c, depth + 1));
      count++;
      if (mx_p_accept(p, MX_TK_RSQUARE)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or ']' in dense literal"));
    }
  } else {
    if (c->leaf_depth < 0)
      c->leaf_depth = depth + 1;
    else if (c->leaf_depth != depth + 1)
      return mx_p_error_at(p, &open, "dense literal has inconsistent nesting");
  }
  if (!c->dim_known[depth]) {
    c->dim_known[depth] = true;
    c->dims[depth] = count;
  } else if (c->dims[depth] != count) {
    return mx_p_error_at(p, &open, "dense literal has inconsistent sizes (%lld vs %lld elements)",
                         (long long)count, (long long)c->dims[depth]);
  }
  mx_p_leave(p);
  return MX_OK;
}

static mx_status_t mx_d_lit_error(mx_parser_t *p, const mx_lit_t *l, const char *msg,
                                  mx_elem_type_t et) {
  mx_tok_t t = *mx_p_tok(p);
  t.line = l->line;
  t.col = l->col;
  return mx_p_error_at(p, &t, "%s for element type %s", msg, mx_elem_name(et));
}

static void mx_store(uint8_t *dst, size_t size, uint64_t v) {
  for (size_t i = 0; i < size; i++) dst[i] = (uint8_t)(v >> (8 * i));
}

// Writes one real (non-complex) element.
static mx_status_t mx_d_store_real(mx_parser_t *p, const mx_lit_t *l, mx_elem_type_t et,
                                   uint8_t *dst) {
  size_t size = mx_elem_size(et);
  int bits = mx_elem_bits(et);
  if (mx_elem_is_bool(et)) {
    if (l->kind == MX_LIT_BOOL || (l->kind == MX_LIT_INT && !l->neg && l->u <= 1)) {
      dst[0] = (uint8_t)(l->u != 0);
      return MX_OK;
    }
    return mx_d_lit_error(p, l, "expected true or false", et);
  }
  if (mx_elem_is_int(et)) {
    if (l->kind != MX_LIT_INT) return mx_d_lit_error(p, l, "expected integer literal", et);
    uint64_t maxu = bits == 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
    uint64_t v;
    if (l->neg) {
      if (mx_elem_is_unsigned(et)) return mx_d_lit_error(p, l, "negative literal", et);
      if (l->u > ((uint64_t)1 << (bits - 1)))
        return mx_d_lit_error(p, l, "literal out of range", et);
      v = 0 - l->u;
    } else {
      if (l->u > maxu) return mx_d_lit_error(p, l, "literal out of range", et);
      v = l->u;
    }
    v &= maxu;
    if (mx_elem_is_signed(et) && bits < 64 && (v >> (bits - 1)) & 1) v |= ~maxu;  // sign-extend
    mx_store(dst, size, v);
    return MX_OK;
  }
  if (!mx_elem_is_float(et)) return mx_d_lit_error(p, l, "unsupported literal", et);
  if (l->kind == MX_LIT_BOOL) return mx_d_lit_error(p, l, "expected floating point literal", et);
  if (l->kind == MX_LIT_INT && l->hex) {
    if (l->neg) return mx_d_lit_error(p, l, "negative hexadecimal literal", et);
    if (bits < 64 && (l->u >> bits))
      return mx_d_lit_error(p, l, "hexadecimal literal too wide", et);
    mx_store(dst, size, l->u);
    return MX_OK;
  }
  double d = 0;
  float fv = 0;
  if (l->kind == MX_LIT_INT) {
    d = (double)l->u;
    fv = (float)l->u;
  } else {
    MX_TRY(mx_p_float_text(p, l->text, l->len, et == MX_ELEM_F32 ? NULL : &d,
                           et == MX_ELEM_F32 ? &fv : NULL));
    if (et == MX_ELEM_F32) d = fv;
  }
  if (l->neg) {
    d = -d;
    fv = -fv;
  }
  if (et == MX_ELEM_F64) {
    memcpy(dst, &d, sizeof d);
  } else if (et == MX_ELEM_F32) {
    memcpy(dst, &fv, sizeof fv);  // strtof rounds the decimal directly (no double rounding)
  } else {
    mx_store(dst, size, mx_float_encode(et, d));
  }
  return MX_OK;
}

static mx_elem_type_t mx_complex_part(mx_elem_type_t et) {
  return et == MX_ELEM_C64 ? MX_ELEM_F32 : MX_ELEM_F64;
}

static int mx_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// dense<"0x...">: raw little-endian storage (i1 bit-packed), or one element to splat.
static mx_status_t mx_d_hex(mx_parser_t *p, const mx_tok_t *st, const mx_type_t *ty,
                            mx_tensor_t *t) {
  const char *s = st->text + 1;
  size_t n = st->len - 2;
  if (n < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || (n - 2) % 2)
    return mx_p_error_at(p, st, "expected hexadecimal string \"0x...\" in dense literal");
  size_t nbytes = (n - 2) / 2;
  for (size_t i = 2; i < n; i++)
    if (mx_hex(s[i]) < 0) return mx_p_error_at(p, st, "invalid hexadecimal digit in dense literal");
  const char *h = s + 2;
  mx_elem_type_t et = ty->elem;
  size_t esize = mx_elem_size(et);
  int64_t numel = mx_type_numel(ty);
#define MX_HEXBYTE(i) ((uint8_t)(mx_hex(h[2 * (i)]) * 16 + mx_hex(h[2 * (i) + 1])))
  if (et == MX_ELEM_I1) {
    if ((int64_t)nbytes == numel) {
      for (int64_t i = 0; i < numel; i++) t->data[i] = MX_HEXBYTE(i) != 0;
    } else if (nbytes == 1 && (MX_HEXBYTE(0) == 0xFF || MX_HEXBYTE(0) == 0)) {
      for (int64_t i = 0; i < numel; i++) t->data[i] = MX_HEXBYTE(0) != 0;
    } else if ((int64_t)nbytes == (numel + 7) / 8) {
      for (int64_t i = 0; i < numel; i++) t->data[i] = (MX_HEXBYTE(i / 8) >> (i % 8)) & 1;
    } else {
      return mx_p_error_at(p, st, "hexadecimal dense literal has %zu bytes, expected %lld", nbytes,
                           (long long)numel);
    }
    return MX_OK;
  }
  bool splat = nbytes == esize && numel != 1;
  if (!splat && nbytes != esize * (size_t)numel)
    return mx_p_error_at(p, st, "hexadecimal dense literal has %zu bytes, expected %zu", nbytes,
                         esize * (size_t)numel);
  for (int64_t i = 0; i < numel; i++) {
    size_t base = splat ? 0 : (size_t)i * esize;
    uint8_t *dst = t->data + (size_t)i * esize;
    for (size_t b = 0; b < esize; b++) dst[b] = MX_HEXBYTE(base + b);
    int bits = mx_elem_bits(et);
    if (esize == 1 && bits < 8) {
      // Sub-byte types: keep the low bits; sign-extend signed integers.
      uint8_t mask = (uint8_t)((1u << bits) - 1);
      uint8_t v = dst[0] & mask;
      if (mx_elem_is_signed(et) && ((v >> (bits - 1)) & 1)) v |= (uint8_t)~mask;
      dst[0] = v;
    }
  }
#undef MX_HEXBYTE
  return MX_OK;
}

static mx_status_t mx_d_parse(mx_parser_t *p, mx_dense_ctx_t *c, mx_attr_t *out);

mx_status_t mx_p_dense(mx_parser_t *p, mx_attr_t *out) {
  mx_dense_ctx_t c;
  memset(&c, 0, sizeof c);
  c.leaf_depth = -1;
  c.complex_mode = -1;
  mx_status_t st = mx_d_parse(p, &c, out);
  free(c.lits);
  return st;
}

static mx_status_t mx_d_parse(mx_parser_t *p, mx_dense_ctx_t *c, mx_attr_t *out) {
  mx_tok_t dtok = *mx_p_tok(p);
  mx_p_next(p);  // 'dense'
  MX_TRY(mx_p_expect(p, MX_TK_LESS, "'<' after 'dense'"));
  mx_tok_t hex_tok;
  bool is_hex = false, empty = false, top_list = false;
  if (mx_p_kind(p) == MX_TK_STRING) {
    hex_tok = *mx_p_tok(p);
    is_hex = true;
    mx_p_next(p);
  } else if (mx_p_kind(p) == MX_TK_GREATER) {
    empty = true;
  } else {
    top_list = mx_p_kind(p) == MX_TK_LSQUARE;
    MX_TRY(mx_d_list(p, c, 0));
  }
  MX_TRY(mx_p_expect(p, MX_TK_GREATER, "'>' closing dense literal"));
  MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' and a type after dense literal"));
  mx_tok_t ttok = *mx_p_tok(p);
  mx_type_t ty;
  // Attributes such as custom_call result_layouts use `tensor<Nxindex>`; store them as i64.
  p->index_as_i64 = true;
  mx_status_t tst = mx_p_type(p, &ty);
  p->index_as_i64 = false;
  MX_TRY(tst);
  if (ty.kind != MX_TYPE_TENSOR)
    return mx_p_error_at(p, &ttok, "dense literal needs a tensor type");
  int64_t numel = mx_type_numel(&ty);
  size_t esize = mx_elem_size(ty.elem);
  if ((size_t)numel > MX_PARSE_MAX_DENSE_BYTES / (esize ? esize : 1))
    return mx_p_unsupported(p, &ttok, "constant larger than %zu bytes", MX_PARSE_MAX_DENSE_BYTES);
  mx_tensor_t *t = mx_arena_alloc(p->arena, sizeof(mx_tensor_t));
  if (!t) return mx_p_oom();
  t->type = ty;
  t->nbytes = (size_t)numel * esize;
  t->data = mx_arena_alloc(p->arena, t->nbytes ? t->nbytes : 1);
  if (!t->data) return mx_p_oom();
  memset(out, 0, sizeof *out);
  out->kind = MX_ATTR_DENSE;
  out->dense = t;
  if (is_hex) return mx_d_hex(p, &hex_tok, &ty, t);
  if (empty) {
    if (numel != 0) return mx_p_error_at(p, &dtok, "empty dense literal for a non-empty type");
    return MX_OK;
  }
  bool cplx = mx_elem_is_complex(ty.elem);
  if (c->complex_mode == 1 && !cplx)
    return mx_p_error_at(p, &dtok, "complex literal for non-complex type");
  if (c->complex_mode == 0 && cplx && c->n > 0)
    return mx_p_error_at(p, &dtok, "expected complex literals '(re, im)' for complex type");
  int64_t per = cplx ? 2 : 1;
  int64_t leaves = c->n / per;
  bool splat = !top_list && leaves == 1;
  if (leaves == 0 && numel == 0) return MX_OK;  // `dense<[]>` for any empty shape
  if (!splat) {
    int32_t rank = c->leaf_depth < 0 ? 0 : c->leaf_depth;
    bool ok = rank == ty.rank;
    for (int32_t i = 0; ok && i < rank; i++) ok = c->dims[i] == ty.dims[i];
    if (!ok || leaves != numel) {
      char buf[128];
      return mx_p_error_at(p, &dtok, "dense literal shape does not match type %s",
                           mx_type_str(&ty, buf, sizeof buf));
    }
  }
  if (numel == 0) return MX_OK;
  // Convert the first element (or each element) to storage.
  for (int64_t i = 0; i < (splat ? 1 : numel); i++) {
    uint8_t *dst = t->data + (size_t)i * esize;
    if (cplx) {
      mx_elem_type_t part = mx_complex_part(ty.elem);
      MX_TRY(mx_d_store_real(p, &c->lits[2 * i], part, dst));
      MX_TRY(mx_d_store_real(p, &c->lits[2 * i + 1], part, dst + esize / 2));
    } else {
      MX_TRY(mx_d_store_real(p, &c->lits[i], ty.elem, dst));
    }
  }
  if (splat)
    for (int64_t i = 1; i < numel; i++) memcpy(t->data + (size_t)i * esize, t->data, esize);
  return MX_OK;
}
