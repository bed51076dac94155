// Helpers of the Qwen VLM tests (test_vlm_qwen2_vl.c, test_vlm_qwen3_vl.c): the committed
// photograph preprocessed as the fixture's processor did, @vision's arguments, the features
// against the reference, and the session checks of a prompt with the image and of a text-only
// prompt against transformers' logits and greedy ids.
#ifndef MX_TEST_VLM_QWEN_H
#define MX_TEST_VLM_QWEN_H

#include <math.h>

#include "mlxcel/batch.h"
#include "mlxcel/cpu_plan.h"
#include "mlxcel/image.h"
#include "mlxcel/session.h"
#include "mx_test_vlm.h"
#include "session/batch_state.h"
#include "session/session_internal.h"
#include "test_graph_runner.h"

static char g_data[4096];  // the test data folder (MX_TEST_DATA)

static inline int32_t argmax(const float *v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

// The photograph through the fixture's processor (mx_test_vlm_pixels), with its patch grid.
static inline bool load_pixels(const mx_model_t *m, const cJSON *json, mx_pixels_t *px) {
  if (!mx_test_vlm_pixels(m, g_data, json, px)) return false;
  const cJSON *thw = cJSON_GetObjectItem(json, "image_grid_thw");
  CHECK(px->rank == 2);
  for (int32_t i = 0; i < 3; i++) CHECK(px->grid_thw[i] == cJSON_GetArrayItem(thw, i)->valueint);
  return true;
}

// The arguments of @vision: weights from the checkpoint, then the pixels.
static inline mx_tensor_t *vision_args(const mx_model_t *m, mx_func_t *f, const mx_pixels_t *px) {
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

// The module with @vision for the photograph's grid (*mod, the caller destroys it) and its
// @vision; NULL (the module destroyed) when it cannot be built.
static inline mx_func_t *build_vision(const mx_model_t *m, const mx_pixels_t *px,
                                      mx_module_t **mod) {
  mx_graph_opts_t go = {.ctx = 64,
                        .prefill_len = 4,
                        .media = true,
                        .vision_grid_h = (int32_t)px->grid_thw[1],
                        .vision_grid_w = (int32_t)px->grid_thw[2]};
  *mod = NULL;
  CHECK_OK(mx_model_build_graph(&m->config, m->ckpt, &go, mod));
  mx_func_t *f = *mod ? mx_module_find_func(*mod, "vision") : NULL;
  CHECK(f != NULL);
  if (!f) {
    mx_module_destroy(*mod);
    *mod = NULL;
  }
  return f;
}

// A grid of many windows (Qwen2.5-VL: more segments and window runs than a step of the cpu
// runtime takes operands) still compiles op by op: the concatenates of the window order and of
// the segments' attention are built in groups (mx_g_concat). A single concatenate of them all
// handed the whole tower to the interpreter, minutes per image at a real model's size.
static inline void check_many_windows(const mx_model_t *m, int32_t gh, int32_t gw) {
  mx_graph_opts_t go = {
      .ctx = 64, .prefill_len = 4, .media = true, .vision_grid_h = gh, .vision_grid_w = gw};
  mx_module_t *mod = NULL;
  CHECK_OK(mx_model_build_graph(&m->config, m->ckpt, &go, &mod));
  mx_func_t *f = mod ? mx_module_find_func(mod, "vision") : NULL;
  CHECK(f != NULL);
  if (f) {
    int32_t n = f->body->n_args;
    mx_tensor_t *args = calloc((size_t)n, sizeof *args);
    for (int32_t i = 0; args && i < n; i++) {
      mx_graph_arg_t info;
      CHECK_OK(mx_graph_arg_info(f, i, &info));
      args[i].type = *mx_value_type(f, f->body->args[i]);
      const mx_weight_t *w =
          info.role == MX_ARG_PIXELS ? NULL : mx_checkpoint_find(m->ckpt, info.name);
      if (w) {
        args[i].data = (uint8_t *)w->data;
        args[i].nbytes = w->nbytes;
      }
    }
    mx_cpu_compile_opts_t o = {.args = args};
    mx_cpu_plan_t *plan = NULL;
    CHECK_OK(mx_cpu_compile(mod, f, &o, &plan));
    if (plan) {
      mx_strbuf_t sb;
      mx_strbuf_init(&sb);
      mx_cpu_plan_describe(plan, &sb);
      const char *s = sb.data ? sb.data : "";
      CHECK_MSG(!strstr(s, "whole function"), "%d x %d grid: the @vision plan runs whole:\n%s", gh,
                gw, s);
      mx_strbuf_free(&sb);
      mx_cpu_plan_destroy(plan);
    }
    free(args);
  }
  mx_module_destroy(mod);
}

// A gh x gw grid the merger cannot merge is refused naming it.
static inline void check_bad_grid(const mx_model_t *m, int32_t gh, int32_t gw) {
  mx_graph_opts_t go = {
      .ctx = 64, .prefill_len = 4, .media = true, .vision_grid_h = gh, .vision_grid_w = gw};
  mx_module_t *mod = NULL;
  char want[48];
  snprintf(want, sizeof want, "%d x %d patch grid", gh, gw);
  mx_status_t st = mx_model_build_graph(&m->config, m->ckpt, &go, &mod);
  CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), want) != NULL);
  mx_module_destroy(mod);
}

static const double kTol = 1e-4;

// Columns [col0, col0 + w) of rows [0, n) of x (row width W), contiguous.
static inline float *columns(const float *x, int32_t n, int64_t W, int64_t col0, int64_t w) {
  float *out = malloc(sizeof(float) * (size_t)(n * w));
  for (int32_t i = 0; out && i < n; i++)
    memcpy(out + i * w, x + i * W + col0, sizeof(float) * (size_t)w);
  return out;
}

// The main features, then each DeepStack merger's (Qwen3-VL), of features[n][W] (W =
// mx_vision_feature_width) against the reference; the largest difference.
static inline double feature_diff(const mx_model_t *m, const cJSON *json, const float *feats,
                                  int32_t n) {
  int64_t H = m->config.hidden_size, W = mx_vision_feature_width(&m->config);
  double worst = 0;
  for (int32_t k = 0; k < W / H; k++) {
    char key[48];
    if (k == 0)
      snprintf(key, sizeof key, "image_features");
    else
      snprintf(key, sizeof key, "deepstack_features_%d", k - 1);
    const cJSON *want = cJSON_GetObjectItem(json, key);
    CHECK_MSG(want != NULL && cJSON_GetArraySize(want) == n, "reference has no %s", key);
    float *part = columns(feats, n, W, k * H, H);
    double d = want && part ? max_diff_rows(part, want, 0, n, (int32_t)H) : INFINITY;
    if (d > worst) worst = d;
    free(part);
  }
  return worst;
}

// @vision for the photograph's grid on both executors against the features (Qwen3-VL: the main
// and every DeepStack set); the cpu plan runs every linear as a GEMM and every attention, norm
// and RoPE with its fused kernel, step by step (the small glue ops, as in LLaVA's tower, may use
// interpreter kernels). n_windows: Qwen2.5-VL's windows of the grid.
static inline void check_vision(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                                int32_t n_windows) {
  const mx_vision_config_t *v = &m->config.vision;
  const char *type = m->config.model_type;
  mx_module_t *mod = NULL;
  mx_func_t *f = build_vision(m, px, &mod);
  if (!f) return;
  int32_t N = cJSON_GetObjectItem(json, "n_image_tokens")->valueint;
  int64_t fd[3] = {1, N, mx_vision_feature_width(&m->config)};
  mx_type_t ft = mx_type_tensor(MX_ELEM_F32, 3, fd);
  CHECK(f->n_results == 1 && mx_type_equal(&f->result_types[0], &ft));
  mx_tensor_t *args = vision_args(m, f, px);
  mx_tensor_t res;
  memset(&res, 0, sizeof res);
  CHECK_OK(mx_interp_run(mod, f, args, f->body->n_args, &res, NULL));
  if (res.data) {
    double d = feature_diff(m, json, (const float *)res.data, N);
    CHECK_MSG(d <= kTol, "%s interp: image features differ by %g", type, d);
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
    CHECK_MSG(d <= kTol, "%s cpu: image features differ by %g", type, d);
    mx_tensor_free(&out);
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_plan_describe(plan, &sb);
    const char *s = sb.data ? sb.data : "";
    // Per block: q, k, v, proj and two (Qwen2-VL, Qwen3-VL) or three MLP linears; the patch
    // embedding and two per merger (Qwen3-VL: 1 + n_deepstack mergers, each with its norm).
    // Attention: one per segment (Qwen2.5-VL's windowed blocks: n_windows).
    bool v25 = v->kind == MX_VISION_QWEN2_5_VL;
    int32_t L = v->num_layers, n_full = 0, mlp = v25 ? 3 : 2;
    int32_t mergers = 1 + (v->kind == MX_VISION_QWEN3_VL ? v->n_deepstack : 0);
    for (int32_t l = 0; l < L; l++) n_full += !v25 || v->layer_full[l];
    int32_t gemm = mx_test_count(s, "fast stablehlo.dot_general (dot_general->gemm"),
            attn = mx_test_count(s, "fast mx.attention"),
            norm = mx_test_count(s, "fast mx.rms_norm"),
            rope = mx_test_count(s, "fast mx.rope (mx.rope)"),
            tables = mx_test_count(s, "fast mx.rope (mx.rope cos/sin table)");
    int32_t want_attn = n_full + (L - n_full) * n_windows;
    // The MLP's SiLU / quick_gelu (Qwen2-VL, Qwen2.5-VL): one logistic per block, native (on
    // the interpreter's kernel it was a fifth of Qwen2.5-VL-3B's tower time).
    int32_t logistic = mx_test_count(s, "fast stablehlo.logistic"),
            want_logistic = v->kind == MX_VISION_QWEN3_VL ? 0 : L;
    CHECK_MSG(gemm == 1 + (4 + mlp) * L + 2 * mergers && attn == want_attn &&
                  norm == 2 * L + mergers && rope == 4 * L && tables == 2 &&
                  logistic == want_logistic && !strstr(s, "fallback stablehlo.logistic") &&
                  !strstr(s, "whole function"),
              "%s: %d GEMMs, %d attentions (want %d), %d norms, %d ropes, %d tables, %d logistics "
              "in the @vision plan:\n%s",
              type, gemm, attn, want_attn, norm, rope, tables, logistic, s);
    mx_strbuf_free(&sb);
    mx_cpu_plan_destroy(plan);
  }
  free(args);
  mx_module_destroy(mod);
}

// A text-only prompt: all three M-RoPE positions equal, the plain RoPE of @prefill / @decode.
static inline void check_text(const mx_model_t *m, const cJSON *json, const char *backend) {
  int32_t n = 0, ng = 0, V = m->config.vocab_size;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "text_prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "text_greedy_ids"), &ng);
  const cJSON *logits = cJSON_GetObjectItem(json, "text_logits");
  mx_session_opts_t so = {.backend = backend, .ctx = 64, .prefill_chunk = 8};
  mx_test_backend_opts(backend, &so.backend_opts);
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
static inline void check_image(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                               const char *backend) {
  const char *type = m->config.model_type;
  int32_t n = 0, ng = 0, V = m->config.vocab_size;
  const int64_t H = mx_vision_feature_width(&m->config);  // a feature row
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
  mx_test_backend_opts(backend, &so.backend_opts);
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  float *feats = malloc(sizeof(float) * (size_t)N * (size_t)H);
  float *media = calloc((size_t)n * (size_t)H, sizeof(float));
  int64_t npx = px->shape[0] * px->shape[1];
  if (s) {
    CHECK_OK(mx_session_vision_grid(s, px->data, npx, grid[0], grid[1], feats, (int64_t)N * H));
    double fd = feature_diff(m, json, feats, N);
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

// The graph calls a batch has made: the batched state's runs (cpu, interp) or the xla backend's
// device calls (its own batch state); -1 for a batch of neither kind.
static inline int64_t batch_calls(const mx_batch_t *b) {
  const mx_backend_t *be = NULL;
  const mx_bstate_t *bs = mx_batch_backend_state(b, &be);
  mx_xla_stats_t xs;
  if (mx_xla_batch_stats(b, &xs)) return xs.calls;
  return bs ? bs->runs : -1;
}

// The prompt with its image through a batch (the server's engine): the features of the batch's
// vision_grid, the prompt prefilled with its M-RoPE positions in chunks of 8 while another slot
// holds the text prompt, then both decoded together: the image slot, shifted by its image,
// and the text slot share one graph call per step (the batched @decode's RoPE offsets) and give
// the 16 greedy ids and the text prompt's own; the image slot's RoPE position is the session's;
// a rewind keeps the shift; a reset slot forgets it (the text prompt then runs as on a new
// slot).
static inline void check_batch(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                               const char *backend) {
  const char *type = m->config.model_type;
  int32_t n = 0, ng = 0, nt = 0, ngt = 0, V = m->config.vocab_size;
  const int64_t H = mx_vision_feature_width(&m->config);
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "greedy_ids"), &ng);
  int32_t *tids = json_ids(cJSON_GetObjectItem(json, "text_prompt_ids"), &nt);
  int32_t *tgreedy = json_ids(cJSON_GetObjectItem(json, "text_greedy_ids"), &ngt);
  int32_t delta = cJSON_GetObjectItem(json, "rope_delta")->valueint;
  int32_t grid[2] = {(int32_t)px->grid_thw[1], (int32_t)px->grid_thw[2]};
  int32_t N = grid[0] * grid[1] / 4, *pos = malloc(sizeof(int32_t) * 3 * (size_t)n);
  int32_t *cpos = malloc(sizeof(int32_t) * 3 * 8);
  float *feats = malloc(sizeof(float) * (size_t)N * (size_t)H);
  float *media = calloc((size_t)n * (size_t)H, sizeof(float));
  int64_t next = 0, npx = px->shape[0] * px->shape[1];
  mx_batch_opts_t bo = {.backend = backend, .ctx = 96, .prefill_chunk = 8, .n_slots = 3};
  mx_test_backend_opts(backend, &bo.backend_opts);
  mx_batch_t *b = NULL;
  CHECK_OK(mx_batch_create(m, &bo, &b));
  CHECK_OK(mx_mrope_positions(&m->config, ids, n, grid, 1, 0, pos, &next));
  if (!b || !pos || !cpos || !feats || !media) goto out;
  CHECK_OK(mx_batch_vision_grid(b, px->data, npx, grid[0], grid[1], feats, (int64_t)N * H));
  double fd = feature_diff(m, json, feats, N);
  CHECK_MSG(fd <= kTol, "%s %s: batch image features differ by %g", type, backend, fd);
  float f[4] = {0};  // the fixed-size entry is LLaVA's and Gemma 3's
  mx_status_t st = mx_batch_vision(b, f, 4, f, 4);
  CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "mx_batch_vision_grid") != NULL);
  for (int32_t i = 0, k = 0; i < n; i++)
    if (ids[i] == m->config.vision.image_token_id)
      memcpy(media + (size_t)i * H, feats + (size_t)(k++) * H, sizeof(float) * (size_t)H);
  CHECK_OK(mx_batch_prefill(b, 0, tids, nt < 8 ? nt : 8));
  for (int32_t off = 8; off < nt; off += 8)
    CHECK_OK(mx_batch_prefill(b, 0, tids + off, nt - off < 8 ? nt - off : 8));
  for (int32_t off = 0; off < n; off += 8) {
    int32_t c = n - off < 8 ? n - off : 8;
    for (int32_t r = 0; r < 3; r++)
      memcpy(cpos + r * c, pos + (size_t)r * n + off, sizeof(int32_t) * (size_t)c);
    CHECK_OK(mx_batch_prefill_mrope(b, 2, ids + off, media + (size_t)off * H, cpos, c));
  }
  CHECK(mx_batch_rope_next(b, 2) == n + delta && mx_batch_rope_next(b, 0) == nt);
  int32_t same = 0, tsame = 0, steps = ng < ngt ? ng : ngt, calls = 0;
  bool counted = batch_calls(b) >= 0;
  CHECK(counted);
  const mx_backend_t *be = NULL;
  const mx_bstate_t *bs = mx_batch_backend_state(b, &be);  // cpu and interp: the batched state
  CHECK(strcmp(backend, "xla") == 0 || (bs != NULL && bs->rope_offset));
  for (int32_t i = 0; i < steps && counted; i++) {
    const float *li = mx_batch_logits(b, 2), *lt = mx_batch_logits(b, 0);
    if (!li || !lt) break;
    int32_t slots[2] = {2, 0}, next_ids[2] = {argmax(li, V), argmax(lt, V)};
    same += next_ids[0] == greedy[i];
    tsame += next_ids[1] == tgreedy[i];
    int64_t runs = batch_calls(b);
    if (mx_batch_decode(b, slots, next_ids, 2) != MX_OK) break;
    calls += batch_calls(b) - runs == 1;
  }
  CHECK_MSG(same == steps && tsame == steps, "%s %s batch: %d and %d of %d greedy ids equal", type,
            backend, same, tsame, steps);
  CHECK_MSG(calls == steps, "%s %s batch: %d of %d decode steps were one graph call", type, backend,
            calls, steps);
  CHECK(mx_batch_rope_next(b, 2) == n + steps + delta);
  // Rewinding into the text keeps the shifted positions: the last greedy step again.
  CHECK_OK(mx_batch_rewind(b, 2, n + steps - 2));
  int32_t slot = 2, id = greedy[steps - 2];
  CHECK_OK(mx_batch_decode(b, &slot, &id, 1));
  const float *l = mx_batch_logits(b, 2);
  CHECK(l && argmax(l, V) == greedy[steps - 1]);
  mx_batch_reset(b, 2);
  CHECK(mx_batch_rope_next(b, 2) == 0);
  CHECK_OK(mx_batch_prefill(b, 2, tids, nt < 8 ? nt : 8));
  for (int32_t off = 8; off < nt; off += 8)
    CHECK_OK(mx_batch_prefill(b, 2, tids + off, nt - off < 8 ? nt - off : 8));
  l = mx_batch_logits(b, 2);
  CHECK(l && argmax(l, V) == tgreedy[0] && mx_batch_rope_next(b, 2) == nt);
out:
  mx_batch_destroy(b);
  free(feats);
  free(media);
  free(pos);
  free(cpos);
  free(ids);
  free(greedy);
  free(tids);
  free(tgreedy);
}

#endif  // MX_TEST_VLM_QWEN_H
