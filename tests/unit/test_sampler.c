// Sampler: greedy, ties, top-k/top-p limits, seeded reproducibility, distribution, penalties,
// parameter validation.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/session.h"
#include "mx_test.h"

static mx_sampler_t *make(const mx_sampler_params_t *p, int32_t vocab) {
  mx_sampler_t *s = NULL;
  mx_status_t st = mx_sampler_create(p, vocab, &s);
  if (st) fprintf(stderr, "sampler_create: %s\n", mx_error_message());
  return s;
}

static void test_greedy_and_ties(void) {
  mx_sampler_params_t p;
  mx_sampler_params_default(&p);
  p.temperature = 0.0f;
  mx_sampler_t *s = make(&p, 6);
  const float l1[6] = {0.1f, 2.0f, -1.0f, 1.9f, 2.0f, 0.0f};
  CHECK(mx_sampler_sample(s, l1, NULL, 0) == 1);  // tie between 1 and 4: lowest id
  const float l2[6] = {-5.0f, -4.0f, -3.0f, -2.0f, -1.0f, -1.5f};
  CHECK(mx_sampler_sample(s, l2, NULL, 0) == 4);
  const float l3[6] = {NAN, 1.0f, NAN, 3.0f, NAN, 2.0f};
  CHECK(mx_sampler_sample(s, l3, NULL, 0) == 3);  // NaN never wins
  const float l4[6] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  CHECK(mx_sampler_sample(s, l4, NULL, 0) == 0);
  mx_sampler_destroy(s);
}

// Pseudo-random logits (deterministic) for the equivalence tests.
static void fill_logits(float *l, int32_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (int32_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    l[i] = (float)((x >> 8) % 20000) / 1000.0f - 10.0f;
  }
}

static int32_t argmax_ref(const float *l, int32_t n) {
  int32_t b = 0;
  for (int32_t i = 1; i < n; i++)
    if (l[i] > l[b]) b = i;
  return b;
}

static void test_limits_equal_greedy(void) {
  enum { V = 1000 };
  float *l = malloc(V * sizeof *l);
  mx_sampler_params_t p;
  mx_sampler_params_default(&p);
  p.top_k = 1;
  p.temperature = 1.5f;
  mx_sampler_t *k1 = make(&p, V);
  mx_sampler_params_default(&p);
  p.top_p = 1e-6f;
  p.seed = 99;
  mx_sampler_t *ptiny = make(&p, V);
  mx_sampler_params_default(&p);
  p.min_p = 1.0f;
  mx_sampler_t *m1 = make(&p, V);
  int ok_k = 0, ok_p = 0, ok_m = 0;
  for (uint32_t t = 0; t < 50; t++) {
    fill_logits(l, V, t);
    int32_t g = argmax_ref(l, V);
    ok_k += mx_sampler_sample(k1, l, NULL, 0) == g;
    ok_p += mx_sampler_sample(ptiny, l, NULL, 0) == g;
    ok_m += l[mx_sampler_sample(m1, l, NULL, 0)] == l[g];  // min_p keeps tied maxima
  }
  CHECK_MSG(ok_k == 50, "top_k=1: %d/50", ok_k);
  CHECK_MSG(ok_p == 50, "top_p tiny: %d/50", ok_p);
  CHECK_MSG(ok_m == 50, "min_p=1: %d/50", ok_m);
  mx_sampler_destroy(k1);
  mx_sampler_destroy(ptiny);
  mx_sampler_destroy(m1);
  free(l);
}

static void test_seed_reproducible(void) {
  enum { V = 300, N = 200 };
  float l[V];
  fill_logits(l, V, 7);
  for (int i = 0; i < V; i++) l[i] *= 0.2f;  // flat enough that draws differ
  mx_sampler_params_t p;
  mx_sampler_params_default(&p);
  p.seed = 1234;
  p.top_k = 50;
  p.top_p = 0.95f;
  p.min_p = 0.01f;
  mx_sampler_t *a = make(&p, V), *b = make(&p, V);
  p.seed = 1235;
  mx_sampler_t *c = make(&p, V);
  int same = 0, diff_c = 0;
  for (int i = 0; i < N; i++) {
    int32_t x = mx_sampler_sample(a, l, NULL, 0), y = mx_sampler_sample(b, l, NULL, 0);
    int32_t z = mx_sampler_sample(c, l, NULL, 0);
    same += x == y;
    diff_c += x != z;
  }
  CHECK_MSG(same == N, "same seed: %d/%d equal", same, N);
  CHECK_MSG(diff_c > N / 2, "other seed: only %d/%d differ", diff_c, N);
  mx_sampler_destroy(a);
  mx_sampler_destroy(b);
  mx_sampler_destroy(c);
}

static void test_distribution(void) {
  // temperature 1 on log-probabilities samples those probabilities.
  const float l[3] = {logf(0.5f), logf(0.3f), logf(0.2f)};
  mx_sampler_params_t p;
  mx_sampler_params_default(&p);
  p.seed = 42;
  mx_sampler_t *s = make(&p, 3);
  enum { N = 20000 };
  int cnt[3] = {0, 0, 0};
  for (int i = 0; i < N; i++) cnt[mx_sampler_sample(s, l, NULL, 0)]++;
  // 4 standard deviations of a binomial with N = 20000: about 0.014 at p = 0.5.
  CHECK_NEAR(cnt[0] / (double)N, 0.5, 0.015);
  CHECK_NEAR(cnt[1] / (double)N, 0.3, 0.015);
  CHECK_NEAR(cnt[2] / (double)N, 0.2, 0.015);
  mx_sampler_destroy(s);

  // top_p 0.75: nucleus {0, 1} (0.5 + 0.3 >= 0.75), renormalized to 5/8, 3/8.
  p.top_p = 0.75f;
  s = make(&p, 3);
  cnt[0] = cnt[1] = cnt[2] = 0;
  for (int i = 0; i < N; i++) cnt[mx_sampler_sample(s, l, NULL, 0)]++;
  CHECK(cnt[2] == 0);
  CHECK_NEAR(cnt[0] / (double)N, 0.625, 0.015);
  mx_sampler_destroy(s);

  // min_p 0.5: keeps prob >= 0.25, i.e. {0, 1}; top_k 2 the same set.
  mx_sampler_params_default(&p);
  p.min_p = 0.5f;
  s = make(&p, 3);
  cnt[0] = cnt[1] = cnt[2] = 0;
  for (int i = 0; i < N; i++) cnt[mx_sampler_sample(s, l, NULL, 0)]++;
  CHECK(cnt[2] == 0 && cnt[1] > 0);
  mx_sampler_destroy(s);
  mx_sampler_params_default(&p);
  p.top_k = 2;
  s = make(&p, 3);
  cnt[0] = cnt[1] = cnt[2] = 0;
  for (int i = 0; i < N; i++) cnt[mx_sampler_sample(s, l, NULL, 0)]++;
  CHECK(cnt[2] == 0);
  CHECK_NEAR(cnt[0] / (double)N, 0.625, 0.015);
  mx_sampler_destroy(s);

  // Low temperature sharpens: 0.5 squares the ratios (25:9:4).
  mx_sampler_params_default(&p);
  p.temperature = 0.5f;
  s = make(&p, 3);
  cnt[0] = cnt[1] = cnt[2] = 0;
  for (int i = 0; i < N; i++) cnt[mx_sampler_sample(s, l, NULL, 0)]++;
  CHECK_NEAR(cnt[0] / (double)N, 25.0 / 38.0, 0.015);
  mx_sampler_destroy(s);
}

static void test_penalties(void) {
  mx_sampler_params_t p;
  mx_sampler_params_default(&p);
  p.temperature = 0.0f;  // greedy over the penalized logits
  const float l[4] = {2.0f, 1.8f, -1.0f, 0.5f};
  const int32_t hist[3] = {0, 3, 0};

  p.repetition_penalty = 1.2f;  // 2.0 / 1.2 = 1.67 < 1.8
  mx_sampler_t *s = make(&p, 4);
  CHECK(mx_sampler_sample(s, l, hist, 3) == 1);
  CHECK(mx_sampler_sample(s, l, NULL, 0) == 0);  // no history, no penalty
  CHECK(mx_sampler_sample(s, l, hist, 3) == 1);  // counts were reset between calls
  mx_sampler_destroy(s);

  p.repetition_penalty = 1.05f;  // 2.0 / 1.05 = 1.905 > 1.8: choice kept
  s = make(&p, 4);
  CHECK(mx_sampler_sample(s, l, hist, 3) == 0);
  mx_sampler_destroy(s);

  // Negative logits get multiplied: token 2 at -1.0 only falls further.
  const float ln[3] = {-1.0f, -1.1f, -3.0f};
  const int32_t h0[1] = {0};
  p.repetition_penalty = 1.2f;  // -1.2 < -1.1
  s = make(&p, 3);
  CHECK(mx_sampler_sample(s, ln, h0, 1) == 1);
  mx_sampler_destroy(s);

  // Frequency: token 0 seen twice, 2.0 - 2 * 0.15 = 1.7 < 1.8; once would be 1.85.
  mx_sampler_params_default(&p);
  p.temperature = 0.0f;
  p.frequency_penalty = 0.15f;
  s = make(&p, 4);
  CHECK(mx_sampler_sample(s, l, hist, 3) == 1);
  CHECK(mx_sampler_sample(s, l, hist, 2) == 0);  // only one 0 in {0, 3}
  mx_sampler_destroy(s);

  // Presence: flat 0.3 regardless of count.
  mx_sampler_params_default(&p);
  p.temperature = 0.0f;
  p.presence_penalty = 0.3f;
  s = make(&p, 4);
  CHECK(mx_sampler_sample(s, l, hist, 2) == 1);
  mx_sampler_destroy(s);

  // The window: last_n = 1 sees only the final 0... and last_n = 1 over {0, 3} sees only 3.
  p.penalty_last_n = 1;
  s = make(&p, 4);
  CHECK(mx_sampler_sample(s, l, hist, 2) == 0);
  CHECK(mx_sampler_sample(s, l, hist, 3) == 1);
  mx_sampler_destroy(s);
  p.penalty_last_n = 0;  // off
  s = make(&p, 4);
  CHECK(mx_sampler_sample(s, l, hist, 3) == 0);
  mx_sampler_destroy(s);

  // With sampling: a strong presence penalty removes token 0 from a top_k = 1 choice.
  mx_sampler_params_default(&p);
  p.top_k = 1;
  p.presence_penalty = 1.0f;
  s = make(&p, 4);
  CHECK(mx_sampler_sample(s, l, hist, 3) == 1);
  mx_sampler_destroy(s);

  // Out-of-range ids in the history are ignored.
  const int32_t bad[3] = {-1, 77, 0};
  mx_sampler_params_default(&p);
  p.temperature = 0.0f;
  p.repetition_penalty = 1.2f;
  s = make(&p, 4);
  CHECK(mx_sampler_sample(s, l, bad, 3) == 1);
  mx_sampler_destroy(s);
}

static void expect_invalid(mx_sampler_params_t p, const char *what, const char *needle) {
  mx_sampler_t *s = (mx_sampler_t *)1;
  mx_status_t st = mx_sampler_create(&p, 10, &s);
  CHECK_MSG(st == MX_ERR_INVALID_ARG && s == NULL, "%s accepted", what);
  CHECK_MSG(strstr(mx_error_message(), needle) != NULL, "%s: message '%s'", what,
            mx_error_message());
}

static void test_invalid(void) {
  mx_sampler_params_t d;
  mx_sampler_params_default(&d);
  CHECK(d.temperature == 1.0f && d.top_k == 0 && d.top_p == 1.0f && d.min_p == 0.0f &&
        d.repetition_penalty == 1.0f && d.penalty_last_n == 64 && d.seed == 0);
  mx_sampler_params_t p = d;
  p.temperature = -0.1f;
  expect_invalid(p, "temperature -0.1", "temperature");
  p = d;
  p.temperature = NAN;
  expect_invalid(p, "temperature NaN", "temperature");
  p = d;
  p.top_k = -1;
  expect_invalid(p, "top_k -1", "top_k");
  p = d;
  p.top_p = 0.0f;
  expect_invalid(p, "top_p 0", "top_p");
  p = d;
  p.top_p = 1.01f;
  expect_invalid(p, "top_p 1.01", "top_p");
  p = d;
  p.min_p = -0.01f;
  expect_invalid(p, "min_p -0.01", "min_p");
  p = d;
  p.min_p = 1.5f;
  expect_invalid(p, "min_p 1.5", "min_p");
  p = d;
  p.repetition_penalty = 0.0f;
  expect_invalid(p, "repetition_penalty 0", "repetition_penalty");
  p = d;
  p.presence_penalty = INFINITY;
  expect_invalid(p, "presence inf", "presence_penalty");
  p = d;
  p.frequency_penalty = NAN;
  expect_invalid(p, "frequency NaN", "frequency_penalty");
  p = d;
  p.penalty_last_n = -2;
  expect_invalid(p, "last_n -2", "penalty_last_n");
  mx_sampler_t *s = NULL;
  CHECK(mx_sampler_create(&d, 0, &s) == MX_ERR_INVALID_ARG);
  CHECK(mx_sampler_create(NULL, 5, &s) == MX_OK && s);  // NULL params = defaults
  mx_sampler_destroy(s);
  mx_sampler_destroy(NULL);
}

// A large vocabulary without top-k exercises the nucleus pre-filter.
static void test_large_vocab_top_p(void) {
  enum { V = 50000 };
  float *l = malloc(V * sizeof *l);
  fill_logits(l, V, 3);
  mx_sampler_params_t p;
  mx_sampler_params_default(&p);
  p.top_p = 0.9f;
  p.seed = 5;
  mx_sampler_t *s = make(&p, V);
  // Reference nucleus: sort the probabilities and find the set by brute force on a few draws.
  double mx = -1e30, tot = 0;
  for (int i = 0; i < V; i++) mx = l[i] > mx ? l[i] : mx;
  for (int i = 0; i < V; i++) tot += exp(l[i] - mx);
  int in_nucleus = 0;
  for (int t = 0; t < 100; t++) {
    int32_t id = mx_sampler_sample(s, l, NULL, 0);
    // id is in the nucleus iff the mass strictly above it is < 0.9.
    double above = 0;
    for (int i = 0; i < V; i++)
      if (l[i] > l[id] || (l[i] == l[id] && i < id)) above += exp(l[i] - mx);
    in_nucleus += above / tot < 0.9;
  }
  CHECK_MSG(in_nucleus == 100, "%d/100 draws inside the nucleus", in_nucleus);
  mx_sampler_destroy(s);
  free(l);
}

// Masked sampling (constrained decoding): only allowed ids come out, greedy or sampled, with
// penalties and truncation on; among the allowed, the draw follows their relative weights.
static void test_masked(void) {
  enum { V = 70 };
  float l[V];
  for (int i = 0; i < V; i++) l[i] = (float)(i % 7) - 3.0f;
  uint32_t allow[(V + 31) / 32] = {0};
  const int32_t ok[] = {2, 33, 40, 69};
  for (int i = 0; i < 4; i++) allow[ok[i] >> 5] |= 1u << (ok[i] & 31);
  mx_sampler_params_t p;
  mx_sampler_params_default(&p);
  p.temperature = 0.0f;
  mx_sampler_t *s = make(&p, V);
  CHECK(mx_sampler_sample(s, l, NULL, 0) == 6);                 // unconstrained: logit 3
  CHECK(mx_sampler_sample_masked(s, l, allow, NULL, 0) == 69);  // 69 % 7 = 6: the best allowed
  mx_sampler_destroy(s);
  p.temperature = 1.0f;
  p.top_k = 3;
  p.top_p = 0.9f;
  p.repetition_penalty = 1.3f;
  p.seed = 5;
  s = make(&p, V);
  int32_t hist[] = {69, 69, 2};
  int counts[V] = {0};
  for (int k = 0; k < 2000; k++) counts[mx_sampler_sample_masked(s, l, allow, hist, 3)]++;
  int inside = 0;
  for (int i = 0; i < 4; i++) inside += counts[ok[i]];
  CHECK(inside == 2000);
  mx_sampler_destroy(s);
  // Without truncation: 33 (logit 2) against 40 (logit 2) and 2 (logit -1), 69 (logit 3).
  mx_sampler_params_default(&p);
  p.seed = 9;
  s = make(&p, V);
  memset(counts, 0, sizeof counts);
  for (int k = 0; k < 20000; k++) counts[mx_sampler_sample_masked(s, l, allow, NULL, 0)]++;
  double z = exp(-1.0) + 2 * exp(2.0) + exp(3.0);
  CHECK_NEAR(counts[69] / 20000.0, exp(3.0) / z, 0.02);
  CHECK_NEAR(counts[2] / 20000.0, exp(-1.0) / z, 0.01);
  mx_sampler_destroy(s);
}

int main(void) {
  test_greedy_and_ties();
  test_limits_equal_greedy();
  test_seed_reproducible();
  test_distribution();
  test_penalties();
  test_invalid();
  test_large_vocab_top_p();
  test_masked();
  return mx_test_finish();
}
