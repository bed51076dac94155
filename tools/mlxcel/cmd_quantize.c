// `mlxcel quantize`: writes an MLX-format quantized checkpoint (mx_model_quantize).
#include <string.h>

#include "cli.h"
#include "mlxcel/model.h"

static void quantize_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel quantize -m IN -o OUT --bits 4|8 [--group-size G] [--dtype D]\n"
          "\n"
          "Writes an MLX-format quantized copy of the model in IN to OUT, laid out as\n"
          "`mlx_lm.convert -q` writes it (MLX and mlx-lm load it): every linear layer and\n"
          "embedding whose input size is a multiple of G (and every mixture-of-experts expert\n"
          "when the hidden and expert sizes are) becomes a uint32-packed B-bit weight\n"
          "with float scales and biases per group of G (MLX's affine rule), every other tensor\n"
          "(routers and expert gates included) is cast to D, and config.json gets\n"
          "`quantization: {group_size, bits, mode}`. The\n"
          "tokenizer and generation config are copied. IN may itself be MLX-quantized (it is\n"
          "dequantized first). Run the result with `mlxcel generate -m OUT` (--quant mlx is\n"
          "the default for such checkpoints).\n"
          "\n"
          "Options:\n"
          "  -m, --model IN         input model directory\n"
          "  -o, --output OUT       output directory (created if needed)\n"
          "  --bits B               4 or 8\n"
          "  --group-size G         32, 64 (default) or 128\n"
          "  --dtype D              dtype of scales, biases and unquantized tensors: f16\n"
          "                         (default, as mlx_lm.convert), bf16 or f32\n"
          "  -h, --help             show this help\n"
          "\n"
          "Exit status: 0 success, 1 failure, 2 bad command line, 3 unreadable input.\n");
  mx_cli_env_usage(out, "quantize");
}

int mx_cli_cmd_quantize(int argc, char **argv) {
  const char *cmd = "quantize", *in = NULL, *out = NULL, *dtype = "f16";
  int64_t bits = 0, group = 64;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      quantize_usage(stdout);
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      in = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--output", "-o", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      out = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--bits", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--bits", v, 1, 64, &bits)) return MX_EXIT_USAGE;
      if (bits != 4 && bits != 8)
        return mx_cli_usage_error(cmd, quantize_usage, "--bits %lld: 4 or 8", (long long)bits);
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--group-size", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--group-size", v, 1, 4096, &group)) return MX_EXIT_USAGE;
      if (group != 32 && group != 64 && group != 128)
        return mx_cli_usage_error(cmd, quantize_usage, "--group-size %lld: 32, 64 or 128",
                                  (long long)group);
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--dtype", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dtype = v;
    } else if (a[0] == '-') {
      return mx_cli_usage_error(cmd, quantize_usage, "unknown option '%s'", a);
    } else {
      return mx_cli_usage_error(cmd, quantize_usage, "unexpected argument '%s'", a);
    }
  }
  if (!in) return mx_cli_usage_error(cmd, quantize_usage, "missing -m IN (model directory)");
  if (!out) return mx_cli_usage_error(cmd, quantize_usage, "missing -o OUT");
  if (!bits) return mx_cli_usage_error(cmd, quantize_usage, "missing --bits 4|8");
  mx_quantize_opts_t o = {.bits = (int32_t)bits, .group_size = (int32_t)group};
  o.dtype = !strcmp(dtype, "f16")    ? MX_ELEM_F16
            : !strcmp(dtype, "bf16") ? MX_ELEM_BF16
            : !strcmp(dtype, "f32")  ? MX_ELEM_F32
                                     : MX_ELEM_INVALID;
  if (o.dtype == MX_ELEM_INVALID)
    return mx_cli_usage_error(cmd, quantize_usage, "--dtype '%s' is not f16, bf16 or f32", dtype);
  if (!mx_cli_check_model_dir(cmd, in, "config.json")) return MX_EXIT_IO;
  mx_quantize_report_t rep;
  o.report = &rep;
  mx_error_clear();
  mx_status_t st = mx_model_quantize(in, out, &o);
  if (st != MX_OK) return mx_cli_fail(cmd, st);
  fprintf(stderr, "mlxcel quantize: wrote %s (%d-bit, group size %d, %s)\n", out, o.bits,
          o.group_size, dtype);
  fprintf(stderr,
          "mlxcel quantize: %d matrices quantized (%d expert projections); left float: %d "
          "routers / expert gates (read in float), %d with an input size not a multiple of %d\n",
          rep.n_quantized, rep.n_experts, rep.n_gates, rep.n_float, o.group_size);
  return MX_EXIT_OK;
}
