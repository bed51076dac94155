// Images in: PNG and JPEG decoding to 8-bit RGB (libpng, libjpeg-turbo; ADR 0009) and each
// vision family's preprocessing as its Hugging Face image processor computes it (the PIL-based
// processors: CLIP / LLaVA, SigLIP / Gemma 3, Qwen2-VL; and Molmo2's, which resizes through
// torch's bilinear interpolation instead of PIL's).
//
// The reference a decoded image is held to is transformers' processor fed PIL.Image.open(path):
// PIL's decoders, no EXIF orientation (Image.open does not apply it and neither do the
// processors), and the processors' convert_to_rgb, which composites any transparency onto white.
//
// Ownership: every mx_image_t / mx_pixels_t filled by these functions owns its pixel buffer
// (heap); release it with mx_image_free / mx_pixels_free, which accept a zeroed struct. On failure
// the output is left zeroed and nothing needs freeing.
#ifndef MLXCEL_IMAGE_H
#define MLXCEL_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mlxcel/base.h"

#ifdef __cplusplus
extern "C" {
#endif

// PIL's decompression-bomb limit (Image.MAX_IMAGE_PIXELS): about 256 MiB of RGB at 3 bytes per
// pixel. A larger image is refused before any pixel buffer is allocated.
#define MX_IMAGE_DEFAULT_MAX_PIXELS ((int64_t)89478485)
// Encoded files larger than this are refused before they are read (mx_image_load).
#define MX_IMAGE_MAX_FILE_BYTES ((size_t)64 << 20)

typedef enum mx_image_format {
  MX_IMAGE_FORMAT_PNG = 1,
  MX_IMAGE_FORMAT_JPEG = 2,
} mx_image_format_t;

// What the file holds, as stored (before conversion to RGB).
typedef struct mx_image_info {
  mx_image_format_t format;
  int32_t width, height;
  int32_t bit_depth;  // bits per sample as stored (PNG 1..16, JPEG 8)
  int32_t channels;   // as stored: 1 gray, 2 gray+alpha, 3 RGB / YCbCr, 4 RGBA; palette: 1
  bool palette;       // PNG colour type 3
  bool alpha;         // an alpha channel or a tRNS transparency (composited onto white)
  bool interlaced;    // PNG Adam7 or progressive JPEG
  const char *color;  // "gray", "gray+alpha", "rgb", "rgba", "palette", "ycbcr"; static
} mx_image_info_t;

typedef struct mx_image_limits {
  int64_t max_pixels;  // width * height above this is refused; 0: MX_IMAGE_DEFAULT_MAX_PIXELS
} mx_image_limits_t;

typedef struct mx_image {
  int32_t width, height;
  uint8_t *rgb;  // width * height * 3 bytes, rows top to bottom, RGB; owned (heap)
} mx_image_t;

// Decodes a PNG or JPEG held in `data` (len bytes; borrowed for the call) to 8-bit RGB.
// `limits` may be NULL (defaults); `info` may be NULL. Errors (each a message naming the
// cause): MX_ERR_INVALID_ARG for bytes that are neither PNG nor JPEG (wrong magic),
// MX_ERR_PARSE for a corrupt or truncated file, MX_ERR_UNSUPPORTED for a well-formed image this
// decoder does not convert (CMYK / YCCK JPEG, 12-bit JPEG), MX_ERR_RUNTIME for an image above the
// pixel limit (refused from its header, before the pixels are allocated), MX_ERR_NOMEM.
mx_status_t mx_image_decode(const void *data, size_t len, const mx_image_limits_t *limits,
                            mx_image_t *out, mx_image_info_t *info);
// Reads `path` (at most MX_IMAGE_MAX_FILE_BYTES; MX_ERR_IO otherwise) and decodes it; errors as
// mx_image_decode, prefixed with the path.
mx_status_t mx_image_load(const char *path, const mx_image_limits_t *limits, mx_image_t *out,
                          mx_image_info_t *info);
void mx_image_free(mx_image_t *img);

// ---- Preprocessing: preprocessor_config.json and the processors' arithmetic ----

typedef enum mx_image_proc_kind {
  MX_IMAGE_PROC_CLIP = 1,      // CLIPImageProcessor, LlavaImageProcessor (+ do_pad)
  MX_IMAGE_PROC_SIGLIP = 2,    // SiglipImageProcessor, Gemma3ImageProcessor (no pan and scan)
  MX_IMAGE_PROC_QWEN2_VL = 3,  // Qwen2VLImageProcessor (Qwen2-VL and Qwen2.5-VL)
  MX_IMAGE_PROC_MOLMO2 = 4,    // Molmo2ImageProcessor: overlapping crops plus a global view
  MX_IMAGE_PROC_YOUTU_VL = 5,  // Youtu-VL's: SigLIP-2 patches, sides multiples of 32 (ADR 0027)
} mx_image_proc_kind_t;

// PIL's resampling filters by their PIL numbers (the processors' `resample` field). Only the
// two the supported processors use are implemented; the others are refused by name.
typedef enum mx_resample {
  MX_RESAMPLE_BILINEAR = 2,
  MX_RESAMPLE_BICUBIC = 3,
} mx_resample_t;

typedef struct mx_image_proc {
  mx_image_proc_kind_t kind;
  char type_name[48];  // image_processor_type as written in the file
  bool do_resize, do_center_crop, do_rescale, do_normalize, do_pad;
  mx_resample_t resample;
  // CLIP: size.shortest_edge; SigLIP: size.height / size.width; crop: crop_size.
  int64_t shortest_edge, size_h, size_w, crop_h, crop_w;
  double rescale_factor;
  double image_mean[3], image_std[3];
  // Qwen2-VL: pixel bounds of the smart resize and the patch geometry (Youtu-VL: patch_size,
  // merge_size and max_num_patches, the most patches an image may become).
  int64_t min_pixels, max_pixels, patch_size, merge_size, temporal_patch_size;
  int64_t max_num_patches;
  // Molmo2 (crop size: size_h, patch: patch_size): at most max_crops tiles, neighbours
  // overlapping by overlap_margins (left / top, right / bottom) patches, and the adapter's
  // pooling window (rows, columns) over which image_token_pooling is computed.
  int64_t max_crops, overlap_margins[2], pooling_size[2];
} mx_image_proc_t;

// Parses preprocessor_config.json text (len bytes, borrowed). Unknown processor types, options
// this engine does not implement (Gemma 3's do_pan_and_scan, a resample filter other than
// bilinear / bicubic, ...) and malformed values are MX_ERR_UNSUPPORTED / MX_ERR_PARSE with a
// message naming the field. Unset fields take the processor class's defaults.
mx_status_t mx_image_proc_parse(const char *json, size_t len, mx_image_proc_t *out);
// Reads DIR/preprocessor_config.json and parses it.
mx_status_t mx_image_proc_load(const char *model_dir, mx_image_proc_t *out);

typedef struct mx_pixels {
  float *data;  // the processor's pixel_values for one image, row-major; owned (heap)
  // 3: [3, H, W] (CLIP, SigLIP) or, with `pooling` set, Molmo2's [crops, patches, P*P*3];
  // 2: [patches, C*T*P*P] (Qwen2-VL), [patches, P*P*C] (Youtu-VL: SigLIP-2's patch rows)
  int32_t rank;
  int64_t shape[3];
  int64_t grid_thw[3];  // Qwen2-VL's image_grid_thw row (1, H/P, W/P); zeros otherwise
  // Molmo2: image_token_pooling [tokens, pool_h * pool_w] (patch indices into the crops in
  // order, the global view's first; -1 pads a window), owned (heap), NULL for the others; and
  // the image_grids row: the global view's pooled rows and columns, then the crops'.
  int32_t *pooling;
  int64_t pooling_shape[2];
  int64_t image_grid[4];
  // The 8-bit RGB image the rescale read (after padding, resizing, cropping; Molmo2: the canvas
  // its crops are cut from), kept for tests and tools: width * height * 3 bytes; owned (heap).
  int32_t width, height;
  uint8_t *rgb;
} mx_pixels_t;

// Runs the processor `p` on `img` (both borrowed). Errors: MX_ERR_INVALID_ARG for an image the
// processor refuses (Qwen2-VL: aspect ratio above 200), MX_ERR_NOMEM.
mx_status_t mx_image_preprocess(const mx_image_proc_t *p, const mx_image_t *img, mx_pixels_t *out);
void mx_pixels_free(mx_pixels_t *px);

// PIL's Image.resize of an 8-bit RGB image (its separable convolution with fixed-point
// coefficients, bit-exact): `in` (borrowed) to *out (owned by the caller on success).
mx_status_t mx_image_resize(const mx_image_t *in, int32_t width, int32_t height,
                            mx_resample_t filter, mx_image_t *out);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_IMAGE_H
