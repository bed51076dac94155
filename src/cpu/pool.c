// Persistent thread pool with spin-then-sleep waits.
//
// Protocol: the caller publishes (fn, ctx) and bumps `job` (a sequence number); workers wait
// for `job` to change, run fn, and decrement `pending`; the last one bumps `done`, which the
// caller waits on. Every wait spins on an atomic word for a while (yielding the CPU every few
// dozen pauses, in case the thread it waits for was preempted onto the same CPU: on a shared
// machine that turned 20-120 us job latencies into ~2-5 us) and then sleeps on it (futex on
// Linux, a mutex + condition variable elsewhere). Sleepers announce themselves in
// the word's `sleepers` count (seq_cst, Dekker-style against the value change), so a waker
// makes the wake system call only when someone actually sleeps: a job dispatched to spinning
// workers costs no system call at all. All data is published through the atomics; the
// futex is only a way to doze, so thread sanitizers see ordinary acquire/release pairs.
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlxcel/cpu.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#define MX_USE_FUTEX 1
#else
#define MX_USE_FUTEX 0
#endif

#if defined(__x86_64__) || defined(__i386__)
#define MX_CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define MX_CPU_RELAX() __asm__ volatile("yield")
#else
#define MX_CPU_RELAX() ((void)0)
#endif

// Waits spin for up to SPIN_NS of wall time (a pause per check, a sched_yield every
// YIELD_EVERY checks so a descheduled peer can run when threads outnumber free cores), then a
// few sched_yield rounds, then sleep. The budget is time, not a pause count, because a pause
// costs 10-140 cycles depending on the CPU, and it has to cover the host's work between two
// plan runs: 0.1-0.25 ms between decode steps in mlxcel bench and generate (SmolLM2-135M int4,
// measured), longer than the 2048 pauses used before, so a worker slept before every token and
// the next run waited ~0.1 ms for the kernel to wake it. An idle pool burns at most SPIN_NS per
// thread after its last job. With more threads than CPUs, spinning only delays the peer we
// wait for: one round of YIELD_EVERY pauses.
enum {
  SPIN_NS = 1000000,
  SPIN_NS_OVERSUBSCRIBED = 0,
  YIELD_EVERY = 32,
  YIELD_ITERS = 8,
  MAX_THREADS = 256
};

// A 32-bit word threads can wait on until it changes. Cache-line sized to avoid false sharing.
typedef struct wait_word {
  _Alignas(64) atomic_uint value;
  atomic_uint sleepers;
#if !MX_USE_FUTEX
  pthread_mutex_t mu;
  pthread_cond_t cv;
#endif
} wait_word_t;

static void ww_init(wait_word_t *w) {
  atomic_init(&w->value, 0);
  atomic_init(&w->sleepers, 0);
#if !MX_USE_FUTEX
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
#endif
}

static void ww_fini(wait_word_t *w) {
#if !MX_USE_FUTEX
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
#else
  (void)w;
#endif
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// Returns once w->value != old (acquire).
static void ww_wait_change(wait_word_t *w, unsigned old, int64_t spin_ns) {
  int64_t start = -1;
  for (unsigned i = 1;; i++) {
    if (atomic_load_explicit(&w->value, memory_order_acquire) != old) return;
    MX_CPU_RELAX();
    if (i % YIELD_EVERY == 0) {
      // The thread we wait for may share our CPU (other processes hold the rest): let it run.
      sched_yield();
      int64_t t = now_ns();
      if (start < 0) start = t;
      if (t - start >= spin_ns) break;
    }
  }
  for (int i = 0; i < YIELD_ITERS; i++) {
    if (atomic_load_explicit(&w->value, memory_order_acquire) != old) return;
    sched_yield();
  }
  atomic_fetch_add(&w->sleepers, 1);  // seq_cst: ordered before the re-check below
  while (atomic_load(&w->value) == old) {
#if MX_USE_FUTEX
    // Sleeps only if the word still equals old (the kernel re-checks atomically).
    syscall(SYS_futex, (void *)&w->value, FUTEX_WAIT_PRIVATE, old, NULL, NULL, 0);
#else
    pthread_mutex_lock(&w->mu);
    if (atomic_load(&w->value) == old) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
#endif
  }
  atomic_fetch_sub(&w->sleepers, 1);
}

// Bumps the value (release + seq_cst) and wakes sleepers if there are any.
static void ww_bump(wait_word_t *w) {
  atomic_fetch_add(&w->value, 1);  // seq_cst: ordered before the sleepers check
  if (atomic_load(&w->sleepers) == 0) return;
#if MX_USE_FUTEX
  syscall(SYS_futex, (void *)&w->value, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
  pthread_mutex_lock(&w->mu);
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
#endif
}

struct mx_cpu_pool {
  wait_word_t job;                  // bumped by the caller to start a job
  wait_word_t done;                 // bumped by the last finisher
  wait_word_t barrier;              // bumped by the last thread to reach an in-job barrier
  _Alignas(64) atomic_int pending;  // threads still running the current job
  _Alignas(64) atomic_int arrived;  // threads waiting at the current barrier
  _Alignas(64) mx_cpu_task_fn fn;   // written by the caller before bumping `job`
  void *ctx;
  bool quit;
  int nth;
  int64_t spin_ns;  // spinning budget of each wait (SPIN_NS)
  int started;      // workers successfully spawned
  pthread_t *threads;
  struct worker_arg *args;
};

typedef struct worker_arg {
  mx_cpu_pool_t *pool;
  int ith;
} worker_arg_t;

static void finish_one(mx_cpu_pool_t *pool) {
  if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
    ww_bump(&pool->done);
  }
}

static void *worker_main(void *p) {
  worker_arg_t *arg = p;
  mx_cpu_pool_t *pool = arg->pool;
  unsigned seen = 0;
  for (;;) {
    ww_wait_change(&pool->job, seen, pool->spin_ns);
    seen++;  // jobs are published one at a time, so the value moved by exactly one
    if (pool->quit) break;
    pool->fn(pool->ctx, arg->ith, pool->nth);
    finish_one(pool);
  }
  return NULL;
}

mx_status_t mx_cpu_pool_create(int n_threads, mx_cpu_pool_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_pool_create: out is NULL");
  *out = NULL;
  int n = n_threads > 0 ? n_threads : mx_cpu_features()->physical_cores;
  if (n > MAX_THREADS) n = MAX_THREADS;
  if (n < 1) n = 1;
  mx_cpu_pool_t *pool = aligned_alloc(64, (sizeof *pool + 63) / 64 * 64);
  if (!pool) return mx_error_set(MX_ERR_NOMEM, "mx_cpu_pool_create: out of memory");
  memset(pool, 0, sizeof *pool);
  ww_init(&pool->job);
  ww_init(&pool->done);
  ww_init(&pool->barrier);
  atomic_init(&pool->pending, 0);
  atomic_init(&pool->arrived, 0);
  pool->nth = n;
  pool->spin_ns = n <= mx_cpu_features()->logical_cpus ? SPIN_NS : SPIN_NS_OVERSUBSCRIBED;
  if (n > 1) {
    pool->threads = calloc((size_t)n, sizeof *pool->threads);
    pool->args = calloc((size_t)n, sizeof *pool->args);
    if (!pool->threads || !pool->args) {
      mx_cpu_pool_destroy(pool);
      return mx_error_set(MX_ERR_NOMEM, "mx_cpu_pool_create: out of memory for %d threads", n);
    }
    for (int i = 1; i < n; i++) {
      pool->args[i].pool = pool;
      pool->args[i].ith = i;
      int rc = pthread_create(&pool->threads[i], NULL, worker_main, &pool->args[i]);
      if (rc != 0) {
        mx_cpu_pool_destroy(pool);
        return mx_error_set(MX_ERR_RUNTIME, "mx_cpu_pool_create: pthread_create for thread %d: %s",
                            i, strerror(rc));
      }
      pool->started = i;
    }
  }
  *out = pool;
  return MX_OK;
}

void mx_cpu_pool_destroy(mx_cpu_pool_t *pool) {
  if (!pool) return;
  if (pool->started > 0) {
    pool->quit = true;  // published by the seq_cst bump below
    ww_bump(&pool->job);
    for (int i = 1; i <= pool->started; i++) pthread_join(pool->threads[i], NULL);
  }
  ww_fini(&pool->job);
  ww_fini(&pool->done);
  ww_fini(&pool->barrier);
  free(pool->threads);
  free(pool->args);
  free(pool);
}

int mx_cpu_pool_threads(const mx_cpu_pool_t *pool) { return pool ? pool->nth : 1; }

void mx_cpu_pool_run(mx_cpu_pool_t *pool, mx_cpu_task_fn fn, void *ctx) {
  if (pool->nth == 1) {
    fn(ctx, 0, 1);
    return;
  }
  pool->fn = fn;
  pool->ctx = ctx;
  atomic_store_explicit(&pool->pending, pool->nth, memory_order_relaxed);
  unsigned done_before = atomic_load_explicit(&pool->done.value, memory_order_relaxed);
  ww_bump(&pool->job);  // publishes fn, ctx, pending
  fn(ctx, 0, pool->nth);
  finish_one(pool);
  ww_wait_change(&pool->done, done_before, pool->spin_ns);
}

void mx_cpu_pool_barrier(mx_cpu_pool_t *pool) {
  if (pool->nth == 1) return;
  unsigned phase = atomic_load_explicit(&pool->barrier.value, memory_order_acquire);
  if (atomic_fetch_add_explicit(&pool->arrived, 1, memory_order_acq_rel) == pool->nth - 1) {
    atomic_store_explicit(&pool->arrived, 0, memory_order_relaxed);
    ww_bump(&pool->barrier);  // releases everyone's writes (acq_rel chain through `arrived`)
  } else {
    ww_wait_change(&pool->barrier, phase, pool->spin_ns);
  }
}
