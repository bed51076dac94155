// Tool calls (tools.h): the schema a forced call is constrained to, and the parser of calls in
// generated text.
#include "server/tools.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static mx_status_t oom(void) { return mx_error_set(MX_ERR_NOMEM, "out of memory"); }

// {"type":"object","properties":{"name":{"const":NAME},"arguments":PARAMS},
//  "required":["name","arguments"],"additionalProperties":false}
static cJSON *call_schema(const char *name, const char *params) {
  cJSON *s = cJSON_CreateObject();
  cJSON *props = cJSON_CreateObject();
  cJSON *n = cJSON_CreateObject();
  cJSON *p = cJSON_Parse(params);
  cJSON *req = cJSON_CreateArray();
  if (!s || !props || !n || !p || !req) {
    cJSON_Delete(s);
    cJSON_Delete(props);
    cJSON_Delete(n);
    cJSON_Delete(p);
    cJSON_Delete(req);
    return NULL;
  }
  cJSON_AddStringToObject(s, "type", "object");
  cJSON_AddStringToObject(n, "const", name);
  cJSON_AddItemToObject(props, "name", n);
  cJSON_AddItemToObject(props, "arguments", p);
  cJSON_AddItemToObject(s, "properties", props);
  cJSON_AddItemToArray(req, cJSON_CreateString("name"));
  cJSON_AddItemToArray(req, cJSON_CreateString("arguments"));
  cJSON_AddItemToObject(s, "required", req);
  cJSON_AddBoolToObject(s, "additionalProperties", false);
  return s;
}

mx_status_t mx_server_tool_schema(const mx_server_request_t *r, char **out) {
  *out = NULL;
  cJSON *root = NULL;
  if (r->tool_choice == MX_SERVER_TOOLS_NAMED) {
    for (int32_t i = 0; i < r->n_tools && !root; i++)
      if (strcmp(r->tool_names[i], r->tool_choice_name) == 0)
        root = call_schema(r->tool_names[i], r->tool_params[i]);
    if (!root) return oom();
  } else {
    root = cJSON_CreateObject();
    cJSON *any = root ? cJSON_AddArrayToObject(root, "anyOf") : NULL;
    if (!any) {
      cJSON_Delete(root);
      return oom();
    }
    for (int32_t i = 0; i < r->n_tools; i++) {
      cJSON *c = call_schema(r->tool_names[i], r->tool_params[i]);
      if (!c) {
        cJSON_Delete(root);
        return oom();
      }
      cJSON_AddItemToArray(any, c);
    }
  }
  // $defs of a tool's parameters stay reachable: a "$ref": "#/$defs/X" inside them resolves
  // against the document root, so the tools' definitions are lifted there.
  for (int32_t i = 0; i < r->n_tools; i++) {
    cJSON *p = cJSON_Parse(r->tool_params[i]);
    for (const char *key = "$defs"; key; key = strcmp(key, "$defs") == 0 ? "definitions" : NULL) {
      cJSON *defs = cJSON_GetObjectItemCaseSensitive(p, key);
      for (cJSON *d = defs ? defs->child : NULL; d; d = d->next) {
        cJSON *dst = cJSON_GetObjectItemCaseSensitive(root, key);
        if (!dst) dst = cJSON_AddObjectToObject(root, key);
        if (dst && !cJSON_GetObjectItemCaseSensitive(dst, d->string))
          cJSON_AddItemToObject(dst, d->string, cJSON_Duplicate(d, true));
      }
    }
    cJSON_Delete(p);
  }
  char *t = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  *out = t ? strdup(t) : NULL;
  cJSON_free(t);
  return *out ? MX_OK : oom();
}

void mx_server_tool_calls_free(mx_server_tool_calls_t *c) {
  if (!c) return;
  for (int32_t i = 0; i < c->n; i++) {
    free(c->calls[i].name);
    free(c->calls[i].arguments);
  }
  free(c->calls);
  free(c->content);
  memset(c, 0, sizeof *c);
}

static const char *find(const char *s, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(s + i, needle, k) == 0) return s + i;
  return NULL;
}

static bool is_tool(const mx_server_request_t *r, const char *name) {
  for (int32_t i = 0; i < r->n_tools; i++)
    if (strcmp(r->tool_names[i], name) == 0) return true;
  return false;
}

static bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// One call's JSON text -> name and arguments; false when it is not a call of one of r's tools.
static bool parse_call(const mx_server_request_t *r, const char *s, size_t n,
                       mx_server_tool_call_t *call, bool *nomem) {
  cJSON *j = cJSON_ParseWithLength(s, n);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(j, "arguments");
  if (!args) args = cJSON_GetObjectItemCaseSensitive(j, "parameters");  // Llama 3.1's name
  cJSON *parsed = cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : NULL;
  if (parsed) args = parsed;
  bool ok = cJSON_IsObject(j) && cJSON_IsString(name) && is_tool(r, name->valuestring) &&
            cJSON_IsObject(args);
  if (ok) {
    char *a = cJSON_PrintUnformatted(args);
    call->name = strdup(name->valuestring);
    call->arguments = a ? strdup(a) : NULL;
    cJSON_free(a);
    if (!call->name || !call->arguments) *nomem = true;
  }
  cJSON_Delete(parsed);
  cJSON_Delete(j);
  return ok;
}

mx_status_t mx_server_tool_calls_parse(const mx_server_request_t *r, const char *text, size_t len,
                                       mx_server_tool_calls_t *out) {
  memset(out, 0, sizeof *out);
  mx_strbuf_t content;
  mx_strbuf_init(&content);
  const char *p = text, *end = text + len;
  bool nomem = false, bad = false;
  int32_t cap = 0;
  while (p < end && !bad && !nomem) {
    const char *open = find(p, (size_t)(end - p), MX_TOOL_CALL_OPEN);
    if (!open) break;
    mx_strbuf_append(&content, p, (size_t)(open - p));
    const char *body = open + strlen(MX_TOOL_CALL_OPEN);
    const char *close = find(body, (size_t)(end - body), MX_TOOL_CALL_CLOSE);
    const char *body_end = close ? close : end;  // an unclosed last call (the end came first)
    if (out->n == cap) {
      cap = cap ? cap * 2 : 4;
      mx_server_tool_call_t *c = realloc(out->calls, (size_t)cap * sizeof *c);
      if (!c) {
        nomem = true;
        break;
      }
      out->calls = c;
    }
    out->calls[out->n] = (mx_server_tool_call_t){0};
    if (parse_call(r, body, (size_t)(body_end - body), &out->calls[out->n], &nomem)) {
      out->n++;
    } else {
      bad = true;
    }
    p = close ? close + strlen(MX_TOOL_CALL_CLOSE) : end;
  }
  if (p < end) mx_strbuf_append(&content, p, (size_t)(end - p));
  if (nomem || content.oom) {
    if (out->n < cap && out->calls) {
      free(out->calls[out->n].name);
      free(out->calls[out->n].arguments);
    }
    mx_strbuf_free(&content);
    mx_server_tool_calls_free(out);
    return oom();
  }
  if (bad || out->n == 0) {  // not calls after all: the whole text is the content
    mx_strbuf_free(&content);
    mx_server_tool_calls_free(out);
    return MX_OK;
  }
  // The content around the calls, trimmed; none when only whitespace is left.
  size_t a = 0, b = content.len;
  while (a < b && is_space(content.data[a])) a++;
  while (b > a && is_space(content.data[b - 1])) b--;
  if (b > a) {
    out->content = malloc(b - a + 1);
    if (!out->content) {
      mx_strbuf_free(&content);
      mx_server_tool_calls_free(out);
      return oom();
    }
    memcpy(out->content, content.data + a, b - a);
    out->content[b - a] = '\0';
    out->content_len = b - a;
  }
  mx_strbuf_free(&content);
  return MX_OK;
}
