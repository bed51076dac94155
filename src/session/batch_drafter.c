// A draft model's batch beside a target batch (batch.h, ADR 0024): per slot the tokens its draft
// slot holds, so that each draft feeds only what the draft model has not seen, with the calls
// mx_generate's draft model makes (spec.c's draft_model), so that a slot's drafts equal a
// session's and a seeded request samples what generate does.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/batch.h"
#include "session/spec.h"

struct mx_batch_drafter {
  mx_batch_t *batch;  // the draft model's, owned
  int64_t ctx;        // per slot (the target's)
  int32_t chunk, n_slots, vocab;
  int32_t *held;  // [n_slots][ctx]: the tokens each draft slot holds (mx_batch_n_past of them)
};

mx_status_t mx_batch_drafter_create(const mx_batch_t *target, const mx_model_t *draft,
                                    const mx_batch_opts_t *opts, mx_batch_drafter_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_drafter_create: out is NULL");
  *out = NULL;
  if (!target || !draft || !opts)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_drafter_create: NULL argument");
  mx_status_t st = mx_spec_check_draft(mx_batch_model(target), draft);
  if (st) return st;
  mx_batch_opts_t bo = *opts;
  const int32_t n_slots = mx_batch_n_slots(target);
  const int64_t ctx = mx_batch_ctx(target);
  if ((bo.n_slots && bo.n_slots != n_slots) || (bo.ctx && bo.ctx != ctx))
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "draft model: its batch needs the model's %d slots of %lld tokens, not %d "
                        "of %lld",
                        n_slots, (long long)ctx, bo.n_slots, (long long)bo.ctx);
  bo.n_slots = n_slots;
  bo.ctx = ctx;
  mx_batch_drafter_t *d = calloc(1, sizeof *d);
  if (!d) return mx_error_set(MX_ERR_NOMEM, "draft model: out of memory");
  st = mx_batch_create(draft, &bo, &d->batch);
  if (st) {
    free(d);
    return mx_error_prefix(st, "draft model");
  }
  d->ctx = ctx;
  d->n_slots = n_slots;
  d->chunk = mx_batch_chunk(d->batch);
  d->vocab = mx_batch_vocab(d->batch);
  d->held = malloc((size_t)n_slots * (size_t)ctx * sizeof *d->held);
  if (!d->held) {
    mx_batch_drafter_destroy(d);
    return mx_error_set(MX_ERR_NOMEM, "draft model: out of memory for %d slots of %lld tokens",
                        n_slots, (long long)ctx);
  }
  *out = d;
  return MX_OK;
}

void mx_batch_drafter_destroy(mx_batch_drafter_t *d) {
  if (!d) return;
  mx_batch_destroy(d->batch);
  free(d->held);
  free(d);
}

// Feeds ids[0..n) to the draft slot (pieces of at most the chunk), recording them.
static mx_status_t feed(mx_batch_drafter_t *d, int32_t slot, const int32_t *ids, int32_t n) {
  int32_t *held = d->held + (size_t)slot * (size_t)d->ctx;
  for (int32_t off = 0; off < n;) {
    int32_t piece = n - off < d->chunk ? n - off : d->chunk;
    int64_t at = mx_batch_n_past(d->batch, slot);
    mx_status_t st = piece == 1 ? mx_batch_decode(d->batch, &slot, ids + off, 1)
                                : mx_batch_prefill(d->batch, slot, ids + off, piece);
    if (st) return st;
    memcpy(held + at, ids + off, (size_t)piece * sizeof *ids);
    off += piece;
  }
  return MX_OK;
}

mx_status_t mx_batch_drafter_draft(mx_batch_drafter_t *d, int32_t slot, const int32_t *history,
                                   int32_t n, int32_t k, int32_t target_vocab, int32_t *out,
                                   int32_t *m) {
  *m = 0;
  if (slot < 0 || slot >= d->n_slots || n < 1)
    return mx_error_set(MX_ERR_INVALID_ARG, "draft model: slot %d, history of %d", slot, n);
  const int64_t base = n - 1;  // the target's tokens before the pending one
  if (d->ctx < base + k) k = (int32_t)(d->ctx - base);  // the draft's capacity ends its drafts
  if (k <= 0) return MX_OK;
  // A token the draft model has no row for (a target's padding id): no drafts for this slot.
  for (int64_t i = 0; i < n; i++)
    if (history[i] < 0 || history[i] >= d->vocab) return MX_OK;
  const int32_t *held = d->held + (size_t)slot * (size_t)d->ctx;
  const int64_t n_held = mx_batch_n_past(d->batch, slot);
  int64_t c = 0;
  while (c < base && c < n_held && held[c] == history[c]) c++;
  mx_status_t st = c < n_held ? mx_batch_rewind(d->batch, slot, c) : MX_OK;
  if (!st && c < base) st = feed(d, slot, history + c, (int32_t)(base - c));
  if (!st) st = feed(d, slot, history + base, 1);  // the pending token, in a decode call
  for (int32_t i = 0; !st && i < k; i++) {
    int32_t id = mx_sampler_argmax(mx_batch_logits(d->batch, slot), d->vocab);
    if (id >= target_vocab) break;
    out[(*m)++] = id;
    if (i + 1 < k) st = feed(d, slot, &id, 1);
  }
  if (st) {
    *m = 0;
    mx_batch_reset(d->batch, slot);  // what it holds is no longer known
    return mx_error_prefix(st, "draft model");
  }
  return MX_OK;
}
