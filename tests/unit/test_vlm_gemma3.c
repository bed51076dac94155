// Gemma 3's vision path against transformers (tests/data/families/gemma3_vlm, written by
// tools/vlm/make_gemma3_fixture.py with transformers' own Gemma3ForConditionalGeneration and
// Gemma3Processor): the config as transformers 5 writes it (rope_parameters nested per layer
// type), the committed photograph preprocessed by src/image to the processor's pixels, the
// SigLIP tower and the pooled projector's features within 1e-4 on the reference interpreter and
// the cpu runtime (through a session, and the cpu plan of @vision step by step with its GEMMs
// and fused kernels); @prefill_media's logits at every prompt position (causal, bidirectional
// inside the image block, a sliding layer) on both, and through sessions whose prefill chunks
// never cut the image's tokens, with 16 greedy ids; the same session checks on the xla backend
// (the PJRT CPU plugin of the test environment); the refusals: chunks too small for an
// image, a call continuing an image's run, a gemma3 checkpoint without vision_config, configs
// the family refuses; the processor's expansion of the template's text.
#include <math.h>
#include <stdio.h>

#include "mlxcel/chat.h"
#include "mlxcel/cpu_plan.h"
#include "mlxcel/image.h"
#include "mlxcel/session.h"
#include "mx_test_vlm.h"
#include "session/graph_binding.h"
#include "test_graph_runner.h"

static const double kTol = 1e-4;

static char g_data[4096];

static int32_t argmax(const float *v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

// media rows [n][H]: the image features at the image-token positions, in order.
static float *media_rows(const mx_model_t *m, const int32_t *ids, int32_t n, const float *feats) {
  int32_t H = m->config.hidden_size, k = 0;
  float *media = calloc((size_t)n * (size_t)H, sizeof *media);
  for (int32_t i = 0; i < n; i++)
    if (ids[i] == m->config.vision.image_token_id)
      memcpy(media + (size_t)i * H, feats + (size_t)(k++) * H, (size_t)H * sizeof *media);
  CHECK(k == m->config.vision.tokens_per_image);
  return media;
}

// Gemma3Processor's text-level expansion (mx_chat_expand_images): the chat template's text of
// the fixture's chat case gives transformers' prompt ids; a placeholder inside a plain range (a
// user's typed spelling) stays text, the ranges after an expansion move with it; a count other
// than the images' is refused with the text unchanged.
static void check_text_expansion(const mx_model_t *m, const cJSON *json) {
  const mx_vision_config_t *v = &m->config.vision;
  size_t pl = 0, wl = 0;
  const char *ph = mx_chat_image_placeholder(m->tokenizer, v, &pl);
  CHECK(ph && pl == 16 && strncmp(ph, "<start_of_image>", pl) == 0);
  char *with = NULL;
  CHECK_OK(mx_chat_image_with(m->tokenizer, v, &with, &wl));
  CHECK(with && wl == 16 && strcmp(with, "<start_of_image>") == 0);  // no line break (Gemma 3)
  free(with);
  const char *chat = cJSON_GetObjectItem(json, "chat_text")->valuestring;
  char *text = strdup(chat);
  size_t len = strlen(text);
  CHECK_OK(mx_chat_expand_images(m->tokenizer, v, 1, &text, &len, NULL, 0));
  int32_t *ids = NULL, n = 0;
  mx_encode_opts_t eo = {.add_special = false, .parse_special = true};
  CHECK_OK(mx_tokenizer_encode(m->tokenizer, text, len, &eo, &ids, &n));
  const cJSON *want = cJSON_GetObjectItem(json, "chat_prompt_ids");
  int32_t same = n == cJSON_GetArraySize(want);
  for (int32_t i = 0; same && i < n; i++) same = ids[i] == cJSON_GetArrayItem(want, i)->valueint;
  CHECK_MSG(same, "the expanded chat text gives %d ids, transformers %d", n,
            cJSON_GetArraySize(want));
  free(ids);
  free(text);
  text = strdup("a<start_of_image>b<start_of_image>c");
  len = strlen(text);
  mx_text_range_t plain[2] = {{18, 34}, {34, 35}};
  mx_status_t st = mx_chat_expand_images(m->tokenizer, v, 2, &text, &len, plain, 2);
  CHECK(st == MX_ERR_INVALID_ARG && strcmp(text, "a<start_of_image>b<start_of_image>c") == 0 &&
        strstr(mx_error_message(), "1 image placeholder (<start_of_image>) for 2 images"));
  CHECK_OK(mx_chat_expand_images(m->tokenizer, v, 1, &text, &len, plain, 2));
  size_t grow = 2 + 16 + 16 * 18 + 14 + 2 - 16;  // "\n\n" boi 16 x soft eoi "\n\n" - boi
  CHECK(len == 35 + grow && strncmp(text, "a\n\n<start_of_image><image_soft_token>", 37) == 0 &&
        strcmp(text + len - 18, "b<start_of_image>c") == 0);
  CHECK(plain[0].start == 18 + grow && plain[0].end == 34 + grow && plain[1].start == 34 + grow &&
        plain[1].end == 35 + grow);
  free(text);
}

// @prefill_media over the whole prompt with every position's logits, on the interpreter and as
// a cpu plan: transformers' logits (causal, bidirectional inside the image block, sliding layer
// included), which the causal mask alone misses by 1.66.
static void check_media_graph(const mx_model_t *m, const cJSON *json, const int32_t *ids, int32_t n,
                              const float *media) {
  int32_t V = m->config.vocab_size;
  mx_graph_opts_t go = {.batch = 1, .ctx = 64, .prefill_len = n, .all_logits = true, .media = true};
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
  bool *own = calloc((size_t)na, sizeof *own);  // allocated here (not a checkpoint tensor)
  for (int32_t i = 0; i < na; i++) {
    mx_graph_arg_t info;
    CHECK_OK(mx_graph_arg_info(f, i, &info));
    const mx_type_t *t = mx_value_type(f, f->body->args[i]);
    const void *src = NULL;
    if (info.role == MX_ARG_WEIGHT) {
      const mx_weight_t *w = mx_checkpoint_find(m->ckpt, info.name);
      args[i] = (mx_tensor_t){.type = *t, .data = (uint8_t *)w->data, .nbytes = w->nbytes};
      continue;
    }
    CHECK_OK(mx_tensor_alloc(&args[i], t));
    own[i] = true;
    memset(args[i].data, 0, args[i].nbytes);
    if (info.role == MX_ARG_TOKENS) src = ids;
    if (info.role == MX_ARG_POS0) src = &p0;
    if (info.role == MX_ARG_MEDIA) src = media;
    if (src) memcpy(args[i].data, src, args[i].nbytes);
  }
  for (int32_t r = 0; r < f->n_results; r++)
    CHECK_OK(mx_tensor_alloc(&res[r], &f->result_types[r]));
  const cJSON *want = cJSON_GetObjectItem(json, "logits");
  mx_tensor_t *ires = calloc((size_t)f->n_results, sizeof *ires);  // logits, then the caches
  CHECK_OK(mx_interp_run(mod, f, args, na, ires, NULL));
  if (ires[0].data) {
    double d = max_diff_rows((const float *)ires[0].data, want, 0, n, V);
    CHECK_MSG(d <= kTol, "interp: every position's logits differ by %g", d);
    printf("vlm_gemma3: interp @prefill_media logits max|d| %.3g\n", d);
  }
  for (int32_t r = 0; r < f->n_results; r++) mx_tensor_free(&ires[r]);
  free(ires);
  // The cpu plan: every mx.attention with its block ids runs the fused kernel.
  mx_cpu_compile_opts_t o = {.args = args};
  mx_cpu_plan_t *plan = NULL;
  CHECK_OK(mx_cpu_compile(mod, f, &o, &plan));
  if (plan) {
    CHECK_OK(mx_cpu_plan_run(plan, NULL, args, na, res));
    double d = max_diff_rows((const float *)res[0].data, want, 0, n, V);
    CHECK_MSG(d <= kTol, "cpu: every position's logits differ by %g", d);
    printf("vlm_gemma3: cpu @prefill_media logits max|d| %.3g\n", d);
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_plan_describe(plan, &sb);
    int32_t attn = mx_test_count(sb.data ? sb.data : "", "fast mx.attention");
    CHECK_MSG(attn == m->config.num_layers, "%d fused attentions in @prefill_media", attn);
    mx_strbuf_free(&sb);
    mx_cpu_plan_destroy(plan);
  }
  for (int32_t i = 0; i < na; i++)
    if (own[i]) mx_tensor_free(&args[i]);
  free(own);
  for (int32_t r = 0; r < f->n_results; r++) mx_tensor_free(&res[r]);
  free(args);
  free(res);
  mx_module_destroy(mod);
}

// A call of 64 tokens whose power-of-two pieces (32 first) would end inside the image's block:
// 20 text tokens, then the prompt (its image at 30..45). The runner's pieces must never cut a
// block, so its logits equal those of chunks of 16, which end before the block and hold it
// whole (they differed by far more when the 32-token piece cut it).
static void check_pieces(const mx_model_t *m, const int32_t *ids, int32_t n, const float *media,
                         const char *backend) {
  const int32_t pre = 20, H = m->config.hidden_size, V = m->config.vocab_size;
  int32_t np = pre + n;
  int32_t *p = malloc(sizeof *p * (size_t)np);
  float *rows = calloc((size_t)np * (size_t)H, sizeof *rows), *want = malloc(sizeof *want * V);
  mx_session_t *s16 = NULL, *s64 = NULL;
  mx_session_opts_t so = {.backend = backend, .ctx = 128, .prefill_chunk = 16};
  mx_test_backend_opts(backend, &so.backend_opts);
  CHECK_OK(mx_session_create(m, &so, &s16));
  so.prefill_chunk = 64;
  CHECK_OK(mx_session_create(m, &so, &s64));
  if (p && rows && want && s16 && s64) {
    memcpy(p, ids + n - pre, sizeof *p * (size_t)pre);  // text: the prompt's last tokens
    memcpy(p + pre, ids, sizeof *p * (size_t)n);
    memcpy(rows + (size_t)pre * H, media, sizeof *rows * (size_t)n * H);
    CHECK(mx_vision_media_piece(&m->config.vision, p, 64, 32) == 16);  // the text first
    CHECK_OK(mx_session_prefill_media(s16, p, rows, np));
    memcpy(want, mx_session_logits(s16), sizeof *want * V);
    CHECK_OK(mx_session_prefill_media(s64, p, rows, np));
    double d = 0;
    for (int32_t i = 0; i < V; i++) d = fmax(d, fabs(want[i] - mx_session_logits(s64)[i]));
    printf("vlm_gemma3: %s chunk 64 vs 16 max|d| %.3g\n", backend, d);
    CHECK_MSG(d <= 1e-5, "%s: a chunk of 64 gives logits %g from chunks of 16", backend, d);
  }
  mx_session_destroy(s16);
  mx_session_destroy(s64);
  free(p);
  free(rows);
  free(want);
}

// Through a session on `backend`: the features; the prompt prefilled in chunks of 16 (the first
// ends before the image's 16 tokens, the second holds them whole) to transformers' last logits
// and 16 greedy ids; chunks of 8 run the image whole in one call of its 16 tokens anyway, and a
// call that continues an image's run already in the context is refused.
static void check_session(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                          const char *backend) {
  const mx_model_config_t *c = &m->config;
  int32_t H = c->hidden_size, V = c->vocab_size, N = c->vision.tokens_per_image, n = 0, ng = 0;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "greedy_ids"), &ng);
  mx_session_opts_t so = {.backend = backend, .ctx = 128, .prefill_chunk = 16};
  mx_test_backend_opts(backend, &so.backend_opts);
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  float *feats = malloc(sizeof(float) * (size_t)N * (size_t)H), *media = NULL;
  int64_t npx = px->shape[0] * px->shape[1] * px->shape[2];
  if (!s) goto out;
  CHECK_OK(mx_session_vision(s, px->data, npx, feats, (int64_t)N * H));
  double d = max_diff_rows(feats, cJSON_GetObjectItem(json, "image_features"), 0, N, H);
  CHECK_MSG(d <= kTol, "%s: image features differ by %g", backend, d);
  printf("vlm_gemma3: %s features max|d| %.3g\n", backend, d);
  media = media_rows(m, ids, n, feats);
  if (strcmp(backend, "interp") == 0) check_media_graph(m, json, ids, n, media);
  CHECK_OK(mx_session_prefill_media(s, ids, media, n));
  d = max_diff_rows(mx_session_logits(s), cJSON_GetObjectItem(json, "logits"), n - 1, 1, V);
  CHECK_MSG(d <= kTol, "%s: last prompt logits differ by %g", backend, d);
  int32_t same = 0;
  for (int32_t i = 0; i < ng; i++) {
    int32_t id = argmax(mx_session_logits(s), V);
    same += id == greedy[i];
    if (mx_session_decode(s, id) != MX_OK) break;
  }
  CHECK_MSG(same == ng, "%s: %d of %d greedy ids equal", backend, same, ng);
  check_pieces(m, ids, n, media, backend);
  // Up to the middle of the image, then the rest: the second call is refused.
  mx_session_reset(s);
  CHECK_OK(mx_session_prefill_media(s, ids, media, 14));
  mx_status_t st = mx_session_prefill_media(s, ids + 14, media + (size_t)14 * H, n - 14);
  CHECK(st == MX_ERR_INVALID_ARG &&
        strstr(mx_error_message(), "continues a run of image tokens") != NULL);
  CHECK(mx_session_n_past(s) == 14);
  // Gemma3Processor expands <start_of_image> in the text (mx_chat_expand_images): the ids-level
  // rule refuses rather than writing another prompt.
  int32_t *e = NULL, ne = 0, boi = c->vision.vision_start_token_id;
  st = mx_vision_expand_prompt(c, &boi, 1, 1, NULL, &e, &ne);
  CHECK(st == MX_ERR_UNSUPPORTED && e == NULL &&
        strstr(mx_error_message(), "text-level image expansion") != NULL);
  mx_session_destroy(s);
  s = NULL;
  so.prefill_chunk = 8;
  CHECK_OK(mx_session_create(m, &so, &s));
  if (s) {  // a block longer than the chunk runs whole, in one graph of its length
    st = mx_session_prefill_media(s, ids, media, n);
    CHECK_MSG(st == MX_OK, "chunk 8 with a 16-token block: %s", st ? mx_error_message() : "ok");
    const float *l = mx_session_logits(s);
    CHECK(mx_session_n_past(s) == n && l && argmax(l, c->vocab_size) == greedy[0]);
  }
out:
  free(media);
  free(feats);
  free(ids);
  free(greedy);
  mx_session_destroy(s);
}

static void check_vision_plan(const mx_model_t *m) {
  mx_strbuf_t sb;
  mx_test_vision_plan(m, &sb);
  const char *d = sb.data ? sb.data : "";
  int32_t L = m->config.vision.layers_run;
  int32_t gemm = mx_test_count(d, "fast stablehlo.dot_general (dot_general->gemm"),
          attn = mx_test_count(d, "fast mx.attention"), norm = mx_test_count(d, "fast mx.rms_norm");
  // GEMMs: the patch embedding, 6 per layer and the projector (mm_input_projection_weight, a
  // matmul weight [D, hidden] packed as a linear's; no interpreter dot_general left).
  CHECK_MSG(gemm == 2 + 6 * L && attn == L && norm == 2 + 2 * L &&
                !strstr(d, "fallback stablehlo.dot_general") && !strstr(d, "whole function"),
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
      check_session(m, json, &px, "xla");
    }
    mx_pixels_free(&px);
    check_vision_plan(m);
    check_text_expansion(m, json);
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
