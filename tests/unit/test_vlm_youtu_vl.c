// Youtu-VL against llama.cpp (tests/data/families/youtu_vl, written by
// tools/vlm/make_youtu_vl_fixture.py: llama.cpp's converter, vision graph, preprocessing and
// decoder through llama-cpp-python, f32, its GELU tables off; ADR 0027). Three images, each
// through src/image's YoutuVLImageProcessor (the photograph downscaled by the max-patches rule,
// a crop already a multiple of 32, a crop rounded up) to llama.cpp's size and patch grid, and
// @vision built for each grid within 1e-4 of llama.cpp's embeddings on the reference interpreter
// and the cpu runtime (windows of 2 x 2 merged units, uneven at the edges, block 1 full
// attention), the cpu plan step-wise with fused kernels; the prompt with the photograph at 1-D
// positions through a session on interp, cpu and xla (every position's logits within 1e-4 one
// token per call, a chunked prefill that cuts the image, the 16 greedy ids) and through a batch
// beside a text slot; the text-only prompt; the prompt's expansion; the refusals of the M-RoPE
// entries and of configs and processor files the family does not take.
#include <math.h>
#include <stdio.h>

#include "mlxcel/batch.h"
#include "mlxcel/cpu_plan.h"
#include "mlxcel/image.h"
#include "mlxcel/session.h"
#include "test_vlm_qwen.h"

// Image `im` of the fixture (the photograph, or the crop its crop_box_xyxy names) through the
// checkpoint's processor into *px, checked against llama.cpp's resized size and patch grid.
static bool image_pixels(const mx_model_t *m, const cJSON *im, mx_pixels_t *px) {
  char path[8192];
  snprintf(path, sizeof path, "%s/image/inputs/chelsea.png", g_data);
  mx_image_proc_t proc;
  mx_image_t img = {0}, crop = {0};
  CHECK_OK(mx_image_proc_load(m->dir, &proc));
  CHECK_OK(mx_image_load(path, NULL, &img, NULL));
  const cJSON *box = cJSON_GetObjectItem(im, "crop_box_xyxy");
  const mx_image_t *in = &img;
  if (cJSON_IsArray(box) && img.rgb) {
    int32_t x0 = cJSON_GetArrayItem(box, 0)->valueint, y0 = cJSON_GetArrayItem(box, 1)->valueint;
    crop.width = cJSON_GetArrayItem(box, 2)->valueint - x0;
    crop.height = cJSON_GetArrayItem(box, 3)->valueint - y0;
    crop.rgb = malloc((size_t)crop.width * crop.height * 3);
    for (int32_t y = 0; crop.rgb && y < crop.height; y++)
      memcpy(crop.rgb + (size_t)y * crop.width * 3,
             img.rgb + ((size_t)(y0 + y) * img.width + x0) * 3, (size_t)crop.width * 3);
    in = &crop;
  }
  if (in->rgb) CHECK_OK(mx_image_preprocess(&proc, in, px));
  mx_image_free(&img);
  mx_image_free(&crop);
  if (!px->data) return false;
  const cJSON *wh = cJSON_GetObjectItem(im, "resized_wh"),
              *g = cJSON_GetObjectItem(im, "patch_grid_hw");
  const char *name = cJSON_GetObjectItem(im, "name")->valuestring;
  CHECK_MSG(px->width == cJSON_GetArrayItem(wh, 0)->valueint &&
                px->height == cJSON_GetArrayItem(wh, 1)->valueint,
            "%s: resized to %d x %d, llama.cpp %d x %d", name, px->width, px->height,
            cJSON_GetArrayItem(wh, 0)->valueint, cJSON_GetArrayItem(wh, 1)->valueint);
  CHECK(px->rank == 2 && px->shape[1] == 16 * 16 * 3 && px->grid_thw[0] == 1 &&
        px->grid_thw[1] == cJSON_GetArrayItem(g, 0)->valueint &&
        px->grid_thw[2] == cJSON_GetArrayItem(g, 1)->valueint);
  return true;
}

static const cJSON *features_of(const cJSON *json, const char *name) {
  char key[96];
  snprintf(key, sizeof key, "image_features_%s", name);
  return cJSON_GetObjectItem(json, key);
}

// @vision for the image's grid on both executors against llama.cpp's embeddings; the cpu plan
// runs the patch embedding, q / k / v / out, fc1 / fc2 and the merger's two linears as GEMMs,
// every attention (one per window in the windowed blocks), norm and RoPE with its fused kernel.
static void check_tower(const mx_model_t *m, const cJSON *want, const mx_pixels_t *px,
                        const char *name) {
  const mx_vision_config_t *v = &m->config.vision;
  mx_module_t *mod = NULL;
  mx_func_t *f = build_vision(m, px, &mod);
  if (!f) return;
  int32_t gh = (int32_t)px->grid_thw[1] / 2, gw = (int32_t)px->grid_thw[2] / 2, N = gh * gw;
  int32_t H = m->config.hidden_size, n_windows = ((gh + 1) / 2) * ((gw + 1) / 2);
  mx_tensor_t *args = vision_args(m, f, px), res;
  memset(&res, 0, sizeof res);
  CHECK_OK(mx_interp_run(mod, f, args, f->body->n_args, &res, NULL));
  double d = res.data ? max_diff_rows((const float *)res.data, want, 0, N, H) : INFINITY;
  CHECK_MSG(d <= kTol, "%s interp: image features differ by %g", name, d);
  mx_tensor_free(&res);
  mx_cpu_compile_opts_t o = {.args = args};
  mx_cpu_plan_t *plan = NULL;
  CHECK_OK(mx_cpu_compile(mod, f, &o, &plan));
  if (plan) {
    mx_tensor_t out;
    CHECK_OK(mx_tensor_alloc(&out, &f->result_types[0]));
    CHECK_OK(mx_cpu_plan_run(plan, NULL, args, f->body->n_args, &out));
    d = out.data ? max_diff_rows((const float *)out.data, want, 0, N, H) : INFINITY;
    CHECK_MSG(d <= kTol, "%s cpu: image features differ by %g", name, d);
    mx_tensor_free(&out);
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_plan_describe(plan, &sb);
    const char *s = sb.data ? sb.data : "";
    int32_t L = v->num_layers, n_full = 0;
    for (int32_t l = 0; l < L; l++) n_full += v->layer_full[l];
    int32_t gemm = mx_test_count(s, "fast stablehlo.dot_general (dot_general->gemm"),
            attn = mx_test_count(s, "fast mx.attention"),
            norm = mx_test_count(s, "fast mx.rms_norm"),
            rope = mx_test_count(s, "fast mx.rope (mx.rope)");
    int32_t want_attn = n_full + (L - n_full) * n_windows;
    CHECK_MSG(gemm == 1 + 6 * L + 2 && attn == want_attn && norm == 2 * L + 2 && rope == 4 * L &&
                  !strstr(s, "whole function"),
              "%s: %d GEMMs, %d attentions (want %d), %d norms, %d ropes in the @vision plan:\n%s",
              name, gemm, attn, want_attn, norm, rope, s);
    mx_strbuf_free(&sb);
    mx_cpu_plan_destroy(plan);
  }
  free(args);
  mx_module_destroy(mod);
}

// The media rows of the prompt: feature k at the k-th image token.
static float *media_rows(const mx_model_t *m, const int32_t *ids, int32_t n, const float *feats) {
  size_t H = (size_t)m->config.hidden_size;
  float *media = calloc((size_t)n * H, sizeof(float));
  for (int32_t i = 0, k = 0; media && i < n; i++)
    if (ids[i] == m->config.vision.image_token_id)
      memcpy(media + (size_t)i * H, feats + (size_t)(k++) * H, sizeof(float) * H);
  return media;
}

// The prompt with the photograph through a session: the features of vision_grid, every
// position's logits one token per call (1-D positions, the image's rows at its tokens), then a
// chunked prefill (chunk 8 cuts the image) and the 16 greedy ids; the M-RoPE entry is refused.
static void check_session(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                          const char *backend) {
  int32_t n = 0, ng = 0, V = m->config.vocab_size, H = m->config.hidden_size;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "greedy_ids"), &ng);
  const cJSON *logits = cJSON_GetObjectItem(json, "logits");
  int32_t gh = (int32_t)px->grid_thw[1], gw = (int32_t)px->grid_thw[2], N = gh * gw / 4;
  mx_session_opts_t so = {.backend = backend, .ctx = 96, .prefill_chunk = 8};
  mx_test_backend_opts(backend, &so.backend_opts);
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  float *feats = malloc(sizeof(float) * (size_t)N * (size_t)H), *media = NULL;
  if (s && feats) {
    CHECK_OK(mx_session_vision_grid(s, px->data, px->shape[0] * px->shape[1], gh, gw, feats,
                                    (int64_t)N * H));
    double fd = max_diff_rows(feats, features_of(json, "chelsea"), 0, N, H);
    CHECK_MSG(fd <= kTol, "%s: session image features differ by %g", backend, fd);
    media = media_rows(m, ids, n, feats);
    double ld = 0;
    for (int32_t i = 0; media && i < n; i++) {
      mx_status_t st = mx_session_prefill_media(s, ids + i, media + (size_t)i * H, 1);
      CHECK_MSG(st == MX_OK, "%s: position %d: %s", backend, i, mx_error_message());
      if (st) break;
      double d = max_diff_rows(mx_session_logits(s), logits, i, 1, V);
      if (d > ld) ld = d;
    }
    CHECK_MSG(ld <= kTol, "%s: prompt logits (one token per call) differ by %g", backend, ld);
    mx_session_reset(s);
    if (media) CHECK_OK(mx_session_prefill_media(s, ids, media, n));
    double lastd = max_diff_rows(mx_session_logits(s), logits, n - 1, 1, V);
    CHECK_MSG(lastd <= kTol, "%s: last prompt logits differ by %g", backend, lastd);
    CHECK(mx_session_rope_next(s) == n);
    // The greedy ids, and after each of the first ones the decode step's logits (the KV cache
    // after the image): decode_logits[i] follows greedy id i.
    const cJSON *dl = cJSON_GetObjectItem(json, "decode_logits");
    int32_t same = 0, n_dl = cJSON_GetArraySize(dl);
    double dd = 0;
    for (int32_t i = 0; i < ng; i++) {
      int32_t id = argmax(mx_session_logits(s), V);
      same += id == greedy[i];
      if (mx_session_decode(s, id) != MX_OK) break;
      if (i < n_dl) dd = fmax(dd, max_diff_rows(mx_session_logits(s), dl, i, 1, V));
    }
    CHECK_MSG(same == ng, "%s: %d of %d greedy ids equal", backend, same, ng);
    CHECK_MSG(n_dl >= 8 && dd <= kTol, "%s: decode logits differ by %g (%d rows)", backend, dd,
              n_dl);
    int32_t pos[3] = {0, 0, 0};
    mx_status_t st = mx_session_prefill_mrope(s, ids, media, pos, 1);
    CHECK(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "no Qwen2-VL vision tower"));
  }
  free(feats);
  free(media);
  free(ids);
  free(greedy);
  mx_session_destroy(s);
}

// The same prompt through a batch (the server's engine) in chunks of 8 while another slot holds
// the text prompt; both decoded together give the 16 greedy ids and the text prompt's own.
static void check_batch_youtu(const mx_model_t *m, const cJSON *json, const mx_pixels_t *px,
                              const char *backend) {
  int32_t n = 0, ng = 0, nt = 0, ngt = 0, V = m->config.vocab_size, H = m->config.hidden_size;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "greedy_ids"), &ng);
  int32_t *tids = json_ids(cJSON_GetObjectItem(json, "text_prompt_ids"), &nt);
  int32_t *tgreedy = json_ids(cJSON_GetObjectItem(json, "text_greedy_ids"), &ngt);
  int32_t gh = (int32_t)px->grid_thw[1], gw = (int32_t)px->grid_thw[2], N = gh * gw / 4;
  mx_batch_opts_t bo = {.backend = backend, .ctx = 96, .prefill_chunk = 8, .n_slots = 2};
  mx_test_backend_opts(backend, &bo.backend_opts);
  mx_batch_t *b = NULL;
  CHECK_OK(mx_batch_create(m, &bo, &b));
  float *feats = malloc(sizeof(float) * (size_t)N * (size_t)H), *media = NULL;
  if (b && feats) {
    CHECK_OK(mx_batch_vision_grid(b, px->data, px->shape[0] * px->shape[1], gh, gw, feats,
                                  (int64_t)N * H));
    double fd = max_diff_rows(feats, features_of(json, "chelsea"), 0, N, H);
    CHECK_MSG(fd <= kTol, "%s batch: image features differ by %g", backend, fd);
    media = media_rows(m, ids, n, feats);
    for (int32_t off = 0; off < nt; off += 8)
      CHECK_OK(mx_batch_prefill(b, 0, tids + off, nt - off < 8 ? nt - off : 8));
    for (int32_t off = 0; media && off < n; off += 8)
      CHECK_OK(mx_batch_prefill_media(b, 1, ids + off, media + (size_t)off * H,
                                      n - off < 8 ? n - off : 8));
    int32_t pos[3] = {0, 0, 0};
    mx_status_t st = mx_batch_prefill_mrope(b, 1, ids, media, pos, 1);
    CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "at 1-D positions"));
    int32_t same = 0, tsame = 0, steps = ng < ngt ? ng : ngt;
    for (int32_t i = 0; i < steps; i++) {
      const float *li = mx_batch_logits(b, 1), *lt = mx_batch_logits(b, 0);
      if (!li || !lt) break;
      int32_t slots[2] = {1, 0}, next[2] = {argmax(li, V), argmax(lt, V)};
      same += next[0] == greedy[i];
      tsame += next[1] == tgreedy[i];
      if (mx_batch_decode(b, slots, next, 2) != MX_OK) break;
    }
    CHECK_MSG(same == steps && tsame == steps, "%s batch: %d and %d of %d greedy ids equal",
              backend, same, tsame, steps);
  }
  free(feats);
  free(media);
  free(ids);
  free(greedy);
  free(tids);
  free(tgreedy);
  mx_batch_destroy(b);
}

// The processor's expansion: one <|image_pad|> per image becomes its grid's run, wrapped in
// <|vision_start|> / <|vision_end|> where the prompt lacks them: the fixture's prompt back.
static void check_expand(const mx_model_t *m, const cJSON *json) {
  int32_t n = 0, img = m->config.vision.image_token_id;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  int32_t *raw = malloc(sizeof(int32_t) * (size_t)n), nr = 0, runs = 0, count = 0;
  for (int32_t i = 0; raw && i < n; i++) {
    if (ids[i] == img) {
      count++;
      if (i > 0 && ids[i - 1] == img) continue;
      runs++;
    }
    if (ids[i] == m->config.vision.vision_start_token_id ||
        ids[i] == m->config.vision.vision_end_token_id)
      continue;  // dropped: the expansion writes them
    raw[nr++] = ids[i];
  }
  int32_t *out = NULL, n_out = 0;
  CHECK(runs == 1);
  CHECK_OK(mx_vision_expand_prompt(&m->config, raw, nr, 1, &count, &out, &n_out));
  CHECK(out && n_out == n && memcmp(out, ids, sizeof(int32_t) * (size_t)n) == 0);
  free(out);
  free(raw);
  free(ids);
}

static void check_configs(void) {
  const char *base =
      "{\"model_type\": \"youtu_vl\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 4, \"num_hidden_layers\": 2, \"intermediate_size\": 128, "
      "\"vocab_size\": 300, \"kv_lora_rank\": 16, \"q_lora_rank\": 24, \"qk_nope_head_dim\": 16, "
      "\"qk_rope_head_dim\": 8, \"v_head_dim\": 12, \"image_token_id\": 290, "
      "\"vision_start_token_id\": 288, \"vision_end_token_id\": 289, \"vision_config\": "
      "{\"hidden_size\": 32, \"num_attention_heads\": 2, \"num_hidden_layers\": 2";
  char json[2048];
  snprintf(json, sizeof json, "%s%s}}", base,
           ", \"window_size\": 64, \"fullatt_block_indexes\": [1]");
  mx_model_config_t cfg;
  CHECK_OK(mx_config_parse(json, strlen(json), NULL, 0, "config.json", &cfg));
  CHECK(cfg.vision.present && cfg.vision.kind == MX_VISION_YOUTU_VL && cfg.kv_lora_rank == 16 &&
        cfg.vision.patch_size == 16 && cfg.vision.spatial_merge_size == 2 &&
        cfg.vision.layer_full[1] && !cfg.vision.layer_full[0] && cfg.vision.image_token_id == 290 &&
        !mx_vision_mrope(&cfg.vision) && cfg.mrope_section[0] == 0);
  // The text model in text_config (as transformers 5 writes nested configs), the dtype outside.
  const char *nested =
      "{\"model_type\": \"youtu_vl\", \"torch_dtype\": \"bfloat16\", \"text_config\": "
      "{\"hidden_size\": 64, \"num_attention_heads\": 4, \"num_key_value_heads\": 4, "
      "\"num_hidden_layers\": 2, \"intermediate_size\": 128, \"vocab_size\": 300, "
      "\"kv_lora_rank\": 16, \"q_lora_rank\": 24, \"qk_nope_head_dim\": 16, "
      "\"qk_rope_head_dim\": 8, \"v_head_dim\": 12}, \"image_token_id\": 290, "
      "\"vision_start_token_id\": 288, \"vision_end_token_id\": 289, \"vision_config\": "
      "{\"hidden_size\": 32, \"num_attention_heads\": 2, \"num_hidden_layers\": 2, "
      "\"window_size\": 64, \"fullatt_block_indexes\": [0]}}";
  CHECK_OK(mx_config_parse(nested, strlen(nested), NULL, 0, "config.json", &cfg));
  CHECK(cfg.vision.kind == MX_VISION_YOUTU_VL && cfg.hidden_size == 64 && cfg.vocab_size == 300 &&
        cfg.kv_lora_rank == 16 && cfg.dtype == MX_ELEM_BF16 && cfg.vision.layer_full[0]);
  snprintf(json, sizeof json, "%s%s}}", base, ", \"fullatt_block_indexes\": [1]");
  mx_test_config_error(json, "vision_config.window_size is required");
  // Without its token ids, Youtu-VL-4B's defaults, outside this vocabulary of 300.
  const char *no_ids =
      "{\"model_type\": \"youtu_vl\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 4, \"vocab_size\": 300, \"vision_config\": {\"hidden_size\": "
      "32, \"num_attention_heads\": 2, \"num_hidden_layers\": 2, \"window_size\": 64, "
      "\"fullatt_block_indexes\": [1]}}";
  mx_test_config_error(no_ids, "image_token_id (128264) is outside the text vocabulary (300)");
  snprintf(json, sizeof json, "%s%s}}", base, ", \"window_size\": 64");
  mx_test_config_error(json, "fullatt_block_indexes is required");
  snprintf(json, sizeof json, "%s%s}}", base,
           ", \"window_size\": 48, \"fullatt_block_indexes\": [1]");
  mx_test_config_error(json, "window_size (48) must be a positive multiple");
  snprintf(json, sizeof json, "%s%s}}", base,
           ", \"window_size\": 64, \"fullatt_block_indexes\": [1], \"hidden_act\": \"gelu\"");
  mx_test_config_error(json, "hidden_act 'gelu' is not supported");
  snprintf(json, sizeof json, "%s%s}}", base,
           ", \"window_size\": 96, \"fullatt_block_indexes\": [1], \"spatial_merge_size\": 3");
  mx_test_config_error(json, "spatial_merge_size 3 is not supported");
  // The processor file: defaults are llama.cpp's; another resample filter is refused.
  const char *p = "{\"image_processor_type\": \"YoutuVLImageProcessor\"}";
  mx_image_proc_t proc;
  CHECK_OK(mx_image_proc_parse(p, strlen(p), &proc));
  CHECK(proc.kind == MX_IMAGE_PROC_YOUTU_VL && proc.max_num_patches == 250000 &&
        proc.patch_size == 16 && proc.merge_size == 2 && proc.resample == MX_RESAMPLE_BILINEAR &&
        proc.image_mean[0] == 0.5 && proc.image_std[2] == 0.5);
  p = "{\"image_processor_type\": \"YoutuVLImageProcessor\", \"resample\": 3}";
  CHECK(mx_image_proc_parse(p, strlen(p), &proc) == MX_ERR_UNSUPPORTED &&
        strstr(mx_error_message(), "only 'resample' 2"));
  p = "{\"image_processor_type\": \"YoutuVLImageProcessor\", \"max_num_patches\": 3}";
  CHECK(mx_image_proc_parse(p, strlen(p), &proc) == MX_ERR_PARSE &&
        strstr(mx_error_message(), "below one merged unit (4 patches)"));
  p = "{\"image_processor_type\": \"YoutuVLImageProcessor\", \"max_pixels\": 3}";
  CHECK(mx_image_proc_parse(p, strlen(p), &proc) == MX_ERR_UNSUPPORTED &&
        strstr(mx_error_message(), "'max_pixels' is not an option"));
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  snprintf(g_data, sizeof g_data, "%s", data ? data : "tests/data");
  char dir[8192], path[8300];
  snprintf(dir, sizeof dir, "%s/families/youtu_vl", g_data);
  snprintf(path, sizeof path, "%s/vision_reference.json", dir);
  cJSON *json = read_json(path);
  CHECK_MSG(json != NULL, "cannot read %s", path);
  mx_model_t *m = NULL;
  if (json) CHECK_OK(mx_model_load(dir, &m));
  if (m) {
    CHECK(m->config.vision.kind == MX_VISION_YOUTU_VL &&
          m->config.vision.image_token_id ==
              cJSON_GetObjectItem(json, "image_token_index")->valueint);
    const cJSON *im;
    cJSON_ArrayForEach(im, cJSON_GetObjectItem(json, "images")) {
      const char *name = cJSON_GetObjectItem(im, "name")->valuestring;
      mx_pixels_t px = {0};
      if (image_pixels(m, im, &px)) {
        check_tower(m, features_of(json, name), &px, name);
        if (strcmp(name, "chelsea") == 0) {
          check_session(m, json, &px, "interp");
          check_session(m, json, &px, "cpu");
          check_session(m, json, &px, "xla");
          check_batch_youtu(m, json, &px, "cpu");
          check_batch_youtu(m, json, &px, "xla");
        }
      }
      mx_pixels_free(&px);
    }
    check_text(m, json, "interp");
    check_text(m, json, "cpu");
    check_expand(m, json);
    check_bad_grid(m, 3, 8);
  }
  mx_model_free(m);
  cJSON_Delete(json);
  check_configs();
  return mx_test_finish();
}
