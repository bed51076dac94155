// Architecture dispatch, RoPE tables and the list of weights a graph reads.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/family.h"
#include "model/graph_internal.h"

mx_status_t mx_arch_from_config(const mx_model_config_t *cfg, mx_arch_t *a) {
  memset(a, 0, sizeof *a);
  if (cfg == NULL) return mx_error_set(MX_ERR_INVALID_ARG, "graph: NULL config");
  const mx_family_t *fam = mx_family_find(cfg->model_type);
  if (fam) {
    mx_status_t st = fam->arch(cfg, a);
    if (st != MX_OK) mx_arch_free(a);
    return st;
  }
  char list[256];
  return mx_error_set(MX_ERR_UNSUPPORTED, "graph: model_type \"%s\" is not supported (%s are)",
                      cfg->model_type, mx_family_list(list, sizeof list));
}

mx_status_t mx_arch_base(const mx_model_config_t *cfg, mx_arch_t *a) {
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
      a->n_kv_heads <= 0 || a->head_dim <= 0 || a->n_heads % a->n_kv_heads != 0 ||
      a->n_layers > MX_MAX_LAYERS) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "config: invalid %s sizes (vocab %d, hidden %d, intermediate %d, "
                        "layers %d, heads %d, kv heads %d, head_dim %d)",
                        cfg->model_type, a->vocab, a->hidden, a->ffn, a->n_layers, a->n_heads,
                        a->n_kv_heads, a->head_dim);
  }
  a->rms_eps = cfg->rms_norm_eps > 0 ? cfg->rms_norm_eps : 1e-6;
  a->tied = cfg->tie_word_embeddings;
  a->prefix = "model.";
  a->head_name = "lm_head.weight";
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
  // HF rotates int(head_dim * partial_rotary_factor) dims (the epsilon absorbs 0.75 * 16 being
  // computed as 11.999...).
  double prf = cfg->partial_rotary_factor > 0 ? cfg->partial_rotary_factor : 1.0;
  a->rotary_dim = (int32_t)floor(a->head_dim * prf + 1e-9);
  a->rotary_dim -= a->rotary_dim % 2;
  if (a->rotary_dim <= 0 || a->rotary_dim > a->head_dim) {
    return mx_error_set(MX_ERR_INVALID_ARG, "config: partial_rotary_factor %g gives no rotary dims",
                        prf);
  }
  double qs = cfg->query_pre_attn_scalar > 0 ? cfg->query_pre_attn_scalar : (double)a->head_dim;
  a->attn_scale = 1.0 / sqrt(qs);
  a->attn_softcap = cfg->attn_logit_softcapping;
  a->final_softcap = cfg->final_logit_softcapping;
  double theta = cfg->rope_theta > 0 ? cfg->rope_theta : 10000.0;
  a->n_rope_tables = 1;
  const mx_rope_scaling_t *sc = &cfg->rope_scaling;
  MX_TRY(mx_rope_inv_freq(theta, a->rotary_dim, sc, &a->inv_freq[0]));
  for (int32_t k = 0; k < MX_ARCH_MAX_ROPE_TABLES; k++) a->rope_attn_factor[k] = 1.0;
  if (sc->kind == MX_ROPE_SCALING_YARN || sc->kind == MX_ROPE_SCALING_LONGROPE) {
    a->rope_attn_factor[0] = sc->attention_factor;
  }
  if (sc->kind == MX_ROPE_SCALING_LONGROPE) {
    MX_TRY(mx_rope_inv_freq_long(theta, a->rotary_dim, sc, &a->inv_freq_long));
    a->rope_long_above = sc->original_max_position_embeddings;
  }
  a->layer_rope = calloc((size_t)a->n_layers, sizeof(int32_t));
  a->layer_window = calloc((size_t)a->n_layers, sizeof(int32_t));
  if (a->layer_rope == NULL || a->layer_window == NULL) {
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  for (int32_t l = 0; l < a->n_layers; l++) {
    a->layer_window[l] = cfg->layer_sliding[l] ? cfg->sliding_window : 0;
    if (cfg->layer_nope[l]) a->layer_rope[l] = -1;
  }
  if (cfg->embedding_multiplier != 0.0) a->embed_scale = cfg->embedding_multiplier;
  if (cfg->attention_multiplier != 0.0) a->attn_scale = cfg->attention_multiplier;
  a->residual_scale = cfg->residual_multiplier;
  a->logit_scale = cfg->logits_multiplier;
  return MX_OK;
}

void mx_arch_resolve_names(mx_arch_t *a, const mx_checkpoint_t *ck) {
  if (a->layout_probe != NULL && mx_checkpoint_find(ck, a->layout_probe) != NULL) {
    a->renamed = true;
    return;
  }
  for (int32_t i = 0; i < 3 && a->prefix_alts[i] != NULL; i++) {
    char name[256];
    snprintf(name, sizeof name, "%sembed_tokens.weight", a->prefix_alts[i]);
    if (mx_checkpoint_find(ck, name) != NULL) {
      a->prefix = a->prefix_alts[i];
      if (a->head_alts[i] != NULL) a->head_name = a->head_alts[i];
      return;
    }
  }
}

void mx_arch_free(mx_arch_t *a) {
  if (a == NULL) return;
  for (int32_t i = 0; i < MX_ARCH_MAX_ROPE_TABLES; i++) free(a->inv_freq[i]);
  free(a->inv_freq_long);
  free(a->layer_rope);
  free(a->layer_window);
  free(a->layer_kv_src);
  memset(a, 0, sizeof *a);
}

// YaRN's correction dimension: the rotary dimension whose wavelength makes `rotations` turns over
// the original context (transformers' find_correction_dim).
static double yarn_correction_dim(double rotations, int32_t dim, double theta, double orig) {
  return (dim * log(orig / (rotations * 2 * M_PI))) / (2 * log(theta));
}

// Hugging Face `_compute_default_rope_parameters`, `_compute_linear_scaling_rope_parameters`,
// `_compute_llama3_parameters`, `_compute_yarn_parameters` and `_compute_longrope_parameters`
// (its short or long factors), evaluated in double.
static mx_status_t rope_table(double theta, int32_t rotary_dim, const mx_rope_scaling_t *sc,
                              bool long_factors, float **out) {
  *out = NULL;
  if (rotary_dim <= 0 || rotary_dim % 2 != 0 || !(theta > 0)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "rope: bad rotary_dim %d or theta %g", rotary_dim,
                        theta);
  }
  int32_t h = rotary_dim / 2;
  mx_rope_scaling_kind_t kind = sc != NULL ? sc->kind : MX_ROPE_SCALING_NONE;
  if (kind != MX_ROPE_SCALING_NONE && !(sc->factor > 0)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "rope_scaling: factor %g must be positive", sc->factor);
  }
  if (kind == MX_ROPE_SCALING_LLAMA3 &&
      (!(sc->original_max_position_embeddings > 0) || !(sc->high_freq_factor > 0) ||
       !(sc->low_freq_factor > 0) || sc->high_freq_factor == sc->low_freq_factor)) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "rope_scaling llama3: needs positive original_max_position_embeddings and "
                        "low_freq_factor != high_freq_factor");
  }
  if ((kind == MX_ROPE_SCALING_YARN || kind == MX_ROPE_SCALING_LONGROPE) &&
      !(sc->original_max_position_embeddings > 0)) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "rope_scaling: needs a positive original_max_position_embeddings");
  }
  if (kind == MX_ROPE_SCALING_LONGROPE && sc->n_factors != h) {
    return mx_error_set(MX_ERR_INVALID_ARG, "rope_scaling longrope: %d factors for %d rotary pairs",
                        sc->n_factors, h);
  }
  double ramp_lo = 0, ramp_hi = 0;  // yarn: the dimensions between which the blend ramps
  if (kind == MX_ROPE_SCALING_YARN) {
    double orig = (double)sc->original_max_position_embeddings;
    ramp_lo = yarn_correction_dim(sc->beta_fast, rotary_dim, theta, orig);
    ramp_hi = yarn_correction_dim(sc->beta_slow, rotary_dim, theta, orig);
    if (sc->truncate) {
      ramp_lo = floor(ramp_lo);
      ramp_hi = ceil(ramp_hi);
    }
    ramp_lo = fmax(ramp_lo, 0.0);
    ramp_hi = fmin(ramp_hi, (double)(rotary_dim - 1));
    if (ramp_lo == ramp_hi) ramp_hi += 0.001;  // as transformers: no division by zero
  }
  float *f = malloc(sizeof(float) * (size_t)h);
  if (f == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < h; i++) {
    double inv = 1.0 / pow(theta, (double)(2 * i) / (double)rotary_dim);
    if (kind == MX_ROPE_SCALING_LINEAR) {
      inv /= sc->factor;
    } else if (kind == MX_ROPE_SCALING_LLAMA3) {
      double old = (double)sc->original_max_position_embeddings;
      double low_wavelen = old / sc->low_freq_factor;
      double high_wavelen = old / sc->high_freq_factor;
      double wavelen = 2.0 * M_PI / inv;
      if (wavelen > low_wavelen) {
        inv /= sc->factor;                     // low frequencies: interpolate fully
      } else if (!(wavelen < high_wavelen)) {  // medium: blend
        double s =
            (old / wavelen - sc->low_freq_factor) / (sc->high_freq_factor - sc->low_freq_factor);
        inv = (1.0 - s) * inv / sc->factor + s * inv;
      }  // high frequencies unchanged
    } else if (kind == MX_ROPE_SCALING_YARN) {
      // extrapolate (keep) the fast dimensions below the ramp, interpolate the slow ones above
      double ramp = fmin(fmax((i - ramp_lo) / (ramp_hi - ramp_lo), 0.0), 1.0);
      double keep = 1.0 - ramp;
      inv = inv / sc->factor * (1.0 - keep) + inv * keep;
    } else if (kind == MX_ROPE_SCALING_LONGROPE) {
      inv /= long_factors ? sc->long_factor[i] : sc->short_factor[i];
    }
    f[i] = (float)inv;
  }
  *out = f;
  return MX_OK;
}

mx_status_t mx_rope_inv_freq(double theta, int32_t rotary_dim, const mx_rope_scaling_t *sc,
                             float **out) {
  return rope_table(theta, rotary_dim, sc, false, out);
}

mx_status_t mx_rope_inv_freq_long(double theta, int32_t rotary_dim, const mx_rope_scaling_t *sc,
                                  float **out) {
  return rope_table(theta, rotary_dim, sc, true, out);
}

// ---- weight list ----

static mx_status_t add_w(mx_wlist_t *wl, const mx_arch_t *a, int32_t *idx, int32_t rank, int64_t d0,
                         int64_t d1, int32_t layer, const char *suffix) {
  if (wl->n == wl->cap) {
    int32_t cap = wl->cap ? 2 * wl->cap : 64;
    mx_wspec_t *w = realloc(wl->w, sizeof *w * (size_t)cap);
    if (w == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    wl->w = w;
    wl->cap = cap;
  }
  char name[256];
  // layer >= 0: "<prefix>layers.<layer>.<suffix>"; -1: "<prefix><suffix>"; -2: `suffix`.
  if (layer >= 0) {
    snprintf(name, sizeof name, "%slayers.%d.%s", a->prefix, layer, suffix);
  } else if (layer == -1) {
    snprintf(name, sizeof name, "%s%s", a->prefix, suffix);
  } else {
    snprintf(name, sizeof name, "%s", suffix);
  }
  for (int32_t i = 0; a->renamed && i < a->n_renames; i++) {
    char *at = strstr(name, a->renames[i][0]);
    if (at == NULL) continue;
    char tail[256];
    snprintf(tail, sizeof tail, "%s", at + strlen(a->renames[i][0]));
    snprintf(at, sizeof name - (size_t)(at - name), "%s%s", a->renames[i][1], tail);
  }
  mx_wspec_t *s = &wl->w[wl->n];
  memset(s, 0, sizeof *s);
  s->name = strdup(name);
  if (s->name == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  s->rank = rank;
  s->dims[0] = d0;
  s->dims[1] = d1;
  s->qscales = s->qbiases = -1;
  *idx = wl->n++;
  return MX_OK;
}

// A sparse layer's router [and its choice bias], experts and shared expert (Qwen2-MoE's with its
// gate, DeepSeek's shared_experts without).
static mx_status_t moe_weights(mx_wlist_t *wl, const mx_arch_t *a, int32_t l, mx_layer_w_t *lw) {
  int64_t H = a->hidden, F = a->expert_ffn, S = a->shared_ffn;
  char name[160];
  snprintf(name, sizeof name, "%s%s.weight", a->moe_block, a->router_name);
  MX_TRY(add_w(wl, a, &lw->router, 2, a->n_experts, H, l, name));
  wl->w[lw->router].kind = MX_WK_GATE;
  if (a->router_bias) {
    snprintf(name, sizeof name, "%s%s.bias", a->moe_block, a->router_name);
    MX_TRY(add_w(wl, a, &lw->router_b, 1, a->n_experts, 0, l, name));
  }
  if (a->choice_bias) {
    snprintf(name, sizeof name, "%sgate.e_score_correction_bias", a->moe_block);
    MX_TRY(add_w(wl, a, &lw->router_bias, 1, a->n_experts, 0, l, name));
  }
  for (int32_t e = 0; e < a->n_experts; e++) {
    for (int32_t j = 0; j < 3; j++) {
      int32_t idx;
      snprintf(name, sizeof name, "%sexperts.%d.%s.weight", a->moe_block, e, a->expert_names[j]);
      MX_TRY(add_w(wl, a, &idx, 2, j == 2 ? H : F, j == 2 ? F : H, l, name));
      wl->w[idx].kind = MX_WK_EXPERT;
      if (e == 0 && j == 0) lw->experts = idx;
    }
  }
  for (int32_t e = 0; a->expert_bias && e < a->n_experts; e++) {
    for (int32_t j = 0; j < 3; j++) {
      int32_t idx;
      snprintf(name, sizeof name, "%sexperts.%d.%s.bias", a->moe_block, e, a->expert_names[j]);
      MX_TRY(add_w(wl, a, &idx, 1, j == 2 ? H : F, 0, l, name));
      if (e == 0 && j == 0) lw->expert_b = idx;
    }
  }
  if (S == 0) return MX_OK;
  static const char *const kShared[3] = {"gate_proj", "up_proj", "down_proj"};
  int32_t *dst[3] = {&lw->gate, &lw->up, &lw->down};
  const char *shared = a->shared_plain ? "shared_experts" : "shared_expert";
  for (int32_t j = 0; j < 3; j++) {
    snprintf(name, sizeof name, "%s%s.%s.weight", a->moe_block, shared, kShared[j]);
    MX_TRY(add_w(wl, a, dst[j], 2, j == 2 ? H : S, j == 2 ? S : H, l, name));
  }
  if (a->shared_plain) return MX_OK;  // summed without a gate
  snprintf(name, sizeof name, "%sshared_expert_gate.weight", a->moe_block);
  MX_TRY(add_w(wl, a, &lw->shared_gate, 2, 1, H, l, name));
  wl->w[lw->shared_gate].kind = MX_WK_GATE;
  return MX_OK;
}

mx_status_t mx_wlist_add(mx_wlist_t *wl, const mx_arch_t *a, int32_t *idx, int32_t rank, int64_t d0,
                         int64_t d1, int32_t layer, const char *suffix, mx_wkind_t kind) {
  MX_TRY(add_w(wl, a, idx, rank, d0, d1, layer, suffix));
  wl->w[*idx].kind = kind;
  return MX_OK;
}

int32_t mx_wlist_find(const mx_wlist_t *wl, const char *name) {
  for (int32_t i = 0; i < wl->n; i++)
    if (strcmp(wl->w[i].name, name) == 0) return i;
  return -1;
}

void mx_wlist_free(mx_wlist_t *wl) {
  if (wl == NULL) return;
  for (int32_t i = 0; i < wl->n; i++) free(wl->w[i].name);
  free(wl->w);
  free(wl->layers);
  memset(wl, 0, sizeof *wl);
}

mx_status_t mx_arch_weights(const mx_arch_t *a, mx_wlist_t *wl) {
  memset(wl, 0, sizeof *wl);
  wl->layers = malloc(sizeof(mx_layer_w_t) * (size_t)a->n_layers);
  if (wl->layers == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  int64_t H = a->hidden, F = a->ffn, V = a->vocab, D = a->head_dim;
  int64_t QD = (int64_t)a->n_heads * D, KD = (int64_t)a->n_kv_heads * D;
  int64_t OD = a->kv_lora > 0 ? (int64_t)a->n_heads * a->v_dim : QD;  // o_proj's input
  mx_status_t st = add_w(wl, a, &wl->embed, 2, V, H, -1, "embed_tokens.weight");
  wl->embed_extra = -1;
  if (st == MX_OK && a->extra_vocab > 0)
    st = add_w(wl, a, &wl->embed_extra, 2, a->extra_vocab, H, -1, a->extra_embed_name);
  for (int32_t l = 0; st == MX_OK && l < a->n_layers; l++) {
    mx_layer_w_t *lw = &wl->layers[l];
    memset(lw, -1, sizeof *lw);  // every index -1 (absent) until added
    if (a->layer_ffn != NULL) F = a->layer_ffn[l];
    bool own_kv = a->layer_kv_src == NULL || a->layer_kv_src[l] == l;
#define W_(field, rank, d0, d1, name) \
  if (st == MX_OK) st = add_w(wl, a, &lw->field, rank, d0, d1, l, name)
    if (!a->norm_after) W_(in_norm, 1, H, 0, "input_layernorm.weight");
    if (!a->norm_after && a->norm_bias) W_(in_norm_b, 1, H, 0, "input_layernorm.bias");
    if (a->kv_lora > 0) {  // multi-latent attention
      int64_t QK = (int64_t)a->n_heads * (a->qk_nope + a->qk_rope);
      if (a->q_lora > 0) {
        W_(q_a, 2, a->q_lora, H, "self_attn.q_a_proj.weight");
        if (a->qkv_bias) W_(q_a_bias, 1, a->q_lora, 0, "self_attn.q_a_proj.bias");
        W_(q_a_norm, 1, a->q_lora, 0, "self_attn.q_a_layernorm.weight");
        W_(q_b_proj, 2, QK, a->q_lora, "self_attn.q_b_proj.weight");
      } else {
        W_(q, 2, QK, H, "self_attn.q_proj.weight");
      }
      W_(kv_a, 2, a->kv_lora + a->qk_rope, H, "self_attn.kv_a_proj_with_mqa.weight");
      if (a->qkv_bias)
        W_(kv_a_bias, 1, a->kv_lora + a->qk_rope, 0, "self_attn.kv_a_proj_with_mqa.bias");
      W_(kv_a_norm, 1, a->kv_lora, 0, "self_attn.kv_a_layernorm.weight");
      W_(kv_b_proj, 2, (int64_t)a->n_heads * (a->qk_nope + a->v_dim), a->kv_lora,
         "self_attn.kv_b_proj.weight");
    } else if (a->fused_qkv) {
      W_(qkv, 2, QD + 2 * KD, H, "self_attn.qkv_proj.weight");
    } else {
      W_(q, 2, QD, H, "self_attn.q_proj.weight");
      if (a->qkv_bias) W_(q_b, 1, QD, 0, "self_attn.q_proj.bias");
      if (own_kv) {  // a layer reading another's caches has no k / v of its own
        W_(k, 2, KD, H, "self_attn.k_proj.weight");
        if (a->qkv_bias) W_(k_b, 1, KD, 0, "self_attn.k_proj.bias");
        W_(v, 2, KD, H, "self_attn.v_proj.weight");
        if (a->qkv_bias) W_(v_b, 1, KD, 0, "self_attn.v_proj.bias");
      }
    }
    if (a->qk_norm) {
      W_(q_norm, 1, a->qk_norm_flat ? QD : D, 0, "self_attn.q_norm.weight");
      if (own_kv) W_(k_norm, 1, a->qk_norm_flat ? KD : D, 0, "self_attn.k_norm.weight");
    }
    W_(o, 2, H, OD, "self_attn.o_proj.weight");
    if (a->o_bias) W_(o_b, 1, H, 0, "self_attn.o_proj.bias");
    if (a->attn_sinks) W_(sinks, 1, a->n_heads, 0, "self_attn.sinks");
    if (!a->parallel_block) W_(post_norm, 1, H, 0, "post_attention_layernorm.weight");
    if (!a->parallel_block && a->norm_bias) {
      W_(post_norm_b, 1, H, 0, "post_attention_layernorm.bias");
    }
    if (a->sandwich_norm) W_(pre_ff_norm, 1, H, 0, "pre_feedforward_layernorm.weight");
    if (mx_arch_layer_moe(a, l)) {
      if (st == MX_OK) st = moe_weights(wl, a, l, lw);
    } else if (a->plain_mlp) {  // StarCoder2: up = c_fc, down = c_proj
      W_(up, 2, F, H, "mlp.c_fc.weight");
      if (a->mlp_bias) W_(up_b, 1, F, 0, "mlp.c_fc.bias");
      W_(down, 2, H, F, "mlp.c_proj.weight");
      if (a->mlp_bias) W_(down_b, 1, H, 0, "mlp.c_proj.bias");
    } else if (a->fused_gate_up) {
      W_(gate_up, 2, 2 * F, H, "mlp.gate_up_proj.weight");
    } else {
      W_(gate, 2, F, H, "mlp.gate_proj.weight");
      if (a->mlp_bias) W_(gate_b, 1, F, 0, "mlp.gate_proj.bias");
      W_(up, 2, F, H, "mlp.up_proj.weight");
      if (a->mlp_bias) W_(up_b, 1, F, 0, "mlp.up_proj.bias");
    }
    if (!a->plain_mlp && !mx_arch_layer_moe(a, l)) {
      W_(down, 2, H, F, "mlp.down_proj.weight");
      if (a->mlp_bias) W_(down_b, 1, H, 0, "mlp.down_proj.bias");
    }
    if (a->sandwich_norm || a->norm_after) {
      W_(post_ff_norm, 1, H, 0, "post_feedforward_layernorm.weight");
    }
#undef W_
  }
  if (st == MX_OK && a->more_weights != NULL) st = a->more_weights(a, wl);
  if (st == MX_OK) st = add_w(wl, a, &wl->final_norm, 1, H, 0, -1, "norm.weight");
  wl->final_norm_b = -1;
  if (st == MX_OK && a->norm_bias) st = add_w(wl, a, &wl->final_norm_b, 1, H, 0, -1, "norm.bias");
  if (st == MX_OK) {
    if (a->tied) {
      wl->head = wl->embed;
    } else {
      st = add_w(wl, a, &wl->head, 2, V, H, -2, a->head_name);
    }
  }
  if (st != MX_OK) {
    mx_wlist_free(wl);
    return st;
  }
  // Which tensors are matmul weights (quantizable) and which is the embedding.
  for (int32_t l = 0; l < a->n_layers; l++) {
    const mx_layer_w_t *lw = &wl->layers[l];
    // kv_b_proj is not: mx.mla reads it in float.
    const int32_t lin[] = {lw->q,    lw->k,   lw->v,       lw->o,   lw->gate,     lw->up,
                           lw->down, lw->qkv, lw->gate_up, lw->q_a, lw->q_b_proj, lw->kv_a};
    for (size_t i = 0; i < sizeof lin / sizeof lin[0]; i++)
      if (lin[i] >= 0) wl->w[lin[i]].kind = MX_WK_LINEAR;
  }
  wl->w[wl->head].kind = MX_WK_LINEAR;
  wl->w[wl->embed].kind = MX_WK_EMBED;  // also the head when tied
  return MX_OK;
}
