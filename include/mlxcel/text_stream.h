// mlxcel-xla text streams: the text side of generation, one generated token at a time.
//
// A text stream turns generated token ids into the text a client may see now: complete UTF-8
// only (the tokenizer's streaming decoder), with stop strings cut out. Text that could still
// turn out to be the beginning of a stop string is held back until the next tokens decide it.
// mx_generate (session.h) runs one stream inside its blocking loop; the server runs one per
// request and pushes a token whenever its scheduler samples one.
//
// Ownership: a stream borrows the tokenizer and copies the stop strings. Returned text points
// into the stream and stays valid until the next push/finish/destroy. Push and finish never
// allocate (everything is sized at create time).
//
// Example:
//
//   mx_text_stream_opts_t o = {.stop = stops, .n_stop = 1,
//                              .mid_text = mx_text_stream_mid_text(tok, prompt, n_prompt)};
//   mx_text_stream_t *ts = NULL;
//   if (mx_text_stream_create(tok, &o, &ts) != MX_OK) { ... }
//   for (each sampled id that is not EOS) {
//     bool last = (no token follows: max_tokens reached, context full), stopped = false;
//     size_t n = 0;
//     const char *text = mx_text_stream_push(ts, id, last, &n, &stopped);
//     send(text, n);
//     if (last || stopped) break;
//   }
//   (on EOS: send(mx_text_stream_finish(ts, &n), n))
//   mx_text_stream_destroy(ts);
#ifndef MLXCEL_TEXT_STREAM_H
#define MLXCEL_TEXT_STREAM_H

#include "mlxcel/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mx_text_stream mx_text_stream_t;

typedef struct mx_text_stream_opts {
  const char *const *stop;  // stop strings (copied; none may be empty); may be NULL
  int32_t n_stop;
  bool mid_text;  // the text continues earlier text: no start-of-text handling (see tokenizer.h
                  // MX_DETOK_MID_TEXT); mx_text_stream_mid_text() says so for a prompt
} mx_text_stream_opts_t;

// True when generated text continues the prompt's text (the prompt holds a non-special token),
// false when it starts a text (only special tokens, e.g. a lone BOS) or tok is NULL.
bool mx_text_stream_mid_text(const mx_tokenizer_t *tok, const int32_t *prompt, int32_t n_prompt);

// tok may be NULL: the stream then yields no text (and stop strings are an error). Errors: an
// empty stop string, n_stop < 0, out of memory.
mx_status_t mx_text_stream_create(const mx_tokenizer_t *tok, const mx_text_stream_opts_t *opts,
                                  mx_text_stream_t **out);
void mx_text_stream_destroy(mx_text_stream_t *ts);  // accepts NULL

// Feeds one generated token. last = no token follows (max_tokens reached, context full):
// everything held back is released. Returns the text that is now final (*len bytes,
// NUL-terminated; possibly empty). *stopped is set when a stop string matched: the returned text
// ends right before it and the stream is over (further pushes return nothing).
const char *mx_text_stream_push(mx_text_stream_t *ts, int32_t id, bool last, size_t *len,
                                bool *stopped);

// The text ends without another token (EOS, or the caller stops): returns what was held back (a
// partial stop-string match, an unfinished UTF-8 character as U+FFFD). The stream is then over.
const char *mx_text_stream_finish(mx_text_stream_t *ts, size_t *len);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_TEXT_STREAM_H
