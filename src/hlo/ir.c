// IR construction primitives: modules, functions, blocks, ops, values and attributes.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"

// ---- Opcode table ----

static const struct {
  const char *name;
  unsigned flags;
} mx_op_table[MX_OP_COUNT] = {
#define MX_X_(e, s, f) [MX_OP_##e] = {s, f},
    MX_OP_LIST(MX_X_)
#undef MX_X_
};

const char *mx_opcode_name(mx_opcode_t code) {
  return (code >= 0 && code < MX_OP_COUNT) ? mx_op_table[code].name : "<invalid>";
}

unsigned mx_opcode_flags(mx_opcode_t code) {
  return (code >= 0 && code < MX_OP_COUNT) ? mx_op_table[code].flags : 0;
}

mx_opcode_t mx_opcode_from_name(const char *s, size_t n) {
  for (int i = 1; i < MX_OP_COUNT; i++) {
    const char *name = mx_op_table[i].name;
    if (strlen(name) == n && memcmp(name, s, n) == 0) return (mx_opcode_t)i;
  }
  return MX_OP_UNKNOWN;
}

// ---- Module and functions ----

mx_module_t *mx_module_create(const char *name) {
  mx_arena_t *arena = mx_arena_create();
  if (!arena) return NULL;
  mx_module_t *m = mx_arena_alloc(arena, sizeof *m);
  if (!m) {
    mx_arena_destroy(arena);
    return NULL;
  }
  m->arena = arena;
  m->attrs.kind = MX_ATTR_DICT;
  if (name && !(m->name = mx_arena_strdup(arena, name))) {
    mx_arena_destroy(arena);
    return NULL;
  }
  return m;
}

void mx_module_destroy(mx_module_t *m) {
  if (m) mx_arena_destroy(m->arena);
}

mx_func_t *mx_module_find_func(const mx_module_t *m, const char *name) {
  for (int32_t i = 0; i < m->n_funcs; i++)
    if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
  return NULL;
}

mx_func_t *mx_module_entry(const mx_module_t *m) {
  mx_func_t *f = mx_module_find_func(m, "main");
  if (f) return f;
  return m->n_funcs == 1 ? m->funcs[0] : NULL;
}

static mx_status_t mx_oom(void) { return mx_error_set(MX_ERR_NOMEM, "out of memory building IR"); }

// Ensures room for one more element in an arena-owned array.
static bool mx_grow1(mx_arena_t *a, void **arr, int32_t n, int32_t *cap, size_t elem) {
  if (n < *cap) return true;
  int32_t ncap = *cap ? *cap * 2 : 8;
  void *p = mx_arena_grow(a, *arr, (size_t)n, (size_t)ncap, elem);
  if (!p) return false;
  *arr = p;
  *cap = ncap;
  return true;
}

mx_status_t mx_func_create(mx_module_t *m, const char *name, bool is_private, mx_func_t **out) {
  *out = NULL;
  if (mx_module_find_func(m, name))
    return mx_error_set(MX_ERR_VERIFY, "function @%s is defined twice", name);
  mx_func_t *f = mx_arena_alloc(m->arena, sizeof *f);
  if (!f || !(f->name = mx_arena_strdup(m->arena, name))) return mx_oom();
  f->is_private = is_private;
  f->module = m;
  f->attrs.kind = MX_ATTR_DICT;
  f->body = mx_block_create(f);
  if (!f->body) return mx_oom();
  if (!mx_grow1(m->arena, (void **)&m->funcs, m->n_funcs, &m->cap_funcs, sizeof(mx_func_t *)))
    return mx_oom();
  m->funcs[m->n_funcs++] = f;
  *out = f;
  return MX_OK;
}

static mx_status_t mx_func_new_value(mx_func_t *f, const mx_type_t *type, const char *name,
                                     int32_t *id) {
  mx_arena_t *a = f->module->arena;
  if (!mx_grow1(a, (void **)&f->values, f->n_values, &f->cap_values, sizeof(mx_value_t)))
    return mx_oom();
  mx_value_t *v = &f->values[f->n_values];
  memset(v, 0, sizeof *v);
  v->type = *type;
  if (name && !(v->name = mx_arena_strdup(a, name))) return mx_oom();
  *id = f->n_values++;
  return MX_OK;
}

mx_block_t *mx_block_create(mx_func_t *f) {
  return mx_arena_alloc(f->module->arena, sizeof(mx_block_t));
}

mx_status_t mx_block_add_arg(mx_func_t *f, mx_block_t *b, const mx_type_t *type, const char *name,
                             int32_t *id) {
  mx_arena_t *a = f->module->arena;
  int32_t vid = -1;
  mx_status_t st = mx_func_new_value(f, type, name, &vid);
  if (st) return st;
  if (!mx_grow1(a, (void **)&b->args, b->n_args, &b->cap_args, sizeof(int32_t))) return mx_oom();
  b->args[b->n_args] = vid;
  f->values[vid].def_index = b->n_args;
  b->n_args++;
  if (id) *id = vid;
  return MX_OK;
}

// Arguments grow the arrays geometrically: the arena keeps every old copy, so growing them by
// one per argument held a quadratic number of bytes (a model graph has a thousand weights).
mx_status_t mx_func_add_arg(mx_func_t *f, const mx_type_t *type, const char *name, int32_t *id) {
  mx_arena_t *a = f->module->arena;
  int32_t n = f->body->n_args;
  if (n >= f->cap_arg_meta) {
    int32_t cap = f->cap_arg_meta;
    if (!mx_grow1(a, (void **)&f->arg_attrs, n, &cap, sizeof(mx_attr_t))) return mx_oom();
    cap = f->cap_arg_meta;
    if (!mx_grow1(a, (void **)&f->arg_locs, n, &cap, sizeof(char *))) return mx_oom();
    f->cap_arg_meta = cap;
  }
  f->arg_attrs[n] = (mx_attr_t){.kind = MX_ATTR_DICT};
  f->arg_locs[n] = NULL;
  return mx_block_add_arg(f, f->body, type, name, id);
}

mx_status_t mx_func_set_result_types(mx_func_t *f, const mx_type_t *types, int32_t n) {
  mx_arena_t *a = f->module->arena;
  mx_type_t *rt = n ? mx_arena_alloc(a, sizeof(mx_type_t) * (size_t)n) : NULL;
  mx_attr_t *ra = n ? mx_arena_alloc(a, sizeof(mx_attr_t) * (size_t)n) : NULL;
  if (n && (!rt || !ra)) return mx_oom();
  for (int32_t i = 0; i < n; i++) {
    rt[i] = types[i];
    ra[i].kind = MX_ATTR_DICT;
  }
  f->result_types = rt;
  f->result_attrs = ra;
  f->n_results = n;
  return MX_OK;
}

mx_status_t mx_func_set_arg_loc(mx_func_t *f, int32_t i, const char *name) {
  if (i < 0 || i >= f->body->n_args || !f->arg_locs)
    return mx_error_set(MX_ERR_INVALID_ARG, "@%s has no argument %d", f->name, i);
  f->arg_locs[i] = name ? mx_arena_strdup(f->module->arena, name) : NULL;
  if (name && !f->arg_locs[i]) return mx_oom();
  return MX_OK;
}

mx_op_t *mx_block_append_op(mx_func_t *f, mx_block_t *b, mx_opcode_t code, const char *name,
                            const int32_t *operands, int32_t n_operands,
                            const mx_type_t *result_types, int32_t n_results) {
  mx_arena_t *a = f->module->arena;
  if (n_operands < 0 || n_results < 0) return NULL;
  mx_op_t *op = mx_arena_alloc(a, sizeof *op);
  if (!op) return NULL;
  op->code = code;
  op->name = mx_arena_strdup(a, name ? name : mx_opcode_name(code));
  if (!op->name) return NULL;
  if (n_operands) {
    op->operands = mx_arena_alloc(a, sizeof(int32_t) * (size_t)n_operands);
    if (!op->operands) return NULL;
    memcpy(op->operands, operands, sizeof(int32_t) * (size_t)n_operands);
  }
  op->n_operands = n_operands;
  if (n_results) {
    op->results = mx_arena_alloc(a, sizeof(int32_t) * (size_t)n_results);
    if (!op->results) return NULL;
  }
  for (int32_t i = 0; i < n_results; i++) {
    int32_t id = -1;
    if (mx_func_new_value(f, &result_types[i], NULL, &id)) return NULL;
    f->values[id].def = op;
    f->values[id].def_index = i;
    op->results[i] = id;
  }
  op->n_results = n_results;
  if (!mx_grow1(a, (void **)&b->ops, b->n_ops, &b->cap_ops, sizeof(mx_op_t *))) return NULL;
  b->ops[b->n_ops++] = op;
  return op;
}

mx_status_t mx_op_add_region(mx_func_t *f, mx_op_t *op, mx_block_t *region) {
  mx_block_t **r = mx_arena_grow(f->module->arena, op->regions, (size_t)op->n_regions,
                                 (size_t)op->n_regions + 1, sizeof(mx_block_t *));
  if (!r) return mx_oom();
  r[op->n_regions++] = region;
  op->regions = r;
  return MX_OK;
}

mx_status_t mx_op_set_attr(mx_func_t *f, mx_op_t *op, const char *name, mx_attr_t value) {
  if (mx_attr_is_oom(&value)) return mx_oom();
  for (int32_t i = 0; i < op->n_attrs; i++) {
    if (strcmp(op->attrs[i].name, name) == 0) {
      op->attrs[i].value = value;
      return MX_OK;
    }
  }
  mx_arena_t *a = f->module->arena;
  mx_named_attr_t *attrs = mx_arena_grow(a, op->attrs, (size_t)op->n_attrs, (size_t)op->n_attrs + 1,
                                         sizeof(mx_named_attr_t));
  if (!attrs) return mx_oom();
  attrs[op->n_attrs].name = mx_arena_strdup(a, name);
  if (!attrs[op->n_attrs].name) return mx_oom();
  attrs[op->n_attrs].value = value;
  op->attrs = attrs;
  op->n_attrs++;
  return MX_OK;
}

const mx_attr_t *mx_op_attr(const mx_op_t *op, const char *name) {
  for (int32_t i = 0; i < op->n_attrs; i++)
    if (strcmp(op->attrs[i].name, name) == 0) return &op->attrs[i].value;
  return NULL;
}

const mx_attr_t *mx_attr_field(const mx_attr_t *a, const char *name) {
  if (!a || (a->kind != MX_ATTR_DICT && a->kind != MX_ATTR_STRUCT)) return NULL;
  for (int32_t i = 0; i < a->n; i++)
    if (strcmp(a->fields[i].name, name) == 0) return &a->fields[i].value;
  return NULL;
}

const mx_type_t *mx_value_type(const mx_func_t *f, int32_t id) {
  return (id >= 0 && id < f->n_values) ? &f->values[id].type : NULL;
}

// ---- Attributes ----
//
// Constructors need the module's arena for payloads; scalar ones need none. The thread-local
// "current arena" trick is avoided: each payload constructor takes the module explicitly.

static mx_attr_t mx_attr_oom(void) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_UNIT;
  a.n = -1;
  return a;
}

bool mx_attr_is_oom(const mx_attr_t *a) { return a->kind == MX_ATTR_UNIT && a->n == -1; }

mx_attr_t mx_attr_int(int64_t v, mx_elem_type_t et) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_INT;
  a.i = v;
  a.elem = et;
  return a;
}

mx_attr_t mx_attr_float(double v, mx_elem_type_t et) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_FLOAT;
  a.f = v;
  a.elem = et;
  return a;
}

mx_attr_t mx_attr_bool(bool v) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_BOOL;
  a.i = v;
  a.elem = MX_ELEM_I1;
  return a;
}

static mx_attr_t mx_attr_str_kind(mx_module_t *m, mx_attr_kind_t kind, const char *s) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  a.s = mx_arena_strdup(m->arena, s);
  return a.s ? a : mx_attr_oom();
}

mx_attr_t mx_attr_string(mx_module_t *m, const char *s) {
  return mx_attr_str_kind(m, MX_ATTR_STRING, s);
}

mx_attr_t mx_attr_symbol(mx_module_t *m, const char *s) {
  return mx_attr_str_kind(m, MX_ATTR_SYMBOL, s);
}

mx_attr_t mx_attr_enum(mx_module_t *m, const char *kind, const char *value) {
  mx_attr_t a = mx_attr_str_kind(m, MX_ATTR_ENUM, value);
  if (mx_attr_is_oom(&a)) return a;
  a.enum_kind = mx_arena_strdup(m->arena, kind);
  return a.enum_kind ? a : mx_attr_oom();
}

mx_attr_t mx_attr_i64s(mx_module_t *m, const int64_t *v, int32_t n) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_DENSE_ARRAY;
  a.elem = MX_ELEM_I64;
  a.n = n;
  if (n > 0) {
    a.ints = mx_arena_alloc(m->arena, sizeof(int64_t) * (size_t)n);
    if (!a.ints) return mx_attr_oom();
    memcpy(a.ints, v, sizeof(int64_t) * (size_t)n);
  }
  return a;
}

mx_attr_t mx_attr_bools(mx_module_t *m, const bool *v, int32_t n) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_DENSE_ARRAY;
  a.elem = MX_ELEM_I1;
  a.n = n;
  if (n > 0) {
    a.ints = mx_arena_alloc(m->arena, sizeof(int64_t) * (size_t)n);
    if (!a.ints) return mx_attr_oom();
    for (int32_t i = 0; i < n; i++) a.ints[i] = v[i];
  }
  return a;
}

mx_attr_t mx_attr_dense(mx_module_t *m, const mx_tensor_t *value) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = MX_ATTR_DENSE;
  mx_tensor_t *t = mx_arena_alloc(m->arena, sizeof *t);
  if (!t) return mx_attr_oom();
  t->type = value->type;
  t->nbytes = value->nbytes;
  t->data = mx_arena_alloc(m->arena, value->nbytes ? value->nbytes : 1);
  if (!t->data) return mx_attr_oom();
  if (value->nbytes) memcpy(t->data, value->data, value->nbytes);
  a.dense = t;
  return a;
}

static mx_attr_t mx_attr_fields_kind(mx_module_t *m, mx_attr_kind_t kind,
                                     const mx_named_attr_t *fields, int32_t n) {
  mx_attr_t a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  a.n = n;
  if (n > 0) {
    a.fields = mx_arena_alloc(m->arena, sizeof(mx_named_attr_t) * (size_t)n);
    if (!a.fields) return mx_attr_oom();
    for (int32_t i = 0; i < n; i++) {
      a.fields[i].name = mx_arena_strdup(m->arena, fields[i].name);
      if (!a.fields[i].name) return mx_attr_oom();
      a.fields[i].value = fields[i].value;
    }
  }
  return a;
}

mx_attr_t mx_attr_dict(mx_module_t *m, const mx_named_attr_t *fields, int32_t n) {
  return mx_attr_fields_kind(m, MX_ATTR_DICT, fields, n);
}

mx_attr_t mx_attr_struct(mx_module_t *m, const char *tag, const mx_named_attr_t *fields,
                         int32_t n) {
  mx_attr_t a = mx_attr_fields_kind(m, MX_ATTR_STRUCT, fields, n);
  if (mx_attr_is_oom(&a)) return a;
  a.s = mx_arena_strdup(m->arena, tag);
  return a.s ? a : mx_attr_oom();
}

int32_t mx_attr_get_i64s(const mx_attr_t *a, const int64_t **values) {
  *values = NULL;
  if (!a) return -1;
  if (a->kind == MX_ATTR_DENSE_ARRAY) {
    *values = a->ints;
    return a->n;
  }
  if (a->kind == MX_ATTR_DENSE && a->dense && a->dense->type.kind == MX_TYPE_TENSOR &&
      a->dense->type.elem == MX_ELEM_I64) {
    *values = (const int64_t *)a->dense->data;
    return (int32_t)mx_type_numel(&a->dense->type);
  }
  return -1;
}
