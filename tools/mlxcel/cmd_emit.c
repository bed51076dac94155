// `mlxcel emit`: builds a model's StableHLO graphs and writes them as MLIR text files,
// OUTDIR/prefill.mlir and OUTDIR/decode.mlir (weights are function arguments).
#include <string.h>

#include "cli.h"
#include "mlxcel/model.h"

static void emit_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel emit -m DIR -o OUTDIR [--ctx N] [--prefill-len T] [--attn-len W]\n"
          "                   [--all-logits] [--inline-composites] [--generic] [--quant MODE]\n"
          "                   [--group-size N] [--precision T] [--kv-dtype T] [--main]\n"
          "                   [--params FILE] [--vision-grid HxW] [--audio-frames N]\n"
          "\n"
          "Builds the StableHLO graphs of the model in DIR and writes OUTDIR/prefill.mlir and\n"
          "OUTDIR/decode.mlir (OUTDIR is created if needed). Each holds one public function,\n"
          "@prefill or @decode, and the private decompositions of its composites. Arguments:\n"
          "the weights (named after their checkpoint tensors, with `mx.role`/`mx.name`\n"
          "attributes), the token ids [1 x T], the start position pos0 [1] and the KV caches;\n"
          "results: the logits and the updated caches (aliasing their arguments).\n"
          "A vision-language model (LLaVA) also gets OUTDIR/vision.mlir (@vision: the\n"
          "preprocessed pixels [1 x C x S x S] to the projected image features [1 x N x H]) and\n"
          "OUTDIR/prefill_media.mlir (@prefill_media: @prefill with the media rows [1 x T x H],\n"
          "which replace the embeddings of the image-token positions; Qwen2-VL / Qwen2.5-VL /\n"
          "Qwen3-VL also take the M-RoPE positions [3 x 1 x T], Qwen3-VL its DeepStack rows\n"
          "[L x 1 x T x H] after them; their @vision, for one patch grid, takes the processor's\n"
          "pixel rows [H*W x C*2*P*P], see --vision-grid; Qwen3-VL's features are\n"
          "[1 x N x (1+L)*H]: the main ones, then each DeepStack set; Molmo2's @prefill_media\n"
          "adds the media rows at <im_patch>, one bidirectional block per image, and its\n"
          "@vision is written with --vision-pooled).\n"
          "Gemma 3n with its audio tower gets OUTDIR/prefill_media.mlir (the media rows at the\n"
          "audio tokens) and with --audio-frames N also OUTDIR/audio.mlir (@audio: N log-mel\n"
          "frames [1 x N x 128] and their mask [1 x N] i32 to the audio rows [1 x 188 x H]).\n"
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
          "  --attn-len W           attention reads only cache rows 0..W-1 (the caches stay\n"
          "                         --ctx long): for calls whose positions are all below W, at\n"
          "                         the cost of W rather than the capacity (ADR 0015; default:\n"
          "                         the whole capacity)\n"
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
          "  --vision-grid HxW      the Qwen towers: write @vision for an image of H x W\n"
          "                         patches (multiples of the merge size; without it their\n"
          "                         vision.mlir is not written: its shapes follow the image)\n"
          "  --vision-pooled CxTxK  Molmo2: write @vision for C crops and T pooled tokens of\n"
          "                         K patches each (the processor's pixel_values [C x N x\n"
          "                         P*P*3] and image_token_pooling [T x K] i32 in)\n"
          "  --audio-frames N       Gemma 3n: write @audio for N log-mel frames (10 ms each)\n"
          "  -h, --help             show this help\n"
          "\n"
          "Exit status: 0 success, 1 failure, 2 bad command line, 3 unreadable model directory\n"
          "or unwritable output.\n");
  mx_cli_env_usage(out, "emit");
}

// Writes the module restricted to the public function `name` (plus every private function,
// i.e. the composite decompositions) to OUTDIR/NAME.mlir.
static mx_status_t write_func(mx_module_t *m, const char *name, const mx_print_opts_t *po,
                              bool as_main, const char *outdir) {
  mx_strbuf_t sb, path;
  mx_strbuf_init(&sb);
  mx_strbuf_init(&path);
  mx_strbuf_printf(&path, "%s/%s.mlir", outdir, name);
  mx_status_t st = mx_cli_print_entry(m, name, po, as_main ? "main" : NULL, false, &sb);
  if (st == MX_OK && path.oom) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  if (st == MX_OK) st = mx_cli_write_text(path.data, &sb);
  if (st == MX_OK) fprintf(stderr, "mlxcel emit: wrote %s (%zu bytes)\n", path.data, sb.len);
  mx_strbuf_free(&path);
  mx_strbuf_free(&sb);
  return st;
}

int mx_cli_cmd_emit(int argc, char **argv) {
  const char *cmd = "emit", *dir = NULL, *outdir = NULL;
  const char *params = NULL;
  int64_t ctx = 0, prefill_len = 0, attn_len = 0;
  bool all_logits = false, as_main = false;
  int64_t grid[2] = {0, 0}, audio_frames = 0, pooled[3] = {0, 0, 0};
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
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--attn-len", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--attn-len", v, 1, INT32_MAX, &attn_len))
        return MX_EXIT_USAGE;
    } else if (strcmp(a, "--all-logits") == 0) {
      all_logits = true;
    } else if (strcmp(a, "--inline-composites") == 0) {
      po.inline_composites = true;
    } else if (strcmp(a, "--generic") == 0) {
      po.generic = true;
    } else if (strcmp(a, "--main") == 0) {
      as_main = true;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--vision-grid", NULL, &v)) != 0) {
      const char *x = r > 0 ? strchr(v, 'x') : NULL;
      char h[16];
      if (!x || x == v || (size_t)(x - v) >= sizeof h)
        return mx_cli_usage_error(cmd, emit_usage, "--vision-grid wants HxW, got '%s'",
                                  r > 0 ? v : "");
      snprintf(h, sizeof h, "%.*s", (int)(x - v), v);
      if (!mx_cli_parse_int(cmd, "--vision-grid", h, 1, 4096, &grid[0]) ||
          !mx_cli_parse_int(cmd, "--vision-grid", x + 1, 1, 4096, &grid[1]))
        return MX_EXIT_USAGE;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--vision-pooled", NULL, &v)) != 0) {
      long long c = 0, t = 0, k = 0;
      char end = 0;
      if (r < 0 || sscanf(v, "%lldx%lldx%lld%c", &c, &t, &k, &end) != 3 || c < 1 || c > 256 ||
          t < 1 || t > 65536 || k < 1 || k > 64)
        return mx_cli_usage_error(cmd, emit_usage,
                                  "--vision-pooled wants CROPSxTOKENSxPOOL (1..256, 1..65536, "
                                  "1..64), got '%s'",
                                  r > 0 ? v : "");
      pooled[0] = c, pooled[1] = t, pooled[2] = k;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--audio-frames", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--audio-frames", v, 1, 1000000, &audio_frames))
        return MX_EXIT_USAGE;
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

  mx_model_t *model = NULL;
  mx_module_t *m = NULL;
  mx_status_t st = MX_OK;
  int rc = mx_cli_load_for_graphs(cmd, dir, &lo, &ctx, &model);
  if (rc != MX_EXIT_OK) goto done;
  const mx_model_config_t cfg = model->config;
  const mx_checkpoint_t *ck = model->ckpt;
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
  // Gemma 3n's @prefill_media takes @audio's rows at its audio tokens (ADR 0022).
  go.media = cfg.vision.present || cfg.audio.present;
  bool molmo = cfg.vision.present && cfg.vision.kind == MX_VISION_MOLMO2;
  go.vision_grid_h = (int32_t)(molmo ? pooled[0] : grid[0]);
  go.vision_grid_w = (int32_t)(molmo ? pooled[1] : grid[1]);
  go.vision_pool = (int32_t)(molmo ? pooled[2] : 0);
  bool vision =
      go.media && cfg.vision.present && (mx_vision_fixed_size(&cfg.vision) || go.vision_grid_h > 0);
  if (pooled[0] > 0 && !molmo) {
    fprintf(stderr, "mlxcel emit: error: --vision-pooled: model_type '%s' has no Molmo2 tower\n",
            cfg.model_type);
    rc = MX_EXIT_USAGE;
    goto done;
  }
  if (grid[0] > 0 && (!cfg.vision.present || mx_vision_fixed_size(&cfg.vision) || molmo)) {
    fprintf(stderr,
            "mlxcel emit: error: --vision-grid: model_type '%s' has no patch-grid vision tower\n",
            cfg.model_type);
    rc = MX_EXIT_USAGE;
    goto done;
  }
  if (audio_frames > 0 && !cfg.audio.present) {
    fprintf(stderr, "mlxcel emit: error: --audio-frames: model_type '%s' has no audio tower\n",
            cfg.model_type);
    rc = MX_EXIT_USAGE;
    goto done;
  }
  go.audio_frames = (int32_t)audio_frames;
  go.attn_len = attn_len;
  mx_error_clear();
  st = mx_model_build_graph(&cfg, ck, &go, &m);
  if (st == MX_OK) rc = mx_cli_make_outdir(cmd, outdir);
  if (st == MX_OK && rc == MX_EXIT_OK) st = write_func(m, "prefill", &po, as_main, outdir);
  if (st == MX_OK && rc == MX_EXIT_OK) st = write_func(m, "decode", &po, as_main, outdir);
  if (go.media && st == MX_OK && rc == MX_EXIT_OK)
    st = write_func(m, "prefill_media", &po, as_main, outdir);
  if (vision && st == MX_OK && rc == MX_EXIT_OK) st = write_func(m, "vision", &po, as_main, outdir);
  if (audio_frames > 0 && st == MX_OK && rc == MX_EXIT_OK)
    st = write_func(m, "audio", &po, as_main, outdir);
  int32_t n_params = 0;
  if (st == MX_OK && rc == MX_EXIT_OK && params) st = mx_cli_write_params(m, ck, params, &n_params);
  if (st == MX_OK && rc == MX_EXIT_OK && params) {
    fprintf(stderr, "mlxcel emit: wrote %s (%d weights)\n", params, (int)n_params);
  }
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
