// mlxcel-xla's embedding API: the small, stable C interface of libmlxcel (docs/api.md).
//
// Load a model folder once (mx_engine_open), run completions (mx_engine_complete) and chat turns
// (mx_engine_chat) on it, each streaming its text through a callback, and free it
// (mx_engine_close). This header is self-contained (standard C headers only) and declares the
// only functions the shared library exports: the other headers of include/mlxcel/ describe the
// engine's inner layers, which change freely between releases, while this API keeps its
// functions and structure layouts within a major version.
//
// Versions: MX_ENGINE_API_VERSION is what this header declares (major * 10000 + minor * 100 +
// patch), mx_engine_api_version() what the loaded library implements; the shared library's
// soname carries the major (libmlxcel.so.0). Option structures begin with their own size
// (set by the *_init functions), so a library can serve programs built against an older, shorter
// layout of the same major version.
//
// Errors: a function that can fail returns mx_engine_status_t (0 = success); the message of the
// calling thread's last failure, naming the problem ("cannot read 'DIR/config.json': No such
// file or directory", "temperature -1: must be >= 0", ...), is mx_engine_last_error(). Bad input
// is an error, never an abort or an exit.
//
// Threads: calls on one engine must not overlap (it holds one KV cache); separate engines run
// independently. The callback runs on the calling thread, between decode steps.
//
// Ownership: the engine owns everything it loads. Strings passed in are borrowed for the call;
// the text given to the callback is valid only during that call.
//
//   mx_engine_t *e = NULL;
//   if (mx_engine_open("models/stories260K", NULL, &e) != MX_ENGINE_OK) {
//     fprintf(stderr, "%s\n", mx_engine_last_error());
//     return 1;
//   }
//   mx_engine_gen_opts_t g;
//   mx_engine_gen_opts_init(e, &g);  // the model's generation_config.json defaults
//   g.max_tokens = 64;
//   mx_engine_result_t r;
//   mx_engine_complete(e, "Once upon a time", &g, print_text, NULL, &r);
//   mx_engine_close(e);
#ifndef MLXCEL_MLXCEL_H
#define MLXCEL_MLXCEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MX_ENGINE_API_VERSION_MAJOR 0
#define MX_ENGINE_API_VERSION_MINOR 1
#define MX_ENGINE_API_VERSION_PATCH 0
#define MX_ENGINE_API_VERSION                                                \
  (MX_ENGINE_API_VERSION_MAJOR * 10000 + MX_ENGINE_API_VERSION_MINOR * 100 + \
   MX_ENGINE_API_VERSION_PATCH)

#if defined(__GNUC__) && !defined(MX_ENGINE_STATIC)
#define MX_ENGINE_EXPORT __attribute__((visibility("default")))
#else
#define MX_ENGINE_EXPORT
#endif

typedef enum mx_engine_status {
  MX_ENGINE_OK = 0,
  MX_ENGINE_ERR_INVALID_ARG = 1,  // a bad argument or option value
  MX_ENGINE_ERR_PARSE = 2,        // a file could not be parsed (config, tokenizer, template)
  MX_ENGINE_ERR_VERIFY = 3,       // a model graph is ill-formed (an engine bug: please report)
  MX_ENGINE_ERR_UNSUPPORTED = 4,  // well-formed, but not something this engine runs
  MX_ENGINE_ERR_NOMEM = 5,        // out of memory
  MX_ENGINE_ERR_RUNTIME = 6,      // running failed (limits, the context is full, ...)
  MX_ENGINE_ERR_IO = 7,           // a file could not be read
} mx_engine_status_t;

typedef struct mx_engine mx_engine_t;

// How a model is loaded and run. NULL / 0 fields take the defaults.
typedef struct mx_engine_opts {
  uint32_t size;          // sizeof(mx_engine_opts_t) of the caller's header (mx_engine_opts_init)
  const char *backend;    // "cpu" (default) or "interp" (the reference interpreter)
  int32_t threads;        // 0 = the machine's physical cores
  int64_t ctx;            // KV capacity in tokens; 0 = min(max_position_embeddings, 4096)
  const char *precision;  // "f32", "f16" or "bf16"; NULL = the checkpoint's
  const char *quant;      // "none", "int8", "int4" or "mlx"; NULL = as stored
} mx_engine_opts_t;

// How one request generates. mx_engine_gen_opts_init fills the model's defaults: greedy unless
// its generation_config.json sets do_sample (then its temperature / top_k / top_p), 256 tokens.
typedef struct mx_engine_gen_opts {
  uint32_t size;             // sizeof(mx_engine_gen_opts_t) of the caller's header
  int32_t max_tokens;        // > 0; the context also bounds it
  float temperature;         // 0 = greedy
  int32_t top_k;             // 0 = off
  float top_p;               // 1 = off
  float min_p;               // 0 = off
  float repetition_penalty;  // 1 = off
  uint64_t seed;             // the same seed and prompt give the same text
  const char *const *stop;   // stop strings (not included in the text); may be NULL
  int32_t n_stop;
  bool ignore_eos;  // keep generating past end-of-sequence tokens
} mx_engine_gen_opts_t;

// A chat message; roles as the model's chat template knows them ("system", "user",
// "assistant", ...).
typedef struct mx_engine_message {
  const char *role;
  const char *content;  // UTF-8; special-token text here is text, never a control token
} mx_engine_message_t;

typedef enum mx_engine_finish {
  MX_ENGINE_FINISH_LENGTH = 0,    // max_tokens reached
  MX_ENGINE_FINISH_EOS = 1,       // the model ended its text
  MX_ENGINE_FINISH_STOP = 2,      // a stop string matched
  MX_ENGINE_FINISH_CALLBACK = 3,  // the callback asked to stop
  MX_ENGINE_FINISH_CONTEXT = 4,   // the context is full
} mx_engine_finish_t;

typedef struct mx_engine_result {
  int32_t prompt_tokens, completion_tokens;
  double prefill_seconds, decode_seconds;
  mx_engine_finish_t finish;
} mx_engine_result_t;

// Receives the text of each generated token as it becomes printable (UTF-8, whole characters;
// stop strings held back until they cannot match). Return false to stop the generation.
typedef bool (*mx_engine_text_fn)(void *user, const char *text, size_t len);

MX_ENGINE_EXPORT int mx_engine_api_version(void);
MX_ENGINE_EXPORT const char *mx_engine_last_error(void);  // "" when none; thread-local

MX_ENGINE_EXPORT void mx_engine_opts_init(mx_engine_opts_t *o);
// Loads DIR (config.json, safetensors, tokenizer.json; a Hugging Face or MLX folder) and
// prepares it to run. opts may be NULL. On failure *out is NULL.
MX_ENGINE_EXPORT mx_engine_status_t mx_engine_open(const char *dir, const mx_engine_opts_t *opts,
                                                   mx_engine_t **out);
MX_ENGINE_EXPORT void mx_engine_close(mx_engine_t *e);  // accepts NULL

MX_ENGINE_EXPORT void mx_engine_gen_opts_init(const mx_engine_t *e, mx_engine_gen_opts_t *g);

// Continues `prompt` (the tokenizer adds BOS as its post-processor says; special-token text in
// the prompt is matched, as transformers does). Each call starts from an empty context. fn may
// be NULL; result may be NULL.
MX_ENGINE_EXPORT mx_engine_status_t mx_engine_complete(mx_engine_t *e, const char *prompt,
                                                       const mx_engine_gen_opts_t *g,
                                                       mx_engine_text_fn fn, void *user,
                                                       mx_engine_result_t *result);
// Renders the messages through the model's chat template (tokenizer_config.json, with the
// assistant's turn opened) and generates the reply. A model without a template is
// MX_ENGINE_ERR_UNSUPPORTED.
MX_ENGINE_EXPORT mx_engine_status_t mx_engine_chat(
    mx_engine_t *e, const mx_engine_message_t *messages, int32_t n_messages,
    const mx_engine_gen_opts_t *g, mx_engine_text_fn fn, void *user, mx_engine_result_t *result);

#ifdef __cplusplus
}
#endif

#endif  // MLXCEL_MLXCEL_H
