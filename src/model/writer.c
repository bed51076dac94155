// Streaming safetensors writer (include/mlxcel/writer.h).
#include "mlxcel/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_item {
  mx_st_desc_t d;
  uint64_t begin, end;  // offsets in the data section
} st_item_t;

struct mx_st_writer {
  FILE *f;
  char *path;
  st_item_t *items;  // sorted by name
  int32_t n;
  int32_t cur;      // tensor receiving the next byte
  uint64_t filled;  // bytes written of items[cur]
};

static const char *st_dtype_name(mx_elem_type_t et) {
  switch (et) {
    case MX_ELEM_F64:
      return "F64";
    case MX_ELEM_F32:
      return "F32";
    case MX_ELEM_F16:
      return "F16";
    case MX_ELEM_BF16:
      return "BF16";
    case MX_ELEM_I64:
      return "I64";
    case MX_ELEM_I32:
      return "I32";
    case MX_ELEM_I16:
      return "I16";
    case MX_ELEM_I8:
      return "I8";
    case MX_ELEM_UI64:
      return "U64";
    case MX_ELEM_UI32:
      return "U32";
    case MX_ELEM_UI16:
      return "U16";
    case MX_ELEM_UI8:
      return "U8";
    case MX_ELEM_I1:
      return "BOOL";
    default:
      return NULL;
  }
}

uint64_t mx_st_desc_bytes(const mx_st_desc_t *d) {
  if (!st_dtype_name(d->dtype) || d->rank < 0 || d->rank > MX_MAX_RANK) return 0;
  uint64_t n = mx_elem_size(d->dtype);
  for (int32_t i = 0; i < d->rank; i++) n *= (uint64_t)d->dims[i];
  return n;
}

static int cmp_item(const void *a, const void *b) {
  return strcmp(((const st_item_t *)a)->d.name, ((const st_item_t *)b)->d.name);
}

static void writer_free(mx_st_writer_t *w) {
  if (!w) return;
  for (int32_t i = 0; i < w->n; i++) free((char *)w->items[i].d.name);
  free(w->items);
  free(w->path);
  free(w);
}

void mx_st_writer_abort(mx_st_writer_t *w) {
  if (!w) return;
  if (w->f) fclose(w->f);
  if (w->path) remove(w->path);
  writer_free(w);
}

// JSON string literal for a tensor name or metadata value (control chars as \u00XX).
static void json_str(mx_strbuf_t *sb, const char *s) {
  mx_strbuf_append(sb, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      mx_strbuf_append(sb, e, 2);
    } else if (c < 0x20) {
      mx_strbuf_printf(sb, "\\u%04x", c);
    } else {
      mx_strbuf_append(sb, (const char *)&c, 1);
    }
  }
  mx_strbuf_append(sb, "\"", 1);
}

static mx_status_t write_all(mx_st_writer_t *w, const void *p, size_t n) {
  if (n && fwrite(p, 1, n, w->f) != n) {
    return mx_error_set(MX_ERR_IO, "%s: write failed: %s", w->path, strerror(errno));
  }
  return MX_OK;
}

static mx_status_t check_descs(const mx_st_desc_t *t, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    if (!t[i].name || !t[i].name[0]) {
      return mx_error_set(MX_ERR_INVALID_ARG, "safetensors writer: tensor %d has no name", i);
    }
    if (!st_dtype_name(t[i].dtype)) {
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "safetensors writer: tensor '%s': dtype has no safetensors name",
                          t[i].name);
    }
    if (t[i].rank < 0 || t[i].rank > MX_MAX_RANK) {
      return mx_error_set(MX_ERR_INVALID_ARG, "safetensors writer: tensor '%s': rank %d", t[i].name,
                          t[i].rank);
    }
    for (int32_t k = 0; k < t[i].rank; k++) {
      if (t[i].dims[k] < 0) {
        return mx_error_set(MX_ERR_INVALID_ARG,
                            "safetensors writer: tensor '%s': negative dimension %lld", t[i].name,
                            (long long)t[i].dims[k]);
      }
    }
  }
  return MX_OK;
}

static mx_status_t build_header(mx_st_writer_t *w, const char *const *meta, int32_t n_meta,
                                mx_strbuf_t *sb) {
  mx_strbuf_puts(sb, "{");
  bool first = true;
  if (meta && n_meta > 0) {
    mx_strbuf_puts(sb, "\"__metadata__\":{");
    for (int32_t i = 0; i < n_meta; i++) {
      if (i) mx_strbuf_puts(sb, ",");
      json_str(sb, meta[2 * i] ? meta[2 * i] : "");
      mx_strbuf_puts(sb, ":");
      json_str(sb, meta[2 * i + 1] ? meta[2 * i + 1] : "");
    }
    mx_strbuf_puts(sb, "}");
    first = false;
  }
  for (int32_t i = 0; i < w->n; i++) {
    const st_item_t *it = &w->items[i];
    if (!first) mx_strbuf_puts(sb, ",");
    first = false;
    json_str(sb, it->d.name);
    mx_strbuf_printf(sb, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(it->d.dtype));
    for (int32_t k = 0; k < it->d.rank; k++) {
      mx_strbuf_printf(sb, "%s%lld", k ? "," : "", (long long)it->d.dims[k]);
    }
    mx_strbuf_printf(sb, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)it->begin,
                     (unsigned long long)it->end);
  }
  mx_strbuf_puts(sb, "}");
  while (sb->len % 8) mx_strbuf_append(sb, " ", 1);
  if (sb->oom) return mx_error_set(MX_ERR_NOMEM, "safetensors writer: out of memory");
  return MX_OK;
}

mx_status_t mx_st_writer_open(const char *path, const mx_st_desc_t *tensors, int32_t n,
                              const char *const *meta, int32_t n_meta, mx_st_writer_t **out) {
  *out = NULL;
  if (!path || n < 0 || (n > 0 && !tensors)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "safetensors writer: bad arguments");
  }
  mx_status_t st = check_descs(tensors, n);
  if (st != MX_OK) return st;
  mx_st_writer_t *w = calloc(1, sizeof *w);
  if (!w) return mx_error_set(MX_ERR_NOMEM, "safetensors writer: out of memory");
  w->path = strdup(path);
  w->items = calloc((size_t)(n > 0 ? n : 1), sizeof *w->items);
  if (!w->path || !w->items) {
    writer_free(w);
    return mx_error_set(MX_ERR_NOMEM, "safetensors writer: out of memory");
  }
  for (int32_t i = 0; i < n; i++) {
    w->items[i].d = tensors[i];
    w->items[i].d.name = strdup(tensors[i].name);
    w->n = i + 1;
    if (!w->items[i].d.name) {
      writer_free(w);
      return mx_error_set(MX_ERR_NOMEM, "safetensors writer: out of memory");
    }
  }
  qsort(w->items, (size_t)n, sizeof *w->items, cmp_item);
  uint64_t off = 0;
  for (int32_t i = 0; i < n; i++) {
    if (i > 0 && strcmp(w->items[i - 1].d.name, w->items[i].d.name) == 0) {
      st = mx_error_set(MX_ERR_INVALID_ARG, "safetensors writer: duplicate tensor name '%s'",
                        w->items[i].d.name);
      writer_free(w);
      return st;
    }
    w->items[i].begin = off;
    off += mx_st_desc_bytes(&w->items[i].d);
    w->items[i].end = off;
  }
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  st = build_header(w, meta, n_meta, &sb);
  if (st != MX_OK) {
    mx_strbuf_free(&sb);
    writer_free(w);
    return st;
  }
  w->f = fopen(path, "wb");
  if (!w->f) {
    st = mx_error_set(MX_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    mx_strbuf_free(&sb);
    free(w->path);
    w->path = NULL;  // not ours to remove
    writer_free(w);
    return st;
  }
  uint8_t len8[8];
  for (int k = 0; k < 8; k++) len8[k] = (uint8_t)((uint64_t)sb.len >> (8 * k));
  st = write_all(w, len8, 8);
  if (st == MX_OK) st = write_all(w, sb.data, sb.len);
  mx_strbuf_free(&sb);
  if (st != MX_OK) {
    mx_st_writer_abort(w);
    return st;
  }
  // Skip leading empty tensors.
  while (w->cur < w->n && w->items[w->cur].begin == w->items[w->cur].end) w->cur++;
  *out = w;
  return MX_OK;
}

int32_t mx_st_writer_count(const mx_st_writer_t *w) { return w->n; }

const mx_st_desc_t *mx_st_writer_desc(const mx_st_writer_t *w, int32_t i) {
  return i >= 0 && i < w->n ? &w->items[i].d : NULL;
}

int32_t mx_st_writer_current(const mx_st_writer_t *w) { return w->cur; }

mx_status_t mx_st_writer_append(mx_st_writer_t *w, const void *data, size_t nbytes) {
  const uint8_t *p = data;
  while (nbytes > 0) {
    if (w->cur >= w->n) {
      return mx_error_set(MX_ERR_INVALID_ARG,
                          "safetensors writer: %s: %zu bytes appended past the last tensor",
                          w->path, nbytes);
    }
    st_item_t *it = &w->items[w->cur];
    uint64_t room = it->end - it->begin - w->filled;
    size_t k = nbytes < room ? nbytes : (size_t)room;
    mx_status_t st = write_all(w, p, k);
    if (st != MX_OK) return st;
    p += k;
    nbytes -= k;
    w->filled += k;
    if (w->filled == it->end - it->begin) {
      w->filled = 0;
      w->cur++;
      while (w->cur < w->n && w->items[w->cur].begin == w->items[w->cur].end) w->cur++;
    }
  }
  return MX_OK;
}

mx_status_t mx_st_writer_close(mx_st_writer_t *w) {
  if (!w) return mx_error_set(MX_ERR_INVALID_ARG, "safetensors writer: NULL");
  if (w->cur < w->n) {
    mx_status_t st = mx_error_set(
        MX_ERR_INVALID_ARG, "safetensors writer: %s: tensor '%s' incomplete (%llu of %llu bytes)",
        w->path, w->items[w->cur].d.name, (unsigned long long)w->filled,
        (unsigned long long)(w->items[w->cur].end - w->items[w->cur].begin));
    mx_st_writer_abort(w);
    return st;
  }
  FILE *f = w->f;
  w->f = NULL;
  if (fflush(f) != 0 || ferror(f)) {
    mx_status_t st = mx_error_set(MX_ERR_IO, "%s: write failed: %s", w->path, strerror(errno));
    fclose(f);
    mx_st_writer_abort(w);
    return st;
  }
  if (fclose(f) != 0) {
    mx_status_t st = mx_error_set(MX_ERR_IO, "%s: close failed: %s", w->path, strerror(errno));
    mx_st_writer_abort(w);
    return st;
  }
  writer_free(w);
  return MX_OK;
}

mx_status_t mx_st_write_file(const char *path, const mx_st_desc_t *tensors, const void *const *data,
                             int32_t n) {
  mx_st_writer_t *w = NULL;
  mx_status_t st = mx_st_writer_open(path, tensors, n, NULL, 0, &w);
  if (st != MX_OK) return st;
  for (int32_t i = 0; i < w->n && st == MX_OK; i++) {
    // Find the caller's index of file-order tensor i.
    int32_t src = -1;
    for (int32_t j = 0; j < n; j++) {
      if (strcmp(tensors[j].name, w->items[i].d.name) == 0) src = j;
    }
    st = mx_st_writer_append(w, data[src], (size_t)(w->items[i].end - w->items[i].begin));
  }
  if (st != MX_OK) {
    mx_st_writer_abort(w);
    return st;
  }
  return mx_st_writer_close(w);
}
