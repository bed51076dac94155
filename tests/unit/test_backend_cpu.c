// The "cpu" session backend: parity with the stories260K greedy reference and the llama fixture,
// --threads 1 vs 2 bit-identical, zero allocations per prefill and decode step, decode time
// independent of the context capacity, and the prefill's pieces (ADR 0028): a tail of several
// pieces run as one graph started early gives the logits of token-by-token prefill. Model checks
// skip with a message when $MX_SHARED is absent.
#include <cjson/cJSON.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlxcel/batch.h"
#include "mlxcel/session.h"
#include "mx_test.h"
#include "session/graph_runner.h"
#include "session/session_internal.h"

extern const mx_backend_t mx_backend_cpu;

#include "mx_alloc_count.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int32_t argmax(const float *x, int32_t n) {
  int32_t a = 0;
  for (int32_t i = 1; i < n; i++)
    if (x[i] > x[a]) a = i;
  return a;
}

static int32_t *json_ids(const cJSON *a, int32_t *n) {
  *n = cJSON_GetArraySize(a);
  int32_t *v = calloc((size_t)(*n > 0 ? *n : 1), sizeof *v);
  for (int32_t i = 0; i < *n; i++) v[i] = (int32_t)cJSON_GetArrayItem(a, i)->valuedouble;
  return v;
}

static double row_diff(const float *x, const cJSON *row, int32_t V) {
  double md = 0;
  if (cJSON_GetArraySize(row) != V) return INFINITY;
  for (int32_t j = 0; j < V; j++) {
    double d = fabs((double)x[j] - cJSON_GetArrayItem(row, j)->valuedouble);
    if (d > md || d != d) md = d;
  }
  return md;
}

static mx_session_t *open_session(const mx_model_t *m, const char *backend, int64_t ctx,
                                  const char *threads) {
  mx_session_opts_t o = {
      .backend = backend, .ctx = ctx, .backend_opts.threads = threads ? atoi(threads) : 0};
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &o, &s));
  return s;
}

// Greedy run of stories260K through `backend`; returns the generated sequence.
static void stories_run(const mx_model_t *m, const cJSON *run, const char *backend,
                        const char *threads, int32_t *out_ids, int32_t n_total, double *max_dl,
                        double *dec_tok_s) {
  int32_t np = 0;
  int32_t *prompt = json_ids(cJSON_GetObjectItem(run, "prompt_tokens"), &np);
  const cJSON *logits = cJSON_GetObjectItem(run, "logits");
  int32_t nl = cJSON_GetArraySize(logits);
  mx_session_t *s = open_session(m, backend, 512, threads);
  if (!s) {
    free(prompt);
    return;
  }
  int32_t V = mx_session_vocab(s);
  float *all = malloc((size_t)np * (size_t)V * sizeof *all);
  CHECK_OK(mx_session_prefill(s, prompt, np, all));
  double md = 0;
  for (int32_t p = 0; p < np && p < nl; p++) {
    const cJSON *e = cJSON_GetArrayItem(logits, p);
    double d = row_diff(all + (size_t)p * (size_t)V, cJSON_GetObjectItem(e, "logits"), V);
    if (d > md) md = d;
  }
  for (int32_t i = 0; i < np; i++) out_ids[i] = prompt[i];
  int32_t n = np;
  double t0 = now_s();
  int32_t n_dec = 0;
  while (n < n_total) {
    int32_t next = argmax(mx_session_logits(s), V);
    out_ids[n++] = next;
    if (n >= n_total || next == 1) break;
    if (mx_session_decode(s, next) != MX_OK) {
      CHECK_MSG(0, "decode: %s", mx_error_message());
      break;
    }
    n_dec++;
    int64_t pos = mx_session_n_past(s) - 1;
    if (pos < nl) {
      const cJSON *e = cJSON_GetArrayItem(logits, (int)pos);
      double d = row_diff(mx_session_logits(s), cJSON_GetObjectItem(e, "logits"), V);
      if (d > md) md = d;
    }
  }
  double dt = now_s() - t0;
  *dec_tok_s = n_dec / (dt > 0 ? dt : 1e-9);
  *max_dl = md;
  free(all);
  free(prompt);
  mx_session_destroy(s);
}

static void test_stories260k(void) {
  const char *shared = getenv("MX_SHARED");
  if (!shared) {
    mx_test_skip("stories260K checks: MX_SHARED is not set");
    return;
  }
  char dir[4096], refp[4096];
  snprintf(dir, sizeof dir, "%s/models/stories260K/hf", shared);
  snprintf(refp, sizeof refp, "%s/models/stories260K/reference-greedy.json", shared);
  char *text = NULL;
  size_t len = 0;
  if (mx_read_file(refp, &text, &len) != MX_OK) {
    mx_test_skip("stories260K checks: %s", mx_error_message());
    return;
  }
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(dir, &m));
  cJSON *root = cJSON_ParseWithLength(text, len);
  const cJSON *runs = cJSON_GetObjectItem(root, "runs");
  for (int32_t r = 0; m && r < cJSON_GetArraySize(runs); r++) {
    const cJSON *run = cJSON_GetArrayItem(runs, r);
    int32_t nt = 0;
    int32_t *ref = json_ids(cJSON_GetObjectItem(run, "tokens"), &nt);
    int32_t *got1 = calloc((size_t)nt, sizeof *got1), *got2 = calloc((size_t)nt, sizeof *got2);
    double md1 = 0, md2 = 0, ts1 = 0, ts2 = 0;
    stories_run(m, run, "cpu", "1", got1, nt, &md1, &ts1);
    stories_run(m, run, "cpu", "2", got2, nt, &md2, &ts2);
    int32_t first_bad = -1;
    for (int32_t i = 0; i < nt && first_bad < 0; i++)
      if (got1[i] != ref[i]) first_bad = i;
    CHECK_MSG(first_bad < 0, "run %d: token %d differs (%d vs reference %d)", r, first_bad,
              first_bad >= 0 ? got1[first_bad] : 0, first_bad >= 0 ? ref[first_bad] : 0);
    CHECK_MSG(memcmp(got1, got2, (size_t)nt * sizeof *got1) == 0, "run %d: threads 1 and 2 differ",
              r);
    CHECK_MSG(md1 <= 1e-4 && md2 <= 1e-4, "run %d: max |dlogit| %g / %g", r, md1, md2);
    printf(
        "stories260K run %d (cpu): %d tokens exact=%s, max |dlogit| %.3g (1 thread) %.3g (2), "
        "decode %.0f tok/s (1 thread) %.0f tok/s (2)\n",
        r, nt, first_bad < 0 ? "yes" : "no", md1, md2, ts1, ts2);
    if (r == 0) {
      int32_t *gi = calloc((size_t)nt, sizeof *gi);
      double mdi = 0, tsi = 0;
      int32_t ni = nt < 64 ? nt : 64;
      stories_run(m, run, "interp", NULL, gi, ni, &mdi, &tsi);
      // The oracle holds to the same reference: upstream llama2.c's ids and logits.
      CHECK_MSG(memcmp(gi, ref, (size_t)ni * sizeof *gi) == 0, "interp: ids differ from llama2.c");
      CHECK_MSG(mdi <= 1e-4, "interp: max |dlogit| %g", mdi);
      printf("stories260K run 0 (interp, %d tokens): max |dlogit| %.3g, decode %.0f tok/s\n", ni,
             mdi, tsi);
      free(gi);
    }
    free(ref);
    free(got1);
    free(got2);
  }
  // Default prefill chunk: the cpu backend's 512 (ADR 0003), capped by the capacity; interp 64.
  if (m) {
    const struct {
      const char *backend;
      int64_t ctx;
      int32_t want;
    } dc[3] = {{"cpu", 512, 512}, {"cpu", 100, 100}, {"interp", 512, 64}};
    for (int i = 0; i < 3; i++) {
      mx_session_opts_t o = {.backend = dc[i].backend, .ctx = dc[i].ctx};
      mx_session_t *s = NULL;
      CHECK_OK(mx_session_create(m, &o, &s));
      CHECK_MSG(mx_session_prefill_chunk(s) == dc[i].want, "%s ctx %lld: chunk %d, want %d",
                dc[i].backend, (long long)dc[i].ctx, mx_session_prefill_chunk(s), dc[i].want);
      mx_session_destroy(s);
    }
  }
  // Zero allocations per decode step; decode time vs context capacity at position ~100.
  if (m) {
    int64_t ctxs[2] = {128, 4096};
    double per_tok[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
      void *st = NULL;
      mx_backend_config_t cfg = {.ctx = ctxs[k], .prefill_chunk = 64};
      CHECK_OK(mx_backend_cpu.create(m, &cfg, &st));
      if (!st) continue;
      int32_t V = m->config.vocab_size;
      float *lg = malloc((size_t)V * sizeof *lg);
      int32_t ids[64];
      for (int i = 0; i < 64; i++) ids[i] = 1 + (i * 7) % 400;
      CHECK_OK(mx_backend_cpu.prefill(st, ids, 64, 0, lg, NULL));
      CHECK_OK(mx_backend_cpu.prefill(st, ids, 36, 64, lg, NULL));
      // Zero allocations per prefill too (every bucket, T = 64 down to the decode plan), and
      // per all-logits prefill once its plans exist (the first such call compiles them).
      float *all = malloc((size_t)13 * (size_t)V * sizeof *all);
      CHECK_OK(mx_backend_cpu.prefill(st, ids, 13, 100, lg, all));
      mx_backend_cpu.reset(st);
      long p0 = g_allocs;
      CHECK_OK(mx_backend_cpu.prefill(st, ids, 64, 0, lg, NULL));
      CHECK_OK(mx_backend_cpu.prefill(st, ids, 63, 64, lg, NULL));  // 32 + 16 + 8 + 4 + 2 + 1
      CHECK_OK(mx_backend_cpu.prefill(st, ids, 13, 100, lg, all));
      long p1 = g_allocs;
      if (COUNT_ALLOCS)
        CHECK_MSG(p1 == p0, "ctx %lld: %ld allocations in 3 prefills", (long long)ctxs[k], p1 - p0);
      free(all);
      long a0 = g_allocs;
      int n_iter = 200;
      double best = 1e9;
      for (int rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        for (int i = 0; i < n_iter; i++) CHECK_OK(mx_backend_cpu.decode(st, 5 + i % 100, 100, lg));
        double dt = (now_s() - t0) / n_iter;
        if (dt < best) best = dt;
      }
      long a1 = g_allocs;
      if (COUNT_ALLOCS)
        CHECK_MSG(a1 == a0, "ctx %lld: %ld allocations in %d decode steps", (long long)ctxs[k],
                  a1 - a0, 5 * n_iter);
      per_tok[k] = best;
      printf("decode at position 100, ctx %lld: %.1f us/token (best of 5 x %d)%s\n",
             (long long)ctxs[k], best * 1e6, n_iter, COUNT_ALLOCS ? ", 0 allocations checked" : "");
      free(lg);
      mx_backend_cpu.destroy(st);
    }
    if (per_tok[0] > 0)
      printf("decode time ratio ctx 4096 / ctx 128 = %.2f\n", per_tok[1] / per_tok[0]);
  }
  cJSON_Delete(root);
  free(text);
  mx_model_free(m);
}

static void test_llama_fixture(void) {
  const char *shared = getenv("MX_SHARED");
  if (!shared) {
    mx_test_skip("llama fixture: MX_SHARED is not set");
    return;
  }
  char dir[4096], refp[4096];
  snprintf(dir, sizeof dir, "%s/fixtures/llama", shared);
  snprintf(refp, sizeof refp, "%s/fixtures/llama/reference.json", shared);
  char *text = NULL;
  size_t len = 0;
  if (mx_read_file(refp, &text, &len) != MX_OK) {
    mx_test_skip("llama fixture: %s", mx_error_message());
    return;
  }
  cJSON *ref = cJSON_ParseWithLength(text, len);
  mx_model_load_opts_t lo = {.tokenizer_optional = true};
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load_ex(dir, &lo, &m));
  int32_t np = 0, ng = 0;
  int32_t *prompt = json_ids(cJSON_GetObjectItem(ref, "prompt_ids"), &np);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(ref, "greedy_ids"), &ng);
  const cJSON *logits = cJSON_GetObjectItem(ref, "logits");
  const cJSON *dlogits = cJSON_GetObjectItem(ref, "decode_logits");
  mx_session_t *s = m ? open_session(m, "cpu", 64, "2") : NULL;
  if (s) {
    int32_t V = mx_session_vocab(s);
    float *all = malloc((size_t)np * (size_t)V * sizeof *all);
    CHECK_OK(mx_session_prefill(s, prompt, np, all));
    double md = 0, mdd = 0;
    for (int32_t p = 0; p < np; p++) {
      double d = row_diff(all + (size_t)p * (size_t)V, cJSON_GetArrayItem(logits, p), V);
      if (d > md) md = d;
    }
    CHECK(argmax(all + (size_t)(np - 1) * (size_t)V, V) == greedy[0]);
    for (int32_t i = 0; i < cJSON_GetArraySize(dlogits) && i < ng; i++) {
      CHECK_OK(mx_session_decode(s, greedy[i]));
      const float *l = mx_session_logits(s);
      double d = row_diff(l, cJSON_GetArrayItem(dlogits, i), V);
      if (d > mdd) mdd = d;
      if (i + 1 < ng) CHECK_MSG(argmax(l, V) == greedy[i + 1], "llama decode step %d", i);
    }
    printf("llama fixture (cpu): prefill max |dlogit| %.3g, decode max |dlogit| %.3g\n", md, mdd);
    CHECK_MSG(md <= 1e-4 && mdd <= 1e-4, "llama fixture: %g / %g", md, mdd);
    free(all);
    mx_session_destroy(s);
  }
  free(prompt);
  free(greedy);
  mx_model_free(m);
  cJSON_Delete(ref);
  free(text);
}

// mx_runner_next_piece over every n up to 300 and a few largest graphs: the pieces cover [0, n)
// in order, end at n, are powers of two up to max_t, start at most where the last one ended and
// recompute at most MX_RUNNER_EXTRA_ROWS_PER_PIECE rows per piece saved against the binary
// decomposition, of which they are never more; and the cases of ADR 0028.
static void test_piece_schedule(void) {
  const int32_t maxes[4] = {1, 2, 64, 128};
  for (int32_t k = 0; k < 4; k++)
    for (int32_t n = 1; n <= 300; n++) {
      int32_t max_t = maxes[k], done = 0, pieces = 0, rows = 0, greedy = 0, bad = 0;
      for (int32_t r = n; r > 0; greedy++) {
        int32_t t = 1;
        while (t * 2 <= r && t * 2 <= max_t) t *= 2;
        r -= t;
      }
      while (done < n && pieces <= n) {
        int32_t start, T = mx_runner_next_piece(n, done, max_t, &start);
        bad += T < 1 || T > max_t || (T & (T - 1)) || start < 0 || start > done ||
               start + T <= done || start + T > n;
        rows += T;
        done = start + T;
        pieces++;
      }
      CHECK_MSG(!bad && done == n && pieces <= greedy &&
                    rows - n <= MX_RUNNER_EXTRA_ROWS_PER_PIECE * (greedy - pieces),
                "n %d, max_t %d: %d pieces (greedy %d), %d rows", n, max_t, pieces, greedy, rows);
    }
  // 35 with graphs up to 64: 32, then 4 from token 31 (not 32 + 2 + 1); 127: 64, then 64 from
  // 63 (not 32 + 16 + 8 + 4 + 2 + 1); 163 up to 128: 128, 32, then 4 from 159 (64 from 99 would
  // recompute 29 rows to save 2 pieces).
  int32_t start, T = mx_runner_next_piece(35, 32, 64, &start);
  CHECK(T == 4 && start == 31);
  T = mx_runner_next_piece(127, 64, 64, &start);
  CHECK(T == 64 && start == 63);
  T = mx_runner_next_piece(163, 128, 128, &start);
  CHECK(T == 32 && start == 128);
  T = mx_runner_next_piece(63, 0, 64, &start);  // nothing before to start early from
  CHECK(T == 32 && start == 0);
}

// Prefills of n tokens in one call (the pieces above, T <= 64) give the logits of the same tokens
// run one at a time, in a session (the runner) and in a batch slot (the batched state), at a
// position past 0 too.
static void test_piece_logits(void) {
  const char *shared = getenv("MX_SHARED");
  if (!shared) {
    mx_test_skip("prefill pieces: MX_SHARED is not set");
    return;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/models/stories260K/hf", shared);
  mx_model_t *m = NULL;
  if (mx_model_load(dir, &m) != MX_OK) {
    mx_test_skip("prefill pieces: %s", mx_error_message());
    return;
  }
  int32_t V = m->config.vocab_size, ids[200];
  for (int32_t i = 0; i < 200; i++) ids[i] = 1 + (i * 37) % 500;
  float *one = malloc(sizeof(float) * (size_t)V);
  const int32_t ns[4] = {35, 63, 127, 7}, pos0 = 5;
  mx_session_opts_t so = {.backend = "cpu", .ctx = 256, .prefill_chunk = 128};
  mx_session_t *ref = NULL, *s = NULL;
  mx_batch_opts_t bo = {.backend = "cpu", .ctx = 256, .prefill_chunk = 128, .n_slots = 2};
  mx_batch_t *b = NULL;
  CHECK_OK(mx_session_create(m, &so, &ref));
  CHECK_OK(mx_session_create(m, &so, &s));
  CHECK_OK(mx_batch_create(m, &bo, &b));
  for (int32_t k = 0; ref && s && b && one && k < 4; k++) {
    int32_t n = ns[k];
    mx_session_reset(ref);
    mx_session_reset(s);
    mx_batch_reset(b, 1);
    for (int32_t i = 0; i < pos0 + n; i++) CHECK_OK(mx_session_decode(ref, ids[i]));
    memcpy(one, mx_session_logits(ref), sizeof(float) * (size_t)V);
    CHECK_OK(mx_session_prefill(s, ids, pos0, NULL));
    CHECK_OK(mx_session_prefill(s, ids + pos0, n, NULL));
    CHECK_OK(mx_batch_prefill(b, 1, ids, pos0));
    CHECK_OK(mx_batch_prefill(b, 1, ids + pos0, n));
    const float *ls = mx_session_logits(s), *lb = mx_batch_logits(b, 1);
    double ds = 0, db = 0;
    for (int32_t j = 0; ls && lb && j < V; j++) {
      ds = fmax(ds, fabs((double)ls[j] - one[j]));
      db = fmax(db, fabs((double)lb[j] - one[j]));
    }
    CHECK_MSG(ls && lb && ds <= 1e-4 && db <= 1e-4,
              "%d tokens at %d: session %g, batch %g from one token at a time", n, pos0, ds, db);
    // The next decode step reads the recomputed rows' keys and values.
    CHECK_OK(mx_session_decode(ref, 9));
    CHECK_OK(mx_session_decode(s, 9));
    ls = mx_session_logits(s);
    const float *lr = mx_session_logits(ref);
    ds = 0;
    for (int32_t j = 0; ls && lr && j < V; j++) ds = fmax(ds, fabs((double)ls[j] - lr[j]));
    CHECK_MSG(ds <= 1e-4, "%d tokens at %d: the next decode step differs by %g", n, pos0, ds);
  }
  free(one);
  mx_batch_destroy(b);
  mx_session_destroy(ref);
  mx_session_destroy(s);
  mx_model_free(m);
}

int main(void) {
  CHECK(mx_backend_find("cpu") == &mx_backend_cpu);
  test_piece_schedule();
  test_piece_logits();
  test_llama_fixture();
  test_stories260k();
  return mx_test_finish();
}
