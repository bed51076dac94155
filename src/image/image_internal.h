// Internal: what the PNG and JPEG readers share with the dispatcher (decode.c), and the
// processors' pieces that live in files of their own.
#ifndef MX_IMAGE_INTERNAL_H
#define MX_IMAGE_INTERNAL_H

#include "mlxcel/image.h"

// Each reader decodes `len` bytes (its magic already checked) into out->rgb (heap, w*h*3) and
// fills *info. `max_pixels` is checked against the header before any pixel buffer exists. On
// failure nothing is left allocated and the message is set.
mx_status_t mx_image_decode_png(const uint8_t *data, size_t len, int64_t max_pixels,
                                mx_image_t *out, mx_image_info_t *info);
mx_status_t mx_image_decode_jpeg(const uint8_t *data, size_t len, int64_t max_pixels,
                                 mx_image_t *out, mx_image_info_t *info);

// The pixel-limit check both readers run on the header: MX_ERR_RUNTIME naming the dimensions.
mx_status_t mx_image_check_dims(int64_t width, int64_t height, int64_t max_pixels);

// Converts `n` RGBA pixels in place to RGB (3 bytes each, packed at the front of the buffer),
// compositing onto an opaque white background with PIL's integer Image.alpha_composite: the
// processors' convert_to_rgb does exactly this for any image with transparency.
void mx_image_rgba_over_white(uint8_t *px, size_t n);

// torch's bilinear F.interpolate (align_corners False, no antialias) of `in` as floats, rounded
// half to even and clamped to 8 bits (resize_linear.c): Molmo2's resize. *out is owned by the
// caller on success.
mx_status_t mx_image_resize_linear_torch(const mx_image_t *in, int32_t width, int32_t height,
                                         mx_image_t *out);

// The most crops a Molmo2 configuration may ask for (max_crops; the released ones use 8).
#define MX_IMAGE_MOLMO2_MAX_CROPS 64
// The largest Molmo2 crop size accepted (size; the released ones use 378).
#define MX_IMAGE_MOLMO2_MAX_SIZE 1024

// Molmo2ImageProcessor's crops, pixel_values and image_token_pooling of one image (molmo2.c).
mx_status_t mx_image_preprocess_molmo2(const mx_image_proc_t *p, const mx_image_t *img,
                                       mx_pixels_t *out);

#endif  // MX_IMAGE_INTERNAL_H
