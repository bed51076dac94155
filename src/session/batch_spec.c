// Speculative decoding of batch slots (batch.h, ADR 0024): prompt lookup or a drafter's draft
// model, and the verification of one slot's drafts in one all-logits call, judged by the acceptance
// the session's steps use (spec.c), so that a slot's tokens follow the same rule and the same
// random draws as mx_generate's.
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/batch.h"
#include "session/spec.h"

struct mx_batch_spec {
  mx_batch_drafter_t *drafter;  // NULL: prompt lookup
  int32_t k, ngram_max;
  mx_spec_sched_t sched;  // with a drafter: the draft lengths (mx_spec_sched_take)
  int32_t cap;            // the longest verification call: k + 1 rounded up to a power of two
  int32_t vocab;
  int32_t m;      // drafts of the last mx_batch_spec_draft
  int32_t *ids;   // [cap]: the pending token, the drafts, padding
  float *logits;  // [cap][vocab]
};

mx_status_t mx_batch_spec_create(const mx_batch_t *b, mx_batch_drafter_t *drafter,
                                 int32_t draft_tokens, int32_t ngram_max, mx_batch_spec_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_spec_create: out is NULL");
  *out = NULL;
  if (!b) return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_spec_create: batch is NULL");
  int32_t k = draft_tokens ? draft_tokens : MX_SPEC_DEFAULT_TOKENS;
  int32_t g = ngram_max ? ngram_max : MX_SPEC_DEFAULT_NGRAM;
  if (k < 1 || k > MX_SPEC_MAX_TOKENS)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "speculative decoding: draft_tokens must be in 1..%d (0 = %d), got %d",
                        MX_SPEC_MAX_TOKENS, MX_SPEC_DEFAULT_TOKENS, k);
  if (g < 1 || g > MX_SPEC_MAX_TOKENS)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "speculative decoding: ngram_max must be in 1..%d (0 = %d), got %d",
                        MX_SPEC_MAX_TOKENS, MX_SPEC_DEFAULT_NGRAM, g);
  mx_status_t st = mx_batch_check_all_logits(b);
  if (st) return mx_error_prefix(st, "speculative decoding");
  // One verification is one prefill call within the chunk (a chunk of 1 leaves no room for a
  // draft: every step decodes).
  int32_t chunk = mx_batch_chunk(b);
  if (k + 1 > chunk) k = chunk - 1;
  mx_batch_spec_t *sp = calloc(1, sizeof *sp);
  if (!sp) return mx_error_set(MX_ERR_NOMEM, "speculative decoding: out of memory");
  sp->drafter = drafter;
  sp->k = k;
  sp->sched = mx_spec_sched_init(k);
  sp->ngram_max = g;
  sp->vocab = mx_batch_vocab(b);
  sp->cap = 1;
  while (sp->cap < k + 1) sp->cap *= 2;
  sp->ids = malloc((size_t)sp->cap * sizeof *sp->ids);
  sp->logits = malloc((size_t)sp->cap * (size_t)sp->vocab * sizeof *sp->logits);
  if (!sp->ids || !sp->logits) {
    mx_batch_spec_destroy(sp);
    return mx_error_set(MX_ERR_NOMEM, "speculative decoding: out of memory for %d drafts", k);
  }
  *out = sp;
  return MX_OK;
}

void mx_batch_spec_destroy(mx_batch_spec_t *sp) {
  if (!sp) return;
  free(sp->ids);
  free(sp->logits);
  free(sp);
}

int32_t mx_batch_spec_tokens(const mx_batch_spec_t *sp) { return sp ? sp->k : 0; }

// The draft length of a state's step for a slot with `limit` tokens of room (once per step: it
// counts a draft model's pause down).
static int32_t draft_len(mx_batch_spec_t *sp, int32_t limit) {
  int32_t k = sp->drafter ? mx_spec_sched_take(&sp->sched) : sp->k;
  return limit < k ? limit : k;
}

mx_status_t mx_batch_spec_draft(mx_batch_spec_t *sp, int32_t slot, const int32_t *history,
                                int32_t n, int32_t limit, int32_t *m) {
  return mx_batch_spec_draft_many(&sp, &slot, &history, &n, &limit, 1, m);
}

mx_status_t mx_batch_spec_draft_many(mx_batch_spec_t *const *sps, const int32_t *slots,
                                     const int32_t *const *histories, const int32_t *ns,
                                     const int32_t *limits, int32_t n, int32_t *ms) {
  if (n < 0 || n > MX_BATCH_MAX_SLOTS)
    return mx_error_set(MX_ERR_INVALID_ARG, "batch speculative step: %d slots (0..%d)", n,
                        MX_BATCH_MAX_SLOTS);
  mx_draft_req_t reqs[MX_BATCH_MAX_SLOTS];
  int32_t of[MX_BATCH_MAX_SLOTS], ks[MX_BATCH_MAX_SLOTS];
  mx_status_t err = MX_OK;
  for (int32_t i = 0; i < n; i++) {
    mx_batch_spec_t *sp = sps[i];
    ms[i] = sp->m = 0;
    ks[i] = draft_len(sp, limits[i]);
    if (!histories[i] || ns[i] < 1) ks[i] = 0;
    if (!sp->drafter && ks[i] >= 1)
      ms[i] = sp->m = mx_spec_ngram(histories[i], ns[i] - 1, histories[i][ns[i] - 1], sp->ngram_max,
                                    ks[i], sp->ids + 1);
  }
  // The draft-model states, one group per drafter: their decode calls are shared.
  for (int32_t i = 0; i < n; i++) {
    mx_batch_drafter_t *d = sps[i]->drafter;
    bool first = d != NULL;
    for (int32_t j = 0; first && j < i; j++) first = sps[j]->drafter != d;
    if (!first) continue;
    int32_t nr = 0;
    for (int32_t j = i; j < n; j++) {
      if (sps[j]->drafter != d || ks[j] < 1) continue;
      reqs[nr] = (mx_draft_req_t){.slot = slots[j],
                                  .history = histories[j],
                                  .n = ns[j],
                                  .k = ks[j],
                                  .out = sps[j]->ids + 1};
      of[nr++] = j;
    }
    mx_status_t st = mx_batch_drafter_draft_many(d, reqs, nr, sps[i]->vocab);
    if (st && !err) err = st;
    for (int32_t r = 0; r < nr; r++) ms[of[r]] = sps[of[r]]->m = reqs[r].m;
  }
  return err;
}

mx_status_t mx_batch_spec_verify(mx_batch_t *b, int32_t slot, mx_batch_spec_t *sp,
                                 mx_sampler_t *smp, int32_t *history, int32_t n, int32_t m,
                                 int32_t *out, int32_t *n_out) {
  *n_out = 0;
  if (!b || !sp || !smp || !history || !out)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_spec_verify: NULL argument");
  const int64_t base = mx_batch_n_past(b, slot);  // n - 1: the pending token is not fed yet
  if (m < 1 || m > sp->m || n < 1 || base != n - 1)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "batch speculative step: %d drafts of %d drafted, a history of %d ids "
                        "for slot %d holding %lld",
                        m, sp->m, n, slot, (long long)base);
  int64_t ctx = mx_batch_ctx(b);
  if (base + 1 + m > ctx)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "batch speculative step: %d drafts do not fit in slot %d (capacity %lld, "
                        "%lld tokens held)",
                        m, slot, (long long)ctx, (long long)base);
  // Padding to a power of two: any other length runs as several calls (the binary
  // decomposition of ADR 0002), each reading every weight. The padding rows see only what
  // precedes them and are rewound with the rejected drafts.
  sp->ids[0] = history[n - 1];
  int32_t T = 1;
  while (T < m + 1) T *= 2;
  if (T > mx_batch_chunk(b) || T > sp->cap || base + T > ctx) T = m + 1;
  for (int32_t i = m + 1; i < T; i++) sp->ids[i] = sp->ids[m];
  memcpy(history + n, sp->ids + 1, (size_t)m * sizeof *history);
  mx_status_t st = mx_batch_prefill_all(b, slot, sp->ids, T, sp->logits);
  if (st) {
    mx_batch_rewind(b, slot, base);
    return st;
  }
  *n_out = mx_spec_accept(smp, sp->logits, sp->vocab, history, n, sp->ids + 1, m, out);
  if (sp->drafter) mx_spec_sched_update(&sp->sched, m, *n_out - 1);
  // Keep the pending token and the accepted drafts: all but the last token out.
  return mx_batch_rewind(b, slot, base + *n_out);
}
