// The JSON texts of the OpenAI API (response.h), written directly into a string buffer: the
// shapes are fixed and generated text may hold NUL bytes, which a C-string JSON library drops.
#include "server/response.h"

#include <stdio.h>
#include <string.h>

const char *mx_server_finish_name(mx_finish_reason_t r) {
  return r == MX_FINISH_EOS || r == MX_FINISH_STOP ? "stop" : "length";
}

// Length of the valid UTF-8 sequence at s[0..n), 0 if invalid.
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t k;
  unsigned min, v;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    k = 1, min = 0x80, v = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    k = 2, min = 0x800, v = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    k = 3, min = 0x10000, v = c & 0x07;
  } else {
    return 0;
  }
  if (n <= k) return 0;
  for (size_t j = 1; j <= k; j++) {
    if ((s[j] & 0xC0) != 0x80) return 0;
    v = (v << 6) | (s[j] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  return k + 1;
}

void mx_server_json_string(mx_strbuf_t *sb, const char *s, size_t len) {
  const unsigned char *u = (const unsigned char *)s;
  mx_strbuf_append(sb, "\"", 1);
  size_t run = 0;  // bytes copied verbatim, flushed before each escape
  size_t i = 0;
  while (i < len) {
    unsigned char c = u[i];
    const char *esc = NULL;
    char hex[8];
    size_t k = 1;
    if (c == '"') {
      esc = "\\\"";
    } else if (c == '\\') {
      esc = "\\\\";
    } else if (c == '\n') {
      esc = "\\n";
    } else if (c == '\r') {
      esc = "\\r";
    } else if (c == '\t') {
      esc = "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      snprintf(hex, sizeof hex, "\\u%04x", c);
      esc = hex;
    } else if (c >= 0x80) {
      k = utf8_seq(u + i, len - i);
      if (k == 0) {
        esc = "\\ufffd";
        k = 1;
      }
    }
    if (esc) {
      mx_strbuf_append(sb, s + i - run, run);
      run = 0;
      mx_strbuf_puts(sb, esc);
    } else {
      run += k;
    }
    i += k;
  }
  mx_strbuf_append(sb, s + len - run, run);
  mx_strbuf_append(sb, "\"", 1);
}

static void str(mx_strbuf_t *sb, const char *s) {
  if (s) {
    mx_server_json_string(sb, s, strlen(s));
  } else {
    mx_strbuf_puts(sb, "null");
  }
}

void mx_server_error_json(mx_strbuf_t *sb, const mx_server_error_t *e) {
  mx_strbuf_puts(sb, "{\"error\":{\"message\":");
  str(sb, e->message);
  mx_strbuf_puts(sb, ",\"type\":");
  str(sb, e->type ? e->type : "invalid_request_error");
  mx_strbuf_puts(sb, ",\"param\":");
  str(sb, e->param);
  mx_strbuf_puts(sb, ",\"code\":");
  str(sb, e->code);
  mx_strbuf_puts(sb, "}}");
}

void mx_server_model_json(mx_strbuf_t *sb, const char *model, long long created) {
  mx_strbuf_puts(sb, "{\"id\":");
  str(sb, model);
  mx_strbuf_printf(sb, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"mlxcel\"}", created);
}

void mx_server_models_json(mx_strbuf_t *sb, const char *model, long long created) {
  mx_strbuf_puts(sb, "{\"object\":\"list\",\"data\":[");
  mx_server_model_json(sb, model, created);
  mx_strbuf_puts(sb, "]}");
}

static void head(mx_strbuf_t *sb, const mx_server_reply_head_t *h, const char *object) {
  mx_strbuf_puts(sb, "{\"id\":");
  str(sb, h->id);
  mx_strbuf_printf(sb, ",\"object\":\"%s\",\"created\":%lld,\"model\":", object, h->created);
  str(sb, h->model);
  mx_strbuf_puts(sb, ",\"system_fingerprint\":null");
}

static void usage(mx_strbuf_t *sb, const mx_server_usage_t *u) {
  mx_strbuf_printf(sb,
                   "\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d,"
                   "\"prompt_tokens_details\":{\"cached_tokens\":%d}",
                   (int)u->prompt, (int)u->completion, (int)(u->prompt + u->completion),
                   (int)u->cached);
  if (u->spec)
    mx_strbuf_printf(sb,
                     ",\"speculative\":{\"steps\":%d,\"drafted_tokens\":%d,\"accepted_tokens\":%d,"
                     "\"accepted_tokens_per_step\":%.4f}",
                     (int)u->spec_steps, (int)u->spec_drafted, (int)u->spec_accepted,
                     u->spec_steps > 0 ? (double)u->spec_accepted / u->spec_steps : 0.0);
  mx_strbuf_puts(sb, "}");
}

void mx_server_completion_json(mx_strbuf_t *sb, const mx_server_reply_head_t *h, const char *text,
                               size_t len, mx_finish_reason_t finish, const mx_server_usage_t *u) {
  bool chat = h->kind == MX_SERVER_CHAT;
  head(sb, h, chat ? "chat.completion" : "text_completion");
  mx_strbuf_puts(sb, ",\"choices\":[{\"index\":0,");
  if (chat) {
    mx_strbuf_puts(sb, "\"message\":{\"role\":\"assistant\",\"content\":");
    mx_server_json_string(sb, text, len);
    mx_strbuf_puts(sb, "}");
  } else {
    mx_strbuf_puts(sb, "\"text\":");
    mx_server_json_string(sb, text, len);
  }
  mx_strbuf_printf(sb, ",\"logprobs\":null,\"finish_reason\":\"%s\"}],",
                   mx_server_finish_name(finish));
  usage(sb, u);
  mx_strbuf_puts(sb, "}");
}

void mx_server_chunk_sse(mx_strbuf_t *sb, const mx_server_reply_head_t *h, const char *role,
                         const char *text, size_t len, const char *finish) {
  bool chat = h->kind == MX_SERVER_CHAT;
  mx_strbuf_puts(sb, "data: ");
  head(sb, h, chat ? "chat.completion.chunk" : "text_completion");
  mx_strbuf_puts(sb, ",\"choices\":[{\"index\":0,");
  if (chat) {
    mx_strbuf_puts(sb, "\"delta\":{");
    if (role) {
      mx_strbuf_puts(sb, "\"role\":");
      str(sb, role);
      if (text) mx_strbuf_puts(sb, ",");
    }
    if (text) {
      mx_strbuf_puts(sb, "\"content\":");
      mx_server_json_string(sb, text, len);
    }
    mx_strbuf_puts(sb, "}");
  } else {
    mx_strbuf_puts(sb, "\"text\":");
    mx_server_json_string(sb, text ? text : "", text ? len : 0);
  }
  mx_strbuf_puts(sb, ",\"logprobs\":null,\"finish_reason\":");
  str(sb, finish);
  mx_strbuf_puts(sb, "}]}\n\n");
}

void mx_server_usage_sse(mx_strbuf_t *sb, const mx_server_reply_head_t *h,
                         const mx_server_usage_t *u) {
  bool chat = h->kind == MX_SERVER_CHAT;
  mx_strbuf_puts(sb, "data: ");
  head(sb, h, chat ? "chat.completion.chunk" : "text_completion");
  mx_strbuf_puts(sb, ",\"choices\":[],");
  usage(sb, u);
  mx_strbuf_puts(sb, "}\n\n");
}

// "tool_calls":[{...}, ...] (with "index" in stream deltas).
static void tool_calls_json(mx_strbuf_t *sb, const mx_server_reply_head_t *h,
                            const mx_server_tool_calls_t *calls, bool indexed) {
  const char *tail = strchr(h->id, '-');
  tail = tail ? tail + 1 : h->id;
  mx_strbuf_puts(sb, "\"tool_calls\":[");
  for (int32_t i = 0; i < calls->n; i++) {
    if (i) mx_strbuf_puts(sb, ",");
    mx_strbuf_puts(sb, "{");
    if (indexed) mx_strbuf_printf(sb, "\"index\":%d,", (int)i);
    mx_strbuf_printf(
        sb, "\"id\":\"call_%s_%d\",\"type\":\"function\",\"function\":{\"name\":", tail, (int)i);
    str(sb, calls->calls[i].name);
    mx_strbuf_puts(sb, ",\"arguments\":");
    str(sb, calls->calls[i].arguments);
    mx_strbuf_puts(sb, "}}");
  }
  mx_strbuf_puts(sb, "]");
}

void mx_server_tool_reply_json(mx_strbuf_t *sb, const mx_server_reply_head_t *h,
                               const mx_server_tool_calls_t *calls, const mx_server_usage_t *u) {
  head(sb, h, "chat.completion");
  mx_strbuf_puts(sb, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":");
  if (calls->content) {
    mx_server_json_string(sb, calls->content, calls->content_len);
  } else {
    mx_strbuf_puts(sb, "null");
  }
  mx_strbuf_puts(sb, ",");
  tool_calls_json(sb, h, calls, false);
  mx_strbuf_puts(sb, "},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}],");
  usage(sb, u);
  mx_strbuf_puts(sb, "}");
}

void mx_server_tool_chunk_sse(mx_strbuf_t *sb, const mx_server_reply_head_t *h,
                              const mx_server_tool_calls_t *calls) {
  mx_strbuf_puts(sb, "data: ");
  head(sb, h, "chat.completion.chunk");
  mx_strbuf_puts(sb, ",\"choices\":[{\"index\":0,\"delta\":{");
  if (calls->content) {
    mx_strbuf_puts(sb, "\"content\":");
    mx_server_json_string(sb, calls->content, calls->content_len);
    mx_strbuf_puts(sb, ",");
  }
  tool_calls_json(sb, h, calls, true);
  mx_strbuf_puts(sb, "},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
}
