// GGUF reader: one pass over the header with a bounds-checked cursor, then the tensor checks
// (alignment, extent, overlap) that need every info. Nothing is allocated in proportion to a
// count before the count is known to fit in the bytes that remain.
#include "gguf/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// ---- Types ----

typedef struct type_info {
  uint32_t id;
  const char *name;
  int64_t block_elems, block_bytes;
} type_info_t;

// Block sizes of ggml's types (ggml.c's type traits: elements per block, bytes per block).
static const type_info_t kTypes[] = {
    {MX_GGML_F32, "F32", 1, 4},       {MX_GGML_F16, "F16", 1, 2},
    {MX_GGML_Q4_0, "Q4_0", 32, 18},   {MX_GGML_Q4_1, "Q4_1", 32, 20},
    {MX_GGML_Q5_0, "Q5_0", 32, 22},   {MX_GGML_Q5_1, "Q5_1", 32, 24},
    {MX_GGML_Q8_0, "Q8_0", 32, 34},   {MX_GGML_Q8_1, "Q8_1", 32, 36},
    {MX_GGML_Q2_K, "Q2_K", 256, 84},  {MX_GGML_Q3_K, "Q3_K", 256, 110},
    {MX_GGML_Q4_K, "Q4_K", 256, 144}, {MX_GGML_Q5_K, "Q5_K", 256, 176},
    {MX_GGML_Q6_K, "Q6_K", 256, 210}, {MX_GGML_Q8_K, "Q8_K", 256, 292},
    {MX_GGML_I8, "I8", 1, 1},         {MX_GGML_I16, "I16", 1, 2},
    {MX_GGML_I32, "I32", 1, 4},       {MX_GGML_I64, "I64", 1, 8},
    {MX_GGML_F64, "F64", 1, 8},       {MX_GGML_BF16, "BF16", 1, 2},
};

static const type_info_t *type_info(uint32_t id) {
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; i++) {
    if (kTypes[i].id == id) return &kTypes[i];
  }
  return NULL;
}

const char *mx_ggml_type_name(uint32_t type) {
  const type_info_t *t = type_info(type);
  return t ? t->name : NULL;
}

bool mx_ggml_type_block(uint32_t type, int64_t *block_elems, int64_t *block_bytes) {
  const type_info_t *t = type_info(type);
  if (!t) return false;
  *block_elems = t->block_elems;
  *block_bytes = t->block_bytes;
  return true;
}

static const char *const kVtypeNames[MX_GGUF_N_VTYPES] = {
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64"};

const char *mx_gguf_vtype_name(mx_gguf_vtype_t t) {
  return (unsigned)t < MX_GGUF_N_VTYPES ? kVtypeNames[t] : "?";
}

// Bytes of one scalar of type t (0 for strings and arrays).
static size_t scalar_size(mx_gguf_vtype_t t) {
  switch (t) {
    case MX_GGUF_U8:
    case MX_GGUF_I8:
    case MX_GGUF_BOOL:
      return 1;
    case MX_GGUF_U16:
    case MX_GGUF_I16:
      return 2;
    case MX_GGUF_U32:
    case MX_GGUF_I32:
    case MX_GGUF_F32:
      return 4;
    case MX_GGUF_U64:
    case MX_GGUF_I64:
    case MX_GGUF_F64:
      return 8;
    default:
      return 0;
  }
}

// ---- Cursor ----

typedef struct cur {
  const uint8_t *p;
  size_t len, off;
  const char *name;
} cur_t;

static uint64_t rd_le(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static mx_status_t truncated(const cur_t *c, const char *what) {
  return mx_error_set(MX_ERR_PARSE, "%s: truncated at byte %zu (reading %s; the file has %zu)",
                      c->name, c->off, what, c->len);
}

static mx_status_t rd(cur_t *c, size_t n, const char *what, uint64_t *out) {
  if (c->len - c->off < n) return truncated(c, what);
  *out = rd_le(c->p + c->off, n);
  c->off += n;
  return MX_OK;
}

// A string: u64 length, then the bytes (left in place).
static mx_status_t rd_str(cur_t *c, uint64_t max, const char *what, const char **s, uint64_t *n) {
  uint64_t len = 0;
  mx_status_t st = rd(c, 8, what, &len);
  if (st != MX_OK) return st;
  if (len > max) {
    return mx_error_set(MX_ERR_PARSE, "%s: %s at byte %zu is %llu bytes long (limit %llu)", c->name,
                        what, c->off - 8, (unsigned long long)len, (unsigned long long)max);
  }
  if (c->len - c->off < len) return truncated(c, what);
  *s = (const char *)(c->p + c->off);
  *n = len;
  c->off += (size_t)len;
  return MX_OK;
}

static mx_status_t rd_scalar(cur_t *c, mx_gguf_vtype_t t, const char *key, mx_gguf_value_t *v) {
  uint64_t raw = 0;
  mx_status_t st = rd(c, scalar_size(t), key, &raw);
  if (st != MX_OK) return st;
  v->type = t;
  switch (t) {
    case MX_GGUF_I8:
      v->i = (int8_t)raw;
      break;
    case MX_GGUF_I16:
      v->i = (int16_t)raw;
      break;
    case MX_GGUF_I32:
      v->i = (int32_t)raw;
      break;
    case MX_GGUF_I64:
      v->i = (int64_t)raw;
      break;
    case MX_GGUF_F32: {
      uint32_t b = (uint32_t)raw;
      float f;
      memcpy(&f, &b, 4);
      v->f = f;
      break;
    }
    case MX_GGUF_F64:
      memcpy(&v->f, &raw, 8);
      break;
    case MX_GGUF_BOOL:
      if (raw > 1) {
        return mx_error_set(MX_ERR_PARSE, "%s: key '%s': bool value %llu is not 0 or 1", c->name,
                            key, (unsigned long long)raw);
      }
      v->u = raw;
      break;
    default:
      v->u = raw;
  }
  return MX_OK;
}

static mx_status_t rd_vtype(cur_t *c, const char *key, mx_gguf_vtype_t *t) {
  uint64_t raw = 0;
  mx_status_t st = rd(c, 4, key, &raw);
  if (st != MX_OK) return st;
  if (raw >= MX_GGUF_N_VTYPES) {
    return mx_error_set(MX_ERR_PARSE, "%s: key '%s': unknown value type %llu", c->name, key,
                        (unsigned long long)raw);
  }
  *t = (mx_gguf_vtype_t)raw;
  return MX_OK;
}

static mx_status_t rd_value(cur_t *c, const char *key, mx_gguf_value_t *v) {
  mx_gguf_vtype_t t = MX_GGUF_U8;
  mx_status_t st = rd_vtype(c, key, &t);
  if (st != MX_OK) return st;
  if (t == MX_GGUF_STRING) {
    v->type = t;
    return rd_str(c, MX_GGUF_MAX_STRING, key, &v->str.p, &v->str.len);
  }
  if (t != MX_GGUF_ARRAY) return rd_scalar(c, t, key, v);
  mx_gguf_vtype_t et = MX_GGUF_U8;
  uint64_t n = 0;
  if ((st = rd_vtype(c, key, &et)) != MX_OK || (st = rd(c, 8, key, &n)) != MX_OK) return st;
  if (et == MX_GGUF_ARRAY) {
    return mx_error_set(MX_ERR_PARSE, "%s: key '%s': arrays of arrays are not supported", c->name,
                        key);
  }
  if (n > MX_GGUF_MAX_ARRAY) {
    return mx_error_set(MX_ERR_PARSE, "%s: key '%s': %llu array elements (limit %d)", c->name, key,
                        (unsigned long long)n, MX_GGUF_MAX_ARRAY);
  }
  v->type = t;
  v->arr.type = et;
  v->arr.n = n;
  v->arr.data = c->p + c->off;
  if (et != MX_GGUF_STRING) {
    size_t es = scalar_size(et);
    if ((c->len - c->off) / es < n) return truncated(c, key);
    if (et == MX_GGUF_BOOL) {
      for (uint64_t i = 0; i < n; i++) {
        if (c->p[c->off + i] > 1) {
          return mx_error_set(MX_ERR_PARSE, "%s: key '%s': element %llu is not a bool", c->name,
                              key, (unsigned long long)i);
        }
      }
    }
    c->off += (size_t)(n * es);
    return MX_OK;
  }
  for (uint64_t i = 0; i < n; i++) {
    const char *s;
    uint64_t sl = 0;
    if ((st = rd_str(c, MX_GGUF_MAX_STRING, key, &s, &sl)) != MX_OK) return st;
  }
  return MX_OK;
}

// ---- Parse ----

static int cmp_kv(const void *a, const void *b) {
  return strcmp((*(const mx_gguf_kv_t *const *)a)->key, (*(const mx_gguf_kv_t *const *)b)->key);
}
static int cmp_tname(const void *a, const void *b) {
  return strcmp((*(const mx_gguf_tensor_t *const *)a)->name,
                (*(const mx_gguf_tensor_t *const *)b)->name);
}
static int cmp_toff(const void *a, const void *b) {
  uint64_t x = (*(const mx_gguf_tensor_t *const *)a)->offset;
  uint64_t y = (*(const mx_gguf_tensor_t *const *)b)->offset;
  return x < y ? -1 : x > y;
}

static mx_status_t read_kvs(mx_gguf_t *g, cur_t *c, uint64_t n) {
  g->kv = mx_arena_alloc(g->arena, (size_t)(n ? n : 1) * sizeof *g->kv);
  if (!g->kv) return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", c->name);
  for (uint64_t i = 0; i < n; i++) {
    const char *k;
    uint64_t kl = 0;
    mx_status_t st = rd_str(c, 65535, "a key", &k, &kl);
    if (st != MX_OK) return st;
    if (kl == 0 || memchr(k, 0, (size_t)kl)) {
      return mx_error_set(MX_ERR_PARSE, "%s: key %llu is empty or holds a NUL byte", c->name,
                          (unsigned long long)i);
    }
    char *key = mx_arena_strndup(g->arena, k, (size_t)kl);
    if (!key) return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", c->name);
    g->kv[i].key = key;
    if ((st = rd_value(c, key, &g->kv[i].v)) != MX_OK) return st;
    g->n_kv++;
  }
  return MX_OK;
}

// Checks the tensor's shape and type; fills nbytes.
static mx_status_t check_shape(const cur_t *c, mx_gguf_tensor_t *t) {
  int64_t be, bb;
  if (!mx_ggml_type_block(t->type, &be, &bb)) {
    return mx_error_set(MX_ERR_PARSE, "%s: tensor '%s': unknown tensor type %u", c->name, t->name,
                        t->type);
  }
  int64_t numel = 1;
  for (int32_t d = 0; d < t->n_dims; d++) {
    if (t->ne[d] < 1) {
      return mx_error_set(MX_ERR_PARSE, "%s: tensor '%s': dimension %d is %lld", c->name, t->name,
                          d, (long long)t->ne[d]);
    }
    if (numel > INT64_MAX / t->ne[d]) {
      return mx_error_set(MX_ERR_PARSE, "%s: tensor '%s': the element count overflows", c->name,
                          t->name);
    }
    numel *= t->ne[d];
  }
  if (t->ne[0] % be != 0) {
    return mx_error_set(
        MX_ERR_PARSE, "%s: tensor '%s': row length %lld is not a multiple of the %s block (%lld)",
        c->name, t->name, (long long)t->ne[0], mx_ggml_type_name(t->type), (long long)be);
  }
  if (numel / be > INT64_MAX / bb) {
    return mx_error_set(MX_ERR_PARSE, "%s: tensor '%s': the byte count overflows", c->name,
                        t->name);
  }
  t->nbytes = (uint64_t)(numel / be * bb);
  return MX_OK;
}

static mx_status_t read_tensor_infos(mx_gguf_t *g, cur_t *c, uint64_t n) {
  g->tensors = mx_arena_alloc(g->arena, (size_t)(n ? n : 1) * sizeof *g->tensors);
  if (!g->tensors) return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", c->name);
  for (uint64_t i = 0; i < n; i++) {
    mx_gguf_tensor_t *t = &g->tensors[i];
    const char *s;
    uint64_t sl = 0, v = 0;
    mx_status_t st = rd_str(c, MX_GGUF_MAX_NAME, "a tensor name", &s, &sl);
    if (st != MX_OK) return st;
    if (sl == 0 || memchr(s, 0, (size_t)sl)) {
      return mx_error_set(MX_ERR_PARSE, "%s: tensor %llu: empty name or a NUL byte in it", c->name,
                          (unsigned long long)i);
    }
    if (!(t->name = mx_arena_strndup(g->arena, s, (size_t)sl))) {
      return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", c->name);
    }
    if ((st = rd(c, 4, t->name, &v)) != MX_OK) return st;
    if (v < 1 || v > MX_GGUF_MAX_DIMS) {
      return mx_error_set(MX_ERR_PARSE, "%s: tensor '%s': rank %llu (1 to %d supported)", c->name,
                          t->name, (unsigned long long)v, MX_GGUF_MAX_DIMS);
    }
    t->n_dims = (int32_t)v;
    for (int32_t d = 0; d < MX_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (int32_t d = 0; d < t->n_dims; d++) {
      if ((st = rd(c, 8, t->name, &v)) != MX_OK) return st;
      t->ne[d] = v > (uint64_t)INT64_MAX ? -1 : (int64_t)v;
    }
    if ((st = rd(c, 4, t->name, &v)) != MX_OK) return st;
    t->type = (uint32_t)v;
    if ((st = rd(c, 8, t->name, &t->offset)) != MX_OK) return st;
    if ((st = check_shape(c, t)) != MX_OK) return st;
    g->n_tensors++;
  }
  return MX_OK;
}

static mx_status_t check_unique(mx_gguf_t *g, const char *name) {
  size_t n = (size_t)(g->n_kv > g->n_tensors ? g->n_kv : g->n_tensors);
  const void **p = mx_arena_alloc(g->arena, (n ? n : 1) * sizeof *p);
  if (!p) return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", name);
  for (int32_t i = 0; i < g->n_kv; i++) p[i] = &g->kv[i];
  qsort(p, (size_t)g->n_kv, sizeof *p, cmp_kv);
  for (int32_t i = 1; i < g->n_kv; i++) {
    const mx_gguf_kv_t *a = p[i - 1], *b = p[i];
    if (strcmp(a->key, b->key) == 0) {
      return mx_error_set(MX_ERR_PARSE, "%s: key '%s' appears twice", name, a->key);
    }
  }
  for (int32_t i = 0; i < g->n_tensors; i++) p[i] = &g->tensors[i];
  qsort(p, (size_t)g->n_tensors, sizeof *p, cmp_tname);
  for (int32_t i = 1; i < g->n_tensors; i++) {
    const mx_gguf_tensor_t *a = p[i - 1], *b = p[i];
    if (strcmp(a->name, b->name) == 0) {
      return mx_error_set(MX_ERR_PARSE, "%s: tensor '%s' appears twice", name, a->name);
    }
  }
  return MX_OK;
}

// Alignment, extent and overlap of the tensors' bytes in the data section at data_off.
static mx_status_t check_extents(mx_gguf_t *g, size_t data_off, const char *name) {
  uint64_t avail = g->len > data_off ? g->len - data_off : 0;
  for (int32_t i = 0; i < g->n_tensors; i++) {
    mx_gguf_tensor_t *t = &g->tensors[i];
    if (t->offset % g->alignment != 0) {
      return mx_error_set(MX_ERR_PARSE,
                          "%s: tensor '%s': offset %llu is not a multiple of the "
                          "alignment %u",
                          name, t->name, (unsigned long long)t->offset, g->alignment);
    }
    if (t->offset > avail || t->nbytes > avail - t->offset) {
      return mx_error_set(MX_ERR_PARSE,
                          "%s: tensor '%s': bytes [%llu, +%llu) of the data section reach past "
                          "the end of the file (the section has %llu bytes)",
                          name, t->name, (unsigned long long)t->offset,
                          (unsigned long long)t->nbytes, (unsigned long long)avail);
    }
    t->data = g->base + data_off + t->offset;
  }
  const mx_gguf_tensor_t **p = mx_arena_alloc(g->arena, (size_t)(g->n_tensors + 1) * sizeof *p);
  if (!p) return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", name);
  for (int32_t i = 0; i < g->n_tensors; i++) p[i] = &g->tensors[i];
  qsort(p, (size_t)g->n_tensors, sizeof *p, cmp_toff);
  for (int32_t i = 1; i < g->n_tensors; i++) {
    if (p[i - 1]->offset + p[i - 1]->nbytes > p[i]->offset) {
      return mx_error_set(MX_ERR_PARSE, "%s: tensors '%s' and '%s' overlap", name, p[i - 1]->name,
                          p[i]->name);
    }
  }
  return MX_OK;
}

static mx_status_t parse(mx_gguf_t *g, const char *name) {
  cur_t c = {g->base, g->len, 0, name};
  if (g->len < 4 || memcmp(g->base, "GGUF", 4) != 0) {
    return mx_error_set(MX_ERR_PARSE, "%s: not a GGUF file (the magic is not \"GGUF\")", name);
  }
  c.off = 4;
  uint64_t version = 0, n_tensors = 0, n_kv = 0;
  mx_status_t st = rd(&c, 4, "the version", &version);
  if (st != MX_OK) return st;
  if (version != 2 && version != 3) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "%s: GGUF version %llu is not supported (2 and 3 are)",
                        name, (unsigned long long)version);
  }
  g->version = (uint32_t)version;
  if ((st = rd(&c, 8, "the tensor count", &n_tensors)) != MX_OK) return st;
  if ((st = rd(&c, 8, "the key/value count", &n_kv)) != MX_OK) return st;
  // Each key/value takes at least 13 bytes (length, one key byte, type, one value byte) and
  // each tensor info at least 33 (name length and byte, rank, one dim, type, offset).
  if (n_kv > MX_GGUF_MAX_KV || n_kv > (g->len - c.off) / 13) {
    return mx_error_set(MX_ERR_PARSE, "%s: %llu key/values cannot fit (limit %d, file %zu bytes)",
                        name, (unsigned long long)n_kv, MX_GGUF_MAX_KV, g->len);
  }
  if (n_tensors > MX_GGUF_MAX_TENSORS || n_tensors > (g->len - c.off) / 33) {
    return mx_error_set(MX_ERR_PARSE, "%s: %llu tensors cannot fit (limit %d, file %zu bytes)",
                        name, (unsigned long long)n_tensors, MX_GGUF_MAX_TENSORS, g->len);
  }
  if ((st = read_kvs(g, &c, n_kv)) != MX_OK) return st;
  g->alignment = 32;
  const mx_gguf_kv_t *al = mx_gguf_find(g, "general.alignment");
  if (al) {
    if (al->v.type != MX_GGUF_U32 || al->v.u == 0 || (al->v.u & (al->v.u - 1)) != 0) {
      return mx_error_set(MX_ERR_PARSE, "%s: general.alignment must be a uint32 power of two",
                          name);
    }
    g->alignment = (uint32_t)al->v.u;
  }
  if ((st = read_tensor_infos(g, &c, n_tensors)) != MX_OK) return st;
  if ((st = check_unique(g, name)) != MX_OK) return st;
  size_t data_off = c.off;
  if (data_off % g->alignment) data_off += g->alignment - data_off % g->alignment;
  if (data_off > g->len && g->n_tensors > 0) {
    return mx_error_set(MX_ERR_PARSE, "%s: truncated before the data section (byte %zu)", name,
                        data_off);
  }
  return check_extents(g, data_off, name);
}

mx_status_t mx_gguf_parse(const void *data, size_t len, const char *name, mx_gguf_t **out) {
  *out = NULL;
  const char *nm = name ? name : "gguf";
  if (!data && len) return mx_error_set(MX_ERR_INVALID_ARG, "%s: no data", nm);
  mx_gguf_t *g = calloc(1, sizeof *g);
  mx_arena_t *arena = mx_arena_create();
  if (!g || !arena) {
    free(g);
    mx_arena_destroy(arena);
    return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", nm);
  }
  g->arena = arena;
  if (!(g->name = mx_arena_strdup(arena, nm))) {
    mx_gguf_free(g);
    return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", nm);
  }
  g->base = data;
  g->len = len;
  mx_status_t st = parse(g, nm);
  if (st != MX_OK) {
    mx_gguf_free(g);
    return st;
  }
  *out = g;
  return MX_OK;
}

mx_status_t mx_gguf_open(const char *path, mx_gguf_t **out) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return mx_error_set(MX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return mx_error_set(MX_ERR_IO, "%s: not a regular file", path);
  }
  size_t len = (size_t)sb.st_size;
  if (len < 4) {
    close(fd);
    return mx_error_set(MX_ERR_PARSE, "%s: not a GGUF file (%zu bytes)", path, len);
  }
  void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (map == MAP_FAILED) {
    return mx_error_set(MX_ERR_IO, "%s: cannot mmap %zu bytes: %s", path, len, strerror(e));
  }
  mx_status_t st = mx_gguf_parse(map, len, path, out);
  if (st != MX_OK) {
    munmap(map, len);
    return st;
  }
  (*out)->map = map;
  (*out)->map_len = len;
  return MX_OK;
}

bool mx_gguf_take_map(mx_gguf_t *g, void **map, size_t *len) {
  if (!g || !g->map) return false;
  *map = g->map;
  *len = g->map_len;
  g->map = NULL;
  g->map_len = 0;
  return true;
}

void mx_gguf_free(mx_gguf_t *g) {
  if (!g) return;
  if (g->map) munmap(g->map, g->map_len);
  mx_arena_destroy(g->arena);
  free(g);
}

// ---- Lookups ----

const mx_gguf_kv_t *mx_gguf_find(const mx_gguf_t *g, const char *key) {
  for (int32_t i = 0; g && key && i < g->n_kv; i++) {
    if (strcmp(g->kv[i].key, key) == 0) return &g->kv[i];
  }
  return NULL;
}

const mx_gguf_tensor_t *mx_gguf_find_tensor(const mx_gguf_t *g, const char *name) {
  for (int32_t i = 0; g && name && i < g->n_tensors; i++) {
    if (strcmp(g->tensors[i].name, name) == 0) return &g->tensors[i];
  }
  return NULL;
}

static mx_status_t wrong_type(const mx_gguf_t *g, const mx_gguf_kv_t *kv, const char *want) {
  return mx_error_set(MX_ERR_PARSE, "%s: GGUF key '%s' must be %s, not %s", g->name, kv->key, want,
                      mx_gguf_vtype_name(kv->v.type));
}

static bool is_unsigned(mx_gguf_vtype_t t) {
  return t == MX_GGUF_U8 || t == MX_GGUF_U16 || t == MX_GGUF_U32 || t == MX_GGUF_U64;
}
static bool is_signed(mx_gguf_vtype_t t) {
  return t == MX_GGUF_I8 || t == MX_GGUF_I16 || t == MX_GGUF_I32 || t == MX_GGUF_I64;
}

mx_status_t mx_gguf_get_i64(const mx_gguf_t *g, const char *key, int64_t def, int64_t *out) {
  const mx_gguf_kv_t *kv = mx_gguf_find(g, key);
  *out = def;
  if (!kv) return MX_OK;
  if (is_signed(kv->v.type)) {
    *out = kv->v.i;
  } else if (is_unsigned(kv->v.type) && kv->v.u <= (uint64_t)INT64_MAX) {
    *out = (int64_t)kv->v.u;
  } else {
    return wrong_type(g, kv, "an integer");
  }
  return MX_OK;
}

mx_status_t mx_gguf_get_u32(const mx_gguf_t *g, const char *key, uint32_t def, uint32_t *out) {
  int64_t v;
  mx_status_t st = mx_gguf_get_i64(g, key, def, &v);
  if (st != MX_OK) return st;
  if (v < 0 || v > UINT32_MAX) {
    return mx_error_set(MX_ERR_PARSE, "%s: GGUF key '%s': %lld is out of range", g->name, key,
                        (long long)v);
  }
  *out = (uint32_t)v;
  return MX_OK;
}

mx_status_t mx_gguf_get_f64(const mx_gguf_t *g, const char *key, double def, double *out) {
  const mx_gguf_kv_t *kv = mx_gguf_find(g, key);
  *out = def;
  if (!kv) return MX_OK;
  if (kv->v.type == MX_GGUF_F32 || kv->v.type == MX_GGUF_F64) {
    *out = kv->v.f;
  } else if (is_signed(kv->v.type)) {
    *out = (double)kv->v.i;
  } else if (is_unsigned(kv->v.type)) {
    *out = (double)kv->v.u;
  } else {
    return wrong_type(g, kv, "a number");
  }
  if (!isfinite(*out)) {
    return mx_error_set(MX_ERR_PARSE, "%s: GGUF key '%s' is not finite", g->name, key);
  }
  return MX_OK;
}

mx_status_t mx_gguf_get_bool(const mx_gguf_t *g, const char *key, bool def, bool *out) {
  const mx_gguf_kv_t *kv = mx_gguf_find(g, key);
  *out = def;
  if (!kv) return MX_OK;
  if (kv->v.type != MX_GGUF_BOOL) return wrong_type(g, kv, "a bool");
  *out = kv->v.u != 0;
  return MX_OK;
}

mx_status_t mx_gguf_get_str(const mx_gguf_t *g, const char *key, const char **p, size_t *len) {
  const mx_gguf_kv_t *kv = mx_gguf_find(g, key);
  *p = NULL;
  *len = 0;
  if (!kv) return MX_OK;
  if (kv->v.type != MX_GGUF_STRING) return wrong_type(g, kv, "a string");
  *p = kv->v.str.p;
  *len = (size_t)kv->v.str.len;
  return MX_OK;
}

mx_status_t mx_gguf_get_arr(const mx_gguf_t *g, const char *key, mx_gguf_vtype_t elem,
                            const mx_gguf_value_t **out) {
  const mx_gguf_kv_t *kv = mx_gguf_find(g, key);
  *out = NULL;
  if (!kv) return MX_OK;
  if (kv->v.type != MX_GGUF_ARRAY) return wrong_type(g, kv, "an array");
  if (elem != MX_GGUF_N_VTYPES && kv->v.arr.type != elem &&
      !(elem == MX_GGUF_I64 && (is_signed(kv->v.arr.type) || is_unsigned(kv->v.arr.type))) &&
      !(elem == MX_GGUF_F64 && (kv->v.arr.type == MX_GGUF_F32))) {
    return mx_error_set(MX_ERR_PARSE, "%s: GGUF key '%s' must be an array of %s, not of %s",
                        g->name, key, mx_gguf_vtype_name(elem), mx_gguf_vtype_name(kv->v.arr.type));
  }
  *out = &kv->v;
  return MX_OK;
}

double mx_gguf_arr_f64(const mx_gguf_value_t *arr, uint64_t i) {
  const uint8_t *p = arr->arr.data + i * scalar_size(arr->arr.type);
  uint64_t raw = rd_le(p, scalar_size(arr->arr.type));
  if (arr->arr.type == MX_GGUF_F32) {
    uint32_t b = (uint32_t)raw;
    float f;
    memcpy(&f, &b, 4);
    return f;
  }
  if (arr->arr.type == MX_GGUF_F64) {
    double d;
    memcpy(&d, &raw, 8);
    return d;
  }
  return (double)mx_gguf_arr_i64(arr, i);
}

int64_t mx_gguf_arr_i64(const mx_gguf_value_t *arr, uint64_t i) {
  size_t es = scalar_size(arr->arr.type);
  uint64_t raw = rd_le(arr->arr.data + i * es, es);
  switch (arr->arr.type) {
    case MX_GGUF_I8:
      return (int8_t)raw;
    case MX_GGUF_I16:
      return (int16_t)raw;
    case MX_GGUF_I32:
      return (int32_t)raw;
    case MX_GGUF_U64:
      return raw > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)raw;
    default:
      return (int64_t)raw;
  }
}

void mx_gguf_arr_next_str(const mx_gguf_value_t *arr, size_t *cursor, const char **p, size_t *len) {
  uint64_t n = rd_le(arr->arr.data + *cursor, 8);
  *p = (const char *)(arr->arr.data + *cursor + 8);
  *len = (size_t)n;
  *cursor += 8 + (size_t)n;
}
