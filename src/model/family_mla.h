// The multi-latent attention pieces of the families built on it (ADR 0012): DeepSeek-V2 / V3
// (deepseek.c, which defines these) and Youtu-LLM (youtu.c), whose attention is DeepSeek-V3's.
#ifndef MLXCEL_MODEL_FAMILY_MLA_H
#define MLXCEL_MODEL_FAMILY_MLA_H

#include <stdbool.h>

#include "model/config_internal.h"
#include "model/graph_internal.h"

// The shared fields (mx_cfg_parse_common with the family's defaults d, head_dim replaced by
// qk_rope_head_dim) and the attention's: kv_lora_rank, q_lora_rank (null: a full q_proj),
// qk_nope_head_dim, qk_rope_head_dim (even), v_head_dim, hidden_act. v3: DeepSeek-V3's fields,
// rope_interleave (default true; without it pairs are always interleaved, as V2) and an MLP
// without biases whatever mlp_bias says. num_key_value_heads other than num_attention_heads is
// refused naming both.
mx_status_t mx_cfg_mla(const mx_cfg_obj_t *o, mx_cfg_defaults_t d, bool v3, mx_model_config_t *cfg);

// mx_arch_base plus the attention's flags: the MLA shapes, biases on q_a_proj /
// kv_a_proj_with_mqa / o_proj (attention_bias), the rope style, and the softmax scale
// qk_head_dim^-0.5 times YaRN's mscale(factor, mscale_all_dim)^2.
mx_status_t mx_arch_mla(const mx_model_config_t *cfg, mx_arch_t *a);

#endif  // MLXCEL_MODEL_FAMILY_MLA_H
