// Speculative decoding of batch slots (batch.h, ADR 0024): prompt lookup or a drafter's draft
// model, and the verification of one slot's drafts in one all-logits call, judged by the acceptance
// the session's steps use (spec.c), so that a slot's tokens follow the same rule and the same
// random draws as mx_generate's.
#include <stdlib.h>
#include <string.h>

#include "base/try.h"
#include "mlxcel/batch.h"
#include "session/spec.h"

struct mx_batch_spec {
  mx_batch_drafter_t *drafter;  // NULL: prompt lookup
  int32_t k, ngram_max;
  int32_t k_next;  // with a drafter: the next draft's length (mx_spec_adapt_k)
  int32_t cap;     // the longest verification call: k + 1 rounded up to a power of two
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
  sp->k_next = k;
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

mx_status_t mx_batch_spec_draft(mx_batch_spec_t *sp, int32_t slot, const int32_t *history,
                                int32_t n, int32_t limit, int32_t *m) {
  *m = sp->m = 0;
  int32_t k = sp->drafter ? sp->k_next : sp->k;
  if (limit < k) k = limit;
  if (!history || n < 1 || k < 1) return MX_OK;
  if (sp->drafter) {
    MX_TRY(mx_batch_drafter_draft(sp->drafter, slot, history, n, k, sp->vocab, sp->ids + 1, m));
  } else {
    *m = mx_spec_ngram(history, n - 1, history[n - 1], sp->ngram_max, k, sp->ids + 1);
  }
  sp->m = *m;
  return MX_OK;
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
  if (sp->drafter) sp->k_next = mx_spec_adapt_k(sp->k_next, sp->k, m, *n_out - 1);
  // Keep the pending token and the accepted drafts: all but the last token out.
  return mx_batch_rewind(b, slot, base + *n_out);
}
