// The HTTP side of the server (server.h) on libmicrohttpd: listening socket, routing, API
// keys, body limits, small endpoints, request log, drain and stop.
//
// Threading: MHD runs one thread per connection, so a handler may block while its request
// generates (endpoints.c waits in short slices and checks for a vanished client in between).
#include <arpa/inet.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mlxcel/tokenizer.h"
#include "server/server_internal.h"

const char *const mx_server_endpoint_names[EP_COUNT] = {"other",
                                                        "/health",
                                                        "/metrics",
                                                        "/v1/models",
                                                        "/v1/models/{id}",
                                                        "/v1/completions",
                                                        "/v1/chat/completions"};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum MHD_Result mx_server_reply(struct MHD_Connection *c, mx_server_conn_t *cc, int status,
                                const char *content_type, mx_strbuf_t *sb) {
  size_t len = 0;
  char *body = mx_strbuf_take(sb, &len);
  if (!body) return MHD_NO;
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  if (cc->too_large || cc->close) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  // RFC 9110: a 503 may say when to come back (a full queue drains in seconds), and a 401 must
  // name the scheme the server accepts.
  if (status == 503) MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, MX_SERVER_RETRY_AFTER);
  if (status == 401)
    MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"mlxcel\"");
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  cc->answered = true;
  cc->status = status;
  return ok;
}

enum MHD_Result mx_server_reply_error(struct MHD_Connection *c, mx_server_conn_t *cc,
                                      const mx_server_error_t *e) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_server_error_json(&sb, e);
  return mx_server_reply(c, cc, e->http_status, "application/json", &sb);
}

bool mx_server_client_gone(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci) return true;
  struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  // Readable: either the next pipelined request or end of file.
  char b;
  ssize_t n = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0;
}

static mx_server_endpoint_t route(const char *url, const char *method, bool *method_ok) {
  static const struct {
    const char *path, *method;
    mx_server_endpoint_t ep;
  } kRoutes[] = {{"/health", "GET", EP_HEALTH},
                 {"/metrics", "GET", EP_METRICS},
                 {"/v1/models", "GET", EP_MODELS},
                 {"/v1/completions", "POST", EP_COMPLETIONS},
                 {"/v1/chat/completions", "POST", EP_CHAT}};
  *method_ok = true;
  for (size_t i = 0; i < sizeof kRoutes / sizeof kRoutes[0]; i++) {
    if (strcmp(url, kRoutes[i].path) == 0) {
      *method_ok = strcmp(method, kRoutes[i].method) == 0 ||
                   (strcmp(method, "HEAD") == 0 && strcmp(kRoutes[i].method, "GET") == 0);
      return kRoutes[i].ep;
    }
  }
  if (strncmp(url, "/v1/models/", 11) == 0 && url[11]) {
    *method_ok = strcmp(method, "GET") == 0;
    return EP_MODEL;
  }
  return EP_OTHER;
}

// Constant-time comparison of the presented key with the configured one.
static bool key_ok(const mx_server_t *srv, struct MHD_Connection *c) {
  if (!srv->api_key) return true;
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  if (!h || strncasecmp(h, "Bearer ", 7) != 0) return false;
  h += 7;
  while (*h == ' ') h++;
  size_t a = strlen(h), b = strlen(srv->api_key);
  unsigned diff = a != b;
  for (size_t i = 0; i < b; i++)
    diff |= (unsigned char)(i < a ? h[i] : 0) ^ (unsigned char)srv->api_key[i];
  return diff == 0;
}

// ---- Request heads: what libmicrohttpd lets through and RFC 9112 forbids ----

// The connection whose request head is being read in this thread (one thread per connection),
// from its request line (log_uri) to the first on_request call.
static _Thread_local struct MHD_Connection *tl_conn;
static _Thread_local bool tl_in_head;

static void *log_uri(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)cls, (void)uri;
  tl_conn = c;
  tl_in_head = true;
  return NULL;  // on_request allocates the request state on its first call
}

// libmicrohttpd 0.9.75 answers a malformed or oversized Content-Length itself, before the
// application sees the request, and writes that answer's header block twice (its error path
// builds the header, then the normal path builds it again). Its log line is the only hook: while
// a head is being read, the answer is written here instead (once, as our JSON error) and the
// sending side is shut, so libmicrohttpd's copy cannot reach the client and the connection ends.
// A libmicrohttpd without the bug answers the same way.
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
  mx_server_t *srv = cls;
  static const char kPrefix[] = "Error processing request";
  if (!tl_in_head || !tl_conn || strncmp(fmt, kPrefix, sizeof kPrefix - 1) != 0) return;
  tl_in_head = false;
  unsigned status = va_arg(ap, unsigned);
  const char *html = va_arg(ap, const char *);
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(tl_conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci || status < 400 || status > 599) return;
  // Its HTML page's body, tags dropped, is the reason.
  char why[256];
  size_t n = 0;
  const char *p = html ? strstr(html, "<body>") : NULL;
  p = p ? p + 6 : (html ? html : "");
  for (bool tag = false; *p && n + 1 < sizeof why && strncmp(p, "</body>", 7) != 0; p++) {
    if (*p == '<') tag = true;
    if (!tag) why[n++] = *p;
    if (*p == '>') tag = false;
  }
  why[n] = '\0';
  mx_server_error_t e;
  mx_server_error_set(&e, (int)status, "invalid_request_error", NULL,
                      status == 413 ? "request_too_large" : "bad_request", "%s",
                      n ? why : "malformed request head");
  mx_strbuf_t body, msg;
  mx_strbuf_init(&body);
  mx_strbuf_init(&msg);
  mx_server_error_json(&body, &e);
  const char *phrase = MHD_get_reason_phrase_for(status);
  mx_strbuf_printf(&msg,
                   "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n\r\n",
                   status, phrase ? phrase : "Error", body.len);
  mx_strbuf_append(&msg, body.data ? body.data : "", body.len);
  if (!msg.oom) {
    for (size_t off = 0; off < msg.len;) {
      ssize_t k = send(ci->connect_fd, msg.data + off, msg.len - off, MSG_NOSIGNAL);
      if (k <= 0) break;
      off += (size_t)k;
    }
  }
  shutdown(ci->connect_fd, SHUT_WR);
  mx_strbuf_free(&body);
  mx_strbuf_free(&msg);
  pthread_mutex_lock(&srv->metrics_mu);
  srv->responses[EP_OTHER][status]++;
  pthread_mutex_unlock(&srv->metrics_mu);
}

// Set by unescape_url (the connection's own thread: one thread per connection) when the
// request's URL decodes to a control character; on_request reads and clears it.
static _Thread_local bool tl_url_ctl;

// Percent-decoding of the URL (libmicrohttpd's own would turn %00 into a NUL that ends the
// C string early: "/v1/models%00" would be served as "/v1/models"). Control characters are
// decoded as anything else but flagged, and the request is refused.
static size_t unescape_url(void *cls, struct MHD_Connection *c, char *s) {
  (void)cls, (void)c;
  char *w = s;
  for (const char *r = s; *r; r++) {
    unsigned v;
    char hex[3] = {r[1], r[1] ? r[2] : 0, 0};
    if (r[0] == '%' && hex[0] && hex[1] && strspn(hex, "0123456789abcdefABCDEF") == 2 &&
        sscanf(hex, "%2x", &v) == 1) {
      r += 2;
      if (v < 0x20 || v == 0x7F) tl_url_ctl = true;
      *w++ = (char)v;
    } else {
      *w++ = *r;
    }
  }
  *w = '\0';
  return (size_t)(w - s);
}

typedef struct head_scan {
  int n_host, n_cl, n_te;
  const char *cl, *te;
  bool cl_differ;
  const char *bad_key;  // a header name with whitespace (before the colon)
} head_scan_t;

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
  (void)kind;
  head_scan_t *h = cls;
  if (!h->bad_key && strpbrk(key, " \t")) h->bad_key = key;
  if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) h->n_host++;
  if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
    if (h->n_cl++ && strcmp(h->cl, value) != 0) h->cl_differ = true;
    if (!h->cl) h->cl = value;
  }
  if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
    h->n_te++;
    if (!h->te) h->te = value;
  }
  return MHD_YES;
}

// The request head against RFC 9112 where libmicrohttpd 0.9.75 is lenient: fills *e and returns
// false when the request must be refused before anything else.
static bool head_ok(struct MHD_Connection *c, const char *version, mx_server_error_t *e) {
  head_scan_t h = {0};
  MHD_get_connection_values(c, MHD_HEADER_KIND, scan_header, &h);
  if (tl_url_ctl) {
    tl_url_ctl = false;
    mx_server_error_set(e, 400, "invalid_request_error", NULL, "bad_request",
                        "the URL decodes to a control character (%%00-%%1F or %%7F)");
    return false;
  }
  if (h.bad_key) {  // RFC 9112 5.1: no whitespace between a field name and its colon
    mx_server_error_set(e, 400, "invalid_request_error", NULL, "bad_request",
                        "header field '%.64s' has whitespace before its colon", h.bad_key);
    return false;
  }
  if (strcmp(version, MHD_HTTP_VERSION_1_1) == 0 && h.n_host != 1) {  // RFC 9112 3.2
    mx_server_error_set(e, 400, "invalid_request_error", NULL, "bad_request",
                        h.n_host ? "an HTTP/1.1 request has exactly one Host header, not %d"
                                 : "an HTTP/1.1 request needs a Host header",
                        h.n_host);
    return false;
  }
  if (h.cl_differ) {  // RFC 9112 6.3: the body's length is ambiguous
    mx_server_error_set(e, 400, "invalid_request_error", NULL, "bad_request",
                        "the request has Content-Length headers with different values");
    return false;
  }
  if (h.n_te) {
    // libmicrohttpd decodes exactly "chunked" (any case) in the first Transfer-Encoding header
    // and otherwise reads the body until the client closes: anything else is refused now.
    if (h.n_cl) {  // RFC 9112 6.3: both is a smuggling attempt, not a request
      mx_server_error_set(e, 400, "invalid_request_error", NULL, "bad_request",
                          "the request has both Transfer-Encoding and Content-Length");
      return false;
    }
    if (h.n_te > 1 || strcasecmp(h.te, "chunked") != 0) {
      size_t n = strlen(h.te);
      while (n > 0 && (h.te[n - 1] == ' ' || h.te[n - 1] == '\t')) n--;
      bool padded = h.n_te == 1 && n == 7 && strncasecmp(h.te, "chunked", 7) == 0;
      if (padded) {
        mx_server_error_set(e, 400, "invalid_request_error", NULL, "bad_request",
                            "Transfer-Encoding 'chunked' has trailing whitespace");
      } else {  // RFC 9112 6.1: a coding the server does not understand is 501
        mx_server_error_set(e, 501, "invalid_request_error", NULL, "not_implemented",
                            "Transfer-Encoding '%.64s' is not supported (only 'chunked')", h.te);
      }
      return false;
    }
  }
  return true;
}

static enum MHD_Result simple(mx_server_t *srv, struct MHD_Connection *c, mx_server_conn_t *cc,
                              const char *url) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  switch (cc->ep) {
    case EP_HEALTH:
      if (atomic_load(&srv->draining)) {
        mx_strbuf_puts(&sb, "{\"status\":\"draining\"}");
        return mx_server_reply(c, cc, 503, "application/json", &sb);
      }
      mx_strbuf_puts(&sb, "{\"status\":\"ok\"}");
      return mx_server_reply(c, cc, 200, "application/json", &sb);
    case EP_METRICS:
      mx_server_metrics_text(srv, &sb);
      return mx_server_reply(c, cc, 200, "text/plain; version=0.0.4; charset=utf-8", &sb);
    case EP_MODELS:
      mx_server_models_json(&sb, srv->model_id, srv->created);
      return mx_server_reply(c, cc, 200, "application/json", &sb);
    case EP_MODEL: {
      const char *id = url + strlen("/v1/models/");
      if (strcmp(id, srv->model_id) != 0) {
        mx_server_error_t e;
        mx_server_error_set(&e, 404, "invalid_request_error", "model", "model_not_found",
                            "the model '%.200s' does not exist; this server serves '%.200s'", id,
                            srv->model_id);
        return mx_server_reply_error(c, cc, &e);
      }
      mx_server_model_json(&sb, srv->model_id, srv->created);
      return mx_server_reply(c, cc, 200, "application/json", &sb);
    }
    default:
      return MHD_NO;
  }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
  mx_server_t *srv = cls;
  mx_server_conn_t *cc = *con_cls;
  mx_server_error_t e;
  if (!cc) {  // headers are in; the body (if any) comes in the next calls
    cc = calloc(1, sizeof *cc);
    if (!cc) return MHD_NO;
    *con_cls = cc;
    atomic_fetch_add(&srv->open_requests, 1);
    cc->t_start = now_seconds();
    mx_strbuf_init(&cc->body);
    tl_in_head = false;  // the head was accepted: libmicrohttpd's own errors are past
    mx_server_conns_head_done(srv->conns, c);
    if (!head_ok(c, version, &e)) {
      cc->close = true;  // the body, if any, cannot be framed: the connection ends here
      return mx_server_reply_error(c, cc, &e);
    }
    bool method_ok = true;
    cc->ep = route(url, method, &method_ok);
    // The key first: without it a client learns nothing, not even which paths exist.
    if (cc->ep != EP_HEALTH && !key_ok(srv, c)) {
      mx_server_error_set(&e, 401, "invalid_request_error", NULL, "invalid_api_key",
                          "missing or incorrect API key: send \"Authorization: Bearer KEY\" with "
                          "the key given to mlxcel serve --api-key");
      return mx_server_reply_error(c, cc, &e);
    }
    if (cc->ep == EP_OTHER) {
      mx_server_error_set(&e, 404, "invalid_request_error", NULL, "not_found",
                          "no endpoint %.16s %.200s (try GET /v1/models, POST /v1/completions, "
                          "POST /v1/chat/completions, GET /health, GET /metrics)",
                          method, url);
      return mx_server_reply_error(c, cc, &e);
    }
    if (!method_ok) {
      mx_server_error_set(&e, 405, "invalid_request_error", NULL, "method_not_allowed",
                          "%.200s does not accept %.16s", url, method);
      return mx_server_reply_error(c, cc, &e);
    }
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > srv->lim.max_body) {
      cc->too_large = true;
      mx_server_error_set(&e, 413, "invalid_request_error", NULL, "request_too_large",
                          "request body is %.20s bytes; the limit is %zu", cl, srv->lim.max_body);
      return mx_server_reply_error(c, cc, &e);
    }
    return MHD_YES;
  }
  if (*upload_data_size > 0) {
    if (!cc->answered && !cc->too_large) {
      if (cc->body.len + *upload_data_size > srv->lim.max_body) {
        cc->too_large = true;
        mx_strbuf_free(&cc->body);
      } else {
        mx_strbuf_append(&cc->body, upload_data, *upload_data_size);
      }
    }
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (cc->answered) return MHD_YES;  // answered early (error before the body)
  if (cc->too_large) {
    mx_server_error_set(&e, 413, "invalid_request_error", NULL, "request_too_large",
                        "request body is over the limit of %zu bytes", srv->lim.max_body);
    return mx_server_reply_error(c, cc, &e);
  }
  if (cc->body.oom) {
    mx_server_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
    return mx_server_reply_error(c, cc, &e);
  }
  if (cc->ep == EP_COMPLETIONS || cc->ep == EP_CHAT) {
    if (atomic_load(&srv->draining)) {
      mx_server_error_set(&e, 503, "server_error", NULL, "shutting_down",
                          "the server is shutting down");
      return mx_server_reply_error(c, cc, &e);
    }
    return mx_server_generate(srv, c, cc);
  }
  return simple(srv, c, cc, url);
}

static void give_memory_back(void) {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  mx_server_t *srv = cls;
  mx_server_conn_t *cc = *con_cls;
  mx_server_conns_request_done(srv->conns, c);  // the next head has its deadline
  if (!cc) return;
  *con_cls = NULL;
  if (cc->ep == EP_COMPLETIONS || cc->ep == EP_CHAT)  // back to idle: the timeout applies again
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)srv->timeout_s);
  int status = cc->answered ? cc->status : 0;
  pthread_mutex_lock(&srv->metrics_mu);
  if (status >= 100 && status < 600) srv->responses[cc->ep][status]++;
  pthread_mutex_unlock(&srv->metrics_mu);
  if (srv->log_requests) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char addr[INET6_ADDRSTRLEN] = "?";
    if (ci && ci->client_addr) {
      const struct sockaddr *sa = ci->client_addr;
      if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof addr);
      } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr, sizeof addr);
      }
    }
    char cached[48] = "";
    if (cc->n_cached > 0)
      snprintf(cached, sizeof cached, ", %d prompt tokens cached", (int)cc->n_cached);
    fprintf(stderr, "mlxcel serve: %s %s %d %.1f ms, %d+%d tokens%s%s\n", addr,
            mx_server_endpoint_names[cc->ep], status, (now_seconds() - cc->t_start) * 1e3,
            (int)cc->n_prompt, (int)cc->n_generated, cached,
            toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed early)");
  }
  mx_strbuf_free(&cc->body);
  free(cc);
  // The last request out gives the memory of request bodies, JSON trees and prompts back to the
  // system: glibc keeps freed heap in each thread's arena, and a burst of large requests would
  // otherwise stay resident for good.
  if (atomic_fetch_sub(&srv->open_requests, 1) == 1) give_memory_back();
}

// Binds and listens on host:port; returns the socket or -1 (message set).
static int listen_on(const char *host, int32_t port, int32_t *bound_port) {
  struct addrinfo hints = {
      .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
  struct addrinfo *res = NULL;
  char ps[16];
  snprintf(ps, sizeof ps, "%d", (int)port);
  int gai = getaddrinfo(host, ps, &hints, &res);
  if (gai != 0) {
    mx_error_set(MX_ERR_INVALID_ARG, "cannot resolve host '%s': %s", host, gai_strerror(gai));
    return -1;
  }
  int fd = -1, err = 0;
  for (struct addrinfo *a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) break;
    err = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    mx_error_set(MX_ERR_RUNTIME, "cannot listen on %s:%d: %s", host, (int)port, strerror(err));
    return -1;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  *bound_port = port;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
    if (ss.ss_family == AF_INET) *bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) *bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  }
  return fd;
}

static void free_server(mx_server_t *srv) {
  mx_chat_guard_destroy(srv->guard);
  mx_server_sched_destroy(srv->sched);
  mx_gvocab_destroy(srv->gvocab);  // after the scheduler: its jobs' masks read it
  pthread_mutex_destroy(&srv->gvocab_mu);
  mx_chat_template_destroy(srv->tmpl);
  free(srv->tmpl_error);
  free(srv->proc_error);
  free(srv->image_with);
  free(srv->model_id);
  free(srv->api_key);
  pthread_mutex_destroy(&srv->metrics_mu);
  free(srv);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

mx_status_t mx_server_start(const mx_model_t *model, const mx_server_opts_t *o, mx_server_t **out) {
  *out = NULL;
  if (!model || !o) return mx_error_set(MX_ERR_INVALID_ARG, "serve: no model or options");
  if (o->port < 0 || o->port > 65535)
    return mx_error_set(MX_ERR_INVALID_ARG, "serve: --port must be in [0, 65535], got %d",
                        (int)o->port);
  if (o->parallel < 0 || o->max_queue < 0 || o->max_connections < 0 || o->timeout_s < 0 ||
      o->header_timeout_s < 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "serve: negative limit");
  if (!model->tokenizer)
    return mx_error_set(MX_ERR_INVALID_ARG, "serve: the model has no tokenizer (tokenizer.json)");
  mx_server_t *srv = calloc(1, sizeof *srv);
  if (!srv) return mx_error_set(MX_ERR_NOMEM, "serve: out of memory");
  pthread_mutex_init(&srv->metrics_mu, NULL);
  pthread_mutex_init(&srv->gvocab_mu, NULL);
  srv->model = model;
  srv->tok = model->tokenizer;
  srv->listen_fd = -1;
  srv->log_requests = o->log_requests;
  srv->created = (long long)time(NULL);
  srv->timeout_s = o->timeout_s ? o->timeout_s : 60;
  mx_server_limits_default(&srv->lim);
  if (o->max_body) srv->lim.max_body = o->max_body;
  if (o->max_images) srv->lim.max_images = o->max_images;
  if (o->max_image_pixels) srv->lim.max_image_pixels = o->max_image_pixels;
  if (o->max_audio_samples) srv->lim.max_audio_samples = o->max_audio_samples;
  srv->model_id = dup_str(o->model_id ? o->model_id : "model");
  srv->api_key = o->api_key ? dup_str(o->api_key) : NULL;
  if (!srv->model_id || (o->api_key && !srv->api_key)) {
    free_server(srv);
    return mx_error_set(MX_ERR_NOMEM, "serve: out of memory");
  }
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  if (mx_tokenizer_chat_template(srv->tok)) {
    mx_status_t st = mx_chat_template_from_tokenizer(srv->tok, &srv->tmpl);
    if (st == MX_ERR_NOMEM) {  // not the template's fault: the server cannot start
      free_server(srv);
      return mx_error_prefix(st, "serve: chat template");
    }
    if (st) {  // the chat endpoint reports it; completions still work
      mx_strbuf_printf(&sb, "the model's chat template does not compile: %s", mx_error_message());
    }
  } else {
    mx_strbuf_printf(&sb,
                     "model '%s' has no chat template (tokenizer_config.json has no "
                     "chat_template): use /v1/completions",
                     srv->model_id);
  }
  if (sb.len > 0 || sb.oom) {
    srv->tmpl_error = sb.oom ? NULL : mx_strbuf_take(&sb, NULL);
    mx_strbuf_free(&sb);
    if (!srv->tmpl_error) {  // a truncated message would be served as the reason
      free_server(srv);
      return mx_error_set(MX_ERR_NOMEM, "serve: out of memory");
    }
  }
  mx_server_sched_opts_t so = {.model = model,
                               .backend = o->backend,
                               .vision_backend = o->vision_backend,
                               .backend_opts = o->backend_opts,
                               .ctx = o->ctx,
                               .n_slots = o->parallel ? o->parallel : 1,
                               .prefill_chunk = o->prefill_chunk,
                               .max_queue = o->max_queue ? o->max_queue : 64,
                               .prefix_cache = !o->no_prefix_cache,
                               .draft_model = o->draft_model};
  mx_status_t st = mx_server_sched_create(&so, &srv->sched);
  if (st) {
    free_server(srv);
    return st;
  }
  // A request's "speculative": true uses the server's method, else its draft model if it has
  // one. The server's own method is checked now (a bad --draft-tokens is the server's error).
  srv->spec_method = o->speculative   ? o->speculative
                     : o->draft_model ? MX_SPEC_DRAFT
                                      : MX_SPEC_NGRAM;
  if (o->speculative || o->draft_model)
    st = mx_server_sched_spec_check(srv->sched, srv->spec_method, o->draft_tokens, o->ngram_max);
  if (st) {
    free_server(srv);
    return mx_error_prefix(st, "serve");
  }
  srv->speculative = o->speculative;
  srv->spec_tokens = o->draft_tokens;
  srv->spec_ngram = o->ngram_max;
  srv->lim.max_tokens = (int32_t)mx_server_sched_ctx(srv->sched);
  srv->lim.vocab = mx_server_sched_vocab(srv->sched);
  st = mx_chat_guard_create(srv->tok, &srv->guard);
  if (!st) st = mx_server_images_init(srv);
  if (st) {
    free_server(srv);
    return mx_error_prefix(st, "serve");
  }
  srv->split_special = o->split_special_tokens;
  srv->max_piece_bytes = 1;
  for (int32_t id = 0; id < mx_tokenizer_vocab_size(srv->tok); id++) {
    size_t len = 0;
    if (mx_tokenizer_id_to_piece(srv->tok, id, &len) && len > (size_t)srv->max_piece_bytes)
      srv->max_piece_bytes = len > 65536 ? 65536 : (int32_t)len;
  }
  srv->listen_fd = listen_on(o->host ? o->host : "127.0.0.1", o->port, &srv->port);
  if (srv->listen_fd < 0) {
    free_server(srv);
    return MX_ERR_RUNTIME;
  }
  // The daemon has no listening socket: conns.c accepts and hands it connections up to
  // --max-connections (its own limit, twice that, is only a backstop: closed connections leave
  // its count a little after they leave ours).
  int32_t max_conns = o->max_connections ? o->max_connections : 128;
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                   MHD_USE_NO_LISTEN_SOCKET |
                   MHD_USE_ERROR_LOG;  // the log is a hook (on_mhd_log), not printed
  srv->daemon = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
      MHD_OPTION_URI_LOG_CALLBACK, log_uri, srv, MHD_OPTION_UNESCAPE_CALLBACK, unescape_url, srv,
      MHD_OPTION_NOTIFY_CONNECTION, mx_server_conns_notify, srv, MHD_OPTION_NOTIFY_COMPLETED,
      on_completed, srv, MHD_OPTION_CONNECTION_LIMIT, (unsigned)max_conns * 2u + 16u,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)srv->timeout_s, MHD_OPTION_END);
  if (!srv->daemon) {
    close(srv->listen_fd);
    free_server(srv);
    return mx_error_set(MX_ERR_RUNTIME, "serve: libmicrohttpd could not start");
  }
  double head_timeout = o->header_timeout_s ? o->header_timeout_s : 10;
  st = mx_server_conns_start(srv, srv->listen_fd, max_conns, head_timeout, &srv->conns);
  if (st) {
    MHD_stop_daemon(srv->daemon);
    close(srv->listen_fd);
    free_server(srv);
    return st;
  }
  *out = srv;
  return MX_OK;
}

int32_t mx_server_port(const mx_server_t *srv) { return srv->port; }

void mx_server_refuse_new(mx_server_t *srv) {
  atomic_store(&srv->draining, true);
  mx_server_conns_stop_accepting(srv->conns);  // the listening socket closes
  srv->listen_fd = -1;
}

bool mx_server_drain(mx_server_t *srv, double timeout_s) {
  mx_server_refuse_new(srv);
  double end = now_seconds() + timeout_s;
  bool idle = mx_server_sched_drain(srv->sched, timeout_s);
  // The last responses may still be on their way out.
  while (atomic_load(&srv->open_requests) > 0 && now_seconds() < end) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return idle && atomic_load(&srv->open_requests) == 0;
}

void mx_server_stop(mx_server_t *srv) {
  if (!srv) return;
  atomic_store(&srv->draining, true);
  atomic_store(&srv->stopping, true);
  mx_server_conns_stop(srv->conns);  // no connection reaches the daemon from now on
  MHD_stop_daemon(srv->daemon);      // joins every connection thread
  mx_server_conns_destroy(srv->conns);
  free_server(srv);
}
