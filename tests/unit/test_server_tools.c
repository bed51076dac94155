// Structured outputs and tools in chat requests (src/server/request_tools.c, tools.c and their
// replies in response.c): response_format and tool fields parsed and refused by name, the
// messages' tool fields handed to the template, the constrained call's schema (compiled and
// checked against calls), the parser of calls in generated text, and the reply JSON.
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/grammar.h"
#include "mx_test.h"
#include "server/request.h"
#include "server/response.h"
#include "server/tools.h"

#define USER "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"
#define WEATHER                                                                                   \
  "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":"       \
  "\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"unit\":{\"enum\":[\"c\",\"f\"]}}," \
  "\"required\":[\"city\"],\"additionalProperties\":false}}}"
#define NOW "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}"

static mx_status_t parse(const char *body, mx_server_request_t *r, mx_server_error_t *e) {
  return mx_server_request_parse(body, strlen(body), MX_SERVER_CHAT, NULL, r, e);
}

static void reject(const char *body, const char *param, const char *frag) {
  mx_server_request_t r;
  mx_server_error_t e;
  mx_status_t st = parse(body, &r, &e);
  CHECK_MSG(st != MX_OK, "accepted: %s", body);
  if (st == MX_OK) {
    mx_server_request_free(&r);
    return;
  }
  CHECK_MSG(
      e.http_status == 400 && e.param && strcmp(e.param, param) == 0 && strstr(e.message, frag),
      "%s: %d %s '%s', want %s '%s'", body, e.http_status, e.param ? e.param : "null", e.message,
      param, frag);
}

static void test_parse(void) {
  mx_server_request_t r;
  mx_server_error_t e;
  CHECK_OK(parse("{" USER
                 ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":"
                 "\"p\",\"strict\":true,\"schema\":{\"type\":\"object\",\"properties\":{}}}}}",
                 &r, &e));
  CHECK(r.format == MX_SERVER_FORMAT_JSON_SCHEMA && r.format_schema &&
        strcmp(r.format_schema, "{\"type\":\"object\",\"properties\":{}}") == 0);
  mx_server_request_free(&r);
  CHECK_OK(parse("{" USER ",\"response_format\":{\"type\":\"json_object\"}}", &r, &e));
  CHECK(r.format == MX_SERVER_FORMAT_JSON_OBJECT && r.n_tools == 0 && !r.tools_json);
  mx_server_request_free(&r);
  CHECK_OK(parse("{" USER ",\"tools\":[" WEATHER "," NOW "],\"tool_choice\":{\"type\":\"function\","
                 "\"function\":{\"name\":\"now\"}}}",
                 &r, &e));
  CHECK(r.n_tools == 2 && strcmp(r.tool_names[1], "now") == 0 &&
        r.tool_choice == MX_SERVER_TOOLS_NAMED && strcmp(r.tool_choice_name, "now") == 0);
  CHECK(strstr(r.tool_params[1], "\"properties\":{}") != NULL);  // no parameters: none taken
  CHECK(r.tools_json && strstr(r.tools_json, "get_weather"));
  mx_server_request_free(&r);
  const char *choices[] = {"\"none\"", "\"auto\"", "\"required\""};
  mx_server_tool_choice_t want[] = {MX_SERVER_TOOLS_NONE, MX_SERVER_TOOLS_AUTO,
                                    MX_SERVER_TOOLS_REQUIRED};
  for (int i = 0; i < 3; i++) {
    char body[1024];
    snprintf(body, sizeof body, "{" USER ",\"tools\":[" NOW "],\"tool_choice\":%s}", choices[i]);
    CHECK_OK(parse(body, &r, &e));
    CHECK(r.tool_choice == want[i]);
    mx_server_request_free(&r);
  }
  // An assistant's call (arguments parsed into an object for the template) and a tool result.
  CHECK_OK(
      parse("{\"messages\":[{\"role\":\"user\",\"content\":\"w?\"},{\"role\":\"assistant\","
            "\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":"
            "{\"name\":\"now\",\"arguments\":\"{\\\"tz\\\": \\\"utc\\\"}\"}}]},{\"role\":"
            "\"tool\",\"tool_call_id\":\"c1\",\"content\":\"12:00\"}],\"tools\":[" NOW "]}",
            &r, &e));
  CHECK(r.n_messages == 3 && r.fields && r.fields[0] == NULL);
  CHECK_MSG(r.fields && r.fields[1] &&
                strcmp(r.fields[1],
                       "{\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
                       "\"function\":{\"name\":\"now\",\"arguments\":{\"tz\":"
                       "\"utc\"}}}]}") == 0,
            "%s", r.fields && r.fields[1] ? r.fields[1] : "(null)");
  CHECK(r.fields && r.fields[2] && strcmp(r.fields[2], "{\"tool_call_id\":\"c1\"}") == 0);
  CHECK(r.contents && strcmp(r.contents[1], "") == 0);
  mx_server_request_free(&r);

  reject("{" USER ",\"response_format\":{\"type\":\"yaml\"}}", "response_format", "'yaml'");
  reject("{" USER ",\"response_format\":\"json\"}", "response_format", "object");
  reject("{" USER ",\"response_format\":{\"type\":\"json_schema\"}}", "response_format",
         "'json_schema' object");
  reject("{" USER
         ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{}}}}",
         "response_format", "'name'");
  reject("{" USER ",\"tool_choice\":\"auto\"}", "tool_choice", "only allowed with 'tools'");
  reject("{" USER ",\"tools\":[" NOW "],\"tool_choice\":\"always\"}", "tool_choice", "'always'");
  reject("{" USER ",\"tools\":[" NOW
         "],\"tool_choice\":{\"type\":\"function\",\"function\":"
         "{\"name\":\"later\"}}}",
         "tool_choice", "'later', which is not in 'tools'");
  reject("{" USER ",\"tools\":[{\"type\":\"code\"}]}", "tools", "type 'function'");
  reject("{" USER ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a b\"}}]}", "tools",
         "'name'");
  reject("{" USER ",\"tools\":[" NOW "," NOW "]}", "tools", "used twice");
  reject("{" USER
         ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
         "[]}}]}",
         "tools", "'parameters'");
  reject("{\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":{}}]}", "messages",
         "'tool_calls' must be a list");
  reject("{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{}}]}]}", "messages",
         "tool call 0");
}

static const mx_server_request_t *tools_request(mx_server_request_t *r, const char *choice) {
  mx_server_error_t e;
  char body[2048];
  snprintf(body, sizeof body, "{" USER ",\"tools\":[" WEATHER "," NOW "],\"tool_choice\":%s}",
           choice);
  CHECK_OK(parse(body, r, &e));
  return r;
}

static bool grammar_accepts(const mx_grammar_t *g, const char *text) {
  mx_gmatch_t *m = NULL;
  if (mx_gmatch_create(g, &m)) return false;
  bool ok = mx_gmatch_feed(m, text, strlen(text)) && mx_gmatch_accepting(m);
  mx_gmatch_destroy(m);
  return ok;
}

static void test_forced_call_schema(void) {
  mx_server_request_t r;
  tools_request(&r, "\"required\"");
  char *schema = NULL;
  CHECK_OK(mx_server_tool_schema(&r, &schema));
  mx_grammar_t *g = NULL;
  if (schema)
    CHECK_OK(mx_grammar_from_schema_wrapped(schema, strlen(schema), MX_TOOL_CALL_PREFIX,
                                            MX_TOOL_CALL_SUFFIX, &g));
  if (g) {
    CHECK(grammar_accepts(g, "<tool_call>\n{\"name\":\"now\",\"arguments\":{}}\n</tool_call>"));
    CHECK(grammar_accepts(g,
                          "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                          "{\"city\": \"Oslo\", \"unit\": \"c\"}}\n</tool_call>"));
    CHECK(!grammar_accepts(g,
                           "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{}}\n"
                           "</tool_call>"));  // city is required
    CHECK(!grammar_accepts(g, "<tool_call>\n{\"name\":\"later\",\"arguments\":{}}\n</tool_call>"));
    CHECK(!grammar_accepts(g, "{\"name\":\"now\",\"arguments\":{}}"));
  }
  mx_grammar_destroy(g);
  free(schema);
  mx_server_request_free(&r);
  tools_request(&r, "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}");
  CHECK_OK(mx_server_tool_schema(&r, &schema));
  g = NULL;
  if (schema) CHECK_OK(mx_grammar_from_schema(schema, strlen(schema), &g));
  if (g) {
    CHECK(grammar_accepts(g, "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"x\"}}"));
    CHECK(!grammar_accepts(g, "{\"name\":\"now\",\"arguments\":{}}"));
  }
  mx_grammar_destroy(g);
  free(schema);
  mx_server_request_free(&r);
}

static void test_calls_parse(void) {
  mx_server_request_t r;
  tools_request(&r, "\"auto\"");
  mx_server_tool_calls_t c;
  const char *two =
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"
      "\n</tool_call>\n<tool_call>{\"name\":\"now\",\"arguments\":\"{}\"}</tool_call>\n";
  CHECK_OK(mx_server_tool_calls_parse(&r, two, strlen(two), &c));
  CHECK(c.n == 2);
  if (c.n == 2) {
    CHECK(strcmp(c.calls[0].name, "get_weather") == 0 &&
          strcmp(c.calls[0].arguments, "{\"city\":\"Oslo\"}") == 0);
    CHECK(strcmp(c.calls[1].name, "now") == 0 && strcmp(c.calls[1].arguments, "{}") == 0);
    CHECK(c.content && strcmp(c.content, "Let me look.") == 0);
  }
  mx_server_tool_calls_free(&c);
  // Llama 3.1's "parameters", and a last call the end cut before its closing tag.
  const char *open = "<tool_call>{\"name\":\"now\",\"parameters\":{\"a\":1}}";
  CHECK_OK(mx_server_tool_calls_parse(&r, open, strlen(open), &c));
  CHECK(c.n == 1 && !c.content && strcmp(c.calls[0].arguments, "{\"a\":1}") == 0);
  mx_server_tool_calls_free(&c);
  const char *none[] = {"plain text",
                        "<tool_call>{\"name\":\"later\",\"arguments\":{}}</tool_call>",
                        "<tool_call>{\"name\":\"now\",\"arguments\":{</tool_call>",
                        "<tool_call>{\"name\":\"now\"}</tool_call>",
                        "<tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call><tool_call>x"};
  for (int i = 0; i < 5; i++) {
    CHECK_OK(mx_server_tool_calls_parse(&r, none[i], strlen(none[i]), &c));
    CHECK_MSG(c.n == 0 && !c.calls && !c.content, "%s", none[i]);
    mx_server_tool_calls_free(&c);
  }
  mx_server_request_free(&r);
}

static void test_replies(void) {
  mx_server_tool_call_t call = {"now", "{}"};
  mx_server_tool_calls_t c = {.calls = &call, .n = 1};
  mx_server_reply_head_t h = {
      .kind = MX_SERVER_CHAT, .id = "chatcmpl-0123", .created = 7, .model = "m"};
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_server_tool_reply_json(&sb, &h, &c, &(mx_server_usage_t){.prompt = 5, .completion = 9});
  cJSON *j = cJSON_Parse(sb.data);
  const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
  const cJSON *msg = cJSON_GetObjectItem(ch, "message");
  const cJSON *tc = cJSON_GetArrayItem(cJSON_GetObjectItem(msg, "tool_calls"), 0);
  CHECK(j && strcmp(cJSON_GetObjectItem(ch, "finish_reason")->valuestring, "tool_calls") == 0);
  CHECK(cJSON_IsNull(cJSON_GetObjectItem(msg, "content")));
  CHECK(tc && strcmp(cJSON_GetObjectItem(tc, "id")->valuestring, "call_0123_0") == 0 &&
        strcmp(cJSON_GetObjectItem(tc, "type")->valuestring, "function") == 0);
  CHECK(tc &&
        strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(tc, "function"), "arguments")->valuestring,
               "{}") == 0);
  cJSON_Delete(j);
  sb.len = 0;
  c.content = "hi";
  c.content_len = 2;
  mx_server_tool_chunk_sse(&sb, &h, &c);
  CHECK(sb.data && strncmp(sb.data, "data: ", 6) == 0 &&
        strstr(sb.data, "\"delta\":{\"content\":\"hi\",\"tool_calls\":[{\"index\":0,\"id\":") &&
        strcmp(sb.data + sb.len - 2, "\n\n") == 0);
  mx_strbuf_free(&sb);
}

int main(void) {
  test_parse();
  test_forced_call_schema();
  test_calls_parse();
  test_replies();
  return mx_test_finish();
}
