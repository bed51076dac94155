// Prompt-prefix reuse across the jobs of one batch slot (prefix_cache.h).
#include "server/prefix_cache.h"

#include <stdlib.h>
#include <string.h>

mx_status_t mx_prefix_cache_init(mx_prefix_cache_t *c, int32_t n_slots, int64_t cap) {
  memset(c, 0, sizeof *c);
  c->n_slots = n_slots;
  c->cap = cap;
  c->ids = malloc((size_t)n_slots * (size_t)cap * sizeof *c->ids);
  c->len = calloc((size_t)n_slots, sizeof *c->len);
  c->used = calloc((size_t)n_slots, sizeof *c->used);
  if (!c->ids || !c->len || !c->used) {
    mx_prefix_cache_free(c);
    return mx_error_set(MX_ERR_NOMEM, "prefix cache: out of memory for %d slots of %lld tokens",
                        n_slots, (long long)cap);
  }
  return MX_OK;
}

void mx_prefix_cache_free(mx_prefix_cache_t *c) {
  free(c->ids);
  free(c->len);
  free(c->used);
  memset(c, 0, sizeof *c);
}

void mx_prefix_cache_store(mx_prefix_cache_t *c, int32_t slot, const int32_t *ids, int64_t n) {
  if (n > c->cap) n = c->cap;
  if (n < 0) n = 0;
  memcpy(c->ids + (size_t)slot * (size_t)c->cap, ids, (size_t)n * sizeof *ids);
  c->len[slot] = n;
  c->used[slot] = ++c->clock;
}

void mx_prefix_cache_truncate(mx_prefix_cache_t *c, int32_t slot, int64_t n) {
  if (n < c->len[slot]) c->len[slot] = n < 0 ? 0 : n;
}

static int64_t shared_len(const mx_prefix_cache_t *c, int32_t slot, const int32_t *ids,
                          int64_t limit) {
  const int32_t *held = c->ids + (size_t)slot * (size_t)c->cap;
  int64_t end = c->len[slot] < limit ? c->len[slot] : limit, n = 0;
  while (n < end && held[n] == ids[n]) n++;
  return n;
}

int32_t mx_prefix_cache_pick(const mx_prefix_cache_t *c, const bool *busy, const int32_t *ids,
                             int64_t limit, int64_t *shared) {
  int32_t best = -1, victim = -1;
  int64_t best_n = 0;
  for (int32_t i = 0; i < c->n_slots; i++) {
    if (busy[i]) continue;
    int64_t n = shared_len(c, i, ids, limit);
    if (best < 0 || n > best_n || (n == best_n && c->used[i] < c->used[best])) {
      best = i;
      best_n = n;
    }
    // The cheapest slot to lose: an empty one, else the least recently stored.
    bool empty = c->len[i] == 0;
    if (victim < 0 || (empty && c->len[victim] > 0) ||
        (empty == (c->len[victim] == 0) && c->used[i] < c->used[victim]))
      victim = i;
  }
  // A slot is taken for what it shares when that is at least half of the prompt or half of
  // what the slot holds (a chat's next turn); a weaker match (a BOS, a common first word) is
  // not worth evicting a conversation for.
  if (best_n > 0 && (best_n * 2 >= limit || best_n * 2 >= c->len[best])) {
    *shared = best_n;
    return best;
  }
  *shared = shared_len(c, victim, ids, limit);
  return victim;
}
