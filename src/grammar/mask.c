// Token masks (grammar.h): the vocabulary's token bytes in a trie laid out in depth-first
// order, each node knowing where its subtree ends, so a mask is one loop over the nodes that
// steps the automaton by the node's byte from the state of its parent and jumps over the
// subtree when the byte is refused. Most of a vocabulary is plain text that only a string body
// accepts; those tokens have their own set, taken whole inside a string, and a second trie
// holds the rest.
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"

enum {
  MAX_TOKEN_BYTES = 256,  // longer tokens (none in real vocabularies) are never allowed
  // Plain tokens of at most this many characters have precomputed sets per string room
  // (maxLength); longer ones (runs of blanks or dashes, few) are walked like the rest.
  PLAIN_MAX_CHARS = 32,
};

typedef struct tnode {
  uint8_t byte;
  uint16_t depth;  // bytes above this node (the root's children have depth 0)
  uint32_t end;    // index just past this node's subtree
  int32_t tok;     // first token ending here, -1 if none (more via dup_next)
} tnode_t;

typedef struct trie {
  tnode_t *nodes;
  uint32_t n;
} trie_t;

struct mx_gvocab {
  int32_t size;
  char *bytes;        // every token's bytes, concatenated
  uint32_t *off;      // [size + 1]; special tokens have none (off[i] == off[i + 1], special[i])
  bool *special;      // [size] no bytes: never allowed
  int32_t *dup_next;  // [size] next token with the same bytes, -1 if none
  trie_t all, rest;   // every token; the tokens not in a plain set
  // plain[k]: bit set of the tokens of 1 to k characters of plain text (complete UTF-8, no '"',
  // '\\' or control byte), k = 0 .. PLAIN_MAX_CHARS, each (size + 31) / 32 words; n_plain[k]
  // their count.
  uint32_t *plain;
  int32_t n_plain[PLAIN_MAX_CHARS + 1];
  int32_t max_len;  // bytes of the longest token
};

static bool is_plain(const uint8_t *s, uint32_t n, uint32_t *chars) {
  if (n == 0) return false;
  uint32_t i = 0, k = 0;
  while (i < n) {
    uint8_t c = s[i];
    if (c == '"' || c == '\\' || c < 0x20) return false;
    int len = c < 0x80                   ? 1
              : (c >= 0xC2 && c <= 0xDF) ? 2
              : (c >= 0xE0 && c <= 0xEF) ? 3
              : (c >= 0xF0 && c <= 0xF4) ? 4
                                         : 0;
    if (len == 0 || i + (uint32_t)len > n) return false;
    for (int j = 1; j < len; j++) {
      uint8_t d = s[i + (uint32_t)j], lo = 0x80, hi = 0xBF;
      if (j == 1 && c == 0xE0) lo = 0xA0;
      if (j == 1 && c == 0xED) hi = 0x9F;
      if (j == 1 && c == 0xF0) lo = 0x90;
      if (j == 1 && c == 0xF4) hi = 0x8F;
      if (d < lo || d > hi) return false;
    }
    i += (uint32_t)len;
    k++;
  }
  *chars = k;
  return true;
}

// A token's bytes, for sorting.
typedef struct tref {
  const uint8_t *s;
  uint32_t len;
  int32_t id;
} tref_t;

static int by_bytes(const void *a, const void *b) {
  const tref_t *x = a, *y = b;
  int r = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
  if (r) return r;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

// Builds a trie of t[0..n) (sorted by bytes); tokens with the bytes of the one before them
// join its dup_next chain when `chain` (the first trie), and are left out otherwise.
static mx_status_t build_trie(mx_gvocab_t *v, const tref_t *t, int32_t n, bool chain, trie_t *out) {
  size_t cap = 1;
  for (int32_t i = 0; i < n; i++) cap += t[i].len;
  out->nodes = malloc(cap * sizeof *out->nodes);
  if (!out->nodes) return mx_error_set(MX_ERR_NOMEM, "token trie: out of memory");
  tnode_t *nodes = out->nodes;
  uint32_t path[MAX_TOKEN_BYTES];  // node index per depth along the current token
  uint32_t depth = 0, nn = 0;
  for (int32_t i = 0; i < n; i++) {
    uint32_t common = 0;
    if (i > 0) {
      const tref_t *p = &t[i - 1];
      while (common < t[i].len && common < p->len && t[i].s[common] == p->s[common]) common++;
      if (common == t[i].len && common == p->len) {
        if (chain) v->dup_next[p->id] = t[i].id;
        continue;
      }
    }
    while (depth > common) nodes[path[--depth]].end = nn;  // close the subtrees left
    for (; depth < t[i].len; depth++) {
      nodes[nn] = (tnode_t){.byte = t[i].s[depth], .depth = (uint16_t)depth, .tok = -1};
      path[depth] = nn++;
    }
    nodes[path[t[i].len - 1]].tok = t[i].id;
  }
  while (depth > 0) nodes[path[--depth]].end = nn;
  out->n = nn;
  return MX_OK;
}

void mx_gvocab_destroy(mx_gvocab_t *v) {
  if (!v) return;
  free(v->bytes);
  free(v->off);
  free(v->special);
  free(v->dup_next);
  free(v->all.nodes);
  free(v->rest.nodes);
  free(v->plain);
  free(v);
}

mx_status_t mx_gvocab_create(const mx_tokenizer_t *tok, mx_gvocab_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_gvocab_create: out is NULL");
  *out = NULL;
  if (!tok) return mx_error_set(MX_ERR_INVALID_ARG, "mx_gvocab_create: no tokenizer");
  int32_t V = mx_tokenizer_vocab_size(tok);
  mx_gvocab_t *v = calloc(1, sizeof *v);
  tref_t *ids = NULL, *rest = NULL;
  mx_status_t st = MX_OK;
  if (v) {
    v->size = V;
    v->off = calloc((size_t)V + 1, sizeof *v->off);
    v->special = calloc((size_t)V, sizeof *v->special);
    v->dup_next = malloc((size_t)V * sizeof *v->dup_next);
    v->plain = calloc((PLAIN_MAX_CHARS + 1) * (((size_t)V + 31) / 32), sizeof *v->plain);
    ids = malloc((size_t)V * sizeof *ids);
    rest = malloc((size_t)V * sizeof *rest);
  }
  if (!v || !v->off || !v->special || !v->dup_next || !v->plain || !ids || !rest)
    st = mx_error_set(MX_ERR_NOMEM, "token index: out of memory");
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  int32_t n_ids = 0, n_rest = 0;
  size_t words = ((size_t)V + 31) / 32;
  for (int32_t id = 0; !st && id < V; id++) {
    char buf[MAX_TOKEN_BYTES];
    int32_t n =
        mx_tokenizer_is_special(tok, id) ? -1 : mx_tokenizer_token_bytes(tok, id, buf, sizeof buf);
    v->off[id] = (uint32_t)sb.len;
    v->dup_next[id] = -1;
    if (n <= 0) {
      v->special[id] = true;
      continue;
    }
    mx_strbuf_append(&sb, buf, (size_t)n);
    if (n > v->max_len) v->max_len = n;
    ids[n_ids++] = (tref_t){.id = id};
    uint32_t chars;
    if (is_plain((const uint8_t *)buf, (uint32_t)n, &chars) && chars <= PLAIN_MAX_CHARS) {
      v->plain[chars * words + (size_t)(id >> 5)] |= 1u << (id & 31);
      v->n_plain[chars]++;
    } else {
      rest[n_rest++] = (tref_t){.id = id};
    }
  }
  // Sets of exactly k characters become sets of at most k.
  for (int k = 1; !st && k <= PLAIN_MAX_CHARS; k++) {
    for (size_t w = 0; w < words; w++) v->plain[k * words + w] |= v->plain[(k - 1) * words + w];
    v->n_plain[k] += v->n_plain[k - 1];
  }
  if (!st) {
    v->off[V] = (uint32_t)sb.len;
    if (sb.oom) st = mx_error_set(MX_ERR_NOMEM, "token index: out of memory");
    v->bytes = mx_strbuf_take(&sb, NULL);
  }
  mx_strbuf_free(&sb);
  if (!st) {
    // Pointers into v->bytes exist only now that it stopped growing.
    for (int32_t i = 0; i < n_ids; i++) {
      int32_t id = ids[i].id;
      ids[i].s = (const uint8_t *)v->bytes + v->off[id];
      ids[i].len = v->off[id + 1] - v->off[id];
    }
    for (int32_t i = 0; i < n_rest; i++) {
      int32_t id = rest[i].id;
      rest[i].s = (const uint8_t *)v->bytes + v->off[id];
      rest[i].len = v->off[id + 1] - v->off[id];
    }
    qsort(ids, (size_t)n_ids, sizeof *ids, by_bytes);
    qsort(rest, (size_t)n_rest, sizeof *rest, by_bytes);
    st = build_trie(v, ids, n_ids, true, &v->all);
    // Equal bytes are equally plain or not, so the rest trie's duplicates are chained already.
    if (!st) st = build_trie(v, rest, n_rest, false, &v->rest);
  }
  free(ids);
  if (st) {
    free(rest);
    mx_gvocab_destroy(v);
    return st;
  }
  *out = v;
  free(rest);
  return MX_OK;
}

int32_t mx_gvocab_size(const mx_gvocab_t *v) { return v ? v->size : 0; }

const char *mx_gvocab_token(const mx_gvocab_t *v, int32_t id, size_t *len) {
  if (len) *len = 0;
  if (!v || id < 0 || id >= v->size || v->special[id]) return NULL;
  if (len) *len = v->off[id + 1] - v->off[id];
  return v->bytes + v->off[id];
}

mx_status_t mx_gmatch_bind_vocab(mx_gmatch_t *m, const mx_gvocab_t *v) {
  free(m->path);
  m->path = NULL;
  m->path_n = 0;
  m->v = v;
  if (!v) return MX_OK;
  m->path_n = v->max_len + 1;
  m->path = malloc((size_t)m->path_n * sizeof *m->path);
  if (!m->path) {
    m->v = NULL;
    m->path_n = 0;
    return mx_error_set(MX_ERR_NOMEM, "grammar matcher: out of memory for %d states",
                        v->max_len + 1);
  }
  return MX_OK;
}

static inline void set_bit(uint32_t *bits, int32_t id) { bits[id >> 5] |= 1u << (id & 31); }

// Marks every token of trie t the automaton accepts from m->path[0]; returns their count.
static int32_t walk(mx_gmatch_t *m, const trie_t *t, uint32_t *allow) {
  const mx_grammar_t *g = m->g;
  const int32_t *dup = m->v->dup_next;
  int32_t count = 0;
  for (uint32_t i = 0; i < t->n;) {
    const tnode_t *nd = &t->nodes[i];
    gstate_t *next = &m->path[nd->depth + 1];
    mx_gm_step(g, &m->path[nd->depth], nd->byte, next);
    if (next->n_stacks == 0) {
      i = nd->end;  // no token below this prefix can be accepted
      continue;
    }
    for (int32_t id = nd->tok; id >= 0; id = dup[id]) {
      set_bit(allow, id);
      count++;
    }
    i++;
  }
  return count;
}

int32_t mx_gmatch_mask(mx_gmatch_t *m, const int32_t *end_ids, int32_t n_end, uint32_t *allow) {
  const mx_gvocab_t *v = m->v;
  if (!v) return 0;
  size_t words = ((size_t)v->size + 31) / 32;
  int32_t count = 0;
  mx_gm_copy(&m->path[0], &m->cur);
  uint32_t room = 0;
  if (mx_gm_in_free_string(m->g, &m->cur, &room)) {
    uint32_t k = room < PLAIN_MAX_CHARS ? room : PLAIN_MAX_CHARS;
    memcpy(allow, v->plain + k * words, words * sizeof *allow);
    count = v->n_plain[k] + walk(m, &v->rest, allow);
  } else {
    memset(allow, 0, words * sizeof *allow);
    count = walk(m, &v->all, allow);
  }
  // End ids end the sequence whatever their bytes: allowed exactly when the document is.
  bool end_ok = mx_gm_accepting(m->g, &m->cur);
  for (int32_t i = 0; i < n_end; i++) {
    int32_t id = end_ids[i];
    if (id < 0 || id >= v->size) continue;
    bool on = allow[id >> 5] >> (id & 31) & 1u;
    if (on == end_ok) continue;
    allow[id >> 5] ^= 1u << (id & 31);
    count += end_ok ? 1 : -1;
  }
  return count;
}

bool mx_gmatch_feed_token(mx_gmatch_t *m, int32_t id) {
  size_t len = 0;
  const char *b = mx_gvocab_token(m->v, id, &len);
  return b && len > 0 && mx_gmatch_feed(m, b, len);
}
