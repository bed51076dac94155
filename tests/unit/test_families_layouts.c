// Checkpoint layouts and architecture details of the families beyond the fixtures' own files:
// the multimodal gemma3 checkpoint (text weights under language_model.model. or
// model.language_model., nested text_config, vision tensors ignored) must give the gemma3_text
// fixture's logits; weight checks name the tensor (phi3's fused qkv_proj, gemma2's sandwich
// norms); the description a config leads to (Gemma's embedding scale rounded to the model
// dtype, Gemma 3's per-layer RoPE tables, windows). Fixture parts need $MX_SHARED.
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/graph_internal.h"
#include "test_graph_runner.h"

static char g_tmp[256];

static void write_text(const char *dir, const char *name, const char *text) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

// DIR/model.safetensors with ck's tensors, "model." renamed to `prefix`, `skip` left out, and
// one extra (vision) tensor that the text graph must ignore.
static void write_renamed(const mx_checkpoint_t *ck, const char *dir, const char *prefix,
                          const char *skip) {
  mx_strbuf_t h;
  mx_strbuf_init(&h);
  mx_strbuf_puts(&h, "{\"__metadata__\": {\"format\": \"pt\"}");
  size_t off = 0;
  int32_t n = mx_checkpoint_count(ck);
  for (int32_t i = 0; i < n; i++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, i);
    if (skip && strcmp(w->name, skip) == 0) continue;
    const char *rest = strncmp(w->name, "model.", 6) == 0 ? w->name + 6 : NULL;
    char line[512];
    snprintf(line, sizeof line, ", \"%s%s\": {\"dtype\": \"F32\", \"shape\": [%lld",
             rest ? prefix : "", rest ? rest : w->name, (long long)w->dims[0]);
    mx_strbuf_puts(&h, line);
    if (w->rank > 1) {
      snprintf(line, sizeof line, ", %lld", (long long)w->dims[1]);
      mx_strbuf_puts(&h, line);
    }
    snprintf(line, sizeof line, "], \"data_offsets\": [%zu, %zu]}", off, off + w->nbytes);
    mx_strbuf_puts(&h, line);
    off += w->nbytes;
  }
  char line[200];
  snprintf(line, sizeof line,
           ", \"vision_tower.patch.weight\": {\"dtype\": \"F32\", \"shape\": [2], "
           "\"data_offsets\": [%zu, %zu]}}",
           off, off + 8);
  mx_strbuf_puts(&h, line);
  while (h.len % 8) mx_strbuf_puts(&h, " ");
  char path[600];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f) {
    uint64_t hl = h.len;
    fwrite(&hl, 8, 1, f);
    fwrite(h.data, 1, h.len, f);
    for (int32_t i = 0; i < n; i++) {
      const mx_weight_t *w = mx_checkpoint_weight(ck, i);
      if (skip && strcmp(w->name, skip) == 0) continue;
      fwrite(w->data, 1, w->nbytes, f);
    }
    float two[2] = {0, 0};
    fwrite(two, sizeof two, 1, f);
    fclose(f);
  }
  mx_strbuf_free(&h);
}

static char *read_text(const char *path) {
  char *t = NULL;
  size_t n = 0;
  if (mx_read_file(path, &t, &n) != MX_OK) return NULL;
  return t;
}

// The gemma3 fixture repackaged as a multimodal gemma3 checkpoint: same logits.
static void test_gemma3_multimodal(const char *shared) {
  char fx[600], path[700];
  snprintf(fx, sizeof fx, "%s/fixtures/gemma3", shared);
  snprintf(path, sizeof path, "%s/config.json", fx);
  char *text_cfg = read_text(path);
  snprintf(path, sizeof path, "%s/reference.json", fx);
  cJSON *ref = read_json(path);
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_open(fx, &ck));
  CHECK(text_cfg != NULL && ref != NULL);
  if (!text_cfg || !ref || !ck) goto done;
  size_t cl = strlen(text_cfg) + 300;
  char *cfg = malloc(cl);
  snprintf(cfg, cl,
           "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"model_type\": "
           "\"gemma3\", \"torch_dtype\": \"float32\", \"eos_token_id\": [1, 106], "
           "\"text_config\": %s}",
           text_cfg);
  write_text(g_tmp, "config.json", cfg);
  free(cfg);
  int32_t n_prompt = 0;
  int32_t *prompt = json_ids(cJSON_GetObjectItem(ref, "prompt_ids"), &n_prompt);
  const char *prefixes[2] = {"language_model.model.", "model.language_model."};
  for (int32_t k = 0; k < 2; k++) {
    write_renamed(ck, g_tmp, prefixes[k], NULL);
    mx_model_t *m = NULL;
    mx_model_load_opts_t lo = {.tokenizer_optional = true};
    CHECK_OK(mx_model_load_ex(g_tmp, &lo, &m));
    if (m) {
      CHECK(strcmp(m->config.model_type, "gemma3") == 0 && m->config.n_eos == 2);
      CHECK(m->config.num_layers == 6 && m->config.layer_sliding[4] && !m->config.layer_sliding[5]);
    }
    mx_model_free(m);
    mx_graph_opts_t o = {.batch = 1, .ctx = 32, .prefill_len = n_prompt, .all_logits = true};
    runner_t r;
    if (runner_open(&r, g_tmp, &o)) {
      mx_graph_arg_t info;
      CHECK_OK(mx_graph_arg_info(r.prefill, 0, &info));
      CHECK(strncmp(info.name, prefixes[k], strlen(prefixes[k])) == 0);
      int64_t n = 0;
      float *pl = runner_step(&r, r.prefill, prompt, 0, &n);
      int32_t V = r.cfg.vocab_size;
      CHECK(pl != NULL && n == (int64_t)n_prompt * V);
      if (pl && n == (int64_t)n_prompt * V) {
        double md = max_diff_rows(pl, cJSON_GetObjectItem(ref, "logits"), 0, n_prompt, V);
        CHECK_MSG(md <= 1e-4, "gemma3 (%s...): max |dlogit| %g", prefixes[k], md);
        printf("families_layouts: gemma3 multimodal (%s...) max|dlogit| %.3g\n", prefixes[k], md);
      }
      free(pl);
      runner_free(&r);
    }
  }
  free(prompt);
  // A missing text tensor is named with the layout's prefix.
  write_renamed(ck, g_tmp, "language_model.model.", "model.layers.2.self_attn.q_norm.weight");
  mx_model_t *m = NULL;
  mx_model_load_opts_t lo = {.tokenizer_optional = true};
  EXPECT_ERR(mx_model_load_ex(g_tmp, &lo, &m),
             "missing tensor \"language_model.model.layers.2.self_attn.q_norm.weight\"");
done:
  mx_checkpoint_close(ck);
  cJSON_Delete(ref);
  free(text_cfg);
}

// Weight checks name the tensor: a config that disagrees with phi3's fused qkv_proj, a gemma2
// checkpoint without a sandwich norm.
static void test_weight_errors(const char *shared) {
  char fx[600], path[700];
  mx_model_config_t c;
  mx_checkpoint_t *ck = NULL;
  snprintf(fx, sizeof fx, "%s/fixtures/phi3", shared);
  CHECK_OK(mx_config_load(fx, &c));
  CHECK_OK(mx_checkpoint_open(fx, &ck));
  if (ck) {
    CHECK_OK(mx_model_check_weights(&c, ck));
    c.num_kv_heads = 4;
    EXPECT_ERR(mx_model_check_weights(&c, ck),
               "tensor \"model.layers.0.self_attn.qkv_proj.weight\" in ");
    EXPECT_ERR(
        mx_model_check_weights(&c, ck),
        "model.safetensors has shape tensor<128x64xf32>, the config needs tensor<192x64xf32>");
    c.num_kv_heads = 2;
    c.intermediate_size = 64;
    EXPECT_ERR(mx_model_check_weights(&c, ck), "mlp.gate_up_proj.weight");
  }
  mx_checkpoint_close(ck);
  ck = NULL;
  snprintf(fx, sizeof fx, "%s/fixtures/gemma2", shared);
  snprintf(path, sizeof path, "%s/config.json", fx);
  char *cfg = read_text(path);
  CHECK_OK(mx_checkpoint_open(fx, &ck));
  if (cfg && ck) {
    write_text(g_tmp, "config.json", cfg);
    write_renamed(ck, g_tmp, "model.", "model.layers.1.pre_feedforward_layernorm.weight");
    mx_model_t *m = NULL;
    mx_model_load_opts_t lo = {.tokenizer_optional = true};
    EXPECT_ERR(mx_model_load_ex(g_tmp, &lo, &m),
               "missing tensor \"model.layers.1.pre_feedforward_layernorm.weight\"");
    CHECK(m == NULL);
  }
  free(cfg);
  mx_checkpoint_close(ck);
}

// The descriptions configs lead to (no checkpoint needed).
static void test_arch(void) {
  mx_model_config_t c;
  mx_arch_t a;
#define GEMMA_CFG "{\"model_type\": \"gemma\", \"hidden_size\": 3072, \"torch_dtype\": \"%s\"}"
  char buf[256];
  snprintf(buf, sizeof buf, GEMMA_CFG, "bfloat16");
  CHECK_OK(mx_config_parse(buf, strlen(buf), NULL, 0, "t", &c));
  CHECK_OK(mx_arch_from_config(&c, &a));
  CHECK(a.embed_scale == 55.5 && a.norm_offset == 1.0 && a.tied && !a.sandwich_norm);
  CHECK(strcmp(a.activation, "gelu_tanh") == 0 && a.attn_scale == 1.0 / 16.0);
  mx_arch_free(&a);
  snprintf(buf, sizeof buf, GEMMA_CFG, "float32");
  CHECK_OK(mx_config_parse(buf, strlen(buf), NULL, 0, "t", &c));
  CHECK_OK(mx_arch_from_config(&c, &a));
  CHECK(a.embed_scale == (double)(float)sqrt(3072.0));
  mx_arch_free(&a);

  const char *g3 =
      "{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 6, \"head_dim\": 32, "
      "\"query_pre_attn_scalar\": 24, \"sliding_window\": 8, \"rope_scaling\": {\"rope_type\": "
      "\"linear\", \"factor\": 8}}";
  CHECK_OK(mx_config_parse(g3, strlen(g3), NULL, 0, "t", &c));
  CHECK_OK(mx_arch_from_config(&c, &a));
  CHECK(a.n_rope_tables == 2 && a.qk_norm && a.sandwich_norm && a.rotary_dim == 32);
  CHECK(a.layer_rope[0] == 1 && a.layer_rope[5] == 0 && a.layer_window[0] == 8);
  CHECK(a.layer_window[5] == 0 && fabs(a.attn_scale - 1.0 / sqrt(24.0)) < 1e-15);
  // Global layers: rope_theta 1e6 / 8; local: 10000, unscaled.
  CHECK(a.inv_freq[0][1] == (float)(pow(1e6, -2.0 / 32.0) / 8.0));
  CHECK(a.inv_freq[1][1] == (float)pow(10000.0, -2.0 / 32.0));
  mx_arch_free(&a);

  const char *q2 = "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"sliding_window\": 8}";
  CHECK_OK(mx_config_parse(q2, strlen(q2), NULL, 0, "t", &c));
  CHECK_OK(mx_arch_from_config(&c, &a));
  CHECK(a.qkv_bias && !a.o_bias && a.layer_window[0] == 0 && a.layer_window[1] == 0);
  mx_arch_free(&a);
  const char *p3 =
      "{\"model_type\": \"phi3\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"partial_rotary_factor\": 0.75, \"sliding_window\": 8, \"num_hidden_layers\": 2}";
  CHECK_OK(mx_config_parse(p3, strlen(p3), NULL, 0, "t", &c));
  CHECK_OK(mx_arch_from_config(&c, &a));
  CHECK(a.fused_qkv && a.fused_gate_up && a.rotary_dim == 12 && a.layer_window[1] == 8);
  mx_arch_free(&a);
}

int main(void) {
  test_arch();
  const char *shared = getenv("MX_SHARED");
  char probe[512];
  snprintf(probe, sizeof probe, "%s/fixtures/gemma3/reference.json", shared ? shared : "");
  if (!shared || access(probe, R_OK) != 0) {
    mx_test_skip("MX_SHARED not set or without fixtures: layout tests not run");
    return mx_test_finish();
  }
  snprintf(g_tmp, sizeof g_tmp, "%s/mx_fam_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_tmp)) {
    perror("mkdtemp");
    return 1;
  }
  test_gemma3_multimodal(shared);
  test_weight_errors(shared);
  char path[600];
  snprintf(path, sizeof path, "%s/config.json", g_tmp);
  unlink(path);
  snprintf(path, sizeof path, "%s/model.safetensors", g_tmp);
  unlink(path);
  rmdir(g_tmp);
  return mx_test_finish();
}
