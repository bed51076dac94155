// Token sampler: penalties -> temperature -> top-k -> top-p -> min-p -> seeded draw, or a plain
// argmax when temperature == 0. All scratch space is allocated at create time.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/session.h"
#include "session/spec.h"

typedef struct cand {
  float logit;  // adjusted logit, later the (unnormalized) probability
  int32_t id;
} cand_t;

struct mx_sampler {
  mx_sampler_params_t p;
  int32_t vocab;
  float *work;      // [vocab] logits after the penalties
  cand_t *cand;     // [vocab] candidates
  int32_t *count;   // [vocab] occurrences in the penalty window; all zero between calls
  uint64_t rng[4];  // xoshiro256** state
};

// ---- PRNG: splitmix64 expands the seed into xoshiro256** state. ----

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t s[4]) {
  uint64_t result = rotl64(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl64(s[3], 45);
  return result;
}

// Uniform double in [0, 1) from the top 53 bits.
static double rng_uniform(uint64_t s[4]) { return (double)(xoshiro_next(s) >> 11) * 0x1.0p-53; }

// ---- Parameters ----

void mx_sampler_params_default(mx_sampler_params_t *p) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  p->temperature = 1.0f;
  p->top_k = 0;
  p->top_p = 1.0f;
  p->min_p = 0.0f;
  p->repetition_penalty = 1.0f;
  p->presence_penalty = 0.0f;
  p->frequency_penalty = 0.0f;
  p->penalty_last_n = 64;
  p->seed = 0;
}

static mx_status_t validate(const mx_sampler_params_t *p, int32_t vocab) {
  if (vocab <= 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "sampler: vocab must be > 0, got %d", vocab);
  if (!(p->temperature >= 0.0f) || isinf(p->temperature))
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "sampler: temperature must be a finite number >= 0 (0 = greedy), got %g",
                        (double)p->temperature);
  if (p->top_k < 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "sampler: top_k must be >= 0 (0 = off), got %d",
                        p->top_k);
  if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
    return mx_error_set(MX_ERR_INVALID_ARG, "sampler: top_p must be in (0, 1] (1 = off), got %g",
                        (double)p->top_p);
  if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
    return mx_error_set(MX_ERR_INVALID_ARG, "sampler: min_p must be in [0, 1] (0 = off), got %g",
                        (double)p->min_p);
  if (!(p->repetition_penalty > 0.0f) || isinf(p->repetition_penalty))
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "sampler: repetition_penalty must be a finite number > 0 (1 = off), got %g",
                        (double)p->repetition_penalty);
  if (!isfinite(p->presence_penalty))
    return mx_error_set(MX_ERR_INVALID_ARG, "sampler: presence_penalty must be finite, got %g",
                        (double)p->presence_penalty);
  if (!isfinite(p->frequency_penalty))
    return mx_error_set(MX_ERR_INVALID_ARG, "sampler: frequency_penalty must be finite, got %g",
                        (double)p->frequency_penalty);
  if (p->penalty_last_n < -1)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "sampler: penalty_last_n must be >= -1 (-1 = whole history, 0 = none), "
                        "got %d",
                        p->penalty_last_n);
  return MX_OK;
}

mx_status_t mx_sampler_create(const mx_sampler_params_t *p, int32_t vocab, mx_sampler_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_sampler_create: out is NULL");
  *out = NULL;
  mx_sampler_params_t defaults;
  if (!p) {
    mx_sampler_params_default(&defaults);
    p = &defaults;
  }
  mx_status_t st = validate(p, vocab);
  if (st) return st;
  mx_sampler_t *s = calloc(1, sizeof *s);
  if (!s) return mx_error_set(MX_ERR_NOMEM, "sampler: out of memory");
  s->p = *p;
  s->vocab = vocab;
  s->work = malloc((size_t)vocab * sizeof *s->work);
  s->cand = malloc((size_t)vocab * sizeof *s->cand);
  s->count = calloc((size_t)vocab, sizeof *s->count);
  if (!s->work || !s->cand || !s->count) {
    mx_sampler_destroy(s);
    return mx_error_set(MX_ERR_NOMEM, "sampler: out of memory for %d candidates", vocab);
  }
  uint64_t x = p->seed;
  for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
  *out = s;
  return MX_OK;
}

void mx_sampler_destroy(mx_sampler_t *s) {
  if (!s) return;
  free(s->work);
  free(s->cand);
  free(s->count);
  free(s);
}

// ---- Steps ----

// a ranks before b: larger logit first, ties to the lower id; NaN counts as -inf.
static inline bool better(float la, int32_t ia, float lb, int32_t ib) {
  if (isnan(la)) la = -INFINITY;
  if (isnan(lb)) lb = -INFINITY;
  return la > lb || (la == lb && ia < ib);
}

static int32_t argmax(const float *l, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (better(l[i], i, l[best], best)) best = i;
  return best;
}

static bool penalties_on(const mx_sampler_params_t *p) {
  return p->penalty_last_n != 0 && (p->repetition_penalty != 1.0f || p->presence_penalty != 0.0f ||
                                    p->frequency_penalty != 0.0f);
}

// Applies the penalties to work[] for the ids in the window; counts[] returns to all zero.
static void apply_penalties(mx_sampler_t *s, const int32_t *history, int32_t n_history) {
  const mx_sampler_params_t *p = &s->p;
  int32_t n = n_history;
  if (p->penalty_last_n > 0 && p->penalty_last_n < n) n = p->penalty_last_n;
  const int32_t *win = history + (n_history - n);
  for (int32_t i = 0; i < n; i++)
    if (win[i] >= 0 && win[i] < s->vocab) s->count[win[i]]++;
  for (int32_t i = 0; i < n; i++) {
    int32_t id = win[i];
    if (id < 0 || id >= s->vocab || s->count[id] == 0) continue;  // done already (or invalid)
    float l = s->work[id];
    // CTRL-style: pushes the logit towards "less likely" whatever its sign.
    if (p->repetition_penalty != 1.0f)
      l = l > 0.0f ? l / p->repetition_penalty : l * p->repetition_penalty;
    // OpenAI-style: linear in the count, plus a flat amount for having appeared at all.
    l -= (float)s->count[id] * p->frequency_penalty + p->presence_penalty;
    s->work[id] = l;
    s->count[id] = 0;  // applied once per distinct id; this also restores the all-zero state
  }
}

// Min-heap of the k best candidates seen so far: the root is the worst of them.
static void heap_sift_down(cand_t *h, int32_t n, int32_t i) {
  for (;;) {
    int32_t l = 2 * i + 1, r = l + 1, w = i;
    if (l < n && better(h[w].logit, h[w].id, h[l].logit, h[l].id)) w = l;
    if (r < n && better(h[w].logit, h[w].id, h[r].logit, h[r].id)) w = r;
    if (w == i) return;
    cand_t t = h[i];
    h[i] = h[w];
    h[w] = t;
    i = w;
  }
}

// Sorts a heap built by heap_sift_down best first: the worst goes to the end, repeatedly. In
// place (qsort may allocate, and this runs once per token).
static void heap_extract_all(cand_t *h, int32_t n) {
  for (int32_t end = n - 1; end > 0; end--) {
    cand_t t = h[0];
    h[0] = h[end];
    h[end] = t;
    heap_sift_down(h, end, 0);
  }
}

// Max-heap sift (the best at the root), for the nucleus.
static void heap_sift_down_max(cand_t *h, int32_t n, int32_t i) {
  for (;;) {
    int32_t l = 2 * i + 1, r = l + 1, w = i;
    if (l < n && better(h[l].logit, h[l].id, h[w].logit, h[w].id)) w = l;
    if (r < n && better(h[r].logit, h[r].id, h[w].logit, h[w].id)) w = r;
    if (w == i) return;
    cand_t t = h[i];
    h[i] = h[w];
    h[w] = t;
    i = w;
  }
}

// The nucleus of cand[0..n) (numerators, summing to `total`): the fewest best candidates whose
// mass reaches target, moved to cand[0..j) best first; returns j >= 1. O(n + j log n): the heap
// is built in linear time and only the nucleus is extracted from it.
static int32_t nucleus(cand_t *h, int32_t n, double target) {
  for (int32_t i = n / 2 - 1; i >= 0; i--) heap_sift_down_max(h, n, i);
  double acc = 0.0;
  int32_t end = n;
  while (end > 0) {
    end--;
    cand_t t = h[0];
    h[0] = h[end];
    h[end] = t;
    heap_sift_down_max(h, end, 0);
    acc += h[end].logit;
    if (acc >= target) break;
  }
  // Extracted: h[end..n), best at n - 1. Reverse into best-first order at the front.
  int32_t j = n - end;
  for (int32_t a = end, b = n - 1; a < b; a++, b--) {
    cand_t t = h[a];
    h[a] = h[b];
    h[b] = t;
  }
  memmove(h, h + end, (size_t)j * sizeof *h);
  return j;
}

// Keeps the k best of work[0..vocab) in cand[0..k), sorted best first. O(V log k).
static int32_t select_top_k(mx_sampler_t *s, int32_t k) {
  cand_t *h = s->cand;
  for (int32_t i = 0; i < k; i++) h[i] = (cand_t){s->work[i], i};
  for (int32_t i = k / 2 - 1; i >= 0; i--) heap_sift_down(h, k, i);
  for (int32_t i = k; i < s->vocab; i++) {
    if (better(s->work[i], i, h[0].logit, h[0].id)) {
      h[0] = (cand_t){s->work[i], i};
      heap_sift_down(h, k, 0);
    }
  }
  heap_extract_all(h, k);
  return k;
}

// The candidates s->work (the logits, copied) leaves after the chain: penalties, temperature,
// top-k, top-p, min-p. Returns n: cand[0..n) hold the kept ids with unnormalized probabilities
// (weights), the distribution every draw takes. *only: the one id greedy decoding or degenerate
// logits pick (then n = 0).
static int32_t candidates(mx_sampler_t *s, bool pen, const int32_t *history, int32_t n_history,
                          int32_t *only) {
  const mx_sampler_params_t *p = &s->p;
  const int32_t V = s->vocab;
  if (pen) apply_penalties(s, history, n_history);
  if (p->temperature == 0.0f) {
    *only = argmax(s->work, V);
    return 0;
  }

  const float inv_t = 1.0f / p->temperature;
  for (int32_t i = 0; i < V; i++) s->work[i] *= inv_t;

  // Candidates; sorted best first when top-k ran (or once top-p sorted them).
  int32_t n;
  bool sorted = false;
  if (p->top_k > 0 && p->top_k < V) {
    n = select_top_k(s, p->top_k);
    sorted = true;
  } else {
    n = V;
    for (int32_t i = 0; i < V; i++) s->cand[i] = (cand_t){s->work[i], i};
  }

  // Softmax numerators (the max is the best candidate).
  int32_t best = 0;
  for (int32_t i = 0; i < n; i++)
    if (better(s->cand[i].logit, s->cand[i].id, s->cand[best].logit, s->cand[best].id)) best = i;
  const float mx = s->cand[best].logit;
  if (!isfinite(mx)) {  // degenerate logits: nothing to sample from
    *only = s->cand[best].id;
    return 0;
  }
  double total = 0.0;
  for (int32_t i = 0; i < n; i++) {
    float e = isnan(s->cand[i].logit) ? 0.0f : expf(s->cand[i].logit - mx);
    s->cand[i].logit = e;
    total += e;
  }

  if (p->top_p < 1.0f && n > 1) {
    double target = (double)p->top_p * total;
    if (!sorted) {
      // Only candidates with prob >= (1 - p) / n can be in the nucleus: everything below that
      // sums to less than 1 - p, so the kept ones alone reach p. This keeps the heap small.
      double cut = (1.0 - (double)p->top_p) / (double)n * total;
      int32_t m = 0;
      for (int32_t i = 0; i < n; i++)
        if ((double)s->cand[i].logit >= cut) s->cand[m++] = s->cand[i];
      n = nucleus(s->cand, m, target);
      sorted = true;
    } else {
      double acc = 0.0;
      int32_t keep = n;
      for (int32_t i = 0; i < n; i++) {
        acc += s->cand[i].logit;
        if (acc >= target) {
          keep = i + 1;
          break;
        }
      }
      n = keep;  // at least 1
    }
  }

  if (p->min_p > 0.0f && n > 1) {
    // Relative to the largest probability, whose numerator is exp(0) = 1.
    float thr = p->min_p;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
      if (s->cand[i].logit >= thr) s->cand[m++] = s->cand[i];
    n = m;  // the max (numerator 1 >= min_p) always survives
  }
  return n;
}

// Draws one of cand[0..n) in proportion to its weight.
static int32_t draw(mx_sampler_t *s, int32_t n) {
  double sum = 0.0;
  for (int32_t i = 0; i < n; i++) sum += s->cand[i].logit;
  double u = rng_uniform(s->rng) * sum, acc = 0.0;
  for (int32_t i = 0; i < n; i++) {
    acc += s->cand[i].logit;
    if (u < acc) return s->cand[i].id;
  }
  // Rounding left u at the very top: the last candidate with nonzero weight.
  for (int32_t i = n - 1; i >= 0; i--)
    if (s->cand[i].logit > 0.0f) return s->cand[i].id;
  return s->cand[0].id;
}

// Samples from s->work (the logits, copied): penalties, then the rest of the chain.
static int32_t sample_work(mx_sampler_t *s, bool pen, const int32_t *history, int32_t n_history) {
  int32_t only = 0;
  int32_t n = candidates(s, pen, history, n_history, &only);
  return n > 0 ? draw(s, n) : only;
}

int32_t mx_sampler_sample(mx_sampler_t *s, const float *logits, const int32_t *history,
                          int32_t n_history) {
  if (!s || !logits) return 0;
  bool pen = penalties_on(&s->p) && history && n_history > 0;
  if (s->p.temperature == 0.0f && !pen) return argmax(logits, s->vocab);
  memcpy(s->work, logits, (size_t)s->vocab * sizeof *s->work);
  return sample_work(s, pen, history, n_history);
}

int32_t mx_sampler_sample_masked(mx_sampler_t *s, const float *logits, const uint32_t *allow,
                                 const int32_t *history, int32_t n_history) {
  if (!s || !logits || !allow) return 0;
  bool pen = penalties_on(&s->p) && history && n_history > 0;
  for (int32_t i = 0; i < s->vocab; i++)
    s->work[i] = allow[i >> 5] >> (i & 31) & 1u ? logits[i] : -INFINITY;
  return sample_work(s, pen, history, n_history);
}

// ---- Speculative decoding (spec.c) ----

int32_t mx_sampler_argmax(const float *logits, int32_t n) { return argmax(logits, n); }

int32_t mx_sampler_spec_accept(mx_sampler_t *s, const float *logits, const int32_t *history,
                               int32_t n_history, int32_t draft, bool *accepted) {
  *accepted = false;
  if (!s || !logits) return 0;
  bool pen = penalties_on(&s->p) && history && n_history > 0;
  memcpy(s->work, logits, (size_t)s->vocab * sizeof *s->work);
  int32_t only = 0;
  int32_t n = candidates(s, pen, history, n_history, &only);
  if (n == 0) {  // one possible token: the draft is right or replaced by it
    *accepted = only == draft;
    return only;
  }
  // The draft proposed `draft` with certainty (q a point mass): accepted with probability
  // min(1, p / q) = p(draft); otherwise the token comes from norm(max(0, p - q)), which is p
  // without the draft.
  double sum = 0.0, pd = 0.0;
  int32_t at = -1;
  for (int32_t i = 0; i < n; i++) {
    sum += s->cand[i].logit;
    if (s->cand[i].id == draft) at = i;
  }
  if (at >= 0) pd = s->cand[at].logit / sum;
  if (at >= 0 && rng_uniform(s->rng) < pd) {
    *accepted = true;
    return draft;
  }
  if (at >= 0) s->cand[at].logit = 0.0f;  // u < 1: some other candidate has weight left
  return draw(s, n);
}
