// `mlxcel serve`: an OpenAI-compatible HTTP server over one model directory (server.h). Runs
// until SIGINT or SIGTERM, then drains: stops listening, lets the requests in flight finish and
// exits 0. A second signal stops at once: the process ends by that signal (the conventional
// "interrupted" status, 128 + N in a shell), since requests were cut.
#include <libgen.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlxcel/server.h"

static void serve_usage(FILE *out) {
  fprintf(
      out,
      "Usage: mlxcel serve -m DIR [options]\n"
      "\n"
      "Serves the model in DIR over HTTP with OpenAI's API:\n"
      "  GET  /v1/models             the served model (its id is DIR's name, or --alias)\n"
      "  POST /v1/completions        text completion (\"stream\": true for Server-Sent Events)\n"
      "  POST /v1/chat/completions   chat, with the model's chat template\n"
      "  GET  /health                {\"status\":\"ok\"}\n"
      "  GET  /metrics               Prometheus text: requests, tokens, tok/s, queue depth\n"
      "Request fields: prompt / messages, max_tokens, temperature (default 1), top_p, top_k,\n"
      "min_p, seed, stop (string or list), presence_penalty, frequency_penalty,\n"
      "repetition_penalty, n (1), stream, stream_options.include_usage; extensions:\n"
      "ignore_eos (generate past end-of-sequence tokens, for benchmarks), speculative\n"
      "(\"ngram\", \"draft_model\" or \"off\", or {\"method\": ..., \"num_speculative_tokens\":\n"
      "K, \"prompt_lookup_max\": G}: see --speculative; usage.speculative reports its steps) and,\n"
      "for completions, split_special_tokens (see --split-special-tokens).\n"
      "\n"
      "Options:\n"
      "  -m, --model DIR        model directory\n"
      "  --host ADDR            address to listen on (default 127.0.0.1)\n"
      "  --port N               TCP port (default 8080; 0 = any free port, printed)\n"
      "  --parallel N           requests decoded together in one batched step (1-64,\n"
      "                         default 1); more requests wait in a queue\n"
      "  --ctx N                KV capacity of each request, prompt + completion (default:\n"
      "                         $MLXCEL_XLA_CONTEXT_CAPACITY, else the model's\n"
      "                         max_position_embeddings capped at 4096)\n"
      "  --api-key KEY          require \"Authorization: Bearer KEY\" (all but /health)\n"
      "  --alias NAME           model id to serve under (default: DIR's base name)\n"
      "  --backend NAME         execution backend (cpu, interp, xla; default $MLXCEL_BACKEND\n"
      "                         or cpu)\n" MX_CLI_PJRT_HELP MX_CLI_QUANT_HELP MX_CLI_PRECISION_USAGE("          ", "                         ")
      "  --vision-backend NAME  where a vision model's tower runs: interp, cpu or xla\n"
      "                         (default: $MLXCEL_XLA_VISION_BACKEND, else the --backend)\n"
      "  --prefill-chunk N      most prompt tokens per prefill step (running streams wait at\n"
      "                         most one such step)\n"
      "  --queue N              requests waiting for a slot before 503 (default 64)\n"
      "  --no-prefix-cache      prefill every prompt whole; by default a request starts on the\n"
      "                         free slot whose cache shares the longest prefix with its prompt\n"
      "                         (system prompt, earlier chat turns) and prefills only the rest\n"
      "  --speculative MODE     every request that does not say \"speculative\": \"off\"\n"
      "                         drafts tokens the model then checks in one call per step (off\n"
      "                         by default; requests may ask for it): ngram, the tokens that\n"
      "                         followed an earlier occurrence of the text's last 1-3 tokens\n"
      "                         (faster on repetitive output); draft, a smaller model's greedy\n"
      "                         tokens (--draft-model); off. Same greedy text, same distribution\n"
      "  --draft-tokens K       most tokens drafted per step, 1..32 (default 7)\n"
      "  --draft-model DIR      the draft model (same tokenizer; loaded like the model, run on\n"
      "                         the same backend beside it, one slot per --parallel); alone it\n"
      "                         means --speculative draft; requests may ask for it with\n"
      "                         {\"method\": \"draft_model\"}\n"
      "  --max-body BYTES       request body limit, 413 beyond (default 1048576)\n"
      "  --max-images N         images per chat request (vision models; default 8)\n"
      "  --max-audio-samples N  samples per channel of one input_audio WAV, 413 beyond\n"
      "                         (Gemma 3n; default 9600000: 10 minutes at 16 kHz)\n"
      "  --max-image-pixels N   width x height of one image, 413 beyond (default 16777216)\n"
      "  --max-connections N    simultaneous connections; more are answered 503 and closed\n"
      "                         (default 128)\n"
      "  --timeout S            idle connection timeout in seconds (default 60)\n"
      "  --header-timeout S     a request head must arrive within S seconds of the\n"
      "                         connection's opening or its previous request's end, else the\n"
      "                         connection closes (default 10)\n"
      "  --drain-timeout S      on SIGINT / SIGTERM, wait at most S seconds for the requests\n"
      "                         in flight before cutting them (default 300; 0 cuts at once)\n"
      "  --split-special-tokens completions encode special-token text in the prompt\n"
      "                         (\"<|im_end|>\") as plain text; by default it is parsed into the\n"
      "                         special token, as transformers does (a request can say\n"
      "                         \"split_special_tokens\": true or false). Chat message content\n"
      "                         is always plain text: only the chat template's own markup\n"
      "                         yields special tokens\n"
      "  -q, --quiet            no per-request log lines on stderr\n"
      "  -h, --help             show this help\n"
      "\n"
      "Prints \"mlxcel serve: listening on http://HOST:PORT\" on stderr when ready.\n"
      "SIGINT or SIGTERM drains (no new requests; those in flight finish, or are cut after\n"
      "--drain-timeout) and exits 0; a second signal ends it at once, killed by that signal\n"
      "(shell status 130 for SIGINT, 143 for SIGTERM).\n"
      "Exit status: 0 after a drain, 1 failure (cannot listen, bad model), 2 bad command\n"
      "line, 3 unreadable model directory; 128 + N when a second signal N cut the drain.\n");
  mx_cli_env_usage(out, "serve");
}

typedef struct serve_args {
  const char *dir, *host, *api_key, *alias, *backend, *vision_backend;
  int64_t port, parallel, ctx, chunk, queue, max_body, max_conn, timeout, header_timeout;
  int64_t max_images, max_image_pixels, max_audio_samples;
  int64_t drain_timeout;
  int64_t draft_tokens;  // --draft-tokens; 0 = the library's default
  const char *speculative, *draft_dir;
  bool quiet, split_special, no_prefix_cache;
  mx_model_load_opts_t load;  // --quant / --group-size / --precision / --kv-dtype
  mx_xla_backend_opts_t xla;  // --pjrt-plugin
} serve_args_t;

static int parse_args(int argc, char **argv, serve_args_t *a, bool *help) {
  const char *cmd = "serve";
  a->host = "127.0.0.1";
  a->port = 8080;
  a->parallel = 1;
  a->drain_timeout = 300;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i], *v = NULL;
    int r = 0;
    if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
      *help = true;
      return MX_EXIT_OK;
    }
#define VALUE_OPT(name, alias) ((r = mx_cli_opt(argc, argv, &i, cmd, name, alias, &v)) != 0)
#define INT_OPT(name, lo, hi, dst) \
  if (r > 0 && !mx_cli_parse_int(cmd, name, v, lo, hi, dst)) r = -1
    if (VALUE_OPT("--model", "-m")) {
      if (r > 0) a->dir = v;
    } else if (VALUE_OPT("--host", NULL)) {
      if (r > 0) a->host = v;
    } else if (VALUE_OPT("--port", NULL)) {
      INT_OPT("--port", 0, 65535, &a->port);
    } else if (VALUE_OPT("--parallel", "-np")) {
      INT_OPT("--parallel", 1, 64, &a->parallel);
    } else if (VALUE_OPT("--ctx", NULL)) {
      INT_OPT("--ctx", 1, INT32_MAX, &a->ctx);
    } else if (VALUE_OPT("--api-key", NULL)) {
      if (r > 0) {
        if (!*v) return mx_cli_usage_error(cmd, serve_usage, "--api-key: empty key");
        a->api_key = v;
      }
    } else if (VALUE_OPT("--alias", NULL)) {
      if (r > 0) a->alias = v;
    } else if (VALUE_OPT("--backend", NULL)) {
      if (r > 0) a->backend = v;
    } else if (VALUE_OPT("--vision-backend", NULL)) {
      if (r > 0) a->vision_backend = v;
    } else if ((r = mx_cli_pjrt_opt(argc, argv, &i, cmd, &a->xla)) != 0) {
      // --pjrt-plugin
    } else if ((r = mx_cli_precision_opt(argc, argv, &i, cmd, &a->load)) != 0) {
      // parsed (or reported) by the shared precision flags
    } else if (VALUE_OPT("--prefill-chunk", NULL)) {
      INT_OPT("--prefill-chunk", 1, 1 << 20, &a->chunk);
    } else if (VALUE_OPT("--speculative", NULL)) {
      if (r > 0) a->speculative = v;
    } else if (VALUE_OPT("--draft-tokens", NULL)) {
      INT_OPT("--draft-tokens", 1, MX_SPEC_MAX_TOKENS, &a->draft_tokens);
    } else if (VALUE_OPT("--draft-model", NULL)) {
      if (r > 0) a->draft_dir = v;
    } else if (VALUE_OPT("--queue", NULL)) {
      INT_OPT("--queue", 1, 1 << 20, &a->queue);
    } else if (VALUE_OPT("--max-body", NULL)) {
      INT_OPT("--max-body", 1024, (int64_t)1 << 30, &a->max_body);
    } else if (VALUE_OPT("--max-audio-samples", NULL)) {
      INT_OPT("--max-audio-samples", 1, (int64_t)1 << 40, &a->max_audio_samples);
    } else if (VALUE_OPT("--max-images", NULL)) {
      INT_OPT("--max-images", 1, 1024, &a->max_images);
    } else if (VALUE_OPT("--max-image-pixels", NULL)) {
      INT_OPT("--max-image-pixels", 1, (int64_t)1 << 32, &a->max_image_pixels);
    } else if (VALUE_OPT("--max-connections", NULL)) {
      INT_OPT("--max-connections", 1, 65536, &a->max_conn);
    } else if (VALUE_OPT("--timeout", NULL)) {
      INT_OPT("--timeout", 1, 86400, &a->timeout);
    } else if (VALUE_OPT("--header-timeout", NULL)) {
      INT_OPT("--header-timeout", 1, 86400, &a->header_timeout);
    } else if (VALUE_OPT("--drain-timeout", NULL)) {
      INT_OPT("--drain-timeout", 0, 86400, &a->drain_timeout);
    } else if (strcmp(s, "-q") == 0 || strcmp(s, "--quiet") == 0) {
      a->quiet = true;
    } else if (strcmp(s, "--split-special-tokens") == 0) {
      a->split_special = true;
    } else if (strcmp(s, "--no-prefix-cache") == 0) {
      a->no_prefix_cache = true;
    } else if ((r = mx_cli_quant_opt(argc, argv, &i, cmd, &a->load)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if (s[0] == '-') {
      return mx_cli_usage_error(cmd, serve_usage, "unknown option '%s'", s);
    } else {
      return mx_cli_usage_error(cmd, serve_usage, "unexpected argument '%s'", s);
    }
#undef INT_OPT
#undef VALUE_OPT
    if (r < 0) return MX_EXIT_USAGE;
  }
  if (!a->dir) return mx_cli_usage_error(cmd, serve_usage, "missing -m DIR (model directory)");
  const char *mode = a->speculative;
  if (mode && strcmp(mode, "ngram") != 0 && strcmp(mode, "draft") != 0 && strcmp(mode, "off") != 0)
    return mx_cli_usage_error(cmd, serve_usage,
                              "--speculative: unknown mode '%s' (ngram, draft or off)", mode);
  if (mode && strcmp(mode, "draft") == 0 && !a->draft_dir)
    return mx_cli_usage_error(cmd, serve_usage, "--speculative draft needs --draft-model DIR");
  if (a->draft_tokens && !a->draft_dir && !(mode && strcmp(mode, "ngram") == 0))
    return mx_cli_usage_error(cmd, serve_usage,
                              "--draft-tokens needs --speculative ngram or --draft-model DIR");
  return MX_EXIT_OK;
}

// The model id: --alias, else the directory's base name.
static char *model_id(const serve_args_t *a) {
  if (a->alias) return strdup(a->alias);
  char *copy = strdup(a->dir);
  if (!copy) return NULL;
  size_t n = strlen(copy);
  while (n > 1 && copy[n - 1] == '/') copy[--n] = '\0';
  char *id = strdup(basename(copy));
  free(copy);
  return id;
}

// The server's default method: --speculative's, else draft with a draft model, else off.
static mx_spec_mode_t spec_mode(const serve_args_t *a) {
  const char *m = a->speculative ? a->speculative : a->draft_dir ? "draft" : "off";
  return strcmp(m, "ngram") == 0   ? MX_SPEC_NGRAM
         : strcmp(m, "draft") == 0 ? MX_SPEC_DRAFT
                                   : MX_SPEC_OFF;
}

static int serve(const serve_args_t *a, const mx_model_t *model, const mx_model_t *draft) {
  mx_session_opts_t so = {
      .backend = a->backend, .vision_backend = a->vision_backend, .ctx = a->ctx};
  so.backend_opts.xla = a->xla;
  mx_error_clear();
  mx_status_t st = mx_cli_session_env(&model->config, &so);
  if (st) return mx_cli_fail("serve", st);
  // Every thread the server starts inherits this mask: the signals wait for sigwait below.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
#ifdef __GLIBC__
  // A long-running server: request-sized blocks (bodies, JSON strings, prompts) are mapped and
  // unmapped, so a burst of large requests does not stay resident. glibc would otherwise raise
  // its mapping threshold after the first such free and keep later ones in its arenas.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
  char *id = model_id(a);
  mx_server_opts_t o = {.host = a->host,
                        .port = (int32_t)a->port,
                        .parallel = (int32_t)a->parallel,
                        .ctx = so.ctx,
                        .backend = so.backend,
                        .vision_backend = so.vision_backend,
                        .backend_opts = so.backend_opts,
                        .prefill_chunk = (int32_t)a->chunk,
                        .api_key = a->api_key,
                        .model_id = id,
                        .max_body = (size_t)a->max_body,
                        .max_queue = (int32_t)a->queue,
                        .max_images = (int32_t)a->max_images,
                        .max_image_pixels = a->max_image_pixels,
                        .max_audio_samples = a->max_audio_samples,
                        .max_connections = (int32_t)a->max_conn,
                        .timeout_s = (int32_t)a->timeout,
                        .header_timeout_s = (int32_t)a->header_timeout,
                        .log_requests = !a->quiet,
                        .split_special_tokens = a->split_special,
                        .no_prefix_cache = a->no_prefix_cache,
                        .speculative = spec_mode(a),
                        .draft_tokens = (int32_t)a->draft_tokens,
                        .draft_model = draft};
  mx_server_t *srv = NULL;
  mx_error_clear();
  o.backend_opts.progress = mx_cli_progress(!a->quiet);
  st = mx_server_start(model, &o, &srv);
  mx_cli_progress_end();
  if (st) {
    free(id);
    return mx_cli_fail("serve", st);
  }
  bool v6 = strchr(a->host, ':') != NULL;
  fprintf(stderr, "mlxcel serve: model '%s', %d parallel; listening on http://%s%s%s:%d\n", id,
          (int)a->parallel, v6 ? "[" : "", a->host, v6 ? "]" : "", (int)mx_server_port(srv));
  fflush(stderr);
  int sig = 0;
  sigwait(&set, &sig);
  // Refusing first makes the message true the moment it appears: a request that follows it
  // gets 503 (a client reading the log must never see its request still served).
  mx_server_refuse_new(srv);
  fprintf(stderr, "mlxcel serve: %s: finishing the requests in flight (again to stop now)\n",
          sig == SIGINT ? "SIGINT" : "SIGTERM");
  // A second signal now takes its default action: the process ends at once.
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  bool idle = mx_server_drain(srv, (double)a->drain_timeout);
  mx_server_stop(srv);
  if (idle) {
    fprintf(stderr, "mlxcel serve: stopped\n");
  } else {
    fprintf(stderr,
            "mlxcel serve: stopped: requests still in flight after the --drain-timeout of %lld s "
            "were cut\n",
            (long long)a->drain_timeout);
  }
  free(id);
  return MX_EXIT_OK;
}

int mx_cli_cmd_serve(int argc, char **argv) {
  serve_args_t a;
  memset(&a, 0, sizeof a);
  bool help = false;
  int rc = parse_args(argc, argv, &a, &help);
  if (help) serve_usage(stdout);
  if (help || rc != MX_EXIT_OK) return rc;
  if (!mx_cli_check_model_dir("serve", a.dir, "config.json")) return MX_EXIT_IO;
  mx_model_t *model = NULL;
  mx_error_clear();
  mx_status_t st = mx_cli_model_load(a.dir, &a.load, !a.quiet, &model);
  if (st) return mx_cli_fail("serve", st);
  mx_model_t *draft = NULL;
  if (a.draft_dir) {
    if (!mx_cli_check_model_dir("serve", a.draft_dir, "config.json")) {
      mx_model_free(model);
      return MX_EXIT_IO;
    }
    mx_error_clear();
    st = mx_cli_model_load(a.draft_dir, &a.load, !a.quiet, &draft);
    if (st) {
      mx_model_free(model);
      return mx_cli_fail("serve", mx_error_prefix(st, "--draft-model %s", a.draft_dir));
    }
  }
  rc = serve(&a, model, draft);
  mx_model_free(draft);
  mx_model_free(model);
  return rc;
}
