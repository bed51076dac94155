// Private to src/server/: the JSON texts the server sends (OpenAI's shapes). Every function
// appends to a string buffer (check sb->oom afterwards). Generated text may hold any bytes: it
// is escaped as JSON (control characters as \u00XX, invalid UTF-8 as U+FFFD).
#ifndef MLXCEL_SERVER_RESPONSE_H
#define MLXCEL_SERVER_RESPONSE_H

#include "server/request.h"
#include "server/tools.h"

// Fields every completion object repeats.
typedef struct mx_server_reply_head {
  mx_server_kind_t kind;
  const char *id;     // "cmpl-..." / "chatcmpl-..."
  long long created;  // Unix seconds
  const char *model;
} mx_server_reply_head_t;

// "stop" for EOS and stop strings, "length" for max_tokens and a full context.
const char *mx_server_finish_name(mx_finish_reason_t r);

// Appends `len` bytes as a JSON string literal (quotes included).
void mx_server_json_string(mx_strbuf_t *sb, const char *s, size_t len);

// {"error": {"message", "type", "param", "code"}}
void mx_server_error_json(mx_strbuf_t *sb, const mx_server_error_t *e);
// {"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}
void mx_server_models_json(mx_strbuf_t *sb, const char *model, long long created);
// One model object (GET /v1/models/{id}).
void mx_server_model_json(mx_strbuf_t *sb, const char *model, long long created);
// The token counts of a reply's "usage": prompt (cached of them reused from the prefix cache,
// "prompt_tokens_details.cached_tokens") and completion.
// A speculative request's steps, drafted and accepted tokens (ADR 0024) go into the extension
// "usage.speculative" when spec is set.
typedef struct mx_server_usage {
  int32_t prompt, cached, completion;
  bool spec;
  int32_t spec_steps, spec_drafted, spec_accepted;
} mx_server_usage_t;

// The whole reply of a non-streaming request, with usage.
void mx_server_completion_json(mx_strbuf_t *sb, const mx_server_reply_head_t *h, const char *text,
                               size_t len, mx_finish_reason_t finish, const mx_server_usage_t *u);
// One Server-Sent Event "data: {chunk}\n\n". text NULL = no text field (chat: empty delta);
// role != NULL adds the chat delta's role; finish NULL = finish_reason null.
void mx_server_chunk_sse(mx_strbuf_t *sb, const mx_server_reply_head_t *h, const char *role,
                         const char *text, size_t len, const char *finish);
// The usage chunk of stream_options.include_usage: "choices": [] and "usage".
void mx_server_usage_sse(mx_strbuf_t *sb, const mx_server_reply_head_t *h,
                         const mx_server_usage_t *u);

// A chat reply whose message holds tool calls: content (NULL: null), "tool_calls" with ids
// "call_<reply id's tail>_<index>", finish_reason "tool_calls".
void mx_server_tool_reply_json(mx_strbuf_t *sb, const mx_server_reply_head_t *h,
                               const mx_server_tool_calls_t *calls, const mx_server_usage_t *u);
// One chunk whose delta holds the content (when any) and every call whole, with its index.
void mx_server_tool_chunk_sse(mx_strbuf_t *sb, const mx_server_reply_head_t *h,
                              const mx_server_tool_calls_t *calls);

#endif  // MLXCEL_SERVER_RESPONSE_H
