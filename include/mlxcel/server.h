// mlxcel-xla HTTP server: an OpenAI-compatible API over one model (mlxcel serve).
//
// Endpoints: GET /v1/models, POST /v1/completions, POST /v1/chat/completions (non-streaming,
// or Server-Sent Events with OpenAI's chunk objects ending with `data: [DONE]`), GET /health,
// GET /metrics (Prometheus text). Up to `parallel` requests decode together in one batched graph
// call per step (continuous batching, batch.h); more wait in a bounded queue. Errors are
// OpenAI's error JSON with the matching HTTP status. HTTP is libmicrohttpd, one thread per
// connection; one scheduler thread owns the engine.
//
// Ownership: the server borrows the model (it must outlive the server) and copies the strings
// of its options.
#ifndef MLXCEL_SERVER_H
#define MLXCEL_SERVER_H

#include "mlxcel/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mx_server mx_server_t;

typedef struct mx_server_opts {
  const char *host;                // address to listen on (name or literal); NULL = "127.0.0.1"
  int32_t port;                    // 0 = any free port (see mx_server_port)
  int32_t parallel;                // sequences decoded together; 0 = 1
  int64_t ctx;                     // KV capacity per sequence; 0 = as mx_session_opts_t
  const char *backend;             // NULL = as mx_session_opts_t
  const char *vision_backend;      // where a vision model's tower runs (as mx_session_opts_t)
  mx_backend_opts_t backend_opts;  // threads, device, backend settings (as mx_session_opts_t)
  int32_t prefill_chunk;           // 0 = the engine's default
  const char *api_key;   // when set, every endpoint but /health needs "Authorization: Bearer K"
  const char *model_id;  // the name /v1/models lists and requests must use; NULL = "model"
  size_t max_body;       // request body limit in bytes (413 beyond); 0 = 1 MiB
  int32_t max_queue;     // requests waiting for a slot before 503; 0 = 64
  // A request starts on the free slot whose KV shares the longest prefix with its prompt (a
  // system prompt, a chat's earlier turns) and prefills only the rest, reported as
  // usage.prompt_tokens_details.cached_tokens. The memory is the slots' own KV: the least
  // recently used free slot's tokens are evicted. true: every request prefills its whole prompt.
  bool no_prefix_cache;
  int32_t max_images;        // image_url parts per chat request (400 beyond); 0 = 8
  int64_t max_image_pixels;  // width * height of one image (413 beyond); 0 = 4096 * 4096
  // Samples per channel of one input_audio WAV (413 beyond); 0 = the reader's 16000 * 600.
  int64_t max_audio_samples;
  int32_t max_connections;   // simultaneous connections (503 beyond); 0 = 128
  int32_t timeout_s;         // idle connection timeout in seconds; 0 = 60
  int32_t header_timeout_s;  // a request head must arrive within this of the connection's
                             // opening or its previous request's end; 0 = 10
  bool log_requests;         // one line per request on stderr
  // true: completions encode special-token text in a prompt ("<|im_end|>") as plain text;
  // false (default): it becomes the special token, as transformers does. A request's
  // "split_special_tokens" overrides it. Chat message content is always plain text: only the
  // chat template's own markup yields special tokens.
  bool split_special_tokens;
  // Speculative decoding (ADR 0024) for every request that does not say otherwise
  // ("speculative": "off"): MX_SPEC_NGRAM drafts by prompt lookup, MX_SPEC_DRAFT with the draft
  // model; MX_SPEC_OFF (default) only for requests that ask. At most draft_tokens drafts per
  // step (0 = 7), suffixes of up to ngram_max tokens (0 = 3), both 1..32; a request may set its
  // own. Requests with constrained output or an M-RoPE model's images decode plainly unless they
  // ask for it (then a 400 says why). The backend must return every position's logits (cpu,
  // interp, xla).
  mx_spec_mode_t speculative;
  int32_t draft_tokens, ngram_max;
  // The draft model (borrowed; outlives the server; the model's tokenizer), run beside the
  // model on the same backend with the same slots; NULL: requests asking for "draft_model" get
  // a 400. With it, a request's "speculative": true without a method uses it.
  const mx_model_t *draft_model;
} mx_server_opts_t;

// Starts listening and serving in background threads. Errors: bad options, the address cannot
// be bound (message names it), the engine cannot be created.
mx_status_t mx_server_start(const mx_model_t *model, const mx_server_opts_t *opts,
                            mx_server_t **out);
int32_t mx_server_port(const mx_server_t *srv);  // the bound port
// Stops taking requests: new ones get 503 and the listening socket closes; returns once both
// hold, so that anything said afterwards ("draining") is true for every later request.
void mx_server_refuse_new(mx_server_t *srv);
// mx_server_refuse_new, then waits at most timeout_s for the requests in flight to finish.
// Returns true when all finished.
bool mx_server_drain(mx_server_t *srv, double timeout_s);
// Stops everything (requests still running are cancelled) and frees the server.
void mx_server_stop(mx_server_t *srv);  // accepts NULL

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_SERVER_H
