// Private to src/server/: tool calls in the one format this server gives models, the one of
// Hermes and Qwen chat templates (docs/structured.md): each call is
//
//   <tool_call>
//   {"name": "<function name>", "arguments": {<the arguments>}}
//   </tool_call>
//
// With tool_choice "required" or a named function the output is constrained to one such call
// (mx_server_tool_schema gives the JSON Schema of its object); with "auto" the model's text is
// parsed for calls after it is generated (mx_server_tool_calls_parse).
#ifndef MLXCEL_SERVER_TOOLS_H
#define MLXCEL_SERVER_TOOLS_H

#include "server/request.h"

#define MX_TOOL_CALL_OPEN "<tool_call>"
#define MX_TOOL_CALL_CLOSE "</tool_call>"
// What a constrained call is wrapped in (the JSON object between them).
#define MX_TOOL_CALL_PREFIX MX_TOOL_CALL_OPEN "\n"
#define MX_TOOL_CALL_SUFFIX "\n" MX_TOOL_CALL_CLOSE

// The JSON Schema of one call's object for r's tool_choice (required: any of r's tools; named:
// that one): {"name": const, "arguments": the tool's parameters}. *out is a heap string.
mx_status_t mx_server_tool_schema(const mx_server_request_t *r, char **out);

typedef struct mx_server_tool_call {
  char *name;       // heap
  char *arguments;  // heap: the arguments object as compact JSON text
} mx_server_tool_call_t;

typedef struct mx_server_tool_calls {
  mx_server_tool_call_t *calls;  // heap [n]
  int32_t n;
  char *content;  // heap: the text outside the calls, trimmed; NULL when there is none
  size_t content_len;
} mx_server_tool_calls_t;

// Finds the calls in generated text: every <tool_call> block must hold a JSON object with a
// string "name" (one of r's tools) and an object "arguments" (or a JSON string of one), else
// the text has no calls (out->n == 0). MX_ERR_NOMEM only.
mx_status_t mx_server_tool_calls_parse(const mx_server_request_t *r, const char *text, size_t len,
                                       mx_server_tool_calls_t *out);
void mx_server_tool_calls_free(mx_server_tool_calls_t *c);  // accepts a zeroed struct

#endif  // MLXCEL_SERVER_TOOLS_H
