// Decomposition of mx.moe (mlxcel/composite.h), in plain StableHLO ops the interpreter, IREE and
// XLA all take (no sort, no gather): the router's logits, softmax, top-k by iterative argmax
// (reduce max, then the smallest index holding it, as torch.topk orders equal values), optional
// renormalization, then masked-dense experts: every expert's gated MLP runs on every token and
// is weighted by that token's routing weight for it (0 when the token did not pick it). Exact,
// at the cost of all experts; backends that read only the selected experts (src/cpu/moe.c)
// replace it. Quantized experts are dequantized in the decomposition exactly as mx.linear's
// (mx_comp_dequant), then multiplied as float ones. gpt-oss's router bias, expert biases and
// clamped SwiGLU (composite.h) are the same ops with those terms added.
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
  const mx_comp_moe_t *a;  // DeepSeek's routing when a->scoring, bias, groups or scale ask for it
  bool deepseek;
  int32_t router_bias;   // operand index of gpt-oss's router bias, -1: none
  int32_t expert_bias0;  // operand index of expert 0's gate bias (3 per expert), -1: none
} moe_params_t;

// Routing weights [B, T, E] f32 of probabilities p [B, T, E] (values >= 0): the top k kept
// (each round takes the largest, the lowest index among equals), every other expert 0,
// the kept ones divided by their sum when norm.
// The k largest entries along the last dimension of cur [..., N] (rank 3 or 4; each round the
// largest, the lowest index among equals, then replaced by gone): *kept, i1 of cur's shape, and
// when rest is not NULL what is left of cur. iota / none: i32 indices along the last dimension
// and N; ninf, imax: the scalars -inf and N.
static mx_status_t top_k_mask(mx_builder_t *b, int32_t cur, int32_t k, int32_t iota, int32_t none,
                              int32_t gone, int32_t ninf, int32_t imax, int32_t *kept,
                              int32_t *rest) {
  int64_t last = mx_build_type(b, cur)->rank - 1, lead[3] = {0, 1, 2};
  *kept = -1;
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
    if (*kept < 0) {
      *kept = pick;
    } else {
      MX_TRY(mx_build_binary(b, MX_OP_OR, *kept, pick, kept));
    }
  }
  if (rest) *rest = cur;
  return MX_OK;
}

static mx_status_t top_k_weights(mx_builder_t *b, int32_t p, int32_t k, bool norm, int32_t *out) {
  mx_type_t pt = *mx_build_type(b, p);
  int64_t E = pt.dims[2], last = 2, lead[2] = {0, 1};
  mx_type_t it = mx_type_tensor(MX_ELEM_I32, 3, pt.dims);
  int32_t iota, none, gone, zero, ninf, imax, fzero, kept;
  MX_TRY(mx_build_iota(b, &it, 2, &iota));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, (double)E, iota, &none));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, -1.0, p, &gone));  // below every probability
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.0, p, &zero));
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, -INFINITY, &ninf));
  MX_TRY(mx_build_scalar(b, MX_ELEM_I32, (double)E, &imax));
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, 0.0, &fzero));
  MX_TRY(top_k_mask(b, p, k, iota, none, gone, ninf, imax, &kept, NULL));
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
// bias >= 0: plus that [N] f32 operand.
static mx_status_t project(mx_builder_t *b, const moe_params_t *p, int32_t x, const int32_t *w,
                           int32_t bias, int32_t *out) {
  int32_t wf = w[0];
  if (p->quant) MX_TRY(mx_comp_dequant(b, p->quant, w[0], w[1], p->per_proj > 2 ? w[2] : -1, &wf));
  if (bias < 0) return mx_g_linear(b, x, wf, out);
  int32_t y;
  MX_TRY(mx_g_linear(b, x, wf, &y));
  return mx_g_add_bias(b, y, bias, out);
}

// gpt-oss's clamped SwiGLU of gate g and up u (composite.h): (clamp(u, -L, L) + 1) *
// (min(g, L) * sigmoid(alpha min(g, L))).
static mx_status_t clamped_swiglu(mx_builder_t *b, const mx_comp_moe_t *a, int32_t g, int32_t u,
                                  int32_t *out) {
  int32_t lim, nlim, one, al, gs, ga, sg, glu, uc, u1;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, a->swiglu_limit, g, &lim));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, -a->swiglu_limit, g, &nlim));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 1.0, g, &one));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, a->swiglu_alpha, g, &al));
  MX_TRY(mx_build_binary(b, MX_OP_MINIMUM, g, lim, &gs));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, gs, al, &ga));
  MX_TRY(mx_build_unary(b, MX_OP_LOGISTIC, ga, &sg));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, gs, sg, &glu));
  MX_TRY(mx_build_binary(b, MX_OP_MAXIMUM, u, nlim, &uc));
  MX_TRY(mx_build_binary(b, MX_OP_MINIMUM, uc, lim, &uc));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, uc, one, &u1));
  return mx_build_binary(b, MX_OP_MULTIPLY, u1, glu, out);
}

// The top k of c [B, T, N] (the choice scores; -inf marks the left-out) as *kept i1 [B, T, N]:
// picked ones become -inf, which k <= the entries left (checked by the family) never reach.
static mx_status_t top_k_of(mx_builder_t *b, int32_t c, int32_t k, int32_t *kept) {
  mx_type_t ct = *mx_build_type(b, c);
  mx_type_t it = mx_type_tensor(MX_ELEM_I32, 3, ct.dims);
  int32_t iota, none, gone, ninf, imax;
  MX_TRY(mx_build_iota(b, &it, 2, &iota));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, (double)ct.dims[2], iota, &none));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, -INFINITY, c, &gone));
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, -INFINITY, &ninf));
  MX_TRY(mx_build_scalar(b, MX_ELEM_I32, (double)ct.dims[2], &imax));
  return top_k_mask(b, c, k, iota, none, gone, ninf, imax, kept, NULL);
}

// DeepSeek's group limit on the choice scores c [B, T, E]: each of the G groups of E / G experts
// ranked by its largest c (or the sum of its two largest, the largest's first occurrence taken
// out before the second), the topk_group best kept, every expert of the others -inf.
static mx_status_t group_limit(mx_builder_t *b, int32_t c, const mx_comp_moe_t *a, int32_t *out) {
  mx_type_t ct = *mx_build_type(b, c);
  int64_t B = ct.dims[0], T = ct.dims[1], E = ct.dims[2], G = a->n_group, N = E / G, last = 3;
  int64_t gd[4] = {B, T, G, N}, lead[3] = {0, 1, 2};
  int32_t c4, ninf, rank, kept, km, ninf_c;
  MX_TRY(mx_build_reshape(b, c, gd, 4, &c4));
  MX_TRY(mx_build_scalar(b, MX_ELEM_F32, -INFINITY, &ninf));
  MX_TRY(mx_build_reduce(b, c4, ninf, &last, 1, MX_OP_MAXIMUM, &rank));  // [B, T, G]
  if (a->group_rank == MX_MOE_GROUP_TOP2_SUM) {  // the best taken out, then the next best
    mx_type_t it = mx_type_tensor(MX_ELEM_I32, 4, gd);
    int32_t iota, none, imax, first, gone, rest, second;
    MX_TRY(mx_build_iota(b, &it, 3, &iota));
    MX_TRY(mx_g_full_like(b, MX_ELEM_I32, (double)N, iota, &none));
    MX_TRY(mx_build_scalar(b, MX_ELEM_I32, (double)N, &imax));
    MX_TRY(mx_g_full_like(b, MX_ELEM_F32, -INFINITY, c4, &gone));
    MX_TRY(top_k_mask(b, c4, 1, iota, none, gone, ninf, imax, &first, &rest));
    MX_TRY(mx_build_reduce(b, rest, ninf, &last, 1, MX_OP_MAXIMUM, &second));
    MX_TRY(mx_build_binary(b, MX_OP_ADD, rank, second, &rank));
  }
  MX_TRY(top_k_of(b, rank, (int32_t)a->topk_group, &kept));
  MX_TRY(mx_g_bcast_like(b, kept, c4, lead, &km));
  MX_TRY(mx_build_reshape(b, km, ct.dims, 3, &km));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, -INFINITY, c, &ninf_c));
  return mx_build_select(b, km, c, ninf_c, out);
}

// DeepSeek's routing weights [B, T, E] of the router logits (composite.h, mx.moe).
static mx_status_t deepseek_weights(mx_builder_t *b, int32_t logits, int32_t bias,
                                    const mx_comp_moe_t *a, int32_t *out) {
  int32_t s, c, kept, zero, w;
  int64_t last = 2, lead[2] = {0, 1};
  if (a->scoring == MX_MOE_SIGMOID) {
    MX_TRY(mx_build_unary(b, MX_OP_LOGISTIC, logits, &s));
  } else {
    MX_TRY(mx_g_softmax_last(b, logits, &s));
  }
  c = s;
  if (bias >= 0) {
    int64_t d2 = 2;
    mx_type_t st = *mx_build_type(b, s);
    int32_t bb;
    MX_TRY(mx_build_broadcast_in_dim(b, bias, st.dims, 3, &d2, &bb));
    MX_TRY(mx_build_binary(b, MX_OP_ADD, s, bb, &c));
  }
  if (a->n_group > 1 && a->topk_group < a->n_group) MX_TRY(group_limit(b, c, a, &c));
  MX_TRY(top_k_of(b, c, (int32_t)a->top_k, &kept));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.0, s, &zero));
  MX_TRY(mx_build_select(b, kept, s, zero, &w));
  if (a->norm_topk) {
    int32_t fzero, sum, sb;
    MX_TRY(mx_build_scalar(b, MX_ELEM_F32, 0.0, &fzero));
    MX_TRY(mx_build_reduce(b, w, fzero, &last, 1, MX_OP_ADD, &sum));
    MX_TRY(mx_g_bcast_like(b, sum, w, lead, &sb));
    MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, w, sb, &w));
  }
  if (a->routed_scale != 0.0 && a->routed_scale != 1.0) {
    int32_t rs;
    MX_TRY(mx_g_full_like(b, MX_ELEM_F32, a->routed_scale, w, &rs));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, w, rs, &w));
  }
  *out = w;
  return MX_OK;
}

// act(x w_gate^T) * (x w_up^T) w_down^T for one expert, [B, T, H] f32. bias: the expert's
// three bias operands (NULL: none).
static mx_status_t expert_mlp(mx_builder_t *b, const moe_params_t *p, int32_t x, const int32_t *w,
                              const int32_t *bias, int32_t *out) {
  int32_t g, u, a, h, n = p->per_proj;
  bool gelu = p->gelu;
  MX_TRY(project(b, p, x, w, bias ? bias[0] : -1, &g));
  MX_TRY(project(b, p, x, w + n, bias ? bias[1] : -1, &u));
  if (p->a->activation == MX_ACT_CLAMPED_SWIGLU) {
    MX_TRY(clamped_swiglu(b, p->a, g, u, &h));
    return project(b, p, h, w + 2 * n, bias ? bias[2] : -1, out);
  }
  if (gelu) {
    MX_TRY(mx_g_gelu_tanh(b, g, &a));
  } else {  // silu(g) = g * sigmoid(g)
    int32_t s;
    MX_TRY(mx_build_unary(b, MX_OP_LOGISTIC, g, &s));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, g, s, &a));
  }
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, a, u, &h));
  return project(b, p, h, w + 2 * n, bias ? bias[2] : -1, out);
}

static mx_status_t build_moe(mx_builder_t *b, const int32_t *args, const void *params,
                             int32_t *result) {
  const moe_params_t *p = params;
  int32_t x = args[0], logits, probs, w, acc = -1;
  MX_TRY(mx_g_linear(b, x, args[1], &logits));
  if (p->router_bias >= 0) MX_TRY(mx_g_add_bias(b, logits, args[p->router_bias], &logits));
  if (p->deepseek) {
    int32_t bias = p->a->choice_bias ? args[2 + 3 * p->per_proj * p->n_experts] : -1;
    MX_TRY(deepseek_weights(b, logits, bias, p->a, &w));
  } else {
    MX_TRY(mx_g_softmax_last(b, logits, &probs));
    MX_TRY(top_k_weights(b, probs, p->top_k, p->norm_topk, &w));
  }
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
    const int32_t *eb = p->expert_bias0 >= 0 ? args + p->expert_bias0 + 3 * e : NULL;
    MX_TRY(expert_mlp(b, p, x, args + 2 + 3 * p->per_proj * e, eb, &y));
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

mx_status_t mx_comp_moe_ex(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t router,
                           const int32_t *experts, int32_t n_experts, int32_t choice_bias,
                           const mx_comp_moe_t *a, int32_t *out) {
  return mx_comp_moe_biased(c, b, x, router, experts, n_experts, choice_bias, -1, NULL, a, out);
}

mx_status_t mx_comp_moe_biased(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t router,
                               const int32_t *experts, int32_t n_experts, int32_t choice_bias,
                               int32_t router_bias, const int32_t *expert_bias,
                               const mx_comp_moe_t *a, int32_t *out) {
  if (n_experts < 1 || a->top_k < 1 || a->top_k > n_experts) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx.moe: top %lld of %d experts", (long long)a->top_k,
                        n_experts);
  }
  bool groups = a->n_group > 1;
  if ((choice_bias >= 0) != a->choice_bias ||
      (groups && (n_experts % a->n_group != 0 || a->topk_group < 1 || a->topk_group > a->n_group ||
                  a->top_k > a->topk_group * (n_experts / a->n_group) ||
                  (a->group_rank == MX_MOE_GROUP_TOP2_SUM && n_experts / a->n_group < 2)))) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx.moe: bad routing (%d experts in %lld groups, the best %lld kept, top "
                        "%lld, choice bias %d)",
                        n_experts, (long long)a->n_group, (long long)a->topk_group,
                        (long long)a->top_k, choice_bias >= 0);
  }
  if ((router_bias >= 0) != a->router_bias || (expert_bias != NULL) != a->expert_bias ||
      (a->activation == MX_ACT_CLAMPED_SWIGLU && !(a->swiglu_limit > 0))) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx.moe: the router / expert bias operands disagree with the attributes, "
                        "or the SwiGLU limit is not positive");
  }
  const char *act = mx_activation_name(a->activation);
  if (act == NULL) return mx_error_set(MX_ERR_UNSUPPORTED, "mx.moe: unsupported activation");
  int32_t per_proj = 1;
  const char *qmode = "none";
  if (a->quantized) {
    qmode = mx_qmode_name(a->quant.mode);
    if (qmode == NULL || a->quant.group_size < 1) {
      return mx_error_set(MX_ERR_INVALID_ARG, "mx.moe: not a quantized format");
    }
    per_proj = a->quant.mode == MX_QMODE_AFFINE ? 3 : 2;
  }
  // x, router, each expert's projections (their quantized triples), then the choice bias, the
  // router bias and the experts' biases.
  int32_t n_w = 3 * per_proj * n_experts, n = 2 + n_w;
  int32_t at_choice = choice_bias >= 0 ? n++ : -1, at_rbias = router_bias >= 0 ? n++ : -1;
  int32_t at_ebias = expert_bias ? n : -1;
  if (expert_bias) n += 3 * n_experts;
  int32_t *ops = malloc(sizeof *ops * (size_t)n);
  if (ops == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  ops[0] = x;
  ops[1] = router;
  for (int32_t i = 0; i < n_w; i++) ops[2 + i] = experts[i];
  if (at_choice >= 0) ops[at_choice] = choice_bias;
  if (at_rbias >= 0) ops[at_rbias] = router_bias;
  for (int32_t i = 0; expert_bias && i < 3 * n_experts; i++) ops[at_ebias + i] = expert_bias[i];
  moe_params_t p = {n_experts,
                    (int32_t)a->top_k,
                    a->norm_topk,
                    a->activation == MX_ACT_GELU_TANH,
                    a->quantized ? &a->quant : NULL,
                    per_proj,
                    a,
                    false,
                    at_rbias,
                    at_ebias};
  p.deepseek = a->scoring != MX_MOE_SOFTMAX || a->choice_bias || groups ||
               (a->routed_scale != 0.0 && a->routed_scale != 1.0);
  char key[256];
  snprintf(
      key, sizeof key,
      "%s,k=%lld,norm=%d,q=%s,b=%d,g=%d,s=%d,cb=%d,g=%lld/%lld/%d,r=%.17g,rb=%d,eb=%d,sw=%.17g/"
      "%.17g",
      act, (long long)a->top_k, a->norm_topk ? 1 : 0, qmode, a->quantized ? (int)a->quant.bits : 0,
      a->quantized ? (int)a->quant.group_size : 0, (int)a->scoring, a->choice_bias ? 1 : 0,
      (long long)a->n_group, (long long)a->topk_group, (int)a->group_rank, a->routed_scale,
      a->router_bias ? 1 : 0, a->expert_bias ? 1 : 0, a->swiglu_alpha, a->swiglu_limit);
  mx_named_attr_t attrs[MX_COMPOSITE_MAX_ATTRS];
  int32_t na = mx_comp_moe_write(c->m, a, attrs);
  mx_status_t st = mx_comp_call(c, b, MX_COMPOSITE_MOE, ops, n, attrs, na, key, build_moe, &p, out);
  free(ops);
  return st;
}

mx_status_t mx_comp_moe(mx_comp_ctx_t *c, mx_builder_t *b, int32_t x, int32_t router,
                        const int32_t *experts, int32_t n_experts, const mx_comp_quant_t *quant,
                        const char *activation, int32_t top_k, bool norm_topk, int32_t *out) {
  mx_comp_moe_t a = {.top_k = top_k, .norm_topk = norm_topk, .quantized = quant != NULL};
  if (quant) a.quant = *quant;
  if (!mx_activation_parse(activation, &a.activation)) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "mx.moe: unsupported activation \"%s\"", activation);
  }
  return mx_comp_moe_ex(c, b, x, router, experts, n_experts, -1, &a, out);
}
