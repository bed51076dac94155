// torch's bilinear interpolation (F.interpolate, align_corners=False, antialias=False) of an
// 8-bit RGB image taken as floats, rounded half to even and clamped back to 8 bits: what
// Molmo2's torchvision-based processor does (it resizes in float, then rounds and clamps, so the
// bytes do not depend on torchvision's uint8 kernels). Unlike PIL's resize this is no
// convolution: each output sample reads the 2 x 2 input samples around its source position,
// whatever the scale, so a downscale skips pixels instead of averaging them.
//
// The arithmetic follows aten's upsample kernel in f32: scale = in / out, source position
// max(scale * (i + 0.5) - 0.5, 0), its floor (at most in - 1) and fraction (clamped to 0..1),
// and each sum of two products t0 * w0 + t1 * w1 as the fused multiply-add fma(t0, w0, t1 * w1)
// that torch's build compiles it to (rows first: each row's two samples, then the two rows).
// Evaluated otherwise, about one sum in ten differs by an ulp, and the few that land within an
// ulp of a half then round to the other 8-bit level.
#include <math.h>
#include <stdlib.h>

#include "base/try.h"
#include "image_internal.h"

typedef struct taps {
  int32_t *i0, *i1;
  float *w0, *w1;
} taps_t;

static void taps_free(taps_t *t) {
  free(t->i0);
  free(t->i1);
  free(t->w0);
  free(t->w1);
}

static mx_status_t taps_init(int32_t in, int32_t out, taps_t *t) {
  t->i0 = malloc(sizeof(int32_t) * (size_t)out);
  t->i1 = malloc(sizeof(int32_t) * (size_t)out);
  t->w0 = malloc(sizeof(float) * (size_t)out);
  t->w1 = malloc(sizeof(float) * (size_t)out);
  if (!t->i0 || !t->i1 || !t->w0 || !t->w1) {
    taps_free(t);
    return mx_error_set(MX_ERR_NOMEM, "out of memory for the resize weights");
  }
  float scale = (float)in / (float)out;
  for (int32_t i = 0; i < out; i++) {
    float src = scale * ((float)i + 0.5f) - 0.5f;
    if (src < 0) src = 0;
    int32_t k = (int32_t)floorf(src);
    if (k > in - 1) k = in - 1;
    float lambda = src - (float)k;
    if (lambda < 0) lambda = 0;
    if (lambda > 1) lambda = 1;
    t->i0[i] = k;
    t->i1[i] = k < in - 1 ? k + 1 : k;
    t->w1[i] = lambda;
    t->w0[i] = 1.0f - lambda;
  }
  return MX_OK;
}

mx_status_t mx_image_resize_linear_torch(const mx_image_t *in, int32_t width, int32_t height,
                                         mx_image_t *out) {
  if (!in || !in->rgb || in->width <= 0 || in->height <= 0 || width <= 0 || height <= 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "bilinear resize: bad image or size %d x %d", width,
                        height);
  taps_t tx = {0}, ty = {0};
  MX_TRY(taps_init(in->width, width, &tx));
  mx_status_t st = taps_init(in->height, height, &ty);
  uint8_t *rgb = st == MX_OK ? malloc((size_t)width * height * 3) : NULL;
  if (st == MX_OK && !rgb) st = mx_error_set(MX_ERR_NOMEM, "out of memory for the resized image");
  if (st != MX_OK) {
    taps_free(&tx);
    taps_free(&ty);
    return st;
  }
  size_t stride = (size_t)in->width * 3;
  for (int32_t y = 0; y < height; y++) {
    const uint8_t *r0 = in->rgb + (size_t)ty.i0[y] * stride;
    const uint8_t *r1 = in->rgb + (size_t)ty.i1[y] * stride;
    for (int32_t x = 0; x < width; x++) {
      size_t a = (size_t)tx.i0[x] * 3, b = (size_t)tx.i1[x] * 3;
      for (int c = 0; c < 3; c++) {
        float top = fmaf((float)r0[a + c], tx.w0[x], (float)r0[b + c] * tx.w1[x]);
        float bottom = fmaf((float)r1[a + c], tx.w0[x], (float)r1[b + c] * tx.w1[x]);
        float v = nearbyintf(fmaf(top, ty.w0[y], bottom * ty.w1[y]));  // torch.round: to even
        rgb[((size_t)y * width + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    }
  }
  taps_free(&tx);
  taps_free(&ty);
  out->width = width;
  out->height = height;
  out->rgb = rgb;
  return MX_OK;
}
