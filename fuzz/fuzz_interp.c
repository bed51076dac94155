// libFuzzer target: the reference interpreter on parsed, verified modules. The input is StableHLO
// text (`// -----` splits it into cases, as in StableHLO's interpreter tests, the seeds); each
// case that parses and verifies, and whose every value has at most kMaxElems elements, runs its
// entry function with arguments filled from the input bytes, under an execution budget (work,
// while iterations, intermediate size). Any crash, hang, leak or sanitizer report is a bug: a
// module the interpreter cannot run must fail with an MX_ERR_* status.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { kMaxCases = 4, kMaxElems = 4096, kMaxArgs = 16 };

// Element count of a type (tuples: the largest element), or INT64_MAX when any dimension is
// dynamic or the count overflows (such values are refused: they have no fixed budget).
static int64_t type_elems(const mx_type_t *t, int depth) {
  if (t->kind == MX_TYPE_TUPLE) {
    int64_t m = 0;
    for (int32_t i = 0; i < t->n_tuple; i++) {
      int64_t e = depth < 8 ? type_elems(&t->tuple[i], depth + 1) : INT64_MAX;
      if (e > m) m = e;
    }
    return m;
  }
  if (t->kind != MX_TYPE_TENSOR) return 0;
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i] < 0 || __builtin_mul_overflow(n, t->dims[i], &n)) return INT64_MAX;
  }
  return n;
}

static bool within_budget(const mx_module_t *m) {
  for (int32_t k = 0; k < m->n_funcs; k++) {
    const mx_func_t *f = m->funcs[k];
    for (int32_t v = 0; v < f->n_values; v++) {
      if (type_elems(&f->values[v].type, 0) > kMaxElems) return false;
    }
  }
  return true;
}

static void run_case(const char *text, size_t len, const uint8_t *fill, size_t fill_len) {
  mx_parse_opts_t po = {.filename = "fuzz.mlir", .first_line = 1};
  mx_module_t *m = NULL;
  if (mx_hlo_parse(text, len, &po, &m) != MX_OK) return;  // the parser verifies
  const mx_func_t *f = mx_module_entry(m);
  if (!f || !f->body || f->body->n_args > kMaxArgs || f->n_results > 64 || !within_budget(m)) {
    mx_module_destroy(m);
    return;
  }
  int32_t n_args = f->body->n_args;
  mx_tensor_t args[kMaxArgs];
  memset(args, 0, sizeof args);
  bool ok = true;
  size_t k = 0;
  for (int32_t i = 0; i < n_args && ok; i++) {
    const mx_type_t *t = mx_value_type(f, f->body->args[i]);
    if (!t || t->kind != MX_TYPE_TENSOR || mx_tensor_alloc(&args[i], t) != MX_OK) {
      ok = false;
      break;
    }
    for (size_t b = 0; b < args[i].nbytes && fill_len; b++) args[i].data[b] = fill[k++ % fill_len];
  }
  if (ok) {
    mx_tensor_t results[64];
    memset(results, 0, sizeof results);
    mx_check_report_t report;
    memset(&report, 0, sizeof report);
    mx_interp_opts_t io = {.checks = &report,
                           .max_while_iterations = 1000,
                           .max_tensor_bytes = (size_t)1 << 20,
                           .max_work = (uint64_t)1 << 22};
    (void)mx_interp_run(m, f, args, n_args, results, &io);
    for (int32_t i = 0; i < f->n_results; i++) mx_tensor_free(&results[i]);
  }
  for (int32_t i = 0; i < n_args; i++) mx_tensor_free(&args[i]);
  mx_module_destroy(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mx_text_case_t *cases = NULL;
  int32_t n = 0;
  if (mx_hlo_split_cases((const char *)data, size, &cases, &n) != MX_OK) return 0;
  for (int32_t i = 0; i < n && i < kMaxCases; i++)
    run_case(cases[i].text, cases[i].len, data, size);
  free(cases);
  return 0;
}
