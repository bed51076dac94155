// Private to src/server/: which tokens each batch slot still holds after its job ended, so the
// next job can start on the slot whose KV shares the longest prefix with its prompt (a system
// prompt, the earlier turns of a chat) and prefill only the rest.
//
// The memory is the slots' own KV, taken once at start (n_slots x ctx positions): nothing is
// copied. A job that shares little evicts the least recently used free slot's tokens (empty
// slots first). Only the scheduler thread uses it; it never allocates after init.
#ifndef MX_SERVER_PREFIX_CACHE_H
#define MX_SERVER_PREFIX_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "mlxcel/base.h"

typedef struct mx_prefix_cache {
  int32_t n_slots;
  int64_t cap;     // most tokens a slot holds (the context)
  int32_t *ids;    // [n_slots][cap], owned
  int64_t *len;    // [n_slots] tokens of ids[slot] the slot's KV holds
  uint64_t *used;  // [n_slots] when the slot's tokens were last stored (clock)
  uint64_t clock;
} mx_prefix_cache_t;

mx_status_t mx_prefix_cache_init(mx_prefix_cache_t *c, int32_t n_slots, int64_t cap);
void mx_prefix_cache_free(mx_prefix_cache_t *c);  // accepts a zeroed or freed cache

// The slot's KV holds ids[0, n) (n is clamped to the capacity).
void mx_prefix_cache_store(mx_prefix_cache_t *c, int32_t slot, const int32_t *ids, int64_t n);
// The slot holds only its first n tokens from now on (n larger than what it holds: no change).
void mx_prefix_cache_truncate(mx_prefix_cache_t *c, int32_t slot, int64_t n);

// A slot for a prompt among those with busy[slot] false (at least one), comparing at most
// `limit` of its ids (the caller keeps at least one prompt token to prefill, for its logits):
// the one whose tokens share the longest prefix with the prompt when that is at least half of
// the `limit` ids or of the tokens the slot holds; otherwise the cheapest to lose (an empty slot,
// else the least recently stored). *shared receives the length the chosen slot shares (0 when
// none).
int32_t mx_prefix_cache_pick(const mx_prefix_cache_t *c, const bool *busy, const int32_t *ids,
                             int64_t limit, int64_t *shared);

#endif  // MX_SERVER_PREFIX_CACHE_H
