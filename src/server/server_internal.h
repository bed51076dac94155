// Private to src/server/: the server object and the per-request state shared by the HTTP glue
// (http.c), the generation endpoints (endpoints.c) and the metrics page (metrics.c).
#ifndef MLXCEL_SERVER_INTERNAL_H
#define MLXCEL_SERVER_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "mlxcel/chat.h"
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

struct mx_server {
  const mx_model_t *model;
  const mx_tokenizer_t *tok;
  mx_chat_template_t *tmpl;  // NULL when the tokenizer has none
  char *tmpl_error;          // why there is none (heap)
  char *model_id, *api_key;  // heap copies
  bool log_requests;
  mx_server_limits_t lim;
  int32_t timeout_s;
  long long created;
  mx_server_sched_t *sched;
  struct MHD_Daemon *daemon;
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
  bool answered;   // a response was queued
  int status;      // its HTTP status
  double t_start;
  int32_t n_prompt, n_generated;  // for the request log
} mx_server_conn_t;

// Queues `sb`'s text (taken) as the response; returns MHD's result.
enum MHD_Result mx_server_reply(struct MHD_Connection *c, mx_server_conn_t *cc, int status,
                                const char *content_type, mx_strbuf_t *sb);
enum MHD_Result mx_server_reply_error(struct MHD_Connection *c, mx_server_conn_t *cc,
                                      const mx_server_error_t *e);
// True when the client closed its side of the connection (checked without blocking).
bool mx_server_client_gone(struct MHD_Connection *c);

// POST /v1/completions and /v1/chat/completions (endpoints.c).
enum MHD_Result mx_server_generate(mx_server_t *srv, struct MHD_Connection *c,
                                   mx_server_conn_t *cc);
// GET /metrics (metrics.c).
void mx_server_metrics_text(mx_server_t *srv, mx_strbuf_t *sb);

#endif  // MLXCEL_SERVER_INTERNAL_H
