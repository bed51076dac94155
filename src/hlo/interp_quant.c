// Uniform quantization arithmetic for the reference interpreter (see interp_quant.h).
//
// The spec writes quantize/dequantize as a chain of StableHLO ops on tensors of the expressed
// type, so every intermediate is rounded to that type. We compute each step in double and round
// it to the expressed type: for +, -, *, / on a type of at most 25 significand bits (f32 and
// narrower) rounding twice this way gives the correctly rounded result, the same as computing
// in the type; f64 is computed directly.
#include "hlo/interp_quant.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Rounds v to the nearest value of float type et.
static double to_type(mx_elem_type_t et, double v) {
  return mx_float_decode(et, mx_float_encode(et, v));
}

static void int_range(mx_elem_type_t et, int64_t *lo, int64_t *hi) {
  int bits = mx_elem_bits(et);
  if (mx_elem_is_unsigned(et)) {
    *lo = 0;
    *hi = bits >= 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << bits) - 1);
  } else {
    *lo = bits >= 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
    *hi = bits >= 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
  }
}

void mx_qparams_default_range(mx_qparams_t *qp) {
  int_range(qp->storage, &qp->storage_min, &qp->storage_max);
}

mx_status_t mx_qparams_check(const mx_qparams_t *qp, const mx_type_t *shape) {
  if (!qp) return mx_error_set(MX_ERR_INVALID_ARG, "no quantization parameters");
  if (!mx_elem_is_int(qp->storage) || mx_elem_bits(qp->storage) > 32)
    return mx_error_set(MX_ERR_RUNTIME, "quantized storage type must be an integer of <= 32 bits");
  if (!mx_elem_is_float(qp->expressed))
    return mx_error_set(MX_ERR_RUNTIME, "quantized expressed type must be a float type");
  int64_t lo, hi;
  int_range(qp->storage, &lo, &hi);
  if (qp->storage_min < lo || qp->storage_max > hi || qp->storage_min >= qp->storage_max)
    return mx_error_set(MX_ERR_RUNTIME, "quantization storage range [%lld, %lld] is invalid",
                        (long long)qp->storage_min, (long long)qp->storage_max);
  if (qp->n < 1 || !qp->scales || !qp->zero_points)
    return mx_error_set(MX_ERR_RUNTIME, "quantization needs scales and zero points");
  if (qp->axis < 0) {
    if (qp->n != 1)
      return mx_error_set(MX_ERR_RUNTIME, "per-tensor quantization has exactly one scale");
  } else {
    if (!shape || shape->kind != MX_TYPE_TENSOR || qp->axis >= shape->rank)
      return mx_error_set(MX_ERR_RUNTIME, "quantization dimension %d out of range", (int)qp->axis);
    if (shape->dims[qp->axis] != qp->n)
      return mx_error_set(MX_ERR_RUNTIME,
                          "per-axis quantization has %d scales for dimension size %lld", (int)qp->n,
                          (long long)shape->dims[qp->axis]);
  }
  for (int32_t k = 0; k < qp->n; k++) {
    if (!(qp->scales[k] > 0) || !isfinite(qp->scales[k]))
      return mx_error_set(MX_ERR_RUNTIME, "quantization scale %g is not positive and finite",
                          qp->scales[k]);
    if (qp->zero_points[k] < qp->storage_min || qp->zero_points[k] > qp->storage_max)
      return mx_error_set(MX_ERR_RUNTIME, "zero point %lld outside the storage range",
                          (long long)qp->zero_points[k]);
  }
  return MX_OK;
}

// Stride (in elements) of the quantization axis, for mapping a linear index to its slice.
static int64_t axis_stride(const mx_type_t *t, int32_t axis) {
  int64_t s = 1;
  for (int32_t i = axis + 1; i < t->rank; i++) s *= t->dims[i];
  return s;
}

static int32_t param_index(const mx_type_t *t, const mx_qparams_t *qp, int64_t stride, int64_t i) {
  if (qp->axis < 0) return 0;
  return (int32_t)((i / stride) % t->dims[qp->axis]);
}

static mx_status_t check_pair(const mx_tensor_t *a, const mx_tensor_t *b) {
  if (a->type.kind != MX_TYPE_TENSOR || b->type.kind != MX_TYPE_TENSOR ||
      !mx_type_same_shape(&a->type, &b->type))
    return mx_error_set(MX_ERR_RUNTIME, "quantize/dequantize: operand and result shapes differ");
  if ((mx_type_numel(&a->type) > 0 && (!a->data || !b->data)) ||
      a->nbytes < mx_type_nbytes(&a->type) || b->nbytes < mx_type_nbytes(&b->type))
    return mx_error_set(MX_ERR_RUNTIME, "quantize/dequantize: tensor storage too small");
  return MX_OK;
}

mx_status_t mx_interp_dequantize(const mx_tensor_t *q, const mx_qparams_t *qp, mx_tensor_t *f) {
  mx_status_t st = mx_qparams_check(qp, &q->type);
  if (!st) st = check_pair(q, f);
  if (st) return st;
  if (q->type.elem != qp->storage || !mx_elem_is_float(f->type.elem))
    return mx_error_set(MX_ERR_RUNTIME, "dequantize: expected %s storage and a float result",
                        mx_elem_name(qp->storage));
  mx_elem_type_t et = qp->expressed;
  int64_t n = mx_type_numel(&q->type);
  int64_t stride = qp->axis >= 0 ? axis_stride(&q->type, qp->axis) : 1;
  for (int64_t i = 0; i < n; i++) {
    int32_t k = param_index(&q->type, qp, stride, i);
    // Storage is at most 32 bits: the difference is exact in int64 and in double.
    int64_t d = mx_tensor_get_i64(q, i) - qp->zero_points[k];
    double v = to_type(et, (double)d);
    v = to_type(et, v * to_type(et, qp->scales[k]));
    mx_tensor_set_f64(f, i, v);
  }
  return MX_OK;
}

mx_status_t mx_interp_quantize(const mx_tensor_t *f, const mx_qparams_t *qp, mx_tensor_t *q) {
  mx_status_t st = mx_qparams_check(qp, &q->type);
  if (!st) st = check_pair(f, q);
  if (st) return st;
  if (q->type.elem != qp->storage || !mx_elem_is_float(f->type.elem))
    return mx_error_set(MX_ERR_RUNTIME, "quantize: expected a float operand and %s storage",
                        mx_elem_name(qp->storage));
  mx_elem_type_t et = qp->expressed;
  double lo = to_type(et, (double)qp->storage_min);
  double hi = to_type(et, (double)qp->storage_max);
  int64_t n = mx_type_numel(&q->type);
  int64_t stride = qp->axis >= 0 ? axis_stride(&q->type, qp->axis) : 1;
  for (int64_t i = 0; i < n; i++) {
    int32_t k = param_index(&q->type, qp, stride, i);
    double x = to_type(et, mx_tensor_get_f64(f, i));
    double v = to_type(et, x / to_type(et, qp->scales[k]));
    v = to_type(et, v + to_type(et, (double)qp->zero_points[k]));
    if (isnan(v)) {
      mx_tensor_set_i64(q, i, 0);
      continue;
    }
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    v = nearbyint(v);  // default rounding mode: to nearest, ties to even
    // Rounding the expressed-type bounds can leave the storage range (e.g. i32 max in f32).
    int64_t iv;
    if (v <= (double)qp->storage_min)
      iv = qp->storage_min;
    else if (v >= (double)qp->storage_max)
      iv = qp->storage_max;
    else
      iv = (int64_t)v;
    mx_tensor_set_i64(q, i, iv);
  }
  return MX_OK;
}

// ---------------------------------------------------------------------------------------------
// Quantized tensors in the interpreter
// ---------------------------------------------------------------------------------------------

bool mx_interp_type_qparams(const mx_type_t *t, mx_qparams_t *qp) {
  if (t->kind != MX_TYPE_TENSOR || !t->quant) return false;
  qp->storage = t->elem;
  qp->expressed = t->quant->expressed;
  qp->storage_min = t->quant->storage_min;
  qp->storage_max = t->quant->storage_max;
  qp->axis = t->quant->axis;
  qp->n = t->quant->n;
  qp->scales = t->quant->scales;
  qp->zero_points = t->quant->zero_points;
  return true;
}

bool mx_interp_same_quant(const mx_type_t *a, const mx_type_t *b) {
  mx_qparams_t qa, qb;
  memset(&qa, 0, sizeof qa);
  memset(&qb, 0, sizeof qb);
  bool ha = mx_interp_type_qparams(a, &qa), hb = mx_interp_type_qparams(b, &qb);
  if (ha != hb) return false;
  if (!ha) return true;
  if (qa.storage != qb.storage || qa.expressed != qb.expressed ||
      qa.storage_min != qb.storage_min || qa.storage_max != qb.storage_max || qa.axis != qb.axis ||
      qa.n != qb.n)
    return false;
  for (int32_t k = 0; k < qa.n; k++)
    if (qa.scales[k] != qb.scales[k] || qa.zero_points[k] != qb.zero_points[k]) return false;
  return true;
}

bool mx_interp_op_is_quantized(const mx_op_t *op, const mx_tensor_t *const *in,
                               const mx_tensor_t *out) {
  mx_qparams_t qp;
  memset(&qp, 0, sizeof qp);
  for (int32_t i = 0; i < op->n_operands; i++)
    if (mx_interp_type_qparams(&in[i]->type, &qp)) return true;
  for (int32_t i = 0; i < op->n_results; i++)
    if (mx_interp_type_qparams(&out[i].type, &qp)) return true;
  return false;
}

static const char *op_label(const mx_op_t *op) {
  return op->name ? op->name : mx_opcode_name(op->code);
}

// Allocates the expressed-type counterpart of quantized tensor type t.
static mx_status_t alloc_expressed(const mx_type_t *t, const mx_qparams_t *qp, mx_tensor_t *out) {
  mx_type_t ft = mx_type_tensor(qp->expressed, t->rank, t->dims);
  mx_status_t st = mx_tensor_alloc(out, &ft);
  if (st) memset(out, 0, sizeof *out);
  return st;
}

mx_status_t mx_interp_uniform_quantize(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                       const mx_tensor_t *const *in, mx_tensor_t *out) {
  (void)ip;
  (void)f;
  if (op->n_operands != 1 || op->n_results != 1)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs one operand and one result", op_label(op));
  mx_qparams_t qr, qi;
  memset(&qr, 0, sizeof qr);
  memset(&qi, 0, sizeof qi);
  if (!mx_interp_type_qparams(&out[0].type, &qr))
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s needs a quantized result type",
                        op_label(op));
  if (!mx_interp_type_qparams(&in[0]->type, &qi)) return mx_interp_quantize(in[0], &qr, &out[0]);
  // Requantize: through the operand's expressed type.
  mx_tensor_t tmp;
  mx_status_t st = alloc_expressed(&in[0]->type, &qi, &tmp);
  if (!st) st = mx_interp_dequantize(in[0], &qi, &tmp);
  if (!st) st = mx_interp_quantize(&tmp, &qr, &out[0]);
  mx_tensor_free(&tmp);
  return st;
}

mx_status_t mx_interp_uniform_dequantize(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                         const mx_tensor_t *const *in, mx_tensor_t *out) {
  (void)ip;
  (void)f;
  if (op->n_operands != 1 || op->n_results != 1)
    return mx_error_set(MX_ERR_RUNTIME, "%s needs one operand and one result", op_label(op));
  mx_qparams_t qi;
  memset(&qi, 0, sizeof qi);
  if (!mx_interp_type_qparams(&in[0]->type, &qi))
    return mx_error_set(MX_ERR_UNSUPPORTED, "unsupported: %s needs a quantized operand",
                        op_label(op));
  return mx_interp_dequantize(in[0], &qi, &out[0]);
}

mx_status_t mx_interp_dequantize_op_quantize(mx_interp_t *ip, const mx_func_t *f, const mx_op_t *op,
                                             mx_interp_kernel_fn fn, const mx_tensor_t *const *in,
                                             mx_tensor_t *out) {
  int32_t n_in = op->n_operands, n_out = op->n_results;
  mx_tensor_t *fin = calloc((size_t)(n_in > 0 ? n_in : 1), sizeof *fin);
  const mx_tensor_t **pin = calloc((size_t)(n_in > 0 ? n_in : 1), sizeof *pin);
  mx_tensor_t *fout = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof *fout);
  bool *qout = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof *qout);
  mx_status_t st = MX_OK;
  if (!fin || !pin || !fout || !qout) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_qparams_t qp;
  memset(&qp, 0, sizeof qp);
  for (int32_t i = 0; i < n_in && !st; i++) {
    pin[i] = in[i];
    if (!mx_interp_type_qparams(&in[i]->type, &qp)) continue;
    st = alloc_expressed(&in[i]->type, &qp, &fin[i]);
    if (!st) st = mx_interp_dequantize(in[i], &qp, &fin[i]);
    pin[i] = &fin[i];
  }
  // Kernel results: a float stand-in for each quantized result, the result itself otherwise.
  for (int32_t i = 0; i < n_out && !st; i++) {
    if (mx_interp_type_qparams(&out[i].type, &qp)) {
      qout[i] = true;
      st = alloc_expressed(&out[i].type, &qp, &fout[i]);
    } else {
      fout[i] = out[i];
    }
  }
  if (!st) st = fn(ip, f, op, pin, fout);
  for (int32_t i = 0; i < n_out && !st; i++) {
    if (!qout[i]) continue;
    if (mx_interp_type_qparams(&out[i].type, &qp)) st = mx_interp_quantize(&fout[i], &qp, &out[i]);
  }
  if (fin)
    for (int32_t i = 0; i < n_in; i++) mx_tensor_free(&fin[i]);
  if (fout && qout)
    for (int32_t i = 0; i < n_out; i++)
      if (qout[i]) mx_tensor_free(&fout[i]);
  free(fin);
  free(pin);
  free(fout);
  free(qout);
  return st;
}
