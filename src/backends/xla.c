// The "xla" backend: runs the model's graphs through a PJRT plugin loaded at run time (pjrt.h):
// XLA's CPU client, jax's CUDA or ROCm plugins, any vendor's. The shared graph runner
// (src/session/graph_runner.h) owns the bindings and the prefill loop; this file says how a
// bound graph is compiled and run on the device, and keeps the device state (ADR 0008):
//
// - Weights: uploaded once, when the first binding that reads them is prepared, as device
//   buffers shared by every entry; the checkpoint pages they came from are then released from
//   memory (mx_checkpoint_release), so no second host copy stays resident.
// - KV caches: device buffers owned here (mx_graph_exec_t.device_caches). Every cache result
//   aliases its argument (tf.aliasing_output), so XLA donates the argument and writes the new
//   rows in place: after a call the result buffers replace the argument handles. Per step only
//   the token ids and pos0 go to the device and only the logits come back (mx_xla_stats_t
//   counts the bytes; test_backend_xla checks them).
// - Attention: XLA's is the decomposition, which reads every cache row the graph gives it; the
//   runner therefore runs windowed entries (ADR 0015) so that a step at position p costs what
//   p costs, not what the capacity costs.
// - Executables: one per entry (@decode, each @prefill T the runner makes), compiled on its
//   first run, not at creation: XLA takes seconds per entry, and most prompts use a few of the
//   prefill sizes. With a cache directory, each compiled entry is serialized there keyed by the
//   printed graph and the plugin's version, and a later process loads it instead of compiling.
//
// - Media (ADR 0010, 0013, 0022, 0023): the towers (@vision of every family, @audio) and
//   @prefill_media are bound by the runner like the text entries; their host inputs (pixels or
//   media rows, M-RoPE positions, DeepStack rows, pooling indices, the frame mask) go to the
//   device on every run like the token ids, and a tower's features come back instead of logits.
//
// The first run of an entry therefore allocates and compiles; every later run allocates only
// what the plugin allocates for its argument and result handles.

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/pjrt.h"
#include "mlxcel/batch.h"
#include "session/graph_runner.h"
#include "session/session_internal.h"

// Prefill calls cost what their tokens cost on XLA too, but each chunk size is one more
// compiled entry: 128 keeps the set (T = 2 .. 128, compiled as used) small.
enum { DEFAULT_CHUNK = 128 };
// The smallest attention window (ADR 0015): below it a window saves too little to be worth one
// more compiled entry.
enum { DEFAULT_ATTN_WINDOW = 256 };

typedef struct xla_weight {
  const void *host;  // the checkpoint tensor's data: the key
  mx_pjrt_buf_t *buf;
} xla_weight_t;

// The executor's form of one binding (b->plan).
typedef struct xla_plan {
  mx_pjrt_exec_t *x;     // compiled on the first run
  mx_pjrt_buf_t **argv;  // [b->n_args]: weights set at prepare, the caches and inputs per run
  int32_t n_inputs;
  int32_t *inputs;       // [n_inputs] the arguments uploaded from the host on every run
  mx_pjrt_buf_t **outv;  // [b->f->n_results]
} xla_plan_t;

typedef struct xla_exec {
  mx_pjrt_t *pj;  // owned
  const mx_model_t *model;
  char *cache_dir;      // owned copy, or NULL
  char plugin_id[256];  // the plugin file's size and time, part of the cache key
  int64_t attn_window;  // the runner's smallest attention window; 0: none
  int32_t n_w, cap_w;
  xla_weight_t *w;  // the device copies of the weights, owned
  int32_t n_caches;
  mx_type_t *cache_types;  // [n_caches]
  mx_pjrt_buf_t **caches;  // [n_caches] the KV caches the next call runs on (a batch points
                           // this at its current slot's); owned unless a batch holds them
  bool lost;               // a failed call may have consumed the caches
  mx_xla_stats_t stats;
} xla_exec_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ============================================================================================
// Device state: caches and weights
// ============================================================================================

// One set of n zeroed caches on the device into out[n] (handles owned by the caller).
static mx_status_t zero_caches(xla_exec_t *c, mx_pjrt_buf_t **out) {
  size_t most = 0;
  for (int32_t j = 0; j < c->n_caches; j++) {
    size_t nb = mx_type_nbytes(&c->cache_types[j]);
    if (nb > most) most = nb;
  }
  // Zeros come from one host buffer (calloc maps zero pages lazily) that goes right after.
  void *zeros = calloc(most ? most : 1, 1);
  if (!zeros) return mx_error_set(MX_ERR_NOMEM, "out of memory (KV cache of %zu bytes)", most);
  mx_status_t st = MX_OK;
  for (int32_t j = 0; j < c->n_caches && !st; j++) {
    st = mx_pjrt_buf_upload(c->pj, &c->cache_types[j], zeros, &out[j]);
    if (st) st = mx_error_prefix(st, "KV cache %d of %d on the device", j, c->n_caches);
  }
  free(zeros);
  return st;
}

static mx_status_t xla_device_caches(void *impl, const mx_type_t *types, int32_t n) {
  xla_exec_t *c = impl;
  size_t nn = (size_t)(n > 0 ? n : 1);
  c->caches = calloc(nn, sizeof *c->caches);
  c->cache_types = malloc(nn * sizeof *c->cache_types);
  if (!c->caches || !c->cache_types) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  memcpy(c->cache_types, types, (size_t)n * sizeof *types);
  c->n_caches = n;
  return zero_caches(c, c->caches);
}

static mx_status_t weight_buffer(xla_exec_t *c, const mx_tensor_t *t, mx_pjrt_buf_t **out) {
  for (int32_t k = 0; k < c->n_w; k++) {
    if (c->w[k].host == t->data) {
      *out = c->w[k].buf;
      return MX_OK;
    }
  }
  if (c->n_w == c->cap_w) {
    int32_t cap = c->cap_w ? 2 * c->cap_w : 64;
    xla_weight_t *w = realloc(c->w, (size_t)cap * sizeof *w);
    if (!w) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    c->w = w;
    c->cap_w = cap;
  }
  mx_pjrt_buf_t *buf = NULL;
  mx_status_t st = mx_pjrt_buf_upload(c->pj, &t->type, t->data, &buf);
  if (st) return st;
  c->w[c->n_w++] = (xla_weight_t){.host = t->data, .buf = buf};
  c->stats.weight_bytes += t->nbytes;
  // The device holds the weight now: its checkpoint pages leave this process's memory.
  mx_checkpoint_release(c->model->ckpt, t->data, t->nbytes);
  *out = buf;
  return MX_OK;
}

// ============================================================================================
// Compilation, with the disk cache
// ============================================================================================

static uint64_t fnv1a(const char *s, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) {
    h ^= (uint8_t)s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// The cache file of a printed entry, and the header line that must open it: the graph's two
// hashes and length, the plugin's interface and platform versions and its file identity. A file
// whose header differs (another plugin, a hash collision of the name) is not used.
static void cache_key(const xla_exec_t *c, const mx_strbuf_t *text, mx_strbuf_t *path,
                      mx_strbuf_t *head) {
  uint64_t h1 = fnv1a(text->data, text->len, 0xcbf29ce484222325ull);
  uint64_t h2 = fnv1a(text->data, text->len, 0x84222325cbf29ce4ull);
  int major = 0, minor = 0;
  mx_pjrt_api_version(c->pj, &major, &minor);
  mx_strbuf_printf(head,
                   "mlxcel-pjrt-cache 1 graph %016llx%016llx %zu api %d.%d platform %s %s %s\n",
                   (unsigned long long)h1, (unsigned long long)h2, text->len, major, minor,
                   mx_pjrt_platform(c->pj), mx_pjrt_platform_version(c->pj), c->plugin_id);
  uint64_t hk = fnv1a(head->data, head->len, 0xcbf29ce484222325ull);
  mx_strbuf_printf(path, "%s/%016llx.pjrt", c->cache_dir, (unsigned long long)hk);
}

// The line after the header: the payload's length and hash, so that a damaged file never
// reaches the plugin's loader.
static void payload_line(const char *bytes, size_t n, char *line, size_t cap) {
  snprintf(line, cap, "payload %zu %016llx\n", n,
           (unsigned long long)fnv1a(bytes, n, 0xcbf29ce484222325ull));
}

// Loads the entry from its cache file; false when there is none or it does not load (the
// caller compiles instead).
static bool cache_load(xla_exec_t *c, const char *path, const mx_strbuf_t *head,
                       mx_pjrt_exec_t **out) {
  char *buf = NULL;
  size_t size = 0;
  if (mx_read_file(path, &buf, &size) != MX_OK) return false;  // none yet
  bool ok = false;
  if (size > head->len && memcmp(buf, head->data, head->len) == 0) {
    const char *line = buf + head->len, *nl = memchr(line, '\n', size - head->len);
    if (nl) {
      const char *bytes = nl + 1;
      size_t n = size - (size_t)(bytes - buf);
      char want[64];
      payload_line(bytes, n, want, sizeof want);
      ok = strlen(want) == (size_t)(nl + 1 - line) && memcmp(want, line, strlen(want)) == 0 &&
           mx_pjrt_exec_load(c->pj, bytes, n, out) == MX_OK;
    }
  }
  free(buf);
  // A damaged or foreign file costs a compile, nothing else; said once per state on stderr.
  if (!ok && c->stats.cache_failed++ == 0)
    fprintf(stderr, "mlxcel: warning: XLA compile cache file '%s' does not load; compiling\n",
            path);
  return ok;
}

// Writes the compiled entry under a temporary name and renames it into place, so a reader never
// sees half a file. A cache that cannot be written costs the next process a compile, nothing
// else: it is counted and reported once on stderr, not an error of the run.
static void cache_store(xla_exec_t *c, const mx_pjrt_exec_t *x, const char *path,
                        const mx_strbuf_t *head) {
  char *bytes = NULL;
  size_t n = 0;
  mx_status_t st = mx_pjrt_exec_serialize(x, &bytes, &n);
  mx_strbuf_t tmp;
  mx_strbuf_init(&tmp);
  mx_strbuf_printf(&tmp, "%s.%ld.tmp", path, (long)getpid());
  bool ok = false;
  if (!st && !tmp.oom) {
    FILE *f = fopen(tmp.data, "wb");
    if (f) {
      char line[64];
      payload_line(bytes, n, line, sizeof line);
      ok = fwrite(head->data, 1, head->len, f) == head->len &&
           fwrite(line, 1, strlen(line), f) == strlen(line) && fwrite(bytes, 1, n, f) == n;
      if (fclose(f) != 0) ok = false;
      if (ok) ok = rename(tmp.data, path) == 0;
      if (!ok) remove(tmp.data);
    }
  }
  if (!ok) {
    if (c->stats.cache_failed++ == 0)  // said once per state
      fprintf(stderr, "mlxcel: warning: cannot write the XLA compile cache '%s': %s\n", path,
              st ? mx_error_message() : strerror(errno));
  }
  free(bytes);
  mx_strbuf_free(&tmp);
}

static mx_status_t compile_entry(xla_exec_t *c, const mx_graph_binding_t *b, mx_pjrt_exec_t **out) {
  double t0 = now_s();
  mx_strbuf_t text, path, head;
  mx_strbuf_init(&text);
  mx_strbuf_init(&path);
  mx_strbuf_init(&head);
  mx_status_t st = mx_hlo_print_entry(b->mod, b->f->name, "main", false, NULL, &text);
  if (!st && c->cache_dir) {
    cache_key(c, &text, &path, &head);
    if (path.oom || head.oom) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  bool loaded = !st && c->cache_dir && cache_load(c, path.data, &head, out);
  if (loaded) {
    c->stats.cache_loaded++;
  } else if (!st) {
    st = mx_pjrt_compile(c->pj, text.data, text.len, out);
    if (!st) {
      c->stats.compiled++;
      if (c->cache_dir) cache_store(c, *out, path.data, &head);
    }
  }
  if (st) st = mx_error_prefix(st, "compiling @%s (T = %d) with XLA", b->f->name, b->T);
  c->stats.compile_seconds += now_s() - t0;
  mx_strbuf_free(&text);
  mx_strbuf_free(&path);
  mx_strbuf_free(&head);
  return st;
}

// ============================================================================================
// The executor
// ============================================================================================

static bool is_cache_arg(const mx_graph_binding_t *b, int32_t i) {
  for (int32_t j = 0; j < b->n_caches; j++)
    if (b->cache_arg[j] == i) return true;
  return false;
}

// The arguments a run writes on the host (the binding's own tensors, filled by the runner before
// each call): token ids, pos0 and the RoPE offsets of the text entries, and the media entries'
// pixels or media rows, M-RoPE positions, DeepStack rows, pooling indices and frame mask. They
// go to the device on every run; every other argument but the caches is a weight.
static bool is_host_input(const mx_graph_binding_t *b, int32_t i) {
  return i == b->tokens_arg || i == b->pos0_arg || i == b->rope_offset_arg || i == b->input_arg ||
         i == b->positions_arg || i == b->deepstack_arg || i == b->pooling_arg ||
         i == b->audio_mask_arg;
}

// The towers (@vision, @audio) bring their features back to the host, every other entry its
// logits.
static bool is_tower(const mx_graph_binding_t *b) {
  return b->entry == MX_ENTRY_VISION || b->entry == MX_ENTRY_AUDIO;
}

static void xla_release(void *impl, mx_graph_binding_t *b) {
  (void)impl;
  xla_plan_t *p = b->plan;
  if (!p) return;
  mx_pjrt_exec_free(p->x);
  free(p->argv);
  free(p->inputs);
  free(p->outv);
  free(p);
  b->plan = NULL;
}

static mx_status_t xla_prepare(void *impl, mx_graph_binding_t *b) {
  xla_exec_t *c = impl;
  xla_plan_t *p = calloc(1, sizeof *p);
  if (!p) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  b->plan = p;
  size_t na = (size_t)(b->n_args > 0 ? b->n_args : 1);
  p->argv = calloc(na, sizeof *p->argv);
  p->inputs = calloc(na, sizeof *p->inputs);
  p->outv = calloc((size_t)(b->f->n_results > 0 ? b->f->n_results : 1), sizeof *p->outv);
  if (!p->argv || !p->inputs || !p->outv) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < b->n_args; i++) {
    if (is_host_input(b, i)) {
      p->inputs[p->n_inputs++] = i;
      continue;
    }
    if (is_cache_arg(b, i)) continue;
    mx_status_t st = weight_buffer(c, &b->args[i], &p->argv[i]);
    if (st) return mx_error_prefix(st, "@%s argument %d (weight) to the device", b->f->name, i);
  }
  return MX_OK;
}

static mx_status_t xla_run(void *impl, mx_graph_binding_t *b) {
  xla_exec_t *c = impl;
  xla_plan_t *p = b->plan;
  if (c->lost)
    return mx_error_set(MX_ERR_RUNTIME,
                        "xla: an earlier device call failed and the KV caches are lost; create "
                        "a new session");
  mx_status_t st = MX_OK;
  if (!p->x) {
    st = compile_entry(c, b, &p->x);
    if (!st && mx_pjrt_exec_outputs(p->x) != b->f->n_results)
      st = mx_error_set(MX_ERR_RUNTIME, "xla: @%s compiled to %d outputs, the graph has %d",
                        b->f->name, mx_pjrt_exec_outputs(p->x), b->f->n_results);
    if (st) {
      mx_pjrt_exec_free(p->x);
      p->x = NULL;
      return st;
    }
  }
  for (int32_t k = 0; k < p->n_inputs && !st; k++) {
    const mx_tensor_t *t = &b->args[p->inputs[k]];
    st = mx_pjrt_buf_upload(c->pj, &t->type, t->data, &p->argv[p->inputs[k]]);
  }
  // c->caches holds the binding's caches: a session's or slot's 2L, or a batch call's B * 2L.
  for (int32_t j = 0; j < b->n_caches; j++) p->argv[b->cache_arg[j]] = c->caches[j];
  if (!st) {
    c->stats.calls++;
    st = mx_pjrt_execute(c->pj, p->x, p->argv, b->n_args, p->outv);
    // Whether the plugin consumed the donated caches before failing is not knowable (a tower
    // has none to lose).
    if (st && b->n_caches > 0) c->lost = true;
  }
  for (int32_t k = 0; k < p->n_inputs; k++) {
    mx_pjrt_buf_free(c->pj, p->argv[p->inputs[k]]);
    p->argv[p->inputs[k]] = NULL;
  }
  if (st) return mx_error_prefix(st, "xla: @%s (T = %d)", b->f->name, b->T);
  // The old cache handles were donated: their memory is the new results'.
  for (int32_t j = 0; j < b->n_caches; j++) {
    mx_pjrt_buf_free(c->pj, c->caches[j]);
    c->caches[j] = p->outv[b->cache_res[j]];
    p->argv[b->cache_arg[j]] = NULL;
  }
  int32_t out = is_tower(b) ? 0 : b->logits_res;
  mx_tensor_t *R = &b->res[out];
  st = mx_pjrt_buf_download(c->pj, p->outv[out], R->data, R->nbytes);
  mx_pjrt_buf_free(c->pj, p->outv[out]);
  return st ? mx_error_prefix(st, "xla: %s of @%s", is_tower(b) ? "features" : "logits", b->f->name)
            : MX_OK;
}

static void xla_exec_destroy(void *impl) {
  xla_exec_t *c = impl;
  if (!c) return;
  for (int32_t j = 0; c->caches && j < c->n_caches; j++) mx_pjrt_buf_free(c->pj, c->caches[j]);
  for (int32_t k = 0; k < c->n_w; k++) mx_pjrt_buf_free(c->pj, c->w[k].buf);
  free(c->caches);
  free(c->cache_types);
  free(c->w);
  free(c->cache_dir);
  mx_pjrt_close(c->pj);
  free(c);
}

static int64_t xla_attn_window(void *impl) { return ((const xla_exec_t *)impl)->attn_window; }

static const mx_graph_exec_t g_xla_exec = {
    .prepare = xla_prepare,
    .run = xla_run,
    .release = xla_release,
    .destroy = xla_exec_destroy,
    .device_caches = xla_device_caches,
    .attn_window = xla_attn_window,
};

// ============================================================================================
// The backend
// ============================================================================================

// Whether the plugin's platform is the device kind asked for. Older GPU plugins name their
// platform "gpu" for CUDA and ROCm alike.
static bool device_matches(const char *kind, const char *platform) {
  return strcmp(kind, platform) == 0 ||
         (strcmp(platform, "gpu") == 0 && (strcmp(kind, "cuda") == 0 || strcmp(kind, "rocm") == 0));
}

// mkdir -p: the default cache folder (~/.cache/mlxcel/xla) may not exist yet.
static mx_status_t make_dirs(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
    return mx_error_set(MX_ERR_INVALID_ARG, "cache directory path too long");
  for (char *p = path + 1;; p++) {
    bool end = *p == '\0';
    if (*p == '/' || end) {
      *p = '\0';
      if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return mx_error_set(MX_ERR_IO, "cannot create the XLA compile cache directory '%s': %s",
                            path, strerror(errno));
      if (end) return MX_OK;
      *p = '/';
    }
  }
}

static mx_status_t xla_exec_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                                   xla_exec_t **out) {
  *out = NULL;
  const mx_xla_backend_opts_t *o = &cfg->opts.xla;
  if (!o->plugin || !o->plugin[0])
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "the xla backend needs a PJRT plugin: give its path (mlxcel: "
                        "--pjrt-plugin PATH or MLXCEL_XLA_PJRT_PLUGIN), or a device kind whose "
                        "jax plugin is installed (MLXCEL_XLA_DEVICE=cpu|cuda|rocm)");
  if (!model->ckpt) return mx_error_set(MX_ERR_INVALID_ARG, "model has no checkpoint");
  xla_exec_t *c = calloc(1, sizeof *c);
  if (!c) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  c->model = model;
  c->attn_window = o->attn_window == 0  ? DEFAULT_ATTN_WINDOW
                   : o->attn_window > 0 ? o->attn_window
                                        : 0;
  mx_status_t st = mx_pjrt_open(o->plugin, &c->pj);
  if (!st && cfg->opts.device && !device_matches(cfg->opts.device, mx_pjrt_platform(c->pj)))
    st =
        mx_error_set(MX_ERR_INVALID_ARG, "device '%s' asked, but the PJRT plugin '%s' runs on '%s'",
                     cfg->opts.device, o->plugin, mx_pjrt_platform(c->pj));
  if (!st && o->cache_dir && o->cache_dir[0]) {
    st = make_dirs(o->cache_dir);
    if (!st && !(c->cache_dir = strdup(o->cache_dir)))
      st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    struct stat sb;
    if (!st && stat(o->plugin, &sb) == 0)
      snprintf(c->plugin_id, sizeof c->plugin_id, "file %lld %lld.%09ld", (long long)sb.st_size,
               (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
  }
  if (st) {
    xla_exec_destroy(c);
    return st;
  }
  *out = c;
  return MX_OK;
}

static mx_status_t xla_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                              void **state) {
  *state = NULL;
  xla_exec_t *c = NULL;
  mx_status_t st = xla_exec_create(model, cfg, &c);
  if (st) return st;
  mx_graph_runner_t *r = NULL;
  st = mx_graph_runner_create(model, cfg, &g_xla_exec, c, &r);
  *state = r;
  return st;
}

// ---- Batched operation (serve): n slots on one client, one copy of the weights, one set of
// compiled entries; each slot has its own device caches. A prefill runs the B = 1 graphs on the
// caches of the slot it names. A decode of n > 1 slots is one call (ADR 0016): @decode of B = n
// sequences with one cache argument per sequence, handed the n slots' cache buffers, so the
// weights are read once per step for all of them (one [n_slots, ...] cache sliced per slot, the
// cpu backend's layout, has no PJRT equivalent: a device buffer cannot be bound in parts).
typedef struct xla_batch {
  mx_graph_runner_t *r;  // its executor's caches pointer selects the slot (or a call's slots)
  int32_t n_slots;
  // M-RoPE models (ADR 0013): the multi-sequence decode calls take a RoPE offset per sequence,
  // and a lone slot whose text an image shifted runs the B = 1 one (multi[1]).
  bool rope_offset;
  mx_pjrt_buf_t ***slots;  // [n_slots][n_caches], owned
  // Decode calls of B = 2 .. n_slots sequences (and B = 1 for a lone shifted M-RoPE slot):
  // multi[B][k] for window k of the runner (k = n_win: the whole capacity), made on first use;
  // their pos0 pos[B] (i32 [B], data in pos_data), the gathered caches of the call's slots and
  // the logits [n_slots * V].
  mx_graph_binding_t (*multi)[MX_RUNNER_MAX_BUCKETS + 1];  // [n_slots + 1], owned
  mx_tensor_t *pos;                                        // [n_slots + 1], views of pos_data
  int32_t *pos_data;                                       // [n_slots]
  mx_pjrt_buf_t **gathered;                                // [n_slots * n_caches]
  float *logits;                                           // [n_slots * V]
} xla_batch_t;

static void xla_batch_destroy(void *state) {
  xla_batch_t *b = state;
  if (!b) return;
  if (b->r) {
    xla_exec_t *c = b->r->impl;
    for (int32_t s = 0; b->slots && s < b->n_slots; s++) {
      for (int32_t j = 0; b->slots[s] && j < c->n_caches; j++)
        mx_pjrt_buf_free(c->pj, b->slots[s][j]);
      free(b->slots[s]);
    }
    c->caches = NULL;  // slot 0's array, freed above
    for (int32_t B = 0; b->multi && B <= b->n_slots; B++)
      for (int32_t k = 0; k <= MX_RUNNER_MAX_BUCKETS; k++)
        if (b->multi[B][k].f) mx_graph_runner_release(b->r, &b->multi[B][k]);
    mx_graph_runner_destroy(b->r);
  }
  free(b->multi);
  free(b->pos);
  free(b->pos_data);
  free(b->gathered);
  free(b->logits);
  free(b->slots);
  free(b);
}

static mx_status_t xla_batch_create(const mx_model_t *model, const mx_backend_config_t *cfg,
                                    int32_t n_slots, void **state) {
  *state = NULL;
  xla_batch_t *b = calloc(1, sizeof *b);
  if (!b) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_status_t st = xla_create(model, cfg, (void **)&b->r);
  b->slots = calloc((size_t)n_slots, sizeof *b->slots);
  if (!st && !b->slots) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  if (!st) {
    b->n_slots = n_slots;
    const int32_t *sec = model->config.mrope_section;
    b->rope_offset = sec[0] + sec[1] + sec[2] > 0;
    xla_exec_t *c = b->r->impl;
    size_t ns = (size_t)n_slots;
    b->multi = calloc(ns + 1, sizeof *b->multi);
    b->pos = calloc(ns + 1, sizeof *b->pos);
    b->pos_data = calloc(ns, sizeof *b->pos_data);
    b->gathered = calloc(ns * (size_t)(c->n_caches > 0 ? c->n_caches : 1), sizeof *b->gathered);
    b->logits = malloc(ns * (size_t)b->r->V * sizeof *b->logits);
    if (!b->multi || !b->pos || !b->pos_data || !b->gathered || !b->logits)
      st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    for (int32_t B = 1; !st && B <= n_slots; B++) {
      const int64_t d[1] = {B};
      b->pos[B].type = mx_type_tensor(MX_ELEM_I32, 1, d);
      b->pos[B].data = (uint8_t *)b->pos_data;
      b->pos[B].nbytes = (size_t)B * sizeof(int32_t);
    }
    b->slots[0] = c->caches;  // the runner's caches are slot 0's
    for (int32_t s = 1; s < n_slots && !st; s++) {
      b->slots[s] = calloc((size_t)(c->n_caches > 0 ? c->n_caches : 1), sizeof **b->slots);
      st = b->slots[s] ? zero_caches(c, b->slots[s]) : mx_error_set(MX_ERR_NOMEM, "out of memory");
      if (st) st = mx_error_prefix(st, "batch slot %d", s);
    }
  } else if (b->r) {
    mx_graph_runner_destroy(b->r);
    b->r = NULL;
  }
  if (st) {
    xla_batch_destroy(b);
    return st;
  }
  *state = b;
  return MX_OK;
}

// Points the runner's executor at the caches of `slot`: the B = 1 graphs then run on them.
static mx_status_t select_slot(xla_batch_t *b, int32_t slot) {
  if (slot < 0 || slot >= b->n_slots)
    return mx_error_set(MX_ERR_INVALID_ARG, "batch prefill: slot %d of %d", slot, b->n_slots);
  ((xla_exec_t *)b->r->impl)->caches = b->slots[slot];
  return MX_OK;
}

static mx_status_t xla_batch_prefill(void *state, int32_t slot, const int32_t *ids, int32_t n,
                                     int64_t pos0, float *last) {
  xla_batch_t *b = state;
  mx_status_t st = select_slot(b, slot);
  return st ? st : mx_graph_runner_prefill(b->r, ids, n, pos0, last, NULL);
}

// Every position's logits: the runner's all-logits set on the slot's caches.
static mx_status_t xla_batch_prefill_all(void *state, int32_t slot, const int32_t *ids, int32_t n,
                                         int64_t pos0, float *last, float *all) {
  xla_batch_t *b = state;
  mx_status_t st = select_slot(b, slot);
  return st ? st : mx_graph_runner_prefill(b->r, ids, n, pos0, last, all);
}

// The media entries (ADR 0010): the towers touch no slot (no caches), so they run on the
// runner's bindings as a session's do; the @prefill_media pieces run on the slot's caches.
static mx_status_t xla_batch_vision(void *state, const float *pixels, float *features) {
  return mx_graph_runner_vision(((xla_batch_t *)state)->r, pixels, features);
}

static mx_status_t xla_batch_vision_grid(void *state, const float *pixels, int32_t grid_h,
                                         int32_t grid_w, float *features) {
  return mx_graph_runner_vision_grid(((xla_batch_t *)state)->r, pixels, grid_h, grid_w, features);
}

static mx_status_t xla_batch_vision_pooled(void *state, const float *pixels, int32_t crops,
                                           const int32_t *pooling, int32_t tokens, int32_t pool,
                                           float *features) {
  return mx_graph_runner_vision_pooled(((xla_batch_t *)state)->r, pixels, crops, pooling, tokens,
                                       pool, features);
}

static mx_status_t xla_batch_audio(void *state, const float *features, const int32_t *mask,
                                   int32_t frames, float *rows) {
  return mx_graph_runner_audio(((xla_batch_t *)state)->r, features, mask, frames, rows);
}

static mx_status_t xla_batch_prefill_mrope(void *state, int32_t slot, const int32_t *ids,
                                           const float *media, const int32_t *positions, int32_t n,
                                           int64_t pos0, float *last) {
  xla_batch_t *b = state;
  mx_status_t st = select_slot(b, slot);
  return st ? st : mx_graph_runner_prefill_mrope(b->r, ids, media, positions, n, pos0, last);
}

static mx_status_t xla_batch_prefill_media(void *state, int32_t slot, const int32_t *ids,
                                           const float *media, int32_t n, int64_t pos0,
                                           float *last) {
  return xla_batch_prefill_mrope(state, slot, ids, media, NULL, n, pos0, last);
}

static mx_status_t xla_batch_decode(void *state, const int32_t *slots, const int32_t *ids,
                                    const int64_t *pos, const int64_t *rope, int32_t n,
                                    float *logits) {
  xla_batch_t *b = state;
  mx_graph_runner_t *r = b->r;
  xla_exec_t *c = r->impl;
  const size_t V = (size_t)r->V, nc = (size_t)c->n_caches;
  int64_t end = 0;
  bool shifted = false;
  for (int32_t i = 0; i < n; i++) {
    if (slots[i] < 0 || slots[i] >= b->n_slots)
      return mx_error_set(MX_ERR_INVALID_ARG, "batch decode: slot %d of %d", slots[i], b->n_slots);
    for (int32_t k = 0; k < i; k++)
      if (slots[k] == slots[i])
        return mx_error_set(MX_ERR_INVALID_ARG, "batch decode: slot %d named twice", slots[i]);
    if (pos[i] + 1 > end) end = pos[i] + 1;
    if (rope && rope[i] != pos[i]) {
      if (!b->rope_offset || rope[i] < 0 || rope[i] > INT32_MAX)
        return mx_error_set(b->rope_offset ? MX_ERR_INVALID_ARG : MX_ERR_UNSUPPORTED,
                            "batch decode: slot %d at RoPE position %lld, cache position %lld (%s)",
                            slots[i], (long long)rope[i], (long long)pos[i],
                            b->rope_offset ? "out of range" : "the model has no M-RoPE");
      shifted = true;
    }
  }
  if (n <= 0 || n > b->n_slots)
    return mx_error_set(MX_ERR_INVALID_ARG, "batch decode: %d slots of %d", n, b->n_slots);
  if (n == 1 && !shifted) {  // the session's own @decode
    c->caches = b->slots[slots[0]];
    return mx_graph_runner_decode(r, ids[0], pos[0], logits);
  }
  // One call: the window of the furthest slot, the n slots' caches in the call's order.
  int32_t k = mx_graph_runner_window(r, end);
  mx_graph_binding_t *mb = &b->multi[n][k];
  mx_status_t st = MX_OK;
  if (!mb->f) {
    st = mx_graph_runner_bind_seqs(r, n, k < r->n_win ? r->attn_window << k : 0, b->rope_offset,
                                   &b->pos[n], b->logits, mb);
    if (st) return mx_error_prefix(st, "batch decode of %d slots", n);
  }
  for (int32_t i = 0; i < n; i++) {
    ((int32_t *)mb->tokens.data)[i] = ids[i];
    b->pos_data[i] = (int32_t)pos[i];
    if (mb->rope_offset_arg >= 0)
      ((int32_t *)mb->rope_offset.data)[i] = rope ? (int32_t)(rope[i] - pos[i]) : 0;
    memcpy(b->gathered + (size_t)i * nc, b->slots[slots[i]], nc * sizeof *b->gathered);
  }
  c->caches = b->gathered;
  st = xla_run(c, mb);
  // The donated handles were replaced by the results (or, after a failure, the state is lost).
  for (int32_t i = 0; i < n; i++)
    memcpy(b->slots[slots[i]], b->gathered + (size_t)i * nc, nc * sizeof *b->gathered);
  if (st) return st;
  memcpy(logits, b->logits, (size_t)n * V * sizeof *logits);
  return MX_OK;
}

// Rows past a slot's length are written before they are read: nothing to clear.
static void xla_batch_reset(void *state, int32_t slot) {
  (void)state;
  (void)slot;
}

static const mx_backend_batch_t g_xla_batch = {
    .create = xla_batch_create,
    .prefill = xla_batch_prefill,
    .decode = xla_batch_decode,
    .reset = xla_batch_reset,
    .destroy = xla_batch_destroy,
    .vision = xla_batch_vision,
    .prefill_media = xla_batch_prefill_media,
    .vision_grid = xla_batch_vision_grid,
    .audio = xla_batch_audio,
    .prefill_mrope = xla_batch_prefill_mrope,
    .vision_pooled = xla_batch_vision_pooled,
    .prefill_all = xla_batch_prefill_all,
};

const mx_backend_t mx_backend_xla = {
    .name = "xla",
    .caps = MX_CAP_PREFILL_ALL_LOGITS | MX_CAP_BATCH,
    .batch = &g_xla_batch,
    .create = xla_create,
    .default_prefill_chunk = DEFAULT_CHUNK,
    MX_GRAPH_RUNNER_SESSION_ENTRIES,
};

bool mx_xla_batch_stats(const mx_batch_t *b, mx_xla_stats_t *out) {
  memset(out, 0, sizeof *out);
  const mx_backend_t *be = NULL;
  const xla_batch_t *xb = mx_batch_backend_state(b, &be);
  if (be != &mx_backend_xla || !xb) return false;
  const xla_exec_t *c = xb->r->impl;
  *out = c->stats;
  mx_pjrt_transfers(c->pj, &out->to_device, &out->to_host);
  return true;
}

bool mx_xla_session_stats(const mx_session_t *s, mx_xla_stats_t *out) {
  memset(out, 0, sizeof *out);
  if (!s || s->backend != &mx_backend_xla || !s->state) return false;
  const mx_graph_runner_t *r = s->state;
  const xla_exec_t *c = r->impl;
  *out = c->stats;
  mx_pjrt_transfers(c->pj, &out->to_device, &out->to_host);
  return true;
}
