// Molmo2ImageProcessor for one image: a global view (the image resized to the crop size) and a
// grid of overlapping crops cut from the image resized to a canvas, every view patchified, plus
// image_token_pooling, the patch indices each pooled image token of the adapter reads.
//
// The crops: a crop of C = size pixels is a window of W = C - (left + right margin) * P pixels
// with the margins around it; the tiling (rows, cols) is the fewest tiles of W that cover the
// image less its margins without upscaling it (or, when every tiling needs a downscale, the one
// that downscales least), and the canvas is (rows * W + margins, cols * W + margins), resized to
// from the whole image, the crops stepping by W. Of each crop's patches only those outside the
// overlap shared with a neighbour are pooled: the pooled patches tile the canvas exactly once.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/try.h"
#include "image_internal.h"

// The tilings of at most MX_IMAGE_MOLMO2_MAX_CROPS tiles number 280.
enum { MX_MOLMO2_MAX_TILINGS = 320 };

typedef struct tiling {
  int64_t rows, cols;
} tiling_t;

// select_tiling: the candidates (r, c) with r * c <= max_crops in the order of (r * c, r), each
// with the f32 scale min(r * window / h, c * window / w) as torch computes it. When every one
// needs a downscale (scale < 1) the largest scale wins, otherwise the smallest of those at least
// 1 (the others counted as 1e10), the first candidate on ties (argmax / argmin).
static tiling_t select_tiling(int64_t h, int64_t w, int64_t window, int64_t max_crops) {
  tiling_t cand[MX_MOLMO2_MAX_TILINGS];
  float scale[MX_MOLMO2_MAX_TILINGS];
  int n = 0;
  bool all_down = true;
  for (int64_t area = 1; area <= max_crops; area++)
    for (int64_t r = 1; r <= area && n < MX_MOLMO2_MAX_TILINGS; r++) {
      if (area % r) continue;
      int64_t c = area / r;
      float sh = (float)(r * window) / (float)h, sw = (float)(c * window) / (float)w;
      cand[n] = (tiling_t){r, c};
      scale[n] = sh < sw ? sh : sw;
      all_down &= scale[n++] < 1.0f;
    }
  int best = 0;
  for (int i = 0; i < n; i++) {
    float s = !all_down && scale[i] < 1.0f ? 1e10f : scale[i];
    float b = !all_down && scale[best] < 1.0f ? 1e10f : scale[best];
    if (all_down ? s > b : s < b) best = i;
  }
  return cand[best];
}

// arange_for_pooling: the [rows, cols] index grid padded with -1 to multiples of the window
// (the odd pad at the bottom / right), then one row of ph * pw indices per window.
static void pool_grid(const int32_t *grid, int64_t rows, int64_t cols, int64_t ph, int64_t pw,
                      int32_t offset, int32_t *out) {
  int64_t pr = (ph - rows % ph) % ph, pc = (pw - cols % pw) % pw;
  int64_t top = pr / 2, left = pc / 2;
  int64_t nr = (rows + pr) / ph, nc = (cols + pc) / pw;
  for (int64_t r = 0; r < nr; r++)
    for (int64_t c = 0; c < nc; c++)
      for (int64_t dy = 0; dy < ph; dy++)
        for (int64_t dx = 0; dx < pw; dx++) {
          int64_t y = r * ph + dy - top, x = c * pw + dx - left;
          int32_t v = -1;
          if (y >= 0 && y < rows && x >= 0 && x < cols) v = grid[y * cols + x];
          *out++ = v >= 0 ? v + offset : -1;
        }
}

// The processor's rescale and normalize (its torchvision backend fuses them: mean and std are
// multiplied by 1 / rescale_factor in f32, then (x - mean) / std in f32).
static void value_table(const mx_image_proc_t *p, float table[3][256]) {
  float inv = (float)(1.0 / p->rescale_factor);
  for (int c = 0; c < 3; c++) {
    float mean = (float)p->image_mean[c], std = (float)p->image_std[c];
    if (p->do_rescale && p->do_normalize) mean *= inv, std *= inv;
    for (int v = 0; v < 256; v++) {
      float x = (float)v;
      if (p->do_normalize)
        x = (x - mean) / std;
      else if (p->do_rescale)
        x = x * (float)p->rescale_factor;
      table[c][v] = x;
    }
  }
}

// Patch rows of the C x C view of `img` at (y0, x0): patches in raster order, each (row, column,
// channel) of its P x P pixels.
static float *patchify(const mx_image_t *img, int64_t y0, int64_t x0, int64_t C, int64_t P,
                       float table[3][256], float *dst) {
  for (int64_t py = 0; py < C / P; py++)
    for (int64_t px = 0; px < C / P; px++)
      for (int64_t y = 0; y < P; y++) {
        const uint8_t *src = img->rgb + ((size_t)(y0 + py * P + y) * img->width + x0 + px * P) * 3;
        for (int64_t x = 0; x < 3 * P; x++) *dst++ = table[x % 3][src[x]];
      }
  return dst;
}

mx_status_t mx_image_preprocess_molmo2(const mx_image_proc_t *p, const mx_image_t *img,
                                       mx_pixels_t *out) {
  int64_t C = p->size_h, P = p->patch_size, cp = C / P;
  int64_t lm = p->overlap_margins[0], rm = p->overlap_margins[1];
  int64_t ph = p->pooling_size[0], pw = p->pooling_size[1];
  int64_t window = (cp - lm - rm) * P, margin = (lm + rm) * P;
  tiling_t t = select_tiling(img->height - margin, img->width - margin, window, p->max_crops);
  int64_t ch = t.rows * window + margin, cw = t.cols * window + margin;
  int64_t crops = 1 + t.rows * t.cols, per_crop = cp * cp, row = P * P * 3;
  // The canvas's patch grid: each tile's patches less the overlaps with its neighbours.
  int64_t gr = ch / P, gc = cw / P;
  int64_t lr = (cp + ph - 1) / ph, lc = (cp + pw - 1) / pw;  // the global view's pooled grid
  int64_t hr = (gr + ph - 1) / ph, hc = (gc + pw - 1) / pw;
  int64_t tokens = lr * lc + hr * hc;

  mx_image_t global = {0}, canvas = {0};
  float(*table)[256] = malloc(sizeof(float[3][256]));
  float *data = malloc(sizeof(float) * (size_t)(crops * per_crop * row));
  int32_t *grid = calloc((size_t)(per_crop > gr * gc ? per_crop : gr * gc), sizeof(int32_t));
  int32_t *pooling = malloc(sizeof(int32_t) * (size_t)(tokens * ph * pw));
  mx_status_t st = MX_OK;
  if (!table || !data || !grid || !pooling)
    st = mx_error_set(MX_ERR_NOMEM, "%s: out of memory for %lld crops", p->type_name,
                      (long long)crops);
  if (st == MX_OK) st = mx_image_resize_linear_torch(img, (int32_t)C, (int32_t)C, &global);
  if (st == MX_OK) st = mx_image_resize_linear_torch(img, (int32_t)cw, (int32_t)ch, &canvas);
  if (st != MX_OK) {
    free(table), free(data), free(grid), free(pooling);
    mx_image_free(&global);
    mx_image_free(&canvas);
    return st;
  }
  value_table(p, table);
  float *dst = patchify(&global, 0, 0, C, P, table, data);
  for (int64_t r = 0; r < t.rows; r++)
    for (int64_t c = 0; c < t.cols; c++)
      dst = patchify(&canvas, r * window, c * window, C, P, table, dst);

  // The global view pools its own patch grid; the crops pool the canvas grid, whose entries are
  // patch indices among the crops (offset past the global view's patches).
  for (int64_t i = 0; i < per_crop; i++) grid[i] = (int32_t)i;
  pool_grid(grid, cp, cp, ph, pw, 0, pooling);
  int64_t y = 0;
  for (int64_t r = 0; r < t.rows; r++) {
    int64_t y0 = r > 0 ? lm : 0, y1 = r < t.rows - 1 ? cp - rm : cp;
    for (int64_t py = y0; py < y1; py++, y++) {
      int64_t x = 0;
      for (int64_t c = 0; c < t.cols; c++) {
        int64_t x0 = c > 0 ? lm : 0, x1 = c < t.cols - 1 ? cp - rm : cp;
        for (int64_t px = x0; px < x1; px++, x++)
          grid[y * gc + x] = (int32_t)(((r * t.cols + c) * cp + py) * cp + px);
      }
    }
  }
  pool_grid(grid, gr, gc, ph, pw, (int32_t)per_crop, pooling + lr * lc * ph * pw);
  free(grid);
  free(table);
  mx_image_free(&global);

  out->data = data;
  out->rank = 3;
  out->shape[0] = crops, out->shape[1] = per_crop, out->shape[2] = row;
  out->pooling = pooling;
  out->pooling_shape[0] = tokens, out->pooling_shape[1] = ph * pw;
  int64_t grids[4] = {lr, lc, hr, hc};
  memcpy(out->image_grid, grids, sizeof grids);
  out->width = canvas.width;
  out->height = canvas.height;
  out->rgb = canvas.rgb;  // ownership moves to the pixels
  return MX_OK;
}
