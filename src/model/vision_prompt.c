// The prompt side of images (model.h): the processor's expansion of image tokens and the shape
// of the pixels a tower takes, shared by the CLI and the server.
#include <stdbool.h>
#include <stdlib.h>

#include "base/try.h"
#include "mlxcel/model.h"

mx_status_t mx_vision_expand_prompt(const mx_model_config_t *cfg, const int32_t *ids, int32_t n,
                                    int32_t n_images, const int32_t *counts, int32_t **out,
                                    int32_t *n_out) {
  *out = NULL;
  *n_out = 0;
  const mx_vision_config_t *v = &cfg->vision;
  if (!v->present)
    return mx_error_set(MX_ERR_UNSUPPORTED, "model_type '%s' takes no images", cfg->model_type);
  if (v->kind == MX_VISION_MOLMO2)  // views of crops and pooled rows: its own expansion
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "model_type '%s': its processor's image expansion follows each image's "
                        "image_grids (mx_molmo2_expand_prompt)",
                        cfg->model_type);
  // Gemma3Processor expands each <start_of_image> in the text, before tokenizing, into
  // "\n\n<start_of_image>", the soft tokens, "<end_of_image>\n\n": not an ids-level rule
  // (mx_chat_expand_images does it, in the CLI and the server).
  if (v->kind == MX_VISION_SIGLIP)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "model_type '%s': its processor's image expansion is a text-level image "
                        "expansion (mx_chat_expand_images), not one on ids",
                        cfg->model_type);
  bool grid = !mx_vision_fixed_size(v);  // the Qwen towers: runs of their grids, wrapped
  if (grid && !counts)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "model_type '%s': each image's token count follows its patch grid",
                        cfg->model_type);
  int32_t k = 0;
  for (int32_t i = 0; i < n; i++) k += ids[i] == v->image_token_id;
  if (k != n_images)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "the prompt has %d image token%s (id %d) for %d image%s", k,
                        k == 1 ? "" : "s", v->image_token_id, n_images, n_images == 1 ? "" : "s");
  int64_t total = (int64_t)n + (grid ? 2 * (int64_t)k : 0);
  for (int32_t i = 0; i < k; i++) total += (counts ? counts[i] : v->tokens_per_image) - 1;
  if (total > INT32_MAX)
    return mx_error_set(MX_ERR_INVALID_ARG, "%lld prompt tokens with the images", (long long)total);
  int32_t *e = malloc(sizeof *e * (size_t)(total > 0 ? total : 1)), j = 0, img = 0;
  if (!e) return mx_error_set(MX_ERR_NOMEM, "out of memory (%lld prompt tokens)", (long long)total);
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] != v->image_token_id) {
      e[j++] = ids[i];
      continue;
    }
    if (grid && (j == 0 || e[j - 1] != v->vision_start_token_id)) e[j++] = v->vision_start_token_id;
    int32_t reps = counts ? counts[img] : v->tokens_per_image;
    for (int32_t t = 0; t < reps; t++) e[j++] = v->image_token_id;
    if (grid && !(i + 1 < n && ids[i + 1] == v->vision_end_token_id))
      e[j++] = v->vision_end_token_id;
    img++;
  }
  *out = e;
  *n_out = j;
  return MX_OK;
}

mx_status_t mx_vision_check_pixels(const mx_model_config_t *cfg, int32_t rank,
                                   const int64_t *shape) {
  const mx_vision_config_t *v = &cfg->vision;
  if (rank == 3 && shape[0] == v->num_channels && shape[1] == v->image_size &&
      shape[2] == v->image_size)
    return MX_OK;
  return mx_error_set(MX_ERR_INVALID_ARG,
                      "the processor gives pixel_values of shape [%lld, %lld, %lld], the vision "
                      "tower takes [%d, %d, %d] (preprocessor_config.json and config.json "
                      "disagree)",
                      (long long)(rank > 0 ? shape[0] : 0), (long long)(rank > 1 ? shape[1] : 0),
                      (long long)(rank > 2 ? shape[2] : 0), v->num_channels, v->image_size,
                      v->image_size);
}

mx_status_t mx_vision_image_runs(const mx_model_config_t *cfg, const int32_t *ids, int32_t n,
                                 int32_t n_images, const int32_t *counts, int32_t *starts) {
  const mx_vision_config_t *v = &cfg->vision;
  int32_t pos = 0;
  for (int32_t i = 0; i < n_images; i++) {
    int32_t want = counts ? counts[i] : v->tokens_per_image;
    while (pos < n && ids[pos] != v->image_token_id) pos++;
    int32_t run = 0;
    while (pos + run < n && run < want && ids[pos + run] == v->image_token_id) run++;
    if (run < want)
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "image %d has no run of %d image tokens (id %d) in the prompt", i, want,
                          v->image_token_id);
    starts[i] = pos;
    pos += run;
  }
  return MX_OK;
}

// Molmo2's image tokens attend to every other image token of the prompt, the later images' too
// (transformers' token_type_ids mask), so the span from the first image token to the last, text
// between images included, is one call: the cut goes before it, or the call takes it whole
// (a runner then runs it as one graph: mx_vision_media_piece). Image tokens after images already
// in the context cannot see them (ADR 0023).
static mx_status_t molmo2_take(const mx_vision_config_t *v, const int32_t *ids, int32_t n,
                               bool context_has_image, int32_t *take) {
  int32_t first = 0, last = n - 1;
  while (first < n && !mx_vision_block_token(v, ids[first])) first++;
  if (first == n) return MX_OK;
  if (context_has_image)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "image tokens at %d follow images already in the context: Molmo2's image "
                        "tokens attend to every other image's, so one prefill holds all of them",
                        first);
  while (!mx_vision_block_token(v, ids[last])) last--;
  if (*take <= first || *take > last) return MX_OK;
  *take = first > 0 ? first : last + 1;
  return MX_OK;
}

mx_status_t mx_vision_prefill_take(const mx_model_config_t *cfg, const int32_t *ids, int32_t n,
                                   int32_t chunk, bool prev_image, int32_t *take) {
  *take = n < chunk ? n : chunk;
  const mx_vision_config_t *v = &cfg->vision;
  if (!mx_vision_blocks(v) || n == 0) return MX_OK;
  if (v->kind == MX_VISION_MOLMO2) return molmo2_take(v, ids, n, prev_image, take);
  if (prev_image && mx_vision_block_token(v, ids[0]))
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "the prompt continues a run of image tokens (id %d) already in the "
                        "context: an image's tokens attend to each other, so one prefill holds "
                        "them all",
                        ids[0]);
  int32_t m = *take;
  if (m == n || !mx_vision_block_token(v, ids[m - 1]) || !mx_vision_block_token(v, ids[m]))
    return MX_OK;
  int32_t r = m - 1;  // the cut falls inside a run: end the call before the run
  while (r > 0 && mx_vision_block_token(v, ids[r - 1])) r--;
  if (r > 0) {
    *take = r;
    return MX_OK;
  }
  // The call starts with a run longer than the chunk: it takes the whole run, which the media
  // prefill runs as one graph of its length (mx_vision_media_piece).
  int32_t len = m;
  while (len < n && mx_vision_block_token(v, ids[len])) len++;
  *take = len;
  return MX_OK;
}

bool mx_vision_context_image(const mx_vision_config_t *v, const int32_t *tokens, int64_t n) {
  if (!mx_vision_blocks(v) || n <= 0) return false;
  if (v->kind != MX_VISION_MOLMO2) return mx_vision_block_token(v, tokens[n - 1]);
  for (int64_t i = 0; i < n; i++)
    if (mx_vision_block_token(v, tokens[i])) return true;
  return false;
}

int32_t mx_vision_media_piece(const mx_vision_config_t *v, const int32_t *ids, int32_t n,
                              int32_t max_pow2) {
  int32_t len = 0;
  if (mx_vision_blocks(v) && n > 0 && mx_vision_block_token(v, ids[0])) {
    if (v->kind == MX_VISION_MOLMO2) {  // the whole span to the last image token (one block)
      len = n;
      while (!mx_vision_block_token(v, ids[len - 1])) len--;
      return len;
    }
    while (len < n && mx_vision_block_token(v, ids[len])) len++;
    return len;  // the whole run, whatever its length
  }
  while (len < n && !(mx_vision_blocks(v) && mx_vision_block_token(v, ids[len]))) len++;
  int32_t t = 1;
  while (t * 2 <= len && t * 2 <= max_pow2) t *= 2;
  return len > 0 ? t : 0;
}

int64_t mx_vision_feature_width(const mx_model_config_t *cfg) {
  int32_t extra = cfg->vision.kind == MX_VISION_QWEN3_VL ? cfg->vision.n_deepstack : 0;
  return (int64_t)cfg->hidden_size * (1 + extra);
}

int32_t mx_media_token_id(const mx_model_config_t *cfg) {
  return !cfg->vision.present && cfg->audio.present ? cfg->audio.audio_token_id
                                                    : cfg->vision.image_token_id;
}
