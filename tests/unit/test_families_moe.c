// config.json parsing of the mixture-of-experts families (mixtral, qwen2_moe, qwen3_moe, olmoe,
// gpt_oss): transformers' defaults (absent keys, gpt-oss's default YaRN dict and alternating
// windows), the expert-count aliases, the sparse layers Qwen's decoder_sparse_step and
// mlp_only_layers select, and the refusals, each naming the field.
// Their numerics are checked by unit_family_<type> and unit_family_cpu_<type> on checkpoints
// transformers wrote (tests/data/families).
#include <stdio.h>
#include <string.h>

#include "mlxcel/model.h"
#include "mx_test.h"

#define SRC "m/config.json"

static mx_status_t parse(const char *json, mx_model_config_t *c) {
  return mx_config_parse(json, strlen(json), NULL, 0, SRC, c);
}

// Layers [0, n) as 'D' (dense MLP) / 'M' (experts).
static void expect_dense_(const mx_model_config_t *c, const char *want, const char *file,
                          int line) {
  char got[64];
  int32_t n = (int32_t)strlen(want);
  for (int32_t l = 0; l < n; l++) got[l] = c->layer_dense[l] ? 'D' : 'M';
  got[n] = '\0';
  if (strcmp(got, want) == 0) {
    mx_test_passed_++;
  } else {
    mx_test_failed_++;
    fprintf(stderr, "%s:%d: layers %s, expected %s\n", file, line, got, want);
  }
}
#define EXPECT_DENSE(c, want) expect_dense_((c), (want), __FILE__, __LINE__)

static void test_mixtral(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"mixtral\"}", &c));
  CHECK(c.num_experts == 8 && c.num_experts_per_tok == 2 && c.norm_topk_prob);
  CHECK(c.moe_intermediate_size == 14336 && c.shared_expert_intermediate_size == 0);
  CHECK(c.rope_theta == 1e6 && c.sliding_window == 0 && c.rms_norm_eps == 1e-5);
  EXPECT_DENSE(&c, "MMMM");
  CHECK_OK(
      parse("{\"model_type\": \"mixtral\", \"num_experts\": 4, \"intermediate_size\": 96, "
            "\"sliding_window\": 4096}",
            &c));
  CHECK(c.num_experts == 4 && c.moe_intermediate_size == 96 && c.sliding_window == 4096);
  EXPECT_ERR(parse("{\"model_type\": \"mixtral\", \"num_experts_per_tok\": 9}", &c),
             SRC ": num_experts_per_tok must be in [1, num_local_experts = 8], got 9");
  EXPECT_ERR(parse("{\"model_type\": \"mixtral\", \"num_local_experts\": 0}", &c),
             SRC ": num_local_experts is 0; a model without experts is not supported");
  EXPECT_ERR(parse("{\"model_type\": \"mixtral\", \"num_experts\": 4, "
                   "\"num_local_experts\": 8}",
                   &c),
             SRC ": num_experts (4) and num_local_experts (8) differ");
}

static void test_qwen_moe(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"qwen2_moe\"}", &c));
  CHECK(c.num_experts == 60 && c.num_experts_per_tok == 4 && !c.norm_topk_prob);
  CHECK(c.moe_intermediate_size == 1408 && c.shared_expert_intermediate_size == 5632);
  CHECK(c.intermediate_size == 5632 && c.attention_bias && c.num_kv_heads == 16);
  EXPECT_DENSE(&c, "MMMM");
  CHECK_OK(
      parse("{\"model_type\": \"qwen2_moe\", \"num_hidden_layers\": 6, "
            "\"decoder_sparse_step\": 2, \"mlp_only_layers\": [5], \"qkv_bias\": false}",
            &c));
  EXPECT_DENSE(&c, "DMDMDD");
  CHECK(!c.attention_bias);
  EXPECT_ERR(parse("{\"model_type\": \"qwen2_moe\", \"use_sliding_window\": true}", &c),
             SRC ": use_sliding_window true is not supported for model_type 'qwen2_moe'");
  EXPECT_ERR(parse("{\"model_type\": \"qwen2_moe\", \"decoder_sparse_step\": 0}", &c),
             SRC ": decoder_sparse_step must be >= 1, got 0");
  EXPECT_ERR(parse("{\"model_type\": \"qwen2_moe\", \"mlp_only_layers\": [24]}", &c),
             SRC ": mlp_only_layers holds an out-of-range value, not a layer index below 24");
  EXPECT_ERR(parse("{\"model_type\": \"qwen2_moe\", \"shared_expert_intermediate_size\": 0}", &c),
             SRC ": shared_expert_intermediate_size must be positive");

  CHECK_OK(parse("{\"model_type\": \"qwen3_moe\"}", &c));
  CHECK(c.num_experts == 128 && c.num_experts_per_tok == 8 && !c.norm_topk_prob);
  CHECK(c.moe_intermediate_size == 768 && c.shared_expert_intermediate_size == 0);
  CHECK(c.head_dim == 64 && c.num_kv_heads == 4 && !c.attention_bias);
  CHECK_OK(
      parse("{\"model_type\": \"qwen3_moe\", \"num_local_experts\": 16, \"head_dim\": 128, "
            "\"norm_topk_prob\": true}",
            &c));
  CHECK(c.num_experts == 16 && c.head_dim == 128 && c.norm_topk_prob);
  EXPECT_ERR(parse("{\"model_type\": \"qwen3_moe\", \"use_sliding_window\": true}", &c),
             SRC ": use_sliding_window true is not supported for model_type 'qwen3_moe'");
}

static void test_olmoe(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"olmoe\"}", &c));
  CHECK(c.num_experts == 64 && c.num_experts_per_tok == 8 && !c.norm_topk_prob);
  CHECK(c.moe_intermediate_size == 2048 && c.eos_token_ids[0] == 50279 && c.pad_token_id == 1);
  CHECK(c.bos_token_id == -1 && c.num_kv_heads == 16);
  CHECK_OK(parse("{\"model_type\": \"olmoe\", \"clip_qkv\": null}", &c));
  EXPECT_ERR(parse("{\"model_type\": \"olmoe\", \"clip_qkv\": 8.0}", &c),
             SRC ": clip_qkv is not supported for model_type 'olmoe'");
}

static void test_gpt_oss(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"gpt_oss\"}", &c));
  CHECK(c.num_experts == 128 && c.num_experts_per_tok == 4 && c.norm_topk_prob);
  CHECK(c.moe_intermediate_size == 2880 && c.hidden_size == 2880 && c.num_layers == 36);
  CHECK(c.num_heads == 64 && c.num_kv_heads == 8 && c.head_dim == 64 && c.vocab_size == 201088);
  CHECK(c.attention_bias && c.sliding_window == 128 && c.rope_theta == 150000.0);
  CHECK(c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[34] && !c.layer_sliding[35]);
  CHECK(c.swiglu_alpha == 1.702 && c.swiglu_limit == 7.0);
  // GptOssConfig.__post_init__'s rope_parameters.
  const mx_rope_scaling_t *r = &c.rope_scaling;
  CHECK(r->kind == MX_ROPE_SCALING_YARN && r->factor == 32.0 && !r->truncate);
  CHECK(r->original_max_position_embeddings == 4096 && r->beta_fast == 32.0 && r->beta_slow == 1.0);
  CHECK_OK(
      parse("{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 3, \"layer_types\": "
            "[\"full_attention\", \"sliding_attention\", \"full_attention\"], "
            "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 5e5}, "
            "\"attention_bias\": false, \"num_experts\": 32, \"swiglu_limit\": 3.5}",
            &c));
  CHECK(!c.layer_sliding[0] && c.layer_sliding[1] && !c.layer_sliding[2]);
  CHECK(c.rope_scaling.kind == MX_ROPE_SCALING_NONE && c.rope_theta == 5e5);
  CHECK(!c.attention_bias && c.num_experts == 32 && c.swiglu_limit == 3.5);
  EXPECT_ERR(parse("{\"model_type\": \"gpt_oss\", \"swiglu_limit\": 0}", &c),
             SRC ": swiglu_limit must be positive for model_type 'gpt_oss' (got 0)");
  EXPECT_ERR(parse("{\"model_type\": \"gpt_oss\", \"num_experts_per_tok\": 200}", &c),
             SRC ": num_experts_per_tok must be in [1, num_local_experts = 128], got 200");
  EXPECT_ERR(parse("{\"model_type\": \"gpt_oss\", \"rope_parameters\": {\"rope_type\": "
                   "\"yarn\", \"factor\": 32.0, \"beta_fast\": \"x\"}}",
                   &c),
             "rope_parameters.beta_fast");
}

int main(void) {
  test_gpt_oss();
  test_mixtral();
  test_qwen_moe();
  test_olmoe();
  return mx_test_finish();
}
