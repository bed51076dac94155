// The pushdown automaton's step over one byte (grammar_internal.h) and the byte matcher.
//
// A frame is a node being matched; its phase says what it expects next. Feeding a byte to a
// stack asks the top frame, which consumes it, pushes a child that must take it (the frame
// moves on to its after-the-child phase first), pops because the byte is not its own (numbers
// and literals end only when a byte that cannot extend them comes), or refuses it. An anyOf
// frame forks the stack, one copy per alternative. After a byte is consumed, frames that can
// take no more bytes (a closed object, a string's closing quote, a literal nothing extends)
// are popped at once, so a stack of length 0 is a complete document.
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"

enum { O_OPEN, O_FIRST, O_KEY, O_COLON, O_VALUE, O_AFTER, O_NEXT, O_DONE };     // GN_OBJECT
enum { F_OPEN, F_FIRST, F_COLON, F_VALUE, F_AFTER, F_KEY, F_DONE };             // GN_FREEOBJ
enum { A_OPEN, A_FIRST, A_AFTER, A_ITEM, A_DONE };                              // GN_ARRAY
enum { S_OPEN, S_BODY, S_ESC, S_HEX, S_UTF8, S_DONE };                          // GN_STRING
enum { N_START, N_SIGN, N_ZERO, N_INT, N_DOT, N_FRAC, N_EXP, N_EXPS, N_EXPD };  // numbers
enum { R_CONSUME, R_PUSH, R_POP, R_REJECT };

// Exponents longer than this are no number a program means.
enum { MAX_EXP_DIGITS = 3, MAX_FORKS = 24 };

static inline bool is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
static inline bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
static inline bool is_hex(uint8_t c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline gframe_t fresh(int32_t node) { return (gframe_t){.node = (uint16_t)node}; }

// A required property at index >= from.
static bool required_from(const gprop_t *p, int32_t n, int32_t from) {
  for (int32_t i = from; i < n; i++)
    if (p[i].required) return true;
  return false;
}

// Whitespace in a phase that allows it: a gap is one space or tab, or a line break followed by
// at most GM_MAX_INDENT spaces or tabs (compact, one-line and indented layouts, and no more: a
// weak model would otherwise spend its tokens on blanks). f->sub: 0 nothing yet, 1 the gap is
// one blank, 2 after '\r', 3 + k after a line break and k blanks.
static inline int ws(gframe_t *f, uint8_t c) {
  bool blank = c == ' ' || c == '\t';
  if (f->sub == 0) {
    f->sub = blank ? 1 : c == '\r' ? 2 : 3;
    return R_CONSUME;
  }
  if (f->sub == 2 && c == '\n') {
    f->sub = 3;
    return R_CONSUME;
  }
  if (f->sub >= 3 && blank && f->sub - 3 < GM_MAX_INDENT) {
    f->sub++;
    return R_CONSUME;
  }
  return R_REJECT;
}

static inline void go(gframe_t *f, int phase) {
  f->phase = (uint8_t)phase;
  f->sub = 0;
}

static int step_object(const mx_grammar_t *g, const gnode_t *nd, gframe_t *f, uint8_t c,
                       int32_t *child) {
  const gprop_t *p = g->props + nd->first;
  int32_t np = nd->n;
  switch (f->phase) {
    case O_OPEN:
      if (c != '{') return R_REJECT;
      go(f, O_FIRST);
      return R_CONSUME;
    case O_FIRST:
    case O_NEXT: {
      if (is_ws(c)) return ws(f, c);
      int32_t i = f->phase == O_FIRST ? 0 : (int32_t)f->a;
      if (c == '}' && f->phase == O_FIRST && !required_from(p, np, 0)) {
        go(f, O_DONE);
        return R_CONSUME;
      }
      if (c != '"' || i >= np) return R_REJECT;
      go(f, O_KEY);
      f->a = (uint32_t)i << 16 | 1u;
      return R_CONSUME;
    }
    case O_KEY: {
      uint32_t cand = f->a >> 16, pos = f->a & 0xFFFFu;
      uint32_t last = cand;  // keys may be skipped up to the first required one
      while ((int32_t)last < np - 1 && !p[last].required) last++;
      for (uint32_t k = cand; k <= last; k++) {
        if (p[k].key_len > pos && (uint8_t)p[k].key[pos] == c &&
            memcmp(p[k].key, p[cand].key, pos) == 0) {
          pos++;
          if (pos == p[k].key_len) {
            go(f, O_COLON);
            f->a = k;
          } else {
            f->a = k << 16 | pos;
          }
          return R_CONSUME;
        }
      }
      return R_REJECT;
    }
    case O_COLON:
      if (is_ws(c)) return ws(f, c);
      if (c != ':') return R_REJECT;
      go(f, O_VALUE);
      return R_CONSUME;
    case O_VALUE:
      if (is_ws(c)) return ws(f, c);
      go(f, O_AFTER);
      *child = p[f->a].node;
      return R_PUSH;
    case O_AFTER:
      if (is_ws(c)) return ws(f, c);
      if (c == ',' && (int32_t)f->a + 1 < np) {
        go(f, O_NEXT);
        f->a = f->a + 1;
        return R_CONSUME;
      }
      if (c == '}' && !required_from(p, np, (int32_t)f->a + 1)) {
        go(f, O_DONE);
        return R_CONSUME;
      }
      return R_REJECT;
    default:
      return R_POP;
  }
}

static int step_freeobj(const mx_grammar_t *g, const gnode_t *nd, gframe_t *f, uint8_t c,
                        int32_t *child) {
  switch (f->phase) {
    case F_OPEN:
      if (c != '{') return R_REJECT;
      go(f, F_FIRST);
      return R_CONSUME;
    case F_FIRST:
    case F_KEY:
      if (is_ws(c)) return ws(f, c);
      if (c == '}' && f->phase == F_FIRST) {
        go(f, F_DONE);
        return R_CONSUME;
      }
      if (c != '"') return R_REJECT;
      go(f, F_COLON);
      *child = g->key_string;
      return R_PUSH;
    case F_COLON:
      if (is_ws(c)) return ws(f, c);
      if (c != ':') return R_REJECT;
      go(f, F_VALUE);
      return R_CONSUME;
    case F_VALUE:
      if (is_ws(c)) return ws(f, c);
      go(f, F_AFTER);
      *child = nd->child;
      return R_PUSH;
    case F_AFTER:
      if (is_ws(c)) return ws(f, c);
      if (c == ',') {
        go(f, F_KEY);
        return R_CONSUME;
      }
      if (c == '}') {
        go(f, F_DONE);
        return R_CONSUME;
      }
      return R_REJECT;
    default:
      return R_POP;
  }
}

static int step_array(const gnode_t *nd, gframe_t *f, uint8_t c, int32_t *child) {
  switch (f->phase) {
    case A_OPEN:
      if (c != '[') return R_REJECT;
      go(f, A_FIRST);
      f->a = 0;
      return R_CONSUME;
    case A_FIRST:
    case A_ITEM:
      if (is_ws(c)) return ws(f, c);
      if (f->phase == A_FIRST && c == ']') {
        if (nd->min > 0) return R_REJECT;
        go(f, A_DONE);
        return R_CONSUME;
      }
      if (f->a >= nd->max) return R_REJECT;
      go(f, A_AFTER);
      f->a++;
      *child = nd->child;
      return R_PUSH;
    case A_AFTER:
      if (is_ws(c)) return ws(f, c);
      if (c == ',' && f->a < nd->max) {
        go(f, A_ITEM);
        return R_CONSUME;
      }
      if (c == ']' && f->a >= nd->min) {
        go(f, A_DONE);
        return R_CONSUME;
      }
      return R_REJECT;
    default:
      return R_POP;
  }
}

// UTF-8 continuation ranges (Unicode's well-formed table): the first continuation byte after
// E0, ED, F0, F4 is narrower; the rest are 80..BF.
enum { U_ANY, U_E0, U_ED, U_F0, U_F4 };

static int step_string(const gnode_t *nd, gframe_t *f, uint8_t c) {
  switch (f->phase) {
    case S_OPEN:
      if (c != '"') return R_REJECT;
      go(f, S_BODY);
      f->a = 0;
      return R_CONSUME;
    case S_BODY: {
      if (c == '"') {
        if (f->a < nd->min) return R_REJECT;
        go(f, S_DONE);
        return R_CONSUME;
      }
      if (c < 0x20 || f->a >= nd->max) return R_REJECT;
      f->a++;
      if (c == '\\') {
        go(f, S_ESC);
        return R_CONSUME;
      }
      if (c < 0x80) return R_CONSUME;
      int rem, range = U_ANY;
      if (c >= 0xC2 && c <= 0xDF) {
        rem = 1;
      } else if (c >= 0xE0 && c <= 0xEF) {
        rem = 2;
        range = c == 0xE0 ? U_E0 : c == 0xED ? U_ED : U_ANY;
      } else if (c >= 0xF0 && c <= 0xF4) {
        rem = 3;
        range = c == 0xF0 ? U_F0 : c == 0xF4 ? U_F4 : U_ANY;
      } else {
        return R_REJECT;
      }
      go(f, S_UTF8);
      f->sub = (uint8_t)(rem | range << 2);
      return R_CONSUME;
    }
    case S_UTF8: {
      int rem = f->sub & 3, range = f->sub >> 2;
      uint8_t lo = 0x80, hi = 0xBF;
      if (range == U_E0) lo = 0xA0;
      if (range == U_ED) hi = 0x9F;
      if (range == U_F0) lo = 0x90;
      if (range == U_F4) hi = 0x8F;
      if (c < lo || c > hi) return R_REJECT;
      rem--;
      if (rem == 0) {
        go(f, S_BODY);
      } else {
        f->sub = (uint8_t)rem;
      }
      return R_CONSUME;
    }
    case S_ESC:
      if (c == 'u') {
        go(f, S_HEX);
        return R_CONSUME;
      }
      if (!strchr("\"\\/bfnrt", c) || c == 0) return R_REJECT;
      go(f, S_BODY);
      return R_CONSUME;
    case S_HEX:
      if (!is_hex(c)) return R_REJECT;
      if (++f->sub == 4) go(f, S_BODY);
      return R_CONSUME;
    default:
      return R_POP;
  }
}

static int digit(gframe_t *f, int limit) {
  if (f->sub >= limit) return R_REJECT;
  f->sub++;
  return R_CONSUME;
}

static int step_number(bool integer, gframe_t *f, uint8_t c) {
  switch (f->phase) {
    case N_START:
    case N_SIGN:
      if (c == '-' && f->phase == N_START) {
        go(f, N_SIGN);
        return R_CONSUME;
      }
      if (c == '0') {
        go(f, N_ZERO);
        return R_CONSUME;
      }
      if (c < '1' || c > '9') return R_REJECT;
      go(f, N_INT);
      f->sub = 1;
      return R_CONSUME;
    case N_ZERO:
    case N_INT:
      if (is_digit(c) && f->phase == N_INT) return digit(f, GM_MAX_DIGITS);
      if (!integer && c == '.') {
        go(f, N_DOT);
        return R_CONSUME;
      }
      if (!integer && (c == 'e' || c == 'E')) {
        go(f, N_EXP);
        return R_CONSUME;
      }
      return R_POP;
    case N_DOT:
      if (!is_digit(c)) return R_REJECT;
      go(f, N_FRAC);
      f->sub = 1;
      return R_CONSUME;
    case N_FRAC:
      if (is_digit(c)) return digit(f, GM_MAX_DIGITS);
      if (c == 'e' || c == 'E') {
        go(f, N_EXP);
        return R_CONSUME;
      }
      return R_POP;
    case N_EXP:
      if (c == '+' || c == '-') {
        go(f, N_EXPS);
        return R_CONSUME;
      }
      /* fall through */
    case N_EXPS:
      if (!is_digit(c)) return R_REJECT;
      go(f, N_EXPD);
      f->sub = 1;
      return R_CONSUME;
    default:  // N_EXPD
      if (is_digit(c)) return digit(f, MAX_EXP_DIGITS);
      return R_POP;
  }
}

static int step_literals(const mx_grammar_t *g, const gnode_t *nd, gframe_t *f, uint8_t c) {
  const glit_t *l = g->lits + nd->first;
  uint32_t lo = f->a >> 16, pos = f->a & 0xFFFFu;
  // Literals sharing the bytes read so far follow lo (they are sorted).
  for (uint32_t k = lo; k < (uint32_t)nd->n; k++) {
    if (k > lo && (l[k].len < pos || memcmp(l[k].s, l[lo].s, pos) != 0)) break;
    if (l[k].len > pos && (uint8_t)l[k].s[pos] == c) {
      f->a = k << 16 | (pos + 1);
      return R_CONSUME;
    }
  }
  return l[lo].len == pos ? R_POP : R_REJECT;
}

// Whether a frame can take no more bytes (it is popped as soon as that is so).
static bool finished(const mx_grammar_t *g, const gframe_t *f) {
  const gnode_t *nd = &g->nodes[f->node];
  switch (nd->kind) {
    case GN_OBJECT:
      return f->phase == O_DONE;
    case GN_FREEOBJ:
      return f->phase == F_DONE;
    case GN_ARRAY:
      return f->phase == A_DONE;
    case GN_STRING:
      return f->phase == S_DONE;
    case GN_INTEGER:
      return f->phase == N_ZERO;
    case GN_LITERALS: {
      const glit_t *l = g->lits + nd->first;
      uint32_t lo = f->a >> 16, pos = f->a & 0xFFFFu;
      if (l[lo].len != pos) return false;
      return !(lo + 1 < (uint32_t)nd->n && l[lo + 1].len > pos &&
               memcmp(l[lo + 1].s, l[lo].s, pos) == 0);
    }
    case GN_SEQ:
      return f->a == (uint32_t)nd->n;
    default:
      return false;
  }
}

// Whether a frame may end with no more bytes: the top frame a number or literal that is
// complete, or a frame below it that needs nothing after its child (a sequence at its end).
static bool can_end(const mx_grammar_t *g, const gframe_t *f, bool top) {
  const gnode_t *nd = &g->nodes[f->node];
  switch (nd->kind) {
    case GN_NUMBER:
    case GN_INTEGER:
      return top &&
             (f->phase == N_ZERO || f->phase == N_INT || f->phase == N_FRAC || f->phase == N_EXPD);
    case GN_LITERALS:
      return top && g->lits[nd->first + (f->a >> 16)].len == (f->a & 0xFFFFu);
    case GN_SEQ:
      return f->a == (uint32_t)nd->n;
    default:
      return false;
  }
}

// Appends a stack to out unless out holds it already or is full (an alternative dropped is
// lost, never wrong: every stack kept is a valid reading of the bytes).
static void emit(gstate_t *out, const gframe_t *buf, int n) {
  int off = 0;
  for (int i = 0; i < out->n_stacks; i++) {
    if (out->len[i] == n && memcmp(out->f + off, buf, (size_t)n * sizeof *buf) == 0) return;
    off += out->len[i];
  }
  if (out->n_stacks >= GM_MAX_STACKS || out->total + n > GM_MAX_FRAMES) return;
  memcpy(out->f + out->total, buf, (size_t)n * sizeof *buf);
  out->len[out->n_stacks++] = (uint16_t)n;
  out->total = (uint16_t)(out->total + n);
}

// Feeds c to the stack buf[0..n) (modified in place), appending the resulting stacks to out.
static void run(const mx_grammar_t *g, gframe_t *buf, int n, uint8_t c, gstate_t *out, int forks) {
  for (;;) {
    if (n == 0) return;  // the document is complete: nothing may follow it
    gframe_t *f = &buf[n - 1];
    const gnode_t *nd = &g->nodes[f->node];
    int32_t child = -1;
    int r;
    switch (nd->kind) {
      case GN_ANYOF:
        if (++forks > MAX_FORKS) return;  // a $ref or anyOf loop that never reads a byte
        if (nd->n == 1) {                 // a $ref: the target takes its place
          *f = fresh(g->kids[nd->first]);
          continue;
        }
        for (int32_t k = 0; k < nd->n; k++) {
          gframe_t copy[GM_MAX_DEPTH];
          memcpy(copy, buf, (size_t)n * sizeof *buf);
          copy[n - 1] = fresh(g->kids[nd->first + k]);
          run(g, copy, n, c, out, forks + 1);
        }
        return;
      case GN_OBJECT:
        r = step_object(g, nd, f, c, &child);
        break;
      case GN_FREEOBJ:
        r = step_freeobj(g, nd, f, c, &child);
        break;
      case GN_ARRAY:
        r = step_array(nd, f, c, &child);
        break;
      case GN_STRING:
        r = step_string(nd, f, c);
        break;
      case GN_NUMBER:
      case GN_INTEGER:
        r = step_number(nd->kind == GN_INTEGER, f, c);
        break;
      case GN_LITERALS:
        r = step_literals(g, nd, f, c);
        break;
      default:  // GN_SEQ
        if (f->a < (uint32_t)nd->n) {
          child = g->kids[nd->first + f->a];
          f->a++;
          r = R_PUSH;
        } else {
          r = R_POP;
        }
        break;
    }
    switch (r) {
      case R_CONSUME:
        while (n > 0 && finished(g, &buf[n - 1])) n--;
        emit(out, buf, n);
        return;
      case R_PUSH:
        if (n >= GM_MAX_DEPTH) return;
        buf[n++] = fresh(child);
        continue;
      case R_POP:
        n--;
        continue;
      default:
        return;
    }
  }
}

void mx_gm_start(const mx_grammar_t *g, gstate_t *s) {
  s->n_stacks = 1;
  s->len[0] = 1;
  s->total = 1;
  s->f[0] = fresh(g->root);
}

void mx_gm_step(const mx_grammar_t *g, const gstate_t *in, uint8_t c, gstate_t *out) {
  out->n_stacks = 0;
  out->total = 0;
  int off = 0;
  for (int i = 0; i < in->n_stacks; i++) {
    gframe_t buf[GM_MAX_DEPTH];
    int n = in->len[i];
    memcpy(buf, in->f + off, (size_t)n * sizeof *buf);
    off += n;
    run(g, buf, n, c, out, 0);
  }
}

bool mx_gm_accepting(const mx_grammar_t *g, const gstate_t *s) {
  int off = 0;
  for (int i = 0; i < s->n_stacks; i++) {
    int n = s->len[i];
    bool ok = true;
    for (int k = n - 1; k >= 0 && ok; k--) ok = can_end(g, &s->f[off + k], k == n - 1);
    if (ok) return true;
    off += n;
  }
  return false;
}

bool mx_gm_finished(const gstate_t *s) {
  if (s->n_stacks == 0) return false;
  for (int i = 0; i < s->n_stacks; i++)
    if (s->len[i] != 0) return false;
  return true;
}

bool mx_gm_in_free_string(const mx_grammar_t *g, const gstate_t *s, uint32_t *room) {
  if (s->n_stacks != 1 || s->len[0] == 0) return false;
  const gframe_t *f = &s->f[s->len[0] - 1];
  const gnode_t *nd = &g->nodes[f->node];
  if (nd->kind != GN_STRING || f->phase != S_BODY) return false;
  *room = nd->max - f->a;
  return true;
}

// ---- The byte matcher ----

mx_status_t mx_gmatch_create(const mx_grammar_t *g, mx_gmatch_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_gmatch_create: out is NULL");
  *out = NULL;
  if (!g) return mx_error_set(MX_ERR_INVALID_ARG, "mx_gmatch_create: no grammar");
  mx_gmatch_t *m = calloc(1, sizeof *m);
  if (!m) return mx_error_set(MX_ERR_NOMEM, "grammar matcher: out of memory");
  m->g = g;
  mx_gm_start(g, &m->cur);
  *out = m;
  return MX_OK;
}

void mx_gmatch_destroy(mx_gmatch_t *m) {
  if (!m) return;
  free(m->path);
  free(m);
}

void mx_gmatch_reset(mx_gmatch_t *m) { mx_gm_start(m->g, &m->cur); }

bool mx_gmatch_feed(mx_gmatch_t *m, const char *bytes, size_t n) {
  if (n == 0) return true;
  // Steps alternate between the two scratch states; cur changes only when every byte passed.
  const gstate_t *a = &m->cur;
  gstate_t *b = &m->tmp;
  for (size_t i = 0; i < n; i++) {
    mx_gm_step(m->g, a, (uint8_t)bytes[i], b);
    if (b->n_stacks == 0) return false;
    a = b;
    b = b == &m->tmp ? &m->tmp2 : &m->tmp;
  }
  mx_gm_copy(&m->cur, a);
  return true;
}

bool mx_gmatch_accepting(const mx_gmatch_t *m) { return mx_gm_accepting(m->g, &m->cur); }
bool mx_gmatch_finished(const mx_gmatch_t *m) { return mx_gm_finished(&m->cur); }
