// The JSON-schema automaton (include/mlxcel/grammar.h): fixed documents it must accept and
// refuse, and two properties on fixed and random schemas: every document a random walk of the
// automaton completes is JSON that a separate validator (below, written from the JSON Schema
// rules) accepts, and every document a generator draws from the schema (in the automaton's
// subset: properties in order, numbers of few digits) is accepted whole. Then the token mask:
// equal to feeding each token's bytes alone, on real tokenizers, at every step of random walks.
#include <cjson/cJSON.h>

#include "grammar/grammar_internal.h"
#include "mlxcel/grammar.h"
#include "mx_test.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng % n);
}

// ---- A validator, from the JSON Schema rules (not from the automaton) ----

static size_t utf8_chars(const char *s) {
  size_t n = 0;
  for (; *s; s++) n += ((uint8_t)*s & 0xC0) != 0x80;
  return n;
}

static bool valid(const cJSON *root, const cJSON *s, const cJSON *d);

static bool valid_type(const cJSON *root, const cJSON *s, const char *t, const cJSON *d) {
  if (strcmp(t, "null") == 0) return cJSON_IsNull(d);
  if (strcmp(t, "boolean") == 0) return cJSON_IsBool(d);
  if (strcmp(t, "number") == 0) return cJSON_IsNumber(d);
  if (strcmp(t, "integer") == 0)
    return cJSON_IsNumber(d) && d->valuedouble == (double)(int64_t)d->valuedouble;
  if (strcmp(t, "string") == 0) {
    if (!cJSON_IsString(d)) return false;
    const cJSON *mn = cJSON_GetObjectItem(s, "minLength"),
                *mx = cJSON_GetObjectItem(s, "maxLength");
    size_t n = utf8_chars(d->valuestring);
    return (!mn || n >= (size_t)mn->valuedouble) && (!mx || n <= (size_t)mx->valuedouble);
  }
  if (strcmp(t, "array") == 0) {
    if (!cJSON_IsArray(d)) return false;
    const cJSON *items = cJSON_GetObjectItem(s, "items");
    const cJSON *mn = cJSON_GetObjectItem(s, "minItems"), *mx = cJSON_GetObjectItem(s, "maxItems");
    int n = cJSON_GetArraySize(d);
    if ((mn && n < mn->valuedouble) || (mx && n > mx->valuedouble)) return false;
    for (const cJSON *e = d->child; e && items; e = e->next)
      if (!valid(root, items, e)) return false;
    return true;
  }
  if (strcmp(t, "object") == 0) {
    if (!cJSON_IsObject(d)) return false;
    const cJSON *props = cJSON_GetObjectItem(s, "properties");
    const cJSON *add = cJSON_GetObjectItem(s, "additionalProperties");
    for (const cJSON *r =
             cJSON_GetObjectItem(s, "required") ? cJSON_GetObjectItem(s, "required")->child : NULL;
         r; r = r->next)
      if (!cJSON_GetObjectItemCaseSensitive(d, r->valuestring)) return false;
    for (const cJSON *e = d->child; e; e = e->next) {
      const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, e->string) : NULL;
      if (ps) {
        if (!valid(root, ps, e)) return false;
      } else if (cJSON_IsFalse(add)) {
        return false;
      } else if (cJSON_IsObject(add) && !valid(root, add, e)) {
        return false;
      }
    }
    return true;
  }
  return false;
}

static bool valid(const cJSON *root, const cJSON *s, const cJSON *d) {
  const cJSON *ref = cJSON_GetObjectItem(s, "$ref");
  if (ref) {
    const char *r = ref->valuestring;
    if (strcmp(r, "#") == 0) return valid(root, root, d);
    return valid(root, cJSON_GetObjectItem(cJSON_GetObjectItem(root, "$defs"), r + 8), d);
  }
  const cJSON *any = cJSON_GetObjectItem(s, "anyOf");
  if (any) {
    for (const cJSON *a = any->child; a; a = a->next)
      if (valid(root, a, d)) return true;
    return false;
  }
  const cJSON *c = cJSON_GetObjectItem(s, "const");
  if (c) return cJSON_Compare(c, d, true);
  const cJSON *en = cJSON_GetObjectItem(s, "enum");
  if (en) {
    for (const cJSON *e = en->child; e; e = e->next)
      if (cJSON_Compare(e, d, true)) return true;
    return false;
  }
  const cJSON *t = cJSON_GetObjectItem(s, "type");
  if (!t) return true;
  if (cJSON_IsString(t)) return valid_type(root, s, t->valuestring, d);
  for (const cJSON *e = t->child; e; e = e->next)
    if (valid_type(root, s, e->valuestring, d)) return true;
  return false;
}

// ---- Random walks of the automaton ----

// Walks from the start choosing accepted bytes at random (closing bytes preferred, so walks
// end); returns the document when it completes within cap bytes, else NULL.
static char *random_walk(const mx_grammar_t *g, size_t cap) {
  static gstate_t a, b;
  mx_gm_start(g, &a);
  char *doc = malloc(cap + 1);
  size_t n = 0;
  while (n < cap) {
    if (mx_gm_finished(&a) || (mx_gm_accepting(g, &a) && rnd(3) == 0)) {
      doc[n] = '\0';
      return doc;
    }
    uint8_t ok[256], close[256];
    int nok = 0, nclose = 0;
    for (int c = 1; c < 256; c++) {
      mx_gm_step(g, &a, (uint8_t)c, &b);
      if (b.n_stacks == 0) continue;
      ok[nok++] = (uint8_t)c;
      if (strchr("\"}]0", c)) close[nclose++] = (uint8_t)c;
    }
    if (nok == 0) break;
    uint8_t c = nclose && rnd(100) < (n > cap / 2 ? 90u : 35u) ? close[rnd((uint32_t)nclose)]
                                                               : ok[rnd((uint32_t)nok)];
    mx_gm_step(g, &a, c, &b);
    mx_gm_copy(&a, &b);
    doc[n++] = (char)c;
  }
  free(doc);
  return NULL;
}

static bool accepts(const mx_grammar_t *g, const char *doc) {
  mx_gmatch_t *m = NULL;
  if (mx_gmatch_create(g, &m)) return false;
  bool ok = mx_gmatch_feed(m, doc, strlen(doc)) && mx_gmatch_accepting(m);
  mx_gmatch_destroy(m);
  return ok;
}

// Random walks must give valid documents; returns how many completed.
static int check_walks(const char *schema_text, int walks) {
  mx_grammar_t *g = NULL;
  mx_status_t st = mx_grammar_from_schema(schema_text, strlen(schema_text), &g);
  CHECK_MSG(st == MX_OK, "%s: %s", schema_text, mx_error_message());
  if (st) return 0;
  cJSON *schema = cJSON_Parse(schema_text);
  int done = 0;
  for (int i = 0; i < walks; i++) {
    char *doc = random_walk(g, 600);
    if (!doc) continue;
    done++;
    cJSON *d = cJSON_Parse(doc);
    CHECK_MSG(d && valid(schema, schema, d), "schema %s: walk gave invalid %s", schema_text, doc);
    CHECK_MSG(accepts(g, doc), "walk not accepted again: %s", doc);
    cJSON_Delete(d);
    free(doc);
  }
  cJSON_Delete(schema);
  mx_grammar_destroy(g);
  return done;
}

static void check_docs(const char *schema_text, const char *const *good, const char *const *bad) {
  mx_grammar_t *g = NULL;
  mx_status_t st = mx_grammar_from_schema(schema_text, strlen(schema_text), &g);
  CHECK_MSG(st == MX_OK, "%s: %s", schema_text, mx_error_message());
  if (st) return;
  for (int i = 0; good && good[i]; i++)
    CHECK_MSG(accepts(g, good[i]), "%s should accept %s", schema_text, good[i]);
  for (int i = 0; bad && bad[i]; i++)
    CHECK_MSG(!accepts(g, bad[i]), "%s should refuse %s", schema_text, bad[i]);
  mx_grammar_destroy(g);
}

static const char kPerson[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8},"
    "\"age\":{\"type\":\"integer\"},\"email\":{\"type\":[\"string\",\"null\"]},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"ab\",1,12,true]},\"maxItems\":3},"
    "\"kind\":{\"const\":\"p\"}},\"required\":[\"name\",\"age\",\"kind\"],"
    "\"additionalProperties\":false}";

static void test_fixed(void) {
  const char *good2[] = {
      "{\"name\":\"Al\",\"age\":3,\"kind\":\"p\"}",
      "{ \"name\" : \"\\u00e9\\n\" , \"age\" : -0, \"email\": null, \"kind\":\"p\"}",
      "{\"name\":\"\xc3\xa9t\xc3\xa9\",\"age\":10,\"email\":\"x\",\"tags\":[\"ab\",12,"
      "true],\"kind\":\"p\"}",
      NULL};
  const char *bad[] = {"{\"age\":3,\"name\":\"Al\",\"kind\":\"p\"}",         // out of order
                       "{\"name\":\"Al\",\"kind\":\"p\"}",                   // age missing
                       "{\"name\":\"Al\",\"age\":3.5,\"kind\":\"p\"}",       // not an integer
                       "{\"name\":\"123456789\",\"age\":3,\"kind\":\"p\"}",  // too long
                       "{\"name\":\"Al\",\"age\":01,\"kind\":\"p\"}",
                       "{\"name\":\"Al\",\"age\":3,\"kind\":\"q\"}",
                       "{\"name\":\"Al\",\"age\":3,\"tags\":[1,1,1,1],\"kind\":\"p\"}",
                       "{\"name\":\"Al\",\"age\":3,\"tags\":[2],\"kind\":\"p\"}",
                       "{\"name\":\"\xc0\xaf\",\"age\":3,\"kind\":\"p\"}",      // overlong UTF-8
                       "{\"name\":\"\xed\xa0\x80\",\"age\":3,\"kind\":\"p\"}",  // surrogate
                       "{\"name\":\"a\tb\",\"age\":3,\"kind\":\"p\"}",
                       "{\"name\":\"Al\",\"age\":3,\"kind\":\"p\",\"x\":1}",
                       "{\"name\":\"Al\",\"age\":3,\"kind\":\"p\"} ",
                       "{\"name\":\"Al\",\"age\":3,\"kind\":\"p\"",
                       NULL};
  check_docs(kPerson, good2, bad);
  // Nothing may follow a complete document; incomplete ones are not accepting.
  mx_grammar_t *g = NULL;
  CHECK_OK(mx_grammar_from_schema(kPerson, strlen(kPerson), &g));
  mx_gmatch_t *m = NULL;
  CHECK_OK(mx_gmatch_create(g, &m));
  CHECK(mx_gmatch_feed(m, "{\"name\":\"A\",\"age\":1", 19));
  CHECK(!mx_gmatch_accepting(m) && !mx_gmatch_finished(m));
  CHECK(!mx_gmatch_feed(m, "}", 1));  // kind is required; refused bytes change nothing
  CHECK(mx_gmatch_feed(m, ",\"kind\":\"p\"}", 12));
  CHECK(mx_gmatch_accepting(m) && mx_gmatch_finished(m));
  CHECK(!mx_gmatch_feed(m, " ", 1));
  mx_gmatch_destroy(m);
  mx_grammar_destroy(g);

  const char *nums_good[] = {"0", "-1.5e+3", "12", "1E9", NULL};
  const char *nums_bad[] = {"-", "1.", ".5", "01", "1e", "+1", "12345678901234567", NULL};
  check_docs("{\"type\":\"number\"}", nums_good, nums_bad);
  const char *obj_good[] = {"{}", "{\"a\":[1,{\"b\":null}],\"a\":\"x\"}", "{ \"k\" : true }", NULL};
  const char *obj_bad[] = {"[]", "{\"a\"}", "{\"a\":1,}", "{,}", "\"s\"", NULL};
  mx_grammar_t *jo = NULL;
  CHECK_OK(mx_grammar_json_object(&jo));
  for (int i = 0; obj_good[i]; i++) CHECK_MSG(accepts(jo, obj_good[i]), "%s", obj_good[i]);
  for (int i = 0; obj_bad[i]; i++) CHECK_MSG(!accepts(jo, obj_bad[i]), "%s", obj_bad[i]);
  mx_grammar_destroy(jo);
  // Gaps: one blank, or a line break and at most 8 blanks.
  const char *ws_good[] = {"{ }", "{\n        }", "{\t\"a\":\t1}", "{\r\n  \"a\" : 1\n}", NULL};
  const char *ws_bad[] = {"{  }", "{\n         }", "{\n\n}", "{ \n}", NULL};
  check_docs("{\"type\":\"object\"}", ws_good, ws_bad);
  // Wrapped: literal prefix and suffix.
  mx_grammar_t *w = NULL;
  const char s[] =
      "{\"type\":\"object\",\"properties\":{\"n\":{\"const\":\"f\"}},\"required\":[\"n\"]}";
  CHECK_OK(mx_grammar_from_schema_wrapped(s, strlen(s), "<tool_call>\n", "\n</tool_call>", &w));
  CHECK(accepts(w, "<tool_call>\n{\"n\":\"f\"}\n</tool_call>"));
  CHECK(!accepts(w, "<tool_call>\n{\"n\":\"f\"}"));
  CHECK(!accepts(w, "{\"n\":\"f\"}"));
  mx_grammar_destroy(w);
}

static void check_refused(const char *schema, mx_status_t want, const char *needle) {
  mx_grammar_t *g = NULL;
  mx_status_t st = mx_grammar_from_schema(schema, strlen(schema), &g);
  CHECK_MSG(st == want && strstr(mx_error_message(), needle), "%s: got %d '%s', want '%s'", schema,
            (int)st, mx_error_message(), needle);
  CHECK(g == NULL);
  mx_grammar_destroy(g);
}

static void test_refusals(void) {
  check_refused("{\"type\":\"string\",\"pattern\":\"a+\"}", MX_ERR_UNSUPPORTED, "'pattern' at #");
  check_refused(
      "{\"type\":\"object\",\"properties\":{\"d\":{\"type\":\"string\",\"format\":"
      "\"date\"}}}",
      MX_ERR_UNSUPPORTED, "'format' at #/properties/d");
  check_refused("{\"type\":\"integer\",\"minimum\":1}", MX_ERR_UNSUPPORTED, "'minimum'");
  check_refused("{\"oneOf\":[{\"type\":\"string\"}]}", MX_ERR_UNSUPPORTED, "'oneOf'");
  check_refused("{\"type\":\"tuple\"}", MX_ERR_UNSUPPORTED, "type 'tuple'");
  check_refused("{\"$ref\":\"#/$defs/X\"}", MX_ERR_INVALID_ARG, "names nothing");
  check_refused("{\"$ref\":\"http://x/y\"}", MX_ERR_UNSUPPORTED, "'$ref'");
  check_refused("{\"type\":\"object\",\"properties\":{},\"required\":[\"a\"]}", MX_ERR_INVALID_ARG,
                "'required' at # names 'a'");
  check_refused("[1]", MX_ERR_UNSUPPORTED, "not a schema object");
  check_refused("{\"enum\":[]}", MX_ERR_UNSUPPORTED, "no value can match");
  check_refused("{\"type\":", MX_ERR_PARSE, "schema");
  // A reference loop that reads no byte compiles to a grammar that accepts nothing (and ends).
  const char loop[] = "{\"$defs\":{\"A\":{\"$ref\":\"#/$defs/A\"}},\"$ref\":\"#/$defs/A\"}";
  mx_grammar_t *g = NULL;
  CHECK_OK(mx_grammar_from_schema(loop, strlen(loop), &g));
  if (g) CHECK(!accepts(g, "1") && !accepts(g, "{}") && !random_walk(g, 50));
  mx_grammar_destroy(g);
}

// ---- Random schemas and documents drawn from them ----

static cJSON *random_schema(int depth) {
  cJSON *s = cJSON_CreateObject();
  int kind = depth <= 0 ? 3 + (int)rnd(6) : (int)rnd(10);
  switch (kind) {
    case 0:
    case 1: {
      cJSON_AddStringToObject(s, "type", "object");
      cJSON *props = cJSON_AddObjectToObject(s, "properties");
      cJSON *req = cJSON_AddArrayToObject(s, "required");
      int n = (int)rnd(4);
      static const char *const kNames[] = {"a", "ab", "b", "c\"q", "\xc3\xa9"};
      for (int i = 0; i < n; i++) {
        const char *name = kNames[(i + rnd(2)) % 5];
        if (cJSON_GetObjectItemCaseSensitive(props, name)) continue;
        cJSON_AddItemToObject(props, name, random_schema(depth - 1));
        if (rnd(2)) cJSON_AddItemToArray(req, cJSON_CreateString(name));
      }
      cJSON_AddBoolToObject(s, "additionalProperties", false);
      break;
    }
    case 2:
      cJSON_AddStringToObject(s, "type", "array");
      cJSON_AddItemToObject(s, "items", random_schema(depth - 1));
      if (rnd(2)) cJSON_AddNumberToObject(s, "maxItems", rnd(4));
      if (rnd(2)) cJSON_AddNumberToObject(s, "minItems", rnd(2));
      break;
    case 3:
      cJSON_AddStringToObject(s, "type", "string");
      if (rnd(2)) cJSON_AddNumberToObject(s, "maxLength", 1 + rnd(5));
      break;
    case 4:
      cJSON_AddStringToObject(s, "type", rnd(2) ? "number" : "integer");
      break;
    case 5:
      cJSON_AddStringToObject(s, "type", rnd(2) ? "boolean" : "null");
      break;
    case 6: {
      cJSON *e = cJSON_AddArrayToObject(s, "enum");
      cJSON_AddItemToArray(e, cJSON_CreateString("x"));
      cJSON_AddItemToArray(e, cJSON_CreateNumber(rnd(20)));
      cJSON_AddItemToArray(e, cJSON_CreateString("xy"));
      break;
    }
    case 7: {
      cJSON *a = cJSON_AddArrayToObject(s, "anyOf");
      cJSON_AddItemToArray(a, random_schema(depth - 1));
      cJSON_AddItemToArray(a, random_schema(depth - 1));
      break;
    }
    case 8: {
      cJSON *t = cJSON_AddArrayToObject(s, "type");
      cJSON_AddItemToArray(t, cJSON_CreateString("string"));
      cJSON_AddItemToArray(t, cJSON_CreateString("null"));
      break;
    }
    default:
      break;  // {}: any value
  }
  return s;
}

// A document the schema allows, in the automaton's subset; NULL when the draw failed.
static cJSON *random_doc(const cJSON *s, int depth) {
  if (depth > 8) return NULL;
  const cJSON *any = cJSON_GetObjectItem(s, "anyOf");
  if (any) return random_doc(cJSON_GetArrayItem(any, (int)rnd(2)), depth + 1);
  const cJSON *en = cJSON_GetObjectItem(s, "enum");
  if (en) return cJSON_Duplicate(cJSON_GetArrayItem(en, (int)rnd(3)), true);
  const cJSON *t = cJSON_GetObjectItem(s, "type");
  const char *type = !t ? "any" : cJSON_IsString(t) ? t->valuestring : rnd(2) ? "string" : "null";
  if (strcmp(type, "any") == 0) {
    static const char *const kAny[] = {"{\"k\":[1,\"\xe2\x82\xac\"]}", "[]", "-2.5", "null"};
    return cJSON_Parse(kAny[rnd(4)]);
  }
  if (strcmp(type, "null") == 0) return cJSON_CreateNull();
  if (strcmp(type, "boolean") == 0) return cJSON_CreateBool(rnd(2));
  if (strcmp(type, "integer") == 0) return cJSON_CreateNumber((double)rnd(2000) - 1000);
  if (strcmp(type, "number") == 0) return cJSON_CreateNumber(((double)rnd(2000) - 1000) / 8);
  if (strcmp(type, "string") == 0) {
    const cJSON *mx = cJSON_GetObjectItem(s, "maxLength");
    static const char *const kStr[] = {"", "q", "a\"b", "\xe2\x82\xac\n", "tab\tx"};
    const char *v = kStr[rnd(5)];
    if (mx && utf8_chars(v) > (size_t)mx->valuedouble) v = "";
    return cJSON_CreateString(v);
  }
  if (strcmp(type, "array") == 0) {
    const cJSON *mn = cJSON_GetObjectItem(s, "minItems"), *mx = cJSON_GetObjectItem(s, "maxItems");
    int lo = mn ? (int)mn->valuedouble : 0, hi = mx ? (int)mx->valuedouble : 3;
    if (lo > hi) return NULL;
    int n = lo + (int)rnd((uint32_t)(hi - lo + 1));
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
      cJSON *e = random_doc(cJSON_GetObjectItem(s, "items"), depth + 1);
      if (!e) {
        cJSON_Delete(a);
        return NULL;
      }
      cJSON_AddItemToArray(a, e);
    }
    return a;
  }
  cJSON *o = cJSON_CreateObject();
  const cJSON *req = cJSON_GetObjectItem(s, "required");
  for (const cJSON *p = cJSON_GetObjectItem(s, "properties")->child; p; p = p->next) {
    bool required = false;
    for (const cJSON *r = req->child; r; r = r->next)
      required |= strcmp(r->valuestring, p->string) == 0;
    if (!required && rnd(2)) continue;
    cJSON *v = random_doc(p, depth + 1);
    if (!v) {
      cJSON_Delete(o);
      return NULL;
    }
    cJSON_AddItemToObject(o, p->string, v);
  }
  return o;
}

static void test_random_schemas(void) {
  int walks = 0, docs = 0;
  for (int i = 0; i < 150; i++) {
    cJSON *s = random_schema(3);
    char *text = cJSON_PrintUnformatted(s);
    walks += check_walks(text, 20);
    mx_grammar_t *g = NULL;
    if (mx_grammar_from_schema(text, strlen(text), &g) == MX_OK) {
      for (int k = 0; k < 10; k++) {
        cJSON *d = random_doc(s, 0);
        if (!d) continue;
        char *dt = rnd(2) ? cJSON_PrintUnformatted(d) : cJSON_Print(d);
        // cJSON_Print indents with tabs: fine while the runs stay short.
        bool ok = valid(s, s, d);
        CHECK_MSG(ok, "generator drew invalid %s for %s", dt, text);
        if (ok && strlen(dt) < 2000) {
          CHECK_MSG(accepts(g, dt), "schema %s refused %s", text, dt);
          docs++;
        }
        cJSON_free(dt);
        cJSON_Delete(d);
      }
    }
    mx_grammar_destroy(g);
    cJSON_free(text);
    cJSON_Delete(s);
  }
  printf("random schemas: %d completed walks, %d drawn documents\n", walks, docs);
  CHECK(walks > 1000 && docs > 500);
}

static void test_fixed_walks(void) {
  CHECK(check_walks(kPerson, 300) > 100);
  const char rec[] =
      "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
      "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"},\"maxItems\":2}},"
      "\"required\":[\"v\",\"kids\"],\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}";
  CHECK(check_walks(rec, 200) > 50);
  const char un[] =
      "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":"
      "[\"a\"],\"additionalProperties\":false},{\"type\":\"object\",\"properties\":{\"a\":{"
      "\"type\":"
      "\"number\"},\"b\":{\"type\":\"null\"}},\"required\":[\"b\"],\"additionalProperties\":false}]"
      "}";
  CHECK(check_walks(un, 200) > 50);
  CHECK(check_walks("{}", 200) > 50);
}

// ---- Token masks ----

static void check_mask(const mx_tokenizer_t *tok, const char *schema) {
  mx_gvocab_t *v = NULL;
  CHECK_OK(mx_gvocab_create(tok, &v));
  mx_grammar_t *g = NULL;
  CHECK_OK(mx_grammar_from_schema(schema, strlen(schema), &g));
  if (!v || !g) return;
  int32_t V = mx_gvocab_size(v), eos = mx_tokenizer_eos_id(tok);
  uint32_t *allow = calloc(((size_t)V + 31) / 32, 4);
  mx_gmatch_t *m = NULL, *probe = NULL;
  CHECK_OK(mx_gmatch_create(g, &m));
  CHECK_OK(mx_gmatch_create(g, &probe));
  CHECK_OK(mx_gmatch_bind_vocab(m, v));
  int steps = 0, mismatches = 0, finished = 0;
  for (int walk = 0; walk < 6; walk++) {
    mx_gmatch_reset(m);
    for (int step = 0; step < 80; step++) {
      int32_t n = mx_gmatch_mask(m, &eos, 1, allow);
      int32_t count = 0, pick = -1, seen = 0;
      bool accepting = mx_gmatch_accepting(m);
      for (int32_t id = 0; id < V; id++) {
        size_t len;
        const char *b = mx_gvocab_token(v, id, &len);
        probe->cur = m->cur;
        bool want = id == eos ? accepting : b && mx_gmatch_feed(probe, b, len);
        bool got = allow[id >> 5] >> (id & 31) & 1u;
        if (want != got && mismatches++ < 5)
          fprintf(stderr, "mask mismatch at id %d ('%.*s'): want %d\n", id, (int)len, b ? b : "",
                  want);
        if (got) {
          count++;
          if (rnd((uint32_t)++seen) == 0) pick = id;  // uniform among the allowed
        }
      }
      CHECK(count == n);
      steps++;
      if (pick < 0 || pick == eos || mx_gmatch_finished(m)) {
        finished += pick == eos || mx_gmatch_finished(m);
        break;
      }
      CHECK(mx_gmatch_feed_token(m, pick));
    }
  }
  CHECK_MSG(mismatches == 0, "%d mask mismatches over %d steps", mismatches, steps);
  printf("mask: %d steps, %d walks reached the end\n", steps, finished);
  mx_gmatch_destroy(m);
  mx_gmatch_destroy(probe);
  free(allow);
  mx_grammar_destroy(g);
  mx_gvocab_destroy(v);
}

static void test_masks(void) {
  const char *data = getenv("MX_TEST_DATA");
  const char *dirs[] = {"tokenizer/mini-bytelevel", "tokenizer/mini-spm"};
  for (int i = 0; i < 2; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", data ? data : "tests/data", dirs[i]);
    mx_tokenizer_t *tok = NULL;
    mx_status_t st = mx_tokenizer_load(path, &tok);
    CHECK_MSG(st == MX_OK, "%s: %s", path, mx_error_message());
    if (st) continue;
    check_mask(tok, kPerson);
    check_mask(tok, "{\"type\":\"object\"}");
    mx_tokenizer_destroy(tok);
  }
}

int main(void) {
  test_fixed();
  test_refusals();
  test_fixed_walks();
  test_random_schemas();
  test_masks();
  return mx_test_finish();
}
