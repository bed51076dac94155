// Decoding: the tokenizer.json decoder chain over a whole id list (Hugging Face semantics), and
// a streaming decoder that applies the same chain one token at a time.
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

// A list of strings in one buffer.
typedef struct slist {
  mx_strbuf_t buf;
  size_t *off, *len;
  int32_t n, cap;
} slist_t;

static bool sl_begin(slist_t *l) {  // starts a new string at the end of buf
  if (l->n == l->cap) {
    int32_t ncap = l->cap ? l->cap * 2 : 64;
    size_t *no = realloc(l->off, (size_t)ncap * sizeof *no);
    if (!no) return false;
    l->off = no;
    size_t *nl = realloc(l->len, (size_t)ncap * sizeof *nl);
    if (!nl) return false;
    l->len = nl;
    l->cap = ncap;
  }
  l->off[l->n] = l->buf.len;
  l->len[l->n] = 0;
  l->n++;
  return true;
}

static void sl_end(slist_t *l) { l->len[l->n - 1] = l->buf.len - l->off[l->n - 1]; }

static void sl_reset(slist_t *l) {
  l->n = 0;
  l->buf.len = 0;
}

static void sl_free(slist_t *l) {
  mx_strbuf_free(&l->buf);
  free(l->off);
  free(l->len);
}

// Bytes of a byte-level token: every char through the GPT-2 table, or the raw UTF-8 when some
// char is not in the table (added tokens such as "<|im_end|>\n").
static void bytelevel_bytes(const char *s, size_t n, mx_strbuf_t *out) {
  size_t mark = out->len, i = 0;
  while (i < n) {
    uint32_t cp;
    int k = mx_utf8_decode((const uint8_t *)s + i, n - i, &cp);
    int b = k > 0 ? mx_tok_char_byte(cp) : -1;
    if (b < 0) {
      out->len = mark;
      mx_strbuf_append(out, s, n);
      return;
    }
    char c = (char)b;
    mx_strbuf_append(out, &c, 1);
    i += (size_t)k;
  }
}

#define MX_STREAM_PIECE_MAX 320  // a streamed piece longer than this becomes U+FFFD

// Fixed-capacity byte buffer for one token's text.
typedef struct fbuf {
  char d[MX_STREAM_PIECE_MAX];
  size_t n;
  bool over;
} fbuf_t;

static void fb_put(fbuf_t *b, const char *s, size_t n) {
  if (b->n + n > sizeof b->d) {
    b->over = true;
    return;
  }
  memcpy(b->d + b->n, s, n);
  b->n += n;
}

// Where the per-token decoders write: the whole-text decoder's heap buffer, or the streaming
// decoder's fixed buffer (streaming must not allocate).
typedef struct sink {
  mx_strbuf_t *sb;
  fbuf_t *fb;
} sink_t;

static void put(sink_t *o, const char *s, size_t n) {
  if (o->sb) {
    mx_strbuf_append(o->sb, s, n);
  } else {
    fb_put(o->fb, s, n);
  }
}

static int parse_byte_token(const char *s, size_t n) {
  if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; i++) {
    char c = s[i];
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                     : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

static void metaspace_token(const mx_tok_dec_t *d, const char *s, size_t n, bool first,
                            sink_t *out) {
  size_t i = 0, run = 0;
  while (i + d->a_len <= n) {
    if (memcmp(s + i, d->a, d->a_len) == 0) {
      put(out, s + run, i - run);
      if (!(first && d->prepend != MX_PREPEND_NEVER)) put(out, " ", 1);
      i += d->a_len;
      run = i;
    } else {
      i++;
    }
  }
  put(out, s + run, n - run);
}

// A Replace decoder with a string pattern (regex patterns: mx_tok_replace_regex).
static void replace_token(const mx_tok_dec_t *d, const char *s, size_t n, sink_t *out) {
  size_t i = 0, run = 0;
  while (i + d->a_len <= n) {
    if (memcmp(s + i, d->a, d->a_len) == 0) {
      put(out, s + run, i - run);
      put(out, d->b, d->b_len);
      i += d->a_len;
      run = i;
    } else {
      i++;
    }
  }
  put(out, s + run, n - run);
}

// Removes up to `start` leading and `stop` trailing copies of the content char.
static void strip_token(const mx_tok_dec_t *d, const char *s, size_t n, sink_t *out) {
  size_t a = 0, b = n, cl = d->a_len;
  for (int32_t k = 0; k < d->start && a + cl <= b && memcmp(s + a, d->a, cl) == 0; k++) a += cl;
  for (int32_t k = 0; k < d->stop && b >= a + cl && memcmp(s + b - cl, d->a, cl) == 0; k++) b -= cl;
  put(out, s + a, b - a);
}

// Byte-fallback: runs of <0xNN> tokens become their bytes when those are valid UTF-8, else one
// U+FFFD per byte token.
static bool flush_bytes(slist_t *o, const uint8_t *bytes, size_t nb) {
  if (nb == 0) return true;
  if (mx_utf8_valid((const char *)bytes, nb)) {
    if (!sl_begin(o)) return false;
    mx_strbuf_append(&o->buf, (const char *)bytes, nb);
    sl_end(o);
    return true;
  }
  for (size_t k = 0; k < nb; k++) {
    if (!sl_begin(o)) return false;
    mx_strbuf_append(&o->buf, "\xEF\xBF\xBD", 3);
    sl_end(o);
  }
  return true;
}

static bool apply_decoder(const mx_tok_dec_t *d, const slist_t *in, slist_t *o) {
  sl_reset(o);
  const char *base = in->buf.data ? in->buf.data : "";
  switch (d->kind) {
    case MX_DEC_BYTELEVEL: {
      mx_strbuf_t bytes;
      mx_strbuf_init(&bytes);
      for (int32_t i = 0; i < in->n; i++) bytelevel_bytes(base + in->off[i], in->len[i], &bytes);
      bool ok = !bytes.oom && sl_begin(o);
      if (ok) mx_utf8_append_lossy(&o->buf, (const uint8_t *)bytes.data, bytes.len);
      if (ok) sl_end(o);
      mx_strbuf_free(&bytes);
      return ok;
    }
    case MX_DEC_FUSE:
      if (!sl_begin(o)) return false;
      for (int32_t i = 0; i < in->n; i++) mx_strbuf_append(&o->buf, base + in->off[i], in->len[i]);
      sl_end(o);
      return true;
    case MX_DEC_BYTEFALLBACK: {
      uint8_t *run = malloc((size_t)in->n + 1);
      if (!run) return false;
      size_t nb = 0;
      bool ok = true;
      for (int32_t i = 0; ok && i < in->n; i++) {
        int b = parse_byte_token(base + in->off[i], in->len[i]);
        if (b >= 0) {
          run[nb++] = (uint8_t)b;
          continue;
        }
        ok = flush_bytes(o, run, nb) && sl_begin(o);
        nb = 0;
        if (ok) {
          mx_strbuf_append(&o->buf, base + in->off[i], in->len[i]);
          sl_end(o);
        }
      }
      ok = ok && flush_bytes(o, run, nb);
      free(run);
      return ok;
    }
    default:
      break;
  }
  sink_t sk = {&o->buf, NULL};
  for (int32_t i = 0; i < in->n; i++) {
    if (!sl_begin(o)) return false;
    const char *s = base + in->off[i];
    switch (d->kind) {
      case MX_DEC_METASPACE:
        metaspace_token(d, s, in->len[i], i == 0, &sk);
        break;
      case MX_DEC_REPLACE:
        if (d->re) {
          if (mx_tok_replace_regex(d->re, s, in->len[i], d->b, d->b_len, &o->buf) != MX_OK)
            return false;
        } else {
          replace_token(d, s, in->len[i], &sk);
        }
        break;
      case MX_DEC_STRIP:
        strip_token(d, s, in->len[i], &sk);
        break;
      default:
        break;
    }
    sl_end(o);
  }
  return true;
}

mx_status_t mx_tokenizer_decode(const mx_tokenizer_t *tok, const int32_t *ids, int32_t n,
                                bool skip_special, char **text, size_t *len) {
  if (!tok || !text || (!ids && n > 0) || n < 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_tokenizer_decode: bad argument");
  }
  *text = NULL;
  if (len) *len = 0;
  slist_t a = {0}, b = {0};
  mx_strbuf_append(&a.buf, "", 0);
  mx_strbuf_append(&b.buf, "", 0);
  bool ok = true;
  for (int32_t i = 0; i < n; i++) {
    int32_t id = ids[i];
    if (id < 0 || id >= tok->n_ids || !tok->entries[id].piece) {
      sl_free(&a);
      sl_free(&b);
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "mx_tokenizer_decode: id %d (position %d) is not a "
                          "token (vocabulary size %d)",
                          id, i, tok->n_ids);
    }
    if (skip_special && tok->entries[id].special) continue;
    ok = ok && sl_begin(&a);
    if (ok) {
      if (!tok->has_decoder && a.n > 1) mx_strbuf_append(&a.buf, " ", 1);  // no decoder: join " "
      mx_strbuf_append(&a.buf, tok->entries[id].piece, tok->entries[id].len);
      sl_end(&a);
    }
  }
  for (int32_t k = 0; ok && k < tok->n_decs; k++) {
    ok = apply_decoder(&tok->decs[k], &a, &b);
    slist_t sw = a;
    a = b;
    b = sw;
  }
  mx_strbuf_t out;
  mx_strbuf_init(&out);
  mx_strbuf_append(&out, "", 0);
  for (int32_t i = 0; ok && i < a.n; i++) mx_strbuf_append(&out, a.buf.data + a.off[i], a.len[i]);
  ok = ok && !out.oom && !a.buf.oom && !b.buf.oom;
  sl_free(&a);
  sl_free(&b);
  if (!ok) {
    mx_strbuf_free(&out);
    return mx_error_set(MX_ERR_NOMEM, "mx_tokenizer_decode: out of memory");
  }
  *text = mx_strbuf_take(&out, len);
  return MX_OK;
}

// ---- streaming ----

static int32_t stream_strip_start(const mx_tokenizer_t *t) {
  bool fused = false;
  for (int32_t i = 0; i < t->n_decs; i++) {
    if (t->decs[i].kind == MX_DEC_FUSE || t->decs[i].kind == MX_DEC_BYTELEVEL) fused = true;
    if (t->decs[i].kind == MX_DEC_STRIP && fused) return t->decs[i].start;
  }
  return 0;
}

void mx_detok_stream_init(mx_detok_stream_t *st, const mx_tokenizer_t *tok, int flags) {
  memset(st, 0, sizeof *st);
  st->tok = tok;
  st->flags = flags;
  st->strip_left = (tok && !(flags & MX_DETOK_MID_TEXT)) ? stream_strip_start(tok) : 0;
}

// Runs the decoder chain on one token in streaming mode: Fuse joins nothing (tokens are
// concatenated anyway); a Strip after the text is fused only strips the start of the stream.
static void stream_token(mx_detok_stream_t *st, int32_t id, fbuf_t *cur) {
  const mx_tokenizer_t *t = st->tok;
  const mx_tok_entry_t *e = &t->entries[id];
  fb_put(cur, e->piece, e->len);
  bool first = st->n_tokens == 0 && !(st->flags & MX_DETOK_MID_TEXT);
  bool fused = false;
  for (int32_t k = 0; k < t->n_decs && !cur->over; k++) {
    const mx_tok_dec_t *d = &t->decs[k];
    fbuf_t nx = {.n = 0};
    sink_t sk = {NULL, &nx};
    switch (d->kind) {
      case MX_DEC_BYTELEVEL: {
        // Byte-level output is plain bytes; the bytes of a table char are at most 1 each.
        size_t i = 0;
        bool all = true;
        while (i < cur->n && all) {
          uint32_t cp;
          int kk = mx_utf8_decode((const uint8_t *)cur->d + i, cur->n - i, &cp);
          int b = kk > 0 ? mx_tok_char_byte(cp) : -1;
          if (b < 0) {
            all = false;
          } else {
            char c = (char)b;
            fb_put(&nx, &c, 1);
            i += (size_t)kk;
          }
        }
        if (!all) {
          nx.n = 0;
          fb_put(&nx, cur->d, cur->n);
        }
        fused = true;
        *cur = nx;
        continue;
      }
      case MX_DEC_BYTEFALLBACK: {
        int b = parse_byte_token(cur->d, cur->n);
        if (b >= 0) {
          cur->d[0] = (char)b;
          cur->n = 1;
        }
        continue;
      }
      case MX_DEC_FUSE:
        fused = true;
        continue;
      case MX_DEC_METASPACE:
        metaspace_token(d, cur->d, cur->n, first, &sk);
        break;
      case MX_DEC_REPLACE:
        if (d->re) {  // the one streaming step that allocates (PCRE2 match data, a buffer)
          mx_strbuf_t tmp;
          mx_strbuf_init(&tmp);
          if (mx_tok_replace_regex(d->re, cur->d, cur->n, d->b, d->b_len, &tmp) != MX_OK || tmp.oom)
            nx.over = true;
          else
            fb_put(&nx, tmp.data ? tmp.data : "", tmp.len);
          mx_strbuf_free(&tmp);
        } else {
          replace_token(d, cur->d, cur->n, &sk);
        }
        break;
      case MX_DEC_STRIP:
        if (!fused) {
          strip_token(d, cur->d, cur->n, &sk);
          break;
        }
        {
          size_t a = 0;
          while (st->strip_left > 0 && a + d->a_len <= cur->n &&
                 memcmp(cur->d + a, d->a, d->a_len) == 0) {
            a += d->a_len;
            st->strip_left--;
          }
          if (a < cur->n) st->strip_left = 0;  // the stream has real text now
          memmove(cur->d, cur->d + a, cur->n - a);
          cur->n -= a;
        }
        continue;
    }
    *cur = nx;
  }
}

// Appends bytes to st->out as complete UTF-8: invalid sequences become U+FFFD, an unfinished
// character at the end waits in st->pending.
static size_t emit_utf8(mx_detok_stream_t *st, const char *s, size_t n, size_t o) {
  uint8_t buf[MX_STREAM_PIECE_MAX + 4];
  size_t m = 0;
  memcpy(buf, st->pending, (size_t)st->n_pending);
  m = (size_t)st->n_pending;
  memcpy(buf + m, s, n);
  m += n;
  st->n_pending = 0;
  size_t i = 0;
  while (i < m) {
    uint32_t cp;
    int k = buf[i] < 0x80 ? 1 : mx_utf8_decode(buf + i, m - i, &cp);
    if (k > 0) {
      memcpy(st->out + o, buf + i, (size_t)k);
      o += (size_t)k;
      i += (size_t)k;
      continue;
    }
    int inc = mx_utf8_incomplete_len(buf + i, m - i);
    if (inc > 0) {  // could still complete: hold back
      memcpy(st->pending, buf + i, (size_t)inc);
      st->n_pending = inc;
      break;
    }
    memcpy(st->out + o, "\xEF\xBF\xBD", 3);
    o += 3;
    i += (size_t)mx_utf8_subpart(buf + i, m - i);  // skip the maximal invalid subpart
  }
  return o;
}

const char *mx_detok_stream_push(mx_detok_stream_t *st, int32_t id, size_t *len) {
  size_t o = 0;
  const mx_tokenizer_t *t = st->tok;
  if (!t || id < 0 || id >= t->n_ids || !t->entries[id].piece) {
    o = emit_utf8(st, "\xEF\xBF\xBD", 3, 0);
  } else if (!((st->flags & MX_DETOK_SKIP_SPECIAL) && t->entries[id].special)) {
    fbuf_t cur = {.n = 0};
    stream_token(st, id, &cur);
    st->n_tokens++;
    if (cur.over) {
      cur.n = 0;
      cur.over = false;
      fb_put(&cur, "\xEF\xBF\xBD", 3);
    }
    o = emit_utf8(st, cur.d, cur.n, 0);
  }
  st->out[o] = '\0';
  if (len) *len = o;
  return st->out;
}

const char *mx_detok_stream_flush(mx_detok_stream_t *st, size_t *len) {
  size_t o = 0;
  if (st->n_pending > 0) {
    memcpy(st->out, "\xEF\xBF\xBD", 3);
    o = 3;
  }
  st->out[o] = '\0';
  if (len) *len = o;
  st->n_pending = 0;
  st->n_tokens = 0;
  st->strip_left = (st->tok && !(st->flags & MX_DETOK_MID_TEXT)) ? stream_strip_start(st->tok) : 0;
  return st->out;
}

int32_t mx_tokenizer_token_bytes(const mx_tokenizer_t *tok, int32_t id, char *buf, size_t cap) {
  if (!tok || id < 0 || id >= tok->n_ids || !tok->entries[id].piece) return -1;
  mx_detok_stream_t st;
  mx_detok_stream_init(&st, tok, MX_DETOK_MID_TEXT);
  fbuf_t cur = {.n = 0};
  stream_token(&st, id, &cur);
  if (cur.over || cur.n > cap) return -1;
  memcpy(buf, cur.d, cur.n);
  return (int32_t)cur.n;
}
