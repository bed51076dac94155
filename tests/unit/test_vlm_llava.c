// The LLaVA family against transformers (tests/data/families/llava, written by
// tools/vlm/make_llava_fixture.py with transformers' own LlavaForConditionalGeneration and
// LlavaProcessor): on the reference interpreter, the cpu backend and the xla backend (the PJRT
// CPU plugin of the test environment), one committed photograph preprocessed by src/image, the
// @vision features within 1e-4, the logits of every prompt
// position (image tokens included) within 1e-4 when the prompt is fed one token at a time, the
// last position's after one chunked prefill, and the 16 greedy ids equal. Then the errors: wrong
// pixel counts, images for a text-only model, the media entries printed and parsed back; and the
// cpu runtime's plan of @vision runs its matmuls and attention with native kernels.
#include <math.h>
#include <stdio.h>

#include "mlxcel/batch.h"
#include "mlxcel/cpu_plan.h"
#include "mlxcel/image.h"
#include "mlxcel/session.h"
#include "mx_test_vlm.h"
#include "session/graph_binding.h"
#include "test_graph_runner.h"

static const double kTol = 1e-4;

static char g_dir[8192], g_data[4096];

static double max_diff(const float *got, const cJSON *want_rows, int32_t row0, int32_t n,
                       int32_t width) {
  return max_diff_rows(got, want_rows, row0, n, width);
}

static int32_t argmax(const float *v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

typedef struct ref {
  cJSON *json;
  int32_t *prompt, n_prompt, *greedy, n_greedy, image_token, n_image_tokens;
  const cJSON *features, *logits;
} ref_t;

// media rows [n_prompt][H]: the image features at the image-token positions, in order.
static float *media_rows(const ref_t *r, const float *feats, int32_t H) {
  float *media = calloc((size_t)r->n_prompt * (size_t)H, sizeof *media);
  int32_t k = 0;
  for (int32_t i = 0; i < r->n_prompt; i++)
    if (r->prompt[i] == r->image_token)
      memcpy(media + (size_t)i * H, feats + (size_t)(k++) * H, (size_t)H * sizeof *media);
  CHECK(k == r->n_image_tokens);
  return media;
}

static void run_backend(const mx_model_t *m, const ref_t *r, const mx_pixels_t *px,
                        const char *backend, int32_t chunk) {
  const mx_model_config_t *c = &m->config;
  int32_t H = c->hidden_size, V = c->vocab_size, N = c->vision.tokens_per_image;
  mx_session_opts_t so = {.backend = backend, .ctx = 128, .prefill_chunk = chunk};
  mx_test_backend_opts(backend, &so.backend_opts);
  mx_session_t *s = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  if (!s) return;
  float *feats = malloc(sizeof(float) * (size_t)N * (size_t)H);
  int64_t npx = px->shape[0] * px->shape[1] * px->shape[2];
  CHECK_OK(mx_session_vision(s, px->data, npx, feats, (int64_t)N * H));
  double fd = max_diff(feats, r->features, 0, N, H);
  CHECK_MSG(fd <= kTol, "%s: image features differ by %g", backend, fd);
  float *media = media_rows(r, feats, H);

  // One position at a time: every prompt position's logits (image tokens included).
  double ld = 0;
  for (int32_t i = 0; i < r->n_prompt; i++) {
    mx_status_t st = mx_session_prefill_media(s, r->prompt + i, media + (size_t)i * H, 1);
    CHECK_MSG(st == MX_OK, "%s: position %d: %s", backend, i, mx_error_message());
    if (st) break;
    double d = max_diff(mx_session_logits(s), r->logits, i, 1, V);
    if (d > ld) ld = d;
  }
  CHECK_MSG(ld <= kTol, "%s: prompt logits (one token per call) differ by %g", backend, ld);

  // One chunked prefill, then greedy decoding.
  mx_session_reset(s);
  CHECK_OK(mx_session_prefill_media(s, r->prompt, media, r->n_prompt));
  double lastd = max_diff(mx_session_logits(s), r->logits, r->n_prompt - 1, 1, V);
  CHECK_MSG(lastd <= kTol, "%s: last prompt logits (chunk %d) differ by %g", backend, chunk, lastd);
  int32_t same = 0;
  for (int32_t i = 0; i < r->n_greedy; i++) {
    int32_t id = argmax(mx_session_logits(s), V);
    if (id == r->greedy[i]) same++;
    if (mx_session_decode(s, id) != MX_OK) break;
  }
  CHECK_MSG(same == r->n_greedy, "%s: %d of %d greedy ids equal", backend, same, r->n_greedy);

  // A pixel count other than the tower's is refused before any work.
  mx_status_t st = mx_session_vision(s, px->data, npx - 1, feats, (int64_t)N * H);
  CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "pixel values") != NULL);
  st = mx_session_vision(s, px->data, npx, feats, (int64_t)N * H - 1);
  CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "feature values") != NULL);
  free(media);
  free(feats);
  mx_session_destroy(s);
}

// The batch (the server's engine): slot 1's image prompt gives the logits of a lone session bit
// for bit (xla: within 1e-4 once decode steps run both slots in one call), while slot 0 holds a
// text prompt; its features are the session's; its greedy ids transformers'. The other slot's
// text prefill runs between the image prompt's chunks.
static void run_batch(const mx_model_t *m, const ref_t *r, const mx_pixels_t *px,
                      const char *backend, int32_t chunk) {
  const mx_model_config_t *c = &m->config;
  int32_t H = c->hidden_size, V = c->vocab_size, N = c->vision.tokens_per_image;
  int64_t npx = px->shape[0] * px->shape[1] * px->shape[2];
  mx_session_opts_t so = {.backend = backend, .ctx = 128, .prefill_chunk = chunk};
  mx_batch_opts_t bo = {.backend = backend, .ctx = 128, .prefill_chunk = chunk, .n_slots = 2};
  mx_test_backend_opts(backend, &so.backend_opts);
  mx_test_backend_opts(backend, &bo.backend_opts);
  mx_session_t *s = NULL;
  mx_batch_t *b = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  CHECK_OK(mx_batch_create(m, &bo, &b));
  float *fs = malloc(sizeof(float) * (size_t)N * (size_t)H);
  float *fb = malloc(sizeof(float) * (size_t)N * (size_t)H);
  if (!s || !b || !fs || !fb) goto out;
  CHECK_OK(mx_session_vision(s, px->data, npx, fs, (int64_t)N * H));
  CHECK_OK(mx_batch_vision(b, px->data, npx, fb, (int64_t)N * H));
  CHECK_MSG(memcmp(fs, fb, sizeof(float) * (size_t)N * (size_t)H) == 0,
            "%s: batch features differ from the session's", backend);
  float *media = media_rows(r, fb, H);
  CHECK_OK(mx_session_prefill_media(s, r->prompt, media, r->n_prompt));
  int32_t text[3] = {1, 40, 41};
  for (int32_t off = 0; off < r->n_prompt; off += chunk) {
    int32_t n = r->n_prompt - off < chunk ? r->n_prompt - off : chunk;
    CHECK_OK(mx_batch_prefill_media(b, 1, r->prompt + off, media + (size_t)off * H, n));
    if (off == 0) CHECK_OK(mx_batch_prefill(b, 0, text, 3));
  }
  int32_t same = 0;
  // On xla a decode step of both slots is one call whose batched linear layers may round
  // differently from one slot's alone (ADR 0016: within 1e-4); cpu and interp: bit for bit.
  double tol = strcmp(backend, "xla") == 0 ? kTol : 0;
  for (int32_t i = 0; i < r->n_greedy; i++) {
    const float *ls = mx_session_logits(s), *lb = mx_batch_logits(b, 1);
    double d = ls && lb ? 0 : INFINITY;
    for (int32_t k = 0; ls && lb && k < V; k++) d = fmax(d, fabs((double)ls[k] - (double)lb[k]));
    CHECK_MSG(d <= tol, "%s: batch logits differ from the session's by %g at step %d", backend, d,
              i);
    int32_t id = argmax(lb, V), slots[2] = {0, 1}, ids[2] = {2, id};
    same += id == r->greedy[i];
    if (mx_session_decode(s, id) != MX_OK || mx_batch_decode(b, slots, ids, 2) != MX_OK) break;
  }
  CHECK_MSG(same == r->n_greedy, "%s batch: %d of %d greedy ids equal", backend, same, r->n_greedy);
  mx_status_t st = mx_batch_vision(b, px->data, npx - 1, fb, (int64_t)N * H);
  CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "pixel values") != NULL);
  free(media);
out:
  free(fs);
  free(fb);
  mx_batch_destroy(b);
  mx_session_destroy(s);
}

// vision_backend: the tower of a cpu session or batch runs on the interpreter (its features are
// the interpreter's, bit for bit) or on xla (within 1e-4); a backend without the tower and
// unknown names are refused naming them.
static void check_vision_backend(const mx_model_t *m, const mx_pixels_t *px) {
  const mx_model_config_t *c = &m->config;
  int64_t nf = (int64_t)c->vision.tokens_per_image * c->hidden_size;
  int64_t npx = px->shape[0] * px->shape[1] * px->shape[2];
  float *want = malloc(sizeof(float) * (size_t)nf), *got = malloc(sizeof(float) * (size_t)nf);
  mx_session_opts_t so = {.backend = "interp", .ctx = 64};
  mx_session_t *s = NULL;
  mx_batch_t *b = NULL;
  CHECK_OK(mx_session_create(m, &so, &s));
  if (!s || !want || !got) goto out;
  CHECK_OK(mx_session_vision(s, px->data, npx, want, nf));
  mx_session_destroy(s);
  s = NULL;
  so = (mx_session_opts_t){.backend = "cpu", .ctx = 64, .vision_backend = "interp"};
  CHECK_OK(mx_session_create(m, &so, &s));
  if (s) CHECK_OK(mx_session_vision(s, px->data, npx, got, nf));
  CHECK_MSG(s && memcmp(want, got, sizeof(float) * (size_t)nf) == 0,
            "cpu session, interp tower: features differ from the interpreter's");
  mx_batch_opts_t bo = {.backend = "cpu", .ctx = 64, .n_slots = 2, .vision_backend = "interp"};
  CHECK_OK(mx_batch_create(m, &bo, &b));
  memset(got, 0, sizeof(float) * (size_t)nf);
  if (b) CHECK_OK(mx_batch_vision(b, px->data, npx, got, nf));
  CHECK_MSG(b && memcmp(want, got, sizeof(float) * (size_t)nf) == 0,
            "cpu batch, interp tower: features differ from the interpreter's");
  // The server's --vision-backend xla: a cpu batch whose tower runs on the PJRT plugin.
  mx_batch_destroy(b);
  bo.vision_backend = "xla";
  mx_test_backend_opts("xla", &bo.backend_opts);
  CHECK_OK(mx_batch_create(m, &bo, &b));
  memset(got, 0, sizeof(float) * (size_t)nf);
  if (b) CHECK_OK(mx_batch_vision(b, px->data, npx, got, nf));
  double d = 0;
  for (int64_t i = 0; i < nf; i++) d = fmax(d, fabs((double)want[i] - (double)got[i]));
  CHECK_MSG(b && d <= kTol, "cpu batch, xla tower: features differ by %g", d);
  mx_session_t *bad = NULL;
  so.vision_backend = mx_test_text_only_backend();
  mx_status_t st = mx_session_create(m, &so, &bad);
  CHECK(st == MX_ERR_UNSUPPORTED && !bad &&
        strstr(mx_error_message(), "the textonly backend cannot run the vision tower") != NULL);
  so.vision_backend = "bogus";
  st = mx_session_create(m, &so, &bad);
  CHECK(st == MX_ERR_INVALID_ARG && !bad &&
        strstr(mx_error_message(), "unknown vision backend 'bogus'") != NULL);
out:
  free(want);
  free(got);
  mx_batch_destroy(b);
  mx_session_destroy(s);
}

// The media entries survive print -> parse with their argument roles.
static void check_emitted(const mx_model_t *m) {
  mx_graph_opts_t go = {.ctx = 64, .prefill_len = 4, .media = true};
  mx_module_t *mod = NULL;
  CHECK_OK(mx_model_build_graph(&m->config, m->ckpt, &go, &mod));
  if (!mod) return;
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  CHECK_OK(mx_hlo_print(mod, NULL, &sb));
  mx_module_t *back = NULL;
  CHECK_OK(mx_hlo_parse(sb.data, sb.len, NULL, &back));
  const char *names[2] = {"vision", "prefill_media"};
  const mx_arg_role_t roles[2] = {MX_ARG_PIXELS, MX_ARG_MEDIA};
  for (int32_t k = 0; back && k < 2; k++) {
    mx_func_t *f = mx_module_find_func(back, names[k]);
    CHECK_MSG(f != NULL, "@%s missing after re-parse", names[k]);
    if (!f) continue;
    int32_t found = 0;
    for (int32_t i = 0; i < f->body->n_args; i++) {
      mx_graph_arg_t info;
      CHECK_OK(mx_graph_arg_info(f, i, &info));
      found += info.role == roles[k];
    }
    CHECK_MSG(found == 1, "@%s: %d arguments of the input role", names[k], found);
  }
  // A text-only build has neither entry; a text-only model refuses to build them.
  mx_module_destroy(back);
  mx_module_destroy(mod);
  mx_strbuf_free(&sb);
}

// The cpu runtime runs the tower at speed, step by step (not the whole function on the
// interpreter): every linear of @vision is a packed GEMM (the patch embedding's reshaped weight
// is a view of its argument: 1 + 6 per layer run + 2 of the projector), every attention the
// fused kernel, every LayerNorm the fused mx.rms_norm (its mean, a dot with ones, is small),
// every quick_gelu's logistic the native step.
static void check_vision_plan(const mx_model_t *m) {
  mx_strbuf_t sb;
  mx_test_vision_plan(m, &sb);
  const char *d = sb.data ? sb.data : "";
  const mx_vision_config_t *v = &m->config.vision;
  int32_t gemm = mx_test_count(d, "fast stablehlo.dot_general (dot_general->gemm"),
          attn = mx_test_count(d, "fast mx.attention"), norm = mx_test_count(d, "fast mx.rms_norm");
  int32_t logistic = mx_test_count(d, "fast stablehlo.logistic");  // CLIP's quick_gelu
  CHECK_MSG(gemm == 3 + 6 * v->layers_run && attn == v->layers_run &&
                norm == 1 + 2 * v->layers_run && logistic == v->layers_run &&
                !strstr(d, "fallback stablehlo.logistic") && !strstr(d, "whole function"),
            "%d GEMMs, %d attentions, %d norms, %d logistics in the @vision plan:\n%s", gemm, attn,
            norm, logistic, d);
  mx_strbuf_free(&sb);
}

static void check_text_only(void) {
  char dir[8192];
  snprintf(dir, sizeof dir, "%s/families/granite", g_data);
  mx_model_load_opts_t lo = {.tokenizer_optional = true};
  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load_ex(dir, &lo, &m));
  if (!m) return;
  mx_session_t *s = NULL;
  mx_session_opts_t so = {.backend = "interp", .ctx = 32};
  CHECK_OK(mx_session_create(m, &so, &s));
  float px[3] = {0}, f[3];
  int32_t id = 3;
  mx_status_t st = mx_session_vision(s, px, 3, f, 3);
  CHECK(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "takes no images") != NULL);
  st = mx_session_prefill_media(s, &id, f, 1);
  CHECK(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "takes no images") != NULL);
  mx_batch_opts_t bo = {.backend = "interp", .ctx = 32, .n_slots = 2};
  mx_batch_t *b = NULL;
  CHECK_OK(mx_batch_create(m, &bo, &b));
  st = b ? mx_batch_vision(b, px, 3, f, 3) : MX_OK;
  CHECK(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "takes no images") != NULL);
  st = b ? mx_batch_prefill_media(b, 0, &id, f, 1) : MX_OK;
  CHECK(st == MX_ERR_UNSUPPORTED && strstr(mx_error_message(), "takes no images") != NULL);
  mx_batch_destroy(b);
  mx_graph_opts_t go = {.ctx = 32, .prefill_len = 2, .media = true};
  mx_module_t *mod = NULL;
  st = mx_model_build_graph(&m->config, m->ckpt, &go, &mod);
  CHECK(st == MX_ERR_INVALID_ARG && strstr(mx_error_message(), "no vision tower") != NULL);
  mx_session_destroy(s);
  mx_model_free(m);
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  snprintf(g_data, sizeof g_data, "%s", data ? data : "tests/data");
  snprintf(g_dir, sizeof g_dir, "%s/families/llava", g_data);
  char path[8300];
  snprintf(path, sizeof path, "%s/vision_reference.json", g_dir);
  ref_t r = {0};
  r.json = read_json(path);
  CHECK_MSG(r.json != NULL, "cannot read %s", path);
  if (!r.json) return mx_test_finish();
  r.prompt = json_ids(cJSON_GetObjectItem(r.json, "prompt_ids"), &r.n_prompt);
  r.greedy = json_ids(cJSON_GetObjectItem(r.json, "greedy_ids"), &r.n_greedy);
  r.image_token = cJSON_GetObjectItem(r.json, "image_token_index")->valueint;
  r.n_image_tokens = cJSON_GetObjectItem(r.json, "n_image_tokens")->valueint;
  r.features = cJSON_GetObjectItem(r.json, "image_features");
  r.logits = cJSON_GetObjectItem(r.json, "logits");

  mx_model_t *m = NULL;
  CHECK_OK(mx_model_load(g_dir, &m));
  if (m) {
    const mx_vision_config_t *v = &m->config.vision;
    CHECK(v->present && v->tokens_per_image == r.n_image_tokens && v->layers_run == 2 &&
          v->drop_cls && v->image_token_id == r.image_token);
    mx_pixels_t px = {0};
    if (mx_test_vlm_pixels(m, g_data, r.json, &px)) {
      run_backend(m, &r, &px, "interp", 8);
      run_backend(m, &r, &px, "cpu", 64);
      run_batch(m, &r, &px, "interp", 8);
      run_batch(m, &r, &px, "cpu", 16);
      run_backend(m, &r, &px, "xla", 16);
      run_batch(m, &r, &px, "xla", 16);
      check_vision_backend(m, &px);
    }
    mx_pixels_free(&px);
    check_emitted(m);
    check_vision_plan(m);
  }
  check_text_only();
  mx_model_free(m);
  free(r.prompt);
  free(r.greedy);
  cJSON_Delete(r.json);
  return mx_test_finish();
}
