// `mlxcel tokenize` and `mlxcel detokenize`: text <-> token ids with a model's tokenizer.json
// only (the weights are not read).
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlxcel/model.h"
#include "mlxcel/tokenizer.h"

static void tokenize_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel tokenize -m DIR [--no-add-special] [--split-special] [--json] TEXT\n"
          "       mlxcel tokenize -m DIR [--no-add-special] [--split-special] [--json] -f FILE\n"
          "\n"
          "Prints the token ids of TEXT (or of the contents of FILE; `-` is standard input)\n"
          "with the tokenizer of model directory DIR (DIR/tokenizer.json and, when present,\n"
          "DIR/tokenizer_config.json; the weights are not read).\n"
          "\n"
          "Options:\n"
          "  -m, --model DIR   model directory\n"
          "  --no-add-special  add no special tokens (no BOS); special-token text such as\n"
          "                    `<|im_end|>` is still matched (transformers'\n"
          "                    add_special_tokens=False)\n"
          "  --split-special   encode special-token text as plain text (transformers'\n"
          "                    split_special_tokens=True)\n"
          "  --no-special      both of the above\n"
          "  --json            print a JSON array ([1, 403, 407]) instead of space-separated ids\n"
          "  -f, --file FILE   read the text from FILE instead of the command line\n"
          "  -h, --help        show this help\n"
          "\n"
          "By default the tokenizer's post-processor adds its special tokens (e.g. BOS) and\n"
          "special tokens spelled in the text are matched, as Hugging Face's\n"
          "tokenizer(text) does.\n"
          "\n"
          "Exit status: 0 success, 1 failure, 2 bad command line, 3 unreadable model or file.\n");
  mx_cli_env_usage(out, "tokenize");
}

static void detokenize_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel detokenize -m DIR --ids 1,2,3 [--skip-special]\n"
          "\n"
          "Prints the text of the token ids (then a newline) with the tokenizer of model\n"
          "directory DIR (DIR/tokenizer.json; the weights are not read).\n"
          "\n"
          "Options:\n"
          "  -m, --model DIR   model directory\n"
          "  --ids LIST        token ids separated by commas\n"
          "  --skip-special    drop special tokens (BOS, EOS, ...) from the text\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 success, 1 failure (e.g. an id outside the vocabulary), 2 bad command\n"
          "line, 3 unreadable model directory.\n");
  mx_cli_env_usage(out, "detokenize");
}

static int load_tokenizer(const char *cmd, const char *dir, mx_tokenizer_t **tok) {
  if (!mx_cli_check_model_dir(cmd, dir, "tokenizer.json")) return MX_EXIT_IO;
  mx_error_clear();
  mx_status_t st =
      mx_model_is_gguf(dir) ? mx_gguf_load_tokenizer(dir, tok) : mx_tokenizer_load(dir, tok);
  return st == MX_OK ? MX_EXIT_OK : mx_cli_fail(cmd, st);
}

int mx_cli_read_input(const char *cmd, const char *path, char **text, size_t *len) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  if (strcmp(path, "-") == 0) {
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) mx_strbuf_append(&sb, buf, n);
    if (ferror(stdin) || sb.oom) {
      mx_strbuf_free(&sb);
      fprintf(stderr, "mlxcel %s: cannot read standard input\n", cmd);
      return MX_EXIT_IO;
    }
    if (!sb.data) mx_strbuf_puts(&sb, "");
    *text = mx_strbuf_take(&sb, len);
    return MX_EXIT_OK;
  }
  mx_error_clear();
  mx_status_t st = mx_read_file(path, text, len);
  if (st != MX_OK) return mx_cli_fail(cmd, st);
  return MX_EXIT_OK;
}

int mx_cli_cmd_tokenize(int argc, char **argv) {
  const char *cmd = "tokenize", *dir = NULL, *text = NULL, *file = NULL;
  bool json = false, no_add_special = false, split_special = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      tokenize_usage(stdout);
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--file", "-f", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      file = v;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--no-special") == 0) {
      no_add_special = split_special = true;
    } else if (strcmp(a, "--no-add-special") == 0) {
      no_add_special = true;
    } else if (strcmp(a, "--split-special") == 0) {
      split_special = true;
    } else if (strcmp(a, "--") == 0 && i + 1 < argc && !text) {
      text = argv[++i];
    } else if (a[0] == '-' && a[1] != '\0') {  // TEXT starting with '-' goes after `--`
      return mx_cli_usage_error(cmd, tokenize_usage, "unknown option '%s'", a);
    } else if (!text) {
      text = a;
    } else {
      return mx_cli_usage_error(
          cmd, tokenize_usage, "expected one TEXT argument, got another: '%s' (quote the text)", a);
    }
  }
  if (!dir) return mx_cli_usage_error(cmd, tokenize_usage, "missing -m DIR (model directory)");
  if (!text && !file) return mx_cli_usage_error(cmd, tokenize_usage, "missing TEXT");
  if (text && file)
    return mx_cli_usage_error(cmd, tokenize_usage, "give TEXT or -f FILE, not both");

  mx_tokenizer_t *tok = NULL;
  int rc = load_tokenizer(cmd, dir, &tok);
  if (rc != MX_EXIT_OK) return rc;
  char *owned = NULL;
  size_t len = text ? strlen(text) : 0;
  if (file) {
    rc = mx_cli_read_input(cmd, file, &owned, &len);
    if (rc != MX_EXIT_OK) {
      mx_tokenizer_destroy(tok);
      return rc;
    }
    text = owned;
  }
  mx_encode_opts_t eo = {.add_special = !no_add_special, .parse_special = !split_special};
  int32_t *ids = NULL, n = 0;
  mx_error_clear();
  mx_status_t st = mx_tokenizer_encode(tok, text, len, &eo, &ids, &n);
  if (st != MX_OK) {
    rc = mx_cli_fail(cmd, st);
  } else {
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    if (json) mx_strbuf_puts(&sb, "[");
    for (int32_t k = 0; k < n; k++) {
      mx_strbuf_printf(&sb, "%s%d", k == 0 ? "" : (json ? ", " : " "), (int)ids[k]);
    }
    mx_strbuf_puts(&sb, json ? "]\n" : "\n");
    fputs(sb.data, stdout);
    mx_strbuf_free(&sb);
  }
  free(ids);
  free(owned);
  mx_tokenizer_destroy(tok);
  return rc;
}

int mx_cli_cmd_detokenize(int argc, char **argv) {
  const char *cmd = "detokenize", *dir = NULL, *ids_arg = NULL;
  bool skip_special = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      detokenize_usage(stdout);
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--ids", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      ids_arg = v;
    } else if (strcmp(a, "--skip-special") == 0) {
      skip_special = true;
    } else if (a[0] == '-') {
      return mx_cli_usage_error(cmd, detokenize_usage, "unknown option '%s'", a);
    } else {
      return mx_cli_usage_error(cmd, detokenize_usage,
                                "unexpected argument '%s' (the ids go in --ids 1,2,3)", a);
    }
  }
  if (!dir) return mx_cli_usage_error(cmd, detokenize_usage, "missing -m DIR (model directory)");
  if (!ids_arg) return mx_cli_usage_error(cmd, detokenize_usage, "missing --ids LIST");
  int32_t *ids = NULL, n = 0;
  if (!mx_cli_parse_ids(cmd, "--ids", ids_arg, &ids, &n)) return MX_EXIT_USAGE;
  mx_tokenizer_t *tok = NULL;
  int rc = load_tokenizer(cmd, dir, &tok);
  if (rc != MX_EXIT_OK) {
    free(ids);
    return rc;
  }
  char *text = NULL;
  size_t len = 0;
  mx_error_clear();
  mx_status_t st = mx_tokenizer_decode(tok, ids, n, skip_special, &text, &len);
  if (st != MX_OK) {
    rc = mx_cli_fail(cmd, st);
  } else {
    fwrite(text, 1, len, stdout);
    fputc('\n', stdout);
  }
  free(text);
  free(ids);
  mx_tokenizer_destroy(tok);
  return rc;
}
