// mlxcel-xla CPU runtime, first layer: CPU feature detection, kernel dispatch tables, a
// persistent thread pool and the f32 matmul kernels (GEMV for decode, blocked GEMM for prefill).
// The plan compiler and executor (issue 4) build on this header.
//
// Threading model: a kernel is a plain function split by (ith, nth): thread `ith` of `nth`
// computes a fixed, disjoint part of the output. Every kernel here gives bit-identical results
// for any nth (the reduction order of every output element depends only on the ISA variant and
// the shapes, never on the thread count), so `--threads 1` and `--threads 2` agree exactly.
// The plan executor calls the _dyn variants (below) where they exist: the same kernels with the
// parts claimed at run time instead of fixed, which changes who computes a part, never how.
//
// Thread-safety: mx_cpu_features(), mx_cpu_kernels_*() are safe from any thread (detection runs
// once, guarded by pthread_once). A pool may be driven by one thread at a time (the thread that
// calls mx_cpu_pool_run); different pools are independent. Packed weights are immutable after
// mx_cpu_pack_f32 returns and may be read by any number of threads.
//
// Alignment: no input needs alignment beyond that of float (unaligned vector loads are used);
// packed weights are allocated 64-byte aligned by this module. Performance is best when x, y
// and X, Y rows are 64-byte aligned but results never depend on it.
#ifndef MLXCEL_CPU_H
#define MLXCEL_CPU_H

#include "mlxcel/base.h"

#ifdef __cplusplus
extern "C" {
#endif

// ============================================================================================
// CPU features
// ============================================================================================

typedef struct mx_cpu_features {
  // x86-64 (all false elsewhere). Each AVX flag is true only when the OS also saves the
  // corresponding register state (XCR0), so a true flag means "usable".
  bool avx2, fma, f16c;
  bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16;
  // AMX-TILE + AMX-BF16 / AMX-INT8, with XCR0's tile state and (Linux) the permission to use
  // the tile data granted to this process (requested once, at detection).
  bool amx_bf16, amx_int8;
  // ARM64 (reserved for the NEON variants; always false until they exist).
  bool neon, neon_fp16, neon_dotprod;
  int logical_cpus;    // CPUs this process may run on (affinity mask)
  int physical_cores;  // logical_cpus / SMT siblings per core (>= 1)
} mx_cpu_features_t;

// Detected once; the pointer is to static storage, valid for the life of the process.
const mx_cpu_features_t *mx_cpu_features(void);

// ============================================================================================
// Kernel variants and the dispatch table
// ============================================================================================

typedef enum mx_cpu_isa {
  MX_CPU_ISA_SCALAR = 0,  // portable C, always available
  MX_CPU_ISA_AVX2 = 1,    // AVX2 + FMA (256-bit)
  MX_CPU_ISA_AVX512 = 2,  // AVX-512 F/BW/VL/DQ (512-bit)
  // MX_CPU_ISA_NEON = 3 goes here.
  MX_CPU_ISA_COUNT
} mx_cpu_isa_t;

const char *mx_cpu_isa_name(mx_cpu_isa_t isa);  // "scalar", "avx2", "avx512"; "?" if unknown

// The f32 kernels of one ISA variant, chosen once (mx_cpu_kernels_best) and passed to the
// kernels below. Tables are static, never freed.
typedef struct mx_cpu_kernels mx_cpu_kernels_t;

// The table of `isa`, or NULL when this machine (or this build) cannot run it.
const mx_cpu_kernels_t *mx_cpu_kernels_get(mx_cpu_isa_t isa);
// The fastest table this machine supports (never NULL: scalar is always there).
const mx_cpu_kernels_t *mx_cpu_kernels_best(void);
mx_cpu_isa_t mx_cpu_kernels_isa(const mx_cpu_kernels_t *kt);
// Rows of W per packed panel for this table (also the GEMM microkernel's N width).
int mx_cpu_kernels_panel_rows(const mx_cpu_kernels_t *kt);
// Rows of X per GEMM microkernel call for this table (its M height).
int mx_cpu_kernels_gemm_rows(const mx_cpu_kernels_t *kt);

// Which decode kernels run quantized weights (docs/quantization.md). The prefill GEMM is exact
// whatever the choice; a choice this CPU cannot run falls back to its exact kernels.
typedef enum mx_cpu_qkernel {
  MX_CPU_QKERNEL_AUTO = 0,  // VNNI16 where the CPU has AVX-512 VNNI, else exact
  MX_CPU_QKERNEL_EXACT,     // f32 activations: the graph's own semantics
  MX_CPU_QKERNEL_VNNI16,    // 16-bit activations (AVX-512 VNNI)
  MX_CPU_QKERNEL_VNNI,      // 8-bit activations (AVX-512 VNNI)
} mx_cpu_qkernel_t;
// "auto", "exact", "vnni16", "vnni"; "?" for other values.
const char *mx_cpu_qkernel_name(mx_cpu_qkernel_t k);
// Parses one of the names above (exact, lowercase). MX_ERR_INVALID_ARG naming `what` otherwise.
mx_status_t mx_cpu_qkernel_parse(const char *s, const char *what, mx_cpu_qkernel_t *out);

// ============================================================================================
// Thread pool
// ============================================================================================

// A persistent pool of n threads: the thread calling mx_cpu_pool_run acts as thread 0 and
// n - 1 workers are spawned at create time (none when n == 1). Between jobs workers spin for up
// to 1 ms (longer than the host's work between two decode steps, so a generation loop never
// pays a wake-up), yielding the CPU now and then, and then sleep (futex on Linux, condition
// variable elsewhere); a job's hot path makes no allocation and no system call except those
// yields and the wake-up of sleeping workers.
typedef struct mx_cpu_pool mx_cpu_pool_t;

// A job: called once on every thread with ith in [0, nth).
typedef void (*mx_cpu_task_fn)(void *ctx, int ith, int nth);

// n_threads <= 0 selects mx_cpu_features()->physical_cores. Caps at 256.
mx_status_t mx_cpu_pool_create(int n_threads, mx_cpu_pool_t **out);
// Joins the workers. Must not be called while a job runs. Accepts NULL.
void mx_cpu_pool_destroy(mx_cpu_pool_t *pool);
int mx_cpu_pool_threads(const mx_cpu_pool_t *pool);
// Runs fn(ctx, ith, nth) on all threads and returns when every call has returned. Everything
// the caller wrote before is visible to fn; everything fn wrote is visible after the return.
// Not reentrant: fn must not call mx_cpu_pool_run on the same pool. pool must not be NULL
// (the *_run kernel wrappers below accept NULL for single-threaded use).
void mx_cpu_pool_run(mx_cpu_pool_t *pool, mx_cpu_task_fn fn, void *ctx);
// Inside a job: waits until all nth threads of the job have called it (spin, then sleep).
// Writes before the barrier are visible to all threads after it. Every thread must call it the
// same number of times in a job.
void mx_cpu_pool_barrier(mx_cpu_pool_t *pool);

// ============================================================================================
// f32 matmul kernels
// ============================================================================================
//
// Tolerance: each output is an f32 sum of K products, accumulated with FMA in an order fixed by
// the variant. Against an exact (double) reference the error is bounded by about
// K * 2^-24 * sum_k |w_k x_k| (the standard forward bound); the tests check
// |y - ref| <= 4 * (K + 2) * 2^-24 * sum_k |w_k x_k|, a bound relative to the absolute sum, not
// to |y| (which can cancel to ~0).

// GEMV on row-major weights, y[n] = sum_k W[n*ldw + k] * x[k] for n in [0, N). Thread ith
// computes a contiguous block of rows. x, W, y: caller-owned; y must not alias W or x.
void mx_cpu_gemv_f32(const mx_cpu_kernels_t *kt, const float *w, int64_t ldw, const float *x,
                     float *y, int64_t n, int64_t k, int ith, int nth);

// Weights packed once into panels of mx_cpu_kernels_panel_rows(kt) rows, k-major inside a
// panel: panel p holds W[p*NR + r][kk] at data[(p*K + kk)*NR + r], rows past N are zero.
typedef struct mx_cpu_packed {
  const mx_cpu_kernels_t *kt;  // the table it was packed for (its panel width)
  int64_t n, k;                // logical shape of W[n, k]
  int64_t panels;              // ceil(n / NR)
  int nr;                      // panel rows
  float *data;  // 64-byte aligned, panels * k * nr floats, owned by this object (a weight
                // cache's packings: by the cache, src/cpu/weights.c)
} mx_cpu_packed_t;

// Packs W[n, k] (row stride ldw floats) for table kt. With a pool, the copy runs on all its
// threads (NULL = the calling thread only). The result owns its memory; W can be freed after.
mx_status_t mx_cpu_pack_f32(const mx_cpu_kernels_t *kt, mx_cpu_pool_t *pool, const float *w,
                            int64_t ldw, int64_t n, int64_t k, mx_cpu_packed_t **out);
void mx_cpu_packed_destroy(mx_cpu_packed_t *p);  // accepts NULL

// GEMV on packed weights: y[n] = W x. Thread ith computes a contiguous range of panels.
// This is the decode kernel: one contiguous weight stream per thread, no horizontal sums, and
// the same packed object serves prefill (GEMM) and decode, so weights are resident once; it
// streams faster than a row-major GEMV (bench/cpu_kernels.c; docs/performance.md, "Kernel
// measurements").
void mx_cpu_gemv_packed_f32(const mx_cpu_packed_t *w, const float *x, float *y, int ith, int nth);

// GEMM Y[m, n] = sum_k X[m*ldx + k] * W[n, k] (W packed), Y row stride ldy. Thread ith computes
// a contiguous range of panels (columns of Y) for all rows, or, when panels are fewer than
// threads, a block of panels x a block of rows; K is never split across threads.
// Y must not alias X. M == 1 is valid (it is then a GEMV with GEMM's summation order).
// Blocking: K in passes of 256, 16 panels per L2 block; the current 256 x MR block of X is
// packed on the stack (16 KiB per call): no heap allocation; or, with apack (NULL: none), read
// from X packed once by mx_cpu_gemm_pack_x below.
void mx_cpu_gemm_packed_f32(const mx_cpu_packed_t *w, const float *x, int64_t ldx,
                            const float *apack, float *y, int64_t ldy, int64_t m, int ith, int nth);

// The part of Y that thread ith of nth writes: rows [*r0, *r1), columns [*c0, *c1) (clipped to
// n). gemm = true: mx_cpu_gemm_packed_f32's split; false: mx_cpu_gemv_packed_f32's (m = 1) and
// the per-row kernels' (every row, the same panels). Empty when *r0 >= *r1 or *c0 >= *c1. Lets a
// caller fuse an elementwise epilogue into the same job without a barrier.
void mx_cpu_matmul_region(const mx_cpu_packed_t *w, int64_t m, bool gemm, int ith, int nth,
                          int64_t *r0, int64_t *r1, int64_t *c0, int64_t *c1);

// ---- Dynamic work sharing ----
//
// On a shared host a thread can lose its CPU for milliseconds; with a fixed split the whole job
// then waits for it. The _dyn kernels instead cut their output into chunks (about 8 per thread)
// that the threads of a job claim, so a stalled thread's chunks go to the others. The chunks
// form min(nth, MX_CPU_WORK_SEGMENTS) contiguous segments, one per thread (ith % segments):
// a thread takes its own segment's chunks front to back, so its weights stay one stream (the
// software prefetch running past a chunk's end fetches the next chunk it will take), and once
// its segment is empty it takes the others' from their back ends. A chunk is computed whole by
// whichever thread claims it, with the same summation order as the fixed split: results stay
// bit-identical for any nth. One counter per kernel call, zeroed before the job starts (e.g. by
// the thread that dispatches it).
enum { MX_CPU_WORK_SEGMENTS = 8 };
typedef struct mx_cpu_work {
  // Per segment: chunks taken from its front (low 32 bits) and from its back (high 32 bits).
  // One cache line each: in one shared line every claim took the line from the other core
  // (docs/performance.md, "Kernel measurements").
  struct {
    _Alignas(64) _Atomic uint64_t v;
  } seg[MX_CPU_WORK_SEGMENTS];
} mx_cpu_work_t;

void mx_cpu_work_reset(mx_cpu_work_t *w);
// Claims one of n chunks (n < 2^31) for thread ith of nth: true with *c its index, false once
// all are taken.
bool mx_cpu_work_claim(mx_cpu_work_t *w, int64_t n, int ith, int nth, int64_t *c);
// Units per chunk to share `units` among nth threads: ~8 chunks per thread, >= min_units each.
int64_t mx_cpu_work_grain(int64_t units, int nth, int64_t min_units);
// The same for a stream of units of unit_bytes each (GEMV panels): chunks of at least 64 KiB, so
// each stays a long run for the hardware prefetchers, as a fixed split gives them.
int64_t mx_cpu_work_stream_grain(int64_t units, int64_t unit_bytes, int nth);

// mx_cpu_gemv_packed_f32 on panels [p0, p1) only.
void mx_cpu_gemv_packed_f32_panels(const mx_cpu_packed_t *w, const float *x, float *y, int64_t p0,
                                   int64_t p1);
// mx_cpu_gemv_packed_f32 with the panels shared through `work` in chunks of
// mx_cpu_gemv_packed_f32_grain panels (at least 64 KiB of weights each).
int64_t mx_cpu_gemv_packed_f32_grain(const mx_cpu_packed_t *w, int nth);
void mx_cpu_gemv_packed_f32_dyn(const mx_cpu_packed_t *w, const float *x, float *y,
                                mx_cpu_work_t *work, int ith, int nth);
// X packed once for every GEMM that reads it (instead of once per chunk of panels, which is
// ~15% of a prefill GEMM's time): row block b (rows [b * mr, b * mr + mr), mr of kt) at
// apack + b * mr * k, in the microkernel's layout (apack[kk * mr + i]; rows past m are zero).
// mx_cpu_gemm_apack_floats: the floats that takes. mx_cpu_gemm_pack_x: thread ith of nth packs
// its share of the row blocks; the GEMMs may read apack once every thread is done (a barrier).
size_t mx_cpu_gemm_apack_floats(const mx_cpu_kernels_t *kt, int64_t m, int64_t k);
void mx_cpu_gemm_pack_x(const mx_cpu_kernels_t *kt, const float *x, int64_t ldx, int64_t m,
                        int64_t k, float *apack, int ith, int nth);
// mx_cpu_gemm_packed_f32 on panels [p0, p1) x rows [m0, m1) (the unit of both splits), m0 a
// multiple of mr. apack: X packed by mx_cpu_gemm_pack_x (x unused), or NULL: X is packed here,
// block by block.
void mx_cpu_gemm_packed_f32_block(const mx_cpu_packed_t *w, const float *x, int64_t ldx,
                                  const float *apack, float *y, int64_t ldy, int64_t m0, int64_t m1,
                                  int64_t p0, int64_t p1);
// mx_cpu_gemm_packed_f32 with groups of mx_cpu_gemm_packed_f32_grain panels (all rows) shared
// through `work`; the fixed split when panels are fewer than threads. apack as above.
int64_t mx_cpu_gemm_packed_f32_grain(const mx_cpu_packed_t *w, int nth);
void mx_cpu_gemm_packed_f32_dyn(const mx_cpu_packed_t *w, const float *x, int64_t ldx,
                                const float *apack, float *y, int64_t ldy, int64_t m,
                                mx_cpu_work_t *work, int ith, int nth);

// Convenience wrappers running one kernel as a whole pool job (pool NULL = single thread).
void mx_cpu_gemv_f32_run(mx_cpu_pool_t *pool, const mx_cpu_kernels_t *kt, const float *w,
                         int64_t ldw, const float *x, float *y, int64_t n, int64_t k);
void mx_cpu_gemv_packed_f32_run(mx_cpu_pool_t *pool, const mx_cpu_packed_t *w, const float *x,
                                float *y);
void mx_cpu_gemm_packed_f32_run(mx_cpu_pool_t *pool, const mx_cpu_packed_t *w, const float *x,
                                int64_t ldx, float *y, int64_t ldy, int64_t m);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_CPU_H
