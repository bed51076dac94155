// `mlxcel run`: parses .mlir files (split on `// -----`) and runs each case's entry function
// through the reference interpreter; with --check it reports PASS/FAIL/UNSUPPORTED/ERROR per
// case from the `check` ops, the way StableHLO's interpreter test suite is run.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

typedef struct run_opts {
  mx_run_weights_opts_t weights;  // weights.weights != NULL: run one model graph
  bool check;                     // evaluate check ops and print one verdict line per case
  bool json;                      // one JSON object per line instead of text
  bool print;                     // parse and print back instead of running
  bool generic;                   // with --print: generic op form
  bool has_pos0;
} run_opts_t;

// Stores one of the --weights mode's value options; false (message printed) on a bad value.
static bool weights_flag(run_opts_t *o, const char *flag, const char *v) {
  if (strncmp(flag, "--weights", 9) == 0) {
    o->weights.weights = v;
  } else if (strncmp(flag, "--func", 6) == 0) {
    o->weights.func = v;
  } else if (strncmp(flag, "--ids", 5) == 0) {
    o->weights.ids = v;
  } else if (strncmp(flag, "--pos0", 6) == 0) {
    o->has_pos0 = true;
    return mx_cli_parse_int("run", "--pos0", v, 0, INT32_MAX, &o->weights.pos0);
  } else if (strncmp(flag, "--input", 7) == 0) {
    const char *eq = strchr(v, '=');
    if (eq == NULL || eq == v || eq[1] == '\0') {
      fprintf(stderr, "mlxcel run: --input wants NAME=FILE, got '%s'\n", v);
      return false;
    }
    if (o->weights.n_inputs == MX_RUN_MAX_INPUTS) {
      fprintf(stderr, "mlxcel run: at most %d --input options\n", MX_RUN_MAX_INPUTS);
      return false;
    }
    o->weights.inputs[o->weights.n_inputs++] = v;
  } else {
    o->weights.npy = v;
  }
  return true;
}

typedef enum case_status {
  CASE_PASS = 0,  // ran (and every check op held)
  CASE_FAIL,      // a check op failed
  CASE_UNSUPPORTED,
  CASE_ERROR,  // parse/verify/runtime error, or the case cannot be run
} case_status_t;

typedef struct run_totals {
  int passed, failed, unsupported, errors;
  int exit_status;
} run_totals_t;

typedef struct case_result {
  case_status_t status;
  const char *func;  // entry function name (may be NULL)
  mx_strbuf_t message;
  mx_strbuf_t values;  // results, one rendered value per line (run mode only)
  int32_t n_values;
  int32_t n_checks;  // check ops evaluated (--check)
} case_result_t;

void mx_cli_run_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel run [--check] [--json] FILE.mlir...\n"
          "       mlxcel run --print [--generic] FILE.mlir...\n"
          "       mlxcel run --weights DIR [--func NAME] [--ids 1,2,3] [--pos0 P] [--json]\n"
          "                  [--input NAME=FILE]... [-o FILE.npy] [--quant MODE]\n"
          "                  [--group-size N] FILE.mlir\n"
          "\n"
          "Runs every test case of each file (cases are separated by `// -----` lines) with the\n"
          "reference interpreter. A case's entry function is @main, or its only function; it\n"
          "must take no arguments (passing arguments, e.g. an --args option, is not supported\n"
          "yet), except with --weights below. FILE may be `-` for standard input.\n"
          "\n"
          "Options:\n"
          "  --check    evaluate check.expect_* ops; print one line per case:\n"
          "               PASS file:line @func\n"
          "               FAIL file:line @func: <first failed check>\n"
          "               UNSUPPORTED file:line @func: unsupported: <op or type>\n"
          "               ERROR file:line [@func]: <parse, verify or runtime error>\n"
          "             then `N passed, N failed, N unsupported` (errors count as failed)\n"
          "  --json     print one JSON object per case and a closing summary object\n"
          "  --print    parse and print each case back as StableHLO text instead of running\n"
          "  --generic  with --print: print every op in generic form\n"
          "\n"
          "Model graphs (written by `mlxcel emit`):\n"
          "  --weights DIR  bind the function's weight arguments to the checkpoint in DIR (by\n"
          "             their mx.name), the token ids to --ids and pos0 to --pos0 (default 0);\n"
          "             KV caches start zeroed. Prints the first result (the logits). A\n"
          "             weight whose type differs from the argument's (a graph emitted with\n"
          "             --precision) is converted to it (f32/f16/bf16, round to nearest even).\n"
          "  --func NAME    function to run (default: the only public function, else @main)\n"
          "  --ids LIST     token ids for the tokens argument, as many as it holds\n"
          "  --pos0 P       position of the first token\n"
          "  --input NAME=FILE  bind the argument named NAME (its mx.name: pixels, media,\n"
          "             positions, deepstack, pooling, ...) to FILE's raw little-endian\n"
          "             bytes, exactly the argument's size (repeatable, up to 8)\n"
          "  -o FILE.npy    write the first result (the logits; @vision's features) as a\n"
          "             float32 .npy file instead of printing it\n"
          "  --quant MODE   load the weights as `emit --quant MODE` did (int8 / int4 are\n"
          "             requantized in memory); --group-size N likewise\n"
          "  -h, --help show this help\n"
          "\n"
          "Without --check the results of each entry function are printed as\n"
          "`dense<...> : tensor<...>` values, after a `// file:line @func` header line, and a\n"
          "failing check op is an error.\n"
          "\n"
          "Exit status: 0 success (with --check: no case failed; unsupported cases do not fail),\n"
          "1 a case failed or could not be run, 2 bad command line, 3 a file could not be read.\n");
  mx_cli_env_usage(out, "run");
}

static const char *status_word(case_status_t s, bool check) {
  switch (s) {
    case CASE_PASS:
      return check ? "PASS" : "OK";
    case CASE_FAIL:
      return "FAIL";
    case CASE_UNSUPPORTED:
      return "UNSUPPORTED";
    case CASE_ERROR:
      return "ERROR";
  }
  return "ERROR";
}

// Line number of the first line of the case that is neither blank nor a `//` comment (the
// line a reader looks for), or -1 if the case holds no code at all (e.g. only RUN lines).
static int32_t first_code_line(const mx_text_case_t *c) {
  const char *p = c->text, *end = c->text + c->len;
  int32_t line = c->first_line > 0 ? c->first_line : 1;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    const char *q = p;
    while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
    if (q < eol && !(eol - q >= 2 && q[0] == '/' && q[1] == '/')) return line;
    p = eol + 1;
    line++;
  }
  return -1;
}

static void set_error(case_result_t *r, case_status_t status, const char *msg) {
  r->status = status;
  mx_strbuf_puts(&r->message, msg && *msg ? msg : "(no message)");
}

// Appends "tensor<2xi32>, tensor<f32>" for a function's argument types.
static void append_arg_types(const mx_func_t *f, mx_strbuf_t *sb) {
  for (int32_t i = 0; i < f->body->n_args; i++) {
    if (i) mx_strbuf_puts(sb, ", ");
    const mx_type_t *t = mx_value_type(f, f->body->args[i]);
    if (t) {
      mx_type_print(t, sb);
    } else {
      mx_strbuf_puts(sb, "?");
    }
  }
}

static void run_module(const mx_module_t *m, const run_opts_t *o, case_result_t *r) {
  const mx_func_t *f = mx_module_entry(m);
  if (!f) {
    r->status = CASE_ERROR;
    mx_strbuf_printf(&r->message,
                     "no entry function: the module has %d functions and none is named @main",
                     (int)m->n_funcs);
    return;
  }
  r->func = f->name;
  if (f->body && f->body->n_args > 0) {
    r->status = CASE_ERROR;
    mx_strbuf_printf(&r->message, "@%s needs arguments (", f->name);
    append_arg_types(f, &r->message);
    mx_strbuf_puts(&r->message,
                   "); `mlxcel run` only runs functions without arguments (an --args option to "
                   "pass them is planned, not available yet; model graphs written by `mlxcel "
                   "emit` run with --weights DIR)");
    return;
  }
  int32_t n_res = f->n_results;
  mx_tensor_t *results = calloc(n_res > 0 ? (size_t)n_res : 1, sizeof *results);
  if (!results) {
    set_error(r, CASE_ERROR, "out of memory");
    return;
  }
  mx_check_report_t report;
  memset(&report, 0, sizeof report);
  mx_interp_opts_t iopts;
  memset(&iopts, 0, sizeof iopts);
  iopts.checks = o->check ? &report : NULL;
  mx_error_clear();
  mx_status_t st = mx_interp_run(m, f, NULL, 0, results, &iopts);
  r->n_checks = report.n_checks;
  if (st == MX_ERR_UNSUPPORTED) {
    const char *msg = mx_error_message();
    r->status = CASE_UNSUPPORTED;
    if (!strstr(msg, "unsupported")) mx_strbuf_puts(&r->message, "unsupported: ");
    mx_strbuf_puts(&r->message, msg);
  } else if (st != MX_OK) {
    set_error(r, CASE_ERROR, mx_error_message());
  } else if (o->check && report.n_failed > 0) {
    r->status = CASE_FAIL;
    mx_strbuf_puts(&r->message, report.first_failure[0] ? report.first_failure : "check failed");
    if (report.n_failed > 1) {
      mx_strbuf_printf(&r->message, " (%d of %d checks failed)", (int)report.n_failed,
                       (int)report.n_checks);
    }
  } else {
    r->status = CASE_PASS;
    if (!o->check) {
      for (int32_t i = 0; i < n_res; i++) {
        mx_cli_format_tensor(&results[i], &r->values);
        mx_strbuf_puts(&r->values, "\n");
        r->n_values++;
      }
    }
  }
  // Results the interpreter did not fill (on failure) are still zeroed: freeing them is a no-op.
  for (int32_t i = 0; i < n_res; i++) mx_tensor_free(&results[i]);
  free(results);
}

static void emit_json_case(const char *path, int32_t line, const case_result_t *r,
                           const run_opts_t *o) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_strbuf_puts(&sb, "{\"type\": \"case\", \"file\": ");
  mx_cli_json_string(&sb, path);
  mx_strbuf_printf(&sb, ", \"line\": %d, \"func\": ", (int)line);
  if (r->func) {
    mx_cli_json_string(&sb, r->func);
  } else {
    mx_strbuf_puts(&sb, "null");
  }
  mx_strbuf_puts(&sb, ", \"status\": ");
  mx_cli_json_string(&sb, status_word(r->status, o->check));
  mx_strbuf_puts(&sb, ", \"message\": ");
  mx_cli_json_string(&sb, r->message.data ? r->message.data : "");
  if (o->check) mx_strbuf_printf(&sb, ", \"checks\": %d", (int)r->n_checks);
  if (!o->check && r->status == CASE_PASS) {
    mx_strbuf_puts(&sb, ", \"results\": [");
    const char *p = r->values.data ? r->values.data : "";
    for (int32_t i = 0; i < r->n_values; i++) {
      const char *eol = strchr(p, '\n');
      size_t n = eol ? (size_t)(eol - p) : strlen(p);
      char *one = malloc(n + 1);
      if (one) {
        memcpy(one, p, n);
        one[n] = '\0';
        if (i) mx_strbuf_puts(&sb, ", ");
        mx_cli_json_string(&sb, one);
        free(one);
      }
      p += n + (eol ? 1 : 0);
    }
    mx_strbuf_puts(&sb, "]");
  }
  mx_strbuf_puts(&sb, "}\n");
  fputs(sb.data ? sb.data : "", stdout);
  mx_strbuf_free(&sb);
}

static void emit_text_case(const char *path, int32_t line, const case_result_t *r,
                           const run_opts_t *o) {
  const char *msg = r->message.data ? r->message.data : "";
  if (o->check) {
    printf("%s %s:%d", status_word(r->status, true), path, (int)line);
    if (r->func) printf(" @%s", r->func);
    if (r->status != CASE_PASS) printf(": %s", msg);
    printf("\n");
    return;
  }
  if (r->status == CASE_PASS) {
    printf("// %s:%d @%s\n%s", path, (int)line, r->func ? r->func : "?",
           r->values.data ? r->values.data : "");
  } else {
    fprintf(stderr, "mlxcel: %s:%d%s%s: %s\n", path, (int)line, r->func ? " @" : "",
            r->func ? r->func : "", msg);
  }
}

static void count_case(run_totals_t *tot, const case_result_t *r, const run_opts_t *o) {
  switch (r->status) {
    case CASE_PASS:
      tot->passed++;
      break;
    case CASE_FAIL:
      tot->failed++;
      break;
    case CASE_ERROR:
      tot->errors++;
      break;
    case CASE_UNSUPPORTED:
      tot->unsupported++;
      break;
  }
  bool bad = r->status == CASE_FAIL || r->status == CASE_ERROR ||
             (!o->check && r->status == CASE_UNSUPPORTED);
  if (bad && tot->exit_status == MX_EXIT_OK) tot->exit_status = MX_EXIT_FAILED;
}

// Runs (or prints) one case; returns false if the case holds no code and was skipped.
static bool do_case(const char *path, const mx_text_case_t *c, const run_opts_t *o,
                    run_totals_t *tot, bool *first_printed) {
  int32_t line = first_code_line(c);
  if (line < 0) return false;
  mx_parse_opts_t popts;
  memset(&popts, 0, sizeof popts);
  popts.filename = path;
  popts.first_line = c->first_line;
  mx_module_t *m = NULL;
  mx_error_clear();
  mx_status_t st = mx_hlo_parse(c->text, c->len, &popts, &m);

  if (o->print) {
    if (st != MX_OK) {
      fprintf(stderr, "mlxcel: %s\n", mx_error_message());
      tot->errors++;
      tot->exit_status = tot->exit_status ? tot->exit_status : MX_EXIT_FAILED;
    } else {
      if (*first_printed) printf("// -----\n");
      *first_printed = true;
      mx_print_opts_t po;
      memset(&po, 0, sizeof po);
      po.generic = o->generic;
      mx_strbuf_t sb;
      mx_strbuf_init(&sb);
      st = mx_hlo_print(m, &po, &sb);
      if (st != MX_OK) {
        fprintf(stderr, "mlxcel: %s:%d: cannot print: %s\n", path, (int)line, mx_error_message());
        tot->errors++;
        tot->exit_status = tot->exit_status ? tot->exit_status : MX_EXIT_FAILED;
      } else {
        fputs(sb.data ? sb.data : "", stdout);
        tot->passed++;
      }
      mx_strbuf_free(&sb);
    }
    mx_module_destroy(m);
    return true;
  }

  case_result_t r;
  memset(&r, 0, sizeof r);
  mx_strbuf_init(&r.message);
  mx_strbuf_init(&r.values);
  if (st == MX_ERR_UNSUPPORTED) {
    const char *msg = mx_error_message();
    r.status = CASE_UNSUPPORTED;
    if (!strstr(msg, "unsupported")) mx_strbuf_puts(&r.message, "unsupported: ");
    mx_strbuf_puts(&r.message, msg);
  } else if (st != MX_OK) {
    set_error(&r, CASE_ERROR, mx_error_message());
  } else if (m->n_funcs == 0) {
    // An empty module (StableHLO's suite has one) has nothing to run or check.
    mx_module_destroy(m);
    mx_strbuf_free(&r.message);
    mx_strbuf_free(&r.values);
    return false;
  } else {
    run_module(m, o, &r);
  }
  if (o->json) {
    emit_json_case(path, line, &r, o);
  } else {
    emit_text_case(path, line, &r, o);
  }
  count_case(tot, &r, o);
  mx_module_destroy(m);  // after emitting: r.func points into the module
  mx_strbuf_free(&r.message);
  mx_strbuf_free(&r.values);
  return true;
}

static mx_status_t read_stdin(char **data, size_t *len) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) mx_strbuf_append(&sb, buf, n);
  if (ferror(stdin) || sb.oom) {
    mx_strbuf_free(&sb);
    return mx_error_set(MX_ERR_IO, "cannot read standard input");
  }
  if (!sb.data) mx_strbuf_puts(&sb, "");
  *data = mx_strbuf_take(&sb, len);
  return *data ? MX_OK : mx_error_set(MX_ERR_NOMEM, "out of memory");
}

static void run_file(const char *path, const run_opts_t *o, run_totals_t *tot, bool *printed) {
  char *text = NULL;
  size_t len = 0;
  mx_error_clear();
  mx_status_t st;
  struct stat sbuf;
  if (strcmp(path, "-") == 0) {
    st = read_stdin(&text, &len);
  } else if (stat(path, &sbuf) == 0 && S_ISDIR(sbuf.st_mode)) {
    st = mx_error_set(MX_ERR_IO, "cannot read '%s': it is a directory", path);
  } else {
    st = mx_read_file(path, &text, &len);
  }
  if (st != MX_OK) {
    const char *msg = *mx_error_message() ? mx_error_message() : "cannot read file";
    fprintf(stderr, "mlxcel: error: %s\n", msg);
    if (o->json) {
      case_result_t r;
      memset(&r, 0, sizeof r);
      r.status = CASE_ERROR;
      mx_strbuf_init(&r.message);
      mx_strbuf_puts(&r.message, msg);
      emit_json_case(path, 0, &r, o);
      mx_strbuf_free(&r.message);
    } else if (o->check) {
      printf("ERROR %s: %s\n", path, msg);
    }
    tot->errors++;
    tot->exit_status = MX_EXIT_IO;
    return;
  }
  mx_text_case_t *cases = NULL;
  int32_t n_cases = 0;
  st = mx_hlo_split_cases(text, len, &cases, &n_cases);
  if (st != MX_OK) {
    fprintf(stderr, "mlxcel: %s: %s\n", path, mx_error_message());
    tot->errors++;
    if (tot->exit_status == MX_EXIT_OK) tot->exit_status = MX_EXIT_FAILED;
  } else {
    for (int32_t i = 0; i < n_cases; i++) do_case(path, &cases[i], o, tot, printed);
  }
  free(cases);
  free(text);
}

int mx_cli_cmd_run(int argc, char **argv) {
  run_opts_t o;
  memset(&o, 0, sizeof o);
  // Files are collected first so that a bad flag anywhere is reported before anything runs.
  char **files = calloc((size_t)argc + 1, sizeof *files);
  if (!files) {
    fprintf(stderr, "mlxcel: out of memory\n");
    return MX_EXIT_FAILED;
  }
  int n_files = 0;
  bool no_more_flags = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r = 0;
    if (no_more_flags || a[0] != '-' || strcmp(a, "-") == 0) {
      files[n_files++] = argv[i];
    } else if (strcmp(a, "--") == 0) {
      no_more_flags = true;
    } else if (strcmp(a, "--check") == 0) {
      o.check = true;
    } else if (strcmp(a, "--json") == 0) {
      o.json = true;
    } else if (strcmp(a, "--print") == 0) {
      o.print = true;
    } else if (strcmp(a, "--generic") == 0) {
      o.generic = true;
    } else if ((r = mx_cli_opt(argc, argv, &i, "run", "--weights", NULL, &v)) != 0 ||
               (r = mx_cli_opt(argc, argv, &i, "run", "--func", NULL, &v)) != 0 ||
               (r = mx_cli_opt(argc, argv, &i, "run", "--ids", NULL, &v)) != 0 ||
               (r = mx_cli_opt(argc, argv, &i, "run", "--pos0", NULL, &v)) != 0 ||
               (r = mx_cli_opt(argc, argv, &i, "run", "--input", NULL, &v)) != 0 ||
               (r = mx_cli_opt(argc, argv, &i, "run", "--output", "-o", &v)) != 0) {
      if (r < 0 || !weights_flag(&o, a, v)) {
        free(files);
        return MX_EXIT_USAGE;
      }
    } else if ((r = mx_cli_quant_opt(argc, argv, &i, "run", &o.weights.load)) != 0) {
      if (r < 0) {
        free(files);
        return MX_EXIT_USAGE;
      }
      o.weights.has_quant = true;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      mx_cli_run_usage(stdout);
      free(files);
      return MX_EXIT_OK;
    } else if (strncmp(a, "--args", 6) == 0) {
      fprintf(stderr,
              "mlxcel run: --args is planned but not available yet: only functions without "
              "arguments can be run\n");
      free(files);
      return MX_EXIT_USAGE;
    } else {
      fprintf(stderr, "mlxcel run: unknown option '%s'\n\n", a);
      mx_cli_run_usage(stderr);
      free(files);
      return MX_EXIT_USAGE;
    }
  }
  const char *conflict = NULL;
  if (o.print && o.check) conflict = "--print cannot be combined with --check";
  if (o.print && o.json) conflict = "--print cannot be combined with --json";
  if (o.generic && !o.print) conflict = "--generic only applies to --print";
  bool model_flags = o.weights.func || o.weights.ids || o.weights.npy || o.has_pos0 ||
                     o.weights.has_quant || o.weights.n_inputs > 0;
  if (!o.weights.weights && model_flags)
    conflict = "--func, --ids, --pos0, --input, -o and --quant need --weights DIR";
  if (o.weights.weights && (o.check || o.print)) {
    conflict = "--weights cannot be combined with --check or --print";
  }
  if (!conflict && n_files == 0) conflict = "no input file";
  if (!conflict && o.weights.weights && n_files != 1) conflict = "--weights runs one FILE.mlir";
  if (conflict) {
    fprintf(stderr, "mlxcel run: %s\n\n", conflict);
    mx_cli_run_usage(stderr);
    free(files);
    return MX_EXIT_USAGE;
  }
  if (o.weights.weights) {
    o.weights.path = files[0];
    o.weights.json = o.json;
    free(files);
    return mx_cli_run_weights(&o.weights);
  }
  // Line-buffered so that, should a case ever crash, the cases before it are on record.
  setvbuf(stdout, NULL, _IOLBF, 0);
  run_totals_t tot;
  memset(&tot, 0, sizeof tot);
  bool printed = false;
  for (int i = 0; i < n_files; i++) run_file(files[i], &o, &tot, &printed);
  free(files);

  if (o.json) {
    printf(
        "{\"type\": \"summary\", \"passed\": %d, \"failed\": %d, \"unsupported\": %d, "
        "\"errors\": %d}\n",
        tot.passed, tot.failed + tot.errors, tot.unsupported, tot.errors);
  } else if (o.check) {
    printf("%d passed, %d failed, %d unsupported\n", tot.passed, tot.failed + tot.errors,
           tot.unsupported);
  }
  fflush(stdout);
  return tot.exit_status;
}
