// Batched decoding (mlxcel/batch.h) on the bundled stories260K model:
// - API errors: options, bad slots, capacity (with the numbers), distinct slots, reset;
// - identity: every slot's logits, step by step, bit-identical to an mx_session fed the same
//   calls, in several compositions (alone, four together with different prompts, staggered
//   starts and stops, parked and full slots, slots reused after reset), on the cpu and interp
//   backends and on a backend without batch operations; a batch on 1 and on 2 threads against
//   the same 1-thread session;
// - greedy tokens equal upstream llama2.c's (../shared reference, skipped when absent);
// - a full slot's KV rows stay untouched while other slots decode (the spare parking row);
// - no allocation in prefill / decode (cpu backend);
// - the few-row matmul of batched decode gives every row exactly the GEMV's result (every ISA
//   this machine runs, several shapes, row counts and thread splits).
#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels_rows.h"
#include "mlxcel/batch.h"
#include "mx_alloc_count.h"
#include "mx_test.h"
#include "session/batch_state.h"
#include "session/session_internal.h"

enum { CTX = 96, CHUNK = 16, MAX_STREAMS = 8, MAX_GEN = 96 };

static int64_t g_ctx = CTX;  // capacity of the batches and reference sessions made now

static int32_t argmax(const float *x, int32_t n) {
  int32_t a = 0;
  for (int32_t i = 1; i < n; i++)
    if (x[i] > x[a]) a = i;
  return a;
}

static bool contains(const char *hay, const char *needle) {
  return hay && needle && strstr(hay, needle) != NULL;
}

// ---- Streams: a prompt and a number of greedy steps; the reference is an mx_session ----

typedef struct stream {
  int32_t slot;
  int32_t prompt[64];
  int32_t n_prompt;
  int32_t n_gen;     // greedy decode steps
  int32_t start;     // tick of the prefill
  int32_t period;    // decodes on ticks (t - start) % period == 0
  bool reset_after;  // reset the slot when done (frees its backend slot)
  // Reference: logits after the prefill and after each decode, [(n_gen + 1) * V].
  float *ref;
  int32_t ref_tokens[MAX_GEN];
  // Run state.
  int32_t done;  // decodes done
  bool started, finished;
  int32_t first_bad;  // first logits row that differs (-1: none)
} stream_t;

static int32_t g_id_span = 500;  // prompt ids are 3 .. 3 + g_id_span - 1

static void make_prompt(stream_t *s, int32_t seed, int32_t n) {
  s->prompt[0] = 1;  // BOS
  for (int32_t i = 1; i < n; i++) s->prompt[i] = 3 + (seed * 131 + i * 37 + i * i * 11) % g_id_span;
  s->n_prompt = n;
}

// Runs the stream through a session (same backend, ctx and chunk, always 1 thread: a batch on
// 2 threads is compared with it directly) and records its logits.
static void reference(const mx_model_t *m, const char *backend, stream_t *s) {
  int32_t V = m->config.vocab_size;
  free(s->ref);
  s->ref = calloc((size_t)(s->n_gen + 1) * (size_t)V, sizeof(float));
  mx_session_opts_t so = {
      .backend = backend, .ctx = g_ctx, .prefill_chunk = CHUNK, .backend_opts.threads = 1};
  mx_session_t *ss = NULL;
  CHECK_OK(mx_session_create(m, &so, &ss));
  if (!ss) return;
  CHECK_OK(mx_session_prefill(ss, s->prompt, s->n_prompt, NULL));
  memcpy(s->ref, mx_session_logits(ss), (size_t)V * sizeof(float));
  for (int32_t k = 0; k < s->n_gen; k++) {
    int32_t id = argmax(s->ref + (size_t)k * V, V);
    s->ref_tokens[k] = id;
    CHECK_OK(mx_session_decode(ss, id));
    const float *l = mx_session_logits(ss);
    if (l) memcpy(s->ref + (size_t)(k + 1) * V, l, (size_t)V * sizeof(float));
  }
  mx_session_destroy(ss);
}

static void compare(stream_t *s, const float *got, int32_t row, int32_t V) {
  if (!got) {
    if (s->first_bad < 0) s->first_bad = row;
    return;
  }
  if (s->first_bad < 0 && memcmp(got, s->ref + (size_t)row * V, (size_t)V * sizeof(float)) != 0)
    s->first_bad = row;
}

// Plays the streams on a batch tick by tick: prefills (in chunks) at their start tick, then
// one batched decode per tick of every stream due. Returns the number of decode calls.
static int run_streams(mx_batch_t *b, stream_t *st, int n) {
  int32_t V = mx_batch_vocab(b);
  int calls = 0;
  for (int i = 0; i < n; i++) {
    st[i].done = 0;
    st[i].started = st[i].finished = false;
    st[i].first_bad = -1;
  }
  for (int t = 0; t < 1000; t++) {
    bool all = true;
    for (int i = 0; i < n; i++) all = all && st[i].finished;
    if (all) break;
    int32_t slots[MAX_STREAMS], ids[MAX_STREAMS], who[MAX_STREAMS], nd = 0;
    for (int i = 0; i < n; i++) {
      stream_t *s = &st[i];
      if (s->finished) continue;
      if (!s->started) {
        if (t != s->start) continue;
        for (int32_t off = 0; off < s->n_prompt; off += CHUNK) {
          int32_t k = s->n_prompt - off < CHUNK ? s->n_prompt - off : CHUNK;
          CHECK_OK(mx_batch_prefill(b, s->slot, s->prompt + off, k));
        }
        s->started = true;
        compare(s, mx_batch_logits(b, s->slot), 0, V);
        continue;
      }
      if ((t - s->start) % s->period) continue;
      const float *l = mx_batch_logits(b, s->slot);
      slots[nd] = s->slot;
      ids[nd] = l ? argmax(l, V) : 0;
      who[nd++] = i;
    }
    if (nd) {
      CHECK_OK(mx_batch_decode(b, slots, ids, nd));
      calls++;
    }
    for (int j = 0; j < nd; j++) {
      stream_t *s = &st[who[j]];
      s->done++;
      compare(s, mx_batch_logits(b, s->slot), s->done, V);
      if (s->done == s->n_gen) {
        s->finished = true;
        if (s->reset_after) mx_batch_reset(b, s->slot);
      }
    }
  }
  return calls;
}

static int32_t g_threads;  // threads of the batches new_batch makes; 0 = the default

static mx_batch_t *new_batch(const mx_model_t *m, const char *backend, int32_t n_slots) {
  mx_batch_opts_t o = {.backend = backend,
                       .ctx = g_ctx,
                       .prefill_chunk = CHUNK,
                       .n_slots = n_slots,
                       .backend_opts.threads = g_threads};
  mx_batch_t *b = NULL;
  CHECK_OK(mx_batch_create(m, &o, &b));
  return b;
}

// The compositions. Each returns after checking every stream against its reference.
static void check_streams(const char *label, stream_t *st, int n) {
  for (int i = 0; i < n; i++)
    CHECK_MSG(st[i].first_bad < 0 && st[i].done == st[i].n_gen,
              "%s: stream %d (slot %d): logits row %d differs from the session's (%d/%d steps)",
              label, i, st[i].slot, st[i].first_bad, st[i].done, st[i].n_gen);
}

// light: fewer steps (the interpreter is ~100x slower than the cpu backend).
static void test_identity(const mx_model_t *m, const char *backend, const char *threads,
                          bool light) {
  g_threads = threads ? atoi(threads) : 0;
  char label[128];
  stream_t st[MAX_STREAMS];
  memset(st, 0, sizeof st);
  // Six streams of different prompt lengths (longer than a chunk, one token, ...).
  int32_t plen[6] = {5, 22, 1, 12, 34, 2};  // prefill pieces ending in T = 1, 2, 4
  if (light) {
    plen[1] = 18;
    plen[3] = 6;
    plen[4] = 10;
  }
  for (int i = 0; i < 6; i++) {
    make_prompt(&st[i], i + 1, plen[i]);
    st[i].n_gen = light ? 2 + i : 16 + 10 * i;
    if (st[i].n_gen > MAX_GEN - 1) st[i].n_gen = MAX_GEN - 1;
    if (st[i].n_prompt + st[i].n_gen > CTX) st[i].n_gen = CTX - st[i].n_prompt;
    st[i].period = 1;
    reference(m, backend, &st[i]);
  }
  // (a) each stream alone in a batch of 4, on a high slot.
  mx_batch_t *b = new_batch(m, backend, 4);
  for (int i = 0; b && i < (light ? 1 : 4); i++) {
    stream_t one = st[i];
    one.slot = 3 - i % 2;
    one.start = 0;
    one.reset_after = true;
    run_streams(b, &one, 1);
    snprintf(label, sizeof label, "%s/%s alone (slot %d)", backend, threads ? threads : "-",
             one.slot);
    check_streams(label, &one, 1);
  }
  // (b) four together, started at once, different lengths: the finished ones keep their slots
  // and are parked by the later calls.
  for (int i = 0; b && i < 4; i++) {
    st[i].slot = i;
    st[i].start = 0;
    st[i].reset_after = false;
  }
  if (b) {
    run_streams(b, st, 4);
    snprintf(label, sizeof label, "%s/%s four together", backend, threads ? threads : "-");
    check_streams(label, st, 4);
    for (int i = 0; i < 4; i++) mx_batch_reset(b, i);
  }
  // (c) staggered: starts at different ticks, every other tick for one, a reset slot reused by a
  // later stream, decode batches of every size 1..4 over backend slots with holes.
  int32_t starts[6] = {0, 3, 5, 1, 0, 0};
  int32_t periods[6] = {1, 2, 1, 3, 1, 1};
  int32_t slots_c[6] = {2, 0, 1, 3, 2, 3};  // streams 4, 5 reuse slots 2, 3 after their resets
  for (int i = 0; i < 6; i++) {
    st[i].slot = slots_c[i];
    st[i].start = starts[i];
    st[i].period = periods[i];
    st[i].reset_after = true;
  }
  // Streams 4 and 5 start after 0 and 3 finished (same slots): stream 0 decodes on ticks
  // 1..n_gen, stream 3 (period 3) on ticks 4, 7, .., 1 + 3 n_gen.
  st[4].start = st[0].n_gen + 2;
  st[5].start = 1 + 3 * st[3].n_gen + 1;
  if (b) {
    run_streams(b, st, 6);
    snprintf(label, sizeof label, "%s/%s staggered", backend, threads ? threads : "-");
    check_streams(label, st, 6);
  }
  mx_batch_destroy(b);
  for (int i = 0; i < 6; i++) free(st[i].ref);
  g_threads = 0;
}

// A full slot (n_past == ctx) stays parked while the others decode: its KV rows and logits do
// not change, and another slot's results are still the session's.
static void test_full_slot(const mx_model_t *m, const char *backend) {
  int32_t V = m->config.vocab_size;
  g_ctx = 40;
  mx_batch_t *b = new_batch(m, backend, 2);
  if (!b) return;
  int32_t ids[CHUNK];
  for (int32_t p = 0; p < g_ctx - 1; p += CHUNK) {
    int32_t k = g_ctx - 1 - p < CHUNK ? (int32_t)(g_ctx - 1 - p) : CHUNK;
    for (int32_t i = 0; i < k; i++) ids[i] = 3 + (p + i * 7) % 400;
    CHECK_OK(mx_batch_prefill(b, 0, ids, k));
  }
  int32_t slot0 = 0, last = 42;
  CHECK_OK(mx_batch_decode(b, &slot0, &last, 1));
  CHECK(mx_batch_n_past(b, 0) == g_ctx);
  float *l0 = malloc((size_t)V * sizeof *l0);
  memcpy(l0, mx_batch_logits(b, 0), (size_t)V * sizeof *l0);
  // Decoding slot 0 again fails with the numbers, before any work.
  CHECK(mx_batch_decode(b, &slot0, &last, 1) == MX_ERR_INVALID_ARG);
  CHECK_MSG(
      contains(mx_error_message(), "slot 0 is full") && contains(mx_error_message(), "capacity 40"),
      "%s", mx_error_message());
  stream_t s;
  memset(&s, 0, sizeof s);
  make_prompt(&s, 9, 7);
  s.slot = 1;
  s.n_gen = strcmp(backend, "cpu") ? 4 : 20;
  s.period = 1;
  reference(m, backend, &s);
  run_streams(b, &s, 1);  // a 2-slot decode plan: slot 0 is parked at its spare row
  char label[64];
  snprintf(label, sizeof label, "%s beside a full slot", backend);
  check_streams(label, &s, 1);
  CHECK(memcmp(l0, mx_batch_logits(b, 0), (size_t)V * sizeof *l0) == 0);
  free(s.ref);
  free(l0);
  mx_batch_destroy(b);
  g_ctx = CTX;
}

// Backend level: the cache rows 0..ctx-1 of a full slot are byte-identical before and after
// other slots' decodes (without the spare row, the parked write would clamp onto row ctx - 1).
static void test_full_slot_rows(const mx_model_t *m, const mx_backend_t *be) {
  const mx_backend_batch_t *ops = mx_backend_batch_ops(be);
  CHECK(ops != NULL);
  if (!ops) return;
  void *state = NULL;
  const int64_t ctx = 32;
  CHECK_OK(ops->create(m, &(mx_backend_config_t){.ctx = ctx, .prefill_chunk = CHUNK}, 2, &state));
  if (!state) return;
  mx_bstate_t *bs = state;
  int32_t V = m->config.vocab_size;
  float *lg = malloc((size_t)2 * V * sizeof *lg);
  int32_t ids[CHUNK];
  for (int32_t i = 0; i < CHUNK; i++) ids[i] = 5 + i;
  for (int32_t p = 0; p < ctx; p += CHUNK) CHECK_OK(ops->prefill(state, 0, ids, CHUNK, p, lg));
  size_t nb = bs->caches[0].nbytes / 2;  // one of the two slots (every cache alike here)
  uint8_t *snap = malloc((size_t)bs->n_caches * nb);
  for (int32_t j = 0; j < bs->n_caches; j++) memcpy(snap + j * nb, bs->caches[j].data, nb);
  int32_t slot = 1, tok = 7;
  for (int64_t p = 0; p < 10; p++) {
    int64_t pos = p;
    CHECK_OK(ops->decode(state, &slot, &tok, &pos, NULL, 1, lg));
  }
  // Slot 0's slice: for each kv head, rows 0..ctx-1 must be unchanged (row ctx is the spare).
  const mx_type_t *ct = &bs->caches[0].type;
  int64_t H = ct->dims[1], S = ct->dims[2], D = ct->dims[3];
  bool same = true;
  for (int32_t j = 0; j < bs->n_caches; j++)
    for (int64_t h = 0; h < H; h++) {
      size_t off = (size_t)(h * S * D) * sizeof(float);
      if (memcmp(snap + j * nb + off, bs->caches[j].data + off,
                 (size_t)(bs->ctx * D) * sizeof(float)))
        same = false;
    }
  CHECK_MSG(same, "%s: a full slot's KV rows changed while another slot decoded", be->name);
  free(snap);
  free(lg);
  ops->destroy(state);
}

// ---- API errors ----

static void test_errors(const mx_model_t *m) {
  mx_batch_t *b = NULL;
  mx_batch_opts_t o = {.ctx = 64, .prefill_chunk = 8, .n_slots = 0};
  CHECK(mx_batch_create(m, NULL, &b) == MX_ERR_INVALID_ARG && !b);
  CHECK(mx_batch_create(NULL, &o, &b) == MX_ERR_INVALID_ARG && !b);
  CHECK(mx_batch_create(m, &o, &b) == MX_ERR_INVALID_ARG && !b);
  CHECK_MSG(contains(mx_error_message(), "n_slots"), "%s", mx_error_message());
  o.n_slots = 65;
  CHECK(mx_batch_create(m, &o, &b) == MX_ERR_INVALID_ARG && !b);
  CHECK_MSG(contains(mx_error_message(), "65"), "%s", mx_error_message());
  o.n_slots = 3;
  o.backend = "nope";
  CHECK(mx_batch_create(m, &o, &b) == MX_ERR_INVALID_ARG && !b);
  CHECK_MSG(contains(mx_error_message(), "nope"), "%s", mx_error_message());
  o.backend = "cpu";
  o.ctx = m->config.max_position_embeddings + 1;
  CHECK(mx_batch_create(m, &o, &b) == MX_ERR_INVALID_ARG && !b);
  CHECK_MSG(contains(mx_error_message(), "max_position_embeddings"), "%s", mx_error_message());
  o.ctx = 64;
  o.prefill_chunk = -1;
  CHECK(mx_batch_create(m, &o, &b) == MX_ERR_INVALID_ARG && !b);
  o.prefill_chunk = 8;
  CHECK_OK(mx_batch_create(m, &o, &b));
  if (!b) return;
  CHECK(mx_batch_n_slots(b) == 3 && mx_batch_ctx(b) == 64 && mx_batch_chunk(b) == 8);
  CHECK(mx_batch_vocab(b) == m->config.vocab_size);
  CHECK(mx_batch_logits(b, 0) == NULL && mx_batch_logits(b, 3) == NULL &&
        mx_batch_logits(b, -1) == NULL);
  int32_t ids[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  // Prefill: bad slot, bad counts, bad ids, capacity.
  CHECK(mx_batch_prefill(b, 3, ids, 2) == MX_ERR_INVALID_ARG);
  CHECK_MSG(contains(mx_error_message(), "slot 3 out of range [0, 3)"), "%s", mx_error_message());
  CHECK(mx_batch_prefill(b, -1, ids, 2) == MX_ERR_INVALID_ARG);
  CHECK(mx_batch_prefill(b, 0, ids, 0) == MX_ERR_INVALID_ARG);
  CHECK(mx_batch_prefill(b, 0, ids, 9) == MX_ERR_INVALID_ARG);
  CHECK_MSG(contains(mx_error_message(), "9 tokens, expected 1..8"), "%s", mx_error_message());
  CHECK(mx_batch_prefill(b, 0, NULL, 2) == MX_ERR_INVALID_ARG);
  int32_t bad[2] = {1, 512};
  CHECK(mx_batch_prefill(b, 0, bad, 2) == MX_ERR_INVALID_ARG);
  CHECK_MSG(contains(mx_error_message(), "token id 512 at index 1"), "%s", mx_error_message());
  CHECK(mx_batch_n_past(b, 0) == 0 && mx_batch_logits(b, 0) == NULL);
  for (int i = 0; i < 7; i++) CHECK_OK(mx_batch_prefill(b, 1, ids, 8));  // 56 of 64
  CHECK(mx_batch_prefill(b, 1, ids, 8) == MX_OK);                        // 64: full
  CHECK(mx_batch_n_past(b, 1) == 64);
  CHECK_OK(mx_batch_prefill(b, 2, ids, 8));
  for (int i = 0; i < 6; i++) CHECK_OK(mx_batch_prefill(b, 2, ids, 8));  // 56
  CHECK(mx_batch_prefill(b, 2, ids, 5) == MX_OK);                        // 61
  CHECK(mx_batch_prefill(b, 2, ids, 4) == MX_ERR_INVALID_ARG);
  CHECK_MSG(contains(mx_error_message(), "4 tokens does not fit in slot 2: capacity 64, 61 tokens"),
            "%s", mx_error_message());
  CHECK(mx_batch_n_past(b, 2) == 61);
  // Decode: counts, NULLs, bad and repeated slots, a full slot, bad ids; nothing changes.
  int32_t sl[4] = {0, 2, 0, 1};
  const float *l2 = mx_batch_logits(b, 2);
  CHECK(l2 != NULL);
  CHECK(mx_batch_decode(b, sl, ids, 0) == MX_ERR_INVALID_ARG);
  CHECK(mx_batch_decode(b, sl, ids, 4) == MX_ERR_INVALID_ARG);
  CHECK_MSG(contains(mx_error_message(), "4 slots, expected 1..3"), "%s", mx_error_message());
  CHECK(mx_batch_decode(b, NULL, ids, 1) == MX_ERR_INVALID_ARG);
  CHECK(mx_batch_decode(b, sl, NULL, 1) == MX_ERR_INVALID_ARG);
  CHECK(mx_batch_decode(b, sl, ids, 3) == MX_ERR_INVALID_ARG);
  CHECK_MSG(contains(mx_error_message(), "slot 0 is named twice (index 2)"), "%s",
            mx_error_message());
  int32_t sf[2] = {2, 1};
  CHECK(mx_batch_decode(b, sf, ids, 2) == MX_ERR_INVALID_ARG);
  CHECK_MSG(contains(mx_error_message(), "slot 1 is full: capacity 64, 64 tokens"), "%s",
            mx_error_message());
  int32_t sb[2] = {2, 7};
  CHECK(mx_batch_decode(b, sb, ids, 2) == MX_ERR_INVALID_ARG);
  CHECK_MSG(contains(mx_error_message(), "slot 7 out of range"), "%s", mx_error_message());
  int32_t bid[2] = {3, -1};
  CHECK(mx_batch_decode(b, sl, bid, 2) == MX_ERR_INVALID_ARG);
  CHECK_MSG(contains(mx_error_message(), "token id -1 at index 1"), "%s", mx_error_message());
  CHECK(mx_batch_n_past(b, 0) == 0 && mx_batch_n_past(b, 2) == 61 && mx_batch_n_past(b, 1) == 64);
  CHECK(mx_batch_logits(b, 2) == l2);
  // A decode of a slot with nothing in it is valid (the sequence starts with that token).
  CHECK_OK(mx_batch_decode(b, sl, ids, 2));
  CHECK(mx_batch_n_past(b, 0) == 1 && mx_batch_n_past(b, 2) == 62);
  // Reset: only that slot; bad slots ignored.
  mx_batch_reset(b, 1);
  mx_batch_reset(b, -1);
  mx_batch_reset(b, 3);
  mx_batch_reset(NULL, 0);
  CHECK(mx_batch_n_past(b, 1) == 0 && mx_batch_logits(b, 1) == NULL);
  CHECK(mx_batch_n_past(b, 2) == 62 && mx_batch_logits(b, 2) != NULL);
  CHECK(mx_batch_n_past(b, 5) == 0 && mx_batch_n_past(NULL, 0) == 0);
  CHECK_OK(mx_batch_prefill(b, 1, ids, 8));
  CHECK(mx_batch_n_past(b, 1) == 8);
  // Rewind: a slot that keeps its first 5 tokens and goes on with others gives exactly the
  // logits of a slot that held only those 5 (the same calls), whatever followed them before.
  int32_t other[3] = {9, 9, 9};
  mx_batch_reset(b, 0);
  CHECK_OK(mx_batch_prefill(b, 0, ids, 5));
  CHECK_OK(mx_batch_prefill(b, 0, other, 3));
  mx_batch_reset(b, 1);
  CHECK_OK(mx_batch_prefill(b, 1, ids, 5));
  CHECK_OK(mx_batch_prefill(b, 1, ids + 5, 3));
  CHECK(mx_batch_rewind(b, 1, 9) == MX_ERR_INVALID_ARG);
  CHECK_MSG(contains(mx_error_message(), "slot 1 to 9 tokens: the slot holds 8"), "%s",
            mx_error_message());
  CHECK(mx_batch_rewind(b, 1, -1) == MX_ERR_INVALID_ARG);
  CHECK(mx_batch_rewind(b, 3, 1) == MX_ERR_INVALID_ARG);
  CHECK(mx_batch_rewind(NULL, 0, 0) == MX_ERR_INVALID_ARG);
  CHECK_OK(mx_batch_rewind(b, 1, 5));
  CHECK(mx_batch_n_past(b, 1) == 5 && mx_batch_logits(b, 1) == NULL);
  CHECK_OK(mx_batch_prefill(b, 1, other, 3));
  const float *l0 = mx_batch_logits(b, 0), *l1 = mx_batch_logits(b, 1);
  CHECK(l0 && l1 && memcmp(l0, l1, (size_t)mx_batch_vocab(b) * sizeof *l0) == 0);
  CHECK_OK(mx_batch_rewind(b, 1, 0));
  CHECK(mx_batch_n_past(b, 1) == 0 && mx_batch_logits(b, 1) == NULL);
  CHECK(mx_batch_prefill(NULL, 0, ids, 1) == MX_ERR_INVALID_ARG);
  CHECK(mx_batch_decode(NULL, sl, ids, 1) == MX_ERR_INVALID_ARG);
  CHECK(mx_batch_n_slots(NULL) == 0 && mx_batch_ctx(NULL) == 0);
  mx_batch_destroy(b);
  mx_batch_destroy(NULL);
}

// ---- A backend without batch operations: mx_batch runs one state per slot ----

static mx_backend_t g_plain;  // the interp vtable under another name

static void test_plain_backend(const mx_model_t *m) {
  g_plain = mx_backend_interp;
  g_plain.name = "interp-plain";
  g_plain.batch = NULL;
  CHECK_OK(mx_backend_register(&g_plain));
  CHECK(mx_backend_batch_ops(&g_plain) == NULL);
  test_identity(m, "interp-plain", NULL, true);
}

// ---- Greedy tokens against upstream llama2.c ----

static void test_reference(const mx_model_t *m) {
  const char *shared = getenv("MX_SHARED");
  char path[4096];
  char *text = NULL;
  size_t len = 0;
  if (shared) snprintf(path, sizeof path, "%s/models/stories260K/reference-greedy.json", shared);
  if (!shared || mx_read_file(path, &text, &len) != MX_OK) {
    mx_test_skip("llama2.c greedy reference: MX_SHARED unset or %s unreadable",
                 shared ? path : "reference-greedy.json");
    return;
  }
  cJSON *root = cJSON_ParseWithLength(text, len);
  const cJSON *runs = cJSON_GetObjectItem(root, "runs");
  int nr = cJSON_GetArraySize(runs);
  if (nr > 3) nr = 3;
  stream_t st[3];
  memset(st, 0, sizeof st);
  int32_t *ref[3] = {0};
  int32_t nref[3] = {0};
  int n = 0;
  for (int r = 0; r < nr; r++) {
    const cJSON *run = cJSON_GetArrayItem(runs, r);
    const cJSON *pt = cJSON_GetObjectItem(run, "prompt_tokens"),
                *tk = cJSON_GetObjectItem(run, "tokens");
    int np = cJSON_GetArraySize(pt), nt = cJSON_GetArraySize(tk);
    if (np < 1 || np > 64 || nt <= np) continue;
    stream_t *s = &st[n];
    for (int i = 0; i < np; i++) s->prompt[i] = cJSON_GetArrayItem(pt, i)->valueint;
    s->n_prompt = np;
    s->n_gen = CTX - np < nt - np ? CTX - np : nt - np;
    if (s->n_gen > MAX_GEN) s->n_gen = MAX_GEN;
    s->slot = n;
    s->start = n * 3;
    s->period = 1;
    ref[n] = malloc((size_t)nt * sizeof(int32_t));
    for (int i = 0; i < nt; i++) ref[n][i] = cJSON_GetArrayItem(tk, i)->valueint;
    nref[n] = nt;
    reference(m, "cpu", s);
    n++;
  }
  mx_batch_t *b = new_batch(m, "cpu", 3);
  if (b) run_streams(b, st, n);
  check_streams("cpu llama2.c runs together", st, n);
  for (int i = 0; i < n; i++) {
    // The batch's logits equal the session's (checked above), so its greedy ids are the
    // session's ids; compare those with llama2.c. run.c stops at BOS (id 1).
    int32_t first_bad = -1, k = 0;
    for (; k < st[i].n_gen && st[i].n_prompt + k < nref[i]; k++) {
      int32_t want = ref[i][st[i].n_prompt + k];
      if (st[i].ref_tokens[k] != want) {
        first_bad = k;
        break;
      }
    }
    CHECK_MSG(first_bad < 0, "llama2.c run %d: greedy token %d is %d, llama2.c %d", i, first_bad,
              first_bad >= 0 ? st[i].ref_tokens[first_bad] : 0,
              first_bad >= 0 ? ref[i][st[i].n_prompt + first_bad] : 0);
    printf("llama2.c run %d: %d greedy tokens equal (batched with %d others)\n", i, k, n - 1);
    free(ref[i]);
    free(st[i].ref);
  }
  mx_batch_destroy(b);
  cJSON_Delete(root);
  free(text);
}

// ---- No allocation in prefill / decode (cpu) ----

static void test_no_alloc(const mx_model_t *m) {
  mx_batch_t *b = new_batch(m, "cpu", 4);
  if (!b) return;
  int32_t ids[CHUNK];
  for (int32_t i = 0; i < CHUNK; i++) ids[i] = 3 + i;
  int32_t slots[4] = {0, 1, 2, 3}, toks[4] = {5, 6, 7, 8};
  CHECK_OK(mx_batch_prefill(b, 0, ids, CHUNK));  // first calls may size the attention scratch
  CHECK_OK(mx_batch_decode(b, slots, toks, 4));
  long a0 = g_allocs;
  CHECK_OK(mx_batch_prefill(b, 1, ids, 13));
  for (int k = 0; k < 10; k++) CHECK_OK(mx_batch_decode(b, slots, toks, 1 + k % 4));
  mx_batch_reset(b, 2);
  CHECK_OK(mx_batch_prefill(b, 2, ids, 3));
  long a1 = g_allocs;
  if (COUNT_ALLOCS)
    CHECK_MSG(a1 == a0, "%ld allocations in batch prefill / decode", a1 - a0);
  else
    printf("note: allocation count (not glibc or sanitized build)\n");
  mx_batch_destroy(b);
}

// ---- mx_cpu_gemv_packed_rows_f32 == mx_cpu_gemv_packed_f32 per row, bit for bit ----

static void test_rows_kernel(void) {
  static const int64_t shapes[][2] = {{37, 5}, {64, 130}, {100, 301}, {33, 3}, {40, 0}, {96, 576}};
  static const int64_t ms[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 64};
  uint64_t seed = 7;
  for (int isa = 0; isa < MX_CPU_ISA_COUNT; isa++) {
    const mx_cpu_kernels_t *kt = mx_cpu_kernels_get((mx_cpu_isa_t)isa);
    if (!kt) {
      printf("note: rows kernel on %s (not on this machine)\n", mx_cpu_isa_name((mx_cpu_isa_t)isa));
      continue;
    }
    int bad = 0, checked = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      int64_t n = shapes[si][0], k = shapes[si][1], ldx = k + 3, ldy = n + 5;
      float *w = malloc((size_t)(n * (k ? k : 1)) * sizeof *w);
      float *x = malloc((size_t)(64 * ldx) * sizeof *x);
      float *y = malloc((size_t)(64 * ldy) * sizeof *y), *y1 = malloc((size_t)n * sizeof *y1);
      for (int64_t i = 0; i < n * k; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        w[i] = (float)((int64_t)(seed >> 40) - (1 << 23)) / (float)(1 << 22);
      }
      for (int64_t i = 0; i < 64 * ldx; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((int64_t)(seed >> 40) - (1 << 23)) / (float)(1 << 20);
      }
      mx_cpu_packed_t *pk = NULL;
      CHECK_OK(mx_cpu_pack_f32(kt, NULL, w, k, n, k, &pk));
      for (size_t mi = 0; pk && mi < sizeof ms / sizeof ms[0]; mi++) {
        int64_t m = ms[mi];
        for (int nth = 1; nth <= 3; nth++) {
          for (int64_t i = 0; i < 64 * ldy; i++) y[i] = -1.0f;
          for (int ith = 0; ith < nth; ith++)
            mx_cpu_gemv_packed_rows_f32(pk, x, ldx, y, ldy, m, ith, nth);
          for (int64_t r = 0; r < m; r++) {
            mx_cpu_gemv_packed_f32(pk, x + r * ldx, y1, 0, 1);
            checked++;
            if (memcmp(y1, y + r * ldy, (size_t)n * sizeof *y1) != 0 || y[r * ldy + n] != -1.0f) {
              if (bad++ < 3)
                fprintf(stderr, "rows kernel %s: n %lld k %lld m %lld nth %d row %lld differs\n",
                        mx_cpu_isa_name((mx_cpu_isa_t)isa), (long long)n, (long long)k,
                        (long long)m, nth, (long long)r);
            }
          }
        }
      }
      mx_cpu_packed_destroy(pk);
      free(w), free(x), free(y), free(y1);
    }
    CHECK_MSG(bad == 0, "rows kernel %s: %d of %d rows differ from the GEMV",
              mx_cpu_isa_name((mx_cpu_isa_t)isa), bad, checked);
  }
}

int main(void) {
  unsetenv("MLXCEL_BACKEND");
  unsetenv("MLXCEL_XLA_CONTEXT_CAPACITY");
  unsetenv("MLXCEL_THREADS");
  const char *data = getenv("MX_TEST_DATA");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/../../models/stories260K", data ? data : "tests/data");
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(dir, &m));
  if (!m) return mx_test_finish();
  test_rows_kernel();
  test_errors(m);
  test_identity(m, "cpu", "1", false);
  test_identity(m, "cpu", "2", false);
  test_identity(m, "interp", NULL, true);
  test_full_slot(m, "cpu");
  test_full_slot(m, "interp");
  test_full_slot_rows(m, &mx_backend_cpu);
  test_full_slot_rows(m, &mx_backend_interp);
  test_plain_backend(m);
  test_reference(m);
  test_no_alloc(m);
  mx_model_free(m);
  // Multi-latent attention: a layer's two caches differ in shape (the latent and the rotated
  // key, ADR 0012), so each has its own slot size in the batch's caches.
  snprintf(dir, sizeof dir, "%s/families/deepseek_v2", data ? data : "tests/data");
  mx_model_load_opts_t lo = {.tokenizer_optional = true};
  CHECK_OK(mx_model_load_ex(dir, &lo, &m));
  if (!m) return mx_test_finish();
  g_id_span = m->config.vocab_size - 3;
  test_identity(m, "cpu", "2", true);
  mx_model_free(m);
  return mx_test_finish();
}
