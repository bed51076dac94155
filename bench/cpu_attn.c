// Micro-benchmark of the decode attention (src/cpu/fused_kv.h: the split over the keys, then the
// merge, as a decode step over a KV cache runs it) against this machine's memory bandwidth.
//
//   cpu_attn [--shape smollm2-360m|llama-3.2-1b] [--ctx N] [--kv f32|bf16|f16] [--reps R]
//            [--threads T] [--mib M] [--hot]
//
// One query position (batch 1) attends to N keys (default 544: a 512-token prompt plus the
// middle of 64 decoded tokens, as bench/run.sh's decode rows) with the head layout of the shape.
// The caches of one layer are repeated until the working set is at least M MiB (well beyond the
// last-level cache, so keys and values stream from DRAM as in a real decode step, where the
// weights of the other layers pass through the caches in between); one pool job runs every copy
// (split, barrier, merge, barrier), as the runtime runs a plan. Repetitions alternate with a
// bandwidth sample (the shared machine drifts). Reported: KV bytes per layer, best and median
// effective read GB/s, the fraction of the best measured bandwidth, and the time per layer.
//
// --hot runs one copy 256 times instead (resident in the caches): the rate the kernel reaches
// when memory is not the limit (a kernel whose hot rate is not well above the bandwidth cannot be
// memory-bound).
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/half.h"
#include "bench_util.h"
#include "cpu/fused_kv.h"
#include "mlxcel/machine.h"

enum { MAX_REPS = 64 };

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float next_unit(void) {  // uniform in [-1, 1)
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (float)(g_rng >> 40) / (float)(1u << 23) - 1.0f;
}

// aligned_alloc wants a size that is a multiple of the alignment.
static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

// Every layer copy in one pool job with a barrier after each step, as the runtime runs a plan.
typedef struct attn_job {
  mx_cpu_pool_t *pool;
  const float *q;
  const unsigned char *caches;
  size_t stride, v_offset;    // bytes from one copy to the next, from its K to its V
  int64_t n_layers, n_steps;  // steps run copy l % n_layers
  mx_elem_type_t kv;
  int32_t pos0;
  float *part, *out, *scratch;
  int64_t hq, hkv, s, d, parts;
  mx_cpu_work_t *work;  // [n_steps], zeroed before the job
} attn_job_t;

static void attn_task(void *ctx, int ith, int nth) {
  attn_job_t *j = ctx;
  for (int64_t l = 0; l < j->n_steps; l++) {
    const unsigned char *k = j->caches + (size_t)(l % j->n_layers) * j->stride;
    mx_cpu_attention_kv_split(j->q, k, k + j->v_offset, j->kv, &j->pos0, j->part, 1, j->hq, j->hkv,
                              j->s, j->d, 0.125f, 0, 0.0f, j->parts, j->scratch, &j->work[l], ith,
                              nth);
    if (nth > 1) mx_cpu_pool_barrier(j->pool);
    mx_cpu_attention_kv_merge(j->part, j->out, j->hq, j->d, j->parts, ith, nth);
    if (nth > 1) mx_cpu_pool_barrier(j->pool);
  }
}

int main(int argc, char **argv) {
  const char *shape = "smollm2-360m", *kv_name = "f32";
  int reps = 7, threads = 2;
  bool hot = false;
  long long ctx = 544, mib = 1024;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      printf(
          "usage: cpu_attn [--shape smollm2-360m|llama-3.2-1b] [--ctx N] [--kv f32|bf16|f16]\n"
          "                [--reps R] [--threads T] [--mib M] [--hot]\n");
      return 0;
    }
    if (!strcmp(a, "--hot")) {
      hot = true;
      continue;
    }
    if (!v) {
      fprintf(stderr, "cpu_attn: %s needs a value (--help)\n", a);
      return 2;
    }
    if (!strcmp(a, "--shape"))
      shape = v;
    else if (!strcmp(a, "--kv"))
      kv_name = v;
    else if (!strcmp(a, "--ctx"))
      ctx = atoll(v);
    else if (!strcmp(a, "--mib"))
      mib = atoll(v);
    else if (!strcmp(a, "--reps"))
      reps = atoi(v);
    else if (!strcmp(a, "--threads"))
      threads = atoi(v);
    else {
      fprintf(stderr, "cpu_attn: unknown option %s (--help)\n", a);
      return 2;
    }
    i++;
  }
  int64_t hq, hkv, d = 64;
  if (!strcmp(shape, "smollm2-360m")) {
    hq = 15;
    hkv = 5;
  } else if (!strcmp(shape, "llama-3.2-1b")) {
    hq = 32;
    hkv = 8;
  } else {
    fprintf(stderr, "cpu_attn: unknown shape '%s'\n", shape);
    return 2;
  }
  mx_elem_type_t kv = MX_ELEM_F32;
  size_t esz = 4;
  if (!strcmp(kv_name, "bf16") || !strcmp(kv_name, "f16")) {
    kv = kv_name[0] == 'b' ? MX_ELEM_BF16 : MX_ELEM_F16;
    esz = 2;
  } else if (strcmp(kv_name, "f32")) {
    fprintf(stderr, "cpu_attn: unknown KV dtype '%s'\n", kv_name);
    return 2;
  }
  if (ctx < 1 || ctx > (1 << 20) || mib < 1 || reps < 1 || reps > MAX_REPS || threads < 1) {
    fprintf(stderr, "cpu_attn: --ctx, --mib, --reps (<= %d) and --threads must be positive\n",
            MAX_REPS);
    return 2;
  }
  mx_cpu_pool_t *pool = NULL;
  if (mx_cpu_pool_create(threads, &pool)) {
    fprintf(stderr, "cpu_attn: %s\n", mx_error_message());
    return 1;
  }
  int nth = mx_cpu_pool_threads(pool);
  const int64_t s = ctx, parts = mx_cpu_attention_kv_parts(hkv);
  const size_t cache_elems = (size_t)(hkv * s * d), layer_bytes = 2 * cache_elems * esz;
  int64_t n_layers = (int64_t)(((double)mib * 1048576.0 + (double)layer_bytes - 1) / layer_bytes);
  if (n_layers < 2) n_layers = 2;
  if (hot) n_layers = 1;
  const int64_t n_steps = hot ? 256 : n_layers;
  // One block per layer copy: K then V, each cache-line aligned.
  size_t stride = (layer_bytes + 63) / 64 * 64;
  unsigned char *caches = alloc64(stride * (size_t)n_layers);
  float *q = alloc64((size_t)(hq * d) * sizeof(float));
  float *part = alloc64(mx_cpu_attention_kv_part_floats(1, hq, d, parts) * sizeof(float));
  float *out = alloc64((size_t)(hq * d) * sizeof(float));
  float *scratch = alloc64(mx_cpu_attention_kv_scratch_floats(d, s) * (size_t)nth * sizeof(float));
  if (!caches || !q || !part || !out || !scratch) {
    fprintf(stderr, "cpu_attn: out of memory (%lld layer copies of %.2f MB)\n", (long long)n_layers,
            layer_bytes / 1e6);
    return 1;
  }
  for (int64_t i = 0; i < hq * d; i++) q[i] = next_unit();
  for (int64_t l = 0; l < n_layers; l++) {
    unsigned char *base = caches + (size_t)l * stride;
    for (size_t i = 0; i < 2 * cache_elems; i++) {
      float x = next_unit();
      if (kv == MX_ELEM_F32)
        ((float *)base)[i] = x;
      else if (kv == MX_ELEM_BF16)
        mx_half_f32_to_bf16(&x, (uint16_t *)base + i, 1);
      else
        mx_half_f32_to_f16(&x, (uint16_t *)base + i, 1);
    }
  }
  printf(
      "cpu_attn: %s (%lld query heads, %lld kv heads, head dim %lld), %lld keys, KV %s, "
      "%d threads, %lld layer copies (%.0f MiB), %lld pieces per kv head, %d reps\n",
      shape, (long long)hq, (long long)hkv, (long long)d, ctx, kv_name, nth, (long long)n_layers,
      (double)layer_bytes * (double)n_layers / 1048576.0, (long long)parts, reps);
  mx_cpu_work_t *work = alloc64((size_t)n_steps * sizeof *work);
  if (!work) {
    fprintf(stderr, "cpu_attn: out of memory\n");
    return 1;
  }
  attn_job_t job = {.pool = pool,
                    .q = q,
                    .caches = caches,
                    .stride = stride,
                    .v_offset = cache_elems * esz,
                    .n_layers = n_layers,
                    .n_steps = n_steps,
                    .kv = kv,
                    .pos0 = (int32_t)(ctx - 1),
                    .part = part,
                    .out = out,
                    .scratch = scratch,
                    .hq = hq,
                    .hkv = hkv,
                    .s = s,
                    .d = d,
                    .parts = parts,
                    .work = work};
  double bw[MAX_REPS], gbs[MAX_REPS];
  for (int r = 0; r < reps; r++) {
    double med;
    mx_machine_bandwidth(pool, (size_t)512 << 20, 1, &med, &bw[r]);
    for (int64_t l = 0; l < n_steps; l++) mx_cpu_work_reset(&work[l]);
    double t0 = mx_bench_now_s();
    mx_cpu_pool_run(pool, attn_task, &job);
    gbs[r] = (double)layer_bytes * (double)n_steps / (mx_bench_now_s() - t0) / 1e9;
  }
  double checksum = 0;
  for (int64_t i = 0; i < hq * d; i++) checksum += out[i];
  qsort(bw, (size_t)reps, sizeof *bw, mx_bench_cmp_double);
  qsort(gbs, (size_t)reps, sizeof *gbs, mx_bench_cmp_double);
  double best = gbs[reps - 1];
  printf("memory read bandwidth: best %.1f GB/s, median %.1f GB/s\n", bw[reps - 1], bw[reps / 2]);
  printf("%12s %10s %10s %8s %12s\n", "MB/layer", "best GB/s", "med GB/s", "% of bw", "us/layer");
  printf("%12.3f %10.2f %10.2f %7.1f%% %12.2f\n", layer_bytes / 1e6, best, gbs[reps / 2],
         100.0 * best / bw[reps - 1], layer_bytes / (best * 1e9) * 1e6);
  printf("checksum %.6f\n", checksum);
  free(caches);
  free(q);
  free(part);
  free(out);
  free(scratch);
  free(work);
  mx_cpu_pool_destroy(pool);
  return 0;
}
