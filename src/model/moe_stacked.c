// Stacked expert tensors (mx_moe_unstack): mlx-lm stores a sparse layer's experts as one
// SwitchGLU, "<block>switch_mlp.{gate_proj,up_proj,down_proj}.{weight,scales,biases}" of shape
// [E, N, ...] (float, or quantized as QuantizedSwitchLinear: the packed values, scales and biases
// of each expert stacked the same way), where transformers' checkpoints hold one tensor per
// expert, "<block>experts.<e>.<name>.weight". Expert e of a stacked tensor is a contiguous slice,
// so it becomes a view under the per-expert name the graph reads, and the stacked tensor leaves
// the checkpoint.
#include <stdio.h>
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
