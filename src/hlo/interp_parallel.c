// StableHLO process grids: interpreter.run_parallel and the ops that communicate between
// processes (see interp_parallel.h and the spec's "Execution / Parallel execution" sections).
//
// Each process runs on its own thread with its own interpreter state; the module is only read.
// Processes meet at rendezvous points keyed by (process group, channel id): every member posts
// a copy of its operands, waits until the whole group has posted, and then computes its own
// result from the posted values (all members compute the same reductions in the same order,
// so results agree). send/recv use FIFO queues per channel; infeed pops producer functions.
#include "hlo/interp_parallel.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>

#define MX_MAX_PROCESSES 256
// A wait that sees no progress anywhere in the grid for this long reports a deadlock.
#define MX_DEADLOCK_SECONDS 120

typedef struct rdv {
  struct rdv *next;
  int64_t channel;
  int32_t gsize;
  int32_t *members;   // flat process ids, group order
  int32_t n;          // values per member
  mx_tensor_t *vals;  // gsize * n
  bool *posted;
  int32_t arrived, left;
} rdv_t;

typedef struct msg {
  struct msg *next;
  int32_t n;
  mx_tensor_t *vals;
} msg_t;

typedef struct chan {
  struct chan *next;
  int64_t handle;
  msg_t *head, *tail;
} chan_t;

typedef struct grid {
  int32_t n_rep, n_part;
  mtx_t mu;
  cnd_t cv;
  uint64_t epoch;  // bumped on every post, send and process exit
  rdv_t *rdvs;
  chan_t *chans;
  bool *finished;
  int32_t n_finished;
  int32_t n_blocked;  // processes inside grid_wait
  bool aborted;
  const mx_attr_t *infeed;  // ARRAY of function symbols, or NULL
  int32_t infeed_next;
} grid_t;

struct mx_proc {
  grid_t *g;
  int32_t replica, partition;
  const mx_interp_t *parent;
  const mx_func_t *fn;
  const mx_tensor_t *const *args;
  mx_tensor_t *results;
  mx_status_t st;
  char err[512];
};

static const char *op_label(const mx_op_t *op) {
  return op->name ? op->name : mx_opcode_name(op->code);
}

static int32_t flat_id(const grid_t *g, int32_t r, int32_t p) { return r * g->n_part + p; }

static void free_values(mx_tensor_t *v, int32_t n) {
  if (!v) return;
  for (int32_t i = 0; i < n; i++) {
    mx_tensor_free(&v[i]);
    memset(&v[i], 0, sizeof v[i]);
  }
}

// Copies any value kind (tensor or token).
static mx_status_t copy_value(mx_tensor_t *dst, const mx_tensor_t *src) {
  memset(dst, 0, sizeof *dst);
  if (src->type.kind == MX_TYPE_TENSOR) return mx_tensor_clone(dst, src);
  if (src->type.kind == MX_TYPE_TOKEN) {
    dst->type = src->type;
    return MX_OK;
  }
  return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: tuples between processes");
}

// Allocates result i of op with its declared type (tensor or token).
static mx_status_t alloc_result(const mx_func_t *f, const mx_op_t *op, int32_t i,
                                mx_tensor_t *out) {
  memset(out, 0, sizeof *out);
  if (op->results[i] < 0 || op->results[i] >= f->n_values)
    return mx_error_set(MX_ERR_RUNTIME, "result value id out of range");
  const mx_type_t *t = &f->values[op->results[i]].type;
  if (t->kind == MX_TYPE_TOKEN) {
    out->type = *t;
    return MX_OK;
  }
  if (t->kind != MX_TYPE_TENSOR)
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s with tuple results", op_label(op));
  mx_status_t st = mx_tensor_alloc(out, t);
  if (st) memset(out, 0, sizeof *out);
  return st;
}

static mx_status_t alloc_results(const mx_func_t *f, const mx_op_t *op, mx_tensor_t *out) {
  for (int32_t i = 0; i < op->n_results; i++) {
    mx_status_t st = alloc_result(f, op, i, &out[i]);
    if (st) {
      free_values(out, i);
      return st;
    }
  }
  return MX_OK;
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
  free_values(r->vals, r->gsize * r->n);
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
static mx_status_t rendezvous(mx_proc_t *p, const mx_op_t *op, const int32_t *members,
                              int32_t gsize, int32_t self, int64_t channel,
                              const mx_tensor_t *const *vals, int32_t n, mx_tensor_t *all) {
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
      return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", op_label(op));
    }
    if (last)
      last->next = r;
    else
      g->rdvs = r;
  }
  for (int32_t i = 0; i < n && !st; i++) st = copy_value(&r->vals[self * n + i], vals[i]);
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
      st = mx_error_set(MX_ERR_RUNTIME, "%s: another process failed", op_label(op));
      break;
    }
    for (int32_t m = 0; m < gsize; m++)
      if (!r->posted[m] && g->finished[members[m]]) {
        st = mx_error_set(MX_ERR_RUNTIME, "%s: process %d finished without joining the collective",
                          op_label(op), (int)members[m]);
        break;
      }
    if (!st) st = grid_wait(g, &seen, &idle, op_label(op));
  }
  if (!st) {
    for (int32_t i = 0; i < gsize * n && !st; i++) st = copy_value(&all[i], &r->vals[i]);
    if (st) free_values(all, gsize * n);
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
// Process groups
// ---------------------------------------------------------------------------------------------

enum { G_CROSS_REPLICA, G_CROSS_PARTITION, G_CROSS_REPLICA_AND_PARTITION, G_FLATTENED };

static int64_t channel_id(const mx_op_t *op) {
  const mx_attr_t *a = mx_op_attr(op, "channel_handle");
  const mx_attr_t *h = a ? mx_attr_field(a, "handle") : NULL;
  if (h && (h->kind == MX_ATTR_INT || h->kind == MX_ATTR_BOOL)) return h->i;
  const mx_attr_t *c = mx_op_attr(op, "channel_id");
  return c && c->kind == MX_ATTR_INT ? c->i : 0;
}

static bool attr_flag(const mx_op_t *op, const char *name) {
  const mx_attr_t *a = mx_op_attr(op, name);
  if (!a) return false;
  if (a->kind == MX_ATTR_UNIT) return true;
  return (a->kind == MX_ATTR_BOOL || a->kind == MX_ATTR_INT) && a->i != 0;
}

static int64_t attr_int(const mx_op_t *op, const char *name, int64_t dflt) {
  const mx_attr_t *a = mx_op_attr(op, name);
  return a && a->kind == MX_ATTR_INT ? a->i : dflt;
}

// A 2-D integer table attribute (replica_groups, source_target_pairs): rows x cols values.
typedef struct table {
  int64_t rows, cols;
  const mx_tensor_t *t;
} table_t;

static mx_status_t read_table(const mx_op_t *op, const char *name, table_t *tb) {
  memset(tb, 0, sizeof *tb);
  const mx_attr_t *a = mx_op_attr(op, name);
  if (!a) return MX_OK;  // absent: no groups
  if (a->kind != MX_ATTR_DENSE || !a->dense || a->dense->type.kind != MX_TYPE_TENSOR ||
      !mx_elem_is_int(a->dense->type.elem) || a->dense->type.rank != 2)
    return mx_error_set(MX_ERR_RUNTIME, "%s: `%s` must be a 2-D integer dense attribute",
                        op_label(op), name);
  tb->rows = a->dense->type.dims[0];
  tb->cols = a->dense->type.dims[1];
  tb->t = a->dense;
  if (tb->rows * tb->cols > 0 && (!tb->t->data || tb->t->nbytes < mx_type_nbytes(&tb->t->type)))
    return mx_error_set(MX_ERR_RUNTIME, "%s: malformed `%s`", op_label(op), name);
  return MX_OK;
}

static int64_t table_at(const table_t *tb, int64_t r, int64_t c) {
  return mx_tensor_get_i64(tb->t, r * tb->cols + c);
}

// The process group of process p under `mode`: member flat ids in group order; *self is p's
// index. Returns the size, 0 when p is in no group, or -1 (error set) on malformed groups.
static int32_t find_group(const mx_proc_t *p, const mx_op_t *op, int mode, const table_t *tb,
                          int32_t *members, int32_t *self) {
  const grid_t *g = p->g;
  int64_t ids_range = mode == G_CROSS_PARTITION ? g->n_part
                      : mode == G_FLATTENED     ? (int64_t)g->n_rep * g->n_part
                                                : g->n_rep;
  int64_t me = mode == G_CROSS_PARTITION ? p->partition
               : mode == G_FLATTENED     ? flat_id(g, p->replica, p->partition)
                                         : p->replica;
  int64_t ids[MX_MAX_PROCESSES];
  int32_t n_ids = 0;
  if (tb->rows == 0 || tb->cols == 0) {  // no groups: everyone together
    for (int64_t i = 0; i < ids_range; i++) ids[n_ids++] = i;
  } else {
    int64_t row = -1;
    for (int64_t r = 0; r < tb->rows && row < 0; r++)
      for (int64_t c = 0; c < tb->cols; c++)
        if (table_at(tb, r, c) == me) row = r;
    if (row < 0) return 0;
    for (int64_t c = 0; c < tb->cols; c++) {
      int64_t v = table_at(tb, row, c);
      if (v < 0) continue;  // padding
      if (v >= ids_range || n_ids >= MX_MAX_PROCESSES) {
        mx_error_set(MX_ERR_RUNTIME, "%s: group member %" PRId64 " out of range", op_label(op), v);
        return -1;
      }
      ids[n_ids++] = v;
    }
  }
  int32_t n = 0;
  if (mode == G_CROSS_REPLICA_AND_PARTITION) {
    for (int32_t q = 0; q < g->n_part; q++)
      for (int32_t i = 0; i < n_ids; i++) members[n++] = flat_id(g, (int32_t)ids[i], q);
  } else {
    for (int32_t i = 0; i < n_ids; i++) {
      if (mode == G_CROSS_REPLICA)
        members[n++] = flat_id(g, (int32_t)ids[i], p->partition);
      else if (mode == G_CROSS_PARTITION)
        members[n++] = flat_id(g, p->replica, (int32_t)ids[i]);
      else
        members[n++] = (int32_t)ids[i];
    }
  }
  int32_t mine = flat_id(g, p->replica, p->partition);
  *self = -1;
  for (int32_t i = 0; i < n; i++) {
    if (members[i] == mine) *self = i;
    for (int32_t j = 0; j < i; j++)
      if (members[j] == members[i]) {
        mx_error_set(MX_ERR_RUNTIME, "%s: process %d appears twice in its group", op_label(op),
                     (int)members[i]);
        return -1;
      }
  }
  return *self < 0 ? 0 : n;
}

// ---------------------------------------------------------------------------------------------
// Index helpers
// ---------------------------------------------------------------------------------------------

static void unravel(const mx_type_t *t, int64_t lin, int64_t *idx) {
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    int64_t n = t->dims[d] > 0 ? t->dims[d] : 1;
    idx[d] = lin % n;
    lin /= n;
  }
}

static int64_t ravel(const mx_type_t *t, const int64_t *idx) {
  int64_t lin = 0;
  for (int32_t d = 0; d < t->rank; d++) lin = lin * t->dims[d] + idx[d];
  return lin;
}

static bool same_elem_tensor(const mx_tensor_t *a, const mx_tensor_t *b) {
  return a->type.kind == MX_TYPE_TENSOR && b->type.kind == MX_TYPE_TENSOR &&
         a->type.elem == b->type.elem && a->type.rank == b->type.rank;
}

// ---------------------------------------------------------------------------------------------
// Collectives
// ---------------------------------------------------------------------------------------------

// Combines acc = body(acc, x) element by element with the op's scalar reduction body.
static mx_status_t reduce_into(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                               mx_tensor_t *acc, const mx_tensor_t *x) {
  if (op->n_regions != 1 || !op->regions[0] || op->regions[0]->n_args != 2)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs a two-argument reduction body", op_label(op));
  const mx_block_t *b = op->regions[0];
  const mx_type_t *at = mx_value_type(f, b->args[0]);
  if (!at || at->kind != MX_TYPE_TENSOR || at->rank != 0 || at->elem != acc->type.elem)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "unsupported: %s body must take scalars of the operand element type",
                        op_label(op));
  size_t es = mx_elem_size(acc->type.elem);
  int64_t n = mx_type_numel(&acc->type);
  mx_tensor_t args[2];
  mx_status_t st = mx_tensor_alloc(&args[0], at);
  if (st) return st;
  st = mx_tensor_alloc(&args[1], at);
  if (st) {
    mx_tensor_free(&args[0]);
    return st;
  }
  for (int64_t i = 0; i < n && !st; i++) {
    memcpy(args[0].data, acc->data + (size_t)i * es, es);
    memcpy(args[1].data, x->data + (size_t)i * es, es);
    mx_tensor_t r;
    st = mx_interp_run_block(ip, f, b, args, 2, &r, 1);
    if (st) break;
    if (r.type.kind != MX_TYPE_TENSOR || r.type.elem != acc->type.elem || r.nbytes < es)
      st = mx_error_set(MX_ERR_RUNTIME, "%s: body result has the wrong type", op_label(op));
    else
      memcpy(acc->data + (size_t)i * es, r.data, es);
    mx_tensor_free(&r);
  }
  mx_tensor_free(&args[0]);
  mx_tensor_free(&args[1]);
  return st;
}

// Folds operand j over the group (group order) into out (allocated with the operand's type).
static mx_status_t fold_group(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                              const mx_tensor_t *all, int32_t gsize, int32_t n, int32_t j,
                              mx_tensor_t *out) {
  mx_status_t st = mx_tensor_clone(out, &all[j]);
  if (st) return st;
  for (int32_t m = 1; m < gsize && !st; m++) {
    if (!mx_type_equal(&all[m * n + j].type, &out->type))
      st = mx_error_set(MX_ERR_RUNTIME, "%s: operand types differ between processes", op_label(op));
    else
      st = reduce_into(ip, f, op, out, &all[m * n + j]);
  }
  if (st) mx_tensor_free(out);
  return st;
}

typedef enum {
  C_ALL_REDUCE,
  C_ALL_GATHER,
  C_ALL_TO_ALL,
  C_REDUCE_SCATTER,
  C_PERMUTE,
  C_BROADCAST,
  C_REDUCE
} ckind_t;

static int collective_mode(const mx_op_t *op, ckind_t k) {
  int64_t ch = channel_id(op);
  if (k == C_ALL_TO_ALL || k == C_PERMUTE || k == C_BROADCAST)
    return ch > 0 ? G_CROSS_PARTITION : G_CROSS_REPLICA;
  if (attr_flag(op, "use_global_device_ids")) return G_FLATTENED;
  return ch > 0 ? G_CROSS_REPLICA_AND_PARTITION : G_CROSS_REPLICA;
}

// Result r of all_gather / all_to_all / reduce_scatter as an index map from the posted values.
static mx_status_t gather_result(const mx_op_t *op, ckind_t k, const mx_tensor_t *all,
                                 int32_t gsize, int32_t n, int32_t j, int32_t self,
                                 const mx_tensor_t *reduced, mx_tensor_t *out) {
  const mx_tensor_t *src0 = k == C_REDUCE_SCATTER ? reduced : &all[j];
  int32_t rank = src0->type.rank;
  if (!same_elem_tensor(src0, out))
    return mx_error_set(MX_ERR_RUNTIME, "%s: result %d type does not match its operand",
                        op_label(op), (int)j);
  int64_t gd = 0, sd = 0, cd = 0;
  if (k == C_ALL_GATHER) gd = attr_int(op, "all_gather_dim", -1);
  if (k == C_REDUCE_SCATTER) sd = attr_int(op, "scatter_dimension", -1);
  if (k == C_ALL_TO_ALL) {
    sd = attr_int(op, "split_dimension", -1);
    cd = attr_int(op, "concat_dimension", -1);
    int64_t sc = attr_int(op, "split_count", gsize);
    if (sc != gsize)
      return mx_error_set(MX_ERR_RUNTIME, "%s: split_count %" PRId64 " != group size %d",
                          op_label(op), sc, (int)gsize);
  }
  if (gd < 0 || gd >= rank || sd < 0 || sd >= rank || cd < 0 || cd >= rank)
    return mx_error_set(MX_ERR_RUNTIME, "%s: dimension attribute out of range", op_label(op));
  int64_t in_dims[MX_MAX_RANK];
  for (int32_t d = 0; d < rank; d++) in_dims[d] = src0->type.dims[d];
  // Expected result shape.
  int64_t want[MX_MAX_RANK];
  memcpy(want, in_dims, sizeof want);
  if (k == C_ALL_GATHER) want[gd] *= gsize;
  if (k == C_REDUCE_SCATTER || k == C_ALL_TO_ALL) {
    if (in_dims[sd] % gsize)
      return mx_error_set(MX_ERR_RUNTIME, "%s: dimension %" PRId64 " not divisible by %d",
                          op_label(op), sd, (int)gsize);
    want[sd] /= gsize;
  }
  if (k == C_ALL_TO_ALL) want[cd] *= gsize;
  for (int32_t d = 0; d < rank; d++)
    if (out->type.dims[d] != want[d])
      return mx_error_set(MX_ERR_RUNTIME, "%s: result %d has the wrong shape", op_label(op),
                          (int)j);
  for (int32_t m = 0; m < gsize; m++)
    if (!mx_type_equal(&all[m * n + j].type, &all[j].type))
      return mx_error_set(MX_ERR_RUNTIME, "%s: operand types differ between processes",
                          op_label(op));
  size_t es = mx_elem_size(out->type.elem);
  int64_t total = mx_type_numel(&out->type);
  int64_t idx[MX_MAX_RANK];
  for (int64_t i = 0; i < total; i++) {
    unravel(&out->type, i, idx);
    const mx_tensor_t *src = src0;
    if (k == C_ALL_GATHER) {
      int64_t s = idx[gd] / in_dims[gd];
      idx[gd] %= in_dims[gd];
      src = &all[s * n + j];
    } else if (k == C_REDUCE_SCATTER) {
      idx[sd] += (int64_t)self * want[sd];
    } else {  // all_to_all: part `self` of sender s, parts concatenated along cd
      int64_t part_c = sd == cd ? want[cd] / gsize : in_dims[cd];
      int64_t s = idx[cd] / part_c;
      idx[cd] %= part_c;
      idx[sd] += (int64_t)self * (in_dims[sd] / gsize);
      src = &all[s * n + j];
    }
    memcpy(out->data + (size_t)i * es, src->data + (size_t)ravel(&src->type, idx) * es, es);
  }
  return MX_OK;
}

mx_status_t mx_interp_collective(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out) {
  static const struct {
    const char *name;
    ckind_t k;
  } kinds[] = {
      {"stablehlo.all_reduce", C_ALL_REDUCE},      {"stablehlo.all_gather", C_ALL_GATHER},
      {"stablehlo.all_to_all", C_ALL_TO_ALL},      {"stablehlo.reduce_scatter", C_REDUCE_SCATTER},
      {"stablehlo.collective_permute", C_PERMUTE}, {"stablehlo.collective_broadcast", C_BROADCAST},
      {"stablehlo.collective_reduce", C_REDUCE},
  };
  ckind_t k = C_ALL_REDUCE;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (op->name && strcmp(op->name, kinds[i].name) == 0) k = kinds[i].k;
  int32_t n = op->n_operands;
  bool dyn_root = k == C_BROADCAST && attr_flag(op, "has_dynamic_root");
  if (dyn_root) n--;  // the last operand holds the root index per result
  if (n < 1 || op->n_results != n)
    return mx_error_set(MX_ERR_RUNTIME, "%s: operand and result counts do not match", op_label(op));
  for (int32_t i = 0; i < op->n_operands; i++)
    if (in[i]->type.kind != MX_TYPE_TENSOR)
      return mx_error_set(MX_ERR_RUNTIME, "%s: operand %d is not a tensor", op_label(op), (int)i);

  // Alone (outside run_parallel) the grid is one process: replica 0 of partition 0.
  mx_proc_t solo_proc;
  grid_t solo_grid;
  mx_proc_t *p = mx_interp_proc(ip);
  bool solo = p == NULL;
  if (solo) {
    memset(&solo_grid, 0, sizeof solo_grid);
    solo_grid.n_rep = solo_grid.n_part = 1;
    memset(&solo_proc, 0, sizeof solo_proc);
    solo_proc.g = &solo_grid;
    p = &solo_proc;
  }

  int mode = collective_mode(op, k);
  table_t tb;
  mx_status_t st = read_table(op, k == C_PERMUTE ? "source_target_pairs" : "replica_groups", &tb);
  if (st) return st;
  int32_t members[MX_MAX_PROCESSES], self = 0, gsize;
  if (k == C_PERMUTE) {
    // Everyone on the same replica line (or partition line) exchanges; pairs pick the source.
    table_t none;
    memset(&none, 0, sizeof none);
    gsize = find_group(p, op, mode, &none, members, &self);
    if (tb.rows > 0 && tb.cols != 2)
      return mx_error_set(MX_ERR_RUNTIME, "%s: source_target_pairs must be Nx2", op_label(op));
  } else {
    gsize = find_group(p, op, mode, &tb, members, &self);
  }
  if (gsize < 0) return MX_ERR_RUNTIME;

  st = alloc_results(f, op, out);
  if (st) return st;
  for (int32_t i = 0; i < n && !st; i++)
    if (out[i].type.kind != MX_TYPE_TENSOR || out[i].type.elem != in[i]->type.elem)
      st = mx_error_set(MX_ERR_RUNTIME, "%s: result %d element type differs from its operand",
                        op_label(op), (int)i);
  if (st || gsize == 0) {  // not in any group: zeros (broadcast / permute semantics)
    if (st) free_values(out, op->n_results);
    return st;
  }

  mx_tensor_t *all = calloc((size_t)gsize * (size_t)n, sizeof *all);
  if (!all) {
    free_values(out, op->n_results);
    return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", op_label(op));
  }
  if (solo) {
    for (int32_t i = 0; i < n && !st; i++) st = copy_value(&all[i], in[i]);
  } else {
    st = rendezvous(p, op, members, gsize, self, channel_id(op), in, n, all);
  }
  for (int32_t j = 0; j < n && !st; j++) {
    mx_tensor_t red;
    memset(&red, 0, sizeof red);
    switch (k) {
      case C_ALL_REDUCE:
      case C_REDUCE:
        if (k == C_REDUCE && self != 0) break;  // only the root gets the reduction
        st = fold_group(ip, f, op, all, gsize, n, j, &red);
        if (!st && (!mx_type_equal(&red.type, &out[j].type)))
          st = mx_error_set(MX_ERR_RUNTIME, "%s: result %d type differs from its operand",
                            op_label(op), (int)j);
        if (!st) memcpy(out[j].data, red.data, out[j].nbytes);
        break;
      case C_REDUCE_SCATTER:
        st = fold_group(ip, f, op, all, gsize, n, j, &red);
        if (!st) st = gather_result(op, k, all, gsize, n, j, self, &red, &out[j]);
        break;
      case C_ALL_GATHER:
      case C_ALL_TO_ALL:
        st = gather_result(op, k, all, gsize, n, j, self, NULL, &out[j]);
        break;
      case C_BROADCAST: {
        int64_t root = 0;
        if (dyn_root) {
          const mx_tensor_t *rt = in[n];
          int64_t nr = rt->type.kind == MX_TYPE_TENSOR ? mx_type_numel(&rt->type) : 0;
          if (!mx_elem_is_int(rt->type.elem) || nr < 1 || !rt->data)
            st = mx_error_set(MX_ERR_RUNTIME, "%s: bad root operand", op_label(op));
          else
            root = mx_tensor_get_i64(rt, nr == 1 ? 0 : (j < nr ? j : nr - 1));
        }
        if (!st && (root < 0 || root >= gsize))
          st = mx_error_set(MX_ERR_RUNTIME, "%s: root %" PRId64 " outside its group", op_label(op),
                            root);
        if (!st && !mx_type_equal(&all[root * n + j].type, &out[j].type))
          st = mx_error_set(MX_ERR_RUNTIME, "%s: result %d type differs from its operand",
                            op_label(op), (int)j);
        if (!st) memcpy(out[j].data, all[root * n + j].data, out[j].nbytes);
        break;
      }
      case C_PERMUTE: {
        // Source of this process: a pair (s, t) whose target t is this process's id on the line.
        int64_t me = mode == G_CROSS_PARTITION ? p->partition : p->replica;
        for (int64_t r = 0; r < tb.rows && !st; r++) {
          if (table_at(&tb, r, 1) != me) continue;
          int64_t s = table_at(&tb, r, 0);
          if (s < 0 || s >= gsize) {
            st = mx_error_set(MX_ERR_RUNTIME, "%s: source %" PRId64 " out of range", op_label(op),
                              s);
            break;
          }
          if (!mx_type_equal(&all[s * n + j].type, &out[j].type))
            st = mx_error_set(MX_ERR_RUNTIME, "%s: result type differs from its operand",
                              op_label(op));
          else
            memcpy(out[j].data, all[s * n + j].data, out[j].nbytes);
          break;
        }
        break;
      }
    }
    mx_tensor_free(&red);
  }
  free_values(all, gsize * n);
  free(all);
  if (st) free_values(out, op->n_results);
  return st;
}

// ---------------------------------------------------------------------------------------------
// replica_id / partition_id
// ---------------------------------------------------------------------------------------------

mx_status_t mx_interp_process_id(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out) {
  (void)in;
  if (op->n_operands != 0 || op->n_results != 1)
    return mx_error_set(MX_ERR_RUNTIME, "%s takes no operands and has one result", op_label(op));
  mx_status_t st = alloc_result(f, op, 0, &out[0]);
  if (st) return st;
  if (out[0].type.kind != MX_TYPE_TENSOR || out[0].type.rank != 0 ||
      !mx_elem_is_int(out[0].type.elem)) {
    free_values(out, 1);
    return mx_error_set(MX_ERR_RUNTIME, "%s: result must be an integer scalar", op_label(op));
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
  free_values(m->vals, m->n);
  free(m->vals);
  free(m);
}

static bool all_others_finished(const grid_t *g, const mx_proc_t *p) {
  int32_t me = flat_id(g, p->replica, p->partition);
  for (int32_t i = 0; i < g->n_rep * g->n_part; i++)
    if (i != me && !g->finished[i]) return false;
  return true;
}

static mx_status_t exec_send(mx_proc_t *p, const mx_op_t *op, const mx_tensor_t *const *in,
                             int32_t n_data) {
  msg_t *m = calloc(1, sizeof *m);
  if (!m) return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", op_label(op));
  m->vals = calloc((size_t)(n_data > 0 ? n_data : 1), sizeof *m->vals);
  mx_status_t st = m->vals ? MX_OK : mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < n_data && !st; i++, m->n++) st = copy_value(&m->vals[i], in[i]);
  if (st) {
    msg_free(m);
    return st;
  }
  grid_t *g = p->g;
  mtx_lock(&g->mu);
  chan_t *c = find_chan(g, channel_id(op), true);
  if (!c) {
    mtx_unlock(&g->mu);
    msg_free(m);
    return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", op_label(op));
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
  int64_t handle = channel_id(op);
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
      st = mx_error_set(MX_ERR_RUNTIME, "%s: another process failed", op_label(op));
      break;
    }
    if (all_others_finished(g, p)) {
      st = mx_error_set(MX_ERR_RUNTIME, "%s: nothing was sent on channel %" PRId64, op_label(op),
                        handle);
      break;
    }
    st = grid_wait(g, &seen, &idle, op_label(op));
    if (st) break;
  }
  mtx_unlock(&g->mu);
  if (st) return st;
  int32_t n_data = op->n_results - 1;
  if (m->n != n_data)
    st = mx_error_set(MX_ERR_RUNTIME, "%s: message has %d values, expected %d", op_label(op),
                      (int)m->n, (int)n_data);
  for (int32_t i = 0; i < n_data && !st; i++) {
    const mx_type_t *t = &f->values[op->results[i]].type;
    if (!mx_type_equal(t, &m->vals[i].type))
      st = mx_error_set(MX_ERR_RUNTIME, "%s: received value %d has the wrong type", op_label(op),
                        (int)i);
  }
  if (!st) {
    for (int32_t i = 0; i < n_data; i++) {
      out[i] = m->vals[i];
      memset(&m->vals[i], 0, sizeof m->vals[i]);
    }
    st = alloc_result(f, op, n_data, &out[n_data]);
    if (st) free_values(out, n_data);
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
    return mx_error_set(MX_ERR_RUNTIME, "%s: the infeed queue is empty", op_label(op));
  const mx_func_t *src = mx_module_find_func(mx_interp_module(ip), q->items[k].s);
  if (!src) return mx_error_set(MX_ERR_RUNTIME, "%s: @%s not found", op_label(op), q->items[k].s);
  int32_t n_data = op->n_results - 1;
  if (src->n_results != n_data || (src->body && src->body->n_args != 0))
    return mx_error_set(MX_ERR_RUNTIME, "%s: @%s must take no arguments and return %d values",
                        op_label(op), src->name, (int)n_data);
  mx_status_t st = mx_interp_call(ip, src, NULL, 0, out);
  if (st) return st;
  for (int32_t i = 0; i < n_data && !st; i++)
    if (!mx_type_equal(&out[i].type, &f->values[op->results[i]].type))
      st = mx_error_set(MX_ERR_RUNTIME, "%s: infeed value %d has the wrong type", op_label(op),
                        (int)i);
  if (!st) st = alloc_result(f, op, n_data, &out[n_data]);
  if (st) free_values(out, n_data);
  return st;
}

mx_status_t mx_interp_channel_op(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out) {
  mx_proc_t *p = mx_interp_proc(ip);
  if (!p)
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s outside interpreter.run_parallel",
                        op_label(op));
  bool is_send = strcmp(op->name, "stablehlo.send") == 0;
  bool is_out = strcmp(op->name, "stablehlo.outfeed") == 0;
  if (is_send || is_out) {
    // operands: data..., token -> token
    if (op->n_operands < 1 || op->n_results != 1 ||
        in[op->n_operands - 1]->type.kind != MX_TYPE_TOKEN)
      return mx_error_set(MX_ERR_RUNTIME, "%s takes values and a token and returns a token",
                          op_label(op));
    mx_status_t st = is_send ? exec_send(p, op, in, op->n_operands - 1) : MX_OK;
    if (!st) st = alloc_result(f, op, 0, &out[0]);
    return st;
  }
  // recv / infeed: token -> values..., token
  if (op->n_operands != 1 || in[0]->type.kind != MX_TYPE_TOKEN || op->n_results < 1 ||
      f->values[op->results[op->n_results - 1]].type.kind != MX_TYPE_TOKEN)
    return mx_error_set(MX_ERR_RUNTIME, "%s takes a token and returns values and a token",
                        op_label(op));
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
  g->finished[flat_id(g, p->replica, p->partition)] = true;
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
                        op_label(op));
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
                          op_label(op));
    for (int32_t q = 0; q < n_part; q++) {
      const mx_attr_t *s = &row->items[q];
      const mx_func_t *g = (s->kind == MX_ATTR_SYMBOL || s->kind == MX_ATTR_STRING) && s->s
                               ? mx_module_find_func(m, s->s)
                               : NULL;
      if (!g || !g->body)
        return mx_error_set(MX_ERR_RUNTIME, "%s: program %s not found", op_label(op),
                            s->s ? s->s : "?");
      fns[r * n_part + q] = g;
      n_args += g->body->n_args;
      n_res += g->n_results;
    }
  }
  if (n_args != op->n_operands || n_res != op->n_results)
    return mx_error_set(
        MX_ERR_RUNTIME, "%s: programs take %d inputs and return %d results; the op has %d and %d",
        op_label(op), (int)n_args, (int)n_res, (int)op->n_operands, (int)op->n_results);
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
    return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", op_label(op));
  }
  if (cnd_init(&g.cv) != thrd_success) {
    mtx_destroy(&g.mu);
    free(g.finished);
    free(procs);
    free(th);
    free(started);
    return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", op_label(op));
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
      st = mx_error_set(MX_ERR_RUNTIME, "%s: cannot start a thread", op_label(op));
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
    if (started[i] && (st || procs[i].st)) free_values(procs[i].results, procs[i].fn->n_results);
  for (int32_t i = 0; i < op->n_results && !st; i++) {
    const mx_type_t *t = &f->values[op->results[i]].type;
    if (t->kind != out[i].type.kind ||
        (t->kind == MX_TYPE_TENSOR && !mx_type_equal(t, &out[i].type))) {
      char b1[96], b2[96];
      st = mx_error_set(MX_ERR_RUNTIME, "%s: result %d is %s, the op declares %s", op_label(op),
                        (int)i, mx_type_str(&out[i].type, b1, sizeof b1),
                        mx_type_str(t, b2, sizeof b2));
      free_values(out, op->n_results);
    }
  }
  grid_destroy(&g);
  free(procs);
  free(th);
  free(started);
  return st;
}
