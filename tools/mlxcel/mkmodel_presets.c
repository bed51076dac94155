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
// Gemma 3n: AltUp, Laurel, per-layer inputs and KV sharing from Gemma3nTextConfig's keys (its
// defaults, or the preset's extra ones); final soft-cap 30 and the layer types by default.
static const mk_family_t kGemma3n = {"gemma3n_text", "Gemma3nForCausalLM", "gelu_pytorch_tanh",
                                     KEYS_GEMMA | MK_KEY_WINDOW};
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
// Phi-4-multimodal's text model: Phi-3's layer and keys (its audio and vision towers are not
// written: the text model runs without them).
static const mk_family_t kPhi4mm = {"phi4mm", "Phi4MMForCausalLM", "silu",
                                    MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_PHI3 | MK_KEY_PAD |
                                        MK_KEY_ROPE_SCALING | MK_KEY_WINDOW | MK_KEY_TIE};
// OLMo 3: OLMo 2's layer with sliding layers (layer_types as the library decides them).
static const mk_family_t kOlmo3 = {"olmo3", "Olmo3ForCausalLM", "silu",
                                   MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_ROPE_SCALING |
                                       MK_KEY_TIE | MK_KEY_PAD | MK_KEY_WINDOW |
                                       MK_KEY_LAYER_TYPES};
// Seed-OSS writes its attention biases in the preset (attention_bias, attention_out_bias).
static const mk_family_t kSeedOss = {
    "seed_oss", "SeedOssForCausalLM", "silu",
    MK_KEY_LLAMA | MK_KEY_HEAD_DIM | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_PAD | MK_KEY_ROPE_SCALING};
// EXAONE 3.5 writes its llama3 rope_scaling (factor 8) in the preset.
static const mk_family_t kExaone = {
    "exaone", "ExaoneForCausalLM", "silu",
    MK_KEY_ATTN_BIAS | MK_KEY_HEAD_DIM | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_PAD};
static const mk_family_t kExaone4 = {"exaone4", "Exaone4ForCausalLM", "silu",
                                     MK_KEY_HEAD_DIM | MK_KEY_ACT | MK_KEY_ROPE_SCALING |
                                         MK_KEY_TIE | MK_KEY_PAD | MK_KEY_WINDOW |
                                         MK_KEY_LAYER_TYPES};
// LayerNorm families: the epsilon under their own key; the rest of their keys in the presets.
static const mk_family_t kCohere = {
    "cohere", "CohereForCausalLM", "silu",
    MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_PAD | MK_KEY_LAYER_NORM_EPS};
static const mk_family_t kCohere2 = {"cohere2", "Cohere2ForCausalLM", "silu",
                                     MK_KEY_ATTN_BIAS | MK_KEY_HEAD_DIM | MK_KEY_ACT | MK_KEY_TIE |
                                         MK_KEY_PAD | MK_KEY_WINDOW | MK_KEY_LAYER_TYPES |
                                         MK_KEY_LAYER_NORM_EPS};
static const mk_family_t kStablelm = {
    "stablelm", "StableLmForCausalLM", "silu",
    MK_KEY_ACT | MK_KEY_TIE | MK_KEY_PAD | MK_KEY_ROPE_SCALING | MK_KEY_LAYER_NORM_EPS};
static const mk_family_t kStarcoder2 = {
    "starcoder2", "Starcoder2ForCausalLM", "gelu_pytorch_tanh",
    MK_KEY_ACT | MK_KEY_TIE | MK_KEY_WINDOW | MK_KEY_ROPE_SCALING | MK_KEY_NORM_EPSILON};

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
// gpt-oss: attention sinks and biases, alternating windows, biased experts with a clamped SwiGLU;
// its YaRN rope_scaling and swiglu_limit are in the presets.
static const mk_family_t kGptOss = {"gpt_oss", "GptOssForCausalLM", "silu",
                                    MK_KEY_HEAD_DIM | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_PAD |
                                        MK_KEY_WINDOW | MK_KEY_LAYER_TYPES | MK_KEY_MOE |
                                        MK_KEY_MOE_LOCAL};

// Multi-latent attention with DeepSeek's experts, and without (Youtu-LLM).
static const mk_family_t kDeepseekV2 = {
    "deepseek_v2", "DeepseekV2ForCausalLM", "silu",
    MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_MLA | MK_KEY_DEEPSEEK | MK_KEY_DEEPSEEK_V2};
static const mk_family_t kDeepseekV3 = {
    "deepseek_v3", "DeepseekV3ForCausalLM", "silu",
    MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_MLA | MK_KEY_DEEPSEEK};
static const mk_family_t kYoutu = {"youtu", "YoutuForCausalLM", "silu",
                                   MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_MLA};
// Youtu-VL (ADR 0027): Youtu-LLM's keys at the top level, a SigLIP-2 vision_config.
static const mk_family_t kYoutuVL = {"youtu_vl", "YoutuVLForConditionalGeneration", "silu",
                                     MK_KEY_ATTN_BIAS | MK_KEY_ACT | MK_KEY_TIE | MK_KEY_MLA};

// Vision-language models (issue 23): the outer model's model_type and class; the keys and the
// activation are those of the text model the preset's fields describe (mk_vision_t).
static const mk_family_t kQwen2VL = {"qwen2_vl", "Qwen2VLForConditionalGeneration", "silu",
                                     MK_KEY_ACT | MK_KEY_QWEN_WINDOW | MK_KEY_TIE};
static const mk_family_t kQwen25VL = {"qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration", "silu",
                                      MK_KEY_ACT | MK_KEY_QWEN_WINDOW | MK_KEY_TIE};
static const mk_family_t kQwen3VL = {"qwen3_vl", "Qwen3VLForConditionalGeneration", "silu",
                                     MK_KEY_ACT | MK_KEY_ATTN_BIAS | MK_KEY_HEAD_DIM | MK_KEY_TIE};
static const mk_family_t kGemma3VL = {"gemma3", "Gemma3ForConditionalGeneration",
                                      "gelu_pytorch_tanh",
                                      KEYS_GEMMA2 | MK_KEY_LOCAL_ROPE | MK_KEY_ROPE_SCALING};
static const mk_family_t kLlava = {"llava", "LlavaForConditionalGeneration", "silu",
                                   MK_KEY_ATTN_BIAS | MK_KEY_LLAMA | MK_KEY_HEAD_DIM | MK_KEY_ACT |
                                       MK_KEY_ROPE_SCALING | MK_KEY_TIE};
// Gemma 3n with its audio tower: Gemma3nForConditionalGeneration around Gemma 3n's text model.
static const mk_family_t kGemma3nAudio = {"gemma3n", "Gemma3nForConditionalGeneration",
                                          "gelu_pytorch_tanh", KEYS_GEMMA | MK_KEY_WINDOW};
static const mk_family_t kMolmo2 = {"molmo2", "Molmo2ForConditionalGeneration", "silu",
                                    MK_KEY_ATTN_BIAS | MK_KEY_HEAD_DIM | MK_KEY_ACT | MK_KEY_TIE};

static const mk_family_t *const kFamilies[] = {
    &kLlama,      &kQwen2,   &kQwen3,    &kMistral,      &kGemma,   &kGemma2,     &kGemma3,
    &kPhi3,       &kMixtral, &kQwen2Moe, &kQwen3Moe,     &kOlmoe,   &kDeepseekV2, &kDeepseekV3,
    &kYoutu,      &kGranite, &kMinicpm,  &kSmollm3,      &kMimo,    &kOlmo2,      &kInternlm3,
    &kOlmo3,      &kSeedOss, &kExaone,   &kExaone4,      &kCohere,  &kCohere2,    &kStablelm,
    &kStarcoder2, &kPhi4mm,  &kGptOss,   &kGemma3n,      &kQwen2VL, &kQwen25VL,   &kQwen3VL,
    &kGemma3VL,   &kLlava,   &kMolmo2,   &kGemma3nAudio, &kYoutuVL};
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

// Qwen2-VL / Qwen2.5-VL / Qwen3-VL: Qwen's specials through the vision ones, in the released
// order (with 293 specials in all, <|endoftext|> is 151643 and <|image_pad|> 151655).
static const mk_layout_t kQwenVL = {
    .top = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
            "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
            "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>",
            "<|video_pad|>"},
    .bos = "<|endoftext|>",
    .eos = "<|im_end|>",
    .chat_template = CHATML_TEMPLATE,
};

// Youtu-VL: Llama 3's, with the vision tokens after them (Youtu-VL-4B's ids are 128262..128264;
// the released tokenizer's other specials are not known here).
static const mk_layout_t kYoutuVLTokens = {
    .top = {"<|begin_of_text|>", "<|end_of_text|>", "<|vision_start|>", "<|vision_end|>",
            "<|image_pad|>"},
    .bos = "<|begin_of_text|>",
    .eos = "<|end_of_text|>",
    .add_bos = true,
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

// Gemma 3 with images: Gemma's tokens, the image markers and the soft token after the regular
// ones.
static const mk_layout_t kGemma3Image = {
    .bottom = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"},
    .top = {"<start_of_image>", "<end_of_image>", "<image_soft_token>"},
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

// LLaVA 1.5: Llama 2's tokens, <image> and <pad> after the regular ones (32000, 32001 with 67
// specials in all); USER / ASSISTANT turns.
static const mk_layout_t kLlavaTokens = {
    .bottom = {"<unk>", "<s>", "</s>"},
    .top = {"<image>", "<pad>"},
    .bos = "<s>",
    .eos = "</s>",
    .pad = "<pad>",
    .add_bos = true,
    .chat_template =
        "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}USER: {{ m.content }} "
        "{% elif m.role == 'assistant' %}ASSISTANT: {{ m.content }}{{ eos_token }}{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}",
};

// Gemma 3n with audio: Gemma's tokens, <start_of_image> and <start_of_audio> after the regular
// ones, and the image and audio tokens at the start of the vision and audio embedders' id
// ranges (Gemma-3n-E2B: 255999, 256000; 262144, 262145 and 262272, 262273 with 6407 specials).
static const mk_layout_t kGemma3nTokens = {
    .bottom = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"},
    .top = {"<start_of_image>", "<start_of_audio>"},
    .fixed = {"<end_of_image>", "<image_soft_token>", "<end_of_audio>", "<audio_soft_token>"},
    .fixed_from_end = {256, 255, 128, 127},
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

// The tiny one: 32 ids per embedder (vision from 320, audio from 352 of 384).
static const mk_layout_t kGemma3nTinyTokens = {
    .bottom = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"},
    .top = {"<start_of_image>", "<start_of_audio>"},
    .fixed = {"<end_of_image>", "<image_soft_token>", "<end_of_audio>", "<audio_soft_token>"},
    .fixed_from_end = {64, 63, 32, 31},
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

// Molmo2 (Qwen3 text models): Qwen's specials, and the image tokens past the vocabulary in the
// released ids' order (<im_start> 151936 ... <frame_end> 151944 at vocab 151936).
static const mk_layout_t kMolmo2Tokens = {
    .top = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"},
    .bos = "<|endoftext|>",
    .eos = "<|im_end|>",
    .additional = {"<im_start>", "<im_end>", "<im_patch>", "<im_col>", "<low_res_im_start>",
                   "<|image|>", "<im_low>", "<frame_start>", "<frame_end>"},
    .chat_template = CHATML_TEMPLATE,
};

// GPT-NeoX's tokenizer as OLMoE ships it: <|endoftext|> (0, also BOS / EOS), <|padding|> (1).
static const mk_layout_t kNeox = {
    .bottom = {"<|endoftext|>", "<|padding|>"},
    .bos = "<|endoftext|>",
    .eos = "<|endoftext|>",
    .pad = "<|padding|>",
};

// ---- Presets ----

// gpt-oss's rope_scaling: YaRN with its beta_fast / beta_slow and no truncation.
#define GPT_OSS_YARN(factor, original)                                             \
  "{\n    \"beta_fast\": 32.0,\n    \"beta_slow\": 1.0,\n    \"factor\": " #factor \
  ",\n    \"original_max_position_embeddings\": " #original                        \
  ",\n    \"rope_type\": \"yarn\",\n    \"truncate\": false\n  }"

// ---- Vision-language models: their towers and processors (the released files' values) ----
static const mk_vision_t kQwen2VL2B = {
    .text_model_type = NULL,
    .vision_config =
        "{\n"
        "    \"depth\": 32,\n"
        "    \"embed_dim\": 1280,\n"
        "    \"hidden_act\": \"quick_gelu\",\n"
        "    \"hidden_size\": 1536,\n"
        "    \"in_chans\": 3,\n"
        "    \"mlp_ratio\": 4,\n"
        "    \"model_type\": \"qwen2_vl\",\n"
        "    \"num_heads\": 16,\n"
        "    \"patch_size\": 14,\n"
        "    \"spatial_merge_size\": 2,\n"
        "    \"spatial_patch_size\": 14,\n"
        "    \"temporal_patch_size\": 2\n"
        "  }",
    .token_ids = {"image_token_id", "<|image_pad|>", "video_token_id", "<|video_pad|>",
                  "vision_start_token_id", "<|vision_start|>", "vision_end_token_id",
                  "<|vision_end|>"},
    .preprocessor =
        "{\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.48145466,\n"
        "    0.4578275,\n"
        "    0.40821073\n"
        "  ],\n"
        "  \"image_processor_type\": \"Qwen2VLImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.26862954,\n"
        "    0.26130258,\n"
        "    0.27577711\n"
        "  ],\n"
        "  \"merge_size\": 2,\n"
        "  \"patch_size\": 14,\n"
        "  \"resample\": 3,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"longest_edge\": 12845056,\n"
        "    \"shortest_edge\": 3136\n"
        "  },\n"
        "  \"temporal_patch_size\": 2\n"
        "}\n",
};

static const mk_vision_t kQwen2VLTiny = {
    .text_model_type = NULL,
    .vision_config =
        "{\n"
        "    \"depth\": 2,\n"
        "    \"embed_dim\": 32,\n"
        "    \"hidden_act\": \"quick_gelu\",\n"
        "    \"hidden_size\": 64,\n"
        "    \"in_chans\": 3,\n"
        "    \"mlp_ratio\": 2,\n"
        "    \"model_type\": \"qwen2_vl\",\n"
        "    \"num_heads\": 4,\n"
        "    \"patch_size\": 14,\n"
        "    \"spatial_merge_size\": 2,\n"
        "    \"temporal_patch_size\": 2\n"
        "  }",
    .token_ids = {"image_token_id", "<|image_pad|>", "video_token_id", "<|video_pad|>",
                  "vision_start_token_id", "<|vision_start|>", "vision_end_token_id",
                  "<|vision_end|>"},
    .preprocessor =
        "{\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.48145466,\n"
        "    0.4578275,\n"
        "    0.40821073\n"
        "  ],\n"
        "  \"image_processor_type\": \"Qwen2VLImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.26862954,\n"
        "    0.26130258,\n"
        "    0.27577711\n"
        "  ],\n"
        "  \"merge_size\": 2,\n"
        "  \"patch_size\": 14,\n"
        "  \"resample\": 3,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"longest_edge\": 12544,\n"
        "    \"shortest_edge\": 3136\n"
        "  },\n"
        "  \"temporal_patch_size\": 2\n"
        "}\n",
};

static const mk_vision_t kQwen25VL3B = {
    .text_model_type = NULL,
    .vision_config =
        "{\n"
        "    \"depth\": 32,\n"
        "    \"fullatt_block_indexes\": [\n"
        "      7,\n"
        "      15,\n"
        "      23,\n"
        "      31\n"
        "    ],\n"
        "    \"hidden_act\": \"silu\",\n"
        "    \"hidden_size\": 1280,\n"
        "    \"in_chans\": 3,\n"
        "    \"intermediate_size\": 3420,\n"
        "    \"model_type\": \"qwen2_5_vl\",\n"
        "    \"num_heads\": 16,\n"
        "    \"out_hidden_size\": 2048,\n"
        "    \"patch_size\": 14,\n"
        "    \"spatial_merge_size\": 2,\n"
        "    \"spatial_patch_size\": 14,\n"
        "    \"temporal_patch_size\": 2,\n"
        "    \"tokens_per_second\": 2,\n"
        "    \"window_size\": 112\n"
        "  }",
    .token_ids = {"image_token_id", "<|image_pad|>", "video_token_id", "<|video_pad|>",
                  "vision_start_token_id", "<|vision_start|>", "vision_end_token_id",
                  "<|vision_end|>"},
    .preprocessor =
        "{\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.48145466,\n"
        "    0.4578275,\n"
        "    0.40821073\n"
        "  ],\n"
        "  \"image_processor_type\": \"Qwen2VLImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.26862954,\n"
        "    0.26130258,\n"
        "    0.27577711\n"
        "  ],\n"
        "  \"merge_size\": 2,\n"
        "  \"patch_size\": 14,\n"
        "  \"resample\": 3,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"longest_edge\": 12845056,\n"
        "    \"shortest_edge\": 3136\n"
        "  },\n"
        "  \"temporal_patch_size\": 2\n"
        "}\n",
};

#define YOUTU_VL_TOKENS                                                             \
  {                                                                                 \
    "image_token_id", "<|image_pad|>", "vision_start_token_id", "<|vision_start|>", \
        "vision_end_token_id", "<|vision_end|>"                                     \
  }
#define YOUTU_VL_PREPROCESSOR                                \
  "{\n"                                                      \
  "  \"image_mean\": [\n    0.5,\n    0.5,\n    0.5\n  ],\n" \
  "  \"image_processor_type\": \"YoutuVLImageProcessor\",\n" \
  "  \"image_std\": [\n    0.5,\n    0.5,\n    0.5\n  ],\n"  \
  "  \"merge_size\": 2,\n"                                   \
  "  \"patch_size\": 16,\n"                                  \
  "  \"resample\": 2\n"                                      \
  "}\n"

// Youtu-VL-4B's SigLIP-2 so400m/16 tower (the window size and the full-attention blocks of the
// released config are not known here: Qwen2.5-VL's pattern, windows of 4 x 4 merged units).
static const mk_vision_t kYoutuVL4B = {
    .text_model_type = NULL,
    .vision_config =
        "{\n"
        "    \"fullatt_block_indexes\": [7, 15, 23, 26],\n"
        "    \"hidden_act\": \"gelu_pytorch_tanh\",\n"
        "    \"hidden_size\": 1152,\n"
        "    \"image_size\": 560,\n"
        "    \"intermediate_size\": 4304,\n"
        "    \"layer_norm_eps\": 1e-06,\n"
        "    \"num_attention_heads\": 16,\n"
        "    \"num_hidden_layers\": 27,\n"
        "    \"patch_size\": 16,\n"
        "    \"spatial_merge_size\": 2,\n"
        "    \"window_size\": 128\n"
        "  }",
    .token_ids = YOUTU_VL_TOKENS,
    .preprocessor = YOUTU_VL_PREPROCESSOR,
};

static const mk_vision_t kYoutuVLTiny = {
    .text_model_type = NULL,
    .vision_config =
        "{\n"
        "    \"fullatt_block_indexes\": [1],\n"
        "    \"hidden_act\": \"gelu_pytorch_tanh\",\n"
        "    \"hidden_size\": 32,\n"
        "    \"intermediate_size\": 48,\n"
        "    \"num_attention_heads\": 2,\n"
        "    \"num_hidden_layers\": 2,\n"
        "    \"patch_size\": 16,\n"
        "    \"spatial_merge_size\": 2,\n"
        "    \"window_size\": 64\n"
        "  }",
    .token_ids = YOUTU_VL_TOKENS,
    .preprocessor = YOUTU_VL_PREPROCESSOR,
};

static const mk_vision_t kQwen25VLTiny = {
    .text_model_type = NULL,
    .vision_config =
        "{\n"
        "    \"depth\": 2,\n"
        "    \"fullatt_block_indexes\": [\n"
        "      1\n"
        "    ],\n"
        "    \"hidden_act\": \"silu\",\n"
        "    \"hidden_size\": 32,\n"
        "    \"in_chans\": 3,\n"
        "    \"intermediate_size\": 48,\n"
        "    \"model_type\": \"qwen2_5_vl\",\n"
        "    \"num_heads\": 4,\n"
        "    \"out_hidden_size\": 64,\n"
        "    \"patch_size\": 14,\n"
        "    \"spatial_merge_size\": 2,\n"
        "    \"temporal_patch_size\": 2,\n"
        "    \"window_size\": 56\n"
        "  }",
    .token_ids = {"image_token_id", "<|image_pad|>", "video_token_id", "<|video_pad|>",
                  "vision_start_token_id", "<|vision_start|>", "vision_end_token_id",
                  "<|vision_end|>"},
    .preprocessor =
        "{\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.48145466,\n"
        "    0.4578275,\n"
        "    0.40821073\n"
        "  ],\n"
        "  \"image_processor_type\": \"Qwen2VLImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.26862954,\n"
        "    0.26130258,\n"
        "    0.27577711\n"
        "  ],\n"
        "  \"merge_size\": 2,\n"
        "  \"patch_size\": 14,\n"
        "  \"resample\": 3,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"longest_edge\": 12544,\n"
        "    \"shortest_edge\": 3136\n"
        "  },\n"
        "  \"temporal_patch_size\": 2\n"
        "}\n",
};

static const mk_vision_t kQwen3VL2B = {
    .text_model_type = "qwen3_vl_text",
    .vision_config =
        "{\n"
        "    \"deepstack_visual_indexes\": [\n"
        "      5,\n"
        "      11,\n"
        "      17\n"
        "    ],\n"
        "    \"depth\": 24,\n"
        "    \"hidden_act\": \"gelu_pytorch_tanh\",\n"
        "    \"hidden_size\": 1024,\n"
        "    \"in_channels\": 3,\n"
        "    \"intermediate_size\": 4096,\n"
        "    \"model_type\": \"qwen3_vl\",\n"
        "    \"num_heads\": 16,\n"
        "    \"num_position_embeddings\": 2304,\n"
        "    \"out_hidden_size\": 2048,\n"
        "    \"patch_size\": 16,\n"
        "    \"spatial_merge_size\": 2,\n"
        "    \"temporal_patch_size\": 2\n"
        "  }",
    .token_ids = {"image_token_id", "<|image_pad|>", "video_token_id", "<|video_pad|>",
                  "vision_start_token_id", "<|vision_start|>", "vision_end_token_id",
                  "<|vision_end|>"},
    .preprocessor =
        "{\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"image_processor_type\": \"Qwen2VLImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"merge_size\": 2,\n"
        "  \"patch_size\": 16,\n"
        "  \"resample\": 3,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"longest_edge\": 16777216,\n"
        "    \"shortest_edge\": 65536\n"
        "  },\n"
        "  \"temporal_patch_size\": 2\n"
        "}\n",
};

static const mk_vision_t kQwen3VLTiny = {
    .text_model_type = "qwen3_vl_text",
    .vision_config =
        "{\n"
        "    \"deepstack_visual_indexes\": [\n"
        "      0,\n"
        "      2\n"
        "    ],\n"
        "    \"depth\": 3,\n"
        "    \"hidden_act\": \"gelu_pytorch_tanh\",\n"
        "    \"hidden_size\": 32,\n"
        "    \"in_channels\": 3,\n"
        "    \"intermediate_size\": 48,\n"
        "    \"model_type\": \"qwen3_vl\",\n"
        "    \"num_heads\": 4,\n"
        "    \"num_position_embeddings\": 16,\n"
        "    \"out_hidden_size\": 64,\n"
        "    \"patch_size\": 16,\n"
        "    \"spatial_merge_size\": 2,\n"
        "    \"temporal_patch_size\": 2\n"
        "  }",
    .token_ids = {"image_token_id", "<|image_pad|>", "video_token_id", "<|video_pad|>",
                  "vision_start_token_id", "<|vision_start|>", "vision_end_token_id",
                  "<|vision_end|>"},
    .preprocessor =
        "{\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"image_processor_type\": \"Qwen2VLImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"merge_size\": 2,\n"
        "  \"patch_size\": 16,\n"
        "  \"resample\": 3,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"longest_edge\": 16384,\n"
        "    \"shortest_edge\": 1024\n"
        "  },\n"
        "  \"temporal_patch_size\": 2\n"
        "}\n",
};

static const mk_vision_t kGemma3VL4B = {
    .text_model_type = "gemma3_text",
    .vision_config =
        "{\n"
        "    \"hidden_act\": \"gelu_pytorch_tanh\",\n"
        "    \"hidden_size\": 1152,\n"
        "    \"image_size\": 896,\n"
        "    \"intermediate_size\": 4304,\n"
        "    \"layer_norm_eps\": 1e-06,\n"
        "    \"model_type\": \"siglip_vision_model\",\n"
        "    \"num_attention_heads\": 16,\n"
        "    \"num_channels\": 3,\n"
        "    \"num_hidden_layers\": 27,\n"
        "    \"patch_size\": 14,\n"
        "    \"vision_use_head\": false\n"
        "  }",
    .token_ids = {"boi_token_index", "<start_of_image>", "eoi_token_index", "<end_of_image>",
                  "image_token_index", "<image_soft_token>"},
    .extra = {"mm_tokens_per_image", "256"},
    .preprocessor =
        "{\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_pan_and_scan\": false,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"image_processor_type\": \"Gemma3ImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"resample\": 2,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"height\": 896,\n"
        "    \"width\": 896\n"
        "  }\n"
        "}\n",
};

static const mk_vision_t kGemma3VLTiny = {
    .text_model_type = "gemma3_text",
    .vision_config =
        "{\n"
        "    \"hidden_act\": \"gelu_pytorch_tanh\",\n"
        "    \"hidden_size\": 32,\n"
        "    \"image_size\": 64,\n"
        "    \"intermediate_size\": 64,\n"
        "    \"layer_norm_eps\": 1e-06,\n"
        "    \"model_type\": \"siglip_vision_model\",\n"
        "    \"num_attention_heads\": 4,\n"
        "    \"num_channels\": 3,\n"
        "    \"num_hidden_layers\": 2,\n"
        "    \"patch_size\": 8,\n"
        "    \"vision_use_head\": false\n"
        "  }",
    .token_ids = {"boi_token_index", "<start_of_image>", "eoi_token_index", "<end_of_image>",
                  "image_token_index", "<image_soft_token>"},
    .extra = {"mm_tokens_per_image", "16"},
    .preprocessor =
        "{\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"image_processor_type\": \"Gemma3ImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"resample\": 2,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"height\": 64,\n"
        "    \"width\": 64\n"
        "  }\n"
        "}\n",
};

static const mk_vision_t kLlava15_7B = {
    .text_model_type = "llama",
    .vision_config =
        "{\n"
        "    \"hidden_act\": \"quick_gelu\",\n"
        "    \"hidden_size\": 1024,\n"
        "    \"image_size\": 336,\n"
        "    \"intermediate_size\": 4096,\n"
        "    \"layer_norm_eps\": 1e-05,\n"
        "    \"model_type\": \"clip_vision_model\",\n"
        "    \"num_attention_heads\": 16,\n"
        "    \"num_channels\": 3,\n"
        "    \"num_hidden_layers\": 24,\n"
        "    \"patch_size\": 14,\n"
        "    \"projection_dim\": 768\n"
        "  }",
    .token_ids = {"image_token_index", "<image>"},
    .extra = {"image_seq_length", "576", "projector_hidden_act", "\"gelu\"", "vision_feature_layer",
              "-2", "vision_feature_select_strategy", "\"default\""},
    .preprocessor =
        "{\n"
        "  \"crop_size\": {\n"
        "    \"height\": 336,\n"
        "    \"width\": 336\n"
        "  },\n"
        "  \"do_center_crop\": true,\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.48145466,\n"
        "    0.4578275,\n"
        "    0.40821073\n"
        "  ],\n"
        "  \"image_processor_type\": \"CLIPImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.26862954,\n"
        "    0.26130258,\n"
        "    0.27577711\n"
        "  ],\n"
        "  \"resample\": 3,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"shortest_edge\": 336\n"
        "  }\n"
        "}\n",
};

static const mk_vision_t kLlavaTiny = {
    .text_model_type = "llama",
    .vision_config =
        "{\n"
        "    \"hidden_act\": \"quick_gelu\",\n"
        "    \"hidden_size\": 32,\n"
        "    \"image_size\": 56,\n"
        "    \"intermediate_size\": 64,\n"
        "    \"layer_norm_eps\": 1e-05,\n"
        "    \"model_type\": \"clip_vision_model\",\n"
        "    \"num_attention_heads\": 4,\n"
        "    \"num_channels\": 3,\n"
        "    \"num_hidden_layers\": 3,\n"
        "    \"patch_size\": 14,\n"
        "    \"projection_dim\": 32\n"
        "  }",
    .token_ids = {"image_token_index", "<image>"},
    .extra = {"image_seq_length", "16", "projector_hidden_act", "\"gelu\"", "vision_feature_layer",
              "-2", "vision_feature_select_strategy", "\"default\""},
    .preprocessor =
        "{\n"
        "  \"crop_size\": {\n"
        "    \"height\": 56,\n"
        "    \"width\": 56\n"
        "  },\n"
        "  \"do_center_crop\": true,\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.48145466,\n"
        "    0.4578275,\n"
        "    0.40821073\n"
        "  ],\n"
        "  \"image_processor_type\": \"CLIPImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.26862954,\n"
        "    0.26130258,\n"
        "    0.27577711\n"
        "  ],\n"
        "  \"resample\": 3,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"shortest_edge\": 56\n"
        "  }\n"
        "}\n",
};

// Molmo2-4B's tower (SigLIP 2 so400m at 378 px, patch 14), adapter and processor as transformers
// 5.25 saves the released files (allenai/Molmo2-4B's config.json and preprocessor_config.json:
// its vit_config of 27 layers read at vit_layers [-3, -9], which Molmo2Config trims to the 25
// layers the weights hold, [24, 18]; the adapter's intermediate size 9728 and text_hidden_size
// 2560 are Qwen3-4B's). Without a processor_config.json the prompt takes Molmo2Processor's
// defaults.
static const mk_vision_t kMolmo2_4B = {
    .text_model_type = "molmo2_text",
    .vision_config =
        "{\n"
        "    \"attention_bias\": true,\n"
        "    \"attention_dropout\": 0.0,\n"
        "    \"head_dim\": 72,\n"
        "    \"hidden_act\": \"gelu_pytorch_tanh\",\n"
        "    \"hidden_size\": 1152,\n"
        "    \"image_size\": [\n"
        "      378,\n"
        "      378\n"
        "    ],\n"
        "    \"initializer_range\": 0.02,\n"
        "    \"intermediate_size\": 4304,\n"
        "    \"layer_norm_eps\": 1e-06,\n"
        "    \"model_type\": \"molmo2_vision\",\n"
        "    \"num_attention_heads\": 16,\n"
        "    \"num_channels\": 3,\n"
        "    \"num_hidden_layers\": 25,\n"
        "    \"num_key_value_heads\": 16,\n"
        "    \"num_position_embeddings\": 729,\n"
        "    \"patch_size\": 14\n"
        "  }",
    .token_ids = {"image_start_token_id", "<im_start>", "image_end_token_id", "<im_end>",
                  "image_patch_id", "<im_patch>", "low_res_image_start_token_id",
                  "<low_res_im_start>", "frame_start_token_id", "<frame_start>",
                  "frame_end_token_id", "<frame_end>"},
    .extra = {"adapter_config",
              "{\n"
              "    \"attention_bias\": true,\n"
              "    \"attention_dropout\": 0.0,\n"
              "    \"head_dim\": 72,\n"
              "    \"hidden_act\": \"silu\",\n"
              "    \"hidden_size\": 1152,\n"
              "    \"initializer_range\": 0.02,\n"
              "    \"intermediate_size\": 9728,\n"
              "    \"mlp_bias\": false,\n"
              "    \"model_type\": \"molmo2_adapter\",\n"
              "    \"num_attention_heads\": 16,\n"
              "    \"num_key_value_heads\": 16,\n"
              "    \"text_hidden_size\": 2560,\n"
              "    \"vision_feature_layer\": [\n"
              "      24,\n"
              "      18\n"
              "    ]\n"
              "  }"},
    .preprocessor =
        "{\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"image_processor_type\": \"Molmo2ImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"max_crops\": 8,\n"
        "  \"overlap_margins\": [\n"
        "    4,\n"
        "    4\n"
        "  ],\n"
        "  \"patch_size\": 14,\n"
        "  \"pooling_size\": [\n"
        "    2,\n"
        "    2\n"
        "  ],\n"
        "  \"resample\": 2,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"height\": 378,\n"
        "    \"width\": 378\n"
        "  }\n"
        "}\n",
};

// The shapes of the repository's transformers fixture (tests/data/families/molmo2): 40 px crops
// of 8 px patches, whose 5 x 5 global view pads its pooling windows.
static const mk_vision_t kMolmo2Tiny = {
    .text_model_type = "molmo2_text",
    .vision_config =
        "{\n"
        "    \"attention_bias\": true,\n"
        "    \"attention_dropout\": 0.0,\n"
        "    \"head_dim\": 8,\n"
        "    \"hidden_act\": \"gelu_pytorch_tanh\",\n"
        "    \"hidden_size\": 32,\n"
        "    \"image_size\": [\n"
        "      40,\n"
        "      40\n"
        "    ],\n"
        "    \"initializer_range\": 0.02,\n"
        "    \"intermediate_size\": 64,\n"
        "    \"layer_norm_eps\": 1e-06,\n"
        "    \"model_type\": \"molmo2_vision\",\n"
        "    \"num_attention_heads\": 4,\n"
        "    \"num_channels\": 3,\n"
        "    \"num_hidden_layers\": 3,\n"
        "    \"num_key_value_heads\": 4,\n"
        "    \"num_position_embeddings\": 25,\n"
        "    \"patch_size\": 8\n"
        "  }",
    .token_ids = {"image_start_token_id", "<im_start>", "image_end_token_id", "<im_end>",
                  "image_patch_id", "<im_patch>", "low_res_image_start_token_id",
                  "<low_res_im_start>", "frame_start_token_id", "<frame_start>",
                  "frame_end_token_id", "<frame_end>"},
    .extra = {"adapter_config",
              "{\n"
              "    \"attention_bias\": true,\n"
              "    \"attention_dropout\": 0.0,\n"
              "    \"head_dim\": 8,\n"
              "    \"hidden_act\": \"silu\",\n"
              "    \"hidden_size\": 32,\n"
              "    \"initializer_range\": 0.02,\n"
              "    \"intermediate_size\": 48,\n"
              "    \"mlp_bias\": false,\n"
              "    \"model_type\": \"molmo2_adapter\",\n"
              "    \"num_attention_heads\": 4,\n"
              "    \"num_key_value_heads\": 4,\n"
              "    \"text_hidden_size\": 64,\n"
              "    \"vision_feature_layer\": [\n"
              "      -1,\n"
              "      1\n"
              "    ]\n"
              "  }"},
    .preprocessor =
        "{\n"
        "  \"do_convert_rgb\": true,\n"
        "  \"do_normalize\": true,\n"
        "  \"do_rescale\": true,\n"
        "  \"do_resize\": true,\n"
        "  \"image_mean\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"image_processor_type\": \"Molmo2ImageProcessor\",\n"
        "  \"image_std\": [\n"
        "    0.5,\n"
        "    0.5,\n"
        "    0.5\n"
        "  ],\n"
        "  \"max_crops\": 4,\n"
        "  \"overlap_margins\": [\n"
        "    1,\n"
        "    1\n"
        "  ],\n"
        "  \"patch_size\": 8,\n"
        "  \"pooling_size\": [\n"
        "    2,\n"
        "    2\n"
        "  ],\n"
        "  \"resample\": 2,\n"
        "  \"rescale_factor\": 0.00392156862745098,\n"
        "  \"size\": {\n"
        "    \"height\": 40,\n"
        "    \"width\": 40\n"
        "  }\n"
        "}\n",
};

// Gemma-3n-E2B's audio tower (the USM conformer: 12 blocks of 1536, 8 heads, chunks of 12 frames
// with 13 left / 0 right of context, 188 tokens per clip) and embedders, Gemma3nConfig's and
// Gemma3nAudioConfig's defaults as transformers 5.25 writes them (google/gemma-3n-E2B's values);
// the vision tower (MobileNet-V5) is not written: the engine runs Gemma 3n's audio, not its images.
static const mk_vision_t kGemma3nE2BAudio = {
    .text_model_type = "gemma3n_text",
    .vision_config =
        "{\n"
        "    \"architecture\": \"mobilenetv5_300m_enc\",\n"
        "    \"do_pooling\": false,\n"
        "    \"hidden_size\": 2048,\n"
        "    \"initializer_range\": 0.02,\n"
        "    \"model_type\": \"gemma3n_vision\",\n"
        "    \"rms_norm_eps\": 1e-06,\n"
        "    \"vocab_offset\": 262144,\n"
        "    \"vocab_size\": 128\n"
        "  }",
    .token_ids = {"boi_token_id", "<start_of_image>", "eoi_token_id", "<end_of_image>",
                  "image_token_id", "<image_soft_token>", "boa_token_id", "<start_of_audio>",
                  "eoa_token_id", "<end_of_audio>", "audio_token_id", "<audio_soft_token>"},
    .extra = {"audio_config",
              "{\n"
              "    \"conf_attention_chunk_size\": 12,\n"
              "    \"conf_attention_context_left\": 13,\n"
              "    \"conf_attention_context_right\": 0,\n"
              "    \"conf_attention_logit_cap\": 50.0,\n"
              "    \"conf_conv_kernel_size\": 5,\n"
              "    \"conf_num_attention_heads\": 8,\n"
              "    \"conf_num_hidden_layers\": 12,\n"
              "    \"conf_reduction_factor\": 4,\n"
              "    \"conf_residual_weight\": 0.5,\n"
              "    \"gradient_clipping\": 10000000000.0,\n"
              "    \"hidden_size\": 1536,\n"
              "    \"input_feat_size\": 128,\n"
              "    \"model_type\": \"gemma3n_audio\",\n"
              "    \"rms_norm_eps\": 1e-06,\n"
              "    \"sscp_conv_channel_size\": [\n"
              "      128,\n"
              "      32\n"
              "    ],\n"
              "    \"sscp_conv_group_norm_eps\": 0.001,\n"
              "    \"sscp_conv_kernel_size\": [\n"
              "      [\n"
              "        3,\n"
              "        3\n"
              "      ],\n"
              "      [\n"
              "        3,\n"
              "        3\n"
              "      ]\n"
              "    ],\n"
              "    \"sscp_conv_stride_size\": [\n"
              "      [\n"
              "        2,\n"
              "        2\n"
              "      ],\n"
              "      [\n"
              "        2,\n"
              "        2\n"
              "      ]\n"
              "    ],\n"
              "    \"vocab_offset\": 262272,\n"
              "    \"vocab_size\": 128\n"
              "  }",
              "audio_soft_tokens_per_image", "188", "vision_soft_tokens_per_image", "256"},
};

// The tiny tower of the repository's transformers fixture (tests/data/families/gemma3n-audio):
// 2 blocks of 32, chunks of 3 with 3 left / 1 right, 16 tokens per clip.
static const mk_vision_t kGemma3nTinyAudio = {
    .text_model_type = "gemma3n_text",
    .vision_config =
        "{\n"
        "    \"architecture\": \"mobilenetv5_300m_enc\",\n"
        "    \"do_pooling\": false,\n"
        "    \"hidden_size\": 16,\n"
        "    \"initializer_range\": 0.02,\n"
        "    \"model_type\": \"gemma3n_vision\",\n"
        "    \"rms_norm_eps\": 1e-06,\n"
        "    \"vocab_offset\": 320,\n"
        "    \"vocab_size\": 32\n"
        "  }",
    .token_ids = {"boi_token_id", "<start_of_image>", "eoi_token_id", "<end_of_image>",
                  "image_token_id", "<image_soft_token>", "boa_token_id", "<start_of_audio>",
                  "eoa_token_id", "<end_of_audio>", "audio_token_id", "<audio_soft_token>"},
    .extra = {"audio_config",
              "{\n"
              "    \"conf_attention_chunk_size\": 3,\n"
              "    \"conf_attention_context_left\": 3,\n"
              "    \"conf_attention_context_right\": 1,\n"
              "    \"conf_attention_logit_cap\": 5.0,\n"
              "    \"conf_conv_kernel_size\": 3,\n"
              "    \"conf_num_attention_heads\": 4,\n"
              "    \"conf_num_hidden_layers\": 2,\n"
              "    \"conf_reduction_factor\": 2,\n"
              "    \"conf_residual_weight\": 0.5,\n"
              "    \"gradient_clipping\": 3.0,\n"
              "    \"hidden_size\": 32,\n"
              "    \"input_feat_size\": 128,\n"
              "    \"model_type\": \"gemma3n_audio\",\n"
              "    \"rms_norm_eps\": 1e-06,\n"
              "    \"sscp_conv_channel_size\": [\n"
              "      8,\n"
              "      4\n"
              "    ],\n"
              "    \"sscp_conv_group_norm_eps\": 0.001,\n"
              "    \"sscp_conv_kernel_size\": [\n"
              "      [\n"
              "        3,\n"
              "        3\n"
              "      ],\n"
              "      [\n"
              "        3,\n"
              "        3\n"
              "      ]\n"
              "    ],\n"
              "    \"sscp_conv_stride_size\": [\n"
              "      [\n"
              "        2,\n"
              "        2\n"
              "      ],\n"
              "      [\n"
              "        2,\n"
              "        2\n"
              "      ]\n"
              "    ],\n"
              "    \"vocab_offset\": 352,\n"
              "    \"vocab_size\": 32\n"
              "  }",
              "audio_soft_tokens_per_image", "16", "vision_soft_tokens_per_image", "4"},
};

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
    {.name = "tiny",
     .desc = "test: AltUp, Laurel, per-layer inputs, layers 6-9 sharing KV, window 8",
     .family = &kGemma3n,
     .layout = &kGemmaTokens,
     TINY_SIZES,
     .layers = 10,
     .head_dim = 16,
     .theta = 1000000.0,
     .eps = "1e-06",
     .window = 8,
     .extra = {"hidden_size_per_layer_input", "8", "vocab_size_per_layer_input", "160",
               "laurel_rank", "8", "num_kv_shared_layers", "4"}},
    {.name = "gemma-3n-E2B",
     .desc = "Gemma-3n-E2B (text)",
     .family = &kGemma3n,
     .layout = &kGemmaTokens,
     .vocab = 262400,
     .hidden = 2048,
     .inter = 8192,
     .layers = 30,
     .heads = 8,
     .kv_heads = 2,
     .head_dim = 256,
     .max_pos = 32768,
     .theta = 1000000.0,
     .eps = "1e-06",
     .window = 512,
     .note = "f32 needs 20 GiB (the per-layer table is 2G values): use --dtype bf16",
     .extra = {"num_kv_shared_layers", "10"}},
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
    // OLMo 3 (OLMo 2 with sliding layers), Seed-OSS (q/k/v biases), EXAONE 3.5 / 4 (q/k norms
    // and post-norms, NoPE full layers with a window).
    {.name = "tiny",
     .desc = "test: window 8 on 3 of 4 layers",
     .family = &kOlmo3,
     .layout = &kNeox,
     TINY_SIZES,
     .layers = 4,
     .head_dim = 16,
     .theta = 500000.0,
     .eps = "1e-06",
     .untied = true,
     .window = 8},
    {.name = "olmo-3-7b",
     .desc = "Olmo-3-1025-7B's shape, without its YaRN scaling",
     .family = &kOlmo3,
     .layout = &kNeox,
     .vocab = 100278,
     .hidden = 4096,
     .inter = 11008,
     .layers = 32,
     .heads = 32,
     .kv_heads = 32,
     .head_dim = 128,
     .max_pos = 65536,
     .theta = 500000.0,
     .eps = "1e-06",
     .untied = true,
     .window = 4096,
     .note = "f32 needs 29 GB: use --dtype bf16"},
    {.name = "tiny",
     .desc = "test model",
     .family = &kSeedOss,
     .layout = &kLlama3,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-06",
     .untied = true,
     .extra = {"attention_bias", "true", "attention_out_bias", "false"}},
    {.name = "seed-oss-36b",
     .desc = "Seed-OSS-36B",
     .family = &kSeedOss,
     .layout = &kLlama3,
     .vocab = 155136,
     .hidden = 5120,
     .inter = 27648,
     .layers = 64,
     .heads = 80,
     .kv_heads = 8,
     .head_dim = 128,
     .max_pos = 524288,
     .theta = 10000000.0,
     .eps = "1e-06",
     .untied = true,
     .note = "72 GB at bf16: does not fit 24 GiB",
     .extra = {"attention_bias", "true", "attention_out_bias", "false"}},
    {.name = "tiny",
     .desc = "test model",
     .family = &kExaone,
     .layout = &kLlama2,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 500000.0,
     .eps = "1e-05",
     .untied = true},
    {.name = "exaone-3.5-2.4b",
     .desc = "EXAONE-3.5-2.4B-Instruct",
     .family = &kExaone,
     .layout = &kLlama2,
     .vocab = 102400,
     .hidden = 2560,
     .inter = 7168,
     .layers = 30,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 80,
     .max_pos = 32768,
     .theta = 1000000.0,
     .eps = "1e-05",
     .extra = {"rope_scaling",
               "{\n    \"factor\": 8.0,\n    \"high_freq_factor\": 4.0,\n    \"low_freq_factor\": "
               "1.0,\n    \"original_max_position_embeddings\": 8192,\n    \"rope_type\": "
               "\"llama3\"\n  }"}},
    {.name = "tiny",
     .desc = "test: window 8 on every other layer, NoPE full layers",
     .family = &kExaone4,
     .layout = &kLlama2,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .window = 8,
     .extra = {"sliding_window_pattern", "2"}},
    {.name = "exaone-4.0-1.2b",
     .desc = "EXAONE-4.0-1.2B's shape",
     .family = &kExaone4,
     .layout = &kLlama2,
     .vocab = 102400,
     .hidden = 2048,
     .inter = 4096,
     .layers = 30,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 64,
     .max_pos = 65536,
     .theta = 1000000.0,
     .eps = "1e-05"},
    // Cohere (parallel block, LayerNorm, logit scale), Cohere 2 (RoPE only on sliding layers),
    // StableLM 2 (LayerNorm, partial rotary, q/k/v biases), StarCoder 2 (LayerNorm, biases,
    // GELU MLP).
    {.name = "tiny",
     .desc = "test model",
     .family = &kCohere,
     .layout = &kLlama2,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .extra = {"logit_scale", "0.25", "use_qk_norm", "false"}},
    {.name = "aya-23-8b",
     .desc = "aya-23-8B",
     .family = &kCohere,
     .layout = &kLlama2,
     .vocab = 256000,
     .hidden = 4096,
     .inter = 14336,
     .layers = 32,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 128,
     .max_pos = 8192,
     .theta = 10000.0,
     .eps = "1e-05",
     .note = "f32 needs 32 GB: use --dtype bf16",
     .extra = {"logit_scale", "0.125", "use_qk_norm", "false"}},
    {.name = "tiny",
     .desc = "test: window 8 on every other layer",
     .family = &kCohere2,
     .layout = &kLlama2,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .window = 8,
     .extra = {"logit_scale", "0.25", "sliding_window_pattern", "2"}},
    {.name = "command-r7b",
     .desc = "c4ai-command-r7b-12-2024",
     .family = &kCohere2,
     .layout = &kLlama2,
     .vocab = 256000,
     .hidden = 4096,
     .inter = 14336,
     .layers = 32,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 128,
     .max_pos = 8192,
     .theta = 50000.0,
     .eps = "1e-05",
     .window = 4096,
     .note = "f32 needs 32 GB: use --dtype bf16",
     .extra = {"logit_scale", "0.25", "sliding_window_pattern", "4"}},
    {.name = "tiny",
     .desc = "test: partial rotary 0.25",
     .family = &kStablelm,
     .layout = &kNeox,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .extra = {"partial_rotary_factor", "0.25", "use_qkv_bias", "true", "qk_layernorm", "false",
               "use_parallel_residual", "false", "hidden_dropout", "0.0"}},
    {.name = "stablelm-2-1.6b",
     .desc = "stablelm-2-1_6b",
     .family = &kStablelm,
     .layout = &kNeox,
     .vocab = 100352,
     .hidden = 2048,
     .inter = 5632,
     .layers = 24,
     .heads = 32,
     .kv_heads = 32,
     .head_dim = 64,
     .max_pos = 4096,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .extra = {"partial_rotary_factor", "0.25", "use_qkv_bias", "true", "qk_layernorm", "false",
               "use_parallel_residual", "false", "hidden_dropout", "0.0"}},
    {.name = "tiny",
     .desc = "test: window 8",
     .family = &kStarcoder2,
     .layout = &kNeox,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .window = 8,
     .extra = {"use_bias", "true", "residual_dropout", "0.0", "embedding_dropout", "0.0"}},
    {.name = "starcoder2-3b",
     .desc = "starcoder2-3b",
     .family = &kStarcoder2,
     .layout = &kNeox,
     .vocab = 49152,
     .hidden = 3072,
     .inter = 12288,
     .layers = 30,
     .heads = 24,
     .kv_heads = 2,
     .head_dim = 128,
     .max_pos = 16384,
     .theta = 999999.4420358813,
     .eps = "1e-05",
     .window = 4096,
     .extra = {"use_bias", "true", "residual_dropout", "0.0", "embedding_dropout", "0.0"}},
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
    {.name = "tiny",
     .desc = "test: partial rotary",
     .family = &kPhi4mm,
     .layout = &kPhi3Tokens,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .partial_rotary = 0.75},
    {.name = "phi-4-multimodal",
     .desc = "Phi-4-multimodal-instruct's text model, without its LongRoPE",
     .family = &kPhi4mm,
     .layout = &kPhi3Tokens,
     .vocab = 200064,
     .hidden = 3072,
     .inter = 8192,
     .layers = 32,
     .heads = 24,
     .kv_heads = 8,
     .head_dim = 128,
     .max_pos = 131072,
     .theta = 10000.0,
     .eps = "1e-05",
     .partial_rotary = 0.75,
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
    {.name = "tiny",
     .desc = "test: sinks, window 8 on every other layer, 4 experts, top 2, YaRN",
     .family = &kGptOss,
     .layout = &kLlama3,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 150000.0,
     .eps = "1e-05",
     .untied = true,
     .window = 8,
     .experts = 4,
     .top_k = 2,
     .extra = {"attention_bias", "true", "swiglu_limit", "7.0", "rope_scaling",
               GPT_OSS_YARN(4.0, 64)}},
    {.name = "tiny-mxfp4",
     .desc = "test: tiny with MXFP4 experts as released (blocks and e8m0 scales)",
     .family = &kGptOss,
     .layout = &kLlama3,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 150000.0,
     .eps = "1e-05",
     .untied = true,
     .window = 8,
     .experts = 4,
     .top_k = 2,
     .mxfp4_experts = true,
     .extra = {"attention_bias", "true", "swiglu_limit", "7.0", "rope_scaling",
               GPT_OSS_YARN(4.0, 64)}},
    {.name = "gpt-oss-20b",
     .desc = "gpt-oss-20b's shape, MXFP4 experts as released",
     .family = &kGptOss,
     .layout = &kLlama3,
     .vocab = 201088,
     .hidden = 2880,
     .inter = 2880,
     .layers = 24,
     .heads = 64,
     .kv_heads = 8,
     .head_dim = 64,
     .max_pos = 131072,
     .theta = 150000.0,
     .eps = "1e-05",
     .untied = true,
     .window = 128,
     .experts = 32,
     .top_k = 4,
     .mxfp4_experts = true,
     .note = "13 GB at bf16 with its MXFP4 experts, as shipped: --dtype bf16",
     .extra = {"attention_bias", "true", "swiglu_limit", "7.0", "rope_scaling",
               GPT_OSS_YARN(32.0, 4096)}},
    {.name = "gpt-oss-20b-4l",
     .desc = "gpt-oss-20b's shape, 4 of its 24 layers, experts unquantized",
     .family = &kGptOss,
     .layout = &kLlama3,
     .vocab = 201088,
     .hidden = 2880,
     .inter = 2880,
     .layers = 4,
     .heads = 64,
     .kv_heads = 8,
     .head_dim = 64,
     .max_pos = 131072,
     .theta = 150000.0,
     .eps = "1e-05",
     .untied = true,
     .window = 128,
     .experts = 32,
     .top_k = 4,
     .note = "the whole model is 42 GB at bf16 (13 GB as shipped, MXFP4 experts); 4 layers "
             "are 9 GB at bf16",
     .extra = {"attention_bias", "true", "swiglu_limit", "7.0", "rope_scaling",
               GPT_OSS_YARN(32.0, 4096)}},
    {.name = "tiny",
     .desc = "test: MLA (low-rank query), dense layers, tied head",
     .family = &kYoutu,
     .layout = &kLlama3,
     .vocab = 320,
     .hidden = 64,
     .inter = 128,
     .heads = 4,
     .kv_heads = 4,
     .max_pos = 256,
     .layers = 2,
     .head_dim = 8,
     .theta = 1600000.0,
     .eps = "1e-06",
     .kv_lora = 16,
     .q_lora = 24,
     .qk_nope = 16,
     .qk_rope = 8,
     .v_dim = 12},
    {.name = "tiny",
     .desc = "test: Youtu-VL (SigLIP-2 patches in a windowed tower, MLA text model)",
     .family = &kYoutuVL,
     .layout = &kYoutuVLTokens,
     .vocab = 320,
     .hidden = 64,
     .inter = 128,
     .heads = 4,
     .kv_heads = 4,
     .max_pos = 256,
     .layers = 2,
     .head_dim = 8,
     .theta = 1600000.0,
     .eps = "1e-06",
     .kv_lora = 16,
     .q_lora = 24,
     .qk_nope = 16,
     .qk_rope = 8,
     .v_dim = 12,
     .vision = &kYoutuVLTiny},
    {.name = "youtu-vl-4b",
     .desc = "Youtu-VL-4B's tower (SigLIP-2 so400m/16, 27 blocks of 1152) over Youtu-LLM-2B's "
             "shape (the released text config is not known here)",
     .family = &kYoutuVL,
     .layout = &kYoutuVLTokens,
     .vocab = 128256,
     .hidden = 2048,
     .inter = 6144,
     .layers = 32,
     .heads = 16,
     .kv_heads = 16,
     .head_dim = 64,
     .max_pos = 131072,
     .theta = 1600000.0,
     .eps = "1e-06",
     .kv_lora = 512,
     .q_lora = 1536,
     .qk_nope = 128,
     .qk_rope = 64,
     .v_dim = 128,
     .vision = &kYoutuVL4B},
    {.name = "youtu-llm-2b",
     .desc = "Youtu-LLM-2B's shape (MLA: query rank 1536, latent 512, nope 128 + rope 64)",
     .family = &kYoutu,
     .layout = &kLlama3,
     .vocab = 128256,
     .hidden = 2048,
     .inter = 6144,
     .layers = 32,
     .heads = 16,
     .kv_heads = 16,
     .head_dim = 64,
     .max_pos = 131072,
     .theta = 1600000.0,
     .eps = "1e-06",
     .kv_lora = 512,
     .q_lora = 1536,
     .qk_nope = 128,
     .qk_rope = 64,
     .v_dim = 128},
    // Vision-language models (issue 23): the text model's shape in the fields, the tower and the
    // processor in .vision.
    {.name = "tiny",
     .desc = "test: Qwen2-VL tower (2 blocks), M-RoPE",
     .family = &kQwen2VL,
     .layout = &kQwenVL,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 1000000.0,
     .eps = "1e-06",
     .extra = {"rope_scaling", "{\"mrope_section\": [2, 3, 3], \"type\": \"mrope\"}"},
     .vision = &kQwen2VLTiny},
    {.name = "qwen2-vl-2b",
     .desc = "Qwen2-VL-2B (675M-parameter tower)",
     .family = &kQwen2VL,
     .layout = &kQwenVL,
     .vocab = 151936,
     .hidden = 1536,
     .inter = 8960,
     .layers = 28,
     .heads = 12,
     .kv_heads = 2,
     .head_dim = 128,
     .max_pos = 32768,
     .theta = 1000000.0,
     .eps = "1e-06",
     .n_special = 293,
     .max_window_layers = 28,
     .extra = {"rope_scaling", "{\"mrope_section\": [16, 24, 24], \"type\": \"mrope\"}"},
     .vision = &kQwen2VL2B},
    {.name = "tiny",
     .desc = "test: Qwen2.5-VL tower (windows, one full block), M-RoPE",
     .family = &kQwen25VL,
     .layout = &kQwenVL,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 1000000.0,
     .eps = "1e-06",
     .extra = {"rope_scaling", "{\"mrope_section\": [2, 3, 3], \"type\": \"mrope\"}"},
     .vision = &kQwen25VLTiny},
    {.name = "qwen2.5-vl-3b",
     .desc = "Qwen2.5-VL-3B (670M-parameter tower)",
     .family = &kQwen25VL,
     .layout = &kQwenVL,
     .vocab = 151936,
     .hidden = 2048,
     .inter = 11008,
     .layers = 36,
     .heads = 16,
     .kv_heads = 2,
     .head_dim = 128,
     .max_pos = 128000,
     .theta = 1000000.0,
     .eps = "1e-06",
     .n_special = 293,
     .max_window_layers = 70,
     .extra = {"rope_scaling", "{\"mrope_section\": [16, 24, 24], \"type\": \"mrope\"}"},
     .vision = &kQwen25VL3B},
    {.name = "tiny",
     .desc = "test: Qwen3-VL tower (DeepStack), interleaved M-RoPE",
     .family = &kQwen3VL,
     .layout = &kQwenVL,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 5000000.0,
     .eps = "1e-06",
     .extra = {"rope_scaling",
               "{\"mrope_interleaved\": true, \"mrope_section\": [4, 2, 2], \"rope_type\": "
               "\"default\"}"},
     .vision = &kQwen3VLTiny},
    {.name = "qwen3-vl-2b",
     .desc = "Qwen3-VL-2B (405M-parameter tower, DeepStack)",
     .family = &kQwen3VL,
     .layout = &kQwenVL,
     .vocab = 151936,
     .hidden = 2048,
     .inter = 6144,
     .layers = 28,
     .heads = 16,
     .kv_heads = 8,
     .head_dim = 128,
     .max_pos = 262144,
     .theta = 5000000.0,
     .eps = "1e-06",
     .n_special = 293,
     .extra = {"rope_scaling",
               "{\"mrope_interleaved\": true, \"mrope_section\": [24, 20, 20], \"rope_type\": "
               "\"default\"}"},
     .vision = &kQwen3VL2B},
    {.name = "tiny",
     .desc = "test: SigLIP tower, pooled projector, image blocks",
     .family = &kGemma3VL,
     .layout = &kGemma3Image,
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
     .window_pattern = 6,
     .vision = &kGemma3VLTiny},
    {.name = "gemma-3-4b",
     .desc = "Gemma-3-4B (SigLIP so400m tower, 896 px)",
     .family = &kGemma3VL,
     .layout = &kGemma3Image,
     .vocab = 262208,
     .hidden = 2560,
     .inter = 10240,
     .layers = 34,
     .heads = 8,
     .kv_heads = 4,
     .head_dim = 256,
     .max_pos = 131072,
     .theta = 1000000.0,
     .eps = "1e-06",
     .rope = MK_ROPE_LINEAR,
     .rope_factor = 8.0,
     .window = 1024,
     .qpas = 256,
     .local_base = 10000.0,
     .window_pattern = 6,
     .vision = &kGemma3VL4B},
    {.name = "tiny",
     .desc = "test: CLIP tower, MLP projector, Llama text model",
     .family = &kLlava,
     .layout = &kLlavaTokens,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-05",
     .untied = true,
     .vision = &kLlavaTiny},
    {.name = "llava-1.5-7b",
     .desc = "LLaVA-1.5-7B (CLIP ViT-L/14 at 336 px, Vicuna-7B)",
     .family = &kLlava,
     .layout = &kLlavaTokens,
     .vocab = 32064,
     .hidden = 4096,
     .inter = 11008,
     .layers = 32,
     .heads = 32,
     .kv_heads = 32,
     .head_dim = 128,
     .max_pos = 4096,
     .theta = 10000.0,
     .eps = "1e-05",
     .n_special = 67,
     .untied = true,
     .note = "28 GB at f32, 14 GB at bf16",
     .vision = &kLlava15_7B},
    {.name = "tiny",
     .desc = "test: Molmo2 tower, pooling adapter, additional vocabulary",
     .family = &kMolmo2,
     .layout = &kMolmo2Tokens,
     TINY_SIZES,
     .layers = 2,
     .head_dim = 16,
     .theta = 10000.0,
     .eps = "1e-06",
     .untied = true,
     .extra = {"additional_vocab_size", "9", "qk_norm_type", "\"qwen3\"", "norm_after", "false"},
     .vision = &kMolmo2Tiny},
    {.name = "molmo2-4b",
     .desc = "Molmo2-4B (SigLIP 2 so400m tower, Qwen3-4B)",
     .family = &kMolmo2,
     .layout = &kMolmo2Tokens,
     .vocab = 151936,
     .hidden = 2560,
     .inter = 9728,
     .layers = 36,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 128,
     .max_pos = 36864,
     .theta = 5000000.0,
     .eps = "1e-06",
     .n_special = 293,
     .untied = true,
     .note = "19 GB at f32, 9.7 GB at bf16",
     .extra = {"additional_vocab_size", "128", "qk_norm_type", "\"qwen3\"", "norm_after", "false"},
     .vision = &kMolmo2_4B},
    {.name = "tiny",
     .desc = "test: Gemma 3n text model and audio tower (2 conformer blocks)",
     .family = &kGemma3nAudio,
     .layout = &kGemma3nTinyTokens,
     .vocab = 384,
     .hidden = 64,
     .inter = 128,
     .heads = 4,
     .kv_heads = 2,
     .max_pos = 256,
     .layers = 10,
     .head_dim = 16,
     .theta = 1000000.0,
     .eps = "1e-06",
     .n_special = 72,
     .window = 8,
     .extra = {"hidden_size_per_layer_input", "8", "vocab_size_per_layer_input", "160",
               "laurel_rank", "8", "num_kv_shared_layers", "4"},
     .vision = &kGemma3nTinyAudio},
    {.name = "gemma-3n-E2B-audio",
     .desc = "Gemma-3n-E2B with its audio tower (USM conformer, 12 x 1536)",
     .family = &kGemma3nAudio,
     .layout = &kGemma3nTokens,
     .vocab = 262400,
     .hidden = 2048,
     .inter = 8192,
     .layers = 30,
     .heads = 8,
     .kv_heads = 2,
     .head_dim = 256,
     .max_pos = 32768,
     .theta = 1000000.0,
     .eps = "1e-06",
     .n_special = 6407,
     .window = 512,
     .note = "f32 needs 23 GiB (the per-layer table is 2G values): use --dtype bf16",
     .extra = {"num_kv_shared_layers", "10"},
     .vision = &kGemma3nE2BAudio},
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
  static char buf[512];
  if (!buf[0]) {
    for (int32_t i = 0; i < NFAMILIES; i++) {
      size_t n = strlen(buf);
      snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", kFamilies[i]->arch);
    }
  }
  return buf;
}

// ---- Special tokens ----

static int32_t count_names(const char *const *names, int32_t cap) {
  int32_t n = 0;
  while (n < cap && names[n]) n++;
  return n;
}
#define COUNT(names) count_names(names, (int32_t)(sizeof(names) / sizeof(names)[0]))

int32_t mk_special_count(const mk_preset_t *p) {
  int32_t named = COUNT(p->layout->bottom) + COUNT(p->layout->top);
  return p->n_special > named ? p->n_special : named;
}

void mk_special_name(const mk_preset_t *p, int32_t k, char *buf, size_t cap) {
  int32_t nb = COUNT(p->layout->bottom), nt = COUNT(p->layout->top);
  if (k < nb) {
    snprintf(buf, cap, "%s", p->layout->bottom[k]);
  } else if (k < nb + nt) {
    snprintf(buf, cap, "%s", p->layout->top[k - nb]);
  } else {
    int32_t id = p->vocab - mk_special_count(p) + k;
    for (int32_t f = 0; f < COUNT(p->layout->fixed); f++) {
      if (id == p->vocab - p->layout->fixed_from_end[f]) {
        snprintf(buf, cap, "%s", p->layout->fixed[f]);
        return;
      }
    }
    snprintf(buf, cap, "<|reserved_special_token_%d|>", (int)(k - nb - nt));
  }
}

int32_t mk_special_id(const mk_preset_t *p, const char *name) {
  if (!name) return -1;
  int32_t nb = COUNT(p->layout->bottom), nt = COUNT(p->layout->top);
  int32_t first_top = p->vocab - mk_special_count(p) + nb;
  for (int32_t k = 0; k < nb; k++) {
    if (strcmp(p->layout->bottom[k], name) == 0) return k;
  }
  for (int32_t k = 0; k < nt; k++) {
    if (strcmp(p->layout->top[k], name) == 0) return first_top + k;
  }
  for (int32_t k = 0; k < COUNT(p->layout->fixed); k++) {
    if (strcmp(p->layout->fixed[k], name) == 0) return p->vocab - p->layout->fixed_from_end[k];
  }
  for (int32_t k = 0; k < COUNT(p->layout->additional); k++) {
    if (strcmp(p->layout->additional[k], name) == 0) return p->vocab + k;
  }
  return -1;
}
