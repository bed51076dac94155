// Loading tokenizer.json (model, vocabulary, merges, added tokens) and tokenizer_config.json.
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "tokenizer/tok_internal.h"

static bool json_int(const cJSON *v, int32_t *out) {
  if (!cJSON_IsNumber(v)) return false;
  double d = v->valuedouble;
  if (!(d >= 0 && d < MX_TOK_MAX_ID) || d != (double)(int32_t)d) return false;
  *out = (int32_t)d;
  return true;
}

static bool is_byte_piece(const char *s, size_t n, int *byte) {
  if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return false;
  int v = 0;
  for (int i = 3; i < 5; i++) {
    char c = s[i];
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                     : -1;
    if (d < 0) return false;
    v = v * 16 + d;
  }
  *byte = v;
  return true;
}

// First pass over vocab + added tokens: the largest id sizes the dense table.
static mx_status_t scan_ids(const cJSON *vocab, const cJSON *added, int32_t *max_id) {
  *max_id = -1;
  const cJSON *it;
  cJSON_ArrayForEach(it, vocab) {
    int32_t id;
    if (!json_int(it, &id)) {
      return mx_error_set(
          MX_ERR_PARSE, "model.vocab: token \"%.80s\" has id %s (need an integer in [0, %d))",
          it->string, cJSON_IsNumber(it) ? "out of range" : "that is not a number", MX_TOK_MAX_ID);
    }
    if (id > *max_id) *max_id = id;
  }
  cJSON_ArrayForEach(it, added) {
    int32_t id;
    if (!json_int(cJSON_GetObjectItemCaseSensitive(it, "id"), &id)) {
      const char *c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "content"));
      return mx_error_set(MX_ERR_PARSE,
                          "added_tokens: token \"%.80s\" has a missing or out-of-range id",
                          c ? c : "?");
    }
    if (id > *max_id) *max_id = id;
  }
  return MX_OK;
}

static mx_status_t load_vocab(mx_tokenizer_t *t, const cJSON *vocab) {
  if (!mx_tok_strmap_reserve(&t->vocab, (uint32_t)cJSON_GetArraySize(vocab))) {
    return mx_error_set(MX_ERR_NOMEM, "model.vocab: out of memory");
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, vocab) {
    int32_t id = (int32_t)it->valuedouble;  // validated by scan_ids
    size_t n = strlen(it->string);
    mx_tok_entry_t *e = &t->entries[id];
    if (e->piece) {
      return mx_error_set(MX_ERR_PARSE, "model.vocab: duplicate id %d (\"%.80s\" and \"%.80s\")",
                          id, e->piece, it->string);
    }
    char *s = mx_arena_strndup(t->arena, it->string, n);
    if (!s) return mx_error_set(MX_ERR_NOMEM, "model.vocab: out of memory");
    int32_t prev = -1;
    if (!mx_tok_strmap_put(&t->vocab, s, n, id, &prev)) {
      return mx_error_set(MX_ERR_NOMEM, "model.vocab: out of memory");
    }
    if (prev >= 0) {
      return mx_error_set(MX_ERR_PARSE, "model.vocab: duplicate token \"%.80s\" (ids %d and %d)", s,
                          prev, id);
    }
    e->piece = s;
    e->len = (uint32_t)n;
    int b;
    e->byte = is_byte_piece(s, n, &b) ? (int16_t)b : -1;
  }
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    t->byte_ids[b] = mx_tok_strmap_get(&t->vocab, name, 6);
  }
  return MX_OK;
}

static int cmp_added_len(const void *a, const void *b) {
  const mx_tok_added_t *x = a, *y = b;
  uint8_t fx = (uint8_t)x->content[0], fy = (uint8_t)y->content[0];
  if (fx != fy) return fx < fy ? -1 : 1;
  if (x->len != y->len) return x->len > y->len ? -1 : 1;
  return x->id - y->id;
}

static mx_status_t load_added(mx_tokenizer_t *t, const cJSON *added) {
  int32_t n = cJSON_GetArraySize(added);
  if (n == 0) return MX_OK;
  t->added = mx_arena_alloc(t->arena, (size_t)n * sizeof *t->added);
  if (!t->added) return mx_error_set(MX_ERR_NOMEM, "added_tokens: out of memory");
  const cJSON *it;
  cJSON_ArrayForEach(it, added) {
    const char *c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "content"));
    if (!c || !*c) return mx_error_set(MX_ERR_PARSE, "added_tokens: entry without \"content\"");
    int32_t id = (int32_t)cJSON_GetObjectItemCaseSensitive(it, "id")->valuedouble;
    size_t len = strlen(c);
    mx_tok_entry_t *e = &t->entries[id];
    if (e->added) {
      return mx_error_set(MX_ERR_PARSE, "added_tokens: duplicate id %d (\"%.80s\" and \"%.80s\")",
                          id, e->piece, c);
    }
    char *s = mx_arena_strndup(t->arena, c, len);
    if (!s) return mx_error_set(MX_ERR_NOMEM, "added_tokens: out of memory");
    int32_t prev = -1;
    if (!mx_tok_strmap_put(&t->added_map, s, len, id, &prev)) {
      return mx_error_set(MX_ERR_NOMEM, "added_tokens: out of memory");
    }
    if (prev >= 0) {
      return mx_error_set(MX_ERR_PARSE, "added_tokens: duplicate content \"%.80s\" (ids %d and %d)",
                          s, prev, id);
    }
    // An added token overrides the model's piece for this id (decode uses its content).
    e->piece = s;
    e->len = (uint32_t)len;
    int b;
    e->byte = is_byte_piece(s, len, &b) ? (int16_t)b : -1;
    e->added = 1;
    mx_tok_added_t *a = &t->added[t->n_added++];
    a->content = s;
    a->len = (uint32_t)len;
    a->id = id;
    a->special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special"));
    a->lstrip = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "lstrip"));
    a->rstrip = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "rstrip"));
    a->single_word = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "single_word"));
    // Hugging Face's default for "normalized" is !special.
    const cJSON *nz = cJSON_GetObjectItemCaseSensitive(it, "normalized");
    a->normalized = cJSON_IsBool(nz) ? cJSON_IsTrue(nz) : !a->special;
    if (a->normalized && t->n_norms > 0) t->any_normalized_added = true;
    e->special = a->special;
  }
  qsort(t->added, (size_t)t->n_added, sizeof *t->added, cmp_added_len);
  // Index by first byte so matching costs nothing at positions no token can start.
  int32_t k = 0;
  for (int b = 0; b < 256; b++) {
    t->added_first[b] = k;
    while (k < t->n_added && (uint8_t)t->added[k].content[0] == b) k++;
  }
  t->added_first[256] = k;
  return MX_OK;
}

// Splits a "left right" merge string on its single space.
static mx_status_t merge_parts(const cJSON *m, int32_t rank, const char **a, size_t *an,
                               const char **b, size_t *bn) {
  if (cJSON_IsString(m)) {
    const char *s = m->valuestring;
    const char *sp = strchr(s, ' ');
    if (!sp || sp == s || !sp[1] || strchr(sp + 1, ' ')) {
      return mx_error_set(MX_ERR_PARSE, "model.merges[%d]: \"%.80s\" is not \"left right\"", rank,
                          s);
    }
    *a = s;
    *an = (size_t)(sp - s);
    *b = sp + 1;
    *bn = strlen(sp + 1);
    return MX_OK;
  }
  if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
      cJSON_IsString(cJSON_GetArrayItem(m, 1))) {
    *a = cJSON_GetArrayItem(m, 0)->valuestring;
    *b = cJSON_GetArrayItem(m, 1)->valuestring;
    *an = strlen(*a);
    *bn = strlen(*b);
    return MX_OK;
  }
  return mx_error_set(MX_ERR_PARSE, "model.merges[%d]: not a string or a [left, right] pair", rank);
}

static mx_status_t load_merges(mx_tokenizer_t *t, const cJSON *merges) {
  if (merges && !cJSON_IsArray(merges)) {
    return mx_error_set(MX_ERR_PARSE, "model.merges: not an array");
  }
  if (merges && !mx_tok_mergemap_reserve(&t->merges, (uint32_t)cJSON_GetArraySize(merges))) {
    return mx_error_set(MX_ERR_NOMEM, "model.merges: out of memory");
  }
  char *buf = NULL;
  size_t cap = 0;
  int32_t rank = 0;
  const cJSON *m;
  mx_status_t st = MX_OK;
  cJSON_ArrayForEach(m, merges) {
    const char *a = NULL, *b = NULL;
    size_t an = 0, bn = 0;
    st = merge_parts(m, rank, &a, &an, &b, &bn);
    if (st != MX_OK) break;
    int32_t ia = mx_tok_strmap_get(&t->vocab, a, an);
    int32_t ib = mx_tok_strmap_get(&t->vocab, b, bn);
    if (an + bn + 1 > cap) {
      cap = (an + bn + 1) * 2;
      char *nb = realloc(buf, cap);
      if (!nb) {
        st = mx_error_set(MX_ERR_NOMEM, "model.merges: out of memory");
        break;
      }
      buf = nb;
    }
    memcpy(buf, a, an);
    memcpy(buf + an, b, bn);
    int32_t ic = mx_tok_strmap_get(&t->vocab, buf, an + bn);
    if (ia < 0 || ib < 0 || ic < 0) {
      const char *which = ia < 0 ? a : ib < 0 ? b : buf;
      size_t wn = ia < 0 ? an : ib < 0 ? bn : an + bn;
      st = mx_error_set(MX_ERR_PARSE, "model.merges[%d]: \"%.*s\" is not in the vocabulary", rank,
                        (int)(wn > 80 ? 80 : wn), which);
      break;
    }
    if (!mx_tok_mergemap_put(&t->merges, ia, ib, rank, ic)) {
      st = mx_error_set(MX_ERR_NOMEM, "model.merges: out of memory");
      break;
    }
    rank++;
  }
  free(buf);
  return st;
}

static mx_status_t load_model(mx_tokenizer_t *t, const cJSON *model) {
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  const char *cswp =
      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix"));
  const char *eows =
      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(model, "end_of_word_suffix"));
  if ((cswp && *cswp) || (eows && *eows)) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "model: continuing_subword_prefix / end_of_word_suffix are not supported");
  }
  t->ignore_merges = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"));
  t->byte_fallback = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback"));
  t->fuse_unk = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "fuse_unk"));
  mx_status_t st = load_merges(t, merges);
  if (st != MX_OK) return st;
  const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
  t->unk_id = -1;
  if (cJSON_IsString(unk)) {
    t->unk_id = mx_tok_strmap_get(&t->vocab, unk->valuestring, strlen(unk->valuestring));
    if (t->unk_id < 0) {
      return mx_error_set(MX_ERR_PARSE, "model.unk_token \"%.80s\" is not in the vocabulary",
                          unk->valuestring);
    }
  }
  return MX_OK;
}

// tokenizer_config.json token fields are a string, {"content": ...} or null.
static mx_status_t config_token(mx_tokenizer_t *t, const cJSON *cfg, const char *key,
                                int32_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
  if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
  if (!v || cJSON_IsNull(v)) return MX_OK;
  if (!cJSON_IsString(v)) {
    return mx_error_set(MX_ERR_PARSE, "tokenizer_config.json: \"%s\" is not a string", key);
  }
  int32_t id = mx_tokenizer_token_to_id(t, v->valuestring, strlen(v->valuestring));
  if (id < 0) {
    return mx_error_set(MX_ERR_PARSE, "tokenizer_config.json: %s \"%.80s\" is not a token", key,
                        v->valuestring);
  }
  *out = id;
  return MX_OK;
}

static mx_status_t load_config(mx_tokenizer_t *t, const char *json, size_t len) {
  cJSON *cfg = NULL;
  mx_status_t st = mx_json_parse(json, len, MX_TOKENIZER_CONFIG_MAX_BYTES, MX_JSON_MAX_DEPTH,
                                 "tokenizer_config.json", &cfg);
  if (st != MX_OK) return st;
  if (!cJSON_IsObject(cfg)) {
    cJSON_Delete(cfg);
    return mx_error_set(MX_ERR_PARSE, "tokenizer_config.json: not a JSON object");
  }
  st = config_token(t, cfg, "bos_token", &t->bos_id);
  if (st == MX_OK) st = config_token(t, cfg, "eos_token", &t->eos_id);
  if (st == MX_OK && config_token(t, cfg, "pad_token", &t->pad_id) != MX_OK) {
    // Only informative for generation: a pad token the vocabulary lacks is no reason to fail.
    t->pad_id = -1;
    mx_error_clear();
  }
  t->add_bos_token = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token"));
  t->clean_up_spaces =
      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "clean_up_tokenization_spaces"));
  const cJSON *ct = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
  if (cJSON_IsArray(ct)) {  // [{"name": "default", "template": "..."}, ...]
    const cJSON *it, *pick = NULL;
    cJSON_ArrayForEach(it, ct) {
      const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
      if (!pick || (name && !strcmp(name, "default"))) pick = it;
    }
    ct = cJSON_GetObjectItemCaseSensitive(pick, "template");
  }
  if (st == MX_OK && cJSON_IsString(ct)) {
    t->chat_template = mx_arena_strdup(t->arena, ct->valuestring);
    if (!t->chat_template) st = mx_error_set(MX_ERR_NOMEM, "tokenizer_config.json: out of memory");
  }
  cJSON_Delete(cfg);
  return st;
}

static mx_status_t check_model_type(const cJSON *model) {
  if (!cJSON_IsObject(model)) return mx_error_set(MX_ERR_PARSE, "missing \"model\" object");
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  if (type && !cJSON_IsString(type)) return mx_error_set(MX_ERR_PARSE, "model.type: not a string");
  if (type ? strcmp(type->valuestring, "BPE") != 0 : !merges) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "model.type \"%s\" is not supported (only BPE)",
                        type ? type->valuestring : "(missing)");
  }
  return MX_OK;
}

static mx_status_t load_root(mx_tokenizer_t *t, const cJSON *root) {
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  mx_status_t st = check_model_type(model);
  if (st != MX_OK) return st;
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  if (!cJSON_IsObject(vocab))
    return mx_error_set(MX_ERR_PARSE, "model.vocab: missing or not an object");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added)) {
    return mx_error_set(MX_ERR_PARSE, "added_tokens: not an array");
  }
  int32_t max_id;
  st = scan_ids(vocab, cJSON_IsArray(added) ? added : NULL, &max_id);
  if (st != MX_OK) return st;
  if (max_id < 0) return mx_error_set(MX_ERR_PARSE, "model.vocab: empty vocabulary");
  // The id table is dense: a few stray huge ids must not cost megabytes (real vocabularies
  // number their tokens 0..n-1, with added tokens right after).
  int64_t n_tokens = (int64_t)cJSON_GetArraySize(vocab) + cJSON_GetArraySize(added);
  if ((int64_t)max_id >= 2 * n_tokens + 65536) {
    return mx_error_set(MX_ERR_PARSE, "id %d is out of range for %lld tokens (ids must be dense)",
                        max_id, (long long)n_tokens);
  }
  t->n_ids = max_id + 1;
  t->entries = calloc((size_t)t->n_ids, sizeof *t->entries);
  if (!t->entries)
    return mx_error_set(MX_ERR_NOMEM, "vocabulary of %d ids: out of memory", t->n_ids);
  st = load_vocab(t, vocab);
  if (st == MX_OK) st = load_model(t, model);
  // The normalizer comes before added tokens: whether they need normalizing depends on it.
  if (st == MX_OK)
    st = mx_tok_load_normalizer(t, cJSON_GetObjectItemCaseSensitive(root, "normalizer"));
  if (st == MX_OK && cJSON_IsArray(added)) st = load_added(t, added);
  if (st == MX_OK) {
    st = mx_tok_load_pretokenizer(t, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"));
  }
  if (st == MX_OK) {
    st = mx_tok_load_post_processor(t, cJSON_GetObjectItemCaseSensitive(root, "post_processor"));
  }
  if (st == MX_OK) st = mx_tok_load_decoder(t, cJSON_GetObjectItemCaseSensitive(root, "decoder"));
  return st;
}

mx_status_t mx_tokenizer_load_json(const char *tokenizer_json, size_t len, const char *config_json,
                                   size_t config_len, mx_tokenizer_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_tokenizer_load_json: out is NULL");
  *out = NULL;
  if (!tokenizer_json) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_tokenizer_load_json: tokenizer_json is NULL");
  }
  cJSON *root = NULL;
  mx_status_t st = mx_json_parse(tokenizer_json, len, MX_TOKENIZER_JSON_MAX_BYTES,
                                 MX_JSON_MAX_DEPTH, "tokenizer.json", &root);
  if (st != MX_OK) return st;
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return mx_error_set(MX_ERR_PARSE, "tokenizer.json: not a JSON object");
  }
  mx_tokenizer_t *t = calloc(1, sizeof *t);
  if (t) t->arena = mx_arena_create();
  if (!t || !t->arena) {
    free(t);
    cJSON_Delete(root);
    return mx_error_set(MX_ERR_NOMEM, "tokenizer.json: out of memory");
  }
  t->bos_id = t->eos_id = t->pad_id = t->unk_id = -1;
  st = load_root(t, root);
  cJSON_Delete(root);
  if (st != MX_OK) {
    mx_tokenizer_destroy(t);
    return mx_error_prefix(st, "tokenizer.json");
  }
  if (config_json) {
    st = load_config(t, config_json, config_len);
    if (st != MX_OK) {
      mx_tokenizer_destroy(t);
      return st;
    }
  } else if (t->n_post_prefix > 0) {
    t->bos_id = t->post_prefix[0];  // no config: the token the post-processor puts first
  }
  *out = t;
  return MX_OK;
}

mx_status_t mx_tokenizer_load(const char *dir, mx_tokenizer_t **out) {
  if (!out || !dir) return mx_error_set(MX_ERR_INVALID_ARG, "mx_tokenizer_load: NULL argument");
  *out = NULL;
  size_t dn = strlen(dir);
  char *path = malloc(dn + 32);
  if (!path) return mx_error_set(MX_ERR_NOMEM, "mx_tokenizer_load: out of memory");
  snprintf(path, dn + 32, "%s/tokenizer.json", dir);
  char *tj = NULL, *cj = NULL;
  size_t tn = 0, cn = 0;
  mx_status_t st = mx_read_file_max(path, MX_TOKENIZER_JSON_MAX_BYTES, &tj, &tn);
  if (st == MX_OK) {
    snprintf(path, dn + 32, "%s/tokenizer_config.json", dir);
    // Optional: absent is fine, present but unreadable (a symlink loop, no permission) is not.
    if (access(path, F_OK) == 0 || errno != ENOENT)
      st = mx_read_file_max(path, MX_TOKENIZER_CONFIG_MAX_BYTES, &cj, &cn);
  }
  if (st == MX_OK) {
    st = mx_tokenizer_load_json(tj, tn, cj, cn, out);
    if (st != MX_OK) mx_error_prefix(st, "%s", dir);
  }
  free(path);
  free(tj);
  free(cj);
  return st;
}

void mx_tokenizer_destroy(mx_tokenizer_t *tok) {
  if (!tok) return;
  mx_tok_free_pipeline(tok);
  mx_tok_strmap_free(&tok->vocab);
  mx_tok_strmap_free(&tok->added_map);
  mx_tok_mergemap_free(&tok->merges);
  free(tok->entries);
  mx_arena_destroy(tok->arena);
  free(tok);
}

// ---- accessors ----
int32_t mx_tokenizer_vocab_size(const mx_tokenizer_t *tok) { return tok ? tok->n_ids : 0; }
int32_t mx_tokenizer_bos_id(const mx_tokenizer_t *tok) { return tok ? tok->bos_id : -1; }
int32_t mx_tokenizer_eos_id(const mx_tokenizer_t *tok) { return tok ? tok->eos_id : -1; }
int32_t mx_tokenizer_pad_id(const mx_tokenizer_t *tok) { return tok ? tok->pad_id : -1; }

int32_t mx_tokenizer_token_to_id(const mx_tokenizer_t *tok, const char *piece, size_t len) {
  if (!tok || !piece) return -1;
  int32_t id = mx_tok_strmap_get(&tok->added_map, piece, len);
  return id >= 0 ? id : mx_tok_strmap_get(&tok->vocab, piece, len);
}

const char *mx_tokenizer_id_to_piece(const mx_tokenizer_t *tok, int32_t id, size_t *len) {
  if (!tok || id < 0 || id >= tok->n_ids || !tok->entries[id].piece) {
    if (len) *len = 0;
    return NULL;
  }
  if (len) *len = tok->entries[id].len;
  return tok->entries[id].piece;
}

bool mx_tokenizer_is_special(const mx_tokenizer_t *tok, int32_t id) {
  return tok && id >= 0 && id < tok->n_ids && tok->entries[id].special;
}

const char *mx_tokenizer_chat_template(const mx_tokenizer_t *tok) {
  return tok ? tok->chat_template : NULL;
}
bool mx_tokenizer_add_bos_token(const mx_tokenizer_t *tok) { return tok && tok->add_bos_token; }
bool mx_tokenizer_clean_up_spaces(const mx_tokenizer_t *tok) { return tok && tok->clean_up_spaces; }
