// GGUF tokenizer -> tokenizer.json + tokenizer_config.json, written as transformers' own
// converters lay them out, so the tokenizer module loads a GGUF vocabulary like any other:
// - "llama" (SentencePiece with scores): a BPE model with byte fallback whose merges are every
//   split of a piece into two pieces, ordered by the merged piece's score, highest first (the
//   order transformers' SentencePieceExtractor gives; SentencePiece's BPE merges the
//   best-scoring pair first), the Prepend / Replace "▁" normalizer and its inverse decoder;
// - "gpt2" (byte-level BPE with merges): the pre-tokenizer regex named by tokenizer.ggml.pre.
// Control and unknown tokens (token_type 3, 2) are special added tokens, user-defined ones (4)
// plain added tokens; BOS / EOS are added by the post-processor as add_bos / add_eos say.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/try.h"
#include "model/gguf_internal.h"

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

typedef struct vocab {
  int32_t n;
  const char **p;  // piece i (in the file)
  size_t *len;
  int32_t *type;
  float *score;
  int32_t *slot;  // open-addressing table of ids + 1 (0: empty), cap a power of two
  uint32_t cap;
} vocab_t;

static uint32_t hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
  return h;
}

static int32_t find(const vocab_t *v, const char *s, size_t n) {
  for (uint32_t i = hash(s, n) & (v->cap - 1);; i = (i + 1) & (v->cap - 1)) {
    int32_t k = v->slot[i];
    if (k == 0) return -1;
    if (v->len[k - 1] == n && memcmp(v->p[k - 1], s, n) == 0) return k - 1;
  }
}

static void vocab_free(vocab_t *v) {
  free(v->p);
  free(v->len);
  free(v->type);
  free(v->score);
  free(v->slot);
}

static mx_status_t oom(void) { return mx_error_set(MX_ERR_NOMEM, "out of memory"); }

static mx_status_t vocab_load(const mx_gguf_t *g, const char *src, vocab_t *v) {
  const mx_gguf_value_t *toks, *scores, *types;
  MX_TRY(mx_gguf_get_arr(g, "tokenizer.ggml.tokens", MX_GGUF_STRING, &toks));
  MX_TRY(mx_gguf_get_arr(g, "tokenizer.ggml.scores", MX_GGUF_F64, &scores));
  MX_TRY(mx_gguf_get_arr(g, "tokenizer.ggml.token_type", MX_GGUF_I64, &types));
  if (!toks || toks->arr.n == 0 || toks->arr.n > (1 << 22)) {
    return mx_error_set(MX_ERR_PARSE, "%s: tokenizer.ggml.tokens is missing, empty or too long",
                        src);
  }
  int32_t n = (int32_t)toks->arr.n;
  if ((scores && scores->arr.n != (uint64_t)n) || (types && types->arr.n != (uint64_t)n)) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: tokenizer.ggml.scores / token_type must have %d "
                        "elements like tokenizer.ggml.tokens",
                        src, n);
  }
  v->n = n;
  v->cap = 16;
  while (v->cap < 2u * (uint32_t)n) v->cap *= 2;
  v->p = malloc((size_t)n * sizeof *v->p);
  v->len = malloc((size_t)n * sizeof *v->len);
  v->type = malloc((size_t)n * sizeof *v->type);
  v->score = malloc((size_t)n * sizeof *v->score);
  v->slot = calloc(v->cap, sizeof *v->slot);
  if (!v->p || !v->len || !v->type || !v->score || !v->slot) return oom();
  size_t cur = 0;
  for (int32_t i = 0; i < n; i++) {
    mx_gguf_arr_next_str(toks, &cur, &v->p[i], &v->len[i]);
    v->type[i] = types ? (int32_t)mx_gguf_arr_i64(types, (uint64_t)i) : TT_NORMAL;
    v->score[i] = scores ? (float)mx_gguf_arr_f64(scores, (uint64_t)i) : 0.0f;
    uint32_t s = hash(v->p[i], v->len[i]) & (v->cap - 1);
    bool dup = false;
    for (; v->slot[s]; s = (s + 1) & (v->cap - 1)) {
      int32_t k = v->slot[s] - 1;
      if (v->len[k] == v->len[i] && memcmp(v->p[k], v->p[i], v->len[i]) == 0) dup = true;
    }
    if (!dup) v->slot[s] = i + 1;  // a repeated piece keeps its first id, as a vocab map does
  }
  return MX_OK;
}

// A cJSON string of n bytes (NUL-free pieces only; cJSON needs a C string).
static cJSON *str_n(const char *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s) return NULL;
  memcpy(s, p, n);
  s[n] = '\0';
  cJSON *j = cJSON_CreateString(s);
  free(s);
  return j;
}

static bool add(cJSON *o, const char *key, cJSON *item) {
  if (!item) return false;
  cJSON_AddItemToObject(o, key, item);
  return true;
}

// ---- SentencePiece merges ----

typedef struct merge {
  float score;  // the merged piece's
  int32_t piece, left, right;
} merge_t;

// Score, highest first; then the merged piece's id, then the halves' ids.
static int cmp_merge(const void *a, const void *b) {
  const merge_t *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  if (x->piece != y->piece) return x->piece < y->piece ? -1 : 1;
  if (x->left != y->left) return x->left < y->left ? -1 : 1;
  return (x->right > y->right) - (x->right < y->right);
}

static bool utf8_boundary(const char *p, size_t k) { return ((uint8_t)p[k] & 0xC0) != 0x80; }

static mx_status_t spm_merges(const vocab_t *v, cJSON *out) {
  size_t cap = 1024, n = 0;
  merge_t *m = malloc(cap * sizeof *m);
  if (!m) return oom();
  for (int32_t i = 0; i < v->n; i++) {
    for (size_t k = 1; k < v->len[i]; k++) {
      if (!utf8_boundary(v->p[i], k)) continue;
      int32_t l = find(v, v->p[i], k), r = find(v, v->p[i] + k, v->len[i] - k);
      if (l < 0 || r < 0) continue;
      if (n == cap) {
        merge_t *nm = realloc(m, 2 * cap * sizeof *m);
        if (!nm) {
          free(m);
          return oom();
        }
        m = nm;
        cap *= 2;
      }
      m[n++] = (merge_t){v->score[i], i, l, r};
    }
  }
  qsort(m, n, sizeof *m, cmp_merge);
  bool ok = true;
  for (size_t i = 0; ok && i < n; i++) {
    cJSON *pair = cJSON_CreateArray();
    ok = pair != NULL;
    if (ok) cJSON_AddItemToArray(out, pair);
    ok = ok && cJSON_AddItemToArray(pair, str_n(v->p[m[i].left], v->len[m[i].left]));
    ok = ok && cJSON_AddItemToArray(pair, str_n(v->p[m[i].right], v->len[m[i].right]));
  }
  free(m);
  return ok ? MX_OK : oom();
}

// ---- GPT-2 style BPE ----

// tokenizer.ggml.pre -> the pre-tokenizer regex transformers' tokenizer.json holds for it, and
// whether the BPE model ignores merges for whole-vocabulary words (Llama 3), and whether the
// text is NFC-normalized first (Qwen2's tokenizer.json says so).
static const struct {
  const char *pre, *regex;
  bool ignore_merges, nfc;
} kPre[] = {
    {"llama-bpe",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     true, false},
    {"qwen2",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     false, true},
};

static mx_status_t gpt2_pipeline(const mx_gguf_t *g, const char *src, cJSON *root, cJSON *model) {
  const char *p;
  size_t n;
  MX_TRY(mx_gguf_get_str(g, "tokenizer.ggml.pre", &p, &n));
  cJSON *pre = cJSON_CreateObject(), *dec = cJSON_CreateObject();
  bool ok = add(root, "pre_tokenizer", pre) && add(root, "decoder", dec) &&
            cJSON_AddStringToObject(dec, "type", "ByteLevel");
  if (!ok) return oom();
  if (!p || (n == 7 && memcmp(p, "default", 7) == 0) || (n == 4 && memcmp(p, "gpt2", 4) == 0)) {
    ok = cJSON_AddStringToObject(pre, "type", "ByteLevel") &&
         cJSON_AddBoolToObject(pre, "add_prefix_space", false) &&
         cJSON_AddBoolToObject(pre, "use_regex", true);
    return ok ? MX_OK : oom();
  }
  for (size_t i = 0; i < sizeof kPre / sizeof kPre[0]; i++) {
    if (strlen(kPre[i].pre) != n || memcmp(kPre[i].pre, p, n) != 0) continue;
    cJSON *seq = cJSON_AddArrayToObject(pre, "pretokenizers");
    cJSON *split = cJSON_CreateObject(), *bl = cJSON_CreateObject();
    ok = seq && cJSON_AddStringToObject(pre, "type", "Sequence") && split && bl;
    if (ok) {
      cJSON_AddItemToArray(seq, split);
      cJSON_AddItemToArray(seq, bl);
      cJSON *pat = cJSON_AddObjectToObject(split, "pattern");
      ok = pat && cJSON_AddStringToObject(pat, "Regex", kPre[i].regex) &&
           cJSON_AddStringToObject(split, "type", "Split") &&
           cJSON_AddStringToObject(split, "behavior", "Isolated") &&
           cJSON_AddBoolToObject(split, "invert", false) &&
           cJSON_AddStringToObject(bl, "type", "ByteLevel") &&
           cJSON_AddBoolToObject(bl, "add_prefix_space", false) &&
           cJSON_AddBoolToObject(bl, "use_regex", false) &&
           cJSON_AddBoolToObject(model, "ignore_merges", kPre[i].ignore_merges);
    }
    if (ok && kPre[i].nfc) {
      cJSON *norm = cJSON_CreateObject();
      ok = add(root, "normalizer", norm) && cJSON_AddStringToObject(norm, "type", "NFC");
    }
    return ok ? MX_OK : oom();
  }
  return mx_error_set(MX_ERR_UNSUPPORTED,
                      "%s: tokenizer.ggml.pre '%.*s' is not supported (default, llama-bpe, qwen2)",
                      src, (int)(n > 40 ? 40 : n), p);
}

static mx_status_t gpt2_merges(const mx_gguf_t *g, const char *src, cJSON *out) {
  const mx_gguf_value_t *m;
  MX_TRY(mx_gguf_get_arr(g, "tokenizer.ggml.merges", MX_GGUF_STRING, &m));
  if (!m) return mx_error_set(MX_ERR_PARSE, "%s: tokenizer.ggml.merges is missing", src);
  size_t cur = 0;
  for (uint64_t i = 0; i < m->arr.n; i++) {
    const char *p;
    size_t n;
    mx_gguf_arr_next_str(m, &cur, &p, &n);
    if (memchr(p, 0, n)) return mx_error_set(MX_ERR_PARSE, "%s: a merge holds a NUL byte", src);
    cJSON *s = str_n(p, n);
    if (!s) return oom();
    cJSON_AddItemToArray(out, s);
  }
  return MX_OK;
}

// ---- Both ----

static mx_status_t special_id(const mx_gguf_t *g, const char *key, const vocab_t *v,
                              const char *src, int32_t *id) {
  int64_t x;
  MX_TRY(mx_gguf_get_i64(g, key, -1, &x));
  if (x < 0 || x == UINT32_MAX) x = -1;  // llama.cpp writes "none" as -1 stored in a uint32
  if (x >= v->n) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s (%lld) is not a token id (vocabulary of %d)", src,
                        key, (long long)x, v->n);
  }
  *id = (int32_t)x;
  return MX_OK;
}

// One item of a TemplateProcessing "single" list, appended to it: the sequence $A (id < 0) or
// special token id, whose entry goes into special_tokens. Every node is attached to the tree as
// soon as it exists, so a failed allocation leaks nothing (the caller deletes the root).
static bool template_item(cJSON *single, cJSON *specials, const vocab_t *v, int32_t id) {
  cJSON *item = cJSON_CreateObject(), *inner = cJSON_CreateObject();
  if (!item || !inner) {
    cJSON_Delete(item);
    cJSON_Delete(inner);
    return false;
  }
  cJSON_AddItemToArray(single, item);
  cJSON_AddItemToObject(item, id < 0 ? "Sequence" : "SpecialToken", inner);
  if (!cJSON_AddNumberToObject(inner, "type_id", 0)) return false;
  if (id < 0) return cJSON_AddStringToObject(inner, "id", "A") != NULL;
  cJSON *piece = str_n(v->p[id], v->len[id]);
  if (!add(inner, "id", piece)) return false;
  cJSON *entry = cJSON_CreateObject();
  if (!add(specials, piece->valuestring, entry)) return false;
  cJSON *ids = cJSON_AddArrayToObject(entry, "ids"),
        *toks = cJSON_AddArrayToObject(entry, "tokens");
  cJSON *n = cJSON_CreateNumber(id), *t = str_n(v->p[id], v->len[id]);
  if (ids && n) cJSON_AddItemToArray(ids, n);
  if (toks && t) cJSON_AddItemToArray(toks, t);
  if (!ids || !toks || !n || !t) {
    if (!ids || !n) cJSON_Delete(n);
    if (!toks || !t) cJSON_Delete(t);
    return false;
  }
  return add(entry, "id", str_n(v->p[id], v->len[id]));
}

// The post-processor: [bos] $A [eos] as add_bos / add_eos say.
static bool post_processor(cJSON *root, const vocab_t *v, int32_t bos, bool add_bos, int32_t eos,
                           bool add_eos) {
  cJSON *pp = cJSON_CreateObject();
  if (!add(root, "post_processor", pp)) return false;
  cJSON *single = cJSON_AddArrayToObject(pp, "single");
  cJSON *specials = cJSON_AddObjectToObject(pp, "special_tokens");
  if (!single || !specials || !cJSON_AddStringToObject(pp, "type", "TemplateProcessing") ||
      !cJSON_AddArrayToObject(pp, "pair")) {
    return false;
  }
  return (!add_bos || template_item(single, specials, v, bos)) &&
         template_item(single, specials, v, -1) &&
         (!add_eos || template_item(single, specials, v, eos));
}

static mx_status_t build(const mx_gguf_t *g, const char *src, const vocab_t *v, bool spm,
                         cJSON *root, cJSON *cfg) {
  int32_t bos = -1, eos = -1, unk = -1, pad = -1;
  MX_TRY(special_id(g, "tokenizer.ggml.bos_token_id", v, src, &bos));
  MX_TRY(special_id(g, "tokenizer.ggml.eos_token_id", v, src, &eos));
  MX_TRY(special_id(g, "tokenizer.ggml.unknown_token_id", v, src, &unk));
  MX_TRY(special_id(g, "tokenizer.ggml.padding_token_id", v, src, &pad));
  bool add_bos, add_eos, space;
  // llama.cpp's default: SentencePiece vocabularies start with BOS when they have one.
  MX_TRY(mx_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", spm && bos >= 0, &add_bos));
  MX_TRY(mx_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", false, &add_eos));
  MX_TRY(mx_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", spm, &space));
  if (add_bos && bos < 0) {
    return mx_error_set(MX_ERR_PARSE, "%s: add_bos_token without tokenizer.ggml.bos_token_id", src);
  }
  if (add_eos && eos < 0) {
    return mx_error_set(MX_ERR_PARSE, "%s: add_eos_token without tokenizer.ggml.eos_token_id", src);
  }
  cJSON *model = cJSON_CreateObject(), *vocab = cJSON_CreateObject();
  cJSON *merges = cJSON_CreateArray(), *added = cJSON_CreateArray();
  bool ok = add(root, "model", model) && add(model, "vocab", vocab) &&
            add(model, "merges", merges) && add(root, "added_tokens", added) &&
            cJSON_AddStringToObject(model, "type", "BPE") &&
            cJSON_AddBoolToObject(model, "byte_fallback", spm) &&
            cJSON_AddBoolToObject(model, "fuse_unk", spm);
  if (!ok) return oom();
  if (unk >= 0 && !add(model, "unk_token", str_n(v->p[unk], v->len[unk]))) return oom();
  for (int32_t i = 0; i < v->n; i++) {
    if (memchr(v->p[i], 0, v->len[i]) || v->len[i] == 0) {
      return mx_error_set(MX_ERR_PARSE, "%s: token %d is empty or holds a NUL byte", src, i);
    }
    cJSON *piece = str_n(v->p[i], v->len[i]);
    if (!piece) return oom();
    // The first id of a repeated piece is the one a vocabulary map keeps.
    if (find(v, v->p[i], v->len[i]) == i) {
      cJSON_AddItemToObject(vocab, piece->valuestring, cJSON_CreateNumber(i));
    }
    int32_t t = v->type[i];
    if (t == TT_CONTROL || t == TT_UNKNOWN || t == TT_USER) {
      cJSON *a = cJSON_CreateObject();
      if (!a) {
        cJSON_Delete(piece);
        return oom();
      }
      cJSON_AddItemToArray(added, a);
      cJSON_AddItemToObject(a, "content", piece);
      ok = cJSON_AddNumberToObject(a, "id", i) &&
           cJSON_AddBoolToObject(a, "special", t != TT_USER) &&
           cJSON_AddBoolToObject(a, "normalized", t == TT_USER);
      if (!ok) return oom();
    } else {
      cJSON_Delete(piece);
    }
  }
  if (spm) {
    MX_TRY(spm_merges(v, merges));
    // "▁" stands for the space; a leading one is added (add_space_prefix) and removed again.
    static const char kSpace[] = "\xe2\x96\x81";
    cJSON *norm = cJSON_CreateObject(), *dec = cJSON_CreateObject();
    ok = add(root, "normalizer", norm) && add(root, "decoder", dec) &&
         cJSON_AddStringToObject(norm, "type", "Sequence") &&
         cJSON_AddStringToObject(dec, "type", "Sequence");
    cJSON *ns = ok ? cJSON_AddArrayToObject(norm, "normalizers") : NULL;
    cJSON *ds = ok ? cJSON_AddArrayToObject(dec, "decoders") : NULL;
    if (!ns || !ds) return oom();
    char text[512];
    int len = snprintf(
        text, sizeof text,
        "[%s{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"%s\"}]"
        "\x1f"
        "[{\"type\":\"Replace\",\"pattern\":{\"String\":\"%s\"},\"content\":\" \"},"
        "{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"}%s]",
        space ? "{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"}," : "", kSpace, kSpace,
        space ? ",{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}" : "");
    const char *sep = memchr(text, 0x1f, (size_t)len);
    cJSON *na = cJSON_ParseWithLength(text, (size_t)(sep - text));
    cJSON *da = cJSON_Parse(sep + 1);
    if (!na || !da) {
      cJSON_Delete(na);
      cJSON_Delete(da);
      return oom();
    }
    cJSON_ReplaceItemInObject(norm, "normalizers", na);
    cJSON_ReplaceItemInObject(dec, "decoders", da);
    if (!cJSON_AddNullToObject(root, "pre_tokenizer")) return oom();
  } else {
    MX_TRY(gpt2_merges(g, src, merges));
    MX_TRY(gpt2_pipeline(g, src, root, model));
  }
  if (!post_processor(root, v, bos, add_bos, eos, add_eos)) return oom();
  // tokenizer_config.json: the special tokens by content, add_bos_token, the chat template.
  static const struct {
    const char *field;
    int which;
  } kSpecial[] = {{"bos_token", 0}, {"eos_token", 1}, {"unk_token", 2}, {"pad_token", 3}};
  int32_t ids[4] = {bos, eos, unk, pad};
  for (size_t i = 0; i < sizeof kSpecial / sizeof kSpecial[0]; i++) {
    int32_t id = ids[kSpecial[i].which];
    if (id >= 0 && !add(cfg, kSpecial[i].field, str_n(v->p[id], v->len[id]))) return oom();
  }
  ok = cJSON_AddBoolToObject(cfg, "add_bos_token", add_bos) &&
       cJSON_AddBoolToObject(cfg, "add_eos_token", add_eos) &&
       cJSON_AddBoolToObject(cfg, "clean_up_tokenization_spaces", false);
  if (!ok) return oom();
  const char *tpl;
  size_t tl;
  MX_TRY(mx_gguf_get_str(g, "tokenizer.chat_template", &tpl, &tl));
  if (tpl) {
    if (memchr(tpl, 0, tl)) {
      return mx_error_set(MX_ERR_PARSE, "%s: tokenizer.chat_template holds a NUL byte", src);
    }
    if (!add(cfg, "chat_template", str_n(tpl, tl))) return oom();
  }
  return MX_OK;
}

mx_status_t mx_gguf_tokenizer_json(const mx_gguf_t *g, const char *src, char **tok_json,
                                   char **config_json) {
  *tok_json = *config_json = NULL;
  const char *model;
  size_t n;
  MX_TRY(mx_gguf_get_str(g, "tokenizer.ggml.model", &model, &n));
  if (!model) return MX_OK;
  bool spm = n == 5 && memcmp(model, "llama", 5) == 0;
  if (!spm && !(n == 4 && memcmp(model, "gpt2", 4) == 0)) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: tokenizer.ggml.model '%.*s' is not supported (llama, gpt2)", src,
                        (int)(n > 40 ? 40 : n), model);
  }
  vocab_t v;
  memset(&v, 0, sizeof v);
  cJSON *root = cJSON_CreateObject(), *cfg = cJSON_CreateObject();
  mx_status_t st = root && cfg ? vocab_load(g, src, &v) : oom();
  if (st == MX_OK) st = build(g, src, &v, spm, root, cfg);
  if (st == MX_OK) {
    *tok_json = cJSON_PrintUnformatted(root);
    *config_json = cJSON_PrintUnformatted(cfg);
    if (!*tok_json || !*config_json) {
      free(*tok_json);
      free(*config_json);
      *tok_json = *config_json = NULL;
      st = oom();
    }
  }
  cJSON_Delete(root);
  cJSON_Delete(cfg);
  vocab_free(&v);
  return st;
}
