// Reference interpreter: gather and scatter with full StableHLO dimension numbers (including
// operand/input batching dimensions). Gather clamps start indices so the slice stays in bounds;
// scatter skips update windows that do not fit entirely inside the operand (XLA semantics; the
// spec leaves this implementation-defined).
#include <string.h>

#include "hlo/interp_compute.h"

typedef struct index_map {
  // Shared shape of the gather/scatter index computation.
  int64_t win_dims[MX_MAX_RANK];  // offset_dims / update_window_dims
  int32_t n_win;
  int64_t skip_dims[MX_MAX_RANK];  // collapsed_slice_dims / inserted_window_dims
  int32_t n_skip;
  int64_t obatch[MX_MAX_RANK];  // operand_batching_dims / input_batching_dims
  int32_t n_obatch;
  int64_t ibatch[MX_MAX_RANK];  // start_indices_batching_dims / scatter_indices_batching_dims
  int32_t n_ibatch;
  int64_t to_operand[MX_MAX_RANK];  // start_index_map / scatter_dims_to_operand_dims
  int32_t n_to_operand;
  int64_t ivd;  // index_vector_dim
} index_map_t;

static mx_status_t read_map(const mx_op_t *op, const char *attr, const char *const names[6],
                            index_map_t *m) {
  const mx_attr_t *dn = mx_op_attr(op, attr);
  if (!dn || (dn->kind != MX_ATTR_STRUCT && dn->kind != MX_ATTR_DICT))
    return mx_error_set(MX_ERR_INVALID_ARG, "%s: missing `%s`", mx_opcode_name(op->code), attr);
  mx_status_t st;
  if ((st = mx_cp_field_ints(op, dn, names[0], m->win_dims, MX_MAX_RANK, &m->n_win)) ||
      (st = mx_cp_field_ints(op, dn, names[1], m->skip_dims, MX_MAX_RANK, &m->n_skip)) ||
      (st = mx_cp_field_ints(op, dn, names[2], m->obatch, MX_MAX_RANK, &m->n_obatch)) ||
      (st = mx_cp_field_ints(op, dn, names[3], m->ibatch, MX_MAX_RANK, &m->n_ibatch)) ||
      (st = mx_cp_field_ints(op, dn, names[4], m->to_operand, MX_MAX_RANK, &m->n_to_operand)) ||
      (st = mx_cp_field_int(op, dn, names[5], &m->ivd)))
    return st;
  if (m->n_obatch != m->n_ibatch) return mx_cp_bad(op, "batching dimension lists differ in length");
  return MX_OK;
}

// Validates the map against operand rank `orank`, indices type `it` and the rank of the
// windowed tensor (gather result / scatter updates) `wrank`.
static mx_status_t check_map(const mx_op_t *op, const index_map_t *m, int32_t orank,
                             const mx_type_t *it, int32_t wrank) {
  if (m->ivd < 0 || m->ivd > it->rank) return mx_cp_bad(op, "index_vector_dim out of range");
  int64_t vec = m->ivd < it->rank ? it->dims[m->ivd] : 1;
  if (vec != m->n_to_operand) return mx_cp_bad(op, "index vector size mismatch");
  for (int32_t i = 0; i < m->n_to_operand; ++i)
    if (m->to_operand[i] < 0 || m->to_operand[i] >= orank) return mx_cp_bad(op, "bad index map");
  for (int32_t i = 0; i < m->n_skip; ++i)
    if (m->skip_dims[i] < 0 || m->skip_dims[i] >= orank) return mx_cp_bad(op, "bad window dims");
  for (int32_t i = 0; i < m->n_obatch; ++i) {
    if (m->obatch[i] < 0 || m->obatch[i] >= orank) return mx_cp_bad(op, "bad batching dims");
    if (m->ibatch[i] < 0 || m->ibatch[i] >= it->rank || m->ibatch[i] == m->ivd)
      return mx_cp_bad(op, "bad index batching dims");
  }
  int32_t n_free = 0;
  for (int32_t d = 0; d < orank; ++d)
    if (!mx_cp_contains(m->skip_dims, m->n_skip, d) && !mx_cp_contains(m->obatch, m->n_obatch, d))
      ++n_free;
  if (n_free != m->n_win) return mx_cp_bad(op, "window dimension count mismatch");
  for (int32_t i = 0; i < m->n_win; ++i)
    if (m->win_dims[i] < 0 || m->win_dims[i] >= wrank ||
        mx_cp_contains(m->win_dims, i, m->win_dims[i]))
      return mx_cp_bad(op, "bad window dims");
  for (int32_t i = 0; i < m->n_obatch; ++i)
    if (mx_cp_contains(m->skip_dims, m->n_skip, m->obatch[i]) ||
        mx_cp_contains(m->obatch, i, m->obatch[i]) || mx_cp_contains(m->ibatch, i, m->ibatch[i]))
      return mx_cp_bad(op, "bad batching dims");
  int32_t n_batch = it->rank - (m->ivd < it->rank ? 1 : 0);
  if (wrank - m->n_win != n_batch) return mx_cp_bad(op, "batch dimension count mismatch");
  return MX_OK;
}

// From a windowed-tensor index, computes the indices-tensor index (with the index vector
// dimension at 0) and the operand index before the start offset: batching + window parts.
// Returns the start index vector in `start` (length n_to_operand).
static void map_index(const index_map_t *m, const mx_tensor_t *indices, const int64_t *widx,
                      int32_t wrank, int32_t orank, int64_t *start, int64_t *base) {
  const mx_type_t *it = &indices->type;
  int64_t batch[MX_MAX_RANK], sidx[MX_MAX_RANK];
  int32_t nb = 0, nw = 0;
  int64_t win[MX_MAX_RANK];
  for (int32_t d = 0; d < wrank; ++d) {
    if (mx_cp_contains(m->win_dims, m->n_win, d))
      win[nw++] = widx[d];
    else
      batch[nb++] = widx[d];
  }
  // Indices index: batch index with the index vector dimension inserted.
  for (int32_t d = 0, b = 0; d < it->rank; ++d) sidx[d] = (d == m->ivd) ? 0 : batch[b++];
  for (int32_t k = 0; k < m->n_to_operand; ++k) {
    if (m->ivd < it->rank) sidx[m->ivd] = k;
    start[k] = mx_tensor_get_i64(indices, mx_cp_offset(sidx, it->dims, it->rank));
  }
  for (int32_t d = 0; d < orank; ++d) base[d] = 0;
  for (int32_t i = 0; i < m->n_obatch; ++i) base[m->obatch[i]] = sidx[m->ibatch[i]];
  for (int32_t d = 0, w = 0; d < orank; ++d) {
    if (mx_cp_contains(m->skip_dims, m->n_skip, d) || mx_cp_contains(m->obatch, m->n_obatch, d))
      continue;
    base[d] += win[w++];
  }
}

mx_status_t mx_cp_gather(const mx_op_t *op, const mx_tensor_t *const *in, mx_tensor_t *out) {
  // A third operand (dynamic_gather) carries the slice sizes.
  if (op->n_operands < 2 || op->n_operands > 3 || op->n_results != 1)
    return mx_cp_bad(op, "expects operand, start_indices (and slice_sizes)");
  static const char *const names[6] = {"offset_dims",           "collapsed_slice_dims",
                                       "operand_batching_dims", "start_indices_batching_dims",
                                       "start_index_map",       "index_vector_dim"};
  index_map_t m;
  mx_status_t st = read_map(op, "dimension_numbers", names, &m);
  if (st != MX_OK) return st;
  const mx_tensor_t *operand = in[0], *indices = in[1];
  int32_t orank = operand->type.rank, rrank = out[0].type.rank;
  if ((st = check_map(op, &m, orank, &indices->type, rrank)) != MX_OK) return st;
  if (!mx_elem_is_int(indices->type.elem)) return mx_cp_bad(op, "start_indices must be integers");
  int64_t ss[MX_MAX_RANK];
  if (op->n_operands == 3) {
    if (!mx_elem_is_int(in[2]->type.elem) || mx_type_numel(&in[2]->type) != orank)
      return mx_cp_bad(op, "slice_sizes must have one entry per operand dimension");
    for (int32_t d = 0; d < orank; ++d) ss[d] = mx_tensor_get_i64(in[2], d);
  } else if (mx_cp_op_ints(op, "slice_sizes", ss, MX_MAX_RANK) != orank) {
    return mx_cp_bad(op, "`slice_sizes` must have one entry per operand dimension");
  }
  for (int32_t d = 0; d < orank; ++d)
    if (ss[d] < 0 || ss[d] > operand->type.dims[d]) return mx_cp_bad(op, "slice size out of range");
  int64_t total = mx_type_numel(&out[0].type);
  int64_t ridx[MX_MAX_RANK] = {0}, start[MX_MAX_RANK], oidx[MX_MAX_RANK];
  for (int64_t r = 0; r < total; ++r) {
    map_index(&m, indices, ridx, rrank, orank, start, oidx);
    for (int32_t k = 0; k < m.n_to_operand; ++k) {
      int64_t d = m.to_operand[k];
      int64_t hi = operand->type.dims[d] - ss[d];
      int64_t s = start[k] < 0 ? 0 : (start[k] > hi ? hi : start[k]);
      oidx[d] += s;
    }
    if (!mx_cp_in_bounds(oidx, operand->type.dims, orank))
      return mx_cp_bad(op, "result shape does not match slice_sizes");
    mx_cp_copy_elem(&out[0], r, operand, mx_cp_offset(oidx, operand->type.dims, orank));
    mx_cp_next(ridx, out[0].type.dims, rrank);
  }
  return MX_OK;
}

mx_status_t mx_cp_scatter(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                          const mx_tensor_t *const *in, mx_tensor_t *out) {
  int32_t n = op->n_results;
  if (n < 1 || op->n_operands != 2 * n + 1)
    return mx_cp_bad(op, "expects N inputs, indices, N updates");
  static const char *const names[6] = {
      "update_window_dims",           "inserted_window_dims",
      "input_batching_dims",          "scatter_indices_batching_dims",
      "scatter_dims_to_operand_dims", "index_vector_dim"};
  index_map_t m;
  mx_status_t st = read_map(op, "scatter_dimension_numbers", names, &m);
  if (st != MX_OK) return st;
  const mx_tensor_t *indices = in[n];
  const mx_tensor_t *const *updates = in + n + 1;
  const mx_type_t *ot = &in[0]->type, *ut = &updates[0]->type;
  int32_t orank = ot->rank, urank = ut->rank;
  for (int32_t i = 0; i < n; ++i) {
    if (!mx_type_same_shape(&in[i]->type, ot) || !mx_type_same_shape(&out[i].type, ot) ||
        !mx_type_same_shape(&updates[i]->type, ut))
      return mx_cp_bad(op, "inputs/updates/results shape mismatch");
  }
  if ((st = check_map(op, &m, orank, &indices->type, urank)) != MX_OK) return st;
  if (!mx_elem_is_int(indices->type.elem)) return mx_cp_bad(op, "scatter_indices must be integers");
  // Window extent along each operand dimension (1 for inserted and batching dimensions).
  int64_t extent[MX_MAX_RANK];
  for (int32_t d = 0, w = 0; d < orank; ++d) {
    extent[d] = 1;
    if (mx_cp_contains(m.skip_dims, m.n_skip, d) || mx_cp_contains(m.obatch, m.n_obatch, d))
      continue;
    extent[d] = ut->dims[m.win_dims[w++]];
  }
  for (int32_t i = 0; i < n; ++i) {
    int64_t cnt = mx_type_numel(ot);
    for (int64_t e = 0; e < cnt; ++e) mx_cp_copy_elem(&out[i], e, in[i], e);
  }
  int64_t total = mx_type_numel(ut);
  if (total == 0) return MX_OK;
  mx_cp_body_t b;
  if ((st = mx_cp_body_init(&b, ip, f, op, 0, 2 * n, n)) != MX_OK) return st;
  int64_t uidx[MX_MAX_RANK] = {0}, start[MX_MAX_RANK], ridx[MX_MAX_RANK], wstart[MX_MAX_RANK];
  for (int64_t u = 0; u < total; ++u) {
    map_index(&m, indices, uidx, urank, orank, start, ridx);
    // Indices this large are out of bounds anyway; clamping keeps the sums below defined.
    for (int32_t k = 0; k < m.n_to_operand; ++k)
      start[k] = start[k] < -(INT64_C(1) << 40)  ? -(INT64_C(1) << 40)
                 : start[k] > (INT64_C(1) << 40) ? (INT64_C(1) << 40)
                                                 : start[k];
    // Window origin: start + batching index (ridx minus its window offsets).
    for (int32_t d = 0; d < orank; ++d) wstart[d] = 0;
    for (int32_t i = 0; i < m.n_obatch; ++i) wstart[m.obatch[i]] = ridx[m.obatch[i]];
    for (int32_t k = 0; k < m.n_to_operand; ++k) {
      wstart[m.to_operand[k]] += start[k];
      ridx[m.to_operand[k]] += start[k];
    }
    bool fits = true;
    for (int32_t d = 0; d < orank; ++d)
      if (wstart[d] < 0 || wstart[d] > ot->dims[d] - extent[d]) fits = false;
    if (fits && mx_cp_in_bounds(ridx, ot->dims, orank)) {
      int64_t ro = mx_cp_offset(ridx, ot->dims, orank);
      for (int32_t i = 0; i < n; ++i) {
        mx_cp_copy_elem(&b.args[i], 0, &out[i], ro);
        mx_cp_copy_elem(&b.args[n + i], 0, updates[i], u);
      }
      if ((st = mx_cp_body_run(&b)) != MX_OK) break;
      for (int32_t i = 0; i < n; ++i) mx_cp_copy_elem(&out[i], ro, &b.results[i], 0);
    }
    mx_cp_next(uidx, ut->dims, urank);
  }
  mx_cp_body_free(&b);
  return st;
}
