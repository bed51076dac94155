// Qwen2-VL and Qwen2.5-VL against transformers (tests/data/families/qwen2_vl, qwen2_5_vl, written
// by tools/vlm/make_qwen2_vl_fixtures.py with transformers' own modeling and processor classes):
// the committed photograph preprocessed by src/image (451 x 300 -> a 6 x 8 patch grid, h != w),
// the @vision features built for that grid within 1e-4 on the reference interpreter and the cpu
// runtime (Qwen2.5-VL: uneven windows and one full-attention block), the cpu plan of @vision
// step-wise with fused kernels; the prompt with the image through the session (M-RoPE positions
// equal to transformers', every position's logits within 1e-4, the 16 greedy ids decoded at
// the shifted positions) and a text-only prompt (equal M-RoPE positions) on both backends; a cpu
// session's tower on the interpreter (vision_backend) and the batch's refusal of images. Then
// the errors: grids that are not multiples of the merge size, video-like pixel counts, image
// runs that do not fit the grids, configs the family refuses.
#include <math.h>
#include <stdio.h>

#include "mlxcel/batch.h"
#include "mlxcel/cpu_plan.h"
#include "mlxcel/image.h"
#include "mlxcel/session.h"
#include "test_vlm_qwen.h"

static const double kTol = 1e-4;

// @vision for the photograph's grid on both executors against the features; the cpu plan runs
// every linear as a GEMM and every attention, norm and RoPE with its fused kernel, step by step
// (the small glue ops, as in LLaVA's tower, may use interpreter kernels).
static void check_vision(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                         int32_t n_windows) {
  const mx_vision_config_t *v = &m->config.vision;
  mx_module_t *mod = NULL;
  mx_func_t *f = build_vision(m, px, &mod);
  if (!f) return;
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
    int32_t gemm = mx_test_count(s, "fast stablehlo.dot_general (dot_general->gemm"),
            attn = mx_test_count(s, "fast mx.attention"),
            norm = mx_test_count(s, "fast mx.rms_norm"),
            rope = mx_test_count(s, "fast mx.rope (mx.rope)"),
            tables = mx_test_count(s, "fast mx.rope (mx.rope cos/sin table)");
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
    // The fixed-size entry points are LLaVA's: refused, naming the ones to use.
    float px[4] = {0}, f[4];
    mx_status_t st = mx_session_vision(s, px, 4, f, 4);
    CHECK(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "mx_session_vision_grid") != NULL);
  }
  free(all);
  free(ids);
  free(greedy);
  mx_session_destroy(s);
}

// The prompt with its image: M-RoPE positions as get_rope_index, the features through the
// session, every position's logits one token at a time and after a chunked prefill (chunk 8
// cuts the image's tokens), the 16 greedy ids (decoding at the rope_delta-shifted positions).
static void check_image(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                        const char *backend) {
  const char *type = m->config.model_type;
  int32_t n = 0, ng = 0, V = m->config.vocab_size, H = m->config.hidden_size;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "greedy_ids"), &ng);
  const cJSON *logits = cJSON_GetObjectItem(json, "logits");
  const cJSON *want_pos = cJSON_GetObjectItem(json, "mrope_position_ids");
  int32_t delta = cJSON_GetObjectItem(json, "rope_delta")->valueint;
  int32_t grid[2] = {(int32_t)px->grid_thw[1], (int32_t)px->grid_thw[2]};
  int32_t N = grid[0] * grid[1] / 4, *pos = malloc(sizeof(int32_t) * 3 * (size_t)n);
  int64_t next = 0;
  CHECK_OK(mx_mrope_positions(&m->config, ids, n, grid, 1, 0, pos, &next));
  int32_t bad = 0;
  for (int32_t r = 0; r < 3; r++)
    for (int32_t i = 0; i < n; i++)
      bad += pos[r * n + i] != cJSON_GetArrayItem(cJSON_GetArrayItem(want_pos, r), i)->valueint;
  CHECK_MSG(bad == 0 && next == n + delta, "%s: %d M-RoPE positions differ, next %lld", type, bad,
            (long long)next);
  // A run of image tokens that does not fit the grid.
  int32_t wrong[2] = {grid[0], grid[1] + 2};
  mx_status_t st = mx_mrope_positions(&m->config, ids, n, wrong, 1, 0, pos, &next);
  CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "needs 15") != NULL);
  st = mx_mrope_positions(&m->config, ids, n, grid, 2, 0, pos, &next);
  CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "for 2 images") != NULL);
  CHECK_OK(mx_mrope_positions(&m->config, ids, n, grid, 1, 0, pos, &next));

  mx_session_opts_t so = {.backend = backend, .ctx = 96, .prefill_chunk = 8};
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  float *feats = malloc(sizeof(float) * (size_t)N * (size_t)H);
  float *media = calloc((size_t)n * (size_t)H, sizeof(float));
  int64_t npx = px->shape[0] * px->shape[1];
  if (s) {
    CHECK_OK(mx_session_vision_grid(s, px->data, npx, grid[0], grid[1], feats, (int64_t)N * H));
    double fd = max_diff_rows(feats, cJSON_GetObjectItem(json, "image_features"), 0, N, H);
    CHECK_MSG(fd <= kTol, "%s %s: session image features differ by %g", type, backend, fd);
    for (int32_t i = 0, k = 0; i < n; i++)
      if (ids[i] == m->config.vision.image_token_id)
        memcpy(media + (size_t)i * H, feats + (size_t)(k++) * H, sizeof(float) * (size_t)H);
    // Video-like input (two frames' rows for one grid) and grids the merger cannot take.
    st = mx_session_vision_grid(s, px->data, 2 * npx, grid[0], grid[1], feats, (int64_t)N * H);
    CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "video") != NULL);
    st = mx_session_vision_grid(s, px->data, npx, grid[0] + 1, grid[1], feats, (int64_t)N * H);
    CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "multiples") != NULL);

    double ld = 0;  // one token per call: every position's logits
    int32_t one[3];
    for (int32_t i = 0; i < n; i++) {
      for (int32_t r = 0; r < 3; r++) one[r] = pos[r * n + i];
      st = mx_session_prefill_mrope(s, ids + i, media + (size_t)i * H, one, 1);
      CHECK_MSG(st == MX_OK, "%s %s: position %d: %s", type, backend, i, mx_error_message());
      if (st) break;
      double d = max_diff_rows(mx_session_logits(s), logits, i, 1, V);
      if (d > ld) ld = d;
    }
    CHECK_MSG(ld <= kTol, "%s %s: prompt logits (one token per call) differ by %g", type, backend,
              ld);
    mx_session_reset(s);
    CHECK_OK(mx_session_prefill_mrope(s, ids, media, pos, n));
    double lastd = max_diff_rows(mx_session_logits(s), logits, n - 1, 1, V);
    CHECK_MSG(lastd <= kTol, "%s %s: last prompt logits differ by %g", type, backend, lastd);
    CHECK(mx_session_rope_next(s) == n + delta);
    int32_t same = 0;
    for (int32_t i = 0; i < ng; i++) {
      int32_t id = argmax(mx_session_logits(s), V);
      same += id == greedy[i];
      if (mx_session_decode(s, id) != MX_OK) break;
    }
    CHECK_MSG(same == ng, "%s %s: %d of %d greedy ids equal", type, backend, same, ng);
    CHECK(mx_session_rope_next(s) == n + ng + delta);
    // Rewinding into the text keeps the shifted positions: the last greedy step again.
    CHECK_OK(mx_session_rewind(s, n + ng - 2));
    CHECK_OK(mx_session_decode(s, greedy[ng - 2]));
    CHECK(argmax(mx_session_logits(s), V) == greedy[ng - 1]);
  }
  free(feats);
  free(media);
  free(pos);
  free(ids);
  free(greedy);
  mx_session_destroy(s);
}

// vision_backend: the tower of a cpu session runs on the interpreter (the interpreter's features
// bit for bit, through vision_grid on the tower-only state), xla is refused naming it; the batch
// (and so the server), which has no M-RoPE entries, refuses Qwen images saying so.
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
  mx_session_t *bad = NULL;
  so.vision_backend = "xla";
  mx_status_t st = mx_session_create(m, &so, &bad);
  CHECK(st == MX_ERR_UNSUPPORTED && !bad &&
        strstr(mx_error_message(), "the xla backend cannot run the vision tower") != NULL);
  mx_batch_opts_t bo = {.backend = "cpu", .ctx = 64, .n_slots = 2};
  CHECK_OK(mx_batch_create(m, &bo, &b));
  if (b) {
    st = mx_batch_vision(b, px->data, npx, got, nf);
    CHECK_MSG(st == MX_ERR_UNSUPPORTED &&
                  strstr(mx_error_message(), "takes images in a session only") != NULL,
              "%s: batch vision: %s", m->config.model_type, st ? mx_error_message() : "ok");
  }
out:
  free(want);
  free(got);
  mx_batch_destroy(b);
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
    if (load_pixels(m, json, &px)) {
      check_vision(m, json, &px, n_windows);
      check_image(m, json, &px, "interp");
      check_image(m, json, &px, "cpu");
      check_vision_backend(m, &px);
    }
    mx_pixels_free(&px);
    check_text(m, json, "interp");
    check_text(m, json, "cpu");
    check_bad_grid(m);
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
