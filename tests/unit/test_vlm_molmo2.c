// Molmo2 against transformers (tests/data/families/molmo2, written by
// tools/vlm/make_molmo2_fixture.py with transformers' own modeling and processor classes): the
// checkpoint in the released (original Molmo) layout — fused att_proj and ff_proj (up rows
// first), the embedding split into wte.embedding [vocab, H] and wte.new_embedding [additional,
// H], attn_norm / ff_norm, ln_f — its Qwen3-style text model (and, in molmo2-olmo, the
// OLMo-style one: q/k norms over whole projections, norm_after) on a text-only prompt through
// sessions on the reference interpreter and the cpu runtime (every position's logits within 1e-4
// of transformers', the 16 greedy ids), the image tokens past the head's vocabulary accepted as
// input and ids past the embedding refused; the processor's image tokens of the prompt from its
// image_grids (mx_molmo2_expand_prompt: transformers' prompt ids, and the processor options);
// then the config's defaults and refusals.
#include <math.h>
#include <stdio.h>

#include "mlxcel/session.h"
#include "mx_test_vlm.h"
#include "test_graph_runner.h"

static const double kTol = 1e-4;
static char g_data[4096];  // the test data folder (MX_TEST_DATA)

static int32_t argmax(const float *v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

static void check_text(const mx_model_t *m, const cJSON *json, const char *backend) {
  const char *name = m->config.norm_after ? "molmo2-olmo" : "molmo2";
  int32_t n = 0, ng = 0, V = m->config.vocab_size;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "text_prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "text_greedy_ids"), &ng);
  const cJSON *logits = cJSON_GetObjectItem(json, "text_logits");
  mx_session_opts_t so = {.backend = backend, .ctx = 64, .prefill_chunk = 8};
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  float *all = malloc(sizeof(float) * (size_t)n * (size_t)V);
  if (s && all) {
    CHECK_OK(mx_session_prefill(s, ids, n, all));
    double d = max_diff_rows(all, logits, 0, n, V);
    printf("%s %s: text prompt logits within %.3g\n", name, backend, d);
    CHECK_MSG(d <= kTol, "%s %s: text prompt logits differ by %g", name, backend, d);
    int32_t same = 0;
    for (int32_t i = 0; i < ng; i++) {
      int32_t id = argmax(mx_session_logits(s), V);
      same += id == greedy[i];
      if (mx_session_decode(s, id) != MX_OK) break;
    }
    CHECK_MSG(same == ng, "%s %s: %d of %d greedy ids equal", name, backend, same, ng);
    // The image tokens live past the head's vocabulary, in the embedding's extra rows: valid
    // input; an id past those is refused, naming the range.
    int32_t patch = cJSON_GetObjectItem(json, "image_token_index")->valueint;
    int32_t nv = mx_config_input_vocab(&m->config);
    CHECK(patch >= V && patch < nv);
    CHECK_OK(mx_session_decode(s, patch));
    mx_status_t st = mx_session_decode(s, nv);
    CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "out of range [0, 268)") != NULL);
  }
  free(all);
  free(ids);
  free(greedy);
  mx_session_destroy(s);
}

// The fixture's tokenizer: bytes, <|endoftext|> <|im_start|> <|im_end|>, then the image tokens
// <im_start> <im_end> <im_patch> <im_col> <low_res_im_start> <|image|> (259..264).
static const mx_molmo2_prompt_t kTokens = {.placeholder = 264,
                                           .patch = 261,
                                           .col = 262,
                                           .start = 259,
                                           .low_res_start = 263,
                                           .end = 260,
                                           .col_tokens = true,
                                           .single_crop_col_tokens = -1,
                                           .single_crop_start = true};

static void check_prompt(const cJSON *json) {
  int32_t n = 0, *want = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  const cJSON *g = cJSON_GetObjectItem(json, "image_grids");
  int64_t grids[2][4];
  for (int i = 0; i < 4; i++) grids[0][i] = grids[1][i] = cJSON_GetArrayItem(g, i)->valueint;
  // The prompt as tokenized before the expansion: the placeholder where the image's run is.
  int32_t ids[64], k = 0, i = 0;
  while (i < n && want[i] != kTokens.low_res_start) ids[k++] = want[i++];
  ids[k++] = kTokens.placeholder;
  for (int32_t ends = 0; i < n && ends < 2; i++) ends += want[i] == kTokens.end;  // both views
  while (i < n && k < 64) ids[k++] = want[i++];
  int32_t *e = NULL, ne = 0;
  CHECK_OK(mx_molmo2_expand_prompt(&kTokens, ids, k, grids, 1, &e, &ne));
  CHECK_MSG(ne == n && e && memcmp(e, want, sizeof *e * (size_t)n) == 0,
            "the expanded prompt (%d ids) is not transformers' (%d)", ne, n);
  free(e);
  // Without column tokens: 2 x 2 + 3 x 3 patches and the four start / end tokens.
  mx_molmo2_prompt_t p = kTokens;
  p.col_tokens = false;
  CHECK_OK(mx_molmo2_expand_prompt(&p, ids, k, grids, 1, &e, &ne));
  CHECK(ne == k - 1 + 4 + 9 + 4);
  free(e);
  // Column tokens on the crops only, and <im_start> for the global view too.
  p.col_tokens = true, p.single_crop_col_tokens = 0, p.single_crop_start = false;
  CHECK_OK(mx_molmo2_expand_prompt(&p, ids, k, grids, 1, &e, &ne));
  int32_t at = 7;  // after the bos and "Look: "
  CHECK(ne == k - 1 + 4 + 9 + 3 + 4 && e && e[at] == kTokens.start && e[at + 4] == kTokens.patch &&
        e[at + 5] == kTokens.end && e[at + 6] == kTokens.start && e[at + 10] == kTokens.col);
  free(e);
  EXPECT_ERR(mx_molmo2_expand_prompt(&kTokens, ids, k, grids, 2, &e, &ne),
             "the prompt has 1 image placeholder (id 264) for 2 images");
  grids[0][3] = 0;
  EXPECT_ERR(mx_molmo2_expand_prompt(&kTokens, ids, k, grids, 1, &e, &ne),
             "image 0: image_grids [2, 2, 3, 0]");
  free(want);
}

// olmo: the molmo2-olmo checkpoint (q/k norms over whole projections, norm_after).
static void check_fixture(const char *name, bool olmo) {
  char dir[8192], path[8300];
  snprintf(dir, sizeof dir, "%s/families/%s", g_data, name);
  snprintf(path, sizeof path, "%s/vision_reference.json", dir);
  cJSON *json = read_json(path);
  CHECK_MSG(json != NULL, "cannot read %s", path);
  if (!json) return;
  if (!olmo) check_prompt(json);
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(dir, &m));
  if (m) {
    const mx_model_config_t *c = &m->config;
    CHECK(c->vocab_size == 259 && c->extra_vocab_size == 9 && c->head_dim == 16 &&
          c->num_kv_heads == 2 && c->qk_norm_flat == olmo && c->norm_after == olmo &&
          !c->tie_word_embeddings);
    check_text(m, json, "interp");
    check_text(m, json, "cpu");
  }
  mx_model_free(m);
  cJSON_Delete(json);
}

static mx_status_t parse_text(const char *text, mx_model_config_t *cfg) {
  char json[1024];
  snprintf(json, sizeof json, "{\"model_type\": \"molmo2\", \"text_config\": {%s}}", text);
  return mx_config_parse(json, strlen(json), NULL, 0, "config.json", cfg);
}

// Molmo2TextConfig's defaults (Molmo2-8B's text model), its aliases, and refusals.
static void check_configs(void) {
  mx_model_config_t cfg;
  CHECK_OK(parse_text("", &cfg));
  CHECK(cfg.vocab_size == 151936 && cfg.extra_vocab_size == 128 && cfg.hidden_size == 4096 &&
        cfg.num_layers == 36 && cfg.num_heads == 32 && cfg.num_kv_heads == 8 &&
        cfg.head_dim == 128 && cfg.intermediate_size == 12288 && cfg.rms_norm_eps == 1e-6 &&
        cfg.rope_theta == 10000.0 && !cfg.qk_norm_flat && !cfg.norm_after &&
        !cfg.tie_word_embeddings && mx_config_input_vocab(&cfg) == 151936 + 128);
  CHECK_OK(
      parse_text("\"qk_norm_type\": \"olmo\", \"norm_after\": true, \"layer_norm_eps\": 1e-5, "
                 "\"additional_vocab_size\": 0",
                 &cfg));
  CHECK(cfg.qk_norm_flat && cfg.norm_after && cfg.rms_norm_eps == 1e-5 &&
        cfg.extra_vocab_size == 0);
  // Without scaling both RoPE tables are the same: any rope_scaling_layers is accepted.
  CHECK_OK(parse_text("\"num_hidden_layers\": 2, \"rope_scaling_layers\": [1]", &cfg));
  mx_test_config_error(
      "{\"model_type\": \"molmo2\", \"text_config\": {\"qk_norm_type\": \"gemma\"}}",
      "text_config.qk_norm_type 'gemma' is not supported");
  mx_test_config_error("{\"model_type\": \"molmo2\", \"text_config\": {\"qkv_bias\": true}}",
                       "attention_bias (qkv_bias) true is not supported");
  mx_test_config_error(
      "{\"model_type\": \"molmo2\", \"text_config\": {\"num_hidden_layers\": 2, "
      "\"rope_scaling_layers\": [1], \"rope_parameters\": {\"rope_type\": \"linear\", "
      "\"factor\": 2.0, \"rope_theta\": 10000.0}}}",
      "rope_scaling_layers naming only some layers of a scaled RoPE");
  mx_test_config_error(
      "{\"model_type\": \"molmo2\", \"text_config\": {\"additional_vocab_size\": -1}}",
      "additional_vocab_size -1 is out of range");
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  snprintf(g_data, sizeof g_data, "%s", data ? data : "tests/data");
  check_fixture("molmo2", false);
  check_fixture("molmo2-olmo", true);
  check_configs();
  return mx_test_finish();
}
