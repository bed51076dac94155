// The process environment, read here and nowhere else: the library takes typed options
// (mx_session_opts_t, mx_batch_opts_t), and these helpers map the variables onto them. A
// command line flag overrides its variable (the helpers fill only what is still unset); a bad
// value is an error naming the variable, never silently ignored.
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { DEFAULT_CTX_CAP = 4096, MAX_THREADS = 256 };

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
  return MX_OK;
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
  return st ? st : mx_cli_ctx_env(cfg->max_position_embeddings, &so->ctx);
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

mx_status_t mx_cli_compile_env(const char **device, const char **rocm_target,
                               const char **iree_compile) {
  if (!*device && (*device = env_nonempty("MLXCEL_XLA_DEVICE")) != NULL &&
      !mx_cli_iree_device_known(*device)) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "MLXCEL_XLA_DEVICE='%s': expected local-task, cuda, hip, vulkan or metal",
                        *device);
  }
  if (!*device) *device = "local-task";
  // Read for hip only: a variable set for other tools must not fail a CPU or CUDA build.
  if (!*rocm_target && strcmp(*device, "hip") == 0) {
    *rocm_target = env_nonempty("MLXCEL_XLA_ROCM_TARGET");
  }
  if (!*iree_compile) *iree_compile = env_nonempty("MLXCEL_XLA_IREE_COMPILE");
  return MX_OK;
}
