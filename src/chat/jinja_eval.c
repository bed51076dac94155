// Jinja evaluator: expressions, statements, scopes, loops and macro calls.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jinja.h"

// ---- Scopes ----
static jj_frame_t *frame_new(jj_ctx_t *x, jj_frame_t *parent) {
  jj_frame_t *f = jj_alloc(x, sizeof *f);
  f->parent = parent;
  return f;
}

static void frame_set(jj_ctx_t *x, jj_frame_t *f, const char *name, jj_value_t v) {
  for (int32_t i = 0; i < f->n; i++) {
    if (strcmp(f->names[i], name) == 0) {
      f->vals[i] = v;
      return;
    }
  }
  if (f->n == f->cap) {
    int32_t cap = f->cap ? f->cap * 2 : 8;
    f->names =
        mx_arena_grow(x->arena, (void *)f->names, (size_t)f->n, (size_t)cap, sizeof *f->names);
    f->vals = mx_arena_grow(x->arena, f->vals, (size_t)f->n, (size_t)cap, sizeof *f->vals);
    if (!f->names || !f->vals) jj_fail(x, 0, "out of memory");
    f->cap = cap;
  }
  f->names[f->n] = name;
  f->vals[f->n] = v;
  f->n++;
}

jj_value_t jj_lookup(jj_ctx_t *x, const char *name) {
  for (jj_frame_t *f = x->scope; f; f = f->parent) {
    for (int32_t i = f->n - 1; i >= 0; i--) {
      if (strcmp(f->names[i], name) == 0) return f->vals[i];
    }
  }
  jj_value_t v;
  if (jj_builtin_func(name, &v)) return v;
  return jj_undef(name);
}

// ---- Output ----
static void emit(jj_ctx_t *x, uint32_t pos, const char *s, size_t n) {
  x->total_out += n;
  if (x->out->sb.len + n > JJ_MAX_OUTPUT || x->total_out > 4 * (size_t)JJ_MAX_OUTPUT) {
    jj_fail(x, pos, "output longer than %u MiB (limit)", JJ_MAX_OUTPUT >> 20);
  }
  mx_strbuf_append(&x->out->sb, s, n);
  if (x->out->sb.oom) jj_fail(x, pos, "out of memory");
}

static void capture_begin(jj_ctx_t *x, jj_outbuf_t *b) {
  mx_strbuf_init(&b->sb);
  b->prev = x->out;
  x->out = b;
}

// Ends a capture; returns its text as an arena string.
static jj_value_t capture_end(jj_ctx_t *x, jj_outbuf_t *b) {
  x->out = b->prev;
  jj_value_t r;
  // Copy before freeing: jj_str may fail (memory limit), which must not leak the buffer.
  char *d = mx_arena_alloc(x->arena, b->sb.len + 1);
  if (d && b->sb.len) memcpy(d, b->sb.data, b->sb.len);
  r = jj_str_ref(d ? d : "", d ? b->sb.len : 0);
  mx_strbuf_free(&b->sb);
  if (!d) jj_fail(x, 0, "out of memory");
  jj_check_memory(x, 0);
  return r;
}

// ---- Expressions ----
static int64_t step_check(jj_ctx_t *x, uint32_t pos) {
  if (++x->steps > JJ_MAX_STEPS) {
    jj_fail(x, pos, "more than %d loop iterations or calls (limit)", JJ_MAX_STEPS);
  }
  return x->steps;
}

static bool as_index(jj_value_t v, int64_t *out) {
  if (v.t == JV_INT) {
    *out = v.u.i;
    return true;
  }
  if (v.t == JV_BOOL) {
    *out = v.u.b;
    return true;
  }
  return false;
}

jj_value_t jj_get_item(jj_ctx_t *x, uint32_t pos, jj_value_t v, jj_value_t key) {
  int64_t i = 0;
  switch (v.t) {
    case JV_UNDEF:
      if (v.u.undef_name) jj_fail(x, pos, "'%s' is undefined", v.u.undef_name);
      jj_fail(x, pos, "cannot index an undefined value");
    case JV_LIST:
      if (!as_index(key, &i)) {
        if (key.t == JV_STR) return jj_get_attr(x, pos, v, jj_cstr(x, key));
        jj_fail(x, pos, "list indices must be integers, not %s", jj_type_name(key));
      }
      if (i < 0) i += v.u.list->n;
      if (i < 0 || i >= v.u.list->n) return jj_undef(NULL);
      return v.u.list->v[i];
    case JV_STR: {
      if (!as_index(key, &i)) {
        if (key.t == JV_STR) return jj_get_attr(x, pos, v, jj_cstr(x, key));
        jj_fail(x, pos, "string indices must be integers, not %s", jj_type_name(key));
      }
      int64_t n = jj_utf8_len(v.u.str.s, v.u.str.n);
      if (i < 0) i += n;
      if (i < 0 || i >= n) return jj_undef(NULL);
      size_t a = jj_utf8_offset(v.u.str.s, v.u.str.n, i);
      size_t b = jj_utf8_offset(v.u.str.s, v.u.str.n, i + 1);
      return jj_str_ref(v.u.str.s + a, b - a);
    }
    case JV_DICT: {
      jj_value_t *r = jj_dict_get_v(v.u.dict, key);
      if (r) return *r;
      if (key.t == JV_STR && !v.u.dict->is_namespace)
        return jj_get_attr(x, pos, v, jj_cstr(x, key));
      return jj_undef(NULL);
    }
    case JV_LOOP:
      if (key.t == JV_STR) return jj_get_attr(x, pos, v, jj_cstr(x, key));
      return jj_undef(NULL);
    default:
      return jj_undef(NULL);
  }
}

static int64_t slice_bound(jj_ctx_t *x, uint32_t pos, jj_value_t v, int64_t len, int64_t step,
                           bool is_start) {
  if (v.t == JV_UNDEF || v.t == JV_NONE) {
    if (step > 0) return is_start ? 0 : len;
    return is_start ? len - 1 : -1;  // -1 here means "before the first element"
  }
  int64_t i = 0;
  if (!as_index(v, &i)) jj_fail(x, pos, "slice indices must be integers or none");
  if (i < 0) {
    i += len;
    if (i < 0) i = step < 0 ? -1 : 0;
  } else if (i >= len) {
    i = step < 0 ? len - 1 : len;
  }
  return i;
}

static jj_value_t eval_slice(jj_ctx_t *x, const jj_node_t *e) {
  jj_value_t v = jj_eval(x, e->a);
  jj_value_t parts[3];
  for (int k = 0; k < 3; k++) parts[k] = e->list[k] ? jj_eval(x, e->list[k]) : jj_none();
  int64_t step = 1;
  if (parts[2].t != JV_NONE && parts[2].t != JV_UNDEF && !as_index(parts[2], &step)) {
    jj_fail(x, e->pos, "slice step must be an integer");
  }
  if (step == 0) jj_fail(x, e->pos, "slice step cannot be zero");
  if (v.t == JV_UNDEF) jj_fail(x, e->pos, "cannot slice an undefined value");
  jj_charge(x, e->pos, v);
  bool is_str = v.t == JV_STR;
  if (!is_str && v.t != JV_LIST) jj_fail(x, e->pos, "cannot slice %s", jj_type_name(v));
  int64_t len = is_str ? jj_utf8_len(v.u.str.s, v.u.str.n) : v.u.list->n;
  int64_t start = slice_bound(x, e->pos, parts[0], len, step, true);
  int64_t stop = slice_bound(x, e->pos, parts[1], len, step, false);
  if (is_str && step == 1) {
    if (stop <= start) return jj_str_ref("", 0);
    size_t a = jj_utf8_offset(v.u.str.s, v.u.str.n, start);
    size_t b = jj_utf8_offset(v.u.str.s, v.u.str.n, stop);
    return jj_str_ref(v.u.str.s + a, b - a);
  }
  if (!is_str) {
    jj_value_t out = jj_list_new(x, 0);
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      jj_list_push(x, &out, v.u.list->v[i]);
    }
    return out;
  }
  // Code-point offsets once, so any step stays linear.
  uint32_t *off = jj_alloc(x, ((size_t)len + 1) * sizeof *off);
  int64_t k = 0;
  for (size_t b = 0; b < v.u.str.n; b++) {
    if (((unsigned char)v.u.str.s[b] & 0xC0) != 0x80) off[k++] = (uint32_t)b;
  }
  off[len] = (uint32_t)v.u.str.n;
  mx_strbuf_t *sb = jj_tmp_begin(x);
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    mx_strbuf_append(sb, v.u.str.s + off[i], off[i + 1] - off[i]);
  }
  return jj_tmp_end(x);
}

static jj_value_t concat_str(jj_ctx_t *x, jj_value_t a, jj_value_t b) {
  size_t n = a.u.str.n + b.u.str.n;
  if (n > JJ_MAX_OUTPUT) jj_fail(x, 0, "string longer than %u MiB (limit)", JJ_MAX_OUTPUT >> 20);
  // `a` is the whole of the last concatenation's buffer: extend it. Values already holding a
  // shorter view keep seeing their own bytes (strings never change below their length).
  if (x->cat_base && a.u.str.s == x->cat_base && a.u.str.n == x->cat_used && n + 1 <= x->cat_cap) {
    memcpy(x->cat_base + a.u.str.n, b.u.str.s, b.u.str.n);
    x->cat_base[n] = 0;
    x->cat_used = n;
    return jj_str_ref(x->cat_base, n);
  }
  size_t cap = n < 32 ? 64 : 2 * n + 1;
  char *d = jj_alloc(x, cap);
  memcpy(d, a.u.str.s, a.u.str.n);
  memcpy(d + a.u.str.n, b.u.str.s, b.u.str.n);
  x->cat_base = d;
  x->cat_used = n;
  x->cat_cap = cap;
  return jj_str_ref(d, n);
}

static bool is_num(jj_value_t v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double num_f(jj_value_t v) {
  return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : (double)v.u.b;
}
static int64_t num_i(jj_value_t v) { return v.t == JV_INT ? v.u.i : (int64_t)v.u.b; }

static bool contains(jj_ctx_t *x, uint32_t pos, jj_value_t needle, jj_value_t hay) {
  switch (hay.t) {
    case JV_STR:
      if (needle.t != JV_STR) {
        jj_fail(x, pos, "'in <string>' requires a string on the left, not %s",
                jj_type_name(needle));
      }
      return jj_find(hay.u.str.s, hay.u.str.n, needle.u.str.s, needle.u.str.n, 0) >= 0;
    case JV_LIST:
      for (int32_t i = 0; i < hay.u.list->n; i++) {
        if (jj_equal(hay.u.list->v[i], needle)) return true;
      }
      return false;
    case JV_DICT:
      return jj_dict_get_v(hay.u.dict, needle) != NULL;
    case JV_UNDEF:
      return false;
    default:
      jj_fail(x, pos, "argument of type %s is not iterable", jj_type_name(hay));
  }
}

static jj_value_t repeat(jj_ctx_t *x, uint32_t pos, jj_value_t seq, int64_t times) {
  if (times < 0) times = 0;
  if (seq.t == JV_STR) {
    if (seq.u.str.n && (uint64_t)times > JJ_MAX_OUTPUT / seq.u.str.n) {
      jj_fail(x, pos, "string longer than %u MiB (limit)", JJ_MAX_OUTPUT >> 20);
    }
    size_t n = seq.u.str.n * (size_t)times;
    char *d = jj_alloc(x, n + 1);
    for (int64_t i = 0; i < times; i++)
      memcpy(d + (size_t)i * seq.u.str.n, seq.u.str.s, seq.u.str.n);
    return jj_str_ref(d, n);
  }
  if ((int64_t)seq.u.list->n * times > JJ_MAX_STEPS) {
    jj_fail(x, pos, "list longer than %d items (limit)", JJ_MAX_STEPS);
  }
  jj_value_t out = jj_list_new(x, 0);
  for (int64_t i = 0; i < times; i++) {
    for (int32_t k = 0; k < seq.u.list->n; k++) jj_list_push(x, &out, seq.u.list->v[k]);
  }
  return out;
}

static _Noreturn void bad_operands(jj_ctx_t *x, uint32_t pos, const char *op, jj_value_t a,
                                   jj_value_t b) {
  if (a.t == JV_UNDEF && a.u.undef_name) jj_fail(x, pos, "'%s' is undefined", a.u.undef_name);
  if (b.t == JV_UNDEF && b.u.undef_name) jj_fail(x, pos, "'%s' is undefined", b.u.undef_name);
  jj_fail(x, pos, "unsupported operand types for %s: %s and %s", op, jj_type_name(a),
          jj_type_name(b));
}

static jj_value_t eval_bin(jj_ctx_t *x, const jj_node_t *e) {
  const char *op = e->s;
  jj_value_t a = jj_eval(x, e->a), b = jj_eval(x, e->b);
  uint32_t pos = e->pos;
  // Concatenation in place only costs the appended part; other operators scan both sides.
  if (!((op[0] == '+' || op[0] == '~') && a.t == JV_STR && a.u.str.s == x->cat_base)) {
    jj_charge(x, pos, a);
  }
  jj_charge(x, pos, b);
  if (op[0] == '~') {
    jj_value_t sa = jj_to_string(x, a), sb = jj_to_string(x, b);
    return concat_str(x, sa, sb);
  }
  if (strcmp(op, "==") == 0) return jj_bool(jj_equal(a, b));
  if (strcmp(op, "!=") == 0) return jj_bool(!jj_equal(a, b));
  if (strcmp(op, "<") == 0) return jj_bool(jj_compare(x, pos, a, b) < 0);
  if (strcmp(op, ">") == 0) return jj_bool(jj_compare(x, pos, a, b) > 0);
  if (strcmp(op, "<=") == 0) return jj_bool(jj_compare(x, pos, a, b) <= 0);
  if (strcmp(op, ">=") == 0) return jj_bool(jj_compare(x, pos, a, b) >= 0);
  if (strcmp(op, "in") == 0) return jj_bool(contains(x, pos, a, b));
  if (strcmp(op, "not in") == 0) return jj_bool(!contains(x, pos, a, b));
  if (op[0] == '+') {
    if (a.t == JV_STR && b.t == JV_STR) return concat_str(x, a, b);
    if (a.t == JV_LIST && b.t == JV_LIST) {
      jj_value_t out = jj_list_new(x, a.u.list->n + b.u.list->n);
      for (int32_t i = 0; i < a.u.list->n; i++) jj_list_push(x, &out, a.u.list->v[i]);
      for (int32_t i = 0; i < b.u.list->n; i++) jj_list_push(x, &out, b.u.list->v[i]);
      return out;
    }
  }
  if (op[0] == '*' && op[1] == 0) {
    if ((a.t == JV_STR || a.t == JV_LIST) && (b.t == JV_INT || b.t == JV_BOOL)) {
      return repeat(x, pos, a, num_i(b));
    }
    if ((b.t == JV_STR || b.t == JV_LIST) && (a.t == JV_INT || a.t == JV_BOOL)) {
      return repeat(x, pos, b, num_i(a));
    }
  }
  if (op[0] == '%' && a.t == JV_STR) {
    jj_fail(x, pos, "printf-style string formatting is not supported");
  }
  if (!is_num(a) || !is_num(b)) bad_operands(x, pos, op, a, b);
  bool flt = a.t == JV_FLOAT || b.t == JV_FLOAT;
  if (op[0] == '/' && op[1] == 0) {
    if (num_f(b) == 0.0) jj_fail(x, pos, "division by zero");
    return jj_float(num_f(a) / num_f(b));
  }
  if (flt) {
    double fa = num_f(a), fb = num_f(b);
    switch (op[0]) {
      case '+':
        return jj_float(fa + fb);
      case '-':
        return jj_float(fa - fb);
      case '*':
        return op[1] ? jj_float(pow(fa, fb)) : jj_float(fa * fb);
      case '/':
        if (fb == 0.0) jj_fail(x, pos, "division by zero");
        return jj_float(floor(fa / fb));
      case '%': {
        if (fb == 0.0) jj_fail(x, pos, "modulo by zero");
        double r = fmod(fa, fb);
        if (r != 0.0 && ((r < 0) != (fb < 0))) r += fb;
        return jj_float(r);
      }
    }
  }
  int64_t ia = num_i(a), ib = num_i(b), r = 0;
  switch (op[0]) {
    case '+':
      if (__builtin_add_overflow(ia, ib, &r)) jj_fail(x, pos, "integer overflow");
      return jj_int(r);
    case '-':
      if (__builtin_sub_overflow(ia, ib, &r)) jj_fail(x, pos, "integer overflow");
      return jj_int(r);
    case '*':
      if (op[1] == '*') {
        if (ib < 0) return jj_float(pow((double)ia, (double)ib));
        r = 1;
        for (int64_t k = 0; k < ib; k++) {
          if (__builtin_mul_overflow(r, ia, &r)) jj_fail(x, pos, "integer overflow");
          if (r == 0 || r == 1) break;
        }
        return jj_int(r);
      }
      if (__builtin_mul_overflow(ia, ib, &r)) jj_fail(x, pos, "integer overflow");
      return jj_int(r);
    case '/': {  // floor division
      if (ib == 0) jj_fail(x, pos, "division by zero");
      if (ia == INT64_MIN && ib == -1) jj_fail(x, pos, "integer overflow");
      int64_t q = ia / ib;
      if ((ia % ib != 0) && ((ia < 0) != (ib < 0))) q--;
      return jj_int(q);
    }
    case '%': {
      if (ib == 0) jj_fail(x, pos, "modulo by zero");
      if (ib == -1) return jj_int(0);
      int64_t m = ia % ib;
      if (m != 0 && ((m < 0) != (ib < 0))) m += ib;
      return jj_int(m);
    }
  }
  bad_operands(x, pos, op, a, b);
}

// Evaluates call arguments (positional in args, keyword in kw_vals).
typedef struct call_args {
  jj_value_t *args, *kw;
  int32_t n, n_kw;
  const char **kw_names;
} call_args_t;

static call_args_t eval_args(jj_ctx_t *x, const jj_node_t *e) {
  call_args_t c = {.n = e->n, .n_kw = e->n2, .kw_names = e->names};
  c.args = jj_alloc(x, sizeof(jj_value_t) * (size_t)(e->n + 1));
  c.kw = jj_alloc(x, sizeof(jj_value_t) * (size_t)(e->n2 + 1));
  for (int32_t i = 0; i < e->n; i++) c.args[i] = jj_eval(x, e->list[i]);
  for (int32_t i = 0; i < e->n2; i++) c.kw[i] = jj_eval(x, e->list2[i]);
  return c;
}

static void charge_args(jj_ctx_t *x, uint32_t pos, const call_args_t *c) {
  for (int32_t i = 0; i < c->n; i++) jj_charge(x, pos, c->args[i]);
  for (int32_t i = 0; i < c->n_kw; i++) jj_charge(x, pos, c->kw[i]);
}

jj_value_t jj_eval(jj_ctx_t *x, const jj_node_t *e) {
  x->cur_pos = e->pos;
  switch (e->kind) {
    case JN_STR:
      return jj_str_ref(e->s, e->sn);
    case JN_INT:
      return jj_int(e->i);
    case JN_FLOAT:
      return jj_float(e->f);
    case JN_BOOL:
      return jj_bool(e->i != 0);
    case JN_NONE:
      return jj_none();
    case JN_NAME:
      return jj_lookup(x, e->s);
    case JN_LIST: {
      jj_value_t l = jj_list_new(x, e->n);
      for (int32_t i = 0; i < e->n; i++) jj_list_push(x, &l, jj_eval(x, e->list[i]));
      return l;
    }
    case JN_DICT: {
      jj_value_t d = jj_dict_new(x, e->n);
      for (int32_t i = 0; i < e->n; i++) {
        jj_value_t k = jj_eval(x, e->list[i]);
        jj_dict_set(x, &d, k, jj_eval(x, e->list2[i]));
      }
      return d;
    }
    case JN_ATTR:
      return jj_get_attr(x, e->pos, jj_eval(x, e->a), e->s);
    case JN_ITEM: {
      jj_value_t v = jj_eval(x, e->a), k = jj_eval(x, e->b);
      if (v.t == JV_STR) jj_charge(x, e->pos, v);  // code-point indexing scans
      jj_charge(x, e->pos, k);                     // hashing the key
      return jj_get_item(x, e->pos, v, k);
    }
    case JN_SLICE:
      return eval_slice(x, e);
    case JN_CALL: {
      jj_value_t f = jj_eval(x, e->a);
      call_args_t c = eval_args(x, e);
      if (f.t == JV_METHOD) jj_charge(x, e->pos, f.u.m->self);
      charge_args(x, e->pos, &c);
      return jj_call_value(x, e->pos, f, c.args, c.n, c.kw_names, c.kw, c.n_kw);
    }
    case JN_FILTER: {
      jj_value_t v = jj_eval(x, e->a);
      call_args_t c = eval_args(x, e);
      jj_charge(x, e->pos, v);
      charge_args(x, e->pos, &c);
      return jj_apply_filter(x, e->pos, e->s, v, c.args, c.n, c.kw_names, c.kw, c.n_kw);
    }
    case JN_TEST: {
      jj_value_t v = jj_eval(x, e->a);
      call_args_t c = eval_args(x, e);
      jj_charge(x, e->pos, v);
      charge_args(x, e->pos, &c);
      bool r = jj_apply_test(x, e->pos, e->s, v, c.args, c.n);
      return jj_bool(e->i ? !r : r);
    }
    case JN_NEG:
    case JN_POS: {
      jj_value_t v = jj_eval(x, e->a);
      if (v.t == JV_FLOAT) return jj_float(e->kind == JN_NEG ? -v.u.f : v.u.f);
      if (v.t == JV_INT || v.t == JV_BOOL) {
        int64_t i = num_i(v);
        if (e->kind == JN_POS) return jj_int(i);
        if (i == INT64_MIN) jj_fail(x, e->pos, "integer overflow");
        return jj_int(-i);
      }
      jj_fail(x, e->pos, "bad operand type for unary %s: %s", e->kind == JN_NEG ? "-" : "+",
              jj_type_name(v));
    }
    case JN_NOT:
      return jj_bool(!jj_truthy(jj_eval(x, e->a)));
    case JN_AND: {
      jj_value_t a = jj_eval(x, e->a);
      return jj_truthy(a) ? jj_eval(x, e->b) : a;
    }
    case JN_OR: {
      jj_value_t a = jj_eval(x, e->a);
      return jj_truthy(a) ? a : jj_eval(x, e->b);
    }
    case JN_BIN:
      return eval_bin(x, e);
    case JN_COND:
      if (jj_truthy(jj_eval(x, e->b))) return jj_eval(x, e->a);
      return e->c ? jj_eval(x, e->c) : jj_undef(NULL);
    default:
      jj_fail(x, e->pos, "internal error: statement node in an expression");
  }
}

// ---- Macros ----
static jj_value_t call_macro(jj_ctx_t *x, uint32_t pos, const jj_node_t *m, jj_value_t *args,
                             int32_t n, const char **kw_names, jj_value_t *kw_vals, int32_t n_kw) {
  if (x->call_depth >= JJ_MAX_CALL_DEPTH) {
    jj_fail(x, pos, "macro calls nested deeper than %d (limit)", JJ_MAX_CALL_DEPTH);
  }
  step_check(x, pos);
  if (n > m->n_names) {
    jj_fail(x, pos, "macro '%s' takes %d arguments, %d given", m->s, m->n_names, n);
  }
  jj_frame_t *saved_scope = x->scope;
  jj_frame_t *f = frame_new(x, x->top);
  x->scope = f;
  for (int32_t i = 0; i < m->n_names; i++) {
    jj_value_t v = jj_undef(m->names[i]);
    bool set = false;
    if (i < n) {
      v = args[i];
      set = true;
    }
    for (int32_t k = 0; k < n_kw; k++) {
      if (strcmp(kw_names[k], m->names[i]) == 0) {
        v = kw_vals[k];
        set = true;
      }
    }
    if (!set && m->list2[i]) v = jj_eval(x, m->list2[i]);
    frame_set(x, f, m->names[i], v);
  }
  for (int32_t k = 0; k < n_kw; k++) {
    bool known = false;
    for (int32_t i = 0; i < m->n_names; i++) known |= strcmp(kw_names[k], m->names[i]) == 0;
    if (!known) jj_fail(x, pos, "macro '%s' has no parameter '%s'", m->s, kw_names[k]);
  }
  jj_outbuf_t *buf = jj_alloc(x, sizeof *buf);
  capture_begin(x, buf);
  x->call_depth++;
  int saved_ctl = x->loop_ctl;
  x->loop_ctl = 0;
  jj_exec_body(x, m->list, m->n);
  x->loop_ctl = saved_ctl;
  x->call_depth--;
  x->scope = saved_scope;
  return capture_end(x, buf);
}

jj_value_t jj_call_macro_value(jj_ctx_t *x, uint32_t pos, jj_value_t f, jj_value_t *args, int32_t n,
                               const char **kw_names, jj_value_t *kw_vals, int32_t n_kw);
jj_value_t jj_call_macro_value(jj_ctx_t *x, uint32_t pos, jj_value_t f, jj_value_t *args, int32_t n,
                               const char **kw_names, jj_value_t *kw_vals, int32_t n_kw) {
  return call_macro(x, pos, f.u.macro, args, n, kw_names, kw_vals, n_kw);
}

// ---- Statements ----
static void bind_targets(jj_ctx_t *x, const jj_node_t *s, jj_frame_t *f, jj_value_t item) {
  if (s->n_names == 1) {
    frame_set(x, f, s->names[0], item);
    return;
  }
  if (item.t != JV_LIST || item.u.list->n != s->n_names) {
    jj_fail(x, s->pos, "cannot unpack %s into %d variables", jj_type_name(item), s->n_names);
  }
  for (int32_t k = 0; k < s->n_names; k++) frame_set(x, f, s->names[k], item.u.list->v[k]);
}

static void exec_for(jj_ctx_t *x, const jj_node_t *s) {
  jj_value_t seq = jj_iter_list(x, s->a->pos, jj_eval(x, s->a));
  jj_frame_t *saved = x->scope;
  jj_frame_t *f = frame_new(x, saved);
  x->scope = f;
  if (s->b) {  // `for x in xs if cond`: filter first, so loop.length counts the kept items
    jj_value_t kept = jj_list_new(x, 0);
    for (int32_t i = 0; i < seq.u.list->n; i++) {
      step_check(x, s->pos);
      bind_targets(x, s, f, seq.u.list->v[i]);
      if (jj_truthy(jj_eval(x, s->b))) jj_list_push(x, &kept, seq.u.list->v[i]);
    }
    seq = kept;
  }
  jj_loop_t *loop = jj_alloc(x, sizeof *loop);
  loop->items = seq.u.list;
  loop->length = seq.u.list->n;
  jj_value_t lv = {.t = JV_LOOP};
  lv.u.loop = loop;
  for (int32_t i = 0; i < seq.u.list->n; i++) {
    step_check(x, s->pos);
    loop->index0 = i;
    bind_targets(x, s, f, seq.u.list->v[i]);
    frame_set(x, f, "loop", lv);
    jj_exec_body(x, s->list, s->n);
    if (x->loop_ctl == 1) {
      x->loop_ctl = 0;
      break;
    }
    x->loop_ctl = 0;
  }
  x->scope = saved;
  if (seq.u.list->n == 0 && s->n2 > 0) jj_exec_body(x, s->list2, s->n2);
}

static void exec_set(jj_ctx_t *x, const jj_node_t *s) {
  jj_value_t v = jj_eval(x, s->b);
  if (s->a) {
    jj_value_t obj = jj_eval(x, s->a);
    if (obj.t != JV_DICT || !obj.u.dict->is_namespace) {
      jj_fail(x, s->pos, "cannot assign attribute '%s' on %s '%s' (only on a namespace)", s->s,
              jj_type_name(obj), s->a->s);
    }
    jj_dict_set(x, &obj, jj_str_ref(s->s, strlen(s->s)), v);
    return;
  }
  if (s->n_names == 1) {
    frame_set(x, x->scope, s->names[0], v);
    return;
  }
  if (v.t != JV_LIST || v.u.list->n != s->n_names) {
    jj_fail(x, s->pos, "cannot unpack %s into %d variables", jj_type_name(v), s->n_names);
  }
  for (int32_t k = 0; k < s->n_names; k++) frame_set(x, x->scope, s->names[k], v.u.list->v[k]);
}

void jj_exec_body(jj_ctx_t *x, jj_node_t *const *body, int32_t n) {
  for (int32_t i = 0; i < n && x->loop_ctl == 0; i++) {
    const jj_node_t *s = body[i];
    x->cur_pos = s->pos;
    switch (s->kind) {
      case JN_TEXT:
        emit(x, s->pos, s->s, s->sn);
        break;
      case JN_OUT: {
        jj_value_t v = jj_eval(x, s->a);
        if (v.t == JV_STR) {
          emit(x, s->pos, v.u.str.s, v.u.str.n);
        } else if (v.t != JV_UNDEF) {
          mx_strbuf_t *sb = jj_tmp_begin(x);
          jj_append_str(sb, v);
          jj_value_t str = jj_tmp_end(x);
          emit(x, s->pos, str.u.str.s, str.u.str.n);
        }
        break;
      }
      case JN_IF:
        if (jj_truthy(jj_eval(x, s->a))) {
          jj_exec_body(x, s->list, s->n);
        } else {
          jj_exec_body(x, s->list2, s->n2);
        }
        break;
      case JN_FOR:
        exec_for(x, s);
        break;
      case JN_SET:
        exec_set(x, s);
        break;
      case JN_SETBLOCK: {
        jj_outbuf_t *buf = jj_alloc(x, sizeof *buf);
        capture_begin(x, buf);
        jj_exec_body(x, s->list, s->n);
        jj_value_t v = capture_end(x, buf);
        frame_set(x, x->scope, s->names[0], v);
        break;
      }
      case JN_MACRO: {
        jj_value_t m = {.t = JV_MACRO};
        m.u.macro = s;
        frame_set(x, x->scope, s->s, m);
        break;
      }
      case JN_BREAK:
        x->loop_ctl = 1;
        break;
      case JN_CONTINUE:
        x->loop_ctl = 2;
        break;
      case JN_BODY:
        jj_exec_body(x, s->list, s->n);
        break;
      default:
        jj_fail(x, s->pos, "internal error: expression node as a statement");
    }
  }
}
