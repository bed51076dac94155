// mlxcel-xla machine limits: memory read bandwidth and peak f32 FMA FLOP/s, measured the way
// bench/cpu_kernels.c does (a multi-threaded streaming sum over a buffer far larger than the
// last-level cache; a register-only FMA loop on every thread), as library code so `mlxcel bench`
// can put every speed next to the limit of the machine it ran on.
//
// Both measurements run on a thread pool (include/mlxcel/cpu.h) and use the widest loop the CPU
// supports (AVX-512, AVX2+FMA, portable C). Results are medians of `reps` repetitions (and the
// best, the least disturbed estimate). Not for use while another job runs on the same pool.
#ifndef MLXCEL_MACHINE_H
#define MLXCEL_MACHINE_H

#include "mlxcel/cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mx_machine_opts {
  int threads;          // <= 0: physical cores
  size_t bw_bytes;      // bandwidth buffer size; 0 = 1 GiB (keep >= 1 GiB for real numbers)
  int reps;             // repetitions of each measurement; 0 = 5
  double peak_seconds;  // duration of one peak measurement; 0 = 0.2 s
} mx_machine_opts_t;

typedef struct mx_machine_info {
  int threads;
  double bandwidth_gbs, bandwidth_best_gbs;  // 1e9 bytes/s, median and best
  double peak_gflops, peak_best_gflops;      // 1e9 f32 FLOP/s (FMA = 2), all threads together
  size_t bw_bytes;
  int reps;
  const char *loop_isa;  // "avx512", "avx2", "scalar" (static string)
} mx_machine_info_t;

// Creates a pool of opts->threads, measures bandwidth then peak, destroys the pool.
// opts may be NULL (all defaults).
mx_status_t mx_machine_measure(const mx_machine_opts_t *opts, mx_machine_info_t *out);

// The two measurements on an existing pool. Bandwidth allocates (and touches) `bytes` for the
// duration of the call; each repetition is one full pass.
mx_status_t mx_machine_bandwidth(mx_cpu_pool_t *pool, size_t bytes, int reps, double *median_gbs,
                                 double *best_gbs);
mx_status_t mx_machine_peak(mx_cpu_pool_t *pool, double seconds, int reps, double *median_gflops,
                            double *best_gflops);

// A buffer for bandwidth samples paired with other work (bench/cpu_kernels.c times a kernel
// right after reading as many bytes as it streams): each read continues where the last one
// stopped, wrapping around, as a kernel streams its weights.
typedef struct mx_machine_stream mx_machine_stream_t;
// Allocates `bytes` (>= 4096; rounded down to 256-byte multiples) and writes it on the pool's
// threads. *out is owned by the caller (mx_machine_stream_destroy).
mx_status_t mx_machine_stream_create(mx_cpu_pool_t *pool, size_t bytes, mx_machine_stream_t **out);
void mx_machine_stream_destroy(mx_machine_stream_t *s);  // accepts NULL
size_t mx_machine_stream_bytes(const mx_machine_stream_t *s);
// Reads the next `bytes` of the buffer (rounded up to 256 bytes) with the streaming sum on the
// pool; returns the seconds the reads took.
double mx_machine_stream_read(mx_machine_stream_t *s, mx_cpu_pool_t *pool, size_t bytes);

// "avx512", "avx2" or "scalar": the loop variant this machine uses.
const char *mx_machine_loop_isa(void);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_MACHINE_H
