// Qwen3-VL against transformers (tests/data/families/qwen3_vl, written by
// tools/vlm/make_qwen3_vl_fixture.py with transformers' own modeling and processor classes): the
// committed photograph preprocessed by src/image (451 x 300 -> 128 x 96 with patch 16: a 6 x 8
// patch grid, h != w), the @vision features built for that grid — the main merger's and both
// DeepStack mergers' (after blocks 0 and 2), with the 4 x 4 learned position table resampled to
// the grid — within 1e-4 on the reference interpreter and the cpu runtime, and the cpu plan of
// @vision step-wise with fused kernels; the prompt with the image through a session on both
// backends (the DeepStack rows added after text layers 0 and 1, interleaved M-RoPE positions
// equal to transformers', every position's logits within 1e-4 one token per call and after a
// chunked prefill that cuts the image, the 16 greedy ids decoded at the shifted positions, a
// rewind) and a text-only prompt; video-like input and bad grids refused. Then the config's
// defaults and refusals.
#include <math.h>
#include <stdio.h>

#include "mlxcel/cpu_plan.h"
#include "mlxcel/session.h"
#include "test_vlm_qwen.h"

// @vision for the photograph's grid on both executors against the features; the cpu plan runs
// every linear as a GEMM and every attention, norm and RoPE with its fused kernel.
static void check_vision(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px) {
  const mx_vision_config_t *v = &m->config.vision;
  mx_module_t *mod = NULL;
  mx_func_t *f = build_vision(m, px, &mod);
  if (!f) return;
  int32_t N = cJSON_GetObjectItem(json, "n_image_tokens")->valueint;
  int64_t W = mx_vision_feature_width(&m->config);
  CHECK(W == 3 * (int64_t)m->config.hidden_size);
  int64_t fd[3] = {1, N, W};
  mx_type_t ft = mx_type_tensor(MX_ELEM_F32, 3, fd);
  CHECK(f->n_results == 1 && mx_type_equal(&f->result_types[0], &ft));
  mx_tensor_t *args = vision_args(m, f, px);
  mx_tensor_t res;
  memset(&res, 0, sizeof res);
  CHECK_OK(mx_interp_run(mod, f, args, f->body->n_args, &res, NULL));
  if (res.data) {
    double d = feature_diff(m, json, (const float *)res.data, N);
    CHECK_MSG(d <= kTol, "interp: image features differ by %g", d);
  }
  mx_tensor_free(&res);

  mx_cpu_compile_opts_t o = {.args = args};
  mx_cpu_plan_t *plan = NULL;
  CHECK_OK(mx_cpu_compile(mod, f, &o, &plan));
  if (plan) {
    mx_tensor_t out;
    CHECK_OK(mx_tensor_alloc(&out, &ft));
    CHECK_OK(mx_cpu_plan_run(plan, NULL, args, f->body->n_args, &out));
    double d = feature_diff(m, json, (const float *)out.data, N);
    CHECK_MSG(d <= kTol, "cpu: image features differ by %g", d);
    mx_tensor_free(&out);
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_plan_describe(plan, &sb);
    const char *s = sb.data ? sb.data : "";
    // Per block q, k, v, proj, fc1, fc2; the patch embedding; two per merger.
    int32_t L = v->num_layers, nm = 1 + v->n_deepstack;
    int32_t gemm = mx_test_count(s, "fast stablehlo.dot_general (dot_general->gemm"),
            attn = mx_test_count(s, "fast mx.attention"),
            norm = mx_test_count(s, "fast mx.rms_norm"),
            rope = mx_test_count(s, "fast mx.rope (mx.rope)"),
            tables = mx_test_count(s, "fast mx.rope (mx.rope cos/sin table)");
    CHECK_MSG(gemm == 1 + 6 * L + 2 * nm && attn == L && norm == 2 * L + nm && rope == 4 * L &&
                  tables == 2 && !strstr(s, "whole function"),
              "%d GEMMs, %d attentions, %d norms, %d ropes, %d tables in the @vision plan:\n%s",
              gemm, attn, norm, rope, tables, s);
    mx_strbuf_free(&sb);
    mx_cpu_plan_destroy(plan);
  }
  free(args);
  mx_module_destroy(mod);
}

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

// A grid the merger cannot merge is refused naming it.
static void check_bad_grid(const mx_model_t *m) {
  mx_graph_opts_t go = {
      .ctx = 64, .prefill_len = 4, .media = true, .vision_grid_h = 6, .vision_grid_w = 5};
  mx_module_t *mod = NULL;
  mx_status_t st = mx_model_build_graph(&m->config, m->ckpt, &go, &mod);
  CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "6 x 5 patch grid") != NULL);
  mx_module_destroy(mod);
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
      check_vision(m, json, &px);
      check_room(m, &px);
      check_image(m, json, &px, "interp");
      check_image(m, json, &px, "cpu");
    }
    mx_pixels_free(&px);
    check_text(m, json, "interp");
    check_text(m, json, "cpu");
    check_bad_grid(m);
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
