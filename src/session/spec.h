// Private to src/session/: the state of speculative decoding in one mx_generate call (ADR 0020)
// and its steps. The public options and the acceptance rule are in mlxcel/session.h.
#ifndef MLXCEL_SESSION_SPEC_H
#define MLXCEL_SESSION_SPEC_H

#include "mlxcel/session.h"

// A draft model's draft lengths (ADR 0020). Every drafted token costs one of its decode steps,
// so the length adapts as transformers' "heuristic" schedule for assistant models: it starts at
// k_max, grows by 2 (up to k_max) after a step whose m >= 1 drafts were all accepted and
// shrinks by 1 (down to 1) after a rejection. A rejection at length 1 also pauses drafting for
// 1, 2, 4, ... up to MX_SPEC_MAX_PAUSE steps (plain decode steps), so that where the models do
// not agree the draft costs almost nothing; an accepted draft ends the backoff. Shared by the
// session's steps and the batch's, so a seeded server request drafts what mx_generate drafts.
// Prompt lookup's drafts cost nothing to make: it keeps k_max and never pauses.
enum { MX_SPEC_MAX_PAUSE = 16 };
typedef struct mx_spec_sched {
  int32_t k, k_max;
  int32_t pause, backoff;  // plain steps still to take; the next pause's length (0: none yet)
} mx_spec_sched_t;

static inline mx_spec_sched_t mx_spec_sched_init(int32_t k_max) {
  return (mx_spec_sched_t){.k = k_max, .k_max = k_max};
}
// The draft length of this step (0: a paused step), counting the pause down; once per step.
int32_t mx_spec_sched_take(mx_spec_sched_t *sc);
// After a step that verified m drafts and accepted `accepted` of them (m 0: nothing changes).
void mx_spec_sched_update(mx_spec_sched_t *sc, int32_t m, int32_t accepted);

typedef struct mx_spec {
  mx_spec_mode_t mode;
  int32_t k;              // most drafted tokens per step (resolved; k + 1 <= the prefill chunk)
  mx_spec_sched_t sched;  // MX_SPEC_DRAFT: the draft lengths (mx_spec_sched_take)
  int32_t ngram_max;      // MX_SPEC_NGRAM: longest suffix matched
  mx_session_t *draft;    // MX_SPEC_DRAFT: the draft model's session (borrowed)
  int32_t cap;            // the longest verification call: k + 1 rounded up to a power of two
  int32_t *verify;        // [cap] owned: the pending token, the drafts, padding
  float *logits;          // [cap][vocab] owned: the verification's logits
} mx_spec_t;

// Resolves the options (defaults, ranges, the draft's tokenizer, a backend that returns every
// position's logits) and allocates the step's buffers: everything before the first token, so
// the steps never allocate. Errors name the option. *sp needs mx_spec_destroy even on failure.
mx_status_t mx_spec_create(const mx_spec_opts_t *o, mx_session_t *s, mx_spec_t *sp);
void mx_spec_destroy(mx_spec_t *sp);

// Prompt lookup over the sequence ctx[0..n) followed by `last`: for g = ngram_max down to 1,
// the latest earlier occurrence of its last g tokens that k tokens follow, else the earliest
// occurrence; writes the at most k tokens after it to out and returns their count (0: no
// suffix recurs).
int32_t mx_spec_ngram(const int32_t *ctx, int32_t n, int32_t last, int32_t ngram_max, int32_t k,
                      int32_t *out);

// One step of generation after the token t (sampled, not yet in the session, which holds the
// context before it): drafts up to k tokens, verifies t and them in one prefill call returning
// every position's logits, and writes the tokens the sampler settles on to out[0..*n_out)
// (1..k + 1: the accepted drafts, then the model's own token); *n_drafted the drafts verified.
// The session then holds t and the accepted drafts (the rejected ones rewound); out's last token
// is the next step's t. Without a draft the step is one decode call.
mx_status_t mx_spec_step(mx_spec_t *sp, mx_session_t *s, mx_sampler_t *smp, int32_t t, int32_t *out,
                         int32_t *n_out, int32_t *n_drafted);

// The sampler's judgement of m drafts verified in one call (ADR 0020, step 3), shared by the
// session's steps and the batch's (ADR 0024): row j of logits[(m + 1)][vocab] is the model's
// distribution after history[0..n_history + j), whose tokens from n_history on are the drafts
// (row 0 follows the pending token history[n_history - 1]). Writes the accepted drafts, then
// the sampler's own token, to out and returns their count (1..m + 1): drafts[j] is accepted
// with probability p(drafts[j]) (mx_sampler_spec_accept), the first rejection draws from p
// without it, and after m acceptances row m gives one more token. No allocation.
int32_t mx_spec_accept(mx_sampler_t *smp, const float *logits, int32_t vocab,
                       const int32_t *history, int32_t n_history, const int32_t *drafts, int32_t m,
                       int32_t *out);

// One slot's draft request to the batch drafter (batch_drafter.c): the target's history[0..n)
// whose last token is pending, at most k drafts into out; m their count once drafted.
typedef struct mx_draft_req {
  int32_t slot;
  const int32_t *history;
  int32_t n, k;
  int32_t *out;
  int32_t m;
} mx_draft_req_t;

// The draft model's greedy drafts for every request (distinct slots), stopping before an id at
// or past target_vocab: each draft slot is brought to its history, then one batched decode call
// per draft position serves every slot still drafting. A request drafts nothing (m 0) when its
// draft slot is full or its history holds an id the draft model has no row for. A failed call
// costs the slots it served their drafts (m 0, draft slot reset) and is returned after every
// request was handled.
typedef struct mx_batch_drafter mx_batch_drafter_t;
mx_status_t mx_batch_drafter_draft_many(mx_batch_drafter_t *d, mx_draft_req_t *reqs, int32_t n,
                                        int32_t target_vocab);

// Index of the largest logits[0..n) (ties to the lower id, NaN as -inf), as greedy sampling.
int32_t mx_sampler_argmax(const float *logits, int32_t n);

#endif  // MLXCEL_SESSION_SPEC_H
