// The loader's precision pass (mx_model_load_opts_t precision / kv_dtype): resolution (explicit,
// $MLXCEL_XLA_PRECISION / $MLXCEL_XLA_KV_DTYPE, auto from the checkpoint), validation, the
// resident types of each weight role, round-to-nearest-even conversion and the f16 range check.
// Uses stories260K (f32) and a bf16 copy of it written to a temp dir, and a bf16 copy of the
// Gemma 3n fixture for the tables only a gather reads.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/half.h"
#include "mlxcel/model.h"
#include "mlxcel/writer.h"
#include "mx_test.h"

static char g_model[4096], g_tmp[256];

static mx_model_t *load(const char *dir, mx_elem_type_t prec, mx_elem_type_t kv,
                        mx_status_t *st_out) {
  mx_model_load_opts_t lo = {.tokenizer_optional = true, .precision = prec, .kv_dtype = kv};
  mx_model_t *m = NULL;
  mx_status_t st = mx_model_load_ex(dir, &lo, &m);
  if (st_out) *st_out = st;
  return m;
}

static const mx_weight_t *find(const mx_model_t *m, const char *name) {
  return mx_checkpoint_find(m->ckpt, name);
}

// Copies dir's checkpoint into out_dir with every tensor converted to `et` (scale multiplies the
// values of `scaled`, to push one past the f16 range).
static bool write_copy(const char *dir, const char *out_dir, mx_elem_type_t et, const char *scaled,
                       float scale) {
  mx_checkpoint_t *ck = NULL;
  if (mx_checkpoint_open(dir, &ck) != MX_OK) return false;
  int32_t n = mx_checkpoint_count(ck);
  mx_st_desc_t *d = calloc((size_t)n, sizeof *d);
  void **data = calloc((size_t)n, sizeof *data);
  for (int32_t i = 0; i < n; i++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, i);
    d[i].name = w->name;
    d[i].dtype = et;
    d[i].rank = w->rank;
    memcpy(d[i].dims, w->dims, sizeof d[i].dims);
    size_t cnt = w->nbytes / 4;
    uint16_t *h = malloc(cnt * 2 + 2);
    for (size_t j = 0; j < cnt; j++) {
      float v = ((const float *)w->data)[j];
      if (scaled && !strcmp(w->name, scaled) && j == 7) v *= scale;
      h[j] = et == MX_ELEM_BF16 ? mx_f32_to_bf16(v) : mx_f32_to_f16(v);
    }
    data[i] = h;
  }
  char path[4200], cmd[8600];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s/config.json' '%s/'", out_dir, dir, out_dir);
  bool ok = system(cmd) == 0;
  snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
  ok = ok && mx_st_write_file(path, d, (const void *const *)data, n) == MX_OK;
  for (int32_t i = 0; i < n; i++) free(data[i]);
  free(data);
  free(d);
  mx_checkpoint_close(ck);
  return ok;
}

static void test_names(void) {
  mx_elem_type_t et = MX_ELEM_INVALID;
  CHECK(mx_precision_parse("bf16", "x", &et) == MX_OK && et == MX_ELEM_BF16);
  CHECK(mx_precision_parse("BFloat16", "x", &et) == MX_OK && et == MX_ELEM_BF16);
  CHECK(mx_precision_parse("f16", "x", &et) == MX_OK && et == MX_ELEM_F16);
  CHECK(mx_precision_parse("float32", "x", &et) == MX_OK && et == MX_ELEM_F32);
  CHECK(mx_precision_parse("int8", "--precision", &et) == MX_ERR_INVALID_ARG);
  CHECK(strstr(mx_error_message(), "--precision: 'int8' is not a precision") != NULL);
  CHECK(mx_precision_parse(NULL, "x", &et) == MX_ERR_INVALID_ARG);
}

static void test_roles(void) {
  mx_model_t *m = load(g_model, MX_ELEM_BF16, MX_ELEM_INVALID, NULL);
  CHECK(m != NULL);
  if (!m) return;
  CHECK(m->precision == MX_ELEM_BF16 && m->kv_dtype == MX_ELEM_BF16);
  mx_checkpoint_t *raw = NULL;
  CHECK_OK(mx_checkpoint_open(g_model, &raw));
  static const char *matmul[] = {"model.layers.0.self_attn.q_proj.weight",
                                 "model.layers.4.mlp.down_proj.weight",
                                 "model.embed_tokens.weight"};  // tied: the head's weight
  for (size_t i = 0; i < 3; i++) {
    const mx_weight_t *w = find(m, matmul[i]), *r = mx_checkpoint_find(raw, matmul[i]);
    CHECK_MSG(w && w->dtype == MX_ELEM_BF16 && w->nbytes * 2 == r->nbytes, "%s", matmul[i]);
    int bad = 0;
    for (size_t j = 0; w && j < w->nbytes / 2; j++)
      bad += ((const uint16_t *)w->data)[j] != mx_f32_to_bf16(((const float *)r->data)[j]);
    CHECK_MSG(bad == 0, "%s: %d elements not rounded to nearest even", matmul[i], bad);
  }
  const mx_weight_t *norm = find(m, "model.layers.0.input_layernorm.weight");
  CHECK(norm && norm->dtype == MX_ELEM_F32);
  mx_checkpoint_close(raw);
  mx_model_free(m);
  // Explicit KV dtype; f32 precision leaves the f32 checkpoint untouched (zero-copy).
  m = load(g_model, MX_ELEM_F32, MX_ELEM_F16, NULL);
  CHECK(m && m->precision == MX_ELEM_F32 && m->kv_dtype == MX_ELEM_F16);
  if (m) CHECK(find(m, "model.layers.0.self_attn.q_proj.weight")->dtype == MX_ELEM_F32);
  mx_model_free(m);
}

// Gemma 3n's per-layer embedding table (2G values at E2B's shape) is read by a gather only: it
// stays as the checkpoint has it, in the mapped file, instead of being converted (an f32 copy
// was twice its bytes, beside the mapped original while it was made). Its norms still go to f32.
static void test_gather_tables(const char *g3n_bf16) {
  mx_model_t *m = load(g3n_bf16, MX_ELEM_INVALID, MX_ELEM_INVALID, NULL);
  CHECK_MSG(m != NULL, "%s", mx_error_message());
  if (!m) return;
  CHECK(m->precision == MX_ELEM_BF16);
  mx_checkpoint_t *raw = NULL;
  CHECK_OK(mx_checkpoint_open(g3n_bf16, &raw));
  const char *name = "model.embed_tokens_per_layer.weight";
  const mx_weight_t *w = find(m, name), *r = mx_checkpoint_find(raw, name);
  CHECK_MSG(w && r && w->dtype == MX_ELEM_BF16 && w->nbytes == r->nbytes, "%s: %s", name,
            w ? mx_elem_name(w->dtype) : "missing");
  if (w && r && w->nbytes == r->nbytes) CHECK(memcmp(w->data, r->data, w->nbytes) == 0);
  CHECK(w && strcmp(w->file, r ? r->file : "") == 0);  // the mapped tensor, not an owned copy
  const mx_weight_t *norm = find(m, "model.per_layer_projection_norm.weight");
  CHECK(norm && norm->dtype == MX_ELEM_F32);
  const mx_weight_t *lin = find(m, "model.per_layer_model_projection.weight");
  CHECK(lin && lin->dtype == MX_ELEM_BF16);
  mx_checkpoint_close(raw);
  mx_model_free(m);
}

static void test_auto_and_env(const char *bf16_dir) {
  mx_model_t *m = load(g_model, MX_ELEM_INVALID, MX_ELEM_INVALID, NULL);
  CHECK(m && m->precision == MX_ELEM_F32 && m->kv_dtype == MX_ELEM_F32);  // f32 runs f32
  mx_model_free(m);
  m = load(bf16_dir, MX_ELEM_INVALID, MX_ELEM_INVALID, NULL);
  CHECK(m && m->precision == MX_ELEM_BF16 && m->kv_dtype == MX_ELEM_BF16);  // bf16 runs bf16
  // Resident bf16 weights of a bf16 checkpoint are its own bytes (not converted), norms f32.
  if (m) {
    CHECK(find(m, "model.layers.0.self_attn.q_proj.weight")->dtype == MX_ELEM_BF16);
    CHECK(find(m, "model.norm.weight")->dtype == MX_ELEM_F32);
  }
  mx_model_free(m);
  m = load(bf16_dir, MX_ELEM_F32, MX_ELEM_INVALID, NULL);  // widened exactly
  CHECK(m && m->precision == MX_ELEM_F32 &&
        find(m, "model.layers.1.mlp.up_proj.weight")->dtype == MX_ELEM_F32);
  mx_model_free(m);
  m = load(g_model, MX_ELEM_F16, MX_ELEM_INVALID, NULL);  // the KV dtype follows the precision
  CHECK(m && m->precision == MX_ELEM_F16 && m->kv_dtype == MX_ELEM_F16);
  mx_model_free(m);
  m = load(g_model, MX_ELEM_F16, MX_ELEM_F32, NULL);
  CHECK(m && m->precision == MX_ELEM_F16 && m->kv_dtype == MX_ELEM_F32);
  mx_model_free(m);
  // The library never reads the environment (the CLI maps $MLXCEL_XLA_PRECISION and
  // $MLXCEL_XLA_KV_DTYPE onto these options): auto stays the checkpoint's type with them set,
  // even to values that are not types.
  setenv("MLXCEL_XLA_PRECISION", "f16", 1);
  setenv("MLXCEL_XLA_KV_DTYPE", "fp8", 1);
  m = load(g_model, MX_ELEM_INVALID, MX_ELEM_INVALID, NULL);
  CHECK(m && m->precision == MX_ELEM_F32 && m->kv_dtype == MX_ELEM_F32);
  mx_model_free(m);
  unsetenv("MLXCEL_XLA_PRECISION");
  unsetenv("MLXCEL_XLA_KV_DTYPE");
  mx_status_t st;
  mx_elem_type_t et = MX_ELEM_INVALID;
  CHECK(mx_precision_parse("fp8", "MLXCEL_XLA_PRECISION", &et) == MX_ERR_INVALID_ARG);
  CHECK_MSG(strstr(mx_error_message(), "MLXCEL_XLA_PRECISION: 'fp8' is not a precision"),
            "message: %s", mx_error_message());
  m = load(g_model, MX_ELEM_I8, MX_ELEM_INVALID, &st);
  CHECK(m == NULL && st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "precision i8"));
  m = load(g_model, MX_ELEM_INVALID, MX_ELEM_F64, &st);
  CHECK(m == NULL && st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "KV dtype f64"));
}

// The progress hook of the load: every stage starts at 0, never goes back, and ends at its total.
typedef struct progress_log {
  int n, starts, ends, backwards;
  char stages[8][16];
  int n_stages;
  uint64_t last;
} progress_log_t;

static void on_progress(void *user, const char *stage, uint64_t done, uint64_t total) {
  progress_log_t *l = user;
  l->n++;
  if (!l->n_stages || strcmp(l->stages[l->n_stages - 1], stage) != 0) {
    if (l->n_stages < 8) snprintf(l->stages[l->n_stages++], sizeof l->stages[0], "%s", stage);
    l->starts += done == 0;
    l->last = 0;
  }
  l->backwards += done < l->last || done > total;
  l->ends += done == total && total > 0;
  l->last = done;
}

static void test_progress(void) {
  progress_log_t log = {0};
  mx_model_load_opts_t lo = {
      .tokenizer_optional = true, .precision = MX_ELEM_BF16, .progress = {on_progress, &log}};
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load_ex(g_model, &lo, &m));
  mx_model_free(m);
  // f32 -> bf16: the non-finite check's read ("mapping"), then the conversion.
  CHECK_MSG(log.n_stages == 2 && !strcmp(log.stages[0], "mapping") &&
                !strcmp(log.stages[1], "converting"),
            "%d stages: %s, %s", log.n_stages, log.stages[0], log.stages[1]);
  CHECK_MSG(log.starts == 2 && log.ends >= 2 && log.backwards == 0 && log.n > 4,
            "%d reports, %d starts, %d ends, %d out of order", log.n, log.starts, log.ends,
            log.backwards);
}

static void test_f16_range(void) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/big", g_tmp);
  // One weight holds a value past 65504: f16 refuses it by name; bf16 has the range.
  CHECK(write_copy(g_model, dir, MX_ELEM_BF16, "model.layers.2.mlp.gate_proj.weight", 1e7f));
  mx_status_t st;
  mx_model_t *m = load(dir, MX_ELEM_F16, MX_ELEM_INVALID, &st);
  CHECK(m == NULL && st == MX_ERR_UNSUPPORTED);
  CHECK_MSG(strstr(mx_error_message(), "model.layers.2.mlp.gate_proj.weight") &&
                strstr(mx_error_message(), "beyond the f16 range"),
            "message: %s", mx_error_message());
  m = load(dir, MX_ELEM_BF16, MX_ELEM_INVALID, &st);
  CHECK(m != NULL);
  mx_model_free(m);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  if (!data) {
    mx_test_skip("MX_TEST_DATA is not set");
    return mx_test_finish();
  }
  unsetenv("MLXCEL_XLA_PRECISION");
  unsetenv("MLXCEL_XLA_KV_DTYPE");
  snprintf(g_model, sizeof g_model, "%s/../../models/stories260K", data);
  snprintf(g_tmp, sizeof g_tmp, "/tmp/mx_prec_test_XXXXXX");
  if (!mkdtemp(g_tmp)) return 1;
  char bf16_dir[512];
  snprintf(bf16_dir, sizeof bf16_dir, "%s/bf16", g_tmp);
  CHECK(write_copy(g_model, bf16_dir, MX_ELEM_BF16, NULL, 1.0f));
  char g3n[4096], g3n_bf16[512];
  snprintf(g3n, sizeof g3n, "%s/families/gemma3n_text", data);
  snprintf(g3n_bf16, sizeof g3n_bf16, "%s/g3n_bf16", g_tmp);
  CHECK(write_copy(g3n, g3n_bf16, MX_ELEM_BF16, NULL, 1.0f));
  test_names();
  test_gather_tables(g3n_bf16);
  test_roles();
  test_auto_and_env(bf16_dir);
  test_f16_range();
  test_progress();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd) != 0) printf("warning: could not remove %s\n", g_tmp);
  return mx_test_finish();
}
