// Public chat-template API (include/mlxcel/chat.h): compiles a template once, renders it per
// conversation in a fresh arena. Errors unwind here with longjmp from the engine.
#include "mlxcel/chat.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "jinja.h"

struct mx_chat_template {
  mx_arena_t *arena;  // AST, tokens and the source copy
  const char *src;
  size_t len;
  jj_node_t *root;
};

// Jinja reads the source with newlines normalized to "\n" and, without keep_trailing_newline
// (transformers does not set it), drops one trailing newline. Returns the new length.
static size_t normalize_source(char *s, size_t len) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '\r') {
      s[n++] = '\n';
      if (i + 1 < len && s[i + 1] == '\n') i++;
    } else {
      s[n++] = s[i];
    }
  }
  if (n > 0 && s[n - 1] == '\n') n--;
  s[n] = 0;
  return n;
}

mx_status_t mx_chat_template_compile(const char *src, size_t len, mx_chat_template_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_chat_template_compile: out is NULL");
  *out = NULL;
  if (!src && len) return mx_error_set(MX_ERR_INVALID_ARG, "chat template: source is NULL");
  if (len > JJ_MAX_OUTPUT) {
    return mx_error_set(MX_ERR_INVALID_ARG, "chat template: %zu bytes is over the %u MiB limit",
                        len, JJ_MAX_OUTPUT >> 20);
  }
  mx_chat_template_t *t = calloc(1, sizeof *t);
  mx_arena_t *arena = mx_arena_create();
  jj_compiler_t *c = arena ? mx_arena_alloc(arena, sizeof *c) : NULL;
  char *copy = c ? mx_arena_strndup(arena, src ? src : "", len) : NULL;
  if (!t || !copy) {
    free(t);
    mx_arena_destroy(arena);
    return mx_error_set(MX_ERR_NOMEM, "chat template: out of memory");
  }
  jmp_buf jb;
  c->src = copy;
  c->len = normalize_source(copy, len);
  c->arena = arena;
  c->jmp = &jb;
  if (setjmp(jb)) {
    free(t);
    mx_arena_destroy(arena);
    return MX_ERR_PARSE;
  }
  jj_lex(c);
  jj_node_t *root = jj_parse(c);
  t->arena = arena;
  t->src = copy;
  t->len = c->len;
  t->root = root;
  *out = t;
  return MX_OK;
}

void mx_chat_template_destroy(mx_chat_template_t *t) {
  if (!t) return;
  mx_arena_destroy(t->arena);
  free(t);
}

mx_status_t mx_chat_template_from_tokenizer(const mx_tokenizer_t *tok, mx_chat_template_t **out) {
  if (out) *out = NULL;
  const char *src = tok ? mx_tokenizer_chat_template(tok) : NULL;
  if (!src) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "tokenizer has no chat_template in tokenizer_config.json");
  }
  mx_status_t st = mx_chat_template_compile(src, strlen(src), out);
  if (st != MX_OK) return mx_error_prefix(st, "tokenizer_config.json chat_template");
  return MX_OK;
}

void mx_chat_opts_from_tokenizer(const mx_tokenizer_t *tok, mx_chat_render_opts_t *opts) {
  if (!tok || !opts) return;
  int32_t ids[3] = {mx_tokenizer_bos_id(tok), mx_tokenizer_eos_id(tok), mx_tokenizer_pad_id(tok)};
  const char **slots[3] = {&opts->bos_token, &opts->eos_token, &opts->pad_token};
  for (int i = 0; i < 3; i++) {
    if (ids[i] >= 0) {
      const char *piece = mx_tokenizer_id_to_piece(tok, ids[i], NULL);
      if (piece) *slots[i] = piece;
    }
  }
}

// ---- JSON to values ----
static jj_value_t from_json(jj_ctx_t *x, const cJSON *j) {
  if (cJSON_IsNull(j)) return jj_none();
  if (cJSON_IsFalse(j)) return jj_bool(false);
  if (cJSON_IsTrue(j)) return jj_bool(true);
  if (cJSON_IsNumber(j)) {
    double d = j->valuedouble;
    if (d == (double)(int64_t)d && d < 9.007199254740992e15 && d > -9.007199254740992e15) {
      return jj_int((int64_t)d);
    }
    return jj_float(d);
  }
  if (cJSON_IsString(j)) return jj_str(x, j->valuestring, strlen(j->valuestring));
  if (cJSON_IsArray(j)) {
    jj_value_t l = jj_list_new(x, 0);
    for (const cJSON *c = j->child; c; c = c->next) jj_list_push(x, &l, from_json(x, c));
    return l;
  }
  if (cJSON_IsObject(j)) {
    jj_value_t d = jj_dict_new(x, 0);
    for (const cJSON *c = j->child; c; c = c->next) {
      const char *k = c->string ? c->string : "";
      jj_dict_set(x, &d, jj_str(x, k, strlen(k)), from_json(x, c));
    }
    return d;
  }
  return jj_undef(NULL);
}

static void set_global(jj_ctx_t *x, const char *name, jj_value_t v) {
  jj_frame_t *f = x->globals;
  for (int32_t i = 0; i < f->n; i++) {
    if (strcmp(f->names[i], name) == 0) {
      f->vals[i] = v;
      return;
    }
  }
  if (f->n == f->cap) {
    int32_t cap = f->cap ? f->cap * 2 : 16;
    f->names =
        mx_arena_grow(x->arena, (void *)f->names, (size_t)f->n, (size_t)cap, sizeof *f->names);
    f->vals = mx_arena_grow(x->arena, f->vals, (size_t)f->n, (size_t)cap, sizeof *f->vals);
    if (!f->names || !f->vals) jj_fail(x, 0, "out of memory");
    f->cap = cap;
  }
  f->names[f->n] = mx_arena_strdup(x->arena, name);
  if (!f->names[f->n]) jj_fail(x, 0, "out of memory");
  f->vals[f->n++] = v;
}

typedef struct render_in {
  const mx_chat_message_t *msgs;
  int32_t n_msgs;
  cJSON *const *fields;  // [n_msgs] each message's fields_json parsed, or NULL
  const cJSON *msgs_json;
  const cJSON *extra;
} render_in_t;

static mx_status_t render(const mx_chat_template_t *t, const render_in_t *in,
                          const mx_chat_render_opts_t *opts, char **out, size_t *len) {
  mx_arena_t *arena = mx_arena_create();
  jj_ctx_t *x = arena ? mx_arena_alloc(arena, sizeof *x) : NULL;
  jj_outbuf_t *root = x ? mx_arena_alloc(arena, sizeof *root) : NULL;
  jj_frame_t *globals = root ? mx_arena_alloc(arena, sizeof *globals) : NULL;
  jj_frame_t *top = globals ? mx_arena_alloc(arena, sizeof *top) : NULL;
  if (!top) {
    mx_arena_destroy(arena);
    return mx_error_set(MX_ERR_NOMEM, "chat template: out of memory");
  }
  jmp_buf jb;
  x->src = t->src;
  x->src_len = t->len;
  x->arena = arena;
  x->jmp = &jb;
  mx_strbuf_init(&root->sb);
  x->out = root;
  x->globals = globals;
  top->parent = globals;
  x->top = top;
  x->scope = top;
  if (setjmp(jb)) {
    for (jj_outbuf_t *b = x->out; b; b = b->prev) mx_strbuf_free(&b->sb);
    for (jj_outbuf_t *b = x->tmp; b; b = b->prev) mx_strbuf_free(&b->sb);
    mx_arena_destroy(arena);
    return MX_ERR_RUNTIME;
  }
  jj_value_t msgs;
  if (in->msgs_json) {
    msgs = from_json(x, in->msgs_json);
  } else {
    msgs = jj_list_new(x, in->n_msgs);
    for (int32_t i = 0; i < in->n_msgs; i++) {
      jj_value_t m = jj_dict_new(x, 2);
      const char *role = in->msgs[i].role ? in->msgs[i].role : "";
      const char *content = in->msgs[i].content ? in->msgs[i].content : "";
      jj_dict_set(x, &m, jj_str_ref("role", 4), jj_str(x, role, strlen(role)));
      jj_dict_set(x, &m, jj_str_ref("content", 7), jj_str(x, content, strlen(content)));
      for (const cJSON *f = in->fields && in->fields[i] ? in->fields[i]->child : NULL; f;
           f = f->next)
        if (strcmp(f->string, "role") != 0)  // content: the parts that replace the text
          jj_dict_set(x, &m, jj_str(x, f->string, strlen(f->string)), from_json(x, f));
      jj_list_push(x, &msgs, m);
    }
  }
  set_global(x, "messages", msgs);
  set_global(x, "add_generation_prompt", jj_bool(opts->add_generation_prompt));
  // transformers passes tools=None and documents=None when the caller gives none.
  set_global(x, "tools", jj_none());
  set_global(x, "documents", jj_none());
  const char *names[4] = {"bos_token", "eos_token", "pad_token", "unk_token"};
  const char *vals[4] = {opts->bos_token, opts->eos_token, opts->pad_token, opts->unk_token};
  for (int i = 0; i < 4; i++) {
    if (vals[i]) set_global(x, names[i], jj_str(x, vals[i], strlen(vals[i])));
  }
  if (in->extra) {
    for (const cJSON *c = in->extra->child; c; c = c->next) {
      if (c->string) set_global(x, c->string, from_json(x, c));
    }
  }
  jj_exec_body(x, t->root->list, t->root->n);
  size_t n = root->sb.len;
  char *text = mx_strbuf_take(&root->sb, &n);
  if (!text) text = calloc(1, 1);
  mx_arena_destroy(arena);
  if (!text) return mx_error_set(MX_ERR_NOMEM, "chat template: out of memory");
  *out = text;
  if (len) *len = n;
  return MX_OK;
}

static mx_status_t parse_extra(const mx_chat_render_opts_t *opts, cJSON **extra) {
  *extra = NULL;
  if (!opts || !opts->extra_json) return MX_OK;
  *extra = cJSON_Parse(opts->extra_json);
  if (!*extra || !cJSON_IsObject(*extra)) {
    cJSON_Delete(*extra);
    *extra = NULL;
    return mx_error_set(MX_ERR_INVALID_ARG, "chat template: extra variables are not a JSON object");
  }
  return MX_OK;
}

mx_status_t mx_chat_render(const mx_chat_template_t *t, const mx_chat_message_t *messages,
                           int32_t n_messages, const mx_chat_render_opts_t *opts, char **out,
                           size_t *len) {
  return mx_chat_render_fields(t, messages, NULL, n_messages, opts, out, len);
}

mx_status_t mx_chat_render_fields(const mx_chat_template_t *t, const mx_chat_message_t *messages,
                                  const char *const *fields_json, int32_t n_messages,
                                  const mx_chat_render_opts_t *opts, char **out, size_t *len) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_chat_render: out is NULL");
  *out = NULL;
  if (len) *len = 0;
  if (!t || n_messages < 0 || (n_messages > 0 && !messages)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_chat_render: bad template or messages");
  }
  cJSON *extra = NULL;
  mx_status_t st = parse_extra(opts, &extra);
  if (st != MX_OK) return st;
  cJSON **fields = NULL;
  for (int32_t i = 0; fields_json && i < n_messages && !st; i++) {
    if (!fields_json[i]) continue;
    if (!fields) fields = calloc((size_t)n_messages, sizeof *fields);
    if (!fields) {
      st = mx_error_set(MX_ERR_NOMEM, "chat template: out of memory");
      break;
    }
    fields[i] = cJSON_Parse(fields_json[i]);
    if (!cJSON_IsObject(fields[i]))
      st = mx_error_set(MX_ERR_INVALID_ARG,
                        "chat template: message %d's fields are not a JSON "
                        "object",
                        (int)i);
  }
  if (!st) {
    render_in_t in = {.msgs = messages, .n_msgs = n_messages, .fields = fields, .extra = extra};
    mx_chat_render_opts_t defaults = {0};
    st = render(t, &in, opts ? opts : &defaults, out, len);
  }
  for (int32_t i = 0; fields && i < n_messages; i++) cJSON_Delete(fields[i]);
  free(fields);
  cJSON_Delete(extra);
  return st;
}

mx_status_t mx_chat_render_json(const mx_chat_template_t *t, const char *messages_json,
                                const mx_chat_render_opts_t *opts, char **out, size_t *len) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_chat_render_json: out is NULL");
  *out = NULL;
  if (len) *len = 0;
  if (!t || !messages_json) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_chat_render_json: bad template or messages");
  }
  cJSON *msgs = cJSON_Parse(messages_json);
  if (!msgs || !cJSON_IsArray(msgs)) {
    cJSON_Delete(msgs);
    return mx_error_set(MX_ERR_INVALID_ARG, "chat template: messages are not a JSON array");
  }
  cJSON *extra = NULL;
  mx_status_t st = parse_extra(opts, &extra);
  if (st == MX_OK) {
    render_in_t in = {.msgs_json = msgs, .extra = extra};
    mx_chat_render_opts_t defaults = {0};
    st = render(t, &in, opts ? opts : &defaults, out, len);
  }
  cJSON_Delete(extra);
  cJSON_Delete(msgs);
  return st;
}
