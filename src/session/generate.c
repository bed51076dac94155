// The generation loop: prefill, then sample / stream text / decode until a finish condition.
// The text side (UTF-8 completion, stop-string hold-back) is a text stream (text_stream.h), the
// same one the server drives token by token.
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlxcel/grammar.h"
#include "mlxcel/text_stream.h"
#include "session/session_internal.h"
#include "session/spec.h"

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

// One generation's loop state: what each produced token goes through (emit).
typedef struct gen {
  mx_session_t *s;
  const mx_generate_opts_t *opts;
  mx_text_stream_t *ts;
  mx_token_fn fn;
  void *user;
  mx_generate_stats_t *stats;
  int64_t n_start;  // tokens in the session when the first token was sampled
  mx_finish_reason_t finish;
} gen_t;

// Takes one produced token: EOS ends the text, otherwise it is counted and streamed, and the
// stop rules decide whether it is the last one. True when generation ends with it.
static bool emit(gen_t *g, int32_t id) {
  const mx_generate_opts_t *opts = g->opts;
  if ((opts->grammar || !opts->ignore_eos) && is_eos(&g->s->model->config, id)) {
    g->finish = MX_FINISH_EOS;
    return true;
  }
  if (opts->grammar) mx_gmatch_feed_token(opts->grammar, id);  // allowed, so accepted
  int32_t i = g->stats->n_generated++;
  // Is this the last token? Then everything held back goes out with it. The context is full
  // when the tokens before this one fill it (plain decoding holds them all in the session).
  bool last = false;
  if (i + 1 >= opts->max_tokens) {
    g->finish = MX_FINISH_LENGTH;
    last = true;
  } else if (g->n_start + i >= g->s->ctx) {
    g->finish = MX_FINISH_CONTEXT;
    last = true;
  }
  if (opts->grammar && mx_gmatch_finished(opts->grammar)) {  // nothing but EOS could follow
    g->finish = MX_FINISH_EOS;
    last = true;
  }
  size_t n = 0;
  bool stopped = false;
  const char *text = mx_text_stream_push(g->ts, id, last, &n, &stopped);
  if (stopped) {
    g->finish = MX_FINISH_STOP;
    last = true;
  }
  bool go_on = g->fn ? g->fn(g->user, id, text, n) : true;
  if (!last && !go_on) {
    g->finish = MX_FINISH_CALLBACK;
    last = true;
  }
  return last;
}

// The next token from the logits of the last step (the grammar's mask applied).
static mx_status_t pick(gen_t *g, mx_sampler_t *smp, uint32_t *allow, int32_t *id) {
  mx_session_t *s = g->s;
  const mx_model_config_t *cfg = &s->model->config;
  if (!g->opts->grammar) {
    *id = mx_sampler_sample(smp, s->logits, s->tokens, (int32_t)s->n_past);
    return MX_OK;
  }
  int32_t n_end = cfg->n_eos < MX_MAX_EOS_IDS ? cfg->n_eos : MX_MAX_EOS_IDS;
  if (mx_gmatch_mask(g->opts->grammar, cfg->eos_token_ids, n_end, allow) == 0)
    return mx_error_set(MX_ERR_RUNTIME,
                        "generate: no token of the vocabulary can continue the document");
  int32_t v = mx_sampler_sample_masked(smp, s->logits, allow, s->tokens, (int32_t)s->n_past);
  if (!(allow[v >> 5] >> (v & 31) & 1u)) {  // every allowed logit was NaN or -inf
    v = 0;
    while (!(allow[v >> 5] >> (v & 31) & 1u)) v++;
  }
  *id = v;
  return MX_OK;
}

// Speculative decoding after the first token t: each step yields one or more tokens, emitted in
// order until one ends the text. The session then holds what plain decoding would have fed it:
// every token before the last one emitted (and that one too after an EOS).
static mx_status_t run_spec(gen_t *g, mx_spec_t *sp, mx_sampler_t *smp, int32_t t,
                            double *t_decode) {
  mx_session_t *s = g->s;
  int32_t out[MX_SPEC_MAX_TOKENS + 1];
  mx_status_t st = MX_OK;
  bool done = false;
  while (!st && !done) {
    int32_t n = 0, drafted = 0;
    double t1 = now_seconds();
    st = mx_spec_step(sp, s, smp, t, out, &n, &drafted);
    *t_decode += now_seconds() - t1;
    if (st) break;
    g->stats->spec_steps++;
    g->stats->spec_drafted += drafted;
    g->stats->spec_accepted += n - 1;
    for (int32_t i = 0; i < n && !done; i++) done = emit(g, out[i]);
    t = out[n - 1];
  }
  int64_t fed = g->n_start + g->stats->n_generated - (g->finish == MX_FINISH_EOS ? 0 : 1);
  if (!st && s->n_past > fed) st = mx_session_rewind(s, fed);
  return st;
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
  const bool spec = opts->spec.mode != MX_SPEC_OFF;
  if (spec && opts->grammar)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "generate: speculative decoding does not combine with a grammar");
  // Text after an M-RoPE image runs through @prefill_media, which has no all-logits form.
  if (spec && (opts->positions || mx_session_mrope_shifted(s)))
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "generate: speculative decoding does not run after an M-RoPE image yet");
  mx_spec_t sp;
  memset(&sp, 0, sizeof sp);
  mx_status_t st = spec ? mx_spec_create(&opts->spec, s, &sp) : MX_OK;
  if (st) {
    mx_spec_destroy(&sp);
    return st;
  }
  mx_text_stream_opts_t to = {
      .stop = opts->stop,
      .n_stop = opts->n_stop,
      .mid_text = s->n_past > 0 || mx_text_stream_mid_text(tok, prompt, n_prompt)};
  mx_text_stream_t *ts = NULL;
  st = mx_text_stream_create(tok, &to, &ts);
  mx_sampler_t *smp = NULL;
  if (!st) st = mx_sampler_create(&opts->sampling, s->vocab, &smp);
  // The mask of each constrained step (ids past the tokenizer's stay off).
  uint32_t *allow = NULL;
  if (!st && opts->grammar) {
    allow = calloc(((size_t)s->vocab + 31) / 32, sizeof *allow);
    if (!allow) st = mx_error_set(MX_ERR_NOMEM, "generate: out of memory for the token mask");
  }
  if (st) {
    mx_sampler_destroy(smp);
    mx_text_stream_destroy(ts);
    mx_spec_destroy(&sp);
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

  gen_t g = {.s = s,
             .opts = opts,
             .ts = ts,
             .fn = fn,
             .user = user,
             .stats = stats,
             .n_start = s->n_past,
             .finish = MX_FINISH_LENGTH};
  double t_decode = 0.0;
  int32_t id = 0;
  if (!st) st = pick(&g, smp, allow, &id);
  bool done = st || emit(&g, id);
  if (spec && !done) {
    st = run_spec(&g, &sp, smp, id, &t_decode);
  } else {
    while (!done) {
      double t1 = now_seconds();
      st = mx_session_decode(s, id);
      t_decode += now_seconds() - t1;
      if (!st) stats->spec_steps++;
      if (!st) st = pick(&g, smp, allow, &id);
      done = st || emit(&g, id);
    }
  }
  // An EOS ended the text: what was held back (a partial stop-string match, an unfinished UTF-8
  // character) is text after all; it goes out in one last call with id -1.
  if (!st && g.finish == MX_FINISH_EOS) {
    size_t k = 0;
    const char *rest = mx_text_stream_finish(ts, &k);
    if (k > 0 && fn) fn(user, -1, rest, k);
  }
  stats->decode_seconds = t_decode;
  stats->finish = g.finish;
  mx_text_stream_destroy(ts);
  mx_sampler_destroy(smp);
  mx_spec_destroy(&sp);
  free(allow);
  return st;
}
