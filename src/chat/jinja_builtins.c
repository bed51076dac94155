// Jinja builtins: attribute lookup, string/dict methods, global functions (range, namespace,
// raise_exception, dict, strftime_now), filters and tests.
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja.h"

jj_value_t jj_call_macro_value(jj_ctx_t *x, uint32_t pos, jj_value_t f, jj_value_t *args, int32_t n,
                               const char **kw_names, jj_value_t *kw_vals, int32_t n_kw);

enum { F_RANGE, F_NAMESPACE, F_RAISE, F_DICT, F_STRFTIME };
static const char *const kFuncNames[] = {"range", "namespace", "raise_exception", "dict",
                                         "strftime_now"};

bool jj_builtin_func(const char *name, jj_value_t *out) {
  for (int i = 0; i < (int)(sizeof kFuncNames / sizeof kFuncNames[0]); i++) {
    if (strcmp(name, kFuncNames[i]) == 0) {
      *out = (jj_value_t){.t = JV_FUNC};
      out->u.func = i;
      return true;
    }
  }
  return false;
}

static bool streq(const char *a, const char *b) { return strcmp(a, b) == 0; }

static bool in_list(const char *name, const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (streq(name, names[i])) return true;
  }
  return false;
}

static const char *const kStrMethods[] = {
    "strip",      "lstrip",  "rstrip",  "split",      "startswith", "endswith", "upper",
    "lower",      "replace", "title",   "capitalize", "find",       "count",    "join",
    "splitlines", "isdigit", "isalpha", "isspace",    "rsplit"};
static const char *const kDictMethods[] = {"items", "keys", "values", "get"};

static jj_value_t method(jj_ctx_t *x, jj_value_t self, const char *name) {
  jj_value_t v = {.t = JV_METHOD};
  v.u.m = jj_alloc(x, sizeof *v.u.m);
  v.u.m->self = self;
  v.u.m->name = name;
  return v;
}

jj_value_t jj_get_attr(jj_ctx_t *x, uint32_t pos, jj_value_t v, const char *name) {
  switch (v.t) {
    case JV_UNDEF:
      if (v.u.undef_name)
        jj_fail(x, pos, "'%s' is undefined (reading '.%s')", v.u.undef_name, name);
      jj_fail(x, pos, "cannot read '.%s' of an undefined value", name);
    case JV_DICT: {
      if (!v.u.dict->is_namespace &&
          in_list(name, kDictMethods, sizeof kDictMethods / sizeof kDictMethods[0])) {
        return method(x, v, name);
      }
      jj_value_t *r = jj_dict_get(v.u.dict, name, strlen(name));
      return r ? *r : jj_undef(NULL);
    }
    case JV_STR:
      if (in_list(name, kStrMethods, sizeof kStrMethods / sizeof kStrMethods[0])) {
        return method(x, v, name);
      }
      return jj_undef(NULL);
    case JV_LOOP: {
      const jj_loop_t *l = v.u.loop;
      if (streq(name, "index")) return jj_int(l->index0 + 1);
      if (streq(name, "index0")) return jj_int(l->index0);
      if (streq(name, "revindex")) return jj_int(l->length - l->index0);
      if (streq(name, "revindex0")) return jj_int(l->length - l->index0 - 1);
      if (streq(name, "first")) return jj_bool(l->index0 == 0);
      if (streq(name, "last")) return jj_bool(l->index0 == l->length - 1);
      if (streq(name, "length")) return jj_int(l->length);
      if (streq(name, "previtem")) {
        return l->index0 > 0 ? l->items->v[l->index0 - 1] : jj_undef("loop.previtem");
      }
      if (streq(name, "nextitem")) {
        return l->index0 + 1 < l->length ? l->items->v[l->index0 + 1] : jj_undef("loop.nextitem");
      }
      if (streq(name, "cycle")) return method(x, v, "cycle");
      return jj_undef(NULL);
    }
    default:
      return jj_undef(NULL);
  }
}

jj_value_t jj_iter_list(jj_ctx_t *x, uint32_t pos, jj_value_t v) {
  switch (v.t) {
    case JV_LIST:
      return v;
    case JV_UNDEF:
      return jj_list_new(x, 0);
    case JV_DICT: {
      jj_value_t l = jj_list_new(x, v.u.dict->n);
      for (int32_t i = 0; i < v.u.dict->n; i++) jj_list_push(x, &l, v.u.dict->k[i]);
      return l;
    }
    case JV_STR: {
      jj_value_t l = jj_list_new(x, 0);
      const char *s = v.u.str.s;
      size_t n = v.u.str.n;
      for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && ((unsigned char)s[j] & 0xC0) == 0x80) j++;
        jj_list_push(x, &l, jj_str_ref(s + i, j - i));
        i = j;
      }
      return l;
    }
    default:
      jj_fail(x, pos, "%s is not iterable", jj_type_name(v));
  }
}

// ---- Argument helpers ----
static jj_value_t arg(jj_value_t *args, int32_t n, const char **kw_names, jj_value_t *kw_vals,
                      int32_t n_kw, int32_t i, const char *name) {
  for (int32_t k = 0; k < n_kw; k++) {
    if (streq(kw_names[k], name)) return kw_vals[k];
  }
  return i >= 0 && i < n ? args[i] : jj_undef(NULL);
}

static bool present(jj_value_t v) { return v.t != JV_UNDEF; }

static jj_value_t want_str(jj_ctx_t *x, uint32_t pos, jj_value_t v, const char *what) {
  if (v.t != JV_STR) jj_fail(x, pos, "%s must be a string, not %s", what, jj_type_name(v));
  return v;
}

static int64_t want_int(jj_ctx_t *x, uint32_t pos, jj_value_t v, const char *what) {
  if (v.t == JV_INT) return v.u.i;
  if (v.t == JV_BOOL) return v.u.b;
  jj_fail(x, pos, "%s must be an integer, not %s", what, jj_type_name(v));
}

static bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static jj_value_t strip(jj_ctx_t *x, uint32_t pos, jj_value_t s, jj_value_t chars, bool left,
                        bool right) {
  const char *p = s.u.str.s;
  size_t a = 0, b = s.u.str.n;
  bool ws = chars.t == JV_UNDEF || chars.t == JV_NONE;
  if (!ws) want_str(x, pos, chars, "strip characters");
#define STRIPPABLE(c) (ws ? is_ws(c) : memchr(chars.u.str.s, (c), chars.u.str.n) != NULL)
  if (left) {
    while (a < b && STRIPPABLE(p[a])) a++;
  }
  if (right) {
    while (b > a && STRIPPABLE(p[b - 1])) b--;
  }
#undef STRIPPABLE
  return jj_str_ref(p + a, b - a);
}

static jj_value_t map_case(jj_ctx_t *x, jj_value_t s, int mode) {  // 0 lower 1 upper 2 title 3 cap
  jj_value_t r = jj_str(x, s.u.str.s, s.u.str.n);
  char *d = (char *)r.u.str.s;
  bool word_start = true;
  for (size_t i = 0; i < r.u.str.n; i++) {
    unsigned char c = (unsigned char)d[i];
    bool alpha = isalpha(c) != 0;
    switch (mode) {
      case 0:
        d[i] = (char)tolower(c);
        break;
      case 1:
        d[i] = (char)toupper(c);
        break;
      case 2:
        d[i] = (char)(word_start ? toupper(c) : tolower(c));
        word_start = !(alpha || isdigit(c) || c >= 0x80 || c == '\'');
        break;
      default:
        d[i] = (char)(i == 0 ? toupper(c) : tolower(c));
    }
  }
  return r;
}

static jj_value_t str_replace(jj_ctx_t *x, uint32_t pos, jj_value_t s, jj_value_t old,
                              jj_value_t rep, int64_t count) {
  want_str(x, pos, old, "replace: old");
  rep = jj_to_string(x, rep);
  mx_strbuf_t *sb = jj_tmp_begin(x);
  const char *p = s.u.str.s;
  size_t n = s.u.str.n, on = old.u.str.n, i = 0;
  int64_t done = 0;
  if (on == 0) {  // Python inserts the replacement around every character
    for (; i <= n; i++) {
      if (count < 0 || done < count) {
        mx_strbuf_append(sb, rep.u.str.s, rep.u.str.n);
        done++;
      }
      if (i < n) mx_strbuf_append(sb, p + i, 1);
      if (sb->len > JJ_MAX_OUTPUT) break;
    }
  } else {
    while (i <= n && sb->len <= JJ_MAX_OUTPUT) {
      int64_t at = count < 0 || done < count ? jj_find(p, n, old.u.str.s, on, i) : -1;
      size_t end = at < 0 ? n : (size_t)at;
      mx_strbuf_append(sb, p + i, end - i);
      if (at < 0) break;
      mx_strbuf_append(sb, rep.u.str.s, rep.u.str.n);
      done++;
      i = end + on;
    }
  }
  if (sb->len > JJ_MAX_OUTPUT || sb->oom) {
    jj_fail(x, pos, "replace: result over %u MiB (limit)", JJ_MAX_OUTPUT >> 20);
  }
  jj_value_t r = jj_tmp_end(x);
  return r;
}

static jj_value_t str_split(jj_ctx_t *x, uint32_t pos, jj_value_t s, jj_value_t sep,
                            int64_t maxsplit) {
  jj_value_t out = jj_list_new(x, 0);
  const char *p = s.u.str.s;
  size_t n = s.u.str.n;
  if (sep.t == JV_UNDEF || sep.t == JV_NONE) {  // runs of whitespace, no empty pieces
    size_t i = 0;
    int64_t k = 0;
    while (i < n) {
      while (i < n && is_ws(p[i])) i++;
      if (i >= n) break;
      size_t j = i;
      if (maxsplit >= 0 && k >= maxsplit) {
        j = n;
        while (j > i && is_ws(p[j - 1])) j--;
      } else {
        while (j < n && !is_ws(p[j])) j++;
      }
      jj_list_push(x, &out, jj_str_ref(p + i, j - i));
      k++;
      i = j;
    }
    return out;
  }
  want_str(x, pos, sep, "split separator");
  size_t sn = sep.u.str.n;
  if (sn == 0) jj_fail(x, pos, "split: empty separator");
  size_t start = 0;
  int64_t k = 0;
  while (maxsplit < 0 || k < maxsplit) {
    int64_t at = jj_find(p, n, sep.u.str.s, sn, start);
    if (at < 0) break;
    jj_list_push(x, &out, jj_str_ref(p + start, (size_t)at - start));
    k++;
    start = (size_t)at + sn;
  }
  jj_list_push(x, &out, jj_str_ref(p + start, n - start));
  return out;
}

static bool affix(jj_ctx_t *x, uint32_t pos, jj_value_t s, jj_value_t a, bool end) {
  if (a.t == JV_LIST) {
    for (int32_t i = 0; i < a.u.list->n; i++) {
      if (affix(x, pos, s, a.u.list->v[i], end)) return true;
    }
    return false;
  }
  want_str(x, pos, a, end ? "endswith argument" : "startswith argument");
  if (a.u.str.n > s.u.str.n) return false;
  const char *p = end ? s.u.str.s + s.u.str.n - a.u.str.n : s.u.str.s;
  return memcmp(p, a.u.str.s, a.u.str.n) == 0;
}

static jj_value_t items_of(jj_ctx_t *x, jj_value_t d) {
  jj_value_t out = jj_list_new(x, d.u.dict->n);
  for (int32_t i = 0; i < d.u.dict->n; i++) {
    jj_value_t pair = jj_list_new(x, 2);
    jj_list_push(x, &pair, d.u.dict->k[i]);
    jj_list_push(x, &pair, d.u.dict->v[i]);
    jj_list_push(x, &out, pair);
  }
  return out;
}

static jj_value_t join(jj_ctx_t *x, uint32_t pos, jj_value_t seq, jj_value_t sep, jj_value_t attr) {
  jj_value_t l = jj_iter_list(x, pos, seq);
  jj_value_t s = sep.t == JV_UNDEF ? jj_str_ref("", 0) : jj_to_string(x, sep);
  mx_strbuf_t *sb = jj_tmp_begin(x);
  for (int32_t i = 0; i < l.u.list->n; i++) {
    if (i) mx_strbuf_append(sb, s.u.str.s, s.u.str.n);
    jj_value_t it = l.u.list->v[i];
    if (attr.t == JV_STR) it = jj_get_attr(x, pos, it, jj_cstr(x, attr));
    jj_append_str(sb, it);
    if (sb->len > JJ_MAX_OUTPUT) {
      jj_fail(x, pos, "join: result over %u MiB (limit)", JJ_MAX_OUTPUT >> 20);
    }
  }
  jj_value_t r = jj_tmp_end(x);
  return r;
}

static jj_value_t call_method(jj_ctx_t *x, uint32_t pos, jj_method_t *m, jj_value_t *args,
                              int32_t n, const char **kn, jj_value_t *kv, int32_t nk) {
  jj_value_t s = m->self;
  const char *name = m->name;
#define A(i, nm) arg(args, n, kn, kv, nk, i, nm)
  if (s.t == JV_STR) {
    if (streq(name, "strip")) return strip(x, pos, s, A(0, "chars"), true, true);
    if (streq(name, "lstrip")) return strip(x, pos, s, A(0, "chars"), true, false);
    if (streq(name, "rstrip")) return strip(x, pos, s, A(0, "chars"), false, true);
    if (streq(name, "split") || streq(name, "rsplit")) {
      jj_value_t ms = A(1, "maxsplit");
      if (streq(name, "rsplit") && present(ms))
        jj_fail(x, pos, "rsplit with maxsplit is not supported");
      return str_split(x, pos, s, A(0, "sep"), present(ms) ? want_int(x, pos, ms, "maxsplit") : -1);
    }
    if (streq(name, "splitlines")) {
      jj_value_t out = str_split(x, pos, s, jj_str_ref("\n", 1), -1);
      if (out.u.list->n > 0 && out.u.list->v[out.u.list->n - 1].u.str.n == 0) out.u.list->n--;
      return out;
    }
    if (streq(name, "startswith")) return jj_bool(affix(x, pos, s, A(0, "prefix"), false));
    if (streq(name, "endswith")) return jj_bool(affix(x, pos, s, A(0, "suffix"), true));
    if (streq(name, "upper")) return map_case(x, s, 1);
    if (streq(name, "lower")) return map_case(x, s, 0);
    if (streq(name, "title")) return map_case(x, s, 2);
    if (streq(name, "capitalize")) return map_case(x, s, 3);
    if (streq(name, "replace")) {
      jj_value_t c = A(2, "count");
      return str_replace(x, pos, s, A(0, "old"), A(1, "new"),
                         present(c) ? want_int(x, pos, c, "count") : -1);
    }
    if (streq(name, "find") || streq(name, "count")) {
      jj_value_t sub = want_str(x, pos, A(0, "sub"), name);
      int64_t at = jj_find(s.u.str.s, s.u.str.n, sub.u.str.s, sub.u.str.n, 0);
      if (streq(name, "find")) return jj_int(at < 0 ? -1 : jj_utf8_len(s.u.str.s, (size_t)at));
      if (sub.u.str.n == 0) return jj_int(jj_utf8_len(s.u.str.s, s.u.str.n) + 1);
      int64_t cnt = 0;
      while (at >= 0) {
        cnt++;
        at = jj_find(s.u.str.s, s.u.str.n, sub.u.str.s, sub.u.str.n, (size_t)at + sub.u.str.n);
      }
      return jj_int(cnt);
    }
    if (streq(name, "join")) return join(x, pos, A(0, "iterable"), s, jj_undef(NULL));
    if (streq(name, "isdigit") || streq(name, "isalpha") || streq(name, "isspace")) {
      if (s.u.str.n == 0) return jj_bool(false);
      for (size_t i = 0; i < s.u.str.n; i++) {
        unsigned char c = (unsigned char)s.u.str.s[i];
        bool ok = name[2] == 'd'   ? isdigit(c) != 0
                  : name[2] == 'a' ? isalpha(c) != 0
                                   : is_ws((char)c);
        if (!ok) return jj_bool(false);
      }
      return jj_bool(true);
    }
  }
  if (s.t == JV_DICT) {
    if (streq(name, "items")) return items_of(x, s);
    if (streq(name, "keys")) return jj_iter_list(x, pos, s);
    if (streq(name, "values")) {
      jj_value_t out = jj_list_new(x, s.u.dict->n);
      for (int32_t i = 0; i < s.u.dict->n; i++) jj_list_push(x, &out, s.u.dict->v[i]);
      return out;
    }
    if (streq(name, "get")) {
      jj_value_t *r = jj_dict_get_v(s.u.dict, A(0, "key"));
      if (r) return *r;
      jj_value_t d = A(1, "default");
      return present(d) ? d : jj_none();
    }
  }
  if (s.t == JV_LOOP && streq(name, "cycle")) {
    if (n == 0) jj_fail(x, pos, "loop.cycle needs at least one argument");
    return args[s.u.loop->index0 % n];
  }
#undef A
  jj_fail(x, pos, "%s has no method '%s'", jj_type_name(s), name);
}

static jj_value_t make_namespace(jj_ctx_t *x, uint32_t pos, jj_value_t *args, int32_t n,
                                 const char **kn, jj_value_t *kv, int32_t nk) {
  jj_value_t d = jj_dict_new(x, nk);
  for (int32_t i = 0; i < n; i++) {
    if (args[i].t != JV_DICT) jj_fail(x, pos, "namespace() positional arguments must be dicts");
    for (int32_t k = 0; k < args[i].u.dict->n; k++) {
      jj_dict_set(x, &d, args[i].u.dict->k[k], args[i].u.dict->v[k]);
    }
  }
  for (int32_t k = 0; k < nk; k++) {
    jj_dict_set(x, &d, jj_str_ref(kn[k], strlen(kn[k])), kv[k]);
  }
  return d;
}

jj_value_t jj_call_value(jj_ctx_t *x, uint32_t pos, jj_value_t f, jj_value_t *args, int32_t n,
                         const char **kn, jj_value_t *kv, int32_t nk) {
  if (f.t == JV_METHOD) return call_method(x, pos, f.u.m, args, n, kn, kv, nk);
  if (f.t == JV_MACRO) return jj_call_macro_value(x, pos, f, args, n, kn, kv, nk);
  if (f.t != JV_FUNC) {
    if (f.t == JV_UNDEF && f.u.undef_name) {
      jj_fail(x, pos, "'%s' is undefined (called as a function)", f.u.undef_name);
    }
    jj_fail(x, pos, "%s is not callable", jj_type_name(f));
  }
  switch (f.u.func) {
    case F_RANGE: {
      int64_t a = 0, b = 0, st = 1;
      if (n == 1) {
        b = want_int(x, pos, args[0], "range argument");
      } else if (n == 2 || n == 3) {
        a = want_int(x, pos, args[0], "range argument");
        b = want_int(x, pos, args[1], "range argument");
        if (n == 3) st = want_int(x, pos, args[2], "range step");
      } else {
        jj_fail(x, pos, "range() takes 1 to 3 arguments, %d given", n);
      }
      if (st == 0) jj_fail(x, pos, "range() step must not be zero");
      jj_value_t out = jj_list_new(x, 0);
      for (int64_t i = a; st > 0 ? i < b : i > b; i += st) {
        if (out.u.list->n >= JJ_MAX_STEPS) {
          jj_fail(x, pos, "range() longer than %d items (limit)", JJ_MAX_STEPS);
        }
        jj_list_push(x, &out, jj_int(i));
      }
      return out;
    }
    case F_NAMESPACE: {
      jj_value_t d = make_namespace(x, pos, args, n, kn, kv, nk);
      d.u.dict->is_namespace = true;
      return d;
    }
    case F_DICT:
      return make_namespace(x, pos, args, n, kn, kv, nk);
    case F_RAISE: {
      jj_value_t msg = n > 0 ? jj_to_string(x, args[0]) : jj_str_ref("", 0);
      jj_fail(x, pos, "raise_exception: %.*s", (int)(msg.u.str.n > 400 ? 400 : msg.u.str.n),
              msg.u.str.s);
    }
    case F_STRFTIME: {
      jj_value_t fmt = want_str(x, pos, n > 0 ? args[0] : jj_undef(NULL), "strftime_now format");
      char fbuf[256], out[512];
      snprintf(fbuf, sizeof fbuf, "%.*s", (int)fmt.u.str.n, fmt.u.str.s);
      time_t now = time(NULL);
      struct tm tmv;
      localtime_r(&now, &tmv);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
      size_t k = strftime(out, sizeof out, fbuf, &tmv);  // the template's own format
#pragma GCC diagnostic pop
      return jj_str(x, out, k);
    }
    default:
      jj_fail(x, pos, "internal error: unknown builtin");
  }
}

// ---- Filters ----
static jj_value_t to_int(jj_ctx_t *x, jj_value_t v, jj_value_t dflt) {
  (void)x;
  switch (v.t) {
    case JV_INT:
      return v;
    case JV_BOOL:
      return jj_int(v.u.b);
    case JV_FLOAT:
      if (v.u.f != v.u.f || v.u.f >= 9.2e18 || v.u.f <= -9.2e18) return dflt;
      return jj_int((int64_t)v.u.f);
    case JV_STR: {
      char buf[64];
      if (v.u.str.n == 0 || v.u.str.n >= sizeof buf) return dflt;
      memcpy(buf, v.u.str.s, v.u.str.n);
      buf[v.u.str.n] = 0;
      char *end = NULL;
      long long i = strtoll(buf, &end, 10);
      while (end && is_ws(*end)) end++;
      if (end && *end == 0) return jj_int(i);
      double f = strtod(buf, &end);
      while (end && is_ws(*end)) end++;
      if (end && *end == 0 && f == f && f < 9.2e18 && f > -9.2e18) return jj_int((int64_t)f);
      return dflt;
    }
    default:
      return dflt;
  }
}

static bool run_test(jj_ctx_t *x, uint32_t pos, jj_value_t item, jj_value_t *args, int32_t n) {
  if (n == 0) return jj_truthy(item);
  jj_value_t name = want_str(x, pos, args[0], "test name");
  return jj_apply_test(x, pos, jj_cstr(x, name), item, args + 1, n - 1);
}

static jj_value_t select_items(jj_ctx_t *x, uint32_t pos, jj_value_t seq, jj_value_t *args,
                               int32_t n, bool by_attr, bool keep) {
  jj_value_t l = jj_iter_list(x, pos, seq);
  jj_value_t out = jj_list_new(x, 0);
  for (int32_t i = 0; i < l.u.list->n; i++) {
    jj_value_t it = l.u.list->v[i], probe = it;
    bool r;
    if (by_attr) {
      if (n < 1) jj_fail(x, pos, "selectattr/rejectattr need an attribute name");
      jj_value_t a = want_str(x, pos, args[0], "attribute name");
      probe = jj_get_attr(x, pos, it, jj_cstr(x, a));
      r = run_test(x, pos, probe, args + 1, n - 1);
    } else {
      r = run_test(x, pos, probe, args, n);
    }
    if (r == keep) jj_list_push(x, &out, it);
  }
  return out;
}

static void sort_list(jj_ctx_t *x, uint32_t pos, jj_value_t *v, int32_t n, jj_value_t attr,
                      bool reverse) {
  if (n < 2) return;
  jj_value_t *keys = jj_alloc(x, (size_t)n * sizeof *keys);
  jj_value_t *orig = jj_alloc(x, (size_t)n * sizeof *orig);
  int32_t *idx = jj_alloc(x, (size_t)n * sizeof *idx);
  const char *name = attr.t == JV_STR ? jj_cstr(x, attr) : NULL;
  for (int32_t i = 0; i < n; i++) {
    orig[i] = v[i];
    keys[i] = name ? jj_get_attr(x, pos, v[i], name) : v[i];
    idx[i] = i;
  }
  jj_sort_index(x, pos, keys, idx, n, reverse);
  for (int32_t i = 0; i < n; i++) v[i] = orig[idx[i]];
}

jj_value_t jj_apply_filter(jj_ctx_t *x, uint32_t pos, const char *f, jj_value_t v, jj_value_t *args,
                           int32_t n, const char **kn, jj_value_t *kv, int32_t nk) {
#define A(i, nm) arg(args, n, kn, kv, nk, i, nm)
  if (streq(f, "default") || streq(f, "d")) {
    jj_value_t dv = A(0, "default_value");
    bool boolean = jj_truthy(A(1, "boolean"));
    if (v.t == JV_UNDEF || (boolean && !jj_truthy(v))) return present(dv) ? dv : jj_str_ref("", 0);
    return v;
  }
  if (streq(f, "safe")) return v;
  // An undefined value filters like Jinja's Undefined: "" as a string, empty as a sequence.
  if (streq(f, "trim")) {
    jj_value_t s = jj_to_string(x, v);
    return strip(x, pos, s, A(0, "chars"), true, true);
  }
  if (streq(f, "tojson")) {
    jj_value_t ind = A(0, "indent");
    int indent = -1;
    if (present(ind) && ind.t != JV_NONE) indent = (int)want_int(x, pos, ind, "tojson indent");
    if (indent > 64) indent = 64;
    if (v.t == JV_UNDEF) {
      jj_fail(x, pos, "tojson: '%s' is undefined", v.u.undef_name ? v.u.undef_name : "value");
    }
    mx_strbuf_t *sb = jj_tmp_begin(x);
    jj_append_json(x, pos, sb, v, indent, jj_truthy(A(2, "sort_keys")), 0);
    jj_value_t r = jj_tmp_end(x);
    return r;
  }
  if (streq(f, "length") || streq(f, "count")) {
    switch (v.t) {
      case JV_STR:
        return jj_int(jj_utf8_len(v.u.str.s, v.u.str.n));
      case JV_LIST:
        return jj_int(v.u.list->n);
      case JV_DICT:
        return jj_int(v.u.dict->n);
      case JV_UNDEF:
        return jj_int(0);
      default:
        jj_fail(x, pos, "object of type %s has no length", jj_type_name(v));
    }
  }
  if (streq(f, "upper")) return map_case(x, jj_to_string(x, v), 1);
  if (streq(f, "lower")) return map_case(x, jj_to_string(x, v), 0);
  if (streq(f, "title")) return map_case(x, jj_to_string(x, v), 2);
  if (streq(f, "capitalize")) return map_case(x, jj_to_string(x, v), 3);
  if (streq(f, "replace")) {
    jj_value_t c = A(2, "count");
    return str_replace(x, pos, jj_to_string(x, v), A(0, "old"), A(1, "new"),
                       present(c) && c.t != JV_NONE ? want_int(x, pos, c, "count") : -1);
  }
  if (streq(f, "join")) return join(x, pos, v, A(0, "d"), A(1, "attribute"));
  if (streq(f, "first") || streq(f, "last")) {
    jj_value_t l = jj_iter_list(x, pos, v);
    if (l.u.list->n == 0) return jj_undef(NULL);
    return l.u.list->v[f[0] == 'f' ? 0 : l.u.list->n - 1];
  }
  if (streq(f, "list")) {
    jj_value_t l = jj_iter_list(x, pos, v);
    jj_value_t out = jj_list_new(x, l.u.list->n);
    for (int32_t i = 0; i < l.u.list->n; i++) jj_list_push(x, &out, l.u.list->v[i]);
    return out;
  }
  if (streq(f, "string")) return jj_to_string(x, v);
  if (streq(f, "int")) {
    jj_value_t d = A(0, "default");
    return to_int(x, v, present(d) ? d : jj_int(0));
  }
  if (streq(f, "float")) {
    if (v.t == JV_FLOAT) return v;
    if (v.t == JV_INT || v.t == JV_BOOL) return jj_float((double)(v.t == JV_INT ? v.u.i : v.u.b));
    if (v.t == JV_STR && v.u.str.n > 0 && v.u.str.n < 64) {
      char buf[64], *end = NULL;
      memcpy(buf, v.u.str.s, v.u.str.n);
      buf[v.u.str.n] = 0;
      double d = strtod(buf, &end);
      if (end && *end == 0) return jj_float(d);
    }
    jj_value_t d = A(0, "default");
    return present(d) ? d : jj_float(0.0);
  }
  if (streq(f, "abs")) {
    if (v.t == JV_INT) return jj_int(v.u.i < 0 ? -v.u.i : v.u.i);
    if (v.t == JV_FLOAT) return jj_float(v.u.f < 0 ? -v.u.f : v.u.f);
    jj_fail(x, pos, "abs: %s is not a number", jj_type_name(v));
  }
  if (streq(f, "items")) {
    if (v.t == JV_UNDEF) return jj_list_new(x, 0);
    if (v.t != JV_DICT) jj_fail(x, pos, "items: %s is not a mapping", jj_type_name(v));
    return items_of(x, v);
  }
  if (streq(f, "selectattr")) return select_items(x, pos, v, args, n, true, true);
  if (streq(f, "rejectattr")) return select_items(x, pos, v, args, n, true, false);
  if (streq(f, "select")) return select_items(x, pos, v, args, n, false, true);
  if (streq(f, "reject")) return select_items(x, pos, v, args, n, false, false);
  if (streq(f, "map")) {
    jj_value_t l = jj_iter_list(x, pos, v);
    jj_value_t out = jj_list_new(x, l.u.list->n);
    jj_value_t attr = A(-1, "attribute");
    for (int32_t i = 0; i < l.u.list->n; i++) {
      jj_value_t it = l.u.list->v[i];
      if (attr.t == JV_STR) {
        it = jj_get_attr(x, pos, it, jj_cstr(x, attr));
        jj_value_t d = A(-1, "default");
        if (it.t == JV_UNDEF && present(d)) it = d;
      } else if (n > 0) {
        jj_value_t fname = want_str(x, pos, args[0], "map filter name");
        it = jj_apply_filter(x, pos, jj_cstr(x, fname), it, args + 1, n - 1, NULL, NULL, 0);
      } else {
        jj_fail(x, pos, "map needs a filter name or attribute=");
      }
      jj_list_push(x, &out, it);
    }
    return out;
  }
  if (streq(f, "reverse")) {
    if (v.t == JV_STR) {
      jj_value_t l = jj_iter_list(x, pos, v);
      mx_strbuf_t *sb = jj_tmp_begin(x);
      for (int32_t i = l.u.list->n - 1; i >= 0; i--) jj_append_str(sb, l.u.list->v[i]);
      jj_value_t r = jj_tmp_end(x);
      return r;
    }
    jj_value_t l = jj_iter_list(x, pos, v);
    jj_value_t out = jj_list_new(x, l.u.list->n);
    for (int32_t i = l.u.list->n - 1; i >= 0; i--) jj_list_push(x, &out, l.u.list->v[i]);
    return out;
  }
  if (streq(f, "sort")) {
    jj_value_t l = jj_iter_list(x, pos, v);
    jj_value_t out = jj_list_new(x, l.u.list->n);
    for (int32_t i = 0; i < l.u.list->n; i++) jj_list_push(x, &out, l.u.list->v[i]);
    sort_list(x, pos, out.u.list->v, out.u.list->n, A(2, "attribute"), jj_truthy(A(0, "reverse")));
    return out;
  }
  if (streq(f, "unique")) {
    jj_value_t l = jj_iter_list(x, pos, v);
    jj_value_t out = jj_list_new(x, 0);
    jj_value_t seen = jj_dict_new(x, 0);  // hashable items: O(1) membership
    for (int32_t i = 0; i < l.u.list->n; i++) {
      jj_value_t it = l.u.list->v[i];
      bool dup = false;
      if (it.t == JV_LIST || it.t == JV_DICT) {
        if (out.u.list->n > 10000) jj_fail(x, pos, "unique: over 10000 list/dict items (limit)");
        for (int32_t k = 0; k < out.u.list->n && !dup; k++) dup = jj_equal(out.u.list->v[k], it);
      } else if (it.t != JV_STR && it.t != JV_INT && it.t != JV_FLOAT && it.t != JV_BOOL &&
                 it.t != JV_NONE) {
        jj_fail(x, pos, "unique: unhashable %s", jj_type_name(it));
      } else {
        dup = jj_dict_get_v(seen.u.dict, it) != NULL;
        if (!dup) jj_dict_set(x, &seen, it, jj_none());
      }
      if (!dup) jj_list_push(x, &out, it);
    }
    return out;
  }
  if (streq(f, "indent")) {
    jj_value_t s = jj_to_string(x, v);
    jj_value_t w = A(0, "width");
    int64_t width = present(w) ? want_int(x, pos, w, "indent width") : 4;
    if (width < 0 || width > 256) jj_fail(x, pos, "indent width out of range");
    bool first = jj_truthy(A(1, "first")), blank = jj_truthy(A(2, "blank"));
    mx_strbuf_t *sb = jj_tmp_begin(x);
    bool line_start = true;
    for (size_t i = 0; i < s.u.str.n; i++) {
      char c = s.u.str.s[i];
      if (line_start && (i > 0 || first) && (blank || c != '\n')) {
        for (int64_t k = 0; k < width; k++) mx_strbuf_append(sb, " ", 1);
      }
      mx_strbuf_append(sb, &c, 1);
      line_start = c == '\n';
    }
    jj_value_t r = jj_tmp_end(x);
    return r;
  }
  if (streq(f, "escape") || streq(f, "e")) {
    jj_value_t s = jj_to_string(x, v);
    mx_strbuf_t *sb = jj_tmp_begin(x);
    for (size_t i = 0; i < s.u.str.n; i++) {
      char c = s.u.str.s[i];
      switch (c) {
        case '&':
          mx_strbuf_puts(sb, "&amp;");
          break;
        case '<':
          mx_strbuf_puts(sb, "&lt;");
          break;
        case '>':
          mx_strbuf_puts(sb, "&gt;");
          break;
        case '"':
          mx_strbuf_puts(sb, "&#34;");
          break;
        case '\'':
          mx_strbuf_puts(sb, "&#39;");
          break;
        default:
          mx_strbuf_append(sb, &c, 1);
      }
    }
    jj_value_t r = jj_tmp_end(x);
    return r;
  }
#undef A
  jj_fail(x, pos, "unknown filter '%s'", f);
}

// ---- Tests ----
bool jj_apply_test(jj_ctx_t *x, uint32_t pos, const char *t, jj_value_t v, jj_value_t *args,
                   int32_t n) {
  jj_value_t a = n > 0 ? args[0] : jj_undef(NULL);
  if (streq(t, "defined")) return v.t != JV_UNDEF;
  if (streq(t, "undefined")) return v.t == JV_UNDEF;
  if (streq(t, "none")) return v.t == JV_NONE;
  if (streq(t, "string")) return v.t == JV_STR;
  if (streq(t, "mapping")) return v.t == JV_DICT;
  if (streq(t, "iterable")) return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT;
  if (streq(t, "sequence")) return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT;
  if (streq(t, "number")) return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL;
  if (streq(t, "integer")) return v.t == JV_INT;
  if (streq(t, "float")) return v.t == JV_FLOAT;
  if (streq(t, "boolean")) return v.t == JV_BOOL;
  if (streq(t, "true")) return v.t == JV_BOOL && v.u.b;
  if (streq(t, "false")) return v.t == JV_BOOL && !v.u.b;
  if (streq(t, "callable")) return v.t == JV_FUNC || v.t == JV_METHOD || v.t == JV_MACRO;
  if (streq(t, "odd") || streq(t, "even")) {
    int64_t i = want_int(x, pos, v, "odd/even operand");
    return ((i % 2) != 0) == (t[0] == 'o');
  }
  if (streq(t, "divisibleby")) {
    int64_t d = want_int(x, pos, a, "divisibleby argument");
    if (d == 0) jj_fail(x, pos, "divisibleby 0");
    return want_int(x, pos, v, "divisibleby operand") % d == 0;
  }
  if (streq(t, "lower") || streq(t, "upper")) {
    if (v.t != JV_STR) return false;
    for (size_t i = 0; i < v.u.str.n; i++) {
      unsigned char c = (unsigned char)v.u.str.s[i];
      if (t[0] == 'l' ? isupper(c) : islower(c)) return false;
    }
    return true;
  }
  if (streq(t, "eq") || streq(t, "equalto") || streq(t, "==") || streq(t, "sameas")) {
    return jj_equal(v, a);
  }
  if (streq(t, "ne") || streq(t, "!=")) return !jj_equal(v, a);
  if (streq(t, "lt") || streq(t, "lessthan")) return jj_compare(x, pos, v, a) < 0;
  if (streq(t, "le")) return jj_compare(x, pos, v, a) <= 0;
  if (streq(t, "gt") || streq(t, "greaterthan")) return jj_compare(x, pos, v, a) > 0;
  if (streq(t, "ge")) return jj_compare(x, pos, v, a) >= 0;
  if (streq(t, "in")) {
    if (a.t == JV_LIST) {
      for (int32_t i = 0; i < a.u.list->n; i++) {
        if (jj_equal(a.u.list->v[i], v)) return true;
      }
      return false;
    }
    if (a.t == JV_DICT) return jj_dict_get_v(a.u.dict, v) != NULL;
    if (a.t == JV_STR && v.t == JV_STR) {
      return jj_find(a.u.str.s, a.u.str.n, v.u.str.s, v.u.str.n, 0) >= 0;
    }
    jj_fail(x, pos, "'in' test needs a container");
  }
  jj_fail(x, pos, "unknown test '%s'", t);
}
