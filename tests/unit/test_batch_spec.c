// Speculative decoding of batch slots (ADR 0024): mx_batch_prefill_all's logits against a
// session's all-logits prefill, and a slot that drafts by prompt lookup and verifies in its own
// calls while another slot decodes plainly in the batched calls: greedy ids equal to plain
// decoding, seeded sampled ids equal to mx_generate's speculative run (the same acceptance and
// the same random draws), on stories260K and a family fixture, on cpu and interp; the same with
// a draft model (stories260K's int8 copy) through a batch drafter; the errors.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/batch.h"
#include "mlxcel/session.h"
#include "mx_test.h"

enum { MAX_IDS = 256 };

static char g_repo[4096];
static uint32_t g_rng = 777;
static uint32_t rnd(uint32_t n) {
  g_rng = g_rng * 1664525u + 1013904223u;
  return (g_rng >> 8) % n;
}

// A prompt with repeats (a random segment, then noisy copies of it), so that lookup drafts.
static int32_t make_prompt(int32_t vocab, int32_t bos, int32_t *p) {
  int32_t seg = 3 + (int32_t)rnd(8), n = 0, reps = 2 + (int32_t)rnd(2);
  if (bos > 0) p[n++] = bos;
  int32_t start = n;
  for (int32_t i = 0; i < seg; i++) p[n++] = 3 + (int32_t)rnd((uint32_t)vocab - 3);
  for (int32_t r = 0; r < reps; r++)
    for (int32_t i = 0; i < seg; i++)
      p[n++] = rnd(6) == 0 ? 3 + (int32_t)rnd((uint32_t)vocab - 3) : p[start + i];
  return n;
}

typedef struct collect {
  int32_t ids[MAX_IDS];
  int32_t n;
} collect_t;

static bool on_token(void *user, int32_t id, const char *text, size_t len) {
  (void)text;
  (void)len;
  collect_t *c = user;
  if (id >= 0 && c->n < MAX_IDS) c->ids[c->n++] = id;
  return true;
}

static void sampling(mx_sampler_params_t *p, bool greedy, uint64_t seed) {
  mx_sampler_params_default(p);
  p->temperature = greedy ? 0.0f : 0.9f;
  p->top_p = 1.0f;
  p->top_k = greedy ? 0 : 20;
  p->repetition_penalty = greedy ? 1.0f : 1.1f;
  p->seed = seed;
}

// One slot of the batch: its ids (prompt then generated), its sampler, its speculative state.
typedef struct slot_run {
  int32_t ids[MAX_IDS + 40];
  int32_t n_prompt, n, max_tokens;
  mx_sampler_t *smp;
  mx_batch_spec_t *sp;  // NULL: plain decoding
  int32_t steps, drafted, accepted;
} slot_run_t;

// Prefills `slot` with the run's prompt and samples its first token.
static void start(mx_batch_t *b, int32_t slot, slot_run_t *r) {
  mx_batch_reset(b, slot);
  for (int32_t off = 0, c = mx_batch_chunk(b); off < r->n_prompt; off += c)
    CHECK_OK(
        mx_batch_prefill(b, slot, r->ids + off, r->n_prompt - off < c ? r->n_prompt - off : c));
  r->n = r->n_prompt;
  const float *l = mx_batch_logits(b, slot);
  if (!l) return;
  r->ids[r->n] = mx_sampler_sample(r->smp, l, r->ids, r->n);
  r->n++;
}

static bool done(const slot_run_t *r) { return r->n - r->n_prompt >= r->max_tokens; }

// Runs two slots to max_tokens each, speculating where they have a state (r->sp): their drafts
// made together each step (mx_batch_spec_draft_many: a drafter's calls shared by both slots),
// each verified in its own call; the others share one mx_batch_decode call per step, as the
// server's scheduler runs them.
static void run_pair(mx_batch_t *b, slot_run_t *r0, slot_run_t *r1) {
  start(b, 0, r0);
  start(b, 1, r1);
  slot_run_t *runs[2] = {r0, r1};
  for (int guard = 0; guard < 4 * MAX_IDS && (!done(r0) || !done(r1)); guard++) {
    mx_batch_spec_t *sps[2];
    const int32_t *hist[2];
    int32_t dslots[2], ns[2], limits[2], ms[2] = {0, 0}, nd = 0;
    for (int32_t s = 0; s < 2; s++) {
      slot_run_t *r = runs[s];
      if (done(r) || !r->sp) continue;
      sps[nd] = r->sp;
      hist[nd] = r->ids;
      dslots[nd] = s;
      ns[nd] = r->n;
      limits[nd++] = (int32_t)(mx_batch_ctx(b) - r->n);
      r->steps++;
    }
    CHECK_OK(mx_batch_spec_draft_many(sps, dslots, hist, ns, limits, nd, ms));
    int32_t slots[2], ids[2], n = 0;
    for (int32_t s = 0; s < 2; s++) {
      slot_run_t *r = runs[s];
      if (done(r)) continue;
      int32_t m = 0;
      for (int32_t d = 0; d < nd; d++)
        if (dslots[d] == s) m = ms[d];
      if (m == 0) {
        slots[n] = s;
        ids[n++] = r->ids[r->n - 1];
        continue;
      }
      int32_t out[MX_SPEC_MAX_TOKENS + 1], n_out = 0;
      mx_status_t st = mx_batch_spec_verify(b, s, r->sp, r->smp, r->ids, r->n, m, out, &n_out);
      CHECK_MSG(st == MX_OK, "verify: %s", mx_error_message());
      if (st) return;
      r->drafted += m;
      r->accepted += n_out - 1;
      CHECK(mx_batch_n_past(b, s) == r->n - 1 + n_out);
      for (int32_t i = 0; i < n_out && !done(r); i++) r->ids[r->n++] = out[i];
    }
    if (n == 0) continue;
    CHECK_OK(mx_batch_decode(b, slots, ids, n));
    for (int32_t i = 0; i < n; i++) {
      slot_run_t *r = runs[slots[i]];
      r->ids[r->n] = mx_sampler_sample(r->smp, mx_batch_logits(b, slots[i]), r->ids, r->n);
      r->n++;
    }
  }
}

static void init_run(slot_run_t *r, const int32_t *prompt, int32_t np, int32_t max_tokens,
                     bool greedy, uint64_t seed, mx_batch_spec_t *sp, int32_t vocab) {
  memset(r, 0, sizeof *r);
  memcpy(r->ids, prompt, (size_t)np * sizeof *prompt);
  r->n_prompt = np;
  r->max_tokens = max_tokens;
  r->sp = sp;
  mx_sampler_params_t p;
  sampling(&p, greedy, seed);
  CHECK_OK(mx_sampler_create(&p, vocab, &r->smp));
}

static bool same_ids(const slot_run_t *a, const int32_t *ids, int32_t n) {
  return a->n - a->n_prompt == n && memcmp(a->ids + a->n_prompt, ids, (size_t)n * sizeof *ids) == 0;
}

// mx_batch_prefill_all on a slot against the session's all-logits prefill of the same tokens.
static void check_all_logits(const char *what, const mx_model_t *m, mx_batch_t *b,
                             mx_session_t *s) {
  int32_t V = mx_batch_vocab(b), ids[8];
  for (int32_t i = 0; i < 8; i++) ids[i] = 3 + (int32_t)rnd((uint32_t)V - 3);
  ids[0] = m->config.bos_token_id > 0 ? m->config.bos_token_id : ids[0];
  float *a = malloc(8 * (size_t)V * sizeof *a), *c = malloc(8 * (size_t)V * sizeof *c);
  if (!a || !c) {
    CHECK(false);
    free(a);
    free(c);
    return;
  }
  mx_batch_reset(b, 0);
  mx_session_reset(s);
  // 3 then 5 tokens: a power-of-two piece and a decomposed one (4 + 1) after a prefix.
  CHECK_OK(mx_batch_prefill_all(b, 0, ids, 3, a));
  CHECK_OK(mx_batch_prefill_all(b, 0, ids + 3, 5, a + 3 * (size_t)V));
  CHECK_OK(mx_session_prefill(s, ids, 3, c));
  CHECK_OK(mx_session_prefill(s, ids + 3, 5, c + 3 * (size_t)V));
  double worst = 0;
  for (size_t i = 0; i < 8 * (size_t)V; i++) {
    double d = fabs((double)a[i] - (double)c[i]);
    if (!(d <= worst)) worst = d;
  }
  const float *last = mx_batch_logits(b, 0);
  CHECK(last && memcmp(last, a + 7 * (size_t)V, (size_t)V * sizeof *a) == 0);
  CHECK(mx_batch_n_past(b, 0) == 8);
  CHECK_MSG(worst <= 1e-5, "%s: batch all-logits differ from the session's by %g", what, worst);
  printf("%s: batch all-logits vs session: %g\n", what, worst);
  free(a);
  free(c);
}

// Slot 0 speculating beside a plain slot 1, n_prompts times on the same slots (each run a new
// sequence in them): by prompt lookup, or with `draft` (may be NULL) drafting through a batch
// drafter against mx_generate's draft-model session.
static void check_model(const char *what, const mx_model_t *m, const mx_model_t *draft,
                        const char *backend, int64_t ctx, int32_t n_prompts) {
  mx_batch_opts_t bo = {.backend = backend, .ctx = ctx, .n_slots = 3};
  mx_batch_t *b = NULL;
  CHECK_OK(mx_batch_create(m, &bo, &b));
  mx_session_opts_t so = {.backend = backend, .ctx = ctx};
  mx_session_t *s = NULL, *ds = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  mx_batch_drafter_t *dr = NULL;
  if (draft && b) {
    mx_batch_opts_t dbo = {.backend = backend};
    CHECK_OK(mx_batch_drafter_create(b, draft, &dbo, &dr));
    CHECK_OK(mx_session_create(draft, &so, &ds));
  }
  if (!b || !s || (draft && (!dr || !ds))) {
    mx_batch_drafter_destroy(dr);
    mx_session_destroy(ds);
    mx_batch_destroy(b);
    mx_session_destroy(s);
    return;
  }
  if (!draft) check_all_logits(what, m, b, s);
  const int32_t V = m->config.vocab_size, bos = m->config.bos_token_id;
  int32_t mism = 0, drafted = 0, accepted = 0, checked = 0;
  for (int32_t i = 0; i < n_prompts; i++) {
    int32_t p0[64], p1[64];
    int32_t n0 = make_prompt(V, bos, p0), n1 = make_prompt(V, bos, p1);
    // Long enough for a model's own text to recur (stories260K's does, after a while).
    int32_t max0 = 30 + (int32_t)rnd(40), max1 = 6 + (int32_t)rnd(20);
    bool greedy = i % 3 != 2;
    uint64_t seed = 1000 + (uint64_t)i;
    mx_batch_spec_t *sp = NULL, *sp1 = NULL;
    CHECK_OK(mx_batch_spec_create(b, dr, 1 + i % 7, 1 + i % 3, &sp));
    // With a draft model, greedy runs draft for both slots in shared calls (a sampled run's
    // neighbour stays plain: its drafts are then exactly a lone session's, as the comparison
    // with mx_generate needs).
    if (dr && greedy) CHECK_OK(mx_batch_spec_create(b, dr, 2 + i % 4, 0, &sp1));
    if (!sp || (dr && greedy && !sp1)) {
      mx_batch_spec_destroy(sp);
      break;
    }
    // The reference: plain decoding of both prompts (greedy), or mx_generate's speculative run
    // of prompt 0 on a session with the same seed (sampled).
    slot_run_t a0, a1, c0, c1;
    init_run(&a0, p0, n0, max0, greedy, seed, NULL, V);
    init_run(&a1, p1, n1, max1, true, 0, NULL, V);
    run_pair(b, &a0, &a1);
    init_run(&c0, p0, n0, max0, greedy, seed, sp, V);
    init_run(&c1, p1, n1, max1, true, 0, sp1, V);
    run_pair(b, &c0, &c1);
    bool same = same_ids(&c1, a1.ids + n1, max1);  // the plain neighbour is unaffected
    if (greedy) {
      same = same && same_ids(&c0, a0.ids + n0, max0);
    } else {
      collect_t g = {.n = 0};
      mx_generate_opts_t go = {.max_tokens = max0, .ignore_eos = true};
      sampling(&go.sampling, false, seed);
      go.spec = (mx_spec_opts_t){.mode = dr ? MX_SPEC_DRAFT : MX_SPEC_NGRAM,
                                 .draft_tokens = mx_batch_spec_tokens(sp),
                                 .ngram_max = 1 + i % 3,
                                 .draft = ds};
      mx_session_reset(s);
      CHECK_OK(mx_generate(s, NULL, p0, n0, &go, on_token, &g, NULL));
      same = same && same_ids(&c0, g.ids, g.n);
    }
    if (!same && mism++ == 0) {
      fprintf(stderr, "%s on %s%s: prompt %d (%s, k %d) differs:", what, backend,
              dr ? " with a draft model" : "", i, greedy ? "greedy" : "sampled",
              mx_batch_spec_tokens(sp));
      for (int32_t j = 0; j < max0 && j < c0.n - n0; j++)
        fprintf(stderr, " %d/%d", a0.ids[n0 + j], c0.ids[n0 + j]);
      fprintf(stderr, "\n");
    }
    checked++;
    drafted += c0.drafted + c1.drafted;
    accepted += c0.accepted + c1.accepted;
    mx_sampler_destroy(a0.smp);
    mx_sampler_destroy(a1.smp);
    mx_sampler_destroy(c0.smp);
    mx_sampler_destroy(c1.smp);
    mx_batch_spec_destroy(sp);
    mx_batch_spec_destroy(sp1);
  }
  const char *how = dr ? " with a draft model" : "";
  CHECK_MSG(mism == 0, "%s on %s%s: %d of %d prompts differ", what, backend, how, mism, checked);
  // Every run accepts some drafts; the longer ones must also have rejected some.
  CHECK_MSG(accepted > 0 && (n_prompts < 4 || drafted > accepted),
            "%s on %s%s: %d of %d drafts accepted", what, backend, how, accepted, drafted);
  printf("%s on %s%s: %d prompts equal, %d of %d drafts accepted\n", what, backend, how,
         checked - mism, accepted, drafted);
  mx_batch_drafter_destroy(dr);
  mx_session_destroy(ds);
  mx_session_destroy(s);
  mx_batch_destroy(b);
}

static mx_model_t *load(const char *dir, bool tokenizer_optional) {
  mx_model_load_opts_t lo = {.tokenizer_optional = tokenizer_optional};
  mx_model_t *m = NULL;
  mx_status_t st = mx_model_load_ex(dir, &lo, &m);
  CHECK_MSG(st == MX_OK, "%s: %s", dir, mx_error_message());
  return m;
}

static void test_errors(const mx_model_t *m) {
  mx_batch_opts_t bo = {.backend = "cpu", .ctx = 64, .n_slots = 2, .prefill_chunk = 4};
  mx_batch_t *b = NULL;
  CHECK_OK(mx_batch_create(m, &bo, &b));
  if (!b) return;
  mx_batch_spec_t *sp = NULL;
  EXPECT_ERR(mx_batch_spec_create(b, NULL, 33, 0, &sp), "draft_tokens must be in 1..32");
  EXPECT_ERR(mx_batch_spec_create(b, NULL, 0, -2, &sp), "ngram_max must be in 1..32");
  CHECK(sp == NULL);
  CHECK_OK(mx_batch_spec_create(b, NULL, 9, 0, &sp));
  CHECK(mx_batch_spec_tokens(sp) == 3);  // k + 1 within the prefill chunk of 4
  int32_t hist[64] = {1, 5, 6, 7, 5, 6};
  CHECK_OK(mx_batch_prefill(b, 0, hist, 4));
  CHECK_OK(mx_batch_prefill(b, 0, hist + 4, 1));
  // "5 6" recurs: what followed it (7 5 6) is the draft, kept in sp, not yet in hist.
  int32_t m_ = 0;
  CHECK_OK(mx_batch_spec_draft(sp, 0, hist, 6, 32, &m_));
  CHECK(m_ == 3 && hist[6] == 0);
  int32_t out[8], n_out = 0;
  mx_sampler_params_t p;
  sampling(&p, true, 0);
  mx_sampler_t *smp = NULL;
  CHECK_OK(mx_sampler_create(&p, mx_batch_vocab(b), &smp));
  EXPECT_ERR(mx_batch_spec_verify(b, 0, sp, smp, hist, 5, m_, out, &n_out), "a history of 5");
  EXPECT_ERR(mx_batch_spec_verify(b, 0, sp, smp, hist, 6, 4, out, &n_out), "4 drafts of 3");
  CHECK_OK(mx_batch_spec_verify(b, 0, sp, smp, hist, 6, m_, out, &n_out));
  CHECK(hist[6] == 7 && hist[7] == 5 && hist[8] == 6);
  CHECK(n_out >= 1 && n_out <= 4 && mx_batch_n_past(b, 0) == 5 + n_out);
  float all[4];
  EXPECT_ERR(mx_batch_prefill_all(b, 1, hist, 5, all), "expected 1..4");
  mx_sampler_destroy(smp);
  mx_batch_spec_destroy(sp);
  // A drafter needs the model's tokenizer and follows the model's slots.
  char dir[4400];
  snprintf(dir, sizeof dir, "%s/tests/data/families/llava", g_repo);
  mx_model_t *other = load(dir, false);
  mx_batch_drafter_t *dr = NULL;
  mx_batch_opts_t dbo = {.backend = "cpu"};
  if (other)
    EXPECT_ERR(mx_batch_drafter_create(b, other, &dbo, &dr),
               "speculative decoding needs the same tokenizer");
  dbo.n_slots = 3;
  EXPECT_ERR(mx_batch_drafter_create(b, m, &dbo, &dr), "needs the model's 2 slots of 64 tokens");
  CHECK(dr == NULL);
  mx_model_free(other);
  mx_batch_destroy(b);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  if (!data) {
    fprintf(stderr, "MX_TEST_DATA is not set (ctest sets it to tests/data)\n");
    return 1;
  }
  snprintf(g_repo, sizeof g_repo, "%s/../..", data);
  char dir[4400];
  snprintf(dir, sizeof dir, "%s/models/stories260K", g_repo);
  mx_model_t *m = load(dir, false);
  // Its int8 copy drafts for it: the same tokenizer, different logits (rejections happen).
  mx_model_load_opts_t q8 = {.quant = MX_QUANT_INT8};
  mx_model_t *dm = NULL;
  CHECK_OK(mx_model_load_ex(dir, &q8, &dm));
  if (m) {
    test_errors(m);
    check_model("stories260K", m, NULL, "cpu", 160, 8);
    check_model("stories260K", m, NULL, "interp", 160, 2);
    if (dm) {
      check_model("stories260K", m, dm, "cpu", 160, 8);
      check_model("stories260K", m, dm, "interp", 160, 2);
    }
  }
  mx_model_free(dm);
  mx_model_free(m);
  snprintf(dir, sizeof dir, "%s/tests/data/families/smollm3", g_repo);
  m = load(dir, true);
  if (m) {
    check_model("smollm3", m, NULL, "cpu", 128, 4);
    check_model("smollm3", m, NULL, "interp", 128, 2);
    mx_model_free(m);
  }
  return mx_test_finish();
}
