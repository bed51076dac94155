// --image (generate): the prompt's image placeholders and the images' features (ADR 0010).
//
// A vision model's prompt holds one image token per image (LLaVA's "<image>", written by the
// chat template or by the user in -p TEXT); the processor's rule expands each into one token per
// image feature (tokens_per_image), so the prompt's token count includes the image tokens. The
// images are decoded and preprocessed as the model's preprocessor_config.json says
// (src/image), and the session's vision tower turns each into the rows placed at its tokens.
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "mlxcel/image.h"
#include "mlxcel/tokenizer.h"

const char *mx_cli_image_token_text(const mx_model_t *m, size_t *len) {
  *len = 0;
  if (!m->config.vision.present || !m->tokenizer) return NULL;
  return mx_tokenizer_id_to_piece(m->tokenizer, m->config.vision.image_token_id, len);
}

static int fail_msg(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_msg(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mlxcel %s: error: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return MX_EXIT_FAILED;
}

// The prompt with every placeholder expanded to tokens_per_image image tokens (a prompt without
// any gets one per image at its start, after a BOS).
static int expand(const char *cmd, const mx_model_t *m, int32_t n_images, int32_t **ids,
                  int32_t *n) {
  const mx_vision_config_t *v = &m->config.vision;
  int32_t k = 0;
  for (int32_t i = 0; i < *n; i++) k += (*ids)[i] == v->image_token_id;
  size_t tl = 0;
  const char *tt = mx_cli_image_token_text(m, &tl);
  if (k != 0 && k != n_images)
    return fail_msg(cmd,
                    "the prompt has %d image placeholder%s (%.*s) for %d --image: give one "
                    "placeholder per image, in order",
                    k, k == 1 ? "" : "s", (int)tl, tt ? tt : "?", n_images);
  int32_t *with = NULL, nw = *n;
  if (k == 0) {  // one image token per image first (after a BOS), then the prompt
    int32_t at = *n > 0 && (*ids)[0] == m->config.bos_token_id ? 1 : 0;
    if ((int64_t)*n + n_images > INT32_MAX)
      return fail_msg(cmd, "%lld prompt tokens with the images", (long long)*n + n_images);
    nw = *n + n_images;
    with = malloc(sizeof *with * (size_t)nw);
    if (!with) return fail_msg(cmd, "out of memory (%d prompt tokens)", nw);
    memcpy(with, *ids, sizeof *with * (size_t)at);
    for (int32_t t = 0; t < n_images; t++) with[at + t] = v->image_token_id;
    memcpy(with + at + n_images, *ids + at, sizeof *with * (size_t)(*n - at));
  }
  int32_t *out = NULL, n_out = 0;
  mx_error_clear();
  mx_status_t st =
      mx_vision_expand_prompt(&m->config, with ? with : *ids, nw, n_images, &out, &n_out);
  free(with);
  if (st) return mx_cli_fail(cmd, st);
  free(*ids);
  *ids = out;
  *n = n_out;
  return MX_EXIT_OK;
}

// Decodes and preprocesses one image; its pixels must be the tower's [C, S, S].
static int load_pixels(const char *cmd, const mx_model_t *m, const mx_image_proc_t *proc,
                       const char *path, mx_pixels_t *px) {
  mx_image_t img = {0};
  if (m->config.vision.kind != MX_VISION_CLIP)
    return fail_msg(cmd,
                    "%s: model_type '%s' runs text only for now (its image tokens need M-RoPE "
                    "positions, which @prefill_media does not take yet)",
                    path, m->config.model_type);
  mx_error_clear();
  mx_status_t st = mx_image_load(path, NULL, &img, NULL);
  if (!st) st = mx_image_preprocess(proc, &img, px);
  mx_image_free(&img);
  if (st) return mx_cli_fail(cmd, st);
  st = mx_vision_check_pixels(&m->config, px->rank, px->shape);
  if (st) {
    st = mx_error_prefix(st, "%s", path);
    mx_pixels_free(px);
    return mx_cli_fail(cmd, st);
  }
  return MX_EXIT_OK;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int mx_cli_image_features(const char *cmd, const mx_model_t *m, mx_session_t *s,
                          const mx_image_proc_t *proc, const char *path, float *features,
                          double *seconds) {
  const mx_vision_config_t *v = &m->config.vision;
  mx_pixels_t px = {0};
  int rc = load_pixels(cmd, m, proc, path, &px);
  if (rc != MX_EXIT_OK) return rc;
  int64_t npx = px.shape[0] * px.shape[1] * px.shape[2];
  mx_error_clear();
  double t0 = now_seconds();
  mx_status_t st = mx_session_vision(s, px.data, npx, features,
                                     (int64_t)v->tokens_per_image * m->config.hidden_size);
  *seconds += now_seconds() - t0;
  mx_pixels_free(&px);
  return st ? mx_cli_fail(cmd, st) : MX_EXIT_OK;
}

int mx_cli_prompt_images(const char *cmd, const mx_model_t *m, mx_session_t *s,
                         const char *const *paths, int32_t n_images, int32_t **ids, int32_t *n,
                         float **media, double *tower_seconds) {
  *media = NULL;
  *tower_seconds = 0.0;
  const mx_vision_config_t *v = &m->config.vision;
  if (!v->present)
    return fail_msg(cmd, "--image: model_type '%s' takes no images", m->config.model_type);
  int rc = expand(cmd, m, n_images, ids, n);
  if (rc != MX_EXIT_OK) return rc;
  mx_image_proc_t proc;
  mx_error_clear();
  mx_status_t st = mx_image_proc_load(m->dir, &proc);
  if (st) return mx_cli_fail(cmd, st);
  size_t H = (size_t)m->config.hidden_size;
  float *rows = calloc((size_t)*n * H, sizeof *rows);
  int32_t *starts = malloc(sizeof *starts * (size_t)n_images);
  if (!rows || !starts) {
    free(rows);
    free(starts);
    return fail_msg(cmd, "out of memory (media rows of %d tokens)", *n);
  }
  st = mx_vision_image_runs(&m->config, *ids, *n, n_images, starts);
  if (st) rc = mx_cli_fail(cmd, st);
  // The expanded placeholders of one image are consecutive: its features go there as they are.
  for (int32_t i = 0; i < n_images && rc == MX_EXIT_OK; i++)
    rc = mx_cli_image_features(cmd, m, s, &proc, paths[i], rows + (size_t)starts[i] * H,
                               tower_seconds);
  free(starts);
  if (rc != MX_EXIT_OK) {
    free(rows);
    return rc;
  }
  *media = rows;
  return MX_EXIT_OK;
}
