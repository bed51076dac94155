// Jinja values: constructors, containers, truthiness, equality, ordering and the three
// textual forms (str as printed by {{ }}, Python repr, transformers' tojson).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // memmem (the build defines it too)
#endif
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja.h"

_Noreturn void jj_fail(jj_ctx_t *x, uint32_t pos, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line = 0, col = 0;
  jj_line_col(x->src, x->src_len, pos ? pos : x->cur_pos, &line, &col);
  mx_error_set(MX_ERR_RUNTIME, "chat template %d:%d: %s", line, col, msg);
  longjmp(*x->jmp, 1);
}

void jj_check_memory(jj_ctx_t *x, uint32_t pos) {
  if (mx_arena_bytes(x->arena) > JJ_MAX_MEMORY) {
    jj_fail(x, pos, "rendering needs more than %u MiB of memory (limit)", JJ_MAX_MEMORY >> 20);
  }
}

void *jj_alloc(jj_ctx_t *x, size_t n) {
  void *p = mx_arena_alloc(x->arena, n ? n : 1);
  if (!p) jj_fail(x, 0, "out of memory");
  if (n > 4096) jj_check_memory(x, 0);
  return p;
}

jj_value_t jj_undef(const char *name) {
  jj_value_t v = {.t = JV_UNDEF};
  v.u.undef_name = name;
  return v;
}
jj_value_t jj_none(void) { return (jj_value_t){.t = JV_NONE}; }
jj_value_t jj_bool(bool b) {
  jj_value_t v = {.t = JV_BOOL};
  v.u.b = b;
  return v;
}
jj_value_t jj_int(int64_t i) {
  jj_value_t v = {.t = JV_INT};
  v.u.i = i;
  return v;
}
jj_value_t jj_float(double f) {
  jj_value_t v = {.t = JV_FLOAT};
  v.u.f = f;
  return v;
}
jj_value_t jj_str_ref(const char *s, size_t n) {
  jj_value_t v = {.t = JV_STR};
  v.u.str.s = s;
  v.u.str.n = n;
  return v;
}
jj_value_t jj_str(jj_ctx_t *x, const char *s, size_t n) {
  if (n > JJ_MAX_OUTPUT) jj_fail(x, 0, "string longer than %u MiB (limit)", JJ_MAX_OUTPUT >> 20);
  char *d = jj_alloc(x, n + 1);
  if (n) memcpy(d, s, n);
  return jj_str_ref(d, n);
}

jj_value_t jj_list_new(jj_ctx_t *x, int32_t cap) {
  jj_value_t v = {.t = JV_LIST};
  v.u.list = jj_alloc(x, sizeof *v.u.list);
  if (cap > 0) {
    v.u.list->v = jj_alloc(x, (size_t)cap * sizeof(jj_value_t));
    v.u.list->cap = cap;
  }
  return v;
}

static int32_t value_depth(jj_value_t v) {
  return v.t == JV_LIST ? v.u.list->depth : v.t == JV_DICT ? v.u.dict->depth : -1;
}

static void note_depth(jj_ctx_t *x, int32_t *depth, jj_value_t child) {
  int32_t d = value_depth(child) + 1;
  if (d > JJ_MAX_NEST) jj_fail(x, 0, "values nested deeper than %d (limit)", JJ_MAX_NEST);
  if (d > *depth) *depth = d;
}

void jj_list_push(jj_ctx_t *x, jj_value_t *list, jj_value_t v) {
  jj_list_t *l = list->u.list;
  note_depth(x, &l->depth, v);
  if (l->n == l->cap) {
    int32_t cap = l->cap ? l->cap * 2 : 4;
    if (cap > (1 << 24)) jj_fail(x, 0, "list longer than %d items (limit)", 1 << 24);
    l->v = mx_arena_grow(x->arena, l->v, (size_t)l->n, (size_t)cap, sizeof *l->v);
    if (!l->v) jj_fail(x, 0, "out of memory");
    l->cap = cap;
    jj_check_memory(x, 0);
  }
  l->v[l->n++] = v;
}

jj_value_t jj_dict_new(jj_ctx_t *x, int32_t cap) {
  jj_value_t v = {.t = JV_DICT};
  v.u.dict = jj_alloc(x, sizeof *v.u.dict);
  if (cap > 0) {
    v.u.dict->k = jj_alloc(x, (size_t)cap * sizeof(jj_value_t));
    v.u.dict->v = jj_alloc(x, (size_t)cap * sizeof(jj_value_t));
    v.u.dict->cap = cap;
  }
  return v;
}

int64_t jj_find(const char *hay, size_t n, const char *needle, size_t m, size_t from) {
  if (from > n) return -1;
  if (m == 0) return (int64_t)from;
  const char *r = memmem(hay + from, n - from, needle, m);
  return r ? (int64_t)(r - hay) : -1;
}

static uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// Consistent with jj_equal: 1, 1.0 and True hash alike. Lists and dicts are unhashable.
static bool hash_value(jj_value_t v, uint64_t *h) {
  switch (v.t) {
    case JV_STR: {
      uint64_t x = 1469598103934665603ull;
      for (size_t i = 0; i < v.u.str.n; i++) {
        x = (x ^ (unsigned char)v.u.str.s[i]) * 1099511628211ull;
      }
      *h = mix64(x);
      return true;
    }
    case JV_INT:
      *h = mix64((uint64_t)v.u.i);
      return true;
    case JV_BOOL:
      *h = mix64((uint64_t)v.u.b);
      return true;
    case JV_FLOAT: {
      double f = v.u.f;
      if (f >= -9.2e18 && f <= 9.2e18 && f == (double)(int64_t)f) {
        *h = mix64((uint64_t)(int64_t)f);
      } else {
        uint64_t bits;
        memcpy(&bits, &f, sizeof bits);
        *h = mix64(bits ^ 0x5bd1e995ull);
      }
      return true;
    }
    case JV_NONE:
    case JV_UNDEF:
      *h = 0x9e3779b97f4a7c15ull;
      return true;
    default:
      return false;
  }
}

static int32_t index_probe(const jj_dict_t *d, jj_value_t key, uint64_t h) {
  uint32_t mask = (uint32_t)d->index_cap - 1;
  for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
    int32_t slot = d->index[i];
    if (slot == 0) return -1;
    if (jj_equal(d->k[slot - 1], key)) return slot - 1;
  }
}

jj_value_t *jj_dict_get_v(const jj_dict_t *d, jj_value_t key) {
  uint64_t h = 0;
  if (d->index && hash_value(key, &h)) {
    int32_t i = index_probe(d, key, h);
    return i >= 0 ? &d->v[i] : NULL;
  }
  for (int32_t i = 0; i < d->n; i++) {
    if (jj_equal(d->k[i], key)) return &d->v[i];
  }
  return NULL;
}

jj_value_t *jj_dict_get(const jj_dict_t *d, const char *key, size_t n) {
  return jj_dict_get_v(d, jj_str_ref(key, n));
}

static void index_insert(jj_dict_t *d, int32_t entry) {
  uint64_t h = 0;
  hash_value(d->k[entry], &h);
  uint32_t mask = (uint32_t)d->index_cap - 1;
  uint32_t i = (uint32_t)h & mask;
  while (d->index[i] != 0) i = (i + 1) & mask;
  d->index[i] = entry + 1;
}

void jj_dict_set(jj_ctx_t *x, jj_value_t *dict, jj_value_t k, jj_value_t v) {
  jj_dict_t *d = dict->u.dict;
  uint64_t h = 0;
  if (!hash_value(k, &h)) jj_fail(x, 0, "unhashable dict key of type %s", jj_type_name(k));
  note_depth(x, &d->depth, v);
  jj_value_t *slot = jj_dict_get_v(d, k);
  if (slot) {
    *slot = v;
    return;
  }
  if (d->n == d->cap) {
    int32_t cap = d->cap ? d->cap * 2 : 4;
    if (cap > (1 << 22)) jj_fail(x, 0, "dict larger than %d items (limit)", 1 << 22);
    d->k = mx_arena_grow(x->arena, d->k, (size_t)d->n, (size_t)cap, sizeof *d->k);
    d->v = mx_arena_grow(x->arena, d->v, (size_t)d->n, (size_t)cap, sizeof *d->v);
    if (!d->k || !d->v) jj_fail(x, 0, "out of memory");
    d->cap = cap;
    jj_check_memory(x, 0);
  }
  d->k[d->n] = k;
  d->v[d->n] = v;
  d->n++;
  if (d->n > 8 && (int64_t)d->n * 2 > d->index_cap) {  // (re)build the index at half load
    int32_t icap = 16;
    while (icap < d->n * 4) icap *= 2;
    d->index = jj_alloc(x, (size_t)icap * sizeof *d->index);
    d->index_cap = icap;
    for (int32_t i = 0; i < d->n; i++) index_insert(d, i);
  } else if (d->index) {
    index_insert(d, d->n - 1);
  }
}

bool jj_truthy(jj_value_t v) {
  switch (v.t) {
    case JV_UNDEF:
    case JV_NONE:
      return false;
    case JV_BOOL:
      return v.u.b;
    case JV_INT:
      return v.u.i != 0;
    case JV_FLOAT:
      return v.u.f != 0.0;
    case JV_STR:
      return v.u.str.n > 0;
    case JV_LIST:
      return v.u.list->n > 0;
    case JV_DICT:
      return v.u.dict->n > 0;
    default:
      return true;
  }
}

static bool is_num(jj_value_t v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double num_f(jj_value_t v) {
  return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : (double)v.u.b;
}
static int64_t num_i(jj_value_t v) { return v.t == JV_INT ? v.u.i : (int64_t)v.u.b; }

static bool equal_d(jj_value_t a, jj_value_t b, int depth);
bool jj_equal(jj_value_t a, jj_value_t b) { return equal_d(a, b, 0); }

// Values may be cyclic through namespaces (`set ns.x = ns`): recursion stops at JJ_MAX_NEST.
static bool equal_d(jj_value_t a, jj_value_t b, int depth) {
  if (depth > JJ_MAX_NEST) return false;
  if (is_num(a) && is_num(b)) {
    if (a.t == JV_FLOAT || b.t == JV_FLOAT) return num_f(a) == num_f(b);
    return num_i(a) == num_i(b);
  }
  if (a.t != b.t) return false;
  switch (a.t) {
    case JV_UNDEF:
    case JV_NONE:
      return true;
    case JV_STR:
      return a.u.str.n == b.u.str.n && memcmp(a.u.str.s, b.u.str.s, a.u.str.n) == 0;
    case JV_LIST:
      if (a.u.list->n != b.u.list->n) return false;
      for (int32_t i = 0; i < a.u.list->n; i++) {
        if (!equal_d(a.u.list->v[i], b.u.list->v[i], depth + 1)) return false;
      }
      return true;
    case JV_DICT:
      if (a.u.dict == b.u.dict) return true;
      if (a.u.dict->n != b.u.dict->n) return false;
      for (int32_t i = 0; i < a.u.dict->n; i++) {
        jj_value_t *o = jj_dict_get_v(b.u.dict, a.u.dict->k[i]);
        if (!o || !equal_d(a.u.dict->v[i], *o, depth + 1)) return false;
      }
      return true;
    case JV_FUNC:
      return a.u.func == b.u.func;
    case JV_MACRO:
      return a.u.macro == b.u.macro;
    default:
      return false;
  }
}

static int compare_d(jj_ctx_t *x, uint32_t pos, jj_value_t a, jj_value_t b, int depth);
int jj_compare(jj_ctx_t *x, uint32_t pos, jj_value_t a, jj_value_t b) {
  return compare_d(x, pos, a, b, 0);
}

static int compare_d(jj_ctx_t *x, uint32_t pos, jj_value_t a, jj_value_t b, int depth) {
  if (depth > JJ_MAX_NEST) jj_fail(x, pos, "comparison nested deeper than %d", JJ_MAX_NEST);
  if (is_num(a) && is_num(b)) {
    if (a.t == JV_FLOAT || b.t == JV_FLOAT) {
      double fa = num_f(a), fb = num_f(b);
      return fa < fb ? -1 : fa > fb ? 1 : 0;
    }
    int64_t ia = num_i(a), ib = num_i(b);
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  }
  if (a.t == JV_STR && b.t == JV_STR) {
    size_t n = a.u.str.n < b.u.str.n ? a.u.str.n : b.u.str.n;
    int c = n ? memcmp(a.u.str.s, b.u.str.s, n) : 0;
    if (c) return c < 0 ? -1 : 1;
    return a.u.str.n < b.u.str.n ? -1 : a.u.str.n > b.u.str.n ? 1 : 0;
  }
  if (a.t == JV_LIST && b.t == JV_LIST) {
    int32_t n = a.u.list->n < b.u.list->n ? a.u.list->n : b.u.list->n;
    for (int32_t i = 0; i < n; i++) {
      int c = compare_d(x, pos, a.u.list->v[i], b.u.list->v[i], depth + 1);
      if (c) return c;
    }
    return a.u.list->n < b.u.list->n ? -1 : a.u.list->n > b.u.list->n ? 1 : 0;
  }
  jj_fail(x, pos, "cannot compare %s with %s", jj_type_name(a), jj_type_name(b));
}

const char *jj_type_name(jj_value_t v) {
  switch (v.t) {
    case JV_UNDEF:
      return "undefined";
    case JV_NONE:
      return "none";
    case JV_BOOL:
      return "bool";
    case JV_INT:
      return "int";
    case JV_FLOAT:
      return "float";
    case JV_STR:
      return "string";
    case JV_LIST:
      return "list";
    case JV_DICT:
      return v.u.dict->is_namespace ? "namespace" : "dict";
    case JV_FUNC:
    case JV_METHOD:
    case JV_MACRO:
      return "function";
    case JV_LOOP:
      return "loop";
  }
  return "?";
}

// Python's float repr: the shortest digits that round-trip, fixed notation for exponents in
// [-4, 16), otherwise d.ddde+XX.
void jj_format_float(double f, char *buf, size_t cap) {
  if (isnan(f)) {
    snprintf(buf, cap, "nan");
    return;
  }
  if (isinf(f)) {
    snprintf(buf, cap, f < 0 ? "-inf" : "inf");
    return;
  }
  char e[40];
  for (int prec = 0; prec < 17; prec++) {
    snprintf(e, sizeof e, "%.*e", prec, f);
    if (strtod(e, NULL) == f) break;
  }
  // e = [-]d[.ddd]e[+-]XX
  const char *s = e;
  bool neg = *s == '-';
  if (neg) s++;
  char digits[24];
  int nd = 0;
  for (; *s && *s != 'e'; s++) {
    if (*s >= '0' && *s <= '9' && nd < 23) digits[nd++] = *s;
  }
  int exp = atoi(s + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = 0;
  char out[64];
  size_t k = 0;
  if (neg) out[k++] = '-';
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out[k++] = '0';
      out[k++] = '.';
      for (int i = 0; i < -exp - 1; i++) out[k++] = '0';
      for (int i = 0; i < nd; i++) out[k++] = digits[i];
    } else {
      for (int i = 0; i <= exp; i++) out[k++] = i < nd ? digits[i] : '0';
      out[k++] = '.';
      if (nd > exp + 1) {
        for (int i = exp + 1; i < nd; i++) out[k++] = digits[i];
      } else {
        out[k++] = '0';
      }
    }
    out[k] = 0;
  } else {
    out[k++] = digits[0];
    if (nd > 1) {
      out[k++] = '.';
      for (int i = 1; i < nd; i++) out[k++] = digits[i];
    }
    snprintf(out + k, sizeof out - k, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  }
  snprintf(buf, cap, "%s", out);
}

static void repr_d(mx_strbuf_t *sb, jj_value_t v, int depth);
void jj_append_repr(mx_strbuf_t *sb, jj_value_t v) { repr_d(sb, v, 0); }

static void repr_d(mx_strbuf_t *sb, jj_value_t v, int depth) {
  if (depth > JJ_MAX_NEST || sb->len > JJ_MAX_OUTPUT) {  // cyclic or huge: cut short
    mx_strbuf_puts(sb, "...");
    return;
  }
  if (v.t == JV_STR) {
    const char *s = v.u.str.s;
    size_t n = v.u.str.n;
    bool has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    mx_strbuf_append(sb, &q, 1);
    for (size_t i = 0; i < n; i++) {
      unsigned char ch = (unsigned char)s[i];
      if (ch == (unsigned char)q || ch == '\\') {
        char e[2] = {'\\', (char)ch};
        mx_strbuf_append(sb, e, 2);
      } else if (ch == '\n') {
        mx_strbuf_puts(sb, "\\n");
      } else if (ch == '\r') {
        mx_strbuf_puts(sb, "\\r");
      } else if (ch == '\t') {
        mx_strbuf_puts(sb, "\\t");
      } else if (ch < 0x20 || ch == 0x7F) {
        mx_strbuf_printf(sb, "\\x%02x", ch);
      } else {
        mx_strbuf_append(sb, (const char *)&s[i], 1);
      }
    }
    mx_strbuf_append(sb, &q, 1);
    return;
  }
  if (v.t == JV_LIST) {
    mx_strbuf_puts(sb, "[");
    for (int32_t i = 0; i < v.u.list->n; i++) {
      if (i) mx_strbuf_puts(sb, ", ");
      repr_d(sb, v.u.list->v[i], depth + 1);
    }
    mx_strbuf_puts(sb, "]");
    return;
  }
  if (v.t == JV_DICT) {
    mx_strbuf_puts(sb, v.u.dict->is_namespace ? "<Namespace {" : "{");
    for (int32_t i = 0; i < v.u.dict->n; i++) {
      if (i) mx_strbuf_puts(sb, ", ");
      repr_d(sb, v.u.dict->k[i], depth + 1);
      mx_strbuf_puts(sb, ": ");
      repr_d(sb, v.u.dict->v[i], depth + 1);
    }
    mx_strbuf_puts(sb, v.u.dict->is_namespace ? "}>" : "}");
    return;
  }
  if (v.t == JV_UNDEF) return;
  jj_append_str(sb, v);
}

void jj_append_str(mx_strbuf_t *sb, jj_value_t v) {
  char buf[64];
  switch (v.t) {
    case JV_UNDEF:
      return;
    case JV_NONE:
      mx_strbuf_puts(sb, "None");
      return;
    case JV_BOOL:
      mx_strbuf_puts(sb, v.u.b ? "True" : "False");
      return;
    case JV_INT:
      mx_strbuf_printf(sb, "%lld", (long long)v.u.i);
      return;
    case JV_FLOAT:
      jj_format_float(v.u.f, buf, sizeof buf);
      mx_strbuf_puts(sb, buf);
      return;
    case JV_STR:
      mx_strbuf_append(sb, v.u.str.s, v.u.str.n);
      return;
    case JV_LIST:
    case JV_DICT:
      jj_append_repr(sb, v);
      return;
    case JV_LOOP:
      mx_strbuf_puts(sb, "<LoopContext>");
      return;
    default:
      mx_strbuf_puts(sb, "<function>");
      return;
  }
}

void jj_charge(jj_ctx_t *x, uint32_t pos, jj_value_t v) {
  int64_t w = 1;
  if (v.t == JV_STR) w += (int64_t)v.u.str.n;
  if (v.t == JV_LIST) w += v.u.list->n;
  if (v.t == JV_DICT) w += v.u.dict->n;
  x->work += w;
  if (x->work > JJ_MAX_WORK) {
    jj_fail(x, pos, "rendering does more than %lld units of work (limit)", (long long)JJ_MAX_WORK);
  }
}

mx_strbuf_t *jj_tmp_begin(jj_ctx_t *x) {
  jj_outbuf_t *b = x->tmp_free;
  if (b) {
    x->tmp_free = b->prev;
  } else {
    b = jj_alloc(x, sizeof *b);
  }
  mx_strbuf_init(&b->sb);
  b->prev = x->tmp;
  x->tmp = b;
  return &b->sb;
}

jj_value_t jj_tmp_end(jj_ctx_t *x) {
  jj_outbuf_t *b = x->tmp;
  if (b->sb.oom) jj_fail(x, 0, "out of memory");
  jj_value_t r = jj_str(x, b->sb.data ? b->sb.data : "", b->sb.len);  // may fail: b still listed
  mx_strbuf_free(&b->sb);
  x->tmp = b->prev;
  b->prev = x->tmp_free;
  x->tmp_free = b;
  return r;
}

const char *jj_cstr(jj_ctx_t *x, jj_value_t s) {
  char *d = jj_alloc(x, s.u.str.n + 1);
  memcpy(d, s.u.str.s, s.u.str.n);
  return d;
}

jj_value_t jj_to_string(jj_ctx_t *x, jj_value_t v) {
  if (v.t == JV_STR) return v;
  mx_strbuf_t *sb = jj_tmp_begin(x);
  jj_append_str(sb, v);
  jj_value_t r = jj_tmp_end(x);
  return r;
}

static void json_string(mx_strbuf_t *sb, const char *s, size_t n) {
  mx_strbuf_puts(sb, "\"");
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    const char *e = NULL;
    char u[8];
    switch (ch) {
      case '"':
        e = "\\\"";
        break;
      case '\\':
        e = "\\\\";
        break;
      case '\n':
        e = "\\n";
        break;
      case '\r':
        e = "\\r";
        break;
      case '\t':
        e = "\\t";
        break;
      case '\b':
        e = "\\b";
        break;
      case '\f':
        e = "\\f";
        break;
      default:
        if (ch < 0x20) {
          snprintf(u, sizeof u, "\\u%04x", ch);
          e = u;
        }
    }
    if (e) {
      mx_strbuf_append(sb, s + run, i - run);
      mx_strbuf_puts(sb, e);
      run = i + 1;
    }
  }
  mx_strbuf_append(sb, s + run, n - run);
  mx_strbuf_puts(sb, "\"");
}

static void json_indent(mx_strbuf_t *sb, int indent, int level) {
  mx_strbuf_puts(sb, "\n");
  for (int i = 0; i < indent * level; i++) mx_strbuf_puts(sb, " ");
}

// Key order for sort_keys: indexes sorted by key (string keys; insertion sort is fine for the
// sizes templates see).
void jj_sort_index(jj_ctx_t *x, uint32_t pos, const jj_value_t *keys, int32_t *idx, int32_t n,
                   bool reverse) {
  if (n < 2) return;
  int32_t *tmp = jj_alloc(x, (size_t)n * sizeof *tmp);
  for (int32_t width = 1; width < n; width *= 2) {  // bottom-up: no recursion
    for (int32_t lo = 0; lo < n; lo += 2 * width) {
      int32_t mid = lo + width < n ? lo + width : n;
      int32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      int32_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        int c = jj_compare(x, pos, keys[idx[j]], keys[idx[i]]);
        bool take_right = reverse ? c > 0 : c < 0;  // strict: ties keep the left (earlier) one
        tmp[k++] = take_right ? idx[j++] : idx[i++];
      }
      while (i < mid) tmp[k++] = idx[i++];
      while (j < hi) tmp[k++] = idx[j++];
    }
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
  }
}

static int32_t *sorted_keys(jj_ctx_t *x, uint32_t pos, const jj_dict_t *d) {
  int32_t *idx = jj_alloc(x, (size_t)(d->n ? d->n : 1) * sizeof *idx);
  for (int32_t i = 0; i < d->n; i++) idx[i] = i;
  jj_sort_index(x, pos, d->k, idx, d->n, false);
  return idx;
}

void jj_append_json(jj_ctx_t *x, uint32_t pos, mx_strbuf_t *sb, jj_value_t v, int indent,
                    bool sort_keys, int depth) {
  if (depth > JJ_MAX_DEPTH) jj_fail(x, pos, "tojson: value nested deeper than %d", JJ_MAX_DEPTH);
  if (sb->len > JJ_MAX_OUTPUT) jj_fail(x, pos, "tojson: output over %u MiB", JJ_MAX_OUTPUT >> 20);
  char buf[64];
  switch (v.t) {
    case JV_NONE:
      mx_strbuf_puts(sb, "null");
      return;
    case JV_BOOL:
      mx_strbuf_puts(sb, v.u.b ? "true" : "false");
      return;
    case JV_INT:
      mx_strbuf_printf(sb, "%lld", (long long)v.u.i);
      return;
    case JV_FLOAT:
      if (isnan(v.u.f)) {
        mx_strbuf_puts(sb, "NaN");
      } else if (isinf(v.u.f)) {
        mx_strbuf_puts(sb, v.u.f < 0 ? "-Infinity" : "Infinity");
      } else {
        jj_format_float(v.u.f, buf, sizeof buf);
        mx_strbuf_puts(sb, buf);
      }
      return;
    case JV_STR:
      json_string(sb, v.u.str.s, v.u.str.n);
      return;
    case JV_LIST: {
      const jj_list_t *l = v.u.list;
      if (l->n == 0) {
        mx_strbuf_puts(sb, "[]");
        return;
      }
      mx_strbuf_puts(sb, "[");
      for (int32_t i = 0; i < l->n; i++) {
        if (i) mx_strbuf_puts(sb, indent >= 0 ? "," : ", ");
        if (indent >= 0) json_indent(sb, indent, depth + 1);
        jj_append_json(x, pos, sb, l->v[i], indent, sort_keys, depth + 1);
      }
      if (indent >= 0) json_indent(sb, indent, depth);
      mx_strbuf_puts(sb, "]");
      return;
    }
    case JV_DICT: {
      const jj_dict_t *d = v.u.dict;
      if (d->n == 0) {
        mx_strbuf_puts(sb, "{}");
        return;
      }
      int32_t *order = sort_keys ? sorted_keys(x, pos, d) : NULL;
      mx_strbuf_puts(sb, "{");
      for (int32_t i = 0; i < d->n; i++) {
        int32_t k = order ? order[i] : i;
        if (i) mx_strbuf_puts(sb, indent >= 0 ? "," : ", ");
        if (indent >= 0) json_indent(sb, indent, depth + 1);
        jj_value_t key = d->k[k];
        if (key.t == JV_STR) {
          json_string(sb, key.u.str.s, key.u.str.n);
        } else if (key.t == JV_INT || key.t == JV_FLOAT || key.t == JV_BOOL || key.t == JV_NONE) {
          mx_strbuf_puts(sb, "\"");
          jj_append_json(x, pos, sb, key, indent, sort_keys, depth + 1);
          mx_strbuf_puts(sb, "\"");
        } else {
          jj_fail(x, pos, "tojson: keys must be strings, not %s", jj_type_name(key));
        }
        mx_strbuf_puts(sb, ": ");
        jj_append_json(x, pos, sb, d->v[k], indent, sort_keys, depth + 1);
      }
      if (indent >= 0) json_indent(sb, indent, depth);
      mx_strbuf_puts(sb, "}");
      return;
    }
    default:
      jj_fail(x, pos, "tojson: %s is not JSON serializable", jj_type_name(v));
  }
}

int64_t jj_utf8_len(const char *s, size_t n) {
  int64_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (((unsigned char)s[i] & 0xC0) != 0x80) k++;
  }
  return k;
}

size_t jj_utf8_offset(const char *s, size_t n, int64_t cp) {
  if (cp <= 0) return 0;
  int64_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (((unsigned char)s[i] & 0xC0) != 0x80) {
      if (k == cp) return i;
      k++;
    }
  }
  return n;
}
