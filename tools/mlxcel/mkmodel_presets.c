// The model families and shapes `mlxcel mkmodel` writes. Shapes of real models are those of
// their public config.json files; every family also has a `tiny` preset for tests, sized so that
// its special features (windows, soft-caps, q/k norms, partial rotary, fused projections, ...)
// change the result of a 16-token prompt.
#include <stdio.h>
#include <string.h>

#include "mkmodel.h"

// ---- Families: the config.json keys each *Config class writes ----

enum {
  KEYS_QWEN =
      MK_KEY_ACT | MK_KEY_LAYER_TYPES | MK_KEY_QWEN_WINDOW | MK_KEY_ROPE_SCALING | MK_KEY_TIE,
  KEYS_GEMMA = MK_KEY_ATTN_BIAS | MK_KEY_HEAD_DIM | MK_KEY_ACTIVATION | MK_KEY_PAD,
  KEYS_GEMMA2 = KEYS_GEMMA | MK_KEY_SOFTCAP | MK_KEY_LAYER_TYPES | MK_KEY_QPAS | MK_KEY_WINDOW,
};

static const mk_family_t kLlama = {"llama", "LlamaForCausalLM", "silu",
                                   MK_KEY_ATTN_BIAS | MK_KEY_LLAMA | MK_KEY_HEAD_DIM | MK_KEY_ACT |
                                       MK_KEY_ROPE_SCALING | MK_KEY_TIE};
static const mk_family_t kMistral = {"mistral", "MistralForCausalLM", "silu",
                                     MK_KEY_HEAD_DIM | MK_KEY_ACT | MK_KEY_WINDOW | MK_KEY_TIE};
static const mk_family_t kQwen2 = {"qwen2", "Qwen2ForCausalLM", "silu", KEYS_QWEN};
static const mk_family_t kQwen3 = {"qwen3", "Qwen3ForCausalLM", "silu",
                                   KEYS_QWEN | MK_KEY_ATTN_BIAS | MK_KEY_HEAD_DIM};
// Gemma 1 writes hidden_act and a null hidden_activation.
static const mk_family_t kGemma = {"gemma", "GemmaForCausalLM", "gelu_pytorch_tanh",
                                   KEYS_GEMMA | MK_KEY_ACT};
static const mk_family_t kGemma2 = {"gemma2", "Gemma2ForCausalLM", "gelu_pytorch_tanh",
                                    KEYS_GEMMA2};
static const mk_family_t kGemma3 = {"gemma3_text", "Gemma3ForCausalLM", "gelu_pytorch_tanh",
                                    KEYS_GEMMA2 | MK_KEY_LOCAL_ROPE | MK_KEY_ROPE_SCALING};
// Llama's layer with scalars or unread layers of their own (extra keys in their presets).
static const mk_family_t kGranite = {
    "granite", "GraniteForCausalLM", "silu",
    MK_KEY_ATTN_BIAS | MK_KEY_LLAMA | MK_KEY_ACT | MK_KEY_ROPE_SCALING | MK_KEY_TIE};
static const mk_family_t kMinicpm = {"minicpm", "MiniCPMForCausalLM", "silu",
                                     MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_TIE};
static const mk_family_t kSmollm3 = {
    "smollm3", "SmolLM3ForCausalLM", "silu",
    MK_KEY_ATTN_BIAS | MK_KEY_LLAMA | MK_KEY_ACT | MK_KEY_ROPE_SCALING | MK_KEY_TIE};
static const mk_family_t kMimo = {"mimo", "MiMoForCausalLM", "silu", KEYS_QWEN};
static const mk_family_t kOlmo2 = {
    "olmo2", "Olmo2ForCausalLM", "silu",
    MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_ROPE_SCALING | MK_KEY_TIE | MK_KEY_PAD};
// InternLM3 writes its biases as qkv_bias / bias and its rope_scaling in the preset (extra).
static const mk_family_t kInternlm3 = {"internlm3", "InternLM3ForCausalLM", "silu",
                                       MK_KEY_HEAD_DIM | MK_KEY_ACT | MK_KEY_TIE};
static const mk_family_t kPhi3 = {"phi3", "Phi3ForCausalLM", "silu",
                                  MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_PHI3 | MK_KEY_PAD |
                                      MK_KEY_ROPE_SCALING | MK_KEY_WINDOW | MK_KEY_TIE};

// Mixtures of experts.
static const mk_family_t kMixtral = {
    "mixtral", "MixtralForCausalLM", "silu",
    MK_KEY_HEAD_DIM | MK_KEY_ACT | MK_KEY_WINDOW | MK_KEY_TIE | MK_KEY_MOE | MK_KEY_MOE_LOCAL};
static const mk_family_t kQwen2Moe = {"qwen2_moe", "Qwen2MoeForCausalLM", "silu",
                                      KEYS_QWEN | MK_KEY_MOE | MK_KEY_MOE_QWEN | MK_KEY_SHARED};
static const mk_family_t kQwen3Moe = {
    "qwen3_moe", "Qwen3MoeForCausalLM", "silu",
    KEYS_QWEN | MK_KEY_ATTN_BIAS | MK_KEY_HEAD_DIM | MK_KEY_MOE | MK_KEY_MOE_QWEN};
static const mk_family_t kOlmoe = {
    "olmoe", "OlmoeForCausalLM", "silu",
    MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_PAD | MK_KEY_ROPE_SCALING | MK_KEY_MOE};

// Multi-latent attention with DeepSeek's experts.
static const mk_family_t kDeepseekV2 = {
    "deepseek_v2", "DeepseekV2ForCausalLM", "silu",
    MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_DEEPSEEK | MK_KEY_DEEPSEEK_V2};
static const mk_family_t kDeepseekV3 = {
    "deepseek_v3", "DeepseekV3ForCausalLM", "silu",
    MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_DEEPSEEK};

static const mk_family_t *const kFamilies[] = {
    &kLlama,   &kQwen2,   &kQwen3,    &kMistral,  &kGemma, &kGemma2,     &kGemma3,
    &kPhi3,    &kMixtral, &kQwen2Moe, &kQwen3Moe, &kOlmoe, &kDeepseekV2, &kDeepseekV3,
    &kGranite, &kMinicpm, &kSmollm3,  &kMimo,     &kOlmo2, &kInternlm3};
enum { NFAMILIES = sizeof kFamilies / sizeof kFamilies[0] };

// ---- Tokenizer layouts (special tokens of the real tokenizers; chat formats written here) ----

// Llama 3 base: BOS added by the post-processor, reserved specials at the top; no template.
static const mk_layout_t kLlama3 = {
    .top = {"<|begin_of_text|>", "<|end_of_text|>"},
    .bos = "<|begin_of_text|>",
    .eos = "<|end_of_text|>",
    .add_bos = true,
};

#define CHATML_TEMPLATE                                                                    \
  "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor " \
  "%}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"

// SmolLM2: ChatML with the specials at the bottom.
static const mk_layout_t kChatmlLow = {
    .bottom = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"},
    .bos = "<|endoftext|>",
    .eos = "<|endoftext|>",
    .eot = "<|im_end|>",
    .chat_template = CHATML_TEMPLATE,
};

// Qwen: ChatML with the specials after the regular tokens; no BOS is added.
static const mk_layout_t kQwen = {
    .top = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"},
    .bos = "<|endoftext|>",
    .eos = "<|im_end|>",
    .chat_template = CHATML_TEMPLATE,
};

// Llama 2 / Mistral: <unk> <s> </s>, BOS added; [INST] turns.
static const mk_layout_t kLlama2 = {
    .bottom = {"<unk>", "<s>", "</s>"},
    .bos = "<s>",
    .eos = "</s>",
    .add_bos = true,
    .chat_template =
        "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}[INST] {{ "
        "m.content }} [/INST]{% elif m.role == 'assistant' %}{{ m.content }}{{ "
        "eos_token }}{% endif %}{% endfor %}",
};

// Phi-3: the Llama 2 tokens plus role tokens after the regular ones.
static const mk_layout_t kPhi3Tokens = {
    .bottom = {"<unk>", "<s>", "</s>"},
    .top = {"<|endoftext|>", "<|assistant|>", "<|end|>", "<|user|>", "<|system|>"},
    .bos = "<s>",
    .eos = "<|endoftext|>",
    .eot = "<|end|>",
    .pad = "<|endoftext|>",
    .add_bos = true,
    .chat_template =
        "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endfor "
        "%}{% if add_generation_prompt %}<|assistant|>\n{% endif %}",
};

// Gemma: <pad> <eos> <bos> <unk> at ids 0-3 (as in the real vocabulary), turn markers after.
static const mk_layout_t kGemmaTokens = {
    .bottom = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"},
    .bos = "<bos>",
    .eos = "<eos>",
    .eot = "<end_of_turn>",
    .pad = "<pad>",
    .add_bos = true,
    .chat_template =
        "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m.role "
        "== 'assistant' else m.role }}\n{{ m.content }}<end_of_turn>\n{% endfor "
        "%}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}",
};

// GPT-NeoX's tokenizer as OLMoE ships it: <|endoftext|> (0, also BOS / EOS), <|padding|> (1).
static const mk_layout_t kNeox = {
    .bottom = {"<|endoftext|>", "<|padding|>"},
    .bos = "<|endoftext|>",
    .eos = "<|endoftext|>",
    .pad = "<|padding|>",
};

// ---- Presets ----

#define TINY_SIZES \
  .vocab = 320, .hidden = 64, .inter = 128, .heads = 4, .kv_heads = 2, .max_pos = 256

static const mk_preset_t kPresets[] = {
    // Llama
    {.name = "tiny",
     .desc = "test model",
     .family = &kLlama,
     .layout = &kLlama3,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05"},
    {.name = "smollm2-135m",
     .desc = "SmolLM2-135M",
     .family = &kLlama,
     .layout = &kChatmlLow,
     .vocab = 49152,
     .hidden = 576,
     .inter = 1536,
     .layers = 30,
     .heads = 9,
     .kv_heads = 3,
     .head_dim = 64,
     .max_pos = 8192,
     .theta = 100000.0,
     .eps = "1e-05"},
    {.name = "smollm2-360m",
     .desc = "SmolLM2-360M",
     .family = &kLlama,
     .layout = &kChatmlLow,
     .vocab = 49152,
     .hidden = 960,
     .inter = 2560,
     .layers = 32,
     .heads = 15,
     .kv_heads = 5,
     .head_dim = 64,
     .max_pos = 8192,
     .theta = 100000.0,
     .eps = "1e-05"},
    {.name = "llama-3.2-1b",
     .desc = "Llama-3.2-1B",
     .family = &kLlama,
     .layout = &kLlama3,
     .vocab = 128256,
     .hidden = 2048,
     .inter = 8192,
     .layers = 16,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 64,
     .max_pos = 131072,
     .theta = 500000.0,
     .eps = "1e-05",
     .n_special = 256,
     .rope = MK_ROPE_LLAMA3},
    // Mistral: no small model of the architecture; the 7B shape fits in memory only as bf16.
    {.name = "tiny",
     .desc = "test: window 8",
     .family = &kMistral,
     .layout = &kLlama2,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 1000000.0,
     .eps = "1e-05",
     .untied = true,
     .window = 8},
    {.name = "mistral-7b-v0.1",
     .desc = "Mistral-7B-v0.1",
     .family = &kMistral,
     .layout = &kLlama2,
     .vocab = 32000,
     .hidden = 4096,
     .inter = 14336,
     .layers = 32,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 128,
     .max_pos = 32768,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .window = 4096,
     .note = "29 GB at f32: --dtype bf16 on 24 GiB"},
    // Qwen2 (q/k/v biases), Qwen3 (q/k norms)
    {.name = "tiny",
     .desc = "test: q/k/v biases",
     .family = &kQwen2,
     .layout = &kQwen,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 1000000.0,
     .eps = "1e-06"},
    {.name = "qwen2.5-0.5b",
     .desc = "Qwen2.5-0.5B",
     .family = &kQwen2,
     .layout = &kQwen,
     .vocab = 151936,
     .hidden = 896,
     .inter = 4864,
     .layers = 24,
     .heads = 14,
     .kv_heads = 2,
     .head_dim = 64,
     .max_pos = 32768,
     .theta = 1000000.0,
     .eps = "1e-06",
     .max_window_layers = 21},
    {.name = "tiny",
     .desc = "test: q/k norms",
     .family = &kQwen3,
     .layout = &kQwen,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 32,
     .theta = 1000000.0,
     .eps = "1e-06"},
    {.name = "qwen3-0.6b",
     .desc = "Qwen3-0.6B",
     .family = &kQwen3,
     .layout = &kQwen,
     .vocab = 151936,
     .hidden = 1024,
     .inter = 3072,
     .layers = 28,
     .heads = 16,
     .kv_heads = 8,
     .head_dim = 128,
     .max_pos = 40960,
     .theta = 1000000.0,
     .eps = "1e-06"},
    // Gemma, Gemma 2, Gemma 3 (text)
    {.name = "tiny",
     .desc = "test model",
     .family = &kGemma,
     .layout = &kGemmaTokens,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 32,
     .theta = 10000.0,
     .eps = "1e-06"},
    {.name = "gemma-2b",
     .desc = "Gemma-2B",
     .family = &kGemma,
     .layout = &kGemmaTokens,
     .vocab = 256000,
     .hidden = 2048,
     .inter = 16384,
     .layers = 18,
     .heads = 8,
     .kv_heads = 1,
     .head_dim = 256,
     .max_pos = 8192,
     .theta = 10000.0,
     .eps = "1e-06"},
    {.name = "tiny",
     .desc = "test: window 8, soft-caps, qpas 24",
     .family = &kGemma2,
     .layout = &kGemmaTokens,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 32,
     .theta = 10000.0,
     .eps = "1e-06",
     .window = 8,
     .attn_softcap = 50.0,
     .final_softcap = 30.0,
     .qpas = 24},
    {.name = "gemma-2-2b",
     .desc = "Gemma-2-2B",
     .family = &kGemma2,
     .layout = &kGemmaTokens,
     .vocab = 256000,
     .hidden = 2304,
     .inter = 9216,
     .layers = 26,
     .heads = 8,
     .kv_heads = 4,
     .head_dim = 256,
     .max_pos = 8192,
     .theta = 10000.0,
     .eps = "1e-06",
     .window = 4096,
     .attn_softcap = 50.0,
     .final_softcap = 30.0,
     .qpas = 256},
    {.name = "tiny",
     .desc = "test: window 8, local base, linear",
     .family = &kGemma3,
     .layout = &kGemmaTokens,
     TINY_SIZES,
     .layers = 6,
     .head_dim = 32,
     .theta = 1000000.0,
     .eps = "1e-06",
     .rope = MK_ROPE_LINEAR,
     .rope_factor = 8.0,
     .window = 8,
     .qpas = 24,
     .local_base = 10000.0,
     .window_pattern = 6},
    {.name = "gemma-3-1b",
     .desc = "Gemma-3-1B",
     .family = &kGemma3,
     .layout = &kGemmaTokens,
     .vocab = 262144,
     .hidden = 1152,
     .inter = 6912,
     .layers = 26,
     .heads = 4,
     .kv_heads = 1,
     .head_dim = 256,
     .max_pos = 32768,
     .theta = 1000000.0,
     .eps = "1e-06",
     .window = 512,
     .qpas = 256,
     .local_base = 10000.0,
     .window_pattern = 6},
    // Granite, MiniCPM (scalar multipliers), SmolLM3 (NoPE layers), MiMo (Qwen2 with
    // multi-token-prediction layers generation does not read, so none are written).
    {.name = "tiny",
     .desc = "test model",
     .family = &kGranite,
     .layout = &kChatmlLow,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .extra = {"embedding_multiplier", "3.0", "residual_multiplier", "0.5", "attention_multiplier",
               "0.3", "logits_scaling", "2.0"}},
    {.name = "granite-3.1-2b",
     .desc = "Granite-3.1-2B",
     .family = &kGranite,
     .layout = &kChatmlLow,
     .vocab = 49155,
     .hidden = 2048,
     .inter = 8192,
     .layers = 40,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 64,
     .max_pos = 131072,
     .theta = 5000000.0,
     .eps = "1e-05",
     .extra = {"embedding_multiplier", "12.0", "residual_multiplier", "0.22",
               "attention_multiplier", "0.015625", "logits_scaling", "8.0"}},
    {.name = "tiny",
     .desc = "test model",
     .family = &kMinicpm,
     .layout = &kLlama2,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .extra = {"scale_emb", "12.0", "scale_depth", "1.4", "dim_model_base", "16"}},
    {.name = "minicpm-2b",
     .desc = "MiniCPM-2B",
     .family = &kMinicpm,
     .layout = &kLlama2,
     .vocab = 122753,
     .hidden = 2304,
     .inter = 5760,
     .layers = 40,
     .heads = 36,
     .kv_heads = 36,
     .head_dim = 64,
     .max_pos = 4096,
     .theta = 10000.0,
     .eps = "1e-05",
     .extra = {"scale_emb", "12", "scale_depth", "1.4", "dim_model_base", "256"}},
    {.name = "tiny",
     .desc = "test model",
     .family = &kSmollm3,
     .layout = &kLlama3,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-06",
     .extra = {"no_rope_layer_interval", "2"}},
    {.name = "smollm3-3b",
     .desc = "SmolLM3-3B",
     .family = &kSmollm3,
     .layout = &kLlama3,
     .vocab = 128256,
     .hidden = 2048,
     .inter = 11008,
     .layers = 36,
     .heads = 16,
     .kv_heads = 4,
     .head_dim = 128,
     .max_pos = 65536,
     .theta = 5000000.0,
     .eps = "1e-06",
     .extra = {"no_rope_layer_interval", "4"}},
    {.name = "tiny",
     .desc = "test model",
     .family = &kMimo,
     .layout = &kQwen,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 640000.0,
     .eps = "1e-05",
     .untied = true,
     .extra = {"num_nextn_predict_layers", "1"}},
    {.name = "mimo-7b",
     .desc = "MiMo-7B",
     .family = &kMimo,
     .layout = &kQwen,
     .vocab = 151680,
     .hidden = 4096,
     .inter = 11008,
     .layers = 36,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 128,
     .max_pos = 32768,
     .theta = 640000.0,
     .eps = "1e-05",
     .untied = true,
     .note = "f32 needs 31 GB: use --dtype bf16",
     .extra = {"num_nextn_predict_layers", "1"}},
    // OLMo 2 (post-norms, q/k norms over the whole projection), InternLM3 (optional biases,
    // dynamic NTK RoPE)
    {.name = "tiny",
     .desc = "test model",
     .family = &kOlmo2,
     .layout = &kNeox,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 500000.0,
     .eps = "1e-06",
     .untied = true},
    {.name = "olmo-2-1b",
     .desc = "OLMo-2-0425-1B",
     .family = &kOlmo2,
     .layout = &kNeox,
     .vocab = 100352,
     .hidden = 2048,
     .inter = 8192,
     .layers = 16,
     .heads = 16,
     .kv_heads = 16,
     .head_dim = 128,
     .max_pos = 4096,
     .theta = 500000.0,
     .eps = "1e-06",
     .untied = true},
    {.name = "tiny",
     .desc = "test model",
     .family = &kInternlm3,
     .layout = &kLlama2,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 32,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .extra = {"qkv_bias", "true", "bias", "true", "rope_scaling",
               "{\n    \"factor\": 2.0,\n    \"rope_type\": \"dynamic\"\n  }"}},
    {.name = "internlm3-8b",
     .desc = "InternLM3-8B",
     .family = &kInternlm3,
     .layout = &kLlama2,
     .vocab = 128512,
     .hidden = 4096,
     .inter = 10240,
     .layers = 48,
     .heads = 32,
     .kv_heads = 2,
     .head_dim = 128,
     .max_pos = 32768,
     .theta = 50000000.0,
     .eps = "1e-05",
     .untied = true,
     .note = "f32 needs 35 GB: use --dtype bf16",
     .extra = {"qkv_bias", "false", "bias", "false", "rope_scaling",
               "{\n    \"factor\": 6.0,\n    \"rope_type\": \"dynamic\"\n  }"}},
    // Phi-3 (fused qkv_proj / gate_up_proj)
    {.name = "tiny",
     .desc = "test: window 8, partial rotary",
     .family = &kPhi3,
     .layout = &kPhi3Tokens,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .window = 8,
     .partial_rotary = 0.75},
    {.name = "phi-3-mini-4k",
     .desc = "Phi-3-mini-4k-instruct",
     .family = &kPhi3,
     .layout = &kPhi3Tokens,
     .vocab = 32064,
     .hidden = 3072,
     .inter = 8192,
     .layers = 32,
     .heads = 32,
     .kv_heads = 32,
     .head_dim = 96,
     .max_pos = 4096,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .window = 2047,
     .note = "15 GB at f32, twice that resident: --dtype bf16 on 24 GiB"},
    // Mixtures of experts: tiny ones route 16 tokens over 4 experts, top 2.
    {.name = "tiny",
     .desc = "test: 4 experts, top 2, renormalized",
     .family = &kMixtral,
     .layout = &kLlama2,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 1000000.0,
     .eps = "1e-05",
     .untied = true,
     .experts = 4,
     .top_k = 2},
    {.name = "mixtral-8x7b",
     .desc = "Mixtral-8x7B-v0.1",
     .family = &kMixtral,
     .layout = &kLlama2,
     .vocab = 32000,
     .hidden = 4096,
     .inter = 14336,
     .layers = 32,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 128,
     .max_pos = 32768,
     .theta = 1000000.0,
     .eps = "1e-05",
     .untied = true,
     .experts = 8,
     .top_k = 2,
     .note = "93 GB at bf16: does not fit 24 GiB"},
    {.name = "tiny",
     .desc = "test: 4 experts, top 2, shared expert",
     .family = &kQwen2Moe,
     .layout = &kQwen,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 1000000.0,
     .eps = "1e-06",
     .untied = true,
     .experts = 4,
     .top_k = 2,
     .moe_inter = 32,
     .shared_inter = 96},
    {.name = "qwen1.5-moe-a2.7b",
     .desc = "Qwen1.5-MoE-A2.7B",
     .family = &kQwen2Moe,
     .layout = &kQwen,
     .vocab = 151936,
     .hidden = 2048,
     .inter = 5632,
     .layers = 24,
     .heads = 16,
     .kv_heads = 16,
     .head_dim = 128,
     .max_pos = 8192,
     .theta = 1000000.0,
     .eps = "1e-06",
     .untied = true,
     .experts = 60,
     .top_k = 4,
     .moe_inter = 1408,
     .shared_inter = 5632,
     .note = "57 GB at f32: --dtype bf16 on 24 GiB"},
    {.name = "tiny",
     .desc = "test: 4 experts, top 2, renormalized, q/k norms",
     .family = &kQwen3Moe,
     .layout = &kQwen,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 32,
     .theta = 1000000.0,
     .eps = "1e-06",
     .untied = true,
     .experts = 4,
     .top_k = 2,
     .moe_inter = 32,
     .norm_topk = true},
    {.name = "qwen3-30b-a3b",
     .desc = "Qwen3-30B-A3B",
     .family = &kQwen3Moe,
     .layout = &kQwen,
     .vocab = 151936,
     .hidden = 2048,
     .inter = 6144,
     .layers = 48,
     .heads = 32,
     .kv_heads = 4,
     .head_dim = 128,
     .max_pos = 40960,
     .theta = 1000000.0,
     .eps = "1e-06",
     .untied = true,
     .experts = 128,
     .top_k = 8,
     .moe_inter = 768,
     .norm_topk = true,
     .note = "61 GB at bf16: does not fit 24 GiB"},
    {.name = "tiny",
     .desc = "test: 4 experts, top 2, flat q/k norms",
     .family = &kOlmoe,
     .layout = &kNeox,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .experts = 4,
     .top_k = 2},
    {.name = "olmoe-1b-7b",
     .desc = "OLMoE-1B-7B-0924",
     .family = &kOlmoe,
     .layout = &kNeox,
     .vocab = 50304,
     .hidden = 2048,
     .inter = 1024,
     .layers = 16,
     .heads = 16,
     .kv_heads = 16,
     .head_dim = 128,
     .max_pos = 4096,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .experts = 64,
     .top_k = 8,
     .note = "28 GB at f32, 14 GB at bf16 plus its packed copy: 8 layers fit 24 GiB"},
    {.name = "tiny",
     .desc = "test: MLA (low-rank query), 8 experts in 4 groups, top 3, 1 dense layer",
     .family = &kDeepseekV2,
     .layout = &kLlama3,
     .vocab = 320,
     .hidden = 64,
     .inter = 128,
     .heads = 4,
     .kv_heads = 4,
     .max_pos = 256,
     .layers = 3,
     .head_dim = 8,
     .theta = 10000.0,
     .eps = "1e-06",
     .untied = true,
     .experts = 8,
     .top_k = 3,
     .moe_inter = 32,
     .shared_inter = 64,
     .kv_lora = 16,
     .q_lora = 24,
     .qk_nope = 16,
     .qk_rope = 8,
     .v_dim = 12,
     .first_dense = 1,
     .n_group = 4,
     .topk_group = 2,
     .routed_scale = 1.5},
    {.name = "deepseek-v2-lite-6l",
     .desc = "DeepSeek-V2-Lite's shape, 6 of its 27 layers (1 dense + 5 MoE), no YaRN",
     .family = &kDeepseekV2,
     .layout = &kLlama3,
     .vocab = 102400,
     .hidden = 2048,
     .inter = 10944,
     .layers = 6,
     .heads = 16,
     .kv_heads = 16,
     .head_dim = 64,
     .max_pos = 163840,
     .theta = 10000.0,
     .eps = "1e-06",
     .untied = true,
     .experts = 64,
     .top_k = 6,
     .moe_inter = 1408,
     .shared_inter = 2816,
     .kv_lora = 512,
     .qk_nope = 128,
     .qk_rope = 64,
     .v_dim = 128,
     .first_dense = 1,
     .note = "the whole model is 31 GB at bf16; 6 layers (6.9 GB) and the packed copy fit "
             "24 GiB"},
    {.name = "tiny",
     .desc = "test: MLA (full q_proj), sigmoid routing, choice bias, 8 experts in 4 groups, top 3",
     .family = &kDeepseekV3,
     .layout = &kLlama3,
     .vocab = 320,
     .hidden = 64,
     .inter = 128,
     .heads = 4,
     .kv_heads = 4,
     .max_pos = 256,
     .layers = 3,
     .head_dim = 8,
     .theta = 10000.0,
     .eps = "1e-06",
     .untied = true,
     .experts = 8,
     .top_k = 3,
     .moe_inter = 32,
     .shared_inter = 32,
     .norm_topk = true,
     .kv_lora = 16,
     .qk_nope = 16,
     .qk_rope = 8,
     .v_dim = 16,
     .first_dense = 1,
     .n_group = 4,
     .topk_group = 2,
     .routed_scale = 2.5},
};
enum { NPRESETS = sizeof kPresets / sizeof kPresets[0] };

int32_t mk_preset_count(void) { return NPRESETS; }
const mk_preset_t *mk_preset_at(int32_t i) { return &kPresets[i]; }

const mk_family_t *mk_family_find(const char *arch) {
  for (int32_t i = 0; i < NFAMILIES; i++) {
    if (strcmp(arch, kFamilies[i]->arch) == 0) return kFamilies[i];
  }
  return NULL;
}

const mk_preset_t *mk_preset_find(const char *arch, const char *name, int32_t *n_found) {
  const mk_preset_t *found = NULL;
  *n_found = 0;
  for (int32_t i = 0; i < NPRESETS; i++) {
    if ((!arch || strcmp(kPresets[i].family->arch, arch) == 0) &&
        strcmp(kPresets[i].name, name) == 0) {
      if (!found) found = &kPresets[i];
      (*n_found)++;
    }
  }
  return found;
}

const char *mk_arch_list(void) {
  static char buf[256];
  if (!buf[0]) {
    for (int32_t i = 0; i < NFAMILIES; i++) {
      size_t n = strlen(buf);
      snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", kFamilies[i]->arch);
    }
  }
  return buf;
}

// ---- Special tokens ----

static int32_t count_names(const char *const *names) {
  int32_t n = 0;
  while (n < 8 && names[n]) n++;
  return n;
}

int32_t mk_special_count(const mk_preset_t *p) {
  int32_t named = count_names(p->layout->bottom) + count_names(p->layout->top);
  return p->n_special > named ? p->n_special : named;
}

void mk_special_name(const mk_preset_t *p, int32_t k, char *buf, size_t cap) {
  int32_t nb = count_names(p->layout->bottom), nt = count_names(p->layout->top);
  if (k < nb) {
    snprintf(buf, cap, "%s", p->layout->bottom[k]);
  } else if (k < nb + nt) {
    snprintf(buf, cap, "%s", p->layout->top[k - nb]);
  } else {
    snprintf(buf, cap, "<|reserved_special_token_%d|>", (int)(k - nb - nt));
  }
}

int32_t mk_special_id(const mk_preset_t *p, const char *name) {
  if (!name) return -1;
  int32_t nb = count_names(p->layout->bottom), nt = count_names(p->layout->top);
  int32_t first_top = p->vocab - mk_special_count(p) + nb;
  for (int32_t k = 0; k < nb; k++) {
    if (strcmp(p->layout->bottom[k], name) == 0) return k;
  }
  for (int32_t k = 0; k < nt; k++) {
    if (strcmp(p->layout->top[k], name) == 0) return first_top + k;
  }
  return -1;
}
