// Image decoding entry points: the format is chosen by the file's magic bytes, never by its
// name, and every limit is checked here or in the readers before pixels are allocated.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/try.h"
#include "image/image_internal.h"

static const uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

mx_status_t mx_image_check_dims(int64_t width, int64_t height, int64_t max_pixels) {
  if (width <= 0 || height <= 0)
    return mx_error_set(MX_ERR_PARSE, "the image has an empty size (%lld x %lld)", (long long)width,
                        (long long)height);
  if (width > max_pixels / height)
    return mx_error_set(MX_ERR_RUNTIME,
                        "an image of %lld x %lld pixels is above the limit of %lld pixels "
                        "(refused before decoding: a decompression bomb or an image too large)",
                        (long long)width, (long long)height, (long long)max_pixels);
  return MX_OK;
}

void mx_image_rgba_over_white(uint8_t *px, size_t n) {
  // Over an opaque white background PIL's alpha_composite reduces to its 7-bit fixed-point
  // blend with coefficients a and 255 - a, rounded by its shift-based division by 255.
  for (size_t i = 0; i < n; i++) {
    const uint8_t *s = px + 4 * i;
    uint32_t a = s[3];
    uint8_t rgb[3];
    for (int c = 0; c < 3; c++) {
      if (a == 0) {
        rgb[c] = 255;
        continue;
      }
      uint32_t t = ((uint32_t)s[c] * a + 255u * (255u - a)) * 128u + (0x80u << 7);
      rgb[c] = (uint8_t)((((t >> 8) + t) >> 8) >> 7);
    }
    memcpy(px + 3 * i, rgb, 3);  // i * 3 <= i * 4: never overwrites a pixel not yet read
  }
}

// A short name for the formats people most often send by mistake.
static const char *guess_format(const uint8_t *d, size_t len) {
  if (len >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0)) return "GIF";
  if (len >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0) return "WebP";
  if (len >= 2 && d[0] == 'B' && d[1] == 'M') return "BMP";
  if (len >= 4 && (memcmp(d, "II*\0", 4) == 0 || memcmp(d, "MM\0*", 4) == 0)) return "TIFF";
  if (len >= 12 && memcmp(d + 4, "ftyp", 4) == 0) return "HEIF/AVIF";
  return NULL;
}

mx_status_t mx_image_decode(const void *data, size_t len, const mx_image_limits_t *limits,
                            mx_image_t *out, mx_image_info_t *info) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_image_decode: no output image");
  memset(out, 0, sizeof *out);
  mx_image_info_t local;
  if (!info) info = &local;
  memset(info, 0, sizeof *info);
  if (!data && len > 0) return mx_error_set(MX_ERR_INVALID_ARG, "mx_image_decode: no data");
  int64_t max_pixels =
      limits && limits->max_pixels > 0 ? limits->max_pixels : MX_IMAGE_DEFAULT_MAX_PIXELS;
  const uint8_t *d = data;
  if (len >= sizeof kPngMagic && memcmp(d, kPngMagic, sizeof kPngMagic) == 0)
    return mx_image_decode_png(d, len, max_pixels, out, info);
  if (len >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff)
    return mx_image_decode_jpeg(d, len, max_pixels, out, info);
  if (len == 0) return mx_error_set(MX_ERR_INVALID_ARG, "not an image: no bytes");
  const char *other = guess_format(d, len);
  if (other)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "not a PNG or JPEG image: the bytes look like %s, which is not supported",
                        other);
  char hex[3 * 8 + 1] = "";
  size_t at = 0;
  for (size_t i = 0; i < len && i < 8; i++)
    at += (size_t)snprintf(hex + at, sizeof hex - at, "%s%02x", i ? " " : "", d[i]);
  return mx_error_set(MX_ERR_INVALID_ARG,
                      "not a PNG or JPEG image (wrong magic bytes: %s; PNG starts 89 50 4e 47, "
                      "JPEG ff d8 ff)",
                      hex);
}

mx_status_t mx_image_load(const char *path, const mx_image_limits_t *limits, mx_image_t *out,
                          mx_image_info_t *info) {
  if (out) memset(out, 0, sizeof *out);
  char *bytes = NULL;
  size_t len = 0;
  MX_TRY(mx_read_file_max(path, MX_IMAGE_MAX_FILE_BYTES, &bytes, &len));
  mx_status_t st = mx_image_decode(bytes, len, limits, out, info);
  free(bytes);
  if (st != MX_OK) return mx_error_prefix(st, "%s", path);
  return MX_OK;
}

void mx_image_free(mx_image_t *img) {
  if (!img) return;
  free(img->rgb);
  memset(img, 0, sizeof *img);
}
