// Thread-local error messages and status names.
#include <stdio.h>
#include <string.h>

#include "mlxcel/base.h"

enum { MX_ERROR_CAP = 2048 };

static _Thread_local char mx_error_buf[MX_ERROR_CAP];

mx_status_t mx_error_setv(mx_status_t status, const char *fmt, va_list ap) {
  vsnprintf(mx_error_buf, sizeof mx_error_buf, fmt, ap);
  return status;
}

mx_status_t mx_error_set(mx_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mx_error_setv(status, fmt, ap);
  va_end(ap);
  return status;
}

mx_status_t mx_error_prefix(mx_status_t status, const char *fmt, ...) {
  char prefix[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  char old[MX_ERROR_CAP];
  memcpy(old, mx_error_buf, sizeof old);
  size_t n = strlen(prefix);
  if (n > sizeof mx_error_buf - 3) n = sizeof mx_error_buf - 3;
  memcpy(mx_error_buf, prefix, n);
  memcpy(mx_error_buf + n, ": ", 2);
  size_t rest = sizeof mx_error_buf - n - 3;
  size_t m = strnlen(old, rest);
  memcpy(mx_error_buf + n + 2, old, m);
  mx_error_buf[n + 2 + m] = '\0';
  return status;
}

const char *mx_error_message(void) { return mx_error_buf; }

void mx_error_clear(void) { mx_error_buf[0] = '\0'; }

const char *mx_status_name(mx_status_t status) {
  switch (status) {
    case MX_OK:
      return "ok";
    case MX_ERR_INVALID_ARG:
      return "invalid argument";
    case MX_ERR_PARSE:
      return "parse error";
    case MX_ERR_VERIFY:
      return "verification error";
    case MX_ERR_UNSUPPORTED:
      return "unsupported";
    case MX_ERR_NOMEM:
      return "out of memory";
    case MX_ERR_RUNTIME:
      return "runtime error";
    case MX_ERR_IO:
      return "I/O error";
  }
  return "unknown status";
}
