// StableHLO process grids: interpreter.run_parallel and the ops that communicate between
// processes (see interp_parallel.h and the spec's "Execution / Parallel execution" sections).
//
// Each process runs on its own thread with its own interpreter state; the module is only read.
// Processes meet at rendezvous points keyed by (process group, channel id): every member posts
// a copy of its operands, waits until the whole group has posted, and then computes its own
// result from the posted values (all members compute the same reductions in the same order,
// so results agree; the collective ops themselves are in interp_collective.c). send/recv use
// FIFO queues per channel; infeed pops producer functions.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hlo/interp_parallel_internal.h"

// A wait that sees no progress anywhere in the grid for this long reports a deadlock.
#define MX_DEADLOCK_SECONDS 120

const char *mx_pg_op_label(const mx_op_t *op) {
  return op->name ? op->name : mx_opcode_name(op->code);
}

int32_t mx_pg_flat_id(const grid_t *g, int32_t r, int32_t p) { return r * g->n_part + p; }

void mx_pg_free_values(mx_tensor_t *v, int32_t n) {
  if (!v) return;
  for (int32_t i = 0; i < n; i++) {
    mx_tensor_free(&v[i]);
    memset(&v[i], 0, sizeof v[i]);
  }
}

// Copies any value kind (tensor or token).
mx_status_t mx_pg_copy_value(mx_tensor_t *dst, const mx_tensor_t *src) {
  memset(dst, 0, sizeof *dst);
  if (src->type.kind == MX_TYPE_TENSOR) return mx_tensor_clone(dst, src);
  if (src->type.kind == MX_TYPE_TOKEN) {
    dst->type = src->type;
    return MX_OK;
  }
  return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: tuples between processes");
}

// Allocates result i of op with its declared type (tensor or token).
mx_status_t mx_pg_alloc_result(const mx_func_t *f, const mx_op_t *op, int32_t i, mx_tensor_t *out) {
  memset(out, 0, sizeof *out);
  if (op->results[i] < 0 || op->results[i] >= f->n_values)
    return mx_error_set(MX_ERR_RUNTIME, "result value id out of range");
  const mx_type_t *t = &f->values[op->results[i]].type;
  if (t->kind == MX_TYPE_TOKEN) {
    out->type = *t;
    return MX_OK;
  }
  if (t->kind != MX_TYPE_TENSOR)
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s with tuple results",
                        mx_pg_op_label(op));
  mx_status_t st = mx_tensor_alloc(out, t);
  if (st) memset(out, 0, sizeof *out);
  return st;
}

mx_status_t mx_pg_alloc_results(const mx_func_t *f, const mx_op_t *op, mx_tensor_t *out) {
  for (int32_t i = 0; i < op->n_results; i++) {
    mx_status_t st = mx_pg_alloc_result(f, op, i, &out[i]);
    if (st) {
      mx_pg_free_values(out, i);
      return st;
    }
  }
  return MX_OK;
}

int64_t mx_pg_channel_id(const mx_op_t *op) {
  const mx_attr_t *a = mx_op_attr(op, "channel_handle");
  const mx_attr_t *h = a ? mx_attr_field(a, "handle") : NULL;
  if (h && (h->kind == MX_ATTR_INT || h->kind == MX_ATTR_BOOL)) return h->i;
  const mx_attr_t *c = mx_op_attr(op, "channel_id");
  return c && c->kind == MX_ATTR_INT ? c->i : 0;
}

bool mx_pg_attr_flag(const mx_op_t *op, const char *name) {
  const mx_attr_t *a = mx_op_attr(op, name);
  if (!a) return false;
  if (a->kind == MX_ATTR_UNIT) return true;
  return (a->kind == MX_ATTR_BOOL || a->kind == MX_ATTR_INT) && a->i != 0;
}

// ---------------------------------------------------------------------------------------------
// Waiting
// ---------------------------------------------------------------------------------------------

// Waits on the grid condition (mutex held). Fails when the grid was aborted, when every live
// process has been waiting for three quiet seconds (nobody can make progress), or when nothing
// in the grid has progressed for MX_DEADLOCK_SECONDS.
static mx_status_t grid_wait(grid_t *g, uint64_t *seen, int32_t *idle_s, const char *what) {
  if (g->aborted) return mx_error_set(MX_ERR_RUNTIME, "%s: another process failed", what);
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  ts.tv_sec += 1;
  g->n_blocked++;
  int rc = cnd_timedwait(&g->cv, &g->mu, &ts);
  g->n_blocked--;
  if (g->aborted) return mx_error_set(MX_ERR_RUNTIME, "%s: another process failed", what);
  if (g->epoch != *seen) {
    *seen = g->epoch;
    *idle_s = 0;
    return MX_OK;
  }
  if (rc != thrd_timedout) return MX_OK;
  ++*idle_s;
  int32_t alive = g->n_rep * g->n_part - g->n_finished;
  if ((g->n_blocked + 1 >= alive && *idle_s >= 3) || *idle_s >= MX_DEADLOCK_SECONDS)
    return mx_error_set(MX_ERR_RUNTIME, "%s: processes deadlocked (all waiting, none can proceed)",
                        what);
  return MX_OK;
}

// ---------------------------------------------------------------------------------------------
// Rendezvous
// ---------------------------------------------------------------------------------------------

static void rdv_free(rdv_t *r) {
  if (!r) return;
  mx_pg_free_values(r->vals, r->gsize * r->n);
  free(r->vals);
  free(r->members);
  free(r->posted);
  free(r);
}

static rdv_t *rdv_new(int64_t channel, const int32_t *members, int32_t gsize, int32_t n) {
  rdv_t *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->channel = channel;
  r->gsize = gsize;
  r->n = n;
  r->members = malloc((size_t)gsize * sizeof *r->members);
  r->posted = calloc((size_t)gsize, sizeof *r->posted);
  r->vals = calloc((size_t)gsize * (size_t)(n > 0 ? n : 1), sizeof *r->vals);
  if (!r->members || !r->posted || !r->vals) {
    rdv_free(r);
    return NULL;
  }
  memcpy(r->members, members, (size_t)gsize * sizeof *members);
  return r;
}

static bool rdv_matches(const rdv_t *r, int64_t channel, const int32_t *members, int32_t gsize,
                        int32_t n, int32_t self) {
  if (r->channel != channel || r->gsize != gsize || r->n != n || r->arrived >= gsize) return false;
  if (r->posted[self]) return false;
  return memcmp(r->members, members, (size_t)gsize * sizeof *members) == 0;
}

// Posts this process's `n` values to the rendezvous of `members` (self = own index) and waits
// for the group; then copies all gsize * n values (group order) into `all`.
mx_status_t mx_pg_rendezvous(mx_proc_t *p, const mx_op_t *op, const int32_t *members, int32_t gsize,
                             int32_t self, int64_t channel, const mx_tensor_t *const *vals,
                             int32_t n, mx_tensor_t *all) {
  grid_t *g = p->g;
  mx_status_t st = MX_OK;
  mtx_lock(&g->mu);
  rdv_t *r = g->rdvs, *last = NULL;
  for (; r; last = r, r = r->next)
    if (rdv_matches(r, channel, members, gsize, n, self)) break;
  if (!r) {
    r = rdv_new(channel, members, gsize, n);
    if (!r) {
      mtx_unlock(&g->mu);
      return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", mx_pg_op_label(op));
    }
    if (last)
      last->next = r;
    else
      g->rdvs = r;
  }
  for (int32_t i = 0; i < n && !st; i++) st = mx_pg_copy_value(&r->vals[self * n + i], vals[i]);
  if (st) {
    g->aborted = true;
    cnd_broadcast(&g->cv);
    mtx_unlock(&g->mu);
    return st;
  }
  r->posted[self] = true;
  r->arrived++;
  g->epoch++;
  cnd_broadcast(&g->cv);
  uint64_t seen = g->epoch;
  int32_t idle = 0;
  while (r->arrived < gsize && !st) {
    if (g->aborted) {  // checked first: a failed process is also a finished one
      st = mx_error_set(MX_ERR_RUNTIME, "%s: another process failed", mx_pg_op_label(op));
      break;
    }
    for (int32_t m = 0; m < gsize; m++)
      if (!r->posted[m] && g->finished[members[m]]) {
        st = mx_error_set(MX_ERR_RUNTIME, "%s: process %d finished without joining the collective",
                          mx_pg_op_label(op), (int)members[m]);
        break;
      }
    if (!st) st = grid_wait(g, &seen, &idle, mx_pg_op_label(op));
  }
  if (!st) {
    for (int32_t i = 0; i < gsize * n && !st; i++) st = mx_pg_copy_value(&all[i], &r->vals[i]);
    if (st) mx_pg_free_values(all, gsize * n);
    if (++r->left == gsize) {
      rdv_t **pp = &g->rdvs;
      while (*pp && *pp != r) pp = &(*pp)->next;
      if (*pp) *pp = r->next;
      rdv_free(r);
    }
  }
  mtx_unlock(&g->mu);
  return st;
}

// ---------------------------------------------------------------------------------------------
// replica_id / partition_id
// ---------------------------------------------------------------------------------------------

mx_status_t mx_interp_process_id(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out) {
  (void)in;
  if (op->n_operands != 0 || op->n_results != 1)
    return mx_error_set(MX_ERR_RUNTIME, "%s takes no operands and has one result",
                        mx_pg_op_label(op));
  mx_status_t st = mx_pg_alloc_result(f, op, 0, &out[0]);
  if (st) return st;
  if (out[0].type.kind != MX_TYPE_TENSOR || out[0].type.rank != 0 ||
      !mx_elem_is_int(out[0].type.elem)) {
    mx_pg_free_values(out, 1);
    return mx_error_set(MX_ERR_RUNTIME, "%s: result must be an integer scalar", mx_pg_op_label(op));
  }
  const mx_proc_t *p = mx_interp_proc(ip);
  bool rep = op->name && strcmp(op->name, "stablehlo.replica_id") == 0;
  mx_tensor_set_i64(&out[0], 0, p ? (rep ? p->replica : p->partition) : 0);
  return MX_OK;
}

// ---------------------------------------------------------------------------------------------
// send / recv / infeed / outfeed
// ---------------------------------------------------------------------------------------------

static chan_t *find_chan(grid_t *g, int64_t handle, bool create) {
  for (chan_t *c = g->chans; c; c = c->next)
    if (c->handle == handle) return c;
  if (!create) return NULL;
  chan_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->handle = handle;
  c->next = g->chans;
  g->chans = c;
  return c;
}

static void msg_free(msg_t *m) {
  if (!m) return;
  mx_pg_free_values(m->vals, m->n);
  free(m->vals);
  free(m);
}

static bool all_others_finished(const grid_t *g, const mx_proc_t *p) {
  int32_t me = mx_pg_flat_id(g, p->replica, p->partition);
  for (int32_t i = 0; i < g->n_rep * g->n_part; i++)
    if (i != me && !g->finished[i]) return false;
  return true;
}

static mx_status_t exec_send(mx_proc_t *p, const mx_op_t *op, const mx_tensor_t *const *in,
                             int32_t n_data) {
  msg_t *m = calloc(1, sizeof *m);
  if (!m) return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", mx_pg_op_label(op));
  m->vals = calloc((size_t)(n_data > 0 ? n_data : 1), sizeof *m->vals);
  mx_status_t st = m->vals ? MX_OK : mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < n_data && !st; i++, m->n++) st = mx_pg_copy_value(&m->vals[i], in[i]);
  if (st) {
    msg_free(m);
    return st;
  }
  grid_t *g = p->g;
  mtx_lock(&g->mu);
  chan_t *c = find_chan(g, mx_pg_channel_id(op), true);
  if (!c) {
    mtx_unlock(&g->mu);
    msg_free(m);
    return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", mx_pg_op_label(op));
  }
  if (c->tail)
    c->tail->next = m;
  else
    c->head = m;
  c->tail = m;
  g->epoch++;
  cnd_broadcast(&g->cv);
  mtx_unlock(&g->mu);
  return MX_OK;
}

static mx_status_t exec_recv(mx_proc_t *p, const mx_func_t *f, const mx_op_t *op,
                             mx_tensor_t *out) {
  grid_t *g = p->g;
  int64_t handle = mx_pg_channel_id(op);
  mx_status_t st = MX_OK;
  msg_t *m = NULL;
  mtx_lock(&g->mu);
  uint64_t seen = g->epoch;
  int32_t idle = 0;
  for (;;) {
    chan_t *c = find_chan(g, handle, false);
    if (c && c->head) {
      m = c->head;
      c->head = m->next;
      if (!c->head) c->tail = NULL;
      break;
    }
    if (g->aborted) {
      st = mx_error_set(MX_ERR_RUNTIME, "%s: another process failed", mx_pg_op_label(op));
      break;
    }
    if (all_others_finished(g, p)) {
      st = mx_error_set(MX_ERR_RUNTIME, "%s: nothing was sent on channel %" PRId64,
                        mx_pg_op_label(op), handle);
      break;
    }
    st = grid_wait(g, &seen, &idle, mx_pg_op_label(op));
    if (st) break;
  }
  mtx_unlock(&g->mu);
  if (st) return st;
  int32_t n_data = op->n_results - 1;
  if (m->n != n_data)
    st = mx_error_set(MX_ERR_RUNTIME, "%s: message has %d values, expected %d", mx_pg_op_label(op),
                      (int)m->n, (int)n_data);
  for (int32_t i = 0; i < n_data && !st; i++) {
    const mx_type_t *t = &f->values[op->results[i]].type;
    if (!mx_type_equal(t, &m->vals[i].type))
      st = mx_error_set(MX_ERR_RUNTIME, "%s: received value %d has the wrong type",
                        mx_pg_op_label(op), (int)i);
  }
  if (!st) {
    for (int32_t i = 0; i < n_data; i++) {
      out[i] = m->vals[i];
      memset(&m->vals[i], 0, sizeof m->vals[i]);
    }
    st = mx_pg_alloc_result(f, op, n_data, &out[n_data]);
    if (st) mx_pg_free_values(out, n_data);
  }
  msg_free(m);
  return st;
}

static mx_status_t exec_infeed(mx_interp_t *ip, mx_proc_t *p, const mx_func_t *f, const mx_op_t *op,
                               mx_tensor_t *out) {
  grid_t *g = p->g;
  mtx_lock(&g->mu);
  int32_t k = g->infeed_next++;
  const mx_attr_t *q = g->infeed;
  mtx_unlock(&g->mu);
  if (!q || q->kind != MX_ATTR_ARRAY || k >= q->n || !q->items[k].s)
    return mx_error_set(MX_ERR_RUNTIME, "%s: the infeed queue is empty", mx_pg_op_label(op));
  const mx_func_t *src = mx_module_find_func(mx_interp_module(ip), q->items[k].s);
  if (!src)
    return mx_error_set(MX_ERR_RUNTIME, "%s: @%s not found", mx_pg_op_label(op), q->items[k].s);
  int32_t n_data = op->n_results - 1;
  if (src->n_results != n_data || (src->body && src->body->n_args != 0))
    return mx_error_set(MX_ERR_RUNTIME, "%s: @%s must take no arguments and return %d values",
                        mx_pg_op_label(op), src->name, (int)n_data);
  mx_status_t st = mx_interp_call(ip, src, NULL, 0, out);
  if (st) return st;
  for (int32_t i = 0; i < n_data && !st; i++)
    if (!mx_type_equal(&out[i].type, &f->values[op->results[i]].type))
      st = mx_error_set(MX_ERR_RUNTIME, "%s: infeed value %d has the wrong type",
                        mx_pg_op_label(op), (int)i);
  if (!st) st = mx_pg_alloc_result(f, op, n_data, &out[n_data]);
  if (st) mx_pg_free_values(out, n_data);
  return st;
}

mx_status_t mx_interp_channel_op(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out) {
  mx_proc_t *p = mx_interp_proc(ip);
  if (!p)
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s outside interpreter.run_parallel",
                        mx_pg_op_label(op));
  bool is_send = strcmp(op->name, "stablehlo.send") == 0;
  bool is_out = strcmp(op->name, "stablehlo.outfeed") == 0;
  if (is_send || is_out) {
    // operands: data..., token -> token
    if (op->n_operands < 1 || op->n_results != 1 ||
        in[op->n_operands - 1]->type.kind != MX_TYPE_TOKEN)
      return mx_error_set(MX_ERR_RUNTIME, "%s takes values and a token and returns a token",
                          mx_pg_op_label(op));
    mx_status_t st = is_send ? exec_send(p, op, in, op->n_operands - 1) : MX_OK;
    if (!st) st = mx_pg_alloc_result(f, op, 0, &out[0]);
    return st;
  }
  // recv / infeed: token -> values..., token
  if (op->n_operands != 1 || in[0]->type.kind != MX_TYPE_TOKEN || op->n_results < 1 ||
      f->values[op->results[op->n_results - 1]].type.kind != MX_TYPE_TOKEN)
    return mx_error_set(MX_ERR_RUNTIME, "%s takes a token and returns values and a token",
                        mx_pg_op_label(op));
  if (strcmp(op->name, "stablehlo.recv") == 0) return exec_recv(p, f, op, out);
  return exec_infeed(ip, p, f, op, out);
}

// ---------------------------------------------------------------------------------------------
// interpreter.run_parallel
// ---------------------------------------------------------------------------------------------

static int process_main(void *arg) {
  mx_proc_t *p = arg;
  p->st = mx_interp_call_in_process(p->parent, p, p->fn, p->args, p->fn->body->n_args, p->results);
  if (p->st) snprintf(p->err, sizeof p->err, "%s", mx_error_message());
  grid_t *g = p->g;
  mtx_lock(&g->mu);
  g->finished[mx_pg_flat_id(g, p->replica, p->partition)] = true;
  g->n_finished++;
  if (p->st) g->aborted = true;
  g->epoch++;
  cnd_broadcast(&g->cv);
  mtx_unlock(&g->mu);
  return 0;
}

static void grid_destroy(grid_t *g) {
  while (g->rdvs) {
    rdv_t *r = g->rdvs;
    g->rdvs = r->next;
    rdv_free(r);
  }
  while (g->chans) {
    chan_t *c = g->chans;
    g->chans = c->next;
    while (c->head) {
      msg_t *m = c->head;
      c->head = m->next;
      msg_free(m);
    }
    free(c);
  }
  free(g->finished);
  cnd_destroy(&g->cv);
  mtx_destroy(&g->mu);
}

mx_status_t mx_interp_run_parallel(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                   const mx_tensor_t *const *in, mx_tensor_t *out) {
  if (mx_interp_proc(ip))
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: nested interpreter.run_parallel");
  const mx_attr_t *pa = mx_op_attr(op, "programs");
  if (!pa || pa->kind != MX_ATTR_ARRAY || pa->n < 1 || pa->items[0].kind != MX_ATTR_ARRAY ||
      pa->items[0].n < 1)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs `programs`, a non-empty array of arrays",
                        mx_pg_op_label(op));
  int32_t n_rep = pa->n, n_part = pa->items[0].n;
  if ((int64_t)n_rep * n_part > MX_MAX_PROCESSES)
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: more than %d processes",
                        MX_MAX_PROCESSES);
  int32_t n_proc = n_rep * n_part;
  const mx_module_t *m = mx_interp_module(ip);
  const mx_func_t *fns[MX_MAX_PROCESSES];
  int32_t n_args = 0, n_res = 0;
  for (int32_t r = 0; r < n_rep; r++) {
    const mx_attr_t *row = &pa->items[r];
    if (row->kind != MX_ATTR_ARRAY || row->n != n_part)
      return mx_error_set(MX_ERR_RUNTIME, "%s: `programs` rows must have equal lengths",
                          mx_pg_op_label(op));
    for (int32_t q = 0; q < n_part; q++) {
      const mx_attr_t *s = &row->items[q];
      const mx_func_t *g = (s->kind == MX_ATTR_SYMBOL || s->kind == MX_ATTR_STRING) && s->s
                               ? mx_module_find_func(m, s->s)
                               : NULL;
      if (!g || !g->body)
        return mx_error_set(MX_ERR_RUNTIME, "%s: program %s not found", mx_pg_op_label(op),
                            s->s ? s->s : "?");
      fns[r * n_part + q] = g;
      n_args += g->body->n_args;
      n_res += g->n_results;
    }
  }
  if (n_args != op->n_operands || n_res != op->n_results)
    return mx_error_set(
        MX_ERR_RUNTIME, "%s: programs take %d inputs and return %d results; the op has %d and %d",
        mx_pg_op_label(op), (int)n_args, (int)n_res, (int)op->n_operands, (int)op->n_results);
  const mx_attr_t *infeed = mx_op_attr(op, "infeed");

  grid_t g;
  memset(&g, 0, sizeof g);
  g.n_rep = n_rep;
  g.n_part = n_part;
  g.infeed = infeed && infeed->kind == MX_ATTR_ARRAY ? infeed : NULL;
  g.finished = calloc((size_t)n_proc, sizeof *g.finished);
  mx_proc_t *procs = calloc((size_t)n_proc, sizeof *procs);
  thrd_t *th = calloc((size_t)n_proc, sizeof *th);
  bool *started = calloc((size_t)n_proc, sizeof *started);
  if (!g.finished || !procs || !th || !started || mtx_init(&g.mu, mtx_plain) != thrd_success) {
    free(g.finished);
    free(procs);
    free(th);
    free(started);
    return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", mx_pg_op_label(op));
  }
  if (cnd_init(&g.cv) != thrd_success) {
    mtx_destroy(&g.mu);
    free(g.finished);
    free(procs);
    free(th);
    free(started);
    return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", mx_pg_op_label(op));
  }
  for (int32_t i = 0, ai = 0, ri = 0; i < n_proc; i++) {
    procs[i].g = &g;
    procs[i].replica = i / n_part;
    procs[i].partition = i % n_part;
    procs[i].parent = ip;
    procs[i].fn = fns[i];
    procs[i].args = in + ai;
    procs[i].results = out + ri;
    ai += fns[i]->body->n_args;
    ri += fns[i]->n_results;
  }
  mx_status_t st = MX_OK;
  for (int32_t i = 0; i < n_proc; i++) {
    if (thrd_create(&th[i], process_main, &procs[i]) != thrd_success) {
      st = mx_error_set(MX_ERR_RUNTIME, "%s: cannot start a thread", mx_pg_op_label(op));
      mtx_lock(&g.mu);
      g.aborted = true;
      for (int32_t j = i; j < n_proc; j++) g.finished[j] = true;
      g.n_finished += n_proc - i;
      cnd_broadcast(&g.cv);
      mtx_unlock(&g.mu);
      break;
    }
    started[i] = true;
  }
  for (int32_t i = 0; i < n_proc; i++)
    if (started[i]) thrd_join(th[i], NULL);
  // Report the failure that caused the others (they fail with "another process failed").
  int32_t first = -1;
  for (int32_t i = 0; i < n_proc; i++) {
    if (!started[i] || !procs[i].st) continue;
    if (first < 0 || (strstr(procs[first].err, "another process failed") &&
                      !strstr(procs[i].err, "another process failed")))
      first = i;
  }
  if (!st && first >= 0)
    st = mx_error_set(procs[first].st, "process (%d, %d): %s", (int)procs[first].replica,
                      (int)procs[first].partition, procs[first].err);
  for (int32_t i = 0; i < n_proc; i++)
    if (started[i] && (st || procs[i].st))
      mx_pg_free_values(procs[i].results, procs[i].fn->n_results);
  for (int32_t i = 0; i < op->n_results && !st; i++) {
    const mx_type_t *t = &f->values[op->results[i]].type;
    if (t->kind != out[i].type.kind ||
        (t->kind == MX_TYPE_TENSOR && !mx_type_equal(t, &out[i].type))) {
      char b1[96], b2[96];
      st = mx_error_set(MX_ERR_RUNTIME, "%s: result %d is %s, the op declares %s",
                        mx_pg_op_label(op), (int)i, mx_type_str(&out[i].type, b1, sizeof b1),
                        mx_type_str(t, b2, sizeof b2));
      mx_pg_free_values(out, op->n_results);
    }
  }
  grid_destroy(&g);
  free(procs);
  free(th);
  free(started);
  return st;
}
