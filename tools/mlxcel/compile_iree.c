// IREE deployables for `mlxcel compile`: the module text of one entry with its weights as IREE
// parameters, the iree-compile flags of a target device, and running iree-compile.
//
// The weights stay out of the compiled module: each weight argument of the emitted entry
// becomes a `util.global` initialized from `#flow.parameter.named<"SCOPE"::"NAME">` (NAME the
// argument's mx.name, the key under which `emit --params` writes its tensor), and a public
// wrapper loads the globals and calls the entry, now private. IREE's runtime then reads the
// values from a parameter file at load time (`--parameters=SCOPE=FILE`, safetensors or IRPA),
// so every entry of a model shares one weights file and the modules hold code only.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

// Appends `s` as an MLIR string literal body: printable ASCII as is, anything else (and the
// quote and backslash) as MLIR's two-digit hex escape.
static void put_mlir_string(mx_strbuf_t *sb, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\') {
      mx_strbuf_printf(sb, "\\%02X", *p);
    } else {
      mx_strbuf_append(sb, (const char *)p, 1);
    }
  }
}

// "1x8xi32" for tensor<1x8xi32>: the spelling iree-run-module's --input takes.
static void put_shape(mx_strbuf_t *sb, const mx_type_t *t) {
  char buf[160];
  const char *s = mx_type_str(t, buf, sizeof buf);
  size_t n = strlen(s);
  if (n > 8 && strncmp(s, "tensor<", 7) == 0 && s[n - 1] == '>') {
    mx_strbuf_append(sb, s + 7, n - 8);
  } else {
    mx_strbuf_puts(sb, s);
  }
}

// IREE's StableHLO import makes unsigned arguments signless, but not a util.global's type,
// which then fails to legalize: an unsigned weight's global is declared signless and
// bitcast back to the entry's type (the same bits; the import folds it away).
static mx_elem_type_t signless(mx_elem_type_t e) {
  switch (e) {
    case MX_ELEM_UI2:
      return MX_ELEM_I2;
    case MX_ELEM_UI4:
      return MX_ELEM_I4;
    case MX_ELEM_UI8:
      return MX_ELEM_I8;
    case MX_ELEM_UI16:
      return MX_ELEM_I16;
    case MX_ELEM_UI32:
      return MX_ELEM_I32;
    case MX_ELEM_UI64:
      return MX_ELEM_I64;
    default:
      return e;
  }
}

static int32_t alias_of(const mx_func_t *f, int32_t i) {
  const mx_attr_t *a = mx_attr_field(&f->arg_attrs[i], "tf.aliasing_output");
  return a && a->kind == MX_ATTR_INT ? (int32_t)a->i : -1;
}

mx_status_t mx_cli_iree_entry(mx_module_t *m, const char *entry, const char *module_name,
                              const char *scope, const mx_print_opts_t *po, mx_strbuf_t *text,
                              mx_strbuf_t *json) {
  const mx_func_t *f = mx_module_find_func(m, entry);
  if (!f) return mx_error_set(MX_ERR_INVALID_ARG, "the graph has no @%s function", entry);
  char inner[64];
  snprintf(inner, sizeof inner, "%s_graph", entry);
  if (mx_module_find_func(m, inner)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "the graph already has a function @%s", inner);
  }
  // The entry itself, renamed and private, inside a module named after the deployable (IREE
  // names the compiled module so; two modules of one name cannot share a runtime context).
  const char *old_name = m->name;
  m->name = module_name;
  mx_status_t st = mx_cli_print_entry(m, entry, po, inner, true, text);
  m->name = old_name;
  if (st != MX_OK) return st;
  size_t end = text->len;
  while (end > 0 && text->data[end - 1] != '}') end--;
  if (end == 0) return mx_error_set(MX_ERR_INVALID_ARG, "printed module of @%s has no end", entry);
  text->len = end - 1;  // drop the module's closing brace; the wrapper goes before it

  const int32_t n = f->body->n_args;
  mx_strbuf_t sig, body, call_types;
  mx_strbuf_init(&sig);
  mx_strbuf_init(&body);
  mx_strbuf_init(&call_types);
  mx_strbuf_t results;
  mx_strbuf_init(&results);
  for (int32_t r = 0; r < f->n_results; r++) {
    if (r) mx_strbuf_puts(&results, ", ");
    mx_type_print(&f->result_types[r], &results);
  }
  mx_strbuf_puts(json, "\"function\": ");
  mx_cli_json_string(json, entry);
  mx_strbuf_puts(json, ", \"inputs\": [");
  int32_t n_inputs = 0;
  for (int32_t i = 0; st == MX_OK && i < n; i++) {
    mx_graph_arg_t info;
    st = mx_graph_arg_info(f, i, &info);
    if (st != MX_OK) break;
    const mx_type_t *type = mx_value_type(f, f->body->args[i]);
    if (i) mx_strbuf_puts(&call_types, ", ");
    mx_type_print(type, &call_types);
    if (info.role == MX_ARG_WEIGHT) {
      mx_type_t stored = *type;
      stored.elem = signless(type->elem);
      mx_strbuf_printf(text, "  util.global private @__mx_param_%d = #flow.parameter.named<\"",
                       (int)i);
      put_mlir_string(text, scope);
      mx_strbuf_puts(text, "\"::\"");
      put_mlir_string(text, info.name);
      mx_strbuf_puts(text, "\"> : ");
      mx_type_print(&stored, text);
      mx_strbuf_puts(text, "\n");
      bool cast = stored.elem != type->elem;
      mx_strbuf_printf(&body, "    %%%s%d = util.global.load @__mx_param_%d : ", cast ? "s" : "p",
                       (int)i, (int)i);
      mx_type_print(&stored, &body);
      if (cast) {
        mx_strbuf_printf(&body, "\n    %%p%d = stablehlo.bitcast_convert %%s%d : (", (int)i,
                         (int)i);
        mx_type_print(&stored, &body);
        mx_strbuf_puts(&body, ") -> ");
        mx_type_print(type, &body);
      }
      mx_strbuf_puts(&body, "\n");
      continue;
    }
    // The runtime arguments keep their order, names, roles and cache aliasing (IREE turns
    // tf.aliasing_output into its tied-result ABI on a public function).
    if (n_inputs) mx_strbuf_puts(&sig, ", ");
    mx_strbuf_printf(&sig, "%%p%d: ", (int)i);
    mx_type_print(type, &sig);
    mx_strbuf_puts(&sig, " {mx.name = \"");
    put_mlir_string(&sig, info.name);
    mx_strbuf_printf(&sig, "\", mx.role = \"%s\"",
                     info.role == MX_ARG_TOKENS    ? "tokens"
                     : info.role == MX_ARG_POS0    ? "pos0"
                     : info.role == MX_ARG_K_CACHE ? "k_cache"
                                                   : "v_cache");
    int32_t alias = alias_of(f, i);
    if (alias >= 0) mx_strbuf_printf(&sig, ", tf.aliasing_output = %d : i32", (int)alias);
    mx_strbuf_puts(&sig, "}");
    mx_strbuf_puts(json, n_inputs ? ", {\"name\": " : "{\"name\": ");
    mx_cli_json_string(json, info.name);
    mx_strbuf_puts(json, ", \"type\": \"");
    put_shape(json, type);
    mx_strbuf_puts(json, "\"}");
    n_inputs++;
  }
  if (st == MX_OK) {
    mx_strbuf_puts(json, "], \"results\": [");
    for (int32_t r = 0; r < f->n_results; r++) {
      mx_strbuf_puts(json, r ? ", \"" : "\"");
      put_shape(json, &f->result_types[r]);
      mx_strbuf_puts(json, "\"");
    }
    mx_strbuf_printf(json, "], \"weights\": %d", (int)(n - n_inputs));
    mx_strbuf_printf(text, "  func.func @%s(%s) -> (%s) {\n%s", entry, sig.data ? sig.data : "",
                     results.data ? results.data : "", body.data ? body.data : "");
    mx_strbuf_printf(text, "    %%r:%d = func.call @%s(", (int)f->n_results, inner);
    for (int32_t i = 0; i < n; i++) mx_strbuf_printf(text, i ? ", %%p%d" : "%%p%d", (int)i);
    mx_strbuf_printf(text, ") : (%s) -> (%s)\n    return ", call_types.data ? call_types.data : "",
                     results.data ? results.data : "");
    for (int32_t r = 0; r < f->n_results; r++) mx_strbuf_printf(text, r ? ", %%r#%d" : "%%r#%d", r);
    mx_strbuf_printf(text, " : %s\n  }\n}\n", results.data ? results.data : "");
  }
  bool oom = sig.oom || body.oom || call_types.oom || results.oom || text->oom || json->oom;
  mx_strbuf_free(&sig);
  mx_strbuf_free(&body);
  mx_strbuf_free(&call_types);
  mx_strbuf_free(&results);
  if (st == MX_OK && oom) st = mx_error_set(MX_ERR_NOMEM, "out of memory writing @%s", entry);
  return st;
}

typedef struct device_row {
  const char *name;   // --device and iree-run-module's --device
  const char *alias;  // iree-compile's --iree-hal-target-device
} device_row_t;

static const device_row_t kDevices[] = {
    {"local-task", "local"}, {"cuda", "cuda"},   {"hip", "hip"},
    {"vulkan", "vulkan"},    {"metal", "metal"},
};

bool mx_cli_iree_device_known(const char *device) {
  for (size_t i = 0; i < sizeof kDevices / sizeof kDevices[0]; i++) {
    if (strcmp(device, kDevices[i].name) == 0) return true;
  }
  return false;
}

mx_status_t mx_cli_iree_flags(const mx_cli_iree_target_t *t, mx_strbuf_t *flags) {
  const device_row_t *d = NULL;
  for (size_t i = 0; i < sizeof kDevices / sizeof kDevices[0]; i++) {
    if (strcmp(t->device, kDevices[i].name) == 0) d = &kDevices[i];
  }
  if (!d) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "unknown device '%s'; known: local-task, cuda, hip, vulkan, metal",
                        t->device);
  }
  bool local = strcmp(d->name, "local-task") == 0, hip = strcmp(d->name, "hip") == 0;
  if (t->target_cpu && !local) {
    return mx_error_set(MX_ERR_INVALID_ARG, "--target-cpu applies to --device local-task only");
  }
  if (hip && !(t->rocm_target && t->rocm_target[0])) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "--device hip needs the GPU's target: --rocm-target or "
                        "MLXCEL_XLA_ROCM_TARGET (e.g. gfx942 for MI300, gfx90a for MI250)");
  }
  if (t->rocm_target && !hip) {
    return mx_error_set(MX_ERR_INVALID_ARG, "a ROCm target applies to --device hip only");
  }
  // One flag per line (the runner splits on newlines, so values may hold spaces).
  mx_strbuf_printf(flags, "--iree-input-type=stablehlo\n--iree-hal-target-device=%s\n", d->alias);
  if (local) {
    // Our linear layers contract the activation with a weight of [out, in]; llvm-cpu compiles
    // that (a "vecmat" with a transposed matrix) into a loop ~5x slower per byte than the same
    // product as a matvec, which the transpose propagation makes of it (an 8192 x 2048 f32
    // layer 4-5x faster; SmolLM2-360M f32 decode 1.3-1.5x, 3 interleaved pairs).
    mx_strbuf_printf(flags,
                     "--iree-hal-local-target-device-backends=llvm-cpu\n"
                     "--iree-llvmcpu-target-cpu=%s\n"
                     "--iree-opt-aggressively-propagate-transposes\n",
                     t->target_cpu ? t->target_cpu : "host");
  }
  if (hip) mx_strbuf_printf(flags, "--iree-rocm-target=%s\n", t->rocm_target);
  for (int32_t i = 0; i < t->n_extra; i++) mx_strbuf_printf(flags, "%s\n", t->extra[i]);
  return flags->oom ? mx_error_set(MX_ERR_NOMEM, "out of memory") : MX_OK;
}

static bool is_executable(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

mx_status_t mx_cli_iree_find(const char *named, char *path, size_t cap) {
  if (named) {
    // A bare name is looked up on PATH like a shell would; a path is taken as it is.
    if (!strchr(named, '/')) return mx_cli_iree_find_on_path(named, path, cap, true);
    if (!is_executable(named)) {
      return mx_error_set(MX_ERR_IO,
                          "iree-compile '%s' (from MLXCEL_XLA_IREE_COMPILE) is not an executable "
                          "file",
                          named);
    }
    snprintf(path, cap, "%s", named);
    return MX_OK;
  }
  if (mx_cli_iree_find_on_path("iree-compile", path, cap, false) == MX_OK) return MX_OK;
#ifdef MX_TEST_ENV_BIN
  // The project's test environment (scripts/venv.sh installs iree-base-compiler there).
  snprintf(path, cap, "%s/iree-compile", MX_TEST_ENV_BIN);
  if (is_executable(path)) return MX_OK;
#endif
  return mx_error_set(MX_ERR_IO,
                      "no iree-compile: none on PATH"
#ifdef MX_TEST_ENV_BIN
                      " nor in the test environment (" MX_TEST_ENV_BIN
                      ")"
#endif
                      "; install IREE's compiler (pip install iree-base-compiler) or name it "
                      "with MLXCEL_XLA_IREE_COMPILE=PATH");
}

mx_status_t mx_cli_iree_find_on_path(const char *name, char *path, size_t cap, bool from_env) {
  const char *p = mx_cli_path_env();
  while (*p) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    snprintf(path, cap, "%.*s/%s", (int)len, len ? p : ".", name);
    if (is_executable(path)) return MX_OK;
    p += len + (colon ? 1 : 0);
  }
  return mx_error_set(MX_ERR_IO, "no '%s' on PATH%s", name,
                      from_env ? " (named by MLXCEL_XLA_IREE_COMPILE)" : "");
}

// Reads everything from fd into sb (the compiler's merged stdout and stderr).
static void drain(int fd, mx_strbuf_t *sb) {
  char buf[4096];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r > 0) {
      mx_strbuf_append(sb, buf, (size_t)r);
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
}

mx_status_t mx_cli_iree_run(const char *compiler, const char *flags, const char *in,
                            const char *out, mx_strbuf_t *output) {
  // argv: compiler, one per flag line, the input, -o, the output.
  int32_t n_flags = 0;
  for (const char *p = flags; *p; p++) n_flags += *p == '\n';
  char *copy = strdup(flags);
  char **argv = calloc((size_t)n_flags + 5, sizeof *argv);
  if (!copy || !argv) {
    free(copy);
    free(argv);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  int32_t argc = 0;
  argv[argc++] = (char *)compiler;
  for (char *line = copy, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
    *nl = '\0';
    argv[argc++] = line;
  }
  argv[argc++] = (char *)in;
  argv[argc++] = "-o";
  argv[argc++] = (char *)out;
  mx_status_t st = MX_OK;
  int fds[2];
  if (pipe(fds) != 0) {
    st = mx_error_set(MX_ERR_IO, "pipe: %s", strerror(errno));
  } else {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
      st = mx_error_set(MX_ERR_IO, "cannot start %s: %s", compiler, strerror(errno));
      close(fds[0]);
      close(fds[1]);
    } else if (pid == 0) {
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
      execv(compiler, argv);
      dprintf(STDERR_FILENO, "cannot execute %s: %s\n", compiler, strerror(errno));
      _exit(127);
    } else {
      close(fds[1]);
      drain(fds[0], output);
      close(fds[0]);
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        // The tail of the compiler's own words: its diagnostics end its output.
        size_t keep = output->len > 1500 ? 1500 : output->len;
        const char *tail = output->data ? output->data + output->len - keep : "";
        char how[64];
        if (WIFEXITED(status)) {
          snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
        } else {
          snprintf(how, sizeof how, "signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        }
        st = mx_error_set(MX_ERR_RUNTIME, "%s failed on %s (%s)%s%s%.*s", compiler, in, how,
                          keep ? "; its output" : " with no output",
                          keep < output->len ? " ends:\n..." : ":\n", (int)keep, tail);
      }
    }
  }
  free(copy);
  free(argv);
  return st;
}
