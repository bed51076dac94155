// DeepSeek-V2 and DeepSeek-V3, model_types "deepseek_v2" / "deepseek_v3"
// (DeepseekV2ForCausalLM, DeepseekV3ForCausalLM): Llama's pre-norm layer with multi-latent
// attention (ADR 0012): a low-rank query (q_a_proj, q_a_layernorm, q_b_proj; q_proj when
// q_lora_rank is null), keys and values expanded from a normalized latent (kv_a_proj_with_mqa,
// kv_a_layernorm, kv_b_proj) plus one rotated key shared by every head, RoPE on the
// qk_rope_head_dim dims only, softmax scale qk_head_dim^-0.5 x YaRN's mscale(mscale_all_dim)^2.
// Config: defaults of transformers' DeepseekV2Config / DeepseekV3Config; head_dim is always
// qk_rope_head_dim (the rotary dims), as those classes set it. V2 rotates pairs (2i, 2i + 1)
// (complex multiplication); V3 too with rope_interleave (its default: transformers permutes
// both q and k the same way, which leaves every score unchanged), else rotate-half.
// The mixture of experts: parse_moe. Refused naming the field: num_key_value_heads other than
// num_attention_heads (transformers' expansion gives every head its own key; a different count
// does not run there either), values transformers would fail on (nulls), other topk_methods.
// The attention's config and graph flags are shared with Youtu-LLM (family_mla.h, youtu.c).
#include <math.h>
#include <string.h>

#include "model/family.h"
#include "model/family_mla.h"

// q_lora_rank: absent -> def, null -> 0 (a full q_proj), else positive.
static mx_status_t q_lora_rank(const mx_cfg_obj_t *o, int32_t def, int32_t *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o->obj, "q_lora_rank");
  if (j != NULL && cJSON_IsNull(j)) {
    *out = 0;
    return MX_OK;
  }
  MX_TRY(mx_cfg_i32(o, "q_lora_rank", def, out));
  if (*out <= 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: %sq_lora_rank must be positive or null", o->src,
                        o->prefix);
  }
  return MX_OK;
}

static mx_status_t positive(const mx_cfg_obj_t *o, const char *key, int32_t def, int32_t *out) {
  MX_TRY(mx_cfg_i32(o, key, def, out));
  if (*out <= 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: %s%s must be positive (got %d)", o->src, o->prefix,
                        key, *out);
  }
  return MX_OK;
}

// n_routed_experts, or its alias (transformers' attribute_map: V2 num_experts, V3
// num_local_experts) when only that is given.
static mx_status_t routed_experts(const mx_cfg_obj_t *o, bool v3, int32_t *out) {
  const char *alias = v3 ? "num_local_experts" : "num_experts";
  int32_t a, b;
  MX_TRY(mx_cfg_i32(o, "n_routed_experts", v3 ? 256 : 64, &a));
  MX_TRY(mx_cfg_i32(o, alias, a, &b));
  if (mx_cfg_has(o, "n_routed_experts") && mx_cfg_has(o, alias) && a != b) {
    return mx_error_set(MX_ERR_PARSE, "%s: %sn_routed_experts (%d) and %s (%d) differ", o->src,
                        o->prefix, a, alias, b);
  }
  *out = mx_cfg_has(o, "n_routed_experts") ? a : b;
  return MX_OK;
}

// A null where transformers would fail on it: refused naming the key.
static mx_status_t not_null(const mx_cfg_obj_t *o, const char *key) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o->obj, key);
  if (j != NULL && cJSON_IsNull(j)) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: %s%s must not be null", o->src, o->prefix, key);
  }
  return MX_OK;
}

// The mixture of experts: every layer from first_k_dense_replace on is sparse (transformers;
// the original code's moe_layer_freq, when given, must be 1), routed experts of
// moe_intermediate_size plus n_shared_experts as one MLP of n_shared_experts times that width
// summed without a gate, weights times routed_scaling_factor. V2: softmax scores, topk_method
// greedy (the top k of all) or group_limited_greedy (the topk_group groups of the largest
// score, then the top k among their experts); transformers never renormalizes V2's weights, so
// its norm_topk_prob is read by nobody. V3: sigmoid scores plus e_score_correction_bias for the
// choice only, the topk_group groups of the largest sum of their two best, the top k among
// them, renormalized when norm_topk_prob (transformers adds 1e-20 to the sum, which changes an
// f32 quotient only when the chosen scores sum below 1e-13).
static mx_status_t parse_moe(const mx_cfg_obj_t *o, bool v3, mx_model_config_t *cfg) {
  int32_t dense, freq, shared, n_group, topk_group;
  MX_TRY(mx_cfg_i32(o, "first_k_dense_replace", v3 ? 3 : 0, &dense));
  MX_TRY(mx_cfg_i32(o, "moe_layer_freq", 1, &freq));
  if (freq != 1) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %smoe_layer_freq %d is not supported (transformers places a "
                        "mixture of experts on every layer from first_k_dense_replace on)",
                        o->src, o->prefix, freq);
  }
  if (dense < 0) dense = 0;
  if (dense >= cfg->num_layers) return MX_OK;  // no sparse layer: a dense model
  MX_TRY(routed_experts(o, v3, &cfg->num_experts));
  MX_TRY(not_null(o, "num_experts_per_tok"));
  MX_TRY(mx_cfg_i32(o, "num_experts_per_tok", v3 ? 8 : 0, &cfg->num_experts_per_tok));
  MX_TRY(mx_cfg_i32(o, "moe_intermediate_size", v3 ? 2048 : 1407, &cfg->moe_intermediate_size));
  MX_TRY(mx_cfg_i32(o, "n_shared_experts", v3 ? 1 : 2, &shared));
  if (shared < 0) {
    return mx_error_set(MX_ERR_PARSE, "%s: %sn_shared_experts must be >= 0, got %d", o->src,
                        o->prefix, shared);
  }
  cfg->shared_expert_intermediate_size = shared * cfg->moe_intermediate_size;
  MX_TRY(mx_cfg_f64(o, "routed_scaling_factor", v3 ? 2.5 : 1.0, &cfg->routed_scaling_factor));
  cfg->moe_sigmoid = v3;
  cfg->norm_topk_prob = false;
  if (v3) MX_TRY(mx_cfg_bool(o, "norm_topk_prob", true, &cfg->norm_topk_prob));
  MX_TRY(mx_cfg_moe(o, "n_routed_experts", false, cfg));
  for (int32_t l = 0; l < dense; l++) cfg->layer_dense[l] = 1;
  bool grouped = v3;
  if (!v3) {
    char method[32];
    MX_TRY(not_null(o, "topk_method"));
    MX_TRY(mx_cfg_str(o, "topk_method", "greedy", method, sizeof method));
    grouped = strcmp(method, "group_limited_greedy") == 0;
    if (!grouped && strcmp(method, "greedy") != 0) {
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "%s: %stopk_method \"%s\" is not supported for model_type "
                          "'deepseek_v2' (greedy, group_limited_greedy)",
                          o->src, o->prefix, method);
    }
  }
  if (!grouped) return MX_OK;
  MX_TRY(not_null(o, "n_group"));
  MX_TRY(not_null(o, "topk_group"));
  MX_TRY(mx_cfg_i32(o, "n_group", v3 ? 8 : 0, &n_group));
  MX_TRY(mx_cfg_i32(o, "topk_group", v3 ? 4 : 0, &topk_group));
  int32_t E = cfg->num_experts, per = n_group > 0 ? E / n_group : 0;
  if (n_group < 1 || E % n_group != 0 || topk_group < 1 || topk_group > n_group ||
      (v3 && per < 2) || cfg->num_experts_per_tok > topk_group * per) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: %sn_group (%d) must divide n_routed_experts (%d)%s, topk_group (%d) "
                        "be in [1, n_group] and num_experts_per_tok (%d) at most topk_group x "
                        "the experts per group",
                        o->src, o->prefix, n_group, E, v3 ? " into groups of 2 or more" : "",
                        topk_group, cfg->num_experts_per_tok);
  }
  cfg->moe_groups = n_group;
  cfg->moe_topk_groups = topk_group;
  return MX_OK;
}

mx_status_t mx_cfg_mla(const mx_cfg_obj_t *o, mx_cfg_defaults_t d, bool v3,
                       mx_model_config_t *cfg) {
  int32_t rope_dim;
  MX_TRY(positive(o, "qk_rope_head_dim", 64, &rope_dim));
  if (rope_dim % 2 != 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: %sqk_rope_head_dim (%d) must be even", o->src,
                        o->prefix, rope_dim);
  }
  d.head_dim = rope_dim;  // transformers replaces any head_dim by qk_rope_head_dim
  MX_TRY(mx_cfg_parse_common(o, &d, cfg));
  cfg->head_dim = rope_dim;
  MX_TRY(mx_cfg_activation(o, "hidden_act", cfg));
  cfg->qk_rope_head_dim = rope_dim;
  MX_TRY(positive(o, "kv_lora_rank", 512, &cfg->kv_lora_rank));
  MX_TRY(q_lora_rank(o, 1536, &cfg->q_lora_rank));
  MX_TRY(positive(o, "qk_nope_head_dim", 128, &cfg->qk_nope_head_dim));
  MX_TRY(positive(o, "v_head_dim", 128, &cfg->v_head_dim));
  cfg->rope_interleave = true;
  if (v3) MX_TRY(mx_cfg_bool(o, "rope_interleave", true, &cfg->rope_interleave));
  if (v3) cfg->mlp_bias = false;  // DeepseekV3MLP has no biases whatever mlp_bias says
  if (cfg->num_kv_heads != cfg->num_heads) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: %snum_key_value_heads (%d) must equal num_attention_heads (%d) for "
                        "model_type '%s' (multi-latent attention expands a key per head)",
                        o->src, o->prefix, cfg->num_kv_heads, cfg->num_heads, cfg->model_type);
  }
  return MX_OK;
}

// The fields DeepSeek-V2 and V3 share, with the version's defaults in d.
static mx_status_t parse_deepseek(const mx_cfg_obj_t *o, mx_cfg_defaults_t d, bool v3,
                                  mx_model_config_t *cfg) {
  MX_TRY(mx_cfg_mla(o, d, v3, cfg));
  return parse_moe(o, v3, cfg);
}

static mx_status_t parse_v2(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 102400,
      .hidden_size = 4096,
      .intermediate_size = 11008,
      .num_layers = 32,
      .num_heads = 32,
      .max_position_embeddings = 2048,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 1,
      .eos_token_id = 2,
      .pad_token_id = -1,
  };
  return parse_deepseek(o, d, false, cfg);
}

static mx_status_t parse_v3(const mx_cfg_obj_t *o, mx_model_config_t *cfg) {
  static const mx_cfg_defaults_t d = {
      .vocab_size = 129280,
      .hidden_size = 7168,
      .intermediate_size = 18432,
      .num_layers = 61,
      .num_heads = 128,
      .num_kv_heads = 128,
      .max_position_embeddings = 4096,
      .rms_norm_eps = 1e-6,
      .rope_theta = 10000.0,
      .tie_word_embeddings = false,
      .hidden_act = "silu",
      .bos_token_id = 0,
      .eos_token_id = 1,
      .pad_token_id = -1,
  };
  return parse_deepseek(o, d, true, cfg);
}

// YaRN's mscale as transformers' yarn_get_mscale: 0.1 m ln(s) + 1, 1 when s <= 1.
static double yarn_mscale(double s, double m) { return s <= 1 ? 1.0 : 0.1 * m * log(s) + 1.0; }

mx_status_t mx_arch_mla(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  a->kv_lora = cfg->kv_lora_rank;
  a->q_lora = cfg->q_lora_rank;
  a->qk_nope = cfg->qk_nope_head_dim;
  a->qk_rope = cfg->qk_rope_head_dim;
  a->v_dim = cfg->v_head_dim;
  a->qkv_bias = a->o_bias = cfg->attention_bias;  // q_a_proj, kv_a_proj_with_mqa, o_proj
  a->mlp_bias = cfg->mlp_bias;
  a->rope_style = cfg->rope_interleave ? "interleaved" : "half";
  // transformers' yarn_apply_mscale: the whole q.k (nope dims too) by mscale^2.
  a->attn_scale = 1.0 / sqrt((double)(a->qk_nope + a->qk_rope));
  const mx_rope_scaling_t *sc = &cfg->rope_scaling;
  if (sc->kind != MX_ROPE_SCALING_NONE && sc->mscale_all_dim != 0.0) {
    double m = yarn_mscale(sc->factor, sc->mscale_all_dim);
    a->attn_scale *= m * m;
  }
  return MX_OK;
}

static mx_status_t arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_mla(cfg, a));
  if (cfg->num_experts == 0) return MX_OK;  // every layer dense
  MX_TRY(mx_arch_moe(cfg, a));
  a->moe_scoring = cfg->moe_sigmoid ? MX_MOE_SIGMOID : MX_MOE_SOFTMAX;
  a->choice_bias = cfg->moe_sigmoid;  // V3's e_score_correction_bias
  a->moe_groups = cfg->moe_groups;
  a->moe_topk_groups = cfg->moe_topk_groups;
  a->moe_group_rank = cfg->moe_sigmoid ? MX_MOE_GROUP_TOP2_SUM : MX_MOE_GROUP_MAX;
  a->routed_scale = cfg->routed_scaling_factor;
  a->shared_plain = true;
  return MX_OK;
}

const mx_family_t mx_family_deepseek_v2 = {"deepseek_v2", parse_v2, arch};
const mx_family_t mx_family_deepseek_v3 = {"deepseek_v3", parse_v3, arch};
