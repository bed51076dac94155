// Text streams (text_stream.h): streaming detokenization plus stop-string hold-back.
//
// Text goes through the tokenizer's streaming decoder (complete UTF-8 only) into a hold-back
// buffer. Text that could still turn out to be the beginning of a stop string stays in the
// buffer until the next tokens decide it; everything before it is released. A stop string can
// therefore only begin inside the buffer, and the first match cuts the output there.
#include "mlxcel/text_stream.h"

#include <stdlib.h>
#include <string.h>

struct mx_text_stream {
  const mx_tokenizer_t *tok;  // borrowed; NULL = no text
  char **stop;                // [n_stop] owned copies
  size_t *stop_len;           // [n_stop]
  int32_t n_stop;
  bool over;   // a stop string matched, the last token was pushed, or finish was called
  char *hold;  // held-back text
  size_t n_hold, cap_hold;
  char *out;  // [cap_hold + 1] the released text, NUL-terminated
  mx_detok_stream_t ds;
};

bool mx_text_stream_mid_text(const mx_tokenizer_t *tok, const int32_t *prompt, int32_t n_prompt) {
  if (!tok || !prompt) return false;
  for (int32_t i = 0; i < n_prompt; i++)
    if (!mx_tokenizer_is_special(tok, prompt[i])) return true;
  return false;
}

void mx_text_stream_destroy(mx_text_stream_t *ts) {
  if (!ts) return;
  for (int32_t i = 0; i < ts->n_stop; i++) free(ts->stop[i]);
  free(ts->stop);
  free(ts->stop_len);
  free(ts->hold);
  free(ts->out);
  free(ts);
}

mx_status_t mx_text_stream_create(const mx_tokenizer_t *tok, const mx_text_stream_opts_t *opts,
                                  mx_text_stream_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "text stream: out is NULL");
  *out = NULL;
  mx_text_stream_opts_t none = {0};
  if (!opts) opts = &none;
  if (opts->n_stop < 0 || (opts->n_stop > 0 && !opts->stop))
    return mx_error_set(MX_ERR_INVALID_ARG, "generate: bad stop list (n_stop %d)", opts->n_stop);
  for (int32_t i = 0; i < opts->n_stop; i++)
    if (!opts->stop[i] || !opts->stop[i][0])
      return mx_error_set(MX_ERR_INVALID_ARG, "generate: stop string %d is empty", i);
  if (opts->n_stop > 0 && !tok)
    return mx_error_set(MX_ERR_INVALID_ARG, "generate: stop strings need a tokenizer");
  mx_text_stream_t *ts = calloc(1, sizeof *ts);
  if (!ts) return mx_error_set(MX_ERR_NOMEM, "text stream: out of memory");
  ts->tok = tok;
  size_t max_stop = 0;
  if (opts->n_stop > 0) {
    ts->stop = calloc((size_t)opts->n_stop, sizeof *ts->stop);
    ts->stop_len = calloc((size_t)opts->n_stop, sizeof *ts->stop_len);
    if (!ts->stop || !ts->stop_len) goto oom;
    for (int32_t i = 0; i < opts->n_stop; i++) {
      ts->stop_len[i] = strlen(opts->stop[i]);
      ts->stop[i] = malloc(ts->stop_len[i] + 1);
      if (!ts->stop[i]) goto oom;
      ts->n_stop = i + 1;
      memcpy(ts->stop[i], opts->stop[i], ts->stop_len[i] + 1);
      if (ts->stop_len[i] > max_stop) max_stop = ts->stop_len[i];
    }
  }
  // Held back: fewer bytes than the longest stop string, plus one push and one flush of text.
  ts->cap_hold = max_stop + 2 * sizeof ts->ds.out;
  ts->hold = malloc(ts->cap_hold);
  ts->out = malloc(ts->cap_hold + 1);
  if (!ts->hold || !ts->out) goto oom;
  ts->out[0] = '\0';
  if (tok)
    mx_detok_stream_init(&ts->ds, tok,
                         MX_DETOK_SKIP_SPECIAL | (opts->mid_text ? MX_DETOK_MID_TEXT : 0));
  *out = ts;
  return MX_OK;
oom:
  mx_text_stream_destroy(ts);
  return mx_error_set(MX_ERR_NOMEM, "text stream: out of memory");
}

// Earliest position where some stop string occurs in hold[0..n); n if none.
static size_t find_stop(const mx_text_stream_t *ts) {
  size_t best = ts->n_hold;
  for (int32_t i = 0; i < ts->n_stop; i++) {
    size_t L = ts->stop_len[i];
    if (L > ts->n_hold) continue;
    const char *m = memmem(ts->hold, ts->n_hold, ts->stop[i], L);
    if (m && (size_t)(m - ts->hold) < best) best = (size_t)(m - ts->hold);
  }
  return best;
}

// Earliest position j such that hold[j..n) is a proper prefix of some stop string (n if none):
// the text from j on must wait for the next token.
static size_t find_partial(const mx_text_stream_t *ts) {
  size_t best = ts->n_hold;
  for (int32_t i = 0; i < ts->n_stop; i++) {
    size_t L = ts->stop_len[i];
    size_t j0 = ts->n_hold >= L ? ts->n_hold - L + 1 : 0;
    for (size_t j = j0; j < best; j++)
      if (memcmp(ts->hold + j, ts->stop[i], ts->n_hold - j) == 0) {
        best = j;
        break;
      }
  }
  return best;
}

static void hold_append(mx_text_stream_t *ts, const char *t, size_t n) {
  // cap_hold covers the longest stop string plus one push and one flush (see create).
  if (n > ts->cap_hold - ts->n_hold) n = ts->cap_hold - ts->n_hold;
  memcpy(ts->hold + ts->n_hold, t, n);
  ts->n_hold += n;
}

// Moves the first n held bytes to `out` (NUL-terminated) and returns it.
static const char *release(mx_text_stream_t *ts, size_t n, size_t *len) {
  memcpy(ts->out, ts->hold, n);
  ts->out[n] = '\0';
  memmove(ts->hold, ts->hold + n, ts->n_hold - n);
  ts->n_hold -= n;
  *len = n;
  return ts->out;
}

const char *mx_text_stream_push(mx_text_stream_t *ts, int32_t id, bool last, size_t *len,
                                bool *stopped) {
  size_t dummy_len;
  bool dummy_stopped;
  if (!len) len = &dummy_len;
  if (!stopped) stopped = &dummy_stopped;
  *len = 0;
  *stopped = false;
  if (!ts || ts->over || !ts->tok) {
    if (ts && last) ts->over = true;
    if (ts) ts->out[0] = '\0';
    return ts ? ts->out : "";
  }
  size_t k = 0;
  const char *piece = mx_detok_stream_push(&ts->ds, id, &k);
  hold_append(ts, piece, k);
  if (last) {
    piece = mx_detok_stream_flush(&ts->ds, &k);
    hold_append(ts, piece, k);
  }
  size_t emit;
  size_t cut = find_stop(ts);
  if (cut < ts->n_hold) {
    emit = cut;
    *stopped = true;
    ts->over = true;
  } else {
    emit = last ? ts->n_hold : find_partial(ts);
    if (last) ts->over = true;
  }
  const char *r = release(ts, emit, len);
  if (ts->over) ts->n_hold = 0;  // what followed a stop string is never text
  return r;
}

const char *mx_text_stream_finish(mx_text_stream_t *ts, size_t *len) {
  size_t dummy_len;
  if (!len) len = &dummy_len;
  *len = 0;
  if (!ts) return "";
  if (ts->over || !ts->tok) {
    ts->over = true;
    ts->out[0] = '\0';
    return ts->out;
  }
  ts->over = true;
  size_t k = 0;
  const char *piece = mx_detok_stream_flush(&ts->ds, &k);
  hold_append(ts, piece, k);
  return release(ts, ts->n_hold, len);
}
