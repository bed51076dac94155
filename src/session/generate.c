// The generation loop: prefill, then sample / stream text / decode until a finish condition.
// The text side (UTF-8 completion, stop-string hold-back) is a text stream (text_stream.h), the
// same one the server drives token by token.
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlxcel/grammar.h"
#include "mlxcel/text_stream.h"
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

static bool is_eos(const mx_model_config_t *cfg, int32_t id) {
  for (int32_t i = 0; i < cfg->n_eos && i < MX_MAX_EOS_IDS; i++)
    if (cfg->eos_token_ids[i] == id) return true;
  return false;
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
  if (opts->max_tokens <= 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "generate: max_tokens must be > 0, got %d",
                        opts->max_tokens);
  const mx_model_config_t *cfg = &s->model->config;
  mx_text_stream_opts_t to = {
      .stop = opts->stop,
      .n_stop = opts->n_stop,
      .mid_text = s->n_past > 0 || mx_text_stream_mid_text(tok, prompt, n_prompt)};
  mx_text_stream_t *ts = NULL;
  mx_status_t st = mx_text_stream_create(tok, &to, &ts);
  if (st) return st;
  mx_sampler_t *smp = NULL;
  st = mx_sampler_create(&opts->sampling, s->vocab, &smp);
  // The mask of each constrained step (ids past the tokenizer's stay off).
  uint32_t *allow = NULL;
  if (!st && opts->grammar) {
    allow = calloc(((size_t)s->vocab + 31) / 32, sizeof *allow);
    if (!allow) st = mx_error_set(MX_ERR_NOMEM, "generate: out of memory for the token mask");
  }
  if (st) {
    mx_sampler_destroy(smp);
    mx_text_stream_destroy(ts);
    return st;
  }

  stats->n_prompt = n_prompt;
  double t0 = now_seconds();
  if (opts->media && opts->positions)
    st = mx_session_prefill_mrope(s, prompt, opts->media, opts->positions, n_prompt);
  else
    st = opts->media ? mx_session_prefill_media(s, prompt, opts->media, n_prompt)
                     : mx_session_prefill(s, prompt, n_prompt, NULL);
  stats->prefill_seconds = now_seconds() - t0;
  if (!st && !s->has_logits)
    st = mx_error_set(MX_ERR_INVALID_ARG,
                      "generate: nothing to continue from (empty prompt and empty session)");

  double t_decode = 0.0;
  mx_finish_reason_t finish = MX_FINISH_LENGTH;
  bool finished = false;
  for (int32_t i = 0; !st && !finished; i++) {
    int32_t id;
    if (opts->grammar) {
      int32_t n_end = cfg->n_eos < MX_MAX_EOS_IDS ? cfg->n_eos : MX_MAX_EOS_IDS;
      if (mx_gmatch_mask(opts->grammar, cfg->eos_token_ids, n_end, allow) == 0) {
        st = mx_error_set(MX_ERR_RUNTIME,
                          "generate: no token of the vocabulary can continue the document");
        break;
      }
      id = mx_sampler_sample_masked(smp, s->logits, allow, s->tokens, (int32_t)s->n_past);
      if (!(allow[id >> 5] >> (id & 31) & 1u)) {  // every allowed logit was NaN or -inf
        id = 0;
        while (!(allow[id >> 5] >> (id & 31) & 1u)) id++;
      }
      if (is_eos(cfg, id)) {
        finish = MX_FINISH_EOS;
        break;
      }
      mx_gmatch_feed_token(opts->grammar, id);  // allowed, so accepted
    } else {
      id = mx_sampler_sample(smp, s->logits, s->tokens, (int32_t)s->n_past);
      if (!opts->ignore_eos && is_eos(cfg, id)) {
        finish = MX_FINISH_EOS;
        break;
      }
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
    if (opts->grammar && mx_gmatch_finished(opts->grammar)) {  // nothing but EOS could follow
      finish = MX_FINISH_EOS;
      last = true;
    }
    size_t emit = 0;
    bool stopped = false;
    const char *text = mx_text_stream_push(ts, id, last, &emit, &stopped);
    if (stopped) {
      finish = MX_FINISH_STOP;
      last = true;
    }
    bool go_on = fn ? fn(user, id, text, emit) : true;
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
  if (!st && finish == MX_FINISH_EOS) {
    size_t k = 0;
    const char *rest = mx_text_stream_finish(ts, &k);
    if (k > 0 && fn) fn(user, -1, rest, k);
  }
  stats->decode_seconds = t_decode;
  stats->finish = finish;
  mx_text_stream_destroy(ts);
  mx_sampler_destroy(smp);
  free(allow);
  return st;
}
