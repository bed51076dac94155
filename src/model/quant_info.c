// mx_model_matmul_bytes / mx_model_expert_bytes: the bytes of the matmul weights one decode step
// reads, from the weights the model holds (quantized or not).
#include <string.h>

#include "model/graph_internal.h"

static double numel(const mx_weight_t *w) {
  double n = 1;
  for (int32_t i = 0; i < w->rank; i++) n *= (double)w->dims[i];
  return n;
}

// Sums bytes and logical weights over the specs of m's weight list that `experts` selects
// (expert projections, or the linear layers and the tied head); *nq: how many are quantized.
static mx_status_t sum_bytes(const mx_model_t *m, int float_bytes, bool experts, double *bytes,
                             double *params, int32_t *nq) {
  mx_arch_t a;
  mx_wlist_t wl;
  memset(&wl, 0, sizeof wl);
  mx_status_t st = mx_arch_from_config(&m->config, &a);
  if (st != MX_OK) return st;
  mx_arch_resolve_names(&a, m->ckpt);
  st = mx_arch_weights(&a, &wl);
  if (st == MX_OK) st = mx_wlist_resolve_quant(&wl, m->ckpt);
  *bytes = *params = 0;
  *nq = 0;
  for (int32_t i = 0; st == MX_OK && i < wl.n; i++) {
    const mx_wspec_t *s = &wl.w[i];
    bool matmul = experts ? s->kind == MX_WK_EXPERT
                          : s->kind == MX_WK_LINEAR || (s->kind == MX_WK_EMBED && a.tied);
    const mx_weight_t *w = matmul ? mx_checkpoint_find(m->ckpt, s->name) : NULL;
    if (!w) continue;
    if (!s->qmode) {
      *bytes += (double)float_bytes * numel(w);
      *params += numel(w);
      continue;
    }
    (*nq)++;
    *params += (double)s->qn * (double)s->qk;
    *bytes += (double)w->nbytes;
    for (int32_t k = 0; k < 2; k++) {
      int32_t idx = k == 0 ? s->qscales : s->qbiases;
      const mx_weight_t *t = idx >= 0 ? mx_checkpoint_find(m->ckpt, wl.w[idx].name) : NULL;
      if (t) *bytes += (double)t->nbytes;
    }
  }
  mx_wlist_free(&wl);
  mx_arch_free(&a);
  return st;
}

mx_status_t mx_model_matmul_bytes(const mx_model_t *m, int float_bytes, double *bytes,
                                  double *params, int32_t *n_quant) {
  if (!m || !bytes || float_bytes <= 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_model_matmul_bytes: bad arguments");
  }
  double b, p;
  int32_t nq;
  MX_TRY(sum_bytes(m, float_bytes, false, &b, &p, &nq));
  *bytes = b;
  if (params) *params = p;
  if (n_quant) *n_quant = nq;
  return MX_OK;
}

mx_status_t mx_model_expert_bytes(const mx_model_t *m, int float_bytes, double *bytes,
                                  int32_t *n_quant) {
  if (!m || !bytes || float_bytes <= 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_model_expert_bytes: bad arguments");
  }
  double b, p;
  int32_t nq;
  MX_TRY(sum_bytes(m, float_bytes, true, &b, &p, &nq));
  *bytes = b;
  if (n_quant) *n_quant = nq;
  return MX_OK;
}
