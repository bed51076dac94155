// mx_model_load_ex's GGUF path: one file holds the config (metadata), the weights and the
// tokenizer. The mapping moves to the checkpoint, so float tensors stay zero-copy views.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlxcel/tokenizer.h"
#include "model/checkpoint_internal.h"
#include "model/gguf_internal.h"

bool mx_model_is_gguf(const char *path) {
  size_t n = strlen(path);
  if (n >= 5 && strcmp(path + n - 5, ".gguf") == 0) return true;
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[4];
  bool yes = read(fd, magic, 4) == 4 && memcmp(magic, "GGUF", 4) == 0;
  close(fd);
  return yes;
}

static mx_status_t load_tokenizer(const mx_gguf_t *g, const char *path, bool optional,
                                  mx_tokenizer_t **out) {
  char *tok = NULL, *cfg = NULL;
  mx_status_t st = mx_gguf_tokenizer_json(g, path, &tok, &cfg);
  if (st == MX_OK && tok) {
    st = mx_tokenizer_load_json(tok, strlen(tok), cfg, strlen(cfg), out);
    if (st != MX_OK) mx_error_prefix(st, "%s: the GGUF tokenizer", path);
  } else if (st == MX_OK && !optional) {
    st = mx_error_set(MX_ERR_PARSE, "%s: the file has no tokenizer (tokenizer.ggml.model)", path);
  }
  free(tok);
  free(cfg);
  return st;
}

mx_status_t mx_gguf_model_load(const char *path, const mx_model_load_opts_t *opts, mx_model_t *m) {
  mx_gguf_t *g = NULL;
  mx_status_t st = mx_gguf_open(path, &g);
  if (st == MX_OK) st = mx_gguf_config(g, path, &m->config);
  if (st == MX_OK) st = mx_checkpoint_create(opts ? &opts->limits : NULL, &m->ckpt);
  if (st == MX_OK) {
    void *map;
    size_t len;
    if (mx_gguf_take_map(g, &map, &len)) mx_checkpoint_adopt_map(m->ckpt, map, len);
    st = mx_gguf_tensors(g, &m->config, path, m->ckpt);
  }
  if (st == MX_OK) {
    st = load_tokenizer(g, path, opts != NULL && opts->tokenizer_optional, &m->tokenizer);
  }
  mx_gguf_free(g);
  return st;
}

mx_status_t mx_gguf_load_tokenizer(const char *path, mx_tokenizer_t **out) {
  *out = NULL;
  mx_gguf_t *g = NULL;
  mx_status_t st = mx_gguf_open(path, &g);
  if (st == MX_OK) st = load_tokenizer(g, path, false, out);
  mx_gguf_free(g);
  return st;
}
