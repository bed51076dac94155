// tokenizer.json pipeline sections: normalizer, pre_tokenizer, decoder, post_processor.
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

// Oniguruma's `\s` (Rust tokenizers) is the Unicode White_Space property; PCRE2 10.42's UCP
// `\s` also matches U+180E (White_Space until Unicode 6.3). Spell the class out so the engines
// agree whatever the PCRE2 version. Neither includes U+FEFF (JavaScript's `\s` does).
#define MX_WS_CLASS                                                                        \
  "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
  "\\x{202F}\\x{205F}\\x{3000}"

// Translates an Oniguruma pattern to PCRE2 syntax into sb. Only `\s`/`\S` differ in the
// patterns tokenizers use; everything else is copied (PCRE2 reports what it cannot compile).
static mx_status_t translate_regex(const char *p, size_t n, const char *where, mx_strbuf_t *sb) {
  int in_class = 0;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (c == '\\' && i + 1 < n) {
      char e = p[i + 1];
      if (e == 's') {
        mx_strbuf_puts(sb, in_class ? MX_WS_CLASS : "[" MX_WS_CLASS "]");
      } else if (e == 'S') {
        if (in_class) {
          return mx_error_set(MX_ERR_UNSUPPORTED, "%s: \\S inside a character class", where);
        }
        mx_strbuf_puts(sb, "[^" MX_WS_CLASS "]");
      } else {
        mx_strbuf_append(sb, p + i, 2);
      }
      i++;
      continue;
    }
    if (c == '[') {
      if (in_class && i + 1 < n && p[i + 1] == ':') {
        // POSIX class [:alpha:] inside a class: copy through to its closing ":]".
        const char *end = NULL;
        for (size_t k = i + 2; k + 1 < n; k++) {
          if (p[k] == ':' && p[k + 1] == ']') {
            end = p + k + 2;
            break;
          }
        }
        if (end) {
          mx_strbuf_append(sb, p + i, (size_t)(end - (p + i)));
          i = (size_t)(end - p) - 1;
          continue;
        }
      }
      in_class++;
      mx_strbuf_append(sb, &c, 1);
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < n && p[i + 1] == '^') mx_strbuf_append(sb, p + ++i, 1);
      if (i + 1 < n && p[i + 1] == ']') mx_strbuf_append(sb, p + ++i, 1);
      continue;
    }
    if (c == ']' && in_class) in_class--;
    mx_strbuf_append(sb, &c, 1);
  }
  return MX_OK;
}

mx_status_t mx_tok_compile_regex(const char *pattern, size_t len, const char *where,
                                 pcre2_code **out) {
  *out = NULL;
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_status_t st = translate_regex(pattern, len, where, &sb);
  if (st != MX_OK) {
    mx_strbuf_free(&sb);
    return st;
  }
  if (sb.oom) {
    mx_strbuf_free(&sb);
    return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", where);
  }
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)(sb.data ? sb.data : ""), sb.len,
                                 PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
  mx_strbuf_free(&sb);
  if (!re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return mx_error_set(MX_ERR_PARSE, "%s: bad regex \"%.*s\": %s", where,
                        (int)(len > 200 ? 200 : len), pattern, (const char *)msg);
  }
  (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);  // optional speed-up; the interpreter works
  *out = re;
  return MX_OK;
}

// ---- small JSON helpers ----
static const char *jstr(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool jbool(const cJSON *o, const char *key, bool dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
  return dflt;
}

static const char *jtype(const cJSON *o) {
  const char *t = jstr(o, "type");
  return t ? t : "";
}

static char *arena_str(mx_tokenizer_t *t, const char *s, size_t *len) {
  size_t n = strlen(s);
  if (len) *len = n;
  return mx_arena_strndup(t->arena, s, n);
}

// Reads {"String": "..."} or {"Regex": "..."}; exactly one of *str / *re is set.
static mx_status_t load_pattern(mx_tokenizer_t *t, const cJSON *o, const char *where,
                                const char **str, size_t *len, pcre2_code **re) {
  *str = NULL;
  *re = NULL;
  const cJSON *pat = cJSON_GetObjectItemCaseSensitive(o, "pattern");
  const char *s = jstr(pat, "String");
  const char *r = jstr(pat, "Regex");
  if (s) {
    if (!*s) return mx_error_set(MX_ERR_PARSE, "%s: empty string pattern", where);
    *str = arena_str(t, s, len);
    return *str ? MX_OK : mx_error_set(MX_ERR_NOMEM, "%s: out of memory", where);
  }
  if (r) return mx_tok_compile_regex(r, strlen(r), where, re);
  return mx_error_set(MX_ERR_PARSE, "%s: \"pattern\" must be {\"String\": ...} or {\"Regex\": ...}",
                      where);
}

static void *grow(void *arr, int32_t n, size_t elem) {
  // Arrays here are tiny; grow one element at a time.
  return realloc(arr, (size_t)(n + 1) * elem);
}

// ---- normalizers ----
mx_status_t mx_tok_load_normalizer(mx_tokenizer_t *t, const cJSON *j) {
  if (!j || cJSON_IsNull(j)) return MX_OK;
  if (!cJSON_IsObject(j)) return mx_error_set(MX_ERR_PARSE, "normalizer: not an object");
  const char *type = jtype(j);
  if (!strcmp(type, "Sequence")) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "normalizers");
    if (!cJSON_IsArray(list)) {
      return mx_error_set(MX_ERR_PARSE, "normalizer Sequence: \"normalizers\" is not an array");
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
      mx_status_t st = mx_tok_load_normalizer(t, it);
      if (st != MX_OK) return st;
    }
    return MX_OK;
  }
  mx_tok_norm_t n = {0};
  if (!strcmp(type, "NFC")) {
    n.kind = MX_NORM_NFC;
  } else if (!strcmp(type, "NFD")) {
    n.kind = MX_NORM_NFD;
  } else if (!strcmp(type, "NFKC")) {
    n.kind = MX_NORM_NFKC;
  } else if (!strcmp(type, "NFKD")) {
    n.kind = MX_NORM_NFKD;
  } else if (!strcmp(type, "Lowercase")) {
    n.kind = MX_NORM_LOWERCASE;
  } else if (!strcmp(type, "Prepend")) {
    n.kind = MX_NORM_PREPEND;
    const char *s = jstr(j, "prepend");
    if (!s) return mx_error_set(MX_ERR_PARSE, "normalizer Prepend: missing \"prepend\" string");
    n.a = arena_str(t, s, &n.a_len);
  } else if (!strcmp(type, "Replace")) {
    n.kind = MX_NORM_REPLACE;
    mx_status_t st = load_pattern(t, j, "normalizer Replace", &n.a, &n.a_len, &n.re);
    if (st != MX_OK) return st;
    const char *c = jstr(j, "content");
    if (!c) {
      pcre2_code_free(n.re);
      return mx_error_set(MX_ERR_PARSE, "normalizer Replace: missing \"content\" string");
    }
    n.b = arena_str(t, c, &n.b_len);
  } else if (!strcmp(type, "Strip")) {
    n.kind = MX_NORM_STRIP;
    n.left = jbool(j, "strip_left", true);
    n.right = jbool(j, "strip_right", true);
  } else {
    return mx_error_set(MX_ERR_UNSUPPORTED, "normalizer type \"%s\" is not supported", type);
  }
  mx_tok_norm_t *arr = grow(t->norms, t->n_norms, sizeof *arr);
  if (!arr) {
    pcre2_code_free(n.re);
    return mx_error_set(MX_ERR_NOMEM, "normalizer: out of memory");
  }
  t->norms = arr;
  t->norms[t->n_norms++] = n;
  return MX_OK;
}

// ---- pre-tokenizers ----
static mx_status_t parse_behavior(const char *b, mx_tok_split_behavior_t *out) {
  static const struct {
    const char *name;
    mx_tok_split_behavior_t v;
  } k[] = {{"Removed", MX_SPLIT_REMOVED},
           {"Isolated", MX_SPLIT_ISOLATED},
           {"MergedWithPrevious", MX_SPLIT_MERGED_PREV},
           {"MergedWithNext", MX_SPLIT_MERGED_NEXT},
           {"Contiguous", MX_SPLIT_CONTIGUOUS}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    if (b && !strcmp(b, k[i].name)) {
      *out = k[i].v;
      return MX_OK;
    }
  }
  return mx_error_set(MX_ERR_PARSE, "pre_tokenizer Split: unknown \"behavior\" \"%s\"",
                      b ? b : "(missing)");
}

static mx_status_t parse_prepend_scheme(const cJSON *j, mx_tok_prepend_t *out, const char *where) {
  const char *s = jstr(j, "prepend_scheme");
  if (!s) {  // older files: add_prefix_space
    *out = jbool(j, "add_prefix_space", true) ? MX_PREPEND_ALWAYS : MX_PREPEND_NEVER;
    return MX_OK;
  }
  if (!strcmp(s, "always")) {
    *out = MX_PREPEND_ALWAYS;
  } else if (!strcmp(s, "first")) {
    *out = MX_PREPEND_FIRST;
  } else if (!strcmp(s, "never")) {
    *out = MX_PREPEND_NEVER;
  } else {
    return mx_error_set(MX_ERR_PARSE, "%s: unknown prepend_scheme \"%s\"", where, s);
  }
  return MX_OK;
}

static mx_status_t push_pretok(mx_tokenizer_t *t, mx_tok_pretok_t *p) {
  mx_tok_pretok_t *arr = grow(t->pretoks, t->n_pretoks, sizeof *arr);
  if (!arr) {
    pcre2_code_free(p->re);
    return mx_error_set(MX_ERR_NOMEM, "pre_tokenizer: out of memory");
  }
  t->pretoks = arr;
  t->pretoks[t->n_pretoks++] = *p;
  return MX_OK;
}

static const char kGpt2Regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

mx_status_t mx_tok_load_pretokenizer(mx_tokenizer_t *t, const cJSON *j) {
  if (!j || cJSON_IsNull(j)) return MX_OK;
  if (!cJSON_IsObject(j)) return mx_error_set(MX_ERR_PARSE, "pre_tokenizer: not an object");
  const char *type = jtype(j);
  mx_tok_pretok_t p = {0};
  mx_status_t st;
  if (!strcmp(type, "Sequence")) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "pretokenizers");
    if (!cJSON_IsArray(list)) {
      return mx_error_set(MX_ERR_PARSE,
                          "pre_tokenizer Sequence: \"pretokenizers\" is not an array");
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
      st = mx_tok_load_pretokenizer(t, it);
      if (st != MX_OK) return st;
    }
    return MX_OK;
  }
  if (!strcmp(type, "Split")) {
    p.kind = MX_PRETOK_SPLIT;
    st = parse_behavior(jstr(j, "behavior"), &p.behavior);
    if (st != MX_OK) return st;
    p.invert = jbool(j, "invert", false);
    st = load_pattern(t, j, "pre_tokenizer Split", &p.str, &p.str_len, &p.re);
    if (st != MX_OK) return st;
    return push_pretok(t, &p);
  }
  if (!strcmp(type, "ByteLevel")) {
    p.kind = MX_PRETOK_BYTELEVEL;
    p.add_prefix_space = jbool(j, "add_prefix_space", true);
    if (jbool(j, "use_regex", true)) {
      st =
          mx_tok_compile_regex(kGpt2Regex, sizeof kGpt2Regex - 1, "pre_tokenizer ByteLevel", &p.re);
      if (st != MX_OK) return st;
    }
    p.behavior = MX_SPLIT_ISOLATED;
    return push_pretok(t, &p);
  }
  if (!strcmp(type, "Metaspace")) {
    p.kind = MX_PRETOK_METASPACE;
    const char *r = jstr(j, "replacement");
    if (!r) r = "\xE2\x96\x81";
    uint32_t cp;
    int k = mx_utf8_decode((const uint8_t *)r, strlen(r), &cp);
    if (!k || (size_t)k != strlen(r)) {
      return mx_error_set(MX_ERR_PARSE, "pre_tokenizer Metaspace: replacement must be one char");
    }
    memcpy(p.repl, r, (size_t)k);
    p.repl_len = k;
    st = parse_prepend_scheme(j, &p.prepend, "pre_tokenizer Metaspace");
    if (st != MX_OK) return st;
    p.split = jbool(j, "split", true);
    return push_pretok(t, &p);
  }
  // Pre-tokenizers that are a fixed split pattern.
  const char *re = NULL;
  p.kind = MX_PRETOK_SPLIT;
  p.behavior = MX_SPLIT_ISOLATED;
  if (!strcmp(type, "Digits")) {
    re = jbool(j, "individual_digits", false) ? "\\p{N}" : "\\p{N}+";
  } else if (!strcmp(type, "WhitespaceSplit")) {
    re = "\\s+";
    p.behavior = MX_SPLIT_REMOVED;
  } else if (!strcmp(type, "Whitespace")) {
    re = "\\w+|[^\\w\\s]+";
    p.behavior = MX_SPLIT_REMOVED;
    p.invert = true;
  } else {
    return mx_error_set(MX_ERR_UNSUPPORTED, "pre_tokenizer type \"%s\" is not supported", type);
  }
  st = mx_tok_compile_regex(re, strlen(re), "pre_tokenizer", &p.re);
  if (st != MX_OK) return st;
  return push_pretok(t, &p);
}

// ---- decoders ----
static mx_status_t push_dec(mx_tokenizer_t *t, mx_tok_dec_t *d) {
  mx_tok_dec_t *arr = grow(t->decs, t->n_decs, sizeof *arr);
  if (!arr) {
    pcre2_code_free(d->re);
    return mx_error_set(MX_ERR_NOMEM, "decoder: out of memory");
  }
  t->decs = arr;
  t->decs[t->n_decs++] = *d;
  return MX_OK;
}

mx_status_t mx_tok_load_decoder(mx_tokenizer_t *t, const cJSON *j) {
  if (!j || cJSON_IsNull(j)) return MX_OK;
  if (!cJSON_IsObject(j)) return mx_error_set(MX_ERR_PARSE, "decoder: not an object");
  t->has_decoder = true;
  const char *type = jtype(j);
  mx_tok_dec_t d = {0};
  mx_status_t st;
  if (!strcmp(type, "Sequence")) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "decoders");
    if (!cJSON_IsArray(list)) {
      return mx_error_set(MX_ERR_PARSE, "decoder Sequence: \"decoders\" is not an array");
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
      st = mx_tok_load_decoder(t, it);
      if (st != MX_OK) return st;
    }
    return MX_OK;
  }
  if (!strcmp(type, "ByteLevel")) {
    d.kind = MX_DEC_BYTELEVEL;
  } else if (!strcmp(type, "ByteFallback")) {
    d.kind = MX_DEC_BYTEFALLBACK;
  } else if (!strcmp(type, "Fuse")) {
    d.kind = MX_DEC_FUSE;
  } else if (!strcmp(type, "Metaspace")) {
    d.kind = MX_DEC_METASPACE;
    const char *r = jstr(j, "replacement");
    d.a = arena_str(t, r ? r : "\xE2\x96\x81", &d.a_len);
    st = parse_prepend_scheme(j, &d.prepend, "decoder Metaspace");
    if (st != MX_OK) return st;
  } else if (!strcmp(type, "Replace")) {
    d.kind = MX_DEC_REPLACE;
    st = load_pattern(t, j, "decoder Replace", &d.a, &d.a_len, &d.re);
    if (st != MX_OK) return st;
    const char *c = jstr(j, "content");
    if (!c) {
      pcre2_code_free(d.re);
      return mx_error_set(MX_ERR_PARSE, "decoder Replace: missing \"content\" string");
    }
    d.b = arena_str(t, c, &d.b_len);
  } else if (!strcmp(type, "Strip")) {
    d.kind = MX_DEC_STRIP;
    const char *c = jstr(j, "content");
    uint32_t cp;
    if (!c || !*c || (size_t)mx_utf8_decode((const uint8_t *)c, strlen(c), &cp) != strlen(c)) {
      return mx_error_set(MX_ERR_PARSE, "decoder Strip: \"content\" must be one character");
    }
    d.a = arena_str(t, c, &d.a_len);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "start");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "stop");
    double sv = cJSON_IsNumber(s) ? s->valuedouble : 0, ev = cJSON_IsNumber(e) ? e->valuedouble : 0;
    if (!(sv >= 0 && sv <= 1e6) || !(ev >= 0 && ev <= 1e6)) {
      return mx_error_set(MX_ERR_PARSE, "decoder Strip: start/stop out of range");
    }
    d.start = (int32_t)sv;
    d.stop = (int32_t)ev;
  } else {
    return mx_error_set(MX_ERR_UNSUPPORTED, "decoder type \"%s\" is not supported", type);
  }
  if (d.a == NULL && (d.kind == MX_DEC_METASPACE || d.kind == MX_DEC_STRIP)) {
    return mx_error_set(MX_ERR_NOMEM, "decoder: out of memory");
  }
  return push_dec(t, &d);
}

// ---- post-processors ----
static mx_status_t append_ids(int32_t **arr, int32_t *n, const int32_t *ids, int32_t k,
                              bool front) {
  if (k == 0) return MX_OK;
  int32_t *na = realloc(*arr, (size_t)(*n + k + 1) * sizeof *na);
  if (!na) return mx_error_set(MX_ERR_NOMEM, "post_processor: out of memory");
  if (front) {
    memmove(na + k, na, (size_t)*n * sizeof *na);
    memcpy(na, ids, (size_t)k * sizeof *na);
  } else {
    memcpy(na + *n, ids, (size_t)k * sizeof *na);
  }
  *arr = na;
  *n += k;
  return MX_OK;
}

static mx_status_t check_id(const mx_tokenizer_t *t, double v, const char *where, int32_t *out) {
  if (!(v >= 0 && v < t->n_ids) || v != (double)(int32_t)v || !t->entries[(int32_t)v].piece) {
    return mx_error_set(MX_ERR_PARSE, "post_processor %s: id %g is not a token", where, v);
  }
  *out = (int32_t)v;
  return MX_OK;
}

static mx_status_t load_template(mx_tokenizer_t *t, const cJSON *j) {
  const cJSON *single = cJSON_GetObjectItemCaseSensitive(j, "single");
  const cJSON *specials = cJSON_GetObjectItemCaseSensitive(j, "special_tokens");
  if (!cJSON_IsArray(single)) {
    return mx_error_set(MX_ERR_PARSE,
                        "post_processor TemplateProcessing: \"single\" is not an array");
  }
  int32_t *pre = NULL, *suf = NULL, npre = 0, nsuf = 0;
  bool seen_a = false;
  const cJSON *it;
  mx_status_t st = MX_OK;
  cJSON_ArrayForEach(it, single) {
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "SpecialToken");
    const cJSON *sq = cJSON_GetObjectItemCaseSensitive(it, "Sequence");
    if (sq) {
      if (seen_a) {
        st = mx_error_set(MX_ERR_UNSUPPORTED,
                          "post_processor TemplateProcessing: more than one $A in \"single\"");
        break;
      }
      seen_a = true;
      continue;
    }
    const char *name = jstr(sp, "id");
    const cJSON *tokdef = name ? cJSON_GetObjectItemCaseSensitive(specials, name) : NULL;
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(tokdef, "ids");
    if (!name || !cJSON_IsArray(ids)) {
      st = mx_error_set(MX_ERR_PARSE,
                        "post_processor TemplateProcessing: item \"%s\" has no special_tokens "
                        "entry with \"ids\"",
                        name ? name : "(not SpecialToken/Sequence)");
      break;
    }
    const cJSON *idv;
    cJSON_ArrayForEach(idv, ids) {
      int32_t id = -1;
      st = check_id(t, cJSON_IsNumber(idv) ? idv->valuedouble : -1, "TemplateProcessing", &id);
      if (st == MX_OK) {
        st = seen_a ? append_ids(&suf, &nsuf, &id, 1, false)
                    : append_ids(&pre, &npre, &id, 1, false);
      }
      if (st != MX_OK) break;
    }
    if (st != MX_OK) break;
  }
  if (st == MX_OK) st = append_ids(&t->post_prefix, &t->n_post_prefix, pre, npre, true);
  if (st == MX_OK) st = append_ids(&t->post_suffix, &t->n_post_suffix, suf, nsuf, false);
  free(pre);
  free(suf);
  return st;
}

// RobertaProcessing / BertProcessing: {"cls": ["<s>", 0], "sep": ["</s>", 2]}.
static mx_status_t load_cls_sep(mx_tokenizer_t *t, const cJSON *j, const char *type) {
  const cJSON *cls = cJSON_GetObjectItemCaseSensitive(j, "cls");
  const cJSON *sep = cJSON_GetObjectItemCaseSensitive(j, "sep");
  const cJSON *c1 = cJSON_GetArrayItem(cls, 1), *s1 = cJSON_GetArrayItem(sep, 1);
  if (!cJSON_IsNumber(c1) || !cJSON_IsNumber(s1)) {
    return mx_error_set(MX_ERR_PARSE, "post_processor %s: cls/sep must be [token, id]", type);
  }
  int32_t cid = -1, sid = -1;
  mx_status_t st = check_id(t, c1->valuedouble, type, &cid);
  if (st == MX_OK) st = check_id(t, s1->valuedouble, type, &sid);
  if (st == MX_OK) st = append_ids(&t->post_prefix, &t->n_post_prefix, &cid, 1, true);
  if (st == MX_OK) st = append_ids(&t->post_suffix, &t->n_post_suffix, &sid, 1, false);
  return st;
}

mx_status_t mx_tok_load_post_processor(mx_tokenizer_t *t, const cJSON *j) {
  if (!j || cJSON_IsNull(j)) return MX_OK;
  if (!cJSON_IsObject(j)) return mx_error_set(MX_ERR_PARSE, "post_processor: not an object");
  const char *type = jtype(j);
  if (!strcmp(type, "Sequence")) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "processors");
    if (!cJSON_IsArray(list)) {
      return mx_error_set(MX_ERR_PARSE, "post_processor Sequence: \"processors\" is not an array");
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
      mx_status_t st = mx_tok_load_post_processor(t, it);
      if (st != MX_OK) return st;
    }
    return MX_OK;
  }
  if (!strcmp(type, "ByteLevel")) return MX_OK;  // only trims offsets
  if (!strcmp(type, "TemplateProcessing")) return load_template(t, j);
  if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
    return load_cls_sep(t, j, type);
  }
  return mx_error_set(MX_ERR_UNSUPPORTED, "post_processor type \"%s\" is not supported", type);
}

void mx_tok_free_pipeline(mx_tokenizer_t *t) {
  for (int32_t i = 0; i < t->n_norms; i++) pcre2_code_free(t->norms[i].re);
  for (int32_t i = 0; i < t->n_pretoks; i++) pcre2_code_free(t->pretoks[i].re);
  for (int32_t i = 0; i < t->n_decs; i++) pcre2_code_free(t->decs[i].re);
  free(t->norms);
  free(t->pretoks);
  free(t->decs);
  free(t->post_prefix);
  free(t->post_suffix);
}
