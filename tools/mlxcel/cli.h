// mlxcel command-line tool: shared declarations between the dispatcher and the commands.
#ifndef MLXCEL_TOOLS_CLI_H
#define MLXCEL_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "mlxcel/chat.h"
#include "mlxcel/hlo.h"
#include "mlxcel/image.h"
#include "mlxcel/model.h"
#include "mlxcel/session.h"
#include "mlxcel/tokenizer.h"

// Seconds on the monotonic clock (for the commands' timings) and the index of the largest of
// x[0..n) (the first of equals: greedy decoding) (cli_util.c).
double mx_cli_now(void);
int32_t mx_cli_argmax(const float *x, int32_t n);

#ifndef MLXCEL_VERSION
#define MLXCEL_VERSION "0.1.0-dev"
#endif

// Process exit statuses shared by every command (documented in `mlxcel --help`).
enum {
  MX_EXIT_OK = 0,      // everything ran (and, with --check, no case failed)
  MX_EXIT_FAILED = 1,  // a case failed, errored, or could not be run
  MX_EXIT_USAGE = 2,   // bad command line
  MX_EXIT_IO = 3,      // an input file could not be read
};

// A subcommand: argv[0] is the subcommand name; returns a process exit status.
typedef int (*mx_cli_cmd_fn)(int argc, char **argv);

int mx_cli_cmd_run(int argc, char **argv);
void mx_cli_run_usage(FILE *out);
// `mlxcel run --weights DIR FILE.mlir` (run_weights.c).
enum { MX_RUN_MAX_INPUTS = 8 };
typedef struct mx_run_weights_opts {
  const char *weights;  // checkpoint directory
  const char *path;     // the .mlir file
  const char *func;     // NULL: the only public function, else @main
  const char *ids;      // "1,2,3" for the tokens argument; may be NULL
  int64_t pos0;
  bool json;
  const char *npy;  // write the first result here as .npy; may be NULL
  // --input NAME=FILE: the argument whose mx.name is NAME takes FILE's raw little-endian bytes
  // (pixels, media rows, positions, ...); the strings are argv's.
  const char *inputs[MX_RUN_MAX_INPUTS];
  int32_t n_inputs;
  // --quant / --group-size given: load the model with these options (requantized weights exist
  // only in memory) instead of binding the checkpoint's tensors as stored.
  bool has_quant;
  mx_model_load_opts_t load;
} mx_run_weights_opts_t;
int mx_cli_run_weights(const mx_run_weights_opts_t *o);

int mx_cli_cmd_generate(int argc, char **argv);
int mx_cli_cmd_tokenize(int argc, char **argv);
int mx_cli_cmd_template(int argc, char **argv);
int mx_cli_cmd_detokenize(int argc, char **argv);
int mx_cli_cmd_logits(int argc, char **argv);
int mx_cli_cmd_emit(int argc, char **argv);
int mx_cli_cmd_mkmodel(int argc, char **argv);
int mx_cli_cmd_bench(int argc, char **argv);
int mx_cli_cmd_quantize(int argc, char **argv);
int mx_cli_cmd_diff(int argc, char **argv);
int mx_cli_cmd_serve(int argc, char **argv);
int mx_cli_cmd_chat(int argc, char **argv);
int mx_cli_cmd_compile(int argc, char **argv);
int mx_cli_cmd_image(int argc, char **argv);

// ---- The files emit and compile write (emit_files.c) ----

// Appends the module restricted to its public function `name` and every private function (the
// composite decompositions) to sb; the entry is printed as @as_name (NULL: its own name) and
// private when as_private. The module is left as it was.
mx_status_t mx_cli_print_entry(mx_module_t *m, const char *name, const mx_print_opts_t *po,
                               const char *as_name, bool as_private, mx_strbuf_t *sb);
// Writes sb's bytes to path (MX_ERR_IO naming the path).
mx_status_t mx_cli_write_text(const char *path, const mx_strbuf_t *sb);
// Writes the tensors bound to the weight arguments of the module's public functions (each name
// once) to `path` as safetensors named by mx.name, in the types the graph declares; a weight
// the loaded checkpoint `ck` holds in another type is an error. *n_written (may be NULL): count.
mx_status_t mx_cli_write_params(const mx_module_t *m, const mx_checkpoint_t *ck, const char *path,
                                int32_t *n_written);
// Loads the model in dir as the graphs will run it (lo: precision and quantization; the
// tokenizer is optional) into *model (caller frees with mx_model_free, also on failure) and
// resolves *ctx (0: mx_cli_default_ctx) against max_position_embeddings. Prints the message and
// returns the exit status.
int mx_cli_load_for_graphs(const char *cmd, const char *dir, mx_model_load_opts_t *lo, int64_t *ctx,
                           mx_model_t **model);
// Creates `dir` unless it is a directory already; prints "mlxcel CMD: ..." and returns
// MX_EXIT_IO when it cannot.
int mx_cli_make_outdir(const char *cmd, const char *dir);

// ---- IREE deployables (compile_iree.c) ----

typedef struct mx_cli_iree_target {
  const char *device;        // local-task, cuda, hip, vulkan, metal (iree-run-module's names)
  const char *target_cpu;    // local-task: LLVM CPU name; NULL: "host"
  const char *rocm_target;   // hip: the GPU's gfx name (required there)
  const char *const *extra;  // further iree-compile flags, passed as given (n_extra of them)
  int32_t n_extra;
} mx_cli_iree_target_t;
bool mx_cli_iree_device_known(const char *device);
// Appends the iree-compile flags of the target to flags, one per line; MX_ERR_INVALID_ARG for
// an unknown device, a missing ROCm target on hip, or a CPU / ROCm target on another device.
mx_status_t mx_cli_iree_flags(const mx_cli_iree_target_t *t, mx_strbuf_t *flags);
// Appends to `text` the deployable module of the public function `entry` of m: the module named
// module_name, the entry private as @ENTRY_graph, each weight argument a util.global bound to
// the IREE parameter SCOPE::mx.name, and a public @ENTRY taking the other arguments (tokens,
// pos0, caches, with their cache aliasing) that loads the globals and calls it. Appends to json
// the fields describing the entry (no braces): "function", "inputs": [{"name", "type"}],
// "results" (types as iree-run-module spells them, 1x8xi32) and "weights" (their count).
// m is left as it was.
mx_status_t mx_cli_iree_entry(mx_module_t *m, const char *entry, const char *module_name,
                              const char *scope, const mx_print_opts_t *po, mx_strbuf_t *text,
                              mx_strbuf_t *json);
// The iree-compile to run into path[cap]: `named` when given (a path, or a name looked up on
// PATH), else the one on PATH, else the test environment's. MX_ERR_IO saying where it looked.
mx_status_t mx_cli_iree_find(const char *named, char *path, size_t cap);
// Looks `name` up on PATH (from_env: the message says MLXCEL_XLA_IREE_COMPILE named it).
mx_status_t mx_cli_iree_find_on_path(const char *name, char *path, size_t cap, bool from_env);
// Runs `compiler FLAGS... in -o out` (flags one per line) and appends its merged stdout and
// stderr to output; MX_ERR_RUNTIME with the exit status and the output's tail when it fails.
mx_status_t mx_cli_iree_run(const char *compiler, const char *flags, const char *in,
                            const char *out, mx_strbuf_t *output);

// ---- Option parsing helpers (args.c); every helper prints its own message on failure ----

// Matches argv[*i] against the value option `name` (and `alias`, may be NULL), written
// "--name VALUE" or "--name=VALUE". Returns 1 and sets *val (advancing *i past a separate
// value) on a match, 0 when argv[*i] is not this option, -1 when the value is missing.
int mx_cli_opt(int argc, char **argv, int *i, const char *cmd, const char *name, const char *alias,
               const char **val);
// Strict number parsing: the whole string, within [lo, hi]. Message names the option.
bool mx_cli_parse_int(const char *cmd, const char *opt, const char *s, int64_t lo, int64_t hi,
                      int64_t *out);
bool mx_cli_parse_float(const char *cmd, const char *opt, const char *s, float *out);
// Parses "1,2,3" (commas and/or spaces) into a heap array (caller frees). At least one id;
// each in [0, INT32_MAX].
bool mx_cli_parse_ids(const char *cmd, const char *opt, const char *s, int32_t **ids, int32_t *n);
// Parses a --precision / --kv-dtype value (f32, f16, bf16) into *out; prints the message and
// returns false otherwise.
bool mx_cli_parse_dtype(const char *cmd, const char *opt, const char *s, mx_elem_type_t *out);
// The usage lines of --precision and --kv-dtype, shared by the model commands: P pads
// "  --precision T" to the command's description column, C is that column's indentation.
#define MX_CLI_PRECISION_USAGE(P, C)                                             \
  "  --precision T" P "matmul precision: f32, f16 or bf16 (weights resident\n" C \
  "in T, f32 accumulation); default: $MLXCEL_XLA_PRECISION, else\n" C            \
  "the checkpoint's weight dtype\n"                                              \
  "  --kv-dtype T " P "KV-cache dtype: f32, f16 or bf16; default:\n" C           \
  "$MLXCEL_XLA_KV_DTYPE, else the precision\n"
// Checks that `dir` is a readable directory holding `file` (e.g. "config.json"); prints
// "mlxcel CMD: cannot read model directory ..." and returns false otherwise.
bool mx_cli_check_model_dir(const char *cmd, const char *dir, const char *file);
// Weight quantization options of the model-loading commands: `--quant MODE` (auto, none,
// int8, int4, mlx) and `--group-size N` (32, 64, 128) into lo->quant / lo->group_size. Returns 1
// when argv[*i] was one of them, 0 when not, -1 on a missing or bad value (message printed).
int mx_cli_quant_opt(int argc, char **argv, int *i, const char *cmd, mx_model_load_opts_t *lo);
// Their help lines (two options, 24-column option field).
#define MX_CLI_QUANT_HELP                                                                 \
  "  --quant MODE           weights: none, int8, int4 (quantized once at load), mlx\n"    \
  "                         (an MLX-quantized checkpoint as stored); default: auto =\n"   \
  "                         $MLXCEL_XLA_QUANT, else mlx for MLX checkpoints, else none\n" \
  "  --group-size N         int8 / int4 group size: 32, 64 (default) or 128\n"
// Precision options of the model-loading commands: `--precision T` and `--kv-dtype T` (f32,
// f16, bf16) into lo->precision / lo->kv_dtype. Returns 1 when argv[*i] was one of them, 0 when
// not, -1 on a missing or bad value (message printed).
int mx_cli_precision_opt(int argc, char **argv, int *i, const char *cmd, mx_model_load_opts_t *lo);
// Help lines of --pjrt-plugin (25-column layout of generate, chat and serve).
#define MX_CLI_PJRT_HELP                                                                        \
  "  --pjrt-plugin PATH     the xla backend's PJRT plugin (default: $MLXCEL_XLA_PJRT_PLUGIN,\n" \
  "                         else the installed plugin of $MLXCEL_XLA_DEVICE: cpu, cuda,\n"      \
  "                         rocm or tpu)\n"
// --pjrt-plugin PATH (the xla backend's plugin) into xo->plugin. Returns as mx_cli_opt.
int mx_cli_pjrt_opt(int argc, char **argv, int *i, const char *cmd, mx_xla_backend_opts_t *xo);
// Exit status for a failed library call: MX_EXIT_IO for MX_ERR_IO, else MX_EXIT_FAILED.
int mx_cli_exit_for(mx_status_t st);
// Prints "mlxcel CMD: error: <mx_error_message()>" and returns mx_cli_exit_for(st).
int mx_cli_fail(const char *cmd, mx_status_t st);
// Prints "mlxcel CMD: MESSAGE", a blank line and the usage; returns MX_EXIT_USAGE.
int mx_cli_usage_error(const char *cmd, void (*usage)(FILE *), const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// ---- The environment (env.c): the only place that reads it; flags override variables ----

// Prints the variables command `cmd` reads ("Environment:" and one row each; nothing when it
// reads none), or with cmd NULL every variable and the commands reading it (mlxcel --help).
void mx_cli_env_usage(FILE *out, const char *cmd);

// KV capacity when no --ctx is given: $MLXCEL_XLA_CONTEXT_CAPACITY, else
// min(max_position_embeddings, 4096). Returns false (message printed) on a bad variable.
bool mx_cli_default_ctx(const char *cmd, int64_t max_position_embeddings, int64_t *ctx);
// Fills what the flags left unset: *backend (NULL) from $MLXCEL_BACKEND, bo->threads (0) from
// $MLXCEL_THREADS (1..256), bo->cpu.profile from $MLXCEL_CPU_PROFILE (set and not "0") and
// bo->cpu.quant_kernel as mx_cli_qkernel_env. For the xla backend also bo->device from
// $MLXCEL_XLA_DEVICE, bo->xla.plugin from $MLXCEL_XLA_PJRT_PLUGIN or else the installed plugin
// package of the device kind, and bo->xla.cache_dir from $MLXCEL_XLA_CACHE_DIR ("none": no
// cache; default $XDG_CACHE_HOME/mlxcel/xla or ~/.cache/mlxcel/xla). Errors name the variable
// and say what to set.
mx_status_t mx_cli_backend_env(const char **backend, mx_backend_opts_t *bo);
// *k (when AUTO) from $MLXCEL_QUANT_KERNEL: auto, exact, vnni16 or vnni.
mx_status_t mx_cli_qkernel_env(mx_cpu_qkernel_t *k);
// What the flags left unset of the model-load options: lo->quant (AUTO) from $MLXCEL_XLA_QUANT,
// lo->precision and lo->kv_dtype (MX_ELEM_INVALID) from $MLXCEL_XLA_PRECISION and
// $MLXCEL_XLA_KV_DTYPE. Errors name the variable.
mx_status_t mx_cli_load_env(mx_model_load_opts_t *lo);
// mx_model_load_ex(dir, lo with mx_cli_load_env applied): how every command loads a model.
// progress: show the load progress line (mx_cli_progress) when stderr is a terminal.
mx_status_t mx_cli_model_load(const char *dir, const mx_model_load_opts_t *lo, bool progress,
                              mx_model_t **out);

// ---- The load progress line (progress.c) ----

// The hook drawing the progress line on stderr when `wanted` (not -q, not --json) and stderr is
// a terminal; a zero hook (no reports) otherwise. Put it in the load or backend options.
mx_progress_t mx_cli_progress(bool wanted);
// Erases the line, if one is drawn; call when the step reporting to the hook returned.
void mx_cli_progress_end(void);
// *ctx (when 0) from $MLXCEL_XLA_CONTEXT_CAPACITY: a positive integer, at most
// max_position_embeddings; unset or empty leaves it 0 (the library's default).
mx_status_t mx_cli_ctx_env(int64_t max_position_embeddings, int64_t *ctx);
// mlxcel compile's target from what the flags left NULL: *device from $MLXCEL_XLA_DEVICE
// (checked: local-task, cuda, hip, vulkan, metal; else "local-task"), *rocm_target from
// $MLXCEL_XLA_ROCM_TARGET when the device is hip, *iree_compile from $MLXCEL_XLA_IREE_COMPILE
// (else NULL). Unset or empty means not given. Errors name the variable.
mx_status_t mx_cli_compile_env(const char **device, const char **rocm_target,
                               const char **iree_compile);
// $PATH ("" when unset), to find programs the way a shell does (mlxcel compile's iree-compile).
const char *mx_cli_path_env(void);
// MLXCEL_XLA_VISION_BACKEND into *name when no --vision-backend gave one (an unknown backend
// name is an error naming the variable).
mx_status_t mx_cli_vision_backend_env(const char **name);
// The above (backend, vision backend, context) on a session's options.
mx_status_t mx_cli_session_env(const mx_model_config_t *cfg, mx_session_opts_t *so);

// Sampling flags shared by generate and chat: --temp, --top-k, --top-p, --min-p,
// --repeat-penalty, --seed.
typedef struct mx_cli_sampling {
  int64_t top_k, seed;
  float temp, top_p, min_p, repeat_penalty;
  bool has_temp, has_top_k, has_top_p, has_min_p, has_repeat, has_seed;
} mx_cli_sampling_t;
// Matches argv[*i] against the sampling flags: 1 matched (value parsed into *s), 0 not one of
// them, -1 missing or bad value (message printed).
int mx_cli_sampling_opt(int argc, char **argv, int *i, const char *cmd, mx_cli_sampling_t *s);
// The help lines of the sampling flags.
void mx_cli_sampling_help(FILE *out);
// Sampler parameters: library defaults, then generation_config.json (temperature 1.0 when it
// sets only top_p/top_k; greedy when it sets none), then the flags (a filter flag without
// --temp on a greedy default samples at 1.0). Without --seed, a fresh seed.
void mx_cli_sampling_params(const mx_cli_sampling_t *s, const mx_model_config_t *cfg,
                            mx_sampler_params_t *p);

// ---- Speculative decoding flags of generate and chat (spec_args.c; ADR 0020) ----

// --speculative ngram|draft, --draft-tokens K, --draft-model DIR (which alone means draft).
typedef struct mx_cli_spec {
  const char *mode, *draft_dir;
  int64_t draft_tokens;  // 0 = the library's default
} mx_cli_spec_t;
// Matches argv[*i] against them: as mx_cli_sampling_opt.
int mx_cli_spec_opt(int argc, char **argv, int *i, const char *cmd, mx_cli_spec_t *s);
// Their help lines (25-column layout of generate and chat).
void mx_cli_spec_help(FILE *out);
// What the flags ask for, made: *o (mode off without flags) and, for a draft model, the model
// (loaded with the target's load options lo) and its session (the target's session options so)
// in *draft / *ds, both the caller's to free (mx_session_destroy, mx_model_free). A bad mode,
// a combination that makes no sense, a draft model that cannot load or whose tokenizer differs
// are errors printed as "mlxcel CMD: ..."; returns an exit status.
int mx_cli_spec_setup(const char *cmd, const mx_cli_spec_t *s, const mx_model_t *target,
                      const mx_model_load_opts_t *lo, const mx_session_opts_t *so,
                      mx_spec_opts_t *o, mx_model_t **draft, mx_session_t **ds);
// The stats line's part about speculation ("" when it was off) into buf[n]: tokens per model
// call and the drafts accepted.
void mx_cli_spec_stats(const mx_spec_opts_t *o, const mx_generate_stats_t *st, char *buf, size_t n);

// Compiles the chat template of the model in `dir`; when it has none, prints "mlxcel CMD:
// error: model DIR has no chat_template in tokenizer_config.json; WHAT needs one" (and a
// compile error as mx_cli_fail does). Returns an exit status.
int mx_cli_chat_template(const char *cmd, const char *what, const char *dir,
                         const mx_tokenizer_t *tok, mx_chat_template_t **out);

// ---- Audio in (audio_in.c; ADR 0022) ----
// --audio on a model without an audio tower: the error (exit 2, naming the model_type).
int mx_cli_audio_check(const char *cmd, const mx_model_t *m, int32_t n_audio);
// The prompt text with its audio placeholders (the audio token's text) expanded as
// Gemma3nProcessor does: "\n\n<boa>", audio_soft_tokens_per_image placeholders, "<eoa>\n\n"; a
// prompt without any gets one per recording at its start (*out heap, the caller frees).
// Placeholder counts other than n_audio: exit 2.
int mx_cli_audio_text(const char *cmd, const mx_model_t *m, int32_t n_audio, const char *text,
                      char **out);
// The media rows [n][H] of prompt ids (*media heap, the caller frees): recording k (paths[k]: a
// WAV file, decoded, resampled and featurized on the host) through the session's @audio at the
// k-th run of audio tokens; *tower_s the time that took. The runs must be audio_soft_tokens_per_
// image long, one per recording (exit 2 otherwise); a bad file fails naming it.
// One recording's rows [audio_soft_tokens_per_image][H] (*rows heap, the caller frees) through
// the session's @audio (chat's /audio); *tower_s the time. Returns an exit status.
int mx_cli_audio_rows(const char *cmd, mx_session_t *s, const char *path, float **rows,
                      double *tower_s);
int mx_cli_prompt_audio(const char *cmd, const mx_model_t *m, mx_session_t *s,
                        const char *const *paths, int32_t n_audio, const int32_t *ids, int32_t n,
                        float **media, double *tower_s);

// ---- Images in (images.c; ADR 0010) ----

// Gemma 3 (mx_vision_blocks): the prompt text as Gemma3Processor writes it before tokenizing
// (mx_chat_expand_images), a prompt without a <start_of_image> getting one per image at its
// start; other models' text is copied. *out: heap. Returns an exit status (errors printed: a
// placeholder count other than n_images).
int mx_cli_image_text(const char *cmd, const mx_model_t *m, int32_t n_images, const char *text,
                      char **out);
// One image's features: decodes and preprocesses PATH with `proc` and runs the session's vision
// tower: *features (heap, the caller frees) [*count][mx_vision_feature_width], *count the
// image's tokens (tokens_per_image, or the Qwen towers' merged units of its patch grid, grid[0]
// x grid[1]; 0 x 0 for the fixed-size towers); *seconds gains the tower's time. Errors printed
// as "mlxcel CMD: error: ..."; returns an exit status.
int mx_cli_image_features(const char *cmd, const mx_model_t *m, mx_session_t *s,
                          const mx_image_proc_t *proc, const char *path, float **features,
                          int32_t *count, int32_t grid[2], double *seconds);
// --image PATH...: expands the prompt's image placeholders (one image token per image, in
// order; a prompt with none gets them at its start) to tokens_per_image tokens each (*ids /
// *n replaced), decodes and preprocesses each image (preprocessor_config.json) and runs the
// session's vision tower on it: *media (heap, caller frees) holds [*n][hidden] rows, each
// image's features at its tokens; Qwen2-VL / Qwen2.5-VL (ADR 0013): each image's grid decides
// its token count, its run is wrapped in <|vision_start|> / <|vision_end|> where the prompt
// lacks them, and *positions (heap, caller frees; NULL for other models) gets the prompt's
// M-RoPE positions [3][*n]. Errors (printed as "mlxcel CMD: error: ..."): a model
// without images, placeholders that do not match the images, an unreadable or hostile image,
// pixels the tower does not take. *tower_seconds: the time of the vision tower calls (the
// first one includes building and compiling the media entries). Returns an exit status.
int mx_cli_prompt_images(const char *cmd, const mx_model_t *m, mx_session_t *s,
                         const char *const *paths, int32_t n_images, int32_t **ids, int32_t *n,
                         float **media, int32_t **positions, double *tower_seconds);

// Molmo2Processor's prompt (images.c): a BOS first where the tokenizer gave none, one <|image|>
// per image after it where the prompt has none, then each <|image|> expanded to its image's
// views (px[i].image_grid, the processor's options). *ids (heap) is replaced. Errors printed;
// returns an exit status.
int mx_cli_molmo2_prompt(const char *cmd, const mx_model_t *m, const mx_pixels_t *px,
                         int32_t n_images, int32_t **ids, int32_t *n);

// ---- bench --image (bench_image.c) ----

// The one-image prompt of `bench --image`: "Describe the image." after the image, tokenized
// (Gemma 3: its image expanded in the text first), and the image's size and token count.
typedef struct mx_bench_image {
  const char *path;           // borrowed
  int32_t width, height;      // as decoded
  int32_t grid[2];            // the Qwen towers' patch grid; 0 x 0 for the fixed-size towers
  int32_t image_tokens;       // the image's tokens in the prompt
  int32_t *text_ids, n_text;  // heap (mx_cli_bench_image_free): the prompt before expansion
  // Molmo2: its crops (the global view's included), and the expanded prompt's length (its
  // image's tokens are image_tokens: the pooled features' <im_patch> with the start, column and
  // end tokens around them); 0 for the other towers.
  int32_t crops, n_prompt;
} mx_bench_image_t;

typedef struct mx_bench_image_rep {
  int32_t prompt_tokens;  // with the image's tokens
  double tower_s;         // the vision tower
  double ttft_s;          // image decoding and preprocessing, tower, prompt, first token
  double prefill_s;       // the prompt with the image's features, and the first token
  double decode_tok_s;    // the decode steps after the first token
} mx_bench_image_rep_t;

// Reads the image and the processor (the model's preprocessor_config.json) and tokenizes the
// prompt. Errors printed as "mlxcel CMD: error: ..." (a model without a vision tower or a
// tokenizer, an unreadable image); returns an exit status.
int mx_cli_bench_image_prompt(const char *cmd, const mx_model_t *m, const char *path,
                              mx_bench_image_t *out);
void mx_cli_bench_image_free(mx_bench_image_t *b);
// One rep on a reset session: the prompt with its image (mx_cli_prompt_images: decode,
// preprocess, tower), its prefill through the media entry, the greedy first token, then `gen`
// greedy decode steps, timed. Errors printed; returns an exit status.
int mx_cli_bench_image_rep(const char *cmd, const mx_model_t *m, mx_session_t *s,
                           mx_bench_image_t *b, int64_t gen, mx_bench_image_rep_t *r);

// ---- bench --audio (bench_audio.c) ----

// Gemma 3n's one-recording prompt of `bench --audio`: its audio sequence, then "Describe the
// audio.", expanded as Gemma3nProcessor does and tokenized; the recording's length and frames.
typedef struct mx_bench_audio {
  const char *path;        // borrowed
  double seconds;          // the recording's length at the feature extractor's rate
  int64_t frames;          // its log-mel frames
  int32_t audio_tokens;    // the audio tokens in the prompt (audio_soft_tokens_per_image)
  int32_t *ids, n, start;  // heap (mx_cli_bench_audio_free): the prompt; its audio run's start
} mx_bench_audio_t;

typedef struct mx_bench_audio_rep {
  double mel_s;         // the WAV read, resampled and featurized on the host
  double tower_s;       // the audio tower (@audio)
  double ttft_s;        // features, tower, the prompt's prefill, the first token
  double prefill_s;     // the prompt with the audio rows, and the first token
  double decode_tok_s;  // the decode steps after the first token
} mx_bench_audio_rep_t;

// Reads and featurizes the recording once and tokenizes the prompt. Errors printed as "mlxcel
// CMD: error: ..." (a model without an audio tower, without a tokenizer, an unreadable or
// hostile file); returns an exit status.
int mx_cli_bench_audio_prompt(const char *cmd, const mx_model_t *m, const char *path,
                              mx_bench_audio_t *out);
void mx_cli_bench_audio_free(mx_bench_audio_t *b);
// One rep on a reset session: the features, the tower, the prompt's prefill through the media
// entry, the greedy first token, then `gen` greedy decode steps, timed. Errors printed; returns
// an exit status.
int mx_cli_bench_audio_rep(const char *cmd, const mx_model_t *m, mx_session_t *s,
                           const mx_bench_audio_t *b, int64_t gen, mx_bench_audio_rep_t *r);

// Writes a C-order .npy file (format v1.0) of `elem`-byte little-endian elements with numpy's
// type string `descr` ("<f4", "|u1").
mx_status_t mx_cli_write_npy(const char *path, const char *descr, size_t elem, const void *data,
                             const int64_t *dims, int32_t rank);
// Writes a float32 C-order .npy file (format v1.0, '<f4').
mx_status_t mx_cli_write_npy_f32(const char *path, const float *data, const int64_t *dims,
                                 int32_t rank);

// Appends an MLIR-like rendering of a tensor value: `dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>`
// (tuples as `(v0, v1)`, tokens as `!stablehlo.token`).
void mx_cli_format_tensor(const mx_tensor_t *t, mx_strbuf_t *sb);
// Reads the whole of `path` (`-`: standard input) into *text (heap, NUL-terminated, caller
// frees) and *len; on failure prints "mlxcel CMD: ..." and returns an exit status.
int mx_cli_read_input(const char *cmd, const char *path, char **text, size_t *len);
// Appends `s` as a JSON string literal (quotes included).
void mx_cli_json_string(mx_strbuf_t *sb, const char *s);
// Same for `len` bytes that may hold NULs or incomplete UTF-8 (written as \u0000 / \ufffd).
void mx_cli_json_string_n(mx_strbuf_t *sb, const char *s, size_t len);

#endif  // MLXCEL_TOOLS_CLI_H
