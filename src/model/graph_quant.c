// Quantized weights in the graph builders: which linear / embedding weights a checkpoint holds
// quantized (mx_wlist_resolve_quant) and the linear-layer dispatch (mx_gq_linear).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph_internal.h"
#include "model/quant_internal.h"

static mx_status_t append_param(mx_wlist_t *wl, const char *name, const mx_weight_t *t,
                                int32_t *idx) {
  if (wl->n == wl->cap) {
    int32_t cap = wl->cap ? 2 * wl->cap : 64;
    mx_wspec_t *w = realloc(wl->w, sizeof *w * (size_t)cap);
    if (w == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    wl->w = w;
    wl->cap = cap;
  }
  mx_wspec_t *s = &wl->w[wl->n];
  memset(s, 0, sizeof *s);
  s->name = strdup(name);
  if (s->name == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  s->rank = 2;
  s->dims[0] = t->dims[0];
  s->dims[1] = t->dims[1];
  s->kind = MX_WK_QPARAM;
  s->qscales = s->qbiases = -1;
  *idx = wl->n++;
  return MX_OK;
}

static bool float_type(mx_elem_type_t et) {
  return et == MX_ELEM_F32 || et == MX_ELEM_F16 || et == MX_ELEM_BF16;
}

static mx_status_t bad(const char *name, const char *what) {
  return mx_error_set(MX_ERR_INVALID_ARG, "checkpoint: quantized tensor \"%s\": %s", name, what);
}

// Records spec i as stored in `mode` with scales spec si (biases -1).
static void record(mx_wlist_t *wl, int32_t i, int32_t mode, int32_t bits, int64_t group,
                   int64_t stored_k, int32_t si, int32_t bj) {
  mx_wspec_t *s = &wl->w[i];
  s->qn = s->dims[0];
  s->qk = s->dims[1];
  s->qmode = mode;
  s->qbits = bits;
  s->qgroup = (int32_t)group;
  s->qscales = si;
  s->qbiases = bj;
  s->dims[1] = stored_k;
}

// MXFP4 (composite.h): w u8 [N, K / 2], scales u8 [N, K / 32], no biases; experts only (mx.moe
// is the one composite that reads it).
static mx_status_t resolve_mxfp4(mx_wlist_t *wl, int32_t i, const mx_weight_t *w,
                                 const mx_weight_t *sc, const mx_weight_t *bi, const char *sn) {
  const char *name = wl->w[i].name;
  int64_t N = wl->w[i].dims[0], K = wl->w[i].dims[1];
  char msg[480];
  if (wl->w[i].kind != MX_WK_EXPERT)
    return bad(name, "MXFP4 (u8 blocks) is read for mixture-of-experts experts only");
  if (K % 32 != 0 || w->dims[1] != K / 2 || sc->dtype != MX_ELEM_UI8 || sc->rank != 2 ||
      sc->dims[0] != N || sc->dims[1] != K / 32 || bi != NULL) {
    snprintf(msg, sizeof msg,
             "MXFP4 needs u8 blocks [%lld, %lld] and u8 (e8m0) %s [%lld, %lld], no biases",
             (long long)N, (long long)(K / 2), sn, (long long)N, (long long)(K / 32));
    return bad(name, msg);
  }
  mx_weight_t sct = *sc;
  int32_t si = -1;
  MX_TRY(append_param(wl, sn, &sct, &si));
  record(wl, i, MX_Q_MXFP4, 4, 32, K / 2, si, -1);
  return MX_OK;
}

// Validates the stored form of spec i (logical [N, K]) and records it.
static mx_status_t resolve_one(mx_wlist_t *wl, int32_t i, const mx_checkpoint_t *ck,
                               const char *base) {
  char sn[300], bn[300], msg[480];
  snprintf(sn, sizeof sn, "%.280s.scales", base);
  snprintf(bn, sizeof bn, "%.280s.biases", base);
  const mx_weight_t *w = mx_checkpoint_find(ck, wl->w[i].name);
  const mx_weight_t *sc = mx_checkpoint_find(ck, sn);
  const mx_weight_t *bi = mx_checkpoint_find(ck, bn);
  const char *name = wl->w[i].name;
  int64_t N = wl->w[i].dims[0], K = wl->w[i].dims[1];
  if (w == NULL) return MX_OK;  // check_list names the missing tensor
  if (w->rank != 2 || w->dims[0] != N) {
    snprintf(msg, sizeof msg, "needs %lld rows (the config's shape is [%lld, %lld])", (long long)N,
             (long long)N, (long long)K);
    return bad(name, msg);
  }
  if (w->dtype == MX_ELEM_UI8) return resolve_mxfp4(wl, i, w, sc, bi, sn);
  if (sc->rank != 2 || sc->dims[0] != N || sc->dims[1] <= 0 || K % sc->dims[1] != 0 ||
      !float_type(sc->dtype)) {
    snprintf(msg, sizeof msg,
             "%s must be f32/f16/bf16 [%lld, G] with G dividing %lld (one scale per group)", sn,
             (long long)N, (long long)K);
    return bad(name, msg);
  }
  int32_t mode, bits;
  if (w->dtype == MX_ELEM_I8) {
    mode = MX_Q_INT8;
    bits = 8;
    if (w->dims[1] != K) return bad(name, "an i8 weight must have the logical shape [N, K]");
    if (bi) return bad(name, "int8 (symmetric) weights have no biases");
  } else if (w->dtype == MX_ELEM_UI32) {
    if (32 * w->dims[1] % K != 0 || (32 * w->dims[1] / K != 4 && 32 * w->dims[1] / K != 8)) {
      snprintf(msg, sizeof msg,
               "packed width %lld for K = %lld is not 4-bit (K / 8) or 8-bit (K / 4) packing",
               (long long)w->dims[1], (long long)K);
      return bad(name, msg);
    }
    bits = (int32_t)(32 * w->dims[1] / K);
    mode = bi ? MX_Q_AFFINE : MX_Q_INT4;
    if (!bi && bits != 4) return bad(name, "8-bit packed weights need biases (MLX affine)");
    if (bi && (bi->rank != 2 || bi->dims[0] != sc->dims[0] || bi->dims[1] != sc->dims[1] ||
               bi->dtype != sc->dtype)) {
      return bad(name, "biases must have the type and shape of the scales");
    }
  } else {
    snprintf(msg, sizeof msg, "dtype %s (quantized weights are i8 or packed u32)",
             mx_elem_name(w->dtype));
    return bad(name, msg);
  }
  int64_t group = K / sc->dims[1];
  mx_weight_t sct = *sc, bit;
  if (bi) bit = *bi;
  int32_t si = -1, bj = -1;
  MX_TRY(append_param(wl, sn, &sct, &si));
  if (bi) MX_TRY(append_param(wl, bn, &bit, &bj));
  record(wl, i, mode, bits, group, w->dims[1], si, bj);
  return MX_OK;
}

static const char *format_name(const mx_wspec_t *s, char *buf, size_t cap) {
  static const char *const kModes[] = {"float", "int8", "int4", "affine", "mxfp4"};
  if (!s->qmode) return "float";
  snprintf(buf, cap, "%s %d-bit in groups of %d", kModes[s->qmode], s->qbits, s->qgroup);
  return buf;
}

// mx.moe takes one format for all the experts of a layer: every run of expert specs (one
// layer's, after its router) must share the first one's.
static mx_status_t check_experts(const mx_wlist_t *wl) {
  int32_t first = -1;
  for (int32_t i = 0; i < wl->n; i++) {
    const mx_wspec_t *s = &wl->w[i];
    if (s->kind != MX_WK_EXPERT) {
      first = -1;
      continue;
    }
    if (first < 0) first = i;
    const mx_wspec_t *f = &wl->w[first];
    if (s->qmode != f->qmode || s->qbits != f->qbits || s->qgroup != f->qgroup) {
      char a[64], b[64];
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "checkpoint: the experts of one layer must share one format: %s is %s, "
                          "%s is %s",
                          f->name, format_name(f, a, sizeof a), s->name,
                          format_name(s, b, sizeof b));
    }
  }
  return MX_OK;
}

mx_status_t mx_wlist_resolve_quant(mx_wlist_t *wl, const mx_checkpoint_t *ck) {
  int32_t n0 = wl->n;
  for (int32_t i = 0; i < n0; i++) {
    const mx_wspec_t *s = &wl->w[i];
    if (s->qmode) continue;
    size_t len = strlen(s->name);
    if (len <= 7 || len > 280 || strcmp(s->name + len - 7, ".weight") != 0) continue;
    char base[300], sn[300];
    snprintf(base, sizeof base, "%.*s", (int)(len - 7), s->name);
    snprintf(sn, sizeof sn, "%.280s.scales", base);
    if (mx_checkpoint_find(ck, sn) == NULL) continue;
    // Stored quantized where the graph reads floats only (a norm): say so, rather than fail
    // later on the packed tensor's shape. Gates are dequantized at load (mx_quant_apply).
    if ((s->kind != MX_WK_LINEAR && s->kind != MX_WK_EMBED && s->kind != MX_WK_EXPERT &&
         s->kind != MX_WK_GATE) ||
        s->rank != 2) {
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "checkpoint: %s is stored quantized (%s is present); this model's graph "
                          "reads it only unquantized",
                          s->name, sn);
    }
    MX_TRY(resolve_one(wl, i, ck, base));
  }
  return check_experts(wl);
}

bool mx_gq_is_quant(const mx_wlist_t *wl, int32_t wi) { return wi >= 0 && wl->w[wi].qmode != 0; }

static mx_status_t slice_rows(mx_builder_t *b, int32_t x, int64_t row0, int64_t rows,
                              int32_t *out) {
  const mx_type_t *t = mx_build_type(b, x);
  int64_t lo[2] = {row0, 0}, hi[2] = {row0 + rows, t->dims[1]};
  return mx_build_slice(b, x, lo, hi, NULL, 2, out);
}

mx_status_t mx_gq_linear(mx_comp_ctx_t *c, mx_builder_t *b, const mx_wlist_t *wl, const int32_t *w,
                         int32_t wi, int32_t x, int64_t row0, int64_t rows, int32_t *out) {
  const mx_wspec_t *s = &wl->w[wi];
  int32_t wt = w[wi];
  if (!s->qmode) {
    if (rows >= 0) MX_TRY(slice_rows(b, wt, row0, rows, &wt));
    return mx_g_linear(b, x, wt, out);
  }
  int32_t sc = w[s->qscales], bi = s->qbiases >= 0 ? w[s->qbiases] : -1;
  mx_wspec_t sub = *s;
  if (rows >= 0) {  // rows of a fused projection: whole rows of every stored tensor
    MX_TRY(slice_rows(b, wt, row0, rows, &wt));
    MX_TRY(slice_rows(b, sc, row0, rows, &sc));
    if (bi >= 0) MX_TRY(slice_rows(b, bi, row0, rows, &bi));
    sub.qn = rows;
  }
  return mx_comp_linear_q(c, b, &sub, x, wt, sc, bi, out);
}
