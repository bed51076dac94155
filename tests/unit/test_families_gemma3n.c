// Gemma 3n's config.json (gemma3n_text and the full checkpoint's nested text_config):
// Gemma3nTextConfig's defaults, per-layer sizes and sparsities, the KV-sharing layers and the
// weights they lack, and refusals naming the field. The numbers of the model itself are held
// by the fixtures tests/data/families/gemma3n_text and gemma3n (unit_family_*).
#include <stdio.h>
#include <string.h>

#include "mlxcel/model.h"
#include "mx_test.h"

#define SRC "m/config.json"

static mx_status_t parse(const char *json, mx_model_config_t *c) {
  return mx_config_parse(json, strlen(json), NULL, 0, SRC, c);
}

typedef struct names {
  int32_t n, kv, sparse_ok;
  bool has_l0_k, has_l34_k, has_pli;
} names_t;

static mx_status_t visit(void *user, const char *name, int32_t rank, const int64_t *dims) {
  names_t *s = user;
  s->n++;
  if (strstr(name, "self_attn.k_proj.weight")) s->kv++;
  if (strcmp(name, "model.layers.0.self_attn.k_proj.weight") == 0) s->has_l0_k = true;
  if (strcmp(name, "model.layers.34.self_attn.k_proj.weight") == 0) s->has_l34_k = true;
  if (strcmp(name, "model.embed_tokens_per_layer.weight") == 0) {
    s->has_pli = rank == 2 && dims[0] == 262144 && dims[1] == 35 * 256;
  }
  return MX_OK;
}

// Gemma3nTextConfig() is the E4B text model.
static void test_defaults(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"gemma3n_text\"}", &c));
  CHECK(c.num_layers == 35 && c.hidden_size == 2048 && c.vocab_size == 262400);
  CHECK(c.num_heads == 8 && c.num_kv_heads == 2 && c.head_dim == 256);
  CHECK(c.altup_num_inputs == 4 && c.altup_active_idx == 0 && c.altup_correct_scale);
  CHECK(c.hidden_size_per_layer_input == 256 && c.vocab_size_per_layer_input == 262144);
  CHECK(c.laurel_rank == 64 && c.num_kv_shared_layers == 15 && c.sliding_window == 512);
  CHECK(c.final_logit_softcapping == 30.0 && c.rope_theta == 1000000.0);
  CHECK(c.rope_local_base_freq == 10000.0 && c.tie_word_embeddings);
  // Every fifth layer full; 0.95 sparsity on the first ten; one intermediate size for all.
  CHECK(c.layer_sliding[0] && !c.layer_sliding[4] && c.layer_sliding[5] && !c.layer_sliding[34]);
  CHECK(c.layer_sparsity[9] == 0.95f && c.layer_sparsity[10] == 0.0f);
  CHECK(c.layer_ffn[0] == 16384 && c.layer_ffn[34] == 16384);
  // Layers 20 .. 34 read the caches of layers 18 (sliding) and 19 (full): no k / v of their own.
  names_t s = {0};
  CHECK_OK(mx_model_list_weights(&c, visit, &s));
  CHECK(s.kv == 20 && s.has_l0_k && !s.has_l34_k && s.has_pli);
  // Few layers: no sparsity by default (transformers: only with more than 10 layers).
  CHECK_OK(
      parse("{\"model_type\": \"gemma3n_text\", \"num_hidden_layers\": 10, "
            "\"num_kv_shared_layers\": 5}",
            &c));
  CHECK(c.layer_sparsity[0] == 0.0f && c.layer_sliding[3] && !c.layer_sliding[9]);
}

// The full checkpoint: text_config nested, token ids and dtype at the top.
static void test_nested(void) {
  mx_model_config_t c;
  CHECK_OK(
      parse("{\"model_type\": \"gemma3n\", \"dtype\": \"bfloat16\", \"eos_token_id\": [1, "
            "106], \"text_config\": {\"model_type\": \"gemma3n_text\", \"num_hidden_layers\": "
            "30, \"num_kv_shared_layers\": 10, \"intermediate_size\": [8192, 8192, 8192, "
            "8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, "
            "8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, "
            "4096]}, \"audio_config\": {\"hidden_size\": 1536}}",
            &c));
  CHECK(strcmp(c.model_type, "gemma3n") == 0 && c.dtype == MX_ELEM_BF16);
  CHECK(c.num_layers == 30 && c.num_kv_shared_layers == 10 && c.layer_ffn[29] == 4096);
  CHECK(c.n_eos == 2 && c.eos_token_ids[1] == 106);
}

static void test_refusals(void) {
  mx_model_config_t c;
  EXPECT_ERR(parse("{\"model_type\": \"gemma3n_text\", \"hidden_activation\": \"silu\"}", &c),
             "hidden_activation silu is not supported for gemma3n");
  EXPECT_ERR(parse("{\"model_type\": \"gemma3n_text\", \"altup_active_idx\": 4}", &c),
             SRC ": altup_active_idx 4 is not one of the 4 streams");
  EXPECT_ERR(parse("{\"model_type\": \"gemma3n_text\", \"altup_num_inputs\": 0}", &c),
             "altup_num_inputs must be positive");
  EXPECT_ERR(parse("{\"model_type\": \"gemma3n_text\", \"num_kv_shared_layers\": 35}", &c),
             "num_kv_shared_layers 35 must be in [0, 35)");
  EXPECT_ERR(parse("{\"model_type\": \"gemma3n_text\", \"num_hidden_layers\": 4, "
                   "\"num_kv_shared_layers\": 2, \"layer_types\": [\"sliding_attention\", "
                   "\"sliding_attention\", \"full_attention\", \"full_attention\"]}",
                   &c),
             "layer 2 shares the KV of a full layer, and none of the first 2 layers is one");
  EXPECT_ERR(parse("{\"model_type\": \"gemma3n_text\", \"num_hidden_layers\": 2, "
                   "\"num_kv_shared_layers\": 0, \"intermediate_size\": [64]}",
                   &c),
             "intermediate_size has 1 sizes for 2 layers");
  EXPECT_ERR(parse("{\"model_type\": \"gemma3n_text\", \"num_hidden_layers\": 2, "
                   "\"num_kv_shared_layers\": 0, \"activation_sparsity_pattern\": [0.5, 1.0]}",
                   &c),
             "activation_sparsity_pattern[1] must be a number in [0, 1)");
  EXPECT_ERR(parse("{\"model_type\": \"gemma3n\", \"text_config\": {\"laurel_rank\": 0}}", &c),
             SRC ": text_config.laurel_rank must be positive");
}

int main(void) {
  test_defaults();
  test_nested();
  test_refusals();
  return mx_test_finish();
}
