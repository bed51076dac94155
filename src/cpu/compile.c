// Plan compiler: kernel selection per op, views, liveness-based arena layout (see cpu_plan.h).
#include <stdlib.h>
#include <string.h>

#include "cpu/fused_kv.h"
#include "cpu/plan_internal.h"
#include "hlo/interp_kernels.h"
#include "mlxcel/composite.h"

// ---------------------------------------------------------------------------------------------
// Packed-weight cache
// ---------------------------------------------------------------------------------------------

mx_status_t mx_cpu_weights_create(const mx_cpu_kernels_t *kt, mx_cpu_weights_t **out) {
  *out = NULL;
  mx_cpu_weights_t *w = calloc(1, sizeof *w);
  if (!w) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  w->kt = kt ? kt : mx_cpu_kernels_best();
  *out = w;
  return MX_OK;
}

void mx_cpu_weights_destroy(mx_cpu_weights_t *w) {
  if (!w) return;
  for (int32_t i = 0; i < w->n; i++) mx_cpu_packed_destroy(w->e[i].packed);
  free(w->e);
  mx_cpu_weights_lowp_free(w);
  mx_cpu_qpacked_free_all(w);
  free(w);
}

size_t mx_cpu_weights_bytes(const mx_cpu_weights_t *w) { return w ? w->bytes : 0; }
void mx_cpu_weights_on_packed(mx_cpu_weights_t *w, mx_cpu_packed_source_fn fn, void *user) {
  w->on_packed = fn;
  w->on_packed_user = user;
}
int32_t mx_cpu_weights_count(const mx_cpu_weights_t *w) { return w ? w->n + w->n_lowp : 0; }

mx_status_t mx_cpu_packed_get(mx_cpu_weights_t *w, mx_cpu_pool_t *pool, const float *data,
                              int64_t n, int64_t k, const mx_cpu_packed_t **out) {
  for (int32_t i = 0; i < w->n; i++)
    if (w->e[i].data == data && w->e[i].n == n && w->e[i].k == k) {
      *out = w->e[i].packed;
      return MX_OK;
    }
  if (w->n == w->cap) {
    int32_t cap = w->cap ? 2 * w->cap : 32;
    mx_packed_entry_t *e = realloc(w->e, (size_t)cap * sizeof *e);
    if (!e) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    w->e = e;
    w->cap = cap;
  }
  mx_cpu_packed_t *pk = NULL;
  mx_status_t st = mx_cpu_pack_f32(w->kt, pool, data, k, n, k, &pk);
  if (st) return st;
  w->e[w->n++] = (mx_packed_entry_t){data, n, k, pk};
  w->bytes += (size_t)pk->panels * (size_t)pk->k * (size_t)pk->nr * sizeof(float);
  if (w->on_packed) w->on_packed(w->on_packed_user, data, (size_t)n * (size_t)k * sizeof(float));
  *out = pk;
  return MX_OK;
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

typedef struct cctx {
  mx_cpu_plan_t *p;
  const mx_cpu_compile_opts_t *o;
  int32_t *n_uses;   // per value: uses by top-level ops and the return
  int32_t *dus_arg;  // per value: the argument an in-place dynamic_update_slice wrote, or -1
  bool perturbed;    // test_perturb_op applied
  // RoPE tables emitted so far: {positions value, inv_freq value, table slot}.
  int32_t n_rope_tables;
  int32_t rope_tables[8][3];
} cctx_t;

enum { MAX_ROPE_TABLES = 8 };

static const mx_type_t *vtype(const mx_func_t *f, int32_t id) { return &f->values[id].type; }

static bool is_f32(const mx_type_t *t) {
  return t->kind == MX_TYPE_TENSOR && t->elem == MX_ELEM_F32 && !t->quant;
}
static bool is_i32(const mx_type_t *t) {
  return t->kind == MX_TYPE_TENSOR && t->elem == MX_ELEM_I32 && !t->quant;
}

// Root slot of a value (follows views).
static int32_t root(const mx_cpu_plan_t *p, int32_t s) {
  return p->slots[s].kind == SLOT_VIEW ? p->slots[s].base : s;
}

static mx_status_t add_step(mx_cpu_plan_t *p, mx_step_t **out) {
  if (p->n_steps == p->cap_steps) {
    int32_t cap = p->cap_steps ? 2 * p->cap_steps : 64;
    mx_step_t *s = realloc(p->steps, (size_t)cap * sizeof *s);
    if (!s) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    p->steps = s;
    p->cap_steps = cap;
  }
  *out = &p->steps[p->n_steps++];
  memset(*out, 0, sizeof **out);
  return MX_OK;
}

__attribute__((unused)) static mx_status_t add_temp(mx_cpu_plan_t *p, size_t nbytes,
                                                    int32_t *slot) {
  mx_slot_t *s = realloc(p->slots, (size_t)(p->n_slots + 1) * sizeof *s);
  if (!s) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  p->slots = s;
  memset(&s[p->n_slots], 0, sizeof s[0]);
  s[p->n_slots].kind = SLOT_ARENA;
  s[p->n_slots].nbytes = nbytes;
  s[p->n_slots].def = -1;
  s[p->n_slots].last = -1;
  *slot = p->n_slots++;
  return MX_OK;
}

static void make_view(mx_cpu_plan_t *p, int32_t v, int32_t src, size_t off) {
  int32_t r = root(p, src);
  size_t base_off = p->slots[src].kind == SLOT_VIEW ? p->slots[src].off : 0;
  p->slots[v].kind = SLOT_VIEW;
  p->slots[v].base = r;
  p->slots[v].off = base_off + off;
}

static bool arg_is_weight(const cctx_t *c, int32_t i) {
  const mx_cpu_plan_t *p = c->p;
  return p->weight_data[i] != NULL;
}

// Slot -> argument index when the value is a (root) weight argument, else -1.
static int32_t weight_arg(const cctx_t *c, int32_t v) {
  const mx_slot_t *s = &c->p->slots[v];
  if (s->kind != SLOT_ARG || !arg_is_weight(c, s->arg)) return -1;
  return s->arg;
}

// The bytes of a matmul weight: a weight argument, or a view into one (the gate or up rows of
// Phi-3's fused gate_up_proj are contiguous slices of it); NULL for any other value.
static const void *weight_bytes(const cctx_t *c, int32_t v) {
  const mx_slot_t *s = &c->p->slots[v];
  size_t off = 0;
  if (s->kind == SLOT_VIEW) {
    off = s->off;
    s = &c->p->slots[s->base];
  }
  if (s->kind != SLOT_ARG || !arg_is_weight(c, s->arg)) return NULL;
  return (const uint8_t *)c->p->weight_data[s->arg] + off;
}

static bool ints_eq(const mx_attr_t *a, const int64_t *want, int32_t n) {
  const int64_t *v = NULL;
  int32_t k = a ? mx_attr_get_i64s(a, &v) : (n == 0 ? 0 : -1);
  if (k != n) return false;
  for (int32_t i = 0; i < n; i++)
    if (v[i] != want[i]) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Pattern matchers: each returns true when it emitted steps (st set on error).
// ---------------------------------------------------------------------------------------------

static mx_status_t emit_gemm(cctx_t *c, const mx_op_t *op, int32_t x, const void *w, int64_t m,
                             int64_t n, int64_t k, int32_t out, const char *what) {
  mx_cpu_plan_t *p = c->p;
  const mx_cpu_packed_t *pk = NULL;
  mx_status_t st = mx_cpu_packed_get(p->weights, c->o->pool, (const float *)w, n, k, &pk);
  if (st) return st;
  mx_step_t *s = NULL;
  if ((st = add_step(p, &s)) != MX_OK) return st;
  s->kind = ST_GEMM;
  s->parallel = true;
  s->op = op;
  s->what = what;
  s->n_in = 1;
  s->in[0] = x;
  s->n_out = 1;
  s->out[0] = out;
  s->w = pk;
  s->p[0] = m;
  s->p[1] = n;
  s->p[2] = k;
  s->p[3] = c->o->rows_as_gemv;
  if (c->o->rows_as_gemv && m > 1) s->what = "gemv per row (rows_as_gemv)";
  return MX_OK;
}

static bool match_dot(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const mx_type_t *lt = vtype(f, op->operands[0]), *rt = vtype(f, op->operands[1]),
                  *ot = vtype(f, op->results[0]);
  if (!is_f32(lt) || !is_f32(rt) || !is_f32(ot) || rt->rank != 2 || lt->rank < 1) return false;
  const void *w = weight_bytes(c, op->operands[1]);
  if (!w) return false;
  const mx_attr_t *dn = mx_op_attr(op, "dot_dimension_numbers");
  if (!dn) return false;
  int64_t lc = lt->rank - 1, rc = 1;
  if (!ints_eq(mx_attr_field(dn, "lhs_batching_dimensions"), NULL, 0) ||
      !ints_eq(mx_attr_field(dn, "rhs_batching_dimensions"), NULL, 0) ||
      !ints_eq(mx_attr_field(dn, "lhs_contracting_dimensions"), &lc, 1) ||
      !ints_eq(mx_attr_field(dn, "rhs_contracting_dimensions"), &rc, 1))
    return false;
  int64_t k = rt->dims[1], n = rt->dims[0];
  if (lt->dims[lt->rank - 1] != k || ot->rank != lt->rank || ot->dims[ot->rank - 1] != n)
    return false;
  int64_t m = mx_type_numel(lt) / (k ? k : 1);
  if (k == 0 || n == 0 || m == 0) return false;
  *st = emit_gemm(c, op, op->operands[0], w, m, n, k, op->results[0],
                  m == 1 ? "dot_general->gemv" : "dot_general->gemm");
  return true;
}

__attribute__((unused)) static bool match_embed(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const mx_type_t *tt = vtype(f, op->operands[0]), *it = vtype(f, op->operands[1]),
                  *ot = vtype(f, op->results[0]);
  if (!is_f32(tt) || tt->rank != 2 || !is_i32(it) || !is_f32(ot)) return false;
  const mx_attr_t *dn = mx_op_attr(op, "dimension_numbers");
  if (!dn) return false;
  int64_t ir = it->rank, zero = 0, one_h[2] = {1, tt->dims[1]};
  if (!ints_eq(mx_attr_field(dn, "offset_dims"), &ir, 1) ||
      !ints_eq(mx_attr_field(dn, "collapsed_slice_dims"), &zero, 1) ||
      !ints_eq(mx_attr_field(dn, "start_index_map"), &zero, 1) ||
      !ints_eq(mx_op_attr(op, "slice_sizes"), one_h, 2))
    return false;
  if (mx_attr_field(dn, "operand_batching_dims") &&
      !ints_eq(mx_attr_field(dn, "operand_batching_dims"), NULL, 0))
    return false;
  const mx_attr_t *ivd = mx_attr_field(dn, "index_vector_dim");
  if (!ivd || ivd->kind != MX_ATTR_INT || ivd->i != it->rank) return false;
  if (ot->rank != it->rank + 1 || ot->dims[ot->rank - 1] != tt->dims[1]) return false;
  mx_step_t *s = NULL;
  if ((*st = add_step(c->p, &s)) != MX_OK) return true;
  s->kind = ST_EMBED;
  s->parallel = true;
  s->op = op;
  s->what = "gather->embed";
  s->n_in = 2;
  s->in[0] = op->operands[0];
  s->in[1] = op->operands[1];
  s->n_out = 1;
  s->out[0] = op->results[0];
  s->p[0] = tt->dims[0];
  s->p[1] = tt->dims[1];
  s->p[2] = mx_type_numel(it);
  return true;
}

static mx_status_t simple_step(cctx_t *c, const mx_op_t *op, step_kind_t kind, const char *what,
                               const int32_t *in, int32_t n_in, int32_t out, mx_step_t **sp) {
  mx_step_t *s = NULL;
  mx_status_t st = add_step(c->p, &s);
  if (st) return st;
  s->kind = kind;
  s->parallel = true;
  s->op = op;
  s->what = what;
  s->n_in = n_in;
  for (int32_t i = 0; i < n_in; i++) s->in[i] = in[i];
  s->n_out = 1;
  s->out[0] = out;
  *sp = s;
  return MX_OK;
}

#if MX_CPU_HAVE_FUSED
// The last step when it is an f32 add (ST_EW_BINARY) whose result is exactly x (the same
// value or a whole-value view of it): an RMSNorm of x can join it.
static mx_step_t *fusable_add(cctx_t *c, int32_t x) {
  mx_cpu_plan_t *p = c->p;
  if (p->n_steps == 0) return NULL;
  mx_step_t *s = &p->steps[p->n_steps - 1];
  if (s->kind != ST_EW_BINARY || s->p[1] != MX_OP_ADD || s->n_out != 1) return NULL;
  int32_t o = s->out[0];
  bool same = o == x || (p->slots[x].kind == SLOT_VIEW && p->slots[x].base == root(p, o) &&
                         p->slots[o].kind != SLOT_VIEW && p->slots[x].off == 0);
  if (!same || mx_type_numel(vtype(p->f, o)) != mx_type_numel(vtype(p->f, x))) return NULL;
  return s;
}

#if MX_CPU_HAVE_FUSED
// A decode mx.attention (T = 1) whose b * hkv groups share out unevenly between threads: the
// split-over-keys pair of steps (fused_kv.h). false when the shapes need no split.
static bool emit_attention_split(cctx_t *c, const mx_op_t *op, int64_t B, int64_t T, int64_t Hq,
                                 int64_t Hkv, int64_t S, int64_t D, int64_t window,
                                 mx_elem_type_t kv, float scale, float softcap, mx_status_t *st) {
  int64_t parts = mx_cpu_attention_kv_parts(Hkv);
  if (T != 1 || parts <= 1) return false;
  int32_t part = -1;
  mx_step_t *s = NULL;
  size_t nbytes = mx_cpu_attention_kv_part_floats(B, Hq, D, parts) * sizeof(float);
  if ((*st = add_temp(c->p, nbytes, &part))) return true;
  if ((*st = simple_step(c, op, ST_ATTN_SPLIT, "mx.attention (decode, split over keys)",
                         op->operands, 4, part, &s)))
    return true;
  int64_t pv[8] = {B, Hq, Hkv, S, D, window, kv, parts};
  memcpy(s->p, pv, sizeof pv);
  s->fp[0] = scale;
  s->fp[1] = softcap;
  size_t need = mx_cpu_attention_kv_scratch_floats(D, S);
  if (need > c->p->scratch_per_thread) c->p->scratch_per_thread = need;
  if ((*st = simple_step(c, op, ST_ATTN_MERGE, "mx.attention (merge of the key pieces)", &part, 1,
                         op->results[0], &s)))
    return true;
  s->p[0] = B * Hq;
  s->p[1] = D;
  s->p[2] = parts;
  return true;
}
#endif

static bool match_composite(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_results != 1) return false;
  mx_composite_kind_t kind = mx_composite_kind(op);
  const mx_type_t *ot = vtype(f, op->results[0]);
  int32_t out = op->results[0];
  mx_step_t *s = NULL;
  if (kind == MX_COMPOSITE_KIND_RMS_NORM && op->n_operands == 2) {
    const mx_type_t *xt = vtype(f, op->operands[0]), *wt = vtype(f, op->operands[1]);
    mx_comp_rms_norm_t a;
    if (!is_f32(xt) || !is_f32(wt) || !is_f32(ot) || wt->rank != 1 || xt->rank < 1 ||
        xt->dims[xt->rank - 1] != wt->dims[0] || !mx_type_same_shape(xt, ot) ||
        !mx_comp_rms_norm_read(op, &a) || wt->dims[0] == 0)
      return false;
    mx_step_t *prev = fusable_add(c, op->operands[0]);
    if (prev) {  // the residual add just before: one pass writes the sum and the norm
      prev->kind = ST_ADD_RMS_NORM;
      prev->what = "residual add + mx.rms_norm";
      prev->op = op;
      prev->in[prev->n_in++] = op->operands[1];
      prev->out[prev->n_out++] = out;
      s = prev;
    } else if ((*st = simple_step(c, op, ST_RMS_NORM, MX_COMPOSITE_RMS_NORM, op->operands, 2, out,
                                  &s))) {
      return true;
    }
    s->p[0] = mx_type_numel(xt) / wt->dims[0];
    s->p[1] = wt->dims[0];
    s->fp[0] = (float)a.eps;
    s->fp[1] = (float)a.weight_offset;
    return true;
  }
  if (kind == MX_COMPOSITE_KIND_ROPE && op->n_operands == 3) {
    const mx_type_t *xt = vtype(f, op->operands[0]), *pt = vtype(f, op->operands[1]),
                    *it = vtype(f, op->operands[2]);
    mx_comp_rope_t a;
    if (!mx_comp_rope_read(op, &a)) return false;
    int64_t rd = a.rotary_dim;
    if (!is_f32(xt) || xt->rank != 4 || !is_i32(pt) || pt->rank != 2 || !is_f32(it) ||
        it->rank != 1 || !mx_type_same_shape(xt, ot) || !is_f32(ot) || pt->dims[0] != xt->dims[0] ||
        pt->dims[1] != xt->dims[1] || rd > xt->dims[3] || rd < 0 || rd % 2 || it->dims[0] != rd / 2)
      return false;
    // One cos / sin table per (positions, frequencies) pair serves every RoPE of the graph.
    int64_t bt = xt->dims[0] * xt->dims[1];
    int32_t table = -1;
    for (int32_t i = 0; i < c->n_rope_tables && table < 0; i++)
      if (c->rope_tables[i][0] == op->operands[1] && c->rope_tables[i][1] == op->operands[2])
        table = c->rope_tables[i][2];
    if (table < 0 && c->n_rope_tables < MAX_ROPE_TABLES) {
      if ((*st = add_temp(c->p, (size_t)(bt * rd) * sizeof(float), &table))) return true;
      if ((*st = simple_step(c, op, ST_ROPE_TABLE, "mx.rope cos/sin table", op->operands + 1, 2,
                             table, &s)))
        return true;
      s->p[0] = bt;
      s->p[1] = rd / 2;
      int32_t *e = c->rope_tables[c->n_rope_tables++];
      e[0] = op->operands[1];
      e[1] = op->operands[2];
      e[2] = table;
    }
    // Out of place: each thread copies and rotates its own rows (no barrier in between).
    int32_t in[4] = {op->operands[0], op->operands[1], op->operands[2], table};
    if ((*st = simple_step(c, op, ST_ROPE, MX_COMPOSITE_ROPE, in, table >= 0 ? 4 : 3, out, &s)))
      return true;
    s->p[0] = bt;
    s->p[1] = xt->dims[2];
    s->p[2] = xt->dims[3];
    s->p[3] = rd;
    s->p[4] = a.style;
    return true;
  }
  if (kind == MX_COMPOSITE_KIND_ATTENTION && op->n_operands == 4) {
    const mx_type_t *qt = vtype(f, op->operands[0]), *kt = vtype(f, op->operands[1]),
                    *vt = vtype(f, op->operands[2]), *pt = vtype(f, op->operands[3]);
    mx_comp_attention_t a;
    if (!is_f32(qt) || qt->rank != 4 || !is_f32(kt) || kt->rank != 4 || !mx_type_equal(kt, vt) ||
        !is_i32(pt) || pt->rank != 1 || !is_f32(ot) || !mx_type_same_shape(qt, ot) ||
        !mx_comp_attention_read(op, &a))
      return false;
    float scale = (float)a.scale, softcap = (float)a.softcap;
    int64_t window = a.window;
    int64_t B = qt->dims[0], T = qt->dims[1], Hq = qt->dims[2], D = qt->dims[3];
    int64_t Hkv = kt->dims[1], S = kt->dims[2];
    if (kt->dims[0] != B || kt->dims[3] != D || pt->dims[0] != B || Hkv <= 0 || Hq % Hkv)
      return false;
    if (emit_attention_split(c, op, B, T, Hq, Hkv, S, D, window, MX_ELEM_F32, scale, softcap, st))
      return true;
    if ((*st = simple_step(c, op, ST_ATTENTION, MX_COMPOSITE_ATTENTION, op->operands, 4, out, &s)))
      return true;
    int64_t pv[7] = {B, T, Hq, Hkv, S, D, window};
    memcpy(s->p, pv, sizeof pv);
    s->fp[0] = scale;
    s->fp[1] = softcap;
    size_t need = mx_cpu_attention_scratch_floats(D, S);
    if (need > c->p->scratch_per_thread) c->p->scratch_per_thread = need;
    return true;
  }
  if (kind == MX_COMPOSITE_KIND_GATED_MLP && op->n_operands == 4) {
    const mx_type_t *xt = vtype(f, op->operands[0]), *gt = vtype(f, op->operands[1]),
                    *ut = vtype(f, op->operands[2]), *dt = vtype(f, op->operands[3]);
    mx_comp_gated_t ga;
    int a = mx_comp_gated_read(op, &ga) ? (int)ga.activation : -1;
    const void *wg = weight_bytes(c, op->operands[1]), *wu = weight_bytes(c, op->operands[2]),
               *wd = weight_bytes(c, op->operands[3]);
    if (a < 0 || !wg || !wu || !wd || !is_f32(xt) || !is_f32(gt) || !is_f32(ut) || !is_f32(dt) ||
        !is_f32(ot) || gt->rank != 2 || !mx_type_equal(gt, ut) || dt->rank != 2 || xt->rank < 1 ||
        !mx_type_same_shape(xt, ot))
      return false;
    int64_t H = xt->dims[xt->rank - 1], F = gt->dims[0];
    if (gt->dims[1] != H || dt->dims[0] != H || dt->dims[1] != F || H == 0 || F == 0) return false;
    int64_t M = mx_type_numel(xt) / H;
    if (M == 0) return false;
    size_t tb = (size_t)(M * F) * sizeof(float);
    int32_t tg, tu, ta;
    if ((*st = add_temp(c->p, tb, &tg)) || (*st = add_temp(c->p, tb, &tu)) ||
        (*st = add_temp(c->p, tb, &ta)))
      return true;
    // Gate and up matmuls and the activation in one step: every thread applies the activation
    // to the part of gate / up it computed itself (mx_cpu_matmul_region), so no barrier is
    // needed before it.
    const char *w1 = M == 1 ? "mx.gated_mlp gate+up gemv, act" : "mx.gated_mlp gate+up gemm, act";
    if ((*st = emit_gemm(c, op, op->operands[0], wg, M, F, H, ta, w1))) return true;
    s = &c->p->steps[c->p->n_steps - 1];
    const mx_cpu_packed_t *pu = NULL;
    *st = mx_cpu_packed_get(c->p->weights, c->o->pool, (const float *)wu, F, H, &pu);
    if (*st) return true;
    s->kind = ST_GATED_UP;
    s->w2 = pu;
    s->p[4] = a;
    s->out[s->n_out++] = tg;
    s->out[s->n_out++] = tu;
    *st = emit_gemm(c, op, ta, wd, M, H, F, out, "mx.gated_mlp down");
    return true;
  }
  return false;
}
#endif

// ---------------------------------------------------------------------------------------------
// Low-precision (bf16 / f16) steps: converts between f32 and bf16 / f16; the linear layers whose
// weight is resident in bf16 / f16 (dot_general(bf16, bf16) -> f32 on a converted activation,
// also inside mx.gated_mlp); rows of a bf16 / f16 embedding table; attention over bf16 / f16
// caches. Kernels: mlxcel/cpu_lowp.h and fused_kv.h; executor: plan_lowp.c. Every step computes
// what its op computes (the activation is rounded by its own convert step, as the graph says).
// ---------------------------------------------------------------------------------------------

static bool is_lowp(const mx_type_t *t) {
  return t->kind == MX_TYPE_TENSOR && !t->quant &&
         (t->elem == MX_ELEM_BF16 || t->elem == MX_ELEM_F16);
}

static mx_status_t emit_convert(cctx_t *c, const mx_op_t *op, int32_t in, mx_elem_type_t from,
                                int32_t out, mx_elem_type_t to, int64_t n) {
  mx_step_t *s = NULL;
  mx_status_t st = simple_step(c, op, ST_CONVERT, "convert (f32 <-> bf16/f16)", &in, 1, out, &s);
  if (st) return st;
  s->p[0] = n;
  s->p[1] = from;
  s->p[2] = to;
  return MX_OK;
}

static mx_status_t emit_gemm_lowp(cctx_t *c, const mx_op_t *op, int32_t x, const void *w,
                                  mx_elem_type_t et, int64_t m, int64_t n, int64_t k, int32_t out,
                                  const char *what) {
  mx_cpu_plan_t *p = c->p;
  const mx_cpu_packed_lowp_t *pk = NULL;
  mx_status_t st =
      mx_cpu_packed_lowp_get(p->weights, c->o->pool, et, (const uint16_t *)w, n, k, &pk);
  if (st) return st;
  mx_step_t *s = NULL;
  if ((st = simple_step(c, op, ST_GEMM_LOWP, what, &x, 1, out, &s))) return st;
  s->wl = pk;
  s->p[0] = m;
  s->p[1] = n;
  s->p[2] = k;
  return MX_OK;
}

static bool match_lowp_convert(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 1 || op->n_results != 1) return false;
  const mx_type_t *a = vtype(f, op->operands[0]), *o = vtype(f, op->results[0]);
  if (!((is_f32(a) && is_lowp(o)) || (is_lowp(a) && is_f32(o))) || !mx_type_same_shape(a, o))
    return false;
  *st = emit_convert(c, op, op->operands[0], a->elem, op->results[0], o->elem, mx_type_numel(o));
  return true;
}

// y = dot_general(x, W) contracting x's last dim with W[n, k]'s dim 1, x and W both bf16 or
// both f16 (x: the converted activation), W a weight argument, y f32.
static bool match_lowp_dot(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const mx_type_t *lt = vtype(f, op->operands[0]), *rt = vtype(f, op->operands[1]),
                  *ot = vtype(f, op->results[0]);
  if (!is_lowp(lt) || !is_lowp(rt) || lt->elem != rt->elem || !is_f32(ot) || rt->rank != 2 ||
      lt->rank < 1)
    return false;
  const void *w = weight_bytes(c, op->operands[1]);
  const mx_attr_t *dn = mx_op_attr(op, "dot_dimension_numbers");
  if (!w || !dn) return false;
  int64_t lc = lt->rank - 1, rc = 1;
  if (!ints_eq(mx_attr_field(dn, "lhs_batching_dimensions"), NULL, 0) ||
      !ints_eq(mx_attr_field(dn, "rhs_batching_dimensions"), NULL, 0) ||
      !ints_eq(mx_attr_field(dn, "lhs_contracting_dimensions"), &lc, 1) ||
      !ints_eq(mx_attr_field(dn, "rhs_contracting_dimensions"), &rc, 1))
    return false;
  int64_t k = rt->dims[1], n = rt->dims[0];
  if (lt->dims[lt->rank - 1] != k || ot->rank != lt->rank || ot->dims[ot->rank - 1] != n)
    return false;
  int64_t m = mx_type_numel(lt) / (k ? k : 1);
  if (k == 0 || n == 0 || m == 0) return false;
  *st = emit_gemm_lowp(c, op, op->operands[0], w, rt->elem, m, n, k, op->results[0],
                       m == 1 ? "dot_general->gemv (bf16/f16)" : "dot_general->gemm (bf16/f16)");
  return true;
}

// Gather of whole rows of a bf16 / f16 table (the embedding of a tied, low-precision head).
static bool match_lowp_embed(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const mx_type_t *tt = vtype(f, op->operands[0]), *it = vtype(f, op->operands[1]),
                  *ot = vtype(f, op->results[0]);
  if (!is_lowp(tt) || tt->rank != 2 || !is_i32(it) || ot->elem != tt->elem || ot->quant)
    return false;
  const mx_attr_t *dn = mx_op_attr(op, "dimension_numbers");
  if (!dn) return false;
  int64_t ir = it->rank, zero = 0, one_h[2] = {1, tt->dims[1]};
  if (!ints_eq(mx_attr_field(dn, "offset_dims"), &ir, 1) ||
      !ints_eq(mx_attr_field(dn, "collapsed_slice_dims"), &zero, 1) ||
      !ints_eq(mx_attr_field(dn, "start_index_map"), &zero, 1) ||
      !ints_eq(mx_op_attr(op, "slice_sizes"), one_h, 2))
    return false;
  if (mx_attr_field(dn, "operand_batching_dims") &&
      !ints_eq(mx_attr_field(dn, "operand_batching_dims"), NULL, 0))
    return false;
  const mx_attr_t *ivd = mx_attr_field(dn, "index_vector_dim");
  if (!ivd || ivd->kind != MX_ATTR_INT || ivd->i != it->rank) return false;
  if (ot->rank != it->rank + 1 || ot->dims[ot->rank - 1] != tt->dims[1] || tt->dims[0] <= 0)
    return false;
  mx_step_t *s = NULL;
  if ((*st = simple_step(c, op, ST_EMBED_ROWS, "gather->embed (bf16/f16 rows)", op->operands, 2,
                         op->results[0], &s)))
    return true;
  s->p[0] = tt->dims[0];
  s->p[1] = tt->dims[1];
  s->p[2] = mx_type_numel(it);
  s->p[3] = (int64_t)mx_elem_size(tt->elem);
  return true;
}

#if MX_CPU_HAVE_FUSED
// mx.gated_mlp with bf16 / f16 weights: its decomposition converts x (and the activation) to the
// weights' type before each linear; so do these steps.
static bool match_lowp_mlp(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  const mx_type_t *xt = vtype(f, op->operands[0]), *gt = vtype(f, op->operands[1]),
                  *ut = vtype(f, op->operands[2]), *dt = vtype(f, op->operands[3]),
                  *ot = vtype(f, op->results[0]);
  mx_comp_gated_t ga;
  int a = mx_comp_gated_read(op, &ga) ? (int)ga.activation : -1;
  const void *wg = weight_bytes(c, op->operands[1]), *wu = weight_bytes(c, op->operands[2]),
             *wd = weight_bytes(c, op->operands[3]);
  if (a < 0 || !wg || !wu || !wd || !is_f32(xt) || !is_lowp(gt) || !mx_type_equal(gt, ut) ||
      dt->elem != gt->elem || dt->quant || !is_f32(ot) || gt->rank != 2 || dt->rank != 2 ||
      xt->rank < 1 || !mx_type_same_shape(xt, ot))
    return false;
  mx_elem_type_t et = gt->elem;
  int64_t H = xt->dims[xt->rank - 1], F = gt->dims[0];
  if (gt->dims[1] != H || dt->dims[0] != H || dt->dims[1] != F || H == 0 || F == 0) return false;
  int64_t M = mx_type_numel(xt) / H;
  if (M == 0) return false;
  size_t tb = (size_t)(M * F) * sizeof(float);
  int32_t xc, tg, tu, ta, tac;
  if ((*st = add_temp(c->p, (size_t)(M * H) * 2, &xc)) || (*st = add_temp(c->p, tb, &tg)) ||
      (*st = add_temp(c->p, tb, &tu)) || (*st = add_temp(c->p, tb, &ta)) ||
      (*st = add_temp(c->p, (size_t)(M * F) * 2, &tac)))
    return true;
  mx_step_t *s = NULL;
  if ((*st = emit_convert(c, op, op->operands[0], MX_ELEM_F32, xc, et, M * H))) return true;
  const char *w1 =
      M == 1 ? "mx.gated_mlp gate gemv (bf16/f16)" : "mx.gated_mlp gate gemm (bf16/f16)";
  if ((*st = emit_gemm_lowp(c, op, xc, wg, et, M, F, H, tg, w1))) return true;
  if ((*st = emit_gemm_lowp(c, op, xc, wu, et, M, F, H, tu, "mx.gated_mlp up (bf16/f16)")))
    return true;
  int32_t in[2] = {tg, tu};
  if ((*st = simple_step(c, op, ST_GATED_ACT, "mx.gated_mlp act", in, 2, ta, &s))) return true;
  s->p[0] = M * F;
  s->p[1] = a;
  if ((*st = emit_convert(c, op, ta, MX_ELEM_F32, tac, et, M * F))) return true;
  *st = emit_gemm_lowp(c, op, tac, wd, et, M, H, F, op->results[0], "mx.gated_mlp down (bf16/f16)");
  return true;
}

// mx.attention over bf16 / f16 caches (the decomposition converts them to f32 exactly; the
// kernel converts as it reads).
static bool match_lowp_attention(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  const mx_type_t *qt = vtype(f, op->operands[0]), *kt = vtype(f, op->operands[1]),
                  *vt = vtype(f, op->operands[2]), *pt = vtype(f, op->operands[3]),
                  *ot = vtype(f, op->results[0]);
  mx_comp_attention_t a;
  if (!is_f32(qt) || qt->rank != 4 || !is_lowp(kt) || kt->rank != 4 || !mx_type_equal(kt, vt) ||
      !is_i32(pt) || pt->rank != 1 || !is_f32(ot) || !mx_type_same_shape(qt, ot) ||
      !mx_comp_attention_read(op, &a))
    return false;
  float scale = (float)a.scale, softcap = (float)a.softcap;
  int64_t window = a.window;
  int64_t B = qt->dims[0], T = qt->dims[1], Hq = qt->dims[2], D = qt->dims[3];
  int64_t Hkv = kt->dims[1], S = kt->dims[2];
  if (kt->dims[0] != B || kt->dims[3] != D || pt->dims[0] != B || Hkv <= 0 || Hq % Hkv)
    return false;
  if (emit_attention_split(c, op, B, T, Hq, Hkv, S, D, window, kt->elem, scale, softcap, st))
    return true;
  mx_step_t *s = NULL;
  if ((*st = simple_step(c, op, ST_ATTENTION_KV, "mx.attention (bf16/f16 KV)", op->operands, 4,
                         op->results[0], &s)))
    return true;
  int64_t pv[8] = {B, T, Hq, Hkv, S, D, window, kt->elem};
  memcpy(s->p, pv, sizeof pv);
  s->fp[0] = scale;
  s->fp[1] = softcap;
  size_t need = mx_cpu_attention_kv_scratch_floats(D, S);
  if (need > c->p->scratch_per_thread) c->p->scratch_per_thread = need;
  return true;
}
#endif

// The hook: true when op became low-precision steps (*st set on error).
static bool match_lowp(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  switch (op->code) {
    case MX_OP_CONVERT:
      return match_lowp_convert(c, op, st);
    case MX_OP_DOT_GENERAL:
      return match_lowp_dot(c, op, st);
    case MX_OP_GATHER:
      return match_lowp_embed(c, op, st);
#if MX_CPU_HAVE_FUSED
    case MX_OP_COMPOSITE: {
      mx_composite_kind_t kind = mx_composite_kind(op);
      if (op->n_results != 1 || op->n_operands != 4) return false;
      if (kind == MX_COMPOSITE_KIND_GATED_MLP) return match_lowp_mlp(c, op, st);
      if (kind == MX_COMPOSITE_KIND_ATTENTION) return match_lowp_attention(c, op, st);
      return false;
    }
#endif
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Quantized weights: mx.linear -> packed quantized GEMV / GEMM, mx.embedding -> dequantized
// rows, mx.gated_act -> the gated-MLP activation kernel (src/cpu/kernels_q.h; the composites
// are those of src/model/composite_quant.c).
// ---------------------------------------------------------------------------------------------

#if MX_CPU_HAVE_FUSED
// The quantized weight operands ops[0..2] (w, scales[, biases]) of a composite, when they are
// weight arguments of a supported format.
static bool quant_src(cctx_t *c, const mx_op_t *op, const int32_t *ops, int32_t n_ops,
                      mx_cpu_qsrc_t *q) {
  const mx_func_t *f = c->p->f;
  mx_comp_quant_t a;
  if (!mx_comp_quant_read(op, &a)) return false;
  int64_t bits = a.bits, group = a.group_size;
  if ((bits != 4 && bits != 8) || group < 1 || group > MX_Q_MAX_K) return false;
  memset(q, 0, sizeof *q);
  q->mode = (int)a.mode;  // mx_qmode_t and MX_CPU_Q_* share their values
  if (n_ops != (q->mode == MX_CPU_Q_AFFINE ? 3 : 2)) return false;
  int32_t wa[3];
  for (int32_t i = 0; i < n_ops; i++)
    if ((wa[i] = weight_arg(c, ops[i])) < 0) return false;
  const mx_type_t *wt = vtype(f, ops[0]), *st = vtype(f, ops[1]);
  if (wt->kind != MX_TYPE_TENSOR || wt->quant || wt->rank != 2 || st->kind != MX_TYPE_TENSOR ||
      st->quant || st->rank != 2 || st->dims[0] != wt->dims[0] || st->dims[1] <= 0)
    return false;
  if (n_ops == 3 && !mx_type_equal(st, vtype(f, ops[2]))) return false;
  q->bits = (int)bits;
  q->group = group;
  q->n = wt->dims[0];
  q->k = st->dims[1] * group;
  int64_t kw = q->mode == MX_CPU_Q_INT8 ? q->k : q->k * bits / 32;
  if (wt->dims[1] != kw || wt->elem != (q->mode == MX_CPU_Q_INT8 ? MX_ELEM_I8 : MX_ELEM_UI32))
    return false;
  q->w = c->p->weight_data[wa[0]];
  q->sdt = st->elem;
  q->scales = c->p->weight_data[wa[1]];
  q->biases = n_ops == 3 ? c->p->weight_data[wa[2]] : NULL;
  return mx_cpu_qsrc_ok(q);
}

static bool match_quant(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->n_results != 1) return false;
  mx_composite_kind_t kind = mx_composite_kind(op);
  const mx_type_t *ot = vtype(f, op->results[0]);
  mx_step_t *s = NULL;
  if (kind == MX_COMPOSITE_KIND_GATED_ACT && op->n_operands == 2) {
    const mx_type_t *gt = vtype(f, op->operands[0]), *ut = vtype(f, op->operands[1]);
    mx_comp_gated_t ga;
    int a = mx_comp_gated_read(op, &ga) ? (int)ga.activation : -1;
    if (a < 0 || !is_f32(gt) || !is_f32(ut) || !is_f32(ot) || !mx_type_same_shape(gt, ut) ||
        !mx_type_same_shape(gt, ot))
      return false;
    if ((*st = simple_step(c, op, ST_GATED_ACT, MX_COMPOSITE_GATED_ACT, op->operands, 2,
                           op->results[0], &s)))
      return true;
    s->p[0] = mx_type_numel(ot);
    s->p[1] = a;
    return true;
  }
  mx_cpu_qsrc_t q;
  if (kind == MX_COMPOSITE_KIND_LINEAR && (op->n_operands == 3 || op->n_operands == 4)) {
    const mx_type_t *xt = vtype(f, op->operands[0]);
    if (!is_f32(xt) || !is_f32(ot) || xt->rank < 1 || ot->rank != xt->rank ||
        !quant_src(c, op, op->operands + 1, op->n_operands - 1, &q) ||
        xt->dims[xt->rank - 1] != q.k || ot->dims[ot->rank - 1] != q.n)
      return false;
    int64_t m = mx_type_numel(xt) / q.k;
    const mx_cpu_qpacked_t *pk = NULL;
    if (m <= 0 || (*st = mx_cpu_qpacked_get(c->p->weights, c->o->pool, &q, &pk))) return m > 0;
    if ((*st = simple_step(c, op, ST_QGEMM, m == 1 ? "mx.linear qgemv" : "mx.linear qgemm",
                           op->operands, 1, op->results[0], &s)))
      return true;
    s->qw = pk;
    s->p[0] = m;
    return true;
  }
  if (kind == MX_COMPOSITE_KIND_EMBEDDING && (op->n_operands == 3 || op->n_operands == 4)) {
    const mx_type_t *it = vtype(f, op->operands[0]);
    if (!is_i32(it) || !is_f32(ot) || ot->rank != it->rank + 1 ||
        !quant_src(c, op, op->operands + 1, op->n_operands - 1, &q) ||
        ot->dims[ot->rank - 1] != q.k)
      return false;
    mx_cpu_qsrc_t *qs = malloc(sizeof *qs);
    if (!qs) {
      *st = mx_error_set(MX_ERR_NOMEM, "out of memory");
      return true;
    }
    *qs = q;
    if ((*st = simple_step(c, op, ST_QEMBED, MX_COMPOSITE_EMBEDDING, op->operands, 1,
                           op->results[0], &s))) {
      free(qs);
      return true;
    }
    s->qsrc = qs;
    s->p[0] = mx_type_numel(it);
    return true;
  }
  return false;
}
#endif

static bool match_ew(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
  const mx_func_t *f = c->p->f;
  if (op->code != MX_OP_ADD && op->code != MX_OP_SUBTRACT && op->code != MX_OP_MULTIPLY)
    return false;
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const mx_type_t *a = vtype(f, op->operands[0]), *b = vtype(f, op->operands[1]),
                  *o = vtype(f, op->results[0]);
  if (!is_f32(a) || !is_f32(b) || !is_f32(o) || !mx_type_same_shape(a, o) ||
      !mx_type_same_shape(b, o))
    return false;
  mx_step_t *s = NULL;
  if ((*st = simple_step(c, op, ST_EW_BINARY, mx_opcode_name(op->code), op->operands, 2,
                         op->results[0], &s)))
    return true;
  s->p[0] = mx_type_numel(o);
  s->p[1] = op->code;
  return true;
}

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
static bool match_view(cctx_t *c, const mx_op_t *op) {
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
    make_view(c->p, op->results[0], op->operands[0], (size_t)off);
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
  make_view(c->p, op->results[0], op->operands[0], 0);
  c->p->n_view_ops++;
  return true;
}

// Slices of 4-byte elements that are not contiguous runs (match_view takes those): the same
// strided copy as a transpose, from the first selected element (p[1]) with every output dim's
// stride the operand's times the slice stride. Phi-3 splits its fused qkv projection this way.
static bool match_slice(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
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
  if ((*st = simple_step(c, op, ST_TRANSPOSE, "slice (strided copy)", op->operands, 1,
                         op->results[0], &s)))
    return true;
  s->p[0] = r;
  s->p[1] = off;
  for (int32_t d = 0; d < r; d++) {
    s->tdims[d] = o->dims[d];
    s->tstr[d] = istr[d];
  }
  return true;
}

// Transposes of 4-byte elements: a strided copy split over output rows.
static bool match_transpose(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
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
  if ((*st = simple_step(c, op, ST_TRANSPOSE, "transpose (strided copy)", op->operands, 1,
                         op->results[0], &s)))
    return true;
  s->p[0] = a->rank;
  s->p[1] = 0;
  for (int32_t d = 0; d < a->rank; d++) {
    if (perm[d] < 0 || perm[d] >= a->rank) {
      c->p->n_steps--;
      return false;
    }
    s->tdims[d] = o->dims[d];
    s->tstr[d] = istr[perm[d]];
  }
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

static bool match_dus(cctx_t *c, const mx_op_t *op, mx_status_t *st) {
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
  if ((*st = add_step(p, &s))) return true;
  s->kind = ST_DUS_INPLACE;
  s->parallel = true;
  s->op = op;
  s->what = "dynamic_update_slice in place";
  s->n_in = op->n_operands - 1;
  for (int32_t i = 1; i < op->n_operands; i++) s->in[i - 1] = op->operands[i];
  s->n_out = 0;
  make_view(p, op->results[0], opd, 0);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Fallbacks
// ---------------------------------------------------------------------------------------------

// Ops only a whole interpreter runs: kernels that run region bodies, and the ops its driver
// runs itself (control flow, tuples, custom calls, checks, ops known only by name).
static bool kernel_needs_interp(mx_opcode_t c) {
  if (mx_interp_kernel_lookup(c).needs_interp) return true;
  switch (c) {
    case MX_OP_WHILE:
    case MX_OP_IF:
    case MX_OP_CASE:
    case MX_OP_CUSTOM_CALL:
    case MX_OP_OPTIMIZATION_BARRIER:
    case MX_OP_TUPLE:
    case MX_OP_GET_TUPLE_ELEMENT:
    case MX_OP_UNKNOWN:
      return true;
    default:
      return (mx_opcode_flags(c) & MX_OPF_CHECK) != 0;
  }
}

static mx_status_t views_alloc(mx_step_t *s, int32_t n_in, int32_t n_out) {
  s->tin = calloc((size_t)(n_in ? n_in : 1), sizeof *s->tin);
  s->pin = calloc((size_t)(n_in ? n_in : 1), sizeof *s->pin);
  s->tout = calloc((size_t)(n_out ? n_out : 1), sizeof *s->tout);
  if (!s->tin || !s->pin || !s->tout) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < n_in; i++) s->pin[i] = &s->tin[i];
  return MX_OK;
}

static mx_status_t emit_fallback(cctx_t *c, const mx_op_t *op) {
  mx_cpu_plan_t *p = c->p;
  const mx_func_t *f = p->f;
  if (op->n_operands > STEP_MAX_IN || op->n_results > STEP_MAX_OUT)
    return mx_error_set(MX_ERR_UNSUPPORTED, "too many operands");  // caller: whole function
  mx_step_t *s = NULL;
  mx_status_t st = add_step(p, &s);
  if (st) return st;
  s->op = op;
  s->parallel = false;
  s->n_in = op->n_operands;
  s->n_out = op->n_results;
  for (int32_t i = 0; i < op->n_operands; i++) s->in[i] = op->operands[i];
  for (int32_t i = 0; i < op->n_results; i++) s->out[i] = op->results[i];
  if (op->code == MX_OP_COMPOSITE || op->code == MX_OP_FUNC_CALL) {
    const mx_attr_t *a = mx_op_attr(op, op->code == MX_OP_COMPOSITE ? "decomposition" : "callee");
    const mx_func_t *g = a && a->s ? mx_module_find_func(p->m, a->s) : NULL;
    if (!g || !g->body) return mx_error_set(MX_ERR_UNSUPPORTED, "no callee");
    s->kind = ST_CALL;
    s->callee = g;
    s->what = op->code == MX_OP_COMPOSITE ? "composite decomposition" : "func.call";
    s->heap_out = calloc((size_t)(op->n_results ? op->n_results : 1), sizeof *s->heap_out);
    if (!s->heap_out) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  } else {
    s->kind = ST_FALLBACK;
    s->what = "interpreter kernel";
  }
  if ((st = views_alloc(s, op->n_operands, op->n_results))) return st;
  for (int32_t i = 0; i < op->n_operands; i++) s->tin[i].type = *vtype(f, op->operands[i]);
  for (int32_t i = 0; i < op->n_results; i++) s->tout[i].type = *vtype(f, op->results[i]);
  return MX_OK;
}

// A function the per-op path cannot express.
static bool needs_whole(const mx_func_t *f) {
  const mx_block_t *b = f->body;
  for (int32_t i = 0; i < b->n_args; i++) {
    const mx_type_t *t = vtype(f, b->args[i]);
    if (t->kind != MX_TYPE_TENSOR || t->quant) return true;
  }
  for (int32_t i = 0; i < b->n_ops; i++) {
    const mx_op_t *op = b->ops[i];
    if (i == b->n_ops - 1) return op->code != MX_OP_FUNC_RETURN && op->code != MX_OP_RETURN;
    if (op->n_regions > 0 || kernel_needs_interp(op->code) || op->n_operands > STEP_MAX_IN ||
        op->n_results > STEP_MAX_OUT)
      return true;
    for (int32_t j = 0; j < op->n_results; j++) {
      const mx_type_t *t = vtype(f, op->results[j]);
      if (t->kind != MX_TYPE_TENSOR || t->quant) return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------

static mx_status_t emit_constant(cctx_t *c, const mx_op_t *op, bool *handled) {
  mx_cpu_plan_t *p = c->p;
  *handled = false;
  const mx_attr_t *v = mx_op_attr(op, "value");
  if (op->n_results != 1 || !v || v->kind != MX_ATTR_DENSE || !v->dense || !v->dense->data)
    return MX_OK;
  const mx_type_t *rt = vtype(p->f, op->results[0]);
  size_t nb = mx_type_nbytes(rt), es = mx_elem_size(rt->elem);
  if (v->dense->type.elem != rt->elem || (v->dense->nbytes < nb && v->dense->nbytes != es))
    return MX_OK;
  uint8_t *d = malloc(nb ? nb : 1);
  if (!d) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  if (v->dense->nbytes >= nb)
    memcpy(d, v->dense->data, nb);
  else
    for (size_t off = 0; off < nb; off += es) memcpy(d + off, v->dense->data, es);
  mx_slot_t *s = &p->slots[op->results[0]];
  s->kind = SLOT_CONST;
  s->cdata = d;
  *handled = true;
  return MX_OK;
}

// ---------------------------------------------------------------------------------------------
// Memory plan
// ---------------------------------------------------------------------------------------------

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static mx_status_t plan_memory(mx_cpu_plan_t *p) {
  // Liveness on roots.
  for (int32_t i = 0; i < p->n_slots; i++) {
    p->slots[i].def = INT32_MAX;
    p->slots[i].last = -1;
  }
  for (int32_t k = 0; k < p->n_steps; k++) {
    const mx_step_t *s = &p->steps[k];
    for (int32_t j = 0; j < s->n_out; j++) {
      mx_slot_t *r = &p->slots[root(p, s->out[j])];
      if (k < r->def) r->def = k;
      if (k > r->last) r->last = k;
    }
    for (int32_t j = 0; j < s->n_in; j++) {
      mx_slot_t *r = &p->slots[root(p, s->in[j])];
      if (k > r->last) r->last = k;
      if (k < r->def) r->def = k;  // read before any write (in-place ops): still live here
    }
  }
  for (int32_t r = 0; r < p->f->n_results; r++)
    p->slots[root(p, p->result_slot[r])].last = INT32_MAX;
  if (p->keep_values)  // debugging: nothing is overwritten before the end of the run
    for (int32_t i = 0; i < p->n_slots; i++) p->slots[i].last = INT32_MAX;
  // First fit, by definition order.
  int32_t *order = malloc((size_t)(p->n_slots ? p->n_slots : 1) * sizeof *order);
  if (!order) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  int32_t n = 0;
  for (int32_t i = 0; i < p->n_slots; i++)
    if (p->slots[i].kind == SLOT_ARENA && p->slots[i].def != INT32_MAX) order[n++] = i;
  // Insertion sort by def (n is small: hundreds).
  for (int32_t i = 1; i < n; i++) {
    int32_t x = order[i], j = i - 1;
    while (j >= 0 && p->slots[order[j]].def > p->slots[x].def) {
      order[j + 1] = order[j];
      j--;
    }
    order[j + 1] = x;
  }
  size_t total = 0;
  for (int32_t i = 0; i < n; i++) {
    mx_slot_t *s = &p->slots[order[i]];
    size_t sz = align64(s->nbytes ? s->nbytes : 1), off = 0;
    bool moved = true;
    while (moved) {
      moved = false;
      for (int32_t j = 0; j < i; j++) {
        const mx_slot_t *o = &p->slots[order[j]];
        bool live = !(o->last < s->def || s->last < o->def);
        size_t osz = align64(o->nbytes ? o->nbytes : 1);
        if (live && off < o->off + osz && o->off < off + sz) {
          off = o->off + osz;
          moved = true;
        }
      }
    }
    s->off = off;
    if (off + sz > total) total = off + sz;
  }
  free(order);
  if (p->apack_bytes) {  // after every slot: live through all the GEMM steps
    p->apack_off = total;
    total += align64(p->apack_bytes);
  }
  p->arena_bytes = total;
  if (total && !p->external_arena) {
    p->own_arena = true;
    p->arena = aligned_alloc(64, total);
    if (!p->arena) return mx_error_set(MX_ERR_NOMEM, "out of memory (arena of %zu bytes)", total);
    memset(p->arena, 0, total);
  }
  return MX_OK;
}

// ---------------------------------------------------------------------------------------------
// Barrier elision: a step needs the barrier before it only when it reads or writes bytes that a
// step since the last barrier writes, or writes bytes such a step reads. Byte ranges are
// compared within the arena and within one argument (distinct arguments never overlap).
// ---------------------------------------------------------------------------------------------

typedef struct range {
  int32_t space;  // -1: arena, >= 0: argument index, -2: constant (never written)
  size_t b, e;
} range_t;

static range_t slot_range(const mx_cpu_plan_t *p, int32_t v) {
  const mx_slot_t *s = &p->slots[v];
  int32_t r = root(p, v);
  const mx_slot_t *rs = &p->slots[r];
  size_t off = (s->kind == SLOT_VIEW ? s->off : 0);
  range_t g = {-2, 0, 0};
  if (rs->kind == SLOT_ARENA) {
    g.space = -1;
    off += rs->off;
  } else if (rs->kind == SLOT_ARG) {
    g.space = rs->arg;
  }
  g.b = off;
  g.e = off + (s->nbytes ? s->nbytes : 1);
  return g;
}

static bool ranges_meet(range_t a, range_t b) {
  return a.space == b.space && a.space != -2 && a.b < b.e && b.b < a.e;
}

enum { MAX_PENDING = 64 };

static int32_t step_writes(const mx_cpu_plan_t *p, const mx_step_t *s, range_t *w) {
  int32_t n = 0;
  for (int32_t j = 0; j < s->n_out; j++) w[n++] = slot_range(p, s->out[j]);
  if (s->kind == ST_DUS_INPLACE) w[n++] = slot_range(p, s->op->results[0]);
  return n;
}

// GEMM steps (m > mr rows) read X packed once into the arena's apack region (exec.c step_apack)
// instead of packing it again for every chunk of panels. Before plan_memory: marks them
// APACK_PACK and sizes the region.
static void plan_apack_size(mx_cpu_plan_t *p) {
  size_t floats = 0;
  for (int32_t k = 0; k < p->n_steps; k++) {
    mx_step_t *s = &p->steps[k];
    if ((s->kind != ST_GEMM && s->kind != ST_GATED_UP) || s->p[3] ||
        s->p[0] <= mx_cpu_kernels_gemm_rows(s->w->kt))
      continue;
    s->p[6] = APACK_PACK;
    size_t f = mx_cpu_gemm_apack_floats(s->w->kt, s->p[0], s->w->k);
    if (f > floats) floats = f;
  }
  p->apack_bytes = floats * sizeof(float);
}

// After plan_barriers: a step whose X is the last packed one, unchanged since, reuses the packed
// copy (q, k and v of one layer pack once); a packing step gets a barrier first (p[7]) when a
// step since the last barrier may still read the region.
static void plan_apack_order(mx_cpu_plan_t *p) {
  int32_t packed = -1;  // step that packed the region's current contents
  bool read_since_barrier = false;
  for (int32_t k = 0; k < p->n_steps; k++) {
    mx_step_t *s = &p->steps[k];
    if (s->barrier_before) read_since_barrier = false;
    if (s->p[6] == APACK_NONE || (s->kind != ST_GEMM && s->kind != ST_GATED_UP)) continue;
    bool reuse = packed >= 0 && p->steps[packed].in[0] == s->in[0] &&
                 p->steps[packed].p[0] == s->p[0] && p->steps[packed].w->k == s->w->k;
    range_t x = slot_range(p, s->in[0]), w[STEP_MAX_OUT + 2];
    for (int32_t i = packed + 1; i < k && reuse; i++) {
      int32_t nw = step_writes(p, &p->steps[i], w);
      for (int32_t j = 0; j < nw && reuse; j++) reuse = !ranges_meet(x, w[j]);
    }
    if (reuse) {
      s->p[6] = APACK_REUSE;
    } else {
      s->p[6] = APACK_PACK;
      s->p[7] = read_since_barrier;
      packed = k;
    }
    read_since_barrier = true;
  }
}

static void plan_barriers(mx_cpu_plan_t *p) {
  range_t pr[MAX_PENDING], pw[MAX_PENDING];
  int32_t npr = 0, npw = 0;
  p->n_barriers = 0;
  for (int32_t k = 0; k < p->n_steps; k++) {
    mx_step_t *s = &p->steps[k];
    range_t r[STEP_MAX_IN], w[STEP_MAX_OUT + 2];
    int32_t nr = s->n_in, nw = step_writes(p, s, w);
    for (int32_t j = 0; j < nr; j++) r[j] = slot_range(p, s->in[j]);
    bool need = k > 0 && (npr + nr > MAX_PENDING || npw + nw > MAX_PENDING);
    for (int32_t j = 0; j < nr && !need; j++)
      for (int32_t i = 0; i < npw && !need; i++) need = ranges_meet(r[j], pw[i]);
    for (int32_t j = 0; j < nw && !need; j++) {
      for (int32_t i = 0; i < npw && !need; i++) need = ranges_meet(w[j], pw[i]);
      for (int32_t i = 0; i < npr && !need; i++) need = ranges_meet(w[j], pr[i]);
    }
    s->barrier_before = need;
    if (need) {
      p->n_barriers++;
      npr = npw = 0;
    }
    for (int32_t j = 0; j < nr; j++) pr[npr++] = r[j];
    for (int32_t j = 0; j < nw; j++) pw[npw++] = w[j];
  }
}

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

void mx_cpu_plan_destroy(mx_cpu_plan_t *p) {
  if (!p) return;
  for (int32_t i = 0; i < p->n_steps; i++) {
    mx_step_t *s = &p->steps[i];
    free(s->tin);
    free(s->pin);
    free(s->tout);
    free(s->heap_out);
    free(s->qsrc);
  }
  for (int32_t i = 0; p->slots && i < p->n_slots; i++) free(p->slots[i].cdata);
  free(p->steps);
  free(p->slots);
  free(p->result_slot);
  free(p->vp);
  if (p->own_arena) free(p->arena);
  free(p->scratch);
  free(p->work);
  free(p->weight_data);
  free(p->prof_s);
  if (p->own_weights) mx_cpu_weights_destroy(p->weights);
  free(p);
}

// Testing knob (test_perturb_op): a step after the first matching fast op breaks its result.
static mx_status_t maybe_perturb(cctx_t *c, const mx_op_t *op) {
  const char *want = c->o->test_perturb_op;
  if (!want || c->perturbed || op->n_results < 1) return MX_OK;
  const mx_attr_t *na = op->code == MX_OP_COMPOSITE ? mx_op_attr(op, "name") : NULL;
  const char *name = na && na->kind == MX_ATTR_STRING && na->s ? na->s : mx_opcode_name(op->code);
  if (strcmp(name, want) != 0 || !is_f32(vtype(c->p->f, op->results[0]))) return MX_OK;
  mx_step_t *s = NULL;
  mx_status_t st = add_step(c->p, &s);
  if (st) return st;
  s->kind = ST_PERTURB;
  s->op = op;
  s->what = "test perturbation";
  s->n_out = 1;
  s->out[0] = op->results[0];
  c->perturbed = true;
  return MX_OK;
}

static mx_status_t compile_ops(cctx_t *c) {
  mx_cpu_plan_t *p = c->p;
  const mx_func_t *f = p->f;
  const mx_block_t *b = f->body;
  for (int32_t i = 0; i + 1 < b->n_ops; i++) {
    const mx_op_t *op = b->ops[i];
    mx_status_t st = MX_OK;
    for (int32_t j = 0; j < op->n_results; j++) {
      mx_slot_t *s = &p->slots[op->results[j]];
      s->kind = SLOT_ARENA;
      s->nbytes = mx_type_nbytes(vtype(f, op->results[j]));
    }
    if (op->code == MX_OP_CONSTANT) {
      bool handled;
      if ((st = emit_constant(c, op, &handled))) return st;
      if (handled) continue;
    }
    if (!c->o->no_fast) {
      if (match_view(c, op)) continue;
      if (match_lowp(c, op, &st)) {
        if (st) return st;
        continue;
      }
      bool hit = false;
      switch (op->code) {
        case MX_OP_DOT_GENERAL:
          hit = match_dot(c, op, &st);
          break;
        case MX_OP_GATHER:
#if MX_CPU_HAVE_FUSED
          hit = match_embed(c, op, &st);
#endif
          break;
        case MX_OP_DYNAMIC_UPDATE_SLICE:
          hit = match_dus(c, op, &st);
          break;
        case MX_OP_TRANSPOSE:
          hit = match_transpose(c, op, &st);
          break;
        case MX_OP_SLICE:
          hit = match_slice(c, op, &st);
          break;
        case MX_OP_COMPOSITE:
#if MX_CPU_HAVE_FUSED
          hit = match_composite(c, op, &st);
          if (!hit && !st) hit = match_quant(c, op, &st);
#endif
          break;
        default:
          hit = match_ew(c, op, &st);
          break;
      }
      if (st) return st;
      if (hit) {
        if ((st = maybe_perturb(c, op))) return st;
        continue;
      }
    }
    if ((st = emit_fallback(c, op))) return st;
  }
  return MX_OK;
}

mx_status_t mx_cpu_compile(const mx_module_t *m, const mx_func_t *f,
                           const mx_cpu_compile_opts_t *opts, mx_cpu_plan_t **out) {
  *out = NULL;
  if (!m || !f || !f->body || f->body->n_ops == 0)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_compile: no function body");
  mx_cpu_compile_opts_t dflt = {0};
  if (!opts) opts = &dflt;
  mx_cpu_plan_t *p = calloc(1, sizeof *p);
  if (!p) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  p->m = m;
  p->f = f;
  p->n_args = f->body->n_args;
  mx_status_t st = MX_OK;
  cctx_t c = {p, opts, NULL, NULL, false, 0, {{0}}};
  p->keep_values = opts->keep_values;
  p->external_arena = opts->external_arena;
  if (opts->weights) {
    p->weights = opts->weights;
  } else {
    st = mx_cpu_weights_create(NULL, &p->weights);
    p->own_weights = true;
  }
  p->n_slots = f->n_values;
  p->slots = calloc((size_t)(p->n_slots ? p->n_slots : 1), sizeof *p->slots);
  p->weight_data = calloc((size_t)(p->n_args ? p->n_args : 1), sizeof *p->weight_data);
  p->result_slot = calloc((size_t)(f->n_results ? f->n_results : 1), sizeof *p->result_slot);
  c.n_uses = calloc((size_t)(p->n_slots ? p->n_slots : 1), sizeof *c.n_uses);
  c.dus_arg = malloc((size_t)(p->n_slots ? p->n_slots : 1) * sizeof *c.dus_arg);
  if (!st && (!p->slots || !p->weight_data || !p->result_slot || !c.n_uses || !c.dus_arg))
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; c.dus_arg && i < p->n_slots; i++) c.dus_arg[i] = -1;
  const mx_block_t *b = f->body;
  const mx_op_t *ret = b->ops[b->n_ops - 1];
  if (!st && ret->n_operands != f->n_results)
    st = mx_error_set(MX_ERR_INVALID_ARG, "@%s: return has %d values for %d results", f->name,
                      ret->n_operands, f->n_results);
  for (int32_t i = 0; !st && i < p->n_args; i++) {
    mx_slot_t *s = &p->slots[b->args[i]];
    s->kind = SLOT_ARG;
    s->arg = i;
    s->nbytes =
        vtype(f, b->args[i])->kind == MX_TYPE_TENSOR ? mx_type_nbytes(vtype(f, b->args[i])) : 0;
    bool w = false;
    if (opts->args && opts->args[i].data) {
      if (opts->is_weight) {
        w = opts->is_weight[i];
      } else if (f->arg_attrs && f->arg_attrs[i].n) {
        const mx_attr_t *a = mx_attr_field(&f->arg_attrs[i], "mx.role");
        w = a && a->kind == MX_ATTR_STRING && a->s && !strcmp(a->s, "weight");
      }
    }
    if (w) p->weight_data[i] = opts->args[i].data;
  }
  if (!st) {
    for (int32_t i = 0; i < b->n_ops; i++)
      for (int32_t j = 0; j < b->ops[i]->n_operands; j++) c.n_uses[b->ops[i]->operands[j]]++;
    p->whole = needs_whole(f);
  }
  if (!st && !p->whole) {
    st = compile_ops(&c);
    if (st == MX_ERR_UNSUPPORTED) {  // something the per-op path cannot express
      for (int32_t i = 0; i < p->n_steps; i++) {
        free(p->steps[i].tin);
        free(p->steps[i].pin);
        free(p->steps[i].tout);
        free(p->steps[i].heap_out);
        free(p->steps[i].qsrc);
      }
      p->n_steps = 0;
      p->whole = true;
      st = MX_OK;
    }
  }
  if (!st && p->whole) {
    mx_step_t *s = NULL;
    st = add_step(p, &s);
    if (!st) {
      s->kind = ST_WHOLE;
      s->what = "whole function (interpreter)";
      s->heap_out = calloc((size_t)(f->n_results ? f->n_results : 1), sizeof *s->heap_out);
      if (!s->heap_out) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    }
  }
  if (!st && !p->whole) {
    for (int32_t r = 0; r < f->n_results; r++) p->result_slot[r] = ret->operands[r];
    plan_apack_size(p);
    st = plan_memory(p);
    if (!st) {
      plan_barriers(p);
      plan_apack_order(p);
    }
  }
  if (!st) {
    p->vp = calloc((size_t)(p->n_slots ? p->n_slots : 1), sizeof *p->vp);
    // One work-sharing counter per step (the _dyn kernels), each on its own cache line.
    p->work = aligned_alloc(64, align64((size_t)(p->n_steps ? p->n_steps : 1) * sizeof *p->work));
    if (!p->vp || !p->work) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  if (!st && p->scratch_per_thread) {
    p->scratch_threads = mx_cpu_features()->logical_cpus;
    if (p->scratch_threads < 1) p->scratch_threads = 1;
    p->scratch = aligned_alloc(
        64, align64(p->scratch_per_thread * (size_t)p->scratch_threads * sizeof(float)));
    if (!p->scratch) st = mx_error_set(MX_ERR_NOMEM, "out of memory (attention scratch)");
  }
  free(c.n_uses);
  free(c.dus_arg);
  if (st) {
    mx_cpu_plan_destroy(p);
    return mx_error_prefix(st, "mx_cpu_compile @%s", f->name);
  }
  *out = p;
  return MX_OK;
}

mx_status_t mx_cpu_plan_set_arena(mx_cpu_plan_t *p, void *arena, size_t nbytes) {
  if (!p || !p->external_arena)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx_cpu_plan_set_arena: plan not compiled with "
                        "external_arena");
  if ((p->arena_bytes && !arena) || nbytes < p->arena_bytes || ((uintptr_t)arena & 63))
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx_cpu_plan_set_arena: @%s needs %zu bytes, 64-byte aligned; got %zu",
                        p->f->name, p->arena_bytes, nbytes);
  p->arena = arena;
  return MX_OK;
}

mx_status_t mx_cpu_plan_value(const mx_cpu_plan_t *p, int32_t value_id, mx_tensor_t *view) {
  memset(view, 0, sizeof *view);
  if (!p || value_id < 0 || value_id >= p->n_slots)
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_plan_value: no value %d", value_id);
  if (!p->keep_values)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx_cpu_plan_value: plan not compiled with keep_values");
  if (!p->ran) return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_plan_value: the plan has not run");
  const mx_type_t *t = vtype(p->f, value_id);
  if (p->whole || p->slots[value_id].kind == SLOT_NONE || !p->vp[value_id] ||
      t->kind != MX_TYPE_TENSOR)
    return mx_error_set(MX_ERR_UNSUPPORTED, "mx_cpu_plan_value: value %d has no memory in the plan",
                        value_id);
  view->type = *t;
  view->data = p->vp[value_id];
  view->nbytes = mx_type_nbytes(t);
  return MX_OK;
}

void mx_cpu_plan_stats(const mx_cpu_plan_t *p, mx_cpu_plan_stats_t *s) {
  memset(s, 0, sizeof *s);
  s->n_steps = p->n_steps;
  s->n_view = p->n_view_ops;
  s->n_barriers = p->n_barriers;
  s->whole_function = p->whole;
  s->arena_bytes = p->arena_bytes;
  s->scratch_bytes = p->scratch_per_thread * (size_t)p->scratch_threads * sizeof(float);
  for (int32_t i = 0; i < p->n_steps; i++) {
    step_kind_t k = p->steps[i].kind;
    if (k == ST_FALLBACK || k == ST_CALL || k == ST_WHOLE)
      s->n_fallback++;
    else
      s->n_fast++;
  }
}

void mx_cpu_plan_describe(const mx_cpu_plan_t *p, mx_strbuf_t *sb) {
  for (int32_t i = 0; i < p->n_steps; i++) {
    const mx_step_t *s = &p->steps[i];
    bool fb = s->kind == ST_FALLBACK || s->kind == ST_CALL || s->kind == ST_WHOLE;
    const char *on = "";
    if (s->op) {
      const mx_attr_t *na = s->op->code == MX_OP_COMPOSITE ? mx_op_attr(s->op, "name") : NULL;
      on = na && na->s ? na->s : mx_opcode_name(s->op->code);
    }
    mx_strbuf_printf(sb, "%s %s (%s)\n", fb ? "fallback" : "fast", on, s->what ? s->what : "");
  }
}
