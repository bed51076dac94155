// libFuzzer target: load arbitrary bytes as tokenizer.json; when they load, encode fixed strings
// and the input itself, decode the results (whole and streamed) and every id near the vocabulary
// edges. Any crash, leak or sanitizer report is a bug (malformed input must give MX_ERR_*).
// Bytes after the first NUL, if any, are tokenizer_config.json (so a plain tokenizer.json file is
// a valid seed).
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const mx_tokenizer_t *tok, const char *text, size_t len) {
  static const mx_encode_opts_t kOpts[2] = {{.add_special = true, .parse_special = true},
                                            {.add_special = false, .parse_special = false}};
  for (int o = 0; o < 2; o++) {
    int32_t *ids = NULL, n = 0;
    if (mx_tokenizer_encode(tok, text, len, &kOpts[o], &ids, &n) != MX_OK) continue;
    char *out = NULL;
    size_t out_len = 0;
    if (mx_tokenizer_decode(tok, ids, n, o == 0, &out, &out_len) == MX_OK) free(out);
    mx_detok_stream_t st;
    mx_detok_stream_init(&st, tok, o == 0 ? MX_DETOK_SKIP_SPECIAL : MX_DETOK_MID_TEXT);
    size_t k = 0;
    for (int32_t i = 0; i < n; i++) (void)mx_detok_stream_push(&st, ids[i], &k);
    (void)mx_detok_stream_flush(&st, &k);
    free(ids);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *json = (const char *)data;
  size_t json_len = size, cfg_len = 0;
  const char *cfg = NULL;
  const char *nul = size ? memchr(json, '\0', size) : NULL;
  if (nul) {
    cfg = nul + 1;
    cfg_len = size - (size_t)(cfg - json);
    json_len = (size_t)(nul - json);
  }
  mx_tokenizer_t *tok = NULL;
  if (mx_tokenizer_load_json(json, json_len, cfg, cfg_len, &tok) != MX_OK) return 0;
  static const char *const kTexts[] = {
      "",
      "Hello world",
      "  leading and trailing  ",
      "\n\n \t",
      "3.14159 1,000,000",
      "caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\xA6\x99",
      "<s>[INST] Hi [/INST]</s><|im_start|>user\n<unk>",
      "e\xCC\x81 \xEF\xAC\x81"};
  for (size_t i = 0; i < sizeof kTexts / sizeof kTexts[0]; i++) {
    roundtrip(tok, kTexts[i], strlen(kTexts[i]));
  }
  roundtrip(tok, (const char *)data, size);  // usually invalid UTF-8: must be a clean error
  int32_t v = mx_tokenizer_vocab_size(tok);
  int32_t probe[] = {0, 1, v / 2, v - 1, v, -1};
  char *out = NULL;
  size_t out_len = 0;
  if (mx_tokenizer_decode(tok, probe, 4, false, &out, &out_len) == MX_OK) free(out);
  for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
    (void)mx_tokenizer_id_to_piece(tok, probe[i], &out_len);
    (void)mx_tokenizer_is_special(tok, probe[i]);
  }
  (void)mx_tokenizer_token_to_id(tok, json, json_len < 16 ? json_len : 16);
  mx_tokenizer_destroy(tok);
  return 0;
}
