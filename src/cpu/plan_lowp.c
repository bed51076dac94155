// The executor of the low-precision plan steps ST_CONVERT, ST_GEMM_LOWP, ST_GATED_UP_LOWP,
// ST_EMBED_ROWS and ST_ATTENTION_KV (compiled by compile_lowp.c).
#include <stdlib.h>
#include <string.h>

#include "cpu/fused.h"
#include "cpu/fused_kv.h"
#include "cpu/kernels_lowp_internal.h"
#include "cpu/plan_internal.h"

// out[i, :] = table[clamp(ids[i]), :] for rows of `row_bytes` bytes.
static void embed_rows(const uint8_t *table, int64_t vocab, size_t row_bytes, const int32_t *ids,
                       int64_t n, uint8_t *out, int ith, int nth) {
  int64_t r0 = n * ith / nth, r1 = n * (ith + 1) / nth;
  for (int64_t r = r0; r < r1; r++) {
    int64_t id = ids[r];
    if (id < 0) id = 0;
    if (id > vocab - 1) id = vocab - 1;
    memcpy(out + (size_t)r * row_bytes, table + (size_t)id * row_bytes, row_bytes);
  }
}

// ST_GATED_UP_LOWP: the panels of gate and up shared through the step's work counter in the
// same chunks; each chunk's rows get their activation and its convert right after the two GEMVs,
// so no barrier is needed in between. Each element goes through the same kernels as the unfused
// steps (gemv per panel, mx_cpu_gated_act_f32, mx_cpu_convert element by element): the same
// bits.
static void gated_up_lowp(mx_cpu_plan_t *p, const mx_step_t *s, int ith, int nth) {
  uint8_t **vp = p->vp;
  const uint16_t *x = (const uint16_t *)vp[s->in[0]];
  float *gate = (float *)vp[s->out[1]], *up = (float *)vp[s->out[2]], *act = (float *)vp[s->out[3]];
  uint8_t *actc = vp[s->out[0]];
  const mx_cpu_packed_lowp_t *wg = s->wl, *wu = s->wl2;
  const int64_t n = s->gemm.n, panels = wg->panels;
  const size_t esz = mx_elem_size(wg->et);
  // The grain one GEMV has alone (mx_cpu_gemv_packed_lowp_dyn's): each weight's stream runs as
  // long between switches as it does unfused.
  int64_t panel_bytes = wg->kpad * MX_CPU_LOWP_NR * (int64_t)sizeof(uint16_t);
  int64_t g = mx_cpu_work_stream_grain(panels, panel_bytes, nth);
  int64_t chunks = (panels + g - 1) / g, c;
  while (mx_cpu_work_claim(&p->work[s - p->steps], chunks, ith, nth, &c)) {
    int64_t p0 = c * g, p1 = p0 + g < panels ? p0 + g : panels;
    wg->kt->gemv(wg->data, x, gate, p0, p1, wg->k, wg->n);
    wu->kt->gemv(wu->data, x, up, p0, p1, wu->k, wu->n);
    int64_t r0 = p0 * MX_CPU_LOWP_NR, r1 = p1 * MX_CPU_LOWP_NR < n ? p1 * MX_CPU_LOWP_NR : n;
    if (r1 <= r0) continue;
    mx_cpu_gated_act_f32(gate + r0, up + r0, act + r0, r1 - r0, s->gemm.act, 0, 1);
    mx_cpu_convert(act + r0, MX_ELEM_F32, actc + (size_t)r0 * esz, wg->et, r1 - r0, 0, 1);
  }
}

void mx_cpu_lowp_step_exec(mx_cpu_plan_t *p, mx_step_t *s, int ith, int nth) {
  uint8_t **vp = p->vp;
  switch (s->kind) {
    case ST_CONVERT:
      mx_cpu_convert(vp[s->in[0]], s->convert.from, vp[s->out[0]], s->convert.to, s->convert.n, ith,
                     nth);
      break;
    case ST_GEMM_LOWP: {
      const uint16_t *x = (const uint16_t *)vp[s->in[0]];
      const float *bias = s->n_in > 1 ? (const float *)vp[s->in[1]] : NULL;
      float *y = (float *)vp[s->out[0]];
      if (s->gemm.m == 1)
        mx_cpu_gemv_packed_lowp_dyn_bias(s->wl, x, bias, y, &p->work[s - p->steps], ith, nth);
      else
        mx_cpu_gemm_packed_lowp_bias(s->wl, x, s->gemm.k, bias, y, s->gemm.n, s->gemm.m, ith, nth);
      break;
    }
    case ST_GATED_UP_LOWP:
      gated_up_lowp(p, s, ith, nth);
      break;
    case ST_EMBED_ROWS:
      embed_rows(vp[s->in[0]], s->rows.vocab, (size_t)(s->rows.h * s->rows.elem_bytes),
                 (const int32_t *)vp[s->in[1]], s->rows.n, vp[s->out[0]], ith, nth);
      break;
    case ST_ATTENTION_KV:
      mx_cpu_attention_kv_blocks(
          (const float *)vp[s->in[0]], vp[s->in[1]], vp[s->in[2]], s->attn.kv,
          (const int32_t *)vp[s->in[3]], s->attn.sinks ? (const float *)vp[s->in[4]] : NULL,
          s->attn.blocks ? (const int32_t *)vp[s->in[4 + s->attn.sinks]] : NULL,
          (float *)vp[s->out[0]], s->attn.b, s->attn.t, s->attn.hq, s->attn.hkv, s->attn.s,
          s->attn.d, s->attn.scale, s->attn.window, s->attn.softcap, p->scratch, ith, nth);
      break;
    default:
      break;
  }
}
