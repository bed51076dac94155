// Every fixture under $MX_SHARED/fixtures/<arch>/ with a reference.json, run through the session
// API on the fast "cpu" backend (fused kernels where the plan has them, the interpreter's
// kernels elsewhere): prefill logits of every prompt position and the KV-cached decode steps
// within 1e-4 of the reference, the greedy continuation identical, with 1 and 2 threads giving
// bit-identical logits. Skipped with a message when $MX_SHARED is absent. With one argument, runs
// that folder only (the families checked in under tests/data/families, one ctest each).
#include <dirent.h>
#include <stdlib.h>

#include "mlxcel/session.h"
#include "test_graph_runner.h"

static const double kTol = 1e-4;

static int32_t argmax(const float *v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

// Runs prompt + greedy decode on the cpu backend; returns all logits rows (prompt rows then one
// row per decode step) in a heap array the caller frees, or NULL after reporting a failure.
static int32_t g_threads;  // threads of the sessions run_cpu makes

static float *run_cpu(const mx_model_t *model, const int32_t *prompt, int32_t n_prompt,
                      int32_t n_dec, int32_t *greedy_out) {
  mx_session_opts_t so;
  memset(&so, 0, sizeof so);
  so.backend = "cpu";
  so.backend_opts.threads = g_threads;
  so.ctx = n_prompt + n_dec + 1;
  mx_session_t *s = NULL;
  mx_status_t st = mx_session_create(model, &so, &s);
  CHECK_OK(st);
  if (st) return NULL;
  int32_t V = mx_session_vocab(s);
  float *rows = calloc((size_t)(n_prompt + n_dec) * (size_t)V, sizeof(float));
  st = mx_session_prefill(s, prompt, n_prompt, rows);
  CHECK_OK(st);
  for (int32_t i = 0; st == MX_OK && i <= n_dec; i++) {
    const float *last = mx_session_logits(s);
    greedy_out[i] = argmax(last, V);
    if (i == n_dec) break;
    st = mx_session_decode(s, greedy_out[i]);
    CHECK_OK(st);
    if (st == MX_OK)
      memcpy(rows + (size_t)(n_prompt + i) * (size_t)V, mx_session_logits(s),
             sizeof(float) * (size_t)V);
  }
  mx_session_destroy(s);
  if (st) {
    free(rows);
    return NULL;
  }
  return rows;
}

// The fixture loaded with quantization mode `quant`; *stored: whether its weights load packed.
static bool run_fixture_as(const char *dir, const char *arch, mx_quant_mode_t quant, bool *stored) {
  char path[1600];
  snprintf(path, sizeof path, "%s/reference.json", dir);
  cJSON *ref = read_json(path);
  if (!ref) return false;
  mx_model_load_opts_t lo = {.tokenizer_optional = true, .quant = quant};
  mx_model_t *model = NULL;
  mx_status_t st = mx_model_load_ex(dir, &lo, &model);
  CHECK_OK(st);
  *stored = st == MX_OK && model->quant == MX_QUANT_MLX;
  int32_t n_prompt = 0, n_greedy = 0;
  int32_t *prompt = json_ids(cJSON_GetObjectItem(ref, "prompt_ids"), &n_prompt);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(ref, "greedy_ids"), &n_greedy);
  const cJSON *logits = cJSON_GetObjectItem(ref, "logits");
  const cJSON *dlogits = cJSON_GetObjectItem(ref, "decode_logits");
  int32_t n_dec = cJSON_GetArraySize(dlogits);
  if (st == MX_OK && n_prompt > 0 && n_greedy == n_dec + 1) {
    int32_t V = model->config.vocab_size;
    int32_t *got1 = calloc((size_t)n_greedy, sizeof(int32_t));
    int32_t *got2 = calloc((size_t)n_greedy, sizeof(int32_t));
    g_threads = 1;
    float *r1 = run_cpu(model, prompt, n_prompt, n_dec, got1);
    g_threads = 2;
    float *r2 = run_cpu(model, prompt, n_prompt, n_dec, got2);
    if (r1 && r2) {
      double dp = max_diff_rows(r1, logits, 0, n_prompt, V);
      double dd = max_diff_rows(r1 + (size_t)n_prompt * (size_t)V, dlogits, 0, n_dec, V);
      CHECK_MSG(dp <= kTol, "%s: prefill max |dlogit| %.3g", arch, dp);
      CHECK_MSG(dd <= kTol, "%s: decode max |dlogit| %.3g", arch, dd);
      CHECK_MSG(memcmp(got1, greedy, sizeof(int32_t) * (size_t)n_greedy) == 0,
                "%s: greedy ids differ from the reference", arch);
      CHECK_MSG(memcmp(r1, r2, sizeof(float) * (size_t)(n_prompt + n_dec) * (size_t)V) == 0,
                "%s: 1 and 2 threads give different logits", arch);
      printf("%-8s cpu backend%s: prefill %.2g, decode %.2g\n", arch,
             quant == MX_QUANT_NONE ? " (dequantized at load)" : "", dp, dd);
    }
    free(r1);
    free(r2);
    free(got1);
    free(got2);
  }
  mx_model_free(model);
  free(prompt);
  free(greedy);
  cJSON_Delete(ref);
  return true;
}

// A checkpoint stored quantized (gpt-oss's MXFP4 experts) also runs dequantized at load, which
// is exact for MXFP4: the same tolerance.
static bool run_fixture(const char *dir, const char *arch) {
  bool stored = false, unused;
  if (!run_fixture_as(dir, arch, MX_QUANT_AUTO, &stored)) return false;
  return !stored || run_fixture_as(dir, arch, MX_QUANT_NONE, &unused);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv) {
  if (argc == 2) {  // one checkpoint folder of the repository (tests/data/families/<type>)
    const char *slash = strrchr(argv[1], '/');
    CHECK_MSG(run_fixture(argv[1], slash ? slash + 1 : argv[1]), "%s has no reference.json",
              argv[1]);
    return mx_test_finish();
  }
  const char *shared = getenv("MX_SHARED");
  char root[1024];
  snprintf(root, sizeof root, "%s/fixtures", shared ? shared : "");
  DIR *d = shared ? opendir(root) : NULL;
  if (d == NULL) {
    mx_test_skip("%s not found (set MX_SHARED to the shared data folder)",
                 shared ? root : "$MX_SHARED");
    return mx_test_finish();
  }
  char *names[256];
  int32_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < 256)
    if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], cmp_str);
  int32_t ran = 0;
  for (int32_t i = 0; i < n; i++) {
    char dir[1400];
    snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
    if (run_fixture(dir, names[i])) ran++;
    free(names[i]);
  }
  CHECK_MSG(ran > 0, "no fixture with a reference.json under %s", root);
  return mx_test_finish();
}
