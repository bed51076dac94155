// gpt-oss's stacked expert tensors (src/model/moe_stacked.c) on an in-memory checkpoint: each
// expert's gate, up and down projections come out as [N, K] (transposed, gate and up taken from
// the even and odd columns of gate_up_proj), the biases likewise, the stacked tensors are gone;
// a stacked tensor of the wrong shape and MXFP4 experts are refused naming the tensor.
#include <string.h>

#include "model/checkpoint_internal.h"
#include "mx_test.h"

enum { E = 3, H = 4, F = 2 };

#define LP "model.layers.0.mlp.experts."

static const char kConfig[] =
    "{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 1, \"hidden_size\": 4, "
    "\"intermediate_size\": 2, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, "
    "\"head_dim\": 2, \"num_local_experts\": 3, \"num_experts_per_tok\": 2, \"vocab_size\": 8}";

// Element (e, i, j) of a stacked tensor holds 100 e + 10 i + j (unique, exact in f32).
static float val(int64_t e, int64_t i, int64_t j) { return (float)(100 * e + 10 * i + j); }

static float gate_up[E * H * 2 * F], gate_up_b[E * 2 * F], down[E * F * H], down_b[E * H];

static mx_checkpoint_t *make(bool wrong_shape) {
  for (int64_t e = 0; e < E; e++) {
    for (int64_t i = 0; i < H; i++)
      for (int64_t j = 0; j < 2 * F; j++) gate_up[(e * H + i) * 2 * F + j] = val(e, i, j);
    for (int64_t j = 0; j < 2 * F; j++) gate_up_b[e * 2 * F + j] = val(e, 0, j);
    for (int64_t i = 0; i < F; i++)
      for (int64_t j = 0; j < H; j++) down[(e * F + i) * H + j] = val(e, i, j);
    for (int64_t j = 0; j < H; j++) down_b[e * H + j] = val(e, 0, j);
  }
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_create(NULL, &ck));
  int64_t gd[3] = {E, H, 2 * F}, gbd[2] = {E, 2 * F}, dd[3] = {E, F, H}, dbd[2] = {E, H};
  if (wrong_shape) gd[1] = H / 2;  // [E, H / 2, 2F]: not the hidden size
  CHECK_OK(mx_checkpoint_add_view(ck, LP "gate_up_proj", MX_ELEM_F32, 3, gd, gate_up, "t"));
  CHECK_OK(mx_checkpoint_add_view(ck, LP "gate_up_proj_bias", MX_ELEM_F32, 2, gbd, gate_up_b, "t"));
  CHECK_OK(mx_checkpoint_add_view(ck, LP "down_proj", MX_ELEM_F32, 3, dd, down, "t"));
  CHECK_OK(mx_checkpoint_add_view(ck, LP "down_proj_bias", MX_ELEM_F32, 2, dbd, down_b, "t"));
  return ck;
}

static float at(const mx_checkpoint_t *ck, const char *name, int64_t i) {
  const mx_weight_t *w = mx_checkpoint_find(ck, name);
  CHECK_MSG(w != NULL && w->dtype == MX_ELEM_F32, "missing %s", name);
  return w ? ((const float *)w->data)[i] : -1.0f;
}

static void test_split(const mx_model_config_t *cfg) {
  mx_checkpoint_t *ck = make(false);
  CHECK_OK(mx_moe_unstack(cfg, ck));
  CHECK(mx_checkpoint_find(ck, LP "gate_up_proj") == NULL);
  CHECK(mx_checkpoint_find(ck, LP "down_proj_bias") == NULL);
  int bad = 0;
  char n[160];
  for (int64_t e = 0; e < E; e++) {
    const mx_weight_t *g;
    snprintf(n, sizeof n, LP "%lld.gate_proj.weight", (long long)e);
    g = mx_checkpoint_find(ck, n);
    CHECK(g != NULL && g->rank == 2 && g->dims[0] == F && g->dims[1] == H);
    for (int64_t f = 0; f < F; f++) {
      for (int64_t h = 0; h < H; h++) {
        snprintf(n, sizeof n, LP "%lld.gate_proj.weight", (long long)e);
        bad += at(ck, n, f * H + h) != val(e, h, 2 * f);
        snprintf(n, sizeof n, LP "%lld.up_proj.weight", (long long)e);
        bad += at(ck, n, f * H + h) != val(e, h, 2 * f + 1);
        snprintf(n, sizeof n, LP "%lld.down_proj.weight", (long long)e);
        bad += at(ck, n, h * F + f) != val(e, f, h);
      }
      snprintf(n, sizeof n, LP "%lld.gate_proj.bias", (long long)e);
      bad += at(ck, n, f) != val(e, 0, 2 * f);
      snprintf(n, sizeof n, LP "%lld.up_proj.bias", (long long)e);
      bad += at(ck, n, f) != val(e, 0, 2 * f + 1);
    }
    for (int64_t h = 0; h < H; h++) {
      snprintf(n, sizeof n, LP "%lld.down_proj.bias", (long long)e);
      bad += at(ck, n, h) != val(e, 0, h);
    }
  }
  CHECK_MSG(bad == 0, "%d values misplaced", bad);
  mx_checkpoint_close(ck);
}

static void test_refusals(const mx_model_config_t *cfg) {
  mx_checkpoint_t *ck = make(true);
  EXPECT_ERR(mx_moe_unstack(cfg, ck), "stacked expert tensor '" LP "gate_up_proj' must be");
  mx_checkpoint_close(ck);
  static uint8_t blocks[E * 2 * F * 1 * 16];
  int64_t bd[4] = {E, 2 * F, 1, 16};
  CHECK_OK(mx_checkpoint_create(NULL, &ck));
  CHECK_OK(mx_checkpoint_add_view(ck, LP "gate_up_proj_blocks", MX_ELEM_UI8, 4, bd, blocks, "t"));
  EXPECT_ERR(mx_moe_unstack(cfg, ck), "'" LP "gate_up_proj_blocks': gpt-oss's MXFP4 experts");
  mx_checkpoint_close(ck);
}

int main(void) {
  mx_model_config_t cfg;
  CHECK_OK(mx_config_parse(kConfig, strlen(kConfig), NULL, 0, "config.json", &cfg));
  test_split(&cfg);
  test_refusals(&cfg);
  return mx_test_finish();
}
