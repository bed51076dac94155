// The packed-weight cache (mx_cpu_weights_t, cpu_plan.h): one keyed cache of the packed copies
// of a model's weights, f32, bf16 / f16 and quantized, shared by every plan compiled with it.
// An entry is found by its kind, source bytes and shape, and by what tells two packings of the
// same bytes apart (the element type of a bf16 / f16 packing, the kernels of a quantized one).
// The packings' data live in the cache's slab (cpu/stream_alloc.h), released with it.
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels_internal.h"
#include "cpu/kernels_lowp_internal.h"
#include "cpu/plan_internal.h"

mx_status_t mx_cpu_weights_create(const mx_cpu_kernels_t *kt, mx_cpu_weights_t **out) {
  *out = NULL;
  mx_cpu_weights_t *w = calloc(1, sizeof *w);
  if (!w) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  w->kt = kt ? kt : mx_cpu_kernels_best();
  w->slab = mx_cpu_slab_create();
  if (!w->slab) {
    free(w);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  *out = w;
  return MX_OK;
}

void mx_cpu_weights_destroy(mx_cpu_weights_t *w) {
  if (!w) return;
  for (int32_t i = 0; i < w->n; i++) {
    mx_packed_entry_t *e = &w->e[i];
    if (e->kind == PACKED_F32) {
      e->f32->data = NULL;  // the slab's
      mx_cpu_packed_destroy(e->f32);
    } else if (e->kind == PACKED_LOWP) {
      e->lowp->data = NULL;
      mx_cpu_packed_lowp_destroy(e->lowp);
    } else {
      e->q->q = NULL;
      mx_cpu_qpacked_destroy(e->q);
    }
  }
  mx_cpu_slab_destroy(w->slab);
  free(w->e);
  free(w);
}

size_t mx_cpu_weights_bytes(const mx_cpu_weights_t *w) { return w ? w->bytes : 0; }
void mx_cpu_weights_on_packed(mx_cpu_weights_t *w, mx_cpu_packed_source_fn fn, void *user) {
  w->on_packed = fn;
  w->on_packed_user = user;
}

void mx_cpu_weights_on_progress(mx_cpu_weights_t *w, const mx_progress_t *p, uint64_t total) {
  w->progress = p ? *p : (mx_progress_t){0};
  w->progress_done = 0;
  w->progress_total = total;
}

// After a new packing of `nbytes` source bytes.
static void count_packed(mx_cpu_weights_t *w, uint64_t nbytes) {
  w->progress_done += nbytes;
  mx_progress_report(&w->progress, "packing", w->progress_done, w->progress_total);
}

// After a new float packing, which plans read from now on instead of its source.
static void packed(mx_cpu_weights_t *w, const void *data, size_t nbytes) {
  if (w->on_packed) w->on_packed(w->on_packed_user, data, nbytes);
  count_packed(w, nbytes);
}

int32_t mx_cpu_weights_count(const mx_cpu_weights_t *w) {
  int32_t n = 0;
  for (int32_t i = 0; w && i < w->n; i++) n += w->e[i].kind != PACKED_Q;  // matrices, not quantized
  return n;
}

// The entry of (kind, data, n, k, kn) whose packing is of element type et (bf16 / f16) or for
// the quantized kernels qk; NULL when there is none.
static const mx_packed_entry_t *find(const mx_cpu_weights_t *w, mx_packed_kind_t kind,
                                     const void *data, int64_t n, int64_t k, bool kn,
                                     mx_elem_type_t et, const mx_cpu_qkernels_t *qk) {
  for (int32_t i = 0; i < w->n; i++) {
    const mx_packed_entry_t *e = &w->e[i];
    if (e->kind != kind || e->data != data || e->n != n || e->k != k || e->kn != kn) continue;
    if ((kind == PACKED_LOWP && e->lowp->et != et) || (kind == PACKED_Q && e->q->qk != qk))
      continue;
    return e;
  }
  return NULL;
}

// Room for one more entry, made before packing so that a packed copy is never left unowned.
static mx_status_t reserve(mx_cpu_weights_t *w) {
  if (w->n < w->cap) return MX_OK;
  int32_t cap = w->cap ? 2 * w->cap : 32;
  mx_packed_entry_t *e = realloc(w->e, (size_t)cap * sizeof *e);
  if (!e) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  w->e = e;
  w->cap = cap;
  return MX_OK;
}

// W[n, k] row-major from its transpose src [k, n] of esz-byte elements, in a new buffer (the
// caller frees it): the packers read rows of W. Blocks of 32 x 32 keep both sides in cache.
static mx_status_t transposed(const void *src, size_t esz, int64_t n, int64_t k, void **out) {
  *out = NULL;
  uint8_t *dst = malloc((size_t)n * (size_t)k * esz);
  if (!dst)
    return mx_error_set(MX_ERR_NOMEM, "out of memory transposing W[%lld, %lld]", (long long)n,
                        (long long)k);
  const uint8_t *s = src;
  for (int64_t i0 = 0; i0 < k; i0 += 32)
    for (int64_t j0 = 0; j0 < n; j0 += 32)
      for (int64_t i = i0; i < k && i < i0 + 32; i++)
        for (int64_t j = j0; j < n && j < j0 + 32; j++)
          memcpy(dst + ((size_t)j * (size_t)k + (size_t)i) * esz,
                 s + ((size_t)i * (size_t)n + (size_t)j) * esz, esz);
  *out = dst;
  return MX_OK;
}

mx_status_t mx_cpu_packed_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, const float *data,
                              int64_t n, int64_t k, bool kn, const mx_cpu_packed_t **out) {
  const mx_packed_entry_t *e = find(w, PACKED_F32, data, n, k, kn, MX_ELEM_F32, NULL);
  if (e) {
    *out = e->f32;
    return MX_OK;
  }
  MX_TRY(reserve(w));
  mx_cpu_packed_t *pk = NULL;
  void *t = NULL;
  if (kn) MX_TRY(transposed(data, sizeof *data, n, k, &t));
  mx_status_t st = mx_cpu_pack_f32_in(w->kt, pool, kn ? t : data, k, n, k, w->slab, &pk);
  free(t);
  if (st) return st;
  w->e[w->n++] =
      (mx_packed_entry_t){.kind = PACKED_F32, .data = data, .n = n, .k = k, .kn = kn, .f32 = pk};
  w->bytes += (size_t)pk->panels * (size_t)pk->k * (size_t)pk->nr * sizeof(float);
  packed(w, data, (size_t)n * (size_t)k * sizeof(float));
  *out = pk;
  return MX_OK;
}

mx_status_t mx_cpu_packed_lowp_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, mx_elem_type_t et,
                                   const uint16_t *data, int64_t n, int64_t k, bool kn,
                                   const mx_cpu_packed_lowp_t **out) {
  const mx_packed_entry_t *e = find(w, PACKED_LOWP, data, n, k, kn, et, NULL);
  if (e) {
    *out = e->lowp;
    return MX_OK;
  }
  const mx_cpu_lowp_kernels_t *kt = mx_cpu_lowp_best(et);
  if (!kt) return mx_error_set(MX_ERR_UNSUPPORTED, "no %s matmul kernels", mx_elem_name(et));
  MX_TRY(reserve(w));
  mx_cpu_packed_lowp_t *pk = NULL;
  void *t = NULL;
  if (kn) MX_TRY(transposed(data, sizeof *data, n, k, &t));
  mx_status_t st = mx_cpu_pack_lowp_in(kt, pool, kn ? t : data, k, n, k, w->slab, &pk);
  free(t);
  if (st) return st;
  w->e[w->n++] =
      (mx_packed_entry_t){.kind = PACKED_LOWP, .data = data, .n = n, .k = k, .kn = kn, .lowp = pk};
  w->bytes += mx_cpu_packed_lowp_bytes(pk);
  // The packed copy is what runs from now on: the source may give its memory back.
  packed(w, data, (size_t)n * (size_t)k * sizeof *data);
  *out = pk;
  return MX_OK;
}

mx_status_t mx_cpu_qpacked_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, mx_cpu_qkernel_t choice,
                               const mx_cpu_qsrc_t *src, const mx_cpu_qpacked_t **out) {
  const mx_cpu_qkernels_t *qk = mx_cpu_qkernels_for(w->kt, src->bits, choice);
  const mx_packed_entry_t *e = find(w, PACKED_Q, src->w, src->n, src->k, false, MX_ELEM_F32, qk);
  if (e) {
    *out = e->q;
    return MX_OK;
  }
  MX_TRY(reserve(w));
  mx_cpu_qpacked_t *pk = NULL;
  MX_TRY(mx_cpu_qpack_in(w->kt, qk, pool, src, w->slab, &pk));
  w->e[w->n++] =
      (mx_packed_entry_t){.kind = PACKED_Q, .data = src->w, .n = src->n, .k = src->k, .q = pk};
  w->bytes += pk->bytes;
  count_packed(w, (uint64_t)src->n * (uint64_t)src->k * (uint64_t)src->bits / 8);
  *out = pk;
  return MX_OK;
}
