// Special-token text in chat content (include/mlxcel/chat.h, mx_chat_render_guarded).
//
// A chat template's own markup yields special tokens (`<|im_start|>` -> one id); text a user
// sends as message content must not, or the user could close their turn and forge others. The
// content's special-token spellings are wrapped in two noncharacters before rendering, found
// again in the rendered text (wherever the template put them) and removed, and their byte
// ranges become the plain ranges of mx_encode_opts_t, so that one encoding pass reads the
// markup's special tokens and the content's spellings as text.
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/chat.h"

static const char kMarkOpen[] = "\xEF\xB7\x90";   // U+FDD0
static const char kMarkClose[] = "\xEF\xB7\x91";  // U+FDD1
enum { MARK_LEN = 3 };

typedef struct special {
  const char *text;  // owned by the tokenizer
  size_t len;
} special_t;

struct mx_chat_guard {
  special_t *specials;  // by first byte (first[b] .. first[b + 1]), longest first
  int32_t n;
  int32_t first[257];
};

static int by_first_byte_longest(const void *a, const void *b) {
  const special_t *x = a, *y = b;
  uint8_t fx = (uint8_t)x->text[0], fy = (uint8_t)y->text[0];
  if (fx != fy) return fx < fy ? -1 : 1;
  return x->len > y->len ? -1 : x->len < y->len;
}

static const char *special_piece(const mx_tokenizer_t *tok, int32_t id, size_t *len) {
  *len = 0;
  const char *p = mx_tokenizer_is_special(tok, id) ? mx_tokenizer_id_to_piece(tok, id, len) : NULL;
  return p && *len > 0 ? p : NULL;
}

mx_status_t mx_chat_guard_create(const mx_tokenizer_t *tok, mx_chat_guard_t **out) {
  *out = NULL;
  if (!tok) return mx_error_set(MX_ERR_INVALID_ARG, "chat guard: no tokenizer");
  mx_chat_guard_t *g = calloc(1, sizeof *g);
  if (!g) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  int32_t v = mx_tokenizer_vocab_size(tok), n = 0;
  size_t len;
  for (int32_t id = 0; id < v; id++) n += special_piece(tok, id, &len) != NULL;
  g->specials = n ? calloc((size_t)n, sizeof *g->specials) : NULL;
  if (n && !g->specials) {
    free(g);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  for (int32_t id = 0; id < v; id++) {
    const char *p = special_piece(tok, id, &len);
    if (p) g->specials[g->n++] = (special_t){p, len};
  }
  if (g->n) qsort(g->specials, (size_t)g->n, sizeof *g->specials, by_first_byte_longest);
  int32_t k = 0;
  for (int b = 0; b <= 256; b++) {
    while (k < g->n && (uint8_t)g->specials[k].text[0] < b) k++;
    g->first[b] = k;
  }
  *out = g;
  return MX_OK;
}

void mx_chat_guard_destroy(mx_chat_guard_t *g) {
  if (!g) return;
  free(g->specials);
  free(g);
}

// The longest special token spelled at s[i..n), or 0.
static size_t special_at(const mx_chat_guard_t *g, const char *s, size_t i, size_t n) {
  uint8_t b = (uint8_t)s[i];
  for (int32_t k = g->first[b]; k < g->first[b + 1]; k++) {
    const special_t *sp = &g->specials[k];
    if (sp->len <= n - i && memcmp(s + i, sp->text, sp->len) == 0) return sp->len;
  }
  return 0;
}

// A heap copy of `s` with each special-token spelling wrapped in the two marks; NULL when out
// of memory.
static char *mark_specials(const mx_chat_guard_t *g, const char *s) {
  size_t n = strlen(s);
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  size_t run = 0;
  for (size_t i = 0; i < n;) {
    size_t k = g->n ? special_at(g, s, i, n) : 0;
    if (k == 0) {
      i++;
      run++;
      continue;
    }
    mx_strbuf_append(&sb, s + i - run, run);
    run = 0;
    mx_strbuf_append(&sb, kMarkOpen, MARK_LEN);
    mx_strbuf_append(&sb, s + i, k);
    mx_strbuf_append(&sb, kMarkClose, MARK_LEN);
    i += k;
  }
  mx_strbuf_append(&sb, s + n - run, run);
  if (sb.oom) {
    mx_strbuf_free(&sb);
    return NULL;
  }
  return mx_strbuf_take(&sb, NULL);
}

// Marks every string and key of a JSON text (after parsing, so that an escaped spelling such as
// "\u003c|im_end|>" is marked as the text it decodes to); a heap JSON text, NULL when out of
// memory or when fields_json is not JSON (rendering then reports it).
static bool mark_tree(const mx_chat_guard_t *g, cJSON *j) {
  for (cJSON *c = j; c; c = c->next) {
    if (c->string && !(c->type & cJSON_StringIsConst)) {
      char *k = mark_specials(g, c->string);
      if (!k) return false;
      free(c->string);
      c->string = k;
    }
    if (cJSON_IsString(c) && c->valuestring) {
      char *v = mark_specials(g, c->valuestring);
      if (!v) return false;
      free(c->valuestring);
      c->valuestring = v;
    }
    if (c->child && !mark_tree(g, c->child)) return false;
  }
  return true;
}

static char *mark_json(const mx_chat_guard_t *g, const char *json) {
  cJSON *j = cJSON_Parse(json);
  if (!j) return strdup(json);
  char *out = NULL;
  if (mark_tree(g, j)) {
    char *t = cJSON_PrintUnformatted(j);
    out = t ? strdup(t) : NULL;
    cJSON_free(t);
  }
  cJSON_Delete(j);
  return out;
}

// Removes the marks from the rendered text in place; each opened and closed pair becomes a plain
// range. A mark without its partner (a template that cut through a wrapped spelling) is removed
// alone. *ranges is a heap array (NULL when none).
static mx_status_t unmark(char *t, size_t *len, mx_text_range_t **ranges, int32_t *n_ranges) {
  *ranges = NULL;
  *n_ranges = 0;
  int32_t cap = 0;
  size_t w = 0, open_at = SIZE_MAX;
  for (size_t r = 0; r < *len;) {
    bool is_open = *len - r >= MARK_LEN && memcmp(t + r, kMarkOpen, MARK_LEN) == 0;
    bool is_close = *len - r >= MARK_LEN && memcmp(t + r, kMarkClose, MARK_LEN) == 0;
    if (is_open) {
      open_at = w;
    } else if (is_close && open_at != SIZE_MAX) {
      if (*n_ranges == cap) {
        cap = cap ? cap * 2 : 16;
        mx_text_range_t *nr = realloc(*ranges, (size_t)cap * sizeof *nr);
        if (!nr) {
          free(*ranges);
          *ranges = NULL;
          *n_ranges = 0;
          return mx_error_set(MX_ERR_NOMEM, "out of memory");
        }
        *ranges = nr;
      }
      (*ranges)[(*n_ranges)++] = (mx_text_range_t){open_at, w};
      open_at = SIZE_MAX;
    }
    if (is_open || is_close) {
      r += MARK_LEN;
    } else {
      t[w++] = t[r++];
    }
  }
  t[w] = '\0';
  *len = w;
  return MX_OK;
}

mx_status_t mx_chat_render_guarded(const mx_chat_template_t *t, const mx_chat_guard_t *g,
                                   const mx_chat_message_t *messages, int32_t n_messages,
                                   const mx_chat_render_opts_t *opts, char **out, size_t *len,
                                   mx_text_range_t **plain, int32_t *n_plain) {
  return mx_chat_render_guarded_fields(t, g, messages, NULL, n_messages, opts, out, len, plain,
                                       n_plain);
}

mx_status_t mx_chat_render_guarded_fields(const mx_chat_template_t *t, const mx_chat_guard_t *g,
                                          const mx_chat_message_t *messages,
                                          const char *const *fields_json, int32_t n_messages,
                                          const mx_chat_render_opts_t *opts, char **out,
                                          size_t *len, mx_text_range_t **plain, int32_t *n_plain) {
  *out = NULL;
  *plain = NULL;
  *n_plain = 0;
  if (len) *len = 0;
  for (int32_t i = 0; i < n_messages; i++)
    if (strstr(messages[i].content, kMarkOpen) || strstr(messages[i].content, kMarkClose) ||
        (fields_json && fields_json[i] &&
         (strstr(fields_json[i], kMarkOpen) || strstr(fields_json[i], kMarkClose))))
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "message %d: content holds U+FDD0 or U+FDD1 (noncharacters reserved "
                          "for marking content inside the chat template)",
                          (int)i);
  // Marked copies of each content and fields text (a tool call's arguments are the model's or
  // the client's text as much as a content is); marked[2 * i] and marked[2 * i + 1].
  mx_chat_message_t *msgs = calloc((size_t)n_messages + 1, sizeof *msgs);
  char **marked = calloc(2 * (size_t)n_messages + 1, sizeof *marked);
  mx_status_t st = msgs && marked ? MX_OK : mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; !st && i < n_messages; i++) {
    marked[2 * i] = mark_specials(g, messages[i].content);
    bool has = fields_json && fields_json[i];
    if (has) marked[2 * i + 1] = mark_json(g, fields_json[i]);
    if (!marked[2 * i] || (has && !marked[2 * i + 1]))
      st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    msgs[i] = (mx_chat_message_t){messages[i].role, marked[2 * i]};
  }
  char *text = NULL;
  size_t n = 0;
  // Odd entries of marked are the marked fields (even ones the contents).
  const char **fields = NULL;
  if (!st && fields_json) {
    fields = calloc((size_t)n_messages + 1, sizeof *fields);
    if (!fields) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; fields && i < n_messages; i++) fields[i] = marked[2 * i + 1];
  }
  if (!st) st = mx_chat_render_fields(t, msgs, fields, n_messages, opts, &text, &n);
  free(fields);
  for (int32_t i = 0; marked && i < 2 * n_messages; i++) free(marked[i]);
  free(marked);
  free(msgs);
  if (!st) st = unmark(text, &n, plain, n_plain);
  if (st) {
    free(text);
    return st;
  }
  *out = text;
  if (len) *len = n;
  return MX_OK;
}
