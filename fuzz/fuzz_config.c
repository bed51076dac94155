// libFuzzer target: parse arbitrary bytes as config.json; the bytes after the first NUL (when
// there is one) are the generation_config.json, so both parsers and their interplay are reached.
// Any crash, leak or sanitizer report is a bug (malformed input must give MX_ERR_*).
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mlxcel/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const char *nul = memchr(text, '\0', size);
  size_t len = nul ? (size_t)(nul - text) : size;
  const char *gen = nul ? nul + 1 : NULL;
  size_t gen_len = nul ? size - len - 1 : 0;
  mx_model_config_t cfg;
  (void)mx_config_parse(text, len, gen, gen_len, "fuzz/config.json", &cfg);
  return 0;
}
