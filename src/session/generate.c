// The generation loop: prefill, then sample / stream text / decode until a finish condition.
//
// Text goes through the tokenizer's streaming decoder (complete UTF-8 only) into a hold-back
// buffer. Text that could still turn out to be the beginning of a stop string stays in the
// buffer until the next tokens decide it; everything before it goes to the callback. A stop
// string can therefore only begin inside the buffer, and the first match cuts the output there.
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlxcel/tokenizer.h"
#include "session/session_internal.h"

const char *mx_finish_reason_name(mx_finish_reason_t r) {
  switch (r) {
    case MX_FINISH_LENGTH:
      return "length";
    case MX_FINISH_EOS:
      return "eos";
    case MX_FINISH_STOP:
      return "stop";
    case MX_FINISH_CALLBACK:
      return "callback";
    case MX_FINISH_CONTEXT:
      return "context";
  }
  return "?";
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct stopper {
  const char *const *stop;
  size_t *stop_len;  // [n_stop]
  int32_t n_stop;
  char *hold;  // held-back text
  size_t n_hold, cap_hold;
  char *out;  // [cap_hold + 1] the text handed to the callback, NUL-terminated
} stopper_t;

// Earliest position where some stop string occurs in hold[0..n); n if none.
static size_t find_stop(const stopper_t *sp) {
  size_t best = sp->n_hold;
  for (int32_t i = 0; i < sp->n_stop; i++) {
    size_t L = sp->stop_len[i];
    if (L > sp->n_hold) continue;
    const char *m = memmem(sp->hold, sp->n_hold, sp->stop[i], L);
    if (m && (size_t)(m - sp->hold) < best) best = (size_t)(m - sp->hold);
  }
  return best;
}

// Earliest position j such that hold[j..n) is a proper prefix of some stop string (n if none):
// the text from j on must wait for the next token.
static size_t find_partial(const stopper_t *sp) {
  size_t best = sp->n_hold;
  for (int32_t i = 0; i < sp->n_stop; i++) {
    size_t L = sp->stop_len[i];
    size_t j0 = sp->n_hold >= L ? sp->n_hold - L + 1 : 0;
    for (size_t j = j0; j < best; j++)
      if (memcmp(sp->hold + j, sp->stop[i], sp->n_hold - j) == 0) {
        best = j;
        break;
      }
  }
  return best;
}

static void hold_append(stopper_t *sp, const char *t, size_t n) {
  // cap_hold covers the longest stop string plus the largest piece (see mx_generate).
  if (n > sp->cap_hold - sp->n_hold) n = sp->cap_hold - sp->n_hold;
  memcpy(sp->hold + sp->n_hold, t, n);
  sp->n_hold += n;
}

// Drops the first n bytes of the buffer (after the callback has seen them).
static void hold_consume(stopper_t *sp, size_t n) {
  memmove(sp->hold, sp->hold + n, sp->n_hold - n);
  sp->n_hold -= n;
}

static bool is_eos(const mx_model_config_t *cfg, int32_t id) {
  for (int32_t i = 0; i < cfg->n_eos && i < MX_MAX_EOS_IDS; i++)
    if (cfg->eos_token_ids[i] == id) return true;
  return false;
}

static mx_status_t check_opts(const mx_generate_opts_t *o, const mx_tokenizer_t *tok) {
  if (o->max_tokens <= 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "generate: max_tokens must be > 0, got %d",
                        o->max_tokens);
  if (o->n_stop < 0 || (o->n_stop > 0 && !o->stop))
    return mx_error_set(MX_ERR_INVALID_ARG, "generate: bad stop list (n_stop %d)", o->n_stop);
  for (int32_t i = 0; i < o->n_stop; i++)
    if (!o->stop[i] || !o->stop[i][0])
      return mx_error_set(MX_ERR_INVALID_ARG, "generate: stop string %d is empty", i);
  if (o->n_stop > 0 && !tok)
    return mx_error_set(MX_ERR_INVALID_ARG, "generate: stop strings need a tokenizer");
  return MX_OK;
}

mx_status_t mx_generate(mx_session_t *s, const mx_tokenizer_t *tok, const int32_t *prompt,
                        int32_t n_prompt, const mx_generate_opts_t *opts, mx_token_fn fn,
                        void *user, mx_generate_stats_t *stats) {
  mx_generate_stats_t local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  if (!s || !opts) return mx_error_set(MX_ERR_INVALID_ARG, "mx_generate: session or opts is NULL");
  if (n_prompt < 0 || (n_prompt > 0 && !prompt))
    return mx_error_set(MX_ERR_INVALID_ARG, "generate: bad prompt (%d ids)", n_prompt);
  mx_status_t st = check_opts(opts, tok);
  if (st) return st;
  const mx_model_config_t *cfg = &s->model->config;
  bool mid_text = s->n_past > 0;  // continuing earlier text?
  if (tok)
    for (int32_t i = 0; i < n_prompt && !mid_text; i++)
      if (!mx_tokenizer_is_special(tok, prompt[i])) mid_text = true;

  mx_sampler_t *smp = NULL;
  st = mx_sampler_create(&opts->sampling, s->vocab, &smp);
  if (st) return st;
  stopper_t sp = {.stop = opts->stop, .n_stop = opts->n_stop};
  size_t max_stop = 0;
  if (opts->n_stop > 0) {
    sp.stop_len = malloc((size_t)opts->n_stop * sizeof *sp.stop_len);
    if (!sp.stop_len) {
      mx_sampler_destroy(smp);
      return mx_error_set(MX_ERR_NOMEM, "generate: out of memory");
    }
    for (int32_t i = 0; i < opts->n_stop; i++) {
      sp.stop_len[i] = strlen(opts->stop[i]);
      if (sp.stop_len[i] > max_stop) max_stop = sp.stop_len[i];
    }
  }
  // Held back: fewer bytes than the longest stop string, plus one push or flush of text.
  mx_detok_stream_t ds;
  memset(&ds, 0, sizeof ds);
  sp.cap_hold = max_stop + 2 * sizeof ds.out;
  sp.hold = malloc(sp.cap_hold);
  sp.out = malloc(sp.cap_hold + 1);
  if (!sp.hold || !sp.out) {
    free(sp.hold);
    free(sp.out);
    free(sp.stop_len);
    mx_sampler_destroy(smp);
    return mx_error_set(MX_ERR_NOMEM, "generate: out of memory");
  }
  if (tok)
    mx_detok_stream_init(&ds, tok, MX_DETOK_SKIP_SPECIAL | (mid_text ? MX_DETOK_MID_TEXT : 0));

  stats->n_prompt = n_prompt;
  double t0 = now_seconds();
  st = mx_session_prefill(s, prompt, n_prompt, NULL);
  stats->prefill_seconds = now_seconds() - t0;
  if (!st && !s->has_logits)
    st = mx_error_set(MX_ERR_INVALID_ARG,
                      "generate: nothing to continue from (empty prompt and empty session)");

  double t_decode = 0.0;
  mx_finish_reason_t finish = MX_FINISH_LENGTH;
  bool finished = false;
  for (int32_t i = 0; !st && !finished; i++) {
    int32_t id = mx_sampler_sample(smp, s->logits, s->tokens, (int32_t)s->n_past);
    if (!opts->ignore_eos && is_eos(cfg, id)) {
      finish = MX_FINISH_EOS;
      break;
    }
    stats->n_generated++;
    // Is this the last token? Then everything held back goes out with it.
    bool last = false;
    if (i + 1 >= opts->max_tokens) {
      finish = MX_FINISH_LENGTH;
      last = true;
    } else if (s->n_past >= s->ctx) {
      finish = MX_FINISH_CONTEXT;
      last = true;
    }
    size_t emit = 0;
    if (tok) {
      size_t k = 0;
      const char *piece = mx_detok_stream_push(&ds, id, &k);
      hold_append(&sp, piece, k);
      if (last) {
        piece = mx_detok_stream_flush(&ds, &k);
        hold_append(&sp, piece, k);
      }
      size_t cut = find_stop(&sp);
      if (cut < sp.n_hold) {
        emit = cut;
        finish = MX_FINISH_STOP;
        last = true;
      } else {
        emit = last ? sp.n_hold : find_partial(&sp);
      }
    }
    memcpy(sp.out, sp.hold, emit);
    sp.out[emit] = '\0';
    hold_consume(&sp, emit);
    bool go_on = fn ? fn(user, id, sp.out, emit) : true;
    if (last) break;
    if (!go_on) {
      finish = MX_FINISH_CALLBACK;
      break;
    }
    double t1 = now_seconds();
    st = mx_session_decode(s, id);
    t_decode += now_seconds() - t1;
  }
  // An EOS ended the text: what was held back (a partial stop-string match, an unfinished UTF-8
  // character) is text after all; it goes out in one last call with id -1.
  if (!st && finish == MX_FINISH_EOS && tok) {
    size_t k = 0;
    const char *piece = mx_detok_stream_flush(&ds, &k);
    hold_append(&sp, piece, k);
    if (sp.n_hold > 0 && fn) {
      memcpy(sp.out, sp.hold, sp.n_hold);
      sp.out[sp.n_hold] = '\0';
      fn(user, -1, sp.out, sp.n_hold);
    }
  }
  stats->decode_seconds = t_decode;
  stats->finish = finish;
  free(sp.hold);
  free(sp.out);
  free(sp.stop_len);
  mx_sampler_destroy(smp);
  return st;
}
