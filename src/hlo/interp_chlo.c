// CHLO ops run directly by the reference interpreter: chlo.mulhi and chlo.scan.
// (chlo.ragged_dot lives with the other contractions in interp_compute_dot.c.)
#include "hlo/interp_chlo.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *op_label(const mx_op_t *op) {
  return op->name ? op->name : mx_opcode_name(op->code);
}

// ---------------------------------------------------------------------------------------------
// chlo.mulhi
// ---------------------------------------------------------------------------------------------

// Schoolbook 64x64 -> 128 multiply on 32-bit limbs (no __int128 in strict C17).
uint64_t mx_interp_mulhi_u64(uint64_t a, uint64_t b) {
  uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
  uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
  uint64_t ll = a_lo * b_lo;
  uint64_t lh = a_lo * b_hi;
  uint64_t hl = a_hi * b_lo;
  uint64_t hh = a_hi * b_hi;
  // Middle column: carries out of bit 63 of the low half.
  uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
  return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

// Signed high half from the unsigned one: reading a negative operand as unsigned adds 2^64
// times the other operand to the product, which the corrections take back out (mod 2^64).
int64_t mx_interp_mulhi_i64(int64_t a, int64_t b) {
  uint64_t hi = mx_interp_mulhi_u64((uint64_t)a, (uint64_t)b);
  if (a < 0) hi -= (uint64_t)b;
  if (b < 0) hi -= (uint64_t)a;
  return (int64_t)hi;
}

mx_status_t mx_interp_chlo_mulhi(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                 const mx_tensor_t *const *in, mx_tensor_t *out) {
  (void)ip;
  (void)f;
  if (op->n_operands != 2 || op->n_results != 1)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs two operands and one result", op_label(op));
  mx_elem_type_t et = out[0].type.elem;
  if (!mx_elem_is_int(et))
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s on %s elements", op_label(op),
                        mx_elem_name(et));
  for (int i = 0; i < 2; i++) {
    if (!mx_type_equal(&in[i]->type, &out[0].type) || !in[i]->data ||
        in[i]->nbytes < mx_type_nbytes(&in[i]->type)) {
      char b1[96], b2[96];
      return mx_error_set(MX_ERR_RUNTIME, "%s: operand %d has type %s, result type is %s",
                          op_label(op), i, mx_type_str(&in[i]->type, b1, sizeof b1),
                          mx_type_str(&out[0].type, b2, sizeof b2));
    }
  }
  int bits = mx_elem_bits(et);
  bool is_signed = mx_elem_is_signed(et);
  int64_t n = mx_type_numel(&out[0].type);
  for (int64_t i = 0; i < n; i++) {
    int64_t r;
    if (bits == 64) {
      r = is_signed ? mx_interp_mulhi_i64(mx_tensor_get_i64(in[0], i), mx_tensor_get_i64(in[1], i))
                    : (int64_t)mx_interp_mulhi_u64(mx_tensor_get_u64(in[0], i),
                                                   mx_tensor_get_u64(in[1], i));
    } else if (is_signed) {
      // |a*b| <= 2^62 for 32-bit operands: exact in int64; >> of a negative value is
      // implementation-defined in C, so shift the magnitude as unsigned and fix the sign.
      int64_t p = mx_tensor_get_i64(in[0], i) * mx_tensor_get_i64(in[1], i);
      uint64_t u = (uint64_t)p >> bits;
      if (p < 0) u |= ~(UINT64_MAX >> bits);  // arithmetic shift: replicate the sign bit
      r = (int64_t)u;
    } else {
      r = (int64_t)((mx_tensor_get_u64(in[0], i) * mx_tensor_get_u64(in[1], i)) >> bits);
    }
    mx_tensor_set_i64(&out[0], i, r);  // wraps to the element width
  }
  return MX_OK;
}

// ---------------------------------------------------------------------------------------------
// chlo.scan
// ---------------------------------------------------------------------------------------------

// Splits the operands into inputs and inits (and results into outputs and carries). The generic
// form says it with operandSegmentSizes; without it (a producer that drops it) the split still
// follows from the body: an input's block argument is a slice, one rank lower than the operand,
// while a carry's block argument has exactly the init's type, and inputs come first.
static mx_status_t scan_segments(const mx_func_t *f, const mx_op_t *op, int32_t *n_in,
                                 int32_t *n_init, int32_t *n_outs) {
  const int64_t *seg = NULL;
  const mx_attr_t *sa = mx_op_attr(op, "operandSegmentSizes");
  if (!sa) sa = mx_op_attr(op, "operand_segment_sizes");
  if (sa) {
    int32_t k = mx_attr_get_i64s(sa, &seg);
    if (k != 2 || seg[0] < 0 || seg[1] < 0 || seg[0] + seg[1] != op->n_operands)
      return mx_error_set(MX_ERR_RUNTIME,
                          "%s: `operandSegmentSizes` must be [#inputs, #inits] adding up to its "
                          "%d operands",
                          op_label(op), (int)op->n_operands);
    *n_in = (int32_t)seg[0];
  } else {
    const mx_block_t *b = op->regions[0];
    if (b->n_args != op->n_operands)
      return mx_error_set(MX_ERR_RUNTIME, "%s: body has %d arguments for %d operands", op_label(op),
                          (int)b->n_args, (int)op->n_operands);
    int32_t n = 0;
    while (n < op->n_operands) {
      const mx_type_t *at = mx_value_type(f, b->args[n]);
      const mx_type_t *ot = mx_value_type(f, op->operands[n]);
      if (!at || !ot || mx_type_equal(at, ot)) break;
      n++;
    }
    *n_in = n;
  }
  *n_init = op->n_operands - *n_in;
  *n_outs = op->n_results - *n_init;
  if (*n_outs < 0)
    return mx_error_set(MX_ERR_RUNTIME, "%s has fewer results than carries", op_label(op));
  const int64_t *rs = NULL;
  const mx_attr_t *ra = mx_op_attr(op, "resultSegmentSizes");
  if (!ra) ra = mx_op_attr(op, "result_segment_sizes");
  int32_t kr = mx_attr_get_i64s(ra, &rs);
  if (kr >= 0 && (kr != 2 || rs[0] != *n_outs || rs[1] != *n_init))
    return mx_error_set(MX_ERR_RUNTIME, "%s: `resultSegmentSizes` disagrees with its results",
                        op_label(op));
  return MX_OK;
}

// `t` without dimension d.
static mx_type_t drop_dim(const mx_type_t *t, int32_t d) {
  mx_type_t r = *t;
  r.rank = t->rank - 1;
  for (int32_t i = d; i < r.rank; i++) r.dims[i] = t->dims[i + 1];
  return r;
}

// Bytes per row after dimension d, and the number of rows before it.
static void split_at(const mx_type_t *t, int32_t d, int64_t *outer, size_t *inner) {
  int64_t o = 1, in = 1;
  for (int32_t i = 0; i < d; i++) o *= t->dims[i];
  for (int32_t i = d + 1; i < t->rank; i++) in *= t->dims[i];
  *outer = o;
  *inner = (size_t)in * mx_elem_size(t->elem);
}

// Copies position p along dimension d of `full` into `part`.
static void slice_get(const mx_tensor_t *full, int32_t d, int64_t p, mx_tensor_t *part) {
  int64_t outer;
  size_t inner;
  split_at(&full->type, d, &outer, &inner);
  int64_t n = full->type.dims[d];
  if (inner == 0) return;
  for (int64_t o = 0; o < outer; o++)
    memcpy(part->data + (size_t)o * inner, full->data + (size_t)(o * n + p) * inner, inner);
}

// Copies `part` into position p along dimension d of `full`.
static void slice_put(mx_tensor_t *full, int32_t d, int64_t p, const mx_tensor_t *part) {
  int64_t outer;
  size_t inner;
  split_at(&full->type, d, &outer, &inner);
  int64_t n = full->type.dims[d];
  if (inner == 0) return;
  for (int64_t o = 0; o < outer; o++)
    memcpy(full->data + (size_t)(o * n + p) * inner, part->data + (size_t)o * inner, inner);
}

static bool attr_true(const mx_attr_t *a) {
  if (!a) return false;
  if (a->kind == MX_ATTR_UNIT) return true;
  return (a->kind == MX_ATTR_BOOL || a->kind == MX_ATTR_INT) && a->i != 0;
}

static void free_all(mx_tensor_t *v, int32_t n) {
  if (!v) return;
  for (int32_t i = 0; i < n; i++) {
    mx_tensor_free(&v[i]);
    memset(&v[i], 0, sizeof v[i]);
  }
}

mx_status_t mx_interp_chlo_scan(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                const mx_tensor_t *const *in, mx_tensor_t *out) {
  if (op->n_regions != 1 || !op->regions || !op->regions[0])
    return mx_error_set(MX_ERR_RUNTIME, "%s needs one body region", op_label(op));
  int32_t n_in = 0, n_init = 0, n_outs = 0;
  mx_status_t st = scan_segments(f, op, &n_in, &n_init, &n_outs);
  if (st) return st;
  const mx_attr_t *da = mx_op_attr(op, "dimension");
  if (!da || da->kind != MX_ATTR_INT || da->i < 0 || da->i >= MX_MAX_RANK)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs a non-negative integer `dimension`",
                        op_label(op));
  int32_t d = (int32_t)da->i;
  bool reverse = attr_true(mx_op_attr(op, "is_reverse"));

  if (n_in == 0 && n_outs == 0)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs at least one input or output", op_label(op));
  // Scan length: from the inputs, else scan_dim_size, else the outputs.
  int64_t len = -1;
  const mx_attr_t *sa = mx_op_attr(op, "scan_dim_size");
  if (sa && sa->kind == MX_ATTR_INT) len = sa->i;
  for (int32_t i = 0; i < n_in; i++) {
    const mx_type_t *t = &in[i]->type;
    if (t->kind != MX_TYPE_TENSOR || d >= t->rank || !in[i]->data)
      return mx_error_set(MX_ERR_RUNTIME, "%s: scan dimension %d out of range for input %d",
                          op_label(op), (int)d, (int)i);
    if (len >= 0 && t->dims[d] != len)
      return mx_error_set(MX_ERR_RUNTIME, "%s: inputs disagree on the scan dimension size",
                          op_label(op));
    len = t->dims[d];
  }
  for (int32_t i = 0; i < n_outs; i++) {
    const mx_type_t *t = &out[i].type;
    if (t->kind != MX_TYPE_TENSOR || d >= t->rank)
      return mx_error_set(MX_ERR_RUNTIME, "%s: scan dimension %d out of range for output %d",
                          op_label(op), (int)d, (int)i);
    if (len >= 0 && t->dims[d] != len)
      return mx_error_set(MX_ERR_RUNTIME,
                          "%s: output %d does not have %" PRId64
                          " positions along the scan dimension",
                          op_label(op), (int)i, len);
    len = t->dims[d];
  }
  if (len < 0) len = 0;
  for (int32_t j = 0; j < n_init; j++)
    if (!mx_type_equal(&in[n_in + j]->type, &out[n_outs + j].type))
      return mx_error_set(MX_ERR_RUNTIME, "%s: init %d and carry result %d types differ",
                          op_label(op), (int)j, (int)j);

  int32_t n_args = n_in + n_init;
  mx_tensor_t *args = calloc((size_t)(n_args > 0 ? n_args : 1), sizeof *args);
  mx_tensor_t *res = calloc((size_t)(op->n_results > 0 ? op->n_results : 1), sizeof *res);
  if (!args || !res) {
    free(args);
    free(res);
    return mx_error_set(MX_ERR_NOMEM, "out of memory in %s", op_label(op));
  }
  // args = [input slices..., carries...]; the slices are reused across iterations.
  for (int32_t i = 0; i < n_in && !st; i++) {
    mx_type_t st_type = drop_dim(&in[i]->type, d);
    st = mx_tensor_alloc(&args[i], &st_type);
  }
  for (int32_t j = 0; j < n_init && !st; j++) st = mx_tensor_clone(&args[n_in + j], in[n_in + j]);

  for (int64_t k = 0; k < len && !st; k++) {
    int64_t p = reverse ? len - 1 - k : k;
    for (int32_t i = 0; i < n_in; i++) slice_get(in[i], d, p, &args[i]);
    st = mx_interp_run_block(ip, f, op->regions[0], args, n_args, res, op->n_results);
    if (st) break;
    for (int32_t i = 0; i < n_outs && !st; i++) {
      mx_type_t want = drop_dim(&out[i].type, d);
      if (!mx_type_equal(&res[i].type, &want)) {
        char b1[96], b2[96];
        st = mx_error_set(MX_ERR_RUNTIME, "%s: body output %d has type %s, expected %s",
                          op_label(op), (int)i, mx_type_str(&res[i].type, b1, sizeof b1),
                          mx_type_str(&want, b2, sizeof b2));
        break;
      }
      slice_put(&out[i], d, p, &res[i]);
    }
    for (int32_t j = 0; j < n_init && !st; j++) {
      if (!mx_type_equal(&res[n_outs + j].type, &args[n_in + j].type)) {
        char b1[96], b2[96];
        st = mx_error_set(MX_ERR_RUNTIME, "%s: body carry %d has type %s, expected %s",
                          op_label(op), (int)j, mx_type_str(&res[n_outs + j].type, b1, sizeof b1),
                          mx_type_str(&args[n_in + j].type, b2, sizeof b2));
        break;
      }
      // The new carry replaces the old one (ownership moves).
      mx_tensor_free(&args[n_in + j]);
      args[n_in + j] = res[n_outs + j];
      memset(&res[n_outs + j], 0, sizeof res[n_outs + j]);
    }
    free_all(res, op->n_results);
  }
  if (!st) {
    for (int32_t j = 0; j < n_init; j++) {
      mx_tensor_free(&out[n_outs + j]);
      out[n_outs + j] = args[n_in + j];
      memset(&args[n_in + j], 0, sizeof args[n_in + j]);
    }
  }
  free_all(res, op->n_results);
  free_all(args, n_args);
  free(res);
  free(args);
  return st;
}
