// Qwen3-VL's learned position embeddings resampled to a patch grid (vision_internal.h): the
// table is a side x side grid (side = floor(sqrt(rows))) that transformers resamples with
// F.interpolate's bilinear rule, align_corners true, to each image's gh x gw grid
// (get_vision_interpolation_indices_and_weights): per axis, the source coordinate
// s = i * (side - 1) / max(n - 1, 1) in f32, taps floor(s) and floor(s) + 1 clamped to the
// table, weights 1 - |s - tap| (at least 0); a patch's embedding is the sum of its four taps'
// rows times the products of their axis weights. Taps and weights are constants of the grid;
// the rows are four gathers of the table, so only 4 N rows are read whatever the table's size.
#include <math.h>
#include <stdlib.h>

#include "model/vision_internal.h"

// Taps and weights of target index i on an axis of n patches, computed in f32 as transformers.
static void axis_taps(int32_t i, int32_t n, int32_t side, int32_t tap[2], float wt[2]) {
  float src = (float)i * (float)(side - 1) / (float)(n - 1 > 1 ? n - 1 : 1);
  float fl = floorf(src);
  for (int32_t k = 0; k < 2; k++) {
    int32_t t = (int32_t)fl + k;
    tap[k] = t < 0 ? 0 : t > side - 1 ? side - 1 : t;
    float d = fabsf(src - fl - (float)k), w = 1.0f - d;
    wt[k] = w > 0.0f ? w : 0.0f;
  }
}

mx_status_t mx_vision_pos_embed(mx_builder_t *b, int32_t table, int32_t rows, int32_t gh,
                                int32_t gw, const int32_t *pos_h, const int32_t *pos_w,
                                int32_t *out) {
  int32_t side = 1;
  while ((int64_t)(side + 1) * (side + 1) <= rows) side++;
  int64_t N = (int64_t)gh * gw, D = mx_build_type(b, table)->dims[1];
  int32_t *idx = malloc(sizeof *idx * (size_t)(4 * N));
  float *wgt = malloc(sizeof *wgt * (size_t)(4 * N));
  if (idx == NULL || wgt == NULL) {
    free(idx);
    free(wgt);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  for (int64_t p = 0; p < N; p++) {
    int32_t th[2], tw[2];
    float wh[2], ww[2];
    axis_taps(pos_h[p], gh, side, th, wh);
    axis_taps(pos_w[p], gw, side, tw, ww);
    // transformers' tap order: (h, w) = (0, 0), (0, 1), (1, 0), (1, 1)
    for (int32_t k = 0; k < 4; k++) {
      idx[k * N + p] = th[k / 2] * side + tw[k % 2];
      wgt[k * N + p] = wh[k / 2] * ww[k % 2];
    }
  }
  int64_t id[2] = {1, N}, off = 2, coll = 0, map = 0, sizes[2] = {1, D}, bd[2] = {0, 1};
  mx_gather_dims_t gd = {{&off, 1}, {&coll, 1}, {NULL, 0}, {NULL, 0}, {&map, 1}, 2};
  mx_status_t st = MX_OK;
  int32_t sum = -1;
  for (int32_t k = 0; k < 4 && st == MX_OK; k++) {
    mx_tensor_t it = {.type = mx_type_tensor(MX_ELEM_I32, 2, id),
                      .data = (uint8_t *)(idx + k * N),
                      .nbytes = sizeof(int32_t) * (size_t)N};
    mx_tensor_t wt = {.type = mx_type_tensor(MX_ELEM_F32, 2, id),
                      .data = (uint8_t *)(wgt + k * N),
                      .nbytes = sizeof(float) * (size_t)N};
    int32_t ic, wc, r, wb, term;
    st = mx_build_constant(b, &it, &ic);
    if (st == MX_OK) st = mx_build_constant(b, &wt, &wc);
    if (st == MX_OK) st = mx_build_gather(b, table, ic, &gd, sizes, false, &r);
    if (st == MX_OK) st = mx_g_f32(b, r, &r);
    if (st == MX_OK) st = mx_g_bcast_like(b, wc, r, bd, &wb);
    if (st == MX_OK) st = mx_build_binary(b, MX_OP_MULTIPLY, r, wb, &term);
    if (st == MX_OK)
      st = sum < 0 ? (sum = term, MX_OK) : mx_build_binary(b, MX_OP_ADD, sum, term, &sum);
  }
  free(idx);
  free(wgt);
  if (st == MX_OK) *out = sum;
  return st;
}
