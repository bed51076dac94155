// Internal interface of the Jinja-subset engine behind include/mlxcel/chat.h: tokens, AST,
// values and the evaluator's context. Errors inside the lexer, parser and evaluator unwind with
// longjmp to the public entry point; all memory lives in arenas freed there, so unwinding
// leaks nothing.
#ifndef MX_CHAT_JINJA_H
#define MX_CHAT_JINJA_H

#include <setjmp.h>

#include "mlxcel/base.h"

#define JJ_MAX_DEPTH 128           // parser nesting (expressions and blocks)
#define JJ_MAX_CALL_DEPTH 32       // macro recursion
#define JJ_MAX_NEST 256            // nesting of list/dict values
#define JJ_MAX_STEPS 1000000       // loop iterations per render
#define JJ_MAX_WORK 2000000000LL   // bytes/items scanned by operations, per render
#define JJ_MAX_MEMORY (64u << 20)  // render arena bytes
#define JJ_MAX_OUTPUT (16u << 20)  // rendered bytes

// ---- Tokens ----
typedef enum {
  JT_EOF,
  JT_TEXT,         // literal template text (already whitespace-controlled)
  JT_VAR_BEGIN,    // {{
  JT_VAR_END,      // }}
  JT_BLOCK_BEGIN,  // {%
  JT_BLOCK_END,    // %}
  JT_NAME,
  JT_STRING,  // s/n hold the decoded bytes
  JT_INT,
  JT_FLOAT,
  JT_OP,  // s/n: one of ( ) [ ] { } . , : | ~ + - * / // % ** = == != < > <= >=
} jj_tok_kind_t;

typedef struct jj_token {
  jj_tok_kind_t kind;
  uint32_t pos;  // byte offset in the source
  const char *s;
  size_t n;
  int64_t i;
  double f;
} jj_token_t;

// ---- AST ----
typedef enum {
  // expressions
  JN_STR,
  JN_INT,
  JN_FLOAT,
  JN_BOOL,
  JN_NONE,
  JN_NAME,
  JN_LIST,    // items in list/n; `i` = 1 for a tuple
  JN_DICT,    // keys in list, values in list2
  JN_ATTR,    // a.s
  JN_ITEM,    // a[b]
  JN_SLICE,   // a[list[0]:list[1]:list[2]] (entries may be NULL)
  JN_CALL,    // a(list..., names[k]=list2[k]...)
  JN_FILTER,  // a | s(list..., kwargs)
  JN_TEST,    // a is [not] s(list...); i = negated
  JN_NEG,     // -a
  JN_POS,     // +a
  JN_NOT,
  JN_AND,
  JN_OR,
  JN_BIN,   // a op b, op in s
  JN_COND,  // a if b else c
  // statements
  JN_TEXT,
  JN_OUT,
  JN_IF,        // if a: list else list2
  JN_FOR,       // for names in a [if b]: list else list2
  JN_SET,       // names (1 or more) or a.s (attribute target when a != NULL) = b
  JN_SETBLOCK,  // names[0] = rendered list
  JN_MACRO,     // s(names = list2 defaults) body list
  JN_BREAK,
  JN_CONTINUE,
  JN_BODY,  // plain body (generation blocks)
} jj_node_kind_t;

typedef struct jj_node jj_node_t;
struct jj_node {
  jj_node_kind_t kind;
  uint32_t pos;
  jj_node_t *a, *b, *c;
  jj_node_t **list, **list2;
  int32_t n, n2;
  const char **names;
  int32_t n_names;
  const char *s;
  size_t sn;
  int64_t i;
  double f;
};

// ---- Compile ----
typedef struct jj_compiler {
  const char *src;
  size_t len;
  mx_arena_t *arena;
  jmp_buf *jmp;
  jj_token_t *toks;
  int32_t n_toks, cap_toks, cur;
  int32_t depth;
  int loop_depth;  // for loops around the statement being parsed
} jj_compiler_t;

// Converts a byte offset to 1-based line and column (columns count bytes).
void jj_line_col(const char *src, size_t len, uint32_t pos, int *line, int *col);
// Records an MX_ERR_PARSE "chat template L:C: ..." message and unwinds.
_Noreturn void jj_compile_fail(jj_compiler_t *c, uint32_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void jj_lex(jj_compiler_t *c);
jj_node_t *jj_parse(jj_compiler_t *c);  // returns a JN_BODY

// ---- Values ----
typedef enum {
  JV_UNDEF,
  JV_NONE,
  JV_BOOL,
  JV_INT,
  JV_FLOAT,
  JV_STR,
  JV_LIST,
  JV_DICT,
  JV_FUNC,    // builtin global function (f = id)
  JV_METHOD,  // bound method: m
  JV_MACRO,
  JV_LOOP,
} jj_vtype_t;

typedef struct jj_list jj_list_t;
typedef struct jj_dict jj_dict_t;
typedef struct jj_method jj_method_t;
typedef struct jj_loop jj_loop_t;

typedef struct jj_value {
  jj_vtype_t t;
  union {
    bool b;
    int64_t i;
    double f;
    struct {
      const char *s;
      size_t n;
    } str;
    jj_list_t *list;
    jj_dict_t *dict;
    int func;
    jj_method_t *m;
    const jj_node_t *macro;
    jj_loop_t *loop;
    const char *undef_name;  // what was undefined, for messages (may be NULL)
  } u;
} jj_value_t;

struct jj_list {
  jj_value_t *v;
  int32_t n, cap;
  int32_t depth;  // nesting below this list (bounded: printing and comparing recurse)
};
// Insertion-ordered; past a few entries an open-addressing index (slot = entry + 1, 0 = empty)
// keeps lookups O(1) so hostile templates cannot go quadratic.
struct jj_dict {
  jj_value_t *k, *v;
  int32_t n, cap;
  int32_t *index;
  int32_t index_cap;  // power of two, or 0 while the dict is scanned linearly
  int32_t depth;      // as jj_list.depth
  bool is_namespace;
};
struct jj_method {
  jj_value_t self;
  const char *name;
};
struct jj_loop {
  const jj_list_t *items;
  int32_t index0, length;
};

// ---- Render ----
typedef struct jj_frame jj_frame_t;
struct jj_frame {
  const char **names;
  jj_value_t *vals;
  int32_t n, cap;
  jj_frame_t *parent;
};

// Output being written; macro calls and set blocks push a capture buffer. The chain lets the
// entry point free every open buffer after an error unwound past them.
typedef struct jj_outbuf jj_outbuf_t;
struct jj_outbuf {
  mx_strbuf_t sb;
  jj_outbuf_t *prev;
};

typedef struct jj_ctx {
  const char *src;  // template source for positions
  size_t src_len;
  mx_arena_t *arena;
  jmp_buf *jmp;
  jj_outbuf_t *out;     // current output (top of the capture chain)
  size_t total_out;     // bytes written into any buffer (limit)
  jj_frame_t *globals;  // render variables (messages, bos_token, extras)
  jj_frame_t *top;      // template-level `set`s and macros; parent = globals
  jj_frame_t *scope;    // innermost frame
  int64_t steps;
  int64_t work;  // see jj_charge
  int32_t call_depth;
  int loop_ctl;      // 1 = break, 2 = continue pending
  uint32_t cur_pos;  // position of the node being evaluated (for errors raised without one)
  // Growable tail of the last concatenation: `ns.s = ns.s + piece` in a loop appends in place
  // (amortized linear) instead of copying the whole string each time.
  jj_outbuf_t *tmp;       // open scratch buffers (jj_tmp_begin), freed after an error
  jj_outbuf_t *tmp_free;  // finished scratch buffer nodes for reuse
  char *cat_base;
  size_t cat_used, cat_cap;
} jj_ctx_t;

_Noreturn void jj_fail(jj_ctx_t *x, uint32_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void *jj_alloc(jj_ctx_t *x, size_t n);

jj_value_t jj_undef(const char *name);
jj_value_t jj_none(void);
jj_value_t jj_bool(bool b);
jj_value_t jj_int(int64_t i);
jj_value_t jj_float(double f);
jj_value_t jj_str(jj_ctx_t *x, const char *s, size_t n);  // copies
jj_value_t jj_str_ref(const char *s, size_t n);           // no copy
jj_value_t jj_list_new(jj_ctx_t *x, int32_t cap);
void jj_list_push(jj_ctx_t *x, jj_value_t *list, jj_value_t v);
jj_value_t jj_dict_new(jj_ctx_t *x, int32_t cap);
void jj_dict_set(jj_ctx_t *x, jj_value_t *dict, jj_value_t k, jj_value_t v);
// NULL when absent.
jj_value_t *jj_dict_get(const jj_dict_t *d, const char *key, size_t n);
jj_value_t *jj_dict_get_v(const jj_dict_t *d, jj_value_t key);

// First occurrence of needle in hay[from..] (byte offset), or -1. Linear time.
int64_t jj_find(const char *hay, size_t n, const char *needle, size_t m, size_t from);

bool jj_truthy(jj_value_t v);
bool jj_equal(jj_value_t a, jj_value_t b);
// Orders numbers or strings; fails for other pairs.
int jj_compare(jj_ctx_t *x, uint32_t pos, jj_value_t a, jj_value_t b);
const char *jj_type_name(jj_value_t v);
// str(v) as Jinja prints it; appended to sb.
void jj_append_str(mx_strbuf_t *sb, jj_value_t v);
// repr(v) as Python writes it (strings single-quoted).
void jj_append_repr(mx_strbuf_t *sb, jj_value_t v);
jj_value_t jj_to_string(jj_ctx_t *x, jj_value_t v);
// Stable merge sort of idx[0..n) by keys[idx[i]] (jj_compare; descending when reverse, equal
// keys keeping their order as in Python).
void jj_sort_index(jj_ctx_t *x, uint32_t pos, const jj_value_t *keys, int32_t *idx, int32_t n,
                   bool reverse);
// Scratch heap buffers used strictly LIFO; an error unwinding past them frees them.
mx_strbuf_t *jj_tmp_begin(jj_ctx_t *x);
// Ends the innermost scratch buffer and returns its text as an arena string.
jj_value_t jj_tmp_end(jj_ctx_t *x);
// Charges the cost of an operation on value v (string bytes, list/dict items) against
// JJ_MAX_WORK, so a loop cannot repeat big scans without bound.
void jj_charge(jj_ctx_t *x, uint32_t pos, jj_value_t v);
// NUL-terminated copy of a string value's bytes (value strings are length-delimited views).
const char *jj_cstr(jj_ctx_t *x, jj_value_t s);
// transformers' tojson: ensure_ascii=False, indent < 0 for none.
void jj_append_json(jj_ctx_t *x, uint32_t pos, mx_strbuf_t *sb, jj_value_t v, int indent,
                    bool sort_keys, int depth);
void jj_format_float(double f, char *buf, size_t cap);
// Code points in a UTF-8 string (invalid bytes count as one each).
int64_t jj_utf8_len(const char *s, size_t n);
// Byte offset of code point `cp` (clamped to n).
size_t jj_utf8_offset(const char *s, size_t n, int64_t cp);
// Checks the render memory limit; fails with a message when exceeded.
void jj_check_memory(jj_ctx_t *x, uint32_t pos);

// ---- Evaluation (jinja_eval.c) and builtins (jinja_builtins.c) ----
jj_value_t jj_eval(jj_ctx_t *x, const jj_node_t *e);
void jj_exec_body(jj_ctx_t *x, jj_node_t *const *body, int32_t n);
jj_value_t jj_lookup(jj_ctx_t *x, const char *name);
// Calls a callable value with evaluated args.
jj_value_t jj_call_value(jj_ctx_t *x, uint32_t pos, jj_value_t f, jj_value_t *args, int32_t n,
                         const char **kw_names, jj_value_t *kw_vals, int32_t n_kw);
jj_value_t jj_apply_filter(jj_ctx_t *x, uint32_t pos, const char *name, jj_value_t v,
                           jj_value_t *args, int32_t n, const char **kw_names, jj_value_t *kw_vals,
                           int32_t n_kw);
bool jj_apply_test(jj_ctx_t *x, uint32_t pos, const char *name, jj_value_t v, jj_value_t *args,
                   int32_t n);
// Attribute `v.name`: dict key, method, loop field; undefined when absent.
jj_value_t jj_get_attr(jj_ctx_t *x, uint32_t pos, jj_value_t v, const char *name);
jj_value_t jj_get_item(jj_ctx_t *x, uint32_t pos, jj_value_t v, jj_value_t key);
// Global builtin function by name; false if none.
bool jj_builtin_func(const char *name, jj_value_t *out);
// Iterates any iterable into a list (dicts yield keys; strings yield characters).
jj_value_t jj_iter_list(jj_ctx_t *x, uint32_t pos, jj_value_t v);

#endif  // MX_CHAT_JINJA_H
