// PIL's Image.resize for 8-bit RGB, bit-exact (the processors resize through PIL): a separable
// convolution in two passes, each output sample a window of input samples weighted by
// the filter stretched by the downscale factor (so a downscale averages every input pixel it
// covers: antialiasing), the weights normalized to sum 1 in double, then rounded to signed
// fixed point with 22 fractional bits; the sums start at one half and are clipped to 0..255
// after each pass (the intermediate image is 8-bit). Every step below keeps PIL's arithmetic
// and evaluation order, because a different rounding anywhere shows up as +-1 in the pixels.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/image.h"

enum { FIXED_BITS = 22 };  // 32 bits: 8 for the sample, 2 for the filter's overshoot

static double filter_bilinear(double x) {
  x = fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Keys' cubic convolution with a = -0.5.
static double filter_bicubic(double x) {
  const double a = -0.5;
  x = fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// The weights of one pass: for output sample i, taps `count[i]` input samples from `first[i]`
// with fixed-point weights w[i * ksize + j].
typedef struct pass {
  int32_t ksize;
  int32_t *first, *count, *w;
} pass_t;

static void pass_free(pass_t *p) {
  free(p->first);
  free(p->count);
  free(p->w);
  memset(p, 0, sizeof *p);
}

static mx_status_t pass_init(pass_t *p, int32_t in_size, int32_t out_size, mx_resample_t filter) {
  double (*fn)(double) = filter == MX_RESAMPLE_BICUBIC ? filter_bicubic : filter_bilinear;
  double support = filter == MX_RESAMPLE_BICUBIC ? 2.0 : 1.0;
  double scale = (double)(float)in_size / out_size;  // PIL's box edges are floats
  double filterscale = scale < 1.0 ? 1.0 : scale;
  support *= filterscale;
  p->ksize = (int32_t)ceil(support) * 2 + 1;
  p->first = malloc(sizeof(int32_t) * out_size);
  p->count = malloc(sizeof(int32_t) * out_size);
  p->w = calloc((size_t)out_size * p->ksize, sizeof(int32_t));
  double *k = malloc(sizeof(double) * p->ksize);
  if (!p->first || !p->count || !p->w || !k) {
    free(k);
    pass_free(p);
    return mx_error_set(MX_ERR_NOMEM, "out of memory for the resize weights");
  }
  for (int32_t i = 0; i < out_size; i++) {
    double center = (i + 0.5) * scale;
    double inv = 1.0 / filterscale;
    int32_t lo = (int32_t)(center - support + 0.5);  // truncation toward zero, as PIL
    if (lo < 0) lo = 0;
    int32_t hi = (int32_t)(center + support + 0.5);
    if (hi > in_size) hi = in_size;
    int32_t n = hi - lo;
    double sum = 0.0;
    for (int32_t j = 0; j < n; j++) {
      k[j] = fn((j + lo - center + 0.5) * inv);
      sum += k[j];
    }
    for (int32_t j = 0; j < n; j++) {
      double v = sum != 0.0 ? k[j] / sum : k[j];
      p->w[(size_t)i * p->ksize + j] =
          (int32_t)(v < 0 ? -0.5 + v * (1 << FIXED_BITS) : 0.5 + v * (1 << FIXED_BITS));
    }
    p->first[i] = lo;
    p->count[i] = n;
  }
  free(k);
  return MX_OK;
}

static inline uint8_t clip8(int32_t acc) {
  int32_t v = acc >> FIXED_BITS;  // arithmetic shift: floor, as PIL's table lookup
  return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

// Rows [y0, y0 + rows) of `in` (in_w wide) resampled horizontally into `out` (out_w wide).
static void resample_rows(const uint8_t *in, int32_t in_w, int32_t y0, int32_t rows,
                          const pass_t *p, int32_t out_w, uint8_t *out) {
  for (int32_t y = 0; y < rows; y++) {
    const uint8_t *src = in + (size_t)(y0 + y) * in_w * 3;
    uint8_t *dst = out + (size_t)y * out_w * 3;
    for (int32_t x = 0; x < out_w; x++) {
      const int32_t *w = p->w + (size_t)x * p->ksize;
      const uint8_t *s = src + (size_t)p->first[x] * 3;
      int32_t r = 1 << (FIXED_BITS - 1), g = r, b = r;
      for (int32_t j = 0; j < p->count[x]; j++) {
        r += s[3 * j + 0] * w[j];
        g += s[3 * j + 1] * w[j];
        b += s[3 * j + 2] * w[j];
      }
      dst[3 * x + 0] = clip8(r);
      dst[3 * x + 1] = clip8(g);
      dst[3 * x + 2] = clip8(b);
    }
  }
}

// Columns: output row y from input rows first[y] - y0 .. (the input starts at row y0).
static void resample_cols(const uint8_t *in, int32_t w_px, int32_t y0, const pass_t *p,
                          int32_t out_h, uint8_t *out) {
  size_t stride = (size_t)w_px * 3;
  for (int32_t y = 0; y < out_h; y++) {
    const int32_t *w = p->w + (size_t)y * p->ksize;
    const uint8_t *src = in + (size_t)(p->first[y] - y0) * stride;
    uint8_t *dst = out + (size_t)y * stride;
    for (size_t x = 0; x < stride; x++) {
      int32_t acc = 1 << (FIXED_BITS - 1);
      for (int32_t j = 0; j < p->count[y]; j++) acc += src[(size_t)j * stride + x] * w[j];
      dst[x] = clip8(acc);
    }
  }
}

// Which pass runs first changes the result (the intermediate image is rounded to 8 bits).
// Pillow 13 (the reference; older releases always ran the horizontal pass first) runs the
// vertical pass first when the height loses more than twice as many pixels as the width, to make
// the second pass cheaper: the same test, on pixel counts, is used here.
static bool vertical_first(int32_t in_w, int32_t in_h, int32_t w, int32_t h) {
  int64_t dh = (int64_t)in_h - h, dw = (int64_t)in_w - w;
  return dh > 0 && dh > 2 * dw;
}

mx_status_t mx_image_resize(const mx_image_t *in, int32_t width, int32_t height,
                            mx_resample_t filter, mx_image_t *out) {
  memset(out, 0, sizeof *out);
  if (!in || !in->rgb || in->width <= 0 || in->height <= 0 || width <= 0 || height <= 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_image_resize: empty image or size (%d x %d)", width,
                        height);
  if (filter != MX_RESAMPLE_BILINEAR && filter != MX_RESAMPLE_BICUBIC)
    return mx_error_set(MX_ERR_UNSUPPORTED, "resample filter %d is not implemented", filter);
  bool horiz = width != in->width, vert = height != in->height;
  pass_t ph = {0}, pv = {0};
  uint8_t *tmp = NULL, *dst = malloc((size_t)width * height * 3);
  if (!dst) return mx_error_set(MX_ERR_NOMEM, "out of memory for the resized image");
  mx_status_t st = pass_init(&pv, in->height, height, filter);
  if (st == MX_OK && horiz) st = pass_init(&ph, in->width, width, filter);
  if (st != MX_OK) goto done;
  if (!horiz && !vert) {
    memcpy(dst, in->rgb, (size_t)width * height * 3);
  } else if (!vert) {
    resample_rows(in->rgb, in->width, 0, height, &ph, width, dst);
  } else if (!horiz) {
    resample_cols(in->rgb, width, 0, &pv, height, dst);
  } else if (vertical_first(in->width, in->height, width, height)) {
    tmp = malloc((size_t)in->width * height * 3);
    if (!tmp) {
      st = mx_error_set(MX_ERR_NOMEM, "out of memory for the resize");
      goto done;
    }
    resample_cols(in->rgb, in->width, 0, &pv, height, tmp);
    resample_rows(tmp, in->width, 0, height, &ph, width, dst);
  } else {
    // Only the input rows the vertical pass reads go through the horizontal pass.
    int32_t y0 = pv.first[0], y1 = pv.first[height - 1] + pv.count[height - 1];
    tmp = malloc((size_t)width * (y1 - y0) * 3);
    if (!tmp) {
      st = mx_error_set(MX_ERR_NOMEM, "out of memory for the resize");
      goto done;
    }
    resample_rows(in->rgb, in->width, y0, y1 - y0, &ph, width, tmp);
    resample_cols(tmp, width, y0, &pv, height, dst);
  }
done:
  pass_free(&ph);
  pass_free(&pv);
  free(tmp);
  if (st != MX_OK) {
    free(dst);
    return st;
  }
  out->width = width;
  out->height = height;
  out->rgb = dst;
  return MX_OK;
}
