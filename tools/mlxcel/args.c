// Option parsing (sampling flags included), model-directory checks, error reporting and .npy
// writing shared by the model commands (generate, chat, tokenize, detokenize, logits, emit,
// run --weights).
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "mlxcel/model.h"

int mx_cli_opt(int argc, char **argv, int *i, const char *cmd, const char *name, const char *alias,
               const char **val) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) == 0 && a[n] == '=') {
    *val = a + n + 1;
    return 1;
  }
  if (strcmp(a, name) != 0 && !(alias && strcmp(a, alias) == 0)) return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "mlxcel %s: option '%s' needs a value (see mlxcel %s --help)\n", cmd, a, cmd);
    return -1;
  }
  *i += 1;
  *val = argv[*i];
  return 1;
}

bool mx_cli_parse_int(const char *cmd, const char *opt, const char *s, int64_t lo, int64_t hi,
                      int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno == ERANGE) {
    fprintf(stderr, "mlxcel %s: %s: '%s' is not an integer\n", cmd, opt, s);
    return false;
  }
  if (v < lo || v > hi) {
    fprintf(stderr, "mlxcel %s: %s: %lld is out of range [%lld, %lld]\n", cmd, opt, v,
            (long long)lo, (long long)hi);
    return false;
  }
  *out = (int64_t)v;
  return true;
}

bool mx_cli_parse_float(const char *cmd, const char *opt, const char *s, float *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno == ERANGE || !isfinite(v)) {
    fprintf(stderr, "mlxcel %s: %s: '%s' is not a finite number\n", cmd, opt, s);
    return false;
  }
  *out = (float)v;
  return true;
}

bool mx_cli_parse_dtype(const char *cmd, const char *opt, const char *s, mx_elem_type_t *out) {
  if (mx_precision_parse(s, opt, out) == MX_OK) return true;
  fprintf(stderr, "mlxcel %s: %s\n", cmd, mx_error_message());
  return false;
}

bool mx_cli_parse_ids(const char *cmd, const char *opt, const char *s, int32_t **ids, int32_t *n) {
  *ids = NULL;
  *n = 0;
  size_t cap = 1;
  for (const char *p = s; *p; p++) cap += (*p == ',' || *p == ' ');
  int32_t *v = malloc(cap * sizeof *v);
  if (!v) {
    fprintf(stderr, "mlxcel %s: out of memory\n", cmd);
    return false;
  }
  int32_t count = 0;
  const char *p = s;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (!*p) break;
    char *end = NULL;
    errno = 0;
    long long x = (*p >= '0' && *p <= '9') ? strtoll(p, &end, 10) : -1;
    if (x < 0 || errno == ERANGE || x > INT32_MAX) {
      fprintf(stderr, "mlxcel %s: %s: expected token ids like 1,2,3 (each in [0, %d]); got '%s'\n",
              cmd, opt, INT32_MAX, s);
      free(v);
      return false;
    }
    v[count++] = (int32_t)x;
    p = end;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (*p == ',') {
      p++;
      while (*p == ' ' || *p == '\t' || *p == '\n') p++;
      if (!*p) break;
    } else if (*p && !(*p >= '0' && *p <= '9')) {
      fprintf(stderr, "mlxcel %s: %s: unexpected '%c' in '%s' (ids are separated by commas)\n", cmd,
              opt, *p, s);
      free(v);
      return false;
    }
  }
  if (count == 0) {
    fprintf(stderr, "mlxcel %s: %s: no token ids given\n", cmd, opt);
    free(v);
    return false;
  }
  *ids = v;
  *n = count;
  return true;
}

bool mx_cli_check_model_dir(const char *cmd, const char *dir, const char *file) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    fprintf(stderr, "mlxcel %s: cannot read model directory '%s': %s\n", cmd, dir, strerror(errno));
    return false;
  }
  if (S_ISREG(st.st_mode) && mx_model_is_gguf(dir)) return true;  // the loader checks the rest
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr,
            "mlxcel %s: '%s' is not a directory: -m takes a model directory (config.json, "
            "model.safetensors, tokenizer.json) or a GGUF file\n",
            cmd, dir);
    return false;
  }
  if (file) {
    mx_strbuf_t path;
    mx_strbuf_init(&path);
    mx_strbuf_printf(&path, "%s/%s", dir, file);
    bool ok = path.data && stat(path.data, &st) == 0;
    int err = errno;
    if (!ok) {
      fprintf(stderr, "mlxcel %s: cannot read '%s': %s (is '%s' a model directory?)\n", cmd,
              path.data ? path.data : file, strerror(err), dir);
    }
    mx_strbuf_free(&path);
    return ok;
  }
  return true;
}

int mx_cli_exit_for(mx_status_t st) { return st == MX_ERR_IO ? MX_EXIT_IO : MX_EXIT_FAILED; }

int mx_cli_fail(const char *cmd, mx_status_t st) {
  const char *msg = mx_error_message();
  fprintf(stderr, "mlxcel %s: error: %s\n", cmd, msg && *msg ? msg : "(no message)");
  return mx_cli_exit_for(st);
}

int mx_cli_usage_error(const char *cmd, void (*usage)(FILE *), const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mlxcel %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n\n");
  va_end(ap);
  if (usage) usage(stderr);
  return MX_EXIT_USAGE;
}

static bool host_is_little_endian(void) {
  const uint16_t one = 1;
  uint8_t b;
  memcpy(&b, &one, 1);
  return b == 1;
}

mx_status_t mx_cli_write_npy(const char *path, const char *descr, size_t elem, const void *data,
                             const int64_t *dims, int32_t rank) {
  // NPY v1.0: magic, version, little-endian u16 header length, a Python dict literal padded
  // with spaces and ending in '\n' so that the data starts on a 64-byte boundary.
  mx_strbuf_t h;
  mx_strbuf_init(&h);
  mx_strbuf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  int64_t numel = 1;
  for (int32_t i = 0; i < rank; i++) {
    // numpy's spelling: "(5,)" for one dimension, "(5, 512)" for more.
    mx_strbuf_printf(&h, "%s%lld", i ? ", " : "", (long long)dims[i]);
    numel *= dims[i];
  }
  mx_strbuf_puts(&h, rank == 1 ? ",), }" : "), }");
  size_t used = 10 + h.len + 1;
  size_t pad = (64 - used % 64) % 64;
  for (size_t i = 0; i < pad; i++) mx_strbuf_puts(&h, " ");
  mx_strbuf_puts(&h, "\n");
  if (h.oom || h.len > 65535) {
    mx_strbuf_free(&h);
    return mx_error_set(MX_ERR_NOMEM, "cannot build the .npy header for '%s'", path);
  }
  FILE *f = fopen(path, "wb");
  if (!f) {
    mx_strbuf_free(&h);
    return mx_error_set(MX_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  }
  unsigned char pre[10] = {0x93,
                           'N',
                           'U',
                           'M',
                           'P',
                           'Y',
                           1,
                           0,
                           (unsigned char)(h.len & 0xFF),
                           (unsigned char)(h.len >> 8)};
  bool ok = fwrite(pre, 1, sizeof pre, f) == sizeof pre && fwrite(h.data, 1, h.len, f) == h.len;
  mx_strbuf_free(&h);
  if (elem == 1 || host_is_little_endian()) {
    ok = ok && fwrite(data, elem, (size_t)numel, f) == (size_t)numel;
  } else {
    const unsigned char *p = data;
    for (int64_t i = 0; ok && i < numel; i++) {
      unsigned char r[8];
      for (size_t b = 0; b < elem; b++) r[b] = p[i * elem + elem - 1 - b];
      ok = fwrite(r, 1, elem, f) == elem;
    }
  }
  if (fclose(f) != 0) ok = false;
  if (!ok) return mx_error_set(MX_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  return MX_OK;
}

mx_status_t mx_cli_write_npy_f32(const char *path, const float *data, const int64_t *dims,
                                 int32_t rank) {
  return mx_cli_write_npy(path, "<f4", sizeof(float), data, dims, rank);
}

int mx_cli_quant_opt(int argc, char **argv, int *i, const char *cmd, mx_model_load_opts_t *lo) {
  const char *v = NULL;
  int r = mx_cli_opt(argc, argv, i, cmd, "--quant", NULL, &v);
  if (r > 0) {
    if (mx_quant_mode_parse(v, "--quant", &lo->quant) != MX_OK) {
      fprintf(stderr, "mlxcel %s: %s\n", cmd, mx_error_message());
      return -1;
    }
    return 1;
  }
  if (r < 0) return -1;
  r = mx_cli_opt(argc, argv, i, cmd, "--group-size", NULL, &v);
  if (r > 0) {
    int64_t g = 0;
    if (!mx_cli_parse_int(cmd, "--group-size", v, 1, 4096, &g)) return -1;
    if (g != 32 && g != 64 && g != 128) {
      fprintf(stderr, "mlxcel %s: --group-size: %lld is not 32, 64 or 128\n", cmd, (long long)g);
      return -1;
    }
    lo->group_size = (int32_t)g;
    return 1;
  }
  return r;
}

int mx_cli_precision_opt(int argc, char **argv, int *i, const char *cmd, mx_model_load_opts_t *lo) {
  const char *v = NULL;
  int r = mx_cli_opt(argc, argv, i, cmd, "--precision", NULL, &v);
  if (r > 0) return mx_cli_parse_dtype(cmd, "--precision", v, &lo->precision) ? 1 : -1;
  if (r < 0) return -1;
  r = mx_cli_opt(argc, argv, i, cmd, "--kv-dtype", NULL, &v);
  if (r > 0) return mx_cli_parse_dtype(cmd, "--kv-dtype", v, &lo->kv_dtype) ? 1 : -1;
  return r;
}

int mx_cli_pjrt_opt(int argc, char **argv, int *i, const char *cmd, mx_xla_backend_opts_t *xo) {
  const char *v = NULL;
  int r = mx_cli_opt(argc, argv, i, cmd, "--pjrt-plugin", NULL, &v);
  if (r > 0) xo->plugin = v;
  return r;
}

int mx_cli_chat_template(const char *cmd, const char *what, const char *dir,
                         const mx_tokenizer_t *tok, mx_chat_template_t **out) {
  *out = NULL;
  if (!mx_tokenizer_chat_template(tok)) {
    fprintf(stderr,
            "mlxcel %s: error: model %s has no chat_template in tokenizer_config.json; %s needs "
            "one\n",
            cmd, dir, what);
    return MX_EXIT_FAILED;
  }
  mx_error_clear();
  mx_status_t st = mx_chat_template_from_tokenizer(tok, out);
  return st == MX_OK ? MX_EXIT_OK : mx_cli_fail(cmd, st);
}

// ---- Sampling flags ----

int mx_cli_sampling_opt(int argc, char **argv, int *i, const char *cmd, mx_cli_sampling_t *s) {
  const char *v = NULL;
  int r;
  bool ok = true;
  if ((r = mx_cli_opt(argc, argv, i, cmd, "--temp", "--temperature", &v)) != 0) {
    ok = r > 0 && mx_cli_parse_float(cmd, "--temp", v, &s->temp);
    s->has_temp = true;
  } else if ((r = mx_cli_opt(argc, argv, i, cmd, "--top-k", NULL, &v)) != 0) {
    ok = r > 0 && mx_cli_parse_int(cmd, "--top-k", v, 0, INT32_MAX, &s->top_k);
    s->has_top_k = true;
  } else if ((r = mx_cli_opt(argc, argv, i, cmd, "--top-p", NULL, &v)) != 0) {
    ok = r > 0 && mx_cli_parse_float(cmd, "--top-p", v, &s->top_p);
    s->has_top_p = true;
  } else if ((r = mx_cli_opt(argc, argv, i, cmd, "--min-p", NULL, &v)) != 0) {
    ok = r > 0 && mx_cli_parse_float(cmd, "--min-p", v, &s->min_p);
    s->has_min_p = true;
  } else if ((r = mx_cli_opt(argc, argv, i, cmd, "--repeat-penalty", NULL, &v)) != 0) {
    ok = r > 0 && mx_cli_parse_float(cmd, "--repeat-penalty", v, &s->repeat_penalty);
    s->has_repeat = true;
  } else if ((r = mx_cli_opt(argc, argv, i, cmd, "--seed", NULL, &v)) != 0) {
    ok = r > 0 && mx_cli_parse_int(cmd, "--seed", v, 0, INT64_MAX, &s->seed);
    s->has_seed = true;
  } else {
    return 0;
  }
  return ok ? 1 : -1;
}

void mx_cli_sampling_help(FILE *out) {
  fputs(
      "  --temp T               temperature; 0 = greedy (argmax)\n"
      "  --top-k K              keep the K most likely tokens (0 = off)\n"
      "  --top-p P              nucleus sampling: smallest set with probability >= P (1 = off)\n"
      "  --min-p P              drop tokens below P x the top probability (0 = off)\n"
      "  --repeat-penalty R     divide positive / multiply negative logits of the last 64\n"
      "                         tokens by R (1 = off)\n"
      "  --seed S               random seed (default: a fresh one, printed with --json)\n",
      out);
}

void mx_cli_sampling_params(const mx_cli_sampling_t *s, const mx_model_config_t *cfg,
                            mx_sampler_params_t *p) {
  mx_sampler_params_default(p);
  if (cfg->do_sample) {
    p->temperature = cfg->has_temperature ? cfg->temperature : 1.0f;
    if (cfg->has_top_p) p->top_p = cfg->top_p;
    if (cfg->has_top_k) p->top_k = cfg->top_k;
  } else {
    p->temperature = 0.0f;  // greedy, like Hugging Face without do_sample
  }
  if (s->has_temp) {
    p->temperature = s->temp;
  } else if (p->temperature == 0.0f && (s->has_top_k || s->has_top_p || s->has_min_p)) {
    p->temperature = 1.0f;  // the user asked for a sampling filter: sample
  }
  if (s->has_top_k) p->top_k = (int32_t)s->top_k;
  if (s->has_top_p) p->top_p = s->top_p;
  if (s->has_min_p) p->min_p = s->min_p;
  if (s->has_repeat) p->repetition_penalty = s->repeat_penalty;
  if (s->has_seed) {
    p->seed = (uint64_t)s->seed;
  } else {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    uint64_t seed =
        (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    p->seed = seed & 0x7FFFFFFFFFFFFFFFull;  // printable as a non-negative --seed value
  }
}
