// `mlxcel diff`: the divergence finder. Runs a model's graph for the given ids with the fast CPU
// runtime and with the reference interpreter side by side and reports the first op whose output
// differs beyond the tolerance (mlxcel/cpu_diff.h).
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlxcel/cpu_diff.h"
#include "mlxcel/model.h"

static void diff_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel diff -m DIR --ids 1,2,3 [--threads T] [--tol X] [--ctx N]\n"
          "\n"
          "Builds the model's graph for the ids (@prefill of all of them from position 0 with\n"
          "the logits of every position; @decode for a single id), runs it with the fast CPU\n"
          "runtime and with the reference interpreter, and compares the result of every op of\n"
          "the graph in program order (a composite such as mx.attention is one op: its fused\n"
          "kernel against its decomposition). Prints the first op whose result differs by more\n"
          "than the tolerance: where it sits (the last weight read before it names the layer),\n"
          "its result type, the worst element (index, both values) and its operands; then the\n"
          "totals. The interpreter is slow: use a few ids on large models.\n"
          "\n"
          "Options:\n"
          "  -m, --model DIR    model directory\n"
          "  --ids LIST         token ids separated by commas (no BOS is added)\n"
          "  --threads T        threads of the fast runtime (default: physical cores)\n"
          "  --tol X            allowed |fast - reference| / max(1, |reference|) (default 1e-4)\n"
          "  --ctx N            KV-cache capacity of the graph (default: the number of ids)\n"
          "  --test-perturb OP  testing: break the fast result of the first op named OP\n"
          "                     (e.g. mx.rms_norm) to check that diff finds it\n"
          "  -h, --help         show this help\n"
          "\n"
          "Exit status: 0 no divergence, 1 a divergence (or an error), 2 bad command line,\n"
          "3 unreadable model directory.\n");
  mx_cli_env_usage(out, "diff");
}

// Binds every argument of f: weights to the checkpoint (zero-copy), tokens, pos0 = 0, caches
// zeroed. args[] and is_weight[] have f's argument count; non-weight tensors are heap-owned.
static mx_status_t bind_args(const mx_model_t *model, const mx_func_t *f, const int32_t *ids,
                             mx_tensor_t *args, bool *is_weight) {
  for (int32_t i = 0; i < f->body->n_args; i++) {
    mx_graph_arg_t info;
    mx_status_t st = mx_graph_arg_info(f, i, &info);
    if (st) return st;
    const mx_type_t *t = mx_value_type(f, f->body->args[i]);
    if (info.role == MX_ARG_WEIGHT) {
      const mx_weight_t *w = mx_checkpoint_find(model->ckpt, info.name);
      if (!w)
        return mx_error_set(MX_ERR_INVALID_ARG, "weight '%s' not in the checkpoint", info.name);
      args[i].type = *t;
      args[i].data = (uint8_t *)(uintptr_t)w->data;
      args[i].nbytes = w->nbytes;
      is_weight[i] = true;
      continue;
    }
    if ((st = mx_tensor_alloc(&args[i], t))) return st;  // zeroed: caches empty, pos0 = 0
    if (info.role == MX_ARG_TOKENS) memcpy(args[i].data, ids, (size_t)mx_type_nbytes(t));
  }
  return MX_OK;
}

int mx_cli_cmd_diff(int argc, char **argv) {
  const char *cmd = "diff", *dir = NULL, *ids_arg = NULL, *perturb = NULL;
  int64_t threads = 0, ctx = 0;
  float tol = 1e-4f;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      diff_usage(stdout);
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--ids", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      ids_arg = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--threads", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--threads", v, 1, 256, &threads)) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--ctx", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--ctx", v, 1, INT32_MAX, &ctx)) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--tol", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_float(cmd, "--tol", v, &tol)) return MX_EXIT_USAGE;
      if (!(tol > 0))
        return mx_cli_usage_error(cmd, diff_usage, "--tol must be a positive number, got '%s'", v);
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--test-perturb", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      perturb = v;
    } else if (a[0] == '-') {
      return mx_cli_usage_error(cmd, diff_usage, "unknown option '%s'", a);
    } else {
      return mx_cli_usage_error(cmd, diff_usage, "unexpected argument '%s'", a);
    }
  }
  if (!dir) return mx_cli_usage_error(cmd, diff_usage, "missing -m DIR (model directory)");
  if (!ids_arg) return mx_cli_usage_error(cmd, diff_usage, "missing --ids LIST");
  int32_t *ids = NULL, n = 0;
  if (!mx_cli_parse_ids(cmd, "--ids", ids_arg, &ids, &n)) return MX_EXIT_USAGE;
  if (!mx_cli_check_model_dir(cmd, dir, "config.json")) {
    free(ids);
    return MX_EXIT_IO;
  }
  int rc = MX_EXIT_OK;
  mx_model_t *model = NULL;
  mx_module_t *m = NULL;
  mx_cpu_pool_t *pool = NULL;
  mx_tensor_t *args = NULL;
  bool *is_weight = NULL;
  mx_func_t *f = NULL;
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_error_clear();
  mx_model_load_opts_t lo = {.tokenizer_optional = true};
  mx_status_t st = mx_cli_model_load(dir, &lo, true, &model);
  if (!st) {
    const mx_model_config_t *cfg = &model->config;
    if (ctx == 0) ctx = n;
    if (ctx < n || ctx > cfg->max_position_embeddings) {
      fprintf(stderr, "mlxcel diff: error: --ctx %lld must hold the %d ids and be at most %lld\n",
              (long long)ctx, (int)n, (long long)cfg->max_position_embeddings);
      rc = MX_EXIT_FAILED;
      goto done;
    }
    for (int32_t i = 0; i < n; i++)
      if (ids[i] >= cfg->vocab_size) {
        fprintf(stderr, "mlxcel diff: error: id %d at index %d is not below the vocabulary (%d)\n",
                (int)ids[i], (int)i, (int)cfg->vocab_size);
        rc = MX_EXIT_FAILED;
        goto done;
      }
    mx_graph_opts_t go = {
        .batch = 1, .ctx = ctx, .prefill_len = n, .all_logits = true, .kv_dtype = MX_ELEM_F32};
    st = mx_model_build_graph(cfg, model->ckpt, &go, &m);
  }
  if (!st) {
    f = mx_module_find_func(m, n == 1 ? "decode" : "prefill");
    if (!f)
      st = mx_error_set(MX_ERR_INVALID_ARG, "the graph has no @%s", n == 1 ? "decode" : "prefill");
  }
  if (!st) {
    args = calloc((size_t)f->body->n_args, sizeof *args);
    is_weight = calloc((size_t)f->body->n_args, sizeof *is_weight);
    st = args && is_weight ? bind_args(model, f, ids, args, is_weight)
                           : mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  if (!st) st = mx_cpu_pool_create((int)threads, &pool);
  mx_cpu_diff_report_t rep;
  if (!st) {
    mx_cpu_diff_opts_t o = {.tol = tol, .pool = pool, .test_perturb_op = perturb};
    st = mx_cli_qkernel_env(&o.quant_kernel);
    if (!st) st = mx_cpu_diff(m, f, args, is_weight, &o, &rep);
  }
  if (st) {
    rc = mx_cli_fail(cmd, st);
    goto done;
  }
  printf("@%s of %d ids, %d threads\n", f->name, (int)n, mx_cpu_pool_threads(pool));
  mx_cpu_diff_format(f, &rep, tol, &sb);
  fputs(sb.data ? sb.data : "", stdout);
  rc = rep.found ? MX_EXIT_FAILED : MX_EXIT_OK;
done:
  for (int32_t i = 0; args && f && i < f->body->n_args; i++)
    if (!is_weight[i]) mx_tensor_free(&args[i]);
  free(args);
  free(is_weight);
  mx_strbuf_free(&sb);
  mx_cpu_pool_destroy(pool);
  mx_module_destroy(m);
  mx_model_free(model);
  free(ids);
  return rc;
}
