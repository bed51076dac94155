// Connections: the server's own accept loop and the request-head deadline.
//
// libmicrohttpd stops polling its listening socket at its connection limit, so connections
// beyond --max-connections wait in the kernel's backlog, neither served nor refused, and its
// timeout is an idle timeout that every byte resets: clients that hold connections while sending
// a head one byte at a time keep everyone else out. So the server accepts connections itself
// (libmicrohttpd gets them through MHD_add_connection): beyond the limit a connection gets a 503
// with Retry-After at once and is closed, and a connection whose request head is not complete
// within --header-timeout seconds of its opening (or of the end of its previous request) is shut
// down. One thread does both; it owns the listening socket.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/server_internal.h"

// Refused connections whose 503 is on its way: read until the client closes (so closing does not
// reset the connection before the client has read the answer), at most this long and this many.
enum { LINGER_MS = 2000, MAX_LINGER = 64 };

typedef struct conn_rec {
  int fd;
  double head_deadline;  // 0 = no head pending (a request is being served)
  bool shut;             // shut down for missing its deadline
  struct conn_rec *prev, *next;
} conn_rec_t;

typedef struct lingering {
  int fd;
  double until;
} lingering_t;

struct mx_server_conns {
  mx_server_t *srv;
  int listen_fd;
  int wake[2];  // pipe: a byte wakes the thread (drain, stop)
  int32_t max_conns;
  double head_timeout;
  pthread_t thread;
  bool started;
  pthread_mutex_t mu;
  pthread_cond_t closed_cv;  // the listening socket was closed
  bool stop_accepting, listen_closed, stop;
  conn_rec_t *head;   // connections libmicrohttpd holds
  int32_t n_open;     // records in the list
  int32_t n_pending;  // handed to libmicrohttpd, not yet started
  lingering_t linger[MAX_LINGER];
  int32_t n_linger;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// The 503 for a connection over the limit: written at once, then the connection lingers.
static void refuse(mx_server_conns_t *k, int fd) {
  mx_server_error_t e;
  mx_server_error_set(&e, 503, "server_error", NULL, "too_many_connections",
                      "the server has %d open connections, its limit (--max-connections)",
                      (int)k->max_conns);
  mx_strbuf_t body, msg;
  mx_strbuf_init(&body);
  mx_strbuf_init(&msg);
  mx_server_error_json(&body, &e);
  mx_strbuf_printf(&msg,
                   "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                   "Retry-After: %s\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
                   MX_SERVER_RETRY_AFTER, body.len);
  mx_strbuf_append(&msg, body.data ? body.data : "", body.len);
  if (!msg.oom) {
    ssize_t w = send(fd, msg.data, msg.len, MSG_NOSIGNAL | MSG_DONTWAIT);  // a fresh socket
    (void)w;  // a client that cannot take 300 bytes gets the close alone
  }
  mx_strbuf_free(&body);
  mx_strbuf_free(&msg);
  shutdown(fd, SHUT_WR);
  pthread_mutex_lock(&k->srv->metrics_mu);
  k->srv->responses[EP_OTHER][503]++;
  pthread_mutex_unlock(&k->srv->metrics_mu);
  if (k->n_linger == MAX_LINGER) {
    close(fd);
    return;
  }
  k->linger[k->n_linger++] = (lingering_t){fd, now_s() + LINGER_MS / 1000.0};
}

// Drains the lingering sockets; closes those at end of file or past their time.
static void linger_step(mx_server_conns_t *k, const struct pollfd *pf, double now) {
  int32_t j = 0;
  for (int32_t i = 0; i < k->n_linger; i++) {
    bool done = now >= k->linger[i].until;
    if (!done && (pf[i].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[4096];
      ssize_t n = recv(k->linger[i].fd, buf, sizeof buf, MSG_DONTWAIT);
      done = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
    }
    if (done) {
      close(k->linger[i].fd);
    } else {
      k->linger[j++] = k->linger[i];
    }
  }
  k->n_linger = j;
}

static void accept_one(mx_server_conns_t *k) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  int fd = accept4(k->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;  // EAGAIN, a connection reset in the backlog, EMFILE: nothing to add
  pthread_mutex_lock(&k->mu);
  bool full = k->n_open + k->n_pending >= k->max_conns;
  if (!full) k->n_pending++;
  pthread_mutex_unlock(&k->mu);
  if (full) {
    refuse(k, fd);
    return;
  }
  if (MHD_add_connection(k->srv->daemon, fd, (struct sockaddr *)&ss, sl) != MHD_YES) {
    pthread_mutex_lock(&k->mu);  // libmicrohttpd closed it
    k->n_pending--;
    pthread_mutex_unlock(&k->mu);
  }
}

// Shuts down the connections past their head deadline; returns the time of the next deadline
// (or now + 1 s).
static double enforce_deadlines(mx_server_conns_t *k, double now) {
  double next = now + 1.0;
  pthread_mutex_lock(&k->mu);
  for (conn_rec_t *r = k->head; r; r = r->next) {
    if (r->head_deadline <= 0 || r->shut) continue;
    if (now >= r->head_deadline) {
      // libmicrohttpd's thread for it wakes at end of file and closes it (the record goes in
      // its close notice, before the descriptor is closed: the descriptor is still this one).
      shutdown(r->fd, SHUT_RDWR);
      r->shut = true;
    } else if (r->head_deadline < next) {
      next = r->head_deadline;
    }
  }
  pthread_mutex_unlock(&k->mu);
  return next;
}

static void *conns_main(void *arg) {
  mx_server_conns_t *k = arg;
  struct pollfd pf[2 + MAX_LINGER];
  for (;;) {
    pthread_mutex_lock(&k->mu);
    bool stop = k->stop;
    if (k->stop_accepting && !k->listen_closed) {
      close(k->listen_fd);
      k->listen_fd = -1;
      k->listen_closed = true;
      pthread_cond_broadcast(&k->closed_cv);
    }
    pthread_mutex_unlock(&k->mu);
    if (stop) break;
    double now = now_s();
    double next = enforce_deadlines(k, now);
    for (int32_t i = 0; i < k->n_linger; i++)
      if (k->linger[i].until < next) next = k->linger[i].until;
    int n = 0;
    for (int32_t i = 0; i < k->n_linger; i++) pf[n++] = (struct pollfd){k->linger[i].fd, POLLIN, 0};
    int wake_i = n, listen_i = n + 1;
    pf[n++] = (struct pollfd){k->wake[0], POLLIN, 0};
    bool listening = k->listen_fd >= 0;
    if (listening) pf[n++] = (struct pollfd){k->listen_fd, POLLIN, 0};
    int ms = (int)((next - now) * 1000.0) + 1;
    if (poll(pf, (nfds_t)n, ms < 1 ? 1 : ms) < 0) {
      for (int i = 0; i < n; i++) pf[i].revents = 0;  // EINTR: nothing happened
    }
    now = now_s();
    linger_step(k, pf, now);
    if (pf[wake_i].revents & POLLIN) {
      char b[64];
      ssize_t r = read(k->wake[0], b, sizeof b);
      (void)r;
    }
    if (listening && (pf[listen_i].revents & POLLIN)) accept_one(k);
  }
  for (int32_t i = 0; i < k->n_linger; i++) close(k->linger[i].fd);
  k->n_linger = 0;
  return NULL;
}

static void wake(mx_server_conns_t *k) {
  char b = 1;
  ssize_t w = write(k->wake[1], &b, 1);  // a full pipe already wakes the thread
  (void)w;
}

mx_status_t mx_server_conns_start(mx_server_t *srv, int listen_fd, int32_t max_conns,
                                  double head_timeout_s, mx_server_conns_t **out) {
  *out = NULL;
  mx_server_conns_t *k = calloc(1, sizeof *k);
  if (!k) return mx_error_set(MX_ERR_NOMEM, "serve: out of memory");
  k->srv = srv;
  k->listen_fd = listen_fd;
  k->max_conns = max_conns;
  k->head_timeout = head_timeout_s;
  k->wake[0] = k->wake[1] = -1;
  pthread_mutex_init(&k->mu, NULL);
  pthread_cond_init(&k->closed_cv, NULL);
  int fl = fcntl(listen_fd, F_GETFL);
  if (pipe2(k->wake, O_CLOEXEC | O_NONBLOCK) != 0 || fl < 0 ||
      fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    k->listen_fd = -1;  // the caller closes it
    mx_server_conns_destroy(k);
    return mx_error_set(MX_ERR_RUNTIME, "serve: cannot set up the accept loop: %s",
                        strerror(errno));
  }
  if (pthread_create(&k->thread, NULL, conns_main, k) != 0) {
    k->listen_fd = -1;
    mx_server_conns_destroy(k);
    return mx_error_set(MX_ERR_RUNTIME, "serve: cannot start the accept thread");
  }
  k->started = true;
  *out = k;
  return MX_OK;
}

void mx_server_conns_stop_accepting(mx_server_conns_t *k) {
  if (!k) return;
  pthread_mutex_lock(&k->mu);
  k->stop_accepting = true;
  wake(k);
  while (k->started && !k->listen_closed) pthread_cond_wait(&k->closed_cv, &k->mu);
  pthread_mutex_unlock(&k->mu);
}

void mx_server_conns_stop(mx_server_conns_t *k) {
  if (!k || !k->started) return;
  pthread_mutex_lock(&k->mu);
  k->stop = true;
  pthread_mutex_unlock(&k->mu);
  wake(k);
  pthread_join(k->thread, NULL);
  k->started = false;
  if (k->listen_fd >= 0) close(k->listen_fd);
  k->listen_fd = -1;
}

void mx_server_conns_destroy(mx_server_conns_t *k) {
  if (!k) return;
  mx_server_conns_stop(k);
  if (k->wake[0] >= 0) close(k->wake[0]);
  if (k->wake[1] >= 0) close(k->wake[1]);
  // Records of connections still open were freed by their close notices (MHD_stop_daemon).
  for (conn_rec_t *r = k->head, *nx; r; r = nx) {
    nx = r->next;
    free(r);
  }
  pthread_cond_destroy(&k->closed_cv);
  pthread_mutex_destroy(&k->mu);
  free(k);
}

void mx_server_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe) {
  mx_server_conns_t *k = ((mx_server_t *)cls)->conns;
  if (!k) return;
  pthread_mutex_lock(&k->mu);
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    if (k->n_pending > 0) k->n_pending--;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    conn_rec_t *r = ci ? calloc(1, sizeof *r) : NULL;
    if (r) {  // without a record the connection has no head deadline (the idle timeout stays)
      r->fd = ci->connect_fd;
      r->head_deadline = now_s() + k->head_timeout;
      r->next = k->head;
      if (k->head) k->head->prev = r;
      k->head = r;
    }
    *socket_context = r;
    k->n_open++;
    wake(k);  // a new deadline to watch
  } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
    conn_rec_t *r = *socket_context;
    if (r) {
      if (r->prev) r->prev->next = r->next;
      if (r->next) r->next->prev = r->prev;
      if (k->head == r) k->head = r->next;
      free(r);
      *socket_context = NULL;
    }
    k->n_open--;
  }
  pthread_mutex_unlock(&k->mu);
}

// The record of `c` (its socket context) with k->mu held, or NULL.
static conn_rec_t *rec_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

void mx_server_conns_head_done(mx_server_conns_t *k, struct MHD_Connection *c) {
  if (!k) return;
  pthread_mutex_lock(&k->mu);
  conn_rec_t *r = rec_of(c);
  if (r) r->head_deadline = 0;
  pthread_mutex_unlock(&k->mu);
}

void mx_server_conns_request_done(mx_server_conns_t *k, struct MHD_Connection *c) {
  if (!k) return;
  pthread_mutex_lock(&k->mu);
  conn_rec_t *r = rec_of(c);
  if (r) r->head_deadline = now_s() + k->head_timeout;
  pthread_mutex_unlock(&k->mu);
  wake(k);
}
