// The executor of mx.moe's plan steps (plan_internal.h): the selected experts only.
//
// Quantized experts (mx.linear's formats) take the f32 rows through the quantized GEMV / GEMM
// kernels (kernels_q.h), reading only the selected experts' packed bytes.
//
// ST_MOE_ROUTE computes each token's routing (router logits, softmax, top k with the lowest
// index first among equal probabilities, renormalized when asked: the decomposition's order of
// choices), groups the M * K (token, k) pairs by expert and gathers each pair's x row (and its
// bf16 / f16 copy for lowp experts), so every expert multiplies one contiguous block of rows.
// ST_MOE_UP and ST_MOE_DOWN then read only the experts that have rows: for a decode step (one
// token) the work units are (row, chunk of panels), so K experts' GEMVs are shared by all threads;
// for a prefill the units are whole experts, each one GEMM over its rows (the weights read once per
// expert, not once per token). ST_MOE_COMBINE sums each token's K rows times their routing weights,
// in k order. gpt-oss's biases are added to each product where it is written, its clamped SwiGLU
// replaces the activation.
#include <math.h>
#include <string.h>

#include "base/half.h"
#include "cpu/kernels_lowp_internal.h"
#include "cpu/plan_internal.h"
#include "mlxcel/composite.h"

typedef struct meta {
  int32_t *n_active, *off, *cnt, *erow, *pos, *active, *cursor, *pick;
  float *wts;     // [M * K] the routing weight of pair (m, k)
  float *logits;  // [E] scratch of the route step
  float *xr;      // [H] scratch: x rounded to a lowp router's type
  float *choice;  // [E] scratch: DeepSeek's choice scores, then [E] its group ranks
} meta_t;

size_t mx_cpu_moe_meta_bytes(const mx_cpu_moe_t *mo) {
  int64_t E = mo->n_experts, R = mo->m * mo->k;
  return sizeof(int32_t) * (size_t)(1 + 5 * E + 3 * R) +
         sizeof(float) * (size_t)(R + E + mo->h + 2 * E);
}

static meta_t meta_of(const mx_cpu_moe_t *mo, void *base) {
  int64_t E = mo->n_experts, R = mo->m * mo->k;
  meta_t t;
  t.n_active = base;
  t.off = t.n_active + 1;
  t.cnt = t.off + E;
  t.erow = t.cnt + E;
  t.pos = t.erow + R;
  t.active = t.pos + R;
  t.cursor = t.active + E;
  t.pick = t.cursor + E;  // [R + E]: the picks of the current token, then its chosen flags
  t.wts = (float *)(t.pick + R + E);
  t.logits = t.wts + R;
  t.xr = t.logits + E;
  t.choice = t.xr + mo->h;
  return t;
}

// Element i of a router row of type et.
static inline float router_at(const void *w, mx_elem_type_t et, int64_t i) {
  if (et == MX_ELEM_F32) return ((const float *)w)[i];
  uint16_t h = ((const uint16_t *)w)[i];
  return et == MX_ELEM_BF16 ? mx_bf16_to_f32(h) : mx_f16_to_f32(h);
}

// sum x[i] w[i] in 8 interleaved chains (the compiler keeps each in a vector lane).
static float dot_f32(const float *x, const float *w, int64_t n) {
  float acc[8] = {0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) acc[j] += x[i + j] * w[i + j];
  float s = 0.0f;
  for (; i < n; i++) s += x[i] * w[i];
  for (int j = 0; j < 8; j++) s += acc[j];
  return s;
}

// DeepSeek's choice scores of one token in t->choice: its scores t->logits plus the choice bias,
// -inf for every expert outside the topk_group best groups (ranked by their best score, or the
// sum of their two best: the first occurrence of the best taken out before the second; the
// lowest index first among equal ranks), as the decomposition's group limit.
static const float *deepseek_choice(const mx_cpu_moe_t *mo, const meta_t *t) {
  int64_t E = mo->n_experts;
  float *c = t->choice, *rank = t->choice + E;
  for (int64_t e = 0; e < E; e++) c[e] = mo->bias ? t->logits[e] + mo->bias[e] : t->logits[e];
  if (mo->n_group <= 1 || mo->topk_group >= mo->n_group) return c;
  int64_t G = mo->n_group, N = E / G;
  for (int64_t g = 0; g < G; g++) {
    const float *cg = c + g * N;
    int64_t first = 0;
    for (int64_t i = 1; i < N; i++)
      if (cg[i] > cg[first]) first = i;
    float r = cg[first];
    if (mo->group_top2) {
      float second = -INFINITY;
      for (int64_t i = 0; i < N; i++)
        if (i != first && cg[i] > second) second = cg[i];
      r += second;
    }
    rank[g] = r;
  }
  // The best topk_group groups keep their scores (picked ones marked -inf in rank), the others
  // are left out.
  for (int64_t j = 0; j < mo->topk_group; j++) {
    int64_t best = -1;
    for (int64_t g = 0; g < G; g++)
      if (rank[g] != -INFINITY && (best < 0 || rank[g] > rank[best])) best = g;
    if (best >= 0) rank[best] = -INFINITY;
  }
  for (int64_t g = 0; g < G; g++)
    if (rank[g] != -INFINITY)
      for (int64_t i = 0; i < N; i++) c[g * N + i] = -INFINITY;
  return c;
}

// Token m's top-k experts into idx[0..K) and their weights into w[0..K) (t's scratch).
static void route_token(const mx_cpu_moe_t *mo, const meta_t *t, const float *x, int32_t *idx,
                        float *w) {
  int64_t E = mo->n_experts, H = mo->h, K = mo->k;
  const float *xv = x;
  if (mo->router_et != MX_ELEM_F32) {  // a linear layer in the router's type: x rounded to it
    for (int64_t i = 0; i < H; i++)
      t->xr[i] = mo->router_et == MX_ELEM_BF16 ? mx_bf16_to_f32(mx_f32_to_bf16(x[i]))
                                               : mx_f16_to_f32(mx_f32_to_f16(x[i]));
    xv = t->xr;
  }
  float mx = -INFINITY;
  for (int64_t e = 0; e < E; e++) {
    const uint8_t *row = (const uint8_t *)mo->router + e * H * mo->router_bytes;
    float acc = 0.0f;
    if (mo->router_et == MX_ELEM_F32) {  // the usual case (precision keeps routers in f32)
      acc = dot_f32(xv, (const float *)row, H);
    } else {
      for (int64_t i = 0; i < H; i++) acc += xv[i] * router_at(row, mo->router_et, i);
    }
    if (mo->router_bias) acc += mo->router_bias[e];
    t->logits[e] = acc;
    if (acc > mx) mx = acc;
  }
  int32_t *chosen = t->pick + mo->m * K;  // [E] flags
  if (mo->sigmoid) {                      // the interpreter's logistic: 1 / (1 + exp(-x))
    for (int64_t e = 0; e < E; e++) t->logits[e] = 1.0f / (1.0f + expf(-t->logits[e]));
  } else {
    float sum = 0.0f;
    for (int64_t e = 0; e < E; e++) {
      t->logits[e] = expf(t->logits[e] - mx);
      sum += t->logits[e];
    }
    for (int64_t e = 0; e < E; e++) t->logits[e] /= sum;  // probabilities
  }
  for (int64_t e = 0; e < E; e++) chosen[e] = 0;
  const float *c = t->logits;  // what the experts are chosen by
  if (mo->bias || mo->n_group > 1) c = deepseek_choice(mo, t);
  for (int64_t j = 0; j < K; j++) {
    int64_t best = -1;
    for (int64_t e = 0; e < E; e++)
      if (!chosen[e] && (best < 0 || c[e] > c[best])) best = e;
    chosen[best] = 1;
    idx[j] = (int32_t)best;
  }
  float s = 0.0f;
  for (int64_t e = 0; e < E; e++)
    if (chosen[e]) s += t->logits[e];
  for (int64_t j = 0; j < K; j++) w[j] = mo->norm_topk ? t->logits[idx[j]] / s : t->logits[idx[j]];
  if (mo->routed_scale != 0.0f && mo->routed_scale != 1.0f)
    for (int64_t j = 0; j < K; j++) w[j] *= mo->routed_scale;
}

static void route(mx_cpu_plan_t *p, const mx_step_t *s) {
  const mx_cpu_moe_t *mo = s->moe;
  uint8_t **vp = p->vp;
  const float *x = (const float *)vp[s->in[0]];
  meta_t t = meta_of(mo, vp[s->out[0]]);
  float *xg = (float *)vp[s->out[1]];
  uint16_t *xgl = s->n_out > 2 ? (uint16_t *)vp[s->out[2]] : NULL;
  int64_t E = mo->n_experts, K = mo->k, H = mo->h, R = mo->m * K;
  int32_t *idx = t.pick;  // [R]
  for (int64_t m = 0; m < mo->m; m++) route_token(mo, &t, x + m * H, idx + m * K, t.wts + m * K);
  memset(t.cnt, 0, sizeof(int32_t) * (size_t)E);
  for (int64_t i = 0; i < R; i++) t.cnt[idx[i]]++;
  int32_t off = 0, na = 0;
  for (int64_t e = 0; e < E; e++) {
    t.off[e] = t.cursor[e] = off;
    off += t.cnt[e];
    if (t.cnt[e] > 0) t.active[na++] = (int32_t)e;
  }
  *t.n_active = na;
  for (int64_t i = 0; i < R; i++) {
    int32_t e = idx[i], r = t.cursor[e]++;
    t.pos[i] = r;
    t.erow[r] = e;
    const float *xr = x + (i / K) * H;
    memcpy(xg + r * H, xr, sizeof(float) * (size_t)H);
    if (xgl) mx_cpu_convert(xr, MX_ELEM_F32, xgl + r * H, mo->et, H, 0, 1);
  }
}

// ---- MXFP4 experts, read as stored (composite.h's format) ----

enum { FP4_ROWS = 16 };  // the rows of one panel (a decode step's unit of work)

// 2^(s - 127) of an e8m0 scale: the f32 with exponent bits s (s = 0: 2^-127, a subnormal;
// s = 255: the format's NaN, where the bits alone would give +inf).
static inline float e8m0(uint8_t s) {
  if (s == 0) return 0x1p-127f;
  if (s == 255) return NAN;
  uint32_t bits = (uint32_t)s << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

// y[mi * ys + r] = x[mi * xs, ...] . w_r for rows r in [r0, r1) of projection j of expert e and
// the m rows of x: each group of 32 weights decoded once (two e2m1 values per byte from
// fp4_pair) for up to 8 rows of x, each row's products summed in 8 independent lanes
// (vectorizable) and each group's times its scale (a power of two: exact); the order of
// summation differs from the decomposition's, rounding only.
static void fp4_rows(const mx_cpu_moe_t *mo, int64_t e, int j, const float *x, int64_t xs,
                     int64_t m, float *y, int64_t ys, int64_t r0, int64_t r1) {
  int64_t k = j == 2 ? mo->f : mo->h, G = k / 32;
  const uint8_t *blocks = mo->fp4[2 * (3 * e + j)], *scales = mo->fp4[2 * (3 * e + j) + 1];
  for (int64_t r = r0; r < r1; r++) {
    const uint8_t *br = blocks + r * (k / 2), *sr = scales + r * G;
    for (int64_t m0 = 0; m0 < m; m0 += 8) {
      int64_t nb = m - m0 < 8 ? m - m0 : 8;
      float acc[8][8] = {{0}};
      for (int64_t g = 0; g < G; g++) {
        float w[32], s = e8m0(sr[g]);
        for (int i = 0; i < 16; i++) memcpy(w + 2 * i, mo->fp4_pair[br[g * 16 + i]], 8);
        for (int64_t mi = 0; mi < nb; mi++) {
          const float *xr = x + (m0 + mi) * xs + g * 32;
          float part[8] = {0};
          for (int i = 0; i < 32; i += 8)
            for (int l = 0; l < 8; l++) part[l] += w[i + l] * xr[i + l];
          for (int l = 0; l < 8; l++) acc[mi][l] += part[l] * s;  // exact: s is 2^n
        }
      }
      for (int64_t mi = 0; mi < nb; mi++) {
        float d = 0.0f;
        for (int l = 0; l < 8; l++) d += acc[mi][l];
        y[(m0 + mi) * ys + r] = d;
      }
    }
  }
}

// The panels and the bytes of one panel of projection j (0 gate, 1 up, 2 down) of expert e.
static int64_t panels_of(const mx_cpu_moe_t *mo, int64_t e, int j, int64_t *panel_bytes) {
  if (mo->mxfp4) {
    int64_t n = j == 2 ? mo->h : mo->f, k = j == 2 ? mo->f : mo->h;
    *panel_bytes = FP4_ROWS * (k / 2 + k / 32);
    return (n + FP4_ROWS - 1) / FP4_ROWS;
  }
  if (mo->quant) {
    const mx_cpu_qpacked_t *w = mo->q[3 * e + j];
    *panel_bytes = (int64_t)(w->bytes / (size_t)(w->panels > 0 ? w->panels : 1));
    return w->panels;
  }
  if (mo->et == MX_ELEM_F32) {
    const mx_cpu_packed_t *w = mo->w[3 * e + j];
    *panel_bytes = w->k * w->nr * (int64_t)sizeof(float);
    return w->panels;
  }
  const mx_cpu_packed_lowp_t *w = mo->wl[3 * e + j];
  *panel_bytes = w->kpad * MX_CPU_LOWP_NR * (int64_t)sizeof(uint16_t);
  return w->panels;
}

// Rows of panel range [p0, p1) of projection j: the output columns it writes.
static void cols_of(const mx_cpu_moe_t *mo, int j, int64_t p0, int64_t p1, int64_t *c0,
                    int64_t *c1) {
  int64_t nr = mo->mxfp4               ? FP4_ROWS
               : mo->quant             ? MX_QR
               : mo->et == MX_ELEM_F32 ? mo->w[j]->nr
                                       : MX_CPU_LOWP_NR;
  int64_t n = j == 2 ? mo->h : mo->f;
  *c0 = p0 * nr;
  *c1 = p1 * nr < n ? p1 * nr : n;
}

// y[0:n] over panels [p0, p1) (one row x) or all panels of rows [0, m) (x row stride k). A
// quantized GEMV reads its activation data from qa, prepared for x.
static void project(const mx_cpu_moe_t *mo, int64_t e, int j, const float *x, const uint16_t *xl,
                    const mx_qact_t *qa, float *y, int64_t m, int64_t p0, int64_t p1) {
  int64_t k = j == 2 ? mo->f : mo->h, n = j == 2 ? mo->h : mo->f;
  if (mo->mxfp4) {
    int64_t r0 = 0, r1 = n;
    if (m == 1 && p1 >= 0) cols_of(mo, j, p0, p1, &r0, &r1);
    fp4_rows(mo, e, j, x, k, m, y, n, r0, r1);
    return;
  }
  if (mo->quant) {
    const mx_cpu_qpacked_t *w = mo->q[3 * e + j];
    if (m == 1 && p1 >= 0) {
      w->qk->gemv(w, x, qa, y, p0, p1);
    } else {
      mx_cpu_qgemm(w, x, k, y, n, m, 0, 1);
    }
    return;
  }
  if (mo->et == MX_ELEM_F32) {
    const mx_cpu_packed_t *w = mo->w[3 * e + j];
    if (m == 1 && p1 >= 0) {
      mx_cpu_gemv_packed_f32_panels(w, x, y, p0, p1);
    } else {
      mx_cpu_gemm_packed_f32_block(w, x, k, NULL, y, n, 0, m, 0, w->panels);
    }
    return;
  }
  const mx_cpu_packed_lowp_t *w = mo->wl[3 * e + j];
  if (m == 1 && p1 >= 0) {
    w->kt->gemv(w->data, xl, y, p0, p1, w->k, w->n);
  } else {
    mx_cpu_gemm_packed_lowp(w, xl, k, y, n, m, 0, 1);
  }
}

// y[c0, c1) += the bias of projection j of expert e (gpt-oss), on m rows of stride n.
static void add_bias(const mx_cpu_moe_t *mo, int64_t e, int j, float *y, int64_t m, int64_t n,
                     int64_t c0, int64_t c1) {
  if (mo->ebias == NULL) return;
  const float *b = mo->ebias[3 * e + j];
  for (int64_t r = 0; r < m; r++)
    for (int64_t c = c0; c < c1; c++) y[r * n + c] += b[c];
}

// gpt-oss's clamped SwiGLU of n gates and ups, in the decomposition's order of operations.
static void clamped_swiglu(const mx_cpu_moe_t *mo, const float *gate, const float *up, float *out,
                           int64_t n) {
  float lim = mo->swiglu_limit, alpha = mo->swiglu_alpha;
  for (int64_t i = 0; i < n; i++) {
    float g = fminf(gate[i], lim), u = fminf(fmaxf(up[i], -lim), lim);
    float glu = g * (1.0f / (1.0f + expf(-(g * alpha))));
    out[i] = (u + 1.0f) * glu;
  }
}

// act(gate) * up over rows [r0, r0 + m), columns [c0, c1), and its lowp copy when needed.
static void activate(const mx_cpu_moe_t *mo, float *gate, float *up, float *act, uint16_t *actl,
                     int64_t r0, int64_t m, int64_t c0, int64_t c1) {
  int64_t F = mo->f;
  for (int64_t r = r0; r < r0 + m; r++) {
    int64_t o = r * F + c0;
    if (mo->act == MX_ACT_CLAMPED_SWIGLU) {
      clamped_swiglu(mo, gate + o, up + o, act + o, c1 - c0);
    } else {
      mx_cpu_gated_act_f32(gate + o, up + o, act + o, c1 - c0, mo->act, 0, 1);
    }
    if (actl) mx_cpu_convert(act + o, MX_ELEM_F32, actl + o, mo->et, c1 - c0, 0, 1);
  }
}

// ST_MOE_UP (up = true) and ST_MOE_DOWN.
static void experts(mx_cpu_plan_t *p, const mx_step_t *s, bool up_step, int ith, int nth) {
  const mx_cpu_moe_t *mo = s->moe;
  uint8_t **vp = p->vp;
  meta_t t = meta_of(mo, vp[s->in[0]]);
  const float *x = (const float *)vp[s->in[1]];
  const uint16_t *xl = mo->et == MX_ELEM_F32 ? NULL : (const uint16_t *)vp[s->in[2]];
  float *y = (float *)vp[s->out[0]];  // up: act [R, F]; down: [R, H]
  float *gate = up_step ? (float *)vp[s->out[1]] : NULL;
  float *upv = up_step ? (float *)vp[s->out[2]] : NULL;
  uint16_t *actl = up_step && s->n_out > 3 ? (uint16_t *)vp[s->out[3]] : NULL;
  int64_t kin = up_step ? mo->h : mo->f, nout = up_step ? mo->f : mo->h;
  mx_cpu_work_t *wk = &p->work[s - p->steps];
  int j = up_step ? 0 : 2;
  // Decode (and batched decoding's rows_as_gemv, whose rows must each match a lone decode bit
  // for bit): (row, chunk of panels) units, every thread on every selected expert.
  if (mo->m == 1 || mo->rows_as_gemv) {
    int64_t rows = 0, pb;
    for (int32_t a = 0; a < *t.n_active; a++) rows += t.cnt[t.active[a]];
    if (rows == 0) return;
    int64_t np = panels_of(mo, t.erow[0], j, &pb);
    int64_t g = mx_cpu_work_stream_grain(np, pb, nth), chunks = (np + g - 1) / g, u;
    // Quantized experts: the activation data of the row last prepared by this thread (the
    // experts of a layer share their format, so one row's data serves gate, up and down alike).
    _Alignas(64) float xsum[MX_Q_MAX_K / 32], dx[MX_Q_MAX_K / 32];
    _Alignas(64) int32_t xqsum[MX_Q_MAX_K / 32];
    _Alignas(64) int8_t xq[MX_Q_MAX_K], xlo[MX_Q_MAX_K];
    mx_qact_t qa = {xsum, xq, xlo, dx, xqsum};
    int64_t prepared = -1;
    while (mx_cpu_work_claim(wk, rows * chunks, ith, nth, &u)) {
      int64_t r = u / chunks, p0 = (u % chunks) * g, p1 = p0 + g < np ? p0 + g : np, c0, c1;
      int64_t e = t.erow[r];
      const float *xr = x + r * kin;
      const uint16_t *xlr = xl ? xl + r * kin : NULL;
      if (mo->quant && !mo->mxfp4 && prepared != r) {
        const mx_cpu_qpacked_t *w = mo->q[3 * e + j];
        w->qk->prep(w, xr, &qa);
        prepared = r;
      }
      if (up_step) {
        project(mo, e, 0, xr, xlr, &qa, gate + r * nout, 1, p0, p1);
        project(mo, e, 1, xr, xlr, &qa, upv + r * nout, 1, p0, p1);
        cols_of(mo, 0, p0, p1, &c0, &c1);
        add_bias(mo, e, 0, gate + r * nout, 1, nout, c0, c1);
        add_bias(mo, e, 1, upv + r * nout, 1, nout, c0, c1);
        activate(mo, gate, upv, y, actl, r, 1, c0, c1);
      } else {
        project(mo, e, 2, xr, xlr, &qa, y + r * nout, 1, p0, p1);
        cols_of(mo, 2, p0, p1, &c0, &c1);
        add_bias(mo, e, 2, y + r * nout, 1, nout, c0, c1);
      }
    }
    return;
  }
  int64_t u;  // prefill: one expert per unit, a GEMM over its rows
  while (mx_cpu_work_claim(wk, *t.n_active, ith, nth, &u)) {
    int64_t e = t.active[u], r = t.off[e], m = t.cnt[e];
    const float *xr = x + r * kin;
    const uint16_t *xlr = xl ? xl + r * kin : NULL;
    if (up_step) {
      project(mo, e, 0, xr, xlr, NULL, gate + r * nout, m, 0, -1);
      project(mo, e, 1, xr, xlr, NULL, upv + r * nout, m, 0, -1);
      add_bias(mo, e, 0, gate + r * nout, m, nout, 0, nout);
      add_bias(mo, e, 1, upv + r * nout, m, nout, 0, nout);
      activate(mo, gate, upv, y, actl, r, m, 0, nout);
    } else {
      project(mo, e, 2, xr, xlr, NULL, y + r * nout, m, 0, -1);
      add_bias(mo, e, 2, y + r * nout, m, nout, 0, nout);
    }
  }
}

static void combine(mx_cpu_plan_t *p, const mx_step_t *s, int ith, int nth) {
  const mx_cpu_moe_t *mo = s->moe;
  uint8_t **vp = p->vp;
  meta_t t = meta_of(mo, vp[s->in[0]]);
  const float *rows = (const float *)vp[s->in[1]];
  float *out = (float *)vp[s->out[0]];
  int64_t H = mo->h, K = mo->k, c0 = H * ith / nth, c1 = H * (ith + 1) / nth;
  for (int64_t m = 0; m < mo->m; m++) {
    float *o = out + m * H;
    for (int64_t c = c0; c < c1; c++) o[c] = 0.0f;
    for (int64_t k = 0; k < K; k++) {
      const float *y = rows + t.pos[m * K + k] * H;
      float w = t.wts[m * K + k];
      for (int64_t c = c0; c < c1; c++) o[c] += w * y[c];
    }
  }
}

void mx_cpu_moe_step_exec(mx_cpu_plan_t *p, mx_step_t *s, int ith, int nth) {
  switch (s->kind) {
    case ST_MOE_ROUTE:
      if (ith == 0) route(p, s);
      break;
    case ST_MOE_UP:
      experts(p, s, true, ith, nth);
      break;
    case ST_MOE_DOWN:
      experts(p, s, false, ith, nth);
      break;
    case ST_MOE_COMBINE:
      combine(p, s, ith, nth);
      break;
    default:
      break;
  }
}
