// gpt-oss's stacked expert tensors (src/model/moe_stacked.c) on an in-memory checkpoint: each
// expert's gate, up and down projections come out as [N, K] (transposed, gate and up taken from
// the even and odd columns of gate_up_proj), the biases likewise, the stacked tensors are gone;
// a stacked tensor of the wrong shape is refused naming it. MXFP4 experts stay packed: gate and
// up the even and odd rows of gate_up_proj_blocks / _scales, down views; sizes that are not
// multiples of 32 and a missing part are refused.
#include <stdio.h>
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
  EXPECT_ERR(mx_moe_unstack(cfg, ck), "MXFP4 experts need hidden_size (4) and intermediate_size");
  mx_checkpoint_close(ck);
}

// MXFP4: E 2, H 32, F 32 (one group per row); byte (e, row, i) of a stacked tensor holds
// (7 e + 3 row + i) & 255.
static const char kConfig32[] =
    "{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 1, \"hidden_size\": 32, "
    "\"intermediate_size\": 32, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, "
    "\"head_dim\": 16, \"num_local_experts\": 2, \"num_experts_per_tok\": 1, \"vocab_size\": 8}";

static uint8_t byte_at(int64_t e, int64_t row, int64_t i) {
  return (uint8_t)((7 * e + 3 * row + i) & 255);
}

static void test_mxfp4(void) {
  mx_model_config_t cfg;
  CHECK_OK(mx_config_parse(kConfig32, strlen(kConfig32), NULL, 0, "config.json", &cfg));
  enum { E2 = 2, H2 = 32, F2 = 32 };
  static uint8_t gub[E2 * 2 * F2 * 16], gus[E2 * 2 * F2], db[E2 * H2 * 16], ds[E2 * H2];
  for (int64_t e = 0; e < E2; e++) {
    for (int64_t r = 0; r < 2 * F2; r++) {
      for (int64_t i = 0; i < 16; i++) gub[(e * 2 * F2 + r) * 16 + i] = byte_at(e, r, i);
      gus[e * 2 * F2 + r] = byte_at(e, r, 100);
    }
    for (int64_t r = 0; r < H2; r++) {
      for (int64_t i = 0; i < 16; i++) db[(e * H2 + r) * 16 + i] = byte_at(e, r, i + 50);
      ds[e * H2 + r] = byte_at(e, r, 200);
    }
  }
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_create(NULL, &ck));
  int64_t gbd[4] = {E2, 2 * F2, 1, 16}, gsd[3] = {E2, 2 * F2, 1}, dbd[4] = {E2, H2, 1, 16},
          dsd[3] = {E2, H2, 1};
  CHECK_OK(mx_checkpoint_add_view(ck, LP "gate_up_proj_blocks", MX_ELEM_UI8, 4, gbd, gub, "t"));
  CHECK_OK(mx_checkpoint_add_view(ck, LP "gate_up_proj_scales", MX_ELEM_UI8, 3, gsd, gus, "t"));
  CHECK_OK(mx_checkpoint_add_view(ck, LP "down_proj_blocks", MX_ELEM_UI8, 4, dbd, db, "t"));
  EXPECT_ERR(mx_moe_unstack(&cfg, ck), "missing tensor \"" LP "down_proj_scales\"");
  CHECK_OK(mx_checkpoint_add_view(ck, LP "down_proj_scales", MX_ELEM_UI8, 3, dsd, ds, "t"));
  CHECK_OK(mx_moe_unstack(&cfg, ck));
  CHECK(mx_checkpoint_find(ck, LP "gate_up_proj_blocks") == NULL);
  int bad = 0;
  char n[160];
  static const char *const kProj[3] = {"gate_proj", "up_proj", "down_proj"};
  for (int64_t e = 0; e < E2; e++) {
    for (int j = 0; j < 3; j++) {
      int64_t rows = j == 2 ? H2 : F2;
      snprintf(n, sizeof n, LP "%lld.%s.weight", (long long)e, kProj[j]);
      const mx_weight_t *w = mx_checkpoint_find(ck, n);
      snprintf(n, sizeof n, LP "%lld.%s.scales", (long long)e, kProj[j]);
      const mx_weight_t *sc = mx_checkpoint_find(ck, n);
      CHECK(w && sc && w->dtype == MX_ELEM_UI8 && w->dims[0] == rows && w->dims[1] == 16 &&
            sc->dims[0] == rows && sc->dims[1] == 1);
      if (!w || !sc) continue;
      for (int64_t r = 0; r < rows; r++) {
        int64_t src = j == 2 ? r : 2 * r + j;  // gate: even rows, up: odd rows
        int64_t off = j == 2 ? 50 : 0;
        for (int64_t i = 0; i < 16; i++)
          bad += ((const uint8_t *)w->data)[r * 16 + i] != byte_at(e, src, i + off);
        bad += ((const uint8_t *)sc->data)[r] != byte_at(e, src, j == 2 ? 200 : 100);
      }
    }
  }
  CHECK_MSG(bad == 0, "%d MXFP4 bytes misplaced", bad);
  mx_checkpoint_close(ck);
}

int main(void) {
  test_mxfp4();
  mx_model_config_t cfg;
  CHECK_OK(mx_config_parse(kConfig, strlen(kConfig), NULL, 0, "config.json", &cfg));
  test_split(&cfg);
  test_refusals(&cfg);
  return mx_test_finish();
}
