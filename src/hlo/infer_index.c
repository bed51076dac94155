// Result-type inference for gather and scatter (StableHLO spec constraints, batching dims
// included).
#include <string.h>

#include "hlo/infer.h"

static bool contains(const mx_ilist_t *l, int64_t v) {
  for (int32_t i = 0; i < l->n; i++) {
    if (l->v[i] == v) return true;
  }
  return false;
}

static mx_status_t check_disjoint(const mx_op_t *op, const char *an, const mx_ilist_t *a,
                                  const char *bn, const mx_ilist_t *b) {
  for (int32_t i = 0; i < a->n; i++) {
    if (contains(b, a->v[i])) {
      return mx_infer_fail(op, "dimension %lld appears in both %s and %s", (long long)a->v[i], an,
                           bn);
    }
  }
  return MX_OK;
}

// Reads a dims field of the dimension-numbers struct `dn`.
static mx_status_t field(const mx_op_t *op, const mx_attr_t *dn, const char *name, mx_ilist_t *l) {
  return mx_infer_ints(op, dn, name, false, l, NULL);
}

static const mx_attr_t *dim_numbers(const mx_op_t *op, const char *name, mx_status_t *st) {
  const mx_attr_t *dn = mx_op_attr(op, name);
  *st = MX_OK;
  if (dn == NULL) {
    *st = mx_infer_fail(op, "missing required attribute '%s'", name);
  } else if (dn->kind != MX_ATTR_STRUCT && dn->kind != MX_ATTR_DICT) {
    *st = mx_infer_fail(op, "attribute '%s' must be a dimension-numbers struct", name);
  }
  return dn;
}

// Common checks of the batching dims of gather/scatter: operand side `ob` (sorted, in range),
// indices side `ib` (unique, in range, not index_vector_dim), equal sizes.
static mx_status_t check_batching(const mx_op_t *op, const char *obn, const mx_ilist_t *ob,
                                  const char *ibn, const mx_ilist_t *ib, const mx_type_t *x,
                                  const mx_type_t *s, int64_t ivd) {
  mx_status_t st = mx_infer_check_dims(op, obn, ob, x->rank, true);
  if (st != MX_OK) return st;
  if ((st = mx_infer_check_dims(op, ibn, ib, s->rank, false)) != MX_OK) return st;
  if (contains(ib, ivd)) {
    return mx_infer_fail(op, "%s must not contain index_vector_dim %lld", ibn, (long long)ivd);
  }
  if (ob->n != ib->n) {
    return mx_infer_fail(op, "%s and %s have different sizes %d and %d", obn, ibn, ob->n, ib->n);
  }
  for (int32_t i = 0; i < ob->n; i++) {
    if (x->dims[ob->v[i]] != s->dims[ib->v[i]]) {
      return mx_infer_fail(op,
                           "batching dimension sizes differ: %s dim %lld = %lld, indices %s "
                           "dim %lld = %lld",
                           mx_tstr(x).s, (long long)ob->v[i], (long long)x->dims[ob->v[i]],
                           mx_tstr(s).s, (long long)ib->v[i], (long long)s->dims[ib->v[i]]);
    }
  }
  return MX_OK;
}

static mx_status_t check_index_map(const mx_op_t *op, const char *name, const mx_ilist_t *m,
                                   const mx_ilist_t *ob, const mx_type_t *x, const mx_type_t *s,
                                   int64_t ivd) {
  int64_t want = ivd < s->rank ? s->dims[ivd] : 1;
  if (m->n != want) {
    return mx_infer_fail(op, "%s has %d entries, expected %lld (index vector size of %s)", name,
                         m->n, (long long)want, mx_tstr(s).s);
  }
  mx_status_t st = mx_infer_check_dims(op, name, m, x->rank, false);
  if (st != MX_OK) return st;
  return check_disjoint(op, name, m, "operand batching dims", ob);
}

static mx_status_t infer_gather(const mx_func_t *f, const mx_op_t *op, mx_type_t *out) {
  if (op->n_operands != 2) {
    return mx_infer_fail(op, "expected 2 operands (operand, start_indices), got %d",
                         op->n_operands);
  }
  mx_status_t st = mx_infer_need_tensors(f, op, 0, 2);
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  const mx_type_t *s = mx_infer_operand(f, op, 1);
  if (!mx_elem_is_int(s->elem)) {
    return mx_infer_fail(op, "start_indices type %s must have integer elements", mx_tstr(s).s);
  }
  const mx_attr_t *dn = dim_numbers(op, "dimension_numbers", &st);
  if (st != MX_OK) return st;
  mx_ilist_t od, cd, ob, ib, sim, ss;
  int64_t ivd;
  if ((st = field(op, dn, "offset_dims", &od)) != MX_OK) return st;
  if ((st = field(op, dn, "collapsed_slice_dims", &cd)) != MX_OK) return st;
  if ((st = field(op, dn, "operand_batching_dims", &ob)) != MX_OK) return st;
  if ((st = field(op, dn, "start_indices_batching_dims", &ib)) != MX_OK) return st;
  if ((st = field(op, dn, "start_index_map", &sim)) != MX_OK) return st;
  if ((st = mx_infer_int(op, dn, "index_vector_dim", false, s->rank, &ivd)) != MX_OK) return st;
  if ((st = mx_infer_ints(op, NULL, "slice_sizes", true, &ss, NULL)) != MX_OK) return st;
  if (ivd < 0 || ivd > s->rank) {
    return mx_infer_fail(op, "index_vector_dim %lld is out of range for start_indices %s",
                         (long long)ivd, mx_tstr(s).s);
  }
  if (x->rank != od.n + cd.n + ob.n) {
    return mx_infer_fail(op,
                         "rank of operand %s must equal the number of offset_dims (%d) + "
                         "collapsed_slice_dims (%d) + operand_batching_dims (%d)",
                         mx_tstr(x).s, od.n, cd.n, ob.n);
  }
  int32_t n_batch = s->rank - (ivd < s->rank ? 1 : 0);
  int32_t rrank = n_batch + od.n;
  if (rrank > MX_MAX_RANK) return mx_infer_fail(op, "result rank %d is too large", rrank);
  if ((st = mx_infer_check_dims(op, "offset_dims", &od, rrank, true)) != MX_OK) return st;
  if ((st = mx_infer_check_dims(op, "collapsed_slice_dims", &cd, x->rank, true)) != MX_OK) {
    return st;
  }
  if ((st = check_disjoint(op, "collapsed_slice_dims", &cd, "operand_batching_dims", &ob)) !=
      MX_OK) {
    return st;
  }
  if ((st = check_batching(op, "operand_batching_dims", &ob, "start_indices_batching_dims", &ib, x,
                           s, ivd)) != MX_OK) {
    return st;
  }
  if ((st = check_index_map(op, "start_index_map", &sim, &ob, x, s, ivd)) != MX_OK) return st;
  if (ss.n != x->rank) {
    return mx_infer_fail(op, "slice_sizes has %d entries, expected rank(%s) = %d", ss.n,
                         mx_tstr(x).s, x->rank);
  }
  int64_t offset_sizes[MX_MAX_RANK];
  int32_t n_off = 0;
  for (int32_t i = 0; i < x->rank; i++) {
    if (ss.v[i] < 0 || ss.v[i] > x->dims[i]) {
      return mx_infer_fail(op, "slice_sizes[%d] = %lld is out of range for operand %s", i,
                           (long long)ss.v[i], mx_tstr(x).s);
    }
    if (contains(&cd, i) || contains(&ob, i)) {
      if (ss.v[i] > 1) {
        return mx_infer_fail(op,
                             "slice_sizes[%d] = %lld must be <= 1 for a collapsed or "
                             "batching dimension",
                             i, (long long)ss.v[i]);
      }
    } else {
      offset_sizes[n_off++] = ss.v[i];
    }
  }
  *out = *x;
  out->rank = rrank;
  int32_t bi = 0, oi = 0;
  for (int32_t d = 0; d < rrank; d++) {
    if (contains(&od, d)) {
      out->dims[d] = offset_sizes[oi++];
    } else {
      if (bi == ivd) bi++;
      out->dims[d] = s->dims[bi++];
    }
  }
  return MX_OK;
}

static mx_status_t infer_scatter(const mx_func_t *f, const mx_op_t *op, const mx_type_t *decl,
                                 int32_t n_results, mx_type_t *out) {
  if (op->n_operands < 3 || op->n_operands % 2 == 0) {
    return mx_infer_fail(op, "expected N inputs, scatter_indices and N updates, got %d operands",
                         op->n_operands);
  }
  int32_t n = (op->n_operands - 1) / 2;
  if (n_results != n) return mx_infer_fail(op, "expected %d results, got %d", n, n_results);
  mx_status_t st = mx_infer_need_tensors(f, op, 0, op->n_operands);
  if (st != MX_OK) return st;
  const mx_type_t *x = mx_infer_operand(f, op, 0);
  const mx_type_t *s = mx_infer_operand(f, op, n);
  const mx_type_t *u = mx_infer_operand(f, op, n + 1);
  for (int32_t i = 1; i < n; i++) {
    const mx_type_t *xi = mx_infer_operand(f, op, i);
    const mx_type_t *ui = mx_infer_operand(f, op, n + 1 + i);
    if (!mx_type_same_shape(xi, x) || !mx_type_same_shape(ui, u)) {
      return mx_infer_fail(op, "inputs (and updates) must have equal shapes: %s vs %s",
                           mx_tstr(mx_type_same_shape(xi, x) ? ui : xi).s,
                           mx_tstr(mx_type_same_shape(xi, x) ? u : x).s);
    }
  }
  for (int32_t i = 0; i < n; i++) {
    const mx_type_t *xi = mx_infer_operand(f, op, i);
    const mx_type_t *ui = mx_infer_operand(f, op, n + 1 + i);
    if (!mx_infer_same_class(xi->elem, ui->elem)) {
      return mx_infer_fail(op, "updates %s must have elements like input %s's", mx_tstr(ui).s,
                           mx_tstr(xi).s);
    }
  }
  if (!mx_elem_is_int(s->elem)) {
    return mx_infer_fail(op, "scatter_indices type %s must have integer elements", mx_tstr(s).s);
  }
  const mx_attr_t *dn = dim_numbers(op, "scatter_dimension_numbers", &st);
  if (st != MX_OK) return st;
  mx_ilist_t uwd, iwd, ib, sib, sdod;
  int64_t ivd;
  if ((st = field(op, dn, "update_window_dims", &uwd)) != MX_OK) return st;
  if ((st = field(op, dn, "inserted_window_dims", &iwd)) != MX_OK) return st;
  if ((st = field(op, dn, "input_batching_dims", &ib)) != MX_OK) return st;
  if ((st = field(op, dn, "scatter_indices_batching_dims", &sib)) != MX_OK) return st;
  if ((st = field(op, dn, "scatter_dims_to_operand_dims", &sdod)) != MX_OK) return st;
  if ((st = mx_infer_int(op, dn, "index_vector_dim", false, s->rank, &ivd)) != MX_OK) return st;
  if (ivd < 0 || ivd > s->rank) {
    return mx_infer_fail(op, "index_vector_dim %lld is out of range for scatter_indices %s",
                         (long long)ivd, mx_tstr(s).s);
  }
  if (x->rank != uwd.n + iwd.n + ib.n) {
    return mx_infer_fail(op,
                         "rank of input %s must equal the number of update_window_dims (%d) "
                         "+ inserted_window_dims (%d) + input_batching_dims (%d)",
                         mx_tstr(x).s, uwd.n, iwd.n, ib.n);
  }
  int32_t n_scatter = s->rank - (ivd < s->rank ? 1 : 0);
  if (u->rank != n_scatter + uwd.n) {
    return mx_infer_fail(op,
                         "updates %s must have rank %d (update_window_dims %d + scatter "
                         "dims of %s %d)",
                         mx_tstr(u).s, n_scatter + uwd.n, uwd.n, mx_tstr(s).s, n_scatter);
  }
  if ((st = mx_infer_check_dims(op, "update_window_dims", &uwd, u->rank, true)) != MX_OK) {
    return st;
  }
  if ((st = mx_infer_check_dims(op, "inserted_window_dims", &iwd, x->rank, true)) != MX_OK) {
    return st;
  }
  if ((st = check_disjoint(op, "inserted_window_dims", &iwd, "input_batching_dims", &ib)) !=
      MX_OK) {
    return st;
  }
  if ((st = check_batching(op, "input_batching_dims", &ib, "scatter_indices_batching_dims", &sib, x,
                           s, ivd)) != MX_OK) {
    return st;
  }
  if ((st = check_index_map(op, "scatter_dims_to_operand_dims", &sdod, &ib, x, s, ivd)) != MX_OK) {
    return st;
  }
  int32_t si = 0, xi = 0;
  for (int32_t d = 0; d < u->rank; d++) {
    if (contains(&uwd, d)) {
      while (contains(&iwd, xi) || contains(&ib, xi)) xi++;
      if (u->dims[d] > x->dims[xi]) {
        return mx_infer_fail(op, "updates %s dim %d = %lld exceeds input %s dim %d = %lld",
                             mx_tstr(u).s, d, (long long)u->dims[d], mx_tstr(x).s, xi,
                             (long long)x->dims[xi]);
      }
      xi++;
    } else {
      if (si == ivd) si++;
      if (u->dims[d] != s->dims[si]) {
        return mx_infer_fail(op,
                             "updates %s dim %d = %lld must equal scatter_indices %s dim %d "
                             "= %lld",
                             mx_tstr(u).s, d, (long long)u->dims[d], mx_tstr(s).s, si,
                             (long long)s->dims[si]);
      }
      si++;
    }
  }
  for (int32_t i = 0; i < n; i++) {
    out[i] = *mx_infer_operand(f, op, i);
    if (decl != NULL && decl[i].kind == MX_TYPE_TENSOR) out[i].elem = decl[i].elem;
  }
  return MX_OK;
}

mx_status_t mx_infer_index_op(const mx_func_t *f, const mx_op_t *op, const mx_type_t *declared,
                              int32_t n_results, mx_type_t *out, bool *handled) {
  *handled = true;
  if (op->code == MX_OP_GATHER) {
    if (n_results != 1) return mx_infer_fail(op, "expected 1 result, got %d", n_results);
    return infer_gather(f, op, out);
  }
  if (op->code == MX_OP_SCATTER) return infer_scatter(f, op, declared, n_results, out);
  *handled = false;
  return MX_OK;
}
