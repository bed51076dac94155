// Reference interpreter: ops whose semantics come from a body region: reduce, reduce_window,
// select_and_scatter, sort and map. Bodies are run per element through mx_interp_run_block in
// the order of the StableHLO reference interpreter, so non-associative bodies and argmax-style
// tie breaking give the same answers.
#include <stdlib.h>
#include <string.h>

#include "hlo/interp_compute.h"

static mx_status_t check_tensors(const mx_op_t *op, const mx_tensor_t *const *in, int32_t n_in,
                                 const mx_tensor_t *out, int32_t n_out) {
  for (int32_t i = 0; i < n_in; ++i)
    if (!in[i] || in[i]->type.kind != MX_TYPE_TENSOR)
      return mx_cp_bad(op, "operands must be tensors");
  for (int32_t i = 0; i < n_out; ++i)
    if (out[i].type.kind != MX_TYPE_TENSOR) return mx_cp_bad(op, "results must be tensors");
  return MX_OK;
}

// Fills every element of `t` with element 0 of `scalar` (converted to t's element type).
static void splat(mx_tensor_t *t, const mx_tensor_t *scalar) {
  int64_t n = mx_type_numel(&t->type);
  for (int64_t i = 0; i < n; ++i) mx_cp_copy_elem(t, i, scalar, 0);
}

// ---- reduce ----

mx_status_t mx_cp_reduce(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                         const mx_tensor_t *const *in, mx_tensor_t *out) {
  int32_t n = op->n_results;
  if (n < 1 || op->n_operands != 2 * n)
    return mx_cp_bad(op, "expects N inputs, N inits, N results");
  mx_status_t st = check_tensors(op, in, 2 * n, out, n);
  if (st != MX_OK) return st;
  int64_t dims[MX_MAX_RANK];
  int32_t nd = mx_cp_op_ints(op, "dimensions", dims, MX_MAX_RANK);
  if (nd == -2) return MX_ERR_INVALID_ARG;
  if (nd < 0) nd = 0;
  const mx_type_t *it = &in[0]->type;
  for (int32_t i = 0; i < n; ++i) {
    if (!mx_type_same_shape(&in[i]->type, it)) return mx_cp_bad(op, "inputs differ in shape");
    if (mx_type_numel(&in[n + i]->type) != 1) return mx_cp_bad(op, "init values must be scalars");
    if (out[i].type.rank != it->rank - nd) return mx_cp_bad(op, "result rank mismatch");
  }
  for (int32_t i = 0; i < nd; ++i)
    if (dims[i] < 0 || dims[i] >= it->rank || mx_cp_contains(dims, i, dims[i]))
      return mx_cp_bad(op, "invalid reduction dimensions");
  {
    int32_t r = 0;
    for (int32_t d = 0; d < it->rank; ++d) {
      if (mx_cp_contains(dims, nd, d)) continue;
      for (int32_t i = 0; i < n; ++i)
        if (out[i].type.dims[r] != it->dims[d]) return mx_cp_bad(op, "result shape mismatch");
      ++r;
    }
  }
  for (int32_t i = 0; i < n; ++i) splat(&out[i], in[n + i]);
  int64_t total = mx_type_numel(it);
  if (total == 0) return MX_OK;

  mx_cp_body_t b;
  if ((st = mx_cp_body_init(&b, ip, f, op, 0, 2 * n, n)) != MX_OK) return st;
  int64_t idx[MX_MAX_RANK] = {0}, ridx[MX_MAX_RANK];
  for (int64_t e = 0; e < total; ++e) {
    int32_t r = 0;
    for (int32_t d = 0; d < it->rank; ++d)
      if (!mx_cp_contains(dims, nd, d)) ridx[r++] = idx[d];
    int64_t ro = mx_cp_offset(ridx, out[0].type.dims, r);
    for (int32_t i = 0; i < n; ++i) {
      mx_cp_copy_elem(&b.args[i], 0, &out[i], ro);
      mx_cp_copy_elem(&b.args[n + i], 0, in[i], e);
    }
    if ((st = mx_cp_body_run(&b)) != MX_OK) break;
    for (int32_t i = 0; i < n; ++i) mx_cp_copy_elem(&out[i], ro, &b.results[i], 0);
    mx_cp_next(idx, it->dims, it->rank);
  }
  mx_cp_body_free(&b);
  return st;
}

// ---- reduce_window ----

mx_status_t mx_cp_reduce_window(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                const mx_tensor_t *const *in, mx_tensor_t *out) {
  int32_t n = op->n_results;
  if (n < 1 || op->n_operands != 2 * n)
    return mx_cp_bad(op, "expects N inputs, N inits, N results");
  mx_status_t st = check_tensors(op, in, 2 * n, out, n);
  if (st != MX_OK) return st;
  const mx_type_t *it = &in[0]->type;
  int32_t rank = it->rank;
  for (int32_t i = 0; i < n; ++i) {
    if (!mx_type_same_shape(&in[i]->type, it)) return mx_cp_bad(op, "inputs differ in shape");
    if (mx_type_numel(&in[n + i]->type) != 1) return mx_cp_bad(op, "init values must be scalars");
    if (out[i].type.rank != rank || !mx_type_same_shape(&out[i].type, &out[0].type))
      return mx_cp_bad(op, "result rank mismatch");
  }
  int64_t wdim[MX_MAX_RANK], wstr[MX_MAX_RANK], bdil[MX_MAX_RANK], wdil[MX_MAX_RANK];
  int64_t lo[MX_MAX_RANK], hi[MX_MAX_RANK];
  int32_t k = mx_cp_op_ints(op, "window_dimensions", wdim, MX_MAX_RANK);
  if (k != rank) return mx_cp_bad(op, "`window_dimensions` must have one entry per dimension");
  if ((st = mx_cp_window_attr(op, "window_strides", rank, 1, wstr)) ||
      (st = mx_cp_window_attr(op, "base_dilations", rank, 1, bdil)) ||
      (st = mx_cp_window_attr(op, "window_dilations", rank, 1, wdil)) ||
      (st = mx_cp_padding(op, "padding", rank, lo, hi)))
    return st;
  int64_t dil_in[MX_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) {
    if (wdim[d] < 0 || wstr[d] < 1 || bdil[d] < 1 || wdil[d] < 1)
      return mx_cp_bad(op, "window sizes, strides and dilations must be positive");
    dil_in[d] = it->dims[d] > 0 ? (it->dims[d] - 1) * bdil[d] + 1 : 0;
  }
  for (int32_t i = 0; i < n; ++i) splat(&out[i], in[n + i]);
  int64_t n_out = mx_type_numel(&out[0].type);
  int64_t wn = 1;
  for (int32_t d = 0; d < rank; ++d) wn *= wdim[d];
  if (n_out == 0 || wn == 0) return MX_OK;

  mx_cp_body_t b;
  if ((st = mx_cp_body_init(&b, ip, f, op, 0, 2 * n, n)) != MX_OK) return st;
  // Accumulators live in the body's argument slots between runs.
  int64_t oidx[MX_MAX_RANK] = {0};
  for (int64_t o = 0; o < n_out && st == MX_OK; ++o) {
    for (int32_t i = 0; i < n; ++i) mx_cp_copy_elem(&b.args[i], 0, in[n + i], 0);
    int64_t w[MX_MAX_RANK] = {0};
    do {
      int64_t src = 0;
      bool hit = true;
      for (int32_t d = 0; d < rank; ++d) {
        int64_t q = oidx[d] * wstr[d] + w[d] * wdil[d] - lo[d];
        if (q < 0 || q >= dil_in[d] || q % bdil[d] != 0) {
          hit = false;
          break;
        }
        src = src * it->dims[d] + q / bdil[d];
      }
      // Padding and base-dilation holes hold the init value, as in the reference.
      for (int32_t i = 0; i < n; ++i) {
        if (hit)
          mx_cp_copy_elem(&b.args[n + i], 0, in[i], src);
        else
          mx_cp_copy_elem(&b.args[n + i], 0, in[n + i], 0);
      }
      if ((st = mx_cp_body_run(&b)) != MX_OK) break;
      for (int32_t i = 0; i < n; ++i) mx_cp_copy_elem(&b.args[i], 0, &b.results[i], 0);
    } while (mx_cp_next(w, wdim, rank));
    for (int32_t i = 0; i < n; ++i) mx_cp_copy_elem(&out[i], o, &b.args[i], 0);
    mx_cp_next(oidx, out[0].type.dims, rank);
  }
  mx_cp_body_free(&b);
  return st;
}

// ---- select_and_scatter ----

mx_status_t mx_cp_select_and_scatter(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                     const mx_tensor_t *const *in, mx_tensor_t *out) {
  if (op->n_operands != 3 || op->n_results != 1)
    return mx_cp_bad(op, "expects operand, source, init_value");
  mx_status_t st = check_tensors(op, in, 3, out, 1);
  if (st != MX_OK) return st;
  const mx_tensor_t *operand = in[0], *source = in[1], *init = in[2];
  int32_t rank = operand->type.rank;
  if (source->type.rank != rank || !mx_type_same_shape(&out[0].type, &operand->type) ||
      mx_type_numel(&init->type) != 1)
    return mx_cp_bad(op, "shape mismatch");
  int64_t wdim[MX_MAX_RANK], wstr[MX_MAX_RANK], lo[MX_MAX_RANK], hi[MX_MAX_RANK];
  if ((st = mx_cp_window_attr(op, "window_dimensions", rank, 1, wdim)) ||
      (st = mx_cp_window_attr(op, "window_strides", rank, 1, wstr)) ||
      (st = mx_cp_padding(op, "padding", rank, lo, hi)))
    return st;
  splat(&out[0], init);
  int64_t n_src = mx_type_numel(&source->type);
  if (n_src == 0) return MX_OK;

  mx_cp_body_t sel, sca;
  if ((st = mx_cp_body_init(&sel, ip, f, op, 0, 2, 1)) != MX_OK) return st;
  if ((st = mx_cp_body_init(&sca, ip, f, op, 1, 2, 1)) != MX_OK) {
    mx_cp_body_free(&sel);
    return st;
  }
  const int64_t *odims = operand->type.dims;
  int64_t sidx[MX_MAX_RANK] = {0};
  for (int64_t s = 0; s < n_src && st == MX_OK; ++s) {
    int64_t selected = -1;
    int64_t w[MX_MAX_RANK] = {0}, pos[MX_MAX_RANK];
    do {
      for (int32_t d = 0; d < rank; ++d) pos[d] = sidx[d] * wstr[d] + w[d] - lo[d];
      if (!mx_cp_in_bounds(pos, odims, rank)) continue;
      int64_t cur = mx_cp_offset(pos, odims, rank);
      if (selected < 0) selected = cur;
      // select(selected, current) == false moves the selection to the current element.
      mx_cp_copy_elem(&sel.args[0], 0, operand, selected);
      mx_cp_copy_elem(&sel.args[1], 0, operand, cur);
      if ((st = mx_cp_body_run(&sel)) != MX_OK) break;
      if (!mx_cp_body_bool(&sel)) selected = cur;
    } while (mx_cp_next(w, wdim, rank));
    if (st == MX_OK && selected >= 0) {
      // Reference order: acc = scatter(scatter(init, source), result[selected]).
      mx_cp_copy_elem(&sca.args[0], 0, init, 0);
      mx_cp_copy_elem(&sca.args[1], 0, source, s);
      if ((st = mx_cp_body_run(&sca)) == MX_OK) {
        mx_cp_copy_elem(&sca.args[0], 0, &sca.results[0], 0);
        mx_cp_copy_elem(&sca.args[1], 0, &out[0], selected);
        if ((st = mx_cp_body_run(&sca)) == MX_OK)
          mx_cp_copy_elem(&out[0], selected, &sca.results[0], 0);
      }
    }
    mx_cp_next(sidx, source->type.dims, rank);
  }
  mx_cp_body_free(&sel);
  mx_cp_body_free(&sca);
  return st;
}

// ---- sort ----

typedef struct sort_ctx {
  mx_cp_body_t *b;
  const mx_tensor_t *const *in;
  int32_t n;
  int64_t base, stride;  // linear offset of the slice start and its stride along `dimension`
  mx_status_t st;
} sort_ctx_t;

// comparator(a, b): "a sorts before b".
static bool sort_less(sort_ctx_t *c, int64_t a, int64_t b) {
  if (c->st != MX_OK) return false;
  for (int32_t i = 0; i < c->n; ++i) {
    mx_cp_copy_elem(&c->b->args[2 * i], 0, c->in[i], c->base + a * c->stride);
    mx_cp_copy_elem(&c->b->args[2 * i + 1], 0, c->in[i], c->base + b * c->stride);
  }
  c->st = mx_cp_body_run(c->b);
  return c->st == MX_OK && mx_cp_body_bool(c->b);
}

// Stable bottom-up merge sort of handles (a valid order for unstable sorts too).
static void merge_sort(sort_ctx_t *c, int64_t *v, int64_t *tmp, int64_t len) {
  for (int64_t width = 1; width < len && c->st == MX_OK; width *= 2) {
    for (int64_t lo = 0; lo < len; lo += 2 * width) {
      int64_t mid = lo + width < len ? lo + width : len;
      int64_t hi = lo + 2 * width < len ? lo + 2 * width : len;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        // Take from the right run only when it is strictly less: keeps equal keys in order.
        if (sort_less(c, v[j], v[i]))
          tmp[k++] = v[j++];
        else
          tmp[k++] = v[i++];
      }
      while (i < mid) tmp[k++] = v[i++];
      while (j < hi) tmp[k++] = v[j++];
    }
    memcpy(v, tmp, (size_t)len * sizeof *v);
  }
}

mx_status_t mx_cp_sort(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                       const mx_tensor_t *const *in, mx_tensor_t *out) {
  int32_t n = op->n_operands;
  if (n < 1 || op->n_results != n) return mx_cp_bad(op, "expects N inputs and N results");
  mx_status_t st = check_tensors(op, in, n, out, n);
  if (st != MX_OK) return st;
  const mx_type_t *it = &in[0]->type;
  int32_t rank = it->rank;
  for (int32_t i = 0; i < n; ++i)
    if (!mx_type_same_shape(&in[i]->type, it) || !mx_type_same_shape(&out[i].type, it) ||
        out[i].type.elem != in[i]->type.elem)
      return mx_cp_bad(op, "inputs and results must share one shape");
  int64_t total = mx_type_numel(it);
  if (total == 0) return MX_OK;
  if (rank == 0) {
    for (int32_t i = 0; i < n; ++i) memcpy(out[i].data, in[i]->data, out[i].nbytes);
    return MX_OK;
  }
  int64_t dim = mx_cp_op_int(op, "dimension", -1);
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) return mx_cp_bad(op, "`dimension` out of range");
  int64_t len = it->dims[dim];
  int64_t stride = 1;
  for (int32_t d = rank - 1; d > dim; --d) stride *= it->dims[d];

  mx_cp_body_t b;
  if ((st = mx_cp_body_init(&b, ip, f, op, 0, 2 * n, 1)) != MX_OK) return st;
  int64_t *v = mx_cp_calloc((size_t)len, sizeof *v);
  int64_t *tmp = mx_cp_calloc((size_t)len, sizeof *tmp);
  if (!v || !tmp) {
    free(v);
    free(tmp);
    mx_cp_body_free(&b);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  // Iterate over all slices: the index space with `dimension` collapsed to size 1.
  int64_t odims[MX_MAX_RANK], idx[MX_MAX_RANK] = {0};
  for (int32_t d = 0; d < rank; ++d) odims[d] = d == dim ? 1 : it->dims[d];
  sort_ctx_t c = {&b, in, n, 0, stride, MX_OK};
  do {
    c.base = mx_cp_offset(idx, it->dims, rank);
    for (int64_t i = 0; i < len; ++i) v[i] = i;
    merge_sort(&c, v, tmp, len);
    if (c.st != MX_OK) break;
    for (int64_t r = 0; r < len; ++r)
      for (int32_t i = 0; i < n; ++i)
        mx_cp_copy_elem(&out[i], c.base + r * stride, in[i], c.base + v[r] * stride);
  } while (mx_cp_next(idx, odims, rank));
  free(v);
  free(tmp);
  mx_cp_body_free(&b);
  return c.st;
}

// ---- map ----

mx_status_t mx_cp_map(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                      const mx_tensor_t *const *in, mx_tensor_t *out) {
  int32_t n = op->n_operands;
  if (op->n_results != 1) return mx_cp_bad(op, "expects one result");
  mx_status_t st = check_tensors(op, in, n, out, 1);
  if (st != MX_OK) return st;
  for (int32_t i = 0; i < n; ++i)
    if (!mx_type_same_shape(&in[i]->type, &out[0].type)) return mx_cp_bad(op, "shape mismatch");
  int64_t total = mx_type_numel(&out[0].type);
  if (total == 0) return MX_OK;
  mx_cp_body_t b;
  if ((st = mx_cp_body_init(&b, ip, f, op, 0, n, 1)) != MX_OK) return st;
  for (int64_t e = 0; e < total; ++e) {
    for (int32_t i = 0; i < n; ++i) mx_cp_copy_elem(&b.args[i], 0, in[i], e);
    if ((st = mx_cp_body_run(&b)) != MX_OK) break;
    mx_cp_copy_elem(&out[0], e, &b.results[0], 0);
  }
  mx_cp_body_free(&b);
  return st;
}
