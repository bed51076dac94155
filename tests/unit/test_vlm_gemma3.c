// Gemma 3's vision path against transformers (tests/data/families/gemma3_vlm, written by
// tools/vlm/make_gemma3_fixture.py with transformers' own Gemma3ForConditionalGeneration and
// Gemma3Processor): the config as transformers 5 writes it (rope_parameters nested per layer
// type), the committed photograph preprocessed by src/image to the processor's pixels, the
// SigLIP tower and the pooled projector's features within 1e-4 on the reference interpreter and
// the cpu runtime (through a session, and the cpu plan of @vision step by step with its GEMMs
// and fused kernels), and the refusals: prompts with images (the image-block mask is not there
// yet), a gemma3 checkpoint without vision_config, configs the family refuses.
#include <math.h>
#include <stdio.h>

#include "mlxcel/cpu_plan.h"
#include "mlxcel/image.h"
#include "mlxcel/session.h"
#include "mx_test_vlm.h"
#include "session/graph_binding.h"
#include "test_graph_runner.h"

static const double kTol = 1e-4;

static char g_data[4096];

// The features through a session's tower on `backend`; then a prompt with them is refused
// (until @prefill_media takes the image-block mask) rather than run causally.
static void check_session(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                          const char *backend) {
  const mx_model_config_t *c = &m->config;
  int32_t H = c->hidden_size, N = c->vision.tokens_per_image;
  mx_session_opts_t so = {.backend = backend, .ctx = 64};
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  if (!s) return;
  float *feats = malloc(sizeof(float) * (size_t)N * (size_t)H);
  int64_t npx = px->shape[0] * px->shape[1] * px->shape[2];
  CHECK_OK(mx_session_vision(s, px->data, npx, feats, (int64_t)N * H));
  double d = max_diff_rows(feats, cJSON_GetObjectItem(json, "image_features"), 0, N, H);
  CHECK_MSG(d <= kTol, "%s: image features differ by %g", backend, d);
  printf("vlm_gemma3: %s features max|d| %.3g\n", backend, d);
  int32_t id = c->vision.image_token_id;
  mx_status_t st = mx_session_prefill_media(s, &id, feats, 1);
  CHECK(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "image-block mask") != NULL);
  free(feats);
  mx_session_destroy(s);
}

// The cpu runtime runs the tower step by step: the patch embedding and 6 linears per layer as
// packed GEMMs, every attention and norm (2 per layer, post_layernorm, the projector's RMSNorm)
// with its fused kernel. The projection (x . W of a [D, hidden] weight, a small share of the
// tower's work) and the pool's sums run as interpreter kernels inside the plan.
static void check_vision_plan(const mx_model_t *m) {
  mx_strbuf_t sb;
  mx_test_vision_plan(m, &sb);
  const char *d = sb.data ? sb.data : "";
  int32_t L = m->config.vision.layers_run;
  int32_t gemm = mx_test_count(d, "fast stablehlo.dot_general (dot_general->gemm"),
          attn = mx_test_count(d, "fast mx.attention"), norm = mx_test_count(d, "fast mx.rms_norm");
  CHECK_MSG(gemm == 1 + 6 * L && attn == L && norm == 2 + 2 * L && !strstr(d, "whole function"),
            "%d GEMMs, %d attentions, %d norms in the @vision plan:\n%s", gemm, attn, norm, d);
  mx_strbuf_free(&sb);
}

static void check_fixture(void) {
  char dir[8192], path[8300];
  snprintf(dir, sizeof dir, "%s/families/gemma3_vlm", g_data);
  snprintf(path, sizeof path, "%s/vision_reference.json", dir);
  cJSON *json = read_json(path);
  CHECK_MSG(json != NULL, "cannot read %s", path);
  if (!json) return;
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(dir, &m));
  if (m) {
    const mx_model_config_t *c = &m->config;
    const mx_vision_config_t *v = &c->vision;
    // transformers 5's nested rope_parameters: each layer type's base.
    CHECK(c->rope_theta == 1000000.0 && c->rope_local_base_freq == 10000.0 &&
          c->rope_scaling.kind == MX_ROPE_SCALING_NONE);
    CHECK(c->layer_sliding[0] && !c->layer_sliding[1] && c->sliding_window == 24);
    CHECK(v->present && v->kind == MX_VISION_SIGLIP && v->tokens_per_image == 16 &&
          v->layers_run == 2 && strcmp(v->hidden_act, "gelu_tanh") == 0);
    CHECK(v->image_token_id == cJSON_GetObjectItem(json, "image_token_index")->valueint &&
          v->vision_start_token_id == cJSON_GetObjectItem(json, "boi_token_index")->valueint &&
          v->vision_end_token_id == cJSON_GetObjectItem(json, "eoi_token_index")->valueint);
    mx_pixels_t px = {0};
    if (mx_test_vlm_pixels(m, g_data, json, &px)) {
      check_session(m, json, &px, "interp");
      check_session(m, json, &px, "cpu");
    }
    mx_pixels_free(&px);
    check_vision_plan(m);
  }
  mx_model_free(m);
  cJSON_Delete(json);
}

// Gemma 3 4B's layout (its released config's fields, transformers 5's nested rope_parameters
// with the full layers' linear scaling), a config without vision_config (text only), refusals.
static void check_configs(void) {
  const char *g4b =
      "{\"model_type\": \"gemma3\", \"mm_tokens_per_image\": 256, \"text_config\": {"
      "\"hidden_size\": 2560, \"intermediate_size\": 10240, \"num_hidden_layers\": 34, "
      "\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"rope_parameters\": {"
      "\"full_attention\": {\"rope_type\": \"linear\", \"factor\": 8.0, \"rope_theta\": "
      "1000000.0}, \"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": "
      "10000.0}}}, \"vision_config\": {\"hidden_size\": 1152, \"image_size\": 896, "
      "\"intermediate_size\": 4304, \"num_attention_heads\": 16, \"num_hidden_layers\": 27, "
      "\"patch_size\": 14, \"vision_use_head\": false}}";
  mx_model_config_t cfg;
  CHECK_OK(mx_config_parse(g4b, strlen(g4b), NULL, 0, "config.json", &cfg));
  CHECK(cfg.rope_scaling.kind == MX_ROPE_SCALING_LINEAR && cfg.rope_scaling.factor == 8.0 &&
        cfg.rope_theta == 1000000.0 && cfg.rope_local_base_freq == 10000.0);
  CHECK(cfg.vision.present && cfg.vision.tokens_per_image == 256 &&
        cfg.vision.image_token_id == 262144 && cfg.vision.vision_start_token_id == 255999 &&
        cfg.vision.vision_end_token_id == 256000 && cfg.vision.layer_norm_eps == 1e-6);
  // Without vision_config (the text part repackaged, as test_families_layouts does): text only.
  const char *text = "{\"model_type\": \"gemma3\", \"text_config\": {\"num_hidden_layers\": 2}}";
  CHECK_OK(mx_config_parse(text, strlen(text), NULL, 0, "config.json", &cfg));
  CHECK(!cfg.vision.present && cfg.rope_local_base_freq == 10000.0);
  // The sliding layers' base from the legacy key when the nested entry has none.
  const char *legacy =
      "{\"model_type\": \"gemma3_text\", \"rope_local_base_freq\": 5000.0, \"rope_parameters\": "
      "{\"full_attention\": {\"rope_type\": \"default\"}, \"sliding_attention\": "
      "{\"rope_type\": \"default\"}}}";
  CHECK_OK(mx_config_parse(legacy, strlen(legacy), NULL, 0, "config.json", &cfg));
  CHECK(cfg.rope_local_base_freq == 5000.0 && cfg.rope_theta == 1000000.0);
  mx_test_config_error(
      "{\"model_type\": \"gemma3_text\", \"rope_parameters\": {\"sliding_attention\": "
      "{\"rope_type\": \"linear\", \"factor\": 2.0}}}",
      "rope_parameters.sliding_attention.rope_type 'linear' is not supported for model_type "
      "'gemma3'");
  mx_test_config_error(
      "{\"model_type\": \"gemma3\", \"mm_tokens_per_image\": 15, \"vision_config\": "
      "{\"image_size\": 64, \"patch_size\": 8}}",
      "mm_tokens_per_image (15) must be the square of a divisor of the patch grid's side (8)");
  mx_test_config_error(
      "{\"model_type\": \"gemma3\", \"mm_tokens_per_image\": 9, \"vision_config\": "
      "{\"image_size\": 64, \"patch_size\": 8}}",
      "mm_tokens_per_image (9)");
  mx_test_config_error(
      "{\"model_type\": \"gemma3\", \"vision_config\": {\"model_type\": \"clip_vision_model\"}}",
      "vision_config.model_type 'clip_vision_model' is not supported (supported: "
      "siglip_vision_model)");
  mx_test_config_error(
      "{\"model_type\": \"gemma3\", \"vision_config\": {\"image_size\": 896, \"patch_size\": 14, "
      "\"hidden_act\": \"quick_gelu\"}}",
      "vision_config.hidden_act 'quick_gelu' is not supported (supported: gelu_pytorch_tanh)");
  mx_test_config_error(
      "{\"model_type\": \"gemma3\", \"image_token_index\": 300000, \"vision_config\": "
      "{\"image_size\": 896, \"patch_size\": 14}}",
      "image_token_index (300000) is outside the text vocabulary (262208)");
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  snprintf(g_data, sizeof g_data, "%s", data ? data : "tests/data");
  check_fixture();
  check_configs();
  return mx_test_finish();
}
