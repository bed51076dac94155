// mlxcel-xla tokenizer: Hugging Face `tokenizer.json` (+ `tokenizer_config.json`).
//
// Supported pipeline pieces (anything else is MX_ERR_UNSUPPORTED at load, naming the field):
//   normalizers     NFC/NFD/NFKC/NFKD, Lowercase, Prepend, Replace (string or regex), Strip,
//                   Sequence
//   pre-tokenizers  Split (regex or string; Isolated/Removed/MergedWithPrevious/MergedWithNext/
//                   Contiguous; invert), ByteLevel (GPT-2 bytes-to-unicode, optional GPT-2
//                   regex, add_prefix_space), Metaspace (prepend_scheme first/always/never,
//                   split), Digits, WhitespaceSplit, Sequence
//   model           BPE: merges as "a b" strings or ["a","b"] arrays, ignore_merges,
//                   byte_fallback (<0xNN> tokens), unk_token + fuse_unk
//   post-processors TemplateProcessing (single), ByteLevel, RobertaProcessing, BertProcessing,
//                   Sequence
//   decoders        ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence
//   added tokens    special or not; lstrip / rstrip / single_word / normalized flags
// Split regexes are Oniguruma syntax in tokenizer.json; they run on PCRE2 (UTF + UCP) after a
// small translation (`\s`/`\S` become the Unicode White_Space set, as in Oniguruma).
//
// Ownership: an mx_tokenizer_t owns everything it hands out as `const` (pieces, template);
// those pointers stay valid until mx_tokenizer_destroy(). Arrays and strings returned through
// `**out` parameters are heap blocks owned by the caller (free()). A loaded tokenizer is
// immutable: encode/decode may run concurrently from several threads on one tokenizer.
//
// Example:
//
//   mx_tokenizer_t *tok = NULL;
//   if (mx_tokenizer_load("models/stories260K", &tok) != MX_OK) {
//     fprintf(stderr, "%s\n", mx_error_message());
//     return 1;
//   }
//   mx_encode_opts_t eo = {.add_special = true, .parse_special = true};
//   int32_t *ids = NULL, n = 0;
//   if (mx_tokenizer_encode(tok, "Once upon a time", 16, &eo, &ids, &n) == MX_OK) {
//     // ids = [1, 403, 407, 261, 378]  (BOS first: the post-processor says so)
//     mx_detok_stream_t st;
//     mx_detok_stream_init(&st, tok, MX_DETOK_SKIP_SPECIAL);
//     for (int32_t i = 0; i < n; i++) {
//       size_t k = 0;
//       const char *piece = mx_detok_stream_push(&st, ids[i], &k);  // complete UTF-8 only
//       fwrite(piece, 1, k, stdout);
//     }
//     size_t k = 0;
//     const char *rest = mx_detok_stream_flush(&st, &k);  // "\xEF\xBF\xBD" per dangling char
//     fwrite(rest, 1, k, stdout);
//     free(ids);
//   }
//   mx_tokenizer_destroy(tok);
#ifndef MLXCEL_TOKENIZER_H
#define MLXCEL_TOKENIZER_H

#include "mlxcel/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mx_tokenizer mx_tokenizer_t;

// Reads DIR/tokenizer.json (required) and DIR/tokenizer_config.json (optional). Errors name
// the file and the offending field. On failure *out is NULL.
mx_status_t mx_tokenizer_load(const char *dir, mx_tokenizer_t **out);

// Same from memory (buffers need no NUL terminator and are not retained). config_json may be
// NULL (config_len ignored then).
mx_status_t mx_tokenizer_load_json(const char *tokenizer_json, size_t len, const char *config_json,
                                   size_t config_len, mx_tokenizer_t **out);

void mx_tokenizer_destroy(mx_tokenizer_t *tok);  // accepts NULL

// A byte range [start, end) of a text.
typedef struct mx_text_range {
  size_t start, end;
} mx_text_range_t;

typedef struct mx_encode_opts {
  // Apply the post-processor (adds BOS/CLS/... as tokenizer.json's post_processor says;
  // Hugging Face's add_special_tokens=True).
  bool add_special;
  // Match *special* added tokens spelled in the text (`<|im_start|>` → one id). When false they
  // are encoded as plain text (split_special_tokens=True). Non-special added tokens are always
  // matched, as in Hugging Face.
  bool parse_special;
  // Byte ranges of the text where special tokens are never matched, even with parse_special:
  // text from an untrusted source inside trusted markup (chat message content in a rendered
  // template), encoded as split_special_tokens=True would encode it, in one pass with the rest.
  // Sorted and disjoint; NULL when n_plain is 0. With ranges given, special tokens that are
  // matched in normalized text ("normalized": true, rare) are not matched anywhere.
  const mx_text_range_t *plain;
  int32_t n_plain;
} mx_encode_opts_t;

// Encodes `len` bytes of UTF-8 `text` (need not be NUL-terminated; invalid UTF-8 is
// MX_ERR_INVALID_ARG). opts NULL means {add_special = true, parse_special = true}.
// *ids is a heap array the caller frees (NULL when *n == 0).
mx_status_t mx_tokenizer_encode(const mx_tokenizer_t *tok, const char *text, size_t len,
                                const mx_encode_opts_t *opts, int32_t **ids, int32_t *n);

// Decodes ids with the tokenizer.json decoder (Hugging Face `Tokenizer.decode`, without
// transformers' clean_up_tokenization). Ids with no token are MX_ERR_INVALID_ARG.
// *text is a NUL-terminated heap string the caller frees; *len excludes the NUL.
mx_status_t mx_tokenizer_decode(const mx_tokenizer_t *tok, const int32_t *ids, int32_t n,
                                bool skip_special, char **text, size_t *len);

// ---- Streaming decode: one id at a time, complete UTF-8 only, no allocation. ----
enum {
  MX_DETOK_SKIP_SPECIAL = 1,  // special tokens produce no text
  MX_DETOK_MID_TEXT = 2,      // the stream continues earlier text: no start-of-text handling
                              // (SentencePiece's leading-space strip, Metaspace's first ▁)
};

// Holds back up to 3 bytes of an unfinished UTF-8 character across pushes. The state is plain
// data (copyable, no destroy); `out` is the buffer the returned pointers point into.
typedef struct mx_detok_stream {
  const mx_tokenizer_t *tok;
  int flags;
  int32_t n_tokens;    // tokens that reached the decoder (skipped specials do not count)
  int32_t strip_left;  // leading strip characters still to remove (SentencePiece's space)
  uint8_t pending[4];  // bytes of an incomplete UTF-8 character
  int32_t n_pending;
  char out[1024];  // the last push/flush's text (real pieces are at most 256 bytes)
} mx_detok_stream_t;

void mx_detok_stream_init(mx_detok_stream_t *st, const mx_tokenizer_t *tok, int flags);
// Feeds one id; returns the text it completes (into st->out, *len bytes, NUL-terminated),
// possibly empty. An id with no token or an over-long piece yields U+FFFD. Never fails.
const char *mx_detok_stream_push(mx_detok_stream_t *st, int32_t id, size_t *len);
// Ends the stream: any held-back partial character becomes U+FFFD. The state is reset to the
// start of a new text.
const char *mx_detok_stream_flush(mx_detok_stream_t *st, size_t *len);

// The bytes token `id` adds in the middle of a text (its decoder output alone, as a stream
// past its start gives it: no leading-space strip, an incomplete UTF-8 character left as is),
// copied into buf; returns their count, or -1 for an id without a token or more than cap bytes.
// Constrained decoding (grammar.h) matches these bytes.
int32_t mx_tokenizer_token_bytes(const mx_tokenizer_t *tok, int32_t id, char *buf, size_t cap);

// ---- Vocabulary and configuration ----
// One past the largest id (model vocabulary and added tokens); the logits width a model needs.
int32_t mx_tokenizer_vocab_size(const mx_tokenizer_t *tok);
int32_t mx_tokenizer_bos_id(const mx_tokenizer_t *tok);  // -1 if none
int32_t mx_tokenizer_eos_id(const mx_tokenizer_t *tok);  // -1 if none
int32_t mx_tokenizer_pad_id(const mx_tokenizer_t *tok);  // -1 if none
// Id of an exact token string (added tokens first, then the model vocabulary); -1 if none.
int32_t mx_tokenizer_token_to_id(const mx_tokenizer_t *tok, const char *piece, size_t len);
// The raw vocabulary string of an id (byte-level `Ġ`, SentencePiece `▁`, `<0x0A>`), owned by
// the tokenizer; NULL if no token has this id. *len may be NULL.
const char *mx_tokenizer_id_to_piece(const mx_tokenizer_t *tok, int32_t id, size_t *len);
bool mx_tokenizer_is_special(const mx_tokenizer_t *tok, int32_t id);
// tokenizer_config.json fields (defaults when absent: NULL / false / false).
const char *mx_tokenizer_chat_template(const mx_tokenizer_t *tok);  // NULL if none
bool mx_tokenizer_add_bos_token(const mx_tokenizer_t *tok);         // config's add_bos_token
bool mx_tokenizer_clean_up_spaces(const mx_tokenizer_t *tok);       // clean_up_tokenization_spaces

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_TOKENIZER_H
