// `mlxcel chat`: an interactive terminal chat through the model's chat template. Replies stream
// as they are generated; the conversation stays in the session's KV cache. Each turn renders
// and encodes the whole conversation, as a fresh request for it would, and prefills only the
// tokens after the prefix it shares with what the cache holds (a reply's tokens need not be
// what its text encodes to, so the prefix is found on the ids, never on the text). Ctrl-C stops
// a reply; at the prompt, a second Ctrl-C exits.
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "mlxcel/chat.h"
#include "mlxcel/image.h"
#include "mlxcel/session.h"
#include "mlxcel/tokenizer.h"

static void chat_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel chat -m DIR [options]\n"
          "\n"
          "Chats with the model in DIR in the terminal: type a message and press Enter; the\n"
          "reply streams as it is generated. Messages are rendered with the model's chat\n"
          "template (tokenizer_config.json chat_template); the conversation is kept, and each\n"
          "turn prefills only what it adds to it.\n"
          "\n"
          "At the prompt:\n"
          "  /image PATH            attach a PNG or JPEG to the next message (vision models;\n"
          "                         repeatable: the images go first, in order)\n"
          "  /audio PATH            attach a WAV recording to the next message (Gemma 3n;\n"
          "                         repeatable: the recordings go first, in order)\n"
          "  /reset                 forget the conversation (the --system message stays)\n"
          "  /help                  list these commands\n"
          "  /exit                  quit (also /quit, Ctrl-D, or Ctrl-C twice)\n"
          "Ctrl-C during a reply stops it; the partial reply stays in the conversation.\n"
          "\n"
          "Options:\n"
          "  -m, --model DIR        model directory\n"
          "  --system TEXT          system message at the start of the conversation\n"
          "  -n, --max-tokens N     reply length limit (default: until an EOS token or a full\n"
          "                         context)\n");
  mx_cli_sampling_help(out);
  mx_cli_spec_help(out);
  fprintf(out,
          "  --ignore-eos           keep generating after an end-of-sequence token\n"
          "  --ctx N                KV-cache capacity in tokens: the whole conversation must\n"
          "                         fit (default: $MLXCEL_XLA_CONTEXT_CAPACITY, else the\n"
          "                         model's max_position_embeddings capped at 4096)\n"
          "  --backend NAME         execution backend: cpu (fast runtime), interp (reference\n"
          "                         interpreter) or xla (a PJRT plugin); default:\n"
          "                         $MLXCEL_BACKEND, else cpu\n" MX_CLI_PJRT_HELP MX_CLI_QUANT_HELP MX_CLI_PRECISION_USAGE("          ", "                         ")
          "  --vision-backend NAME  where a vision model's tower runs: interp, cpu or xla\n"
          "                         (default: $MLXCEL_XLA_VISION_BACKEND, else the --backend)\n"
          "  --stats                after each reply, print token counts and speeds on stderr\n"
          "  -h, --help             show this help\n"
          "\n"
          "Sampling defaults are those of mlxcel generate (generation_config.json, else greedy).\n"
          "\n"
          "Exit status: 0 success, 1 failure (no chat template, a turn that failed, ...),\n"
          "2 bad command line, 3 unreadable model directory.\n");
  mx_cli_env_usage(out, "chat");
}

typedef struct chat_args {
  const char *dir, *backend, *system, *vision_backend;
  int64_t max_tokens, ctx;
  mx_cli_sampling_t sampling;
  mx_cli_spec_t spec;  // --speculative / --draft-tokens / --draft-model
  bool has_ctx, ignore_eos, stats;
  mx_model_load_opts_t load;  // --quant / --group-size / --precision / --kv-dtype
  mx_xla_backend_opts_t xla;  // --pjrt-plugin
} chat_args_t;

static int parse_args(int argc, char **argv, chat_args_t *a, bool *help) {
  const char *cmd = "chat";
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i], *v = NULL;
    int r = 0;
    if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
      *help = true;
      return MX_EXIT_OK;
    }
    if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r > 0) a->dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--system", NULL, &v)) != 0) {
      if (r > 0) a->system = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--backend", NULL, &v)) != 0) {
      if (r > 0) a->backend = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--vision-backend", NULL, &v)) != 0) {
      if (r > 0) a->vision_backend = v;
    } else if ((r = mx_cli_pjrt_opt(argc, argv, &i, cmd, &a->xla)) != 0) {
      // --pjrt-plugin
    } else if ((r = mx_cli_precision_opt(argc, argv, &i, cmd, &a->load)) != 0) {
      // parsed (or reported) by the shared precision flags
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--max-tokens", "-n", &v)) != 0) {
      if (r > 0 && !mx_cli_parse_int(cmd, "-n", v, 1, INT32_MAX, &a->max_tokens)) r = -1;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--ctx", NULL, &v)) != 0) {
      if (r > 0 && !mx_cli_parse_int(cmd, "--ctx", v, 1, INT32_MAX, &a->ctx)) r = -1;
      a->has_ctx = true;
    } else if ((r = mx_cli_sampling_opt(argc, argv, &i, cmd, &a->sampling)) != 0) {
      // parsed (or reported) by the shared sampling flags
    } else if ((r = mx_cli_spec_opt(argc, argv, &i, cmd, &a->spec)) != 0) {
      // speculative decoding's flags
    } else if ((r = mx_cli_quant_opt(argc, argv, &i, cmd, &a->load)) != 0) {
      // --quant / --group-size
    } else if (strcmp(s, "--ignore-eos") == 0) {
      a->ignore_eos = true;
    } else if (strcmp(s, "--stats") == 0) {
      a->stats = true;
    } else if (s[0] == '-') {
      return mx_cli_usage_error(cmd, chat_usage, "unknown option '%s'", s);
    } else {
      return mx_cli_usage_error(cmd, chat_usage,
                                "unexpected argument '%s' (messages are typed at the prompt)", s);
    }
    if (r < 0) return MX_EXIT_USAGE;
  }
  if (!a->dir) return mx_cli_usage_error(cmd, chat_usage, "missing -m DIR (model directory)");
  return MX_EXIT_OK;
}

// ---- Ctrl-C ----

// Set by SIGINT; cleared when a line is read at the prompt. The token callback checks it.
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
  (void)sig;
  g_interrupted = 1;
}

// ---- The conversation ----

typedef struct chat {
  const chat_args_t *a;
  const mx_model_t *model;
  mx_session_t *s;
  mx_chat_template_t *tmpl;
  mx_chat_guard_t *guard;  // what the user types is text, special-token spellings included
  mx_chat_render_opts_t ro;
  mx_generate_opts_t go;
  mx_chat_message_t *msgs;  // contents heap-owned; roles static
  int32_t n_msgs, cap_msgs;
  bool failed;  // a turn failed (exit status 1)
  // Images (/image PATH; vision models): the features of every image of the conversation, in
  // order, counts[i] rows of mx_vision_feature_width floats each (tokens_per_image, or the
  // merged units of a Qwen tower's patch grid grids[2i] x grids[2i + 1]); the last `pending` go
  // with the next user message, whose content starts with one MX_CHAT_IMAGE_MARK each (chat.h).
  bool has_proc, tmpl_parts;
  mx_image_proc_t proc;
  char *image_with;  // the placeholder where an image was (templates that take text)
  size_t image_with_len;
  float *feats;
  size_t n_feats, cap_feats;  // floats
  int32_t *counts, *grids;    // [cap_images], [2 * cap_images]
  int32_t n_images, cap_images, pending;
} chat_t;

static bool push_msg(chat_t *ch, const char *role, const char *text, size_t len) {
  if (ch->n_msgs == ch->cap_msgs) {
    int32_t cap = ch->cap_msgs ? 2 * ch->cap_msgs : 16;
    mx_chat_message_t *m = realloc(ch->msgs, (size_t)cap * sizeof *m);
    if (!m) return false;
    ch->msgs = m;
    ch->cap_msgs = cap;
  }
  char *c = malloc(len + 1);
  if (!c) return false;
  memcpy(c, text, len);
  c[len] = '\0';
  ch->msgs[ch->n_msgs++] = (mx_chat_message_t){role, c};
  return true;
}

static void pop_msg(chat_t *ch) { free((char *)ch->msgs[--ch->n_msgs].content); }

// Forgets the KV cache (the messages stay).
static void drop_cache(chat_t *ch) { mx_session_reset(ch->s); }

static void reset_conversation(chat_t *ch) {
  while (ch->n_msgs > (ch->a->system ? 1 : 0)) pop_msg(ch);
  ch->n_images = ch->pending = 0;
  ch->n_feats = 0;
  drop_cache(ch);
}

// Floats of the features of images [0, n).
static size_t image_floats(const chat_t *ch, int32_t n) {
  size_t rows = 0;
  for (int32_t i = 0; i < n; i++) rows += (size_t)ch->counts[i];
  return rows * (size_t)mx_vision_feature_width(&ch->model->config);
}

// A model whose media are recordings (Gemma 3n's audio tower, no vision tower; ADR 0022): its
// "images" below are recordings, audio_soft_tokens_per_image rows each, marked by
// MX_CHAT_AUDIO_MARK and placed at the runs of audio tokens.
static bool audio_model(const chat_t *ch) {
  return !ch->model->config.vision.present && ch->model->config.audio.present;
}

static const char *media_mark(const chat_t *ch) {
  return audio_model(ch) ? MX_CHAT_AUDIO_MARK : MX_CHAT_IMAGE_MARK;
}

// Room for one more image's count and grid.
static bool grow_images(chat_t *ch) {
  if (ch->n_images < ch->cap_images) return true;
  int32_t cap = ch->cap_images ? 2 * ch->cap_images : 4;
  int32_t *c = realloc(ch->counts, (size_t)cap * sizeof *c);
  if (c) ch->counts = c;
  int32_t *g = c ? realloc(ch->grids, 2 * (size_t)cap * sizeof *g) : NULL;
  if (g) ch->grids = g;
  if (g) ch->cap_images = cap;
  return g != NULL;
}

// Appends one image's features or one recording's rows (f, nf values for `count` tokens; taken
// and freed) for the next user message; false (with the error printed) when out of memory.
static bool append_media(chat_t *ch, float *f, size_t nf, int32_t count, const int32_t grid[2],
                         const char *what) {
  if (ch->n_feats + nf > ch->cap_feats) {
    size_t cap = 2 * (ch->n_feats + nf);
    float *g = realloc(ch->feats, cap * sizeof *g);
    if (!g) {
      free(f);
      fprintf(stderr, "mlxcel chat: error: out of memory (%s)\n", what);
      return false;
    }
    ch->feats = g;
    ch->cap_feats = cap;
  }
  memcpy(ch->feats + ch->n_feats, f, nf * sizeof *f);
  free(f);
  ch->n_feats += nf;
  ch->counts[ch->n_images] = count;
  ch->grids[2 * ch->n_images] = grid[0];
  ch->grids[2 * ch->n_images + 1] = grid[1];
  ch->n_images++;
  ch->pending++;
  ch->failed = false;
  return true;
}

// /image PATH: the image's features now (errors before the message is typed), for the next
// user message.
static void attach_image(chat_t *ch, const char *path) {
  const mx_model_config_t *c = &ch->model->config;
  ch->failed = true;  // until attached
  if (!c->vision.present) {
    fprintf(stderr, "mlxcel chat: error: /image: model_type '%s' takes no images\n", c->model_type);
    return;
  }
  if (!path[0]) {
    fputs("mlxcel chat: error: /image needs a PATH (a PNG or JPEG)\n", stderr);
    return;
  }
  mx_error_clear();
  mx_status_t st = ch->has_proc ? MX_OK : mx_image_proc_load(ch->model->dir, &ch->proc);
  if (st) {
    mx_cli_fail("chat", st);
    return;
  }
  ch->has_proc = true;
  if (!grow_images(ch)) {
    fputs("mlxcel chat: error: out of memory (images)\n", stderr);
    return;
  }
  double secs = 0;
  float *f = NULL;
  int32_t count = 0, grid[2] = {0, 0};
  if (mx_cli_image_features("chat", ch->model, ch->s, &ch->proc, path, &f, &count, grid, &secs) !=
      MX_EXIT_OK)
    return;
  size_t nf = (size_t)count * (size_t)mx_vision_feature_width(c);
  if (!append_media(ch, f, nf, count, grid, "image features")) return;
  fprintf(stdout, "[image %d attached to the next message: %d tokens, vision tower %.2f s]\n",
          ch->n_images, count, secs);
}

// /audio PATH: the recording's rows now (errors before the message is typed), for the next user
// message.
static void attach_audio(chat_t *ch, const char *path) {
  const mx_model_config_t *c = &ch->model->config;
  ch->failed = true;  // until attached
  if (!audio_model(ch)) {
    fprintf(stderr, "mlxcel chat: error: /audio: model_type '%s' has no audio tower\n",
            c->model_type);
    return;
  }
  if (!path[0]) {
    fputs("mlxcel chat: error: /audio needs a PATH (a WAV file)\n", stderr);
    return;
  }
  if (!grow_images(ch)) {
    fputs("mlxcel chat: error: out of memory (recordings)\n", stderr);
    return;
  }
  double secs = 0;
  float *f = NULL;
  if (mx_cli_audio_rows("chat", ch->s, path, &f, &secs) != MX_EXIT_OK) return;
  int32_t count = c->audio.soft_tokens;
  size_t nf = (size_t)count * (size_t)c->hidden_size;
  const int32_t no_grid[2] = {0, 0};
  if (!append_media(ch, f, nf, count, no_grid, "audio rows")) return;
  fprintf(stdout, "[audio %d attached to the next message: %d tokens, audio tower %.2f s]\n",
          ch->n_images, count, secs);
}

// The rendered conversation with its images: a template that iterates parts gets each marked
// message's parts, one that takes text the image token's text where each mark is.
static mx_status_t render(chat_t *ch, char **text, size_t *len, mx_text_range_t **plain,
                          int32_t *n_plain) {
  char **fields = NULL;
  mx_status_t st = MX_OK;
  if (ch->n_images > 0 && ch->tmpl_parts && !audio_model(ch)) {
    fields = calloc((size_t)ch->n_msgs, sizeof *fields);
    if (!fields) st = mx_error_set(MX_ERR_NOMEM, "chat: out of memory");
    for (int32_t i = 0; !st && i < ch->n_msgs; i++) {
      if (!strstr(ch->msgs[i].content, MX_CHAT_IMAGE_MARK)) continue;
      char *parts = NULL;
      st = mx_chat_parts_from_marks(ch->msgs[i].content, &parts);
      size_t n = parts ? strlen(parts) + 16 : 0;
      fields[i] = parts ? malloc(n) : NULL;
      if (fields[i]) snprintf(fields[i], n, "{\"content\":%s}", parts);
      if (!st && !fields[i]) st = mx_error_set(MX_ERR_NOMEM, "chat: out of memory");
      free(parts);
    }
  }
  if (!st)
    st = mx_chat_render_guarded_fields(ch->tmpl, ch->guard, ch->msgs, (const char *const *)fields,
                                       ch->n_msgs, &ch->ro, text, len, plain, n_plain);
  for (int32_t i = 0; fields && i < ch->n_msgs; i++) free(fields[i]);
  free(fields);
  if (!st && ch->n_images > 0 && audio_model(ch)) {  // Gemma3nProcessor's sequence per mark
    char *seq = NULL;
    size_t sl = 0;
    st = mx_chat_audio_sequence(ch->model->tokenizer, &ch->model->config.audio, &seq, &sl);
    if (!st) st = mx_chat_replace_audio_marks(text, len, *plain, *n_plain, seq, sl);
    free(seq);
    return st;
  }
  if (!st && ch->n_images > 0 && !ch->tmpl_parts)
    st = mx_chat_replace_marks(text, len, *plain, *n_plain, ch->image_with, ch->image_with_len);
  if (!st && ch->n_images > 0)  // Gemma 3's processor expands its placeholders in the text
    st = mx_chat_expand_images(ch->model->tokenizer, &ch->model->config.vision, ch->n_images, text,
                               len, *plain, *n_plain);
  return st;
}

// Where each recording's run of audio_soft_tokens_per_image audio tokens starts.
static mx_status_t audio_runs(const mx_model_config_t *c, const int32_t *ids, int32_t n,
                              int32_t n_audio, int32_t *starts) {
  const mx_audio_config_t *a = &c->audio;
  for (int32_t i = 0, k = 0; k < n_audio; k++) {
    while (i < n && ids[i] != a->audio_token_id) i++;
    int32_t len = 0;
    while (i + len < n && ids[i + len] == a->audio_token_id) len++;
    if (len != a->soft_tokens)
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "recording %d has no run of %d audio tokens (id %d) in the prompt", k,
                          a->soft_tokens, a->audio_token_id);
    starts[k] = i;
    i += len;
  }
  return MX_OK;
}

// The prompt ids with every image token expanded (Gemma 3's were, in the text), the media rows
// [n][mx_vision_feature_width] holding each image's features at its tokens (*media NULL without
// images) and, for the Qwen towers, the conversation's M-RoPE positions [3][n] from position 0
// (ADR 0013; *positions NULL otherwise): each turn's prompt is the whole conversation, so the
// positions of what the cache keeps are those it was computed with.
static mx_status_t with_images(chat_t *ch, int32_t **ids, int32_t *n, float **media,
                               int32_t **positions) {
  *media = NULL;
  *positions = NULL;
  if (ch->n_images == 0) return MX_OK;
  const mx_model_config_t *c = &ch->model->config;
  bool audio = audio_model(ch);
  bool grid = !audio && mx_vision_mrope(&c->vision);  // M-RoPE positions
  mx_status_t st = MX_OK;
  if (!audio && !mx_vision_text_expanded(&c->vision)) {
    int32_t *e = NULL, ne = 0;
    st = mx_vision_expand_prompt(c, *ids, *n, ch->n_images, ch->counts, &e, &ne);
    if (st) return mx_error_prefix(st, "the chat template's output");
    free(*ids);
    *ids = e;
    *n = ne;
  }
  size_t W = (size_t)mx_vision_feature_width(c);
  int32_t *starts = malloc(sizeof *starts * (size_t)ch->n_images);
  float *rows = calloc((size_t)*n * W, sizeof *rows);
  int32_t *pos = grid ? malloc(3 * sizeof *pos * (size_t)*n) : NULL;
  int64_t next = 0;
  st = starts && rows && (pos || !grid)
           ? audio ? audio_runs(c, *ids, *n, ch->n_images, starts)
                   : mx_vision_image_runs(c, *ids, *n, ch->n_images, ch->counts, starts)
           : mx_error_set(MX_ERR_NOMEM, "chat: out of memory (media rows)");
  if (!st && grid) st = mx_mrope_positions(c, *ids, *n, ch->grids, ch->n_images, 0, pos, &next);
  for (int32_t i = 0; !st && i < ch->n_images; i++)
    memcpy(rows + (size_t)starts[i] * W, ch->feats + image_floats(ch, i),
           (size_t)ch->counts[i] * W * sizeof *rows);
  free(starts);
  if (st) {
    free(rows);
    free(pos);
    return st;
  }
  *media = rows;
  *positions = pos;
  return MX_OK;
}

typedef struct reply {
  mx_strbuf_t text;
  bool ends_with_newline;
} reply_t;

static bool on_token(void *user, int32_t id, const char *text, size_t len) {
  reply_t *r = user;
  if (len > 0) {
    fwrite(text, 1, len, stdout);
    mx_strbuf_append(&r->text, text, len);
    r->ends_with_newline = text[len - 1] == '\n';
  }
  fflush(stdout);
  return !g_interrupted;
}

// How many leading ids the cache can keep for the token sequence ids[n]: the prefix it shares
// with what the cache holds, less one when that is all of ids (the last token is fed again so
// that its logits start the reply). With image blocks (Gemma 3) the kept part never ends inside
// an image's run of tokens: they attend to each other, so one prefill holds them all
// (mx_vision_prefill_take).
static int64_t reusable_prefix(const mx_session_t *s, const mx_vision_config_t *v,
                               const int32_t *ids, int32_t n) {
  const int32_t *held = mx_session_tokens(s);
  int64_t k = 0, n_held = mx_session_n_past(s);
  while (k < n_held && k < n && held[k] == ids[k]) k++;
  if (k == n) k--;
  while (mx_vision_text_expanded(v) && k > 0 && k < n && ids[k] == v->image_token_id &&
         ids[k - 1] == v->image_token_id)
    k--;
  return k;
}

static void report(chat_t *ch, mx_status_t st) {
  mx_cli_fail("chat", st);
  ch->failed = true;
}

// The user's message: a mark per pending image first, then the line.
static bool push_user(chat_t *ch, const char *line, size_t len) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  for (int32_t i = 0; i < ch->pending; i++) mx_strbuf_puts(&sb, media_mark(ch));
  mx_strbuf_append(&sb, line, len);
  bool ok = !sb.oom && push_msg(ch, "user", sb.data ? sb.data : "", sb.len);
  mx_strbuf_free(&sb);
  return ok;
}

// A failed turn: its message and its images are dropped.
static void drop_turn(chat_t *ch) {
  pop_msg(ch);
  ch->n_images -= ch->pending;
  ch->n_feats = image_floats(ch, ch->n_images);
  ch->pending = 0;
}

// One exchange: the user's line in, the streamed reply out.
static void turn(chat_t *ch, const char *line, size_t len) {
  if (ch->model->config.vision.present && strstr(line, MX_CHAT_IMAGE_MARK)) {
    report(ch, mx_error_set(MX_ERR_INVALID_ARG,
                            "the message holds U+FDD2, a noncharacter that marks images here"));
    return;
  }
  if (audio_model(ch) && strstr(line, MX_CHAT_AUDIO_MARK)) {
    report(ch, mx_error_set(MX_ERR_INVALID_ARG,
                            "the message holds U+FDD3, a noncharacter that marks recordings here"));
    return;
  }
  if (!push_user(ch, line, len)) {
    report(ch, mx_error_set(MX_ERR_NOMEM, "chat: out of memory"));
    return;
  }
  char *text = NULL;
  size_t text_len = 0;
  int32_t *ids = NULL, n = 0, *positions = NULL;
  float *media = NULL;
  mx_error_clear();
  mx_text_range_t *plain = NULL;
  int32_t n_plain = 0;
  mx_status_t st = render(ch, &text, &text_len, &plain, &n_plain);
  // As apply_chat_template(tokenize=True): the template writes BOS itself and its markup's
  // special tokens are matched, but special-token text typed into a message stays text (the
  // server's rule too), so a line cannot end its own turn and forge the next.
  mx_encode_opts_t eo = {
      .add_special = false, .parse_special = true, .plain = plain, .n_plain = n_plain};
  if (st == MX_OK) st = mx_tokenizer_encode(ch->model->tokenizer, text, text_len, &eo, &ids, &n);
  free(plain);
  free(text);
  if (st == MX_OK) st = with_images(ch, &ids, &n, &media, &positions);
  if (st == MX_OK && n == 0)
    st = mx_error_set(MX_ERR_RUNTIME, "the chat template rendered nothing");
  int64_t ctx = mx_session_ctx(ch->s);
  if (st == MX_OK && n > ctx) {
    fprintf(stderr,
            "mlxcel chat: the conversation would take %lld tokens but the context holds %lld: "
            "/reset to start over (or raise --ctx)\n",
            (long long)n, (long long)ctx);
    ch->failed = true;
    st = MX_ERR_RUNTIME;  // reported
  } else if (st != MX_OK) {
    report(ch, st);
  }
  if (st != MX_OK) {
    drop_turn(ch);
    free(ids);
    free(media);
    free(positions);
    return;
  }
  int64_t keep = reusable_prefix(ch->s, &ch->model->config.vision, ids, n);
  st = mx_session_rewind(ch->s, keep);
  reply_t r = {0};
  mx_strbuf_init(&r.text);
  mx_generate_stats_t stats = {0};
  // With images in the conversation every prefill goes through the media entry, as generate's
  // (the Qwen towers with the positions of the tokens after the kept ones, [3][n - keep]).
  size_t W = (size_t)mx_vision_feature_width(&ch->model->config), nk = (size_t)(n - keep);
  ch->go.media = media ? media + (size_t)keep * W : NULL;
  for (int32_t row = 0; positions && row < 3; row++)  // rows packed in place, moving down
    memmove(positions + (size_t)row * nk, positions + (size_t)row * (size_t)n + (size_t)keep,
            nk * sizeof *positions);
  ch->go.positions = positions;
  if (st == MX_OK)
    st = mx_generate(ch->s, ch->model->tokenizer, ids + keep, (int32_t)(n - keep), &ch->go,
                     on_token, &r, &stats);
  ch->go.media = NULL;
  ch->go.positions = NULL;
  free(ids);
  free(media);
  free(positions);
  if (r.text.len > 0 && !r.ends_with_newline) fputc('\n', stdout);
  if (st == MX_OK && stats.finish == MX_FINISH_CALLBACK) fputs("[interrupted]\n", stdout);
  if (st == MX_OK && stats.finish == MX_FINISH_CONTEXT) {
    fputs("[the context is full: /reset to start over]\n", stdout);
  }
  fflush(stdout);
  if (st != MX_OK || r.text.oom ||
      !push_msg(ch, "assistant", r.text.data ? r.text.data : "", r.text.len)) {
    if (st == MX_OK) st = mx_error_set(MX_ERR_NOMEM, "chat: out of memory");
    report(ch, st);
    drop_turn(ch);  // the user message whose reply failed
    drop_cache(ch);
  } else {
    ch->pending = 0;
    if (ch->a->stats) {
      double rate = stats.n_generated > 1 && stats.decode_seconds > 0
                        ? (stats.n_generated - 1) / stats.decode_seconds
                        : 0.0;
      char spec[128];
      mx_cli_spec_stats(&ch->go.spec, &stats, spec, sizeof spec);
      fprintf(stderr,
              "[%d prompt tokens%s, %lld in context; %d generated, %.1f tok/s; finish: %s%s]\n",
              (int)stats.n_prompt, keep == 0 ? "" : " added", (long long)mx_session_n_past(ch->s),
              (int)stats.n_generated, rate, mx_finish_reason_name(stats.finish), spec);
    }
  }
  mx_strbuf_free(&r.text);
}

// /commands; returns false for /exit.
static bool command(chat_t *ch, const char *line) {
  if (strcmp(line, "/exit") == 0 || strcmp(line, "/quit") == 0) return false;
  if (strncmp(line, "/image", 6) == 0 && (line[6] == ' ' || line[6] == '\0')) {
    const char *path = line + 6;
    while (*path == ' ') path++;
    attach_image(ch, path);
  } else if (strncmp(line, "/audio", 6) == 0 && (line[6] == ' ' || line[6] == '\0')) {
    const char *path = line + 6;
    while (*path == ' ') path++;
    attach_audio(ch, path);
  } else if (strcmp(line, "/reset") == 0) {
    reset_conversation(ch);
    fputs("[conversation reset]\n", stdout);
  } else if (strcmp(line, "/help") == 0) {
    fputs(
        "/image PATH  attach a PNG or JPEG to the next message (vision models)\n/audio PATH  "
        "attach a WAV recording to the next message (Gemma 3n)\n/reset  forget "
        "the conversation\n/help   this list\n/exit   quit (also Ctrl-D, or Ctrl-C twice at the "
        "prompt)\nCtrl-C during a reply stops it.\n",
        stdout);
  } else {
    fprintf(stdout, "unknown command '%s' (/help lists them)\n", line);
  }
  fflush(stdout);
  return true;
}

static void loop(chat_t *ch) {
  bool tty = isatty(STDIN_FILENO);
  int prompt_interrupts = 0;
  char *line = NULL;
  size_t cap = 0;
  for (;;) {
    if (tty) fputs("> ", stdout);
    fflush(stdout);
    g_interrupted = 0;
    errno = 0;
    ssize_t len = getline(&line, &cap, stdin);
    if (len < 0 && (g_interrupted || errno == EINTR)) {
      clearerr(stdin);
      if (++prompt_interrupts >= 2) {
        fputc('\n', stdout);
        break;
      }
      fputs("\n(Ctrl-C again, /exit or Ctrl-D to quit)\n", stdout);
      continue;
    }
    if (len < 0) {  // end of input
      if (tty) fputc('\n', stdout);
      break;
    }
    prompt_interrupts = 0;
    g_interrupted = 0;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    if (len == 0) continue;
    if (line[0] == '/') {
      if (!command(ch, line)) break;
    } else {
      turn(ch, line, (size_t)len);
    }
  }
  fflush(stdout);
  free(line);
}

static int run_chat(const chat_args_t *a, const mx_model_t *model) {
  const char *cmd = "chat";
  chat_t ch = {.a = a, .model = model};
  int rc = mx_cli_chat_template(cmd, "chat", a->dir, model->tokenizer, &ch.tmpl);
  if (rc != MX_EXIT_OK) return rc;
  mx_status_t st = mx_chat_guard_create(model->tokenizer, &ch.guard);
  ch.ro.add_generation_prompt = true;
  mx_chat_opts_from_tokenizer(model->tokenizer, &ch.ro);
  mx_cli_sampling_params(&a->sampling, &model->config, &ch.go.sampling);
  mx_sampler_t *check = NULL;  // bad sampling values are reported before the chat starts
  if (st == MX_OK) st = mx_sampler_create(&ch.go.sampling, model->config.vocab_size, &check);
  mx_sampler_destroy(check);
  mx_session_opts_t so = {
      .backend = a->backend, .vision_backend = a->vision_backend, .ctx = a->has_ctx ? a->ctx : 0};
  so.backend_opts.xla = a->xla;
  if (st == MX_OK) st = mx_cli_session_env(&model->config, &so);
  so.backend_opts.progress = mx_cli_progress(true);
  if (st == MX_OK) st = mx_session_create(model, &so, &ch.s);
  mx_cli_progress_end();
  if (st == MX_OK && a->system && !push_msg(&ch, "system", a->system, strlen(a->system))) {
    st = mx_error_set(MX_ERR_NOMEM, "chat: out of memory");
  }
  size_t il = 0;
  const char *it =
      st == MX_OK ? mx_chat_image_placeholder(model->tokenizer, &model->config.vision, &il) : NULL;
  if (it) {  // a vision model: how its template takes images
    st = mx_chat_image_with(model->tokenizer, &model->config.vision, &ch.image_with,
                            &ch.image_with_len);
    ch.tmpl_parts = mx_chat_template_takes_parts(ch.tmpl, it, il);
  }
  mx_model_t *draft = NULL;
  mx_session_t *ds = NULL;
  if (st != MX_OK) {
    rc = mx_cli_fail(cmd, st);
  } else if ((rc = mx_cli_spec_setup(cmd, &a->spec, model, &a->load, &so, &ch.go.spec, &draft,
                                     &ds)) == MX_EXIT_OK) {
    int64_t ctx = mx_session_ctx(ch.s);
    ch.go.max_tokens = (int32_t)(a->max_tokens ? a->max_tokens : ctx);
    ch.go.ignore_eos = a->ignore_eos;
    fprintf(stderr,
            "mlxcel chat: %s (backend %s, context %lld tokens). /help lists the commands; "
            "Ctrl-C stops a reply, /exit quits.\n",
            a->dir, mx_session_backend(ch.s)->name, (long long)ctx);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: Ctrl-C interrupts the read at the prompt
    sigaction(SIGINT, &sa, &old);
    loop(&ch);
    sigaction(SIGINT, &old, NULL);
    if (ch.failed) rc = MX_EXIT_FAILED;
  }
  while (ch.n_msgs > 0) pop_msg(&ch);
  free(ch.msgs);
  free(ch.feats);
  free(ch.counts);
  free(ch.grids);
  free(ch.image_with);
  mx_session_destroy(ds);
  mx_model_free(draft);
  mx_session_destroy(ch.s);
  mx_chat_guard_destroy(ch.guard);
  mx_chat_template_destroy(ch.tmpl);
  return rc;
}

int mx_cli_cmd_chat(int argc, char **argv) {
  chat_args_t a;
  memset(&a, 0, sizeof a);
  bool help = false;
  int rc = parse_args(argc, argv, &a, &help);
  if (help) chat_usage(stdout);
  if (help || rc != MX_EXIT_OK) return rc;
  if (!mx_cli_check_model_dir("chat", a.dir, "config.json")) return MX_EXIT_IO;
  mx_model_t *model = NULL;
  mx_error_clear();
  mx_status_t st = mx_cli_model_load(a.dir, &a.load, true, &model);
  if (st != MX_OK) return mx_cli_fail("chat", st);
  rc = run_chat(&a, model);
  mx_model_free(model);
  return rc;
}
