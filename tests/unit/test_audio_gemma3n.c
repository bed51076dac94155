// Gemma 3n's audio tower as @audio against transformers (tests/data/families/gemma3n-audio,
// written by tools/audio/make_gemma3n_audio_fixture.py with transformers' own
// Gemma3nForConditionalGeneration): the committed recording (tests/data/audio/pluck-pcm16.wav)
// decoded, resampled to 16 kHz and turned into log-mel features on the host (src/audio), then
// @audio on the reference interpreter and the cpu runtime gives get_audio_features' rows padded
// as Gemma3nModel pads them within 1e-4, for the recording's own mask and with its last 10
// frames masked; the audio prompt through sessions on the interpreter, the cpu backend and the
// xla backend (the PJRT CPU plugin of the test environment): the rows, the last prompt logits
// and the greedy ids; then the audio config's defaults (Gemma3nAudioConfig's) and refusals.
#include <math.h>
#include <stdio.h>

#include "mlxcel/audio.h"
#include "mlxcel/cpu_plan.h"
#include "mlxcel/session.h"
#include "mx_test_vlm.h"
#include "test_graph_runner.h"

static const double kTol = 1e-4;
static char g_data[4096];  // the test data folder (MX_TEST_DATA)

// The recording's host features [frames, 128] and mask (the caller frees both).
static int64_t host_features(const cJSON *json, float **feat, uint8_t **mask) {
  char path[8300];
  snprintf(path, sizeof path, "%s/audio/pluck-pcm16.wav", g_data);
  mx_audio_t wav = {0}, x = {0};
  int64_t frames = 0;
  mx_mel_opts_t o = mx_mel_opts_gemma3n();
  CHECK_OK(mx_wav_read(path, NULL, &wav));
  CHECK_OK(mx_audio_resample(&wav, o.rate, &x));
  CHECK_OK(mx_audio_log_mel(x.samples, x.n, &o, feat, mask, &frames));
  mx_audio_free(&wav);
  mx_audio_free(&x);
  int64_t want = cJSON_GetObjectItem(json, "frames")->valueint;
  CHECK_MSG(frames == want && *feat, "%lld host frames, the reference has %lld", (long long)frames,
            (long long)want);
  if (frames != want || !*feat) return 0;
  double d = max_diff_rows(*feat, cJSON_GetObjectItem(json, "features"), 0, (int32_t)frames, 128);
  printf("gemma3n-audio: host log-mel features within %.3g of the reference's\n", d);
  CHECK_MSG(d <= kTol, "host features differ by %g", d);
  return frames;
}

// @audio on the interpreter and the cpu runtime with frame mask `mask` against rows `want`.
static void run_audio(const mx_model_t *m, mx_module_t *mod, float *feat, int32_t *mask,
                      const cJSON *want, const char *what) {
  mx_func_t *f = mx_module_find_func(mod, "audio");
  const mx_audio_config_t *a = &m->config.audio;
  int64_t od[3] = {1, a->soft_tokens, m->config.hidden_size};
  mx_type_t ot = mx_type_tensor(MX_ELEM_F32, 3, od);
  CHECK(f != NULL && f->n_results == 1 && mx_type_equal(&f->result_types[0], &ot));
  if (!f) return;
  int32_t n = f->body->n_args, rows = (int32_t)od[1], H = (int32_t)od[2];
  mx_tensor_t *args = calloc((size_t)n, sizeof *args);
  for (int32_t i = 0; args && i < n; i++) {
    mx_graph_arg_t info;
    CHECK_OK(mx_graph_arg_info(f, i, &info));
    args[i].type = *mx_value_type(f, f->body->args[i]);
    args[i].nbytes = mx_type_nbytes(&args[i].type);
    if (info.role == MX_ARG_AUDIO) {
      args[i].data = (uint8_t *)feat;
    } else if (info.role == MX_ARG_AUDIO_MASK) {
      args[i].data = (uint8_t *)mask;
    } else {
      const mx_weight_t *w = mx_checkpoint_find(m->ckpt, info.name);
      CHECK_MSG(w != NULL && info.role == MX_ARG_WEIGHT, "no tensor %s", info.name);
      if (w) args[i].data = (uint8_t *)w->data;
    }
  }
  mx_tensor_t res;
  memset(&res, 0, sizeof res);
  CHECK_OK(mx_interp_run(mod, f, args, n, &res, NULL));
  double d = res.data ? max_diff_rows((const float *)res.data, want, 0, rows, H) : INFINITY;
  printf("gemma3n-audio interp (%s): audio rows within %.3g\n", what, d);
  CHECK_MSG(d <= kTol, "interp (%s): audio rows differ by %g", what, d);
  mx_tensor_free(&res);
  mx_cpu_compile_opts_t o = {.args = args};
  mx_cpu_plan_t *plan = NULL;
  CHECK_OK(mx_cpu_compile(mod, f, &o, &plan));
  mx_tensor_t out;
  memset(&out, 0, sizeof out);
  if (plan && mx_tensor_alloc(&out, &ot) == MX_OK) {
    CHECK_OK(mx_cpu_plan_run(plan, NULL, args, n, &out));
    d = max_diff_rows((const float *)out.data, want, 0, rows, H);
    printf("gemma3n-audio cpu (%s): audio rows within %.3g\n", what, d);
    CHECK_MSG(d <= kTol, "cpu (%s): audio rows differ by %g", what, d);
    // The linears are GEMMs and the RMS norms fused; nothing runs the whole entry on the
    // interpreter.
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_cpu_plan_describe(plan, &sb);
    const char *ps = sb.data ? sb.data : "";
    int32_t L = a->num_layers, gemm = mx_test_count(ps, "(dot_general->gemm"),
            norm = mx_test_count(ps, "fast mx.rms_norm");
    CHECK_MSG(gemm >= 3 + 10 * L && norm >= 9 * L && !strstr(ps, "whole function"),
              "%d GEMMs, %d norms in the @audio plan:\n%s", gemm, norm, ps);
    mx_strbuf_free(&sb);
  }
  mx_tensor_free(&out);
  mx_cpu_plan_destroy(plan);
  free(args);
}

// The media rows [n][H] of prompt ids: row k of rows [soft_tokens][H] at the k-th audio token
// (the caller frees them).
static float *media_rows(const mx_model_t *m, const int32_t *ids, int32_t n, const float *rows) {
  int32_t H = m->config.hidden_size, k = 0;
  float *media = calloc((size_t)n * (size_t)H, sizeof *media);
  for (int32_t i = 0; media && i < n; i++)
    if (ids[i] == m->config.audio.audio_token_id)
      memcpy(media + (size_t)i * H, rows + (size_t)(k++) * H, sizeof *media * (size_t)H);
  CHECK_MSG(k == m->config.audio.soft_tokens, "%d audio tokens in the prompt", k);
  return media;
}

// @prefill_media over the reference prompt with transformers' audio rows at its audio tokens:
// every position's logits on the interpreter and as a cpu plan against Gemma3nForConditional-
// Generation's. <end_of_audio> (272) and <end_of_image> (256) lie past the per-layer vocabulary
// (256): embedded by embed_audio / embed_vision, not the text table (which misses by 1.55).
static void check_media_graph(const mx_model_t *m, const cJSON *json) {
  int32_t V = m->config.vocab_size, H = m->config.hidden_size, n = 0, nr = 0;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  const cJSON *jr = cJSON_GetObjectItem(json, "audio_rows");
  nr = cJSON_GetArraySize(jr);
  float *rows = calloc((size_t)nr * (size_t)H, sizeof *rows);
  for (int32_t r = 0; rows && r < nr; r++)
    for (int32_t h = 0; h < H; h++)
      rows[(size_t)r * H + h] =
          (float)cJSON_GetArrayItem(cJSON_GetArrayItem(jr, r), h)->valuedouble;
  float *media = rows ? media_rows(m, ids, n, rows) : NULL;
  mx_graph_opts_t go = {.batch = 1, .ctx = 64, .prefill_len = n, .all_logits = true, .media = true};
  mx_module_t *mod = NULL;
  CHECK_OK(mx_model_build_graph(&m->config, m->ckpt, &go, &mod));
  mx_func_t *f = mod ? mx_module_find_func(mod, "prefill_media") : NULL;
  CHECK(f != NULL && mx_module_find_func(mod, "vision") == NULL);
  int32_t na = f ? f->body->n_args : 0, p0 = 0;
  mx_tensor_t *args = calloc((size_t)na + 1, sizeof *args);
  bool *own = calloc((size_t)na + 1, sizeof *own);
  bool tables[2] = {false, false};
  for (int32_t i = 0; f && media && i < na; i++) {
    mx_graph_arg_t info;
    CHECK_OK(mx_graph_arg_info(f, i, &info));
    tables[0] |= strcmp(info.name, "model.embed_vision.embedding.weight") == 0;
    tables[1] |= strcmp(info.name, "model.embed_audio.embedding.weight") == 0;
    mx_test_bind_media_arg(m, f, i, ids, &p0, media, &args[i], &own[i]);
  }
  CHECK_MSG(tables[0] && tables[1], "@prefill_media reads embed_vision %d, embed_audio %d",
            tables[0], tables[1]);
  const cJSON *want = cJSON_GetObjectItem(json, "prompt_logits");
  mx_tensor_t *res = f ? calloc((size_t)f->n_results, sizeof *res) : NULL;
  if (res) {
    CHECK_OK(mx_interp_run(mod, f, args, na, res, NULL));
    double d = res[0].data ? max_diff_rows((const float *)res[0].data, want, 0, n, V) : INFINITY;
    printf("gemma3n-audio interp: @prefill_media logits at every position within %.3g\n", d);
    CHECK_MSG(d <= kTol, "interp: every position's logits differ by %g", d);
    for (int32_t r = 0; r < f->n_results; r++) mx_tensor_free(&res[r]);
    for (int32_t r = 0; r < f->n_results; r++)
      CHECK_OK(mx_tensor_alloc(&res[r], &f->result_types[r]));
    mx_cpu_compile_opts_t o = {.args = args};
    mx_cpu_plan_t *plan = NULL;
    CHECK_OK(mx_cpu_compile(mod, f, &o, &plan));
    if (plan) {
      CHECK_OK(mx_cpu_plan_run(plan, NULL, args, na, res));
      d = max_diff_rows((const float *)res[0].data, want, 0, n, V);
      printf("gemma3n-audio cpu: @prefill_media logits at every position within %.3g\n", d);
      CHECK_MSG(d <= kTol, "cpu: every position's logits differ by %g", d);
      mx_cpu_plan_destroy(plan);
    }
    for (int32_t r = 0; r < f->n_results; r++) mx_tensor_free(&res[r]);
  }
  for (int32_t i = 0; i < na; i++)
    if (own[i]) mx_tensor_free(&args[i]);
  free(res);
  free(own);
  free(args);
  free(media);
  free(rows);
  free(ids);
  mx_module_destroy(mod);
}

static int32_t argmax(const float *x, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

// Through a session on `backend`: mx_session_audio on the host features gives transformers'
// rows; the prompt prefilled with them at its audio tokens gives the last position's logits and
// the 16 greedy ids of Gemma3nForConditionalGeneration; a second recording length rebuilds
// @audio; too many frames and a short rows buffer are refused.
static void check_session(const mx_model_t *m, const cJSON *json, const float *feat,
                          const uint8_t *mask, int64_t F, const char *backend) {
  const mx_model_config_t *c = &m->config;
  int32_t H = c->hidden_size, V = c->vocab_size, N = c->audio.soft_tokens, n = 0, ng = 0;
  int32_t *ids = json_ids(cJSON_GetObjectItem(json, "prompt_ids"), &n);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(json, "greedy_ids"), &ng);
  mx_session_opts_t so = {.backend = backend, .ctx = 64, .prefill_chunk = 8};
  mx_test_backend_opts(backend, &so.backend_opts);
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  float *rows = malloc(sizeof(float) * (size_t)N * (size_t)H), *media = NULL;
  if (!s || !rows) goto out;
  CHECK_OK(mx_session_audio(s, feat, mask, F, rows, (int64_t)N * H));
  double d = max_diff_rows(rows, cJSON_GetObjectItem(json, "audio_rows"), 0, N, H);
  printf("gemma3n-audio %s: session audio rows within %.3g\n", backend, d);
  CHECK_MSG(d <= kTol, "%s: session audio rows differ by %g", backend, d);
  media = media_rows(m, ids, n, rows);
  CHECK_OK(mx_session_prefill_media(s, ids, media, n));
  d = max_diff_rows(mx_session_logits(s), cJSON_GetObjectItem(json, "prompt_logits"), n - 1, 1, V);
  printf("gemma3n-audio %s: last prompt logits within %.3g\n", backend, d);
  CHECK_MSG(d <= kTol, "%s: last prompt logits differ by %g", backend, d);
  int32_t same = 0;
  for (int32_t i = 0; i < ng; i++) {
    int32_t id = argmax(mx_session_logits(s), V);
    same += id == greedy[i];
    if (mx_session_decode(s, id) != MX_OK) break;
  }
  CHECK_MSG(same == ng, "%s: %d of %d greedy ids equal", backend, same, ng);
  // A shorter recording (its first 20 frames) builds @audio again: 3 real rows, then padding.
  CHECK_OK(mx_session_audio(s, feat, mask, 20, rows, (int64_t)N * H));
  d = max_diff_rows(rows + (size_t)3 * H, cJSON_GetObjectItem(json, "audio_rows"), 5, 1, H);
  CHECK_MSG(d <= kTol, "%s: the padding row after 20 frames differs by %g", backend, d);
  EXPECT_ERR(mx_session_audio(s, feat, mask, 49, rows, (int64_t)N * H),
             "49 log-mel frames give 7 audio tokens, more than the 6");
  EXPECT_ERR(mx_session_audio(s, feat, mask, F, rows, (int64_t)N * H - 1), "row values, need");
out:
  free(media);
  free(rows);
  free(ids);
  free(greedy);
  mx_session_destroy(s);
}

static void check_fixture(void) {
  char dir[8192], path[8300];
  snprintf(dir, sizeof dir, "%s/families/gemma3n-audio", g_data);
  snprintf(path, sizeof path, "%s/audio_reference.json", dir);
  cJSON *json = read_json(path);
  CHECK_MSG(json != NULL, "cannot read %s", path);
  if (!json) return;
  mx_model_t *m = NULL;
  mx_model_load_opts_t lo = {.tokenizer_optional = true};
  CHECK_OK(mx_model_load_ex(dir, &lo, &m));
  float *feat = NULL;
  uint8_t *mask8 = NULL;
  int64_t F = m ? host_features(json, &feat, &mask8) : 0;
  int32_t *mask = F > 0 ? malloc(sizeof *mask * (size_t)F) : NULL;
  if (m && mask) {
    const mx_audio_config_t *a = &m->config.audio;
    CHECK(a->present && a->hidden_size == 32 && a->num_heads == 4 && a->num_layers == 2 &&
          a->chunk_size == 3 && a->context_left == 3 && a->context_right == 1 &&
          a->reduction == 2 && a->soft_tokens == 6 && a->audio_token_id == 273 &&
          a->boa_token_id == 250 && a->eoa_token_id == 272 && a->sscp_channels[1] == 4 &&
          mx_audio_tokens(a, F) == 4);
    mx_graph_opts_t go = {.ctx = 64, .prefill_len = 4, .audio_frames = (int32_t)F};
    mx_module_t *mod = NULL;
    CHECK_OK(mx_model_build_graph(&m->config, m->ckpt, &go, &mod));
    if (mod) {
      for (int64_t i = 0; i < F; i++) mask[i] = mask8[i];
      run_audio(m, mod, feat, mask, cJSON_GetObjectItem(json, "audio_rows"), "all frames real");
      // The entry as `mlxcel emit` writes it (audio.mlir), parsed back: the same rows.
      mx_strbuf_t sb;
      mx_strbuf_init(&sb);
      mx_module_t *back = NULL;
      CHECK_OK(mx_hlo_print_entry(mod, "audio", NULL, false, NULL, &sb));
      CHECK_OK(mx_hlo_parse(sb.data ? sb.data : "", sb.len, NULL, &back));
      if (back)
        run_audio(m, back, feat, mask, cJSON_GetObjectItem(json, "audio_rows"), "printed, parsed");
      mx_module_destroy(back);
      mx_strbuf_free(&sb);
      int32_t tail = cJSON_GetObjectItem(json, "masked_tail")->valueint;
      for (int64_t i = F - tail; i < F; i++) mask[i] = 0;
      run_audio(m, mod, feat, mask, cJSON_GetObjectItem(json, "audio_rows_masked"),
                "last frames masked");
    }
    mx_module_destroy(mod);
    check_media_graph(m, json);
    check_session(m, json, feat, mask8, F, "interp");
    check_session(m, json, feat, mask8, F, "cpu");
    check_session(m, json, feat, mask8, F, "xla");
    // More frames than audio_soft_tokens_per_image rows hold (6 x 2 x 4 = 48 give 6 tokens).
    go.audio_frames = 49;
    mod = NULL;
    EXPECT_ERR(mx_model_build_graph(&m->config, m->ckpt, &go, &mod),
               "49 log-mel frames give 7 audio tokens (1 .. 6");
  }
  free(mask);
  free(feat);
  free(mask8);
  mx_model_free(m);
  cJSON_Delete(json);
  // The text-only layout of Gemma 3n (no audio_config): no tower, and @audio refused.
  snprintf(dir, sizeof dir, "%s/families/gemma3n", g_data);
  CHECK_OK(mx_model_load_ex(dir, &lo, &m));
  if (m) {
    CHECK(!m->config.audio.present);
    mx_graph_opts_t go = {.ctx = 64, .prefill_len = 4, .audio_frames = 28};
    mx_module_t *mod = NULL;
    EXPECT_ERR(mx_model_build_graph(&m->config, m->ckpt, &go, &mod),
               "model_type 'gemma3n' has no audio tower");
    mx_session_opts_t so = {.backend = "cpu", .ctx = 64};
    mx_session_t *s = NULL;
    CHECK_OK(mx_session_create(m, &so, &s));
    float f[128] = {0}, r[64];
    uint8_t k = 1;
    if (s)
      EXPECT_ERR(mx_session_audio(s, f, &k, 1, r, 64), "model_type 'gemma3n' has no audio tower");
    mx_session_destroy(s);
  }
  mx_model_free(m);
}

// A gemma3n config.json with a default text config, `audio` in audio_config, then `top`.
static const char *config(const char *audio, const char *top) {
  static char json[1024];
  snprintf(json, sizeof json,
           "{\"model_type\": \"gemma3n\", \"text_config\": {}, \"audio_config\": {%s}%s}", audio,
           top);
  return json;
}

// Gemma3nAudioConfig's and Gemma3nConfig's defaults (the released models'), and refusals.
static void check_configs(void) {
  mx_model_config_t cfg;
  const char *json = config("", "");
  CHECK_OK(mx_config_parse(json, strlen(json), NULL, 0, "config.json", &cfg));
  const mx_audio_config_t *a = &cfg.audio;
  CHECK(a->present && a->input_feat_size == 128 && a->hidden_size == 1536 && a->num_heads == 8 &&
        a->num_layers == 12 && a->chunk_size == 12 && a->context_left == 13 &&
        a->context_right == 0 && a->conv_kernel == 5 && a->reduction == 4 && a->logit_cap == 50.0 &&
        a->gradient_clipping == 1e10 && a->residual_weight == 0.5 && a->sscp_channels[0] == 128 &&
        a->sscp_channels[1] == 32 && a->sscp_kernel[1][1] == 3 && a->sscp_stride[1][0] == 2 &&
        a->sscp_group_norm_eps == 1e-3 && a->vocab_size == 128 && a->vocab_offset == 262272 &&
        a->soft_tokens == 188 && a->audio_token_id == 262273 && a->boa_token_id == 256000 &&
        a->eoa_token_id == 262272);
  // embed_vision / embed_audio: Gemma3nVisionConfig's and Gemma3nAudioConfig's defaults.
  const mx_mm_embed_t *ev = &cfg.mm_embed[MX_MM_VISION], *ea = &cfg.mm_embed[MX_MM_AUDIO];
  CHECK(ev->offset == 262144 && ev->vocab == 128 && ev->hidden == 2048 && ev->eps == 1e-6 &&
        ea->offset == 262272 && ea->vocab == 128 && ea->hidden == 1536 && ea->eps == 1e-6);
  // The text-only model type has none.
  json = "{\"model_type\": \"gemma3n_text\"}";
  CHECK_OK(mx_config_parse(json, strlen(json), NULL, 0, "config.json", &cfg));
  CHECK(cfg.mm_embed[MX_MM_VISION].vocab == 0 && cfg.mm_embed[MX_MM_AUDIO].vocab == 0);
  json = config("", "");
  CHECK_OK(mx_config_parse(json, strlen(json), NULL, 0, "config.json", &cfg));
  // 30 s of audio: 3000 frames give 188 tokens, the released padding size.
  CHECK(mx_audio_tokens(a, 3000) == 188 && mx_audio_tokens(a, 3001) == 188);
  static const char *const kBad[][3] = {
      {"\"hidden_size\": 30", "", "hidden_size 30 is not a multiple of conf_num_attention_heads 8"},
      {"\"sscp_conv_kernel_size\": [3, 3]", "",
       "audio_config.sscp_conv_kernel_size must be a list of two [time, frequency] pairs"},
      {"\"sscp_conv_channel_size\": [128]", "",
       "audio_config.sscp_conv_channel_size must be a list of two positive integers"},
      {"\"conf_attention_context_left\": -1", "", "conf_attention_context_left / _right"},
      {"\"input_feat_size\": 1, \"sscp_conv_kernel_size\": [[3, 5], [3, 5]]", "",
       "leave no frequency bins"},
      {"\"vocab_offset\": 0", "", "the padding id 262399 (text vocab_size - 1) is not an audio"},
      {"", ", \"audio_token_id\": 262400", "audio_token_id 262400 is not in the text vocabulary"},
      {"", ", \"audio_soft_tokens_per_image\": 0", "audio_soft_tokens_per_image must be positive"},
      {"", ", \"vision_config\": {\"vocab_size\": 100}",
       "ids 262144 .. 262271 of the text vocabulary reach vision_config's embedder, whose "
       "vocab_size is 100"},
      {"", ", \"vision_config\": {\"vocab_offset\": 262300}",
       "vision_config.vocab_offset 262300 lies past audio_config.vocab_offset 262272"},
      {"", ", \"vision_config\": {\"vocab_offset\": -1}",
       "vision_config.vocab_offset -1 is negative"},
  };
  for (size_t i = 0; i < sizeof kBad / sizeof kBad[0]; i++)
    mx_test_config_error(config(kBad[i][0], kBad[i][1]), kBad[i][2]);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  snprintf(g_data, sizeof g_data, "%s", data ? data : "tests/data");
  check_fixture();
  check_configs();
  return mx_test_finish();
}
