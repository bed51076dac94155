// Qwen2-VL and Qwen2.5-VL against transformers (tests/data/families/qwen2_vl, qwen2_5_vl, written
// by tools/vlm/make_qwen2_vl_fixtures.py with transformers' own modeling and processor classes):
// the committed photograph preprocessed by src/image (451 x 300 -> a 6 x 8 patch grid, h != w),
// the @vision features built for that grid within 1e-4 on the reference interpreter and the cpu
// runtime (Qwen2.5-VL: uneven windows and one full-attention block), the cpu plan of @vision
// step-wise with fused kernels, and a text-only prompt (equal M-RoPE positions) on both backends:
// every position's logits within 1e-4 and 16 greedy ids equal. Then the errors: grids that are
// not multiples of the merge size, configs the family refuses.
#include <math.h>
#include <stdio.h>

#include "mlxcel/cpu_plan.h"
#include "mlxcel/image.h"
#include "mlxcel/session.h"
#include "test_graph_runner.h"

static const double kTol = 1e-4;

static char g_data[4096];

static int32_t argmax(const float *v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

static bool load_pixels(const mx_model_t *m, const cJSON *json, mx_pixels_t *px) {
  mx_image_proc_t proc;
  mx_image_t img = {0};
  char path[8192];
  snprintf(path, sizeof path, "%s/image/inputs/chelsea.png", g_data);
  CHECK_OK(mx_image_proc_load(m->dir, &proc));
  CHECK_OK(mx_image_load(path, NULL, &img, NULL));
  CHECK_OK(mx_image_preprocess(&proc, &img, px));
  mx_image_free(&img);
  if (!px->data) return false;
  const cJSON *shape = cJSON_GetObjectItem(json, "pixel_values_shape");
  const cJSON *thw = cJSON_GetObjectItem(json, "image_grid_thw");
  CHECK(px->rank == 2 && cJSON_GetArraySize(shape) == 2);
  for (int32_t i = 0; i < 2; i++) CHECK(px->shape[i] == cJSON_GetArrayItem(shape, i)->valueint);
  for (int32_t i = 0; i < 3; i++) CHECK(px->grid_thw[i] == cJSON_GetArrayItem(thw, i)->valueint);
  int32_t i = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, cJSON_GetObjectItem(json, "pixel_values_first")) {
    CHECK_NEAR(px->data[i], v->valuedouble, 1e-6);
    i++;
  }
  return true;
}

// The arguments of @vision: weights from the checkpoint, then the pixels.
static mx_tensor_t *vision_args(const mx_model_t *m, mx_func_t *f, const mx_pixels_t *px) {
  int32_t n = f->body->n_args;
  mx_tensor_t *args = calloc((size_t)n, sizeof *args);
  for (int32_t i = 0; i < n; i++) {
    mx_graph_arg_t info;
    CHECK_OK(mx_graph_arg_info(f, i, &info));
    const mx_type_t *t = mx_value_type(f, f->body->args[i]);
    args[i].type = *t;
    if (info.role == MX_ARG_PIXELS) {
      CHECK(mx_type_nbytes(t) == sizeof(float) * (size_t)(px->shape[0] * px->shape[1]));
      args[i].data = (uint8_t *)px->data;
      args[i].nbytes = mx_type_nbytes(t);
      continue;
    }
    const mx_weight_t *w = mx_checkpoint_find(m->ckpt, info.name);
    CHECK_MSG(w != NULL, "no tensor %s", info.name);
    if (!w) continue;
    args[i].data = (uint8_t *)w->data;
    args[i].nbytes = w->nbytes;
  }
  return args;
}

static int32_t count(const char *s, const char *what) {
  int32_t n = 0;
  for (const char *p = s; (p = strstr(p, what)) != NULL; p++) n++;
  return n;
}

// @vision for the photograph's grid on both executors against the features; the cpu plan runs
// every linear as a GEMM and every attention, norm and RoPE with its fused kernel, step by step
// (the small glue ops, as in LLaVA's tower, may use interpreter kernels).
static void check_vision(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                         int32_t n_windows) {
  const mx_vision_config_t *v = &m->config.vision;
  mx_graph_opts_t go = {.ctx = 64,
                        .prefill_len = 4,
                        .media = true,
                        .vision_grid_h = (int32_t)px->grid_thw[1],
                        .vision_grid_w = (int32_t)px->grid_thw[2]};
  mx_module_t *mod = NULL;
  CHECK_OK(mx_model_build_graph(&m->config, m->ckpt, &go, &mod));
  mx_func_t *f = mod ? mx_module_find_func(mod, "vision") : NULL;
  CHECK(f != NULL);
  if (!f) {
    mx_module_destroy(mod);
    return;
  }
  const cJSON *want = cJSON_GetObjectItem(json, "image_features");
  int32_t N = cJSON_GetArraySize(want), H = m->config.hidden_size;
  CHECK(N == cJSON_GetObjectItem(json, "n_image_tokens")->valueint);
  int64_t fd[3] = {1, N, H};
  mx_type_t ft = mx_type_tensor(MX_ELEM_F32, 3, fd);
  CHECK(f->n_results == 1 && mx_type_equal(&f->result_types[0], &ft));
  mx_tensor_t *args = vision_args(m, f, px);
  mx_tensor_t res;
  memset(&res, 0, sizeof res);
  CHECK_OK(mx_interp_run(mod, f, args, f->body->n_args, &res, NULL));
  if (res.data) {
    double d = max_diff_rows((const float *)res.data, want, 0, N, H);
    CHECK_MSG(d <= kTol, "%s interp: image features differ by %g", m->config.model_type, d);
  }
  mx_tensor_free(&res);

  mx_cpu_compile_opts_t o = {.args = args};
  mx_cpu_plan_t *plan = NULL;
  CHECK_OK(mx_cpu_compile(mod, f, &o, &plan));
  if (plan) {
    mx_tensor_t out;
    CHECK_OK(mx_tensor_alloc(&out, &ft));
    CHECK_OK(mx_cpu_plan_run(plan, NULL, args, f->body->n_args, &out));
    double d = max_diff_rows((const float *)out.data, want, 0, N, H);
    CHECK_MSG(d <= kTol, "%s cpu: image features differ by %g", m->config.model_type, d);
    mx_tensor_free(&out);
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_plan_describe(plan, &sb);
    const char *s = sb.data ? sb.data : "";
    // Per block: q, k, v, proj and two (Qwen2-VL) or three MLP linears; the patch embedding and
    // the merger's two. Attention: one per segment (Qwen2.5-VL's windowed blocks: n_windows).
    int32_t L = v->num_layers, n_full = 0;
    for (int32_t l = 0; l < L; l++) n_full += v->kind != MX_VISION_QWEN2_5_VL || v->layer_full[l];
    int32_t mlp = v->kind == MX_VISION_QWEN2_5_VL ? 3 : 2;
    int32_t gemm = count(s, "fast stablehlo.dot_general (dot_general->gemm"),
            attn = count(s, "fast mx.attention"), norm = count(s, "fast mx.rms_norm"),
            rope = count(s, "fast mx.rope (mx.rope)"),
            tables = count(s, "fast mx.rope (mx.rope cos/sin table)");
    int32_t want_attn = n_full + (L - n_full) * n_windows;
    CHECK_MSG(gemm == 3 + (4 + mlp) * L && attn == want_attn && norm == 1 + 2 * L &&
                  rope == 4 * L && tables == 2 && !strstr(s, "whole function"),
              "%s: %d GEMMs, %d attentions (want %d), %d norms, %d ropes, %d tables in the "
              "@vision plan:\n%s",
              m->config.model_type, gemm, attn, want_attn, norm, rope, tables, s);
    mx_strbuf_free(&sb);
    mx_cpu_plan_destroy(plan);
  }
  free(args);
  mx_module_destroy(mod);
}

// A text-only prompt: all three M-RoPE positions equal, the plain RoPE of @prefill / @decode.
static void check_text(const mx_model_t *m, const cJSON *json, const char *backend) {
  int32_t n = 0, ng = 0, V = m->config.vocab_size;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "text_prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "text_greedy_ids"), &ng);
  const cJSON *logits = cJSON_GetObjectItem(json, "text_logits");
  mx_session_opts_t so = {.backend = backend, .ctx = 64, .prefill_chunk = 8};
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  float *all = malloc(sizeof(float) * (size_t)n * (size_t)V);
  if (s) {
    CHECK_OK(mx_session_prefill(s, ids, n, all));
    double d = max_diff_rows(all, logits, 0, n, V);
    CHECK_MSG(d <= kTol, "%s %s: text prompt logits differ by %g", m->config.model_type, backend,
              d);
    int32_t same = 0;
    for (int32_t i = 0; i < ng; i++) {
      int32_t id = argmax(mx_session_logits(s), V);
      same += id == greedy[i];
      if (mx_session_decode(s, id) != MX_OK) break;
    }
    CHECK_MSG(same == ng, "%s %s: %d of %d greedy ids equal", m->config.model_type, backend, same,
              ng);
    // Images wait for @prefill_media's M-RoPE positions: refused, saying so.
    float px[4] = {0}, f[4];
    mx_status_t st = mx_session_vision(s, px, 4, f, 4);
    CHECK(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "M-RoPE positions") != NULL);
  }
  free(all);
  free(ids);
  free(greedy);
  mx_session_destroy(s);
}

// A grid the merger cannot merge is refused naming it.
static void check_bad_grid(const mx_model_t *m) {
  mx_graph_opts_t go = {
      .ctx = 64, .prefill_len = 4, .media = true, .vision_grid_h = 3, .vision_grid_w = 8};
  mx_module_t *mod = NULL;
  mx_status_t st = mx_model_build_graph(&m->config, m->ckpt, &go, &mod);
  CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "3 x 8 patch grid") != NULL);
  mx_module_destroy(mod);
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
    if (load_pixels(m, json, &px)) check_vision(m, json, &px, n_windows);
    mx_pixels_free(&px);
    check_text(m, json, "interp");
    check_text(m, json, "cpu");
    check_bad_grid(m);
  }
  mx_model_free(m);
  cJSON_Delete(json);
}

static void expect_config_error(const char *json, const char *needle) {
  mx_model_config_t cfg;
  mx_status_t st = mx_config_parse(json, strlen(json), NULL, 0, "config.json", &cfg);
  CHECK_MSG(st != MX_OK && strstr(mx_error_message(), needle) != NULL, "%s: got \"%s\"", json,
            st == MX_OK ? "ok" : mx_error_message());
}

// The flat layout of the released checkpoints (text fields at the top level, rope type
// "mrope"), and the refusals.
static void check_configs(void) {
  const char *flat =
      "{\"model_type\": \"qwen2_vl\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2, "
      "\"num_key_value_heads\": 2, \"num_hidden_layers\": 2, \"intermediate_size\": 128, "
      "\"vocab_size\": 300, \"image_token_id\": 290, \"vision_start_token_id\": 288, "
      "\"rope_scaling\": {\"type\": \"mrope\", \"mrope_section\": [2, 3, 3]}, "
      "\"vision_config\": {\"depth\": 2, \"embed_dim\": 32, \"num_heads\": 4, "
      "\"hidden_size\": 64}}";
  mx_model_config_t cfg;
  CHECK_OK(mx_config_parse(flat, strlen(flat), NULL, 0, "config.json", &cfg));
  CHECK(cfg.vision.present && cfg.vision.kind == MX_VISION_QWEN2_VL && cfg.hidden_size == 64 &&
        cfg.rope_theta == 1000000.0 && cfg.mrope_section[2] == 3 &&
        cfg.vision.intermediate_size == 128 && cfg.vision.image_token_id == 290 &&
        cfg.eos_token_ids[0] == 151645);
  expect_config_error(
      "{\"model_type\": \"qwen2_vl\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2, "
      "\"vocab_size\": 300, \"image_token_id\": 290, \"vision_start_token_id\": 288, "
      "\"rope_scaling\": {\"type\": \"mrope\", \"mrope_section\": [2, 3, 4]}, "
      "\"vision_config\": {\"hidden_size\": 64}}",
      "must sum to head_dim / 2 (8)");
  expect_config_error(
      "{\"model_type\": \"qwen2_5_vl\", \"text_config\": {\"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"vocab_size\": 300, "
      "\"rope_parameters\": {\"rope_type\": "
      "\"default\", \"mrope_section\": [2, 3, 3]}}, \"image_token_id\": 290, "
      "\"vision_start_token_id\": 288, \"vision_config\": {\"out_hidden_size\": 32}}",
      "vision_config.out_hidden_size (32) must equal the text model's hidden_size (64)");
  expect_config_error(
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
