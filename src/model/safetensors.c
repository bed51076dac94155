// safetensors header validation. Format: 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"k": "v"}}), then the data section; offsets are relative to its start.
// Every check names the file and, where there is one, the tensor.
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/safetensors_internal.h"

// JSON numbers are doubles: integers above 2^53 are not exact, so they cannot be trusted as
// offsets or dimensions.
#define MX_ST_MAX_JSON_INT 9007199254740992.0

typedef struct st_span {
  uint64_t begin, end;
  int32_t idx;
} st_span_t;

mx_elem_type_t mx_st_dtype(const char *s) {
  static const struct {
    const char *name;
    mx_elem_type_t et;
  } map[] = {
      {"F64", MX_ELEM_F64},        {"F32", MX_ELEM_F32},
      {"F16", MX_ELEM_F16},        {"BF16", MX_ELEM_BF16},
      {"I64", MX_ELEM_I64},        {"I32", MX_ELEM_I32},
      {"I16", MX_ELEM_I16},        {"I8", MX_ELEM_I8},
      {"U64", MX_ELEM_UI64},       {"U32", MX_ELEM_UI32},
      {"U16", MX_ELEM_UI16},       {"U8", MX_ELEM_UI8},
      {"BOOL", MX_ELEM_I1},        {"F8_E4M3", MX_ELEM_F8E4M3FN},
      {"F8_E5M2", MX_ELEM_F8E5M2},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    if (strcmp(s, map[i].name) == 0) return map[i].et;
  }
  return MX_ELEM_INVALID;
}

static mx_status_t tensor_err(const char *file, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static mx_status_t tensor_err(const char *file, const char *name, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mx_error_set(MX_ERR_PARSE, "%s: tensor '%.200s': %s", file, name, msg);
}

static void format_dims(char *buf, size_t cap, const int64_t *dims, int32_t rank) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int32_t i = 0; i < rank && k < cap; i++) {
    k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  }
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

// Reads a JSON number that must be a non-negative integer exactly representable in a double.
// Returns 0 on success, 1 if not a number, 2 if negative, 3 if fractional or too large.
static int json_uint(const cJSON *j, uint64_t *out) {
  if (!cJSON_IsNumber(j)) return 1;
  double v = j->valuedouble;
  if (v < 0) return 2;
  if (!(v <= MX_ST_MAX_JSON_INT) || v != (double)(uint64_t)v) return 3;
  *out = (uint64_t)v;
  return 0;
}

static const char *const kUintProblem[] = {"", "is not a number", "is negative",
                                           "is not an integer below 2^53"};

static mx_status_t parse_shape(const cJSON *shape, const char *file, const char *name,
                               mx_weight_t *w) {
  if (!shape) return tensor_err(file, name, "missing \"shape\"");
  if (!cJSON_IsArray(shape)) return tensor_err(file, name, "\"shape\" is not a JSON array");
  int rank = cJSON_GetArraySize(shape);
  if (rank > MX_MAX_RANK) {
    return tensor_err(file, name, "rank %d exceeds the maximum of %d", rank, MX_MAX_RANK);
  }
  w->rank = rank;
  int i = 0;
  for (const cJSON *d = shape->child; d; d = d->next, i++) {
    uint64_t v = 0;
    int bad = json_uint(d, &v);
    if (bad == 2) {
      return tensor_err(file, name, "shape[%d] is negative (%g)", i, d->valuedouble);
    }
    if (bad) return tensor_err(file, name, "shape[%d] %s", i, kUintProblem[bad]);
    w->dims[i] = (int64_t)v;
  }
  return MX_OK;
}

static mx_status_t parse_offsets(const cJSON *off, const char *file, const char *name,
                                 uint64_t *begin, uint64_t *end) {
  if (!off) return tensor_err(file, name, "missing \"data_offsets\"");
  if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2) {
    return tensor_err(file, name, "\"data_offsets\" is not an array of 2 integers");
  }
  int bad = json_uint(off->child, begin);
  if (bad) return tensor_err(file, name, "data_offsets[0] %s", kUintProblem[bad]);
  bad = json_uint(off->child->next, end);
  if (bad) return tensor_err(file, name, "data_offsets[1] %s", kUintProblem[bad]);
  return MX_OK;
}

// Validates one tensor entry and fills `w` (except name/file).
static mx_status_t parse_tensor(const cJSON *e, const char *file, const char *name,
                                const uint8_t *section, uint64_t section_len, uint64_t max_bytes,
                                mx_weight_t *w, st_span_t *span) {
  if (!cJSON_IsObject(e)) return tensor_err(file, name, "entry is not a JSON object");
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
  if (!dt) return tensor_err(file, name, "missing \"dtype\"");
  if (!cJSON_IsString(dt)) return tensor_err(file, name, "\"dtype\" is not a string");
  w->dtype = mx_st_dtype(dt->valuestring);
  if (w->dtype == MX_ELEM_INVALID) {
    return tensor_err(file, name, "unknown dtype '%.40s'", dt->valuestring);
  }
  mx_status_t st = parse_shape(cJSON_GetObjectItemCaseSensitive(e, "shape"), file, name, w);
  if (st != MX_OK) return st;
  uint64_t begin = 0, end = 0;
  st = parse_offsets(cJSON_GetObjectItemCaseSensitive(e, "data_offsets"), file, name, &begin, &end);
  if (st != MX_OK) return st;

  char dims[256];
  format_dims(dims, sizeof dims, w->dims, w->rank);
  uint64_t numel = 1;
  for (int32_t i = 0; i < w->rank; i++) {
    if (__builtin_mul_overflow(numel, (uint64_t)w->dims[i], &numel)) {
      return tensor_err(file, name, "element count of shape %s overflows", dims);
    }
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, (uint64_t)mx_elem_size(w->dtype), &nbytes) ||
      nbytes > (uint64_t)SIZE_MAX) {
    return tensor_err(file, name, "byte size of shape %s x %s overflows", dims, dt->valuestring);
  }
  if (nbytes > max_bytes) {
    return tensor_err(file, name, "shape %s x %s is %llu bytes, over the tensor size limit of %llu",
                      dims, dt->valuestring, (unsigned long long)nbytes,
                      (unsigned long long)max_bytes);
  }
  if (begin > end) {
    return tensor_err(file, name, "data_offsets begin (%llu) is after end (%llu)",
                      (unsigned long long)begin, (unsigned long long)end);
  }
  if (end - begin != nbytes) {
    return tensor_err(file, name,
                      "shape %s x %s needs %llu bytes but data_offsets [%llu, %llu] span %llu",
                      dims, dt->valuestring, (unsigned long long)nbytes, (unsigned long long)begin,
                      (unsigned long long)end, (unsigned long long)(end - begin));
  }
  if (end > section_len) {
    return tensor_err(
        file, name, "data_offsets [%llu, %llu] extend beyond the data section (%llu bytes)",
        (unsigned long long)begin, (unsigned long long)end, (unsigned long long)section_len);
  }
  w->data = section + begin;
  w->nbytes = (size_t)nbytes;
  span->begin = begin;
  span->end = end;
  return MX_OK;
}

static mx_status_t check_metadata(const cJSON *meta, const char *file) {
  if (!cJSON_IsObject(meta)) {
    return mx_error_set(MX_ERR_PARSE, "%s: __metadata__ is not a JSON object", file);
  }
  for (const cJSON *m = meta->child; m; m = m->next) {
    if (!cJSON_IsString(m)) {
      return mx_error_set(MX_ERR_PARSE, "%s: __metadata__ value '%.100s' is not a string", file,
                          m->string);
    }
  }
  return MX_OK;
}

static int cmp_span(const void *a, const void *b) {
  const st_span_t *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// Names must be unique (cJSON keeps duplicate keys) and non-empty spans must not overlap.
static mx_status_t check_unique_and_disjoint(const mx_weight_t *w, st_span_t *spans, int32_t n,
                                             const char *file) {
  if (n <= 1) return MX_OK;
  const char **names = malloc((size_t)n * sizeof *names);
  if (!names) return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", file);
  for (int32_t i = 0; i < n; i++) names[i] = w[i].name;
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int32_t i = 1; i < n; i++) {
    if (strcmp(names[i - 1], names[i]) == 0) {
      const char *dup = names[i];
      free(names);
      return tensor_err(file, dup, "appears twice in the header");
    }
  }
  free(names);

  qsort(spans, (size_t)n, sizeof *spans, cmp_span);
  const st_span_t *last = NULL;  // the non-empty span reaching furthest so far
  for (int32_t i = 0; i < n; i++) {
    if (spans[i].begin == spans[i].end) continue;  // empty tensors occupy no bytes
    if (last && spans[i].begin < last->end) {
      return tensor_err(file, w[spans[i].idx].name,
                        "data_offsets [%llu, %llu] overlap tensor '%.200s' [%llu, %llu]",
                        (unsigned long long)spans[i].begin, (unsigned long long)spans[i].end,
                        w[last->idx].name, (unsigned long long)last->begin,
                        (unsigned long long)last->end);
    }
    if (!last || spans[i].end > last->end) last = &spans[i];
  }
  return MX_OK;
}

// Offset of the first byte that breaks UTF-8 (overlong forms, surrogates and code points above
// U+10FFFF included), or `len` when the text is valid. Tensor names end up in messages and in
// emitted MLIR, so they must be text.
static size_t utf8_invalid_at(const uint8_t *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 ? 1 : 0;
    if (n == 0 || c > 0xF4) return i;
    uint32_t cp = c & (0x3Fu >> n);
    for (int k = 1; k <= n; k++) {
      if (i + (size_t)k >= len || (s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3Fu);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))) {
      return i;
    }
    i += (size_t)n + 1;
  }
  return len;
}

static mx_status_t parse_entries(const cJSON *root, const uint8_t *section, uint64_t section_len,
                                 const char *file, uint64_t max_bytes, mx_arena_t *arena,
                                 mx_weight_t **out, int32_t *count) {
  int32_t n = 0;
  for (const cJSON *e = root->child; e; e = e->next) {
    if (strcmp(e->string, "__metadata__") != 0) n++;
  }
  mx_weight_t *w = n ? mx_arena_alloc(arena, (size_t)n * sizeof *w) : NULL;
  st_span_t *spans = n ? malloc((size_t)n * sizeof *spans) : NULL;
  const char *file_copy = mx_arena_strdup(arena, file);
  if ((n && (!w || !spans)) || !file_copy) {
    free(spans);
    return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", file);
  }
  mx_status_t st = MX_OK;
  int32_t i = 0;
  for (const cJSON *e = root->child; e && st == MX_OK; e = e->next) {
    if (strcmp(e->string, "__metadata__") == 0) {
      st = check_metadata(e, file);
      continue;
    }
    spans[i].idx = i;
    st = parse_tensor(e, file, e->string, section, section_len, max_bytes, &w[i], &spans[i]);
    if (st != MX_OK) break;
    w[i].name = mx_arena_strdup(arena, e->string);
    w[i].file = file_copy;
    if (!w[i].name) st = mx_error_set(MX_ERR_NOMEM, "%s: out of memory", file);
    i++;
  }
  if (st == MX_OK) st = check_unique_and_disjoint(w, spans, n, file);
  free(spans);
  if (st != MX_OK) return st;
  *out = w;
  *count = n;
  return MX_OK;
}

mx_status_t mx_st_parse(const uint8_t *data, size_t len, const char *filename,
                        uint64_t max_tensor_bytes, mx_arena_t *arena, mx_weight_t **out,
                        int32_t *n) {
  *out = NULL;
  *n = 0;
  const char *file = filename ? filename : "<memory>";
  if (!data && len) return mx_error_set(MX_ERR_INVALID_ARG, "%s: no data", file);
  if (len < 8) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: file is %zu bytes, shorter than the 8-byte header length field", file,
                        len);
  }
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | data[i];
  if (hlen == 0) return mx_error_set(MX_ERR_PARSE, "%s: header length is 0", file);
  if (hlen > MX_ST_MAX_HEADER) {
    return mx_error_set(MX_ERR_PARSE, "%s: header length %llu exceeds the limit of %llu bytes",
                        file, (unsigned long long)hlen, (unsigned long long)MX_ST_MAX_HEADER);
  }
  if (hlen > len - 8) {
    return mx_error_set(MX_ERR_PARSE,
                        "%s: header length %llu is larger than the rest of the file (%zu bytes)",
                        file, (unsigned long long)hlen, len - 8);
  }
  size_t bad = utf8_invalid_at(data + 8, (size_t)hlen);
  if (bad < hlen) {
    return mx_error_set(MX_ERR_PARSE, "%s: header is not valid UTF-8 (byte %zu of the header)",
                        file, bad);
  }
  // cJSON gets its own NUL-terminated copy: it must not read past the header into the data.
  char *text = malloc((size_t)hlen + 1);
  if (!text) return mx_error_set(MX_ERR_NOMEM, "%s: out of memory for the header", file);
  memcpy(text, data + 8, (size_t)hlen);
  text[hlen] = '\0';
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, 0);
  mx_status_t st = MX_OK;
  if (!root) {
    size_t at = end && end >= text ? (size_t)(end - text) : 0;
    st = mx_error_set(MX_ERR_PARSE, "%s: header is not valid JSON (error near byte %zu of %llu)",
                      file, at, (unsigned long long)hlen);
  } else {
    // The format pads the header with spaces; anything else after the JSON value is corrupt.
    for (const char *p = end; p < text + hlen; p++) {
      if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
        st = mx_error_set(MX_ERR_PARSE, "%s: header has trailing bytes after the JSON value", file);
        break;
      }
    }
    if (st == MX_OK && !cJSON_IsObject(root)) {
      st = mx_error_set(MX_ERR_PARSE, "%s: header is not a JSON object", file);
    }
  }
  if (st == MX_OK) {
    st = parse_entries(root, data + 8 + hlen, (uint64_t)(len - 8 - hlen), file, max_tensor_bytes,
                       arena, out, n);
  }
  cJSON_Delete(root);
  free(text);
  return st;
}

mx_status_t mx_safetensors_validate(const void *data, size_t len, const char *filename) {
  mx_arena_t *arena = mx_arena_create();
  if (!arena) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_weight_t *w = NULL;
  int32_t n = 0;
  mx_status_t st = mx_st_parse(data, len, filename, MX_CHECKPOINT_MAX_TENSOR_BYTES, arena, &w, &n);
  mx_arena_destroy(arena);
  return st;
}
