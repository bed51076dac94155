// `mlxcel emit`: builds a model's StableHLO graphs and writes them as MLIR text files,
// OUTDIR/prefill.mlir and OUTDIR/decode.mlir (weights are function arguments).
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "mlxcel/model.h"
#include "mlxcel/writer.h"

static void emit_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel emit -m DIR -o OUTDIR [--ctx N] [--prefill-len T] [--all-logits]\n"
          "                   [--inline-composites] [--generic] [--quant MODE] [--group-size N]\n"
          "                   [--precision T] [--kv-dtype T] [--main] [--params FILE]\n"
          "\n"
          "Builds the StableHLO graphs of the model in DIR and writes OUTDIR/prefill.mlir and\n"
          "OUTDIR/decode.mlir (OUTDIR is created if needed). Each holds one public function,\n"
          "@prefill or @decode, and the private decompositions of its composites. Arguments:\n"
          "the weights (named after their checkpoint tensors, with `mx.role`/`mx.name`\n"
          "attributes), the token ids [1 x T], the start position pos0 [1] and the KV caches;\n"
          "results: the logits and the updated caches (aliasing their arguments).\n"
          "`mlxcel run --weights DIR FILE.mlir --ids ...` runs such a file.\n"
          "The precision is in the graph: with --precision bf16 the weight arguments are bf16\n"
          "and every linear layer converts its activation to bf16 before its dot_general\n"
          "(f32 result); norms, RoPE, attention and residuals stay f32.\n"
          "\n"
          "Options:\n"
          "  -m, --model DIR        model directory (config.json, model.safetensors)\n"
          "  -o, --output OUTDIR    output directory\n"
          "  --ctx N                KV-cache capacity S (default: $MLXCEL_XLA_CONTEXT_CAPACITY,\n"
          "                         else max_position_embeddings capped at 4096)\n"
          "  --prefill-len T        tokens per @prefill call (default: min(64, ctx))\n"
          "  --all-logits           @prefill returns the logits of all T positions [1 x T x V]\n"
          "                         instead of the last one [1 x V]\n" MX_CLI_PRECISION_USAGE("          ", "                         ")
          "  --inline-composites    write plain StableHLO: composites become calls to their\n"
          "                         decompositions (for consumers that reject composites)\n"
          "  --generic              print every op in generic form\n"
          "  --main                 name each file's public function @main instead of\n"
          "                         @prefill / @decode (XLA compiles only @main)\n"
          "  --params FILE          also write the values of the weight arguments, in the\n"
          "                         types the graph declares (after --precision / --quant),\n"
          "                         to FILE as safetensors named by mx.name: what IREE, XLA\n"
          "                         or any other consumer binds to those arguments\n" MX_CLI_QUANT_HELP
          "  -h, --help             show this help\n"
          "\n"
          "Exit status: 0 success, 1 failure, 2 bad command line, 3 unreadable model directory\n"
          "or unwritable output.\n");
}

// Writes the module restricted to the public function `name` (plus every private function,
// i.e. the composite decompositions) to OUTDIR/NAME.mlir.
static mx_status_t write_func(mx_module_t *m, const char *name, const mx_print_opts_t *po,
                              bool as_main, const char *outdir) {
  mx_func_t *keep = mx_module_find_func(m, name);
  if (!keep) return mx_error_set(MX_ERR_INVALID_ARG, "the graph has no @%s function", name);
  mx_func_t **subset = calloc((size_t)m->n_funcs, sizeof *subset);
  if (!subset) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  int32_t n = 0;
  for (int32_t i = 0; i < m->n_funcs; i++) {
    if (m->funcs[i] == keep || m->funcs[i]->is_private) subset[n++] = m->funcs[i];
  }
  // Print through a view of the module that lists only the kept functions (and, for --main,
  // the entry renamed: nothing calls it, so no reference needs the change); the module's own
  // array and name are put back right after (the printer only reads).
  mx_func_t **all = m->funcs;
  int32_t n_all = m->n_funcs;
  const char *keep_name = keep->name;
  m->funcs = subset;
  m->n_funcs = n;
  if (as_main) keep->name = "main";
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_status_t st = mx_hlo_print(m, po, &sb);
  keep->name = keep_name;
  m->funcs = all;
  m->n_funcs = n_all;
  free(subset);
  if (st == MX_OK && sb.oom) st = mx_error_set(MX_ERR_NOMEM, "out of memory printing @%s", name);
  mx_strbuf_t path;
  mx_strbuf_init(&path);
  mx_strbuf_printf(&path, "%s/%s.mlir", outdir, name);
  if (st == MX_OK) {
    FILE *f = fopen(path.data, "wb");
    if (!f) {
      st = mx_error_set(MX_ERR_IO, "cannot write '%s': %s", path.data, strerror(errno));
    } else {
      bool ok = fwrite(sb.data, 1, sb.len, f) == sb.len;
      if (fclose(f) != 0) ok = false;
      if (!ok) st = mx_error_set(MX_ERR_IO, "cannot write '%s': %s", path.data, strerror(errno));
    }
  }
  if (st == MX_OK) fprintf(stderr, "mlxcel emit: wrote %s (%zu bytes)\n", path.data, sb.len);
  mx_strbuf_free(&path);
  mx_strbuf_free(&sb);
  return st;
}

// Writes the tensors bound to the weight arguments of @prefill and @decode (the same
// checkpoint tensors, each once) to `path` as safetensors. The loaded model's checkpoint holds
// them as the graph types them (the loader's precision and quantization passes ran), so the
// bytes are written as they are; a type that differs is an error rather than a silent
// conversion, since a consumer would then run other numbers than the engine.
static mx_status_t write_params(const mx_module_t *m, const mx_checkpoint_t *ck, const char *path) {
  int32_t cap = 0;
  for (int32_t k = 0; k < m->n_funcs; k++) {
    if (!m->funcs[k]->is_private) cap += m->funcs[k]->body->n_args;
  }
  mx_st_desc_t *descs = calloc((size_t)cap + 1, sizeof *descs);
  const void **data = calloc((size_t)cap + 1, sizeof *data);
  if (!descs || !data) {
    free(descs);
    free(data);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  int32_t n = 0;
  mx_status_t st = MX_OK;
  for (int32_t k = 0; st == MX_OK && k < m->n_funcs; k++) {
    const mx_func_t *f = m->funcs[k];
    if (f->is_private) continue;
    for (int32_t i = 0; st == MX_OK && i < f->body->n_args; i++) {
      mx_graph_arg_t info;
      if (mx_graph_arg_info(f, i, &info) != MX_OK || info.role != MX_ARG_WEIGHT) continue;
      bool seen = false;
      for (int32_t j = 0; j < n && !seen; j++) seen = strcmp(descs[j].name, info.name) == 0;
      if (seen) continue;
      const mx_weight_t *w = mx_checkpoint_find(ck, info.name);
      const mx_type_t *type = mx_value_type(f, f->body->args[i]);
      if (!w) {
        st = mx_error_set(MX_ERR_INVALID_ARG, "weight '%s' of @%s is not in the loaded model",
                          info.name, f->name);
        break;
      }
      mx_type_t wt = mx_type_tensor(w->dtype, w->rank, w->dims);
      if (!type || !mx_type_equal(&wt, type)) {
        char want[128] = "?", got[128];
        if (type) mx_type_str(type, want, sizeof want);
        st = mx_error_set(MX_ERR_UNSUPPORTED, "weight '%s': @%s declares %s but the model holds %s",
                          info.name, f->name, want, mx_type_str(&wt, got, sizeof got));
        break;
      }
      descs[n].name = info.name;
      descs[n].dtype = w->dtype;
      descs[n].rank = w->rank;
      memcpy(descs[n].dims, w->dims, sizeof descs[n].dims);
      data[n++] = w->data;
    }
  }
  if (st == MX_OK) st = mx_st_write_file(path, descs, data, n);
  if (st == MX_OK) fprintf(stderr, "mlxcel emit: wrote %s (%d weights)\n", path, (int)n);
  free(descs);
  free(data);
  return st;
}

static int make_outdir(const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return MX_EXIT_OK;
    fprintf(stderr, "mlxcel emit: '%s' exists and is not a directory\n", dir);
    return MX_EXIT_IO;
  }
  if (mkdir(dir, 0777) != 0) {
    fprintf(stderr, "mlxcel emit: cannot create directory '%s': %s\n", dir, strerror(errno));
    return MX_EXIT_IO;
  }
  return MX_EXIT_OK;
}

int mx_cli_cmd_emit(int argc, char **argv) {
  const char *cmd = "emit", *dir = NULL, *outdir = NULL;
  const char *params = NULL;
  int64_t ctx = 0, prefill_len = 0;
  bool all_logits = false, as_main = false;
  mx_print_opts_t po;
  memset(&po, 0, sizeof po);
  mx_model_load_opts_t lo = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      emit_usage(stdout);
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--output", "-o", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      outdir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--ctx", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--ctx", v, 1, INT32_MAX, &ctx)) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--prefill-len", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--prefill-len", v, 1, INT32_MAX, &prefill_len)) {
        return MX_EXIT_USAGE;
      }
    } else if ((r = mx_cli_precision_opt(argc, argv, &i, cmd, &lo)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if (strcmp(a, "--all-logits") == 0) {
      all_logits = true;
    } else if (strcmp(a, "--inline-composites") == 0) {
      po.inline_composites = true;
    } else if (strcmp(a, "--generic") == 0) {
      po.generic = true;
    } else if (strcmp(a, "--main") == 0) {
      as_main = true;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--params", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      params = v;
    } else if ((r = mx_cli_quant_opt(argc, argv, &i, cmd, &lo)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if (a[0] == '-') {
      return mx_cli_usage_error(cmd, emit_usage, "unknown option '%s'", a);
    } else {
      return mx_cli_usage_error(cmd, emit_usage, "unexpected argument '%s'", a);
    }
  }
  if (!dir) return mx_cli_usage_error(cmd, emit_usage, "missing -m DIR (model directory)");
  if (!outdir) return mx_cli_usage_error(cmd, emit_usage, "missing -o OUTDIR");
  if (!mx_cli_check_model_dir(cmd, dir, "config.json")) return MX_EXIT_IO;

  // The model as it will run: MLX checkpoints as stored, --quant int8 / int4 requantized (the
  // weights the graph names then exist only in memory; `run --weights` redoes the same load).
  mx_model_t *model = NULL;
  mx_module_t *m = NULL;
  int rc = MX_EXIT_OK;
  mx_error_clear();
  lo.tokenizer_optional = true;
  mx_status_t st = mx_model_load_ex(dir, &lo, &model);
  if (st != MX_OK) {
    rc = mx_cli_fail(cmd, st);
    goto done;
  }
  const mx_model_config_t cfg = model->config;
  const mx_checkpoint_t *ck = model->ckpt;
  if (ctx == 0 && !mx_cli_default_ctx(cmd, cfg.max_position_embeddings, &ctx)) {
    rc = MX_EXIT_FAILED;
    goto done;
  }
  if (cfg.max_position_embeddings > 0 && ctx > cfg.max_position_embeddings) {
    fprintf(stderr,
            "mlxcel emit: error: ctx %lld exceeds the model's max_position_embeddings %lld\n",
            (long long)ctx, (long long)cfg.max_position_embeddings);
    rc = MX_EXIT_FAILED;
    goto done;
  }
  if (prefill_len == 0) prefill_len = ctx < 64 ? ctx : 64;
  if (prefill_len > ctx) {
    fprintf(stderr, "mlxcel emit: error: --prefill-len %lld exceeds the context capacity %lld\n",
            (long long)prefill_len, (long long)ctx);
    rc = MX_EXIT_FAILED;
    goto done;
  }
  mx_graph_opts_t go;
  memset(&go, 0, sizeof go);
  go.batch = 1;
  go.ctx = ctx;
  go.prefill_len = (int32_t)prefill_len;
  go.all_logits = all_logits;
  go.kv_dtype = model->kv_dtype;
  mx_error_clear();
  st = mx_model_build_graph(&cfg, ck, &go, &m);
  if (st == MX_OK) rc = make_outdir(outdir);
  if (st == MX_OK && rc == MX_EXIT_OK) st = write_func(m, "prefill", &po, as_main, outdir);
  if (st == MX_OK && rc == MX_EXIT_OK) st = write_func(m, "decode", &po, as_main, outdir);
  if (st == MX_OK && rc == MX_EXIT_OK && params) st = write_params(m, ck, params);
  if (st == MX_OK && rc == MX_EXIT_OK) {
    fprintf(stderr, "mlxcel emit: precision %s, KV cache %s\n", mx_elem_name(model->precision),
            mx_elem_name(model->kv_dtype));
  }
  if (st != MX_OK) rc = mx_cli_fail(cmd, st);
done:
  mx_module_destroy(m);
  mx_model_free(model);
  return rc;
}
