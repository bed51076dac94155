// Qwen3-VL against transformers (tests/data/families/qwen3_vl, written by
// tools/vlm/make_qwen3_vl_fixture.py with transformers' own modeling and processor classes): the
// committed photograph preprocessed by src/image (451 x 300 -> 128 x 96 with patch 16: a 6 x 8
// patch grid, h != w), the @vision features built for that grid — the main merger's and both
// DeepStack mergers' (after blocks 0 and 2), with the 4 x 4 learned position table resampled to
// the grid — within 1e-4 on the reference interpreter and the cpu runtime, and the cpu plan of
// @vision step-wise with fused kernels; the prompt with the image through a session on both
// backends and on the xla backend (the PJRT CPU plugin of the test environment; sessions and
// batches, within the same 1e-4) (the DeepStack rows added after text layers 0 and 1, interleaved
// M-RoPE positions equal to transformers', every position's logits within 1e-4 one token per call
// and after a chunked prefill that cuts the image, the 16 greedy ids decoded at the shifted
// positions, a rewind) and a text-only prompt; video-like input and bad grids refused. Then the
// config's defaults and refusals.
#include <math.h>
#include <stdio.h>

#include "mlxcel/cpu_plan.h"
#include "mlxcel/session.h"
#include "test_vlm_qwen.h"

// A feature buffer sized for the main features alone is refused: a row holds the DeepStack
// features too.
static void check_room(const mx_model_t *m, const mx_pixels_t *px) {
  int32_t gh = (int32_t)px->grid_thw[1], gw = (int32_t)px->grid_thw[2], N = gh * gw / 4;
  int64_t nf = (int64_t)N * m->config.hidden_size, npx = px->shape[0] * px->shape[1];
  mx_session_opts_t so = {.backend = "interp", .ctx = 64};
  mx_session_t *s = NULL;
  float *feats = malloc(sizeof(float) * (size_t)nf);
  CHECK_OK(mx_session_create(m, &so, &s));
  if (s && feats) {
    mx_status_t st = mx_session_vision_grid(s, px->data, npx, gh, gw, feats, nf);
    CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "need 2304") != NULL);
  }
  free(feats);
  mx_session_destroy(s);
}

static void check_fixture(void) {
  char dir[8192], path[8300];
  snprintf(dir, sizeof dir, "%s/families/qwen3_vl", g_data);
  snprintf(path, sizeof path, "%s/vision_reference.json", dir);
  cJSON *json = read_json(path);
  CHECK_MSG(json != NULL, "cannot read %s", path);
  if (!json) return;
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(dir, &m));
  if (m) {
    const mx_model_config_t *c = &m->config;
    const mx_vision_config_t *v = &c->vision;
    CHECK(v->present && v->kind == MX_VISION_QWEN3_VL &&
          v->image_token_id == cJSON_GetObjectItem(json, "image_token_index")->valueint);
    CHECK(c->mrope_interleaved && c->mrope_section[0] == 8 && c->mrope_section[1] == 4 &&
          c->mrope_section[2] == 4 && c->head_dim == 32 && c->rope_theta == 5000000.0);
    CHECK(v->n_deepstack == 2 && v->deepstack_layers[0] == 0 && v->deepstack_layers[1] == 2 &&
          v->num_position_embeddings == 16 && v->patch_size == 16 &&
          strcmp(v->hidden_act, "gelu_pytorch_tanh") == 0);
    CHECK(v->n_deepstack == cJSON_GetObjectItem(json, "n_deepstack")->valueint);
    mx_pixels_t px = {0};
    if (load_pixels(m, json, &px)) {
      check_vision(m, json, &px, 1);
      check_room(m, &px);
      check_image(m, json, &px, "interp");
      check_image(m, json, &px, "cpu");
      check_batch(m, json, &px, "interp");
      check_batch(m, json, &px, "cpu");
      check_image(m, json, &px, "xla");
      check_batch(m, json, &px, "xla");
    }
    mx_pixels_free(&px);
    check_text(m, json, "interp");
    check_text(m, json, "cpu");
    check_bad_grid(m, 6, 5);
  }
  mx_model_free(m);
  cJSON_Delete(json);
}

// A qwen3_vl config of a 64-wide text model whose vision_config holds `vision`.
static mx_status_t parse_with_vision(const char *vision, mx_model_config_t *cfg) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"model_type\": \"qwen3_vl\", \"text_config\": {\"hidden_size\": 64, "
           "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"vocab_size\": 300, "
           "\"num_hidden_layers\": 4}, \"image_token_id\": 290, \"vision_start_token_id\": 288, "
           "\"vision_end_token_id\": 289, \"vision_config\": {%s}}",
           vision);
  return mx_config_parse(json, strlen(json), NULL, 0, "config.json", cfg);
}

// Qwen3VLConfig's defaults (the 4B-class text fields given, the rest left out), and refusals.
static void check_configs(void) {
  mx_model_config_t cfg;
  CHECK_OK(parse_with_vision("\"out_hidden_size\": 64", &cfg));
  const mx_vision_config_t *v = &cfg.vision;
  CHECK(v->present && v->kind == MX_VISION_QWEN3_VL && cfg.head_dim == 128 &&
        cfg.rope_theta == 500000.0 && cfg.mrope_interleaved && cfg.mrope_section[0] == 24 &&
        cfg.mrope_section[1] == 20 && cfg.mrope_section[2] == 20 && !cfg.tie_word_embeddings);
  CHECK(v->num_layers == 27 && v->hidden_size == 1152 && v->intermediate_size == 4304 &&
        v->num_heads == 16 && v->patch_size == 16 && v->num_position_embeddings == 2304 &&
        v->n_deepstack == 3 && v->deepstack_layers[2] == 24 && v->rope_theta == 10000.0 &&
        strcmp(v->hidden_act, "gelu_pytorch_tanh") == 0);
  CHECK(mx_vision_feature_width(&cfg) == 4 * 64);
  EXPECT_ERR(
      parse_with_vision(
          "\"out_hidden_size\": 64, \"depth\": 4, \"deepstack_visual_indexes\": [1, 4]", &cfg),
      "deepstack_visual_indexes holds 4");
  EXPECT_ERR(parse_with_vision("\"out_hidden_size\": 32", &cfg),
             "vision_config.out_hidden_size (32) must equal the text model's hidden_size (64)");
  EXPECT_ERR(parse_with_vision("\"out_hidden_size\": 64, \"hidden_act\": \"relu\"", &cfg),
             "vision_config.hidden_act 'relu' is not supported");
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  snprintf(g_data, sizeof g_data, "%s", data ? data : "tests/data");
  check_fixture();
  check_configs();
  return mx_test_finish();
}
