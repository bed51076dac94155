// Decomposition of mx.mla: multi-latent attention (DeepSeek-V2 / V3) over the full capacity S of
// a cache of normalized latents and rotated shared keys (ADR 0012).
//
// transformers expands every cached latent into per-head keys and values (kv_b_proj) and runs
// ordinary attention. The decomposition computes the same sums in the "absorbed" order instead:
// the query's nope part is first mapped into latent space through each head's key rows of kv_b
// (q_lat = q_nope W_k, so q_nope . (W_k c) = q_lat . c), the softmax-weighted latents are summed
// per head, and only that sum goes through the head's value rows (W_v (sum_s p_s c_s)). Exact in
// real arithmetic, and a decode step costs O(S (R + Dr)) per head instead of expanding the
// whole cache. Masking is mx.attention's: slot s is visible iff s <= pos0[b] + t, every slot is
// scored and the invisible ones get -inf (fused kernels read only the valid range).
#include <stdio.h>

#include "model/composite_internal.h"

typedef struct mla_params {
  double scale;
} mla_params_t;

static mx_status_t build_mla(mx_builder_t *b, const int32_t *args, const void *params,
                             int32_t *result) {
  const mla_params_t *p = params;
  int32_t q_nope = args[0], q_rot = args[1], pos0 = args[5];
  mx_type_t qt = *mx_build_type(b, q_nope), ct = *mx_build_type(b, args[2]);
  mx_type_t rt = *mx_build_type(b, args[3]), wt = *mx_build_type(b, args[4]);
  int64_t B = qt.dims[0], H = qt.dims[2], Dn = qt.dims[3];
  int64_t S = ct.dims[2], R = ct.dims[3], Dr = rt.dims[3], Dv = wt.dims[0] / H - Dn;
  int32_t c, kr, w;
  int64_t cd[3] = {B, S, R}, rd[3] = {B, S, Dr}, wd[3] = {H, Dn + Dv, R};
  MX_TRY(mx_g_f32(b, args[2], &c));
  MX_TRY(mx_build_reshape(b, c, cd, 3, &c));
  MX_TRY(mx_g_f32(b, args[3], &kr));
  MX_TRY(mx_build_reshape(b, kr, rd, 3, &kr));
  MX_TRY(mx_g_f32(b, args[4], &w));
  MX_TRY(mx_build_reshape(b, w, wd, 3, &w));
  int32_t wk, wv;
  {
    int64_t lo[3] = {0, 0, 0}, hi[3] = {H, Dn, R};
    MX_TRY(mx_build_slice(b, w, lo, hi, NULL, 3, &wk));
    int64_t lo2[3] = {0, Dn, 0}, hi2[3] = {H, Dn + Dv, R};
    MX_TRY(mx_build_slice(b, w, lo2, hi2, NULL, 3, &wv));
  }
  // q_lat[h, b, t, r] = sum_d q_nope[b, t, h, d] * wk[h, d, r]
  int32_t q_lat, s_lat, s_rot, s;
  {
    int64_t lb = 2, rb = 0, lc = 3, rc = 1;
    mx_dot_dims_t dd = {{&lb, 1}, {&rb, 1}, {&lc, 1}, {&rc, 1}};
    MX_TRY(mx_build_dot_general(b, q_nope, wk, &dd, MX_ELEM_F32, &q_lat));
  }
  // s_lat[b, h, t, s] = sum_r q_lat[h, b, t, r] * c[b, s, r]
  {
    int64_t lb = 1, rb = 0, lc = 3, rc = 2;
    mx_dot_dims_t dd = {{&lb, 1}, {&rb, 1}, {&lc, 1}, {&rc, 1}};
    MX_TRY(mx_build_dot_general(b, q_lat, c, &dd, MX_ELEM_F32, &s_lat));
  }
  // s_rot[b, t, h, s] = sum_d q_rot[b, t, h, d] * kr[b, s, d], as [b, h, t, s]
  {
    int64_t lb = 0, rb = 0, lc = 3, rc = 2;
    mx_dot_dims_t dd = {{&lb, 1}, {&rb, 1}, {&lc, 1}, {&rc, 1}};
    MX_TRY(mx_build_dot_general(b, q_rot, kr, &dd, MX_ELEM_F32, &s_rot));
    int64_t perm[4] = {0, 2, 1, 3};
    MX_TRY(mx_build_transpose(b, s_rot, perm, 4, &s_rot));
  }
  int32_t sc;
  MX_TRY(mx_build_binary(b, MX_OP_ADD, s_lat, s_rot, &s));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, p->scale, s, &sc));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, s, sc, &s));
  // Causal softmax on [B, H, T, S].
  int32_t pr;
  MX_TRY(mx_g_causal_softmax(b, s, pos0, 2, 0, &pr));
  // o_lat[b, h, t, r] = sum_s pr[b, h, t, s] * c[b, s, r]
  int32_t o_lat, o;
  {
    int64_t lb = 0, rb = 0, lc = 3, rc = 1;
    mx_dot_dims_t dd = {{&lb, 1}, {&rb, 1}, {&lc, 1}, {&rc, 1}};
    MX_TRY(mx_build_dot_general(b, pr, c, &dd, MX_ELEM_F32, &o_lat));
  }
  // o[h, b, t, v] = sum_r o_lat[b, h, t, r] * wv[h, v, r], as [b, t, h, v]
  {
    int64_t lb = 1, rb = 0, lc = 3, rc = 2;
    mx_dot_dims_t dd = {{&lb, 1}, {&rb, 1}, {&lc, 1}, {&rc, 1}};
    MX_TRY(mx_build_dot_general(b, o_lat, wv, &dd, MX_ELEM_F32, &o));
  }
  int64_t perm[4] = {1, 2, 0, 3};
  return mx_build_transpose(b, o, perm, 4, result);
}

mx_status_t mx_comp_mla(mx_comp_ctx_t *c, mx_builder_t *b, int32_t q_nope, int32_t q_rot,
                        int32_t latent_cache, int32_t rot_cache, int32_t kv_b, int32_t pos0,
                        double scale, int32_t *out) {
  const mx_type_t *qt = mx_build_type(b, q_nope), *rt = mx_build_type(b, q_rot);
  const mx_type_t *ct = mx_build_type(b, latent_cache), *kt = mx_build_type(b, rot_cache);
  const mx_type_t *wt = mx_build_type(b, kv_b);
  if (qt == NULL || rt == NULL || ct == NULL || kt == NULL || wt == NULL || qt->rank != 4 ||
      rt->rank != 4 || ct->rank != 4 || kt->rank != 4 || wt->rank != 2 || ct->dims[1] != 1 ||
      kt->dims[1] != 1 || ct->dims[2] != kt->dims[2] || rt->dims[3] != kt->dims[3] ||
      wt->dims[1] != ct->dims[3] || wt->dims[0] % qt->dims[2] != 0 ||
      wt->dims[0] / qt->dims[2] <= qt->dims[3]) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx.mla: operand shapes do not match (q_nope [B,T,H,Dn], q_rot "
                        "[B,T,H,Dr], caches [B,1,S,R] and [B,1,S,Dr], kv_b [H (Dn + Dv), R])");
  }
  mla_params_t p = {scale};
  char key[48];
  snprintf(key, sizeof key, "scale=%.17g", scale);
  mx_comp_mla_t a = {scale};
  mx_named_attr_t attrs[MX_COMPOSITE_MAX_ATTRS];
  int32_t n = mx_comp_mla_write(c->m, &a, attrs);
  int32_t ops[6] = {q_nope, q_rot, latent_cache, rot_cache, kv_b, pos0};
  return mx_comp_call(c, b, MX_COMPOSITE_MLA, ops, 6, attrs, n, key, build_mla, &p, out);
}
