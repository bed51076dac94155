// Private to src/server/: the server object and the per-request state shared by the HTTP glue
// (http.c), the generation endpoints (endpoints.c) and the metrics page (metrics.c).
#ifndef MLXCEL_SERVER_INTERNAL_H
#define MLXCEL_SERVER_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "mlxcel/chat.h"
#include "mlxcel/grammar.h"
#include "mlxcel/image.h"
#include "mlxcel/server.h"
#include "server/request.h"
#include "server/response.h"
#include "server/scheduler.h"

typedef enum mx_server_endpoint {
  EP_OTHER = 0,
  EP_HEALTH,
  EP_METRICS,
  EP_MODELS,
  EP_MODEL,  // GET /v1/models/{id}
  EP_COMPLETIONS,
  EP_CHAT,
  EP_COUNT,
} mx_server_endpoint_t;

extern const char *const mx_server_endpoint_names[EP_COUNT];

// Seconds a 503 (queue full, shutting down) asks clients to wait before retrying.
#define MX_SERVER_RETRY_AFTER "1"

// The accept loop and the request-head deadline (conns.c).
typedef struct mx_server_conns mx_server_conns_t;

struct mx_server {
  const mx_model_t *model;
  const mx_tokenizer_t *tok;
  mx_chat_template_t *tmpl;  // NULL when the tokenizer has none
  char *tmpl_error;          // why there is none (heap)
  char *model_id, *api_key;  // heap copies
  bool log_requests;
  mx_server_limits_t lim;
  int32_t max_piece_bytes;  // the longest vocabulary piece (bounds a prompt's bytes per token)
  mx_chat_guard_t *guard;   // chat content's special-token text stays text (endpoints.c)
  // Vision models (images.c): what stands for an image in a template that takes text (the
  // image token's text and a line break; heap), the image processor (or why it cannot be used:
  // proc_error, heap) and whether the chat template iterates content parts (tmpl_parts).
  char *image_with;
  size_t image_with_len;
  mx_image_proc_t proc;
  char *proc_error;
  bool tmpl_parts;
  bool split_special;  // --split-special-tokens: completions encode special-token text as text
  mx_spec_mode_t speculative;  // mx_server_opts_t.speculative, with its draft_tokens, ngram_max
  mx_spec_mode_t spec_method;  // a request's "speculative": true without a method
  int32_t spec_tokens, spec_ngram;
  int32_t timeout_s;
  long long created;
  mx_server_sched_t *sched;
  // The vocabulary index of constrained decoding, built by the first request that needs it
  // (seconds on a 150k vocabulary; most servers never need it). Under gvocab_mu.
  mx_gvocab_t *gvocab;
  pthread_mutex_t gvocab_mu;
  struct MHD_Daemon *daemon;
  mx_server_conns_t *conns;  // accepts for the daemon (which has no listening socket)
  int listen_fd;
  int32_t port;
  atomic_bool draining, stopping;
  atomic_uint_fast64_t next_id;
  atomic_int open_requests;  // requests whose response is not finished
  pthread_mutex_t metrics_mu;
  uint64_t responses[EP_COUNT][600];  // by endpoint and HTTP status
};

// Per-request state (MHD's *con_cls), from the first callback to MHD's completion notice.
typedef struct mx_server_conn {
  mx_server_endpoint_t ep;
  mx_strbuf_t body;
  bool too_large;  // the body passed the limit: the rest is discarded, 413 follows
  bool close;      // answered before its body was read: the connection cannot be reused
  bool answered;   // a response was queued
  int status;      // its HTTP status
  double t_start;
  int32_t n_prompt, n_cached, n_generated;  // for the request log
} mx_server_conn_t;

// Queues `sb`'s text (taken) as the response; returns MHD's result.
enum MHD_Result mx_server_reply(struct MHD_Connection *c, mx_server_conn_t *cc, int status,
                                const char *content_type, mx_strbuf_t *sb);
enum MHD_Result mx_server_reply_error(struct MHD_Connection *c, mx_server_conn_t *cc,
                                      const mx_server_error_t *e);
// True when the client closed its side of the connection (checked without blocking).
bool mx_server_client_gone(struct MHD_Connection *c);

// Starts the thread that accepts on listen_fd (owned from then on; on failure the caller still
// owns it), hands connections to srv->daemon up to max_conns, refuses
// the rest with a 503, and shuts down connections whose request head takes longer than
// head_timeout_s from their opening or their previous request's end.
mx_status_t mx_server_conns_start(mx_server_t *srv, int listen_fd, int32_t max_conns,
                                  double head_timeout_s, mx_server_conns_t **out);
// Closes the listening socket (drain); returns once it is closed.
void mx_server_conns_stop_accepting(mx_server_conns_t *k);
// Stops the thread (no more connections reach the daemon); the records stay for the daemon's
// close notices until mx_server_conns_destroy, after MHD_stop_daemon.
void mx_server_conns_stop(mx_server_conns_t *k);
void mx_server_conns_destroy(mx_server_conns_t *k);  // accepts NULL
// MHD_OPTION_NOTIFY_CONNECTION (cls: the server).
void mx_server_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe);
// A request head is complete (no deadline while it is served) / a request ended (the next head
// has head_timeout_s).
void mx_server_conns_head_done(mx_server_conns_t *k, struct MHD_Connection *c);
void mx_server_conns_request_done(mx_server_conns_t *k, struct MHD_Connection *c);

// POST /v1/completions and /v1/chat/completions (endpoints.c).
enum MHD_Result mx_server_generate(mx_server_t *srv, struct MHD_Connection *c,
                                   mx_server_conn_t *cc);
// ---- Audio (audio.c; ADR 0022) ----

// The recordings of a request's input_audio parts on the host: each decoded (the WAV reader's
// limits: 413 beyond), resampled and turned into log-mel features; errors 400 for a model
// without an audio tower (naming it) or a bad file, 413, 500. *out owns its arrays
// (mx_server_audio_free).
mx_status_t mx_server_audio_features(const mx_server_t *srv, const mx_server_request_t *r,
                                     mx_server_audio_t *out, mx_server_error_t *err);
void mx_server_audio_free(mx_server_audio_t *a);  // accepts a zeroed struct

// ---- Images (images.c) ----

// For a model with a vision tower: the image token's text, the image processor
// (preprocessor_config.json; a failure is kept in proc_error for image requests) and the
// template probe. Nothing for other models. Errors: out of memory, an image token without text.
mx_status_t mx_server_images_init(mx_server_t *srv);
// The fields_json of a request with images rendered by a template that iterates parts: each
// message with images gets its parts as "content" beside its own fields. *out NULL when the
// request has no images or the template takes text (heap array of r->n_messages heap strings or
// NULLs otherwise; free with mx_server_images_fields_free).
mx_status_t mx_server_images_fields(const mx_server_t *srv, const mx_server_request_t *r,
                                    char ***out);
void mx_server_images_fields_free(char **fields, int32_t n);
// The request's images decoded (PNG / JPEG, at most lim.max_image_pixels each: 413 beyond) and
// preprocessed: *out (heap) holds each image's pixel values in order, [C * S * S] each for the
// fixed-size towers, and for the Qwen towers (ADR 0013) each image's patch rows, whose grid
// (h, w) is (*grids)[2i], [2i + 1] (heap; NULL for the fixed-size towers); for Molmo2 (ADR
// 0023) each image's crops [C, N, P*P*3], and *grids holds MX_SERVER_MOLMO2_GRID ints per
// image (crops, pooled tokens, pool size, the image_grids row), then every image's
// image_token_pooling [tokens * pool] in order. Errors fill *err: 400 for a model without a
// vision tower (naming it) or a bad image, 413, 500.
mx_status_t mx_server_images_pixels(const mx_server_t *srv, const mx_server_request_t *r,
                                    float **out, int32_t **grids, mx_server_error_t *err);

// GET /metrics (metrics.c).
void mx_server_metrics_text(mx_server_t *srv, mx_strbuf_t *sb);

#endif  // MLXCEL_SERVER_INTERNAL_H
