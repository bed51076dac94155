// Qwen2-VL / Qwen2.5-VL in the session (ADR 0013): images of any patch grid through the
// backend's vision_grid entry (Youtu-VL's too, ADR 0027), M-RoPE positions for prompts with images
// (transformers' get_rope_index), and the text after them, whose RoPE positions run behind the
// cache positions.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/session.h"
#include "session/session_internal.h"

static int64_t rope_next(const mx_session_t *s) {
  return s->n_past > 0 ? s->rope_after[s->n_past - 1] : 0;
}

int64_t mx_session_rope_next(const mx_session_t *s) {
  if (!s) return 0;
  return s->rope_after ? rope_next(s) : s->n_past;
}

bool mx_session_mrope_shifted(const mx_session_t *s) {
  return s->rope_after != NULL && rope_next(s) != s->n_past;
}

void mx_session_mrope_note_text(mx_session_t *s, int64_t from, int64_t to) {
  if (!s->rope_after) return;
  int64_t p = from > 0 ? s->rope_after[from - 1] : 0;
  for (int64_t i = from; i < to; i++) s->rope_after[i] = ++p;
}

// A tower per patch grid (the Qwen towers, Youtu-VL) on a backend that runs it and the prompt
// entry its text model takes: M-RoPE positions (prefill_mrope) or 1-D ones (prefill_media).
// mrope: the call is prefill_mrope, which only the Qwen towers' text models take.
static mx_status_t check_grid(const mx_session_t *s, const char *what, bool mrope) {
  const mx_vision_config_t *v = &s->model->config.vision;
  bool qwen = mx_vision_mrope(v) && s->rope_after;
  if (!v->present || mx_vision_fixed_size(v) || v->kind == MX_VISION_MOLMO2 || (mrope && !qwen))
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: model_type '%s' has no %s vision tower", what,
                        s->model->config.model_type, mrope ? "Qwen2-VL" : "patch-grid");
  if ((!s->vbackend && !s->backend->vision_grid) ||
      !(qwen ? s->backend->prefill_mrope != NULL : s->backend->prefill_media != NULL))
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: backend %s does not run %s models", what,
                        s->backend->name, s->model->config.model_type);
  return MX_OK;
}

mx_status_t mx_session_check_grid_sizes(const mx_model_t *model, int64_t n_pixels, int32_t grid_h,
                                        int32_t grid_w, int64_t n_features) {
  const mx_vision_config_t *v = &model->config.vision;
  int32_t m = v->spatial_merge_size;
  if (grid_h <= 0 || grid_w <= 0 || grid_h % m || grid_w % m || grid_h > 4096 || grid_w > 4096)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "image: a %d x %d patch grid (positive multiples of the merge size %d)",
                        grid_h, grid_w, m);
  int64_t K = (int64_t)v->num_channels * v->temporal_patch_size * v->patch_size * v->patch_size;
  int64_t want_px = (int64_t)grid_h * grid_w * K;
  int64_t want_f = (int64_t)grid_h * grid_w / (m * m) * mx_vision_feature_width(&model->config);
  if (n_pixels != want_px)
    return mx_error_set(
        MX_ERR_INVALID_ARG,
        "image: %lld pixel values, a %d x %d patch grid takes %d x %d x %lld = %lld "
        "(one image: video frames are not supported)",
        (long long)n_pixels, grid_h, grid_w, grid_h, grid_w, (long long)K, (long long)want_px);
  if (n_features != want_f)
    return mx_error_set(MX_ERR_INVALID_ARG, "image: room for %lld feature values, need %lld",
                        (long long)n_features, (long long)want_f);
  return MX_OK;
}

mx_status_t mx_session_vision_grid(mx_session_t *s, const float *pixels, int64_t n_pixels,
                                   int32_t grid_h, int32_t grid_w, float *features,
                                   int64_t n_features) {
  if (!s || !pixels || !features)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_vision_grid: NULL argument");
  mx_status_t st = check_grid(s, "image", false);
  if (st) return st;
  st = mx_session_check_grid_sizes(s->model, n_pixels, grid_h, grid_w, n_features);
  if (st) return st;
  st = s->vbackend ? s->vbackend->vision_grid(s->vstate, pixels, grid_h, grid_w, features)
                   : s->backend->vision_grid(s->state, pixels, grid_h, grid_w, features);
  return st ? mx_error_prefix(st, "vision tower") : MX_OK;
}

// Runs n tokens chunk by chunk with their positions (positions == NULL: text from rope_next).
static mx_status_t run(mx_session_t *s, const int32_t *ids, const float *media,
                       const int32_t *positions, int32_t n) {
  const size_t H = (size_t)mx_vision_feature_width(&s->model->config);  // a media row's floats
  for (int32_t off = 0; off < n; off += s->chunk) {
    int32_t m = n - off < s->chunk ? n - off : s->chunk;
    int64_t next = rope_next(s), top = next;
    for (int32_t i = 0; i < m; i++)
      for (int32_t r = 0; r < 3; r++) {
        int64_t p = positions ? positions[(size_t)r * (size_t)n + (size_t)(off + i)] : next + i;
        s->mpos[r * m + i] = (int32_t)p;
        if (p + 1 > top) top = p + 1;
      }
    mx_status_t st = s->backend->prefill_mrope(s->state, ids + off, media ? media + off * H : NULL,
                                               s->mpos, m, s->n_past, s->logits);
    if (st) {
      s->has_logits = false;
      return mx_error_prefix(st, "prefill of tokens %d..%d at position %lld", off, off + m - 1,
                             (long long)s->n_past);
    }
    memcpy(s->tokens + s->n_past, ids + off, (size_t)m * sizeof *ids);
    // The position after the chunk: the largest one so far plus one (get_rope_index's
    // llm_positions.max() + 1); within a chunk each token only needs the chunk's end.
    for (int32_t i = 0; i < m; i++) s->rope_after[s->n_past + i] = positions ? top : next + i + 1;
    s->n_past += m;
    s->has_logits = true;
  }
  return MX_OK;
}

mx_status_t mx_session_mrope_text(mx_session_t *s, const int32_t *ids, int32_t n) {
  return run(s, ids, NULL, NULL, n);
}

mx_status_t mx_session_prefill_mrope(mx_session_t *s, const int32_t *ids, const float *media,
                                     const int32_t *positions, int32_t n) {
  if (!s || !media || !positions)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_prefill_mrope: NULL argument");
  mx_status_t st = check_grid(s, "prompt", true);
  if (st) return st;
  if (n < 0 || (n > 0 && !ids) || (int64_t)n > s->ctx - s->n_past)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "prompt of %d tokens does not fit: context capacity %lld, %lld tokens "
                        "already in the session",
                        n, (long long)s->ctx, (long long)s->n_past);
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= s->vocab)
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "prompt: token id %d at index %d is out of range [0, %d)", ids[i], i,
                          s->vocab);
    for (int32_t r = 0; r < 3; r++)
      if (positions[(size_t)r * (size_t)n + (size_t)i] < 0)
        return mx_error_set(MX_ERR_INVALID_ARG, "prompt: negative M-RoPE position at index %d", i);
  }
  return run(s, ids, media, positions, n);
}

mx_status_t mx_mrope_positions(const mx_model_config_t *cfg, const int32_t *ids, int32_t n,
                               const int32_t *grids, int32_t n_images, int64_t start,
                               int32_t *positions, int64_t *next) {
  if (!cfg || (n > 0 && (!ids || !positions)) || n < 0 || !next || (n_images > 0 && !grids))
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_mrope_positions: bad argument");
  const mx_vision_config_t *v = &cfg->vision;
  int32_t m = v->spatial_merge_size > 0 ? v->spatial_merge_size : 1, img = 0;
  int64_t p = start;
  for (int32_t i = 0; i < n;) {
    if (ids[i] != v->image_token_id) {
      for (int32_t r = 0; r < 3; r++) positions[(size_t)r * (size_t)n + (size_t)i] = (int32_t)p;
      p++;
      i++;
      continue;
    }
    int32_t j = i;
    while (j < n && ids[j] == v->image_token_id) j++;
    if (img >= n_images)
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "prompt: more runs of image tokens than the %d image%s given", n_images,
                          n_images == 1 ? "" : "s");
    int32_t gh = grids[2 * img] / m, gw = grids[2 * img + 1] / m;
    if ((int64_t)gh * gw != j - i)
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "prompt: image %d has %d image tokens, its %d x %d patch grid needs %d",
                          img + 1, j - i, grids[2 * img], grids[2 * img + 1], gh * gw);
    for (int32_t k = 0; k < j - i; k++) {
      size_t at = (size_t)(i + k);
      positions[at] = (int32_t)p;
      positions[(size_t)n + at] = (int32_t)(p + k / gw);
      positions[2 * (size_t)n + at] = (int32_t)(p + k % gw);
    }
    p += gh > gw ? gh : gw;
    img++;
    i = j;
  }
  if (img != n_images)
    return mx_error_set(MX_ERR_INVALID_ARG, "prompt: %d run%s of image tokens for %d images", img,
                        img == 1 ? "" : "s", n_images);
  *next = p;
  return MX_OK;
}
