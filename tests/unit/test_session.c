// Sessions and the generation loop. Part 1 uses a fake backend registered here (fixed logits:
// the next token is a known function of the token and its position). Part 2 runs the real
// stories260K checkpoint through the "interp" backend against upstream llama2.c (skipped when
// $MX_SHARED is absent).
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlxcel/session.h"
#include "mlxcel/tokenizer.h"
#include "mx_test.h"
#include "session/session_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define MX_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MX_TEST_SANITIZED 1
#endif
#endif
#ifndef MX_TEST_SANITIZED
#define MX_TEST_SANITIZED 0
#endif

// ---- Fake backend ----

enum { FAKE_V = 50, FAKE_MAX_CALLS = 64 };

typedef struct fake_call {
  char kind;  // 'p' or 'd'
  int32_t n;
  int64_t pos0;
} fake_call_t;

typedef struct fake_state {
  int32_t chunk;
  int64_t ctx;
  int n_calls;
  fake_call_t calls[FAKE_MAX_CALLS];
  int resets;
} fake_state_t;

static fake_state_t *g_last_fake;  // the most recently created fake state (for inspection)
static int g_fake_fail_at = -1;    // make call number N fail

// The token the fake model "predicts" after `id` at position pos.
static int32_t fake_next(int32_t id, int64_t pos) { return (int32_t)((id * 3 + pos + 1) % FAKE_V); }

static void fake_logits(int32_t id, int64_t pos, float *l) {
  for (int32_t v = 0; v < FAKE_V; v++) l[v] = 0.0f;
  l[fake_next(id, pos)] = 5.0f;
}

static mx_status_t fake_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                               void **state) {
  fake_state_t *s = calloc(1, sizeof *s);
  if (!s) return MX_ERR_NOMEM;
  s->chunk = cfg->prefill_chunk;
  s->ctx = cfg->ctx;
  g_last_fake = s;
  *state = s;
  return MX_OK;
}

static mx_status_t fake_record(fake_state_t *s, char kind, int32_t n, int64_t pos0) {
  if (g_fake_fail_at == s->n_calls) return mx_error_set(MX_ERR_RUNTIME, "fake failure");
  if (s->n_calls < FAKE_MAX_CALLS) s->calls[s->n_calls] = (fake_call_t){kind, n, pos0};
  s->n_calls++;
  return MX_OK;
}

static mx_status_t fake_prefill(void *state, const int32_t *ids, int32_t n, int64_t pos0,
                                float *last, float *all) {
  fake_state_t *s = state;
  if (n > s->chunk || pos0 + n > s->ctx) return mx_error_set(MX_ERR_RUNTIME, "fake: bad call");
  mx_status_t st = fake_record(s, 'p', n, pos0);
  if (st) return st;
  for (int32_t t = 0; t < n; t++)
    if (all) fake_logits(ids[t], pos0 + t, all + (size_t)t * FAKE_V);
  fake_logits(ids[n - 1], pos0 + n - 1, last);
  return MX_OK;
}

static mx_status_t fake_decode(void *state, int32_t id, int64_t pos, float *logits) {
  fake_state_t *s = state;
  if (pos >= s->ctx) return mx_error_set(MX_ERR_RUNTIME, "fake: bad decode");
  mx_status_t st = fake_record(s, 'd', 1, pos);
  if (st) return st;
  fake_logits(id, pos, logits);
  return MX_OK;
}

static void fake_reset(void *state) { ((fake_state_t *)state)->resets++; }
static void fake_destroy(void *state) { free(state); }

static const mx_backend_t g_fake = {.name = "fake",
                                    .caps = MX_CAP_PREFILL_ALL_LOGITS,
                                    .create = fake_create,
                                    .prefill = fake_prefill,
                                    .decode = fake_decode,
                                    .reset = fake_reset,
                                    .destroy = fake_destroy};
static const mx_backend_t g_fake_nolog = {.name = "fake-nolog",
                                          .create = fake_create,
                                          .prefill = fake_prefill,
                                          .decode = fake_decode,
                                          .reset = fake_reset,
                                          .destroy = fake_destroy};

static mx_model_t g_model;

static void init_fake_model(void) {
  memset(&g_model, 0, sizeof g_model);
  mx_model_config_t *c = &g_model.config;
  strcpy(c->model_type, "llama");
  c->vocab_size = FAKE_V;
  c->max_position_embeddings = 8192;
  c->n_eos = 2;
  c->eos_token_ids[0] = 2;
  c->eos_token_ids[1] = 49;
  c->bos_token_id = 1;
}

static mx_session_t *make_session(const char *backend, int64_t ctx, int32_t chunk) {
  mx_session_opts_t o = {.backend = backend, .ctx = ctx, .prefill_chunk = chunk};
  mx_session_t *s = NULL;
  mx_status_t st = mx_session_create(&g_model, &o, &s);
  if (st) fprintf(stderr, "session_create: %s\n", mx_error_message());
  return s;
}

static void test_options(void) {
  unsetenv("MLXCEL_BACKEND");
  unsetenv("MLXCEL_XLA_CONTEXT_CAPACITY");
  // Default capacity: min(max_position_embeddings, 4096).
  mx_session_t *s = make_session("fake", 0, 0);
  CHECK(s && mx_session_ctx(s) == 4096 && mx_session_vocab(s) == FAKE_V);
  CHECK(s && g_last_fake->chunk == 64 && g_last_fake->ctx == 4096);
  CHECK(mx_session_prefill_chunk(s) == 64);  // the backend declares no default: 64
  CHECK(s && mx_session_backend(s) == &g_fake && mx_session_model(s) == &g_model);
  CHECK(s && mx_session_logits(s) == NULL && mx_session_n_past(s) == 0);
  mx_session_destroy(s);
  g_model.config.max_position_embeddings = 300;
  s = make_session("fake", 0, 0);
  CHECK(s && mx_session_ctx(s) == 300);
  mx_session_destroy(s);
  // A chunk never exceeds the capacity.
  s = make_session("fake", 16, 0);
  CHECK(s && g_last_fake->chunk == 16);
  mx_session_destroy(s);

  // ctx beyond the model's limit.
  mx_session_opts_t o = {.backend = "fake", .ctx = 301};
  s = (mx_session_t *)1;
  CHECK(mx_session_create(&g_model, &o, &s) == MX_ERR_INVALID_ARG && s == NULL);
  CHECK_MSG(strstr(mx_error_message(), "301") && strstr(mx_error_message(), "300"), "%s",
            mx_error_message());
  o.ctx = -5;
  CHECK(mx_session_create(&g_model, &o, &s) == MX_ERR_INVALID_ARG);
  o.ctx = 0;
  o.prefill_chunk = -1;
  CHECK(mx_session_create(&g_model, &o, &s) == MX_ERR_INVALID_ARG);
  o.prefill_chunk = 0;

  // The library never reads the environment: the variables the CLI maps onto these options
  // (tools/mlxcel; their parsing is checked by tests/cli_model.sh) change nothing here.
  setenv("MLXCEL_XLA_CONTEXT_CAPACITY", "128", 1);
  s = make_session("fake", 0, 0);
  CHECK(s && mx_session_ctx(s) == 300);
  mx_session_destroy(s);
  setenv("MLXCEL_XLA_CONTEXT_CAPACITY", "12x", 1);
  s = make_session("fake", 64, 0);
  CHECK(s && mx_session_ctx(s) == 64);
  mx_session_destroy(s);
  unsetenv("MLXCEL_XLA_CONTEXT_CAPACITY");
  g_model.config.max_position_embeddings = 8192;

  // Backends: unknown names list the known ones; the environment picks one.
  s = (mx_session_t *)1;
  CHECK(mx_session_create(&g_model, &(mx_session_opts_t){.backend = "nope"}, &s) ==
        MX_ERR_INVALID_ARG);
  CHECK(s == NULL);
  CHECK_MSG(strstr(mx_error_message(), "'nope'") && strstr(mx_error_message(), "interp") &&
                strstr(mx_error_message(), "fake"),
            "%s", mx_error_message());
  // No backend named: cpu, whatever $MLXCEL_BACKEND says (the fake model has no checkpoint,
  // so the cpu backend refuses it).
  setenv("MLXCEL_BACKEND", "fake", 1);
  CHECK(mx_session_create(&g_model, NULL, &s) == MX_ERR_INVALID_ARG && s == NULL);
  CHECK_MSG(strstr(mx_error_message(), "backend cpu") && strstr(mx_error_message(), "checkpoint"),
            "%s", mx_error_message());
  unsetenv("MLXCEL_BACKEND");
  // Backend options: threads in 0..256, a device the backend has.
  o = (mx_session_opts_t){.backend = "fake", .backend_opts.threads = -1};
  CHECK(mx_session_create(&g_model, &o, &s) == MX_ERR_INVALID_ARG && s == NULL);
  CHECK_MSG(strstr(mx_error_message(), "threads") && strstr(mx_error_message(), "-1"), "%s",
            mx_error_message());
  o.backend_opts.threads = 257;
  CHECK(mx_session_create(&g_model, &o, &s) == MX_ERR_INVALID_ARG);
  o = (mx_session_opts_t){.backend = "cpu", .backend_opts.device = "cuda:0"};
  CHECK(mx_session_create(&g_model, &o, &s) == MX_ERR_INVALID_ARG && s == NULL);
  CHECK_MSG(strstr(mx_error_message(), "cuda:0"), "%s", mx_error_message());
  CHECK(mx_backend_find("interp") != NULL && mx_backend_find("nope") == NULL);
  CHECK(mx_backend_register(&g_fake) == MX_ERR_INVALID_ARG);  // already there
  mx_session_destroy(NULL);
}

static void test_prefill_decode(void) {
  mx_session_t *s = make_session("fake", 512, 4);
  int32_t ids[10];
  for (int i = 0; i < 10; i++) ids[i] = i + 3;
  float *all = malloc(10 * FAKE_V * sizeof *all);
  CHECK_OK(mx_session_prefill(s, ids, 10, all));
  fake_state_t *f = g_last_fake;
  CHECK(f->n_calls == 3);
  CHECK(f->calls[0].n == 4 && f->calls[0].pos0 == 0);
  CHECK(f->calls[1].n == 4 && f->calls[1].pos0 == 4);
  CHECK(f->calls[2].n == 2 && f->calls[2].pos0 == 8);
  int rows_ok = 0;
  for (int t = 0; t < 10; t++) rows_ok += all[t * FAKE_V + fake_next(ids[t], t)] == 5.0f;
  CHECK(rows_ok == 10);
  CHECK(mx_session_n_past(s) == 10);
  const float *l = mx_session_logits(s);
  CHECK(l && l[fake_next(12, 9)] == 5.0f);
  CHECK_OK(mx_session_decode(s, 7));
  CHECK(mx_session_n_past(s) == 11 && mx_session_logits(s)[fake_next(7, 10)] == 5.0f);
  CHECK(f->calls[3].kind == 'd' && f->calls[3].pos0 == 10);
  CHECK(s->tokens[9] == 12 && s->tokens[10] == 7);

  // Context overflow: the exact message, no backend call, state unchanged.
  int32_t *big = calloc(600, sizeof *big);
  mx_session_reset(s);
  CHECK(f->resets == 1 && mx_session_n_past(s) == 0 && mx_session_logits(s) == NULL);
  int calls = f->n_calls;
  CHECK(mx_session_prefill(s, big, 600, NULL) == MX_ERR_INVALID_ARG);
  CHECK_MSG(strcmp(mx_error_message(),
                   "prompt of 600 tokens does not fit: context capacity 512, 0 tokens already in "
                   "the session") == 0,
            "%s", mx_error_message());
  CHECK(f->n_calls == calls && mx_session_n_past(s) == 0);
  CHECK_OK(mx_session_prefill(s, big, 500, NULL));
  CHECK(mx_session_prefill(s, big, 13, NULL) == MX_ERR_INVALID_ARG);
  CHECK_MSG(strstr(mx_error_message(),
                   "prompt of 13 tokens does not fit: context capacity 512, "
                   "500 tokens already in the session"),
            "%s", mx_error_message());
  CHECK_OK(mx_session_prefill(s, big, 12, NULL));
  CHECK(mx_session_n_past(s) == 512);
  CHECK(mx_session_decode(s, 3) == MX_ERR_INVALID_ARG);
  CHECK_MSG(strstr(mx_error_message(), "does not fit: context capacity 512, 512 tokens"), "%s",
            mx_error_message());

  // Token ids out of range, checked before any work.
  mx_session_reset(s);
  calls = f->n_calls;
  int32_t oob[3] = {1, FAKE_V, 2};
  CHECK(mx_session_prefill(s, oob, 3, NULL) == MX_ERR_INVALID_ARG);
  CHECK_MSG(strstr(mx_error_message(), "token id 50 at index 1 is out of range [0, 50)"), "%s",
            mx_error_message());
  oob[1] = -1;
  CHECK(mx_session_prefill(s, oob, 3, NULL) == MX_ERR_INVALID_ARG);
  CHECK(mx_session_decode(s, -4) == MX_ERR_INVALID_ARG);
  CHECK(mx_session_decode(s, FAKE_V) == MX_ERR_INVALID_ARG);
  CHECK(f->n_calls == calls && mx_session_n_past(s) == 0);
  CHECK_OK(mx_session_prefill(s, NULL, 0, NULL));  // nothing to do
  CHECK(mx_session_prefill(s, ids, -1, NULL) == MX_ERR_INVALID_ARG);

  // A failing backend call: the error names the position; earlier chunks stay.
  g_fake_fail_at = f->n_calls + 1;
  CHECK(mx_session_prefill(s, ids, 10, NULL) == MX_ERR_RUNTIME);
  CHECK_MSG(strstr(mx_error_message(), "fake failure"), "%s", mx_error_message());
  CHECK(mx_session_n_past(s) == 4 && mx_session_logits(s) == NULL);
  g_fake_fail_at = -1;
  free(big);
  free(all);
  mx_session_destroy(s);

  // all_logits needs the capability.
  s = make_session("fake-nolog", 64, 8);
  float row[FAKE_V * 2];
  CHECK(mx_session_prefill(s, ids, 2, row) == MX_ERR_UNSUPPORTED);
  CHECK_OK(mx_session_prefill(s, ids, 2, NULL));
  mx_session_destroy(s);
}

// ---- Generation loop with the fake backend (no tokenizer: ids only) ----

typedef struct collect {
  int32_t ids[512];
  int n;
  int stop_after;  // return false after this many tokens (0 = never)
} collect_t;

static bool on_token(void *user, int32_t id, const char *text, size_t len) {
  collect_t *c = user;
  if (c->n < 512) c->ids[c->n] = id;
  c->n++;
  return !(c->stop_after && c->n >= c->stop_after);
}

// Greedy trajectory of the fake model from `first` at position pos.
static int32_t expect_next(int32_t prev, int64_t pos) { return fake_next(prev, pos); }

static void test_generate(void) {
  mx_session_t *s = make_session("fake", 64, 8);
  mx_generate_opts_t o = {.max_tokens = 5};
  mx_sampler_params_default(&o.sampling);
  o.sampling.temperature = 0.0f;
  o.ignore_eos = true;
  const int32_t prompt[3] = {1, 10, 20};
  collect_t c = {0};
  mx_generate_stats_t stats;
  CHECK_OK(mx_generate(s, NULL, prompt, 3, &o, on_token, &c, &stats));
  CHECK(stats.finish == MX_FINISH_LENGTH && stats.n_generated == 5 && stats.n_prompt == 3);
  CHECK(c.n == 5);
  int32_t prev = 20;
  int ok = 0;
  for (int i = 0; i < 5; i++) {
    int32_t e = expect_next(prev, 2 + i);
    ok += c.ids[i] == e;
    prev = e;
  }
  CHECK_MSG(ok == 5, "%d/5 ids as expected", ok);
  // The last token is not decoded (nothing would read its logits).
  CHECK(mx_session_n_past(s) == 3 + 4);
  CHECK(stats.prefill_seconds >= 0.0 && stats.decode_seconds >= 0.0);

  // EOS: find a prompt whose greedy path hits 2 or 49; the EOS id is not passed on.
  mx_session_reset(s);
  o.ignore_eos = false;
  o.max_tokens = 40;
  memset(&c, 0, sizeof c);
  CHECK_OK(mx_generate(s, NULL, prompt, 3, &o, on_token, &c, &stats));
  prev = 20;
  int expect_n = 0;
  for (int i = 0; i < 40; i++) {
    int32_t e = expect_next(prev, 2 + i);
    if (e == 2 || e == 49) break;
    expect_n++;
    prev = e;
  }
  if (expect_n < 40) {
    CHECK_MSG(stats.finish == MX_FINISH_EOS && c.n == expect_n, "finish %s, %d tokens vs %d",
              mx_finish_reason_name(stats.finish), c.n, expect_n);
  } else {
    CHECK(stats.finish == MX_FINISH_LENGTH);
  }
  CHECK(stats.n_generated == c.n);

  // Callback stop.
  mx_session_reset(s);
  o.ignore_eos = true;
  memset(&c, 0, sizeof c);
  c.stop_after = 3;
  CHECK_OK(mx_generate(s, NULL, prompt, 3, &o, on_token, &c, &stats));
  CHECK(stats.finish == MX_FINISH_CALLBACK && c.n == 3 && stats.n_generated == 3);

  // Context full: 64 - 3 = 61 decodes possible, the 62nd token is sampled but cannot be fed.
  mx_session_reset(s);
  o.max_tokens = 100;
  memset(&c, 0, sizeof c);
  CHECK_OK(mx_generate(s, NULL, prompt, 3, &o, on_token, &c, &stats));
  CHECK_MSG(stats.finish == MX_FINISH_CONTEXT && c.n == 62, "finish %s after %d",
            mx_finish_reason_name(stats.finish), c.n);
  CHECK(mx_session_n_past(s) == 64);
  // max_tokens reached exactly when the context fills: "length" wins.
  mx_session_reset(s);
  o.max_tokens = 62;
  CHECK_OK(mx_generate(s, NULL, prompt, 3, &o, NULL, NULL, &stats));
  CHECK(stats.finish == MX_FINISH_LENGTH && stats.n_generated == 62);

  // Continuing a session: the prompt is appended.
  mx_session_reset(s);
  o.max_tokens = 2;
  CHECK_OK(mx_generate(s, NULL, prompt, 3, &o, NULL, NULL, &stats));
  int64_t np = mx_session_n_past(s);
  CHECK_OK(mx_generate(s, NULL, prompt, 3, &o, NULL, NULL, &stats));
  CHECK(mx_session_n_past(s) == np + 3 + 1);
  // Empty prompt continues from the session's logits; on an empty session it is an error.
  CHECK_OK(mx_generate(s, NULL, NULL, 0, &o, NULL, NULL, &stats));
  mx_session_reset(s);
  CHECK(mx_generate(s, NULL, NULL, 0, &o, NULL, NULL, &stats) == MX_ERR_INVALID_ARG);

  // Prompt overflow is reported before anything happens.
  int32_t big[70] = {0};
  CHECK(mx_generate(s, NULL, big, 70, &o, NULL, NULL, &stats) == MX_ERR_INVALID_ARG);
  CHECK_MSG(strstr(mx_error_message(), "prompt of 70 tokens does not fit"), "%s",
            mx_error_message());

  // Bad options.
  o.max_tokens = 0;
  CHECK(mx_generate(s, NULL, prompt, 3, &o, NULL, NULL, NULL) == MX_ERR_INVALID_ARG);
  o.max_tokens = 4;
  const char *stops[1] = {""};
  o.stop = stops;
  o.n_stop = 1;
  CHECK(mx_generate(s, NULL, prompt, 3, &o, NULL, NULL, NULL) == MX_ERR_INVALID_ARG);
  o.n_stop = 0;
  o.sampling.top_p = 2.0f;
  CHECK(mx_generate(s, NULL, prompt, 3, &o, NULL, NULL, NULL) == MX_ERR_INVALID_ARG);
  CHECK(strstr(mx_error_message(), "top_p") != NULL);
  mx_session_destroy(s);

  CHECK(strcmp(mx_finish_reason_name(MX_FINISH_LENGTH), "length") == 0);
  CHECK(strcmp(mx_finish_reason_name(MX_FINISH_EOS), "eos") == 0);
  CHECK(strcmp(mx_finish_reason_name(MX_FINISH_STOP), "stop") == 0);
  CHECK(strcmp(mx_finish_reason_name(MX_FINISH_CALLBACK), "callback") == 0);
  CHECK(strcmp(mx_finish_reason_name(MX_FINISH_CONTEXT), "context") == 0);
}

// ---- Text, stop strings and EOS with a scripted backend and the stories260K tokenizer ----

// The scripted model predicts g_script[p + 1] after position p, then EOS (2) forever.
static int32_t g_script[256];
static int32_t g_script_n;

static void script_logits(int64_t pos, float *l) {
  for (int32_t v = 0; v < 512; v++) l[v] = 0.0f;
  l[pos + 1 < g_script_n ? g_script[pos + 1] : 2] = 5.0f;
}

static mx_status_t script_prefill(void *state, const int32_t *ids, int32_t n, int64_t pos0,
                                  float *last, float *all) {
  for (int32_t t = 0; t < n && all; t++) script_logits(pos0 + t, all + (size_t)t * 512);
  script_logits(pos0 + n - 1, last);
  return MX_OK;
}

static mx_status_t script_decode(void *state, int32_t id, int64_t pos, float *logits) {
  script_logits(pos, logits);
  return MX_OK;
}

static const mx_backend_t g_script_backend = {.name = "script",
                                              .caps = MX_CAP_PREFILL_ALL_LOGITS,
                                              .create = fake_create,
                                              .prefill = script_prefill,
                                              .decode = script_decode,
                                              .reset = fake_reset,
                                              .destroy = fake_destroy};

typedef struct text_collect {
  mx_strbuf_t text;
  int calls;
  int flush_calls;  // calls with id -1
  bool bad_nul;
} text_collect_t;

static bool on_text(void *user, int32_t id, const char *text, size_t len) {
  text_collect_t *c = user;
  mx_strbuf_append(&c->text, text, len);
  if (text[len] != '\0') c->bad_nul = true;
  if (id < 0) {
    c->flush_calls++;
  } else {
    c->calls++;
  }
  return true;
}

static mx_status_t run_script(mx_tokenizer_t *tok, const char *stop, int32_t max_tokens,
                              bool ignore_eos, text_collect_t *c, mx_generate_stats_t *st) {
  mx_model_t m;
  memset(&m, 0, sizeof m);
  m.config.vocab_size = 512;
  m.config.max_position_embeddings = 1024;
  m.config.n_eos = 1;
  m.config.eos_token_ids[0] = 2;
  mx_session_t *s = NULL;
  mx_session_opts_t o = {.backend = "script", .ctx = 512};
  mx_status_t rc = mx_session_create(&m, &o, &s);
  if (rc) return rc;
  mx_generate_opts_t g = {.max_tokens = max_tokens, .ignore_eos = ignore_eos};
  const char *stops[1] = {stop};
  g.stop = stop ? stops : NULL;
  g.n_stop = stop ? 1 : 0;
  mx_sampler_params_default(&g.sampling);
  g.sampling.temperature = 0.0f;
  memset(c, 0, sizeof *c);
  mx_strbuf_init(&c->text);
  rc = mx_generate(s, tok, g_script, 2, &g, on_text, c, st);  // prompt: BOS + first word
  mx_session_destroy(s);
  return rc;
}

static void test_stop_strings(const char *shared) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/models/stories260K/hf", shared);
  mx_tokenizer_t *tok = NULL;
  CHECK_OK(mx_tokenizer_load(dir, &tok));
  if (!tok) return;
  const char *full =
      "Once upon a time, there was a girl named Lily. She liked caf\xc3\xa9 \xe2\x98\x83 "
      "and the end";
  int32_t *ids = NULL, n = 0;
  CHECK_OK(mx_tokenizer_encode(tok, full, strlen(full), NULL, &ids, &n));
  if (!ids || n < 3 || n > 256 || ids[0] != 1) {
    CHECK_MSG(0, "unexpected encoding of the script text (%d ids)", n);
    free(ids);
    mx_tokenizer_destroy(tok);
    return;
  }
  memcpy(g_script, ids, (size_t)n * sizeof *ids);
  g_script_n = n;
  free(ids);
  const char *expect = full + strlen("Once");  // the prompt is "<s> Once"
  const int32_t n_gen = n - 2;
  text_collect_t c;
  mx_generate_stats_t st;

  // Plain run to EOS: all the text, one call per token, EOS not passed on.
  CHECK_OK(run_script(tok, NULL, 1000, false, &c, &st));
  CHECK_MSG(c.text.data && strcmp(c.text.data, expect) == 0, "text '%s'", c.text.data);
  CHECK(st.finish == MX_FINISH_EOS && st.n_generated == n_gen && c.calls == n_gen);
  CHECK(c.flush_calls == 0 && !c.bad_nul);
  mx_strbuf_free(&c.text);

  // Stop strings: the output is the text before the first match.
  const char *stops[] = {"Lily",    ". She", "girl na", "\xc3\xa9", "\xe2\x98\x83 and",
                         "the end", "e",     "Once",    "xyz",      " upon"};
  for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
    CHECK_OK(run_script(tok, stops[i], 1000, false, &c, &st));
    const char *hit = strstr(expect, stops[i]);
    size_t want_len = hit ? (size_t)(hit - expect) : strlen(expect);
    const char *got = c.text.data ? c.text.data : "";
    CHECK_MSG(strlen(got) == want_len && strncmp(got, expect, want_len) == 0, "stop '%s': got '%s'",
              stops[i], got);
    CHECK_MSG(st.finish == (hit ? MX_FINISH_STOP : MX_FINISH_EOS), "stop '%s': finish %s", stops[i],
              mx_finish_reason_name(st.finish));
    CHECK(c.calls == st.n_generated && !c.bad_nul);
    mx_strbuf_free(&c.text);
  }

  // A partial match held back when EOS comes: the held text goes out in a final id -1 call.
  CHECK_OK(run_script(tok, "the end!", 1000, false, &c, &st));
  CHECK_MSG(c.text.data && strcmp(c.text.data, expect) == 0, "text '%s'", c.text.data);
  CHECK(st.finish == MX_FINISH_EOS && c.flush_calls == 1 && c.calls == n_gen);
  mx_strbuf_free(&c.text);
  // ... and at max_tokens it goes out with the last token.
  CHECK_OK(run_script(tok, "the end!", n_gen, false, &c, &st));
  CHECK_MSG(c.text.data && strcmp(c.text.data, expect) == 0, "text '%s'", c.text.data);
  CHECK(st.finish == MX_FINISH_LENGTH && c.flush_calls == 0 && c.calls == n_gen);
  mx_strbuf_free(&c.text);
  // Cut in the middle of a multi-byte character: the last token's partial UTF-8 is flushed as
  // U+FFFD, never as a broken sequence.
  int32_t cut = 0;
  for (int32_t k = 2; k < n; k++) {
    const char *piece = mx_tokenizer_id_to_piece(tok, g_script[k], NULL);
    if (piece && strcmp(piece, "<0x98>") == 0) cut = k - 1;  // up to <0xE2><0x98> of the snowman
  }
  CHECK(cut > 0);
  if (cut > 0) {
    CHECK_OK(run_script(tok, NULL, cut, false, &c, &st));
    const char *got = c.text.data ? c.text.data : "";
    size_t gl = strlen(got);
    CHECK_MSG(
        gl > 9 && strcmp(got + gl - 9, "caf\xc3\xa9 \xef\xbf\xbd") == 0 && !strstr(got, "\xe2"),
        "text '%s'", got);
    mx_strbuf_free(&c.text);
  }

  // ignore_eos: EOS ids are generated (special: no text) and the loop runs to max_tokens.
  CHECK_OK(run_script(tok, NULL, n_gen + 3, true, &c, &st));
  CHECK_MSG(c.text.data && strcmp(c.text.data, expect) == 0, "text '%s'", c.text.data);
  CHECK(st.finish == MX_FINISH_LENGTH && st.n_generated == n_gen + 3);
  mx_strbuf_free(&c.text);

  mx_tokenizer_destroy(tok);
}

// ---- Part 2: stories260K against upstream llama2.c ----

typedef struct ref_run {
  const char *prompt;
  const char *stdout_text;  // run.c's output: prompt text + generated text
  int32_t n_prompt, n_tokens, steps;
  int32_t *tokens;  // [n_tokens]: prompt then greedy ids
  int32_t n_logits;
  const cJSON *logits;  // array of {pos, input_token, logits[V]}
} ref_run_t;

static int32_t *json_ints(const cJSON *a, int32_t *n) {
  *n = cJSON_GetArraySize(a);
  int32_t *v = calloc((size_t)(*n > 0 ? *n : 1), sizeof *v);
  for (int32_t i = 0; i < *n; i++) v[i] = (int32_t)cJSON_GetArrayItem(a, i)->valuedouble;
  return v;
}

// Largest |a - ref| over the reference logits of position pos (-1 when pos has none).
static double logit_diff(const ref_run_t *r, int32_t pos, const float *l, int32_t V) {
  const cJSON *e = cJSON_GetArrayItem(r->logits, pos);
  if (!e || pos >= r->n_logits) return -1.0;
  const cJSON *pj = cJSON_GetObjectItem(e, "pos"), *lj = cJSON_GetObjectItem(e, "logits");
  if (!pj || (int32_t)pj->valuedouble != pos || cJSON_GetArraySize(lj) != V) return 1e30;
  double worst = 0.0;
  for (int32_t v = 0; v < V; v++) {
    double d = fabs((double)l[v] - cJSON_GetArrayItem(lj, v)->valuedouble);
    if (d > worst) worst = d;
  }
  return worst;
}

typedef struct real_check {
  mx_session_t *s;
  const ref_run_t *r;
  int32_t n;  // generated so far
  int32_t mismatches;
  int32_t first_bad;
  double worst_logit;
  int32_t n_logits_checked;
  mx_strbuf_t text;
} real_check_t;

static bool on_real_token(void *user, int32_t id, const char *text, size_t len) {
  real_check_t *c = user;
  mx_strbuf_append(&c->text, text, len);
  int32_t at = c->r->n_prompt + c->n;
  if (at >= c->r->n_tokens || c->r->tokens[at] != id) {
    if (!c->mismatches) c->first_bad = at;
    c->mismatches++;
  }
  // The session's logits are those of the last fed position: they chose this token.
  int32_t pos = (int32_t)mx_session_n_past(c->s) - 1;
  double d = logit_diff(c->r, pos, mx_session_logits(c->s), mx_session_vocab(c->s));
  if (d >= 0) {
    c->n_logits_checked++;
    if (d > c->worst_logit) c->worst_logit = d;
  }
  c->n++;
  return true;
}

static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check_run(mx_model_t *m, const ref_run_t *r) {
  // Capacity = run.c's steps: it feeds positions 0..steps-1 and samples one more token, which
  // is exactly where our loop stops with "context".
  mx_session_t *s = NULL;
  mx_session_opts_t o = {.backend = "interp", .ctx = r->steps};
  CHECK_OK(mx_session_create(m, &o, &s));
  if (!s) return;
  const int32_t V = mx_session_vocab(s);

  // Prompt logits (every position) from one prefill.
  float *all = malloc((size_t)r->n_prompt * (size_t)V * sizeof *all);
  CHECK_OK(mx_session_prefill(s, r->tokens, r->n_prompt, all));
  double worst = 0.0;
  int checked = 0;
  for (int32_t t = 0; t < r->n_prompt; t++) {
    double d = logit_diff(r, t, all + (size_t)t * (size_t)V, V);
    if (d >= 0) {
      checked++;
      worst = d > worst ? d : worst;
    }
  }
  CHECK_MSG(worst <= 1e-4, "'%s': prompt logits differ by %g", r->prompt, worst);
  free(all);

  // Greedy generation through mx_generate on a reset session.
  mx_session_reset(s);
  // Sanitizer builds run the interpreter ~8x slower: there a prefix of each stream is checked.
  const bool full = !MX_TEST_SANITIZED;
  const int32_t want = full ? r->n_tokens - r->n_prompt : 48;
  mx_generate_opts_t g = {.max_tokens = full ? 100000 : want};
  mx_sampler_params_default(&g.sampling);
  g.sampling.temperature = 0.0f;
  real_check_t c = {.s = s, .r = r, .first_bad = -1};
  mx_generate_stats_t st;
  double t0 = seconds_now();
  mx_strbuf_init(&c.text);
  CHECK_OK(mx_generate(s, m->tokenizer, r->tokens, r->n_prompt, &g, on_real_token, &c, &st));
  double secs = seconds_now() - t0;
  // The streamed text is run.c's output after the prompt's own text.
  size_t pl = strlen(r->prompt);
  CHECK(strncmp(r->stdout_text, r->prompt, pl) == 0);
  const char *want_text = r->stdout_text + pl;
  CHECK_MSG(c.text.data && (full ? strcmp(c.text.data, want_text) == 0
                                 : strncmp(c.text.data, want_text, c.text.len) == 0),
            "'%s': text\n%s\nexpected\n%s", r->prompt, c.text.data ? c.text.data : "", want_text);
  mx_strbuf_free(&c.text);
  CHECK_MSG(c.mismatches == 0 && c.n == want,
            "'%s': %d of %d ids differ (first at token %d), %d generated", r->prompt, c.mismatches,
            want, c.first_bad, c.n);
  CHECK_MSG(st.finish == (full ? MX_FINISH_CONTEXT : MX_FINISH_LENGTH), "'%s': finish %s",
            r->prompt, mx_finish_reason_name(st.finish));
  CHECK_MSG(c.worst_logit <= 1e-4, "'%s': generated-position logits differ by %g", r->prompt,
            c.worst_logit);
  printf(
      "stories260K '%s': %d/%d ids equal, %d logit rows within %.2g (max diff), "
      "%.1f s (prefill %.2f s, decode %.1f s)\n",
      r->prompt, c.n - c.mismatches, want, checked + c.n_logits_checked,
      worst > c.worst_logit ? worst : c.worst_logit, secs, st.prefill_seconds, st.decode_seconds);

  // Reset reproducibility: a fresh start gives the same ids (first 16 tokens).
  mx_session_reset(s);
  CHECK(mx_session_n_past(s) == 0 && mx_session_logits(s) == NULL);
  g.max_tokens = 16;
  real_check_t c2 = {.s = s, .r = r, .first_bad = -1};
  mx_strbuf_init(&c2.text);
  CHECK_OK(mx_generate(s, NULL, r->tokens, r->n_prompt, &g, on_real_token, &c2, &st));
  mx_strbuf_free(&c2.text);
  CHECK_MSG(c2.mismatches == 0 && c2.n == 16, "'%s' after reset: %d mismatches", r->prompt,
            c2.mismatches);
  mx_session_destroy(s);
}

// Prefill split in different chunk sizes, and token by token, gives the same logits.
static void check_chunking(mx_model_t *m, const ref_run_t *r) {
  const int32_t n = r->n_prompt;
  const int32_t chunks[3] = {64, 8, 3};
  float *ref = NULL;
  int32_t V = m->config.vocab_size;
  for (int k = 0; k < 3; k++) {
    mx_session_t *s = NULL;
    mx_session_opts_t o = {.backend = "interp", .ctx = 32, .prefill_chunk = chunks[k]};
    CHECK_OK(mx_session_create(m, &o, &s));
    if (!s) break;
    float *all = malloc((size_t)n * (size_t)V * sizeof *all);
    CHECK_OK(mx_session_prefill(s, r->tokens, n, all));
    if (!ref) {
      ref = all;
    } else {
      double worst = 0;
      for (size_t i = 0; i < (size_t)n * (size_t)V; i++) {
        double d = fabs((double)all[i] - (double)ref[i]);
        worst = d > worst ? d : worst;
      }
      CHECK_MSG(worst <= 1e-5, "chunk %d vs 64: logits differ by %g", chunks[k], worst);
      free(all);
    }
    // Continue to the brim of the context (positions 20..31, where the reference has logits):
    // as a second prefill (pieces at the end of the capacity) or token by token.
    int64_t left = mx_session_ctx(s) - mx_session_n_past(s);
    float *rest = malloc((size_t)left * (size_t)V * sizeof *rest);
    if (k == 0) {
      CHECK_OK(mx_session_prefill(s, r->tokens + n, (int32_t)left, rest));
    } else {
      for (int64_t i = 0; i < left; i++) {
        CHECK_OK(mx_session_decode(s, r->tokens[n + i]));
        memcpy(rest + i * V, mx_session_logits(s), (size_t)V * sizeof *rest);
      }
    }
    double worst = 0;
    for (int64_t i = 0; i < left; i++) {
      double d = logit_diff(r, n + (int32_t)i, rest + i * V, V);
      CHECK(d >= 0);
      worst = d > worst ? d : worst;
    }
    CHECK_MSG(worst <= 1e-4, "chunk %d: logits of positions %d..31 differ by %g", chunks[k], n,
              worst);
    free(rest);
    CHECK(mx_session_n_past(s) == 32);
    mx_session_destroy(s);
  }
  free(ref);
}

// mx_session_rewind: continuing from a kept prefix gives the logits of a fresh session fed
// the same ids (the entries past the prefix are rewritten before they are read).
static void test_rewind(const mx_model_t *m) {
  static const int32_t first[] = {1, 403, 407, 261, 378, 432, 383, 286};
  static const int32_t next[] = {10, 11, 12};
  static const int32_t whole[] = {1, 403, 407, 261, 378, 10, 11, 12};
  mx_session_t *a = NULL, *b = NULL;
  CHECK_OK(mx_session_create(m, NULL, &a));
  CHECK_OK(mx_session_create(m, NULL, &b));
  if (!a || !b) goto done;
  CHECK_OK(mx_session_prefill(a, first, 8, NULL));
  CHECK(mx_session_rewind(a, 9) == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "holds 8"));
  CHECK(mx_session_rewind(a, -1) == MX_ERR_INVALID_ARG && mx_session_n_past(a) == 8);
  CHECK_OK(mx_session_rewind(a, 5));
  CHECK(mx_session_n_past(a) == 5 && mx_session_logits(a) == NULL);
  CHECK(memcmp(mx_session_tokens(a), first, 5 * sizeof *first) == 0);
  CHECK_OK(mx_session_prefill(a, next, 3, NULL));
  CHECK_OK(mx_session_prefill(b, whole, 8, NULL));
  CHECK(memcmp(mx_session_tokens(a), whole, sizeof whole) == 0);
  const float *la = mx_session_logits(a), *lb = mx_session_logits(b);
  double md = 0;
  for (int32_t v = 0; la && lb && v < mx_session_vocab(a); v++) {
    double d = fabs((double)la[v] - (double)lb[v]);
    if (d > md) md = d;
  }
  CHECK_MSG(la && lb && md <= 1e-5, "rewound vs fresh: max |dlogit| %g", md);
  CHECK_OK(mx_session_rewind(a, 0));
  CHECK(mx_session_n_past(a) == 0);
done:
  mx_session_destroy(a);
  mx_session_destroy(b);
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
  mx_model_t *mp = NULL;
  CHECK_OK(mx_model_load(dir, &mp));
  if (!mp) {
    free(text);
    return;
  }
  mx_model_t m = *mp;  // (a copy of the handles; mp still owns them)
  cJSON *root = cJSON_ParseWithLength(text, len);
  const cJSON *runs = cJSON_GetObjectItem(root, "runs");
  CHECK(cJSON_GetArraySize(runs) >= 3);
  if (m.ckpt && runs) {
    // Session errors that happen before any work.
    mx_session_t *s = NULL;
    mx_session_opts_t o513 = {.ctx = 513};
    CHECK(mx_session_create(&m, &o513, &s) == MX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(mx_error_message(), "exceeds the model's max_position_embeddings 512"), "%s",
              mx_error_message());
    CHECK_OK(mx_session_create(&m, NULL, &s));
    CHECK(s && mx_session_ctx(s) == 512);  // min(512, 4096)
    int32_t *big = calloc(600, sizeof *big);
    CHECK(mx_session_prefill(s, big, 600, NULL) == MX_ERR_INVALID_ARG);
    CHECK_MSG(strcmp(mx_error_message(),
                     "prompt of 600 tokens does not fit: context capacity "
                     "512, 0 tokens already in the session") == 0,
              "%s", mx_error_message());
    big[3] = 512;
    CHECK(mx_session_prefill(s, big, 10, NULL) == MX_ERR_INVALID_ARG);
    CHECK(mx_session_n_past(s) == 0);
    free(big);
    mx_session_destroy(s);
    test_rewind(&m);

    cJSON *run;
    int idx = 0;
    cJSON_ArrayForEach(run, runs) {
      ref_run_t r = {0};
      r.prompt = cJSON_GetStringValue(cJSON_GetObjectItem(run, "prompt"));
      r.stdout_text = cJSON_GetStringValue(cJSON_GetObjectItem(run, "stdout_text"));
      free(json_ints(cJSON_GetObjectItem(run, "prompt_tokens"), &r.n_prompt));
      r.tokens = json_ints(cJSON_GetObjectItem(run, "tokens"), &r.n_tokens);
      r.steps = (int32_t)cJSON_GetObjectItem(run, "steps")->valuedouble;
      r.logits = cJSON_GetObjectItem(run, "logits");
      r.n_logits = cJSON_GetArraySize(r.logits);
      CHECK(r.n_tokens == r.steps + 1 && r.n_prompt > 0);
      check_run(&m, &r);
      if (idx++ == 2) check_chunking(&m, &r);  // the 20-token prompt
      free(r.tokens);
    }
  }
  cJSON_Delete(root);
  free(text);
  mx_model_free(mp);
}

int main(void) {
  init_fake_model();
  if (mx_backend_register(&g_fake) || mx_backend_register(&g_fake_nolog) ||
      mx_backend_register(&g_script_backend)) {
    fprintf(stderr, "register: %s\n", mx_error_message());
    return 1;
  }
  test_options();
  test_prefill_decode();
  test_generate();
  const char *shared = mx_test_shared("models/stories260K/hf");
  if (shared) test_stop_strings(shared);
  test_stories260k();
  return mx_test_finish();
}
