// The image module's contracts below the CLI (tests/cli_image.sh and tests/image_reference.py
// hold it to transformers + PIL): every prefix of a real PNG and JPEG is an error, never a crash
// or a success; the pixel limit names the dimensions; the resize keeps a flat image flat and
// copies at the same size; Qwen2-VL's patch layout; Molmo2's crops and pooling indices;
// configuration errors name their field.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/image.h"
#include "mx_test.h"

static char g_data[4096];  // tests/data/image

static bool read_input(const char *name, char **bytes, size_t *len) {
  char path[4400];
  snprintf(path, sizeof path, "%s/inputs/%s", g_data, name);
  mx_status_t st = mx_read_file(path, bytes, len);
  CHECK_MSG(st == MX_OK, "%s: %s", path, mx_error_message());
  return st == MX_OK;
}

// Every prefix shorter than the file (in steps) fails with a message and leaves the output empty,
// except a PNG cut inside its final IEND chunk (12 bytes): the image data is complete, and PIL
// decodes such a file too.
static void test_prefixes(const char *name, size_t step) {
  char *bytes = NULL;
  size_t len = 0;
  if (!read_input(name, &bytes, &len)) return;
  mx_image_t img;
  CHECK_OK(mx_image_decode(bytes, len, NULL, &img, NULL));
  mx_image_free(&img);
  int bad = 0;
  size_t end = strstr(name, ".png") ? len - 12 : len;
  for (size_t n = 0; n < end; n += step) {
    mx_error_clear();
    mx_status_t st = mx_image_decode(bytes, n, NULL, &img, NULL);
    if (st == MX_OK || img.rgb || !mx_error_message()[0]) {
      if (bad++ < 3) CHECK_MSG(false, "%s: prefix of %zu bytes: status %d", name, n, st);
      mx_image_free(&img);
    }
  }
  CHECK_MSG(bad == 0, "%s: %d prefixes not refused", name, bad);
  free(bytes);
}

static void test_limits(void) {
  char *bytes = NULL;
  size_t len = 0;
  if (!read_input("chelsea.png", &bytes, &len)) return;
  mx_image_t img;
  mx_image_info_t info;
  mx_image_limits_t lim = {.max_pixels = 451 * 300};
  CHECK_OK(mx_image_decode(bytes, len, &lim, &img, &info));
  CHECK(img.width == 451 && img.height == 300 && info.format == MX_IMAGE_FORMAT_PNG);
  mx_image_free(&img);
  lim.max_pixels = 451 * 300 - 1;
  CHECK(mx_image_decode(bytes, len, &lim, &img, &info) == MX_ERR_RUNTIME);
  CHECK(strstr(mx_error_message(), "451 x 300") != NULL);
  CHECK(img.rgb == NULL);
  free(bytes);
  CHECK(mx_image_decode("GIF89a....", 10, NULL, &img, NULL) == MX_ERR_INVALID_ARG);
  CHECK(strstr(mx_error_message(), "GIF") != NULL);
  mx_image_free(NULL);
  mx_pixels_free(NULL);
}

static void test_resize(void) {
  mx_image_t flat = {.width = 37, .height = 23, .rgb = malloc(37 * 23 * 3)};
  if (!flat.rgb) return;
  for (int i = 0; i < 37 * 23; i++)
    flat.rgb[3 * i] = 200, flat.rgb[3 * i + 1] = 7, flat.rgb[3 * i + 2] = 255;
  const int32_t sizes[][2] = {{37, 23}, {100, 9}, {5, 70}, {1, 1}, {37, 60}, {80, 23}};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    for (int f = MX_RESAMPLE_BILINEAR; f <= MX_RESAMPLE_BICUBIC; f++) {
      mx_image_t out;
      CHECK_OK(mx_image_resize(&flat, sizes[s][0], sizes[s][1], (mx_resample_t)f, &out));
      int off = 0;
      for (int i = 0; out.rgb && i < out.width * out.height; i++)
        off += out.rgb[3 * i] != 200 || out.rgb[3 * i + 1] != 7 || out.rgb[3 * i + 2] != 255;
      CHECK_MSG(off == 0, "flat image resized to %dx%d filter %d: %d pixels changed", sizes[s][0],
                sizes[s][1], f, off);
      mx_image_free(&out);
    }
  }
  mx_image_t out;
  CHECK(mx_image_resize(&flat, 0, 5, MX_RESAMPLE_BICUBIC, &out) == MX_ERR_INVALID_ARG);
  CHECK(mx_image_resize(&flat, 5, 5, (mx_resample_t)1, &out) == MX_ERR_UNSUPPORTED);
  mx_image_free(&flat);
}

static mx_status_t parse(const char *json, mx_image_proc_t *p) {
  return mx_image_proc_parse(json, strlen(json), p);
}

static void test_qwen_layout(void) {
  // A 56 x 28 image whose pixel (x, y) channel c is (x + 3 y + 50 c) mod 256, no resize, no
  // normalize: pixel_values[row][((c * T + t) * P + py) * P + px] must be the sample at
  // (bw * M + mw) * P + px, (bh * M + mh) * P + py.
  mx_image_proc_t p;
  CHECK_OK(
      parse("{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"do_resize\": false,"
            " \"do_rescale\": false, \"do_normalize\": false}",
            &p));
  mx_image_t img = {.width = 56, .height = 28, .rgb = malloc(56 * 28 * 3)};
  if (!img.rgb) return;
  for (int y = 0; y < 28; y++)
    for (int x = 0; x < 56; x++)
      for (int c = 0; c < 3; c++) img.rgb[(y * 56 + x) * 3 + c] = (uint8_t)(x + 3 * y + 50 * c);
  mx_pixels_t px;
  CHECK_OK(mx_image_preprocess(&p, &img, &px));
  CHECK(px.rank == 2 && px.shape[0] == 8 && px.shape[1] == 3 * 2 * 14 * 14);
  CHECK(px.grid_thw[0] == 1 && px.grid_thw[1] == 2 && px.grid_thw[2] == 4);
  int bad = 0;
  for (int64_t r = 0; px.data && r < 8; r++) {
    int64_t bw = r / 4, mh = (r / 2) % 2, mw = r % 2;  // grid 2 x 4: one merge row, two windows
    for (int c = 0; c < 3; c++)
      for (int t = 0; t < 2; t++)
        for (int py = 0; py < 14; py++)
          for (int pxx = 0; pxx < 14; pxx++) {
            int64_t x = (bw * 2 + mw) * 14 + pxx, y = mh * 14 + py;
            float want = (float)(uint8_t)(x + 3 * y + 50 * c);
            float got = px.data[r * px.shape[1] + ((c * 2 + t) * 14 + py) * 14 + pxx];
            bad += got != want;
          }
  }
  CHECK_MSG(bad == 0, "%d Qwen2-VL patch values misplaced", bad);
  mx_pixels_free(&px);
  // A 201:1 strip is refused by the smart resize, with the ratio in the message.
  mx_image_t strip = {.width = 201, .height = 1, .rgb = calloc(201 * 3, 1)};
  CHECK_OK(parse("{\"image_processor_type\": \"Qwen2VLImageProcessor\"}", &p));
  CHECK(strip.rgb && mx_image_preprocess(&p, &strip, &px) == MX_ERR_INVALID_ARG);
  CHECK(strstr(mx_error_message(), "aspect ratio") != NULL);
  mx_image_free(&strip);
  mx_image_free(&img);
}

static mx_status_t molmo2(const char *extra, const mx_image_t *img, mx_pixels_t *px) {
  char json[512];
  snprintf(json, sizeof json, "{\"image_processor_type\": \"Molmo2ImageProcessor\"%s}", extra);
  mx_image_proc_t p;
  mx_status_t st = parse(json, &p);
  return st == MX_OK ? mx_image_preprocess(&p, img, px) : st;
}

// Molmo2 on an image of exactly its canvas (the resize is then the identity): crops of 4 x 4
// patches of 2 pixels overlapping by one patch on each side, a 2 x 2 tiling, every patch value
// the canvas sample it covers; the pooled patches cover the canvas exactly once.
static void test_molmo2_layout(void) {
  // Window 2 patches of 2 px: canvas 2 * 4 + 4 = 12 px, cut into crops at 0 and 4.
  const char *cfg =
      ", \"size\": 8, \"patch_size\": 2, \"overlap_margins\": [1, 1], \"max_crops\": 4, "
      "\"do_rescale\": false, \"do_normalize\": false";
  mx_image_t img = {.width = 12, .height = 12, .rgb = malloc(12 * 12 * 3)};
  if (!img.rgb) return;
  for (int y = 0; y < 12; y++)
    for (int x = 0; x < 12; x++)
      for (int c = 0; c < 3; c++) img.rgb[(y * 12 + x) * 3 + c] = (uint8_t)(x + 16 * y + 80 * c);
  mx_pixels_t px;
  CHECK_OK(molmo2(cfg, &img, &px));
  CHECK(px.rank == 3 && px.shape[0] == 5 && px.shape[1] == 16 && px.shape[2] == 12);
  int bad = 0;
  for (int64_t k = 1; px.data && k < 5; k++)  // crop k - 1 of the 2 x 2 tiling
    for (int64_t pt = 0; pt < 16; pt++)
      for (int64_t i = 0; i < 12; i++) {
        int64_t y = ((k - 1) / 2) * 4 + (pt / 4) * 2 + i / 6, x = ((k - 1) % 2) * 4 + (pt % 4) * 2;
        x += (i % 6) / 3;
        float want = (float)(uint8_t)(x + 16 * y + 80 * (i % 3));
        bad += px.data[(k * 16 + pt) * 12 + i] != want;
      }
  CHECK_MSG(bad == 0, "%d Molmo2 patch values misplaced", bad);
  // Global view 4 x 4 patches pooled 2 x 2 into 2 x 2 tokens; the canvas 6 x 6 patches into 3 x 3.
  CHECK(px.image_grid[0] == 2 && px.image_grid[1] == 2 && px.image_grid[2] == 3 &&
        px.image_grid[3] == 3);
  CHECK(px.pooling && px.pooling_shape[0] == 13 && px.pooling_shape[1] == 4);
  if (px.pooling) {
    CHECK(px.pooling[0] == 0 && px.pooling[1] == 1 && px.pooling[2] == 4 && px.pooling[3] == 5);
    int seen[80] = {0}, count = 0;
    for (int64_t i = 4 * 4; i < 13 * 4; i++) {
      int32_t v = px.pooling[i];
      CHECK(v >= 16 && v < 80);
      if (v >= 16 && v < 80) count += seen[v]++ == 0;
    }
    CHECK_MSG(count == 36, "the pooled crop patches cover %d of the 36 canvas patches", count);
    // The canvas patch at row 2, column 0 is crop 0's patch (2, 0), not crop 2's (overlap).
    CHECK(px.pooling[(4 + 3) * 4 + 0] == 16 + 8);
  }
  mx_pixels_free(&px);
  // An image smaller than the margins (negative scales: the largest wins) still gets one crop;
  // a wide strip gets a single row of tiles.
  mx_image_t tiny = {.width = 3, .height = 2, .rgb = calloc(3 * 2 * 3, 1)};
  CHECK(tiny.rgb && molmo2("", &tiny, &px) == MX_OK);
  CHECK(px.shape[0] == 2 && px.shape[1] == 729 && px.shape[2] == 588 && px.pooling_shape[0] == 392);
  mx_pixels_free(&px);
  mx_image_t strip = {.width = 2000, .height = 150, .rgb = calloc(2000 * 150 * 3, 1)};
  CHECK(strip.rgb && molmo2("", &strip, &px) == MX_OK);
  CHECK(px.shape[0] == 9 && px.image_grid[2] == 14 && px.image_grid[3] == 4 * 19 + 4);
  mx_pixels_free(&px);
  mx_image_free(&strip);
  mx_image_free(&tiny);
  mx_image_free(&img);
}

static void test_config(void) {
  mx_image_proc_t p;
  CHECK_OK(
      parse("{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"size\": "
            "{\"shortest_edge\": 100, \"longest_edge\": 5000}, \"min_pixels\": 200}",
            &p));
  CHECK(p.min_pixels == 200 && p.max_pixels == 5000);  // min_pixels wins over size
  CHECK_OK(
      parse("{\"image_processor_type\": \"CLIPImageProcessor\", \"size\": 224, "
            "\"crop_size\": 224, \"image_mean\": null}",
            &p));
  CHECK(p.shortest_edge == 224 && p.crop_h == 224 && p.crop_w == 224);
  CHECK_OK(parse("{\"image_processor_type\": \"Gemma3ImageProcessor\"}", &p));
  CHECK(p.resample == MX_RESAMPLE_BILINEAR && p.image_mean[0] == 0.5);
  static const char *const kBad[][2] = {
      {"{\"image_processor_type\": \"CLIPImageProcessor\", \"size\": {\"longest_edge\": 3}}",
       "size.longest_edge"},
      {"{\"image_processor_type\": \"CLIPImageProcessor\", \"do_resize\": 1}", "do_resize"},
      {"{\"image_processor_type\": \"CLIPImageProcessor\", \"crop_size\": 0}", "crop_size"},
      {"{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"patch_size\": 1.5}", "patch_size"},
      {"{\"image_processor_type\": \"Qwen2VLImageProcessor\", \"do_center_crop\": true}",
       "do_center_crop"},
      {"{\"image_processor_type\": \"CLIPImageProcessor\", \"do_convert_rgb\": false}",
       "do_convert_rgb"},
      {"{\"image_processor_type\": \"SiglipImageProcessor\", \"image_mean\": [1, 2]}",
       "image_mean"},
      {"{\"image_processor_type\": \"Molmo2ImageProcessor\", \"size\": {\"height\": 378, "
       "\"width\": 336}}",
       "square"},
      {"{\"image_processor_type\": \"Molmo2ImageProcessor\", \"overlap_margins\": [14, 13]}",
       "overlap_margins"},
      {"{\"image_processor_type\": \"Molmo2ImageProcessor\", \"pooling_size\": [2]}",
       "pooling_size"},
      {"{\"image_processor_type\": \"Molmo2ImageProcessor\", \"max_crops\": 65}", "max_crops"},
      {"{\"image_processor_type\": \"Molmo2ImageProcessor\", \"resample\": 3}", "resample"},
      {"{\"image_processor_type\": \"Molmo2ImageProcessor\", \"size\": 380}", "multiple"},
      {"[]", "not a JSON object"},
      {"{\"do_resize\": true}", "image_processor_type"},
  };
  for (size_t i = 0; i < sizeof kBad / sizeof kBad[0]; i++) {
    mx_status_t st = parse(kBad[i][0], &p);
    CHECK_MSG(st != MX_OK && strstr(mx_error_message(), kBad[i][1]), "%s: status %d, message '%s'",
              kBad[i][0], st, mx_error_message());
  }
}

int main(void) {
  const char *data = getenv("MX_TEST_DATA");
  snprintf(g_data, sizeof g_data, "%s/image", data ? data : "tests/data");
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/manifest.json", g_data);
  FILE *f = fopen(probe, "r");
  if (!f) {
    printf("missing %s (tools/image_refs/generate.py writes it)\n", probe);
    return MX_TEST_SKIP_STATUS;
  }
  fclose(f);
  test_prefixes("chelsea_palette.png", 7);
  test_prefixes("astronaut_adam7.png", 211);
  test_prefixes("coffee_progressive.jpg", 13);
  test_prefixes("retina.jpg", 29);
  test_limits();
  test_resize();
  test_qwen_layout();
  test_molmo2_layout();
  test_config();
  return mx_test_finish();
}
