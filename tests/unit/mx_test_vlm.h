// Helpers of the vision-language and audio model tests (test_vlm_*.c, test_audio_gemma3n.c): the
// options of a session on each backend, the cpu plan of a fixed-size tower's @vision and its steps
// of one kind, and expecting a config refusal.
#ifndef MX_TEST_VLM_H
#define MX_TEST_VLM_H

#include <cjson/cJSON.h>
#include <string.h>

#include "mlxcel/cpu_plan.h"
#include "mlxcel/image.h"
#include "mlxcel/model.h"
#include "mlxcel/session.h"
#include "mx_pjrt_plugin.h"
#include "mx_test.h"
#include "session/graph_binding.h"
#include "session/session_internal.h"

// The options a session or batch on `backend` needs: on xla, the PJRT CPU plugin of the test
// environment ($MX_PYTHON's; missing, it fails the test) and no compile cache, so each run
// compiles the media entries it uses. The other backends need none.
static inline void mx_test_backend_opts(const char *backend, mx_backend_opts_t *o) {
  static char plugin[4096];
  if (strcmp(backend, "xla") != 0) return;
  if (!plugin[0]) mx_test_pjrt_plugin(plugin, sizeof plugin);
  o->xla.plugin = plugin;
}

// How many times `what` occurs in s (a plan description: steps of one kind).
static inline int32_t mx_test_count(const char *s, const char *what) {
  int32_t n = 0;
  for (const char *p = s; (p = strstr(p, what)) != NULL; p++) n++;
  return n;
}

// The committed photograph (data/image/inputs/chelsea.png) through m's image processor into *px
// (the caller frees it), checked against the fixture's pixel_values_shape and the first values
// of its pixel_values (within 1e-6). False when there are no pixels.
static inline bool mx_test_vlm_pixels(const mx_model_t *m, const char *data, const cJSON *json,
                                      mx_pixels_t *px) {
  mx_image_proc_t proc;
  mx_image_t img = {0};
  char path[8192];
  snprintf(path, sizeof path, "%s/image/inputs/chelsea.png", data);
  CHECK_OK(mx_image_proc_load(m->dir, &proc));
  CHECK_OK(mx_image_load(path, NULL, &img, NULL));
  CHECK_OK(mx_image_preprocess(&proc, &img, px));
  mx_image_free(&img);
  if (!px->data) return false;
  const cJSON *shape = cJSON_GetObjectItem(json, "pixel_values_shape");
  CHECK(px->rank == cJSON_GetArraySize(shape));
  for (int32_t i = 0; i < px->rank && i < cJSON_GetArraySize(shape); i++)
    CHECK(px->shape[i] == cJSON_GetArrayItem(shape, i)->valueint);
  int32_t i = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, cJSON_GetObjectItem(json, "pixel_values_first")) {
    CHECK_NEAR(px->data[i], v->valuedouble, 1e-6);
    i++;
  }
  return true;
}

// The name of a registered backend that runs text only (the cpu backend without its media
// entries), for the refusal of a tower on a backend that has none: every built-in backend has
// them. Registered on the first call.
static inline const char *mx_test_text_only_backend(void) {
  static mx_backend_t text_only;
  if (!mx_backend_find("textonly")) {
    text_only = mx_backend_cpu;
    text_only.name = "textonly";
    text_only.batch = NULL;
    text_only.vision = NULL;
    text_only.prefill_media = NULL;
    text_only.vision_grid = NULL;
    text_only.audio = NULL;
    text_only.prefill_mrope = NULL;
    text_only.vision_pooled = NULL;
    CHECK_OK(mx_backend_register(&text_only));
  }
  return "textonly";
}

// The description of the cpu plan of m's @vision (mx_cpu_plan_describe) in *sb (the caller
// frees it; empty when the entry does not compile, which fails the test).
static inline void mx_test_vision_plan(const mx_model_t *m, mx_strbuf_t *sb) {
  mx_strbuf_init(sb);
  mx_graph_binding_t b;
  memset(&b, 0, sizeof b);
  CHECK_OK(
      mx_graph_bind_entry(m, 64, m->config.vocab_size, NULL, 0, 1, 1, false, MX_ENTRY_VISION, &b));
  if (b.f && b.input_arg >= 0) {
    b.args[b.input_arg] = b.input;
    mx_cpu_compile_opts_t o = {.args = b.args};
    mx_cpu_plan_t *plan = NULL;
    CHECK_OK(mx_cpu_compile(b.mod, b.f, &o, &plan));
    if (plan) mx_cpu_plan_describe(plan, sb);
    mx_cpu_plan_destroy(plan);
  }
  mx_graph_binding_free(&b);
}

// mx_config_parse refuses json with a message containing needle.
static inline void mx_test_config_error(const char *json, const char *needle) {
  mx_model_config_t cfg;
  mx_status_t st = mx_config_parse(json, strlen(json), NULL, 0, "config.json", &cfg);
  CHECK_MSG(st != MX_OK && strstr(mx_error_message(), needle) != NULL, "%s: got \"%s\"", json,
            st == MX_OK ? "ok" : mx_error_message());
}

// Binds argument i of an @prefill_media function f run directly (not through a session): a
// weight is the checkpoint's tensor (borrowed); any other argument is allocated zeroed (*own set:
// the caller frees it) and filled from the prompt ids, pos0 or the media rows where its role is
// one of those.
static inline void mx_test_bind_media_arg(const mx_model_t *m, mx_func_t *f, int32_t i,
                                          const int32_t *ids, const int32_t *p0, const float *media,
                                          mx_tensor_t *arg, bool *own) {
  mx_graph_arg_t info;
  CHECK_OK(mx_graph_arg_info(f, i, &info));
  const mx_type_t *t = mx_value_type(f, f->body->args[i]);
  if (info.role == MX_ARG_WEIGHT) {
    const mx_weight_t *w = mx_checkpoint_find(m->ckpt, info.name);
    CHECK_MSG(w != NULL, "no tensor %s", info.name);
    if (w) *arg = (mx_tensor_t){.type = *t, .data = (uint8_t *)w->data, .nbytes = w->nbytes};
    return;
  }
  CHECK_OK(mx_tensor_alloc(arg, t));
  *own = true;
  if (!arg->data) return;
  memset(arg->data, 0, arg->nbytes);
  const void *src = info.role == MX_ARG_TOKENS  ? (const void *)ids
                    : info.role == MX_ARG_POS0  ? (const void *)p0
                    : info.role == MX_ARG_MEDIA ? (const void *)media
                                                : NULL;
  if (src) memcpy(arg->data, src, arg->nbytes);
}

#endif  // MX_TEST_VLM_H
