// Reference interpreter: fft (FFT/IFFT/RFFT/IRFFT over the trailing fft_length dimensions) and
// triangular_solve. Both compute in complex double; results are rounded once on store.
// The DFT is the direct O(n^2) sum with twiddles reduced modulo n (slow, but accurate and
// obviously correct, which is what an oracle needs).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/interp_compute.h"

typedef struct cpx {
  double re, im;
} cpx_t;

static const double kTwoPi = 6.283185307179586476925286766559;

// In-place 1-D DFT along axis `ax` of a complex buffer with shape dims[0..rank).
// inverse: uses e^{+i...} and scales by 1/n.
static mx_status_t dft_axis(cpx_t *buf, const int64_t *dims, int32_t rank, int32_t ax,
                            bool inverse) {
  int64_t n = dims[ax];
  if (n <= 1) return MX_OK;
  int64_t stride = 1, total = 1;
  for (int32_t d = rank - 1; d > ax; --d) stride *= dims[d];
  for (int32_t d = 0; d < rank; ++d) total *= dims[d];
  cpx_t *tw = malloc((size_t)n * sizeof *tw);
  cpx_t *line = malloc((size_t)n * sizeof *line);
  if (!tw || !line) {
    free(tw);
    free(line);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t m = 0; m < n; ++m) {
    double ang = kTwoPi * (double)m / (double)n;
    tw[m].re = cos(ang);
    tw[m].im = sign * sin(ang);
  }
  int64_t outer = total / (n * stride);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t s = 0; s < stride; ++s) {
      cpx_t *base = buf + o * n * stride + s;
      for (int64_t k = 0; k < n; ++k) {
        double re = 0.0, im = 0.0;
        for (int64_t j = 0; j < n; ++j) {
          cpx_t x = base[j * stride], w = tw[(j * k) % n];
          re += x.re * w.re - x.im * w.im;
          im += x.re * w.im + x.im * w.re;
        }
        line[k].re = inverse ? re / (double)n : re;
        line[k].im = inverse ? im / (double)n : im;
      }
      for (int64_t k = 0; k < n; ++k) base[k * stride] = line[k];
    }
  }
  free(tw);
  free(line);
  return MX_OK;
}

mx_status_t mx_cp_fft(const mx_op_t *op, const mx_tensor_t *const *in, mx_tensor_t *out) {
  if (op->n_operands != 1 || op->n_results != 1) return mx_cp_bad(op, "expects 1 operand");
  const mx_tensor_t *x = in[0];
  const mx_type_t *xt = &x->type, *ot = &out[0].type;
  const mx_attr_t *ta = mx_op_attr(op, "fft_type");
  if (!ta || !ta->s) return mx_cp_bad(op, "missing `fft_type`");
  int kind;
  if (!strcmp(ta->s, "FFT"))
    kind = 0;
  else if (!strcmp(ta->s, "IFFT"))
    kind = 1;
  else if (!strcmp(ta->s, "RFFT"))
    kind = 2;
  else if (!strcmp(ta->s, "IRFFT"))
    kind = 3;
  else
    return mx_cp_unsupported(op, "unknown fft_type");
  int64_t len[MX_MAX_RANK];
  int32_t L = mx_cp_op_ints(op, "fft_length", len, MX_MAX_RANK);
  int32_t rank = xt->rank;
  if (L < 1 || L > rank || ot->rank != rank) return mx_cp_bad(op, "bad `fft_length`");
  // Working shape: the full complex spectrum/signal shape (result shape, or the real side).
  int64_t wd[MX_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) {
    wd[d] = ot->dims[d];
    if (d < rank - 1 && xt->dims[d] != ot->dims[d]) return mx_cp_bad(op, "shape mismatch");
  }
  bool real_in = kind == 2, real_out = kind == 3;
  if (real_in == mx_elem_is_complex(xt->elem) || real_out == mx_elem_is_complex(ot->elem))
    return mx_cp_bad(op, "operand/result element types do not match fft_type");
  int64_t nlast = len[L - 1];
  if (kind == 2) {
    wd[rank - 1] = xt->dims[rank - 1];
    if (xt->dims[rank - 1] != nlast || ot->dims[rank - 1] != (nlast == 0 ? 0 : nlast / 2 + 1))
      return mx_cp_bad(op, "RFFT shapes do not match fft_length");
  } else if (kind == 3) {
    if (ot->dims[rank - 1] != nlast || xt->dims[rank - 1] != (nlast == 0 ? 0 : nlast / 2 + 1))
      return mx_cp_bad(op, "IRFFT shapes do not match fft_length");
  } else if (xt->dims[rank - 1] != ot->dims[rank - 1]) {
    return mx_cp_bad(op, "shape mismatch");
  }
  for (int32_t i = 0; i < L; ++i)
    if (wd[rank - L + i] != len[i]) return mx_cp_bad(op, "fft_length does not match the shape");
  int64_t total = 1;
  for (int32_t d = 0; d < rank; ++d) total *= wd[d];
  if (total == 0) return MX_OK;
  cpx_t *buf = mx_cp_calloc((size_t)total, sizeof *buf);
  if (!buf) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  mx_status_t st = MX_OK;
  if (kind != 3) {
    for (int64_t i = 0; i < total; ++i) mx_cp_get_c(x, i, &buf[i].re, &buf[i].im);
    // Forward transforms start at the last axis; inverse ones at the first fft axis.
    for (int32_t i = 0; i < L && st == MX_OK; ++i) {
      int32_t ax = kind == 1 ? rank - L + i : rank - 1 - i;
      st = dft_axis(buf, wd, rank, ax, kind == 1);
    }
    if (st == MX_OK) {
      if (kind == 2) {
        int64_t h = ot->dims[rank - 1], outer = total / nlast;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t k = 0; k < h; ++k)
            mx_cp_set_c(&out[0], o * h + k, buf[o * nlast + k].re, buf[o * nlast + k].im);
      } else {
        for (int64_t i = 0; i < total; ++i) mx_cp_set_c(&out[0], i, buf[i].re, buf[i].im);
      }
    }
  } else {
    // IRFFT: inverse transforms over the leading fft axes on the half spectrum, then rebuild
    // each last-axis line with Hermitian symmetry and take the real part of its inverse.
    int64_t h = xt->dims[rank - 1], outer = total / nlast;
    int64_t hd[MX_MAX_RANK];
    memcpy(hd, wd, sizeof hd);
    hd[rank - 1] = h;
    cpx_t *half = mx_cp_calloc((size_t)(outer * h), sizeof *half);
    if (!half) {
      free(buf);
      return mx_error_set(MX_ERR_NOMEM, "out of memory");
    }
    for (int64_t i = 0; i < outer * h; ++i) mx_cp_get_c(x, i, &half[i].re, &half[i].im);
    for (int32_t i = 0; i < L - 1 && st == MX_OK; ++i)
      st = dft_axis(half, hd, rank, rank - L + i, true);
    for (int64_t o = 0; o < outer && st == MX_OK; ++o) {
      for (int64_t k = 0; k < nlast; ++k) {
        if (k < h) {
          buf[o * nlast + k] = half[o * h + k];
        } else {
          cpx_t c = half[o * h + (nlast - k)];
          buf[o * nlast + k].re = c.re;
          buf[o * nlast + k].im = -c.im;
        }
      }
    }
    free(half);
    if (st == MX_OK) st = dft_axis(buf, wd, rank, rank - 1, true);
    if (st == MX_OK)
      for (int64_t i = 0; i < total; ++i) mx_tensor_set_f64(&out[0], i, buf[i].re);
  }
  free(buf);
  return st;
}

// ---- triangular_solve ----

static cpx_t cdiv(cpx_t a, cpx_t b) {
  cpx_t r;
  if (b.im == 0.0) {
    r.re = a.re / b.re;
    r.im = a.im / b.re;
    return r;
  }
  double den = b.re * b.re + b.im * b.im;
  r.re = (a.re * b.re + a.im * b.im) / den;
  r.im = (a.im * b.re - a.re * b.im) / den;
  return r;
}

typedef struct tri {
  const mx_tensor_t *a;
  int64_t abase, m;
  int trans;  // 0 none, 1 transpose, 2 adjoint
  bool lower, unit;
} tri_t;

// op(a)[i][j], reading only the stored triangle (other entries are zero).
static cpx_t op_a(const tri_t *t, int64_t i, int64_t j) {
  cpx_t v = {0.0, 0.0};
  if (i == j && t->unit) {
    v.re = 1.0;
    return v;
  }
  int64_t r = t->trans ? j : i, c = t->trans ? i : j;
  if (t->lower ? r < c : r > c) return v;
  mx_cp_get_c(t->a, t->abase + r * t->m + c, &v.re, &v.im);
  if (t->trans == 2) v.im = -v.im;
  return v;
}

mx_status_t mx_cp_triangular_solve(const mx_op_t *op, const mx_tensor_t *const *in,
                                   mx_tensor_t *out) {
  if (op->n_operands != 2 || op->n_results != 1) return mx_cp_bad(op, "expects 2 operands");
  const mx_tensor_t *a = in[0], *b = in[1];
  const mx_type_t *at = &a->type, *bt = &b->type;
  int32_t rank = at->rank;
  if (rank < 2 || bt->rank != rank || !mx_type_same_shape(&out[0].type, bt))
    return mx_cp_bad(op, "rank mismatch");
  bool left = mx_cp_op_bool(op, "left_side", false);
  tri_t t;
  t.a = a;
  t.lower = mx_cp_op_bool(op, "lower", false);
  t.unit = mx_cp_op_bool(op, "unit_diagonal", false);
  t.trans = 0;
  const mx_attr_t *ta = mx_op_attr(op, "transpose_a");
  if (ta && ta->s) {
    if (!strcmp(ta->s, "TRANSPOSE"))
      t.trans = 1;
    else if (!strcmp(ta->s, "ADJOINT"))
      t.trans = 2;
    else if (strcmp(ta->s, "NO_TRANSPOSE") != 0)
      return mx_cp_unsupported(op, "unknown transpose_a");
  }
  int64_t m = at->dims[rank - 1];
  t.m = m;
  if (at->dims[rank - 2] != m) return mx_cp_bad(op, "`a` must be square");
  for (int32_t d = 0; d < rank - 2; ++d)
    if (at->dims[d] != bt->dims[d]) return mx_cp_bad(op, "batch dimensions differ");
  int64_t rows = bt->dims[rank - 2], cols = bt->dims[rank - 1];
  if ((left ? rows : cols) != m) return mx_cp_bad(op, "`b` does not match `a`");
  int64_t batches = 1;
  for (int32_t d = 0; d < rank - 2; ++d) batches *= bt->dims[d];
  if (batches == 0 || rows == 0 || cols == 0) return MX_OK;
  cpx_t *x = mx_cp_calloc((size_t)(rows * cols), sizeof *x);
  if (!x) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  // op(a) is lower triangular when the stored triangle is lower and not transposed, etc.
  bool eff_lower = t.lower != (t.trans != 0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    t.abase = bi * m * m;
    int64_t bbase = bi * rows * cols;
    for (int64_t i = 0; i < rows * cols; ++i) mx_cp_get_c(b, bbase + i, &x[i].re, &x[i].im);
    // Left: op(a) x = b, column by column. Right: x op(a) = b, row by row; as op(a)^T x^T = b^T
    // the substitution direction flips.
    bool forward = left ? eff_lower : !eff_lower;
    int64_t nvec = left ? cols : rows;
    for (int64_t v = 0; v < nvec; ++v) {
      for (int64_t step = 0; step < m; ++step) {
        int64_t i = forward ? step : m - 1 - step;
        cpx_t *xi = left ? &x[i * cols + v] : &x[v * cols + i];
        cpx_t acc = *xi;
        for (int64_t s2 = 0; s2 < step; ++s2) {
          int64_t j = forward ? s2 : m - 1 - s2;
          cpx_t aij = left ? op_a(&t, i, j) : op_a(&t, j, i);
          cpx_t xj = left ? x[j * cols + v] : x[v * cols + j];
          acc.re -= aij.re * xj.re - aij.im * xj.im;
          acc.im -= aij.re * xj.im + aij.im * xj.re;
        }
        if (!t.unit) acc = cdiv(acc, op_a(&t, i, i));
        *xi = acc;
      }
    }
    for (int64_t i = 0; i < rows * cols; ++i) mx_cp_set_c(&out[0], bbase + i, x[i].re, x[i].im);
  }
  free(x);
  return MX_OK;
}
