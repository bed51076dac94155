// Decomposition of mx.moe (mlxcel/composite.h), in plain StableHLO ops the interpreter, IREE and
// XLA all take (no sort, no gather): the router's logits, softmax, top-k by iterative argmax
// (reduce max, then the smallest index holding it, as torch.topk orders equal values), optional
// renormalization, then masked-dense experts: every expert's gated MLP runs on every token and
// is weighted by that token's routing weight for it (0 when the token did not pick it). Exact,
// at the cost of all experts; backends that read only the selected experts (src/cpu/moe.c)
// replace it. Quantized experts are dequantized in the decomposition exactly as mx.linear's
// (mx_comp_dequant), then multiplied as float ones.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/composite_internal.h"

typedef struct moe_params {
  int32_t n_experts, top_k;
  bool norm_topk;
  bool gelu;                     // gelu_tanh, else silu
  const mx_comp_quant_t *quant;  // NULL: float experts
  int32_t per_proj;              // operands per projection: 1 float, 2 int8 / int4, 3 affine
} moe_params_t;

// Routing weights [B, T, E] f32 of probabilities p [B, T, E] (values >= 0): the top k kept
// (each round takes the largest, the lowest index among equals), every other expert 0,
// the kept ones divided by their sum when norm.
static mx_status_t top_k_weights(mx_builder_t *b, int32_t p, int32_t k, bool norm, int32_t *out) {
  mx_type_t pt = *mx_build_type(b, p);
  int64_t E = pt.dims[2], last = 2, lead[2] = {0, 1};
  mx_type_t it = mx_type_tensor(MX_ELEM_I32, 3, pt.dims);
  int32_t iota, none, gone, zero, ninf, imax, fzero, cur = p, kept = -1;
  MX_TRY(mx_build_iota(b, &it, 2, &iota));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, (double)E, iota, &none));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, -1.0, p, &gone));  // below every probability
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.0, p, &zero));
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, -INFINITY, &ninf));
  MX_TRY(mx_build_scalar(b, MX_ELEM_I32, (double)E, &imax));
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, 0.0, &fzero));
  for (int32_t j = 0; j < k; j++) {
    int32_t m, mb, eq, cand, i, ib, pick;
    MX_TRY(mx_build_reduce(b, cur, ninf, &last, 1, MX_OP_MAXIMUM, &m));
    MX_TRY(mx_g_bcast_like(b, m, cur, lead, &mb));
    MX_TRY(mx_build_compare(b, MX_CMP_EQ, MX_CMP_TYPE_AUTO, cur, mb, &eq));
    MX_TRY(mx_build_select(b, eq, iota, none, &cand));
    MX_TRY(mx_build_reduce(b, cand, imax, &last, 1, MX_OP_MINIMUM, &i));
    MX_TRY(mx_g_bcast_like(b, i, iota, lead, &ib));
    MX_TRY(mx_build_compare(b, MX_CMP_EQ, MX_CMP_TYPE_AUTO, iota, ib, &pick));
    MX_TRY(mx_build_select(b, pick, gone, cur, &cur));
    if (kept < 0) {
      kept = pick;
    } else {
      MX_TRY(mx_build_binary(b, MX_OP_OR, kept, pick, &kept));
    }
  }
  int32_t w;
  MX_TRY(mx_build_select(b, kept, p, zero, &w));
  if (norm) {
    int32_t s, sb;
    MX_TRY(mx_build_reduce(b, w, fzero, &last, 1, MX_OP_ADD, &s));
    MX_TRY(mx_g_bcast_like(b, s, w, lead, &sb));
    MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, w, sb, &w));
  }
  *out = w;
  return MX_OK;
}

// x . w^T for projection w[0..per_proj) (float, or packed w, scales[, biases] dequantized as
// mx.linear's decomposition does).
static mx_status_t project(mx_builder_t *b, const moe_params_t *p, int32_t x, const int32_t *w,
                           int32_t *out) {
  int32_t wf = w[0];
  if (p->quant) MX_TRY(mx_comp_dequant(b, p->quant, w[0], w[1], p->per_proj > 2 ? w[2] : -1, &wf));
  return mx_g_linear(b, x, wf, out);
}

// act(x w_gate^T) * (x w_up^T) w_down^T for one expert, [B, T, H] f32.
static mx_status_t expert_mlp(mx_builder_t *b, const moe_params_t *p, int32_t x, const int32_t *w,
                              int32_t *out) {
  int32_t g, u, a, h, n = p->per_proj;
  bool gelu = p->gelu;
  MX_TRY(project(b, p, x, w, &g));
  MX_TRY(project(b, p, x, w + n, &u));
  if (gelu) {
    MX_TRY(mx_g_gelu_tanh(b, g, &a));
  } else {  // silu(g) = g * sigmoid(g)
    int32_t s;
    MX_TRY(mx_build_unary(b, MX_OP_LOGISTIC, g, &s));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, g, s, &a));
  }
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, a, u, &h));
  return project(b, p, h, w + 2 * n, out);
}

static mx_status_t build_moe(mx_builder_t *b, const int32_t *args, const void *params,
                             int32_t *result) {
  const moe_params_t *p = params;
  int32_t x = args[0], logits, probs, w, acc = -1;
  MX_TRY(mx_g_linear(b, x, args[1], &logits));
  MX_TRY(mx_g_softmax_last(b, logits, &probs));
  MX_TRY(top_k_weights(b, probs, p->top_k, p->norm_topk, &w));
  mx_type_t wt = *mx_build_type(b, w);
  int64_t lo[3] = {0, 0, 0}, hi[3] = {wt.dims[0], wt.dims[1], 0}, bt[2] = {wt.dims[0], wt.dims[1]};
  int64_t lead[2] = {0, 1};
  for (int32_t e = 0; e < p->n_experts; e++) {
    int32_t we, wb, y, yw;
    lo[2] = e;
    hi[2] = e + 1;
    MX_TRY(mx_build_slice(b, w, lo, hi, NULL, 3, &we));
    MX_TRY(mx_build_reshape(b, we, bt, 2, &we));
    MX_TRY(mx_g_bcast_like(b, we, x, lead, &wb));
    MX_TRY(expert_mlp(b, p, x, args + 2 + 3 * p->per_proj * e, &y));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, y, wb, &yw));
    if (acc < 0) {
      acc = yw;
    } else {
      MX_TRY(mx_build_binary(b, MX_OP_ADD, acc, yw, &acc));
    }
  }
  *result = acc;
  return MX_OK;
}

mx_status_t mx_comp_moe(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t router,
                        const int32_t *experts, int32_t n_experts, const mx_comp_quant_t *quant,
                        const char *activation, int32_t top_k, bool norm_topk, int32_t *out) {
  mx_comp_moe_t a = {.top_k = top_k, .norm_topk = norm_topk, .quantized = quant != NULL};
  if (!mx_activation_parse(activation, &a.activation)) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "mx.moe: unsupported activation \"%s\"", activation);
  }
  if (n_experts < 1 || top_k < 1 || top_k > n_experts) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx.moe: top %d of %d experts", top_k, n_experts);
  }
  int32_t per_proj = 1;
  if (quant) {
    a.quant = *quant;
    per_proj = quant->mode == MX_QMODE_AFFINE ? 3 : 2;
    if (mx_qmode_name(quant->mode) == NULL || quant->group_size < 1) {
      return mx_error_set(MX_ERR_INVALID_ARG, "mx.moe: not a quantized format");
    }
  }
  int32_t n = 2 + 3 * per_proj * n_experts;
  int32_t *ops = malloc(sizeof *ops * (size_t)n);
  if (ops == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  ops[0] = x;
  ops[1] = router;
  for (int32_t i = 0; i < n - 2; i++) ops[2 + i] = experts[i];
  moe_params_t p = {n_experts, top_k, norm_topk, a.activation == MX_ACT_GELU_TANH, quant, per_proj};
  char key[96];
  snprintf(key, sizeof key, "%s,k=%d,norm=%d,q=%s,b=%d,g=%d", activation, top_k, norm_topk ? 1 : 0,
           quant ? mx_qmode_name(quant->mode) : "none", quant ? (int)quant->bits : 0,
           quant ? (int)quant->group_size : 0);
  mx_named_attr_t attrs[MX_COMPOSITE_MAX_ATTRS];
  int32_t na = mx_comp_moe_write(c->m, &a, attrs);
  mx_status_t st = mx_comp_call(c, b, MX_COMPOSITE_MOE, ops, n, attrs, na, key, build_moe, &p, out);
  free(ops);
  return st;
}
