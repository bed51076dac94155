// `mlxcel compile`: IREE deployables from a checkpoint. One .vmfb per entry (@prefill at each
// chunk size, @decode) for a target device, the weights kept out of the modules in one
// parameter file that every entry loads (compile_iree.c says how), and manifest.json naming
// each entry's inputs and results.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlxcel/model.h"

enum { MAX_PREFILL = 16, MAX_EXTRA = 32 };

static void compile_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel compile -m DIR -o OUTDIR [--device D] [--target-cpu CPU]\n"
          "                      [--rocm-target GFX] [--ctx N] [--prefill-len T[,T...]]\n"
          "                      [--attn-len W[,W...]]\n"
          "                      [--quant MODE] [--group-size N] [--precision T] [--kv-dtype T]\n"
          "                      [--iree-flag FLAG]...\n"
          "\n"
          "Compiles the model in DIR with IREE (iree-compile) for one target device into\n"
          "OUTDIR: decode.vmfb and prefill_T.vmfb for each prefill chunk size T, each exporting\n"
          "one function (@decode, @prefill); params.safetensors, the weights, which every\n"
          "module loads at run time as IREE parameters of scope \"model\" (so the modules hold\n"
          "code only and one weights file serves them all); manifest.json, each function's\n"
          "inputs (tokens [1 x T] i32, pos0 [1] i32, the KV caches) and results (the last\n"
          "position's logits [1 x V] f32, then the updated caches); and the .mlir text each\n"
          "module was compiled from. A prompt runs as prefill chunks (any mix of the compiled\n"
          "sizes) then one @decode call per remaining token, each call given the caches the\n"
          "previous one returned (zeros before the first), and pos0 = the tokens so far:\n"
          "\n"
          "  iree-run-module --device=local-task --module=OUTDIR/decode.vmfb \\\n"
          "      --parameters=model=OUTDIR/params.safetensors --function=decode \\\n"
          "      --input=1x1xi32=ID --input=1xi32=POS0 --input=@k_cache_0.npy ... \\\n"
          "      --output=@logits.npy --output=@k_cache_0.npy ...\n"
          "\n"
          "Options:\n"
          "  -m, --model DIR        model directory (config.json, model.safetensors)\n"
          "  -o, --output OUTDIR    output directory (created if needed)\n"
          "  --device D             local-task (CPU, llvm-cpu), cuda, hip, vulkan or metal;\n"
          "                         default: $MLXCEL_XLA_DEVICE (which also takes the\n"
          "                         xla backend's cpu and rocm), else local-task\n"
          "  --target-cpu CPU       local-task: the LLVM CPU to generate code for (host,\n"
          "                         generic, x86-64-v3, znver4, ...); default host, which\n"
          "                         runs only on CPUs with this machine's features\n"
          "  --rocm-target GFX      hip: the GPU (gfx942, gfx90a, ...); default:\n"
          "                         $MLXCEL_XLA_ROCM_TARGET\n"
          "  --ctx N                KV-cache capacity S (default: $MLXCEL_XLA_CONTEXT_CAPACITY,\n"
          "                         else max_position_embeddings capped at 4096)\n"
          "  --prefill-len LIST     prefill chunk sizes, comma-separated, one module each\n"
          "                         (default: min(64, ctx))\n"
          "  --attn-len LIST        also decode_wW.vmfb for each W, comma-separated: @decode\n"
          "                         whose attention reads only cache rows 0..W-1, for the\n"
          "                         steps at positions below W (ADR 0015: a step then costs\n"
          "                         what W costs, not the capacity); same inputs as "
          "@decode\n" MX_CLI_PRECISION_USAGE("          ", "                         ")
              MX_CLI_QUANT_HELP
          "  --iree-flag FLAG       one more iree-compile flag, passed as given (repeatable)\n"
          "  -h, --help             show this help\n"
          "\n"
          "The compiler is $MLXCEL_XLA_IREE_COMPILE (a path, or a name looked up on PATH),\n"
          "else iree-compile on PATH, else the one of the project's test environment\n"
          "(scripts/venv.sh installs the pinned iree-base-compiler there).\n"
          "\n"
          "Exit status: 0 success, 1 failure (iree-compile failed or is missing; its output is\n"
          "in the message and in OUTDIR/NAME.log), 2 bad command line, 3 unreadable model\n"
          "directory or unwritable output.\n");
  mx_cli_env_usage(out, "compile");
}

// Parses "8,64", the value of option `opt`, into lens[] (each in 1..INT32_MAX, at most
// MAX_PREFILL, no repeats).
static bool parse_lens(const char *cmd, const char *opt, const char *s, int64_t *lens, int32_t *n) {
  *n = 0;
  const char *p = s;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char one[32];
    if (len == 0 || len >= sizeof one || *n == MAX_PREFILL) {
      fprintf(stderr, "mlxcel %s: %s '%s': expected 1 to %d sizes, comma-separated\n", cmd, opt, s,
              MAX_PREFILL);
      return false;
    }
    memcpy(one, p, len);
    one[len] = '\0';
    if (!mx_cli_parse_int(cmd, opt, one, 1, INT32_MAX, &lens[*n])) return false;
    for (int32_t j = 0; j < *n; j++) {
      if (lens[j] == lens[*n]) {
        fprintf(stderr, "mlxcel %s: %s '%s' names %s twice\n", cmd, opt, s, one);
        return false;
      }
    }
    (*n)++;
    if (!comma) return true;
    p = comma + 1;
  }
}

// Writes OUTDIR/BASE.mlir (the deployable text of `entry`) and compiles it to OUTDIR/BASE.vmfb;
// the compiler's output goes to OUTDIR/BASE.log. Appends the entry's manifest object to json
// (with its attention window attn_len; 0: the whole capacity).
static mx_status_t compile_entry(mx_module_t *m, const char *entry, const char *base,
                                 int64_t attn_len, const char *outdir, const char *compiler,
                                 const char *flags, int step, int n_steps, mx_strbuf_t *json) {
  mx_strbuf_t text, mlir, vmfb, logp, output;
  mx_strbuf_init(&text);
  mx_strbuf_init(&mlir);
  mx_strbuf_init(&vmfb);
  mx_strbuf_init(&logp);
  mx_strbuf_init(&output);
  mx_strbuf_printf(&mlir, "%s/%s.mlir", outdir, base);
  mx_strbuf_printf(&vmfb, "%s/%s.vmfb", outdir, base);
  mx_strbuf_printf(&logp, "%s/%s.log", outdir, base);
  size_t json_start = json->len;
  mx_strbuf_printf(json, "{\"module\": \"%s.vmfb\", \"attn_len\": %lld, ", base,
                   (long long)attn_len);
  mx_status_t st = mx_cli_iree_entry(m, entry, base, "model", NULL, &text, json);
  mx_strbuf_puts(json, "}");
  if (st == MX_OK && (mlir.oom || vmfb.oom || logp.oom || json->oom)) {
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  if (st == MX_OK) st = mx_cli_write_text(mlir.data, &text);
  if (st == MX_OK) {
    fprintf(stderr, "mlxcel compile: [%d/%d] %s: iree-compile %s -> %s ...\n", step, n_steps, entry,
            mlir.data, vmfb.data);
    double t0 = mx_cli_now();
    st = mx_cli_iree_run(compiler, flags, mlir.data, vmfb.data, &output);
    // The log is kept when the compiler said anything: warnings of a success, the whole
    // diagnostic of a failure.
    mx_status_t log_st = MX_OK;
    remove(logp.data);
    if (output.len) log_st = mx_cli_write_text(logp.data, &output);
    if (st == MX_OK) st = log_st;
    if (st == MX_OK) {
      fprintf(stderr, "mlxcel compile: [%d/%d] %s: wrote %s (%.1f s)\n", step, n_steps, entry,
              vmfb.data, mx_cli_now() - t0);
    }
  }
  if (st != MX_OK) json->len = json_start;
  mx_strbuf_free(&text);
  mx_strbuf_free(&mlir);
  mx_strbuf_free(&vmfb);
  mx_strbuf_free(&logp);
  mx_strbuf_free(&output);
  return st;
}

int mx_cli_cmd_compile(int argc, char **argv) {
  const char *cmd = "compile", *dir = NULL, *outdir = NULL, *iree_compile = NULL;
  const char *extra[MAX_EXTRA];
  mx_cli_iree_target_t t = {.extra = extra};
  int64_t ctx = 0, lens[MAX_PREFILL], wins[MAX_PREFILL];
  int32_t n_lens = 0, n_wins = 0;
  mx_model_load_opts_t lo = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      compile_usage(stdout);
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--output", "-o", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      outdir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--device", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      if (!mx_cli_iree_device_known(v)) {
        return mx_cli_usage_error(cmd, compile_usage,
                                  "--device '%s': expected local-task, cuda, hip, vulkan or metal",
                                  v);
      }
      t.device = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--target-cpu", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      t.target_cpu = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--rocm-target", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      t.rocm_target = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--ctx", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--ctx", v, 1, INT32_MAX, &ctx)) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--prefill-len", NULL, &v)) != 0) {
      if (r < 0 || !parse_lens(cmd, "--prefill-len", v, lens, &n_lens)) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--attn-len", NULL, &v)) != 0) {
      if (r < 0 || !parse_lens(cmd, "--attn-len", v, wins, &n_wins)) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--iree-flag", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      if (t.n_extra == MAX_EXTRA || strchr(v, '\n')) {
        return mx_cli_usage_error(cmd, compile_usage, "--iree-flag: at most %d, each one line",
                                  MAX_EXTRA);
      }
      extra[t.n_extra++] = v;
    } else if ((r = mx_cli_precision_opt(argc, argv, &i, cmd, &lo)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_quant_opt(argc, argv, &i, cmd, &lo)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if (a[0] == '-') {
      return mx_cli_usage_error(cmd, compile_usage, "unknown option '%s'", a);
    } else {
      return mx_cli_usage_error(cmd, compile_usage, "unexpected argument '%s'", a);
    }
  }
  if (!dir) return mx_cli_usage_error(cmd, compile_usage, "missing -m DIR (model directory)");
  if (!outdir) return mx_cli_usage_error(cmd, compile_usage, "missing -o OUTDIR");

  // The target and the compiler are checked before the model loads: a missing iree-compile or
  // ROCm target fails at once, not after minutes of loading a large checkpoint.
  mx_error_clear();
  mx_strbuf_t flags, json;
  mx_strbuf_init(&flags);
  mx_strbuf_init(&json);
  char compiler[4096];
  mx_status_t st = mx_cli_compile_env(&t.device, &t.rocm_target, &iree_compile);
  if (st == MX_OK) st = mx_cli_iree_flags(&t, &flags);
  if (st == MX_OK) st = mx_cli_iree_find(iree_compile, compiler, sizeof compiler);
  if (st != MX_OK) {
    mx_strbuf_free(&flags);
    return mx_cli_fail(cmd, st);
  }
  if (!mx_cli_check_model_dir(cmd, dir, "config.json")) {
    mx_strbuf_free(&flags);
    return MX_EXIT_IO;
  }
  mx_model_t *model = NULL;
  mx_module_t *m = NULL;
  int rc = mx_cli_load_for_graphs(cmd, dir, &lo, &ctx, &model);
  if (rc == MX_EXIT_OK && n_lens == 0) lens[n_lens++] = ctx < 64 ? ctx : 64;
  for (int32_t k = 0; rc == MX_EXIT_OK && k < n_lens; k++) {
    if (lens[k] > ctx) {
      fprintf(stderr,
              "mlxcel compile: error: --prefill-len %lld exceeds the context capacity %lld\n",
              (long long)lens[k], (long long)ctx);
      rc = MX_EXIT_FAILED;
    }
  }
  for (int32_t k = 0; rc == MX_EXIT_OK && k < n_wins; k++) {
    if (wins[k] >= ctx) {
      fprintf(stderr,
              "mlxcel compile: error: --attn-len %lld is not below the context capacity %lld "
              "(decode.vmfb already reads it all)\n",
              (long long)wins[k], (long long)ctx);
      rc = MX_EXIT_FAILED;
    }
  }
  if (rc == MX_EXIT_OK) rc = mx_cli_make_outdir(cmd, outdir);
  if (rc != MX_EXIT_OK) goto done;
  fprintf(stderr, "mlxcel compile: %s with %s, for %s\n", dir, compiler, t.device);

  mx_strbuf_puts(&json, "{\"device\": ");
  mx_cli_json_string(&json, t.device);
  mx_strbuf_puts(&json, ", \"iree_compile_flags\": [");
  int32_t n_flag = 0;
  for (char *line = flags.data, *nl; line && (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
    *nl = '\0';
    if (n_flag++) mx_strbuf_puts(&json, ", ");
    mx_cli_json_string(&json, line);
    *nl = '\n';
  }
  mx_strbuf_printf(&json,
                   "], \"parameters\": {\"scope\": \"model\", \"file\": \"params.safetensors\"}, "
                   "\"ctx\": %lld, \"precision\": \"%s\", \"kv_dtype\": \"%s\", \"entries\": [",
                   (long long)ctx, mx_elem_name(model->precision), mx_elem_name(model->kv_dtype));
  const int n_steps = 1 + n_lens + n_wins;
  for (int32_t k = 0; st == MX_OK && k < n_lens; k++) {
    // @decode does not depend on the prefill size: it is compiled from the first graph.
    mx_graph_opts_t go;
    memset(&go, 0, sizeof go);
    go.batch = 1;
    go.ctx = ctx;
    go.prefill_len = (int32_t)lens[k];
    go.kv_dtype = model->kv_dtype;
    st = mx_model_build_graph(&model->config, model->ckpt, &go, &m);
    if (st == MX_OK && k == 0) {
      mx_strbuf_t params;
      mx_strbuf_init(&params);
      mx_strbuf_printf(&params, "%s/params.safetensors", outdir);
      int32_t n_params = 0;
      st = params.oom ? mx_error_set(MX_ERR_NOMEM, "out of memory")
                      : mx_cli_write_params(m, model->ckpt, params.data, &n_params);
      if (st == MX_OK)
        fprintf(stderr, "mlxcel compile: wrote %s (%d weights)\n", params.data, n_params);
      mx_strbuf_free(&params);
      if (st == MX_OK) {
        st = compile_entry(m, "decode", "decode", 0, outdir, compiler, flags.data, 1, n_steps,
                           &json);
      }
    }
    if (st == MX_OK) {
      char base[48];
      snprintf(base, sizeof base, "prefill_%lld", (long long)lens[k]);
      mx_strbuf_puts(&json, ", ");
      st =
          compile_entry(m, "prefill", base, 0, outdir, compiler, flags.data, 2 + k, n_steps, &json);
    }
    mx_module_destroy(m);
    m = NULL;
  }
  for (int32_t k = 0; st == MX_OK && k < n_wins; k++) {
    mx_graph_opts_t go;
    memset(&go, 0, sizeof go);
    go.batch = 1;
    go.ctx = ctx;
    go.prefill_len = 1;  // only its @decode is compiled
    go.kv_dtype = model->kv_dtype;
    go.attn_len = wins[k];
    st = mx_model_build_graph(&model->config, model->ckpt, &go, &m);
    if (st == MX_OK) {
      char base[48];
      snprintf(base, sizeof base, "decode_w%lld", (long long)wins[k]);
      mx_strbuf_puts(&json, ", ");
      st = compile_entry(m, "decode", base, wins[k], outdir, compiler, flags.data, 2 + n_lens + k,
                         n_steps, &json);
    }
    mx_module_destroy(m);
    m = NULL;
  }
  mx_strbuf_puts(&json, "]}\n");
  if (st == MX_OK && json.oom) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  if (st == MX_OK) {
    mx_strbuf_t path;
    mx_strbuf_init(&path);
    mx_strbuf_printf(&path, "%s/manifest.json", outdir);
    st = path.oom ? mx_error_set(MX_ERR_NOMEM, "out of memory")
                  : mx_cli_write_text(path.data, &json);
    if (st == MX_OK) fprintf(stderr, "mlxcel compile: wrote %s\n", path.data);
    mx_strbuf_free(&path);
  }
  if (st != MX_OK) rc = mx_cli_fail(cmd, st);
done:
  mx_strbuf_free(&flags);
  mx_strbuf_free(&json);
  mx_module_destroy(m);
  mx_model_free(model);
  return rc;
}
