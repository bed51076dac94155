// The composite contract's names, writers and readers (mlxcel/composite.h).
#include "mlxcel/composite.h"

#include <string.h>

static const struct {
  const char *name;
  mx_composite_kind_t kind;
} kComposites[] = {
    {MX_COMPOSITE_RMS_NORM, MX_COMPOSITE_KIND_RMS_NORM},
    {MX_COMPOSITE_ROPE, MX_COMPOSITE_KIND_ROPE},
    {MX_COMPOSITE_ATTENTION, MX_COMPOSITE_KIND_ATTENTION},
    {MX_COMPOSITE_GATED_MLP, MX_COMPOSITE_KIND_GATED_MLP},
    {MX_COMPOSITE_LINEAR, MX_COMPOSITE_KIND_LINEAR},
    {MX_COMPOSITE_EMBEDDING, MX_COMPOSITE_KIND_EMBEDDING},
    {MX_COMPOSITE_GATED_ACT, MX_COMPOSITE_KIND_GATED_ACT},
    {MX_COMPOSITE_MOE, MX_COMPOSITE_KIND_MOE},
    {MX_COMPOSITE_MLA, MX_COMPOSITE_KIND_MLA},
};

static const char *const kActivations[] = {"silu", "gelu_tanh",
                                           "clamped_swiglu"};                    // mx_activation_t
static const char *const kRopeStyles[] = {"half", "interleaved"};                // mx_rope_style_t
static const char *const kQModes[] = {NULL, "int8", "int4", "affine", "mxfp4"};  // mx_qmode_t

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

// Index of `name` in names[0..n), -1 when absent (NULL entries never match).
static int find(const char *const *names, int n, const char *name) {
  for (int i = 0; name && i < n; i++)
    if (names[i] && strcmp(names[i], name) == 0) return i;
  return -1;
}

mx_composite_kind_t mx_composite_kind(const mx_op_t *op) {
  const mx_attr_t *na = mx_op_attr(op, "name");
  if (!na || na->kind != MX_ATTR_STRING || !na->s) return MX_COMPOSITE_NONE;
  for (int i = 0; i < COUNT(kComposites); i++)
    if (strcmp(na->s, kComposites[i].name) == 0) return kComposites[i].kind;
  return MX_COMPOSITE_NONE;
}

int64_t mx_composite_version(const mx_op_t *op) {
  const mx_attr_t *v = mx_op_attr(op, "version");
  return v && v->kind == MX_ATTR_INT ? v->i : 0;
}

const char *mx_activation_name(mx_activation_t a) {
  return (int)a >= 0 && (int)a < COUNT(kActivations) ? kActivations[a] : NULL;
}
const char *mx_rope_style_name(mx_rope_style_t s) {
  return (int)s >= 0 && (int)s < COUNT(kRopeStyles) ? kRopeStyles[s] : NULL;
}
const char *mx_qmode_name(mx_qmode_t m) {
  return (int)m >= 0 && (int)m < COUNT(kQModes) ? kQModes[m] : NULL;
}

bool mx_activation_parse(const char *name, mx_activation_t *out) {
  int i = find(kActivations, COUNT(kActivations), name);
  if (i >= 0) *out = (mx_activation_t)i;
  return i >= 0;
}
bool mx_rope_style_parse(const char *name, mx_rope_style_t *out) {
  int i = find(kRopeStyles, COUNT(kRopeStyles), name);
  if (i >= 0) *out = (mx_rope_style_t)i;
  return i >= 0;
}

// ---------------------------------------------------------------------------------------------
// Writers (the attribute order is the printed order)
// ---------------------------------------------------------------------------------------------

int32_t mx_comp_rms_norm_write(mx_module_t *m, const mx_comp_rms_norm_t *a,
                               mx_named_attr_t *attrs) {
  (void)m;
  attrs[0] = (mx_named_attr_t){"eps", mx_attr_float(a->eps, MX_ELEM_F32)};
  attrs[1] = (mx_named_attr_t){"weight_offset", mx_attr_float(a->weight_offset, MX_ELEM_F32)};
  return 2;
}

int32_t mx_comp_rope_write(mx_module_t *m, const mx_comp_rope_t *a, mx_named_attr_t *attrs) {
  attrs[0] = (mx_named_attr_t){"rotary_dim", mx_attr_int(a->rotary_dim, MX_ELEM_I64)};
  attrs[1] = (mx_named_attr_t){"style", mx_attr_string(m, mx_rope_style_name(a->style))};
  if (a->scale == 1.0) return 2;  // plain RoPE graphs stay as they were
  attrs[2] = (mx_named_attr_t){"scale", mx_attr_float(a->scale, MX_ELEM_F32)};
  return 3;
}

int32_t mx_comp_attention_write(mx_module_t *m, const mx_comp_attention_t *a,
                                mx_named_attr_t *attrs) {
  (void)m;
  int32_t n = 0;  // graphs without sinks or blocks stay as they were
  if (a->blocks) attrs[n++] = (mx_named_attr_t){"blocks", mx_attr_int(1, MX_ELEM_I64)};
  attrs[n++] = (mx_named_attr_t){"scale", mx_attr_float(a->scale, MX_ELEM_F32)};
  attrs[n++] = (mx_named_attr_t){"softcap", mx_attr_float(a->softcap, MX_ELEM_F32)};
  attrs[n++] = (mx_named_attr_t){"window", mx_attr_int(a->window, MX_ELEM_I64)};
  if (a->sinks) attrs[n++] = (mx_named_attr_t){"sinks", mx_attr_int(1, MX_ELEM_I64)};
  return n;
}

int32_t mx_comp_gated_write(mx_module_t *m, const mx_comp_gated_t *a, mx_named_attr_t *attrs) {
  attrs[0] = (mx_named_attr_t){"activation", mx_attr_string(m, mx_activation_name(a->activation))};
  return 1;
}

int32_t mx_comp_quant_write(mx_module_t *m, const mx_comp_quant_t *a, mx_named_attr_t *attrs) {
  attrs[0] = (mx_named_attr_t){"bits", mx_attr_int(a->bits, MX_ELEM_I64)};
  attrs[1] = (mx_named_attr_t){"group_size", mx_attr_int(a->group_size, MX_ELEM_I64)};
  attrs[2] = (mx_named_attr_t){"mode", mx_attr_string(m, mx_qmode_name(a->mode))};
  return 3;
}

static const char *const kMoeScorings[] = {"softmax", "sigmoid"};  // mx_moe_scoring_t
static const char *const kMoeGroupRanks[] = {"max", "top2_sum"};   // mx_moe_group_rank_t

int32_t mx_comp_moe_write(mx_module_t *m, const mx_comp_moe_t *a, mx_named_attr_t *attrs) {
  // By name; DeepSeek's routing attributes only when set, and mx.linear's (bits, group_size,
  // mode) last and only for quantized experts, so other graphs stay as they were.
  int32_t n = 0;
  attrs[n++] =
      (mx_named_attr_t){"activation", mx_attr_string(m, mx_activation_name(a->activation))};
  if (a->choice_bias) attrs[n++] = (mx_named_attr_t){"choice_bias", mx_attr_int(1, MX_ELEM_I64)};
  bool groups = a->n_group > 1;
  if (groups) {
    attrs[n++] = (mx_named_attr_t){"group_rank", mx_attr_string(m, kMoeGroupRanks[a->group_rank])};
    attrs[n++] = (mx_named_attr_t){"n_group", mx_attr_int(a->n_group, MX_ELEM_I64)};
  }
  if (a->expert_bias) attrs[n++] = (mx_named_attr_t){"expert_bias", mx_attr_int(1, MX_ELEM_I64)};
  attrs[n++] = (mx_named_attr_t){"norm_topk", mx_attr_int(a->norm_topk ? 1 : 0, MX_ELEM_I64)};
  if (a->router_bias) attrs[n++] = (mx_named_attr_t){"router_bias", mx_attr_int(1, MX_ELEM_I64)};
  if (a->routed_scale != 0.0 && a->routed_scale != 1.0)
    attrs[n++] = (mx_named_attr_t){"routed_scale", mx_attr_float(a->routed_scale, MX_ELEM_F32)};
  if (a->scoring != MX_MOE_SOFTMAX)
    attrs[n++] = (mx_named_attr_t){"scoring", mx_attr_string(m, kMoeScorings[a->scoring])};
  if (a->activation == MX_ACT_CLAMPED_SWIGLU) {
    attrs[n++] = (mx_named_attr_t){"swiglu_alpha", mx_attr_float(a->swiglu_alpha, MX_ELEM_F32)};
    attrs[n++] = (mx_named_attr_t){"swiglu_limit", mx_attr_float(a->swiglu_limit, MX_ELEM_F32)};
  }
  attrs[n++] = (mx_named_attr_t){"top_k", mx_attr_int(a->top_k, MX_ELEM_I64)};
  if (groups) attrs[n++] = (mx_named_attr_t){"topk_group", mx_attr_int(a->topk_group, MX_ELEM_I64)};
  if (!a->quantized) return n;
  return n + mx_comp_quant_write(m, &a->quant, attrs + n);
}

int32_t mx_comp_mla_write(mx_module_t *m, const mx_comp_mla_t *a, mx_named_attr_t *attrs) {
  (void)m;
  attrs[0] = (mx_named_attr_t){"scale", mx_attr_float(a->scale, MX_ELEM_F32)};
  return 1;
}

// ---------------------------------------------------------------------------------------------
// Readers
// ---------------------------------------------------------------------------------------------

static const mx_attr_t *field(const mx_op_t *op, const char *name) {
  const mx_attr_t *d = mx_op_attr(op, "composite_attributes");
  return d ? mx_attr_field(d, name) : NULL;
}

static bool read_f(const mx_op_t *op, const char *name, double *v) {
  const mx_attr_t *a = field(op, name);
  if (a && a->kind == MX_ATTR_FLOAT)
    *v = a->f;
  else if (a && a->kind == MX_ATTR_INT)
    *v = (double)a->i;
  else
    return false;
  return true;
}

static bool read_i(const mx_op_t *op, const char *name, int64_t *v) {
  const mx_attr_t *a = field(op, name);
  if (!a || a->kind != MX_ATTR_INT) return false;
  *v = a->i;
  return true;
}

static const char *read_s(const mx_op_t *op, const char *name) {
  const mx_attr_t *a = field(op, name);
  return a && a->kind == MX_ATTR_STRING ? a->s : NULL;
}

bool mx_comp_rms_norm_read(const mx_op_t *op, mx_comp_rms_norm_t *a) {
  return read_f(op, "eps", &a->eps) && read_f(op, "weight_offset", &a->weight_offset);
}

bool mx_comp_rope_read(const mx_op_t *op, mx_comp_rope_t *a) {
  a->scale = 1.0;
  read_f(op, "scale", &a->scale);
  return read_i(op, "rotary_dim", &a->rotary_dim) &&
         mx_rope_style_parse(read_s(op, "style"), &a->style);
}

bool mx_comp_attention_read(const mx_op_t *op, mx_comp_attention_t *a) {
  a->window = 0;
  a->softcap = 0;
  if (!read_f(op, "scale", &a->scale)) return false;
  read_f(op, "softcap", &a->softcap);
  read_i(op, "window", &a->window);
  int64_t sinks = 0;
  if (field(op, "sinks") && (!read_i(op, "sinks", &sinks) || (sinks != 0 && sinks != 1)))
    return false;
  a->sinks = sinks == 1;
  int64_t blocks = 0;
  if (field(op, "blocks") && (!read_i(op, "blocks", &blocks) || (blocks != 0 && blocks != 1)))
    return false;
  a->blocks = blocks == 1;
  return true;
}

bool mx_comp_gated_read(const mx_op_t *op, mx_comp_gated_t *a) {
  // The clamped SwiGLU needs mx.moe's alpha and limit: not an activation of these composites.
  return mx_activation_parse(read_s(op, "activation"), &a->activation) &&
         a->activation != MX_ACT_CLAMPED_SWIGLU;
}

// An optional 0 / 1 attribute: absent -> false; another value or kind fails.
static bool read_flag(const mx_op_t *op, const char *name, bool *v) {
  int64_t i = 0;
  if (field(op, name) && (!read_i(op, name, &i) || (i != 0 && i != 1))) return false;
  *v = i == 1;
  return true;
}

bool mx_comp_quant_read(const mx_op_t *op, mx_comp_quant_t *a) {
  int i = find(kQModes, COUNT(kQModes), read_s(op, "mode"));
  if (i < 0 || !read_i(op, "bits", &a->bits) || !read_i(op, "group_size", &a->group_size))
    return false;
  a->mode = (mx_qmode_t)i;
  return true;
}

bool mx_comp_moe_read(const mx_op_t *op, mx_comp_moe_t *a) {
  int64_t norm = -1, bias = 0;
  if (!mx_activation_parse(read_s(op, "activation"), &a->activation) ||
      !read_i(op, "top_k", &a->top_k) || !read_i(op, "norm_topk", &norm) || a->top_k < 1 ||
      (norm != 0 && norm != 1))
    return false;
  a->norm_topk = norm == 1;
  a->quantized = field(op, "mode") != NULL;
  if (!a->quantized) memset(&a->quant, 0, sizeof a->quant);
  if (a->quantized && !mx_comp_quant_read(op, &a->quant)) return false;
  // DeepSeek's routing (optional).
  a->scoring = MX_MOE_SOFTMAX;
  a->n_group = a->topk_group = 0;
  a->group_rank = MX_MOE_GROUP_MAX;
  a->routed_scale = 1.0;
  const char *sc = read_s(op, "scoring"), *gr = read_s(op, "group_rank");
  int i = sc ? find(kMoeScorings, COUNT(kMoeScorings), sc) : 0;
  int j = gr ? find(kMoeGroupRanks, COUNT(kMoeGroupRanks), gr) : 0;
  if (i < 0 || j < 0 || (field(op, "choice_bias") && !read_i(op, "choice_bias", &bias)) ||
      (bias != 0 && bias != 1) ||
      (field(op, "routed_scale") && !read_f(op, "routed_scale", &a->routed_scale)))
    return false;
  a->scoring = (mx_moe_scoring_t)i;
  a->group_rank = (mx_moe_group_rank_t)j;
  a->choice_bias = bias == 1;
  // gpt-oss (optional).
  a->swiglu_alpha = a->swiglu_limit = 0;
  if (!read_flag(op, "router_bias", &a->router_bias) ||
      !read_flag(op, "expert_bias", &a->expert_bias))
    return false;
  if (a->activation == MX_ACT_CLAMPED_SWIGLU &&
      (!read_f(op, "swiglu_alpha", &a->swiglu_alpha) ||
       !read_f(op, "swiglu_limit", &a->swiglu_limit) || !(a->swiglu_limit > 0)))
    return false;
  if (field(op, "n_group")) {
    if (!read_i(op, "n_group", &a->n_group) || !read_i(op, "topk_group", &a->topk_group) ||
        a->n_group < 1 || a->topk_group < 1 || a->topk_group > a->n_group)
      return false;
  }
  return true;
}

bool mx_comp_mla_read(const mx_op_t *op, mx_comp_mla_t *a) {
  return read_f(op, "scale", &a->scale);
}
