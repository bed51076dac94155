// The loader's precision pass: which element type each weight is resident in, chosen once at
// load (mx_model_load_opts_t), and the conversions (round to nearest even, src/base/half.h).
//
// Roles: a "matmul" weight is the right-hand side of a linear layer (attention and MLP
// projections, the LM head, hence a tied embedding): resident in the precision, so the graph
// (graph_ops.c, mx_g_linear) feeds its dot_general f16/bf16 inputs. Norm weights and biases are
// made f32 (they are small, and norms and residuals stay f32). An untied embedding keeps the
// checkpoint's type: a gather reads one row per token, its bytes do not matter, and converting
// would change the values the model was trained with for no gain. So does any other table only a
// gather reads (MX_WK_TABLE: Gemma 3n's per-layer embeddings, which outweigh all its matrices and
// would double as f32). Quantized layers (integer storage, src/model/quant_load.c, which runs
// first) are left to the quantization pass.
// A vision tower keeps its matrices as the checkpoint has them; its norm weights and biases
// (rank 1) are made f32 too: the fused norm kernels take f32 weights, and a bf16 checkpoint's
// norms otherwise ran as their decompositions on the interpreter.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/half.h"
#include "model/audio_internal.h"
#include "model/checkpoint_internal.h"
#include "model/graph_internal.h"
#include "model/vision_internal.h"

mx_status_t mx_precision_parse(const char *s, const char *what, mx_elem_type_t *out) {
  static const struct {
    const char *name;
    mx_elem_type_t et;
  } names[] = {{"f32", MX_ELEM_F32},     {"float32", MX_ELEM_F32}, {"f16", MX_ELEM_F16},
               {"float16", MX_ELEM_F16}, {"bf16", MX_ELEM_BF16},   {"bfloat16", MX_ELEM_BF16}};
  for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++) {
    if (strcasecmp(s, names[i].name) == 0) {
      *out = names[i].et;
      return MX_OK;
    }
  }
  return mx_error_set(MX_ERR_INVALID_ARG, "%s: '%s' is not a precision (f32, f16 or bf16)",
                      what ? what : "precision", s ? s : "(null)");
}

typedef enum wrole { ROLE_MATMUL, ROLE_SMALL, ROLE_EMBED, ROLE_KEEP } wrole_t;

// The weights of the architecture with their roles (roles[i] for wl->w[i]), by the weight list's
// kinds: linear layers (and a tied embedding, the head's weight) are matmul weights, norms and
// biases small ones; anything else is left as it is.
static mx_status_t weight_roles(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                mx_wlist_t *wl, wrole_t **roles) {
  mx_arch_t a;
  memset(wl, 0, sizeof *wl);
  *roles = NULL;
  MX_TRY(mx_arch_from_config(cfg, &a));
  mx_arch_resolve_names(&a, ck);
  mx_status_t st = mx_arch_weights(&a, wl);
  mx_arch_free(&a);
  if (st != MX_OK) return st;
  wrole_t *r = malloc(sizeof *r * (size_t)(wl->n > 0 ? wl->n : 1));
  if (!r) {
    mx_wlist_free(wl);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; i < wl->n; i++) {
    switch (wl->w[i].kind) {
      case MX_WK_LINEAR:
      case MX_WK_EXPERT:
        r[i] = ROLE_MATMUL;
        break;
      case MX_WK_EMBED:
        r[i] = ROLE_EMBED;
        break;
      case MX_WK_OTHER:
      case MX_WK_GATE:
        r[i] = ROLE_SMALL;
        break;
      case MX_WK_TABLE:  // gathered rows are made f32 in the graph: exact from any float type
        r[i] = ROLE_KEEP;
        break;
      default:
        r[i] = ROLE_KEEP;
        break;
    }
  }
  r[wl->head] = ROLE_MATMUL;  // the LM head (the embedding when tied)
  *roles = r;
  return MX_OK;
}

// Quantized weights (integer storage) are not the precision pass's.
static bool is_float3(mx_elem_type_t et) {
  return et == MX_ELEM_F32 || et == MX_ELEM_F16 || et == MX_ELEM_BF16;
}

mx_status_t mx_model_auto_precision(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                    mx_elem_type_t *out) {
  mx_wlist_t wl;
  wrole_t *roles;
  MX_TRY(weight_roles(cfg, ck, &wl, &roles));
  double n32 = 0, n16 = 0, nb16 = 0;
  for (int32_t i = 0; i < wl.n; i++) {
    const mx_weight_t *w = mx_checkpoint_find(ck, wl.w[i].name);
    if (roles[i] != ROLE_MATMUL || !w) continue;
    // Logical [N, K] elements. A quantized weight counts as f32: its layer computes in f32 (the
    // mx.linear decomposition dequantizes to f32), so the float layers an MLX checkpoint leaves
    // in f16 run f32 beside it.
    double numel = (double)wl.w[i].dims[0] * (double)(wl.w[i].rank > 1 ? wl.w[i].dims[1] : 1);
    if (w->dtype == MX_ELEM_F16) {
      n16 += numel;
    } else if (w->dtype == MX_ELEM_BF16) {
      nb16 += numel;
    } else {
      n32 += numel;
    }
  }
  free(roles);
  mx_wlist_free(&wl);
  *out = nb16 > n32 && nb16 >= n16 ? MX_ELEM_BF16 : n16 > n32 ? MX_ELEM_F16 : MX_ELEM_F32;
  return MX_OK;
}

// A new buffer holding w's values as `to` (RNE). Converting to f16, a finite value that would
// overflow to infinity is an error naming the tensor.
static mx_status_t convert_weight(const mx_weight_t *w, mx_elem_type_t to, void **out) {
  size_t n = w->nbytes / mx_elem_size(w->dtype), nb = n * mx_elem_size(to);
  size_t cap = (nb + 63) / 64 * 64;
  void *dst = aligned_alloc(64, cap > 0 ? cap : 64);
  if (!dst) {
    return mx_error_set(MX_ERR_NOMEM, "out of memory converting '%s' to %s (%zu bytes)", w->name,
                        mx_elem_name(to), nb);
  }
  const void *src = w->data;
  if (to == MX_ELEM_F32) {
    if (w->dtype == MX_ELEM_BF16) {
      mx_half_bf16_to_f32(src, dst, n);
    } else {
      mx_half_f16_to_f32(src, dst, n);
    }
  } else {
    // Through f32 (exact from any of the three), in blocks so the staging buffer stays small.
    enum { BLK = 4096 };
    float tmp[BLK];
    for (size_t i = 0; i < n; i += BLK) {
      size_t m = n - i < BLK ? n - i : BLK;
      const float *f = tmp;
      if (w->dtype == MX_ELEM_F32) {
        f = (const float *)src + i;
      } else if (w->dtype == MX_ELEM_BF16) {
        mx_half_bf16_to_f32((const uint16_t *)src + i, tmp, m);
      } else {
        mx_half_f16_to_f32((const uint16_t *)src + i, tmp, m);
      }
      uint16_t *d = (uint16_t *)dst + i;
      if (to == MX_ELEM_BF16) {
        mx_half_f32_to_bf16(f, d, m);
        continue;
      }
      mx_half_f32_to_f16(f, d, m);
      for (size_t j = 0; j < m; j++) {
        if ((d[j] & 0x7fffu) == 0x7c00u && isfinite(f[j])) {
          float v = f[j];
          free(dst);
          return mx_error_set(MX_ERR_UNSUPPORTED,
                              "precision f16: tensor '%s' holds %g at element %zu, beyond the f16 "
                              "range (|x| <= 65504): use bf16 or f32",
                              w->name, (double)v, i + j);
        }
      }
    }
  }
  *out = dst;
  return MX_OK;
}

mx_status_t mx_model_apply_precision(const mx_model_config_t *cfg, mx_checkpoint_t *ck,
                                     mx_elem_type_t precision) {
  return mx_precision_apply(cfg, ck, precision, NULL);
}

// The type weight w of role `role` is resident in at `precision`.
static mx_elem_type_t resident_type(wrole_t role, const mx_weight_t *w, mx_elem_type_t precision) {
  return role == ROLE_MATMUL ? precision : role == ROLE_SMALL ? MX_ELEM_F32 : w->dtype;
}

// The vision or audio tower's rank-1 tensors (norm weights, biases, Gemma 3n's per-dimension
// scales) to f32: the fused norm kernels take f32 weights.
static mx_status_t tower_small_f32(const mx_model_config_t *cfg, mx_checkpoint_t *ck, bool audio) {
  mx_vlist_t l;
  mx_status_t st = audio ? mx_audio_list(cfg, &l) : mx_vision_list(cfg, ck, &l);
  for (int32_t i = 0; st == MX_OK && i < l.n; i++) {
    const mx_weight_t *w = mx_checkpoint_find(ck, l.w[i].name);
    if (!w || w->rank != 1 || w->dtype == MX_ELEM_F32 || !is_float3(w->dtype)) continue;
    void *data = NULL;
    char name[MX_VISION_MAX_NAME];
    snprintf(name, sizeof name, "%s", l.w[i].name);
    int64_t dim = w->dims[0];
    st = convert_weight(w, MX_ELEM_F32, &data);
    if (st == MX_OK) st = mx_checkpoint_put(ck, name, MX_ELEM_F32, 1, &dim, data);
  }
  mx_vlist_free(&l);
  return st;
}

mx_status_t mx_precision_apply(const mx_model_config_t *cfg, mx_checkpoint_t *ck,
                               mx_elem_type_t precision, const mx_progress_t *progress) {
  if (precision != MX_ELEM_F32 && precision != MX_ELEM_F16 && precision != MX_ELEM_BF16) {
    return mx_error_set(MX_ERR_INVALID_ARG, "precision %s: f32, f16 or bf16 needed",
                        mx_elem_name(precision));
  }
  mx_wlist_t wl;
  wrole_t *roles;
  MX_TRY(weight_roles(cfg, ck, &wl, &roles));
  // The bytes to convert first, for the progress reports.
  uint64_t total = 0, done = 0;
  for (int32_t i = 0; i < wl.n; i++) {
    const mx_weight_t *w = mx_checkpoint_find(ck, wl.w[i].name);
    if (w && w->dtype != resident_type(roles[i], w, precision) && is_float3(w->dtype))
      total += w->nbytes;
  }
  if (total) mx_progress_report(progress, "converting", 0, total);
  mx_status_t st = MX_OK;
  for (int32_t i = 0; i < wl.n && st == MX_OK; i++) {
    const mx_weight_t *w = mx_checkpoint_find(ck, wl.w[i].name);
    if (!w) continue;  // mx_model_check_weights reports it
    mx_elem_type_t want = resident_type(roles[i], w, precision);
    if (w->dtype == want || !is_float3(w->dtype)) continue;
    void *data = NULL;
    done += w->nbytes;  // (w points into the checkpoint's table, which the put below rewrites)
    st = convert_weight(w, want, &data);
    // The checkpoint owns the converted copy and releases the mmapped original's pages.
    if (st == MX_OK) st = mx_checkpoint_put(ck, wl.w[i].name, want, w->rank, w->dims, data);
    if (st == MX_OK) mx_progress_report(progress, "converting", done, total);
  }
  free(roles);
  mx_wlist_free(&wl);
  if (st == MX_OK) st = tower_small_f32(cfg, ck, false);
  return st == MX_OK ? tower_small_f32(cfg, ck, true) : st;
}

// An explicit choice, else `dflt`.
static mx_status_t resolve_type(mx_elem_type_t given, const char *what, mx_elem_type_t dflt,
                                mx_elem_type_t *out) {
  if (given != MX_ELEM_INVALID) {
    if (given != MX_ELEM_F32 && given != MX_ELEM_F16 && given != MX_ELEM_BF16) {
      return mx_error_set(MX_ERR_INVALID_ARG, "%s %s: f32, f16 or bf16 needed", what,
                          mx_elem_name(given));
    }
    *out = given;
    return MX_OK;
  }
  *out = dflt;
  return MX_OK;
}

mx_status_t mx_model_resolve_precision(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                       const mx_model_load_opts_t *opts, mx_elem_type_t *precision,
                                       mx_elem_type_t *kv_dtype) {
  mx_elem_type_t autop;
  MX_TRY(mx_model_auto_precision(cfg, ck, &autop));
  MX_TRY(resolve_type(opts ? opts->precision : MX_ELEM_INVALID, "precision", autop, precision));
  return resolve_type(opts ? opts->kv_dtype : MX_ELEM_INVALID, "KV dtype", *precision, kv_dtype);
}
