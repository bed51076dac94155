// `mlxcel generate`: loads a model directory, encodes the prompt and streams generated text
// (or one JSON object per token) to stdout through the session seam.
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "mlxcel/chat.h"
#include "mlxcel/grammar.h"
#include "mlxcel/session.h"
#include "mlxcel/tokenizer.h"

static void generate_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel generate -m DIR (-p TEXT | --prompt-ids 1,2,3) [options]\n"
          "\n"
          "Generates text with the model in DIR (Hugging Face layout: config.json,\n"
          "model.safetensors, tokenizer.json, optional generation_config.json) and streams it\n"
          "to stdout as it is produced: the prompt first, then each new piece of text.\n"
          "\n"
          "Options:\n"
          "  -m, --model DIR        model directory\n"
          "  -p, --prompt TEXT      prompt text; encoded with the tokenizer's special tokens\n"
          "                         (BOS when its post-processor adds one)\n"
          "  --prompt-ids LIST      prompt as token ids (1,403,407), used as given\n"
          "  --chat                 treat -p TEXT as a user message: render [system?, user]\n"
          "                         with the model's chat template (tokenizer_config.json\n"
          "                         chat_template, add_generation_prompt on) and print only\n"
          "                         the reply; special-token text in -p and --system\n"
          "                         is encoded as text (only the template's markup\n"
          "                         yields special tokens)\n"
          "  --system TEXT          system message for --chat\n"
          "  --image PATH           a PNG or JPEG for a vision model (LLaVA, Qwen2-VL,\n"
          "                         Qwen2.5-VL); repeatable, in the order of the prompt's\n"
          "                         image placeholders (<image>, <|image_pad|>);\n"
          "                         with --chat the user message starts with one per image,\n"
          "                         and a -p TEXT without any gets them at its start. Each\n"
          "                         placeholder becomes one token per image feature (counted\n"
          "                         in the prompt tokens)\n"
          "  --audio PATH           a WAV file for Gemma 3n's audio tower; repeatable, in the\n"
          "                         order of the prompt's audio placeholders\n"
          "                         (<audio_soft_token>), a -p TEXT without any gets one per\n"
          "                         file at its start; each becomes <start_of_audio>, one\n"
          "                         token per audio row and <end_of_audio> as the processor\n"
          "                         writes them (--prompt-ids: already so expanded)\n"
          "  -n, --max-tokens N     generate at most N tokens (default 128)\n");
  mx_cli_sampling_help(out);
  mx_cli_spec_help(out);
  fprintf(out,
          "  --ignore-eos           keep generating after an end-of-sequence token\n"
          "  --stop STR             stop when STR appears (not printed); repeatable\n"
          "  --json-schema FILE     constrain the output to JSON the schema in FILE accepts\n"
          "                         (OpenAI's strict subset; docs/structured.md): the text\n"
          "                         ends when the document is complete\n"
          "  --ctx N                KV-cache capacity in tokens (default:\n"
          "                         $MLXCEL_XLA_CONTEXT_CAPACITY, else the model's\n"
          "                         max_position_embeddings capped at 4096)\n"
          "  --prefill-chunk N      most prompt tokens per prefill call (default: the\n"
          "                         backend's, cpu 512, interp 64); an image's block of\n"
          "                         tokens (Gemma 3, Molmo2) must fit one call\n"
          "  --backend NAME         execution backend: cpu (fast runtime), interp (reference\n"
          "                         interpreter) or xla (a PJRT plugin); default:\n"
          "                         $MLXCEL_BACKEND, else cpu\n" MX_CLI_PJRT_HELP MX_CLI_QUANT_HELP MX_CLI_PRECISION_USAGE("          ", "                         ")
          "  --vision-backend NAME  where a vision model's tower runs: interp, cpu or xla\n"
          "                         (default: $MLXCEL_XLA_VISION_BACKEND, else the --backend)\n"
          "  --json                 print one JSON object per generated token,\n"
          "                         {\"id\": 432, \"text\": \" there\"}, then a summary object\n"
          "                         {\"type\": \"summary\", \"prompt_tokens\": ..., ...}\n"
          "  --no-echo              do not print the prompt before the generated text\n"
          "  -q, --quiet            no statistics line on stderr\n"
          "  -h, --help             show this help\n"
          "\n"
          "Sampling defaults: when DIR/generation_config.json sets do_sample true, its\n"
          "temperature, top_p and top_k are used (temperature 1.0 when it names none), as Hugging\n"
          "Face's generate() does; otherwise decoding is greedy (Hugging Face's default, whatever\n"
          "temperature the file names). Flags override the config; giving --top-k, --top-p or\n"
          "--min-p without --temp on a greedy default samples at temperature 1.0.\n"
          "Generation stops after N tokens, at an EOS id of generation_config.json (unless\n"
          "--ignore-eos), at a stop string, or when the context is full.\n"
          "\n"
          "Exit status: 0 success, 1 failure (bad model, prompt longer than the context, ...),\n"
          "2 bad command line, 3 unreadable model directory.\n");
  mx_cli_env_usage(out, "generate");
}

typedef struct gen_args {
  const char *dir, *prompt, *prompt_ids, *backend, *system, *json_schema, *vision_backend;
  int64_t max_tokens, ctx, prefill_chunk;  // prefill_chunk 0: the backend's default
  mx_cli_sampling_t sampling;
  mx_cli_spec_t spec;  // --speculative / --draft-tokens / --draft-model
  bool has_ctx;
  bool ignore_eos, json, no_echo, quiet, chat;
  const char **stop;
  int32_t n_stop;
  const char **images;  // --image paths, n_images of them
  int32_t n_images;
  const char **audios;  // --audio paths, n_audios of them
  int32_t n_audios;
  mx_model_load_opts_t load;  // --quant / --group-size / --precision / --kv-dtype
  mx_xla_backend_opts_t xla;  // --pjrt-plugin
} gen_args_t;

// Parses the command line; returns MX_EXIT_OK to go on, or an exit status (help printed, or a
// usage error reported).
static int parse_args(int argc, char **argv, gen_args_t *g, bool *help) {
  const char *cmd = "generate";
  g->max_tokens = 128;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r = 0;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      *help = true;
      return MX_EXIT_OK;
    }
#define VALUE_OPT(name, alias) ((r = mx_cli_opt(argc, argv, &i, cmd, name, alias, &v)) != 0)
    if (VALUE_OPT("--model", "-m")) {
      if (r > 0) g->dir = v;
    } else if (VALUE_OPT("--prompt", "-p")) {
      if (r > 0) g->prompt = v;
    } else if (VALUE_OPT("--prompt-ids", NULL)) {
      if (r > 0) g->prompt_ids = v;
    } else if (VALUE_OPT("--max-tokens", "-n")) {
      if (r > 0 && !mx_cli_parse_int(cmd, "-n", v, 1, INT32_MAX, &g->max_tokens)) r = -1;
    } else if ((r = mx_cli_sampling_opt(argc, argv, &i, cmd, &g->sampling)) != 0) {
      // parsed (or reported) by the shared sampling flags
    } else if ((r = mx_cli_spec_opt(argc, argv, &i, cmd, &g->spec)) != 0) {
      // speculative decoding's flags
    } else if (VALUE_OPT("--ctx", NULL)) {
      if (r > 0 && !mx_cli_parse_int(cmd, "--ctx", v, 1, INT32_MAX, &g->ctx)) r = -1;
      g->has_ctx = true;
    } else if (VALUE_OPT("--prefill-chunk", NULL)) {
      if (r > 0 && !mx_cli_parse_int(cmd, "--prefill-chunk", v, 1, 1 << 16, &g->prefill_chunk))
        r = -1;
    } else if (VALUE_OPT("--json-schema", NULL)) {
      if (r > 0) g->json_schema = v;
    } else if (VALUE_OPT("--system", NULL)) {
      if (r > 0) g->system = v;
    } else if (VALUE_OPT("--image", NULL)) {
      if (r > 0) g->images[g->n_images++] = v;
    } else if (VALUE_OPT("--audio", NULL)) {
      if (r > 0) g->audios[g->n_audios++] = v;
    } else if (VALUE_OPT("--backend", NULL)) {
      if (r > 0) g->backend = v;
    } else if (VALUE_OPT("--vision-backend", NULL)) {
      if (r > 0) g->vision_backend = v;
    } else if ((r = mx_cli_pjrt_opt(argc, argv, &i, cmd, &g->xla)) != 0) {
      // --pjrt-plugin
    } else if ((r = mx_cli_precision_opt(argc, argv, &i, cmd, &g->load)) != 0) {
      // parsed (or reported) by the shared precision flags
    } else if (VALUE_OPT("--stop", NULL)) {
      if (r > 0) {
        if (!*v) return mx_cli_usage_error(cmd, generate_usage, "--stop: empty stop string");
        g->stop[g->n_stop++] = v;
      }
    } else if ((r = mx_cli_quant_opt(argc, argv, &i, cmd, &g->load)) != 0) {
      // --quant / --group-size
    } else if (strcmp(a, "--chat") == 0) {
      g->chat = true;
    } else if (strcmp(a, "--ignore-eos") == 0) {
      g->ignore_eos = true;
    } else if (strcmp(a, "--json") == 0) {
      g->json = true;
    } else if (strcmp(a, "--no-echo") == 0) {
      g->no_echo = true;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      g->quiet = true;
    } else if (a[0] == '-') {
      return mx_cli_usage_error(cmd, generate_usage, "unknown option '%s'", a);
    } else {
      return mx_cli_usage_error(cmd, generate_usage,
                                "unexpected argument '%s' (the prompt goes in -p TEXT)", a);
    }
#undef VALUE_OPT
    if (r < 0) return MX_EXIT_USAGE;
  }
  if (!g->dir) return mx_cli_usage_error(cmd, generate_usage, "missing -m DIR (model directory)");
  if (!g->prompt && !g->prompt_ids) {
    return mx_cli_usage_error(cmd, generate_usage, "missing -p TEXT or --prompt-ids LIST");
  }
  if (g->prompt && g->prompt_ids) {
    return mx_cli_usage_error(cmd, generate_usage, "give -p TEXT or --prompt-ids, not both");
  }
  if (g->chat && !g->prompt) {
    return mx_cli_usage_error(cmd, generate_usage, "--chat needs -p TEXT (the user message)");
  }
  if (g->system && !g->chat) {
    return mx_cli_usage_error(cmd, generate_usage, "--system only applies with --chat");
  }
  if (g->n_audios > 0 && (g->chat || g->n_images > 0)) {
    return mx_cli_usage_error(cmd, generate_usage,
                              "--audio takes -p TEXT or --prompt-ids (not --chat or --image yet)");
  }
  if (g->n_images > 0 && g->prompt_ids) {
    return mx_cli_usage_error(cmd, generate_usage,
                              "--image needs -p TEXT (--prompt-ids cannot hold placeholders)");
  }
  return MX_EXIT_OK;
}

typedef struct stream_state {
  bool json;
  bool ends_with_newline;  // last byte written to stdout (text mode)
  bool wrote_any;
} stream_state_t;

static bool on_token(void *user, int32_t id, const char *text, size_t len) {
  stream_state_t *s = user;
  if (s->json) {
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    // id < 0: text held back until an EOS ended the stream (no token of its own).
    if (id >= 0) {
      mx_strbuf_printf(&sb, "{\"id\": %d, \"text\": ", (int)id);
    } else {
      mx_strbuf_puts(&sb, "{\"text\": ");
    }
    mx_cli_json_string_n(&sb, text, len);
    mx_strbuf_puts(&sb, "}\n");
    fputs(sb.data ? sb.data : "", stdout);
    mx_strbuf_free(&sb);
  } else if (len > 0) {
    fwrite(text, 1, len, stdout);
    s->ends_with_newline = text[len - 1] == '\n';
    s->wrote_any = true;
  }
  fflush(stdout);
  return true;
}

static double rate(int32_t n, double seconds) { return seconds > 0 ? n / seconds : 0.0; }

// The first generated token comes from the prefill's logits and the last one is not fed back:
// n generated tokens took n - 1 decode steps.
static double decode_rate(const mx_generate_stats_t *st) {
  return rate(st->n_generated > 1 ? st->n_generated - 1 : 0, st->decode_seconds);
}

// Occurrences of the placeholder text in s.
static int32_t count_text(const char *s, const char *tt, size_t tl) {
  int32_t k = 0;
  for (const char *p = s; tl > 0 && *p; p++)
    if (strncmp(p, tt, tl) == 0) k++;
  return k;
}

// Drops from plain[] the guarded ranges of the placeholders chat_tokens put in the user
// message: the first n_images ranges spelling the image token after those of --system (the
// templates render the system message first).
static void unguard_placeholders(const gen_args_t *g, const char *text, const char *tt, size_t tl,
                                 mx_text_range_t *plain, int32_t *n_plain) {
  int32_t skip = g->system ? count_text(g->system, tt, tl) : 0, drop = g->n_images, j = 0;
  for (int32_t i = 0; i < *n_plain; i++) {
    const mx_text_range_t *r = &plain[i];
    bool is_tok = r->end - r->start == tl && strncmp(text + r->start, tt, tl) == 0;
    if (is_tok && skip > 0) {
      skip--;
    } else if (is_tok && drop > 0) {
      drop--;
      continue;
    }
    plain[j++] = *r;
  }
  *n_plain = j;
}

// --chat: renders [system?, user] through the model's chat template and encodes the result as
// apply_chat_template(tokenize=True) does (the template writes BOS itself: no post-processor),
// except that special-token text in -p / --system stays text, as in `chat` and the server: only
// the template's markup yields special tokens. A prompt without --chat keeps transformers'
// default (special-token text matched).
static int chat_tokens(const gen_args_t *g, const mx_model_t *model, int32_t **ids, int32_t *n) {
  const char *cmd = "generate";
  mx_chat_template_t *t = NULL;
  int rc = mx_cli_chat_template(cmd, "--chat", g->dir, model->tokenizer, &t);
  if (rc != MX_EXIT_OK) return rc;
  // With --image the user message starts with one placeholder per image (LLaVA 1.5's
  // "<image>\n" convention, Gemma 3's "<start_of_image>": mx_chat_image_with); the guard would
  // keep them text, so their ranges are taken out of `plain` below and they encode as the image
  // token (Gemma 3: its processor's expansion in the text).
  const mx_vision_config_t *v = &model->config.vision;
  size_t tl = 0, wl = 0;
  const char *tt = g->n_images ? mx_chat_image_placeholder(model->tokenizer, v, &tl) : NULL;
  char *with = NULL;
  mx_error_clear();
  mx_status_t wst = tt ? mx_chat_image_with(model->tokenizer, v, &with, &wl) : MX_OK;
  if (wst) {
    mx_chat_template_destroy(t);
    return mx_cli_fail(cmd, wst);
  }
  mx_strbuf_t user;
  mx_strbuf_init(&user);
  for (int32_t i = 0; with && i < g->n_images; i++) mx_strbuf_append(&user, with, wl);
  free(with);
  mx_strbuf_puts(&user, g->prompt);
  mx_chat_message_t msgs[2] = {{"system", g->system}, {"user", user.data ? user.data : ""}};
  int32_t n_msgs = g->system ? 2 : 1;
  mx_chat_render_opts_t ro = {.add_generation_prompt = true};
  mx_chat_opts_from_tokenizer(model->tokenizer, &ro);
  char *text = NULL;
  size_t len = 0;
  mx_text_range_t *plain = NULL;
  int32_t n_plain = 0;
  mx_chat_guard_t *guard = NULL;
  mx_status_t st = mx_chat_guard_create(model->tokenizer, &guard);
  if (st == MX_OK)
    st = mx_chat_render_guarded(t, guard, g->system ? msgs : msgs + 1, n_msgs, &ro, &text, &len,
                                &plain, &n_plain);
  mx_chat_guard_destroy(guard);
  mx_chat_template_destroy(t);
  if (st == MX_OK && tt) unguard_placeholders(g, text, tt, tl, plain, &n_plain);
  if (st == MX_OK && tt)
    st = mx_chat_expand_images(model->tokenizer, v, g->n_images, &text, &len, plain, n_plain);
  mx_strbuf_free(&user);
  if (st != MX_OK) {
    free(plain);
    free(text);
    return mx_cli_fail(cmd, st);
  }
  mx_encode_opts_t eo = {
      .add_special = false, .parse_special = true, .plain = plain, .n_plain = n_plain};
  st = mx_tokenizer_encode(model->tokenizer, text, len, &eo, ids, n);
  free(plain);
  free(text);
  if (st != MX_OK) return mx_cli_fail(cmd, st);
  if (*n == 0) {
    fprintf(stderr, "mlxcel %s: error: the chat template rendered an empty prompt\n", cmd);
    return MX_EXIT_FAILED;
  }
  return MX_EXIT_OK;
}

// Encodes the prompt (text or ids) into *ids / *n; returns an exit status.
static int prompt_tokens(const gen_args_t *g, const mx_model_t *model, int32_t **ids, int32_t *n) {
  if (g->chat) return chat_tokens(g, model, ids, n);
  if (g->prompt_ids) {
    return mx_cli_parse_ids("generate", "--prompt-ids", g->prompt_ids, ids, n) ? MX_EXIT_OK
                                                                               : MX_EXIT_USAGE;
  }
  mx_encode_opts_t eo = {.add_special = true, .parse_special = true};
  char *with = NULL;  // Gemma 3: the images expanded in the text, as its processor does
  if (g->n_images > 0 && mx_vision_text_expanded(&model->config.vision)) {
    int rc = mx_cli_image_text("generate", model, g->n_images, g->prompt, &with);
    if (rc != MX_EXIT_OK) return rc;
  }
  if (g->n_audios > 0) {  // Gemma 3n: the audio placeholders expanded, as its processor does
    int rc = mx_cli_audio_text("generate", model, g->n_audios, g->prompt, &with);
    if (rc != MX_EXIT_OK) return rc;
  }
  const char *text = with ? with : g->prompt;
  mx_error_clear();
  mx_status_t st = mx_tokenizer_encode(model->tokenizer, text, strlen(text), &eo, ids, n);
  free(with);
  if (st != MX_OK) return mx_cli_fail("generate", st);
  if (*n == 0) {
    fprintf(stderr,
            "mlxcel generate: the prompt is empty and the tokenizer adds no BOS token: give a "
            "non-empty -p TEXT\n");
    return MX_EXIT_FAILED;
  }
  return MX_EXIT_OK;
}

// Prints the prompt text before the generation (text mode).
static void echo_prompt(const gen_args_t *g, const mx_model_t *model, const int32_t *ids, int32_t n,
                        stream_state_t *ss) {
  if (g->no_echo || g->json || g->chat) return;
  const char *text = g->prompt;
  char *decoded = NULL;
  size_t len = text ? strlen(text) : 0;
  if (!text && mx_tokenizer_decode(model->tokenizer, ids, n, true, &decoded, &len) == MX_OK) {
    text = decoded;
  }
  if (text && len > 0) {
    fwrite(text, 1, len, stdout);
    ss->ends_with_newline = text[len - 1] == '\n';
    ss->wrote_any = true;
    fflush(stdout);
  }
  free(decoded);
}

// --json-schema: the compiled schema, the tokenizer's vocabulary index and the matcher
// generation advances.
typedef struct gen_grammar {
  mx_grammar_t *grammar;
  mx_gvocab_t *vocab;
  mx_gmatch_t *match;
} gen_grammar_t;

static void grammar_free(gen_grammar_t *gr) {
  mx_gmatch_destroy(gr->match);
  mx_gvocab_destroy(gr->vocab);
  mx_grammar_destroy(gr->grammar);
  memset(gr, 0, sizeof *gr);
}

static mx_status_t grammar_load(const char *path, const mx_model_t *model, gen_grammar_t *gr) {
  char *text = NULL;
  size_t len = 0;
  mx_error_clear();
  mx_status_t st = mx_read_file(path, &text, &len);
  if (!st) st = mx_grammar_from_schema(text, len, &gr->grammar);
  if (st) st = mx_error_prefix(st, "--json-schema %s", path);
  free(text);
  if (!st) st = mx_gvocab_create(model->tokenizer, &gr->vocab);
  if (!st) st = mx_gmatch_create(gr->grammar, &gr->match);
  if (!st) st = mx_gmatch_bind_vocab(gr->match, gr->vocab);
  if (st) grammar_free(gr);
  return st;
}

static int run_generation(const gen_args_t *g, mx_model_t *model) {
  const char *cmd = "generate";
  int32_t *ids = NULL, n = 0;
  int rc = mx_cli_audio_check(cmd, model, g->n_audios);
  if (rc != MX_EXIT_OK) return rc;
  rc = prompt_tokens(g, model, &ids, &n);
  if (rc != MX_EXIT_OK) return rc;

  mx_session_opts_t so;
  memset(&so, 0, sizeof so);
  so.backend = g->backend;
  so.vision_backend = g->vision_backend;
  so.ctx = g->has_ctx ? g->ctx : 0;
  so.prefill_chunk = (int32_t)g->prefill_chunk;
  so.backend_opts.xla = g->xla;
  mx_session_t *s = NULL;
  mx_sampler_params_t sp;
  mx_cli_sampling_params(&g->sampling, &model->config, &sp);
  // Bad sampling values are reported before anything is printed.
  mx_sampler_t *check = NULL;
  mx_error_clear();
  mx_status_t st = mx_sampler_create(&sp, model->config.vocab_size, &check);
  mx_sampler_destroy(check);
  if (st != MX_OK) {
    free(ids);
    return mx_cli_fail(cmd, st);
  }
  st = mx_cli_session_env(&model->config, &so);
  so.backend_opts.progress = mx_cli_progress(!g->quiet && !g->json);
  if (st == MX_OK) st = mx_session_create(model, &so, &s);
  mx_cli_progress_end();
  if (st != MX_OK) {
    free(ids);
    return mx_cli_fail(cmd, st);
  }
  float *media = NULL;
  int32_t *positions = NULL;
  double tower_s = 0.0;
  if (g->n_images > 0) {
    rc = mx_cli_prompt_images(cmd, model, s, g->images, g->n_images, &ids, &n, &media, &positions,
                              &tower_s);
    if (rc != MX_EXIT_OK) {
      mx_session_destroy(s);
      free(ids);
      return rc;
    }
  }
  if (g->n_audios > 0) {
    rc = mx_cli_prompt_audio(cmd, model, s, g->audios, g->n_audios, ids, n, &media, &tower_s);
    if (rc != MX_EXIT_OK) {
      mx_session_destroy(s);
      free(ids);
      return rc;
    }
  }
  int64_t ctx = mx_session_ctx(s);
  if (n > ctx) {
    fprintf(stderr,
            "mlxcel generate: error: the prompt is %d tokens but the context holds %lld "
            "(raise --ctx, or MLXCEL_XLA_CONTEXT_CAPACITY, up to the model's "
            "max_position_embeddings %lld)\n",
            (int)n, (long long)ctx, (long long)model->config.max_position_embeddings);
    mx_session_destroy(s);
    free(media);
    free(positions);
    free(ids);
    return MX_EXIT_FAILED;
  }

  gen_grammar_t gr = {0};
  mx_spec_opts_t spec;
  mx_model_t *draft = NULL;
  mx_session_t *ds = NULL;
  if (g->json_schema && (st = grammar_load(g->json_schema, model, &gr)) != MX_OK) {
    rc = mx_cli_fail(cmd, st);
    goto done;
  }
  rc = mx_cli_spec_setup(cmd, &g->spec, model, &g->load, &so, &spec, &draft, &ds);
  if (rc != MX_EXIT_OK) goto done;
  mx_generate_opts_t go;
  memset(&go, 0, sizeof go);
  go.grammar = gr.match;
  go.max_tokens = (int32_t)g->max_tokens;
  go.ignore_eos = g->ignore_eos;
  go.stop = g->stop;
  go.n_stop = g->n_stop;
  go.sampling = sp;
  go.media = media;
  go.positions = positions;
  go.spec = spec;
  stream_state_t ss = {.json = g->json, .ends_with_newline = false, .wrote_any = false};
  echo_prompt(g, model, ids, n, &ss);
  mx_generate_stats_t stats;
  memset(&stats, 0, sizeof stats);
  mx_error_clear();
  st = mx_generate(s, model->tokenizer, ids, n, &go, on_token, &ss, &stats);
  if (!g->json && ss.wrote_any && !ss.ends_with_newline) fputc('\n', stdout);
  fflush(stdout);
  // With images: their count and the vision tower's time (text and JSON forms).
  char img[96] = "";
  if (g->n_images > 0 && g->json)
    snprintf(img, sizeof img, ", \"images\": %d, \"vision_seconds\": %.6f", (int)g->n_images,
             tower_s);
  else if (g->n_images > 0)
    snprintf(img, sizeof img, "; %d image%s, vision tower %.2f s", (int)g->n_images,
             g->n_images == 1 ? "" : "s", tower_s);
  else if (g->n_audios > 0 && g->json)
    snprintf(img, sizeof img, ", \"audio\": %d, \"audio_seconds\": %.6f", (int)g->n_audios,
             tower_s);
  else if (g->n_audios > 0)
    snprintf(img, sizeof img, "; %d recording%s, audio tower %.2f s", (int)g->n_audios,
             g->n_audios == 1 ? "" : "s", tower_s);
  char spec_text[128] = "";
  if (g->json && spec.mode != MX_SPEC_OFF)
    snprintf(spec_text, sizeof spec_text,
             ", \"speculative\": \"%s\", \"spec_steps\": %d, \"spec_drafted\": %d, "
             "\"spec_accepted\": %d",
             spec.mode == MX_SPEC_NGRAM ? "ngram" : "draft", (int)stats.spec_steps,
             (int)stats.spec_drafted, (int)stats.spec_accepted);
  else
    mx_cli_spec_stats(&spec, &stats, spec_text, sizeof spec_text);
  if (st != MX_OK) {
    rc = mx_cli_fail(cmd, st);
  } else if (g->json) {
    printf(
        "{\"type\": \"summary\", \"prompt_tokens\": %d, \"generated_tokens\": %d, "
        "\"prefill_seconds\": %.6f, \"decode_seconds\": %.6f, \"prefill_tok_s\": %.3f, "
        "\"decode_tok_s\": %.3f, \"finish_reason\": \"%s\", \"seed\": %llu, \"backend\": \"%s\", "
        "\"ctx\": %lld, \"quant\": \"%s\", \"precision\": \"%s\", \"kv_dtype\": \"%s\"%s%s}\n",
        (int)stats.n_prompt, (int)stats.n_generated, stats.prefill_seconds, stats.decode_seconds,
        rate(stats.n_prompt, stats.prefill_seconds), decode_rate(&stats),
        mx_finish_reason_name(stats.finish), (unsigned long long)sp.seed,
        mx_session_backend(s)->name, (long long)ctx, mx_model_quant_name(model),
        mx_elem_name(model->precision), mx_elem_name(model->kv_dtype), img, spec_text);
  } else if (!g->quiet) {
    fprintf(stderr,
            "[%d prompt tokens, %.1f tok/s; %d generated, %.1f tok/s; finish: %s; backend %s, "
            "ctx %lld%s%s, precision %s, kv %s%s%s]\n",
            (int)stats.n_prompt, rate(stats.n_prompt, stats.prefill_seconds),
            (int)stats.n_generated, decode_rate(&stats), mx_finish_reason_name(stats.finish),
            mx_session_backend(s)->name, (long long)ctx,
            model->quant != MX_QUANT_NONE ? ", quant " : "",
            model->quant != MX_QUANT_NONE ? mx_model_quant_name(model) : "",
            mx_elem_name(model->precision), mx_elem_name(model->kv_dtype), img, spec_text);
  }
  fflush(stdout);
done:
  mx_session_destroy(ds);
  mx_model_free(draft);
  grammar_free(&gr);
  mx_session_destroy(s);
  free(media);
  free(positions);
  free(ids);
  return rc;
}

int mx_cli_cmd_generate(int argc, char **argv) {
  gen_args_t g;
  memset(&g, 0, sizeof g);
  g.stop = calloc((size_t)argc + 1, sizeof *g.stop);
  g.images = calloc((size_t)argc + 1, sizeof *g.images);
  g.audios = calloc((size_t)argc + 1, sizeof *g.audios);
  if (!g.stop || !g.images || !g.audios) {
    free(g.stop);
    free(g.images);
    free(g.audios);
    fprintf(stderr, "mlxcel generate: out of memory\n");
    return MX_EXIT_FAILED;
  }
  bool help = false;
  int rc = parse_args(argc, argv, &g, &help);
  if (help) generate_usage(stdout);
  if (help || rc != MX_EXIT_OK) {
    free(g.stop);
    free(g.images);
    free(g.audios);
    return rc;
  }
  if (!mx_cli_check_model_dir("generate", g.dir, "config.json")) {
    free(g.stop);
    free(g.images);
    free(g.audios);
    return MX_EXIT_IO;
  }
  mx_model_t *model = NULL;
  mx_error_clear();
  mx_status_t st = mx_cli_model_load(g.dir, &g.load, !g.quiet && !g.json, &model);
  if (st != MX_OK) {
    free(g.stop);
    free(g.images);
    free(g.audios);
    return mx_cli_fail("generate", st);
  }
  rc = run_generation(&g, model);
  mx_model_free(model);
  free(g.stop);
  free(g.images);
  free(g.audios);
  return rc;
}
