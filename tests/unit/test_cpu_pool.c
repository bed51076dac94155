// Thread pool: many tiny jobs, visibility of writes across run and barrier, sleeping workers,
// oversubscription, create/destroy loops. Also meant to be run under -fsanitize=thread.
#include <stdatomic.h>
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
