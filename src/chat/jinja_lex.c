// Jinja lexer: splits a template into text and tag tokens, applying whitespace control the way
// Hugging Face configures Jinja (trim_blocks and lstrip_blocks on, plus `-` / `+` modifiers).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja.h"

void jj_line_col(const char *src, size_t len, uint32_t pos, int *line, int *col) {
  int l = 1, c = 1;
  for (size_t i = 0; i < pos && i < len; i++) {
    if (src[i] == '\n') {
      l++;
      c = 1;
    } else {
      c++;
    }
  }
  *line = l;
  *col = c;
}

_Noreturn void jj_compile_fail(jj_compiler_t *c, uint32_t pos, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line = 0, col = 0;
  jj_line_col(c->src, c->len, pos, &line, &col);
  mx_error_set(MX_ERR_PARSE, "chat template %d:%d: %s", line, col, msg);
  longjmp(*c->jmp, 1);
}

static void push_tok(jj_compiler_t *c, jj_token_t t) {
  if (c->n_toks == c->cap_toks) {
    int32_t cap = c->cap_toks ? c->cap_toks * 2 : 256;
    c->toks = mx_arena_grow(c->arena, c->toks, (size_t)c->n_toks, (size_t)cap, sizeof *c->toks);
    if (!c->toks) jj_compile_fail(c, t.pos, "out of memory");
    c->cap_toks = cap;
  }
  c->toks[c->n_toks++] = t;
}

static bool is_space(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}
static bool is_name_start(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}
static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static size_t find_tag(const char *s, size_t len, size_t p) {
  for (; p + 1 < len; p++) {
    if (s[p] == '{' && (s[p + 1] == '{' || s[p + 1] == '%' || s[p + 1] == '#')) return p;
  }
  return len;
}

static void put_utf8(char *out, size_t *k, uint32_t cp) {
  if (cp < 0x80) {
    out[(*k)++] = (char)cp;
  } else if (cp < 0x800) {
    out[(*k)++] = (char)(0xC0 | (cp >> 6));
    out[(*k)++] = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out[(*k)++] = (char)(0xE0 | (cp >> 12));
    out[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[(*k)++] = (char)(0x80 | (cp & 0x3F));
  } else {
    out[(*k)++] = (char)(0xF0 | (cp >> 18));
    out[(*k)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[(*k)++] = (char)(0x80 | (cp & 0x3F));
  }
}

static int hex_val(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

// Lexes a quoted string starting at p (the quote); Python escape rules. Returns the end.
static size_t lex_string(jj_compiler_t *c, size_t p) {
  const char *s = c->src;
  char q = s[p];
  size_t start = p;
  char *out = mx_arena_alloc(c->arena, c->len - p + 1);
  if (!out) jj_compile_fail(c, (uint32_t)p, "out of memory");
  size_t k = 0;
  p++;
  for (;;) {
    if (p >= c->len) jj_compile_fail(c, (uint32_t)start, "unterminated string literal");
    char ch = s[p];
    if (ch == q) break;
    if (ch != '\\') {
      out[k++] = ch;
      p++;
      continue;
    }
    if (p + 1 >= c->len) jj_compile_fail(c, (uint32_t)start, "unterminated string literal");
    char e = s[p + 1];
    p += 2;
    switch (e) {
      case 'n':
        out[k++] = '\n';
        break;
      case 't':
        out[k++] = '\t';
        break;
      case 'r':
        out[k++] = '\r';
        break;
      case 'b':
        out[k++] = '\b';
        break;
      case 'f':
        out[k++] = '\f';
        break;
      case 'v':
        out[k++] = '\v';
        break;
      case 'a':
        out[k++] = '\a';
        break;
      case '0':
      case '1':
      case '2':
      case '3':
      case '4':
      case '5':
      case '6':
      case '7': {  // octal, up to three digits (Python's unicode-escape)
        uint32_t cp = (uint32_t)(e - '0');
        for (int d = 0; d < 2 && p < c->len && s[p] >= '0' && s[p] <= '7'; d++, p++) {
          cp = cp * 8 + (uint32_t)(s[p] - '0');
        }
        put_utf8(out, &k, cp);
        break;
      }
      case '\\':
        out[k++] = '\\';
        break;
      case '\'':
        out[k++] = '\'';
        break;
      case '"':
        out[k++] = '"';
        break;
      case '\n':
        break;  // line continuation
      case 'x':
      case 'u':
      case 'U': {
        int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (int d = 0; d < nd; d++) {
          int h = p < c->len ? hex_val(s[p]) : -1;
          if (h < 0) {
            jj_compile_fail(c, (uint32_t)(p), "expected %d hex digits after '\\%c'", nd, e);
          }
          cp = cp * 16 + (uint32_t)h;
          p++;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          jj_compile_fail(c, (uint32_t)(p - (size_t)nd - 2), "invalid code point in escape");
        }
        put_utf8(out, &k, cp);
        break;
      }
      default:  // unknown escapes stay as written, as in Python
        out[k++] = '\\';
        out[k++] = e;
    }
  }
  jj_token_t t = {.kind = JT_STRING, .pos = (uint32_t)start, .s = out, .n = k};
  push_tok(c, t);
  return p + 1;
}

static size_t lex_number(jj_compiler_t *c, size_t p) {
  const char *s = c->src;
  size_t start = p;
  bool is_float = false;
  while (p < c->len && (is_digit(s[p]) || s[p] == '_')) p++;
  if (p + 1 < c->len && s[p] == '.' && is_digit(s[p + 1])) {
    is_float = true;
    p++;
    while (p < c->len && (is_digit(s[p]) || s[p] == '_')) p++;
  }
  if (p < c->len && (s[p] == 'e' || s[p] == 'E')) {
    size_t q = p + 1;
    if (q < c->len && (s[q] == '+' || s[q] == '-')) q++;
    if (q < c->len && is_digit(s[q])) {
      is_float = true;
      p = q;
      while (p < c->len && is_digit(s[p])) p++;
    }
  }
  char buf[64];
  size_t k = 0;
  for (size_t i = start; i < p && k + 1 < sizeof buf; i++) {
    if (s[i] != '_') buf[k++] = s[i];
  }
  buf[k] = 0;
  if (p - start >= sizeof buf - 1) jj_compile_fail(c, (uint32_t)start, "number literal too long");
  jj_token_t t = {.pos = (uint32_t)start};
  if (is_float) {
    t.kind = JT_FLOAT;
    t.f = strtod(buf, NULL);
  } else {
    t.kind = JT_INT;
    char *end = NULL;
    unsigned long long v = strtoull(buf, &end, 10);
    if (v > (unsigned long long)INT64_MAX) {
      jj_compile_fail(c, (uint32_t)start, "integer literal out of range");
    }
    t.i = (int64_t)v;
  }
  push_tok(c, t);
  return p;
}

static const char *const kOps2[] = {"//", "**", "==", "!=", "<=", ">="};
static const char kOps1[] = "()[]{}.,:|~+-*/%=<>";

// Lexes the inside of a {{ }} or {% %} tag; returns the position after its closer. Sets
// *strip_after when the closer was `-}}` / `-%}`, *block_close for `%}` (trim_blocks) unless
// written `+%}`.
static size_t lex_tag(jj_compiler_t *c, size_t p, bool is_block, uint32_t open_pos,
                      bool *strip_after, bool *trim_after) {
  const char *s = c->src;
  int balance = 0;
  for (;;) {
    while (p < c->len && is_space(s[p])) p++;
    if (p >= c->len) {
      jj_compile_fail(c, open_pos, "unterminated '%s' tag: expected '%s' before the end",
                      is_block ? "{%" : "{{", is_block ? "%}" : "}}");
    }
    char close = is_block ? '%' : '}';
    if (balance == 0 || is_block) {
      bool minus = s[p] == '-' || (is_block && s[p] == '+');
      size_t q = minus ? p + 1 : p;
      if (q + 1 < c->len && s[q] == close && s[q + 1] == '}') {
        jj_token_t t = {.kind = is_block ? JT_BLOCK_END : JT_VAR_END, .pos = (uint32_t)p};
        push_tok(c, t);
        *strip_after = minus && s[p] == '-';
        *trim_after = is_block && !minus;
        return q + 2;
      }
    }
    char ch = s[p];
    if (ch == '\'' || ch == '"') {
      p = lex_string(c, p);
    } else if (is_digit(ch)) {
      p = lex_number(c, p);
    } else if (is_name_start(ch)) {
      size_t st = p;
      while (p < c->len && (is_name_start(s[p]) || is_digit(s[p]))) p++;
      jj_token_t t = {.kind = JT_NAME, .pos = (uint32_t)st, .s = s + st, .n = p - st};
      push_tok(c, t);
    } else {
      jj_token_t t = {.kind = JT_OP, .pos = (uint32_t)p, .s = s + p, .n = 0};
      for (size_t k = 0; k < sizeof kOps2 / sizeof kOps2[0]; k++) {
        if (p + 1 < c->len && s[p] == kOps2[k][0] && s[p + 1] == kOps2[k][1]) t.n = 2;
      }
      if (t.n == 0 && strchr(kOps1, ch) && ch != 0) t.n = 1;
      if (t.n == 0) {
        if ((unsigned char)ch >= 0x20 && (unsigned char)ch < 0x7F) {
          jj_compile_fail(c, (uint32_t)p, "unexpected character '%c' in expression", ch);
        }
        jj_compile_fail(c, (uint32_t)p, "unexpected byte 0x%02X in expression",
                        (unsigned)(unsigned char)ch);
      }
      // Only braces matter: a dict literal may hold "}}"; "%}" never occurs in an expression.
      if (t.n == 1 && ch == '{') balance++;
      if (t.n == 1 && ch == '}' && balance > 0) balance--;
      push_tok(c, t);
      p += t.n;
    }
  }
}

void jj_lex(jj_compiler_t *c) {
  const char *s = c->src;
  size_t len = c->len, p = 0;
  bool strip_next = false, trim_nl = false;
  while (p <= len) {
    size_t q = find_tag(s, len, p);
    size_t ts = p, te = q;
    if (strip_next) {
      while (ts < te && is_space(s[ts])) ts++;
    } else if (trim_nl) {
      if (ts < te && s[ts] == '\n') {
        ts++;
      } else if (ts + 1 < te && s[ts] == '\r' && s[ts + 1] == '\n') {
        ts += 2;
      }
    }
    char kind = 0, mod = 0;
    if (q < len) {
      kind = s[q + 1];
      mod = q + 2 < len ? s[q + 2] : 0;
      if (mod == '-') {
        while (te > ts && is_space(s[te - 1])) te--;
      } else if ((kind == '%' || kind == '#') && mod != '+') {
        // lstrip_blocks: spaces and tabs between the start of a line and a block tag go.
        size_t l = te;
        while (l > ts && (s[l - 1] == ' ' || s[l - 1] == '\t')) l--;
        if (l == 0 || s[l - 1] == '\n') te = l;
      }
    }
    if (te > ts) {
      jj_token_t t = {.kind = JT_TEXT, .pos = (uint32_t)ts, .s = s + ts, .n = te - ts};
      push_tok(c, t);
    }
    if (q >= len) break;
    size_t body = q + 2 + ((mod == '-' || (mod == '+' && kind != '{')) ? 1 : 0);
    if (kind == '#') {
      size_t e = body;
      while (e + 1 < len && !(s[e] == '#' && s[e + 1] == '}')) e++;
      if (e + 1 >= len) jj_compile_fail(c, (uint32_t)q, "unterminated comment: expected '#}'");
      strip_next = e > body && s[e - 1] == '-';
      trim_nl = !strip_next;
      p = e + 2;
      continue;
    }
    jj_token_t t = {.kind = kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, .pos = (uint32_t)q};
    push_tok(c, t);
    p = lex_tag(c, body, kind == '%', (uint32_t)q, &strip_next, &trim_nl);
    // `{% raw %}`: everything up to `{% endraw %}` is text.
    if (kind == '%' && c->n_toks >= 3 && c->toks[c->n_toks - 2].kind == JT_NAME &&
        c->toks[c->n_toks - 2].n == 3 && memcmp(c->toks[c->n_toks - 2].s, "raw", 3) == 0 &&
        c->toks[c->n_toks - 3].kind == JT_BLOCK_BEGIN) {
      c->n_toks -= 3;
      size_t r = p;
      for (;;) {
        r = find_tag(s, len, r);
        if (r >= len) jj_compile_fail(c, (uint32_t)q, "unterminated raw block: expected endraw");
        if (s[r + 1] != '%') {
          r += 2;
          continue;
        }
        size_t k = r + 2;
        if (k < len && (s[k] == '-' || s[k] == '+')) k++;
        while (k < len && is_space(s[k])) k++;
        if (k + 6 <= len && memcmp(s + k, "endraw", 6) == 0) break;
        r += 2;
      }
      size_t te2 = r;
      if (r + 2 < len && s[r + 2] == '-') {
        while (te2 > p && is_space(s[te2 - 1])) te2--;
      }
      size_t ts2 = p;
      if (strip_next) {
        while (ts2 < te2 && is_space(s[ts2])) ts2++;
      } else if (trim_nl && ts2 < te2 && s[ts2] == '\n') {
        ts2++;
      }
      if (te2 > ts2) {
        jj_token_t tt = {.kind = JT_TEXT, .pos = (uint32_t)ts2, .s = s + ts2, .n = te2 - ts2};
        push_tok(c, tt);
      }
      size_t k = r + 2;
      if (s[k] == '-' || s[k] == '+') k++;
      int32_t before = c->n_toks;
      p = lex_tag(c, k, true, (uint32_t)r, &strip_next, &trim_nl);
      c->n_toks = before;  // drop the endraw tag's tokens
    }
  }
  jj_token_t eof = {.kind = JT_EOF, .pos = (uint32_t)len};
  push_tok(c, eof);
}
