// Checkpoint directory: DIR/model.safetensors or the shards of DIR/model.safetensors.index.json,
// each mmapped read-only; weights point into the mappings (zero-copy; a tensor misaligned for its
// element type is copied) and are found by name through an open-addressing hash table.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "model/checkpoint_internal.h"
#include "model/safetensors_internal.h"

typedef struct ck_file {
  void *map;
  size_t len;
} ck_file_t;

struct mx_checkpoint {
  mx_arena_t *arena;
  int32_t n_files;
  ck_file_t *files;  // arena
  int32_t n;
  mx_weight_t *w;  // arena, in shard order then header order
  int32_t *table;  // arena; weight index + 1, 0 = empty slot
  uint32_t mask;   // table size - 1 (a power of two)
  int32_t cap_w;   // capacity of w once mx_checkpoint_put has grown it (0 before)
  int32_t n_owned, cap_owned;
  void **owned;                   // heap: data of tensors put by mx_checkpoint_put, freed at close
  mx_checkpoint_limits_t limits;  // defaults filled in
  uint64_t total_bytes;           // sizes of the files opened so far
};

static uint32_t hash_name(const char *s) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

// Index of the weight called `name`, or -1.
static int32_t lookup(const mx_checkpoint_t *ck, const char *name) {
  if (!ck->table) return -1;
  for (uint32_t i = hash_name(name) & ck->mask;; i = (i + 1) & ck->mask) {
    int32_t k = ck->table[i];
    if (k == 0) return -1;
    if (strcmp(ck->w[k - 1].name, name) == 0) return k - 1;
  }
}

// Builds the table; a name seen twice (only possible across shards: mx_st_parse rejects
// duplicates within a file) is an error naming both files.
static mx_status_t build_table(mx_checkpoint_t *ck) {
  uint32_t cap = 16;
  while (cap < 2u * (uint32_t)ck->n) cap *= 2;
  if (ck->table && ck->mask + 1 == cap) {
    memset(ck->table, 0, cap * sizeof *ck->table);
  } else {
    ck->table = mx_arena_alloc(ck->arena, cap * sizeof *ck->table);
  }
  if (!ck->table) return mx_error_set(MX_ERR_NOMEM, "out of memory for the tensor table");
  ck->mask = cap - 1;
  for (int32_t j = 0; j < ck->n; j++) {
    uint32_t i = hash_name(ck->w[j].name) & ck->mask;
    for (; ck->table[i]; i = (i + 1) & ck->mask) {
      const mx_weight_t *o = &ck->w[ck->table[i] - 1];
      if (strcmp(o->name, ck->w[j].name) == 0) {
        return mx_error_set(MX_ERR_PARSE, "%s: tensor '%.200s' is also in %s", ck->w[j].file,
                            ck->w[j].name, o->file);
      }
    }
    ck->table[i] = j + 1;
  }
  return MX_OK;
}

static char *join_path(mx_arena_t *arena, const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  char *p = mx_arena_alloc(arena, a + b + 2);
  if (!p) return NULL;
  memcpy(p, dir, a);
  size_t k = a;
  if (a && dir[a - 1] != '/') p[k++] = '/';
  memcpy(p + k, name, b + 1);
  return p;
}

// Takes ownership of heap `data` (freed at close).
static mx_status_t keep_owned(mx_checkpoint_t *ck, void *data) {
  if (ck->n_owned == ck->cap_owned) {
    int32_t cap = ck->cap_owned ? 2 * ck->cap_owned : 64;
    void **o = realloc(ck->owned, (size_t)cap * sizeof *o);
    if (!o) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    ck->owned = o;
    ck->cap_owned = cap;
  }
  ck->owned[ck->n_owned++] = data;
  return MX_OK;
}

// The format puts tensor data at any byte offset; writers that pad the header to 8 bytes (the
// safetensors library) keep every tensor aligned to its element, but others (mlx's) do not, and
// the kernels read f32 / f16 / bf16 weights through typed pointers. A misaligned tensor gets an
// aligned heap copy the checkpoint owns (its file name kept for messages); aligned ones stay
// mapped, so this costs nothing for the usual files.
static mx_status_t align_data(mx_checkpoint_t *ck, mx_weight_t *w) {
  size_t es = mx_elem_size(w->dtype);
  if (es <= 1 || w->nbytes == 0 || (uintptr_t)w->data % es == 0) return MX_OK;
  void *copy = aligned_alloc(64, (w->nbytes + 63) & ~(size_t)63);
  if (!copy)
    return mx_error_set(MX_ERR_NOMEM, "%s: out of memory copying misaligned tensor '%.200s'",
                        w->file, w->name);
  memcpy(copy, w->data, w->nbytes);
  mx_status_t st = keep_owned(ck, copy);
  if (st != MX_OK) {
    free(copy);
    return st;
  }
  w->data = copy;
  return MX_OK;
}

// Maps `path` read-only and appends its validated tensors to ck->w.
static mx_status_t open_shard(mx_checkpoint_t *ck, const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return mx_error_set(MX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return mx_error_set(MX_ERR_IO, "%s: not a regular file", path);
  }
  size_t len = (size_t)sb.st_size;
  if ((uint64_t)sb.st_size > ck->limits.max_total_bytes - ck->total_bytes) {
    close(fd);
    return mx_error_set(MX_ERR_IO,
                        "%s: %llu bytes: the checkpoint's files would total %llu bytes, over the "
                        "mapped-size limit of %llu",
                        path, (unsigned long long)sb.st_size,
                        (unsigned long long)(ck->total_bytes + (uint64_t)sb.st_size),
                        (unsigned long long)ck->limits.max_total_bytes);
  }
  ck->total_bytes += (uint64_t)sb.st_size;
  uint8_t small[8];
  void *map = NULL;
  if (len < sizeof small) {
    // Too short to be valid (and mmap refuses length 0): read it so the parser can say why.
    ssize_t got = read(fd, small, len);
    len = got > 0 ? (size_t)got : 0;
  } else {
    map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int e = errno;
      close(fd);
      return mx_error_set(MX_ERR_IO, "%s: cannot mmap %zu bytes: %s", path, len, strerror(e));
    }
  }
  close(fd);  // the mapping stays valid
  if (map) {
    ck->files[ck->n_files].map = map;
    ck->files[ck->n_files].len = len;
    ck->n_files++;
  }
  mx_weight_t *w = NULL;
  int32_t n = 0;
  mx_status_t st =
      mx_st_parse(map ? map : small, len, path, ck->limits.max_tensor_bytes, ck->arena, &w, &n);
  if (st != MX_OK) return st;
  if (n == 0) return MX_OK;
  for (int32_t i = 0; i < n && st == MX_OK; i++) st = align_data(ck, &w[i]);
  if (st != MX_OK) return st;
  ck->w = mx_arena_grow(ck->arena, ck->w, (size_t)ck->n, (size_t)ck->n + (size_t)n, sizeof *w);
  if (!ck->w) return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", path);
  memcpy(ck->w + ck->n, w, (size_t)n * sizeof *w);
  ck->n += n;
  return MX_OK;
}

// Every tensor the index lists must be in the shard it names.
static mx_status_t check_index(const mx_checkpoint_t *ck, const mx_ckpt_index_t *ix,
                               const char *index_path) {
  for (int32_t i = 0; i < ix->n_entries; i++) {
    int32_t k = lookup(ck, ix->names[i]);
    const char *want = ix->shards[ix->shard_of[i]];
    if (k < 0) {
      return mx_error_set(MX_ERR_PARSE,
                          "%s: tensor '%.200s' is listed in shard %s but missing there", index_path,
                          ix->names[i], want);
    }
    const char *file = ck->w[k].file;
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (strcmp(base, want) != 0) {
      return mx_error_set(MX_ERR_PARSE, "%s: tensor '%.200s' is listed in shard %s but is in %s",
                          index_path, ix->names[i], want, file);
    }
  }
  return MX_OK;
}

static mx_status_t open_sharded(mx_checkpoint_t *ck, const char *dir, const char *index_path) {
  char *text = NULL;
  size_t len = 0;
  mx_status_t st = mx_read_file_max(index_path, MX_CONFIG_JSON_MAX_BYTES, &text, &len);
  if (st != MX_OK) return st;
  mx_ckpt_index_t ix;
  st = mx_ckpt_index_parse(text, len, index_path, ck->arena, &ix);
  free(text);
  if (st != MX_OK) return st;
  ck->files = mx_arena_alloc(ck->arena, (size_t)ix.n_shards * sizeof *ck->files);
  if (!ck->files) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t s = 0; s < ix.n_shards && st == MX_OK; s++) {
    const char *path = join_path(ck->arena, dir, ix.shards[s]);
    if (!path) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    if (access(path, F_OK) != 0 && errno == ENOENT) {
      return mx_error_set(MX_ERR_IO, "%s: shard %s does not exist", index_path, ix.shards[s]);
    }
    st = open_shard(ck, path);
  }
  if (st == MX_OK) st = build_table(ck);
  if (st == MX_OK) st = check_index(ck, &ix, index_path);
  return st;
}

// Whether `path` names something, even something that cannot be opened (a symlink loop, a
// file without permission): those are reported by the open that follows, not as "missing".
static bool present(const char *path) { return access(path, F_OK) == 0 || errno != ENOENT; }

mx_status_t mx_checkpoint_open(const char *dir, mx_checkpoint_t **out) {
  return mx_checkpoint_open_ex(dir, NULL, out);
}

mx_status_t mx_checkpoint_open_ex(const char *dir, const mx_checkpoint_limits_t *limits,
                                  mx_checkpoint_t **out) {
  *out = NULL;
  if (!dir) return mx_error_set(MX_ERR_INVALID_ARG, "mx_checkpoint_open: no directory");
  mx_checkpoint_t *ck = calloc(1, sizeof *ck);
  mx_arena_t *arena = mx_arena_create();
  if (!ck || !arena) {
    free(ck);
    mx_arena_destroy(arena);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  ck->arena = arena;
  ck->limits.max_tensor_bytes = limits && limits->max_tensor_bytes ? limits->max_tensor_bytes
                                                                   : MX_CHECKPOINT_MAX_TENSOR_BYTES;
  ck->limits.max_total_bytes =
      limits && limits->max_total_bytes ? limits->max_total_bytes : MX_CHECKPOINT_MAX_TOTAL_BYTES;
  mx_status_t st = MX_OK;
  const char *index_path = join_path(arena, dir, "model.safetensors.index.json");
  const char *single_path = join_path(arena, dir, "model.safetensors");
  if (!index_path || !single_path) {
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  } else if (present(index_path)) {
    st = open_sharded(ck, dir, index_path);
  } else if (present(single_path)) {
    ck->files = mx_arena_alloc(arena, sizeof *ck->files);
    st = ck->files ? open_shard(ck, single_path) : mx_error_set(MX_ERR_NOMEM, "out of memory");
    if (st == MX_OK) st = build_table(ck);
  } else {
    st = mx_error_set(MX_ERR_IO, "%s: no model.safetensors or model.safetensors.index.json", dir);
  }
  if (st != MX_OK) {
    mx_checkpoint_close(ck);
    return st;
  }
  *out = ck;
  return MX_OK;
}

void mx_checkpoint_close(mx_checkpoint_t *ck) {
  if (!ck) return;
  for (int32_t i = 0; i < ck->n_owned; i++) free(ck->owned[i]);
  free(ck->owned);
  for (int32_t i = 0; i < ck->n_files; i++) munmap(ck->files[i].map, ck->files[i].len);
  mx_arena_destroy(ck->arena);
  free(ck);
}

size_t mx_checkpoint_release(const mx_checkpoint_t *ck, const void *data, size_t nbytes) {
  if (!ck || !data || nbytes == 0) return 0;
  long pg = sysconf(_SC_PAGESIZE);
  uintptr_t page = pg > 0 ? (uintptr_t)pg : 4096;
  uintptr_t b = (uintptr_t)data, e = b + nbytes;
  for (int32_t i = 0; i < ck->n_files; i++) {
    uintptr_t mb = (uintptr_t)ck->files[i].map, me = mb + ck->files[i].len;
    if (b < mb || e > me) continue;
    // Whole pages only: a page shared with a neighbouring tensor may still be needed.
    uintptr_t pb = (b + page - 1) / page * page, pe = e / page * page;
    if (pe <= pb) return 0;
    // A read-only private file mapping: dropping the pages loses nothing, the next access
    // reads them from the file again.
    if (madvise((void *)pb, pe - pb, MADV_DONTNEED) != 0) return 0;
    return pe - pb;
  }
  return 0;
}

int32_t mx_checkpoint_count(const mx_checkpoint_t *ck) { return ck ? ck->n : 0; }

const mx_weight_t *mx_checkpoint_weight(const mx_checkpoint_t *ck, int32_t i) {
  if (!ck || i < 0 || i >= ck->n) return NULL;
  return &ck->w[i];
}

const mx_weight_t *mx_checkpoint_find(const mx_checkpoint_t *ck, const char *name) {
  if (!ck || !name) return NULL;
  int32_t k = lookup(ck, name);
  return k < 0 ? NULL : &ck->w[k];
}

// Appends w and rebuilds the table.
static mx_status_t append_weight(mx_checkpoint_t *ck, const mx_weight_t *w) {
  if (ck->n >= ck->cap_w) {  // doubling: the arena keeps old arrays, so grow geometrically
    int32_t cap = ck->n < 16 ? 32 : 2 * ck->n;
    mx_weight_t *nw = mx_arena_grow(ck->arena, ck->w, (size_t)ck->n, (size_t)cap, sizeof *nw);
    if (!nw) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    ck->w = nw;
    ck->cap_w = cap;
  }
  ck->w[ck->n++] = *w;
  return build_table(ck);
}

// ---- Checkpoints built by another reader (the GGUF loader) ----

mx_status_t mx_checkpoint_create(const mx_checkpoint_limits_t *limits, mx_checkpoint_t **out) {
  *out = NULL;
  mx_checkpoint_t *ck = calloc(1, sizeof *ck);
  mx_arena_t *arena = mx_arena_create();
  if (ck) ck->arena = arena;
  if (!ck || !arena || !(ck->files = mx_arena_alloc(arena, sizeof *ck->files))) {
    free(ck);
    mx_arena_destroy(arena);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  ck->limits.max_tensor_bytes = limits && limits->max_tensor_bytes ? limits->max_tensor_bytes
                                                                   : MX_CHECKPOINT_MAX_TENSOR_BYTES;
  ck->limits.max_total_bytes =
      limits && limits->max_total_bytes ? limits->max_total_bytes : MX_CHECKPOINT_MAX_TOTAL_BYTES;
  *out = ck;
  return build_table(ck);
}

void mx_checkpoint_adopt_map(mx_checkpoint_t *ck, void *map, size_t len) {
  ck->files[0].map = map;
  ck->files[0].len = len;
  ck->n_files = 1;
}

mx_status_t mx_checkpoint_add_view(mx_checkpoint_t *ck, const char *name, mx_elem_type_t dtype,
                                   int32_t rank, const int64_t *dims, const void *data,
                                   const char *file) {
  size_t nbytes = mx_elem_size(dtype);
  for (int32_t i = 0; i < rank; i++) nbytes *= (size_t)dims[i];
  if (nbytes > ck->limits.max_tensor_bytes) {
    return mx_error_set(MX_ERR_IO, "%s: tensor '%s' has %zu bytes, over the limit of %llu", file,
                        name, nbytes, (unsigned long long)ck->limits.max_tensor_bytes);
  }
  if (lookup(ck, name) >= 0) {
    return mx_error_set(MX_ERR_PARSE, "%s: two tensors map to '%s'", file, name);
  }
  mx_weight_t w;
  memset(&w, 0, sizeof w);
  w.name = mx_arena_strdup(ck->arena, name);
  w.file = mx_arena_strdup(ck->arena, file);
  if (!w.name || !w.file) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  w.dtype = dtype;
  w.rank = rank;
  for (int32_t i = 0; i < rank; i++) w.dims[i] = dims[i];
  w.data = data;
  w.nbytes = nbytes;
  return append_weight(ck, &w);
}

// ---- Resident-weight overlay ----

// A mmapped tensor that is no longer found: its pages are handed back to the kernel (they are
// clean file pages; should anything still read them they fault in again from the file), so a
// requantized model does not keep the float original resident.
static void release_mapped(const mx_checkpoint_t *ck, const mx_weight_t *w) {
  uintptr_t b = (uintptr_t)w->data, e = b + w->nbytes;
  for (int32_t i = 0; i < ck->n_files; i++) {
    uintptr_t fb = (uintptr_t)ck->files[i].map, fe = fb + ck->files[i].len;
    if (b < fb || e > fe) continue;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (b + pg - 1) & ~(pg - 1), hi = e & ~(pg - 1);  // whole pages inside it
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
    return;
  }
}

mx_status_t mx_checkpoint_put(mx_checkpoint_t *ck, const char *name, mx_elem_type_t dtype,
                              int32_t rank, const int64_t *dims, void *data) {
  if (!ck || !name || !*name || rank < 0 || rank > MX_MAX_RANK || (rank > 0 && !dims) ||
      mx_elem_size(dtype) == 0) {
    free(data);
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_checkpoint_put: bad arguments for '%s'",
                        name ? name : "(null)");
  }
  size_t nbytes = mx_elem_size(dtype);
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] < 0) {
      free(data);
      return mx_error_set(MX_ERR_INVALID_ARG, "mx_checkpoint_put: negative dim for '%s'", name);
    }
    nbytes *= (size_t)dims[i];
  }
  mx_status_t st = keep_owned(ck, data);
  if (st != MX_OK) {
    free(data);
    return st;
  }
  mx_weight_t w;
  memset(&w, 0, sizeof w);
  w.dtype = dtype;
  w.rank = rank;
  for (int32_t i = 0; i < rank; i++) w.dims[i] = dims[i];
  w.data = data;
  w.nbytes = nbytes;
  w.file = "(resident)";
  int32_t k = lookup(ck, name);
  if (k >= 0) {
    release_mapped(ck, &ck->w[k]);
    w.name = ck->w[k].name;
    ck->w[k] = w;
    return MX_OK;
  }
  w.name = mx_arena_strdup(ck->arena, name);
  if (!w.name) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  return append_weight(ck, &w);
}

mx_status_t mx_checkpoint_remove(mx_checkpoint_t *ck, const char *name) {
  int32_t k = ck && name ? lookup(ck, name) : -1;
  if (k < 0) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_checkpoint_remove: no tensor '%s'",
                        name ? name : "(null)");
  }
  release_mapped(ck, &ck->w[k]);
  memmove(&ck->w[k], &ck->w[k + 1], (size_t)(ck->n - k - 1) * sizeof *ck->w);
  ck->n--;
  return build_table(ck);
}
