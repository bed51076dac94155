// config.json parsing of the dense families added after Phi-3 (granite, smollm3, olmo2, olmo3,
// seed_oss, exaone4, starcoder2, stablelm, cohere, cohere2, internlm3, exaone): transformers'
// defaults (absent keys), the derived per-layer facts
// (NoPE layers, sliding layers, RoPE bases) and the refusals of what the engine does not
// implement, each naming the field. Their numerics are checked by unit_family_<type> and
// unit_family_cpu_<type> on checkpoints transformers wrote (tests/data/families).
#include <stdio.h>
#include <string.h>

#include "mlxcel/model.h"
#include "mx_test.h"

#define SRC "m/config.json"

static mx_status_t parse(const char *json, mx_model_config_t *c) {
  return mx_config_parse(json, strlen(json), NULL, 0, SRC, c);
}

// Layers [0, n) as a string of 'S' (sliding) / 'F' (full) and of 'N' (NoPE) / 'R' (RoPE).
static void layer_string(const mx_model_config_t *c, bool nope, char *out, int32_t n) {
  for (int32_t l = 0; l < n; l++) {
    out[l] = nope ? (c->layer_nope[l] ? 'N' : 'R') : (c->layer_sliding[l] ? 'S' : 'F');
  }
  out[n] = '\0';
}

static void expect_layers_(const mx_model_config_t *c, bool nope, const char *want,
                           const char *file, int line) {
  char got[64];
  layer_string(c, nope, got, (int32_t)strlen(want));
  if (strcmp(got, want) == 0) {
    mx_test_passed_++;
  } else {
    mx_test_failed_++;
    fprintf(stderr, "%s:%d: layers %s, expected %s\n", file, line, got, want);
  }
}
#define EXPECT_SLIDING(c, want) expect_layers_((c), false, (want), __FILE__, __LINE__)
#define EXPECT_NOPE(c, want) expect_layers_((c), true, (want), __FILE__, __LINE__)

static void test_granite(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"granite\"}", &c));
  // Every multiplier defaults to 1: the attention scale is 1, not head_dim^-0.5.
  CHECK(c.embedding_multiplier == 1.0 && c.residual_multiplier == 1.0);
  CHECK(c.attention_multiplier == 1.0 && c.logits_multiplier == 1.0);
  CHECK(c.vocab_size == 32000 && c.num_kv_heads == 32 && !c.tie_word_embeddings);
  CHECK_OK(
      parse("{\"model_type\": \"granite\", \"logits_scaling\": 8, \"attention_multiplier\": "
            "0.0078125, \"embedding_multiplier\": 12, \"residual_multiplier\": 0.22}",
            &c));
  CHECK(c.logits_multiplier == 0.125 && c.attention_multiplier == 0.0078125);
  CHECK(c.embedding_multiplier == 12.0 && c.residual_multiplier == 0.22);
  EXPECT_ERR(parse("{\"model_type\": \"granite\", \"logits_scaling\": 0}", &c),
             SRC ": logits_scaling must be positive (got 0)");
  EXPECT_ERR(parse("{\"model_type\": \"granite\", \"residual_multiplier\": -1}", &c),
             "residual_multiplier must be positive");
  EXPECT_ERR(parse("{\"model_type\": \"granite\", \"hidden_act\": \"relu\"}", &c),
             "hidden_act 'relu' is not supported for model_type 'granite'");
}

static void test_smollm3(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"smollm3\"}", &c));
  CHECK(c.num_layers == 36 && c.num_kv_heads == 4 && c.tie_word_embeddings);
  CHECK(c.rope_theta == 2000000.0 && c.sliding_window == 0 && c.pad_token_id == 128004);
  EXPECT_NOPE(&c, "RRRNRRRNRRRN");  // every 4th layer (no_rope_layer_interval)
  EXPECT_SLIDING(&c, "FFFFFFFF");
  CHECK_OK(
      parse("{\"model_type\": \"smollm3\", \"num_hidden_layers\": 6, "
            "\"no_rope_layer_interval\": 3, \"use_sliding_window\": true, "
            "\"sliding_window\": 16}",
            &c));
  EXPECT_NOPE(&c, "RRNRRN");
  EXPECT_SLIDING(&c, "FFSFFS");  // HF's default: the NoPE layers slide
  CHECK(c.sliding_window == 16);
  // layer_types marks sliding layers but use_sliding_window is false: no window anywhere.
  CHECK_OK(
      parse("{\"model_type\": \"smollm3\", \"num_hidden_layers\": 2, \"no_rope_layers\": "
            "[0, 1], \"sliding_window\": 8, \"layer_types\": [\"sliding_attention\", "
            "\"full_attention\"]}",
            &c));
  EXPECT_NOPE(&c, "NR");
  CHECK(c.sliding_window == 0);
  EXPECT_ERR(parse("{\"model_type\": \"smollm3\", \"num_hidden_layers\": 2, \"no_rope_layers\": "
                   "[1]}",
                   &c),
             "no_rope_layers must be a list of num_hidden_layers (2)");
  EXPECT_ERR(parse("{\"model_type\": \"smollm3\", \"num_hidden_layers\": 2, \"no_rope_layers\": "
                   "[1, 2]}",
                   &c),
             "no_rope_layers[1] must be 0 or 1");
  EXPECT_ERR(parse("{\"model_type\": \"smollm3\", \"no_rope_layer_interval\": 0}", &c),
             "no_rope_layer_interval must be positive");
}

static void test_olmo(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"olmo2\"}", &c));
  CHECK(c.vocab_size == 50304 && c.rms_norm_eps == 1e-5 && c.rope_theta == 10000.0);
  CHECK(c.bos_token_id == -1 && c.pad_token_id == 1 && c.n_eos == 1 && c.eos_token_ids[0] == 50279);
  EXPECT_SLIDING(&c, "FFFF");
  CHECK_OK(parse("{\"model_type\": \"olmo3\"}", &c));
  CHECK(c.rope_theta == 500000.0 && c.rope_local_base_freq == 500000.0);
  CHECK(c.sliding_window == 4096);
  EXPECT_SLIDING(&c, "SSSFSSSF");
  // transformers 5: one RoPE entry per layer type.
  CHECK_OK(
      parse("{\"model_type\": \"olmo3\", \"rope_parameters\": {\"full_attention\": "
            "{\"rope_type\": \"default\", \"rope_theta\": 1e6}, \"sliding_attention\": "
            "{\"rope_type\": \"default\", \"rope_theta\": 1e4}}}",
            &c));
  CHECK(c.rope_theta == 1e6 && c.rope_local_base_freq == 1e4);
  // The full-attention layers may scale (yarn in the long-context releases), not the sliding.
  CHECK_OK(
      parse("{\"model_type\": \"olmo3\", \"max_position_embeddings\": 65536, "
            "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"yarn\", "
            "\"factor\": 8, \"rope_theta\": 5e5, \"original_max_position_embeddings\": 8192}, "
            "\"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 5e5}}}",
            &c));
  CHECK(c.rope_scaling.kind == MX_ROPE_SCALING_YARN && c.rope_scaling.factor == 8 &&
        c.rope_scaling.original_max_position_embeddings == 8192 && c.rope_theta == 5e5);
  EXPECT_ERR(parse("{\"model_type\": \"olmo3\", \"rope_parameters\": {\"full_attention\": "
                   "{\"rope_type\": \"ntk\", \"factor\": 8}}}",
                   &c),
             SRC ": rope_parameters.full_attention.rope_type 'ntk' is not supported");
  EXPECT_ERR(parse("{\"model_type\": \"olmo3\", \"rope_parameters\": {\"sliding_attention\": "
                   "{\"rope_type\": \"yarn\", \"factor\": 8}}}",
                   &c),
             SRC
             ": rope_parameters.sliding_attention.rope_type 'yarn' is not supported for "
             "model_type 'olmo3'");
  EXPECT_ERR(parse("{\"model_type\": \"olmo2\", \"rope_scaling\": {\"rope_type\": \"ntk\", "
                   "\"factor\": 8}}",
                   &c),
             "rope_scaling.rope_type 'ntk' is not supported");
}

static void test_seed_oss(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"seed_oss\"}", &c));
  CHECK(c.attention_bias && !c.attention_out_bias && !c.mlp_bias);
  CHECK(c.head_dim == 128 && c.num_heads == 80 && c.num_kv_heads == 8);
  CHECK(c.bos_token_id == 0 && c.pad_token_id == 1 && c.max_position_embeddings == 524288);
  CHECK_OK(
      parse("{\"model_type\": \"seed_oss\", \"attention_bias\": false, "
            "\"attention_out_bias\": true}",
            &c));
  CHECK(!c.attention_bias && c.attention_out_bias);
}

static void test_exaone4(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"exaone4\"}", &c));
  CHECK(c.vocab_size == 102400 && c.num_kv_heads == 32 && c.sliding_window == 4096);
  EXPECT_SLIDING(&c, "SSSFSSSF");
  EXPECT_NOPE(&c, "RRRNRRRN");  // global NoPE: the full layers do not rotate
  CHECK_OK(parse("{\"model_type\": \"exaone4\", \"sliding_window\": null}", &c));
  EXPECT_SLIDING(&c, "FFFF");
  EXPECT_NOPE(&c, "RRRR");
  CHECK_OK(
      parse("{\"model_type\": \"exaone4\", \"num_hidden_layers\": 4, "
            "\"sliding_window_pattern\": \"LLLG\", \"layer_types\": [\"sliding_attention\", "
            "\"full_attention\", \"sliding_attention\", \"full_attention\"]}",
            &c));
  EXPECT_SLIDING(&c, "SFSF");
  EXPECT_NOPE(&c, "RNRN");
  EXPECT_ERR(parse("{\"model_type\": \"exaone4\", \"sliding_window_pattern\": \"LLLG\"}", &c),
             "sliding_window_pattern 'LLLG' (a string) needs layer_types");
  EXPECT_ERR(parse("{\"model_type\": \"exaone4\", \"sliding_window_pattern\": 0}", &c),
             "sliding_window_pattern must be positive");
}

static void test_layernorm_families(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"starcoder2\"}", &c));
  CHECK(c.attention_bias && c.mlp_bias && c.tie_word_embeddings && c.sliding_window == 0);
  CHECK(c.rms_norm_eps == 1e-5 && c.num_kv_heads == 2 && c.bos_token_id == 50256);
  CHECK(strcmp(c.hidden_act, "gelu_pytorch_tanh") == 0);
  CHECK_OK(
      parse("{\"model_type\": \"starcoder2\", \"use_bias\": false, \"norm_epsilon\": "
            "1e-6, \"sliding_window\": 4096}",
            &c));
  CHECK(!c.attention_bias && !c.mlp_bias && c.rms_norm_eps == 1e-6);
  EXPECT_SLIDING(&c, "SSSS");
  EXPECT_ERR(parse("{\"model_type\": \"starcoder2\", \"hidden_act\": \"silu\"}", &c),
             SRC ": hidden_act 'silu' is not supported for model_type 'starcoder2'");

  CHECK_OK(parse("{\"model_type\": \"stablelm\"}", &c));
  CHECK(c.partial_rotary_factor == 0.25 && !c.attention_bias && !c.use_parallel_residual);
  CHECK(c.head_dim == 80 && c.num_kv_heads == 32 && c.eos_token_ids[0] == 0);
  // transformers 5 writes the factor inside rope_parameters.
  CHECK_OK(
      parse("{\"model_type\": \"stablelm\", \"rope_parameters\": {\"rope_type\": "
            "\"default\", \"rope_theta\": 10000, \"partial_rotary_factor\": 0.5}, "
            "\"use_qkv_bias\": true, \"use_parallel_residual\": true, "
            "\"layer_norm_eps\": 1e-6}",
            &c));
  CHECK(c.partial_rotary_factor == 0.5 && c.attention_bias && c.use_parallel_residual);
  CHECK(c.rms_norm_eps == 1e-6);
  EXPECT_ERR(parse("{\"model_type\": \"stablelm\", \"qk_layernorm\": true}", &c),
             SRC ": qk_layernorm true (per-head q/k LayerNorms) is not supported");

  CHECK_OK(parse("{\"model_type\": \"cohere\"}", &c));
  CHECK(c.logits_multiplier == 0.0625 && c.rope_theta == 500000.0 && c.tie_word_embeddings);
  CHECK(c.bos_token_id == 5 && c.eos_token_ids[0] == 255001 && c.head_dim == 128);
  EXPECT_ERR(parse("{\"model_type\": \"cohere\", \"use_qk_norm\": true}", &c),
             SRC ": use_qk_norm true (per-head q/k LayerNorms) is not supported");
  EXPECT_ERR(parse("{\"model_type\": \"cohere\", \"logit_scale\": 0}", &c),
             "logit_scale must be positive");
  CHECK_OK(parse("{\"model_type\": \"cohere2\", \"head_dim\": 64}", &c));
  CHECK(c.head_dim == 128 && c.rope_theta == 10000.0 && c.sliding_window == 4096);
  EXPECT_SLIDING(&c, "SSSFSSSF");
  EXPECT_NOPE(&c, "RRRNRRRN");  // RoPE on the sliding layers only
  CHECK_OK(parse("{\"model_type\": \"cohere2\", \"sliding_window\": null}", &c));
  EXPECT_SLIDING(&c, "FFFF");
  EXPECT_NOPE(&c, "NNNN");
}

static void test_llama_aliases(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"internlm3\"}", &c));
  CHECK(c.head_dim == 128 && c.num_kv_heads == 2 && c.pad_token_id == 2 && !c.attention_bias);
  CHECK_OK(parse("{\"model_type\": \"internlm3\", \"qkv_bias\": true, \"bias\": true}", &c));
  CHECK(c.attention_bias && c.mlp_bias);
  EXPECT_ERR(parse("{\"model_type\": \"internlm3\", \"qkv_bias\": true, \"bias\": false}", &c),
             SRC ": qkv_bias (true) differs from bias (false)");
  // Released files' dynamic NTK scaling: plain RoPE within max_position_embeddings.
  CHECK_OK(
      parse("{\"model_type\": \"internlm3\", \"rope_scaling\": {\"rope_type\": "
            "\"dynamic\", \"factor\": 6.0}}",
            &c));
  CHECK(c.rope_scaling.kind == MX_ROPE_SCALING_DYNAMIC && c.rope_scaling.factor == 6.0);

  CHECK_OK(parse("{\"model_type\": \"exaone\"}", &c));
  CHECK(c.rope_theta == 500000.0 && c.num_kv_heads == 8 && c.eos_token_ids[0] == 361);
  CHECK_OK(
      parse("{\"model_type\": \"exaone\", \"num_layers\": 3, \"layer_norm_epsilon\": "
            "1e-6, \"activation_function\": \"silu\"}",
            &c));
  CHECK(c.num_layers == 3 && c.rms_norm_eps == 1e-6);
  EXPECT_ERR(parse("{\"model_type\": \"exaone\", \"activation_function\": \"relu\"}", &c),
             SRC ": activation_function 'relu' is not supported for model_type 'exaone'");
}

// Phi-4-multimodal's text model: Phi4MultimodalConfig's defaults (its eos list when none is
// given), Phi-3's RoPE rules.
static void test_phi4mm(void) {
  mx_model_config_t c;
  const char *types[] = {"phi4_multimodal", "phi4mm"};
  for (int i = 0; i < 2; i++) {
    char j[128];
    snprintf(j, sizeof j, "{\"model_type\": \"%s\"}", types[i]);
    CHECK_OK(parse(j, &c));
    CHECK(c.vocab_size == 200064 && c.num_kv_heads == 8 && c.max_position_embeddings == 131072);
    CHECK(c.n_eos == 2 && c.eos_token_ids[0] == 199999 && c.eos_token_ids[1] == 200020);
    CHECK(c.bos_token_id == 199999 && c.pad_token_id == 199999 && !c.tie_word_embeddings);
  }
  CHECK_OK(parse("{\"model_type\": \"phi4mm\", \"eos_token_id\": 7}", &c));
  CHECK(c.n_eos == 1 && c.eos_token_ids[0] == 7);
  EXPECT_ERR(parse("{\"model_type\": \"phi4mm\", \"rope_scaling\": {\"type\": \"llama3\", "
                   "\"factor\": 8}}",
                   &c),
             "rope_scaling.type 'llama3' is not supported by this family (default, longrope)");
}

int main(void) {
  test_phi4mm();
  test_granite();
  test_smollm3();
  test_olmo();
  test_seed_oss();
  test_exaone4();
  test_layernorm_families();
  test_llama_aliases();
  return mx_test_finish();
}
