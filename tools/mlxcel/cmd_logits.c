// `mlxcel logits`: runs a prompt through the model in one prefill and writes the logits of
// every position as a float32 .npy array [n_ids, vocab] (the parity tool); with --greedy N it
// then decodes N tokens greedily and appends the logits of each step.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlxcel/session.h"

static void logits_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel logits -m DIR --ids 1,2,3 -o FILE.npy [--ctx N] [--backend NAME]\n"
          "                     [--quant MODE] [--group-size N] [--precision T] [--kv-dtype T]\n"
          "                     [--greedy N]\n"
          "\n"
          "Feeds the token ids to the model in DIR from position 0 and writes the logits of\n"
          "every position to FILE.npy: float32, shape (n_ids, vocab), C order, NPY format 1.0\n"
          "(numpy.load reads it). Ids are used as given: no BOS is added.\n"
          "With --greedy N, N decode steps follow, one token each: the argmax of the last\n"
          "row (the lowest id among equal maxima); their N rows are appended, so the file\n"
          "holds (n_ids + N, vocab) and the argmax of rows n_ids-1 .. n_ids+N-1 are the\n"
          "greedy continuation (no tokenizer needed, no EOS stop).\n"
          "\n"
          "Options:\n"
          "  -m, --model DIR    model directory\n"
          "  --ids LIST         token ids separated by commas\n"
          "  -o, --output FILE  the .npy file to write\n"
          "  --ctx N            KV-cache capacity (default: $MLXCEL_XLA_CONTEXT_CAPACITY, else\n"
          "                     the model's max_position_embeddings capped at 4096)\n"
          "  --backend NAME     execution backend: cpu, interp or xla (default:\n"
          "                     $MLXCEL_BACKEND, else cpu)\n"
          "  --pjrt-plugin PATH the xla backend's PJRT plugin (default:\n"
          "                     $MLXCEL_XLA_PJRT_PLUGIN, else the installed plugin of\n"
          "                     $MLXCEL_XLA_DEVICE)\n"
          "  --greedy N         then decode N tokens greedily (default 0)\n"
          "  --quant MODE       weights: none, int8, int4, mlx (default: auto, see generate)\n"
          "  --group-size N     int8 / int4 group size: 32, 64 (default) or 128\n"
          MX_CLI_PRECISION_USAGE("      ", "                     ")
          "  -h, --help         show this help\n"
          "\n"
          "Exit status: 0 success, 1 failure, 2 bad command line, 3 unreadable model directory\n"
          "or unwritable output.\n");
  mx_cli_env_usage(out, "logits");
}

int mx_cli_cmd_logits(int argc, char **argv) {
  const char *cmd = "logits", *dir = NULL, *ids_arg = NULL, *out_path = NULL, *backend = NULL;
  mx_xla_backend_opts_t xla = {0};  // --pjrt-plugin
  int64_t ctx = 0, n_greedy = 0;
  // Logits need ids only: a checkpoint without tokenizer.json (e.g. a parity fixture) is fine.
  mx_model_load_opts_t lo = {.tokenizer_optional = true};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      logits_usage(stdout);
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--ids", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      ids_arg = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--output", "-o", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      out_path = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--backend", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      backend = v;
    } else if ((r = mx_cli_pjrt_opt(argc, argv, &i, cmd, &xla)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--ctx", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--ctx", v, 1, INT32_MAX, &ctx)) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--greedy", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--greedy", v, 0, INT32_MAX, &n_greedy)) {
        return MX_EXIT_USAGE;
      }
    } else if ((r = mx_cli_quant_opt(argc, argv, &i, cmd, &lo)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_precision_opt(argc, argv, &i, cmd, &lo)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if (a[0] == '-') {
      return mx_cli_usage_error(cmd, logits_usage, "unknown option '%s'", a);
    } else {
      return mx_cli_usage_error(cmd, logits_usage, "unexpected argument '%s'", a);
    }
  }
  if (!dir) return mx_cli_usage_error(cmd, logits_usage, "missing -m DIR (model directory)");
  if (!ids_arg) return mx_cli_usage_error(cmd, logits_usage, "missing --ids LIST");
  if (!out_path) return mx_cli_usage_error(cmd, logits_usage, "missing -o FILE.npy");
  int32_t *ids = NULL, n = 0;
  if (!mx_cli_parse_ids(cmd, "--ids", ids_arg, &ids, &n)) return MX_EXIT_USAGE;
  if (!mx_cli_check_model_dir(cmd, dir, "config.json")) {
    free(ids);
    return MX_EXIT_IO;
  }

  int rc = MX_EXIT_OK;
  mx_model_t *model = NULL;
  mx_session_t *s = NULL;
  float *logits = NULL;
  mx_session_opts_t so;
  memset(&so, 0, sizeof so);
  so.backend = backend;
  so.ctx = ctx;
  so.backend_opts.xla = xla;
  mx_error_clear();
  mx_status_t st = mx_cli_model_load(dir, &lo, true, &model);
  if (st == MX_OK) st = mx_cli_session_env(&model->config, &so);
  so.backend_opts.progress = mx_cli_progress(true);
  if (st == MX_OK) st = mx_session_create(model, &so, &s);
  mx_cli_progress_end();
  if (st != MX_OK) {
    rc = mx_cli_fail(cmd, st);
    goto done;
  }
  if (n + n_greedy > mx_session_ctx(s)) {
    fprintf(stderr,
            "mlxcel logits: error: %d ids + %lld greedy steps but the context holds %lld "
            "(raise --ctx)\n",
            (int)n, (long long)n_greedy, (long long)mx_session_ctx(s));
    rc = MX_EXIT_FAILED;
    goto done;
  }
  int32_t vocab = mx_session_vocab(s);
  int64_t rows = n + n_greedy;
  logits = malloc((size_t)rows * (size_t)vocab * sizeof *logits);
  if (!logits) {
    fprintf(stderr, "mlxcel logits: out of memory (%lld x %d logits)\n", (long long)rows,
            (int)vocab);
    rc = MX_EXIT_FAILED;
    goto done;
  }
  mx_error_clear();
  st = mx_session_prefill(s, ids, n, logits);
  // Greedy steps through the session's decode path (what `generate` runs), fed the argmax of
  // the previous row.
  for (int64_t k = n; st == MX_OK && k < rows; k++) {
    const float *prev = logits + (size_t)(k - 1) * (size_t)vocab;
    int32_t best = 0;
    for (int32_t j = 1; j < vocab; j++) {
      if (prev[j] > prev[best]) best = j;
    }
    st = mx_session_decode(s, best);
    if (st == MX_OK) {
      memcpy(logits + (size_t)k * (size_t)vocab, mx_session_logits(s),
             (size_t)vocab * sizeof *logits);
    }
  }
  if (st == MX_OK) {
    int64_t dims[2] = {rows, vocab};
    st = mx_cli_write_npy_f32(out_path, logits, dims, 2);
  }
  if (st != MX_OK) {
    rc = mx_cli_fail(cmd, st);
  } else {
    fprintf(stderr, "mlxcel logits: wrote %lld x %d float32 logits to %s\n", (long long)rows,
            (int)vocab, out_path);
  }
done:
  free(logits);
  mx_session_destroy(s);
  mx_model_free(model);
  free(ids);
  return rc;
}
