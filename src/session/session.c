// Sessions: option resolution (options, defaults, model limits), range and capacity checks,
// chunked prefill. Everything a step needs is allocated in mx_session_create.
#include <stdlib.h>
#include <string.h>

#include "session/session_internal.h"

enum { DEFAULT_PREFILL_CHUNK = 64, DEFAULT_CTX_CAP = 4096, MAX_THREADS = 256 };

// An unknown backend name (`what`: "backend", "vision backend"), with the names that exist.
static mx_status_t unknown_backend(const char *what, const char *name) {
  char names[256];
  mx_backend_list_names(names, sizeof names);
  return mx_error_set(MX_ERR_INVALID_ARG, "unknown %s '%s'; known backends: %s", what, name, names);
}

mx_status_t mx_session_resolve_opts(const mx_model_t *model, const mx_session_opts_t *opts,
                                    const mx_backend_t **be_out, mx_backend_config_t *cfg_out) {
  static const mx_session_opts_t kDefaults = {0};
  if (!opts) opts = &kDefaults;
  const mx_model_config_t *cfg = &model->config;
  if (cfg->vocab_size <= 0 || cfg->max_position_embeddings <= 0)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "session: model config has vocab_size %d, max_position_embeddings %lld",
                        cfg->vocab_size, (long long)cfg->max_position_embeddings);

  // Backend: option, else the built-in CPU runtime.
  const char *bname = opts->backend ? opts->backend : "cpu";
  const mx_backend_t *be = mx_backend_find(bname);
  if (!be) return unknown_backend("backend", bname);

  // Context capacity: option, else min(max_pos, 4096).
  int64_t ctx = opts->ctx;
  if (ctx < 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "context capacity must be > 0, got %lld",
                        (long long)ctx);
  if (ctx == 0)
    ctx = cfg->max_position_embeddings < DEFAULT_CTX_CAP ? cfg->max_position_embeddings
                                                         : DEFAULT_CTX_CAP;
  if (ctx > cfg->max_position_embeddings)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "context capacity %lld exceeds the model's max_position_embeddings %lld",
                        (long long)ctx, (long long)cfg->max_position_embeddings);
  if (ctx > INT32_MAX)
    return mx_error_set(MX_ERR_INVALID_ARG, "context capacity %lld is too large", (long long)ctx);

  int32_t chunk = opts->prefill_chunk             ? opts->prefill_chunk
                  : be->default_prefill_chunk > 0 ? be->default_prefill_chunk
                                                  : DEFAULT_PREFILL_CHUNK;
  if (chunk < 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "prefill_chunk must be > 0, got %d", chunk);
  if (chunk > ctx) chunk = (int32_t)ctx;  // a chunk never needs more than the whole capacity

  const mx_backend_opts_t *bo = &opts->backend_opts;
  if (bo->threads < 0 || bo->threads > MAX_THREADS)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "threads must be in 1..%d (0 = the physical cores), got %d", MAX_THREADS,
                        bo->threads);
  *be_out = be;
  *cfg_out = (mx_backend_config_t){.ctx = ctx, .prefill_chunk = chunk, .opts = *bo};
  return MX_OK;
}

mx_status_t mx_session_vision_state(const mx_model_t *model, const char *name,
                                    const mx_backend_t *text_be, const mx_backend_config_t *bc,
                                    const mx_backend_t **vbe, void **vstate) {
  *vbe = NULL;
  *vstate = NULL;
  if (!name) return MX_OK;
  const mx_backend_t *be = mx_backend_find(name);
  if (!be) return unknown_backend("vision backend", name);
  if (be == text_be || !model->config.vision.present) return MX_OK;
  // The Qwen towers (ADR 0013) run through vision_grid, Molmo2's through vision_pooled,
  // LLaVA's through vision.
  const mx_vision_config_t *v = &model->config.vision;
  if (v->kind == MX_VISION_MOLMO2 ? !be->vision_pooled
      : mx_vision_fixed_size(v)   ? !be->vision
                                  : !be->vision_grid)
    return mx_error_set(
        MX_ERR_UNSUPPORTED,
        "vision backend '%s': the %s backend cannot run the vision tower (@vision); "
        "use interp, cpu or xla",
        name, be->name);
  mx_backend_config_t vc = *bc;
  vc.vision_only = true;
  vc.opts.progress = (mx_progress_t){0};  // the text state's packing is the one reported
  mx_status_t st = be->create(model, &vc, vstate);
  if (st) {
    *vstate = NULL;
    return mx_error_prefix(st, "vision backend %s", be->name);
  }
  *vbe = be;
  return MX_OK;
}

mx_status_t mx_session_create(const mx_model_t *model, const mx_session_opts_t *opts,
                              mx_session_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_create: out is NULL");
  *out = NULL;
  if (!model) return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_create: model is NULL");
  const mx_model_config_t *cfg = &model->config;
  const mx_backend_t *be = NULL;
  mx_backend_config_t bc;
  mx_status_t st0 = mx_session_resolve_opts(model, opts, &be, &bc);
  if (st0) return st0;
  int64_t ctx = bc.ctx;

  mx_session_t *s = calloc(1, sizeof *s);
  if (!s) return mx_error_set(MX_ERR_NOMEM, "session: out of memory");
  s->model = model;
  s->backend = be;
  s->ctx = ctx;
  s->chunk = bc.prefill_chunk;
  s->vocab = cfg->vocab_size;
  s->logits = calloc((size_t)s->vocab, sizeof *s->logits);
  s->tokens = calloc((size_t)ctx, sizeof *s->tokens);
  const int32_t *sec = cfg->mrope_section;
  if (cfg->vision.present && sec[0] + sec[1] + sec[2] > 0) {  // M-RoPE (ADR 0013)
    s->rope_after = calloc((size_t)ctx, sizeof *s->rope_after);
    s->mpos = calloc((size_t)s->chunk * 3, sizeof *s->mpos);
    if (!s->rope_after || !s->mpos) {
      mx_session_destroy(s);
      return mx_error_set(MX_ERR_NOMEM, "session: out of memory for ctx %lld", (long long)ctx);
    }
  }
  if (!s->logits || !s->tokens) {
    mx_session_destroy(s);
    return mx_error_set(MX_ERR_NOMEM, "session: out of memory for ctx %lld, vocab %d",
                        (long long)ctx, cfg->vocab_size);
  }
  mx_status_t st = mx_session_vision_state(model, opts ? opts->vision_backend : NULL, be, &bc,
                                           &s->vbackend, &s->vstate);
  if (st) {
    mx_session_destroy(s);
    return st;
  }
  st = be->create(model, &bc, &s->state);
  if (st) {
    s->state = NULL;
    mx_session_destroy(s);
    return mx_error_prefix(st, "backend %s", be->name);
  }
  *out = s;
  return MX_OK;
}

void mx_session_destroy(mx_session_t *s) {
  if (!s) return;
  if (s->backend && s->state) s->backend->destroy(s->state);
  if (s->vbackend && s->vstate) s->vbackend->destroy(s->vstate);
  free(s->logits);
  free(s->tokens);
  free(s->rope_after);
  free(s->mpos);
  free(s);
}

// Checks that n more tokens fit and that every id is in [0, vocab).
static mx_status_t check_tokens(const mx_session_t *s, const int32_t *ids, int32_t n,
                                const char *what) {
  if (n < 0) return mx_error_set(MX_ERR_INVALID_ARG, "%s: negative token count %d", what, n);
  if (n > 0 && !ids) return mx_error_set(MX_ERR_INVALID_ARG, "%s: ids is NULL", what);
  if ((int64_t)n > s->ctx - s->n_past)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "%s of %d token%s does not fit: context capacity %lld, %lld tokens "
                        "already in the session",
                        what, n, n == 1 ? "" : "s", (long long)s->ctx, (long long)s->n_past);
  // Input ids may exceed the logits' width where the embedding has rows beyond it (Molmo2).
  int32_t nv = mx_config_input_vocab(&s->model->config);
  for (int32_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= nv)
      return mx_error_set(MX_ERR_INVALID_ARG, "%s: token id %d at index %d is out of range [0, %d)",
                          what, ids[i], i, nv);
  return MX_OK;
}

// Runs the n prompt tokens chunk by chunk (media: their media rows, else a text prefill) and
// appends them to the context.
static mx_status_t prefill_chunks(mx_session_t *s, const int32_t *ids, const float *media,
                                  int32_t n, float *all_logits) {
  const size_t H = (size_t)s->model->config.hidden_size;
  if (!media && mx_session_mrope_shifted(s)) {  // text after an M-RoPE image
    if (all_logits)
      return mx_error_set(MX_ERR_UNSUPPORTED,
                          "the logits of every position are not available after an image");
    return mx_session_mrope_text(s, ids, n);
  }
  // With media, a chunk never cuts an image's run of tokens (they attend to each other in
  // Gemma 3): it ends before the run; a prompt that cannot be cut so is refused before any work.
  const mx_model_config_t *mc = &s->model->config;
  bool prev_image = mx_vision_context_image(&mc->vision, s->tokens, s->n_past);
  for (int32_t off = 0, m; media && off < n; off += m) {
    mx_status_t st =
        mx_vision_prefill_take(mc, ids + off, n - off, s->chunk, off == 0 && prev_image, &m);
    if (st) return mx_error_prefix(st, "prefill at position %lld", (long long)(s->n_past + off));
  }
  for (int32_t off = 0, m; off < n; off += m) {
    mx_status_t st = MX_OK;
    if (media) {
      st = mx_vision_prefill_take(mc, ids + off, n - off, s->chunk, false, &m);
      if (st) return st;
    } else {
      m = n - off < s->chunk ? n - off : s->chunk;
    }
    float *all = all_logits ? all_logits + (size_t)off * (size_t)s->vocab : NULL;
    st = media ? s->backend->prefill_media(s->state, ids + off, media + (size_t)off * H, m,
                                           s->n_past, s->logits)
               : s->backend->prefill(s->state, ids + off, m, s->n_past, s->logits, all);
    if (st) {
      // The chunks before this one are in the KV state; this one may be partly written, but
      // only at positions >= n_past, which the next call rewrites before anything reads them.
      s->has_logits = false;
      return mx_error_prefix(st, "prefill of tokens %d..%d at position %lld", off, off + m - 1,
                             (long long)s->n_past);
    }
    memcpy(s->tokens + s->n_past, ids + off, (size_t)m * sizeof *ids);
    mx_session_mrope_note_text(s, s->n_past, s->n_past + m);
    s->n_past += m;
    s->has_logits = true;
  }
  return MX_OK;
}

mx_status_t mx_session_prefill(mx_session_t *s, const int32_t *ids, int32_t n, float *all_logits) {
  if (!s) return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_prefill: session is NULL");
  mx_status_t st = check_tokens(s, ids, n, "prompt");
  if (st) return st;
  if (all_logits && !(s->backend->caps & MX_CAP_PREFILL_ALL_LOGITS))
    return mx_error_set(MX_ERR_UNSUPPORTED, "backend %s cannot return the logits of every position",
                        s->backend->name);
  return prefill_chunks(s, ids, NULL, n, all_logits);
}

mx_status_t mx_session_check_vision_sizes(const mx_model_t *m, int64_t n_pixels,
                                          int64_t n_features) {
  const mx_vision_config_t *v = &m->config.vision;
  int64_t want_px = (int64_t)v->num_channels * v->image_size * v->image_size;
  int64_t want_f = (int64_t)v->tokens_per_image * m->config.hidden_size;
  if (n_pixels != want_px)
    return mx_error_set(
        MX_ERR_INVALID_ARG, "image: %lld pixel values, the vision tower takes %d x %d x %d = %lld",
        (long long)n_pixels, v->num_channels, v->image_size, v->image_size, (long long)want_px);
  if (n_features != want_f)
    return mx_error_set(MX_ERR_INVALID_ARG, "image: room for %lld feature values, need %lld",
                        (long long)n_features, (long long)want_f);
  return MX_OK;
}

static mx_status_t check_media(const mx_session_t *s, const char *what) {
  const mx_model_config_t *c = &s->model->config;
  if (!c->vision.present && c->audio.present) {  // Gemma 3n: the audio tokens take the rows
    if (!s->backend->audio || !s->backend->prefill_media)
      return mx_error_set(MX_ERR_UNSUPPORTED, "%s: backend %s does not run audio models", what,
                          s->backend->name);
    return MX_OK;
  }
  if (!s->model->config.vision.present)
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: model_type '%s' takes no images", what,
                        s->model->config.model_type);
  const mx_vision_config_t *v = &s->model->config.vision;
  if (v->kind == MX_VISION_MOLMO2) {  // its tower takes crops and pooling indices
    if (!s->backend->prefill_media || (!s->vbackend && !s->backend->vision_pooled))
      return mx_error_set(MX_ERR_UNSUPPORTED, "%s: backend %s does not run Molmo2 models", what,
                          s->backend->name);
    return MX_OK;
  }
  // The Qwen towers take a patch grid and M-RoPE positions: their own entry points.
  if (mx_vision_mrope(v))
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: model_type '%s' takes images of any size with M-RoPE positions "
                        "(mx_session_vision_grid, mx_session_prefill_mrope)",
                        what, s->model->config.model_type);
  // Youtu-VL: a patch grid's tower (mx_session_vision_grid), its rows at 1-D positions.
  bool grid = !mx_vision_fixed_size(v);
  if ((!s->vbackend && !(grid ? s->backend->vision_grid != NULL : s->backend->vision != NULL)) ||
      !s->backend->prefill_media)
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: backend %s does not run vision models", what,
                        s->backend->name);
  return MX_OK;
}

mx_status_t mx_session_check_pooled_sizes(const mx_model_t *model, int64_t n_pixels, int32_t crops,
                                          const int32_t *pooling, int32_t tokens, int32_t pool,
                                          int64_t n_features) {
  const mx_vision_config_t *v = &model->config.vision;
  if (v->kind != MX_VISION_MOLMO2)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "image: model_type '%s' has no Molmo2 tower (pooled image tokens)",
                        model->config.model_type);
  int64_t side = v->image_size / v->patch_size, N = side * side;
  int64_t K = (int64_t)v->patch_size * v->patch_size * v->num_channels;
  if (crops <= 0 || crops > 256 || tokens <= 0 || tokens > (1 << 16) || pool <= 0 || pool > 64)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "image: %d crops, %d pooled tokens of %d patches (1..256, 1..65536, "
                        "1..64)",
                        crops, tokens, pool);
  if (n_pixels != crops * N * K)
    return mx_error_set(
        MX_ERR_INVALID_ARG, "image: %lld pixel values, %d crops take %d x %lld x %lld = %lld",
        (long long)n_pixels, crops, crops, (long long)N, (long long)K, (long long)(crops * N * K));
  if (n_features != (int64_t)tokens * model->config.hidden_size)
    return mx_error_set(MX_ERR_INVALID_ARG, "image: room for %lld feature values, need %lld",
                        (long long)n_features, (long long)tokens * model->config.hidden_size);
  for (int64_t i = 0; i < (int64_t)tokens * pool; i++)
    if (pooling[i] < -1 || pooling[i] >= crops * N)
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "image: image_token_pooling[%lld] = %d is outside the %lld patches",
                          (long long)i, pooling[i], (long long)(crops * N));
  return MX_OK;
}

mx_status_t mx_session_vision_pooled(mx_session_t *s, const float *pixels, int64_t n_pixels,
                                     int32_t crops, const int32_t *pooling, int32_t tokens,
                                     int32_t pool, float *features, int64_t n_features) {
  if (!s || !pixels || !pooling || !features)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_vision_pooled: NULL argument");
  mx_status_t st =
      mx_session_check_pooled_sizes(s->model, n_pixels, crops, pooling, tokens, pool, n_features);
  if (!st) st = check_media(s, "image");
  if (st) return st;
  st = s->vbackend
           ? s->vbackend->vision_pooled(s->vstate, pixels, crops, pooling, tokens, pool, features)
           : s->backend->vision_pooled(s->state, pixels, crops, pooling, tokens, pool, features);
  return st ? mx_error_prefix(st, "vision tower") : MX_OK;
}

mx_status_t mx_session_vision(mx_session_t *s, const float *pixels, int64_t n_pixels,
                              float *features, int64_t n_features) {
  if (!s || !pixels || !features)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_vision: NULL argument");
  if (s->model->config.vision.kind == MX_VISION_MOLMO2)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "image: model_type '%s' takes crops and pooling indices "
                        "(mx_session_vision_pooled)",
                        s->model->config.model_type);
  if (!mx_vision_fixed_size(&s->model->config.vision))
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "image: model_type '%s' takes images of any size, per patch grid "
                        "(mx_session_vision_grid)",
                        s->model->config.model_type);
  mx_status_t st = check_media(s, "image");
  if (st) return st;
  st = mx_session_check_vision_sizes(s->model, n_pixels, n_features);
  if (st) return st;
  st = s->vbackend ? s->vbackend->vision(s->vstate, pixels, features)
                   : s->backend->vision(s->state, pixels, features);
  return st ? mx_error_prefix(st, "vision tower") : MX_OK;
}

mx_status_t mx_session_audio(mx_session_t *s, const float *features, const uint8_t *mask,
                             int64_t frames, float *rows, int64_t n_rows) {
  if (!s || !features || !mask || !rows)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_audio: NULL argument");
  const mx_model_config_t *c = &s->model->config;
  if (!c->audio.present)
    return mx_error_set(MX_ERR_UNSUPPORTED, "audio: model_type '%s' has no audio tower",
                        c->model_type);
  mx_status_t st = check_media(s, "audio");
  if (st) return st;
  const mx_audio_config_t *a = &c->audio;
  int64_t tokens = mx_audio_tokens(a, frames);
  if (frames < 1 || tokens > a->soft_tokens)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "audio: %lld log-mel frames give %lld audio tokens, more than the %d "
                        "(audio_soft_tokens_per_image) a prompt holds",
                        (long long)frames, (long long)tokens, a->soft_tokens);
  int64_t want = (int64_t)a->soft_tokens * c->hidden_size;
  if (n_rows != want)
    return mx_error_set(MX_ERR_INVALID_ARG, "audio: room for %lld row values, need %lld",
                        (long long)n_rows, (long long)want);
  int32_t *m = malloc(sizeof *m * (size_t)frames);
  if (!m) return mx_error_set(MX_ERR_NOMEM, "out of memory (audio mask)");
  for (int64_t i = 0; i < frames; i++) m[i] = mask[i] != 0;
  st = s->backend->audio(s->state, features, m, (int32_t)frames, rows);
  free(m);
  return st ? mx_error_prefix(st, "audio tower") : MX_OK;
}

mx_status_t mx_session_prefill_media(mx_session_t *s, const int32_t *ids, const float *media,
                                     int32_t n) {
  if (!s || !media)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_prefill_media: NULL argument");
  mx_status_t st = check_media(s, "prompt");
  if (!st) st = check_tokens(s, ids, n, "prompt");
  if (st) return st;
  return prefill_chunks(s, ids, media, n, NULL);
}

mx_status_t mx_session_decode(mx_session_t *s, int32_t id) {
  if (!s) return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_decode: session is NULL");
  mx_status_t st = check_tokens(s, &id, 1, "decode");
  if (st) return st;
  if (mx_session_mrope_shifted(s)) return mx_session_mrope_text(s, &id, 1);
  st = s->backend->decode(s->state, id, s->n_past, s->logits);
  if (st) {
    s->has_logits = false;
    return mx_error_prefix(st, "decode at position %lld", (long long)s->n_past);
  }
  mx_session_mrope_note_text(s, s->n_past, s->n_past + 1);
  s->tokens[s->n_past++] = id;
  s->has_logits = true;
  return MX_OK;
}

const float *mx_session_logits(const mx_session_t *s) {
  return s && s->has_logits ? s->logits : NULL;
}
int64_t mx_session_n_past(const mx_session_t *s) { return s ? s->n_past : 0; }
int64_t mx_session_ctx(const mx_session_t *s) { return s ? s->ctx : 0; }
int32_t mx_session_prefill_chunk(const mx_session_t *s) { return s ? s->chunk : 0; }
int32_t mx_session_vocab(const mx_session_t *s) { return s ? s->vocab : 0; }
const mx_backend_t *mx_session_backend(const mx_session_t *s) { return s ? s->backend : NULL; }
const mx_model_t *mx_session_model(const mx_session_t *s) { return s ? s->model : NULL; }

const int32_t *mx_session_tokens(const mx_session_t *s) { return s ? s->tokens : NULL; }

mx_status_t mx_session_rewind(mx_session_t *s, int64_t n) {
  if (!s) return mx_error_set(MX_ERR_INVALID_ARG, "mx_session_rewind: no session");
  if (n < 0 || n > s->n_past) {
    return mx_error_set(MX_ERR_INVALID_ARG, "rewind to %lld tokens: the context holds %lld",
                        (long long)n, (long long)s->n_past);
  }
  if (n == 0) {
    mx_session_reset(s);
    return MX_OK;
  }
  s->n_past = n;
  s->has_logits = false;
  return MX_OK;
}

void mx_session_reset(mx_session_t *s) {
  if (!s) return;
  s->backend->reset(s->state);
  s->n_past = 0;
  s->has_logits = false;
}
