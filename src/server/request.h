// Private to src/server/ (and its tests and fuzz target): OpenAI request bodies parsed into a
// plain struct, with no HTTP in sight. Every rejection is an mx_server_error_t carrying the HTTP
// status, the OpenAI error type, the offending parameter and a message naming the problem.
//
// Hostile input is bounded: the body size, the JSON nesting depth (checked by a scan before
// cJSON recurses), max_tokens, the number and length of stop strings and of chat messages.
// Unknown fields are ignored (clients send extras), null means absent, every known field is
// type-checked strictly.
#ifndef MLXCEL_SERVER_REQUEST_H
#define MLXCEL_SERVER_REQUEST_H

#include "mlxcel/chat.h"
#include "mlxcel/session.h"

typedef enum mx_server_kind {
  MX_SERVER_COMPLETION = 0,  // POST /v1/completions
  MX_SERVER_CHAT,            // POST /v1/chat/completions
} mx_server_kind_t;

typedef struct mx_server_limits {
  size_t max_body;            // bytes of a request body (413 beyond)
  int32_t max_depth;          // JSON nesting
  int32_t max_tokens;         // largest max_tokens accepted (the server passes its context)
  int32_t max_stop;           // stop strings per request
  size_t max_stop_len;        // bytes per stop string
  int32_t max_messages;       // chat messages per request
  int32_t max_prompt_ids;     // token ids in a prompt given as an array
  int32_t vocab;              // token ids in a prompt are below this; 0 = unknown (INT32_MAX)
  int32_t max_images;         // image_url parts per chat request (400 beyond)
  int64_t max_image_pixels;   // width * height of one decoded image (413 beyond)
  int32_t max_audio;          // input_audio parts per chat request (400 beyond)
  int64_t max_audio_samples;  // samples per channel of one WAV (413 beyond); 0: the reader's
} mx_server_limits_t;

// Defaults: body 1 MiB, depth 32, max_tokens 1 << 20, 16 stop strings of at most 256 bytes,
// 1024 messages, 1 << 20 prompt ids, 8 images of at most 4096 x 4096 pixels, 8 recordings.
void mx_server_limits_default(mx_server_limits_t *lim);

typedef struct mx_server_error {
  int http_status;    // 400, 401, 404, 413, 500, 503, ...
  const char *type;   // OpenAI error type: "invalid_request_error", "server_error", ...
  const char *param;  // the offending field or NULL (static strings)
  const char *code;   // e.g. "model_not_found", "context_length_exceeded" or NULL
  char message[512];
} mx_server_error_t;

// Fills *err and returns MX_ERR_INVALID_ARG (for `return`).
mx_status_t mx_server_error_set(mx_server_error_t *err, int http_status, const char *type,
                                const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

// response_format (chat).
typedef enum mx_server_format {
  MX_SERVER_FORMAT_TEXT = 0,
  MX_SERVER_FORMAT_JSON_OBJECT,  // {"type": "json_object"}: any JSON object
  MX_SERVER_FORMAT_JSON_SCHEMA,  // {"type": "json_schema", "json_schema": {"schema": ...}}
} mx_server_format_t;

// tool_choice (chat; auto when absent).
typedef enum mx_server_tool_choice {
  MX_SERVER_TOOLS_AUTO = 0,  // the model may call: its output is parsed for calls
  MX_SERVER_TOOLS_NONE,      // no calls: the output is text
  MX_SERVER_TOOLS_REQUIRED,  // one call of any tool, constrained to the call format
  MX_SERVER_TOOLS_NAMED,     // one call of tool_choice_name, constrained
} mx_server_tool_choice_t;

typedef struct mx_server_request {
  mx_server_kind_t kind;
  char *model;  // NULL when absent (the served model is meant)
  // Completions: the prompt as text, or as token ids (exactly one of the two is set).
  char *prompt;
  size_t prompt_len;
  int32_t *prompt_ids;
  int32_t n_prompt_ids;
  // Chat: messages with string content (parts arrays joined), roles as given; fields[i] is the
  // message's other fields the template may read (tool_calls with their arguments parsed into
  // objects, tool_call_id, name) as a JSON object text, or NULL.
  char **roles, **contents, **fields;
  int32_t n_messages;
  // Chat: the images of image_url parts (data URLs, decoded to their PNG / JPEG file bytes), in
  // the order of the messages and their parts; a message with images has MX_SERVER_IMAGE_MARK
  // where each image was in contents[i] (the text parts joined).
  uint8_t **images;
  size_t *image_lens;
  int32_t n_images;
  // Chat: the recordings of input_audio parts (base64 WAV files, decoded to their bytes), in
  // order; MX_SERVER_AUDIO_MARK where each was in contents[i] (ADR 0022).
  uint8_t **audio;
  size_t *audio_lens;
  int32_t n_audio;
  // Chat: structured output and tools (request_tools.c). format_schema: json_schema.schema as
  // compact JSON text. tools_json: the `tools` list as sent (the template's `tools`), NULL when
  // there are none; tool_names[i] / tool_params[i] (parameters as compact JSON text) per tool.
  mx_server_format_t format;
  char *format_schema;
  char *tools_json;
  char **tool_names, **tool_params;
  int32_t n_tools;
  mx_server_tool_choice_t tool_choice;
  char *tool_choice_name;
  int32_t max_tokens;  // 0 = not given
  mx_sampler_params_t sampling;
  bool has_seed;
  char **stop;  // [n_stop] non-empty strings
  int32_t n_stop;
  bool stream;
  bool include_usage;  // stream_options.include_usage
  bool ignore_eos;     // extension (as llama.cpp's): keep going past EOS ids (benchmarks)
  // Extension (completions): "split_special_tokens": true encodes special-token text in the
  // prompt as plain text (transformers' tokenizer option of that name); absent = the server's.
  bool split_special, has_split_special;
  // Extension: "speculative" (ADR 0024), speculative decoding for this request: "ngram" /
  // "draft_model" / true or "off" / false, or {"method": "ngram" | "draft_model" | "off",
  // "num_speculative_tokens": K, "prompt_lookup_max": G} (vLLM's speculative_config names).
  // has_spec when given (else the server's --speculative decides); spec_method the method named
  // (MX_SPEC_OFF when on without one: the server's); spec_tokens / spec_ngram 0 when not given.
  bool has_spec, spec_on;
  mx_spec_mode_t spec_method;
  int32_t spec_tokens, spec_ngram;
} mx_server_request_t;

// Where an image was in a message's content text (U+FDD2, a noncharacter): the prompt builder
// puts the model's image placeholder there. Text of a request with images may not hold it.
#define MX_SERVER_IMAGE_MARK MX_CHAT_IMAGE_MARK
// Where a recording was (U+FDD3, MX_CHAT_AUDIO_MARK); the same rule.
#define MX_SERVER_AUDIO_MARK MX_CHAT_AUDIO_MARK

// One image_url content part (a cJSON *) of message i, part j: a data URL of a PNG or JPEG
// (data:image/png;base64,... / data:image/jpeg;base64,...) decoded into *data (heap, the caller
// frees) / *len (request_images.c). Any other URL is a 400 saying the server never fetches.
mx_status_t mx_server_image_part(const void *part, int32_t i, int32_t j, uint8_t **data,
                                 size_t *len, mx_server_error_t *err);
// One input_audio content part of message i, part j (OpenAI's {"type": "input_audio",
// "input_audio": {"data": "<base64>", "format": "wav"}}): the base64 data decoded into *data
// (heap, the caller frees) / *len. A format other than "wav" or bad base64 is a 400 naming it.
mx_status_t mx_server_audio_part(const void *part, int32_t i, int32_t j, uint8_t **data,
                                 size_t *len, mx_server_error_t *err);

// Parses `len` bytes of a request body for `kind`. On success *out owns its strings (free with
// mx_server_request_free); on failure *out is zeroed, *err says why and the return is not MX_OK.
mx_status_t mx_server_request_parse(const char *body, size_t len, mx_server_kind_t kind,
                                    const mx_server_limits_t *lim, mx_server_request_t *out,
                                    mx_server_error_t *err);
void mx_server_request_free(mx_server_request_t *r);  // accepts a zeroed struct

// Chat's response_format, tools, tool_choice and the messages' extra fields (request_tools.c;
// called by mx_server_request_parse). root is the request object (a cJSON *).
mx_status_t mx_server_request_parse_tools(const void *root, mx_server_request_t *r,
                                          mx_server_error_t *err);

#endif  // MLXCEL_SERVER_REQUEST_H
