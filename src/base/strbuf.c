// Growable heap strings and whole-file reads.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/base.h"

void mx_strbuf_init(mx_strbuf_t *sb) { memset(sb, 0, sizeof *sb); }

void mx_strbuf_free(mx_strbuf_t *sb) {
  if (!sb) return;
  free(sb->data);
  memset(sb, 0, sizeof *sb);
}

static bool mx_strbuf_reserve(mx_strbuf_t *sb, size_t extra) {
  if (sb->oom) return false;
  if (sb->len + extra + 1 <= sb->cap) return true;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap < sb->len + extra + 1) {
    if (cap > SIZE_MAX / 2) {
      sb->oom = true;
      return false;
    }
    cap *= 2;
  }
  char *p = realloc(sb->data, cap);
  if (!p) {
    sb->oom = true;
    return false;
  }
  sb->data = p;
  sb->cap = cap;
  return true;
}

void mx_strbuf_append(mx_strbuf_t *sb, const char *s, size_t n) {
  if (!mx_strbuf_reserve(sb, n)) return;
  if (n) memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = '\0';
}

void mx_strbuf_puts(mx_strbuf_t *sb, const char *s) { mx_strbuf_append(sb, s, strlen(s)); }

void mx_strbuf_printf(mx_strbuf_t *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n >= 0 && mx_strbuf_reserve(sb, (size_t)n)) {
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
    sb->len += (size_t)n;
  }
  va_end(ap2);
}

char *mx_strbuf_take(mx_strbuf_t *sb, size_t *len) {
  if (!sb->data) mx_strbuf_append(sb, "", 0);
  char *p = sb->data;
  if (len) *len = sb->len;
  memset(sb, 0, sizeof *sb);
  return p;
}

mx_status_t mx_read_file_max(const char *path, size_t max_bytes, char **data, size_t *len) {
  *data = NULL;
  if (len) *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return mx_error_set(MX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  char buf[65536];
  size_t n;
  bool over = false;
  while (!over && (n = fread(buf, 1, sizeof buf, f)) > 0) {
    if (n > max_bytes - sb.len) {
      over = true;  // stop reading: the file may be endless (a FIFO, /dev/zero)
    } else {
      mx_strbuf_append(&sb, buf, n);
    }
  }
  bool err = ferror(f) != 0;
  fclose(f);
  if (over || err) {
    mx_strbuf_free(&sb);
    if (over)
      return mx_error_set(MX_ERR_IO, "'%s' is larger than the limit of %zu bytes", path, max_bytes);
    return mx_error_set(MX_ERR_IO, "cannot read '%s'", path);
  }
  if (sb.oom) {
    mx_strbuf_free(&sb);
    return mx_error_set(MX_ERR_NOMEM, "out of memory reading '%s'", path);
  }
  *data = mx_strbuf_take(&sb, len);
  if (!*data) return mx_error_set(MX_ERR_NOMEM, "out of memory reading '%s'", path);
  return MX_OK;
}

mx_status_t mx_read_file(const char *path, char **data, size_t *len) {
  return mx_read_file_max(path, SIZE_MAX, data, len);
}
