// config.json and generation_config.json of a preset, as transformers' save_pretrained writes
// them (keys sorted, indent 2, Python float spelling): the keys every family writes, plus the
// optional ones its family's MK_KEY_* bits name.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mkmodel.h"

enum { MAX_KEYS = 64 };

// An object under construction: raw JSON values by key, printed sorted.
typedef struct obj {
  int32_t n;
  bool overflow;      // more than MAX_KEYS keys (the lists below are fixed and far shorter)
  mx_strbuf_t spare;  // where the values of keys past MAX_KEYS go
  struct {
    const char *key;
    mx_strbuf_t val;
  } e[MAX_KEYS];
} obj_t;

static mx_strbuf_t *add(obj_t *o, const char *key) {
  if (o->n == MAX_KEYS) {
    o->overflow = true;
    mx_strbuf_free(&o->spare);
    return &o->spare;
  }
  o->e[o->n].key = key;
  mx_strbuf_init(&o->e[o->n].val);
  return &o->e[o->n++].val;
}

static void add_raw(obj_t *o, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_raw(obj_t *o, const char *key, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  mx_strbuf_puts(add(o, key), buf);
}

static void add_str(obj_t *o, const char *key, const char *s) {
  mx_cli_json_string(add(o, key), s);
}

// Python's repr of a float: "10000.0", "0.75", "1e-06".
static void add_float(obj_t *o, const char *key, double v) {
  if (v == floor(v) && fabs(v) < 1e16) {
    add_raw(o, key, "%.1f", v);
    return;
  }
  char buf[32];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  add_raw(o, key, "%s", buf);
}

static void add_float_or_null(obj_t *o, const char *key, double v) {
  if (v > 0) {
    add_float(o, key, v);
  } else {
    add_raw(o, key, "null");
  }
}

static int cmp_key(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// Prints the object sorted by key (each entry starts with its key pointer) at nesting depth
// `depth` (0: the file), then frees it.
static void print_obj_at(obj_t *o, mx_strbuf_t *sb, int depth) {
  qsort(o->e, (size_t)o->n, sizeof o->e[0], cmp_key);
  mx_strbuf_puts(sb, "{\n");
  for (int32_t i = 0; i < o->n; i++) {
    mx_strbuf_printf(sb, "%*s\"%s\": %s%s\n", 2 * (depth + 1), "", o->e[i].key,
                     o->e[i].val.data ? o->e[i].val.data : "", i + 1 < o->n ? "," : "");
    mx_strbuf_free(&o->e[i].val);
  }
  mx_strbuf_printf(sb, "%*s}%s", 2 * depth, "", depth ? "" : "\n");
  mx_strbuf_free(&o->spare);
  o->n = 0;
}

static void print_obj(obj_t *o, mx_strbuf_t *sb) { print_obj_at(o, sb, 0); }

static const char *torch_dtype(mx_elem_type_t dt) {
  return dt == MX_ELEM_F16 ? "float16" : dt == MX_ELEM_BF16 ? "bfloat16" : "float32";
}

static void rope_scaling(const mk_preset_t *p, obj_t *o) {
  if (p->rope == MK_ROPE_LLAMA3) {
    add_raw(o, "rope_scaling",
            "{\n    \"factor\": 32.0,\n    \"high_freq_factor\": 4.0,\n    \"low_freq_factor\": "
            "1.0,\n    \"original_max_position_embeddings\": 8192,\n    \"rope_type\": "
            "\"llama3\"\n  }");
  } else if (p->rope == MK_ROPE_LINEAR) {
    add_raw(o, "rope_scaling", "{\n    \"factor\": %.1f,\n    \"rope_type\": \"linear\"\n  }",
            p->rope_factor);
  } else {
    add_raw(o, "rope_scaling", "null");
  }
}

// Multi-latent attention (DeepseekV2Config / DeepseekV3Config / YoutuConfig).
static void mla_keys(const mk_preset_t *p, obj_t *o) {
  add_raw(o, "kv_lora_rank", "%d", (int)p->kv_lora);
  if (p->q_lora > 0) {
    add_raw(o, "q_lora_rank", "%d", (int)p->q_lora);
  } else {
    add_raw(o, "q_lora_rank", "null");
  }
  add_raw(o, "qk_nope_head_dim", "%d", (int)p->qk_nope);
  add_raw(o, "qk_rope_head_dim", "%d", (int)p->qk_rope);
  add_raw(o, "v_head_dim", "%d", (int)p->v_dim);
}

// DeepSeek-V2 / V3's experts.
static void deepseek_keys(const mk_preset_t *p, obj_t *o) {
  uint32_t k = p->family->keys;
  add_raw(o, "n_routed_experts", "%d", (int)p->experts);
  add_raw(o, "n_shared_experts", "%d", (int)(p->moe_inter ? p->shared_inter / p->moe_inter : 0));
  add_raw(o, "num_experts_per_tok", "%d", (int)p->top_k);
  add_raw(o, "moe_intermediate_size", "%d", (int)p->moe_inter);
  add_raw(o, "first_k_dense_replace", "%d", (int)p->first_dense);
  add_raw(o, "norm_topk_prob", p->norm_topk ? "true" : "false");
  add_float(o, "routed_scaling_factor", p->routed_scale > 0 ? p->routed_scale : 1.0);
  if (p->n_group > 0) {
    add_raw(o, "n_group", "%d", (int)p->n_group);
    add_raw(o, "topk_group", "%d", (int)p->topk_group);
  }
  if (k & MK_KEY_DEEPSEEK_V2) {
    add_str(o, "topk_method", p->n_group > 0 ? "group_limited_greedy" : "greedy");
  }
}

// The keys of the family's optional MK_KEY_* groups, except layer_types.
static void family_keys(const mk_preset_t *p, obj_t *o) {
  uint32_t k = p->family->keys;
  const char *act = p->family->act;
  if (k & MK_KEY_ATTN_BIAS) add_raw(o, "attention_bias", "false");
  if (k & MK_KEY_LLAMA) {
    add_raw(o, "mlp_bias", "false");
    add_raw(o, "pretraining_tp", "1");
  }
  if (k & MK_KEY_HEAD_DIM) add_raw(o, "head_dim", "%d", (int)p->head_dim);
  if (k & MK_KEY_ACT) add_str(o, "hidden_act", act);
  if (k & MK_KEY_ACTIVATION) {
    if (k & MK_KEY_ACT) {
      add_raw(o, "hidden_activation", "null");  // Gemma 1: hidden_act decides
    } else {
      add_str(o, "hidden_activation", act);
    }
  }
  if (k & MK_KEY_ROPE_SCALING) rope_scaling(p, o);
  if (k & MK_KEY_TIE) add_raw(o, "tie_word_embeddings", p->untied ? "false" : "true");
  if (k & MK_KEY_QWEN_WINDOW) {
    add_raw(o, "max_window_layers", "%d",
            (int)(p->max_window_layers ? p->max_window_layers : p->layers));
    add_raw(o, "use_sliding_window", "false");
    add_raw(o, "sliding_window", "null");
  }
  if (k & MK_KEY_WINDOW) {
    if (p->window > 0) {
      add_raw(o, "sliding_window", "%d", (int)p->window);
    } else {
      add_raw(o, "sliding_window", "null");
    }
  }
  if (k & MK_KEY_PAD) {
    if (p->layout->pad) {
      add_raw(o, "pad_token_id", "%d", (int)mk_special_id(p, p->layout->pad));
    } else {
      add_raw(o, "pad_token_id", "null");  // a tokenizer without one
    }
  }
  if (k & MK_KEY_SOFTCAP) {
    add_float_or_null(o, "attn_logit_softcapping", p->attn_softcap);
    add_float_or_null(o, "final_logit_softcapping", p->final_softcap);
  }
  if (k & MK_KEY_QPAS) add_raw(o, "query_pre_attn_scalar", "%d", (int)p->qpas);
  if (k & MK_KEY_LOCAL_ROPE) {
    add_float(o, "rope_local_base_freq", p->local_base);
    add_raw(o, "sliding_window_pattern", "%d", (int)p->window_pattern);
  }
  if (k & MK_KEY_MOE) {
    add_raw(o, k & MK_KEY_MOE_LOCAL ? "num_local_experts" : "num_experts", "%d", (int)p->experts);
    add_raw(o, "num_experts_per_tok", "%d", (int)p->top_k);
    add_raw(o, "output_router_logits", "false");
    add_float(o, "router_aux_loss_coef", 0.001);
    if (!(k & MK_KEY_MOE_LOCAL)) add_raw(o, "norm_topk_prob", p->norm_topk ? "true" : "false");
  }
  if (k & MK_KEY_MOE_LOCAL) add_float(o, "router_jitter_noise", 0.0);
  if (k & MK_KEY_MOE_QWEN) {
    add_raw(o, "moe_intermediate_size", "%d", (int)p->moe_inter);
    add_raw(o, "decoder_sparse_step", "1");
    add_raw(o, "mlp_only_layers", "[]");
  }
  if (k & MK_KEY_SHARED) {
    add_raw(o, "shared_expert_intermediate_size", "%d", (int)p->shared_inter);
  }
  if (k & MK_KEY_MLA) mla_keys(p, o);
  if (k & MK_KEY_DEEPSEEK) deepseek_keys(p, o);
  for (const char *const *e = p->extra; e[0] && e[1]; e += 2) add_raw(o, e[0], "%s", e[1]);
  if (p->mxfp4_experts) {  // as gpt-oss's released config.json has it
    add_raw(o, "quantization_config",
            "{\"modules_to_not_convert\": [\"model.layers.*.self_attn\", "
            "\"model.layers.*.mlp.router\", \"model.embed_tokens\", \"lm_head\"], "
            "\"quant_method\": \"mxfp4\"}");
  }
  if (k & MK_KEY_PHI3) {
    add_float(o, "embd_pdrop", 0.0);
    add_float(o, "resid_pdrop", 0.0);
    add_raw(o, "original_max_position_embeddings", "%lld", (long long)p->max_pos);
    add_float(o, "partial_rotary_factor", p->partial_rotary > 0 ? p->partial_rotary : 1.0);
  }
}

// Replaces the value of an existing key (the text keys a vision-language model overrides).
static void set_str(obj_t *o, const char *key, const char *s) {
  for (int32_t i = 0; i < o->n; i++)
    if (strcmp(o->e[i].key, key) == 0) {
      mx_strbuf_free(&o->e[i].val);
      mx_strbuf_init(&o->e[i].val);
      mx_cli_json_string(&o->e[i].val, s);
    }
}

static void drop_key(obj_t *o, const char *key) {
  for (int32_t i = 0; i < o->n; i++)
    if (strcmp(o->e[i].key, key) == 0) {
      mx_strbuf_free(&o->e[i].val);
      o->e[i] = o->e[--o->n];
      return;
    }
}

static void all_keys(const mk_preset_t *p, mx_elem_type_t dt, obj_t *o) {
  add_raw(o, "architectures", "[\n    \"%s\"\n  ]", p->family->architecture);
  add_float(o, "attention_dropout", 0.0);
  add_raw(o, "bos_token_id", "%d", (int)mk_special_id(p, p->layout->bos));
  add_raw(o, "eos_token_id", "%d", (int)mk_special_id(p, p->layout->eos));
  add_raw(o, "hidden_size", "%d", (int)p->hidden);
  add_float(o, "initializer_range", 0.02);
  add_raw(o, "intermediate_size", "%d", (int)p->inter);
  add_raw(o, "max_position_embeddings", "%lld", (long long)p->max_pos);
  add_str(o, "model_type", p->family->arch);
  add_raw(o, "num_attention_heads", "%d", (int)p->heads);
  add_raw(o, "num_hidden_layers", "%d", (int)p->layers);
  add_raw(o, "num_key_value_heads", "%d", (int)p->kv_heads);
  uint32_t k = p->family->keys;
  add_raw(o,
          k & MK_KEY_LAYER_NORM_EPS ? "layer_norm_eps"
          : k & MK_KEY_NORM_EPSILON ? "norm_epsilon"
                                    : "rms_norm_eps",
          "%s", p->eps);
  add_float(o, "rope_theta", p->theta);
  add_str(o, "torch_dtype", torch_dtype(dt));
  add_str(o, "transformers_version", "4.55.4");
  add_raw(o, "use_cache", "true");
  add_raw(o, "vocab_size", "%d", (int)p->vocab);
  family_keys(p, o);
}

// A vision-language model's top-level keys (the text model's object t is its text_config, or
// holds them; mk_vision_t), printed to sb; t is printed and freed.
static void vision_keys(const mk_preset_t *p, mx_elem_type_t dt, obj_t *t, mx_strbuf_t *sb) {
  const mk_vision_t *v = p->vision;
  obj_t outer = {0};
  obj_t *o = v->text_model_type ? &outer : t;
  if (v->text_model_type) {
    set_str(t, "model_type", v->text_model_type);
    drop_key(t, "architectures");  // the outer model's
    add_raw(o, "architectures", "[\n    \"%s\"\n  ]", p->family->architecture);
    add_str(o, "model_type", p->family->arch);
    add_str(o, "torch_dtype", torch_dtype(dt));
    add_str(o, "transformers_version", "4.55.4");
    add_raw(o, "tie_word_embeddings", "%s", p->untied ? "false" : "true");
    print_obj_at(t, add(o, "text_config"), 1);
  }
  mx_strbuf_puts(add(o, "vision_config"), v->vision_config);
  for (const char *const *e = v->token_ids; e[0] && e[1]; e += 2)
    add_raw(o, e[0], "%d", (int)mk_special_id(p, e[1]));
  for (const char *const *e = v->extra; e[0] && e[1]; e += 2) mx_strbuf_puts(add(o, e[0]), e[1]);
  print_obj(o, sb);
}

static void print_config(const mk_preset_t *p, mx_elem_type_t dt, obj_t *o, mx_strbuf_t *sb) {
  if (p->vision) {
    vision_keys(p, dt, o, sb);
  } else {
    print_obj(o, sb);
  }
}

mx_status_t mk_config_json(const mk_preset_t *p, mx_elem_type_t dt, mx_strbuf_t *sb,
                           mx_model_config_t *cfg) {
  obj_t o = {0};
  all_keys(p, dt, &o);
  mx_strbuf_t text;
  mx_strbuf_init(&text);
  print_config(p, dt, &o, &text);
  // The library reads the file back; where the family writes layer_types, they are the layers
  // it decided to slide from the other keys (one rule, the library's).
  mx_status_t st = text.oom ? mx_error_set(MX_ERR_NOMEM, "mkmodel: out of memory")
                            : mx_config_parse(text.data, text.len, NULL, 0, "config.json", cfg);
  mx_strbuf_free(&text);
  if (st != MX_OK) return st;
  all_keys(p, dt, &o);
  if (p->family->keys & MK_KEY_LAYER_TYPES) {
    mx_strbuf_t *v = add(&o, "layer_types");
    mx_strbuf_puts(v, "[");
    for (int32_t l = 0; l < p->layers; l++) {
      mx_strbuf_printf(v, "%s\n    \"%s\"", l ? "," : "",
                       cfg->layer_sliding[l] ? "sliding_attention" : "full_attention");
    }
    mx_strbuf_puts(v, "\n  ]");
  }
  print_config(p, dt, &o, sb);
  if (o.overflow)
    return mx_error_set(MX_ERR_RUNTIME, "mkmodel: more than %d config keys", MAX_KEYS);
  return sb->oom ? mx_error_set(MX_ERR_NOMEM, "mkmodel: out of memory") : MX_OK;
}

void mk_preprocessor_config_json(const mk_preset_t *p, mx_strbuf_t *sb) {
  if (p->vision) mx_strbuf_puts(sb, p->vision->preprocessor);
}

void mk_generation_config_json(const mk_preset_t *p, mx_strbuf_t *sb) {
  obj_t o = {0};
  add_raw(&o, "_from_model_config", "true");
  add_raw(&o, "bos_token_id", "%d", (int)mk_special_id(p, p->layout->bos));
  int32_t eos = mk_special_id(p, p->layout->eos), eot = mk_special_id(p, p->layout->eot);
  if (eot >= 0) {
    add_raw(&o, "eos_token_id", "[\n    %d,\n    %d\n  ]", (int)eos, (int)eot);
  } else {
    add_raw(&o, "eos_token_id", "%d", (int)eos);
  }
  if (p->layout->pad) add_raw(&o, "pad_token_id", "%d", (int)mk_special_id(p, p->layout->pad));
  add_str(&o, "transformers_version", "4.55.4");
  print_obj(&o, sb);
}
