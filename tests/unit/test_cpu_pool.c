// Thread pool: many tiny jobs, visibility of writes across run and barrier, sleeping workers,
// oversubscription, create/destroy loops. Also meant to be run under -fsanitize=thread.
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "mlxcel/cpu.h"
#include "mx_test.h"

enum { MAXT = 16 };

typedef struct slots {
  long value[MAXT * 16];  // one slot per thread, 16 longs apart (own cache line)
  long round;
  mx_cpu_pool_t *pool;
  int rounds;
  long errors[MAXT * 16];
  atomic_int calls;
} slots_t;

static void write_task(void *ctx, int ith, int nth) {
  slots_t *s = ctx;
  s->value[ith * 16] = s->round * 100 + ith;
  atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
  (void)nth;
}

// Every round: write own slot, barrier, check everyone's slot, barrier (so nobody overwrites a
// slot another thread still reads).
static void barrier_task(void *ctx, int ith, int nth) {
  slots_t *s = ctx;
  for (int r = 0; r < s->rounds; r++) {
    s->value[ith * 16] = (long)r * 1000 + ith;
    mx_cpu_pool_barrier(s->pool);
    for (int j = 0; j < nth; j++) {
      if (s->value[j * 16] != (long)r * 1000 + j) s->errors[ith * 16]++;
    }
    mx_cpu_pool_barrier(s->pool);
  }
}

static void sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000L};
  nanosleep(&ts, NULL);
}

static void check_jobs(int nthreads, int jobs, int sleep_every) {
  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(nthreads, &pool));
  if (!pool) return;
  CHECK(mx_cpu_pool_threads(pool) == nthreads);
  slots_t *s = calloc(1, sizeof *s);
  atomic_init(&s->calls, 0);
  int bad = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int j = 0; j < jobs; j++) {
    s->round = j;
    if (sleep_every && j % sleep_every == 0) sleep_ms(30);  // workers fall asleep
    mx_cpu_pool_run(pool, write_task, s);
    for (int t = 0; t < nthreads; t++) bad += s->value[t * 16] != (long)j * 100 + t;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3;
  printf("%d threads: %d jobs, %.2f us/job\n", nthreads, jobs, us / jobs);
  CHECK_MSG(bad == 0, "%d stale slots with %d threads", bad, nthreads);
  CHECK(atomic_load(&s->calls) == jobs * nthreads);
  free(s);
  mx_cpu_pool_destroy(pool);
}

static void check_barrier(int nthreads, int jobs, int rounds) {
  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(nthreads, &pool));
  if (!pool) return;
  slots_t *s = calloc(1, sizeof *s);
  s->pool = pool;
  s->rounds = rounds;
  for (int j = 0; j < jobs; j++) mx_cpu_pool_run(pool, barrier_task, s);
  long errors = 0;
  for (int t = 0; t < nthreads; t++) errors += s->errors[t * 16];
  CHECK_MSG(errors == 0, "%ld barrier violations with %d threads", errors, nthreads);
  free(s);
  mx_cpu_pool_destroy(pool);
}

// mx_cpu_work_claim, one claim at a time in a pseudo-random order of threads: every chunk once;
// a thread's own claims are its segment front to back, contiguous, before it takes any other.
static void check_claims_serial(int64_t n, int nth, unsigned seed) {
  mx_cpu_work_t w;
  mx_cpu_work_reset(&w);
  int *seen = calloc((size_t)n + 1, sizeof *seen);
  int64_t segs = nth < MX_CPU_WORK_SEGMENTS ? nth : MX_CPU_WORK_SEGMENTS;
  if (segs > n) segs = n;
  int64_t next_own[MAXT * 4];
  bool stole[MAXT * 4] = {false};
  for (int t = 0; t < nth; t++) next_own[t] = segs ? n * (t % segs) / segs : 0;
  bool done[MAXT * 4] = {false};
  int64_t claimed = 0, bad = 0;
  for (int live = nth; live > 0;) {
    seed = seed * 1103515245u + 12345u;
    int t = (int)((seed >> 16) % (unsigned)nth);
    if (done[t]) continue;
    int64_t c = -1;
    if (!mx_cpu_work_claim(&w, n, t, nth, &c)) {
      done[t] = true;
      live--;
      continue;
    }
    if (c < 0 || c >= n || seen[c]++) {
      bad++;
      continue;
    }
    claimed++;
    int64_t own_lo = n * (t % segs) / segs, own_hi = n * (t % segs + 1) / segs;
    bool own = c >= own_lo && c < own_hi;
    if (own && !stole[t] && nth <= segs) bad += c != next_own[t]++;  // front to back
    if (!own) stole[t] = true;
  }
  CHECK_MSG(bad == 0 && claimed == n, "work claim n=%lld nth=%d: %lld bad, %lld of %lld claimed",
            (long long)n, nth, (long long)bad, (long long)claimed, (long long)n);
  free(seen);
}

// The same on a real pool, all threads claiming at once: every chunk exactly once.
typedef struct claim_job {
  mx_cpu_work_t work;
  int64_t n;
  atomic_int hits[200];
} claim_job_t;

static void claim_task(void *ctx, int ith, int nth) {
  claim_job_t *j = ctx;
  int64_t c;
  while (mx_cpu_work_claim(&j->work, j->n, ith, nth, &c)) atomic_fetch_add(&j->hits[c], 1);
}

static void check_claims_pool(int nthreads) {
  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(nthreads, &pool));
  if (!pool) return;
  claim_job_t *j = calloc(1, sizeof *j);
  long bad = 0;
  for (int rep = 0; rep < 300; rep++) {
    j->n = rep % 200;
    mx_cpu_work_reset(&j->work);
    for (int i = 0; i < 200; i++) atomic_store(&j->hits[i], 0);
    mx_cpu_pool_run(pool, claim_task, j);
    for (int i = 0; i < 200; i++) bad += atomic_load(&j->hits[i]) != (i < j->n);
  }
  CHECK_MSG(bad == 0, "%ld chunks not claimed exactly once with %d threads", bad, nthreads);
  free(j);
  mx_cpu_pool_destroy(pool);
}

int main(void) {
  const mx_cpu_features_t *f = mx_cpu_features();
  printf("cpu: %d logical, %d physical\n", f->logical_cpus, f->physical_cores);
  CHECK(f->physical_cores >= 1 && f->logical_cpus >= f->physical_cores);

  // Default size = physical cores.
  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(0, &pool));
  CHECK(pool && mx_cpu_pool_threads(pool) == f->physical_cores);
  mx_cpu_pool_destroy(pool);
  mx_cpu_pool_destroy(NULL);
  CHECK(mx_cpu_pool_create(2, NULL) == MX_ERR_INVALID_ARG);

  // Many tiny jobs (spinning workers), then jobs after workers went to sleep.
  for (int n = 1; n <= 4; n++) check_jobs(n, 20000, 0);
  check_jobs(2, 12, 3);
  check_jobs(3, 12, 2);
  // Oversubscribed: more threads than cores.
  check_jobs(8, 500, 0);

  // Barriers inside a job.
  for (int n = 1; n <= 4; n++) check_barrier(n, 50, 200);
  check_barrier(6, 10, 50);

  // Dynamic work sharing.
  const int64_t ns[] = {0, 1, 2, 3, 7, 8, 9, 16, 17, 64, 100};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
    for (int nth = 1; nth <= 12; nth++)
      for (unsigned seed = 1; seed <= 5; seed++) check_claims_serial(ns[i], nth, seed);
  for (int n = 1; n <= 4; n++) check_claims_pool(n);
  check_claims_pool(9);

  // Create/destroy loops, including destroy right after create (workers not yet waiting) and
  // after one job.
  for (int i = 0; i < 100; i++) {
    mx_cpu_pool_t *p = NULL;
    CHECK_OK(mx_cpu_pool_create(1 + i % 4, &p));
    if (i % 2 && p) {
      slots_t *s = calloc(1, sizeof *s);
      mx_cpu_pool_run(p, write_task, s);
      free(s);
    }
    mx_cpu_pool_destroy(p);
  }
  return mx_test_finish();
}
