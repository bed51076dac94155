// Plan compiler entry point (mx_cpu_compile, see cpu_plan.h): binds the arguments, offers each
// op to the matchers (compile_internal.h), sends what no matcher takes to the reference
// interpreter's kernels, lays out the arena and elides barriers.
#include <stdlib.h>
#include <string.h>

#include "cpu/compile_internal.h"
#include "hlo/interp_kernels.h"
#include "mlxcel/composite.h"

// ---------------------------------------------------------------------------------------------
// Building steps and slots
// ---------------------------------------------------------------------------------------------

mx_status_t mx_plan_add_step(mx_cpu_plan_t *p, mx_step_t **out) {
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

mx_status_t mx_plan_add_temp(mx_cpu_plan_t *p, size_t nbytes, int32_t *slot) {
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

void mx_plan_make_view(mx_cpu_plan_t *p, int32_t v, int32_t src, size_t off) {
  int32_t r = root(p, src);
  size_t base_off = p->slots[src].kind == SLOT_VIEW ? p->slots[src].off : 0;
  p->slots[v].kind = SLOT_VIEW;
  p->slots[v].base = r;
  p->slots[v].off = base_off + off;
}

mx_status_t mx_plan_simple_step(cctx_t *c, const mx_op_t *op, step_kind_t kind, const char *what,
                                const int32_t *in, int32_t n_in, int32_t out, mx_step_t **sp) {
  mx_step_t *s = NULL;
  mx_status_t st = mx_plan_add_step(c->p, &s);
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

static bool ints_eq(const mx_attr_t *a, const int64_t *want, int32_t n) {
  const int64_t *v = NULL;
  int32_t k = a ? mx_attr_get_i64s(a, &v) : (n == 0 ? 0 : -1);
  if (k != n) return false;
  for (int32_t i = 0; i < n; i++)
    if (v[i] != want[i]) return false;
  return true;
}

bool mx_plan_dot_xwt(const mx_op_t *op, const mx_type_t *lt, const mx_type_t *rt,
                     const mx_type_t *ot, int64_t *m, int64_t *n, int64_t *k, bool *kn) {
  const mx_attr_t *dn = mx_op_attr(op, "dot_dimension_numbers");
  if (!dn) return false;
  int64_t lc = lt->rank - 1, rc = 1, rc0 = 0;
  if (!ints_eq(mx_attr_field(dn, "lhs_batching_dimensions"), NULL, 0) ||
      !ints_eq(mx_attr_field(dn, "rhs_batching_dimensions"), NULL, 0) ||
      !ints_eq(mx_attr_field(dn, "lhs_contracting_dimensions"), &lc, 1))
    return false;
  const mx_attr_t *rca = mx_attr_field(dn, "rhs_contracting_dimensions");
  *kn = ints_eq(rca, &rc0, 1);
  if (!*kn && !ints_eq(rca, &rc, 1)) return false;
  *k = rt->dims[*kn ? 0 : 1];
  *n = rt->dims[*kn ? 1 : 0];
  if (lt->dims[lt->rank - 1] != *k || ot->rank != lt->rank || ot->dims[ot->rank - 1] != *n)
    return false;
  *m = mx_type_numel(lt) / (*k ? *k : 1);
  return *k != 0 && *n != 0 && *m != 0;
}

bool mx_plan_gather_is_rows(const mx_op_t *op, const mx_type_t *tt, const mx_type_t *it) {
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
  return ivd && ivd->kind == MX_ATTR_INT && ivd->i == it->rank;
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
  mx_status_t st = mx_plan_add_step(p, &s);
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
    // mx.moe has 3 operands per expert; its matcher takes it whole (else the per-op path
    // refuses it and the function runs whole after all).
    bool many = op->n_operands > STEP_MAX_IN && mx_composite_kind(op) != MX_COMPOSITE_KIND_MOE;
    if (op->n_regions > 0 || kernel_needs_interp(op->code) || many || op->n_results > STEP_MAX_OUT)
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
    if (s->kind == ST_MOE_ROUTE) free(s->moe);
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
  mx_status_t st = mx_plan_add_step(c->p, &s);
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
    c->op_index = i;
    if (!c->o->no_fast) {
      if (mx_plan_match_view(c, op)) continue;
      if (mx_plan_match_lowp(c, op, &st)) {
        if (st) return st;
        continue;
      }
      bool hit = false;
      switch (op->code) {
        case MX_OP_DOT_GENERAL:
          hit = mx_plan_match_dot(c, op, &st);
          break;
        case MX_OP_GATHER:
          hit = mx_plan_match_embed(c, op, &st);
          break;
        case MX_OP_DYNAMIC_UPDATE_SLICE:
          hit = mx_plan_match_dus(c, op, &st);
          break;
        case MX_OP_TRANSPOSE:
          hit = mx_plan_match_transpose(c, op, &st);
          break;
        case MX_OP_SLICE:
          hit = mx_plan_match_slice(c, op, &st);
          break;
        case MX_OP_BROADCAST_IN_DIM:
          hit = mx_plan_match_broadcast(c, op, &st);
          break;
        case MX_OP_COMPOSITE:
          hit = mx_plan_match_composite(c, op, &st);
          if (!hit && !st) hit = mx_plan_match_quant(c, op, &st);
          if (!hit && !st) hit = mx_plan_match_moe(c, op, &st);
          if (!hit && !st) hit = mx_plan_match_mla(c, op, &st);
          break;
        default:
          hit = mx_plan_match_ew(c, op, &st);
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
  if ((unsigned)opts->quant_kernel > MX_CPU_QKERNEL_VNNI)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "mx_cpu_compile: quantized kernel choice %d is not valid",
                        (int)opts->quant_kernel);
  mx_cpu_plan_t *p = calloc(1, sizeof *p);
  if (!p) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  p->m = m;
  p->f = f;
  p->n_args = f->body->n_args;
  mx_status_t st = MX_OK;
  cctx_t c = {.p = p, .o = opts};
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
  c.bcast = malloc((size_t)(p->n_slots ? p->n_slots : 1) * sizeof *c.bcast);
  c.conv_of = malloc((size_t)(p->n_slots ? p->n_slots : 1) * sizeof *c.conv_of);
  if (!st && (!p->slots || !p->weight_data || !p->result_slot || !c.n_uses || !c.dus_arg ||
              !c.bcast || !c.conv_of))
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; c.dus_arg && i < p->n_slots; i++) c.dus_arg[i] = -1;
  for (int32_t i = 0; c.conv_of && i < p->n_slots; i++) c.conv_of[i] = -1;
  for (int32_t i = 0; c.bcast && i < p->n_slots; i++) c.bcast[i] = (lazy_bcast_t){.src = -1};
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
        if (p->steps[i].kind == ST_MOE_ROUTE) free(p->steps[i].moe);
      }
      p->n_steps = 0;
      p->whole = true;
      st = MX_OK;
    }
  }
  if (!st && p->whole) {
    mx_step_t *s = NULL;
    st = mx_plan_add_step(p, &s);
    if (!st) {
      s->kind = ST_WHOLE;
      s->what = "whole function (interpreter)";
      s->heap_out = calloc((size_t)(f->n_results ? f->n_results : 1), sizeof *s->heap_out);
      if (!s->heap_out) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
    }
  }
  if (!st && !p->whole) {
    for (int32_t r = 0; r < f->n_results; r++) p->result_slot[r] = ret->operands[r];
    mx_plan_fuse_qgated(p);
    mx_plan_fuse_rope_cache(p);
    mx_plan_apack_size(p);
    st = mx_plan_memory(p);
    if (!st) {
      mx_plan_barriers(p);
      mx_plan_apack_order(p);
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
  free(c.bcast);
  free(c.conv_of);
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
