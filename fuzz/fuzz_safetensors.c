// libFuzzer target: validate arbitrary bytes as a safetensors file image.
// Any crash, leak or sanitizer report is a bug (malformed input must give MX_ERR_*).
#include <stddef.h>
#include <stdint.h>

#include "mlxcel/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)mx_safetensors_validate(data, size, "fuzz.safetensors");
  return 0;
}
