// Internals shared by the process-grid files (interp_parallel.c: grids, waiting, rendezvous,
// channels, run_parallel; interp_collective.c: process groups and the collective ops).
#ifndef MX_HLO_INTERP_PARALLEL_INTERNAL_H
#define MX_HLO_INTERP_PARALLEL_INTERNAL_H

#include <threads.h>

#include "hlo/interp_parallel.h"

#define MX_MAX_PROCESSES 256

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

const char *mx_pg_op_label(const mx_op_t *op);
// Process (r, p)'s id in the grid: r * num_partitions + p.
int32_t mx_pg_flat_id(const grid_t *g, int32_t r, int32_t p);
void mx_pg_free_values(mx_tensor_t *v, int32_t n);
// Copies a tensor or token value.
mx_status_t mx_pg_copy_value(mx_tensor_t *dst, const mx_tensor_t *src);
// Allocates op result i (or all results) with the declared type (tensor or token).
mx_status_t mx_pg_alloc_result(const mx_func_t *f, const mx_op_t *op, int32_t i, mx_tensor_t *out);
mx_status_t mx_pg_alloc_results(const mx_func_t *f, const mx_op_t *op, mx_tensor_t *out);
// channel_handle's handle (or channel_id), 0 when absent.
int64_t mx_pg_channel_id(const mx_op_t *op);
// A UNIT attribute, or a BOOL/INT one that is non-zero.
bool mx_pg_attr_flag(const mx_op_t *op, const char *name);
// Posts this process's `n` values to the rendezvous of `members` (self = own index) and waits
// for the whole group; then copies all gsize * n posted values (group order) into `all`.
mx_status_t mx_pg_rendezvous(mx_proc_t *p, const mx_op_t *op, const int32_t *members, int32_t gsize,
                             int32_t self, int64_t channel, const mx_tensor_t *const *vals,
                             int32_t n, mx_tensor_t *all);

#endif  // MX_HLO_INTERP_PARALLEL_INTERNAL_H
