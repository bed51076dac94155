// Qwen2-VL and Qwen2.5-VL against transformers (tests/data/families/qwen2_vl, qwen2_5_vl, written
// by tools/vlm/make_qwen2_vl_fixtures.py with transformers' own modeling and processor classes):
// the committed photograph preprocessed by src/image (451 x 300 -> a 6 x 8 patch grid, h != w),
// the @vision features built for that grid within 1e-4 on the reference interpreter and the cpu
// runtime (Qwen2.5-VL: uneven windows and one full-attention block), the cpu plan of @vision
// step-wise with fused kernels; the prompt with the image through the session (M-RoPE positions
// equal to transformers', every position's logits within 1e-4, the 16 greedy ids decoded at
// the shifted positions) and a text-only prompt (equal M-RoPE positions) on both backends, the
// image prompt through a session and a batch on the xla backend too (the PJRT CPU plugin of the
// test environment); a cpu session's tower on the interpreter or xla (vision_backend) and the
// batch's refusal of images. Then
// the errors: grids that are not multiples of the merge size, video-like pixel counts, image
// runs that do not fit the grids, configs the family refuses.
#include <math.h>
#include <stdio.h>

#include "mlxcel/batch.h"
#include "mlxcel/cpu_plan.h"
#include "mlxcel/image.h"
#include "mlxcel/session.h"
#include "test_vlm_qwen.h"

// vision_backend: the tower of a cpu session runs on the interpreter (the interpreter's features
// bit for bit, through vision_grid on the tower-only state) or on xla (within 1e-4); a backend
// without the tower is refused naming it; a cpu batch's interp tower (the server's
// --vision-backend) gives the same features.
static void check_vision_backend(const mx_model_t *m, const mx_pixels_t *px) {
  const int32_t gh = (int32_t)px->grid_thw[1], gw = (int32_t)px->grid_thw[2];
  const int64_t nf = (int64_t)gh * gw / 4 * m->config.hidden_size,
                npx = px->shape[0] * px->shape[1];
  float *want = calloc((size_t)nf, sizeof(float)), *got = calloc((size_t)nf, sizeof(float));
  mx_session_opts_t so = {.backend = "interp", .ctx = 64};
  mx_session_t *s = NULL;
  mx_batch_t *b = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  if (!s || !want || !got) goto out;
  CHECK_OK(mx_session_vision_grid(s, px->data, npx, gh, gw, want, nf));
  mx_session_destroy(s);
  s = NULL;
  so = (mx_session_opts_t){.backend = "cpu", .ctx = 64, .vision_backend = "interp"};
  CHECK_OK(mx_session_create(m, &so, &s));
  if (s) CHECK_OK(mx_session_vision_grid(s, px->data, npx, gh, gw, got, nf));
  CHECK_MSG(s && memcmp(want, got, sizeof(float) * (size_t)nf) == 0,
            "%s: cpu session, interp tower: features differ from the interpreter's",
            m->config.model_type);
  mx_session_destroy(s);
  s = NULL;
  so.vision_backend = "xla";
  mx_test_backend_opts("xla", &so.backend_opts);
  CHECK_OK(mx_session_create(m, &so, &s));
  memset(got, 0, sizeof(float) * (size_t)nf);
  if (s) CHECK_OK(mx_session_vision_grid(s, px->data, npx, gh, gw, got, nf));
  double d = 0;
  for (int64_t i = 0; i < nf; i++) d = fmax(d, fabs((double)want[i] - (double)got[i]));
  CHECK_MSG(s && d <= kTol, "%s: cpu session, xla tower: features differ by %g",
            m->config.model_type, d);
  mx_session_t *bad = NULL;
  so.vision_backend = mx_test_text_only_backend();
  mx_status_t st = mx_session_create(m, &so, &bad);
  CHECK(st == MX_ERR_UNSUPPORTED && !bad &&
        strstr(mx_error_message(), "the textonly backend cannot run the vision tower") != NULL);
  mx_batch_opts_t bo = {.backend = "cpu", .ctx = 64, .n_slots = 2, .vision_backend = "interp"};
  CHECK_OK(mx_batch_create(m, &bo, &b));
  memset(got, 0, sizeof(float) * (size_t)nf);
  if (b) CHECK_OK(mx_batch_vision_grid(b, px->data, npx, gh, gw, got, nf));
  CHECK_MSG(b && memcmp(want, got, sizeof(float) * (size_t)nf) == 0,
            "%s: cpu batch, interp tower: features differ from the interpreter's",
            m->config.model_type);
out:
  free(want);
  free(got);
  mx_batch_destroy(b);
  mx_session_destroy(s);
}

static void check_family(const char *type, int32_t n_windows) {
  char dir[8192], path[8300];
  snprintf(dir, sizeof dir, "%s/families/%s", g_data, type);
  snprintf(path, sizeof path, "%s/vision_reference.json", dir);
  cJSON *json = read_json(path);
  CHECK_MSG(json != NULL, "cannot read %s", path);
  if (!json) return;
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(dir, &m));
  if (m) {
    const mx_model_config_t *c = &m->config;
    CHECK(c->vision.present &&
          c->vision.image_token_id == cJSON_GetObjectItem(json, "image_token_index")->valueint);
    CHECK(c->mrope_section[0] == 2 && c->mrope_section[1] == 3 && c->mrope_section[2] == 3);
    mx_pixels_t px = {0};
    if (load_pixels(m, json, &px)) {
      check_vision(m, json, &px, n_windows);
      check_image(m, json, &px, "interp");
      check_image(m, json, &px, "cpu");
      check_batch(m, json, &px, "interp");
      check_batch(m, json, &px, "cpu");
      check_image(m, json, &px, "xla");
      check_batch(m, json, &px, "xla");
      check_vision_backend(m, &px);
    }
    mx_pixels_free(&px);
    check_text(m, json, "interp");
    check_text(m, json, "cpu");
    check_bad_grid(m, 3, 8);
    // 20 x 20 patches: 10 x 10 merged units, 25 windows of Qwen2.5-VL's fixture (56 px).
    check_many_windows(m, 20, 20);
  }
  mx_model_free(m);
  cJSON_Delete(json);
}

// The flat layout of the released checkpoints (text fields at the top level, rope type
// "mrope"), and the refusals.
static void check_configs(void) {
  const char *flat =
      "{\"model_type\": \"qwen2_vl\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2, "
      "\"num_key_value_heads\": 2, \"num_hidden_layers\": 2, \"intermediate_size\": 128, "
      "\"vocab_size\": 300, \"image_token_id\": 290, \"vision_start_token_id\": 288, "
      "\"vision_end_token_id\": 289, "
      "\"rope_scaling\": {\"type\": \"mrope\", \"mrope_section\": [2, 3, 3]}, "
      "\"vision_config\": {\"depth\": 2, \"embed_dim\": 32, \"num_heads\": 4, "
      "\"hidden_size\": 64}}";
  mx_model_config_t cfg;
  CHECK_OK(mx_config_parse(flat, strlen(flat), NULL, 0, "config.json", &cfg));
  CHECK(cfg.vision.present && cfg.vision.kind == MX_VISION_QWEN2_VL && cfg.hidden_size == 64 &&
        cfg.rope_theta == 1000000.0 && cfg.mrope_section[2] == 3 &&
        cfg.vision.intermediate_size == 128 && cfg.vision.image_token_id == 290 &&
        cfg.eos_token_ids[0] == 151645);
  mx_test_config_error(
      "{\"model_type\": \"qwen2_vl\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2, "
      "\"vocab_size\": 300, \"image_token_id\": 290, \"vision_start_token_id\": 288, "
      "\"vision_end_token_id\": 289, "
      "\"rope_scaling\": {\"type\": \"mrope\", \"mrope_section\": [2, 3, 4]}, "
      "\"vision_config\": {\"hidden_size\": 64}}",
      "must sum to head_dim / 2 (8)");
  mx_test_config_error(
      "{\"model_type\": \"qwen2_5_vl\", \"text_config\": {\"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"vocab_size\": 300, "
      "\"rope_parameters\": {\"rope_type\": "
      "\"default\", \"mrope_section\": [2, 3, 3]}}, \"image_token_id\": 290, "
      "\"vision_start_token_id\": 288, \"vision_config\": {\"out_hidden_size\": 32}}",
      "vision_config.out_hidden_size (32) must equal the text model's hidden_size (64)");
  mx_test_config_error(
      "{\"model_type\": \"qwen2_vl\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2, "
      "\"vocab_size\": 300, \"rope_scaling\": {\"type\": \"mrope\", \"mrope_section\": [2, 3, "
      "3]}, \"vision_config\": {\"hidden_size\": 64}}",
      "image_token_id (151655) is outside the text vocabulary (300)");
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  snprintf(g_data, sizeof g_data, "%s", data ? data : "tests/data");
  // 6 x 8 patches = 3 x 4 merged units; Qwen2.5-VL's 2 x 2-unit windows: 2 x 2 of them.
  check_family("qwen2_vl", 1);
  check_family("qwen2_5_vl", 4);
  check_configs();
  return mx_test_finish();
}
