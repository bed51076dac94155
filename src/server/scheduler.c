// The continuous-batching scheduler (scheduler.h).
//
// Locking: one mutex (s->mu) guards the queue, the slot table, every job's shared fields (refs,
// cancelled, done, out, state) and the statistics. The scheduler thread takes it briefly at the
// start of a turn (cancellations, admissions) and once after each prefill chunk and decode
// step (publishing text); graph calls, sampling and detokenization run unlocked on data only
// the scheduler thread touches (the job's ids, sampler, text stream, slot and counters).
#include "server/scheduler.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlxcel/batch.h"
#include "server/prefix_cache.h"

enum { JOB_QUEUED = 0, JOB_PREFILL, JOB_DECODE, JOB_DONE };

struct mx_server_job {
  // Fixed at create time.
  int32_t *ids;  // [n_prompt + max_tokens]: the prompt, then the generated ids (penalties)
  int32_t n_prompt, max_tokens;
  bool ignore_eos;
  mx_sampler_t *smp;
  mx_text_stream_t *ts;
  mx_grammar_t *grammar;  // owned (mx_server_job_opts_t.grammar)
  mx_gmatch_t *gm;        // constrained decoding, or NULL
  uint32_t *allow;        // [(vocab + 31) / 32] the mask of the step
  const char *gm_error;   // set when no token can continue the document (static text)
  float *pixels;          // owned (mx_server_job_opts_t.pixels); freed once the tower ran
  int32_t *grids;         // owned (mx_server_job_opts_t.grids): the Qwen towers' patch grids
  int32_t n_images;
  mx_server_audio_t audio;  // owned (mx_server_job_opts_t.audio); freed once the tower ran
  // [n_prompt][mx_vision_feature_width] the images' features (or the recordings' rows) at their
  // tokens (with images or audio)
  float *media;
  // The Qwen towers (with grids): the prompt's M-RoPE positions [3][n_prompt] from position 0
  // (a prefix kept from the cache is text before any image, whose positions are its indices),
  // and one prefill call's rows of them [3][chunk].
  int32_t *positions, *cpos;
  // Prompt ids before the first image token (n_prompt without images): only these identify the
  // KV they leave in the slot, so only these are reused or kept for reuse.
  int32_t n_text_prefix;
  // Scheduler thread only.
  int32_t slot;         // -1 while queued
  int32_t n_prefilled;  // prompt ids already in the slot
  int32_t n_gen;        // ids sampled so far (not counting an EOS)
  int32_t next_id;      // JOB_DECODE: the id the next decode step feeds
  uint64_t admit_seq;   // admission order (oldest prefill first)
  const char *text;     // text released by this step (points into ts), published under mu
  size_t text_len;
  mx_batch_spec_t *spec;  // speculative decoding (ADR 0024), or NULL
  int32_t spec_m;         // drafts of the step being run
  // Under s->mu.
  int state;
  int refs;
  bool cancelled;
  mx_server_job_state_t pub;  // published state
  mx_strbuf_t out;            // text not yet taken by the HTTP thread
  pthread_cond_t cv;          // signalled when out or pub changes
  mx_server_job_t *next;      // queue link
};

struct mx_server_sched {
  const mx_model_t *model;
  mx_batch_t *batch;
  mx_batch_drafter_t *drafter;  // the draft model's batch (opts.draft_model), or NULL
  int32_t n_slots, vocab;
  int64_t ctx;
  int32_t chunk;
  int32_t max_queue;
  // What each free slot still holds for the next job (mx_server_sched_opts_t.prefix_cache).
  bool prefix_cache;
  mx_prefix_cache_t pc;
  bool *busy;  // [n_slots] scratch of an admission
  pthread_t thread;
  bool thread_started;
  pthread_mutex_t mu;
  pthread_cond_t work_cv;  // new job, cancellation or stop
  pthread_cond_t idle_cv;  // a job finished (for drain)
  bool stopping, draining;
  bool paused;            // mx_server_sched_pause: no turn starts...
  int32_t turns_allowed;  // ...except this many more (mx_server_sched_allow_turns)
  mx_server_job_t *q_head, *q_tail;
  int32_t n_queued;
  mx_server_job_t **slots;  // [n_slots] NULL = free
  int32_t n_active;
  uint64_t admit_counter;
  mx_server_sched_stats_t stats;
  // Scheduler-thread scratch for a decode step, sized at create time.
  int32_t *step_slots, *step_ids;
  mx_server_job_t **step_jobs;
  // ... and for its drafts (mx_batch_spec_draft_many's arguments).
  mx_batch_spec_t **d_sps;
  const int32_t **d_hist;
  int32_t *d_slots, *d_ns, *d_limits, *d_ms;
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void job_free(mx_server_job_t *job) {
  if (!job) return;
  free(job->ids);
  mx_sampler_destroy(job->smp);
  mx_text_stream_destroy(job->ts);
  mx_gmatch_destroy(job->gm);
  mx_grammar_destroy(job->grammar);
  free(job->allow);
  free(job->pixels);
  free(job->grids);
  free(job->audio.features);
  free(job->audio.mask);
  free(job->audio.frames);
  free(job->media);
  free(job->positions);
  free(job->cpos);
  mx_batch_spec_destroy(job->spec);
  mx_strbuf_free(&job->out);
  pthread_cond_destroy(&job->cv);
  free(job);
}

// Drops one reference (under s->mu).
static void job_unref(mx_server_job_t *job) {
  if (--job->refs == 0) job_free(job);
}

static bool is_eos(const mx_model_config_t *cfg, int32_t id) {
  for (int32_t i = 0; i < cfg->n_eos && i < MX_MAX_EOS_IDS; i++)
    if (cfg->eos_token_ids[i] == id) return true;
  return false;
}

// ---- Scheduler thread ----

// What a job leaves in its slot for the next one: the ids whose KV the slot holds (the prompt
// and the generated tokens fed back, up to the first image), unless the job failed or was
// cancelled (its slot was reset) or the cache is off.
static void keep_slot_tokens(mx_server_sched_t *s, const mx_server_job_t *job) {
  if (!s->prefix_cache) return;
  int64_t n = mx_batch_n_past(s->batch, job->slot);
  if (job->pub.failed || job->cancelled) n = 0;
  if (job->n_text_prefix < job->n_prompt && n > job->n_text_prefix) n = job->n_text_prefix;
  mx_prefix_cache_store(&s->pc, job->slot, job->ids, n);
}

// Ends a job (under s->mu): publishes the end, frees its slot, drops the scheduler's reference.
static void finish_locked(mx_server_sched_t *s, mx_server_job_t *job, mx_finish_reason_t why) {
  job->state = JOB_DONE;
  job->pub.done = true;
  job->pub.finish = why;
  if (job->slot >= 0) {
    s->slots[job->slot] = NULL;
    s->n_active--;
    keep_slot_tokens(s, job);
  }
  if (job->cancelled) {
    s->stats.jobs_cancelled++;
  } else if (job->pub.failed) {
    s->stats.jobs_failed++;
  } else {
    s->stats.jobs_done++;
  }
  pthread_cond_broadcast(&job->cv);
  pthread_cond_broadcast(&s->idle_cv);
  job_unref(job);
}

// The text side of a produced id: EOS ends the job, else it is stored and streamed and the
// stop rules decide. n_fed: the tokens the slot would hold in plain decoding (those before id).
static int emit_token(mx_server_sched_t *s, mx_server_job_t *job, int32_t id, int64_t n_fed) {
  int32_t n_hist = job->n_prompt + job->n_gen;
  if ((job->gm || !job->ignore_eos) && is_eos(&s->model->config, id)) {
    job->text = mx_text_stream_finish(job->ts, &job->text_len);
    return MX_FINISH_EOS;
  }
  job->ids[n_hist] = id;
  job->n_gen++;
  int reason = -1;
  if (job->n_gen >= job->max_tokens) {
    reason = MX_FINISH_LENGTH;
  } else if (n_fed >= s->ctx) {
    reason = MX_FINISH_CONTEXT;
  }
  // A finished document ends the job: nothing but EOS could follow it.
  if (job->gm && mx_gmatch_finished(job->gm)) reason = MX_FINISH_EOS;
  bool stopped = false;
  job->text = mx_text_stream_push(job->ts, id, reason >= 0, &job->text_len, &stopped);
  if (stopped) reason = MX_FINISH_STOP;
  if (reason < 0) job->next_id = id;
  return reason;
}

// Samples the job's next id from its slot's logits and runs the text side. Sets job->text and
// returns the finish reason, or -1 when the job goes on (job->next_id is then the id to feed).
static int take_token(mx_server_sched_t *s, mx_server_job_t *job) {
  const float *logits = mx_batch_logits(s->batch, job->slot);
  int32_t n_hist = job->n_prompt + job->n_gen;
  job->text = "";
  job->text_len = 0;
  int32_t id;
  if (job->gm) {
    const mx_model_config_t *cfg = &s->model->config;
    int32_t n_end = cfg->n_eos < MX_MAX_EOS_IDS ? cfg->n_eos : MX_MAX_EOS_IDS;
    if (mx_gmatch_mask(job->gm, cfg->eos_token_ids, n_end, job->allow) == 0) {
      job->gm_error = "constrained decoding: no token of the vocabulary can continue the document";
      return MX_FINISH_LENGTH;
    }
    id = mx_sampler_sample_masked(job->smp, logits, job->allow, job->ids, n_hist);
    if (!(job->allow[id >> 5] >> (id & 31) & 1u)) {  // every allowed logit was NaN or -inf
      id = 0;
      while (!(job->allow[id >> 5] >> (id & 31) & 1u)) id++;
    }
    if (!is_eos(cfg, id)) mx_gmatch_feed_token(job->gm, id);  // allowed, so accepted
  } else {
    id = mx_sampler_sample(job->smp, logits, job->ids, n_hist);
  }
  return emit_token(s, job, id, mx_batch_n_past(s->batch, job->slot));
}

// Publishes a job's step (under s->mu): its new text, counts, and its end when reason >= 0.
static void publish_locked(mx_server_sched_t *s, mx_server_job_t *job, int reason) {
  if (job->text_len > 0) mx_strbuf_append(&job->out, job->text, job->text_len);
  job->pub.n_generated = job->n_gen;
  if (job->gm_error) {
    job->pub.failed = true;
    snprintf(job->pub.error, sizeof job->pub.error, "%s", job->gm_error);
  }
  if (reason >= 0) {
    s->stats.generated_tokens += (uint64_t)job->n_gen;
    finish_locked(s, job, (mx_finish_reason_t)reason);
  } else {
    job->state = JOB_DECODE;
    pthread_cond_broadcast(&job->cv);
  }
}

static void fail_locked(mx_server_sched_t *s, mx_server_job_t *job, const char *what) {
  job->pub.failed = true;
  snprintf(job->pub.error, sizeof job->pub.error, "%s: %s", what, mx_error_message());
  finish_locked(s, job, MX_FINISH_LENGTH);
}

// Gives a queued job a free slot (under s->mu): the one whose tokens share the longest prefix
// with its prompt, which it keeps (at least one prompt token is left to prefill, for the
// logits of the first generated token); without the prefix cache, the lowest free slot, reset.
static void admit_locked(mx_server_sched_t *s, mx_server_job_t *job) {
  int32_t slot = 0;
  int64_t shared = 0;
  if (s->prefix_cache) {
    for (int32_t i = 0; i < s->n_slots; i++) s->busy[i] = s->slots[i] != NULL;
    int64_t limit = job->n_text_prefix < job->n_prompt ? job->n_text_prefix : job->n_prompt - 1;
    slot = mx_prefix_cache_pick(&s->pc, s->busy, job->ids, limit, &shared);
    // Shorter than what the slot holds: n_past is the length its job stored, and only then
    // can a rewind fail; resetting is always right.
    if (shared > 0 && mx_batch_rewind(s->batch, slot, shared) != MX_OK) shared = 0;
    mx_prefix_cache_truncate(&s->pc, slot, shared);
  } else {
    while (s->slots[slot]) slot++;
  }
  if (shared == 0) mx_batch_reset(s->batch, slot);
  job->slot = slot;
  job->n_prefilled = (int32_t)shared;
  job->pub.n_cached = (int32_t)shared;
  s->stats.cached_tokens += (uint64_t)shared;
  job->state = JOB_PREFILL;
  job->admit_seq = s->admit_counter++;
  s->slots[slot] = job;
  s->n_active++;
}

// Start of a turn (under s->mu): cancelled jobs leave, queued jobs take free slots. Returns
// false when the thread should exit.
static bool housekeeping_locked(mx_server_sched_t *s) {
  for (;;) {
    // Cancelled jobs leave the queue (their clients are gone).
    mx_server_job_t **link = &s->q_head, *prev = NULL;
    while (*link) {
      mx_server_job_t *job = *link;
      if (job->cancelled) {
        *link = job->next;
        if (s->q_tail == job) s->q_tail = prev;
        s->n_queued--;
        job->next = NULL;
        finish_locked(s, job, MX_FINISH_CALLBACK);
      } else {
        prev = job;
        link = &job->next;
      }
    }
    for (int32_t i = 0; i < s->n_slots; i++) {
      mx_server_job_t *job = s->slots[i];
      if (job && job->cancelled) {
        mx_batch_reset(s->batch, i);
        finish_locked(s, job, MX_FINISH_CALLBACK);
      }
    }
    bool hold = s->paused && s->turns_allowed == 0;
    while (s->n_active < s->n_slots && s->q_head && !hold) {
      mx_server_job_t *job = s->q_head;
      s->q_head = job->next;
      if (!s->q_head) s->q_tail = NULL;
      s->n_queued--;
      job->next = NULL;
      admit_locked(s, job);
    }
    if (s->n_active > 0 && !hold) {
      if (s->paused) s->turns_allowed--;
      return true;
    }
    if (s->stopping) return false;
    pthread_cond_wait(&s->work_cv, &s->mu);
  }
}

// The vision tower on each of the job's images, its features placed at the image's run of
// tokens (the i-th run for the i-th image), before the job's first prefill chunk. The Qwen
// towers: one @vision per image's patch grid, its rows in the pixels one after the other.
// Molmo2 (ADR 0023): each image's crops through its pooled @vision, feature j of image i at the
// prompt's j-th <im_patch> of that image (its <im_patch> tokens in order, image after image).
static mx_status_t run_vision_molmo2(mx_server_sched_t *s, mx_server_job_t *job) {
  const mx_model_config_t *cfg = &s->model->config;
  const mx_vision_config_t *v = &cfg->vision;
  const size_t H = (size_t)cfg->hidden_size;
  const int64_t side = v->image_size / v->patch_size;
  const int64_t P = (int64_t)v->patch_size * v->patch_size * v->num_channels;
  const int32_t *pool = job->grids + (size_t)job->n_images * MX_SERVER_MOLMO2_GRID;
  size_t off = 0;
  int32_t pos = 0;
  mx_status_t st = MX_OK;
  for (int32_t i = 0; i < job->n_images && !st; i++) {
    const int32_t *g = job->grids + (size_t)i * MX_SERVER_MOLMO2_GRID;
    int64_t per = (int64_t)g[0] * side * side * P;
    float *f = malloc(sizeof *f * (size_t)g[1] * H);
    st = f ? mx_batch_vision_pooled(s->batch, job->pixels + off, per, g[0], pool, g[1], g[2], f,
                                    (int64_t)g[1] * (int64_t)H)
           : mx_error_set(MX_ERR_NOMEM, "out of memory");
    for (int32_t j = 0; !st && j < g[1]; j++, pos++) {
      while (pos < job->n_prompt && job->ids[pos] != v->image_token_id) pos++;
      if (pos == job->n_prompt) {
        st = mx_error_set(MX_ERR_INVALID_ARG, "image %d: the prompt has too few <im_patch>", i);
        break;
      }
      memcpy(job->media + (size_t)pos * H, f + (size_t)j * H, sizeof *f * H);
    }
    free(f);
    off += (size_t)per;
    pool += (size_t)g[1] * (size_t)g[2];
  }
  if (st) return st;
  free(job->pixels);
  job->pixels = NULL;
  return MX_OK;
}

static mx_status_t run_vision(mx_server_sched_t *s, mx_server_job_t *job) {
  const mx_model_config_t *cfg = &s->model->config;
  if (cfg->vision.kind == MX_VISION_MOLMO2) return run_vision_molmo2(s, job);
  const mx_vision_config_t *v = &cfg->vision;
  const size_t W = (size_t)mx_vision_feature_width(cfg);
  int64_t per = (int64_t)v->num_channels * v->image_size * v->image_size;
  const int64_t K =
      (int64_t)v->num_channels * v->temporal_patch_size * v->patch_size * v->patch_size;
  const int32_t mm = v->spatial_merge_size * v->spatial_merge_size;
  int32_t *starts = malloc(sizeof *starts * (size_t)job->n_images);
  int32_t *counts = job->grids ? malloc(sizeof *counts * (size_t)job->n_images) : NULL;
  for (int32_t i = 0; counts && i < job->n_images; i++)
    counts[i] = job->grids[2 * i] * job->grids[2 * i + 1] / mm;
  mx_status_t st =
      starts && (counts || !job->grids)
          ? mx_vision_image_runs(cfg, job->ids, job->n_prompt, job->n_images, counts, starts)
          : mx_error_set(MX_ERR_NOMEM, "out of memory");
  size_t off = 0;
  for (int32_t i = 0; i < job->n_images && !st; i++) {
    int32_t gh = job->grids ? job->grids[2 * i] : 0, gw = job->grids ? job->grids[2 * i + 1] : 0;
    int64_t count = counts ? counts[i] : v->tokens_per_image;
    if (job->grids) per = (int64_t)gh * gw * K;
    float *at = job->media + (size_t)starts[i] * W;
    st = job->grids ? mx_batch_vision_grid(s->batch, job->pixels + off, per, gh, gw, at,
                                           count * (int64_t)W)
                    : mx_batch_vision(s->batch, job->pixels + off, per, at, count * (int64_t)W);
    off += (size_t)per;
  }
  free(starts);
  free(counts);
  if (st) return st;
  free(job->pixels);
  job->pixels = NULL;
  return MX_OK;
}

// Gemma 3n's audio tower on each of the job's recordings (ADR 0022), its rows placed at the
// recording's run of audio tokens (the i-th run for the i-th recording), before the job's first
// prefill chunk.
static mx_status_t run_audio(mx_server_sched_t *s, mx_server_job_t *job) {
  const mx_model_config_t *cfg = &s->model->config;
  const mx_audio_config_t *a = &cfg->audio;
  const int64_t H = cfg->hidden_size, M = a->input_feat_size, N = a->soft_tokens;
  mx_status_t st = MX_OK;
  int64_t off = 0;
  for (int32_t i = 0, k = 0; k < job->audio.n && !st; k++) {
    while (i < job->n_prompt && job->ids[i] != a->audio_token_id) i++;
    int32_t len = 0;
    while (i + len < job->n_prompt && job->ids[i + len] == a->audio_token_id) len++;
    if (len != N) {
      st = mx_error_set(MX_ERR_INVALID_ARG,
                        "recording %d has no run of %lld audio tokens (id %d) in the prompt", k,
                        (long long)N, a->audio_token_id);
      break;
    }
    int64_t F = job->audio.frames[k];
    st = mx_batch_audio(s->batch, job->audio.features + off * M, job->audio.mask + off, F,
                        job->media + (size_t)i * (size_t)H, N * H);
    off += F;
    i += len;
  }
  if (st) return st;
  free(job->audio.features);
  free(job->audio.mask);
  free(job->audio.frames);
  memset(&job->audio, 0, sizeof job->audio);
  return MX_OK;
}

// One prefill chunk of the oldest job still prefilling.
static void prefill_step(mx_server_sched_t *s) {
  mx_server_job_t *job = NULL;
  for (int32_t i = 0; i < s->n_slots; i++) {
    mx_server_job_t *j = s->slots[i];
    if (j && j->state == JOB_PREFILL && (!job || j->admit_seq < job->admit_seq)) job = j;
  }
  if (!job) return;
  int32_t n = job->n_prompt - job->n_prefilled;
  if (n > s->chunk) n = s->chunk;
  double t0 = now_seconds();
  mx_status_t st = job->pixels ? run_vision(s, job) : job->audio.n ? run_audio(s, job) : MX_OK;
  if (!st && job->media) {  // a chunk never cuts an image's run of tokens (Gemma 3, Molmo2)
    const int32_t *ids = job->ids + job->n_prefilled;
    bool prev = mx_vision_context_image(&s->model->config.vision, job->ids, job->n_prefilled);
    st = mx_vision_prefill_take(&s->model->config, ids, job->n_prompt - job->n_prefilled, s->chunk,
                                prev, &n);
  }
  // A prompt with images runs every chunk through the media entry, as a session does (the
  // Qwen towers with the chunk's M-RoPE positions).
  const float *media = job->media
                           ? job->media + (size_t)job->n_prefilled *
                                              (size_t)mx_vision_feature_width(&s->model->config)
                           : NULL;
  for (int32_t r = 0; !st && job->positions && r < 3; r++)
    memcpy(job->cpos + (size_t)r * (size_t)n,
           job->positions + (size_t)r * (size_t)job->n_prompt + (size_t)job->n_prefilled,
           (size_t)n * sizeof *job->cpos);
  if (!st && job->positions)
    st = mx_batch_prefill_mrope(s->batch, job->slot, job->ids + job->n_prefilled, media, job->cpos,
                                n);
  else if (!st && media)
    st = mx_batch_prefill_media(s->batch, job->slot, job->ids + job->n_prefilled, media, n);
  else if (!st)
    st = mx_batch_prefill(s->batch, job->slot, job->ids + job->n_prefilled, n);
  int reason = -1;
  bool complete = false;
  if (!st) {
    job->n_prefilled += n;
    complete = job->n_prefilled == job->n_prompt;
    if (complete) reason = take_token(s, job);  // the first generated token
  }
  double dt = now_seconds() - t0;
  pthread_mutex_lock(&s->mu);
  s->stats.prefill_seconds += dt;
  if (st) {
    fail_locked(s, job, "prefill");
  } else {
    s->stats.prefill_tokens += (uint64_t)n;
    if (complete) publish_locked(s, job, reason);
  }
  pthread_mutex_unlock(&s->mu);
}

// Counts a speculative job's step (under s->mu).
static void count_spec_locked(mx_server_sched_t *s, mx_server_job_t *job, int32_t drafted,
                              int32_t accepted) {
  job->pub.spec_steps++;
  job->pub.spec_drafted += drafted;
  job->pub.spec_accepted += accepted;
  s->stats.spec_steps++;
  s->stats.spec_drafted += (uint64_t)drafted;
  s->stats.spec_accepted += (uint64_t)accepted;
}

// A job's speculative state for `mode` (MX_SPEC_NGRAM, or MX_SPEC_DRAFT with the draft model).
static mx_status_t spec_create(const mx_server_sched_t *s, mx_spec_mode_t mode,
                               int32_t draft_tokens, int32_t ngram_max, mx_batch_spec_t **out) {
  if (mode == MX_SPEC_DRAFT && !s->drafter)
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "speculative method 'draft_model' needs a draft model: the server was "
                        "started without --draft-model DIR");
  if (mode != MX_SPEC_NGRAM && mode != MX_SPEC_DRAFT)
    return mx_error_set(MX_ERR_INVALID_ARG, "speculative decoding: unknown mode %d", (int)mode);
  return mx_batch_spec_create(s->batch, mode == MX_SPEC_DRAFT ? s->drafter : NULL, draft_tokens,
                              ngram_max, out);
}

// A speculative job's step with drafts: one verification call of its slot, then each token the
// sampler settled on goes through the text side and out, until one ends the job; the slot then
// holds what plain decoding would (every token before the last one out, and that one after EOS).
static void spec_step(mx_server_sched_t *s, mx_server_job_t *job) {
  int32_t out[MX_SPEC_MAX_TOKENS + 1], n_out = 0;
  const int32_t n = job->n_prompt + job->n_gen;
  double t0 = now_seconds();
  mx_status_t st = mx_batch_spec_verify(s->batch, job->slot, job->spec, job->smp, job->ids, n,
                                        job->spec_m, out, &n_out);
  pthread_mutex_lock(&s->mu);
  s->stats.decode_seconds += now_seconds() - t0;
  if (st) {
    fail_locked(s, job, "speculative decode");
  } else {
    count_spec_locked(s, job, job->spec_m, n_out - 1);
  }
  pthread_mutex_unlock(&s->mu);
  int reason = -1;
  for (int32_t i = 0; !st && i < n_out && reason < 0; i++) {
    reason = emit_token(s, job, out[i], n + i);
    int64_t fed = job->n_prompt + job->n_gen - (reason == MX_FINISH_EOS ? 0 : 1);
    if (reason >= 0 && mx_batch_n_past(s->batch, job->slot) > fed)
      mx_batch_rewind(s->batch, job->slot, fed);
    pthread_mutex_lock(&s->mu);
    s->stats.decode_tokens++;
    publish_locked(s, job, reason);  // may free the job when it ends (the loop stops)
    pthread_mutex_unlock(&s->mu);
  }
}

// The drafts of this step's speculative jobs (ADR 0024), into each job's spec_m (0 for none:
// it then decodes with the others). As mx_generate drafts: as many as fit the slot, whatever
// is left of max_tokens (the ids have room for them), so that a seeded request draws what
// generate does. Jobs drafting with the draft model share its calls. A draft model's failed
// call costs the step its drafts, not the requests: the model's own decode step follows, and
// the drafter starts those slots over.
static void draft_all(mx_server_sched_t *s, mx_server_job_t **jobs, int32_t n) {
  for (int32_t k = 0; k < n; k++) {
    mx_server_job_t *j = jobs[k];
    int32_t len = j->n_prompt + j->n_gen;
    int64_t room = s->ctx - len;
    s->d_sps[k] = j->spec;
    s->d_slots[k] = j->slot;
    s->d_hist[k] = j->ids;
    s->d_ns[k] = len;
    s->d_limits[k] = room < INT32_MAX ? (int32_t)room : INT32_MAX;
  }
  mx_batch_spec_draft_many(s->d_sps, s->d_slots, s->d_hist, s->d_ns, s->d_limits, n, s->d_ms);
  for (int32_t k = 0; k < n; k++) jobs[k]->spec_m = s->d_ms[k];
}

// One batched decode step over every slot with a token to feed, except speculative jobs with
// drafts, which then verify them in a call each (placed from the end of step_jobs).
static void decode_step(mx_server_sched_t *s) {
  int32_t n = 0, n_spec = 0;
  for (int32_t i = 0; i < s->n_slots; i++) {
    mx_server_job_t *j = s->slots[i];
    if (j && j->state == JOB_DECODE && j->spec) s->step_jobs[s->n_slots - 1 - n_spec++] = j;
  }
  // Speculating jobs sit at the end of step_jobs, the plain ones fill it from the front.
  draft_all(s, s->step_jobs + s->n_slots - n_spec, n_spec);
  // Those with drafts stay there, in slot order (from the top down: a write never passes the
  // entry being read).
  int32_t n_verify = 0;
  for (int32_t k = s->n_slots - 1; k >= s->n_slots - n_spec; k--)
    if (s->step_jobs[k]->spec_m > 0) s->step_jobs[s->n_slots - 1 - n_verify++] = s->step_jobs[k];
  for (int32_t i = 0; i < s->n_slots; i++) {
    mx_server_job_t *j = s->slots[i];
    if (j && j->state == JOB_DECODE && !(j->spec && j->spec_m > 0)) {
      s->step_jobs[n] = j;
      s->step_slots[n] = i;
      s->step_ids[n] = j->next_id;
      n++;
    }
  }
  for (int32_t k = 0; k < n_verify; k++) spec_step(s, s->step_jobs[s->n_slots - 1 - k]);
  if (n == 0) return;
  double t0 = now_seconds();
  mx_status_t st = mx_batch_decode(s->batch, s->step_slots, s->step_ids, n);
  int reasons_ok = !st;
  // Reasons are kept in step_ids (the fed ids are no longer needed).
  if (reasons_ok)
    for (int32_t k = 0; k < n; k++) s->step_ids[k] = take_token(s, s->step_jobs[k]);
  double dt = now_seconds() - t0;
  pthread_mutex_lock(&s->mu);
  s->stats.decode_seconds += dt;
  if (!reasons_ok) {
    for (int32_t k = 0; k < n; k++) fail_locked(s, s->step_jobs[k], "decode");
  } else {
    s->stats.decode_steps++;
    s->stats.decode_tokens += (uint64_t)n;
    for (int32_t k = 0; k < n; k++) {
      if (s->step_jobs[k]->spec) count_spec_locked(s, s->step_jobs[k], 0, 0);
      publish_locked(s, s->step_jobs[k], s->step_ids[k]);
    }
  }
  pthread_mutex_unlock(&s->mu);
}

static void *sched_main(void *arg) {
  mx_server_sched_t *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    bool go_on = housekeeping_locked(s);
    pthread_mutex_unlock(&s->mu);
    if (!go_on) break;
    prefill_step(s);
    decode_step(s);
  }
  return NULL;
}

// ---- Creation and teardown ----

mx_status_t mx_server_sched_create(const mx_server_sched_opts_t *o, mx_server_sched_t **out) {
  *out = NULL;
  if (!o || !o->model) return mx_error_set(MX_ERR_INVALID_ARG, "scheduler: no model");
  if (o->n_slots < 1)
    return mx_error_set(MX_ERR_INVALID_ARG, "scheduler: --parallel must be >= 1, got %d",
                        o->n_slots);
  if (o->max_queue < 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "scheduler: queue limit must be >= 0, got %d",
                        o->max_queue);
  mx_server_sched_t *s = calloc(1, sizeof *s);
  if (!s) return mx_error_set(MX_ERR_NOMEM, "scheduler: out of memory");
  s->model = o->model;
  s->max_queue = o->max_queue;
  s->prefix_cache = o->prefix_cache;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->work_cv, NULL);
  pthread_cond_init(&s->idle_cv, NULL);
  mx_batch_opts_t bo = {.backend = o->backend,
                        .vision_backend = o->vision_backend,
                        .ctx = o->ctx,
                        .prefill_chunk = o->prefill_chunk,
                        .n_slots = o->n_slots,
                        .backend_opts = o->backend_opts};
  mx_status_t st = mx_batch_create(o->model, &bo, &s->batch);
  if (!st && o->draft_model) {
    mx_batch_opts_t dbo = bo;
    dbo.vision_backend = NULL;
    st = mx_batch_drafter_create(s->batch, o->draft_model, &dbo, &s->drafter);
  }
  if (st) {
    mx_server_sched_destroy(s);
    return st;
  }
  s->n_slots = mx_batch_n_slots(s->batch);
  s->ctx = mx_batch_ctx(s->batch);
  s->chunk = mx_batch_chunk(s->batch);
  s->vocab = mx_batch_vocab(s->batch);
  s->stats.n_slots = s->n_slots;
  s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
  s->step_jobs = calloc((size_t)s->n_slots, sizeof *s->step_jobs);
  s->step_slots = calloc((size_t)s->n_slots, sizeof *s->step_slots);
  s->step_ids = calloc((size_t)s->n_slots, sizeof *s->step_ids);
  s->busy = calloc((size_t)s->n_slots, sizeof *s->busy);
  s->d_sps = calloc((size_t)s->n_slots, sizeof *s->d_sps);
  s->d_hist = calloc((size_t)s->n_slots, sizeof *s->d_hist);
  s->d_slots = calloc((size_t)s->n_slots, sizeof *s->d_slots);
  s->d_ns = calloc((size_t)s->n_slots, sizeof *s->d_ns);
  s->d_limits = calloc((size_t)s->n_slots, sizeof *s->d_limits);
  s->d_ms = calloc((size_t)s->n_slots, sizeof *s->d_ms);
  if (s->prefix_cache && !st) st = mx_prefix_cache_init(&s->pc, s->n_slots, s->ctx);
  if (st) {
    mx_server_sched_destroy(s);
    return st;
  }
  if (!s->slots || !s->step_jobs || !s->step_slots || !s->step_ids || !s->busy || !s->d_sps ||
      !s->d_hist || !s->d_slots || !s->d_ns || !s->d_limits || !s->d_ms) {
    mx_server_sched_destroy(s);
    return mx_error_set(MX_ERR_NOMEM, "scheduler: out of memory");
  }
  if (pthread_create(&s->thread, NULL, sched_main, s) != 0) {
    mx_server_sched_destroy(s);
    return mx_error_set(MX_ERR_RUNTIME, "scheduler: cannot start its thread");
  }
  s->thread_started = true;
  *out = s;
  return MX_OK;
}

void mx_server_sched_destroy(mx_server_sched_t *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  s->draining = true;
  for (mx_server_job_t *j = s->q_head; j; j = j->next) j->cancelled = true;
  for (int32_t i = 0; s->slots && i < s->n_slots; i++)
    if (s->slots[i]) s->slots[i]->cancelled = true;
  pthread_cond_broadcast(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
  if (s->thread_started) pthread_join(s->thread, NULL);
  // The thread left with every job finished; creators may still hold their references.
  mx_batch_drafter_destroy(s->drafter);
  mx_batch_destroy(s->batch);
  free(s->slots);
  free(s->step_jobs);
  free(s->step_slots);
  free(s->step_ids);
  free(s->d_sps);
  free(s->d_hist);
  free(s->d_slots);
  free(s->d_ns);
  free(s->d_limits);
  free(s->d_ms);
  free(s->busy);
  mx_prefix_cache_free(&s->pc);
  pthread_cond_destroy(&s->work_cv);
  pthread_cond_destroy(&s->idle_cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

int64_t mx_server_sched_ctx(const mx_server_sched_t *s) { return s->ctx; }
int32_t mx_server_sched_vocab(const mx_server_sched_t *s) { return s->vocab; }

// ---- Jobs (HTTP threads) ----

mx_status_t mx_server_job_create(mx_server_sched_t *s, const mx_server_job_opts_t *o,
                                 mx_server_job_t **out) {
  *out = NULL;
  if (o->n_prompt < 1 || !o->prompt)
    return mx_error_set(MX_ERR_INVALID_ARG, "the prompt has no tokens");
  // Input ids may exceed the logits' width where the embedding has rows beyond it (Molmo2's
  // image tokens).
  int32_t nv = mx_config_input_vocab(&s->model->config);
  for (int32_t i = 0; i < o->n_prompt; i++)
    if (o->prompt[i] < 0 || o->prompt[i] >= nv)
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "prompt token %d is id %d, outside the vocabulary [0, %d)", i,
                          o->prompt[i], nv);
  if (o->max_tokens < 1)
    return mx_error_set(MX_ERR_INVALID_ARG, "max_tokens must be >= 1, got %d", o->max_tokens);
  if ((int64_t)o->n_prompt + o->max_tokens > s->ctx)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "this model's context holds %lld tokens, but %lld were requested (%d in "
                        "the prompt, %d for the completion)",
                        (long long)s->ctx, (long long)o->n_prompt + o->max_tokens, o->n_prompt,
                        o->max_tokens);
  mx_server_job_t *job = calloc(1, sizeof *job);
  if (!job) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  pthread_cond_init(&job->cv, NULL);
  mx_strbuf_init(&job->out);
  job->slot = -1;
  job->refs = 1;
  job->n_prompt = o->n_prompt;
  job->max_tokens = o->max_tokens;
  job->ignore_eos = o->ignore_eos;
  job->pub.n_prompt = o->n_prompt;
  mx_status_t st = mx_sampler_create(&o->sampling, s->vocab, &job->smp);
  if (!st) {
    mx_text_stream_opts_t to = {
        .stop = o->stop,
        .n_stop = o->n_stop,
        .mid_text = mx_text_stream_mid_text(o->tok, o->prompt, o->n_prompt)};
    st = mx_text_stream_create(o->tok, &to, &job->ts);
  }
  if (!st && (o->grammar != NULL) != (o->gvocab != NULL))
    st = mx_error_set(MX_ERR_INVALID_ARG, "a grammar needs its vocabulary index and back");
  // Ids past the tokenizer's (padding rows of the embedding) are never allowed.
  if (!st && o->gvocab && mx_gvocab_size(o->gvocab) > s->vocab)
    st = mx_error_set(MX_ERR_INVALID_ARG, "the tokenizer has %d ids but the model's logits only %d",
                      mx_gvocab_size(o->gvocab), s->vocab);
  if (!st && o->grammar) {
    st = mx_gmatch_create(o->grammar, &job->gm);
    if (!st) st = mx_gmatch_bind_vocab(job->gm, o->gvocab);
    job->allow = st ? NULL : calloc(((size_t)s->vocab + 31) / 32, sizeof *job->allow);
    if (!st && !job->allow) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  if (!st && o->speculative) {
    const mx_model_config_t *cfg = &s->model->config;
    if (o->grammar)
      st = mx_error_set(MX_ERR_UNSUPPORTED,
                        "speculative decoding does not combine with constrained output "
                        "(response_format, tool_choice): the grammar would have to follow the "
                        "drafts and roll back");
    else if (o->n_images > 0 && mx_vision_mrope(&cfg->vision))
      st = mx_error_set(MX_ERR_UNSUPPORTED,
                        "speculative decoding does not run after an M-RoPE image (model_type "
                        "'%s'): its text runs through the media entry, which returns no logits "
                        "of every position",
                        cfg->model_type);
    else
      st = spec_create(s, o->speculative, o->draft_tokens, o->ngram_max, &job->spec);
    job->pub.speculative = !st;
  }
  if (!st) {
    // A speculative job's drafts go after its ids (the penalties' history of the verification).
    size_t extra = job->spec ? MX_SPEC_MAX_TOKENS + 1 : 0;
    job->ids = malloc(((size_t)o->n_prompt + (size_t)o->max_tokens + extra) * sizeof *job->ids);
    // Room for a few KiB of text not yet taken, so publishing text rarely reallocates.
    job->out.data = malloc(4096);
    job->out.cap = 4096;
    if (job->ids && job->out.data) {
      job->out.data[0] = '\0';
      memcpy(job->ids, o->prompt, (size_t)o->n_prompt * sizeof *job->ids);
    } else {
      st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    }
  }
  if (!st && o->n_images > 0) {
    if (!o->pixels) {
      st = mx_error_set(MX_ERR_INVALID_ARG, "%d images without their pixels", o->n_images);
    } else {
      const mx_model_config_t *cfg = &s->model->config;
      // M-RoPE positions: the Qwen towers (Molmo2's grids are its images' geometry).
      bool grid = mx_vision_mrope(&cfg->vision);
      size_t W = (size_t)mx_vision_feature_width(cfg);
      job->media = calloc((size_t)o->n_prompt * W, sizeof *job->media);
      if (grid && o->grids) {
        job->positions = malloc(3 * (size_t)o->n_prompt * sizeof *job->positions);
        job->cpos = malloc(3 * (size_t)s->chunk * sizeof *job->cpos);
      }
      if (grid && !o->grids)
        st = mx_error_set(MX_ERR_INVALID_ARG, "%d images without their patch grids", o->n_images);
      else if (!job->media || (grid && (!job->positions || !job->cpos)))
        st = mx_error_set(MX_ERR_NOMEM, "out of memory (media rows)");
      int64_t next = 0;  // the runs must be the grids' (an error names the first that is not)
      if (!st && grid)
        st = mx_mrope_positions(cfg, o->prompt, o->n_prompt, o->grids, o->n_images, 0,
                                job->positions, &next);
    }
  }
  if (!st && o->audio.n > 0) {
    const mx_model_config_t *cfg = &s->model->config;
    if (!cfg->audio.present || cfg->vision.present)
      st = mx_error_set(MX_ERR_UNSUPPORTED, "model_type '%s' takes no audio", cfg->model_type);
    else if (!(job->media =
                   calloc((size_t)o->n_prompt * (size_t)cfg->hidden_size, sizeof *job->media)))
      st = mx_error_set(MX_ERR_NOMEM, "out of memory (media rows)");
  }
  if (st) {
    job_free(job);  // the grammar, the pixels, the grids and the audio stay the caller's
    return st;
  }
  job->grammar = o->grammar;
  job->pixels = o->pixels;
  job->grids = o->grids;
  job->n_images = o->n_images;
  job->audio = o->audio;
  job->n_text_prefix = job->n_prompt;
  const mx_vision_config_t *vc = &s->model->config.vision;
  int32_t media_id = mx_media_token_id(&s->model->config);
  for (int32_t i = 0; i < job->n_prompt && (job->n_images > 0 || job->audio.n > 0); i++) {
    if (vc->present && vc->kind == MX_VISION_MOLMO2 ? mx_vision_block_token(vc, job->ids[i])
                                                    : job->ids[i] == media_id) {
      job->n_text_prefix = i;
      break;
    }
  }
  *out = job;
  return MX_OK;
}

mx_status_t mx_server_job_submit(mx_server_sched_t *s, mx_server_job_t *job) {
  pthread_mutex_lock(&s->mu);
  mx_status_t st = MX_OK;
  if (s->draining) {
    st = mx_error_set(MX_ERR_RUNTIME, "the server is shutting down");
  } else if (s->n_queued >= s->max_queue + (s->n_slots - s->n_active)) {
    // Queued jobs that free slots will take at the scheduler's next turn are not waiting: only
    // the rest count against --queue (and the message says so, not the raw queue length).
    int32_t waiting = s->n_queued - (s->n_slots - s->n_active);
    st = mx_error_set(MX_ERR_RUNTIME,
                      "the server is busy: %d request%s already waiting for a slot (the queue "
                      "holds %d)",
                      waiting, waiting == 1 ? " is" : "s are", s->max_queue);
  } else {
    job->refs++;
    job->state = JOB_QUEUED;
    if (s->q_tail) {
      s->q_tail->next = job;
    } else {
      s->q_head = job;
    }
    s->q_tail = job;
    s->n_queued++;
    s->stats.prompt_tokens += (uint64_t)job->n_prompt;
    pthread_cond_signal(&s->work_cv);
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

bool mx_server_job_wait(mx_server_sched_t *s, mx_server_job_t *job, int timeout_ms,
                        mx_strbuf_t *text, mx_server_job_state_t *state) {
  pthread_mutex_lock(&s->mu);
  if (job->out.len == 0 && !job->pub.done && timeout_ms > 0) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
      dl.tv_sec++;
      dl.tv_nsec -= 1000000000L;
    }
    while (job->out.len == 0 && !job->pub.done)
      if (pthread_cond_timedwait(&job->cv, &s->mu, &dl) == ETIMEDOUT) break;
  }
  bool news = job->out.len > 0 || job->pub.done;
  if (job->out.len > 0 && text) {
    mx_strbuf_append(text, job->out.data, job->out.len);
    job->out.len = 0;
    job->out.data[0] = '\0';
  }
  if (state) *state = job->pub;
  pthread_mutex_unlock(&s->mu);
  return news;
}

void mx_server_job_release(mx_server_sched_t *s, mx_server_job_t *job) {
  if (!job) return;
  pthread_mutex_lock(&s->mu);
  if (!job->pub.done && job->refs > 1) {
    job->cancelled = true;
    pthread_cond_signal(&s->work_cv);
  }
  job_unref(job);
  pthread_mutex_unlock(&s->mu);
}

bool mx_server_sched_drain(mx_server_sched_t *s, double timeout_s) {
  double end = now_seconds() + timeout_s;
  pthread_mutex_lock(&s->mu);
  s->draining = true;
  while (s->n_queued > 0 || s->n_active > 0) {
    double left = end - now_seconds();
    if (left <= 0) break;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    double w = left < 0.2 ? left : 0.2;
    dl.tv_nsec += (long)(w * 1e9);
    while (dl.tv_nsec >= 1000000000L) {
      dl.tv_sec++;
      dl.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->idle_cv, &s->mu, &dl);
  }
  bool idle = s->n_queued == 0 && s->n_active == 0;
  pthread_mutex_unlock(&s->mu);
  return idle;
}

void mx_server_sched_pause(mx_server_sched_t *s, bool paused) {
  pthread_mutex_lock(&s->mu);
  s->paused = paused;
  s->turns_allowed = 0;
  pthread_cond_broadcast(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
}

void mx_server_sched_allow_turns(mx_server_sched_t *s, int32_t n) {
  pthread_mutex_lock(&s->mu);
  s->turns_allowed = n > 0 ? n : 0;
  pthread_cond_broadcast(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
}

mx_status_t mx_server_sched_spec_check(const mx_server_sched_t *s, mx_spec_mode_t mode,
                                       int32_t draft_tokens, int32_t ngram_max) {
  mx_batch_spec_t *sp = NULL;
  mx_status_t st = spec_create(s, mode, draft_tokens, ngram_max, &sp);
  mx_batch_spec_destroy(sp);
  return st;
}

void mx_server_sched_stats(mx_server_sched_t *s, mx_server_sched_stats_t *out) {
  pthread_mutex_lock(&s->mu);
  *out = s->stats;
  out->active = s->n_active;
  out->queued = s->n_queued;
  pthread_mutex_unlock(&s->mu);
}
