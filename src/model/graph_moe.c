// A sparse mixture-of-experts layer (graph_internal.h): the family's MoE facts and one mx.moe
// composite (composite_moe.c) holding the router, the top-k routing and the experts.
#include <stdlib.h>

#include "model/graph_internal.h"
#include "model/quant_internal.h"

mx_status_t mx_arch_moe(const mx_model_config_t *cfg, mx_arch_t *a) {
  if (cfg->num_experts < 1 || cfg->num_experts_per_tok < 1 ||
      cfg->num_experts_per_tok > cfg->num_experts || cfg->moe_intermediate_size < 1) {
    return mx_error_set(MX_ERR_INVALID_ARG, "graph: bad mixture-of-experts sizes");
  }
  a->n_experts = cfg->num_experts;
  a->top_k = cfg->num_experts_per_tok;
  a->expert_ffn = cfg->moe_intermediate_size;
  a->shared_ffn = cfg->shared_expert_intermediate_size;
  a->norm_topk = cfg->norm_topk_prob;
  a->layer_dense = cfg->layer_dense;
  a->moe_block = "mlp.";
  a->router_name = "gate";
  a->expert_names[0] = "gate_proj";
  a->expert_names[1] = "up_proj";
  a->expert_names[2] = "down_proj";
  return MX_OK;
}

bool mx_arch_layer_moe(const mx_arch_t *a, int32_t l) {
  return a->n_experts > 0 && !(a->layer_dense && a->layer_dense[l]);
}

mx_status_t mx_graph_moe(mx_comp_ctx_t *cc, mx_builder_t *b, const mx_arch_t *a,
                         const mx_wlist_t *wl, const int32_t *w, const mx_layer_w_t *lw, int32_t h,
                         int32_t *out) {
  // One format for the layer's experts (mx_wlist_resolve_quant checked it): the first one's.
  const mx_wspec_t *s0 = &wl->w[lw->experts];
  mx_comp_quant_t q = {s0->qbits, s0->qgroup, (mx_qmode_t)s0->qmode};
  int32_t per = !s0->qmode ? 1 : s0->qmode == MX_Q_AFFINE ? 3 : 2, n = 3 * a->n_experts;
  int32_t *ew = malloc(sizeof *ew * (size_t)(n * per));
  if (ew == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) {
    const mx_wspec_t *s = &wl->w[lw->experts + i];
    ew[per * i] = w[lw->experts + i];
    if (per > 1) ew[per * i + 1] = w[s->qscales];
    if (per > 2) ew[per * i + 2] = w[s->qbiases];
  }
  mx_comp_moe_t ra = {
      .top_k = a->top_k,
      .norm_topk = a->norm_topk,
      .quantized = s0->qmode != 0,
      .quant = q,
      .scoring = a->moe_scoring,
      .choice_bias = a->choice_bias,
      .n_group = a->moe_groups,
      .topk_group = a->moe_topk_groups,
      .group_rank = a->moe_group_rank,
      .routed_scale = a->routed_scale,
      .router_bias = a->router_bias,
      .expert_bias = a->expert_bias,
  };
  int32_t *eb = NULL;
  if (a->expert_bias && (eb = malloc(sizeof *eb * (size_t)n)) == NULL) {
    free(ew);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; eb && i < n; i++) eb[i] = w[lw->expert_b + i];
  mx_status_t st = MX_OK;
  if (a->swiglu_limit > 0) {
    ra.activation = MX_ACT_CLAMPED_SWIGLU;
    ra.swiglu_alpha = a->swiglu_alpha;
    ra.swiglu_limit = a->swiglu_limit;
  } else if (!mx_activation_parse(a->activation, &ra.activation)) {
    st = mx_error_set(MX_ERR_UNSUPPORTED, "mx.moe: unsupported activation \"%s\"", a->activation);
  }
  int32_t bias = a->choice_bias ? w[lw->router_bias] : -1;
  int32_t rbias = a->router_bias ? w[lw->router_b] : -1;
  if (st == MX_OK) {
    st = mx_comp_moe_biased(cc, b, h, w[lw->router], ew, a->n_experts, bias, rbias, eb, &ra, out);
  }
  free(eb);
  free(ew);
  return st;
}
