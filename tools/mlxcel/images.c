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

#include "cli.h"
#include "mlxcel/chat.h"
#include "mlxcel/image.h"
#include "mlxcel/tokenizer.h"

static int fail_msg(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int mx_cli_image_text(const char *cmd, const mx_model_t *m, int32_t n_images, const char *text,
                      char **out) {
  *out = NULL;
  size_t pl = 0;
  const char *ph = mx_chat_image_placeholder(m->tokenizer, &m->config.vision, &pl);
  if (!ph) return fail_msg(cmd, "the tokenizer has no text for the image placeholder");
  mx_strbuf_t sb;  // a prompt without placeholders: one per image at its start
  mx_strbuf_init(&sb);
  bool none = true;
  for (const char *p = text; none && *p; p++) none = strncmp(p, ph, pl) != 0;
  for (int32_t i = 0; none && i < n_images; i++) mx_strbuf_append(&sb, ph, pl);
  mx_strbuf_puts(&sb, text);
  size_t len = sb.len;
  char *t = mx_strbuf_take(&sb, NULL);
  if (!t) return fail_msg(cmd, "out of memory (the prompt with its images)");
  mx_error_clear();
  mx_status_t st =
      mx_chat_expand_images(m->tokenizer, &m->config.vision, n_images, &t, &len, NULL, 0);
  if (st) {
    free(t);
    return mx_cli_fail(cmd, mx_error_prefix(st, "--image"));
  }
  *out = t;
  return MX_EXIT_OK;
}
static int fail_msg(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mlxcel %s: error: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return MX_EXIT_FAILED;
}

// The prompt with placeholder i expanded to counts[i] image tokens (a prompt without any gets
// them at its start, after a BOS), by the library's rule that chat and the server share
// (mx_vision_expand_prompt): LLaVA tokens_per_image each; Qwen2-VL each image's grid-sized run
// between <|vision_start|> and <|vision_end|>, which are added where the prompt lacks them (the
// chat template writes them).
// Molmo2Processor's prompt: a BOS first where the tokenizer gave none, one <|image|> per image
// after it where the prompt has none, then each <|image|> expanded to its image's views
// (mx_molmo2_expand_prompt with the processor's options and image_grids rows).
int mx_cli_molmo2_prompt(const char *cmd, const mx_model_t *m, const mx_pixels_t *px,
                         int32_t n_images, int32_t **ids, int32_t *n) {
  mx_molmo2_prompt_t mp;
  mx_error_clear();
  mx_status_t st = mx_molmo2_prompt_load(m, &mp);
  if (st) return mx_cli_fail(cmd, st);
  int32_t k = 0, bos = m->config.bos_token_id;
  for (int32_t i = 0; i < *n; i++) k += (*ids)[i] == mp.placeholder;
  bool add_bos = bos >= 0 && (*n == 0 || (*ids)[0] != bos);
  int32_t add = (add_bos ? 1 : 0) + (k == 0 ? n_images : 0);
  int32_t *with = malloc(sizeof *with * (size_t)(*n + add > 0 ? *n + add : 1)), nw = 0;
  int64_t(*grids)[4] = malloc(sizeof *grids * (size_t)n_images);
  if (!with || !grids) {
    free(with);
    free(grids);
    return fail_msg(cmd, "out of memory (%d prompt tokens)", *n);
  }
  if (add_bos) with[nw++] = bos;
  int32_t at = add_bos ? 0 : (*n > 0 ? 1 : 0);  // after the BOS
  memcpy(with + nw, *ids, sizeof *with * (size_t)at);
  nw += at;
  for (int32_t i = 0; k == 0 && i < n_images; i++) with[nw++] = mp.placeholder;
  memcpy(with + nw, *ids + at, sizeof *with * (size_t)(*n - at));
  nw += *n - at;
  for (int32_t i = 0; i < n_images; i++) memcpy(grids[i], px[i].image_grid, sizeof grids[i]);
  int32_t *out = NULL, n_out = 0;
  st = mx_molmo2_expand_prompt(&mp, with, nw, (const int64_t(*)[4])grids, n_images, &out, &n_out);
  free(with);
  free(grids);
  if (st) return mx_cli_fail(cmd, st);
  free(*ids);
  *ids = out;
  *n = n_out;
  return MX_EXIT_OK;
}

static int expand(const char *cmd, const mx_model_t *m, int32_t n_images, const int32_t *counts,
                  int32_t **ids, int32_t *n) {
  const mx_vision_config_t *v = &m->config.vision;
  if (mx_vision_text_expanded(v)) {  // expanded in the text (mx_cli_image_text): its runs are there
    int32_t *starts = malloc(sizeof *starts * (size_t)(n_images > 0 ? n_images : 1));
    mx_error_clear();
    mx_status_t st = starts ? mx_vision_image_runs(&m->config, *ids, *n, n_images, NULL, starts)
                            : mx_error_set(MX_ERR_NOMEM, "out of memory");
    free(starts);
    return st ? mx_cli_fail(cmd, st) : MX_EXIT_OK;
  }
  int32_t k = 0;
  for (int32_t i = 0; i < *n; i++) k += (*ids)[i] == v->image_token_id;
  size_t tl = 0;
  const char *tt = mx_chat_image_placeholder(m->tokenizer, v, &tl);
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
      mx_vision_expand_prompt(&m->config, with ? with : *ids, nw, n_images, counts, &out, &n_out);
  free(with);
  if (st) return mx_cli_fail(cmd, st);
  free(*ids);
  *ids = out;
  *n = n_out;
  return MX_EXIT_OK;
}

// Decodes and preprocesses one image; its pixels must be the tower's: [C, S, S] (CLIP), or the
// rows of one image's patch grid (the Qwen towers; a temporal grid other than 1 is video).
static int load_pixels(const char *cmd, const mx_model_t *m, const mx_image_proc_t *proc,
                       const char *path, mx_pixels_t *px) {
  mx_image_t img = {0};
  mx_error_clear();
  mx_status_t st = mx_image_load(path, NULL, &img, NULL);
  if (!st) st = mx_image_preprocess(proc, &img, px);
  mx_image_free(&img);
  if (st) return mx_cli_fail(cmd, st);
  const mx_vision_config_t *v = &m->config.vision;
  if (v->kind == MX_VISION_MOLMO2) {  // crops [crops, N, P*P*3] and the pooling indices
    int64_t side = v->image_size / v->patch_size;
    int64_t K = (int64_t)v->patch_size * v->patch_size * v->num_channels;
    if (px->rank == 3 && px->pooling && px->shape[1] == side * side && px->shape[2] == K)
      return MX_EXIT_OK;
    int rc = fail_msg(cmd,
                      "%s: the processor gives crops of %lld patches of %lld values, the vision "
                      "tower takes %lld of %lld (preprocessor_config.json and config.json "
                      "disagree)",
                      path, (long long)px->shape[1], (long long)px->shape[2],
                      (long long)(side * side), (long long)K);
    mx_pixels_free(px);
    return rc;
  }
  if (!mx_vision_fixed_size(v)) {
    int64_t K = (int64_t)v->num_channels * v->temporal_patch_size * v->patch_size * v->patch_size;
    if (px->rank == 2 && px->shape[1] == K && px->grid_thw[0] == 1) return MX_EXIT_OK;
    int rc = fail_msg(cmd,
                      "%s: the processor gives pixel rows of %lld values (temporal grid %lld), "
                      "the vision tower takes rows of %lld of one image (preprocessor_config.json "
                      "and config.json disagree)",
                      path, (long long)(px->rank == 2 ? px->shape[1] : 0),
                      (long long)px->grid_thw[0], (long long)K);
    mx_pixels_free(px);
    return rc;
  }
  st = mx_vision_check_pixels(&m->config, px->rank, px->shape);
  if (st) {
    st = mx_error_prefix(st, "%s", path);
    mx_pixels_free(px);
    return mx_cli_fail(cmd, st);
  }
  return MX_EXIT_OK;
}

// The features of image i at its tokens (from `pos` on), through the session's tower.
static mx_status_t features(const mx_model_t *m, mx_session_t *s, const mx_pixels_t *px,
                            int32_t count, float *rows);

int mx_cli_image_features(const char *cmd, const mx_model_t *m, mx_session_t *s,
                          const mx_image_proc_t *proc, const char *path, float **out,
                          int32_t *count, int32_t grid[2], double *seconds) {
  const mx_vision_config_t *v = &m->config.vision;
  *out = NULL;
  if (v->kind == MX_VISION_MOLMO2)  // ADR 0023: one block per image, prefilled with its prompt
    return fail_msg(cmd,
                    "/image: model_type '%s' takes its images with the prompt (generate --image, "
                    "or the server's image parts): an image added to a conversation is not "
                    "supported for it",
                    m->config.model_type);
  mx_pixels_t px = {0};
  int rc = load_pixels(cmd, m, proc, path, &px);
  if (rc != MX_EXIT_OK) return rc;
  bool fixed = mx_vision_fixed_size(v);
  grid[0] = fixed ? 0 : (int32_t)px.grid_thw[1];
  grid[1] = fixed ? 0 : (int32_t)px.grid_thw[2];
  int32_t mm = v->spatial_merge_size * v->spatial_merge_size;
  *count = fixed ? v->tokens_per_image : grid[0] * grid[1] / mm;
  float *f = malloc((size_t)*count * (size_t)mx_vision_feature_width(&m->config) * sizeof *f);
  mx_error_clear();
  double t0 = mx_cli_now();
  mx_status_t st =
      f ? features(m, s, &px, *count, f) : mx_error_set(MX_ERR_NOMEM, "out of memory (features)");
  *seconds += mx_cli_now() - t0;
  mx_pixels_free(&px);
  if (st) {
    free(f);
    return mx_cli_fail(cmd, st);
  }
  *out = f;
  return MX_EXIT_OK;
}

static mx_status_t features(const mx_model_t *m, mx_session_t *s, const mx_pixels_t *px,
                            int32_t count, float *rows) {
  const mx_vision_config_t *v = &m->config.vision;
  int64_t nf = (int64_t)count * mx_vision_feature_width(&m->config);
  if (v->kind == MX_VISION_MOLMO2)
    return mx_session_vision_pooled(
        s, px->data, px->shape[0] * px->shape[1] * px->shape[2], (int32_t)px->shape[0], px->pooling,
        (int32_t)px->pooling_shape[0], (int32_t)px->pooling_shape[1], rows, nf);
  if (mx_vision_fixed_size(v))
    return mx_session_vision(s, px->data, px->shape[0] * px->shape[1] * px->shape[2], rows, nf);
  return mx_session_vision_grid(s, px->data, px->shape[0] * px->shape[1], (int32_t)px->grid_thw[1],
                                (int32_t)px->grid_thw[2], rows, nf);
}

int mx_cli_prompt_images(const char *cmd, const mx_model_t *m, mx_session_t *s,
                         const char *const *paths, int32_t n_images, int32_t **ids, int32_t *n,
                         float **media, int32_t **positions, double *tower_seconds) {
  *media = NULL;
  *positions = NULL;
  *tower_seconds = 0.0;
  const mx_vision_config_t *v = &m->config.vision;
  if (!v->present)
    return fail_msg(cmd, "--image: model_type '%s' takes no images", m->config.model_type);
  mx_image_proc_t proc;
  mx_error_clear();
  mx_status_t st = mx_image_proc_load(m->dir, &proc);
  if (st) return mx_cli_fail(cmd, st);
  mx_pixels_t *px = calloc((size_t)n_images, sizeof *px);
  int32_t *counts = calloc((size_t)n_images, sizeof *counts);
  int32_t *grids = calloc((size_t)n_images * 2, sizeof *grids);
  float *rows = NULL;
  int rc =
      px && counts && grids ? MX_EXIT_OK : fail_msg(cmd, "out of memory (%d images)", n_images);
  int32_t mm = v->spatial_merge_size * v->spatial_merge_size;
  for (int32_t i = 0; i < n_images && rc == MX_EXIT_OK; i++) {
    rc = load_pixels(cmd, m, &proc, paths[i], &px[i]);
    grids[2 * i] = (int32_t)px[i].grid_thw[1];
    grids[2 * i + 1] = (int32_t)px[i].grid_thw[2];
    counts[i] = v->kind == MX_VISION_MOLMO2 ? (int32_t)px[i].pooling_shape[0]
                : mx_vision_fixed_size(v)   ? v->tokens_per_image
                                            : grids[2 * i] * grids[2 * i + 1] / mm;
  }
  if (rc == MX_EXIT_OK)
    rc = v->kind == MX_VISION_MOLMO2 ? mx_cli_molmo2_prompt(cmd, m, px, n_images, ids, n)
                                     : expand(cmd, m, n_images, counts, ids, n);
  size_t H = (size_t)mx_vision_feature_width(&m->config);  // a media row (ADR 0021)
  if (rc == MX_EXIT_OK && !(rows = calloc((size_t)*n * H, sizeof *rows)))
    rc = fail_msg(cmd, "out of memory (media rows of %d tokens)", *n);
  int32_t pos = 0;  // the next image token of the prompt
  for (int32_t i = 0; i < n_images && rc == MX_EXIT_OK; i++) {
    while (pos < *n && (*ids)[pos] != v->image_token_id) pos++;
    mx_error_clear();
    double t0 = mx_cli_now();
    if (v->kind == MX_VISION_MOLMO2) {
      // Its <im_patch> tokens are in rows between column / start / end tokens: feature j of
      // the image goes to its j-th <im_patch>.
      float *f = malloc(sizeof *f * (size_t)counts[i] * H);
      st = f ? features(m, s, &px[i], counts[i], f) : mx_error_set(MX_ERR_NOMEM, "out of memory");
      for (int32_t j = 0; !st && j < counts[i]; j++, pos++) {
        while (pos < *n && (*ids)[pos] != v->image_token_id) pos++;
        if (pos == *n) {
          st = mx_error_set(MX_ERR_INVALID_ARG, "image %d: the prompt has too few <im_patch>", i);
          break;
        }
        memcpy(rows + (size_t)pos * H, f + (size_t)j * H, sizeof *f * H);
      }
      free(f);
    } else {
      // The expanded placeholders of one image are consecutive: its features go there as they
      // are.
      st = features(m, s, &px[i], counts[i], rows + (size_t)pos * H);
      pos += counts[i];
    }
    *tower_seconds += mx_cli_now() - t0;
    if (st) rc = mx_cli_fail(cmd, st);
  }
  if (rc == MX_EXIT_OK && mx_vision_mrope(v)) {  // M-RoPE positions (ADR 0013)
    int64_t next = 0;
    *positions = malloc(sizeof **positions * 3 * (size_t)*n);
    st = *positions ? mx_mrope_positions(&m->config, *ids, *n, grids, n_images,
                                         mx_session_rope_next(s), *positions, &next)
                    : mx_error_set(MX_ERR_NOMEM, "out of memory (M-RoPE positions)");
    if (st) rc = mx_cli_fail(cmd, st);
  }
  for (int32_t i = 0; px && i < n_images; i++) mx_pixels_free(&px[i]);
  free(px);
  free(counts);
  free(grids);
  if (rc != MX_EXIT_OK) {
    free(rows);
    free(*positions);
    *positions = NULL;
    return rc;
  }
  *media = rows;
  return MX_EXIT_OK;
}
