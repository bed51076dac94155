// Batched decoding (batch.h): option resolution, the checks every call makes before any work,
// per-slot bookkeeping, and the mapping of slots to the backend's slots.
//
// Backends with batch operations (mx_backend_t.batch: cpu, interp) hold all slots in one
// state and advance any subset in one graph call. Their decode cost grows with the highest
// backend slot a call names, so a slot gets a backend slot only when its sequence starts (first
// prefill or decode after create / reset: nothing to move, the slot is empty) and always the
// lowest free one; a reset gives it back. Any other backend runs one state per slot, one call
// per slot (correct, not faster than sessions).
#include "mlxcel/batch.h"

#include <stdlib.h>
#include <string.h>

#include "session/session_internal.h"

struct mx_batch {
  const mx_model_t *model;  // borrowed; outlives the batch
  const mx_backend_t *backend;
  const mx_backend_batch_t *ops;  // NULL: one state per slot (states[])
  void *state;                    // ops' state
  void **states;                  // [n_slots] backend states (ops == NULL)
  const mx_backend_t *vbackend;   // vision_backend's, with its tower-only state (else NULL)
  void *vstate;
  int64_t ctx;
  int32_t chunk, vocab, n_slots;
  int32_t *phys;     // [n_slots] backend slot of each slot, -1 while it holds nothing
  bool *phys_used;   // [n_slots]
  int64_t *n_past;   // [n_slots]
  bool *has_logits;  // [n_slots]
  float *logits;     // [n_slots][vocab]
  bool *seen;        // [n_slots] decode scratch (distinct slots)
  int32_t *d_slots;  // [n_slots] decode scratch: backend slots
  int64_t *d_pos;    // [n_slots]
  int64_t *d_rope;   // [n_slots] decode scratch: RoPE positions (M-RoPE models)
  float *d_logits;   // [n_slots][vocab]
  // M-RoPE models (the Qwen towers, ADR 0013), NULL otherwise: per slot and cached token the
  // RoPE position after it (the session's rope_after: a prompt's images leave the text after
  // them behind the cache positions), a positions scratch for text calls of such a slot, and
  // the slots and ids of a decode step that run batched.
  int32_t *rope_after;       // [n_slots][ctx]
  int32_t *mpos;             // [3 * chunk]
  int32_t *r_slots, *r_ids;  // [n_slots]
};

void mx_batch_destroy(mx_batch_t *b) {
  if (!b) return;
  if (b->ops && b->state) b->ops->destroy(b->state);
  if (b->vbackend && b->vstate) b->vbackend->destroy(b->vstate);
  for (int32_t i = 0; b->states && i < b->n_slots; i++)
    if (b->states[i]) b->backend->destroy(b->states[i]);
  free(b->states);
  free(b->phys);
  free(b->phys_used);
  free(b->n_past);
  free(b->has_logits);
  free(b->logits);
  free(b->seen);
  free(b->d_slots);
  free(b->d_pos);
  free(b->d_rope);
  free(b->d_logits);
  free(b->rope_after);
  free(b->mpos);
  free(b->r_slots);
  free(b->r_ids);
  free(b);
}

mx_status_t mx_batch_create(const mx_model_t *model, const mx_batch_opts_t *opts,
                            mx_batch_t **out) {
  if (!out) return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_create: out is NULL");
  *out = NULL;
  if (!model) return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_create: model is NULL");
  if (!opts) return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_create: opts is NULL");
  if (opts->n_slots < 1 || opts->n_slots > MX_BATCH_MAX_SLOTS)
    return mx_error_set(MX_ERR_INVALID_ARG, "n_slots must be in 1..%d, got %d", MX_BATCH_MAX_SLOTS,
                        opts->n_slots);
  const mx_backend_t *be = NULL;
  mx_backend_config_t bc;
  mx_session_opts_t so = {.backend = opts->backend,
                          .ctx = opts->ctx,
                          .prefill_chunk = opts->prefill_chunk,
                          .backend_opts = opts->backend_opts};
  mx_status_t st = mx_session_resolve_opts(model, &so, &be, &bc);
  if (st) return st;
  int64_t ctx = bc.ctx;
  int32_t chunk = bc.prefill_chunk;
  mx_batch_t *b = calloc(1, sizeof *b);
  if (!b) return mx_error_set(MX_ERR_NOMEM, "batch: out of memory");
  b->model = model;
  b->backend = be;
  b->ops = mx_backend_batch_ops(be);
  b->ctx = ctx;
  b->chunk = chunk;
  b->vocab = model->config.vocab_size;
  b->n_slots = opts->n_slots;
  size_t n = (size_t)b->n_slots, nv = n * (size_t)b->vocab;
  b->phys = malloc(n * sizeof *b->phys);
  b->phys_used = calloc(n, sizeof *b->phys_used);
  b->n_past = calloc(n, sizeof *b->n_past);
  b->has_logits = calloc(n, sizeof *b->has_logits);
  b->logits = calloc(nv, sizeof *b->logits);
  b->seen = calloc(n, sizeof *b->seen);
  b->d_slots = calloc(n, sizeof *b->d_slots);
  b->d_pos = calloc(n, sizeof *b->d_pos);
  b->d_rope = calloc(n, sizeof *b->d_rope);
  b->d_logits = calloc(nv, sizeof *b->d_logits);
  if (!b->ops) b->states = calloc(n, sizeof *b->states);
  bool mrope = mx_vision_mrope(&model->config.vision);
  if (mrope) {
    b->rope_after = calloc(n * (size_t)ctx, sizeof *b->rope_after);
    b->mpos = calloc(3 * (size_t)chunk, sizeof *b->mpos);
    b->r_slots = calloc(n, sizeof *b->r_slots);
    b->r_ids = calloc(n, sizeof *b->r_ids);
  }
  if (!b->phys || !b->phys_used || !b->n_past || !b->has_logits || !b->logits || !b->seen ||
      !b->d_slots || !b->d_pos || !b->d_rope || !b->d_logits || (!b->ops && !b->states) ||
      (mrope && (!b->rope_after || !b->mpos || !b->r_slots || !b->r_ids))) {
    int32_t n_slots = b->n_slots, vocab = b->vocab;  // for the message, after b is freed
    mx_batch_destroy(b);
    return mx_error_set(MX_ERR_NOMEM, "batch: out of memory for %d slots, vocab %d", n_slots,
                        vocab);
  }
  for (int32_t i = 0; i < b->n_slots; i++) b->phys[i] = -1;
  if (b->ops) {
    st = b->ops->create(model, &bc, b->n_slots, &b->state);
    if (st) b->state = NULL;
  } else {
    for (int32_t i = 0; i < b->n_slots && !st; i++) {
      st = be->create(model, &bc, &b->states[i]);
      if (st) b->states[i] = NULL;
    }
  }
  if (st) {
    mx_batch_destroy(b);
    return mx_error_prefix(st, "backend %s, %d slots", be->name, opts->n_slots);
  }
  st = mx_session_vision_state(model, opts->vision_backend, be, &bc, &b->vbackend, &b->vstate);
  if (st) {
    mx_batch_destroy(b);
    return st;
  }
  *out = b;
  return MX_OK;
}

int32_t mx_batch_n_slots(const mx_batch_t *b) { return b ? b->n_slots : 0; }
int64_t mx_batch_ctx(const mx_batch_t *b) { return b ? b->ctx : 0; }
int32_t mx_batch_chunk(const mx_batch_t *b) { return b ? b->chunk : 0; }
int32_t mx_batch_vocab(const mx_batch_t *b) { return b ? b->vocab : 0; }
const mx_backend_t *mx_batch_backend(const mx_batch_t *b) { return b ? b->backend : NULL; }
const mx_model_t *mx_batch_model(const mx_batch_t *b) { return b ? b->model : NULL; }

static mx_status_t check_slot(const mx_batch_t *b, int32_t slot, const char *what) {
  if (slot < 0 || slot >= b->n_slots)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: slot %d out of range [0, %d)", what, slot,
                        b->n_slots);
  return MX_OK;
}

static mx_status_t check_id(const mx_batch_t *b, int32_t id, int32_t i, const char *what) {
  int32_t nv = mx_config_input_vocab(&b->model->config);  // Molmo2: beyond the logits
  if (id < 0 || id >= nv)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: token id %d at index %d is out of range [0, %d)",
                        what, id, i, nv);
  return MX_OK;
}

// The backend slot of `slot`, taking the lowest free one if it has none.
static int32_t backend_slot(mx_batch_t *b, int32_t slot) {
  if (!b->ops) return slot;
  if (b->phys[slot] < 0) {
    for (int32_t p = 0; p < b->n_slots; p++)
      if (!b->phys_used[p]) {
        b->phys_used[p] = true;
        b->phys[slot] = p;
        break;
      }
  }
  return b->phys[slot];  // always found: there are as many backend slots as slots
}

// The RoPE position after the slot's last token (its token count unless an image shifted it).
static int64_t rope_next(const mx_batch_t *b, int32_t slot) {
  int64_t n = b->n_past[slot];
  return n > 0 ? b->rope_after[(size_t)slot * (size_t)b->ctx + (size_t)(n - 1)] : 0;
}

// Records the RoPE position after each of the n tokens a call added from pos0: one more than
// the largest position so far (get_rope_index's max + 1; text runs on from it).
static void note_rope(mx_batch_t *b, int32_t slot, int64_t pos0, const int32_t *positions,
                      int32_t n) {
  int32_t *after = b->rope_after + (size_t)slot * (size_t)b->ctx;
  int64_t top = pos0 > 0 ? after[pos0 - 1] : 0;
  for (int32_t i = 0; i < n; i++) {
    for (int32_t r = 0; r < 3; r++) {
      int64_t p = positions[(size_t)r * (size_t)n + (size_t)i] + 1;
      if (p > top) top = p;
    }
    after[pos0 + i] = (int32_t)top;
  }
}

// A prefill chunk of one slot; media: its media rows (mx_batch_prefill_media /
// _prefill_mrope), else text; positions: its M-RoPE positions [3][n] (mx_batch_prefill_mrope),
// else, for an M-RoPE model whose slot an image shifted, its text's (three equal rows from
// rope_next) through the media entry, as a session runs them (ADR 0013).
// all: every position's logits [n][V] (mx_batch_prefill_all; text of an unshifted slot only).
static mx_status_t prefill(mx_batch_t *b, int32_t slot, const int32_t *ids, const float *media,
                           const int32_t *positions, int32_t n, float *all) {
  static const char what[] = "batch prefill";
  mx_status_t st = check_slot(b, slot, what);
  if (st) return st;
  if (!ids) return mx_error_set(MX_ERR_INVALID_ARG, "%s: ids is NULL", what);
  // More than a chunk only as an image's block with its rows, which runs whole
  // (mx_vision_prefill_take).
  const mx_vision_config_t *v = &b->model->config.vision;
  bool block = media && n > b->chunk && mx_vision_blocks(v) && mx_vision_block_token(v, ids[0]);
  if (n < 1 || (n > b->chunk && !block))
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: %d tokens, expected 1..%d (the prefill chunk)",
                        what, n, b->chunk);
  if ((int64_t)n > b->ctx - b->n_past[slot])
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "%s of %d token%s does not fit in slot %d: capacity %lld, %lld tokens "
                        "already in the slot",
                        what, n, n == 1 ? "" : "s", slot, (long long)b->ctx,
                        (long long)b->n_past[slot]);
  for (int32_t i = 0; i < n; i++)
    if ((st = check_id(b, ids[i], i, what))) return st;
  float *logits = b->logits + (size_t)slot * (size_t)b->vocab;
  int64_t pos0 = b->n_past[slot];
  // Text after an M-RoPE image runs through the media entry, which has no all-logits form.
  if (all && b->rope_after && rope_next(b, slot) != pos0)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "%s: the logits of every position are not available after an M-RoPE "
                        "image (slot %d)",
                        what, slot);
  if (b->rope_after && !positions && rope_next(b, slot) != pos0) {
    for (int32_t i = 0; i < n; i++)
      for (int32_t r = 0; r < 3; r++) b->mpos[r * n + i] = (int32_t)(rope_next(b, slot) + i);
    positions = b->mpos;
  }
  if (all && b->ops) {
    st = b->ops->prefill_all(b->state, backend_slot(b, slot), ids, n, pos0, logits, all);
  } else if (all) {
    st = b->backend->prefill(b->states[slot], ids, n, pos0, logits, all);
  } else if (positions && b->ops) {
    st = b->ops->prefill_mrope(b->state, backend_slot(b, slot), ids, media, positions, n, pos0,
                               logits);
  } else if (positions) {
    st = b->backend->prefill_mrope(b->states[slot], ids, media, positions, n, pos0, logits);
  } else if (b->ops && media) {
    st = b->ops->prefill_media(b->state, backend_slot(b, slot), ids, media, n, pos0, logits);
  } else if (b->ops) {
    st = b->ops->prefill(b->state, backend_slot(b, slot), ids, n, pos0, logits);
  } else if (media) {
    st = b->backend->prefill_media(b->states[slot], ids, media, n, pos0, logits);
  } else {
    st = b->backend->prefill(b->states[slot], ids, n, pos0, logits, NULL);
  }
  if (st) {
    // Rows at positions >= n_past may be partly written; the next call rewrites them first.
    b->has_logits[slot] = false;
    return mx_error_prefix(st, "%s of %d tokens into slot %d at position %lld", what, n, slot,
                           (long long)b->n_past[slot]);
  }
  if (b->rope_after && positions) {
    note_rope(b, slot, pos0, positions, n);
  } else if (b->rope_after) {  // unshifted text: positions are the cache positions
    for (int32_t i = 0; i < n; i++)
      b->rope_after[(size_t)slot * (size_t)b->ctx + (size_t)(pos0 + i)] = (int32_t)(pos0 + i + 1);
  }
  b->n_past[slot] += n;
  b->has_logits[slot] = true;
  return MX_OK;
}

mx_status_t mx_batch_prefill(mx_batch_t *b, int32_t slot, const int32_t *ids, int32_t n) {
  if (!b) return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_prefill: batch is NULL");
  return prefill(b, slot, ids, NULL, NULL, n, NULL);
}

mx_status_t mx_batch_prefill_all(mx_batch_t *b, int32_t slot, const int32_t *ids, int32_t n,
                                 float *all_logits) {
  if (!b || !all_logits)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_prefill_all: %s is NULL",
                        !b ? "batch" : "all_logits");
  mx_status_t st = mx_batch_check_all_logits(b);
  return st ? st : prefill(b, slot, ids, NULL, NULL, n, all_logits);
}

mx_status_t mx_batch_check_all_logits(const mx_batch_t *b) {
  if (!b) return mx_error_set(MX_ERR_INVALID_ARG, "batch is NULL");
  bool ok =
      b->ops ? b->ops->prefill_all != NULL : (b->backend->caps & MX_CAP_PREFILL_ALL_LOGITS) != 0;
  if (!ok)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "backend %s cannot return the logits of every position of a batch slot",
                        b->backend->name);
  return MX_OK;
}

// What a media call of the batch needs: the fixed-size towers' @vision, the Qwen towers' and
// Youtu-VL's per grid, M-RoPE positions (the Qwen towers), Molmo2's pooled @vision,
// @prefill_media (fixed-size, Molmo2, Youtu-VL or Gemma 3n's audio rows), or Gemma 3n's @audio.
typedef enum {
  NEED_VISION,
  NEED_GRID,
  NEED_MROPE,
  NEED_POOLED,
  NEED_PREFILL,
  NEED_AUDIO
} media_need_t;

// A vision model on a backend whose batch (or per-slot states) runs the entries `need` takes.
static mx_status_t check_media(const mx_batch_t *b, const char *what, media_need_t need) {
  const mx_model_config_t *c = &b->model->config;
  // Gemma 3n: @audio, and its rows at the audio tokens.
  if (!c->vision.present && c->audio.present && (need == NEED_AUDIO || need == NEED_PREFILL)) {
    bool ok = b->ops ? b->ops->audio && b->ops->prefill_media
                     : b->backend->audio && b->backend->prefill_media;
    return ok ? MX_OK
              : mx_error_set(MX_ERR_UNSUPPORTED, "%s: backend %s does not run audio models", what,
                             b->backend->name);
  }
  if (!c->vision.present)
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: model_type '%s' takes no images", what,
                        c->model_type);
  bool molmo = c->vision.kind == MX_VISION_MOLMO2, fixed = mx_vision_fixed_size(&c->vision);
  bool mrope = mx_vision_mrope(&c->vision);
  bool fits = need == NEED_GRID     ? !fixed && !molmo
              : need == NEED_MROPE  ? mrope
              : need == NEED_POOLED ? molmo
              : need == NEED_VISION ? fixed
                                    : !mrope;
  if (!fits)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: model_type '%s' takes images %s (mx_batch_%s)",
                        what, c->model_type,
                        molmo   ? "as crops with pooling indices"
                        : fixed ? "of one size"
                        : mrope ? "per patch grid with M-RoPE positions"
                                : "per patch grid at 1-D positions",
                        molmo   ? "vision_pooled / _prefill_media"
                        : fixed ? "vision / _prefill_media"
                        : mrope ? "vision_grid / _prefill_mrope"
                                : "vision_grid / _prefill_media");
  const mx_backend_batch_t *o = b->ops;
  const mx_backend_t *be = b->backend;
  // A grid tower is only useful with its prompt entry: M-RoPE or plain media rows.
  bool prompt_ok = mrope ? (o ? o->prefill_mrope != NULL : be->prefill_mrope != NULL)
                         : (o ? o->prefill_media != NULL : be->prefill_media != NULL);
  bool ok =
      need == NEED_GRID
          ? (b->vbackend || (o ? o->vision_grid != NULL : be->vision_grid != NULL)) && prompt_ok
      : need == NEED_MROPE ? prompt_ok
      : need == NEED_POOLED
          ? b->vbackend || (o ? o->vision_pooled != NULL : be->vision_pooled != NULL)
      : need == NEED_VISION ? b->vbackend || (o ? o->vision != NULL : be->vision != NULL)
      : o                   ? o->prefill_media != NULL
                            : be->prefill_media != NULL;
  if (!ok)
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: backend %s does not run %s models", what, be->name,
                        need == NEED_GRID || need == NEED_MROPE ? c->model_type
                        : need == NEED_POOLED                   ? "Molmo2"
                                                                : "vision");
  return MX_OK;
}

mx_status_t mx_batch_vision(mx_batch_t *b, const float *pixels, int64_t n_pixels, float *features,
                            int64_t n_features) {
  if (!b || !pixels || !features)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_vision: NULL argument");
  mx_status_t st = check_media(b, "image", NEED_VISION);
  if (!st) st = mx_session_check_vision_sizes(b->model, n_pixels, n_features);
  if (st) return st;
  // Without batch operations the tower runs on slot 0's state: it touches no KV state.
  st = b->vbackend ? b->vbackend->vision(b->vstate, pixels, features)
       : b->ops    ? b->ops->vision(b->state, pixels, features)
                   : b->backend->vision(b->states[0], pixels, features);
  return st ? mx_error_prefix(st, "vision tower") : MX_OK;
}

mx_status_t mx_batch_audio(mx_batch_t *b, const float *features, const uint8_t *mask,
                           int64_t frames, float *rows, int64_t n_rows) {
  if (!b || !features || !mask || !rows)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_audio: NULL argument");
  const mx_model_config_t *c = &b->model->config;
  if (!c->audio.present)
    return mx_error_set(MX_ERR_UNSUPPORTED, "audio: model_type '%s' has no audio tower",
                        c->model_type);
  mx_status_t st = check_media(b, "audio", NEED_AUDIO);
  if (st) return st;
  const mx_audio_config_t *a = &c->audio;
  if (frames < 1 || mx_audio_tokens(a, frames) > a->soft_tokens)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "audio: %lld log-mel frames give more than the %d audio tokens "
                        "(audio_soft_tokens_per_image) a prompt holds",
                        (long long)frames, a->soft_tokens);
  if (n_rows != (int64_t)a->soft_tokens * c->hidden_size)
    return mx_error_set(MX_ERR_INVALID_ARG, "audio: room for %lld row values, need %lld",
                        (long long)n_rows, (long long)a->soft_tokens * c->hidden_size);
  int32_t *m = malloc(sizeof *m * (size_t)frames);
  if (!m) return mx_error_set(MX_ERR_NOMEM, "out of memory (audio mask)");
  for (int64_t i = 0; i < frames; i++) m[i] = mask[i] != 0;
  // Without batch operations the tower runs on slot 0's state: it touches no KV state.
  st = b->ops ? b->ops->audio(b->state, features, m, (int32_t)frames, rows)
              : b->backend->audio(b->states[0], features, m, (int32_t)frames, rows);
  free(m);
  return st ? mx_error_prefix(st, "audio tower") : MX_OK;
}

mx_status_t mx_batch_prefill_media(mx_batch_t *b, int32_t slot, const int32_t *ids,
                                   const float *media, int32_t n) {
  if (!b || !media)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_prefill_media: NULL argument");
  mx_status_t st = check_media(b, "batch prefill", NEED_PREFILL);
  int32_t take = n;
  if (!st && ids && n > 0) st = mx_vision_prefill_take(&b->model->config, ids, n, n, false, &take);
  if (!st && take < n)
    st = mx_error_set(MX_ERR_INVALID_ARG,
                      "batch prefill: %d tokens would cut a run of image tokens (the call can "
                      "take %d: mx_vision_prefill_take)",
                      n, take);
  if (st) return st;
  return prefill(b, slot, ids, media, NULL, n, NULL);
}

mx_status_t mx_batch_vision_pooled(mx_batch_t *b, const float *pixels, int64_t n_pixels,
                                   int32_t crops, const int32_t *pooling, int32_t tokens,
                                   int32_t pool, float *features, int64_t n_features) {
  if (!b || !pixels || !pooling || !features)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_vision_pooled: NULL argument");
  mx_status_t st = check_media(b, "image", NEED_POOLED);
  if (!st)
    st =
        mx_session_check_pooled_sizes(b->model, n_pixels, crops, pooling, tokens, pool, n_features);
  if (st) return st;
  // Without batch operations the tower runs on slot 0's state: it touches no KV state.
  st = b->vbackend
           ? b->vbackend->vision_pooled(b->vstate, pixels, crops, pooling, tokens, pool, features)
       : b->ops ? b->ops->vision_pooled(b->state, pixels, crops, pooling, tokens, pool, features)
                : b->backend->vision_pooled(b->states[0], pixels, crops, pooling, tokens, pool,
                                            features);
  return st ? mx_error_prefix(st, "vision tower") : MX_OK;
}

mx_status_t mx_batch_vision_grid(mx_batch_t *b, const float *pixels, int64_t n_pixels,
                                 int32_t grid_h, int32_t grid_w, float *features,
                                 int64_t n_features) {
  if (!b || !pixels || !features)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_vision_grid: NULL argument");
  mx_status_t st = check_media(b, "image", NEED_GRID);
  if (!st) st = mx_session_check_grid_sizes(b->model, n_pixels, grid_h, grid_w, n_features);
  if (st) return st;
  st = b->vbackend ? b->vbackend->vision_grid(b->vstate, pixels, grid_h, grid_w, features)
       : b->ops    ? b->ops->vision_grid(b->state, pixels, grid_h, grid_w, features)
                   : b->backend->vision_grid(b->states[0], pixels, grid_h, grid_w, features);
  return st ? mx_error_prefix(st, "vision tower") : MX_OK;
}

mx_status_t mx_batch_prefill_mrope(mx_batch_t *b, int32_t slot, const int32_t *ids,
                                   const float *media, const int32_t *positions, int32_t n) {
  if (!b || !media || !positions)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_prefill_mrope: NULL argument");
  mx_status_t st = check_media(b, "batch prefill", NEED_MROPE);
  for (int32_t i = 0; !st && i < 3 * n; i++)
    if (positions[i] < 0)
      st = mx_error_set(MX_ERR_INVALID_ARG, "batch prefill: negative M-RoPE position at index %d",
                        i % (n > 0 ? n : 1));
  return st ? st : prefill(b, slot, ids, media, positions, n, NULL);
}

int64_t mx_batch_rope_next(const mx_batch_t *b, int32_t slot) {
  if (!b || slot < 0 || slot >= b->n_slots) return 0;
  return b->rope_after ? rope_next(b, slot) : b->n_past[slot];
}

mx_status_t mx_batch_decode(mx_batch_t *b, const int32_t *slots, const int32_t *ids, int32_t n) {
  static const char what[] = "batch decode";
  if (!b) return mx_error_set(MX_ERR_INVALID_ARG, "mx_batch_decode: batch is NULL");
  if (n < 1 || n > b->n_slots)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: %d slots, expected 1..%d", what, n, b->n_slots);
  if (!slots || !ids)
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: %s is NULL", what, !slots ? "slots" : "ids");
  memset(b->seen, 0, (size_t)b->n_slots * sizeof *b->seen);
  mx_status_t st = MX_OK;
  for (int32_t i = 0; i < n; i++) {
    int32_t s = slots[i];
    if ((st = check_slot(b, s, what))) return st;
    if (b->seen[s])
      return mx_error_set(MX_ERR_INVALID_ARG, "%s: slot %d is named twice (index %d)", what, s, i);
    b->seen[s] = true;
    if (b->n_past[s] >= b->ctx)
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "%s: slot %d is full: capacity %lld, %lld tokens already in the slot",
                          what, s, (long long)b->ctx, (long long)b->n_past[s]);
    if ((st = check_id(b, ids[i], i, what))) return st;
  }
  // Without batch operations (one state per slot), slots an image shifted decode through
  // their own T = 1 @prefill_media call at rope_next, as a session does (ADR 0013); the batch
  // operations take every slot's RoPE position and run them all in one call.
  if (b->rope_after && !b->ops) {
    int32_t k = 0;
    for (int32_t i = 0; i < n && !st; i++) {
      if (rope_next(b, slots[i]) != b->n_past[slots[i]]) {
        st = prefill(b, slots[i], ids + i, NULL, NULL, 1, NULL);
      } else {
        b->r_slots[k] = slots[i];
        b->r_ids[k++] = ids[i];
      }
    }
    if (st) {
      for (int32_t i = 0; i < n; i++) b->has_logits[slots[i]] = false;
      return mx_error_prefix(st, "%s of %d slots", what, n);
    }
    if (k == 0) return MX_OK;
    slots = b->r_slots;
    ids = b->r_ids;
    n = k;
  }
  const size_t V = (size_t)b->vocab;
  if (b->ops) {
    for (int32_t i = 0; i < n; i++) {
      b->d_slots[i] = backend_slot(b, slots[i]);
      b->d_pos[i] = b->n_past[slots[i]];
      if (b->rope_after) b->d_rope[i] = rope_next(b, slots[i]);
    }
    st = b->ops->decode(b->state, b->d_slots, ids, b->d_pos, b->rope_after ? b->d_rope : NULL, n,
                        b->d_logits);
    if (!st)
      for (int32_t i = 0; i < n; i++)
        memcpy(b->logits + (size_t)slots[i] * V, b->d_logits + (size_t)i * V, V * sizeof(float));
  } else {
    for (int32_t i = 0; i < n && !st; i++) {
      int32_t s = slots[i];
      st = b->backend->decode(b->states[s], ids[i], b->n_past[s], b->logits + (size_t)s * V);
    }
  }
  if (st) {
    for (int32_t i = 0; i < n; i++) b->has_logits[slots[i]] = false;
    return mx_error_prefix(st, "%s of %d slots", what, n);
  }
  for (int32_t i = 0; i < n; i++) {
    int32_t s = slots[i];
    if (b->rope_after)  // the text runs on from the slot's RoPE position (its shift kept)
      b->rope_after[(size_t)s * (size_t)b->ctx + (size_t)b->n_past[s]] =
          (int32_t)(rope_next(b, s) + 1);
    b->n_past[s]++;
    b->has_logits[s] = true;
  }
  return MX_OK;
}

const float *mx_batch_logits(const mx_batch_t *b, int32_t slot) {
  if (!b || slot < 0 || slot >= b->n_slots || !b->has_logits[slot]) return NULL;
  return b->logits + (size_t)slot * (size_t)b->vocab;
}

int64_t mx_batch_n_past(const mx_batch_t *b, int32_t slot) {
  return b && slot >= 0 && slot < b->n_slots ? b->n_past[slot] : 0;
}

void mx_batch_reset(mx_batch_t *b, int32_t slot) {
  if (!b || slot < 0 || slot >= b->n_slots) return;
  if (b->ops) {
    if (b->phys[slot] >= 0) {
      b->ops->reset(b->state, b->phys[slot]);
      b->phys_used[b->phys[slot]] = false;
      b->phys[slot] = -1;
    }
  } else {
    b->backend->reset(b->states[slot]);
  }
  b->n_past[slot] = 0;
  b->has_logits[slot] = false;
}

mx_status_t mx_batch_rewind(mx_batch_t *b, int32_t slot, int64_t n) {
  static const char what[] = "batch rewind";
  if (!b) return mx_error_set(MX_ERR_INVALID_ARG, "%s: batch is NULL", what);
  mx_status_t st = check_slot(b, slot, what);
  if (st) return st;
  if (n < 0 || n > b->n_past[slot])
    return mx_error_set(MX_ERR_INVALID_ARG, "%s of slot %d to %lld tokens: the slot holds %lld",
                        what, slot, (long long)n, (long long)b->n_past[slot]);
  if (n == 0) {
    mx_batch_reset(b, slot);
    return MX_OK;
  }
  // Every call takes its positions from n_past, and the rows past n are rewritten before any
  // query reads them, so the backend only moves what it keeps per slot.
  if (b->ops && b->ops->rewind && b->phys[slot] >= 0) b->ops->rewind(b->state, b->phys[slot], n);
  b->n_past[slot] = n;
  b->has_logits[slot] = false;
  return MX_OK;
}

const void *mx_batch_backend_state(const struct mx_batch *b, const mx_backend_t **be) {
  *be = b && b->ops ? b->backend : NULL;
  return b && b->ops ? b->state : NULL;
}
