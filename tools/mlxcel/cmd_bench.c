// `mlxcel bench`: prefill and decode speed of a model through the session API, each next to the
// physical limit of this machine (memory bandwidth for decode, peak f32 FLOP/s for prefill),
// and `mlxcel bench --machine`: those limits alone.
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cli.h"
#include "mlxcel/batch.h"
#include "mlxcel/machine.h"
#include "mlxcel/session.h"

static void bench_usage(FILE *out) {
  fprintf(
      out,
      "Usage: mlxcel bench -m DIR [--prompt N] [--gen N] [--threads T] [--reps R]\n"
      "                    [--backend NAME] [--ctx N] [--chunk N] [--machine-file FILE]\n"
      "                    [--bw-mib N] [--parallel N] [--no-warmup] [--quant MODE]\n"
      "                    [--group-size N] [--precision T] [--kv-dtype T] [--json]\n"
      "                    [--image PATH | --audio PATH]\n"
      "       mlxcel bench --machine [--threads T] [--reps R] [--bw-mib N] [--json]\n"
      "                    [-o FILE]\n"
      "\n"
      "Model mode: runs an N-token prompt (prefill) and then --gen decode steps, --reps times,\n"
      "and prints the medians of prefill and decode tok/s with the peak RSS. Next to each it\n"
      "prints the limit of this machine and the percentage reached:\n"
      "  decode limit  = memory bandwidth / bytes read per decoded token (every matmul weight\n"
      "                  at the precision's size, or for quantized layers their packed\n"
      "                  values, scales and biases; the embedding row, the norms, and the KV\n"
      "                  cache up to the mean decode position at the KV dtype's size; of a\n"
      "                  mixture of experts, the router and the selected experts only; of\n"
      "                  multi-latent attention, the latent cache and kv_b_proj in f32)\n"
      "  prefill limit = peak f32 FLOP/s / FLOPs per prompt token (2 x matmul parameters,\n"
      "                  the attention scores and values, the LM head of each prefill call);\n"
      "                  bf16 / f16 rows are measured against the same f32 peak\n"
      "Bandwidth and peak are measured in the same run with the same thread count: --reps\n"
      "times right before the model runs and once more after each rep (or read from\n"
      "--machine-file, as written by bench --machine --json -o FILE). Each rep is held\n"
      "against the better of the samples right before and right after it (bandwidth drifts\n"
      "over minutes on shared hosts; interference only slows a measurement down); limits and\n"
      "percentages are the medians over the reps.\n"
      "\n"
      "--parallel N runs N sequences together through the batch engine (mlxcel serve's): each\n"
      "rep prefills the N slots one after the other, then decodes all N in one batched call per\n"
      "step; prefill and decode tok/s are aggregates over the N sequences. The decode limit is\n"
      "then the smaller of N x bandwidth / (weights + N x KV bytes) and peak / decode FLOPs.\n"
      "\n"
      "--image PATH (a vision-language model) replaces the N-token prompt by a one-image\n"
      "prompt (the image, then \"Describe the image.\") and reports per rep, medians over\n"
      "the reps: the vision tower's time, the time to first token (image decoding and\n"
      "preprocessing, tower, the prompt's prefill with the image features, the first token),\n"
      "the prompt's prefill tok/s, and decode tok/s after it against the decode limit at\n"
      "the prompt's length. An untimed rep first builds the media entries (unless\n"
      "--no-warmup). Molmo2's prompt is its processor's expansion of the image's crops (the\n"
      "count printed); the image is one prefill block: --chunk at least its tokens.\n"
      "\n"
      "--audio PATH (Gemma 3n, a WAV file) does the same with a one-recording prompt (its audio\n"
      "sequence, then \"Describe the audio.\"): per rep the host's log-mel features (the file\n"
      "read, resampled and featurized), the audio tower, the time to first token (features,\n"
      "tower, prefill, first token), prefill and decode tok/s.\n"
      "\n"
      "Machine mode: measures and prints the memory read bandwidth (multi-threaded streaming\n"
      "sum over a 1 GiB buffer) and peak f32 FMA FLOP/s, medians of --reps.\n"
      "\n"
      "Options:\n"
      "  -m, --model DIR       model directory\n"
      "  --prompt N            prompt tokens (default 128)\n"
      "  --gen N               decode steps (default 32)\n"
      "  --threads T           threads (default: physical cores; MLXCEL_THREADS is not\n"
      "                        read: the machine is measured with the same threads)\n"
      "  --reps R              repetitions; medians are reported (default 3)\n"
      "  --backend NAME        execution backend: cpu (fast runtime), interp (reference\n"
      "                        interpreter) or xla (a PJRT plugin; its compile time is\n"
      "                        reported apart); default: $MLXCEL_BACKEND, else cpu\n"
      "  --pjrt-plugin PATH    the xla backend's PJRT plugin (default:\n"
      "                        $MLXCEL_XLA_PJRT_PLUGIN, else the installed plugin of\n"
      "                        $MLXCEL_XLA_DEVICE)\n"
      "  --ctx N               KV capacity (default: prompt + gen, at least 128)\n"
      "  --chunk N             prefill chunk (largest tokens per prefill call; default:\n"
      "                        the backend's, cpu 512, interp 64; at most the KV capacity)\n"
      "  --parallel N          N sequences decoded together (batch engine, 1..64); default:\n"
      "                        one session\n"
      MX_CLI_PRECISION_USAGE("         ", "                        ")
      "  --machine-file FILE   read bandwidth_gbs / peak_gflops instead of measuring\n"
      "  --bw-mib N            bandwidth buffer in MiB (default 1024; small = fast, wrong)\n"
      "  --machine             measure the machine only\n"
      "  --quant MODE          weights: none, int8, int4, mlx (default: auto =\n"
      "                        $MLXCEL_XLA_QUANT, else mlx for MLX checkpoints, else none)\n"
      "  --group-size N        int8 / int4 group size: 32, 64 (default) or 128\n"
      "  --image PATH          a PNG or JPEG: bench a one-image prompt (see above)\n"
      "  --audio PATH          a WAV file: bench a one-recording prompt (see above)\n"
      "  --audio PATH          a WAV file: bench a one-recording prompt (see above)\n"
      "  --json                print one JSON object\n"
      "  -o, --output FILE     (--machine) also write the JSON object to FILE\n"
      "  -h, --help            show this help\n"
      "\n"
      "Exit status: 0 success, 1 failure, 2 bad command line, 3 unreadable model or file.\n");
  mx_cli_env_usage(out, "bench");
}

typedef struct bench_args {
  const char *dir, *backend, *machine_file, *out, *image, *audio;
  int64_t prompt, gen, threads, reps, ctx, chunk, bw_mib, parallel;
  bool machine, json, has_reps, no_warmup;
  mx_model_load_opts_t load;  // --quant / --group-size / --precision / --kv-dtype
  mx_xla_backend_opts_t xla;  // --pjrt-plugin
} bench_args_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { MAX_REPS = 101 };  // --reps: the per-rep limits live in arrays of this size

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void utc_now(char *buf, size_t cap) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

// Peak RSS: VmHWM of /proc/self/status (reset by reset_peak_rss), else getrusage.
static void reset_peak_rss(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (f) {
    fputs("5", f);
    fclose(f);
  }
}

static double peak_rss_mib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  }
  if (f) fclose(f);
  if (kb < 0) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    kb = ru.ru_maxrss;
  }
  return (double)kb / 1024.0;
}

static int parse_args(int argc, char **argv, bench_args_t *b, bool *help) {
  const char *cmd = "bench";
  const struct {
    const char *name;
    int64_t *field, lo, hi;
  } ints[] = {
      {"--prompt", &b->prompt, 1, 1 << 20}, {"--gen", &b->gen, 1, 1 << 20},
      {"--threads", &b->threads, 1, 256},   {"--reps", &b->reps, 1, MAX_REPS},
      {"--ctx", &b->ctx, 1, INT32_MAX},     {"--chunk", &b->chunk, 1, 1 << 16},
      {"--bw-mib", &b->bw_mib, 1, 1 << 20}, {"--parallel", &b->parallel, 1, 64},
  };
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r = 0;
    bool matched = false;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0] && !matched; k++) {
      if ((r = mx_cli_opt(argc, argv, &i, cmd, ints[k].name, NULL, &v)) == 0) continue;
      if (r < 0 || !mx_cli_parse_int(cmd, ints[k].name, v, ints[k].lo, ints[k].hi, ints[k].field)) {
        return MX_EXIT_USAGE;
      }
      if (ints[k].field == &b->reps) b->has_reps = true;
      matched = true;
    }
    if (matched) continue;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      *help = true;
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--model", "-m", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      b->dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--backend", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      b->backend = v;
    } else if ((r = mx_cli_pjrt_opt(argc, argv, &i, cmd, &b->xla)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_precision_opt(argc, argv, &i, cmd, &b->load)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--machine-file", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      b->machine_file = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--image", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      b->image = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--audio", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      b->audio = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--output", "-o", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      b->out = v;
    } else if ((r = mx_cli_quant_opt(argc, argv, &i, cmd, &b->load)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
    } else if (strcmp(a, "--machine") == 0) {
      b->machine = true;
    } else if (strcmp(a, "--json") == 0) {
      b->json = true;
    } else if (strcmp(a, "--no-warmup") == 0) {
      b->no_warmup = true;
    } else if (a[0] == '-') {
      return mx_cli_usage_error(cmd, bench_usage, "unknown option '%s'", a);
    } else {
      return mx_cli_usage_error(cmd, bench_usage, "unexpected argument '%s'", a);
    }
  }
  if (b->machine && b->dir) {
    return mx_cli_usage_error(cmd, bench_usage, "give -m DIR or --machine, not both");
  }
  if (!b->machine && !b->dir) {
    return mx_cli_usage_error(cmd, bench_usage, "missing -m DIR (or --machine)");
  }
  if (b->out && !b->machine) {
    return mx_cli_usage_error(cmd, bench_usage, "-o FILE goes with --machine");
  }
  if (b->machine && (b->load.precision || b->load.kv_dtype)) {
    return mx_cli_usage_error(cmd, bench_usage, "--precision / --kv-dtype go with -m DIR");
  }
  if (b->image && b->audio) {
    return mx_cli_usage_error(cmd, bench_usage, "give --image or --audio, not both");
  }
  if ((b->image || b->audio) && (b->machine || b->parallel)) {
    return mx_cli_usage_error(cmd, bench_usage, "%s goes with -m DIR, one session (not %s)",
                              b->image ? "--image" : "--audio",
                              b->machine ? "--machine" : "--parallel");
  }
  if (b->machine && b->machine_file) {
    return mx_cli_usage_error(cmd, bench_usage, "--machine measures; --machine-file reads");
  }
  return MX_EXIT_OK;
}

static void machine_json(const mx_machine_info_t *m, mx_strbuf_t *sb) {
  char date[32];
  utc_now(date, sizeof date);
  const mx_cpu_features_t *f = mx_cpu_features();
  mx_strbuf_printf(sb,
                   "{\"threads\": %d, \"bandwidth_gbs\": %.3f, \"bandwidth_best_gbs\": %.3f, "
                   "\"peak_gflops\": %.3f, \"peak_best_gflops\": %.3f, \"bw_bytes\": %zu, "
                   "\"reps\": %d, \"loop_isa\": \"%s\", \"logical_cpus\": %d, "
                   "\"physical_cores\": %d, \"date\": \"%s\"}",
                   m->threads, m->bandwidth_gbs, m->bandwidth_best_gbs, m->peak_gflops,
                   m->peak_best_gflops, m->bw_bytes, m->reps, m->loop_isa, f->logical_cpus,
                   f->physical_cores, date);
}

static mx_status_t measure_machine(const bench_args_t *b, mx_machine_info_t *m) {
  mx_machine_opts_t o;
  memset(&o, 0, sizeof o);
  o.threads = (int)b->threads;
  o.bw_bytes = b->bw_mib ? (size_t)b->bw_mib << 20 : 0;
  o.reps = b->has_reps ? (int)b->reps : 5;
  return mx_machine_measure(&o, m);
}

static int run_machine(const bench_args_t *b) {
  mx_machine_info_t m;
  mx_error_clear();
  mx_status_t st = measure_machine(b, &m);
  if (st != MX_OK) return mx_cli_fail("bench", st);
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  machine_json(&m, &sb);
  if (b->json) {
    printf("%s\n", sb.data);
  } else {
    printf(
        "threads %d: memory read bandwidth %.2f GB/s (best %.2f), peak f32 %.1f GFLOP/s "
        "(best %.1f); %s loops, %zu MiB buffer, %d reps\n",
        m.threads, m.bandwidth_gbs, m.bandwidth_best_gbs, m.peak_gflops, m.peak_best_gflops,
        m.loop_isa, m.bw_bytes >> 20, m.reps);
  }
  int rc = MX_EXIT_OK;
  if (b->out) {
    FILE *f = fopen(b->out, "w");
    if (!f || fprintf(f, "%s\n", sb.data) < 0) {
      fprintf(stderr, "mlxcel bench: cannot write %s\n", b->out);
      rc = MX_EXIT_IO;
    }
    if (f && fclose(f) != 0) rc = MX_EXIT_IO;
  }
  mx_strbuf_free(&sb);
  return rc;
}

static int read_machine_file(const char *path, mx_machine_info_t *m) {
  char *text = NULL;
  size_t len = 0;
  if (mx_read_file(path, &text, &len) != MX_OK) {
    fprintf(stderr, "mlxcel bench: cannot read --machine-file %s\n", path);
    return MX_EXIT_IO;
  }
  cJSON *j = cJSON_ParseWithLength(text, len);
  free(text);
  // The best-of-reps figures when the file has them (bench --machine --json writes both).
  const cJSON *bw = cJSON_GetObjectItemCaseSensitive(j, "bandwidth_best_gbs");
  const cJSON *pk = cJSON_GetObjectItemCaseSensitive(j, "peak_best_gflops");
  if (!cJSON_IsNumber(bw)) bw = cJSON_GetObjectItemCaseSensitive(j, "bandwidth_gbs");
  if (!cJSON_IsNumber(pk)) pk = cJSON_GetObjectItemCaseSensitive(j, "peak_gflops");
  const cJSON *th = cJSON_GetObjectItemCaseSensitive(j, "threads");
  if (!cJSON_IsNumber(bw) || !cJSON_IsNumber(pk) || !(bw->valuedouble > 0) ||
      !(pk->valuedouble > 0)) {
    cJSON_Delete(j);
    fprintf(stderr,
            "mlxcel bench: %s: need positive numbers \"bandwidth_gbs\" and \"peak_gflops\"\n",
            path);
    return MX_EXIT_FAILED;
  }
  memset(m, 0, sizeof *m);
  m->bandwidth_gbs = m->bandwidth_best_gbs = bw->valuedouble;
  m->peak_gflops = m->peak_best_gflops = pk->valuedouble;
  m->threads = cJSON_IsNumber(th) ? (int)th->valuedouble : 0;
  m->loop_isa = "file";
  cJSON_Delete(j);
  return MX_EXIT_OK;
}

// Work per token from the config (see the usage text).
typedef struct model_cost {
  double layer_matmul_params, head_params, matmul_params, params;
  double weight_bytes;            // per decoded token, matmul weights at the precision's size
  double kv_bytes_per_token;      // at the mean decode position, at the KV dtype's size
  double flops_per_token;         // mean over the prompt
  double decode_flops_per_token;  // at the mean decode position
  int64_t prefill_calls;
} model_cost_t;

// The matmul parameters of the MLPs one decode step reads: the dense MLPs, and of a sparse
// (mixture-of-experts) layer the shared expert (*lin) and the top_k selected experts (*experts);
// *router: the routers' parameters (kept in f32 by every precision).
static void mlp_params(const mx_model_config_t *c, double *lin, double *experts, double *router) {
  double h = c->hidden_size;
  *lin = *experts = *router = 0;
  for (int32_t l = 0; l < c->num_layers; l++) {
    if (c->num_experts == 0 || c->layer_dense[l]) {
      *lin += 3 * h * c->intermediate_size;
      continue;
    }
    *experts += (double)c->num_experts_per_tok * 3 * h * c->moe_intermediate_size;
    *lin += 3 * h * c->shared_expert_intermediate_size;
    *router += (double)c->num_experts * h + (c->shared_expert_intermediate_size ? h : 0);
  }
}

// One layer's attention: its linear layers' parameters (*lin), parameters kept in f32 (*f32:
// multi-latent attention's kv_b_proj, which mx.mla reads in float), KV-cache elements per
// position (*kv_width) and the FLOPs of one query against one cached position (*per_pos).
// Multi-latent attention (ADR 0012) caches the latent and the rotated key and scores in the
// absorbed form: per head the latent and rotated dims, then the latent sum.
static void attn_params(const mx_model_config_t *c, double *lin, double *f32, double *kv_width,
                        double *per_pos) {
  double h = c->hidden_size, H = c->num_heads;
  if (c->kv_lora_rank > 0) {
    double r = c->kv_lora_rank, dn = c->qk_nope_head_dim, dr = c->qk_rope_head_dim;
    double dv = c->v_head_dim, ql = c->q_lora_rank, qk = H * (dn + dr);
    *lin = (ql > 0 ? h * ql + ql * qk : h * qk) + h * (r + dr) + H * dv * h;
    *f32 = H * (dn + dv) * r;
    *kv_width = r + dr;
    *per_pos = H * (2.0 * (r + dr) + 2.0 * r);
    return;
  }
  double q = H * c->head_dim, kv = (double)c->num_kv_heads * c->head_dim;
  *lin = h * q + 2 * h * kv + q * h;
  *f32 = 0;
  *kv_width = 2 * kv;
  *per_pos = 4.0 * q;
}

// wsize / kvsize: bytes per matmul weight and per KV-cache element (4 at f32, 2 at bf16 / f16).
static void model_cost(const mx_model_config_t *c, int64_t n, int64_t gen, int64_t chunk,
                       double wsize, double kvsize, model_cost_t *mc) {
  double h = c->hidden_size, lin, experts, router, att, att32, kvw, per_pos;
  double layers = c->num_layers, v = c->vocab_size;
  mlp_params(c, &lin, &experts, &router);
  attn_params(c, &att, &att32, &kvw, &per_pos);
  // Per layer, on average over the layers; a MoE layer counts its selected experts only.
  mc->layer_matmul_params = att + att32 + (lin + experts + router) / layers;
  mc->head_params = v * h;
  // What mx_model_matmul_bytes counts (linear layers and the head; not the experts).
  mc->matmul_params = layers * att + lin + mc->head_params;
  mc->params = mc->matmul_params + experts + router + layers * att32 +
               (c->tie_word_embeddings ? 0 : v * h) + (2 * layers + 1) * h;
  mc->weight_bytes = wsize * (mc->matmul_params + experts + h) +
                     4.0 * ((2 * layers + 1) * h + router + layers * att32);
  double mean_pos = (double)n + (double)(gen - 1) / 2.0;  // decode positions n .. n+gen-1
  mc->kv_bytes_per_token = layers * kvw * kvsize * (mean_pos + 1.0);
  mc->decode_flops_per_token = 2.0 * (mc->matmul_params + experts + router + layers * att32) +
                               layers * per_pos * (mean_pos + 1.0);
  mc->prefill_calls = n / chunk;
  for (int64_t r = n % chunk; r; r &= r - 1) mc->prefill_calls++;
  double dn = (double)n;
  double attn = layers * per_pos * dn * (dn + 1) / 2.0;  // scores and sums over keys 0..p
  double total = dn * 2.0 * layers * mc->layer_matmul_params +
                 2.0 * mc->head_params * (double)mc->prefill_calls + attn;
  mc->flops_per_token = total / dn;
}

static const char *dtype_name(mx_elem_type_t t) {
  return t == MX_ELEM_BF16 ? "bf16" : t == MX_ELEM_F16 ? "f16" : t == MX_ELEM_F32 ? "f32" : "?";
}

// One model under test: a session (default) or a batch of `n` slots (--parallel).
typedef struct runner {
  mx_session_t *s;
  mx_batch_t *b;
  int32_t n, vocab, chunk;
  int32_t *slots, *next, *buf;  // [n], [n], [chunk]
} runner_t;

static void runner_free(runner_t *r) {
  mx_session_destroy(r->s);
  mx_batch_destroy(r->b);
  free(r->slots), free(r->next), free(r->buf);
}

static const char *runner_backend(const runner_t *r) {
  return r->b ? mx_batch_backend(r->b)->name : mx_session_backend(r->s)->name;
}

// Slot i's prompt is the bench prompt with every id shifted by i (mod vocab): the sequences
// differ, the work does not.
static mx_status_t runner_prefill(runner_t *r, const int32_t *ids, int32_t n) {
  if (!r->b) return mx_session_prefill(r->s, ids, n, NULL);
  for (int32_t i = 0; i < r->n; i++) {
    for (int32_t off = 0; off < n; off += r->chunk) {
      int32_t k = n - off < r->chunk ? n - off : r->chunk;
      for (int32_t j = 0; j < k; j++) r->buf[j] = (ids[off + j] + i) % r->vocab;
      mx_status_t st = mx_batch_prefill(r->b, i, r->buf, k);
      if (st != MX_OK) return st;
    }
    r->next[i] = mx_cli_argmax(mx_batch_logits(r->b, i), r->vocab);
  }
  return MX_OK;
}

static mx_status_t runner_decode(runner_t *r) {
  if (!r->b) {
    mx_status_t st = mx_session_decode(r->s, mx_cli_argmax(mx_session_logits(r->s), r->vocab));
    return st;
  }
  mx_status_t st = mx_batch_decode(r->b, r->slots, r->next, r->n);
  for (int32_t i = 0; i < r->n && st == MX_OK; i++)
    r->next[i] = mx_cli_argmax(mx_batch_logits(r->b, i), r->vocab);
  return st;
}

static void runner_reset(runner_t *r) {
  if (!r->b) mx_session_reset(r->s);
  for (int32_t i = 0; r->b && i < r->n; i++) mx_batch_reset(r->b, i);
}

// backend and bo: the flags with the environment applied (mx_cli_backend_env).
static mx_status_t runner_create(const mx_model_t *model, const bench_args_t *a,
                                 const char *backend, const mx_backend_opts_t *bo, int64_t ctx,
                                 runner_t *r) {
  memset(r, 0, sizeof *r);
  mx_status_t st;
  if (!a->parallel) {
    mx_session_opts_t so = {
        .backend = backend, .ctx = ctx, .prefill_chunk = (int32_t)a->chunk, .backend_opts = *bo};
    st = mx_session_create(model, &so, &r->s);
    if (st != MX_OK) return st;
    r->n = 1;
    r->vocab = mx_session_vocab(r->s);
    return MX_OK;
  }
  mx_batch_opts_t o = {.backend = backend,
                       .ctx = ctx,
                       .prefill_chunk = (int32_t)a->chunk,
                       .n_slots = (int32_t)a->parallel,
                       .backend_opts = *bo};
  st = mx_batch_create(model, &o, &r->b);
  if (st != MX_OK) return st;
  r->n = (int32_t)a->parallel;
  r->vocab = mx_batch_vocab(r->b);
  r->chunk = mx_batch_chunk(r->b);
  r->slots = calloc((size_t)r->n, sizeof *r->slots);
  r->next = calloc((size_t)r->n, sizeof *r->next);
  r->buf = calloc((size_t)r->chunk, sizeof *r->buf);
  if (!r->slots || !r->next || !r->buf) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < r->n; i++) r->slots[i] = i;
  return MX_OK;
}

static int run_model(const bench_args_t *b) {
  const char *cmd = "bench";
  if (!mx_cli_check_model_dir(cmd, b->dir, "config.json")) return MX_EXIT_IO;
  int64_t threads = b->threads ? b->threads : mx_cpu_features()->physical_cores;
  mx_machine_info_t m;
  const char *machine_source = "measured";
  if (b->machine_file) {
    int rc = read_machine_file(b->machine_file, &m);
    if (rc != MX_EXIT_OK) return rc;
    machine_source = "file";
  } else {
    bench_args_t mb = *b;
    mb.threads = threads;
    mx_error_clear();
    mx_status_t st = measure_machine(&mb, &m);
    if (st != MX_OK) return mx_cli_fail(cmd, st);
  }
  reset_peak_rss();  // the bandwidth buffer is not the model's memory
  // The threads measured with are the threads benchmarked with (flag, else the physical cores).
  mx_backend_opts_t bo = {.threads = (int32_t)threads, .xla = b->xla};
  const char *backend_name = b->backend;
  mx_error_clear();
  mx_status_t st = mx_cli_backend_env(&backend_name, &bo);
  if (st != MX_OK) return mx_cli_fail(cmd, st);

  mx_model_t *model = NULL;
  mx_error_clear();
  mx_model_load_opts_t lo = b->load;
  lo.tokenizer_optional = true;
  st = mx_cli_model_load(b->dir, &lo, !b->json, &model);
  if (st != MX_OK) return mx_cli_fail(cmd, st);
  const mx_model_config_t *c = &model->config;
  mx_bench_image_t img;
  memset(&img, 0, sizeof img);
  if (b->image) {
    int rc = mx_cli_bench_image_prompt(cmd, model, b->image, &img);
    if (rc != MX_EXIT_OK) {
      mx_cli_bench_image_free(&img);
      mx_model_free(model);
      return rc;
    }
  }
  mx_bench_audio_t aud;
  memset(&aud, 0, sizeof aud);
  if (b->audio) {
    int rc = mx_cli_bench_audio_prompt(cmd, model, b->audio, &aud);
    if (rc != MX_EXIT_OK) {
      mx_cli_bench_audio_free(&aud);
      mx_model_free(model);
      return rc;
    }
  }
  const bool media = b->image || b->audio;
  // With --image: the text, the image's tokens and the two tokens that may wrap them (Gemma 3's
  // text holds its image expanded already).
  int64_t n_prompt = b->audio                       ? aud.n
                     : !b->image                    ? b->prompt
                     : img.n_prompt                 ? img.n_prompt
                     : mx_vision_blocks(&c->vision) ? img.n_text
                                                    : (int64_t)img.n_text + img.image_tokens + 2;
  int64_t ctx = b->ctx ? b->ctx : n_prompt + b->gen;
  if (!b->ctx && ctx < 128) ctx = 128;
  if (ctx > c->max_position_embeddings) ctx = c->max_position_embeddings;
  if (media && n_prompt + b->gen > ctx) {
    fprintf(stderr,
            "mlxcel bench: error: the %s prompt (up to %lld tokens) + --gen %lld exceed the "
            "context %lld\n",
            b->image ? "image" : "audio", (long long)n_prompt, (long long)b->gen, (long long)ctx);
    mx_cli_bench_image_free(&img);
    mx_cli_bench_audio_free(&aud);
    mx_model_free(model);
    return MX_EXIT_FAILED;
  }
  if (!media && b->prompt + b->gen > ctx) {
    fprintf(stderr, "mlxcel bench: error: --prompt %lld + --gen %lld exceed the context %lld\n",
            (long long)b->prompt, (long long)b->gen, (long long)ctx);
    mx_model_free(model);
    return MX_EXIT_FAILED;
  }
  runner_t run;
  bo.progress = mx_cli_progress(!b->json);
  st = runner_create(model, b, backend_name, &bo, ctx, &run);
  mx_cli_progress_end();
  if (st != MX_OK) {
    runner_free(&run);
    mx_cli_bench_image_free(&img);
    mx_cli_bench_audio_free(&aud);
    mx_model_free(model);
    return mx_cli_fail(cmd, st);
  }
  int64_t chunk = run.b ? mx_batch_chunk(run.b) : mx_session_prefill_chunk(run.s);  // effective
  int32_t vocab = run.vocab;
  int64_t par = run.n;  // sequences per rep
  int32_t *ids = malloc((size_t)b->prompt * sizeof *ids);
  double *pre = calloc((size_t)b->reps, sizeof(double));
  double *dec = calloc((size_t)b->reps, sizeof(double));
  double tower[MAX_REPS], ttft[MAX_REPS], mel[MAX_REPS];  // --image, --audio
  if (!ids || !pre || !dec) {
    fprintf(stderr, "mlxcel bench: out of memory\n");
    free(ids), free(pre), free(dec);
    runner_free(&run);
    mx_cli_bench_image_free(&img);
    mx_cli_bench_audio_free(&aud);
    mx_model_free(model);
    return MX_EXIT_FAILED;
  }
  // Machine samples: [0] before the first rep, [r + 1] right after rep r (--reps <= MAX_REPS).
  double bws[MAX_REPS + 1], pks[MAX_REPS + 1];
  for (int64_t r = 0; r <= b->reps; r++) bws[r] = m.bandwidth_best_gbs, pks[r] = m.peak_best_gflops;
  uint64_t x = 12345;
  for (int64_t i = 0; i < b->prompt; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    ids[i] = (int32_t)((x >> 33) % (uint64_t)vocab);
  }
  if (!b->json) {
    fprintf(stderr,
            "mlxcel bench: %s, backend %s, %lld threads, prompt %lld, gen %lld, %lld reps, "
            "%lld sequence%s\n",
            b->dir, runner_backend(&run), (long long)threads, (long long)n_prompt,
            (long long)b->gen, (long long)b->reps, (long long)par, par == 1 ? "" : "s");
  }
  // The xla backend compiles each entry on its first call: its warmup runs the whole prompt,
  // so that every prefill piece the reps use is compiled (or loaded from the compile cache)
  // before the clock starts, and that time is reported on its own.
  bool xla = strcmp(runner_backend(&run), "xla") == 0;
  mx_bench_image_rep_t ir;
  int image_rc = MX_EXIT_OK;
  mx_bench_audio_rep_t ar;
  if (b->image && !b->no_warmup) {  // untimed: builds the media entries, faults in the tower
    image_rc = mx_cli_bench_image_rep(cmd, model, run.s, &img, 1, &ir);
  } else if (b->audio && !b->no_warmup) {
    image_rc = mx_cli_bench_audio_rep(cmd, model, run.s, &aud, 1, &ar);
  } else if (!b->no_warmup) {  // untimed: faults in mmapped weights, warms caches and the pool
    int32_t n_warm = xla ? (int32_t)b->prompt : b->prompt < 2 ? (int32_t)b->prompt : 2;
    double t0 = mx_cli_now();
    st = runner_prefill(&run, ids, n_warm);
    if (st == MX_OK) st = runner_decode(&run);
    mx_xla_stats_t xs;
    if (st == MX_OK && xla && run.s && mx_xla_session_stats(run.s, &xs) && !b->json)
      printf(
          "xla compile: %d entries compiled, %d loaded from the cache, %.2f s (warmup %.2f "
          "s)\n",
          xs.compiled, xs.cache_loaded, xs.compile_seconds, mx_cli_now() - t0);
  }
  double rss = 0;
  int n_samples = b->machine_file ? 0 : 1;
  for (int64_t r = 0; r < b->reps && st == MX_OK && image_rc == MX_EXIT_OK; r++) {
    if (b->image) {
      image_rc = mx_cli_bench_image_rep(cmd, model, run.s, &img, b->gen, &ir);
      if (image_rc != MX_EXIT_OK) break;
      n_prompt = ir.prompt_tokens;
      tower[r] = ir.tower_s;
      ttft[r] = ir.ttft_s;
      pre[r] = (double)ir.prompt_tokens / ir.prefill_s;
      dec[r] = ir.decode_tok_s;
    } else if (b->audio) {
      image_rc = mx_cli_bench_audio_rep(cmd, model, run.s, &aud, b->gen, &ar);
      if (image_rc != MX_EXIT_OK) break;
      mel[r] = ar.mel_s;
      tower[r] = ar.tower_s;
      ttft[r] = ar.ttft_s;
      pre[r] = (double)aud.n / ar.prefill_s;
      dec[r] = ar.decode_tok_s;
    } else {
      runner_reset(&run);
      double t0 = mx_cli_now();
      st = runner_prefill(&run, ids, (int32_t)b->prompt);
      double t1 = mx_cli_now();
      for (int64_t g = 0; g < b->gen && st == MX_OK; g++) st = runner_decode(&run);
      double t2 = mx_cli_now();
      pre[r] = (double)(par * b->prompt) / (t1 - t0);
      dec[r] = (double)(par * b->gen) / (t2 - t1);
    }
    if (!b->machine_file && st == MX_OK) {
      // Another machine sample after every rep: the limit is the best of all of them, so one
      // disturbed stretch of the run cannot lower it. The sample's buffer is not the model's
      // memory: the RSS peak is read before it and reset after it.
      double hwm = peak_rss_mib();
      rss = hwm > rss ? hwm : rss;
      bench_args_t mb = *b;
      mb.threads = threads;
      mb.reps = 1;
      mb.has_reps = true;
      mx_machine_info_t ms;
      st = measure_machine(&mb, &ms);
      if (st != MX_OK) break;
      bws[r + 1] = ms.bandwidth_best_gbs;
      pks[r + 1] = ms.peak_best_gflops;
      n_samples++;
      reset_peak_rss();
    }
  }
  int rc = MX_EXIT_OK;
  if (image_rc != MX_EXIT_OK) {
    rc = image_rc;  // printed
  } else if (st != MX_OK) {
    rc = mx_cli_fail(cmd, st);
  } else {
    double hwm = peak_rss_mib();
    rss = hwm > rss ? hwm : rss;
    model_cost_t mc;
    double wsize = (double)mx_elem_size(model->precision);
    model_cost(c, n_prompt, b->gen, chunk, wsize, (double)mx_elem_size(model->kv_dtype), &mc);
    // The matmul weights as they are resident (quantized layers: packed values + scales).
    double mm_bytes = 0;
    int32_t n_quant = 0;
    st = mx_model_matmul_bytes(model, (int)wsize, &mm_bytes, NULL, &n_quant);
    if (st == MX_OK) mc.weight_bytes += mm_bytes - wsize * mc.matmul_params;
    // Experts as held (quantized: packed values + scales), top_k of num_experts per layer.
    double ex_bytes = 0;
    int32_t ex_quant = 0;
    if (st == MX_OK && c->num_experts > 0 &&
        (st = mx_model_expert_bytes(model, (int)wsize, &ex_bytes, &ex_quant)) == MX_OK) {
      double experts = 0, lin, router;
      mlp_params(c, &lin, &experts, &router);
      mc.weight_bytes += ex_bytes * c->num_experts_per_tok / c->num_experts - wsize * experts;
      n_quant += ex_quant;
    }
    double dec_bytes = mc.weight_bytes + mc.kv_bytes_per_token;
    // Each rep is held against the machine as it was around it: memory bandwidth drifts by 2x
    // over minutes on a shared host, so one limit for the whole run would credit or blame a
    // rep for the drift. A rep's limit uses the better of the samples right before and right
    // after it (interference only ever slows a measurement down, so the better one is the
    // closer to the hardware); the reported figures are medians over the reps.
    double dec_lim[MAX_REPS], pre_lim[MAX_REPS], dec_pcts[MAX_REPS], pre_pcts[MAX_REPS];
    double bw_used[MAX_REPS], pk_used[MAX_REPS];
    int nr = (int)b->reps;
    for (int r = 0; r < nr; r++) {
      double bw_r = bws[r] > bws[r + 1] ? bws[r] : bws[r + 1];
      double pk_r = pks[r] > pks[r + 1] ? pks[r] : pks[r + 1];
      // N sequences share one weight stream; each reads its own KV. Batched decode can become
      // compute-bound: 2 FLOPs per matmul parameter plus attention per decoded token.
      double dl =
          (double)par * bw_r * 1e9 / (mc.weight_bytes + (double)par * mc.kv_bytes_per_token);
      if (par > 1 && pk_r * 1e9 / mc.decode_flops_per_token < dl)
        dl = pk_r * 1e9 / mc.decode_flops_per_token;
      dec_lim[r] = dl;
      pre_lim[r] = pk_r * 1e9 / mc.flops_per_token;
      dec_pcts[r] = 100.0 * dec[r] / dl;
      pre_pcts[r] = 100.0 * pre[r] / pre_lim[r];
      bw_used[r] = bw_r;
      pk_used[r] = pk_r;
    }
    double pre_med = median(pre, nr), dec_med = median(dec, nr);
    double dec_limit = median(dec_lim, nr), pre_limit = median(pre_lim, nr);
    double dec_pct = median(dec_pcts, nr), pre_pct = median(pre_pcts, nr);
    double bw = median(bw_used, nr), peak = median(pk_used, nr);
    char date[32];
    utc_now(date, sizeof date);
    const char *backend = runner_backend(&run);
    double tower_ms = media ? 1e3 * median(tower, nr) : 0;
    double ttft_ms = media ? 1e3 * median(ttft, nr) : 0;
    double mel_ms = b->audio ? 1e3 * median(mel, nr) : 0;
    if (b->json) {
      mx_strbuf_t sb;
      mx_strbuf_init(&sb);
      mx_strbuf_puts(&sb, "{\"model\": ");
      mx_cli_json_string(&sb, b->dir);
      mx_strbuf_printf(
          &sb,
          ", \"model_type\": \"%s\", \"hidden_size\": %d, \"intermediate_size\": %d, "
          "\"num_layers\": %d, \"num_heads\": %d, \"num_kv_heads\": %d, \"head_dim\": %d, "
          "\"vocab_size\": %d, \"tied\": %s, \"dtype\": \"%s\", \"params\": %.0f, "
          "\"matmul_params\": %.0f, \"backend\": \"%s\", \"threads\": %lld, "
          "\"precision\": \"%s\", \"kv_dtype\": \"%s\", \"quant\": \"%s\", "
          "\"quant_group_size\": %d, \"quant_bits\": %d, \"quantized_matrices\": %d, "
          "\"prompt_tokens\": %lld, "
          "\"gen_tokens\": %lld, \"reps\": %lld, \"ctx\": %lld, \"prefill_chunk\": %lld, "
          "\"parallel\": %lld, \"engine\": \"%s\", "
          "\"prefill_tok_s\": %.4f, \"decode_tok_s\": %.4f, \"weight_bytes\": %.0f, "
          "\"kv_bytes_per_token\": %.0f, \"decode_bytes_per_token\": %.0f, "
          "\"flops_per_token\": %.0f, \"bandwidth_gbs\": %.3f, \"peak_gflops\": %.3f, "
          "\"bandwidth_median_gbs\": %.3f, \"peak_median_gflops\": %.3f, "
          "\"machine_source\": \"%s\", \"machine_samples\": %d, \"decode_limit_tok_s\": %.4f, "
          "\"prefill_limit_tok_s\": %.4f, \"decode_pct_of_limit\": %.4f, "
          "\"prefill_pct_of_limit\": %.4f, \"pct_of_limit\": {\"prefill\": %.4f, "
          "\"decode\": %.4f}, \"peak_rss_mib\": %.1f, \"date\": \"%s\"}",
          c->model_type, c->hidden_size, c->intermediate_size, c->num_layers, c->num_heads,
          c->num_kv_heads, c->head_dim, c->vocab_size, c->tie_word_embeddings ? "true" : "false",
          dtype_name(c->dtype), mc.params, mc.matmul_params, backend, (long long)threads,
          dtype_name(model->precision), dtype_name(model->kv_dtype), mx_model_quant_name(model),
          model->quant_group_size, model->quant_bits, n_quant, (long long)n_prompt,
          (long long)b->gen, (long long)b->reps, (long long)ctx, (long long)chunk, (long long)par,
          run.b ? "batch" : "session", pre_med, dec_med, mc.weight_bytes, mc.kv_bytes_per_token,
          dec_bytes, mc.flops_per_token, bw, peak, m.bandwidth_gbs, m.peak_gflops, machine_source,
          n_samples, dec_limit, pre_limit, dec_pct, pre_pct, pre_pct, dec_pct, rss, date);
      if (b->image && sb.len > 0) {  // the image's figures before the closing brace
        sb.data[--sb.len] = '\0';
        mx_strbuf_puts(&sb, ", \"image\": ");
        mx_cli_json_string(&sb, b->image);
        mx_strbuf_printf(&sb,
                         ", \"image_width\": %d, \"image_height\": %d, \"image_grid\": [%d, %d], "
                         "\"image_tokens\": %d, \"tower_ms\": %.3f, \"ttft_ms\": %.3f, "
                         "\"image_crops\": %d}",
                         img.width, img.height, img.grid[0], img.grid[1], img.image_tokens,
                         tower_ms, ttft_ms, img.crops);
      }
      if (b->audio && sb.len > 0) {  // the recording's figures before the closing brace
        sb.data[--sb.len] = '\0';
        mx_strbuf_puts(&sb, ", \"audio\": ");
        mx_cli_json_string(&sb, b->audio);
        mx_strbuf_printf(&sb,
                         ", \"audio_seconds\": %.3f, \"audio_frames\": %lld, \"audio_tokens\": "
                         "%d, \"mel_ms\": %.3f, \"tower_ms\": %.3f, \"ttft_ms\": %.3f}",
                         aud.seconds, (long long)aud.frames, aud.audio_tokens, mel_ms, tower_ms,
                         ttft_ms);
      }
      printf("%s\n", sb.data ? sb.data : "{}");
      mx_strbuf_free(&sb);
    } else {
      printf(
          "machine (%s, %d threads): bandwidth %.2f GB/s, peak %.1f GFLOP/s (around each rep; "
          "first measurement's medians %.2f, %.1f)\n",
          machine_source, m.threads, bw, peak, m.bandwidth_gbs, m.peak_gflops);
      printf(
          "model: %s, %.1fM %sparams, %s, precision %s, KV %s, quant %s, backend %s, %lld "
          "threads%s\n",
          c->model_type, mc.params / 1e6, c->num_experts ? "active " : "", dtype_name(c->dtype),
          dtype_name(model->precision), dtype_name(model->kv_dtype), mx_model_quant_name(model),
          backend, (long long)threads, run.b ? ", batch engine" : "");
      if (par > 1)
        printf("parallel %lld sequences: tok/s below are aggregates (per sequence: decode %.3f)\n",
               (long long)par, dec_med / (double)par);
      if (b->image) {
        char kind[64] = "";
        if (img.crops)
          snprintf(kind, sizeof kind, ", %d crops with the global view", img.crops);
        else if (img.grid[0])
          snprintf(kind, sizeof kind, ", Qwen patch grid");
        printf(
            "image %dx%d (%d tokens%s): vision tower %.1f ms/image, time to first token %.1f "
            "ms\n",
            img.width, img.height, img.image_tokens, kind, tower_ms, ttft_ms);
      }
      if (b->audio)
        printf(
            "audio %.2f s (%lld log-mel frames, %d tokens): mel features %.1f ms, audio tower "
            "%.1f ms/clip, time to first token %.1f ms\n",
            aud.seconds, (long long)aud.frames, aud.audio_tokens, mel_ms, tower_ms, ttft_ms);
      printf(
          "prefill %5lld tokens: %10.3f tok/s   limit %10.1f tok/s (%.2f GFLOP/token)  %6.2f%% "
          "of limit\n",
          (long long)n_prompt, pre_med, pre_limit, mc.flops_per_token / 1e9, pre_pct);
      printf(
          "decode  %5lld tokens: %10.3f tok/s   limit %10.1f tok/s (%.1f MB/token)     %6.2f%% "
          "of limit\n",
          (long long)b->gen, dec_med, dec_limit, dec_bytes / 1e6, dec_pct);
      printf("peak RSS %.1f MiB; medians of %lld reps\n", rss, (long long)b->reps);
    }
  }
  free(ids), free(pre), free(dec);
  runner_free(&run);
  mx_cli_bench_image_free(&img);
  mx_cli_bench_audio_free(&aud);
  mx_model_free(model);
  return rc;
}

int mx_cli_cmd_bench(int argc, char **argv) {
  bench_args_t b;
  memset(&b, 0, sizeof b);
  b.prompt = 128;
  b.gen = 32;
  b.reps = 3;
  bool help = false;
  int rc = parse_args(argc, argv, &b, &help);
  if (help) {
    bench_usage(stdout);
    return MX_EXIT_OK;
  }
  if (rc != MX_EXIT_OK) return rc;
  return b.machine ? run_machine(&b) : run_model(&b);
}
