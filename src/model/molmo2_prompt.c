// Molmo2's prompt side of images (model.h): the processor's image tokens per image, from its
// image_grids row, shared by the CLI and the server.
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/try.h"
#include "mlxcel/model.h"
#include "mlxcel/tokenizer.h"

// Writes one view's tokens (start, rows of cols patches each with an optional column token,
// <im_end>) at e (NULL: counts them); returns the count.
static int64_t view(int32_t *e, int32_t start, int64_t rows, int64_t cols, bool col,
                    const mx_molmo2_prompt_t *p) {
  int64_t n = 0;
  if (e) e[n] = start;
  n++;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t c = 0; c < cols; c++, n++)
      if (e) e[n] = p->patch;
    if (col) {
      if (e) e[n] = p->col;
      n++;
    }
  }
  if (e) e[n] = p->end;
  return n + 1;
}

static int64_t image(int32_t *e, const int64_t g[4], const mx_molmo2_prompt_t *p) {
  bool low_col = p->single_crop_col_tokens < 0 ? p->col_tokens : p->single_crop_col_tokens != 0;
  int32_t low_start = p->single_crop_start ? p->low_res_start : p->start;
  int64_t n = view(e, low_start, g[0], g[1], low_col, p);
  return n + view(e ? e + n : NULL, p->start, g[2], g[3], p->col_tokens, p);
}

mx_status_t mx_molmo2_expand_prompt(const mx_molmo2_prompt_t *p, const int32_t *ids, int32_t n,
                                    const int64_t (*grids)[4], int32_t n_images, int32_t **out,
                                    int32_t *n_out) {
  *out = NULL;
  *n_out = 0;
  int32_t k = 0;
  for (int32_t i = 0; i < n; i++) k += ids[i] == p->placeholder;
  if (k != n_images)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "the prompt has %d image placeholder%s (id %d) for %d image%s", k,
                        k == 1 ? "" : "s", p->placeholder, n_images, n_images == 1 ? "" : "s");
  int64_t total = n - k;
  for (int32_t i = 0; i < n_images; i++) {
    for (int j = 0; j < 4; j++)
      if (grids[i][j] <= 0 || grids[i][j] > 4096)
        return mx_error_set(MX_ERR_INVALID_ARG, "image %d: image_grids [%lld, %lld, %lld, %lld]", i,
                            (long long)grids[i][0], (long long)grids[i][1], (long long)grids[i][2],
                            (long long)grids[i][3]);
    total += image(NULL, grids[i], p);
  }
  if (total > INT32_MAX)
    return mx_error_set(MX_ERR_INVALID_ARG, "%lld prompt tokens with the images", (long long)total);
  int32_t *e = malloc(sizeof *e * (size_t)(total > 0 ? total : 1));
  if (!e) return mx_error_set(MX_ERR_NOMEM, "out of memory (%lld prompt tokens)", (long long)total);
  int64_t j = 0;
  for (int32_t i = 0, img = 0; i < n; i++) {
    if (ids[i] == p->placeholder)
      j += image(e + j, grids[img++], p);
    else
      e[j++] = ids[i];
  }
  *out = e;
  *n_out = (int32_t)j;
  return MX_OK;
}

// A special token's id by its text, or an error naming it.
static mx_status_t token_id(const mx_tokenizer_t *tok, const char *text, int32_t *id) {
  *id = mx_tokenizer_token_to_id(tok, text, strlen(text));
  if (*id < 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "the tokenizer has no %s token (Molmo2's image tokens)",
                        text);
  return MX_OK;
}

// A boolean option of processor_config.json: absent keeps *v; null sets *v to -1 when
// null_ok, else keeps it; anything but a boolean is refused naming the key.
static mx_status_t option(const cJSON *root, const char *key, bool null_ok, int32_t *v) {
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!o) return MX_OK;
  if (cJSON_IsNull(o)) {
    if (null_ok) *v = -1;
    return MX_OK;
  }
  if (!cJSON_IsBool(o))
    return mx_error_set(MX_ERR_PARSE, "processor_config.json: %s must be a boolean", key);
  *v = cJSON_IsTrue(o) ? 1 : 0;
  return MX_OK;
}

mx_status_t mx_molmo2_prompt_load(const mx_model_t *m, mx_molmo2_prompt_t *out) {
  memset(out, 0, sizeof *out);
  const mx_vision_config_t *v = &m->config.vision;
  if (v->kind != MX_VISION_MOLMO2)
    return mx_error_set(MX_ERR_INVALID_ARG, "model_type '%s' is not Molmo2", m->config.model_type);
  if (!m->tokenizer) return mx_error_set(MX_ERR_INVALID_ARG, "Molmo2's prompt needs its tokenizer");
  MX_TRY(token_id(m->tokenizer, "<|image|>", &out->placeholder));
  MX_TRY(token_id(m->tokenizer, "<im_patch>", &out->patch));
  MX_TRY(token_id(m->tokenizer, "<im_col>", &out->col));
  MX_TRY(token_id(m->tokenizer, "<im_start>", &out->start));
  MX_TRY(token_id(m->tokenizer, "<low_res_im_start>", &out->low_res_start));
  MX_TRY(token_id(m->tokenizer, "<im_end>", &out->end));
  // The text model's blocks (mx_vision_block_token) must cover every image token it is given.
  const int32_t ids[5] = {out->patch, out->col, out->start, out->low_res_start, out->end};
  for (int i = 0; i < 5; i++)
    if (!mx_vision_block_token(v, ids[i]) || ids[i] == out->placeholder)
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "the tokenizer's image token id %d lies outside config.json's image "
                          "tokens %d..%d (one image's block)",
                          ids[i], v->block_lo, v->block_hi);
  if (out->patch != v->image_token_id || out->start != v->vision_start_token_id ||
      out->end != v->vision_end_token_id || out->low_res_start != v->low_res_start_token_id)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "the tokenizer's <im_patch> <im_start> <im_end> <low_res_im_start> (%d %d "
                        "%d %d) are not config.json's (%d %d %d %d)",
                        out->patch, out->start, out->end, out->low_res_start, v->image_token_id,
                        v->vision_start_token_id, v->vision_end_token_id,
                        v->low_res_start_token_id);
  // Molmo2Processor's defaults, then processor_config.json's values where it has the file.
  int32_t col = 1, single_col = -1, single_start = 1;
  char path[4096];
  if (snprintf(path, sizeof path, "%s/processor_config.json", m->dir ? m->dir : ".") >=
      (int)sizeof path)
    return mx_error_set(MX_ERR_INVALID_ARG, "model directory path too long");
  char *text = NULL;
  size_t len = 0;
  if (mx_read_file_max(path, MX_CONFIG_JSON_MAX_BYTES, &text, &len) == MX_OK) {
    cJSON *root = NULL;
    mx_status_t st =
        mx_json_parse(text, len, MX_CONFIG_JSON_MAX_BYTES, MX_JSON_MAX_DEPTH, path, &root);
    free(text);
    if (!st) st = option(root, "image_use_col_tokens", false, &col);
    if (!st) st = option(root, "use_single_crop_col_tokens", true, &single_col);
    if (!st) st = option(root, "use_single_crop_start_token", false, &single_start);
    cJSON_Delete(root);
    if (st) return st;
  }
  mx_error_clear();
  out->col_tokens = col == 1;
  out->single_crop_col_tokens = single_col;
  out->single_crop_start = single_start == 1;
  return MX_OK;
}
