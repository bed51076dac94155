// libFuzzer target: arbitrary bytes as an image file (PNG or JPEG by their magic), decoded under
// a 1-megapixel limit (larger claims must be refused from the header, before allocation), then,
// when decoding succeeds, run through a SigLIP processor (a resize in both directions), a
// Qwen2-VL one (smart resize and patches), a small Molmo2 one (the tiling, torch's bilinear
// resize, crops and pooling indices of whatever size was decoded) and a Youtu-VL one (sides
// rounded up to multiples of 32, the scale stepped down under a small patch limit). Any crash,
// leak, sanitizer report or out-of-memory is a bug: malformed input must give MX_ERR_*.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mlxcel/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run_proc(const char *json, const mx_image_t *img) {
  mx_image_proc_t p;
  mx_pixels_t px;
  if (mx_image_proc_parse(json, strlen(json), &p) != MX_OK) __builtin_trap();
  if (mx_image_preprocess(&p, img, &px) == MX_OK) mx_pixels_free(&px);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mx_image_limits_t lim = {.max_pixels = 1 << 20};
  mx_image_t img;
  mx_image_info_t info;
  if (mx_image_decode(data, size, &lim, &img, &info) != MX_OK) return 0;
  if (!img.rgb || img.width != info.width || img.height != info.height) __builtin_trap();
  run_proc(
      "{\"image_processor_type\": \"SiglipImageProcessor\", \"size\": "
      "{\"height\": 24, \"width\": 40}}",
      &img);
  run_proc(
      "{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"min_pixels\": 784, "
      "\"max_pixels\": 3136}",
      &img);
  run_proc(
      "{\"image_processor_type\": \"Molmo2ImageProcessor\", \"size\": 28, \"patch_size\": 4, "
      "\"overlap_margins\": [2, 1], \"pooling_size\": [3, 2], \"max_crops\": 5}",
      &img);
  run_proc("{\"image_processor_type\": \"YoutuVLImageProcessor\", \"max_num_patches\": 64}", &img);
  mx_image_free(&img);
  return 0;
}
