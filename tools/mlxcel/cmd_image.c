// `mlxcel image`: see what a vision model would see. Decodes a PNG / JPEG, prints what it holds
// and, with a model's preprocessor_config.json, the processor's pixel_values (shape, range) and
// Qwen2-VL's image_grid_thw or Molmo2's image_grids; writes the arrays as .npy for comparisons with
// transformers.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlxcel/image.h"

static void image_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel image [-m DIR | --config FILE] [options] IMAGE\n"
          "\n"
          "Decodes IMAGE (PNG or JPEG) to 8-bit RGB and prints its format and size. With -m DIR\n"
          "(DIR/preprocessor_config.json) or --config FILE it also runs the model's image\n"
          "processor (CLIP / LLaVA, SigLIP / Gemma 3, Qwen2-VL, as transformers' PIL-based\n"
          "processors; Molmo2, as its torchvision-based one) and prints the shape and range of\n"
          "pixel_values, image_grid_thw for Qwen2-VL and Youtu-VL and image_grids for Molmo2.\n"
          "\n"
          "Options:\n"
          "  -m, --model DIR        model directory holding preprocessor_config.json\n"
          "  --config FILE          a preprocessor_config.json file\n"
          "  --json                 print one JSON object instead of text\n"
          "  --max-pixels N         refuse images above N pixels (default 89478485, PIL's\n"
          "                         decompression-bomb limit)\n"
          "  --pixels-npy FILE      write pixel_values as float32 .npy\n"
          "  --decoded-npy FILE     write the decoded image as uint8 .npy [H, W, 3]\n"
          "  --resized-npy FILE     write the processor's 8-bit image before rescaling (after\n"
          "                         pad / resize / crop; Molmo2: its canvas) as uint8 .npy\n"
          "                         [H, W, 3]\n"
          "  --pooling-npy FILE     write Molmo2's image_token_pooling as int32 .npy\n"
          "  -h, --help             show this help\n"
          "\n"
          "EXIF orientation is not applied (neither PIL's Image.open nor the processors do);\n"
          "transparency is composited onto white, as the processors' convert_to_rgb.\n"
          "\n"
          "Exit status: 0 success, 1 the image or the configuration is refused (the message\n"
          "says why), 2 bad command line, 3 unreadable file.\n");
  mx_cli_env_usage(out, "image");
}

typedef struct stats {
  double min, max, mean;
} stats_t;

static stats_t stats_of(const float *v, size_t n) {
  stats_t s = {v[0], v[0], 0};
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < s.min) s.min = v[i];
    if (v[i] > s.max) s.max = v[i];
    sum += v[i];
  }
  s.mean = sum / (double)n;
  return s;
}

static void print_json_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      printf("\\u%04x", *s);
    else
      putchar(*s);
  }
  putchar('"');
}

static const char *resample_name(mx_resample_t r) {
  return r == MX_RESAMPLE_BICUBIC ? "bicubic" : "bilinear";
}

int mx_cli_cmd_image(int argc, char **argv) {
  const char *cmd = "image", *dir = NULL, *config = NULL, *path = NULL;
  const char *pixels_npy = NULL, *decoded_npy = NULL, *resized_npy = NULL, *pooling_npy = NULL;
  bool json = false;
  mx_image_limits_t lim = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      image_usage(stdout);
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--config", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      config = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--pixels-npy", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      pixels_npy = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--decoded-npy", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      decoded_npy = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--resized-npy", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      resized_npy = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--pooling-npy", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      pooling_npy = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--max-pixels", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      if (!mx_cli_parse_int(cmd, "--max-pixels", v, 1, INT64_MAX, &lim.max_pixels))
        return MX_EXIT_USAGE;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (a[0] == '-' && a[1] != '\0') {
      return mx_cli_usage_error(cmd, image_usage, "unknown option '%s'", a);
    } else if (!path) {
      path = a;
    } else {
      return mx_cli_usage_error(cmd, image_usage, "expected one IMAGE, got another: '%s'", a);
    }
  }
  if (!path) return mx_cli_usage_error(cmd, image_usage, "missing IMAGE");
  if (dir && config)
    return mx_cli_usage_error(cmd, image_usage, "give -m DIR or --config, not both");
  if ((pixels_npy || resized_npy || pooling_npy) && !dir && !config)
    return mx_cli_usage_error(cmd, image_usage,
                              "--pixels-npy, --resized-npy and --pooling-npy need -m DIR or "
                              "--config FILE");

  mx_image_proc_t proc;
  bool have_proc = dir || config;
  mx_error_clear();
  if (dir) {
    mx_status_t st = mx_image_proc_load(dir, &proc);
    if (st != MX_OK) return mx_cli_fail(cmd, st);
  } else if (config) {
    char *text = NULL;
    size_t len = 0;
    mx_status_t st = mx_read_file(config, &text, &len);
    if (st == MX_OK) st = mx_image_proc_parse(text, len, &proc);
    free(text);
    if (st != MX_OK) return mx_cli_fail(cmd, mx_error_prefix(st, "%s", config));
  }

  mx_image_t img;
  mx_image_info_t info;
  mx_status_t st = mx_image_load(path, &lim, &img, &info);
  if (st != MX_OK) return mx_cli_fail(cmd, st);
  mx_pixels_t px = {0};
  if (have_proc) st = mx_image_preprocess(&proc, &img, &px);
  if (st == MX_OK && decoded_npy) {
    int64_t dims[3] = {img.height, img.width, 3};
    st = mx_cli_write_npy(decoded_npy, "|u1", 1, img.rgb, dims, 3);
  }
  if (st == MX_OK && resized_npy) {
    int64_t dims[3] = {px.height, px.width, 3};
    st = mx_cli_write_npy(resized_npy, "|u1", 1, px.rgb, dims, 3);
  }
  if (st == MX_OK && pixels_npy) st = mx_cli_write_npy_f32(pixels_npy, px.data, px.shape, px.rank);
  if (st == MX_OK && pooling_npy && !px.pooling)
    st = mx_error_set(MX_ERR_INVALID_ARG, "--pooling-npy: %s computes no image_token_pooling",
                      proc.type_name);
  if (st == MX_OK && pooling_npy)
    st = mx_cli_write_npy(pooling_npy, "<i4", 4, px.pooling, px.pooling_shape, 2);
  if (st != MX_OK) {
    mx_pixels_free(&px);
    mx_image_free(&img);
    return mx_cli_fail(cmd, st);
  }

  const char *fmt = info.format == MX_IMAGE_FORMAT_PNG ? "png" : "jpeg";
  stats_t s = {0};
  size_t n = 1;
  for (int32_t d = 0; d < px.rank; d++) n *= (size_t)px.shape[d];
  if (have_proc) s = stats_of(px.data, n);
  if (json) {
    printf("{\"path\": ");
    print_json_str(path);
    printf(
        ", \"format\": \"%s\", \"width\": %d, \"height\": %d, \"color\": \"%s\", "
        "\"bit_depth\": %d, \"alpha\": %s, \"interlaced\": %s",
        fmt, info.width, info.height, info.color, info.bit_depth, info.alpha ? "true" : "false",
        info.interlaced ? "true" : "false");
    if (have_proc) {
      printf(", \"processor\": \"%s\", \"resized\": [%d, %d], \"pixel_values\": {\"shape\": [",
             proc.type_name, px.height, px.width);
      for (int32_t d = 0; d < px.rank; d++) printf("%s%lld", d ? ", " : "", (long long)px.shape[d]);
      printf("], \"min\": %.9g, \"max\": %.9g, \"mean\": %.9g}", s.min, s.max, s.mean);
      if (proc.kind == MX_IMAGE_PROC_QWEN2_VL || proc.kind == MX_IMAGE_PROC_YOUTU_VL)
        printf(", \"image_grid_thw\": [%lld, %lld, %lld]", (long long)px.grid_thw[0],
               (long long)px.grid_thw[1], (long long)px.grid_thw[2]);
      if (px.pooling)
        printf(", \"image_grids\": [%lld, %lld, %lld, %lld], \"image_token_pooling\": [%lld, %lld]",
               (long long)px.image_grid[0], (long long)px.image_grid[1],
               (long long)px.image_grid[2], (long long)px.image_grid[3],
               (long long)px.pooling_shape[0], (long long)px.pooling_shape[1]);
    }
    printf("}\n");
  } else {
    printf("image: %s: %s %d x %d, %s, %d-bit%s%s\n", path, fmt, info.width, info.height,
           info.color, info.bit_depth, info.alpha ? ", alpha (composited onto white)" : "",
           info.interlaced ? (info.format == MX_IMAGE_FORMAT_PNG ? ", interlaced" : ", progressive")
                           : "");
    if (have_proc) {
      printf("processor: %s, %s resize to %d x %d\n", proc.type_name, resample_name(proc.resample),
             px.width, px.height);
      printf("pixel_values: [");
      for (int32_t d = 0; d < px.rank; d++) printf("%s%lld", d ? ", " : "", (long long)px.shape[d]);
      printf("] min %.6g max %.6g mean %.6g\n", s.min, s.max, s.mean);
      if (proc.kind == MX_IMAGE_PROC_QWEN2_VL || proc.kind == MX_IMAGE_PROC_YOUTU_VL)
        printf("image_grid_thw: [%lld, %lld, %lld]\n", (long long)px.grid_thw[0],
               (long long)px.grid_thw[1], (long long)px.grid_thw[2]);
      if (px.pooling)
        printf("image_grids: [%lld, %lld, %lld, %lld], image_token_pooling: [%lld, %lld]\n",
               (long long)px.image_grid[0], (long long)px.image_grid[1],
               (long long)px.image_grid[2], (long long)px.image_grid[3],
               (long long)px.pooling_shape[0], (long long)px.pooling_shape[1]);
    }
  }
  mx_pixels_free(&px);
  mx_image_free(&img);
  return MX_EXIT_OK;
}
