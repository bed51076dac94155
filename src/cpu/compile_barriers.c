// Barrier elision: a step needs the barrier before it only when it reads or writes bytes that a
// step since the last barrier writes, or writes bytes such a step reads. Byte ranges are
// compared within the arena and within one argument (distinct arguments never overlap). Also
// the order of the GEMMs' packed X (apack): packed once, reused while unchanged.
#include "cpu/compile_internal.h"

typedef struct range {
  int32_t space;  // -1: arena, >= 0: argument index, -2: constant (never written)
  size_t b, e;
} range_t;

enum { MAX_PENDING = 64 };

static range_t slot_range(const mx_cpu_plan_t *p, int32_t v) {
  const mx_slot_t *s = &p->slots[v];
  int32_t r = root(p, v);
  const mx_slot_t *rs = &p->slots[r];
  size_t off = (s->kind == SLOT_VIEW ? s->off : 0);
  range_t g = {-2, 0, 0};
  if (rs->kind == SLOT_ARENA) {
    g.space = -1;
    off += rs->off;
  } else if (rs->kind == SLOT_ARG) {
    g.space = rs->arg;
  }
  g.b = off;
  g.e = off + (s->nbytes ? s->nbytes : 1);
  return g;
}

static bool ranges_meet(range_t a, range_t b) {
  return a.space == b.space && a.space != -2 && a.b < b.e && b.b < a.e;
}

static int32_t step_writes(const mx_cpu_plan_t *p, const mx_step_t *s, range_t *w) {
  int32_t n = 0;
  for (int32_t j = 0; j < s->n_out; j++) w[n++] = slot_range(p, s->out[j]);
  if (s->kind == ST_DUS_INPLACE) w[n++] = slot_range(p, s->op->results[0]);
  if (s->kind == ST_ROPE && s->rope.cache_op) w[n++] = slot_range(p, s->rope.cache_op->results[0]);
  return n;
}

// GEMM steps (m > mr rows) read X packed once into the arena's apack region (exec.c step_apack)
// instead of packing it again for every chunk of panels. Before plan_memory: marks them
// APACK_PACK and sizes the region.
void mx_plan_apack_size(mx_cpu_plan_t *p) {
  size_t floats = 0;
  for (int32_t k = 0; k < p->n_steps; k++) {
    mx_step_t *s = &p->steps[k];
    if ((s->kind != ST_GEMM && s->kind != ST_GATED_UP) || s->gemm.rows_as_gemv ||
        s->gemm.m <= mx_cpu_kernels_gemm_rows(s->w->kt))
      continue;
    s->gemm.apack = APACK_PACK;
    size_t f = mx_cpu_gemm_apack_floats(s->w->kt, s->gemm.m, s->w->k);
    if (f > floats) floats = f;
  }
  p->apack_bytes = floats * sizeof(float);
}

// After plan_barriers: a step whose X is the last packed one, unchanged since, reuses the packed
// copy (q, k and v of one layer pack once); a packing step gets a barrier first
// (gemm.apack_barrier) when a step since the last barrier may still read the region.
void mx_plan_apack_order(mx_cpu_plan_t *p) {
  int32_t packed = -1;  // step that packed the region's current contents
  bool read_since_barrier = false;
  for (int32_t k = 0; k < p->n_steps; k++) {
    mx_step_t *s = &p->steps[k];
    if (s->barrier_before) read_since_barrier = false;
    if ((s->kind != ST_GEMM && s->kind != ST_GATED_UP) || s->gemm.apack == APACK_NONE) continue;
    bool reuse = packed >= 0 && p->steps[packed].in[0] == s->in[0] &&
                 p->steps[packed].gemm.m == s->gemm.m && p->steps[packed].w->k == s->w->k;
    range_t x = slot_range(p, s->in[0]), w[STEP_MAX_OUT + 2];
    for (int32_t i = packed + 1; i < k && reuse; i++) {
      int32_t nw = step_writes(p, &p->steps[i], w);
      for (int32_t j = 0; j < nw && reuse; j++) reuse = !ranges_meet(x, w[j]);
    }
    if (reuse) {
      s->gemm.apack = APACK_REUSE;
    } else {
      s->gemm.apack = APACK_PACK;
      s->gemm.apack_barrier = read_since_barrier;
      packed = k;
    }
    read_since_barrier = true;
  }
}

void mx_plan_barriers(mx_cpu_plan_t *p) {
  range_t pr[MAX_PENDING], pw[MAX_PENDING];
  int32_t npr = 0, npw = 0;
  p->n_barriers = 0;
  for (int32_t k = 0; k < p->n_steps; k++) {
    mx_step_t *s = &p->steps[k];
    range_t r[STEP_MAX_IN], w[STEP_MAX_OUT + 2];
    int32_t nr = s->n_in, nw = step_writes(p, s, w);
    for (int32_t j = 0; j < nr; j++) r[j] = slot_range(p, s->in[j]);
    bool need = k > 0 && (npr + nr > MAX_PENDING || npw + nw > MAX_PENDING);
    for (int32_t j = 0; j < nr && !need; j++)
      for (int32_t i = 0; i < npw && !need; i++) need = ranges_meet(r[j], pw[i]);
    for (int32_t j = 0; j < nw && !need; j++) {
      for (int32_t i = 0; i < npw && !need; i++) need = ranges_meet(w[j], pw[i]);
      for (int32_t i = 0; i < npr && !need; i++) need = ranges_meet(w[j], pr[i]);
    }
    s->barrier_before = need;
    if (need) {
      p->n_barriers++;
      npr = npw = 0;
    }
    for (int32_t j = 0; j < nr; j++) pr[npr++] = r[j];
    for (int32_t j = 0; j < nw; j++) pw[npw++] = w[j];
  }
}
