// The process environment, read here and nowhere else: the library takes typed options
// (mx_session_opts_t, mx_batch_opts_t, mx_model_load_opts_t), and these helpers map the
// variables onto them. A command line flag overrides its variable (the helpers fill only what is
// still unset); a bad value is an error naming the variable, never silently ignored. kEnvVars
// lists every variable read here with the commands that read it: each command's --help and
// `mlxcel --help` print their part of it (tests/cli_env.sh holds the table to the code).
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/try.h"
#include "cli.h"

enum { DEFAULT_CTX_CAP = 4096, MAX_THREADS = 256 };

// ---- The table of variables ----

// The commands that load a model (mx_cli_model_load) read the loader's variables; those that
// create a session or batch (mx_cli_backend_env) the backend's. A new variable is one row here,
// read by a helper below: the help text follows.
#define LOADERS "generate chat logits emit compile bench serve diff run"
#define SESSIONS "generate chat logits serve"

typedef struct env_var {
  const char *name;
  const char *help;      // what it means; '\n' continues on the next line of the column
  const char *commands;  // the commands that read it, space-separated (kCommands' names)
} env_var_t;

static const env_var_t kEnvVars[] = {
    {"MLXCEL_BACKEND", "execution backend: cpu or interp (--backend overrides)", SESSIONS " bench"},
    {"MLXCEL_XLA_CONTEXT_CAPACITY",
     "KV capacity in tokens (--ctx overrides); default the model's\n"
     "max_position_embeddings, at most 4096",
     SESSIONS " emit compile"},
    {"MLXCEL_THREADS", "cpu backend threads, 1..256 (default: the physical cores)", SESSIONS},
    {"MLXCEL_CPU_PROFILE",
     "set and not 0: time every cpu plan step and print the\n"
     "report on stderr when the model is released",
     SESSIONS " bench"},
    {"MLXCEL_QUANT_KERNEL",
     "quantized decode kernels: auto (default), exact, vnni16 or\n"
     "vnni (docs/quantization.md)",
     SESSIONS " bench diff"},
    {"MLXCEL_XLA_QUANT",
     "weights when --quant is auto: none, int8, int4 or mlx\n"
     "(default: mlx for MLX checkpoints, else none)",
     LOADERS},
    {"MLXCEL_XLA_PRECISION",
     "matmul precision: f32, f16 or bf16 (--precision overrides;\n"
     "default the checkpoint's weight dtype)",
     LOADERS},
    {"MLXCEL_XLA_KV_DTYPE",
     "KV-cache dtype: f32, f16 or bf16 (--kv-dtype overrides;\n"
     "default the precision)",
     LOADERS},
    {"MLXCEL_XLA_DEVICE",
     "compile: the IREE device (local-task, cuda, hip, vulkan, metal;\n"
     "--device overrides); --backend xla: the device kind, and the\n"
     "installed plugin of that kind where none is named",
     "compile " SESSIONS " bench"},
    {"MLXCEL_XLA_PJRT_PLUGIN", "--backend xla: the PJRT plugin (--pjrt-plugin overrides)",
     SESSIONS " bench"},
    {"MLXCEL_XLA_CACHE_DIR",
     "--backend xla: the compile cache folder (none: no cache;\n"
     "default ~/.cache/mlxcel/xla)",
     SESSIONS " bench"},
    {"MLXCEL_XLA_VISION_BACKEND",
     "where a vision model's tower runs: interp, cpu or xla\n"
     "(--vision-backend overrides; default the session's backend)",
     SESSIONS},
    {"MLXCEL_XLA_ATTN_WINDOW",
     "--backend xla: smallest attention window of the windowed\n"
     "entries (default 256; none: attention reads the whole capacity)",
     SESSIONS " bench"},
    {"MLXCEL_XLA_ROCM_TARGET", "hip: the GPU, e.g. gfx942 (--rocm-target overrides)", "compile"},
    {"MLXCEL_XLA_IREE_COMPILE",
     "the iree-compile to run (a path, or a name on PATH);\n"
     "default iree-compile on PATH",
     "compile"},
};

// Whether the space-separated list `cmds` holds the word `cmd`.
static bool lists(const char *cmds, const char *cmd) {
  size_t n = strlen(cmd);
  for (const char *p = cmds; (p = strstr(p, cmd)) != NULL; p += n) {
    bool starts = p == cmds || p[-1] == ' ', ends = p[n] == '\0' || p[n] == ' ';
    if (starts && ends) return true;
  }
  return false;
}

// One row: the name in a 28-column field, the meaning beside it, continued lines indented.
enum { NAME_COLUMN = 28 };
static void print_row(FILE *out, const char *name, const char *text) {
  fprintf(out, "  %-*s ", NAME_COLUMN, name);
  for (const char *p = text; *p; p++) {
    fputc(*p, out);
    if (*p == '\n') fprintf(out, "  %-*s ", NAME_COLUMN, "");
  }
  fputc('\n', out);
}

void mx_cli_env_usage(FILE *out, const char *cmd) {
  bool any = false;
  for (size_t i = 0; i < sizeof kEnvVars / sizeof kEnvVars[0]; i++) {
    const env_var_t *v = &kEnvVars[i];
    if (cmd && !lists(v->commands, cmd)) continue;
    if (!any)
      fprintf(out, cmd ? "\nEnvironment (a flag overrides its variable; a bad value is an error):\n"
                       : "\nEnvironment (read by the commands in brackets; a flag overrides its\n"
                         "variable; a bad value is an error):\n");
    any = true;
    print_row(out, v->name, v->help);
    if (!cmd) {
      char line[160];
      snprintf(line, sizeof line, "[%s]", v->commands);
      print_row(out, "", line);
    }
  }
}

// Strictly parses a positive decimal integer from an environment variable. Unset or empty means
// "not given" (*given = false); anything else that is not a whole positive number is an error.
static mx_status_t env_positive_int(const char *var, int64_t *value, bool *given) {
  *given = false;
  const char *s = getenv(var);
  if (!s || !s[0]) return MX_OK;
  errno = 0;
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno == ERANGE || v <= 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s='%s' is not a positive integer", var, s);
  *value = (int64_t)v;
  *given = true;
  return MX_OK;
}

// ---- The xla backend: its PJRT plugin, device kind and compile cache ----

// Where the pip packages of each device kind put their PJRT plugin, under a site-packages
// folder: jax's CUDA and ROCm plugins (jax_plugins/), Google's libtpu, and for the CPU the only
// packaged one we know (ADR 0007).
static const struct {
  const char *kind, *pattern;
} kPluginPackages[] = {
    {"cpu", "lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"},
    {"cuda", "jax_plugins/xla_cuda*/xla_cuda_plugin.so"},
    {"rocm", "jax_plugins/xla_rocm*/xla_rocm_plugin.so"},
    {"tpu", "libtpu/libtpu.so"},
};

// The site-packages folders searched, in order: the active virtual or conda environment, the
// user's, the system's. "$VAR" is the variable's value (the entry is skipped when it is unset).
static const char *const kSitePackages[] = {
    "$VIRTUAL_ENV/lib/python3*/site-packages", "$CONDA_PREFIX/lib/python3*/site-packages",
    "$HOME/.local/lib/python3*/site-packages", "/usr/local/lib/python3*/dist-packages",
    "/usr/local/lib/python3*/site-packages",   "/usr/lib/python3/dist-packages",
    "/usr/lib/python3*/site-packages",         "/opt/conda/lib/python3*/site-packages",
};

// Finds the installed plugin of a device kind; its path into buf. MX_ERR_INVALID_ARG naming
// what to set when the kind is unknown or nothing is installed.
static mx_status_t find_plugin(const char *kind, char *buf, size_t n) {
  const char *pattern = NULL;
  for (size_t i = 0; i < sizeof kPluginPackages / sizeof kPluginPackages[0]; i++)
    if (strcmp(kPluginPackages[i].kind, kind) == 0) pattern = kPluginPackages[i].pattern;
  if (!pattern)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "MLXCEL_XLA_DEVICE='%s': no known plugin package for that device kind "
                        "(known: cpu, cuda, rocm, tpu); give the plugin with --pjrt-plugin PATH "
                        "or MLXCEL_XLA_PJRT_PLUGIN",
                        kind);
  for (size_t i = 0; i < sizeof kSitePackages / sizeof kSitePackages[0]; i++) {
    const char *root = kSitePackages[i], *rest = root;
    char var[32] = "";
    if (root[0] == '$') {
      size_t k = strcspn(root + 1, "/");
      snprintf(var, sizeof var, "%.*s", (int)k, root + 1);
      rest = root + 1 + k;
    }
    const char *val = var[0] ? getenv(var) : "";
    if (!val || (var[0] && !val[0])) continue;
    char pat[4096];
    snprintf(pat, sizeof pat, "%s%s/%s", val, rest, pattern);
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
      // The last in sorted order: the newest python3.x and plugin version.
      snprintf(buf, n, "%s", g.gl_pathv[g.gl_pathc - 1]);
      globfree(&g);
      return MX_OK;
    }
    globfree(&g);
  }
  return mx_error_set(MX_ERR_INVALID_ARG,
                      "MLXCEL_XLA_DEVICE='%s': no installed PJRT plugin found (looked for "
                      "site-packages/%s in the active virtual or conda environment, ~/.local, "
                      "/usr/local and /usr); give its path with --pjrt-plugin PATH or "
                      "MLXCEL_XLA_PJRT_PLUGIN",
                      kind, pattern);
}

// Fills bo->device, bo->xla.plugin and bo->xla.cache_dir where the flags left them unset.
static mx_status_t xla_env(mx_backend_opts_t *bo) {
  static char found[4096], cache[4096];  // the CLI makes one backend configuration per run
  // `mlxcel compile` reads the same variable with IREE's names for the same devices.
  const char *e = getenv("MLXCEL_XLA_DEVICE");
  if (!bo->device && e && e[0]) {
    bo->device = strcmp(e, "local-task") == 0 || strcmp(e, "local-sync") == 0 ? "cpu"
                 : strcmp(e, "hip") == 0                                      ? "rocm"
                                                                              : e;
  }
  e = getenv("MLXCEL_XLA_PJRT_PLUGIN");
  if (!bo->xla.plugin && e && e[0]) bo->xla.plugin = e;
  if (!bo->xla.plugin) {
    if (!bo->device)
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "the xla backend needs a PJRT plugin: pass --pjrt-plugin PATH, set "
                          "MLXCEL_XLA_PJRT_PLUGIN=PATH, or set MLXCEL_XLA_DEVICE=cpu|cuda|rocm|tpu "
                          "to use the installed plugin package of that device");
    mx_status_t st = find_plugin(bo->device, found, sizeof found);
    if (st) return st;
    bo->xla.plugin = found;
  }
  // Windowed attention (ADR 0015): a positive window, or "none" for whole-capacity entries.
  e = getenv("MLXCEL_XLA_ATTN_WINDOW");
  if (bo->xla.attn_window == 0 && e && strcmp(e, "none") == 0) {
    bo->xla.attn_window = -1;
  } else if (bo->xla.attn_window == 0) {
    bool given = false;
    if (env_positive_int("MLXCEL_XLA_ATTN_WINDOW", &bo->xla.attn_window, &given))
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "MLXCEL_XLA_ATTN_WINDOW='%s' is not a positive "
                          "integer or none",
                          e);
  }
  // The compile cache: $MLXCEL_XLA_CACHE_DIR ("none": no cache), else the user's cache folder.
  if (!bo->xla.cache_dir) {
    e = getenv("MLXCEL_XLA_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (e && e[0]) {
      if (strcmp(e, "none") != 0) bo->xla.cache_dir = e;
    } else if (xdg && xdg[0]) {
      snprintf(cache, sizeof cache, "%s/mlxcel/xla", xdg);
      bo->xla.cache_dir = cache;
    } else if (home && home[0]) {
      snprintf(cache, sizeof cache, "%s/.cache/mlxcel/xla", home);
      bo->xla.cache_dir = cache;
    }
  }
  return MX_OK;
}

mx_status_t mx_cli_backend_env(const char **backend, mx_backend_opts_t *bo) {
  if (!*backend) {
    const char *e = getenv("MLXCEL_BACKEND");
    if (e && e[0]) {
      if (!mx_backend_find(e)) {
        char names[256];
        mx_backend_list_names(names, sizeof names);
        return mx_error_set(MX_ERR_INVALID_ARG,
                            "unknown backend '%s' (from MLXCEL_BACKEND); known backends: %s", e,
                            names);
      }
      *backend = e;
    }
  }
  if (bo->threads == 0) {
    const char *e = getenv("MLXCEL_THREADS");
    if (e && *e) {
      char *end = NULL;
      long v = strtol(e, &end, 10);
      if (*end || v <= 0 || v > MAX_THREADS)
        return mx_error_set(MX_ERR_INVALID_ARG, "MLXCEL_THREADS='%s': expected an integer in 1..%d",
                            e, MAX_THREADS);
      bo->threads = (int32_t)v;
    }
  }
  const char *prof = getenv("MLXCEL_CPU_PROFILE");
  if (prof && prof[0] && strcmp(prof, "0") != 0) bo->cpu.profile = true;
  if (*backend && strcmp(*backend, "xla") == 0) MX_TRY(xla_env(bo));
  return mx_cli_qkernel_env(&bo->cpu.quant_kernel);
}

mx_status_t mx_cli_qkernel_env(mx_cpu_qkernel_t *k) {
  const char *e = getenv("MLXCEL_QUANT_KERNEL");
  if (*k != MX_CPU_QKERNEL_AUTO || !e || !*e) return MX_OK;
  return mx_cpu_qkernel_parse(e, "MLXCEL_QUANT_KERNEL", k);
}

mx_status_t mx_cli_load_env(mx_model_load_opts_t *lo) {
  const char *e = getenv("MLXCEL_XLA_QUANT");
  if (lo->quant == MX_QUANT_AUTO && e && *e)
    MX_TRY(mx_quant_mode_parse(e, "MLXCEL_XLA_QUANT", &lo->quant));
  e = getenv("MLXCEL_XLA_PRECISION");
  if (lo->precision == MX_ELEM_INVALID && e && *e)
    MX_TRY(mx_precision_parse(e, "MLXCEL_XLA_PRECISION", &lo->precision));
  e = getenv("MLXCEL_XLA_KV_DTYPE");
  if (lo->kv_dtype == MX_ELEM_INVALID && e && *e)
    MX_TRY(mx_precision_parse(e, "MLXCEL_XLA_KV_DTYPE", &lo->kv_dtype));
  return MX_OK;
}

mx_status_t mx_cli_model_load(const char *dir, const mx_model_load_opts_t *lo, bool progress,
                              mx_model_t **out) {
  *out = NULL;
  mx_model_load_opts_t o = *lo;
  MX_TRY(mx_cli_load_env(&o));
  o.progress = mx_cli_progress(progress);
  mx_status_t st = mx_model_load_ex(dir, &o, out);
  mx_cli_progress_end();
  return st;
}

mx_status_t mx_cli_ctx_env(int64_t max_position_embeddings, int64_t *ctx) {
  if (*ctx) return MX_OK;
  bool given = false;
  int64_t v = 0;
  mx_status_t st = env_positive_int("MLXCEL_XLA_CONTEXT_CAPACITY", &v, &given);
  if (st || !given) return st;
  if (max_position_embeddings > 0 && v > max_position_embeddings)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "context capacity %lld (from MLXCEL_XLA_CONTEXT_CAPACITY) exceeds the "
                        "model's max_position_embeddings %lld",
                        (long long)v, (long long)max_position_embeddings);
  if (v > INT32_MAX)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "context capacity %lld (from MLXCEL_XLA_CONTEXT_CAPACITY) is too large",
                        (long long)v);
  *ctx = v;
  return MX_OK;
}

mx_status_t mx_cli_session_env(const mx_model_config_t *cfg, mx_session_opts_t *so) {
  mx_status_t st = mx_cli_backend_env(&so->backend, &so->backend_opts);
  if (!st) st = mx_cli_vision_backend_env(&so->vision_backend);
  // A tower on xla under another text backend needs the plugin all the same. The device kind
  // only finds the plugin there: the text backend keeps the device it was given.
  bool text_xla = so->backend && strcmp(so->backend, "xla") == 0;
  if (!st && !text_xla && so->vision_backend && strcmp(so->vision_backend, "xla") == 0) {
    const char *device = so->backend_opts.device;
    st = xla_env(&so->backend_opts);
    so->backend_opts.device = device;
    if (st) st = mx_error_prefix(st, "vision backend xla");
  }
  return st ? st : mx_cli_ctx_env(cfg->max_position_embeddings, &so->ctx);
}

mx_status_t mx_cli_vision_backend_env(const char **name) {
  const char *e = getenv("MLXCEL_XLA_VISION_BACKEND");
  if (*name || !e || !e[0]) return MX_OK;
  if (!mx_backend_find(e)) {
    char names[256];
    mx_backend_list_names(names, sizeof names);
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "unknown vision backend '%s' (from MLXCEL_XLA_VISION_BACKEND); known "
                        "backends: %s",
                        e, names);
  }
  *name = e;
  return MX_OK;
}

bool mx_cli_default_ctx(const char *cmd, int64_t max_position_embeddings, int64_t *ctx) {
  const char *env = getenv("MLXCEL_XLA_CONTEXT_CAPACITY");
  if (env && *env) {
    return mx_cli_parse_int(cmd, "MLXCEL_XLA_CONTEXT_CAPACITY", env, 1, INT32_MAX, ctx);
  }
  int64_t c = max_position_embeddings > 0 ? max_position_embeddings : DEFAULT_CTX_CAP;
  *ctx = c < DEFAULT_CTX_CAP ? c : DEFAULT_CTX_CAP;
  return true;
}

// An unset variable and an empty one both mean "not given".
static const char *env_nonempty(const char *var) {
  const char *s = getenv(var);
  return s && s[0] ? s : NULL;
}

const char *mx_cli_path_env(void) {
  const char *s = getenv("PATH");
  return s ? s : "";
}

mx_status_t mx_cli_compile_env(const char **device, const char **rocm_target,
                               const char **iree_compile) {
  // The xla backend reads the same variable with PJRT's names (xla_env): one value serves both.
  const char *e = *device ? NULL : env_nonempty("MLXCEL_XLA_DEVICE");
  if (e) {
    *device = strcmp(e, "cpu") == 0 ? "local-task" : strcmp(e, "rocm") == 0 ? "hip" : e;
    if (!mx_cli_iree_device_known(*device)) {
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "MLXCEL_XLA_DEVICE='%s': expected local-task (or cpu), cuda, hip (or "
                          "rocm), vulkan or metal",
                          e);
    }
  }
  if (!*device) *device = "local-task";
  // Read for hip only: a variable set for other tools must not fail a CPU or CUDA build.
  if (!*rocm_target && strcmp(*device, "hip") == 0) {
    *rocm_target = env_nonempty("MLXCEL_XLA_ROCM_TARGET");
  }
  if (!*iree_compile) *iree_compile = env_nonempty("MLXCEL_XLA_IREE_COMPILE");
  return MX_OK;
}
