// Private: tokenizer for the MLIR/StableHLO text syntax (used only by the parser).
#ifndef MLXCEL_HLO_LEX_H
#define MLXCEL_HLO_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum mx_tok_kind {
  MX_TK_EOF = 0,
  MX_TK_ERROR,   // unlexable character / unterminated string; text points at it
  MX_TK_IDENT,   // bare identifier incl. dots: stablehlo.add, tensor, f32, x, e5m10
  MX_TK_VALUE,   // %name or %name#N (num >= 0 then)
  MX_TK_SYMBOL,  // @name or @"quoted"
  MX_TK_BLOCK,   // ^bb0
  MX_TK_HASH,    // #name (attribute alias or dialect attribute: #stablehlo.gather)
  MX_TK_BANG,    // !name (dialect type: !stablehlo.token)
  MX_TK_INT,     // 123 or 0x7F (is_hex)
  MX_TK_FLOAT,   // 1.5, 1.0e-5
  MX_TK_STRING,  // "..." (text includes the quotes; escapes undecoded)
  MX_TK_LPAREN,
  MX_TK_RPAREN,
  MX_TK_LSQUARE,
  MX_TK_RSQUARE,
  MX_TK_LBRACE,
  MX_TK_RBRACE,
  MX_TK_LESS,
  MX_TK_GREATER,
  MX_TK_COMMA,
  MX_TK_COLON,
  MX_TK_EQUAL,
  MX_TK_ARROW,  // ->
  MX_TK_MINUS,
  MX_TK_PLUS,
  MX_TK_QUESTION,
  MX_TK_STAR,
} mx_tok_kind_t;

typedef struct mx_tok {
  mx_tok_kind_t kind;
  const char *text;  // points into the source
  size_t len;
  int32_t line, col;  // 1-based (line already offset by the caller's first line)
  int64_t num;        // VALUE: result number after '#' (-1 if none)
  size_t name_len;    // VALUE: length of "%name" without the "#N" suffix
  bool is_hex;        // INT: 0x... literal
} mx_tok_t;

typedef struct mx_lexer {
  const char *src, *end;
  const char *cur;         // next unread character
  const char *line_start;  // start of the line containing `cur`
  int32_t line;
  mx_tok_t tok;  // current (lookahead) token
} mx_lexer_t;

void mx_lex_init(mx_lexer_t *lx, const char *text, size_t len, int32_t first_line);
// Advances to the next token (stored in lx->tok).
void mx_lex_next(mx_lexer_t *lx);
// Re-lexes starting at `pos` (which must lie at or after the start of the current token and on
// the same or a later line; the caller uses it after scanning raw characters).
void mx_lex_reset(mx_lexer_t *lx, const char *pos);
// Column (1-based) of a pointer on the lexer's current line tracking; for raw scanners.
void mx_lex_pos_of(const mx_lexer_t *lx, const char *p, int32_t *line, int32_t *col);

bool mx_tok_is(const mx_tok_t *t, const char *ident);  // IDENT with exactly this text

#endif  // MLXCEL_HLO_LEX_H
