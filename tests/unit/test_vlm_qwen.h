// Helpers of the Qwen VLM tests (test_vlm_qwen2_vl.c, test_vlm_qwen3_vl.c): the committed
// photograph preprocessed as the fixture's processor did, and @vision's arguments.
#ifndef MX_TEST_VLM_QWEN_H
#define MX_TEST_VLM_QWEN_H

#include "mlxcel/image.h"
#include "mx_test_vlm.h"
#include "test_graph_runner.h"

static char g_data[4096];  // the test data folder (MX_TEST_DATA)

static inline int32_t argmax(const float *v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

// The photograph through the fixture's processor (mx_test_vlm_pixels), with its patch grid.
static inline bool load_pixels(const mx_model_t *m, const cJSON *json, mx_pixels_t *px) {
  if (!mx_test_vlm_pixels(m, g_data, json, px)) return false;
  const cJSON *thw = cJSON_GetObjectItem(json, "image_grid_thw");
  CHECK(px->rank == 2);
  for (int32_t i = 0; i < 3; i++) CHECK(px->grid_thw[i] == cJSON_GetArrayItem(thw, i)->valueint);
  return true;
}

// The arguments of @vision: weights from the checkpoint, then the pixels.
static inline mx_tensor_t *vision_args(const mx_model_t *m, mx_func_t *f, const mx_pixels_t *px) {
  int32_t n = f->body->n_args;
  mx_tensor_t *args = calloc((size_t)n, sizeof *args);
  for (int32_t i = 0; i < n; i++) {
    mx_graph_arg_t info;
    CHECK_OK(mx_graph_arg_info(f, i, &info));
    const mx_type_t *t = mx_value_type(f, f->body->args[i]);
    args[i].type = *t;
    if (info.role == MX_ARG_PIXELS) {
      CHECK(mx_type_nbytes(t) == sizeof(float) * (size_t)(px->shape[0] * px->shape[1]));
      args[i].data = (uint8_t *)px->data;
      args[i].nbytes = mx_type_nbytes(t);
      continue;
    }
    const mx_weight_t *w = mx_checkpoint_find(m->ckpt, info.name);
    CHECK_MSG(w != NULL, "no tensor %s", info.name);
    if (!w) continue;
    args[i].data = (uint8_t *)w->data;
    args[i].nbytes = w->nbytes;
  }
  return args;
}

// The module with @vision for the photograph's grid (*mod, the caller destroys it) and its
// @vision; NULL (the module destroyed) when it cannot be built.
static inline mx_func_t *build_vision(const mx_model_t *m, const mx_pixels_t *px,
                                      mx_module_t **mod) {
  mx_graph_opts_t go = {.ctx = 64,
                        .prefill_len = 4,
                        .media = true,
                        .vision_grid_h = (int32_t)px->grid_thw[1],
                        .vision_grid_w = (int32_t)px->grid_thw[2]};
  *mod = NULL;
  CHECK_OK(mx_model_build_graph(&m->config, m->ckpt, &go, mod));
  mx_func_t *f = *mod ? mx_module_find_func(*mod, "vision") : NULL;
  CHECK(f != NULL);
  if (!f) {
    mx_module_destroy(*mod);
    *mod = NULL;
  }
  return f;
}

#endif  // MX_TEST_VLM_QWEN_H
