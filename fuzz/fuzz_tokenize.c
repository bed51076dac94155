// libFuzzer target: encode and decode arbitrary bytes with real tokenizers, loaded once:
// stories260K (SentencePiece BPE, byte fallback; models/), and when the shared suite is present
// ($MX_SHARED, else ../shared beside the checkout) llama2 (SentencePiece, 32K), llama3
// (byte-level BPE, no normalizer) and qwen3 (byte-level BPE, NFC). Input: byte 0 picks the
// tokenizer (bits 0-1) and options (bit 2 add_special, bit 3 parse_special, bit 4 skip_special);
// the rest is the text, and read as little-endian int32 ids, a decode input.
//
// Besides "no crash, leak or hang", the target checks properties that hold for any input and
// aborts (a finding) when one fails:
//  - encode succeeds exactly when the text is valid UTF-8 (RFC 3629: no overlong forms,
//    surrogates or code points above U+10FFFF), and every id is in [0, vocab);
//  - the ids decode, and the streaming decoder's pieces concatenate to the same text;
//  - llama3 (lossless byte-level, no normalizer), without special-token handling:
//    decode(encode(text)) == text.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/tokenizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef MX_SOURCE_DIR
#define MX_SOURCE_DIR "."
#endif

enum { kMaxTok = 4 };
static mx_tokenizer_t *g_tok[kMaxTok];
static bool g_lossless[kMaxTok];  // decode(encode(x)) == x without special handling
static int g_n;

static void load(const char *dir, bool lossless) {
  mx_tokenizer_t *t = NULL;
  if (mx_tokenizer_load(dir, &t) != MX_OK) {
    fprintf(stderr, "fuzz_tokenize: skipping %s: %s\n", dir, mx_error_message());
    return;
  }
  g_lossless[g_n] = lossless;
  g_tok[g_n++] = t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *shared = getenv("MX_SHARED");
  char path[4096];
  load(MX_SOURCE_DIR "/models/stories260K", false);
  static const char *const kShared[] = {"llama2", "llama3", "qwen3"};
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/tokenizers/%s", shared ? shared : MX_SOURCE_DIR "/../shared",
             kShared[i]);
    load(path, i == 1);
  }
  if (g_n == 0) {
    fprintf(stderr, "fuzz_tokenize: no tokenizer could be loaded\n");
    abort();
  }
  fprintf(stderr, "fuzz_tokenize: %d tokenizers\n", g_n);
  return 0;
}

static void fail(const char *what, const uint8_t *text, size_t len) {
  fprintf(stderr, "fuzz_tokenize failure: %s (%s); text of %zu bytes: '%.*s'\n", what,
          mx_error_message(), len, (int)(len > 200 ? 200 : len), (const char *)text);
  abort();
}

// RFC 3629 validity, written independently of the tokenizer's own check.
static bool utf8_ok(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    size_t k;
    uint32_t cp, min;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      k = 1, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      k = 2, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      k = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (n - i <= k) return false;  // truncated sequence
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += k + 1;
  }
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  int which = (data[0] & 3) % g_n;
  const mx_tokenizer_t *tok = g_tok[which];
  mx_encode_opts_t eo = {.add_special = (data[0] & 4) != 0, .parse_special = (data[0] & 8) != 0};
  bool skip = (data[0] & 16) != 0;
  const uint8_t *text = data + 1;
  size_t len = size - 1;
  int32_t vocab = mx_tokenizer_vocab_size(tok);

  int32_t *ids = NULL, n = 0;
  mx_status_t st = mx_tokenizer_encode(tok, (const char *)text, len, &eo, &ids, &n);
  bool valid = utf8_ok(text, len);
  if (valid && st != MX_OK) fail("encode failed on valid UTF-8", text, len);
  if (!valid && st != MX_ERR_INVALID_ARG) fail("encode accepted invalid UTF-8", text, len);
  if (st == MX_OK) {
    for (int32_t i = 0; i < n; i++) {
      if (ids[i] < 0 || ids[i] >= vocab) fail("encode produced an id out of range", text, len);
    }
    char *out = NULL;
    size_t out_len = 0;
    if (mx_tokenizer_decode(tok, ids, n, skip, &out, &out_len) != MX_OK)
      fail("decode of encoded ids failed", text, len);
    if (g_lossless[which] && !eo.add_special && !eo.parse_special &&
        (out_len != len || memcmp(out, text, len) != 0))
      fail("llama3 round trip changed the text", text, len);
    // The streaming decoder, fed one id at a time, yields the same text.
    mx_detok_stream_t sd;
    mx_detok_stream_init(&sd, tok, skip ? MX_DETOK_SKIP_SPECIAL : 0);
    size_t at = 0, k = 0;
    bool same = true;
    for (int32_t i = 0; i <= n && same; i++) {
      const char *piece =
          i < n ? mx_detok_stream_push(&sd, ids[i], &k) : mx_detok_stream_flush(&sd, &k);
      same = at + k <= out_len && memcmp(out + at, piece, k) == 0;
      at += k;
    }
    if (!same || at != out_len) fail("streaming decode differs from decode", text, len);
    free(out);
    free(ids);
  }

  // The bytes as ids (some out of range): decode must fail cleanly or succeed; streaming never
  // fails.
  int32_t m = (int32_t)(len / 4);
  if (m > 0) {
    int32_t *raw = malloc((size_t)m * sizeof *raw);
    if (!raw) return 0;
    for (int32_t i = 0; i < m; i++) {
      uint32_t v;
      memcpy(&v, text + 4 * i, 4);
      raw[i] = (int32_t)(v % ((uint32_t)vocab + 8u)) - 4;  // mostly valid, a few beyond each end
    }
    char *out = NULL;
    size_t out_len = 0;
    if (mx_tokenizer_decode(tok, raw, m, skip, &out, &out_len) == MX_OK) free(out);
    mx_detok_stream_t sd;
    mx_detok_stream_init(&sd, tok, MX_DETOK_MID_TEXT);
    size_t k = 0;
    for (int32_t i = 0; i < m; i++) (void)mx_detok_stream_push(&sd, raw[i], &k);
    (void)mx_detok_stream_flush(&sd, &k);
    free(raw);
  }
  return 0;
}
