// libFuzzer target: every module that parses and verifies must print (pretty and generic),
// parse again, and print identically the second time. A violation aborts (a finding).
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void mx_fail(const char *what, const char *text) {
  fprintf(stderr, "roundtrip failure: %s: %s\n--- printed ---\n%s\n", what, mx_error_message(),
          text ? text : "");
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mx_parse_opts_t opts = {.filename = "fuzz.mlir", .first_line = 1};
  mx_module_t *m = NULL;
  if (mx_hlo_parse((const char *)data, size, &opts, &m) != MX_OK) return 0;
  for (int gen = 0; gen < 2; gen++) {
    mx_print_opts_t po = {.generic = gen != 0};
    mx_strbuf_t a, b;
    mx_strbuf_init(&a);
    mx_strbuf_init(&b);
    if (mx_hlo_print(m, &po, &a) != MX_OK) mx_fail("print", NULL);
    mx_module_t *m2 = NULL;
    mx_parse_opts_t o2 = {.filename = "printed.mlir"};
    if (mx_hlo_parse(a.data, a.len, &o2, &m2) != MX_OK) mx_fail("reparse", a.data);
    if (mx_hlo_print(m2, &po, &b) != MX_OK) mx_fail("print reparsed", a.data);
    if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) mx_fail("not idempotent", a.data);
    mx_module_destroy(m2);
    mx_strbuf_free(&a);
    mx_strbuf_free(&b);
  }
  mx_module_destroy(m);
  return 0;
}
