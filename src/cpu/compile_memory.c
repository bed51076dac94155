// Memory plan of the plan compiler: liveness of every arena slot (on roots: a view keeps its
// base alive), then first-fit offsets in definition order, so values whose lifetimes do not meet
// share bytes; the GEMMs' packed-X region goes after every slot.
#include <stdlib.h>
#include <string.h>

#include "cpu/compile_internal.h"

mx_status_t mx_plan_memory(mx_cpu_plan_t *p) {
  // Liveness on roots.
  for (int32_t i = 0; i < p->n_slots; i++) {
    p->slots[i].def = INT32_MAX;
    p->slots[i].last = -1;
  }
  for (int32_t k = 0; k < p->n_steps; k++) {
    const mx_step_t *s = &p->steps[k];
    for (int32_t j = 0; j < s->n_out; j++) {
      mx_slot_t *r = &p->slots[root(p, s->out[j])];
      if (k < r->def) r->def = k;
      if (k > r->last) r->last = k;
    }
    for (int32_t j = 0; j < s->n_in; j++) {
      mx_slot_t *r = &p->slots[root(p, s->in[j])];
      if (k > r->last) r->last = k;
      if (k < r->def) r->def = k;  // read before any write (in-place ops): still live here
    }
  }
  for (int32_t r = 0; r < p->f->n_results; r++)
    p->slots[root(p, p->result_slot[r])].last = INT32_MAX;
  if (p->keep_values)  // debugging: nothing is overwritten before the end of the run
    for (int32_t i = 0; i < p->n_slots; i++) p->slots[i].last = INT32_MAX;
  // First fit, by definition order.
  int32_t *order = malloc((size_t)(p->n_slots ? p->n_slots : 1) * sizeof *order);
  if (!order) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  int32_t n = 0;
  for (int32_t i = 0; i < p->n_slots; i++)
    if (p->slots[i].kind == SLOT_ARENA && p->slots[i].def != INT32_MAX) order[n++] = i;
  // Insertion sort by def (n is small: hundreds).
  for (int32_t i = 1; i < n; i++) {
    int32_t x = order[i], j = i - 1;
    while (j >= 0 && p->slots[order[j]].def > p->slots[x].def) {
      order[j + 1] = order[j];
      j--;
    }
    order[j + 1] = x;
  }
  size_t total = 0;
  for (int32_t i = 0; i < n; i++) {
    mx_slot_t *s = &p->slots[order[i]];
    size_t sz = align64(s->nbytes ? s->nbytes : 1), off = 0;
    bool moved = true;
    while (moved) {
      moved = false;
      for (int32_t j = 0; j < i; j++) {
        const mx_slot_t *o = &p->slots[order[j]];
        bool live = !(o->last < s->def || s->last < o->def);
        size_t osz = align64(o->nbytes ? o->nbytes : 1);
        if (live && off < o->off + osz && o->off < off + sz) {
          off = o->off + osz;
          moved = true;
        }
      }
    }
    s->off = off;
    if (off + sz > total) total = off + sz;
  }
  free(order);
  if (p->apack_bytes) {  // after every slot: live through all the GEMM steps
    p->apack_off = total;
    total += align64(p->apack_bytes);
  }
  p->arena_bytes = total;
  if (total && !p->external_arena) {
    p->own_arena = true;
    p->arena = aligned_alloc(64, total);
    if (!p->arena) return mx_error_set(MX_ERR_NOMEM, "out of memory (arena of %zu bytes)", total);
    memset(p->arena, 0, total);
  }
  return MX_OK;
}
