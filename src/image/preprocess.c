// The processors' arithmetic after decoding, in their order: (LLaVA) pad to square, resize
// (PIL, resample.c), (CLIP) center crop, rescale, normalize, (Qwen2-VL) patchify. Rescale and
// normalize round as numpy does them: u8 -> f64 * scale -> f32, then (x - mean) / std in f32.
// Molmo2's crops and pooling indices are molmo2.c's.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/try.h"
#include "image_internal.h"

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// LlavaImageProcessor.pad_to_square: centred on a square of the longer side, filled with
// int(mean * 255) per channel (truncated, as transformers' int()).
static mx_status_t pad_square(const mx_image_proc_t *p, const mx_image_t *in, mx_image_t *out) {
  int32_t side = in->width > in->height ? in->width : in->height;
  out->rgb = malloc((size_t)side * side * 3);
  if (!out->rgb) return mx_error_set(MX_ERR_NOMEM, "out of memory for the padded image");
  out->width = out->height = side;
  uint8_t fill[3];
  for (int c = 0; c < 3; c++) fill[c] = (uint8_t)(int)(p->image_mean[c] * 255);
  for (size_t i = 0; i < (size_t)side * side; i++) memcpy(out->rgb + 3 * i, fill, 3);
  int32_t x0 = 0, y0 = 0;
  if (in->width > in->height)
    y0 = (side - in->height) / 2;
  else
    x0 = (side - in->width) / 2;
  for (int32_t y = 0; y < in->height; y++)
    memcpy(out->rgb + ((size_t)(y + y0) * side + x0) * 3, in->rgb + (size_t)y * in->width * 3,
           (size_t)in->width * 3);
  return MX_OK;
}

// transformers' center_crop: a window of crop size at floor((orig - crop) / 2); where the image
// is smaller than the crop it is first centred on zeros (ceil((crop - orig) / 2) before it).
static mx_status_t center_crop(const mx_image_t *in, int64_t ch, int64_t cw, mx_image_t *out) {
  int64_t h = in->height, w = in->width;
  int64_t top = floor_div(h - ch, 2), left = floor_div(w - cw, 2);
  int64_t nh = ch > h ? ch : h, nw = cw > w ? cw : w;
  int64_t pad_t = (nh - h + 1) / 2, pad_l = (nw - w + 1) / 2;  // ceil of a non-negative half
  int64_t r0 = top + pad_t, c0 = left + pad_l;
  int64_t r1 = r0 + ch, c1 = c0 + cw;
  if (r0 < 0) r0 = 0;
  if (c0 < 0) c0 = 0;
  if (r1 > nh) r1 = nh;
  if (c1 > nw) c1 = nw;
  int64_t oh = r1 - r0, ow = c1 - c0;
  out->rgb = calloc((size_t)(oh * ow * 3), 1);
  if (!out->rgb) return mx_error_set(MX_ERR_NOMEM, "out of memory for the cropped image");
  out->width = (int32_t)ow;
  out->height = (int32_t)oh;
  // Output pixel (y, x) is padded-image pixel (r0 + y, c0 + x), image pixel minus the padding.
  for (int64_t y = 0; y < oh; y++) {
    int64_t sy = r0 + y - pad_t;
    if (sy < 0 || sy >= h) continue;
    for (int64_t x = 0; x < ow; x++) {
      int64_t sx = c0 + x - pad_l;
      if (sx < 0 || sx >= w) continue;
      memcpy(out->rgb + (y * ow + x) * 3, in->rgb + (sy * w + sx) * 3, 3);
    }
  }
  return MX_OK;
}

// CLIP's shortest-edge size (transformers' get_resize_output_image_size with
// default_to_square=False): the short side becomes `edge`, the long one int(edge * long / short).
static void shortest_edge_size(int64_t edge, int64_t h, int64_t w, int64_t *oh, int64_t *ow) {
  int64_t s = w <= h ? w : h, l = w <= h ? h : w;
  int64_t nl = (int64_t)((double)(edge * l) / (double)s);
  if (w <= h)
    *ow = edge, *oh = nl;
  else
    *oh = edge, *ow = nl;
}

// Qwen2-VL's smart_resize: both sides multiples of `factor`, the area within the pixel bounds,
// the aspect ratio kept as closely as possible. Python's round() is half-to-even: nearbyint.
static mx_status_t smart_resize(const mx_image_proc_t *p, int64_t h, int64_t w, int64_t *oh,
                                int64_t *ow) {
  int64_t factor = p->patch_size * p->merge_size;
  double hi = (double)(h > w ? h : w), lo = (double)(h > w ? w : h);
  if (hi / lo > 200)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "%s: the image's aspect ratio %g (%lld x %lld) is above 200, which the "
                        "processor refuses",
                        p->type_name, hi / lo, (long long)w, (long long)h);
  int64_t hb = (int64_t)nearbyint((double)h / factor) * factor;
  int64_t wb = (int64_t)nearbyint((double)w / factor) * factor;
  if (hb * wb > p->max_pixels) {
    double beta = sqrt((double)(h * w) / (double)p->max_pixels);
    hb = (int64_t)floor((double)h / beta / factor) * factor;
    wb = (int64_t)floor((double)w / beta / factor) * factor;
    if (hb < factor) hb = factor;
    if (wb < factor) wb = factor;
  } else if (hb * wb < p->min_pixels) {
    double beta = sqrt((double)p->min_pixels / (double)(h * w));
    hb = (int64_t)ceil((double)h * beta / factor) * factor;
    wb = (int64_t)ceil((double)w * beta / factor) * factor;
  }
  if (hb <= 0 || wb <= 0 || hb > (1 << 16) || wb > (1 << 16))
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: smart resize of %lld x %lld gives %lld x %lld",
                        p->type_name, (long long)w, (long long)h, (long long)wb, (long long)hb);
  *oh = hb, *ow = wb;
  return MX_OK;
}

// Youtu-VL's size (llama.cpp's mtmd_image_preprocessor_youtuvl): both sides rounded up to
// multiples of a = patch_size * merge_size, after scaling by the largest of 1, 0.98, 0.96, ...
// (stepped in float, as there) that gives at most max_num_patches patches; a scale reaching 0
// keeps the last sizes tried.
static void youtu_size(const mx_image_proc_t *p, int64_t h, int64_t w, int64_t *oh, int64_t *ow) {
  int64_t P = p->patch_size, a = P * p->merge_size;
  float scale = 1.0f;
  while (scale > 0.0f) {
    float sh = (float)h * scale, sw = (float)w * scale;
    *oh = (int64_t)ceilf(sh / (float)a) * a;
    *ow = (int64_t)ceilf(sw / (float)a) * a;
    if (*oh < a) *oh = a;
    if (*ow < a) *ow = a;
    if ((*oh / P) * (*ow / P) <= p->max_num_patches) break;
    scale -= 0.02f;
  }
}

// Pixel (c, y, x) of an RGB image as the processor's float: rescaled and normalized.
typedef struct value_map {
  float table[3][256];
} value_map_t;

static void value_map_init(const mx_image_proc_t *p, value_map_t *m) {
  for (int c = 0; c < 3; c++) {
    float mean = (float)p->image_mean[c], std = (float)p->image_std[c];
    for (int v = 0; v < 256; v++) {
      float x = p->do_rescale ? (float)((double)v * p->rescale_factor) : (float)v;
      m->table[c][v] = p->do_normalize ? (x - mean) / std : x;
    }
  }
}

// The steps up to the 8-bit image the rescale reads (pad, resize, crop) into *work, which the
// caller owns; a processor that changes no geometry gets a copy.
static mx_status_t geometry(const mx_image_proc_t *p, const mx_image_t *img, mx_image_t *work) {
  mx_image_t a = {0}, b = {0};
  const mx_image_t *cur = img;
  mx_status_t st = MX_OK;
  if (p->kind == MX_IMAGE_PROC_CLIP && p->do_pad && img->width != img->height) {
    st = pad_square(p, cur, &a);
    cur = &a;
  }
  if (st == MX_OK && p->do_resize) {
    int64_t oh = cur->height, ow = cur->width;
    if (p->kind == MX_IMAGE_PROC_QWEN2_VL) {
      st = smart_resize(p, cur->height, cur->width, &oh, &ow);
    } else if (p->kind == MX_IMAGE_PROC_YOUTU_VL) {
      youtu_size(p, cur->height, cur->width, &oh, &ow);
    } else if (p->shortest_edge) {
      shortest_edge_size(p->shortest_edge, cur->height, cur->width, &oh, &ow);
    } else {
      oh = p->size_h, ow = p->size_w;
    }
    if (st == MX_OK && (oh <= 0 || ow <= 0 || oh > (1 << 16) || ow > (1 << 16)))
      st = mx_error_set(MX_ERR_INVALID_ARG, "resize of %d x %d gives %lld x %lld", cur->width,
                        cur->height, (long long)ow, (long long)oh);
    if (st == MX_OK) st = mx_image_resize(cur, (int32_t)ow, (int32_t)oh, p->resample, &b);
    if (st == MX_OK) {
      mx_image_free(&a);
      a = b;
      memset(&b, 0, sizeof b);
      cur = &a;
    }
  }
  if (st == MX_OK && p->kind == MX_IMAGE_PROC_CLIP && p->do_center_crop) {
    st = center_crop(cur, p->crop_h, p->crop_w, &b);
    if (st == MX_OK) {
      mx_image_free(&a);
      a = b;
      memset(&b, 0, sizeof b);
      cur = &a;
    }
  }
  if (st == MX_OK && cur == img) {  // nothing changed the geometry: a copy to own
    size_t n = (size_t)img->width * img->height * 3;
    a.rgb = malloc(n);
    if (!a.rgb)
      st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    else
      memcpy(a.rgb, img->rgb, n), a.width = img->width, a.height = img->height;
  }
  if (st != MX_OK) {
    mx_image_free(&a);
    mx_image_free(&b);
    return st;
  }
  *work = a;
  return MX_OK;
}

mx_status_t mx_image_preprocess(const mx_image_proc_t *p, const mx_image_t *img, mx_pixels_t *out) {
  memset(out, 0, sizeof *out);
  if (!p || !img || !img->rgb || img->width <= 0 || img->height <= 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_image_preprocess: no image or processor");
  if (p->kind == MX_IMAGE_PROC_MOLMO2) return mx_image_preprocess_molmo2(p, img, out);
  mx_image_t work;
  MX_TRY(geometry(p, img, &work));
  value_map_t *m = malloc(sizeof *m);
  int64_t h = work.height, w = work.width;
  size_t n = (size_t)(h * w * 3);
  int64_t T = p->temporal_patch_size, P = p->patch_size, M = p->merge_size;
  bool youtu = p->kind == MX_IMAGE_PROC_YOUTU_VL;
  bool qwen = p->kind == MX_IMAGE_PROC_QWEN2_VL || youtu;  // rows of patches by merge window
  if (youtu) T = 1;
  if (qwen && (h % (P * M) || w % (P * M))) {
    free(m);
    mx_image_free(&work);
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "%s: a %lld x %lld image is not a multiple of patch_size * merge_size "
                        "(do_resize is false)",
                        p->type_name, (long long)w, (long long)h);
  }
  float *data = m ? malloc(sizeof(float) * n * (qwen ? (size_t)T : 1)) : NULL;
  if (!data) {
    free(m);
    mx_image_free(&work);
    return mx_error_set(MX_ERR_NOMEM, "out of memory for the pixel values");
  }
  value_map_init(p, m);
  if (!qwen) {
    // Channel-first [3, H, W].
    for (int c = 0; c < 3; c++)
      for (size_t i = 0; i < (size_t)(h * w); i++)
        data[(size_t)c * h * w + i] = m->table[c][work.rgb[3 * i + c]];
    out->rank = 3;
    out->shape[0] = 3, out->shape[1] = h, out->shape[2] = w;
  } else {
    // One row per patch, patches ordered by merge window (gh/M, gw/M, M, M); inside a row
    // (channel, temporal copy, patch row, patch column): the one frame repeated T times
    // (Youtu-VL: patch row, patch column, channel).
    int64_t gh = h / P, gw = w / P, row = 3 * T * P * P;
    size_t r = 0;
    for (int64_t bh = 0; bh < gh / M; bh++)
      for (int64_t bw = 0; bw < gw / M; bw++)
        for (int64_t mh = 0; mh < M; mh++)
          for (int64_t mw = 0; mw < M; mw++, r++) {
            float *dst = data + r * row;
            int64_t y0 = (bh * M + mh) * P, x0 = (bw * M + mw) * P;
            if (youtu) {  // SigLIP-2's (patch row, patch column, channel)
              for (int64_t py = 0; py < P; py++)
                for (int64_t px = 0; px < P; px++)
                  for (int c = 0; c < 3; c++)
                    *dst++ = m->table[c][work.rgb[((y0 + py) * w + x0 + px) * 3 + c]];
              continue;
            }
            for (int c = 0; c < 3; c++)
              for (int64_t t = 0; t < T; t++)
                for (int64_t py = 0; py < P; py++)
                  for (int64_t px = 0; px < P; px++)
                    *dst++ = m->table[c][work.rgb[((y0 + py) * w + x0 + px) * 3 + c]];
          }
    out->rank = 2;
    out->shape[0] = gh * gw, out->shape[1] = row;
    out->grid_thw[0] = 1, out->grid_thw[1] = gh, out->grid_thw[2] = gw;
  }
  out->data = data;
  out->width = (int32_t)w;
  out->height = (int32_t)h;
  out->rgb = work.rgb;  // ownership moves to the pixels
  free(m);
  return MX_OK;
}

void mx_pixels_free(mx_pixels_t *px) {
  if (!px) return;
  free(px->data);
  free(px->rgb);
  free(px->pooling);
  memset(px, 0, sizeof *px);
}
