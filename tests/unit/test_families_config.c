// Per-family config.json parsing: Hugging Face defaults of each family, windows and layer_types,
// soft-capping (absent = default, null = none), Gemma 3's nested text_config, and refusals of
// unsupported options naming the field. Also checks the architecture each config leads to
// (weights listed by mx_model_check_weights) on tiny in-memory checkpoints.
#include <stdio.h>
#include <string.h>

#include "mlxcel/model.h"
#include "mx_test.h"

#define SRC "m/config.json"

static mx_status_t parse(const char *json, mx_model_config_t *c) {
  return mx_config_parse(json, strlen(json), NULL, 0, SRC, c);
}

static int32_t n_sliding(const mx_model_config_t *c) {
  int32_t n = 0;
  for (int32_t l = 0; l < c->num_layers; l++) n += c->layer_sliding[l];
  return n;
}

static void test_defaults(void) {
  mx_model_config_t c;
  CHECK_OK(parse("{\"model_type\": \"mistral\"}", &c));
  CHECK(c.num_kv_heads == 8 && c.head_dim == 128 && c.intermediate_size == 14336);
  CHECK(c.sliding_window == 4096 && n_sliding(&c) == 32 && c.max_position_embeddings == 131072);
  CHECK_OK(
      parse("{\"model_type\": \"mistral\", \"sliding_window\": null, "
            "\"num_key_value_heads\": null}",
            &c));
  CHECK(c.sliding_window == 0 && c.num_kv_heads == 32);

  CHECK_OK(parse("{\"model_type\": \"qwen2\"}", &c));
  CHECK(c.sliding_window == 0 && n_sliding(&c) == 0 && c.vocab_size == 151936);
  CHECK(c.n_eos == 0 && c.bos_token_id == -1 && !c.tie_word_embeddings);
  // use_sliding_window: layers from max_window_layers on slide.
  CHECK_OK(
      parse("{\"model_type\": \"qwen2\", \"use_sliding_window\": true, \"sliding_window\": "
            "16, \"max_window_layers\": 30}",
            &c));
  CHECK(c.sliding_window == 16 && n_sliding(&c) == 2 && c.layer_sliding[30] &&
        !c.layer_sliding[29]);
  CHECK_OK(parse("{\"model_type\": \"qwen3\"}", &c));
  CHECK(c.head_dim == 128 && c.hidden_size == 4096);
  // MiMo: Qwen2's config with multi-token-prediction layers generation does not read.
  CHECK_OK(parse("{\"model_type\": \"mimo\", \"num_nextn_predict_layers\": 1}", &c));
  CHECK(c.vocab_size == 151936 && c.sliding_window == 0 && !c.tie_word_embeddings);
  // MiniCPM: the authors' MiniCPMConfig defaults, the muP scalings as multipliers.
  CHECK_OK(parse("{\"model_type\": \"minicpm\"}", &c));
  CHECK(c.tie_word_embeddings && c.rms_norm_eps == 1e-6 && c.vocab_size == 32000);
  CHECK(c.embedding_multiplier == 1.0 && c.logits_multiplier == 1.0 / 4096);
  CHECK(c.residual_multiplier > 0.17677 && c.residual_multiplier < 0.17678);  // 1 / sqrt(32)
  CHECK_OK(
      parse("{\"model_type\": \"minicpm\", \"scale_emb\": 12, \"scale_depth\": 1.4, "
            "\"dim_model_base\": 256, \"hidden_size\": 2304, \"num_attention_heads\": 36, "
            "\"num_hidden_layers\": 40, \"use_mup\": true}",
            &c));
  CHECK(c.embedding_multiplier == 12.0 && c.logits_multiplier == 256.0 / 2304);
  CHECK(c.residual_multiplier > 0.22135 && c.residual_multiplier < 0.22136);  // 1.4 / sqrt(40)

  CHECK_OK(parse("{\"model_type\": \"gemma\"}", &c));
  CHECK(c.tie_word_embeddings && c.head_dim == 256 && c.num_kv_heads == 16);
  CHECK(c.bos_token_id == 2 && c.n_eos == 1 && c.eos_token_ids[0] == 1 && c.pad_token_id == 0);
  CHECK(strcmp(c.hidden_act, "gelu_pytorch_tanh") == 0);
  // Early Gemma files: hidden_act "gelu" + hidden_activation "gelu_pytorch_tanh".
  CHECK_OK(
      parse("{\"model_type\": \"gemma\", \"hidden_act\": \"gelu\", \"hidden_activation\": "
            "\"gelu_pytorch_tanh\"}",
            &c));
  CHECK(strcmp(c.hidden_act, "gelu_pytorch_tanh") == 0);

  CHECK_OK(parse("{\"model_type\": \"gemma2\"}", &c));
  CHECK(c.attn_logit_softcapping == 50.0 && c.final_logit_softcapping == 30.0);
  CHECK(c.query_pre_attn_scalar == 256.0 && c.sliding_window == 4096 && c.num_layers == 26);
  CHECK(c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[24] && !c.layer_sliding[25]);
  CHECK_OK(
      parse("{\"model_type\": \"gemma2\", \"attn_logit_softcapping\": null, "
            "\"final_logit_softcapping\": null}",
            &c));
  CHECK(c.attn_logit_softcapping == 0.0 && c.final_logit_softcapping == 0.0);

  CHECK_OK(parse("{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 12}", &c));
  CHECK(c.rope_theta == 1e6 && c.rope_local_base_freq == 10000.0 && c.vocab_size == 262208);
  CHECK(n_sliding(&c) == 10 && !c.layer_sliding[5] && !c.layer_sliding[11]);
  CHECK(c.attn_logit_softcapping == 0.0 && c.final_logit_softcapping == 0.0);
  CHECK_OK(
      parse("{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 4, "
            "\"_sliding_window_pattern\": 2}",
            &c));
  CHECK(c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[2] && !c.layer_sliding[3]);

  CHECK_OK(parse("{\"model_type\": \"phi3\"}", &c));
  CHECK(c.vocab_size == 32064 && c.sliding_window == 0 && c.rms_norm_eps == 1e-5);
  CHECK(c.n_eos == 1 && c.eos_token_ids[0] == 32000 && c.pad_token_id == 32000);
}

// Gemma's token ids: config bos 2 / eos 1 / pad 0; an instruction-tuned generation_config.json
// lists eos [1, 107] and replaces the config's.
static void test_gemma_tokens(void) {
  mx_model_config_t c;
  const char *j = "{\"model_type\": \"gemma2\", \"bos_token_id\": 2, \"eos_token_id\": 1}";
  const char *g = "{\"bos_token_id\": 2, \"eos_token_id\": [1, 107], \"pad_token_id\": 0}";
  CHECK_OK(mx_config_parse(j, strlen(j), g, strlen(g), SRC, &c));
  CHECK(c.bos_token_id == 2 && c.pad_token_id == 0 && c.n_eos == 2);
  CHECK(c.eos_token_ids[0] == 1 && c.eos_token_ids[1] == 107);
}

static void test_gemma3_nested(void) {
  mx_model_config_t c;
  const char *j =
      "{\"model_type\": \"gemma3\", \"architectures\": [\"Gemma3ForConditionalGeneration\"], "
      "\"torch_dtype\": \"bfloat16\", \"eos_token_id\": [1, 106], \"text_config\": {"
      "\"model_type\": \"gemma3_text\", \"hidden_size\": 2560, \"intermediate_size\": 10240, "
      "\"num_hidden_layers\": 34, \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": "
      "\"linear\"}, \"sliding_window\": 1024}, \"vision_config\": {\"hidden_size\": 1152, "
      "\"image_size\": "
      "896, \"patch_size\": 14}}";
  CHECK_OK(parse(j, &c));
  CHECK(strcmp(c.model_type, "gemma3") == 0 && c.hidden_size == 2560 && c.num_layers == 34);
  CHECK(c.dtype == MX_ELEM_BF16 && c.n_eos == 2 && c.eos_token_ids[1] == 106);
  CHECK(c.sliding_window == 1024 && n_sliding(&c) == 34 - 5 && c.head_dim == 256);
  CHECK(c.rope_scaling.kind == MX_ROPE_SCALING_LINEAR && c.query_pre_attn_scalar == 256.0);
  EXPECT_ERR(parse("{\"model_type\": \"gemma3\", \"text_config\": {\"rope_scaling\": "
                   "{\"rope_type\": \"ntk\", \"factor\": 2}}}",
                   &c),
             "text_config.rope_scaling.rope_type 'ntk' is not supported");
  EXPECT_ERR(parse("{\"model_type\": \"gemma3\", \"text_config\": 3}", &c),
             "text_config must be an object");
}

static void test_refusals(void) {
  mx_model_config_t c;
  EXPECT_ERR(parse("{\"model_type\": \"qwen2\", \"rope_scaling\": {\"type\": \"dynamic\", "
                   "\"factor\": 0.5}}",
                   &c),
             SRC ": rope_scaling.factor must be >= 1 (got 0.5)");
  // Phi-3: longrope only ("su" / "yarn" are its old names), lists of rotary_dim / 2 factors.
  EXPECT_ERR(
      parse("{\"model_type\": \"phi3\", \"rope_scaling\": {\"type\": \"longrope\", "
            "\"short_factor\": [1], \"long_factor\": [1]}}",
            &c),
      "rope_scaling.short_factor must be a list of 48 numbers (rotary dimensions / 2), got 1");
  EXPECT_ERR(parse("{\"model_type\": \"phi3\", \"rope_scaling\": {\"type\": \"llama3\", "
                   "\"factor\": 8}}",
                   &c),
             "rope_scaling.type 'llama3' is not supported by this family (default, longrope)");
  EXPECT_ERR(parse("{\"model_type\": \"phi3\", \"num_attention_heads\": 96, \"rope_scaling\": "
                   "{\"type\": \"su\", \"short_factor\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, "
                   "13, 14, 15, 0], \"long_factor\": [1]}}",
                   &c),
             "rope_scaling.short_factor[15] must be a positive number");
  EXPECT_ERR(parse("{\"model_type\": \"gemma2\", \"hidden_activation\": \"gelu\"}", &c),
             "hidden_activation 'gelu' is not supported for model_type 'gemma2'");
  EXPECT_ERR(parse("{\"model_type\": \"mistral\", \"hidden_act\": \"relu\"}", &c),
             "hidden_act 'relu' is not supported for model_type 'mistral'");
  EXPECT_ERR(parse("{\"model_type\": \"gemma2\", \"num_hidden_layers\": 2, \"layer_types\": "
                   "[\"full_attention\"]}",
                   &c),
             "layer_types must be a list of num_hidden_layers (2) strings");
  EXPECT_ERR(parse("{\"model_type\": \"gemma2\", \"num_hidden_layers\": 2, \"layer_types\": "
                   "[\"full_attention\", \"chunked_attention\"]}",
                   &c),
             "layer_types[1] 'chunked_attention' is not supported");
  EXPECT_ERR(parse("{\"model_type\": \"mistral\", \"sliding_window\": 0}", &c),
             "sliding_window must be positive or null");
  EXPECT_ERR(parse("{\"model_type\": \"gemma2\", \"final_logit_softcapping\": -1}", &c),
             "final_logit_softcapping must be positive or null");
  EXPECT_ERR(parse("{\"model_type\": \"gemma2\", \"query_pre_attn_scalar\": 0}", &c),
             "query_pre_attn_scalar must be positive");
  EXPECT_ERR(parse("{\"model_type\": \"gemma3_text\", \"use_bidirectional_attention\": true}", &c),
             "use_bidirectional_attention true is not supported");
  EXPECT_ERR(parse("{\"model_type\": \"gemma3_text\", \"sliding_window_pattern\": 0}", &c),
             "sliding_window_pattern must be positive");
  EXPECT_ERR(parse("{\"model_type\": \"llama\", \"num_hidden_layers\": 100000}", &c),
             "num_hidden_layers (100000) exceeds 512");
  EXPECT_ERR(parse("{\"model_type\": \"falcon\"}", &c),
             SRC ": model_type 'falcon' is not supported (supported: llama, mistral, qwen2");
  EXPECT_ERR(parse("{\"model_type\": \"minicpm\", \"num_experts\": 8}", &c),
             SRC ": num_experts is not supported (MiniCPM-MoE's experts)");
  EXPECT_ERR(parse("{\"model_type\": \"minicpm\", \"sparse_config\": {\"kernel_size\": 32}}", &c),
             "sparse_config is not supported");
  EXPECT_ERR(parse("{\"model_type\": \"minicpm\", \"use_mup\": false}", &c),
             "use_mup false is not supported");
  EXPECT_ERR(parse("{\"model_type\": \"minicpm\", \"kv_channels\": 128}", &c),
             "kv_channels is not supported");
  EXPECT_ERR(parse("{\"model_type\": \"minicpm\", \"dim_model_base\": 0}", &c),
             "dim_model_base must be positive (got 0)");
  EXPECT_ERR(parse("{\"model_type\": \"mimo\", \"num_nextn_predict_layers\": -1}", &c),
             "num_nextn_predict_layers must be >= 0 (got -1)");
  // Muse Glimmer: refused for images and text alike, naming why and where it runs.
  EXPECT_ERR(parse("{\"model_type\": \"muse_glimmer\", \"vision_layers\": 50}", &c), SRC
             ": model_type 'muse_glimmer' is not supported on this engine's graph path: Muse "
             "Glimmer: its vision tower");
  EXPECT_ERR(parse("{\"model_type\": \"muse_glimmer\"}", &c), "mlxcel's MLX backend");
  EXPECT_ERR(parse("{\"model_type\": \"muse_glimmer_text\"}", &c),
             "the Muse Glimmer text model (attention output gate");
  EXPECT_ERR(parse("{\"model_type\": \"muse_glimmer_vision\"}", &c),
             "a vision tower alone is not a model this engine runs");
}

int main(void) {
  test_defaults();
  test_gemma_tokens();
  test_gemma3_nested();
  test_refusals();
  return mx_test_finish();
}
