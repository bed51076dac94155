// Speculative decoding (ADR 0020): the drafters (prompt lookup, a draft model's session) and the
// verification step that turns a draft into the tokens the model itself would have produced.
#include "session/spec.h"

#include <stdlib.h>
#include <string.h>

#include "mlxcel/tokenizer.h"
#include "session/session_internal.h"

mx_status_t mx_spec_check_draft(const mx_model_t *target, const mx_model_t *draft) {
  if (!target || !draft) return mx_error_set(MX_ERR_INVALID_ARG, "draft model: no model");
  const mx_tokenizer_t *a = target->tokenizer, *b = draft->tokenizer;
  if (!a || !b)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "draft model: both models need a tokenizer (tokenizer.json) to show that "
                        "their token ids mean the same text");
  int32_t na = mx_tokenizer_vocab_size(a), nb = mx_tokenizer_vocab_size(b);
  if (na != nb)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "draft model: its tokenizer has %d tokens, the model's %d: speculative "
                        "decoding needs the same tokenizer",
                        nb, na);
  for (int32_t id = 0; id < na; id++) {
    size_t la = 0, lb = 0;
    const char *pa = mx_tokenizer_id_to_piece(a, id, &la);
    const char *pb = mx_tokenizer_id_to_piece(b, id, &lb);
    if ((pa == NULL) != (pb == NULL) || la != lb || (la > 0 && memcmp(pa, pb, la) != 0))
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "draft model: token %d is '%.*s' in the model's tokenizer and '%.*s' in "
                          "the draft's: speculative decoding needs the same tokenizer",
                          id, (int)(la < 40 ? la : 40), pa ? pa : "", (int)(lb < 40 ? lb : 40),
                          pb ? pb : "");
  }
  return MX_OK;
}

mx_status_t mx_spec_create(const mx_spec_opts_t *o, mx_session_t *s, mx_spec_t *sp) {
  memset(sp, 0, sizeof *sp);
  sp->mode = o->mode;
  sp->k = o->draft_tokens ? o->draft_tokens : MX_SPEC_DEFAULT_TOKENS;
  sp->ngram_max = o->ngram_max ? o->ngram_max : MX_SPEC_DEFAULT_NGRAM;
  sp->draft = o->draft;
  if (o->mode != MX_SPEC_NGRAM && o->mode != MX_SPEC_DRAFT)
    return mx_error_set(MX_ERR_INVALID_ARG, "speculative decoding: unknown mode %d", (int)o->mode);
  if (sp->k < 1 || sp->k > MX_SPEC_MAX_TOKENS)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "speculative decoding: draft_tokens must be in 1..%d (0 = %d), got %d",
                        MX_SPEC_MAX_TOKENS, MX_SPEC_DEFAULT_TOKENS, sp->k);
  if (sp->ngram_max < 1 || sp->ngram_max > MX_SPEC_MAX_TOKENS)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "speculative decoding: ngram_max must be in 1..%d (0 = %d), got %d",
                        MX_SPEC_MAX_TOKENS, MX_SPEC_DEFAULT_NGRAM, sp->ngram_max);
  if (!(s->backend->caps & MX_CAP_PREFILL_ALL_LOGITS))
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "speculative decoding: backend %s cannot return the logits of every "
                        "position",
                        s->backend->name);
  if (o->mode == MX_SPEC_DRAFT) {
    if (!o->draft)
      return mx_error_set(MX_ERR_INVALID_ARG, "speculative decoding: no draft model session");
    mx_status_t st = mx_spec_check_draft(s->model, o->draft->model);
    if (st) return st;
  }
  // One verification is one prefill call: k + 1 tokens padded to a power of two (the graph
  // runner's prefill lengths, ADR 0002), within the prefill chunk.
  if (sp->k + 1 > s->chunk) sp->k = s->chunk - 1;
  sp->sched = mx_spec_sched_init(sp->k);
  sp->cap = 1;
  while (sp->cap < sp->k + 1) sp->cap *= 2;
  sp->verify = malloc((size_t)sp->cap * sizeof *sp->verify);
  sp->logits = malloc((size_t)sp->cap * (size_t)s->vocab * sizeof *sp->logits);
  if (!sp->verify || !sp->logits) {
    mx_spec_destroy(sp);
    return mx_error_set(MX_ERR_NOMEM, "speculative decoding: out of memory for %d drafts", sp->k);
  }
  return MX_OK;
}

void mx_spec_destroy(mx_spec_t *sp) {
  free(sp->verify);
  free(sp->logits);
  sp->verify = NULL;
  sp->logits = NULL;
}

// Token i of the sequence ctx[0..n) followed by `last`.
static inline int32_t at(const int32_t *ctx, int32_t n, int32_t last, int32_t i) {
  return i < n ? ctx[i] : last;
}

int32_t mx_spec_ngram(const int32_t *ctx, int32_t n, int32_t last, int32_t ngram_max, int32_t k,
                      int32_t *out) {
  const int32_t len = n + 1;  // ctx then last
  for (int32_t g = ngram_max < len - 1 ? ngram_max : len - 1; g >= 1; g--) {
    // An earlier occurrence of the last g tokens ends at e < len - 1 (the suffix itself never
    // matches). The latest one followed by k tokens; else the earliest, which has the most:
    // in a loop of period P the latest is followed by only P tokens, an older one by the loop's
    // next turns.
    int32_t best = -1;
    for (int32_t e = len - 2; e >= g - 1; e--) {
      int32_t j = 0;
      while (j < g && at(ctx, n, last, e - j) == at(ctx, n, last, len - 1 - j)) j++;
      if (j < g) continue;
      best = e;
      if (len - 1 - e >= k) break;
    }
    if (best < 0) continue;
    int32_t m = 0;
    for (int32_t i = best + 1; i < len && m < k; i++) out[m++] = at(ctx, n, last, i);
    return m;
  }
  return 0;
}

// The draft model's greedy continuation of the target's context (its tokens then `t`): its
// session is first rewound to the prefix it shares with that context, fed the rest, then runs
// k - 1 decode steps. Tokens outside the target's vocabulary end the draft.
static mx_status_t draft_model(mx_spec_t *sp, const mx_session_t *s, int32_t t, int32_t k,
                               int32_t *out, int32_t *n_out) {
  mx_session_t *d = sp->draft;
  const int32_t *ctx = s->tokens;
  const int64_t n = s->n_past;
  *n_out = 0;
  if (d->ctx < n + k) k = (int32_t)(d->ctx - n);  // the draft's capacity ends its drafts
  if (k <= 0) return MX_OK;
  int64_t c = 0;
  while (c < n && c < d->n_past && d->tokens[c] == ctx[c]) c++;
  mx_status_t st = c < d->n_past ? mx_session_rewind(d, c) : MX_OK;
  if (!st && c < n) st = mx_session_prefill(d, ctx + c, (int32_t)(n - c), NULL);
  if (!st) st = mx_session_decode(d, t);
  for (int32_t i = 0; !st && i < k; i++) {
    int32_t id = mx_sampler_argmax(d->logits, d->vocab);
    if (id >= s->vocab) break;
    out[(*n_out)++] = id;
    if (i + 1 < k) st = mx_session_decode(d, id);
  }
  return st ? mx_error_prefix(st, "draft model") : MX_OK;
}

mx_status_t mx_spec_step(mx_spec_t *sp, mx_session_t *s, mx_sampler_t *smp, int32_t t, int32_t *out,
                         int32_t *n_out, int32_t *n_drafted) {
  const int64_t base = s->n_past;
  *n_out = 0;
  *n_drafted = 0;
  // Drafts that fit: t and the drafts go into the cache.
  int32_t k = sp->mode == MX_SPEC_DRAFT ? mx_spec_sched_take(&sp->sched) : sp->k;
  if (base + 1 + k > s->ctx) k = (int32_t)(s->ctx - base - 1);
  int32_t m = 0;
  mx_status_t st = MX_OK;
  if (k > 0 && sp->mode == MX_SPEC_NGRAM)
    m = mx_spec_ngram(s->tokens, (int32_t)base, t, sp->ngram_max, k, sp->verify + 1);
  else if (k > 0)
    st = draft_model(sp, s, t, k, sp->verify + 1, &m);
  if (st) return st;
  if (m == 0) {  // nothing to verify: a plain decode step
    if ((st = mx_session_decode(s, t))) return st;
    out[(*n_out)++] = mx_sampler_sample(smp, s->logits, s->tokens, (int32_t)s->n_past);
    return MX_OK;
  }
  // One call: t and the m drafts, the logits of all m + 1 positions. Row i is the distribution
  // of the token after verify[i], judged with the history up to it (the penalties' window).
  // A length that is not a power of two would run as several calls (the binary decomposition of
  // ADR 0002), each reading every weight: it is padded with copies of the last draft where the
  // chunk and the capacity allow, rows that see only what comes before them and are rewound.
  sp->verify[0] = t;
  int32_t T = 1;
  while (T < m + 1) T *= 2;
  if (T > s->chunk || T > sp->cap || base + T > s->ctx) T = m + 1;
  for (int32_t i = m + 1; i < T; i++) sp->verify[i] = sp->verify[m];
  if ((st = mx_session_prefill(s, sp->verify, T, sp->logits))) return st;
  *n_drafted = m;
  *n_out = mx_spec_accept(smp, sp->logits, s->vocab, s->tokens, (int32_t)(base + 1), sp->verify + 1,
                          m, out);
  if (sp->mode == MX_SPEC_DRAFT) mx_spec_sched_update(&sp->sched, m, *n_out - 1);
  // Keep t and the accepted drafts (all but the last token out, the next step's t).
  return mx_session_rewind(s, base + *n_out);
}

int32_t mx_spec_sched_take(mx_spec_sched_t *sc) {
  if (sc->pause > 0) {
    sc->pause--;
    return 0;
  }
  return sc->k;
}

void mx_spec_sched_update(mx_spec_sched_t *sc, int32_t m, int32_t accepted) {
  if (m < 1) return;
  if (accepted >= m) {
    sc->k = sc->k + 2 < sc->k_max ? sc->k + 2 : sc->k_max;
    sc->backoff = 0;
  } else if (sc->k > 1) {
    sc->k--;
  } else {
    sc->backoff = sc->backoff ? 2 * sc->backoff : 1;
    if (sc->backoff > MX_SPEC_MAX_PAUSE) sc->backoff = MX_SPEC_MAX_PAUSE;
    sc->pause = sc->backoff;
  }
}

int32_t mx_spec_accept(mx_sampler_t *smp, const float *logits, int32_t vocab,
                       const int32_t *history, int32_t n_history, const int32_t *drafts, int32_t m,
                       int32_t *out) {
  const size_t V = (size_t)vocab;
  int32_t n = 0, j = 0;
  for (; j < m; j++) {
    bool ok = false;
    out[n++] =
        mx_sampler_spec_accept(smp, logits + (size_t)j * V, history, n_history + j, drafts[j], &ok);
    if (!ok) break;
  }
  // Every draft accepted: the last row gives one more token.
  if (j == m) out[n++] = mx_sampler_sample(smp, logits + (size_t)m * V, history, n_history + m);
  return n;
}
