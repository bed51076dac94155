// Gemma family on the shared core.
//   gemma:   (1 + w) RMSNorm, embeddings x sqrt(hidden) (the scale rounded to the model dtype,
//            as transformers does), gelu_tanh gated MLP, tied head by default.
//   gemma2:  + post_attention_layernorm on the attention output before the residual add and
//            pre_/post_feedforward_layernorm around the MLP; attention and final logit
//            soft-capping, query_pre_attn_scalar and the alternating window (from the config).
//   gemma3_text / gemma3: gemma2's layer + (1 + w) q/k norms; sliding layers rotate with an
//            unscaled table of base rope_local_base_freq, full layers with rope_theta and
//            rope_scaling. gemma3 (the multimodal checkpoint) keeps its text weights under
//            language_model.model. (transformers < 4.52) or model.language_model. (later).
#include <math.h>
#include <string.h>

#include "model/graph_internal.h"

static double round_to(mx_elem_type_t dt, double v) {
  if (dt == MX_ELEM_BF16 || dt == MX_ELEM_F16) return mx_float_decode(dt, mx_float_encode(dt, v));
  if (dt == MX_ELEM_F64) return v;
  return (double)(float)v;
}

mx_status_t mx_gemma_arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  MX_TRY(mx_arch_base(cfg, a));
  const char *mt = cfg->model_type;
  bool g1 = strcmp(mt, "gemma") == 0;
  bool g3 = strcmp(mt, "gemma3_text") == 0 || strcmp(mt, "gemma3") == 0;
  a->norm_offset = 1.0;
  a->embed_scale = round_to(cfg->dtype, sqrt((double)a->hidden));
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  a->sandwich_norm = !g1;
  if (!g3) return MX_OK;
  a->qk_norm = true;
  if (strcmp(mt, "gemma3") == 0) {
    a->prefix = "language_model.model.";
    a->prefix_alts[0] = "language_model.model.";
    a->head_alts[0] = "language_model.lm_head.weight";
    a->prefix_alts[1] = "model.language_model.";
    a->head_alts[1] = "lm_head.weight";
    a->prefix_alts[2] = "model.";
    a->head_alts[2] = "lm_head.weight";
    a->head_name = a->head_alts[0];
  }
  double local = cfg->rope_local_base_freq > 0 ? cfg->rope_local_base_freq : 10000.0;
  MX_TRY(mx_rope_inv_freq(local, a->rotary_dim, NULL, &a->inv_freq[1]));
  a->n_rope_tables = 2;
  for (int32_t l = 0; l < a->n_layers; l++) a->layer_rope[l] = cfg->layer_sliding[l] ? 1 : 0;
  return MX_OK;
}
