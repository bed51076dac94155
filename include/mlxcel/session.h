// mlxcel-xla sessions: the backend seam (docs/architecture.md, "Backends"), the sampler and the
// generation loop. The CLI and the server talk only to this header (plus the tokenizer for text).
//
// A session owns the KV state of one sequence, its position and the logits of the last step.
// Everything a step needs is allocated at create time; prefill/decode do not allocate.
//
// Nothing in the library reads the process environment: every setting arrives in the options
// below (the CLI maps MLXCEL_BACKEND, MLXCEL_XLA_CONTEXT_CAPACITY, MLXCEL_THREADS, ... onto
// them).
#ifndef MLXCEL_SESSION_H
#define MLXCEL_SESSION_H

#include "mlxcel/cpu.h"
#include "mlxcel/model.h"

#ifdef __cplusplus
extern "C" {
#endif

// ============================================================================================
// Backends
// ============================================================================================

enum {
  MX_CAP_PREFILL_ALL_LOGITS = 1u << 0,  // prefill can return the logits of every position
  MX_CAP_BATCH = 1u << 1,               // batched decode of several sequences
};

// Settings of the "cpu" backend (the others ignore them).
typedef struct mx_cpu_backend_opts {
  bool profile;  // time every plan step (steps no longer overlap) and print each used plan's
                 // report to stderr when the session or batch is destroyed
  mx_cpu_qkernel_t quant_kernel;  // decode kernels of quantized weights (AUTO = the CPU's best)
} mx_cpu_backend_opts_t;

// Settings of the "xla" backend: a PJRT plugin loaded at run time (src/backends/xla.c).
typedef struct mx_xla_backend_opts {
  const char *plugin;     // path of the PJRT plugin (a shared object exporting GetPjrtApi);
                          // required (the CLI finds one from the device kind where it can)
  const char *cache_dir;  // directory of compiled executables kept across runs, keyed by graph
                          // and plugin version; NULL = compile every graph in every process
  // Windowed attention entries (ADR 0015): XLA's attention reads every cache row its graph is
  // given, so a call at position p runs the entry whose window is the smallest W = attn_window
  // * 2^k >= p + 1 below the capacity (each W is one more compiled entry). 0 = the default
  // (256); < 0 = off: every entry reads the whole capacity.
  int64_t attn_window;
} mx_xla_backend_opts_t;

// How a backend runs, beside what it runs: resources, device and each backend's own settings.
// Zero means "the default" throughout. Strings are borrowed for the duration of the create call.
typedef struct mx_backend_opts {
  int32_t threads;     // host threads (cpu); 0 = the physical cores; at most 256
  const char *device;  // the device to run on; NULL = the backend's default. cpu and interp
                       // run on the host and accept only NULL or "cpu"; xla accepts NULL or
                       // its plugin's platform ("cpu", "cuda", "rocm", ...).
  mx_cpu_backend_opts_t cpu;
  mx_xla_backend_opts_t xla;
  // Progress hook (base.h) of the work done once at create time: the cpu backend reports its
  // weight packing as the stage "packing" (total: the checkpoint's weight bytes; the stage ends
  // at done == total when the backend is ready). Zero = none.
  mx_progress_t progress;
} mx_backend_opts_t;

typedef struct mx_session_opts {
  const char *backend;    // "cpu" (fast runtime, default) or "interp" (reference interpreter);
                          // NULL = "cpu"
  int64_t ctx;            // KV capacity; 0 = min(max_position_embeddings, 4096)
  int32_t prefill_chunk;  // most tokens per prefill graph call; 0 = the backend's default
                          // (cpu: 512, ADR 0003; interp: 64)
  mx_backend_opts_t backend_opts;
  // Where a vision model's tower (@vision) runs: NULL or the session's backend = in the
  // session's own state; another name ("interp", "cpu", "xla") = a state of that backend holding
  // the tower only (no KV caches, no text entries), with the same backend_opts. A backend that
  // cannot run the family's @vision (no mx_backend_t.vision / vision_grid / vision_pooled) is an
  // error naming it, never a fallback. Text-only models ignore it (there is nothing to run).
  const char *vision_backend;
} mx_session_opts_t;

// What a backend's create receives: the session's (or batch's) options, resolved.
typedef struct mx_backend_config {
  int64_t ctx;            // KV capacity in tokens (> 0, <= the model's max_position_embeddings)
  int32_t prefill_chunk;  // most tokens per prefill call (1..ctx)
  mx_backend_opts_t opts;
  // A state for the vision tower only (mx_session_opts_t.vision_backend): `vision` is the only
  // entry called; no KV caches, no text graphs are made.
  bool vision_only;
} mx_backend_config_t;

struct mx_backend_batch;  // batched decoding (src/session/session_internal.h)

// The vtable every backend implements. `state` is the backend's own per-session object. The
// built-in backends live in src/backends/, one file each; they run the model's graphs through
// the shared graph runner (src/session/graph_runner.h) and supply only how a bound graph is
// compiled and run.
typedef struct mx_backend {
  const char *name;
  uint32_t caps;  // MX_CAP_*
  mx_status_t (*create)(const mx_model_t *model, const mx_backend_config_t *cfg, void **state);
  // Runs n tokens starting at position pos0 (n <= the prefill chunk the backend was created
  // with). Writes the logits of the last token to last[V]; when all != NULL also the logits of
  // every token to all[n][V].
  mx_status_t (*prefill)(void *state, const int32_t *ids, int32_t n, int64_t pos0, float *last,
                         float *all);
  // Runs one token at position pos; writes logits[V].
  mx_status_t (*decode)(void *state, int32_t id, int64_t pos, float *logits);
  void (*reset)(void *state);     // forget the KV state
  void (*destroy)(void *state);   // accepts NULL
  int32_t default_prefill_chunk;  // prefill chunk when the options give none; 0 = 64
  // Batched decoding of several sequences in one state (with MX_CAP_BATCH); NULL: mx_batch runs
  // one session state per sequence.
  const struct mx_backend_batch *batch;
  // Vision-language models (ADR 0010); NULL: the backend runs text only. `vision` runs @vision
  // on one preprocessed image (pixels [C, S, S]) and writes its features [N][H];
  // `prefill_media` is `prefill` whose image-token positions take their row of media[n][H] as
  // input embedding (last token's logits to last[V]).
  mx_status_t (*vision)(void *state, const float *pixels, float *features);
  mx_status_t (*prefill_media)(void *state, const int32_t *ids, const float *media, int32_t n,
                               int64_t pos0, float *last);
  // The Qwen2-VL / Qwen2.5-VL / Qwen3-VL towers (ADR 0013); NULL: not run by this backend.
  // `vision_grid` runs @vision built for a grid_h x grid_w patch grid on its pixel rows and
  // writes the features [grid_h * grid_w / m^2][W] (W = mx_vision_feature_width: Qwen3-VL's rows
  // hold the DeepStack features after the main ones, ADR 0021); `prefill_mrope` is
  // `prefill_media` of rows media[n][W] with each token's M-RoPE positions, positions[s * n + i]
  // for s = temporal, height, width (media NULL: no image rows).
  mx_status_t (*vision_grid)(void *state, const float *pixels, int32_t grid_h, int32_t grid_w,
                             float *features);
  mx_status_t (*prefill_mrope)(void *state, const int32_t *ids, const float *media,
                               const int32_t *positions, int32_t n, int64_t pos0, float *last);
  // Molmo2's tower (ADR 0023); NULL: not run by this backend. Runs @vision built for `crops`
  // crops and `tokens` pooled tokens of `pool` patches each on the processor's pixel_values
  // [crops, N, P*P*3] and image_token_pooling pooling[tokens * pool] (-1: none), and writes the
  // features [tokens][H]; its text side is prefill_media (the features added at <im_patch>).
  mx_status_t (*vision_pooled)(void *state, const float *pixels, int32_t crops,
                               const int32_t *pooling, int32_t tokens, int32_t pool,
                               float *features);
  // Gemma 3n's audio tower (ADR 0022); NULL: not run by this backend. Runs @audio built for
  // `frames` log-mel frames on features [frames][input_feat_size] and mask[frames] (1: a real
  // frame) and writes the rows [audio_soft_tokens_per_image][H], which prefill_media places at
  // the audio tokens.
  mx_status_t (*audio)(void *state, const float *features, const int32_t *mask, int32_t frames,
                       float *rows);
} mx_backend_t;

// Registered backends by name ("cpu", "interp"; later "iree"); NULL if unknown.
const mx_backend_t *mx_backend_find(const char *name);
// Writes "interp, cpu, ..." (the registered names) into buf[n]; for error messages.
void mx_backend_list_names(char *buf, size_t n);

// ============================================================================================
// Session
// ============================================================================================

typedef struct mx_session mx_session_t;

// What the "xla" backend tells about its work (for tests, bench and diagnostics): the entries it
// compiled or loaded from the compile cache and the time that took, and the bytes it moved
// between host and device (a decode step moves its id and pos0 up and the logits back).
typedef struct mx_xla_stats {
  int32_t calls;           // device calls (executions) so far
  int32_t compiled;        // entries compiled by the plugin in this session
  int32_t cache_loaded;    // entries loaded from the compile cache instead
  int32_t cache_failed;    // cache files that could not be read, loaded or written
  double compile_seconds;  // time spent compiling and loading entries
  uint64_t to_device;      // bytes copied host -> device (weights, the caches' zeros, ids, pos0)
  uint64_t to_host;        // bytes copied device -> host (logits)
  uint64_t weight_bytes;   // bytes of the weights resident on the device
} mx_xla_stats_t;

// Fills *out for a session of the xla backend; false (and *out zeroed) for any other session.
bool mx_xla_session_stats(const mx_session_t *s, mx_xla_stats_t *out);

// `model` must outlive the session. Bad option values (unknown backend, ctx < 0, ctx beyond
// the model's max_position_embeddings, threads outside 0..256, a device the backend lacks) are
// errors naming the option.
mx_status_t mx_session_create(const mx_model_t *model, const mx_session_opts_t *opts,
                              mx_session_t **out);
void mx_session_destroy(mx_session_t *s);  // accepts NULL
// Appends n prompt tokens (split into chunks internally). Fails before any work, with the
// numbers in the message, if n_past + n exceeds the context capacity or an id is out of range.
// all_logits, when not NULL, receives [n][V] (backend must have MX_CAP_PREFILL_ALL_LOGITS).
mx_status_t mx_session_prefill(mx_session_t *s, const int32_t *ids, int32_t n, float *all_logits);
// Appends one token; same checks.
mx_status_t mx_session_decode(mx_session_t *s, int32_t id);
// Vision-language models (model->config.vision.present; ADR 0010). The features of one image:
// pixels are the processor's pixel_values [C, S, S] f32 (n_pixels values, C * S * S of them),
// features receive [tokens_per_image][hidden_size] f32 (n_features values). The first image
// of a session builds (and compiles) its media entries. Errors: a text-only model, a backend
// without vision (naming it), sizes that differ from the model's.
mx_status_t mx_session_vision(mx_session_t *s, const float *pixels, int64_t n_pixels,
                              float *features, int64_t n_features);
// mx_session_prefill (same checks, chunked) whose image-token positions (ids[i] ==
// vision.image_token_id) take row i of media[n][hidden_size] as their input embedding (the
// other rows are not read): the image features placed where the prompt has the image tokens.
// Qwen2-VL / Qwen2.5-VL / Qwen3-VL (vision.kind not CLIP; ADR 0013). The features of one image
// whose processor rows (mx_pixels_t of rank 2) form a grid_h x grid_w patch grid: n_pixels must
// be grid_h * grid_w * C*Tp*P*P, n_features (grid_h * grid_w / m^2) * mx_vision_feature_width
// (hidden_size, and Qwen3-VL's DeepStack features after them in each row; ADR 0021). The first
// image of a grid builds (and compiles) @vision for it. Errors: a grid that is not a multiple of
// the merge size, sizes that do not match, a backend without the entry, other models.
mx_status_t mx_session_vision_grid(mx_session_t *s, const float *pixels, int64_t n_pixels,
                                   int32_t grid_h, int32_t grid_w, float *features,
                                   int64_t n_features);
// mx_session_prefill_media for an M-RoPE model, with media[n][mx_vision_feature_width] (the rows
// mx_session_vision_grid writes): positions[s * n + i] (s = 0, 1, 2: temporal, height, width)
// are token i's RoPE positions (mx_mrope_positions). The text that follows
// (mx_session_prefill, mx_session_decode) continues at mx_session_rope_next.
mx_status_t mx_session_prefill_mrope(mx_session_t *s, const int32_t *ids, const float *media,
                                     const int32_t *positions, int32_t n);
// The RoPE position of the next token: n_past, except after an M-RoPE image, whose tokens span
// fewer positions than tokens (transformers' rope_deltas).
int64_t mx_session_rope_next(const mx_session_t *s);
// transformers' get_rope_index for a prompt of n ids whose image tokens (the config's
// image_token_id) form n_images runs, one per image, of grids[2k] x grids[2k+1] patches
// (grid_h, grid_w): text token i at start + its text offset on all three rows, image tokens at
// (p, p + row, p + column) over the merged grid, p the position after the text before them;
// the text after an image continues at p + max(rows, columns). Writes positions[3 * n] and
// *next (the position after the last token). Errors: run / image counts or run lengths that do
// not match the grids.
mx_status_t mx_mrope_positions(const mx_model_config_t *cfg, const int32_t *ids, int32_t n,
                               const int32_t *grids, int32_t n_images, int64_t start,
                               int32_t *positions, int64_t *next);
mx_status_t mx_session_prefill_media(mx_session_t *s, const int32_t *ids, const float *media,
                                     int32_t n);
// Molmo2 (vision.kind MX_VISION_MOLMO2; ADR 0023). The features of one image from the
// processor's outputs (mx_pixels_t): pixel_values [crops, N, P*P*3] (n_pixels values: crops
// views of (image_size / patch_size)^2 patches) and image_token_pooling [tokens, pool] i32
// (pooling, -1 for none); features[n_features = tokens * hidden_size] receives one row per
// pooled token, in the order of the expanded prompt's <im_patch> tokens
// (mx_molmo2_expand_prompt). mx_session_prefill_media then adds row i to token i's embedding
// where the prompt has <im_patch>, every image token of an image attending to the whole image
// (one bidirectional block). A new geometry builds (and compiles) @vision for it. Errors:
// another model, sizes that do not match, pooling indices outside the patches, a backend without
// the entry.
mx_status_t mx_session_vision_pooled(mx_session_t *s, const float *pixels, int64_t n_pixels,
                                     int32_t crops, const int32_t *pooling, int32_t tokens,
                                     int32_t pool, float *features, int64_t n_features);
// The checks of mx_session_vision_pooled (shared with the batch).
mx_status_t mx_session_check_pooled_sizes(const mx_model_t *model, int64_t n_pixels, int32_t crops,
                                          const int32_t *pooling, int32_t tokens, int32_t pool,
                                          int64_t n_features);
// Gemma 3n (model->config.audio.present; ADR 0022): the rows of one recording, whose host
// log-mel features (mx_audio_log_mel) are features[frames][input_feat_size] with mask[frames]
// (nonzero: a real frame); rows receive [audio_soft_tokens_per_image][hidden_size] f32 (n_rows
// values), padded as Gemma3nModel pads them. mx_session_prefill_media then places row k at the
// prompt's k-th audio token (audio_token_id). A new frame count builds (and compiles) @audio for
// it. Errors: a model without an audio tower, a backend without it (naming them), a frame count
// whose tokens exceed audio_soft_tokens_per_image, sizes that do not match.
mx_status_t mx_session_audio(mx_session_t *s, const float *features, const uint8_t *mask,
                             int64_t frames, float *rows, int64_t n_rows);
// Logits [V] of the last token processed; valid until the next prefill/decode/reset.
const float *mx_session_logits(const mx_session_t *s);
int64_t mx_session_n_past(const mx_session_t *s);
int64_t mx_session_ctx(const mx_session_t *s);
int32_t mx_session_prefill_chunk(const mx_session_t *s);  // most tokens per backend prefill call
int32_t mx_session_vocab(const mx_session_t *s);
const mx_backend_t *mx_session_backend(const mx_session_t *s);
const mx_model_t *mx_session_model(const mx_session_t *s);
void mx_session_reset(mx_session_t *s);
// The ids the context holds, mx_session_n_past() of them (owned by the session; valid until the
// next prefill, decode, rewind or reset).
const int32_t *mx_session_tokens(const mx_session_t *s);
// Keeps the first n tokens of the context and forgets the rest (0 <= n <= n_past), so that a
// caller continues from the prefix its new token sequence shares with the old one (a chat
// re-rendered after a reply). The KV entries past n are rewritten before anything reads them;
// the logits are invalid until the next prefill or decode.
mx_status_t mx_session_rewind(mx_session_t *s, int64_t n);

// ============================================================================================
// Sampler
// ============================================================================================

typedef struct mx_sampler_params {
  float temperature;         // 0 = greedy (argmax)
  int32_t top_k;             // 0 = off
  float top_p;               // 1 = off
  float min_p;               // 0 = off
  float repetition_penalty;  // 1 = off (CTRL-style: divide positive logits, multiply negative)
  float presence_penalty;    // 0 = off (OpenAI semantics)
  float frequency_penalty;   // 0 = off
  int32_t penalty_last_n;    // how many recent tokens the penalties look at; default 64
  uint64_t seed;             // same seed + same logits -> same tokens
} mx_sampler_params_t;

// Defaults: temperature 1, top_k 0, top_p 1, min_p 0, penalties off, last_n 64, seed 0.
void mx_sampler_params_default(mx_sampler_params_t *p);

typedef struct mx_sampler mx_sampler_t;

// Validates the parameters (e.g. temperature < 0, top_p outside (0, 1], min_p outside [0, 1]
// are errors) and preallocates scratch space for `vocab` candidates.
mx_status_t mx_sampler_create(const mx_sampler_params_t *p, int32_t vocab, mx_sampler_t **out);
void mx_sampler_destroy(mx_sampler_t *s);  // accepts NULL
// Picks the next token from logits[vocab] (not modified). history: previously seen tokens
// (prompt and generated) for the penalties. No allocation.
int32_t mx_sampler_sample(mx_sampler_t *s, const float *logits, const int32_t *history,
                          int32_t n_history);
// The same among the ids whose bit is set in allow[(vocab + 31) / 32] only (constrained
// decoding, grammar.h): the others count as logit -inf before every other step. At least one
// bit must be set. No allocation.
int32_t mx_sampler_sample_masked(mx_sampler_t *s, const float *logits, const uint32_t *allow,
                                 const int32_t *history, int32_t n_history);

// Speculative decoding's acceptance step (rejection sampling, Leviathan et al. 2023 / Chen et
// al. 2023) for a draft that proposed `draft` with certainty (n-gram lookup, a greedy draft
// model: q is a point mass): with p the distribution mx_sampler_sample draws from these logits
// and this history, the draft is accepted with probability min(1, p / q) = p(draft); otherwise
// the token is drawn from norm(max(0, p - q)), p without the draft. Greedy (temperature 0): the
// argmax, accepted when it is the draft. Returns the token (the draft when *accepted); the
// tokens it returns are distributed exactly as mx_sampler_sample's. No allocation.
int32_t mx_sampler_spec_accept(mx_sampler_t *s, const float *logits, const int32_t *history,
                               int32_t n_history, int32_t draft, bool *accepted);

// ============================================================================================
// Generation loop
// ============================================================================================

// Speculative decoding (ADR 0020): a drafter proposes up to draft_tokens tokens, the model
// verifies them in one prefill call that returns the logits of every position, and the longest
// prefix its sampler accepts (mx_sampler_spec_accept) plus one token of its own are the output
// of the step; the KV rows of the rejected ones are rewound. Greedy output equals plain
// decoding's, sampled output has the same distribution.
typedef enum mx_spec_mode {
  MX_SPEC_OFF = 0,  // one decode call per token
  MX_SPEC_NGRAM,    // prompt lookup: the tokens that followed the latest earlier occurrence of
                    // the context's longest suffix of ngram_max..1 tokens
  MX_SPEC_DRAFT,    // a draft model's greedy tokens (same tokenizer), from its own session
} mx_spec_mode_t;

typedef struct mx_spec_opts {
  mx_spec_mode_t mode;
  int32_t draft_tokens;  // most tokens drafted per step (k); 0 = MX_SPEC_DEFAULT_TOKENS
  int32_t ngram_max;     // MX_SPEC_NGRAM: the longest suffix matched; 0 = MX_SPEC_DEFAULT_NGRAM
  // MX_SPEC_DRAFT: the draft model's session (borrowed; its model's tokenizer must equal the
  // target's). mx_generate rewinds and extends its context to follow the target's.
  mx_session_t *draft;
} mx_spec_opts_t;

// Default k: 7 drafts and the pending token fill one 8-token verification call (a power of two,
// ADR 0020); docs/performance.md has k = 3 and 7 side by side.
enum { MX_SPEC_DEFAULT_TOKENS = 7, MX_SPEC_DEFAULT_NGRAM = 3, MX_SPEC_MAX_TOKENS = 32 };

// MX_SPEC_DRAFT's precondition: the draft model's tokenizer has the same tokens as the target's
// (both present). An error naming the first difference otherwise.
mx_status_t mx_spec_check_draft(const mx_model_t *target, const mx_model_t *draft);

typedef struct mx_generate_opts {
  int32_t max_tokens;       // tokens to generate at most (> 0)
  bool ignore_eos;          // keep going past EOS ids
  const char *const *stop;  // stop strings (not included in the output); may be NULL
  int32_t n_stop;
  mx_sampler_params_t sampling;
  // Vision-language models: [n_prompt][mx_vision_feature_width] rows placed at the prompt's
  // image-token positions (mx_session_prefill_media / _mrope); NULL: a text prompt.
  const float *media;
  // M-RoPE models with media: the prompt's positions [3][n_prompt] (mx_mrope_positions); the
  // prompt then runs through mx_session_prefill_mrope.
  const int32_t *positions;
  // Constrained decoding (grammar.h), or NULL: a matcher bound to the tokenizer's vocabulary
  // index (mx_gmatch_bind_vocab), advanced token by token (borrowed; the caller owns it).
  // Every token is one it accepts, EOS only once the document is complete, and generation ends
  // (MX_FINISH_EOS) when the document is finished.
  struct mx_gmatch *grammar;
  // Speculative decoding (mode MX_SPEC_OFF when zeroed); not with a grammar.
  mx_spec_opts_t spec;
} mx_generate_opts_t;

typedef enum mx_finish_reason {
  MX_FINISH_LENGTH = 0,  // max_tokens reached
  MX_FINISH_EOS,         // an EOS id was sampled (not emitted as text)
  MX_FINISH_STOP,        // a stop string matched
  MX_FINISH_CALLBACK,    // the callback asked to stop
  MX_FINISH_CONTEXT,     // the context capacity is full
} mx_finish_reason_t;

typedef struct mx_generate_stats {
  int32_t n_prompt;
  int32_t n_generated;
  double prefill_seconds;
  double decode_seconds;
  mx_finish_reason_t finish;
  // Model calls after the prefill (decode or verification steps), the drafted tokens they
  // verified and those accepted: a step yields (spec_accepted + spec_steps) / spec_steps tokens.
  int32_t spec_steps;
  int32_t spec_drafted;
  int32_t spec_accepted;
} mx_generate_stats_t;

// Called once per generated token with the text it completes (possibly empty while a UTF-8
// sequence or a possible stop-string prefix is held back). When generation ends with text
// still held back (EOS after a partial stop-string match or an unfinished UTF-8 sequence), it
// is called once more with id == -1 and that text. Return false to stop.
typedef bool (*mx_token_fn)(void *user, int32_t id, const char *text, size_t len);

// Prefills `prompt` (appended to whatever the session holds) and generates. EOS ids come from
// the model config. `tok` decodes text for the callback and for stop strings.
mx_status_t mx_generate(mx_session_t *s, const mx_tokenizer_t *tok, const int32_t *prompt,
                        int32_t n_prompt, const mx_generate_opts_t *opts, mx_token_fn fn,
                        void *user, mx_generate_stats_t *stats);

const char *mx_finish_reason_name(mx_finish_reason_t r);  // "length", "eos", "stop", ...

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_SESSION_H
