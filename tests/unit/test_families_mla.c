// config.json parsing of the multi-latent attention families (deepseek_v2, deepseek_v3):
// transformers' defaults (absent keys), head_dim replaced by qk_rope_head_dim, q_lora_rank null,
// rope_interleave, YaRN's mscale_all_dim, the KV cache shapes (the latent and the rotated key,
// ADR 0012) and the refusals, each naming the field. Their numerics are checked by
// unit_family_<type> and unit_family_cpu_<type> on checkpoints transformers wrote.
#include <string.h>

#include "mlxcel/model.h"
#include "mx_test.h"

#define SRC "m/config.json"

static mx_status_t parse(const char *json, mx_model_config_t *c) {
  return mx_config_parse(json, strlen(json), NULL, 0, SRC, c);
}

static void test_defaults(void) {
  mx_model_config_t c;
  // Every layer dense: the mixture-of-experts layers are refused for now (below).
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

static void test_refusals(void) {
  mx_model_config_t c;
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v2\"}", &c), SRC
             ": first_k_dense_replace (0) < num_hidden_layers (32): the mixture-of-experts "
             "layers of model_type 'deepseek_v2' are not supported yet");
  EXPECT_ERR(parse("{\"model_type\": \"deepseek_v3\"}", &c), SRC
             ": first_k_dense_replace (3) < num_hidden_layers (61): the mixture-of-experts "
             "layers of model_type 'deepseek_v3' are not supported yet");
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

int main(void) {
  test_defaults();
  test_refusals();
  return mx_test_finish();
}
