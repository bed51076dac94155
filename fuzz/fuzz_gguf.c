// libFuzzer target: arbitrary bytes as a GGUF file image, then everything the model loader
// derives from a parsed file: the config (metadata through mx_config_parse), the checkpoint
// (renamed, Q/K un-permuted, quantized blocks repacked) and the tokenizer (its JSON written from
// the metadata, then loaded). Any crash, leak or sanitizer report is a bug: malformed input
// must give MX_ERR_*.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/tokenizer.h"
#include "model/checkpoint_internal.h"
#include "model/gguf_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mx_gguf_t *g = NULL;
  if (mx_gguf_parse(data, size, "fuzz.gguf", &g) != MX_OK) return 0;
  mx_model_config_t cfg;
  if (mx_gguf_config(g, "fuzz.gguf", &cfg) == MX_OK) {
    mx_checkpoint_t *ck = NULL;
    if (mx_checkpoint_create(NULL, &ck) == MX_OK) {
      (void)mx_gguf_tensors(g, &cfg, "fuzz.gguf", ck);
      mx_checkpoint_close(ck);
    }
  }
  char *tok = NULL, *tcfg = NULL;
  if (mx_gguf_tokenizer_json(g, "fuzz.gguf", &tok, &tcfg) == MX_OK && tok) {
    mx_tokenizer_t *t = NULL;
    if (mx_tokenizer_load_json(tok, strlen(tok), tcfg, strlen(tcfg), &t) == MX_OK) {
      int32_t *ids = NULL, n = 0;
      mx_encode_opts_t eo = {.add_special = true, .parse_special = true};
      if (mx_tokenizer_encode(t, "Hello world, caf\xc3\xa9!", 15, &eo, &ids, &n) == MX_OK)
        free(ids);
    }
    mx_tokenizer_destroy(t);
  }
  free(tok);
  free(tcfg);
  mx_gguf_free(g);
  return 0;
}
