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
  // [n_slots] scratch of one mx_batch_drafter_draft_many: the slots of a decode call, the ids
  // they feed, the request each serves.
  int32_t *q_slot, *q_id, *q_req;
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
  d->q_slot = malloc((size_t)n_slots * sizeof *d->q_slot);
  d->q_id = malloc((size_t)n_slots * sizeof *d->q_id);
  d->q_req = malloc((size_t)n_slots * sizeof *d->q_req);
  if (!d->held || !d->q_slot || !d->q_id || !d->q_req) {
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
  free(d->q_slot);
  free(d->q_id);
  free(d->q_req);
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

// Brings request r's draft slot to the target's tokens before the pending one (rewound to the
// common prefix, the rest prefilled) and queues the pending token for the first decode call;
// a request with nothing to draft is not queued. On failure the slot is reset.
static mx_status_t sync(mx_batch_drafter_t *d, mx_draft_req_t *r, int32_t target_vocab,
                        int32_t *q) {
  r->m = 0;
  const int64_t base = r->n - 1;  // the target's tokens before the pending one
  int32_t k = r->k;
  if (d->ctx < base + k) k = (int32_t)(d->ctx - base);  // the draft's capacity ends its drafts
  if (k <= 0 || r->n < 1 || r->slot < 0 || r->slot >= d->n_slots || target_vocab < 1) {
    r->k = 0;
    return MX_OK;
  }
  r->k = k;
  const int32_t *held = d->held + (size_t)r->slot * (size_t)d->ctx;
  const int64_t n_held = mx_batch_n_past(d->batch, r->slot);
  int64_t c = 0;
  while (c < base && c < n_held && held[c] == r->history[c]) c++;
  // A token to feed that the draft model has no row for (a target's padding id): no drafts for
  // this slot (the held prefix was fed, so only the rest needs the check).
  for (int64_t i = c; i < r->n; i++)
    if (r->history[i] < 0 || r->history[i] >= d->vocab) {
      r->k = 0;
      return MX_OK;
    }
  mx_status_t st = c < n_held ? mx_batch_rewind(d->batch, r->slot, c) : MX_OK;
  if (!st && c < base) st = feed(d, r->slot, r->history + c, (int32_t)(base - c));
  if (st) {
    r->k = 0;
    mx_batch_reset(d->batch, r->slot);  // what it holds is no longer known
    return st;
  }
  d->q_slot[*q] = r->slot;
  d->q_id[*q] = r->history[base];
  (*q)++;
  return MX_OK;
}

mx_status_t mx_batch_drafter_draft_many(mx_batch_drafter_t *d, mx_draft_req_t *reqs, int32_t n,
                                        int32_t target_vocab) {
  mx_status_t err = MX_OK;
  int32_t q = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t before = q;
    mx_status_t st = sync(d, &reqs[i], target_vocab, &q);
    if (q > before) d->q_req[q - 1] = i;
    if (st && !err) err = st;
  }
  // One decode call per draft position for every slot still drafting: the pending tokens, then
  // each slot's latest draft until it has its k (or drafted an id past the target's vocabulary).
  while (q > 0) {
    for (int32_t j = 0; j < q; j++) {
      int32_t *held = d->held + (size_t)d->q_slot[j] * (size_t)d->ctx;
      held[mx_batch_n_past(d->batch, d->q_slot[j])] = d->q_id[j];
    }
    mx_status_t st = mx_batch_decode(d->batch, d->q_slot, d->q_id, q);
    if (st) {
      for (int32_t j = 0; j < q; j++) {
        reqs[d->q_req[j]].m = 0;
        mx_batch_reset(d->batch, d->q_slot[j]);
      }
      if (!err) err = st;
      break;
    }
    int32_t q2 = 0;
    for (int32_t j = 0; j < q; j++) {
      mx_draft_req_t *r = &reqs[d->q_req[j]];
      int32_t id = mx_sampler_argmax(mx_batch_logits(d->batch, d->q_slot[j]), d->vocab);
      if (id >= target_vocab) continue;
      r->out[r->m++] = id;
      if (r->m < r->k) {
        d->q_slot[q2] = d->q_slot[j];
        d->q_id[q2] = id;
        d->q_req[q2] = d->q_req[j];
        q2++;
      }
    }
    q = q2;
  }
  return err ? mx_error_prefix(err, "draft model") : MX_OK;
}
