// Low-precision plan steps: the packed bf16 / f16 weights of a weights cache and the executor of
// ST_CONVERT, ST_GEMM_LOWP, ST_EMBED_ROWS and ST_ATTENTION_KV (compiled by compile.c's
// "Low-precision" section).
#include <stdlib.h>
#include <string.h>

#include "cpu/fused_kv.h"
#include "cpu/plan_internal.h"

mx_status_t mx_cpu_packed_lowp_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, mx_elem_type_t et,
                                   const uint16_t *data, int64_t n, int64_t k,
                                   const mx_cpu_packed_lowp_t **out) {
  for (int32_t i = 0; i < w->n_lowp; i++) {
    const mx_packed_lowp_entry_t *e = &w->lowp[i];
    if (e->data == data && e->n == n && e->k == k && e->packed->et == et) {
      *out = e->packed;
      return MX_OK;
    }
  }
  const mx_cpu_lowp_kernels_t *kt = mx_cpu_lowp_best(et);
  if (!kt) return mx_error_set(MX_ERR_UNSUPPORTED, "no %s matmul kernels", mx_elem_name(et));
  if (w->n_lowp == w->cap_lowp) {
    int32_t cap = w->cap_lowp ? 2 * w->cap_lowp : 32;
    mx_packed_lowp_entry_t *e = realloc(w->lowp, (size_t)cap * sizeof *e);
    if (!e) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    w->lowp = e;
    w->cap_lowp = cap;
  }
  mx_cpu_packed_lowp_t *pk = NULL;
  mx_status_t st = mx_cpu_pack_lowp(kt, pool, data, k, n, k, &pk);
  if (st) return st;
  w->lowp[w->n_lowp++] = (mx_packed_lowp_entry_t){data, n, k, pk};
  w->bytes += mx_cpu_packed_lowp_bytes(pk);
  // The packed copy is what runs from now on: the source may give its memory back.
  if (w->on_packed) w->on_packed(w->on_packed_user, data, (size_t)n * (size_t)k * sizeof *data);
  *out = pk;
  return MX_OK;
}

void mx_cpu_weights_lowp_free(mx_cpu_weights_t *w) {
  for (int32_t i = 0; i < w->n_lowp; i++) mx_cpu_packed_lowp_destroy(w->lowp[i].packed);
  free(w->lowp);
  w->lowp = NULL;
  w->n_lowp = w->cap_lowp = 0;
}

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

void mx_cpu_lowp_step_exec(mx_cpu_plan_t *p, mx_step_t *s, int ith, int nth) {
  uint8_t **vp = p->vp;
  switch (s->kind) {
    case ST_CONVERT:
      mx_cpu_convert(vp[s->in[0]], (mx_elem_type_t)s->p[1], vp[s->out[0]], (mx_elem_type_t)s->p[2],
                     s->p[0], ith, nth);
      break;
    case ST_GEMM_LOWP: {
      const uint16_t *x = (const uint16_t *)vp[s->in[0]];
      float *y = (float *)vp[s->out[0]];
      if (s->p[0] == 1)
        mx_cpu_gemv_packed_lowp_dyn(s->wl, x, y, &p->work[s - p->steps], ith, nth);
      else
        mx_cpu_gemm_packed_lowp(s->wl, x, s->p[2], y, s->p[1], s->p[0], ith, nth);
      break;
    }
    case ST_EMBED_ROWS:
      embed_rows(vp[s->in[0]], s->p[0], (size_t)(s->p[1] * s->p[3]), (const int32_t *)vp[s->in[1]],
                 s->p[2], vp[s->out[0]], ith, nth);
      break;
    case ST_ATTENTION_KV:
      mx_cpu_attention_kv((const float *)vp[s->in[0]], vp[s->in[1]], vp[s->in[2]],
                          (mx_elem_type_t)s->p[7], (const int32_t *)vp[s->in[3]],
                          (float *)vp[s->out[0]], s->p[0], s->p[1], s->p[2], s->p[3], s->p[4],
                          s->p[5], s->fp[0], s->p[6], s->fp[1], p->scratch, ith, nth);
      break;
    default:
      break;
  }
}
