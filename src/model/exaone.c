// EXAONE 3 / 3.5 family, model_type "exaone", which transformers runs as LlamaForCausalLM.
// Config: defaults of transformers' ExaoneConfig, whose files use the aliases num_layers,
// layer_norm_epsilon and activation_function for num_hidden_layers, rms_norm_eps and
// hidden_act (an alias wins over an absent canonical key, as transformers' attribute_map
// reads it).
// Graph: Llama's. Released checkpoints keep their original tensor names (transformer.wte,
// transformer.h.<l>.attn.attention.{q,k,v,out}_proj, ln_1 / ln_2, mlp.c_fc_0 (gate) /
// c_fc_1 (up) / c_proj (down), transformer.ln_f), which transformers renames on load; both
// that layout and the one save_pretrained writes (Llama's) are read.
#include "model/family.h"

// ---- config.json ----

static mx_status_t parse_config(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 102400,
      .hidden_size = 4096,
      .intermediate_size = 14336,
      .num_layers = 32,
      .num_heads = 32,
      .num_kv_heads = 8,
      .max_position_embeddings = 4096,
      .rms_norm_eps = 1e-5,
      .rope_theta = 500000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 1,
      .eos_token_id = 361,
      .pad_token_id = 0,
  };
  // The aliases: a copy of the object with each renamed to its canonical key when that is
  // absent, read by the shared reader.
  static const char *const kAliases[][2] = {{"num_layers", "num_hidden_layers"},
                                            {"layer_norm_epsilon", "rms_norm_eps"},
                                            {"activation_function", "hidden_act"}};
  cJSON *copy = cJSON_Duplicate(o->obj, true);
  if (copy == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < sizeof kAliases / sizeof kAliases[0]; i++) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(copy, kAliases[i][0]);
    if (v == NULL || cJSON_GetObjectItemCaseSensitive(copy, kAliases[i][1]) != NULL) continue;
    cJSON *dup = cJSON_Duplicate(v, true);
    if (dup == NULL || !cJSON_AddItemToObject(copy, kAliases[i][1], dup)) {
      cJSON_Delete(dup);
      cJSON_Delete(copy);
      return mx_error_set(MX_ERR_NOMEM, "out of memory");
    }
  }
  mx_cfg_obj_t c = {copy, o->src, o->prefix};
  bool alias = !mx_cfg_has(o, "hidden_act") && mx_cfg_has(o, "activation_function");
  mx_status_t st = mx_cfg_parse_common(&c, &d, cfg);
  if (st == MX_OK) st = mx_cfg_activation(&c, alias ? "activation_function" : "hidden_act", cfg);
  cJSON_Delete(copy);
  return st;
}

// ---- graph ----

static const char *const kOriginalNames[][2] = {
    {"model.embed_tokens.", "transformer.wte."},
    {"model.layers.", "transformer.h."},
    {"model.norm.", "transformer.ln_f."},
    {".self_attn.o_proj.", ".attn.attention.out_proj."},
    {".self_attn.", ".attn.attention."},
    {".input_layernorm.", ".ln_1."},
    {".post_attention_layernorm.", ".ln_2."},
    {".mlp.gate_proj.", ".mlp.c_fc_0."},
    {".mlp.up_proj.", ".mlp.c_fc_1."},
    {".mlp.down_proj.", ".mlp.c_proj."},
};

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->qkv_bias = a->o_bias = cfg->attention_bias;
  a->mlp_bias = cfg->mlp_bias;
  a->renames = kOriginalNames;
  a->n_renames = (int32_t)(sizeof kOriginalNames / sizeof kOriginalNames[0]);
  a->layout_probe = "transformer.wte.weight";
  return MX_OK;
}

const mx_family_t mx_family_exaone = {"exaone", parse_config, arch};
