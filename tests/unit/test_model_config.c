// config.json / generation_config.json parsing: defaults, the shared checkpoints' configs
// (every family's fixture) and each kind of bad value.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlxcel/model.h"
#include "mx_test.h"

#define SRC "models/x/config.json"

static mx_status_t parse2(const char *json, const char *gen, mx_model_config_t *cfg) {
  return mx_config_parse(json, strlen(json), gen, gen ? strlen(gen) : 0, SRC, cfg);
}
static mx_status_t parse(const char *json) {
  mx_model_config_t cfg;
  return parse2(json, NULL, &cfg);
}

// A small valid llama config with one field replaced: `field` is inserted first so that it
// wins over nothing (cJSON returns the first of duplicate keys).
static mx_status_t parse_with(const char *field) {
  char buf[1024];
  snprintf(buf, sizeof buf,
           "{%s%s \"model_type\": \"llama\", \"vocab_size\": 256, \"hidden_size\": 64, "
           "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
           "\"num_key_value_heads\": 4, \"rms_norm_eps\": 1e-5}",
           field, field[0] ? "," : "");
  return parse(buf);
}

static void test_defaults(void) {
  mx_model_config_t c;
  CHECK_OK(parse2("{\"model_type\": \"llama\"}", NULL, &c));
  CHECK(strcmp(c.model_type, "llama") == 0 && c.architecture[0] == '\0');
  CHECK(c.vocab_size == 32000 && c.hidden_size == 4096 && c.intermediate_size == 11008);
  CHECK(c.num_layers == 32 && c.num_heads == 32 && c.num_kv_heads == 32 && c.head_dim == 128);
  CHECK(c.max_position_embeddings == 2048 && c.rms_norm_eps == 1e-6 && c.rope_theta == 10000.0);
  CHECK(c.rope_scaling.kind == MX_ROPE_SCALING_NONE && c.partial_rotary_factor == 1.0);
  CHECK(!c.tie_word_embeddings && !c.attention_bias && !c.mlp_bias);
  CHECK(strcmp(c.hidden_act, "silu") == 0 && c.dtype == MX_ELEM_F32);
  CHECK(c.bos_token_id == 1 && c.pad_token_id == -1 && c.n_eos == 1 && c.eos_token_ids[0] == 2);
  CHECK(!c.has_temperature && !c.has_top_p && !c.has_top_k);
  // null means "default" as in transformers.
  CHECK_OK(
      parse2("{\"model_type\": \"llama\", \"head_dim\": null, \"num_key_value_heads\": null, "
             "\"rope_scaling\": null, \"bos_token_id\": null, \"eos_token_id\": null, "
             "\"hidden_act\": \"swish\", \"torch_dtype\": \"bfloat16\"}",
             NULL, &c));
  CHECK(c.head_dim == 128 && c.num_kv_heads == 32 && c.bos_token_id == -1 && c.n_eos == 0);
  CHECK(strcmp(c.hidden_act, "silu") == 0 && c.dtype == MX_ELEM_BF16);
}

static void test_rope_and_generation(void) {
  mx_model_config_t c;
  CHECK_OK(
      parse2("{\"model_type\": \"llama\", \"rope_scaling\": {\"type\": \"linear\", "
             "\"factor\": 4}, \"dtype\": \"float16\", \"eos_token_id\": [7, 9], "
             "\"architectures\": [\"LlamaForCausalLM\"]}",
             "{\"eos_token_id\": [2, 5, 6], \"bos_token_id\": 3, \"temperature\": 0.7, "
             "\"top_p\": 0.9, \"top_k\": 40, \"do_sample\": true}",
             &c));
  CHECK(c.rope_scaling.kind == MX_ROPE_SCALING_LINEAR && c.rope_scaling.factor == 4.0);
  CHECK(c.dtype == MX_ELEM_F16 && strcmp(c.architecture, "LlamaForCausalLM") == 0);
  CHECK(c.n_eos == 3 && c.eos_token_ids[0] == 2 && c.eos_token_ids[2] == 6 && c.bos_token_id == 3);
  CHECK(c.has_temperature && c.temperature == 0.7f && c.has_top_p && c.top_p == 0.9f);
  CHECK(c.has_top_k && c.top_k == 40 && c.do_sample);
  // transformers' GenerationConfig: do_sample false unless the file says true.
  CHECK_OK(parse2("{\"model_type\": \"llama\"}", "{\"temperature\": 0.7}", &c));
  CHECK(!c.do_sample && c.has_temperature);
  EXPECT_ERR(parse2("{\"model_type\": \"llama\"}", "{\"do_sample\": \"yes\"}", &c), "do_sample");
  CHECK_OK(parse2("{\"model_type\": \"llama\", \"eos_token_id\": [7, 9]}", "{}", &c));
  CHECK(c.n_eos == 2 && c.eos_token_ids[1] == 9);
  // transformers 5 layout: rope_parameters carries rope_theta and the scaling.
  CHECK_OK(
      parse2("{\"model_type\": \"llama\", \"rope_parameters\": {\"rope_type\": \"default\", "
             "\"rope_theta\": 500000.0}}",
             NULL, &c));
  CHECK(c.rope_theta == 500000.0 && c.rope_scaling.kind == MX_ROPE_SCALING_NONE);
  CHECK_OK(
      parse2("{\"model_type\": \"llama\", \"rope_parameters\": {\"rope_type\": \"llama3\", "
             "\"rope_theta\": 500000.0, \"factor\": 8.0, \"low_freq_factor\": 1.0, "
             "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}}",
             NULL, &c));
  CHECK(c.rope_scaling.kind == MX_ROPE_SCALING_LLAMA3 &&
        c.rope_scaling.original_max_position_embeddings == 8192);
  // yarn, resolved as transformers does: original length from max_position_embeddings, betas
  // 32 / 1 for null, attention factor 0.1 ln(4) + 1, or mscale / mscale_all_dim's ratio.
  CHECK_OK(
      parse2("{\"model_type\": \"qwen2\", \"max_position_embeddings\": 32768, "
             "\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0, \"beta_fast\": null}}",
             NULL, &c));
  const mx_rope_scaling_t *r = &c.rope_scaling;
  CHECK(r->kind == MX_ROPE_SCALING_YARN && r->original_max_position_embeddings == 32768);
  CHECK(r->beta_fast == 32 && r->beta_slow == 1 && r->truncate);
  CHECK_NEAR(r->attention_factor, 0.1 * log(4.0) + 1, 1e-12);
  CHECK_OK(
      parse2("{\"model_type\": \"llama\", \"max_position_embeddings\": 16384, "
             "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": null, \"mscale\": 1, "
             "\"mscale_all_dim\": 0.5, \"original_max_position_embeddings\": 4096}}",
             NULL, &c));
  CHECK(r->factor == 4.0 && r->original_max_position_embeddings == 4096);
  CHECK_NEAR(r->attention_factor, (0.1 * log(4.0) + 1) / (0.05 * log(4.0) + 1), 1e-12);
  // longrope: a top-level original_max_position_embeddings wins; factor from the lengths.
  CHECK_OK(
      parse2("{\"model_type\": \"llama\", \"num_attention_heads\": 8, \"hidden_size\": 64, "
             "\"max_position_embeddings\": 131072, \"original_max_position_embeddings\": "
             "4096, \"rope_scaling\": {\"rope_type\": \"longrope\", \"short_factor\": [1, 2, "
             "3, 4], \"long_factor\": [5, 6, 7, 8], \"original_max_position_embeddings\": 8}}",
             NULL, &c));
  CHECK(r->kind == MX_ROPE_SCALING_LONGROPE && r->original_max_position_embeddings == 4096);
  CHECK(r->n_factors == 4 && r->short_factor[3] == 4.0f && r->long_factor[0] == 5.0f);
  CHECK_NEAR(r->attention_factor, sqrt(1 + log(32.0) / log(4096.0)), 1e-12);
}

static void test_bad_values(void) {
  EXPECT_ERR(parse_with("\"hidden_size\": \"64\""),
             SRC ": hidden_size must be an integer, got a string");
  EXPECT_ERR(parse_with("\"num_attention_heads\": 4.5"),
             SRC ": num_attention_heads must be an integer, got 4.5");
  EXPECT_ERR(parse_with("\"num_hidden_layers\": 1e12"),
             SRC ": num_hidden_layers (1e+12) is out of range");
  EXPECT_ERR(parse_with("\"num_key_value_heads\": 3"),
             SRC ": num_key_value_heads (3) must divide num_attention_heads (8)");
  EXPECT_ERR(
      parse_with("\"hidden_size\": 65"), SRC
      ": hidden_size (65) must be divisible by num_attention_heads (8) when head_dim is absent");
  EXPECT_ERR(parse_with("\"vocab_size\": 0"), SRC ": vocab_size must be positive (got 0)");
  EXPECT_ERR(parse_with("\"hidden_size\": -64"), SRC ": hidden_size must be positive (got -64)");
  EXPECT_ERR(parse_with("\"num_attention_heads\": 0"), "num_attention_heads must be positive");
  EXPECT_ERR(parse_with("\"num_key_value_heads\": 0"), "num_key_value_heads must be positive");
  EXPECT_ERR(parse_with("\"intermediate_size\": 0"), "intermediate_size must be positive");
  EXPECT_ERR(parse_with("\"head_dim\": 0"), "head_dim must be positive");
  EXPECT_ERR(parse_with("\"head_dim\": 7"),
             "head_dim (7) x partial_rotary_factor (1) gives 7 rotary dimensions");
  EXPECT_ERR(parse_with("\"max_position_embeddings\": 0"),
             "max_position_embeddings must be positive");
  EXPECT_ERR(parse_with("\"rms_norm_eps\": 0"), SRC ": rms_norm_eps must be positive (got 0)");
  EXPECT_ERR(parse_with("\"rms_norm_eps\": \"1e-5\""),
             "rms_norm_eps must be a number, got a string");
  EXPECT_ERR(parse_with("\"rope_theta\": -1"), SRC ": rope_theta must be positive (got -1)");
  EXPECT_ERR(parse_with("\"partial_rotary_factor\": 1.5"),
             "partial_rotary_factor (1.5) must be in (0, 1]");
  EXPECT_ERR(parse_with("\"tie_word_embeddings\": \"true\""),
             SRC ": tie_word_embeddings must be true or false, got a string");
  EXPECT_ERR(parse_with("\"attention_bias\": 1"),
             "attention_bias must be true or false, got a number");
  EXPECT_ERR(parse_with("\"hidden_act\": \"gelu\""),
             SRC ": hidden_act 'gelu' is not supported for model_type 'llama' (supported: silu)");
  EXPECT_ERR(parse_with("\"hidden_act\": 3"), "hidden_act must be a string, got a number");
  EXPECT_ERR(parse_with("\"torch_dtype\": \"int8\""), "torch_dtype 'int8' is not supported");
  EXPECT_ERR(parse_with("\"eos_token_id\": \"2\""),
             "eos_token_id must be an integer or a list of integers, got a string");
  EXPECT_ERR(parse_with("\"eos_token_id\": [1, \"x\"]"),
             "eos_token_id[] must be an integer, got a string");
  EXPECT_ERR(parse_with("\"eos_token_id\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]"),
             "lists 17 ids");
  EXPECT_ERR(parse_with("\"bos_token_id\": [1]"), "bos_token_id must be an integer, got an array");
  EXPECT_ERR(parse_with("\"architectures\": \"Llama\""), "architectures must be a list of strings");
  // rope_scaling
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"rope_type\": \"su\", \"factor\": 4.0}"), SRC
             ": rope_scaling.rope_type 'su' is not supported (supported: default, linear, "
             "dynamic, llama3, yarn, longrope)");
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"rope_type\": \"yarn\"}"),
             "rope_scaling.factor is missing (rope_type 'yarn' needs it");
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 0.5}"),
             "rope_scaling.factor must be >= 1 (got 0.5)");
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, "
                        "\"beta_fast\": 1, \"beta_slow\": 8}"),
             "rope_scaling.beta_fast (1) must be >= beta_slow (8)");
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"type\": \"dynamic\"}"),
             "rope_scaling.factor is missing (rope_type 'dynamic' needs it)");
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"rope_type\": \"longrope\"}"),
             "rope_scaling.short_factor is missing (rope_type 'longrope' needs it)");
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"factor\": 2.0}"), "rope_scaling has no rope_type");
  EXPECT_ERR(parse_with("\"rope_scaling\": 2"), "rope_scaling must be an object or null");
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"rope_type\": \"linear\"}"),
             "rope_scaling.factor is missing (rope_type 'linear' needs it)");
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": \"2\"}"),
             "rope_scaling.factor must be a number, got a string");
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, "
                        "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}"),
             "rope_scaling.low_freq_factor is missing");
  EXPECT_ERR(parse_with("\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, "
                        "\"low_freq_factor\": 4.0, \"high_freq_factor\": 4.0, "
                        "\"original_max_position_embeddings\": 8192}"),
             "rope_scaling.high_freq_factor (4) must be greater than low_freq_factor (4)");
  // model_type and JSON shape
  EXPECT_ERR(parse("{\"hidden_size\": 64}"), SRC ": model_type is missing");
  EXPECT_ERR(parse("{\"model_type\": \"gpt2\"}"),
             SRC ": model_type 'gpt2' is not supported (supported: llama, mistral");
  EXPECT_ERR(parse("{\"model_type\": 5}"), "model_type must be a string, got a number");
  EXPECT_ERR(parse("{\"model_type\": \"llama\""), SRC ": not valid JSON");
  EXPECT_ERR(parse("[]"), SRC ": not a JSON object");
  EXPECT_ERR(parse("{} {}"), "trailing bytes after the JSON value");
  EXPECT_ERR(parse(""), "not valid JSON");
  // generation_config.json errors name that file.
  mx_model_config_t c;
  EXPECT_ERR(parse2("{\"model_type\": \"llama\"}", "{\"temperature\": \"hot\"}", &c),
             "models/x/generation_config.json: temperature must be a number, got a string");
  EXPECT_ERR(parse2("{\"model_type\": \"llama\"}", "{\"top_p\": 1.5}", &c),
             "generation_config.json: top_p (1.5) must be in (0, 1]");
  EXPECT_ERR(parse2("{\"model_type\": \"llama\"}", "{\"top_k\": -1}", &c),
             "top_k (-1) must not be negative");
  EXPECT_ERR(parse2("{\"model_type\": \"llama\"}", "{\"temperature\": -1}", &c),
             "temperature (-1) must not be negative");
  EXPECT_ERR(parse2("{\"model_type\": \"llama\"}", "{\"eos_token_id\": {}}", &c),
             "generation_config.json: eos_token_id must be an integer or a list");
  EXPECT_ERR(parse2("{\"model_type\": \"llama\"}", "nope", &c),
             "generation_config.json: not valid JSON");
}

static void test_load_dirs(const char *shared) {
  char dir[512];
  mx_model_config_t c;
  snprintf(dir, sizeof dir, "%s/models/stories260K/hf", shared);
  CHECK_OK(mx_config_load(dir, &c));
  CHECK(c.vocab_size == 512 && c.hidden_size == 64 && c.intermediate_size == 172);
  CHECK(c.num_layers == 5 && c.num_heads == 8 && c.num_kv_heads == 4 && c.head_dim == 8);
  CHECK(c.max_position_embeddings == 512 && c.rms_norm_eps == 1e-5 && c.tie_word_embeddings);
  CHECK(c.bos_token_id == 1 && c.n_eos == 1 && c.eos_token_ids[0] == 2 && c.dtype == MX_ELEM_F32);
  snprintf(dir, sizeof dir, "%s/models/stories260K/mlx-q4", shared);
  CHECK_OK(mx_config_load(dir, &c));  // the quantization block is not interpreted here
  CHECK(c.dtype == MX_ELEM_F16 && c.num_layers == 5);

  snprintf(dir, sizeof dir, "%s/fixtures/llama", shared);
  CHECK_OK(mx_config_load(dir, &c));
  CHECK(c.rope_scaling.kind == MX_ROPE_SCALING_LLAMA3 && c.rope_scaling.factor == 8.0);
  CHECK(c.rope_scaling.low_freq_factor == 1.0 && c.rope_scaling.high_freq_factor == 4.0);
  CHECK(c.rope_scaling.original_max_position_embeddings == 64 && c.rope_theta == 500000.0);
  CHECK(c.head_dim == 16 && c.num_kv_heads == 2 && !c.tie_word_embeddings && c.vocab_size == 512);

  // The other families' fixtures (their parsing in detail: test_families_config.c).
  snprintf(dir, sizeof dir, "%s/fixtures/mistral", shared);
  CHECK_OK(mx_config_load(dir, &c));
  CHECK(c.sliding_window == 8 && c.layer_sliding[0] && c.layer_sliding[2] && c.rope_theta == 1e6);
  snprintf(dir, sizeof dir, "%s/fixtures/qwen2", shared);
  CHECK_OK(mx_config_load(dir, &c));
  CHECK(c.sliding_window == 0 && c.tie_word_embeddings && c.rms_norm_eps == 1e-6);
  snprintf(dir, sizeof dir, "%s/fixtures/qwen3", shared);
  CHECK_OK(mx_config_load(dir, &c));
  CHECK(c.head_dim == 32 && c.hidden_size == 64 && c.num_heads == 4);
  snprintf(dir, sizeof dir, "%s/fixtures/gemma", shared);
  CHECK_OK(mx_config_load(dir, &c));
  CHECK(c.tie_word_embeddings && strcmp(c.hidden_act, "gelu_pytorch_tanh") == 0);
  CHECK(c.bos_token_id == 2 && c.n_eos == 1 && c.eos_token_ids[0] == 1 && c.pad_token_id == 0);
  snprintf(dir, sizeof dir, "%s/fixtures/gemma2", shared);
  CHECK_OK(mx_config_load(dir, &c));
  CHECK(c.query_pre_attn_scalar == 24 && c.attn_logit_softcapping == 1.0);
  CHECK(c.final_logit_softcapping == 2.0 && c.sliding_window == 8);
  CHECK(c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[2] && !c.layer_sliding[3]);
  snprintf(dir, sizeof dir, "%s/fixtures/gemma3", shared);
  CHECK_OK(mx_config_load(dir, &c));
  CHECK(strcmp(c.model_type, "gemma3_text") == 0 && c.rope_local_base_freq == 10000.0);
  CHECK(c.rope_scaling.kind == MX_ROPE_SCALING_LINEAR && c.rope_scaling.factor == 8.0);
  CHECK(c.layer_sliding[4] && !c.layer_sliding[5] && c.attn_logit_softcapping == 0.0);
  snprintf(dir, sizeof dir, "%s/fixtures/phi3", shared);
  CHECK_OK(mx_config_load(dir, &c));
  CHECK(c.partial_rotary_factor == 0.75 && c.sliding_window == 8 && c.layer_sliding[1]);
}

static void test_missing_config(void) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s/mx_config_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmp)) return;
  mx_model_config_t c;
  mx_status_t st = mx_config_load(tmp, &c);
  EXPECT_ERR(st, "config.json");
  CHECK(st == MX_ERR_IO);
  char path[512];
  snprintf(path, sizeof path, "%s/config.json", tmp);
  FILE *f = fopen(path, "w");
  fputs("{\"model_type\": \"llama\", \"vocab_size\": 0}", f);
  fclose(f);
  snprintf(path, sizeof path, "config.json: vocab_size must be positive (got 0)");
  EXPECT_ERR(mx_config_load(tmp, &c), path);
  snprintf(path, sizeof path, "%s/config.json", tmp);
  unlink(path);
  rmdir(tmp);
}

int main(void) {
  test_defaults();
  test_rope_and_generation();
  test_bad_values();
  test_missing_config();
  const char *shared = getenv("MX_SHARED");
  char probe[512];
  snprintf(probe, sizeof probe, "%s/fixtures/llama/config.json", shared ? shared : "");
  if (shared && access(probe, R_OK) == 0) {
    test_load_dirs(shared);
  } else {
    mx_test_skip("MX_SHARED not set or without fixtures: shared configs not tested");
  }
  return mx_test_finish();
}
