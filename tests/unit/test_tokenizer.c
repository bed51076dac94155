// Tokenizer unit tests on small inline tokenizer.json files: malformed input gives clear errors,
// byte-level BPE, merges formats, ignore_merges, added-token flags, parse_special, Metaspace,
// byte fallback, decoding and the streaming decoder. Real tokenizers from MX_SHARED when present.
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/tokenizer.h"
#include "mx_test.h"

// ---- helpers ----
static mx_status_t load_str(const char *json, const char *cfg, mx_tokenizer_t **t) {
  return mx_tokenizer_load_json(json, strlen(json), cfg, cfg ? strlen(cfg) : 0, t);
}

// Loading must fail with `status` and a message containing `needle`.
static void expect_error(const char *json, const char *cfg, mx_status_t status,
                         const char *needle) {
  mx_tokenizer_t *t = (mx_tokenizer_t *)1;
  mx_status_t st = load_str(json, cfg, &t);
  CHECK_MSG(st == status, "want %s got %s (%s) for %.120s", mx_status_name(status),
            mx_status_name(st), mx_error_message(), json);
  CHECK(t == NULL);
  CHECK_MSG(strstr(mx_error_message(), needle) != NULL, "message \"%s\" lacks \"%s\"",
            mx_error_message(), needle);
  if (st == MX_OK) mx_tokenizer_destroy(t);
}

static int32_t *enc(const mx_tokenizer_t *t, const char *s, bool add, bool parse, int32_t *n) {
  mx_encode_opts_t o = {.add_special = add, .parse_special = parse};
  int32_t *ids = NULL;
  *n = -1;
  mx_status_t st = mx_tokenizer_encode(t, s, strlen(s), &o, &ids, n);
  CHECK_MSG(st == MX_OK, "encode \"%s\": %s", s, mx_error_message());
  return ids;
}

static bool ids_are(const int32_t *ids, int32_t n, const int32_t *want, int32_t nw) {
  if (n != nw) return false;
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] != want[i]) return false;
  }
  return true;
}

#define EXPECT_IDS(t, s, add, parse, ...)                                                \
  do {                                                                                   \
    static const int32_t want_[] = {__VA_ARGS__};                                        \
    int32_t n_;                                                                          \
    int32_t *got_ = enc(t, s, add, parse, &n_);                                          \
    bool ok_ = ids_are(got_, n_, want_, (int32_t)(sizeof want_ / sizeof want_[0]));      \
    CHECK_MSG(ok_, "encode \"%s\": got %d ids, first %d", s, n_, n_ > 0 ? got_[0] : -1); \
    free(got_);                                                                          \
  } while (0)

static char *dec(const mx_tokenizer_t *t, const int32_t *ids, int32_t n, bool skip) {
  char *s = NULL;
  size_t len = 0;
  mx_status_t st = mx_tokenizer_decode(t, ids, n, skip, &s, &len);
  CHECK_MSG(st == MX_OK, "decode: %s", mx_error_message());
  return s;
}

// A byte-level BPE tokenizer: the 256 GPT-2 byte chars (ids 0..255), then merges.
static char *bytelevel_json(bool array_merges, bool ignore_merges) {
  cJSON *root = cJSON_CreateObject();
  cJSON *model = cJSON_AddObjectToObject(root, "model");
  cJSON_AddStringToObject(model, "type", "BPE");
  cJSON_AddBoolToObject(model, "ignore_merges", ignore_merges);
  cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
  int next = 0;
  for (int b = 0; b < 256; b++) {
    // GPT-2 mapping: printable bytes are themselves, the rest U+0100 onwards in order.
    int cp = b, k = 0;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) {
      for (int x = 0; x < b; x++) {
        if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174)) k++;
      }
      cp = 256 + k;
    }
    char u[4] = {0};
    if (cp < 0x80) {
      u[0] = (char)cp;
    } else {
      u[0] = (char)(0xC0 | (cp >> 6));
      u[1] = (char)(0x80 | (cp & 0x3F));
    }
    cJSON_AddNumberToObject(vocab, u, next++);
  }
  const char *merged[] = {"he", "ll", "hell", "hello", "\xC4\xA0w", "\xC4\xA0wo"};   // Ġw, Ġwo
  for (size_t i = 0; i < 6; i++) cJSON_AddNumberToObject(vocab, merged[i], next++);  // 256..261
  cJSON_AddNumberToObject(vocab, "rld", next++);                                     // 262
  const char *pairs[][2] = {{"h", "e"},    {"l", "l"},        {"he", "ll"},
                            {"hell", "o"}, {"\xC4\xA0", "w"}, {"\xC4\xA0w", "o"}};
  cJSON *merges = cJSON_AddArrayToObject(model, "merges");
  for (size_t i = 0; i < 6; i++) {
    if (array_merges) {
      cJSON *p = cJSON_CreateArray();
      cJSON_AddItemToArray(p, cJSON_CreateString(pairs[i][0]));
      cJSON_AddItemToArray(p, cJSON_CreateString(pairs[i][1]));
      cJSON_AddItemToArray(merges, p);
    } else {
      char s[32];
      snprintf(s, sizeof s, "%s %s", pairs[i][0], pairs[i][1]);
      cJSON_AddItemToArray(merges, cJSON_CreateString(s));
    }
  }
  cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
  const struct {
    const char *c;
    int id;
    bool special, lstrip, rstrip, single_word;
  } at[] = {{"<|end|>", 300, true, false, false, false},
            {"<tool>", 301, false, true, true, false},
            {"cat", 302, false, false, false, true}};
  for (size_t i = 0; i < 3; i++) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", at[i].id);
    cJSON_AddStringToObject(a, "content", at[i].c);
    cJSON_AddBoolToObject(a, "special", at[i].special);
    cJSON_AddBoolToObject(a, "lstrip", at[i].lstrip);
    cJSON_AddBoolToObject(a, "rstrip", at[i].rstrip);
    cJSON_AddBoolToObject(a, "single_word", at[i].single_word);
    cJSON_AddBoolToObject(a, "normalized", false);
    cJSON_AddItemToArray(added, a);
  }
  cJSON *pre = cJSON_AddObjectToObject(root, "pre_tokenizer");
  cJSON_AddStringToObject(pre, "type", "ByteLevel");
  cJSON_AddBoolToObject(pre, "add_prefix_space", false);
  cJSON_AddBoolToObject(pre, "use_regex", true);
  cJSON *post = cJSON_AddObjectToObject(root, "post_processor");
  cJSON_AddStringToObject(post, "type", "ByteLevel");
  cJSON *d = cJSON_AddObjectToObject(root, "decoder");
  cJSON_AddStringToObject(d, "type", "ByteLevel");
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return s;
}

// ---- malformed tokenizer.json ----
static void test_malformed(void) {
  expect_error("{\"model\": ", NULL, MX_ERR_PARSE, "tokenizer.json: not valid JSON (line 1");
  expect_error("[1, 2]", NULL, MX_ERR_PARSE, "not a JSON object");
  expect_error("{}", NULL, MX_ERR_PARSE, "missing \"model\"");
  expect_error("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0.0]]}}", NULL,
               MX_ERR_UNSUPPORTED, "model.type \"Unigram\" is not supported");
  expect_error("{\"model\": {\"type\": \"BPE\", \"merges\": []}}", NULL, MX_ERR_PARSE,
               "model.vocab");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, "
      "\"merges\": [\"a b\"]}}",
      NULL, MX_ERR_PARSE, "model.merges[0]: \"ab\" is not in the vocabulary");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"ab\": 1}, "
      "\"merges\": [[\"a\", \"zz\"]]}}",
      NULL, MX_ERR_PARSE, "\"zz\" is not in the vocabulary");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a\"]}}", NULL,
               MX_ERR_PARSE, "is not \"left right\"");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}", NULL,
               MX_ERR_PARSE, "\"a\" has id out of range");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 1e12}, \"merges\": []}}", NULL,
               MX_ERR_PARSE, "\"a\" has id out of range");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 3000000}, "
      "\"merges\": []}}",
      NULL, MX_ERR_PARSE, "id 3000000 is out of range for 2 tokens");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 1.5}, \"merges\": []}}", NULL,
               MX_ERR_PARSE, "\"a\" has id out of range");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"x\"}, \"merges\": []}}", NULL,
               MX_ERR_PARSE, "not a number");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}",
               NULL, MX_ERR_PARSE, "duplicate id 0");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"a\": 1}, \"merges\": []}}",
               NULL, MX_ERR_PARSE, "duplicate token \"a\"");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
      " \"added_tokens\": [{\"id\": 5, \"content\": \"<x>\"}, {\"id\": 5, \"content\": "
      "\"<y>\"}]}",
      NULL, MX_ERR_PARSE, "added_tokens: duplicate id 5");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
      " \"added_tokens\": [{\"id\": -3, \"content\": \"<x>\"}]}",
      NULL, MX_ERR_PARSE, "\"<x>\" has a missing or out-of-range id");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
      " \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(a|\"},"
      " \"behavior\": \"Isolated\"}}",
      NULL, MX_ERR_PARSE, "pre_tokenizer Split: bad regex \"(a|\"");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
      " \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\"},"
      " \"behavior\": \"Sideways\"}}",
      NULL, MX_ERR_PARSE, "unknown \"behavior\" \"Sideways\"");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
      " \"normalizer\": {\"type\": \"BertNormalizer\"}}",
      NULL, MX_ERR_UNSUPPORTED, "normalizer type \"BertNormalizer\" is not supported");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
      " \"decoder\": {\"type\": \"CTC\"}}",
      NULL, MX_ERR_UNSUPPORTED, "decoder type \"CTC\"");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
      " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
      "[{\"SpecialToken\": {\"id\": \"<s>\"}}, {\"Sequence\": {\"id\": \"A\"}}], "
      "\"special_tokens\": {}}}",
      NULL, MX_ERR_PARSE, "item \"<s>\" has no special_tokens entry");
  expect_error(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], "
      "\"unk_token\": \"<unk>\"}}",
      NULL, MX_ERR_PARSE, "unk_token \"<unk>\" is not in the vocabulary");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
               "{\"bos_token\": \"<s>\"}", MX_ERR_PARSE, "bos_token \"<s>\" is not a token");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
               "{\"bos_token\": ", MX_ERR_PARSE, "tokenizer_config.json: not valid JSON");

  // Directory loading names the directory and the file.
  mx_tokenizer_t *t = (mx_tokenizer_t *)1;
  CHECK(mx_tokenizer_load("/nonexistent-dir", &t) == MX_ERR_IO);
  CHECK(t == NULL);
  CHECK(strstr(mx_error_message(), "/nonexistent-dir/tokenizer.json") != NULL);
  mx_tokenizer_destroy(NULL);
}

// ---- byte-level BPE ----
static void test_bytelevel(void) {
  for (int variant = 0; variant < 2; variant++) {
    char *json = bytelevel_json(variant == 1, false);
    mx_tokenizer_t *t = NULL;
    CHECK_OK(load_str(json, NULL, &t));
    free(json);
    if (!t) continue;
    CHECK(mx_tokenizer_vocab_size(t) == 303);
    CHECK(mx_tokenizer_bos_id(t) == -1 && mx_tokenizer_eos_id(t) == -1);
    // "hello world" -> hello, Ġwo, r, l, d ("rld" has no merge path).
    EXPECT_IDS(t, "hello world", false, true, 259, 261, 'r', 'l', 'd');
    // Added tokens: special matched only with parse_special.
    EXPECT_IDS(t, "he<|end|>", false, true, 256, 300);
    EXPECT_IDS(t, "<|end|>", false, false, '<', '|', 'e', 'n', 'd', '|', '>');
    // rstrip/lstrip swallow surrounding whitespace; non-special tokens match even without
    // parse_special.
    EXPECT_IDS(t, "he <tool> he", false, false, 256, 301, 256);
    // single_word: "cat" only as a whole word.
    EXPECT_IDS(t, "cat", false, true, 302);
    EXPECT_IDS(t, "cats", false, true, 'c', 'a', 't', 's');
    // Decoding maps bytes back; skip_special drops <|end|>.
    int32_t ids[] = {259, 300, 261, 'r'};
    char *s = dec(t, ids, 4, false);
    CHECK(s && strcmp(s, "hello<|end|> wor") == 0);
    free(s);
    s = dec(t, ids, 4, true);
    CHECK(s && strcmp(s, "hello wor") == 0);
    free(s);
    CHECK(mx_tokenizer_is_special(t, 300) && !mx_tokenizer_is_special(t, 301));
    CHECK(mx_tokenizer_token_to_id(t, "hello", 5) == 259);
    CHECK(mx_tokenizer_token_to_id(t, "<tool>", 6) == 301);
    CHECK(mx_tokenizer_token_to_id(t, "nope", 4) == -1);
    size_t pl = 0;
    const char *p = mx_tokenizer_id_to_piece(t, 260, &pl);
    CHECK(p && pl == 3 && memcmp(p, "\xC4\xA0w", 3) == 0);
    CHECK(mx_tokenizer_id_to_piece(t, 299, &pl) == NULL && pl == 0);  // gap in the ids
    CHECK(mx_tokenizer_id_to_piece(t, -1, NULL) == NULL);
    CHECK(mx_tokenizer_chat_template(t) == NULL);

    // Bad input.
    int32_t *out = NULL, n = 0;
    CHECK(mx_tokenizer_encode(t, "\xFF", 1, NULL, &out, &n) == MX_ERR_INVALID_ARG);
    CHECK(strstr(mx_error_message(), "UTF-8") != NULL);
    int32_t bad[] = {5, 299};
    char *txt = NULL;
    CHECK(mx_tokenizer_decode(t, bad, 2, false, &txt, NULL) == MX_ERR_INVALID_ARG && !txt);
    CHECK(strstr(mx_error_message(), "id 299") != NULL);

    // Streaming: "€" is E2 82 AC, three byte tokens; only the third emits text.
    const uint8_t euro[] = {0xE2, 0x82, 0xAC};
    mx_detok_stream_t st;
    mx_detok_stream_init(&st, t, 0);
    size_t k = 99;
    int32_t ids_e[3];
    for (int i = 0; i < 3; i++) ids_e[i] = euro[i];  // byte b's char has id b here
    CHECK(strcmp(mx_detok_stream_push(&st, ids_e[0], &k), "") == 0 && k == 0);
    CHECK(strcmp(mx_detok_stream_push(&st, ids_e[1], &k), "") == 0 && k == 0);
    CHECK(strcmp(mx_detok_stream_push(&st, ids_e[2], &k), "\xE2\x82\xAC") == 0 && k == 3);
    // A dangling lead byte becomes U+FFFD at flush; an invalid one at once.
    CHECK(strcmp(mx_detok_stream_push(&st, 0xE2, &k), "") == 0);
    CHECK(strcmp(mx_detok_stream_flush(&st, &k), "\xEF\xBF\xBD") == 0 && k == 3);
    CHECK(strcmp(mx_detok_stream_push(&st, 0xE2, &k), "") == 0);
    CHECK(strcmp(mx_detok_stream_push(&st, 'a', &k),
                 "\xEF\xBF\xBD"
                 "a") == 0);
    CHECK(strcmp(mx_detok_stream_push(&st, 299, &k), "\xEF\xBF\xBD") == 0);  // no such id
    // Whole-list decode of a broken sequence is lossy like Hugging Face's.
    int32_t broken[] = {0xE2, 0x82, 'a'};
    s = dec(t, broken, 3, false);
    CHECK(s && strcmp(s,
                      "\xEF\xBF\xBD"
                      "a") == 0);
    free(s);
    mx_tokenizer_destroy(t);
  }
  // ignore_merges: a pre-token that is itself a token is emitted whole.
  char *json = bytelevel_json(false, true);
  mx_tokenizer_t *t = NULL;
  CHECK_OK(load_str(json, NULL, &t));
  free(json);
  if (t) {
    EXPECT_IDS(t, "rld", false, true, 262);
    mx_tokenizer_destroy(t);
  }
}

// ---- SentencePiece style: Metaspace, byte fallback, unk, TemplateProcessing ----
static const char kSpm[] =
    "{\"normalizer\": null,"
    " \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\\u2581\","
    "   \"prepend_scheme\": \"first\", \"split\": true},"
    " \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true,"
    "   \"byte_fallback\": true,"
    "   \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, \"<0xE2>\": 3, \"<0x82>\": 4,"
    "     \"<0xAC>\": 5, \"\\u2581\": 6, \"h\": 7, \"i\": 8, \"\\u2581h\": 9, \"\\u2581hi\": 10},"
    "   \"merges\": [\"\\u2581 h\", \"\\u2581h i\"]},"
    " \"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
    "   {\"id\": 1, \"content\": \"<s>\", \"special\": true},"
    "   {\"id\": 2, \"content\": \"</s>\", \"special\": true}],"
    " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": ["
    "   {\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\"}},"
    "   {\"SpecialToken\": {\"id\": \"</s>\", \"type_id\": 0}}],"
    "   \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [1]},"
    "     \"</s>\": {\"id\": \"</s>\", \"ids\": [2]}}},"
    " \"decoder\": {\"type\": \"Metaspace\", \"replacement\": \"\\u2581\","
    "   \"prepend_scheme\": \"first\", \"split\": true}}";

static void test_spm(void) {
  mx_tokenizer_t *t = NULL;
  CHECK_OK(load_str(kSpm,
                    "{\"bos_token\": {\"content\": \"<s>\"}, \"eos_token\": \"</s>\","
                    " \"add_bos_token\": true, \"chat_template\": \"{{ x }}\"}",
                    &t));
  if (!t) return;
  CHECK(mx_tokenizer_bos_id(t) == 1 && mx_tokenizer_eos_id(t) == 2);
  CHECK(mx_tokenizer_add_bos_token(t) && !mx_tokenizer_clean_up_spaces(t));
  CHECK(mx_tokenizer_chat_template(t) && strcmp(mx_tokenizer_chat_template(t), "{{ x }}") == 0);
  // "hi hi": ▁hi ▁hi; with add_special: <s> ... </s>.
  EXPECT_IDS(t, "hi hi", false, true, 10, 10);
  EXPECT_IDS(t, "hi hi", true, true, 1, 10, 10, 2);
  // "€" falls back to bytes; "xy" (not in vocab, no bytes) fuses into one <unk>.
  EXPECT_IDS(t, "\xE2\x82\xAC", false, true, 6, 3, 4, 5);
  EXPECT_IDS(t, "hxy", false, true, 9, 0);
  // prepend_scheme "first": the text after an added token gets no ▁.
  EXPECT_IDS(t, "<s>hi", false, true, 1, 7, 8);
  int32_t ids[] = {10, 10};
  char *s = dec(t, ids, 2, false);
  CHECK(s && strcmp(s, "hi hi") == 0);
  free(s);
  // Streaming: the first ▁ is dropped, later ones are spaces; MID_TEXT keeps it.
  mx_detok_stream_t st;
  size_t k;
  mx_detok_stream_init(&st, t, 0);
  CHECK(strcmp(mx_detok_stream_push(&st, 10, &k), "hi") == 0);
  CHECK(strcmp(mx_detok_stream_push(&st, 10, &k), " hi") == 0);
  mx_detok_stream_init(&st, t, MX_DETOK_MID_TEXT);
  CHECK(strcmp(mx_detok_stream_push(&st, 10, &k), " hi") == 0);
  mx_tokenizer_destroy(t);
}

// ---- Split behaviors: merges across boundaries show where the pieces were cut ----
static void test_split_behaviors(void) {
  // Vocabulary: a=0, " "=1, "a "=2, " a"=3, "aa"=4; merges "a " before " a".
  static const char kFmt[] =
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \" \": 1, \"a \": 2, \" a\": 3,"
      " \"aa\": 4}, \"merges\": [[\"a\", \" \"], [\" \", \"a\"], [\"a\", \"a\"]]},"
      " \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"%s\": \" \"},"
      " \"behavior\": \"%s\", \"invert\": %s}}";
  const struct {
    const char *kind, *behavior, *invert;
    int32_t want[4];
    int32_t n;
  } cases[] = {
      {"String", "Isolated", "false", {0, 1, 0}, 3},
      {"Regex", "Isolated", "false", {0, 1, 0}, 3},
      {"String", "Removed", "false", {0, 0}, 2},
      {"String", "MergedWithPrevious", "false", {2, 0}, 2},
      {"String", "MergedWithNext", "false", {0, 3}, 2},
      {"String", "Contiguous", "false", {0, 1, 0}, 3},
      {"String", "Removed", "true", {1}, 1},  // inverted: only the spaces are kept
      {"Regex", "Contiguous", "true", {0, 1, 0}, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char json[1024];
    snprintf(json, sizeof json, kFmt, cases[i].kind, cases[i].behavior, cases[i].invert);
    mx_tokenizer_t *t = NULL;
    CHECK_OK(load_str(json, NULL, &t));
    if (!t) continue;
    int32_t n = 0;
    int32_t *ids = enc(t, "a a", false, true, &n);
    CHECK_MSG(ids_are(ids, n, cases[i].want, cases[i].n), "%s %s invert=%s: %d ids, first %d",
              cases[i].kind, cases[i].behavior, cases[i].invert, n, n > 0 ? ids[0] : -1);
    free(ids);
    mx_tokenizer_destroy(t);
  }
}

// ---- normalizers and normalized added tokens ----
static void test_normalized_added(void) {
  static const char kJson[] =
      "{\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Lowercase\"},"
      "   {\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": true},"
      "   {\"type\": \"Replace\", \"pattern\": {\"Regex\": \"o+\"}, \"content\": \"o\"}]},"
      " \"model\": {\"type\": \"BPE\", \"vocab\": {\"h\": 0, \"e\": 1, \"l\": 2, \"o\": 3,"
      "   \"A\": 4, \"B\": 5, \"a\": 6, \"b\": 7, \" \": 8}, \"merges\": []},"
      " \"added_tokens\": [{\"id\": 10, \"content\": \"hello\", \"normalized\": true,"
      "   \"special\": false}, {\"id\": 11, \"content\": \"AB\", \"normalized\": false,"
      "   \"special\": false}]}";
  mx_tokenizer_t *t = NULL;
  CHECK_OK(load_str(kJson, NULL, &t));
  if (!t) return;
  EXPECT_IDS(t, "  HELLOOO ", false, true, 10);  // lowercased, stripped, o+ -> o, then matched
  EXPECT_IDS(t, "AB", false, true, 11);          // raw match before normalization
  EXPECT_IDS(t, "ab", false, true, 6, 7);
  EXPECT_IDS(t, "xAB", false, true, 11);  // "x" is not in the vocabulary and there is no unk
  // No decoder: tokens joined with spaces.
  int32_t ids[] = {0, 1, 11};
  char *s = dec(t, ids, 3, false);
  CHECK(s && strcmp(s, "h e AB") == 0);
  free(s);
  mx_tokenizer_destroy(t);
}

// ---- tests/data/tokenizer: whole directories (tokenizer.json + tokenizer_config.json) ----
static void test_data_dirs(const char *data) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tokenizer/mini-bytelevel", data);
  mx_tokenizer_t *t = NULL;
  CHECK_OK(mx_tokenizer_load(dir, &t));
  if (t) {
    CHECK(mx_tokenizer_bos_id(t) == 300 && mx_tokenizer_eos_id(t) == 300);
    CHECK(mx_tokenizer_clean_up_spaces(t) && !mx_tokenizer_add_bos_token(t));
    const char *ct = mx_tokenizer_chat_template(t);  // the list's "default" entry
    CHECK(ct && strncmp(ct, "{% for m in messages %}", 23) == 0);
    // ignore_merges: "hello" is a token, emitted whole; the template prepends <|end|>.
    EXPECT_IDS(t, "hello world", true, true, 300, 259, 261, 'r', 'l', 'd');
    EXPECT_IDS(t, "e\xCC\x81", false, true, 0xC3, 0xA9);  // NFC: e + U+0301 -> U+00E9
    mx_tokenizer_destroy(t);
  }
  snprintf(dir, sizeof dir, "%s/tokenizer/mini-spm", data);
  CHECK_OK(mx_tokenizer_load(dir, &t));
  if (t) {
    CHECK(mx_tokenizer_bos_id(t) == 1 && mx_tokenizer_eos_id(t) == 2);
    EXPECT_IDS(t, "hello hi", true, true, 1, 270, 266);
    EXPECT_IDS(t, "\xE2\x82\xAC", false, true, 259, 3 + 0xE2, 3 + 0x82, 3 + 0xAC);
    EXPECT_IDS(t, "<s>hi", false, true, 1, 266);  // legacy layout: a new ▁ after <s>
    int32_t ids[] = {1, 270, 266, 3 + 0xE2, 3 + 0x82, 3 + 0xAC};
    char *s = dec(t, ids, 6, false);
    CHECK(s && strcmp(s, "<s> hello hi\xE2\x82\xAC") == 0);
    free(s);
    s = dec(t, ids, 6, true);
    CHECK(s && strcmp(s, "hello hi\xE2\x82\xAC") == 0);
    free(s);
    // Byte-fallback run that is not valid UTF-8: one U+FFFD per byte token, as Hugging Face.
    int32_t bad[] = {270, 3 + 0xE2, 3 + 0x82, 266};
    s = dec(t, bad, 4, false);
    CHECK(s && strcmp(s, "hello\xEF\xBF\xBD\xEF\xBF\xBD hi") == 0);
    free(s);
    mx_tokenizer_destroy(t);
  }
}

// ---- real tokenizers (MX_SHARED) ----
static void test_shared(const char *shared) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/models/stories260K/hf", shared);
  mx_tokenizer_t *t = NULL;
  CHECK_OK(mx_tokenizer_load(dir, &t));
  if (t) {
    CHECK(mx_tokenizer_vocab_size(t) == 512);
    CHECK(mx_tokenizer_bos_id(t) == 1 && mx_tokenizer_eos_id(t) == 2);
    CHECK(mx_tokenizer_add_bos_token(t));
    // Byte fallback + streaming: "€" arrives as <0xE2><0x82><0xAC>.
    int32_t n = 0;
    int32_t *ids = enc(t, "a\xE2\x82\xAC", false, true, &n);
    mx_detok_stream_t st;
    mx_detok_stream_init(&st, t, MX_DETOK_SKIP_SPECIAL);
    char acc[64] = {0};
    size_t an = 0, k = 0;
    int emitted_at = -1;
    for (int32_t i = 0; i < n; i++) {
      const char *p = mx_detok_stream_push(&st, ids[i], &k);
      if (k > 0 && memchr(p, 0xE2, k)) emitted_at = i;
      memcpy(acc + an, p, k);
      an += k;
    }
    CHECK_MSG(an == 4 && memcmp(acc, "a\xE2\x82\xAC", 4) == 0, "stream got \"%s\"", acc);
    CHECK(emitted_at == n - 1);  // the euro sign came out with its last byte token
    free(ids);
    // A generation-style stream: BOS skipped, the first piece's SentencePiece space removed.
    ids = enc(t, "Once upon", true, true, &n);
    mx_detok_stream_init(&st, t, MX_DETOK_SKIP_SPECIAL);
    an = 0;
    for (int32_t i = 0; i < n; i++) {
      const char *p = mx_detok_stream_push(&st, ids[i], &k);
      memcpy(acc + an, p, k);
      an += k;
    }
    acc[an] = 0;
    CHECK_MSG(strcmp(acc, "Once upon") == 0, "got \"%s\"", acc);
    free(ids);
    mx_tokenizer_destroy(t);
  }
  snprintf(dir, sizeof dir, "%s/tokenizers/qwen3", shared);
  CHECK_OK(mx_tokenizer_load(dir, &t));
  if (t) {
    CHECK(mx_tokenizer_bos_id(t) == -1);
    CHECK(mx_tokenizer_eos_id(t) == 151645);
    CHECK(mx_tokenizer_pad_id(t) == 151643);
    CHECK(mx_tokenizer_chat_template(t) && strlen(mx_tokenizer_chat_template(t)) == 4116);
    // parse_special=false: <|im_start|> is plain text, <think> (not special) still matches.
    int32_t n = 0;
    int32_t *ids = enc(t, "<|im_start|><think>", false, false, &n);
    CHECK(n > 2 && ids[n - 1] == 151667);
    for (int32_t i = 0; i < n; i++) CHECK(ids[i] != 151644);
    free(ids);
    mx_tokenizer_destroy(t);
  }
  snprintf(dir, sizeof dir, "%s/tokenizers/llama3", shared);
  CHECK_OK(mx_tokenizer_load(dir, &t));
  if (t) {
    CHECK(mx_tokenizer_bos_id(t) == 128000 && mx_tokenizer_eos_id(t) == 128001);
    CHECK(mx_tokenizer_clean_up_spaces(t));
    CHECK(mx_tokenizer_vocab_size(t) == 128256);
    mx_tokenizer_destroy(t);
  }
}

int main(void) {
  test_malformed();
  test_bytelevel();
  test_spm();
  test_split_behaviors();
  test_normalized_added();
  const char *data = getenv("MX_TEST_DATA");
  if (data) {
    test_data_dirs(data);
  } else {
    mx_test_skip("MX_TEST_DATA unset: tests/data/tokenizer not checked");
  }
  const char *shared = getenv("MX_SHARED");
  char probe[1024];
  snprintf(probe, sizeof probe, "%s/models/stories260K/hf/tokenizer.json", shared ? shared : "");
  FILE *f = shared ? fopen(probe, "rb") : NULL;
  if (f) {
    fclose(f);
    test_shared(shared);
  } else {
    mx_test_skip("MX_SHARED (%s) absent: real-tokenizer checks not run", shared ? shared : "unset");
  }
  return mx_test_finish();
}
