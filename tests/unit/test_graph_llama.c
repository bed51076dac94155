// Llama graph builder: builds @prefill / @decode for stories260K (real trained model, tied head,
// no rope scaling) and the llama fixture (llama3 rope scaling, untied head, GQA), checks the
// module (verify, print -> parse -> print round trip, argument roles) and RUNS it with the
// reference interpreter against the reference logits (prefill, then KV-cached decode steps).
// Needs $MX_SHARED (../shared); skipped with a message when absent.
#include "test_graph_runner.h"

// ---- module-level checks ----

static void check_module(const mx_module_t *m, const mx_model_config_t *cfg) {
  CHECK_OK(mx_hlo_verify_module(m));
  mx_strbuf_t a, b;
  mx_strbuf_init(&a);
  mx_strbuf_init(&b);
  CHECK_OK(mx_hlo_print(m, NULL, &a));
  mx_module_t *m2 = NULL;
  CHECK_OK(mx_hlo_parse(a.data, a.len, NULL, &m2));
  if (m2) {
    CHECK_OK(mx_hlo_print(m2, NULL, &b));
    CHECK(a.len == b.len && b.data && memcmp(a.data, b.data, a.len) == 0);
    // Roles survive the round trip.
    const mx_func_t *d = mx_module_find_func(m2, "decode");
    CHECK(d != NULL);
    if (d) {
      int32_t n = d->body->n_args, L = cfg->num_layers;
      mx_graph_arg_t info;
      CHECK_OK(mx_graph_arg_info(d, 0, &info));
      CHECK(info.role == MX_ARG_WEIGHT && strcmp(info.name, "model.embed_tokens.weight") == 0);
      CHECK_OK(mx_graph_arg_info(d, n - 2 * L - 2, &info));
      CHECK(info.role == MX_ARG_TOKENS);
      CHECK_OK(mx_graph_arg_info(d, n - 2 * L - 1, &info));
      CHECK(info.role == MX_ARG_POS0);
      CHECK_OK(mx_graph_arg_info(d, n - 1, &info));
      CHECK(info.role == MX_ARG_V_CACHE && info.layer == L - 1 &&
            strncmp(info.name, "v_cache_", 8) == 0 && atoi(info.name + 8) == L - 1);
      const mx_attr_t *al = mx_attr_field(&d->arg_attrs[n - 1], "tf.aliasing_output");
      CHECK(al != NULL && al->kind == MX_ATTR_INT && al->i == 2 * L);
      CHECK(d->n_results == 1 + 2 * L);
      CHECK(d->result_types[0].rank == 2 && d->result_types[0].dims[1] == cfg->vocab_size);
    }
  }
  // Every composite is there, each with a private decomposition and version 1.
  const char *want[] = {"mx.rms_norm", "mx.rope", "mx.attention", "mx.gated_mlp"};
  for (int32_t k = 0; k < 4; k++) CHECK(a.data && strstr(a.data, want[k]) != NULL);
  CHECK(a.data && strstr(a.data, "func.func private @mx_attention_0") != NULL);
  CHECK(a.data && strstr(a.data, "tf.aliasing_output") != NULL);
  if (getenv("MX_DUMP_GRAPH")) fputs(a.data, stdout);
  // Composites inline to plain calls and still parse.
  mx_strbuf_t c;
  mx_strbuf_init(&c);
  mx_print_opts_t po = {.inline_composites = true};
  CHECK_OK(mx_hlo_print(m, &po, &c));
  CHECK(c.data && strstr(c.data, "stablehlo.composite") == NULL);
  mx_module_t *m3 = NULL;
  CHECK_OK(mx_hlo_parse(c.data, c.len, NULL, &m3));
  mx_module_destroy(m3);
  mx_strbuf_free(&c);
  mx_module_destroy(m2);
  mx_strbuf_free(&a);
  mx_strbuf_free(&b);
}

// ---- the llama fixture: llama3 rope scaling, untied head ----

static void test_fixture(const char *shared) {
  char dir[1024], path[1100];
  snprintf(dir, sizeof dir, "%s/fixtures/llama", shared);
  snprintf(path, sizeof path, "%s/reference.json", dir);
  cJSON *ref = read_json(path);
  CHECK_MSG(ref != NULL, "%s", path);
  if (!ref) return;
  int32_t n_prompt, n_greedy;
  int32_t *prompt = json_ids(cJSON_GetObjectItem(ref, "prompt_ids"), &n_prompt);
  int32_t *greedy = json_ids(cJSON_GetObjectItem(ref, "greedy_ids"), &n_greedy);
  const cJSON *logits = cJSON_GetObjectItem(ref, "logits");
  const cJSON *dlogits = cJSON_GetObjectItem(ref, "decode_logits");
  mx_graph_opts_t o = {.batch = 1, .ctx = 64, .prefill_len = n_prompt, .all_logits = true};
  runner_t r;
  if (runner_open(&r, dir, &o)) {
    check_module(r.m, &r.cfg);
    int32_t V = r.cfg.vocab_size;
    int64_t nl = 0;
    float *lg = runner_step(&r, r.prefill, prompt, 0, &nl);
    CHECK(lg != NULL && nl == (int64_t)n_prompt * V);
    if (lg) {
      double md = max_diff_rows(lg, logits, 0, n_prompt, V);
      printf("llama fixture: prefill %d positions, max |dlogit| = %.3g\n", n_prompt, md);
      CHECK_MSG(md <= 1e-4, "prefill max diff %g", md);
    }
    free(lg);
    double md_dec = 0;
    int32_t n_dec = cJSON_GetArraySize(dlogits);
    for (int32_t i = 0; i < n_dec && i < n_greedy; i++) {
      float *dl = runner_step(&r, r.decode, &greedy[i], n_prompt + i, &nl);
      CHECK(dl != NULL && nl == V);
      if (!dl) break;
      double d = max_diff_rows(dl, dlogits, i, 1, V);
      if (d > md_dec) md_dec = d;
      // greedy_ids[i + 1] = argmax(decode_logits[i])
      int32_t am = 0;
      for (int32_t j = 1; j < V; j++)
        if (dl[j] > dl[am]) am = j;
      if (i + 1 < n_greedy)
        CHECK_MSG(am == greedy[i + 1], "step %d: %d vs %d", i, am, greedy[i + 1]);
      free(dl);
    }
    printf("llama fixture: %d decode steps, max |dlogit| = %.3g\n", n_dec, md_dec);
    CHECK_MSG(md_dec <= 1e-4, "decode max diff %g", md_dec);
  }
  runner_free(&r);
  free(prompt);
  free(greedy);
  cJSON_Delete(ref);
}

// ---- stories260K: real trained weights, tied head, reference from llama2.c run.c ----

static void test_stories(const char *shared) {
  char dir[1024], path[1100];
  snprintf(dir, sizeof dir, "%s/models/stories260K/hf", shared);
  snprintf(path, sizeof path, "%s/models/stories260K/reference-greedy.json", shared);
  cJSON *ref = read_json(path);
  CHECK_MSG(ref != NULL, "%s", path);
  if (!ref) return;
  const cJSON *runs = cJSON_GetObjectItem(ref, "runs");
  // Prefill the first 16 tokens of each run with all logits, then decode the next ones one by
  // one with the KV cache; compare every position that has reference logits.
  const int32_t T = 16;
  mx_graph_opts_t o = {.batch = 1, .ctx = 64, .prefill_len = T, .all_logits = true};
  runner_t r;
  if (runner_open(&r, dir, &o)) {
    check_module(r.m, &r.cfg);
    int32_t V = r.cfg.vocab_size;
    const cJSON *run;
    cJSON_ArrayForEach(run, runs) {
      int32_t n_tok, n_prompt = cJSON_GetArraySize(cJSON_GetObjectItem(run, "prompt_tokens"));
      int32_t *tokens = json_ids(cJSON_GetObjectItem(run, "tokens"), &n_tok);
      const cJSON *logits = cJSON_GetObjectItem(run, "logits");
      int32_t n_ref = cJSON_GetArraySize(logits);
      for (int32_t i = 0; i < 2 * r.L; i++) memset(r.caches[i].data, 0, r.caches[i].nbytes);
      int64_t nl = 0;
      float *lg = runner_step(&r, r.prefill, tokens, 0, &nl);
      double md = 0;
      if (lg) md = max_diff_rows(lg, logits, 0, n_ref < T ? n_ref : T, V);
      free(lg);
      for (int32_t p = T; p < n_ref; p++) {
        float *dl = runner_step(&r, r.decode, &tokens[p], p, &nl);
        if (!dl) break;
        double d = max_diff_rows(dl, logits, p, 1, V);
        if (d > md) md = d;
        int32_t am = 0;
        for (int32_t j = 1; j < V; j++)
          if (dl[j] > dl[am]) am = j;
        // Past the prompt, the next token is the greedy choice.
        if (p + 1 >= n_prompt && p + 1 < n_tok) {
          CHECK_MSG(am == tokens[p + 1], "pos %d: %d vs %d", p, am, tokens[p + 1]);
        }
        free(dl);
      }
      printf("stories260K \"%s\": %d positions, max |dlogit| = %.3g\n",
             cJSON_GetObjectItem(run, "prompt")->valuestring, n_ref, md);
      CHECK_MSG(md <= 1e-4, "max diff %g", md);
      free(tokens);
    }
  }
  runner_free(&r);
  cJSON_Delete(ref);
}

// Times a 24-token prefill and a decode step at ctx 512 (printed, not checked).
static void time_stories(const char *shared) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/models/stories260K/hf", shared);
  mx_graph_opts_t o = {.batch = 1, .ctx = 512, .prefill_len = 24, .all_logits = false};
  runner_t r;
  if (runner_open(&r, dir, &o)) {
    int32_t tokens[24];
    for (int32_t i = 0; i < 24; i++) tokens[i] = 3 + 17 * i;
    int64_t nl = 0;
    double t0 = now_s();
    float *lg = runner_step(&r, r.prefill, tokens, 0, &nl);
    double t1 = now_s();
    CHECK(lg != NULL && nl == r.cfg.vocab_size);
    free(lg);
    int32_t tok = 5;
    lg = runner_step(&r, r.decode, &tok, 24, &nl);
    double t2 = now_s();
    free(lg);
    printf(
        "stories260K ctx 512, reference interpreter: prefill 24 tokens %.3f s, decode step %.3f "
        "s\n",
        t1 - t0, t2 - t1);
  }
  runner_free(&r);
}

int main(void) {
  const char *shared = getenv("MX_SHARED");
  char probe[1024];
  snprintf(probe, sizeof probe, "%s/fixtures/llama/config.json", shared ? shared : "");
  FILE *fp = shared ? fopen(probe, "rb") : NULL;
  if (fp == NULL) {
    mx_test_skip("%s not found (set MX_SHARED to the shared data folder)", probe);
    return mx_test_finish();
  }
  fclose(fp);
  test_fixture(shared);
  test_stories(shared);
  if (!getenv("MX_GRAPH_NO_TIMING")) time_stories(shared);
  return mx_test_finish();
}
