// `mlxcel run --weights DIR FILE.mlir`: runs one function of an emitted model graph (see
// `mlxcel emit`) with the reference interpreter. Weight arguments are bound, zero-copy, to the
// checkpoint's mmapped tensors by their `mx.name`; token ids and pos0 come from the flags; KV
// caches start zeroed. Prints the first result (the logits).
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "cli.h"
#include "mlxcel/model.h"

static void print_dims(mx_strbuf_t *sb, const mx_type_t *t) {
  for (int32_t d = 0; d < t->rank; d++) {
    mx_strbuf_printf(sb, "%s%" PRId64, d ? "x" : "", t->dims[d]);
  }
}

// The function to run: --func NAME, else the only public function, else @main.
static mx_func_t *pick_func(const mx_module_t *m, const char *name, const char *path) {
  if (name) {
    mx_func_t *f = mx_module_find_func(m, name);
    if (!f) mx_error_set(MX_ERR_INVALID_ARG, "%s has no function @%s", path, name);
    return f;
  }
  mx_func_t *only = NULL;
  int32_t n_public = 0;
  for (int32_t i = 0; i < m->n_funcs; i++) {
    if (!m->funcs[i]->is_private) {
      only = m->funcs[i];
      n_public++;
    }
  }
  if (n_public == 1) return only;
  mx_func_t *main_fn = mx_module_find_func(m, "main");
  if (main_fn) return main_fn;
  mx_error_set(MX_ERR_INVALID_ARG,
               "%s has %d public functions and none is @main: choose one "
               "with --func NAME",
               path, (int)n_public);
  return NULL;
}

static bool is_float3(mx_elem_type_t et) {
  return et == MX_ELEM_F32 || et == MX_ELEM_F16 || et == MX_ELEM_BF16;
}

// w's values as `type` (f32 / f16 / bf16, round to nearest even) in a new tensor t; an f16
// overflow is an error, as in the loader.
static mx_status_t convert_weight(const mx_weight_t *w, const mx_type_t *type, mx_tensor_t *t) {
  mx_status_t st = mx_tensor_alloc(t, type);
  if (st != MX_OK) return st;
  size_t n = (size_t)mx_type_numel(type);
  for (size_t i = 0; i < n; i++) {
    const uint16_t *h = w->data;
    float v = w->dtype == MX_ELEM_F32    ? ((const float *)w->data)[i]
              : w->dtype == MX_ELEM_BF16 ? mx_bf16_to_f32(h[i])
                                         : mx_f16_to_f32(h[i]);
    if (type->elem == MX_ELEM_F32) {
      ((float *)(void *)t->data)[i] = v;
    } else if (type->elem == MX_ELEM_BF16) {
      ((uint16_t *)(void *)t->data)[i] = mx_f32_to_bf16(v);
    } else {
      uint16_t o = mx_f32_to_f16(v);
      if ((o & 0x7fffu) == 0x7c00u && isfinite(v)) {
        mx_tensor_free(t);
        return mx_error_set(MX_ERR_UNSUPPORTED,
                            "weight '%s': %g is beyond the f16 range of the graph's %s argument",
                            w->name, (double)v, mx_elem_name(type->elem));
      }
      ((uint16_t *)(void *)t->data)[i] = o;
    }
  }
  return MX_OK;
}

// The file of the --input option naming argument `name` (marked used), or NULL.
static const char *input_file(const mx_run_weights_opts_t *o, const char *name, bool *used) {
  size_t n = strlen(name);
  for (int32_t k = 0; k < o->n_inputs; k++) {
    if (strncmp(o->inputs[k], name, n) == 0 && o->inputs[k][n] == '=') {
      used[k] = true;
      return o->inputs[k] + n + 1;
    }
  }
  return NULL;
}

// Fills t, allocated with the argument's type, with the raw bytes of path, which must be
// exactly t's size (the bytes are the consumer's: little-endian, row-major).
static mx_status_t read_input(const char *path, const char *name, mx_tensor_t *t) {
  char *data = NULL, want[128];
  size_t len = 0;
  mx_status_t st = mx_read_file_max(path, t->nbytes, &data, &len);
  if (st != MX_OK) return mx_error_prefix(st, "--input %s", name);
  if (len != t->nbytes) {
    st = mx_error_set(MX_ERR_INVALID_ARG, "--input %s: '%s' holds %zu bytes, %s needs %zu", name,
                      path, len, mx_type_str(&t->type, want, sizeof want), t->nbytes);
  } else {
    memcpy(t->data, data, len);
  }
  free(data);
  return st;
}

// Binds argument i of f; tensors that are not views of the checkpoint are allocated (*owned).
static mx_status_t bind_arg(const mx_func_t *f, int32_t i, const mx_checkpoint_t *ck,
                            const mx_run_weights_opts_t *o, const int32_t *ids, int32_t n_ids,
                            bool *used, mx_tensor_t *t, bool *owned) {
  int64_t pos0 = o->pos0;
  const mx_type_t *type = mx_value_type(f, f->body->args[i]);
  mx_graph_arg_t info;
  if (!type || type->kind != MX_TYPE_TENSOR) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "argument %d of @%s is not a tensor", (int)i, f->name);
  }
  if (mx_graph_arg_info(f, i, &info) != MX_OK) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "argument %d of @%s has no mx.role attribute: --weights runs graphs "
                        "written by `mlxcel emit`",
                        (int)i, f->name);
  }
  char want[128], got[128];
  if (info.role == MX_ARG_WEIGHT) {
    const mx_weight_t *w = mx_checkpoint_find(ck, info.name);
    if (!w) {
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "weight '%s' (argument %d of @%s) is not in the checkpoint", info.name,
                          (int)i, f->name);
    }
    mx_type_t wt = mx_type_tensor(w->dtype, w->rank, w->dims);
    if (!mx_type_equal(&wt, type) && mx_type_same_shape(&wt, type) && is_float3(w->dtype) &&
        is_float3(type->elem)) {
      // A graph emitted at another precision: convert once, as the loader's precision pass.
      *owned = true;
      return convert_weight(w, type, t);
    }
    if (!mx_type_equal(&wt, type)) {
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "weight '%s': the graph expects %s but the checkpoint (%s) has %s",
                          info.name, mx_type_str(type, want, sizeof want), w->file,
                          mx_type_str(&wt, got, sizeof got));
    }
    t->type = *type;
    t->data = (uint8_t *)(uintptr_t)w->data;  // read-only view: the interpreter never writes args
    t->nbytes = w->nbytes;
    *owned = false;
    return MX_OK;
  }
  mx_status_t st = mx_tensor_alloc(t, type);  // zeroed: the caches start empty
  if (st != MX_OK) return st;
  *owned = true;
  int64_t numel = mx_type_numel(type);
  const char *file = input_file(o, info.name, used);
  if (file) return read_input(file, info.name, t);
  if (info.role == MX_ARG_TOKENS) {
    if (!ids) {
      return mx_error_set(MX_ERR_INVALID_ARG, "@%s takes token ids %s: give --ids", f->name,
                          mx_type_str(type, want, sizeof want));
    }
    if (numel != n_ids) {
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "@%s takes %" PRId64 " token ids (%s) but --ids gave %d", f->name, numel,
                          mx_type_str(type, want, sizeof want), (int)n_ids);
    }
    for (int64_t k = 0; k < numel; k++) mx_tensor_set_i64(t, k, ids[k]);
  } else if (info.role == MX_ARG_POS0) {
    for (int64_t k = 0; k < numel; k++) mx_tensor_set_i64(t, k, pos0);
  } else if (type->rank == 4) {
    // Caches are [B, Hkv, S, D]: the tokens must fit in S from pos0 on.
    int64_t tokens = n_ids > 0 ? n_ids : 1;
    if (pos0 + tokens > type->dims[2]) {
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "--pos0 %" PRId64 " + %" PRId64
                          " tokens exceeds the cache capacity %" PRId64 " of '%s'",
                          pos0, tokens, type->dims[2], info.name);
    }
  }
  return MX_OK;
}

static void print_result(const char *path, const mx_func_t *f, const mx_tensor_t *r, bool json) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  if (json) {
    mx_strbuf_puts(&sb, "{\"type\": \"result\", \"file\": ");
    mx_cli_json_string(&sb, path);
    mx_strbuf_puts(&sb, ", \"func\": ");
    mx_cli_json_string(&sb, f->name);
    mx_strbuf_puts(&sb, ", \"shape\": [");
    for (int32_t d = 0; d < r->type.rank; d++) {
      mx_strbuf_printf(&sb, "%s%" PRId64, d ? ", " : "", r->type.dims[d]);
    }
    mx_strbuf_puts(&sb, "], \"logits\": [");
    int64_t numel = mx_type_numel(&r->type);
    for (int64_t k = 0; k < numel; k++) {
      mx_strbuf_printf(&sb, "%s%.9g", k ? ", " : "", mx_tensor_get_f64(r, k));
    }
    mx_strbuf_puts(&sb, "]}\n");
  } else {
    mx_strbuf_printf(&sb, "// %s @%s: logits ", path, f->name);
    print_dims(&sb, &r->type);
    mx_strbuf_puts(&sb, "\n");
    mx_cli_format_tensor(r, &sb);
    mx_strbuf_puts(&sb, "\n");
  }
  fputs(sb.data ? sb.data : "", stdout);
  mx_strbuf_free(&sb);
}

int mx_cli_run_weights(const mx_run_weights_opts_t *o) {
  const char *cmd = "run";
  int32_t *ids = NULL, n_ids = 0;
  if (o->ids && !mx_cli_parse_ids(cmd, "--ids", o->ids, &ids, &n_ids)) return MX_EXIT_USAGE;
  struct {
    char *text;
    mx_module_t *m;
    mx_checkpoint_t *ck;
    mx_model_t *model;
    mx_tensor_t *args, *results;
    bool *owned;
    int32_t n_args, n_results;
  } r;
  memset(&r, 0, sizeof r);
  int rc = MX_EXIT_OK;
  size_t len = 0;
  mx_error_clear();
  mx_status_t st = mx_read_file(o->path, &r.text, &len);
  if (st != MX_OK) {
    rc = mx_cli_fail(cmd, st);
    goto done;
  }
  if (!mx_cli_check_model_dir(cmd, o->weights, NULL)) {
    rc = MX_EXIT_IO;
    goto done;
  }
  mx_parse_opts_t popts;
  memset(&popts, 0, sizeof popts);
  popts.filename = o->path;
  mx_error_clear();
  st = mx_hlo_parse(r.text, len, &popts, &r.m);
  const mx_checkpoint_t *ck = NULL;
  if (st == MX_OK && o->has_quant) {  // the weights as the model loads them (requantized)
    mx_model_load_opts_t lo = o->load;
    lo.tokenizer_optional = true;
    st = mx_cli_model_load(o->weights, &lo, !o->json, &r.model);
    if (st == MX_OK) ck = r.model->ckpt;
  } else if (st == MX_OK) {
    st = mx_checkpoint_open(o->weights, &r.ck);
    ck = r.ck;
  }
  mx_func_t *f = NULL;
  if (st == MX_OK) {
    f = pick_func(r.m, o->func, o->path);
    if (!f) st = MX_ERR_INVALID_ARG;
  }
  if (st == MX_OK) {
    r.n_args = f->body->n_args;
    r.n_results = f->n_results;
    r.args = calloc((size_t)r.n_args + 1, sizeof *r.args);
    r.owned = calloc((size_t)r.n_args + 1, sizeof *r.owned);
    r.results = calloc((size_t)r.n_results + 1, sizeof *r.results);
    if (!r.args || !r.owned || !r.results) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  bool used[MX_RUN_MAX_INPUTS] = {false};
  for (int32_t i = 0; st == MX_OK && i < r.n_args; i++) {
    st = bind_arg(f, i, ck, o, ids, n_ids, used, &r.args[i], &r.owned[i]);
  }
  for (int32_t k = 0; st == MX_OK && k < o->n_inputs; k++) {
    if (!used[k]) {
      st = mx_error_set(MX_ERR_INVALID_ARG,
                        "--input %s: @%s has no argument of that name other than a weight "
                        "(weights are bound from DIR)",
                        o->inputs[k], f->name);
    }
  }
  if (st == MX_OK && r.n_results < 1) {
    st = mx_error_set(MX_ERR_INVALID_ARG, "@%s returns nothing", f->name);
  }
  if (st == MX_OK) st = mx_interp_run(r.m, f, r.args, r.n_args, r.results, NULL);
  if (st == MX_OK && o->npy) {
    const mx_tensor_t *lg = &r.results[0];
    if (lg->type.kind != MX_TYPE_TENSOR || lg->type.elem != MX_ELEM_F32) {
      st = mx_error_set(MX_ERR_INVALID_ARG, "-o writes f32 logits; @%s's first result is not f32",
                        f->name);
    } else {
      st = mx_cli_write_npy_f32(o->npy, (const float *)(const void *)lg->data, lg->type.dims,
                                lg->type.rank);
    }
  }
  if (st != MX_OK) {
    rc = mx_cli_fail(cmd, st);
  } else if (!o->npy || o->json) {
    print_result(o->path, f, &r.results[0], o->json);
  }
done:
  for (int32_t i = 0; i < r.n_args; i++) {
    if (r.owned && r.owned[i]) mx_tensor_free(&r.args[i]);
  }
  for (int32_t i = 0; r.results && i < r.n_results; i++) mx_tensor_free(&r.results[i]);
  free(r.args);
  free(r.owned);
  free(r.results);
  mx_checkpoint_close(r.ck);
  mx_model_free(r.model);
  mx_module_destroy(r.m);
  free(r.text);
  free(ids);
  return rc;
}
