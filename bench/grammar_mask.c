// The token mask's cost per decoding step (docs/performance.md, "Constrained decoding"): for
// each tokenizer directory given, builds the vocabulary index, then walks documents of a
// schema token by token (each step a uniform pick among the allowed tokens, seeded) and times
// every mask, split by where the step is: inside a string body without a length limit (the
// precomputed plain-text set plus a walk of the other tokens), inside a length-limited string
// (the plain-text set of the room left), and elsewhere (structure, numbers, literals). Each
// step's time is the fastest of three masks of its state.
//
// Usage: grammar_mask [--steps N] TOKENIZER_DIR...
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "grammar/grammar_internal.h"
#include "mlxcel/grammar.h"

static const char kSchema[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":12},"
    "\"bio\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"},\"score\":{\"type\":\"number\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"red\",\"green\",\"blue\"]},\"maxItems\":4}"
    ","
    "\"address\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"zip\":"
    "{\"anyOf\":[{\"type\":\"string\",\"maxLength\":8},{\"type\":\"null\"}]}},\"required\":"
    "[\"city\",\"zip\"],\"additionalProperties\":false}},\"required\":[\"name\",\"bio\",\"age\","
    "\"score\",\"tags\",\"address\"],\"additionalProperties\":false}";

static bool is_closing(const mx_gvocab_t *v, int32_t id) {
  size_t len = 0;
  const char *b = mx_gvocab_token(v, id, &len);
  for (size_t i = 0; b && i < len; i++)
    if (strchr("\",:}]", b[i])) return true;
  return false;
}

enum { K_FREE_STRING, K_LIMITED_STRING, K_OTHER, K_COUNT };
static const char *const kKind[K_COUNT] = {"string body (no limit)", "string body (maxLength)",
                                           "structure / numbers / literals"};

static void report(const char *what, double *t, int n) {
  if (n == 0) {
    printf("  %-32s      0 steps\n", what);
    return;
  }
  qsort(t, (size_t)n, sizeof *t, mx_bench_cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += t[i];
  printf("  %-32s %6d steps  mean %7.3f ms  median %7.3f ms  p99 %7.3f ms\n", what, n,
         1e3 * sum / n, 1e3 * t[n / 2], 1e3 * t[(int)(0.99 * (n - 1))]);
}

int main(int argc, char **argv) {
  int steps = 2000, first = 1;
  if (argc > 2 && strcmp(argv[1], "--steps") == 0) {
    steps = atoi(argv[2]);
    first = 3;
  }
  if (first >= argc || steps <= 0) {
    fprintf(stderr, "usage: grammar_mask [--steps N] TOKENIZER_DIR...\n");
    return 2;
  }
  mx_grammar_t *g = NULL;
  if (mx_grammar_from_schema(kSchema, sizeof kSchema - 1, &g)) {
    fprintf(stderr, "schema: %s\n", mx_error_message());
    return 1;
  }
  for (int a = first; a < argc; a++) {
    mx_tokenizer_t *tok = NULL;
    if (mx_tokenizer_load(argv[a], &tok)) {
      fprintf(stderr, "%s: %s\n", argv[a], mx_error_message());
      return 1;
    }
    double t0 = mx_bench_now_s();
    mx_gvocab_t *v = NULL;
    if (mx_gvocab_create(tok, &v)) {
      fprintf(stderr, "%s: %s\n", argv[a], mx_error_message());
      return 1;
    }
    double t_index = mx_bench_now_s() - t0;
    int32_t V = mx_gvocab_size(v), eos = mx_tokenizer_eos_id(tok);
    uint32_t *allow = calloc(((size_t)V + 31) / 32, sizeof *allow);
    double *t[K_COUNT];
    int n[K_COUNT] = {0};
    for (int k = 0; k < K_COUNT; k++) t[k] = malloc((size_t)steps * sizeof *t[k]);
    mx_gmatch_t *m = NULL;
    mx_gmatch_create(g, &m);
    mx_gmatch_bind_vocab(m, v);
    uint64_t rng = 12345;
    int docs = 0, allowed_sum = 0;
    for (int s = 0; s < steps; s++) {
      uint32_t room = 0;
      int kind = K_OTHER;
      if (mx_gm_in_free_string(g, &m->cur, &room))
        kind = room > 1000 ? K_FREE_STRING : K_LIMITED_STRING;
      // The fastest of three masks of the same state: the mask is a pure function of the state,
      // and on a shared machine the slower runs measure other processes.
      double best = 1e9;
      int32_t count = 0;
      for (int r = 0; r < 3; r++) {
        double t1 = mx_bench_now_s();
        count = mx_gmatch_mask(m, &eos, 1, allow);
        double dt = mx_bench_now_s() - t1;
        if (dt < best) best = dt;
      }
      t[kind][n[kind]++] = best;
      allowed_sum += count;
      if (count == 0) {
        mx_gmatch_reset(m);
        docs++;
        continue;
      }
      // A uniform pick among the allowed tokens, or (one step in three) among those that
      // close or separate something, so that documents end and every kind of state comes up.
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      bool closing = (rng >> 60) % 3 == 0;
      int32_t n_closing = 0;
      for (int32_t i = 0; closing && i < V; i++)
        if (allow[i >> 5] >> (i & 31) & 1u && is_closing(v, i)) n_closing++;
      if (n_closing == 0) closing = false;
      int32_t pick = (int32_t)((rng >> 33) % (uint64_t)(closing ? n_closing : count)), id = -1;
      for (int32_t i = 0; i < V && pick >= 0; i++)
        if (allow[i >> 5] >> (i & 31) & 1u && (!closing || is_closing(v, i)) && pick-- == 0) id = i;
      if (id == eos || !mx_gmatch_feed_token(m, id) || mx_gmatch_finished(m)) {
        mx_gmatch_reset(m);
        docs++;
      }
    }
    printf(
        "%s: %d tokens, index built in %.0f ms, %d steps over %d documents, %.0f allowed "
        "per step on average\n",
        argv[a], V, 1e3 * t_index, steps, docs, (double)allowed_sum / steps);
    for (int k = 0; k < K_COUNT; k++) report(kKind[k], t[k], n[k]);
    for (int k = 0; k < K_COUNT; k++) free(t[k]);
    mx_gmatch_destroy(m);
    free(allow);
    mx_gvocab_destroy(v);
    mx_tokenizer_destroy(tok);
  }
  mx_grammar_destroy(g);
  return 0;
}
