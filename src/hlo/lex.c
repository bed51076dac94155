// Tokenizer for the MLIR text syntax subset StableHLO uses. Pull-based with one token of
// lookahead; the parser backtracks by copying the whole (small) lexer struct.
#include "hlo/lex.h"

#include <string.h>

static bool mx_is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool mx_is_digit(char c) { return c >= '0' && c <= '9'; }
static bool mx_is_hex(char c) {
  return mx_is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
// Characters allowed after the first one of a bare identifier.
static bool mx_is_ident_char(char c) {
  return mx_is_alpha(c) || mx_is_digit(c) || c == '_' || c == '$' || c == '.';
}
// Characters of an MLIR suffix-id (%name, @name, ^name, #name, !name).
static bool mx_is_suffix_char(char c) {
  return mx_is_alpha(c) || mx_is_digit(c) || c == '_' || c == '$' || c == '.' || c == '-';
}

void mx_lex_init(mx_lexer_t *lx, const char *text, size_t len, int32_t first_line) {
  memset(lx, 0, sizeof *lx);
  lx->src = text;
  lx->end = text + len;
  lx->cur = text;
  lx->line_start = text;
  lx->line = first_line > 0 ? first_line : 1;
  // A UTF-8 byte order mark is not part of the text.
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) lx->cur = lx->line_start = text + 3;
  mx_lex_next(lx);
}

static void mx_lex_newline(mx_lexer_t *lx, const char *after) {
  lx->line++;
  lx->line_start = after;
}

static void mx_lex_skip_space(mx_lexer_t *lx) {
  while (lx->cur < lx->end) {
    char c = *lx->cur;
    if (c == '\n') {
      lx->cur++;
      mx_lex_newline(lx, lx->cur);
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      lx->cur++;
    } else if (c == '/' && lx->cur + 1 < lx->end && lx->cur[1] == '/') {
      while (lx->cur < lx->end && *lx->cur != '\n') lx->cur++;
    } else {
      break;
    }
  }
}

static void mx_lex_make(mx_lexer_t *lx, mx_tok_kind_t kind, const char *start, const char *stop) {
  mx_tok_t *t = &lx->tok;
  t->kind = kind;
  t->text = start;
  t->len = (size_t)(stop - start);
  t->line = lx->line;
  t->col = (int32_t)(start - lx->line_start) + 1;
  t->num = -1;
  t->name_len = t->len;
  t->is_hex = false;
  lx->cur = stop;
}

// Lexes a sigil-prefixed suffix-id (@name, %name, ...). Returns the end, or NULL if empty.
static const char *mx_lex_suffix(const mx_lexer_t *lx, const char *p) {
  const char *q = p;
  while (q < lx->end && mx_is_suffix_char(*q)) q++;
  return q > p ? q : NULL;
}

static const char *mx_lex_string_end(const mx_lexer_t *lx, const char *p) {
  // p points at the opening quote.
  const char *q = p + 1;
  while (q < lx->end) {
    if (*q == '"') return q + 1;
    if (*q == '\n') return NULL;
    if (*q == '\\') {
      q++;
      if (q >= lx->end) return NULL;
    }
    q++;
  }
  return NULL;
}

static void mx_lex_number(mx_lexer_t *lx, const char *p) {
  const char *q = p;
  if (q + 1 < lx->end && q[0] == '0' && q[1] == 'x' && q + 2 < lx->end && mx_is_hex(q[2])) {
    q += 2;
    while (q < lx->end && mx_is_hex(*q)) q++;
    mx_lex_make(lx, MX_TK_INT, p, q);
    lx->tok.is_hex = true;
    return;
  }
  while (q < lx->end && mx_is_digit(*q)) q++;
  bool is_float = false;
  if (q < lx->end && *q == '.') {
    is_float = true;
    q++;
    while (q < lx->end && mx_is_digit(*q)) q++;
  }
  if (q < lx->end && (*q == 'e' || *q == 'E')) {
    const char *r = q + 1;
    if (r < lx->end && (*r == '+' || *r == '-')) r++;
    if (r < lx->end && mx_is_digit(*r)) {
      is_float = true;
      q = r;
      while (q < lx->end && mx_is_digit(*q)) q++;
    }
  }
  mx_lex_make(lx, is_float ? MX_TK_FLOAT : MX_TK_INT, p, q);
}

void mx_lex_next(mx_lexer_t *lx) {
  mx_lex_skip_space(lx);
  const char *p = lx->cur;
  if (p >= lx->end) {
    mx_lex_make(lx, MX_TK_EOF, p, p);
    return;
  }
  char c = *p;
  if (mx_is_alpha(c) || c == '_') {
    const char *q = p + 1;
    while (q < lx->end && mx_is_ident_char(*q)) q++;
    mx_lex_make(lx, MX_TK_IDENT, p, q);
    return;
  }
  if (mx_is_digit(c)) {
    mx_lex_number(lx, p);
    return;
  }
  switch (c) {
    case '%': {
      const char *q = mx_lex_suffix(lx, p + 1);
      if (!q) break;
      size_t name_len = (size_t)(q - p);
      int64_t num = -1;
      if (q + 1 < lx->end && *q == '#' && mx_is_digit(q[1])) {
        const char *r = q + 1;
        num = 0;
        while (r < lx->end && mx_is_digit(*r)) {
          if (num < (int64_t)1 << 40) num = num * 10 + (*r - '0');
          r++;
        }
        q = r;
      }
      mx_lex_make(lx, MX_TK_VALUE, p, q);
      lx->tok.num = num;
      lx->tok.name_len = name_len;
      return;
    }
    case '@': {
      if (p + 1 < lx->end && p[1] == '"') {
        const char *q = mx_lex_string_end(lx, p + 1);
        if (!q) break;
        mx_lex_make(lx, MX_TK_SYMBOL, p, q);
        return;
      }
      const char *q = mx_lex_suffix(lx, p + 1);
      if (!q) break;
      mx_lex_make(lx, MX_TK_SYMBOL, p, q);
      return;
    }
    case '^':
    case '#':
    case '!': {
      const char *q = mx_lex_suffix(lx, p + 1);
      if (!q) break;
      mx_lex_make(lx, c == '^' ? MX_TK_BLOCK : c == '#' ? MX_TK_HASH : MX_TK_BANG, p, q);
      return;
    }
    case '"': {
      const char *q = mx_lex_string_end(lx, p);
      if (!q) break;
      mx_lex_make(lx, MX_TK_STRING, p, q);
      return;
    }
    case '-':
      if (p + 1 < lx->end && p[1] == '>') {
        mx_lex_make(lx, MX_TK_ARROW, p, p + 2);
        return;
      }
      mx_lex_make(lx, MX_TK_MINUS, p, p + 1);
      return;
    case '(':
      mx_lex_make(lx, MX_TK_LPAREN, p, p + 1);
      return;
    case ')':
      mx_lex_make(lx, MX_TK_RPAREN, p, p + 1);
      return;
    case '[':
      mx_lex_make(lx, MX_TK_LSQUARE, p, p + 1);
      return;
    case ']':
      mx_lex_make(lx, MX_TK_RSQUARE, p, p + 1);
      return;
    case '{':
      mx_lex_make(lx, MX_TK_LBRACE, p, p + 1);
      return;
    case '}':
      mx_lex_make(lx, MX_TK_RBRACE, p, p + 1);
      return;
    case '<':
      mx_lex_make(lx, MX_TK_LESS, p, p + 1);
      return;
    case '>':
      mx_lex_make(lx, MX_TK_GREATER, p, p + 1);
      return;
    case ',':
      mx_lex_make(lx, MX_TK_COMMA, p, p + 1);
      return;
    case ':':
      mx_lex_make(lx, MX_TK_COLON, p, p + 1);
      return;
    case '=':
      mx_lex_make(lx, MX_TK_EQUAL, p, p + 1);
      return;
    case '+':
      mx_lex_make(lx, MX_TK_PLUS, p, p + 1);
      return;
    case '?':
      mx_lex_make(lx, MX_TK_QUESTION, p, p + 1);
      return;
    case '*':
      mx_lex_make(lx, MX_TK_STAR, p, p + 1);
      return;
    default:
      break;
  }
  // Unlexable: a one-character error token (the parser reports it).
  mx_lex_make(lx, MX_TK_ERROR, p, p + 1);
}

void mx_lex_reset(mx_lexer_t *lx, const char *pos) {
  // Rewind to the start of the current token (whose line/col are known), then walk forward.
  const char *p = lx->tok.text;
  if (pos < p || pos > lx->end) pos = p;
  lx->line = lx->tok.line;
  lx->line_start = p - (lx->tok.col - 1);
  for (; p < pos; p++)
    if (*p == '\n') mx_lex_newline(lx, p + 1);
  lx->cur = pos;
  mx_lex_next(lx);
}

void mx_lex_pos_of(const mx_lexer_t *lx, const char *p, int32_t *line, int32_t *col) {
  const char *q = lx->tok.text;
  int32_t ln = lx->tok.line;
  const char *ls = q - (lx->tok.col - 1);
  if (p < q) p = q;
  for (; q < p && q < lx->end; q++)
    if (*q == '\n') {
      ln++;
      ls = q + 1;
    }
  *line = ln;
  *col = (int32_t)(p - ls) + 1;
}

bool mx_tok_is(const mx_tok_t *t, const char *ident) {
  size_t n = strlen(ident);
  return t->kind == MX_TK_IDENT && t->len == n && memcmp(t->text, ident, n) == 0;
}
