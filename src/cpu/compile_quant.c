// The quantized-weight side of the packed-weight cache (see plan_internal.h): one packed copy
// per quantized weight, shared by every plan compiled with the cache.
#include <stdlib.h>

#include "cpu/plan_internal.h"

mx_status_t mx_cpu_qpacked_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, const mx_cpu_qsrc_t *src,
                               const mx_cpu_qpacked_t **out) {
  const mx_cpu_qkernels_t *qk = mx_cpu_qkernels_for(w->kt, src->bits);
  for (int32_t i = 0; i < w->nq; i++) {
    const mx_cpu_qpacked_t *p = w->qe[i].packed;
    if (w->qe[i].data == src->w && w->qe[i].n == src->n && w->qe[i].k == src->k && p->qk == qk) {
      *out = p;
      return MX_OK;
    }
  }
  if (w->nq == w->capq) {
    int32_t cap = w->capq ? 2 * w->capq : 32;
    mx_qpacked_entry_t *e = realloc(w->qe, (size_t)cap * sizeof *e);
    if (!e) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    w->qe = e;
    w->capq = cap;
  }
  mx_cpu_qpacked_t *pk = NULL;
  mx_status_t st = mx_cpu_qpack(w->kt, qk, pool, src, &pk);
  if (st) return st;
  w->qe[w->nq++] = (mx_qpacked_entry_t){src->w, src->n, src->k, pk};
  w->bytes += pk->bytes;
  *out = pk;
  return MX_OK;
}

void mx_cpu_qpacked_free_all(mx_cpu_weights_t *w) {
  for (int32_t i = 0; i < w->nq; i++) mx_cpu_qpacked_destroy(w->qe[i].packed);
  free(w->qe);
  w->qe = NULL;
  w->nq = w->capq = 0;
}
