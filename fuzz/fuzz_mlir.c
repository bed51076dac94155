// libFuzzer target: parse arbitrary text as a StableHLO module; verify what parses; free.
// Any crash, leak or sanitizer report is a bug (malformed input must give MX_ERR_*).
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mlxcel/hlo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mx_parse_opts_t opts = {.filename = "fuzz.mlir", .first_line = 1, .no_verify = true};
  mx_module_t *m = NULL;
  if (mx_hlo_parse((const char *)data, size, &opts, &m) == MX_OK) {
    (void)mx_hlo_verify_module(m);
    mx_module_destroy(m);
  }
  // Also exercise the case splitter.
  mx_text_case_t *cases = NULL;
  int32_t n = 0;
  if (mx_hlo_split_cases((const char *)data, size, &cases, &n) == MX_OK) free(cases);
  return 0;
}
