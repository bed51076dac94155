// The embedding API (include/mlxcel/mlxcel.h) on stories260K: defaults, a completion streamed
// through the callback and equal on a second call (each call starts from an empty context), the
// callback stopping it, stop strings, and the errors a program can provoke (options, a missing
// model, chat without a template), each with its message. tests/install_embed.sh checks the
// installed library and its exports.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/base.h"
#include "mlxcel/mlxcel.h"
#include "mx_test.h"

typedef struct collect {
  mx_strbuf_t text;
  int calls, stop_after;  // stop_after > 0: return false on that call
} collect_t;

static bool on_text(void *user, const char *text, size_t len) {
  collect_t *c = user;
  CHECK(len > 0);
  mx_strbuf_append(&c->text, text, len);
  return ++c->calls != c->stop_after;
}

static void test_errors(const char *model) {
  mx_engine_t *e = (mx_engine_t *)1;
  CHECK(mx_engine_open(NULL, NULL, &e) == MX_ENGINE_ERR_INVALID_ARG && e == NULL);
  CHECK(mx_engine_open("/nonexistent-mlxcel", NULL, &e) == MX_ENGINE_ERR_IO);
  CHECK(strstr(mx_engine_last_error(), "nonexistent-mlxcel"));
  mx_engine_opts_t o;
  mx_engine_opts_init(&o);
  o.precision = "f64";
  CHECK(mx_engine_open(model, &o, &e) == MX_ENGINE_ERR_INVALID_ARG);
  CHECK(strstr(mx_engine_last_error(), "precision 'f64'"));
  mx_engine_opts_init(&o);
  o.quant = "int3";
  CHECK(mx_engine_open(model, &o, &e) == MX_ENGINE_ERR_INVALID_ARG);
  CHECK(strstr(mx_engine_last_error(), "quant 'int3'"));
  mx_engine_opts_init(&o);
  o.backend = "tpu9";
  CHECK(mx_engine_open(model, &o, &e) != MX_ENGINE_OK && e == NULL);
  CHECK(strstr(mx_engine_last_error(), "tpu9"));
  o.size = 4;  // a caller that never called mx_engine_opts_init
  CHECK(mx_engine_open(model, &o, &e) == MX_ENGINE_ERR_INVALID_ARG);
  CHECK(strstr(mx_engine_last_error(), "mx_engine_opts_init"));
}

static void test_generation(const char *model) {
  mx_engine_opts_t o;
  mx_engine_opts_init(&o);
  o.threads = 2;
  mx_engine_t *e = NULL;
  CHECK_OK((mx_status_t)mx_engine_open(model, &o, &e));
  if (!e) return;
  CHECK(mx_engine_api_version() == MX_ENGINE_API_VERSION);
  mx_engine_gen_opts_t g;
  mx_engine_gen_opts_init(e, &g);
  CHECK(g.temperature == 0.0f && g.max_tokens == 256 && g.top_p == 1.0f);  // greedy default
  g.max_tokens = 24;
  collect_t a = {0}, b = {0};
  mx_strbuf_init(&a.text);
  mx_strbuf_init(&b.text);
  mx_engine_result_t r;
  CHECK_OK((mx_status_t)mx_engine_complete(e, "Once upon a time", &g, on_text, &a, &r));
  CHECK(r.prompt_tokens == 5 && r.completion_tokens == 24 && r.finish == MX_ENGINE_FINISH_LENGTH);
  // llama2.c's greedy continuation of stories260K begins so.
  CHECK_MSG(a.text.data && strncmp(a.text.data, ", there was a little girl named Lily", 36) == 0,
            "text [%s]", a.text.data ? a.text.data : "");
  CHECK_OK((mx_status_t)mx_engine_complete(e, "Once upon a time", &g, on_text, &b, NULL));
  CHECK(a.text.len == b.text.len && memcmp(a.text.data, b.text.data, a.text.len) == 0);
  // The callback stops it.
  collect_t c = {.stop_after = 3};
  mx_strbuf_init(&c.text);
  CHECK_OK((mx_status_t)mx_engine_complete(e, "Once upon a time", &g, on_text, &c, &r));
  CHECK(c.calls == 3 && r.finish == MX_ENGINE_FINISH_CALLBACK && r.completion_tokens < 24);
  // A stop string ends it before the text it matches.
  const char *stop[] = {"Lily"};
  g.stop = stop;
  g.n_stop = 1;
  collect_t d = {0};
  mx_strbuf_init(&d.text);
  CHECK_OK((mx_status_t)mx_engine_complete(e, "Once upon a time", &g, on_text, &d, &r));
  CHECK(r.finish == MX_ENGINE_FINISH_STOP && d.text.data && !strstr(d.text.data, "Lily") &&
        strstr(d.text.data, "named"));
  // Bad generation options name the problem.
  g.stop = NULL;
  g.n_stop = 0;
  g.temperature = -1.0f;
  CHECK(mx_engine_complete(e, "x", &g, NULL, NULL, NULL) == MX_ENGINE_ERR_INVALID_ARG);
  CHECK(strstr(mx_engine_last_error(), "temperature"));
  g.temperature = 0.0f;
  g.size = 0;
  CHECK(mx_engine_complete(e, "x", &g, NULL, NULL, NULL) == MX_ENGINE_ERR_INVALID_ARG);
  // No chat template: chat is refused with the reason.
  mx_engine_gen_opts_init(e, &g);
  mx_engine_message_t m = {"user", "Hi"};
  CHECK(mx_engine_chat(e, &m, 1, &g, NULL, NULL, NULL) == MX_ENGINE_ERR_UNSUPPORTED);
  CHECK(strstr(mx_engine_last_error(), "cannot chat") &&
        strstr(mx_engine_last_error(), "chat_template"));
  CHECK(mx_engine_chat(e, &m, 0, &g, NULL, NULL, NULL) == MX_ENGINE_ERR_INVALID_ARG);
  mx_strbuf_free(&a.text);
  mx_strbuf_free(&b.text);
  mx_strbuf_free(&c.text);
  mx_strbuf_free(&d.text);
  mx_engine_close(e);
  mx_engine_close(NULL);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  char model[1024];
  snprintf(model, sizeof model, "%s/../../models/stories260K", data ? data : "tests/data");
  test_errors(model);
  test_generation(model);
  return mx_test_finish();
}
