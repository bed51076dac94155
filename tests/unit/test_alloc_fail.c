// Allocation-failure injection. This test is linked with -Wl,--wrap for malloc, calloc, realloc,
// free, aligned_alloc, strdup and strndup (tests/CMakeLists.txt), so every allocation the
// library makes goes through the wrappers below; cJSON's go through them too (cJSON_InitHooks).
// For an operation (model load, session create with graph build and plan compile, the batch
// engine, server start, tokenizer load, chat template render, ...) the sweep runs it with
// "allocation number N fails" for N = 1, 2, ... until a run finishes without reaching allocation N.
// Every run that hit the failure must
//   - return an error status with a message (no crash, no success with lost data), and
//   - leave no allocation made during the run alive (the wrappers track live pointers),
// and the final, unfailed run must succeed. Allocations of other libraries (PCRE2, utf8proc,
// libc internals) are not failed. Under MX_SANITIZE=ON, AddressSanitizer checks every error
// path for invalid accesses and LeakSanitizer re-checks leaks at exit.
//
// To stay fast, each sweep fails every N up to a first count, then a number of N spread evenly
// over the rest (numbers per operation in main); MX_ALLOC_FAIL_ALL=1 fails every N everywhere
// (minutes; docs/reliability.md has its results).
#include <cjson/cJSON.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlxcel/batch.h"
#include "mlxcel/chat.h"
#include "mlxcel/image.h"
#include "mlxcel/model.h"
#include "mlxcel/server.h"
#include "mlxcel/session.h"
#include "mlxcel/tokenizer.h"
#include "mx_test.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__real_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
void *__wrap_aligned_alloc(size_t align, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

// ---- The allocator hook: counts allocations, fails the armed one, tracks live pointers. ----

enum { kSlots = 1 << 20 };  // live-pointer set (open addressing; tombstones; reset per run)
#define TOMB ((void *)1)

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static bool g_armed;     // counting and tracking
static long g_count;     // allocations attempted while armed
static long g_fail_at;   // the allocation number that fails (0 = none)
static bool g_hit;       // it was reached
static long g_live;      // tracked pointers alive
static void **g_set;     // kSlots entries
static bool g_overflow;  // the set filled up (the test then fails)
enum { kTrace = 24 };
static void *g_trace[kTrace];  // where the failed allocation was made (printed with problems)
static int g_n_trace;

static size_t slot_of(const void *p) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (kSlots - 1);
}

static void track(void *p) {
  if (!p || !g_armed) return;
  size_t i = slot_of(p);
  for (size_t k = 0; k < kSlots; k++, i = (i + 1) & (kSlots - 1)) {
    if (g_set[i] == NULL || g_set[i] == TOMB) {
      g_set[i] = p;
      g_live++;
      return;
    }
  }
  g_overflow = true;
}

static void untrack(void *p) {
  if (!p || !g_set) return;
  size_t i = slot_of(p);
  for (size_t k = 0; k < kSlots && g_set[i]; k++, i = (i + 1) & (kSlots - 1)) {
    if (g_set[i] == p) {
      g_set[i] = TOMB;
      g_live--;
      return;
    }
  }
}

// Counts one allocation; true when it is the one to fail.
static bool should_fail(void) {
  if (!g_armed) return false;
  g_count++;
  if (g_fail_at > 0 && g_count == g_fail_at) {
    g_hit = true;
    g_n_trace = backtrace(g_trace, kTrace);
    return true;
  }
  return false;
}

void *__wrap_malloc(size_t n) {
  pthread_mutex_lock(&g_mu);
  void *p = should_fail() ? NULL : __real_malloc(n);
  track(p);
  pthread_mutex_unlock(&g_mu);
  return p;
}

void *__wrap_calloc(size_t n, size_t size) {
  pthread_mutex_lock(&g_mu);
  void *p = should_fail() ? NULL : __real_calloc(n, size);
  track(p);
  pthread_mutex_unlock(&g_mu);
  return p;
}

void *__wrap_aligned_alloc(size_t align, size_t n) {
  pthread_mutex_lock(&g_mu);
  void *p = should_fail() ? NULL : __real_aligned_alloc(align, n);
  track(p);
  pthread_mutex_unlock(&g_mu);
  return p;
}

void *__wrap_realloc(void *p, size_t n) {
  pthread_mutex_lock(&g_mu);
  void *q = NULL;
  if (!should_fail()) {  // a failed realloc leaves p allocated, as the real one does
    q = __real_realloc(p, n);
    if (q || n == 0) untrack(p);
    track(q);
  }
  pthread_mutex_unlock(&g_mu);
  return q;
}

void __wrap_free(void *p) {
  pthread_mutex_lock(&g_mu);
  untrack(p);
  __real_free(p);
  pthread_mutex_unlock(&g_mu);
}

char *__wrap_strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *p = __wrap_malloc(len + 1);
  if (p) {
    memcpy(p, s, len);
    p[len] = '\0';
  }
  return p;
}

char *__wrap_strdup(const char *s) { return __wrap_strndup(s, (size_t)-1); }

static void arm(long fail_at) {
  pthread_mutex_lock(&g_mu);
  memset(g_set, 0, kSlots * sizeof *g_set);
  g_live = 0;
  g_count = 0;
  g_fail_at = fail_at;
  g_hit = false;
  g_armed = true;
  pthread_mutex_unlock(&g_mu);
}

static void disarm(void) {
  pthread_mutex_lock(&g_mu);
  g_armed = false;
  g_fail_at = 0;
  pthread_mutex_unlock(&g_mu);
}

// ---- Operations: each does its work and releases everything it made, success or not. ----

static const char *g_repo;    // MX_TEST_DATA/../..
static char g_stories[4200];  // models/stories260K
static char g_fixture[4200];  // ../shared/fixtures/<family> ("" when absent)

static mx_status_t op_model_load(const void *arg) {
  mx_model_t *m = NULL;
  mx_status_t st = mx_model_load((const char *)arg, &m);
  mx_model_free(m);
  return st;
}

static mx_status_t op_model_load_no_tokenizer(const void *arg) {
  mx_model_load_opts_t o = {.tokenizer_optional = true};
  mx_model_t *m = NULL;
  mx_status_t st = mx_model_load_ex((const char *)arg, &o, &m);
  mx_model_free(m);
  return st;
}

static mx_status_t op_tokenizer(const void *arg) {
  mx_tokenizer_t *t = NULL;
  mx_status_t st = mx_tokenizer_load((const char *)arg, &t);
  if (st == MX_OK) {
    mx_encode_opts_t eo = {.add_special = true, .parse_special = true};
    int32_t *ids = NULL, n = 0;
    st = mx_tokenizer_encode(t, "Once upon a time, <s> \xC3\xA9t\xC3\xA9!", 22, &eo, &ids, &n);
    if (st == MX_OK) {
      char *text = NULL;
      size_t len = 0;
      st = mx_tokenizer_decode(t, ids, n, false, &text, &len);
      free(text);
    }
    free(ids);
  }
  mx_tokenizer_destroy(t);
  return st;
}

// The backend's session: graph build, plan compile (cpu), KV state; then one prefill and one
// decode step.
typedef struct session_arg {
  const mx_model_t *model;
  const char *backend;
  int32_t threads;
} session_arg_t;

static mx_status_t op_session(const void *arg) {
  const session_arg_t *a = arg;
  mx_session_opts_t so = {
      .backend = a->backend, .ctx = 32, .prefill_chunk = 8, .backend_opts.threads = a->threads};
  mx_session_t *s = NULL;
  mx_status_t st = mx_session_create(a->model, &so, &s);
  if (st == MX_OK) {
    int32_t ids[3] = {1, 5, 7};  // in every vocabulary (the fixtures' has 256 tokens)
    st = mx_session_prefill(s, ids, 3, NULL);
    if (st == MX_OK) st = mx_session_decode(s, 11);
  }
  mx_session_destroy(s);
  return st;
}

// The server's engine: a batch of 3 slots (create: graphs, plans, KV state), a prefill into one
// slot and a batched decode of two.
static mx_status_t op_batch(const void *arg) {
  const session_arg_t *a = arg;
  mx_batch_opts_t bo = {.backend = a->backend,
                        .ctx = 32,
                        .prefill_chunk = 8,
                        .n_slots = 3,
                        .backend_opts.threads = a->threads};
  mx_batch_t *b = NULL;
  mx_status_t st = mx_batch_create(a->model, &bo, &b);
  if (st == MX_OK) {
    int32_t ids[3] = {1, 5, 7}, slots[2] = {0, 2}, next[2] = {11, 13};
    st = mx_batch_prefill(b, 0, ids, 3);
    if (st == MX_OK) st = mx_batch_prefill(b, 2, ids, 2);
    if (st == MX_OK) st = mx_batch_decode(b, slots, next, 2);
  }
  mx_batch_destroy(b);
  return st;
}

// Server start (options, engine: a batch of 2 slots, scheduler thread, the HTTP daemon on a free
// loopback port) and stop. libmicrohttpd's own allocations are not failed.
static mx_status_t op_server(const void *arg) {
  const session_arg_t *a = arg;
  mx_server_opts_t so = {.host = "127.0.0.1",
                         .parallel = 2,
                         .ctx = 32,
                         .backend = a->backend,
                         .backend_opts.threads = a->threads};
  mx_server_t *srv = NULL;
  mx_status_t st = mx_server_start(a->model, &so, &srv);
  mx_server_stop(srv);
  return st;
}

// Generation with a sampler and stop strings on an existing session (sampler, detokenizer,
// stop-string buffers).
typedef struct gen_arg {
  const mx_model_t *model;
  mx_session_t *session;
} gen_arg_t;

static bool on_token(void *user, int32_t id, const char *text, size_t len) {
  (void)user, (void)id, (void)text, (void)len;
  return true;
}

static mx_status_t op_generate(const void *arg) {
  const gen_arg_t *a = arg;
  mx_session_reset(a->session);
  const char *stop[] = {"zebra", "\n\n"};
  mx_generate_opts_t go = {.max_tokens = 6, .stop = stop, .n_stop = 2};
  mx_sampler_params_default(&go.sampling);
  go.sampling.temperature = 0.8f;
  go.sampling.top_p = 0.9f;
  go.sampling.seed = 7;
  int32_t prompt[5] = {1, 403, 407, 261, 378};
  mx_generate_stats_t stats;
  return mx_generate(a->session, a->model->tokenizer, prompt, 5, &go, on_token, NULL, &stats);
}

typedef struct chat_arg {
  const char *src;
  size_t len;
} chat_arg_t;

static mx_status_t op_chat(const void *arg) {
  const chat_arg_t *a = arg;
  mx_chat_template_t *t = NULL;
  mx_status_t st = mx_chat_template_compile(a->src, a->len, &t);
  if (st == MX_OK) {
    static const char kMessages[] =
        "[{\"role\": \"system\", \"content\": \"Be brief.\"},"
        " {\"role\": \"user\", \"content\": \"Hi \\u00fc\"},"
        " {\"role\": \"assistant\", \"content\": \"<think>\\nhm\\n</think>\\n\\nHello\","
        "  \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"f\","
        "  \"arguments\": {\"x\": 1}}}]},"
        " {\"role\": \"tool\", \"content\": \"42\"},"
        " {\"role\": \"user\", \"content\": \"more\"}]";
    mx_chat_render_opts_t o = {.add_generation_prompt = true,
                               .bos_token = "<s>",
                               .eos_token = "</s>",
                               .extra_json =
                                   "{\"enable_thinking\": false, \"tools\": "
                                   "[{\"type\": \"function\", \"function\": "
                                   "{\"name\": \"f\"}}]}"};
    char *out = NULL;
    st = mx_chat_render_json(t, kMessages, &o, &out, NULL);
    free(out);
  }
  mx_chat_template_destroy(t);
  return st;
}

// An image decoded and run through a processor (the image file, the processor's model folder).
typedef struct image_arg {
  const char *image, *config_dir;
} image_arg_t;

static mx_status_t op_image(const void *arg) {
  const image_arg_t *a = arg;
  mx_image_proc_t p;
  mx_image_t img;
  mx_pixels_t px;
  mx_status_t st = mx_image_proc_load(a->config_dir, &p);
  if (st != MX_OK) return st;
  st = mx_image_load(a->image, NULL, &img, NULL);
  if (st != MX_OK) return st;
  st = mx_image_preprocess(&p, &img, &px);
  mx_pixels_free(&px);
  mx_image_free(&img);
  return st;
}

// ---- The sweep ----

typedef mx_status_t (*op_fn)(const void *arg);

static bool all_n(void) {
  const char *e = getenv("MX_ALLOC_FAIL_ALL");
  return e && *e && strcmp(e, "0") != 0;
}

// The next N after n: every N up to `dense`, then `sampled` values spread evenly over the rest
// of the unfailed run's `total` allocations, then total + 1, ... (a run that reaches no failure
// ends the sweep). MX_ALLOC_FAIL_ALL=1: every N.
static long next_n(long n, long total, long dense, long sampled) {
  if (all_n() || n < dense || n >= total) return n + 1;
  long k = (n - dense) * sampled / (total - dense);  // the sample n belongs to (0-based)
  long next = dense + ((k + 1) * (total - dense) + sampled - 1) / sampled;
  return next > n ? next : n + 1;
}

// Runs op with allocation N failing for N = 1, 2, ... (see next_n) until a run does not reach
// N. Returns the number of allocations of the unfailed run.
static long sweep(const char *name, op_fn op, const void *arg, long dense, long sampled) {
  const char *only = getenv("MX_ALLOC_FAIL_ONLY");  // debugging: sweeps whose name has this
  if (only && !strstr(name, only)) return 0;
  const char *skip = getenv("MX_ALLOC_FAIL_SKIP");  // ... and whose name has not this
  if (skip && *skip && strstr(name, skip)) return 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  // Unfailed run first: it must succeed and free everything (lazily created globals were made
  // by an earlier warm-up call, so any pointer left alive here is a leak too).
  arm(0);
  mx_status_t st = op(arg);
  long total = g_count, live = g_live;
  disarm();
  CHECK_MSG(st == MX_OK, "%s: the unfailed run fails: %s", name, mx_error_message());
  CHECK_MSG(live == 0, "%s: the unfailed run leaves %ld allocations alive", name, live);
  if (st != MX_OK) return 0;
  long runs = 0, failures = 0, n_status[MX_ERR_IO + 1] = {0};
  for (long n = 1;; n = next_n(n, total, dense, sampled)) {
    arm(n);
    mx_error_clear();
    st = op(arg);
    bool hit = g_hit;
    live = g_live;
    disarm();
    runs++;
    if (!hit) {
      CHECK_MSG(st == MX_OK, "%s: the run without a failed allocation (N = %ld) fails: %s", name, n,
                mx_error_message());
      break;
    }
    if (getenv("MX_ALLOC_FAIL_VERBOSE"))
      printf("%s: N = %ld: %s: %s\n", name, n, mx_status_name(st), mx_error_message());
    if (st == MX_OK || live != 0) {  // where the failed allocation was made (for addr2line)
      fprintf(stderr, "allocation %ld of %s was made at:\n", n, name);
      backtrace_symbols_fd(g_trace, g_n_trace, 2);
    }
    if (st == MX_OK) {
      failures++;
      CHECK_MSG(false, "%s: allocation %ld failed but the operation reported success", name, n);
    } else {
      if (st <= MX_ERR_IO) n_status[st]++;
      CHECK_MSG(mx_error_message()[0] != '\0', "%s: allocation %ld failed: error without message",
                name, n);
    }
    if (live != 0) {
      failures++;
      CHECK_MSG(false, "%s: allocation %ld failed (%s): %ld allocations leaked", name, n,
                mx_error_message(), live);
    }
    if (failures > 5) break;  // one bug, many N: the first few tell
  }
  CHECK(!g_overflow);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  char how[64];
  if (all_n() || total <= dense + sampled)
    snprintf(how, sizeof how, "every N");
  else
    snprintf(how, sizeof how, "N <= %ld, then %ld spread", dense, sampled);
  printf("%-30s %6ld allocations, %5ld runs (%s), %.1f s; errors: %ld out-of-memory, %ld other\n",
         name, total, runs, how,
         (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
         n_status[MX_ERR_NOMEM], runs - 1 - n_status[MX_ERR_NOMEM]);
  fflush(stdout);
  return total;
}

// cJSON allocates through these (its hooks take only malloc and free).
static void *cjson_malloc(size_t n) { return __wrap_malloc(n); }
static void cjson_free(void *p) { __wrap_free(p); }

int main(void) {
  g_set = __real_calloc(kSlots, sizeof *g_set);
  if (!g_set) return 1;
  g_n_trace = backtrace(g_trace, kTrace);  // loads the unwinder outside the sweeps
  cJSON_Hooks hooks = {.malloc_fn = cjson_malloc, .free_fn = cjson_free};
  cJSON_InitHooks(&hooks);

  const char *data = getenv("MX_TEST_DATA");
  static char repo[2048];
  snprintf(repo, sizeof repo, "%s/../..", data ? data : "tests/data");
  g_repo = repo;
  snprintf(g_stories, sizeof g_stories, "%s/models/stories260K", g_repo);
  const char *shared = getenv("MX_SHARED");
  if (shared) snprintf(g_fixture, sizeof g_fixture, "%s/fixtures/gemma3", shared);
  char path[4300];
  snprintf(path, sizeof path, "%s/config.json", g_fixture);
  FILE *probe = g_fixture[0] ? fopen(path, "r") : NULL;
  if (probe) {
    fclose(probe);
  } else {
    mx_test_skip("no shared fixtures (MX_SHARED): the family-fixture sweeps are not run");
    g_fixture[0] = '\0';
  }

  // Warm-up: lazily initialised globals (kernel tables, CPU features) are made here, outside
  // the sweeps.
  mx_model_t *model = NULL;
  CHECK_OK(mx_model_load(g_stories, &model));
  if (!model) return mx_test_finish();
  session_arg_t cpu = {model, "cpu", 1}, cpu2 = {model, "cpu", 2};
  session_arg_t interp = {model, "interp", 1};
  CHECK_OK(op_session(&cpu));
  CHECK_OK(op_session(&cpu2));
  CHECK_OK(op_session(&interp));
  CHECK_OK(op_batch(&cpu));
  CHECK_OK(op_server(&cpu));

  // Streaming detokenization allocates nothing (SentencePiece decoders: Replace, ByteFallback,
  // Fuse, Strip), over the whole vocabulary.
  mx_detok_stream_t ds;
  mx_detok_stream_init(&ds, model->tokenizer, 0);
  arm(0);
  size_t k = 0;
  for (int32_t id = 0; id < mx_tokenizer_vocab_size(model->tokenizer); id++)
    (void)mx_detok_stream_push(&ds, id, &k);
  (void)mx_detok_stream_flush(&ds, &k);
  long stream_allocs = g_count;
  disarm();
  CHECK_MSG(stream_allocs == 0, "streaming decode made %ld allocations", stream_allocs);

  sweep("model load stories260K", op_model_load, g_stories, 300, 200);
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/tests/data/tokenizer/mini-bytelevel", g_repo);
  sweep("tokenizer mini-bytelevel", op_tokenizer, dir, 200, 100);
  snprintf(dir, sizeof dir, "%s/tests/data/tokenizer/mini-spm", g_repo);
  sweep("tokenizer mini-spm", op_tokenizer, dir, 200, 100);
  sweep("session stories260K interp", op_session, &interp, 50, 50);
  sweep("session stories260K cpu", op_session, &cpu, 300, 200);
  sweep("session stories260K cpu 2 threads", op_session, &cpu2, 20, 30);
  sweep("batch stories260K cpu", op_batch, &cpu, 200, 100);
  sweep("server start stories260K cpu", op_server, &cpu, 200, 100);

  mx_session_t *s = NULL;
  mx_session_opts_t so = {.backend = "cpu", .ctx = 64, .backend_opts.threads = 1};
  CHECK_OK(mx_session_create(model, &so, &s));
  if (s) {
    gen_arg_t g = {model, s};
    CHECK_OK(op_generate(&g));  // warm-up
    sweep("generate stories260K cpu", op_generate, &g, 100, 100);
    // The decode hot path allocates nothing (a session preallocates what a step needs).
    arm(0);
    mx_status_t st = mx_session_decode(s, 261);
    long decode_allocs = g_count;
    disarm();
    CHECK_OK(st);
    CHECK_MSG(decode_allocs == 0, "a cpu decode step made %ld allocations", decode_allocs);
    mx_session_destroy(s);
  }

  snprintf(dir, sizeof dir, "%s/tests/data/chat/qwen3.jinja", g_repo);
  char *src = NULL;
  size_t len = 0;
  CHECK_OK(mx_read_file(dir, &src, &len));
  if (src) {
    chat_arg_t c = {src, len};
    sweep("chat template qwen3 render", op_chat, &c, 300, 200);
    free(src);
  }

  // Images: both decoders and the three processor kinds (LLaVA's pad, Qwen2-VL's patches).
  static const char *const kImages[][3] = {
      {"image coffee.png llava15_pad", "coffee.png", "llava15_pad"},
      {"image rocket.jpg qwen2vl_small", "rocket.jpg", "qwen2vl_small"},
      {"image chelsea_palette_trns.png siglip", "chelsea_palette_trns.png", "siglip384"},
  };
  for (size_t i = 0; i < sizeof kImages / sizeof kImages[0]; i++) {
    char img[4300], cfg[4300];
    snprintf(img, sizeof img, "%s/tests/data/image/inputs/%s", g_repo, kImages[i][1]);
    snprintf(cfg, sizeof cfg, "%s/tests/data/image/configs/%s", g_repo, kImages[i][2]);
    image_arg_t ia = {img, cfg};
    sweep(kImages[i][0], op_image, &ia, 100, 50);
  }

  if (g_fixture[0]) {
    sweep("model load fixture gemma3", op_model_load_no_tokenizer, g_fixture, 200, 100);
    mx_model_t *fx = NULL;
    mx_model_load_opts_t lo = {.tokenizer_optional = true};
    CHECK_OK(mx_model_load_ex(g_fixture, &lo, &fx));
    if (fx) {
      session_arg_t fcpu = {fx, "cpu", 1};
      CHECK_OK(op_session(&fcpu));  // warm-up
      sweep("session fixture gemma3 cpu", op_session, &fcpu, 200, 100);
      mx_model_free(fx);
    }
  }
  mx_model_free(model);
  __real_free(g_set);
  g_set = NULL;
  return mx_test_finish();
}
