// Layout matchers of the plan compiler: ops that only move bytes. Views (reshape, same-type
// convert, transposes of unit dims, contiguous slices) cost no step; other transposes and slices
// of 4-byte elements are strided copies; a dynamic_update_slice into a buffer its result aliases
// (the KV caches) writes in place.
#include <string.h>

#include "cpu/compile_internal.h"

// Byte offset of a slice when its result is a contiguous run of the operand (unit strides;
// every dim before some d sliced to size 1, every dim after d whole), else -1. The per-sequence
// slices of a batched graph (cache rows of sequence b, pos0[b]) are such runs.
static int64_t slice_offset(const mx_op_t *op, const mx_type_t *a) {
  const int64_t *st = NULL, *li = NULL, *sd = NULL;
  int32_t r = a->rank;
  if (mx_attr_get_i64s(mx_op_attr(op, "start_indices"), &st) != r ||
      mx_attr_get_i64s(mx_op_attr(op, "limit_indices"), &li) != r)
    return -1;
  const mx_attr_t *sa = mx_op_attr(op, "strides");
  if (sa && mx_attr_get_i64s(sa, &sd) != r) return -1;
  int32_t d = 0;
  while (d < r - 1 && li[d] - st[d] == 1) d++;  // leading unit dims
  for (int32_t i = 0; i < r; i++) {
    if (sd && sd[i] != 1) return -1;
    if (i > d && (st[i] != 0 || li[i] != a->dims[i])) return -1;
  }
  int64_t off = 0;
  for (int32_t i = 0; i < r; i++) off = off * a->dims[i] + st[i];
  return off * (int64_t)mx_elem_size(a->elem);
}

// Views: reshape, same-type convert, transposes that only move unit dims, contiguous slices.
bool mx_plan_match_view(cctx_t *c, const mx_op_t *op) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands < 1 || op->n_results != 1) return false;
  const mx_type_t *a = vtype(f, op->operands[0]), *o = vtype(f, op->results[0]);
  if (a->kind != MX_TYPE_TENSOR || o->kind != MX_TYPE_TENSOR || a->quant || o->quant ||
      a->elem != o->elem)
    return false;
  bool ok = false;
  if (op->code == MX_OP_RESHAPE || op->code == MX_OP_CONVERT) {
    ok = mx_type_numel(a) == mx_type_numel(o);
  } else if (op->code == MX_OP_SLICE && op->n_operands == 1 && a->rank >= 1 &&
             mx_elem_size(a->elem) > 0) {
    int64_t off = slice_offset(op, a);
    if (off < 0) return false;
    mx_plan_make_view(c->p, op->results[0], op->operands[0], (size_t)off);
    c->p->n_view_ops++;
    return true;
  } else if (op->code == MX_OP_TRANSPOSE) {
    const int64_t *perm = NULL;
    int32_t n = mx_attr_get_i64s(mx_op_attr(op, "permutation"), &perm);
    if (n != a->rank) return false;
    int64_t last = -1;
    ok = true;
    for (int32_t i = 0; i < n && ok; i++) {
      if (perm[i] < 0 || perm[i] >= a->rank) return false;
      if (a->dims[perm[i]] == 1) continue;
      if (perm[i] < last) ok = false;
      last = perm[i];
    }
  }
  if (!ok) return false;
  mx_plan_make_view(c->p, op->results[0], op->operands[0], 0);
  c->p->n_view_ops++;
  return true;
}

// Slices of 4-byte elements that are not contiguous runs (match_view takes those): the same
// strided copy as a transpose, from the first selected element (copy.first) with every output dim's
// stride the operand's times the slice stride. Phi-3 splits its fused qkv projection this way.
bool mx_plan_match_slice(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->code != MX_OP_SLICE || op->n_operands != 1 || op->n_results != 1) return false;
  const mx_type_t *a = vtype(f, op->operands[0]), *o = vtype(f, op->results[0]);
  if (a->kind != MX_TYPE_TENSOR || a->quant || o->quant || mx_elem_size(a->elem) != 4 ||
      a->elem != o->elem || a->rank < 1 || o->rank != a->rank)
    return false;
  const int64_t *st0 = NULL, *li = NULL, *sd = NULL;
  int32_t r = a->rank;
  if (mx_attr_get_i64s(mx_op_attr(op, "start_indices"), &st0) != r ||
      mx_attr_get_i64s(mx_op_attr(op, "limit_indices"), &li) != r)
    return false;
  const mx_attr_t *sa = mx_op_attr(op, "strides");
  if (sa && mx_attr_get_i64s(sa, &sd) != r) return false;
  int64_t istr[MX_MAX_RANK], off = 0, acc = 1;
  for (int32_t d = r - 1; d >= 0; d--) {
    int64_t step = sd ? sd[d] : 1;
    // The verifier checked these; a plan must never read outside its operand anyway.
    if (step < 1 || st0[d] < 0 || li[d] > a->dims[d] || st0[d] > li[d] ||
        o->dims[d] != (li[d] - st0[d] + step - 1) / step)
      return false;
    istr[d] = acc * step;
    off += st0[d] * acc;
    acc *= a->dims[d];
  }
  mx_step_t *s = NULL;
  if ((*st = mx_plan_simple_step(c, op, ST_TRANSPOSE, "slice (strided copy)", op->operands, 1,
                                 op->results[0], &s)))
    return true;
  s->copy.rank = r;
  s->copy.first = off;
  for (int32_t d = 0; d < r; d++) {
    s->copy.dims[d] = o->dims[d];
    s->copy.stride[d] = istr[d];
  }
  return true;
}

// Transposes of 4-byte elements: a strided copy split over output rows.
bool mx_plan_match_transpose(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->code != MX_OP_TRANSPOSE || op->n_operands != 1 || op->n_results != 1) return false;
  const mx_type_t *a = vtype(f, op->operands[0]), *o = vtype(f, op->results[0]);
  if (a->kind != MX_TYPE_TENSOR || a->quant || o->quant || mx_elem_size(a->elem) != 4 ||
      a->elem != o->elem || a->rank < 1)
    return false;
  const int64_t *perm = NULL;
  if (mx_attr_get_i64s(mx_op_attr(op, "permutation"), &perm) != a->rank) return false;
  int64_t istr[MX_MAX_RANK];
  int64_t acc = 1;
  for (int32_t d = a->rank - 1; d >= 0; d--) {
    istr[d] = acc;
    acc *= a->dims[d];
  }
  mx_step_t *s = NULL;
  if ((*st = mx_plan_simple_step(c, op, ST_TRANSPOSE, "transpose (strided copy)", op->operands, 1,
                                 op->results[0], &s)))
    return true;
  s->copy.rank = a->rank;
  s->copy.first = 0;
  for (int32_t d = 0; d < a->rank; d++) {
    if (perm[d] < 0 || perm[d] >= a->rank) {
      c->p->n_steps--;
      return false;
    }
    s->copy.dims[d] = o->dims[d];
    s->copy.stride[d] = istr[perm[d]];
  }
  return true;
}

// The strided copy of a broadcast: stride 0 along every output dim the operand does not vary in
// (ostr: the operand's stride per output dim).
static mx_status_t emit_broadcast_copy(cctx_t *c, const mx_op_t *op, const int64_t *ostr) {
  const mx_type_t *o = vtype(c->p->f, op->results[0]);
  mx_step_t *s = NULL;
  mx_status_t st = mx_plan_simple_step(c, op, ST_TRANSPOSE, "broadcast (strided copy)",
                                       op->operands, 1, op->results[0], &s);
  if (st) return st;
  s->copy.rank = o->rank;
  s->copy.first = 0;
  for (int32_t d = 0; d < o->rank; d++) {
    s->copy.dims[d] = o->dims[d];
    s->copy.stride[d] = ostr[d];
  }
  return MX_OK;
}

// The operand's stride per output dim of a broadcast of 4-byte elements; false when the plan
// does not take it.
static bool broadcast_strides(const cctx_t *c, const mx_op_t *op, int64_t *ostr) {
  const mx_func_t *f = c->p->f;
  if (op->code != MX_OP_BROADCAST_IN_DIM || op->n_operands != 1 || op->n_results != 1) return false;
  const mx_type_t *a = vtype(f, op->operands[0]), *o = vtype(f, op->results[0]);
  if (a->kind != MX_TYPE_TENSOR || a->quant || o->quant || mx_elem_size(a->elem) != 4 ||
      a->elem != o->elem || o->rank < 1 || mx_type_numel(o) == 0)
    return false;
  const int64_t *map = NULL;
  if (mx_attr_get_i64s(mx_op_attr(op, "broadcast_dimensions"), &map) != a->rank) return false;
  for (int32_t d = 0; d < o->rank; d++) ostr[d] = 0;
  int64_t acc = 1;
  for (int32_t d = a->rank - 1; d >= 0; d--) {
    // The verifier checked these; a plan must never read outside its operand anyway.
    if (map[d] < 0 || map[d] >= o->rank || (a->dims[d] != 1 && a->dims[d] != o->dims[map[d]]))
      return false;
    if (a->dims[d] != 1) ostr[map[d]] = acc;
    acc *= a->dims[d];
  }
  return true;
}

// Element i of the broadcast reads operand element (i / div) % mod when the output dims the
// operand varies in are one run (size-1 dims between them aside) in the operand's order: a
// bias over rows, a value per row, a scalar. False for any other broadcast (a transposing one).
static bool broadcast_read(const mx_type_t *o, const int64_t *ostr, ew_read_t *rd) {
  int64_t want = 1, div = 1;
  int32_t d = o->rank - 1;
  while (d >= 0 && ostr[d] == 0) div *= o->dims[d--];
  int64_t mod = 1;
  for (; d >= 0; d--) {
    if (o->dims[d] == 1) continue;
    if (ostr[d] == 0) break;
    if (ostr[d] != want) return false;
    want *= o->dims[d];
    mod = want;
  }
  for (; d >= 0; d--)  // dims before the run: repeats only
    if (ostr[d] != 0 && o->dims[d] != 1) return false;
  *rd = (ew_read_t){div, mod};
  return true;
}

// True when every reader of value v is an f32 add / subtract / multiply / divide whose operands
// and result all have v's shape: what mx_plan_match_ew always takes, reading v in place (an
// unwritten v must have no other reader).
static bool only_ew_readers(const cctx_t *c, int32_t v) {
  const mx_func_t *f = c->p->f;
  const mx_block_t *b = f->body;
  const mx_type_t *vt = vtype(f, v);
  int32_t seen = 0;
  for (int32_t i = c->op_index + 1; i < b->n_ops && seen < c->n_uses[v]; i++) {
    const mx_op_t *u = b->ops[i];
    bool reads = false;
    for (int32_t j = 0; j < u->n_operands; j++)
      if (u->operands[j] == v) {
        reads = true;
        seen++;
      }
    if (!reads) continue;
    if ((u->code != MX_OP_ADD && u->code != MX_OP_SUBTRACT && u->code != MX_OP_MULTIPLY &&
         u->code != MX_OP_DIVIDE) ||
        u->n_operands != 2 || u->n_results != 1)
      return false;
    for (int32_t j = 0; j < 2; j++) {
      const mx_type_t *t = vtype(f, u->operands[j]);
      if (!is_f32(t) || !mx_type_same_shape(t, vt)) return false;
    }
    if (!is_f32(vtype(f, u->results[0])) || !mx_type_same_shape(vtype(f, u->results[0]), vt))
      return false;
  }
  return seen == c->n_uses[v];
}

// Broadcasts of 4-byte elements (biases over rows, a row's mean over its columns, scalars). One
// that only f32 elementwise steps read is not written at all: they read its operand in place
// (a bias, GELU's scalar constants and LayerNorm's row means would each otherwise cost a write
// of a whole activation and its read back); any other is the transposes' strided copy.
bool mx_plan_match_broadcast(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  int64_t ostr[MX_MAX_RANK];
  if (!broadcast_strides(c, op, ostr)) return false;
  int32_t v = op->results[0];
  const mx_type_t *o = vtype(c->p->f, v);
  ew_read_t rd;
  if (is_f32(o) && broadcast_read(o, ostr, &rd) && only_ew_readers(c, v)) {
    c->bcast[v] = (lazy_bcast_t){op->operands[0], rd};
    c->p->slots[v].kind = SLOT_NONE;
    return true;
  }
  *st = emit_broadcast_copy(c, op, ostr);
  return true;
}

// Result index that argument i aliases, or -1.
static int32_t aliased_result(const mx_func_t *f, int32_t i) {
  if (!f->arg_attrs || f->arg_attrs[i].n == 0) return -1;
  const mx_attr_t *a = mx_attr_field(&f->arg_attrs[i], "tf.aliasing_output");
  return a && a->kind == MX_ATTR_INT ? (int32_t)a->i : -1;
}

static int32_t returned_at(const mx_func_t *f, int32_t v, int32_t r) {
  const mx_op_t *ret = f->body->ops[f->body->n_ops - 1];
  return r >= 0 && r < ret->n_operands && ret->operands[r] == v;
}

// The value at the end of the chain of dynamic_update_slices starting with op: while the
// current value has exactly one use and that use is the operand of a dynamic_update_slice, step
// to that op's result.
static int32_t dus_chain_end(const cctx_t *c, const mx_op_t *op) {
  const mx_block_t *b = c->p->f->body;
  int32_t v = op->results[0], i = 0;
  while (i < b->n_ops && b->ops[i] != op) i++;
  for (i++; i < b->n_ops && c->n_uses[v] == 1; i++) {
    const mx_op_t *u = b->ops[i];
    bool reads = false;
    for (int32_t j = 0; j < u->n_operands; j++) reads = reads || u->operands[j] == v;
    if (!reads) continue;
    if (u->code != MX_OP_DYNAMIC_UPDATE_SLICE || u->operands[0] != v || u->n_results != 1)
      return v;  // its only reader is something else (the return, for the last link)
    v = u->results[0];
  }
  return v;
}

bool mx_plan_match_dus(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  mx_cpu_plan_t *p = c->p;
  const mx_func_t *f = p->f;
  if (op->n_operands < 2 || op->n_results != 1 || op->n_operands > STEP_MAX_IN) return false;
  int32_t opd = op->operands[0];
  const mx_type_t *t = vtype(f, opd), *u = vtype(f, op->operands[1]);
  if (t->kind != MX_TYPE_TENSOR || t->quant || u->quant || op->n_operands != 2 + t->rank)
    return false;
  // In place only into an argument whose result is this op's value, with no other reader; or
  // into such an argument through a chain of dynamic_update_slices (a batched graph writes each
  // sequence's rows with one), every link read only by the next and the last one returned.
  if (c->n_uses[opd] != 1) return false;
  int32_t arg = -1;
  if (p->slots[opd].kind == SLOT_ARG)
    arg = p->slots[opd].arg;
  else if (c->dus_arg && c->dus_arg[opd] >= 0)
    arg = c->dus_arg[opd];
  if (arg < 0 || arg_is_weight(c, arg)) return false;
  int32_t last = dus_chain_end(c, op);
  if (!returned_at(f, last, aliased_result(f, arg))) return false;
  if (c->dus_arg) c->dus_arg[op->results[0]] = arg;
  for (int32_t i = 2; i < op->n_operands; i++) {
    const mx_type_t *it = vtype(f, op->operands[i]);
    if (it->kind != MX_TYPE_TENSOR || it->rank != 0 ||
        (it->elem != MX_ELEM_I32 && it->elem != MX_ELEM_I64))
      return false;
  }
  mx_step_t *s = NULL;
  if ((*st = mx_plan_add_step(p, &s))) return true;
  s->kind = ST_DUS_INPLACE;
  s->parallel = true;
  s->op = op;
  s->what = "dynamic_update_slice in place";
  s->n_in = op->n_operands - 1;
  for (int32_t i = 1; i < op->n_operands; i++) s->in[i - 1] = op->operands[i];
  s->n_out = 0;
  mx_plan_make_view(p, op->results[0], opd, 0);
  return true;
}

// Whether step s reads (in) or writes (out, an in-place update's result) a slot whose root is r.
static bool step_touches(const mx_cpu_plan_t *p, const mx_step_t *s, int32_t r, bool reads,
                         bool writes) {
  for (int32_t j = 0; reads && j < s->n_in; j++)
    if (root(p, s->in[j]) == r) return true;
  for (int32_t j = 0; writes && j < s->n_out; j++)
    if (root(p, s->out[j]) == r) return true;
  if (writes && s->kind == ST_DUS_INPLACE && root(p, s->op->results[0]) == r) return true;
  if (writes && s->kind == ST_ROPE && s->rope.cache_op &&
      root(p, s->rope.cache_op->results[0]) == r)
    return true;
  return false;
}

void mx_plan_fuse_rope_cache(mx_cpu_plan_t *p) {
  if (p->keep_values) return;  // every value stays inspectable (debugging, mx.diff)
  const mx_func_t *f = p->f;
  for (int32_t k = 0; k < p->n_steps; k++) {
    mx_step_t *r = &p->steps[k];
    if (r->kind != ST_ROPE || r->rope.cache_op || r->rope.rows != 1 || r->n_out != 1 ||
        r->n_in < 3 || r->n_in > 4)
      continue;
    int32_t x = root(p, r->out[0]);
    if (p->slots[x].kind != SLOT_ARENA) continue;
    bool is_result = false;
    for (int32_t i = 0; i < f->n_results; i++) is_result |= root(p, p->result_slot[i]) == x;
    if (is_result) continue;
    // Its one reader: an in-place dynamic_update_slice of the whole row as [1, heads, 1, d]
    // (the transpose of a one-token row is a view) into a rank-4 f32 cache [1, H, S, d].
    int32_t di = -1, readers = 0;
    for (int32_t j = k + 1; j < p->n_steps; j++)
      if (step_touches(p, &p->steps[j], x, true, false)) {
        readers++;
        if (di < 0) di = j;
      }
    if (readers != 1 || p->steps[di].kind != ST_DUS_INPLACE) continue;
    mx_step_t *d = &p->steps[di];
    const mx_type_t *ct = vtype(f, d->op->operands[0]), *ut = vtype(f, d->op->operands[1]);
    const mx_slot_t *us = &p->slots[d->in[0]], *rs = &p->slots[r->out[0]];
    size_t uoff = us->kind == SLOT_VIEW ? us->off : 0, roff = rs->kind == SLOT_VIEW ? rs->off : 0;
    if (root(p, d->in[0]) != x || uoff != roff || !is_f32(ct) || !is_f32(ut) || ct->rank != 4 ||
        ut->rank != 4 || d->n_in != 5 || ut->dims[0] != 1 || ct->dims[0] != 1 ||
        ut->dims[1] != r->rope.heads || ut->dims[2] != 1 || ut->dims[3] != r->rope.head_dim ||
        ct->dims[3] != ut->dims[3])
      continue;
    // The cache write moves from step di to step k: no step in between may touch the cache or
    // write a start index.
    int32_t cache = root(p, d->op->results[0]);
    bool clear = true;
    for (int32_t j = k + 1; j < di && clear; j++) {
      const mx_step_t *b = &p->steps[j];
      clear = !step_touches(p, b, cache, true, true);
      for (int32_t i = 1; i < 5 && clear; i++)
        clear = !step_touches(p, b, root(p, d->in[i]), false, true);
    }
    if (!clear) continue;
    r->rope.cache_op = d->op;
    r->rope.n_rope_in = r->n_in;
    for (int32_t i = 1; i < 5; i++) r->in[r->n_in++] = d->in[i];
    r->n_out = 0;
    r->what = "mx.rope (into the KV cache)";
    memmove(d, d + 1, (size_t)(p->n_steps - di - 1) * sizeof *d);
    p->n_steps--;
  }
}
