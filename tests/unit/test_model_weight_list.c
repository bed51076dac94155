// mx_model_list_weights: for every family fixture of $MX_SHARED/fixtures (checkpoints written by
// an independent generator with Hugging Face's tensor names), the list is exactly the fixture's
// tensors with their shapes, each once. Also: a callback error stops the walk, NULL arguments.
#include <stdlib.h>

#include "mlxcel/model.h"
#include "mx_test.h"

typedef struct seen {
  const mx_checkpoint_t *ck;
  const char *arch;
  int32_t n, stop_after;
  char names[256][128];
} seen_t;

static mx_status_t visit(void *user, const char *name, int32_t rank, const int64_t *dims) {
  seen_t *s = user;
  const mx_weight_t *w = s->ck ? mx_checkpoint_find(s->ck, name) : NULL;
  if (s->ck) {
    CHECK_MSG(w != NULL, "%s: listed tensor %s is not in the fixture", s->arch, name);
    bool same = w && w->rank == rank;
    for (int32_t d = 0; same && d < rank; d++) same = w->dims[d] == dims[d];
    CHECK_MSG(same, "%s: %s has another shape in the fixture", s->arch, name);
  }
  for (int32_t i = 0; i < s->n && i < 256; i++) {
    CHECK_MSG(strcmp(s->names[i], name) != 0, "%s: %s listed twice", s->arch, name);
  }
  if (s->n < 256) snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
  s->n++;
  if (s->stop_after && s->n == s->stop_after) {
    return mx_error_set(MX_ERR_RUNTIME, "stop here");
  }
  return MX_OK;
}

static void check_fixture(const char *shared, const char *arch) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/fixtures/%s", shared, arch);
  mx_model_config_t cfg;
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_config_load(dir, &cfg));
  CHECK_OK(mx_checkpoint_open(dir, &ck));
  if (!ck) return;
  seen_t *s = calloc(1, sizeof *s);
  s->ck = ck;
  s->arch = arch;
  CHECK_OK(mx_model_list_weights(&cfg, visit, s));
  CHECK_MSG(s->n == mx_checkpoint_count(ck), "%s: %d listed, %d in the fixture", arch, s->n,
            mx_checkpoint_count(ck));
  // A callback error ends the walk with that status.
  s->ck = NULL;
  s->n = 0;
  s->stop_after = 3;
  mx_status_t st = mx_model_list_weights(&cfg, visit, s);
  CHECK(st == MX_ERR_RUNTIME && s->n == 3 && strstr(mx_error_message(), "stop here"));
  free(s);
  mx_checkpoint_close(ck);
}

int main(void) {
  CHECK(mx_model_list_weights(NULL, visit, NULL) == MX_ERR_INVALID_ARG);
  const char *shared = mx_test_shared("fixtures");
  if (!shared) return mx_test_finish();
  static const char *const archs[] = {"llama", "mistral", "qwen2",  "qwen3",
                                      "gemma", "gemma2",  "gemma3", "phi3"};
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) check_fixture(shared, archs[i]);
  return mx_test_finish();
}
