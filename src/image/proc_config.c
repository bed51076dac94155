// preprocessor_config.json -> mx_image_proc_t. The defaults are those of transformers' PIL
// processor classes (CLIPImageProcessorPil, LlavaImageProcessorPil, SiglipImageProcessorPil,
// Gemma3ImageProcessorPil, Qwen2VLImageProcessorPil); `null` means "the class default", as in
// transformers. Molmo2ImageProcessor has no PIL variant: its defaults are its torchvision class's.
// A key this file does not know is refused by name: a processor option silently
// ignored would give the model different pixels than the ones it was trained on.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/try.h"
#include "image_internal.h"

static const double kClipMean[3] = {0.48145466, 0.4578275, 0.40821073};
static const double kClipStd[3] = {0.26862954, 0.26130258, 0.27577711};
static const double kHalf[3] = {0.5, 0.5, 0.5};

typedef struct proc_type {
  const char *name;
  mx_image_proc_kind_t kind;
  bool llava;  // LlavaImageProcessor: do_pad means pad to square before resizing
  bool gemma3;
} proc_type_t;

static const proc_type_t kTypes[] = {
    {"CLIPImageProcessor", MX_IMAGE_PROC_CLIP, false, false},
    {"LlavaImageProcessor", MX_IMAGE_PROC_CLIP, true, false},
    {"SiglipImageProcessor", MX_IMAGE_PROC_SIGLIP, false, false},
    {"Gemma3ImageProcessor", MX_IMAGE_PROC_SIGLIP, false, true},
    {"Qwen2VLImageProcessor", MX_IMAGE_PROC_QWEN2_VL, false, false},
    {"Molmo2ImageProcessor", MX_IMAGE_PROC_MOLMO2, false, false},
    {"YoutuVLImageProcessor", MX_IMAGE_PROC_YOUTU_VL, false, false},
};

// Keys that do not change the pixels of one image.
static const char *const kIgnored[] = {"processor_class",
                                       "feature_extractor_type",
                                       "image_seq_length",
                                       "do_convert_rgb",
                                       "default_to_square",
                                       "image_processor_type",
                                       NULL};

static bool is_null(const cJSON *v) { return !v || cJSON_IsNull(v); }

static mx_status_t get_bool(const cJSON *root, const char *key, bool *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (is_null(v)) return MX_OK;
  if (!cJSON_IsBool(v)) return mx_error_set(MX_ERR_PARSE, "'%s' is not true or false", key);
  *out = cJSON_IsTrue(v);
  return MX_OK;
}

static mx_status_t get_int(const cJSON *v, const char *key, int64_t lo, int64_t hi, int64_t *out) {
  if (is_null(v)) return MX_OK;
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
      v->valuedouble > hi)
    return mx_error_set(MX_ERR_PARSE, "'%s' is not an integer in [%lld, %lld]", key, (long long)lo,
                        (long long)hi);
  *out = (int64_t)v->valuedouble;
  return MX_OK;
}

static mx_status_t get_triple(const cJSON *root, const char *key, double out[3]) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (is_null(v)) return MX_OK;
  if (cJSON_IsNumber(v)) {
    out[0] = out[1] = out[2] = v->valuedouble;
  } else if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 3) {
    for (int i = 0; i < 3; i++) {
      const cJSON *e = cJSON_GetArrayItem(v, i);
      if (!cJSON_IsNumber(e)) return mx_error_set(MX_ERR_PARSE, "'%s' holds a non-number", key);
      out[i] = e->valuedouble;
    }
  } else {
    return mx_error_set(MX_ERR_PARSE, "'%s' is not a number or a list of 3 numbers", key);
  }
  if (strcmp(key, "image_std") == 0)
    for (int i = 0; i < 3; i++)
      if (!(out[i] > 0)) return mx_error_set(MX_ERR_PARSE, "'image_std' must be positive");
  return MX_OK;
}

// A list of two integers in [lo, hi] (Molmo2's overlap_margins and pooling_size).
static mx_status_t get_pair(const cJSON *v, const char *key, int64_t lo, int64_t hi,
                            int64_t out[2]) {
  if (is_null(v)) return MX_OK;
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2)
    return mx_error_set(MX_ERR_PARSE, "'%s' is not a list of 2 integers", key);
  for (int i = 0; i < 2; i++) MX_TRY(get_int(cJSON_GetArrayItem(v, i), key, lo, hi, &out[i]));
  return MX_OK;
}

enum { MAX_SIDE = 1 << 16 };

// size / crop_size: an integer (a square, or CLIP's shortest edge) or an object with
// shortest_edge / height + width (and Qwen2-VL's longest_edge).
static mx_status_t get_size(const cJSON *root, const char *key, bool int_is_edge, int64_t *edge,
                            int64_t *h, int64_t *w, int64_t *longest) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (is_null(v)) return MX_OK;
  if (cJSON_IsNumber(v)) {
    int64_t n = 0;
    MX_TRY(get_int(v, key, 1, MAX_SIDE, &n));
    if (int_is_edge) {
      *edge = n, *h = *w = 0;
    } else {
      *h = *w = n, *edge = 0;
    }
    return MX_OK;
  }
  if (!cJSON_IsObject(v)) return mx_error_set(MX_ERR_PARSE, "'%s' is not a number or object", key);
  int64_t e = 0, hh = 0, ww = 0, l = 0;
  for (const cJSON *f = v->child; f; f = f->next) {
    char name[96];
    snprintf(name, sizeof name, "%s.%s", key, f->string);
    if (strcmp(f->string, "shortest_edge") == 0) {
      MX_TRY(get_int(f, name, 1, INT32_MAX, &e));
    } else if (strcmp(f->string, "height") == 0) {
      MX_TRY(get_int(f, name, 1, MAX_SIDE, &hh));
    } else if (strcmp(f->string, "width") == 0) {
      MX_TRY(get_int(f, name, 1, MAX_SIDE, &ww));
    } else if (strcmp(f->string, "longest_edge") == 0 && longest) {
      MX_TRY(get_int(f, name, 1, INT32_MAX, &l));
    } else {
      return mx_error_set(MX_ERR_UNSUPPORTED, "'%s' is not supported by this engine", name);
    }
  }
  if ((hh != 0) != (ww != 0))
    return mx_error_set(MX_ERR_PARSE, "'%s' needs both height and width", key);
  if (e && hh) return mx_error_set(MX_ERR_UNSUPPORTED, "'%s' mixes shortest_edge and height", key);
  if (!e && !hh && !l) return mx_error_set(MX_ERR_PARSE, "'%s' is empty", key);
  if (e || hh) *edge = e, *h = hh, *w = ww;
  if (longest && l) *longest = l;
  return MX_OK;
}

static void set_defaults(mx_image_proc_t *p, const proc_type_t *t) {
  memset(p, 0, sizeof *p);
  p->kind = t->kind;
  snprintf(p->type_name, sizeof p->type_name, "%s", t->name);
  p->do_resize = p->do_rescale = p->do_normalize = true;
  p->rescale_factor = 1.0 / 255.0;
  const double *mean = kClipMean, *std = kClipStd;
  switch (t->kind) {
    case MX_IMAGE_PROC_CLIP:
      p->resample = MX_RESAMPLE_BICUBIC;
      p->shortest_edge = 224;
      p->do_center_crop = true;
      p->crop_h = p->crop_w = 224;
      break;
    case MX_IMAGE_PROC_SIGLIP:
      p->resample = t->gemma3 ? MX_RESAMPLE_BILINEAR : MX_RESAMPLE_BICUBIC;
      p->size_h = p->size_w = 224;
      mean = std = kHalf;
      break;
    case MX_IMAGE_PROC_QWEN2_VL:
      p->resample = MX_RESAMPLE_BICUBIC;
      p->min_pixels = 56 * 56;
      p->max_pixels = 28 * 28 * 1280;
      p->patch_size = 14;
      p->merge_size = 2;
      p->temporal_patch_size = 2;
      break;
    case MX_IMAGE_PROC_YOUTU_VL:
      // llama.cpp's youtuvl preprocessing: bilinear, and at most 62500 image tokens (250000
      // patches) unless the file says otherwise.
      p->resample = MX_RESAMPLE_BILINEAR;
      p->patch_size = 16;
      p->merge_size = 2;
      p->max_num_patches = 250000;
      mean = std = kHalf;
      break;
    case MX_IMAGE_PROC_MOLMO2:
      p->resample = MX_RESAMPLE_BILINEAR;
      p->size_h = p->size_w = 378;
      p->patch_size = 14;
      p->max_crops = 8;
      p->overlap_margins[0] = p->overlap_margins[1] = 4;
      p->pooling_size[0] = p->pooling_size[1] = 2;
      mean = std = kHalf;
      break;
  }
  memcpy(p->image_mean, mean, sizeof p->image_mean);
  memcpy(p->image_std, std, sizeof p->image_std);
}

// What Molmo2ImageProcessor itself refuses or would fail on, and this engine's bounds.
static mx_status_t check_molmo2(const mx_image_proc_t *p) {
  if (p->size_h != p->size_w)
    return mx_error_set(MX_ERR_UNSUPPORTED, "Molmo2 only supports a square 'size', got %lld x %lld",
                        (long long)p->size_w, (long long)p->size_h);
  if (p->size_h > MX_IMAGE_MOLMO2_MAX_SIZE)
    return mx_error_set(MX_ERR_UNSUPPORTED, "'size' %lld is above this engine's %d for Molmo2",
                        (long long)p->size_h, MX_IMAGE_MOLMO2_MAX_SIZE);
  if (p->size_h % p->patch_size)
    return mx_error_set(MX_ERR_PARSE, "'size' %lld is not a multiple of 'patch_size' %lld",
                        (long long)p->size_h, (long long)p->patch_size);
  if (p->overlap_margins[0] + p->overlap_margins[1] >= p->size_h / p->patch_size)
    return mx_error_set(MX_ERR_PARSE,
                        "'overlap_margins' [%lld, %lld] leave no window in a crop of %lld patches",
                        (long long)p->overlap_margins[0], (long long)p->overlap_margins[1],
                        (long long)(p->size_h / p->patch_size));
  if (p->resample != MX_RESAMPLE_BILINEAR)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "'resample' %d is not supported for Molmo2 (2, torch's bilinear, is)",
                        (int)p->resample);
  return MX_OK;
}

static mx_status_t parse_root(const cJSON *root, mx_image_proc_t *p) {
  if (!cJSON_IsObject(root)) return mx_error_set(MX_ERR_PARSE, "not a JSON object");
  const cJSON *tv = cJSON_GetObjectItemCaseSensitive(root, "image_processor_type");
  if (!cJSON_IsString(tv))
    return mx_error_set(MX_ERR_PARSE, "'image_processor_type' is missing or not a string");
  const proc_type_t *t = NULL;
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; i++)
    if (strcmp(tv->valuestring, kTypes[i].name) == 0) t = &kTypes[i];
  if (!t) {
    size_t n = strlen(tv->valuestring);
    if (n > 4 && strcmp(tv->valuestring + n - 4, "Fast") == 0)
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "'image_processor_type' %s is a torchvision-based processor; this "
                          "engine implements the PIL-based ones (the same name without Fast), "
                          "whose resampling differs",
                          tv->valuestring);
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "'image_processor_type' %s is not supported (supported: "
                        "CLIPImageProcessor, LlavaImageProcessor, SiglipImageProcessor, "
                        "Gemma3ImageProcessor, Qwen2VLImageProcessor, Molmo2ImageProcessor, "
                        "YoutuVLImageProcessor)",
                        tv->valuestring);
  }
  set_defaults(p, t);
  int64_t kw_min = 0, kw_max = 0;  // Qwen2-VL's min_pixels / max_pixels keys win over its size
  for (const cJSON *f = root->child; f; f = f->next) {
    const char *k = f->string;
    bool known = false;
    for (const char *const *ig = kIgnored; *ig; ig++) known |= strcmp(k, *ig) == 0;
    if (known) continue;
    if (strcmp(k, "do_resize") == 0) {
      MX_TRY(get_bool(root, k, &p->do_resize));
    } else if (strcmp(k, "do_rescale") == 0) {
      MX_TRY(get_bool(root, k, &p->do_rescale));
    } else if (strcmp(k, "do_normalize") == 0) {
      MX_TRY(get_bool(root, k, &p->do_normalize));
    } else if (strcmp(k, "do_center_crop") == 0 && t->kind == MX_IMAGE_PROC_CLIP) {
      MX_TRY(get_bool(root, k, &p->do_center_crop));
    } else if (strcmp(k, "do_pad") == 0) {
      MX_TRY(get_bool(root, k, &p->do_pad));
      // Without a batch, the generic do_pad (pad to the batch's largest image) changes nothing.
      if (!t->llava) p->do_pad = false;
    } else if (strcmp(k, "rescale_factor") == 0) {
      if (is_null(f)) continue;
      if (!cJSON_IsNumber(f) || !(f->valuedouble > 0))
        return mx_error_set(MX_ERR_PARSE, "'rescale_factor' is not a positive number");
      p->rescale_factor = f->valuedouble;
    } else if (strcmp(k, "image_mean") == 0) {
      MX_TRY(get_triple(root, k, p->image_mean));
    } else if (strcmp(k, "image_std") == 0) {
      MX_TRY(get_triple(root, k, p->image_std));
    } else if (strcmp(k, "resample") == 0) {
      int64_t r = p->resample;
      MX_TRY(get_int(f, k, 0, 5, &r));
      if (r != MX_RESAMPLE_BILINEAR && r != MX_RESAMPLE_BICUBIC)
        return mx_error_set(MX_ERR_UNSUPPORTED,
                            "'resample' %lld is not supported (2 bilinear and 3 bicubic are)",
                            (long long)r);
      p->resample = (mx_resample_t)r;
    } else if (strcmp(k, "size") == 0) {
      int64_t longest = 0;
      MX_TRY(get_size(root, k, t->kind == MX_IMAGE_PROC_CLIP, &p->shortest_edge, &p->size_h,
                      &p->size_w, t->kind == MX_IMAGE_PROC_QWEN2_VL ? &longest : NULL));
      if (t->kind == MX_IMAGE_PROC_QWEN2_VL) {
        // Qwen2-VL's size is its pixel bounds: shortest_edge = min_pixels, longest_edge = max.
        if (p->shortest_edge) p->min_pixels = p->shortest_edge;
        if (longest) p->max_pixels = longest;
        if (p->size_h) return mx_error_set(MX_ERR_UNSUPPORTED, "'size.height' with Qwen2-VL");
      }
      if ((t->kind == MX_IMAGE_PROC_SIGLIP || t->kind == MX_IMAGE_PROC_MOLMO2) && p->shortest_edge)
        return mx_error_set(MX_ERR_UNSUPPORTED, "'size.shortest_edge' with %s", t->name);
    } else if (strcmp(k, "crop_size") == 0 && t->kind == MX_IMAGE_PROC_CLIP) {
      int64_t edge = 0;
      MX_TRY(get_size(root, k, false, &edge, &p->crop_h, &p->crop_w, NULL));
      if (edge) return mx_error_set(MX_ERR_UNSUPPORTED, "'crop_size.shortest_edge'");
    } else if (t->kind == MX_IMAGE_PROC_QWEN2_VL && strcmp(k, "min_pixels") == 0) {
      MX_TRY(get_int(f, k, 1, INT32_MAX, &kw_min));
    } else if (t->kind == MX_IMAGE_PROC_QWEN2_VL && strcmp(k, "max_pixels") == 0) {
      MX_TRY(get_int(f, k, 1, INT32_MAX, &kw_max));
    } else if (t->kind == MX_IMAGE_PROC_QWEN2_VL && strcmp(k, "patch_size") == 0) {
      MX_TRY(get_int(f, k, 1, 1024, &p->patch_size));
    } else if (t->kind == MX_IMAGE_PROC_QWEN2_VL && strcmp(k, "merge_size") == 0) {
      MX_TRY(get_int(f, k, 1, 64, &p->merge_size));
    } else if (t->kind == MX_IMAGE_PROC_QWEN2_VL && strcmp(k, "temporal_patch_size") == 0) {
      MX_TRY(get_int(f, k, 1, 64, &p->temporal_patch_size));
    } else if (t->kind == MX_IMAGE_PROC_YOUTU_VL && strcmp(k, "patch_size") == 0) {
      MX_TRY(get_int(f, k, 1, 1024, &p->patch_size));
    } else if (t->kind == MX_IMAGE_PROC_YOUTU_VL && strcmp(k, "merge_size") == 0) {
      MX_TRY(get_int(f, k, 1, 64, &p->merge_size));
    } else if (t->kind == MX_IMAGE_PROC_YOUTU_VL && strcmp(k, "max_num_patches") == 0) {
      MX_TRY(get_int(f, k, 1, 1 << 24, &p->max_num_patches));
    } else if (t->kind == MX_IMAGE_PROC_MOLMO2 && strcmp(k, "patch_size") == 0) {
      MX_TRY(get_int(f, k, 1, 1024, &p->patch_size));
    } else if (t->kind == MX_IMAGE_PROC_MOLMO2 && strcmp(k, "max_crops") == 0) {
      MX_TRY(get_int(f, k, 1, MX_IMAGE_MOLMO2_MAX_CROPS, &p->max_crops));
    } else if (t->kind == MX_IMAGE_PROC_MOLMO2 && strcmp(k, "overlap_margins") == 0) {
      MX_TRY(get_pair(f, k, 0, 1024, p->overlap_margins));
    } else if (t->kind == MX_IMAGE_PROC_MOLMO2 && strcmp(k, "pooling_size") == 0) {
      MX_TRY(get_pair(f, k, 1, 64, p->pooling_size));
    } else if (t->gemma3 && strcmp(k, "do_pan_and_scan") == 0) {
      bool pas = false;
      MX_TRY(get_bool(root, k, &pas));
      if (pas) return mx_error_set(MX_ERR_UNSUPPORTED, "'do_pan_and_scan' true is not supported");
    } else if (t->gemma3 && strncmp(k, "pan_and_scan_", 13) == 0) {
      continue;  // only read by pan and scan, refused above
    } else {
      return mx_error_set(MX_ERR_UNSUPPORTED, "'%s' is not an option this engine implements for %s",
                          k, t->name);
    }
  }
  if (kw_min) p->min_pixels = kw_min;
  if (kw_max) p->max_pixels = kw_max;
  // Fields the checks above leave open.
  const cJSON *rgb = cJSON_GetObjectItemCaseSensitive(root, "do_convert_rgb");
  if (cJSON_IsFalse(rgb))
    return mx_error_set(MX_ERR_UNSUPPORTED, "'do_convert_rgb' false is not supported");
  if (t->kind == MX_IMAGE_PROC_CLIP && !p->shortest_edge && !p->size_h)
    return mx_error_set(MX_ERR_PARSE, "'size' gives no size");
  if (t->kind == MX_IMAGE_PROC_MOLMO2) MX_TRY(check_molmo2(p));
  if (t->kind == MX_IMAGE_PROC_YOUTU_VL && p->max_num_patches < p->merge_size * p->merge_size)
    return mx_error_set(MX_ERR_PARSE,
                        "'max_num_patches' %lld is below one merged unit (%lld patches)",
                        (long long)p->max_num_patches, (long long)(p->merge_size * p->merge_size));
  if (t->kind == MX_IMAGE_PROC_YOUTU_VL && (p->resample != MX_RESAMPLE_BILINEAR || !p->do_resize))
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "YoutuVLImageProcessor: only 'resample' 2 (bilinear) with 'do_resize' true "
                        "is supported");
  if (t->kind == MX_IMAGE_PROC_QWEN2_VL && p->min_pixels > p->max_pixels)
    return mx_error_set(MX_ERR_PARSE, "min_pixels %lld is above max_pixels %lld",
                        (long long)p->min_pixels, (long long)p->max_pixels);
  return MX_OK;
}

mx_status_t mx_image_proc_parse(const char *json, size_t len, mx_image_proc_t *out) {
  memset(out, 0, sizeof *out);
  cJSON *root = NULL;
  MX_TRY(mx_json_parse(json, len, MX_CONFIG_JSON_MAX_BYTES, MX_JSON_MAX_DEPTH,
                       "preprocessor_config.json", &root));
  mx_status_t st = parse_root(root, out);
  cJSON_Delete(root);
  if (st != MX_OK) {
    memset(out, 0, sizeof *out);
    return mx_error_prefix(st, "preprocessor_config.json");
  }
  return MX_OK;
}

mx_status_t mx_image_proc_load(const char *model_dir, mx_image_proc_t *out) {
  memset(out, 0, sizeof *out);
  char path[4096];
  if (snprintf(path, sizeof path, "%s/preprocessor_config.json", model_dir) >= (int)sizeof path)
    return mx_error_set(MX_ERR_INVALID_ARG, "model directory path too long");
  char *text = NULL;
  size_t len = 0;
  MX_TRY(mx_read_file_max(path, MX_CONFIG_JSON_MAX_BYTES, &text, &len));
  mx_status_t st = mx_image_proc_parse(text, len, out);
  free(text);
  if (st != MX_OK) return mx_error_prefix(st, "%s", model_dir);
  return MX_OK;
}
