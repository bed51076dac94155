// Public graph API: mx_model_check_weights, mx_model_list_weights, mx_model_build_graph,
// mx_graph_arg_info.
#include <stdio.h>
#include <string.h>

#include "model/audio_internal.h"
#include "model/vision_internal.h"

static bool float_dtype_ok(mx_elem_type_t et) {
  return et == MX_ELEM_F32 || et == MX_ELEM_F16 || et == MX_ELEM_BF16;
}

static mx_status_t check_list(const mx_wlist_t *wl, const mx_checkpoint_t *ck) {
  for (int32_t i = 0; i < wl->n; i++) {
    const mx_wspec_t *s = &wl->w[i];
    const mx_weight_t *w = mx_checkpoint_find(ck, s->name);
    if (w == NULL) {
      return mx_error_set(MX_ERR_INVALID_ARG, "checkpoint: missing tensor \"%s\"", s->name);
    }
    bool same = w->rank == s->rank;
    for (int32_t d = 0; same && d < s->rank; d++) same = w->dims[d] == s->dims[d];
    if (!same) {
      char want[64], got[64];
      mx_type_t tw = mx_type_tensor(w->dtype, s->rank, s->dims);
      mx_type_t tg = mx_type_tensor(w->dtype, w->rank, w->dims);
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "checkpoint: tensor \"%s\" in %s has shape %s, the config needs %s",
                          s->name, w->file ? w->file : "?", mx_type_str(&tg, got, sizeof got),
                          mx_type_str(&tw, want, sizeof want));
    }
    // MXFP4's e8m0 scales are u8 (mx_wlist_resolve_quant checked them against their weight).
    bool e8m0 = s->kind == MX_WK_QPARAM && w->dtype == MX_ELEM_UI8;
    if (!s->qmode && !e8m0 && !float_dtype_ok(w->dtype)) {
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "checkpoint: tensor \"%s\" in %s has dtype %s (f32, f16 or bf16 needed)",
                          s->name, w->file ? w->file : "?", mx_elem_name(w->dtype));
    }
  }
  return MX_OK;
}

// Runs fn on the weight list of cfg's architecture (names resolved against ck when given).
static mx_status_t with_wlist(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                              mx_status_t (*fn)(const mx_wlist_t *wl, const void *arg),
                              const void *arg) {
  mx_arch_t a;
  mx_wlist_t wl;
  mx_status_t st = mx_arch_from_config(cfg, &a);
  if (st != MX_OK) return st;
  if (ck != NULL) mx_arch_resolve_names(&a, ck);
  st = mx_arch_weights(&a, &wl);
  if (st == MX_OK) {
    // Quantized weights (when the checkpoint is known): their stored form and scales / biases.
    if (ck != NULL) st = mx_wlist_resolve_quant(&wl, ck);
    if (st == MX_OK) st = fn(&wl, arg);
    mx_wlist_free(&wl);
  }
  mx_arch_free(&a);
  return st;
}

static mx_status_t check_fn(const mx_wlist_t *wl, const void *ck) { return check_list(wl, ck); }

mx_status_t mx_model_check_weights(const mx_model_config_t *cfg, const mx_checkpoint_t *ck) {
  if (cfg == NULL || ck == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_model_check_weights: NULL argument");
  }
  MX_TRY(with_wlist(cfg, ck, check_fn, ck));
  return mx_vision_check_weights(cfg, ck);
}

typedef struct visit {
  mx_weight_spec_fn fn;
  void *user;
} visit_t;

static mx_status_t visit_fn(const mx_wlist_t *wl, const void *arg) {
  const visit_t *v = arg;
  mx_status_t st = MX_OK;
  // A tied head is the embedding again (wl->head == wl->embed): listed once.
  for (int32_t i = 0; st == MX_OK && i < wl->n; i++) {
    st = v->fn(v->user, wl->w[i].name, wl->w[i].rank, wl->w[i].dims);
  }
  return st;
}

mx_status_t mx_model_list_weights(const mx_model_config_t *cfg, mx_weight_spec_fn fn, void *user) {
  if (cfg == NULL || fn == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_model_list_weights: NULL argument");
  }
  visit_t v = {fn, user};
  return with_wlist(cfg, NULL, visit_fn, &v);
}

mx_status_t mx_model_build_graph(const mx_model_config_t *cfg, const mx_checkpoint_t *ck,
                                 const mx_graph_opts_t *opts, mx_module_t **out) {
  if (out != NULL) *out = NULL;
  if (cfg == NULL || ck == NULL || opts == NULL || out == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_model_build_graph: NULL argument");
  }
  mx_graph_opts_t o = *opts;
  if (o.batch == 0) o.batch = 1;
  if (o.kv_dtype == MX_ELEM_INVALID) o.kv_dtype = MX_ELEM_F32;
  if (o.batch < 0 || o.ctx <= 0 || o.prefill_len <= 0 || o.prefill_len > o.ctx) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "graph: need batch >= 1, ctx > 0 and 0 < prefill_len <= ctx (got batch "
                        "%d, ctx %lld, prefill_len %d)",
                        o.batch, (long long)o.ctx, o.prefill_len);
  }
  if (o.attn_len < 0 || o.attn_len > o.ctx || (o.attn_len > 0 && o.attn_len < o.prefill_len)) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "graph: attention window %lld must be 0 or within prefill_len %d .. ctx "
                        "%lld",
                        (long long)o.attn_len, o.prefill_len, (long long)o.ctx);
  }
  // @prefill_media takes media rows at the image tokens of a vision model or, for Gemma 3n,
  // at the audio tokens (ADR 0022).
  if (o.media && !cfg->vision.present && !cfg->audio.present) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "graph: model_type '%s' has no vision tower (no @vision / "
                        "@prefill_media) and no audio tower",
                        cfg->model_type);
  }
  if (o.audio_frames < 0 || (o.audio_frames > 0 && !cfg->audio.present)) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "graph: model_type '%s' has no audio tower (no @audio for %d frames)",
                        cfg->model_type, o.audio_frames);
  }
  if (!float_dtype_ok(o.kv_dtype)) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "graph: KV cache dtype %s (f32, f16 or bf16 needed)",
                        mx_elem_name(o.kv_dtype));
  }
  mx_arch_t a;
  mx_wlist_t wl;
  memset(&wl, 0, sizeof wl);
  mx_status_t st = mx_arch_from_config(cfg, &a);
  if (st != MX_OK) return st;
  mx_arch_resolve_names(&a, ck);
  st = mx_arch_weights(&a, &wl);
  if (st == MX_OK) st = mx_wlist_resolve_quant(&wl, ck);
  if (st == MX_OK) st = check_list(&wl, ck);
  mx_module_t *m = NULL;
  if (st == MX_OK) {
    m = mx_module_create(NULL);
    if (m == NULL) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  mx_comp_ctx_t cc;
  mx_comp_ctx_init(&cc, m);
  if (st == MX_OK) {
    st = mx_graph_build_func(&a, &wl, ck, &o, &cc, "prefill", o.prefill_len, o.all_logits);
  }
  if (st == MX_OK) st = mx_graph_build_func(&a, &wl, ck, &o, &cc, "decode", 1, false);
  if (st == MX_OK && o.media)
    st = mx_graph_build_media_func(&a, &wl, ck, &o, &cc, o.prefill_len, o.all_logits);
  if (st == MX_OK && o.media && cfg->vision.present) st = mx_vision_build(cfg, ck, &o, &cc);
  if (st == MX_OK && o.audio_frames > 0) st = mx_audio_build(cfg, ck, &o, &cc);
  mx_comp_ctx_free(&cc);
  mx_wlist_free(&wl);
  mx_arch_free(&a);
  if (st == MX_OK) st = mx_hlo_verify_module(m);
  if (st != MX_OK) {
    mx_module_destroy(m);
    return st;
  }
  *out = m;
  return MX_OK;
}

mx_status_t mx_graph_arg_info(const mx_func_t *f, int32_t i, mx_graph_arg_t *info) {
  if (f == NULL || info == NULL || f->body == NULL || i < 0 || i >= f->body->n_args ||
      f->arg_attrs == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "graph: no argument %d", i);
  }
  const mx_attr_t *d = &f->arg_attrs[i];
  const mx_attr_t *role = d->kind == MX_ATTR_DICT ? mx_attr_field(d, "mx.role") : NULL;
  const mx_attr_t *name = d->kind == MX_ATTR_DICT ? mx_attr_field(d, "mx.name") : NULL;
  const mx_attr_t *layer = d->kind == MX_ATTR_DICT ? mx_attr_field(d, "mx.layer") : NULL;
  const char *fn = f->name ? f->name : "?";
  if (role == NULL || role->kind != MX_ATTR_STRING || name == NULL ||
      name->kind != MX_ATTR_STRING) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "graph: argument %d of @%s has no string mx.role / mx.name attributes", i,
                        fn);
  }
  static const char *const roles[] = {"weight", "tokens",     "pos0",       "k_cache",   "v_cache",
                                      "media",  "pixels",     "positions",  "deepstack", "pooling",
                                      "audio",  "audio_mask", "rope_offset"};
  int32_t r = -1;
  for (int32_t k = 0; k < (int32_t)(sizeof roles / sizeof roles[0]); k++)
    if (strcmp(role->s, roles[k]) == 0) r = k;
  if (r < 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "graph: argument %d of @%s has unknown mx.role \"%s\"",
                        i, fn, role->s);
  }
  info->role = (mx_arg_role_t)r;
  info->name = name->s;
  info->layer = -1;
  info->seq = 0;
  if (r == MX_ARG_K_CACHE || r == MX_ARG_V_CACHE) {
    if (layer == NULL || layer->kind != MX_ATTR_INT || layer->i < 0 || layer->i > INT32_MAX) {
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "graph: cache argument %d of @%s has no valid mx.layer attribute", i, fn);
    }
    info->layer = (int32_t)layer->i;
    const mx_attr_t *seq = mx_attr_field(d, "mx.seq");
    if (seq != NULL && (seq->kind != MX_ATTR_INT || seq->i < 0 || seq->i > INT32_MAX)) {
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "graph: cache argument %d of @%s has a bad mx.seq attribute", i, fn);
    }
    if (seq != NULL) info->seq = (int32_t)seq->i;
  }
  return MX_OK;
}
