// config.json parsing of the multi-latent attention families (deepseek_v2, deepseek_v3, youtu):
// transformers' defaults (absent keys), head_dim replaced by qk_rope_head_dim, q_lora_rank null,
// rope_interleave, YaRN's mscale_all_dim, the KV cache shapes (the latent and the rotated key,
// ADR 0012), the mixture of experts (dense layers, routing, shared experts, aliases) and the
// refusals, each naming the field; Youtu-LLM's defaults, always dense. Their numerics are checked
// by unit_family_<type> and unit_family_cpu_<type> on checkpoints transformers wrote.
#include <string.h>

#include "mlxcel/model.h"
#include "mx_test.h"

#define SRC "m/config.json"

static mx_status_t parse(const char *json, mx_model_config_t *c) {
  return mx_config_parse(json, strlen(json), NULL, 0, SRC, c);
}

static void test_defaults(void) {
  mx_model_config_t c;
  // Every layer dense (no experts read).
  CHECK_OK(parse("{\"model_type\": \"deepseek_v2\", \"first_k_dense_replace\": 32}", &c));
  CHECK(c.vocab_size == 102400 && c.hidden_size == 4096 && c.num_layers == 32);
  CHECK(c.num_heads == 32 && c.num_kv_heads == 32 && c.head_dim == 64);
  CHECK(c.kv_lora_rank == 512 && c.q_lora_rank == 1536 && c.qk_nope_head_dim == 128);
  CHECK(c.qk_rope_head_dim == 64 && c.v_head_dim == 128 && c.rope_interleave);
  CHECK(c.max_position_embeddings == 2048 && c.rms_norm_eps == 1e-6 && c.bos_token_id == 1);
  int64_t hw[2];
  mx_config_cache_dims(&c, 0, hw);
  CHECK(hw[0] == 1 && hw[1] == 512);
  mx_config_cache_dims(&c, 5, hw);
  CHECK(hw[0] == 1 && hw[1] == 64);

  CHECK_OK(parse("{\"model_type\": \"deepseek_v3\", \"first_k_dense_replace\": 61}", &c));
  CHECK(c.vocab_size == 129280 && c.hidden_size == 7168 && c.num_layers == 61);
  CHECK(c.num_heads == 128 && c.num_kv_heads == 128 && c.head_dim == 64);
  CHECK(c.kv_lora_rank == 512 && c.q_lora_rank == 1536 && c.rope_interleave);
  CHECK(c.max_position_embeddings == 4096 && c.bos_token_id == 0);

  // head_dim follows qk_rope_head_dim whatever the file says; q_lora_rank null: q_proj.
  CHECK_OK(
      parse("{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 2, "
            "\"first_k_dense_replace\": 2, \"head_dim\": 96, \"qk_rope_head_dim\": 32, "
            "\"q_lora_rank\": null, \"rope_interleave\": false, \"kv_lora_rank\": 48, "
            "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 40, "
            "\"original_max_position_embeddings\": 4096, \"mscale\": 1.0, "
            "\"mscale_all_dim\": 1.0}}",
            &c));
  CHECK(c.head_dim == 32 && c.q_lora_rank == 0 && !c.rope_interleave);
  CHECK(c.rope_scaling.mscale_all_dim == 1.0);
  mx_config_cache_dims(&c, 2, hw);
  CHECK(hw[0] == 1 && hw[1] == 48);

  // Ordinary attention: both caches [num_kv_heads, head_dim].
  CHECK_OK(parse("{\"model_type\": \"llama\", \"num_key_value_heads\": 8}", &c));
  mx_config_cache_dims(&c, 1, hw);
  CHECK(hw[0] == 8 && hw[1] == 128);
}

static void test_moe(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"deepseek_v2\", \"num_experts_per_tok\": 6}", &c));
  CHECK(c.num_experts == 64 && c.num_experts_per_tok == 6 && c.moe_intermediate_size == 1407);
  CHECK(c.shared_expert_intermediate_size == 2 * 1407 && c.routed_scaling_factor == 1.0);
  CHECK(!c.moe_sigmoid && c.moe_groups == 0 && !c.norm_topk_prob && !c.layer_dense[0]);
  // group_limited_greedy; V2's norm_topk_prob is read by nobody in transformers.
  CHECK_OK(
      parse("{\"model_type\": \"deepseek_v2\", \"num_hidden_layers\": 4, "
            "\"num_experts_per_tok\": 6, \"n_routed_experts\": 160, \"n_group\": 8, "
            "\"topk_group\": 3, \"topk_method\": \"group_limited_greedy\", "
            "\"first_k_dense_replace\": 1, \"norm_topk_prob\": true, "
            "\"routed_scaling_factor\": 16.0}",
            &c));
  CHECK(c.num_experts == 160 && c.moe_groups == 8 && c.moe_topk_groups == 3);
  CHECK(!c.norm_topk_prob && c.routed_scaling_factor == 16.0);
  CHECK(c.layer_dense[0] && !c.layer_dense[1] && !c.layer_dense[3]);
  CHECK_OK(
      parse("{\"model_type\": \"deepseek_v2\", \"num_experts\": 16, "
            "\"num_experts_per_tok\": 2}",
            &c));
  CHECK(c.num_experts == 16);

  CHECK_OK(parse("{\"model_type\": \"deepseek_v3\"}", &c));
  CHECK(c.num_experts == 256 && c.num_experts_per_tok == 8 && c.moe_intermediate_size == 2048);
  CHECK(c.shared_expert_intermediate_size == 2048 && c.routed_scaling_factor == 2.5);
  CHECK(c.moe_sigmoid && c.moe_groups == 8 && c.moe_topk_groups == 4 && c.norm_topk_prob);
  CHECK(c.layer_dense[0] && c.layer_dense[2] && !c.layer_dense[3] && !c.layer_dense[60]);
}

static void test_refusals(void) {
  mx_model_config_t c;
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v2\"}", &c),
             SRC ": num_experts_per_tok must be in [1, n_routed_experts = 64], got 0");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v2\", \"num_experts_per_tok\": null}", &c),
             SRC ": num_experts_per_tok must not be null");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v2\", \"num_experts_per_tok\": 6, "
                   "\"topk_method\": \"noaux_tc\"}",
                   &c),
             SRC ": topk_method \"noaux_tc\" is not supported for model_type 'deepseek_v2'");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v2\", \"num_experts_per_tok\": 6, "
                   "\"topk_method\": \"group_limited_greedy\"}",
                   &c),
             SRC ": n_group (0) must divide n_routed_experts (64), topk_group (0) be in");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v3\", \"n_group\": 64, \"topk_group\": 1}", &c),
             "num_experts_per_tok (8) at most topk_group x the experts per group");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v3\", \"n_group\": 256}", &c),
             SRC ": n_group (256) must divide n_routed_experts (256) into groups of 2 or more");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v3\", \"moe_layer_freq\": 2}", &c),
             SRC ": moe_layer_freq 2 is not supported");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v2\", \"n_routed_experts\": 8, "
                   "\"num_experts\": 16, \"num_experts_per_tok\": 2}",
                   &c),
             SRC ": n_routed_experts (8) and num_experts (16) differ");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v2\", \"first_k_dense_replace\": 32, "
                   "\"num_key_value_heads\": 8}",
                   &c),
             SRC ": num_key_value_heads (8) must equal num_attention_heads (32)");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v3\", \"num_attention_heads\": 256}", &c),
             SRC ": num_key_value_heads (128) must equal num_attention_heads (256)");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v2\", \"q_lora_rank\": 0}", &c),
             SRC ": q_lora_rank must be positive or null");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v2\", \"qk_rope_head_dim\": 7}", &c),
             SRC ": qk_rope_head_dim (7) must be even");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v2\", \"kv_lora_rank\": 0}", &c),
             SRC ": kv_lora_rank must be positive (got 0)");
}

// Youtu-LLM: YoutuConfig's defaults (Youtu-LLM-2B, a tied head), DeepSeek-V3's attention
// fields, no mixture of experts whatever expert keys the file has (YoutuModel builds none), no
// MLP biases; the attention's refusals are DeepSeek's.
static void test_youtu(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"youtu\"}", &c));
  CHECK(c.vocab_size == 128256 && c.hidden_size == 2048 && c.intermediate_size == 6144);
  CHECK(c.num_layers == 32 && c.num_heads == 16 && c.num_kv_heads == 16 && c.head_dim == 64);
  CHECK(c.kv_lora_rank == 512 && c.q_lora_rank == 1536 && c.qk_nope_head_dim == 128);
  CHECK(c.qk_rope_head_dim == 64 && c.v_head_dim == 128 && c.rope_interleave);
  CHECK(c.max_position_embeddings == 131072 && c.rms_norm_eps == 1e-6);
  CHECK(c.tie_word_embeddings && c.bos_token_id == 128000 && c.num_experts == 0);
  int64_t hw[2];
  mx_config_cache_dims(&c, 62, hw);  // layer 31's latent, then its rotated key
  CHECK(hw[0] == 1 && hw[1] == 512);
  mx_config_cache_dims(&c, 63, hw);
  CHECK(hw[0] == 1 && hw[1] == 64);
  CHECK_OK(
      parse("{\"model_type\": \"youtu\", \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, "
            "\"first_k_dense_replace\": 1, \"mlp_bias\": true, \"rope_interleave\": false, "
            "\"q_lora_rank\": null, \"tie_word_embeddings\": false}",
            &c));
  CHECK(c.num_experts == 0 && !c.layer_dense[1] && !c.mlp_bias && !c.rope_interleave);
  CHECK(c.q_lora_rank == 0 && !c.tie_word_embeddings);
  EXPECT_ERR(parse("{\"model_type\": \"youtu\", \"num_key_value_heads\": 4}", &c), SRC
             ": num_key_value_heads (4) must equal num_attention_heads (16) for model_type "
             "'youtu'");
  EXPECT_ERR(parse("{\"model_type\": \"youtu\", \"hidden_act\": \"relu\"}", &c),
             SRC ": hidden_act 'relu' is not supported for model_type 'youtu'");
  EXPECT_ERR(parse("{\"model_type\": \"youtu\", \"qk_rope_head_dim\": 9}", &c),
             SRC ": qk_rope_head_dim (9) must be even");
}

int main(void) {
  test_defaults();
  test_moe();
  test_refusals();
  test_youtu();
  return mx_test_finish();
}
