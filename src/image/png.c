// PNG reader on libpng (ADR 0009). Every libpng error arrives through png_error_fn, which keeps
// the message and longjmps back to mx_image_decode_png; all state lives in `png_ctx_t` so the
// jump needs no volatile locals.
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image_internal.h"

// Ancillary chunks (text, ICC profiles) are not needed; a chunk claiming more memory than this is
// an attack or a broken file.
enum { PNG_CHUNK_MAX_BYTES = 8 << 20 };

typedef struct png_ctx {
  const uint8_t *data;
  size_t len, pos;
  char msg[200];
  uint8_t *pixels;   // the decoded rows (RGB or RGBA); freed on failure
  png_bytep *rows;   // row pointers into `pixels`
  mx_status_t fail;  // the status of a failure raised by this file's code
} png_ctx_t;

static void png_read_fn(png_structp png, png_bytep buf, size_t n) {
  png_ctx_t *c = png_get_io_ptr(png);
  if (n > c->len - c->pos) png_error(png, "truncated file: it ends inside a chunk");
  memcpy(buf, c->data + c->pos, n);
  c->pos += n;
}

static void png_error_fn(png_structp png, png_const_charp msg) {
  png_ctx_t *c = png_get_error_ptr(png);
  if (!c->msg[0]) snprintf(c->msg, sizeof c->msg, "%s", msg);
  png_longjmp(png, 1);
}

// Warnings (a bad CRC in an ancillary chunk, an unknown sRGB profile) do not change the pixels.
static void png_warning_fn(png_structp png, png_const_charp msg) {}

static mx_status_t png_fail(png_ctx_t *c, mx_status_t st, const char *what) {
  snprintf(c->msg, sizeof c->msg, "%s", what);
  c->fail = st;
  return st;
}

// Reads the header, sets libpng's conversions to 8-bit RGB(A) and decodes; called under setjmp.
static mx_status_t png_decode(png_structp png, png_infop pinfo, png_ctx_t *c, int64_t max_pixels,
                              mx_image_t *out, mx_image_info_t *info) {
  png_read_info(png, pinfo);
  png_uint_32 w, h;
  int depth, ctype, interlace;
  png_get_IHDR(png, pinfo, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
  info->format = MX_IMAGE_FORMAT_PNG;
  info->width = (int32_t)w;
  info->height = (int32_t)h;
  info->bit_depth = depth;
  info->interlaced = interlace != PNG_INTERLACE_NONE;
  info->palette = ctype == PNG_COLOR_TYPE_PALETTE;
  bool trns = png_get_valid(png, pinfo, PNG_INFO_tRNS) != 0;
  info->alpha = (ctype & PNG_COLOR_MASK_ALPHA) || trns;
  switch (ctype) {
    case PNG_COLOR_TYPE_GRAY:
      info->color = "gray", info->channels = 1;
      break;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      info->color = "gray+alpha", info->channels = 2;
      break;
    case PNG_COLOR_TYPE_PALETTE:
      info->color = "palette", info->channels = 1;
      break;
    case PNG_COLOR_TYPE_RGB:
      info->color = "rgb", info->channels = 3;
      break;
    default:
      info->color = "rgba", info->channels = 4;
      break;
  }
  mx_status_t st = mx_image_check_dims(w, h, max_pixels);
  if (st != MX_OK) {
    c->fail = st;
    snprintf(c->msg, sizeof c->msg, "%s", mx_error_message());
    return st;
  }
  if (depth == 16 && ctype == PNG_COLOR_TYPE_GRAY)
    return png_fail(c, MX_ERR_UNSUPPORTED,
                    "16-bit grayscale PNG is not supported: the reference decoder (PIL, mode "
                    "I;16) clips its samples at 255 instead of scaling them, so no faithful "
                    "8-bit image exists to match; convert it to 8-bit first");
  // PIL keeps the high byte of 16-bit RGB, RGBA and gray+alpha samples: so does strip_16.
  if (depth == 16) png_set_strip_16(png);
  if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  // 1, 2 and 4-bit gray scale to 0..255 by bit replication, as PIL's L;1 / L;2 / L;4 unpackers.
  if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (trns) png_set_tRNS_to_alpha(png);
  if (!(ctype & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, pinfo);
  int channels = png_get_channels(png, pinfo);
  if (channels != 3 && channels != 4)
    return png_fail(c, MX_ERR_PARSE, "PNG conversion to RGB gave an unexpected channel count");
  size_t stride = (size_t)w * (size_t)channels;
  if (png_get_rowbytes(png, pinfo) != stride)
    return png_fail(c, MX_ERR_PARSE, "PNG conversion to RGB gave an unexpected row size");
  c->pixels = malloc(stride * h);
  c->rows = malloc(sizeof(png_bytep) * h);
  if (!c->pixels || !c->rows) return png_fail(c, MX_ERR_NOMEM, "out of memory for the pixels");
  for (png_uint_32 y = 0; y < h; y++) c->rows[y] = c->pixels + stride * y;
  png_read_image(png, c->rows);
  if (channels == 4) mx_image_rgba_over_white(c->pixels, (size_t)w * h);
  out->width = (int32_t)w;
  out->height = (int32_t)h;
  out->rgb = c->pixels;
  c->pixels = NULL;
  return MX_OK;
}

mx_status_t mx_image_decode_png(const uint8_t *data, size_t len, int64_t max_pixels,
                                mx_image_t *out, mx_image_info_t *info) {
  png_ctx_t *c = calloc(1, sizeof *c);
  if (!c) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  c->data = data;
  c->len = len;
  c->fail = MX_ERR_PARSE;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, c, png_error_fn, png_warning_fn);
  png_infop pinfo = png ? png_create_info_struct(png) : NULL;
  if (!pinfo) {
    png_destroy_read_struct(&png, NULL, NULL);
    free(c);
    return mx_error_set(MX_ERR_NOMEM, "out of memory (libpng)");
  }
  mx_status_t st;
  if (setjmp(png_jmpbuf(png))) {
    st = MX_ERR_PARSE;  // a libpng error: the message is in c->msg
  } else {
    png_set_read_fn(png, c, png_read_fn);
    png_set_chunk_malloc_max(png, PNG_CHUNK_MAX_BYTES);
    png_set_chunk_cache_max(png, 1000);
    st = png_decode(png, pinfo, c, max_pixels, out, info);
    if (st != MX_OK) st = c->fail;
  }
  png_destroy_read_struct(&png, &pinfo, NULL);
  free(c->pixels);
  free(c->rows);
  if (st != MX_OK) {
    memset(out, 0, sizeof *out);
    st = mx_error_set(st, "PNG: %s", c->msg);
  }
  free(c);
  return st;
}
