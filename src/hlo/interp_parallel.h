// StableHLO process grids for the reference interpreter (interp_parallel.c):
// interpreter.run_parallel runs a num_replicas x num_partitions grid of programs, one thread per
// process, and the ops that talk between processes meet at rendezvous points: replica_id,
// partition_id, all_reduce, all_gather, all_to_all, reduce_scatter, collective_permute,
// collective_broadcast, collective_reduce, send/recv (channels), infeed/outfeed.
#ifndef MX_HLO_INTERP_PARALLEL_H
#define MX_HLO_INTERP_PARALLEL_H

#include "hlo/interp_internal.h"

// One process of a running grid (NULL outside run_parallel: replica 0 of partition 0, alone).
typedef struct mx_proc mx_proc_t;

// ---- Provided by the driver (interp.c) ----
mx_proc_t *mx_interp_proc(const mx_interp_t *ip);
const mx_module_t *mx_interp_module(const mx_interp_t *ip);
// Calls `f` in a fresh interpreter for process `proc` with the limits of `parent` (check ops
// inside processes report as errors). results: f->n_results values the caller frees.
mx_status_t mx_interp_call_in_process(const mx_interp_t *parent, mx_proc_t *proc,
                                      const mx_func_t *f, const mx_tensor_t *const *args,
                                      int32_t n_args, mx_tensor_t *results);
// Calls `f` from within the running interpreter (infeed producers).
mx_status_t mx_interp_call(mx_interp_t *ip, const mx_func_t *f, const mx_tensor_t *const *args,
                           int32_t n_args, mx_tensor_t *results);

// ---- Ops (named, MX_OP_UNKNOWN). `out` is NOT preallocated: each fills all results. ----
mx_status_t mx_interp_run_parallel(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                   const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_interp_process_id(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_interp_collective(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out);
mx_status_t mx_interp_channel_op(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out);

#endif  // MX_HLO_INTERP_PARALLEL_H
