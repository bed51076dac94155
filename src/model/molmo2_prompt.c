// Molmo2's prompt side of images (model.h): the processor's image tokens per image, from its
// image_grids row, shared by the CLI and the server.
#include <stdlib.h>

#include "mlxcel/model.h"

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
