// The scheduler's queue limit and its 503 message (src/server/scheduler.c), with the scheduler
// paused so the state under test holds by construction: jobs queued while slots are free (the
// scheduler admits them at its next turn) do not count as waiting, and the refusal says how
// many wait and how many the queue holds.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/tokenizer.h"
#include "mx_test.h"
#include "server/scheduler.h"

static mx_server_job_t *make_job(mx_server_sched_t *s, const mx_model_t *m) {
  int32_t ids[3] = {1, 403, 407};  // BOS "Once upon"
  mx_server_job_opts_t jo = {.prompt = ids, .n_prompt = 3, .max_tokens = 4, .tok = m->tokenizer};
  mx_sampler_params_default(&jo.sampling);
  jo.sampling.temperature = 0.0f;
  mx_server_job_t *job = NULL;
  CHECK_OK(mx_server_job_create(s, &jo, &job));
  return job;
}

// Two slots, a queue of two: four jobs are accepted while the scheduler is paused (two take the
// free slots at its next turn, two wait), the fifth is refused naming 2 waiting and the limit 2.
static void test_busy_message(const mx_model_t *m) {
  mx_server_sched_opts_t o = {
      .model = m, .backend = "cpu", .ctx = 64, .n_slots = 2, .max_queue = 2};
  mx_server_sched_t *s = NULL;
  CHECK_OK(mx_server_sched_create(&o, &s));
  if (!s) return;
  mx_server_sched_pause(s, true);
  mx_server_job_t *jobs[5];
  for (int i = 0; i < 5; i++) jobs[i] = make_job(s, m);
  for (int i = 0; i < 4; i++) CHECK_OK(mx_server_job_submit(s, jobs[i]));
  mx_error_clear();
  CHECK(mx_server_job_submit(s, jobs[4]) == MX_ERR_RUNTIME);
  const char *msg = mx_error_message();
  CHECK_MSG(strstr(msg, "2 requests are already waiting") && strstr(msg, "the queue holds 2"),
            "message: %s", msg);
  mx_server_sched_stats_t ss;
  mx_server_sched_stats(s, &ss);
  CHECK_MSG(ss.queued == 4 && ss.active == 0, "queued %d active %d", ss.queued, ss.active);
  // Resumed, every accepted job runs to its end.
  mx_server_sched_pause(s, false);
  for (int i = 0; i < 4; i++) {
    mx_server_job_state_t st = {0};
    while (!st.done) mx_server_job_wait(s, jobs[i], 1000, NULL, &st);
    CHECK(!st.failed && st.n_generated >= 1);
  }
  for (int i = 0; i < 5; i++) mx_server_job_release(s, jobs[i]);
  mx_server_sched_destroy(s);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/../../models/stories260K", data ? data : "tests/data");
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(dir, &m));
  if (!m) return mx_test_finish();
  test_busy_message(m);
  mx_model_free(m);
  return mx_test_finish();
}
