// Gemma 3n's layer loop on the shared core (transformers' Gemma3nTextModel), plain StableHLO
// around the core's composites (norms, attention, RoPE, the gated activation):
//   per-layer inputs: (rms_norm(per_layer_model_projection(x) / sqrt(H)) + embed_tokens_per_layer
//     (token, ids past its table read row 0) x sqrt(P)) / sqrt(2), one [B, T, P] slice per layer;
//   AltUp streams: x and altup_projections[i](x) rescaled to x's RMS;
//   each layer: predict (stream i += sum_j s_j c_ij, c from tanh(router(norm(active) / H))),
//     the active prediction through input norm, Laurel (h + norm(right(left(h)))), attention,
//     MLP (the gaussian top-k on the gate where the layer is sparse) with their sandwich norms,
//     then correct (s_i = pred_i + (out - pred_active) (1 + c'_i)) and the gated per-layer input
//     added to every stream but the first;
//   out: the mean of stream 0 and altup_unembed_projections[i](s_i) rescaled to stream 0's RMS.
// Every weight keeps its checkpoint name; the extra ones are listed by mx_gemma3n_weights.
// model_type gemma3n embeds the ids of the vision and audio vocabularies (from
// mm_embed[].offset on; <start_of_audio> is text, <end_of_audio> and the audio soft token are
// audio ids) with embed_vision / embed_audio's hard path instead of the text table, as
// Gemma3nModel.forward does, before the per-layer inputs read the embeddings.
#include <math.h>
#include <stdio.h>

#include "model/graph_internal.h"

enum { kMaxStreams = 16 };  // gemma3n.c refuses more

// ---- weights ----

// Per-layer (layer >= 0) or model-level (-1) tensor suffix, shape [d0] or [d0, d1].
typedef struct extra {
  const char *suffix;
  int32_t rank;
  char d0, d1;  // 'H' hidden, 'P' per-layer input, 'R' laurel rank, 'N' streams, 'M' N^2,
                // 'L' layers x P, 'V' per-layer vocab
  mx_wkind_t kind;
} extra_t;

static const extra_t kLayerExtras[] = {
    {"altup.correct_output_scale", 1, 'H', 0, MX_WK_OTHER},
    {"altup.correction_coefs.weight", 2, 'N', 'N', MX_WK_OTHER},
    {"altup.prediction_coefs.weight", 2, 'M', 'N', MX_WK_OTHER},
    {"altup.modality_router.weight", 2, 'N', 'H', MX_WK_OTHER},
    {"altup.router_norm.weight", 1, 'H', 0, MX_WK_OTHER},
    {"laurel.linear_left.weight", 2, 'R', 'H', MX_WK_LINEAR},
    {"laurel.linear_right.weight", 2, 'H', 'R', MX_WK_LINEAR},
    {"laurel.post_laurel_norm.weight", 1, 'H', 0, MX_WK_OTHER},
    {"per_layer_input_gate.weight", 2, 'P', 'H', MX_WK_LINEAR},
    {"per_layer_projection.weight", 2, 'H', 'P', MX_WK_LINEAR},
    {"post_per_layer_input_norm.weight", 1, 'H', 0, MX_WK_OTHER},
};
enum {
  kCorrectScale,
  kCorrectionCoefs,
  kPredictionCoefs,
  kRouter,
  kRouterNorm,
  kLaurelLeft,
  kLaurelRight,
  kLaurelNorm,
  kPliGate,
  kPliProj,
  kPliNorm,
  kNumLayerExtras
};

static int64_t extent(const mx_arch_t *a, char d) {
  const mx_model_config_t *cfg = a->cfg;
  int64_t n = cfg->altup_num_inputs, p = cfg->hidden_size_per_layer_input;
  switch (d) {
    case 'H':
      return a->hidden;
    case 'P':
      return p;
    case 'R':
      return cfg->laurel_rank;
    case 'N':
      return n;
    case 'M':
      return n * n;
    case 'L':
      return (int64_t)a->n_layers * p;
    case 'V':
      return cfg->vocab_size_per_layer_input;
    default:
      return 0;
  }
}

static mx_status_t add_extra(const mx_arch_t *a, mx_wlist_t *wl, int32_t layer, const extra_t *e) {
  int32_t idx;
  return mx_wlist_add(wl, a, &idx, e->rank, extent(a, e->d0), extent(a, e->d1), layer, e->suffix,
                      e->kind);
}

// The ids [*lo, *hi) of the text vocabulary that multimodal embedder i embeds (none: hi <= lo).
static void mm_range(const mx_model_config_t *cfg, int32_t i, int64_t *lo, int64_t *hi) {
  const mx_mm_embed_t *e = &cfg->mm_embed[i], *next = &cfg->mm_embed[MX_MM_AUDIO];
  *lo = e->offset;
  *hi = e->vocab > 0 ? cfg->vocab_size : *lo;
  if (i == MX_MM_VISION && next->vocab > 0 && next->offset < *hi) *hi = next->offset;
}

static const char *const kMmPrefix[MX_MM_EMBEDS] = {"model.embed_vision.", "model.embed_audio."};
enum { kMmTable, kMmNorm, kMmProj, kMmTensors };
static const char *const kMmNames[kMmTensors] = {"embedding.weight", "hard_embedding_norm.weight",
                                                 "embedding_projection.weight"};

static void mm_name(int32_t i, int32_t k, char *buf, size_t n) {
  snprintf(buf, n, "%s%s", kMmPrefix[i], kMmNames[k]);
}

// Embedder i's tensors appended to wl.
static mx_status_t mm_add(const mx_arch_t *a, mx_wlist_t *wl, int32_t i) {
  const mx_mm_embed_t *e = &a->cfg->mm_embed[i];
  const int64_t d0[kMmTensors] = {e->vocab, e->hidden, a->hidden};
  const int64_t d1[kMmTensors] = {e->hidden, 0, e->hidden};
  const int32_t rank[kMmTensors] = {2, 1, 2};
  const mx_wkind_t kind[kMmTensors] = {MX_WK_TABLE, MX_WK_OTHER, MX_WK_LINEAR};
  for (int32_t k = 0; k < kMmTensors; k++) {
    char name[96];
    int32_t idx;
    mm_name(i, k, name, sizeof name);
    MX_TRY(mx_wlist_add(wl, a, &idx, rank[k], d0[k], d1[k], -2, name, kind[k]));
  }
  return MX_OK;
}

// Embedder i's tensors' indices in wl, idx[kMmTensors].
static mx_status_t mm_find(const mx_wlist_t *wl, int32_t i, int32_t *idx) {
  for (int32_t k = 0; k < kMmTensors; k++) {
    char name[96];
    mm_name(i, k, name, sizeof name);
    if ((idx[k] = mx_wlist_find(wl, name)) < 0)
      return mx_error_set(MX_ERR_INVALID_ARG, "graph: no weight \"%s\" listed", name);
  }
  return MX_OK;
}

mx_status_t mx_gemma3n_weights(const mx_arch_t *a, struct mx_wlist *wl) {
  for (int32_t i = 0; i < MX_MM_EMBEDS; i++) {
    int64_t lo, hi;
    mm_range(a->cfg, i, &lo, &hi);
    if (lo < hi) MX_TRY(mm_add(a, wl, i));
  }
  for (int32_t l = 0; l < a->n_layers; l++)
    for (int32_t k = 0; k < kNumLayerExtras; k++) MX_TRY(add_extra(a, wl, l, &kLayerExtras[k]));
  static const extra_t kModel[] = {
      {"embed_tokens_per_layer.weight", 2, 'V', 'L', MX_WK_TABLE},
      {"per_layer_model_projection.weight", 2, 'L', 'H', MX_WK_LINEAR},
      {"per_layer_projection_norm.weight", 1, 'P', 0, MX_WK_OTHER},
  };
  for (size_t k = 0; k < sizeof kModel / sizeof kModel[0]; k++)
    MX_TRY(add_extra(a, wl, -1, &kModel[k]));
  for (int32_t pass = 0; pass < 2; pass++) {
    for (int32_t i = 1; i < a->cfg->altup_num_inputs; i++) {
      char s[64];
      snprintf(s, sizeof s, "%s.%d.weight",
               pass ? "altup_unembed_projections" : "altup_projections", i - 1);
      extra_t e = {s, 2, 'H', 'H', MX_WK_LINEAR};
      MX_TRY(add_extra(a, wl, -1, &e));
    }
  }
  return MX_OK;
}

// ---- building ----

typedef struct g3n {
  mx_core_t *c;
  mx_builder_t *b;
  const mx_arch_t *a;
  int32_t n;                    // streams
  int32_t s[kMaxStreams];       // their current values [B, T, H] f32
  int32_t pli;                  // per-layer inputs [B, T, L, P] f32
  int32_t li[kNumLayerExtras];  // this layer's extra weights (indices in the list)
} g3n_t;

// Index of the weight named prefix + (layer >= 0: "layers.<layer>.") + suffix.
static mx_status_t find(const g3n_t *g, int32_t layer, const char *suffix, int32_t *out) {
  char name[256];
  if (layer >= 0) {
    snprintf(name, sizeof name, "%slayers.%d.%s", g->a->prefix, layer, suffix);
  } else {
    snprintf(name, sizeof name, "%s%s", g->a->prefix, suffix);
  }
  *out = mx_wlist_find(mx_core_wlist(g->c), name);
  if (*out < 0) return mx_error_set(MX_ERR_INVALID_ARG, "graph: no weight \"%s\" listed", name);
  return MX_OK;
}

static mx_status_t w_f32(const g3n_t *g, int32_t wi, int32_t *out) {
  return mx_g_f32(g->b, mx_core_weight(g->c, wi), out);
}

static mx_status_t scalar_mul(mx_builder_t *b, int32_t x, double v, int32_t *out) {
  int32_t k;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, v, x, &k));
  return mx_build_binary(b, MX_OP_MULTIPLY, x, k, out);
}

// x [B, T, H] * w[H] (broadcast along the last dimension).
static mx_status_t mul_last(mx_builder_t *b, int32_t x, int32_t w, int32_t *out) {
  int64_t last = mx_build_type(b, x)->rank - 1;
  int32_t wb;
  MX_TRY(mx_g_bcast_like(b, w, x, &last, &wb));
  return mx_build_binary(b, MX_OP_MULTIPLY, x, wb, out);
}

// Column k of x [B, T, N] broadcast to `like` [B, T, H].
static mx_status_t column(mx_builder_t *b, int32_t x, int64_t k, int32_t like, int32_t *out) {
  const mx_type_t t = *mx_build_type(b, x);
  int64_t lo[3] = {0, 0, k}, hi[3] = {t.dims[0], t.dims[1], k + 1}, lead[2] = {0, 1};
  int64_t bt[2] = {t.dims[0], t.dims[1]};
  int32_t col;
  MX_TRY(mx_build_slice(b, x, lo, hi, NULL, 3, &col));
  MX_TRY(mx_build_reshape(b, col, bt, 2, &col));
  return mx_g_bcast_like(b, col, like, lead, out);
}

// sqrt(mean(x^2)) over the last dimension [B, T]; with `floor` > 0, sqrt(max(mean, floor)).
static mx_status_t rms(mx_builder_t *b, int32_t x, double floor_, int32_t *out) {
  int32_t sq, ms;
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, x, x, &sq));
  MX_TRY(mx_g_mean_last(b, sq, &ms));
  if (floor_ > 0) {
    int32_t f;
    MX_TRY(mx_g_full_like(b, MX_ELEM_F32, floor_, ms, &f));
    MX_TRY(mx_build_binary(b, MX_OP_MAXIMUM, ms, f, &ms));
  }
  return mx_build_unary(b, MX_OP_SQRT, ms, out);
}

// y * target / sqrt(max(mean(y^2), 1e-5)): a stream brought to the RMS `target` [B, T].
static mx_status_t rescale(mx_builder_t *b, int32_t y, int32_t target, int32_t *out) {
  int64_t lead[2] = {0, 1};
  int32_t mag, tb, mb, t;
  MX_TRY(rms(b, y, 1e-5, &mag));
  MX_TRY(mx_g_bcast_like(b, target, y, lead, &tb));
  MX_TRY(mx_g_bcast_like(b, mag, y, lead, &mb));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, y, tb, &t));
  return mx_build_binary(b, MX_OP_DIVIDE, t, mb, out);
}

// The per-layer inputs [B, T, L, P] of the tokens and the scaled embeddings x.
static mx_status_t per_layer_inputs(g3n_t *g, int32_t x, int32_t *out) {
  mx_builder_t *b = g->b;
  const mx_arch_t *a = g->a;
  const mx_type_t xt = *mx_build_type(b, x);
  int64_t B = xt.dims[0], T = xt.dims[1], L = a->n_layers, P = a->cfg->hidden_size_per_layer_input;
  int32_t table, proj, pnorm, tok = mx_core_tokens(g->c);
  MX_TRY(find(g, -1, "embed_tokens_per_layer.weight", &table));
  MX_TRY(find(g, -1, "per_layer_model_projection.weight", &proj));
  MX_TRY(find(g, -1, "per_layer_projection_norm.weight", &pnorm));
  // Ids outside the table read row 0, as transformers' get_per_layer_inputs.
  int32_t lo, hi, ge, lt, in, zero, ids, rows, emb;
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 0, tok, &lo));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, a->cfg->vocab_size_per_layer_input, tok, &hi));
  MX_TRY(mx_build_compare(b, MX_CMP_GE, MX_CMP_TYPE_AUTO, tok, lo, &ge));
  MX_TRY(mx_build_compare(b, MX_CMP_LT, MX_CMP_TYPE_AUTO, tok, hi, &lt));
  MX_TRY(mx_build_binary(b, MX_OP_AND, ge, lt, &in));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 0, tok, &zero));
  MX_TRY(mx_build_select(b, in, tok, zero, &ids));
  int64_t off = 2, coll = 0, map = 0, sizes[2] = {1, L * P};
  mx_gather_dims_t gd = {{&off, 1}, {&coll, 1}, {NULL, 0}, {NULL, 0}, {&map, 1}, 2};
  MX_TRY(mx_build_gather(b, mx_core_weight(g->c, table), ids, &gd, sizes, false, &rows));
  MX_TRY(mx_g_f32(b, rows, &emb));
  MX_TRY(scalar_mul(b, emb, mx_g_round_to(a->cfg->dtype, sqrt((double)P)), &emb));
  int32_t p, pn;
  MX_TRY(mx_core_linear(g->c, x, proj, &p));
  MX_TRY(scalar_mul(b, p, mx_g_round_to(a->cfg->dtype, 1.0 / sqrt((double)a->hidden)), &p));
  int64_t flat[3] = {B, T * L, P}, full[4] = {B, T, L, P};
  MX_TRY(mx_build_reshape(b, p, flat, 3, &p));
  MX_TRY(mx_core_norm(g->c, p, pnorm, &pn));
  MX_TRY(mx_build_reshape(b, pn, full, 4, &pn));
  MX_TRY(mx_build_reshape(b, emb, full, 4, &emb));
  int32_t sum;
  MX_TRY(mx_build_binary(b, MX_OP_ADD, pn, emb, &sum));
  return scalar_mul(b, sum, mx_g_round_to(a->cfg->dtype, 1.0 / sqrt(2.0)), out);
}

// tanh(modality_router(router_norm(x) / H)) [B, T, N].
static mx_status_t modalities(g3n_t *g, int32_t x, int32_t *out) {
  int32_t h, r;
  MX_TRY(mx_core_norm(g->c, x, g->li[kRouterNorm], &h));
  MX_TRY(scalar_mul(g->b, h, 1.0 / (double)g->a->hidden, &h));
  MX_TRY(w_f32(g, g->li[kRouter], &r));
  MX_TRY(mx_g_linear(g->b, h, r, &h));
  return mx_build_unary(g->b, MX_OP_TANH, h, out);
}

// AltUp's predict: pred_i = s_i + sum_j s_j coef[i N + j], coef = prediction_coefs(modalities).
static mx_status_t predict(g3n_t *g, int32_t *pred) {
  mx_builder_t *b = g->b;
  int32_t m, w, coef;
  MX_TRY(modalities(g, g->s[g->a->cfg->altup_active_idx], &m));
  MX_TRY(w_f32(g, g->li[kPredictionCoefs], &w));
  MX_TRY(mx_g_linear(b, m, w, &coef));
  for (int32_t i = 0; i < g->n; i++) {
    int32_t acc = -1;
    for (int32_t j = 0; j < g->n; j++) {
      int32_t cb, t;
      MX_TRY(column(b, coef, (int64_t)i * g->n + j, g->s[j], &cb));
      MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, g->s[j], cb, &t));
      if (acc < 0) {
        acc = t;
      } else {
        MX_TRY(mx_build_binary(b, MX_OP_ADD, acc, t, &acc));
      }
    }
    MX_TRY(mx_build_binary(b, MX_OP_ADD, acc, g->s[i], &pred[i]));
  }
  return MX_OK;
}

// AltUp's correct: s_i = pred_i + (act - pred_active) (correction_coefs(modalities(act)) + 1)_i.
static mx_status_t correct(g3n_t *g, const int32_t *pred, int32_t act) {
  mx_builder_t *b = g->b;
  int32_t m, w, coef, one, innov;
  MX_TRY(modalities(g, act, &m));
  MX_TRY(w_f32(g, g->li[kCorrectionCoefs], &w));
  MX_TRY(mx_g_linear(b, m, w, &coef));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 1.0, coef, &one));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, coef, one, &coef));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, act, pred[g->a->cfg->altup_active_idx], &innov));
  for (int32_t i = 0; i < g->n; i++) {
    int32_t cb, t;
    MX_TRY(column(b, coef, i, innov, &cb));
    MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, innov, cb, &t));
    MX_TRY(mx_build_binary(b, MX_OP_ADD, t, pred[i], &g->s[i]));
  }
  return MX_OK;
}

// The standard normal's quantile at p in (0, 1), by Newton's method on erfc in double, rounded
// to f32 as transformers computes it (torch's Normal.icdf on a float32 tensor).
static double normal_icdf(double p) {
  double x = 0.0;
  for (int32_t it = 0; it < 100; it++) {
    double f = 0.5 * erfc(-x / sqrt(2.0)) - p, d = exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
    double step = f / d;
    x -= step;
    if (fabs(step) < 1e-15 * (1.0 + fabs(x))) break;
  }
  return (double)(float)x;
}

// Layer l's MLP of h; a sparse layer keeps only the gate activations above mean + std z_p
// (relu(gate - cutoff), std over the intermediate dims without Bessel's correction).
static mx_status_t mlp(g3n_t *g, int32_t l, int32_t h, int32_t *out) {
  double sp = g->a->cfg->layer_sparsity[l];
  if (sp <= 0.0) return mx_core_mlp(g->c, l, h, out);
  mx_builder_t *b = g->b;
  const mx_layer_w_t *lw = &mx_core_wlist(g->c)->layers[l];
  int64_t lead[2] = {0, 1};
  int32_t gt, up, mean, mb, cen, sd, cut, cb, zero, act;
  MX_TRY(mx_core_linear(g->c, h, lw->gate, &gt));
  MX_TRY(mx_g_mean_last(b, gt, &mean));
  MX_TRY(mx_g_bcast_like(b, mean, gt, lead, &mb));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, gt, mb, &cen));
  MX_TRY(rms(b, cen, 0.0, &sd));
  MX_TRY(scalar_mul(b, sd, normal_icdf(sp), &cut));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, mean, cut, &cut));
  MX_TRY(mx_g_bcast_like(b, cut, gt, lead, &cb));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, gt, cb, &gt));
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, 0.0, gt, &zero));
  MX_TRY(mx_build_binary(b, MX_OP_MAXIMUM, gt, zero, &gt));
  MX_TRY(mx_core_linear(g->c, h, lw->up, &up));
  MX_TRY(mx_comp_gated_act(mx_core_comp(g->c), b, gt, up, g->a->activation, &act));
  return mx_core_linear(g->c, act, lw->down, out);
}

static mx_status_t layer(g3n_t *g, int32_t l) {
  mx_builder_t *b = g->b;
  const mx_layer_w_t *lw = &mx_core_wlist(g->c)->layers[l];
  for (int32_t k = 0; k < kNumLayerExtras; k++)
    MX_TRY(find(g, l, kLayerExtras[k].suffix, &g->li[k]));
  int32_t pred[kMaxStreams], act = g->a->cfg->altup_active_idx;
  MX_TRY(predict(g, pred));
  int32_t h, lr, o, x1, lsum, xa, hf, m, y;
  MX_TRY(mx_core_norm(g->c, pred[act], lw->in_norm, &h));
  // Laurel: h + norm(right(left(h))).
  MX_TRY(mx_core_linear(g->c, h, g->li[kLaurelLeft], &lr));
  MX_TRY(mx_core_linear(g->c, lr, g->li[kLaurelRight], &lr));
  MX_TRY(mx_core_norm(g->c, lr, g->li[kLaurelNorm], &lr));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, h, lr, &lr));
  MX_TRY(mx_core_attention(g->c, l, h, &o));
  MX_TRY(mx_core_norm(g->c, o, lw->post_norm, &o));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, pred[act], o, &x1));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, x1, lr, &lsum));
  int32_t r2;
  MX_TRY(mx_g_full_like(b, MX_ELEM_F32, sqrt(2.0), lsum, &r2));
  MX_TRY(mx_build_binary(b, MX_OP_DIVIDE, lsum, r2, &xa));
  MX_TRY(mx_core_norm(g->c, xa, lw->pre_ff_norm, &hf));
  MX_TRY(mlp(g, l, hf, &m));
  MX_TRY(mx_core_norm(g->c, m, lw->post_ff_norm, &m));
  MX_TRY(mx_build_binary(b, MX_OP_ADD, xa, m, &y));
  MX_TRY(correct(g, pred, y));
  // The per-layer input, gated by the corrected active stream, added to streams 1 .. N-1.
  int32_t first = g->s[act], gate, pl;
  if (g->a->cfg->altup_correct_scale) {
    int32_t sc;
    MX_TRY(w_f32(g, g->li[kCorrectScale], &sc));
    MX_TRY(mul_last(b, first, sc, &first));
  }
  MX_TRY(mx_core_linear(g->c, first, g->li[kPliGate], &gate));
  MX_TRY(mx_g_gelu_tanh(b, gate, &gate));
  const mx_type_t pt = *mx_build_type(b, g->pli);
  int64_t lo[4] = {0, 0, l, 0}, hi[4] = {pt.dims[0], pt.dims[1], l + 1, pt.dims[3]};
  int64_t d3[3] = {pt.dims[0], pt.dims[1], pt.dims[3]};
  MX_TRY(mx_build_slice(b, g->pli, lo, hi, NULL, 4, &pl));
  MX_TRY(mx_build_reshape(b, pl, d3, 3, &pl));
  MX_TRY(mx_build_binary(b, MX_OP_MULTIPLY, gate, pl, &gate));
  MX_TRY(mx_core_linear(g->c, gate, g->li[kPliProj], &gate));
  MX_TRY(mx_core_norm(g->c, gate, g->li[kPliNorm], &gate));
  for (int32_t i = 1; i < g->n; i++) MX_TRY(mx_build_binary(b, MX_OP_ADD, g->s[i], gate, &g->s[i]));
  return MX_OK;
}

// Streams 1.. from x (pass 0: altup_projections) or back to stream 0's space (pass 1:
// altup_unembed_projections), each rescaled to the RMS of x / stream 0.
static mx_status_t project_streams(g3n_t *g, int32_t pass) {
  int32_t target;
  MX_TRY(rms(g->b, g->s[0], 0.0, &target));
  for (int32_t i = 1; i < g->n; i++) {
    char s[64];
    int32_t wi, y;
    snprintf(s, sizeof s, "%s.%d.weight", pass ? "altup_unembed_projections" : "altup_projections",
             i - 1);
    MX_TRY(find(g, -1, s, &wi));
    MX_TRY(mx_core_linear(g->c, pass ? g->s[i] : g->s[0], wi, &y));
    MX_TRY(rescale(g->b, y, target, &g->s[i]));
  }
  return MX_OK;
}

// Embedder i's hard embedding of every token (ids outside its range read a clamped row), and
// the rows of the tokens in [lo, hi) of x replaced by it.
static mx_status_t mm_embed(mx_core_t *c, int32_t i, int64_t lo, int64_t hi, int32_t x,
                            int32_t *out) {
  mx_builder_t *b = mx_core_builder(c);
  const mx_arch_t *a = mx_core_arch(c);
  const mx_mm_embed_t *e = &a->cfg->mm_embed[i];
  int32_t idx[kMmTensors], tok = mx_core_tokens(c);
  MX_TRY(mm_find(mx_core_wlist(c), i, idx));
  int32_t off, zero, last, local, rows, h, ge, lt, in, mask;
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, (double)lo, tok, &off));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, 0, tok, &zero));
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, e->vocab - 1, tok, &last));
  MX_TRY(mx_build_binary(b, MX_OP_SUBTRACT, tok, off, &local));
  MX_TRY(mx_build_clamp(b, zero, local, last, &local));
  int64_t axis = 2, coll = 0, map = 0, sizes[2] = {1, e->hidden};
  mx_gather_dims_t gd = {{&axis, 1}, {&coll, 1}, {NULL, 0}, {NULL, 0}, {&map, 1}, 2};
  MX_TRY(mx_build_gather(b, mx_core_weight(c, idx[kMmTable]), local, &gd, sizes, false, &rows));
  MX_TRY(mx_g_f32(b, rows, &rows));
  mx_comp_ctx_t *cc = mx_core_comp(c);
  MX_TRY(mx_comp_rms_norm(cc, b, rows, mx_core_weight(c, idx[kMmNorm]), e->eps, 0.0, &h));
  MX_TRY(mx_core_linear(c, h, idx[kMmProj], &h));
  int64_t H = a->hidden;
  mx_type_t ot = mx_type_tensor(MX_ELEM_F32, 1, &H);
  int32_t ones;  // embedding_post_projection_norm has no scale
  MX_TRY(mx_build_splat(b, &ot, 1.0, &ones));
  MX_TRY(mx_comp_rms_norm(cc, b, h, ones, e->eps, 0.0, &h));
  int32_t end;
  MX_TRY(mx_g_full_like(b, MX_ELEM_I32, (double)hi, tok, &end));
  MX_TRY(mx_build_compare(b, MX_CMP_GE, MX_CMP_TYPE_AUTO, tok, off, &ge));
  MX_TRY(mx_build_compare(b, MX_CMP_LT, MX_CMP_TYPE_AUTO, tok, end, &lt));
  MX_TRY(mx_build_binary(b, MX_OP_AND, ge, lt, &in));
  int64_t bt[2] = {0, 1};
  MX_TRY(mx_g_bcast_like(b, in, x, bt, &mask));
  return mx_build_select(b, mask, h, x, out);
}

mx_status_t mx_gemma3n_embed_ids(mx_core_t *c, int32_t x, int32_t *out) {
  *out = x;
  for (int32_t i = 0; i < MX_MM_EMBEDS; i++) {
    int64_t lo, hi;
    mm_range(mx_core_arch(c)->cfg, i, &lo, &hi);
    if (lo < hi) MX_TRY(mm_embed(c, i, lo, hi, *out, out));
  }
  return MX_OK;
}

mx_status_t mx_gemma3n_layers(mx_core_t *c, int32_t x, int32_t *out) {
  g3n_t g = {.c = c, .b = mx_core_builder(c), .a = mx_core_arch(c)};
  g.n = g.a->cfg->altup_num_inputs;
  if (g.n < 1 || g.n > kMaxStreams) {
    return mx_error_set(MX_ERR_INVALID_ARG, "graph: %d AltUp streams (1 .. %d)", g.n, kMaxStreams);
  }
  MX_TRY(per_layer_inputs(&g, x, &g.pli));
  g.s[0] = x;
  MX_TRY(project_streams(&g, 0));
  for (int32_t l = 0; l < g.a->n_layers; l++) {
    mx_status_t st = layer(&g, l);
    if (st != MX_OK) return mx_error_prefix(st, "layer %d", l);
  }
  MX_TRY(project_streams(&g, 1));
  int32_t sum = g.s[0];
  for (int32_t i = 1; i < g.n; i++) MX_TRY(mx_build_binary(g.b, MX_OP_ADD, sum, g.s[i], &sum));
  int32_t n;  // torch.mean: the sum divided by the count
  MX_TRY(mx_g_full_like(g.b, MX_ELEM_F32, (double)g.n, sum, &n));
  return mx_build_binary(g.b, MX_OP_DIVIDE, sum, n, out);
}
