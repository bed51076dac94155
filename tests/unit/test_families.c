// Every fixture under $MX_SHARED/fixtures/<arch>/ that has a reference.json (tiny random
// checkpoints of each model family, see fixtures/README.md): mx_model_load (no tokenizer in
// these folders), then @prefill / @decode run by the reference interpreter against the
// reference: logits of every prompt position and of every KV-cached decode step within 1e-4,
// the greedy continuation identical. The emitted module is printed, re-parsed and re-run to the
// same prefill logits (composites kept, and inlined). Nothing here is specific to one folder: new
// fixtures of the same kind are picked up as they are. Skipped with a message when $MX_SHARED is
// absent. With one argument, runs that folder only (the families checked in under
// tests/data/families, written by transformers itself: one ctest each).
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "test_graph_runner.h"

static const double kTol = 1e-4;

static int32_t argmax(const float *v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

// Opens a runner on an already-built module (the re-parsed one); shares ck with `like`.
static bool runner_from_module(runner_t *r, const runner_t *like, mx_module_t *m) {
  memset(r, 0, sizeof *r);
  r->cfg = like->cfg;
  r->ck = like->ck;
  r->m = m;
  r->prefill = mx_module_find_func(m, "prefill");
  r->decode = mx_module_find_func(m, "decode");
  CHECK(r->prefill != NULL && r->decode != NULL);
  if (!r->prefill || !r->decode) return false;
  r->L = like->L;
  r->caches = calloc((size_t)(2 * r->L), sizeof(mx_tensor_t));
  int32_t first_cache = r->prefill->body->n_args - 2 * r->L;
  for (int32_t i = 0; i < 2 * r->L; i++) {
    const mx_type_t *t = mx_value_type(r->prefill, r->prefill->body->args[first_cache + i]);
    CHECK_OK(mx_tensor_alloc(&r->caches[i], t));
  }
  return true;
}

// print -> parse -> run @prefill: the same logits as the built module gave (`want`); with
// composites kept (as emitted) and inlined into plain calls (for consumers without composites).
static void check_reparse(const runner_t *r, const int32_t *prompt, const float *want,
                          int64_t n_want, const char *arch) {
  for (int32_t inl = 0; inl < 2; inl++) {
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_print_opts_t po = {.inline_composites = inl == 1};
    CHECK_OK(mx_hlo_print(r->m, &po, &sb));
    mx_module_t *m2 = NULL;
    mx_status_t st = mx_hlo_parse(sb.data, sb.len, NULL, &m2);
    CHECK_MSG(st == MX_OK, "%s: re-parse%s: %s", arch, inl ? " (inlined)" : "", mx_error_message());
    mx_strbuf_free(&sb);
    if (st != MX_OK) continue;
    runner_t r2;
    if (runner_from_module(&r2, r, m2)) {
      int64_t n = 0;
      float *got = runner_step(&r2, r2.prefill, prompt, 0, &n);
      CHECK(got != NULL && n == n_want);
      double md = 0;
      for (int64_t i = 0; got && n == n_want && i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (d > md || d != d) md = d != d ? 1e30 : d;
      }
      CHECK_MSG(md == 0.0, "%s: re-parsed%s module's prefill logits differ by %g", arch,
                inl ? " (inlined)" : "", md);
      free(got);
    }
    r2.ck = NULL;  // owned by r
    runner_free(&r2);
  }
}

// One fixture folder: returns false when it has no reference.json (not a fixture).
static bool run_fixture(const char *dir, const char *arch) {
  char path[1500];
  snprintf(path, sizeof path, "%s/reference.json", dir);
  struct stat sbuf;
  if (stat(path, &sbuf) != 0) return false;
  cJSON *ref = read_json(path);
  CHECK_MSG(ref != NULL, "%s: unreadable JSON", path);
  if (!ref) return true;

  // The loader accepts the folder without a tokenizer when asked to.
  mx_model_t *model = NULL;
  mx_model_load_opts_t lo = {.tokenizer_optional = true};
  mx_status_t st = mx_model_load_ex(dir, &lo, &model);
  CHECK_MSG(st == MX_OK, "%s: mx_model_load_ex: %s", arch, mx_error_message());
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  if (stat(path, &sbuf) != 0) {  // no tokenizer: NULL here, an error for mx_model_load
    if (model) CHECK(model->tokenizer == NULL);
    mx_model_t *strict = NULL;
    CHECK(mx_model_load(dir, &strict) != MX_OK && strict == NULL);
  }
  const cJSON *mt = cJSON_GetObjectItem(ref, "model_type");
  if (model && cJSON_IsString(mt)) CHECK(strcmp(model->config.model_type, mt->valuestring) == 0);

  int32_t n_prompt = 0, n_greedy = 0;
  int32_t *prompt = json_ids(cJSON_GetObjectItem(ref, "prompt_ids"), &n_prompt);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(ref, "greedy_ids"), &n_greedy);
  const cJSON *logits = cJSON_GetObjectItem(ref, "logits");
  const cJSON *dlogits = cJSON_GetObjectItem(ref, "decode_logits");
  int32_t n_dec = cJSON_GetArraySize(dlogits);
  CHECK(n_prompt > 0 && n_greedy > 0 && cJSON_GetArraySize(logits) == n_prompt);
  // The prompt starts with the config's BOS (for gemma: 2, with eos 1).
  if (model && model->config.bos_token_id >= 0 && n_prompt > 0) {
    CHECK_MSG(prompt[0] == model->config.bos_token_id, "%s: prompt starts with %d, bos is %d", arch,
              prompt[0], model->config.bos_token_id);
  }
  mx_model_free(model);

  mx_graph_opts_t o = {
      .batch = 1, .ctx = n_prompt + n_greedy + 8, .prefill_len = n_prompt, .all_logits = true};
  runner_t r;
  double t0 = now_s(), md_prefill = 1e30, md_decode = 0;
  int32_t same = 0;
  if (n_prompt > 0 && runner_open(&r, dir, &o)) {
    int32_t V = r.cfg.vocab_size;
    int64_t n = 0;
    float *pl = runner_step(&r, r.prefill, prompt, 0, &n);
    CHECK(pl != NULL && n == (int64_t)n_prompt * V);
    if (pl && n == (int64_t)n_prompt * V) {
      md_prefill = max_diff_rows(pl, logits, 0, n_prompt, V);
      CHECK_MSG(md_prefill <= kTol, "%s: prefill max |dlogit| %g > %g", arch, md_prefill, kTol);
      // Greedy decoding with the KV cache carried: each step feeds our own argmax.
      int32_t next = argmax(pl + (int64_t)(n_prompt - 1) * V, V);
      for (int32_t i = 0; i < n_greedy; i++) {
        if (next != greedy[i]) {
          CHECK_MSG(0, "%s: greedy id %d is %d, reference %d", arch, i, next, greedy[i]);
          break;
        }
        same++;
        if (i + 1 >= n_greedy || i >= n_dec) break;
        int64_t nd = 0;
        float *dl = runner_step(&r, r.decode, &next, n_prompt + i, &nd);
        CHECK(dl != NULL && nd == V);
        if (!dl || nd != V) break;
        double d = max_diff_rows(dl, dlogits, i, 1, V);
        if (d > md_decode) md_decode = d;
        next = argmax(dl, V);
        free(dl);
      }
      CHECK_MSG(md_decode <= kTol, "%s: decode max |dlogit| %g > %g", arch, md_decode, kTol);
      CHECK_MSG(same == n_greedy, "%s: greedy %d/%d", arch, same, n_greedy);
      check_reparse(&r, prompt, pl, n, arch);
    }
    free(pl);
    runner_free(&r);
  }
  printf(
      "families: %-8s prefill max|dlogit| %.3g (%d positions), decode %.3g (%d steps), "
      "greedy %d/%d, %.2fs\n",
      arch, md_prefill, n_prompt, md_decode, n_greedy - 1 < n_dec ? n_greedy - 1 : n_dec, same,
      n_greedy, now_s() - t0);
  free(prompt);
  free(greedy);
  cJSON_Delete(ref);
  return true;
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
  while ((e = readdir(d)) != NULL && n < 256) {
    if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
  }
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
  printf("families: %d fixtures\n", ran);
  return mx_test_finish();
}
