// The files `mlxcel emit` and `mlxcel compile` write from a built model graph: one entry's
// StableHLO text, the values of the weight arguments (safetensors), the output directory.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "mlxcel/writer.h"

mx_status_t mx_cli_print_entry(mx_module_t *m, const char *name, const mx_print_opts_t *po,
                               const char *as_name, bool as_private, mx_strbuf_t *sb) {
  mx_status_t st = mx_hlo_print_entry(m, name, as_name, as_private, po, sb);
  if (st == MX_OK && sb->oom) st = mx_error_set(MX_ERR_NOMEM, "out of memory printing @%s", name);
  return st;
}

mx_status_t mx_cli_write_text(const char *path, const mx_strbuf_t *sb) {
  FILE *f = fopen(path, "wb");
  if (!f) return mx_error_set(MX_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  bool ok = fwrite(sb->data, 1, sb->len, f) == sb->len;
  if (fclose(f) != 0) ok = false;
  if (!ok) return mx_error_set(MX_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  return MX_OK;
}

// The loaded model's checkpoint holds the weights as the graph types them (the loader's
// precision and quantization passes ran), so the bytes are written as they are; a type that
// differs is an error rather than a silent conversion, since a consumer would then run other
// numbers than the engine.
mx_status_t mx_cli_write_params(const mx_module_t *m, const mx_checkpoint_t *ck, const char *path,
                                int32_t *n_written) {
  int32_t cap = 0;
  for (int32_t k = 0; k < m->n_funcs; k++) {
    if (!m->funcs[k]->is_private) cap += m->funcs[k]->body->n_args;
  }
  mx_st_desc_t *descs = calloc((size_t)cap + 1, sizeof *descs);
  const void **data = calloc((size_t)cap + 1, sizeof *data);
  if (!descs || !data) {
    free(descs);
    free(data);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  int32_t n = 0;
  mx_status_t st = MX_OK;
  for (int32_t k = 0; st == MX_OK && k < m->n_funcs; k++) {
    const mx_func_t *f = m->funcs[k];
    if (f->is_private) continue;
    for (int32_t i = 0; st == MX_OK && i < f->body->n_args; i++) {
      mx_graph_arg_t info;
      if (mx_graph_arg_info(f, i, &info) != MX_OK || info.role != MX_ARG_WEIGHT) continue;
      bool seen = false;
      for (int32_t j = 0; j < n && !seen; j++) seen = strcmp(descs[j].name, info.name) == 0;
      if (seen) continue;
      const mx_weight_t *w = mx_checkpoint_find(ck, info.name);
      const mx_type_t *type = mx_value_type(f, f->body->args[i]);
      if (!w) {
        st = mx_error_set(MX_ERR_INVALID_ARG, "weight '%s' of @%s is not in the loaded model",
                          info.name, f->name);
        break;
      }
      mx_type_t wt = mx_type_tensor(w->dtype, w->rank, w->dims);
      if (!type || !mx_type_equal(&wt, type)) {
        char want[128] = "?", got[128];
        if (type) mx_type_str(type, want, sizeof want);
        st = mx_error_set(MX_ERR_UNSUPPORTED, "weight '%s': @%s declares %s but the model holds %s",
                          info.name, f->name, want, mx_type_str(&wt, got, sizeof got));
        break;
      }
      descs[n].name = info.name;
      descs[n].dtype = w->dtype;
      descs[n].rank = w->rank;
      memcpy(descs[n].dims, w->dims, sizeof descs[n].dims);
      data[n++] = w->data;
    }
  }
  if (st == MX_OK) st = mx_st_write_file(path, descs, data, n);
  if (st == MX_OK && n_written) *n_written = n;
  free(descs);
  free(data);
  return st;
}

int mx_cli_make_outdir(const char *cmd, const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return MX_EXIT_OK;
    fprintf(stderr, "mlxcel %s: '%s' exists and is not a directory\n", cmd, dir);
    return MX_EXIT_IO;
  }
  if (mkdir(dir, 0777) != 0) {
    fprintf(stderr, "mlxcel %s: cannot create directory '%s': %s\n", cmd, dir, strerror(errno));
    return MX_EXIT_IO;
  }
  return MX_EXIT_OK;
}

int mx_cli_load_for_graphs(const char *cmd, const char *dir, mx_model_load_opts_t *lo, int64_t *ctx,
                           mx_model_t **model) {
  // The model as it will run: MLX checkpoints as stored, --quant int8 / int4 requantized (the
  // weights the graph names then exist only in memory; `run --weights` redoes the same load).
  mx_error_clear();
  lo->tokenizer_optional = true;
  mx_status_t st = mx_cli_model_load(dir, lo, true, model);
  if (st != MX_OK) return mx_cli_fail(cmd, st);
  int64_t max_pos = (*model)->config.max_position_embeddings;
  if (*ctx == 0 && !mx_cli_default_ctx(cmd, max_pos, ctx)) return MX_EXIT_FAILED;
  if (max_pos > 0 && *ctx > max_pos) {
    fprintf(stderr, "mlxcel %s: error: ctx %lld exceeds the model's max_position_embeddings %lld\n",
            cmd, (long long)*ctx, (long long)max_pos);
    return MX_EXIT_FAILED;
  }
  return MX_EXIT_OK;
}
