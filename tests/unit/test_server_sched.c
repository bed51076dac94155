// The server's continuous-batching scheduler (src/server/scheduler.c) on the bundled
// stories260K model: requests decoded together (fewer slots than requests, prompts longer than
// one prefill chunk, stop strings) give exactly the text, finish reason and token count that
// mx_generate gives for each alone on a plain session; a released job frees its slot; the queue
// limit and draining refuse new work; with the prefix cache, jobs that share a prompt prefix
// with what a free slot holds prefill only the rest and still give exactly that text.
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlxcel/text_stream.h"
#include "mlxcel/tokenizer.h"
#include "mx_test.h"
#include "server/scheduler.h"

typedef struct req {
  const char *prompt;
  int32_t max_tokens;
  const char *stop;  // NULL = none
} req_t;

static const req_t kReqs[] = {
    {"Once upon a time", 60, NULL},
    {"One day, a little dog", 40, NULL},
    {"Lily and Tom went to the park. They saw a big tree with red apples and a small bird "
     "that sang a happy song every morning",
     50, NULL},
    {"The cat", 5, NULL},
    {"Once upon a time", 80, "Lily"},
    {"Tim had a red ball. He liked to", 30, " the"},
    {"Mom said", 70, "."},
    {"There was a big", 1, NULL},
};
enum { N_REQ = sizeof kReqs / sizeof kReqs[0] };

typedef struct ref {
  mx_strbuf_t text;
  mx_finish_reason_t finish;
  int32_t n_gen, n_prompt;
} ref_t;

static bool collect(void *user, int32_t id, const char *text, size_t len) {
  mx_strbuf_append(user, text, len);
  return true;
}

static void greedy(mx_sampler_params_t *p) {
  mx_sampler_params_default(p);
  p->temperature = 0.0f;
}

static bool encode(const mx_model_t *m, const char *text, int32_t **ids, int32_t *n) {
  mx_encode_opts_t eo = {.add_special = true, .parse_special = true};
  return mx_tokenizer_encode(m->tokenizer, text, strlen(text), &eo, ids, n) == MX_OK;
}

// What each request gives alone: mx_generate on a fresh session.
static void references(const mx_model_t *m, ref_t *refs) {
  mx_session_opts_t so = {.backend = "cpu", .ctx = 256, .prefill_chunk = 8};
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  if (!s) return;
  for (int i = 0; i < N_REQ; i++) {
    int32_t *ids = NULL, n = 0;
    CHECK(encode(m, kReqs[i].prompt, &ids, &n));
    mx_generate_opts_t go = {.max_tokens = kReqs[i].max_tokens};
    const char *stops[1] = {kReqs[i].stop};
    go.stop = kReqs[i].stop ? stops : NULL;
    go.n_stop = kReqs[i].stop ? 1 : 0;
    greedy(&go.sampling);
    mx_strbuf_init(&refs[i].text);
    mx_strbuf_append(&refs[i].text, "", 0);
    mx_generate_stats_t st;
    mx_session_reset(s);
    CHECK_OK(mx_generate(s, m->tokenizer, ids, n, &go, collect, &refs[i].text, &st));
    refs[i].finish = st.finish;
    refs[i].n_gen = st.n_generated;
    refs[i].n_prompt = n;
    free(ids);
  }
  mx_session_destroy(s);
}

static mx_server_job_t *make_job(mx_server_sched_t *s, const mx_model_t *m, const req_t *r) {
  int32_t *ids = NULL, n = 0;
  CHECK(encode(m, r->prompt, &ids, &n));
  const char *stops[1] = {r->stop};
  mx_server_job_opts_t jo = {.prompt = ids,
                             .n_prompt = n,
                             .max_tokens = r->max_tokens,
                             .stop = r->stop ? stops : NULL,
                             .n_stop = r->stop ? 1 : 0,
                             .tok = m->tokenizer};
  greedy(&jo.sampling);
  mx_server_job_t *job = NULL;
  CHECK_OK(mx_server_job_create(s, &jo, &job));
  free(ids);
  return job;
}

static void test_batched_equals_alone(const mx_model_t *m, const ref_t *refs, bool prefix_cache) {
  mx_server_sched_opts_t o = {.model = m,
                              .backend = "cpu",
                              .ctx = 256,
                              .n_slots = 3,
                              .prefill_chunk = 8,
                              .max_queue = 64,
                              .prefix_cache = prefix_cache};
  mx_server_sched_t *s = NULL;
  CHECK_OK(mx_server_sched_create(&o, &s));
  if (!s) return;
  CHECK(mx_server_sched_ctx(s) == 256);
  // Twice over, so that jobs join while others are mid-stream.
  mx_server_job_t *jobs[2 * N_REQ];
  mx_strbuf_t text[2 * N_REQ];
  mx_server_job_state_t st[2 * N_REQ];
  for (int i = 0; i < 2 * N_REQ; i++) {
    jobs[i] = make_job(s, m, &kReqs[i % N_REQ]);
    mx_strbuf_init(&text[i]);
    mx_strbuf_append(&text[i], "", 0);
    memset(&st[i], 0, sizeof st[i]);
    if (jobs[i]) CHECK_OK(mx_server_job_submit(s, jobs[i]));
  }
  for (int left = 2 * N_REQ; left > 0;) {
    left = 0;
    for (int i = 0; i < 2 * N_REQ; i++) {
      if (!jobs[i] || st[i].done) continue;
      mx_server_job_wait(s, jobs[i], 5, &text[i], &st[i]);
      if (!st[i].done) left++;
    }
  }
  for (int i = 0; i < 2 * N_REQ; i++) {
    const ref_t *r = &refs[i % N_REQ];
    CHECK_MSG(strcmp(text[i].data, r->text.data) == 0, "request %d: '%s' vs alone '%s'", i,
              text[i].data, r->text.data);
    CHECK_MSG(st[i].finish == r->finish && st[i].n_generated == r->n_gen &&
                  st[i].n_prompt == r->n_prompt && !st[i].failed,
              "request %d: finish %s/%s, %d/%d tokens", i, mx_finish_reason_name(st[i].finish),
              mx_finish_reason_name(r->finish), st[i].n_generated, r->n_gen);
    mx_server_job_release(s, jobs[i]);
    mx_strbuf_free(&text[i]);
  }
  mx_server_sched_stats_t ss;
  mx_server_sched_stats(s, &ss);
  CHECK(ss.jobs_done == 2 * N_REQ && ss.active == 0 && ss.queued == 0 && ss.n_slots == 3);
  CHECK(ss.decode_steps > 0 && ss.decode_tokens >= ss.decode_steps);
  // Every request's prompt is in kReqs twice: with the cache, some of them start on a slot that
  // holds their prompt (and prefill only its last token).
  CHECK_MSG(prefix_cache ? ss.cached_tokens > 0 : ss.cached_tokens == 0, "%llu cached tokens",
            (unsigned long long)ss.cached_tokens);
  CHECK(ss.prefill_tokens + ss.cached_tokens == ss.prompt_tokens);
  mx_server_sched_destroy(s);
}

// Runs one job to its end; returns its state and text (owned by the caller).
static mx_server_job_state_t run_job(mx_server_sched_t *s, const mx_model_t *m, const int32_t *ids,
                                     int32_t n, int32_t max_tokens, mx_strbuf_t *text) {
  mx_server_job_opts_t jo = {
      .prompt = ids, .n_prompt = n, .max_tokens = max_tokens, .tok = m->tokenizer};
  greedy(&jo.sampling);
  mx_server_job_state_t st = {0};
  mx_strbuf_init(text);
  mx_strbuf_append(text, "", 0);
  mx_server_job_t *job = NULL;
  CHECK_OK(mx_server_job_create(s, &jo, &job));
  if (!job) return st;
  CHECK_OK(mx_server_job_submit(s, job));
  while (!st.done) mx_server_job_wait(s, job, 100, text, &st);
  mx_server_job_release(s, job);
  return st;
}

typedef struct capture {
  mx_strbuf_t *text;
  int32_t *ids;
  int32_t n, cap;
} capture_t;

static bool capture(void *user, int32_t id, const char *text, size_t len) {
  capture_t *c = user;
  mx_strbuf_append(c->text, text, len);
  if (c->n < c->cap) c->ids[c->n++] = id;
  return true;
}

// mx_generate of the ids on a fresh session: the text a job must give, and its generated ids.
static void alone(const mx_model_t *m, const int32_t *ids, int32_t n, int32_t max_tokens,
                  mx_strbuf_t *text, int32_t *gen, int32_t *n_gen) {
  mx_session_opts_t so = {.backend = "cpu", .ctx = 256, .prefill_chunk = 8};
  mx_session_t *ses = NULL;
  CHECK_OK(mx_session_create(m, &so, &ses));
  mx_generate_opts_t go = {.max_tokens = max_tokens};
  greedy(&go.sampling);
  mx_strbuf_init(text);
  mx_strbuf_append(text, "", 0);
  mx_generate_stats_t st = {0};
  capture_t c = {.text = text, .ids = gen, .cap = 64};
  if (ses) CHECK_OK(mx_generate(ses, m->tokenizer, ids, n, &go, capture, &c, &st));
  *n_gen = c.n;
  mx_session_destroy(ses);
}

// A chat's second turn starts on the slot that holds the first (its prompt and reply), a new
// conversation takes the empty slot, and a third one evicts the least recently used; each job
// gives exactly the text it gives alone, and the cached counts are exact.
static void test_prefix_reuse(const mx_model_t *m) {
  mx_server_sched_opts_t o = {.model = m,
                              .backend = "cpu",
                              .ctx = 256,
                              .n_slots = 2,
                              .prefill_chunk = 8,
                              .max_queue = 4,
                              .prefix_cache = true};
  mx_server_sched_t *s = NULL;
  CHECK_OK(mx_server_sched_create(&o, &s));
  if (!s) return;
  int32_t *p1 = NULL, n1 = 0, *more = NULL, n_more = 0, *p3 = NULL, n3 = 0;
  CHECK(encode(m, "Once upon a time, there was a little girl named Lily.", &p1, &n1));
  CHECK(encode(m, "Tom had a big red ball.", &p3, &n3));
  mx_encode_opts_t eo = {.add_special = false};
  CHECK_OK(mx_tokenizer_encode(m->tokenizer, " She said", 9, &eo, &more, &n_more));
  if (!p1 || !p3 || !more) goto out;
  // Turn 1: nothing cached.
  mx_strbuf_t t1, r1, t2, r2, t3, t4;
  int32_t gen[64], n_gen = 0, gen2[64], n_gen2 = 0;
  alone(m, p1, n1, 20, &r1, gen, &n_gen);
  mx_server_job_state_t st = run_job(s, m, p1, n1, 20, &t1);
  CHECK_MSG(strcmp(t1.data, r1.data) == 0 && st.n_cached == 0 && n_gen == 20, "'%s' vs '%s'",
            t1.data, r1.data);
  // Turn 2: the prompt, the reply and more text. The slot holds the prompt and the reply's ids
  // but its last (sampled, never fed back).
  int32_t p2[128], n2 = 0;
  memcpy(p2, p1, (size_t)n1 * sizeof *p2);
  n2 = n1;
  for (int32_t i = 0; i < n_gen; i++) p2[n2++] = gen[i];
  memcpy(p2 + n2, more, (size_t)n_more * sizeof *p2);
  n2 += n_more;
  alone(m, p2, n2, 16, &r2, gen2, &n_gen2);
  st = run_job(s, m, p2, n2, 16, &t2);
  CHECK_MSG(strcmp(t2.data, r2.data) == 0, "'%s' vs '%s'", t2.data, r2.data);
  CHECK_MSG(st.n_cached == n1 + n_gen - 1 && st.n_prompt == n2, "cached %d of %d, expected %d",
            st.n_cached, st.n_prompt, n1 + n_gen - 1);
  int32_t n_gen1 = n_gen;
  // Another conversation takes the empty slot (it shares only the BOS with slot 0's, too little
  // of it to evict a conversation for); then turn 2 again finds its whole prompt but the last token
  // (kept to prefill for the logits).
  mx_strbuf_t r3;
  alone(m, p3, n3, 10, &r3, gen, &n_gen);
  st = run_job(s, m, p3, n3, 10, &t3);
  CHECK_MSG(strcmp(t3.data, r3.data) == 0 && st.n_cached == 0, "cached %d", st.n_cached);
  st = run_job(s, m, p2, n2, 16, &t4);
  CHECK_MSG(strcmp(t4.data, r2.data) == 0 && st.n_cached == n2 - 1, "cached %d of %d", st.n_cached,
            n2);
  // A prompt without BOS shares nothing: it evicts the least recently used slot (p3's). p3
  // then shares only its BOS with p2's slot, now the least recently used, which it evicts; so
  // p2 finds nothing of its own.
  mx_strbuf_t t5, t6, t7;
  st = run_job(s, m, more, n_more, 4, &t5);
  CHECK(st.n_cached == 0);
  st = run_job(s, m, p3, n3, 10, &t6);
  CHECK_MSG(st.n_cached == 1 && strcmp(t6.data, r3.data) == 0, "cached %d", st.n_cached);
  st = run_job(s, m, p2, n2, 16, &t7);
  CHECK_MSG(st.n_cached == 0 && strcmp(t7.data, r2.data) == 0, "cached %d", st.n_cached);
  mx_server_sched_stats_t ss;
  mx_server_sched_stats(s, &ss);
  CHECK(ss.cached_tokens == (uint64_t)(n1 + n_gen1 - 1 + n2 - 1 + 1));
  mx_strbuf_free(&t1);
  mx_strbuf_free(&r1);
  mx_strbuf_free(&t2);
  mx_strbuf_free(&r2);
  mx_strbuf_free(&t3);
  mx_strbuf_free(&r3);
  mx_strbuf_free(&t4);
  mx_strbuf_free(&t5);
  mx_strbuf_free(&t6);
  mx_strbuf_free(&t7);
out:
  free(p1);
  free(p3);
  free(more);
  mx_server_sched_destroy(s);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void test_cancel_queue_drain(const mx_model_t *m) {
  mx_server_sched_opts_t o = {
      .model = m, .backend = "cpu", .ctx = 256, .n_slots = 1, .max_queue = 1};
  mx_server_sched_t *s = NULL;
  CHECK_OK(mx_server_sched_create(&o, &s));
  if (!s) return;
  req_t long_req = {"Once upon a time", 200, NULL};
  mx_server_job_t *a = make_job(s, m, &long_req), *b = make_job(s, m, &long_req),
                  *c = make_job(s, m, &long_req);
  // Held, the scheduler admits and steps only when allowed: a is a few tokens into its 200
  // when it is released, however fast the machine runs the others.
  mx_server_sched_pause(s, true);
  CHECK_OK(mx_server_job_submit(s, a));
  CHECK_OK(mx_server_job_submit(s, b));
  // One slot and one queue place are taken: the third is refused.
  CHECK(mx_server_job_submit(s, c) == MX_ERR_RUNTIME && strstr(mx_error_message(), "busy"));
  mx_server_job_release(s, c);
  // a streams; releasing it mid-way frees the slot for b.
  mx_server_sched_allow_turns(s, 4);
  mx_strbuf_t t;
  mx_strbuf_init(&t);
  mx_server_job_state_t st = {0};
  while (st.n_generated == 0) mx_server_job_wait(s, a, 100, &t, &st);
  // A turn is a prefill chunk and a decode step: the first turn's prefill gives a token and its
  // step another, so the 4 turns make at most 5 of the 200, however late this thread looks.
  CHECK_MSG(!st.done && st.n_generated <= 5, "%d tokens, done %d", st.n_generated, st.done);
  mx_server_job_release(s, a);
  mx_server_sched_pause(s, false);
  mx_server_sched_stats_t ss;
  for (int i = 0; i < 200; i++) {
    mx_server_sched_stats(s, &ss);
    if (ss.jobs_cancelled == 1 && ss.queued == 0) break;
    sleep_ms(10);
  }
  // b holds the slot, or already finished its 200 tokens (a loaded host can stall this loop
  // longer than stories260K takes to generate them; the slot move itself is atomic).
  mx_server_job_wait(s, b, 0, NULL, &st);
  CHECK_MSG(ss.jobs_cancelled == 1 && ss.queued == 0 && (ss.active == 1 || st.done),
            "cancelled %llu queued %d active %d", (unsigned long long)ss.jobs_cancelled, ss.queued,
            ss.active);
  // Draining lets b finish and refuses new jobs.
  CHECK(mx_server_sched_drain(s, 60.0));
  mx_server_job_wait(s, b, 0, NULL, &st);
  CHECK(st.done && st.n_generated == 200 && st.finish == MX_FINISH_LENGTH);
  mx_server_job_release(s, b);
  mx_server_job_t *d = make_job(s, m, &long_req);
  CHECK(mx_server_job_submit(s, d) == MX_ERR_RUNTIME && strstr(mx_error_message(), "shutting"));
  mx_server_job_release(s, d);
  // Bad jobs are refused with the numbers.
  int32_t ids[2] = {1, 9999};
  mx_server_job_opts_t jo = {.prompt = ids, .n_prompt = 2, .max_tokens = 5, .tok = m->tokenizer};
  greedy(&jo.sampling);
  mx_server_job_t *e = NULL;
  CHECK(mx_server_job_create(s, &jo, &e) == MX_ERR_INVALID_ARG &&
        strstr(mx_error_message(), "9999"));
  ids[1] = 5;
  jo.max_tokens = 255;
  CHECK(mx_server_job_create(s, &jo, &e) == MX_ERR_INVALID_ARG &&
        strstr(mx_error_message(), "257"));
  jo.max_tokens = 5;
  jo.sampling.top_p = 0.0f;
  CHECK(mx_server_job_create(s, &jo, &e) != MX_OK && !e);
  mx_strbuf_free(&t);
  mx_server_sched_destroy(s);
}

// A long prompt is prefilled one chunk per scheduler step, each followed by a decode step of the
// running stream: while B's 15-chunk prompt goes in, A keeps getting tokens (one per chunk).
static void test_prefill_interleaves(const mx_model_t *m) {
  mx_server_sched_opts_t o = {
      .model = m, .backend = "cpu", .ctx = 256, .n_slots = 2, .prefill_chunk = 8, .max_queue = 4};
  mx_server_sched_t *s = NULL;
  CHECK_OK(mx_server_sched_create(&o, &s));
  if (!s) return;
  req_t a_req = {"Once upon a time", 240, NULL};
  mx_server_job_t *a = make_job(s, m, &a_req);
  CHECK_OK(mx_server_job_submit(s, a));
  mx_server_job_state_t sa, sb;
  memset(&sb, 0, sizeof sb);
  do mx_server_job_wait(s, a, 100, NULL, &sa);
  while (sa.n_generated < 1 && !sa.done);
  // B: 120 prompt ids, 15 chunks of 8.
  int32_t ids[120];
  ids[0] = 1;
  for (int i = 1; i < 120; i++) ids[i] = 3 + (i * 37) % 500;
  mx_server_job_opts_t jo = {.prompt = ids, .n_prompt = 120, .max_tokens = 4, .tok = m->tokenizer};
  greedy(&jo.sampling);
  mx_server_job_t *b = NULL;
  CHECK_OK(mx_server_job_create(s, &jo, &b));
  mx_server_job_wait(s, a, 0, NULL, &sa);
  int32_t a_before = sa.n_generated;
  CHECK_OK(mx_server_job_submit(s, b));
  while (sb.n_generated < 1 && !sb.done) mx_server_job_wait(s, b, 100, NULL, &sb);
  mx_server_job_wait(s, a, 0, NULL, &sa);
  CHECK_MSG(sa.n_generated - a_before >= 14 || sa.done,
            "A advanced %d tokens while B's 15 prefill chunks ran", sa.n_generated - a_before);
  mx_server_job_release(s, a);
  mx_server_job_release(s, b);
  mx_server_sched_destroy(s);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/../../models/stories260K", data ? data : "tests/data");
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(dir, &m));
  if (!m) return mx_test_finish();
  ref_t refs[N_REQ];
  references(m, refs);
  test_batched_equals_alone(m, refs, false);
  test_batched_equals_alone(m, refs, true);
  test_prefix_reuse(m);
  test_cancel_queue_drain(m);
  test_prefill_interleaves(m);
  for (int i = 0; i < N_REQ; i++) mx_strbuf_free(&refs[i].text);
  mx_model_free(m);
  return mx_test_finish();
}
