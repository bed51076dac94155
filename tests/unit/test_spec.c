// Speculative decoding (ADR 0020): prompt lookup's drafts, greedy output equal to plain
// decoding on stories260K and family fixtures on the interp and cpu backends (n-gram drafts and
// a draft model), the sampled output's distribution against the exact one (chi-square over
// every 4-token continuation of a fake model), and the errors.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/grammar.h"
#include "mlxcel/session.h"
#include "mlxcel/tokenizer.h"
#include "mx_test.h"
#include "session/session_internal.h"
#include "session/spec.h"

// ---- Prompt lookup ----

static void test_ngram(void) {
  int32_t out[8];
  // ... 5 6 7 | 9 ... 5 6 7 | 8 ... then "6 7": the latest "5 6 7" is followed by 8.
  const int32_t a[] = {1, 5, 6, 7, 9, 2, 5, 6, 7, 8, 3, 5, 6};
  int32_t n = mx_spec_ngram(a, 13, 7, 3, 4, out);
  CHECK(n == 4 && out[0] == 8 && out[1] == 3 && out[2] == 5 && out[3] == 6);
  // k clips the draft; the draft may run into the suffix itself.
  CHECK(mx_spec_ngram(a, 13, 7, 3, 2, out) == 2 && out[0] == 8 && out[1] == 3);
  // The longest suffix wins over a later shorter match: "4 1 2" recurs at the start only,
  // "1 2" recurs later too.
  const int32_t b[] = {4, 1, 2, 10, 11, 1, 2, 12, 4, 1};
  n = mx_spec_ngram(b, 10, 2, 3, 2, out);
  CHECK(n == 2 && out[0] == 10 && out[1] == 11);
  // ngram_max 2: "1 2" matches its latest occurrence.
  n = mx_spec_ngram(b, 10, 2, 2, 2, out);
  CHECK(n == 2 && out[0] == 12 && out[1] == 4);
  // A loop of period 2: the latest "2 1 2" is followed by 2 tokens, an older one by 4.
  const int32_t e[] = {1, 2, 1, 2, 1, 2, 1};
  n = mx_spec_ngram(e, 7, 2, 3, 4, out);
  CHECK(n == 4 && out[0] == 1 && out[1] == 2 && out[2] == 1 && out[3] == 2);
  // Nothing recurs: no draft; a one-token context has nothing earlier to match.
  const int32_t c[] = {1, 2, 3};
  CHECK(mx_spec_ngram(c, 3, 4, 3, 4, out) == 0);
  CHECK(mx_spec_ngram(c, 0, 4, 3, 4, out) == 0);
  // A repeated token: "9 9" recurs one token earlier, followed by the last 9 only.
  const int32_t d[] = {9, 9};
  CHECK(mx_spec_ngram(d, 2, 9, 3, 4, out) == 1 && out[0] == 9);
}

// ---- A fake model: the logits after token id at position pos are a fixed function ----

enum { FV = 4, FAKE_CTX = 64 };

static void fake_logits(int32_t id, int64_t pos, float *l) {
  for (int32_t v = 0; v < FV; v++)
    l[v] = 0.8f * (float)(((id + 1) * (v + 2) + (int32_t)pos * (v + 1)) % 5) - 1.0f;
}

static mx_status_t fake_create(const mx_model_t *m, const mx_backend_config_t *cfg, void **st) {
  (void)m;
  (void)cfg;
  *st = malloc(1);
  return *st ? MX_OK : MX_ERR_NOMEM;
}
static mx_status_t fake_prefill(void *st, const int32_t *ids, int32_t n, int64_t pos0, float *last,
                                float *all) {
  (void)st;
  for (int32_t t = 0; all && t < n; t++) fake_logits(ids[t], pos0 + t, all + (size_t)t * FV);
  fake_logits(ids[n - 1], pos0 + n - 1, last);
  return MX_OK;
}
static mx_status_t fake_decode(void *st, int32_t id, int64_t pos, float *logits) {
  (void)st;
  fake_logits(id, pos, logits);
  return MX_OK;
}
static void fake_reset(void *st) { (void)st; }
static void fake_destroy(void *st) { free(st); }

static const mx_backend_t g_fake = {.name = "spec-fake",
                                    .caps = MX_CAP_PREFILL_ALL_LOGITS,
                                    .create = fake_create,
                                    .prefill = fake_prefill,
                                    .decode = fake_decode,
                                    .reset = fake_reset,
                                    .destroy = fake_destroy};
static const mx_backend_t g_fake_nolog = {.name = "spec-fake-nolog",
                                          .create = fake_create,
                                          .prefill = fake_prefill,
                                          .decode = fake_decode,
                                          .reset = fake_reset,
                                          .destroy = fake_destroy};

static mx_model_t g_fake_model;

// The distribution the sampler draws from these logits: softmax(l / T) over the top_k.
static void sampler_probs(const float *l, float temp, int32_t top_k, double *p) {
  double sum = 0.0;
  for (int32_t v = 0; v < FV; v++) {
    int32_t rank = 0;
    for (int32_t u = 0; u < FV; u++) rank += l[u] > l[v] || (l[u] == l[v] && u < v);
    p[v] = top_k > 0 && rank >= top_k ? 0.0 : exp((double)l[v] / temp);
    sum += p[v];
  }
  for (int32_t v = 0; v < FV; v++) p[v] /= sum;
}

typedef struct collect {
  int32_t ids[64];
  int32_t n;
} collect_t;

static bool on_token(void *user, int32_t id, const char *text, size_t len) {
  (void)text;
  (void)len;
  collect_t *c = user;
  if (id >= 0 && c->n < 64) c->ids[c->n++] = id;
  return true;
}

// The chi-square statistic's 0.1% critical value for dof degrees of freedom (Wilson-Hilferty).
static double chi2_critical(int32_t dof) {
  double a = 2.0 / (9.0 * dof);
  double c = 1.0 - a + 3.090 * sqrt(a);
  return dof * c * c * c;
}

// Every 4-token continuation of a repetitive prompt, drawn `draws` times with n-gram drafting
// (always a draft: every token of the 4-token vocabulary recurs), against the exact joint
// distribution of plain sampling. Cells expected below 5 draws are pooled.
static void check_distribution(float temp, int32_t top_k, int32_t k) {
  enum { L = 4, CELLS = FV * FV * FV * FV, DRAWS = 20000 };
  const int32_t prompt[] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1};
  const int32_t np = 10;
  static double expect[CELLS];
  static int32_t count[CELLS];
  for (int32_t c = 0; c < CELLS; c++) {
    double pr = 1.0;
    int32_t prev = prompt[np - 1];
    for (int32_t i = 0; i < L; i++) {
      float l[FV];
      double p[FV];
      fake_logits(prev, np - 1 + i, l);
      sampler_probs(l, temp, top_k, p);
      int32_t x = c / (int32_t)pow(FV, L - 1 - i) % FV;
      pr *= p[x];
      prev = x;
    }
    expect[c] = pr * DRAWS;
    count[c] = 0;
  }
  mx_session_opts_t so = {.backend = "spec-fake", .ctx = FAKE_CTX};
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(&g_fake_model, &so, &s));
  if (!s) return;
  mx_generate_opts_t go = {.max_tokens = L, .ignore_eos = true};
  mx_sampler_params_default(&go.sampling);
  go.sampling.temperature = temp;
  go.sampling.top_k = top_k;
  go.spec = (mx_spec_opts_t){.mode = MX_SPEC_NGRAM, .draft_tokens = k};
  int32_t drafted = 0, accepted = 0, bad = 0;
  for (int32_t d = 0; d < DRAWS; d++) {
    mx_session_reset(s);
    go.sampling.seed = 1000 + (uint64_t)d;
    collect_t col = {.n = 0};
    mx_generate_stats_t st;
    if (mx_generate(s, NULL, prompt, np, &go, on_token, &col, &st) != MX_OK || col.n != L) {
      bad++;
      continue;
    }
    drafted += st.spec_drafted;
    accepted += st.spec_accepted;
    int32_t c = 0;
    for (int32_t i = 0; i < L; i++) c = c * FV + col.ids[i];
    count[c]++;
  }
  mx_session_destroy(s);
  CHECK_MSG(bad == 0, "%d generations failed: %s", bad, mx_error_message());
  // Both ways out of a step happen often: accepted drafts and rejected ones.
  CHECK_MSG(accepted > DRAWS / 4 && drafted - accepted > DRAWS / 4,
            "%d of %d drafts accepted: the test does not exercise both paths", accepted, drafted);
  double chi2 = 0.0, pool_e = 0.0, pool_o = 0.0;
  int32_t used = 0;
  for (int32_t c = 0; c < CELLS; c++) {
    if (expect[c] < 5.0) {
      pool_e += expect[c];
      pool_o += count[c];
      continue;
    }
    double dlt = count[c] - expect[c];
    chi2 += dlt * dlt / expect[c];
    used++;
  }
  if (pool_e > 0.0) {
    chi2 += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
    used++;
  }
  double crit = chi2_critical(used - 1);
  CHECK_MSG(chi2 < crit, "temp %g top_k %d k %d: chi-square %.1f over %d cells >= %.1f", temp,
            top_k, k, chi2, used, crit);
  printf(
      "distribution temp %g top_k %d k %d: chi-square %.1f (%d cells, 0.1%% critical %.1f), "
      "%d of %d drafts accepted\n",
      (double)temp, top_k, k, chi2, used, crit, accepted, drafted);
}

static void test_distribution(void) {
  check_distribution(1.0f, 0, 4);
  check_distribution(0.7f, 3, 2);
}

static void test_errors(void) {
  mx_session_opts_t so = {.backend = "spec-fake", .ctx = FAKE_CTX};
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(&g_fake_model, &so, &s));
  const int32_t prompt[] = {0, 1, 2};
  mx_generate_opts_t go = {.max_tokens = 4};
  go.spec = (mx_spec_opts_t){.mode = MX_SPEC_NGRAM, .draft_tokens = 33};
  EXPECT_ERR(mx_generate(s, NULL, prompt, 3, &go, NULL, NULL, NULL), "draft_tokens must be in");
  go.spec = (mx_spec_opts_t){.mode = MX_SPEC_NGRAM, .ngram_max = -1};
  EXPECT_ERR(mx_generate(s, NULL, prompt, 3, &go, NULL, NULL, NULL), "ngram_max must be in");
  go.spec = (mx_spec_opts_t){.mode = MX_SPEC_DRAFT};
  EXPECT_ERR(mx_generate(s, NULL, prompt, 3, &go, NULL, NULL, NULL), "no draft model session");
  go.spec = (mx_spec_opts_t){.mode = (mx_spec_mode_t)7};
  EXPECT_ERR(mx_generate(s, NULL, prompt, 3, &go, NULL, NULL, NULL), "unknown mode 7");
  go.spec = (mx_spec_opts_t){.mode = MX_SPEC_NGRAM};
  const float media[3] = {0};
  const int32_t positions[9] = {0};
  go.media = media;
  go.positions = positions;
  EXPECT_ERR(mx_generate(s, NULL, prompt, 3, &go, NULL, NULL, NULL), "after an M-RoPE image");
  go.media = NULL;
  go.positions = NULL;
  CHECK(mx_session_n_past(s) == 0);  // refused before any work
  mx_grammar_t *gm = NULL;
  mx_gmatch_t *match = NULL;
  const char *schema = "{\"type\": \"boolean\"}";
  CHECK_OK(mx_grammar_from_schema(schema, strlen(schema), &gm));
  CHECK_OK(mx_gmatch_create(gm, &match));
  go.grammar = match;
  go.spec = (mx_spec_opts_t){.mode = MX_SPEC_NGRAM};
  EXPECT_ERR(mx_generate(s, NULL, prompt, 3, &go, NULL, NULL, NULL), "does not combine");
  mx_gmatch_destroy(match);
  mx_grammar_destroy(gm);
  mx_session_destroy(s);
  so.backend = "spec-fake-nolog";
  CHECK_OK(mx_session_create(&g_fake_model, &so, &s));
  go.grammar = NULL;
  EXPECT_ERR(mx_generate(s, NULL, prompt, 3, &go, NULL, NULL, NULL),
             "cannot return the logits of every position");
  mx_session_destroy(s);
}

// ---- Greedy output equals plain decoding on real models ----

static uint32_t g_rng = 12345;
static uint32_t rnd(uint32_t n) {
  g_rng = g_rng * 1664525u + 1013904223u;
  return (g_rng >> 8) % n;
}

// A prompt with repeats: a random segment, then copies of it with a token changed here and
// there, so that prompt lookup finds drafts.
static int32_t make_prompt(int32_t vocab, int32_t first, int32_t *p) {
  int32_t seg = 3 + (int32_t)rnd(8), n = 0, reps = 1 + (int32_t)rnd(3);
  if (first >= 0) p[n++] = first;
  for (int32_t i = 0; i < seg; i++) p[n++] = 3 + (int32_t)rnd((uint32_t)vocab - 3);
  int32_t start = first >= 0 ? 1 : 0;
  for (int32_t r = 0; r < reps; r++)
    for (int32_t i = 0; i < seg; i++)
      p[n++] = rnd(6) == 0 ? 3 + (int32_t)rnd((uint32_t)vocab - 3) : p[start + i];
  return n;
}

static mx_status_t run(mx_session_t *s, const int32_t *prompt, int32_t n, int32_t max_tokens,
                       const mx_spec_opts_t *spec, collect_t *out, mx_generate_stats_t *st) {
  mx_session_reset(s);
  mx_generate_opts_t go = {.max_tokens = max_tokens, .ignore_eos = true};
  go.sampling.temperature = 0.0f;
  go.sampling.top_p = 1.0f;
  go.sampling.repetition_penalty = 1.0f;
  if (spec) go.spec = *spec;
  out->n = 0;
  return mx_generate(s, NULL, prompt, n, &go, on_token, out, st);
}

// Plain greedy ids against n-gram drafting with draft_tokens 1..7 on n_prompts prompts; a draft
// model session (`draft`, may be NULL) too. Counts drafts so that the test cannot pass without
// accepting and rejecting some.
static void check_greedy(const char *what, const mx_model_t *m, const char *backend, int64_t ctx,
                         int32_t n_prompts, mx_session_t *draft) {
  mx_session_opts_t so = {.backend = backend, .ctx = ctx};
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  if (!s) return;
  int32_t vocab = m->config.vocab_size, mism = 0, drafted = 0, accepted = 0;
  for (int32_t i = 0; i < n_prompts; i++) {
    int32_t prompt[64];
    int32_t np =
        make_prompt(vocab, m->config.bos_token_id > 0 ? m->config.bos_token_id : -1, prompt);
    int32_t max_tokens = 12 + (int32_t)rnd(12);
    collect_t plain, fast;
    mx_generate_stats_t a, b;
    CHECK_OK(run(s, prompt, np, max_tokens, NULL, &plain, &a));
    mx_spec_opts_t sp = {.mode = MX_SPEC_NGRAM, .draft_tokens = 1 + i % 7, .ngram_max = 1 + i % 3};
    if (draft && i % 2)
      sp = (mx_spec_opts_t){.mode = MX_SPEC_DRAFT, .draft_tokens = 1 + i % 5, .draft = draft};
    mx_status_t st = run(s, prompt, np, max_tokens, &sp, &fast, &b);
    CHECK_MSG(st == MX_OK, "%s: %s", what, mx_error_message());
    bool same = plain.n == fast.n && memcmp(plain.ids, fast.ids, (size_t)plain.n * 4) == 0;
    // The session holds what plain decoding leaves in it.
    same = same && mx_session_n_past(s) == np + plain.n - 1;
    if (!same && mism++ == 0) {
      fprintf(stderr, "%s on %s: prompt %d (k %d): %d tokens (n_past %lld), plain %d:", what,
              backend, i, sp.draft_tokens, fast.n, (long long)mx_session_n_past(s), plain.n);
      for (int32_t j = 0; j < plain.n && j < fast.n; j++)
        fprintf(stderr, " %d/%d", plain.ids[j], fast.ids[j]);
      fprintf(stderr, "\n");
    }
    drafted += b.spec_drafted;
    accepted += b.spec_accepted;
  }
  CHECK_MSG(mism == 0, "%s on %s: %d of %d prompts differ from plain decoding", what, backend, mism,
            n_prompts);
  // Few prompts may see no rejection; many must see both.
  CHECK_MSG(accepted > 0 && (n_prompts < 10 || drafted > accepted),
            "%s on %s: %d of %d drafts accepted", what, backend, accepted, drafted);
  printf("%s on %s: %d of %d prompts equal, %d of %d drafts accepted\n", what, backend,
         n_prompts - mism, n_prompts, accepted, drafted);
  mx_session_destroy(s);
}

static char g_repo[4096];

static mx_model_t *load(const char *dir, const mx_model_load_opts_t *lo) {
  mx_model_t *m = NULL;
  mx_status_t st = mx_model_load_ex(dir, lo, &m);
  CHECK_MSG(st == MX_OK, "%s: %s", dir, mx_error_message());
  return m;
}

// The draft model's schedule: +2 after a step whose drafts were all accepted (up to the
// bound), -1 after a rejection (down to 1), then pauses of 1, 2, 4, ... 16 plain steps after
// rejections at length 1 until a draft is accepted; a step without drafts changes nothing.
static void test_sched(void) {
  mx_spec_sched_t sc = mx_spec_sched_init(7);
  CHECK(mx_spec_sched_take(&sc) == 7);
  mx_spec_sched_update(&sc, 7, 7);
  CHECK(mx_spec_sched_take(&sc) == 7);
  mx_spec_sched_update(&sc, 7, 2);
  CHECK(mx_spec_sched_take(&sc) == 6);
  mx_spec_sched_update(&sc, 0, 0);
  CHECK(mx_spec_sched_take(&sc) == 6);
  mx_spec_sched_update(&sc, 3, 3);  // a draft cut short and accepted still grows
  CHECK(mx_spec_sched_take(&sc) == 7);
  for (int32_t i = 0; i < 6; i++) mx_spec_sched_update(&sc, 1, 0);
  CHECK(mx_spec_sched_take(&sc) == 1);
  int32_t pauses[] = {1, 2, 4, 8, 16, 16};
  for (int32_t p = 0; p < 6; p++) {
    mx_spec_sched_update(&sc, 1, 0);  // rejected at length 1: a pause
    for (int32_t i = 0; i < pauses[p]; i++) CHECK(mx_spec_sched_take(&sc) == 0);
    CHECK(mx_spec_sched_take(&sc) == 1);
  }
  mx_spec_sched_update(&sc, 1, 1);  // accepted: the backoff ends, the length grows
  CHECK(mx_spec_sched_take(&sc) == 3);
  mx_spec_sched_update(&sc, 3, 0);
  mx_spec_sched_update(&sc, 2, 0);
  mx_spec_sched_update(&sc, 1, 0);
  CHECK(mx_spec_sched_take(&sc) == 0);  // the first pause again
  CHECK(mx_spec_sched_take(&sc) == 1);
}

// With its 4-bit copy drafting k = 7 on stories260K, rejections shorten the next drafts: fewer
// than 7 drafts per step on average over a few prompts (a fixed k would draft 7 at every step
// the capacity allows).
static void test_adaptive_drafts(const mx_model_t *m, const char *dir) {
  mx_model_load_opts_t q4 = {.quant = MX_QUANT_INT4};
  mx_model_t *dm = load(dir, &q4);
  mx_session_opts_t so = {.backend = "cpu", .ctx = 128};
  mx_session_t *s = NULL, *ds = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  if (dm) CHECK_OK(mx_session_create(dm, &so, &ds));
  int32_t steps = 0, drafted = 0, accepted = 0;
  for (int32_t i = 0; s && ds && i < 4; i++) {
    int32_t prompt[64];
    int32_t np = make_prompt(m->config.vocab_size, 1, prompt);
    collect_t out;
    mx_generate_stats_t st;
    mx_spec_opts_t sp = {.mode = MX_SPEC_DRAFT, .draft_tokens = 7, .draft = ds};
    CHECK_OK(run(s, prompt, np, 48, &sp, &out, &st));
    steps += st.spec_steps;
    drafted += st.spec_drafted;
    accepted += st.spec_accepted;
  }
  CHECK_MSG(accepted < drafted && drafted < 7 * steps,
            "adaptive drafts: %d of %d accepted in %d steps", accepted, drafted, steps);
  printf("stories260K, int4 draft, k <= 7: %d of %d drafts accepted in %d steps\n", accepted,
         drafted, steps);
  mx_session_destroy(ds);
  mx_session_destroy(s);
  mx_model_free(dm);
}

static void test_stories(void) {
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/models/stories260K", g_repo);
  mx_model_t *m = load(dir, NULL);
  if (!m) return;
  // Its int8 copy drafts for it: the same tokenizer, different logits (rejections happen).
  mx_model_load_opts_t q8 = {.quant = MX_QUANT_INT8};
  mx_model_t *dm = load(dir, &q8);
  mx_session_opts_t dso = {.backend = "cpu", .ctx = 128};
  mx_session_t *ds = NULL;
  if (dm) CHECK_OK(mx_session_create(dm, &dso, &ds));
  check_greedy("stories260K", m, "cpu", 128, 60, ds);
  check_greedy("stories260K", m, "interp", 96, 6, ds);
  test_adaptive_drafts(m, dir);

  // The model as its own draft on the same backend: every draft the model's own choice.
  mx_session_t *self = NULL, *s = NULL;
  CHECK_OK(mx_session_create(m, &dso, &self));
  CHECK_OK(mx_session_create(m, &dso, &s));
  if (self && s) {
    int32_t prompt[64];
    int32_t np = make_prompt(m->config.vocab_size, 1, prompt);
    collect_t plain, fast;
    mx_generate_stats_t a, b;
    mx_spec_opts_t sp = {.mode = MX_SPEC_DRAFT, .draft_tokens = 5, .draft = self};
    CHECK_OK(run(s, prompt, np, 16, NULL, &plain, &a));
    CHECK_OK(run(s, prompt, np, 16, &sp, &fast, &b));
    CHECK(plain.n == 16 && fast.n == 16 &&
          memcmp(plain.ids, fast.ids, 16 * sizeof *plain.ids) == 0);
    CHECK_MSG(b.spec_accepted == b.spec_drafted && b.spec_steps <= 4,
              "self-draft: %d of %d accepted in %d steps", b.spec_accepted, b.spec_drafted,
              b.spec_steps);
  }
  mx_session_destroy(self);
  mx_session_destroy(s);

  // Another tokenizer is refused, naming the difference.
  char tdir[4300];
  snprintf(tdir, sizeof tdir, "%s/tests/data/tokenizer/mini-bytelevel", g_repo);
  mx_tokenizer_t *tok = NULL;
  CHECK_OK(mx_tokenizer_load(tdir, &tok));
  mx_model_t other = *m;
  other.tokenizer = tok;
  EXPECT_ERR(mx_spec_check_draft(m, &other), "speculative decoding needs the same tokenizer");
  other.tokenizer = NULL;
  EXPECT_ERR(mx_spec_check_draft(m, &other), "both models need a tokenizer");
  mx_tokenizer_destroy(tok);
  mx_session_destroy(ds);
  mx_model_free(dm);
  mx_model_free(m);
}

static void test_families(void) {
  // Plain attention with a tied embedding, sliding-window attention, latent (MLA) caches.
  const char *names[] = {"smollm3", "cohere2", "deepseek_v2"};
  for (int i = 0; i < 3; i++) {
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/tests/data/families/%s", g_repo, names[i]);
    mx_model_load_opts_t lo = {.tokenizer_optional = true};
    mx_model_t *m = load(dir, &lo);
    if (!m) continue;
    check_greedy(names[i], m, "cpu", 96, 16, NULL);
    check_greedy(names[i], m, "interp", 64, 4, NULL);
    mx_model_free(m);
  }
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  if (!data) {
    fprintf(stderr, "MX_TEST_DATA is not set (ctest sets it to tests/data)\n");
    return 1;
  }
  snprintf(g_repo, sizeof g_repo, "%s/../..", data);
  memset(&g_fake_model, 0, sizeof g_fake_model);
  strcpy(g_fake_model.config.model_type, "llama");
  g_fake_model.config.vocab_size = FV;
  g_fake_model.config.max_position_embeddings = 1024;
  CHECK_OK(mx_backend_register(&g_fake));
  CHECK_OK(mx_backend_register(&g_fake_nolog));
  test_ngram();
  test_sched();
  test_errors();
  test_distribution();
  test_stories();
  test_families();
  return mx_test_finish();
}
