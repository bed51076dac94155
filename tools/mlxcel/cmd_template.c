// `mlxcel template`: what the model sees. Renders a conversation through the model's chat
// template (or a template file) to the text and token ids a chat request would feed it, as
// transformers' apply_chat_template does, without loading the weights.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlxcel/chat.h"
#include "mlxcel/model.h"
#include "mlxcel/tokenizer.h"

static void template_usage(FILE *out) {
  fprintf(
      out,
      "Usage: mlxcel template -m DIR --messages FILE [options]\n"
      "       mlxcel template -m DIR -p TEXT [--system TEXT] [options]\n"
      "\n"
      "Renders a conversation through the chat template of model directory DIR\n"
      "(tokenizer_config.json's chat_template; DIR/tokenizer.json encodes the result; the\n"
      "weights are not read) and prints the text a chat request feeds the model, as\n"
      "transformers' apply_chat_template(tokenize=False) does; --ids prints its token ids\n"
      "instead (apply_chat_template(tokenize=True): no post-processor specials, special-token\n"
      "text matched).\n"
      "\n"
      "Options:\n"
      "  -m, --model DIR           model directory\n"
      "  --messages FILE           the conversation: a JSON array of messages ({\"role\",\n"
      "                            \"content\"}, content a string or a list of parts; any\n"
      "                            other fields are passed to the template); `-` is stdin\n"
      "  -p, --prompt TEXT         a one-message conversation: TEXT as the user's message\n"
      "  --system TEXT             a system message before it (with -p)\n"
      "  --add-generation-prompt   end with the assistant turn's opening (what generate\n"
      "                            --chat and the server do)\n"
      "  --extra JSON              more template variables, e.g. '{\"enable_thinking\": false}'\n"
      "  --template FILE           render with this Jinja template instead of the model's\n"
      "  --ids                     print the token ids instead of the text\n"
      "  --json                    print {\"text\": ..., \"ids\": [...]} on one line\n"
      "  -h, --help                show this help\n"
      "\n"
      "Exit status: 0 success, 1 failure (no chat template, a template error such as its\n"
      "own raise_exception, bad messages), 2 bad command line, 3 unreadable model or file.\n");
  mx_cli_env_usage(out, "template");
}

typedef struct template_args {
  const char *dir, *messages, *prompt, *system, *extra, *template_file;
  bool add_generation_prompt, ids, json;
} template_args_t;

static int parse_args(int argc, char **argv, template_args_t *a) {
  const char *cmd = "template";
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i], *v = NULL;
    int r;
    if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
      template_usage(stdout);
      return -1;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      a->dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--messages", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      a->messages = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--prompt", "-p", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      a->prompt = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--system", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      a->system = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--extra", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      a->extra = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--template", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      a->template_file = v;
    } else if (strcmp(s, "--add-generation-prompt") == 0) {
      a->add_generation_prompt = true;
    } else if (strcmp(s, "--ids") == 0) {
      a->ids = true;
    } else if (strcmp(s, "--json") == 0) {
      a->json = true;
    } else {
      return mx_cli_usage_error(cmd, template_usage, "unknown argument '%s'", s);
    }
  }
  if (!a->dir) return mx_cli_usage_error(cmd, template_usage, "missing -m DIR (model directory)");
  if (!a->messages == !a->prompt)
    return mx_cli_usage_error(cmd, template_usage, "give --messages FILE or -p TEXT (one of them)");
  if (a->system && !a->prompt)
    return mx_cli_usage_error(cmd, template_usage, "--system goes with -p (put it in --messages)");
  if (a->ids && a->json)
    return mx_cli_usage_error(cmd, template_usage, "--json already holds the ids: drop --ids");
  return MX_EXIT_OK;
}

// The conversation as a JSON array text (heap), from --messages or from -p / --system.
static int messages_json(const template_args_t *a, char **out) {
  if (a->messages) {
    size_t len = 0;
    return mx_cli_read_input("template", a->messages, out, &len);
  }
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_strbuf_puts(&sb, "[");
  if (a->system) {
    mx_strbuf_puts(&sb, "{\"role\": \"system\", \"content\": ");
    mx_cli_json_string(&sb, a->system);
    mx_strbuf_puts(&sb, "}, ");
  }
  mx_strbuf_puts(&sb, "{\"role\": \"user\", \"content\": ");
  mx_cli_json_string(&sb, a->prompt);
  mx_strbuf_puts(&sb, "}]");
  if (sb.oom) {
    mx_strbuf_free(&sb);
    return mx_cli_fail("template", mx_error_set(MX_ERR_NOMEM, "out of memory"));
  }
  *out = mx_strbuf_take(&sb, NULL);
  return MX_EXIT_OK;
}

static int compile_template(const template_args_t *a, const mx_tokenizer_t *tok,
                            mx_chat_template_t **t) {
  if (!a->template_file) return mx_cli_chat_template("template", "template", a->dir, tok, t);
  char *src = NULL;
  size_t len = 0;
  int rc = mx_cli_read_input("template", a->template_file, &src, &len);
  if (rc != MX_EXIT_OK) return rc;
  mx_error_clear();
  mx_status_t st = mx_chat_template_compile(src, len, t);
  free(src);
  return st == MX_OK ? MX_EXIT_OK : mx_cli_fail("template", st);
}

static void print_result(const template_args_t *a, const char *text, size_t len, const int32_t *ids,
                         int32_t n) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  if (a->json) {
    mx_strbuf_puts(&sb, "{\"text\": ");
    mx_cli_json_string_n(&sb, text, len);
    mx_strbuf_puts(&sb, ", \"ids\": [");
  }
  if (a->json || a->ids) {
    for (int32_t k = 0; k < n; k++)
      mx_strbuf_printf(&sb, "%s%d", k ? (a->json ? ", " : " ") : "", ids[k]);
    mx_strbuf_puts(&sb, a->json ? "]}\n" : "\n");
  } else {
    mx_strbuf_append(&sb, text, len);  // exactly the rendered text: no newline added
  }
  if (sb.data) fwrite(sb.data, 1, sb.len, stdout);
  mx_strbuf_free(&sb);
}

int mx_cli_cmd_template(int argc, char **argv) {
  const char *cmd = "template";
  template_args_t a = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc < 0) return MX_EXIT_OK;  // --help
  if (rc != MX_EXIT_OK) return rc;
  if (!mx_cli_check_model_dir(cmd, a.dir, "tokenizer.json")) return MX_EXIT_IO;
  mx_tokenizer_t *tok = NULL;
  mx_error_clear();
  mx_status_t st = mx_model_is_gguf(a.dir) ? mx_gguf_load_tokenizer(a.dir, &tok)
                                           : mx_tokenizer_load(a.dir, &tok);
  if (st != MX_OK) return mx_cli_fail(cmd, st);
  mx_chat_template_t *t = NULL;
  char *msgs = NULL, *text = NULL;
  int32_t *ids = NULL, n = 0;
  size_t len = 0;
  rc = compile_template(&a, tok, &t);
  if (rc == MX_EXIT_OK) rc = messages_json(&a, &msgs);
  if (rc == MX_EXIT_OK) {
    mx_chat_render_opts_t ro = {.add_generation_prompt = a.add_generation_prompt,
                                .extra_json = a.extra};
    mx_chat_opts_from_tokenizer(tok, &ro);
    mx_error_clear();
    st = mx_chat_render_json(t, msgs, &ro, &text, &len);
    if (st == MX_OK && (a.ids || a.json)) {
      mx_encode_opts_t eo = {.add_special = false, .parse_special = true};
      st = mx_tokenizer_encode(tok, text, len, &eo, &ids, &n);
    }
    if (st != MX_OK) rc = mx_cli_fail(cmd, st);
  }
  if (rc == MX_EXIT_OK) print_result(&a, text, len, ids, n);
  free(ids);
  free(text);
  free(msgs);
  mx_chat_template_destroy(t);
  mx_tokenizer_destroy(tok);
  return rc;
}
