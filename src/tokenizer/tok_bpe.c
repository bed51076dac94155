// BPE of one pre-tokenized word: characters (or byte-fallback bytes, or unk) become symbols, then
// the adjacent pair with the lowest merge rank is merged, leftmost first, until none applies.
// A binary heap keyed on (rank, position) keeps this O(n log n) for long words (SentencePiece
// layouts have no pre-tokenizer, so a whole paragraph can be one word).
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

typedef struct sym {
  int32_t id;
  int32_t prev, next;  // -1 at the ends
  bool dead;
} sym_t;

typedef struct cand {
  int32_t rank;
  int32_t pos;     // left symbol
  int32_t new_id;  // merged id when queued (a stale entry no longer matches)
} cand_t;

typedef struct bpe_work {
  sym_t *syms;
  int32_t n_syms, cap_syms;
  cand_t *heap;
  int32_t n_heap, cap_heap;
} bpe_work_t;

static bool cand_less(const cand_t *a, const cand_t *b) {
  return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static bool heap_push(bpe_work_t *w, cand_t c) {
  if (w->n_heap == w->cap_heap) {
    int32_t ncap = w->cap_heap ? w->cap_heap * 2 : 64;
    cand_t *nh = realloc(w->heap, (size_t)ncap * sizeof *nh);
    if (!nh) return false;
    w->heap = nh;
    w->cap_heap = ncap;
  }
  int32_t i = w->n_heap++;
  while (i > 0) {
    int32_t p = (i - 1) / 2;
    if (!cand_less(&c, &w->heap[p])) break;
    w->heap[i] = w->heap[p];
    i = p;
  }
  w->heap[i] = c;
  return true;
}

static cand_t heap_pop(bpe_work_t *w) {
  cand_t top = w->heap[0];
  cand_t last = w->heap[--w->n_heap];
  int32_t i = 0, n = w->n_heap;
  for (;;) {
    int32_t l = 2 * i + 1, r = l + 1, m = i;
    const cand_t *best = &last;
    if (l < n && cand_less(&w->heap[l], best)) {
      m = l;
      best = &w->heap[l];
    }
    if (r < n && cand_less(&w->heap[r], best)) m = r;
    if (m == i) break;
    w->heap[i] = w->heap[m];
    i = m;
  }
  if (n > 0) w->heap[i] = last;
  return top;
}

static bool add_sym(bpe_work_t *w, int32_t id) {
  if (w->n_syms == w->cap_syms) {
    int32_t ncap = w->cap_syms ? w->cap_syms * 2 : 64;
    sym_t *ns = realloc(w->syms, (size_t)ncap * sizeof *ns);
    if (!ns) return false;
    w->syms = ns;
    w->cap_syms = ncap;
  }
  int32_t i = w->n_syms++;
  w->syms[i] = (sym_t){.id = id, .prev = i - 1, .next = -1, .dead = false};
  if (i > 0) w->syms[i - 1].next = i;
  return true;
}

static bool queue_pair(const mx_tokenizer_t *t, bpe_work_t *w, int32_t pos) {
  if (pos < 0) return true;
  int32_t nx = w->syms[pos].next;
  if (nx < 0) return true;
  const mx_tok_merge_slot_t *m = mx_tok_mergemap_get(&t->merges, w->syms[pos].id, w->syms[nx].id);
  if (!m) return true;
  return heap_push(w, (cand_t){.rank = m->rank, .pos = pos, .new_id = m->id});
}

static bool push_id(int32_t **ids, int32_t *n, int32_t *cap, int32_t id) {
  if (*n == *cap) {
    int32_t ncap = *cap ? *cap * 2 : 64;
    int32_t *na = realloc(*ids, (size_t)ncap * sizeof *na);
    if (!na) return false;
    *ids = na;
    *cap = ncap;
  }
  (*ids)[(*n)++] = id;
  return true;
}

// Builds the initial symbols: one per character in the vocabulary; otherwise its bytes'
// <0xNN> tokens (byte_fallback), otherwise unk (consecutive unknowns fused with fuse_unk), or
// nothing when the model has no unk token.
static bool initial_symbols(const mx_tokenizer_t *t, bpe_work_t *w, const char *s, size_t n) {
  bool pending_unk = false;
  size_t i = 0;
  while (i < n) {
    uint32_t cp;
    int k = mx_utf8_decode((const uint8_t *)s + i, n - i, &cp);
    if (k <= 0) k = 1;  // input is validated UTF-8; be safe anyway
    int32_t id = mx_tok_strmap_get(&t->vocab, s + i, (size_t)k);
    if (id >= 0) {
      if (pending_unk && !add_sym(w, t->unk_id)) return false;
      pending_unk = false;
      if (!add_sym(w, id)) return false;
      i += (size_t)k;
      continue;
    }
    if (t->byte_fallback) {
      bool all = true;
      for (int b = 0; b < k; b++) all = all && t->byte_ids[(uint8_t)s[i + (size_t)b]] >= 0;
      if (all) {
        if (pending_unk && !add_sym(w, t->unk_id)) return false;
        pending_unk = false;
        for (int b = 0; b < k; b++) {
          if (!add_sym(w, t->byte_ids[(uint8_t)s[i + (size_t)b]])) return false;
        }
        i += (size_t)k;
        continue;
      }
    }
    if (t->unk_id >= 0) {
      if (pending_unk && !t->fuse_unk && !add_sym(w, t->unk_id)) return false;
      pending_unk = true;
    }
    i += (size_t)k;
  }
  if (pending_unk && !add_sym(w, t->unk_id)) return false;
  return true;
}

bool mx_tok_bpe_word(const mx_tokenizer_t *t, const char *s, size_t n, int32_t **ids,
                     int32_t *n_ids, int32_t *cap) {
  if (n == 0) return true;
  if (t->ignore_merges) {
    int32_t id = mx_tok_strmap_get(&t->vocab, s, n);
    if (id >= 0) return push_id(ids, n_ids, cap, id);
  }
  bpe_work_t w = {0};
  bool ok = initial_symbols(t, &w, s, n);
  for (int32_t i = 0; ok && i + 1 < w.n_syms; i++) ok = queue_pair(t, &w, i);
  while (ok && w.n_heap > 0) {
    cand_t c = heap_pop(&w);
    sym_t *a = &w.syms[c.pos];
    if (a->dead || a->next < 0) continue;
    sym_t *b = &w.syms[a->next];
    const mx_tok_merge_slot_t *m = mx_tok_mergemap_get(&t->merges, a->id, b->id);
    if (!m || m->id != c.new_id) continue;  // stale: one side changed since it was queued
    a->id = c.new_id;
    b->dead = true;
    a->next = b->next;
    if (b->next >= 0) w.syms[b->next].prev = c.pos;
    ok = queue_pair(t, &w, a->prev) && queue_pair(t, &w, c.pos);
  }
  for (int32_t i = 0; ok && i < w.n_syms; i++) {
    if (!w.syms[i].dead) ok = push_id(ids, n_ids, cap, w.syms[i].id);
  }
  free(w.syms);
  free(w.heap);
  return ok;
}
