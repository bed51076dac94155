// GGUF tensors -> checkpoint tensors under their Hugging Face names.
//
// Shapes: ggml lists dimensions innermost first, so a GGUF [ne0 = K, ne1 = N] matrix is the
// row-major [N, K] weight transformers stores; the bytes are the same.
// Q/K rows: llama.cpp's converter reorders the rows of q_proj / k_proj (weights and biases) of
// the llama architecture so that its RoPE, which rotates adjacent pairs, matches transformers'
// rotate-half: within each head of D rows, GGUF row 2 i + s holds HF row s D/2 + i. We undo it
// (the rows are copied; quantized rows move whole, their blocks lie within a row).
// Quantized blocks (all within one row) map exactly onto model.h's stored formats
// (gguf_blocks.c says how); our packing holds element e of a row in bits b (e % (32 / b)) of
// word e / (32 / b). Nothing is dequantized.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/try.h"
#include "model/checkpoint_internal.h"
#include "model/gguf_internal.h"

// ---- Names ----

// Per-layer tensors: GGUF "blk.N.<gguf>" -> "model.layers.N.<hf>"; an entry with an arch
// applies to that architecture only and comes before the general one.
static const struct {
  const char *gguf, *hf, *arch;
} kLayerNames[] = {
    {"ffn_up", "mlp.gate_up_proj", "phi3"},  // Phi-3's fused gate and up rows (gate first)
    {"attn_qkv", "self_attn.qkv_proj", NULL},
    {"attn_norm", "input_layernorm", NULL},
    {"attn_q", "self_attn.q_proj", NULL},
    {"attn_k", "self_attn.k_proj", NULL},
    {"attn_v", "self_attn.v_proj", NULL},
    {"attn_output", "self_attn.o_proj", NULL},
    {"attn_q_norm", "self_attn.q_norm", NULL},
    {"attn_k_norm", "self_attn.k_norm", NULL},
    {"ffn_norm", "post_attention_layernorm", NULL},
    {"ffn_gate", "mlp.gate_proj", NULL},
    {"ffn_up", "mlp.up_proj", NULL},
    {"ffn_down", "mlp.down_proj", NULL},
};

static const struct {
  const char *gguf, *hf;
} kGlobalNames[] = {
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
};

// HF name of a GGUF tensor name into out[cap]; *is_qk: a q_proj / k_proj tensor (and which).
static mx_status_t hf_name(const char *name, const char *arch, const char *src, char *out,
                           size_t cap, int *qk) {
  *qk = 0;
  const char *dot = strrchr(name, '.');
  if (!dot || (strcmp(dot, ".weight") != 0 && strcmp(dot, ".bias") != 0)) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: tensor '%s' is not a .weight or .bias", src, name);
  }
  size_t stem = (size_t)(dot - name);
  for (size_t i = 0; i < sizeof kGlobalNames / sizeof kGlobalNames[0]; i++) {
    if (strlen(kGlobalNames[i].gguf) == stem && memcmp(name, kGlobalNames[i].gguf, stem) == 0) {
      snprintf(out, cap, "%s%s", kGlobalNames[i].hf, dot);
      return MX_OK;
    }
  }
  unsigned layer;
  int used = 0;
  if (sscanf(name, "blk.%u.%n", &layer, &used) == 1 && used > 0) {
    const char *rest = name + used;
    size_t rl = (size_t)(dot - rest);
    for (size_t i = 0; i < sizeof kLayerNames / sizeof kLayerNames[0]; i++) {
      if (kLayerNames[i].arch && strcmp(kLayerNames[i].arch, arch) != 0) continue;
      if (strlen(kLayerNames[i].gguf) == rl && memcmp(rest, kLayerNames[i].gguf, rl) == 0) {
        snprintf(out, cap, "model.layers.%u.%s%s", layer, kLayerNames[i].hf, dot);
        if (strcmp(kLayerNames[i].gguf, "attn_q") == 0) *qk = 1;
        if (strcmp(kLayerNames[i].gguf, "attn_k") == 0) *qk = 2;
        return MX_OK;
      }
    }
  }
  if (strcmp(name, "rope_freqs.weight") == 0) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: tensor 'rope_freqs.weight' (per-frequency RoPE factors, Llama 3.1 "
                        "scaling) is not supported",
                        src);
  }
  return mx_error_set(MX_ERR_UNSUPPORTED, "%s: tensor '%s' has no counterpart in the model", src,
                      name);
}

// ---- Conversions ----

// Row permutation of llama's Q/K: out row (h, s, i) = in row (h, i, s), rows of rb bytes.
static void unpermute_rows(const uint8_t *in, uint8_t *out, int64_t rows, int64_t head_dim,
                           size_t rb) {
  int64_t half = head_dim / 2;
  for (int64_t h = 0; h < rows / head_dim; h++) {
    for (int64_t s = 0; s < 2; s++) {
      for (int64_t i = 0; i < half; i++) {
        const uint8_t *src = in + (size_t)(h * head_dim + 2 * i + s) * rb;
        memcpy(out + (size_t)(h * head_dim + s * half + i) * rb, src, rb);
      }
    }
  }
}

// Rows of ggml blocks (data, rows x K) into the stored format m describes: values q (i8 [N, K]
// or u32 [N, K bits / 32]), scales and biases [N, K / group] of type m->sdt.
static void repack(const mx_gguf_qmap_t *m, const uint8_t *data, int64_t rows, int64_t K,
                   uint8_t *q, uint8_t *scales, uint8_t *biases) {
  int16_t v[256];
  int64_t nb = K / m->block, gpb = m->block / m->group;  // groups per block
  size_t ss = mx_elem_size(m->sdt);
  int per_word = 32 / m->bits;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t b = 0; b < nb; b++) {
      int64_t blk = r * nb + b, e0 = r * K + b * m->block;
      mx_gguf_decode_block(m, data + (size_t)blk * (size_t)m->block_bytes, v,
                           scales + (size_t)(blk * gpb) * ss,
                           m->affine ? biases + (size_t)(blk * gpb) * ss : NULL);
      if (m->is_signed) {
        for (int e = 0; e < m->block; e++) q[e0 + e] = (uint8_t)(int8_t)v[e];
        continue;
      }
      uint32_t *words = (uint32_t *)(void *)q + e0 / per_word;  // a block fills whole words
      for (int w = 0; w < m->block / per_word; w++) {
        uint32_t x = 0;
        for (int l = 0; l < per_word; l++) x |= (uint32_t)v[w * per_word + l] << (m->bits * l);
        words[w] = x;
      }
    }
  }
}

static mx_elem_type_t float_elem(uint32_t type) {
  switch (type) {
    case MX_GGML_F32:
      return MX_ELEM_F32;
    case MX_GGML_F16:
      return MX_ELEM_F16;
    case MX_GGML_BF16:
      return MX_ELEM_BF16;
    default:
      return MX_ELEM_INVALID;
  }
}

static mx_status_t add_one(const mx_gguf_tensor_t *t, const mx_model_config_t *cfg, bool llama,
                           const char *src, mx_checkpoint_t *ck) {
  char name[320];
  int qk;
  MX_TRY(hf_name(t->name, cfg->model_type, src, name, sizeof name, &qk));
  int32_t rank = t->n_dims;
  int64_t dims[MX_GGUF_MAX_DIMS];
  for (int32_t i = 0; i < rank; i++) dims[i] = t->ne[rank - 1 - i];
  int64_t rows = rank >= 2 ? dims[0] : 1;
  if (rank > 2) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: tensor '%s' has rank %d", src, t->name, rank);
  }
  // Llama's Q/K row permutation (weights [N, K] and biases [N]).
  bool permute = llama && qk != 0;
  int64_t heads = qk == 1 ? cfg->num_heads : cfg->num_kv_heads, hd = cfg->head_dim;
  int64_t n_rows = dims[0];
  if (permute && (hd % 2 != 0 || n_rows != heads * hd)) {
    return mx_error_set(MX_ERR_PARSE, "%s: tensor '%s' has %lld rows, not %lld heads of %lld", src,
                        t->name, (long long)n_rows, (long long)heads, (long long)hd);
  }
  const uint8_t *data = t->data;
  uint8_t *copy = NULL;
  if (permute) {
    copy = malloc((size_t)t->nbytes + 1);
    if (!copy) return mx_error_set(MX_ERR_NOMEM, "out of memory for %s", t->name);
    unpermute_rows(t->data, copy, n_rows, hd, (size_t)t->nbytes / (size_t)n_rows);
    data = copy;
  }
  mx_elem_type_t fe = float_elem(t->type);
  if (fe != MX_ELEM_INVALID) {
    if (copy) return mx_checkpoint_put(ck, name, fe, rank, dims, copy);
    return mx_checkpoint_add_view(ck, name, fe, rank, dims, data, src);
  }
  const mx_gguf_qmap_t *m = mx_gguf_qmap(t->type);
  if (!m) {
    free(copy);
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: tensor '%s' has type %s (supported: F32, F16, BF16, Q8_0, Q4_0, "
                        "Q4_1, Q4_K, Q5_K, Q6_K)",
                        src, t->name, mx_ggml_type_name(t->type));
  }
  size_t len = strlen(name);
  if (rank != 2 || len < 7 || strcmp(name + len - 7, ".weight") != 0) {
    free(copy);
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: quantized tensor '%s' is not a matrix weight", src,
                        t->name);
  }
  int64_t K = dims[1], G = K / m->group;
  size_t qbytes = (size_t)(rows * K) * (size_t)m->bits / 8, sbytes = (size_t)(rows * G) * 4;
  uint8_t *q = malloc(qbytes + 1), *sc = malloc(sbytes + 1);
  uint8_t *bi = m->affine ? malloc(sbytes + 1) : NULL;
  if (!q || !sc || (m->affine && !bi)) {
    free(copy);
    free(q);
    free(sc);
    free(bi);
    return mx_error_set(MX_ERR_NOMEM, "out of memory for %s", t->name);
  }
  repack(m, data, rows, K, q, sc, bi);
  free(copy);
  // The blocks are never read again: hand their pages of the mapping back, so a quantized
  // model is resident once (as repacked), not twice.
  mx_checkpoint_release(ck, t->data, (size_t)t->nbytes);
  char base[320], sn[340];
  snprintf(base, sizeof base, "%.*s", (int)(len - 7), name);
  int64_t wd[2] = {rows, m->is_signed ? K : K * m->bits / 32}, sd[2] = {rows, G};
  mx_status_t st = mx_checkpoint_put(ck, name, m->is_signed ? MX_ELEM_I8 : MX_ELEM_UI32, 2, wd, q);
  snprintf(sn, sizeof sn, "%s.scales", base);
  if (st == MX_OK) {
    st = mx_checkpoint_put(ck, sn, m->sdt, 2, sd, sc);
  } else {
    free(sc);
  }
  snprintf(sn, sizeof sn, "%s.biases", base);
  if (st == MX_OK && bi) {
    st = mx_checkpoint_put(ck, sn, m->sdt, 2, sd, bi);
  } else {
    free(bi);
  }
  return st;
}

mx_status_t mx_gguf_tensors(const mx_gguf_t *g, const mx_model_config_t *cfg, const char *src,
                            mx_checkpoint_t *ck) {
  bool llama = strcmp(cfg->model_type, "llama") == 0;
  for (int32_t i = 0; i < g->n_tensors; i++) {
    mx_status_t st = add_one(&g->tensors[i], cfg, llama, src, ck);
    if (st != MX_OK) return st;
  }
  return MX_OK;
}
