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
// the image prompt through sessions and batches on the interpreter, the cpu backend and the xla
// backend (the PJRT CPU plugin of the test environment); then the config's defaults and refusals.
#include <math.h>
#include <stdio.h>

#include "mlxcel/batch.h"
#include "mlxcel/cpu_plan.h"
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
  // Without column tokens: the patches of both views and their start / end tokens.
  int64_t lo = grids[0][0] * grids[0][1], hi = grids[0][2] * grids[0][3];
  mx_molmo2_prompt_t p = kTokens;
  p.col_tokens = false;
  CHECK_OK(mx_molmo2_expand_prompt(&p, ids, k, grids, 1, &e, &ne));
  CHECK(ne == k - 1 + lo + 2 + hi + 2);
  free(e);
  // Column tokens on the crops only, and <im_start> for the global view too.
  p.col_tokens = true, p.single_crop_col_tokens = 0, p.single_crop_start = false;
  CHECK_OK(mx_molmo2_expand_prompt(&p, ids, k, grids, 1, &e, &ne));
  int64_t at = 7, crops = at + lo + 2;  // after the bos and "Look: "; the crops' <im_start>
  CHECK(ne == k - 1 + lo + 2 + hi + grids[0][2] + 2 && e && e[at] == kTokens.start &&
        e[at + lo] == kTokens.patch && e[at + lo + 1] == kTokens.end && e[crops] == kTokens.start &&
        e[crops + grids[0][3] + 1] == kTokens.col);
  free(e);
  EXPECT_ERR(mx_molmo2_expand_prompt(&kTokens, ids, k, grids, 2, &e, &ne),
             "the prompt has 1 image placeholder (id 264) for 2 images");
  // Two images next to each other expand into one run of image tokens.
  int32_t two[4] = {kTokens.placeholder, kTokens.placeholder, 'x', 'y'};
  CHECK_OK(mx_molmo2_expand_prompt(&kTokens, two, 4, grids, 2, &e, &ne));
  CHECK(ne == 2 * (n - (k - 1)) + 2 && e && e[ne - 2] == 'x');
  free(e);
  // With text between them: transformers' ids of the two-image prompt (each run of image tokens
  // a placeholder before the expansion).
  int32_t n2 = 0, *want2 = json_ids(cJSON_GetObjectItem(json, "two_image_prompt_ids"), &n2);
  int32_t *ids2 = malloc(sizeof *ids2 * (size_t)(n2 > 0 ? n2 : 1)), k2 = 0, imgs = 0;
  for (int32_t j = 0; want2 && ids2 && j < n2; j++) {
    bool img = want2[j] >= kTokens.start && want2[j] <= kTokens.placeholder;
    bool prev = j > 0 && want2[j - 1] >= kTokens.start && want2[j - 1] <= kTokens.placeholder;
    if (img && !prev) imgs++, ids2[k2++] = kTokens.placeholder;
    if (!img) ids2[k2++] = want2[j];
  }
  CHECK(imgs == 2 && k2 < n2);
  CHECK_OK(mx_molmo2_expand_prompt(&kTokens, ids2, k2, grids, 2, &e, &ne));
  CHECK_MSG(ne == n2 && e && memcmp(e, want2, sizeof *e * (size_t)n2) == 0,
            "the expanded two-image prompt (%d ids) is not transformers' (%d)", ne, n2);
  free(e);
  free(ids2);
  free(want2);
  grids[0][3] = 0;
  char msg[96];
  snprintf(msg, sizeof msg, "image 0: image_grids [%lld, %lld, %lld, 0]", (long long)grids[0][0],
           (long long)grids[0][1], (long long)grids[0][2]);
  EXPECT_ERR(mx_molmo2_expand_prompt(&kTokens, ids, k, grids, 1, &e, &ne), msg);
  free(want);
}

// @vision for the photograph's crops and pooled tokens on the interpreter and the cpu runtime
// against transformers' pooled features; the pixels and image_token_pooling from src/image.
static void check_vision(const mx_model_t *m, const cJSON *json) {
  mx_pixels_t px = {0};
  if (!mx_test_vlm_pixels(m, g_data, json, &px)) return;
  const cJSON *pool = cJSON_GetObjectItem(json, "image_token_pooling");
  int32_t T = cJSON_GetArraySize(pool), K = cJSON_GetArraySize(cJSON_GetArrayItem(pool, 0));
  CHECK(px.pooling && px.pooling_shape[0] == T && px.pooling_shape[1] == K);
  int32_t bad = 0;
  for (int32_t t = 0; px.pooling && t < T; t++)
    for (int32_t j = 0; j < K; j++)
      bad += px.pooling[t * K + j] != cJSON_GetArrayItem(cJSON_GetArrayItem(pool, t), j)->valueint;
  CHECK_MSG(bad == 0, "%d image_token_pooling entries differ from the processor's", bad);
  mx_graph_opts_t go = {.ctx = 64,
                        .prefill_len = 4,
                        .media = true,
                        .vision_grid_h = (int32_t)px.shape[0],
                        .vision_grid_w = T,
                        .vision_pool = K};
  mx_module_t *mod = NULL;
  CHECK_OK(mx_model_build_graph(&m->config, m->ckpt, &go, &mod));
  mx_func_t *f = mod ? mx_module_find_func(mod, "vision") : NULL;
  CHECK(f != NULL);
  int64_t fd[3] = {1, T, m->config.hidden_size};
  mx_type_t ft = mx_type_tensor(MX_ELEM_F32, 3, fd);
  const cJSON *want = cJSON_GetObjectItem(json, "image_features");
  if (f) {
    CHECK(f->n_results == 1 && mx_type_equal(&f->result_types[0], &ft));
    int32_t n = f->body->n_args;
    mx_tensor_t *args = calloc((size_t)n, sizeof *args);
    for (int32_t i = 0; args && i < n; i++) {
      mx_graph_arg_t info;
      CHECK_OK(mx_graph_arg_info(f, i, &info));
      args[i].type = *mx_value_type(f, f->body->args[i]);
      args[i].nbytes = mx_type_nbytes(&args[i].type);
      if (info.role == MX_ARG_PIXELS) {
        args[i].data = (uint8_t *)px.data;
      } else if (info.role == MX_ARG_POOLING) {
        args[i].data = (uint8_t *)px.pooling;
      } else {
        const mx_weight_t *w = mx_checkpoint_find(m->ckpt, info.name);
        CHECK_MSG(w != NULL, "no tensor %s", info.name);
        if (w) args[i].data = (uint8_t *)w->data;
      }
    }
    mx_tensor_t res;
    memset(&res, 0, sizeof res);
    CHECK_OK(mx_interp_run(mod, f, args, n, &res, NULL));
    double d = res.data ? max_diff_rows((const float *)res.data, want, 0, T, (int32_t)fd[2]) : 1e30;
    printf("molmo2 interp: image features within %.3g\n", d);
    CHECK_MSG(d <= kTol, "molmo2 interp: image features differ by %g", d);
    mx_tensor_free(&res);
    mx_cpu_compile_opts_t o = {.args = args};
    mx_cpu_plan_t *plan = NULL;
    CHECK_OK(mx_cpu_compile(mod, f, &o, &plan));
    mx_tensor_t out;
    memset(&out, 0, sizeof out);
    if (plan && mx_tensor_alloc(&out, &ft) == MX_OK) {
      CHECK_OK(mx_cpu_plan_run(plan, NULL, args, n, &out));
      d = max_diff_rows((const float *)out.data, want, 0, T, (int32_t)fd[2]);
      printf("molmo2 cpu: image features within %.3g\n", d);
      CHECK_MSG(d <= kTol, "molmo2 cpu: image features differ by %g", d);
      // Every linear a GEMM (the patch embedding, 6 per layer, the adapter's q / k / v / o and
      // its gated MLP's three), every attention (the adapter's in pieces) and LayerNorm fused,
      // no composite run through its decomposition, nothing run whole.
      mx_strbuf_t sb;
      mx_strbuf_init(&sb);
      mx_cpu_plan_describe(plan, &sb);
      const char *ps = sb.data ? sb.data : "";
      int32_t L = m->config.vision.layers_run;
      int32_t gemm = mx_test_count(ps, "fast stablehlo.dot_general (dot_general->gemm"),
              attn = mx_test_count(ps, "fast mx.attention"),
              norm = mx_test_count(ps, "fast mx.rms_norm");
      CHECK_MSG(gemm >= 1 + 6 * L + 4 + 3 && attn >= L + 1 && norm == 2 * L &&
                    !strstr(ps, "composite decomposition") && !strstr(ps, "whole function"),
                "%d GEMMs, %d attentions, %d norms in the @vision plan:\n%s", gemm, attn, norm, ps);
      mx_strbuf_free(&sb);
    }
    mx_tensor_free(&out);
    mx_cpu_plan_destroy(plan);
    free(args);
  }
  mx_module_destroy(mod);
  mx_pixels_free(&px);
}

// The photograph's features through a session's tower (mx_session_vision_pooled) and the media
// rows of the expanded prompt: feature j at the j-th <im_patch>, zero elsewhere (heap).
static float *image_rows(const mx_model_t *m, mx_session_t *s, const mx_pixels_t *px,
                         const cJSON *json, const int32_t *ids, int32_t n, const char *backend) {
  const int32_t H = m->config.hidden_size, T = (int32_t)px->pooling_shape[0];
  float *f = malloc(sizeof *f * (size_t)T * H), *rows = calloc((size_t)n * H, sizeof *rows);
  if (!f || !rows) goto fail;
  CHECK_OK(mx_session_vision_pooled(s, px->data, px->shape[0] * px->shape[1] * px->shape[2],
                                    (int32_t)px->shape[0], px->pooling, T,
                                    (int32_t)px->pooling_shape[1], f, (int64_t)T * H));
  double d = max_diff_rows(f, cJSON_GetObjectItem(json, "image_features"), 0, T, H);
  printf("molmo2 %s session: image features within %.3g\n", backend, d);
  CHECK_MSG(d <= kTol, "molmo2 %s session: image features differ by %g", backend, d);
  for (int32_t i = 0, j = 0; i < n && j < T; i++)
    if (ids[i] == m->config.vision.image_token_id)
      memcpy(rows + (size_t)i * H, f + (size_t)j++ * H, sizeof *f * H);
  free(f);
  return rows;
fail:
  free(f);
  free(rows);
  return NULL;
}

static int32_t greedy_same(mx_session_t *s, const int32_t *want, int32_t ng, int32_t V) {
  int32_t same = 0;
  for (int32_t i = 0; i < ng; i++) {
    int32_t id = argmax(mx_session_logits(s), V);
    same += id == want[i];
    if (mx_session_decode(s, id) != MX_OK) break;
  }
  return same;
}

// @prefill_media over the whole image prompt with the logits of every position, on the
// interpreter and the cpu runtime, against transformers' (whose causal-only logits differ by
// 0.33: the block matters); on the cpu every attention, block ids and all, runs fused.
// key: the reference's logits; kv: the caches' element type (bf16: the cpu runtime's 16-bit
// cache driver, against the interpreter's decomposition on the same caches, not transformers).
static void check_media_graph(const mx_model_t *m, const cJSON *json, const int32_t *ids, int32_t n,
                              const float *media, const char *key, mx_elem_type_t kv) {
  const char *name = m->config.norm_after ? "molmo2-olmo" : "molmo2";
  int32_t V = m->config.vocab_size;
  mx_graph_opts_t go = {
      .batch = 1, .ctx = 128, .prefill_len = n, .all_logits = true, .media = true, .kv_dtype = kv};
  bool f32 = kv == MX_ELEM_F32;
  mx_module_t *mod = NULL;
  CHECK_OK(mx_model_build_graph(&m->config, m->ckpt, &go, &mod));
  mx_func_t *f = mod ? mx_module_find_func(mod, "prefill_media") : NULL;
  CHECK(f != NULL);
  if (!f) {
    mx_module_destroy(mod);
    return;
  }
  int32_t na = f->body->n_args, p0 = 0;
  mx_tensor_t *args = calloc((size_t)na, sizeof *args);
  mx_tensor_t *res = calloc((size_t)f->n_results, sizeof *res);
  mx_tensor_t *ires = calloc((size_t)f->n_results, sizeof *ires);
  bool *own = calloc((size_t)na, sizeof *own);
  for (int32_t i = 0; i < na; i++)
    mx_test_bind_media_arg(m, f, i, ids, &p0, media, &args[i], &own[i]);
  for (int32_t r = 0; r < f->n_results; r++)
    CHECK_OK(mx_tensor_alloc(&res[r], &f->result_types[r]));
  const cJSON *want = cJSON_GetObjectItem(json, key);
  CHECK_OK(mx_interp_run(mod, f, args, na, ires, NULL));
  if (ires[0].data && f32) {
    double d = max_diff_rows((const float *)ires[0].data, want, 0, n, V);
    printf("%s interp: @prefill_media %s at all %d positions within %.3g\n", name, key, n, d);
    CHECK_MSG(d <= kTol, "%s interp: every position's %s differ by %g", name, key, d);
  }
  mx_cpu_compile_opts_t o = {.args = args};
  mx_cpu_plan_t *plan = NULL;
  CHECK_OK(mx_cpu_compile(mod, f, &o, &plan));
  if (plan) {
    CHECK_OK(mx_cpu_plan_run(plan, NULL, args, na, res));
    double d = 0;
    if (f32) {
      d = max_diff_rows((const float *)res[0].data, want, 0, n, V);
    } else if (ires[0].data) {
      const float *a = (const float *)res[0].data, *b = (const float *)ires[0].data;
      for (size_t i = 0; i < (size_t)n * (size_t)V; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    }
    printf("%s cpu (%s caches): @prefill_media %s at all %d positions within %.3g of %s\n", name,
           mx_elem_name(kv), key, n, d, f32 ? "transformers'" : "the interpreter's");
    CHECK_MSG(d <= kTol, "%s cpu (%s caches): every position's %s differ by %g", name,
              mx_elem_name(kv), key, d);
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_plan_describe(plan, &sb);
    int32_t attn = mx_test_count(sb.data ? sb.data : "", "fast mx.attention");
    CHECK_MSG(attn == m->config.num_layers, "%d fused attentions in @prefill_media", attn);
    mx_strbuf_free(&sb);
    mx_cpu_plan_destroy(plan);
  }
  for (int32_t r = 0; r < f->n_results; r++) {
    mx_tensor_free(&res[r]);
    mx_tensor_free(&ires[r]);
  }
  for (int32_t i = 0; i < na; i++)
    if (own[i]) mx_tensor_free(&args[i]);
  free(own);
  free(args);
  free(res);
  free(ires);
  mx_module_destroy(mod);
}

// The image prompt end to end through a session on `backend`: the features added at the
// <im_patch> tokens under one bidirectional block over the image's 36 tokens (its 36-token block
// runs as one call of its length beside the power-of-two pieces of the text), transformers'
// logits at every position from the image's last token on (the block's end, then each text
// token decoded) and the 16 greedy ids; a chunk smaller than the block still runs the block
// whole, in one call of its length; an image's tokens split over two calls are refused.
static void check_session(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                          const char *backend) {
  const char *name = m->config.norm_after ? "molmo2-olmo" : "molmo2";
  int32_t V = m->config.vocab_size, H = m->config.hidden_size, n = 0, ng = 0;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "greedy_ids"), &ng);
  const cJSON *logits = cJSON_GetObjectItem(json, "logits");
  mx_session_opts_t so = {.backend = backend, .ctx = 128, .prefill_chunk = 64};
  mx_test_backend_opts(backend, &so.backend_opts);
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  float *rows = s ? image_rows(m, s, px, json, ids, n, backend) : NULL;
  int32_t end = 0;  // one past the image's last token
  for (int32_t i = 0; i < n; i++)
    if (mx_vision_block_token(&m->config.vision, ids[i])) end = i + 1;
  if (rows && strcmp(backend, "interp") == 0)
    check_media_graph(m, json, ids, n, rows, "logits", MX_ELEM_F32);
  if (rows && end > 0) {
    CHECK_OK(mx_session_prefill_media(s, ids, rows, end));
    double d = max_diff_rows(mx_session_logits(s), logits, end - 1, 1, V);
    for (int32_t i = end; i < n && mx_session_decode(s, ids[i]) == MX_OK; i++)
      d = fmax(d, max_diff_rows(mx_session_logits(s), logits, i, 1, V));
    printf("%s %s: image prompt logits (positions %d..%d) within %.3g\n", name, backend, end - 1,
           n - 1, d);
    CHECK_MSG(d <= kTol, "%s %s: image prompt logits differ by %g", name, backend, d);
    int32_t same = greedy_same(s, greedy, ng, V);
    CHECK_MSG(same == ng, "%s %s: %d of %d greedy ids equal", name, backend, same, ng);
    // The whole prompt in one call (64 + 3 tokens: its pieces never cut the block).
    mx_session_reset(s);
    CHECK_OK(mx_session_prefill_media(s, ids, rows, n));
    d = max_diff_rows(mx_session_logits(s), logits, n - 1, 1, V);
    CHECK_MSG(d <= kTol, "%s %s: last logits of one call differ by %g", name, backend, d);
    same = greedy_same(s, greedy, ng, V);
    CHECK_MSG(same == ng, "%s %s: one call: %d of %d greedy ids equal", name, backend, same, ng);
    mx_status_t st0;
    // Image tokens after the context's image (a second prompt on top of the first): refused
    // (every Molmo2 image token attends to every other one, ADR 0023).
    const mx_vision_config_t *vc = &m->config.vision;
    CHECK(mx_vision_context_image(vc, ids, n) && !mx_vision_context_image(vc, ids, 1));
    st0 = mx_session_prefill_media(s, ids, rows, end);
    CHECK_MSG(st0 == MX_ERR_INVALID_ARG &&
                  strstr(mx_error_message(), "follow images already in the context") != NULL,
              "%s", st0 ? mx_error_message() : "ok");
    // Two runs with text between them are one unit: a call ends before the first or takes both
    // (longer than the chunk if need be), and a runner's piece from the first image token goes
    // to the last.
    int32_t runs[6] = {ids[0], vc->image_token_id, ids[0], ids[0], vc->image_token_id, ids[0]}, m2;
    CHECK(mx_vision_prefill_take(&m->config, runs, 6, 64, false, &m2) == MX_OK && m2 == 6);
    CHECK(mx_vision_prefill_take(&m->config, runs, 6, 3, false, &m2) == MX_OK && m2 == 1);
    CHECK(mx_vision_prefill_take(&m->config, runs + 1, 5, 2, false, &m2) == MX_OK && m2 == 4);
    CHECK(mx_vision_prefill_take(&m->config, runs, 6, 5, false, &m2) == MX_OK && m2 == 5);
    CHECK(mx_vision_media_piece(vc, runs + 1, 5, 4) == 4 &&
          mx_vision_media_piece(vc, runs, 6, 4) == 1);
    // Up to the middle of the image, then the rest: the second call is refused.
    mx_session_reset(s);
    CHECK_OK(mx_session_prefill_media(s, ids, rows, 20));
    mx_status_t st = mx_session_prefill_media(s, ids + 20, rows + (size_t)20 * H, n - 20);
    CHECK(st == MX_ERR_INVALID_ARG &&
          strstr(mx_error_message(), "image tokens at 0 follow images already in the context"));
  }
  mx_session_destroy(s);
  s = NULL;
  so.prefill_chunk = 32;
  CHECK_OK(mx_session_create(m, &so, &s));
  if (s && rows) {  // a block longer than the chunk runs whole, in one graph of its length
    mx_status_t st = mx_session_prefill_media(s, ids, rows, n);
    CHECK_MSG(st == MX_OK, "chunk 32 with a 36-token block: %s", st ? mx_error_message() : "ok");
    const float *l = mx_session_logits(s);
    CHECK(mx_session_n_past(s) == n && l && argmax(l, m->config.vocab_size) == greedy[0]);
  }
  mx_session_destroy(s);
  free(rows);
  free(ids);
  free(greedy);
}

// A 2-slot batch: the image prompt in slot 0 (mx_batch_vision_pooled, mx_batch_prefill_media)
// beside the text prompt in slot 1, decoded together: transformers' greedy ids for both.
static void check_batch(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                        const char *backend) {
  int32_t V = m->config.vocab_size, H = m->config.hidden_size, n = 0, nt = 0, ng = 0, ngt = 0;
  int32_t T = (int32_t)px->pooling_shape[0];
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  int32_t *tids = json_ids(cJSON_GetObjectItem(json, "text_prompt_ids"), &nt);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "greedy_ids"), &ng);
  int32_t *tgreedy = json_ids(cJSON_GetObjectItem(json, "text_greedy_ids"), &ngt);
  mx_batch_opts_t bo = {.backend = backend, .ctx = 128, .prefill_chunk = 128, .n_slots = 2};
  mx_test_backend_opts(backend, &bo.backend_opts);
  mx_batch_t *b = NULL;
  CHECK_OK(mx_batch_create(m, &bo, &b));
  float *f = malloc(sizeof *f * (size_t)T * H), *rows = calloc((size_t)n * H, sizeof *rows);
  if (b && f && rows) {
    CHECK_OK(mx_batch_vision_pooled(b, px->data, px->shape[0] * px->shape[1] * px->shape[2],
                                    (int32_t)px->shape[0], px->pooling, T,
                                    (int32_t)px->pooling_shape[1], f, (int64_t)T * H));
    for (int32_t i = 0, j = 0; i < n && j < T; i++)
      if (ids[i] == m->config.vision.image_token_id)
        memcpy(rows + (size_t)i * H, f + (size_t)j++ * H, sizeof *f * H);
    mx_status_t st0 = mx_batch_prefill_media(b, 0, ids, rows, n);
    mx_status_t st1 = mx_batch_prefill(b, 1, tids, nt);
    CHECK_OK(st0);
    CHECK_OK(st1);
    int32_t same[2] = {0, 0}, slots[2] = {0, 1};
    for (int32_t i = 0; !st0 && !st1 && i < ng && i < ngt; i++) {
      int32_t next[2] = {argmax(mx_batch_logits(b, 0), V), argmax(mx_batch_logits(b, 1), V)};
      same[0] += next[0] == greedy[i];
      same[1] += next[1] == tgreedy[i];
      if (mx_batch_decode(b, slots, next, 2) != MX_OK) break;
    }
    CHECK_MSG(same[0] == ng && same[1] == ngt, "%s batch: %d / %d image, %d / %d text greedy ids",
              backend, same[0], ng, same[1], ngt);
    // The fixed-size towers' entry is refused by name.
    mx_status_t st = mx_batch_vision(b, px->data, 1, f, 1);
    CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "mx_batch_vision_pooled") != NULL);
    // Calls of at most 16 tokens as the server's scheduler makes them (mx_vision_prefill_take):
    // the 36-token block is one call of its length; the first greedy id.
    mx_batch_destroy(b);
    b = NULL;
    bo.prefill_chunk = 16;
    CHECK_OK(mx_batch_create(m, &bo, &b));
    for (int32_t off = 0, take = 0; b && off < n; off += take) {
      CHECK_OK(mx_vision_prefill_take(&m->config, ids + off, n - off, 16, false, &take));
      st = mx_batch_prefill_media(b, 0, ids + off, rows + (size_t)off * H, take);
      CHECK_MSG(st == MX_OK && take > 0, "%s batch, chunk 16, at %d: %s", backend, off,
                st ? mx_error_message() : "no tokens taken");
      if (st || take <= 0) break;
    }
    const float *l = b ? mx_batch_logits(b, 0) : NULL;
    CHECK(l && argmax(l, V) == greedy[0]);
  }
  mx_batch_destroy(b);
  free(f);
  free(rows);
  free(ids);
  free(tids);
  free(greedy);
  free(tgreedy);
}

// The two-image prompt with text between the images (the photograph twice): on the cpu backend,
// transformers' logits at every position on the interpreter and the cpu runtime (f32 caches;
// bf16 ones against the interpreter); then through a session with a chunk of 16 (the text before
// the images in one call, the span from the first image token to the last, text between
// included, as one call longer than the chunk, then the rest) and with `batch` a batch fed as
// the server's scheduler feeds it: the last logits and transformers' 16 greedy ids. Each image
// seeing only its own run (the one-range kernels' reading) answers differently.
static void check_two_images(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                             const char *backend, bool batch) {
  const cJSON *logits = cJSON_GetObjectItem(json, "two_image_logits");
  if (!logits) return;  // molmo2 only
  int32_t V = m->config.vocab_size, H = m->config.hidden_size, n = 0, ng = 0;
  int32_t T = (int32_t)px->pooling_shape[0];
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "two_image_prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "two_image_greedy_ids"), &ng);
  mx_session_opts_t so = {.backend = backend, .ctx = 128, .prefill_chunk = 16};
  mx_test_backend_opts(backend, &so.backend_opts);
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  float *f = malloc(sizeof *f * (size_t)T * H), *rows = calloc((size_t)n * H, sizeof *rows);
  if (s && f && rows && ids && greedy) {
    CHECK_OK(mx_session_vision_pooled(s, px->data, px->shape[0] * px->shape[1] * px->shape[2],
                                      (int32_t)px->shape[0], px->pooling, T,
                                      (int32_t)px->pooling_shape[1], f, (int64_t)T * H));
    int32_t j = 0;  // feature j % T at the j-th <im_patch>: the same photograph twice
    for (int32_t i = 0; i < n; i++)
      if (ids[i] == m->config.vision.image_token_id)
        memcpy(rows + (size_t)i * H, f + (size_t)(j++ % T) * H, sizeof *f * H);
    CHECK(j == 2 * T);
    if (strcmp(backend, "cpu") == 0) {
      check_media_graph(m, json, ids, n, rows, "two_image_logits", MX_ELEM_F32);
      check_media_graph(m, json, ids, n, rows, "two_image_logits", MX_ELEM_BF16);
    }
    CHECK_OK(mx_session_prefill_media(s, ids, rows, n));
    double d = max_diff_rows(mx_session_logits(s), logits, n - 1, 1, V);
    printf("molmo2 %s: two images with text between, last logits within %.3g\n", backend, d);
    CHECK_MSG(d <= kTol, "molmo2 %s: two images: last logits differ by %g", backend, d);
    int32_t same = greedy_same(s, greedy, ng, V);
    CHECK_MSG(same == ng, "molmo2 %s: two images: %d of %d greedy ids equal", backend, same, ng);
  }
  mx_session_destroy(s);
  mx_batch_opts_t bo = {.backend = backend, .ctx = 128, .prefill_chunk = 16, .n_slots = 2};
  mx_test_backend_opts(backend, &bo.backend_opts);
  mx_batch_t *b = NULL;
  if (batch) CHECK_OK(mx_batch_create(m, &bo, &b));
  int32_t calls = 0;
  for (int32_t off = 0, take = 0; b && rows && ids && off < n; off += take, calls++) {
    CHECK_OK(mx_vision_prefill_take(&m->config, ids + off, n - off, 16, false, &take));
    mx_status_t st = mx_batch_prefill_media(b, 0, ids + off, rows + (size_t)off * H, take);
    CHECK_MSG(st == MX_OK && take > 0, "%s batch, two images, at %d: %s", backend, off,
              st ? mx_error_message() : "no tokens taken");
    if (st || take <= 0) break;
  }
  int32_t same = 0, slot = 0;
  for (int32_t i = 0; b && greedy && i < ng; i++) {
    int32_t next = argmax(mx_batch_logits(b, 0), V);
    same += next == greedy[i];
    if (mx_batch_decode(b, &slot, &next, 1) != MX_OK) break;
  }
  CHECK_MSG(!batch || (calls == 3 && same == ng),
            "%s batch: the two-image prompt in %d calls, %d of %d greedy ids equal", backend, calls,
            same, ng);
  mx_batch_destroy(b);
  free(f);
  free(rows);
  free(ids);
  free(greedy);
}

static void check_image_prompt(const mx_model_t *m, const char *dir, const cJSON *json) {
  mx_pixels_t px = {0};
  if (!mx_test_vlm_pixels(m, g_data, json, &px)) return;
  check_session(m, json, &px, "interp");
  check_session(m, json, &px, "cpu");
  check_batch(m, json, &px, "interp");
  check_batch(m, json, &px, "cpu");
  check_session(m, json, &px, "xla");
  check_batch(m, json, &px, "xla");
  check_two_images(m, json, &px, "cpu", true);
  check_two_images(m, json, &px, "xla", false);
  // The CLI's and the server's prompt: the tokenizer's image tokens, processor_config.json's
  // options (kTokens, which the expansion test checks against transformers' ids).
  mx_molmo2_prompt_t mp;
  CHECK_OK(mx_molmo2_prompt_load(m, &mp));
  CHECK(memcmp(&mp, &kTokens, sizeof mp) == 0);
  (void)dir;
  mx_pixels_free(&px);
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
    if (!olmo) check_vision(m, json);
    check_image_prompt(m, dir, json);
  }
  mx_model_free(m);
  cJSON_Delete(json);
}

// A molmo2 config.json with `text` in text_config, then `top`, and unless that has one an
// adapter_config whose text_hidden_size matches the text model's default 4096 (transformers' two
// defaults disagree: 4096 and 3584).
static mx_status_t parse_text(const char *text, const char *top, mx_model_config_t *cfg) {
  char json[1024];
  const char *adapter =
      strstr(top, "adapter_config") ? "" : ", \"adapter_config\": {\"text_hidden_size\": 4096}";
  snprintf(json, sizeof json, "{\"model_type\": \"molmo2\", \"text_config\": {%s}%s%s}", text,
           adapter, top);
  return mx_config_parse(json, strlen(json), NULL, 0, "config.json", cfg);
}

// Molmo2TextConfig's, Molmo2VisionConfig's and Molmo2AdapterConfig's defaults (Molmo2-8B), the
// aliases, and refusals.
static void check_configs(void) {
  mx_model_config_t cfg;
  CHECK_OK(parse_text("", "", &cfg));
  CHECK(cfg.vocab_size == 151936 && cfg.extra_vocab_size == 128 && cfg.hidden_size == 4096 &&
        cfg.num_layers == 36 && cfg.num_heads == 32 && cfg.num_kv_heads == 8 &&
        cfg.head_dim == 128 && cfg.intermediate_size == 12288 && cfg.rms_norm_eps == 1e-6 &&
        cfg.rope_theta == 10000.0 && !cfg.qk_norm_flat && !cfg.norm_after &&
        !cfg.tie_word_embeddings && mx_config_input_vocab(&cfg) == 151936 + 128);
  const mx_vision_config_t *v = &cfg.vision;
  CHECK(v->present && v->kind == MX_VISION_MOLMO2 && v->hidden_size == 1152 &&
        v->intermediate_size == 4304 && v->num_layers == 25 && v->num_heads == 16 &&
        v->head_dim == 72 && v->image_size == 378 && v->patch_size == 14 &&
        v->num_position_embeddings == 729 && v->attention_bias && v->n_feature_layers == 2 &&
        v->feature_layers[0] == 25 && v->feature_layers[1] == 19 && v->layers_run == 25 &&
        v->adapter_heads == 16 && v->adapter_head_dim == 72 && v->adapter_hidden == 1152 &&
        v->adapter_intermediate == 18944 && v->image_token_id == 151938 &&
        v->vision_start_token_id == 151936 && v->vision_end_token_id == 151937 &&
        v->low_res_start_token_id == 151940);
  // Every image token (start 151936 .. low-res start 151940, <im_col> between) is one block's.
  CHECK(v->block_lo == 151936 && v->block_hi == 151940 && mx_vision_blocks(v) &&
        mx_vision_block_token(v, 151939) && !mx_vision_block_token(v, 151941));
  // The released config.json's vision keys.
  CHECK_OK(parse_text("",
                      ", \"vision_config\": {\"image_default_input_size\": [336, 336], "
                      "\"image_patch_size\": 14, \"num_hidden_layers\": 4}, \"adapter_config\": "
                      "{\"vit_layers\": [-2], \"text_hidden_size\": 4096}",
                      &cfg));
  CHECK(v->image_size == 336 && v->num_position_embeddings == 576 && v->n_feature_layers == 1 &&
        v->feature_layers[0] == 3 && v->layers_run == 3);
  CHECK_OK(
      parse_text("\"qk_norm_type\": \"olmo\", \"norm_after\": true, \"layer_norm_eps\": "
                 "1e-5, \"additional_vocab_size\": 256",
                 "", &cfg));
  CHECK(cfg.qk_norm_flat && cfg.norm_after && cfg.rms_norm_eps == 1e-5 &&
        cfg.extra_vocab_size == 256);
  // Without scaling both RoPE tables are the same: any rope_scaling_layers is accepted.
  CHECK_OK(parse_text("\"num_hidden_layers\": 2, \"rope_scaling_layers\": [1]", "", &cfg));
  static const char *const kBad[][3] = {
      {"\"qk_norm_type\": \"gemma\"", "", "text_config.qk_norm_type 'gemma' is not supported"},
      {"\"qkv_bias\": true", "", "attention_bias (qkv_bias) true is not supported"},
      {"\"num_hidden_layers\": 2, \"rope_scaling_layers\": [1], \"rope_parameters\": "
       "{\"rope_type\": \"linear\", \"factor\": 2.0, \"rope_theta\": 10000.0}",
       "", "rope_scaling_layers naming only some layers of a scaled RoPE"},
      {"\"additional_vocab_size\": -1", "", "additional_vocab_size -1 is out of range"},
      {"", ", \"adapter_config\": {\"text_hidden_size\": 3584}",
       "adapter_config.text_hidden_size (3584) must equal the text model's hidden_size (4096)"},
      {"", ", \"adapter_config\": {\"text_hidden_size\": 4096, \"vision_feature_layer\": [25]}",
       "vision_feature_layer 25 must index the 25 layers"},
      {"", ", \"adapter_config\": {\"text_hidden_size\": 4096, \"num_key_value_heads\": 8}",
       "adapter_config.num_key_value_heads 8 other than num_attention_heads"},
      {"", ", \"vision_config\": {\"image_size\": [378, 336]}", "must be square"},
      {"", ", \"vision_config\": {\"hidden_act\": \"relu\"}",
       "vision_config.hidden_act 'relu' is not supported"},
      {"", ", \"image_patch_id\": 152064", "image_patch_id (152064) is outside"},
  };
  for (size_t i = 0; i < sizeof kBad / sizeof kBad[0]; i++) {
    mx_status_t st = parse_text(kBad[i][0], kBad[i][1], &cfg);
    CHECK_MSG(st != MX_OK && strstr(mx_error_message(), kBad[i][2]) != NULL, "%s / %s: got \"%s\"",
              kBad[i][0], kBad[i][1], st == MX_OK ? "ok" : mx_error_message());
  }
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  snprintf(g_data, sizeof g_data, "%s", data ? data : "tests/data");
  check_fixture("molmo2", false);
  check_fixture("molmo2-olmo", true);
  check_configs();
  return mx_test_finish();
}
