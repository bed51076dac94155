// The reference interpreter's values and environments: tensors checked against the run's memory
// limit, clones and frees, type equality (storage types of quantized values included), and the
// per-invocation environment indexed by value id (see interp.c for the execution model).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/interp_internal.h"
#include "hlo/interp_quant.h"

// ---------------------------------------------------------------------------------------------
// Tensors
// ---------------------------------------------------------------------------------------------

mx_status_t mx_interp_type_nbytes(const mx_interp_t *ip, const mx_type_t *t, size_t *out) {
  if (t->rank < 0 || t->rank > MX_MAX_RANK)
    return mx_error_set(MX_ERR_RUNTIME, "invalid tensor rank %d", (int)t->rank);
  size_t es = mx_elem_size(t->elem);
  if (es == 0) return mx_error_set(MX_ERR_RUNTIME, "invalid element type in tensor type");
  size_t n = es;
  for (int32_t i = 0; i < t->rank; i++) {
    int64_t d = t->dims[i];
    if (d < 0) return mx_error_set(MX_ERR_RUNTIME, "dynamic or negative dimension in result type");
    if (d != 0 && n > SIZE_MAX / (size_t)d)
      n = SIZE_MAX;
    else
      n *= (size_t)d;
  }
  if (n > ip->max_bytes) {
    char buf[128];
    return mx_error_set(MX_ERR_RUNTIME,
                        "tensor %s needs %zu bytes, over the interpreter limit of %zu bytes",
                        mx_type_str(t, buf, sizeof buf), n, ip->max_bytes);
  }
  *out = n;
  return MX_OK;
}

// Allocates a zeroed value of any type kind (tensor, tuple, token), honouring max_tensor_bytes.
mx_status_t mx_interp_value_alloc(const mx_interp_t *ip, mx_tensor_t *t, const mx_type_t *type) {
  memset(t, 0, sizeof *t);
  if (type->kind == MX_TYPE_TENSOR) {
    size_t nb;
    mx_status_t st = mx_interp_type_nbytes(ip, type, &nb);
    if (st) return st;
    st = mx_tensor_alloc(t, type);
    if (st) memset(t, 0, sizeof *t);
    return st;
  }
  t->type = *type;
  if (type->kind == MX_TYPE_TUPLE) {
    if (type->n_tuple < 0 || (type->n_tuple > 0 && !type->tuple))
      return mx_error_set(MX_ERR_RUNTIME, "invalid tuple type");
    if (type->n_tuple == 0) return MX_OK;
    t->tuple = calloc((size_t)type->n_tuple, sizeof *t->tuple);
    if (!t->tuple) return mx_error_set(MX_ERR_NOMEM, "out of memory allocating a tuple");
    t->n_tuple = type->n_tuple;
    for (int32_t i = 0; i < type->n_tuple; i++) {
      mx_status_t st = mx_interp_value_alloc(ip, &t->tuple[i], &type->tuple[i]);
      if (st) {
        mx_tensor_free(t);
        memset(t, 0, sizeof *t);
        return st;
      }
    }
  }
  return MX_OK;  // token: no storage
}

// Deep copy of any value kind.
mx_status_t mx_interp_value_clone(mx_tensor_t *dst, const mx_tensor_t *src) {
  memset(dst, 0, sizeof *dst);
  if (src->type.kind == MX_TYPE_TENSOR) {
    mx_status_t st = mx_tensor_alloc(dst, &src->type);
    if (st) {
      memset(dst, 0, sizeof *dst);
      return st;
    }
    size_t n = src->nbytes < dst->nbytes ? src->nbytes : dst->nbytes;
    if (n) memcpy(dst->data, src->data, n);
    return MX_OK;
  }
  dst->type = src->type;
  if (src->type.kind == MX_TYPE_TUPLE && src->n_tuple > 0) {
    dst->tuple = calloc((size_t)src->n_tuple, sizeof *dst->tuple);
    if (!dst->tuple) return mx_error_set(MX_ERR_NOMEM, "out of memory copying a tuple");
    dst->n_tuple = src->n_tuple;
    for (int32_t i = 0; i < src->n_tuple; i++) {
      mx_status_t st = mx_interp_value_clone(&dst->tuple[i], &src->tuple[i]);
      if (st) {
        mx_tensor_free(dst);
        memset(dst, 0, sizeof *dst);
        return st;
      }
    }
  }
  return MX_OK;
}

void mx_interp_value_free(mx_tensor_t *t) {
  mx_tensor_free(t);
  memset(t, 0, sizeof *t);
}

void mx_interp_values_free(mx_tensor_t *v, int32_t n) {
  if (!v) return;
  for (int32_t i = 0; i < n; i++) mx_interp_value_free(&v[i]);
}

// Structural type equality for runtime values (tuple element types compared recursively).
// Same storage: element type (a quantized type's storage type) and shape.
bool mx_interp_storage_type_equal(const mx_type_t *a, const mx_type_t *b) {
  if (a->kind != MX_TYPE_TENSOR || b->kind != MX_TYPE_TENSOR) return false;
  if (a->elem != b->elem || a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool mx_interp_value_type_equal(const mx_type_t *a, const mx_type_t *b) {
  if (a->kind != b->kind) return false;
  if (a->kind == MX_TYPE_TENSOR)
    return mx_interp_storage_type_equal(a, b) && mx_interp_same_quant(a, b);
  if (a->kind == MX_TYPE_TUPLE) {
    if (a->n_tuple != b->n_tuple) return false;
    for (int32_t i = 0; i < a->n_tuple; i++)
      if (!mx_interp_value_type_equal(&a->tuple[i], &b->tuple[i])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Environments
// ---------------------------------------------------------------------------------------------

mx_status_t mx_interp_env_init(mx_env_t *e, const mx_func_t *f) {
  memset(e, 0, sizeof *e);
  e->f = f;
  e->n = f->n_values;
  size_t n = e->n > 0 ? (size_t)e->n : 1;
  e->vals = calloc(n, sizeof *e->vals);
  e->state = calloc(n, 1);
  e->local = calloc(n, 1);
  if (!e->vals || !e->state || !e->local) {
    free(e->vals);
    free(e->state);
    free(e->local);
    memset(e, 0, sizeof *e);
    return mx_error_set(MX_ERR_NOMEM, "out of memory creating an interpreter environment");
  }
  return MX_OK;
}

void mx_interp_env_clear_slot(mx_env_t *e, int32_t id) {
  if (e->state[id] == ENV_OWNED) mx_tensor_free(&e->vals[id]);
  memset(&e->vals[id], 0, sizeof e->vals[id]);
  e->state[id] = ENV_EMPTY;
}

void mx_interp_env_destroy(mx_env_t *e) {
  if (!e->vals) return;
  for (int32_t i = 0; i < e->n; i++) mx_interp_env_clear_slot(e, i);
  free(e->vals);
  free(e->state);
  free(e->local);
  memset(e, 0, sizeof *e);
}

mx_status_t mx_interp_env_check_id(const mx_env_t *e, int32_t id) {
  if (id < 0 || id >= e->n)
    return mx_error_set(MX_ERR_RUNTIME, "value id %d out of range in function @%s", (int)id,
                        e->f->name ? e->f->name : "?");
  return MX_OK;
}

// Stores an owned value (ownership moves into the environment).
mx_status_t mx_interp_env_put(mx_env_t *e, int32_t id, mx_tensor_t *v) {
  mx_status_t st = mx_interp_env_check_id(e, id);
  if (st) {
    mx_interp_value_free(v);
    return st;
  }
  mx_interp_env_clear_slot(e, id);
  e->vals[id] = *v;
  e->state[id] = ENV_OWNED;
  memset(v, 0, sizeof *v);
  return MX_OK;
}

// Binds a value the caller keeps owning (function / region arguments).
mx_status_t mx_interp_env_borrow(mx_env_t *e, int32_t id, const mx_tensor_t *v) {
  mx_status_t st = mx_interp_env_check_id(e, id);
  if (st) return st;
  mx_interp_env_clear_slot(e, id);
  e->vals[id] = *v;
  e->state[id] = ENV_BORROWED;
  return MX_OK;
}

static const char *value_label(const mx_func_t *f, int32_t id, char *buf, size_t n) {
  const char *nm = (id >= 0 && id < f->n_values) ? f->values[id].name : NULL;
  if (nm)
    snprintf(buf, n, "%%%s", nm);
  else
    snprintf(buf, n, "value #%d", (int)id);
  return buf;
}

mx_status_t mx_interp_env_get(const mx_env_t *e, int32_t id, const mx_tensor_t **out) {
  mx_status_t st = mx_interp_env_check_id(e, id);
  if (st) return st;
  if (e->state[id] == ENV_EMPTY) {
    char buf[96];
    return mx_error_set(MX_ERR_RUNTIME, "use of %s before it is defined",
                        value_label(e->f, id, buf, sizeof buf));
  }
  *out = &e->vals[id];
  return MX_OK;
}

// Allocates op results with the declared result types.
mx_status_t mx_interp_alloc_results(const mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                    mx_tensor_t *out) {
  for (int32_t i = 0; i < op->n_results; i++) {
    if (op->results[i] < 0 || op->results[i] >= f->n_values) {
      mx_interp_values_free(out, i);
      return mx_error_set(MX_ERR_RUNTIME, "result value id out of range");
    }
    mx_status_t st = mx_interp_value_alloc(ip, &out[i], &f->values[op->results[i]].type);
    if (st) {
      mx_interp_values_free(out, i);
      return st;
    }
  }
  return MX_OK;
}
