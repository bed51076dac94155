// mlxcel command-line tool: shared declarations between the dispatcher and the commands.
#ifndef MLXCEL_TOOLS_CLI_H
#define MLXCEL_TOOLS_CLI_H

#include <stdio.h>

#include "mlxcel/hlo.h"

#ifndef MLXCEL_VERSION
#define MLXCEL_VERSION "0.1.0-dev"
#endif

// Process exit statuses shared by every command (documented in `mlxcel --help`).
enum {
  MX_EXIT_OK = 0,      // everything ran (and, with --check, no case failed)
  MX_EXIT_FAILED = 1,  // a case failed, errored, or could not be run
  MX_EXIT_USAGE = 2,   // bad command line
  MX_EXIT_IO = 3,      // an input file could not be read
};

// A subcommand: argv[0] is the subcommand name; returns a process exit status.
typedef int (*mx_cli_cmd_fn)(int argc, char **argv);

int mx_cli_cmd_run(int argc, char **argv);
void mx_cli_run_usage(FILE *out);

// Appends an MLIR-like rendering of a tensor value: `dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>`
// (tuples as `(v0, v1)`, tokens as `!stablehlo.token`).
void mx_cli_format_tensor(const mx_tensor_t *t, mx_strbuf_t *sb);
// Appends `s` as a JSON string literal (quotes included).
void mx_cli_json_string(mx_strbuf_t *sb, const char *s);

#endif  // MLXCEL_TOOLS_CLI_H
