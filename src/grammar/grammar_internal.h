// Private to src/grammar/: the compiled grammar (a table of nodes), the matcher's state (a set
// of frame stacks) and the stepping function shared by the byte matcher and the token mask.
#ifndef MX_GRAMMAR_INTERNAL_H
#define MX_GRAMMAR_INTERNAL_H

#include "mlxcel/grammar.h"

// What one node matches. A node is a sub-automaton; a frame on a stack is a node being matched.
typedef enum gn_kind {
  GN_OBJECT,    // properties in order, each optional one may be skipped (props)
  GN_FREEOBJ,   // any keys, values of node `child`
  GN_ARRAY,     // items of node `child`, min..max of them
  GN_STRING,    // min..max characters
  GN_NUMBER,    // JSON number
  GN_INTEGER,   // JSON number without fraction or exponent
  GN_LITERALS,  // one of the byte strings lits[first .. first + n), sorted bytewise
  GN_ANYOF,     // one of the nodes kids[first .. first + n)
  GN_SEQ,       // the nodes kids[first .. first + n) one after another
} gn_kind_t;

typedef struct gnode {
  gn_kind_t kind;
  int32_t first, n;   // range of props (OBJECT), lits (LITERALS) or kids (ANYOF, SEQ)
  int32_t child;      // FREEOBJ value, ARRAY item
  uint32_t min, max;  // ARRAY items, STRING characters
} gnode_t;

typedef struct gprop {
  const char *key;  // the key as a JSON string literal, quotes included (arena)
  uint32_t key_len;
  int32_t node;
  bool required;
} gprop_t;

typedef struct glit {
  const char *s;  // arena
  uint32_t len;
} glit_t;

struct mx_grammar {
  mx_arena_t *arena;
  gnode_t *nodes;
  int32_t n_nodes, cap_nodes;
  gprop_t *props;
  int32_t n_props, cap_props;
  glit_t *lits;
  int32_t n_lits, cap_lits;
  int32_t *kids;
  int32_t n_kids, cap_kids;
  int32_t root;
  int32_t key_string;  // a plain string node: the keys of free-form objects
};

// ---- Matcher state ----

enum {
  GM_MAX_DEPTH = 48,    // frames per stack (nesting of the document)
  GM_MAX_STACKS = 16,   // alternatives alive at once
  GM_MAX_FRAMES = 384,  // frames over all stacks
  GM_MAX_INDENT = 8,    // blanks after a line break between tokens
  GM_MAX_DIGITS = 16,   // digits per number part
};

typedef struct gframe {
  uint16_t node;
  uint8_t phase;
  uint8_t sub;  // whitespace run, UTF-8 continuation bytes, hex digits
  uint32_t a;   // per kind: property / literal (index << 16 | position), item or char count
} gframe_t;

typedef struct gstate {
  uint16_t n_stacks;
  uint16_t len[GM_MAX_STACKS];
  uint16_t total;  // frames in f
  gframe_t f[GM_MAX_FRAMES];
} gstate_t;

// The start state of g.
void mx_gm_start(const mx_grammar_t *g, gstate_t *s);
// out = in after byte c (out->n_stacks == 0: refused). in and out must differ.
void mx_gm_step(const mx_grammar_t *g, const gstate_t *in, uint8_t c, gstate_t *out);
bool mx_gm_accepting(const mx_grammar_t *g, const gstate_t *s);
bool mx_gm_finished(const gstate_t *s);
// Copies the used part of a state.
static inline void mx_gm_copy(gstate_t *dst, const gstate_t *src) {
  dst->n_stacks = src->n_stacks;
  dst->total = src->total;
  for (int i = 0; i < src->n_stacks; i++) dst->len[i] = src->len[i];
  for (int i = 0; i < src->total; i++) dst->f[i] = src->f[i];
}
// The one stack of s when it has one, whose top frame is inside a string body with no
// character pending and room for `more` characters: where plain text tokens are all allowed.
bool mx_gm_in_free_string(const mx_grammar_t *g, const gstate_t *s, uint32_t *room);

struct mx_gmatch {
  const mx_grammar_t *g;
  gstate_t cur, tmp, tmp2;
  // Mask scratch (mx_gmatch_bind_vocab): one state per trie depth.
  const mx_gvocab_t *v;
  gstate_t *path;
  int32_t path_n;
};

#endif  // MX_GRAMMAR_INTERNAL_H
