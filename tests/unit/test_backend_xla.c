// The xla backend (src/backends/xla.c) on the real XLA CPU plugin of the test environment
// against the cpu backend, on stories260K and every family fixture of $MX_SHARED/fixtures:
// - f32: the cpu backend's 32 greedy ids, and the xla session fed the same ids gives logits
//   within 1e-4 of the cpu's at every step (so its own greedy ids are the same);
// - bf16 (stories260K and llama): logits within the precision gate's bound (a fraction of the
//   largest |logit|, tests/unit/test_precision_gate.c), top-1 the same at >= 90% of the steps;
// - the device state: a decode step moves only its id and pos0 to the device and only the
//   logits back (the KV caches stay there, donated and updated in place), the weights go once;
// - the compile cache: a second session with the same cache directory compiles nothing, loads
//   every entry and gives bit-identical logits;
// - errors: no plugin, a missing file, a library that is not a plugin, an incompatible plugin, a
//   device the plugin does not have.
// Each model compiles @decode and the @prefill pieces of its prompt only (chunk 8).
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "mlxcel/batch.h"
#include "mlxcel/session.h"
#include "mx_pjrt_plugin.h"
#include "session/session_internal.h"
#include "test_graph_runner.h"

enum { N_STEPS = 32, CHUNK = 8 };

static char g_plugin[4096];
// One compile cache for the whole test (but the cache test's own): the sessions of stories260K
// at ctx 64 share their entries, so each is compiled once per run, not once per session.
static char g_cache[] = "/tmp/mx_xla_test_cache_XXXXXX";

static int32_t argmax(const float *v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

// window: the xla backend's smallest attention window (0: its default, which at these
// capacities means none; < 0: none).
static mx_session_t *open_session(const mx_model_t *model, const char *backend, int64_t ctx,
                                  const char *cache_dir, int64_t window) {
  mx_session_opts_t so = {.backend = backend, .ctx = ctx, .prefill_chunk = CHUNK};
  so.backend_opts.xla.plugin = g_plugin;
  so.backend_opts.xla.attn_window = window;
  so.backend_opts.xla.cache_dir = cache_dir ? cache_dir : g_cache;
  mx_session_t *s = NULL;
  mx_status_t st = mx_session_create(model, &so, &s);
  CHECK_MSG(st == MX_OK, "%s session: %s", backend, mx_error_message());
  return st ? NULL : s;
}

// Prompt, then N_STEPS decode steps fed ids[] (NULL: its own greedy ids, written to out_ids).
// rows: (N_STEPS + 1) x V logits (after the prompt, after each step). False after a failure.
static bool run(mx_session_t *s, const int32_t *prompt, int32_t np, const int32_t *ids,
                int32_t *out_ids, float *rows) {
  int32_t V = mx_session_vocab(s);
  mx_status_t st = mx_session_prefill(s, prompt, np, NULL);
  CHECK_OK(st);
  for (int32_t i = 0; st == MX_OK && i <= N_STEPS; i++) {
    memcpy(rows + (size_t)i * (size_t)V, mx_session_logits(s), sizeof(float) * (size_t)V);
    if (out_ids) out_ids[i] = argmax(mx_session_logits(s), V);
    if (i < N_STEPS) st = mx_session_decode(s, ids ? ids[i] : out_ids[i]);
    CHECK_OK(st);
  }
  return st == MX_OK;
}

static mx_model_t *load(const char *dir, mx_elem_type_t prec) {
  mx_model_load_opts_t lo = {.tokenizer_optional = true, .precision = prec};
  mx_model_t *model = NULL;
  mx_status_t st = mx_model_load_ex(dir, &lo, &model);
  CHECK_MSG(st == MX_OK, "%s: %s", dir, mx_error_message());
  return model;
}

// One model at one precision against the cpu backend. window: the xla session's smallest
// attention window (ADR 0015), 0 for none at these capacities.
static void parity(const char *name, const char *dir, const int32_t *prompt, int32_t np,
                   mx_elem_type_t prec, int64_t window) {
  mx_model_t *model = load(dir, prec);
  if (!model) return;
  int32_t V = model->config.vocab_size;
  int64_t ctx = np + N_STEPS + 1 > 64 ? np + N_STEPS + 1 : 64;
  size_t nrow = (size_t)(N_STEPS + 1) * (size_t)V;
  float *rc = malloc(nrow * sizeof(float)), *rx = malloc(nrow * sizeof(float));
  int32_t ids_c[N_STEPS + 1], ids_x[N_STEPS + 1];
  mx_session_t *sc = open_session(model, "cpu", ctx, NULL, 0);
  mx_session_t *sx = open_session(model, "xla", ctx, NULL, window);
  double t0 = now_s();
  bool ok =
      sc && sx && run(sc, prompt, np, NULL, ids_c, rc) && run(sx, prompt, np, ids_c, ids_x, rx);
  double dt = now_s() - t0;
  if (ok) {
    double maxd = 0, maxl = 0;
    int32_t same = 0;
    for (size_t k = 0; k < nrow; k++) {
      maxd = fmax(maxd, fabs((double)rc[k] - (double)rx[k]));
      maxl = fmax(maxl, fabs((double)rc[k]));
    }
    for (int32_t i = 0; i <= N_STEPS; i++) same += ids_c[i] == ids_x[i];
    mx_xla_stats_t xs;
    mx_xla_session_stats(sx, &xs);
    printf(
        "%-12s %-4s window %-3lld greedy %d/%d, max |dlogit| %.3g (max |logit| %.3g); %d "
        "entries compiled in %.2f s, %.2f s in all\n",
        name, mx_elem_name(prec), (long long)window, same, N_STEPS + 1, maxd, maxl, xs.compiled,
        xs.compile_seconds, dt);
    if (prec == MX_ELEM_F32) {
      CHECK_MSG(same == N_STEPS + 1, "%s: greedy ids differ from the cpu backend's", name);
      CHECK_MSG(maxd <= 1e-4, "%s: max |dlogit| %.3g > 1e-4", name, maxd);
    } else {
      CHECK_MSG(same >= (N_STEPS + 1) * 9 / 10, "%s %s: top-1 agrees at %d of %d steps", name,
                mx_elem_name(prec), same, N_STEPS + 1);
      CHECK_MSG(maxd <= 0x1p-4 * maxl, "%s %s: max |dlogit| %.3g > 2^-4 of max |logit| %.3g", name,
                mx_elem_name(prec), maxd, maxl);
    }
  }
  mx_session_destroy(sc);
  mx_session_destroy(sx);
  free(rc);
  free(rx);
  mx_model_free(model);
}

static void fixtures(void) {
  const char *shared = getenv("MX_SHARED");
  char root[1024];
  snprintf(root, sizeof root, "%s/fixtures", shared ? shared : "");
  DIR *d = shared ? opendir(root) : NULL;
  if (!d) {
    mx_test_skip("%s not found (set MX_SHARED to the shared data folder)", root);
    return;
  }
  int32_t ran = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char dir[1400], path[1600];
    snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
    snprintf(path, sizeof path, "%s/reference.json", dir);
    cJSON *ref = read_json(path);
    if (!ref) continue;
    int32_t np = 0;
    int32_t *prompt = json_ids(cJSON_GetObjectItem(ref, "prompt_ids"), &np);
    CHECK_MSG(prompt && np > 0, "%s: no prompt_ids", path);
    if (prompt && np > 0) {
      // Windows of 16 and 32 rows, then the whole capacity (>= 64) past position 32.
      parity(e->d_name, dir, prompt, np, MX_ELEM_F32, 16);
      if (strcmp(e->d_name, "llama") == 0) parity(e->d_name, dir, prompt, np, MX_ELEM_BF16, 0);
      ran++;
    }
    free(prompt);
    cJSON_Delete(ref);
  }
  closedir(d);
  CHECK_MSG(ran >= 8, "only %d fixtures with a reference.json under %s", ran, root);
}

static const int32_t kStoryPrompt[] = {1, 403, 407, 261, 378, 319, 260, 302};

// What a decode step moves between host and device.
static void transfers(const mx_model_t *model) {
  mx_session_t *s = open_session(model, "xla", 64, NULL, 0);
  if (!s) return;
  CHECK_OK(mx_session_prefill(s, kStoryPrompt, 8, NULL));
  CHECK_OK(mx_session_decode(s, 5));  // compiles @decode
  mx_xla_stats_t a, b;
  CHECK(mx_xla_session_stats(s, &a));
  CHECK_OK(mx_session_decode(s, 6));
  CHECK(mx_xla_session_stats(s, &b));
  int32_t V = mx_session_vocab(s);
  uint64_t up = b.to_device - a.to_device, down = b.to_host - a.to_host;
  printf(
      "one decode step: %llu bytes to the device, %llu back; weights on the device %llu "
      "bytes\n",
      (unsigned long long)up, (unsigned long long)down, (unsigned long long)b.weight_bytes);
  CHECK_MSG(up == 2 * sizeof(int32_t), "a decode step uploaded %llu bytes (id + pos0 = 8)",
            (unsigned long long)up);
  CHECK_MSG(down == (uint64_t)V * sizeof(float), "a decode step downloaded %llu bytes (logits %zu)",
            (unsigned long long)down, (size_t)V * sizeof(float));
  // Weights went up once, at creation: every upload since is ids, pos0 and the caches' zeros.
  uint64_t w = 0;
  const mx_checkpoint_t *ck = model->ckpt;
  for (int32_t i = 0; i < mx_checkpoint_count(ck); i++) w += mx_checkpoint_weight(ck, i)->nbytes;
  CHECK_MSG(b.weight_bytes <= w, "weights on the device %llu > the checkpoint's %llu",
            (unsigned long long)b.weight_bytes, (unsigned long long)w);
  CHECK(b.compiled == 2 && b.cache_loaded == 0);  // @prefill T = 8 and @decode
  mx_session_destroy(s);
}

// A second session with the same cache directory loads every entry instead of compiling.
static void compile_cache(const mx_model_t *model) {
  char dir[] = "/tmp/mx_xla_cache_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  int32_t V = model->config.vocab_size;
  size_t nrow = (size_t)(N_STEPS + 1) * (size_t)V;
  float *r1 = malloc(nrow * sizeof(float)), *r2 = malloc(nrow * sizeof(float));
  int32_t ids1[N_STEPS + 1], ids2[N_STEPS + 1];
  mx_xla_stats_t s1 = {0}, s2 = {0};
  mx_session_t *s = open_session(model, "xla", 64, dir, 0);
  if (s && run(s, kStoryPrompt, 7, NULL, ids1, r1)) mx_xla_session_stats(s, &s1);
  mx_session_destroy(s);
  s = open_session(model, "xla", 64, dir, 0);
  if (s && run(s, kStoryPrompt, 7, NULL, ids2, r2)) mx_xla_session_stats(s, &s2);
  mx_session_destroy(s);
  printf(
      "compile cache: first session compiled %d entries in %.2f s, the second loaded %d in "
      "%.2f s\n",
      s1.compiled, s1.compile_seconds, s2.cache_loaded, s2.compile_seconds);
  // The 7-token prompt runs @prefill T = 4 twice (from token 0, then from token 3: ADR 0028),
  // the steps @decode: two entries.
  CHECK(s1.compiled == 2 && s1.cache_loaded == 0 && s1.cache_failed == 0);
  CHECK(s2.compiled == 0 && s2.cache_loaded == 2 && s2.cache_failed == 0);
  CHECK(memcmp(r1, r2, nrow * sizeof(float)) == 0);
  CHECK(memcmp(ids1, ids2, sizeof ids1) == 0);
  // A damaged cache file is not used: the entry compiles again and the run is the same.
  DIR *d = opendir(dir);
  struct dirent *e;
  int32_t n_files = 0;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r+b");
    if (f && n_files == 0) {
      fseek(f, -16, SEEK_END);
      fwrite("garbage garbage!", 1, 16, f);
    }
    if (f) fclose(f);
    n_files++;
  }
  if (d) closedir(d);
  CHECK(n_files == 2);
  s = open_session(model, "xla", 64, dir, 0);
  mx_xla_stats_t s3 = {0};
  if (s && run(s, kStoryPrompt, 7, NULL, ids2, r2)) mx_xla_session_stats(s, &s3);
  mx_session_destroy(s);
  printf("after damaging one file: compiled %d, loaded %d, failed %d\n", s3.compiled,
         s3.cache_loaded, s3.cache_failed);
  CHECK(s3.compiled == 1 && s3.cache_loaded == 1 && s3.cache_failed == 1);
  CHECK(memcmp(r1, r2, nrow * sizeof(float)) == 0);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
  free(r1);
  free(r2);
}

// The batch operations (serve) on one model: slots 0 and 2 of 3 prefilled with different prompts
// (the B = 1 entries on each slot's own device caches), then decoded together greedily in one
// device call per step (ADR 0016: @decode of 2 sequences with a cache argument each; attention
// windows of 8 and 16 rows, then 32); each slot's logits equal an xla session's on the same ids
// within 1e-4 (the batched linear layers may round differently from the B = 1 ones), greedy ids the
// same.
static void batch(const char *name, const mx_model_t *model, const int32_t *prompt) {
  enum { STEPS = 12 };
  mx_batch_opts_t bo = {.backend = "xla", .ctx = 64, .prefill_chunk = CHUNK, .n_slots = 3};
  bo.backend_opts.xla.plugin = g_plugin;
  bo.backend_opts.xla.cache_dir = g_cache;
  bo.backend_opts.xla.attn_window = 8;
  mx_batch_t *b = NULL;
  CHECK_OK(mx_batch_create(model, &bo, &b));
  if (!b) return;
  int32_t V = model->config.vocab_size;
  const int32_t slots[2] = {0, 2}, np[2] = {7, 8};
  const size_t row = (size_t)V * sizeof(float);
  float *got = malloc(2 * (STEPS + 1) * row);
  int32_t ids[2][STEPS + 1];
  for (int32_t k = 0; k < 2; k++) CHECK_OK(mx_batch_prefill(b, slots[k], prompt, np[k]));
  mx_xla_stats_t s0, s1;
  CHECK(mx_xla_batch_stats(b, &s0));
  for (int32_t t = 0; t <= STEPS; t++) {
    for (int32_t k = 0; k < 2; k++) {
      const float *L = mx_batch_logits(b, slots[k]);
      if (!L) return;
      ids[k][t] = argmax(L, V);
      memcpy((char *)got + ((size_t)k * (STEPS + 1) + (size_t)t) * row, L, row);
    }
    if (t < STEPS) {
      const int32_t step_ids[2] = {ids[0][t], ids[1][t]};
      CHECK_OK(mx_batch_decode(b, slots, step_ids, 2));
    }
  }
  CHECK(mx_xla_batch_stats(b, &s1));
  CHECK_MSG(s1.calls - s0.calls == STEPS, "%d device calls for %d steps of 2 slots",
            s1.calls - s0.calls, STEPS);
  // Each slot alone in a session, fed the same ids.
  double maxd = 0;
  for (int32_t k = 0; k < 2; k++) {
    mx_session_t *s = open_session(model, "xla", 64, NULL, 0);
    if (!s) continue;
    CHECK_OK(mx_session_prefill(s, prompt, np[k], NULL));
    int32_t same = 0;
    for (int32_t t = 0; t <= STEPS; t++) {
      const float *L = mx_session_logits(s),
                  *G = (const float *)((char *)got + ((size_t)k * (STEPS + 1) + (size_t)t) * row);
      for (int32_t v = 0; v < V; v++) maxd = fmax(maxd, fabs((double)L[v] - (double)G[v]));
      same += argmax(L, V) == ids[k][t];
      if (t < STEPS) CHECK_OK(mx_session_decode(s, ids[k][t]));
    }
    CHECK_MSG(same == STEPS + 1, "batch slot %d: greedy ids differ from a session's", slots[k]);
    mx_session_destroy(s);
  }
  CHECK_MSG(maxd <= 1e-4, "batch vs sessions: max |dlogit| %.3g", maxd);
  printf(
      "%s batch: slots 0 and 2 of 3 decoded together, %d steps in %d device calls, max |dlogit| "
      "vs sessions %.3g\n",
      name, STEPS, s1.calls - s0.calls, maxd);
  free(got);
  mx_batch_destroy(b);
}

// Windowed entries (ADR 0015) are the ones that run: at ctx 128 with window 8, a 7-token prompt
// (4, then 4 from token 3: ADR 0028) runs @prefill T = 4 of window 8, and 32 steps (positions
// 7..38) @decode of windows 8, 16, 32 and 64; no whole-capacity entry is made. Their logits equal
// the whole-capacity session's (the rows a window leaves out are masked there: they add exact
// zeros) within the 1e-4 of the parity checks.
static void windows(const mx_model_t *model) {
  int32_t V = model->config.vocab_size;
  size_t nrow = (size_t)(N_STEPS + 1) * (size_t)V;
  float *rw = malloc(nrow * sizeof(float)), *rf = malloc(nrow * sizeof(float));
  int32_t ids[N_STEPS + 1], ids_f[N_STEPS + 1];
  char dir[] = "/tmp/mx_xla_win_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  mx_session_t *sw = open_session(model, "xla", 128, dir, 8);
  mx_session_t *sf = open_session(model, "xla", 128, NULL, -1);
  mx_xla_stats_t xs = {0};
  if (sw && sf && run(sw, kStoryPrompt, 7, NULL, ids, rw) &&
      run(sf, kStoryPrompt, 7, ids, ids_f, rf)) {
    mx_xla_session_stats(sw, &xs);
    double maxd = 0;
    for (size_t k = 0; k < nrow; k++) maxd = fmax(maxd, fabs((double)rw[k] - (double)rf[k]));
    printf("windows 8..64 at ctx 128: %d entries made, max |dlogit| vs whole capacity %.3g\n",
           xs.compiled + xs.cache_loaded, maxd);
    CHECK_MSG(xs.compiled == 5 && xs.cache_loaded == 0, "compiled %d, loaded %d (5 expected)",
              xs.compiled, xs.cache_loaded);
    CHECK_MSG(maxd <= 1e-4, "windowed vs whole capacity: max |dlogit| %.3g", maxd);
    CHECK(memcmp(ids, ids_f, sizeof ids) == 0);
  }
  mx_session_destroy(sw);
  mx_session_destroy(sf);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
  free(rw);
  free(rf);
}

// The batched decode's RoPE offsets (M-RoPE, ADR 0013) on Qwen2-VL's text model: two slots
// hold the same prompt; one call decodes slot 0 at a RoPE position 3 behind its cache position
// (as an image leaves it) and slot 1 unshifted, then a lone shifted slot decodes alone. The xla
// batch's logits equal the cpu batch's (whose shifted decode test_vlm_qwen.h holds to
// transformers' greedy ids) within 1e-4, and the shift changes the logits.
static void rope_offsets(const mx_model_t *model) {
  const mx_backend_batch_t *ops[2] = {mx_backend_batch_ops(&mx_backend_cpu),
                                      mx_backend_batch_ops(&mx_backend_xla)};
  mx_backend_config_t bc = {.ctx = 32, .prefill_chunk = CHUNK};
  bc.opts.xla.plugin = g_plugin;
  bc.opts.xla.cache_dir = g_cache;
  static const int32_t kPrompt[] = {1, 5, 9, 17, 33, 65, 129, 200};
  const int32_t np = 8, V = model->config.vocab_size;
  float *lg = malloc(sizeof(float) * 4 * (size_t)V * 2);
  void *st[2] = {NULL, NULL};
  for (int32_t k = 0; k < 2 && lg; k++) {
    CHECK_OK(ops[k]->create(model, &bc, 2, &st[k]));
    if (!st[k]) break;
    float *out = lg + (size_t)k * 4 * (size_t)V;  // [4][V]: both slots, then the lone slot
    for (int32_t s = 0; s < 2; s++) CHECK_OK(ops[k]->prefill(st[k], s, kPrompt, np, 0, out));
    int32_t slots[2] = {0, 1}, ids[2] = {7, 7};
    int64_t pos[2] = {np, np}, rope[2] = {np - 3, np};
    CHECK_OK(ops[k]->decode(st[k], slots, ids, pos, rope, 2, out));
    int64_t pos1 = np + 1, rope1 = np - 2;
    CHECK_OK(ops[k]->decode(st[k], slots, ids, &pos1, &rope1, 1, out + 2 * (size_t)V));
    CHECK_OK(ops[k]->decode(st[k], slots + 1, ids, &pos1, &pos1, 1, out + 3 * (size_t)V));
  }
  double maxd = 0, shift = 0;
  for (size_t i = 0; lg && st[1] && i < 4 * (size_t)V; i++) {
    double d = fabs((double)lg[i] - lg[4 * (size_t)V + i]);
    if (d > maxd) maxd = d;
  }
  for (int32_t i = 0; lg && i < V; i++) {
    double d = fabs((double)lg[i] - lg[V + i]);  // slot 0 shifted vs slot 1, the same tokens
    if (d > shift) shift = d;
  }
  CHECK_MSG(maxd <= 1e-4, "RoPE offsets: xla vs cpu batch max |dlogit| %.3g", maxd);
  CHECK_MSG(shift > 1e-3, "RoPE offsets: a shifted slot's logits equal the unshifted one's");
  printf("qwen2_vl batch: RoPE offsets on xla vs cpu max |dlogit| %.3g (shift moves them %.3g)\n",
         maxd, shift);
  for (int32_t k = 0; k < 2; k++)
    if (st[k]) ops[k]->destroy(st[k]);
  free(lg);
}

// Failures a healthy CPU plugin never shows, through the fault plugin (fault_pjrt_plugin.c)
// around the real one: a compile the plugin rejects, and the device out of memory when the
// caches are allocated and during a step. Each is a clear error naming what failed; a failure
// before the device call leaves the session usable, and every session is destroyed cleanly
// (the ASan run of CI checks that nothing leaks).
static void faults(const mx_model_t *model) {
  const char *fault = getenv("MX_FAULT_PJRT_PLUGIN");
  CHECK_MSG(fault && fault[0], "MX_FAULT_PJRT_PLUGIN is not set");
  if (!fault || !fault[0]) return;
  setenv("MX_FAULT_PJRT_REAL", g_plugin, 1);
  mx_session_opts_t so = {.backend = "xla", .ctx = 64, .prefill_chunk = CHUNK};
  so.backend_opts.xla.plugin = fault;  // no compile cache: every entry compiles
  mx_session_t *s = NULL;
  setenv("MX_FAULT_PJRT", "compile", 1);
  CHECK_OK(mx_session_create(model, &so, &s));
  if (s) {
    CHECK(mx_session_prefill(s, kStoryPrompt, 8, NULL) == MX_ERR_RUNTIME);
    const char *m = mx_error_message();
    CHECK_MSG(strstr(m, "compiling @prefill (T = 8) with XLA") &&
                  strstr(m, "the compiler rejects this program") && strstr(m, "INVALID_ARGUMENT"),
              "%s", m);
    printf("compile failure: %s\n", m);
    setenv("MX_FAULT_PJRT", "", 1);  // the entry compiles on the next call
    CHECK_OK(mx_session_prefill(s, kStoryPrompt, 8, NULL));
    mx_session_destroy(s);
  }
  s = NULL;
  setenv("MX_FAULT_PJRT", "oom:0", 1);
  CHECK(mx_session_create(model, &so, &s) == MX_ERR_NOMEM && !s);
  const char *m = mx_error_message();
  CHECK_MSG(strstr(m, "out of device memory") && strstr(m, "RESOURCE_EXHAUSTED"), "%s", m);
  printf("out of memory at creation: %s\n", m);
  setenv("MX_FAULT_PJRT", "", 1);
  CHECK_OK(mx_session_create(model, &so, &s));
  if (s) {
    setenv("MX_FAULT_PJRT", "oom:0", 1);  // the next upload (the call's token ids) fails
    CHECK(mx_session_prefill(s, kStoryPrompt, 8, NULL) == MX_ERR_NOMEM);
    m = mx_error_message();
    CHECK_MSG(strstr(m, "out of device memory"), "%s", m);
    printf("out of memory in a call: %s\n", m);
    setenv("MX_FAULT_PJRT", "", 1);
    CHECK_OK(mx_session_prefill(s, kStoryPrompt, 8, NULL));
    mx_session_destroy(s);
  }
  unsetenv("MX_FAULT_PJRT");
}

static void errors(const mx_model_t *model) {
  mx_session_opts_t so = {.backend = "xla", .ctx = 32};
  mx_session_t *s = NULL;
  CHECK(mx_session_create(model, &so, &s) == MX_ERR_INVALID_ARG && !s);
  CHECK_MSG(strstr(mx_error_message(), "--pjrt-plugin") &&
                strstr(mx_error_message(), "MLXCEL_XLA_PJRT_PLUGIN"),
            "%s", mx_error_message());
  so.backend_opts.xla.plugin = "/nonexistent/plugin.so";
  CHECK(mx_session_create(model, &so, &s) == MX_ERR_IO && !s);
  CHECK_MSG(strstr(mx_error_message(), "/nonexistent/plugin.so"), "%s", mx_error_message());
  so.backend_opts.xla.plugin = "libc.so.6";
  CHECK(mx_session_create(model, &so, &s) == MX_ERR_UNSUPPORTED && !s);
  CHECK_MSG(strstr(mx_error_message(), "not a PJRT plugin"), "%s", mx_error_message());
  const char *fake = getenv("MX_FAKE_PJRT");
  CHECK_MSG(fake && fake[0], "MX_FAKE_PJRT is not set");
  if (fake && fake[0]) {
    so.backend_opts.xla.plugin = fake;
    CHECK(mx_session_create(model, &so, &s) == MX_ERR_UNSUPPORTED && !s);
    CHECK_MSG(strstr(mx_error_message(), "C API 1.3"), "%s", mx_error_message());
  }
  so.backend_opts.xla.plugin = g_plugin;
  so.backend_opts.device = "cuda";
  CHECK(mx_session_create(model, &so, &s) == MX_ERR_INVALID_ARG && !s);
  CHECK_MSG(strstr(mx_error_message(), "'cuda'") && strstr(mx_error_message(), "'cpu'"), "%s",
            mx_error_message());
}

int main(void) {
  // The fixtures come from $MX_SHARED, stories260K from the repository.
  if (!mx_test_shared("fixtures")) return mx_test_finish();
  const char *data = getenv("MX_TEST_DATA");
  CHECK_MSG(data && data[0], "MX_TEST_DATA is not set");
  if (!data || !data[0]) return mx_test_finish();
  if (!mx_test_pjrt_plugin(g_plugin, sizeof g_plugin)) return mx_test_finish();
  CHECK(mkdtemp(g_cache) != NULL);
  char stories[4200];
  snprintf(stories, sizeof stories, "%s/../../models/stories260K", data);
  mx_model_t *model = load(stories, MX_ELEM_F32);
  if (model) {
    errors(model);
    transfers(model);
    compile_cache(model);
    batch("stories260K", model, kStoryPrompt);
    windows(model);
    faults(model);
    mx_model_free(model);
  }
  // Multi-latent attention (its two caches per layer of different widths) batched.
  static const int32_t kSmallPrompt[] = {1, 5, 9, 17, 33, 65, 129, 200};
  snprintf(stories, sizeof stories, "%s/families/deepseek_v2", data);
  model = load(stories, MX_ELEM_F32);
  if (model) batch("deepseek_v2", model, kSmallPrompt);
  mx_model_free(model);
  snprintf(stories, sizeof stories, "%s/families/qwen2_vl", data);
  model = load(stories, MX_ELEM_F32);
  if (model) rope_offsets(model);
  mx_model_free(model);
  snprintf(stories, sizeof stories, "%s/../../models/stories260K", data);
  parity("stories260K", stories, kStoryPrompt, 8, MX_ELEM_F32, 0);
  parity("stories260K", stories, kStoryPrompt, 8, MX_ELEM_F32, 16);
  parity("stories260K", stories, kStoryPrompt, 8, MX_ELEM_BF16, 0);
  fixtures();
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_cache);
  CHECK(system(cmd) == 0);
  return mx_test_finish();
}
