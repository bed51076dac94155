// Pieces the vision towers share (vision_internal.h): their weight lists, the @vision function's
// arguments, LayerNorm / RMSNorm, linears, activations and full attention over a segment.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/vision_internal.h"

mx_status_t mx_vlist_add(mx_vlist_t *l, int32_t *idx, const char *prefix, const char *name,
                         int32_t rank, const int64_t *dims) {
  if (l->n == l->cap) {
    int32_t cap = l->cap ? 2 * l->cap : 64;
    mx_vspec_t *w = realloc(l->w, sizeof *w * (size_t)cap);
    if (w == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    l->w = w;
    l->cap = cap;
  }
  mx_vspec_t *s = &l->w[l->n];
  if ((size_t)snprintf(s->name, sizeof s->name, "%s%s", prefix, name) >= sizeof s->name)
    return mx_error_set(MX_ERR_INVALID_ARG, "vision tensor name %s%s is too long", prefix, name);
  s->rank = rank;
  memcpy(s->dims, dims, sizeof(int64_t) * (size_t)rank);
  *idx = l->n++;
  return MX_OK;
}

void mx_vlist_free(mx_vlist_t *l) {
  free(l->w);
  memset(l, 0, sizeof *l);
}

mx_status_t mx_vlist_check(const mx_vlist_t *l, const mx_checkpoint_t *ck) {
  for (int32_t i = 0; i < l->n; i++) {
    const mx_vspec_t *s = &l->w[i];
    const mx_weight_t *t = mx_checkpoint_find(ck, s->name);
    if (t == NULL) {
      return mx_error_set(MX_ERR_INVALID_ARG, "checkpoint: missing vision tensor \"%s\"", s->name);
    }
    mx_type_t want = mx_type_tensor(t->dtype, s->rank, s->dims);
    mx_type_t got = mx_type_tensor(t->dtype, t->rank, t->dims);
    if (!mx_type_equal(&want, &got)) {
      char a[64], b[64];
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "checkpoint: tensor \"%s\" has shape %s, the vision config needs %s",
                          s->name, mx_type_str(&got, a, sizeof a), mx_type_str(&want, b, sizeof b));
    }
    if (t->dtype != MX_ELEM_F32 && t->dtype != MX_ELEM_F16 && t->dtype != MX_ELEM_BF16) {
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "checkpoint: vision tensor \"%s\" has dtype %s (f32, f16 or bf16 needed)",
                          s->name, mx_elem_name(t->dtype));
    }
  }
  return MX_OK;
}

const char *mx_vision_pick_prefix(const mx_checkpoint_t *ck, const char *const *prefixes, size_t n,
                                  const char *probe) {
  if (ck == NULL) return prefixes[0];  // a checkpoint being written takes the first layout
  for (size_t i = 0; i < n; i++) {
    char name[MX_VISION_MAX_NAME];
    snprintf(name, sizeof name, "%s%s", prefixes[i], probe);
    if (mx_checkpoint_find(ck, name) != NULL) return prefixes[i];
  }
  return prefixes[0];
}

mx_status_t mx_vision_func(mx_comp_ctx_t *cc, const mx_vlist_t *l, const mx_checkpoint_t *ck,
                           const mx_type_t *input, mx_builder_t *b, int32_t **arg) {
  return mx_vision_func_n(cc, l, ck, input, 1, b, arg);
}

mx_status_t mx_vision_func_n(mx_comp_ctx_t *cc, const mx_vlist_t *l, const mx_checkpoint_t *ck,
                             const mx_type_t *inputs, int32_t n_inputs, mx_builder_t *b,
                             int32_t **arg) {
  int32_t nw = l->n, n_args = nw + n_inputs;
  mx_type_t *types = calloc((size_t)n_args, sizeof *types);
  *arg = malloc(sizeof **arg * (size_t)n_args);
  if (types == NULL || *arg == NULL) {
    free(types);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; i < nw; i++) {
    const mx_vspec_t *s = &l->w[i];
    types[i] = mx_type_tensor(mx_checkpoint_find(ck, s->name)->dtype, s->rank, s->dims);
  }
  for (int32_t i = 0; i < n_inputs; i++) types[nw + i] = inputs[i];
  mx_func_t *f;
  mx_status_t st = mx_build_func(cc->m, "vision", false, types, n_args, &f, b, *arg);
  free(types);
  for (int32_t i = 0; st == MX_OK && i < nw; i++)
    st = mx_graph_set_arg_attrs(f, i, "weight", l->w[i].name);
  if (st == MX_OK) st = mx_graph_set_arg_attrs(f, nw, "pixels", "pixels");
  if (st == MX_OK && n_inputs > 1) st = mx_graph_set_arg_attrs(f, nw + 1, "pooling", "pooling");
  return st;
}

mx_status_t mx_vision_norm(mx_comp_ctx_t *cc, mx_builder_t *b, int32_t x, int32_t w, int32_t bias,
                           bool center, double eps, int32_t *out) {
  int32_t xc = x;
  if (center) MX_TRY(mx_g_center(b, x, &xc));
  MX_TRY(mx_comp_rms_norm(cc, b, xc, w, eps, 0.0, out));
  return bias >= 0 ? mx_g_add_bias(b, *out, bias, out) : MX_OK;
}

mx_status_t mx_vision_linear(mx_builder_t *b, int32_t x, int32_t w, int32_t bias, int32_t *out) {
  MX_TRY(mx_g_linear(b, x, w, out));
  return bias >= 0 ? mx_g_add_bias(b, *out, bias, out) : MX_OK;
}

mx_status_t mx_vision_act(mx_builder_t *b, const char *act, int32_t x, int32_t *out) {
  if (strcmp(act, "gelu_tanh") == 0) return mx_g_gelu_tanh(b, x, out);
  int32_t k, kx, s;
  if (strcmp(act, "gelu_pytorch_tanh") == 0) return mx_g_gelu_tanh(b, x, out);
  bool quick = strcmp(act, "quick_gelu") == 0;
  if (quick || strcmp(act, "silu") == 0) {
    kx = x;
    if (quick) {
      MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 1.702, x, &k));
      MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, x, k, &kx));
    }
    MX_TRY(mx_build_unary(b, MX_OP_LOGISTIC, kx, &s));
    return mx_build_binary(b, MX_OP_MULTIPLY, x, s, out);
  }
  int32_t r, xr, e, one, half, t, h;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, M_SQRT1_2, x, &r));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, x, r, &xr));
  MX_TRY(mx_g_erf(b, xr, &e));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 1.0, x, &one));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.5, x, &half));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, e, one, &t));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, x, half, &h));
  return mx_build_binary(b, MX_OP_MULTIPLY, h, t, out);
}

mx_status_t mx_vision_attention(mx_comp_ctx_t *cc, mx_builder_t *b, int32_t q, int32_t k, int32_t v,
                                int32_t *out) {
  mx_type_t qt = *mx_build_type(b, q);
  int64_t N = qt.dims[1], Hh = qt.dims[2], Dh = qt.dims[3], one = 1;
  int64_t perm[4] = {0, 2, 1, 3}, od[3] = {1, N, Hh * Dh};
  mx_type_t pt = mx_type_tensor(MX_ELEM_I32, 1, &one);
  int32_t kc, vc, p0, att;
  MX_TRY(mx_build_transpose(b, k, perm, 4, &kc));
  MX_TRY(mx_build_transpose(b, v, perm, 4, &vc));
  MX_TRY(mx_build_splat(b, &pt, (double)(N - 1), &p0));
  MX_TRY(mx_comp_attention(cc, b, q, kc, vc, p0, 1.0 / sqrt((double)Dh), 0, 0.0, &att));
  return mx_build_reshape(b, att, od, 3, out);
}
