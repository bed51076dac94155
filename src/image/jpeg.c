// JPEG reader on libjpeg-turbo (ADR 0009) with libjpeg's defaults, as PIL decodes: the accurate
// integer IDCT (JDCT_ISLOW) and fancy upsampling. libjpeg reports errors through error_exit and
// warnings through emit_message; both keep the message and longjmp back here, because a warning
// is how libjpeg says the data is truncated or corrupt (it would otherwise fill the rest of the
// image with gray), and PIL refuses such a file too ("image file is truncated").
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// jpeglib.h uses FILE and size_t without including their headers.
#include <jpeglib.h>

#include "image/image_internal.h"

// A progressive file may hold any number of scans, each a pass over the whole image; real files
// have about ten. The limit bounds the time a hostile file can take (libjpeg-turbo's TurboJPEG
// API recommends the same guard).
enum { JPEG_MAX_SCANS = 500 };

typedef struct jpeg_ctx {
  struct jpeg_error_mgr err;  // first: libjpeg hands back a pointer to it
  struct jpeg_progress_mgr progress;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX + 64];
  mx_status_t fail;
  uint8_t *pixels;  // freed on failure
} jpeg_ctx_t;

static void jpeg_error_exit_fn(j_common_ptr cinfo) {
  jpeg_ctx_t *c = (jpeg_ctx_t *)cinfo->err;
  if (!c->msg[0]) (*cinfo->err->format_message)(cinfo, c->msg);
  longjmp(c->jump, 1);
}

static void jpeg_emit_message_fn(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  jpeg_ctx_t *c = (jpeg_ctx_t *)cinfo->err;
  char m[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, m);
  snprintf(c->msg, sizeof c->msg, "corrupt or truncated data (%s)", m);
  longjmp(c->jump, 1);
}

static void jpeg_progress_fn(j_common_ptr cinfo) {
  j_decompress_ptr d = (j_decompress_ptr)cinfo;
  jpeg_ctx_t *c = (jpeg_ctx_t *)cinfo->err;
  if (d->is_decompressor && d->input_scan_number > JPEG_MAX_SCANS) {
    snprintf(c->msg, sizeof c->msg, "more than %d progressive scans (refused)", JPEG_MAX_SCANS);
    c->fail = MX_ERR_RUNTIME;
    longjmp(c->jump, 1);
  }
}

static mx_status_t jpeg_fail(jpeg_ctx_t *c, mx_status_t st, const char *what) {
  snprintf(c->msg, sizeof c->msg, "%s", what);
  c->fail = st;
  return st;
}

// Called under setjmp: header, checks, conversion to RGB, scanlines.
static mx_status_t jpeg_decode(struct jpeg_decompress_struct *d, jpeg_ctx_t *c, int64_t max_pixels,
                               mx_image_t *out, mx_image_info_t *info) {
  jpeg_read_header(d, TRUE);
  info->format = MX_IMAGE_FORMAT_JPEG;
  info->width = (int32_t)d->image_width;
  info->height = (int32_t)d->image_height;
  info->bit_depth = d->data_precision;
  info->channels = d->num_components;
  info->interlaced = d->progressive_mode != 0;
  mx_status_t st = mx_image_check_dims(d->image_width, d->image_height, max_pixels);
  if (st != MX_OK) return jpeg_fail(c, st, mx_error_message());
  switch (d->jpeg_color_space) {
    case JCS_GRAYSCALE:
      info->color = "gray";
      break;
    case JCS_YCbCr:
      info->color = "ycbcr";
      break;
    case JCS_RGB:
      info->color = "rgb";
      break;
    case JCS_CMYK:
    case JCS_YCCK:
      info->color = "cmyk";
      return jpeg_fail(c, MX_ERR_UNSUPPORTED,
                       "CMYK / YCCK JPEG is not supported (convert it to RGB first)");
    default:
      info->color = "unknown";
      return jpeg_fail(c, MX_ERR_UNSUPPORTED, "JPEG colour space is not supported");
  }
  if (d->data_precision != 8)
    return jpeg_fail(c, MX_ERR_UNSUPPORTED, "only 8-bit JPEG is supported");
  d->out_color_space = JCS_RGB;  // gray replicates into R = G = B, as PIL's convert("RGB")
  jpeg_start_decompress(d);
  if (d->output_components != 3)
    return jpeg_fail(c, MX_ERR_PARSE, "JPEG conversion to RGB gave an unexpected channel count");
  size_t stride = (size_t)d->output_width * 3;
  c->pixels = malloc(stride * d->output_height);
  if (!c->pixels) return jpeg_fail(c, MX_ERR_NOMEM, "out of memory for the pixels");
  while (d->output_scanline < d->output_height) {
    JSAMPROW row = c->pixels + stride * d->output_scanline;
    jpeg_read_scanlines(d, &row, 1);
  }
  // The image is complete; what follows (trailing markers, EOI) does not change it, and PIL
  // stops reading here too.
  out->width = (int32_t)d->output_width;
  out->height = (int32_t)d->output_height;
  out->rgb = c->pixels;
  c->pixels = NULL;
  return MX_OK;
}

mx_status_t mx_image_decode_jpeg(const uint8_t *data, size_t len, int64_t max_pixels,
                                 mx_image_t *out, mx_image_info_t *info) {
  jpeg_ctx_t *c = calloc(1, sizeof *c);
  struct jpeg_decompress_struct *d = calloc(1, sizeof *d);
  if (!c || !d) {
    free(c);
    free(d);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  c->fail = MX_ERR_PARSE;
  d->err = jpeg_std_error(&c->err);
  c->err.error_exit = jpeg_error_exit_fn;
  c->err.emit_message = jpeg_emit_message_fn;
  c->progress.progress_monitor = jpeg_progress_fn;
  mx_status_t st;
  if (setjmp(c->jump)) {
    st = c->fail;
  } else {
    jpeg_create_decompress(d);
    d->progress = &c->progress;
    jpeg_mem_src(d, data, (unsigned long)len);
    st = jpeg_decode(d, c, max_pixels, out, info);
  }
  jpeg_destroy_decompress(d);
  free(c->pixels);
  if (st != MX_OK) {
    memset(out, 0, sizeof *out);
    st = mx_error_set(st, "JPEG: %s", c->msg);
  }
  free(c);
  free(d);
  return st;
}
