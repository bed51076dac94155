// Chat requests' structured-output and tool fields (request.h, mx_server_request_parse_tools):
// response_format, tools, tool_choice, and the fields of messages a chat template reads besides
// role and content (an assistant's tool_calls, a tool result's tool_call_id and name).
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "server/request.h"

// Tools per request and the bytes of a tool's name (OpenAI's own limits).
enum { MAX_TOOLS = 128, MAX_TOOL_NAME = 64 };

#define BAD(param, ...) \
  mx_server_error_set(err, 400, "invalid_request_error", param, NULL, __VA_ARGS__)

static mx_status_t oom(mx_server_error_t *err) {
  return mx_server_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
}

static const cJSON *get(const cJSON *obj, const char *name) {
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, name);
  return f && !cJSON_IsNull(f) ? f : NULL;
}

static char *print(const cJSON *j) { return j ? cJSON_PrintUnformatted(j) : NULL; }

// cJSON_PrintUnformatted's text in a malloc'd copy (cJSON's hooks are malloc/free here too, but
// the request's strings are freed with free(): keep one allocator).
static char *print_dup(const cJSON *j) {
  char *t = print(j);
  if (!t) return NULL;
  char *d = strdup(t);
  cJSON_free(t);
  return d;
}

static mx_status_t parse_format(const cJSON *root, mx_server_request_t *r, mx_server_error_t *err) {
  const cJSON *f = get(root, "response_format");
  if (!f) return MX_OK;
  const cJSON *type = cJSON_IsObject(f) ? get(f, "type") : NULL;
  if (!cJSON_IsString(type))
    return BAD("response_format", "'response_format' must be an object with a string 'type'");
  const char *t = type->valuestring;
  if (strcmp(t, "text") == 0) return MX_OK;
  if (strcmp(t, "json_object") == 0) {
    r->format = MX_SERVER_FORMAT_JSON_OBJECT;
    return MX_OK;
  }
  if (strcmp(t, "json_schema") != 0)
    return BAD("response_format",
               "'response_format' type '%.64s' is not one of text, json_object, json_schema", t);
  const cJSON *js = get(f, "json_schema");
  if (!cJSON_IsObject(js))
    return BAD("response_format", "'response_format' json_schema needs a 'json_schema' object");
  const cJSON *name = get(js, "name");
  if (!cJSON_IsString(name) || !name->valuestring[0])
    return BAD("response_format", "'response_format.json_schema' needs a string 'name'");
  const cJSON *strict = get(js, "strict");
  if (strict && !cJSON_IsBool(strict))
    return BAD("response_format", "'response_format.json_schema.strict' must be true or false");
  const cJSON *schema = get(js, "schema");
  if (schema && !cJSON_IsObject(schema))
    return BAD("response_format", "'response_format.json_schema.schema' must be an object");
  r->format = MX_SERVER_FORMAT_JSON_SCHEMA;
  // No schema: any JSON value (OpenAI's default for a missing schema is an open one).
  r->format_schema = schema ? print_dup(schema) : strdup("{}");
  return r->format_schema ? MX_OK : oom(err);
}

static bool name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > MAX_TOOL_NAME) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-' || c == '.'))
      return false;
  }
  return true;
}

static mx_status_t parse_tools(const cJSON *root, mx_server_request_t *r, mx_server_error_t *err) {
  const cJSON *t = get(root, "tools");
  if (!t) return MX_OK;
  if (!cJSON_IsArray(t)) return BAD("tools", "'tools' must be a list of tools");
  int32_t n = cJSON_GetArraySize(t);
  if (n > MAX_TOOLS)
    return BAD("tools", "'tools' has %d tools; at most %d are allowed", n, MAX_TOOLS);
  if (n == 0) return MX_OK;
  r->tool_names = calloc((size_t)n, sizeof *r->tool_names);
  r->tool_params = calloc((size_t)n, sizeof *r->tool_params);
  if (!r->tool_names || !r->tool_params) return oom(err);
  int32_t i = 0;
  for (const cJSON *tool = t->child; tool; tool = tool->next, i++) {
    const cJSON *type = cJSON_IsObject(tool) ? get(tool, "type") : NULL;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0)
      return BAD("tools", "tool %d must be an object with type 'function'", i);
    const cJSON *fn = get(tool, "function");
    const cJSON *name = cJSON_IsObject(fn) ? get(fn, "name") : NULL;
    if (!cJSON_IsString(name) || !name_ok(name->valuestring))
      return BAD("tools",
                 "tool %d needs a function 'name' of 1 to %d letters, digits, '_', '-' or '.'", i,
                 MAX_TOOL_NAME);
    for (int32_t k = 0; k < i; k++)
      if (strcmp(r->tool_names[k], name->valuestring) == 0)
        return BAD("tools", "tool %d: the name '%s' is used twice", i, name->valuestring);
    const cJSON *params = get(fn, "parameters");
    if (params && !cJSON_IsObject(params))
      return BAD("tools", "tool %d ('%s'): 'parameters' must be a JSON Schema object", i,
                 name->valuestring);
    r->n_tools = i + 1;
    r->tool_names[i] = strdup(name->valuestring);
    // No parameters: the function takes none (an empty object).
    r->tool_params[i] = params ? print_dup(params)
                               : strdup(
                                     "{\"type\":\"object\",\"properties\":{},"
                                     "\"additionalProperties\":false}");
    if (!r->tool_names[i] || !r->tool_params[i]) return oom(err);
  }
  r->tools_json = print_dup(t);
  return r->tools_json ? MX_OK : oom(err);
}

static mx_status_t parse_choice(const cJSON *root, mx_server_request_t *r, mx_server_error_t *err) {
  const cJSON *c = get(root, "tool_choice");
  if (!c) return MX_OK;
  if (r->n_tools == 0) return BAD("tool_choice", "'tool_choice' is only allowed with 'tools'");
  if (cJSON_IsString(c)) {
    const char *v = c->valuestring;
    if (strcmp(v, "auto") == 0) {
      r->tool_choice = MX_SERVER_TOOLS_AUTO;
    } else if (strcmp(v, "none") == 0) {
      r->tool_choice = MX_SERVER_TOOLS_NONE;
    } else if (strcmp(v, "required") == 0) {
      r->tool_choice = MX_SERVER_TOOLS_REQUIRED;
    } else {
      return BAD("tool_choice", "'tool_choice' '%.64s' is not one of none, auto, required", v);
    }
    return MX_OK;
  }
  const cJSON *type = cJSON_IsObject(c) ? get(c, "type") : NULL;
  const cJSON *fn = get(c, "function");
  const cJSON *name = cJSON_IsObject(fn) ? get(fn, "name") : NULL;
  if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 || !cJSON_IsString(name))
    return BAD("tool_choice",
               "'tool_choice' must be none, auto, required or {\"type\": \"function\", "
               "\"function\": {\"name\": ...}}");
  for (int32_t i = 0; i < r->n_tools; i++)
    if (strcmp(r->tool_names[i], name->valuestring) == 0) {
      r->tool_choice = MX_SERVER_TOOLS_NAMED;
      r->tool_choice_name = strdup(name->valuestring);
      return r->tool_choice_name ? MX_OK : oom(err);
    }
  return BAD("tool_choice", "'tool_choice' names the function '%.64s', which is not in 'tools'",
             name->valuestring);
}

// A message's fields besides role and content, with each tool call's arguments (a JSON string
// in the API) parsed into the object chat templates expect (as transformers documents them).
static mx_status_t message_fields(const cJSON *m, int32_t i, char **out, mx_server_error_t *err) {
  *out = NULL;
  cJSON *o = cJSON_CreateObject();
  if (!o) return oom(err);
  mx_status_t st = MX_OK;
  for (const cJSON *f = m->child; f && !st; f = f->next) {
    if (strcmp(f->string, "role") == 0 || strcmp(f->string, "content") == 0 || cJSON_IsNull(f))
      continue;
    if (strcmp(f->string, "tool_calls") == 0) {
      if (!cJSON_IsArray(f)) {
        st = BAD("messages", "message %d: 'tool_calls' must be a list", i);
        break;
      }
      int32_t k = 0;
      for (const cJSON *c = f->child; c && !st; c = c->next, k++) {
        const cJSON *fn = cJSON_IsObject(c) ? get(c, "function") : NULL;
        const cJSON *name = cJSON_IsObject(fn) ? get(fn, "name") : NULL;
        const cJSON *args = cJSON_IsObject(fn) ? get(fn, "arguments") : NULL;
        if (!cJSON_IsString(name) || (args && !cJSON_IsString(args) && !cJSON_IsObject(args)))
          st = BAD("messages",
                   "message %d: tool call %d needs a function with a string 'name' and "
                   "'arguments' as a JSON string",
                   i, k);
      }
    }
    if (st) break;
    cJSON *copy = cJSON_Duplicate(f, true);
    if (!copy || !cJSON_AddItemToObject(o, f->string, copy)) {
      cJSON_Delete(copy);
      st = oom(err);
    }
  }
  cJSON *calls = cJSON_GetObjectItemCaseSensitive(o, "tool_calls");
  for (cJSON *c = calls ? calls->child : NULL; c && !st; c = c->next) {
    cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
    cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
    if (!cJSON_IsString(args)) continue;
    cJSON *parsed = cJSON_Parse(args->valuestring);
    if (cJSON_IsObject(parsed)) {
      cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", parsed);
    } else {
      cJSON_Delete(parsed);  // not an object: the template gets the string
    }
  }
  if (!st && o->child) {
    *out = print_dup(o);
    if (!*out) st = oom(err);
  }
  cJSON_Delete(o);
  return st;
}

mx_status_t mx_server_request_parse_tools(const void *root_, mx_server_request_t *r,
                                          mx_server_error_t *err) {
  const cJSON *root = root_;
  mx_status_t st = parse_format(root, r, err);
  if (!st) st = parse_tools(root, r, err);
  if (!st) st = parse_choice(root, r, err);
  if (!st && get(root, "parallel_tool_calls") && !cJSON_IsBool(get(root, "parallel_tool_calls")))
    st = BAD("parallel_tool_calls", "'parallel_tool_calls' must be true or false");
  const cJSON *msgs = get(root, "messages");
  if (!st && r->n_messages > 0) {
    r->fields = calloc((size_t)r->n_messages, sizeof *r->fields);
    if (!r->fields) st = oom(err);
  }
  int32_t i = 0;
  for (const cJSON *m = msgs ? msgs->child : NULL; m && !st && i < r->n_messages; m = m->next, i++)
    st = message_fields(m, i, &r->fields[i], err);
  return st;
}
