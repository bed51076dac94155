// Encoding: added-token split -> normalize -> (normalized added tokens) -> pre-tokenize -> BPE
// -> post-processor, following Hugging Face tokenizers' order.
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

// A pre-token: text bytes [off, off + len) in a work buffer, or an already decided token id.
typedef struct piece {
  size_t off, len;
  int32_t id;      // >= 0: an added token, not processed further
  bool at_origin;  // starts at original offset 0 (Metaspace prepend_scheme "first")
} piece_t;

typedef struct plist {
  piece_t *p;
  int32_t n, cap;
  mx_strbuf_t buf;
} plist_t;

typedef struct enc {
  const mx_tokenizer_t *t;
  pcre2_match_data *md;
  bool parse_special;
  const mx_text_range_t *plain;  // mx_encode_opts_t.plain (raw-text offsets)
  int32_t n_plain;
  int32_t *ids;
  int32_t n_ids, cap_ids;
} enc_t;

static bool plist_add(plist_t *l, const char *s, size_t n, int32_t id, bool at_origin) {
  if (l->n == l->cap) {
    int32_t ncap = l->cap ? l->cap * 2 : 32;
    piece_t *np = realloc(l->p, (size_t)ncap * sizeof *np);
    if (!np) return false;
    l->p = np;
    l->cap = ncap;
  }
  size_t off = l->buf.len;
  if (id < 0) {
    if (n == 0) return true;  // empty pre-tokens are dropped, as in Hugging Face
    mx_strbuf_append(&l->buf, s, n);
    if (l->buf.oom) return false;
  }
  l->p[l->n++] = (piece_t){.off = off, .len = id < 0 ? n : 0, .id = id, .at_origin = at_origin};
  return true;
}

static void plist_free(plist_t *l) {
  free(l->p);
  mx_strbuf_free(&l->buf);
  memset(l, 0, sizeof *l);
}

static mx_status_t oom(void) {
  return mx_error_set(MX_ERR_NOMEM, "tokenizer encode: out of memory");
}

// ---- added tokens ----
static bool is_ws_before(const char *s, size_t i, size_t *start) {
  size_t c = i - 1;
  while (c > 0 && ((uint8_t)s[c] & 0xC0) == 0x80) c--;
  uint32_t cp;
  int k = mx_utf8_decode((const uint8_t *)s + c, i - c, &cp);
  if (k <= 0 || !mx_unicode_is_whitespace(cp)) return false;
  *start = c;
  return true;
}

static bool word_before(const char *s, size_t i) {
  if (i == 0) return false;
  size_t c = i - 1;
  while (c > 0 && ((uint8_t)s[c] & 0xC0) == 0x80) c--;
  uint32_t cp;
  return mx_utf8_decode((const uint8_t *)s + c, i - c, &cp) > 0 && mx_unicode_is_word(cp);
}

static bool word_after(const char *s, size_t i, size_t n) {
  uint32_t cp;
  return i < n && mx_utf8_decode((const uint8_t *)s + i, n - i, &cp) > 0 && mx_unicode_is_word(cp);
}

// True when [a, b) overlaps one of the plain ranges (sorted, disjoint: binary search).
static bool overlaps_plain(const enc_t *e, size_t a, size_t b) {
  int32_t lo = 0, hi = e->n_plain;  // first range ending after a
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (e->plain[mid].end <= a) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < e->n_plain && e->plain[lo].start < b;
}

// Longest eligible added token starting at s[i] (tokens are sorted longest first).
static const mx_tok_added_t *match_at(const enc_t *e, const char *s, size_t i, size_t n,
                                      bool normalized_pass) {
  const mx_tokenizer_t *t = e->t;
  uint8_t first = (uint8_t)s[i];
  for (int32_t k = t->added_first[first]; k < t->added_first[first + 1]; k++) {
    const mx_tok_added_t *a = &t->added[k];
    if (a->len > n - i) continue;
    if (a->special && !e->parse_special) continue;
    // Plain ranges are raw-text offsets: the raw pass checks them, the normalized pass (other
    // offsets) matches no special token when there are any.
    if (a->special && e->n_plain > 0 &&
        (normalized_pass || overlaps_plain(e, i, i + (size_t)a->len)))
      continue;
    // With a normalizer, "normalized" tokens are matched in the normalized text, the others in
    // the raw text; without one every token is matched in the raw text.
    if (t->any_normalized_added && a->normalized != normalized_pass) continue;
    if (memcmp(a->content, s + i, a->len) == 0) return a;
  }
  return NULL;
}

// Splits s into text pieces and added tokens (leftmost-longest, non-overlapping), applying
// lstrip / rstrip / single_word. Text pieces go to `out` with at_origin when they start at 0
// and `origin` says s itself starts the input.
static mx_status_t split_added(const enc_t *e, const char *s, size_t n, bool normalized_pass,
                               bool origin, plist_t *out) {
  size_t last = 0, i = 0;
  while (i < n) {
    const mx_tok_added_t *a = e->t->n_added ? match_at(e, s, i, n, normalized_pass) : NULL;
    if (!a) {
      i++;
      continue;
    }
    size_t start = i, stop = i + a->len;
    if (a->single_word && (word_before(s, start) || word_after(s, stop, n))) {
      i = stop;
      continue;
    }
    if (a->lstrip) {
      size_t c;
      while (start > last && is_ws_before(s, start, &c)) start = c;
    }
    if (a->rstrip) {
      uint32_t cp;
      int k;
      while (stop < n && (k = mx_utf8_decode((const uint8_t *)s + stop, n - stop, &cp)) > 0 &&
             mx_unicode_is_whitespace(cp)) {
        stop += (size_t)k;
      }
    }
    if (start > last && !plist_add(out, s + last, start - last, -1, origin && last == 0)) {
      return oom();
    }
    if (!plist_add(out, NULL, 0, a->id, false)) return oom();
    last = i = stop;
  }
  if (last < n && !plist_add(out, s + last, n - last, -1, origin && last == 0)) return oom();
  return MX_OK;
}

// ---- pre-tokenizers ----
typedef struct seg {
  size_t s, e;
  bool match;
} seg_t;

typedef struct segs {
  seg_t *v;
  int32_t n, cap;
} segs_t;

static bool segs_add(segs_t *g, size_t s, size_t e, bool match) {
  if (g->n == g->cap) {
    int32_t ncap = g->cap ? g->cap * 2 : 32;
    seg_t *nv = realloc(g->v, (size_t)ncap * sizeof *nv);
    if (!nv) return false;
    g->v = nv;
    g->cap = ncap;
  }
  g->v[g->n++] = (seg_t){s, e, match};
  return true;
}

// Match / non-match segments covering s[0..n).
static mx_status_t find_segments(const enc_t *e, const mx_tok_pretok_t *p, const char *s, size_t n,
                                 segs_t *g) {
  g->n = 0;
  size_t prev = 0, pos = 0;
  while (pos < n) {
    size_t ms, me;
    if (p->re) {
      int rc = pcre2_match(p->re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, e->md, NULL);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(rc, msg, sizeof msg);
        return mx_error_set(MX_ERR_RUNTIME, "pre_tokenizer regex: %s", (const char *)msg);
      }
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
      ms = ov[0];
      me = ov[1];
    } else {
      const char *hit = memmem(s + pos, n - pos, p->str, p->str_len);
      if (!hit) break;
      ms = (size_t)(hit - s);
      me = ms + p->str_len;
    }
    if (me == ms) {  // empty match: no segment; step one character
      uint32_t cp;
      int k = mx_utf8_decode((const uint8_t *)s + pos, n - pos, &cp);
      pos += k > 0 ? (size_t)k : 1;
      continue;
    }
    if (ms > prev && !segs_add(g, prev, ms, false)) return oom();
    if (!segs_add(g, ms, me, true)) return oom();
    prev = pos = me;
  }
  if (prev < n && !segs_add(g, prev, n, false)) return oom();
  if (p->invert) {
    for (int32_t i = 0; i < g->n; i++) g->v[i].match = !g->v[i].match;
  }
  return MX_OK;
}

// Applies a split behavior in place (segments become plain pieces; `match` then means "drop").
static void apply_behavior(segs_t *g, mx_tok_split_behavior_t b) {
  int32_t w = 0;
  bool prev_match = false;
  switch (b) {
    case MX_SPLIT_REMOVED:
      for (int32_t i = 0; i < g->n; i++) {
        if (!g->v[i].match) g->v[w++] = g->v[i];
      }
      g->n = w;
      break;
    case MX_SPLIT_ISOLATED:
      break;
    case MX_SPLIT_MERGED_PREV:
      for (int32_t i = 0; i < g->n; i++) {
        seg_t c = g->v[i];
        if (c.match && !prev_match && w > 0) {
          g->v[w - 1].e = c.e;
        } else {
          g->v[w++] = c;
        }
        prev_match = c.match;
      }
      g->n = w;
      break;
    case MX_SPLIT_MERGED_NEXT: {
      // Walk backwards: a match joins the piece that follows it (unless that was a match).
      w = g->n;
      for (int32_t i = g->n - 1; i >= 0; i--) {
        seg_t c = g->v[i];
        if (c.match && !prev_match && w < g->n) {
          g->v[w].s = c.s;
        } else {
          g->v[--w] = c;
        }
        prev_match = c.match;
      }
      memmove(g->v, g->v + w, (size_t)(g->n - w) * sizeof *g->v);
      g->n -= w;
      break;
    }
    case MX_SPLIT_CONTIGUOUS:
      for (int32_t i = 0; i < g->n; i++) {
        seg_t c = g->v[i];
        if (i > 0 && c.match == prev_match) {
          g->v[w - 1].e = c.e;
        } else {
          g->v[w++] = c;
        }
        prev_match = c.match;
      }
      g->n = w;
      break;
  }
}

static mx_status_t split_piece(const enc_t *e, const mx_tok_pretok_t *p, const char *s, size_t n,
                               bool at_origin, segs_t *g, plist_t *out) {
  mx_status_t st = find_segments(e, p, s, n, g);
  if (st != MX_OK) return st;
  apply_behavior(g, p->behavior);
  for (int32_t i = 0; i < g->n; i++) {
    if (!plist_add(out, s + g->v[i].s, g->v[i].e - g->v[i].s, -1, at_origin && g->v[i].s == 0)) {
      return oom();
    }
  }
  return MX_OK;
}

static mx_status_t bytelevel_piece(const enc_t *e, const mx_tok_pretok_t *p, const char *s,
                                   size_t n, bool at_origin, segs_t *g, plist_t *out) {
  mx_strbuf_t pre;
  mx_strbuf_init(&pre);
  if (p->add_prefix_space && (n == 0 || s[0] != ' ')) {
    mx_strbuf_append(&pre, " ", 1);
    mx_strbuf_append(&pre, s, n);
    if (pre.oom) return oom();
    s = pre.data;
    n = pre.len;
  }
  mx_status_t st = MX_OK;
  if (p->re) {
    st = find_segments(e, p, s, n, g);
  } else {
    g->n = 0;
    if (!segs_add(g, 0, n, false)) st = oom();
  }
  mx_strbuf_t map;
  mx_strbuf_init(&map);
  for (int32_t i = 0; st == MX_OK && i < g->n; i++) {
    map.len = 0;
    for (size_t k = g->v[i].s; k < g->v[i].e; k++) {
      char c[4];
      int m = mx_tok_byte_utf8((uint8_t)s[k], c);
      mx_strbuf_append(&map, c, (size_t)m);
    }
    if (map.oom || !plist_add(out, map.data, map.len, -1, at_origin && g->v[i].s == 0)) st = oom();
  }
  mx_strbuf_free(&map);
  mx_strbuf_free(&pre);
  return st;
}

static mx_status_t metaspace_piece(const enc_t *e, const mx_tok_pretok_t *p, const char *s,
                                   size_t n, bool at_origin, segs_t *g, plist_t *out) {
  mx_strbuf_t r;
  mx_strbuf_init(&r);
  bool starts = n >= (size_t)p->repl_len && memcmp(s, p->repl, (size_t)p->repl_len) == 0;
  bool starts_space = n > 0 && s[0] == ' ';  // becomes the replacement below
  bool prepend = !starts && !starts_space &&
                 (p->prepend == MX_PREPEND_ALWAYS || (p->prepend == MX_PREPEND_FIRST && at_origin));
  if (prepend) mx_strbuf_append(&r, p->repl, (size_t)p->repl_len);
  for (size_t i = 0; i < n; i++) {
    if (s[i] == ' ') {
      mx_strbuf_append(&r, p->repl, (size_t)p->repl_len);
    } else {
      mx_strbuf_append(&r, s + i, 1);
    }
  }
  mx_status_t st = r.oom ? oom() : MX_OK;
  if (st == MX_OK && !p->split) {
    if (!plist_add(out, r.data, r.len, -1, at_origin)) st = oom();
  } else if (st == MX_OK) {
    // Split on the replacement char, each one starting a new piece (MergedWithNext).
    mx_tok_pretok_t sp = {.kind = MX_PRETOK_SPLIT,
                          .str = p->repl,
                          .str_len = (size_t)p->repl_len,
                          .behavior = MX_SPLIT_MERGED_NEXT};
    st = split_piece(e, &sp, r.data ? r.data : "", r.len, at_origin, g, out);
  }
  mx_strbuf_free(&r);
  return st;
}

static mx_status_t pretokenize(const enc_t *e, plist_t *in, plist_t *tmp) {
  segs_t g = {0};
  mx_status_t st = MX_OK;
  for (int32_t k = 0; k < e->t->n_pretoks && st == MX_OK; k++) {
    const mx_tok_pretok_t *p = &e->t->pretoks[k];
    tmp->n = 0;
    tmp->buf.len = 0;
    for (int32_t i = 0; i < in->n && st == MX_OK; i++) {
      piece_t pc = in->p[i];
      if (pc.id >= 0) {
        if (!plist_add(tmp, NULL, 0, pc.id, false)) st = oom();
        continue;
      }
      const char *s = in->buf.data + pc.off;
      switch (p->kind) {
        case MX_PRETOK_SPLIT:
          st = split_piece(e, p, s, pc.len, pc.at_origin, &g, tmp);
          break;
        case MX_PRETOK_BYTELEVEL:
          st = bytelevel_piece(e, p, s, pc.len, pc.at_origin, &g, tmp);
          break;
        case MX_PRETOK_METASPACE:
          st = metaspace_piece(e, p, s, pc.len, pc.at_origin, &g, tmp);
          break;
      }
    }
    plist_t sw = *in;
    *in = *tmp;
    *tmp = sw;
  }
  free(g.v);
  return st;
}

static bool add_id(enc_t *e, int32_t id) {
  if (e->n_ids == e->cap_ids) {
    int32_t ncap = e->cap_ids ? e->cap_ids * 2 : 64;
    int32_t *na = realloc(e->ids, (size_t)ncap * sizeof *na);
    if (!na) return false;
    e->ids = na;
    e->cap_ids = ncap;
  }
  e->ids[e->n_ids++] = id;
  return true;
}

// One text segment between raw-matched added tokens.
static mx_status_t encode_segment(enc_t *e, const char *s, size_t n, bool origin, plist_t *a,
                                  plist_t *b, mx_strbuf_t *norm) {
  mx_status_t st = mx_tok_normalize(e->t, s, n, norm);
  if (st != MX_OK) return st;
  a->n = 0;
  a->buf.len = 0;
  if (e->t->any_normalized_added) {
    st = split_added(e, norm->data, norm->len, true, origin, a);
  } else if (norm->len > 0 && !plist_add(a, norm->data, norm->len, -1, origin)) {
    st = oom();
  }
  if (st == MX_OK) st = pretokenize(e, a, b);
  for (int32_t i = 0; st == MX_OK && i < a->n; i++) {
    const piece_t *pc = &a->p[i];
    if (pc->id >= 0) {
      if (!add_id(e, pc->id)) st = oom();
    } else if (!mx_tok_bpe_word(e->t, a->buf.data + pc->off, pc->len, &e->ids, &e->n_ids,
                                &e->cap_ids)) {
      st = oom();
    }
  }
  return st;
}

mx_status_t mx_tokenizer_encode(const mx_tokenizer_t *tok, const char *text, size_t len,
                                const mx_encode_opts_t *opts, int32_t **ids, int32_t *n) {
  if (!tok || !ids || !n || (!text && len)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_tokenizer_encode: NULL argument");
  }
  *ids = NULL;
  *n = 0;
  if (len > (size_t)INT32_MAX / 2) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_tokenizer_encode: text of %zu bytes is too long",
                        len);
  }
  if (len && !mx_utf8_valid(text, len)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_tokenizer_encode: text is not valid UTF-8");
  }
  mx_encode_opts_t o =
      opts ? *opts : (mx_encode_opts_t){.add_special = true, .parse_special = true};
  enc_t e = {.t = tok,
             .parse_special = o.parse_special,
             .plain = o.n_plain > 0 ? o.plain : NULL,
             .n_plain = o.plain && o.n_plain > 0 ? o.n_plain : 0};
  e.md = pcre2_match_data_create(32, NULL);
  plist_t top = {0}, a = {0}, b = {0};
  mx_strbuf_t norm;
  mx_strbuf_init(&norm);
  mx_status_t st = e.md ? MX_OK : oom();
  if (st == MX_OK) st = split_added(&e, text ? text : "", len, false, true, &top);
  if (st == MX_OK && o.add_special) {
    for (int32_t i = 0; i < tok->n_post_prefix && st == MX_OK; i++) {
      if (!add_id(&e, tok->post_prefix[i])) st = oom();
    }
  }
  for (int32_t i = 0; st == MX_OK && i < top.n; i++) {
    const piece_t *pc = &top.p[i];
    if (pc->id >= 0) {
      if (!add_id(&e, pc->id)) st = oom();
    } else {
      st = encode_segment(&e, top.buf.data + pc->off, pc->len, pc->at_origin, &a, &b, &norm);
    }
  }
  if (st == MX_OK && o.add_special) {
    for (int32_t i = 0; i < tok->n_post_suffix && st == MX_OK; i++) {
      if (!add_id(&e, tok->post_suffix[i])) st = oom();
    }
  }
  pcre2_match_data_free(e.md);
  plist_free(&top);
  plist_free(&a);
  plist_free(&b);
  mx_strbuf_free(&norm);
  if (st != MX_OK) {
    free(e.ids);
    return st;
  }
  if (e.n_ids == 0) {
    free(e.ids);
    e.ids = NULL;
  }
  *ids = e.ids;
  *n = e.n_ids;
  return MX_OK;
}
