// Normalizers: NFC/NFD/NFKC/NFKD (utf8proc), Lowercase, Prepend, Replace, Strip.
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tok_internal.h"

static void replace_string(const char *s, size_t n, const char *pat, size_t pn, const char *rep,
                           size_t rn, mx_strbuf_t *out) {
  size_t i = 0, run = 0;
  while (pn > 0 && i + pn <= n) {
    if (memcmp(s + i, pat, pn) == 0) {
      mx_strbuf_append(out, s + run, i - run);
      mx_strbuf_append(out, rep, rn);
      i += pn;
      run = i;
    } else {
      i++;
    }
  }
  mx_strbuf_append(out, s + run, n - run);
}

// Replaces every match of re in s (non-overlapping, empty matches skipped) with rep.
mx_status_t mx_tok_replace_regex(const pcre2_code *re, const char *s, size_t n, const char *rep,
                                 size_t rn, mx_strbuf_t *out) {
  pcre2_match_data *md = pcre2_match_data_create(16, NULL);
  if (!md) return mx_error_set(MX_ERR_NOMEM, "regex replace: out of memory");
  size_t pos = 0, run = 0;
  mx_status_t st = MX_OK;
  while (pos <= n) {
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      st = mx_error_set(MX_ERR_RUNTIME, "regex replace: PCRE2 error %d", rc);
      break;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t ms = ov[0], me = ov[1];
    if (me == ms) {  // empty match: step one character
      uint32_t cp;
      int k = pos < n ? mx_utf8_decode((const uint8_t *)s + pos, n - pos, &cp) : 1;
      pos += k > 0 ? (size_t)k : 1;
      continue;
    }
    mx_strbuf_append(out, s + run, ms - run);
    mx_strbuf_append(out, rep, rn);
    pos = run = me;
  }
  if (run < n) mx_strbuf_append(out, s + run, n - run);
  pcre2_match_data_free(md);
  return st;
}

static mx_status_t unicode_map(const char *s, size_t n, utf8proc_option_t opt, mx_strbuf_t *out) {
  if (n == 0) return MX_OK;
  utf8proc_uint8_t *dst = NULL;
  utf8proc_ssize_t r =
      utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst, UTF8PROC_STABLE | opt);
  if (r < 0) {
    free(dst);
    return mx_error_set(MX_ERR_INVALID_ARG, "normalizer: %s", utf8proc_errmsg(r));
  }
  mx_strbuf_append(out, (const char *)dst, (size_t)r);
  free(dst);
  return MX_OK;
}

static void lowercase(const char *s, size_t n, mx_strbuf_t *out) {
  size_t i = 0;
  while (i < n) {
    uint32_t cp;
    int k = mx_utf8_decode((const uint8_t *)s + i, n - i, &cp);
    if (k <= 0) {
      mx_strbuf_append(out, s + i, 1);
      i++;
      continue;
    }
    char buf[4];
    int m = mx_utf8_encode((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), buf);
    mx_strbuf_append(out, buf, (size_t)m);
    i += (size_t)k;
  }
}

static void strip(const char *s, size_t n, bool left, bool right, mx_strbuf_t *out) {
  size_t a = 0, b = n;
  while (left && a < b) {
    uint32_t cp;
    int k = mx_utf8_decode((const uint8_t *)s + a, b - a, &cp);
    if (k <= 0 || !mx_unicode_is_whitespace(cp)) break;
    a += (size_t)k;
  }
  while (right && b > a) {
    size_t c = b - 1;
    while (c > a && ((uint8_t)s[c] & 0xC0) == 0x80) c--;
    uint32_t cp;
    int k = mx_utf8_decode((const uint8_t *)s + c, b - c, &cp);
    if (k <= 0 || !mx_unicode_is_whitespace(cp)) break;
    b = c;
  }
  mx_strbuf_append(out, s + a, b - a);
}

mx_status_t mx_tok_normalize(const mx_tokenizer_t *t, const char *s, size_t n, mx_strbuf_t *sb) {
  sb->len = 0;
  mx_strbuf_append(sb, s, n);  // also guarantees sb->data != NULL
  mx_strbuf_t tmp;
  mx_strbuf_init(&tmp);
  mx_strbuf_append(&tmp, "", 0);
  mx_status_t st = MX_OK;
  bool oom = sb->oom || tmp.oom;  // sticky across the buffer swaps below
  for (int32_t i = 0; i < t->n_norms && st == MX_OK && !oom; i++) {
    const mx_tok_norm_t *nz = &t->norms[i];
    tmp.len = 0;
    const char *cur = sb->data;
    size_t cn = sb->len;
    switch (nz->kind) {
      case MX_NORM_NFC:
        st = unicode_map(cur, cn, UTF8PROC_COMPOSE, &tmp);
        break;
      case MX_NORM_NFD:
        st = unicode_map(cur, cn, UTF8PROC_DECOMPOSE, &tmp);
        break;
      case MX_NORM_NFKC:
        st = unicode_map(cur, cn, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, &tmp);
        break;
      case MX_NORM_NFKD:
        st = unicode_map(cur, cn, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, &tmp);
        break;
      case MX_NORM_LOWERCASE:
        lowercase(cur, cn, &tmp);
        break;
      case MX_NORM_PREPEND:
        if (cn > 0) mx_strbuf_append(&tmp, nz->a, nz->a_len);
        mx_strbuf_append(&tmp, cur, cn);
        break;
      case MX_NORM_REPLACE:
        if (nz->re) {
          st = mx_tok_replace_regex(nz->re, cur, cn, nz->b, nz->b_len, &tmp);
        } else {
          replace_string(cur, cn, nz->a, nz->a_len, nz->b, nz->b_len, &tmp);
        }
        break;
      case MX_NORM_STRIP:
        strip(cur, cn, nz->left, nz->right, &tmp);
        break;
    }
    oom = oom || tmp.oom;
    mx_strbuf_t sw = *sb;
    *sb = tmp;
    tmp = sw;
  }
  mx_strbuf_free(&tmp);
  if (st == MX_OK && (oom || sb->oom)) st = mx_error_set(MX_ERR_NOMEM, "normalizer: out of memory");
  return st;
}
