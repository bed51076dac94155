// mlxcel: entry point and subcommand dispatch. Later commands (serve, ...)
// add one row to kCommands and one cmd_<name>.c file.
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct mx_cli_cmd {
  const char *name;
  mx_cli_cmd_fn fn;
  const char *summary;
} mx_cli_cmd_t;

static const mx_cli_cmd_t kCommands[] = {
    {"generate", mx_cli_cmd_generate, "generate text from a prompt with a model directory"},
    {"chat", mx_cli_cmd_chat, "chat with a model in the terminal through its chat template"},
    {"tokenize", mx_cli_cmd_tokenize, "print the token ids of a text"},
    {"detokenize", mx_cli_cmd_detokenize, "print the text of token ids"},
    {"template", mx_cli_cmd_template,
     "render a conversation through the chat template (text, ids)"},
    {"image", mx_cli_cmd_image, "decode an image and run a model's image processor on it"},
    {"logits", mx_cli_cmd_logits, "write the logits of every position of a prompt as .npy"},
    {"emit", mx_cli_cmd_emit, "write a model's StableHLO graphs (prefill.mlir, decode.mlir)"},
    {"compile", mx_cli_cmd_compile,
     "compile a model with IREE into deployable modules (.vmfb) and a weights file"},
    {"mkmodel", mx_cli_cmd_mkmodel, "write a random-weight checkpoint of a known model shape"},
    {"bench", mx_cli_cmd_bench, "measure prefill/decode speed against this machine's limits"},
    {"quantize", mx_cli_cmd_quantize, "write an MLX-format 4/8-bit quantized checkpoint"},
    {"serve", mx_cli_cmd_serve, "serve a model over HTTP with OpenAI's API (continuous batching)"},
    {"run", mx_cli_cmd_run, "run (and check) StableHLO .mlir files with the reference interpreter"},
    {"diff", mx_cli_cmd_diff,
     "find the first op where the fast runtime and the interpreter differ"},
};

static void print_usage(FILE *out) {
  fprintf(out,
          "mlxcel %s: LLM inference engine on portable StableHLO graphs\n"
          "\n"
          "Usage: mlxcel <command> [options] [args]\n"
          "       mlxcel --help | --version\n"
          "       mlxcel <command> --help\n"
          "\n"
          "Commands:\n",
          MLXCEL_VERSION);
  for (size_t i = 0; i < sizeof kCommands / sizeof kCommands[0]; i++) {
    fprintf(out, "  %-11s %s\n", kCommands[i].name, kCommands[i].summary);
  }
  fprintf(out,
          "\n"
          "Example:\n"
          "  mlxcel generate -m models/stories260K -p \"Once upon a time\" -n 128\n"
          "\n"
          "Exit status:\n"
          "  0  success (run --check: no case failed; unsupported cases do not fail)\n"
          "  1  failure: a case failed or could not be run, a model could not be loaded or run\n"
          "  2  bad command line (unknown command or option, missing argument)\n"
          "  3  an input file or model directory could not be read\n");
  mx_cli_env_usage(out, NULL);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return MX_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    print_usage(stdout);
    return MX_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
    printf("mlxcel %s\n", MLXCEL_VERSION);
    return MX_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof kCommands / sizeof kCommands[0]; i++) {
    if (strcmp(cmd, kCommands[i].name) == 0) return kCommands[i].fn(argc - 1, argv + 1);
  }
  if (cmd[0] == '-') {
    fprintf(stderr, "mlxcel: unknown option '%s'\n\n", cmd);
  } else {
    fprintf(stderr, "mlxcel: unknown command '%s'\n\n", cmd);
  }
  print_usage(stderr);
  return MX_EXIT_USAGE;
}
