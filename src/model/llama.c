// Llama family: the shared transformer core with Llama's choices (y*w RMSNorm, rotate-half
// RoPE over the whole head, GQA, optional attention/MLP biases, tied or separate lm_head,
// default / linear / llama3 RoPE scaling). Other families (Mistral, Qwen, Gemma, Phi-3) are
// small variations of this description.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph_internal.h"

mx_status_t mx_llama_arch(const mx_model_config_t *cfg, mx_arch_t *a) {
  memset(a, 0, sizeof *a);
  a->cfg = cfg;
  a->vocab = cfg->vocab_size;
  a->hidden = cfg->hidden_size;
  a->ffn = cfg->intermediate_size;
  a->n_layers = cfg->num_layers;
  a->n_heads = cfg->num_heads;
  a->n_kv_heads = cfg->num_kv_heads > 0 ? cfg->num_kv_heads : cfg->num_heads;
  a->head_dim = cfg->head_dim > 0 ? cfg->head_dim
                                  : (cfg->num_heads > 0 ? cfg->hidden_size / cfg->num_heads : 0);
  if (a->vocab <= 0 || a->hidden <= 0 || a->ffn <= 0 || a->n_layers <= 0 || a->n_heads <= 0 ||
      a->n_kv_heads <= 0 || a->head_dim <= 0 || a->n_heads % a->n_kv_heads != 0) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "config: invalid llama sizes (vocab %d, hidden %d, intermediate %d, "
                        "layers %d, heads %d, kv heads %d, head_dim %d)",
                        a->vocab, a->hidden, a->ffn, a->n_layers, a->n_heads, a->n_kv_heads,
                        a->head_dim);
  }
  a->rms_eps = cfg->rms_norm_eps > 0 ? cfg->rms_norm_eps : 1e-6;
  a->norm_offset = 0.0;
  a->embed_scale = 0.0;
  a->qkv_bias = cfg->attention_bias;
  a->o_bias = cfg->attention_bias;
  a->mlp_bias = cfg->mlp_bias;
  a->qk_norm = false;
  a->tied = cfg->tie_word_embeddings;
  if (cfg->hidden_act[0] == '\0' || strcmp(cfg->hidden_act, "silu") == 0) {
    a->activation = "silu";
  } else if (strcmp(cfg->hidden_act, "gelu_pytorch_tanh") == 0 ||
             strcmp(cfg->hidden_act, "gelu_tanh") == 0) {
    a->activation = "gelu_tanh";
  } else {
    return mx_error_set(MX_ERR_UNSUPPORTED, "config: hidden_act \"%s\" is not supported",
                        cfg->hidden_act);
  }
  a->rope_style = "half";
  double prf = cfg->partial_rotary_factor > 0 ? cfg->partial_rotary_factor : 1.0;
  a->rotary_dim = (int32_t)floor(a->head_dim * prf + 1e-9);
  a->rotary_dim -= a->rotary_dim % 2;
  if (a->rotary_dim <= 0 || a->rotary_dim > a->head_dim) {
    return mx_error_set(MX_ERR_INVALID_ARG, "config: partial_rotary_factor %g gives no rotary dims",
                        prf);
  }
  a->attn_scale = 1.0 / sqrt((double)a->head_dim);
  a->attn_softcap = 0.0;
  a->final_softcap = 0.0;
  double theta = cfg->rope_theta > 0 ? cfg->rope_theta : 10000.0;
  a->n_rope_tables = 1;
  mx_status_t st = mx_rope_inv_freq(theta, a->rotary_dim, &cfg->rope_scaling, &a->inv_freq[0]);
  if (st != MX_OK) return st;
  a->layer_rope = calloc((size_t)a->n_layers, sizeof(int32_t));
  a->layer_window = calloc((size_t)a->n_layers, sizeof(int32_t));
  if (a->layer_rope == NULL || a->layer_window == NULL) {
    mx_arch_free(a);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  return MX_OK;
}
