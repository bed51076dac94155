// Collective ops of StableHLO process grids: all_reduce, all_gather, all_to_all,
// reduce_scatter, collective_permute, collective_broadcast, collective_reduce. Each process
// finds its process group (spec: cross_replica, cross_partition, cross_replica_and_partition,
// flattened_ids), exchanges its operands at a rendezvous and computes its own results.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/interp_parallel_internal.h"

// ---------------------------------------------------------------------------------------------
// Process groups
// ---------------------------------------------------------------------------------------------

enum { G_CROSS_REPLICA, G_CROSS_PARTITION, G_CROSS_REPLICA_AND_PARTITION, G_FLATTENED };

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
                        mx_pg_op_label(op), name);
  tb->rows = a->dense->type.dims[0];
  tb->cols = a->dense->type.dims[1];
  tb->t = a->dense;
  if (tb->rows * tb->cols > 0 && (!tb->t->data || tb->t->nbytes < mx_type_nbytes(&tb->t->type)))
    return mx_error_set(MX_ERR_RUNTIME, "%s: malformed `%s`", mx_pg_op_label(op), name);
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
               : mode == G_FLATTENED     ? mx_pg_flat_id(g, p->replica, p->partition)
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
        mx_error_set(MX_ERR_RUNTIME, "%s: group member %" PRId64 " out of range",
                     mx_pg_op_label(op), v);
        return -1;
      }
      ids[n_ids++] = v;
    }
  }
  int32_t n = 0;
  if (mode == G_CROSS_REPLICA_AND_PARTITION) {
    for (int32_t q = 0; q < g->n_part; q++)
      for (int32_t i = 0; i < n_ids; i++) members[n++] = mx_pg_flat_id(g, (int32_t)ids[i], q);
  } else {
    for (int32_t i = 0; i < n_ids; i++) {
      if (mode == G_CROSS_REPLICA)
        members[n++] = mx_pg_flat_id(g, (int32_t)ids[i], p->partition);
      else if (mode == G_CROSS_PARTITION)
        members[n++] = mx_pg_flat_id(g, p->replica, (int32_t)ids[i]);
      else
        members[n++] = (int32_t)ids[i];
    }
  }
  int32_t mine = mx_pg_flat_id(g, p->replica, p->partition);
  *self = -1;
  for (int32_t i = 0; i < n; i++) {
    if (members[i] == mine) *self = i;
    for (int32_t j = 0; j < i; j++)
      if (members[j] == members[i]) {
        mx_error_set(MX_ERR_RUNTIME, "%s: process %d appears twice in its group",
                     mx_pg_op_label(op), (int)members[i]);
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
    return mx_error_set(MX_ERR_RUNTIME, "%s needs a two-argument reduction body",
                        mx_pg_op_label(op));
  const mx_block_t *b = op->regions[0];
  const mx_type_t *at = mx_value_type(f, b->args[0]);
  if (!at || at->kind != MX_TYPE_TENSOR || at->rank != 0 || at->elem != acc->type.elem)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "unsupported: %s body must take scalars of the operand element type",
                        mx_pg_op_label(op));
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
      st = mx_error_set(MX_ERR_RUNTIME, "%s: body result has the wrong type", mx_pg_op_label(op));
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
      st = mx_error_set(MX_ERR_RUNTIME, "%s: operand types differ between processes",
                        mx_pg_op_label(op));
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
  int64_t ch = mx_pg_channel_id(op);
  if (k == C_ALL_TO_ALL || k == C_PERMUTE || k == C_BROADCAST)
    return ch > 0 ? G_CROSS_PARTITION : G_CROSS_REPLICA;
  if (mx_pg_attr_flag(op, "use_global_device_ids")) return G_FLATTENED;
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
                        mx_pg_op_label(op), (int)j);
  int64_t gd = 0, sd = 0, cd = 0;
  if (k == C_ALL_GATHER) gd = attr_int(op, "all_gather_dim", -1);
  if (k == C_REDUCE_SCATTER) sd = attr_int(op, "scatter_dimension", -1);
  if (k == C_ALL_TO_ALL) {
    sd = attr_int(op, "split_dimension", -1);
    cd = attr_int(op, "concat_dimension", -1);
    int64_t sc = attr_int(op, "split_count", gsize);
    if (sc != gsize)
      return mx_error_set(MX_ERR_RUNTIME, "%s: split_count %" PRId64 " != group size %d",
                          mx_pg_op_label(op), sc, (int)gsize);
  }
  if (gd < 0 || gd >= rank || sd < 0 || sd >= rank || cd < 0 || cd >= rank)
    return mx_error_set(MX_ERR_RUNTIME, "%s: dimension attribute out of range", mx_pg_op_label(op));
  int64_t in_dims[MX_MAX_RANK];
  for (int32_t d = 0; d < rank; d++) in_dims[d] = src0->type.dims[d];
  // Expected result shape.
  int64_t want[MX_MAX_RANK];
  memcpy(want, in_dims, sizeof want);
  if (k == C_ALL_GATHER) want[gd] *= gsize;
  if (k == C_REDUCE_SCATTER || k == C_ALL_TO_ALL) {
    if (in_dims[sd] % gsize)
      return mx_error_set(MX_ERR_RUNTIME, "%s: dimension %" PRId64 " not divisible by %d",
                          mx_pg_op_label(op), sd, (int)gsize);
    want[sd] /= gsize;
  }
  if (k == C_ALL_TO_ALL) want[cd] *= gsize;
  for (int32_t d = 0; d < rank; d++)
    if (out->type.dims[d] != want[d])
      return mx_error_set(MX_ERR_RUNTIME, "%s: result %d has the wrong shape", mx_pg_op_label(op),
                          (int)j);
  for (int32_t m = 0; m < gsize; m++)
    if (!mx_type_equal(&all[m * n + j].type, &all[j].type))
      return mx_error_set(MX_ERR_RUNTIME, "%s: operand types differ between processes",
                          mx_pg_op_label(op));
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
  bool dyn_root = k == C_BROADCAST && mx_pg_attr_flag(op, "has_dynamic_root");
  if (dyn_root) n--;  // the last operand holds the root index per result
  if (n < 1 || op->n_results != n)
    return mx_error_set(MX_ERR_RUNTIME, "%s: operand and result counts do not match",
                        mx_pg_op_label(op));
  for (int32_t i = 0; i < op->n_operands; i++)
    if (in[i]->type.kind != MX_TYPE_TENSOR)
      return mx_error_set(MX_ERR_RUNTIME, "%s: operand %d is not a tensor", mx_pg_op_label(op),
                          (int)i);

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
      return mx_error_set(MX_ERR_RUNTIME, "%s: source_target_pairs must be Nx2",
                          mx_pg_op_label(op));
  } else {
    gsize = find_group(p, op, mode, &tb, members, &self);
  }
  if (gsize < 0) return MX_ERR_RUNTIME;

  st = mx_pg_alloc_results(f, op, out);
  if (st) return st;
  for (int32_t i = 0; i < n && !st; i++)
    if (out[i].type.kind != MX_TYPE_TENSOR || out[i].type.elem != in[i]->type.elem)
      st = mx_error_set(MX_ERR_RUNTIME, "%s: result %d element type differs from its operand",
                        mx_pg_op_label(op), (int)i);
  if (st || gsize == 0) {  // not in any group: zeros (broadcast / permute semantics)
    if (st) mx_pg_free_values(out, op->n_results);
    return st;
  }

  mx_tensor_t *all = calloc((size_t)gsize * (size_t)n, sizeof *all);
  if (!all) {
    mx_pg_free_values(out, op->n_results);
    return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", mx_pg_op_label(op));
  }
  if (solo) {
    for (int32_t i = 0; i < n && !st; i++) st = mx_pg_copy_value(&all[i], in[i]);
  } else {
    st = mx_pg_rendezvous(p, op, members, gsize, self, mx_pg_channel_id(op), in, n, all);
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
                            mx_pg_op_label(op), (int)j);
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
            st = mx_error_set(MX_ERR_RUNTIME, "%s: bad root operand", mx_pg_op_label(op));
          else
            root = mx_tensor_get_i64(rt, nr == 1 ? 0 : (j < nr ? j : nr - 1));
        }
        if (!st && (root < 0 || root >= gsize))
          st = mx_error_set(MX_ERR_RUNTIME, "%s: root %" PRId64 " outside its group",
                            mx_pg_op_label(op), root);
        if (!st && !mx_type_equal(&all[root * n + j].type, &out[j].type))
          st = mx_error_set(MX_ERR_RUNTIME, "%s: result %d type differs from its operand",
                            mx_pg_op_label(op), (int)j);
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
            st = mx_error_set(MX_ERR_RUNTIME, "%s: source %" PRId64 " out of range",
                              mx_pg_op_label(op), s);
            break;
          }
          if (!mx_type_equal(&all[s * n + j].type, &out[j].type))
            st = mx_error_set(MX_ERR_RUNTIME, "%s: result type differs from its operand",
                              mx_pg_op_label(op));
          else
            memcpy(out[j].data, all[s * n + j].data, out[j].nbytes);
          break;
        }
        break;
      }
    }
    mx_tensor_free(&red);
  }
  mx_pg_free_values(all, gsize * n);
  free(all);
  if (st) mx_pg_free_values(out, op->n_results);
  return st;
}
