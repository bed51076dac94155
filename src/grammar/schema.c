// JSON Schema -> grammar nodes (include/mlxcel/grammar.h lists the subset). Each schema object
// becomes one node; $ref targets are compiled once (memoized by their schema object) so that
// recursive definitions become cycles in the node table, which the matcher's stacks unfold.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/try.h"
#include "grammar/grammar_internal.h"

// Bounds on what one schema may compile to (hostile schemas): the frame's 16-bit node and
// index fields, and a size no real tool definition comes near.
enum {
  MAX_NODES = 8192,
  MAX_PROPS = 1024,      // properties of one object
  MAX_LITS = 1024,       // values of one enum
  MAX_LIT_BYTES = 4096,  // bytes of one enum value or property key
  MAX_SCHEMA_BYTES = 1 << 20,
  MAX_PATH = 256,
};

typedef struct ref_memo {
  const cJSON *target;
  int32_t node;
} ref_memo_t;

typedef struct cctx {
  mx_grammar_t *g;
  const cJSON *root;
  char path[MAX_PATH];
  size_t path_len;
  ref_memo_t *memo;
  int32_t n_memo, cap_memo;
  int32_t any;  // the any-value node, -1 until needed
  int depth;
} cctx_t;

static const char *const kIgnored[] = {
    "title",  "description", "default",     "examples", "$schema",   "$id",       "$comment",
    "strict", "$defs",       "definitions", "readOnly", "writeOnly", "deprecated"};
static const char *const kKnown[] = {"type",      "properties", "required", "additionalProperties",
                                     "items",     "minItems",   "maxItems", "minLength",
                                     "maxLength", "enum",       "const",    "anyOf",
                                     "$ref",      "allOf"};

// ---- Growth helpers (the arena holds everything; arrays grow by doubling) ----

static bool grow(mx_grammar_t *g, void **arr, int32_t n, int32_t *cap, size_t elem) {
  if (n < *cap) return true;
  int32_t nc = *cap ? *cap * 2 : 16;
  void *p = mx_arena_grow(g->arena, *arr, (size_t)n, (size_t)nc, elem);
  if (!p) return false;
  *arr = p;
  *cap = nc;
  return true;
}

static mx_status_t oom(void) { return mx_error_set(MX_ERR_NOMEM, "schema: out of memory"); }

static mx_status_t new_node(cctx_t *c, gn_kind_t kind, int32_t *out) {
  mx_grammar_t *g = c->g;
  if (g->n_nodes >= MAX_NODES)
    return mx_error_set(MX_ERR_UNSUPPORTED, "schema: more than %d nodes at %s", MAX_NODES, c->path);
  if (!grow(g, (void **)&g->nodes, g->n_nodes, &g->cap_nodes, sizeof *g->nodes)) return oom();
  g->nodes[g->n_nodes] = (gnode_t){.kind = kind, .child = -1, .max = UINT32_MAX};
  *out = g->n_nodes++;
  return MX_OK;
}

static mx_status_t add_lit(cctx_t *c, const char *s, size_t len) {
  mx_grammar_t *g = c->g;
  if (len == 0 || len > MAX_LIT_BYTES)
    return mx_error_set(MX_ERR_UNSUPPORTED, "schema: a value of %zu bytes at %s (at most %d)", len,
                        c->path, MAX_LIT_BYTES);
  if (!grow(g, (void **)&g->lits, g->n_lits, &g->cap_lits, sizeof *g->lits)) return oom();
  char *p = mx_arena_strndup(g->arena, s, len);
  if (!p) return oom();
  g->lits[g->n_lits++] = (glit_t){p, (uint32_t)len};
  return MX_OK;
}

static int lit_cmp(const void *a, const void *b) {
  const glit_t *x = a, *y = b;
  uint32_t n = x->len < y->len ? x->len : y->len;
  int r = memcmp(x->s, y->s, n);
  if (r) return r;
  return x->len < y->len ? -1 : x->len > y->len;
}

// A LITERALS node over lits[first ..): sorted (the matcher relies on it), duplicates removed.
static mx_status_t literals_node(cctx_t *c, int32_t first, int32_t *out) {
  mx_grammar_t *g = c->g;
  int32_t n = g->n_lits - first;
  if (n == 0)
    return mx_error_set(MX_ERR_UNSUPPORTED, "schema: no value can match at %s (an empty enum?)",
                        c->path);
  if (n > MAX_LITS)
    return mx_error_set(MX_ERR_UNSUPPORTED, "schema: more than %d values at %s", MAX_LITS, c->path);
  qsort(g->lits + first, (size_t)n, sizeof *g->lits, lit_cmp);
  int32_t w = 1;
  for (int32_t i = 1; i < n; i++)
    if (lit_cmp(&g->lits[first + i], &g->lits[first + w - 1]) != 0)
      g->lits[first + w++] = g->lits[first + i];
  g->n_lits = first + w;
  mx_status_t st = new_node(c, GN_LITERALS, out);
  if (st) return st;
  g->nodes[*out].first = first;
  g->nodes[*out].n = w;
  return MX_OK;
}

static mx_status_t text_literals(cctx_t *c, const char *const *texts, int n, int32_t *out) {
  int32_t first = c->g->n_lits;
  for (int i = 0; i < n; i++) {
    mx_status_t st = add_lit(c, texts[i], strlen(texts[i]));
    if (st) return st;
  }
  return literals_node(c, first, out);
}

// ---- Paths for messages ----

static size_t path_push(cctx_t *c, const char *seg) {
  size_t old = c->path_len;
  int w = snprintf(c->path + old, sizeof c->path - old, "/%s", seg);
  if (w > 0) c->path_len = old + (size_t)w < sizeof c->path ? old + (size_t)w : sizeof c->path - 1;
  return old;
}

static void path_pop(cctx_t *c, size_t old) {
  c->path_len = old;
  c->path[old] = '\0';
}

// ---- Nodes ----

static mx_status_t compile(cctx_t *c, const cJSON *s, int32_t *out);

// The any-value node: object, array, string, number, true, false or null.
static mx_status_t any_node(cctx_t *c, int32_t *out) {
  if (c->any >= 0) {
    *out = c->any;
    return MX_OK;
  }
  mx_grammar_t *g = c->g;
  int32_t any = -1, obj = -1, arr = -1, str = -1, num = -1, lit = -1;
  static const char *const kConsts[] = {"true", "false", "null"};
  MX_TRY(new_node(c, GN_ANYOF, &any));
  c->any = any;
  MX_TRY(new_node(c, GN_FREEOBJ, &obj));
  MX_TRY(new_node(c, GN_ARRAY, &arr));
  MX_TRY(new_node(c, GN_STRING, &str));
  MX_TRY(new_node(c, GN_NUMBER, &num));
  MX_TRY(text_literals(c, kConsts, 3, &lit));
  g->nodes[obj].child = any;
  g->nodes[arr].child = any;
  int32_t first = g->n_kids;
  int32_t alts[5] = {obj, arr, str, num, lit};
  for (int i = 0; i < 5; i++) {
    if (!grow(g, (void **)&g->kids, g->n_kids, &g->cap_kids, sizeof *g->kids)) return oom();
    g->kids[g->n_kids++] = alts[i];
  }
  g->nodes[any].first = first;
  g->nodes[any].n = 5;
  *out = any;
  return MX_OK;
}

static mx_status_t get_count(cctx_t *c, const cJSON *s, const char *key, uint32_t *v) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(s, key);
  if (!j) return MX_OK;
  if (!cJSON_IsNumber(j) || j->valuedouble < 0 || j->valuedouble > 1e9 ||
      j->valuedouble != (double)(int64_t)j->valuedouble)
    return mx_error_set(MX_ERR_INVALID_ARG, "schema: '%s' at %s must be a non-negative integer",
                        key, c->path);
  *v = (uint32_t)j->valuedouble;
  return MX_OK;
}

static mx_status_t object_node(cctx_t *c, const cJSON *s, int32_t *out) {
  mx_grammar_t *g = c->g;
  const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
  const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
  const cJSON *add = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
  if (req && !cJSON_IsArray(req))
    return mx_error_set(MX_ERR_INVALID_ARG, "schema: 'required' at %s is not an array", c->path);
  if (add && !cJSON_IsBool(add) && !cJSON_IsObject(add))
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "schema: 'additionalProperties' at %s is neither a boolean nor a schema",
                        c->path);
  if (!props) {
    if (req && cJSON_GetArraySize(req) > 0)
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "schema: 'required' without 'properties' at %s is not supported",
                          c->path);
    int32_t node, value;
    if (cJSON_IsObject(add)) {
      size_t old = path_push(c, "additionalProperties");
      mx_status_t st = compile(c, add, &value);
      path_pop(c, old);
      if (st) return st;
    } else {
      MX_TRY(any_node(c, &value));
    }
    MX_TRY(new_node(c, GN_FREEOBJ, &node));
    g->nodes[node].child = value;
    *out = node;
    return MX_OK;
  }
  if (!cJSON_IsObject(props))
    return mx_error_set(MX_ERR_INVALID_ARG, "schema: 'properties' at %s is not an object", c->path);
  int32_t n = cJSON_GetArraySize(props);
  if (n > MAX_PROPS)
    return mx_error_set(MX_ERR_UNSUPPORTED, "schema: more than %d properties at %s", MAX_PROPS,
                        c->path);
  for (const cJSON *r = req ? req->child : NULL; r; r = r->next) {
    if (!cJSON_IsString(r) || !cJSON_GetObjectItemCaseSensitive(props, r->valuestring))
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "schema: 'required' at %s names '%.100s', which is not in 'properties'",
                          c->path, cJSON_IsString(r) ? r->valuestring : "(not a string)");
  }
  // The properties' slots first (children compile into later slots of the same array).
  int32_t node, first = g->n_props;
  for (int32_t i = 0; i < n; i++) {
    if (!grow(g, (void **)&g->props, g->n_props, &g->cap_props, sizeof *g->props)) return oom();
    g->props[g->n_props++] = (gprop_t){0};
  }
  MX_TRY(new_node(c, GN_OBJECT, &node));
  g->nodes[node].first = first;
  g->nodes[node].n = n;
  int32_t i = 0;
  for (const cJSON *p = props->child; p; p = p->next, i++) {
    // The key as the JSON string literal the output will hold.
    cJSON *key = cJSON_CreateString(p->string);
    char *lit = key ? cJSON_PrintUnformatted(key) : NULL;
    cJSON_Delete(key);
    if (!lit) return oom();
    size_t klen = strlen(lit);
    char *k = klen <= MAX_LIT_BYTES ? mx_arena_strndup(g->arena, lit, klen) : NULL;
    cJSON_free(lit);
    if (klen > MAX_LIT_BYTES)
      return mx_error_set(MX_ERR_UNSUPPORTED, "schema: a property name of %zu bytes at %s", klen,
                          c->path);
    if (!k) return oom();
    bool required = false;
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next)
      if (strcmp(r->valuestring, p->string) == 0) required = true;
    size_t o1 = path_push(c, "properties");
    size_t o2 = path_push(c, p->string);
    int32_t child;
    mx_status_t st = compile(c, p, &child);
    path_pop(c, o2);
    path_pop(c, o1);
    if (st) return st;
    g->props[first + i] = (gprop_t){k, (uint32_t)klen, child, required};
  }
  *out = node;
  return MX_OK;
}

static mx_status_t array_node(cctx_t *c, const cJSON *s, int32_t *out) {
  const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
  uint32_t mn = 0, mx = UINT32_MAX;
  MX_TRY(get_count(c, s, "minItems", &mn));
  MX_TRY(get_count(c, s, "maxItems", &mx));
  if (mn > mx)
    return mx_error_set(MX_ERR_INVALID_ARG, "schema: minItems > maxItems at %s", c->path);
  int32_t item;
  if (items) {
    if (!cJSON_IsObject(items))
      return mx_error_set(MX_ERR_UNSUPPORTED, "schema: 'items' at %s must be a schema object",
                          c->path);
    size_t old = path_push(c, "items");
    mx_status_t st = compile(c, items, &item);
    path_pop(c, old);
    if (st) return st;
  } else {
    MX_TRY(any_node(c, &item));
  }
  int32_t node;
  MX_TRY(new_node(c, GN_ARRAY, &node));
  c->g->nodes[node].child = item;
  c->g->nodes[node].min = mn;
  c->g->nodes[node].max = mx;
  *out = node;
  return MX_OK;
}

static bool type_matches(const cJSON *v, const char *type) {
  if (!type) return true;
  if (strcmp(type, "string") == 0) return cJSON_IsString(v);
  if (strcmp(type, "number") == 0) return cJSON_IsNumber(v);
  if (strcmp(type, "integer") == 0)
    return cJSON_IsNumber(v) && v->valuedouble == (double)(int64_t)v->valuedouble;
  if (strcmp(type, "boolean") == 0) return cJSON_IsBool(v);
  if (strcmp(type, "null") == 0) return cJSON_IsNull(v);
  if (strcmp(type, "object") == 0) return cJSON_IsObject(v);
  if (strcmp(type, "array") == 0) return cJSON_IsArray(v);
  return false;
}

// enum / const: each value's compact JSON text is a literal (of the values `type` allows).
static mx_status_t values_node(cctx_t *c, const cJSON *values, bool one, const char *type,
                               int32_t *out) {
  int32_t first = c->g->n_lits;
  const cJSON *v = one ? values : values->child;
  for (; v; v = one ? NULL : v->next) {
    if (!type_matches(v, type)) continue;
    char *text = cJSON_PrintUnformatted(v);
    if (!text) return oom();
    mx_status_t st = add_lit(c, text, strlen(text));
    cJSON_free(text);
    if (st) return st;
  }
  return literals_node(c, first, out);
}

static mx_status_t anyof_node(cctx_t *c, const cJSON *alts, const char *key, int32_t *out) {
  mx_grammar_t *g = c->g;
  if (!cJSON_IsArray(alts) || cJSON_GetArraySize(alts) == 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "schema: '%s' at %s must be a non-empty array", key,
                        c->path);
  int32_t n = cJSON_GetArraySize(alts);
  if (n > MAX_LITS)
    return mx_error_set(MX_ERR_UNSUPPORTED, "schema: more than %d alternatives at %s", MAX_LITS,
                        c->path);
  int32_t *tmp = calloc((size_t)n, sizeof *tmp);
  if (!tmp) return oom();
  int32_t i = 0;
  mx_status_t st = MX_OK;
  for (const cJSON *a = alts->child; a && !st; a = a->next, i++) {
    char seg[32];
    snprintf(seg, sizeof seg, "%s/%d", key, (int)i);
    size_t old = path_push(c, seg);
    st = compile(c, a, &tmp[i]);
    path_pop(c, old);
  }
  int32_t node = -1;
  if (!st) st = new_node(c, GN_ANYOF, &node);
  if (!st) {
    g->nodes[node].first = g->n_kids;
    g->nodes[node].n = n;
    for (i = 0; i < n && !st; i++) {
      if (!grow(g, (void **)&g->kids, g->n_kids, &g->cap_kids, sizeof *g->kids))
        st = oom();
      else
        g->kids[g->n_kids++] = tmp[i];
    }
  }
  free(tmp);
  if (!st) *out = node;
  return st;
}

static mx_status_t ref_node(cctx_t *c, const cJSON *ref, int32_t *out) {
  if (!cJSON_IsString(ref))
    return mx_error_set(MX_ERR_INVALID_ARG, "schema: '$ref' at %s is not a string", c->path);
  const char *r = ref->valuestring;
  const char *name = NULL, *where = NULL;
  if (strncmp(r, "#/$defs/", 8) == 0) {
    name = r + 8;
    where = "$defs";
  } else if (strncmp(r, "#/definitions/", 14) == 0) {
    name = r + 14;
    where = "definitions";
  } else if (strcmp(r, "#") == 0) {
    name = NULL;
  } else {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "schema: '$ref' '%.100s' at %s (only #, #/$defs/NAME and "
                        "#/definitions/NAME are supported)",
                        r, c->path);
  }
  const cJSON *target = c->root;
  if (name) {
    const cJSON *defs = cJSON_GetObjectItemCaseSensitive(c->root, where);
    target = defs ? cJSON_GetObjectItemCaseSensitive(defs, name) : NULL;
    if (!target)
      return mx_error_set(MX_ERR_INVALID_ARG, "schema: '$ref' '%.100s' at %s names nothing", r,
                          c->path);
  }
  for (int32_t i = 0; i < c->n_memo; i++)
    if (c->memo[i].target == target) {
      *out = c->memo[i].node;
      return MX_OK;
    }
  // A one-alternative ANYOF stands for the target while it compiles, so a recursive reference
  // finds it in the memo; its kid is filled in afterwards.
  int32_t node;
  MX_TRY(new_node(c, GN_ANYOF, &node));
  if (c->n_memo == c->cap_memo) {
    int32_t nc = c->cap_memo ? c->cap_memo * 2 : 8;
    ref_memo_t *m = realloc(c->memo, (size_t)nc * sizeof *m);
    if (!m) return oom();
    c->memo = m;
    c->cap_memo = nc;
  }
  c->memo[c->n_memo++] = (ref_memo_t){target, node};
  char saved[MAX_PATH];
  memcpy(saved, c->path, sizeof saved);
  size_t saved_len = c->path_len;
  snprintf(c->path, sizeof c->path, "%s", r);
  c->path_len = strlen(c->path);
  int32_t body;
  mx_status_t st = compile(c, target, &body);
  memcpy(c->path, saved, sizeof saved);
  c->path_len = saved_len;
  if (st) return st;
  mx_grammar_t *g = c->g;
  if (!grow(g, (void **)&g->kids, g->n_kids, &g->cap_kids, sizeof *g->kids)) return oom();
  g->nodes[node].first = g->n_kids;
  g->nodes[node].n = 1;
  g->kids[g->n_kids++] = body;
  *out = node;
  return MX_OK;
}

static bool in_list(const char *k, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(k, list[i]) == 0) return true;
  return false;
}

// One schema of a single type (or none: decided by its keywords).
static mx_status_t typed_node(cctx_t *c, const cJSON *s, const char *type, int32_t *out) {
  const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
  const cJSON *cn = cJSON_GetObjectItemCaseSensitive(s, "const");
  if (cn) return values_node(c, cn, true, type, out);
  if (en) {
    if (!cJSON_IsArray(en))
      return mx_error_set(MX_ERR_INVALID_ARG, "schema: 'enum' at %s is not an array", c->path);
    return values_node(c, en, false, type, out);
  }
  if (!type) {
    if (cJSON_GetObjectItemCaseSensitive(s, "properties") ||
        cJSON_GetObjectItemCaseSensitive(s, "additionalProperties"))
      return object_node(c, s, out);
    if (cJSON_GetObjectItemCaseSensitive(s, "items")) return array_node(c, s, out);
    return any_node(c, out);
  }
  if (strcmp(type, "object") == 0) return object_node(c, s, out);
  if (strcmp(type, "array") == 0) return array_node(c, s, out);
  if (strcmp(type, "string") == 0) {
    MX_TRY(new_node(c, GN_STRING, out));
    gnode_t *nd = &c->g->nodes[*out];
    MX_TRY(get_count(c, s, "minLength", &nd->min));
    MX_TRY(get_count(c, s, "maxLength", &nd->max));
    if (nd->min > nd->max)
      return mx_error_set(MX_ERR_INVALID_ARG, "schema: minLength > maxLength at %s", c->path);
    return MX_OK;
  }
  if (strcmp(type, "number") == 0) return new_node(c, GN_NUMBER, out);
  if (strcmp(type, "integer") == 0) return new_node(c, GN_INTEGER, out);
  if (strcmp(type, "boolean") == 0) {
    static const char *const kBool[] = {"true", "false"};
    return text_literals(c, kBool, 2, out);
  }
  if (strcmp(type, "null") == 0) {
    static const char *const kNull[] = {"null"};
    return text_literals(c, kNull, 1, out);
  }
  return mx_error_set(MX_ERR_UNSUPPORTED, "schema: type '%.40s' at %s is not supported", type,
                      c->path);
}

static mx_status_t compile_body(cctx_t *c, const cJSON *s, int32_t *out) {
  if (cJSON_IsTrue(s)) return any_node(c, out);
  if (!cJSON_IsObject(s))
    return mx_error_set(MX_ERR_UNSUPPORTED, "schema: %s is not a schema object", c->path);
  for (const cJSON *k = s->child; k; k = k->next) {
    if (in_list(k->string, kIgnored, sizeof kIgnored / sizeof *kIgnored)) continue;
    if (!in_list(k->string, kKnown, sizeof kKnown / sizeof *kKnown))
      return mx_error_set(MX_ERR_UNSUPPORTED, "schema: '%.60s' at %s is not supported", k->string,
                          c->path[0] ? c->path : "#");
  }
  const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
  const cJSON *anyof = cJSON_GetObjectItemCaseSensitive(s, "anyOf");
  const cJSON *allof = cJSON_GetObjectItemCaseSensitive(s, "allOf");
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
  int combos = (ref != NULL) + (anyof != NULL) + (allof != NULL);
  if (combos > 1 || (combos && type))
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "schema: '$ref', 'anyOf' and 'allOf' combined with each other or with "
                        "'type' at %s are not supported",
                        c->path);
  if (ref) return ref_node(c, ref, out);
  if (anyof) return anyof_node(c, anyof, "anyOf", out);
  if (allof) {
    if (!cJSON_IsArray(allof) || cJSON_GetArraySize(allof) != 1)
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "schema: 'allOf' at %s with other than one schema is not supported",
                          c->path);
    size_t old = path_push(c, "allOf/0");
    mx_status_t st = compile(c, allof->child, out);
    path_pop(c, old);
    return st;
  }
  if (!type) return typed_node(c, s, NULL, out);
  if (cJSON_IsString(type)) return typed_node(c, s, type->valuestring, out);
  if (!cJSON_IsArray(type) || cJSON_GetArraySize(type) == 0)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "schema: 'type' at %s is neither a string nor a non-empty array", c->path);
  if (cJSON_GetArraySize(type) == 1) {
    if (!cJSON_IsString(type->child))
      return mx_error_set(MX_ERR_INVALID_ARG, "schema: 'type' at %s lists a non-string", c->path);
    return typed_node(c, s, type->child->valuestring, out);
  }
  // A list of types: one alternative per type, each with the schema's other keywords.
  mx_grammar_t *g = c->g;
  int32_t n = cJSON_GetArraySize(type), alts[8];
  if (n > 8) return mx_error_set(MX_ERR_UNSUPPORTED, "schema: more than 8 types at %s", c->path);
  int32_t i = 0;
  for (const cJSON *t = type->child; t; t = t->next, i++) {
    if (!cJSON_IsString(t))
      return mx_error_set(MX_ERR_INVALID_ARG, "schema: 'type' at %s lists a non-string", c->path);
    MX_TRY(typed_node(c, s, t->valuestring, &alts[i]));
  }
  int32_t node;
  MX_TRY(new_node(c, GN_ANYOF, &node));
  g->nodes[node].first = g->n_kids;
  g->nodes[node].n = n;
  for (i = 0; i < n; i++) {
    if (!grow(g, (void **)&g->kids, g->n_kids, &g->cap_kids, sizeof *g->kids)) return oom();
    g->kids[g->n_kids++] = alts[i];
  }
  *out = node;
  return MX_OK;
}

static mx_status_t compile(cctx_t *c, const cJSON *s, int32_t *out) {
  if (++c->depth > MX_JSON_MAX_DEPTH) {
    c->depth--;
    return mx_error_set(MX_ERR_UNSUPPORTED, "schema: nested deeper than %d at %s",
                        MX_JSON_MAX_DEPTH, c->path);
  }
  mx_status_t st = compile_body(c, s, out);
  c->depth--;
  return st;
}

// ---- Public ----

static mx_status_t grammar_new(mx_grammar_t **out) {
  *out = NULL;
  mx_grammar_t *g = calloc(1, sizeof *g);
  if (g) g->arena = mx_arena_create();
  if (!g || !g->arena) {
    free(g);
    return oom();
  }
  *out = g;
  return MX_OK;
}

void mx_grammar_destroy(mx_grammar_t *g) {
  if (!g) return;
  mx_arena_destroy(g->arena);
  free(g);
}

// Wraps node `body` between literal prefix and suffix (a SEQ node), or returns it as is.
static mx_status_t wrap(cctx_t *c, int32_t body, const char *prefix, const char *suffix,
                        int32_t *out) {
  mx_grammar_t *g = c->g;
  int32_t parts[3], n = 0;
  if (prefix && *prefix) {
    const char *t[1] = {prefix};
    MX_TRY(text_literals(c, t, 1, &parts[n++]));
  }
  parts[n++] = body;
  if (suffix && *suffix) {
    const char *t[1] = {suffix};
    MX_TRY(text_literals(c, t, 1, &parts[n++]));
  }
  if (n == 1) {
    *out = body;
    return MX_OK;
  }
  int32_t node;
  MX_TRY(new_node(c, GN_SEQ, &node));
  g->nodes[node].first = g->n_kids;
  g->nodes[node].n = n;
  for (int32_t i = 0; i < n; i++) {
    if (!grow(g, (void **)&g->kids, g->n_kids, &g->cap_kids, sizeof *g->kids)) return oom();
    g->kids[g->n_kids++] = parts[i];
  }
  *out = node;
  return MX_OK;
}

mx_status_t mx_grammar_from_schema_wrapped(const char *schema, size_t len, const char *prefix,
                                           const char *suffix, mx_grammar_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_grammar_from_schema: out is NULL");
  *out = NULL;
  if (!schema) return mx_error_set(MX_ERR_INVALID_ARG, "mx_grammar_from_schema: no schema");
  cJSON *root = NULL;
  MX_TRY(mx_json_parse(schema, len, MAX_SCHEMA_BYTES, MX_JSON_MAX_DEPTH, "schema", &root));
  mx_grammar_t *g = NULL;
  mx_status_t st = grammar_new(&g);
  cctx_t c = {.g = g, .root = root, .any = -1, .path = "#", .path_len = 1};
  int32_t body = -1;
  if (!st) st = new_node(&c, GN_STRING, &g->key_string);
  if (!st) st = compile(&c, root, &body);
  if (!st) st = wrap(&c, body, prefix, suffix, &g->root);
  free(c.memo);
  cJSON_Delete(root);
  if (st) {
    mx_grammar_destroy(g);
    return st;
  }
  *out = g;
  return MX_OK;
}

mx_status_t mx_grammar_from_schema(const char *schema, size_t len, mx_grammar_t **out) {
  return mx_grammar_from_schema_wrapped(schema, len, NULL, NULL, out);
}

mx_status_t mx_grammar_json_object(mx_grammar_t **out) {
  static const char kObject[] = "{\"type\": \"object\"}";
  return mx_grammar_from_schema(kObject, sizeof kObject - 1, out);
}
