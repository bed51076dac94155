// The embedding API (include/mlxcel/mlxcel.h) on the engine's layers: a model (src/model/), one
// session on a backend (src/session/), the tokenizer and the chat template with its guard
// (src/chat/). Only what mlxcel.h declares leaves the shared library (the build hides every
// other symbol), so this file is the whole of its contract with embedding programs.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/chat.h"
#include "mlxcel/mlxcel.h"
#include "mlxcel/model.h"
#include "mlxcel/session.h"

// The public codes are the engine's own, so a status passes through unchanged.
_Static_assert(MX_ENGINE_ERR_INVALID_ARG == (int)MX_ERR_INVALID_ARG &&
                   MX_ENGINE_ERR_PARSE == (int)MX_ERR_PARSE &&
                   MX_ENGINE_ERR_VERIFY == (int)MX_ERR_VERIFY &&
                   MX_ENGINE_ERR_UNSUPPORTED == (int)MX_ERR_UNSUPPORTED &&
                   MX_ENGINE_ERR_NOMEM == (int)MX_ERR_NOMEM &&
                   MX_ENGINE_ERR_RUNTIME == (int)MX_ERR_RUNTIME &&
                   MX_ENGINE_ERR_IO == (int)MX_ERR_IO,
               "mx_engine_status_t mirrors mx_status_t");
_Static_assert(MX_ENGINE_FINISH_LENGTH == (int)MX_FINISH_LENGTH &&
                   MX_ENGINE_FINISH_EOS == (int)MX_FINISH_EOS &&
                   MX_ENGINE_FINISH_STOP == (int)MX_FINISH_STOP &&
                   MX_ENGINE_FINISH_CALLBACK == (int)MX_FINISH_CALLBACK &&
                   MX_ENGINE_FINISH_CONTEXT == (int)MX_FINISH_CONTEXT,
               "mx_engine_finish_t mirrors mx_finish_reason_t");

enum { DEFAULT_MAX_TOKENS = 256 };

struct mx_engine {
  mx_model_t *model;
  mx_session_t *session;
  mx_chat_template_t *tmpl;  // NULL when the tokenizer has none or it does not compile...
  char *tmpl_error;          // ...and why (heap), which mx_engine_chat reports
  mx_chat_guard_t *guard;
};

int mx_engine_api_version(void) { return MX_ENGINE_API_VERSION; }

const char *mx_engine_last_error(void) { return mx_error_message(); }

void mx_engine_opts_init(mx_engine_opts_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->size = sizeof *o;
}

static mx_status_t parse_precision(const char *s, mx_elem_type_t *out) {
  *out = MX_ELEM_INVALID;
  if (!s) return MX_OK;
  if (strcmp(s, "f32") == 0) *out = MX_ELEM_F32;
  if (strcmp(s, "f16") == 0) *out = MX_ELEM_F16;
  if (strcmp(s, "bf16") == 0) *out = MX_ELEM_BF16;
  if (*out != MX_ELEM_INVALID) return MX_OK;
  return mx_error_set(MX_ERR_INVALID_ARG, "precision '%.32s': expected f32, f16 or bf16", s);
}

static mx_status_t parse_quant(const char *s, mx_quant_mode_t *out) {
  static const struct {
    const char *name;
    mx_quant_mode_t mode;
  } kModes[] = {{"none", MX_QUANT_NONE},
                {"int8", MX_QUANT_INT8},
                {"int4", MX_QUANT_INT4},
                {"mlx", MX_QUANT_MLX}};
  *out = MX_QUANT_AUTO;
  if (!s) return MX_OK;
  for (size_t i = 0; i < sizeof kModes / sizeof kModes[0]; i++) {
    if (strcmp(s, kModes[i].name) == 0) {
      *out = kModes[i].mode;
      return MX_OK;
    }
  }
  return mx_error_set(MX_ERR_INVALID_ARG, "quant '%.32s': expected none, int8, int4 or mlx", s);
}

void mx_engine_close(mx_engine_t *e) {
  if (!e) return;
  mx_chat_guard_destroy(e->guard);
  mx_chat_template_destroy(e->tmpl);
  free(e->tmpl_error);
  mx_session_destroy(e->session);
  mx_model_free(e->model);
  free(e);
}

mx_engine_status_t mx_engine_open(const char *dir, const mx_engine_opts_t *opts,
                                  mx_engine_t **out) {
  mx_error_clear();
  if (!out) return (mx_engine_status_t)mx_error_set(MX_ERR_INVALID_ARG, "mx_engine_open: no out");
  *out = NULL;
  if (!dir || !*dir)
    return (mx_engine_status_t)mx_error_set(MX_ERR_INVALID_ARG, "mx_engine_open: no model folder");
  mx_engine_opts_t o;
  mx_engine_opts_init(&o);
  if (opts) {
    if (opts->size < sizeof o)
      return (mx_engine_status_t)mx_error_set(
          MX_ERR_INVALID_ARG, "mx_engine_opts_t.size is %u, not %zu: call mx_engine_opts_init",
          (unsigned)opts->size, sizeof o);
    o = *opts;
  }
  mx_model_load_opts_t lo = {0};
  mx_status_t st = parse_precision(o.precision, &lo.precision);
  if (!st) st = parse_quant(o.quant, &lo.quant);
  if (st) return (mx_engine_status_t)st;
  mx_engine_t *e = calloc(1, sizeof *e);
  if (!e) return (mx_engine_status_t)mx_error_set(MX_ERR_NOMEM, "out of memory");
  st = mx_model_load_ex(dir, &lo, &e->model);
  mx_session_opts_t so = {.backend = o.backend, .ctx = o.ctx};
  so.backend_opts.threads = o.threads;
  if (!st) st = mx_session_create(e->model, &so, &e->session);
  if (!st) st = mx_chat_guard_create(e->model->tokenizer, &e->guard);
  // A model without a usable chat template still completes; mx_engine_chat says why it cannot
  // chat.
  if (!st && mx_chat_template_from_tokenizer(e->model->tokenizer, &e->tmpl) != MX_OK) {
    e->tmpl_error = strdup(mx_error_message());
    mx_error_clear();
    if (!e->tmpl_error) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  if (st) {
    mx_engine_close(e);
    return (mx_engine_status_t)st;
  }
  *out = e;
  return MX_ENGINE_OK;
}

void mx_engine_gen_opts_init(const mx_engine_t *e, mx_engine_gen_opts_t *g) {
  if (!g) return;
  memset(g, 0, sizeof *g);
  g->size = sizeof *g;
  mx_sampler_params_t p;
  mx_sampler_params_default(&p);
  g->max_tokens = DEFAULT_MAX_TOKENS;
  g->top_p = p.top_p;
  g->repetition_penalty = p.repetition_penalty;
  if (!e) return;
  const mx_model_config_t *cfg = &e->model->config;
  if (cfg->do_sample) {  // transformers decodes greedily unless do_sample is set
    g->temperature = cfg->has_temperature ? cfg->temperature : 1.0f;
    if (cfg->has_top_p) g->top_p = cfg->top_p;
    if (cfg->has_top_k) g->top_k = cfg->top_k;
  }
}

typedef struct text_cb {
  mx_engine_text_fn fn;
  void *user;
} text_cb_t;

// mx_token_fn to mx_engine_text_fn: the text only, and only when there is some (a token may
// complete none while a UTF-8 character or a possible stop string is held back).
static bool on_text(void *user, int32_t id, const char *text, size_t len) {
  (void)id;
  const text_cb_t *cb = user;
  return len == 0 || cb->fn(cb->user, text, len);
}

// Generates from the encoded prompt on an emptied context.
static mx_status_t run(mx_engine_t *e, const int32_t *ids, int32_t n, const mx_engine_gen_opts_t *g,
                       mx_engine_text_fn fn, void *user, mx_engine_result_t *result) {
  if (g->size < sizeof *g)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx_engine_gen_opts_t.size is %u, not %zu: call mx_engine_gen_opts_init",
                        (unsigned)g->size, sizeof *g);
  if (n == 0) return mx_error_set(MX_ERR_INVALID_ARG, "the prompt encodes to no tokens");
  mx_generate_opts_t go = {.max_tokens = g->max_tokens,
                           .ignore_eos = g->ignore_eos,
                           .stop = g->stop,
                           .n_stop = g->n_stop};
  mx_sampler_params_default(&go.sampling);
  go.sampling.temperature = g->temperature;
  go.sampling.top_k = g->top_k;
  go.sampling.top_p = g->top_p;
  go.sampling.min_p = g->min_p;
  go.sampling.repetition_penalty = g->repetition_penalty;
  go.sampling.seed = g->seed;
  mx_session_reset(e->session);
  text_cb_t cb = {fn, user};
  mx_generate_stats_t stats = {0};
  mx_status_t st =
      mx_generate(e->session, e->model->tokenizer, ids, n, &go, fn ? on_text : NULL, &cb, &stats);
  if (result) {
    *result = (mx_engine_result_t){.prompt_tokens = stats.n_prompt,
                                   .completion_tokens = stats.n_generated,
                                   .prefill_seconds = stats.prefill_seconds,
                                   .decode_seconds = stats.decode_seconds,
                                   .finish = (mx_engine_finish_t)stats.finish};
  }
  return st;
}

mx_engine_status_t mx_engine_complete(mx_engine_t *e, const char *prompt,
                                      const mx_engine_gen_opts_t *g, mx_engine_text_fn fn,
                                      void *user, mx_engine_result_t *result) {
  mx_error_clear();
  if (!e || !prompt || !g)
    return (mx_engine_status_t)mx_error_set(MX_ERR_INVALID_ARG,
                                            "mx_engine_complete: engine, prompt and options are "
                                            "required");
  mx_encode_opts_t eo = {.add_special = true, .parse_special = true};
  int32_t *ids = NULL, n = 0;
  mx_status_t st = mx_tokenizer_encode(e->model->tokenizer, prompt, strlen(prompt), &eo, &ids, &n);
  if (!st) st = run(e, ids, n, g, fn, user, result);
  free(ids);
  return (mx_engine_status_t)st;
}

mx_engine_status_t mx_engine_chat(mx_engine_t *e, const mx_engine_message_t *messages,
                                  int32_t n_messages, const mx_engine_gen_opts_t *g,
                                  mx_engine_text_fn fn, void *user, mx_engine_result_t *result) {
  mx_error_clear();
  if (!e || !g || n_messages < 1 || !messages)
    return (mx_engine_status_t)mx_error_set(MX_ERR_INVALID_ARG,
                                            "mx_engine_chat: engine, options and at least one "
                                            "message are required");
  if (!e->tmpl)
    return (mx_engine_status_t)mx_error_set(MX_ERR_UNSUPPORTED, "cannot chat: %s", e->tmpl_error);
  mx_chat_message_t *msgs = calloc((size_t)n_messages, sizeof *msgs);
  if (!msgs) return (mx_engine_status_t)mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_status_t st = MX_OK;
  for (int32_t i = 0; i < n_messages && !st; i++) {
    if (!messages[i].role || !messages[i].content)
      st = mx_error_set(MX_ERR_INVALID_ARG, "message %d has no role or no content", (int)i);
    msgs[i] = (mx_chat_message_t){messages[i].role, messages[i].content};
  }
  mx_chat_render_opts_t ro = {.add_generation_prompt = true};
  mx_chat_opts_from_tokenizer(e->model->tokenizer, &ro);
  char *text = NULL;
  size_t len = 0;
  mx_text_range_t *plain = NULL;
  int32_t n_plain = 0;
  if (!st)
    st = mx_chat_render_guarded(e->tmpl, e->guard, msgs, n_messages, &ro, &text, &len, &plain,
                                &n_plain);
  free(msgs);
  int32_t *ids = NULL, n = 0;
  if (!st) {
    // As apply_chat_template(tokenize=True): the template writes BOS itself.
    mx_encode_opts_t eo = {
        .add_special = false, .parse_special = true, .plain = plain, .n_plain = n_plain};
    st = mx_tokenizer_encode(e->model->tokenizer, text, len, &eo, &ids, &n);
  }
  free(plain);
  free(text);
  if (!st) st = run(e, ids, n, g, fn, user, result);
  free(ids);
  return (mx_engine_status_t)st;
}
