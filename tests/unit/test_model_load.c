// mx_model_load: the real stories260K loads (config + checkpoint + tokenizer); checkpoints that
// miss a tensor, have a wrong shape, an unsupported dtype or no tokenizer are refused clearly.
// The broken checkpoints are written here from the llama fixture's tensors.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlxcel/model.h"
#include "mlxcel/tokenizer.h"
#include "mx_test.h"

static char g_tmp[256];

static void copy_file(const char *from, const char *to) {
  char *text = NULL;
  size_t len = 0;
  if (mx_read_file(from, &text, &len) != MX_OK) {
    fprintf(stderr, "%s\n", mx_error_message());
    exit(1);
  }
  FILE *f = fopen(to, "wb");
  if (!f || fwrite(text, 1, len, f) != len) exit(1);
  fclose(f);
  free(text);
}

typedef struct edit {
  const char *skip;     // tensor left out
  const char *reshape;  // tensor whose two dims are swapped (same byte size)
  const char *as_u32;   // tensor re-declared as U32 (same shape and bytes)
} edit_t;

// Writes DIR/model.safetensors holding the tensors of `ck`, edited as `e` says.
static void write_edited(const mx_checkpoint_t *ck, const char *dir, const edit_t *e) {
  mx_strbuf_t h;
  mx_strbuf_init(&h);
  mx_strbuf_puts(&h, "{");
  size_t off = 0;
  int32_t n = mx_checkpoint_count(ck);
  for (int32_t i = 0; i < n; i++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, i);
    if (e->skip && strcmp(w->name, e->skip) == 0) continue;
    int64_t d0 = w->dims[0], d1 = w->rank > 1 ? w->dims[1] : 0;
    const char *dt = "F32";
    if (e->reshape && strcmp(w->name, e->reshape) == 0) {
      int64_t t = d0;
      d0 = d1;
      d1 = t;
    }
    if (e->as_u32 && strcmp(w->name, e->as_u32) == 0) dt = "U32";
    mx_strbuf_printf(&h, "%s\"%s\": {\"dtype\": \"%s\", \"shape\": [%lld", off ? ", " : "", w->name,
                     dt, (long long)d0);
    if (w->rank > 1) mx_strbuf_printf(&h, ", %lld", (long long)d1);
    mx_strbuf_printf(&h, "], \"data_offsets\": [%zu, %zu]}", off, off + w->nbytes);
    off += w->nbytes;
  }
  mx_strbuf_puts(&h, "}");
  char path[512];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  FILE *f = fopen(path, "wb");
  uint8_t len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)h.len >> (8 * i));
  fwrite(len8, 1, 8, f);
  fwrite(h.data, 1, h.len, f);
  for (int32_t i = 0; i < n; i++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, i);
    if (e->skip && strcmp(w->name, e->skip) == 0) continue;
    fwrite(w->data, 1, w->nbytes, f);
  }
  fclose(f);
  mx_strbuf_free(&h);
}

static void test_stories(const char *shared) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/models/stories260K/hf", shared);
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(dir, &m));
  if (!m) return;
  CHECK(strcmp(m->dir, dir) == 0 && m->ckpt && m->tokenizer);
  CHECK(m->config.vocab_size == 512 && mx_checkpoint_count(m->ckpt) == 47);
  mx_model_free(m);
  mx_model_free(NULL);

  // MLX-quantized: loads as stored (31 quantized tensors, down_proj stays f16; more in
  // test_quant_load.c).
  snprintf(dir, sizeof dir, "%s/models/stories260K/mlx-q4", shared);
  CHECK_OK(mx_model_load(dir, &m));
  CHECK(m && m->quant == MX_QUANT_MLX && m->n_quantized == 31 && m->quant_bits == 4);
  mx_model_free(m);
}

static void test_broken(const char *shared) {
  char fx[512], tokdir[512];
  snprintf(fx, sizeof fx, "%s/fixtures/llama", shared);
  snprintf(tokdir, sizeof tokdir, "%s/models/stories260K/hf/tokenizer.json", shared);
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_open(fx, &ck));
  if (!ck) return;
  static const struct {
    const char *name;
    edit_t e;
    const char *want;
  } cases[] = {
      {"missing",
       {.skip = "model.layers.1.mlp.up_proj.weight"},
       "missing: checkpoint: missing tensor \"model.layers.1.mlp.up_proj.weight\""},
      {"shape",
       {.reshape = "model.layers.2.self_attn.k_proj.weight"},
       "tensor \"model.layers.2.self_attn.k_proj.weight\""},
      {"dtype", {.as_u32 = "model.norm.weight"}, "has dtype ui32"},
      {"notok", {0}, "tokenizer.json"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char dir[512], path[600], cfg[600];
    snprintf(dir, sizeof dir, "%s/%s", g_tmp, cases[i].name);
    mkdir(dir, 0755);
    snprintf(cfg, sizeof cfg, "%s/config.json", fx);
    snprintf(path, sizeof path, "%s/config.json", dir);
    copy_file(cfg, path);
    write_edited(ck, dir, &cases[i].e);
    if (strcmp(cases[i].name, "notok") != 0) {
      snprintf(path, sizeof path, "%s/tokenizer.json", dir);
      copy_file(tokdir, path);  // vocab 512 like the llama fixture
    }
    mx_model_t *m = NULL;
    EXPECT_ERR(mx_model_load(dir, &m), cases[i].want);
    CHECK(m == NULL);
    if (i == 0) {  // with the tensor back, the same directory loads
      edit_t none = {0};
      write_edited(ck, dir, &none);
      CHECK_OK(mx_model_load(dir, &m));
      CHECK(m && m->config.rope_scaling.kind == MX_ROPE_SCALING_LLAMA3);
      mx_model_free(m);
    }
  }
  mx_checkpoint_close(ck);

  mx_model_t *m = NULL;
  EXPECT_ERR(mx_model_load(g_tmp, &m), "config.json");
  snprintf(fx, sizeof fx, "%s/fixtures/qwen2", shared);
  // The fixtures have no tokenizer: mx_model_load needs one, mx_model_load_ex can do without.
  EXPECT_ERR(mx_model_load(fx, &m), "tokenizer.json");
  CHECK(m == NULL);
  mx_model_load_opts_t lo = {.tokenizer_optional = true};
  CHECK_OK(mx_model_load_ex(fx, &lo, &m));
  CHECK(m && m->tokenizer == NULL && strcmp(m->config.model_type, "qwen2") == 0);
  mx_model_free(m);
}

int main(void) {
  const char *shared = getenv("MX_SHARED");
  char probe[512];
  snprintf(probe, sizeof probe, "%s/models/stories260K/hf/config.json", shared ? shared : "");
  if (!shared || access(probe, R_OK) != 0) {
    mx_test_skip("MX_SHARED not set or without models/stories260K: nothing to load");
    return mx_test_finish();
  }
  snprintf(g_tmp, sizeof g_tmp, "%s/mx_load_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_tmp)) {
    perror("mkdtemp");
    return 1;
  }
  test_stories(shared);
  test_broken(shared);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
  return mx_test_finish();
}
