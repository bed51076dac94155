// Tokenizer utilities: hash maps, UTF-8, GPT-2 byte<->unicode mapping, Unicode predicates.
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tok_internal.h"

// ---- hashing ----
uint64_t mx_tok_hash(const char *s, size_t n) {
  // FNV-1a, then a final avalanche so the low bits (the slot index) mix well.
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (uint8_t)s[i];
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

static bool strmap_resize(mx_tok_strmap_t *m, uint32_t ncap) {
  mx_tok_strmap_slot_t *ns = calloc(ncap, sizeof *ns);
  if (!ns) return false;
  for (uint32_t i = 0; i < m->cap; i++) {
    mx_tok_strmap_slot_t *s = &m->slots[i];
    if (!s->key) continue;
    uint32_t j = (uint32_t)s->hash & (ncap - 1);
    while (ns[j].key) j = (j + 1) & (ncap - 1);
    ns[j] = *s;
  }
  free(m->slots);
  m->slots = ns;
  m->cap = ncap;
  return true;
}

static bool strmap_grow(mx_tok_strmap_t *m) { return strmap_resize(m, m->cap ? m->cap * 2 : 1024); }

bool mx_tok_strmap_reserve(mx_tok_strmap_t *m, uint32_t n) {
  uint32_t cap = 1024;
  while (cap < 2 * n && cap < (1u << 30)) cap *= 2;
  return cap <= m->cap || strmap_resize(m, cap);
}

bool mx_tok_strmap_put(mx_tok_strmap_t *m, const char *key, size_t len, int32_t value,
                       int32_t *existing) {
  if (existing) *existing = -1;
  if ((m->count + 1) * 2 > m->cap && !strmap_grow(m)) return false;
  uint64_t h = mx_tok_hash(key, len);
  uint32_t j = (uint32_t)h & (m->cap - 1);
  while (m->slots[j].key) {
    mx_tok_strmap_slot_t *s = &m->slots[j];
    if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) {
      if (existing) *existing = s->value;
      return true;
    }
    j = (j + 1) & (m->cap - 1);
  }
  m->slots[j] = (mx_tok_strmap_slot_t){.key = key, .len = (uint32_t)len, .value = value, .hash = h};
  m->count++;
  return true;
}

int32_t mx_tok_strmap_get(const mx_tok_strmap_t *m, const char *key, size_t len) {
  if (!m->cap) return -1;
  uint64_t h = mx_tok_hash(key, len);
  uint32_t j = (uint32_t)h & (m->cap - 1);
  while (m->slots[j].key) {
    const mx_tok_strmap_slot_t *s = &m->slots[j];
    if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) return s->value;
    j = (j + 1) & (m->cap - 1);
  }
  return -1;
}

void mx_tok_strmap_free(mx_tok_strmap_t *m) {
  free(m->slots);
  memset(m, 0, sizeof *m);
}

static uint32_t merge_slot(uint64_t key, uint32_t cap) {
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(h >> 32) & (cap - 1);
}

static bool mergemap_resize(mx_tok_mergemap_t *m, uint32_t ncap) {
  mx_tok_merge_slot_t *ns = calloc(ncap, sizeof *ns);
  if (!ns) return false;
  for (uint32_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key) continue;
    uint32_t j = merge_slot(m->slots[i].key, ncap);
    while (ns[j].key) j = (j + 1) & (ncap - 1);
    ns[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = ns;
  m->cap = ncap;
  return true;
}

static bool mergemap_grow(mx_tok_mergemap_t *m) {
  return mergemap_resize(m, m->cap ? m->cap * 2 : 1024);
}

bool mx_tok_mergemap_reserve(mx_tok_mergemap_t *m, uint32_t n) {
  uint32_t cap = 1024;
  while (cap < 2 * n && cap < (1u << 30)) cap *= 2;
  return cap <= m->cap || mergemap_resize(m, cap);
}

// A later merge of the same pair replaces the earlier one (as a Rust HashMap collect does).
bool mx_tok_mergemap_put(mx_tok_mergemap_t *m, int32_t a, int32_t b, int32_t rank, int32_t id) {
  if ((m->count + 1) * 2 > m->cap && !mergemap_grow(m)) return false;
  uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
  uint32_t j = merge_slot(key, m->cap);
  while (m->slots[j].key && m->slots[j].key != key) j = (j + 1) & (m->cap - 1);
  if (!m->slots[j].key) m->count++;
  m->slots[j] = (mx_tok_merge_slot_t){.key = key, .rank = rank, .id = id};
  return true;
}

const mx_tok_merge_slot_t *mx_tok_mergemap_get(const mx_tok_mergemap_t *m, int32_t a, int32_t b) {
  if (!m->cap) return NULL;
  uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
  uint32_t j = merge_slot(key, m->cap);
  while (m->slots[j].key) {
    if (m->slots[j].key == key) return &m->slots[j];
    j = (j + 1) & (m->cap - 1);
  }
  return NULL;
}

void mx_tok_mergemap_free(mx_tok_mergemap_t *m) {
  free(m->slots);
  memset(m, 0, sizeof *m);
}

// ---- UTF-8 ----
int mx_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
  if (n == 0) return 0;
  uint8_t c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  int len;
  uint32_t v;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    v = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    v = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    v = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < (size_t)len) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  v = (v << 6) | (s[1] & 0x3F);
  for (int i = 2; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    v = (v << 6) | (s[i] & 0x3F);
  }
  *cp = v;
  return len;
}

int mx_utf8_encode(uint32_t cp, char out[4]) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

bool mx_utf8_valid(const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  size_t i = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      i++;
      continue;
    }
    uint32_t cp;
    int k = mx_utf8_decode(p + i, n - i, &cp);
    if (!k) return false;
    i += (size_t)k;
  }
  return true;
}

// Length of the maximal prefix of s that is a valid start of a character ("maximal subpart"),
// at least 1 for a non-empty s. Equals the full character length when complete.
int mx_utf8_subpart(const uint8_t *s, size_t n) {
  uint8_t c = s[0];
  int len;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  int k = 1;
  for (; k < len && (size_t)k < n; k++) {
    uint8_t b = s[k];
    bool ok = (k == 1) ? (b >= lo && b <= hi) : ((b & 0xC0) == 0x80);
    if (!ok) break;
  }
  return k;
}

int mx_utf8_incomplete_len(const uint8_t *s, size_t n) {
  if (n == 0 || n >= 4) return 0;
  int k = mx_utf8_subpart(s, n);
  if ((size_t)k != n) return 0;  // invalid before the end
  uint32_t cp;
  if (mx_utf8_decode(s, n, &cp)) return 0;  // complete, not incomplete
  if (s[0] < 0xC2 || s[0] > 0xF4) return 0;
  return (int)n;
}

void mx_utf8_append_lossy(mx_strbuf_t *sb, const uint8_t *s, size_t n) {
  if (n == 0) return;
  size_t i = 0, run = 0;
  while (i < n) {
    uint32_t cp;
    int k = s[i] < 0x80 ? 1 : mx_utf8_decode(s + i, n - i, &cp);
    if (k) {
      i += (size_t)k;
      continue;
    }
    mx_strbuf_append(sb, (const char *)s + run, i - run);
    mx_strbuf_append(sb, "\xEF\xBF\xBD", 3);
    i += (size_t)mx_utf8_subpart(s + i, n - i);
    run = i;
  }
  mx_strbuf_append(sb, (const char *)s + run, n - run);
}

bool mx_unicode_is_whitespace(uint32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  switch (cp) {
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool mx_unicode_is_word(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
           cp == '_';
  }
  utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
         (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

// ---- GPT-2 bytes_to_unicode ----
// Printable bytes (33..126, 161..172, 174..255) stand for themselves; the other 68 bytes map, in
// increasing order, to U+0100.. U+0143.
static uint32_t byte_to_cp(int b) {
  if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return (uint32_t)b;
  if (b <= 32) return 256u + (uint32_t)b;
  if (b <= 160) return 256u + 33u + (uint32_t)(b - 127);
  return 256u + 67u;  // 173
}

int mx_tok_char_byte(uint32_t cp) {
  if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255)) {
    return (int)cp;
  }
  if (cp < 256 || cp > 256 + 67) return -1;
  uint32_t n = cp - 256;
  if (n < 33) return (int)n;
  if (n < 67) return (int)(127 + n - 33);
  return 173;
}

int mx_tok_byte_utf8(int b, char out[4]) { return mx_utf8_encode(byte_to_cp(b), out); }
