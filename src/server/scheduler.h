// Private to src/server/: the continuous-batching scheduler.
//
// One thread owns the mx_batch_t. Each turn of its loop: drop jobs whose client went away,
// admit queued jobs to free slots, run at most ONE prefill chunk (the oldest job still
// prefilling), then ONE mx_batch_decode over every slot that has a token to feed, sample per
// slot and push each job's new text. Jobs join and leave between steps; a long prompt delays the
// running streams by at most one chunk per step. HTTP threads only create, submit, wait on and
// release jobs; they never touch the batch.
//
// Ownership: a job is reference-counted between its creator (an HTTP thread) and the
// scheduler; mx_server_job_release drops the creator's reference and cancels the job if it is
// still running (its slot is freed before the next decode step).
#ifndef MLXCEL_SERVER_SCHEDULER_H
#define MLXCEL_SERVER_SCHEDULER_H

#include "mlxcel/grammar.h"
#include "mlxcel/session.h"
#include "mlxcel/text_stream.h"

typedef struct mx_server_sched mx_server_sched_t;
typedef struct mx_server_job mx_server_job_t;

// A request's recordings as log-mel features (Gemma 3n; ADR 0022): recording i's frames[i]
// frames follow the ones before it in features [sum frames][input_feat_size] and mask (1: a
// real frame). Heap arrays (mx_server_audio_free, server_internal.h).
typedef struct mx_server_audio {
  float *features;
  uint8_t *mask;
  int64_t *frames;
  int32_t n;
} mx_server_audio_t;

typedef struct mx_server_sched_opts {
  const mx_model_t *model;     // borrowed; outlives the scheduler
  const char *backend;         // NULL = default
  const char *vision_backend;  // where a vision model's tower runs; NULL = the backend
  mx_backend_opts_t backend_opts;
  int64_t ctx;            // KV capacity per slot; 0 = default
  int32_t n_slots;        // sequences decoded together (--parallel)
  int32_t prefill_chunk;  // 0 = default
  int32_t max_queue;      // jobs waiting for a slot before submit refuses (503)
  // A job starts on the free slot whose KV shares the longest prefix with its prompt and
  // prefills only the rest (prefix_cache.h); false: every job prefills its whole prompt.
  bool prefix_cache;
  // A draft model (borrowed; outlives the scheduler; the model's tokenizer) for jobs that
  // speculate with MX_SPEC_DRAFT: its batch follows the model's slots (mx_batch_drafter_t), on
  // the same backend and options. NULL: such jobs are refused.
  const mx_model_t *draft_model;
} mx_server_sched_opts_t;

mx_status_t mx_server_sched_create(const mx_server_sched_opts_t *o, mx_server_sched_t **out);
// Cancels everything still queued or running, stops the thread and frees the batch.
void mx_server_sched_destroy(mx_server_sched_t *s);  // accepts NULL
int64_t mx_server_sched_ctx(const mx_server_sched_t *s);
int32_t mx_server_sched_vocab(const mx_server_sched_t *s);

enum { MX_SERVER_MOLMO2_GRID = 7 };  // ints per Molmo2 image in mx_server_job_opts_t.grids

typedef struct mx_server_job_opts {
  const int32_t *prompt;  // copied; n_prompt >= 1 ids, each < vocab
  int32_t n_prompt;
  int32_t max_tokens;  // >= 1; n_prompt + max_tokens must fit the context (checked here)
  mx_sampler_params_t sampling;
  const char *const *stop;  // copied
  int32_t n_stop;
  bool ignore_eos;            // EOS ids are ordinary tokens (benchmarks)
  const mx_tokenizer_t *tok;  // for the text; borrowed, outlives the job
  // Constrained decoding (both or neither): every sampled token is one the grammar accepts, EOS
  // only once the document is complete, and the job ends as soon as the document is finished
  // (MX_FINISH_EOS). The job owns the grammar once created (the scheduler may still read it
  // after the creator released the job); the vocabulary index is borrowed and outlives the
  // scheduler.
  mx_grammar_t *grammar;
  const mx_gvocab_t *gvocab;
  // Images (vision models): n_images preprocessed images, pixels [n_images][C * S * S], owned by
  // the job once created (as the grammar). The prompt holds tokens_per_image image tokens per
  // image, in order; the scheduler runs the vision tower on each when the job's prefill starts
  // and places the features at its tokens (mx_batch_prefill_media). The Qwen towers (ADR 0013):
  // the pixels are each image's patch rows in order, grids[2i], [2i + 1] its patch grid (owned
  // by the job once created, as the pixels), the prompt's i-th run of image tokens holds its
  // merged units, and the prompt runs with its M-RoPE positions (mx_batch_prefill_mrope).
  // Molmo2 (ADR 0023): the pixels are each image's crops, grids holds MX_SERVER_MOLMO2_GRID ints
  // per image (crops, pooled tokens, pool size, the image_grids row), then every image's
  // image_token_pooling in order; feature j of image i goes to its j-th <im_patch>.
  float *pixels;
  int32_t *grids;
  int32_t n_images;
  // Audio (Gemma 3n; ADR 0022): the recordings' log-mel features, owned by the job once created
  // (audio.n 0: none). The prompt holds one run of audio_soft_tokens_per_image audio tokens per
  // recording, in order; the scheduler runs @audio on each when the job's prefill starts and
  // places its rows at its run (mx_batch_prefill_media).
  mx_server_audio_t audio;
  // Speculative decoding (ADR 0024), MX_SPEC_NGRAM or MX_SPEC_DRAFT (MX_SPEC_OFF: none): each
  // step drafts up to draft_tokens tokens (0 = the library's default), by prompt lookup of the
  // longest recurring suffix of up to ngram_max tokens or from the draft model, and verifies
  // them in one call of the job's slot; steps without a draft share the batched decode. Refused
  // with a grammar, with images of an M-RoPE model, and MX_SPEC_DRAFT without a draft model.
  mx_spec_mode_t speculative;
  int32_t draft_tokens, ngram_max;
} mx_server_job_opts_t;

// Validates (sampling values, prompt ids, lengths) and allocates everything the job needs, so
// the scheduler never allocates for it. Errors name the problem (the HTTP layer maps them to
// 400).
mx_status_t mx_server_job_create(mx_server_sched_t *s, const mx_server_job_opts_t *o,
                                 mx_server_job_t **out);
// Queues the job. MX_ERR_RUNTIME when the queue is full or the server is draining (503).
mx_status_t mx_server_job_submit(mx_server_sched_t *s, mx_server_job_t *job);

typedef struct mx_server_job_state {
  bool done;
  mx_finish_reason_t finish;  // valid when done
  bool failed;                // the engine failed (message below)
  char error[256];
  int32_t n_prompt, n_generated;
  int32_t n_cached;  // prompt tokens the job's slot held already (not prefilled again)
  // Speculative jobs: model calls after the prefill (decode or verification), the drafts they
  // verified and those accepted (a step yields (spec_accepted + spec_steps) / spec_steps tokens).
  bool speculative;
  int32_t spec_steps, spec_drafted, spec_accepted;
} mx_server_job_state_t;

// Waits up to timeout_ms for new text or the end; appends the text released since the last
// call to *text and fills *state. Returns true when new text arrived or the job is done.
bool mx_server_job_wait(mx_server_sched_t *s, mx_server_job_t *job, int timeout_ms,
                        mx_strbuf_t *text, mx_server_job_state_t *state);
// Drops the creator's reference; a job not yet done is cancelled. Accepts NULL.
void mx_server_job_release(mx_server_sched_t *s, mx_server_job_t *job);

// Refuses new jobs from now on and waits (at most timeout_s) until no job is queued or running.
// Returns true when everything finished.
bool mx_server_sched_drain(mx_server_sched_t *s, double timeout_s);

// Holds the scheduler before its next turn (no admission, no step) until called with false;
// submissions still queue. Tests use it to fill the queue while slots are free, a state that
// otherwise lasts only until the scheduler's next turn.
void mx_server_sched_pause(mx_server_sched_t *s, bool paused);
// While paused: lets the next n turns run (admission and a step each), then holds again, so a
// test can bring a job to a known point (a few tokens into a long generation) whatever the
// machine's speed. Without a pause it has no effect; a new pause or resume clears it.
void mx_server_sched_allow_turns(mx_server_sched_t *s, int32_t n);

typedef struct mx_server_sched_stats {
  int32_t n_slots, active, queued;
  uint64_t jobs_done, jobs_failed, jobs_cancelled;
  uint64_t prompt_tokens, generated_tokens;
  uint64_t cached_tokens;  // prompt tokens taken from the prefix cache instead of prefilled
  uint64_t prefill_tokens, decode_tokens, decode_steps;
  uint64_t spec_steps, spec_drafted, spec_accepted;  // of speculative jobs (as the job state's)
  double prefill_seconds, decode_seconds;
} mx_server_sched_stats_t;

void mx_server_sched_stats(mx_server_sched_t *s, mx_server_sched_stats_t *out);

// MX_OK when jobs can speculate with these options (mx_batch_spec_create's checks: the ranges,
// a backend that returns every position's logits), else that error. Any thread.
mx_status_t mx_server_sched_spec_check(const mx_server_sched_t *s, mx_spec_mode_t mode,
                                       int32_t draft_tokens, int32_t ngram_max);

#endif  // MLXCEL_SERVER_SCHEDULER_H
