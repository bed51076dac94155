// mx_model_quantize: writes an MLX-format quantized checkpoint (see model.h).
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mlxcel/writer.h"
#include "model/graph_internal.h"
#include "model/quant_internal.h"

typedef struct qjob {
  const mx_model_t *m;
  int32_t bits, group;
  mx_elem_type_t dt;
  char **qnames;  // base names ("<x>") of the tensors to quantize, heap
  int32_t n_q;
  // The quantized form of one base, computed once for its three output tensors.
  int32_t cached;  // index into qnames, -1 none
  uint32_t *words;
  uint8_t *scales, *biases;
} qjob_t;

static int32_t find_base(const qjob_t *j, const char *name, const char **suffix) {
  for (int32_t i = 0; i < j->n_q; i++) {
    size_t n = strlen(j->qnames[i]);
    if (strncmp(name, j->qnames[i], n) == 0 && name[n] == '.' &&
        (!strcmp(name + n, ".weight") || !strcmp(name + n, ".scales") ||
         !strcmp(name + n, ".biases"))) {
      *suffix = name + n + 1;
      return i;
    }
  }
  return -1;
}

// The weights of base i as the output dtype rounds them, quantized row by row.
static mx_status_t quantize_base(qjob_t *j, int32_t i) {
  if (j->cached == i) return MX_OK;
  char name[320];
  snprintf(name, sizeof name, "%.300s.weight", j->qnames[i]);
  const mx_weight_t *w = mx_checkpoint_find(j->m->ckpt, name);
  int64_t N = w->dims[0], K = w->dims[1], G = K / j->group;
  size_t es = mx_elem_size(j->dt);
  free(j->words);
  free(j->scales);
  free(j->biases);
  j->words = malloc((size_t)(N * K) * (size_t)j->bits / 8 + 4);
  j->scales = malloc((size_t)(N * G) * es + 1);
  j->biases = malloc((size_t)(N * G) * es + 1);
  float *row = malloc((size_t)K * sizeof *row + 1);
  j->cached = -1;
  if (!j->words || !j->scales || !j->biases || !row) {
    free(row);
    return mx_error_set(MX_ERR_NOMEM, "out of memory quantizing %s", name);
  }
  for (int64_t r = 0; r < N; r++) {
    for (int64_t k = 0; k < K; k++) {
      float v = mx_q_load_float(w->dtype, w->data, r * K + k);
      if (j->dt != MX_ELEM_F32) {  // MLX quantizes the weights cast to the model dtype
        uint8_t tmp[4];
        mx_q_store_float(j->dt, tmp, 0, v);
        v = mx_q_load_float(j->dt, tmp, 0);
      }
      row[k] = v;
    }
    mx_q_affine_row(row, K, j->group, j->bits, j->dt, j->words + r * (K * j->bits / 32),
                    j->scales + (size_t)(r * G) * es, j->biases + (size_t)(r * G) * es);
  }
  free(row);
  j->cached = i;
  return MX_OK;
}

// Streams the bytes of output tensor d (file order) into the writer.
static mx_status_t write_tensor(qjob_t *j, mx_st_writer_t *wr, const mx_st_desc_t *d) {
  const char *suffix = NULL;
  int32_t qi = find_base(j, d->name, &suffix);
  uint64_t nbytes = mx_st_desc_bytes(d);
  if (qi >= 0) {
    MX_TRY(quantize_base(j, qi));
    const void *src = !strcmp(suffix, "weight")   ? (const void *)j->words
                      : !strcmp(suffix, "scales") ? (const void *)j->scales
                                                  : (const void *)j->biases;
    return mx_st_writer_append(wr, src, (size_t)nbytes);
  }
  const mx_weight_t *w = mx_checkpoint_find(j->m->ckpt, d->name);
  if (w->dtype == d->dtype) return mx_st_writer_append(wr, w->data, w->nbytes);
  enum { CHUNK = 4096 };
  uint8_t buf[CHUNK * 4];
  int64_t n = (int64_t)(w->nbytes / mx_elem_size(w->dtype));
  for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
    int64_t c = n - i0 < CHUNK ? n - i0 : CHUNK;
    for (int64_t i = 0; i < c; i++)
      mx_q_store_float(d->dtype, buf, i, mx_q_load_float(w->dtype, w->data, i0 + i));
    MX_TRY(mx_st_writer_append(wr, buf, (size_t)c * mx_elem_size(d->dtype)));
  }
  return MX_OK;
}

static bool is_float(mx_elem_type_t et) {
  return et == MX_ELEM_F32 || et == MX_ELEM_F16 || et == MX_ELEM_BF16;
}

static mx_status_t join(const char *dir, const char *name, char *out, size_t cap) {
  size_t n = strlen(dir);
  if ((size_t)snprintf(out, cap, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name) >= cap)
    return mx_error_set(MX_ERR_INVALID_ARG, "%.100s: path too long", dir);
  return MX_OK;
}

static mx_status_t write_text(const char *dir, const char *name, const char *text) {
  char path[4096];
  MX_TRY(join(dir, name, path, sizeof path));
  FILE *f = fopen(path, "w");
  bool ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
  if (f && fclose(f) != 0) ok = false;
  if (!ok) return mx_error_set(MX_ERR_IO, "cannot write %s: %s", path, strerror(errno));
  return MX_OK;
}

// config.json with the quantization dictionary and the stored dtype.
static mx_status_t write_config(const qjob_t *j, const char *in_dir, const char *out_dir) {
  char path[4096], *text = NULL;
  size_t len = 0;
  MX_TRY(join(in_dir, "config.json", path, sizeof path));
  MX_TRY(mx_read_file(path, &text, &len));
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  if (!root) return mx_error_set(MX_ERR_PARSE, "%s: not valid JSON", path);
  const char *keys[2] = {"quantization", "quantization_config"};
  for (int i = 0; i < 2; i++) {
    cJSON *q = cJSON_CreateObject();
    cJSON_AddNumberToObject(q, "bits", j->bits);
    cJSON_AddNumberToObject(q, "group_size", j->group);
    cJSON_AddStringToObject(q, "mode", "affine");
    cJSON_DeleteItemFromObjectCaseSensitive(root, keys[i]);
    cJSON_AddItemToObject(root, keys[i], q);
  }
  const char *dn = j->dt == MX_ELEM_F16    ? "float16"
                   : j->dt == MX_ELEM_BF16 ? "bfloat16"
                                           : "float32";
  cJSON_DeleteItemFromObjectCaseSensitive(root, "torch_dtype");
  cJSON_AddStringToObject(root, "torch_dtype", dn);
  char *out = cJSON_Print(root);
  cJSON_Delete(root);
  if (!out) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_status_t st = write_text(out_dir, "config.json", out);
  cJSON_free(out);
  return st;
}

static mx_status_t write_index(const mx_st_writer_t *wr, double params, const char *out_dir) {
  cJSON *root = cJSON_CreateObject(), *meta = cJSON_CreateObject(), *map = cJSON_CreateObject();
  double total = 0;
  for (int32_t i = 0; i < mx_st_writer_count(wr); i++) {
    const mx_st_desc_t *d = mx_st_writer_desc(wr, i);
    total += (double)mx_st_desc_bytes(d);
    cJSON_AddStringToObject(map, d->name, "model.safetensors");
  }
  cJSON_AddNumberToObject(meta, "total_size", total);
  cJSON_AddNumberToObject(meta, "total_parameters", params);
  cJSON_AddItemToObject(root, "metadata", meta);
  cJSON_AddItemToObject(root, "weight_map", map);
  char *out = cJSON_Print(root);
  cJSON_Delete(root);
  if (!out) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_status_t st = write_text(out_dir, "model.safetensors.index.json", out);
  cJSON_free(out);
  return st;
}

// Copies the other files of in_dir (tokenizer, generation config, ...).
static mx_status_t copy_others(const char *in_dir, const char *out_dir) {
  DIR *d = opendir(in_dir);
  if (!d) return mx_error_set(MX_ERR_IO, "%s: cannot list: %s", in_dir, strerror(errno));
  mx_status_t st = MX_OK;
  for (struct dirent *e; st == MX_OK && (e = readdir(d));) {
    const char *n = e->d_name;
    size_t len = strlen(n);
    if (n[0] == '.' || !strcmp(n, "config.json") || !strcmp(n, "model.safetensors.index.json") ||
        (len > 12 && !strcmp(n + len - 12, ".safetensors")))
      continue;
    char src[4096], dst[4096];
    struct stat sb;
    st = join(in_dir, n, src, sizeof src);
    if (st == MX_OK) st = join(out_dir, n, dst, sizeof dst);
    if (st != MX_OK || stat(src, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    char *text = NULL;
    size_t tl = 0;
    st = mx_read_file(src, &text, &tl);
    if (st != MX_OK) break;
    FILE *f = fopen(dst, "wb");
    bool ok = f && fwrite(text, 1, tl, f) == tl;
    if (f && fclose(f) != 0) ok = false;
    free(text);
    if (!ok) st = mx_error_set(MX_ERR_IO, "cannot write %s: %s", dst, strerror(errno));
  }
  closedir(d);
  return st;
}

// The list of output tensors: quantized triples (names allocated here, owned[k] true) and every
// other tensor (floats cast to dt, names borrowed from the checkpoint).
static mx_status_t plan_outputs(qjob_t *j, mx_st_desc_t **out, bool **owned, int32_t *n_out,
                                double *params) {
  const mx_checkpoint_t *ck = j->m->ckpt;
  int32_t n = mx_checkpoint_count(ck);
  mx_st_desc_t *d = calloc((size_t)n * 3 + 1, sizeof *d);
  bool *own = calloc((size_t)n * 3 + 1, sizeof *own);
  *out = d;
  *owned = own;
  if (!d || !own) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  int32_t k = 0;
  double p = 0;
  for (int32_t i = 0; i < n; i++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, i);
    const char *suffix;
    int32_t qi = find_base(j, w->name, &suffix);
    if (qi >= 0) {
      int64_t N = w->dims[0], K = w->dims[1];
      p += (double)(N * K);
      const char *parts[3] = {"weight", "scales", "biases"};
      for (int t = 0; t < 3; t++) {
        char *nm = malloc(strlen(j->qnames[qi]) + 9);
        if (!nm) return mx_error_set(MX_ERR_NOMEM, "out of memory");
        sprintf(nm, "%s.%s", j->qnames[qi], parts[t]);
        d[k].name = nm;
        own[k] = true;
        d[k].rank = 2;
        d[k].dims[0] = N;
        d[k].dtype = t == 0 ? MX_ELEM_UI32 : j->dt;
        d[k].dims[1] = t == 0 ? K * j->bits / 32 : K / j->group;
        k++;
        *n_out = k;
      }
      continue;
    }
    d[k].name = w->name;
    d[k].dtype = is_float(w->dtype) ? j->dt : w->dtype;
    d[k].rank = w->rank;
    double e = 1;
    for (int32_t r = 0; r < w->rank; r++) e *= (double)(d[k].dims[r] = w->dims[r]);
    p += e;
    k++;
    *n_out = k;
  }
  *params = p;
  return MX_OK;
}

mx_status_t mx_model_quantize(const char *in_dir, const char *out_dir,
                              const mx_quantize_opts_t *opts) {
  if (!in_dir || !out_dir || !opts) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_model_quantize: NULL argument");
  }
  qjob_t j;
  memset(&j, 0, sizeof j);
  j.cached = -1;
  j.bits = opts->bits;
  j.group = opts->group_size ? opts->group_size : 64;
  j.dt = opts->dtype ? opts->dtype : MX_ELEM_F16;
  if (j.bits != 4 && j.bits != 8) {
    return mx_error_set(MX_ERR_INVALID_ARG, "quantize: --bits %d (4 or 8)", j.bits);
  }
  if (j.group != 32 && j.group != 64 && j.group != 128) {
    return mx_error_set(MX_ERR_INVALID_ARG, "quantize: group size %d (32, 64 or 128)", j.group);
  }
  if (!is_float(j.dt)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "quantize: dtype %s (f16, bf16 or f32)",
                        mx_elem_name(j.dt));
  }
  mx_model_t *m = NULL;
  mx_model_load_opts_t lo = {.tokenizer_optional = true, .quant = MX_QUANT_NONE};
  MX_TRY(mx_model_load_ex(in_dir, &lo, &m));
  j.m = m;
  mx_arch_t a;
  mx_wlist_t wl;
  memset(&wl, 0, sizeof wl);
  mx_status_t st = mx_arch_from_config(&m->config, &a);
  // mx.moe takes one format per layer: experts are quantized when all three projections are.
  bool experts_ok = st == MX_OK && a.hidden % j.group == 0 && a.expert_ffn % j.group == 0;
  if (st == MX_OK) {
    mx_arch_resolve_names(&a, m->ckpt);
    st = mx_arch_weights(&a, &wl);
    mx_arch_free(&a);
  }
  mx_quantize_report_t rep = {0};
  j.qnames = calloc((size_t)(wl.n + 1), sizeof *j.qnames);
  if (st == MX_OK && !j.qnames) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  // mlx-lm: Linear, Embedding and expert layers. Routers and shared-expert gates stay float (the
  // graph reads them in float; a quantized one would be dequantized at load).
  for (int32_t i = 0; st == MX_OK && i < wl.n; i++) {
    const mx_wspec_t *s = &wl.w[i];
    size_t len = strlen(s->name);
    bool expert = s->kind == MX_WK_EXPERT;
    if (s->kind == MX_WK_GATE) rep.n_gates++;
    if ((s->kind != MX_WK_LINEAR && s->kind != MX_WK_EMBED && !expert) || s->rank != 2 ||
        len <= 7 || strcmp(s->name + len - 7, ".weight") != 0)
      continue;
    if (expert ? !experts_ok : s->dims[1] % j.group != 0) {
      rep.n_float++;
      continue;
    }
    bool dup = false;
    for (int32_t k = 0; k < j.n_q; k++)
      dup = dup || (strlen(j.qnames[k]) == len - 7 && !strncmp(j.qnames[k], s->name, len - 7));
    if (!dup && (j.qnames[j.n_q] = strndup(s->name, len - 7)) != NULL) {
      j.n_q++;
      rep.n_quantized++;
      rep.n_experts += expert;
    }
  }
  mx_wlist_free(&wl);
  if (st == MX_OK && mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
    st = mx_error_set(MX_ERR_IO, "cannot create %s: %s", out_dir, strerror(errno));
  }
  mx_st_desc_t *descs = NULL;
  bool *owned = NULL;
  int32_t nd = 0;
  double params = 0;
  if (st == MX_OK) st = plan_outputs(&j, &descs, &owned, &nd, &params);
  char path[4096];
  if (st == MX_OK) st = join(out_dir, "model.safetensors", path, sizeof path);
  mx_st_writer_t *wr = NULL;
  static const char *const meta[2] = {"format", "mlx"};
  if (st == MX_OK) st = mx_st_writer_open(path, descs, nd, meta, 1, &wr);
  for (int32_t i = 0; st == MX_OK && i < mx_st_writer_count(wr); i++) {
    st = write_tensor(&j, wr, mx_st_writer_desc(wr, i));
  }
  if (st == MX_OK) st = write_index(wr, params, out_dir);
  if (wr) {
    if (st == MX_OK) {
      st = mx_st_writer_close(wr);
    } else {
      mx_st_writer_abort(wr);
    }
  }
  if (st == MX_OK) st = write_config(&j, in_dir, out_dir);
  if (st == MX_OK) st = copy_others(in_dir, out_dir);
  for (int32_t i = 0; owned && i < nd; i++)
    if (owned[i]) free((char *)descs[i].name);
  free(descs);
  free(owned);
  if (st == MX_OK && opts->report) *opts->report = rep;
  for (int32_t i = 0; i < j.n_q; i++) free(j.qnames[i]);
  free(j.qnames);
  free(j.words);
  free(j.scales);
  free(j.biases);
  mx_model_free(m);
  return st;
}
