// Stacked expert tensors (mx_moe_unstack): mlx-lm stores a sparse layer's experts as one
// SwitchGLU, "<block>switch_mlp.{gate_proj,up_proj,down_proj}.{weight,scales,biases}" of shape
// [E, N, ...] (float, or quantized as QuantizedSwitchLinear: the packed values, scales and biases
// of each expert stacked the same way), where transformers' checkpoints hold one tensor per
// expert, "<block>experts.<e>.<name>.weight". Expert e of a stacked tensor is a contiguous slice,
// so it becomes a view under the per-expert name the graph reads, and the stacked tensor leaves
// the checkpoint.
//
// gpt-oss's save_pretrained writes a layer's experts as "<block>experts.gate_up_proj" [E, H, 2F]
// (x . W, gate and up interleaved along the last dimension: gate column 2f, up column 2f + 1),
// "gate_up_proj_bias" [E, 2F] (interleaved the same way), "down_proj" [E, F, H] and
// "down_proj_bias" [E, H]. Its per-expert [N, K] projections are transposed, de-interleaved copies
// (the checkpoint owns them; the stacked pages are released from memory once copied), the down
// biases views. The released checkpoints store the projections in MXFP4 instead (composite.h),
// "gate_up_proj_blocks" u8 [E, 2F, H / 32, 16] and "gate_up_proj_scales" u8 [E, 2F, H / 32]
// (rows, not columns, interleaved: [N, K] already), "down_proj_blocks" [E, H, F / 32, 16] and
// "down_proj_scales" [E, H, F / 32]: gate and up become copies of the even and odd rows
// ("<e>.gate_proj.weight" u8 [F, H / 2] and ".scales" [F, H / 32]), down views, all kept packed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint_internal.h"
#include "model/graph_internal.h"

static const char *const kSwitch[3] = {"gate_proj", "up_proj", "down_proj"};
static const char *const kParts[3] = {"weight", "scales", "biases"};

// Splits tensor `name` (when present) into the per-expert views "<lp>experts.<e>.<ename>.<part>".
static mx_status_t split(mx_checkpoint_t *ck, const mx_arch_t *a, const char *name, const char *lp,
                         const char *ename, const char *part) {
  const mx_weight_t *w = mx_checkpoint_find(ck, name);
  if (w == NULL) return MX_OK;
  if (w->rank != 3 || w->dims[0] != a->n_experts) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "%s: stacked expert tensor '%s' must have shape [%d, N, K] (rank %d, "
                        "first dimension %lld)",
                        w->file, name, a->n_experts, w->rank,
                        (long long)(w->rank > 0 ? w->dims[0] : 0));
  }
  mx_weight_t t = *w;  // the entry moves when views are appended
  size_t stride = t.nbytes / (size_t)a->n_experts;
  for (int32_t e = 0; e < a->n_experts; e++) {
    char en[320];
    snprintf(en, sizeof en, "%sexperts.%d.%s.%s", lp, e, ename, part);
    MX_TRY(mx_checkpoint_add_view(ck, en, t.dtype, 2, t.dims + 1,
                                  (const uint8_t *)t.data + (size_t)e * stride, t.file));
  }
  return mx_checkpoint_remove(ck, name);
}

// The stacked gpt-oss tensor `name` [E, d1(, d2)] of a float type, or NULL (absent).
static mx_status_t gpt_oss_tensor(mx_checkpoint_t *ck, const mx_arch_t *a, const char *name,
                                  int32_t rank, int64_t d1, int64_t d2, mx_weight_t *out,
                                  bool *found) {
  const mx_weight_t *w = mx_checkpoint_find(ck, name);
  *found = w != NULL;
  if (w == NULL) return MX_OK;
  bool fl = w->dtype == MX_ELEM_F32 || w->dtype == MX_ELEM_BF16 || w->dtype == MX_ELEM_F16;
  if (!fl || w->rank != rank || w->dims[0] != a->n_experts || w->dims[1] != d1 ||
      (rank == 3 && w->dims[2] != d2)) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "%s: stacked expert tensor '%s' must be f32 / bf16 / f16 of shape [%d, "
                        "%lld%s%lld]",
                        w->file, name, a->n_experts, (long long)d1, rank == 3 ? ", " : "",
                        rank == 3 ? (long long)d2 : 0LL);
  }
  *out = *w;  // the entry moves when tensors are added
  return MX_OK;
}

// Expert e's rows [n, k] of src [E, K', N'] (src element (e, i, j)): dst[r][c] =
// src[e][c][r * step + first] (step 2: every other column of the interleaved gate_up).
static mx_status_t put_transposed(mx_checkpoint_t *ck, const char *name, const mx_weight_t *src,
                                  int64_t e, int64_t n, int64_t k, int64_t step, int64_t first) {
  size_t es = mx_elem_size(src->dtype);
  int64_t cols = src->dims[src->rank - 1];  // N' of src
  uint8_t *dst = malloc((size_t)(n * k) * es);
  if (dst == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory (%s)", name);
  const uint8_t *base = (const uint8_t *)src->data + (size_t)(e * k * cols) * es;
  if (src->rank == 2) base = (const uint8_t *)src->data + (size_t)(e * cols) * es;
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < k; c++)
      memcpy(dst + (size_t)(r * k + c) * es, base + (size_t)(c * cols + r * step + first) * es, es);
  int64_t dims[2] = {n, k};
  return mx_checkpoint_put(ck, name, src->dtype, k > 1 ? 2 : 1, k > 1 ? dims : &n, dst);
}

// The MXFP4 tensor `name` u8 [E, d1, d2(, 16)], or *found false (absent).
static mx_status_t mxfp4_tensor(mx_checkpoint_t *ck, const mx_arch_t *a, const char *name,
                                int32_t rank, int64_t d1, int64_t d2, mx_weight_t *out,
                                bool *found) {
  const mx_weight_t *w = mx_checkpoint_find(ck, name);
  *found = w != NULL;
  if (w == NULL) return MX_OK;
  if (w->dtype != MX_ELEM_UI8 || w->rank != rank || w->dims[0] != a->n_experts ||
      w->dims[1] != d1 || w->dims[2] != d2 || (rank == 4 && w->dims[3] != 16)) {
    return mx_error_set(
        MX_ERR_INVALID_ARG, "%s: MXFP4 expert tensor '%s' must be u8 of shape [%d, %lld, %lld%s]",
        w->file, name, a->n_experts, (long long)d1, (long long)d2, rank == 4 ? ", 16" : "");
  }
  *out = *w;
  return MX_OK;
}

// Expert e's rows first, first + step, ... (n of them, `row` bytes each) of stacked src as a
// u8 [n, row] tensor the checkpoint owns (step 1, first 0: a view instead).
static mx_status_t put_rows(mx_checkpoint_t *ck, const char *name, const mx_weight_t *src,
                            int64_t e, int64_t n, int64_t row, int64_t step, int64_t first) {
  const uint8_t *base = (const uint8_t *)src->data + (size_t)(e * n * step * row);
  int64_t dims[2] = {n, row};
  if (step == 1) return mx_checkpoint_add_view(ck, name, MX_ELEM_UI8, 2, dims, base, src->file);
  uint8_t *dst = malloc((size_t)(n * row));
  if (dst == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory (%s)", name);
  for (int64_t r = 0; r < n; r++)
    memcpy(dst + r * row, base + (r * step + first) * row, (size_t)row);
  return mx_checkpoint_put(ck, name, MX_ELEM_UI8, 2, dims, dst);
}

// The MXFP4 projections of one layer's experts, kept packed (lp as gpt_oss_split's).
static mx_status_t mxfp4_split(mx_checkpoint_t *ck, const mx_arch_t *a, const char *lp) {
  int64_t E = a->n_experts, H = a->hidden, F = a->expert_ffn;
  if (H % 32 != 0 || F % 32 != 0) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "MXFP4 experts need hidden_size (%lld) and intermediate_size (%lld) "
                        "multiples of 32",
                        (long long)H, (long long)F);
  }
  static const char *const kNames[4] = {"gate_up_proj_blocks", "gate_up_proj_scales",
                                        "down_proj_blocks", "down_proj_scales"};
  const int32_t ranks[4] = {4, 3, 4, 3};
  const int64_t d1[4] = {2 * F, 2 * F, H, H}, d2[4] = {H / 32, H / 32, F / 32, F / 32};
  mx_weight_t t[4];
  bool found[4];
  char name[320];
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "%sexperts.%s", lp, kNames[i]);
    MX_TRY(mxfp4_tensor(ck, a, name, ranks[i], d1[i], d2[i], &t[i], &found[i]));
    if (!found[i]) {
      return mx_error_set(MX_ERR_INVALID_ARG, "checkpoint: missing tensor \"%s\" (MXFP4 experts)",
                          name);
    }
  }
  for (int64_t e = 0; e < E; e++) {
    for (int p = 0; p < 2; p++) {    // blocks, then scales: rows of H / 2 and H / 32 bytes
      for (int j = 0; j < 2; j++) {  // gate (even rows), up (odd)
        snprintf(name, sizeof name, "%sexperts.%lld.%s.%s", lp, (long long)e, a->expert_names[j],
                 kParts[p]);
        MX_TRY(put_rows(ck, name, &t[p], e, F, p ? H / 32 : H / 2, 2, j));
      }
      snprintf(name, sizeof name, "%sexperts.%lld.%s.%s", lp, (long long)e, a->expert_names[2],
               kParts[p]);
      MX_TRY(put_rows(ck, name, &t[2 + p], e, H, p ? F / 32 : F / 2, 1, 0));
    }
  }
  for (int i = 0; i < 4; i++) {
    if (i < 2) mx_checkpoint_release(ck, t[i].data, t[i].nbytes);  // copied
    snprintf(name, sizeof name, "%sexperts.%s", lp, kNames[i]);
    MX_TRY(mx_checkpoint_remove(ck, name));
  }
  return MX_OK;
}

// One sparse layer's gpt-oss experts (lp: "<prefix>layers.<l>.<block>").
static mx_status_t gpt_oss_split(mx_checkpoint_t *ck, const mx_arch_t *a, const char *lp) {
  char name[320];
  snprintf(name, sizeof name, "%sexperts.gate_up_proj_blocks", lp);
  bool mxfp4 = mx_checkpoint_find(ck, name) != NULL;
  if (mxfp4) MX_TRY(mxfp4_split(ck, a, lp));
  int64_t E = a->n_experts, H = a->hidden, F = a->expert_ffn;
  static const char *const kNames[4] = {"gate_up_proj", "gate_up_proj_bias", "down_proj",
                                        "down_proj_bias"};
  const int32_t ranks[4] = {3, 2, 3, 2};
  const int64_t d1[4] = {H, 2 * F, F, H}, d2[4] = {2 * F, 0, H, 0};
  mx_weight_t t[4];
  bool found[4];
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "%sexperts.%s", lp, kNames[i]);
    MX_TRY(gpt_oss_tensor(ck, a, name, ranks[i], d1[i], d2[i], &t[i], &found[i]));
  }
  if (mxfp4 && (found[0] || found[2])) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "checkpoint: layer '%s' holds both MXFP4 and float experts", lp);
  }
  if (!found[0] && !found[1] && !found[2] && !found[3]) return MX_OK;  // per-expert already
  for (int e = 0; e < E; e++) {
    char en[320];
    const char *const proj[3] = {a->expert_names[0], a->expert_names[1], a->expert_names[2]};
    for (int j = 0; found[0] && j < 2; j++) {  // gate (even columns), up (odd)
      snprintf(en, sizeof en, "%sexperts.%d.%s.weight", lp, e, proj[j]);
      MX_TRY(put_transposed(ck, en, &t[0], e, F, H, 2, j));
    }
    for (int j = 0; found[1] && j < 2; j++) {
      snprintf(en, sizeof en, "%sexperts.%d.%s.bias", lp, e, proj[j]);
      MX_TRY(put_transposed(ck, en, &t[1], e, F, 1, 2, j));
    }
    if (found[2]) {
      snprintf(en, sizeof en, "%sexperts.%d.%s.weight", lp, e, proj[2]);
      MX_TRY(put_transposed(ck, en, &t[2], e, H, F, 1, 0));
    }
    if (found[3]) {
      snprintf(en, sizeof en, "%sexperts.%d.%s.bias", lp, e, proj[2]);
      size_t stride = t[3].nbytes / (size_t)E;
      MX_TRY(mx_checkpoint_add_view(ck, en, t[3].dtype, 1, &t[3].dims[1],
                                    (const uint8_t *)t[3].data + (size_t)e * stride, t[3].file));
    }
  }
  for (int i = 0; i < 4; i++) {
    if (!found[i]) continue;
    // The copied ones' stacked bytes are no longer read (the down biases' views still are).
    if (i < 3) mx_checkpoint_release(ck, t[i].data, t[i].nbytes);
    snprintf(name, sizeof name, "%sexperts.%s", lp, kNames[i]);
    MX_TRY(mx_checkpoint_remove(ck, name));
  }
  return MX_OK;
}

mx_status_t mx_moe_unstack(const mx_model_config_t *cfg, mx_checkpoint_t *ck) {
  if (cfg->num_experts < 1) return MX_OK;
  mx_arch_t a;
  mx_status_t st = mx_arch_from_config(cfg, &a);
  if (st != MX_OK) return st;
  mx_arch_resolve_names(&a, ck);
  for (int32_t l = 0; st == MX_OK && l < a.n_layers; l++) {
    if (!mx_arch_layer_moe(&a, l)) continue;
    char lp[200];
    snprintf(lp, sizeof lp, "%slayers.%d.%s", a.prefix, l, a.moe_block);
    if (a.expert_bias) {  // gpt-oss's layout
      st = gpt_oss_split(ck, &a, lp);
      continue;
    }
    for (int j = 0; st == MX_OK && j < 3; j++) {
      for (int p = 0; st == MX_OK && p < 3; p++) {
        char name[320];
        snprintf(name, sizeof name, "%sswitch_mlp.%s.%s", lp, kSwitch[j], kParts[p]);
        st = split(ck, &a, name, lp, a.expert_names[j], kParts[p]);
      }
    }
  }
  mx_arch_free(&a);
  return st;
}
